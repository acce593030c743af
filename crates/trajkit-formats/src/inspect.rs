//! Inspect AI evaluation logs: `.eval` archives (a zip with one JSON member per sample
//! under `samples/` plus `header.json`) and `.json` logs (one EvalLog document whose
//! `samples` list holds every sample).
//!
//! One sample (one epoch of one dataset sample) is one trajectory. A sample alone does not
//! name its task or model: those live in the log header. So each record handed to
//! `read_record` is an envelope built by `expand_document`:
//! `{"log": {<every top-level log field but the aggregates>}, "sample": <the sample's bytes
//! verbatim>}`, streamed one sample at a time.
//! See docs/formats/inspect.md for the mapping, task-key and outcome rules.

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;

use serde_json::{Map, Value};
use trajkit_model::{
    canonical::sha256_hex, Agent, Extra, Gap, GapKind, Metrics, Outcome, Provenance, Role, Status, Step, Task,
    TaskKeySource, ToolCall, ToolResult, Trajectory, Verification,
};

use crate::input::InputFile;
use crate::json::{
    array_elements, content_text, into_extra, step_content_text, take, take_each, take_f64, take_nonempty_str,
    take_object, take_seconds, take_str, take_u64,
};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem, Reason};

/// Reader for Inspect AI logs.
pub struct InspectReader;

const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Top-level log fields not copied into records' envelopes: `samples` (the records
/// themselves) and the aggregates of the whole eval (`results`: the scorers' metrics over
/// all samples, `stats`: timing and usage totals, `reductions`: per-sample score
/// reductions across epochs), which are no part of one sample's run and would repeat in
/// every record. Every other top-level field (`version`, `status`, `eval`, `plan`,
/// `error`, `invalidated`, `location`, ...) goes into every envelope.
const EXCLUDED_LOG_KEYS: [&str; 4] = ["samples", "results", "stats", "reductions"];

impl Reader for InspectReader {
    fn name(&self) -> &'static str {
        "inspect"
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let document = |confidence, reason: &str| claim(confidence, reason, Layout::Document);
        if peek.bytes.starts_with(ZIP_MAGIC) {
            if peek.name.ends_with(".eval") {
                return document(95, "zip archive named .eval (Inspect log)");
            }
            if peek.contains("_journal/start.json") || peek.contains("header.json") {
                return document(80, "zip archive with Inspect log members");
            }
            return None;
        }
        let keys = peek.object_keys()?;
        let has = |k: &str| keys.iter().any(|key| key == k);
        if !(has("version") && has("eval")) {
            return None;
        }
        if !["status", "plan", "results", "stats", "samples"].iter().any(|k| has(k)) {
            return None;
        }
        let spec = match peek.document() {
            Some(doc) => doc.get("eval").cloned(),
            None => object_members(peek.bytes)
                .0
                .into_iter()
                .find(|(k, _)| k == "eval")
                .and_then(|(_, r)| serde_json::from_slice::<Value>(&peek.bytes[r]).ok()),
        };
        match spec {
            Some(Value::Object(m)) if m.contains_key("task") || m.contains_key("model") => {
                document(95, "EvalLog keys (version, eval with task/model)")
            }
            _ => document(60, "EvalLog-like keys (version, eval)"),
        }
    }

    fn expands(&self) -> bool {
        true
    }

    fn expand_document(
        &self,
        bytes: &[u8],
        limit: usize,
        emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool,
    ) -> Option<Result<(), String>> {
        if bytes.starts_with(ZIP_MAGIC) {
            return Some(expand_eval(bytes, limit, emit));
        }
        expand_json(bytes, emit)
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        RecordResult::from_result(read(raw, file))
    }
}

// ---------------------------------------------------------------------------------------
// Records: envelopes of header fields plus one sample.

