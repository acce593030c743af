//! tau2-bench (τ²/τ³) results: a results document (`timestamp`, `info`, `tasks[]`,
//! `simulations[]`) whose simulations are the records, or the directory layout tau2 writes
//! for `--save-format dir` (`results.json` holding the metadata, `simulations/<id>.json`
//! holding one simulation each).
//!
//! A simulation does not carry its domain, agent or task definition: those live in the
//! document's `info` and `tasks[]`. They are read once per results file into a context
//! (see [`context_for`]; a few recent results files are cached) so that each simulation
//! can still be read on its own.
//! See docs/formats/tau2.md for the mapping, task-key and outcome rules.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use serde_json::{Map, Value};
use trajkit_model::{
    Agent, Authorship, Extra, Gap, GapKind, Metrics, Outcome, Role, Status, Step, Task, TaskKeySource, ToolCall,
    ToolResult, Trajectory, Verification,
};

use crate::input::{self, InputFile};
use crate::json::{
    array_elements, into_extra, object_members, take, take_each, take_f64, take_seconds, take_str, take_u64,
};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem, Reason};

/// Reader for tau2-bench results documents and simulation files.
pub struct Tau2Reader;

/// Name of the per-simulation directory of tau2's directory layout.
const SIMULATIONS_DIR: &str = "simulations";
/// Name of the metadata file of tau2's directory layout.
const RESULTS_FILE: &str = "results.json";
/// Bytes read from the start of a file to tell a results document from a simulation.
const HEAD_BYTES: u64 = 64 * 1024;

/// Termination reasons that end a simulation before the user or the agent stopped it.
const EARLY_STOPS: &[&str] = &[
    "max_steps",
    "timeout",
    "too_many_errors",
    "agent_error",
    "user_error",
    "infrastructure_error",
    "context_window_exceeded",
    "unexpected_error",
];

