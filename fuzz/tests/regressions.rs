//! The fuzz targets' harness on fixed inputs: every file under `fuzz/regressions/TARGET/`
//! (framed `name NUL bytes`, as AFL++ saves it: an input a fuzzer found) ends as its
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
const EXPECTED_REGRESSIONS: &[&str] = &[];
