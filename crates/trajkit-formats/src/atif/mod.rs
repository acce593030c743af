//! ATIF (Agent Trajectory Interchange Format, Harbor) v1.0 – v1.7.
//!
//! A record is one trajectory document: a whole `.json` file, or one line of a `.jsonl`
//! file. Every record is first validated against the spec's models and validators (all
//! problems are collected, each naming its JSON path), then mapped to the canonical
//! record. Subagent trajectories (embedded or referenced by `trajectory_path`) and
//! continuation segments (`continued_trajectory_ref`) are read into the same record.
//! See `docs/formats/atif.md` for the rules.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use memchr::memmem;
use serde_json::{Map, Value};
use trajkit_model::canonical::sha256_hex;
use trajkit_model::json_text::{self, Parts, Shape, Split};
use trajkit_model::{
    Agent, Extra, Gap, GapKind, LazyValue, Metrics, Provenance, Role, Step, Subagent, Task, ToolCall, ToolResult,
    Trajectory,
};

use crate::input::{self, InputFile};
use crate::json;
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult, TopOf, TopPeek, PEEK_BYTES};
use crate::rejection::{parse_record, parse_record_keeping, schema, Problem, Reason};
use crate::token_arrays::{Kept, Parsed};
use call_ids::CallIds;

mod call_ids;
mod text;

/// The `schema_version` values the spec defines.
pub const SCHEMA_VERSIONS: [&str; 8] =
    ["ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4", "ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7"];

/// How many referenced files deep (subagent of subagent of ...) the reader follows.
const MAX_FILE_DEPTH: usize = 16;

const TRAJECTORY_KEYS: &[&str] = &[
    "schema_version",
    "session_id",
    "trajectory_id",
    "agent",
    "steps",
    "notes",
    "final_metrics",
    "continued_trajectory_ref",
    "extra",
    "subagent_trajectories",
];
const AGENT_KEYS: &[&str] = &["name", "version", "model_name", "tool_definitions", "extra"];
const STEP_KEYS: &[&str] = &[
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "reasoning_effort",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "is_copied_context",
    "llm_call_count",
    "extra",
];
const AGENT_ONLY: &[&str] = &["model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics"];
const TOOL_CALL_KEYS: &[&str] = &["tool_call_id", "function_name", "arguments", "extra"];
const OBSERVATION_KEYS: &[&str] = &["results"];
const RESULT_KEYS: &[&str] = &["source_call_id", "content", "subagent_trajectory_ref", "extra"];
const REF_KEYS: &[&str] = &["trajectory_id", "session_id", "trajectory_path", "extra"];
const METRICS_KEYS: &[&str] = &[
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost_usd",
    "prompt_token_ids",
    "completion_token_ids",
    "logprobs",
    "extra",
];
const FINAL_METRICS_KEYS: &[&str] = &[
    "total_prompt_tokens",
    "total_completion_tokens",
    "total_cached_tokens",
    "total_cost_usd",
    "total_steps",
    "extra",
];
const CONTENT_PART_KEYS: &[&str] = &["type", "text", "source"];
const IMAGE_SOURCE_KEYS: &[&str] = &["media_type", "path"];
const MEDIA_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Reader for ATIF trajectories.
pub struct AtifReader;

impl Reader for AtifReader {
    fn name(&self) -> &'static str {
        "atif"
    }

    fn max_confidence(&self) -> u8 {
        DECISIVE
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        if let Some(Value::Object(m)) = peek.first_line {
            let layout = line_layout(peek.multi_line_records, peek.name);
            return classify(Keys::of_map(m), layout);
        }
        let start = peek.bytes.iter().position(|b| !b.is_ascii_whitespace())?;
        if peek.bytes.get(start) != Some(&b'{') {
            return None;
        }
        match peek.document() {
            Some(Value::Object(m)) => classify(Keys::of_map(m), Layout::Document),
            Some(_) => None,
            None => {
                // A document larger than the peek, or broken JSON: look at its bytes. A
                // broken document that looks like ATIF is claimed so that its record is
                // rejected with the parse error rather than left unrecognised.
                let large = peek.bytes.len() >= PEEK_BYTES;
                let keys = peek.has_key_anywhere("steps") && peek.has_key_anywhere("agent");
                if keys && has_atif_version(peek.bytes) {
                    Some(Detection {
                        confidence: if large { 85 } else { 60 },
                        reason: if large {
                            "JSON object with an ATIF-v schema_version, agent and steps".into()
                        } else {
                            "ATIF-v schema_version, agent and steps, but not valid JSON".into()
                        },
                        layout: Layout::Document,
                    })
                } else if keys {
                    Some(closest_guess(Layout::Document))
                } else {
                    None
                }
            }
        }
    }

    /// `detect` on the same bytes, without the parse: a first line or a whole document
    /// that is an object, classified by the same keys with the same layout. Declined
    /// before tokenizing when no version can be there. (A document that names another file
    /// is split for its reference walk too: `referenced_files_top`.)
    fn detect_top_level(&self, peek: &TopPeek) -> Option<Detection> {
        if !mentions_atif(peek.bytes) {
            return None;
        }
        // A document naming another file is split as the reference walk reads it, which
        // `referenced_files_top` then walks; one naming none needs its top level only.
        let shape = if names_a_file(peek.bytes) { &REFERENCES } else { &NAMES_NO_FILE };
        let (top, of) = peek.top_as(shape)?;
        let keys = Keys { agent: top.has("agent"), steps: top.has("steps"), version: top.str("schema_version") };
        let layout = match *of {
            TopOf::FirstLine { multi } => line_layout(multi, peek.name),
            TopOf::Document => Layout::Document,
        };
        top.object.then(|| classify(keys, layout)).flatten()
    }

    /// A document with an ATIF version that names no other file, read by `text::read`;
    /// its claim is `detect_top_level`'s (a file named `.jsonl` is left to detection).
    fn claim_and_read(&self, raw: &RawRecord, file: &InputFile, name: &str) -> Option<(Detection, RecordResult)> {
        if line_layout(false, name) != Layout::Document || !mentions_atif(raw.bytes) || names_a_file(raw.bytes) {
            return None;
        }
        let t = text::read(std::str::from_utf8(raw.bytes).ok()?, raw, file)?;
        let keys = Keys { agent: true, steps: true, version: t.provenance.format_version.as_deref() };
        let claim = classify(keys, Layout::Document)?;
        Some((claim, RecordResult::Accepted { trajectory: Box::new(t), rollout_key: None, consumed: Vec::new() }))
    }

    fn referenced_files(&self, file: &InputFile, layout: Layout) -> Vec<PathBuf> {
        match input::read_all(file) {
            Ok(bytes) => references(file, layout, &bytes, None),
            Err(_) => Vec::new(),
        }
    }

    fn referenced_files_in(&self, file: &InputFile, layout: Layout, peek: &Peek) -> Vec<PathBuf> {
        // Only a document that names another file is parsed; one that names none is
        // scanned once here (`references` would scan it again).
        if !names_a_file(peek.bytes) {
            return Vec::new();
        }
        // A parse a detector made is walked; none is made for the walk alone.
        let parsed = match layout {
            Layout::Document => peek.parsed().map(Made::Value),
            Layout::Lines => peek.first_line.map(Made::Value),
        };
        references(file, layout, peek.bytes, parsed)
    }

    /// The walk of the split `detect_top_level` made of a whole document (its shape says
    /// whether the document names a file at all); anything else as `referenced_files_in`.
    fn referenced_files_top(&self, file: &InputFile, layout: Layout, whole: &TopPeek, multi: bool) -> Vec<PathBuf> {
        if let Some((top, _)) = whole.top_read() {
            if top.split_as(&NAMES_NO_FILE).is_some() {
                return Vec::new();
            }
            // The split of a first line stands for the document when nothing but JSON's
            // blanks surrounds it (a form feed after it leaves the document unparsable; a
            // line after it is another record).
            let text = json_text::trim_blanks(whole.bytes);
            let spans = |split: &&Split| std::ptr::eq(text, split.text.as_bytes());
            let document = layout == Layout::Document;
            if let Some(split) = top.split_as(&REFERENCES).filter(|split| document && spans(split)) {
                return references(file, layout, whole.bytes, Some(Made::Split(split)));
            }
        }
        self.referenced_files_in(file, layout, &Peek::new(whole.bytes, whole.name, None, multi))
    }

    /// The common document straight from its text (`text::read`); any other through
    /// the parse, the validator and the loader.
    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        // A document that names another file is declined by `text::read` after its split.
        let source = std::str::from_utf8(raw.bytes).ok().filter(|_| !names_a_file(raw.bytes));
        if let Some(t) = source.and_then(|s| text::read(s, raw, file)) {
            return RecordResult::Accepted { trajectory: Box::new(t), rollout_key: None, consumed: Vec::new() };
        }
        match parse_record_keeping(raw.bytes) {
            Ok(parsed) => self.read_parsed(parsed, raw, file),
            Err(p) => RecordResult::Rejected(vec![p]),
        }
    }

    fn read_parsed(&self, parsed: Parsed, raw: &RawRecord, file: &InputFile) -> RecordResult {
        let Parsed { mut value, mut kept } = parsed;
        hold_token_arrays(&value, &mut kept);
        kept.restore(&mut value);
        let Value::Object(map) = value else {
            return RecordResult::Rejected(vec![schema(
                "$",
                format!("an ATIF trajectory must be a JSON object, got {}", type_name(&value)),
            )]);
        };
        let dir = file_dir(file);
        let mut v =
            Validator { root: &file.root, dir: &dir, dir_real: input::RealDir::default(), problems: Vec::new() };
        v.trajectory(&map, &At::Root("$"), false);
        if !v.problems.is_empty() {
            return RecordResult::Rejected(v.problems);
        }
        let dir_real = v.dir_real;
        let display_dir = Path::new(&file.display).parent().map(Path::to_path_buf).unwrap_or_default();
        let mut loader = Loader {
            root: &file.root,
            origin: (!file.is_stdin()).then_some(file.fs_path.as_path()),
            origin_real: OnceCell::new(),
            stack: Vec::new(),
            consumed: Vec::new(),
            files_built: HashMap::new(),
            problems: Vec::new(),
            kept,
        };
        let src = DocSource {
            display: file.display.clone(),
            display_dir,
            dir,
            dir_real,
            sha: raw.sha256.to_string(),
            line: raw.line,
            document_index: raw.document_index,
            file: None,
            version: None,
        };
        let trajectory = loader.build(map, src, None, 0);
        if !loader.problems.is_empty() {
            return RecordResult::Rejected(loader.problems);
        }
        RecordResult::Accepted { trajectory: Box::new(trajectory), rollout_key: None, consumed: loader.consumed }
    }
}

