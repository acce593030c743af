//! Generic chat datasets: OpenAI / TRL conversational rows (`messages` with `tool_calls`,
//! `tool` messages with `tool_call_id`, an optional `tools` column) and ShareGPT rows
//! (`conversations` of `from` / `value`, with `function_call` and `observation` turns as
//! LLaMA-Factory and glaive write them).
//!
//! Most Hugging Face agent datasets use one of these two shapes. Detection is deliberately
//! weak (55): harness-specific readers that also hold `messages` (SWE-Gym, SWE-smith, ...)
//! claim their files with 85 and more. See docs/formats/openai-messages.md and
//! docs/formats/sharegpt.md.

use serde_json::{Map, Value};
use trajkit_model::{
    Agent, Authorship, Extra, LazyValue, Outcome, Role, Status, Step, Task, ToolCall, ToolResult, Trajectory,
    Verification,
};

use crate::input::InputFile;
use crate::json::{
    idx, into_extra, record_object, step_content_text, take, take_f64, take_list, take_nonempty_str, take_str,
};
use crate::reader::{Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{schema, Problem, Reason};
use crate::swe::{chat_step, standard_gaps, steps_of};

/// Family name of OpenAI / TRL conversational rows.
pub const OPENAI_MESSAGES: &str = "openai-messages";
/// Family name of ShareGPT rows.
pub const SHAREGPT: &str = "sharegpt";

/// Confidence of a generic chat claim: below every harness-specific reader.
const GENERIC: u8 = 55;

/// Reader for OpenAI / TRL conversational rows.
pub(crate) static OPENAI_MESSAGES_READER: FnReader =
    FnReader { family: OPENAI_MESSAGES, detect: detect_openai, read: read_openai, arrays: true };

/// Reader for ShareGPT rows.
pub(crate) static SHAREGPT_READER: FnReader =
    FnReader { family: SHAREGPT, detect: detect_sharegpt, read: read_sharegpt, arrays: true };

/// True when `v` is a non-empty list whose first element is an object holding `key`.
fn first_item_has(v: Option<&Value>, key: &str) -> bool {
    v.and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_object).is_some_and(|m| m.contains_key(key))
}

/// A generic chat claim: below every harness-specific reader's.
fn claim(reason: &str, layout: Layout) -> Option<Detection> {
    crate::reader::claim(GENERIC, reason, layout)
}

/// Rows whose `messages` list starts with a role-tagged message.
fn detect_openai(peek: &Peek) -> Option<Detection> {
    let messages = peek.first_line.and_then(|v| v.get("messages"));
    if first_item_has(messages, "role") {
        return claim("rows with a messages list of role-tagged messages", Layout::Lines);
    }
    if peek.is_array_with_keys(&["messages", "role"]) {
        return claim("a JSON array of rows with messages and role keys", Layout::Document);
    }
    None
}

/// Rows whose `conversations` list starts with a `from` / `value` turn.
fn detect_sharegpt(peek: &Peek) -> Option<Detection> {
    let conversations = peek.first_line.and_then(|v| v.get("conversations"));
    if first_item_has(conversations, "from") {
        return claim("rows with a conversations list of from/value turns", Layout::Lines);
    }
    if peek.is_array_with_keys(&["conversations", "from", "value"]) {
        return claim("a JSON array of rows with conversations of from/value turns", Layout::Document);
    }
    None
}

/// Maps one OpenAI / TRL conversational row.
fn read_openai(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut row = record_object(raw.bytes)?;
    let messages = take_list(&mut row, "messages")?;
    let steps = steps_of(messages, "$.messages", openai_step)?;
    finish(OPENAI_MESSAGES, row, steps, raw, file)
}

/// One OpenAI chat message. The mapping is the one SWE-Gym rows use ([`chat_step`]), with
/// three additions for generic data: `developer` is a system message (the source role kept
/// in `extra.role`), a `reasoning_content` / `reasoning` string is the step's reasoning, and
/// user messages keep declared authorship (in a generic dataset a user turn is a user turn).
fn openai_step(msg: Value, path: &str, before: &[Step]) -> Result<Step, Problem> {
    let mut msg = match msg {
        Value::Object(m) => m,
        _ => return Err(schema(path, "a message must be an object")),
    };
    if msg.get("role").and_then(Value::as_str) == Some("developer") {
        let content = take(&mut msg, "content");
        let mut step = Step::new(Role::System, content);
        step.extra = into_extra(msg);
        return Ok(step);
    }
    let mut step = chat_step(Value::Object(msg), path, before, false)?;
    if step.role == Role::User {
        step.authorship = Authorship::Declared;
    }
    if step.role == Role::Assistant {
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = take_nonempty_str(&mut step.extra, key) {
                step.reasoning = Some(text);
                break;
            }
        }
    }
    Ok(step)
}

