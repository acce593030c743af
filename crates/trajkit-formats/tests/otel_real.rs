//! OpenTelemetry traces (OTLP/JSON) on the fixtures in tests/fixtures/real/otel.
//!
//! The four files at the top are agentpile 0.3.1's published test data: real OTLP/JSON
//! written by the official OTLP encoder from runs of Pydantic AI 2.58.0 (GenAI semantic
//! conventions, attribute-based capture) and of the OpenAI Agents SDK 0.24.0 with
//! OpenInference 2.5.3 (one trace over three JSON Lines). No published file was found for
//! Grafana Tempo's `batches` layout, base64 ids, the event-based GenAI capture or
//! OpenLLMetry's `gen_ai.prompt.N` attributes: the two files in `spec/` were written by
//! hand from the published specifications (NOTICE.md says so), and so is every case
//! built in a temporary directory below. The figures were checked by hand against the raw
//! spans (their kinds, parents, attributes).

mod common;

use std::io::Write;
use std::path::Path;

use common::{assert_figures, counts, from_file, read, read_with, real, report};
use serde_json::{json, Value};
use trajkit_formats::Options;
use trajkit_model::{Role, Status, Trajectory, Verification};

/// file, records, trajectories, subagents, steps, tool_calls, rejected, reasons, gaps.
type Row = (&'static str, u64, u64, u64, u64, u64, u64, &'static [(&'static str, u64)], &'static [(&'static str, u64)]);

/// The directory's first OTLP file reads the whole directory (its input set); the others
/// are reported `part_of` it.
const LEADS: &[Row] = &[
    // OpenAI Agents' handoff span names no call (`transfer_to_refunds` stays unanswered).
    ("openai_agents_0.24.0_oi_2.5.3.jsonl", 5, 5, 2, 26, 7, 0, &[], &[("unanswered_tool_call", 1)]),
    // A line cut short and a trace of HTTP spans only.
    ("openllmetry_prompt_attributes.jsonl", 4, 2, 0, 10, 2, 2, &[("invalid_json", 1), ("not_a_rollout", 1)], &[]),
];

const PARTS: &[(&str, &str)] = &[
    ("openai_agents_0.24.0_oi_2.5.3_as_tool.json", "openai_agents_0.24.0_oi_2.5.3.jsonl"),
    ("pydantic_ai_2.58.0.json", "openai_agents_0.24.0_oi_2.5.3.jsonl"),
    ("pydantic_ai_2.58.0_delegation.json", "openai_agents_0.24.0_oi_2.5.3.jsonl"),
    ("tempo_batches_event_capture.json", "openllmetry_prompt_attributes.jsonl"),
];

#[test]
fn every_otel_fixture_has_its_exact_figures() {
    let c = read(&[real("otel")]);
    assert_eq!(c.reports.len(), LEADS.len() + PARTS.len());
    for &(name, records, trajectories, subagents, steps, tool_calls, rejected, reasons, gaps) in LEADS {
        let want = (records, trajectories, subagents, steps, tool_calls, 0, rejected);
        assert_figures(report(&c, name), name, "otel", want, reasons, gaps);
    }
    for &(name, lead) in PARTS {
        let r = report(&c, name);
        assert!(r.part_of.as_deref().is_some_and(|p| p.ends_with(lead)), "{name}: {:?}", r.part_of);
        assert_eq!(r.records, 0, "{name}");
    }
    for t in &c.trajectories {
        assert_eq!(t.outcome.status, Status::Unknown, "{}", t.id);
        assert_eq!(t.outcome.verification, Verification::Unverified, "{}", t.id);
    }
}

fn by_id<'a>(ts: &'a [Trajectory], id: &str) -> &'a Trajectory {
    ts.iter().find(|t| t.id == id).unwrap_or_else(|| panic!("no trajectory {id}"))
}

/// (role, tool call ids, tool result call ids) per step.
fn shape(t: &Trajectory) -> Vec<(Role, Vec<String>, Vec<String>)> {
    t.steps
        .iter()
        .map(|s| {
            let calls = s.tool_calls.iter().map(|c| c.id.clone().unwrap_or_default()).collect();
            let results = s.tool_results.iter().map(|r| r.call_id.clone().unwrap_or_default()).collect();
            (s.role, calls, results)
        })
        .collect()
}

/// (prompt, completion) tokens of the assistant steps.
fn tokens(t: &Trajectory) -> Vec<(Option<u64>, Option<u64>)> {
    t.steps
        .iter()
        .filter(|s| s.role == Role::Assistant)
        .map(|s| s.metrics.as_ref().map(|m| (m.prompt_tokens, m.completion_tokens)).unwrap_or((None, None)))
        .collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn pydantic_ai_attribute_capture_links_tool_spans_to_calls_by_id() {
    let c = read(&[real("otel")]);
    let t = by_id(&c.trajectories, "otel-3a5605542c96b9179eb9de72cd6221ac");
    assert_eq!(t.agent.name.as_deref(), Some("weather_agent"));
    assert_eq!(t.agent.model.as_deref(), Some("fake-fn"));
    assert_eq!(t.session_id.as_deref(), Some("01a158ae-fb1e-7517-8ac0-b25085cdb98c"));
    assert_eq!(t.task.instruction.as_deref(), Some("What is the weather in Paris and what time is it?"));
    assert!(t.provenance.path.ends_with("pydantic_ai_2.58.0.json"));
    let (u, s, a, tl) = (Role::User, Role::System, Role::Assistant, Role::Tool);
    assert_eq!(
        shape(t),
        vec![
            (s, vec![], vec![]),
            (u, vec![], vec![]),
            (a, strs(&["call_weather_1", "call_time_1"]), vec![]),
            (tl, vec![], strs(&["call_weather_1"])),
            (tl, vec![], strs(&["call_time_1"])),
            (a, vec![], vec![]),
        ]
    );
    assert_eq!(t.steps[2].tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(t.steps[4].tool_results[0].content.as_deref(), Some(&json!({"zone": "UTC", "time": "12:00"})));
    assert_eq!(tokens(t), vec![(Some(61), Some(15)), (Some(71), Some(25))]);
    // startTimeUnixNano 1792489224994417000, endTimeUnixNano 1792489224999144000.
    assert_eq!(t.steps[2].timestamp.as_deref(), Some("2026-10-20T09:40:24.994417000Z"));
    let duration = t.steps[2].metrics.as_ref().and_then(|m| m.duration_seconds);
    assert_eq!(duration.map(|d| (d * 1e6).round()), Some(4727.0));
    let tools: Vec<&str> =
        t.tools.as_deref().unwrap_or_default().iter().filter_map(|d| d.get("name").and_then(Value::as_str)).collect();
    assert_eq!(tools, vec!["get_weather", "get_time"]);
    assert!(t.gaps.is_empty(), "{:?}", t.gaps);
    // The file's second trace is the second run.
    let second = by_id(&c.trajectories, "otel-1ec4c4c2e2ed5a25a75ce90b68ee7ab4");
    assert_eq!(second.steps.len(), 3);
    assert_eq!(tokens(second), vec![(Some(52), Some(2))]);
}

#[test]
fn an_agent_run_inside_a_tool_span_is_a_subagent_of_that_call() {
    let c = read(&[real("otel")]);
    let t = by_id(&c.trajectories, "otel-21253ccb6d5fd17dfe0320d272d7c220");
    assert_eq!((t.agent.name.as_deref(), t.agent.model.as_deref()), (Some("boss_agent"), Some("fake-boss")));
    assert_eq!(t.subagents.len(), 1);
    let sub = &t.subagents[0];
    assert_eq!((sub.spawned_by_step, sub.spawned_by_tool_call.as_deref()), (Some(3), Some("call_ask_1")));
    let st = &sub.trajectory;
    assert_eq!(st.id, "otel-21253ccb6d5fd17dfe0320d272d7c220/a04cb571be6e7a99");
    assert_eq!((st.agent.name.as_deref(), st.agent.model.as_deref()), (Some("helper_agent"), Some("fake-helper")));
    assert_eq!(tokens(st), vec![(Some(51), Some(1))]);
    assert_eq!(t.steps[3].tool_results[0].subagent_refs, vec![st.id.clone()]);
    assert_eq!(tokens(t), vec![(Some(54), Some(5)), (Some(55), Some(10))]);
    // The same shape from OpenInference (OpenAI Agents' agent as a tool).
    let oi = by_id(&c.trajectories, "otel-16aa8735b05683511a3155571e0be5c3");
    assert_eq!(oi.subagents.len(), 1);
    assert_eq!(oi.subagents[0].spawned_by_tool_call.as_deref(), Some("call_ask_1"));
    assert_eq!(oi.steps.len(), 5);
}

#[test]
fn openinference_spans_over_three_lines_make_one_trajectory() {
    let c = read(&[real("otel")]);
    let t = by_id(&c.trajectories, "otel-e5980d20f20f3640e0480e236894a795");
    assert!(t.provenance.path.ends_with("openai_agents_0.24.0_oi_2.5.3.jsonl"));
    assert_eq!(t.provenance.line, Some(3), "the root span is on line 3");
    assert_eq!(t.agent.model.as_deref(), Some("fake-model"));
    let (u, s, a, tl) = (Role::User, Role::System, Role::Assistant, Role::Tool);
    assert_eq!(
        shape(t),
        vec![
            (s, vec![], vec![]),
            (u, vec![], vec![]),
            (a, strs(&["call_lookup_1"]), vec![]),
            (tl, vec![], strs(&["call_lookup_1"])),
            (a, strs(&["call_handoff_1"]), vec![]),
            // The handoff span states no call id and its name is not the call's: its span id.
            (tl, strs(&["872998ccdabdcbd3"]), strs(&["872998ccdabdcbd3"])),
            (a, vec![], vec![]),
        ]
    );
    assert_eq!(t.steps[2].content.as_deref(), Some(&json!("Checking.")));
    assert_eq!(t.steps[3].tool_results[0].content.as_deref(), Some(&json!("order A1: shipped")));
    assert_eq!(t.steps[4].tool_calls[0].arguments, json!({}));
    assert_eq!(tokens(t), vec![(Some(30), Some(10)), (Some(60), Some(10)), (Some(30), Some(10))]);
    assert_eq!(t.steps[2].metrics.as_ref().and_then(|m| m.cached_tokens), Some(0));
    assert_eq!(t.tools.as_ref().map(Vec::len), Some(2));
}

/// Writes `lines` of the real JSON Lines file as separate files, in this order of names.
fn split_copy(dir: &Path, names: &[(&str, usize)]) {
    let text = std::fs::read_to_string(real("otel/openai_agents_0.24.0_oi_2.5.3.jsonl")).expect("fixture");
    let lines: Vec<&str> = text.lines().collect();
    for (name, line) in names {
        std::fs::write(dir.join(name), lines[*line]).expect("write");
    }
}

/// Everything of a trajectory but where it was read from.
fn content(t: &Trajectory) -> Value {
    let mut v = serde_json::to_value(t).expect("json");
    if let Some(o) = v.as_object_mut() {
        o.remove("provenance");
        o.remove("content_digest");
        o.remove("subagents");
    }
    v
}

#[test]
fn a_trace_split_over_rotated_files_out_of_order_is_read_whole() {
    // The real file's three lines as three files, the root spans (line 3) first.
    let tmp = tempfile::tempdir().expect("tempdir");
    split_copy(tmp.path(), &[("traces-1.json", 2), ("traces-2.json", 0), ("traces-3.json", 1)]);
    let split = read(&[tmp.path().to_path_buf()]);
    let whole = read(&[real("otel/openai_agents_0.24.0_oi_2.5.3.jsonl")]);
    assert_eq!(split.trajectories.len(), 1);
    assert_eq!(report(&split, "traces-1.json").trajectories, 1);
    for part in ["traces-2.json", "traces-3.json"] {
        assert!(report(&split, part).part_of.as_deref().is_some_and(|p| p.ends_with("traces-1.json")), "{part}");
    }
    let (a, b) = (&split.trajectories[0], &whole.trajectories[0]);
    assert_eq!(a.id, b.id);
    assert_eq!(a.provenance.path, tmp.path().join("traces-1.json").display().to_string());
    // The spans kept verbatim follow file order; the steps do not depend on it.
    assert_eq!(serde_json::to_value(&a.steps).ok(), serde_json::to_value(&b.steps).ok());
    assert_eq!(content(a).get("task"), content(b).get("task"));
    // Naming the first file alone reads its set too.
    let lead = read(&[tmp.path().join("traces-1.json")]);
    assert_eq!(lead.trajectories.len(), 1);
    assert_eq!(lead.trajectories[0].steps.len(), 7);
}

#[test]
fn compressed_otlp_reads_as_plain() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bytes = std::fs::read(real("otel/pydantic_ai_2.58.0.json")).expect("fixture");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bytes).expect("gzip");
    std::fs::write(tmp.path().join("pydantic.json.gz"), gz.finish().expect("gzip")).expect("write");
    let c = read(&[tmp.path().to_path_buf()]);
    let r = report(&c, "pydantic.json.gz");
    assert_eq!((r.format.as_deref(), r.trajectories, r.steps, r.tool_calls), (Some("otel"), 2, 9, 2));
}

#[test]
fn tempo_batches_with_base64_ids_and_event_capture() {
    let c = read(&[real("otel/spec")]);
    // traceId "W47/95gDgQPSabYzgT/GDA==" in base64 is this hex id.
    let t = by_id(&c.trajectories, "otel-5b8efff798038103d269b633813fc60c");
    assert!(t.provenance.path.ends_with("tempo_batches_event_capture.json"));
    assert_eq!(t.agent.name.as_deref(), Some("trip_planner"));
    assert_eq!(t.agent.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    assert_eq!(t.session_id.as_deref(), Some("conv-7"));
    let (u, s, a, tl) = (Role::User, Role::System, Role::Assistant, Role::Tool);
    assert_eq!(
        shape(t),
        vec![
            (s, vec![], vec![]),
            (u, vec![], vec![]),
            (a, strs(&["call_w1"]), vec![]),
            (tl, vec![], strs(&["call_w1"])),
            (a, vec![], vec![]),
        ]
    );
    assert_eq!(t.steps[2].tool_calls[0].arguments, json!({"city": "Oslo"}));
    // The failed tool span is an error of its result, not the run's outcome.
    assert_eq!(t.steps[3].tool_results[0].extra.get("error"), Some(&json!("forecast service unavailable")));
    assert_eq!(t.outcome.status, Status::Unknown);
    assert_eq!(t.steps[4].content.as_deref(), Some(&json!("The forecast service is down; please try again later.")));
    assert_eq!(tokens(t), vec![(Some(58), Some(17)), (Some(96), Some(21))]);
}

#[test]
fn openllmetry_prompt_attributes_and_rejections_name_file_and_line() {
    let c = read(&[real("otel/spec")]);
    let t = by_id(&c.trajectories, "otel-0af7651916cd43dd8448eb211c80319c");
    assert_eq!(t.provenance.line, Some(2), "the workflow root span is on line 2");
    assert_eq!(t.agent.model.as_deref(), Some("gpt-4o-2024-08-06"));
    let (u, s, a, tl) = (Role::User, Role::System, Role::Assistant, Role::Tool);
    assert_eq!(
        shape(t),
        vec![
            (s, vec![], vec![]),
            (u, vec![], vec![]),
            (a, strs(&["call_r1"]), vec![]),
            (tl, vec![], strs(&["call_r1"])),
            (a, vec![], vec![]),
        ]
    );
    assert_eq!(t.steps[3].tool_results[0].content.as_deref(), Some(&json!("reset link sent")));
    assert_eq!(tokens(t), vec![(Some(82), Some(19)), (Some(120), Some(12))]);
    let msgs: Vec<(&str, &str, &str)> =
        c.rejections.iter().map(|r| (r.reason.as_str(), r.problems[0].json_path.as_str(), r.path.as_str())).collect();
    assert_eq!(msgs.len(), 2);
    assert_eq!((msgs[0].0, msgs[0].1), ("invalid_json", "$"));
    assert!(c.rejections[0].problems[0].message.contains("openllmetry_prompt_attributes.jsonl line 4"));
    assert_eq!((msgs[1].0, msgs[1].1), ("not_a_rollout", "$.spans"));
    assert!(c.rejections[1].problems[0].message.contains("4bf92f3577b34da6a3ce929d0e0e4736"));
}

#[test]
fn otlp_spans_without_genai_attributes_are_not_claimed() {
    // Synthetic: the HTTP-only document of the spec fixture, alone in a file.
    let tmp = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(real("otel/spec/openllmetry_prompt_attributes.jsonl")).expect("fixture");
    std::fs::write(tmp.path().join("http.json"), text.lines().nth(2).expect("line 3")).expect("write");
    let c = read(&[tmp.path().to_path_buf()]);
    let r = report(&c, "http.json");
    assert!(r.format.is_none() && r.error.is_some(), "{r:?}");
    assert!(r.guess.as_deref().is_some_and(|g| g.starts_with("otel")), "{:?}", r.guess);
    let forced = read_with(
        &[tmp.path().to_path_buf()],
        Options { format: Some("otel".into()), records: true, ..Options::default() },
    );
    assert_eq!(forced.trajectories.len(), 0);
    assert_eq!(report(&forced, "http.json").reasons, counts(&[("not_a_rollout", 1)]));
    assert!(from_file(&forced, "http.json").is_empty());
}

/// The real Pydantic AI file with its second trace's spans moved into the first trace
/// (synthetic: one trace holding two `invoke_agent` roots), and one span's ids removed.
fn merged_runs(dir: &Path, drop_ids_of_one_span: bool) {
    let text = std::fs::read_to_string(real("otel/pydantic_ai_2.58.0.json")).expect("fixture");
    let mut doc: Value = serde_json::from_str(&text).expect("json");
    let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array_mut().expect("spans");
    for s in spans.iter_mut() {
        s["traceId"] = json!("3a5605542c96b9179eb9de72cd6221ac");
    }
    if drop_ids_of_one_span {
        spans[0].as_object_mut().map(|o| o.remove("spanId"));
    }
    std::fs::write(dir.join("merged.json"), doc.to_string()).expect("write");
}

#[test]
fn a_trace_with_two_top_level_agent_runs_is_one_record_per_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    merged_runs(tmp.path(), false);
    let c = read(&[tmp.path().to_path_buf()]);
    let ids: Vec<&str> = c.trajectories.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        vec![
            "otel-3a5605542c96b9179eb9de72cd6221ac-e98176d611877ec1",
            "otel-3a5605542c96b9179eb9de72cd6221ac-99b573ac6ce5b3b5"
        ]
    );
    let steps: Vec<usize> = c.trajectories.iter().map(|t| t.steps.len()).collect();
    assert_eq!(steps, vec![6, 3]);
}

#[test]
fn a_span_without_its_id_is_rejected_with_file_and_field() {
    let tmp = tempfile::tempdir().expect("tempdir");
    merged_runs(tmp.path(), true);
    let c = read(&[tmp.path().to_path_buf()]);
    assert_eq!(c.rejections.len(), 1);
    let p = &c.rejections[0].problems[0];
    assert_eq!(
        (c.rejections[0].reason.as_str(), p.json_path.as_str()),
        ("schema_violation", "$.resourceSpans[0].spans[0].spanId")
    );
    assert!(p.message.contains("merged.json"), "{}", p.message);
    // The rest is read: the first run lost its first model call (its output) only.
    assert_eq!(c.trajectories.len(), 2);
}