/// Token arrays that stay text in the record: those of the document's own steps' metrics
/// (ids only when all are integers, as the validator requires), which become the metrics'
/// `extra` as they are. Their markers stand in for them while the validator (which sees an
/// array of numbers) and the loader run; every other token array is put back in place.
fn hold_token_arrays(value: &Value, kept: &mut Kept) {
    let Some(Value::Array(steps)) = value.get("steps").filter(|_| !kept.is_empty()) else { return };
    for metrics in steps.iter().filter_map(|s| s.get("metrics")?.as_object()) {
        for key in TOKEN_KEYS {
            if let Some(v) = metrics.get(key) {
                kept.hold(v, key != "logprobs");
            }
        }
    }
}

/// The step metrics that hold token ids or log probabilities.
const TOKEN_KEYS: [&str; 3] = ["prompt_token_ids", "completion_token_ids", "logprobs"];

/// What detection made of a document's text: its parse, or its split by `REFERENCES`.
#[derive(Clone, Copy)]
enum Made<'x, 'a> {
    Value(&'x Value),
    Split(&'x Split<'a>),
}

/// The files that the ATIF documents in `bytes` reference (subagent trajectories and
/// continuations). `made` is what detection made of the first document, if anything.
fn references(file: &InputFile, layout: Layout, bytes: &[u8], made: Option<Made>) -> Vec<PathBuf> {
    // A split by `REFERENCES` was made only of a document that names a file.
    if !matches!(made, Some(Made::Split(_))) && !names_a_file(bytes) {
        return Vec::new();
    }
    let dir = file_dir(file);
    let me = input::real_file(&file.fs_path).unwrap_or_else(|| file.fs_path.clone());
    let mut walk = RefWalk { root: &file.root, seen: HashSet::from([me.clone()]), out: Vec::new(), edges: Vec::new() };
    let docs: Vec<&[u8]> = match layout {
        Layout::Document => vec![bytes],
        Layout::Lines => bytes.split(|&b| b == b'\n').collect(),
    };
    for (i, doc) in docs.into_iter().enumerate() {
        // A whole document was scanned above; each line of a file is scanned alone.
        if layout == Layout::Lines && !names_a_file(doc) {
            continue;
        }
        match made.filter(|_| i == 0) {
            Some(Made::Value(v)) => walk.document(v, &me, &dir, None, 0),
            Some(Made::Split(split)) => walk.text_split(doc, Some(split), &me, &dir, 0),
            None => walk.text(doc, &me, &dir, 0),
        }
    }
    // Files that reference each other in a cycle: only the first of the cycle (by
    // path) claims the others, so that exactly one of them is read as the head.
    let cycle = walk.reaching(&me);
    if cycle.iter().any(|other| *other < me) {
        return Vec::new();
    }
    walk.out
}

/// True when `bytes` may reference another trajectory file (a subagent's
/// `trajectory_path`, a `continued_trajectory_ref`). One scan for the `trajectory_` both
/// names share, each match then read at its two sides, instead of a scan per name: most
/// documents name no file and were scanned to their end twice.
pub(crate) fn names_a_file(bytes: &[u8]) -> bool {
    const SHARED: &[u8] = b"trajectory_";
    static FINDER: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(SHARED));
    FINDER.find_iter(bytes).any(|at| {
        let after = bytes.get(at + SHARED.len()..).unwrap_or_default();
        let before = bytes.get(..at).unwrap_or_default();
        after.starts_with(b"path") || (after.starts_with(b"ref") && before.ends_with(b"continued_"))
    })
}

/// True when `bytes` holds `ATIF-v` (the start of every ATIF schema version), with a
/// searcher built once rather than on every call.
fn mentions_atif(bytes: &[u8]) -> bool {
    static FINDER: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"ATIF-v"));
    FINDER.find(bytes).is_some()
}

/// The claim of a parsed top-level ATIF version: above any other family's.
const DECISIVE: u8 = 97;

/// What detection reads of a top-level object.
struct Keys<'a> {
    agent: bool,
    steps: bool,
    version: Option<&'a str>,
}

impl<'a> Keys<'a> {
    fn of_map(m: &'a Map<String, Value>) -> Self {
        Keys {
            agent: m.contains_key("agent"),
            steps: m.contains_key("steps"),
            version: m.get("schema_version").and_then(Value::as_str),
        }
    }
}

/// Records one per line in a `.jsonl` file or when more lines follow the first.
fn line_layout(multi: bool, name: &str) -> Layout {
    if multi || name.ends_with(".jsonl") {
        Layout::Lines
    } else {
        Layout::Document
    }
}

fn classify(keys: Keys, layout: Layout) -> Option<Detection> {
    let has_body = keys.agent && keys.steps;
    match keys.version {
        // A parsed top-level ATIF version is the most specific signal there is: it wins over
        // byte-level signals of other families that nested content can trip (trace keys in
        // `extra`, tool names).
        Some(v) if has_body && v.starts_with("ATIF-v") => Some(Detection {
            confidence: DECISIVE,
            reason: format!("JSON object with schema_version {v}, agent and steps"),
            layout,
        }),
        _ if has_body => Some(closest_guess(layout)),
        _ => None,
    }
}

fn closest_guess(layout: Layout) -> Detection {
    Detection { confidence: 30, reason: "JSON object with agent and steps but no ATIF-v schema_version".into(), layout }
}

/// True when the bytes hold `"schema_version"` followed by `: "ATIF-v`.
fn has_atif_version(bytes: &[u8]) -> bool {
    let key = b"\"schema_version\"";
    let mut from = 0;
    while let Some(pos) = find(&bytes[from..], key) {
        let mut i = from + pos + key.len();
        let skip_ws = |i: &mut usize| {
            while bytes.get(*i).is_some_and(|b| b.is_ascii_whitespace()) {
                *i += 1;
            }
        };
        skip_ws(&mut i);
        if bytes.get(i) == Some(&b':') {
            i += 1;
            skip_ws(&mut i);
            if bytes.get(i..).is_some_and(|r| r.starts_with(b"\"ATIF-v")) {
                return true;
            }
        }
        from = from + pos + 1;
    }
    false
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    memchr::memmem::find(hay, needle)
}

/// Directory of the file on disk (the current directory for standard input).
fn file_dir(file: &InputFile) -> PathBuf {
    if file.is_stdin() {
        return file.root.clone();
    }
    match file.fs_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn as_int(v: &Value) -> Option<i128> {
    v.as_i64().map(i128::from).or_else(|| v.as_u64().map(i128::from))
}

fn field(path: &(impl std::fmt::Display + ?Sized), key: &str) -> String {
    format!("{path}.{key}")
}

/// Where the validator is in the document (`$.steps[3].message`), kept as a chain of
/// borrowed parts and written out only for a problem: most documents have none, and
/// formatting every step's paths up front was 5 % of validating them.
#[derive(Clone, Copy)]
enum At<'a> {
    Root(&'a str),
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl<'a> At<'a> {
    fn key(&'a self, key: &'a str) -> At<'a> {
        At::Key(self, key)
    }

    fn idx(&'a self, i: usize) -> At<'a> {
        At::Index(self, i)
    }
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Root(root) => f.write_str(root),
            At::Key(parent, key) => write!(f, "{parent}.{key}"),
            At::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

// ---------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------

/// Where the validator reads an object's fields: the object itself (a B-tree search per
/// field), or its allowed fields found in one walk (`Validator::fields`): the searches of
/// each step's dozen fields were 9 % of ATIF `validate`'s instructions.
trait Lookup<'v>: Copy {
    fn get(self, key: &str) -> Option<&'v Value>;
}

impl<'v> Lookup<'v> for &'v Map<String, Value> {
    fn get(self, key: &str) -> Option<&'v Value> {
        Map::get(self, key)
    }
}

/// The most fields an object the validator walks once may allow.
const MAX_FIELDS: usize = 16;
const _: () = assert!(STEP_KEYS.len() <= MAX_FIELDS && TOOL_CALL_KEYS.len() <= MAX_FIELDS);
const _: () = assert!(METRICS_KEYS.len() <= MAX_FIELDS);

/// An object's allowed fields (by their place in `allowed`), found in one walk.
struct Fields<'v> {
    allowed: &'static [&'static str],
    values: [Option<&'v Value>; MAX_FIELDS],
}

impl<'v> Lookup<'v> for &Fields<'v> {
    fn get(self, key: &str) -> Option<&'v Value> {
        let i = self.allowed.iter().position(|a| *a == key)?;
        self.values.get(i).copied().flatten()
    }
}

/// Collects every problem of one trajectory document (embedded subagents included).
struct Validator<'a> {
    root: &'a Path,
    /// Directory that relative paths in the document are resolved against.
    dir: &'a Path,
    /// `dir`'s real path once a reference needed it (handed on to the loader).
    dir_real: input::RealDir,
    problems: Vec<Problem>,
}

