//! Cline task directories, built at test time. Synthetic: no Cline or Roo Code task
//! directory published under a license was found, so no real one is in the repository. The
//! native-tool task below is written fresh to reproduce the protocol facts real Cline 3.51
//! exports show (docs/formats/cline.md): `tool_use` calls answered by user text blocks
//! `[tool for 'x'] Result:`, four parallel calls answered by one result and three
//! `Tool [tool] was not executed ...` blocks, thinking blocks with signatures, a
//! `[TASK RESUMPTION]` message, `ui_messages.json` with `api_req_started` events carrying
//! tokens, cache and cost, `task_metadata.json` with `environment_history`, and
//! `attempt_completion` at the end. Its figures are worked out by hand below.

mod common;

use std::path::{Path, PathBuf};

use common::{counts, read, report};
use serde_json::{json, Value};
use trajkit_model::{Authorship, Role, Status, TaskKeySource};

/// The synthetic task's id (its directory name, as Cline names task directories).
const TASK_ID: &str = "1769000000000";

/// The text Cline writes for each call it skipped because one tool already ran.
const NOT_EXECUTED: &str = "Tool [read_file] was not executed because a tool has already been used in this \
message. Only one tool may be used per message. You must assess the first tool's result before proceeding to \
use the next tool.";

/// Environment details the extension appends to every user message.
const ENV: &str =
    "<environment_details>\n# Current Working Directory (/home/dev/srv) Files\nsrc/\n</environment_details>";

/// A `read_file` call of the first assistant message.
fn read_call(id: &str, path: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "read_file", "input": {"path": path}})
}

/// Cline's per-message metrics: `prompt` excludes the cache traffic `cached` counts.
fn tokens(prompt: u64, completion: u64, cached: u64, cost: f64) -> Value {
    json!({"tokens": {"prompt": prompt, "completion": completion, "cached": cached}, "cost": cost})
}

/// An `api_req_started` UI event: its `text` is a JSON document of the request's usage.
fn api_req(ts: u64, tokens_in: u64, out: u64, writes: u64, reads: u64, cost: f64) -> Value {
    let usage =
        json!({"tokensIn": tokens_in, "tokensOut": out, "cacheWrites": writes, "cacheReads": reads, "cost": cost});
    json!({"ts": ts, "type": "say", "say": "api_req_started", "text": usage.to_string()})
}

/// The conversation: 7 messages, read as 9 steps (the answers to calls are a tool step and
/// a harness-written user step each) with 6 calls and 5 results.
fn conversation() -> Value {
    let model = json!({"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"});
    json!([
        {"role": "user", "ts": 1_769_000_000_000u64, "content": [
            {"type": "text", "text": "<task>\nAdd a /health route to the server\n</task>"},
            {"type": "text", "text": ENV}]},
        {"role": "assistant", "ts": 1_769_000_010_000u64, "modelInfo": model, "metrics": tokens(12, 300, 5000, 0.03125),
         "content": [
            {"type": "thinking", "thinking": "Read the router and its tests first.", "signature": "c2lnLTE="},
            {"type": "text", "text": "I will read the four files."},
            read_call("toolu_s1", "src/main.rs"), read_call("toolu_s2", "src/routes.rs"),
            read_call("toolu_s3", "src/lib.rs"), read_call("toolu_s4", "tests/api.rs")]},
        {"role": "user", "ts": 1_769_000_020_000u64, "content": [
            {"type": "text", "text": "[read_file for 'src/main.rs'] Result:\nfn main() { srv::run(); }"},
            {"type": "text", "text": NOT_EXECUTED}, {"type": "text", "text": NOT_EXECUTED},
            {"type": "text", "text": NOT_EXECUTED}, {"type": "text", "text": ENV}]},
        {"role": "assistant", "ts": 1_769_000_030_000u64, "modelInfo": model, "metrics": tokens(40, 200, 5600, 0.015625),
         "content": [
            {"type": "thinking", "thinking": "main.rs only calls run; add the route there.", "signature": "c2lnLTI="},
            {"type": "tool_use", "id": "toolu_s5", "name": "replace_in_file",
             "input": {"path": "src/main.rs", "diff": "------- SEARCH\nfn main\n=======\nfn main\n+++++++ REPLACE"}}]},
        {"role": "user", "ts": 1_769_000_040_000u64, "content": [
            {"type": "text", "text": "[replace_in_file for 'src/main.rs'] Result:\nThe content was successfully saved to src/main.rs."},
            {"type": "text", "text": ENV}]},
        {"role": "user", "ts": 1_769_000_080_000u64, "content": [
            {"type": "text", "text": "[TASK RESUMPTION] This task was interrupted 1 minute ago. The current working directory is /home/dev/srv."},
            {"type": "text", "text": ENV}]},
        {"role": "assistant", "ts": 1_769_000_090_000u64, "modelInfo": model, "metrics": tokens(30, 80, 6100, 0.0078125),
         "content": [
            {"type": "tool_use", "id": "toolu_s6", "name": "attempt_completion", "input": {"result": "Added GET /health."}}]}
    ])
}

