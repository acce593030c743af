//! Issue 15 items 4-7 and 10 on the example corpus (real files, examples/corpus/*/NOTICE.md):
//! library bytes independent of the working directory, one build per output at a time,
//! quiet ends on closed pipes, `build`'s exit status, and ordinary permissions of outputs.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trajkit"))
}

fn trajkit(args: &[&str]) -> Output {
    bin().args(args).output().expect("run trajkit")
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel).canonicalize().expect("repo path")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Every file below `root`, by relative path.
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The example build with the registry, run from `cwd` naming the registry as `registry`.
fn build_from(cwd: &Path, registry: &str, lib: &Path) -> Output {
    bin()
        .current_dir(cwd)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["build", "--quiet", "--registry", registry, "-o", s(lib)])
        .output()
        .expect("run trajkit")
}

#[test]
fn library_bytes_do_not_depend_on_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(".");
    // Same library name (the gallery's title), two places.
    let (a, b) = (dir.path().join("a/library"), dir.path().join("b/library"));
    let out = build_from(&root, "examples/sources.toml", &a);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = build_from(&root.join("crates"), "../examples/sources.toml", &b);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    // Every file, build.json and the manifest included (SOURCE_DATE_EPOCH fixes the build time).
    for (name, bytes) in &fa {
        assert!(bytes == &fb[name], "{name} differs between two working directories");
    }
    // Paths are relative to the registry's directory; no local path is in the library.
    let mut shard = String::new();
    zstd::Decoder::new(std::fs::File::open(a.join("canonical/part-00000.jsonl.zst")).unwrap())
        .unwrap()
        .read_to_string(&mut shard)
        .unwrap();
    assert!(shard.contains(r#""path":"corpus/gym/aviary__example_rollouts.jsonl""#));
    let here = s(&root);
    for name in ["build.json", "coverage.json", "index.sqlite", "examples.html", "manifest.json"] {
        assert!(!text(&fa[name]).contains(here), "{name} holds the local path {here}");
    }
    assert!(!shard.contains(here));
    let html = text(&fa["examples.html"]);
    assert!(html.contains("corpus/gym/tau2__example_rollouts.jsonl:5"));
    let coverage = text(&fa["coverage.json"]);
    assert!(coverage.contains(r#""corpus/bfcl/"#), "{coverage}");
}

#[test]
fn a_build_without_registry_names_files_below_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let out = trajkit(&["build", "-q", s(&repo("examples/corpus/gym")), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let q = trajkit(&["query", "--json", s(&lib), "SELECT DISTINCT path FROM files ORDER BY path LIMIT 2"]);
    assert_eq!(
        text(&q.stdout),
        "{\"path\":\"aviary__example_rollouts.jsonl\"}\n{\"path\":\"example_session_state_mgmt__example_rollouts.jsonl\"}\n",
        "{}",
        text(&q.stderr)
    );
}

/// Real NeMo Gym rollouts, fed to a build through its standard input.
fn gym_lines() -> Vec<u8> {
    std::fs::read(repo("examples/corpus/gym/aviary__example_rollouts.jsonl")).unwrap()
}

#[test]
fn a_second_build_of_one_output_refuses_or_waits_and_the_first_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    // The first build holds the lock while it waits for its standard input.
    let mut first = bin()
        .args(["build", "-q", "--format", "gym", "-", "-o", s(&lib)])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lock = dir.path().join(".lib.trajkit.lock");
    let pid = first.id().to_string();
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&lock).map(|t| t.trim() != pid).unwrap_or(true) {
        assert!(start.elapsed().as_secs() < 60, "the first build never took the lock");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let staging_of_first = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&format!(".lib.trajkit-build-{pid}-")))
    };
    assert!(staging_of_first());
    // A second build refuses, naming the first; the first's staging directory is untouched.
    let second = trajkit(&["build", "-q", s(&repo("examples/corpus/swe_agent")), "-o", s(&lib)]);
    assert_eq!(second.status.code(), Some(2));
    let err = text(&second.stderr);
    assert!(err.contains(&format!("another trajkit build (process {pid}) is building this library")), "{err}");
    assert!(staging_of_first());
    // A third, with --wait, waits for the first and then replaces its library.
    let third = bin()
        .args(["build", "-q", "--wait", s(&repo("examples/corpus/swe_agent")), "-o", s(&lib)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = first.stdin.take().unwrap();
    stdin.write_all(&gym_lines()).unwrap();
    drop(stdin);
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let third = third.wait_with_output().unwrap();
    assert_eq!(third.status.code(), Some(0), "{}", text(&third.stderr));
    let q = trajkit(&["query", "--json", s(&lib), "SELECT count(*) AS n FROM trajectories"]);
    assert_eq!(text(&q.stdout), "{\"n\":2}\n");
}

/// Runs trajkit with its stdout a pipe whose reader is already gone.
fn with_closed_stdout(args: &[&str]) -> Output {
    let mut child =
        bin().args(args).env("RUST_BACKTRACE", "1").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn every_printing_command_ends_quietly_on_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let out = trajkit(&["build", "-q", "--registry", s(&repo("examples/sources.toml")), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let gym = repo("examples/corpus/gym");
    let bfcl = repo("examples/corpus/bfcl");
    let cases: Vec<Vec<&str>> = vec![
        vec!["stats", s(&lib)],
        vec!["stats", s(&lib), "--json"],
        vec!["stats", s(&lib), "--by", "model"],
        vec!["query", s(&lib), "SELECT * FROM trajectories"],
        vec!["inspect", s(&gym)],
        vec!["inspect", "--json", s(&gym)],
        vec!["validate", s(&bfcl)],
        vec!["convert", s(&gym), "-o", "-"],
        vec!["schema"],
        vec!["manifest", "verify", s(&lib)],
    ];
    for args in cases {
        let out = with_closed_stdout(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("backtrace") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn build_exits_0_with_rejections_unless_asked_to_fail() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let registry = repo("examples/sources.toml");
    let out = trajkit(&["build", "--registry", s(&registry), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("60 records, 38 trajectories, 21 rejected"), "{err}");
    assert!(err.contains("coverage.json"), "{err}");
    let out = trajkit(&["build", "-q", "--fail-on-rejections", "--registry", s(&registry), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(lib.join("build.json").is_file());
    // Nothing to reject: 0 with the flag too.
    let out = trajkit(&["build", "-q", "--fail-on-rejections", s(&repo("examples/corpus/swe_agent")), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// The mode of an ordinary new file in `dir` (0666 less this process's umask).
#[cfg(unix)]
fn ordinary_mode(dir: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let probe = dir.join("probe");
    std::fs::File::create(&probe).unwrap();
    let mode = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777;
    std::fs::remove_file(&probe).unwrap();
    mode
}

#[cfg(unix)]
#[test]
fn every_output_has_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let out = trajkit(&["build", "-q", "--registry", s(&repo("examples/sources.toml")), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let atif = dir.path().join("export/out.atif.jsonl");
    let out = trajkit(&["export", s(&lib), "--view", "full", "--split", "train", "--format", "atif", "-o", s(&atif)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let parquet = dir.path().join("pq/train.parquet");
    let out = trajkit(&["export", s(&lib), "--view", "full", "--split", "train", "-o", s(&parquet)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = dir.path().join("page.html");
    assert_eq!(trajkit(&["gallery", s(&lib), "-o", s(&page)]).status.code(), Some(0));
    let converted = dir.path().join("c.jsonl.zst");
    assert_eq!(trajkit(&["convert", s(&repo("examples/corpus/gym")), "-o", s(&converted)]).status.code(), Some(0));
    let manifest = dir.path().join("m.json");
    assert_eq!(trajkit(&["manifest", "create", s(&lib), "-o", s(&manifest)]).status.code(), Some(0));
    let expected = ordinary_mode(dir.path());
    let outputs = [
        lib.join("build.json"),
        lib.join("coverage.json"),
        lib.join("manifest.json"),
        lib.join("examples.html"),
        lib.join("evaluation/summary.json"),
        atif,
        dir.path().join("export/README.md"),
        parquet,
        dir.path().join("pq/README.md"),
        page,
        converted,
        manifest,
    ];
    for p in outputs {
        let mode =
            std::fs::metadata(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o777;
        assert_eq!(mode, expected, "{}: {mode:o}", p.display());
    }
}
