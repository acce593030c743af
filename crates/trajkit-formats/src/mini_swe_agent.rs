//! mini-swe-agent trajectories (`<instance>.traj.json`) and its `results.json` predictions.
//!
//! A trajectory is `{info, messages, trajectory_format}` or, in older versions, a bare list
//! of `{role, content}` messages. The agent acts by writing exactly one fenced shell block
//! per response (```` ```bash ```` or ```` ```mswea_bash_command ````); the harness answers
//! with the next user message. See docs/formats/mini-swe-agent.md.

use serde_json::{Map, Value};
use trajkit_model::{
    Agent, Authorship, Metrics, Provenance, Role, Step, Task, TaskKeySource, ToolCall, ToolResult, Trajectory,
};

use crate::input::InputFile;
use crate::json::{into_extra, step_content_text, take, take_f64, take_object, take_str};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{parse_record, schema, Problem, Reason};
use crate::swe::{chat_tool_calls, prediction_only, predictions_map};

/// Reader for mini-swe-agent.
pub(crate) static READER: FnReader = FnReader { family: "mini-swe-agent", detect, read, arrays: false };

/// Languages of the fenced blocks that mini-swe-agent executes.
/// Family name.
const FAMILY: &str = "mini-swe-agent";

const ACTION_FENCES: [&str; 2] = ["mswea_bash_command", "bash"];

/// mini-swe-agent trajectories and their predictions.
fn detect(peek: &Peek) -> Option<Detection> {
    let document = |confidence, reason: &str| claim(confidence, reason, Layout::Document);
    if peek.has_key_anywhere("trajectory_format") && peek.contains("mini-swe-agent") {
        return document(90, "trajectory_format mini-swe-agent");
    }
    if peek.name.ends_with(".traj.json") && peek.bytes.trim_ascii_start().starts_with(b"[") && peek.contains("```") {
        return document(80, "a .traj.json message list with fenced actions");
    }
    // The name first: each substring test scans the whole peek.
    let predictions = || {
        predictions_map(peek.first_line)
            || (peek.has_key_anywhere("model_patch")
                && peek.has_key_anywhere("instance_id")
                && !peek.has_key_anywhere("messages"))
    };
    if peek.name == "results.json" && predictions() {
        return document(75, "mini-swe-agent results.json (predictions)");
    }
    None
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let (messages, mut doc) = match parse_record(raw.bytes)? {
        Value::Array(messages) => (messages, Map::new()),
        Value::Object(mut doc) => {
            if predictions_map(Some(&Value::Object(doc.clone()))) {
                return Err(prediction_only());
            }
            match doc.remove("messages") {
                Some(Value::Array(m)) => (m, doc),
                _ => return Err(schema("$.messages", "messages must be a list")),
            }
        }
        _ => return Err(schema("$", "expected a message list or an object")),
    };
    let steps = steps(messages)?;
    let mut gaps = Vec::new();
    link_tool_results(&steps, &mut gaps);
    let mut info = take_object(&mut doc, "info").unwrap_or_default();
    let metrics = match info.get_mut("model_stats").and_then(Value::as_object_mut) {
        Some(stats) => {
            take_f64(stats, "instance_cost").map(|cost| Metrics { cost_usd: Some(cost), ..Default::default() })
        }
        None => None,
    };
    let version = take_str(&mut info, "mini_version");
    let model = info
        .get("config")
        .and_then(|c| c.get("model"))
        .and_then(|m| m.get("model_name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if !info.is_empty() {
        doc.insert("info".into(), Value::Object(info));
    }
    let format_version = doc.get("trajectory_format").and_then(Value::as_str).map(str::to_string);
    let instance = file
        .fs_path
        .file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.strip_suffix(".traj.json").or_else(|| n.strip_suffix(".json")).unwrap_or(n).to_string())
        .unwrap_or_default();
    let instruction =
        steps.iter().find(|s| s.role == Role::User).and_then(|s| s.content.as_ref()).and_then(step_content_text);
    let task = Task {
        id: Some(instance.clone()),
        instruction,
        key: instance,
        key_source: TaskKeySource::Explicit,
        ..Task::default()
    };
    let provenance = Provenance { format_version, ..raw.provenance(FAMILY, file) };
    Ok(Trajectory {
        agent: Agent { model, name: Some(FAMILY.into()), version },
        extra: into_extra(doc),
        gaps,
        metrics,
        steps,
        ..Trajectory::new(raw.id(FAMILY), provenance, task)
    })
}

