//! ATIF reader against the real fixtures in tests/fixtures/real/atif (see its NOTICE.md),
//! plus small synthetic cases for rules no real file exercises.
//!
//! Expected figures were counted independently from the files (python, see the table in
//! the fixture notes), not copied from the program's output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use trajkit_formats::{discover, read_inputs, FileReport, InputFile, Options, Reason, Rejection};
use trajkit_model::{GapKind, Role, TaskKeySource, Trajectory};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real/atif")
}

#[derive(Default)]
struct Collect {
    trajectories: Vec<Trajectory>,
    rejections: Vec<Rejection>,
}

impl trajkit_formats::Sink for Collect {
    fn trajectory(&mut self, _file: &InputFile, t: Option<&Trajectory>, _canonical: Option<&[u8]>) {
        self.trajectories.extend(t.cloned());
    }
    fn rejection(&mut self, r: &Rejection) {
        self.rejections.push(r.clone());
    }
}

fn run_with(args: &[PathBuf], opts: &Options) -> (Vec<FileReport>, Collect) {
    let (files, errors) = discover(args);
    assert!(errors.is_empty(), "discover errors: {errors:?}");
    let mut sink = Collect::default();
    let reports = read_inputs(files, opts, &mut sink).expect("read_inputs");
    (reports, sink)
}

fn run(args: &[PathBuf]) -> (Vec<FileReport>, Collect) {
    run_with(args, &Options { records: true, ..Options::default() })
}

fn by_path<'a>(c: &'a Collect, path: &str) -> &'a Trajectory {
    c.trajectories.iter().find(|t| t.provenance.path == path).unwrap_or_else(|| panic!("no trajectory from {path}"))
}

/// Expected figures of one file of the fixture directory.
struct Exp {
    rel: &'static str,
    atif: bool,
    records: u64,
    subagents: u64,
    steps: u64,
    tool_calls: u64,
    gaps: &'static [(&'static str, u64)],
    part_of: Option<&'static str>,
}

const fn file(
    rel: &'static str,
    steps: u64,
    tool_calls: u64,
    subagents: u64,
    gaps: &'static [(&'static str, u64)],
) -> Exp {
    Exp { rel, atif: true, records: 1, subagents, steps, tool_calls, gaps, part_of: None }
}

const fn part(rel: &'static str, of: &'static str) -> Exp {
    Exp { rel, atif: true, records: 0, subagents: 0, steps: 0, tool_calls: 0, gaps: &[], part_of: Some(of) }
}

const fn not_atif(rel: &'static str) -> Exp {
    Exp { rel, atif: false, records: 0, subagents: 0, steps: 0, tool_calls: 0, gaps: &[], part_of: None }
}

const CS12: &str = "terminus2-context-summarization-v1.2/trajectory.json";
const CS17: &str = "terminus2-context-summarization-v1.7/trajectory.json";
const LH17: &str = "terminus2-linear-history-v1.7/trajectory.json";

/// Every file of the fixture directory, in discovery (sorted path) order.
/// steps exclude copied-context steps; the linear-history record is segment 0 (5 steps)
/// plus cont-1 (8 steps, 4 of them copied) = 9.
const EXPECTED: &[Exp] = &[
    file("claude-code-fail-agent-tool-v1.7.trajectory.json", 40, 46, 0, &[]),
    file("claude-code-pass-v1.7.trajectory.json", 12, 12, 0, &[]),
    not_atif("harbor-exports/terminus2-invalid-llm-json.traces.json"),
    not_atif("not-atif/oracle-pre-atif-set-e.json"),
    not_atif("not-atif/rfc-native-gemini-cli-trajectory.json"),
    not_atif("not-atif/rfc-native-mini-swe-agent-trajectory.json"),
    not_atif("not-atif/rfc-native-openhands-trajectory.json"),
    // step 6 (index 5) calls call_fake_2 and has no observation at all
    file("openhands-hello-world-v1.5.trajectory.json", 6, 2, 0, &[("unanswered_tool_call", 1)]),
    file("oracle-simple-v1.2.trajectory.json", 2, 1, 0, &[]),
    file(CS12, 11, 7, 3, &[]),
    part("terminus2-context-summarization-v1.2/trajectory.summarization-1-answers.json", CS12),
    part("terminus2-context-summarization-v1.2/trajectory.summarization-1-questions.json", CS12),
    part("terminus2-context-summarization-v1.2/trajectory.summarization-1-summary.json", CS12),
    // 3 trajectory_path refs whose files are not in the fixture set
    file("terminus2-context-summarization-v1.4.trajectory.json", 10, 7, 0, &[("unresolved_subagent_ref", 3)]),
    file(CS17, 10, 7, 3, &[]),
    part("terminus2-context-summarization-v1.7/trajectory.summarization-1-answers.json", CS17),
    part("terminus2-context-summarization-v1.7/trajectory.summarization-1-questions.json", CS17),
    part("terminus2-context-summarization-v1.7/trajectory.summarization-1-summary.json", CS17),
    file("terminus2-hello-world-v1.3.trajectory.json", 5, 4, 0, &[]),
    file("terminus2-invalid-llm-json-v1.7.trajectory.json", 5, 3, 0, &[]),
    part("terminus2-linear-history-v1.7/trajectory.cont-1.json", LH17),
    file(LH17, 9, 0, 0, &[("unresolved_subagent_ref", 3)]),
    file("terminus2-timeout-v1.6.trajectory.json", 4, 3, 0, &[]),
];

