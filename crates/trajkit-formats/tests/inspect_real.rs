//! Inspect AI reader on real published logs (tests/fixtures/real/inspect): `.json` EvalLog
//! documents and `.eval` zip archives from the inspect_ai repository's own test data.
//! Figures were computed independently with python (`json`, `zipfile`).

mod common;

use common::{assert_figures, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Role, Status, TaskKeySource, Verification};

type Row = (&'static str, u64, u64, u64, &'static [(&'static str, u64)], [u64; 3]);

/// file, records (= samples = trajectories), steps, tool_calls, gaps,
/// [success, failure, unknown] outcome statuses.
const FIGURES: &[Row] = &[
    ("scorer_logs__2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval", 10, 30, 0, &[], [0, 0, 10]),
    ("scorer_logs__2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval", 10, 30, 0, &[], [8, 2, 0]),
    ("test_eval_log__log_formats.json", 1, 3, 0, &[], [0, 1, 0]),
    ("test_eval_log__log_images.json", 1, 3, 0, &[], [0, 1, 0]),
    ("test_eval_log__log_message_deduplication.eval", 1, 12, 5, &[], [0, 0, 1]),
    ("test_eval_log__log_read_sample.eval", 1, 3, 0, &[], [1, 0, 0]),
    ("test_eval_log__log_read_sample.json", 1, 3, 0, &[], [1, 0, 0]),
    ("test_eval_log__log_streaming.eval", 4, 12, 0, &[], [3, 1, 0]),
    ("test_eval_log__log_tool_call_error.json", 1, 11, 0, &[("result_without_call", 11)], [0, 0, 1]),
    ("test_eval_set__2024-08-29T15-11-18+00-00_popularity_5EAmX6wjMFqea6WY7XHzZp.json", 0, 0, 0, &[], [0, 0, 0]),
    ("test_logs__2025-05-12T20-27-36-04-00_browser.json", 1, 10, 4, &[], [1, 0, 0]),
    ("test_logs__2025-05-12T20-28-13-04-00_no-samples.json", 0, 0, 0, &[], [0, 0, 0]),
    ("test_logs__2025-05-12T20-28-13-04-00_popularity.json", 3, 9, 0, &[], [2, 1, 0]),
    ("test_logs__2025-05-12T20-28-26-04-00_security-guide.json", 3, 9, 0, &[], [3, 0, 0]),
    ("test_logs_choices__mmlu-summary-choices.eval", 1, 2, 0, &[], [0, 1, 0]),
];

#[test]
fn every_real_inspect_file_has_its_exact_figures() {
    let c = read(&[real("inspect")]);
    assert_eq!(c.reports.len(), FIGURES.len(), "one report per fixture file (.eval files are discovered)");
    for &(name, records, steps, tool_calls, gaps, [ok, failed, unknown]) in FIGURES {
        assert_figures(report(&c, name), name, "inspect", (records, records, 0, steps, tool_calls, 0, 0), &[], gaps);
        let ts = from_file(&c, name);
        let n = |s: Status| ts.iter().filter(|t| t.outcome.status == s).count() as u64;
        assert_eq!([n(Status::Success), n(Status::Failure), n(Status::Unknown)], [ok, failed, unknown], "{name}");
    }
}

#[test]
fn an_agent_run_links_tool_results_to_calls_by_id() {
    let c = read(&[real("inspect/test_logs__2025-05-12T20-27-36-04-00_browser.json")]);
    let t = &c.trajectories[0];
    use Role::*;
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, [User, Assistant, Tool, Assistant, Tool, Assistant, Tool, Assistant, Tool, Assistant]);
    let call = &t.steps[1].tool_calls[0];
    assert_eq!((call.id.as_deref(), call.name.as_str()), (Some("call_35FTpd6shR9efioDgeEBZ33s"), "web_browser_go"));
    assert_eq!(call.arguments, json!({"url": "https://www.aisi.gov.uk/"}));
    assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("call_35FTpd6shR9efioDgeEBZ33s"));
    assert_eq!(t.steps[2].tool_results[0].extra["function"], json!("web_browser_go"));
    assert_eq!(t.steps[3].tool_calls[0].arguments, json!({"element_id": 151}));
    assert_eq!(t.steps[1].model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    assert_eq!(t.steps[0].source_id, Some(json!("QQZXTTQY46SAxcBZie6XDi")));
    assert!(t.gaps.is_empty());
    // sha256("ZB2vu5GNujYaBdPSReCeop\0" "1\0" "1"): eval id, sample id, epoch.
    assert_eq!(t.id, "inspect-d7bb88d7e6194ad2");
    assert_eq!(t.session_id.as_deref(), Some("ATYFNjyWUz4mZ5Dgj6yd4f"));
    assert_eq!((t.task.key.as_str(), t.task.id.as_deref()), ("browser/1", Some("1")));
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
    assert_eq!(t.task.environment.as_deref(), Some("browser"));
    assert!(t.task.instruction.as_deref().is_some_and(|i| i.starts_with("Use the web browser tool")));
    assert_eq!(t.agent.model.as_deref(), Some("openai/gpt-4o-mini"));
    assert_eq!(t.agent.name.as_deref(), Some("inspect_ai"));
    assert_eq!(t.agent.version.as_deref(), Some("0.3.95.dev16+g6527d0861"));
    assert_eq!(t.provenance.format_version.as_deref(), Some("2"));
    assert_eq!(t.provenance.document_index, Some(0));
    // Cache reads are present: whether input_tokens includes them depends on the writer's
    // version, so it is not a prompt total.
    let m = t.metrics.as_ref().expect("usage");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (None, Some(281), Some(9088)));
    // `total_time` is the sample's duration; `working_time` stays in extra.
    assert_eq!(m.duration_seconds, Some(18.517));
    assert!(!t.extra.contains_key("total_time") && t.extra.contains_key("working_time"));
    assert_eq!((m.extra["input_tokens"].clone(), m.extra["total_tokens"].clone()), (json!(15235), json!(15516)));
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Success, Verification::SourceEvaluator));
    assert_eq!(t.extra["scores"]["includes"]["value"], json!("C"));
    assert_eq!(t.extra["eval"]["eval_id"], json!("ZB2vu5GNujYaBdPSReCeop"));
    assert_eq!(t.extra["log_status"], json!("success"));
    assert!(t.extra["events"].as_array().is_some_and(|e| !e.is_empty()), "events are kept");
}

