//! The one shape every format reader has: detect, then read records one at a time.

use std::path::PathBuf;
use std::sync::OnceLock;

use trajkit_model::{Provenance, Task, Trajectory};

use crate::input::InputFile;
use crate::rejection::Problem;

/// How a file holds its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One record per line (JSON Lines).
    Lines,
    /// The whole file is one document.
    Document,
}

/// The first bytes of a (decompressed) file, for cheap detection.
pub struct Peek<'a> {
    /// Up to `PEEK_BYTES` of the file.
    pub bytes: &'a [u8],
    /// File name without compression extension (`x.jsonl.gz` -> `x.jsonl`).
    pub name: &'a str,
    /// The first non-blank line parsed as JSON, when it parses within the peek. Token
    /// arrays may stand as markers (`token_arrays::Parsed`): detection reads keys and kinds
    /// of values, never their numbers.
    pub first_line: Option<&'a serde_json::Value>,
    /// True when the peek holds a second non-blank line after a complete first line.
    pub multi_line_records: bool,
    /// The whole peek parsed as one value, once, on the first detector that asks (token
    /// arrays held back as `first_line`'s are).
    document: OnceLock<Option<crate::token_arrays::Parsed>>,
}

/// Where a `json::TopLevel` of a peek was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopOf {
    /// The first non-blank line, which parses; `multi` when another non-blank line follows
    /// (`Peek::multi_line_records`).
    FirstLine { multi: bool },
    /// The whole peek, one document whose first line does not parse alone.
    Document,
}

/// A peek for `Reader::detect_top_level`: its bytes, and their top level read on the first
/// reader that asks (after its own checks on the bytes, so a file no such reader can claim
/// is not tokenized at all).
pub struct TopPeek<'a> {
    pub bytes: &'a [u8],
    pub name: &'a str,
    top: OnceLock<Option<(crate::json::TopLevel<'a>, TopOf)>>,
}

impl<'a> TopPeek<'a> {
    pub fn new(bytes: &'a [u8], name: &'a str) -> Self {
        TopPeek { bytes, name, top: OnceLock::new() }
    }

    /// The top level as detection reads the peek: its first non-blank line, or the whole
    /// peek when that line does not parse (tokenized, not built). `None` when neither
    /// parses, or when the peek starts with a blank JSON does not allow (a form feed), which
    /// `Peek` and `json::top_level` would treat apart.
    pub fn top(&self) -> Option<&(crate::json::TopLevel<'a>, TopOf)> {
        self.top_as(&crate::json::TOP_MEMBERS)
    }

    /// `top`, with the value taken apart as `shape` says (`json::top_level_as`) when this
    /// is the first ask; a later ask gets the first's, whatever its shape.
    pub fn top_as(
        &self,
        shape: &'static trajkit_model::json_text::Shape<'static>,
    ) -> Option<&(crate::json::TopLevel<'a>, TopOf)> {
        self.top.get_or_init(|| top_of(self.bytes, shape)).as_ref()
    }

    /// The top level a reader's ask has read already, if one has.
    pub fn top_read(&self) -> Option<&(crate::json::TopLevel<'a>, TopOf)> {
        self.top.get().and_then(Option::as_ref)
    }
}

/// The peek's first non-blank line (to its newline, or all the rest), and whether another
/// non-blank line follows it: what detection parses as `Peek::first_line`.
pub(crate) fn first_line_span(peek: &[u8]) -> (&[u8], bool) {
    let start = peek.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(peek.len());
    let rest = &peek[start..];
    match memchr::memchr(b'\n', rest) {
        Some(nl) => (&rest[..nl], rest[nl..].iter().any(|b| !b.is_ascii_whitespace())),
        None => (rest, false),
    }
}

fn top_of<'a>(
    peek: &'a [u8],
    shape: &'static trajkit_model::json_text::Shape<'static>,
) -> Option<(crate::json::TopLevel<'a>, TopOf)> {
    // A blank JSON does not allow (a form feed) is skipped by `first_line_span`, not by the
    // parse of the whole peek: such a peek is detected as usual.
    if !peek.iter().take_while(|b| b.is_ascii_whitespace()).all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        return None;
    }
    let (line, more) = first_line_span(peek);
    match crate::json::top_level_as(line, shape) {
        Some(top) => Some((top, TopOf::FirstLine { multi: more })),
        None => Some((crate::json::top_level_as(peek, shape)?, TopOf::Document)),
    }
}

