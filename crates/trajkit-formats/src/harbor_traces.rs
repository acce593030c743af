//! Harbor's SFT "traces" export: one row per episode of a trial, each row a chat
//! (`conversations`: `{role, content}` messages) with the run's metadata (`agent`, `model`,
//! `task`, `episode`, `run_id`, `trial_name`, `result`).
//!
//! A file is a JSON array of rows (each row a record via `split_document`) or JSON Lines.
//! See docs/formats/harbor-trial.md (section "Traces export") for the mapping.

use serde_json::{Map, Value};
use trajkit_model::{
    Agent, Authorship, Extra, Gap, GapKind, LazyValue, Outcome, Role, Step, Task, ToolCall, Trajectory, Verification,
};

use crate::harbor_trial::status_of;
use crate::input::InputFile;
use crate::json::{array_elements, step_content_text, take, take_nonempty_str};
use crate::reader::{claim, Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem, Reason};

/// Reader for Harbor trace exports.
pub struct HarborTracesReader;

/// Placeholders Harbor's exporter writes when it cannot tell the agent or model.
const PLACEHOLDERS: &[&str] = &["unknown-agent", "unknown-model", "unknown-provider"];

impl Reader for HarborTracesReader {
    fn name(&self) -> &'static str {
        "harbor-traces"
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let det = |confidence, reason: &str, layout| claim(confidence, reason, layout);
        if let Some(v) = peek.first_line {
            return match v {
                Value::Object(m) if is_row(m) => det(90, "Harbor trace rows (conversations, episode)", Layout::Lines),
                Value::Array(a) if a.first().and_then(Value::as_object).is_some_and(is_row) => {
                    det(90, "a list of Harbor trace rows (conversations, episode)", Layout::Document)
                }
                _ => None,
            };
        }
        let start = peek.bytes.iter().position(|b| !b.is_ascii_whitespace())?;
        if peek.bytes.get(start) != Some(&b'[') {
            return None;
        }
        match peek.document() {
            Some(Value::Array(a)) if a.first().and_then(Value::as_object).is_some_and(is_row) => {
                det(90, "a list of Harbor trace rows (conversations, episode)", Layout::Document)
            }
            Some(_) => None,
            None => {
                let keys = ["conversations", "episode", "run_id"];
                if keys.iter().all(|k| peek.has_key_anywhere(k)) {
                    det(75, "Harbor trace row keys in a list too large or broken to parse", Layout::Document)
                } else {
                    None
                }
            }
        }
    }

    fn split_document(&self, bytes: &[u8]) -> Option<Vec<std::ops::Range<usize>>> {
        array_elements(bytes)
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        match read(raw, file) {
            Ok((t, key)) => RecordResult::Accepted { trajectory: Box::new(t), rollout_key: key, consumed: Vec::new() },
            Err(p) => RecordResult::Rejected(vec![p]),
        }
    }
}

fn is_row(m: &Map<String, Value>) -> bool {
    m.contains_key("conversations") && (m.contains_key("episode") || m.contains_key("run_id"))
}