/// The UI log: 8 events, 3 API requests whose `cacheWrites + cacheReads` equal the
/// messages' `cached` (5000 + 0, 600 + 5000, 1100 + 5000), over 90.5 seconds.
fn ui_messages() -> Value {
    json!([
        {"ts": 1_769_000_000_000u64, "type": "say", "say": "task", "text": "Add a /health route to the server"},
        api_req(1_769_000_001_000, 12, 300, 5000, 0, 0.03125),
        {"ts": 1_769_000_010_000u64, "type": "ask", "ask": "tool", "text": "{\"tool\":\"readFile\",\"path\":\"src/main.rs\"}"},
        api_req(1_769_000_021_000, 40, 200, 600, 5000, 0.015625),
        {"ts": 1_769_000_030_000u64, "type": "ask", "ask": "tool", "text": "{\"tool\":\"editedExistingFile\",\"path\":\"src/main.rs\"}"},
        {"ts": 1_769_000_080_000u64, "type": "ask", "ask": "resume_task"},
        api_req(1_769_000_081_000, 30, 80, 1100, 5000, 0.0078125),
        {"ts": 1_769_000_090_500u64, "type": "say", "say": "completion_result", "text": "Added GET /health."}
    ])
}

/// Task metadata: one file in context, the model used, and two environments (the extension
/// was updated from 3.50.2 to 3.51.0 during the task; the last one names the agent).
fn task_metadata() -> Value {
    let env = |ts: u64, version: &str| {
        json!({"ts": ts, "os_name": "linux", "os_version": "6.8.0", "os_arch": "x64",
               "host_name": "Visual Studio Code", "host_version": "1.104.0", "cline_version": version})
    };
    json!({
        "files_in_context": [{"path": "src/main.rs", "record_state": "active", "record_source": "read_tool",
                              "cline_read_date": 1_769_000_020_000u64, "cline_edit_date": 1_769_000_040_000u64}],
        "model_usage": [{"ts": 1_769_000_010_000u64, "model_id": "claude-sonnet-4-5", "model_provider_id": "anthropic", "mode": "act"}],
        "environment_history": [env(1_769_000_000_000, "3.50.2"), env(1_769_000_080_000, "3.51.0")]
    })
}

/// Writes the synthetic task directory under `root` and returns it.
fn task_dir(root: &Path) -> PathBuf {
    let dir = root.join(TASK_ID);
    std::fs::create_dir(&dir).expect("mkdir");
    for (name, v) in [
        ("api_conversation_history.json", conversation()),
        ("ui_messages.json", ui_messages()),
        ("task_metadata.json", task_metadata()),
    ] {
        std::fs::write(dir.join(name), v.to_string()).expect("write");
    }
    dir
}

