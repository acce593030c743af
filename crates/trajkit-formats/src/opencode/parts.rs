//! One OpenCode message (`{info, parts}`) as steps: a user message is one user step; an
//! assistant message is one assistant step per model call (`step-start` … `step-finish`),
//! each followed by a tool step with the results its `tool` parts recorded.

use serde_json::{Map, Value};
use trajkit_model::{Extra, Gap, GapKind, Metrics, Role, Step, ToolCall, ToolResult};

use crate::json::{idx, take, take_f64, take_object, take_str, take_u64};
use crate::rejection::{schema, Problem, Reason};

/// The trajectory's model so far: the first assistant message's `modelID` and `providerID`.
pub(super) type Model = Option<(String, Option<String>)>;

/// Appends the steps of message `m` (at JSON path `path`); an assistant `error` is a gap.
pub(super) fn message(
    m: Value,
    path: &str,
    steps: &mut Vec<Step>,
    gaps: &mut Vec<Gap>,
    model: &mut Model,
) -> Result<(), Problem> {
    let Value::Object(mut m) = m else {
        return Err(schema(path, "a message must be an object {info, parts}"));
    };
    let mut info = match m.remove("info") {
        Some(Value::Object(i)) => i,
        _ => return Err(schema(format!("{path}.info"), "missing or not an object")),
    };
    let parts = match m.remove("parts") {
        Some(Value::Array(p)) => checked_parts(p, path)?,
        _ => return Err(schema(format!("{path}.parts"), "missing or not an array")),
    };
    let role = match take_str(&mut info, "role") {
        Some(r) => r,
        None => return Err(schema(format!("{path}.info.role"), "missing role")),
    };
    let first = steps.len();
    match role.as_str() {
        "user" => steps.push(user_step(parts)),
        "assistant" => assistant_steps(parts, &mut info, steps, model),
        other => {
            return Err(Problem::new(
                Reason::InvalidValue,
                format!("{path}.info.role"),
                format!("role {other:?} (user or assistant expected)"),
            ))
        }
    }
    if let Some(Value::Object(e)) = info.get("error") {
        let name = e.get("name").and_then(Value::as_str).unwrap_or("error");
        let msg = e.get("data").and_then(|d| d.get("message")).and_then(Value::as_str).unwrap_or_default();
        let at = steps[first..].iter().rposition(|s| s.role == Role::Assistant).map(|i| first + i);
        gaps.push(Gap::at(GapKind::IncompleteGeneration, at, format!("{name}: {msg}")));
    }
    if let Some(s) = steps.get_mut(first) {
        s.source_id = take(&mut info, "id");
        s.timestamp = info.get("time").and_then(|t| t.get("created")).and_then(Value::as_u64).and_then(iso_ms);
        s.extra.extend(info);
        s.extra.extend(m);
    }
    Ok(())
}

/// The parts as objects with a string `type`, their repeated `sessionID` / `messageID` dropped.
fn checked_parts(parts: Vec<Value>, path: &str) -> Result<Vec<Map<String, Value>>, Problem> {
    let mut out = Vec::with_capacity(parts.len());
    for (k, p) in parts.into_iter().enumerate() {
        let at = idx(&format!("{path}.parts"), k);
        let Value::Object(mut p) = p else {
            return Err(schema(at, "a part must be an object"));
        };
        if !p.get("type").is_some_and(Value::is_string) {
            return Err(schema(format!("{at}.type"), "missing or not a string"));
        }
        if p.get("type").and_then(Value::as_str) == Some("tool") && !p.get("state").is_some_and(Value::is_object) {
            return Err(schema(format!("{at}.state"), "a tool part needs a state object"));
        }
        p.remove("sessionID");
        p.remove("messageID");
        out.push(p);
    }
    Ok(out)
}

/// ISO 8601 of a millisecond Unix time.
fn iso_ms(ms: u64) -> Option<String> {
    trajkit_model::time::iso_from_unix_nanos(u128::from(ms) * 1_000_000)
}