#[test]
fn every_fixture_file_has_the_expected_figures() {
    let dir = fixtures();
    let (reports, _) = run(std::slice::from_ref(&dir));
    let got: Vec<&str> = reports.iter().map(|r| r.path.as_str()).collect();
    let want: Vec<String> = EXPECTED.iter().map(|e| dir.join(e.rel).display().to_string()).collect();
    assert_eq!(got, want, "file list");
    for (r, e) in reports.iter().zip(EXPECTED) {
        let ctx = e.rel;
        if e.atif {
            assert_eq!(r.format.as_deref(), Some("atif"), "{ctx}");
            assert_eq!(r.error, None, "{ctx}");
        } else {
            // Not ATIF. Other families may read it (mini-swe-agent, OpenHands, Harbor
            // traces): their own tests pin those figures.
            assert_ne!(r.format.as_deref(), Some("atif"), "{ctx}");
            assert_eq!(r.guess, None, "{ctx}");
            continue;
        }
        assert_eq!(r.records, e.records, "{ctx} records");
        let trajectories = u64::from(e.atif && e.part_of.is_none());
        assert_eq!(r.trajectories, trajectories, "{ctx} trajectories");
        assert_eq!(r.subagents, e.subagents, "{ctx} subagents");
        assert_eq!(r.steps, e.steps, "{ctx} steps");
        assert_eq!(r.tool_calls, e.tool_calls, "{ctx} tool_calls");
        assert_eq!(r.duplicate_records, 0, "{ctx} duplicate_records");
        assert_eq!(r.rejected, 0, "{ctx} rejected");
        assert!(r.reasons.is_empty(), "{ctx} reasons {:?}", r.reasons);
        let gaps: BTreeMap<String, u64> = e.gaps.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        assert_eq!(r.gaps, gaps, "{ctx} gaps");
        let part_of = e.part_of.map(|p| dir.join(p).display().to_string());
        assert_eq!(r.part_of, part_of, "{ctx} part_of");
    }
}

