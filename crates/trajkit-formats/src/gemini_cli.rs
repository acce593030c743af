//! Gemini CLI chat recordings: `~/.gemini/tmp/<project hash>/chats/session-*.json` (one
//! `ConversationRecord` document, older versions) or `session-*.jsonl` (a metadata line,
//! message lines, `$set` metadata updates and `$rewindTo` rewinds). One file, one session,
//! one trajectory. See docs/formats/gemini-cli.md.

use serde_json::{Map, Value};
use trajkit_model::{Agent, Extra, Gap, GapKind, Metrics, Role, Step, ToolCall, ToolResult, Trajectory};

use crate::claude_code::parse_lines;
use crate::input::InputFile;
use crate::json::{take, take_str, take_u64};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{schema, Problem};

/// Reader for Gemini CLI chat recordings.
pub(crate) static READER: FnReader = FnReader { family: FAMILY, detect, read, arrays: false };

const FAMILY: &str = "gemini-cli";

/// Gemini CLI chat recordings.
fn detect(peek: &Peek) -> Option<Detection> {
    let doc = |confidence, reason: &str| claim(confidence, reason, Layout::Document);
    let session_keys = peek.has_key("sessionId") && peek.has_key("projectHash");
    let jsonl = peek.name.ends_with(".jsonl") || peek.multi_line_records;
    if session_keys && jsonl {
        return doc(90, "chat recording metadata line (sessionId + projectHash)");
    }
    if session_keys && peek.has_key("messages") {
        return doc(90, "chat recording document (sessionId + projectHash + messages)");
    }
    if peek.first_line.is_some() || peek.multi_line_records || !peek.name.ends_with(".json") {
        return None;
    }
    // A pretty-printed document: its first line is not a whole value.
    match peek.document() {
        Some(Value::Object(m)) if ["sessionId", "projectHash", "messages"].iter().all(|k| m.contains_key(*k)) => {
            doc(90, "chat recording document (sessionId + projectHash + messages)")
        }
        Some(_) => None,
        None if ["sessionId", "projectHash", "messages"].iter().all(|k| peek.has_key_anywhere(k)) => {
            doc(75, "chat recording keys in a document too large or broken to parse in the peek")
        }
        None => None,
    }
}

/// The session as recorded: metadata and the messages in force (rewinds applied).
struct Recording {
    meta: Map<String, Value>,
    messages: Vec<Map<String, Value>>,
    /// Messages a `$rewindTo` removed: (line, count, first removed id).
    rewound: Vec<(u64, usize, String)>,
}

fn recording(bytes: &[u8]) -> Result<Recording, Problem> {
    // A whole document with `messages` is the older single-document recording.
    if let Ok(Value::Object(mut doc)) = serde_json::from_slice::<Value>(bytes) {
        if let Some(messages) = doc.remove("messages") {
            let Value::Array(messages) = messages else {
                return Err(schema("$.messages", "messages must be an array"));
            };
            let messages = objects(messages, |i| format!("$.messages[{i}]"))?;
            return Ok(Recording { meta: doc, messages, rewound: Vec::new() });
        }
    }
    let mut rec = Recording { meta: Map::new(), messages: Vec::new(), rewound: Vec::new() };
    for line in parse_lines(bytes)? {
        let mut obj = line.obj;
        if let Some(Value::String(to)) = obj.get("$rewindTo") {
            let at = rec.messages.iter().position(|m| m.get("id").and_then(Value::as_str) == Some(to.as_str()));
            let cut = at.unwrap_or(0);
            let removed = rec.messages.len() - cut;
            rec.messages.truncate(cut);
            rec.rewound.push((line.no, removed, to.clone()));
        } else if let Some(Value::Object(set)) = obj.remove("$set") {
            rec.meta.extend(set);
        } else if obj.get("id").is_some_and(Value::is_string) {
            rec.messages.push(obj);
        } else if obj.contains_key("sessionId") {
            rec.meta.extend(obj);
        } else {
            return Err(schema(
                format!("$[line {}]", line.no),
                "neither a message (id), metadata (sessionId), $set nor $rewindTo line",
            ));
        }
    }
    Ok(rec)
}

fn objects(values: Vec<Value>, path: impl Fn(usize) -> String) -> Result<Vec<Map<String, Value>>, Problem> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Object(m) => Ok(m),
            _ => Err(schema(path(i), "a message must be a JSON object")),
        })
        .collect()
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut rec = recording(raw.bytes)?;
    let mut steps = Vec::new();
    let mut model: Option<String> = None;
    for m in std::mem::take(&mut rec.messages) {
        message_steps(m, &mut steps, &mut model);
    }
    let mut gaps = Vec::new();
    link_tool_results(&steps, &mut gaps);
    for (line, removed, id) in &rec.rewound {
        let detail = format!("line {line}: $rewindTo {id} removed {removed} message(s)");
        gaps.push(Gap::at(GapKind::AbandonedBranch, None, detail));
    }
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    let session_id = take_str(&mut rec.meta, "sessionId");
    let task = crate::chat::first_user_task(&steps, raw.sha256);
    Ok(Trajectory {
        agent: Agent { model, name: Some(FAMILY.into()), version: None },
        extra: rec.meta.into(),
        gaps,
        session_id,
        steps,
        ..raw.trajectory(FAMILY, file, task)
    })
}

