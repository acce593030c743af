//! ATIF documents read straight from their text (issue 14): one checking pass
//! (`json_text::split`) takes the document apart down to its steps' members, and the record
//! is built from those parts; messages, arguments, results and extras stay text. Building a
//! `Value` tree and taking it apart again was most of ATIF `validate`'s time.
//!
//! Only the common document is read here: one with no subagents, no continuation and
//! nothing the validator would report. For any other, and for any text the check refuses,
//! `read` answers `None` and the document goes through the parse, validator and loader of
//! `atif`, which give the same record (the tests hold both to the same canonical bytes on
//! every real ATIF file and on mutations of them) and every problem.

use std::borrow::Cow;

use serde_json::{Map, Value};
use trajkit_model::json_text::{self, Parts, Shape, Split};
use trajkit_model::node::Node;
use trajkit_model::{Agent, Extra, LazyValue, Metrics, Provenance, Role, Step, ToolCall, ToolResult, Trajectory};

use super::call_ids::CallIds;
use super::{
    as_int, call_gaps, task_of, valid_timestamp, AGENT_KEYS, AGENT_ONLY, CONTENT_PART_KEYS, FINAL_METRICS_KEYS,
    IMAGE_SOURCE_KEYS, MAX_FIELDS, MEDIA_TYPES, METRICS_KEYS, OBSERVATION_KEYS, RESULT_KEYS, SCHEMA_VERSIONS,
    STEP_KEYS, TOOL_CALL_KEYS, TRAJECTORY_KEYS,
};
use crate::input::InputFile;
use crate::reader::RawRecord;

const _: () = assert!(TRAJECTORY_KEYS.len() <= MAX_FIELDS && AGENT_KEYS.len() <= MAX_FIELDS);
const _: () = assert!(RESULT_KEYS.len() <= MAX_FIELDS && FINAL_METRICS_KEYS.len() <= MAX_FIELDS);

/// `f`'s member `key`, by `key`'s place in `keys` found when compiling (a key `keys` lacks
/// does not compile): searching the names at run time was 5 % of ATIF `validate`.
macro_rules! field {
    ($f:expr, $keys:expr, $key:literal) => {
        $f.at(const { place($keys, $key) }, $key)
    };
}

/// The place of `key` in `keys` (for `field!`, when compiling).
const fn place(keys: &[&str], key: &str) -> usize {
    let mut i = 0;
    while i < keys.len() {
        let (a, b) = (keys[i].as_bytes(), key.as_bytes());
        let mut j = 0;
        while a.len() == b.len() && j < a.len() && a[j] == b[j] {
            j += 1;
        }
        if a.len() == b.len() && j == a.len() {
            return i;
        }
        i += 1;
    }
    panic!("not an allowed name")
}

const OBJECT: Shape = Shape::Object(&[]);
/// A message or result content: a string, or content parts (objects, an image's `source` one).
const CONTENT: Shape = Shape::Array(&Shape::Object(&[("source", OBJECT)]));
/// Step metrics, their token arrays checked by the flat-number check alone.
const METRICS: Shape = Shape::Object(&[
    ("prompt_token_ids", Shape::Numbers),
    ("completion_token_ids", Shape::Numbers),
    ("logprobs", Shape::Numbers),
]);
const STEP: Shape = Shape::Object(&[
    ("message", CONTENT),
    ("tool_calls", Shape::Array(&OBJECT)),
    ("observation", Shape::Object(&[("results", Shape::Array(&Shape::Object(&[("content", CONTENT)])))])),
    ("metrics", METRICS),
    ("extra", OBJECT),
]);
const DOCUMENT: Shape = Shape::Object(&[
    ("agent", Shape::Object(&[("tool_definitions", Shape::Array(&Shape::Whole))])),
    ("steps", Shape::Array(&STEP)),
    ("final_metrics", OBJECT),
]);

