//! The contamination report (docs/quality.md#contamination-report): training trajectories
//! that overlap a protected task by instruction (caught by the task clusters, listed as now
//! protected) or by 13-word n-grams of content; `--fail-on-contamination`.

mod common;

use std::path::{Path, PathBuf};

use common::{build_in_groups, real};
use serde_json::Value;
use trajkit_library::{build, BuildOptions, ContaminationOptions, Quiet};

/// `evaluation/contamination.json`.
fn report(lib: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(lib.join("evaluation/contamination.json")).expect("report")).expect("json")
}

/// A real ATIF trajectory under another session id, its steps edited by `edit`.
fn variant(rel: &str, session: &str, edit: &dyn Fn(&mut Vec<Value>)) -> Value {
    let text = std::fs::read_to_string(real(rel)).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["session_id"] = Value::from(session);
    edit(v["steps"].as_array_mut().unwrap());
    v
}

fn write(dir: &Path, rel: &str, v: &Value) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
}

/// A registry of an `evaluation_only` source `bench` (folder `eval`) and a `training`
/// source `mine` (folder `train`).
fn registry(dir: &Path) -> PathBuf {
    let path = dir.join("sources.toml");
    std::fs::write(
        &path,
        "[[source]]\nname = \"bench\"\npaths = [\"eval\"]\nrole = \"evaluation_only\"\n\n\
         [[source]]\nname = \"mine\"\npaths = [\"train\"]\nrole = \"training\"\n",
    )
    .unwrap();
    path
}

const EVAL: &str = "atif/claude-code-pass-v1.7.trajectory.json";
const TRAIN: &str = "atif/terminus2-hello-world-v1.3.trajectory.json";

/// The first 60 words of the evaluation run's longest tool-call argument (the Go code its
/// agent wrote).
fn quoted_passage() -> String {
    let v = variant(EVAL, "x", &|_| {});
    let mut texts: Vec<&str> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["tool_calls"].as_array().into_iter().flatten())
        .flat_map(|c| c["arguments"].as_object().unwrap().values().filter_map(Value::as_str))
        .collect();
    texts.sort_by_key(|t| std::cmp::Reverse(t.split_whitespace().count()));
    texts[0].split_whitespace().take(60).collect::<Vec<_>>().join(" ")
}

/// Synthetic (no real file shows it): a training trajectory of another task (a real
/// terminus-2 hello-world run, so its instruction clusters apart) whose last agent message
/// quotes 60 words of a protected task's content (the code a real Claude Code run wrote). Beside it
/// the unedited run, and a reworded copy of the evaluation run (" Please be thorough.").
fn contaminated_sources(dir: &Path) -> PathBuf {
    write(dir, "eval/task.json", &variant(EVAL, "eval-session", &|_| {}));
    write(dir, "train/clean.json", &variant(TRAIN, "clean", &|_| {}));
    let passage = quoted_passage();
    let quoting = variant(TRAIN, "quoting", &|steps| {
        let last = steps.iter_mut().rev().find(|s| s["source"] == "agent").unwrap();
        let message = format!("{} As the issue says: {passage}", last["message"].as_str().unwrap_or(""));
        last["message"] = Value::from(message);
    });
    write(dir, "train/quoting.json", &quoting);
    let reworded = variant(EVAL, "reworded", &|steps| {
        let user = steps.iter_mut().find(|s| s["source"] == "user").unwrap();
        let message = format!("{} Please be thorough.", user["message"].as_str().unwrap());
        user["message"] = Value::from(message);
    });
    write(dir, "train/reworded.json", &reworded);
    registry(dir)
}

