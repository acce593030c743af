//! `trajkit gallery`: exit codes, the line it prints, the flag, atomic output. The library
//! is assembled from the real fixtures by the gallery's test support (shared file).

#[path = "../../trajkit-export/tests/gallery_support/mod.rs"]
mod gallery_support;

use std::process::{Command, Output};

fn trajkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trajkit")).args(args).output().expect("run trajkit")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn gallery_writes_the_page_and_says_what_is_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    gallery_support::write_library(&lib, &gallery_support::standard_entries());
    let out = dir.path().join("examples.html");
    let run = trajkit(&["gallery", lib.to_str().unwrap(), "-o", out.to_str().unwrap(), "--examples-per-source", "2"]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let page = std::fs::read_to_string(&out).expect("page written");
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_eq!(page.matches("<article class=\"example\"").count(), 10);
    let expected = format!("wrote {} ({} bytes): 18 trajectories, 5 sources, 10 examples\n", out.display(), page.len());
    assert_eq!(text(&run.stderr), expected);
    // Only the page is left in the directory: the temporary file was renamed into place.
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 2, "{names:?}");

    // The default is 4 per source.
    let run = trajkit(&["gallery", lib.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0));
    assert!(text(&run.stderr).ends_with("18 trajectories, 5 sources, 16 examples\n"), "{}", text(&run.stderr));
}

#[test]
fn gallery_of_a_directory_that_is_not_a_library_fails_with_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("examples.html");
    let run = trajkit(&["gallery", dir.path().to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    assert!(text(&run.stderr).contains("not a trajkit library"), "{}", text(&run.stderr));
    assert!(!out.exists());
    let usage = trajkit(&["gallery", dir.path().to_str().unwrap()]);
    assert_eq!(usage.status.code(), Some(2), "-o is required");
    let bad = trajkit(&["gallery", dir.path().to_str().unwrap(), "-o", "x.html", "--examples-per-source", "many"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `build` gathers its gallery's rows as it writes them; `trajkit gallery` reads them back
/// from the finished library. On a library built from the real fixture tree, the two pages
/// are the same bytes (the title is the library directory's name in both).
#[test]
fn the_builds_gallery_is_the_one_read_back_from_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/real");
    let built = trajkit(&["build", fixtures, "-o", lib.to_str().unwrap(), "--quiet"]);
    assert_eq!(built.status.code(), Some(0), "{}", text(&built.stderr));
    let out = dir.path().join("again.html");
    let run = trajkit(&["gallery", lib.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let from_build = std::fs::read(lib.join("examples.html")).unwrap();
    let read_back = std::fs::read(&out).unwrap();
    assert!(from_build.len() > 50_000, "{} bytes", from_build.len());
    assert!(from_build == read_back, "the build's page differs from the one read back");
}
