//! OTLP/JSON values: typed attribute values (`{"stringValue": ..}`, `intValue` as a
//! string, `arrayValue`, `kvlistValue`) as plain JSON, hex or base64 ids as hex, and the
//! flattened, indexed attribute names (`llm.input_messages.0.message.role`) as nested
//! values. See docs/formats/otel.md.

use serde_json::{Map, Number, Value};

/// A typed OTLP `AnyValue` as plain JSON. `intValue` (a string in OTLP/JSON, for int64)
/// becomes a number when it parses; an empty value (`{}`) is null. A value that is not
/// typed is returned as is (SDK-style attribute objects hold plain values).
pub(crate) fn any_value(v: &Value) -> Value {
    let Value::Object(o) = v else {
        return v.clone();
    };
    if let Some(s) = o.get("stringValue") {
        return s.clone();
    }
    if let Some(b) = o.get("boolValue") {
        return b.clone();
    }
    if let Some(i) = o.get("intValue") {
        return match i {
            Value::String(s) => s.parse::<i64>().map(|n| Value::Number(n.into())).unwrap_or_else(|_| i.clone()),
            other => other.clone(),
        };
    }
    if let Some(d) = o.get("doubleValue") {
        return match d {
            Value::String(s) => {
                s.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number).unwrap_or_else(|| d.clone())
            }
            other => other.clone(),
        };
    }
    if let Some(a) = o.get("arrayValue") {
        let values = a.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        return Value::Array(values.iter().map(any_value).collect());
    }
    if let Some(kv) = o.get("kvlistValue") {
        return Value::Object(attributes(kv.get("values").unwrap_or(&Value::Null)));
    }
    if let Some(b) = o.get("bytesValue") {
        return b.clone();
    }
    if o.is_empty() {
        return Value::Null;
    }
    v.clone()
}

/// An OTLP attribute list (`[{"key": .., "value": {..}}]`) as one object of plain values
/// (the first of a repeated key wins); an attribute object is taken as it is.
pub(crate) fn attributes(list: &Value) -> Map<String, Value> {
    match list {
        Value::Array(items) => {
            let mut out = Map::new();
            for it in items {
                if let Some(key) = it.get("key").and_then(Value::as_str) {
                    if !out.contains_key(key) {
                        out.insert(key.to_string(), it.get("value").map(any_value).unwrap_or(Value::Null));
                    }
                }
            }
            out
        }
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    }
}

/// A trace or span id as lowercase hex: hex as given (OTLP/JSON), or base64 of 16 or 8
/// bytes (protobuf JSON mapping, Tempo) converted; anything else is kept as written.
pub(crate) fn id(v: Option<&Value>) -> Option<String> {
    let s = v?.as_str()?.trim();
    if s.is_empty() {
        return None;
    }
    let hex = s.bytes().all(|b| b.is_ascii_hexdigit());
    if hex && (s.len() == 32 || s.len() == 16) {
        return Some(s.to_ascii_lowercase());
    }
    match base64(s) {
        Some(bytes) if bytes.len() == 16 || bytes.len() == 8 => {
            Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
        }
        _ => Some(s.to_string()),
    }
}