/// The record of one ATIF document given as text, when it is a common one (see the module
/// comment); `None` sends it to the general reader.
pub(super) fn read(text: &str, raw: &RawRecord, file: &InputFile) -> Option<Trajectory> {
    let doc = if raw.written { json_text::split_written(text, &DOCUMENT) } else { json_text::split(text, &DOCUMENT) }?;
    let f = fields(&doc, TRAJECTORY_KEYS)?;
    if field!(f, TRAJECTORY_KEYS, "continued_trajectory_ref").is_some()
        || field!(f, TRAJECTORY_KEYS, "subagent_trajectories").is_some()
    {
        return None;
    }
    let version = req_str(field!(f, TRAJECTORY_KEYS, "schema_version"))?;
    if !SCHEMA_VERSIONS.contains(&&*version) {
        return None;
    }
    let mut extra = Extra::new();
    let mut trajectory_id = None;
    let mut session_id = None;
    for key in ["session_id", "trajectory_id", "notes"] {
        match (key, opt_str(f.get(key))?) {
            ("session_id", Some(s)) => session_id = Some(s.into_owned()),
            ("trajectory_id", Some(s)) => trajectory_id = Some(s.into_owned()),
            _ => keep(&mut extra, key, f.get(key)),
        }
    }
    opt_kind(field!(f, TRAJECTORY_KEYS, "extra"), Kind::Object)?;
    keep(&mut extra, "extra", field!(f, TRAJECTORY_KEYS, "extra"));
    let (agent, tools) = agent(field!(f, TRAJECTORY_KEYS, "agent")?, &mut extra)?;
    let metrics = match field!(f, TRAJECTORY_KEYS, "final_metrics") {
        Some(fm) if kind(fm) == Kind::Object => Some(metrics(fm, FINAL_METRICS_KEYS, "total_")?),
        other => {
            opt_kind(other, Kind::Object)?;
            keep(&mut extra, "final_metrics", other);
            None
        }
    };
    let Parts::Elements(elements) = &field!(f, TRAJECTORY_KEYS, "steps")?.parts else { return None };
    if elements.is_empty() {
        return None;
    }
    let steps = elements.iter().enumerate().map(|(i, s)| step(s, i)).collect::<Option<Vec<Step>>>()?;

    let mut gaps = call_gaps(&steps);
    gaps.sort_by_key(|g| g.step.unwrap_or(usize::MAX));
    let short = raw.sha256.get(..16).unwrap_or(raw.sha256);
    let id = trajectory_id.unwrap_or_else(|| format!("atif-{short}"));
    let task = task_of(&steps, short);
    let provenance = Provenance {
        document_index: raw.document_index,
        format_version: Some(version.into_owned()),
        line: raw.line,
        ..Provenance::new("atif", file.display.clone(), raw.sha256)
    };
    Some(Trajectory { agent, extra, gaps, metrics, session_id, steps, tools, ..Trajectory::new(id, provenance, task) })
}

/// The agent, its tool definitions, and what else it holds (as `extra`'s `agent`, the
/// members `map_agent` leaves).
fn agent(a: &Split, extra: &mut Extra) -> Option<(Agent, Option<Vec<LazyValue>>)> {
    let f = fields(a, AGENT_KEYS)?;
    let agent = Agent {
        name: Some(req_str(field!(f, AGENT_KEYS, "name"))?.into_owned()),
        version: Some(req_str(field!(f, AGENT_KEYS, "version"))?.into_owned()),
        model: opt_str(field!(f, AGENT_KEYS, "model_name"))?.map(Cow::into_owned),
    };
    opt_kind(field!(f, AGENT_KEYS, "extra"), Kind::Object)?;
    let tools = match field!(f, AGENT_KEYS, "tool_definitions") {
        Some(Split { parts: Parts::Elements(defs), .. }) => {
            let each = |d: &Split| (kind(d) == Kind::Object).then(|| lazy(d));
            Some(defs.iter().map(each).collect::<Option<Vec<LazyValue>>>()?)
        }
        other => {
            opt_kind(other, Kind::Null)?;
            None
        }
    };
    let mut rest = Map::new();
    for key in ["model_name", "tool_definitions", "extra"] {
        match f.get(key) {
            Some(v) if key == "extra" || kind(v) == Kind::Null => {
                rest.insert(key.into(), serde_json::from_str(v.text).ok()?);
            }
            _ => {}
        }
    }
    if !rest.is_empty() {
        extra.insert("agent".into(), Value::Object(rest));
    }
    Some((agent, tools))
}

