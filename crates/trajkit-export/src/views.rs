//! The two causal views of a canonical record, independent of any output format:
//! - `full`: the whole conversation with a per-message training weight (assistant decisions
//!   1; observations, unknown-authorship turns, copied context 0), copied-context repeats dropped;
//! - `assistant-turn`: one row per decision, whose prompt is exactly what the model had
//!   before it (reset at a context `replace` boundary) and whose completion is the decision.
//!
//! Only step content, reasoning, tool calls and tool results enter messages: outcome,
//! reward, task metadata and `extra` never do.

use std::collections::HashSet;

use serde_json::Value;
use trajkit_model::{Authorship, Role, Step, ToolResult, Trajectory};

/// Role of an exported message (the OpenAI chat roles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MsgRole {
    System,
    User,
    Assistant,
    Tool,
}

impl MsgRole {
    pub fn as_str(self) -> &'static str {
        match self {
            MsgRole::System => "system",
            MsgRole::User => "user",
            MsgRole::Assistant => "assistant",
            MsgRole::Tool => "tool",
        }
    }
}

/// A tool call as trainers expect it: arguments as JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: Option<String>,
    pub name: String,
    /// Canonical JSON of the parsed arguments, or the verbatim text when the source's was not JSON.
    pub arguments: String,
}

impl Call {
    /// The arguments as a JSON value for templates and ShareGPT rows: parsed back when they
    /// are JSON, else the verbatim text as a string.
    pub fn arguments_value(&self) -> Value {
        serde_json::from_str(&self.arguments).unwrap_or_else(|_| Value::String(self.arguments.clone()))
    }
}

/// Token ids and log probabilities the source recorded for one generation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tokens {
    pub prompt_token_ids: Option<Vec<i64>>,
    pub completion_token_ids: Option<Vec<i64>>,
    pub logprobs: Option<Vec<f64>>,
}

impl Tokens {
    fn is_empty(&self) -> bool {
        self.prompt_token_ids.is_none() && self.completion_token_ids.is_none() && self.logprobs.is_none()
    }
}

/// One exported message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: MsgRole,
    pub content: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<Call>,
    /// For `tool` messages: the call answered, when the source names it (never guessed).
    pub tool_call_id: Option<String>,
    /// 1 for a training target (an assistant decision), 0 for context.
    pub weight: u8,
    pub tokens: Option<Tokens>,
}

impl Message {
    fn new(role: MsgRole, content: String) -> Self {
        Message { role, content, reasoning: None, tool_calls: Vec::new(), tool_call_id: None, weight: 0, tokens: None }
    }

    /// Identity of a message's visible content, to recognise repeated copied context.
    fn fingerprint(&self) -> (MsgRole, &str, Vec<(&str, &str)>, Option<&str>) {
        let calls = self.tool_calls.iter().map(|c| (c.name.as_str(), c.arguments.as_str())).collect();
        (self.role, self.content.as_str(), calls, self.tool_call_id.as_deref())
    }
}

/// What a view left out or changed, reported in each row's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// Copied-context messages dropped because the conversation already holds them.
    pub copied_context_dropped: u64,
    /// Content parts that are not text (images, source blocks) and are not rendered.
    pub non_text_parts: u64,
    /// Steps of an interleaved subagent (Claude Code sidechains), not part of this conversation.
    pub subagent_steps: u64,
    /// Context `replace` boundaries met (ATIF compaction, Claude Code compact_boundary).
    pub context_boundaries: u64,
}

/// The full view of one record.
#[derive(Debug, Clone, PartialEq)]
pub struct FullView {
    pub messages: Vec<Message>,
    /// Messages with weight 1.
    pub targets: usize,
    pub notes: Notes,
}

/// One row of the assistant-turn view.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// 0-based index of the decision among the record's decisions.
    pub turn: usize,
    /// 0-based index of the decision's step in the record.
    pub step_index: usize,
    /// Exactly the context before the decision.
    pub prompt: Vec<Message>,
    /// The decision: text, reasoning and tool calls (never its results).
    pub completion: Message,
    /// A context `replace` boundary came before this decision: the prompt starts after it.
    pub context_reset: bool,
}

/// True for a step that replaced the model's history: ATIF v1.7 `extra.context_management`
/// with `boundary: replace` (kept by the reader under `extra["extra"]`), or a Claude Code
/// `compact_boundary` system line.
pub fn is_replace_boundary(step: &Step) -> bool {
    let atif = step
        .extra
        .get("extra")
        .and_then(|e| e.get("context_management"))
        .and_then(|c| c.get("boundary"))
        .and_then(Value::as_str)
        == Some("replace");
    let claude =
        step.role == Role::System && step.extra.get("subtype").and_then(Value::as_str) == Some("compact_boundary");
    atif || claude
}