impl Validator<'_> {
    fn push(&mut self, reason: Reason, path: String, message: String) {
        self.problems.push(Problem::new(reason, path, message));
    }

    fn unknown_keys(&mut self, m: &Map<String, Value>, allowed: &[&str], path: &At<'_>, what: &str) {
        for k in m.keys() {
            if !allowed.contains(&k.as_str()) {
                self.unknown(k, path, what);
            }
        }
    }

    fn unknown(&mut self, key: &str, path: &At<'_>, what: &str) {
        self.push(
            Reason::UnknownField,
            field(path, key),
            format!("unknown field '{key}' in {what} (ATIF allows extra keys only inside `extra`)"),
        );
    }

    /// The allowed fields of `m`, found in one walk of its members; every other key is
    /// reported as `unknown_keys` reports it, in the same order.
    fn fields<'v>(
        &mut self,
        m: &'v Map<String, Value>,
        allowed: &'static [&'static str],
        path: &At<'_>,
        what: &str,
    ) -> Fields<'v> {
        let mut values = [None; MAX_FIELDS];
        for (k, v) in m {
            match allowed.iter().position(|a| a == k).and_then(|i| values.get_mut(i)) {
                Some(slot) => *slot = Some(v),
                None => self.unknown(k, path, what),
            }
        }
        Fields { allowed, values }
    }

    fn wrong_type(&mut self, path: impl std::fmt::Display, expected: &str, got: &Value) {
        let msg = format!("expected {expected}, got {}", type_name(got));
        self.push(Reason::SchemaViolation, path.to_string(), msg);
    }

    fn missing(&mut self, path: String) {
        self.push(Reason::SchemaViolation, path, "required field is missing".into());
    }

    /// An optional string (null allowed); returns it when present.
    fn opt_str<'v>(&mut self, m: impl Lookup<'v>, key: &str, path: &At<'_>) -> Option<&'v str> {
        match m.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.wrong_type(field(path, key), "a string", other);
                None
            }
        }
    }

    fn req_str<'v>(&mut self, m: impl Lookup<'v>, key: &str, path: &At<'_>) -> Option<&'v str> {
        match m.get(key) {
            None => {
                self.missing(field(path, key));
                None
            }
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.wrong_type(field(path, key), "a string", other);
                None
            }
        }
    }

    fn opt_int<'v>(&mut self, m: impl Lookup<'v>, key: &str, path: &At<'_>) -> Option<i128> {
        match m.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => match as_int(v) {
                Some(i) => Some(i),
                None => {
                    self.wrong_type(field(path, key), "an integer", v);
                    None
                }
            },
        }
    }

    fn opt_number<'v>(&mut self, m: impl Lookup<'v>, key: &str, path: &At<'_>) {
        match m.get(key) {
            None | Some(Value::Null) | Some(Value::Number(_)) => {}
            Some(other) => self.wrong_type(field(path, key), "a number", other),
        }
    }

    fn opt_bool<'v>(&mut self, m: impl Lookup<'v>, key: &str, path: &At<'_>) {
        match m.get(key) {
            None | Some(Value::Null) | Some(Value::Bool(_)) => {}
            Some(other) => self.wrong_type(field(path, key), "a boolean", other),
        }
    }

    fn opt_object<'v>(&mut self, m: impl Lookup<'v>, key: &str, path: &At<'_>) {
        match m.get(key) {
            None | Some(Value::Null) | Some(Value::Object(_)) => {}
            Some(other) => self.wrong_type(field(path, key), "an object", other),
        }
    }

    fn opt_array<'v>(&mut self, m: impl Lookup<'v>, key: &str, path: &At<'_>) -> Option<&'v Vec<Value>> {
        match m.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a),
            Some(other) => {
                self.wrong_type(field(path, key), "an array", other);
                None
            }
        }
    }

    /// A local path that leaves the input root is an error (never a read); a remote
    /// reference (`s3://...`) is allowed by the spec and becomes a gap when resolved.
    fn escape_check(&mut self, reference: &str, path: &At<'_>) {
        if let Err(e @ crate::FormatError::PathEscapesRoot { .. }) =
            input::resolve_inside_of(self.root, self.dir, &self.dir_real, reference)
        {
            self.push(Reason::PathEscapesRoot, path.to_string(), e.to_string());
        }
    }

    fn trajectory(&mut self, m: &Map<String, Value>, path: &At<'_>, embedded: bool) {
        self.unknown_keys(m, TRAJECTORY_KEYS, path, "trajectory");
        match m.get("schema_version") {
            None if embedded => {}
            None => self.push(
                Reason::SchemaViolation,
                field(path, "schema_version"),
                "required field is missing (one of ATIF-v1.0 .. ATIF-v1.7)".into(),
            ),
            Some(Value::String(s)) => {
                if !SCHEMA_VERSIONS.contains(&s.as_str()) {
                    self.push(
                        Reason::InvalidValue,
                        field(path, "schema_version"),
                        format!("unknown schema_version '{s}' (expected ATIF-v1.0 .. ATIF-v1.7)"),
                    );
                }
            }
            Some(other) => self.wrong_type(field(path, "schema_version"), "a schema_version string", other),
        }
        self.opt_str(m, "session_id", path);
        self.opt_str(m, "trajectory_id", path);
        self.opt_str(m, "notes", path);
        if let Some(r) = self.opt_str(m, "continued_trajectory_ref", path) {
            self.escape_check(r, &path.key("continued_trajectory_ref"));
        }
        self.opt_object(m, "extra", path);
        match m.get("agent") {
            None => self.missing(field(path, "agent")),
            Some(Value::Object(a)) => self.agent(a, &path.key("agent")),
            Some(other) => self.wrong_type(field(path, "agent"), "an object", other),
        }
        match m.get("steps") {
            None => self.missing(field(path, "steps")),
            Some(Value::Array(steps)) => self.steps(steps, &path.key("steps")),
            Some(other) => self.wrong_type(field(path, "steps"), "an array", other),
        }
        match m.get("final_metrics") {
            None | Some(Value::Null) => {}
            Some(Value::Object(fm)) => self.final_metrics(fm, &path.key("final_metrics")),
            Some(other) => self.wrong_type(field(path, "final_metrics"), "an object", other),
        }
        if let Some(subs) = self.opt_array(m, "subagent_trajectories", path) {
            let base = path.key("subagent_trajectories");
            let mut ids: HashSet<&str> = HashSet::new();
            for (i, s) in subs.iter().enumerate() {
                let p = base.idx(i);
                let Value::Object(sm) = s else {
                    self.wrong_type(p, "a trajectory object", s);
                    continue;
                };
                self.trajectory(sm, &p, true);
                match sm.get("trajectory_id") {
                    Some(Value::String(id)) => {
                        if !ids.insert(id) {
                            self.push(
                                Reason::InvalidSubagentId,
                                field(&p, "trajectory_id"),
                                format!("trajectory_id '{id}' is not unique within subagent_trajectories"),
                            );
                        }
                    }
                    None | Some(Value::Null) => self.push(
                        Reason::InvalidSubagentId,
                        field(&p, "trajectory_id"),
                        "trajectory_id is required for embedded subagents".into(),
                    ),
                    Some(_) => {} // wrong type already reported
                }
            }
        }
    }

    fn agent(&mut self, a: &Map<String, Value>, path: &At<'_>) {
        self.unknown_keys(a, AGENT_KEYS, path, "agent");
        self.req_str(a, "name", path);
        self.req_str(a, "version", path);
        self.opt_str(a, "model_name", path);
        self.opt_object(a, "extra", path);
        if let Some(tools) = self.opt_array(a, "tool_definitions", path) {
            let base = path.key("tool_definitions");
            for (i, t) in tools.iter().enumerate() {
                if !t.is_object() {
                    self.wrong_type(base.idx(i), "an object", t);
                }
            }
        }
    }

    fn steps(&mut self, steps: &[Value], path: &At<'_>) {
        if steps.is_empty() {
            self.push(Reason::SchemaViolation, path.to_string(), "a trajectory needs at least one step".into());
            return;
        }
        let mut first_bad: Option<(usize, i128)> = None;
        let mut bad = 0usize;
        for (i, s) in steps.iter().enumerate() {
            let p = path.idx(i);
            let Value::Object(sm) = s else {
                self.wrong_type(p, "a step object", s);
                continue;
            };
            if let Some(id) = self.step(sm, &p) {
                if id != i as i128 + 1 {
                    bad += 1;
                    first_bad.get_or_insert((i, id));
                }
            }
        }
        if let Some((i, id)) = first_bad {
            self.push(
                Reason::NonSequentialStepId,
                field(&path.idx(i), "step_id"),
                format!(
                    "expected step_id {} (sequential from 1), got {id}; {bad} of {} steps out of sequence",
                    i + 1,
                    steps.len()
                ),
            );
        }
    }

    /// Validates a step; returns its step_id when it is a valid integer.
    fn step(&mut self, m: &Map<String, Value>, path: &At<'_>) -> Option<i128> {
        let m = &self.fields(m, STEP_KEYS, path, "step");
        let step_id = match m.get("step_id") {
            None => {
                self.missing(field(path, "step_id"));
                None
            }
            Some(v) => match as_int(v) {
                Some(i) if i >= 1 => Some(i),
                Some(i) => {
                    self.push(Reason::InvalidValue, field(path, "step_id"), format!("step_id must be >= 1, got {i}"));
                    None
                }
                None => {
                    self.wrong_type(field(path, "step_id"), "an integer", v);
                    None
                }
            },
        };
        if let Some(ts) = self.opt_str(m, "timestamp", path) {
            if !valid_timestamp(ts) {
                self.push(
                    Reason::InvalidTimestamp,
                    field(path, "timestamp"),
                    format!("'{ts}' is not an ISO 8601 date or date-time"),
                );
            }
        }
        let source = match self.req_str(m, "source", path) {
            Some(s @ ("system" | "user" | "agent")) => Some(s),
            Some(s) => {
                self.push(
                    Reason::InvalidValue,
                    field(path, "source"),
                    format!("source must be 'system', 'user' or 'agent', got '{s}'"),
                );
                None
            }
            None => None,
        };
        self.opt_str(m, "model_name", path);
        match m.get("reasoning_effort") {
            None | Some(Value::Null | Value::String(_) | Value::Number(_)) => {}
            Some(other) => self.wrong_type(field(path, "reasoning_effort"), "a string or number", other),
        }
        self.opt_str(m, "reasoning_content", path);
        match m.get("message") {
            None => self.missing(field(path, "message")),
            Some(v) => self.content(v, &path.key("message")),
        }
        let mut call_ids = CallIds::new();
        if let Some(calls) = self.opt_array(m, "tool_calls", path) {
            let base = path.key("tool_calls");
            for (i, c) in calls.iter().enumerate() {
                let p = base.idx(i);
                match c {
                    Value::Object(cm) => {
                        if let Some(id) = self.tool_call(cm, &p) {
                            call_ids.insert(id);
                        }
                    }
                    other => self.wrong_type(p, "a tool call object", other),
                }
            }
        }
        match m.get("observation") {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => self.observation(o, &path.key("observation"), &call_ids),
            Some(other) => self.wrong_type(field(path, "observation"), "an object", other),
        }
        match m.get("metrics") {
            None | Some(Value::Null) => {}
            Some(Value::Object(mm)) => self.metrics(mm, &path.key("metrics")),
            Some(other) => self.wrong_type(field(path, "metrics"), "an object", other),
        }
        self.opt_bool(m, "is_copied_context", path);
        let llm_calls = self.opt_int(m, "llm_call_count", path);
        if let Some(n) = llm_calls.filter(|n| *n < 0) {
            self.push(
                Reason::InvalidValue,
                field(path, "llm_call_count"),
                format!("llm_call_count must be >= 0, got {n}"),
            );
        }
        self.opt_object(m, "extra", path);
        let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
        if let Some(src) = source.filter(|s| *s != "agent") {
            for f in AGENT_ONLY {
                if present(f) {
                    self.push(
                        Reason::AgentOnlyField,
                        field(path, f),
                        format!("field '{f}' is only allowed when source is 'agent', but source is '{src}'"),
                    );
                }
            }
        }
        if source == Some("agent") && llm_calls == Some(0) {
            for f in ["metrics", "reasoning_content"] {
                if present(f) {
                    self.push(
                        Reason::FieldForbiddenWithoutLlmCall,
                        field(path, f),
                        format!(
                            "field '{f}' must be absent when llm_call_count is 0 (deterministic dispatch on an agent step)"
                        ),
                    );
                }
            }
        }
        step_id
    }

    /// Validates a tool call; returns its id when valid.
    fn tool_call<'v>(&mut self, m: &'v Map<String, Value>, path: &At<'_>) -> Option<&'v str> {
        let m = &self.fields(m, TOOL_CALL_KEYS, path, "tool call");
        let id = self.req_str(m, "tool_call_id", path);
        self.req_str(m, "function_name", path);
        match m.get("arguments") {
            None => self.missing(field(path, "arguments")),
            Some(Value::Object(_)) => {}
            Some(other) => self.wrong_type(field(path, "arguments"), "a JSON object", other),
        }
        self.opt_object(m, "extra", path);
        id
    }

    fn observation(&mut self, o: &Map<String, Value>, path: &At<'_>, call_ids: &CallIds) {
        self.unknown_keys(o, OBSERVATION_KEYS, path, "observation");
        let results = match o.get("results") {
            None => {
                self.missing(field(path, "results"));
                return;
            }
            Some(Value::Array(r)) => r,
            Some(other) => {
                self.wrong_type(field(path, "results"), "an array", other);
                return;
            }
        };
        let base = path.key("results");
        for (i, r) in results.iter().enumerate() {
            let p = base.idx(i);
            let Value::Object(rm) = r else {
                self.wrong_type(p, "an observation result object", r);
                continue;
            };
            self.unknown_keys(rm, RESULT_KEYS, &p, "observation result");
            if let Some(id) = self.opt_str(rm, "source_call_id", &p) {
                if !call_ids.contains(id) {
                    self.push(
                        Reason::UnknownSourceCallId,
                        field(&p, "source_call_id"),
                        format!("source_call_id '{id}' names no tool_call_id of this step"),
                    );
                }
            }
            match rm.get("content") {
                None | Some(Value::Null) => {}
                Some(c) => self.content(c, &p.key("content")),
            }
            self.opt_object(rm, "extra", &p);
            if let Some(refs) = self.opt_array(rm, "subagent_trajectory_ref", &p) {
                let rbase = p.key("subagent_trajectory_ref");
                for (j, r) in refs.iter().enumerate() {
                    let rp = rbase.idx(j);
                    match r {
                        Value::Object(refm) => self.subagent_ref(refm, &rp),
                        other => self.wrong_type(rp, "a subagent reference object", other),
                    }
                }
            }
        }
    }

    fn subagent_ref(&mut self, m: &Map<String, Value>, path: &At<'_>) {
        self.unknown_keys(m, REF_KEYS, path, "subagent reference");
        self.opt_str(m, "trajectory_id", path);
        self.opt_str(m, "session_id", path);
        let p = self.opt_str(m, "trajectory_path", path);
        self.opt_object(m, "extra", path);
        let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
        if !present("trajectory_id") && !present("trajectory_path") {
            self.push(
                Reason::UnresolvableSubagentRef,
                path.to_string(),
                "a subagent reference needs trajectory_id or trajectory_path".into(),
            );
        }
        if let Some(p) = p {
            self.escape_check(p, &path.key("trajectory_path"));
        }
    }

    /// A message / result content: a string or an array of content parts.
    fn content(&mut self, v: &Value, path: &At<'_>) {
        match v {
            Value::String(_) => {}
            Value::Array(parts) => {
                for (i, part) in parts.iter().enumerate() {
                    let p = path.idx(i);
                    match part {
                        Value::Object(pm) => self.content_part(pm, &p),
                        other => self.wrong_type(p, "a content part object", other),
                    }
                }
            }
            other => self.wrong_type(path.to_string(), "a string or an array of content parts", other),
        }
    }

    fn content_part(&mut self, m: &Map<String, Value>, path: &At<'_>) {
        self.unknown_keys(m, CONTENT_PART_KEYS, path, "content part");
        let kind = match self.req_str(m, "type", path) {
            Some(t @ ("text" | "image")) => Some(t),
            Some(t) => {
                self.push(
                    Reason::InvalidValue,
                    field(path, "type"),
                    format!("content part type must be 'text' or 'image', got '{t}'"),
                );
                None
            }
            None => None,
        };
        let text = self.opt_str(m, "text", path).is_some();
        let source = match m.get("source") {
            None | Some(Value::Null) => false,
            Some(Value::Object(s)) => {
                self.image_source(s, &path.key("source"));
                true
            }
            Some(other) => {
                self.wrong_type(field(path, "source"), "an image source object", other);
                true
            }
        };
        let rule = |ok: bool, key: &str, msg: &str, this: &mut Self| {
            if !ok {
                this.push(Reason::SchemaViolation, field(path, key), msg.to_string());
            }
        };
        match kind {
            Some("text") => {
                rule(text, "text", "'text' is required when type is 'text'", self);
                rule(!source, "source", "'source' is not allowed when type is 'text'", self);
            }
            Some("image") => {
                rule(source, "source", "'source' is required when type is 'image'", self);
                rule(!text, "text", "'text' is not allowed when type is 'image'", self);
            }
            _ => {}
        }
    }

    fn image_source(&mut self, m: &Map<String, Value>, path: &At<'_>) {
        self.unknown_keys(m, IMAGE_SOURCE_KEYS, path, "image source");
        if let Some(mt) = self.req_str(m, "media_type", path) {
            if !MEDIA_TYPES.contains(&mt) {
                self.push(
                    Reason::InvalidValue,
                    field(path, "media_type"),
                    format!("unsupported media_type '{mt}' (image/jpeg, image/png, image/gif, image/webp)"),
                );
            }
        }
        self.req_str(m, "path", path);
    }

    fn metrics(&mut self, m: &Map<String, Value>, path: &At<'_>) {
        let m = &self.fields(m, METRICS_KEYS, path, "metrics");
        for k in ["prompt_tokens", "completion_tokens", "cached_tokens"] {
            self.opt_int(m, k, path);
        }
        self.opt_number(m, "cost_usd", path);
        for k in ["prompt_token_ids", "completion_token_ids"] {
            if let Some(a) = self.opt_array(m, k, path) {
                let base = path.key(k);
                for (i, x) in a.iter().enumerate() {
                    if as_int(x).is_none() {
                        self.wrong_type(base.idx(i), "an integer", x);
                    }
                }
            }
        }
        if let Some(a) = self.opt_array(m, "logprobs", path) {
            let base = path.key("logprobs");
            for (i, x) in a.iter().enumerate() {
                if !x.is_number() {
                    self.wrong_type(base.idx(i), "a number", x);
                }
            }
        }
        self.opt_object(m, "extra", path);
    }

    fn final_metrics(&mut self, m: &Map<String, Value>, path: &At<'_>) {
        self.unknown_keys(m, FINAL_METRICS_KEYS, path, "final_metrics");
        for k in ["total_prompt_tokens", "total_completion_tokens", "total_cached_tokens"] {
            self.opt_int(m, k, path);
        }
        self.opt_number(m, "total_cost_usd", path);
        if let Some(n) = self.opt_int(m, "total_steps", path).filter(|n| *n < 0) {
            self.push(Reason::InvalidValue, field(path, "total_steps"), format!("total_steps must be >= 0, got {n}"));
        }
        self.opt_object(m, "extra", path);
    }
}