/// Step `i` (0-based), checked as `Validator::step` checks it and mapped as `map_step` maps it.
fn step(s: &Split, i: usize) -> Option<Step> {
    let f = fields(s, STEP_KEYS)?;
    let step_id = field!(f, STEP_KEYS, "step_id")?;
    let id = number(step_id)?;
    if as_int(&id)? != i as i128 + 1 {
        return None;
    }
    let role = match &*req_str(field!(f, STEP_KEYS, "source"))? {
        "user" => Role::User,
        "agent" => Role::Assistant,
        "system" => Role::System,
        _ => return None,
    };
    let agent_step = role == Role::Assistant;
    if !agent_step && AGENT_ONLY.iter().any(|k| present(f.get(k))) {
        return None;
    }
    let mut step = Step::new(role, None);
    step.source_id = Some(id);
    let mut extra = Extra::new();
    step.timestamp = opt_str(field!(f, STEP_KEYS, "timestamp"))?.map(Cow::into_owned);
    if step.timestamp.as_deref().is_some_and(|t| !valid_timestamp(t)) {
        return None;
    }
    step.model = opt_str(field!(f, STEP_KEYS, "model_name"))?.map(Cow::into_owned);
    step.reasoning = opt_str(field!(f, STEP_KEYS, "reasoning_content"))?.map(Cow::into_owned);
    match field!(f, STEP_KEYS, "reasoning_effort").map(kind) {
        None | Some(Kind::Null | Kind::String | Kind::Number) => {}
        Some(_) => return None,
    }
    let message = field!(f, STEP_KEYS, "message")?;
    content(message)?;
    step.content = Some(lazy(message));
    step.copied_context = match field!(f, STEP_KEYS, "is_copied_context").map(|b| (kind(b), b.text)) {
        None | Some((Kind::Null, _)) => false,
        Some((Kind::Bool, text)) => text == "true",
        Some(_) => return None,
    };
    step.tool_calls = match field!(f, STEP_KEYS, "tool_calls") {
        Some(Split { parts: Parts::Elements(calls), .. }) => calls.iter().map(tool_call).collect::<Option<_>>()?,
        other => {
            opt_kind(other, Kind::Null)?;
            Vec::new()
        }
    };
    let ids: CallIds = step.tool_calls.iter().filter_map(|c| c.id.as_deref()).collect();
    step.tool_results = match field!(f, STEP_KEYS, "observation") {
        Some(o) if kind(o) == Kind::Object => observation(o, &ids)?,
        other => {
            opt_kind(other, Kind::Object)?;
            Vec::new()
        }
    };
    step.metrics = match field!(f, STEP_KEYS, "metrics") {
        Some(m) if kind(m) == Kind::Object => Some(metrics(m, METRICS_KEYS, "")?),
        other => {
            opt_kind(other, Kind::Object)?;
            None
        }
    };
    opt_kind(field!(f, STEP_KEYS, "extra"), Kind::Object)?;
    let llm_calls = opt_int(field!(f, STEP_KEYS, "llm_call_count"))?;
    if llm_calls.is_some_and(|n| n < 0) {
        return None;
    }
    if agent_step
        && llm_calls == Some(0)
        && (present(field!(f, STEP_KEYS, "metrics")) || present(field!(f, STEP_KEYS, "reasoning_content")))
    {
        return None;
    }
    // What `map_step` leaves in `extra`: the fields it has no place for, and `null`s.
    for (key, v) in f.present() {
        match key {
            "source" | "message" | "step_id" => {}
            "reasoning_effort" | "llm_call_count" | "extra" => keep_value(&mut extra, key, v),
            _ if kind(v) == Kind::Null => keep_value(&mut extra, key, v),
            _ => {}
        }
    }
    step.subagent = field!(f, STEP_KEYS, "extra").is_some_and(is_sidechain);
    step.extra = extra;
    Some(step)
}

