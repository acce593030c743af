//! Exports of a library built from real records: selection and eligibility rules, the row
//! shapes of each format, shards, the dataset card, ATIF validity and next-action scoring.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{one, Spec};
use trajkit_export::{export, ExportOptions, ExportSummary, Filter, Format, Purpose, Selection, Split, View};
use trajkit_library::Library;

const CS17: &str = "atif/terminus2-context-summarization-v1.7/trajectory.json";
const LH17: &str = "atif/terminus2-linear-history-v1.7/trajectory.json";
const HW13: &str = "atif/terminus2-hello-world-v1.3.trajectory.json";
const CC: &str = "atif/claude-code-pass-v1.7.trajectory.json";
const TO16: &str = "atif/terminus2-timeout-v1.6.trajectory.json";

/// A: train success; B: train failure; C: train success, not training-eligible;
/// D: protected_evaluation; E: validation, tier 1.
fn five(dir: &Path) -> PathBuf {
    support::library(
        dir,
        &[
            (one(CS17), Spec::new("golden-a", "train", "success")),
            (one(LH17), Spec::new("golden-b", "train", "failure").family("swe")),
            (one(HW13), Spec::new("golden-a", "train", "success").eligible(false)),
            (one(CC), Spec::new("claude", "protected_evaluation", "success")),
            (one(TO16), Spec::new("golden-a", "validation", "unknown").tier(1)),
        ],
    )
}

fn opts(lib: &Path, out: &Path, view: View, split: Split, selection: Selection, purpose: Purpose) -> ExportOptions {
    ExportOptions {
        view,
        format: None,
        filter: Filter { selection, split, sources: Vec::new(), purpose, dedup: Default::default() },
        output: out.to_path_buf(),
        shard_size: None,
        library_label: lib.display().to_string(),
        chat_template: None,
        redactor: None,
    }
}

fn run(o: &ExportOptions) -> ExportSummary {
    let lib = Library::open(Path::new(&o.library_label)).expect("library");
    export(&lib, o).expect("export")
}

fn read_text(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read");
    let mut s = String::new();
    match path.extension().and_then(|e| e.to_str()) {
        Some("gz") => flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_string(&mut s).map(|_| ()),
        Some("zst") => {
            zstd::stream::read::Decoder::new(&bytes[..]).and_then(|mut d| d.read_to_string(&mut s)).map(|_| ())
        }
        _ => String::from_utf8(bytes).map(|t| s = t).map_err(|e| std::io::Error::other(e.to_string())),
    }
    .expect("decode");
    s
}

fn jsonl(path: &Path) -> Vec<Value> {
    read_text(path).lines().map(|l| serde_json::from_str(l).expect("json line")).collect()
}

