//! OpenAI / TRL conversational rows: `messages` (full view) or `prompt` + `completion`
//! (assistant-turn view, TRL's prompt-completion type), a `tools` column and `metadata`.
//! Tool calls are `{"id","type":"function","function":{"name","arguments": JSON text}}`;
//! results are `tool` messages with `tool_call_id`.

use serde_json::{json, Map, Value};

use crate::rows::{Body, ExportRow};
use crate::views::Message;

/// One message as an OpenAI chat message (plus `weight` and token data). Every message has
/// every key (`null` when absent) so all rows and shards share one schema.
pub fn message_json(m: &Message) -> Value {
    let calls: Option<Vec<Value>> = (!m.tool_calls.is_empty()).then(|| {
        m.tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect()
    });
    let mut o = Map::new();
    o.insert("role".into(), Value::String(m.role.as_str().into()));
    o.insert("content".into(), Value::String(m.content.clone()));
    o.insert("reasoning_content".into(), json!(m.reasoning));
    o.insert("tool_calls".into(), json!(calls));
    o.insert("tool_call_id".into(), json!(m.tool_call_id));
    o.insert("weight".into(), json!(m.weight));
    let t = m.tokens.clone().unwrap_or_default();
    o.insert("prompt_token_ids".into(), json!(t.prompt_token_ids));
    o.insert("completion_token_ids".into(), json!(t.completion_token_ids));
    o.insert("logprobs".into(), json!(t.logprobs));
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