/// Whether a step's `extra` says `is_sidechain: true` (the last of the name, as serde_json
/// keeps it).
fn is_sidechain(extra: &Split) -> bool {
    super::member(extra, "is_sidechain").is_some_and(|v| v.text == "true")
}

/// A tool call, checked as `Validator::tool_call` checks it and mapped as `map_call` maps it.
fn tool_call(c: &Split) -> Option<ToolCall> {
    if kind(c) != Kind::Object {
        return None;
    }
    let f = fields(c, TOOL_CALL_KEYS)?;
    let arguments = field!(f, TOOL_CALL_KEYS, "arguments")?;
    if kind(arguments) != Kind::Object {
        return None;
    }
    opt_kind(field!(f, TOOL_CALL_KEYS, "extra"), Kind::Object)?;
    let mut extra = Extra::new();
    keep(&mut extra, "extra", field!(f, TOOL_CALL_KEYS, "extra"));
    Some(ToolCall {
        arguments: lazy(arguments),
        arguments_invalid: false,
        extra,
        id: Some(req_str(field!(f, TOOL_CALL_KEYS, "tool_call_id"))?.into_owned()),
        name: req_str(field!(f, TOOL_CALL_KEYS, "function_name"))?.into_owned(),
        text_embedded: false,
    })
}

/// A step's observation: its results, checked as `Validator::observation` checks them
/// (each `source_call_id` names a call of the step) and mapped as `map_result` maps them.
fn observation(o: &Split, ids: &CallIds) -> Option<Vec<ToolResult>> {
    let f = fields(o, OBSERVATION_KEYS)?;
    let Some(Split { parts: Parts::Elements(results), .. }) = field!(f, OBSERVATION_KEYS, "results") else {
        return None;
    };
    let result = |r: &Split| -> Option<ToolResult> {
        if kind(r) != Kind::Object {
            return None;
        }
        let f = fields(r, RESULT_KEYS)?;
        if present(field!(f, RESULT_KEYS, "subagent_trajectory_ref")) {
            return None;
        }
        opt_kind(field!(f, RESULT_KEYS, "extra"), Kind::Object)?;
        let call_id = opt_str(field!(f, RESULT_KEYS, "source_call_id"))?;
        if call_id.as_deref().is_some_and(|id| !ids.contains(id)) {
            return None;
        }
        let content = match field!(f, RESULT_KEYS, "content") {
            Some(c) if kind(c) != Kind::Null => {
                content(c)?;
                Some(lazy(c))
            }
            _ => None,
        };
        let mut extra = Extra::new();
        for key in ["source_call_id", "content", "subagent_trajectory_ref"] {
            if f.get(key).is_some_and(|v| kind(v) == Kind::Null) {
                keep(&mut extra, key, f.get(key));
            }
        }
        keep(&mut extra, "extra", field!(f, RESULT_KEYS, "extra"));
        Some(ToolResult { call_id: call_id.map(Cow::into_owned), content, extra, subagent_refs: Vec::new() })
    };
    results.iter().map(result).collect()
}

/// `Some` for a valid content: a string, or content parts as `Validator::content` checks them.
fn content(c: &Split) -> Option<()> {
    match (&c.parts, kind(c)) {
        (_, Kind::String) => Some(()),
        (Parts::Elements(parts), _) => parts.iter().try_for_each(content_part),
        _ => None,
    }
}

/// A text part with its `text`, or an image part with its `source`.
fn content_part(p: &Split) -> Option<()> {
    let f = fields(p, CONTENT_PART_KEYS)?;
    let text = opt_str(field!(f, CONTENT_PART_KEYS, "text"))?.is_some();
    let source = match field!(f, CONTENT_PART_KEYS, "source") {
        Some(s) if kind(s) == Kind::Null => false,
        Some(s) => {
            let f = fields(s, IMAGE_SOURCE_KEYS)?;
            if !MEDIA_TYPES.contains(&&*req_str(field!(f, IMAGE_SOURCE_KEYS, "media_type"))?) {
                return None;
            }
            req_str(field!(f, IMAGE_SOURCE_KEYS, "path"))?;
            true
        }
        None => false,
    };
    match &*req_str(field!(f, CONTENT_PART_KEYS, "type"))? {
        "text" => (text && !source).then_some(()),
        "image" => (source && !text).then_some(()),
        _ => None,
    }
}

