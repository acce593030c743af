//! Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, lines of
//! `{timestamp, type, payload}` (`session_meta`, `turn_context`, `response_item`,
//! `event_msg`, `compacted`); the whole file is one session (one trajectory).
//!
//! Steps come from `response_item` payloads (Responses-API items), plus `user_message`
//! events no response item holds (Codex Desktop); other `event_msg` lines give token
//! counts and are kept in `extra.events` unless they only repeat a response item. See
//! docs/formats/codex.md.

use serde_json::{Map, Value};
use trajkit_model::{
    Agent, Authorship, Extra, Gap, GapKind, Metrics, Provenance, Role, Step, Task, ToolCall, ToolResult, Trajectory,
};

use crate::claude_code::parse_lines;
use crate::input::InputFile;
use crate::json::{content_text, step_content_text, take, take_str, take_u64};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{schema, Problem};
use crate::responses::{message_role, take_reasoning};

/// Reader for Codex CLI rollout files.
pub(crate) static READER: FnReader = FnReader { family: FAMILY, detect, read, arrays: false };

const FAMILY: &str = "codex";

/// `event_msg` types that can repeat a response item, with the payload key of their text and
/// the response items they repeat: (`user_message` → user `message`, `agent_message` →
/// assistant `message`, `agent_reasoning` → `reasoning` summary / content text).
const MIRROR_TEXT: &[(&str, &str)] =
    &[("user_message", "message"), ("agent_message", "message"), ("agent_reasoning", "text")];

/// Harness-written user messages (context the CLI injects, not the person's words).
const HARNESS_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<turn_aborted>",
    "<user_shell_command>",
    "# AGENTS.md instructions",
];

/// Codex CLI rollouts: JSON Lines opening with `session_meta`, or rollout lines with payloads.
fn detect(peek: &Peek) -> Option<Detection> {
    let doc = |confidence, reason: &str| claim(confidence, reason, Layout::Document);
    if !(peek.name.ends_with(".jsonl") || peek.multi_line_records) {
        return None;
    }
    let first = peek.first_line.and_then(Value::as_object);
    let kind = first.and_then(|m| m.get("type")).and_then(Value::as_str);
    let payload = first.is_some_and(|m| m.get("payload").is_some_and(Value::is_object));
    match kind {
        Some("session_meta") if payload => doc(95, "rollout session_meta line"),
        Some("response_item" | "event_msg" | "turn_context") if payload && peek.has_key("timestamp") => {
            doc(85, "rollout lines without a session_meta first")
        }
        _ if peek.first_line.is_none()
            && peek.bytes.starts_with(b"{\"timestamp\":")
            && peek.contains("\"type\":\"session_meta\",\"payload\":") =>
        {
            doc(80, "rollout session_meta in a first line too long to parse")
        }
        _ => None,
    }
}

fn push_extra(extra: &mut Extra, key: &str, v: Value) {
    let slot = extra.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(a) = slot {
        a.push(v);
    }
}

fn is_harness_text(content: Option<&Value>) -> bool {
    content.and_then(content_text).is_some_and(|t| HARNESS_PREFIXES.iter().any(|p| t.trim_start().starts_with(p)))
}

/// Groups items into steps: reasoning, an assistant message and the calls that follow
/// form one assistant decision; every other item is a step of its own.
#[derive(Default)]
struct Builder {
    steps: Vec<Step>,
    open: bool,
    /// Index of the latest assistant step (token counts meter it).
    last_assistant: Option<usize>,
    model: Option<String>,
    turn_model: Option<String>,
}

impl Builder {
    fn close(&mut self) {
        self.open = false;
    }

    fn assistant(&mut self, what: &str, timestamp: &Option<String>) -> &mut Step {
        let fits = self.open
            && self.steps.last().is_some_and(|s| match what {
                "call" => true,
                "message" => s.content.is_none() && s.tool_calls.is_empty(),
                _ => s.reasoning.is_none() && s.content.is_none() && s.tool_calls.is_empty(),
            });
        if !fits {
            let mut step = Step::new(Role::Assistant, None);
            step.timestamp = timestamp.clone();
            if self.turn_model.is_some() && self.turn_model != self.model {
                step.model = self.turn_model.clone();
            }
            self.steps.push(step);
            self.open = true;
            self.last_assistant = Some(self.steps.len() - 1);
        }
        let last = self.steps.len() - 1;
        &mut self.steps[last]
    }

    fn push(&mut self, step: Step) {
        self.close();
        self.steps.push(step);
    }