#[test]
fn canonical_fields_of_real_records() {
    let dir = fixtures();
    let (_, c) = run(std::slice::from_ref(&dir));
    let atif: Vec<&Trajectory> = c.trajectories.iter().filter(|t| t.provenance.format == "atif").collect();
    assert_eq!(atif.len(), 11);
    assert!(c.rejections.is_empty());
    let p = |rel: &str| dir.join(rel).display().to_string();

    // Claude Code pass: no trajectory_id, so the id is atif- + sha256 prefix of the bytes
    // (sha256sum of the file: f122328e41d1d2b4...).
    let t = by_path(&c, &p("claude-code-pass-v1.7.trajectory.json"));
    assert_eq!(t.id, "atif-f122328e41d1d2b4");
    assert!(t.provenance.sha256.starts_with("f122328e41d1d2b4"));
    assert_eq!(t.session_id.as_deref(), Some("a3b10bae-3ebd-4b8e-8779-3d21ce098521"));
    assert_eq!(t.provenance.format, "atif");
    assert_eq!(t.provenance.format_version.as_deref(), Some("ATIF-v1.7"));
    assert_eq!(t.provenance.document_index, Some(0));
    assert_eq!(t.provenance.line, None);
    assert_eq!(t.agent.name.as_deref(), Some("claude-code"));
    assert_eq!(t.agent.version.as_deref(), Some("2.1.178"));
    assert_eq!(t.agent.model.as_deref(), Some("claude-opus-4-6"));
    let s = &t.steps[1];
    assert_eq!(s.role, Role::Assistant);
    assert_eq!(s.source_id, Some(json!(2)));
    assert_eq!(s.timestamp.as_deref(), Some("2026-06-16T12:35:30.872Z"));
    let call = &s.tool_calls[0];
    assert_eq!(call.id.as_deref(), Some("toolu_vrtx_01DMAvK6aCFYSU2EZmeSe8Ha"));
    assert_eq!(call.name, "Read");
    assert_eq!(call.arguments, json!({"file_path": "/repo/maas-controller/pkg/controller/maas/providers_llmisvc.go"}));
    // ToolCall.extra (raw_arguments, tool_use_name) lands under its source name.
    assert!(call.extra.contains_key("extra"));
    assert_eq!(s.tool_results[0].call_id.as_deref(), Some("toolu_vrtx_01DMAvK6aCFYSU2EZmeSe8Ha"));
    let m = s.metrics.as_ref().expect("step metrics");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(34547), Some(220), Some(24306)));
    let fm = t.metrics.as_ref().expect("final metrics");
    assert_eq!((fm.prompt_tokens, fm.completion_tokens, fm.cached_tokens), (Some(485630), Some(3304), Some(461807)));
    assert_eq!(fm.extra.get("total_steps"), Some(&json!(12)));
    assert_eq!(t.outcome.status, trajkit_model::Status::Unknown);
    assert_eq!(t.outcome.verification, trajkit_model::Verification::Unverified);
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    let instr = t.task.instruction.as_deref().unwrap_or_default();
    assert!(instr.starts_with("You are a software engineer."));
    assert_eq!(t.task.key, trajkit_model::canonical::instruction_task_key(instr, None));
    assert_eq!(t.task.environment, None);

    // OpenHands: tool_definitions -> tools; agent.extra kept under extra["agent"].
    let t = by_path(&c, &p("openhands-hello-world-v1.5.trajectory.json"));
    assert_eq!(t.tools.as_ref().map(Vec::len), Some(6));
    assert_eq!(t.agent.model, None);
    assert_eq!(t.extra.get("agent"), Some(&json!({"extra": {"agent_class": "CodeActAgent"}})));
    assert_eq!(
        t.steps.iter().map(|s| s.role).collect::<Vec<_>>(),
        vec![Role::System, Role::User, Role::System, Role::System, Role::Assistant, Role::Assistant]
    );
    assert_eq!(t.gaps.len(), 1);
    assert_eq!(t.gaps[0].kind, GapKind::UnansweredToolCall);
    assert_eq!(t.gaps[0].step, Some(5));
    assert_eq!(t.steps[4].tool_calls[0].arguments["path"], json!("/app/hello.txt"));

    // Oracle: notes -> extra["notes"]; the only user message is "" so the task key is the
    // record hash.
    let t = by_path(&c, &p("oracle-simple-v1.2.trajectory.json"));
    assert_eq!(t.extra.get("notes"), Some(&json!("Oracle agent trajectory - executing pre-defined solution script")));
    assert_eq!(t.metrics, None);
    assert_eq!(t.task.key_source, TaskKeySource::RecordHash);
    assert_eq!(t.task.key, "r:2c69d2ffc624f5d8");

    // Terminus-2 v1.3: results carry no source_call_id: kept with call_id None, no gap.
    let t = by_path(&c, &p("terminus2-hello-world-v1.3.trajectory.json"));
    assert_eq!(t.session_id.as_deref(), Some("test-session-123"));
    let s = &t.steps[1];
    assert_eq!(s.tool_calls.len(), 1);
    assert_eq!(s.tool_results.len(), 1);
    assert_eq!(s.tool_results[0].call_id, None);
    assert!(s.reasoning.as_deref().is_some_and(|r| r.starts_with("First, I need to understand the task")));
    let m = s.metrics.as_ref().expect("metrics");
    assert_eq!(m.completion_tokens, Some(100));
    assert_eq!(m.extra.get("completion_token_ids").and_then(Value::as_array).map(Vec::len), Some(100));
    assert!(m.extra.contains_key("logprobs"));
    // No user step at all (the prompt is a system step): record-hash task key.
    assert_eq!(t.task.key_source, TaskKeySource::RecordHash);
    assert!(t.gaps.is_empty());

    // v1.2 context summarization: 3 file-ref subagents, spawned by step index 5.
    let t = by_path(&c, &p(CS12));
    assert_eq!(t.session_id.as_deref(), Some("9430d14a-8c6b-413a-954c-a592ddaa1805"));
    assert_eq!(t.subagents.len(), 3);
    let names: Vec<&str> = t.subagents.iter().filter_map(|s| s.trajectory.agent.name.as_deref()).collect();
    assert_eq!(
        names,
        ["terminus-2-summarization-summary", "terminus-2-summarization-questions", "terminus-2-summarization-answers"]
    );
    let sub = &t.subagents[0];
    assert_eq!(sub.spawned_by_step, Some(5));
    assert_eq!(sub.spawned_by_tool_call, None);
    assert_eq!(sub.trajectory.id, "atif-2da8ff46840dd889");
    assert_eq!(
        sub.trajectory.provenance.path,
        p("terminus2-context-summarization-v1.2/trajectory.summarization-1-summary.json")
    );
    assert_eq!(sub.trajectory.provenance.document_index, Some(0));
    assert_eq!(
        sub.trajectory.session_id.as_deref(),
        Some("9430d14a-8c6b-413a-954c-a592ddaa1805-summarization-1-summary")
    );
    assert_eq!(sub.trajectory.steps.len(), 2);
    assert_eq!(
        t.steps[5].tool_results[0].subagent_refs,
        ["atif-2da8ff46840dd889", "atif-f99d6242f619e3c2", "atif-41e3432aa47fba07"]
    );

    // v1.7 context summarization: 3 subagents with copied-context steps.
    let t = by_path(&c, &p(CS17));
    assert_eq!(t.subagents.len(), 3);
    let copied: Vec<usize> =
        t.subagents.iter().map(|s| s.trajectory.steps.iter().filter(|x| x.copied_context).count()).collect();
    assert_eq!(copied, [3, 0, 5]);
    assert_eq!(t.subagents[0].trajectory.id, "atif-4b2fa41428742814");
    assert_eq!(t.subagents[2].trajectory.id, "atif-ec2f7fa2418cc9b0");
    assert_eq!(
        t.steps[4].extra.get("extra"),
        Some(&json!({"context_management": {"type": "compaction", "boundary": "replace"}}))
    );
    // results of steps 9 and 10 have no source_call_id; step 2's names its call.
    assert_eq!(t.steps[1].tool_results[0].call_id.as_deref(), Some("call_0_1"));
    assert_eq!(t.steps[8].tool_results[0].call_id, None);

    // v1.4: dangling refs are gaps, not rejections.
    let t = by_path(&c, &p("terminus2-context-summarization-v1.4.trajectory.json"));
    assert!(t.subagents.is_empty());
    assert_eq!(t.gaps.len(), 3);
    assert!(t.gaps.iter().all(|g| g.kind == GapKind::UnresolvedSubagentRef && g.step == Some(4)));

    // Linear history: one run from two files; cumulative metrics of the last segment.
    let t = by_path(&c, &p(LH17));
    assert_eq!(t.id, "atif-06b56ab49c627ae3");
    assert_eq!(t.steps.len(), 13);
    let flags: Vec<bool> = t.steps.iter().map(|s| s.copied_context).collect();
    assert_eq!(flags, [false, false, false, false, false, true, true, true, true, false, false, false, false]);
    let m = t.metrics.as_ref().expect("metrics");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(7802), Some(1030), Some(0)));
    // exact: the workspace builds serde_json with `float_roundtrip`
    assert_eq!(m.cost_usd, Some(0.029804999999999998));
    // segment 0's own snapshot is kept verbatim
    assert_eq!(t.extra.get("final_metrics").and_then(|f| f.get("total_prompt_tokens")), Some(&json!(2252)));
    let conts = t.extra.get("continuations").and_then(Value::as_array).expect("continuations");
    assert_eq!(conts.len(), 1);
    assert_eq!(conts[0]["path"], json!(p("terminus2-linear-history-v1.7/trajectory.cont-1.json")));
    assert_eq!(conts[0]["agent"]["extra"]["continuation_index"], json!(1));
    assert_eq!(t.subagents.len(), 0);
    assert_eq!(t.gaps.len(), 3);
}

