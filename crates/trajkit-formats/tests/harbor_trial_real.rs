//! Harbor job output: the Terminal-Bench/Harbor rollouts NeMo Gym publishes
//! (tests/fixtures/real/terminal_bench_harbor, read by the `gym` reader), Harbor trial
//! directories (`harbor-trial`) and Harbor's SFT traces export (`harbor-traces`).
//!
//! Expected figures were counted independently with python from the files (step grouping
//! of the Gym rules, call ids of `function_call` / `function_call_output` items, messages of
//! the traces rows), not copied from the program's output.
//!
//! Harbor publishes no real trial directory (`result.json` + `agent/trajectory.json`), so
//! the trial tests build directories in a temporary folder: `agent/trajectory.json` files
//! are byte copies of the real ATIF fixtures, and each `result.json` is SYNTHETIC, written
//! field by field after Harbor's public `TrialResult` model (src/harbor/models/trial/
//! result.py: id, task_name, trial_name, trial_uri, task_id, source, task_checksum, config,
//! agent_info{name, version, model_info{name, provider}}, agent_result (AgentContext:
//! n_input_tokens, n_cache_tokens, n_output_tokens, cost_usd, rollout_details, metadata),
//! verifier_result{rewards}, verifier_environment_mode, exception_info{exception_type,
//! exception_message, exception_traceback, occurred_at}, started_at, finished_at,
//! environment_setup, agent_setup, agent_execution, verifier, step_results), or taken
//! from the real TrialResult objects that the Gym file carries under `metadata`.

mod common;

use std::path::{Path, PathBuf};

use common::{counts, from_file, read, real, report};
use serde_json::{json, Value};
use trajkit_model::canonical::sha256_hex;
use trajkit_model::{Authorship, GapKind, Role, Status, TaskKeySource, Verification};

// -------------------------------------------------------------------------------------
// terminal_bench_harbor/example_output.jsonl: NeMo Gym rollouts of Harbor's Terminus-2.
// -------------------------------------------------------------------------------------

const ROLLOUTS: &str = "example_output.jsonl";

#[test]
fn gym_reads_the_harbor_agent_rollouts_with_exact_figures() {
    let c = read(&[real("terminal_bench_harbor")]);
    assert_eq!(c.reports.len(), 1, "only the rollouts file is a candidate (NOTICE.md is not)");
    let r = report(&c, ROLLOUTS);
    assert_eq!(r.format.as_deref(), Some("gym"));
    assert_eq!(
        (r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.duplicate_records, r.rejected),
        // steps: 25 + 35 + 35; calls: 10 + 23 + 22
        (3, 3, 0, 95, 55, 0, 0)
    );
    assert!(r.reasons.is_empty());
    // Unanswered: 1 + 8 + 7 second keystroke calls whose output is merged into the first
    // call's output; without call: 3 + 2 + 2 outputs with a made-up call id.
    assert_eq!(r.gaps, counts(&[("result_without_call", 7), ("unanswered_tool_call", 16)]));
    assert!(r.error.is_none() && r.part_of.is_none());
}

