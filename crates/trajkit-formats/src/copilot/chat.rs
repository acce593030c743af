//! VS Code Copilot Chat sessions (`copilot-chat`): the session JSON (`version`,
//! `requesterUsername`, `responderUsername`, `initialLocation`, `requests`, ...), the
//! same session as a mutation log (`oplog`), and exported chats (the same object).

use serde_json::{Map, Value};
use trajkit_model::{Agent, Extra, Gap, GapKind, Role, Step, ToolCall, ToolResult, Trajectory};

use super::{iso_from_millis, metrics, oplog, session_gaps, tool_call};
use crate::chat::first_user_task;
use crate::input::InputFile;
use crate::json::{object_members, record_object, take, take_str, take_u64, Member};
use crate::reader::{Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{schema, Problem};

/// Reader for VS Code Copilot Chat sessions and exports.
pub(crate) static READER: FnReader = FnReader { family: FAMILY, detect, read, arrays: false };

const FAMILY: &str = "copilot-chat";

/// VS Code Copilot Chat sessions, their mutation logs and exports.
fn detect(peek: &Peek) -> Option<Detection> {
    let doc = |reason: &str| Some(Detection { confidence: 90, reason: reason.into(), layout: Layout::Document });
    if log_session_keys(peek).is_some_and(|keys| is_session(&keys)) {
        return doc("chat session mutation log (kind 0 line whose v has requests)");
    }
    is_session(&peek.object_keys()?)
        .then(|| doc("chat session (requests + requesterUsername/responderUsername/initialLocation)"))?
}

/// The byte range of `v` when the first line is a mutation log's initial line (`kind` 0).
fn log_session(bytes: &[u8], top: &[Member]) -> Option<std::ops::Range<usize>> {
    let kind = top.iter().find(|m| m.key == "kind")?;
    let v = top.iter().find(|m| m.key == "v")?;
    (&bytes[kind.value.clone()] == b"0").then(|| v.value.clone())
}

/// The keys of `v` when the peek starts with a mutation log's initial line: from the parsed
/// first line, else scanned from the bytes (a first line longer than the peek).
fn log_session_keys(peek: &Peek) -> Option<Vec<String>> {
    let keys = |m: &Map<String, Value>| m.keys().cloned().collect();
    if let Some(first) = peek.first_line {
        let first = first.as_object()?;
        return (first.get("kind") == Some(&Value::from(0))).then(|| first.get("v")?.as_object().map(keys))?;
    }
    let v = log_session(peek.bytes, &object_members(peek.bytes)?)?;
    Some(object_members(&peek.bytes[v])?.into_iter().map(|m| m.key).collect())
}

/// A session object's keys: `requests` and one of the keys only a chat session has.
fn is_session(keys: &[String]) -> bool {
    let has = |k: &str| keys.iter().any(|key| key == k);
    has("requests") && ["requesterUsername", "responderUsername", "initialLocation"].iter().any(|k| has(k))
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let top = object_members(raw.bytes).unwrap_or_default();
    let mut session =
        if log_session(raw.bytes, &top).is_some() { oplog::replay(raw.bytes)? } else { record_object(raw.bytes)? };
    let requests = match session.remove("requests") {
        Some(Value::Array(a)) => a,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(schema("$.requests", "requests must be an array")),
    };
    let mut s = Session::default();
    for (i, r) in requests.into_iter().enumerate() {
        let Value::Object(r) = r else {
            return Err(schema(format!("$.requests[{i}]"), "a request must be an object"));
        };
        s.request(i, r);
    }
    session_gaps(&s.steps, &mut s.gaps);
    let session_id = take_str(&mut session, "sessionId").or(s.metadata_session);
    let task = first_user_task(&s.steps, raw.sha256);
    Ok(Trajectory {
        agent: Agent { model: s.model, name: Some(FAMILY.into()), version: s.version },
        extra: session.into(),
        gaps: s.gaps,
        session_id,
        steps: s.steps,
        ..raw.trajectory(FAMILY, file, task)
    })
}

/// What the requests build up: steps, gaps, and the first model, extension version and
/// `result.metadata.sessionId` seen (an export may carry no top-level `sessionId`).
#[derive(Default)]
struct Session {
    steps: Vec<Step>,
    gaps: Vec<Gap>,
    model: Option<String>,
    version: Option<String>,
    metadata_session: Option<String>,
}

impl Session {
    /// One request: a user step (the message), the assistant steps (tool call rounds when
    /// `result.metadata` records them, else the response parts) with their tool results,
    /// usage on the request's last assistant step, and an `incomplete_generation` gap for an
    /// error or a cancellation.
    fn request(&mut self, index: usize, mut r: Map<String, Value>) {
        let model = take_str(&mut r, "modelId");
        let response = match take(&mut r, "response") {
            Some(Value::Array(parts)) => parts,
            Some(other) => vec![other],
            None => Vec::new(),
        };
        let mut result = object_at(&mut r, "result");
        let mut meta = object_at(&mut result, "metadata");
        let completion = take_u64(&mut r, "completionTokens");
        let canceled = r.get("isCanceled").and_then(Value::as_bool) == Some(true);
        if self.version.is_none() {
            self.version =
                r.get("agent").and_then(|a| a.get("extensionVersion")).and_then(Value::as_str).map(Into::into);
        }
        if self.metadata_session.is_none() {
            self.metadata_session = meta.get("sessionId").and_then(Value::as_str).map(Into::into);
        }
        let model = model.or_else(|| meta.get("resolvedModel").and_then(Value::as_str).map(Into::into));

        self.steps.push(user_step(r));
        let first = self.steps.len();
        self.assistant_steps(response, &mut meta);
        self.note_model(first, model);
        let last = self.steps.iter().rposition(|s| s.role == Role::Assistant).filter(|&i| i >= first);
        let error = result.get("errorDetails").map(|e| e.get("message").and_then(Value::as_str).unwrap_or("error"));
        let detail = match (error, canceled) {
            (Some(message), _) => Some(format!("request {index}: {message}")),
            (None, true) => Some(format!("request {index}: canceled")),
            (None, false) => None,
        };
        if let Some(detail) = detail {
            self.gaps.push(Gap::at(GapKind::IncompleteGeneration, last, detail));
        }
        let prompt = take_u64(&mut meta, "promptTokens");
        let completion = take_u64(&mut meta, "outputTokens").or(completion);
        if !meta.is_empty() {
            result.insert("metadata".into(), Value::Object(meta));
        }
        // Usage and the rest of the result go on the last assistant step (else the user's).
        let Some(step) = last.or(first.checked_sub(1)).and_then(|i| self.steps.get_mut(i)) else { return };
        if step.role == Role::Assistant {
            match step.metrics.as_mut() {
                None => step.metrics = metrics(prompt, completion, None, Extra::new()),
                Some(m) => {
                    m.prompt_tokens = m.prompt_tokens.or(prompt);
                    m.completion_tokens = m.completion_tokens.or(completion);
                }
            }
        }
        if !result.is_empty() {
            step.extra.insert("result".into(), Value::Object(result));
        }
    }

    /// The request's assistant turns: one per tool call round when `metadata.toolCallRounds`
    /// holds any (the response parts then stay in the first one's `extra.response`), else one
    /// from the response parts. Results not linked to a call stay in `toolCallResults`.
    fn assistant_steps(&mut self, response: Vec<Value>, meta: &mut Map<String, Value>) {
        let mut results = object_at(meta, "toolCallResults");
        let first = self.steps.len();
        match meta.remove("toolCallRounds") {
            Some(Value::Array(rounds)) if !rounds.is_empty() => {
                for round in rounds {
                    let Value::Object(round) = round else { continue };
                    self.push_turn(round_step(round), &mut results);
                }
                if let Some(s) = self.steps.get_mut(first) {
                    s.extra.insert("response".into(), Value::Array(response));
                }
            }
            other => {
                if let Some(v) = other {
                    meta.insert("toolCallRounds".into(), v);
                }
                if !response.is_empty() {
                    let step = parts_step(response, &mut results);
                    self.push_turn(step, &mut results);
                }
            }
        }
        if !results.is_empty() {
            meta.insert("toolCallResults".into(), Value::Object(results));
        }
    }

    /// The session's model is the first request's; a request with another model names it
    /// on its assistant steps (from `first` on).
    fn note_model(&mut self, first: usize, model: Option<String>) {
        match (&self.model, model) {
            (None, m) => self.model = m,
            (Some(f), Some(m)) if *f != m => {
                for s in self.steps[first..].iter_mut().filter(|s| s.role == Role::Assistant) {
                    s.model = Some(m.clone());
                }
            }
            _ => {}
        }
    }

    /// An assistant step, then a tool step with the recorded results of its calls.
    fn push_turn(&mut self, step: Step, results: &mut Map<String, Value>) {
        let answers: Vec<ToolResult> =
            step.tool_calls.iter().filter_map(|c| c.id.as_deref().and_then(|id| answer(id, results))).collect();
        self.steps.push(step);
        if !answers.is_empty() {
            let mut tool = Step::new(Role::Tool, None);
            tool.tool_results = answers;
            self.steps.push(tool);
        }
    }
}

/// An object member taken out (an absent or null member gives an empty map; any other
/// value is kept under its own name, so nothing is lost).
fn object_at(map: &mut Map<String, Value>, key: &str) -> Map<String, Value> {
    match take(map, key) {
        Some(Value::Object(m)) => m,
        Some(other) => Map::from_iter([(key.to_string(), other)]),
        None => Map::new(),
    }
}

/// The user step of a request: its text, `requestId`, `timestamp` (Unix ms, as ISO-8601);
/// the rest of the request (`variableData`, `agent`, `message.parts`, ...) in `extra`.
fn user_step(mut r: Map<String, Value>) -> Step {
    let mut user = Step::new(Role::User, message_text(r.get("message")).map(Value::String));
    user.source_id = take(&mut r, "requestId");
    user.timestamp = r.get("timestamp").and_then(iso_from_millis);
    if let Some(Value::Object(mut m)) = r.remove("message") {
        m.remove("text");
        if !m.is_empty() {
            user.extra.insert("message".into(), Value::Object(m));
        }
    }
    user.extra.extend(r);
    user
}

/// The request's text: `message.text`, else its parts' texts joined (an export may write
/// the message as a plain string).
fn message_text(message: Option<&Value>) -> Option<String> {
    match message? {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => match m.get("text") {
            Some(Value::String(t)) => Some(t.clone()),
            _ => {
                let parts = m.get("parts")?.as_array()?;
                let texts: Vec<&str> = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
                (!texts.is_empty()).then(|| texts.concat())
            }
        },
        _ => None,
    }
}

/// One tool call round of `result.metadata.toolCallRounds`: the model's `response` text,
/// its `toolCalls` (`id`, `name`, `arguments` as a JSON string), `thinking.text` as
/// reasoning and `usage` as metrics.
fn round_step(mut round: Map<String, Value>) -> Step {
    let text = take_str(&mut round, "response").filter(|t| !t.is_empty());
    let mut step = Step::new(Role::Assistant, text.map(Value::String));
    step.source_id = take(&mut round, "id");
    if let Some(ts) = round.get("timestamp").and_then(iso_from_millis) {
        round.remove("timestamp");
        step.timestamp = Some(ts);
    }
    if let Some(Value::Array(calls)) = round.remove("toolCalls") {
        let mut other = Vec::new();
        for c in calls {
            match c {
                Value::Object(c) => step.tool_calls.push(tool_call(c, "id", "name")),
                c => other.push(c),
            }
        }
        if !other.is_empty() {
            step.extra.insert("toolCalls".into(), Value::Array(other));
        }
    }
    if let Some(Value::Object(mut thinking)) = round.remove("thinking") {
        step.reasoning = thinking.remove("text").as_ref().and_then(thinking_text);
        if !thinking.is_empty() {
            step.extra.insert("thinking".into(), Value::Object(thinking));
        }
    }
    if let Some(Value::Object(mut usage)) = round.remove("usage") {
        let cached = usage.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens")).and_then(Value::as_u64);
        let (prompt, completion) = (take_u64(&mut usage, "prompt_tokens"), take_u64(&mut usage, "completion_tokens"));
        step.metrics = metrics(prompt, completion, cached, usage.into());
    }
    step.extra.extend(round);
    step
}

/// Thinking text: a string, or a list of strings written one after another.
fn thinking_text(v: &Value) -> Option<String> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// The response parts of a request without tool call rounds, as one assistant step:
/// markdown parts (no `kind`, or `markdownContent`) joined as content, `thinking` parts as
/// reasoning, `toolInvocationSerialized` parts as calls (their `resultDetails`, when
/// recorded, as results). The parts stay as they are in `extra.response`.
fn parts_step(parts: Vec<Value>, results: &mut Map<String, Value>) -> Step {
    let mut text = String::new();
    let mut thinking: Vec<&str> = Vec::new();
    let mut calls = Vec::new();
    for p in &parts {
        match p.get("kind").and_then(Value::as_str) {
            None | Some("markdownContent") => {
                let value = p.get("value").or_else(|| p.get("content").and_then(|c| c.get("value")));
                text.push_str(value.and_then(Value::as_str).unwrap_or_default());
            }
            Some("thinking") => thinking.extend(p.get("value").and_then(Value::as_str).filter(|t| !t.is_empty())),
            Some("toolInvocationSerialized") => {
                let call = invocation_call(p);
                if let (Some(id), Some(details)) = (call.id.as_deref(), p.get("resultDetails")) {
                    results.entry(id).or_insert_with(|| details.clone());
                }
                calls.push(call);
            }
            _ => {}
        }
    }
    let mut step = Step::new(Role::Assistant, (!text.is_empty()).then_some(Value::String(text)));
    step.reasoning = (!thinking.is_empty()).then(|| thinking.join("\n"));
    step.tool_calls = calls;
    step.extra.insert("response".into(), Value::Array(parts));
    step
}

/// A `toolInvocationSerialized` part as a call: `toolCallId`, `toolId`; the part records no
/// arguments (they are `{}`), its `invocationMessage` text goes to the call's extra.
fn invocation_call(p: &Value) -> ToolCall {
    let str_at = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
    let mut extra = Extra::new();
    let message = p.get("invocationMessage");
    if let Some(m) = message.and_then(|m| m.as_str().or_else(|| m.get("value").and_then(Value::as_str))) {
        extra.insert("invocationMessage".into(), Value::String(m.into()));
    }
    ToolCall {
        arguments: Value::Object(Map::new()).into(),
        arguments_invalid: false,
        extra,
        id: str_at("toolCallId"),
        name: str_at("toolId").unwrap_or_default(),
        text_embedded: false,
    }
}

/// The recorded result of call `id` (taken out of `results`): text parts (`content[].value`)
/// joined by newlines, anything else as recorded.
fn answer(id: &str, results: &mut Map<String, Value>) -> Option<ToolResult> {
    let recorded = results.remove(id)?;
    let texts: Option<Vec<&str>> = recorded
        .get("content")
        .and_then(Value::as_array)
        .map(|parts| parts.iter().map(|p| p.get("value").and_then(Value::as_str)).collect::<Option<Vec<_>>>())
        .unwrap_or(None);
    let content = match texts {
        Some(t) if !t.is_empty() => Value::String(t.join("\n")),
        _ => recorded,
    };
    Some(ToolResult {
        call_id: Some(id.to_string()),
        content: Some(content.into()),
        extra: Extra::new(),
        subagent_refs: Vec::new(),
    })
}
