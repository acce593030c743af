//! Run latency: the wall-clock seconds of a run as its source publishes them, and their
//! statistics per source and model (docs/library.md, "Latency").

use std::path::Path;

use rusqlite::Connection;
use serde_json::{json, Value};
use trajkit_model::time::seconds_between;
use trajkit_model::Trajectory;

use crate::error::LibraryError;

/// Seconds of the run, first of: the record's `metrics.duration_seconds`; the sum of its
/// own steps' `metrics.duration_seconds` (per-turn latencies); the time from its first to
/// its last own step timestamp. `None` when the source gives none of these.
pub fn duration_seconds(t: &Trajectory) -> Option<f64> {
    if let Some(d) = t.metrics.as_ref().and_then(|m| m.duration_seconds) {
        return Some(d);
    }
    let own = || t.steps.iter().filter(|s| !s.copied_context && !s.subagent);
    let per_step: Vec<f64> = own().filter_map(|s| s.metrics.as_ref().and_then(|m| m.duration_seconds)).collect();
    if !per_step.is_empty() {
        return Some(per_step.iter().sum());
    }
    let mut stamps = own().filter_map(|s| s.timestamp.as_deref());
    let first = stamps.next()?;
    let last = stamps.next_back()?;
    seconds_between(first, last)
}

/// Count, mean, p50, p90 and max of `duration_seconds` per source and model (attempts
/// without a duration are counted apart, never as 0). Quantiles are nearest-rank on the
/// sorted values: the value at index ⌊(n − 1)·q⌋.
pub fn by_source_model(conn: &Connection, path: &Path) -> Result<Value, LibraryError> {
    let sql = |source| LibraryError::Sqlite { path: path.to_path_buf(), source };
    let mut st = conn
        .prepare(
            "SELECT source, model, duration_seconds FROM trajectories
             ORDER BY source, model, duration_seconds IS NULL, duration_seconds",
        )
        .map_err(sql)?;
    let rows = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, Option<f64>>(2)?)))
        .map_err(sql)?;
    let mut groups: Vec<Group> = Vec::new();
    for row in rows {
        let (source, model, d) = row.map_err(sql)?;
        if groups.last().is_none_or(|g| g.source != source || g.model != model) {
            groups.push(Group { source, model, attempts: 0, sorted: Vec::new() });
        }
        if let Some(g) = groups.last_mut() {
            g.attempts += 1;
            g.sorted.extend(d);
        }
    }
    Ok(Value::Array(groups.into_iter().map(Group::figures).collect()))
}

/// The attempts of one source and model, with their durations in ascending order.
struct Group {
    source: String,
    model: Option<String>,
    attempts: u64,
    sorted: Vec<f64>,
}

impl Group {
    /// The group's figures as `summary.json` shows them.
    fn figures(self) -> Value {
        let Group { source, model, attempts, sorted } = self;
        figures(source, model, attempts, &sorted)
    }
}

fn figures(source: String, model: Option<String>, attempts: u64, sorted: &[f64]) -> Value {
    let n = sorted.len();
    let at = |q: f64| (n > 0).then(|| round3(sorted[((n - 1) as f64 * q).floor() as usize]));
    json!({
        "source": source,
        "model": model,
        "attempts": attempts,
        "count": n,
        "mean_seconds": (n > 0).then(|| round3(sorted.iter().sum::<f64>() / n as f64)),
        "p50_seconds": at(0.5),
        "p90_seconds": at(0.9),
        "max_seconds": sorted.last().copied().map(round3),
    })
}

/// Milliseconds are the finest unit any source publishes.
fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}