    fn item(&mut self, mut item: Map<String, Value>, timestamp: Option<String>, no: u64) -> Result<(), Problem> {
        let path = format!("$[line {no}].payload");
        let kind = take_str(&mut item, "type").unwrap_or_default();
        match kind.as_str() {
            "message" => {
                let role = take_str(&mut item, "role")
                    .ok_or_else(|| schema(format!("{path}.role"), "message without role"))?;
                let content = take(&mut item, "content");
                if role == "assistant" {
                    let step = self.assistant("message", &timestamp);
                    step.content = content.map(Into::into);
                    if !item.is_empty() {
                        step.extra.insert("message".into(), Value::Object(item));
                    }
                    return Ok(());
                }
                let r = message_role(&role, &path)?;
                let mut step = Step::new(r, content);
                step.timestamp = timestamp;
                if r == Role::User && is_harness_text(step.content.as_deref()) {
                    step.authorship = Authorship::Unknown;
                }
                if role == "developer" {
                    step.extra.insert("role".into(), Value::String(role));
                }
                if !item.is_empty() {
                    step.extra.insert("message".into(), Value::Object(item));
                }
                self.push(step);
            }
            "reasoning" => {
                let text = take_reasoning(&mut item);
                let step = self.assistant("reasoning", &timestamp);
                if text.is_some() {
                    step.reasoning = text;
                }
                if !item.is_empty() {
                    step.extra.insert("reasoning".into(), Value::Object(item));
                }
            }
            "function_call" | "custom_tool_call" | "local_shell_call" | "tool_search_call" => {
                let name = take_str(&mut item, "name").unwrap_or_else(|| match kind.as_str() {
                    "local_shell_call" => "local_shell".to_string(),
                    _ => kind.clone(),
                });
                let id = take_str(&mut item, "call_id");
                let (arguments, invalid) = match kind.as_str() {
                    "function_call" => crate::json::take_arguments(&mut item),
                    "custom_tool_call" => (item.remove("input").unwrap_or(Value::Null).into(), false),
                    _ => (
                        item.remove("action").or_else(|| item.remove("arguments")).unwrap_or(Value::Null).into(),
                        false,
                    ),
                };
                if kind != "function_call" {
                    item.insert("type".into(), Value::String(kind));
                }
                let call = ToolCall {
                    arguments,
                    arguments_invalid: invalid,
                    extra: item.into(),
                    id,
                    name,
                    text_embedded: false,
                };
                self.assistant("call", &timestamp).tool_calls.push(call);
            }
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" | "tool_search_output" => {
                let call_id = take_str(&mut item, "call_id");
                let content = take(&mut item, "output");
                if kind != "function_call_output" {
                    item.insert("type".into(), Value::String(kind));
                }
                let mut step = Step::new(Role::Tool, None);
                step.timestamp = timestamp;
                step.tool_results.push(ToolResult {
                    call_id,
                    content: content.map(Into::into),
                    extra: item.into(),
                    subagent_refs: Vec::new(),
                });
                self.push(step);
            }
            "web_search_call" => {
                // A search the model runs inside its response (no output item follows): kept
                // in the response's assistant step, which it does not end.
                if let Some(t) = &timestamp {
                    item.entry("timestamp").or_insert(Value::String(t.clone()));
                }
                push_extra(&mut self.assistant("call", &timestamp).extra, "web_search_calls", Value::Object(item));
            }
            _ => {
                let mut step = Step::new(Role::Environment, None);
                step.timestamp = timestamp;
                step.extra.insert("type".into(), Value::String(kind));
                step.extra.insert("item".into(), Value::Object(item));
                self.push(step);
            }
        }
        Ok(())
    }
}

