//! Observability trace exports (MLflow, Langfuse, LangSmith): the shared span-tree logic.
//!
//! Each reader turns its document into a flat list of [`Span`]s (id, parent, kind, input,
//! output, usage) plus record-level fields; [`build`] walks the span tree into steps, tool
//! calls and results, and nested subagents. The mapping rules are in docs/formats/mlflow.md,
//! langfuse.md and langsmith.md (shared section "Span tree").

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};
use trajkit_model::{
    Agent, Extra, Gap, GapKind, LazyValue, Metrics, Outcome, Provenance, Role, Status, Step, Subagent, Task, ToolCall,
    ToolResult, Trajectory, Verification,
};

use crate::input::InputFile;
use crate::json::content_text;
use crate::links::link_tool_results;
use crate::reader::RawRecord;

/// What a span is, as far as the conversation is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A model call: its output is an assistant step.
    Llm,
    /// A tool execution: a tool result (and its call when the model output names none).
    Tool,
    /// An agent: transparent, or a subagent when nested (see `build`).
    Agent,
    /// A chain / graph node: transparent, or a subagent when it runs inside a tool.
    Chain,
    /// Anything else (retriever, parser, plain span): transparent.
    Other,
}

/// One span of a trace, normalized by a reader.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub id: String,
    pub parent: Option<String>,
    pub kind: Kind,
    pub name: String,
    /// Sort key among siblings (start time in a form that sorts as text).
    pub order: String,
    /// Start time as the source wrote it (ISO-8601), for `Step::timestamp`.
    pub timestamp: Option<String>,
    /// Input and output, JSON-in-a-string decoded (the verbatim values stay in `raw`).
    pub input: Option<Value>,
    pub output: Option<Value>,
    pub model: Option<String>,
    pub metrics: Option<Metrics>,
    /// A tool call id the span states itself (tool spans).
    pub call_id: Option<String>,
    /// The span as the source gives it, less what the reader mapped exactly.
    pub raw: Map<String, Value>,
    /// The key the reader took the span id from (and removed from `raw`), if it removed
    /// it: a span kept verbatim in `extra.spans` gets its id back under this key.
    pub id_key: Option<&'static str>,
}

/// Decodes a string holding a JSON object or array; any other value is returned as is.
pub(crate) fn decoded(v: &Value) -> Value {
    if let Value::String(s) = v {
        let t = s.trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            if let Ok(parsed) = serde_json::from_str::<Value>(s) {
                return parsed;
            }
        }
    }
    v.clone()
}

/// Zero-padded decimal so that integers sort as text.
pub(crate) fn order_key_int(n: u128) -> String {
    format!("{n:040}")
}

/// Token usage from a usage object in any of the common spellings; `None` when it has
/// none of them. The object itself is kept in `extra` by the caller.
pub(crate) fn usage_metrics(u: &Value) -> Option<Metrics> {
    let u = u.as_object()?;
    let num = |keys: &[&str]| keys.iter().find_map(|k| u.get(*k).and_then(Value::as_u64));
    let prompt = num(&["input_tokens", "prompt_tokens", "input", "promptTokens", "prompt_token_count"]);
    let completion =
        num(&["output_tokens", "completion_tokens", "output", "completionTokens", "candidates_token_count"]);
    let cached = num(&["input_cache_read", "cache_read_input_tokens", "prompt_details.cache_read"])
        .or_else(|| u.get("input_token_details").and_then(|d| d.get("cache_read")).and_then(Value::as_u64))
        .or_else(|| u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens")).and_then(Value::as_u64));
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    Some(Metrics {
        duration_seconds: None,
        cached_tokens: cached,
        completion_tokens: completion,
        cost_usd: None,
        extra: Extra::new(),
        prompt_tokens: prompt,
    })
}

// ---------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------

/// A message as read from a span's input or output.
#[derive(Debug, Default)]
struct Msg {
    role: Option<Role>,
    content: Option<Value>,
    reasoning: Option<String>,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
}

fn role_of(s: &str) -> Option<Role> {
    match s.to_ascii_lowercase().as_str() {
        "user" | "human" | "humanmessage" | "humanmessagechunk" => Some(Role::User),
        "assistant" | "ai" | "model" | "aimessage" | "aimessagechunk" | "bot" => Some(Role::Assistant),
        "system" | "developer" | "systemmessage" => Some(Role::System),
        "tool" | "function" | "ipython" | "toolmessage" | "functionmessage" => Some(Role::Tool),
        _ => None,
    }
}

fn call(id: Option<&Value>, name: &str, args: Option<&Value>) -> ToolCall {
    let (arguments, invalid) = match args {
        Some(Value::String(s)) if s.trim().is_empty() => (Value::Object(Map::new()), false),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v) => (v, false),
            Err(_) => (Value::String(s.clone()), true),
        },
        Some(v) => (v.clone(), false),
        None => (Value::Object(Map::new()), false),
    };
    let id = id.and_then(|v| v.as_str().map(str::to_string).or_else(|| v.as_u64().map(|n| n.to_string())));
    ToolCall {
        arguments: arguments.into(),
        arguments_invalid: invalid,
        extra: Extra::new(),
        id,
        name: name.to_string(),
        text_embedded: false,
    }
}