/// A step's `metrics` (`prefix` empty) or `final_metrics` (`"total_"`), checked as the
/// validator checks them and mapped as `map_metrics` maps them.
fn metrics(m: &Split, allowed: &'static [&'static str], prefix: &str) -> Option<Metrics> {
    let f = fields(m, allowed)?;
    let mut metrics = Metrics::default();
    for (key, v) in f.present() {
        // `strip_prefix` of the steps' empty prefix still calls `memcmp`: 2 % of ATIF
        // `inspect`'s samples, once for every key of every step's metrics.
        let name = if prefix.is_empty() { Some(key) } else { key.strip_prefix(prefix) };
        let figure = match (name, kind(v)) {
            (Some("extra"), _) | (None, _) => {
                opt_kind(Some(v), Kind::Object)?;
                keep_value(&mut metrics.extra, key, v);
                continue;
            }
            (Some("prompt_token_ids" | "completion_token_ids" | "logprobs"), Kind::Array) => {
                let Parts::Numbers { integers, .. } = v.parts else { return None };
                if !integers && key != "logprobs" {
                    return None;
                }
                keep_value(&mut metrics.extra, key, v);
                continue;
            }
            (_, Kind::Null) => {
                keep_value(&mut metrics.extra, key, v);
                continue;
            }
            (
                Some(figure @ ("prompt_tokens" | "completion_tokens" | "cached_tokens" | "cost_usd" | "steps")),
                Kind::Number,
            ) => figure,
            _ => return None,
        };
        let n = number(v)?;
        match figure {
            "cost_usd" => metrics.cost_usd = n.as_f64(),
            _ if as_int(&n).is_none() => return None,
            "steps" if as_int(&n).is_some_and(|s| s < 0) => return None,
            "cached_tokens" if n.is_u64() => metrics.cached_tokens = n.as_u64(),
            "completion_tokens" if n.is_u64() => metrics.completion_tokens = n.as_u64(),
            "prompt_tokens" if n.is_u64() => metrics.prompt_tokens = n.as_u64(),
            _ => {
                metrics.extra.insert(key.to_string(), n);
            }
        }
    }
    Some(metrics)
}

// ---------------------------------------------------------------------------------
// Reading parts
// ---------------------------------------------------------------------------------

/// An object's members by their place in `allowed`: the last of a repeated name, as
/// serde_json keeps it. `None` for anything but an object split into members, or one with
/// a member `allowed` does not name (the validator reports it).
struct Fields<'s, 'a> {
    allowed: &'static [&'static str],
    values: [Option<&'s Split<'a>>; MAX_FIELDS],
}

fn fields<'s, 'a>(split: &'s Split<'a>, allowed: &'static [&'static str]) -> Option<Fields<'s, 'a>> {
    let Parts::Members(members) = &split.parts else { return None };
    let mut values = [None; MAX_FIELDS];
    for (name, v) in members {
        let i = allowed.iter().position(|a| *a == name.as_ref())?;
        *values.get_mut(i)? = Some(v);
    }
    Some(Fields { allowed, values })
}

impl<'s, 'a> Fields<'s, 'a> {
    fn get(&self, key: &str) -> Option<&'s Split<'a>> {
        let i = self.allowed.iter().position(|a| *a == key)?;
        self.values.get(i).copied().flatten()
    }

    /// The member at place `i` of `allowed`, which is `key` (`field!`).
    fn at(&self, i: usize, key: &str) -> Option<&'s Split<'a>> {
        debug_assert_eq!(self.allowed.get(i), Some(&key), "field! named the wrong table");
        self.values.get(i).copied().flatten()
    }

