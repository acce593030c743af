//! Small helpers for mapping parsed JSON into the record without copying.

use serde_json::{Map, Value};
use trajkit_model::Extra;

/// Removes `key` and returns it when it is a non-null value (a `null` stays in the map,
/// so it ends up in `extra` and missing vs null stays visible).
pub fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    match map.get(key) {
        None | Some(Value::Null) => None,
        Some(_) => map.remove(key),
    }
}

/// Removes `key` when it is a string.
pub fn take_str(map: &mut Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key) {
        Some(Value::String(_)) => match map.remove(key) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// Removes `key` when it is a non-empty string (an empty string stays where it was).
pub fn take_nonempty_str(map: &mut Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key) {
        Some(Value::String(s)) if !s.is_empty() => take_str(map, key),
        _ => None,
    }
}

/// Removes `key` when it is a number.
pub fn take_f64(map: &mut Map<String, Value>, key: &str) -> Option<f64> {
    let v = map.get(key)?.as_f64()?;
    map.remove(key);
    Some(v)
}

/// Removes `key` when it is a non-negative integer.
pub fn take_u64(map: &mut Map<String, Value>, key: &str) -> Option<u64> {
    let v = map.get(key)?.as_u64()?;
    map.remove(key);
    Some(v)
}

/// What is left of a source object becomes `extra` as it is (the same sorted map type).
pub fn into_extra(map: Map<String, Value>) -> Extra {
    map
}

/// Text of a content value: a string, or the `text` of text parts joined by newlines.
pub fn content_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
            if texts.is_empty() {
                None
            } else {
                Some(texts.join("\n"))
            }
        }
        _ => None,
    }
}

/// Byte ranges of the elements of a top-level JSON array (without copying them), or
/// `None` when the bytes are not a JSON array.
pub fn array_elements(bytes: &[u8]) -> Option<Vec<std::ops::Range<usize>>> {
    let items: Vec<&serde_json::value::RawValue> = serde_json::from_slice(bytes).ok()?;
    let base = bytes.as_ptr() as usize;
    Some(
        items
            .iter()
            .map(|raw| {
                let start = raw.get().as_ptr() as usize - base;
                start..start + raw.get().len()
            })
            .collect(),
    )
}

/// JSON path of an array element: `$.steps[3]`.
pub fn idx(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}