/// A tool call object in OpenAI (`function.name/arguments`), LangChain (`name/args`),
/// Responses (`call_id/name/arguments`), Anthropic (`tool_use` `id/name/input`), OTel
/// GenAI (`tool_call` part), Gemini (`function_call`) or Vercel (`toolCallId/toolName`) form.
fn as_call(v: &Value) -> Option<ToolCall> {
    let o = v.as_object()?;
    if let Some(f) = o.get("function").and_then(Value::as_object) {
        let name = f.get("name")?.as_str()?;
        return Some(call(o.get("id"), name, f.get("arguments")));
    }
    if let Some(f) = o.get("function_call").or_else(|| o.get("functionCall")).and_then(Value::as_object) {
        let name = f.get("name")?.as_str()?;
        return Some(call(f.get("id"), name, f.get("args").or_else(|| f.get("arguments"))));
    }
    if let Some(name) = o.get("toolName").and_then(Value::as_str) {
        return Some(call(o.get("toolCallId"), name, o.get("input").or_else(|| o.get("args"))));
    }
    let name = o.get("name")?.as_str()?;
    let id = o.get("call_id").or_else(|| o.get("id"));
    let args = o.get("arguments").or_else(|| o.get("args")).or_else(|| o.get("input"));
    Some(call(id, name, args))
}

fn is_call_item(v: &Value) -> bool {
    match v.get("type").and_then(Value::as_str) {
        Some("function_call" | "tool_use" | "tool_call" | "tool-call" | "function") => true,
        Some(_) => false,
        None => ["toolCallId", "function_call", "functionCall"].iter().any(|k| v.get(*k).is_some_and(|x| !x.is_null())),
    }
}

fn result_of(v: &Value) -> Option<ToolResult> {
    let o = v.as_object()?;
    let kind = o.get("type").and_then(Value::as_str);
    let (id, content) = match kind {
        Some("function_call_output") => (o.get("call_id"), o.get("output")),
        Some("tool_result") => (o.get("tool_use_id"), o.get("content")),
        Some("tool_call_response") => (o.get("id"), o.get("response").or_else(|| o.get("result"))),
        _ if o.contains_key("function_response") || o.contains_key("functionResponse") => {
            let r = o.get("function_response").or_else(|| o.get("functionResponse"))?;
            (r.get("id"), r.get("response"))
        }
        _ => return None,
    };
    Some(ToolResult {
        call_id: id.and_then(Value::as_str).map(str::to_string),
        content: content.cloned().map(Into::into),
        extra: Extra::new(),
        subagent_refs: Vec::new(),
    })
}

