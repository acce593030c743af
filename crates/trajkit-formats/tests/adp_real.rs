//! Agent Data Protocol reader on the real ADP samples (tests/fixtures/real/adp): the
//! standardized trajectories and the OpenHands SFT view of the same five SWE-Gym runs.
//! Figures were computed independently with Python from the files.

mod common;

use common::{assert_figures, counts, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Authorship, Role, Status, TaskKeySource, Verification};

const STD: &str = "swe-gym_sample_std.json";
const SFT: &str = "swe-gym_sample_sft_openhands.json";

#[test]
fn both_real_files_have_their_exact_figures() {
    let c = read(&[real("adp")]);
    assert_eq!(c.reports.len(), 2);
    // std: 192 content items (one step each), 83 api/code actions, each followed by its
    // observation.
    assert_figures(report(&c, STD), STD, "adp", (5, 5, 0, 192, 83, 0, 0), &[], &[]);
    // SFT: 5 system steps + 192 turns; 88 <function=...> blocks (the 83 actions and the 5
    // `<finish>` messages the SFT conversion turns into finish calls, none answered).
    let gaps = [("unanswered_tool_call", 5)];
    assert_figures(report(&c, SFT), SFT, "adp", (5, 5, 0, 197, 88, 0, 0), &[], &gaps);
}

#[test]
fn standardized_actions_link_to_the_observation_after_them() {
    let c = read(&[real("adp")]);
    let t = from_file(&c, STD)[0];
    assert_eq!(t.id, "adp-01aab0f8d6e53b27");
    assert_eq!(t.provenance.document_index, Some(0));
    assert_eq!(t.session_id.as_deref(), Some("python__mypy-15976_0"));
    assert_eq!((t.task.key.as_str(), t.task.key_source), ("python__mypy-15976", TaskKeySource::Explicit));
    assert_eq!(t.task.id.as_deref(), Some("python__mypy-15976"));
    assert!(t.task.instruction.as_deref().is_some_and(|i| i.starts_with("<uploaded_files>")));
    assert_eq!(t.steps[0].role, Role::User, "text_observation with source user");

    let call = &t.steps[1].tool_calls[0];
    assert_eq!((call.name.as_str(), call.id.as_deref()), ("str_replace_editor", Some("adp-action-1")));
    assert_eq!(
        call.arguments,
        json!({"command": "view", "path": "/workspace/python__mypy__1.6", "view_range": [0, -1]})
    );
    assert!(!call.text_embedded);
    let res = &t.steps[2];
    assert_eq!(res.role, Role::Tool);
    assert_eq!(res.tool_results[0].call_id.as_deref(), Some("adp-action-1"));
    assert_eq!(res.tool_results[0].extra["source"], json!("environment"));

    // A code action: a call named by its language, the code under `content`.
    let code = &t.steps[11].tool_calls[0];
    assert_eq!(code.name, "bash");
    assert_eq!(code.arguments, json!({"content": "python3 /workspace/python__mypy__1.6/reproduce_error.py"}));
    assert_eq!(code.extra["class_"], json!("code_action"));
    assert_eq!(t.steps[12].tool_results[0].call_id.as_deref(), Some("adp-action-11"));

    // message_action → assistant text; the "Please continue" observation (source user)
    // after it is a user step, not a result, of unknown authorship (OpenHands' auto-reply,
    // as in the SFT view); the first user step (the task) stays declared.
    let n = t.steps.len();
    assert_eq!((t.steps[n - 1].role, t.steps[n - 1].tool_calls.len()), (Role::Assistant, 0));
    assert_eq!(t.steps[n - 1].content.as_deref(), Some(&json!("<finish> Task completed. </finish>")));
    assert_eq!((t.steps[n - 2].role, t.steps[n - 2].authorship), (Role::User, Authorship::Unknown));
    assert_eq!(t.steps[0].authorship, Authorship::Declared);

    // details: tools parsed, resolved → outcome, the rest kept.
    let tools: Vec<&str> = t.tools.iter().flatten().filter_map(|v| v["function"]["name"].as_str()).collect();
    assert_eq!(tools, ["execute_bash", "finish", "str_replace_editor"]);
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Success, Verification::SourceReported));
    let details = t.extra["details"].as_object().expect("details");
    assert_eq!(details.keys().collect::<Vec<_>>(), ["run_id", "test_result"]);
}

