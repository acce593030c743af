//! OpenHands reader on real files (tests/fixtures/real/openhands_events,
//! tests/fixtures/real/openhands_eval_output, and Harbor's RFC example of a native OpenHands
//! event list under atif/not-atif), plus synthetic cases for rules no real file shows.
//!
//! Expected figures were counted independently with python from the files, not copied from
//! the program's output.

mod common;

use common::{assert_figures, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Authorship, Role, Status, TaskKeySource, Verification};

type Row = (&'static str, u64, u64, u64, u64, u64, u64, &'static [(&'static str, u64)], &'static [(&'static str, u64)]);

const RFC: &str = "atif/not-atif/rfc-native-openhands-trajectory.json";

/// path under tests/fixtures/real, records, trajectories, steps, tool_calls,
/// duplicate_records, rejected, reasons, gaps.
const FIGURES: &[Row] = &[
    ("openhands_events/basic.json", 1, 1, 4, 2, 0, 0, &[], &[]),
    ("openhands_events/basic_interactions.json", 1, 1, 6, 1, 0, 0, &[], &[]),
    ("openhands_eval_output/output.jsonl", 3, 3, 222, 105, 0, 0, &[], &[("incomplete_generation", 1)]),
    (RFC, 1, 1, 7, 2, 0, 0, &[], &[]),
];

#[test]
fn every_real_openhands_file_has_its_exact_figures() {
    for &(rel, records, trajectories, steps, tool_calls, dups, rejected, reasons, gaps) in FIGURES {
        let c = read(&[real(rel)]);
        assert_eq!(c.reports.len(), 1, "{rel}");
        let want = (records, trajectories, 0, steps, tool_calls, dups, rejected);
        assert_figures(&c.reports[0], rel, "openhands", want, reasons, gaps);
    }
    // Detection over the two fixture folders together: every file is claimed.
    let c = read(&[real("openhands_events"), real("openhands_eval_output")]);
    let names: Vec<(&str, Option<&str>)> = c.reports.iter().map(|r| (r.path.as_str(), r.format.as_deref())).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names.iter().all(|(_, f)| *f == Some("openhands")), "{names:?}");
    assert_eq!(report(&c, "basic.json").steps, 4);
}

#[test]
fn an_edit_action_is_the_models_call_and_its_observation_links_by_tool_call_id() {
    let c = read(&[real("openhands_events/basic.json")]);
    let t = &c.trajectories[0];
    // sha256sum basic.json: e80ea691272569f2...
    assert_eq!(t.id, "openhands-e80ea691272569f2");
    assert_eq!(t.provenance.format, "openhands");
    assert_eq!(t.provenance.document_index, Some(0));
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
    let sources: Vec<_> = t.steps.iter().map(|s| s.source_id.clone()).collect();
    assert_eq!(sources, [Some(json!(0)), Some(json!(3)), Some(json!(4)), Some(json!(5))]);

    let edit = &t.steps[1];
    assert_eq!(edit.extra["action"], json!("edit"));
    assert!(edit.content.as_ref().is_some_and(|c| c.as_str().is_some_and(|s| s.starts_with("I'll help you create"))));
    let call = &edit.tool_calls[0];
    assert_eq!(call.name, "str_replace_editor");
    assert_eq!(call.id.as_deref(), Some("toolu_017nBp7UfiGqyrA7j77HgtFP"));
    // Arguments are the model's own call, parsed (the action's args are kept in extra).
    assert_eq!(call.arguments["command"], json!("create"));
    assert_eq!(call.arguments["path"], json!("/workspace/game_2048.py"));
    assert!(call.arguments["file_text"].as_str().is_some_and(|s| s.starts_with("import random\n")));
    assert_eq!(edit.extra["args"]["impl_source"], json!("oh_aci"));
    let m = edit.metrics.as_ref().expect("usage of the model response");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(3486), Some(1135), Some(0)));

    let obs = &t.steps[2].tool_results[0];
    assert_eq!(obs.call_id.as_deref(), Some("toolu_017nBp7UfiGqyrA7j77HgtFP"));
    assert_eq!(obs.extra["observation"], json!("edit"));
    assert_eq!(obs.extra["cause"], json!(3));
    assert!(obs
        .content
        .as_ref()
        .is_some_and(|c| c.as_str().is_some_and(|s| s.starts_with("--- /workspace/game_2048.py"))));

    // finish is never answered: no unanswered_tool_call gap.
    assert_eq!(t.steps[3].tool_calls[0].name, "finish");
    assert!(t.gaps.is_empty());
    assert_eq!(t.agent.model.as_deref(), Some("claude-3-5-sonnet-20241022"));
    assert_eq!(t.outcome.status, Status::Unknown);
    assert_eq!(t.outcome.verification, Verification::Unverified);
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert_eq!(t.task.id, None);
    assert!(t.task.instruction.as_deref().is_some_and(|s| s.starts_with("Please create a simple 2048 game.")));
    assert!(t.metrics.is_none(), "no llm_metrics in this stream");
}

#[test]
fn a_dialogue_keeps_user_and_agent_messages_in_order() {
    let c = read(&[real("openhands_events/basic_interactions.json")]);
    let t = &c.trajectories[0];
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    use Role::*;
    assert_eq!(roles, [User, Assistant, User, Assistant, User, Assistant]);
    assert_eq!(t.steps[2].content.as_deref(), Some(&json!("No, I mean by Goldbach's conjecture!")));
    assert_eq!(t.steps[1].content.as_deref(), Some(&json!("1 + 1 equals 2.")));
    assert!(t.steps[1].tool_calls.is_empty(), "a plain agent message is not a call");
    let finish = &t.steps[5].tool_calls[0];
    assert_eq!((finish.name.as_str(), finish.id.as_deref()), ("finish", Some("call_IpyczPgEAwtpRWFZ2RNokTdH")));
    assert_eq!(finish.arguments, json!({}));
    assert_eq!(t.agent.model.as_deref(), Some("gpt-4o-2024-08-06"));
    assert_eq!(t.task.instruction.as_deref(), Some("what's 1+1?"));
}

#[test]
fn harbor_rfc_native_event_list_is_openhands() {
    let c = read(&[real(RFC)]);
    let t = &c.trajectories[0];
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    use Role::*;
    assert_eq!(roles, [System, User, Environment, Environment, Assistant, Tool, Assistant]);
    // System event: tools, agent class and OpenHands version.
    assert_eq!(t.tools.as_ref().map(Vec::len), Some(6));
    assert_eq!(t.agent.name.as_deref(), Some("CodeActAgent"));
    assert_eq!(t.agent.version.as_deref(), Some("0.58.0"));
    assert_eq!(t.agent.model.as_deref(), Some("gpt-5-2025-08-07"));
    // The recall observation answers the harness's recall action (cause 2): an environment step.
    assert_eq!(t.steps[3].extra["cause"], json!(2));
    assert_eq!(t.steps[3].content.as_deref(), Some(&json!("Added workspace context")));
    let call = &t.steps[4].tool_calls[0];
    assert_eq!(call.name, "execute_bash");
    assert_eq!(call.arguments["security_risk"], json!("MEDIUM"), "the model's argument, not the action's 1");
    assert_eq!(t.steps[5].tool_results[0].call_id.as_deref(), Some("call_ruehvjC2P8Qd6aIW5wqdqL7J"));
    // Run totals: the last accumulated llm_metrics.
    let m = t.metrics.as_ref().expect("llm_metrics");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(11859), Some(1086), Some(5632)));
    assert_eq!(m.cost_usd, Some(0.01934775));
    assert!(t.gaps.is_empty());
}