#[test]
fn training_exports_take_only_eligible_rows_of_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let lib = five(&dir.path().join("lib"));
    let out = dir.path().join("out/train.jsonl");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let s = run(&opts(&lib, &out, View::Full, Split::Train, Selection::All, Purpose::Training));
    let rows = jsonl(&out);
    let ids: Vec<&str> = rows.iter().map(|r| r["metadata"]["trajectory_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [one(CS17).id, one(LH17).id]);
    assert_eq!(s.entry.rows, 2);
    let skipped: Vec<(&str, u64)> = s.entry.skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(skipped, [("not_training_eligible", 1), ("other_split", 2)]);
    assert!(rows.iter().all(|r| r["metadata"]["purpose"] == "training"));

    let out = dir.path().join("out/success.jsonl");
    let s = run(&opts(&lib, &out, View::Full, Split::Train, Selection::Success, Purpose::Training));
    assert_eq!((s.entry.rows, s.entry.skipped.get("not_selected").copied()), (1, Some(1)));

    let mut o =
        opts(&lib, &dir.path().join("out/b.jsonl"), View::Full, Split::Train, Selection::All, Purpose::Training);
    o.filter.sources = vec!["golden-b".into()];
    let s = run(&o);
    assert_eq!((s.entry.rows, s.entry.sources[0].name.as_str()), (1, "golden-b"));

    // Tier filter: E has tier 1, so an evaluation export of validation with tier>=2 is empty
    // (the file still exists, with no line).
    let out = dir.path().join("out/val.jsonl");
    let s = run(&opts(&lib, &out, View::Full, Split::Validation, Selection::TierAtLeast(2), Purpose::Evaluation));
    assert_eq!(s.entry.rows, 0);
    assert_eq!(read_text(&out), "");
}

#[test]
fn protected_rows_leave_only_through_an_explicit_evaluation_export() {
    let dir = tempfile::tempdir().unwrap();
    let lib = five(&dir.path().join("lib"));
    let out = dir.path().join("protected.jsonl");
    let o = opts(&lib, &out, View::AssistantTurn, Split::ProtectedEvaluation, Selection::All, Purpose::Training);
    let l = Library::open(&lib).unwrap();
    let err = export(&l, &o).expect_err("a training export of the protected split is refused");
    assert!(err.to_string().contains("never enter a training export"), "{err}");
    assert!(!out.exists());

    let o = opts(&lib, &out, View::AssistantTurn, Split::ProtectedEvaluation, Selection::All, Purpose::Evaluation);
    let s = run(&o);
    let rows = jsonl(&out);
    // claude-code-pass: 11 agent steps, each a decision.
    assert_eq!((s.entry.rows, rows.len()), (11, 11));
    assert!(rows
        .iter()
        .all(|r| r["metadata"]["purpose"] == "evaluation" && r["metadata"]["split"] == "protected_evaluation"));
    let card = std::fs::read_to_string(&s.card).unwrap();
    assert!(card.contains("**EVALUATION EXPORT — not training data.**"), "{card}");
}

#[test]
fn openai_rows_have_the_trainer_shape_and_no_outcome_in_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let gym = support::records(&["gym/example_single_tool_call__example_rollouts.jsonl"]);
    let n = gym.len();
    let items: Vec<_> = gym.into_iter().map(|t| (t, Spec::new("gym-single", "train", "success"))).collect();
    let lib = support::library(&dir.path().join("lib"), &items);
    let out = dir.path().join("turns.jsonl.gz");
    let s = run(&opts(&lib, &out, View::AssistantTurn, Split::Train, Selection::All, Purpose::Training));
    let rows = jsonl(&out);
    assert_eq!(rows.len() as u64, s.entry.rows);
    assert_eq!(s.entry.trajectories as usize + s.entry.without_decision as usize, n);
    let first = &rows[0];
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["completion", "id", "metadata", "prompt", "tools"]);
    assert!(first["id"].as_str().unwrap().ends_with("#0"));
    for r in &rows {
        let prompt = r["prompt"].to_string();
        assert!(!prompt.contains("\"reward\"") && !prompt.contains("\"metadata\""));
        let c = &r["completion"][0];
        assert_eq!((c["role"].as_str(), c["weight"].as_u64()), (Some("assistant"), Some(1)));
        for call in c["tool_calls"].as_array().into_iter().flatten() {
            assert_eq!(call["type"], "function");
            let args = call["function"]["arguments"].as_str().expect("arguments are JSON text");
            serde_json::from_str::<Value>(args).expect("valid JSON arguments");
        }
        for m in r["prompt"].as_array().unwrap().iter().filter(|m| m["role"] == "tool") {
            assert!(m.get("tool_call_id").is_some());
        }
        assert!(r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["type"] == "function" && t["function"]["name"].is_string()));
    }
    // The reward stays in metadata.
    let rewards: Vec<f64> = items.iter().filter_map(|(t, _)| t.outcome.reward).collect();
    assert!(rows.iter().all(|r| rewards.contains(&r["metadata"]["reward"].as_f64().unwrap())));
}

#[test]
fn sharegpt_rows_use_the_llamafactory_roles() {
    let dir = tempfile::tempdir().unwrap();
    let lib = support::library(&dir.path().join("lib"), &[(one(CS17), Spec::new("a", "train", "success"))]);
    let out = dir.path().join("s.jsonl");
    let mut o = opts(&lib, &out, View::Full, Split::Train, Selection::All, Purpose::Training);
    o.format = Some(Format::ShareGpt);
    run(&o);
    let rows = jsonl(&out);
    let froms: Vec<&str> =
        rows[0]["conversations"].as_array().unwrap().iter().map(|t| t["from"].as_str().unwrap()).collect();
    // user; 3 x (text, call, output); boundary note; handoff; 4 x (text, call, output)
    let mut expected = vec!["human"];
    expected.extend(["gpt", "function_call", "observation"].repeat(3));
    expected.extend(["system", "human"]);
    expected.extend(["gpt", "function_call", "observation"].repeat(4));
    assert_eq!(froms, expected);
    let call: Value = serde_json::from_str(rows[0]["conversations"][2]["value"].as_str().unwrap()).unwrap();
    assert_eq!(
        call,
        serde_json::json!({"name": "bash_command", "arguments": {"duration": 0.1, "keystrokes": "mkdir test_dir\n"}})
    );
    assert!(rows[0]["tools"].is_string());
}

