//! `coverage.json`: per source and file, what was read, accepted and rejected (by
//! reason), duplicates and gaps — the same counters `trajkit inspect --json` reports.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;
use serde_json::{json, Value};
use trajkit_formats::FileReport;

use crate::error::LibraryError;
use crate::registry::Registry;

fn add_map(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

/// Per source, how many content digests more than one of its trajectories has: one pass
/// over the index for every source (a query per source read the whole index each time).
fn repeated_content(conn: &Connection, index: &Path) -> Result<BTreeMap<String, u64>, LibraryError> {
    let sql = |source| LibraryError::Sqlite { path: index.to_path_buf(), source };
    let mut st = conn
        .prepare(
            "SELECT source, count(*) FROM (SELECT source FROM trajectories
             GROUP BY source, content_digest HAVING count(*) > 1) GROUP BY source",
        )
        .map_err(sql)?;
    let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u64>(1)?))).map_err(sql)?;
    rows.collect::<Result<_, _>>().map_err(sql)
}

/// Builds the coverage document from the per-file reports of the build.
pub fn coverage(
    registry: &Registry,
    reports: &[(usize, FileReport)],
    conn: &Connection,
    index: &Path,
) -> Result<Value, LibraryError> {
    let repeated = repeated_content(conn, index)?;
    let mut sources = Vec::new();
    for (i, s) in registry.sources.iter().enumerate() {
        let files: Vec<&FileReport> = reports.iter().filter(|(src, _)| *src == i).map(|(_, r)| r).collect();
        let mut reasons = BTreeMap::new();
        let mut gaps = BTreeMap::new();
        let mut formats: BTreeMap<String, u64> = BTreeMap::new();
        for f in &files {
            add_map(&mut reasons, &f.reasons);
            add_map(&mut gaps, &f.gaps);
            *formats.entry(f.format.clone().unwrap_or_else(|| "unrecognised".into())).or_default() += 1;
        }
        let sum = |f: fn(&FileReport) -> u64| files.iter().map(|r| f(r)).sum::<u64>();
        let duplicate_groups = repeated.get(&s.source.name).copied().unwrap_or(0);
        sources.push(json!({
            "source": s.source.name,
            "role": s.source.role.as_str(),
            "files": files.len(),
            "files_by_format": formats,
            "files_unreadable": files.iter().filter(|f| f.error.is_some()).count(),
            "records": sum(|r| r.records),
            "accepted": sum(|r| r.trajectories),
            "subagents": sum(|r| r.subagents),
            "rejected": sum(|r| r.rejected),
            "rejected_by_reason": reasons,
            "duplicate_records": sum(|r| r.duplicate_records),
            "duplicate_groups_across_files": duplicate_groups,
            "steps": sum(|r| r.steps),
            "tool_calls": sum(|r| r.tool_calls),
            "gaps": gaps,
            "per_file": files,
        }));
    }
    Ok(json!({
        "description": "per source and file: records read, accepted, rejected by reason (formats deliberately excluded, such as BFCL final-call outputs, are rejection reasons), byte-identical repeats within a file (duplicate_records), gaps by kind; see docs/library.md",
        "sources": sources,
    }))
}