#[test]
fn eval_output_lines_name_their_instance() {
    let c = read(&[real("openhands_eval_output/output.jsonl")]);
    let ts = from_file(&c, "output.jsonl");
    let ids: Vec<Option<&str>> = ts.iter().map(|t| t.task.id.as_deref()).collect();
    assert_eq!(ids, [Some("ponylang__ponyc-4595"), Some("ponylang__ponyc-4593"), Some("ponylang__ponyc-4588")]);
    let t = ts[0];
    // sha256 of line 1 (without its newline): e6dd1d28794f7d86...
    assert_eq!(t.id, "openhands-e6dd1d28794f7d86");
    assert_eq!(t.provenance.line, Some(1));
    assert_eq!(t.task.key, "ponylang__ponyc-4595");
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
    assert!(t.task.instruction.as_deref().is_some_and(|s| s.starts_with("<uploaded_files>")));
    assert_eq!(t.agent.name.as_deref(), Some("CodeActAgent"));
    assert_eq!(t.agent.model.as_deref(), Some("openai/openrouter-llama-4-maverick"));
    let first_call = t.steps.iter().find(|s| !s.tool_calls.is_empty()).expect("a call");
    assert_eq!(first_call.model.as_deref(), Some("meta-llama/llama-4-maverick"), "the responding model differs");
    // No resolved flag in test_result (only git_patch): outcome unknown.
    assert_eq!(t.outcome.status, Status::Unknown);
    assert!(t.extra["test_result"]["git_patch"].as_str().is_some_and(|p| p.starts_with("diff --git")));
    // Run totals: cost 0 next to 565158 prompt tokens is an unpriced model, not a cost.
    let m = t.metrics.as_ref().expect("metrics");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(565158), Some(2558), Some(0)));
    assert_eq!(m.cost_usd, None);
    assert_eq!(m.extra["accumulated_cost"], json!(0.0));
    assert_eq!(ts[2].extra["error"].as_str().map(|e| e.contains("maximum iteration")), Some(true));
    // Row 3 stopped at the iteration limit: an incomplete_generation gap naming the error.
    let gaps: Vec<(&str, Option<&str>)> = ts[2].gaps.iter().map(|g| (g.kind.as_str(), g.detail.as_deref())).collect();
    assert_eq!(
        gaps,
        [(
            "incomplete_generation",
            Some("RuntimeError: Agent reached maximum iteration in headless mode. Current iteration: 50, max iteration: 50")
        )]
    );
    assert!(ts[0].gaps.is_empty() && ts[1].gaps.is_empty());
}