impl Reader for Tau2Reader {
    fn name(&self) -> &'static str {
        "tau2"
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let doc = |confidence, reason: &str| claim(confidence, reason, Layout::Document);
        let keys = peek.object_keys()?;
        let has = |k: &str| keys.iter().any(|key| key == k);
        match head_kind(has, peek.bytes) {
            HeadKind::Results if peek.has_key_anywhere("environment_info") => {
                if has("simulations") || !has("simulation_index") {
                    doc(90, "tau2 results document (info, tasks, simulations)")
                } else {
                    doc(90, "tau2 results.json metadata (directory layout)")
                }
            }
            HeadKind::Simulation if has("start_time") && has("end_time") => {
                doc(85, "tau2 simulation (task_id, termination_reason, start/end time)")
            }
            _ => None,
        }
    }

    /// A simulation file of the directory layout consumes its run's `results.json` (the
    /// task table and run info); the results file is then reported `part_of` it.
    fn referenced_files(&self, file: &InputFile, _layout: Layout) -> Vec<PathBuf> {
        dir_layout_results(file).and_then(|p| p.canonicalize().ok()).into_iter().collect()
    }

    /// Each element of `simulations` is a record (`document_index` = its position). A
    /// results document without `simulations` (the directory layout's metadata) holds no
    /// record. Anything else is read whole.
    fn split_document(&self, bytes: &[u8]) -> Option<Vec<Range<usize>>> {
        let members = object_members(bytes)?;
        match members.iter().find(|m| m.key == "simulations") {
            Some(m) if m.complete => {
                let range = &m.value;
                let elements = array_elements(&bytes[range.clone()])?;
                Some(elements.into_iter().map(|r| range.start + r.start..range.start + r.end).collect())
            }
            Some(_) => None,
            None => match head_kind(|k| members.iter().any(|m| m.key == k), bytes) {
                HeadKind::Results => Some(Vec::new()),
                _ => None,
            },
        }
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        let ctx = context_for(file);
        match read(raw, file, ctx.as_deref()) {
            Ok((t, key)) => {
                let consumed = dir_layout_results(file).into_iter().collect();
                RecordResult::Accepted { trajectory: Box::new(t), rollout_key: key, consumed }
            }
            Err(p) => RecordResult::Rejected(vec![p]),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Top-level scanning (detection and splitting without parsing the whole document)

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeadKind {
    Results,
    Simulation,
    Other,
}

/// What the start of a document is: a results document (`info` + `tasks`, or its
/// `simulations` / `simulation_index`), a single simulation, or neither.
fn head_kind(has: impl Fn(&str) -> bool, bytes: &[u8]) -> HeadKind {
    if has("task_id") && has("termination_reason") {
        return HeadKind::Simulation;
    }
    let results_part = has("tasks") || has("simulations") || has("simulation_index");
    // `tasks` may start beyond a short head when `info` is long: `info` with tau2's
    // `environment_info` then decides.
    let info_only = has("info") && memchr::memmem::find(bytes, b"\"environment_info\"").is_some();
    if has("info") && (results_part || info_only) {
        HeadKind::Results
    } else {
        HeadKind::Other
    }
}

/// The first `HEAD_BYTES` of a file (decompressed), when readable.
fn head(path: &Path) -> Option<Vec<u8>> {
    let f = InputFile { fs_path: path.to_path_buf(), display: path.display().to_string(), root: PathBuf::new() };
    let mut buf = Vec::new();
    input::open(&f).ok()?.take(HEAD_BYTES).read_to_end(&mut buf).ok()?;
    Some(buf)
}

fn head_kind_of(path: &Path) -> HeadKind {
    match head(path) {
        Some(bytes) => match object_members(&bytes) {
            Some(m) => head_kind(|k| m.iter().any(|m| m.key == k), &bytes),
            None => HeadKind::Other,
        },
        None => HeadKind::Other,
    }
}

/// For a simulation file of the directory layout (`<run>/simulations/<id>.json` whose own
/// content is a simulation, next to a tau2 `<run>/results.json`), that results file.
fn dir_layout_results(file: &InputFile) -> Option<PathBuf> {
    if file.is_stdin() {
        return None;
    }
    let dir = file.fs_path.parent()?;
    if dir.file_name()? != SIMULATIONS_DIR {
        return None;
    }
    let results = dir.parent()?.join(RESULTS_FILE);
    if !results.is_file() || results == file.fs_path {
        return None;
    }
    (head_kind_of(&file.fs_path) == HeadKind::Simulation && head_kind_of(&results) == HeadKind::Results)
        .then_some(results)
}

// ---------------------------------------------------------------------------------------
// Per-results-file context

/// What a simulation needs from its results document.
#[derive(Debug, Default)]
pub(crate) struct Context {
    domain: Option<String>,
    agent_name: Option<String>,
    agent_model: Option<String>,
    user_model: Option<String>,
    /// The document's `timestamp` and `info`, without its long texts.
    /// `info.git_commit`: the tau2 commit, the version of its environments.
    environment_version: Option<String>,
    results_info: Extra,
    /// Task id (as text) → the instruction given to the user simulator (when the task has
    /// a `user_scenario`) and the task's own entry of `tasks[]`, verbatim.
    tasks: HashMap<String, (Option<String>, Value)>,
}

type Slot = Arc<OnceLock<Option<Arc<Context>>>>;
type CacheKey = (PathBuf, u64, Option<SystemTime>);

/// Results files whose contexts are kept. The records of one file arrive together (a
/// parallel batch may mix a few files), so a handful is enough; an older one is rebuilt
/// when it is needed again.
const CACHE_ENTRIES: usize = 8;

/// Contexts of the most recently used results files (path, size, modification time),
/// most recent last; a file that gives no context is remembered the same way (bounded).
fn cache() -> &'static Mutex<VecDeque<(CacheKey, Slot)>> {
    static CACHE: OnceLock<Mutex<VecDeque<(CacheKey, Slot)>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(VecDeque::new()))
}

/// The slot of `key`, made the most recent; the least recent slot beyond
/// `CACHE_ENTRIES` is dropped (threads still building or using it keep their `Arc`).
fn slot_for(key: CacheKey) -> Slot {
    let mut entries = cache().lock().unwrap_or_else(|e| e.into_inner());
    let slot = match entries.iter().position(|(k, _)| *k == key) {
        Some(i) => entries.remove(i).map(|(_, s)| s).unwrap_or_default(),
        None => Slot::default(),
    };
    entries.push_back((key, slot.clone()));
    while entries.len() > CACHE_ENTRIES {
        entries.pop_front();
    }
    slot
}

/// The context of the simulation records of `file`: its own results document, or in
/// the directory layout its run's `results.json`. `None` for standard input, for a lone
/// simulation file, and for a results file that cannot be read again.
pub(crate) fn context_for(file: &InputFile) -> Option<Arc<Context>> {
    if file.is_stdin() {
        return None;
    }
    let path = dir_layout_results(file).unwrap_or_else(|| file.fs_path.clone());
    let meta = std::fs::metadata(&path).ok()?;
    let slot = slot_for((path.clone(), meta.len(), meta.modified().ok()));
    slot.get_or_init(|| load_context(&path).map(Arc::new)).clone()
}