#[test]
fn harbor_agent_rollout_fields() {
    let c = read(&[real("terminal_bench_harbor").join(ROLLOUTS)]);
    let ts = from_file(&c, ROLLOUTS);
    assert_eq!(ts.len(), 3);
    let rewards: Vec<Option<f64>> = ts.iter().map(|t| t.outcome.reward).collect();
    assert_eq!(rewards, [Some(0.0), Some(1.0), Some(0.0)]);
    let t = ts[0];
    assert_eq!(t.provenance.line, Some(1));
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    assert_eq!(t.outcome.status, Status::Unknown);
    assert_eq!(t.task.id.as_deref(), Some("scientific::scientific_computing_task_0001"));
    assert_eq!(t.task.key, "gym/scientific::scientific_computing_task_0001");
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
    assert_eq!(t.agent.model.as_deref(), Some("nanov3"));
    assert_eq!(t.agent.name, None, "no agent_ref: the Harbor agent_info stays in extra.metadata");
    let m = t.metrics.as_ref().expect("usage");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(176436), Some(9455), Some(0)));
    // The Harbor TrialResult is kept whole.
    let md = &t.extra["metadata"];
    assert_eq!(md["task_name"], json!("scientific_computing_task_0001"));
    assert_eq!(md["verifier_result"], json!({"rewards": {"reward": 0.0}}));
    assert_eq!(md["agent_info"]["name"], json!("terminus-2-nemo-gym"));
    // Steps: user prompt, then assistant turns and terminal outputs.
    assert_eq!(t.steps.len(), 25);
    assert_eq!(t.steps[0].role, Role::User);
    assert_eq!((t.steps[1].role, t.steps[1].tool_calls.len()), (Role::Assistant, 1));
    assert_eq!(t.steps[1].tool_calls[0].id.as_deref(), Some("call_0_1"));
    assert_eq!(t.steps[1].tool_calls[0].name, "bash_command");
    assert_eq!(t.steps[1].tool_calls[0].arguments, json!({"keystrokes": "ls -la /app/\n", "duration": 0.1}));
    assert_eq!(t.steps[2].role, Role::Tool);
    assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("call_0_1"));
    let unanswered: Vec<&str> =
        t.gaps.iter().filter(|g| g.kind == GapKind::UnansweredToolCall).filter_map(|g| g.detail.as_deref()).collect();
    assert_eq!(unanswered, ["call_2_2"]);
    let orphans: Vec<&str> =
        t.gaps.iter().filter(|g| g.kind == GapKind::ResultWithoutCall).filter_map(|g| g.detail.as_deref()).collect();
    assert_eq!(orphans, ["call_87f635b1", "call_f9a22669", "call_95d20a69"]);
}

// -------------------------------------------------------------------------------------
// Harbor trial directories (synthetic result.json, real ATIF trajectories).
// -------------------------------------------------------------------------------------