/// Maps messages: fenced shell blocks in assistant messages become text-embedded calls.
/// A response with exactly one block is one action, and the user message that follows is
/// its output (the harness's documented protocol): it becomes an environment step answering
/// call `action-<n>`. Other later user messages (format-error feedback) keep the user role
/// with unknown authorship: the harness wrote them, not a person.
fn steps(messages: Vec<Value>) -> Result<Vec<Step>, Problem> {
    let mut out: Vec<Step> = Vec::with_capacity(messages.len());
    let mut pending: Option<String> = None;
    let mut actions = 0usize;
    let mut seen_user = false;
    for (i, m) in messages.into_iter().enumerate() {
        let path = format!("$.messages[{i}]");
        let Value::Object(mut m) = m else {
            return Err(schema(path, "a message must be an object"));
        };
        let role = take_str(&mut m, "role").ok_or_else(|| schema(format!("{path}.role"), "message without role"))?;
        let content = take(&mut m, "content");
        let mut step = match role.as_str() {
            "system" => Step::new(Role::System, content),
            "assistant" if m.contains_key("tool_calls") => {
                // Tool-calling versions: OpenAI tool calls, answered by `tool` messages.
                let mut s = Step::new(Role::Assistant, content);
                if let Some(calls) = m.remove("tool_calls") {
                    s.tool_calls = chat_tool_calls(calls, &format!("{path}.tool_calls"))?;
                }
                s
            }
            "tool" => {
                let mut s = Step::new(Role::Tool, None);
                let call_id = take_str(&mut m, "tool_call_id");
                s.tool_results.push(ToolResult {
                    call_id,
                    content: content.map(Into::into),
                    extra: Map::new().into(),
                    subagent_refs: vec![],
                });
                s
            }
            "assistant" => {
                let mut s = Step::new(Role::Assistant, content);
                let blocks =
                    s.content.as_ref().and_then(step_content_text).map(|t| fenced_actions(&t)).unwrap_or_default();
                let single = blocks.len() == 1;
                pending = None;
                for command in blocks {
                    let id = single.then(|| format!("action-{actions}"));
                    actions += 1;
                    let mut args = Map::new();
                    args.insert("command".into(), Value::String(command));
                    s.tool_calls.push(ToolCall {
                        arguments: Value::Object(args).into(),
                        arguments_invalid: false,
                        extra: Map::new().into(),
                        id: id.clone(),
                        name: "bash".into(),
                        text_embedded: true,
                    });
                    pending = id;
                }
                s
            }
            "user" if pending.is_some() => {
                let mut s = Step::new(Role::Environment, None);
                s.tool_results.push(ToolResult {
                    call_id: pending.take(),
                    content: content.map(Into::into),
                    extra: Map::new().into(),
                    subagent_refs: vec![],
                });
                s
            }
            "user" => {
                let mut s = Step::new(Role::User, content);
                if seen_user {
                    s.authorship = Authorship::Unknown;
                }
                seen_user = true;
                s
            }
            other => {
                return Err(Problem::new(
                    Reason::InvalidValue,
                    format!("{path}.role"),
                    format!("unknown role '{other}'"),
                ))
            }
        };
        if role != "assistant" {
            pending = None;
        }
        step.extra = into_extra(m);
        out.push(step);
    }
    Ok(out)
}

/// The bodies of ```` ```bash ```` / ```` ```mswea_bash_command ```` blocks, in order.
fn fenced_actions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let Some(nl) = after.find('\n') else { break };
        let lang = after[..nl].trim();
        let body_start = &after[nl + 1..];
        let Some(end) = body_start.find("```") else { break };
        if ACTION_FENCES.contains(&lang) {
            out.push(body_start[..end].trim_end_matches('\n').to_string());
        }
        rest = &body_start[end + 3..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{fenced_actions, steps};
    use serde_json::json;
    use trajkit_model::Role;

    /// Synthetic: the tool-calling message shape (no real file of it is published here).
    #[test]
    fn tool_calling_messages_pair_by_id() {
        let messages = vec![
            json!({"role": "user", "content": "fix it"}),
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "a.py"}),
        ];
        let s = steps(messages).expect("steps");
        assert_eq!(s[1].tool_calls[0].arguments, json!({"command": "ls"}));
        assert_eq!((s[2].role, s[2].tool_results[0].call_id.as_deref()), (Role::Tool, Some("c1")));
    }

    #[test]
    fn fenced_actions_take_only_shell_blocks() {
        let text = "x\n```bash\nls -la\n```\ny\n```python\nprint(1)\n```\n```mswea_bash_command\ncat a\nb\n```";
        assert_eq!(fenced_actions(text), ["ls -la", "cat a\nb"]);
    }
}
