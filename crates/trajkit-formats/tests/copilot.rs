//! GitHub Copilot sessions. Real files (tests/fixtures/real/copilot/NOTICE.md): a Copilot CLI
//! `events.jsonl` and a VS Code Copilot Chat session in the JSON Lines mutation-log form.
//! No licensed real single-document session JSON (or "Export Chat" file) with tool call
//! rounds was found, so that form is covered by SYNTHETIC sessions built from the schema of
//! microsoft/vscode (`chatModel.ts`, `objectMutationLog.ts`, commit ce1580aa66c1, MIT) and
//! microsoft/vscode-copilot-chat (`toolCallRound.ts`, commit 35bfd52a71a1, MIT); the
//! rejection and error cases are synthetic too (no real file shows them).

mod common;

use common::{counts, read, real, report};
use serde_json::{json, Value};
use trajkit_model::{Role, Status, TaskKeySource};

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn the_real_cli_session_has_its_exact_figures() {
    // 34 events: 7 main-agent steps (system, user, 3 assistant messages, 2 tool steps with 3
    // results), an explore subagent (8 events with agentId: 3 steps, 2 calls), 18 + 4 other
    // events kept as written.
    let c = read(&[real("copilot/copilot-cli-events.jsonl")]);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("copilot-cli"));
    assert_eq!((r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.rejected), (1, 1, 1, 7, 3, 0));
    assert!(r.gaps.is_empty(), "{:?}", r.gaps);
    let t = &c.trajectories[0];
    assert_eq!(t.session_id.as_deref(), Some("030f200c-c26f-4ef0-9099-6d1156c83631"));
    assert_eq!(
        (t.agent.name.as_deref(), t.agent.version.as_deref(), t.agent.model.as_deref()),
        (Some("copilot-cli"), Some("1.0.55-1"), Some("claude-opus-4.7-1m-internal"))
    );
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    use Role::{Assistant, System, Tool, User};
    assert_eq!(roles, [System, User, Assistant, Tool, Assistant, Tool, Assistant]);
    let calls: Vec<(&str, &str)> = t
        .steps
        .iter()
        .flat_map(|s| &s.tool_calls)
        .map(|c| (c.id.as_deref().unwrap_or_default(), c.name.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("toolu_vrtx_01PF2T6yfpMUiWfxwZ8ywghr", "view"),
            ("toolu_vrtx_011u99FCtVjNG8tWpcNBNBuy", "report_intent"),
            ("toolu_vrtx_01TxUTxpA98CaQcbRogpf822", "task")
        ]
    );
    // Every call has its result, linked by toolCallId.
    let linked: Vec<&str> = t.steps.iter().flat_map(|s| &s.tool_results).filter_map(|r| r.call_id.as_deref()).collect();
    assert_eq!(linked, calls.iter().map(|c| c.0).collect::<Vec<_>>());
    assert_eq!(t.steps[5].tool_results[0].content.as_deref(), Some(&json!("Intent logged")));
    assert_eq!(
        t.steps[2].reasoning.as_deref(),
        Some("I need to start by looking at the skill file to understand what I'm working with.")
    );
    let output: Vec<Option<u64>> = t
        .steps
        .iter()
        .filter(|s| s.role == Assistant)
        .map(|s| s.metrics.as_ref().and_then(|m| m.completion_tokens))
        .collect();
    assert_eq!(output, [Some(125), Some(333), Some(63)]);
    // session.shutdown's token totals: output 747, cache reads 68028, input 25, cache writes 30663.
    let m = t.metrics.as_ref().expect("run metrics");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (None, Some(747), Some(68028)));
    assert_eq!((&m.extra["input_tokens"], &m.extra["cache_write_tokens"]), (&json!(25), &json!(30663)));
    assert_eq!(t.extra["events"].as_array().map(Vec::len), Some(18));
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert!(t.task.instruction.as_deref().is_some_and(|i| i.starts_with("Read .copilot/skills/demo-greeter/SKILL.md")));
    assert_eq!(
        t.steps[6].content,
        Some(json!(
            "Subagent findings:\n\n- **Lines in `hello.py`:** 6\n- **README.md summary:** A demo project containing a \
             trivial `hello.py` example that prints a greeting."
        ))
        .map(Into::into)
    );
    assert_eq!(t.outcome.status, Status::Unknown);

    // The explore subagent: spawned by the task call of step 4, its result refers to it.
    let sub = &t.subagents[0];
    assert_eq!(
        (sub.spawned_by_step, sub.spawned_by_tool_call.as_deref()),
        (Some(4), Some("toolu_vrtx_01TxUTxpA98CaQcbRogpf822"))
    );
    assert_eq!(t.steps[5].tool_results[1].subagent_refs, std::slice::from_ref(&sub.trajectory.id));
    let s = &sub.trajectory;
    assert_eq!(s.steps.iter().map(|s| s.role).collect::<Vec<_>>(), [Assistant, Tool, Assistant]);
    assert_eq!((s.agent.model.as_deref(), s.agent.version.as_deref()), (Some("claude-haiku-4.5"), Some("1.0.55-1")));
    assert_eq!(s.steps.iter().map(|s| s.tool_calls.len() + s.tool_results.len()).sum::<usize>(), 4);
    assert!(s.gaps.is_empty());
    assert!(s
        .task
        .instruction
        .as_deref()
        .is_some_and(|i| i.starts_with("In the directory /Users/testuser/workspace/demo-project")));
    assert_eq!(s.extra["events"].as_array().map(Vec::len), Some(4));
}

