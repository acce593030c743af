//! tau-bench (v1) results: `run.py` writes a JSON array of `EnvRunResult` objects
//! (`task_id`, `reward`, `info`, `traj`, `trial`); a single such object is read too.
//! `traj` is the agent's OpenAI-style chat history.
//!
//! See docs/formats/tau-bench.md for the mapping, task-key and outcome rules.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use trajkit_model::{
    Authorship, Extra, Gap, GapKind, Metrics, Outcome, Role, Status, Step, Task, ToolCall, ToolResult, Trajectory,
    Verification,
};

use crate::input::InputFile;
use crate::json::{into_extra, take, take_each, take_f64, take_str};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{parse_record, schema, Problem, Reason};
use crate::tau2::parse_arguments;

/// Reader for tau-bench v1 result files: an array document (each element a record) or
/// a single result object (read whole).
pub(crate) static READER: FnReader = FnReader { family: "tau-bench", detect, read, arrays: true };

/// Whether the peek is an array of results, and the keys of its (first) result object:
/// from the parsed document when the peek holds all of it, else scanned from the bytes.
fn result_keys(peek: &Peek) -> Option<(bool, Vec<String>)> {
    let keys = |m: &Map<String, Value>| m.keys().cloned().collect();
    match peek.document() {
        Some(Value::Object(m)) => return Some((false, keys(m))),
        Some(Value::Array(a)) => return a.first().and_then(Value::as_object).map(|m| (true, keys(m))),
        Some(_) => return None,
        None => {}
    }
    let start = peek.bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    let (array, object) = match peek.bytes[start] {
        b'[' => {
            let inner = peek.bytes[start + 1..].iter().position(|b| !b.is_ascii_whitespace())?;
            (true, &peek.bytes[start + 1 + inner..])
        }
        _ => (false, &peek.bytes[start..]),
    };
    let members = crate::json::object_members(object)?;
    Some((array, members.into_iter().map(|m| m.key).collect()))
}

/// The environment name used for the task key (the results do not name airline/retail).
const ENVIRONMENT: &str = "tau-bench";

/// A tau-bench result object, or an array of them, with `task_id`, `info` and `traj`.
fn detect(peek: &Peek) -> Option<Detection> {
    let (array, keys) = result_keys(peek)?;
    let has = |k: &str| keys.iter().any(|key| key == k);
    if !(has("task_id") && has("info") && has("traj")) {
        return None;
    }
    let reason =
        if array { "tau-bench results array (task_id, info, traj)" } else { "tau-bench result (task_id, info, traj)" };
    claim(90, reason, Layout::Document)
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let Value::Object(mut row) = parse_record(raw.bytes)? else {
        return Err(schema("$", "a tau-bench result must be a JSON object"));
    };
    let traj = match row.remove("traj") {
        Some(Value::Array(t)) => t,
        Some(other) => {
            row.insert("traj".into(), other);
            return Err(schema("$.traj", "traj must be a list of messages"));
        }
        None => return Err(schema("$.traj", "a tau-bench result must have traj")),
    };
    let mut steps = Vec::with_capacity(traj.len());
    for (i, m) in traj.into_iter().enumerate() {
        steps.push(message_step(m, &format!("$.traj[{i}]"))?);
    }
    let mut gaps = Vec::new();
    link_tool_results(&steps, &mut gaps);
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    for (i, s) in steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }

    let task_id = match row.get("task_id") {
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    if task_id.is_some() {
        row.remove("task_id");
    }
    let mut info = match row.remove("info") {
        Some(Value::Object(i)) => i,
        Some(other) => {
            row.insert("info".into(), other);
            Map::new()
        }
        None => Map::new(),
    };
    let instruction = match info.get_mut("task") {
        Some(Value::Object(task)) => take_str(task, "instruction"),
        _ => None,
    };
    let outcome = outcome(&mut row, &mut info);
    let metrics = take_f64(&mut info, "user_cost").map(|c| {
        let mut extra = Extra::new();
        extra.insert("user_cost".into(), c.into());
        Metrics { extra, ..Metrics::default() }
    });

    // The index alone names no task (docs/formats/tau-bench.md): it keys only records
    // without an instruction.
    let key = task_id.as_ref().filter(|_| instruction.is_none()).map(|id| format!("{ENVIRONMENT}/{id}"));
    let task = Task::keyed(key, task_id, instruction, Some(ENVIRONMENT.into()), raw.sha256);
    let mut extra = into_extra(row);
    if !info.is_empty() {
        extra.insert("info".into(), Value::Object(info));
    }
    Ok(Trajectory { extra, gaps, metrics, outcome, steps, ..raw.trajectory("tau-bench", file, task) })
}