/// `{"log":{<header fields>},"sample":<sample>}` from verbatim JSON slices.
fn envelope(header: &[(&str, &[u8])], sample: &[u8]) -> Vec<u8> {
    let size: usize = header.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    let mut out = Vec::with_capacity(size + sample.len() + 32);
    out.extend_from_slice(b"{\"log\":{");
    for (i, (k, v)) in header.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"\":");
        out.extend_from_slice(v);
    }
    out.extend_from_slice(b"},\"sample\":");
    out.extend_from_slice(sample);
    out.push(b'}');
    out
}

/// The header fields of a top-level object (every member but `EXCLUDED_LOG_KEYS`), as
/// verbatim slices in document order; a key repeated in the document is kept once (its
/// last value, as a JSON parser reads it).
fn header_fields<'a>(bytes: &'a [u8], members: &'a [(String, Range<usize>)]) -> Vec<(&'a str, &'a [u8])> {
    let mut out: Vec<(&str, &[u8])> = Vec::new();
    for (k, r) in members.iter().filter(|(k, _)| !EXCLUDED_LOG_KEYS.contains(&k.as_str())) {
        let Some(v) = bytes.get(r.clone()) else { continue };
        out.retain(|(seen, _)| *seen != k.as_str());
        out.push((k.as_str(), v));
    }
    out
}

/// A `.json` log: one envelope per element of `samples`, handed to `emit` in order.
/// `None` (the whole document is then read as one record and rejected with the reason)
/// when the document is not a complete object or `samples` is not a complete list.
fn expand_json(bytes: &[u8], emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool) -> Option<Result<(), String>> {
    let (members, complete) = object_members(bytes);
    if !complete {
        return None;
    }
    let Some((_, samples)) = members.iter().rev().find(|(k, _)| k == "samples") else {
        return Some(Ok(()));
    };
    let list = bytes.get(samples.clone())?;
    if list == b"null" {
        return Some(Ok(()));
    }
    let elements = array_elements(list)?;
    let header = header_fields(bytes, &members);
    for r in elements {
        let Some(sample) = list.get(r) else { continue };
        if !emit(Ok(envelope(&header, sample))) {
            break;
        }
    }
    Some(Ok(()))
}

/// A `.eval` archive: one envelope per `samples/*.json` member, in archive order, handed
/// to `emit` one at a time (one decompressed member is held at a time). The header comes
/// from `header.json` (written when the eval ends), else from `_journal/start.json` (a
/// log still running or interrupted).
fn expand_eval(
    bytes: &[u8],
    limit: usize,
    emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool,
) -> Result<(), String> {
    let mut zip =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| format!("not a readable .eval archive: {e}"))?;
    let header_index = zip.index_for_name("header.json").or_else(|| zip.index_for_name("_journal/start.json"));
    let header_bytes = match header_index {
        Some(i) => read_member(&mut zip, i, limit)?
            .ok_or_else(|| format!("the log header is larger than the record size limit ({limit} bytes)"))?,
        None => Vec::new(),
    };
    let (members, _) = object_members(&header_bytes);
    let header = header_fields(&header_bytes, &members);
    for i in 0..zip.len() {
        let is_sample = zip.name_for_index(i).is_some_and(|n| n.starts_with("samples/") && n.ends_with(".json"));
        if !is_sample {
            continue;
        }
        let record = match read_member(&mut zip, i, limit)? {
            Some(sample) => Ok(envelope(&header, &sample)),
            None => Err(crate::pipeline::too_large_problem(limit)),
        };
        if !emit(record) {
            break;
        }
    }
    Ok(())
}

/// The decompressed bytes of archive member `i`, or `None` when it is larger than `limit`
/// (declared so, or found so while reading: the declared size is not trusted, and at most
/// `limit + 1` bytes are inflated).
fn read_member(
    zip: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
    i: usize,
    limit: usize,
) -> Result<Option<Vec<u8>>, String> {
    let f = zip.by_index(i).map_err(|e| format!("archive member {i}: {e}"))?;
    if f.size() > limit as u64 {
        return Ok(None);
    }
    let name = f.name().to_string();
    let mut out = Vec::new();
    f.take(limit as u64 + 1).read_to_end(&mut out).map_err(|e| format!("archive member {name}: {e}"))?;
    Ok((out.len() <= limit).then_some(out))
}