/// One message: `user` → a user step; `gemini` → an assistant step (its tool calls, and a
/// tool step with the results the calls recorded); `info` / `error` / `warning` → a system
/// step with `extra.type`.
fn message_steps(mut m: Map<String, Value>, steps: &mut Vec<Step>, model: &mut Option<String>) {
    let kind = take_str(&mut m, "type").unwrap_or_default();
    let content = take(&mut m, "content").map(plain_parts);
    let role = match kind.as_str() {
        "user" => Role::User,
        "gemini" => Role::Assistant,
        _ => Role::System,
    };
    let mut step = Step::new(role, content);
    step.source_id = take(&mut m, "id");
    step.timestamp = take_str(&mut m, "timestamp");
    if role == Role::System {
        step.extra.insert("type".into(), Value::String(kind));
    }
    let mut results = Vec::new();
    if role == Role::Assistant {
        if let Some(Value::Array(calls)) = m.remove("toolCalls") {
            for c in calls {
                let Value::Object(c) = c else { continue };
                let (call, result) = tool_call(c);
                step.tool_calls.push(call);
                results.extend(result);
            }
        }
        if let Some(Value::Array(thoughts)) = m.get("thoughts") {
            let text: Vec<&str> =
                thoughts.iter().filter_map(|t| t.get("description").and_then(Value::as_str)).collect();
            if !text.is_empty() {
                step.reasoning = Some(text.join("\n"));
            }
        }
        if let Some(Value::Object(tokens)) = m.remove("tokens") {
            step.metrics = metrics(tokens);
        }
        if let Some(name) = take_str(&mut m, "model") {
            match model {
                None => *model = Some(name),
                Some(first) if *first != name => step.model = Some(name),
                Some(_) => {}
            }
        }
    }
    step.extra.extend(m);
    steps.push(step);
    if !results.is_empty() {
        let mut tool = Step::new(Role::Tool, None);
        tool.tool_results = results;
        steps.push(tool);
    }
}

/// A `toolCalls` entry: the call (`id`, `name`, `args`) and, when it recorded one, its result
/// (`result` parts as content; `status`, `resultDisplay`, ... in the result's extra).
fn tool_call(mut c: Map<String, Value>) -> (ToolCall, Option<ToolResult>) {
    let id = take_str(&mut c, "id");
    let name = take_str(&mut c, "name").unwrap_or_default();
    let arguments = c.remove("args").unwrap_or_else(|| Value::Object(Map::new()));
    let mut call_extra = Extra::new();
    for k in ["displayName", "description", "agentId"] {
        if let Some(v) = c.remove(k) {
            call_extra.insert(k.into(), v);
        }
    }
    let call = ToolCall {
        arguments: arguments.into(),
        arguments_invalid: false,
        extra: call_extra,
        id: id.clone(),
        name,
        text_embedded: false,
    };
    let result = take(&mut c, "result");
    let recorded = result.is_some() || c.contains_key("resultDisplay");
    let result = recorded.then(|| ToolResult {
        call_id: id,
        content: result.map(Into::into),
        extra: c.into(),
        subagent_refs: Vec::new(),
    });
    (call, result)
}

/// Token usage: `input` is the prompt (cached tokens included, as Gemini's
/// `promptTokenCount`), `cached` the cache hits, `output` the candidates; `thoughts`, `tool`
/// and `total` stay in `metrics.extra`.
fn metrics(mut tokens: Map<String, Value>) -> Option<Metrics> {
    let m = Metrics {
        cached_tokens: take_u64(&mut tokens, "cached"),
        completion_tokens: take_u64(&mut tokens, "output"),
        cost_usd: None,
        duration_seconds: None,
        prompt_tokens: take_u64(&mut tokens, "input"),
        extra: tokens.into(),
    };
    (!m.is_empty()).then_some(m)
}

/// A part list of one `{text}` part becomes that string; anything else stays as given
/// (parts are not joined: the model's text parts concatenate without a separator).
fn plain_parts(v: Value) -> Value {
    match v {
        Value::Array(mut parts)
            if parts.len() == 1
                && parts[0]
                    .as_object()
                    .is_some_and(|o| o.len() == 1 && o.get("text").is_some_and(Value::is_string)) =>
        {
            match parts.pop() {
                Some(Value::Object(mut o)) => o.remove("text").unwrap_or(Value::Null),
                _ => Value::Null,
            }
        }
        other => other,
    }
}
