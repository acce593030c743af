//! `coverage.json`: per source and file, what was read, accepted and rejected (by
//! reason), duplicates and gaps — the same counters `trajkit inspect --json` reports.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::ser::{Error as _, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use trajkit_formats::FileReport;

use crate::error::LibraryError;
use crate::registry::Registry;
use crate::spill::{Spill, SpillReader};

/// Per source, how many content digests more than one of its trajectories has: one pass
/// over the index for every source (a query per source read the whole index each time).
/// Only the rows of a digest held more than once at all are looked up, found from the
/// digest index alone: grouping every row by source read the whole table (0.27 s at 4 GB,
/// 0.05 s this way).
fn repeated_content(conn: &Connection, index: &Path) -> Result<BTreeMap<String, u64>, LibraryError> {
    let sql = |source| LibraryError::Sqlite { path: index.to_path_buf(), source };
    let mut st = conn
        .prepare(
            "SELECT source, count(*) FROM (SELECT source FROM trajectories
             WHERE content_digest IN (SELECT content_digest FROM trajectories GROUP BY content_digest HAVING count(*) > 1)
             GROUP BY source, content_digest HAVING count(*) > 1) GROUP BY source",
        )
        .map_err(sql)?;
    let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u64>(1)?))).map_err(sql)?;
    rows.collect::<Result<_, _>>().map_err(sql)
}

/// What `coverage.json` says of all the sources.
const DESCRIPTION: &str = "per source and file: records read, accepted, rejected by reason (formats deliberately excluded, such as BFCL final-call outputs, are rejection reasons), byte-identical repeats within a file (duplicate_records), gaps by kind; see docs/library.md";

/// The file reports as the merge meets them: each source's totals in memory, each report
/// spilled (in the staging directory) until `coverage.json` lists it, so the build holds
/// nothing per file for it (docs/PERFORMANCE.md, step 99).
pub struct Collector {
    dir: PathBuf,
    /// By source number (index into the registry).
    sources: Vec<(Totals, Spill)>,
    /// The report being spilled (compact JSON).
    line: Vec<u8>,
}

/// A source's figures summed over its files.
#[derive(Default)]
struct Totals {
    files: usize,
    files_by_format: BTreeMap<String, u64>,
    files_unreadable: usize,
    records: u64,
    accepted: u64,
    subagents: u64,
    rejected: u64,
    rejected_by_reason: BTreeMap<String, u64>,
    duplicate_records: u64,
    steps: u64,
    tool_calls: u64,
    gaps: BTreeMap<String, u64>,
}

impl Totals {
    fn add(&mut self, r: &FileReport) {
        self.files += 1;
        bump(&mut self.files_by_format, r.format.as_deref().unwrap_or("unrecognised"), 1);
        self.files_unreadable += usize::from(r.error.is_some());
        self.records += r.records;
        self.accepted += r.trajectories;
        self.subagents += r.subagents;
        self.rejected += r.rejected;
        add_map(&mut self.rejected_by_reason, &r.reasons);
        self.duplicate_records += r.duplicate_records;
        self.steps += r.steps;
        self.tool_calls += r.tool_calls;
        add_map(&mut self.gaps, &r.gaps);
    }
}

/// Adds each count of `from` to `into`.
fn add_map(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        bump(into, k, *v);
    }
}

/// Adds `n` to the count of `key`, copying the key only the first time.
fn bump(into: &mut BTreeMap<String, u64>, key: &str, n: u64) {
    match into.get_mut(key) {
        Some(c) => *c += n,
        None => {
            into.insert(key.to_string(), n);
        }
    }
}

impl Collector {
    /// A collector whose spills are made in `dir`.
    pub fn in_dir(dir: &Path) -> Collector {
        Collector { dir: dir.to_path_buf(), sources: Vec::new(), line: Vec::new() }
    }

    /// Counts and spills the report of a file of source `source`.
    pub fn add(&mut self, source: usize, report: &FileReport) {
        while self.sources.len() <= source {
            self.sources.push((Totals::default(), Spill::in_dir(&self.dir)));
        }
        let Some((totals, spill)) = self.sources.get_mut(source) else { return };
        totals.add(report);
        self.line.clear();
        // Writing a struct of strings and numbers to a vector does not fail.
        if serde_json::to_writer(&mut self.line, report).is_ok() {
            spill.push(&[&self.line]);
        }
    }

    /// Records, rejections and unreadable files over every source (the build's figures).
    pub fn figures(&self) -> (u64, u64, u64) {
        let sum = |f: fn(&Totals) -> u64| self.sources.iter().map(|(t, _)| f(t)).sum::<u64>();
        (sum(|t| t.records), sum(|t| t.rejected), sum(|t| t.files_unreadable as u64))
    }
}

/// The coverage document; each source's files are read back from their spill while it
/// is written (a `Value` tree of every report cost about ten times the file's text).
/// Fields in name order, as the document always was.
#[derive(Serialize)]
pub struct Coverage<'a> {
    description: &'static str,
    sources: Vec<SourceCoverage<'a>>,
}

/// One source's totals and its files' reports.
struct SourceCoverage<'a> {
    totals: Totals,
    duplicate_groups_across_files: u64,
    per_file: PerFiles,
    role: &'a str,
    source: &'a str,
}

