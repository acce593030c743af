//! The declarative reader (`--mapping`) on real files: the two worked examples of
//! docs/formats/mapping.md (examples/mappings/*.toml) read the tau-bench v1 and tau2 fixtures
//! into the same conversation the built-in readers make, and mappings that do not fit the
//! data name the path that failed.

mod common;

use std::path::{Path, PathBuf};

use common::{counts, read, read_with, real, report, Collected};
use trajkit_formats::{Options, Reason};
use trajkit_model::{Role, Status, TaskKeySource, Trajectory, Verification};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mappings").join(name)
}

fn mapped(mapping: &Path, input: PathBuf) -> Collected {
    let format = format!("mapping:{}", mapping.display());
    read_with(&[input], Options { records: true, format: Some(format), ..Options::default() })
}

/// A mapping file written for one test.
fn mapping_file(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("m.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// What a conversation is, reader aside: each step's role and content, its calls (id,
/// name, arguments) and its results (call id, content).
type Conversation = Vec<(
    Role,
    Option<serde_json::Value>,
    Vec<(Option<String>, String, serde_json::Value)>,
    Vec<(Option<String>, Option<serde_json::Value>)>,
)>;

fn conversation(t: &Trajectory) -> Conversation {
    t.steps
        .iter()
        .map(|s| {
            let calls =
                s.tool_calls.iter().map(|c| (c.id.clone(), c.name.clone(), c.arguments.value().clone())).collect();
            let results = s.tool_results.iter().map(|r| (r.call_id.clone(), r.content.as_deref().cloned())).collect();
            (s.role, s.content.as_deref().cloned(), calls, results)
        })
        .collect()
}

#[test]
fn tau_bench_through_a_mapping_is_the_built_in_readers_conversation() {
    let file = real("tau_bench_v1/tb_airline.json");
    let m = mapped(&example("tau-bench-v1.toml"), file.clone());
    let r = report(&m, "tb_airline.json");
    assert_eq!(r.format.as_deref(), Some("mapping:tau-bench-v1"));
    assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (1, 1, 42, 12, 0));
    // The file itself reuses one call id for 11 calls: the same gap as the built-in reader.
    assert_eq!(r.gaps, counts(&[("duplicate_tool_call_id", 11)]));
    let native = read(&[file]);
    let (a, b) = (&m.trajectories[0], &native.trajectories[0]);
    assert_eq!(conversation(a), conversation(b));
    assert_eq!(
        (a.outcome.reward, a.outcome.status, a.outcome.verification),
        (Some(0.0), Status::Failure, Verification::SourceEvaluator)
    );
    assert_eq!((a.outcome.reward, a.outcome.status), (b.outcome.reward, b.outcome.status));
    assert_eq!((a.task.key.as_str(), a.task.key_source), ("h:a73908ba6a93bac6", TaskKeySource::InstructionHash));
    assert_eq!(a.task.instruction, b.task.instruction);
    assert_eq!(a.provenance.format, "mapping:tau-bench-v1");
    assert_eq!(a.provenance.format_version.as_ref().map(String::len), Some(12), "the mapping's digest");
    // What the mapping does not name is kept, not dropped.
    assert!(a.extra.contains_key("info") && a.extra.contains_key("trial"));
}

#[test]
fn tau2_simulations_through_a_mapping_link_every_result_by_id() {
    let dir = real("tau2");
    let m = mapped(&example("tau2-simulations.toml"), dir.clone());
    assert_eq!(m.reports.len(), 1);
    let r = &m.reports[0];
    assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (20, 20, 715, 215, 0));
    assert!(r.gaps.is_empty(), "every result answers a call by id: {:?}", r.gaps);
    let native = read(&[dir]);
    assert_eq!(native.trajectories.len(), 20);
    let results =
        |c: &Collected| c.trajectories.iter().flat_map(|t| &t.steps).map(|s| s.tool_results.len()).sum::<usize>();
    assert_eq!((results(&m), results(&native)), (215, 215));
    for (a, b) in m.trajectories.iter().zip(&native.trajectories) {
        assert_eq!(conversation(a), conversation(b), "{}", a.id);
        assert_eq!((a.outcome.reward, a.outcome.status), (b.outcome.reward, b.outcome.status), "{}", a.id);
        assert_eq!(a.task.id, b.task.id);
        assert_eq!(a.session_id, b.session_id);
        let tokens = |t: &Trajectory| -> Vec<Option<u64>> {
            t.steps.iter().map(|s| s.metrics.as_ref().and_then(|m| m.prompt_tokens)).collect()
        };
        assert_eq!(tokens(a), tokens(b), "{}", a.id);
    }
    let successes = m.trajectories.iter().filter(|t| t.outcome.status == Status::Success).count();
    assert_eq!(successes, native.trajectories.iter().filter(|t| t.outcome.status == Status::Success).count());
    // `usage` lost both mapped counts: its emptied object is not left behind in `extra`
    // (where it is null, as on the first message, the null stays).
    assert_eq!(m.trajectories[0].steps[0].extra.get("usage"), Some(&serde_json::Value::Null));
    let step = &m.trajectories[0].steps[1];
    assert_eq!(step.metrics.as_ref().and_then(|x| x.prompt_tokens), Some(2309));
    assert!(
        !step.extra.contains_key("usage") && step.extra.contains_key("raw_data"),
        "{:?}",
        step.extra.keys().collect::<Vec<_>>()
    );
}

