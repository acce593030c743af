//! `trajkit build`, `stats` and `query` on the example corpus (real published files of
//! seven formats, see examples/corpus/*/NOTICE.md), pinned with exact figures.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn trajkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trajkit")).args(args).output().expect("run trajkit")
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Builds the example corpus with its registry into `dir/lib`.
fn build_examples(dir: &Path, extra: &[&str]) -> (PathBuf, Output) {
    let lib = dir.join("lib");
    let registry = repo("examples/sources.toml");
    let mut args = vec!["build", "--quiet", "--registry", s(&registry), "-o", s(&lib)];
    args.extend_from_slice(extra);
    let out = trajkit(&args);
    (lib, out)
}

fn rows(lib: &Path) -> Vec<Value> {
    let f = std::fs::File::open(lib.join("evaluation/per_trajectory.jsonl.gz")).expect("rows");
    let mut text = String::new();
    flate2::read::GzDecoder::new(f).read_to_string(&mut text).expect("gunzip");
    text.lines().map(|l| serde_json::from_str(l).expect("row json")).collect()
}

fn json_file(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).expect("read")).expect("json")
}

fn query(lib: &Path, sql: &str) -> Vec<Value> {
    let out = trajkit(&["query", "--json", s(lib), sql]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("json row")).collect()
}