/// Bytes read for detection.
pub const PEEK_BYTES: usize = 1 << 20;

impl<'a> Peek<'a> {
    /// A peek of `bytes` (the start of a file named `name`) whose first line parsed as
    /// `first_line`.
    pub fn new(
        bytes: &'a [u8],
        name: &'a str,
        first_line: Option<&'a serde_json::Value>,
        multi_line_records: bool,
    ) -> Self {
        Peek { bytes, name, first_line, multi_line_records, document: OnceLock::new() }
    }

    /// The peek parsed as one JSON value (`None` when it is not one complete, valid value:
    /// JSON Lines, a document cut by the peek, broken JSON). Parsed at most once per file,
    /// however many detectors ask; a one-line file reuses `first_line`.
    pub fn document(&self) -> Option<&serde_json::Value> {
        if self.multi_line_records {
            return None;
        }
        if self.first_line_is_document() {
            return self.first_line;
        }
        self.document.get_or_init(|| crate::json::parse_text_keeping(self.bytes)).as_ref().map(|p| &p.value)
    }

    /// `document`, when a detector has parsed it already (or the first line is it): a
    /// caller that can do with less than a parse asks this first.
    pub fn parsed(&self) -> Option<&serde_json::Value> {
        if self.first_line_is_document() {
            return self.first_line;
        }
        self.document.get().and_then(Option::as_ref).map(|p| &p.value)
    }

    /// True when the parsed first line is the parse of all the peek's bytes: nothing but
    /// JSON whitespace around it (the line splitting also skips form feeds, JSON does not).
    pub fn first_line_is_document(&self) -> bool {
        if self.first_line.is_none() || self.multi_line_records {
            return false;
        }
        let json_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        let bytes = self.bytes;
        let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |nl| start + nl);
        bytes[..start].iter().all(json_space) && bytes[end..].iter().all(json_space)
    }

    /// The document parsed by `document` from the peek's bytes (not a parsed first line),
    /// if a detector asked for it.
    pub fn into_document(self) -> Option<crate::token_arrays::Parsed> {
        self.document.into_inner().flatten()
    }

    /// Keys of the top-level object: the parsed document's when the peek holds all of it,
    /// else the members scanned from the bytes before the peek's end. `None` when the peek
    /// does not start with an object.
    pub fn object_keys(&self) -> Option<Vec<String>> {
        match self.document() {
            Some(serde_json::Value::Object(m)) => Some(m.keys().cloned().collect()),
            Some(_) => None,
            None => Some(crate::json::object_members(self.bytes)?.into_iter().map(|m| m.key).collect()),
        }
    }

    /// True when `needle` occurs in the peeked bytes: for text markers (`<function=`,
    /// `Action Input:`) and literal values; a key is looked for with `has_key_anywhere`.
    pub fn contains(&self, needle: &str) -> bool {
        memfind(self.bytes, needle.as_bytes())
    }

    /// True when `name` is a key at any depth of the peeked bytes: `"name"` with its opening
    /// quote not escaped, then a colon after optional whitespace. A string value that spells
    /// the name (`"from": "observation"`) is not a key, nor is a quoted name inside a string.
    pub fn has_key_anywhere(&self, name: &str) -> bool {
        let quoted = format!("\"{name}\"");
        memchr::memmem::find_iter(self.bytes, quoted.as_bytes()).any(|at| {
            let escaped = self.bytes[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1;
            let after = &self.bytes[at + quoted.len()..];
            !escaped && after.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')) == Some(&b':')
        })
    }

    /// True when the peek starts a JSON array and every one of `keys` is a key somewhere in
    /// it (`has_key_anywhere`): how a reader claims a document that is an array of its rows.
    pub fn is_array_with_keys(&self, keys: &[&str]) -> bool {
        crate::json::is_array_document(self.bytes) && keys.iter().all(|k| self.has_key_anywhere(k))
    }

    /// Top-level keys of the first line's object (empty when it is not an object).
    pub fn has_key(&self, key: &str) -> bool {
        self.first_line.and_then(|v| v.as_object()).is_some_and(|m| m.contains_key(key))
    }
}