#[test]
fn single_files() {
    let dir = fixtures();
    // A parent given alone still finds its subagents next to it.
    let (r, c) = run(&[dir.join(CS17)]);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].trajectories, r[0].subagents, r[0].steps, r[0].tool_calls), (1, 3, 10, 7));
    assert_eq!(c.trajectories[0].subagents.len(), 3);

    // The continuation segment alone is a trajectory of its own: 8 steps, 4 copied.
    let (r, c) = run(&[dir.join("terminus2-linear-history-v1.7/trajectory.cont-1.json")]);
    assert_eq!((r[0].trajectories, r[0].steps, r[0].tool_calls), (1, 4, 0));
    assert_eq!(c.trajectories[0].steps.len(), 8);
    assert_eq!(c.trajectories[0].metrics.as_ref().and_then(|m| m.prompt_tokens), Some(7802));

    // A subagent file alone.
    let (r, c) = run(&[dir.join("terminus2-context-summarization-v1.7/trajectory.summarization-1-answers.json")]);
    // Its 2 tool calls sit in copied-context steps (copies of the parent's calls): not counted.
    assert_eq!((r[0].trajectories, r[0].steps, r[0].tool_calls), (1, 2, 0));
    assert_eq!(c.trajectories[0].id, "atif-ec2f7fa2418cc9b0");

    // Linear-history head alone: 9 steps, cont-1 consumed.
    let (r, c) = run(&[dir.join(LH17)]);
    assert_eq!((r[0].trajectories, r[0].steps), (1, 9));
    assert_eq!(c.trajectories[0].steps.len(), 13);

    // Non-ATIF given alone is still not ATIF: Harbor's traces export has its own reader
    // (figures pinned in harbor_trial_real.rs).
    let (r, _) = run(&[dir.join("harbor-exports/terminus2-invalid-llm-json.traces.json")]);
    assert_eq!(r[0].format.as_deref(), Some("harbor-traces"));
    assert_eq!((r[0].records, r[0].trajectories, r[0].steps, r[0].rejected), (4, 4, 20, 0));
}

// -------------------------------------------------------------------------------------
// Synthetic cases. No real file shows these rules, so the documents below are made up.
// -------------------------------------------------------------------------------------

/// A small valid document (synthetic).
fn base() -> Value {
    json!({
        "schema_version": "ATIF-v1.7",
        "session_id": "s-1",
        "agent": {"name": "synthetic", "version": "0.1", "model_name": "m-1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Say hi", "timestamp": "2025-10-16 14:30:00"},
            {"step_id": 2, "source": "agent", "message": "ok",
             "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "echo hi"}}],
             "observation": {"results": [{"source_call_id": "c1", "content": "hi"}]},
             "metrics": {"prompt_tokens": 10, "completion_tokens": 2}}
        ]
    })
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(&p, serde_json::to_vec_pretty(v).expect("json")).expect("write");
    p
}

/// Reads one synthetic document as the only file of a temp dir.
fn read_doc(v: &Value) -> (FileReport, Collect) {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(tmp.path(), "t.json", v);
    let (mut r, c) = run(&[tmp.path().to_path_buf()]);
    assert_eq!(r.len(), 1);
    (r.remove(0), c)
}

/// The problems of a synthetic document that must be rejected.
fn problems(v: &Value) -> Vec<(Reason, String)> {
    let (r, c) = read_doc(v);
    assert_eq!(r.format.as_deref(), Some("atif"));
    assert_eq!(r.rejected, 1, "expected a rejection: {:?}", c.trajectories);
    c.rejections[0].problems.iter().map(|p| (p.reason, p.json_path.clone())).collect()
}

/// Sets (or adds) the value at a JSON pointer whose parent exists.
fn set(v: &mut Value, pointer: &str, x: Value) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer");
    match v.pointer_mut(parent).expect("parent") {
        Value::Object(m) => {
            m.insert(key.to_string(), x);
        }
        Value::Array(a) => a[key.parse::<usize>().expect("index")] = x,
        _ => panic!("{pointer}: parent is not a container"),
    }
}