#[test]
fn a_mapping_that_does_not_fit_names_the_path_that_failed() {
    let dir = tempfile::tempdir().unwrap();
    let file = real("tau_bench_v1/tb_airline.json");
    // `traj` is a list, not an object with `steps`.
    let m = mapped(&mapping_file(&dir, "name = \"x\"\n[record]\nmessages = \"traj.steps\"\n"), file.clone());
    assert_eq!(m.rejections.len(), 1);
    let p = &m.rejections[0].problems[0];
    assert_eq!((p.reason, p.json_path.as_str()), (Reason::SchemaViolation, "$.traj"));
    assert_eq!(p.message, "mapping path `traj.steps` needs an object at $.traj, found an array");
    // No such field at all.
    let m = mapped(&mapping_file(&dir, "name = \"x\"\n[record]\nmessages = \"conversation\"\n"), file.clone());
    let p = &m.rejections[0].problems[0];
    assert_eq!(
        (p.json_path.as_str(), p.message.as_str()),
        ("$.conversation", "no messages at mapping path `conversation`")
    );
    // A role the mapping does not know.
    let m = mapped(
        &mapping_file(&dir, "name = \"x\"\n[record]\nmessages = \"traj\"\n[message]\nrole = \"content\"\n"),
        file,
    );
    let p = &m.rejections[0].problems[0];
    assert_eq!((p.reason, p.json_path.as_str()), (Reason::InvalidValue, "$.traj[0].content"));
    assert!(p.message.starts_with("role \"# Airline Agent Policy"), "{}", p.message);
    assert!(p.message.ends_with("is not in the mapping's [message.roles]"), "{}", p.message);
}

/// Synthetic: no real file has string statuses, several records per JSON Lines file in an
/// in-house shape, quoted keys and a renamed role set together.
#[test]
fn status_values_roles_and_quoted_keys_in_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mapping = mapping_file(
        &dir,
        r#"
name = "acme"
[record]
messages = "log.turns"
task_id = "meta[\"task.id\"]"
model = "meta.model"
status = "result"
success_values = ["passed"]
failure_values = ["failed"]
[message]
role = "who"
content = "text"
tool_calls = "calls"
tool_call_id = "answers"
[message.roles]
human = "user"
bot = "assistant"
exec = "tool"
[tool_call]
id = "cid"
name = "fn"
arguments = "args"
"#,
    );
    let data = dir.path().join("runs.jsonl");
    let line = |result: &str| {
        format!(
            r#"{{"meta": {{"task.id": "t-7", "model": "m1"}}, "result": "{result}", "log": {{"turns": [{{"who": "human", "text": "list files"}}, {{"who": "bot", "text": null, "calls": [{{"cid": "c1", "fn": "ls", "args": "{{\"path\": \".\"}}"}}]}}, {{"who": "exec", "answers": "c1", "text": "a.txt"}}, {{"who": "bot", "text": "a.txt"}}]}}}}"#
        )
    };
    std::fs::write(&data, [line("passed"), line("failed"), line("crashed")].join("\n")).unwrap();
    let c = mapped(&mapping, data);
    assert_eq!(c.trajectories.len(), 3);
    let statuses: Vec<Status> = c.trajectories.iter().map(|t| t.outcome.status).collect();
    assert_eq!(statuses, [Status::Success, Status::Failure, Status::Unknown]);
    // An unlisted status stays unknown and is kept where the mapping looked for it.
    assert_eq!(c.trajectories[2].extra.get("result"), Some(&serde_json::json!("crashed")));
    assert_eq!(c.trajectories[2].outcome.verification, Verification::Unverified);
    let t = &c.trajectories[0];
    assert_eq!((t.task.key.as_str(), t.agent.model.as_deref()), ("acme/t-7", Some("m1")));
    assert_eq!(
        t.steps.iter().map(|s| s.role).collect::<Vec<_>>(),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(t.steps[1].tool_calls[0].arguments, serde_json::json!({"path": "."}));
    assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("c1"));
    assert!(t.gaps.is_empty());
    assert_eq!(t.steps[0].extra.get("role"), Some(&serde_json::json!("human")), "the source role is kept");
    assert_eq!(t.task.instruction.as_deref(), Some("list files"));
}

