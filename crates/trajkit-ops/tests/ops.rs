//! The operations on real files (the repository's example Gym corpus and fixtures):
//! exact figures, typed errors naming the file, and cancellation leaving no output.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use trajkit_formats::ReadRequest;
use trajkit_library::{BuildOptions, Quiet};
use trajkit_ops::{BuildRequest, ExportRequest, OpsError, RedactionOptions, Silent};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

fn request(paths: Vec<PathBuf>) -> ReadRequest {
    ReadRequest { paths, ..ReadRequest::default() }
}

/// A library built from the example Gym corpus into `dir/lib`.
fn library(dir: &Path) -> PathBuf {
    let out = dir.join("lib");
    let req = BuildRequest {
        library: BuildOptions { inputs: vec![repo("examples/corpus/gym")], output: out.clone(), ..Default::default() },
        redaction: RedactionOptions::default(),
    };
    let summary = trajkit_ops::build(&req, &Quiet).expect("build");
    assert_eq!((summary.files, summary.trajectories, summary.rejected), (6, 29, 0));
    assert!(out.join("examples.html").is_file(), "the gallery is part of the library");
    out
}

fn export_request(lib: &Path, out: &Path) -> ExportRequest {
    ExportRequest {
        library: lib.to_path_buf(),
        view: "full".into(),
        selection: "all".into(),
        split: "train".into(),
        output: out.to_path_buf(),
        ..Default::default()
    }
}

#[test]
fn convert_writes_the_accepted_records_and_reports_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.jsonl");
    let bbq = repo("tests/fixtures/real/gym/bbq__example_rollouts.jsonl");
    let tau2 = repo("tests/fixtures/real/gym/tau2__example_rollouts.jsonl");
    let never = AtomicBool::new(false);
    let req = request(vec![bbq, tau2]);
    let got = trajkit_ops::convert(&req, &out, &never, &mut |_, _| {}, &mut Silent).expect("convert");
    // bbq's 5 lines are not rollouts; tau2's 5 are read (65 steps).
    assert_eq!((got.written, got.outcome.rejected(), got.outcome.exit_code()), (Some(5), 5, 1));
    assert_eq!(std::fs::read_to_string(&out).expect("output").lines().count(), 5);
    assert_eq!(got.outcome.reports.iter().map(|r| r.steps).sum::<u64>(), 65);
}

#[test]
fn convert_cancelled_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.jsonl");
    let cancel = AtomicBool::new(true);
    let req = request(vec![repo("examples/corpus/gym")]);
    let got = trajkit_ops::convert(&req, &out, &cancel, &mut |_, _| {}, &mut Silent).expect("convert");
    assert_eq!(got.written, None);
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0, "no file, no temporary file");
}

#[test]
fn build_without_inputs_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let req = BuildRequest {
        library: BuildOptions { output: dir.path().join("lib"), ..Default::default() },
        ..Default::default()
    };
    assert!(matches!(trajkit_ops::build(&req, &Quiet), Err(OpsError::Usage(_))));
}

#[test]
fn a_missing_redaction_rules_file_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("absent.toml");
    let req = BuildRequest {
        library: BuildOptions {
            inputs: vec![repo("examples/corpus/gym")],
            output: dir.path().join("lib"),
            ..Default::default()
        },
        redaction: RedactionOptions { redaction_rules: Some(rules.clone()), ..Default::default() },
    };
    match trajkit_ops::build(&req, &Quiet) {
        Err(OpsError::Rules(trajkit_verify::redact::RulesError::Io { path, .. })) => assert_eq!(path, rules),
        other => panic!("expected a rules error naming the file, got {other:?}"),
    }
}

#[test]
fn export_figures_typed_errors_and_cancellation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = library(dir.path());
    let never = AtomicBool::new(false);

    let out = dir.path().join("full/train.jsonl");
    let got = trajkit_ops::export(&export_request(&lib, &out), &never).expect("export");
    let lines = std::fs::read_to_string(&out).expect("output").lines().count() as u64;
    assert_eq!((got.summary.entry.rows, got.summary.entry.trajectories), (lines, lines));
    assert_eq!(got.redacted, None);

    let bad = ExportRequest { view: "no-such-view".into(), ..export_request(&lib, &out) };
    assert!(matches!(trajkit_ops::export(&bad, &never), Err(OpsError::Usage(_))));
    let absent = dir.path().join("absent");
    match trajkit_ops::export(&export_request(&absent, &out), &never) {
        Err(OpsError::Library(trajkit_library::LibraryError::NotALibrary(p))) => assert_eq!(p, absent),
        Err(OpsError::Library(trajkit_library::LibraryError::Io { path, .. })) => assert!(path.starts_with(&absent)),
        other => panic!("expected a library error naming {absent:?}, got {other:?}"),
    }

    let cancelled = dir.path().join("cancelled/train.jsonl");
    let cancel = AtomicBool::new(true);
    assert!(matches!(trajkit_ops::export(&export_request(&lib, &cancelled), &cancel), Err(OpsError::Cancelled)));
    let left: Vec<_> = std::fs::read_dir(dir.path().join("cancelled")).map(|d| d.count()).into_iter().collect();
    assert!(left.is_empty() || left == [0], "a cancelled export leaves no file and no card");
}
