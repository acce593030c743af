//! Gemini CLI chat recordings: the one real published session found
//! (tests/fixtures/real/atif/not-atif/rfc-native-gemini-cli-trajectory.json, Harbor's RFC 0001
//! example, see tests/fixtures/real/atif/NOTICE.md), plus synthetic recordings for what it
//! does not show (tool calls, the JSON Lines form). The synthetic ones follow the schema of gemini-cli's
//! `packages/core/src/services/chatRecordingTypes.ts` and `chatRecordingService.ts`
//! (google-gemini/gemini-cli, commit 04741d1d7383bce06c0f0a22101561b619a75dd3, Apache-2.0):
//! `ConversationRecord` documents and the JSON Lines form with `$set` and `$rewindTo`.

mod common;

use common::{read, real, report};
use serde_json::{json, Value};
use trajkit_model::{Role, Status};

#[test]
fn the_real_rfc_session_has_its_exact_figures() {
    // 2 messages: the user's request and one gemini answer (no tool call), gemini-2.0-flash,
    // tokens input 5915, output 24, cached 0, thoughts 0, tool 0, total 5939.
    let c = read(&[real("atif/not-atif/rfc-native-gemini-cli-trajectory.json")]);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("gemini-cli"));
    assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (1, 1, 2, 0, 0));
    let t = &c.trajectories[0];
    assert!(t.gaps.is_empty());
    assert_eq!(t.session_id.as_deref(), Some("cdd63974-c2a3-4f1c-931d-cce1db22ec03"));
    assert_eq!(t.agent.model.as_deref(), Some("gemini-2.0-flash"));
    assert_eq!(t.steps.iter().map(|s| s.role).collect::<Vec<_>>(), [Role::User, Role::Assistant]);
    let m = t.steps[1].metrics.as_ref().expect("metrics");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(5915), Some(24), Some(0)));
    assert_eq!(m.extra["total"], json!(5939));
    assert_eq!(
        t.task.instruction.as_deref(),
        Some("Create a file called hello.txt with \"Hello, world!\" as the content.\n")
    );
    assert_eq!(t.extra["projectHash"], json!("f53b52ad6d21cceb72dfa78fb67614fe14f110c58e68412b01508d6a485501c3"));
    assert_eq!(t.outcome.status, Status::Unknown);
}

/// A `gemini` message with one `run_shell_command` call that recorded its result.
fn answer() -> Value {
    json!({"id": "m2", "timestamp": "2026-01-05T10:00:03Z", "type": "gemini", "content": "Listing.",
        "thoughts": [{"subject": "Plan", "description": "List the files first.", "timestamp": "2026-01-05T10:00:02Z"}],
        "tokens": {"input": 1200, "output": 40, "cached": 1000, "thoughts": 25, "tool": 0, "total": 1265},
        "model": "gemini-2.5-pro",
        "toolCalls": [{"id": "run_shell_command-1", "name": "run_shell_command", "args": {"command": "ls"},
            "result": [{"functionResponse": {"id": "run_shell_command-1", "name": "run_shell_command",
                "response": {"output": "a.txt"}}}],
            "status": "success", "timestamp": "2026-01-05T10:00:04Z", "displayName": "Shell",
            "resultDisplay": "a.txt", "renderOutputAsMarkdown": false}]})
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn single_document_recording_maps_calls_results_tokens_and_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = json!({"sessionId": "s-1", "projectHash": "ab12", "startTime": "2026-01-05T10:00:00Z",
    "lastUpdated": "2026-01-05T10:00:09Z", "kind": "main",
    "messages": [
        {"id": "m1", "timestamp": "2026-01-05T10:00:01Z", "type": "user", "content": [{"text": "List the files"}]},
        answer(),
        {"id": "m3", "timestamp": "2026-01-05T10:00:05Z", "type": "gemini", "content": "There is a.txt.",
         "tokens": {"input": 1300, "output": 8, "cached": 1200, "total": 1308}, "model": "gemini-2.5-flash"},
        {"id": "m4", "timestamp": "2026-01-05T10:00:06Z", "type": "info", "content": "Session saved"}
    ]});
    let path = write(dir.path(), "session-2026-01-05T10-00-s1.json", &doc.to_string());
    let c = read(&[path]);
    let r = report(&c, "session-2026-01-05T10-00-s1.json");
    assert_eq!(r.format.as_deref(), Some("gemini-cli"));
    assert_eq!((r.records, r.steps, r.tool_calls, r.rejected), (1, 5, 1, 0));
    let t = &c.trajectories[0];
    assert!(t.gaps.is_empty(), "{:?}", t.gaps);
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant, Role::System]);
    assert_eq!(t.steps[0].content.as_deref(), Some(&json!("List the files")));
    assert_eq!(t.task.instruction.as_deref(), Some("List the files"));
    let a = &t.steps[1];
    assert_eq!(a.reasoning.as_deref(), Some("List the files first."));
    assert_eq!(a.tool_calls[0].arguments, json!({"command": "ls"}));
    let m = a.metrics.as_ref().expect("metrics");
    assert_eq!((m.prompt_tokens, m.cached_tokens, m.completion_tokens), (Some(1200), Some(1000), Some(40)));
    assert_eq!(m.extra["thoughts"], json!(25));
    let res = &t.steps[2].tool_results[0];
    assert_eq!(res.call_id.as_deref(), Some("run_shell_command-1"));
    assert_eq!(res.extra["status"], json!("success"));
    assert_eq!(
        res.content.as_ref().and_then(|c| c[0]["functionResponse"]["response"]["output"].as_str()),
        Some("a.txt")
    );
    assert_eq!(t.agent.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(t.steps[3].model.as_deref(), Some("gemini-2.5-flash"));
    assert_eq!(t.steps[4].extra["type"], json!("info"));
    assert_eq!(t.session_id.as_deref(), Some("s-1"));
    assert_eq!(t.extra["projectHash"], json!("ab12"));
    assert_eq!(t.outcome.status, Status::Unknown);
}

