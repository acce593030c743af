//! Harbor trial directories: `result.json` (Harbor's trial result) next to
//! `agent/trajectory.json` (ATIF).
//!
//! The record is `result.json`. Its trajectory is read from the ATIF file by the ATIF
//! reader (which also follows that file's subagent and continuation references); the
//! outcome, run totals and task come from `result.json`. See docs/formats/harbor-trial.md
//! for the layout, the mapping and the outcome rule.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use trajkit_model::canonical::sha256_hex;
use trajkit_model::{
    Agent, Extra, Gap, GapKind, Metrics, Outcome, Status, Task, TaskKeySource, Trajectory, Verification,
};

use crate::atif::AtifReader;
use crate::input::{self, InputFile};
use crate::json::{take, take_f64, take_nonempty_str, take_u64};
use crate::reader::{claim, Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem};

/// Where Harbor writes the agent's ATIF trajectory, relative to the trial directory.
pub const TRAJECTORY_PATH: &str = "agent/trajectory.json";

/// Harbor's exception type for an agent that ran out of time.
const AGENT_TIMEOUT: &str = "AgentTimeoutError";

/// Reader for Harbor trial results.
pub struct HarborTrialReader;

impl Reader for HarborTrialReader {
    fn name(&self) -> &'static str {
        "harbor-trial"
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let doc = |confidence, reason: &str| claim(confidence, reason, Layout::Document);
        if let Some(Value::Object(m)) = peek.first_line {
            return if is_trial_result(m) {
                doc(90, "Harbor trial result keys (task_name, trial_name, ...)")
            } else {
                None
            };
        }
        let start = peek.bytes.iter().position(|b| !b.is_ascii_whitespace())?;
        if peek.bytes.get(start) != Some(&b'{') || peek.multi_line_records {
            return None;
        }
        match peek.document() {
            Some(Value::Object(m)) if is_trial_result(m) => {
                doc(90, "Harbor trial result keys (task_name, trial_name, ...)")
            }
            Some(_) => None,
            // Larger than the peek (long rollout details), or broken: look at the bytes.
            None => {
                let keys = ["task_name", "trial_name", "trial_uri", "task_checksum"];
                if peek.name.ends_with(".json") && keys.iter().all(|k| peek.has_key_anywhere(k)) {
                    doc(75, "Harbor trial result keys in a document too large or broken to parse")
                } else {
                    None
                }
            }
        }
    }

    fn referenced_files(&self, file: &InputFile, _layout: Layout) -> Vec<PathBuf> {
        let Some(path) = trajectory_file(file) else {
            return Vec::new();
        };
        let Ok(bytes) = input::read_all(&atif_input(file, &path)) else {
            return Vec::new();
        };
        if !looks_atif(&bytes) {
            return Vec::new();
        }
        let mut out = AtifReader.referenced_files(&atif_input(file, &path), Layout::Document);
        out.insert(0, path);
        out
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        match read(raw, file) {
            Ok((t, consumed)) => RecordResult::Accepted { trajectory: Box::new(t), rollout_key: None, consumed },
            Err(problems) => RecordResult::Rejected(problems),
        }
    }
}

/// The keys Harbor's trial result always writes (all required by its model).
fn is_trial_result(m: &Map<String, Value>) -> bool {
    m.contains_key("task_name")
        && m.contains_key("trial_name")
        && ["trial_uri", "agent_info", "task_checksum"].iter().any(|k| m.contains_key(*k))
}

/// True for a JSON object with an `ATIF-v` schema version, `agent` and `steps`.
fn looks_atif(bytes: &[u8]) -> bool {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => {
            v.get("schema_version").and_then(Value::as_str).is_some_and(|s| s.starts_with("ATIF-v"))
                && v.get("agent").is_some()
                && v.get("steps").is_some()
        }
        Err(_) => false,
    }
}