// ---------------------------------------------------------------------------------------
// The members of a top-level JSON object.

/// Keys and value ranges of a top-level object's members, in order (`json::object_members`),
/// without a member cut by the end of the bytes, and whether the object was complete: every
/// member scanned, closed, nothing after it.
/// Values are not validated here; they are parsed (and rejected when malformed) when read.
fn object_members(bytes: &[u8]) -> (Vec<(String, Range<usize>)>, bool) {
    let Some(members) = crate::json::object_members(bytes) else {
        return (Vec::new(), false);
    };
    let open = bytes.iter().position(|&b| b == b'{').unwrap_or(0);
    let after = members.last().map_or(open + 1, |m| m.value.end);
    let closed = bytes.get(after..).is_some_and(|rest| rest.trim_ascii() == b"}");
    let complete = closed && members.iter().all(|m| m.complete && !m.value.is_empty());
    let scanned = members.into_iter().filter(|m| m.complete && !m.value.is_empty());
    (scanned.map(|m| (m.key, m.value)).collect(), complete)
}

// ---------------------------------------------------------------------------------------
// Mapping one sample.

/// Why a record that is not an envelope (a whole document the expansion could not split)
/// is no trajectory.
fn whole_document_problem(value: &Value) -> Problem {
    match value.get("samples") {
        Some(s) if !s.is_array() && !s.is_null() => schema("$.samples", "samples must be a list of samples"),
        _ => schema("$", "not an Inspect log sample (expected an EvalLog with a samples list, or a .eval archive)"),
    }
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let value = parse_record(raw.bytes)?;
    let Value::Object(mut envelope) = value else {
        return Err(schema("$", "an Inspect log must be a JSON object"));
    };
    let (log, sample) = match (envelope.remove("log"), envelope.remove("sample")) {
        (Some(Value::Object(log)), Some(sample)) if envelope.is_empty() => (log, sample),
        (log, sample) => {
            if let Some(l) = log {
                envelope.insert("log".into(), l);
            }
            if let Some(s) = sample {
                envelope.insert("sample".into(), s);
            }
            return Err(whole_document_problem(&Value::Object(envelope)));
        }
    };
    let Value::Object(mut sample) = sample else {
        return Err(schema("$", "a sample must be a JSON object"));
    };
    map_sample(&mut sample, log, raw, file)
}