fn memfind(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(hay, needle).is_some()
}

/// A reader's claim on a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// 0..=100; the highest claim wins.
    pub confidence: u8,
    /// Why, for a person (`inspect` shows it for unrecognised files' guesses).
    pub reason: String,
    /// How records are laid out.
    pub layout: Layout,
}

/// One raw record handed to a reader.
pub struct RawRecord<'a> {
    pub bytes: &'a [u8],
    /// SHA-256 (hex) of `bytes`, computed once by the driver.
    pub sha256: &'a str,
    /// 1-based line for JSON Lines.
    pub line: Option<u64>,
    /// 0-based document index for document files.
    pub document_index: Option<u64>,
    /// The record will be written (`convert`, `build`): a reader that keeps source text may
    /// keep its canonical form instead (`json_text::split_written`), written as it is.
    pub written: bool,
}

impl RawRecord<'_> {
    /// The id a per-record reader gives: `<family>-` and the first 16 hex digits of the
    /// record's SHA-256 (same bytes, same id).
    pub fn id(&self, family: &str) -> String {
        format!("{family}-{}", self.sha256.get(..16).unwrap_or(self.sha256))
    }

    /// Where this record of `file` came from when read as `family`: path, line, document
    /// index and the digest of its bytes.
    pub fn provenance(&self, family: &str, file: &InputFile) -> Provenance {
        Provenance {
            document_index: self.document_index,
            line: self.line,
            ..Provenance::new(family, file.display.as_str(), self.sha256)
        }
    }

    /// The base of the trajectory `family` reads from this record: its id, provenance and
    /// `task`, every other field empty (see `Trajectory::new`).
    pub fn trajectory(&self, family: &str, file: &InputFile, task: Task) -> Trajectory {
        Trajectory::new(self.id(family), self.provenance(family, file), task)
    }
}

/// What a reader makes of one record.
pub enum RecordResult {
    /// A trajectory. `rollout_key` names the rollout when the format has such a key:
    /// a later, different record of the same file with the same key is a conflict.
    Accepted { trajectory: Box<Trajectory>, rollout_key: Option<String>, consumed: Vec<PathBuf> },
    /// No trajectory: every problem found, the first being the counted reason.
    Rejected(Vec<Problem>),
}

impl RecordResult {
    /// The usual outcome of a reader: a trajectory without a rollout key, or the one
    /// problem that rejected the record.
    pub fn from_result(result: Result<Trajectory, Problem>) -> Self {
        match result {
            Ok(t) => RecordResult::Accepted { trajectory: Box::new(t), rollout_key: None, consumed: Vec::new() },
            Err(p) => RecordResult::Rejected(vec![p]),
        }
    }
}

/// A format family: detection plus a pure, thread-safe record reader.
pub trait Reader: Send + Sync {
    /// Family name as reports show it (`atif`, `gym`, ...).
    fn name(&self) -> &'static str;

    /// Claims a file from its first bytes, or declines.
    fn detect(&self, peek: &Peek) -> Option<Detection>;

    /// The highest confidence `detect` ever claims. Detection stops asking readers once a
    /// claim exceeds what every reader left could claim (a parsed ATIF version marker, 97,
    /// outranks every other family's 95 at most), so each bound must hold.
    fn max_confidence(&self) -> u8 {
        95
    }

    /// A claim from the peek's top level (`TopPeek::top`: keys tokenized, the value not
    /// built). Asked before anything is parsed by a command that keeps no parse for reading
    /// (`build`, `convert`); a claim above every other reader's `max_confidence` is final,
    /// and must be the claim `detect` makes on the same bytes.
    fn detect_top_level(&self, _peek: &TopPeek) -> Option<Detection> {
        None
    }

    /// A small file (named `name`) that is one record (`raw`), claimed and read in one pass by a command
    /// that reads records while planning (`validate`, `inspect`): the claim `detect` makes
    /// on the same bytes, above every other reader's `max_confidence`, with the record.
    /// `None` (the default) leaves the file to detection. A reader claims this way only
    /// records that reference no other file, and declines whatever it would not read
    /// straight from the bytes (then detection and the reader's own parse decide).
    fn claim_and_read(&self, _raw: &RawRecord, _file: &InputFile, _name: &str) -> Option<(Detection, RecordResult)> {
        None
    }