fn atif_fixture(rel: &str) -> PathBuf {
    real("atif").join(rel)
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

fn write_json(path: &Path, v: &Value) -> Vec<u8> {
    let bytes = serde_json::to_vec_pretty(v).expect("json");
    write(path, &bytes);
    bytes
}

/// A synthetic Harbor TrialResult (every field of the public model) for the hello-world
/// task run by Terminus-2 on openai/gpt-4o, like the run of the invalid-LLM-JSON golden.
fn synthetic_result(trial: &str, rewards: Value, exception: Value) -> Value {
    json!({
        "id": "8f3c2a52-1d7e-4b8e-9a53-2b7f0c9d1e11",
        "task_name": "hello-world",
        "trial_name": trial,
        "trial_uri": format!("file:///jobs/2026-01-01__00-00-00/{trial}"),
        "task_id": {"path": "examples/tasks/hello-world"},
        "source": "examples",
        "task_checksum": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "config": {
            "task": {"path": "examples/tasks/hello-world", "git_url": null, "git_commit_id": null,
                     "overwrite": false, "download_dir": null, "source": "examples"},
            "trial_name": trial,
            "trials_dir": "/jobs/2026-01-01__00-00-00",
            "timeout_multiplier": 1.0,
            "agent": {"name": "terminus-2", "import_path": null, "model_name": "openai/gpt-4o",
                      "override_timeout_sec": null, "max_timeout_sec": null, "kwargs": {}},
            "environment": {"type": "docker", "force_build": false, "delete": true, "kwargs": {}},
            "verifier": {"override_timeout_sec": null, "max_timeout_sec": null, "disable": false},
            "job_id": "3d0c8a3e-5b0f-4a8e-8c55-4f8f4a3b9c21"
        },
        "agent_info": {"name": "terminus-2", "version": "2.0.0",
                       "model_info": {"name": "gpt-4o", "provider": "openai"}},
        "agent_result": {"n_input_tokens": 2417, "n_cache_tokens": 0, "n_output_tokens": 200,
                         "cost_usd": 0.0080425, "rollout_details": null, "metadata": {"n_episodes": 4}},
        "verifier_result": {"rewards": rewards},
        "verifier_environment_mode": "shared",
        "exception_info": exception,
        "started_at": "2026-01-01T00:00:01.000000Z",
        "finished_at": "2026-01-01T00:01:00.000000Z",
        "environment_setup": {"started_at": "2026-01-01T00:00:01.100000Z", "finished_at": "2026-01-01T00:00:10.000000Z"},
        "agent_setup": {"started_at": "2026-01-01T00:00:10.000000Z", "finished_at": "2026-01-01T00:00:12.000000Z"},
        "agent_execution": {"started_at": "2026-01-01T00:00:12.000000Z", "finished_at": "2026-01-01T00:00:50.000000Z"},
        "verifier": {"started_at": "2026-01-01T00:00:50.000000Z", "finished_at": "2026-01-01T00:00:59.000000Z"},
        "step_results": null
    })
}

fn exception(kind: &str, message: &str) -> Value {
    json!({"exception_type": kind, "exception_message": message,
           "exception_traceback": format!("Traceback (most recent call last):\n{kind}: {message}\n"),
           "occurred_at": "2026-01-01T00:00:50.000000Z"})
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn a_trial_directory_is_one_trajectory_with_the_trials_outcome() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let trial = tmp.path().join("hello-world__AbCdEfG");
    let result = write_json(
        &trial.join("result.json"),
        &synthetic_result("hello-world__AbCdEfG", json!({"reward": 1.0}), Value::Null),
    );
    let atif = std::fs::read(atif_fixture("terminus2-invalid-llm-json-v1.7.trajectory.json")).expect("fixture");
    write(&trial.join("agent/trajectory.json"), &atif);
    // Other files of a trial directory that are not read.
    write(&trial.join("config.json"), br#"{"trial_name": "hello-world__AbCdEfG"}"#);

    let c = read(&[tmp.path().to_path_buf()]);
    let paths: Vec<&str> = c.reports.iter().map(|r| r.path.as_str()).collect();
    let (traj_path, config_path, result_path) = (
        display(&trial.join("agent/trajectory.json")),
        display(&trial.join("config.json")),
        display(&trial.join("result.json")),
    );
    assert_eq!(paths, [traj_path.as_str(), config_path.as_str(), result_path.as_str()]);

    let r = report(&c, "result.json");
    assert_eq!(r.format.as_deref(), Some("harbor-trial"));
    assert_eq!(
        (r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.duplicate_records, r.rejected),
        (1, 1, 0, 5, 3, 0, 0)
    );
    assert!(r.reasons.is_empty() && r.gaps.is_empty() && r.part_of.is_none() && r.error.is_none());

    let t_report = report(&c, "trajectory.json");
    assert_eq!(t_report.part_of.as_deref(), Some(result_path.as_str()));
    assert_eq!((t_report.records, t_report.trajectories, t_report.steps), (0, 0, 0));
    assert!(t_report.error.is_none());
    // config.json is not a record of any family.
    assert_eq!(report(&c, "config.json").format, None);

    assert_eq!(c.trajectories.len(), 1);
    let t = &c.trajectories[0];
    assert_eq!(t.id, format!("harbor-trial-{}", &sha256_hex(&result)[..16]));
    assert_eq!(t.provenance.format, "harbor-trial");
    assert_eq!(t.provenance.path, result_path);
    assert_eq!(t.provenance.sha256, sha256_hex(&result));
    assert_eq!(t.provenance.document_index, Some(0));
    // Outcome: the verifier's reward; 1.0 without an exception is a pass.
    assert_eq!(t.outcome.reward, Some(1.0));
    assert!(t.outcome.reward_components.is_empty());
    assert_eq!(t.outcome.status, Status::Success);
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    // Task: Harbor's task name.
    assert_eq!(t.task.id.as_deref(), Some("hello-world"));
    assert_eq!(t.task.key, "harbor/hello-world");
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
    assert_eq!(t.task.environment.as_deref(), Some("examples"));
    assert!(t.task.instruction.as_deref().is_some_and(|i| i.starts_with("You are an AI assistant tasked")));
    // Agent: agent_info (model_info.name), which here differs from the ATIF model name.
    assert_eq!(t.agent.name.as_deref(), Some("terminus-2"));
    assert_eq!(t.agent.version.as_deref(), Some("2.0.0"));
    assert_eq!(t.agent.model.as_deref(), Some("gpt-4o"));
    assert_eq!(t.extra["trajectory"]["agent"]["model"], json!("openai/gpt-4o"));
    assert_eq!(t.extra["agent_info"], json!({"model_info": {"provider": "openai"}}));
    // Metrics: agent_result; the ATIF final metrics are kept under extra.trajectory.
    let m = t.metrics.as_ref().expect("metrics");
    assert_eq!(
        (m.prompt_tokens, m.cached_tokens, m.completion_tokens, m.cost_usd),
        (Some(2417), Some(0), Some(200), Some(0.0080425))
    );
    // The agent's execution (00:00:12 → 00:00:50), not the trial's setup and verification.
    assert_eq!(m.duration_seconds, Some(38.0));
    assert_eq!(t.extra["agent_result"], json!({"rollout_details": null, "metadata": {"n_episodes": 4}}));
    assert_eq!(t.extra["trajectory"]["metrics"]["prompt_tokens"], json!(2417));
    assert_eq!(t.extra["trajectory"]["path"], json!(traj_path));
    assert_eq!(t.extra["trajectory"]["sha256"], json!(sha256_hex(&atif)));
    assert_eq!(t.extra["trajectory"]["format_version"], json!("ATIF-v1.7"));
    assert_eq!(t.extra["trajectory"]["extra"], json!({"agent": {"extra": {"parser": "json"}}}));
    assert_eq!(t.extra["exception_info"], Value::Null, "a null exception_info stays as null");
    assert_eq!(t.extra["trial_name"], json!("hello-world__AbCdEfG"));
    assert_eq!(t.extra["verifier_environment_mode"], json!("shared"));
    // Steps mapped from the ATIF file (1 user step, 4 agent steps).
    assert_eq!(t.session_id.as_deref(), Some("NORMALIZED_SESSION_ID"));
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Assistant, Role::Assistant, Role::Assistant]);
    let sm = t.steps[1].metrics.as_ref().expect("step metrics");
    assert_eq!((sm.prompt_tokens, sm.completion_tokens), (Some(682), Some(100)));
    assert!(t.steps[1].tool_calls.is_empty());
    let calls: Vec<usize> = t.steps.iter().map(|s| s.tool_calls.len()).collect();
    assert_eq!(calls, [0, 0, 1, 1, 1]);
    assert!(t.gaps.is_empty());
}