/// ISO 8601 as the reference accepts it in its common forms: `YYYY-MM-DD`, optionally
/// followed by `T` or a space and `hh[:mm[:ss[(.|,)fraction]]]`, then optionally `Z`
/// or an offset `±hh`, `±hhmm`, `±hh:mm`.
pub fn valid_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| -> Option<u32> {
        let part = b.get(from..from + n)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0')))
    };
    let (Some(year), Some(month), Some(day)) = (digits(0, 4), digits(5, 2), digits(8, 2)) else {
        return false;
    };
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return false;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if year == 0 || day == 0 || day > days {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    if !matches!(b.get(10), Some(b'T' | b' ')) {
        return false;
    }
    let mut i = 11;
    match digits(i, 2) {
        Some(h) if h < 24 => i += 2,
        _ => return false,
    }
    let mut has_seconds = false;
    if b.get(i) == Some(&b':') {
        match digits(i + 1, 2) {
            Some(m) if m < 60 => i += 3,
            _ => return false,
        }
        if b.get(i) == Some(&b':') {
            match digits(i + 1, 2) {
                Some(sec) if sec < 60 => i += 3,
                _ => return false,
            }
            has_seconds = true;
        }
    }
    if has_seconds && matches!(b.get(i), Some(b'.' | b',')) {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        None => true,
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let mut j = i + 1;
            match digits(j, 2) {
                Some(h) if h < 24 => j += 2,
                _ => return false,
            }
            if j == b.len() {
                return true;
            }
            if b.get(j) == Some(&b':') {
                j += 1;
            }
            matches!(digits(j, 2), Some(m) if m < 60) && j + 2 == b.len()
        }
        Some(_) => false,
    }
}

// ---------------------------------------------------------------------------------
// Mapping
// ---------------------------------------------------------------------------------

/// Where a trajectory document came from.
#[derive(Clone)]
struct DocSource {
    /// Display path of the file that holds the document.
    display: String,
    /// Display directory (for display paths of referenced files).
    display_dir: PathBuf,
    /// Directory on disk that relative references resolve against.
    dir: PathBuf,
    /// `dir`'s real path, once a reference needed it.
    dir_real: input::RealDir,
    /// SHA-256 of the document's bytes.
    sha: String,
    line: Option<u64>,
    document_index: Option<u64>,
    /// Canonical path of the file when the document is a whole referenced file.
    file: Option<PathBuf>,
    /// schema_version of the enclosing document (an embedded subagent may omit its own).
    version: Option<String>,
}

/// Embedded subagents of one document: `(trajectory_id, document)` in array order.
type Scope = Vec<(String, Value)>;

/// Reads referenced files and builds records; remembers what it consumed.
struct Loader<'a> {
    root: &'a Path,
    /// The record's own file, resolved (`origin_real`) only when a reference is followed:
    /// `canonicalize` costs a system call per path component, and most documents refer to
    /// no other file.
    origin: Option<&'a Path>,
    origin_real: OnceCell<Option<PathBuf>>,
    /// Files being built below the record's own (cycle guard).
    stack: Vec<PathBuf>,
    consumed: Vec<PathBuf>,
    /// Files already built into this record, with their record id: a file reached twice
    /// (a diamond of references) is built once.
    files_built: HashMap<PathBuf, String>,
    /// Rule violations in referenced ATIF files: they reject the whole record.
    problems: Vec<Problem>,
    /// The record's own token arrays, held as text (`hold_token_arrays`).
    kept: Kept,
}