#[test]
fn observations_link_by_reference_and_a_causeless_error_is_an_environment_step() {
    let c = read(&[real("openhands_eval_output/output.jsonl")]);
    let t = &c.trajectories[1];
    // History index 28 = event 29: an error with neither cause nor tool_call_metadata.
    let err = &t.steps[28];
    assert_eq!(err.source_id, Some(json!(29)));
    assert_eq!((err.role, err.tool_results.len()), (Role::Environment, 0));
    assert_eq!(err.extra["observation"], json!("error"));
    // Event 32: the model's call (parsed arguments); the action's own args stay in extra.
    let read32 = &t.steps[31];
    assert_eq!(read32.source_id, Some(json!(32)));
    assert_eq!(read32.tool_calls[0].id.as_deref(), Some("toolu_14"));
    assert_eq!(read32.tool_calls[0].arguments["view_range"], json!([100, 150]));
    assert_eq!(read32.extra["args"]["view_range"], json!([100, 150]));
    assert_eq!(read32.extra["args"]["start"], json!(0));
    let obs33 = &t.steps[32].tool_results[0];
    assert_eq!(obs33.call_id.as_deref(), Some("toolu_14"));
    assert_eq!(obs33.extra["cause"], json!(32));
}

mod synthetic {
    //! Rules no real file shows: written here by hand, small on purpose. SYNTHETIC data.
    use super::common::read;
    use serde_json::json;
    use trajkit_model::{Authorship, Role, Status, TaskKeySource, Verification};