#[test]
fn subagent_files_of_the_trajectory_are_part_of_the_result() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let trial = tmp.path().join("hello-world__Summ");
    write_json(&trial.join("result.json"), &synthetic_result("hello-world__Summ", json!({"reward": 0.0}), Value::Null));
    let src = atif_fixture("terminus2-context-summarization-v1.7");
    let names = [
        "trajectory.json",
        "trajectory.summarization-1-answers.json",
        "trajectory.summarization-1-questions.json",
        "trajectory.summarization-1-summary.json",
    ];
    for n in names {
        write(&trial.join("agent").join(n), &std::fs::read(src.join(n)).expect("fixture"));
    }
    let c = read(&[tmp.path().to_path_buf()]);
    let result_path = display(&trial.join("result.json"));
    assert_eq!(c.reports.len(), 5);
    // The trajectory is part of the result; its subagent files are reported as part of the
    // file that references them (the ATIF reader claims them first, in input order).
    let traj_path = display(&trial.join("agent/trajectory.json"));
    for n in names {
        let r = report(&c, n);
        let of = if n == "trajectory.json" { &result_path } else { &traj_path };
        assert_eq!(r.part_of.as_deref(), Some(of.as_str()), "{n}");
        assert_eq!((r.records, r.trajectories, r.rejected), (0, 0, 0), "{n}");
    }
    let r = report(&c, "result.json");
    assert_eq!((r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.rejected), (1, 1, 3, 10, 7, 0));
    assert!(r.gaps.is_empty());
    let t = &c.trajectories[0];
    assert_eq!(t.subagents.len(), 3);
    assert_eq!((t.outcome.reward, t.outcome.status), (Some(0.0), Status::Failure));
}