/// Directory of the result file on disk.
fn trial_dir(file: &InputFile) -> PathBuf {
    match file.fs_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `agent/trajectory.json` of the trial (canonical path) when it is a file inside the root.
fn trajectory_file(file: &InputFile) -> Option<PathBuf> {
    if file.is_stdin() {
        return None;
    }
    let path = input::resolve_inside(&file.root, &trial_dir(file), TRAJECTORY_PATH).ok()?;
    if !path.is_file() {
        return None;
    }
    path.canonicalize().ok()
}

/// The trajectory file as the ATIF reader's input, displayed next to the result file.
fn atif_input(file: &InputFile, path: &Path) -> InputFile {
    let display_dir = Path::new(&file.display).parent().map(Path::to_path_buf).unwrap_or_default();
    InputFile {
        fs_path: path.to_path_buf(),
        display: display_dir.join(TRAJECTORY_PATH).display().to_string(),
        root: file.root.clone(),
    }
}

/// Removes `key` when it is an object; `null` and absence give `None`, another type is a
/// schema violation.
fn take_object_or_null(m: &mut Map<String, Value>, key: &str) -> Result<Option<Map<String, Value>>, Problem> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(_)) => match m.remove(key) {
            Some(Value::Object(o)) => Ok(Some(o)),
            _ => Ok(None),
        },
        Some(_) => Err(schema(format!("$.{key}"), format!("{key} must be an object or null"))),
    }
}

/// What the ATIF trajectory contributes to the trial record.
struct Loaded {
    trajectory: Option<Trajectory>,
    consumed: Vec<PathBuf>,
    /// Why there is no trajectory (gap detail), when there is none.
    missing: Option<String>,
}

/// Reads `agent/trajectory.json` through the ATIF reader. An ATIF file that breaks the
/// ATIF rules rejects the trial (its problems are named by the file's path).
fn load_trajectory(file: &InputFile) -> Result<Loaded, Vec<Problem>> {
    let none = |detail: String| Ok(Loaded { trajectory: None, consumed: Vec::new(), missing: Some(detail) });
    let Some(path) = trajectory_file(file) else {
        return none(format!("{TRAJECTORY_PATH} not found"));
    };
    let traj_file = atif_input(file, &path);
    let bytes = match input::read_all(&traj_file) {
        Ok(b) => b,
        Err(e) => return none(e.to_string()),
    };
    if !looks_atif(&bytes) {
        return none(format!("{}: not an ATIF trajectory", traj_file.display));
    }
    let sha = sha256_hex(&bytes);
    let raw = RawRecord { bytes: &bytes, sha256: &sha, line: None, document_index: Some(0), written: false };
    match AtifReader.read_record(&raw, &traj_file) {
        RecordResult::Accepted { trajectory, mut consumed, .. } => {
            consumed.insert(0, path);
            Ok(Loaded { trajectory: Some(*trajectory), consumed, missing: None })
        }
        RecordResult::Rejected(problems) => Err(problems
            .into_iter()
            .map(|p| {
                let at = if p.json_path.starts_with('$') {
                    format!("{}:{}", traj_file.display, p.json_path)
                } else {
                    p.json_path.clone()
                };
                Problem::new(p.reason, at, p.message)
            })
            .collect()),
    }
}

/// Seconds of the agent's own run: `agent_execution.finished_at − started_at` (environment
/// setup and verification excluded); the timestamps stay in `extra`.
fn agent_execution_seconds(row: &Map<String, Value>) -> Option<f64> {
    let phase = row.get("agent_execution")?;
    let at = |k: &str| phase.get(k).and_then(Value::as_str);
    trajkit_model::time::seconds_between(at("started_at")?, at("finished_at")?)
}