/// A sample id (string or integer) as text.
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn map_sample(
    sample: &mut Map<String, Value>,
    mut log: Map<String, Value>,
    raw: &RawRecord,
    file: &InputFile,
) -> Result<Trajectory, Problem> {
    let sample_id = sample.get("id").and_then(id_text).ok_or_else(|| schema("$.id", "a sample needs an id"))?;
    sample.remove("id");
    let epoch = sample.get("epoch").and_then(Value::as_u64);
    let attachments = match sample.get("attachments") {
        Some(Value::Object(a)) => a.clone(),
        _ => Map::new(),
    };

    let messages = match sample.remove("messages") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(m)) => m,
        Some(_) => return Err(schema("$.messages", "messages must be a list")),
    };
    let mut steps = Vec::with_capacity(messages.len());
    let mut gaps = Vec::new();
    for (i, mut m) in messages.into_iter().enumerate() {
        if !attachments.is_empty() {
            resolve_attachments(&mut m, &attachments);
        }
        steps.push(message_step(m, &format!("$.messages[{i}]"), i, &mut gaps)?);
    }
    let mut link_gaps = Vec::new();
    link_tool_results(&steps, &mut link_gaps);
    link_gaps.append(&mut gaps);
    let mut gaps = link_gaps;
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    if let Some(limit) = sample.get("limit").filter(|l| !l.is_null()) {
        let what = limit.get("type").and_then(Value::as_str).unwrap_or("limit");
        gaps.push(Gap::at(GapKind::IncompleteGeneration, None, format!("{what} limit reached")));
    }
    if let Some(error) = sample.get("error").filter(|e| !e.is_null()) {
        let message = error.get("message").and_then(Value::as_str).or_else(|| error.as_str()).unwrap_or("error");
        gaps.push(Gap::at(GapKind::IncompleteGeneration, None, format!("sample error: {message}")));
    }

    // Header: task name, model, harness version, log format version.
    let spec = take_object(&mut log, "eval");
    let spec_str = |k: &str| spec.as_ref().and_then(|s| s.get(k)).and_then(Value::as_str).filter(|s| !s.is_empty());
    let task_name = spec_str("task").map(str::to_string);
    let model = spec_str("model").map(str::to_string);
    let run = spec_str("eval_id")
        .map(str::to_string)
        .or_else(|| Some(format!("{}\u{0}{}", spec_str("run_id")?, spec_str("task_id")?)));
    let version = spec
        .as_ref()
        .and_then(|s| s.get("packages"))
        .and_then(|p| p.get("inspect_ai"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let format_version = match log.remove("version") {
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            log.insert("version".into(), other);
            None
        }
        None => None,
    };

    let mut metrics = usage_metrics(sample, model.as_deref());
    // `total_time` is the sample's wall clock; `working_time` (excluding waits) stays in extra.
    if let Some(total) = take_seconds(sample, "total_time") {
        metrics.get_or_insert_with(Metrics::default).duration_seconds = Some(total);
    }
    let outcome = outcome(sample.get("scores"));
    let instruction = instruction(sample.get("input"), &attachments, &steps);
    let session_id = take_nonempty_str(sample, "uuid");
    let id = match &run {
        Some(run) => {
            let key = format!("{run}\u{0}{sample_id}\u{0}{}", epoch.map(|e| e.to_string()).unwrap_or_default());
            format!("inspect-{}", &sha256_hex(key.as_bytes())[..16])
        }
        None => format!("inspect-{}", &raw.sha256[..16]),
    };
    let key = format!("{}/{}", task_name.as_deref().unwrap_or("inspect"), sample_id);

    let mut extra: Extra = std::mem::take(sample).into();
    if let Some(spec) = spec {
        extra.insert("eval".into(), Value::Object(spec));
    }
    // The header's `eval`, `plan` (and a `version` that is no version string) keep their
    // names; every other log field is named `log_<name>` (a sample has fields of the same
    // names: `error`, ...).
    for (k, v) in log {
        let name = match k.as_str() {
            "eval" | "plan" | "version" => k,
            _ => format!("log_{k}"),
        };
        extra.insert(name, v);
    }
    let task = Task {
        environment: task_name,
        id: Some(sample_id),
        instruction,
        key,
        key_source: TaskKeySource::Explicit,
        ..Task::default()
    };
    let provenance = Provenance { format_version, ..raw.provenance("inspect", file) };
    Ok(Trajectory {
        agent: Agent { model, name: Some("inspect_ai".into()), version },
        extra,
        gaps,
        metrics,
        outcome,
        session_id,
        steps,
        ..Trajectory::new(id, provenance, task)
    })
}