/// The members of a results document a context is built from.
struct ResultsHead {
    timestamp: Option<Value>,
    info: Map<String, Value>,
    tasks: Vec<Value>,
}

/// The document's `timestamp`, `info` and `tasks` members, read from the start of the file
/// only as far as needed: tau2 writes them before `simulations`, so the simulations are not
/// read (or parsed) a second time. Each member is parsed from its own bytes.
fn results_head(path: &Path) -> Option<ResultsHead> {
    let f = InputFile { fs_path: path.to_path_buf(), display: path.display().to_string(), root: PathBuf::new() };
    let mut reader = input::open(&f).ok()?;
    let mut bytes = Vec::new();
    let mut limit = HEAD_BYTES;
    loop {
        let wanted = limit.saturating_sub(bytes.len() as u64);
        let n = (&mut reader).take(wanted).read_to_end(&mut bytes).ok()?;
        let end_of_file = (n as u64) < wanted;
        let members = object_members(&bytes)?;
        let tasks_read = members.iter().any(|m| m.key == "tasks" && m.complete);
        if tasks_read || end_of_file {
            let member = |name: &str| {
                let m = members.iter().rev().find(|m| m.key == name).filter(|m| m.complete)?;
                bytes.get(m.value.clone())
            };
            let tasks: Vec<Value> = serde_json::from_slice(member("tasks")?).ok()?;
            let info = match member("info") {
                Some(b) => serde_json::from_slice::<Option<Map<String, Value>>>(b).ok()?.unwrap_or_default(),
                None => Map::new(),
            };
            let timestamp = match member("timestamp") {
                Some(b) => Some(serde_json::from_slice::<Value>(b).ok()?),
                None => None,
            };
            return Some(ResultsHead { timestamp, info, tasks });
        }
        // Read on, doubling what is read so that the rescans stay linear overall.
        limit = limit.saturating_mul(2);
    }
}

fn load_context(path: &Path) -> Option<Context> {
    let ResultsHead { timestamp, mut info, tasks } = results_head(path)?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let domain = text(info.get("environment_info").and_then(|e| e.get("domain_name")));
    let agent_name = text(info.get("agent_info").and_then(|a| a.get("implementation")));
    let agent_model = text(info.get("agent_info").and_then(|a| a.get("llm")));
    let user_model = text(info.get("user_info").and_then(|u| u.get("llm")));
    // The tau2 commit that ran the simulations versions its environments (kept in
    // `results_info` too).
    let environment_version = text(info.get("git_commit"));
    // Long texts shared by every simulation stay in the results file only.
    for (section, key) in [
        ("environment_info", "policy"),
        ("environment_info", "tool_defs"),
        ("user_info", "global_simulation_guidelines"),
    ] {
        if let Some(Value::Object(m)) = info.get_mut(section) {
            m.remove(key);
        }
    }
    let mut results_info = Extra::new();
    if let Some(ts) = timestamp {
        results_info.insert("timestamp".into(), ts);
    }
    results_info.insert("info".into(), Value::Object(info));
    let mut by_id = HashMap::new();
    for t in tasks {
        let Some(id) = t.get("id").and_then(id_text) else {
            continue;
        };
        let instruction = t.get("user_scenario").and_then(scenario_text);
        by_id.insert(id, (instruction, t));
    }
    Some(Context { domain, agent_name, agent_model, user_model, environment_version, results_info, tasks: by_id })
}

/// A task id as text: a string as it is, an integer in decimal.
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The user scenario as tau2 hands it to the user simulator (`str(task.user_scenario)`,
/// `UserScenario.__str__`): `Persona:` and the persona tab-indented when there is one, then
/// `Instructions:` and the instructions (rendered by [`instruction_text`]) tab-indented.
fn scenario_text(v: &Value) -> Option<String> {
    let instructions = instruction_text(v.get("instructions")?)?;
    let mut lines = Vec::new();
    if let Some(persona) = v.get("persona").and_then(Value::as_str) {
        lines.push("Persona:".to_string());
        lines.push(indent_tab(persona));
    }
    lines.push("Instructions:".to_string());
    lines.push(indent_tab(&instructions));
    Some(lines.join("\n"))
}

/// The user-simulator instructions as tau2 renders them (`StructuredUserInstructions.
/// __str__`): a plain string as it is; structured instructions as `Domain:`, `Reason for
/// call:`, `Known info:`, `Unknown info:` and `Task instructions:` sections, each body
/// tab-indented.
fn instruction_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => {
            let field = |k: &str| m.get(k).and_then(Value::as_str);
            let mut lines = Vec::new();
            if let Some(d) = field("domain") {
                lines.push(format!("Domain: {d}"));
            }
            for (key, title) in [
                ("reason_for_call", "Reason for call"),
                ("known_info", "Known info"),
                ("unknown_info", "Unknown info"),
                ("task_instructions", "Task instructions"),
            ] {
                if let Some(body) = field(key) {
                    lines.push(format!("{title}:\n{}", indent_tab(body)));
                }
            }
            (!lines.is_empty()).then(|| lines.join("\n"))
        }
        _ => None,
    }
}

