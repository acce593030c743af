//! SWE-agent `.traj` and mini-swe-agent readers on real published files, and the join of
//! SWE-bench reports found in the producer's directory layout.

mod common;

use std::path::Path;

use common::{counts, from_file, read, read_with, real, report};
use serde_json::json;
use trajkit_formats::outcomes::OutcomeTable;
use trajkit_formats::Options;
use trajkit_model::{Role, Status, TaskKeySource, Verification};

/// file, format, records, trajectories, steps, tool_calls, rejected, reasons, gaps.
type Row = (
    &'static str,
    &'static str,
    u64,
    u64,
    u64,
    u64,
    u64,
    &'static [(&'static str, u64)],
    &'static [(&'static str, u64)],
);

const FIGURES: &[Row] = &[
    ("swe_agent_traj/all_preds.jsonl", "swe-agent", 1, 0, 0, 0, 1, &[("prediction_only", 1)], &[]),
    ("swe_agent_traj/function_calling_simple.traj", "swe-agent", 1, 1, 12, 5, 0, &[], &[]),
    // 12 actions, 11 observations: the final `submit` has no observation in history.
    ("swe_agent_traj/pydicom__pydicom-1458.traj", "swe-agent", 1, 1, 26, 12, 0, &[], &[("unanswered_tool_call", 1)]),
    ("mini_swe_agent/github_issue.traj.json", "mini-swe-agent", 1, 1, 22, 10, 0, &[], &[]),
    ("mini_swe_agent/results.json", "mini-swe-agent", 1, 0, 0, 0, 1, &[("prediction_only", 1)], &[]),
    // The native mini-swe-agent file from Harbor's RFC (in the ATIF fixtures as a negative).
    ("atif/not-atif/rfc-native-mini-swe-agent-trajectory.json", "mini-swe-agent", 1, 1, 8, 3, 0, &[], &[]),
    ("swe_smith/pandas-dev__pandas.95280573.pr_53856.traj", "swe-agent", 1, 1, 36, 17, 0, &[], &[]),
    (
        "swe_smith/pandas-dev__pandas.95280573.pr_53856.report.json",
        "swe-agent",
        1,
        0,
        0,
        0,
        1,
        &[("evaluation_report", 1)],
        &[],
    ),
    ("swe_smith/run_evaluation.report.json", "swe-agent", 1, 0, 0, 0, 1, &[("evaluation_report", 1)], &[]),
];

#[test]
fn every_real_file_has_its_exact_figures() {
    for &(rel, format, records, trajectories, steps, tool_calls, rejected, reasons, gaps) in FIGURES {
        let c = read(&[real(rel)]);
        let r = &c.reports[0];
        assert_eq!(r.format.as_deref(), Some(format), "{rel}");
        let got = (r.records, r.trajectories, r.steps, r.tool_calls, r.duplicate_records, r.rejected);
        assert_eq!(got, (records, trajectories, steps, tool_calls, 0, rejected), "{rel}");
        assert_eq!(r.reasons, counts(reasons), "{rel}");
        assert_eq!(r.gaps, counts(gaps), "{rel}");
    }
}

#[test]
fn swe_agent_0x_text_actions_pair_through_the_trajectory_list() {
    let c = read(&[real("swe_agent_traj/pydicom__pydicom-1458.traj")]);
    let t = &c.trajectories[0];
    assert_eq!(t.task.id.as_deref(), Some("pydicom__pydicom-1458"));
    assert_eq!((t.task.key.as_str(), t.task.key_source), ("pydicom__pydicom-1458", TaskKeySource::Explicit));
    assert_eq!(t.outcome.status, Status::Unknown, "no report beside it: the outcome stays unknown");
    // The demonstration is kept and marked.
    assert_eq!(t.steps[1].extra.get("is_demo"), Some(&json!(true)));
    let first = &t.steps[3];
    assert_eq!(first.role, Role::Assistant);
    let call = &first.tool_calls[0];
    assert_eq!((call.name.as_str(), call.id.as_deref(), call.text_embedded), ("create", Some("action-0"), true));
    assert_eq!(call.arguments, json!({"command": "create reproduce_bug.py\n"}));
    let obs = &t.steps[4];
    assert_eq!((obs.role, obs.tool_results[0].call_id.as_deref()), (Role::Environment, Some("action-0")));
    let m = t.metrics.as_ref().expect("model_stats");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cost_usd), (Some(122612), Some(1369), Some(1.26719)));
    assert_eq!(t.extra["info"]["exit_status"], json!("submitted"));
}