/// Maps one trial result (with its trajectory) to a record.
fn read(raw: &RawRecord, file: &InputFile) -> Result<(Trajectory, Vec<PathBuf>), Vec<Problem>> {
    let value = parse_record(raw.bytes).map_err(|p| vec![p])?;
    let Value::Object(mut row) = value else {
        return Err(vec![schema("$", "a Harbor trial result must be a JSON object")]);
    };
    let task_name = match row.get("task_name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(vec![schema("$.task_name", "task_name must be a non-empty string")]),
        None => return Err(vec![schema("$.task_name", "required field is missing")]),
    };
    row.remove("task_name");
    if !matches!(row.get("trial_name"), Some(Value::String(_))) {
        return Err(vec![schema("$.trial_name", "trial_name must be a string")]);
    }
    let one = |p: Problem| vec![p];
    let mut agent_info = take_object_or_null(&mut row, "agent_info").map_err(one)?;
    let mut agent_result = take_object_or_null(&mut row, "agent_result").map_err(one)?;
    let mut verifier_result = take_object_or_null(&mut row, "verifier_result").map_err(one)?;
    let exception = match row.get("exception_info") {
        None | Some(Value::Null) => None,
        Some(Value::Object(e)) => Some(e),
        Some(_) => return Err(vec![schema("$.exception_info", "exception_info must be an object or null")]),
    };
    let exception_type = exception.and_then(|e| e.get("exception_type")).and_then(Value::as_str).map(str::to_string);
    let mut gaps = Vec::new();
    if exception_type.as_deref() == Some(AGENT_TIMEOUT) {
        let message = exception.and_then(|e| e.get("exception_message")).and_then(Value::as_str).unwrap_or_default();
        let first = message.lines().next().unwrap_or_default();
        gaps.push(Gap::at(GapKind::IncompleteGeneration, None, format!("{AGENT_TIMEOUT}: {first}")));
    }
    let outcome = outcome(verifier_result.as_mut(), exception.is_some())?;
    let environment = take_nonempty_str(&mut row, "source");

    let loaded = load_trajectory(file)?;
    let mut extra: Extra = Extra::new();
    let (mut atif_extra, mut steps, mut subagents, mut tools, mut session_id) =
        (Map::new(), Vec::new(), Vec::new(), None, None);
    let (mut atif_agent, mut atif_metrics, mut instruction) = (Agent::default(), None, None);
    if let Some(t) = loaded.trajectory {
        atif_extra.insert("id".into(), Value::String(t.id));
        atif_extra.insert("path".into(), Value::String(t.provenance.path));
        atif_extra.insert("sha256".into(), Value::String(t.provenance.sha256));
        if let Some(v) = t.provenance.format_version {
            atif_extra.insert("format_version".into(), Value::String(v));
        }
        if !t.extra.is_empty() {
            atif_extra.insert("extra".into(), Value::from(t.extra));
        }
        gaps.extend(t.gaps);
        steps = t.steps;
        subagents = t.subagents;
        tools = t.tools;
        session_id = t.session_id;
        atif_agent = t.agent;
        atif_metrics = t.metrics;
        instruction = t.task.instruction;
    }
    if steps.is_empty() {
        let detail = match (&loaded.missing, row.get("step_results")) {
            (Some(_), Some(Value::Array(a))) if !a.is_empty() => {
                "multi-step trial: the per-step trajectories under steps/ are not read".to_string()
            }
            (Some(d), _) => d.clone(),
            (None, _) => format!("{TRAJECTORY_PATH} has no steps"),
        };
        gaps.push(Gap::at(GapKind::NoSteps, None, detail));
    }

    // Agent: the trial's agent_info, each missing field taken from the ATIF agent.
    let mut agent = Agent::default();
    if let Some(info) = agent_info.as_mut() {
        agent.name = take_nonempty_str(info, "name");
        agent.version = take_nonempty_str(info, "version");
        if let Some(Value::Object(model_info)) = info.get_mut("model_info") {
            agent.model = take_nonempty_str(model_info, "name");
            if model_info.is_empty() {
                info.remove("model_info");
            }
        }
    }
    let trial_agent = agent.clone();
    agent.name = agent.name.or_else(|| atif_agent.name.clone());
    agent.version = agent.version.or_else(|| atif_agent.version.clone());
    agent.model = agent.model.or_else(|| atif_agent.model.clone());
    let differs = |a: &Option<String>, b: &Option<String>| a.is_some() && b.is_some() && a != b;
    if differs(&trial_agent.name, &atif_agent.name)
        || differs(&trial_agent.version, &atif_agent.version)
        || differs(&trial_agent.model, &atif_agent.model)
    {
        if let Ok(v) = serde_json::to_value(&atif_agent) {
            atif_extra.insert("agent".into(), v);
        }
    }

    let agent_seconds = agent_execution_seconds(&row);
    // Run totals: the trial's agent_result, else the ATIF final metrics.
    let mut metrics = agent_result.as_mut().map(|ar| Metrics {
        duration_seconds: None,
        prompt_tokens: take_u64(ar, "n_input_tokens"),
        cached_tokens: take_u64(ar, "n_cache_tokens"),
        completion_tokens: take_u64(ar, "n_output_tokens"),
        cost_usd: take_f64(ar, "cost_usd"),
        extra: Extra::new(),
    });
    if metrics.as_ref().is_some_and(Metrics::is_empty) {
        metrics = None;
    }
    match (&metrics, atif_metrics) {
        (None, m) => metrics = m,
        (Some(_), Some(m)) => {
            if let Ok(v) = serde_json::to_value(&m) {
                atif_extra.insert("metrics".into(), v);
            }
        }
        (Some(_), None) => {}
    }

    if let Some(seconds) = agent_seconds {
        metrics.get_or_insert_with(Metrics::default).duration_seconds = Some(seconds);
    }
    for (key, rest) in
        [("agent_info", agent_info), ("agent_result", agent_result), ("verifier_result", verifier_result)]
    {
        if let Some(m) = rest.filter(|m| !m.is_empty()) {
            extra.insert(key.into(), Value::Object(m));
        }
    }
    if !atif_extra.is_empty() {
        extra.insert("trajectory".into(), Value::Object(atif_extra));
    }
    extra.extend(row);

    let task = Task {
        environment_version: None,
        environment,
        id: Some(task_name.clone()),
        instruction,
        key: format!("harbor/{task_name}"),
        key_source: TaskKeySource::Explicit,
    };
    let t = Trajectory {
        agent,
        extra,
        gaps,
        metrics,
        outcome,
        session_id,
        steps,
        subagents,
        tools,
        ..raw.trajectory("harbor-trial", file, task)
    };
    Ok((t, loaded.consumed))
}