#[test]
fn shards_are_named_so_datasets_infers_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let lib = five(&dir.path().join("lib"));
    let mut o = opts(
        &lib,
        &dir.path().join("train.jsonl.zst"),
        View::AssistantTurn,
        Split::Train,
        Selection::All,
        Purpose::Training,
    );
    o.shard_size = Some(5);
    let s = run(&o);
    // A and B: 7 decisions each.
    assert_eq!(s.entry.rows, 14);
    let folder = dir.path().join("train");
    let mut names: Vec<String> =
        std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "README.md",
            "train-00000-of-00003.jsonl.zst",
            "train-00001-of-00003.jsonl.zst",
            "train-00002-of-00003.jsonl.zst"
        ]
    );
    let counts: Vec<usize> = names[1..].iter().map(|n| jsonl(&folder.join(n)).len()).collect();
    assert_eq!(counts, [5, 5, 4]);
    let card = std::fs::read_to_string(folder.join("README.md")).unwrap();
    assert!(card.contains("  - split: \"train\"\n    path:\n    - \"train-*.jsonl.zst\""), "{card}");
    // A second run into the same folder is refused rather than mixed.
    let l = Library::open(&lib).unwrap();
    assert!(export(&l, &o).is_err());
}

#[test]
fn the_card_lists_sources_licenses_selection_and_counts_per_export() {
    let dir = tempfile::tempdir().unwrap();
    let lib = five(&dir.path().join("lib"));
    let out = dir.path().join("data");
    std::fs::create_dir_all(&out).unwrap();
    run(&opts(&lib, &out.join("train.jsonl"), View::Full, Split::Train, Selection::All, Purpose::Training));
    let s = run(&opts(&lib, &out.join("val.jsonl"), View::Full, Split::Validation, Selection::All, Purpose::Training));
    assert_eq!(s.card, out.join("README.md"));
    let entries = trajkit_export::card::read_entries(&s.card).unwrap();
    let summary: Vec<(&str, &str, u64)> =
        entries.iter().map(|e| (e.output.as_str(), e.split.as_str(), e.rows)).collect();
    assert_eq!(summary, [("train.jsonl", "train", 2), ("val.jsonl", "validation", 1)]);
    let card = std::fs::read_to_string(&s.card).unwrap();
    for needle in [
        "license: \"apache-2.0\"",
        "| golden-a | Apache-2.0 | terminal | 1 | 1 |",
        "| golden-b | Apache-2.0 | swe | 1 | 1 |",
        "| selection | all |",
        "| trajkit version | 0.1.0 |",
        "| redaction | not applied |",
    ] {
        assert!(card.contains(needle), "missing {needle:?} in\n{card}");
    }
    // A README that trajkit did not write is left alone.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("README.md"), "# mine\n").unwrap();
    let s = run(&opts(&lib, &other.join("t.jsonl"), View::Full, Split::Train, Selection::All, Purpose::Training));
    assert_eq!(s.card, other.join("t.jsonl.README.md"));
    assert_eq!(std::fs::read_to_string(other.join("README.md")).unwrap(), "# mine\n");
}

#[test]
fn parquet_has_the_same_columns_and_carries_the_card() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = tempfile::tempdir().unwrap();
    let lib = five(&dir.path().join("lib"));
    let out = dir.path().join("train.parquet");
    run(&opts(&lib, &out, View::Full, Split::Train, Selection::All, Purpose::Training));
    let r = SerializedFileReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let meta = r.metadata().file_metadata();
    assert_eq!(meta.num_rows(), 2);
    // The rows of both records share one row group (one group per record made readers
    // pay a codec and a footer entry per row and column).
    assert_eq!(r.metadata().num_row_groups(), 1);
    let cols: Vec<String> =
        meta.schema_descr().root_schema().get_fields().iter().map(|f| f.name().to_string()).collect();
    assert_eq!(cols, ["id", "messages", "tools", "metadata"]);
    let kv = meta.key_value_metadata().unwrap();
    let card = kv.iter().find(|k| k.key == "trajkit.card").and_then(|k| k.value.clone()).unwrap();
    let entry: Value = serde_json::from_str(&card).unwrap();
    assert_eq!((entry["rows"].as_u64(), entry["split"].as_str()), (Some(2), Some("train")));
    assert!(kv.iter().any(|k| k.key == "huggingface"));
}