#[test]
fn eval_archives_read_one_record_per_sample_member_in_archive_order() {
    let c = read(&[real("inspect/test_eval_log__log_streaming.eval")]);
    let got: Vec<(Option<u64>, String, serde_json::Value, Status)> = c
        .trajectories
        .iter()
        .map(|t| (t.provenance.document_index, t.task.key.clone(), t.extra["epoch"].clone(), t.outcome.status))
        .collect();
    use Status::*;
    assert_eq!(
        got,
        [
            (Some(0), "popularity/2".to_string(), json!(2), Success),
            (Some(1), "popularity/2".to_string(), json!(1), Success),
            (Some(2), "popularity/1".to_string(), json!(1), Failure),
            (Some(3), "popularity/1".to_string(), json!(2), Success),
        ]
    );
    let ids: std::collections::BTreeSet<&str> = c.trajectories.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids.len(), 4, "epochs of one sample are different trajectories");
    let m = c.trajectories[0].metrics.as_ref().expect("usage");
    assert_eq!((m.prompt_tokens, m.completion_tokens), (Some(60), Some(1)));
    assert_eq!(c.trajectories[0].agent.model.as_deref(), Some("azureai/Meta-Llama-3-1-405B-Instruct-jqf"));
}

#[test]
fn a_numeric_score_is_a_reward_not_a_verdict() {
    let c = read(&[real("inspect/test_eval_log__log_message_deduplication.eval")]);
    let t = &c.trajectories[0];
    assert_eq!(t.outcome.reward, Some(0.0));
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Unknown, Verification::SourceEvaluator));
    assert_eq!(t.task.key, "inspect_test_utils/guess_number/0");
    assert_eq!(t.steps.iter().map(|s| s.tool_calls.len()).sum::<usize>(), 5);
    assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("hardcoded_0"));
    // model_usage is empty: the metrics hold only the sample's total_time.
    let m = t.metrics.as_ref().expect("duration");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.duration_seconds), (None, None, Some(0.457)));
    assert!(t.extra.contains_key("message_pool"));
}