/// Outcome from `verifier_result.rewards` (see `status_of` for the status rule).
fn outcome(verifier_result: Option<&mut Map<String, Value>>, exception: bool) -> Result<Outcome, Vec<Problem>> {
    let mut rewards: BTreeMap<String, f64> = BTreeMap::new();
    if let Some(vr) = verifier_result {
        match take(vr, "rewards") {
            None => {}
            Some(Value::Object(r)) => {
                for (k, v) in &r {
                    match v.as_f64() {
                        Some(f) => {
                            rewards.insert(k.clone(), f);
                        }
                        None => {
                            return Err(vec![schema(
                                format!("$.verifier_result.rewards.{k}"),
                                "a reward must be a number",
                            )])
                        }
                    }
                }
            }
            Some(_) => return Err(vec![schema("$.verifier_result.rewards", "rewards must be an object or null")]),
        }
    }
    let (reward, components) = match rewards.len() {
        0 => (None, BTreeMap::new()),
        1 => (rewards.values().next().copied(), BTreeMap::new()),
        _ => (rewards.get("reward").copied(), rewards.clone()),
    };
    let status = match (rewards.len(), reward) {
        (1, Some(r)) => status_of(r, exception),
        _ => Status::Unknown,
    };
    let verification = if rewards.is_empty() { Verification::Unverified } else { Verification::SourceEvaluator };
    Ok(Outcome { reward, reward_components: components, status, verification, ..Outcome::default() })
}

/// The status where Harbor's own success rules agree: its job-level pass@k counts a lone
/// reward of 1 as solved and 0 as not, its analyzer passes a trial only at reward 1.0
/// without an exception, and its trace export calls a reward above 0 a success (an
/// exception comes first there). Any other case is left unknown.
pub(crate) fn status_of(reward: f64, exception: bool) -> Status {
    if reward == 1.0 && !exception {
        Status::Success
    } else if reward == 0.0 {
        Status::Failure
    } else {
        Status::Unknown
    }
}