/// Reads one message object (or string) into a `Msg`.
fn message(v: &Value) -> Option<Msg> {
    if let Value::String(s) = v {
        return Some(Msg { role: Some(Role::User), content: Some(Value::String(s.clone())), ..Default::default() });
    }
    let o = v.as_object()?;
    // LangChain serialized form: {"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}
    if o.get("lc").is_some() {
        if let Some(kwargs) = o.get("kwargs") {
            let class = o.get("id").and_then(Value::as_array).and_then(|a| a.last()).and_then(Value::as_str);
            let mut m = message(kwargs)?;
            if let Some(r) = class.and_then(role_of) {
                m.role = Some(r);
            }
            return Some(m);
        }
    }
    // Gemini: {"content": {"parts": [...], "role": "model"}}
    if let Some(inner @ Value::Object(c)) = o.get("content") {
        if c.contains_key("parts") {
            return message(inner);
        }
    }
    if is_call_item(v) {
        return Some(Msg {
            role: Some(Role::Assistant),
            calls: as_call(v).into_iter().collect(),
            ..Default::default()
        });
    }
    if let Some(r) = result_of(v) {
        return Some(Msg { role: Some(Role::Tool), results: vec![r], ..Default::default() });
    }
    let role = o
        .get("role")
        .and_then(Value::as_str)
        .or_else(|| o.get("type").and_then(Value::as_str).filter(|t| *t != "message"))
        .and_then(role_of);
    let mut m = Msg { role, ..Default::default() };
    let parts = o.get("content").or_else(|| o.get("parts"));
    match parts {
        Some(Value::Array(items)) => {
            let mut kept = Vec::new();
            for p in items {
                if is_call_item(p) {
                    m.calls.extend(as_call(p));
                } else if let Some(r) = result_of(p) {
                    m.results.push(r);
                } else if matches!(p.get("type").and_then(Value::as_str), Some("thinking" | "reasoning")) {
                    let t = p.get("thinking").or_else(|| p.get("text")).or_else(|| p.get("content"));
                    if let Some(t) = t.and_then(Value::as_str) {
                        m.reasoning = Some(t.to_string());
                    }
                } else {
                    kept.push(p.clone());
                }
            }
            if !kept.is_empty() {
                m.content = Some(Value::Array(kept));
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => m.content = Some(other.clone()),
    }
    for key in ["tool_calls", "toolCalls"] {
        if let Some(Value::Array(calls)) = o.get(key) {
            if m.calls.is_empty() {
                m.calls.extend(calls.iter().filter_map(as_call));
            }
        }
    }
    if m.calls.is_empty() {
        if let Some(Value::Array(calls)) = o.get("additional_kwargs").and_then(|k| k.get("tool_calls")) {
            m.calls.extend(calls.iter().filter_map(as_call));
        }
    }
    if m.role == Some(Role::Tool) && m.results.is_empty() {
        let id = o.get("tool_call_id").or_else(|| o.get("toolCallId")).and_then(Value::as_str);
        m.results.push(ToolResult {
            call_id: id.map(str::to_string),
            content: m.content.take().map(Into::into),
            extra: Extra::new(),
            subagent_refs: Vec::new(),
        });
    }
    if let Some(r) = o.get("reasoning_content").and_then(Value::as_str) {
        m.reasoning = Some(r.to_string());
    }
    Some(m)
}

/// The list of messages in a model input: a list, `messages` (also LangChain's list of
/// lists), Responses `input`, a `prompt`/`prompts` text, with `system`/`instructions` first.
fn input_messages(v: &Value) -> Vec<Msg> {
    let mut out = Vec::new();
    let list: Option<&Vec<Value>> = match v {
        // LangChain passes a batch: a list of message lists (the first is the prompt).
        Value::Array(a) => match a.first() {
            Some(Value::Array(inner)) => Some(inner),
            _ => Some(a),
        },
        Value::Object(o) => {
            for key in ["system", "instructions", "system_instruction"] {
                if let Some(Value::String(s)) = o.get(key).or_else(|| o.get("config").and_then(|c| c.get(key))) {
                    out.push(Msg {
                        role: Some(Role::System),
                        content: Some(Value::String(s.clone())),
                        ..Default::default()
                    });
                    break;
                }
            }
            match o.get("messages").or_else(|| o.get("input")).or_else(|| o.get("contents")) {
                Some(Value::Array(a)) => match a.first() {
                    Some(Value::Array(_)) => a.first().and_then(Value::as_array),
                    _ => Some(a),
                },
                Some(s @ Value::String(_)) => {
                    out.extend(message(s));
                    None
                }
                _ => {
                    if let Some(p) = o.get("prompt").or_else(|| o.get("prompts").and_then(|p| p.get(0))) {
                        out.extend(message(p));
                    } else if o.contains_key("role") || o.contains_key("content") {
                        out.extend(message(v));
                    }
                    None
                }
            }
        }
        Value::String(_) => {
            out.extend(message(v));
            None
        }
        _ => None,
    };
    if let Some(items) = list {
        out.extend(items.iter().filter_map(message));
    }
    out
}

/// The assistant message a model call produced, from the many output shapes.
fn output_message(v: &Value) -> Msg {
    let merged = |items: &[Value]| {
        let mut m = Msg { role: Some(Role::Assistant), ..Default::default() };
        let mut parts = Vec::new();
        for it in items {
            if it.get("type").and_then(Value::as_str) == Some("reasoning") {
                let text = it.get("summary").or_else(|| it.get("content")).and_then(content_text);
                if let Some(t) = text.filter(|t| !t.is_empty()) {
                    m.reasoning = Some(t);
                }
                continue;
            }
            if let Some(x) = message(it) {
                m.calls.extend(x.calls);
                if m.reasoning.is_none() {
                    m.reasoning = x.reasoning;
                }
                match x.content {
                    Some(Value::Array(p)) => parts.extend(p),
                    Some(c) => parts.push(c),
                    None => {}
                }
            }
        }
        m.content = match parts.len() {
            0 => None,
            1 if parts[0].is_string() => parts.pop(),
            _ => Some(Value::Array(parts)),
        };
        m
    };
    match v {
        Value::String(s) => {
            Msg { role: Some(Role::Assistant), content: Some(Value::String(s.clone())), ..Default::default() }
        }
        Value::Array(items) => merged(items),
        Value::Object(o) => {
            if let Some(msg) =
                o.get("choices").and_then(|c| c.get(0)).and_then(|c| c.get("message").or_else(|| c.get("delta")))
            {
                return output_message(msg);
            }
            if let Some(g) = o.get("generations").and_then(|g| g.get(0)) {
                let g = g.get(0).unwrap_or(g);
                if let Some(msg) = g.get("message") {
                    return output_message(msg);
                }
                if let Some(t) = g.get("text") {
                    return output_message(t);
                }
            }
            if let Some(Value::Array(items)) = o.get("output") {
                return merged(items);
            }
            if let Some(Value::Array(items)) = o.get("messages") {
                if let Some(last) = items.last() {
                    return output_message(last);
                }
            }
            if let Some(Value::Array(items)) = o.get("candidates") {
                if let Some(c) = items.first() {
                    return output_message(c);
                }
            }
            let mut m = message(v).unwrap_or_default();
            m.role = Some(Role::Assistant);
            if m.content.is_none() && m.calls.is_empty() {
                if let Some(t) = o.get("text").or_else(|| o.get("output").filter(|x| x.is_string())) {
                    m.content = Some(t.clone());
                }
            }
            m
        }
        _ => Msg::default(),
    }
}

fn msg_step(m: Msg) -> Step {
    let mut s = Step::new(m.role.unwrap_or(Role::User), m.content);
    s.reasoning = m.reasoning;
    s.tool_calls = m.calls;
    s.tool_results = m.results;
    s
}

// ---------------------------------------------------------------------------------------
// Tree walk
// ---------------------------------------------------------------------------------------

/// What the walk produced for one trajectory.
#[derive(Default)]
pub(crate) struct Built {
    pub steps: Vec<Step>,
    pub subagents: Vec<Subagent>,
    pub gaps: Vec<Gap>,
    /// Spans that became no step (wrappers, chains, retrievers), verbatim.
    pub other_spans: Vec<Value>,
    /// The first model named by a model-call span.
    pub model: Option<String>,
    /// Tool definitions found among the first model call's input messages.
    pub tools: Vec<Value>,
}

/// Shared context of one document.
pub(crate) struct Doc<'a> {
    pub family: &'static str,
    pub raw: &'a RawRecord<'a>,
    pub file: &'a InputFile,
    pub format_version: Option<String>,
}

struct Tree<'a> {
    spans: &'a [Span],
    children: HashMap<&'a str, Vec<usize>>,
    /// Memo: does the subtree of span i hold a model call?
    has_llm: Vec<bool>,
}

