//! The fuzz targets: each runs one input through the library as the CLI would and returns a
//! signature of what happened (format, rejection reasons, gap kinds, error class). The
//! signature guides the mutation fuzzer's corpus and is what a regression test expects; a
//! panic is a crash for every fuzzer.

use std::path::Path;

use trajkit_formats::{discover, read_inputs, InputFile, Options, Sink};
use trajkit_model::Trajectory;

/// Every target's name, in the order `fuzz/run.sh` runs them.
pub const TARGETS: &[&str] = &["formats", "canonical", "zip", "parquet", "sqlite", "npy", "redact", "json"];

/// The file name an input of `target` is written under when its frame names none.
pub fn default_name(target: &str) -> &'static str {
    match target {
        "canonical" => "record.jsonl",
        "zip" => "log.eval",
        "parquet" => "rows.parquet",
        "sqlite" => "state.sqlite",
        "npy" => "array.npy",
        _ => "input.jsonl",
    }
}

/// Runs one framed input (`name NUL bytes`, crate::frame): what AFL++ and the regression
/// files hand over.
pub fn run_framed(target: &str, data: &[u8], scratch: &Path) -> String {
    let (name, bytes) = crate::frame::decode(data, default_name(target));
    run(target, &name, bytes, scratch)
}

/// Runs one input written under `name` in `scratch`; panics propagate to the caller (which
/// counts them as crashes).
pub fn run(target: &str, name: &str, input: &[u8], scratch: &Path) -> String {
    match target {
        "canonical" => canonical(name, input, scratch),
        "sqlite" => sqlite(input, scratch),
        "npy" => npy(name, input, scratch),
        "redact" => redact(input),
        "json" => json(input),
        _ => pipeline(name, input, scratch, None).0,
    }
}

/// What the pipeline accepted: the canonical bytes of every record, in order.
struct Converted(Vec<u8>);

impl Sink for Converted {
    fn trajectory(&mut self, _: &InputFile, _: Option<&Trajectory>, canonical: Option<&[u8]>) {
        self.0.extend_from_slice(canonical.unwrap_or_default());
    }
}

/// Detection (or the `format` forced) and reading through the pipeline, as `trajkit convert`
/// reads a file: the signature and the canonical output.
fn pipeline(name: &str, input: &[u8], scratch: &Path, format: Option<&str>) -> (String, Vec<u8>) {
    let path = scratch.join(name);
    if std::fs::write(&path, input).is_err() {
        return ("write failed".into(), Vec::new());
    }
    let (files, _) = discover(&[path]);
    let opts = Options {
        format: format.map(str::to_string),
        canonical: true,
        records: true,
        outcomes: None,
        analyze: None,
        ..Options::default()
    };
    let mut sink = Converted(Vec::new());
    let signature = match read_inputs(files, &opts, &mut sink) {
        Ok(reports) => reports
            .iter()
            .map(|r| {
                let reasons: Vec<&String> = r.reasons.keys().collect();
                let gaps: Vec<&String> = r.gaps.keys().collect();
                let error = r.error.as_deref().map(error_class);
                format!("{:?} {} {reasons:?} {gaps:?} {error:?}", r.format, r.trajectories.min(3))
            })
            .collect::<Vec<_>>()
            .join("|"),
        Err(e) => format!("error {}", error_class(&e.to_string())),
    };
    (signature, sink.0)
}

/// Canonical records as input (the `canonical` reader, forced as `--format canonical`
/// forces it) and a property of item 3 of issue 15: converting what was accepted again gives
/// the same bytes (a difference is a crash).
fn canonical(name: &str, input: &[u8], scratch: &Path) -> String {
    let (signature, converted) = pipeline(name, input, scratch, Some("canonical"));
    if !converted.is_empty() {
        let (_, again) = pipeline("again.jsonl", &converted, scratch, Some("canonical"));
        assert!(again == converted, "convert of convert's output changed the bytes");
    }
    signature
}

/// State capture of a (corrupted) SQLite database.
fn sqlite(input: &[u8], scratch: &Path) -> String {
    let path = scratch.join("state.sqlite");
    if std::fs::write(&path, input).is_err() {
        return "write failed".into();
    }
    let ignore = trajkit_verify::state::IgnoreSpec::default();
    match trajkit_verify::state::capture::capture_database(&path, "db", &ignore, None) {
        Ok((db, stats)) => format!("ok {} {}", db.tables.len(), stats.rows.min(10)),
        Err(e) => format!("err {}", error_class(&e.to_string())),
    }
}

/// `trajkit diagnose` on a (malformed) .npy or .npz.
fn npy(name: &str, input: &[u8], scratch: &Path) -> String {
    let path = scratch.join(name);
    if std::fs::write(&path, input).is_err() {
        return "write failed".into();
    }
    match trajkit_verify::diagnose::diagnose(&path) {
        Ok(r) => format!("ok {} {} {}", r.arrays.len(), r.skipped.len(), r.has_non_finite()),
        Err(e) => format!("err {}", error_class(&e.to_string())),
    }
}

/// Format-preserving redaction (`trajkit redact --preserve-format`) of any bytes: when
/// nothing is replaced the output must be the input, byte for byte (a panic otherwise).
fn redact(input: &[u8]) -> String {
    use trajkit_verify::redact::{RedactionReport, Redactor, Rules};
    // One redactor for the run (compiling the detectors per input would be most of the time);
    // the secrets it learns carry over, as they do across the files of one `redact` run.
    static REDACTOR: std::sync::Mutex<Option<Redactor>> = std::sync::Mutex::new(None);
    let mut guard = REDACTOR.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let redactor = guard.get_or_insert_with(|| Redactor::new(Rules::builtin()));
    let mut report = RedactionReport::default();
    let mut out = Vec::new();
    match redactor.redact_json_text("input", input, &mut out, &mut report) {
        Ok(0) => {
            assert!(out == input, "redaction with no replacement changed the bytes");
            "none".into()
        }
        Ok(n) => {
            let kinds: Vec<&String> = report.kinds.keys().collect();
            format!("{} {kinds:?}", n.min(4))
        }
        Err(e) => format!("err {}", error_class(&e.to_string())),
    }
}

