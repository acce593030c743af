//! Each rule on a small record. The complete record is synthetic by necessity: no public
//! source records environment state digests (see tests/completeness_real.rs).

use serde_json::json;
use trajkit_model::{Outcome, Role, StateDigests, Status, Step, ToolCall, ToolResult, Verification};

use super::*;

fn complete() -> Trajectory {
    let mut t: Trajectory = serde_json::from_value(json!({
        "id": "t", "schema_version": trajkit_model::SCHEMA_VERSION,
        "provenance": {"format": "atif", "path": "a.json", "sha256": "0"},
        "task": {"key": "k", "key_source": "explicit", "environment": "shell"},
    }))
    .unwrap();
    let mut act = Step::new(Role::Assistant, Some(json!("listing")));
    act.tool_calls.push(ToolCall {
        arguments: json!({"cmd": "ls"}).into(),
        arguments_invalid: false,
        extra: Default::default(),
        id: Some("c1".into()),
        name: "bash".into(),
        text_embedded: false,
    });
    let mut obs = Step::new(Role::Tool, None);
    obs.tool_results.push(ToolResult {
        call_id: Some("c1".into()),
        content: Some(json!("a.txt").into()),
        extra: Default::default(),
        subagent_refs: vec![],
    });
    t.steps = vec![
        Step::new(Role::User, Some(json!("list files"))),
        act,
        obs,
        Step::new(Role::Assistant, Some(json!("a.txt"))),
    ];
    t.state = Some(StateDigests { initial: Some("a".repeat(64)), final_state: Some("b".repeat(64)) });
    t.outcome = Outcome { status: Status::Success, verification: Verification::SourceEvaluator, ..Default::default() };
    t
}

fn parts(t: &Trajectory) -> Vec<&'static str> {
    check(t).iter().map(|l| l.part.as_str()).collect()
}

#[test]
fn a_record_with_every_part_is_complete() {
    assert_eq!(check(&complete()), []);
}

#[test]
fn each_missing_part_is_named() {
    let mut t = complete();
    t.state = Some(StateDigests { initial: Some("a".repeat(64)), final_state: None });
    assert_eq!(check(&t), [Lack::new(Part::FinalState, "no final state digest")]);

    let mut t = complete();
    t.steps[2].tool_results.clear();
    assert_eq!(check(&t), [Lack::new(Part::ToolResults, "1 of 1 tool calls have no linked result")]);

    let mut t = complete();
    t.steps.pop();
    assert_eq!(check(&t), [Lack::new(Part::FinalOutput, "the run ends with a tool step (step 2)")]);

    let mut t = complete();
    t.outcome.verification = Verification::SourceReported;
    assert_eq!(parts(&t), ["verifier_outcome"]);
    t.outcome.status = Status::Unknown;
    assert_eq!(check(&t)[0].detail, "outcome unknown");
}

#[test]
fn without_calls_or_a_named_environment_no_state_is_required() {
    let mut t = complete();
    t.task.environment = None;
    t.state = None;
    t.steps.remove(2);
    t.steps[1].tool_calls.clear();
    assert_eq!(check(&t), [Lack::new(Part::ToolCalls, "no tool call recorded")]);
    t.task.environment = Some("shell".into());
    assert_eq!(parts(&t), ["tool_calls", "initial_state", "final_state"]);
}

#[test]
fn copied_context_and_subagent_steps_do_not_count() {
    let mut t = complete();
    for s in &mut t.steps[1..] {
        s.copied_context = true;
    }
    assert_eq!(parts(&t), ["model_outputs", "tool_calls", "final_output"]);
    assert_eq!(check(&t)[2].detail, "the run ends with a user step (step 0)");
    let mut t = complete();
    t.steps[3].subagent = true;
    assert_eq!(parts(&t), ["final_output"]);
}

#[test]
fn report_lines_and_the_tally() {
    let mut tally = Tally::default();
    let mut t = complete();
    assert!(tally.add(&t).is_empty());
    t.state = None;
    t.provenance.document_index = Some(3);
    let lacks = tally.add(&t);
    assert_eq!(
        text_line(&t, &lacks),
        "a.json#3: incomplete: t: lacks initial_state (no initial state digest), final_state (no final state digest)"
    );
    assert_eq!(
        json_line(&t, &lacks),
        r#"{"document_index":3,"id":"t","lacks":[{"detail":"no initial state digest","part":"initial_state"},{"detail":"no final state digest","part":"final_state"}],"path":"a.json"}"#
    );
    assert_eq!(tally.summary(), "complete: 1 of 2 trajectories; lacking: initial_state=1 final_state=1");
}
