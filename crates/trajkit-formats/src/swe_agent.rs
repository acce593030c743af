//! SWE-agent `.traj` files (0.x and 1.x layouts) and their predictions files.
//!
//! A `.traj` is one JSON document: `history[]` (the messages the model saw), `trajectory[]`
//! (one entry per action: action, observation, thought, response), `info` (exit status,
//! submission, model_stats) and, in 0.x, `environment`. The outcome is not in the file: it
//! is joined from a SWE-bench report beside it (see `outcomes.rs`). See docs/formats/swe-agent.md.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use trajkit_model::{Agent, Metrics, Provenance, Role, Step, Task, TaskKeySource, ToolCall, ToolResult, Trajectory};

use crate::input::InputFile;
use crate::json::{into_extra, take, take_f64, take_object, take_str, take_u64};
use crate::links::link_tool_results;
use crate::outcomes;
use crate::reader::{claim, Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem, Reason};
use crate::swe::{
    chat_tool_calls, is_prediction, is_prediction_map, is_predictions_row, is_report, prediction_only, predictions_map,
};

/// Reader for SWE-agent trajectories and predictions.
pub struct SweAgentReader;

impl Reader for SweAgentReader {
    fn name(&self) -> &'static str {
        "swe-agent"
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let document = |confidence, reason: &str| claim(confidence, reason, Layout::Document);
        // Names first: each substring test scans the whole peek.
        let summary = || peek.has_key_anywhere("resolved_ids") || peek.has_key_anywhere("ids_resolved");
        let instance_report = || peek.has_key_anywhere("resolved") && peek.has_key_anywhere("tests_status");
        if peek.name.ends_with(".json") && (summary() || instance_report()) && !peek.has_key_anywhere("history") {
            return document(60, "SWE-bench evaluation report");
        }
        if is_predictions_row(peek.first_line) && peek.name.ends_with(".jsonl") {
            return Some(Detection { confidence: 80, reason: "SWE-bench predictions".into(), layout: Layout::Lines });
        }
        if peek.name.ends_with(".json") && peek.name.starts_with("preds") && predictions_map(peek.first_line) {
            return Some(Detection { confidence: 70, reason: "preds.json".into(), layout: Layout::Document });
        }
        let traj_keys = || {
            peek.has_key_anywhere("history") && (peek.has_key_anywhere("trajectory") || peek.has_key_anywhere("agent"))
        };
        if peek.name.ends_with(".traj") && traj_keys() {
            return Some(Detection { confidence: 90, reason: ".traj with history".into(), layout: Layout::Document });
        }
        None
    }

    fn referenced_files(&self, file: &InputFile, _layout: Layout) -> Vec<PathBuf> {
        if !file.fs_path.to_string_lossy().ends_with(".traj") {
            return Vec::new();
        }
        outcomes::side_reports(&file.fs_path, &instance_id_of_path(&file.fs_path), &file.root)
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        RecordResult::from_result(read(raw, file))
    }
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let Value::Object(mut doc) = parse_record(raw.bytes)? else {
        return Err(schema("$", "a .traj must be a JSON object"));
    };
    if is_prediction(&doc) || is_prediction_map(&doc) {
        return Err(prediction_only());
    }
    if is_report(&doc) {
        return Err(Problem::new(Reason::EvaluationReport, "$", "an evaluation report (outcomes), not a trajectory"));
    }
    let history = match doc.remove("history") {
        Some(Value::Array(h)) => h,
        _ => return Err(schema("$.history", "history must be a list of messages")),
    };
    let actions = match doc.get("trajectory") {
        Some(Value::Array(t)) => {
            t.iter().map(|e| e.get("action").and_then(Value::as_str).map(str::to_string)).collect()
        }
        _ => Vec::new(),
    };
    let steps = steps(history, &actions)?;
    let mut gaps = Vec::new();
    link_tool_results(&steps, &mut gaps);
    // Not the documented shape (not an object): kept as it is.
    let mut info = take_object(&mut doc, "info").unwrap_or_default();
    let metrics = model_stats(&mut info);
    let version = take_str(&mut info, "swe_agent_version");
    if !info.is_empty() {
        doc.insert("info".into(), Value::Object(info));
    }
    let instance = instance_id(&file.fs_path, doc.get("environment").and_then(Value::as_str));
    let instruction = steps
        .iter()
        .find(|s| s.role == Role::User && !s.extra.contains_key("is_demo"))
        .and_then(|s| s.content.as_ref())
        .and_then(crate::json::step_content_text);
    let task = Task {
        id: Some(instance.clone()),
        instruction,
        key: instance.clone(),
        key_source: TaskKeySource::Explicit,
        ..Task::default()
    };
    let provenance = Provenance { format_version: version.clone(), ..raw.provenance("swe-agent", file) };
    let mut t = Trajectory {
        agent: Agent { model: None, name: Some("swe-agent".into()), version },
        extra: into_extra(doc),
        gaps,
        metrics,
        steps,
        ..Trajectory::new(raw.id("swe-agent"), provenance, task)
    };
    outcomes::join_side_reports(&mut t, file, &instance);
    Ok(t)
}

/// The instance id: the file name (`<instance_id>.traj`, as SWE-agent writes it), else
/// `environment` (1.x sets it to the instance id; 0.x to `swe_main`).
fn instance_id(path: &Path, environment: Option<&str>) -> String {
    let stem = instance_id_of_path(path);
    match environment {
        Some(env) if stem.is_empty() && env != "swe_main" => env.to_string(),
        _ => stem,
    }
}

