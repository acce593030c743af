//! ShareGPT rows (the LLaMA-Factory layout): `conversations` of `{from, value}` turns
//! (`system`, `human`, `gpt`, `function_call`, `observation`), `system` (a leading system
//! prompt), `tools` as JSON text, and `metadata`. Each turn carries its `weight`.

use serde_json::{json, Map, Value};

use crate::rows::{Body, ExportRow};
use crate::views::{Message, MsgRole};

fn turn(from: &str, value: String, weight: u8) -> Value {
    json!({"from": from, "value": value, "weight": weight})
}

/// `function_call` value: `{"name","arguments"}` (a list for parallel calls), arguments
/// parsed back to JSON when they are JSON.
fn calls_value(m: &Message) -> String {
    let calls: Vec<Value> =
        m.tool_calls.iter().map(|c| json!({"name": c.name, "arguments": c.arguments_value()})).collect();
    match calls.as_slice() {
        [one] => one.to_string(),
        _ => Value::Array(calls).to_string(),
    }
}

fn push_turns(m: &Message, out: &mut Vec<Value>) {
    match m.role {
        MsgRole::System => out.push(turn("system", m.content.clone(), m.weight)),
        MsgRole::User => out.push(turn("human", m.content.clone(), m.weight)),
        MsgRole::Tool => out.push(turn("observation", m.content.clone(), m.weight)),
        MsgRole::Assistant => {
            if !m.content.is_empty() || m.tool_calls.is_empty() {
                let mut t = turn("gpt", m.content.clone(), m.weight);
                if let (Some(r), Some(o)) = (&m.reasoning, t.as_object_mut()) {
                    o.insert("reasoning".into(), Value::String(r.clone()));
                }
                out.push(t);
            }
            if !m.tool_calls.is_empty() {
                out.push(turn("function_call", calls_value(m), m.weight));
            }
        }
    }
}

/// The JSON object of one row.
pub fn row_json(r: &ExportRow) -> Value {
    let messages: Vec<&Message> = match &r.body {
        Body::Full { messages } => messages.iter().collect(),
        Body::Turn { prompt, completion } => prompt.iter().chain(std::iter::once(completion)).collect(),
    };
    let (system, rest) = match messages.split_first() {
        Some((first, rest)) if first.role == MsgRole::System => (first.content.clone(), rest),
        _ => (String::new(), messages.as_slice()),
    };
    let mut conversations = Vec::new();
    for m in rest {
        push_turns(m, &mut conversations);
    }
    let mut o = Map::new();
    o.insert("id".into(), Value::String(r.id.clone()));
    o.insert("conversations".into(), Value::Array(conversations));
    o.insert("system".into(), Value::String(system));
    o.insert("tools".into(), Value::String(Value::Array(r.tools.clone()).to_string()));
    o.insert("metadata".into(), serde_json::to_value(&r.meta).unwrap_or(Value::Null));
    Value::Object(o)
}
