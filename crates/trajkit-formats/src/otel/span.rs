//! One OTLP span as a [`traces::Span`]: its kind from `openinference.span.kind`,
//! `gen_ai.operation.name` or OpenLLMetry's `traceloop.span.kind`, its messages from
//! whichever capture the instrumentation used (GenAI attributes or events, OpenLLMetry
//! `gen_ai.prompt.N`, OpenInference `llm.input_messages.N`), usage, model and tool call
//! id. See docs/formats/otel.md, "Span mapping".

use serde_json::{json, Map, Value};
use trajkit_model::time::iso_from_unix_nanos;
use trajkit_model::{Extra, Metrics};

use super::attrs::{attributes, id, indexed, nanos};
use crate::traces::{decoded, order_key_int, Kind, Span};

/// A span's attributes as plain values, with its events' names and attributes.
pub(crate) struct Attrs {
    pub map: Map<String, Value>,
    pub events: Vec<(String, Map<String, Value>)>,
}

impl Attrs {
    /// The attributes and events of an OTLP span object.
    pub(crate) fn of(span: &Map<String, Value>) -> Self {
        let map = attributes(span.get("attributes").unwrap_or(&Value::Null));
        let events = span
            .get("events")
            .and_then(Value::as_array)
            .map(|evs| {
                evs.iter()
                    .filter_map(|e| {
                        let name = e.get("name")?.as_str()?.to_string();
                        Some((name, attributes(e.get("attributes").unwrap_or(&Value::Null))))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Attrs { map, events }
    }

    fn str(&self, key: &str) -> Option<&str> {
        self.map.get(key).and_then(Value::as_str)
    }

    fn first_str(&self, keys: &[&str]) -> Option<String> {
        keys.iter().find_map(|k| self.str(k)).filter(|s| !s.is_empty()).map(str::to_string)
    }

    fn u64(&self, keys: &[&str]) -> Option<u64> {
        keys.iter().find_map(|k| match self.map.get(*k)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        })
    }

    /// True when the span carries a GenAI, OpenInference or OpenLLMetry attribute or a
    /// GenAI event: it belongs to an agent trace.
    pub(crate) fn is_genai(&self) -> bool {
        self.map.keys().any(|k| is_genai_key(k)) || self.events.iter().any(|(n, _)| n.starts_with("gen_ai."))
    }

    /// What the span is (see the module doc).
    pub(crate) fn kind(&self) -> Kind {
        if let Some(k) = self.str("openinference.span.kind") {
            return match k.to_ascii_uppercase().as_str() {
                "LLM" => Kind::Llm,
                "TOOL" => Kind::Tool,
                "AGENT" => Kind::Agent,
                "CHAIN" => Kind::Chain,
                _ => Kind::Other,
            };
        }
        match self.str("gen_ai.operation.name") {
            Some("chat" | "text_completion" | "generate_content" | "completion") => return Kind::Llm,
            Some("execute_tool") => return Kind::Tool,
            Some("invoke_agent") => return Kind::Agent,
            Some(_) => return Kind::Other,
            None => {}
        }
        match self.str("traceloop.span.kind") {
            Some("tool") => return Kind::Tool,
            Some("agent") => return Kind::Agent,
            Some("workflow" | "task") => return Kind::Chain,
            _ => {}
        }
        let captured = self.map.keys().any(|k| k.starts_with("gen_ai.prompt.") || k.starts_with("gen_ai.completion."))
            || self.events.iter().any(|(n, _)| n.starts_with("gen_ai."));
        if captured || matches!(self.str("llm.request.type"), Some("chat" | "completion")) {
            return Kind::Llm;
        }
        Kind::Other
    }
}

/// Attribute names of the conventions this reader maps.
fn is_genai_key(k: &str) -> bool {
    k.starts_with("gen_ai.") || k.starts_with("openinference.") || k.starts_with("llm.") || k.starts_with("traceloop.")
}

/// True when an OTLP status is an error (`code` 2 or `STATUS_CODE_ERROR`).
pub(crate) fn is_error(status: Option<&Value>) -> bool {
    match status.and_then(|s| s.get("code")) {
        Some(Value::Number(n)) => n.as_u64() == Some(2),
        Some(Value::String(s)) => matches!(s.as_str(), "STATUS_CODE_ERROR" | "ERROR" | "2"),
        _ => false,
    }
}

/// The span as the shared walk takes it. `raw` is the span object less its `spanId`.
pub(crate) fn span(mut raw: Map<String, Value>, a: &Attrs) -> Span {
    let sid = id(raw.get("spanId")).unwrap_or_default();
    raw.remove("spanId");
    let parent = id(raw.get("parentSpanId"));
    let kind = a.kind();
    let span_name = raw.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let name = match kind {
        Kind::Tool => a.first_str(&["gen_ai.tool.name", "tool.name", "traceloop.entity.name"]),
        Kind::Agent => a.first_str(&["gen_ai.agent.name", "agent.name"]),
        _ => None,
    }
    .unwrap_or(span_name);
    let start = nanos(raw.get("startTimeUnixNano"));
    let order = start.map(order_key_int).unwrap_or_default();
    let duration = match (start, nanos(raw.get("endTimeUnixNano"))) {
        (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1e9),
        _ => None,
    };
    let (input, output) = match kind {
        Kind::Tool => tool_io(a),
        _ => (llm_input(a), llm_output(a)),
    };
    let llm = kind == Kind::Llm;
    Span {
        id: sid,
        parent,
        kind,
        name,
        order,
        timestamp: start.and_then(iso_from_unix_nanos),
        input,
        output,
        model: llm.then(|| a.first_str(&["gen_ai.response.model", "gen_ai.request.model", "llm.model_name"])).flatten(),
        metrics: llm.then(|| metrics(a, duration)).flatten(),
        call_id: a.first_str(&["gen_ai.tool.call.id", "tool_call.id"]),
        raw,
        id_key: Some("spanId"),
    }
}

/// A tool span's arguments and result.
/// OpenLLMetry's `traceloop.entity.*` values are JSON of any kind (a result string is
/// written JSON-quoted), so they are decoded whatever they hold.
fn tool_io(a: &Attrs) -> (Option<Value>, Option<Value>) {
    let get = |keys: [&str; 3]| {
        let [gen_ai, oi, traceloop] = keys;
        a.map.get(gen_ai).or_else(|| a.map.get(oi)).filter(|v| !v.is_null()).map(decoded).or_else(|| {
            match a.map.get(traceloop)? {
                Value::String(s) => Some(serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))),
                other => Some(other.clone()),
            }
        })
    };
    (
        get(["gen_ai.tool.call.arguments", "input.value", "traceloop.entity.input"]),
        get(["gen_ai.tool.call.result", "output.value", "traceloop.entity.output"]),
    )
}

/// The messages a model call was given, in the first capture the span holds.
fn llm_input(a: &Attrs) -> Option<Value> {
    let mut msgs = Vec::new();
    if let Some(sys) = a.map.get("gen_ai.system_instructions").map(decoded) {
        msgs.push(match sys {
            Value::Array(parts) => json!({"role": "system", "parts": parts}),
            other => json!({"role": "system", "content": other}),
        });
    }
    let listed = if let Some(Value::Array(m)) = a.map.get("gen_ai.input.messages").map(decoded) {
        m
    } else {
        let oi = indexed(&a.map, "llm.input_messages");
        if !oi.is_empty() {
            oi.iter().map(openinference_message).collect()
        } else {
            let ol = indexed(&a.map, "gen_ai.prompt");
            if !ol.is_empty() {
                ol
            } else {
                event_messages(a, false)
            }
        }
    };
    msgs.extend(listed);
    if msgs.is_empty() {
        return ["input.value", "gen_ai.prompt", "traceloop.entity.input"]
            .iter()
            .find_map(|k| a.map.get(*k))
            .filter(|v| !v.is_null())
            .map(decoded);
    }
    Some(Value::Array(msgs))
}

/// What a model call produced, in the first capture the span holds.
fn llm_output(a: &Attrs) -> Option<Value> {
    if let Some(v @ Value::Array(_)) = a.map.get("gen_ai.output.messages").map(decoded) {
        return Some(v);
    }
    let oi = indexed(&a.map, "llm.output_messages");
    if !oi.is_empty() {
        return Some(Value::Array(oi.iter().map(openinference_message).collect()));
    }
    let ol = indexed(&a.map, "gen_ai.completion");
    if !ol.is_empty() {
        return Some(Value::Array(ol.into_iter().map(assistant).collect()));
    }
    let ev = event_messages(a, true);
    if !ev.is_empty() {
        return Some(Value::Array(ev));
    }
    ["output.value", "gen_ai.completion", "traceloop.entity.output"]
        .iter()
        .find_map(|k| a.map.get(*k))
        .filter(|v| !v.is_null())
        .map(decoded)
}

/// An OpenLLMetry completion without a role is the model's.
fn assistant(mut v: Value) -> Value {
    if let Value::Object(o) = &mut v {
        o.entry("role").or_insert_with(|| Value::String("assistant".into()));
    }
    v
}

/// An OpenInference `message` (role, content or `contents`, `tool_calls`,
/// `tool_call_id`) as an OpenAI-style message.
fn openinference_message(item: &Value) -> Value {
    let m = item.get("message").unwrap_or(item);
    let mut out = Map::new();
    if let Some(r) = m.get("role") {
        out.insert("role".into(), r.clone());
    }
    if let Some(c) = m.get("content").filter(|c| !c.is_null()) {
        out.insert("content".into(), c.clone());
    } else if let Some(Value::Array(parts)) = m.get("contents") {
        let parts: Vec<Value> =
            parts.iter().map(|p| p.get("message_content").cloned().unwrap_or_else(|| p.clone())).collect();
        out.insert("content".into(), Value::Array(parts));
    }
    if let Some(Value::Array(calls)) = m.get("tool_calls") {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                let tc = c.get("tool_call").unwrap_or(c);
                let f = tc.get("function");
                let mut function = Map::new();
                let name = f.and_then(|f| f.get("name")).cloned().unwrap_or(Value::String(String::new()));
                function.insert("name".into(), name);
                if let Some(args) = f.and_then(|f| f.get("arguments")) {
                    function.insert("arguments".into(), args.clone());
                }
                json!({"id": tc.get("id").cloned().unwrap_or(Value::Null), "type": "function", "function": function})
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = m.get("tool_call_id") {
        out.insert("tool_call_id".into(), id.clone());
    }
    Value::Object(out)
}

/// Messages of the event-based capture: `gen_ai.{system,user,assistant,tool}.message`
/// (inputs) or `gen_ai.choice` (`output`), from `gen_ai.event.content` when the event
/// holds the whole message as JSON, else from its `content`, `tool_calls`, `id`,
/// `message` attributes.
fn event_messages(a: &Attrs, output: bool) -> Vec<Value> {
    let mut out = Vec::new();
    for (name, ea) in &a.events {
        let role = match name.as_str() {
            "gen_ai.choice" if output => "assistant",
            "gen_ai.system.message" if !output => "system",
            "gen_ai.user.message" if !output => "user",
            "gen_ai.assistant.message" if !output => "assistant",
            "gen_ai.tool.message" if !output => "tool",
            _ => continue,
        };
        if let Some(Value::Object(m)) = ea.get("gen_ai.event.content").map(decoded) {
            let mut m = m;
            m.entry("role").or_insert_with(|| Value::String(role.into()));
            out.push(Value::Object(m));
            continue;
        }
        if let Some(Value::Object(m)) = ea.get("message").map(decoded) {
            let mut m = m;
            m.entry("role").or_insert_with(|| Value::String(role.into()));
            out.push(Value::Object(m));
            continue;
        }
        let mut m = Map::new();
        m.insert("role".into(), ea.get("role").cloned().unwrap_or_else(|| Value::String(role.into())));
        if let Some(c) = ea.get("content") {
            m.insert("content".into(), c.clone());
        }
        if let Some(calls) = ea.get("tool_calls").map(decoded) {
            m.insert("tool_calls".into(), calls);
        }
        if let Some(id) = ea.get("id").filter(|_| role == "tool") {
            m.insert("tool_call_id".into(), id.clone());
        }
        out.push(Value::Object(m));
    }
    out
}

/// The tool definitions a model call was offered: `gen_ai.tool.definitions` (a JSON
/// list) or OpenInference `llm.tools.N.tool.json_schema`; empty when it names none.
pub(crate) fn tool_definitions(a: &Attrs) -> Vec<Value> {
    if let Some(Value::Array(defs)) = a.map.get("gen_ai.tool.definitions").map(decoded) {
        return defs;
    }
    indexed(&a.map, "llm.tools")
        .iter()
        .filter_map(|t| t.get("tool").and_then(|t| t.get("json_schema")).map(decoded))
        .collect()
}

/// Token usage of a model call in GenAI, OpenLLMetry or OpenInference names, and its
/// duration (end minus start time).
fn metrics(a: &Attrs, duration: Option<f64>) -> Option<Metrics> {
    let prompt = a.u64(&[
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.prompt_tokens",
        "llm.token_count.prompt",
        "llm.usage.prompt_tokens",
    ]);
    let completion = a.u64(&[
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.completion_tokens",
        "llm.token_count.completion",
        "llm.usage.completion_tokens",
    ]);
    let cached = a.u64(&["gen_ai.usage.cache_read.input_tokens", "llm.token_count.prompt_details.cache_read"]);
    if prompt.is_none() && completion.is_none() && duration.is_none() {
        return None;
    }
    Some(Metrics {
        cached_tokens: cached,
        completion_tokens: completion,
        cost_usd: None,
        duration_seconds: duration,
        extra: Extra::new(),
        prompt_tokens: prompt,
    })
}