#[test]
fn trials_without_trajectory_with_exceptions_or_several_rewards() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // (a) A real Harbor TrialResult: the `metadata` of line 2 of the Gym rollouts file.
    let line2 = std::fs::read_to_string(real("terminal_bench_harbor").join(ROLLOUTS)).expect("fixture");
    let row: Value = serde_json::from_str(line2.lines().nth(1).expect("line 2")).expect("json");
    write_json(&tmp.path().join("a/result.json"), &row["metadata"]);
    // (b) The agent timed out; the verifier still ran and gave 0.
    write_json(
        &tmp.path().join("b/result.json"),
        &synthetic_result(
            "b",
            json!({"reward": 0.0}),
            exception("AgentTimeoutError", "Agent execution timed out after 900.0 seconds"),
        ),
    );
    // (c) Reward 1.0 but the trial raised: Harbor's rules disagree, so unknown.
    write_json(
        &tmp.path().join("c/result.json"),
        &synthetic_result("c", json!({"reward": 1.0}), exception("RewardFileNotFoundError", "reward.txt not found")),
    );
    // (d) Several named rewards.
    write_json(
        &tmp.path().join("d/result.json"),
        &synthetic_result("d", json!({"reward": 0.5, "style": 1}), Value::Null),
    );
    // (e) No verifier result at all.
    let mut e = synthetic_result("e", Value::Null, exception("RuntimeError", "boom"));
    e["verifier_result"] = Value::Null;
    write_json(&tmp.path().join("e/result.json"), &e);

    let c = read(&[tmp.path().to_path_buf()]);
    assert_eq!(c.reports.len(), 5);
    let expect_gaps: [&[(&str, u64)]; 5] = [
        &[("no_steps", 1)],
        &[("incomplete_generation", 1), ("no_steps", 1)],
        &[("no_steps", 1)],
        &[("no_steps", 1)],
        &[("no_steps", 1)],
    ];
    for (r, gaps) in c.reports.iter().zip(expect_gaps) {
        assert_eq!(r.format.as_deref(), Some("harbor-trial"), "{}", r.path);
        assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (1, 1, 0, 0, 0), "{}", r.path);
        assert_eq!(r.gaps, counts(gaps), "{}", r.path);
    }
    let t = &c.trajectories[0];
    assert_eq!(t.task.id.as_deref(), Some("scientific_computing_task_0002"));
    assert_eq!(t.task.key, "harbor/scientific_computing_task_0002");
    assert_eq!(t.task.environment.as_deref(), Some("scientific_computing"));
    assert_eq!(t.task.instruction, None);
    assert_eq!((t.outcome.reward, t.outcome.status), (Some(1.0), Status::Success));
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    assert_eq!(t.agent.name.as_deref(), Some("terminus-2-nemo-gym"));
    assert_eq!(t.agent.version.as_deref(), Some("2.0.0"));
    assert_eq!(t.agent.model, None, "model_info is null");
    let m = t.metrics.as_ref().expect("metrics");
    assert_eq!(
        (m.prompt_tokens, m.cached_tokens, m.completion_tokens, m.cost_usd),
        (Some(190127), Some(0), Some(9042), None)
    );
    // Real TrialResult: agent_execution 06:45:19.348047 → 06:47:18.387485.
    assert_eq!(m.duration_seconds.map(|s| (s * 1e6).round() / 1e6), Some(119.039438));
    assert_eq!(t.extra["agent_result"]["cost_usd"], Value::Null);
    assert_eq!(t.extra["agent_result"]["metadata"]["n_episodes"], json!(17));
    assert_eq!(t.extra["agent_info"], json!({"model_info": null}));
    assert_eq!(t.gaps[0].detail.as_deref(), Some("agent/trajectory.json not found"));

    let t = &c.trajectories[1];
    assert_eq!((t.outcome.reward, t.outcome.status), (Some(0.0), Status::Failure));
    assert_eq!(t.gaps[0].kind, GapKind::IncompleteGeneration);
    assert_eq!(t.gaps[0].detail.as_deref(), Some("AgentTimeoutError: Agent execution timed out after 900.0 seconds"));
    assert_eq!(t.extra["exception_info"]["exception_type"], json!("AgentTimeoutError"));

    let t = &c.trajectories[2];
    assert_eq!((t.outcome.reward, t.outcome.status), (Some(1.0), Status::Unknown));
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);

    let t = &c.trajectories[3];
    assert_eq!((t.outcome.reward, t.outcome.status), (Some(0.5), Status::Unknown));
    let comps: Vec<(&str, f64)> = t.outcome.reward_components.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(comps, [("reward", 0.5), ("style", 1.0)]);

    let t = &c.trajectories[4];
    assert_eq!((t.outcome.reward, t.outcome.status), (None, Status::Unknown));
    assert_eq!(t.outcome.verification, Verification::Unverified);
    assert_eq!(t.extra["verifier_result"], Value::Null);
}

