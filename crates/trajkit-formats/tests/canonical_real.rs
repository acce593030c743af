//! The `canonical` reader on trajkit's own output: every real fixture converted, then the
//! conversion converted again, byte for byte; and the checks that reject edited records.

mod common;

use std::path::{Path, PathBuf};

use common::{read, real, report};
use trajkit_formats::{discover, read_inputs, InputFile, Options, Reason, Sink};
use trajkit_model::Trajectory;

/// Canonical lines in input order.
#[derive(Default)]
struct Lines(Vec<u8>, u64);

impl Sink for Lines {
    fn trajectory(&mut self, _: &InputFile, _: Option<&Trajectory>, canonical: Option<&[u8]>) {
        self.0.extend_from_slice(canonical.unwrap_or_default());
        self.1 += 1;
    }
}

/// What `trajkit convert` writes for `paths`: the canonical lines and how many.
fn convert(paths: &[PathBuf]) -> (Vec<u8>, u64) {
    let (files, errors) = discover(paths);
    assert!(errors.is_empty(), "{errors:?}");
    let mut sink = Lines::default();
    read_inputs(files, &Options { canonical: true, ..Options::default() }, &mut sink).expect("read");
    (sink.0, sink.1)
}

/// The whole real fixture tree, converted once.
fn converted_tree(dir: &Path) -> (PathBuf, Vec<u8>, u64) {
    let (bytes, n) = convert(&[real("")]);
    let out = dir.join("tree.jsonl");
    std::fs::write(&out, &bytes).expect("write");
    (out, bytes, n)
}

#[test]
fn converting_converted_records_gives_the_same_bytes_on_every_real_fixture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, first, n) = converted_tree(dir.path());
    assert_eq!(n, 529, "trajectories converted from the fixture tree");
    let (second, m) = convert(std::slice::from_ref(&out));
    assert_eq!(m, n);
    assert!(first == second, "convert of convert's output differs from it");
    // Compressed output reads back the same way.
    let zst = dir.path().join("tree.jsonl.zst");
    std::fs::write(&zst, zstd::encode_all(&first[..], 1).expect("zstd")).expect("write");
    let (third, _) = convert(&[zst]);
    assert!(first == third, "the .zst copy differs");
    let c = read(&[out]);
    let r = report(&c, "tree.jsonl");
    assert_eq!((r.format.as_deref(), r.records, r.trajectories, r.rejected), (Some("canonical"), n, n, 0));
}

/// The first converted record of a real ATIF file, as a JSON value.
fn atif_record() -> serde_json::Value {
    let (bytes, _) = convert(&[real("atif")]);
    let first = bytes.split(|&b| b == b'\n').next().expect("a line");
    serde_json::from_slice(first).expect("canonical JSON")
}

/// Reads one edited record back; returns its rejection reason and JSON path.
fn reject(dir: &Path, value: &serde_json::Value) -> (Reason, String) {
    let path = dir.join("edited.jsonl");
    std::fs::write(&path, format!("{value}\n")).expect("write");
    let c = read(&[path]);
    assert_eq!(c.trajectories.len(), 0);
    let r = &c.rejections[0];
    assert_eq!(r.line, Some(1));
    (r.reason, r.problems[0].json_path.clone())
}

#[test]
fn an_edited_record_is_a_digest_mismatch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut v = atif_record();
    v["task"]["instruction"] = serde_json::Value::String("edited after sealing".into());
    assert_eq!(reject(dir.path(), &v), (Reason::DigestMismatch, "$.content_digest".into()));
}

#[test]
fn keys_and_versions_outside_the_schema_are_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut v = atif_record();
    v["steps"][0]["colour"] = serde_json::json!("blue");
    assert_eq!(reject(dir.path(), &v), (Reason::UnknownField, "$.steps[0].colour".into()));
    let mut v = atif_record();
    v["schema_version"] = serde_json::json!("trajkit.trajectory/1");
    assert_eq!(reject(dir.path(), &v), (Reason::InvalidValue, "$.schema_version".into()));
    let mut v = atif_record();
    v["steps"][0]["role"] = serde_json::json!("narrator");
    assert_eq!(reject(dir.path(), &v).0, Reason::SchemaViolation);
}