#[test]
fn both_views_mark_the_same_user_turns_of_unknown_authorship() {
    // Python, per record: user turns after the first assistant turn (the auto-replies),
    // 2, 2, 2, 1, 1 in both views; the five first user turns are declared.
    let c = read(&[real("adp")]);
    for name in [STD, SFT] {
        let per_record: Vec<(usize, usize)> = from_file(&c, name)
            .iter()
            .map(|t| {
                let users = t.steps.iter().filter(|s| s.role == Role::User);
                let unknown = users.clone().filter(|s| s.authorship == Authorship::Unknown).count();
                (users.count() - unknown, unknown)
            })
            .collect();
        assert_eq!(per_record, [(1, 2), (1, 2), (1, 2), (1, 1), (1, 1)], "{name}");
    }
}

#[test]
fn the_sft_view_parses_text_calls_and_shares_the_task_key() {
    let c = read(&[real("adp")]);
    let t = from_file(&c, SFT)[0];
    assert_eq!(t.provenance.format, "adp");
    assert_eq!(t.task.key, "python__mypy-15976", "same key as the standardized record");
    assert_eq!(t.steps[0].role, Role::System);
    assert!(t.steps[0]
        .content
        .as_ref()
        .and_then(|c| c.as_str())
        .is_some_and(|s| s.starts_with("You are OpenHands agent")));
    assert_eq!(t.steps[1].role, Role::User);
    let call = &t.steps[2].tool_calls[0];
    assert_eq!((call.name.as_str(), call.id.as_deref()), ("str_replace_editor", Some("text-call-2-0")));
    assert!(call.text_embedded);
    assert_eq!(
        call.arguments,
        json!({"command": "view", "path": "/workspace/python__mypy__1.6", "view_range": "[0, -1]"})
    );
    let obs = &t.steps[3];
    assert_eq!(obs.role, Role::Environment);
    assert_eq!(obs.tool_results[0].call_id.as_deref(), Some("text-call-2-0"));
    assert_eq!(obs.extra["from"], json!("human"));
    // A human turn after a plain gpt message is OpenHands' auto-reply: unknown authorship.
    let n = t.steps.len();
    assert_eq!((t.steps[n - 2].role, t.steps[n - 2].authorship), (Role::User, Authorship::Unknown));
    let finish = &t.steps[n - 1].tool_calls[0];
    assert_eq!(finish.name, "finish");
    assert_eq!(finish.arguments, json!({"message": "Task completed.", "task_completed": "true"}));
    assert_eq!(t.gaps.len(), 1);
    assert_eq!(t.gaps[0].detail.as_deref(), Some(format!("text-call-{}-0", n - 1).as_str()));
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Unknown, Verification::Unverified));
}

// -------------------------------------------------------------------------------------
// Synthetic cases (made up): explicit tool_call_id links and rejections, which the real
// sample (written before ADP added tool_call_id) does not show.
// -------------------------------------------------------------------------------------

fn read_lines(text: &str) -> common::Collected {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("std.jsonl");
    std::fs::write(&p, text).expect("write");
    read(&[p])
}

#[test]
fn synthetic_explicit_tool_call_ids_link_and_unknown_classes_reject() {
    let rows = [
        json!({"schema_version": "1.2.0", "id": "t1", "content": [
            {"class_": "text_observation", "content": "list files", "source": "user"},
            {"class_": "api_action", "function": "ls", "kwargs": {}, "tool_call_id": "call_000001"},
            {"class_": "api_action", "function": "pwd", "kwargs": {}, "tool_call_id": "call_000002"},
            {"class_": "text_observation", "content": "/", "source": "environment", "tool_call_id": "call_000002"},
            {"class_": "text_observation", "content": "a b", "source": "environment", "tool_call_id": "call_000001"},
            {"class_": "message_action", "content": "done"}],
         "details": {}}),
        json!({"id": "t2", "content": [{"class_": "video_observation", "content": "x"}], "details": {}}),
    ];
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    let c = read_lines(&text);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("adp"));
    assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (2, 1, 6, 2, 1));
    assert_eq!(r.reasons, counts(&[("invalid_value", 1)]));
    assert_eq!(r.gaps, counts(&[]), "results linked by id, out of order");
    let t = &c.trajectories[0];
    assert_eq!(t.provenance.format_version.as_deref(), Some("1.2.0"));
    assert_eq!(t.steps[3].tool_results[0].call_id.as_deref(), Some("call_000002"));
    assert_eq!(t.steps[4].tool_results[0].call_id.as_deref(), Some("call_000001"));
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash, "a non-SWE-bench id names the trajectory");
    assert_eq!(t.task.key, trajkit_model::canonical::instruction_task_key("list files", Some("adp")));
}