impl<'a> Tree<'a> {
    fn new(spans: &'a [Span]) -> (Self, Vec<usize>) {
        let ids: HashSet<&str> = spans.iter().map(|s| s.id.as_str()).collect();
        let mut children: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut roots = Vec::new();
        for (i, s) in spans.iter().enumerate() {
            match s.parent.as_deref() {
                Some(p) if ids.contains(p) && p != s.id => children.entry(p).or_default().push(i),
                _ => roots.push(i),
            }
        }
        let sort = |v: &mut Vec<usize>| v.sort_by(|a, b| spans[*a].order.cmp(&spans[*b].order).then(a.cmp(b)));
        for v in children.values_mut() {
            sort(v);
        }
        sort(&mut roots);
        let mut t = Tree { spans, children, has_llm: vec![false; spans.len()] };
        let index: HashMap<&str, usize> = spans.iter().enumerate().map(|(i, s)| (s.id.as_str(), i)).collect();
        let mut parent: Vec<Option<usize>> =
            spans.iter().map(|s| s.parent.as_deref().and_then(|p| index.get(p)).copied()).collect();
        for r in &roots {
            parent[*r] = None;
        }
        // Spans on a parent cycle are reachable from no root: the first of each becomes a
        // root and its edge to its parent is dropped, which breaks the cycle.
        let mut reached = vec![false; spans.len()];
        let mut stack: Vec<usize> = roots.clone();
        loop {
            while let Some(i) = stack.pop() {
                if !std::mem::replace(&mut reached[i], true) {
                    stack.extend(t.kids(i).iter().copied());
                }
            }
            let Some(i) = reached.iter().position(|r| !r) else {
                break;
            };
            if let Some(p) = parent[i].take() {
                if let Some(v) = t.children.get_mut(spans[p].id.as_str()) {
                    v.retain(|k| *k != i);
                }
            }
            roots.push(i);
            stack.push(i);
        }
        // Each model call marks its ancestors, stopping at one already marked (linear).
        for (i, s) in spans.iter().enumerate() {
            let mut at = (s.kind == Kind::Llm).then_some(i);
            while let Some(j) = at {
                t.has_llm[j] = true;
                at = parent[j].filter(|p| !t.has_llm[*p]);
            }
        }
        (t, roots)
    }

    fn kids(&self, i: usize) -> &[usize] {
        self.children.get(self.spans[i].id.as_str()).map(Vec::as_slice).unwrap_or(&[])
    }

    fn llm_desc(&self, i: usize) -> bool {
        self.kids(i).iter().any(|k| self.has_llm[*k])
    }

    /// Model calls reachable from `roots` without entering a nested agent or a tool.
    fn own_llm(&self, roots: &[usize]) -> bool {
        let mut stack: Vec<(usize, bool)> = roots.iter().map(|r| (*r, true)).collect();
        let mut seen = HashSet::new();
        while let Some((i, is_root)) = stack.pop() {
            if !seen.insert(i) {
                continue;
            }
            match self.spans[i].kind {
                Kind::Llm => return true,
                Kind::Tool => continue,
                Kind::Agent if !is_root => continue,
                _ => {}
            }
            stack.extend(self.kids(i).iter().map(|k| (*k, false)));
        }
        false
    }
}

/// An unanswered call the model made, for linking tool spans. `at` (step, call) is set
/// when the model gave the call no id: the tool span that answers it lends its id.
struct Pending {
    id: Option<String>,
    at: (usize, usize),
    name: String,
    arguments: Value,
}

/// The unanswered calls, indexed by call id and by name so that matching a tool span is
/// O(1) amortized. Slots are cleared when answered; the indexes drop cleared slots lazily.
#[derive(Default)]
struct PendingCalls {
    slots: Vec<Option<Pending>>,
    /// Slots per call id, in emission order (a repeated id answers the earliest first).
    by_id: HashMap<String, VecDeque<usize>>,
    /// Slots per call name.
    by_name: HashMap<String, Vec<usize>>,
}