/// Replaces every string that is exactly `attachment://<id>` with the attachment's text
/// when the sample's `attachments` has that id (Inspect moves long strings and images
/// there); an unknown id stays as written.
fn resolve_attachments(v: &mut Value, attachments: &Map<String, Value>) {
    match v {
        Value::String(s) => {
            if let Some(Value::String(text)) = s.strip_prefix("attachment://").and_then(|id| attachments.get(id)) {
                *s = text.clone();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| resolve_attachments(x, attachments)),
        Value::Object(m) => m.values_mut().for_each(|x| resolve_attachments(x, attachments)),
        _ => {}
    }
}

/// One chat message as one step.
fn message_step(m: Value, path: &str, index: usize, gaps: &mut Vec<Gap>) -> Result<Step, Problem> {
    let Value::Object(mut m) = m else {
        return Err(schema(path, "a message must be an object"));
    };
    let role_name =
        take_str(&mut m, "role").ok_or_else(|| schema(format!("{path}.role"), "message without a string role"))?;
    let role = match role_name.as_str() {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => {
            return Err(Problem::new(
                Reason::InvalidValue,
                format!("{path}.role"),
                format!("unknown message role '{other}'"),
            ))
        }
    };
    let source_id = take(&mut m, "id");
    let content = take(&mut m, "content");
    let mut step = Step::new(role, None);
    step.source_id = source_id;
    match role {
        Role::Tool => {
            let mut result_extra = Map::new();
            for k in ["function", "error"] {
                if let Some(v) = m.remove(k) {
                    result_extra.insert(k.into(), v);
                }
            }
            let call_id = take_str(&mut m, "tool_call_id");
            step.tool_results.push(ToolResult {
                call_id,
                content: content.map(Into::into),
                extra: result_extra.into(),
                subagent_refs: Vec::new(),
            });
        }
        Role::Assistant => {
            step.reasoning = content.as_ref().and_then(reasoning_text);
            step.content = content.map(Into::into);
            step.model = take_nonempty_str(&mut m, "model");
            step.tool_calls = take_each(&mut m, "tool_calls", path, tool_call)?;
            for call in step.tool_calls.iter().filter(|c| c.extra.get("parse_error").is_some_and(|e| !e.is_null())) {
                gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(index), call.name.clone()));
            }
        }
        _ => step.content = content.map(Into::into),
    }
    step.extra = into_extra(m);
    Ok(step)
}

/// Text of the `reasoning` content parts, joined by newlines.
fn reasoning_text(content: &Value) -> Option<String> {
    let parts = content.as_array()?;
    let texts: Vec<&str> = parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("reasoning"))
        .filter_map(|p| p.get("reasoning").and_then(Value::as_str))
        .filter(|t| !t.is_empty())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

fn tool_call(c: Value, path: &str) -> Result<ToolCall, Problem> {
    let Value::Object(mut c) = c else {
        return Err(schema(path, "a tool call must be an object"));
    };
    let name =
        take_str(&mut c, "function").ok_or_else(|| schema(format!("{path}.function"), "tool call without function"))?;
    let id = take_str(&mut c, "id");
    let arguments = take(&mut c, "arguments").unwrap_or_else(|| Value::Object(Map::new()));
    Ok(ToolCall {
        arguments: arguments.into(),
        arguments_invalid: false,
        extra: into_extra(c),
        id,
        name,
        text_embedded: false,
    })
}

/// The instruction: the sample's `input` (a string, or the text of its user messages),
/// else the user steps before the first assistant step.
fn instruction(input: Option<&Value>, attachments: &Map<String, Value>, steps: &[Step]) -> Option<String> {
    let mut input = input.cloned();
    if let Some(v) = input.as_mut() {
        resolve_attachments(v, attachments);
    }
    let from_input = match &input {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Array(messages)) => {
            let texts: Vec<String> = messages
                .iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                .filter_map(|m| m.get("content").and_then(content_text))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    };
    from_input.or_else(|| {
        let texts: Vec<String> = steps
            .iter()
            .take_while(|s| s.role != Role::Assistant)
            .filter(|s| s.role == Role::User)
            .filter_map(|s| s.content.as_ref().and_then(step_content_text))
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    })
}