#[test]
fn synthetic_base_is_accepted() {
    let (r, c) = read_doc(&base());
    assert_eq!((r.trajectories, r.steps, r.tool_calls, r.rejected), (1, 2, 1, 0));
    let t = &c.trajectories[0];
    assert_eq!(t.task.instruction.as_deref(), Some("Say hi"));
    assert_eq!(t.task.key, trajkit_model::canonical::instruction_task_key("Say hi", None));
    assert_eq!(t.steps[0].timestamp.as_deref(), Some("2025-10-16 14:30:00"));
    assert!(t.gaps.is_empty());
}

#[test]
fn synthetic_non_sequential_step_id() {
    let mut v = base();
    set(&mut v, "/steps/1/step_id", json!(3));
    assert_eq!(problems(&v), [(Reason::NonSequentialStepId, "$.steps[1].step_id".into())]);
}

#[test]
fn synthetic_agent_only_field_on_user_step() {
    let mut v = base();
    set(&mut v, "/steps/0/model_name", json!("m"));
    set(&mut v, "/steps/0/reasoning_content", json!("thinking"));
    assert_eq!(
        problems(&v),
        [
            (Reason::AgentOnlyField, "$.steps[0].model_name".into()),
            (Reason::AgentOnlyField, "$.steps[0].reasoning_content".into())
        ]
    );
    // null counts as absent
    let mut v = base();
    set(&mut v, "/steps/0/model_name", Value::Null);
    assert_eq!(read_doc(&v).0.trajectories, 1);
}

#[test]
fn synthetic_llm_call_count_zero_forbids_metrics() {
    let mut v = base();
    set(&mut v, "/steps/1/llm_call_count", json!(0));
    assert_eq!(problems(&v), [(Reason::FieldForbiddenWithoutLlmCall, "$.steps[1].metrics".into())]);
    // llm_call_count 0 without metrics is fine and kept in extra
    let mut v = base();
    set(&mut v, "/steps/1/llm_call_count", json!(0));
    v["steps"][1].as_object_mut().map(|m| m.remove("metrics"));
    let (r, c) = read_doc(&v);
    assert_eq!(r.trajectories, 1);
    assert_eq!(c.trajectories[0].steps[1].extra.get("llm_call_count"), Some(&json!(0)));
}

#[test]
fn synthetic_bad_timestamp() {
    let mut v = base();
    set(&mut v, "/steps/0/timestamp", json!("yesterday"));
    assert_eq!(problems(&v), [(Reason::InvalidTimestamp, "$.steps[0].timestamp".into())]);
    let mut v = base();
    set(&mut v, "/steps/0/timestamp", json!("2025-10-16T14:30:00.5+05:30"));
    assert_eq!(read_doc(&v).0.trajectories, 1);
}

#[test]
fn synthetic_unknown_source_call_id() {
    let mut v = base();
    set(&mut v, "/steps/1/observation/results/0/source_call_id", json!("c9"));
    assert_eq!(
        problems(&v),
        [(Reason::UnknownSourceCallId, "$.steps[1].observation.results[0].source_call_id".into())]
    );
}

#[test]
fn synthetic_unknown_keys() {
    let mut v = base();
    set(&mut v, "/steps/1/metrics/reward", json!(1));
    v["foo"] = json!(1);
    assert_eq!(
        problems(&v),
        [(Reason::UnknownField, "$.foo".into()), (Reason::UnknownField, "$.steps[1].metrics.reward".into())]
    );
    // anything goes inside extra
    let mut v = base();
    v["extra"] = json!({"foo": 1});
    v["steps"][1]["extra"] = json!({"bar": [1, 2]});
    let (r, c) = read_doc(&v);
    assert_eq!(r.trajectories, 1);
    assert_eq!(c.trajectories[0].extra.get("extra"), Some(&json!({"foo": 1})));
    assert_eq!(c.trajectories[0].steps[1].extra.get("extra"), Some(&json!({"bar": [1, 2]})));
}

#[test]
fn synthetic_all_problems_are_collected() {
    let mut v = base();
    set(&mut v, "/steps/0/timestamp", json!("not a time"));
    set(&mut v, "/steps/0/metrics", json!({}));
    set(&mut v, "/steps/1/tool_calls/0/arguments", json!("{\"cmd\":1}"));
    set(&mut v, "/agent/version", json!(1));
    v["schema_version"] = json!("ATIF-v1.8");
    let got = problems(&v);
    assert_eq!(
        got,
        [
            (Reason::InvalidValue, "$.schema_version".into()),
            (Reason::SchemaViolation, "$.agent.version".into()),
            (Reason::InvalidTimestamp, "$.steps[0].timestamp".into()),
            (Reason::AgentOnlyField, "$.steps[0].metrics".into()),
            (Reason::SchemaViolation, "$.steps[1].tool_calls[0].arguments".into()),
        ]
    );
}