#[test]
fn swe_agent_1x_tool_calls_pair_by_id() {
    let c = read(&[real("swe_smith/pandas-dev__pandas.95280573.pr_53856.traj")]);
    let t = &c.trajectories[0];
    assert_eq!(t.agent.version.as_deref(), Some("1.0.1"));
    let call = &t.steps[2].tool_calls[0];
    assert_eq!((call.name.as_str(), call.id.as_deref()), ("bash", Some("toolu_01Crr48ue2quNQaMjWM77nUH")));
    assert!(!call.text_embedded);
    assert_eq!(t.steps[3].tool_results[0].call_id.as_deref(), Some("toolu_01Crr48ue2quNQaMjWM77nUH"));
    assert!(t.gaps.is_empty());
    let c = read(&[real("swe_agent_traj/function_calling_simple.traj")]);
    let t = &c.trajectories[0];
    assert_eq!(t.steps[2].tool_calls[0].arguments, json!({"file_name": "missing_colon.py"}));
}

#[test]
fn mini_swe_agent_fenced_actions_are_text_embedded_calls() {
    let c = read(&[real("mini_swe_agent/github_issue.traj.json")]);
    let t = from_file(&c, "github_issue")[0];
    let call = &t.steps[2].tool_calls[0];
    assert!(call.text_embedded);
    assert_eq!(call.name, "bash");
    assert!(call.arguments["command"].as_str().is_some_and(|c| c.starts_with("cat /Users/fuchur")));
    assert_eq!((t.steps[3].role, t.steps[3].tool_results[0].call_id.as_deref()), (Role::Environment, Some("action-0")));
    assert_eq!(t.task.id.as_deref(), Some("github_issue"));

    // The current format: {info, messages, trajectory_format}.
    let c = read(&[real("atif/not-atif/rfc-native-mini-swe-agent-trajectory.json")]);
    let t = &c.trajectories[0];
    assert_eq!(t.provenance.format_version.as_deref(), Some("mini-swe-agent-1"));
    assert_eq!(t.agent.version.as_deref(), Some("1.13.4"));
    assert_eq!(t.metrics.as_ref().and_then(|m| m.cost_usd), Some(0.010520999999999999));
    assert_eq!(t.extra["info"]["exit_status"], json!("Submitted"));
}

/// The producer's layout (SWE-smith's test logs): `trajectories/<id>/<id>.traj`,
/// `run_evaluation/<id>/report.json`, `run_evaluation/report.json`. The fixtures were
/// renamed when collected; this recreates the layout from them.
fn producer_layout(dir: &Path) {
    let id = "pandas-dev__pandas.95280573.pr_53856";
    let traj = dir.join("trajectories").join(id);
    let eval = dir.join("run_evaluation").join(id);
    std::fs::create_dir_all(&traj).expect("mkdir");
    std::fs::create_dir_all(&eval).expect("mkdir");
    let copy = |from: &str, to: &Path| std::fs::copy(real(from), to).expect("copy");
    copy(&format!("swe_smith/{id}.traj"), &traj.join(format!("{id}.traj")));
    copy(&format!("swe_smith/{id}.report.json"), &eval.join("report.json"));
    copy("swe_smith/run_evaluation.report.json", &dir.join("run_evaluation").join("report.json"));
}

#[test]
fn reports_in_the_producer_layout_are_joined_and_consumed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    producer_layout(tmp.path());
    let c = read(&[tmp.path().to_path_buf()]);
    let t = &c.trajectories[0];
    assert_eq!(t.outcome.status, Status::Failure, "report.json says resolved: false");
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    let source = t.outcome.source.clone().unwrap_or_default();
    assert!(source.ends_with("run_evaluation/pandas-dev__pandas.95280573.pr_53856/report.json"), "{source}");
    let traj_display = t.provenance.path.clone();
    for side in ["pandas-dev__pandas.95280573.pr_53856/report.json", "run_evaluation/report.json"] {
        let r = c.reports.iter().find(|r| r.path.ends_with(side)).expect("side report");
        assert_eq!((r.part_of.as_deref(), r.records, r.rejected), (Some(traj_display.as_str()), 0, 0), "{side}");
    }
}

