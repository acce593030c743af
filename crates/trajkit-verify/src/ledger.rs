//! The attempt ledger (`ledger.jsonl`): one line per experiment attempt, saying honestly
//! what was run and how far it got (`executed`, `component_tested`,
//! `pre_execution_rejected`), what passed and failed, where the evidence is published and
//! the attempt's strongest limitation. Validation and the README table. Format: docs/ledger.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::manifest::{self, Manifest};

/// The three classifications, exactly.
pub const CLASSIFICATIONS: [&str; 3] = ["executed", "component_tested", "pre_execution_rejected"];

/// Required fields: `(name, kind)`.
const REQUIRED: &[(&str, Kind)] = &[
    ("id", Kind::Text),
    ("environment", Kind::Text),
    ("approach", Kind::Text),
    ("classification", Kind::Text),
    ("run", Kind::Text),
    ("passed", Kind::TextOrList),
    ("failed", Kind::TextOrList),
    ("output", Kind::Text),
    ("public_locations", Kind::List),
    ("limitation", Kind::Text),
];

/// Optional fields trajkit knows; any other key must start with `x_`.
const OPTIONAL: &[&str] = &["date", "commit", "notes"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A non-empty string.
    Text,
    /// A non-empty string, or a list of non-empty strings (possibly empty).
    TextOrList,
    /// A list of non-empty strings (possibly empty).
    List,
}

/// A problem with one line (or the whole ledger when `line` is 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// 1-based line of the ledger; 0 for the ledger or manifest as a whole.
    pub line: u64,
    /// JSON path of the field (`$` for the line).
    pub field: String,
    /// A code from a closed set (docs/ledger.md).
    pub code: &'static str,
    pub message: String,
}

/// What a ledger cannot be read for (the findings are not errors).
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
    #[error("{path}: the attempt cannot be added: {message}")]
    Append { path: PathBuf, message: String },
}

/// One attempt as read (validated structurally).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    pub line: u64,
    pub id: String,
    pub environment: String,
    pub approach: String,
    pub classification: String,
    pub run: String,
    pub passed: Vec<String>,
    pub failed: Vec<String>,
    pub output: String,
    pub public_locations: Vec<String>,
    pub limitation: String,
}

/// A ledger read line by line: attempts that passed the structural checks, and findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Ledger {
    pub attempts: Vec<Attempt>,
    pub findings: Vec<Finding>,
    /// Lines read (blank lines excluded).
    pub lines: u64,
}

impl Ledger {
    /// Attempts per classification, in `CLASSIFICATIONS` order.
    pub fn counts(&self) -> [(&'static str, usize); 3] {
        CLASSIFICATIONS.map(|c| (c, self.attempts.iter().filter(|a| a.classification == c).count()))
    }
}

fn finding(line: u64, field: impl Into<String>, code: &'static str, message: impl Into<String>) -> Finding {
    Finding { line, field: field.into(), code, message: message.into() }
}

/// Reads a ledger and checks every line's structure: JSON object, required fields and their
/// types, the classification vocabulary, known fields, unique ids, safe relative locations.
pub fn read(path: &Path) -> Result<Ledger, LedgerError> {
    let text = std::fs::read(path).map_err(|source| LedgerError::Io { path: path.to_path_buf(), source })?;
    Ok(parse(&text))
}

/// `read` on bytes already in memory.
pub fn parse(bytes: &[u8]) -> Ledger {
    let mut ledger = Ledger::default();
    let mut ids: BTreeMap<String, u64> = BTreeMap::new();
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = i as u64 + 1;
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        ledger.lines += 1;
        let value: Value = match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(e) => {
                ledger.findings.push(finding(line, "$", "invalid_json", format!("column {}: {e}", e.column())));
                continue;
            }
        };
        let before = ledger.findings.len();
        let attempt = check_line(line, &value, &mut ledger.findings);
        if let Some(a) = attempt.filter(|_| ledger.findings.len() == before) {
            if let Some(first) = ids.insert(a.id.clone(), line) {
                ledger.findings.push(finding(
                    line,
                    "$.id",
                    "duplicate_id",
                    format!("{:?} is already used on line {first}", a.id),
                ));
                continue;
            }
            ledger.attempts.push(a);
        }
    }
    ledger
}