/// Maps one ShareGPT row.
fn read_sharegpt(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut row = record_object(raw.bytes)?;
    let turns = take_list(&mut row, "conversations")?;
    let mut steps = Vec::with_capacity(turns.len() + 1);
    if let Some(system) = take_str(&mut row, "system") {
        steps.push(Step::new(Role::System, Some(Value::String(system))));
    }
    for (i, turn) in turns.into_iter().enumerate() {
        let path = idx("$.conversations", i);
        let step = sharegpt_step(turn, &path, &steps)?;
        steps.push(step);
    }
    finish(SHAREGPT, row, steps, raw, file)
}

/// What a ShareGPT `from` value says.
enum Speaker {
    System,
    User,
    Assistant,
    FunctionCall,
    Observation,
}

fn speaker(from: &str) -> Option<Speaker> {
    Some(match from {
        "system" => Speaker::System,
        "human" | "user" => Speaker::User,
        "gpt" | "assistant" | "chatgpt" | "bard" | "bing" | "model" => Speaker::Assistant,
        "function_call" | "function" | "tool_call" => Speaker::FunctionCall,
        "observation" | "tool" | "function_response" | "ipython" => Speaker::Observation,
        _ => return None,
    })
}

/// Synthetic id of the `k`-th call of step `step` (ShareGPT calls carry no ids).
fn sharegpt_call_id(step: usize, k: usize) -> String {
    format!("sharegpt-call-{step}-{k}")
}

/// One ShareGPT turn. `function_call` turns hold a JSON call (`{"name", "arguments"}`, or a
/// list of them); `observation` turns answer the function call right before them (the
/// LLaMA-Factory convention: function_call and observation alternate), so an observation
/// after a step with exactly one call is that call's result.
fn sharegpt_step(turn: Value, path: &str, before: &[Step]) -> Result<Step, Problem> {
    let Value::Object(mut turn) = turn else {
        return Err(schema(path, "a turn must be an object"));
    };
    let from =
        take_str(&mut turn, "from").ok_or_else(|| schema(format!("{path}.from"), "turn without a string from"))?;
    let Some(who) = speaker(&from) else {
        return Err(Problem::new(Reason::InvalidValue, format!("{path}.from"), format!("unknown speaker '{from}'")));
    };
    let value = take(&mut turn, "value");
    let mut step = match who {
        Speaker::System => Step::new(Role::System, value),
        Speaker::User => Step::new(Role::User, value),
        Speaker::Assistant => Step::new(Role::Assistant, value),
        Speaker::FunctionCall => {
            let text = value.as_ref().and_then(Value::as_str).unwrap_or_default();
            let calls = json_calls(text, before.len());
            let mut step = Step::new(Role::Assistant, None);
            if calls.is_empty() {
                // Not a JSON call: the text stays the step's content.
                step.content = value.map(Into::into);
            } else {
                step.tool_calls = calls;
            }
            step
        }
        Speaker::Observation => {
            let call_id = match before.last() {
                Some(prev) if prev.role == Role::Assistant => match prev.tool_calls.as_slice() {
                    [only] => only.id.clone(),
                    _ => None,
                },
                _ => None,
            };
            let mut step = Step::new(Role::Tool, None);
            step.tool_results.push(ToolResult {
                call_id,
                content: value.map(Into::into),
                extra: Extra::new(),
                subagent_refs: Vec::new(),
            });
            step
        }
    };
    if !matches!(from.as_str(), "system" | "human" | "gpt") {
        step.extra.insert("from".into(), Value::String(from));
    }
    step.extra.extend(turn);
    Ok(step)
}

/// Calls of a ShareGPT `function_call` value: a JSON object with a string `name` and
/// `arguments` (an object, or a JSON string of one), or a list of such objects. Anything
/// else gives no call.
fn json_calls(text: &str, step: usize) -> Vec<ToolCall> {
    let items = match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => items,
        Ok(v @ Value::Object(_)) => vec![v],
        _ => return Vec::new(),
    };
    let mut calls = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(mut item) = item else { return Vec::new() };
        let Some(name) = take_str(&mut item, "name") else { return Vec::new() };
        let (arguments, invalid) = crate::json::take_arguments(&mut item);
        let id = take_str(&mut item, "id").unwrap_or_else(|| sharegpt_call_id(step, calls.len()));
        calls.push(ToolCall {
            arguments,
            arguments_invalid: invalid,
            extra: into_extra(item),
            id: Some(id),
            name,
            text_embedded: false,
        });
    }
    calls
}

