//! Codex CLI reader on real published rollouts (tests/fixtures/real/codex, see its
//! NOTICE.md), plus synthetic cases for rules no real file shows.
//!
//! Expected figures were counted independently with python from the files.

mod common;

use common::{assert_figures, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Authorship, Role, Status, TaskKeySource, Verification};

const A: &str = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl";
const B: &str = "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl";

#[test]
fn every_real_codex_file_has_its_exact_figures() {
    let c = read(&[real("codex")]);
    assert_eq!(c.reports.len(), 2);
    // A: 173 steps = system (base instructions) + developer + 3 user + 66 assistant (one per
    // model response: 66 token_count events; web searches stay inside their response) + 102
    // tool results (99 function_call_output + 3 custom_tool_call_output). B: 62 = 59 from
    // response items + 3 user steps that exist only as event_msg user_message.
    for (name, steps, calls) in [(A, 173, 102), (B, 62, 38)] {
        assert_figures(report(&c, &format!("codemie/{name}")), name, "codex", (1, 1, 0, steps, calls, 0, 0), &[], &[]);
    }
}

#[test]
fn session_meta_turn_context_and_calls_map() {
    let c = read(&[real("codex")]);
    let t = from_file(&c, A)[0];
    assert_eq!(t.session_id.as_deref(), Some("019e1625-789d-76c0-80ab-3724b5ddb799"));
    assert_eq!((t.agent.name.as_deref(), t.agent.version.as_deref()), (Some("codex"), Some("0.125.0")));
    assert_eq!(t.agent.model.as_deref(), Some("gpt-5.5"));
    assert!(t.id.starts_with("codex-"));
    // base_instructions are the system prompt.
    assert_eq!(t.steps[0].role, Role::System);
    assert!(t.steps[0].content.as_ref().and_then(|v| v.as_str()).is_some_and(|s| s.starts_with("You are Codex")));
    let (i, call) = t.steps.iter().enumerate().find_map(|(i, s)| s.tool_calls.first().map(|c| (i, c))).expect("a call");
    assert_eq!(call.name, "exec_command");
    assert_eq!(call.id.as_deref(), Some("call_Y2p6KmqwoTtpi6atpDPuxC5M"));
    assert!(call.arguments["cmd"].as_str().is_some_and(|s| s.starts_with("sed -n '1,180p'")));
    let res = t.steps[i + 1..].iter().find(|s| s.role == Role::Tool).expect("result");
    assert_eq!(res.tool_results[0].call_id.as_deref(), Some("call_Y2p6KmqwoTtpi6atpDPuxC5M"));
    // custom tools take free-form text: kept as a string, not flagged invalid.
    let patch = t.steps.iter().flat_map(|s| &s.tool_calls).find(|c| c.name == "apply_patch").expect("patch");
    assert!(!patch.arguments_invalid && patch.arguments.as_str().is_some_and(|s| s.starts_with("*** Begin Patch")));
    // Run totals from the last token_count.
    let m = t.metrics.as_ref().expect("totals");
    assert_eq!((m.prompt_tokens, m.cached_tokens, m.completion_tokens), (Some(6055836), Some(4929536), Some(9118)));
    assert_eq!(m.extra["reasoning_output_tokens"], json!(1759));
    assert_eq!(t.task.instruction.as_deref(), Some("show tools"));
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Unknown, Verification::Unverified));
    // Mirrored events are not steps; their counts are kept.
    assert_eq!(t.extra["event_msg_counts"]["agent_message"], json!(13));
    assert!(t.steps.iter().all(|s| s.role != Role::User || s.authorship == Authorship::Unknown || s.content.is_some()));
}

#[test]
fn a_rollout_without_turn_context_has_no_model() {
    let c = read(&[real("codex")]);
    let t = from_file(&c, B)[0];
    assert_eq!(t.agent.model, None);
    assert_eq!(t.agent.version.as_deref(), Some("0.128.0-alpha.1"));
    assert!(t.metrics.is_none(), "no token_count events");
}

#[test]
fn harness_context_messages_have_unknown_authorship() {
    let c = read(&[real("codex")]);
    let t = from_file(&c, A)[0];
    let env = t
        .steps
        .iter()
        .find(|s| {
            s.content
                .as_deref()
                .and_then(trajkit_formats::json::content_text)
                .is_some_and(|x| x.starts_with("# AGENTS.md instructions"))
        })
        .expect("AGENTS.md context");
    assert_eq!((env.role, env.authorship), (Role::User, Authorship::Unknown));
}