#[test]
fn outcomes_file_joins_by_task_id_and_never_overrides() {
    let table = OutcomeTable::load(&real("swe_smith/run_evaluation.report.json")).expect("report");
    assert_eq!(table.len(), 53);
    let opts = Options { records: true, outcomes: Some(std::sync::Arc::new(table)), ..Options::default() };
    let c = read_with(&[real("swe_smith/pandas-dev__pandas.95280573.pr_53856.traj")], opts.clone());
    let t = &c.trajectories[0];
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Failure, Verification::SourceEvaluator));
    // A record that carries its own outcome keeps it; a disagreement is a gap.
    let mut own = t.clone();
    own.outcome.status = Status::Success;
    own.outcome.source = None;
    opts.outcomes.as_ref().expect("table").join(&mut own);
    assert_eq!(own.outcome.status, Status::Success);
    assert_eq!(own.gaps.last().map(|g| g.kind.as_str()), Some("outcome_conflict"));
}

#[test]
fn a_lone_report_or_predictions_file_is_named_not_read_as_trajectories() {
    let c = read(&[real("swe_smith/run_evaluation.report.json")]);
    assert_eq!(report(&c, "run_evaluation.report.json").reasons, counts(&[("evaluation_report", 1)]));
}

#[test]
fn swe_agent_0x_run_directory_results_json_is_joined() {
    // SWE-agent 0.x writes <run>/<id>.traj and, after evaluation, <run>/results.json with one
    // id list per stage (swebench's model report). Synthetic report for the real .traj.
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = tmp.path().join("run");
    std::fs::create_dir_all(&run).expect("mkdir");
    std::fs::copy(real("swe_agent_traj/pydicom__pydicom-1458.traj"), run.join("pydicom__pydicom-1458.traj"))
        .expect("copy");
    let report = json!({"generated": ["pydicom__pydicom-1458"], "applied": ["pydicom__pydicom-1458"], "resolved": []});
    std::fs::write(run.join("results.json"), report.to_string()).expect("write");
    let c = read(&[tmp.path().to_path_buf()]);
    assert_eq!(c.trajectories[0].outcome.status, Status::Failure, "applied but not resolved");
    let side = c.reports.iter().find(|r| r.path.ends_with("results.json")).expect("report");
    assert!(side.part_of.is_some());
}

#[test]
fn a_flat_per_instance_report_works_with_outcomes_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    producer_layout(tmp.path());
    let flat = tmp.path().join("run_evaluation/pandas-dev__pandas.95280573.pr_53856/report.json");
    let table = OutcomeTable::load(&flat).expect("the instance is named by its directory");
    assert_eq!(table.len(), 1);
}

#[test]
fn a_join_never_overrides_a_reward_the_record_carries() {
    // Synthetic: a record with its own reward but no status (a Gym-like outcome).
    let c = read(&[real("swe_smith/pandas-dev__pandas.95280573.pr_53856.traj")]);
    let mut t = c.trajectories[0].clone();
    t.outcome.reward = Some(0.5);
    t.outcome.verification = Verification::SourceEvaluator;
    trajkit_formats::outcomes::apply(&mut t, Status::Success, "report.json");
    assert_eq!((t.outcome.status, t.outcome.source.as_deref()), (Status::Unknown, None));
    assert_eq!(t.gaps.last().map(|g| g.kind.as_str()), Some("outcome_conflict"));
}

#[test]
fn observation_text_that_looks_like_json_stays_text() {
    // Synthetic 1.x history: an observation printing `[1, 2]` must not become an array.
    let tmp = tempfile::tempdir().expect("tempdir");
    let doc = json!({"history": [
        {"role": "system", "content": "s", "agent": "main"},
        {"role": "user", "content": "do it", "agent": "main"},
        {"role": "assistant", "content": "x", "tool_calls": "[{\"id\": \"c1\", \"function\": {\"name\": \"bash\", \"arguments\": \"{}\"}}]"},
        {"role": "tool", "content": "[1, 2]", "tool_call_ids": "[\"c1\"]"}
    ], "info": "not-an-object"});
    let p = tmp.path().join("x.traj");
    std::fs::write(&p, doc.to_string()).expect("write");
    let c = read(&[p]);
    let t = &c.trajectories[0];
    assert_eq!(t.steps[2].tool_calls[0].id.as_deref(), Some("c1"), "JSON-text calls are decoded");
    assert_eq!(t.steps[3].tool_results[0].content.as_deref(), Some(&json!("[1, 2]")));
    assert_eq!(t.extra.get("info"), Some(&json!("not-an-object")), "an unexpected info is kept");
}
