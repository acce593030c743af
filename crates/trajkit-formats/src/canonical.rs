//! trajkit's own canonical records (`trajkit convert`, `trajkit redact`, library shards) as
//! input: schema-checked, digest-checked, and passed through unchanged (provenance included),
//! so that converting converted records gives the same bytes.

use serde_json::Value;
use trajkit_model::{Trajectory, SCHEMA_VERSION};

use crate::input::InputFile;
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem, Reason};

/// Reader of canonical records (family `canonical`).
pub struct CanonicalReader;

/// The prefix every version of the record's `schema_version` has.
const SCHEMA_PREFIX: &str = "trajkit.trajectory/";

impl Reader for CanonicalReader {
    fn name(&self) -> &'static str {
        "canonical"
    }

    /// A first record whose `schema_version` is trajkit's, beside `content_digest` and
    /// `provenance`; one per line, or one document in a `.json` file.
    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let m = peek.first_line?.as_object()?;
        let version = m.get("schema_version")?.as_str()?;
        if !version.starts_with(SCHEMA_PREFIX) || !m.contains_key("content_digest") || !m.contains_key("provenance") {
            return None;
        }
        let lines = peek.multi_line_records || !peek.name.ends_with(".json");
        let layout = if lines { Layout::Lines } else { Layout::Document };
        Some(Detection { confidence: 95, reason: format!("trajkit canonical record ({version})"), layout })
    }

    fn read_record(&self, raw: &RawRecord, _file: &InputFile) -> RecordResult {
        RecordResult::from_result(read(raw.bytes))
    }
}

/// Parses, schema-checks and digest-checks one canonical record.
fn read(bytes: &[u8]) -> Result<Trajectory, Problem> {
    let value = parse_record(bytes)?;
    match value.get("schema_version") {
        Some(Value::String(v)) if v == SCHEMA_VERSION => {}
        Some(Value::String(v)) => {
            let msg = format!("schema_version {v:?} is not the one this trajkit reads ({SCHEMA_VERSION})");
            return Err(Problem::new(Reason::InvalidValue, "$.schema_version", msg));
        }
        _ => return Err(schema("$.schema_version", "schema_version missing")),
    }
    let mut t: Trajectory =
        serde_json::from_value(value.clone()).map_err(|e| schema("$", format!("not a canonical record: {e}")))?;
    let back = serde_json::to_value(&t).map_err(|e| schema("$", format!("not a canonical record: {e}")))?;
    if let Some(problem) = first_difference(&value, &back, "$") {
        return Err(problem);
    }
    check_digests(&mut t)?;
    Ok(t)
}

/// Checks every stated `content_digest` (the record's and its subagents') against the
/// content: a record edited after it was sealed is rejected as `digest_mismatch`.
fn check_digests(t: &mut Trajectory) -> Result<(), Problem> {
    let mut stated = Vec::new();
    digests(t, "$", &mut stated);
    trajkit_model::seal(t).map_err(|e| schema("$", format!("cannot digest: {e}")))?;
    let mut actual = Vec::new();
    digests(t, "$", &mut actual);
    for ((path, want), (_, got)) in stated.iter().zip(&actual) {
        if want != got {
            let msg = format!("content_digest {want} does not match the content (digest {got})");
            return Err(Problem::new(Reason::DigestMismatch, format!("{path}.content_digest"), msg));
        }
    }
    Ok(())
}

/// The record's digest and its subagents' (depth first), each with its JSON path.
fn digests(t: &Trajectory, path: &str, out: &mut Vec<(String, String)>) {
    out.push((path.to_string(), t.content_digest.clone()));
    for (i, s) in t.subagents.iter().enumerate() {
        digests(&s.trajectory, &format!("{path}.subagents[{i}].trajectory"), out);
    }
}

/// Where the record as read differs from the record as trajkit writes it: a key the schema
/// does not have (`unknown_field`), or a value it would not keep (`schema_violation`).
fn first_difference(read: &Value, written: &Value, path: &str) -> Option<Problem> {
    match (read, written) {
        (Value::Object(a), Value::Object(b)) => {
            if let Some(k) = a.keys().find(|k| !b.contains_key(*k) && !a[*k].is_null()) {
                let msg = format!("key {k:?} is not part of the canonical record");
                return Some(Problem::new(Reason::UnknownField, format!("{path}.{k}"), msg));
            }
            b.iter().find_map(|(k, w)| match a.get(k) {
                Some(v) => first_difference(v, w, &format!("{path}.{k}")),
                None => Some(schema(format!("{path}.{k}"), "missing")),
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| first_difference(x, y, &format!("{path}[{i}]")))
        }
        (a, b) if a == b => None,
        _ => Some(schema(path, "value is not in canonical form")),
    }
}