#[test]
fn an_invalid_atif_trajectory_rejects_the_trial() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let trial = tmp.path().join("t");
    write_json(&trial.join("result.json"), &synthetic_result("t", json!({"reward": 1.0}), Value::Null));
    let mut atif: Value = serde_json::from_slice(
        &std::fs::read(atif_fixture("terminus2-invalid-llm-json-v1.7.trajectory.json")).expect("fixture"),
    )
    .expect("json");
    atif["steps"][1]["step_id"] = json!(7);
    write_json(&trial.join("agent/trajectory.json"), &atif);
    // A result.json that breaks the model.
    write(&tmp.path().join("u/result.json"), br#"{"task_name": 3, "trial_name": "u", "trial_uri": "file:///u"}"#);

    let c = read(&[tmp.path().to_path_buf()]);
    let r = report(&c, "t/result.json");
    assert_eq!((r.records, r.trajectories, r.rejected), (1, 0, 1));
    assert_eq!(r.reasons, counts(&[("non_sequential_step_id", 1)]));
    let rej = &c.rejections[0];
    assert!(rej.problems[0].json_path.starts_with(&format!("{}:$", display(&trial.join("agent/trajectory.json")))));
    assert_eq!(report(&c, "trajectory.json").part_of.as_deref(), Some(display(&trial.join("result.json")).as_str()));
    let r = report(&c, "u/result.json");
    assert_eq!(r.format.as_deref(), Some("harbor-trial"));
    assert_eq!(r.reasons, counts(&[("schema_violation", 1)]));
    assert_eq!(c.rejections[1].problems[0].json_path, "$.task_name");
}

// -------------------------------------------------------------------------------------
// Harbor traces export (real golden file of Harbor's exporter).
// -------------------------------------------------------------------------------------

const TRACES: &str = "harbor-exports/terminus2-invalid-llm-json.traces.json";