/// Why a referenced file did not load.
enum LoadError {
    /// Missing, unreadable, remote, a cycle or not ATIF at all: a gap.
    Gap(String),
    /// An ATIF file that breaks the rules: the record that includes it is rejected.
    Invalid(Vec<Problem>),
}

/// A problem of a referenced file, with the file named in its JSON path.
fn located(display: &str, p: Problem) -> Problem {
    Problem::new(p.reason, format!("{display}:{}", p.json_path), p.message)
}

/// True for a JSON object that declares an ATIF schema version (the detection rule).
fn looks_atif(v: &Value) -> bool {
    v.get("schema_version").and_then(Value::as_str).is_some_and(|s| s.starts_with("ATIF-v"))
        && v.get("agent").is_some()
        && v.get("steps").is_some()
}

/// What a subagent record is known by within one record (for de-duplication).
#[derive(PartialEq, Eq, Hash, Clone)]
enum SubKey {
    Embedded(usize, String),
}

impl Loader<'_> {
    /// Reads, parses and validates a referenced file.
    fn load_file(
        &mut self,
        path: &Path,
        display: String,
        display_dir: PathBuf,
    ) -> Result<(Map<String, Value>, DocSource), LoadError> {
        let file = InputFile { fs_path: path.to_path_buf(), display: display.clone(), root: self.root.to_path_buf() };
        let bytes = input::read_all(&file).map_err(|e| LoadError::Gap(e.to_string()))?;
        let value = match parse_record(&bytes) {
            Ok(v) if looks_atif(&v) => v,
            Ok(_) => return Err(LoadError::Gap(format!("{display}: not an ATIF trajectory"))),
            Err(p) if has_atif_version(&bytes) => return Err(LoadError::Invalid(vec![located(&display, p)])),
            Err(p) => return Err(LoadError::Gap(format!("{display}: {}", p.message))),
        };
        let Value::Object(map) = value else {
            return Err(LoadError::Gap(format!("{display}: not an ATIF trajectory")));
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut v = Validator { root: self.root, dir: &dir, dir_real: input::RealDir::default(), problems: Vec::new() };
        v.trajectory(&map, &At::Root("$"), false);
        if !v.problems.is_empty() {
            return Err(LoadError::Invalid(v.problems.into_iter().map(|p| located(&display, p)).collect()));
        }
        let dir_real = v.dir_real;
        self.consumed.push(path.to_path_buf());
        Ok((
            map,
            DocSource {
                display,
                display_dir,
                dir,
                dir_real,
                sha: sha256_hex(&bytes),
                line: None,
                document_index: Some(0),
                file: Some(path.to_path_buf()),
                version: None,
            },
        ))
    }

    /// The record's own file, resolved on first use.
    fn origin_real(&self) -> Option<&PathBuf> {
        self.origin_real.get_or_init(|| self.origin.and_then(input::real_file)).as_ref()
    }

    /// Resolves `reference` against a document's directory: the path on disk and its
    /// display form. Errors are gap details.
    fn locate(&self, src: &DocSource, reference: &str) -> Result<(PathBuf, String), LoadError> {
        self.locate_path(src, reference).map_err(LoadError::Gap)
    }

    fn locate_path(&self, src: &DocSource, reference: &str) -> Result<(PathBuf, String), String> {
        let display = src.display_dir.join(reference).display().to_string();
        // The path is already real when it exists (`resolve_inside` canonicalizes it).
        let real = input::resolve_file_inside_of(self.root, &src.dir, &src.dir_real, reference)
            .map_err(|e| format!("{display}: {e}"))?
            .ok_or_else(|| format!("{display}: file not found"))?;
        if self.stack.contains(&real) || self.origin_real().is_some_and(|me| *me == real) {
            return Err(format!("{display}: reference cycle"));
        }
        Ok((real, display))
    }

    /// Builds one trajectory (with its continuation chain and subagents).
    fn build(
        &mut self,
        head: Map<String, Value>,
        src: DocSource,
        root_scope: Option<&Scope>,
        depth: usize,
    ) -> Trajectory {
        let mut gaps: Vec<Gap> = Vec::new();
        let pushed = self.stack.len();
        if let Some(f) = &src.file {
            if !self.stack.contains(f) {
                self.stack.push(f.clone());
            }
        }

        // Follow the continuation chain.
        let mut segments: Vec<(Map<String, Value>, DocSource)> = vec![(head, src)];
        while let Some((last, last_src)) = segments.last() {
            let Some(reference) = last.get("continued_trajectory_ref").and_then(Value::as_str).map(str::to_string)
            else {
                break;
            };
            let located = if depth >= MAX_FILE_DEPTH {
                Err(LoadError::Gap(format!("{reference}: references nested too deep")))
            } else {
                self.locate(last_src, &reference)
            };
            let loaded = located.and_then(|(path, display)| {
                let dd = Path::new(&display).parent().map(Path::to_path_buf).unwrap_or_default();
                self.load_file(&path, display, dd)
            });
            match loaded {
                Ok((map, s)) => {
                    if let Some(f) = &s.file {
                        self.stack.push(f.clone());
                    }
                    segments.push((map, s));
                }
                Err(LoadError::Gap(detail)) => {
                    gaps.push(Gap::at(GapKind::UnresolvedContinuation, None, detail));
                    break;
                }
                Err(LoadError::Invalid(problems)) => {
                    self.problems.extend(problems);
                    break;
                }
            }
        }

        let mut extra = Extra::new();
        let mut steps: Vec<Step> = Vec::new();
        let mut subagents: Vec<Subagent> = Vec::new();
        let mut built: Vec<(SubKey, String)> = Vec::new();
        let mut metrics: Option<Metrics> = None;
        let mut head_final: Option<Value> = None;
        let mut continuations: Vec<Value> = Vec::new();
        let mut record_src: Option<DocSource> = None;
        let mut agent = Agent::default();
        let mut tools = None;
        let mut session_id = None;
        let mut trajectory_id = None;
        let mut format_version = None;

        for (seg_idx, (mut m, mut s)) in segments.into_iter().enumerate() {
            let seg_steps = match m.remove("steps") {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            };
            let scope: Scope = match m.remove("subagent_trajectories") {
                Some(Value::Array(a)) => a
                    .into_iter()
                    .filter_map(|t| {
                        let id = t.get("trajectory_id")?.as_str()?.to_string();
                        Some((id, t))
                    })
                    .collect(),
                Some(other) => {
                    m.insert("subagent_trajectories".into(), other);
                    Vec::new()
                }
                None => Vec::new(),
            };
            let version =
                m.get("schema_version").and_then(Value::as_str).map(str::to_string).or_else(|| s.version.clone());
            s.version = version.clone();
            let fm = json::take(&mut m, "final_metrics");
            if seg_idx == 0 {
                format_version = version;
                trajectory_id = json::take_str(&mut m, "trajectory_id");
                session_id = json::take_str(&mut m, "session_id");
                m.remove("schema_version");
                if let Some(a) = json::take(&mut m, "agent") {
                    let (ag, t, rest) = map_agent(a);
                    agent = ag;
                    tools = t;
                    if let Some(rest) = rest {
                        extra.insert("agent".into(), rest);
                    }
                }
                if let Some(f) = &fm {
                    metrics = Some(map_metrics(f.clone(), "total_", &mut self.kept));
                }
                head_final = fm;
                extra.extend(json::into_extra(m));
            } else {
                if let Some(f) = &fm {
                    metrics = Some(map_metrics(f.clone(), "total_", &mut self.kept));
                }
                let mut entry = m;
                if let Some(f) = fm {
                    entry.insert("final_metrics".into(), f);
                }
                entry.insert("path".into(), Value::String(s.display.clone()));
                entry.insert("sha256".into(), Value::String(s.sha.clone()));
                continuations.push(Value::Object(entry));
            }

            let own_root: &Scope = root_scope.unwrap_or(&scope);
            for step_v in seg_steps {
                let index = steps.len();
                let mut step = map_step(step_v, &mut self.kept);
                for result in step.tool_results.iter_mut() {
                    let refs = match result.extra.get("subagent_trajectory_ref") {
                        Some(Value::Array(a)) => a.clone(),
                        _ => continue,
                    };
                    for r in refs {
                        let outcome = self.resolve_ref(&r, seg_idx, &s, &scope, own_root, &mut built, depth);
                        match outcome {
                            RefOutcome::Known(id) => result.subagent_refs.push(id),
                            RefOutcome::New(id, t) => {
                                result.subagent_refs.push(id);
                                subagents.push(Subagent {
                                    spawned_by_step: Some(index),
                                    spawned_by_tool_call: result.call_id.clone(),
                                    trajectory: t,
                                });
                            }
                            RefOutcome::Unresolved(detail) => {
                                gaps.push(Gap::at(GapKind::UnresolvedSubagentRef, Some(index), detail))
                            }
                        }
                    }
                }
                steps.push(step);
            }
            // Embedded subagents that no reference named are still part of the run.
            for (id, t) in &scope {
                let key = SubKey::Embedded(seg_idx, id.clone());
                if built.iter().any(|(k, _)| *k == key) {
                    continue;
                }
                let child = self.build_embedded(t, &s, own_root, depth);
                built.push((key, id.clone()));
                subagents.push(Subagent {
                    spawned_by_step: None,
                    spawned_by_tool_call: None,
                    trajectory: Box::new(child),
                });
            }
            if seg_idx == 0 {
                record_src = Some(s);
            }
        }
        self.stack.truncate(pushed);

        if !continuations.is_empty() {
            extra.insert("continuations".into(), Value::Array(continuations));
            // The head's own totals are an earlier snapshot of the run: keep them verbatim.
            if let Some(f) = head_final {
                extra.insert("final_metrics".into(), f);
            }
        }
        gaps.extend(call_gaps(&steps));
        gaps.sort_by_key(|g| g.step.unwrap_or(usize::MAX));

        let src = record_src.unwrap_or(DocSource {
            display: String::new(),
            display_dir: PathBuf::new(),
            dir: PathBuf::new(),
            dir_real: input::RealDir::default(),
            sha: String::new(),
            line: None,
            document_index: None,
            file: None,
            version: None,
        });
        let short = src.sha.get(..16).unwrap_or(&src.sha).to_string();
        let id = trajectory_id.clone().unwrap_or_else(|| format!("atif-{short}"));
        let task = task_of(&steps, &short);
        let provenance = Provenance {
            document_index: src.document_index,
            format_version,
            line: src.line,
            ..Provenance::new("atif", src.display, src.sha)
        };
        Trajectory {
            agent,
            extra,
            gaps,
            metrics,
            session_id,
            steps,
            subagents,
            tools,
            ..Trajectory::new(id, provenance, task)
        }
    }

    fn build_embedded(&mut self, t: &Value, parent: &DocSource, root_scope: &Scope, depth: usize) -> Trajectory {
        let bytes = serde_json::to_vec(t).unwrap_or_default();
        let src = DocSource { sha: sha256_hex(&bytes), file: None, ..parent.clone() };
        let map = match t {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        self.build(map, src, Some(root_scope), depth)
    }

    #[allow(clippy::too_many_arguments)]
    fn resolve_ref(
        &mut self,
        r: &Value,
        seg_idx: usize,
        src: &DocSource,
        scope: &Scope,
        root_scope: &Scope,
        built: &mut Vec<(SubKey, String)>,
        depth: usize,
    ) -> RefOutcome {
        let id = r.get("trajectory_id").and_then(Value::as_str);
        let path = r.get("trajectory_path").and_then(Value::as_str);
        if let Some(id) = id {
            let key = SubKey::Embedded(seg_idx, id.to_string());
            if built.iter().any(|(k, _)| *k == key) {
                return RefOutcome::Known(id.to_string());
            }
            if let Some((_, t)) = scope.iter().find(|(i, _)| i == id) {
                let child = self.build_embedded(t, src, root_scope, depth);
                built.push((key, id.to_string()));
                return RefOutcome::New(id.to_string(), Box::new(child));
            }
            if !std::ptr::eq(scope, root_scope) && root_scope.iter().any(|(i, _)| i == id) {
                // A sibling embedded in the root document: it is a subagent of the root.
                return RefOutcome::Known(id.to_string());
            }
        }
        let Some(path) = path else {
            return RefOutcome::Unresolved(format!(
                "trajectory_id '{}' matches no embedded subagent",
                id.unwrap_or_default()
            ));
        };
        if depth >= MAX_FILE_DEPTH {
            return RefOutcome::Unresolved(format!("{path}: references nested too deep"));
        }
        let (real, display) = match self.locate_path(src, path) {
            Ok(x) => x,
            Err(detail) => return RefOutcome::Unresolved(detail),
        };
        if let Some(known) = self.files_built.get(&real) {
            return RefOutcome::Known(known.clone());
        }
        let dd = Path::new(&display).parent().map(Path::to_path_buf).unwrap_or_default();
        match self.load_file(&real, display, dd) {
            Ok((map, s)) => {
                let child = self.build(map, s, None, depth + 1);
                self.files_built.insert(real, child.id.clone());
                RefOutcome::New(child.id.clone(), Box::new(child))
            }
            Err(LoadError::Gap(detail)) => RefOutcome::Unresolved(detail),
            Err(LoadError::Invalid(problems)) => {
                self.problems.extend(problems);
                RefOutcome::Unresolved("invalid ATIF file".into())
            }
        }
    }
}

enum RefOutcome {
    /// Already a subagent of the record (or of the root record): its id.
    Known(String),
    /// Newly built.
    New(String, Box<Trajectory>),
    /// Could not be resolved: gap detail.
    Unresolved(String),
}

fn map_agent(a: Value) -> (Agent, Option<Vec<LazyValue>>, Option<Value>) {
    let Value::Object(mut m) = a else {
        return (Agent::default(), None, Some(a));
    };
    let agent = Agent {
        model: json::take_str(&mut m, "model_name"),
        name: json::take_str(&mut m, "name"),
        version: json::take_str(&mut m, "version"),
    };
    let tools = match json::take(&mut m, "tool_definitions") {
        Some(Value::Array(t)) => Some(LazyValue::from_values(t)),
        Some(other) => {
            m.insert("tool_definitions".into(), other);
            None
        }
        None => None,
    };
    let rest = (!m.is_empty()).then_some(Value::Object(m));
    (agent, tools, rest)
}

/// A step's `metrics` (`prefix` empty) or a trajectory's `final_metrics` (`"total_"`): the
/// same four figures under prefixed names; anything else stays in `extra` (token arrays
/// held by `hold_token_arrays` as their text).
fn map_metrics(v: Value, prefix: &str, kept: &mut Kept) -> Metrics {
    let Value::Object(m) = v else {
        return Metrics::default();
    };
    let mut metrics = Metrics::default();
    metrics.extra = json::split_fields(m, |key, v| {
        match (key.strip_prefix(prefix), v.as_u64()) {
            (Some("cached_tokens"), Some(n)) => metrics.cached_tokens = Some(n),
            (Some("completion_tokens"), Some(n)) => metrics.completion_tokens = Some(n),
            (Some("prompt_tokens"), Some(n)) => metrics.prompt_tokens = Some(n),
            (Some("cost_usd"), _) if v.is_number() => metrics.cost_usd = v.as_f64(),
            _ => return Some(v),
        }
        None
    });
    if !kept.is_empty() {
        for key in TOKEN_KEYS {
            if let Some(text) = metrics.extra.get(key).and_then(|v| kept.take(v)) {
                metrics.extra.insert_lazy(key.to_string(), text);
            }
        }
    }
    metrics
}

fn map_step(v: Value, kept: &mut Kept) -> Step {
    let Value::Object(m) = v else {
        return Step::new(Role::System, Some(v));
    };
    let role = match m.get("source").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("agent") => Role::Assistant,
        _ => Role::System,
    };
    let mut step = Step::new(role, None);
    let mut observation = None;
    // A value of another type than the field's (or a `null`) stays in `extra`.
    let mut extra = json::split_fields(m, |key, v| {
        match (key, v) {
            ("source", Value::String(_)) => {}
            ("message", v) if !v.is_null() => step.content = Some(v.into()),
            ("step_id", v) if !v.is_null() => step.source_id = Some(v),
            ("timestamp", Value::String(s)) => step.timestamp = Some(s),
            ("model_name", Value::String(s)) => step.model = Some(s),
            ("reasoning_content", Value::String(s)) => step.reasoning = Some(s),
            ("is_copied_context", Value::Bool(b)) => step.copied_context = b,
            ("tool_calls", Value::Array(calls)) => step.tool_calls = calls.into_iter().map(map_call).collect(),
            ("metrics", v) if !v.is_null() => step.metrics = Some(map_metrics(v, "", kept)),
            ("observation", Value::Object(o)) => observation = Some(o),
            (_, v) => return Some(v),
        }
        None
    });
    if let Some(mut o) = observation {
        if let Some(Value::Array(results)) = json::take(&mut o, "results") {
            step.tool_results = results.into_iter().map(map_result).collect();
        }
        if !o.is_empty() {
            extra.insert("observation".into(), Value::Object(o));
        }
    }
    step.subagent = extra.get("extra").and_then(|e| e.get("is_sidechain")).and_then(Value::as_bool).unwrap_or(false);
    step.extra = extra;
    step
}