#[test]
fn build_examples_pins_every_figure() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, out) = build_examples(dir.path(), &[]);
    // Exit 0: the library is built; some records were rejected (BFCL final-call outputs
    // and ToolBench queries without a rollout are deliberately excluded) and counted.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for f in [
        "build.json",
        "coverage.json",
        "index.sqlite",
        "manifest.json",
        "evaluation/summary.json",
        "evaluation/model_imitation.json",
        "evaluation/per_trajectory.jsonl.gz",
        "canonical/part-00000.jsonl.zst",
    ] {
        assert!(lib.join(f).is_file(), "{f} missing");
    }
    assert!(!lib.join("index.sqlite-wal").exists() && !lib.join("index.sqlite-shm").exists());
    let rows = rows(&lib);
    assert_eq!(rows.len(), 38);
    let mut per_source: BTreeMap<String, (u64, u64, u64, u64, u64)> = BTreeMap::new();
    for r in &rows {
        let e = per_source.entry(r["source"].as_str().unwrap().to_string()).or_default();
        e.0 += 1;
        e.1 += u64::from(r["status"] == "success");
        e.2 += u64::from(r["status"] == "failure");
        e.3 += u64::from(r["sft_eligible"] == true);
        e.4 += u64::from(r["training_eligible"] == true);
    }
    let expected: BTreeMap<String, (u64, u64, u64, u64, u64)> = [
        ("harbor-atif", (4, 0, 0, 3, 3)),
        ("nemo-gym", (29, 16, 13, 20, 20)),
        ("swe-agent", (2, 0, 0, 2, 2)),
        ("mini-swe-agent", (1, 0, 0, 1, 1)),
        // Its first observation was cut by the collector (truncated_observation): not complete.
        ("toolbench", (1, 0, 0, 0, 0)),
        ("tau-bench", (1, 0, 1, 0, 0)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(per_source, expected);
    // Tiers: ordered, and only sft-eligible rows reach tier 2 and above.
    let tiers: Vec<u64> = rows.iter().map(|r| r["quality_tier"].as_u64().unwrap()).collect();
    let mut by_tier = [0u64; 5];
    for t in &tiers {
        by_tier[*t as usize] += 1;
    }
    assert_eq!(by_tier, [1, 11, 6, 0, 20]);
    for r in &rows {
        assert_eq!(r["quality_tier"].as_u64().unwrap() >= 2, r["sft_eligible"] == true, "{}", r["id"]);
        // Unknown is never a failure.
        assert_eq!(r["outcome_known"] == true, r["status"] != "unknown");
    }
    // tau-bench is evaluation_only: protected, never training-eligible, and structurally
    // invalid (the published run reuses tool call id "0").
    let tau = rows.iter().find(|r| r["source"] == "tau-bench").unwrap();
    assert_eq!(tau["split"], "protected_evaluation");
    assert_eq!(tau["structural_valid"], false);
    assert_eq!(tau["structural_problems"].as_array().unwrap().len(), 11);
    // The OpenHands ATIF run ends on a call without result (a gap, not complete).
    let summary = json_file(&lib.join("evaluation/summary.json"));
    assert_eq!(summary["attempts"], 38);
    assert_eq!(summary["tasks"], 37);
    assert_eq!(summary["outcomes"]["success"], 16);
    assert_eq!(summary["outcomes"]["failure"], 14);
    assert_eq!(summary["outcomes"]["unknown"], 8);
    assert_eq!(summary["tasks_solved_at_least_once"]["solved"], 16);
    assert_eq!(summary["tasks_solved_at_least_once"]["tasks_with_known_outcome"], 30);
    assert_eq!(summary["quality"]["sft_eligible"], 26);
    assert_eq!(summary["actions"]["tool_calls"]["total"], 240);
    assert_eq!(summary["rejected_records"], 21);
    let imitation = json_file(&lib.join("evaluation/model_imitation.json"));
    assert_eq!(imitation["status"], "not_computed");
    assert!(imitation["metrics"].is_null());
    // Coverage names every deliberate exclusion by reason.
    let coverage = json_file(&lib.join("coverage.json"));
    let bfcl = coverage["sources"].as_array().unwrap().iter().find(|s| s["source"] == "bfcl").unwrap();
    assert_eq!(bfcl["records"], 16);
    assert_eq!(bfcl["accepted"], 0);
    assert_eq!(bfcl["rejected_by_reason"]["final_call_only"], 16);
    let gym = coverage["sources"].as_array().unwrap().iter().find(|s| s["source"] == "nemo-gym").unwrap();
    assert_eq!(gym["duplicate_records"], 1);
    assert_eq!(gym["records"], 30);
    assert_eq!(gym["accepted"], 29);
    // The index agrees with the rows.
    let q = query(&lib, "SELECT count(*) AS n, sum(tool_calls) AS calls FROM trajectories");
    assert_eq!(q[0]["n"], 38);
    assert_eq!(q[0]["calls"], 240);
    let q = query(&lib, "SELECT reason, count(*) AS n FROM rejections GROUP BY reason ORDER BY reason");
    assert_eq!(
        q,
        vec![
            serde_json::json!({"reason": "final_call_only", "n": 16}),
            serde_json::json!({"reason": "not_a_rollout", "n": 5})
        ]
    );
    assert_eq!(query(&lib, "SELECT count(*) AS n FROM tool_calls")[0]["n"], 240);
    // The gallery is part of the library: titled with the library's name, not the staging directory's.
    let page = std::fs::read_to_string(lib.join("examples.html")).unwrap();
    assert!(page.contains("<title>") && !page.contains("trajkit-build"), "gallery title names the staging directory");
    // The manifest covers every other file and verifies.
    let out = trajkit(&["manifest", "verify", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
}

#[test]
fn rows_point_at_their_canonical_records() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, _) = build_examples(dir.path(), &[]);
    let library = trajkit_library::Library::open(&lib).expect("open");
    let mut n = 0;
    for item in library.records().expect("records") {
        let (row, record) = item.expect("row and record");
        assert_eq!(row.id, record.id);
        assert_eq!(row.content_digest, record.content_digest);
        assert_eq!(row.task_key, record.task.key);
        n += 1;
    }
    assert_eq!(n, 38);
}

#[test]
fn output_is_identical_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    let two = dir.path().join("two");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&two).unwrap();
    let (a, _) = build_examples(&one, &["--threads", "1"]);
    let (b, _) = build_examples(&two, &["--threads", "2"]);
    let files = |root: &Path| -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                    out.insert(rel, std::fs::read(&p).unwrap());
                }
            }
        }
        out
    };
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (name, bytes) in &fa {
        if name == "build.json" || name == "manifest.json" {
            continue; // the build time, and the manifest's entry for build.json
        }
        assert!(bytes == &fb[name], "{name} differs between --threads 1 and --threads 2");
    }
}