fn instance_id_of_path(path: &Path) -> String {
    path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".traj")).unwrap_or_default().to_string()
}

/// Maps `history` into steps. Assistant messages carry either OpenAI `tool_calls` (1.x)
/// or a text `action` (0.x); the `trajectory[]` entries pair each action with its
/// observation, so a 0.x action becomes a call `action-<i>` answered by the message that
/// follows it, when that action matches `trajectory[i].action`.
fn steps(history: Vec<Value>, actions: &[Option<String>]) -> Result<Vec<Step>, Problem> {
    let mut out = Vec::with_capacity(history.len());
    let mut action_index = 0usize;
    let mut pending: Option<String> = None;
    for (i, msg) in history.into_iter().enumerate() {
        let path = format!("$.history[{i}]");
        let Value::Object(mut m) = msg else {
            return Err(schema(path, "a history message must be an object"));
        };
        let role = take_str(&mut m, "role").ok_or_else(|| schema(format!("{path}.role"), "message without role"))?;
        let content = take(&mut m, "content").map(|c| decode_json_list(c, is_content_part));
        let is_demo = m.get("is_demo").and_then(Value::as_bool) == Some(true);
        let mut step = match role.as_str() {
            "system" => Step::new(Role::System, content),
            "user" => Step::new(if pending.is_some() { Role::Environment } else { Role::User }, content),
            "assistant" => Step::new(Role::Assistant, content),
            "tool" => Step::new(Role::Tool, content),
            other => {
                return Err(Problem::new(
                    Reason::InvalidValue,
                    format!("{path}.role"),
                    format!("unknown role '{other}'"),
                ))
            }
        };
        if role == "user" {
            if let Some(call_id) = pending.take() {
                let content = step.content.take();
                step.tool_results.push(ToolResult {
                    call_id: Some(call_id),
                    content,
                    extra: Map::new().into(),
                    subagent_refs: vec![],
                });
            }
        }
        if role == "assistant" {
            step.reasoning = take_str(&mut m, "thought")
                .filter(|t| Some(t.as_str()) != step.content.as_deref().and_then(Value::as_str));
            if let Some(calls) = take(&mut m, "tool_calls").map(|c| decode_json_list(c, is_call)) {
                step.tool_calls = chat_tool_calls(calls, &format!("{path}.tool_calls"))?;
            } else if let Some(action) = m.get("action").and_then(Value::as_str).map(str::to_string) {
                if !is_demo {
                    let matches = actions.get(action_index).is_some_and(|a| a.as_deref() == Some(action.as_str()));
                    let id = format!("action-{action_index}");
                    action_index += 1;
                    step.tool_calls.push(text_action(&action, matches.then(|| id.clone())));
                    if matches {
                        pending = Some(id);
                    }
                    m.remove("action");
                }
            }
        }
        if role == "tool" {
            if let Some(ids) = take(&mut m, "tool_call_ids").map(|c| decode_json_list(c, Value::is_string)) {
                let ids: Vec<String> =
                    ids.as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_string)).collect();
                let content = step.content.take();
                for id in ids {
                    step.tool_results.push(ToolResult {
                        call_id: Some(id),
                        content: content.clone(),
                        extra: Map::new().into(),
                        subagent_refs: vec![],
                    });
                }
                if step.tool_results.is_empty() {
                    step.content = content;
                }
            }
        }
        step.extra = into_extra(m);
        out.push(step);
    }
    Ok(out)
}

/// SWE-agent 1.x sometimes stores lists as JSON text (`"[{\"type\": ...}]"`). Only a
/// list whose items pass `shape` is decoded: other text that happens to start with `[`
/// (an observation printing `[1, 2]`) stays text.
fn decode_json_list(v: Value, shape: fn(&Value) -> bool) -> Value {
    match &v {
        Value::String(s) if s.starts_with('[') => match serde_json::from_str::<Value>(s) {
            Ok(Value::Array(items)) if !items.is_empty() && items.iter().all(shape) => Value::Array(items),
            _ => v,
        },
        _ => v,
    }
}

fn is_content_part(v: &Value) -> bool {
    v.get("type").is_some_and(Value::is_string)
}

fn is_call(v: &Value) -> bool {
    v.get("function").is_some_and(Value::is_object)
}

/// A 0.x text action (`create reproduce_bug.py`): the command word is the tool name.
fn text_action(action: &str, id: Option<String>) -> ToolCall {
    let name = action.split_whitespace().next().unwrap_or("").to_string();
    let mut args = Map::new();
    args.insert("command".into(), Value::String(action.to_string()));
    ToolCall {
        arguments: Value::Object(args).into(),
        arguments_invalid: false,
        extra: Map::new().into(),
        id,
        name,
        text_embedded: true,
    }
}

/// `info.model_stats`: tokens_sent / tokens_received / instance_cost (run totals).
fn model_stats(info: &mut Map<String, Value>) -> Option<Metrics> {
    let Some(Value::Object(_)) = info.get("model_stats") else {
        return None;
    };
    let Some(Value::Object(mut stats)) = info.remove("model_stats") else {
        return None;
    };
    Some(Metrics {
        duration_seconds: None,
        cached_tokens: None,
        completion_tokens: take_u64(&mut stats, "tokens_received"),
        cost_usd: take_f64(&mut stats, "instance_cost"),
        prompt_tokens: take_u64(&mut stats, "tokens_sent"),
        extra: into_extra(stats),
    })
}