    /// The members there, in `allowed`'s order.
    fn present(&self) -> impl Iterator<Item = (&'static str, &'s Split<'a>)> + '_ {
        self.allowed.iter().zip(self.values).filter_map(|(k, v)| Some((*k, v?)))
    }
}

/// A JSON value's type, from its first byte (`split` gives values without whitespace).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

fn kind(v: &Split) -> Kind {
    match v.text.as_bytes().first() {
        Some(b'n') => Kind::Null,
        Some(b't' | b'f') => Kind::Bool,
        Some(b'"') => Kind::String,
        Some(b'[') => Kind::Array,
        Some(b'{') => Kind::Object,
        _ => Kind::Number,
    }
}

/// `Some` when `v` is absent, `null` or of `expected` kind.
fn opt_kind(v: Option<&Split>, expected: Kind) -> Option<()> {
    let k = v.map_or(Kind::Null, kind);
    (k == Kind::Null || k == expected).then_some(())
}

/// Whether `v` is there and not `null`.
fn present(v: Option<&Split>) -> bool {
    v.is_some_and(|v| kind(v) != Kind::Null)
}

/// A required string, decoded (`None` for another kind; the reference walk's reading too).
pub(super) fn req_str<'a>(v: Option<&Split<'a>>) -> Option<Cow<'a, str>> {
    json_text::string_text(v?.text)
}

/// An optional string (absent or `null`: `Some(None)`); `None` for another type.
fn opt_str<'a>(v: Option<&Split<'a>>) -> Option<Option<Cow<'a, str>>> {
    match v {
        None => Some(None),
        Some(s) if kind(s) == Kind::Null => Some(None),
        Some(_) => req_str(v).map(Some),
    }
}

/// An optional integer as the validator reads it (absent or `null`: `Some(None)`).
fn opt_int(v: Option<&Split>) -> Option<Option<i128>> {
    match v {
        None => Some(None),
        Some(s) if kind(s) == Kind::Null => Some(None),
        Some(s) if kind(s) == Kind::Number => as_int(&number(s)?).map(Some),
        Some(_) => None,
    }
}

/// A number's `Value`, as serde_json reads it (plain short integers without it).
fn number(v: &Split) -> Option<Value> {
    let t = v.text;
    if t.len() <= 18 && !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse::<u64>().ok().map(Value::from);
    }
    if kind(v) != Kind::Number {
        return None;
    }
    serde_json::from_str(t).ok()
}

/// A value kept as its text.
fn lazy(v: &Split) -> LazyValue {
    let parts = match &v.parts {
        Parts::Canonical(canonical) | Parts::Numbers { canonical: Some(canonical), .. } => {
            Parts::Canonical(canonical.clone())
        }
        Parts::Verbatim => Parts::Verbatim,
        _ => Parts::Whole,
    };
    Node::Split(Split { text: v.text, parts }).into_lazy()
}

/// Puts `v` (when there) into `extra` under `key`, as text.
fn keep(extra: &mut Extra, key: &str, v: Option<&Split>) {
    if let Some(v) = v {
        keep_value(extra, key, v);
    }
}