impl PendingCalls {
    fn push(&mut self, p: Pending) {
        let slot = self.slots.len();
        if let Some(id) = &p.id {
            self.by_id.entry(id.clone()).or_default().push_back(slot);
        }
        self.by_name.entry(p.name.clone()).or_default().push(slot);
        self.slots.push(Some(p));
    }

    fn get(&self, slot: usize) -> Option<&Pending> {
        self.slots.get(slot).and_then(Option::as_ref)
    }

    fn take(&mut self, slot: usize) -> Option<Pending> {
        self.slots.get_mut(slot).and_then(Option::take)
    }

    /// The earliest unanswered call with this id.
    fn with_id(&mut self, id: &str) -> Option<usize> {
        let q = self.by_id.get_mut(id)?;
        while let Some(&slot) = q.front() {
            if self.slots.get(slot).is_some_and(Option::is_some) {
                return Some(slot);
            }
            q.pop_front();
        }
        self.by_id.remove(id);
        None
    }

    /// A result stated in a model input answers every unanswered call with its id.
    fn answer_id(&mut self, id: &str) {
        for slot in self.by_id.remove(id).unwrap_or_default() {
            if let Some(s) = self.slots.get_mut(slot) {
                *s = None;
            }
        }
    }

    /// The unanswered calls whose name a tool span's name matches (see `name_matches`):
    /// the names it equals or ends in after a separator.
    fn named(&mut self, span: &str) -> Vec<usize> {
        let mut out = Vec::new();
        let cuts = std::iter::once(0)
            .chain(span.char_indices().filter(|(_, c)| is_name_separator(*c)).map(|(i, c)| i + c.len_utf8()));
        for cut in cuts {
            let Some(name) = span.get(cut..) else {
                continue;
            };
            if let Some(list) = self.by_name.get_mut(name) {
                let slots = &self.slots;
                list.retain(|slot| slots.get(*slot).is_some_and(Option::is_some));
                out.extend(list.iter().copied());
                if list.is_empty() {
                    self.by_name.remove(name);
                }
            }
        }
        out
    }
}

/// How a tool span relates to the unanswered calls.
enum Match {
    /// It answers this pending call (slot).
    Call(usize),
    /// It states a call id, and the name/argument heuristic points at a call with another
    /// id: it answers none (its result stays unmatched).
    Conflict,
    /// No model-emitted call: the span is the call.
    None,
}

struct Walker<'a, 'b> {
    tree: &'a Tree<'a>,
    doc: &'b Doc<'b>,
    out: Built,
    /// Whether nested agents become subagents here (see `Tree::own_llm`).
    nested_agents_are_subagents: bool,
    first_llm_seen: bool,
    pending: PendingCalls,
    id_prefix: String,
    visited: HashSet<usize>,
    /// Subagent nesting depth of this trajectory (bounded: see `MAX_SUBAGENT_DEPTH`).
    depth: usize,
}

/// Deeper nested agents are walked as part of their parent (the span tree's depth is
/// input-controlled; each subagent level is a nested walk).
const MAX_SUBAGENT_DEPTH: usize = 32;

/// The result of walking one span list: the steps and subagents of one trajectory.
pub(crate) fn build(spans: &[Span], doc: &Doc, id: &str) -> Built {
    let (tree, roots) = Tree::new(spans);
    walk_trajectory(&tree, &roots, doc, id, 0)
}

fn walk_trajectory(tree: &Tree, roots: &[usize], doc: &Doc, id: &str, depth: usize) -> Built {
    let mut w = Walker {
        tree,
        doc,
        out: Built::default(),
        nested_agents_are_subagents: tree.own_llm(roots),
        first_llm_seen: false,
        pending: PendingCalls::default(),
        id_prefix: id.to_string(),
        visited: HashSet::new(),
        depth,
    };
    // An explicit stack instead of recursion: the depth of a span tree is input-controlled.
    let mut stack: Vec<(usize, bool)> = roots.iter().rev().map(|r| (*r, true)).collect();
    while let Some((i, is_root)) = stack.pop() {
        if !w.visited.insert(i) {
            continue;
        }
        let walk_children = w.visit(i, is_root);
        if walk_children {
            stack.extend(tree.kids(i).iter().rev().map(|k| (*k, false)));
        }
    }
    let mut gaps = std::mem::take(&mut w.out.gaps);
    link_tool_results(&w.out.steps, &mut gaps);
    for (i, s) in w.out.steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }
    if w.out.steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    w.out.gaps = gaps;
    w.out
}

impl Walker<'_, '_> {
    /// Handles span `i`; returns whether its children are walked in this trajectory.
    fn visit(&mut self, i: usize, is_root: bool) -> bool {
        let s = &self.tree.spans[i];
        match s.kind {
            Kind::Llm if !self.tree.llm_desc(i) => {
                self.llm(i);
                true
            }
            Kind::Tool => {
                let call_id = self.tool(i);
                if self.tree.llm_desc(i) && self.depth < MAX_SUBAGENT_DEPTH {
                    self.subagent(i, Some(call_id));
                    false
                } else {
                    true
                }
            }
            Kind::Agent
                if !is_root
                    && self.nested_agents_are_subagents
                    && self.tree.llm_desc(i)
                    && self.depth < MAX_SUBAGENT_DEPTH =>
            {
                self.subagent(i, None);
                false
            }
            _ => {
                let mut raw = s.raw.clone();
                if let Some(key) = s.id_key {
                    raw.entry(key).or_insert_with(|| Value::String(s.id.clone()));
                }
                self.out.other_spans.push(Value::Object(raw));
                true
            }
        }
    }

