//! Generic chat readers: ShareGPT on a real published file (tests/fixtures/real/chat, the
//! LLaMA-Factory glaive tool-call demo) and OpenAI / TRL messages on synthetic rows (no
//! real file with tool results could be copied; see tests/fixtures/real/chat/NOTICE.md).
//! Figures were computed independently with Python.

mod common;

use common::{assert_figures, counts, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Authorship, Role, Status, TaskKeySource, Verification};

const GLAIVE: &str = "llamafactory_glaive_toolcall_en_demo.json";

#[test]
fn the_real_sharegpt_file_has_its_exact_figures() {
    let c = read(&[real("chat")]);
    assert_eq!(c.reports.len(), 1);
    // 300 rows, 35 byte-identical repeats; the 265 distinct rows hold 1690 turns and 193
    // function_call turns, each answered by the observation right after it.
    assert_figures(report(&c, GLAIVE), GLAIVE, "sharegpt", (300, 265, 0, 1690, 193, 35, 0), &[], &[]);
}

#[test]
fn function_calls_link_to_the_observation_after_them() {
    let c = read(&[real("chat")]);
    let t = from_file(&c, GLAIVE).into_iter().find(|t| t.provenance.document_index == Some(3)).expect("row 3");
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    use Role::*;
    assert_eq!(
        roles,
        [User, Assistant, Tool, Assistant, User, Assistant, Tool, Assistant, User, Assistant, Tool, Assistant]
    );
    let call = &t.steps[1].tool_calls[0];
    assert_eq!((call.name.as_str(), call.id.as_deref()), ("calculate_area", Some("sharegpt-call-1-0")));
    assert_eq!(call.arguments, json!({"shape": "rectangle", "dimensions": [5, 3]}));
    assert!(!call.text_embedded);
    assert_eq!(t.steps[1].extra["from"], json!("function_call"));
    let res = &t.steps[2].tool_results[0];
    assert_eq!(res.call_id.as_deref(), Some("sharegpt-call-1-0"));
    assert_eq!(res.content.as_deref(), Some(&json!("{\"area\": 15}")));
    assert_eq!(t.steps[2].extra["from"], json!("observation"));
    let tools: Vec<&str> = t.tools.iter().flatten().filter_map(|v| v["name"].as_str()).collect();
    assert_eq!(tools, ["calculate_area", "calculate_discount"]);
    let instruction = "I need to calculate the area of a rectangle. The length is 5 units and the breadth is 3 units.";
    assert_eq!(t.task.instruction.as_deref(), Some(instruction));
    assert_eq!(t.task.key, trajkit_model::canonical::instruction_task_key(instruction, Some("sharegpt")));
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Unknown, Verification::Unverified));
    // An empty tools list is not a tool set: it stays in extra as the source wrote it.
    let t1 = from_file(&c, GLAIVE).into_iter().find(|t| t.provenance.document_index == Some(1)).expect("row 1");
    assert_eq!((t1.tools.is_none(), &t1.extra["tools"]), (true, &json!("[]")));
    // Row 6 repeats row 4 byte for byte: loaded once.
    assert!(from_file(&c, GLAIVE).iter().all(|t| t.provenance.document_index != Some(6)));
}

#[test]
fn harness_files_with_messages_keep_their_specific_readers() {
    let c = read(&[real("swe_gym_openhands"), real("swe_smith")]);
    for r in &c.reports {
        let f = r.format.as_deref();
        assert!(f != Some("openai-messages") && f != Some("sharegpt"), "{}: {f:?}", r.path);
    }
}

// -------------------------------------------------------------------------------------
// Synthetic cases (made up, following the OpenAI chat / fine-tuning row shape exactly).
// -------------------------------------------------------------------------------------

fn read_text(name: &str, text: &str) -> common::Collected {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join(name);
    std::fs::write(&p, text).expect("write");
    read(&[p])
}

const OPENAI_ROWS: &str = r#"{"id": "row-1", "messages": [{"role": "developer", "content": "Use tools."}, {"role": "user", "content": "Weather in Paris and Rome?"}, {"role": "assistant", "content": null, "reasoning_content": "Two cities, two calls.", "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}, {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]}, {"role": "tool", "tool_call_id": "call_b", "content": "18C"}, {"role": "tool", "tool_call_id": "call_a", "content": "21C"}, {"role": "assistant", "content": "Paris 21C, Rome 18C."}, {"role": "user", "content": "Thanks"}], "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]}
{"messages": [{"role": "user", "content": "Run it"}, {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{not json"}}]}, {"role": "tool", "tool_call_id": "zz", "content": "?"}], "reward": 0.5}
{"messages": [{"role": "narrator", "content": "x"}]}
{"messages": 
"#;

#[test]
fn synthetic_openai_rows_link_by_tool_call_id() {
    let c = read_text("chat.jsonl", OPENAI_ROWS);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("openai-messages"));
    let got = (r.records, r.trajectories, r.steps, r.tool_calls, r.rejected);
    assert_eq!(got, (4, 2, 10, 3, 2));
    assert_eq!(r.reasons, counts(&[("invalid_json", 1), ("invalid_value", 1)]));
    assert_eq!(
        r.gaps,
        counts(&[("invalid_tool_arguments", 1), ("result_without_call", 1), ("unanswered_tool_call", 1)])
    );
    let t = &c.trajectories[0];
    assert_eq!((t.steps[0].role, &t.steps[0].extra["role"]), (Role::System, &json!("developer")));
    assert_eq!(t.steps[2].reasoning.as_deref(), Some("Two cities, two calls."));
    let ids: Vec<_> = t.steps[2].tool_calls.iter().map(|c| c.id.as_deref()).collect();
    assert_eq!(ids, [Some("call_a"), Some("call_b")]);
    assert_eq!(t.steps[3].tool_results[0].call_id.as_deref(), Some("call_b"));
    assert_eq!(t.steps[4].tool_results[0].call_id.as_deref(), Some("call_a"));
    assert_eq!((t.steps[6].role, t.steps[6].authorship), (Role::User, Authorship::Declared));
    assert_eq!((t.task.key.as_str(), t.task.key_source), ("openai-messages/row-1", TaskKeySource::Explicit));
    assert_eq!(t.tools.as_ref().map(Vec::len), Some(1));
    let t = &c.trajectories[1];
    assert!(t.steps[1].tool_calls[0].arguments_invalid);
    assert_eq!(t.steps[1].tool_calls[0].arguments, json!("{not json"));
    assert_eq!((t.outcome.reward, t.outcome.verification), (Some(0.5), Verification::SourceReported));
    assert_eq!(t.outcome.status, Status::Unknown);
}

#[test]
fn synthetic_sharegpt_rows_with_system_and_unparsed_calls() {
    let rows = [
        json!({"system": "Be brief.", "conversations": [
            {"from": "human", "value": "hi"},
            {"from": "function_call", "value": "not a json call"},
            {"from": "observation", "value": "?"},
            {"from": "gpt", "value": "ok"}]}),
        json!({"conversations": [{"from": "narrator", "value": "x"}]}),
    ];
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    let c = read_text("sg.jsonl", &text);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("sharegpt"));
    assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (2, 1, 5, 0, 1));
    assert_eq!(r.reasons, counts(&[("invalid_value", 1)]));
    assert_eq!(r.gaps, counts(&[("result_without_call", 1)]));
    let t = &c.trajectories[0];
    assert_eq!(t.steps[0].content.as_deref(), Some(&json!("Be brief.")));
    assert_eq!((t.steps[2].role, t.steps[2].content.as_deref()), (Role::Assistant, Some(&json!("not a json call"))));
}
