//! Bounded resources and reading trajkit's own output, end to end through the binary.
//! The decompression bomb is made on the fly in a temporary directory (never committed)
//! around the lines of a real Gym file; peak memory is measured with `/usr/bin/time -v`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

fn trajkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trajkit")).args(args).output().expect("run trajkit")
}

/// The real tau2 Gym rollouts (5 lines) with a 3 GiB line of one repeated byte inserted as
/// line 2, gzip-compressed to about 3 MB.
fn bomb(dir: &Path) -> PathBuf {
    let lines = std::fs::read_to_string(real("gym/tau2__example_rollouts.jsonl")).expect("fixture");
    let mut lines = lines.lines();
    let path = dir.join("bomb.jsonl.gz");
    let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    writeln!(gz, "{}", lines.next().expect("line 1")).expect("write");
    gz.write_all(b"{\"response\":\"").expect("write");
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..3 << 10 {
        gz.write_all(&chunk).expect("write");
    }
    gz.write_all(b"\"}\n").expect("write");
    for line in lines {
        writeln!(gz, "{line}").expect("write");
    }
    gz.finish().expect("gzip").flush().expect("flush");
    path
}

/// Runs trajkit under `/usr/bin/time -v`: its output and peak resident memory in MiB.
fn with_peak_rss(args: &[&str]) -> (Output, u64) {
    let out = Command::new("/usr/bin/time").arg("-v").arg(env!("CARGO_BIN_EXE_trajkit")).args(args).output();
    let out = out.expect("run /usr/bin/time");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let kib: u64 = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes): "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in: {stderr}"));
    (out, kib / 1024)
}

#[test]
fn a_decompression_bomb_line_is_rejected_in_bounded_memory_and_the_rest_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = bomb(dir.path());
    let size = std::fs::metadata(&path).expect("meta").len();
    assert!(size < 4 << 20, "the bomb is {size} bytes compressed");
    let p = path.to_str().expect("utf-8 path");
    let (out, peak_mib) = with_peak_rss(&["inspect", "--json", "--format", "gym", p]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (v["records"].as_u64(), v["trajectories"].as_u64(), v["rejected"].as_u64()),
        (Some(6), Some(5), Some(1))
    );
    assert_eq!(v["steps"].as_u64(), Some(65), "every other record read: the fixture's 65 steps");
    assert_eq!(v["reasons"], serde_json::json!({"record_too_large": 1}));
    assert!(peak_mib < 500, "peak RSS {peak_mib} MiB");
    let out = trajkit(&["validate", "--max-record-mib", "16", p]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains(&format!("{p}:2: $: record_too_large: record larger than the record size limit (16 MiB)")),
        "{stdout}"
    );
}

#[test]
fn converted_and_redacted_output_reads_back_and_builds_the_same_library() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = real("gym");
    let conv = dir.path().join("gym.jsonl.zst");
    let (src_s, conv_s) = (src.to_str().expect("utf-8"), conv.to_str().expect("utf-8"));
    let out = trajkit(&["convert", src_s, "-o", conv_s]);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&out.stderr));
    let out = trajkit(&["inspect", "--json", conv_s]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["format"], "canonical");
    let n = v["trajectories"].as_u64().expect("count");
    assert_eq!((v["records"].as_u64(), v["rejected"].as_u64()), (Some(n), Some(0)));

    let redacted = dir.path().join("redacted.jsonl");
    let out = trajkit(&["redact", conv_s, "-o", redacted.to_str().expect("utf-8")]);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&out.stderr));
    let out = trajkit(&["inspect", "--json", redacted.to_str().expect("utf-8")]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (v["format"].as_str(), v["trajectories"].as_u64(), v["rejected"].as_u64()),
        (Some("canonical"), Some(n), Some(0))
    );

    // Libraries from the sources and from their conversion hold the same rows.
    let (lib_a, lib_b) = (dir.path().join("a"), dir.path().join("b"));
    for (input, lib) in [(src_s, &lib_a), (conv_s, &lib_b)] {
        let out = trajkit(&["build", input, "-o", lib.to_str().expect("utf-8"), "--quiet"]);
        assert!(lib.join("index.sqlite").exists() || out.status.code().is_some_and(|c| c <= 1));
    }
    let rows = |lib: &Path| {
        let sql = "SELECT id, format, line, document_index, task_key, split, status, reward, steps, \
                   tool_calls, quality_tier, training_eligible, content_digest, duplicate_group_size, task_rank \
                   FROM trajectories ORDER BY id";
        let out = trajkit(&["query", lib.to_str().expect("utf-8"), sql, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let (a, b) = (rows(&lib_a), rows(&lib_b));
    assert!(!a.is_empty());
    assert!(a == b, "rows differ:\n{}\n---\n{}", String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
    // Paths: the build names the files it reads relative to their source root; canonical
    // records keep the path their provenance holds (the file as `convert` was given it).
    let paths = |lib: &Path| {
        let sql = "SELECT path FROM trajectories ORDER BY id";
        let out = trajkit(&["query", lib.to_str().expect("utf-8"), sql, "--json"]);
        let text = String::from_utf8(out.stdout).expect("utf-8");
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json")["path"].to_string())
            .collect::<Vec<_>>()
    };
    let (pa, pb) = (paths(&lib_a), paths(&lib_b));
    assert_eq!(pa.len(), pb.len());
    for (a, b) in pa.iter().zip(&pb) {
        let (a, b) = (a.trim_matches('"'), b.trim_matches('"'));
        assert!(b == format!("{src_s}/{a}"), "{b} is not {src_s}/{a}");
    }
}