#[test]
fn synthetic_missing_schema_version_is_rejected_when_forced() {
    let mut v = base();
    v.as_object_mut().map(|m| m.remove("schema_version"));
    let tmp = tempfile::tempdir().expect("tempdir");
    write(tmp.path(), "t.json", &v);
    // Not detected as ATIF (closest guess only) ...
    let (r, _) = run(&[tmp.path().to_path_buf()]);
    assert_eq!(r[0].format, None);
    assert!(r[0].guess.as_deref().is_some_and(|g| g.starts_with("atif")));
    // ... and rejected when the format is forced.
    let opts = Options { format: Some("atif".into()), records: true, ..Options::default() };
    let (r, c) = run_with(&[tmp.path().to_path_buf()], &opts);
    assert_eq!(r[0].reasons.get("schema_violation"), Some(&1));
    assert_eq!(c.rejections[0].problems[0].json_path, "$.schema_version");
}

#[test]
fn synthetic_embedded_subagents() {
    let sub = |id: Option<&str>| {
        let mut s = base();
        if let Some(id) = id {
            s["trajectory_id"] = json!(id);
        }
        s
    };
    // duplicate and missing trajectory_id
    let mut v = base();
    v["subagent_trajectories"] = json!([sub(Some("a")), sub(Some("a")), sub(None)]);
    assert_eq!(
        problems(&v),
        [
            (Reason::InvalidSubagentId, "$.subagent_trajectories[1].trajectory_id".into()),
            (Reason::InvalidSubagentId, "$.subagent_trajectories[2].trajectory_id".into())
        ]
    );

    // resolved by trajectory_id; an embedded subagent no ref names is still kept
    let mut v = base();
    let mut s1 = sub(Some("sub-1"));
    s1.as_object_mut().map(|m| m.remove("schema_version")); // inherits the parent's
    v["subagent_trajectories"] = json!([s1, sub(Some("sub-2"))]);
    set(
        &mut v,
        "/steps/1/observation/results/0/subagent_trajectory_ref",
        json!([{"trajectory_id": "sub-1", "trajectory_path": "missing.json"}]),
    );
    let (r, c) = read_doc(&v);
    assert_eq!((r.trajectories, r.subagents, r.steps), (1, 2, 2));
    assert!(r.gaps.is_empty());
    let t = &c.trajectories[0];
    assert_eq!(t.steps[1].tool_results[0].subagent_refs, ["sub-1"]);
    let s = &t.subagents[0];
    assert_eq!(s.trajectory.id, "sub-1");
    assert_eq!(s.spawned_by_step, Some(1));
    assert_eq!(s.spawned_by_tool_call.as_deref(), Some("c1"));
    assert_eq!(s.trajectory.provenance.format_version.as_deref(), Some("ATIF-v1.7"));
    assert_eq!(t.subagents[1].trajectory.id, "sub-2");
    assert_eq!(t.subagents[1].spawned_by_step, None);

    // an id that names nothing is a gap
    let mut v = base();
    set(&mut v, "/steps/1/observation/results/0/subagent_trajectory_ref", json!([{"trajectory_id": "nope"}]));
    let (r, _) = read_doc(&v);
    assert_eq!(r.gaps.get("unresolved_subagent_ref"), Some(&1));
}

#[test]
fn synthetic_ref_without_id_or_path() {
    let mut v = base();
    set(&mut v, "/steps/1/observation/results/0/subagent_trajectory_ref", json!([{"session_id": "only-a-session"}]));
    assert_eq!(
        problems(&v),
        [(Reason::UnresolvableSubagentRef, "$.steps[1].observation.results[0].subagent_trajectory_ref[0]".into())]
    );
}

#[test]
fn synthetic_paths_escaping_the_root() {
    let mut v = base();
    set(
        &mut v,
        "/steps/1/observation/results/0/subagent_trajectory_ref",
        json!([{"trajectory_path": "../../etc/passwd"}]),
    );
    v["continued_trajectory_ref"] = json!("/etc/passwd");
    assert_eq!(
        problems(&v),
        [
            (Reason::PathEscapesRoot, "$.continued_trajectory_ref".into()),
            (
                Reason::PathEscapesRoot,
                "$.steps[1].observation.results[0].subagent_trajectory_ref[0].trajectory_path".into()
            )
        ]
    );
}

#[test]
fn synthetic_sidechain_steps_are_subagent_steps() {
    let mut v = base();
    set(&mut v, "/steps/1/extra", json!({"is_sidechain": true}));
    let (_, c) = read_doc(&v);
    let t = &c.trajectories[0];
    assert!(t.steps[1].subagent);
    assert!(!t.steps[0].subagent);
    assert_eq!(t.steps[1].extra.get("extra"), Some(&json!({"is_sidechain": true})));
}