#[test]
fn jsonl_recording_applies_set_and_rewind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lines = [
        json!({"sessionId": "s-2", "projectHash": "cd34", "startTime": "2026-01-05T11:00:00Z", "kind": "main"}),
        json!({"id": "m1", "timestamp": "2026-01-05T11:00:01Z", "type": "user", "content": "first try"}),
        json!({"id": "m1b", "timestamp": "2026-01-05T11:00:02Z", "type": "gemini", "content": "abandoned"}),
        json!({"$rewindTo": "m1"}),
        json!({"id": "m1c", "timestamp": "2026-01-05T11:00:03Z", "type": "user", "content": "List the files"}),
        answer(),
        json!({"$set": {"summary": "Listed files", "lastUpdated": "2026-01-05T11:00:09Z"}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let path = write(dir.path(), "session-2026-01-05T11-00-s2.jsonl", &text);
    let c = read(&[path]);
    let r = report(&c, "session-2026-01-05T11-00-s2.jsonl");
    assert_eq!(r.format.as_deref(), Some("gemini-cli"));
    assert_eq!((r.records, r.steps, r.tool_calls), (1, 3, 1));
    let t = &c.trajectories[0];
    // The rewind to m1 removed m1 and m1b (2 messages): one abandoned_branch gap.
    assert_eq!(t.gaps.len(), 1);
    assert_eq!(t.gaps[0].kind.as_str(), "abandoned_branch");
    assert_eq!(t.gaps[0].detail.as_deref(), Some("line 4: $rewindTo m1 removed 2 message(s)"));
    assert_eq!(t.task.instruction.as_deref(), Some("List the files"));
    assert_eq!(t.extra["summary"], json!("Listed files"));
    assert_eq!(t.extra["lastUpdated"], json!("2026-01-05T11:00:09Z"));
    assert_eq!(t.session_id.as_deref(), Some("s-2"));
}

#[test]
fn a_line_of_no_known_kind_rejects_the_recording_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "{\"sessionId\": \"s\", \"projectHash\": \"h\"}\n{\"what\": 1}\n";
    let path = write(dir.path(), "session-x.jsonl", text);
    let c = read(&[path]);
    assert_eq!(c.rejections.len(), 1);
    let p = &c.rejections[0].problems[0];
    assert_eq!((p.reason.as_str(), p.json_path.as_str()), ("schema_violation", "$[line 2]"));
}