fn map_call(v: Value) -> ToolCall {
    let mut call = ToolCall {
        arguments: Value::Object(Map::new()).into(),
        arguments_invalid: false,
        extra: Extra::new(),
        id: None,
        name: String::new(),
        text_embedded: false,
    };
    let Value::Object(m) = v else {
        call.arguments = v.into();
        return call;
    };
    let extra = json::split_fields(m, |key, v| {
        match (key, v) {
            ("arguments", v) if !v.is_null() => call.arguments = v.into(),
            ("tool_call_id", Value::String(s)) => call.id = Some(s),
            ("function_name", Value::String(s)) => call.name = s,
            (_, v) => return Some(v),
        }
        None
    });
    call.extra = extra;
    call
}

fn map_result(v: Value) -> ToolResult {
    let mut result = ToolResult { call_id: None, content: None, extra: Extra::new(), subagent_refs: Vec::new() };
    let Value::Object(m) = v else {
        result.content = Some(v.into());
        return result;
    };
    let extra = json::split_fields(m, |key, v| {
        match (key, v) {
            ("source_call_id", Value::String(s)) => result.call_id = Some(s),
            ("content", v) if !v.is_null() => result.content = Some(v.into()),
            (_, v) => return Some(v),
        }
        None
    });
    result.extra = extra;
    result
}

/// Unanswered and duplicate tool calls. Results are linked by id only, never by
/// position: a call is unanswered when no result of its step names it, counting only as
/// many such calls as exceed the step's results that name no call.
fn call_gaps(steps: &[Step]) -> Vec<Gap> {
    let mut gaps = Vec::new();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, s) in steps.iter().enumerate() {
        let named: CallIds = s.tool_results.iter().filter_map(|r| r.call_id.as_deref()).collect();
        let anonymous = s.tool_results.iter().filter(|r| r.call_id.is_none()).count();
        let open: Vec<&str> = s
            .tool_calls
            .iter()
            .filter(|c| !c.id.as_deref().is_some_and(|id| named.contains(id)))
            .map(|c| c.id.as_deref().unwrap_or(""))
            .collect();
        if open.len() > anonymous {
            if anonymous == 0 {
                for id in &open {
                    gaps.push(Gap::at(GapKind::UnansweredToolCall, Some(i), format!("tool call '{id}' has no result")));
                }
            } else {
                let detail = format!(
                    "{} tool calls ({}) have no result naming them and the step has only {anonymous} result(s) without source_call_id",
                    open.len(),
                    open.join(", ")
                );
                for _ in anonymous..open.len() {
                    gaps.push(Gap::at(GapKind::UnansweredToolCall, Some(i), detail.clone()));
                }
            }
        }
        if s.copied_context {
            continue;
        }
        for c in &s.tool_calls {
            let Some(id) = c.id.as_deref() else { continue };
            if let Some(first) = seen.get(id) {
                gaps.push(Gap::at(
                    GapKind::DuplicateToolCallId,
                    Some(i),
                    format!("tool_call_id '{id}' already used at step index {first}"),
                ));
            } else {
                seen.insert(id, i);
            }
        }
    }
    gaps
}

/// Task of a record: the first user step's text hashed, or the record's own hash.
fn task_of(steps: &[Step], short_sha: &str) -> Task {
    let instruction = steps
        .iter()
        .find(|s| s.role == Role::User)
        .and_then(|s| s.content.as_ref())
        .and_then(json::step_content_text)
        .filter(|t| !t.trim().is_empty());
    Task::keyed(None, None, instruction, None, short_sha)
}