    /// Files that this file's records consume (subagents, continuations, side files).
    /// Called before reading so those files are reported as `part_of` and not read twice.
    fn referenced_files(&self, _file: &InputFile, _layout: Layout) -> Vec<PathBuf> {
        Vec::new()
    }

    /// `referenced_files` when the planner's peek holds the whole (decompressed) file: a
    /// reader that finds references in the content looks there, and in the peek's parsed
    /// document, instead of reading and parsing the file again.
    fn referenced_files_in(&self, file: &InputFile, layout: Layout, _whole: &Peek) -> Vec<PathBuf> {
        self.referenced_files(file, layout)
    }

    /// `referenced_files_in` for a whole file this reader claimed by `detect_top_level`
    /// (`multi`: more lines follow a first line that parses): a reader may walk what its
    /// claim read of the peek (`TopPeek::top_read`) instead of reading the bytes again.
    fn referenced_files_top(&self, file: &InputFile, layout: Layout, whole: &TopPeek, multi: bool) -> Vec<PathBuf> {
        self.referenced_files_in(file, layout, &Peek::new(whole.bytes, whole.name, None, multi))
    }

    /// For document files that hold several trajectories (a JSON array of them): the byte
    /// ranges of the records, each read with `document_index` = its position. `None` (the
    /// default) reads the whole document as one record.
    fn split_document(&self, _bytes: &[u8]) -> Option<Vec<std::ops::Range<usize>>> {
        None
    }

    /// For document files whose records are not byte ranges of the file (members of a zip
    /// archive, or parts that need context from elsewhere in the file): hands the records,
    /// as owned bytes, to `emit` one at a time (so that only the records in flight are held,
    /// never all of them); each is read with `document_index` = its position and its
    /// `sha256` is that of these bytes. A record larger than `limit` bytes is not built:
    /// its place gets the `record_too_large` problem instead (`pipeline::too_large_problem`). `emit` returns false when reading has stopped: the
    /// reader then returns at once. `Err` stops the file with that message (a file-level
    /// error; the records emitted before it stand). `None` (the default; nothing may have
    /// been emitted) falls back to `split_document`. Asked before `split_document`.
    fn expand_document(
        &self,
        _bytes: &[u8],
        _limit: usize,
        _emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool,
    ) -> Option<Result<(), String>> {
        None
    }

    /// True for the readers that implement `expand_document` or `expand_file`: only their
    /// documents are detached from the batch (copied) for the expansion to be asked.
    fn expands(&self) -> bool {
        false
    }

    /// `expand_document` with the file being read, for readers whose records gather
    /// parts of several files (OTLP traces split over rotated files, see `otel.rs`). The
    /// default asks `expand_document`; the driver asks this.
    fn expand_file(
        &self,
        _file: &InputFile,
        bytes: &[u8],
        limit: usize,
        emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool,
    ) -> Option<Result<(), String>> {
        self.expand_document(bytes, limit, emit)
    }

    /// Maps one record to a trajectory or a rejection. Runs in parallel.
    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult;

    /// `read_record` for a record whose bytes the planner already parsed (a small
    /// one-record document; token arrays may still be held back as text, see
    /// `token_arrays::Parsed`): readers that start from a parse of the whole record take it
    /// instead of parsing again; the default parses again.
    fn read_parsed(&self, _parsed: crate::token_arrays::Parsed, raw: &RawRecord, file: &InputFile) -> RecordResult {
        self.read_record(raw, file)
    }
}

/// A reader that is its `detect` and `read` functions and nothing else: records are lines,
/// a whole document, or (with `arrays`) the elements of a JSON array document. Most families
/// need no more (`registry.rs` lists which).
pub(crate) struct FnReader {
    /// Family name (`Reader::name`).
    pub family: &'static str,
    /// Claims a file from its first bytes (`Reader::detect`).
    pub detect: fn(&Peek) -> Option<Detection>,
    /// Maps one record (a line, an array element, or the whole document).
    pub read: fn(&RawRecord, &InputFile) -> Result<Trajectory, Problem>,
    /// A document that is a JSON array holds one record per element; an object is one record.
    pub arrays: bool,
}

