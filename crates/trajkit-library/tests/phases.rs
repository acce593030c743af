//! A build's phases (docs/scale-out.md): planning keeps files a record reads together in
//! one group; partials built apart (in any order, retried) and finalized give the library
//! the single-machine build gives; finalize hears cancellation. On real files.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use common::{build_in_groups, build_lib, real, rows};
use serde_json::Value;
use trajkit_library::{build, plan, BuildOptions, LibraryError, Progress};

fn examples_registry() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sources.toml")
}

/// Rows without where the record lies (shard boundaries follow the groups).
fn rows_without_shards(lib: &Path) -> Vec<Value> {
    let mut rows = rows(lib);
    for r in &mut rows {
        let o = r.as_object_mut().expect("row object");
        // Where a record lies (shard, line, frame) depends on the groups; checked by seeking.
        for k in ["shard", "shard_line", "shard_offset", "frame_offset"] {
            o.remove(k);
        }
    }
    rows
}

/// Every row's record read by seeking to its frame is the record of that id.
fn every_record_seeks(lib: &Path) {
    let lib = trajkit_library::Library::open(lib).expect("library");
    for row in lib.rows().expect("rows") {
        let row = row.expect("row");
        assert!(row.shard_offset.is_some() && row.frame_offset.is_some(), "{}", row.id);
        assert_eq!(lib.record_at(&row).expect("seek").id, row.id);
    }
}

/// Every canonical record of the library, in shard order.
fn records(lib: &Path) -> Vec<String> {
    let mut names: Vec<PathBuf> =
        std::fs::read_dir(lib.join("canonical")).expect("canonical").flatten().map(|e| e.path()).collect();
    names.sort();
    let mut out = Vec::new();
    for n in names {
        let mut text = String::new();
        zstd::stream::read::Decoder::new(std::fs::File::open(n).expect("shard"))
            .expect("zstd")
            .read_to_string(&mut text)
            .expect("read");
        out.extend(text.lines().map(str::to_string));
    }
    out
}

/// The rows of an index table as JSON text, in its key order.
fn table(lib: &Path, sql: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(lib.join("index.sqlite")).expect("index");
    let mut st = conn.prepare(sql).expect("sql");
    let n = st.column_count();
    st.query_map([], |r| {
        let cells: Vec<String> = (0..n).map(|i| format!("{:?}", r.get_ref(i).expect("cell"))).collect();
        Ok(cells.join("|"))
    })
    .expect("query")
    .collect::<Result<Vec<_>, _>>()
    .expect("rows")
}

fn same_library(one: &Path, many: &Path) {
    every_record_seeks(one);
    every_record_seeks(many);
    assert_eq!(rows_without_shards(one), rows_without_shards(many));
    assert_eq!(records(one), records(many));
    for f in
        ["evaluation/summary.json", "coverage.json", "evaluation/model_imitation.json", "evaluation/contamination.json"]
    {
        assert_eq!(std::fs::read(one.join(f)).unwrap(), std::fs::read(many.join(f)).unwrap(), "{f} differs");
    }
    for sql in [
        "SELECT * FROM files ORDER BY file",
        "SELECT * FROM rejections ORDER BY rowid",
        "SELECT * FROM steps ORDER BY trajectory, step",
        "SELECT * FROM tool_calls ORDER BY trajectory, step, call",
        "SELECT * FROM duplicate_groups ORDER BY duplicate_group",
        "SELECT * FROM tasks ORDER BY task_key",
        "SELECT * FROM sources ORDER BY name",
        "SELECT ordinal, id, split, task_rank, quality_tier, duplicate_group_size FROM trajectories ORDER BY ordinal",
    ] {
        assert_eq!(table(one, sql), table(many, sql), "{sql}");
    }
}

#[test]
fn plan_keeps_files_a_record_reads_together() {
    let opts = BuildOptions { inputs: vec![real("atif")], ..BuildOptions::default() };
    let plan = plan(&opts, Some(1)).expect("plan");
    let names: Vec<Vec<String>> = plan
        .groups
        .iter()
        .map(|g| g.files.iter().map(|f| f.display.rsplit("atif/").next().unwrap_or("").to_string()).collect())
        .collect();
    assert_eq!(plan.files, 23);
    assert_eq!(plan.groups.len(), 16, "{names:#?}");
    let together = |dir: &str, n: usize| {
        let g: Vec<&Vec<String>> = names.iter().filter(|g| g.iter().any(|f| f.starts_with(dir))).collect();
        assert_eq!(g.len(), 1, "{dir} is split: {names:#?}");
        assert_eq!(g[0].len(), n, "{dir}: {names:#?}");
    };
    together("terminus2-context-summarization-v1.2/", 4);
    together("terminus2-context-summarization-v1.7/", 4);
    together("terminus2-linear-history-v1.7/", 2);
    // Without a group size the whole plan is one group.
    assert_eq!(trajkit_library::plan(&opts, None).expect("plan").groups.len(), 1);
}

