//! Outcomes that live beside trajectories: SWE-bench style evaluation reports, joined to
//! records by task id (`task.id`). Used for side files found in the producer's layout and
//! for an explicit `--outcomes FILE`.
//!
//! A join never overwrites an outcome the record carries: a disagreement is an
//! `outcome_conflict` gap. See docs/formats/outcomes.md.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use trajkit_model::{Gap, GapKind, Status, Trajectory, Verification};

use crate::error::FormatError;
use crate::input::{self, InputFile};

/// Task id -> outcome, with the file each came from.
#[derive(Debug, Default, Clone)]
pub struct OutcomeTable {
    entries: HashMap<String, (Status, String)>,
}

impl OutcomeTable {
    /// Reads a report file (any shape `parse_report` knows).
    pub fn load(path: &Path) -> Result<Self, FormatError> {
        let display = path.display().to_string();
        let file = InputFile { fs_path: path.to_path_buf(), display: display.clone(), root: PathBuf::new() };
        let bytes = input::read_all(&file)?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| FormatError::Report {
            path: display.clone(),
            message: format!("invalid JSON at line {} column {}: {e}", e.line(), e.column()),
        })?;
        // A per-instance report names its instance only by its directory
        // (`run_evaluation/<instance>/report.json`).
        let dir_name = path.canonicalize().ok().and_then(|p| p.parent()?.file_name()?.to_str().map(str::to_string));
        let entries = parse_report(&value, dir_name.as_deref());
        if entries.is_empty() {
            return Err(FormatError::Report {
                path: display,
                message:
                    "no outcomes found (expected a SWE-bench report: {id: {resolved}} or resolved_ids/unresolved_ids)"
                        .into(),
            });
        }
        Ok(OutcomeTable { entries: entries.into_iter().map(|(id, s)| (id, (s, display.clone()))).collect() })
    }

    /// Number of task ids with an outcome.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Joins the outcome of the record's task id, if the table has one.
    pub fn join(&self, t: &mut Trajectory) {
        let Some(id) = t.task.id.as_deref() else { return };
        if let Some((status, source)) = self.entries.get(id) {
            apply(t, *status, source);
        }
    }
}

/// Outcomes in a SWE-bench style report, by instance id:
/// - `{instance_id: {"resolved": bool, ...}}` (per-instance `report.json`);
/// - `{"resolved": bool, ...}` without an id (SWE-smith per-instance report): `instance`;
/// - `{"resolved_ids"|"ids_resolved": [...], "unresolved_ids"|"ids_unresolved": [...],
///   "empty_patch_ids": [...]}` (run summary). `error_ids` are left out: the evaluation
///   itself failed, which says nothing about the patch.
pub fn parse_report(v: &Value, instance: Option<&str>) -> Vec<(String, Status)> {
    let Some(m) = v.as_object() else { return Vec::new() };
    let status = |resolved: &Value| resolved.as_bool().map(|r| if r { Status::Success } else { Status::Failure });
    if let (Some(r), Some(id)) = (m.get("resolved").and_then(status), instance) {
        if m.contains_key("tests_status") || m.contains_key("patch_exists") {
            return vec![(id.to_string(), r)];
        }
    }
    let lists = [
        ("resolved_ids", Status::Success),
        ("ids_resolved", Status::Success),
        ("unresolved_ids", Status::Failure),
        ("ids_unresolved", Status::Failure),
        ("empty_patch_ids", Status::Failure),
    ];
    let mut out = Vec::new();
    for (key, s) in lists {
        for id in m.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            out.push((id.to_string(), s));
        }
    }
    if !out.is_empty() {
        return out;
    }
    // SWE-agent 0.x `results.json` (swebench's model report): one id list per stage.
    // `resolved` ids succeeded; ids that were `applied` (the patch applied and the tests
    // ran) but are not resolved failed; others (not generated, not applied) stay unknown.
    if let Some(resolved) = m.get("resolved").and_then(Value::as_array) {
        let ids = |v: &Value| v.as_str().map(str::to_string);
        let resolved: Vec<String> = resolved.iter().filter_map(ids).collect();
        let applied = m.get("applied").and_then(Value::as_array).into_iter().flatten().filter_map(ids);
        let failed: Vec<String> = applied.filter(|id| !resolved.contains(id)).collect();
        out.extend(resolved.into_iter().map(|id| (id, Status::Success)));
        out.extend(failed.into_iter().map(|id| (id, Status::Failure)));
        return out;
    }
    m.iter().filter_map(|(id, r)| Some((id.clone(), r.get("resolved").and_then(status)?))).collect()
}