/// What the parts of one step add up to.
#[derive(Default)]
struct Building {
    texts: Vec<String>,
    reasoning: Vec<String>,
    extra: Extra,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
    metrics: Option<Metrics>,
}

impl Building {
    /// Files one part: text, reasoning, tool, step-start / step-finish; any other part (file,
    /// patch, snapshot, agent, subtask, compaction, ...) is kept in `extra.parts`.
    fn part(&mut self, mut p: Map<String, Value>) {
        let kind = take_str(&mut p, "type").unwrap_or_default();
        match kind.as_str() {
            "text" if p.get("synthetic") == Some(&Value::Bool(true)) => {
                p.insert("type".into(), Value::String(kind));
                push(&mut self.extra, "synthetic_parts", Value::Object(p));
            }
            "text" if p.get("text").is_some_and(Value::is_string) => {
                self.texts.extend(take_str(&mut p, "text"));
                keep_rest(&mut self.extra, "text_parts", p);
            }
            "reasoning" if p.get("text").is_some_and(Value::is_string) => {
                self.reasoning.extend(take_str(&mut p, "text"));
                keep_rest(&mut self.extra, "reasoning_parts", p);
            }
            "tool" => self.tool(p),
            "step-finish" => {
                self.metrics = metrics(&mut p);
                keep_rest(&mut self.extra, "step_finish", p);
            }
            "step-start" => keep_rest(&mut self.extra, "step_start", p),
            _ => {
                p.insert("type".into(), Value::String(kind));
                push(&mut self.extra, "parts", Value::Object(p));
            }
        }
    }

    /// A tool part: the call (`callID`, `tool`, `state.input`) and, once `completed` or
    /// `error`, its result (`output` or `error`; status, title, metadata, time in extra).
    fn tool(&mut self, mut p: Map<String, Value>) {
        let id = take_str(&mut p, "callID");
        let name = take_str(&mut p, "tool").unwrap_or_default();
        let mut state = match p.remove("state") {
            Some(Value::Object(s)) => s,
            _ => Map::new(),
        };
        let arguments = state.remove("input").unwrap_or_else(|| Value::Object(Map::new()));
        let status = state.get("status").and_then(Value::as_str).unwrap_or_default().to_string();
        let mut call = ToolCall {
            arguments: arguments.into(),
            arguments_invalid: false,
            extra: p.into(),
            id: id.clone(),
            name,
            text_embedded: false,
        };
        let content = match status.as_str() {
            "completed" => take(&mut state, "output"),
            "error" => take(&mut state, "error"),
            _ => {
                call.extra.insert("state".into(), Value::Object(state));
                self.calls.push(call);
                return;
            }
        };
        self.calls.push(call);
        self.results.push(ToolResult {
            call_id: id,
            content: content.map(Into::into),
            extra: state.into(),
            subagent_refs: Vec::new(),
        });
    }

    /// The assistant step and, when results were recorded, the tool step after it.
    fn finish(self, steps: &mut Vec<Step>) {
        let mut step = Step::new(Role::Assistant, content_of(self.texts));
        step.reasoning = (!self.reasoning.is_empty()).then(|| self.reasoning.join("\n"));
        step.tool_calls = self.calls;
        step.metrics = self.metrics;
        step.extra = self.extra;
        steps.push(step);
        if !self.results.is_empty() {
            let mut tool = Step::new(Role::Tool, None);
            tool.tool_results = self.results;
            steps.push(tool);
        }
    }
}

/// A user message: its typed text is the content; synthetic text (the harness's expansion
/// of attached files) and other parts stay in extra.
fn user_step(parts: Vec<Map<String, Value>>) -> Step {
    let mut b = Building::default();
    for p in parts {
        b.part(p);
    }
    let mut step = Step::new(Role::User, content_of(b.texts));
    step.extra = b.extra;
    step
}