#[test]
fn one_assistant_step_per_model_response_with_web_searches_inside() {
    let c = read(&[real("codex")]);
    let t = from_file(&c, A)[0];
    let assistant: Vec<_> = t.steps.iter().filter(|s| s.role == Role::Assistant).collect();
    assert_eq!(assistant.len(), 66, "66 token_count events = 66 model responses");
    assert!(assistant.iter().all(|s| s.metrics.is_some()), "each response metered once");
    assert!(t.steps.iter().all(|s| s.role != Role::Environment));
    let searches: usize = assistant
        .iter()
        .filter_map(|s| s.extra.get("web_search_calls"))
        .filter_map(|v| v.as_array())
        .map(Vec::len)
        .sum();
    assert_eq!(searches, 3);
}

#[test]
fn ui_events_with_their_own_values_are_kept_with_line_numbers() {
    let c = read(&[real("codex")]);
    let t = from_file(&c, A)[0];
    let events = t.extra["events"].as_array().expect("events");
    let count = |k: &str| events.iter().filter(|e| e["payload"]["type"] == json!(k)).count();
    // Every token_count (66), exec_command_end (43), patch_apply_end (3), web_search_end (3),
    // task_started / task_complete (2 each); agent_message (13) and user_message (2) only
    // repeat response items and are not copied.
    let got: Vec<usize> = [
        "token_count",
        "exec_command_end",
        "patch_apply_end",
        "web_search_end",
        "task_started",
        "task_complete",
        "agent_message",
        "user_message",
    ]
    .iter()
    .map(|k| count(k))
    .collect();
    assert_eq!(got, [66, 43, 3, 3, 2, 2, 0, 0]);
    assert_eq!(events.len(), 119);
    let exec = events.iter().find(|e| e["payload"]["type"] == json!("exec_command_end")).expect("exec end");
    assert!(exec["line"].is_u64() && exec["timestamp"].is_string());
    assert!(exec["payload"].get("exit_code").is_some() && exec["payload"].get("aggregated_output").is_some());
}

#[test]
fn desktop_user_messages_logged_only_as_events_become_user_steps() {
    // Rollout B (Codex Desktop) has no response_item user message: the three user_message
    // events are the person's words.
    let c = read(&[real("codex")]);
    let t = from_file(&c, B)[0];
    let users: Vec<_> = t.steps.iter().filter(|s| s.role == Role::User).collect();
    assert_eq!(users.len(), 3);
    assert!(users.iter().all(|s| s.authorship == Authorship::Declared && s.extra["source"] == json!("event_msg")));
    let texts: Vec<&str> = users.iter().filter_map(|s| s.content.as_ref().and_then(|v| v.as_str())).collect();
    assert!(texts[1].starts_with("there is a need for nikita"));
    assert!(texts[2].starts_with("use app tools to go to Analytics"));
    assert_eq!(t.task.instruction.as_deref(), Some(texts[0]));
    // The first user step comes before the first assistant step.
    let first_user = t.steps.iter().position(|s| s.role == Role::User);
    let first_assistant = t.steps.iter().position(|s| s.role == Role::Assistant);
    assert!(first_user < first_assistant);
}

mod synthetic {
    //! Rules that no real file shows, written here by hand (labelled synthetic).
    use super::common::read;
    use std::io::Write;

    fn file(lines: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rollout-x.jsonl");
        let mut f = std::fs::File::create(&path).expect("create");
        for l in lines {
            writeln!(f, "{l}").expect("write");
        }
        (dir, path)
    }

    #[test]
    fn aborted_turns_and_unanswered_calls_are_gaps() {
        let (_d, p) = file(&[
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"s1","cli_version":"0.1"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{bad","call_id":"c1"}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}"#,
        ]);
        let c = read(&[p]);
        let t = &c.trajectories[0];
        let kinds: Vec<&str> = t.gaps.iter().map(|g| g.kind.as_str()).collect();
        assert_eq!(kinds, ["incomplete_generation", "unanswered_tool_call", "invalid_tool_arguments"]);
        assert_eq!(t.task.instruction.as_deref(), Some("do it"));
    }

    #[test]
    fn a_line_without_payload_rejects_the_rollout() {
        let (_d, p) =
            file(&[r#"{"timestamp":"t","type":"session_meta","payload":{"id":"s"}}"#, r#"{"type":"event_msg"}"#]);
        let c = read(&[p]);
        assert_eq!(c.rejections[0].reason.as_str(), "schema_violation");
        assert_eq!(c.rejections[0].problems[0].json_path, "$[line 2].payload");
    }
}