/// A string field unless it is one of the exporter's placeholders (then it stays in extra).
fn take_known(row: &mut Map<String, Value>, key: &str) -> Option<String> {
    match row.get(key).and_then(Value::as_str) {
        Some(s) if PLACEHOLDERS.contains(&s) => None,
        _ => take_nonempty_str(row, key),
    }
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<(Trajectory, Option<String>), Problem> {
    let value = parse_record(raw.bytes)?;
    let Value::Object(mut row) = value else {
        return Err(schema("$", "a trace row must be a JSON object"));
    };
    let messages = match row.remove("conversations") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err(schema("$.conversations", "conversations must be a list of messages")),
        None => return Err(schema("$.conversations", "required field is missing")),
    };
    let mut steps = Vec::with_capacity(messages.len());
    let mut gaps = Vec::new();
    for (i, m) in messages.into_iter().enumerate() {
        let path = format!("$.conversations[{i}]");
        let Value::Object(mut m) = m else {
            return Err(schema(path, "a message must be an object"));
        };
        let role = match m.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("system") => Role::System,
            Some("tool") => Role::Tool,
            Some(other) => {
                return Err(Problem::new(
                    Reason::InvalidValue,
                    format!("{path}.role"),
                    format!("unknown message role '{other}'"),
                ))
            }
            None => return Err(schema(format!("{path}.role"), "message without a string role")),
        };
        m.remove("role");
        let mut step = Step::new(role, take(&mut m, "content"));
        if role == Role::User {
            // The exporter writes the task prompt, user turns and the environment's
            // observations all as `user`.
            step.authorship = Authorship::Unknown;
        }
        if role == Role::Assistant {
            if let Some(Value::String(text)) = step.content.as_deref() {
                let (calls, bad) = embedded_calls(text);
                step.tool_calls = calls;
                for detail in bad {
                    gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(steps.len()), detail));
                }
            }
        }
        step.extra = m.into();
        steps.push(step);
    }
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }

    let rollout_key = match (row.get("run_id"), row.get("trial_name"), row.get("episode")) {
        (Some(Value::String(r)), Some(Value::String(t)), Some(Value::String(e))) => {
            Some(format!("run {r} trial {t} {e}"))
        }
        _ => None,
    };
    let agent = Agent { model: take_known(&mut row, "model"), name: take_known(&mut row, "agent"), version: None };
    let tools = match row.get("tool_definitions") {
        Some(Value::Array(_)) => match row.remove("tool_definitions") {
            Some(Value::Array(t)) => Some(LazyValue::from_values(t)),
            _ => None,
        },
        _ => None,
    };
    let outcome = outcome(&mut row);
    let task = task(&mut row, &steps, raw.sha256);
    let extra: Extra = row.into();
    let t = Trajectory { agent, extra, gaps, outcome, steps, tools, ..raw.trajectory("harbor-traces", file, task) };
    Ok((t, rollout_key))
}

/// Tool calls the exporter wrote into assistant text as
/// `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>` blocks, and the blocks
/// that are not such an object (gap details).
fn embedded_calls(text: &str) -> (Vec<ToolCall>, Vec<String>) {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let (mut calls, mut bad) = (Vec::new(), Vec::new());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find(CLOSE) else { break };
        let body = after[..end].trim();
        rest = &after[end + CLOSE.len()..];
        match serde_json::from_str::<Value>(body) {
            Ok(Value::Object(mut m)) if matches!(m.get("name"), Some(Value::String(_))) => {
                let name = match m.remove("name") {
                    Some(Value::String(s)) => s,
                    _ => String::new(),
                };
                let arguments = m.remove("arguments").unwrap_or_else(|| Value::Object(Map::new()));
                calls.push(ToolCall {
                    arguments: arguments.into(),
                    arguments_invalid: false,
                    extra: m.into(),
                    id: None,
                    name,
                    text_embedded: true,
                });
            }
            _ => bad.push(format!("a <tool_call> block that is not a JSON object with a name: {}", clip(body))),
        }
    }
    (calls, bad)
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// `result` is the trial's reward as a string (`"1.0"`), or the name of the exception
/// that ended the trial, which the exporter writes instead of the reward.
fn outcome(row: &mut Map<String, Value>) -> Outcome {
    let reward = match row.get("result") {
        Some(Value::String(s)) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        Some(Value::Number(n)) => n.as_f64(),
        _ => None,
    };
    match reward {
        Some(r) => {
            row.remove("result");
            Outcome {
                reward: Some(r),
                status: status_of(r, false),
                verification: Verification::SourceEvaluator,
                ..Outcome::default()
            }
        }
        None => Outcome::default(),
    }
}

/// `task` (Harbor's task name) when present: `harbor/<task>`, as for trial results.
/// Otherwise the first user message hashed, else the row's hash.
fn task(row: &mut Map<String, Value>, steps: &[Step], sha: &str) -> Task {
    let instruction = steps
        .iter()
        .find(|s| s.role == Role::User)
        .and_then(|s| s.content.as_ref())
        .and_then(step_content_text)
        .filter(|t| !t.trim().is_empty());
    let name = take_nonempty_str(row, "task");
    Task::keyed(name.as_ref().map(|n| format!("harbor/{n}")), name, instruction, None, sha)
}
