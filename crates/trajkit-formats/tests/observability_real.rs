//! Observability trace exports (MLflow, Langfuse, LangSmith) on the fixtures in
//! tests/fixtures/real/{mlflow,langfuse,langsmith}.
//!
//! Langfuse files and the two LangSmith `langsmith_*_wrap_openai_*` files are the producers'
//! own published test data, unmodified. No published MLflow trace export and no published
//! LangSmith run tree with tools and nested agents was found under a permissive license:
//! `mlflow/*.trace.json` and `langsmith/support_agent_with_policy_subagent.run_tree.json`
//! were built by hand following the producers' published schemas (MLflow `Trace.to_json()`
//! v3 and v2, LangSmith `Run` with `child_runs`); their NOTICE.md files say so.
//!
//! The figures were computed independently with a Python script that walks the raw JSON
//! (span kinds, leaf model calls, first-call input messages, tool spans, nested agents).

mod common;

use common::{assert_figures, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Role, Status, TaskKeySource, Verification};

type Row = (&'static str, &'static str, u64, u64, u64, u64, u64, u64, &'static [(&'static str, u64)]);

/// family, file, records, trajectories, subagents, steps, tool_calls, rejected, gaps.
const FIGURES: &[Row] = &[
    ("langfuse", "claude-agent-2025-12-22.trace.json", 1, 1, 0, 7, 2, 0, &[]),
    ("langfuse", "google-adk-2025-08-28.trace.json", 1, 1, 0, 5, 1, 0, &[]),
    ("langfuse", "koog-2025-08-26.trace.json", 1, 1, 0, 4, 0, 0, &[]),
    // The Web-Search tool ran as a plain SPAN observation, not a TOOL: its call stays unanswered.
    ("langfuse", "langgraph-python-2025-08-22.trace.json", 1, 1, 0, 4, 1, 0, &[("unanswered_tool_call", 1)]),
    ("langfuse", "microsoft-agent-2025-12-17.trace.json", 1, 1, 0, 4, 1, 0, &[]),
    ("langfuse", "openai-agents-2025-09-30.trace.json", 1, 1, 0, 4, 1, 0, &[]),
    // pydantic-ai's `final_result` output tool is never executed as a span.
    ("langfuse", "pydantic-ai-tools-2025-12-04.trace.json", 1, 1, 0, 9, 4, 0, &[("unanswered_tool_call", 1)]),
    ("langfuse", "vercel-aisdk-2025-11-17.trace.json", 1, 1, 0, 3, 1, 0, &[]),
    ("langsmith", "langsmith_js_wrap_openai_default.json", 1, 1, 0, 2, 0, 0, &[]),
    ("langsmith", "langsmith_py_wrap_openai_reasoning.json", 1, 1, 0, 2, 0, 0, &[]),
    ("langsmith", "support_agent_with_policy_subagent.run_tree.json", 1, 1, 1, 6, 2, 0, &[]),
    ("mlflow", "calculator_chain.v2.trace.json", 1, 1, 0, 3, 1, 0, &[]),
    ("mlflow", "travel_agent_with_research_subagent.v3.trace.json", 1, 1, 1, 6, 2, 0, &[]),
];

#[test]
fn every_observability_fixture_has_its_exact_figures() {
    let c = read(&[real("langfuse"), real("langsmith"), real("mlflow")]);
    assert_eq!(c.reports.len(), FIGURES.len(), "one report per fixture file");
    for &(family, name, records, trajectories, subagents, steps, tool_calls, rejected, gaps) in FIGURES {
        let want = (records, trajectories, subagents, steps, tool_calls, 0, rejected);
        assert_figures(report(&c, name), name, family, want, &[], gaps);
    }
}