#[test]
fn a_broken_mapping_file_stops_the_read_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mapping = mapping_file(&dir, "name = \"x\"\n[record]\nsuccess = \"reward >= 1\"\n");
    let (files, _) = trajkit_formats::discover(&[real("tau_bench_v1")]);
    let opts = Options { format: Some(format!("mapping:{}", mapping.display())), ..Options::default() };
    let err = trajkit_formats::read_inputs(files, &opts, &mut Collected::default()).err().map(|e| e.to_string());
    let err = err.unwrap_or_default();
    assert!(
        err.starts_with("mapping ") && err.ends_with("`record.success` needs `record.reward` (the rule applies to it)"),
        "{err}"
    );
}

/// Synthetic: the ReAct step list (`{thought, action: {name, args}, observation}` items
/// without roles) that many in-house agents log; no real file of this shape was found
/// published. Each item is an assistant step whose inline call is answered by the item's own
/// observation (never by position across items).
#[test]
fn react_steps_with_inline_calls_and_their_observations() {
    let dir = tempfile::tempdir().unwrap();
    let mapping = mapping_file(
        &dir,
        r#"
name = "react"
[record]
messages = "steps"
instruction = "question"
[message]
default_role = "assistant"
content = "answer"
reasoning = "thought"
call_name = "action.name"
call_arguments = "action.args"
result = "observation"
"#,
    );
    let data = dir.path().join("runs.json");
    std::fs::write(
        &data,
        r#"{"question": "What is 15% of 47.83?", "steps": [
            {"thought": "Compute it.", "action": {"name": "calc", "args": {"expr": "47.83*0.15"}}, "observation": "7.1745"},
            {"thought": "Round.", "action": {"name": "round", "args": "{\"x\": 7.1745, \"n\": 2}", "note": "kept"}, "observation": "7.17"},
            {"thought": "Done.", "answer": "7.17"}
        ]}"#,
    )
    .unwrap();
    let c = mapped(&mapping, data);
    assert!(c.rejections.is_empty(), "{:?}", c.rejections);
    let t = &c.trajectories[0];
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::Assistant, Role::Tool, Role::Assistant, Role::Tool, Role::Assistant]);
    assert_eq!(t.steps[0].tool_calls[0].id.as_deref(), Some("inline-call-0"));
    assert_eq!(t.steps[1].tool_results[0].call_id.as_deref(), Some("inline-call-0"));
    assert_eq!(t.steps[2].tool_calls[0].arguments, serde_json::json!({"x": 7.1745, "n": 2}));
    assert_eq!(t.steps[3].tool_results[0].call_id.as_deref(), Some("inline-call-2"));
    assert_eq!(t.steps[2].extra.get("action"), Some(&serde_json::json!({"note": "kept"})));
    assert_eq!(t.steps[4].content.as_deref(), Some(&serde_json::json!("7.17")));
    assert_eq!(t.steps[0].reasoning.as_deref(), Some("Compute it."));
    assert!(t.steps[0].extra.is_empty(), "no role was stated, none is recorded: {:?}", t.steps[0].extra);
    assert!(t.gaps.is_empty(), "{:?}", t.gaps);
    assert_eq!(t.task.instruction.as_deref(), Some("What is 15% of 47.83?"));
}