/// Python's `textwrap.indent(text, "\t")`: a tab before every line (`str.splitlines`
/// boundaries, kept) that is not blank (`str.strip` whitespace).
fn indent_tab(text: &str) -> String {
    let py_space = |c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c);
    let breaks = |c: char| {
        matches!(c, '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}'..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}')
    };
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while !rest.is_empty() {
        let end = match rest.char_indices().find(|&(_, c)| breaks(c)) {
            Some((i, '\r')) if rest[i + 1..].starts_with('\n') => i + 2,
            Some((i, c)) => i + c.len_utf8(),
            None => rest.len(),
        };
        let (line, tail) = rest.split_at(end);
        if !line.chars().all(py_space) {
            out.push('\t');
        }
        out.push_str(line);
        rest = tail;
    }
    out
}

// ---------------------------------------------------------------------------------------
// One simulation

/// Maps one simulation; returns the trajectory and its rollout key (the simulation id).
fn read(raw: &RawRecord, file: &InputFile, ctx: Option<&Context>) -> Result<(Trajectory, Option<String>), Problem> {
    let Value::Object(mut sim) = parse_record(raw.bytes)? else {
        return Err(schema("$", "a simulation must be a JSON object"));
    };
    if sim.contains_key("simulations") || sim.contains_key("tasks") {
        return Err(schema("$.simulations", "a results document's simulations must be a list of simulation objects"));
    }
    let task_id = match sim.get("task_id").and_then(id_text) {
        Some(id) => {
            sim.remove("task_id");
            id
        }
        None => return Err(schema("$.task_id", "a simulation must name its task (task_id string or integer)")),
    };
    let messages = match sim.remove("messages") {
        Some(Value::Array(m)) => Some(m),
        None => None,
        Some(Value::Null) => {
            sim.insert("messages".into(), Value::Null);
            None
        }
        Some(_) => return Err(schema("$.messages", "messages must be a list")),
    };

    let user_model = ctx.and_then(|c| c.user_model.as_deref());
    let mut steps = Vec::with_capacity(messages.as_ref().map_or(0, Vec::len));
    for (i, m) in messages.into_iter().flatten().enumerate() {
        steps.push(message_step(m, &format!("$.messages[{i}]"), user_model)?);
    }

    let mut gaps = Vec::new();
    link_tool_results(&steps, &mut gaps);
    if steps.is_empty() {
        let detail = sim.contains_key("ticks").then(|| "messages not stored; the ticks are kept in extra".to_string());
        gaps.push(Gap { detail, kind: GapKind::NoSteps, step: None });
    }
    for (i, s) in steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }
    let termination = sim.get("termination_reason").and_then(Value::as_str).map(str::to_string);
    if let Some(t) = termination.as_deref().filter(|t| EARLY_STOPS.contains(t)) {
        gaps.push(Gap::at(GapKind::IncompleteGeneration, None, t));
    }

    let outcome = outcome(&mut sim, termination.as_deref());
    let agent_cost = take_f64(&mut sim, "agent_cost");
    let mut metrics_extra = Extra::new();
    if let Some(c) = take_f64(&mut sim, "user_cost") {
        metrics_extra.insert("user_cost".into(), c.into());
    }
    let duration = take_seconds(&mut sim, "duration");
    let metrics = (agent_cost.is_some() || duration.is_some() || !metrics_extra.is_empty()).then(|| Metrics {
        cost_usd: agent_cost,
        duration_seconds: duration,
        extra: metrics_extra,
        ..Metrics::default()
    });
    let session_id = take_str(&mut sim, "id");
    let rollout_key = session_id.as_ref().map(|id| format!("simulation {id}"));

    let domain = ctx.and_then(|c| c.domain.clone());
    let definition = ctx.and_then(|c| c.tasks.get(&task_id));
    let task = Task {
        environment_version: ctx.and_then(|c| c.environment_version.clone()),
        key: format!("{}/{}", domain.as_deref().unwrap_or("?"), task_id),
        key_source: TaskKeySource::Explicit,
        instruction: definition.and_then(|(instruction, _)| instruction.clone()),
        environment: domain,
        id: Some(task_id),
    };
    let mut extra = into_extra(sim);
    if let Some(c) = ctx {
        extra.insert("results_info".into(), Value::from(c.results_info.clone()));
    }
    // The record's own entry of the document's `tasks[]` (a simulation has no `task` field;
    // should one appear, it keeps its name and the definition goes under `results_task`).
    if let Some((_, def)) = definition {
        let name = if extra.contains_key("task") { "results_task" } else { "task" };
        extra.insert(name.into(), def.clone());
    }
    let t = Trajectory {
        agent: Agent {
            model: ctx.and_then(|c| c.agent_model.clone()),
            name: ctx.and_then(|c| c.agent_name.clone()),
            version: None,
        },
        extra,
        gaps,
        metrics,
        outcome,
        session_id,
        steps,
        ..raw.trajectory("tau2", file, task)
    };
    Ok((t, rollout_key))
}

