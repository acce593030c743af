//! Helpers shared by the reader tests: read a path and collect reports and records.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use trajkit_formats::{discover, read_inputs, FileReport, InputFile, Options, Rejection, Sink};
use trajkit_model::Trajectory;

/// The project's copy of the real fixtures of `family`.
pub fn real(family: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(family)
}

/// Everything a read produced, in input order.
#[derive(Default)]
pub struct Collected {
    pub reports: Vec<FileReport>,
    pub trajectories: Vec<Trajectory>,
    pub rejections: Vec<Rejection>,
}

impl Sink for Collected {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        self.trajectories.extend(t.cloned());
    }
    fn rejection(&mut self, r: &Rejection) {
        self.rejections.push(r.clone());
    }
}

/// Reads `paths` with detection.
pub fn read(paths: &[PathBuf]) -> Collected {
    read_with(paths, Options { records: true, ..Options::default() })
}

pub fn read_with(paths: &[PathBuf], opts: Options) -> Collected {
    let (files, errors) = discover(paths);
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = Collected::default();
    c.reports = read_inputs(files, &opts, &mut c).expect("read");
    c
}

/// The report of the file whose name is `name`.
pub fn report<'a>(c: &'a Collected, name: &str) -> &'a FileReport {
    c.reports
        .iter()
        .find(|r| r.path.ends_with(&format!("/{name}")) || r.path == name)
        .unwrap_or_else(|| panic!("no report for {name}"))
}

/// The trajectories read from files whose name contains `name`, in input order.
pub fn from_file<'a>(c: &'a Collected, name: &str) -> Vec<&'a Trajectory> {
    c.trajectories.iter().filter(|t| t.provenance.path.contains(name)).collect()
}

/// Builds a `(name, count)` list into the report's map type.
pub fn counts(pairs: &[(&str, u64)]) -> std::collections::BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// A report's counts in the order `assert_figures` compares them: records, trajectories,
/// subagents, steps, tool calls, duplicate records, rejected records.
pub type Counts = (u64, u64, u64, u64, u64, u64, u64);

/// Asserts every figure of one file's report: its format, its counts, its rejections by
/// reason and gaps by kind, and that the file was read whole, on its own, without error.
/// `what` names the file in a failure.
pub fn assert_figures(
    r: &FileReport,
    what: &str,
    format: &str,
    want: Counts,
    reasons: &[(&str, u64)],
    gaps: &[(&str, u64)],
) {
    assert_eq!(r.format.as_deref(), Some(format), "{what}");
    let got = (r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.duplicate_records, r.rejected);
    assert_eq!(got, want, "{what}: records, trajectories, subagents, steps, tool calls, duplicates, rejected");
    assert_eq!(r.reasons, counts(reasons), "{what} reasons");
    assert_eq!(r.gaps, counts(gaps), "{what} gaps");
    assert!(r.error.is_none() && r.part_of.is_none(), "{what}: {:?} {:?}", r.error, r.part_of);
}