/// Standard base64 (padding optional); `None` when `s` is not base64.
fn base64(s: &str) -> Option<Vec<u8>> {
    let sextet = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    let body = s.trim_end_matches('=');
    if body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= sextet(*c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// Nanoseconds since the epoch from a `*UnixNano` field (a string in OTLP/JSON).
pub(crate) fn nanos(v: Option<&Value>) -> Option<u128> {
    match v? {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64().map(u128::from),
        _ => None,
    }
}

/// Deeper names are not rebuilt: the rebuild recurses once per segment, and attribute
/// names are input (the conventions' deepest is 7 segments).
const MAX_SEGMENTS: usize = 32;

/// The items of an indexed, flattened attribute family (`prefix.N.rest`), in index
/// order, each rebuilt as a nested value (`rest` split at dots; numeric segments become
/// list positions). A name that clashes with another (a leaf and a parent) is dropped.
pub(crate) fn indexed(attrs: &Map<String, Value>, prefix: &str) -> Vec<Value> {
    let mut root = Map::new();
    let head = format!("{prefix}.");
    for (k, v) in attrs {
        let Some(rest) = k.strip_prefix(&head) else {
            continue;
        };
        let segs: Vec<&str> = rest.split('.').collect();
        if segs.len() > MAX_SEGMENTS || segs.first().is_none_or(|s| s.parse::<usize>().is_err()) {
            continue;
        }
        insert(&mut root, &segs, v.clone());
    }
    match listed(Value::Object(root)) {
        Value::Array(items) => items,
        _ => Vec::new(),
    }
}

/// Puts `value` at the path `segs` below `node`; a clash leaves `node` as it was.
fn insert(node: &mut Map<String, Value>, segs: &[&str], value: Value) {
    let Some((first, rest)) = segs.split_first() else {
        return;
    };
    if rest.is_empty() {
        node.entry(first.to_string()).or_insert(value);
        return;
    }
    let child = node.entry(first.to_string()).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = child {
        insert(m, rest, value);
    }
}

/// Objects whose keys are all indexes become lists in index order, all the way down.
fn listed(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let numeric = !m.is_empty() && m.keys().all(|k| k.parse::<usize>().is_ok());
            if numeric {
                let mut items: Vec<(usize, Value)> =
                    m.into_iter().filter_map(|(k, v)| k.parse().ok().map(|i| (i, listed(v)))).collect();
                items.sort_by_key(|(i, _)| *i);
                Value::Array(items.into_iter().map(|(_, v)| v).collect())
            } else {
                Value::Object(m.into_iter().map(|(k, v)| (k, listed(v))).collect())
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_values_become_plain_json() {
        let list = json!([
            {"key": "s", "value": {"stringValue": "x"}},
            {"key": "i", "value": {"intValue": "42"}},
            {"key": "d", "value": {"doubleValue": 0.5}},
            {"key": "a", "value": {"arrayValue": {"values": [{"stringValue": "p"}, {"boolValue": true}]}}},
            {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"intValue": 3}}]}}},
            {"key": "e", "value": {}},
            {"key": "s", "value": {"stringValue": "second"}}
        ]);
        let m = attributes(&list);
        assert_eq!(Value::Object(m), json!({"s": "x", "i": 42, "d": 0.5, "a": ["p", true], "kv": {"k": 3}, "e": null}));
    }

    #[test]
    fn ids_are_hex_whether_written_in_hex_or_base64() {
        assert_eq!(id(Some(&json!("0102030405060708"))).as_deref(), Some("0102030405060708"));
        assert_eq!(id(Some(&json!("AAECAwQFBgc="))).as_deref(), Some("0001020304050607"));
        assert_eq!(id(Some(&json!("AAECAwQFBgcICQoLDA0ODw=="))).as_deref(), Some("000102030405060708090a0b0c0d0e0f"));
        assert_eq!(id(Some(&json!("not an id!"))).as_deref(), Some("not an id!"));
        assert_eq!(id(Some(&json!(""))), None);
    }

    #[test]
    fn indexed_names_rebuild_nested_lists() {
        let attrs = attributes(&json!([
            {"key": "p.1.message.role", "value": {"stringValue": "tool"}},
            {"key": "p.0.message.role", "value": {"stringValue": "user"}},
            {"key": "p.0.message.tool_calls.0.tool_call.id", "value": {"stringValue": "c"}},
            {"key": "p.0.message.role.x", "value": {"stringValue": "clash"}},
            {"key": "p.name", "value": {"stringValue": "not indexed"}}
        ]));
        let mut deep = attrs.clone();
        deep.insert(format!("p.2{}", ".x".repeat(100_000)), Value::Null);
        assert_eq!(indexed(&deep, "p").len(), 2, "a name of 100,001 segments is skipped");
        assert_eq!(
            indexed(&attrs, "p"),
            vec![
                json!({"message": {"role": "user", "tool_calls": [{"tool_call": {"id": "c"}}]}}),
                json!({"message": {"role": "tool"}})
            ]
        );
    }
}