/// One message → one step. Tool calls keep `requestor` in their `extra`; the calls of
/// the simulated user sit on `user` steps.
fn message_step(m: Value, path: &str, user_model: Option<&str>) -> Result<Step, Problem> {
    let Value::Object(mut m) = m else {
        return Err(schema(path, "a message must be an object"));
    };
    let role = take_str(&mut m, "role").ok_or_else(|| schema(format!("{path}.role"), "message without role"))?;
    let role = match role.as_str() {
        "assistant" => Role::Assistant,
        "user" => Role::User,
        "tool" => Role::Tool,
        "system" => Role::System,
        _ => {
            m.insert("role".into(), Value::String(role.clone()));
            return Err(Problem::new(
                Reason::InvalidValue,
                format!("{path}.role"),
                format!("unknown message role '{role}'"),
            ));
        }
    };
    let mut step = Step::new(role, None);
    step.timestamp = take_str(&mut m, "timestamp");
    step.source_id = take(&mut m, "turn_idx");
    if role == Role::Tool {
        match m.remove("tool_messages") {
            // A MultiToolMessage: several results in one step.
            Some(Value::Array(results)) => {
                for (i, r) in results.into_iter().enumerate() {
                    let Value::Object(r) = r else {
                        return Err(schema(format!("{path}.tool_messages[{i}]"), "a tool message must be an object"));
                    };
                    step.tool_results.push(tool_result(r));
                }
            }
            Some(other) => {
                m.insert("tool_messages".into(), other);
                step.tool_results.push(tool_result(m));
                m = Map::new();
            }
            None => {
                step.tool_results.push(tool_result(m));
                m = Map::new();
            }
        }
        step.extra = into_extra(m);
        return Ok(step);
    }
    step.content = take(&mut m, "content").map(Into::into);
    step.tool_calls = take_each(&mut m, "tool_calls", path, tool_call)?;
    step.metrics = message_metrics(&mut m);
    // tau2's user turns are written by its user simulator (an LLM, or another user
    // implementation): the role is a transport role, not a person.
    if role == Role::User {
        step.authorship = Authorship::Unknown;
        step.model = user_model.map(str::to_string);
    }
    step.extra = into_extra(m);
    Ok(step)
}

/// A tool message: `id` is the id of the call it answers; `requestor` and `error` stay
/// in the result's `extra`.
fn tool_result(mut r: Map<String, Value>) -> ToolResult {
    let call_id = match r.get("id") {
        Some(Value::String(s)) if !s.is_empty() => take_str(&mut r, "id"),
        _ => None,
    };
    r.remove("role");
    let content = take(&mut r, "content");
    ToolResult { call_id, content: content.map(Into::into), extra: into_extra(r), subagent_refs: Vec::new() }
}

pub(crate) fn tool_call(c: Value, path: &str) -> Result<ToolCall, Problem> {
    let Value::Object(mut c) = c else {
        return Err(schema(path, "a tool call must be an object"));
    };
    let name = take_str(&mut c, "name").ok_or_else(|| schema(format!("{path}.name"), "tool call without name"))?;
    let id = match c.get("id") {
        Some(Value::String(s)) if !s.is_empty() => take_str(&mut c, "id"),
        _ => None,
    };
    let (arguments, invalid) = parse_arguments(c.remove("arguments"));
    Ok(ToolCall {
        arguments: arguments.into(),
        arguments_invalid: invalid,
        extra: into_extra(c),
        id,
        name,
        text_embedded: false,
    })
}