#[test]
fn a_quoted_passage_under_another_instruction_is_reported_and_fails_the_build_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let registry = contaminated_sources(dir.path());
    let opts = BuildOptions { registry: Some(registry), output: dir.path().join("lib"), ..BuildOptions::default() };
    let summary = build(&opts, &Quiet).expect("build");
    assert_eq!((summary.trajectories, summary.contamination_failure.clone()), (4, None));
    let lib = &opts.output;
    let r = report(lib);
    assert_eq!(r["protected_clusters"], 1);
    assert_eq!(
        r["totals"],
        serde_json::json!({"tasks_with_overlaps": 1, "instruction_overlaps": 1, "content_overlaps": 1})
    );
    assert_eq!(
        r["by_source"],
        serde_json::json!([{"source": "mine", "instruction_overlaps": 1, "content_overlaps": 1}])
    );
    let eval_cluster = common::column(lib, "SELECT task_cluster FROM trajectories WHERE source = 'bench'");
    assert_eq!(r["tasks"][0]["task_cluster"], eval_cluster[0].as_str());
    let listed: Vec<(String, String, String, Value)> = r["tasks"][0]["trajectories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["path"].as_str().unwrap().rsplit('/').next().unwrap().into(),
                o["kind"].as_str().unwrap().into(),
                o["status"].as_str().unwrap().into(),
                o.get("ngrams").or(o.get("similarity")).cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    // The reworded copy is caught by clustering (now protected); the quoting run is not
    // (its instruction is another task's) and is found by its content: 60 shared words
    // make 48 13-grams, of which winnowing keeps these.
    assert_eq!(
        listed,
        vec![
            ("reworded.json".into(), "near_duplicate".into(), "now_protected".into(), Value::from(0.9091)),
            ("quoting.json".into(), "ngram".into(), "training_eligible".into(), Value::from(6)),
        ]
    );
    assert_eq!(
        common::column(
            lib,
            "SELECT path || ' ' || training_eligible FROM trajectories WHERE source = 'mine' ORDER BY path"
        ),
        ["train/clean.json 1", "train/quoting.json 1", "train/reworded.json 0"]
    );

    // The same sources with --fail-on-contamination: nothing is written, the message names
    // the trajectory, the task and the overlap.
    let failing = BuildOptions {
        output: dir.path().join("strict/lib"),
        contamination: ContaminationOptions { fail: true, ..Default::default() },
        ..opts.clone()
    };
    let summary = build(&failing, &Quiet).expect("build");
    let message = summary.contamination_failure.expect("failure");
    assert!(message.starts_with("1 training-eligible trajectory overlap"), "{message}");
    let quoting = common::column(lib, "SELECT id FROM trajectories WHERE path = 'train/quoting.json'");
    assert!(
        message.contains(&format!("trajectory {} (train/quoting.json, source mine, task ", quoting[0])),
        "{message}"
    );
    assert!(message.contains(&format!("shares 6 13-word n-gram(s) with protected task cluster {}", eval_cluster[0])));
    assert!(!failing.output.exists(), "nothing written");
    let left: Vec<String> = std::fs::read_dir(dir.path().join("strict"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, [".lib.trajkit.lock"], "no staging directory left (the lock file stays, as after --strict)");
}

#[test]
fn a_clean_library_reports_no_overlap_and_passes_the_option() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "eval/task.json", &variant(EVAL, "eval-session", &|_| {}));
    write(dir.path(), "train/clean.json", &variant(TRAIN, "clean", &|_| {}));
    let opts = BuildOptions {
        registry: Some(registry(dir.path())),
        output: dir.path().join("lib"),
        contamination: ContaminationOptions { fail: true, ..Default::default() },
        ..BuildOptions::default()
    };
    let summary = build(&opts, &Quiet).expect("build");
    assert_eq!((summary.trajectories, summary.contamination_failure), (2, None));
    let r = report(&opts.output);
    assert_eq!(r["protected_clusters"], 1);
    assert_eq!(
        r["totals"],
        serde_json::json!({"tasks_with_overlaps": 0, "instruction_overlaps": 0, "content_overlaps": 0})
    );
    assert_eq!(r["tasks"], serde_json::json!([]));
    assert_eq!(r["method"]["ngram_words"], 13);
    assert_eq!(r["method"]["guaranteed_passage_words"], 24);
}

