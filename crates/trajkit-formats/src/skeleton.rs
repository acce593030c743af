//! Position-free detection: a small stand-in ("skeleton") of a JSON value too large for the
//! detection peek, holding every top-level key wherever it falls in the document, so that
//! detectors see identifying keys that come after megabytes of other content.
//!
//! The skeleton is valid JSON of the same shape: each member of the top-level object (or of
//! the first element of a top-level array) is kept verbatim when small; a large container
//! keeps its first element or members (recursively, a few levels deep) and a large string
//! becomes `""`. Values are skipped with `json::value_end`, never parsed.

use crate::json::object_members;

/// A member value up to this size is kept verbatim.
const KEEP_BYTES: usize = 64 << 10;
/// Past this size, the skeleton stubs every further value.
const TOTAL_BYTES: usize = 1 << 20;
/// Containers nested deeper than this are stubbed empty.
const MAX_DEPTH: usize = 3;

/// The skeleton of the JSON value that `bytes` starts with (after whitespace), and the
/// offset just past that value (where a next JSON Lines record would start). `None` when
/// `bytes` does not start with a complete object or array.
pub fn skeleton(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    let end = match bytes[start] {
        b'{' | b'[' => value_len(&bytes[start..])? + start,
        _ => return None,
    };
    let mut out = Vec::new();
    write_value(&bytes[start..end], 0, &mut out);
    Some((out, end))
}

/// Length of the complete container `bytes` starts with.
fn value_len(bytes: &[u8]) -> Option<usize> {
    // Wrapped as the only element of an array, the container ends at the `]` after it.
    let closer = if bytes.first() == Some(&b'{') { b'}' } else { b']' };
    let (end, found) = crate::json::value_end(bytes, 1, closer)?;
    if found == closer {
        return Some(end + 1);
    }
    // A `,` at depth 0 inside the container: scan on past each member.
    let mut at = end;
    loop {
        let (next, found) = crate::json::value_end(bytes, at + 1, closer)?;
        if found == closer {
            return Some(next + 1);
        }
        at = next;
    }
}

/// Appends `value` (one complete JSON value) or its stand-in.
fn write_value(value: &[u8], depth: usize, out: &mut Vec<u8>) {
    if value.len() <= KEEP_BYTES && out.len() + value.len() <= TOTAL_BYTES {
        out.extend_from_slice(value);
        return;
    }
    match value.first() {
        Some(b'{') => write_object(value, depth, out),
        Some(b'[') => write_array(value, depth, out),
        Some(b'"') => out.extend_from_slice(b"\"\""),
        // Numbers and literals are short; anything else is not JSON: keep its kind.
        _ => out.extend_from_slice(b"null"),
    }
}

/// An object: every key, each value kept or stubbed.
fn write_object(value: &[u8], depth: usize, out: &mut Vec<u8>) {
    out.push(b'{');
    if depth < MAX_DEPTH {
        let members = object_members(value).unwrap_or_default();
        let mut first = true;
        for crate::json::Member { key, value: range, complete } in members {
            if !complete {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            // Keys are re-encoded: a key is written as JSON even when it was cut.
            out.extend_from_slice(serde_json::Value::String(key).to_string().as_bytes());
            out.push(b':');
            write_value(&value[range], depth + 1, out);
        }
    }
    out.push(b'}');
}

/// An array: its first element kept or stubbed.
fn write_array(value: &[u8], depth: usize, out: &mut Vec<u8>) {
    out.push(b'[');
    let first = value[1..].iter().position(|b| !b.is_ascii_whitespace()).map(|i| i + 1);
    if let (Some(start), true) = (first, depth < MAX_DEPTH) {
        if value[start] != b']' {
            if let Some((end, _)) = crate::json::value_end(value, start, b']') {
                let elem = value[start..end].trim_ascii_end();
                write_value(elem, depth + 1, out);
            }
        }
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic: the rule on a small document with a tiny keep size is not reachable with
    /// real files without megabytes of content (the real-file tests build those).
    #[test]
    fn keys_after_a_large_value_survive() {
        let big = "x".repeat(KEEP_BYTES + 10);
        let doc = format!(r#"{{"trajectory":[{{"a":"{big}","b":1}},2],"history":"{big}","info":{{"k":"v"}}}} tail"#);
        let (sk, end) = skeleton(doc.as_bytes()).expect("skeleton");
        assert_eq!(String::from_utf8_lossy(&sk), r#"{"trajectory":[{"a":"","b":1}],"history":"","info":{"k":"v"}}"#);
        assert_eq!(&doc[end..], " tail");
        assert_eq!(skeleton(b"[1, 2"), None);
        assert_eq!(skeleton(b"\"s\""), None);
    }
}