/// Synthetic (see the module doc): the task directory is one trajectory with its exact
/// steps, calls, linked results, run tokens and cost from `ui_messages.json`, version from
/// `task_metadata.json`, and the side files reported as consumed.
#[test]
fn synthetic_native_task_directory_has_its_exact_figures() {
    let root = tempfile::tempdir().expect("tempdir");
    let c = read(&[task_dir(root.path())]);
    assert_eq!(c.reports.len(), 3, "three files in the task directory");
    let r = report(&c, "api_conversation_history.json");
    assert_eq!(r.format.as_deref(), Some("cline"));
    assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (1, 1, 9, 6, 0));
    assert_eq!(r.gaps, counts(&[]), "every call but attempt_completion answered");
    for side in ["ui_messages.json", "task_metadata.json"] {
        let s = report(&c, side);
        assert_eq!(s.records, 0, "{side}");
        assert!(s.part_of.as_deref().is_some_and(|p| p.ends_with("/api_conversation_history.json")), "{side}");
    }
    assert_eq!(c.trajectories.len(), 1);
    let t = &c.trajectories[0];
    let results: Vec<_> = t.steps.iter().flat_map(|s| &s.tool_results).collect();
    assert_eq!((results.len(), results.iter().filter(|r| r.call_id.is_some()).count()), (5, 5));
    assert_eq!(t.session_id.as_deref(), Some(TASK_ID));
    assert_eq!(
        (t.agent.name.as_deref(), t.agent.version.as_deref(), t.agent.model.as_deref()),
        (Some("cline"), Some("3.51.0"), Some("claude-sonnet-4-5"))
    );
    // Run: prompt = Σ (tokensIn + cacheWrites + cacheReads) = 5012 + 5640 + 6130; completion
    // = 300 + 200 + 80; cache reads 0 + 5000 + 5000; writes 5000 + 600 + 1100.
    let m = t.metrics.as_ref().expect("run metrics from ui_messages.json");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(16_782), Some(580), Some(10_000)));
    assert_eq!(m.extra["cache_write_tokens"], json!(6700));
    assert_eq!((m.cost_usd, m.duration_seconds), (Some(0.0546875), Some(90.5)));
    let ui = json!({"events": 8, "api_requests": 3, "first_ts": 1_769_000_000_000u64, "last_ts": 1_769_000_090_500u64});
    assert_eq!(t.extra["ui_messages"], ui);
    // Each step's prompt (tokens.prompt + tokens.cached) adds up to the UI's totals.
    let step_prompt: u64 = t.steps.iter().filter_map(|s| s.metrics.as_ref()?.prompt_tokens).sum();
    let step_completion: u64 = t.steps.iter().filter_map(|s| s.metrics.as_ref()?.completion_tokens).sum();
    assert_eq!((step_prompt, step_completion), (16_782, 580));
    assert_eq!(t.outcome.status, Status::Unknown, "a task directory records no verifier");
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert_eq!(t.task.instruction.as_deref(), Some("Add a /health route to the server"));
    assert_eq!(t.extra["task_metadata"], task_metadata(), "kept whole");
}