    fn file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn cause_links_without_tool_call_metadata_and_a_dangling_cause_is_a_gap() {
        // SYNTHETIC: an older stream without tool_call_metadata.
        let events = r#"[
 {"id": 0, "source": "user", "action": "message", "args": {"content": "list files"}},
 {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls", "thought": "look"}},
 {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "a.txt", "extras": {}},
 {"id": 3, "source": "agent", "observation": "run", "cause": 99, "content": "?", "extras": {}}
]"#;
        let (_d, p) = file("events.json", events);
        let c = read(&[p]);
        assert_eq!(c.reports[0].format.as_deref(), Some("openhands"));
        let t = &c.trajectories[0];
        let call = &t.steps[1].tool_calls[0];
        assert_eq!((call.name.as_str(), call.id.as_deref()), ("run", Some("event:1")));
        assert_eq!(call.arguments, json!({"command": "ls"}));
        assert_eq!(t.steps[1].content.as_deref(), Some(&json!("look")));
        assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("event:1"));
        assert_eq!(t.steps[3].tool_results[0].call_id.as_deref(), Some("event:99"));
        let gaps: Vec<(&str, Option<usize>, Option<&str>)> =
            t.gaps.iter().map(|g| (g.kind.as_str(), g.step, g.detail.as_deref())).collect();
        assert_eq!(gaps, [("result_without_call", Some(3), Some("event:99"))]);
    }

    #[test]
    fn resolver_output_success_is_the_resolvers_verdict() {
        // SYNTHETIC: the shape of OpenHands' ResolverOutput, whose history items are
        // dataclasses.asdict(event): no id, source, cause or tool_call_metadata.
        let line = r#"{"issue": {"owner": "acme", "repo": "widgets", "number": 7, "title": "Crash", "body": "It crashes"}, "issue_type": "issue", "instruction": "Fix issue 7", "base_commit": "abc", "git_patch": "diff", "history": [{"content": "Fix issue 7", "image_urls": null, "wait_for_response": false, "action": "message"}, {"command": "ls", "thought": "", "action": "run"}, {"content": "a.txt", "command": "ls", "observation": "run"}, {"outputs": {}, "thought": "done", "action": "finish"}], "metrics": null, "success": true, "comment_success": null, "result_explanation": "The patch fixes the crash", "error": null}"#;
        let (_d, p) = file("output.jsonl", &format!("{line}\n"));
        let c = read(&[p]);
        let r = &c.reports[0];
        assert_eq!(
            (r.format.as_deref(), r.records, r.trajectories, r.steps, r.tool_calls),
            (Some("openhands"), 1, 1, 4, 2)
        );
        let t = &c.trajectories[0];
        assert_eq!(t.task.id.as_deref(), Some("acme/widgets#7"));
        assert_eq!(t.task.key, "acme/widgets#7");
        assert_eq!(t.task.key_source, TaskKeySource::Explicit);
        assert_eq!(t.task.instruction.as_deref(), Some("Fix issue 7"));
        assert_eq!((t.outcome.status, t.outcome.verification), (Status::Success, Verification::SourceEvaluator));
        assert_eq!(t.extra["result_explanation"], json!("The patch fixes the crash"));
        assert!(!t.extra.contains_key("success"));
        // Without a source the message's author is unknown; without ids nothing links.
        assert_eq!((t.steps[0].role, t.steps[0].authorship), (Role::User, Authorship::Unknown));
        assert_eq!(t.steps[1].tool_calls[0].name, "run");
        assert_eq!(t.steps[1].tool_calls[0].id, None);
        assert_eq!(t.steps[2].role, Role::Environment);
        let kinds: Vec<&str> = t.gaps.iter().map(|g| g.kind.as_str()).collect();
        assert_eq!(kinds, ["unanswered_tool_call"]);
    }

    #[test]
    fn huge_token_totals_do_not_overflow() {
        // SYNTHETIC: u64::MAX prompt and completion tokens (the old sum overflowed).
        let line = r#"{"instance_id": "x", "history": [], "metrics": {"accumulated_cost": 0.0, "accumulated_token_usage": {"prompt_tokens": 18446744073709551615, "completion_tokens": 18446744073709551615}}}"#;
        let (_d, p) = file("output.jsonl", line);
        let c = read(&[p]);
        let m = c.trajectories[0].metrics.as_ref().expect("metrics");
        assert_eq!((m.prompt_tokens, m.completion_tokens), (Some(u64::MAX), Some(u64::MAX)));
        assert_eq!(m.cost_usd, None, "cost 0 next to counted tokens stays unpriced");
    }

    #[test]
    fn eval_report_resolved_is_the_outcome() {
        // SYNTHETIC: an evaluated output line (test_result.report.resolved).
        let line = r#"{"instance_id": "x__y-1", "instruction": "do it", "history": [], "metrics": {"accumulated_cost": 0.5, "accumulated_token_usage": {"prompt_tokens": 10, "completion_tokens": 2, "cache_read_tokens": 1}}, "test_result": {"git_patch": "", "report": {"resolved": false}}}"#;
        let (_d, p) = file("output.jsonl", &format!("{line}\n"));
        let c = read(&[p]);
        let t = &c.trajectories[0];
        assert_eq!((t.outcome.status, t.outcome.verification), (Status::Failure, Verification::SourceEvaluator));
        assert_eq!(t.gaps[0].kind.as_str(), "no_steps");
        let m = t.metrics.as_ref().expect("metrics");
        assert_eq!(
            (m.prompt_tokens, m.completion_tokens, m.cached_tokens, m.cost_usd),
            (Some(10), Some(2), Some(1), Some(0.5))
        );
    }

    #[test]
    fn an_event_without_kind_rejects_the_record() {
        // SYNTHETIC.
        let (_d, p) = file(
            "events.json",
            r#"[{"id": 0, "source": "user", "action": "message", "args": {}}, {"id": 1, "source": "agent", "args": {}}]"#,
        );
        let c = read(&[p]);
        assert_eq!(c.reports[0].rejected, 1);
        assert_eq!(c.rejections[0].reason.as_str(), "schema_violation");
        assert_eq!(c.rejections[0].problems[0].json_path, "$[1]");
    }
}

#[test]
fn user_messages_have_declared_authorship() {
    let c = read(&[real("openhands_events/basic_interactions.json")]);
    assert!(c.trajectories[0].steps.iter().all(|s| s.authorship == Authorship::Declared));
}