/// Texts of the response items that UI events can repeat, so that an event that only
/// repeats one (same text, every other value empty or equal to the item's) is not copied,
/// and a `user_message` that no response item holds becomes a user step.
struct Mirrors {
    /// (event type, text) -> the response items (payloads) still unmatched that hold it.
    texts: std::collections::HashMap<(&'static str, String), Vec<Map<String, Value>>>,
}

impl Mirrors {
    fn of(lines: &[crate::claude_code::Line]) -> Self {
        let mut texts: std::collections::HashMap<(&'static str, String), Vec<Map<String, Value>>> =
            std::collections::HashMap::new();
        for l in lines.iter().filter(|l| l.obj.get("type").and_then(Value::as_str) == Some("response_item")) {
            let Some(Value::Object(p)) = l.obj.get("payload") else {
                continue;
            };
            let ev = match (p.get("type").and_then(Value::as_str), p.get("role").and_then(Value::as_str)) {
                (Some("message"), Some("user")) => "user_message",
                (Some("message"), Some("assistant")) => "agent_message",
                (Some("reasoning"), _) => "agent_reasoning",
                _ => continue,
            };
            let fields: &[&str] = if ev == "agent_reasoning" { &["summary", "content"] } else { &["content"] };
            // Each text part, and the parts joined: events repeat either.
            let mut seen = Vec::new();
            for v in fields.iter().filter_map(|f| p.get(*f)) {
                if let Value::Array(parts) = v {
                    seen.extend(parts.iter().filter_map(|x| x.get("text").and_then(Value::as_str)).map(str::to_string));
                }
                seen.extend(content_text(v));
            }
            seen.sort();
            seen.dedup();
            for t in seen {
                texts.entry((ev, t)).or_default().push(p.clone());
            }
        }
        Mirrors { texts }
    }

    /// The first unmatched response item holding `text` for this event type (consumed).
    fn take(&mut self, ev: &str, text: &str) -> Option<Map<String, Value>> {
        let &(ev, _) = MIRROR_TEXT.iter().find(|(e, _)| *e == ev)?;
        let items = self.texts.get_mut(&(ev, text.to_string()))?;
        (!items.is_empty()).then(|| items.remove(0))
    }
}

/// Whether an event holds nothing beyond what `item` records: its text (under `key`) and
/// other values that are empty or equal to the item's value of the same name.
fn covers(item: &Map<String, Value>, payload: &Map<String, Value>, key: &str) -> bool {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    payload.iter().all(|(k, v)| k == "type" || k == key || empty(v) || item.get(k) == Some(v))
}

/// Token usage of a `token_count` event object (`total_token_usage` / `last_token_usage`).
fn usage(v: &Value) -> Option<Metrics> {
    let Value::Object(mut u) = v.clone() else {
        return None;
    };
    let prompt = take_u64(&mut u, "input_tokens");
    let cached = take_u64(&mut u, "cached_input_tokens");
    let completion = take_u64(&mut u, "output_tokens");
    let m = Metrics {
        duration_seconds: None,
        cached_tokens: cached,
        completion_tokens: completion,
        cost_usd: None,
        extra: u.into(),
        prompt_tokens: prompt,
    };
    (!m.is_empty()).then_some(m)
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let lines = parse_lines(raw.bytes)?;
    let mut b = Builder::default();
    let mut extra = Extra::new();
    let mut gaps = Vec::new();
    let mut session_id = None;
    let mut version = None;
    let mut first_prompt: Option<String> = None;
    let mut totals: Option<Metrics> = None;
    let mut event_counts: Map<String, Value> = Map::new();
    let mut metered = 0usize;
    let mut mirrors = Mirrors::of(&lines);
    for line in lines {
        let no = line.no;
        let mut obj = line.obj;
        let kind = take_str(&mut obj, "type")
            .ok_or_else(|| schema(format!("$[line {no}].type"), format!("line {no} has no type")))?;
        let timestamp = take_str(&mut obj, "timestamp");
        let payload = match obj.remove("payload") {
            Some(Value::Object(p)) => p,
            _ => return Err(schema(format!("$[line {no}].payload"), format!("line {no}: payload must be an object"))),
        };
        match kind.as_str() {
            "session_meta" => {
                if session_id.is_none() {
                    let mut meta = payload;
                    session_id = take_str(&mut meta, "id");
                    version = take_str(&mut meta, "cli_version");
                    let instructions = match take(&mut meta, "base_instructions") {
                        Some(Value::Object(mut bi)) => {
                            let t = take_str(&mut bi, "text");
                            if !bi.is_empty() {
                                meta.insert("base_instructions".into(), Value::Object(bi));
                            }
                            t
                        }
                        Some(Value::String(s)) => Some(s),
                        Some(other) => {
                            meta.insert("base_instructions".into(), other);
                            None
                        }
                        None => take_str(&mut meta, "instructions"),
                    };
                    if let Some(text) = instructions {
                        let mut step = Step::new(Role::System, Some(Value::String(text)));
                        step.timestamp = timestamp;
                        step.extra.insert("source".into(), Value::String("session_meta".into()));
                        b.push(step);
                    }
                    extra.insert("session_meta".into(), Value::Object(meta));
                } else {
                    push_extra(&mut extra, "later_session_meta", Value::Object(payload));
                }
            }
            "turn_context" => {
                if let Some(m) = payload.get("model").and_then(Value::as_str) {
                    if b.model.is_none() {
                        b.model = Some(m.to_string());
                    }
                    b.turn_model = Some(m.to_string());
                }
                push_extra(&mut extra, "turn_contexts", Value::Object(payload));
            }
            "response_item" => {
                if payload.get("type").and_then(Value::as_str) == Some("ghost_snapshot") {
                    push_extra(&mut extra, "ghost_snapshots", Value::Object(payload));
                } else {
                    b.item(payload, timestamp, no)?;
                }
            }
            "event_msg" => {
                let ev = payload.get("type").and_then(Value::as_str).unwrap_or("").to_string();
                let n = event_counts.get(&ev).and_then(Value::as_u64).unwrap_or(0);
                event_counts.insert(ev.clone(), Value::from(n + 1));
                // An event that only repeats a response item is not copied.
                let mut duplicate = false;
                match ev.as_str() {
                    "token_count" => {
                        let info = payload.get("info");
                        if let Some(t) = info.and_then(|i| i.get("total_token_usage")).and_then(usage) {
                            totals = Some(t);
                        }
                        let last = info.and_then(|i| i.get("last_token_usage")).and_then(usage);
                        // The usage of the model call that produced the latest assistant step.
                        if let (Some(m), Some(i)) = (last, b.last_assistant) {
                            if i >= metered {
                                if let Some(step) = b.steps.get_mut(i).filter(|s| s.metrics.is_none()) {
                                    step.metrics = Some(m);
                                    metered = i + 1;
                                }
                            }
                        }
                        if let Some(r) = payload.get("rate_limits").filter(|r| !r.is_null()) {
                            extra.insert("last_rate_limits".into(), r.clone());
                        }
                    }
                    "user_message" => {
                        let text = payload.get("message").and_then(Value::as_str).map(str::to_string);
                        if first_prompt.is_none() {
                            first_prompt = text.clone();
                        }
                        let item = text.as_deref().and_then(|t| mirrors.take("user_message", t));
                        if let Some(item) = &item {
                            duplicate = covers(item, &payload, "message");
                        } else if let Some(text) = text {
                            // Codex Desktop logs what the person typed only as this event.
                            let mut rest = payload.clone();
                            rest.remove("type");
                            rest.remove("message");
                            let mut step = Step::new(Role::User, Some(Value::String(text)));
                            step.timestamp = timestamp.clone();
                            if is_harness_text(step.content.as_deref()) {
                                step.authorship = Authorship::Unknown;
                            }
                            step.extra.insert("source".into(), Value::String("event_msg".into()));
                            step.extra.insert("line".into(), Value::from(no));
                            for (k, v) in rest {
                                step.extra.insert(k, v);
                            }
                            b.push(step);
                            continue;
                        }
                    }
                    "turn_aborted" => {
                        let reason = payload.get("reason").and_then(Value::as_str).unwrap_or("aborted");
                        gaps.push(Gap::at(GapKind::IncompleteGeneration, None, format!("turn_aborted: {reason}")));
                    }
                    "agent_message" | "agent_reasoning" => {
                        let key = if ev == "agent_message" { "message" } else { "text" };
                        let item = payload.get(key).and_then(Value::as_str).and_then(|t| mirrors.take(&ev, t));
                        duplicate = item.is_some_and(|i| covers(&i, &payload, key));
                    }
                    _ => {}
                }
                if !duplicate {
                    let mut e = Map::new();
                    e.insert("line".into(), Value::from(no));
                    if let Some(t) = timestamp {
                        e.insert("timestamp".into(), Value::String(t));
                    }
                    e.insert("payload".into(), Value::Object(payload));
                    push_extra(&mut extra, "events", Value::Object(e));
                }
            }
            "compacted" => {
                b.close();
                push_extra(&mut extra, "compacted", Value::Object(payload));
            }
            _ => {
                let mut o = Map::new();
                o.insert("type".into(), Value::String(kind));
                o.insert("payload".into(), Value::Object(payload));
                push_extra(&mut extra, "other_lines", Value::Object(o));
            }
        }
    }
    if !event_counts.is_empty() {
        extra.insert("event_msg_counts".into(), Value::Object(event_counts));
    }
    let steps = b.steps;
    link_tool_results(&steps, &mut gaps);
    for (i, s) in steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    let instruction = first_prompt.filter(|t| !t.trim().is_empty()).or_else(|| {
        steps
            .iter()
            .filter(|s| s.role == Role::User && s.authorship == Authorship::Declared)
            .find_map(|s| s.content.as_ref().and_then(step_content_text).filter(|t| !t.trim().is_empty()))
    });
    let task = Task::keyed(None, None, instruction, None, raw.sha256);
    // A session is one document: its lines are events, never records of their own.
    let provenance = Provenance { line: None, ..raw.provenance(FAMILY, file) };
    Ok(Trajectory {
        agent: Agent { model: b.model, name: Some(FAMILY.into()), version },
        extra,
        gaps,
        metrics: totals,
        session_id,
        steps,
        ..Trajectory::new(raw.id(FAMILY), provenance, task)
    })
}