/// Run totals from `model_usage`: the entry of the eval's model (or the only entry).
/// Inspect's `input_tokens` excludes cache reads and writes in current versions but
/// included them in older ones; it is `prompt_tokens` only when no cache figure is
/// positive (then both readings agree), else it stays in `metrics.extra`.
fn usage_metrics(sample: &mut Map<String, Value>, model: Option<&str>) -> Option<Metrics> {
    let Some(Value::Object(all)) = sample.get_mut("model_usage") else {
        return None;
    };
    let key = match model.filter(|m| all.contains_key(*m)) {
        Some(m) => m.to_string(),
        None if all.len() == 1 => all.keys().next()?.clone(),
        None => return None,
    };
    if !all.get(&key).is_some_and(Value::is_object) {
        return None;
    }
    let Some(Value::Object(mut usage)) = all.remove(&key) else {
        return None;
    };
    if all.is_empty() {
        sample.remove("model_usage");
    }
    let positive = |u: &Map<String, Value>, k: &str| u.get(k).and_then(Value::as_f64).is_some_and(|n| n > 0.0);
    let cache_figures = positive(&usage, "input_tokens_cache_read") || positive(&usage, "input_tokens_cache_write");
    let prompt = if cache_figures { None } else { take_u64(&mut usage, "input_tokens") };
    let completion = take_u64(&mut usage, "output_tokens");
    let cached = take_u64(&mut usage, "input_tokens_cache_read");
    let cost = take_f64(&mut usage, "total_cost");
    let mut extra = into_extra(usage);
    extra.insert("model".into(), Value::String(key));
    Some(Metrics {
        duration_seconds: None,
        cached_tokens: cached,
        completion_tokens: completion,
        cost_usd: cost,
        extra,
        prompt_tokens: prompt,
    })
}

/// A score value's verdict: `C` (correct) or `true` → success; `I` (incorrect), `N` (no
/// answer) or `false` → failure; anything else (`P` partial, numbers, lists, objects) none.
fn verdict(value: &Value) -> Option<Status> {
    match value {
        Value::String(s) if s == "C" => Some(Status::Success),
        Value::String(s) if s == "I" || s == "N" => Some(Status::Failure),
        Value::Bool(true) => Some(Status::Success),
        Value::Bool(false) => Some(Status::Failure),
        _ => None,
    }
}