#[test]
fn atif_documents_of_every_real_family_reread_without_rejection() {
    let dir = tempfile::tempdir().unwrap();
    let (all, _) = support::read_paths(&[support::real("")]);
    let n = all.len();
    let items: Vec<_> = all.into_iter().map(|t| (t, Spec::new("all", "train", "unknown"))).collect();
    let lib = support::library(&dir.path().join("lib"), &items);
    let mut o = opts(&lib, &dir.path().join("atif"), View::Full, Split::Train, Selection::All, Purpose::Training);
    o.format = Some(Format::Atif);
    let s = run(&o);
    assert_eq!(s.entry.rows + s.entry.without_decision, n as u64);
    assert_eq!(s.files.len() as u64, s.entry.rows);
    // Read back with the ATIF reader itself (detection is not what is tested here).
    let (back, rejected) = support::read_paths_as(&[dir.path().join("atif")], Some("atif"));
    assert_eq!(rejected, Vec::<String>::new());
    assert_eq!(back.len() as u64, s.entry.rows);
    assert!(back.iter().all(|t| t.provenance.format == "atif"));

    // The same as JSON Lines, one document per line.
    let mut o = opts(&lib, &dir.path().join("atif.jsonl"), View::Full, Split::Train, Selection::All, Purpose::Training);
    o.format = Some(Format::Atif);
    run(&o);
    let (lines, rejected) = support::read_paths_as(&[dir.path().join("atif.jsonl")], Some("atif"));
    assert_eq!((lines.len() as u64, rejected.len()), (s.entry.rows, 0));

    // Round trip of an ATIF source: steps, calls, copied context, subagents and token ids kept.
    let src = one(CS17);
    let again = back.iter().find(|t| t.id == src.id).expect("re-read CS17");
    assert_eq!(again.steps.len(), src.steps.len());
    let calls = |t: &trajkit_model::Trajectory| t.steps.iter().map(|s| s.tool_calls.len()).collect::<Vec<_>>();
    assert_eq!(calls(again), calls(&src));
    assert_eq!(again.subagents.len(), 3);
    let copied = |t: &trajkit_model::Trajectory| {
        t.subagents.iter().map(|s| s.trajectory.steps.iter().filter(|x| x.copied_context).count()).collect::<Vec<_>>()
    };
    assert_eq!(copied(again), [3, 0, 5]);
    assert_eq!(again.steps[1].metrics, src.steps[1].metrics);
    assert_eq!(again.steps[4].extra.get("extra"), src.steps[4].extra.get("extra"));
}

#[test]
fn gym_tool_steps_become_results_of_the_calling_agent_step() {
    // Gym keeps each function_call_output as a tool step; ATIF has no tool source, so the
    // result joins the observation of the agent step that made the call. Line 1 of this
    // file: reasoning + function_call, its output, then the final message.
    let t = support::records(&["gym/example_tool_call_multireward__example_rollouts.jsonl"]).remove(0);
    let doc = trajkit_export::atif::document(&t);
    let steps = doc["steps"].as_array().unwrap();
    let tool_steps = t.steps.iter().filter(|s| s.role == trajkit_model::Role::Tool).count();
    assert_eq!((tool_steps, steps.len()), (1, t.steps.len() - 1));
    let answered: Vec<&Value> = steps.iter().filter(|s| s.get("observation").is_some()).collect();
    assert_eq!(answered.len(), 1);
    let call = "chatcmpl-tool-aecb7a4507d66fe1";
    assert_eq!(answered[0]["tool_calls"][0]["tool_call_id"], call);
    assert_eq!(answered[0]["observation"]["results"][0]["source_call_id"], call);
    assert_eq!(answered[0]["source"], "agent");
}
