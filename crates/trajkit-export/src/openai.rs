//! OpenAI / TRL conversational rows: `messages` (full view) or `prompt` + `completion`
//! (assistant-turn view, TRL's prompt-completion type), a `tools` column and `metadata`.
//! Tool calls are `{"id","type":"function","function":{"name","arguments": JSON text}}`;
//! results are `tool` messages with `tool_call_id`.

use serde_json::{json, Map, Value};

use crate::rows::{Body, ExportRow};
use crate::views::{Message, MsgRole, Tokens};

fn tokens_json(t: &Tokens, o: &mut Map<String, Value>) {
    if let Some(ids) = &t.prompt_token_ids {
        o.insert("prompt_token_ids".into(), json!(ids));
    }
    if let Some(ids) = &t.completion_token_ids {
        o.insert("completion_token_ids".into(), json!(ids));
    }
    if let Some(lp) = &t.logprobs {
        o.insert("logprobs".into(), json!(lp));
    }
}

/// One message as an OpenAI chat message (plus `weight` and token data when recorded).
pub fn message_json(m: &Message) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), Value::String(m.role.as_str().into()));
    o.insert("content".into(), Value::String(m.content.clone()));
    if let Some(r) = &m.reasoning {
        o.insert("reasoning_content".into(), Value::String(r.clone()));
    }
    if !m.tool_calls.is_empty() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        o.insert("tool_calls".into(), Value::Array(calls));
    }
    if m.role == MsgRole::Tool {
        o.insert("tool_call_id".into(), json!(m.tool_call_id));
    }
    o.insert("weight".into(), json!(m.weight));
    if let Some(t) = &m.tokens {
        tokens_json(t, &mut o);
    }
    Value::Object(o)
}

/// The JSON object of one row.
pub fn row_json(r: &ExportRow) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), Value::String(r.id.clone()));
    match &r.body {
        Body::Full { messages } => {
            o.insert("messages".into(), Value::Array(messages.iter().map(message_json).collect()));
        }
        Body::Turn { prompt, completion } => {
            o.insert("prompt".into(), Value::Array(prompt.iter().map(message_json).collect()));
            o.insert("completion".into(), Value::Array(vec![message_json(completion)]));
        }
    }
    o.insert("tools".into(), Value::Array(r.tools.clone()));
    o.insert("metadata".into(), serde_json::to_value(&r.meta).unwrap_or(Value::Null));
    Value::Object(o)
}
