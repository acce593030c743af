//! `trajkit export` and `trajkit evaluate-actions` as a user runs them: exit codes,
//! messages, outputs, and next-action scores with exact figures. Libraries are assembled
//! from real records by the export crate's test support (until `trajkit build` lands).

#[path = "../../trajkit-export/tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};
use support::{one, Spec};

const CS17: &str = "atif/terminus2-context-summarization-v1.7/trajectory.json";
const CC: &str = "atif/claude-code-pass-v1.7.trajectory.json";

fn trajkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trajkit")).args(args).output().expect("run trajkit")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// CS17 in train (source `terminus`), claude-code-pass in protected_evaluation (`claude`).
fn library(dir: &Path) -> PathBuf {
    support::library(
        &dir.join("lib"),
        &[
            (one(CS17), Spec::new("terminus", "train", "success")),
            (one(CC), Spec::new("claude", "protected_evaluation", "success").family("swe")),
        ],
    )
}

fn rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn write_lines(path: &Path, lines: &[Value]) {
    let body: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(path, body).unwrap();
}

/// Predictions for the 7 decisions of CS17 (rows of its assistant-turn export): exact for
/// turns 0, 4 (object arguments) and 5; changed arguments (1), a renamed tool (3), text for a
/// tool call (6), an unknown id and a repeated id; turn 2 unpredicted.
fn cs17_predictions(h: &[Value]) -> Vec<Value> {
    let id = |i: usize| h[i]["id"].as_str().unwrap().to_string();
    let target = |i: usize| h[i]["completion"][0].clone();
    // Turns 0-4 call bash_command {duration, keystrokes}; 5-6 call mark_task_complete {}.
    let mut changed = target(1);
    changed["tool_calls"][0]["function"]["arguments"] = json!(r#"{"duration":0.1,"keystrokes":"ls\n"}"#);
    let mut renamed = target(3);
    renamed["tool_calls"][0]["function"]["name"] = json!("bash");
    let mut as_object = target(4);
    let args: Value =
        serde_json::from_str(as_object["tool_calls"][0]["function"]["arguments"].as_str().unwrap()).unwrap();
    as_object["tool_calls"][0]["function"]["arguments"] = args;
    vec![
        json!({"id": id(0), "message": target(0)}),
        json!({"id": id(1), "message": changed}),
        json!({"id": id(3), "message": renamed}),
        json!({"id": id(4), "message": as_object}),
        json!({"id": id(5), "completion": [target(5)]}),
        json!({"id": id(6), "message": {"role": "assistant", "content": "done"}}),
        json!({"id": "nope#0", "message": {"role": "assistant", "content": "x"}}),
        json!({"id": id(0), "message": {"role": "assistant", "content": "second"}}),
    ]
}

#[test]
fn export_then_score_predictions_with_exact_figures() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let held = dir.path().join("held.jsonl");
    let out = trajkit(&["export", s(&lib), "--view", "assistant-turn", "--split", "train", "-o", s(&held)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("wrote 7 rows from 1 trajectories (training export"), "{}", text(&out.stderr));
    assert!(dir.path().join("README.md").exists());
    let preds = cs17_predictions(&rows(&held));
    let pred_path = dir.path().join("preds.jsonl");
    write_lines(&pred_path, &preds);
    let out = trajkit(&["evaluate-actions", s(&held), s(&pred_path), "--json"]);
    assert_eq!(out.status.code(), Some(1), "a missing prediction is a finding: {}", text(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let o = &r["overall"];
    assert_eq!((o["rows"].as_u64(), o["predicted"].as_u64(), o["missing"].as_u64()), (Some(7), Some(6), Some(1)));
    assert_eq!(o["coverage"].as_f64(), Some(6.0 / 7.0));
    assert_eq!(o["action_turns"].as_u64(), Some(7));
    // exact: turns 0, 4 (object arguments), 5
    assert_eq!(o["exact_action_match"].as_f64(), Some(3.0 / 7.0));
    // tool names: 0, 1, 4, 5
    assert_eq!(o["tool_name_accuracy"].as_f64(), Some(4.0 / 7.0));
    // argument triples: predicted 2+2+2+2+0+0 = 8, target 5 x 2 = 10, matched 2+1+0+2 = 5
    assert_eq!(o["argument_precision"].as_f64(), Some(5.0 / 8.0));
    assert_eq!(o["argument_recall"].as_f64(), Some(5.0 / 10.0));
    assert_eq!(o["argument_f1"].as_f64(), Some(2.0 * (5.0 / 8.0) * 0.5 / (5.0 / 8.0 + 0.5)));
    assert_eq!((o["text_turns"].as_u64(), o["text_exact_match"].clone()), (Some(0), Value::Null));
    assert_eq!(
        (r["predictions"].as_u64(), r["unknown_ids"].as_u64(), r["duplicate_ids"].as_u64()),
        (Some(8), Some(1), Some(1))
    );
    assert_eq!(r["by_source"]["terminus"], r["overall"]);
    assert_eq!(r["by_family"]["terminal"], r["overall"]);

    // The table names the groups and says how misses are counted.
    let out = trajkit(&["evaluate-actions", s(&held), s(&pred_path)]);
    let table = text(&out.stdout);
    assert!(table.contains("source:terminus") && table.contains("family:terminal"), "{table}");
    assert!(table.contains("1 rows without a prediction (counted as misses)"), "{table}");
}

/// The figures of `export_then_score_predictions_with_exact_figures`, read off the report.
fn cs17_figures(r: &Value) {
    let o = &r["overall"];
    assert_eq!((o["rows"].as_u64(), o["predicted"].as_u64(), o["missing"].as_u64()), (Some(7), Some(6), Some(1)));
    assert_eq!(o["exact_action_match"].as_f64(), Some(3.0 / 7.0));
    assert_eq!(o["tool_name_accuracy"].as_f64(), Some(4.0 / 7.0));
    assert_eq!(o["argument_precision"].as_f64(), Some(5.0 / 8.0));
    assert_eq!(o["argument_recall"].as_f64(), Some(5.0 / 10.0));
    assert_eq!(
        (r["predictions"].as_u64(), r["unknown_ids"].as_u64(), r["duplicate_ids"].as_u64()),
        (Some(8), Some(1), Some(1))
    );
}

/// Issue 19 item 4: a canonical file (from `trajkit convert` of the real CS17 and
/// claude-code-pass fixtures) is scored on the decisions the export's assistant-turn view
/// derives, with the export's row ids: the same predictions give the export's figures.
#[test]
fn canonical_heldout_is_scored_on_the_exports_assistant_turns() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let held = dir.path().join("held.jsonl");
    let out = trajkit(&["export", s(&lib), "--view", "assistant-turn", "--split", "train", "-o", s(&held)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let pred_path = dir.path().join("preds.jsonl");
    write_lines(&pred_path, &cs17_predictions(&rows(&held)));
    let canonical = dir.path().join("canonical.jsonl");
    let out = trajkit(&["convert", s(&support::real(CS17)), s(&support::real(CC)), "-o", s(&canonical)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(rows(&canonical).len(), 2);

    let from_export: Value =
        serde_json::from_slice(&trajkit(&["evaluate-actions", s(&held), s(&pred_path), "--json"]).stdout).unwrap();
    let out = trajkit(&["evaluate-actions", s(&canonical), s(&pred_path), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    // CS17's 7 decisions and claude-code-pass's 11 (none predicted), grouped by source format.
    assert_eq!(r["overall"]["rows"].as_u64(), Some(18));
    assert_eq!(r["by_source"]["atif"]["rows"].as_u64(), Some(18));
    assert_eq!(r["by_family"]["unknown"]["rows"].as_u64(), Some(18));
    assert_eq!(r["overall"]["text_turns"].as_u64(), Some(1));
    let only_cs17 = dir.path().join("cs17.jsonl");
    let out = trajkit(&["convert", s(&support::real(CS17)), "-o", s(&only_cs17)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r: Value =
        serde_json::from_slice(&trajkit(&["evaluate-actions", s(&only_cs17), s(&pred_path), "--json"]).stdout).unwrap();
    cs17_figures(&r);
    assert_eq!(r["overall"], from_export["overall"]);
}

#[test]
fn protected_split_needs_evaluation_and_text_turns_are_scored() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let held = dir.path().join("protected.jsonl");
    let refused =
        trajkit(&["export", s(&lib), "--view", "assistant-turn", "--split", "protected_evaluation", "-o", s(&held)]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("protected_evaluation rows never enter a training export"));
    assert!(!held.exists());
    let out = trajkit(&[
        "export",
        s(&lib),
        "--view",
        "assistant-turn",
        "--split",
        "protected_evaluation",
        "--evaluation",
        "-o",
        s(&held),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("EVALUATION export (not for training)"));
    let h = rows(&held);
    assert_eq!(h.len(), 11);
    // The last decision of claude-code-pass is its text-only answer.
    let last = &h[10];
    assert_eq!(last["completion"][0]["tool_calls"], Value::Null);
    let answer = last["completion"][0]["content"].as_str().unwrap();
    let shouted = format!("  {}  ", answer.to_uppercase().split_whitespace().collect::<Vec<_>>().join("   "));
    let preds = dir.path().join("p.jsonl");
    write_lines(&preds, &[json!({"id": last["id"], "message": {"role": "assistant", "content": shouted}})]);
    let out = trajkit(&["evaluate-actions", s(&held), s(&preds), "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &r["by_source"]["claude"];
    assert_eq!((c["rows"].as_u64(), c["predicted"].as_u64(), c["text_turns"].as_u64()), (Some(11), Some(1), Some(1)));
    assert_eq!((c["text_exact_match"].as_f64(), c["text_normalized_match"].as_f64()), (Some(0.0), Some(1.0)));
    assert_eq!((c["action_turns"].as_u64(), c["exact_action_match"].as_f64()), (Some(10), Some(0.0)));
    assert_eq!(c["argument_precision"], Value::Null);
    assert_eq!(c["argument_recall"].as_f64(), Some(0.0));
}

#[test]
fn usage_errors_exit_2_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let o = dir.path().join("x.jsonl");
    let cases: [(&[&str], &str); 5] = [
        (&["--view", "full", "--split", "train", "--selection", "best"], "--selection \"best\""),
        (&["--view", "wide", "--split", "train"], "--view \"wide\""),
        (&["--view", "full", "--split", "train", "--secrets", "nosuch-secrets.txt"], "nosuch-secrets.txt"),
        (&["--view", "assistant-turn", "--split", "train", "--format", "atif"], "use --view full"),
        (&["--view", "full", "--split", "holdout"], "--split \"holdout\""),
    ];
    for (flags, needle) in cases {
        let mut args = vec!["export", s(&lib)];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["-o", s(&o)]);
        let out = trajkit(&args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        assert!(text(&out.stderr).contains(needle), "{flags:?}: {}", text(&out.stderr));
        assert!(!o.exists());
    }
    let out = trajkit(&["export", s(&dir.path().join("nolib")), "--view", "full", "--split", "train", "-o", s(&o)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a trajkit library"));
    let out = trajkit(&["export", s(&lib), "--view", "full", "--split", "train", "-o", s(&dir.path().join("x.csv"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot infer the format"));
}

#[test]
fn format_follows_the_extension_and_an_empty_selection_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let pq = dir.path().join("t.parquet");
    let out = trajkit(&["export", s(&lib), "--view", "full", "--split", "train", "-o", s(&pq)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(&std::fs::read(&pq).unwrap()[..4], b"PAR1");
    let zst = dir.path().join("t.jsonl.zst");
    trajkit(&["export", s(&lib), "--view", "full", "--split", "train", "-o", s(&zst)]);
    assert_eq!(&std::fs::read(&zst).unwrap()[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
    let none = dir.path().join("none.jsonl");
    let out = trajkit(&["export", s(&lib), "--view", "full", "--split", "test", "-o", s(&none)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&none).unwrap(), "");
}