    fn llm(&mut self, i: usize) {
        let s = &self.tree.spans[i];
        if !self.first_llm_seen {
            self.first_llm_seen = true;
            if let Some(input) = &s.input {
                for m in input_messages(input) {
                    // Some integrations list the tool definitions as tool-role messages.
                    if let [ToolResult { call_id: None, content: Some(def), .. }] = m.results.as_slice() {
                        if def.get("function").is_some() && def.get("type").and_then(Value::as_str) == Some("function")
                        {
                            self.out.tools.push(def.value().clone());
                            continue;
                        }
                    }
                    let step = msg_step(m);
                    self.note_calls(&step);
                    self.out.steps.push(step);
                }
            }
        }
        let m = s.output.as_ref().map(output_message).unwrap_or_default();
        let mut step = msg_step(m);
        step.role = Role::Assistant;
        step.model = s.model.clone();
        if self.out.model.is_none() {
            self.out.model = s.model.clone();
        }
        step.metrics = s.metrics.clone();
        step.timestamp = s.timestamp.clone();
        step.source_id = Some(Value::String(s.id.clone()));
        step.extra.insert("span".into(), Value::Object(s.raw.clone()));
        self.note_calls(&step);
        self.out.steps.push(step);
    }

    /// Records the calls of the step about to be pushed (at index `steps.len()`).
    fn note_calls(&mut self, step: &Step) {
        let at = self.out.steps.len();
        for (ci, c) in step.tool_calls.iter().enumerate() {
            self.pending.push(Pending {
                id: c.id.clone(),
                at: (at, ci),
                name: c.name.clone(),
                arguments: c.arguments.value().clone(),
            });
        }
        for r in &step.tool_results {
            if let Some(id) = &r.call_id {
                self.pending.answer_id(id);
            }
        }
    }

    /// The model-emitted call a tool span answers: its stated call id, else the only
    /// unanswered call of that name (narrowed by equal arguments when several). A span
    /// that states an id is never linked to a call with another id.
    fn match_call(&mut self, i: usize) -> Match {
        let s = &self.tree.spans[i];
        if let Some(id) = &s.call_id {
            if let Some(slot) = self.pending.with_id(id) {
                return Match::Call(slot);
            }
        }
        let named = self.pending.named(&s.name);
        let found = match named.as_slice() {
            [one] => Some(*one),
            _ => s.input.as_ref().and_then(|input| {
                let mut same = named
                    .iter()
                    .copied()
                    .filter(|slot| self.pending.get(*slot).is_some_and(|p| args_match(input, &p.arguments)));
                match (same.next(), same.next()) {
                    (Some(one), None) => Some(one),
                    _ => None,
                }
            }),
        };
        match found {
            Some(slot) if s.call_id.is_some() && self.pending.get(slot).is_some_and(|p| p.id.is_some()) => {
                Match::Conflict
            }
            Some(slot) => Match::Call(slot),
            None => Match::None,
        }
    }

    /// Adds the tool step; returns the call id it answers.
    fn tool(&mut self, i: usize) -> String {
        let found = self.match_call(i);
        let s = &self.tree.spans[i];
        let mut step = Step::new(Role::Tool, None);
        let call_id = match found {
            Match::Call(slot) => {
                let p = self.pending.take(slot);
                match p.as_ref().and_then(|p| p.id.clone()) {
                    Some(id) => id,
                    None => {
                        // The model's call has no id: it takes the span's.
                        let id = s.call_id.clone().unwrap_or_else(|| s.id.clone());
                        if let Some((si, ci)) = p.map(|p| p.at) {
                            if let Some(c) = self.out.steps.get_mut(si).and_then(|st| st.tool_calls.get_mut(ci)) {
                                c.id = Some(id.clone());
                            }
                        }
                        id
                    }
                }
            }
            // The span's stated id answers no call the model made: it keeps its id (a
            // result without a call) rather than taking another call's.
            Match::Conflict => s.call_id.clone().unwrap_or_else(|| s.id.clone()),
            Match::None => {
                // No model output names this call: the span is the call (id: the span's
                // own call id, else its span id).
                let id = s.call_id.clone().unwrap_or_else(|| s.id.clone());
                let args = s.input.clone().unwrap_or(Value::Object(Map::new()));
                let mut c = call(Some(&Value::String(id.clone())), &s.name, Some(&args));
                c.arguments_invalid = false;
                if let Value::String(_) = &args {
                    c.arguments = args.into();
                }
                step.tool_calls.push(c);
                id
            }
        };
        step.tool_results.push(ToolResult {
            call_id: Some(call_id.clone()),
            content: s.output.clone().map(Into::into),
            extra: Extra::new(),
            subagent_refs: Vec::new(),
        });
        step.timestamp = s.timestamp.clone();
        step.source_id = Some(Value::String(s.id.clone()));
        step.extra.insert("span".into(), Value::Object(s.raw.clone()));
        self.out.steps.push(step);
        call_id
    }