/// A decision is a new assistant step of declared authorship that says or calls something.
pub fn is_decision(step: &Step) -> bool {
    step.role == Role::Assistant
        && !step.copied_context
        && !step.subagent
        && step.authorship == Authorship::Declared
        && (!step.tool_calls.is_empty() || step.content.as_deref().is_some_and(has_text))
}

fn has_text(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(parts) => {
            parts.iter().any(|p| p.get("text").and_then(Value::as_str).is_some_and(|t| !t.is_empty()))
        }
        _ => true,
    }
}

/// Text of a content value: strings as they are, text parts joined by newlines; other
/// parts are counted in `non_text`. Any other JSON value is written as canonical JSON.
pub fn content_text(v: Option<&Value>, non_text: &mut u64) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut texts: Vec<&str> = Vec::with_capacity(parts.len());
            for p in parts {
                match p {
                    Value::String(s) => texts.push(s),
                    _ => match p.get("text").and_then(Value::as_str) {
                        Some(t) => texts.push(t),
                        None => *non_text += 1,
                    },
                }
            }
            texts.join("\n")
        }
        Some(other) => other.to_string(),
    }
}

fn call_of(c: &trajkit_model::ToolCall) -> Call {
    let arguments = match (c.arguments.value(), c.arguments_invalid) {
        (Value::String(raw), true) => raw.clone(),
        (v, _) => v.to_string(),
    };
    Call { id: c.id.clone(), name: c.name.clone(), arguments }
}

fn int_list(v: Option<&Value>) -> Option<Vec<i64>> {
    v?.as_array()?.iter().map(Value::as_i64).collect()
}

fn float_list(v: Option<&Value>) -> Option<Vec<f64>> {
    v?.as_array()?.iter().map(Value::as_f64).collect()
}

/// Token ids and log probs of a step: ATIF metrics (`prompt_token_ids`,
/// `completion_token_ids`, `logprobs`) or Gym (`generation_token_ids`, `generation_log_probs`).
pub fn tokens_of(step: &Step) -> Option<Tokens> {
    let extra = &step.metrics.as_ref()?.extra;
    let t = Tokens {
        prompt_token_ids: int_list(extra.get("prompt_token_ids")),
        completion_token_ids: int_list(extra.get("completion_token_ids").or_else(|| extra.get("generation_token_ids"))),
        logprobs: float_list(extra.get("logprobs").or_else(|| extra.get("generation_log_probs"))),
    };
    (!t.is_empty()).then_some(t)
}

fn tool_message(r: &ToolResult, non_text: &mut u64) -> Message {
    let mut m = Message::new(MsgRole::Tool, content_text(r.content.as_deref(), non_text));
    m.tool_call_id = r.call_id.clone();
    m
}

/// The assistant message of a step (without its results).
fn assistant_message(step: &Step, notes: &mut Notes) -> Message {
    let mut m = Message::new(MsgRole::Assistant, content_text(step.content.as_deref(), &mut notes.non_text_parts));
    m.reasoning = step.reasoning.clone().filter(|r| !r.is_empty());
    m.tool_calls = step.tool_calls.iter().map(call_of).collect();
    m.tokens = tokens_of(step);
    m
}

/// Messages of one step, all with weight 0: an assistant message followed by one `tool`
/// message per result; a tool step's results; otherwise one message whose text is the
/// step's content followed by the text of any results it carries (ATIF observations on
/// system steps). Environment observations become `user` messages. Empty steps give none.
fn step_messages(step: &Step, notes: &mut Notes) -> Vec<Message> {
    let mut out = Vec::new();
    match step.role {
        Role::Assistant => {
            let m = assistant_message(step, notes);
            if !m.content.is_empty() || !m.tool_calls.is_empty() || m.reasoning.is_some() {
                out.push(m);
            }
            out.extend(step.tool_results.iter().map(|r| tool_message(r, &mut notes.non_text_parts)));
        }
        Role::Tool => {
            let text = content_text(step.content.as_deref(), &mut notes.non_text_parts);
            if !text.is_empty() {
                out.push(Message::new(MsgRole::Tool, text));
            }
            out.extend(step.tool_results.iter().map(|r| tool_message(r, &mut notes.non_text_parts)));
        }
        Role::System | Role::User | Role::Environment => {
            let role = if step.role == Role::System { MsgRole::System } else { MsgRole::User };
            let mut parts = vec![content_text(step.content.as_deref(), &mut notes.non_text_parts)];
            parts.extend(
                step.tool_results.iter().map(|r| content_text(r.content.as_deref(), &mut notes.non_text_parts)),
            );
            let text = parts.into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join("\n\n");
            if !text.is_empty() {
                out.push(Message::new(role, text));
            }
        }
    }
    out
}