#[test]
fn partials_built_apart_equal_the_single_build() {
    let dir = tempfile::tempdir().unwrap();
    let one = build_lib(&dir.path().join("one"), &[], Some(examples_registry()));
    let many = dir.path().join("many/lib");
    let opts = BuildOptions { registry: Some(examples_registry()), output: many.clone(), ..BuildOptions::default() };
    let (summary, groups) = build_in_groups(&opts);
    assert_eq!(groups, 17);
    assert_eq!((summary.files, summary.trajectories, summary.rejected, summary.shards), (22, 38, 21, 15));
    same_library(&one, &many);
    // Nothing of the partials is left in the library.
    assert!(!many.join("partials").exists());
}

#[test]
fn an_id_repeated_in_another_group_gets_the_suffix_the_single_build_gives() {
    // The same real Gym rollouts under two names: the second file's ids repeat the first's.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let src = real("gym/tau2__example_rollouts.jsonl");
    std::fs::copy(&src, data.join("a.jsonl")).unwrap();
    std::fs::copy(&src, data.join("b.jsonl")).unwrap();
    let one = build_lib(&dir.path().join("one"), std::slice::from_ref(&data), None);
    let many = dir.path().join("many/lib");
    let opts = BuildOptions { inputs: vec![data], output: many.clone(), ..BuildOptions::default() };
    let (summary, groups) = build_in_groups(&opts);
    assert_eq!((groups, summary.trajectories), (2, 10));
    same_library(&one, &many);
    let ids: Vec<String> = rows(&many).iter().map(|r| r["id"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(ids.iter().filter(|id| id.ends_with("~1")).count(), 5, "{ids:?}");
}

/// Cancels once a given stage has begun.
struct CancelAt {
    stage: &'static str,
    seen: AtomicBool,
}

impl Progress for CancelAt {
    fn stage(&self, name: &str) {
        if name == self.stage {
            self.seen.store(true, Ordering::Relaxed);
        }
    }
    fn cancelled(&self) -> bool {
        self.seen.load(Ordering::Relaxed)
    }
}

#[test]
fn finalize_stops_at_a_cancel_in_each_of_its_stages_and_keeps_the_old_library() {
    let dir = tempfile::tempdir().unwrap();
    let lib = build_lib(dir.path(), &[real("gym")], None);
    let before = std::fs::read(lib.join("index.sqlite")).unwrap();
    let opts = BuildOptions { registry: Some(examples_registry()), output: lib.clone(), ..BuildOptions::default() };
    for stage in ["merging", "indexing", "contamination", "evaluation rows", "statistics", "coverage"] {
        let progress = CancelAt { stage, seen: AtomicBool::new(false) };
        let got = build(&opts, &progress);
        assert!(matches!(got, Err(LibraryError::Cancelled)), "{stage}: {got:?}");
        assert_eq!(std::fs::read(lib.join("index.sqlite")).unwrap(), before, "{stage}");
        let leftovers: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".lib.trajkit-"))
            .collect();
        assert!(leftovers.is_empty(), "{stage}: {leftovers:?}");
    }
}

/// What a build told its progress, in order (file names, stages, `reading done`).
#[derive(Default)]
struct Events(std::sync::Mutex<Vec<String>>);

impl Progress for Events {
    fn file_done(&self, report: &trajkit_formats::FileReport, _bytes: u64, _trajectories: u64) {
        self.0.lock().unwrap().push(format!("file {}", report.path));
    }
    fn stage(&self, name: &str) {
        self.0.lock().unwrap().push(format!("stage {name}"));
    }
    fn reading_done(&self) {
        self.0.lock().unwrap().push("reading done".to_string());
    }
}

#[test]
fn reading_done_is_told_once_between_the_last_file_and_finalize() {
    // The binary returns the reading threads' freed memory there (crate `trajkit`,
    // `alloc::release_freed_memory`): it must come after every file and before merging.
    let dir = tempfile::tempdir().unwrap();
    let opts = BuildOptions {
        inputs: vec![real("gym"), real("atif")],
        registry: None,
        output: dir.path().join("lib"),
        ..BuildOptions::default()
    };
    let events = Events::default();
    let summary = build(&opts, &events).expect("build");
    let events = events.0.into_inner().unwrap();
    let at = |e: &str| events.iter().position(|x| x == e).unwrap_or_else(|| panic!("no {e:?} in {events:?}"));
    assert_eq!(events.iter().filter(|e| *e == "reading done").count(), 1, "{events:?}");
    let last_file = events.iter().rposition(|e| e.starts_with("file ")).expect("files");
    assert_eq!(events.iter().filter(|e| e.starts_with("file ")).count() as u64, summary.files);
    assert!(at("stage reading") < last_file && last_file < at("reading done"), "{events:?}");
    assert_eq!(at("reading done") + 1, at("stage merging"), "{events:?}");
}