    /// A nested agent: its subtree becomes a subagent trajectory linked to the last step
    /// (and to the tool call that ran it, when it ran inside a tool).
    fn subagent(&mut self, i: usize, call_id: Option<String>) {
        let s = &self.tree.spans[i];
        let sub_id = format!("{}/{}", self.id_prefix, s.id);
        let kids: Vec<usize> = self.tree.kids(i).to_vec();
        let roots: Vec<usize> = if s.kind == Kind::Tool { kids } else { vec![i] };
        let built = walk_trajectory(self.tree, &roots, self.doc, &sub_id, self.depth + 1);
        // Named after the agent span itself, or the one agent/chain a tool span wraps.
        let named = match roots.as_slice() {
            [one] => &self.tree.spans[*one],
            _ => s,
        };
        let sub = subagent_trajectory(built, named, self.doc, &sub_id);
        let spawned_by_step = self.out.steps.len().checked_sub(1);
        if call_id.is_some() {
            if let Some(r) = self.out.steps.last_mut().and_then(|st| st.tool_results.last_mut()) {
                r.subagent_refs.push(sub_id.clone());
            }
        }
        self.out.subagents.push(Subagent { spawned_by_step, spawned_by_tool_call: call_id, trajectory: Box::new(sub) });
        // The spans inside were visited by the nested walk.
        let mut stack = vec![i];
        while let Some(j) = stack.pop() {
            self.visited.insert(j);
            stack.extend(self.tree.kids(j).iter().copied());
        }
    }
}

/// A tool span's name matches a call name: equal, or ending in it after a separator
/// (`execute_tool say_hello`, `running tool: get_pun_suggestion`, `tool.HelloTool`).
/// The rule `PendingCalls::named` indexes; kept as the reference its test checks.
#[cfg(test)]
fn name_matches(span: &str, call: &str) -> bool {
    if span == call {
        return true;
    }
    match span.strip_suffix(call) {
        Some(head) => head.ends_with(is_name_separator),
        None => false,
    }
}

fn is_name_separator(c: char) -> bool {
    !(c.is_alphanumeric() || c == '_' || c == '-')
}

/// A tool span's input equals a call's arguments, directly or under a wrapper key.
fn args_match(input: &Value, args: &Value) -> bool {
    if input == args {
        return true;
    }
    ["input", "args", "arguments", "kwargs", "tool_input"]
        .iter()
        .filter_map(|k| input.get(*k))
        .any(|v| v == args || decoded(v) == *args)
}