/// The fields in name order, as the document always was.
impl Serialize for SourceCoverage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = &self.totals;
        let mut m = s.serialize_struct("SourceCoverage", 16)?;
        m.serialize_field("accepted", &t.accepted)?;
        m.serialize_field("duplicate_groups_across_files", &self.duplicate_groups_across_files)?;
        m.serialize_field("duplicate_records", &t.duplicate_records)?;
        m.serialize_field("files", &t.files)?;
        m.serialize_field("files_by_format", &t.files_by_format)?;
        m.serialize_field("files_unreadable", &t.files_unreadable)?;
        m.serialize_field("gaps", &t.gaps)?;
        m.serialize_field("per_file", &self.per_file)?;
        m.serialize_field("records", &t.records)?;
        m.serialize_field("rejected", &t.rejected)?;
        m.serialize_field("rejected_by_reason", &t.rejected_by_reason)?;
        m.serialize_field("role", self.role)?;
        m.serialize_field("source", self.source)?;
        m.serialize_field("steps", &t.steps)?;
        m.serialize_field("subagents", &t.subagents)?;
        m.serialize_field("tool_calls", &t.tool_calls)?;
        m.end()
    }
}

/// A source's spilled reports, listed in the order the files were read.
struct PerFiles(RefCell<Option<SpillReader>>);

impl Serialize for PerFiles {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        let (mut failed, mut refused) = (None, None);
        if let Some(reader) = self.0.borrow_mut().as_mut() {
            let read = reader.each(|bytes| {
                if failed.is_some() || refused.is_some() {
                    return;
                }
                // One report at a time as a `Value`: its map writes the keys in name order.
                match serde_json::from_slice::<serde_json::Value>(bytes) {
                    Ok(r) => refused = seq.serialize_element(&r).err(),
                    Err(e) => failed = Some(format!("a spilled file report: {e}")),
                }
            });
            if let Err(e) = read {
                failed.get_or_insert(format!("the spilled file reports: {e}"));
            }
        }
        match (refused, failed) {
            (Some(e), _) => Err(e),
            (None, Some(message)) => Err(S::Error::custom(message)),
            (None, None) => seq.end(),
        }
    }
}

/// Builds the coverage document from the build's file reports.
pub fn coverage<'a>(
    registry: &'a Registry,
    reports: Collector,
    conn: &Connection,
    index: &Path,
) -> Result<Coverage<'a>, LibraryError> {
    let repeated = repeated_content(conn, index)?;
    let mut collected = reports.sources.into_iter();
    let mut sources = Vec::new();
    for s in &registry.sources {
        let (t, spill) = collected.next().unwrap_or_else(|| (Totals::default(), Spill::default()));
        let files = spill.reader().map_err(|source| LibraryError::Io {
            path: index.with_file_name("file reports (temporary file)"),
            source,
        })?;
        sources.push(SourceCoverage {
            totals: t,
            duplicate_groups_across_files: repeated.get(&s.source.name).copied().unwrap_or(0),
            per_file: PerFiles(RefCell::new(Some(files))),
            role: s.source.role.as_str(),
            source: &s.source.name,
        });
    }
    Ok(Coverage { description: DESCRIPTION, sources })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps nothing.
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

    /// The reports of the real fixtures.
    fn real_reports() -> Vec<FileReport> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
        let (files, _) = trajkit_formats::discover(&[root]);
        trajkit_formats::read_inputs(files, &Default::default(), &mut Nothing).expect("read")
    }

    /// Spilled by source and read back, the reports list as they came and as the one
    /// `Value` tree listed them (keys in name order), each source its own (here the real
    /// fixtures' files dealt to sources 0 and 2, none to 1), and the totals are their sums.
    #[test]
    fn spilled_reports_list_in_order_by_source() {
        let reports = real_reports();
        // Optional fields appear in some entries and not others.
        assert!(reports.iter().any(|r| r.error.is_some()) && reports.iter().any(|r| r.part_of.is_some()));
        let dir = tempfile::tempdir().expect("dir");
        let mut collector = Collector::in_dir(dir.path());
        let source = |i: usize| if i.is_multiple_of(3) { 0 } else { 2 };
        for (i, r) in reports.iter().enumerate() {
            collector.add(source(i), r);
        }
        let sum = |f: fn(&FileReport) -> u64| reports.iter().map(f).sum::<u64>();
        let unreadable = reports.iter().filter(|r| r.error.is_some()).count() as u64;
        assert_eq!(collector.figures(), (sum(|r| r.records), sum(|r| r.rejected), unreadable));
        for (n, (totals, spill)) in collector.sources.into_iter().enumerate() {
            // What coverage.json listed when it was one `Value` tree.
            let want: Vec<serde_json::Value> = reports
                .iter()
                .enumerate()
                .filter(|(i, _)| source(*i) == n)
                .map(|(_, r)| serde_json::to_value(r).expect("value"))
                .collect();
            assert_eq!(totals.files, want.len());
            let listed = PerFiles(RefCell::new(Some(spill.reader().expect("reader"))));
            let got = serde_json::to_string_pretty(&listed).expect("listed");
            assert_eq!(got, serde_json::to_string_pretty(&want).expect("want"), "source {n}");
        }
    }
}
