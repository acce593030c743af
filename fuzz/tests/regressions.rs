//! The fuzz targets' harness on fixed inputs: every file under `fuzz/regressions/TARGET/`
//! (framed `name NUL bytes`, as AFL++ saves it: an input a fuzzer found, or a synthetic one
//! for a resource limit no real file reaches, listed in fuzz/README.md) ends as its
//! `.expected` file says, without a panic; and every AFL++ seed of every target runs.

use std::path::Path;

use trajkit_fuzz::seeds::afl_seeds;
use trajkit_fuzz::targets::{run_framed, TARGETS};

/// The repository root.
fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Inputs a fuzzer found: each ends in the outcome its `.expected` file names.
#[test]
fn regressions_end_as_expected() {
    let scratch = tempfile::tempdir().unwrap();
    let mut ran = Vec::new();
    for target in TARGETS {
        let dir = repo().join("fuzz/regressions").join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files.iter().filter(|f| f.extension().is_none_or(|e| e != "expected")) {
            let data = std::fs::read(file).unwrap();
            let expected = std::fs::read_to_string(file.with_extension("expected")).unwrap();
            let got = run_framed(target, &data, scratch.path());
            assert_eq!(got, expected.trim_end(), "{}", file.display());
            ran.push(format!("{target}/{}", file.file_name().unwrap().to_string_lossy()));
        }
    }
    assert_eq!(ran, EXPECTED_REGRESSIONS);
}

/// The regression inputs, by target and file name.
const EXPECTED_REGRESSIONS: &[&str] = &["formats/gzip-line-129mib", "formats/nesting-1000"];

/// Every AFL++ seed of every target runs through its harness without a panic: per target,
/// the number of seeds and how many of them end in an accepted record or a clean capture
/// (the real fixtures, cut as `afl_seeds` cuts them; exact figures of this repository).
#[test]
fn afl_seeds_run() {
    let scratch = tempfile::tempdir().unwrap();
    let mut got = Vec::new();
    for target in TARGETS {
        let seeds = afl_seeds(target, repo()).unwrap();
        let ok = seeds.iter().filter(|s| accepted(&run_framed(target, s, scratch.path()))).count();
        got.push(format!("{target} {} {ok}", seeds.len()));
    }
    assert_eq!(got, EXPECTED_SEEDS);
}

/// Whether a signature says something was accepted: a trajectory read (count after the
/// format), a database captured or an array diagnosed, or text redacted or left alone.
fn accepted(signature: &str) -> bool {
    signature.split('|').any(|file| file.starts_with("Some(") && !file.contains(") 0 "))
        || signature.starts_with("ok ")
        || signature == "none"
        || signature.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// Seeds per target and how many of them are accepted (the others are fixtures kept because
/// they are not trajectories or are malformed, and the Parquet seed, which no reader accepts:
/// it covers the container and the rejection path).
const EXPECTED_SEEDS: &[&str] = &[
    "formats 190 103",
    "canonical 528 528",
    "zip 6 4",
    "parquet 1 0",
    "sqlite 1 1",
    "npy 23 19",
    "redact 190 190",
    "json 190 186",
];