#[test]
fn samples_without_scores_are_unverified() {
    let c = read(&[real("inspect/scorer_logs__2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval")]);
    assert!(c.trajectories.iter().all(|t| t.outcome.verification == Verification::Unverified));
    assert!(c.trajectories.iter().all(|t| t.outcome.status == Status::Unknown));
}

#[test]
fn attachment_references_in_messages_are_resolved() {
    let c = read(&[real("inspect/test_eval_log__log_images.json")]);
    let t = &c.trajectories[0];
    let parts = t.steps[1].content.as_ref().and_then(|v| v.as_array()).expect("content parts");
    let image = parts[1]["image"].as_str().expect("image");
    assert!(image.starts_with("data:image/png;base64,iVBORw0KGgo"), "{}", &image[..40]);
    assert_eq!(t.task.instruction.as_deref(), Some("What is this a picture of?"));
    assert!(t.extra["attachments"].as_object().is_some_and(|a| a.contains_key("734b3dc396aa9924b5f2a48de42561d2")));
}

#[test]
fn tool_errors_stay_on_their_results() {
    let c = read(&[real("inspect/test_eval_log__log_tool_call_error.json")]);
    let t = &c.trajectories[0];
    assert_eq!(t.steps[0].tool_results[0].extra["error"]["type"], json!("parsing"));
    assert_eq!(t.steps[10].tool_results[0].extra["error"]["type"], json!("output_limit"));
    assert_eq!(t.outcome.verification, Verification::Unverified, "the sample has no scores");
}

#[test]
fn logs_without_samples_have_no_records() {
    let c = read(&[real("inspect/test_logs__2025-05-12T20-28-13-04-00_no-samples.json")]);
    assert_eq!((c.reports[0].records, c.reports[0].error.as_deref()), (0, None));
    assert!(c.trajectories.is_empty() && c.rejections.is_empty());
}

#[test]
fn a_cancelled_log_still_yields_its_completed_samples() {
    let c = read(&[real("inspect/test_logs__2025-05-12T20-28-13-04-00_popularity.json")]);
    let got: Vec<(&str, Status)> = c.trajectories.iter().map(|t| (t.task.key.as_str(), t.outcome.status)).collect();
    assert_eq!(
        got,
        [("popularity/1", Status::Success), ("popularity/2", Status::Success), ("popularity/3", Status::Failure)]
    );
    assert!(c.trajectories.iter().all(|t| t.extra["log_status"] == json!("cancelled")));
}

#[test]
fn choices_and_target_are_kept() {
    let c = read(&[real("inspect/test_logs_choices__mmlu-summary-choices.eval")]);
    let t = &c.trajectories[0];
    assert_eq!(t.extra["choices"], json!(["6.0 e", "6.8 eV", "12.2 eV", "13.6 eV"]));
    assert_eq!(t.extra["target"], json!("A"));
    assert_eq!(t.task.key, "inspect_evals/mmlu_0_shot/1");
    assert_eq!(t.outcome.status, Status::Failure);
}

#[test]
fn log_level_fields_are_kept_except_the_aggregates() {
    let c = read(&[real("inspect/test_eval_log__log_message_deduplication.eval")]);
    let t = &c.trajectories[0];
    // header.json: version, status, eval, plan, results, stats, invalidated (python zipfile).
    assert_eq!(t.extra["log_invalidated"], json!(false));
    assert_eq!(t.extra["log_status"], json!("success"));
    assert!(t.extra.contains_key("plan") && t.extra.contains_key("eval"));
    for k in ["results", "stats", "reductions", "log_results", "log_stats", "log_reductions", "log_version"] {
        assert!(!t.extra.contains_key(k), "{k}");
    }
}

mod synthetic {
    //! Rules that no real file shows: written here by hand, small on purpose.
    use super::common::read;
    use serde_json::json;

