//! SWE-Gym OpenHands reader on the real ADP raw export (tests/fixtures/real/swe_gym_openhands).
//! Figures were computed independently with Python from the file.

mod common;

use common::{assert_figures, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Authorship, Role, Status, TaskKeySource, Verification};

const FILE: &str = "adp_swe-gym_sample_raw.json";

#[test]
fn the_real_file_has_its_exact_figures() {
    let c = read(&[real("swe_gym_openhands")]);
    assert_eq!(c.reports.len(), 1);
    // Each run ends with a call nobody answered.
    let gaps = [("unanswered_tool_call", 5)];
    assert_figures(report(&c, FILE), FILE, "swe-gym", (5, 5, 0, 188, 87, 0, 0), &[], &gaps);
}

#[test]
fn task_ids_drop_the_adp_counter() {
    let c = read(&[real("swe_gym_openhands")]);
    let ts = from_file(&c, FILE);
    let ids: Vec<&str> = ts.iter().filter_map(|t| t.task.id.as_deref()).collect();
    assert_eq!(
        ids,
        [
            "python__mypy-15976",
            "Project-MONAI__MONAI-5686",
            "Project-MONAI__MONAI-6849",
            "getmoto__moto-6387",
            "Project-MONAI__MONAI-3715"
        ]
    );
    let t = ts[0];
    assert_eq!(t.id, "swe-gym-576e799b844ab4a0");
    assert_eq!(t.provenance.document_index, Some(0));
    assert_eq!(t.task.key, "python__mypy-15976");
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
    assert_eq!(t.extra["instance_id"], json!("python__mypy-15976_0"), "the verbatim id stays in extra");
    assert_eq!(t.extra["run_id"], json!("gpt-4o-2024-08-06_maxiter_50_N_v2.1-no-hint-train-t0-run_1"));
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Success, Verification::SourceEvaluator));
    assert_eq!(t.agent.name.as_deref(), Some("openhands"));
    let tools: Vec<&str> = t.tools.iter().flatten().filter_map(|v| v["function"]["name"].as_str()).collect();
    assert_eq!(tools, ["execute_bash", "finish", "str_replace_editor"]);
}

#[test]
fn structured_calls_link_to_tool_messages_by_id() {
    let c = read(&[real("swe_gym_openhands")]);
    let t = from_file(&c, FILE)[0];
    let call = &t.steps[2].tool_calls[0];
    assert_eq!((call.name.as_str(), call.id.as_deref()), ("str_replace_editor", Some("call_wmUMCvkWsBrXZdFlTSwE3sy6")));
    assert_eq!(
        call.arguments,
        json!({"command": "view", "path": "/workspace/python__mypy__1.6", "view_range": [0, -1]})
    );
    assert!(!call.text_embedded);
    assert_eq!(call.extra["type"], json!("function"));
    let res = &t.steps[3];
    assert_eq!(res.role, Role::Tool);
    assert_eq!(res.tool_results[0].call_id.as_deref(), Some("call_wmUMCvkWsBrXZdFlTSwE3sy6"));
    assert_eq!(res.tool_results[0].extra["name"], json!("str_replace_editor"));
    // Four parallel calls, answered by four tool messages.
    let ids: Vec<_> = t.steps[25].tool_calls.iter().map(|c| c.id.clone()).collect();
    let answers: Vec<_> = t.steps[26..30].iter().map(|s| s.tool_results[0].call_id.clone()).collect();
    assert_eq!(ids.len(), 4);
    assert_eq!(ids, answers);
    // The last call (finish) has no answer.
    assert_eq!(t.gaps.len(), 1);
    assert_eq!(t.gaps[0].detail.as_deref(), Some("call_EcwAiBKjBdR3vksPM0y7LVA0"));
}

#[test]
fn later_user_messages_have_unknown_authorship() {
    let c = read(&[real("swe_gym_openhands")]);
    let t = from_file(&c, FILE)[0];
    assert_eq!((t.steps[1].role, t.steps[1].authorship), (Role::User, Authorship::Declared));
    let s = &t.steps[37];
    assert_eq!((s.role, s.authorship), (Role::User, Authorship::Unknown));
    assert!(s.content.as_ref().and_then(|v| v.as_str()).is_some_and(|x| x.starts_with("Please continue working")));
    assert!(t.task.instruction.as_deref().is_some_and(|x| x.starts_with("<uploaded_files>")));
    // The source's nulls stay where they were.
    assert_eq!(t.steps[1].extra["tool_calls"], json!(null));
}

mod synthetic {
    //! Rules that no real file shows: written here by hand, small on purpose.
    use super::common::read;
    use serde_json::json;

    #[test]
    fn a_report_that_disagrees_is_an_outcome_conflict() {
        let row = json!({"instance_id": "o__r-1", "run_id": "x", "resolved": false,
            "test_result": {"report": {"resolved": true}}, "tools": [],
            "messages": [{"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{bad"}}]},
                {"role": "tool", "tool_call_id": "c2", "content": "r"}]});
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rows.jsonl");
        std::fs::write(&path, format!("{row}\n")).expect("write");
        let c = read(&[path]);
        assert_eq!(c.reports[0].format.as_deref(), Some("swe-gym"));
        let t = &c.trajectories[0];
        assert_eq!(t.outcome.status, trajkit_model::Status::Failure, "the record's own outcome is kept");
        assert_eq!(t.task.id.as_deref(), Some("o__r-1"));
        assert!(!t.extra.contains_key("instance_id"), "an unchanged id is not repeated");
        assert!(t.steps[1].tool_calls[0].arguments_invalid);
        let mut kinds: Vec<&str> = t.gaps.iter().map(|g| g.kind.as_str()).collect();
        kinds.sort();
        assert_eq!(
            kinds,
            ["invalid_tool_arguments", "outcome_conflict", "result_without_call", "unanswered_tool_call"]
        );
    }
}