#[test]
fn langfuse_tool_observations_answer_the_model_calls_by_id() {
    let c = read(&[real("langfuse/claude-agent-2025-12-22.trace.json")]);
    let t = from_file(&c, "claude-agent")[0];
    assert_eq!(t.id, "langfuse-097f1d8982fa909b8cffb14a166ec272");
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    use Role::*;
    assert_eq!(roles, [User, Assistant, Assistant, Assistant, Tool, Tool, Assistant]);
    // Two calls of the same tool: each tool span is linked by its arguments, not its position.
    let call = &t.steps[2].tool_calls[0];
    assert_eq!(call.id.as_deref(), Some("toolu_01TKoqQLvY2UWuC49qnD48y7"));
    assert_eq!((call.name.as_str(), call.arguments.value()), ("mcp__weather__get_weather", &json!({"city": "Berlin"})));
    let result = &t.steps[4].tool_results[0];
    assert_eq!(result.call_id.as_deref(), Some("toolu_01TKoqQLvY2UWuC49qnD48y7"));
    assert_eq!(
        result.content.as_deref(),
        Some(&json!({"content": [{"type": "text", "text": "Weather in Berlin: Cloudy, 59°F"}]}))
    );
    assert_eq!(t.steps[5].tool_results[0].call_id.as_deref(), Some("toolu_01NtVat4vJLFfVd5TqdLHcA7"));
    assert_eq!(t.agent.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    let m = t.steps[1].metrics.as_ref().expect("usage");
    assert_eq!((m.prompt_tokens, m.completion_tokens), (Some(19), Some(29)));
    // Numeric scores are reward components; no boolean success verdict, so status stays unknown.
    assert_eq!(t.outcome.status, Status::Unknown);
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    assert_eq!(t.outcome.reward, None, "three scores: no single reward");
    assert_eq!(t.outcome.reward_components.get("correctness"), Some(&0.0));
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert_eq!(t.task.instruction.as_deref(), Some("What's the weather like in Berlin and New York?"));
    // Lossless: the observation itself stays with its step, the trace with the record.
    assert_eq!(t.steps[4].extra["span"]["type"], json!("TOOL"));
    assert!(t.extra["trace"]["scores"].as_array().is_some_and(|s| s.len() == 3));
}

#[test]
fn langfuse_wrapper_agents_and_nested_tools_stay_one_trajectory() {
    // google-adk: CHAIN > AGENT > GENERATION > TOOL; the only agent is the run itself.
    let c = read(&[real("langfuse/google-adk-2025-08-28.trace.json")]);
    let t = from_file(&c, "google-adk")[0];
    assert!(t.subagents.is_empty());
    assert_eq!(t.session_id.as_deref(), Some("demo-session"));
    let call = &t.steps[2].tool_calls[0];
    assert_eq!(
        (call.name.as_str(), call.id.as_deref()),
        ("say_hello", Some("adk-8bd8dc65-717d-4102-858b-3a1dd6b75a00"))
    );
    assert_eq!(t.steps[3].tool_results[0].call_id, call.id);
    assert_eq!(t.steps[0].role, Role::System, "Gemini system_instruction is the first step");
}

#[test]
fn langfuse_tool_definitions_in_the_prompt_become_tools() {
    let c = read(&[real("langfuse/langgraph-python-2025-08-22.trace.json")]);
    let t = from_file(&c, "langgraph")[0];
    let tools = t.tools.as_ref().expect("tools");
    assert_eq!(tools[0]["function"]["name"], json!("Web-Search"));
    assert!(t.steps.iter().all(|s| s.role != Role::Tool));
}

#[test]
fn mlflow_agent_as_tool_is_a_subagent_linked_to_its_call() {
    let c = read(&[real("mlflow/travel_agent_with_research_subagent.v3.trace.json")]);
    let t = from_file(&c, "travel_agent")[0];
    assert_eq!(t.id, "mlflow-tr-7f3b2c1d9e8a4b6c8d0e1f2a3b4c5d6e");
    assert_eq!(t.provenance.format_version.as_deref(), Some("mlflow-trace-v3"));
    assert_eq!(t.session_id.as_deref(), Some("session-42"));
    assert_eq!(t.agent.name.as_deref(), Some("travel_agent"));
    assert_eq!(t.agent.model.as_deref(), Some("gpt-4o"));
    let calls: Vec<_> = t.steps[2].tool_calls.iter().map(|c| c.id.as_deref()).collect();
    assert_eq!(calls, [Some("call_w1"), Some("call_r1")]);
    assert_eq!(t.steps[3].tool_results[0].content.as_deref(), Some(&json!({"forecast": "rain", "high_c": 14})));
    let sub = &t.subagents[0];
    assert_eq!((sub.spawned_by_step, sub.spawned_by_tool_call.as_deref()), (Some(4), Some("call_r1")));
    assert_eq!(t.steps[4].tool_results[0].subagent_refs, std::slice::from_ref(&sub.trajectory.id));
    let s = &sub.trajectory;
    assert_eq!(s.agent.name.as_deref(), Some("research_agent"));
    assert_eq!(s.agent.model.as_deref(), Some("gpt-4o-mini"));
    assert_eq!(s.steps.len(), 5);
    assert_eq!(s.steps[3].tool_results[0].call_id.as_deref(), Some("call_s1"));
    // A boolean LLM-judge `correctness` verdict states success; the expectation is no verdict.
    assert_eq!(t.outcome.status, Status::Success);
    assert_eq!(t.outcome.reward, Some(1.0));
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    let m = t.metrics.as_ref().expect("trace token usage");
    assert_eq!((m.prompt_tokens, m.completion_tokens), (Some(479), Some(112)));
    assert_eq!(t.extra["info"]["assessments"][1]["assessment_name"], json!("expected_facts"));
}

#[test]
fn mlflow_v2_tool_span_without_a_model_call_carries_its_own_call() {
    let c = read(&[real("mlflow/calculator_chain.v2.trace.json")]);
    let t = from_file(&c, "calculator_chain")[0];
    assert_eq!(t.id, "mlflow-b1c2d3e4f5a6478990a1b2c3d4e5f601");
    let step = &t.steps[0];
    assert_eq!(step.role, Role::Tool);
    assert_eq!(step.tool_calls[0].id.as_deref(), Some("0x000000000000000c"), "the span id is the call id");
    assert_eq!(step.tool_calls[0].arguments, json!({"a": 17, "b": 23}));
    assert_eq!(step.tool_results[0].call_id.as_deref(), Some("0x000000000000000c"));
    assert_eq!(t.steps[1].content.as_deref(), Some(&json!("What is 17 * 23? The calculator returned 391.")));
    assert_eq!(t.steps[2].model.as_deref(), Some("gpt-3.5-turbo-0125"));
    assert_eq!(t.outcome.verification, Verification::Unverified);
}

#[test]
fn langsmith_run_tree_tool_runs_link_by_tool_call_id_and_nest_the_subagent() {
    let c = read(&[real("langsmith/support_agent_with_policy_subagent.run_tree.json")]);
    let t = from_file(&c, "support_agent")[0];
    assert_eq!(t.id, "langsmith-1ef6a2b0-5c3d-6e7f-8a9b-000000000001");
    assert_eq!(t.session_id.as_deref(), Some("thread-5521"));
    assert_eq!(t.steps[3].tool_results[0].call_id.as_deref(), Some("call_lo1"));
    assert_eq!(
        t.steps[3].tool_results[0].content,
        Some(json!("{\"order_id\": \"8812\", \"status\": \"delivered\", \"damaged\": true}")).map(Into::into)
    );
    let sub = &t.subagents[0];
    assert_eq!((sub.spawned_by_step, sub.spawned_by_tool_call.as_deref()), (Some(4), Some("call_pe1")));
    assert_eq!(sub.trajectory.agent.name.as_deref(), Some("policy_agent"));
    assert_eq!(sub.trajectory.steps[2].tool_calls[0].name, "search_policies");
    // feedback_stats averages are reported figures: a reward, but no success verdict.
    assert_eq!((t.outcome.reward, t.outcome.status), (Some(1.0), Status::Unknown));
    assert_eq!(t.outcome.verification, Verification::SourceReported);
    let m = t.metrics.as_ref().expect("root totals");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cost_usd), (Some(557), Some(124), Some(0.00315)));
}