fn keep_value(extra: &mut Extra, key: &str, v: &Split) {
    extra.insert_lazy(key.to_string(), lazy(v));
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use serde_json::{json, Value};

    use super::{read, Trajectory};
    use crate::atif::AtifReader;
    use crate::input::InputFile;
    use crate::reader::{RawRecord, Reader, RecordResult};
    use crate::rejection::parse_record_keeping;

    const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    /// The canonical bytes of `text` read by `read` (`None` when it declines; the same
    /// whether or not it splits for writing) and by the general reader (`Err` with the
    /// problems' paths when it rejects).
    fn both(text: &str, file: &InputFile) -> (Option<String>, Result<String, Vec<String>>) {
        let raw =
            RawRecord { bytes: text.as_bytes(), sha256: SHA, line: None, document_index: Some(0), written: false };
        let canonical = |t: Trajectory| trajkit_model::canonical::to_canonical_string(&t).unwrap();
        let fast = read(text, &raw, file).map(canonical);
        let written = read(text, &RawRecord { written: true, ..raw }, file).map(canonical);
        assert_eq!(fast, written, "split for writing, the record is the same");
        let general = match parse_record_keeping(text.as_bytes()) {
            Ok(parsed) => AtifReader.read_parsed(parsed, &raw, file),
            Err(p) => RecordResult::Rejected(vec![p]),
        };
        let general = match general {
            RecordResult::Accepted { trajectory, .. } => {
                Ok(trajkit_model::canonical::to_canonical_string(&trajectory).unwrap())
            }
            RecordResult::Rejected(problems) => Err(problems.into_iter().map(|p| p.json_path).collect()),
        };
        (fast, general)
    }

    /// Holds `read` to the general reader on `text`: the same record when it reads it, and
    /// never a record of a document the general reader rejects. True when it read it.
    fn agrees(text: &str, file: &InputFile, what: &str) -> bool {
        match both(text, file) {
            (Some(fast), Ok(general)) => {
                assert_eq!(fast, general, "{what}: the records differ");
                true
            }
            (Some(_), Err(problems)) => panic!("{what}: read a document the general reader rejects: {problems:?}"),
            (None, _) => false,
        }
    }

    fn file_of(path: &Path) -> InputFile {
        let root = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        InputFile { fs_path: path.to_path_buf(), display: path.display().to_string(), root }
    }

    /// The ATIF documents among the real files and the example corpus.
    fn real_documents() -> Vec<(PathBuf, String)> {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut found = Vec::new();
        let mut dirs = vec![base.join("tests/fixtures/real"), base.join("examples/corpus")];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for path in entries.flatten().map(|e| e.path()) {
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "json") {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    if text.contains("\"ATIF-v") && serde_json::from_str::<Value>(&text).is_ok() {
                        found.push((path, text));
                    }
                }
            }
        }
        found.sort();
        found
    }

    /// Every real ATIF document: the same canonical record from both readers wherever `read`
    /// reads it, and `read` reads every one without subagents or a continuation.
    #[test]
    fn real_documents_read_the_same() {
        let docs = real_documents();
        let mut read_here = 0;
        for (path, text) in &docs {
            read_here += usize::from(agrees(text, &file_of(path), &path.display().to_string()));
        }
        assert_eq!((docs.len(), read_here), (26, 20), "documents found, read by `read`");
    }

    /// Values a mutation puts in place of a field's.
    fn replacements() -> Vec<Value> {
        let parts = json!([{"type": "text", "text": "hi"}]);
        vec![
            Value::Null,
            json!(0),
            json!(-1),
            json!(7),
            json!(1.5),
            json!(18446744073709551615u64),
            json!("x"),
            json!(""),
            json!("2026-01-02T03:04:05Z"),
            json!("\u{e9}\n\"q\""),
            json!(true),
            json!([]),
            json!([1, 2, 3, 4, 5, 6, 7, 8, 9]),
            json!([0.5, -1, 2e3]),
            json!({}),
            json!({"is_sidechain": true, "a": [1]}),
            parts,
            json!([{"type": "image", "source": {"media_type": "image/png", "path": "a.png"}}]),
            json!([{"type": "image", "source": {"media_type": "image/bmp", "path": "a.bmp"}}]),
            json!([{"type": "text", "text": "t", "source": {"media_type": "image/png", "path": "a.png"}}]),
        ]
    }

    /// Every way of changing one member of the object at `at` in `doc`: removed, replaced by
    /// each of `replacements`, or joined by an unknown member.
    fn member_mutations(doc: &Value, at: &[PathPart], keys: &[&str]) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        let mut edit = |what: String, change: &dyn Fn(&mut serde_json::Map<String, Value>)| {
            let mut d = doc.clone();
            if let Some(Value::Object(m)) = locate(&mut d, at) {
                change(m);
                out.push((what, d));
            }
        };
        for key in keys {
            edit(format!("{at:?} without {key}"), &|m| {
                m.remove(*key);
            });
            for (i, v) in replacements().into_iter().enumerate() {
                edit(format!("{at:?}.{key} = replacement {i}"), &|m| {
                    m.insert(key.to_string(), v.clone());
                });
            }
        }
        edit(format!("{at:?} with an unknown member"), &|m| {
            m.insert("zz_unknown".into(), json!(1));
        });
        out
    }

    #[derive(Debug, Clone)]
    enum PathPart {
        Key(&'static str),
        Index(usize),
    }

    fn locate<'v>(v: &'v mut Value, at: &[PathPart]) -> Option<&'v mut Value> {
        at.iter().try_fold(v, |v, p| match p {
            PathPart::Key(k) => v.get_mut(*k),
            PathPart::Index(i) => v.get_mut(*i),
        })
    }

    /// The objects of `doc` to change: the root, its agent and final metrics, and the first
    /// user step, agent step, step with metrics and step with tool calls, their first call,
    /// result and metrics.
    fn sites(doc: &Value) -> Vec<(Vec<PathPart>, &'static [&'static str])> {
        use super::super::*;
        use PathPart::{Index, Key};
        let mut sites = vec![
            (vec![], TRAJECTORY_KEYS),
            (vec![Key("agent")], AGENT_KEYS),
            (vec![Key("final_metrics")], FINAL_METRICS_KEYS),
        ];
        let steps = doc.get("steps").and_then(Value::as_array).cloned().unwrap_or_default();
        let first = |f: &dyn Fn(&Value) -> bool| steps.iter().position(f);
        let mut picked: Vec<usize> = [
            first(&|s| s.get("source") == Some(&json!("user"))),
            first(&|s| s.get("source") == Some(&json!("agent"))),
            first(&|s| s.get("metrics").is_some()),
            first(&|s| s.get("tool_calls").is_some()),
        ]
        .into_iter()
        .flatten()
        .collect();
        picked.dedup();
        for i in picked {
            let step = vec![Key("steps"), Index(i)];
            sites.push((step.clone(), STEP_KEYS));
            sites.push(([step.clone(), vec![Key("metrics")]].concat(), METRICS_KEYS));
            sites.push(([step.clone(), vec![Key("tool_calls"), Index(0)]].concat(), TOOL_CALL_KEYS));
            sites.push(([step.clone(), vec![Key("observation")]].concat(), OBSERVATION_KEYS));
            sites.push(([step, vec![Key("observation"), Key("results"), Index(0)]].concat(), RESULT_KEYS));
        }
        sites
    }

    /// Synthetic changes of the real documents (no real file breaks the rules this way):
    /// each member of the objects `read` takes apart removed, replaced by values of every
    /// type, or joined by an unknown one, and repeated names. `read` must give the general
    /// reader's record or decline, and decline every document the general reader rejects.
    #[test]
    fn changed_documents_read_the_same_or_decline() {
        let mut seen = std::collections::HashSet::new();
        let (mut cases, mut read_here) = (0, 0);
        for (path, text) in real_documents() {
            if text.len() > 20_000 || !seen.insert(text.clone()) {
                continue;
            }
            let file = file_of(&path);
            let doc: Value = serde_json::from_str(&text).unwrap();
            let mut changed = Vec::new();
            for (at, keys) in sites(&doc) {
                changed.extend(member_mutations(&doc, &at, keys));
            }
            // A repeated name: serde_json keeps the last one.
            let body = text.trim_start().strip_prefix('{').unwrap();
            changed.push((
                "session_id first".into(),
                serde_json::from_str(&format!("{{\"session_id\": 5, {body}")).unwrap(),
            ));
            for (what, d) in changed {
                let mutated = serde_json::to_string(&d).unwrap();
                read_here += usize::from(agrees(&mutated, &file, &format!("{}: {what}", path.display())));
                cases += 1;
            }
            let repeated = format!("{{{body}").replacen("\"steps\"", "\"session_id\": null, \"steps\"", 1);
            let escaped = text.replacen("\"step_id\"", "\"step\\u005fid\"", 1);
            for (what, changed) in [("a repeated session_id", repeated), ("an escaped name", escaped)] {
                read_here += usize::from(agrees(&changed, &file, what));
                cases += 1;
            }
        }
        assert_eq!((cases, read_here), (18_424, 2_888), "changed documents, read by `read`");
    }
}