/// Structural checks of one line; the attempt when every required field is usable.
fn check_line(line: u64, v: &Value, out: &mut Vec<Finding>) -> Option<Attempt> {
    let Some(obj) = v.as_object() else {
        out.push(finding(line, "$", "not_an_object", "a ledger line is one JSON object"));
        return None;
    };
    for key in obj.keys() {
        let known = REQUIRED.iter().any(|(k, _)| k == key) || OPTIONAL.contains(&key.as_str()) || key.starts_with("x_");
        if !known {
            out.push(finding(
                line,
                format!("$.{key}"),
                "unknown_field",
                "not a ledger field (extensions start with x_)",
            ));
        }
    }
    let mut fields: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (name, kind) in REQUIRED {
        match obj.get(*name) {
            None => out.push(finding(line, format!("$.{name}"), "missing_field", "required")),
            Some(value) => {
                if let Some(items) = field_values(line, name, *kind, value, out) {
                    fields.insert(name, items);
                }
            }
        }
    }
    let text = |name: &str| fields.get(name).and_then(|v| v.first()).cloned();
    if let Some(c) = text("classification") {
        if !CLASSIFICATIONS.contains(&c.as_str()) {
            let message = format!("{c:?} is not one of {}", CLASSIFICATIONS.join(", "));
            out.push(finding(line, "$.classification", "invalid_classification", message));
        }
    }
    for (i, loc) in fields.get("public_locations").into_iter().flatten().enumerate() {
        if !is_safe_location(loc) {
            let message = format!("{loc:?} is not a relative path inside the tree");
            out.push(finding(line, format!("$.public_locations[{i}]"), "unsafe_location", message));
        }
    }
    Some(Attempt {
        line,
        id: text("id")?,
        environment: text("environment")?,
        approach: text("approach")?,
        classification: text("classification")?,
        run: text("run")?,
        passed: fields.get("passed")?.clone(),
        failed: fields.get("failed")?.clone(),
        output: text("output")?,
        public_locations: fields.get("public_locations")?.clone(),
        limitation: text("limitation")?,
    })
}

/// A field's strings, or a finding naming its wrong type or empty value.
fn field_values(line: u64, name: &str, kind: Kind, v: &Value, out: &mut Vec<Finding>) -> Option<Vec<String>> {
    let path = format!("$.{name}");
    let expected = match kind {
        Kind::Text => "a non-empty string",
        Kind::TextOrList => "a non-empty string or a list of strings",
        Kind::List => "a list of strings",
    };
    let items: Option<Vec<String>> = match (kind, v) {
        (Kind::Text | Kind::TextOrList, Value::String(s)) => Some(vec![s.clone()]),
        (Kind::TextOrList | Kind::List, Value::Array(a)) => {
            a.iter().map(|x| x.as_str().map(str::to_string)).collect::<Option<Vec<_>>>()
        }
        _ => None,
    };
    let Some(items) = items else {
        out.push(finding(line, path, "wrong_type", format!("expected {expected}")));
        return None;
    };
    if items.iter().any(|s| s.trim().is_empty()) || (kind == Kind::Text && items.is_empty()) {
        out.push(finding(line, path, "empty_value", format!("expected {expected}, without empty strings")));
        return None;
    }
    Some(items)
}

/// A `/`-separated relative path that cannot leave the tree (a trailing `/` allowed).
fn is_safe_location(p: &str) -> bool {
    let p = p.strip_suffix('/').unwrap_or(p);
    !p.is_empty()
        && !p.starts_with('/')
        && !p.contains('\\')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Appends one attempt to the ledger at `path` (created when absent), atomically, after
/// checking that the ledger with the new line has no finding on that line (id unused).
pub fn append(path: &Path, attempt: &Value) -> Result<(), LedgerError> {
    let mut bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(source) => return Err(LedgerError::Io { path: path.to_path_buf(), source }),
    };
    if bytes.last().is_some_and(|b| *b != b'\n') {
        bytes.push(b'\n');
    }
    let line = bytes.split(|b| *b == b'\n').count() as u64;
    bytes.extend_from_slice(attempt.to_string().as_bytes());
    bytes.push(b'\n');
    let checked = parse(&bytes);
    if let Some(f) = checked.findings.iter().find(|f| f.line == line) {
        let message = format!("{}: {}: {}", f.field, f.code, f.message);
        return Err(LedgerError::Append { path: path.to_path_buf(), message });
    }
    manifest::write_atomic(path, &bytes)?;
    Ok(())
}