impl Reader for FnReader {
    fn name(&self) -> &'static str {
        self.family
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        (self.detect)(peek)
    }

    fn split_document(&self, bytes: &[u8]) -> Option<Vec<std::ops::Range<usize>>> {
        self.arrays.then(|| crate::json::array_elements(bytes)).flatten()
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        RecordResult::from_result((self.read)(raw, file))
    }
}

/// A claim, as a reader's `detect` returns it.
pub(crate) fn claim(confidence: u8, reason: &str, layout: Layout) -> Option<Detection> {
    Some(Detection { confidence, reason: reason.into(), layout })
}

#[cfg(test)]
mod tests {
    use super::Peek;

    /// Synthetic: the cases that tell a key from a value or a quoted name inside a string.
    #[test]
    fn a_key_anywhere_is_a_quoted_name_before_a_colon() {
        let has = |bytes: &[u8], name: &str| Peek::new(bytes, "x.json", None, false).has_key_anywhere(name);
        assert!(has(br#"[{"a": {"role" : "user"}}]"#, "role"));
        assert!(has(b"{\"role\"\n\t:1}", "role"));
        assert!(!has(br#"{"from": "role", "x": "role"}"#, "role"), "a value spelling the name");
        assert!(!has(br#"{"text": "{\"role\": 1}"}"#, "role"), "a quoted name inside a string");
        assert!(!has(br#"{"roles": 1, "xrole": 2}"#, "role"));
        assert!(!has(br#"{"a": 1, "role""#, "role"), "cut before its colon");
    }

    /// Synthetic: an array document claims only when every key is a key (not a value) in it;
    /// the same keys in an object do not make an array.
    #[test]
    fn an_array_with_keys_needs_the_array_and_every_key() {
        let is = |bytes: &[u8], keys: &[&str]| Peek::new(bytes, "x.json", None, false).is_array_with_keys(keys);
        let rows = b"\xEF\xBB\xBF \n[{\"messages\": [{\"role\": \"user\"}]}]";
        assert!(is(rows, &["messages", "role"]));
        assert!(!is(rows, &["messages", "role", "from"]));
        assert!(!is(br#"[{"messages": "role"}]"#, &["messages", "role"]), "a value spelling a key");
        assert!(!is(br#"{"messages": [{"role": "user"}]}"#, &["messages", "role"]));
        assert!(is(b"[]", &[]));
    }

    /// Synthetic: a form feed around the first line (skipped by the line splitting, not
    /// JSON whitespace) keeps the first line from standing for the document.
    #[test]
    fn a_first_line_stands_for_the_document_only_amid_json_whitespace() {
        let v = serde_json::json!({"a": 1});
        let stands = |bytes: &[u8]| Peek::new(bytes, "x.json", Some(&v), false).first_line_is_document();
        assert!(stands(b" \t{\"a\": 1}\r\n\n  "));
        assert!(stands(b"{\"a\": 1}"));
        assert!(!stands(b"\x0c{\"a\": 1}"));
        assert!(!stands(b"{\"a\": 1}\n\x0c"));
        assert!(Peek::new(b"\x0c{\"a\": 1}", "x.json", Some(&v), false).document().is_none());
    }

    #[test]
    fn the_document_is_the_whole_peek_or_nothing() {
        let doc = b"{\n  \"a\": 1,\n  \"b\": [2]\n}\n";
        let peek = Peek::new(doc, "x.json", None, false);
        assert_eq!(peek.document(), Some(&serde_json::json!({"a": 1, "b": [2]})));
        assert_eq!(peek.object_keys(), Some(vec!["a".to_string(), "b".to_string()]));
        // JSON Lines: several values, no document; the first object's keys are scanned.
        let lines = b"{\"a\": 1, \"c\": 2}\n{\"a\": 3}\n";
        let first = serde_json::json!({"a": 1, "c": 2});
        let peek = Peek::new(lines, "x.jsonl", Some(&first), true);
        assert_eq!(peek.document(), None);
        assert_eq!(peek.object_keys(), Some(vec!["a".to_string(), "c".to_string()]));
        // Cut by the end of the peek: the members before the cut.
        let cut = b"{\"a\": 1, \"b\": \"long";
        let peek = Peek::new(cut, "x.json", None, false);
        assert_eq!(peek.document(), None);
        assert_eq!(peek.object_keys(), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(Peek::new(b"[1, 2]", "x.json", None, false).object_keys(), None);
    }
}