/// The instruction: the text of the user steps before the first assistant step.
fn instruction(steps: &[Step]) -> Option<String> {
    let texts: Vec<String> = steps
        .iter()
        .take_while(|s| s.role != Role::Assistant)
        .filter(|s| s.role == Role::User)
        .filter_map(|s| s.content.as_deref().and_then(text_of))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// Text of a content value: a string, or the `text` (or OTel GenAI `content`) of its
/// text parts joined by newlines.
fn text_of(v: &Value) -> Option<String> {
    if let Value::Array(parts) = v {
        let texts: Vec<&str> =
            parts.iter().filter_map(|p| p.get("text").or_else(|| p.get("content")).and_then(Value::as_str)).collect();
        return (!texts.is_empty()).then(|| texts.join("\n"));
    }
    content_text(v)
}

/// Task: an explicit id when the reader found one, else the instruction hash, else the
/// record hash.
pub(crate) fn task(steps: &[Step], explicit: Option<String>, environment: Option<String>, sha: &str) -> Task {
    let instruction = instruction(steps);
    Task::keyed(explicit.clone(), explicit, instruction, environment, sha)
}

/// Provenance of the document's record, with the trace format's version.
fn provenance(doc: &Doc) -> Provenance {
    Provenance { format_version: doc.format_version.clone(), ..doc.raw.provenance(doc.family, doc.file) }
}

fn subagent_trajectory(built: Built, span: &Span, doc: &Doc, id: &str) -> Trajectory {
    let mut extra = Extra::new();
    if !built.other_spans.is_empty() {
        extra.insert("spans".into(), Value::Array(built.other_spans));
    }
    let task = task(&built.steps, None, None, doc.raw.sha256);
    Trajectory {
        agent: Agent { model: built.model, name: Some(span.name.clone()), version: None },
        extra,
        gaps: built.gaps,
        steps: built.steps,
        subagents: built.subagents,
        tools: (!built.tools.is_empty()).then(|| LazyValue::from_values(built.tools)),
        ..Trajectory::new(id, provenance(doc), task)
    }
}

/// Record-level fields a reader found outside the span tree.
pub(crate) struct Top {
    pub trace_id: Option<String>,
    pub session_id: Option<String>,
    pub agent_name: Option<String>,
    pub task_id: Option<String>,
    pub outcome: Outcome,
    pub metrics: Option<Metrics>,
    pub extra: Extra,
}

/// The top-level record: identity `<family>-<trace id>` (or `<family>-` + 16 hex digits
/// of the record's SHA-256 when there is no trace id).
pub(crate) fn trajectory(spans: &[Span], doc: &Doc, top: Top) -> Trajectory {
    let id = match &top.trace_id {
        Some(t) if !t.is_empty() => format!("{}-{}", doc.family, t),
        _ => doc.raw.id(doc.family),
    };
    let built = build(spans, doc, &id);
    let mut extra = top.extra;
    if !built.other_spans.is_empty() {
        extra.insert("spans".into(), Value::Array(built.other_spans));
    }
    let task = task(&built.steps, top.task_id, None, doc.raw.sha256);
    let tools = (!built.tools.is_empty()).then(|| LazyValue::from_values(built.tools));
    Trajectory {
        agent: Agent { model: built.model, name: top.agent_name, version: None },
        extra,
        gaps: built.gaps,
        metrics: top.metrics,
        outcome: top.outcome,
        session_id: top.session_id,
        steps: built.steps,
        subagents: built.subagents,
        tools,
        ..Trajectory::new(id, provenance(doc), task)
    }
}

/// Names whose boolean verdict is a run's success (see the docs' outcome rule).
const SUCCESS_NAMES: &[&str] = &["success", "correct", "correctness", "resolved", "passed", "pass"];

/// One evaluation attached to a trace: a name, a value, and whether an evaluator made it.
pub(crate) struct Verdict {
    pub name: String,
    pub value: Value,
    pub evaluator: bool,
}

/// The outcome rule shared by the three families: numeric and boolean trace-level
/// verdicts become `reward_components` (true = 1, false = 0); `reward` is set only when
/// there is exactly one; `status` only from a boolean verdict named like success
/// (`SUCCESS_NAMES`, case-insensitive); verification `source_evaluator` when an
/// evaluator produced a verdict, else `source_reported`; no verdict: unknown, unverified.
pub(crate) fn outcome(verdicts: &[Verdict]) -> Outcome {
    let mut components = BTreeMap::new();
    let mut status = Status::Unknown;
    for v in verdicts {
        let n = match &v.value {
            Value::Bool(b) => {
                if SUCCESS_NAMES.contains(&v.name.to_ascii_lowercase().as_str()) {
                    status = if *b { Status::Success } else { Status::Failure };
                }
                Some(if *b { 1.0 } else { 0.0 })
            }
            Value::Number(n) => n.as_f64(),
            _ => None,
        };
        if let Some(n) = n {
            components.entry(v.name.clone()).or_insert(n);
        }
    }
    if verdicts.is_empty() || (components.is_empty() && status == Status::Unknown) {
        return Outcome::default();
    }
    let reward = if components.len() == 1 { components.values().next().copied() } else { None };
    let verification =
        if verdicts.iter().any(|v| v.evaluator) { Verification::SourceEvaluator } else { Verification::SourceReported };
    Outcome { reward, reward_components: components, source: None, status, verification }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_shapes() {
        let m = output_message(&json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]}}]}));
        assert_eq!(m.calls[0].id.as_deref(), Some("c1"));
        assert_eq!(m.calls[0].arguments, json!({"a": 1}));
        let m = output_message(
            &json!({"content": [{"type": "tool_use", "id": "t", "name": "g", "input": {"x": 2}}], "role": "assistant"}),
        );
        assert_eq!((m.calls[0].name.as_str(), m.calls[0].arguments.value().clone()), ("g", json!({"x": 2})));
        let m = output_message(
            &json!({"content": {"parts": [{"function_call": {"args": {}, "name": "h"}}], "role": "model"}}),
        );
        assert_eq!(m.calls[0].name, "h");
        let m = output_message(&json!([{"toolCallId": "v", "toolName": "w", "input": "{\"q\":1}"}]));
        assert_eq!((m.calls[0].id.as_deref(), m.calls[0].arguments.value().clone()), (Some("v"), json!({"q": 1})));
    }

    #[test]
    fn names_match_after_a_separator_only() {
        assert!(name_matches("execute_tool say_hello", "say_hello"));
        assert!(name_matches("running tool: get_pun", "get_pun"));
        assert!(!name_matches("unsay_hello", "say_hello"));
    }

    #[test]
    fn the_name_index_finds_exactly_the_calls_name_matches_accepts() {
        let calls = ["say_hello", "hello", "get_pun", "", "tool", "HelloTool", "é", "x y"];
        let spans = [
            "say_hello",
            "execute_tool say_hello",
            "unsay_hello",
            "running tool: get_pun",
            "tool.HelloTool",
            "a é",
            "a ",
            "x y",
        ];
        let mut p = PendingCalls::default();
        for (i, name) in calls.iter().enumerate() {
            p.push(Pending { id: Some(i.to_string()), at: (0, i), name: name.to_string(), arguments: Value::Null });
        }
        for span in spans {
            let mut got = p.named(span);
            got.sort_unstable();
            let want: Vec<usize> = (0..calls.len()).filter(|i| name_matches(span, calls[*i])).collect();
            assert_eq!(got, want, "{span}");
        }
        p.answer_id("0");
        assert_eq!(p.named("say_hello"), Vec::<usize>::new());
        assert_eq!(p.with_id("1"), Some(1));
        assert!(p.take(1).is_some());
        assert_eq!(p.with_id("1"), None);
    }
}