/// Every real fixture, with tau2 (and the tau-bench v1 runs) as the evaluation side: the
/// report pinned, and the same for a partial per file.
#[test]
fn the_real_fixtures_report_is_pinned_and_the_same_in_any_partition() {
    let dir = tempfile::tempdir().unwrap();
    let eval = ["tau2"];
    let mut train: Vec<String> = std::fs::read_dir(real(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !eval.contains(&n.as_str()) && real(n).is_dir())
        .collect();
    train.sort();
    let quote = |v: &[String]| v.iter().map(|p| format!("{:?}", real(p).display().to_string())).collect::<Vec<_>>();
    let registry = dir.path().join("sources.toml");
    let eval: Vec<String> = eval.iter().map(|s| s.to_string()).collect();
    std::fs::write(
        &registry,
        format!(
            "[[source]]\nname = \"bench\"\npaths = [{}]\nrole = \"evaluation_only\"\n\n\
             [[source]]\nname = \"rest\"\npaths = [{}]\nrole = \"training\"\n",
            quote(&eval).join(", "),
            quote(&train).join(", ")
        ),
    )
    .unwrap();
    let one =
        BuildOptions { registry: Some(registry.clone()), output: dir.path().join("one/lib"), ..Default::default() };
    build(&one, &Quiet).expect("build");
    let many = BuildOptions { output: dir.path().join("many/lib"), ..one.clone() };
    let (summary, groups) = build_in_groups(&many);
    assert!(groups > 100, "{groups}");
    assert_eq!(summary.trajectories, 529);
    let bytes = |o: &BuildOptions| std::fs::read(o.output.join("evaluation/contamination.json")).unwrap();
    assert_eq!(bytes(&one), bytes(&many), "the report is the same for any partition");
    let r = report(&one.output);
    // A real finding: the Gym tau2 telecom runs (training) share 12 to 16 winnowed 13-grams
    // (the user simulator's and the telecom tools' wording) with six protected tau2 telecom
    // tasks that their keys and instructions did not cluster with: 18 training-eligible
    // trajectories by content, none by instruction.
    assert_eq!(r["protected_clusters"], 6, "{r:#}");
    assert_eq!(
        r["totals"],
        serde_json::json!({"tasks_with_overlaps": 6, "instruction_overlaps": 0, "content_overlaps": 18})
    );
    assert_eq!(
        r["by_source"],
        serde_json::json!([{"source": "rest", "instruction_overlaps": 0, "content_overlaps": 18}])
    );
    let per_task: Vec<(u64, u64, Vec<u64>)> = r["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let ngrams = t["trajectories"].as_array().unwrap().iter().map(|o| o["ngrams"].as_u64().unwrap()).collect();
            (t["instruction_overlaps"].as_u64().unwrap(), t["content_overlaps"].as_u64().unwrap(), ngrams)
        })
        .collect();
    let expect = |n: u64| (0, 3, vec![n; 3]);
    assert_eq!(per_task, vec![expect(13), expect(16), expect(12), expect(12), expect(13), expect(13)]);
    let keys = r["tasks"][0]["trajectories"].as_array().unwrap().iter();
    assert!(keys.clone().all(|o| o["task_key"].as_str().unwrap().starts_with("tau2_benchmark_agent/[service_issue]")));
}

/// The entries of a two-phase build's partials (`plan`, then `build_partial` per group).
fn partial_entries(dir: &Path, opts: &BuildOptions) -> Vec<serde_json::Map<String, Value>> {
    let staging = dir.join("staging");
    let plan = trajkit_library::plan(opts, None).expect("plan");
    plan.groups
        .iter()
        .flat_map(|group| {
            trajkit_library::build_partial(opts, group, &staging, &Quiet).expect("partial");
            let entries = trajkit_library::plan::partial_dir(&staging, group.index).join("entries.jsonl");
            common::json_lines(&entries)
        })
        .collect()
}

/// Fingerprints are made only where the report can read them: with an `evaluation_only`
/// source every distinct interaction carries them beside its sketch; the same files as
/// training sources only carry sketches alone.
#[test]
fn content_is_fingerprinted_only_for_a_build_with_an_evaluation_source() {
    let dir = tempfile::tempdir().unwrap();
    let registry = contaminated_sources(dir.path());
    let training = dir.path().join("training.toml");
    std::fs::write(&training, std::fs::read_to_string(&registry).unwrap().replace("evaluation_only", "training"))
        .unwrap();
    let mut counts = Vec::new();
    for (name, registry) in [("with", registry), ("without", training)] {
        let opts = BuildOptions { registry: Some(registry), output: dir.path().join(name), ..BuildOptions::default() };
        let entries = partial_entries(&dir.path().join(name), &opts);
        let trajectories: Vec<_> = entries.iter().filter_map(|e| e.get("Trajectory")).collect();
        let with = |key: &str| trajectories.iter().filter(|t| t.get(key).is_some()).count();
        counts.push((trajectories.len(), with("content"), with("ngrams")));
    }
    assert_eq!(counts, [(4, 4, 4), (4, 4, 0)]);
}