#[test]
fn synthetic_tool_call_gaps() {
    let mut v = base();
    // step 2: two calls, one result without source_call_id -> one call is unanswered
    v["steps"][1]["tool_calls"] = json!([
        {"tool_call_id": "c1", "function_name": "bash", "arguments": {}},
        {"tool_call_id": "c2", "function_name": "bash", "arguments": {}}
    ]);
    v["steps"][1]["observation"] = json!({"results": [{"content": "x"}]});
    // step 3 reuses c1 and has no results at all
    v["steps"].as_array_mut().expect("steps").push(json!({"step_id": 3, "source": "agent", "message": "",
                    "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {}}]}));
    let (r, c) = read_doc(&v);
    assert_eq!(r.trajectories, 1);
    assert_eq!(r.gaps.get("unanswered_tool_call"), Some(&2));
    assert_eq!(r.gaps.get("duplicate_tool_call_id"), Some(&1));
    let steps: Vec<(GapKind, Option<usize>)> = c.trajectories[0].gaps.iter().map(|g| (g.kind, g.step)).collect();
    assert_eq!(
        steps,
        [
            (GapKind::UnansweredToolCall, Some(1)),
            (GapKind::UnansweredToolCall, Some(2)),
            (GapKind::DuplicateToolCallId, Some(2))
        ]
    );
}

#[test]
fn synthetic_file_refs_and_continuations() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path();
    // head -> sub ok, sub missing; continuation head -> tail -> head (a cycle: the
    // first file of the cycle by path, head.json, is read as the head)
    let mut parent = base();
    set(
        &mut parent,
        "/steps/1/observation/results/0/subagent_trajectory_ref",
        json!([{"trajectory_path": "subs/ok.json"}, {"trajectory_path": "subs/gone.json"}]),
    );
    parent["continued_trajectory_ref"] = json!("tail.json");
    write(d, "a/head.json", &parent);
    write(d, "a/subs/ok.json", &base());
    let mut cont = base();
    set(&mut cont, "/steps/0/is_copied_context", json!(true));
    cont["continued_trajectory_ref"] = json!("head.json");
    cont["final_metrics"] = json!({"total_prompt_tokens": 99});
    write(d, "a/tail.json", &cont);
    // a head whose continuation is missing
    let mut lone = base();
    lone["continued_trajectory_ref"] = json!("gone.json");
    write(d, "b/lone.json", &lone);

    let (r, c) = run(&[d.to_path_buf()]);
    let find = |rel: &str| {
        let want = d.join(rel).display().to_string();
        r.iter().find(|x| x.path == want).unwrap_or_else(|| panic!("{rel}")).clone()
    };
    let parent_display = d.join("a/head.json").display().to_string();
    let p = find("a/head.json");
    // 2 own steps + 1 new step of the continuation (its first step is copied)
    assert_eq!((p.trajectories, p.subagents, p.steps), (1, 1, 3));
    assert_eq!(p.gaps.get("unresolved_subagent_ref"), Some(&1));
    // tail.json points back at head.json: the cycle stops the chain with a gap
    assert_eq!(p.gaps.get("unresolved_continuation"), Some(&1));
    for rel in ["a/tail.json", "a/subs/ok.json"] {
        let x = find(rel);
        assert_eq!(x.part_of.as_deref(), Some(parent_display.as_str()), "{rel}");
        assert_eq!(x.records, 0, "{rel}");
    }
    let t = c.trajectories.iter().find(|t| t.provenance.path == parent_display).expect("parent");
    assert_eq!(t.metrics.as_ref().and_then(|m| m.prompt_tokens), Some(99));
    let missing = t
        .gaps
        .iter()
        .find(|g| g.kind == GapKind::UnresolvedSubagentRef)
        .and_then(|g| g.detail.clone())
        .unwrap_or_default();
    assert!(missing.contains("gone.json: file not found"), "{missing}");

    let l = find("b/lone.json");
    assert_eq!(l.trajectories, 1);
    assert_eq!(l.gaps.get("unresolved_continuation"), Some(&1));
}

#[test]
fn synthetic_json_lines() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let line = serde_json::to_string(&base()).expect("json");
    let mut other = base();
    other["trajectory_id"] = json!("t-2");
    let other = serde_json::to_string(&other).expect("json");
    let mut bytes = Vec::new();
    for l in [line.as_bytes(), b"{\"schema_version\": \"ATIF-v1.7\", ", line.as_bytes()] {
        bytes.extend_from_slice(l);
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(other.as_bytes());
    bytes.push(b'\n');
    bytes.extend_from_slice(b"{\"x\": \"\xff\"}\n");
    std::fs::write(tmp.path().join("many.jsonl"), &bytes).expect("write");
    let (r, c) = run(&[tmp.path().to_path_buf()]);
    let r = &r[0];
    assert_eq!(r.format.as_deref(), Some("atif"));
    assert_eq!((r.records, r.trajectories, r.duplicate_records, r.rejected), (5, 2, 1, 2));
    assert_eq!(r.reasons.get("invalid_json"), Some(&1));
    assert_eq!(r.reasons.get("invalid_utf8"), Some(&1));
    assert_eq!(c.rejections[0].line, Some(2));
    assert_eq!(c.trajectories[0].provenance.line, Some(1));
    assert_eq!(c.trajectories[0].provenance.document_index, None);
    assert_eq!(c.trajectories[1].id, "t-2");
    assert_eq!(c.trajectories[1].session_id.as_deref(), Some("s-1"));
}

#[test]
fn synthetic_not_an_object_or_empty_steps() {
    let mut v = base();
    v["steps"] = json!([]);
    assert_eq!(problems(&v), [(Reason::SchemaViolation, "$.steps".into())]);
    let mut v = base();
    set(&mut v, "/steps/0/message", Value::Null);
    assert_eq!(problems(&v), [(Reason::SchemaViolation, "$.steps[0].message".into())]);
    // content parts are kept verbatim
    let mut v = base();
    let parts = json!([{"type": "text", "text": "Say"}, {"type": "image", "source": {"media_type": "image/png", "path": "x.png"}}]);
    set(&mut v, "/steps/0/message", parts.clone());
    let (_, c) = read_doc(&v);
    assert_eq!(c.trajectories[0].steps[0].content.as_deref(), Some(&parts));
    assert_eq!(c.trajectories[0].task.instruction.as_deref(), Some("Say"));
}

#[test]
fn synthetic_truncated_document_is_rejected_as_invalid_json() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let text = serde_json::to_string_pretty(&base()).expect("json");
    let cut = &text[..text.len() - 10];
    std::fs::write(tmp.path().join("t.json"), cut).expect("write");
    let (r, c) = run(&[tmp.path().to_path_buf()]);
    assert_eq!(r[0].format.as_deref(), Some("atif"));
    assert_eq!((r[0].records, r[0].rejected), (1, 1));
    assert_eq!(r[0].reasons.get("invalid_json"), Some(&1));
    assert!(c.rejections[0].problems[0].message.contains("line"));
}

#[test]
fn synthetic_invalid_referenced_files_reject_the_record() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path();
    let mut bad = base();
    set(&mut bad, "/steps/0/step_id", json!(7));
    // A subagent file that breaks a rule.
    let mut parent = base();
    set(
        &mut parent,
        "/steps/1/observation/results/0/subagent_trajectory_ref",
        json!([{"trajectory_path": "bad.json"}]),
    );
    write(d, "s/head.json", &parent);
    write(d, "s/bad.json", &bad);
    // A continuation segment that breaks a rule.
    let mut head = base();
    head["continued_trajectory_ref"] = json!("cont.json");
    write(d, "c/head.json", &head);
    write(d, "c/cont.json", &bad);
    let (r, c) = run(&[d.to_path_buf()]);
    for dir in ["s", "c"] {
        let want = d.join(dir).join("head.json").display().to_string();
        let rep = r.iter().find(|x| x.path == want).expect("report");
        assert_eq!((rep.trajectories, rep.rejected), (0, 1), "{dir}");
        assert_eq!(rep.reasons.get("non_sequential_step_id"), Some(&1), "{dir}");
    }
    let paths: Vec<&str> = c.rejections.iter().map(|r| r.problems[0].json_path.as_str()).collect();
    assert!(paths.iter().any(|p| p.ends_with("s/bad.json:$.steps[0].step_id")), "{paths:?}");
    assert!(paths.iter().any(|p| p.ends_with("c/cont.json:$.steps[0].step_id")), "{paths:?}");
}

