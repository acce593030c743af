//! The command-line contract: exit codes, error messages naming file and position,
//! atomic compressed output and determinism. Bad-input cases are synthetic by nature
//! (no published file is truncated on purpose); good input comes from the real fixtures.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn trajkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trajkit")).args(args).output().expect("run trajkit")
}

fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const GOOD: &str = r#"{"responses_create_params":{"input":"hi"},"response":{"output":[{"type":"message","role":"assistant","content":"hello"}]},"reward":1.0}"#;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write");
    p
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("gzip");
    e.finish().expect("gzip")
}

#[test]
fn inspect_json_reports_the_contract_keys() {
    let out = trajkit(&["inspect", "--json", real("gym/graphwalks__example_rollouts.jsonl").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json line");
    for key in [
        "path",
        "format",
        "records",
        "trajectories",
        "subagents",
        "steps",
        "tool_calls",
        "duplicate_records",
        "rejected",
        "reasons",
        "gaps",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["trajectories"], 4);
    assert_eq!(v["duplicate_records"], 1);
}

#[test]
fn validate_exit_codes_tell_scripts_what_happened() {
    let ok = trajkit(&["validate", real("gym/ether0__example_rollouts.jsonl").to_str().unwrap()]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let some_rejected = trajkit(&["validate", real("gym/bbq__example_rollouts.jsonl").to_str().unwrap()]);
    assert_eq!(some_rejected.status.code(), Some(1));
    let stdout = text(&some_rejected.stdout);
    assert!(stdout.contains("bbq__example_rollouts.jsonl:1: $: not_a_rollout"), "{stdout}");
    let nothing = trajkit(&["validate", "/nonexistent/path.jsonl"]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(text(&nothing.stderr).contains("/nonexistent/path.jsonl"));
    let usage = trajkit(&["validate"]);
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn bad_inputs_get_clear_messages_and_the_rest_is_still_processed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Truncated JSON on line 2.
    write(d, "a_rollouts.jsonl", format!("{GOOD}\n{}\n", &GOOD[..40]).as_bytes());
    // Invalid UTF-8 inside a string on line 1.
    let mut bad_utf8 = GOOD.replace("hello", "hel\u{1}lo").into_bytes();
    let pos = bad_utf8.iter().position(|&b| b == 1).unwrap();
    bad_utf8[pos] = 0xff;
    write(d, "b_rollouts.jsonl", &bad_utf8);
    // A truncated .gz: three good lines, the stream cut short.
    let gz = gzip(format!("{GOOD}\n{GOOD}\n{GOOD}\n").as_bytes());
    write(d, "c_rollouts.jsonl.gz", &gz[..gz.len() - 12]);
    // An empty file.
    write(d, "d_rollouts.jsonl", b"");
    // JSON nested 10,000 deep.
    let deep = format!("{GOOD}\n{}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    write(d, "e_rollouts.jsonl", deep.as_bytes());
    // A valid 50 MB single line, then a good one.
    let big = GOOD.replace("hello", &"x".repeat(50 << 20));
    write(d, "f_rollouts.jsonl", format!("{big}\n{GOOD}\n").as_bytes());
    let missing = d.join("missing.jsonl");

    let out = trajkit(&["validate", d.to_str().unwrap(), missing.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("a_rollouts.jsonl:2: $: invalid_json: invalid JSON at line 1 column 40"), "{stdout}");
    assert!(
        stdout.contains(&format!("b_rollouts.jsonl:1: $: invalid_utf8: invalid UTF-8 at byte offset {pos}")),
        "{stdout}"
    );
    assert!(stdout.contains("c_rollouts.jsonl.gz:"), "{stdout}");
    assert!(stdout.contains("d_rollouts.jsonl: empty file"), "{stdout}");
    assert!(stdout.contains("e_rollouts.jsonl:2: $: invalid_json") && stdout.contains("recursion limit"), "{stdout}");
    assert!(stderr.contains("missing.jsonl"), "{stderr}");

    let out = trajkit(&["inspect", "--json", d.to_str().unwrap()]);
    let reports: Vec<serde_json::Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let by = |n: &str| reports.iter().find(|r| r["path"].as_str().unwrap().ends_with(n)).unwrap().clone();
    assert_eq!(by("a_rollouts.jsonl")["trajectories"], 1);
    assert_eq!(by("c_rollouts.jsonl.gz")["error"].as_str().map(|e| e.contains("read failed")), Some(true));
    assert!(by("c_rollouts.jsonl.gz")["records"].as_u64() >= Some(1), "lines before the cut are read");
    assert_eq!(by("e_rollouts.jsonl")["trajectories"], 1);
    assert_eq!(by("f_rollouts.jsonl")["trajectories"], 2, "a 50 MB line is read, not refused");
}

#[test]
fn convert_writes_compressed_output_atomically_and_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let gym = real("gym");
    let one = dir.path().join("one.jsonl.zst");
    let two = dir.path().join("two.jsonl.gz");
    let a = trajkit(&["convert", gym.to_str().unwrap(), "--threads", "1", "-o", one.to_str().unwrap()]);
    let b = trajkit(&["convert", gym.to_str().unwrap(), "--threads", "2", "-o", two.to_str().unwrap()]);
    assert_eq!(a.status.code(), Some(1), "fixtures include non-rollout files: {}", text(&a.stderr));
    assert_eq!(b.status.code(), Some(1));
    let zst = zstd::decode_all(std::fs::File::open(&one).unwrap()).unwrap();
    let mut gz = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(std::fs::File::open(&two).unwrap()), &mut gz).unwrap();
    assert_eq!(zst, gz, "same records in the same order whatever the thread count");
    assert_eq!(text(&zst).lines().count(), 113);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".trajkit-"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary files left behind");
}

#[test]
fn failed_convert_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.jsonl");
    let out = trajkit(&["convert", "/nonexistent", "-o", out_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!out_path.exists());
}

#[test]
fn stdin_is_read_with_detection() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trajkit"))
        .args(["inspect", "--json", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(real("gym/graphwalks__example_rollouts.jsonl")).unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["path"].as_str(), v["format"].as_str(), v["trajectories"].as_u64()),
        (Some("-"), Some("gym"), Some(4))
    );
}

#[test]
fn unrecognised_files_are_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "x.json", br#"{"hello": "world"}"#);
    let out = trajkit(&["inspect", "--json", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "nothing readable");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["format"].is_null());
    assert!(v["error"].as_str().unwrap().contains("not a recognised trajectory format"));
}

#[test]
fn schema_is_published_and_current() {
    let out = trajkit(&["schema"]);
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/record.schema.json");
    let published: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("docs/record.schema.json")).unwrap();
    assert_eq!(printed, published, "regenerate with: trajkit schema > docs/record.schema.json");
}

#[test]
fn strict_stops_at_the_first_rejection() {
    let bbq = real("gym/bbq__example_rollouts.jsonl");
    let out = trajkit(&["validate", "--strict", bbq.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout).lines().count(), 1, "only the first problem: {}", text(&out.stdout));
    let all = trajkit(&["validate", "--json", bbq.to_str().unwrap()]);
    let rows: Vec<serde_json::Value> = text(&all.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[4]["line"], 5);
    assert_eq!(rows[4]["reason"], "not_a_rollout");
}

#[test]
fn forced_format_and_unknown_format() {
    let dir = tempfile::tempdir().unwrap();
    // Named so that detection would not claim it; --format gym reads it anyway.
    let p = write(dir.path(), "data.jsonl", format!("{GOOD}\n").as_bytes());
    let out = trajkit(&["inspect", "--json", "--format", "gym", p.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["format"].as_str(), v["trajectories"].as_u64()), (Some("gym"), Some(1)));
    let bad = trajkit(&["inspect", "--format", "nope", p.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("unknown format 'nope'"));
}

#[test]
fn lines_crossing_chunk_and_batch_boundaries_are_read_whole() {
    // Synthetic: line sizes chosen to straddle the 1 MiB read chunks and 8 MiB batches.
    let dir = tempfile::tempdir().unwrap();
    let sizes: Vec<usize> = (0..30).map(|i| [10, 1_500_000, 300, 2_900_000, 70_000][i % 5] + i).collect();
    let mut body = String::new();
    for (i, n) in sizes.iter().enumerate() {
        body.push_str(&GOOD.replace("hello", &"y".repeat(*n)));
        body.push_str(if i % 3 == 0 { "\r\n" } else { "\n" });
        if i % 7 == 0 {
            body.push_str("   \n");
        }
    }
    body.push_str(&GOOD.replace("hello", "last line without newline"));
    let p = write(dir.path(), "big_rollouts.jsonl", body.as_bytes());
    let out_path = dir.path().join("out.jsonl");
    let out = trajkit(&["convert", p.to_str().unwrap(), "-o", out_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&out_path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), sizes.len() + 1);
    let mut expected_line = 1;
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["provenance"]["line"], expected_line, "record {i}");
        expected_line += if i % 7 == 0 { 2 } else { 1 };
        let content = r["steps"][1]["content"].as_str().unwrap();
        match sizes.get(i) {
            Some(n) => assert_eq!(content.len(), *n, "record {i}"),
            None => assert_eq!(content, "last line without newline"),
        }
    }
}