#[test]
fn output_must_be_a_library_and_strict_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("notes");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("keep.txt"), "mine").unwrap();
    let examples = repo("examples/corpus/gym");
    let out = trajkit(&["build", "-q", s(&examples), "-o", s(&other)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a trajkit library"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(other.join("keep.txt")).unwrap(), "mine");

    // A first library, then a strict build that hits a rejection: the first stays.
    let lib = dir.path().join("lib");
    let out = trajkit(&["build", "-q", s(&examples), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let before = std::fs::read(lib.join("evaluation/per_trajectory.jsonl.gz")).unwrap();
    let bfcl = repo("examples/corpus/bfcl");
    let out = trajkit(&["build", "-q", "--strict", s(&bfcl), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("final_call_only"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(lib.join("evaluation/per_trajectory.jsonl.gz")).unwrap(), before);
    // No staging directory is left next to the library (only its build lock file).
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".lib.") && n != ".lib.trajkit.lock")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A build killed with -9 leaves its staging directory behind (never the library):
    // the next build removes it.
    let killed = dir.path().join(".lib.trajkit-build-1-2");
    std::fs::create_dir_all(killed.join("canonical")).unwrap();
    std::fs::write(killed.join("canonical/part-00000.jsonl.zst"), b"half").unwrap();
    // A second good build replaces the library.
    let out = trajkit(&["build", "-q", s(&repo("examples/corpus/swe_agent")), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(rows(&lib).len(), 2);
    assert!(!killed.exists());
}

#[test]
fn identical_records_in_two_files_share_a_duplicate_group_and_keep_both_rows() {
    // The same real NeMo Gym rollouts published twice (one file copied under two names).
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let src = repo("examples/corpus/gym/aviary__example_rollouts.jsonl");
    std::fs::copy(&src, data.join("a.jsonl")).unwrap();
    std::fs::copy(&src, data.join("b.jsonl")).unwrap();
    let lib = dir.path().join("lib");
    let out = trajkit(&["build", "-q", s(&data), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = rows(&lib);
    assert_eq!(rows.len(), 10);
    for i in 0..5 {
        let (a, b) = (&rows[i], &rows[i + 5]);
        assert_eq!(a["duplicate_group"], b["duplicate_group"]);
        assert_eq!(a["duplicate_group_size"], 2);
        // Every attempt keeps its row; the repeat's library id says it is a repeat.
        assert_eq!(b["id"], format!("{}~1", a["id"].as_str().unwrap()));
        // Same task, so same split; the first by source locator ranks first.
        assert_eq!(a["split"], b["split"]);
        assert_eq!((a["task_rank"].as_u64(), b["task_rank"].as_u64()), (Some(1), Some(2)));
    }
    let groups = query(&lib, "SELECT size, trajectory_ids FROM duplicate_groups ORDER BY duplicate_group");
    assert_eq!(groups.len(), 5);
    let ids: Vec<String> = serde_json::from_str(groups[0]["trajectory_ids"].as_str().unwrap()).unwrap();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[1], format!("{}~1", ids[0]));
    let summary = json_file(&lib.join("evaluation/summary.json"));
    assert_eq!(summary["duplicates"]["groups_with_duplicates"], 5);
    assert_eq!(summary["duplicates"]["trajectories_in_duplicate_groups"], 10);
}

#[test]
fn an_evaluation_only_source_protects_its_tasks_in_every_source() {
    // The same real tau-bench run in a training source and an evaluation-only one.
    let dir = tempfile::tempdir().unwrap();
    for d in ["train", "heldout"] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
        std::fs::copy(repo("examples/corpus/tau_bench/tb_airline.json"), dir.path().join(d).join("run.json")).unwrap();
    }
    std::fs::copy(repo("examples/corpus/swe_agent/pydicom__pydicom-1458.traj"), dir.path().join("train/p.traj"))
        .unwrap();
    let registry = dir.path().join("sources.toml");
    std::fs::write(
        &registry,
        "[[source]]\nname = \"mine\"\npaths = [\"train\"]\n\n[[source]]\nname = \"bench\"\npaths = [\"heldout\"]\nrole = \"evaluation_only\"\n",
    )
    .unwrap();
    let lib = dir.path().join("lib");
    let out = trajkit(&["build", "-q", "--registry", s(&registry), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = rows(&lib);
    let splits: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (r["source"].as_str().unwrap(), r["format"].as_str().unwrap(), r["split"].as_str().unwrap()))
        .collect();
    // Files in path order: p.traj, then run.json; the SWE-agent task draws its split by hash.
    assert_eq!(splits[..2], [("mine", "swe-agent", "test"), ("mine", "tau-bench", "protected_evaluation")]);
    assert_eq!(splits[2], ("bench", "tau-bench", "protected_evaluation"));
    assert!(rows.iter().filter(|r| r["split"] == "protected_evaluation").all(|r| r["training_eligible"] == false));
}

#[test]
fn without_a_registry_benchmarks_are_flagged_and_rewards_stay_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let out =
        trajkit(&["build", s(&repo("examples/corpus/tau_bench")), s(&repo("examples/corpus/gym")), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("source \"tau_bench\" looks like the public evaluation benchmark tau-bench"), "{err}");
    let rows = rows(&lib);
    assert_eq!(rows.len(), 30);
    // Gym rewards without a success rule: the outcome stays as the source gave it.
    let gym: Vec<&Value> = rows.iter().filter(|r| r["source"] == "gym").collect();
    assert_eq!(gym.len(), 29);
    assert!(gym.iter().all(|r| r["role"] == "training"));
    let build = json_file(&lib.join("build.json"));
    assert_eq!(build["kind"], "trajkit-library");
    assert_eq!(build["split"]["salt"], "trajkit-split-v1");
    assert_eq!(build["warnings"].as_array().unwrap().len(), 2);
}

#[test]
fn query_is_read_only_and_stats_agree_with_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, _) = build_examples(dir.path(), &[]);
    let before = std::fs::read(lib.join("index.sqlite")).unwrap();
    let out = trajkit(&["query", s(&lib), "DELETE FROM trajectories"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("readonly"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(lib.join("index.sqlite")).unwrap(), before);

    let out = trajkit(&["stats", s(&lib), "--by", "source", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let by: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let gym = by.iter().find(|r| r["key"] == "nemo-gym").unwrap();
    assert_eq!(
        (gym["attempts"].as_u64(), gym["success"].as_u64(), gym["failure"].as_u64()),
        (Some(29), Some(16), Some(13))
    );
    assert_eq!(gym["tasks_solved"], 16);
    let out = trajkit(&["stats", s(&lib)]);
    let table = text(&out.stdout);
    assert!(table.starts_with("38 attempts of 37 tasks from 6 sources"), "{table}");
    assert!(table.contains("success@k, descriptive"));
    assert!(table.contains("pass@k, estimate"));
    // The contamination report's totals (evaluation/contamination.json): the examples'
    // protected task has no overlapping training trajectory.
    assert!(table.contains(
        "contamination (13-word n-grams): 0 of 1 protected tasks overlapped; 0 training trajectories caught by \
         instruction (now protected), 0 training-eligible by content"
    ));
    let out = trajkit(&["stats", s(&lib), "--json"]);
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["contamination"]["protected_clusters"], 1);
    assert_eq!(
        stats["contamination"]["totals"],
        serde_json::json!({"tasks_with_overlaps": 0, "instruction_overlaps": 0, "content_overlaps": 0})
    );
}

#[test]
fn atif_exported_from_every_family_is_detected_as_atif() {
    // Documents whose `extra` carries other families' keys (trace ids, tool names) are still
    // ATIF: the parsed top-level version wins detection.
    let dir = tempfile::tempdir().unwrap();
    let (lib, _) = build_examples(dir.path(), &[]);
    let out_dir = dir.path().join("atif");
    let out =
        trajkit(&["export", s(&lib), "--view", "full", "--split", "train", "--format", "atif", "-o", s(&out_dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = trajkit(&["inspect", "--json", s(&out_dir)]);
    let formats: BTreeMap<String, usize> = text(&out.stdout).lines().fold(BTreeMap::new(), |mut m, l| {
        let v: Value = serde_json::from_str(l).unwrap();
        *m.entry(v["format"].as_str().unwrap_or("none").to_string()).or_default() += 1;
        m
    });
    assert_eq!(formats, BTreeMap::from([("atif".to_string(), 23)]));
}

#[test]
fn redact_hides_a_planted_secret_in_exports_and_the_gallery() {
    // A real SWE-agent run with a key planted into its first observation (synthetic secret).
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let secret = "sk-proj-Q7vT2mKx9LpR4sWz8NbY3cHd6FgJ1aEu";
    let source = std::fs::read_to_string(repo("examples/corpus/swe_agent/function_calling_simple.traj")).unwrap();
    let mut doc: Value = serde_json::from_str(&source).unwrap();
    let obs = doc["history"][1]["content"].as_str().unwrap().to_string();
    doc["history"][1]["content"] = Value::String(format!("export OPENAI_API_KEY={secret}\n{obs}"));
    std::fs::write(data.join("run.traj"), serde_json::to_vec(&doc).unwrap()).unwrap();
    let lib = dir.path().join("lib");
    let out = trajkit(&["build", "-q", "--redact", s(&data), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(lib.join("examples.html")).unwrap();
    assert!(!page.contains(secret) && page.contains("[REDACTED:openai_key:1]"), "gallery not redacted");
    // The library keeps the data as read; exports redact on request.
    let plain = dir.path().join("plain.jsonl");
    let red = dir.path().join("red.jsonl");
    let split = rows(&lib)[0]["split"].as_str().unwrap().to_string();
    for (file, extra) in [(&plain, None), (&red, Some("--redact"))] {
        let mut args = vec!["export", s(&lib), "--view", "full", "--split", &split, "--evaluation", "-o", s(file)];
        args.extend(extra);
        let out = trajkit(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let plain = std::fs::read_to_string(&plain).unwrap();
    let red_text = std::fs::read_to_string(&red).unwrap();
    assert!(plain.contains(secret));
    assert!(!red_text.contains(secret) && red_text.contains("[REDACTED:openai_key:1]"));
    assert_eq!(plain.lines().count(), red_text.lines().count());
    let card = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    assert!(card.contains("trajkit redaction: built-in rules"), "{card}");
}

#[test]
fn stats_and_export_count_duplicate_groups_once_with_dedup_and_change_nothing_without() {
    // Every real fixture: 529 trajectories in 509 exact duplicate groups and 485 near-duplicate
    // groups (docs/library.md#near-duplicate-groups).
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = dir.path().join("lib");
    let out = trajkit(&["build", "--quiet", s(&repo("tests/fixtures/real")), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let attempts = |extra: &[&str]| {
        let mut args = vec!["stats", "--json", s(&lib)];
        args.extend_from_slice(extra);
        let out = trajkit(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).expect("json")["attempts"].as_u64().expect("attempts")
    };
    assert_eq!((attempts(&[]), attempts(&["--dedup", "exact"]), attempts(&["--dedup", "near"])), (529, 509, 485));
    let export = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        let mut args = vec!["export", s(&lib), "--view", "full", "--split", "train", "-o", s(&path)];
        args.extend_from_slice(extra);
        let out = trajkit(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        (std::fs::read(&path).expect("export"), text(&out.stdout) + &text(&out.stderr))
    };
    let (plain, _) = export("plain.jsonl", &[]);
    let (again, _) = export("again.jsonl", &[]);
    assert_eq!(plain, again, "no flag: the export as before");
    // No two training-eligible train rows share an interaction; 13 are near-duplicates of an
    // earlier one (the left-out table counts them as `duplicate`).
    let (exact, _) = export("exact.jsonl", &["--dedup", "exact"]);
    let (near, said) = export("near.jsonl", &["--dedup", "near"]);
    let lines = |b: &[u8]| b.split(|c| *c == b'\n').filter(|l| !l.is_empty()).count();
    assert_eq!((lines(&plain), lines(&exact), lines(&near)), (300, 300, 287), "{said}");
    assert!(said.contains("duplicate 13"), "{said}");
}

#[test]
fn a_source_read_through_a_mapping_joins_the_library_and_its_task_clusters() {
    // The real tau-bench run twice: once through a mapping (examples/mappings), once through the
    // built-in reader in an evaluation-only source. The mapped copy keys its task differently
    // (its environment differs), and its instruction still ties it to the protected task.
    let dir = tempfile::tempdir().unwrap();
    for d in ["mapped", "heldout"] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
        std::fs::copy(repo("examples/corpus/tau_bench/tb_airline.json"), dir.path().join(d).join("run.json")).unwrap();
    }
    std::fs::copy(repo("examples/mappings/tau-bench-v1.toml"), dir.path().join("tb.toml")).unwrap();
    let registry = dir.path().join("sources.toml");
    std::fs::write(
        &registry,
        "[[source]]\nname = \"inhouse\"\npaths = [\"mapped\"]\nmapping = \"tb.toml\"\n\n[[source]]\nname = \"bench\"\npaths = [\"heldout\"]\nrole = \"evaluation_only\"\n",
    )
    .unwrap();
    let lib = dir.path().join("lib");
    let out = trajkit(&["build", "-q", "--registry", s(&registry), "-o", s(&lib)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = rows(&lib);
    let got: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|r| {
            let f = |k: &str| r[k].as_str().unwrap();
            (f("source"), f("format"), f("task_key"), f("split"))
        })
        .collect();
    // Two keys (the environment is part of an instruction hash), one cluster by content.
    assert_eq!(
        got,
        [
            ("inhouse", "mapping:tau-bench-v1", "h:a73908ba6a93bac6", "protected_evaluation"),
            ("bench", "tau-bench", "h:881faad19e08b79d", "protected_evaluation"),
        ]
    );
    let cluster = query(&lib, "SELECT task_cluster, task_cluster_reason FROM trajectories ORDER BY ordinal");
    assert_eq!(cluster[0]["task_cluster"], cluster[1]["task_cluster"], "one task cluster: {cluster:?}");
    let reasons: Vec<&Value> = cluster.iter().map(|r| &r["task_cluster_reason"]).collect();
    assert!(reasons.contains(&&Value::from("same_instruction")), "{reasons:?}");
    // `mapping` and `format` together are a registry error (exit 2, nothing built).
    std::fs::write(
        &registry,
        "[[source]]\nname = \"x\"\npaths = [\"mapped\"]\nmapping = \"tb.toml\"\nformat = \"tau-bench\"\n",
    )
    .unwrap();
    let out = trajkit(&["build", "-q", "--registry", s(&registry), "-o", s(&dir.path().join("lib2"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`mapping` and `format` exclude each other"), "{}", text(&out.stderr));
}

#[test]
fn mapping_flag_reads_an_in_house_shape_and_excludes_format() {
    let mapping = repo("examples/mappings/tau-bench-v1.toml");
    let input = repo("examples/corpus/tau_bench/tb_airline.json");
    let out = trajkit(&["inspect", "--json", "--mapping", s(&mapping), s(&input)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["format"].as_str(), v["steps"].as_u64(), v["tool_calls"].as_u64()),
        (Some("mapping:tau-bench-v1"), Some(42), Some(12))
    );
    let out = trajkit(&["inspect", "--mapping", s(&mapping), "--format", "tau-bench", s(&input)]);
    assert_eq!(out.status.code(), Some(2));
    let out = trajkit(&["inspect", "--mapping", s(&repo("README.md")), s(&input)]);
    assert_eq!(out.status.code(), Some(2), "an unreadable mapping reads nothing");
    assert!(text(&out.stderr).contains("mapping "), "{}", text(&out.stderr));
}