/// `tools` as a list: the list itself or a JSON string holding one. An empty list, a string
/// that is not a JSON list, or another type stays in `extra` as it is.
fn take_tools(row: &mut Map<String, Value>) -> Option<Vec<Value>> {
    let parsed = match row.get("tools")? {
        Value::Array(t) if !t.is_empty() => t.clone(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Array(t)) if !t.is_empty() => t,
            _ => return None,
        },
        _ => return None,
    };
    row.remove("tools");
    Some(parsed)
}

/// Outcome columns of generic chat rows: a numeric `reward`, a boolean `resolved` or
/// `success`. The row states them without saying how they were established:
/// `source_reported`. Without them: unknown, unverified.
fn chat_outcome(row: &mut Map<String, Value>) -> Outcome {
    let mut outcome = Outcome::default();
    if let Some(r) = take_f64(row, "reward") {
        outcome.reward = Some(r);
        outcome.verification = Verification::SourceReported;
    }
    for key in ["resolved", "success"] {
        if let Some(Value::Bool(b)) = row.get(key) {
            outcome.status = if *b { Status::Success } else { Status::Failure };
            outcome.verification = Verification::SourceReported;
            row.remove(key);
            break;
        }
    }
    outcome
}

/// The first user message before the first assistant step.
pub(crate) fn first_instruction(steps: &[Step]) -> Option<String> {
    steps
        .iter()
        .take_while(|s| s.role != Role::Assistant)
        .find(|s| s.role == Role::User)
        .and_then(|s| s.content.as_ref().and_then(step_content_text))
}

/// Task of a generic chat row: its `id` column (string or number) and first user
/// instruction (see [`task_of`]).
fn chat_task(family: &str, row: &mut Map<String, Value>, steps: &[Step], sha: &str) -> Task {
    let id = match row.get("id") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    if id.is_some() {
        row.remove("id");
    }
    task_of(family, id, first_instruction(steps), sha)
}

/// The task of a record in environment `environment`: an id → `<environment>/<id>`,
/// explicit; else the hashed instruction; else the record hash. Shared with mapped records.
pub(crate) fn task_of(environment: &str, id: Option<String>, instruction: Option<String>, sha: &str) -> Task {
    let id = id.filter(|s| !s.is_empty());
    let key = id.as_ref().map(|id| format!("{environment}/{id}"));
    Task::keyed(key, id, instruction, Some(environment.to_string()), sha)
}

/// The task of a coding-agent session, which names no environment or task id: its
/// `instruction` hashed into the key, else the record hash.
pub(crate) fn session_task(instruction: Option<String>, sha: &str) -> Task {
    Task::keyed(None, None, instruction, None, sha)
}

/// The session task (see [`session_task`]) of the first user step with text.
pub(crate) fn first_user_task(steps: &[Step], sha: &str) -> Task {
    let instruction = steps
        .iter()
        .filter(|s| s.role == Role::User)
        .find_map(|s| s.content.as_ref().and_then(step_content_text).filter(|t| !t.trim().is_empty()));
    session_task(instruction, sha)
}

/// The record around the steps: tools, model, outcome, task, gaps.
fn finish(
    family: &'static str,
    mut row: Map<String, Value>,
    steps: Vec<Step>,
    raw: &RawRecord,
    file: &InputFile,
) -> Result<Trajectory, Problem> {
    let gaps = standard_gaps(&steps);
    let tools = take_tools(&mut row).map(LazyValue::from_values);
    let model = take_nonempty_str(&mut row, "model");
    let outcome = chat_outcome(&mut row);
    let task = chat_task(family, &mut row, &steps, raw.sha256);
    Ok(Trajectory {
        agent: Agent { model, name: None, version: None },
        extra: into_extra(row),
        gaps,
        outcome,
        steps,
        tools,
        ..raw.trajectory(family, file, task)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharegpt_function_calls_parse_json_values() {
        let calls = json_calls(r#"{"name": "calc", "arguments": {"x": 1}}"#, 3);
        assert_eq!(calls.len(), 1);
        assert_eq!((calls[0].name.as_str(), calls[0].id.as_deref()), ("calc", Some("sharegpt-call-3-0")));
        assert_eq!(calls[0].arguments, serde_json::json!({"x": 1}));
        let two = json_calls(r#"[{"name": "a", "arguments": "{\"y\": 2}"}, {"name": "b"}]"#, 0);
        assert_eq!(two.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(two[0].arguments, serde_json::json!({"y": 2}));
        assert!(json_calls("call calc please", 0).is_empty());
        assert!(json_calls(r#"{"arguments": {}}"#, 0).is_empty());
    }
}