/// Synthetic (see the module doc): four parallel calls answered by one result and three
/// `was not executed` blocks link by name and order; thinking, authorship of harness text,
/// step metrics and the closing `attempt_completion`.
#[test]
fn synthetic_text_results_link_to_their_calls_by_name_and_order() {
    use Role::{Assistant as A, Tool as T, User as U};
    let root = tempfile::tempdir().expect("tempdir");
    let c = read(&[task_dir(root.path())]);
    let t = &c.trajectories[0];
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, [U, A, T, U, A, T, U, U, A]);
    let a = &t.steps[1];
    let ids: Vec<&str> = a.tool_calls.iter().filter_map(|c| c.id.as_deref()).collect();
    assert_eq!(ids, ["toolu_s1", "toolu_s2", "toolu_s3", "toolu_s4"]);
    assert!(a.tool_calls.iter().all(|c| c.name == "read_file" && !c.text_embedded));
    assert_eq!(a.tool_calls[0].arguments, json!({"path": "src/main.rs"}));
    assert_eq!(a.reasoning.as_deref(), Some("Read the router and its tests first."));
    assert_eq!(a.extra["thinking"], json!([{"signature": "c2lnLTE="}]), "one entry per thinking block");
    assert_eq!(a.content.as_deref(), Some(&json!("I will read the four files.")));
    let tool = &t.steps[2];
    let got: Vec<&str> = tool.tool_results.iter().filter_map(|r| r.call_id.as_deref()).collect();
    assert_eq!(got, ids);
    let text = |k: usize| tool.tool_results[k].content.as_deref().and_then(Value::as_str).unwrap_or_default();
    assert_eq!(text(0), "[read_file for 'src/main.rs'] Result:\nfn main() { srv::run(); }");
    assert!((1..4).all(|k| text(k) == NOT_EXECUTED));
    assert!(tool.tool_results.iter().all(|r| r.extra["tool"] == json!("read_file")));
    // The task (with its environment details) is the person's; environment details alone
    // and the task resumption are written by the extension.
    let authorship: Vec<Authorship> = t.steps.iter().filter(|s| s.role == U).map(|s| s.authorship).collect();
    assert_eq!(authorship, [Authorship::Declared, Authorship::Unknown, Authorship::Unknown, Authorship::Unknown]);
    let resumed = t.steps[7].content.as_deref().and_then(Value::as_str).unwrap_or_default();
    assert!(resumed.starts_with("[TASK RESUMPTION]"), "{resumed}");
    // Step metrics: tokens.prompt 12 + tokens.cached 5000; completion 300; cost.
    let m = a.metrics.as_ref().expect("metrics");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cost_usd), (Some(5012), Some(300), Some(0.03125)));
    assert_eq!((&m.extra["prompt"], &m.extra["cached"]), (&json!(12), &json!(5000)));
    assert_eq!(t.steps[5].tool_results[0].call_id.as_deref(), Some("toolu_s5"));
    // The last call ends the task and needs no result.
    let last = t.steps.last().expect("steps");
    assert_eq!(last.tool_calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["attempt_completion"]);
    assert!(t.gaps.is_empty(), "{:?}", t.gaps);
}

/// Synthetic (no published prompt-based Cline / Roo Code task was found): assistant text
/// with an XML-ish tool block, answered by a `[read_file for '...'] Result:` text block, in
/// the shape Cline's system prompt prescribes.
#[test]
fn synthetic_xml_text_calls_are_parsed_and_linked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let task = dir.path().join("1700000000000");
    std::fs::create_dir(&task).expect("mkdir");
    let history = json!([
        {"role": "user", "content": [{"type": "text", "text": "<task>\nSay hi in a.txt\n</task>"}], "ts": 1},
        {"role": "assistant", "content": [{"type": "text", "text": "<thinking>read first</thinking>\n<read_file>\n<path>a.txt</path>\n</read_file>"}]},
        {"role": "user", "content": [{"type": "text", "text": "[read_file for 'a.txt'] Result:"}, {"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "<attempt_completion>\n<result>done</result>\n</attempt_completion>"}]}
    ]);
    std::fs::write(task.join("api_conversation_history.json"), history.to_string()).expect("write");
    let c = read(std::slice::from_ref(&task));
    let t = &c.trajectories[0];
    assert_eq!(t.task.instruction.as_deref(), Some("Say hi in a.txt"));
    let call = &t.steps[1].tool_calls[0];
    assert_eq!(
        (call.name.as_str(), call.id.as_deref(), call.text_embedded),
        ("read_file", Some("text-call-1-0"), true)
    );
    assert_eq!(call.arguments, json!({"path": "a.txt"}));
    assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("text-call-1-0"));
    // The output block after a bare `Result:` header belongs to the result.
    let content =
        json!([{"type": "text", "text": "[read_file for 'a.txt'] Result:"}, {"type": "text", "text": "hello"}]);
    assert_eq!(t.steps[2].tool_results[0].content.as_deref(), Some(&content));
    assert_eq!(t.steps.len(), 4, "user, assistant, tool, assistant");
    assert!(t.gaps.is_empty(), "{:?}", t.gaps);
    assert_eq!(t.session_id.as_deref(), Some("1700000000000"));
    assert!(t.metrics.is_none(), "no ui_messages.json");
}