/// The summary a `replace` boundary leaves in the model's context: the text of its results
/// (ATIF puts the compaction summary there). The boundary's own message is a harness note.
fn boundary_summary(step: &Step, notes: &mut Notes) -> Option<Message> {
    let texts: Vec<String> = step
        .tool_results
        .iter()
        .map(|r| content_text(r.content.as_deref(), &mut notes.non_text_parts))
        .filter(|t| !t.is_empty())
        .collect();
    (!texts.is_empty()).then(|| Message::new(MsgRole::System, texts.join("\n\n")))
}

/// Appends `msgs` to `out`, dropping copied-context messages already present in `seen`.
fn push_messages(out: &mut Vec<Message>, seen: &mut HashSet<u64>, msgs: Vec<Message>, copied: bool, notes: &mut Notes) {
    for m in msgs {
        let key = fingerprint_hash(&m);
        if copied && seen.contains(&key) {
            notes.copied_context_dropped += 1;
            continue;
        }
        seen.insert(key);
        out.push(m);
    }
}

fn fingerprint_hash(m: &Message) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    m.fingerprint().hash(&mut h);
    h.finish()
}

/// The full view: every step of the conversation once, decisions weighted 1.
pub fn full_view(t: &Trajectory) -> FullView {
    let mut notes = Notes::default();
    let mut messages = Vec::new();
    let mut seen = HashSet::new();
    let mut targets = 0;
    for step in &t.steps {
        if step.subagent {
            notes.subagent_steps += 1;
            continue;
        }
        if is_replace_boundary(step) {
            notes.context_boundaries += 1;
        }
        let mut msgs = step_messages(step, &mut notes);
        if is_decision(step) {
            if let Some(first) = msgs.first_mut().filter(|m| m.role == MsgRole::Assistant) {
                first.weight = 1;
                targets += 1;
            }
        }
        push_messages(&mut messages, &mut seen, msgs, step.copied_context, &mut notes);
    }
    FullView { messages, targets, notes }
}

/// The assistant-turn view: one row per decision, each with exactly its prior context.
pub fn assistant_turns(t: &Trajectory) -> (Vec<Turn>, Notes) {
    let mut notes = Notes::default();
    let mut context: Vec<Message> = Vec::new();
    let mut seen = HashSet::new();
    let mut turns = Vec::new();
    let mut reset = false;
    for (i, step) in t.steps.iter().enumerate() {
        if step.subagent {
            notes.subagent_steps += 1;
            continue;
        }
        if is_replace_boundary(step) {
            notes.context_boundaries += 1;
            reset = true;
            context.clear();
            seen.clear();
            if let Some(summary) = boundary_summary(step, &mut notes) {
                push_messages(&mut context, &mut seen, vec![summary], false, &mut notes);
            }
            continue;
        }
        let msgs = step_messages(step, &mut notes);
        if is_decision(step) {
            if let Some(first) = msgs.first().filter(|m| m.role == MsgRole::Assistant) {
                let mut completion = first.clone();
                completion.weight = 1;
                turns.push(Turn {
                    turn: turns.len(),
                    step_index: i,
                    prompt: context.clone(),
                    completion,
                    context_reset: reset,
                });
            }
        }
        push_messages(&mut context, &mut seen, msgs, step.copied_context, &mut notes);
    }
    (turns, notes)
}

/// Tool definitions in the shape chat templates expect (`{"type":"function","function":{...}}`):
/// OpenAI chat definitions as they are; flat ones (Responses API `name`/`parameters`,
/// Anthropic `input_schema`) wrapped; anything else verbatim.
pub fn tools(t: &Trajectory) -> Vec<Value> {
    t.tools.iter().flatten().map(|t| normalize_tool(t)).collect()
}

fn normalize_tool(tool: &Value) -> Value {
    let Some(m) = tool.as_object() else { return tool.clone() };
    if m.get("function").is_some_and(Value::is_object) {
        let mut out = m.clone();
        out.entry("type").or_insert_with(|| Value::String("function".into()));
        return Value::Object(out);
    }
    let Some(name) = m.get("name").filter(|n| n.is_string()) else { return tool.clone() };
    let mut function = serde_json::Map::new();
    function.insert("name".into(), name.clone());
    if let Some(d) = m.get("description") {
        function.insert("description".into(), d.clone());
    }
    if let Some(p) = m.get("parameters").or_else(|| m.get("input_schema")) {
        function.insert("parameters".into(), p.clone());
    }
    let mut out = serde_json::Map::new();
    out.insert("type".into(), Value::String("function".into()));
    out.insert("function".into(), Value::Object(function));
    Value::Object(out)
}
