//! `coverage.json`: per source and file, what was read, accepted and rejected (by
//! reason), duplicates and gaps — the same counters `trajkit inspect --json` reports.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;
use trajkit_formats::FileReport;

use crate::error::LibraryError;
use crate::registry::Registry;

/// Per source, how many content digests more than one of its trajectories has: one pass
/// over the index for every source (a query per source read the whole index each time).
fn repeated_content(conn: &Connection, index: &Path) -> Result<BTreeMap<String, u64>, LibraryError> {
    let sql = |source| LibraryError::Sqlite { path: index.to_path_buf(), source };
    let mut st = conn
        .prepare(
            "SELECT source, count(*) FROM (SELECT source FROM trajectories
             GROUP BY source, content_digest HAVING count(*) > 1) GROUP BY source",
        )
        .map_err(sql)?;
    let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u64>(1)?))).map_err(sql)?;
    rows.collect::<Result<_, _>>().map_err(sql)
}

/// What `coverage.json` says of all the sources.
const DESCRIPTION: &str = "per source and file: records read, accepted, rejected by reason (formats deliberately excluded, such as BFCL final-call outputs, are rejection reasons), byte-identical repeats within a file (duplicate_records), gaps by kind; see docs/library.md";

/// The coverage document, serialized from the reports it borrows: a `Value` tree of every
/// file's report cost about ten times the file's text, the build's peak on many-file
/// corpora (docs/PERFORMANCE.md, step 97). Fields in name order, as the document was.
#[derive(Serialize)]
pub struct Coverage<'a> {
    description: &'static str,
    sources: Vec<SourceCoverage<'a>>,
}

/// One source's totals and its files' reports.
#[derive(Serialize)]
struct SourceCoverage<'a> {
    accepted: u64,
    duplicate_groups_across_files: u64,
    duplicate_records: u64,
    files: usize,
    files_by_format: BTreeMap<&'a str, u64>,
    files_unreadable: usize,
    gaps: BTreeMap<&'a str, u64>,
    per_file: Vec<PerFile<'a>>,
    records: u64,
    rejected: u64,
    rejected_by_reason: BTreeMap<&'a str, u64>,
    role: &'a str,
    source: &'a str,
    steps: u64,
    subagents: u64,
    tool_calls: u64,
}

/// A file's report with its fields in name order.
#[derive(Serialize)]
struct PerFile<'a> {
    duplicate_records: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    format: Option<&'a str>,
    gaps: &'a BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    guess: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    part_of: Option<&'a str>,
    path: &'a str,
    reasons: &'a BTreeMap<String, u64>,
    records: u64,
    rejected: u64,
    steps: u64,
    subagents: u64,
    tool_calls: u64,
    trajectories: u64,
}

impl<'a> PerFile<'a> {
    fn of(r: &'a FileReport) -> Self {
        PerFile {
            duplicate_records: r.duplicate_records,
            error: r.error.as_deref(),
            format: r.format.as_deref(),
            gaps: &r.gaps,
            guess: r.guess.as_deref(),
            part_of: r.part_of.as_deref(),
            path: &r.path,
            reasons: &r.reasons,
            records: r.records,
            rejected: r.rejected,
            steps: r.steps,
            subagents: r.subagents,
            tool_calls: r.tool_calls,
            trajectories: r.trajectories,
        }
    }
}

/// Adds each count of `from` to `into`.
fn add_map<'a>(into: &mut BTreeMap<&'a str, u64>, from: &'a BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.as_str()).or_default() += v;
    }
}

/// Builds the coverage document from the per-file reports of the build.
pub fn coverage<'a>(
    registry: &'a Registry,
    reports: &'a [(usize, FileReport)],
    conn: &Connection,
    index: &Path,
) -> Result<Coverage<'a>, LibraryError> {
    let repeated = repeated_content(conn, index)?;
    let mut sources = Vec::new();
    for (i, s) in registry.sources.iter().enumerate() {
        let files: Vec<&FileReport> = reports.iter().filter(|(src, _)| *src == i).map(|(_, r)| r).collect();
        let mut reasons = BTreeMap::new();
        let mut gaps = BTreeMap::new();
        let mut formats: BTreeMap<&str, u64> = BTreeMap::new();
        for f in &files {
            add_map(&mut reasons, &f.reasons);
            add_map(&mut gaps, &f.gaps);
            *formats.entry(f.format.as_deref().unwrap_or("unrecognised")).or_default() += 1;
        }
        let sum = |f: fn(&FileReport) -> u64| files.iter().map(|r| f(r)).sum::<u64>();
        sources.push(SourceCoverage {
            accepted: sum(|r| r.trajectories),
            duplicate_groups_across_files: repeated.get(&s.source.name).copied().unwrap_or(0),
            duplicate_records: sum(|r| r.duplicate_records),
            files: files.len(),
            files_by_format: formats,
            files_unreadable: files.iter().filter(|f| f.error.is_some()).count(),
            gaps,
            records: sum(|r| r.records),
            rejected: sum(|r| r.rejected),
            rejected_by_reason: reasons,
            role: s.source.role.as_str(),
            source: &s.source.name,
            steps: sum(|r| r.steps),
            subagents: sum(|r| r.subagents),
            tool_calls: sum(|r| r.tool_calls),
            per_file: files.into_iter().map(PerFile::of).collect(),
        });
    }
    Ok(Coverage { description: DESCRIPTION, sources })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each file's entry is the report's own serialization with its keys in name order
    /// (as the `Value` tree wrote it), on every real fixture: a field added to
    /// `FileReport` and not to `PerFile` fails here.
    #[test]
    fn a_file_entry_is_its_report_in_name_order() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
        let (files, _) = trajkit_formats::discover(&[root]);
        struct Nothing;
        impl trajkit_formats::Sink for Nothing {
            fn trajectory(
                &mut self,
                _: &trajkit_formats::InputFile,
                _: Option<&trajkit_model::Trajectory>,
                _: Option<&[u8]>,
            ) {
            }
        }
        let reports = trajkit_formats::read_inputs(files, &Default::default(), &mut Nothing).expect("read");
        assert!(reports.iter().any(|r| r.error.is_some()) && reports.iter().any(|r| r.part_of.is_some()));
        for r in &reports {
            let typed = serde_json::to_string_pretty(&PerFile::of(r)).expect("typed");
            let tree = serde_json::to_string_pretty(&serde_json::to_value(r).expect("value")).expect("tree");
            assert_eq!(typed, tree, "{}", r.path);
        }
    }
}
