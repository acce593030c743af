//! Shared helpers: build a library with the library API and read its rows, summary and index.

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;
use trajkit_library::{build, build_partial, plan, BuildOptions, BuildSession, Quiet};

/// A real fixture file or folder of the repository.
pub fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

/// Builds `inputs` (or a registry's sources) into `dir/lib`; returns the library path.
pub fn build_lib(dir: &Path, inputs: &[PathBuf], registry: Option<PathBuf>) -> PathBuf {
    let output = dir.join("lib");
    let opts = BuildOptions { inputs: inputs.to_vec(), registry, output: output.clone(), ..BuildOptions::default() };
    let summary = build(&opts, &Quiet).expect("build");
    assert_eq!(summary.strict_failure, None);
    output
}

/// Every row of `evaluation/per_trajectory.jsonl.gz`, in order.
pub fn rows(lib: &Path) -> Vec<Value> {
    let f = std::fs::File::open(lib.join("evaluation/per_trajectory.jsonl.gz")).expect("rows");
    let mut text = String::new();
    flate2::read::GzDecoder::new(f).read_to_string(&mut text).expect("gunzip");
    text.lines().map(|l| serde_json::from_str(l).expect("row json")).collect()
}

/// `evaluation/summary.json`.
pub fn summary(lib: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(lib.join("evaluation/summary.json")).expect("summary")).expect("json")
}

/// The first column of every row of `sql` on the index, as text.
pub fn column(lib: &Path, sql: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(lib.join("index.sqlite")).expect("index");
    let mut st = conn.prepare(sql).expect("sql");
    let got = st
        .query_map([], |r| {
            Ok(match r.get_ref(0)? {
                rusqlite::types::ValueRef::Null => "NULL".to_string(),
                rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                rusqlite::types::ValueRef::Real(f) => f.to_string(),
                rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                rusqlite::types::ValueRef::Blob(_) => "<blob>".to_string(),
            })
        })
        .expect("query")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows");
    got
}

/// Lines of a JSON Lines file that parse as objects.
pub fn json_lines(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .collect()
}

/// Writes JSON Lines.
pub fn write_lines(path: &Path, rows: &[serde_json::Map<String, Value>]) {
    let text: String = rows.iter().map(|r| serde_json::to_string(r).expect("json") + "\n").collect();
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Builds with every file group apart (`group_bytes` 1: a group per file, or per set of
/// files read together), the partials in reverse order and the first one twice.
pub fn build_in_groups(opts: &BuildOptions) -> (trajkit_library::BuildSummary, usize) {
    let session = BuildSession::begin(opts).expect("begin");
    let plan = plan(opts, Some(1)).expect("plan");
    for g in plan.groups.iter().rev().chain(plan.groups.first()) {
        build_partial(opts, g, session.staging(), &Quiet).expect("partial");
    }
    let summary = session.finish(opts, &plan, &Quiet, None).expect("finish");
    (summary, plan.groups.len())
}