/// Outcome from the sample's scores (see docs/formats/inspect.md). The scores themselves
/// stay in `extra.scores`.
fn outcome(scores: Option<&Value>) -> Outcome {
    let Some(Value::Object(scores)) = scores else {
        return Outcome::default();
    };
    if scores.is_empty() {
        return Outcome::default();
    }
    let values: Vec<(&String, Option<&Value>)> = scores.iter().map(|(k, s)| (k, s.get("value"))).collect();
    let verdicts: Vec<Option<Status>> = values.iter().map(|(_, v)| v.and_then(verdict)).collect();
    let status = match verdicts.first().copied().flatten() {
        Some(first) if verdicts.iter().all(|v| *v == Some(first)) => first,
        _ => Status::Unknown,
    };
    let mut components = BTreeMap::new();
    for (name, v) in &values {
        match v {
            Some(Value::Number(n)) => {
                if let Some(f) = n.as_f64() {
                    components.insert((*name).clone(), f);
                }
            }
            Some(Value::Object(parts)) => {
                for (k, p) in parts {
                    if let Some(f) = p.as_f64().filter(|_| p.is_number()) {
                        components.insert(format!("{name}/{k}"), f);
                    }
                }
            }
            _ => {}
        }
    }
    let single_numeric = values.len() == 1 && matches!(values[0].1, Some(Value::Number(_)));
    let reward = if single_numeric { components.values().next().copied() } else { None };
    if single_numeric {
        components.clear();
    }
    Outcome { reward, reward_components: components, source: None, status, verification: Verification::SourceEvaluator }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_of_objects() {
        let doc = br#" { "a" : "x,}\"", "b":[1,{"c":2}] , "d": 3 } "#;
        let (m, complete) = object_members(doc);
        assert!(complete);
        let got: Vec<(&str, &[u8])> = m.iter().map(|(k, r)| (k.as_str(), &doc[r.clone()])).collect();
        assert_eq!(got, [("a", &br#""x,}\"""#[..]), ("b", br#"[1,{"c":2}]"#), ("d", b"3")]);
        let (m, complete) = object_members(br#"{"a": 1, "b": [1, 2"#);
        assert_eq!((m.len(), complete), (1, false), "a truncated peek keeps the members before the cut");
        assert_eq!(object_members(b"{}"), (vec![], true));
        assert!(!object_members(b"[1]").1);
        assert!(!object_members(br#"{"a": 1} x"#).1);
    }

    /// Synthetic archive: the header's fields but the aggregates go into every envelope,
    /// samples are emitted one at a time and the expansion stops when `emit` says so.
    #[test]
    fn eval_archives_stream_samples_with_the_header() {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default();
        let header = br#"{"version":2,"status":"error","eval":{"task":"t"},"plan":{},"results":{"r":1},"stats":{},"error":{"message":"x"},"invalidated":false}"#;
        let members: [(&str, &[u8]); 4] = [
            ("_journal/start.json", b"{}"),
            ("samples/1_epoch_1.json", br#"{"id":1}"#),
            ("header.json", header),
            ("samples/2_epoch_1.json", br#"{"id":2}"#),
        ];
        for (name, bytes) in members {
            w.start_file(name, opts).ok();
            w.write_all(bytes).ok();
        }
        let zip = w.finish().map(|c| c.into_inner()).unwrap_or_default();
        let mut got: Vec<Vec<u8>> = Vec::new();
        let result = expand_eval(&zip, 1 << 20, &mut |b| {
            got.extend(b.ok());
            true
        });
        assert_eq!(result, Ok(()));
        let head = r#"{"log":{"version":2,"status":"error","eval":{"task":"t"},"plan":{},"error":{"message":"x"},"invalidated":false},"sample":"#;
        let want: Vec<Vec<u8>> =
            [r#"{"id":1}"#, r#"{"id":2}"#].iter().map(|s| format!("{head}{s}}}").into_bytes()).collect();
        assert_eq!(got, want);
        let mut n = 0;
        assert_eq!(
            expand_eval(&zip, 1 << 20, &mut |_| {
                n += 1;
                false
            }),
            Ok(())
        );
        assert_eq!(n, 1, "stops at the first refusal");
        // A member over the limit (9 bytes, limit 8) takes its place as a rejection.
        let mut kinds = Vec::new();
        let result = expand_eval(&zip, 8, &mut |r| {
            kinds.push(r.map(|_| ()).map_err(|p| p.reason));
            true
        });
        assert!(result.is_err(), "the 150-byte header is over the limit: {result:?}");
        assert!(kinds.is_empty());
    }

    #[test]
    fn verdicts_follow_inspect_value_constants() {
        use serde_json::json;
        let o = outcome(Some(&json!({"a": {"value": "C"}, "b": {"value": true}})));
        assert_eq!((o.status, o.reward), (Status::Success, None));
        let o = outcome(Some(&json!({"a": {"value": "C"}, "b": {"value": "I"}})));
        assert_eq!(o.status, Status::Unknown, "scorers that disagree decide nothing");
        let o = outcome(Some(&json!({"a": {"value": 1.0}})));
        assert_eq!((o.status, o.reward), (Status::Unknown, Some(1.0)), "a number is a reward, not a verdict");
        let o = outcome(Some(&json!({"a": {"value": {"x": 0.5, "y": "z"}}, "b": {"value": 2}})));
        assert_eq!(o.reward_components.len(), 2);
        assert_eq!(o.reward_components.get("a/x"), Some(&0.5));
        assert_eq!(outcome(Some(&json!({}))).verification, Verification::Unverified);
    }
}