/// Sets the outcome from a report unless the record has one of its own (a status, a
/// reward, or any verification); a disagreement with the record's status is a gap.
pub fn apply(t: &mut Trajectory, status: Status, source: &str) {
    let own = t.outcome.status != Status::Unknown
        || t.outcome.reward.is_some()
        || t.outcome.verification != Verification::Unverified;
    if !own {
        t.outcome.status = status;
        t.outcome.verification = Verification::SourceEvaluator;
        t.outcome.source = Some(source.to_string());
    } else if t.outcome.status != status {
        let source = if t.outcome.reward.is_some() && t.outcome.status == Status::Unknown {
            format!("{source} (the record has its own reward)")
        } else {
            source.to_string()
        };
        t.gaps.push(Gap::at(
            GapKind::OutcomeConflict,
            None,
            format!("{source} says {status:?}, the record says {:?}", t.outcome.status),
        ));
    }
}

/// Report files that the producer writes next to a `.traj`, in order of precedence:
/// `<dir>/report.json`, `<dir>/results.json` (SWE-agent 0.x run directory), and the
/// SWE-smith / SWE-bench harness layout `<root>/run_evaluation/<instance>/report.json`
/// and `<root>/run_evaluation/report.json` for `<root>/trajectories/<instance>/<instance>.traj`.
/// Only existing files inside `input_root` count.
pub fn side_reports(traj: &Path, instance: &str, input_root: &Path) -> Vec<(PathBuf, Option<String>)> {
    let Some(dir) = traj.parent() else { return Vec::new() };
    let mut candidates: Vec<(PathBuf, Option<String>)> =
        vec![(dir.join("report.json"), Some(instance.to_string())), (dir.join("results.json"), None)];
    if let Some(root) = dir.parent().and_then(Path::parent) {
        let eval = root.join("run_evaluation");
        candidates.push((eval.join(instance).join("report.json"), Some(instance.to_string())));
        candidates.push((eval.join("report.json"), None));
    }
    candidates
        .into_iter()
        .filter(|(p, _)| p.is_file())
        .filter_map(|(p, hint)| {
            let real = p.canonicalize().ok()?;
            real.starts_with(input_root).then_some((real, hint))
        })
        .collect()
}

/// Joins the first side report that names `instance` (see `side_reports`).
pub fn join_side_reports(t: &mut Trajectory, file: &InputFile, instance: &str) {
    for (path, hint) in side_reports(&file.fs_path, instance, &file.root) {
        let display = display_of(file, &path);
        let Some(report) = cached_report(&path, hint.as_deref(), &file.root) else { continue };
        if let Some(status) = report.get(instance) {
            apply(t, *status, &display);
            return;
        }
    }
}

/// A parsed report: instance id -> status.
type Report = Arc<HashMap<String, Status>>;

/// Parsed side reports, once per file per run: a run summary beside thousands of
/// trajectories is read once, not once per trajectory. (A per-instance report's hint is
/// always its own instance, so the path alone is the key.)
fn cached_report(path: &Path, hint: Option<&str>, root: &Path) -> Option<Report> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Option<Report>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().ok()?.get(path) {
        return hit.clone();
    }
    let f = InputFile { fs_path: path.to_path_buf(), display: path.display().to_string(), root: root.to_path_buf() };
    let parsed = input::read_all(&f)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .map(|v| Arc::new(parse_report(&v, hint).into_iter().collect::<HashMap<_, _>>()));
    cache.lock().ok()?.insert(path.to_path_buf(), parsed.clone());
    parsed
}

/// A display path for a side file: relative to the trajectory's display directory when
/// it can be, else the path on disk.
fn display_of(file: &InputFile, side: &Path) -> String {
    let (Ok(traj_real), Some(display_dir)) = (file.fs_path.canonicalize(), Path::new(&file.display).parent()) else {
        return side.display().to_string();
    };
    let Some(traj_dir) = traj_real.parent() else { return side.display().to_string() };
    match side.strip_prefix(traj_dir) {
        Ok(rel) => display_dir.join(rel).display().to_string(),
        Err(_) => {
            // Up to two levels up (the run_evaluation layout).
            let mut base = traj_dir.to_path_buf();
            let mut shown = display_dir.to_path_buf();
            for _ in 0..2 {
                if !base.pop() || !shown.pop() {
                    break;
                }
                if let Ok(rel) = side.strip_prefix(&base) {
                    return shown.join(rel).display().to_string();
                }
            }
            side.display().to_string()
        }
    }
}