#[test]
fn the_real_chat_mutation_log_has_its_exact_figures() {
    // One agent-mode request, canceled: thinking, a markdown sentence and two tool
    // invocations (manage_todo_list, runSubagent) that recorded no result.
    let c = read(&[real("copilot/chat-session-0885a5a2.jsonl")]);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("copilot-chat"));
    assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (1, 1, 2, 2, 0));
    assert_eq!(r.gaps, counts(&[("incomplete_generation", 1), ("unanswered_tool_call", 2)]));
    let t = &c.trajectories[0];
    assert_eq!(t.session_id.as_deref(), Some("0885a5a2-5c49-4a15-b22a-15d9ec401050"));
    assert_eq!(
        (t.agent.name.as_deref(), t.agent.version.as_deref(), t.agent.model.as_deref()),
        (Some("copilot-chat"), Some("0.49.0"), Some("copilot/claude-opus-4.6"))
    );
    assert_eq!(t.task.instruction.as_deref(), Some("migrate to quarkus"));
    assert_eq!(t.steps[0].timestamp.as_deref(), Some("2026-05-24T12:42:05.284000000Z"));
    let a = &t.steps[1];
    assert_eq!(a.role, Role::Assistant);
    assert!(a
        .content
        .as_deref()
        .and_then(Value::as_str)
        .is_some_and(|c| c.starts_with("This is a structural rewrite")));
    assert!(a.reasoning.as_deref().is_some_and(|r| r.starts_with("The user wants to migrate their Strapi")));
    let calls: Vec<&str> = a.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(calls, ["manage_todo_list", "runSubagent"]);
    // completionTokens was set twice (327, then 699): the last value stands.
    assert_eq!(a.metrics.as_ref().and_then(|m| m.completion_tokens), Some(699));
    assert_eq!(a.extra["response"].as_array().map(Vec::len), Some(6));
    let gap = &t.gaps[0];
    assert_eq!(
        (gap.kind.as_str(), gap.step, gap.detail.as_deref()),
        ("incomplete_generation", Some(1), Some("request 0: Canceled"))
    );
    assert_eq!(t.outcome.status, Status::Unknown);
    assert_eq!(t.extra["customTitle"], json!("Migrate to Quarkus"));
}