/// Arguments as an object, or a JSON string parsed (kept verbatim when it is not JSON).
pub(crate) fn parse_arguments(v: Option<Value>) -> (Value, bool) {
    match v {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(v) => (v, false),
            Err(_) => (Value::String(s), true),
        },
        Some(other) => (other, false),
        None => (Value::Object(Map::new()), false),
    }
}

/// Per-message `cost` and `usage` (`prompt_tokens`, `completion_tokens`, cached tokens
/// under `prompt_tokens_details`); a `null` usage stays in `extra`.
fn message_metrics(m: &mut Map<String, Value>) -> Option<Metrics> {
    let cost = take_f64(m, "cost");
    let mut metrics = Metrics { cost_usd: cost, ..Metrics::default() };
    if let Some(Value::Object(_)) = m.get("usage") {
        if let Some(Value::Object(mut usage)) = m.remove("usage") {
            metrics.prompt_tokens = take_u64(&mut usage, "prompt_tokens");
            metrics.completion_tokens = take_u64(&mut usage, "completion_tokens");
            if let Some(Value::Object(details)) = usage.get_mut("prompt_tokens_details") {
                metrics.cached_tokens = take_u64(details, "cached_tokens");
            }
            metrics.extra = into_extra(usage);
        }
    }
    (!metrics.is_empty()).then_some(metrics)
}

/// tau2's own success rule (`is_successful` in its metrics): a reward within 1e-6 of 1.
/// Infrastructure errors are excluded from tau2's metrics: their status stays unknown.
fn outcome(sim: &mut Map<String, Value>, termination: Option<&str>) -> Outcome {
    let mut reward = None;
    let mut components = BTreeMap::new();
    if let Some(Value::Object(info)) = sim.get_mut("reward_info") {
        reward = take_f64(info, "reward");
        if let Some(Value::Object(b)) = info.get("reward_breakdown") {
            if b.values().all(Value::is_number) {
                components = b.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect();
                info.remove("reward_breakdown");
            }
        }
        if info.is_empty() {
            sim.remove("reward_info");
        }
    }
    let status = match reward {
        _ if termination == Some("infrastructure_error") => Status::Unknown,
        Some(r) if (r - 1.0).abs() <= 1e-6 => Status::Success,
        Some(_) => Status::Failure,
        None => Status::Unknown,
    };
    let verification = if reward.is_some() { Verification::SourceEvaluator } else { Verification::Unverified };
    Outcome { reward, reward_components: components, source: None, status, verification }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_render_like_tau2_user_scenario_str() {
        // Expected strings from tau2's UserScenario.__str__ (persona, then instructions).
        let v = serde_json::json!({"persona": "Calm.\nPatient.", "instructions": "Ask\n\nfor a refund."});
        assert_eq!(
            scenario_text(&v).as_deref(),
            Some("Persona:\n\tCalm.\n\tPatient.\nInstructions:\n\tAsk\n\n\tfor a refund.")
        );
        let v = serde_json::json!({"persona": null, "instructions": {"domain": "d", "reason_for_call": "r",
            "task_instructions": "t"}});
        assert_eq!(
            scenario_text(&v).as_deref(),
            Some("Instructions:\n\tDomain: d\n\tReason for call:\n\t\tr\n\tTask instructions:\n\t\tt")
        );
        assert_eq!(indent_tab("a\r\nb\rc\u{2028}  \n"), "\ta\r\n\tb\r\tc\u{2028}  \n");
    }

    #[test]
    fn the_context_cache_is_bounded() {
        for i in 0..(CACHE_ENTRIES as u64 * 3) {
            slot_for((PathBuf::from(format!("/nonexistent/{i}")), i, None));
        }
        let n = cache().lock().map(|c| c.len()).unwrap_or(usize::MAX);
        assert!(n <= CACHE_ENTRIES, "{n}");
    }

    #[test]
    fn structured_instructions_render_like_tau2() {
        let v = serde_json::json!({"domain": "telecom", "reason_for_call": "a\nb", "known_info": null,
            "task_instructions": "x\n\ny"});
        assert_eq!(
            instruction_text(&v).as_deref(),
            Some("Domain: telecom\nReason for call:\n\ta\n\tb\nTask instructions:\n\tx\n\n\ty")
        );
    }
}