/// One chat message → one step: assistant `tool_calls` (`id`, `function.name`,
/// `function.arguments`), tool messages answer them by `tool_call_id`.
fn message_step(m: Value, path: &str) -> Result<Step, Problem> {
    let Value::Object(mut m) = m else {
        return Err(schema(path, "a message must be an object"));
    };
    let role = take_str(&mut m, "role").ok_or_else(|| schema(format!("{path}.role"), "message without role"))?;
    let role = match role.as_str() {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" | "function" => Role::Tool,
        _ => {
            return Err(Problem::new(
                Reason::InvalidValue,
                format!("{path}.role"),
                format!("unknown message role '{role}'"),
            ))
        }
    };
    let mut step = Step::new(role, None);
    let content = take(&mut m, "content");
    if role == Role::Tool {
        let call_id = match m.get("tool_call_id") {
            Some(Value::String(s)) if !s.is_empty() => take_str(&mut m, "tool_call_id"),
            _ => None,
        };
        step.tool_results.push(ToolResult {
            call_id,
            content: content.map(Into::into),
            extra: into_extra(m),
            subagent_refs: Vec::new(),
        });
        return Ok(step);
    }
    step.content = content.map(Into::into);
    // tau-bench's user turns come from its user simulation (an LLM strategy, or a person
    // with the `human` strategy), which the results do not name: authorship unknown.
    if role == Role::User {
        step.authorship = Authorship::Unknown;
    }
    step.tool_calls = take_each(&mut m, "tool_calls", path, tool_call)?;
    step.extra = into_extra(m);
    Ok(step)
}

/// An OpenAI tool call: `{id, type?, function: {name, arguments}}`.
fn tool_call(c: Value, path: &str) -> Result<ToolCall, Problem> {
    let Value::Object(mut c) = c else {
        return Err(schema(path, "a tool call must be an object"));
    };
    let id = match c.get("id") {
        Some(Value::String(s)) if !s.is_empty() => take_str(&mut c, "id"),
        _ => None,
    };
    let Some(Value::Object(mut function)) = c.remove("function") else {
        return Err(schema(format!("{path}.function"), "a tool call must have a function object"));
    };
    let name = take_str(&mut function, "name")
        .ok_or_else(|| schema(format!("{path}.function.name"), "tool call without name"))?;
    let (arguments, invalid) = parse_arguments(function.remove("arguments"));
    if !function.is_empty() {
        c.insert("function".into(), Value::Object(function));
    }
    Ok(ToolCall {
        arguments: arguments.into(),
        arguments_invalid: invalid,
        extra: into_extra(c),
        id,
        name,
        text_embedded: false,
    })
}

/// `reward` with tau-bench's own success rule (`is_successful` in `run.py`: within 1e-6
/// of 1); the numeric parts of `info.reward_info.info` (`r_actions`, `r_outputs`) are
/// the components.
fn outcome(row: &mut Map<String, Value>, info: &mut Map<String, Value>) -> Outcome {
    let reward = take_f64(row, "reward");
    let mut components = BTreeMap::new();
    if let Some(Value::Object(parts)) = info.get_mut("reward_info").and_then(|r| r.get_mut("info")) {
        for key in ["r_actions", "r_outputs"] {
            if let Some(v) = take_f64(parts, key) {
                components.insert(key.to_string(), v);
            }
        }
    }
    let status = match reward {
        Some(r) if (r - 1.0).abs() <= 1e-6 => Status::Success,
        Some(_) => Status::Failure,
        None => Status::Unknown,
    };
    let verification = if reward.is_some() { Verification::SourceEvaluator } else { Verification::Unverified };
    Outcome { reward, reward_components: components, source: None, status, verification }
}