// ---------------------------------------------------------------------------------
// Referenced files (for the driver's `part_of`)
// ---------------------------------------------------------------------------------

/// Walks documents for the files a read would consume, without validating them.
struct RefWalk<'a> {
    root: &'a Path,
    seen: HashSet<PathBuf>,
    out: Vec<PathBuf>,
    /// `(referencing file, referenced file)` for every existing target met.
    edges: Vec<(PathBuf, PathBuf)>,
}

impl RefWalk<'_> {
    /// Files of the walk from which `target` can be reached (its cycle, when it has one).
    fn reaching(&self, target: &Path) -> HashSet<PathBuf> {
        let mut found: HashSet<PathBuf> = HashSet::new();
        let mut todo = vec![target.to_path_buf()];
        while let Some(t) = todo.pop() {
            for (from, to) in &self.edges {
                if *to == t && from.as_path() != target && found.insert(from.clone()) {
                    todo.push(from.clone());
                }
            }
        }
        found
    }

    fn document(&mut self, v: &Value, from: &Path, dir: &Path, root_ids: Option<&HashSet<String>>, depth: usize) {
        let Value::Object(m) = v else { return };
        let embedded: Vec<&Value> =
            m.get("subagent_trajectories").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
        let own_ids: HashSet<String> = embedded
            .iter()
            .filter_map(|t| t.get("trajectory_id").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        let root_ids = root_ids.unwrap_or(&own_ids);
        let dir_real = input::RealDir::default();
        let steps = m.get("steps").and_then(Value::as_array);
        for step in steps.into_iter().flatten() {
            let results = step.get("observation").and_then(|o| o.get("results")).and_then(Value::as_array);
            for r in results.into_iter().flatten() {
                let refs = r.get("subagent_trajectory_ref").and_then(Value::as_array);
                for reference in refs.into_iter().flatten() {
                    let id = reference.get("trajectory_id").and_then(Value::as_str);
                    if id.is_some_and(|id| own_ids.contains(id) || root_ids.contains(id)) {
                        continue;
                    }
                    if let Some(p) = reference.get("trajectory_path").and_then(Value::as_str) {
                        self.file(from, (dir, &dir_real), p, depth);
                    }
                }
            }
        }
        for t in embedded {
            self.document(t, from, dir, Some(root_ids), depth);
        }
        if let Some(p) = m.get("continued_trajectory_ref").and_then(Value::as_str) {
            self.file(from, (dir, &dir_real), p, depth);
        }
    }

    /// Follows `reference`, written in a document of `dir` (with its real path once known).
    fn file(&mut self, from: &Path, (dir, dir_real): (&Path, &input::RealDir), reference: &str, depth: usize) {
        if depth >= MAX_FILE_DEPTH {
            return;
        }
        // The path is already real when it exists (`resolve_inside` canonicalizes it).
        let Ok(Some(real)) = input::resolve_file_inside_of(self.root, dir, dir_real, reference) else {
            return;
        };
        if self.seen.contains(&real) {
            self.edges.push((from.to_path_buf(), real));
            return;
        }
        let f = InputFile { fs_path: real.clone(), display: real.display().to_string(), root: self.root.to_path_buf() };
        let Ok(bytes) = input::read_all(&f) else {
            return;
        };
        // Only ATIF files are claimed: anything else is left to its own reader.
        if !has_atif_version(&bytes) {
            return;
        }
        self.edges.push((from.to_path_buf(), real.clone()));
        self.seen.insert(real.clone());
        self.out.push(real.clone());
        if !names_a_file(&bytes) {
            return;
        }
        let sub_dir = real.parent().map(Path::to_path_buf).unwrap_or_default();
        self.text(&bytes, &real, &sub_dir, depth + 1);
    }

    /// `document` of the JSON text `bytes`, walked from `json_text::split`'s parts of the
    /// members it reads (`REFERENCES`): a quarter of the benchmark's ATIF files name
    /// subagent files, and building each one's `Value` for these few members was 2 % of its
    /// `build`. Text the split refuses (it is stricter than serde_json on depth and lone
    /// surrogates) or leaves a member of the walk whole (at its depth limit) is parsed into a
    /// `Value` as before.
    fn text(&mut self, bytes: &[u8], from: &Path, dir: &Path, depth: usize) {
        let split = std::str::from_utf8(bytes).ok().and_then(|t| json_text::split(t, &REFERENCES));
        self.text_split(bytes, split.as_ref(), from, dir, depth);
    }

    /// `text` with the split of `bytes` by `REFERENCES` made already (`None`: refused).
    fn text_split(&mut self, bytes: &[u8], split: Option<&Split>, from: &Path, dir: &Path, depth: usize) {
        // A reference at the deepest level the check allows is not taken apart.
        match split.filter(|doc| json_text::fully_split(doc, &REFERENCES)) {
            Some(doc) => self.split_document(doc, from, dir, None, depth),
            None => {
                if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
                    self.document(&v, from, dir, None, depth);
                }
            }
        }
    }

    /// `document` on a split document: the same members read the same way (the last of a
    /// repeated name, as in a `Value`; a member of another kind than the walk reads skipped).
    fn split_document(
        &mut self,
        doc: &Split,
        from: &Path,
        dir: &Path,
        root_ids: Option<&HashSet<String>>,
        depth: usize,
    ) {
        let Parts::Members(_) = &doc.parts else { return };
        let embedded: &[Split] = match member(doc, "subagent_trajectories").map(|v| &v.parts) {
            Some(Parts::Elements(items)) => items,
            _ => &[],
        };
        let own_ids: HashSet<String> =
            embedded.iter().filter_map(|t| text::req_str(member(t, "trajectory_id"))).map(Cow::into_owned).collect();
        let root_ids = root_ids.unwrap_or(&own_ids);
        let dir_real = input::RealDir::default();
        for step in elements(member(doc, "steps")) {
            let results = member(step, "observation").and_then(|o| member(o, "results"));
            for r in elements(results) {
                for reference in elements(member(r, "subagent_trajectory_ref")) {
                    let id = text::req_str(member(reference, "trajectory_id"));
                    if id.is_some_and(|id| own_ids.contains(id.as_ref()) || root_ids.contains(id.as_ref())) {
                        continue;
                    }
                    if let Some(p) = text::req_str(member(reference, "trajectory_path")) {
                        self.file(from, (dir, &dir_real), &p, depth);
                    }
                }
            }
        }
        for t in embedded {
            self.split_document(t, from, dir, Some(root_ids), depth);
        }
        if let Some(p) = text::req_str(member(doc, "continued_trajectory_ref")) {
            self.file(from, (dir, &dir_real), &p, depth);
        }
    }
}

/// The top level `detect_top_level` reads of a document that names no other file (its
/// own static, so that a split made with it says so).
static NAMES_NO_FILE: Shape<'static> = Shape::Object(&[]);

/// What the reference walk reads of a document, for `json_text::split`: embedded
/// subagents (documents of the same shape), and the subagent references in the steps'
/// observation results. Other members are checked and kept as text.
static REFERENCES: Shape<'static> = Shape::Object(&[
    ("subagent_trajectories", Shape::Array(&REFERENCES)),
    (
        "steps",
        Shape::Array(&Shape::Object(&[(
            "observation",
            Shape::Object(&[(
                "results",
                Shape::Array(&Shape::Object(&[("subagent_trajectory_ref", Shape::Array(&Shape::Object(&[])))])),
            )]),
        )])),
    ),
]);

/// The value of the last member named `name` of a split object (`None` for anything else).
fn member<'s, 'a>(v: &'s Split<'a>, name: &str) -> Option<&'s Split<'a>> {
    match &v.parts {
        Parts::Members(members) => members.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v),
        _ => None,
    }
}

/// The elements of a split array (none for anything else).
fn elements<'s, 'a>(v: Option<&'s Split<'a>>) -> &'s [Split<'a>] {
    match v.map(|v| &v.parts) {
        Some(Parts::Elements(items)) => items,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::valid_timestamp;

    /// Synthetic (no real file breaks these rules): the problems of a step, a tool call and
    /// step metrics, found by one walk of each object, in the order the checks report them.
    #[test]
    fn step_problems_in_order() {
        use super::{AtifReader, Reader, RecordResult};
        let doc = br#"{"schema_version": "ATIF-v1.6", "session_id": "s", "agent": {"name": "a", "version": "1"},
            "steps": [
              {"step_id": 1, "source": "user", "message": "hi", "zeta": 1, "alpha": 2, "metrics": {"prompt_tokens": "x"}},
              {"step_id": 0, "source": "agent", "message": "x", "timestamp": "bad",
               "tool_calls": [{"tool_call_id": 5, "function_name": "f", "arguments": [], "bogus": 1}],
               "metrics": {"prompt_token_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9.5], "logprobs": [1, 2, 3, 4, 5, 6, 7, 8, "x"],
                           "weird": 1, "cost_usd": "c"},
               "llm_call_count": 0, "reasoning_content": "r", "is_copied_context": "no", "extra": 3},
              {"source": "system", "message": null, "model_name": 5, "reasoning_effort": [], "observation": {"results": []}}]}"#;
        let root = std::env::temp_dir();
        let file = crate::InputFile { fs_path: root.join("t.json"), display: "t.json".into(), root };
        let raw =
            crate::reader::RawRecord { bytes: doc, sha256: "00", line: None, document_index: Some(0), written: false };
        let RecordResult::Rejected(problems) = AtifReader.read_record(&raw, &file) else {
            panic!("the document breaks the rules")
        };
        let paths: Vec<&str> = problems.iter().map(|p| p.json_path.as_str()).collect();
        let expected = [
            "$.steps[0].alpha",
            "$.steps[0].zeta",
            "$.steps[0].metrics.prompt_tokens",
            "$.steps[0].metrics",
            "$.steps[1].step_id",
            "$.steps[1].timestamp",
            "$.steps[1].tool_calls[0].bogus",
            "$.steps[1].tool_calls[0].tool_call_id",
            "$.steps[1].tool_calls[0].arguments",
            "$.steps[1].metrics.weird",
            "$.steps[1].metrics.cost_usd",
            "$.steps[1].metrics.prompt_token_ids[8]",
            "$.steps[1].metrics.logprobs[8]",
            "$.steps[1].is_copied_context",
            "$.steps[1].extra",
            "$.steps[1].metrics",
            "$.steps[1].reasoning_content",
            "$.steps[2].step_id",
            "$.steps[2].model_name",
            "$.steps[2].reasoning_effort",
            "$.steps[2].message",
            "$.steps[2].model_name",
            "$.steps[2].reasoning_effort",
        ];
        assert_eq!(paths, expected);
    }

    /// Real (Terminus 2's timeout trajectory): the steps' token arrays reach the record as
    /// their source text, and read back as serde_json reads the file.
    #[test]
    fn token_arrays_stay_text() {
        use super::{AtifReader, Reader, RecordResult, TOKEN_KEYS};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real/atif");
        let path = root.join("terminus2-timeout-v1.6.trajectory.json");
        let bytes = std::fs::read(&path).expect("fixture");
        let file = crate::InputFile { fs_path: path, display: "t.json".into(), root };
        let raw = crate::reader::RawRecord {
            bytes: &bytes,
            sha256: "00",
            line: None,
            document_index: Some(0),
            written: false,
        };
        let RecordResult::Accepted { trajectory, .. } = AtifReader.read_record(&raw, &file) else {
            panic!("the fixture is accepted")
        };
        let source: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        let mut texts = 0;
        for (i, step) in trajectory.steps.iter().enumerate() {
            let Some(metrics) = &step.metrics else { continue };
            for key in TOKEN_KEYS {
                let Some(array) = metrics.extra.clone().remove_lazy(key) else { continue };
                assert!(array.text().is_some(), "step {i} {key}");
                assert_eq!(array.value(), &source["steps"][i]["metrics"][key], "step {i} {key}");
                texts += 1;
            }
        }
        assert_eq!(texts, 9);
    }

    #[test]
    fn timestamps() {
        for ok in [
            "2025-10-16",
            "2025-10-16T14:30:00Z",
            "2025-10-16T14:30:00.993Z",
            "2025-10-16 14:30:00",
            "2025-10-16T14:30:00.123456+00:00",
            "2025-10-16T14:30",
            "2025-10-16T14Z",
            "2025-10-16T14:30:00,5+0530",
            "2025-10-16T14:30:00-05",
            "2024-02-29T00:00:00",
        ] {
            assert!(valid_timestamp(ok), "{ok}");
        }
        for bad in [
            "",
            "yesterday",
            "2025-13-01",
            "2025-02-29",
            "2025-10-16T24:00:00",
            "2025-10-16T14:30:60",
            "2025-10-16T14:30:00z",
            "2025-10-16T14:30:00ZZ",
            "2025-10-16T14:30:00Z+00:00",
            " 2025-10-16",
            "2025-10-16T14:30:00.",
            "2025-10-16T14:30:00+25:00",
            "1760625000",
        ] {
            assert!(!valid_timestamp(bad), "{bad}");
        }
    }
}