/// Checks each attempt's public locations against the tree at `root` and its manifest:
/// a location exists (file or directory), and every file it names is listed in the manifest
/// with the same size. The manifest's own digest must be intact.
pub fn check_locations(ledger: &Ledger, root: &Path, manifest_path: &Path) -> Result<Vec<Finding>, LedgerError> {
    let mut out = Vec::new();
    let manifest = if manifest_path.exists() {
        let m = Manifest::read(manifest_path)?;
        if m.compute_digest() != m.manifest_sha256 {
            let message = format!("{}: the manifest's digest does not match its content", manifest_path.display());
            out.push(finding(0, "$", "manifest_digest_mismatch", message));
        }
        Some(m)
    } else {
        let message =
            format!("{}: no manifest; coverage of public locations cannot be checked", manifest_path.display());
        out.push(finding(0, "$", "no_manifest", message));
        None
    };
    let listed: BTreeMap<&str, u64> =
        manifest.iter().flat_map(|m| m.files.iter()).map(|f| (f.path.as_str(), f.bytes)).collect();
    for a in &ledger.attempts {
        for (i, loc) in a.public_locations.iter().enumerate() {
            let field = format!("$.public_locations[{i}]");
            check_location(a.line, &field, loc, root, manifest.as_ref().map(|_| &listed), &mut out)?;
        }
    }
    Ok(out)
}

fn check_location(
    line: u64,
    field: &str,
    loc: &str,
    root: &Path,
    listed: Option<&BTreeMap<&str, u64>>,
    out: &mut Vec<Finding>,
) -> Result<(), LedgerError> {
    let rel = loc.strip_suffix('/').unwrap_or(loc);
    let path = root.join(rel);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(_) => {
            out.push(finding(
                line,
                field,
                "location_missing",
                format!("{loc:?} does not exist under {}", root.display()),
            ));
            return Ok(());
        }
    };
    let Some(listed) = listed else { return Ok(()) };
    let files: Vec<(String, u64)> =
        if meta.is_dir() { files_below(&path, rel)? } else { vec![(rel.to_string(), meta.len())] };
    if files.is_empty() {
        out.push(finding(line, field, "location_not_in_manifest", format!("{loc:?} is an empty directory")));
    }
    let mut unlisted = BTreeSet::new();
    for (file, size) in &files {
        match listed.get(file.as_str()) {
            None => {
                unlisted.insert(file.clone());
            }
            Some(bytes) if bytes != size => {
                let message = format!("{file:?} has {size} bytes, the manifest lists {bytes}");
                out.push(finding(line, field, "location_changed", message));
            }
            Some(_) => {}
        }
    }
    if !unlisted.is_empty() {
        let names: Vec<&str> = unlisted.iter().map(String::as_str).take(3).collect();
        let more = if unlisted.len() > 3 { format!(" and {} more", unlisted.len() - 3) } else { String::new() };
        let message = format!("not covered by the manifest: {}{more}", names.join(", "));
        out.push(finding(line, field, "location_not_in_manifest", message));
    }
    Ok(())
}

/// Regular files below `dir` as `(relative path, size)`, `rel` being `dir`'s own path.
fn files_below(dir: &Path, rel: &str) -> Result<Vec<(String, u64)>, LedgerError> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), rel.to_string())];
    while let Some((d, prefix)) = stack.pop() {
        let io = |source| LedgerError::Io { path: d.clone(), source };
        for entry in std::fs::read_dir(&d).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = format!("{prefix}/{name}");
            let kind = entry.file_type().map_err(io)?;
            if kind.is_dir() {
                stack.push((entry.path(), child));
            } else {
                out.push((child, entry.metadata().map_err(io)?.len()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The markdown table a README shows: one row per attempt, then the counts.
pub fn render(ledger: &Ledger) -> String {
    let mut out = String::from(
        "| attempt | environment | approach | classification | run | passed | failed | output | public locations | strongest limitation |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for a in &ledger.attempts {
        let locations: Vec<String> = a.public_locations.iter().map(|l| format!("[`{l}`]({l})")).collect();
        let cells = [
            cell(&a.id),
            cell(&a.environment),
            cell(&a.approach),
            format!("`{}`", a.classification),
            cell(&a.run),
            list_cell(&a.passed),
            list_cell(&a.failed),
            cell(&a.output),
            if locations.is_empty() { "—".to_string() } else { locations.join("<br>") },
            cell(&a.limitation),
        ];
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    let counts: Vec<String> = ledger.counts().iter().map(|(c, n)| format!("{n} {c}")).collect();
    out.push_str(&format!("\n{} attempts: {}.\n", ledger.attempts.len(), counts.join(", ")));
    out
}

/// Text safe inside a table cell: `|` escaped, line breaks as `<br>`.
fn cell(s: &str) -> String {
    s.trim().replace('|', "\\|").replace("\r\n", "<br>").replace('\n', "<br>")
}

fn list_cell(items: &[String]) -> String {
    if items.is_empty() {
        "—".to_string()
    } else {
        items.iter().map(|s| cell(s)).collect::<Vec<_>>().join("<br>")
    }
}

#[cfg(test)]
mod tests;