/// SYNTHETIC (schema: chatModel.ts / toolCallRound.ts): an agent-mode request with two
/// tool call rounds (one result recorded, one not), thinking and usage, then an ask-mode
/// request that was canceled.
fn session() -> Value {
    json!({
        "version": 3, "requesterUsername": "dev", "responderUsername": "GitHub Copilot",
        "initialLocation": "panel", "sessionId": "s-42", "creationDate": 1767225600000u64,
        "requests": [
            {"requestId": "request_1", "timestamp": 1767225601000u64, "modelId": "copilot/gpt-4.1",
             "agent": {"extensionVersion": "0.30.1", "id": "github.copilot.editsAgent"},
             "message": {"text": "Add a /health route", "parts": [{"kind": "text", "text": "Add a /health route"}]},
             "variableData": {"variables": []},
             "response": [{"value": "Reading the app.", "supportThemeIcons": false},
                          {"kind": "toolInvocationSerialized", "toolCallId": "call_1", "toolId": "copilot_readFile",
                           "invocationMessage": {"value": "Reading app.py"}, "isComplete": true},
                          {"value": "Done."}],
             "result": {"timings": {"firstProgress": 900, "totalElapsed": 5000},
                        "metadata": {"promptTokens": 4000, "outputTokens": 120, "sessionId": "s-42",
                          "toolCallRounds": [
                            {"response": "Reading the app.", "id": "round_1", "toolInputRetry": 0,
                             "thinking": {"id": "th_1", "text": ["Check ", "the app first"]},
                             "toolCalls": [{"id": "call_1", "name": "copilot_readFile",
                                            "arguments": "{\"filePath\": \"/w/app.py\"}"}]},
                            {"response": "Done.", "id": "round_2", "toolInputRetry": 0,
                             "usage": {"prompt_tokens": 2100, "completion_tokens": 30,
                                       "prompt_tokens_details": {"cached_tokens": 2000}},
                             "toolCalls": [{"id": "call_2", "name": "run_in_terminal",
                                            "arguments": "{\"command\": \"pytest -q\""}]}],
                          "toolCallResults": {"call_1": {"content": [{"value": "from fastapi import FastAPI"}]}}}}},
            {"requestId": "request_2", "timestamp": 1767225700000u64, "modelId": "copilot/claude-sonnet-4",
             "message": {"text": "Explain it", "parts": []},
             "response": [{"kind": "markdownContent", "content": {"value": "It adds"}},
                          {"kind": "thinking", "value": "short"}],
             "isCanceled": true, "result": {}}
        ]
    })
}