#[cfg(test)]
mod names_a_file_tests {
    use super::names_a_file;

    /// What `names_a_file` answered before it scanned once: a search for each name.
    fn by_two_scans(bytes: &[u8]) -> bool {
        let has = |name: &[u8]| memchr::memmem::find(bytes, name).is_some();
        has(b"trajectory_path") || has(b"continued_trajectory_ref")
    }

    /// Synthetic (the edges of the shared-prefix match, which no real file shows): the
    /// one scan answers as a search for each name did, at either end of the text, for a
    /// name cut short, for the prefix repeated, and for other `trajectory_` keys.
    #[test]
    fn one_scan_answers_as_two() {
        let cases: [(&[u8], bool); 14] = [
            (b"", false),
            (b"trajectory_", false),
            (b"trajectory_path", true),
            (b"xtrajectory_pat", false),
            (b"continued_trajectory_ref", true),
            (b"ontinued_trajectory_ref", false),
            (b"continued_trajectory_re", false),
            (b"trajectory_trajectory_path", true),
            (b"continued_trajectory_trajectory_ref", false),
            (br#"{"subagent_trajectory_ref": [{"session_id": "s"}]}"#, false),
            (br#"{"subagent_trajectory_ref": [{"trajectory_path": "a.json"}]}"#, true),
            (br#"{"continued_trajectory_ref": "b.json", "steps": []}"#, true),
            (br#"{"x": "continued_ trajectory_ref", "y": "trajectory_ path"}"#, false),
            ("\u{e9}continued_trajectory_ref\u{e9}".as_bytes(), true),
        ];
        for (bytes, want) in cases {
            let text = String::from_utf8_lossy(bytes);
            assert_eq!(names_a_file(bytes), want, "{text}");
            assert_eq!(by_two_scans(bytes), want, "{text}");
        }
    }

    /// Every real fixture (223 files, 5 of them naming another): the one scan answers as
    /// the two did.
    #[test]
    fn real_fixtures_answer_as_before() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
        let mut stack = vec![root];
        let (mut files, mut naming) = (0, 0);
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixture directory").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Ok(bytes) = std::fs::read(&path) {
                    assert_eq!(names_a_file(&bytes), by_two_scans(&bytes), "{}", path.display());
                    files += 1;
                    naming += usize::from(names_a_file(&bytes));
                }
            }
        }
        assert_eq!((files, naming), (223, 5), "files read, files naming another");
    }
}

#[cfg(test)]
mod reference_walk_tests {
    use std::path::{Path, PathBuf};

    use super::{references, AtifReader, InputFile, Layout, Made};
    use crate::reader::{Reader, TopPeek};

    /// The files `bytes` (a document of `file`) references, walked from its `Value`, from
    /// its split text, and from the split top-level detection made; all must agree.
    fn both(file: &InputFile, bytes: &[u8]) -> Vec<PathBuf> {
        let value: serde_json::Value = serde_json::from_slice(bytes).expect("JSON");
        let from_value = references(file, Layout::Document, bytes, Some(Made::Value(&value)));
        let from_text = references(file, Layout::Document, bytes, None);
        assert_eq!(from_text, from_value, "{}", file.display);
        assert_eq!(from_top(file, bytes), from_value, "{}", file.display);
        from_text
    }

    /// The files found from what `detect_top_level` read of `bytes`.
    fn from_top(file: &InputFile, bytes: &[u8]) -> Vec<PathBuf> {
        let top = TopPeek::new(bytes, "x.json");
        AtifReader.detect_top_level(&top);
        AtifReader.referenced_files_top(file, Layout::Document, &top, false)
    }

    fn input(root: &Path, path: PathBuf) -> InputFile {
        InputFile { display: path.display().to_string(), fs_path: path, root: root.to_path_buf() }
    }

    /// Every real file that names another: the walk from the split text finds the files
    /// the walk from the `Value` finds, in the same order.
    #[test]
    fn real_files_are_walked_alike_from_text() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real/atif");
        let root = root.canonicalize().expect("fixtures");
        let dirs = ["terminus2-linear-history-v1.7", "terminus2-context-summarization-v1.7"];
        let mut found = Vec::new();
        for dir in dirs {
            let path = root.join(dir).join("trajectory.json");
            let bytes = std::fs::read(&path).expect("fixture");
            found.push(both(&input(&root, path), &bytes).len());
        }
        let path = root.join("terminus2-context-summarization-v1.4.trajectory.json");
        found.push(both(&input(&root, path.clone()), &std::fs::read(&path).expect("fixture")).len());
        assert_eq!(found, [1, 3, 0]);
    }

    /// Synthetic (no real file repeats a member or gives a reference of another kind): the
    /// last of a repeated name is read, members of other kinds are skipped, an embedded
    /// subagent's own id is not followed, and a referenced file's own references are.
    #[test]
    fn quirks_are_walked_alike_from_text() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("temp dir");
        let atif = |name: &str, extra: &str| {
            let text = format!(r#"{{"schema_version": "ATIF-v1.6", "session_id": "{name}", "steps": []{extra}}}"#);
            std::fs::write(root.join(name), text).expect("written");
        };
        atif("a.json", "");
        atif("b.json", r#", "continued_trajectory_ref": "c.json""#);
        atif("c.json", "");
        atif("d.json", "");
        let reference = |id: &str, path: &str| format!(r#"{{"trajectory_id": "{id}", "trajectory_path": {path}}}"#);
        let head = format!(
            r#"{{"schema_version": "ATIF-v1.6", "session_id": "h",
              "subagent_trajectories": [{{"trajectory_id": "own", "steps": [{{"observation": {{"results":
                [{{"subagent_trajectory_ref": [{}]}}]}}}}]}}, 7],
              "steps": [{{"observation": {{"results": [{{"subagent_trajectory_ref": [{}, {}, {}, {}]}}, 3]}}}},
                        {{"observation": {{"results": {{"subagent_trajectory_ref": [{}]}}}}}}, "x"],
              "continued_trajectory_ref": 5, "continued_trajectory_ref": "b.json"}}"#,
            reference("x", r#""d.json""#),
            reference("own", r#""a.json""#),
            reference("s", r#""a.json""#),
            reference("t", "9"),
            r#"{"trajectory_path": "x.json", "trajectory_path": "a\u002ejson"}"#,
            reference("u", r#""d.json""#),
        );
        let path = root.join("head.json");
        std::fs::write(&path, &head).expect("written");
        let found = both(&input(&root, path), head.as_bytes());
        assert_eq!(found, [root.join("a.json"), root.join("d.json"), root.join("b.json"), root.join("c.json")]);
        // A reference object at the deepest level the split's check allows (46 embedded
        // subagents down: the 100th container), which the split keeps whole: still followed.
        for levels in [45, 46] {
            let mut doc = format!(
                r#"{{"steps": [{{"observation": {{"results": [{{"subagent_trajectory_ref": [{}]}}]}}}}]}}"#,
                reference("deep", r#""a.json""#)
            );
            for _ in 0..levels {
                doc = format!(r#"{{"subagent_trajectories": [{doc}]}}"#);
            }
            let deep = doc.replacen('{', r#"{"schema_version": "ATIF-v1.6", "#, 1);
            let path = root.join("deep.json");
            std::fs::write(&path, &deep).expect("written");
            assert_eq!(both(&input(&root, path), deep.as_bytes()), [root.join("a.json")], "{levels} levels");
        }
        // A first line split whole by detection, with a form feed after it: the document
        // does not parse, so it names nothing, as its text walked alone says.
        let named = r#"{"schema_version": "ATIF-v1.6", "continued_trajectory_ref": "a.json"}"#;
        let path = root.join("fed.json");
        assert_eq!(from_top(&input(&root, path.clone()), format!("{named}\n").as_bytes()), [root.join("a.json")]);
        let fed = format!("{named}\n\x0c");
        assert_eq!(from_top(&input(&root, path.clone()), fed.as_bytes()), Vec::<PathBuf>::new());
        assert_eq!(references(&input(&root, path), Layout::Document, fed.as_bytes(), None), Vec::<PathBuf>::new());
    }
}