#[test]
fn synthetic_a_referenced_file_of_another_format_is_left_to_its_reader() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path();
    let mut parent = base();
    set(
        &mut parent,
        "/steps/1/observation/results/0/subagent_trajectory_ref",
        json!([{"trajectory_path": "r_rollouts.jsonl"}]),
    );
    write(d, "p.json", &parent);
    let gym = r#"{"responses_create_params":{"input":"hi"},"response":{"output":[]},"reward":1}"#;
    std::fs::write(d.join("r_rollouts.jsonl"), format!("{gym}\n")).expect("write");
    let (r, _) = run(&[d.to_path_buf()]);
    let gym_report = r.iter().find(|x| x.path.ends_with("r_rollouts.jsonl")).expect("gym");
    assert_eq!(
        (gym_report.format.as_deref(), gym_report.trajectories, gym_report.part_of.as_deref()),
        (Some("gym"), 1, None)
    );
    let p = r.iter().find(|x| x.path.ends_with("p.json")).expect("parent");
    assert_eq!((p.trajectories, p.subagents, p.gaps.get("unresolved_subagent_ref")), (1, 0, Some(&1)));
}

#[test]
fn synthetic_a_file_reached_twice_is_built_once() {
    // l0 -> {a1, b1}; a1 -> {a2, b2}; b1 -> {a2, b2}; ... a diamond chain.
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path();
    let levels = 12;
    for level in 0..levels {
        let names: Vec<String> =
            if level == 0 { vec!["l0".into()] } else { vec![format!("a{level}"), format!("b{level}")] };
        for name in names {
            let mut v = base();
            if level + 1 < levels {
                let next = level + 1;
                set(
                    &mut v,
                    "/steps/1/observation/results/0/subagent_trajectory_ref",
                    json!([{"trajectory_path": format!("a{next}.json")}, {"trajectory_path": format!("b{next}.json")}]),
                );
            }
            v["session_id"] = json!(name);
            write(d, &format!("{name}.json"), &v);
        }
    }
    let (r, _) = run(&[d.join("l0.json")]);
    // Each of the 22 other files appears once in l0's record, not 2^11 times.
    assert_eq!((r[0].trajectories, r[0].subagents), (1, 22));
}

#[test]
fn synthetic_remote_refs_are_gaps_and_sidechains_are_not_counted() {
    let mut v = base();
    set(
        &mut v,
        "/steps/1/observation/results/0/subagent_trajectory_ref",
        json!([{"trajectory_path": "s3://bucket/sub.json"}]),
    );
    set(&mut v, "/steps/1/extra", json!({"is_sidechain": true}));
    let (r, c) = read_doc(&v);
    assert_eq!((r.trajectories, r.rejected), (1, 0));
    assert_eq!(r.gaps.get("unresolved_subagent_ref"), Some(&1));
    // The sidechain step (with its call) belongs to a subagent: not this run's figures.
    assert_eq!((r.steps, r.tool_calls), (1, 0));
    assert!(c.trajectories[0].steps[1].subagent);
}