    #[test]
    fn log_error_and_other_top_level_fields_reach_every_record() {
        let doc = format!(
            r#"{{{HEAD},"plan":{{"name":"plan"}},"error":{{"message":"boom","traceback":"tb"}},"invalidated":true,"location":"x","results":{{"total_samples":1}},"stats":{{"started_at":"s"}},"samples":[{{"id":1,"epoch":1,"messages":[],"error":{{"message":"sample failed"}}}}],"reductions":[]}}"#
        );
        let (_d, p) = file("log.json", doc.as_bytes());
        let c = read(&[p]);
        let t = &c.trajectories[0];
        assert_eq!(t.extra["log_error"], json!({"message": "boom", "traceback": "tb"}));
        assert_eq!(t.extra["error"], json!({"message": "sample failed"}), "the sample's own error keeps its name");
        assert_eq!((t.extra["log_invalidated"].clone(), t.extra["log_location"].clone()), (json!(true), json!("x")));
        assert_eq!(t.extra["plan"], json!({"name": "plan"}));
        let kept: Vec<&str> = t
            .extra
            .keys()
            .map(String::as_str)
            .filter(|k| k.contains("results") || k.contains("stats") || k.contains("reductions"))
            .collect();
        assert!(kept.is_empty(), "{kept:?}");
    }

    #[test]
    fn many_samples_stream_through_several_batches_in_order() {
        let samples: Vec<String> = (0..5000).map(|i| format!(r#"{{"id":{i},"epoch":1,"messages":[]}}"#)).collect();
        let doc = format!(r#"{{{HEAD},"samples":[{}]}}"#, samples.join(","));
        let (_d, p) = file("log.json", doc.as_bytes());
        let c = read(&[p]);
        assert_eq!((c.reports[0].records, c.reports[0].trajectories), (5000, 5000));
        let ok = c.trajectories.iter().enumerate().all(|(i, t)| {
            t.provenance.document_index == Some(i as u64) && t.task.id.as_deref() == Some(i.to_string().as_str())
        });
        assert!(ok, "document order and indices survive the batching");
    }

    fn file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        (dir, path)
    }

    const HEAD: &str = r#""version":2,"status":"success","eval":{"task":"t","model":"m","eval_id":"e"}"#;

    #[test]
    fn a_malformed_sample_is_rejected_alone() {
        let doc = format!(
            r#"{{{HEAD},"samples":[{{"id":1,"epoch":1,"messages":[{{"role":"robot","content":"x"}}]}},{{"id":2,"epoch":1,"messages":[],"limit":{{"type":"token","limit":10}}}}]}}"#
        );
        let (_d, p) = file("log.json", doc.as_bytes());
        let c = read(&[p]);
        let r = &c.reports[0];
        assert_eq!((r.format.as_deref(), r.records, r.trajectories, r.rejected), (Some("inspect"), 2, 1, 1));
        assert_eq!(c.rejections[0].reason.as_str(), "invalid_value");
        assert_eq!(c.rejections[0].document_index, Some(0));
        assert_eq!(c.rejections[0].problems[0].json_path, "$.messages[0].role");
        let kinds: Vec<&str> = c.trajectories[0].gaps.iter().map(|g| g.kind.as_str()).collect();
        assert_eq!(kinds, ["no_steps", "incomplete_generation"]);
    }

    #[test]
    fn a_truncated_json_log_is_invalid_json() {
        let doc = format!(r#"{{{HEAD},"samples":[{{"id":1,"#);
        let (_d, p) = file("log.json", doc.as_bytes());
        let c = read(&[p]);
        assert_eq!((c.reports[0].records, c.reports[0].rejected), (1, 1));
        assert_eq!(c.rejections[0].reason.as_str(), "invalid_json");
    }

    #[test]
    fn an_unreadable_archive_is_a_file_error() {
        let (_d, p) = file("broken.eval", b"PK\x03\x04 not really a zip");
        let c = read(&[p]);
        let r = &c.reports[0];
        assert_eq!(r.format.as_deref(), Some("inspect"));
        assert!(r.error.as_deref().is_some_and(|e| e.contains("not a readable .eval archive")), "{:?}", r.error);
        assert_eq!(r.records, 0);
    }
}