/// The parse every record goes through (token arrays read by `token_arrays`' own loop)
/// against serde_json's, on the whole input and on each of its lines: the same `Value` and
/// the same serialization, or both fail (a difference is a crash).
fn json(input: &[u8]) -> String {
    let lines = input.split(|&b| b == b'\n').filter(|l| l.len() < input.len());
    let valid = std::iter::once(input).chain(lines).map(same_parse).filter(|ok| *ok).count();
    match valid {
        0 => "invalid".into(),
        n => format!("ok {} valid", n.min(8)),
    }
}

/// True when `text` parses; panics when `json::parse_text` (or its keeping form) and
/// serde_json disagree, or
/// text kept unparsed (`same_as_text`) reads or writes otherwise.
fn same_parse(text: &[u8]) -> bool {
    let ours = trajkit_formats::json::parse_text(text);
    let theirs = std::str::from_utf8(text).ok().and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok());
    assert!(ours == theirs, "parse_text and serde_json give different values");
    let json = |v: &Option<serde_json::Value>| v.as_ref().and_then(|v| serde_json::to_string(v).ok());
    assert!(json(&ours) == json(&theirs), "parse_text and serde_json serialize differently");
    let kept = trajkit_formats::json::parse_text_keeping(text).map(|p| p.into_value());
    assert!(kept == theirs, "parse_text_keeping and serde_json give different values");
    same_as_text(text, theirs.as_ref());
    if let Ok(text) = std::str::from_utf8(text) {
        same_split(text);
    }
    ours.is_some()
}

/// Panics when `split_written` accepts otherwise than `split`, or an object's members kept
/// whole are written otherwise from what it wrote than from their source text.
fn same_split(text: &str) {
    use trajkit_model::json_text::{split, split_written, Shape, Split};
    let (plain, written) = (split(text, &Shape::Object(&[])), split_written(text, &Shape::Object(&[])));
    assert!(plain.is_some() == written.is_some(), "split_written accepts otherwise than split");
    let members = |s: Option<Split>| {
        let extra = trajkit_model::node::Node::Split(s?).into_extra().ok()?;
        trajkit_model::compact::to_string(&extra).ok()
    };
    assert!(members(plain) == members(written), "members written from split_written's parts differ");
}

/// Panics when a value `LazyValue` or `Extra` keeps as text (whole, or as a flat number
/// array) is not the value serde_json parses, its canonical JSON written from the text
/// differs from that of the `Value`, a string's ends read from the text are not the
/// string's, or a step content's measures read from the text are not the value's.
fn same_as_text(text: &[u8], theirs: Option<&serde_json::Value>) {
    if let Some(lazy) = std::str::from_utf8(text).ok().and_then(trajkit_model::LazyValue::from_text) {
        let Some(value) = theirs else {
            panic!("LazyValue kept text that serde_json does not parse");
        };
        let written = trajkit_model::compact::to_string(&lazy).ok();
        assert!(written == trajkit_model::compact::to_string(value).ok(), "LazyValue written from text differs");
        assert!(lazy.value() == value, "LazyValue kept as text reads differently");
        if let (Some((first, tail)), Some(whole)) = (lazy.string_ends(8), value.as_str()) {
            assert!(whole.starts_with(first) && whole.ends_with(&tail), "a string's ends differ from the string");
        }
        let parsed = trajkit_model::LazyValue::from(value.clone());
        assert!(lazy.content_is_empty() == parsed.content_is_empty(), "content emptiness from text differs");
        assert!(lazy.content_text_len() == parsed.content_text_len(), "content text bytes from text differ");
    }
    if let Some((array, count, integers)) =
        std::str::from_utf8(text).ok().and_then(trajkit_model::LazyValue::number_array)
    {
        let Some(value) = theirs else {
            panic!("a number array kept as text that serde_json does not parse");
        };
        assert!(value.as_array().map(Vec::len) == Some(count), "a number array's count is wrong");
        assert!(array.value() == value, "a number array kept as text reads differently");
        let written = trajkit_model::compact::to_string(&array).ok();
        assert!(written == trajkit_model::compact::to_string(value).ok(), "a number array written from text differs");
        let all_integers = value.as_array().is_some_and(|a| a.iter().all(|v| v.is_i64() || v.is_u64()));
        assert!(integers == all_integers, "a number array's integer flag is wrong");
    }
    let Some(extra) = std::str::from_utf8(text).ok().and_then(trajkit_model::Extra::from_object_text) else {
        return;
    };
    let Some(serde_json::Value::Object(map)) = theirs else {
        panic!("Extra kept text that serde_json does not parse as an object");
    };
    let written = trajkit_model::compact::to_string(&extra).ok();
    assert!(
        written == trajkit_model::compact::to_string(map).ok(),
        "Extra written from text differs from the parsed object"
    );
    assert!(extra == trajkit_model::Extra::from(map.clone()), "Extra kept as text reads differently");
}

/// An error message without its path and numbers: the class of problem.
fn error_class(message: &str) -> String {
    let tail = message.rsplit(": ").next().unwrap_or(message);
    tail.chars().filter(|c| !c.is_ascii_digit()).take(60).collect()
}