#[test]
fn traces_export_rows_are_records() {
    let path = atif_fixture(TRACES);
    let c = read(std::slice::from_ref(&path));
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("harbor-traces"));
    assert_eq!(
        (r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.duplicate_records, r.rejected),
        // Rows hold 2, 4, 6 and 8 messages; the assistant text has no <tool_call> blocks.
        (4, 4, 0, 20, 0, 0, 0)
    );
    assert!(r.reasons.is_empty() && r.gaps.is_empty() && r.part_of.is_none() && r.error.is_none());
    let ts = &c.trajectories;
    let episodes: Vec<&Value> = ts.iter().map(|t| &t.extra["episode"]).collect();
    assert_eq!(episodes, [&json!("episode-0"), &json!("episode-1"), &json!("episode-2"), &json!("episode-3")]);
    let t = &ts[3];
    assert_eq!(t.provenance.format, "harbor-traces");
    assert_eq!(t.provenance.document_index, Some(3));
    assert_eq!(t.agent.name.as_deref(), Some("terminus-2"));
    assert_eq!(t.agent.model.as_deref(), Some("openai/gpt-4o"));
    assert_eq!(t.extra["model_provider"], json!("openai"));
    assert_eq!(t.extra["run_id"], json!("hello-world__NORMALIZED"));
    assert_eq!(t.task.id.as_deref(), Some("harbor/hello-world"));
    assert_eq!(t.task.key, "harbor/harbor/hello-world");
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
    assert_eq!((t.outcome.reward, t.outcome.status), (Some(1.0), Status::Success));
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    use Role::{Assistant as A, User as U};
    assert_eq!(roles, [U, A, U, A, U, A, U, A]);
    assert!(t.steps.iter().filter(|s| s.role == U).all(|s| s.authorship == Authorship::Unknown));
    assert!(t.steps.iter().filter(|s| s.role == A).all(|s| s.authorship == Authorship::Declared));
    let last = t.steps[7].content.as_deref().and_then(Value::as_str).unwrap_or_default();
    assert!(last.starts_with("<think>The task was already marked as complete"));
    assert!(t.task.instruction.as_deref().is_some_and(|i| i.starts_with("You are an AI assistant tasked")));
}

#[test]
fn traces_embedded_tool_calls_and_exception_results() {
    // Synthetic rows in the exporter's shape (no real export shows these).
    let tmp = tempfile::tempdir().expect("tempdir");
    let rows = json!([
        {"conversations": [
            {"role": "user", "content": "Create hello.txt"},
            {"role": "assistant", "content": "<think>easy</think>\nI will write it.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"cmd\": \"echo hi > hello.txt\"}}\n</tool_call>\n<tool_call>\nnot json\n</tool_call>"}
         ],
         "agent": "terminus-2", "model": "unknown-model", "model_provider": "unknown-provider", "date": "",
         "task": "hello-world", "episode": "episode-0", "run_id": "job-1", "trial_name": "hello-world__x",
         "result": "AgentTimeoutError"},
        {"conversations": [], "agent": "terminus-2", "episode": "episode-1", "run_id": "job-1",
         "trial_name": "hello-world__x", "task": "hello-world", "result": "0.5"},
        {"conversations": [{"role": "user", "content": "x"}], "agent": "terminus-2", "episode": "episode-1",
         "run_id": "job-1", "trial_name": "hello-world__x", "task": "hello-world", "result": "0.0"}
    ]);
    let p = tmp.path().join("x.traces.json");
    write_json(&p, &rows);
    let c = read(&[p]);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("harbor-traces"));
    assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (3, 2, 2, 1, 1));
    assert_eq!(r.reasons, counts(&[("conflicting_rollout", 1)]));
    assert_eq!(r.gaps, counts(&[("invalid_tool_arguments", 1), ("no_steps", 1)]));
    let t = &c.trajectories[0];
    let call = &t.steps[1].tool_calls[0];
    assert_eq!(
        (call.name.as_str(), call.arguments.value(), call.text_embedded, call.id.as_deref()),
        ("bash", &json!({"cmd": "echo hi > hello.txt"}), true, None)
    );
    assert_eq!(t.agent.model, None);
    assert_eq!(t.extra["model"], json!("unknown-model"));
    assert_eq!((t.outcome.reward, t.outcome.status), (None, Status::Unknown));
    assert_eq!(t.outcome.verification, Verification::Unverified);
    assert_eq!(t.extra["result"], json!("AgentTimeoutError"));
    let t = &c.trajectories[1];
    assert_eq!((t.outcome.reward, t.outcome.status), (Some(0.5), Status::Unknown));
}