/// An assistant message: one step per `step-start` segment (a message without any is one
/// step, its metrics from the message's `tokens` / `cost`).
fn assistant_steps(
    parts: Vec<Map<String, Value>>,
    info: &mut Map<String, Value>,
    steps: &mut Vec<Step>,
    model: &mut Model,
) {
    let name = take_str(info, "modelID");
    let provider = info.get("providerID").and_then(Value::as_str).map(str::to_string);
    let segmented = parts.iter().any(|p| p.get("type").and_then(Value::as_str) == Some("step-finish"));
    let first = steps.len();
    let mut b = Building::default();
    let mut started = false;
    for p in parts {
        if p.get("type").and_then(Value::as_str) == Some("step-start") && started {
            std::mem::take(&mut b).finish(steps);
        }
        started = true;
        b.part(p);
    }
    if !segmented {
        b.metrics = metrics(info);
    }
    b.finish(steps);
    match (model.as_ref(), name) {
        (None, Some(n)) => *model = Some((n, provider)),
        (Some((m, _)), Some(n)) if *m != n => {
            for s in steps[first..].iter_mut().filter(|s| s.role == Role::Assistant) {
                s.model = Some(n.clone());
            }
        }
        _ => {}
    }
}

/// Step metrics from `tokens` (`input` excludes the cache traffic, `output` excludes
/// `reasoning`: OpenCode's `total` is their sum) and `cost`: prompt = input + cache read +
/// cache write, completion = output + reasoning, cached = cache read; reasoning and cache
/// write also in `metrics.extra`. Takes what it maps out of `m`.
fn metrics(m: &mut Map<String, Value>) -> Option<Metrics> {
    let cost = take_f64(m, "cost");
    let mut tokens = take_object(m, "tokens").unwrap_or_default();
    let input = take_u64(&mut tokens, "input");
    let output = take_u64(&mut tokens, "output");
    let reasoning = take_u64(&mut tokens, "reasoning");
    let (read, write) = match tokens.remove("cache") {
        Some(Value::Object(mut c)) => {
            let rw = (take_u64(&mut c, "read"), take_u64(&mut c, "write"));
            if !c.is_empty() {
                tokens.insert("cache".into(), Value::Object(c));
            }
            rw
        }
        Some(other) => {
            tokens.insert("cache".into(), other);
            (None, None)
        }
        None => (None, None),
    };
    let mut extra = tokens;
    if let Some(r) = reasoning {
        extra.insert("reasoning_tokens".into(), Value::from(r));
    }
    if let Some(w) = write {
        extra.insert("cache_write_tokens".into(), Value::from(w));
    }
    let cache = read.unwrap_or(0).checked_add(write.unwrap_or(0));
    let exclusive = input.zip(cache).and_then(|(i, c)| i.checked_add(c));
    let sum = exclusive.zip(output).and_then(|(e, o)| e.checked_add(o)?.checked_add(reasoning.unwrap_or(0)));
    let total = extra.get("total").and_then(Value::as_u64);
    let prompt = if total.is_some() && total == sum { exclusive } else { input };
    let completion = output.and_then(|o| o.checked_add(reasoning.unwrap_or(0)));
    let out = Metrics {
        cached_tokens: read,
        completion_tokens: completion,
        cost_usd: cost,
        duration_seconds: None,
        extra: extra.into(),
        prompt_tokens: prompt,
    };
    (!out.is_empty()).then_some(out)
}

/// The child session a `task` tool's result names (`metadata.sessionId`).
pub(super) fn task_session(r: &ToolResult) -> Option<&str> {
    r.extra.get("metadata")?.get("sessionId")?.as_str()
}

/// One string for one text, text blocks for several, nothing for none.
fn content_of(mut texts: Vec<String>) -> Option<Value> {
    match texts.len() {
        0 => None,
        1 => texts.pop().map(Value::String),
        _ => Some(Value::Array(texts.into_iter().map(|t| serde_json::json!({"type": "text", "text": t})).collect())),
    }
}

/// Keeps what is left of a part (its id, times, metadata) under `key`, when anything is.
fn keep_rest(extra: &mut Extra, key: &str, p: Map<String, Value>) {
    if !p.is_empty() {
        push(extra, key, Value::Object(p));
    }
}

fn push(extra: &mut Extra, key: &str, v: Value) {
    if let Value::Array(a) = extra.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
        a.push(v);
    }
}