#[test]
fn langsmith_ingestion_batch_merges_patch_into_post() {
    let c = read(&[real("langsmith/langsmith_js_wrap_openai_default.json")]);
    let t = from_file(&c, "wrap_openai_default")[0];
    assert_eq!(t.id, "langsmith-dc34609e-3eeb-459d-bc2a-6fedb01d2e6e");
    assert_eq!(t.steps[0].content.as_deref(), Some(&json!("howdy")));
    assert_eq!(t.steps[1].content.as_deref(), Some(&json!("Howdy! How can I assist you today?")));
    assert_eq!(t.agent.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    let m = t.steps[1].metrics.as_ref().expect("usage_metadata");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(9), Some(9), Some(0)));
    assert_eq!(t.steps[1].extra["span"]["end_time"], json!(1728803138285u64), "patch fields kept");
}

mod synthetic {
    //! Rules no fixture shows: small documents written here.
    use super::common::read;

    fn file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn langfuse_observations_of_the_wrong_type_are_a_schema_violation() {
        let (_d, p) = file("t.json", r#"{"id":"x","observations":{"parentObservationId":null,"traceId":"x"}}"#);
        let c = read(&[p]);
        assert_eq!(c.reports[0].format.as_deref(), Some("langfuse"));
        assert_eq!(c.rejections[0].reason.as_str(), "schema_violation");
        assert_eq!(c.rejections[0].problems[0].json_path, "$.observations");
    }

    #[test]
    fn a_tool_span_matching_two_calls_by_name_and_neither_by_arguments_takes_its_own_id() {
        let doc = r#"{"id":"t1","scores":[{"name":"success","value":1,"dataType":"BOOLEAN","source":"API"}],"observations":[
          {"id":"g","traceId":"t1","type":"GENERATION","parentObservationId":null,"startTime":"2025-01-01T00:00:00Z",
           "input":[{"role":"user","content":"go"}],
           "output":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},
                                                     {"id":"b","type":"function","function":{"name":"f","arguments":"{\"x\":2}"}}]}},
          {"id":"s","traceId":"t1","type":"TOOL","name":"f","parentObservationId":null,"startTime":"2025-01-01T00:00:01Z","input":{"x":3},"output":"r"}]}"#;
        let (_d, p) = file("t.json", doc);
        let c = read(&[p]);
        let t = &c.trajectories[0];
        assert_eq!(t.steps[2].tool_calls[0].id.as_deref(), Some("s"));
        assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("s"));
        let kinds: Vec<&str> = t.gaps.iter().map(|g| g.kind.as_str()).collect();
        assert_eq!(kinds, ["unanswered_tool_call", "unanswered_tool_call"]);
        // A BOOLEAN score named `success` from the API: a reported success.
        assert_eq!(t.outcome.status, trajkit_model::Status::Success);
        assert_eq!(t.outcome.verification, trajkit_model::Verification::SourceReported);
    }

    #[test]
    fn spans_on_a_parent_cycle_are_still_walked() {
        let doc = r#"[{"id":"a","name":"x","run_type":"chain","parent_run_id":"b","dotted_order":"1"},
          {"id":"b","name":"llm","run_type":"llm","parent_run_id":"a","dotted_order":"2","inputs":{"messages":[{"role":"user","content":"q"}]},"outputs":"ans"}]"#;
        let (_d, p) = file("cycle.json", doc);
        let c = read(&[p]);
        let t = &c.trajectories[0];
        assert_eq!(t.steps.len(), 2, "the model call inside the cycle is a step");
        assert_eq!(t.steps[1].content.as_deref(), Some(&serde_json::json!("ans")));
    }

    /// Synthetic (review defect): a span that makes no step is kept in `extra.spans` with
    /// its id, under the key the source used (MLflow `span_id`, Langfuse / LangSmith `id`).
    #[test]
    fn spans_kept_in_extra_keep_their_ids() {
        let a = |t: &str| format!(r#"{{"mlflow.spanType":"\"{t}\""}}"#);
        let mlflow = format!(
            r#"{{"info":{{"trace_id":"t1"}},"data":{{"spans":[
          {{"span_id":"root","parent_span_id":null,"name":"agent","start_time_unix_nano":0,"attributes":{}}},
          {{"span_id":"L1","parent_span_id":"root","name":"llm","start_time_unix_nano":1,"attributes":{{"mlflow.spanType":"\"CHAT_MODEL\"",
            "mlflow.spanInputs":"{{\"messages\":[{{\"role\":\"user\",\"content\":\"hi\"}}]}}","mlflow.spanOutputs":"\"ok\""}}}},
          {{"span_id":"RET1","parent_span_id":"root","name":"retr","start_time_unix_nano":2,"attributes":{}}}]}}}}"#,
            a("AGENT"),
            a("RETRIEVER")
        );
        let langfuse = r#"{"id":"t2","observations":[
          {"id":"w","traceId":"t2","type":"SPAN","name":"wrap","parentObservationId":null,"startTime":"2025-01-01T00:00:00Z"},
          {"id":"g","traceId":"t2","type":"GENERATION","parentObservationId":"w","startTime":"2025-01-01T00:00:01Z",
           "input":[{"role":"user","content":"go"}],"output":"done"}]}"#;
        let langsmith = r#"[{"id":"c","name":"chain","run_type":"chain","dotted_order":"1"},
          {"id":"l","name":"llm","run_type":"llm","parent_run_id":"c","dotted_order":"1.2","inputs":{"messages":[{"role":"user","content":"q"}]},"outputs":"ans"}]"#;
        for (name, doc, key, ids) in [
            ("m.json", mlflow.as_str(), "span_id", &["root", "RET1"][..]),
            ("f.json", langfuse, "id", &["w"][..]),
            ("s.json", langsmith, "id", &["c"][..]),
        ] {
            let (_d, p) = file(name, doc);
            let c = read(&[p]);
            let t = &c.trajectories[0];
            let kept: Vec<&str> = t.extra["spans"]
                .as_array()
                .map(|a| a.iter().filter_map(|s| s[key].as_str()).collect())
                .unwrap_or_default();
            assert_eq!(kept, ids, "{name}");
        }
    }

    /// Synthetic (review defect): a tool span that states a call id the model never emitted
    /// is not linked by name to the model's call with another id; its result keeps its id.
    #[test]
    fn a_tool_span_stating_another_call_id_is_not_linked_by_name() {
        let doc = r#"{"info":{"trace_id":"t1"},"data":{"spans":[
          {"span_id":"L1","parent_span_id":null,"name":"llm","start_time_unix_nano":1,"attributes":{"mlflow.spanType":"\"CHAT_MODEL\"",
            "mlflow.spanInputs":"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
            "mlflow.spanOutputs":"{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"search\",\"arguments\":\"{\\\"q\\\":\\\"a\\\"}\"}}]}}]}"}},
          {"span_id":"T1","parent_span_id":null,"name":"search","start_time_unix_nano":2,"attributes":{"mlflow.spanType":"\"TOOL\"",
            "mlflow.spanInputs":"{\"q\":\"b\"}","mlflow.spanOutputs":"\"res-b\"","gen_ai.tool.call.id":"\"call_X\""}}]}}"#;
        let (_d, p) = file("m.json", doc);
        let c = read(&[p]);
        let t = &c.trajectories[0];
        assert_eq!(t.steps[1].tool_calls[0].id.as_deref(), Some("call_1"));
        assert!(t.steps[2].tool_calls.is_empty(), "no call is made up for the span");
        assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("call_X"));
        let kinds: Vec<&str> = t.gaps.iter().map(|g| g.kind.as_str()).collect();
        assert_eq!(kinds, ["result_without_call", "unanswered_tool_call"]);
    }

    #[test]
    fn an_mlflow_trace_without_spans_is_rejected_and_invalid_json_named() {
        let (_d, p) = file("m.json", r#"{"info":{"trace_id":"tr-1"},"data":{"spans":{"mlflow.spanType":"\"LLM\""}}}"#);
        let c = read(&[p]);
        assert_eq!(c.rejections[0].problems[0].json_path, "$.data.spans");
        let (_d, p) = file("l.json", r#"{"run_type":"llm","dotted_order":"x","id":"#);
        let c = read(&[p]);
        assert_eq!(c.reports[0].format.as_deref(), Some("langsmith"));
        assert_eq!(c.rejections[0].reason.as_str(), "invalid_json");
    }
}