#[test]
fn a_session_document_maps_rounds_results_usage_and_cancellation() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Pretty-printed, as VS Code writes session files and exports.
    let text = serde_json::to_string_pretty(&session()).expect("json");
    let path = write(dir.path(), "5f0c.json", &text);
    let c = read(&[path]);
    let r = report(&c, "5f0c.json");
    assert_eq!(r.format.as_deref(), Some("copilot-chat"));
    assert_eq!((r.records, r.steps, r.tool_calls, r.rejected), (1, 6, 2, 0));
    assert_eq!(
        r.gaps,
        counts(&[("incomplete_generation", 1), ("invalid_tool_arguments", 1), ("unanswered_tool_call", 1)])
    );
    let t = &c.trajectories[0];
    use Role::{Assistant, Tool, User};
    assert_eq!(t.steps.iter().map(|s| s.role).collect::<Vec<_>>(), [User, Assistant, Tool, Assistant, User, Assistant]);
    assert_eq!((t.session_id.as_deref(), t.agent.version.as_deref()), (Some("s-42"), Some("0.30.1")));
    assert_eq!(t.agent.model.as_deref(), Some("copilot/gpt-4.1"));
    // Round 1: its thinking text parts written one after another; its call answered by id.
    assert_eq!(t.steps[1].reasoning.as_deref(), Some("Check the app first"));
    assert_eq!(t.steps[1].tool_calls[0].arguments, json!({"filePath": "/w/app.py"}));
    assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("call_1"));
    assert_eq!(t.steps[2].tool_results[0].content.as_deref(), Some(&json!("from fastapi import FastAPI")));
    // Round 2: cut-off arguments kept verbatim and flagged; its usage; no result recorded.
    let call = &t.steps[3].tool_calls[0];
    assert_eq!((call.arguments_invalid, call.arguments.value().clone()), (true, json!("{\"command\": \"pytest -q\"")));
    let m = t.steps[3].metrics.as_ref().expect("round usage");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(2100), Some(30), Some(2000)));
    assert_eq!(t.steps[1].extra["response"].as_array().map(Vec::len), Some(3));
    assert_eq!(t.steps[3].extra["result"]["timings"]["totalElapsed"], json!(5000));
    // Request 2 (parts, canceled): markdownContent as content, another model on the step.
    assert_eq!(t.steps[5].content.as_deref(), Some(&json!("It adds")));
    assert_eq!(
        (t.steps[5].reasoning.as_deref(), t.steps[5].model.as_deref()),
        (Some("short"), Some("copilot/claude-sonnet-4"))
    );
    let kinds: Vec<(&str, Option<usize>)> = t.gaps.iter().map(|g| (g.kind.as_str(), g.step)).collect();
    assert_eq!(
        kinds,
        [("incomplete_generation", Some(5)), ("unanswered_tool_call", Some(3)), ("invalid_tool_arguments", Some(3))]
    );
    assert_eq!(t.gaps[0].detail.as_deref(), Some("request 1: canceled"));
    assert_eq!(t.task.instruction.as_deref(), Some("Add a /health route"));
    assert_eq!(t.outcome.status, Status::Unknown);
}

#[test]
fn a_session_larger_than_the_peek_is_detected_from_its_keys() {
    // SYNTHETIC: a 1.5 MB answer, so the detection peek (1 MiB) ends inside `requests`.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session();
    s["requests"][1]["response"][0]["content"]["value"] = json!("x".repeat(1_500_000));
    let path = write(dir.path(), "big.json", &serde_json::to_string_pretty(&s).expect("json"));
    let c = read(&[path]);
    assert_eq!(c.reports[0].format.as_deref(), Some("copilot-chat"));
    assert_eq!((c.reports[0].records, c.reports[0].steps), (1, 6));
}

#[test]
fn broken_logs_are_rejected_naming_line_and_field() {
    // SYNTHETIC: each log breaks one rule.
    let dir = tempfile::tempdir().expect("tempdir");
    let init = json!({"kind": 0, "v": {"responderUsername": "GitHub Copilot", "requests": []}});
    let cases = [
        (
            "a.jsonl",
            format!("{init}\n{}\n", json!({"kind": 1, "k": ["requests", 3, "result"], "v": {}})),
            "schema_violation",
            "$[line 2].k",
        ),
        ("b.jsonl", format!("{init}\n{{\"kind\": 2, \n"), "invalid_json", "$[line 2]"),
        ("c.jsonl", format!("{init}\n{}\n", json!({"kind": 5, "k": ["x"]})), "schema_violation", "$[line 2].kind"),
        (
            "events.jsonl",
            format!("{}\n{}\n", json!({"type": "session.start", "data": {"sessionId": "s"}}), json!({"data": {}})),
            "schema_violation",
            "$[line 2].type",
        ),
    ];
    let paths: Vec<_> = cases.iter().map(|(n, t, _, _)| write(dir.path(), n, t)).collect();
    let c = read(&paths);
    let mut got: Vec<(String, &str, &str)> = c
        .rejections
        .iter()
        .map(|r| {
            (
                r.path.rsplit('/').next().unwrap_or_default().to_string(),
                r.problems[0].reason.as_str(),
                r.problems[0].json_path.as_str(),
            )
        })
        .collect();
    got.sort();
    let want: Vec<(String, &str, &str)> = cases.iter().map(|(n, _, r, p)| (n.to_string(), *r, *p)).collect();
    assert_eq!(got, want);
    let total: u64 = c.reports.iter().map(|r| r.rejected).sum();
    assert_eq!(total, 4);
}

#[test]
fn cli_errors_and_aborts_are_gaps_and_a_call_without_completion_is_unanswered() {
    // SYNTHETIC: a session whose turn failed and was aborted before its tool completed.
    let dir = tempfile::tempdir().expect("tempdir");
    let lines = [
        json!({"type": "session.start", "data": {"sessionId": "s-9", "copilotVersion": "0.0.400", "selectedModel": "gpt-5"},
               "id": "e1", "timestamp": "2026-01-01T00:00:00Z", "parentId": null}),
        json!({"type": "user.message", "data": {"content": "fix the build"}, "id": "e2", "timestamp": "2026-01-01T00:00:01Z"}),
        json!({"type": "assistant.message", "data": {"messageId": "m1", "content": "Running it.",
               "toolRequests": [{"toolCallId": "t1", "name": "bash", "arguments": {"command": "make"}}]}, "id": "e3"}),
        json!({"type": "session.error", "data": {"errorType": "model", "message": "rate limited"}, "id": "e4"}),
        json!({"type": "abort", "data": {"reason": "user interrupted"}, "id": "e5"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let c = read(&[write(dir.path(), "events.jsonl", &text)]);
    let t = &c.trajectories[0];
    assert_eq!((c.reports[0].format.as_deref(), c.reports[0].steps), (Some("copilot-cli"), 2));
    assert_eq!(t.agent.model.as_deref(), Some("gpt-5"));
    let gaps: Vec<(&str, Option<&str>)> = t.gaps.iter().map(|g| (g.kind.as_str(), g.detail.as_deref())).collect();
    assert_eq!(
        gaps,
        [
            ("incomplete_generation", Some("line 4: session.error: rate limited")),
            ("incomplete_generation", Some("line 5: abort: user interrupted")),
            ("unanswered_tool_call", Some("t1")),
        ]
    );
    assert_eq!(t.outcome.status, Status::Unknown);
}

#[test]
fn an_exported_chat_without_session_id_takes_it_from_result_metadata() {
    // SYNTHETIC, in the shape "Chat: Export Chat..." writes (no sessionId, no timestamps;
    // the session id only in each result's metadata) and an ask-mode answer.
    let dir = tempfile::tempdir().expect("tempdir");
    let export = json!({
        "requesterUsername": "dev", "responderUsername": "GitHub Copilot", "initialLocation": "panel",
        "requests": [{
            "message": {"text": "Write a snake_case type", "parts": []}, "variableData": {"variables": []},
            "response": [{"value": "```ts\ntype A = 1;\n```", "isTrusted": {"enabledCommands": []}}],
            "result": {"timings": {"firstProgress": 1168, "totalElapsed": 14552},
                       "metadata": {"responseId": "r-1", "sessionId": "279a", "agentId": "github.copilot.default"}},
            "followups": [], "isCanceled": false, "contentReferences": []
        }]
    });
    let c = read(&[write(dir.path(), "chat.json", &serde_json::to_string_pretty(&export).expect("json"))]);
    let r = &c.reports[0];
    assert_eq!((r.format.as_deref(), r.steps, r.tool_calls), (Some("copilot-chat"), 2, 0));
    let t = &c.trajectories[0];
    assert!(t.gaps.is_empty(), "{:?}", t.gaps);
    assert_eq!((t.session_id.as_deref(), t.agent.model.as_deref()), (Some("279a"), None));
    assert_eq!(t.steps[1].content.as_deref(), Some(&json!("```ts\ntype A = 1;\n```")));
    assert_eq!(t.steps[1].extra["result"]["metadata"]["agentId"], json!("github.copilot.default"));
    assert_eq!(t.extra["requesterUsername"], json!("dev"));
}
