//! tau2-bench and tau-bench (v1) readers on real published results
//! (tests/fixtures/real/tau2, tests/fixtures/real/tau_bench_v1).
//!
//! Expected figures were computed independently with Python from the fixture files.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_figures, counts, from_file, read, real, report};
use serde_json::{json, Value};
use trajkit_model::{Authorship, Role, Status, TaskKeySource, Verification};

const TAU2_FILE: &str = "2025-08-10T02:44:06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json";

type Row = (&'static str, &'static str, u64, u64, u64, u64, u64, u64, &'static [(&'static str, u64)]);

/// family dir, file, records, trajectories, steps, tool_calls, duplicate_records, rejected, gaps.
const FIGURES: &[Row] = &[
    ("tau2", TAU2_FILE, 20, 20, 715, 215, 0, 0, &[]),
    ("tau_bench_v1", "tb_airline.json", 1, 1, 42, 12, 0, 0, &[("duplicate_tool_call_id", 11)]),
];

#[test]
fn every_real_tau_file_has_its_exact_figures() {
    for &(dir, name, records, trajectories, steps, tool_calls, dups, rejected, gaps) in FIGURES {
        let c = read(&[real(dir)]);
        assert_eq!(c.reports.len(), 1, "{dir}: one report per fixture file");
        let family = if dir == "tau2" { "tau2" } else { "tau-bench" };
        let want = (records, trajectories, 0, steps, tool_calls, dups, rejected);
        assert_figures(report(&c, name), name, family, want, &[], gaps);
    }
}

#[test]
fn tau2_simulations_are_records_with_task_key_outcome_and_context() {
    let c = read(&[real("tau2")]);
    let ts = from_file(&c, TAU2_FILE);
    assert_eq!(ts.len(), 20);
    let t = ts[0];
    assert_eq!(t.id, "tau2-40a5cb152089f87c");
    assert_eq!(t.provenance.document_index, Some(0));
    assert_eq!(ts[19].id, "tau2-60d01fff898c4899");
    assert_eq!(ts[19].provenance.document_index, Some(19));
    assert_eq!(t.session_id.as_deref(), Some("ed931b77-75ae-4289-8aab-9ee521d35703"));
    let task_id = "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]";
    assert_eq!(t.task.id.as_deref(), Some(task_id));
    assert_eq!(t.task.key, format!("telecom/{task_id}"));
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
    assert_eq!(t.task.environment.as_deref(), Some("telecom"));
    // str(task.user_scenario) as tau2 hands it to the user simulator (persona is null in
    // this run): 1616 characters, SHA-256 a7a583bd86a3809d... (python textwrap).
    let instruction = t.task.instruction.as_deref().unwrap_or_default();
    assert!(
        instruction
            .starts_with("Instructions:\n\tDomain: telecom\n\tReason for call:\n\t\tYou mobile data is not working"),
        "{instruction}"
    );
    assert_eq!(instruction.chars().count(), 1616);
    assert_eq!(&trajkit_model::canonical::sha256_hex(instruction.as_bytes())[..16], "a7a583bd86a3809d");
    // The record's own task definition, whole (description, ticket, user_scenario,
    // initial_state, evaluation_criteria).
    let task = t.extra["task"].as_object().expect("extra.task");
    let keys: Vec<&str> = task.keys().map(String::as_str).collect();
    assert_eq!(keys, ["description", "evaluation_criteria", "id", "initial_state", "ticket", "user_scenario"]);
    assert_eq!(task["id"], json!(task_id));
    assert!(task["description"].get("purpose").is_some());
    assert!(ts.iter().all(|t| t.extra["task"]["id"] == json!(t.task.id)), "each record carries its own task");
    assert_eq!(t.extra.get("trial"), Some(&json!(0)));
    assert_eq!(t.extra.get("termination_reason"), Some(&json!("user_stop")));
    assert_eq!((t.agent.name.as_deref(), t.agent.model.as_deref()), (Some("llm_agent"), Some("gpt-4o")));
    // Outcome: reward 0.0 → failure by tau2's own rule; the breakdown is the components.
    assert_eq!(t.outcome.reward, Some(0.0));
    assert_eq!(t.outcome.status, Status::Failure);
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    assert_eq!(t.outcome.reward_components.get("ENV_ASSERTION"), Some(&0.0));
    assert_eq!(t.extra["reward_info"]["db_check"], json!({"db_match": false, "db_reward": 0.0}));
    assert_eq!(ts[19].outcome.status, Status::Success);
    let successes = ts.iter().filter(|t| t.outcome.status == Status::Success).count();
    assert_eq!(successes, 14, "14 of 20 rewards are 1.0");
    // Costs: the agent's is the run cost, the user simulator's stays named.
    let m = t.metrics.as_ref().expect("costs");
    assert_eq!(m.cost_usd, Some(0.13041750000000002));
    assert_eq!(m.extra.get("user_cost"), Some(&json!(0.07259000000000002)));
    // The simulation's `duration` is the run's wall clock; start and end times stay in extra.
    assert_eq!(m.duration_seconds, Some(230.32971491804346));
    assert!(!t.extra.contains_key("duration"));
    assert_eq!(t.extra["start_time"], json!("2025-08-10T02:44:06.547392"));
    // The tau2 commit that ran the simulations is the environment version.
    assert_eq!(t.task.environment_version.as_deref(), Some("40f46d3540dc95aca145ddecb0464fdd9a1e8c15"));
    // The run info (long texts left out) travels with each record.
    assert_eq!(t.extra["results_info"]["info"]["user_info"]["llm"], json!("gpt-4o"));
    assert!(t.extra["results_info"]["info"]["environment_info"].get("policy").is_none());
}

#[test]
fn tau2_agent_and_user_tool_calls_pair_by_id() {
    let c = read(&[real("tau2")]);
    let t = from_file(&c, TAU2_FILE)[0];
    // The agent's call and its result.
    let call = &t.steps[4].tool_calls[0];
    assert_eq!(t.steps[4].role, Role::Assistant);
    assert_eq!(call.id.as_deref(), Some("call_fRC0zgwYJWrYzwWQcecwmdez"));
    assert_eq!(
        (call.name.as_str(), call.arguments.value()),
        ("get_customer_by_phone", &json!({"phone_number": "555-123-2002"}))
    );
    assert_eq!(call.extra.get("requestor"), Some(&json!("assistant")));
    let result = &t.steps[5].tool_results[0];
    assert_eq!(t.steps[5].role, Role::Tool);
    assert_eq!(result.call_id.as_deref(), Some("call_fRC0zgwYJWrYzwWQcecwmdez"));
    assert!(result
        .content
        .as_deref()
        .and_then(Value::as_str)
        .is_some_and(|s| s.starts_with("{\"customer_id\": \"C1001\"")));
    // The simulated user's calls: on a user step, requestor "user", answered by id.
    let user = &t.steps[13];
    assert_eq!(user.role, Role::User);
    assert_eq!(user.model.as_deref(), Some("gpt-4o"), "the user simulator's model");
    assert_eq!(user.authorship, Authorship::Unknown, "a simulated user, not a person");
    // 263 user messages in the 20 simulations (python): every one is marked.
    let c_all = from_file(&c, TAU2_FILE);
    let users: Vec<Authorship> =
        c_all.iter().flat_map(|t| &t.steps).filter(|s| s.role == Role::User).map(|s| s.authorship).collect();
    assert_eq!(users.len(), 263);
    assert!(users.iter().all(|a| *a == Authorship::Unknown));
    let names: Vec<(&str, Option<&Value>)> =
        user.tool_calls.iter().map(|c| (c.name.as_str(), c.extra.get("requestor"))).collect();
    assert_eq!(
        names,
        [("check_status_bar", Some(&json!("user"))), ("check_network_mode_preference", Some(&json!("user")))]
    );
    let r = &t.steps[14].tool_results[0];
    assert_eq!(r.call_id.as_deref(), Some("call_6jiAjeCGL3WrhM7KR1f39eq4"));
    assert_eq!(r.extra.get("requestor"), Some(&json!("user")));
    assert_eq!(r.content.as_deref(), Some(&json!("Status Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%")));
    assert_eq!(t.steps[14].source_id, Some(json!(14)), "turn_idx");
    // Per-message usage and cost.
    let m = t.steps[1].metrics.as_ref().expect("usage");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cost_usd), (Some(2309), Some(39), Some(0.0032825000000000003)));
    assert!(t.gaps.is_empty());
}

/// Builds tau2's directory layout (`results.json` + `simulations/<id>.json`) from the real
/// results document, as `Results.save(format="dir")` writes it (recreated, not published).
fn recreate_dir_layout(root: &Path) -> PathBuf {
    let bytes = std::fs::read(real("tau2").join(TAU2_FILE)).expect("fixture");
    let Value::Object(mut doc) = serde_json::from_slice::<Value>(&bytes).expect("json") else { panic!("object") };
    let Some(Value::Array(sims)) = doc.remove("simulations") else { panic!("simulations") };
    let run = root.join("run");
    std::fs::create_dir_all(run.join("simulations")).expect("mkdir");
    let index: Vec<Value> = sims
        .iter()
        .map(|s| {
            json!({"id": s["id"], "task_id": s["task_id"], "trial": s["trial"],
            "reward": s["reward_info"]["reward"], "termination_reason": s["termination_reason"],
            "agent_cost": s["agent_cost"], "duration": s["duration"]})
        })
        .collect();
    doc.insert("simulation_index".into(), Value::Array(index));
    std::fs::write(run.join("results.json"), serde_json::to_vec_pretty(&doc).expect("ser")).expect("write");
    for s in &sims {
        let id = s["id"].as_str().expect("id");
        let path = run.join("simulations").join(format!("{id}.json"));
        std::fs::write(path, serde_json::to_vec_pretty(s).expect("ser")).expect("write");
    }
    run
}

#[test]
fn tau2_directory_layout_reads_each_simulation_file_with_the_run_context() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = recreate_dir_layout(tmp.path());
    let c = read(std::slice::from_ref(&run));
    assert_eq!(c.reports.len(), 21);
    let results = report(&c, "results.json");
    assert_eq!(results.format.as_deref(), Some("tau2"));
    assert!(results.part_of.as_deref().is_some_and(|p| p.contains("/simulations/")), "{results:?}");
    assert_eq!(results.records, 0);
    let sims: Vec<_> = c.reports.iter().filter(|r| r.path.contains("/simulations/")).collect();
    assert_eq!(sims.len(), 20);
    assert!(sims.iter().all(|r| r.format.as_deref() == Some("tau2") && r.records == 1 && r.trajectories == 1));
    assert_eq!(sims.iter().map(|r| (r.steps, r.tool_calls)).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1)), (715, 215));

    // Same content as the monolithic document: same task key, instruction, outcome, digest.
    let mono = read(&[real("tau2")]);
    for t in &c.trajectories {
        let m = mono.trajectories.iter().find(|m| m.session_id == t.session_id).expect("same simulation");
        assert_eq!(t.task, m.task);
        assert_eq!(t.agent, m.agent);
        assert_eq!(t.outcome, m.outcome);
        assert_eq!(t.content_digest, m.content_digest, "equal content, equal digest");
        assert_ne!(t.id, m.id, "different bytes, different id");
    }

    // A simulation file read alone (results.json given separately is not needed on the
    // command line: the reader finds it next to simulations/).
    let one = std::fs::read_dir(run.join("simulations")).expect("dir").filter_map(Result::ok).next().expect("a file");
    let c1 = read(&[one.path()]);
    assert!(c1.trajectories[0].task.instruction.is_some());
}

#[test]
fn tau2_lone_simulation_without_results_has_no_domain_synthetic() {
    // Synthetic (no real file shows it): one simulation file with no results.json, and an
    // infrastructure error with a reward.
    let tmp = tempfile::tempdir().expect("tempdir");
    let sim = json!({"id": "s1", "task_id": 7, "timestamp": "t", "start_time": "a", "end_time": "b",
        "duration": 1.0, "termination_reason": "infrastructure_error", "reward_info": {"reward": 1.0},
        "messages": [{"role": "assistant", "content": "Hi", "tool_calls": [{"id": "c1", "name": "f",
        "arguments": "not json", "requestor": "assistant"}]}, {"role": "user", "content": "Thanks"}], "trial": 0});
    let path = tmp.path().join("sim.json");
    std::fs::write(&path, serde_json::to_vec(&sim).expect("ser")).expect("write");
    let c = read(&[path]);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("tau2"));
    assert_eq!(
        r.gaps,
        counts(&[("incomplete_generation", 1), ("invalid_tool_arguments", 1), ("unanswered_tool_call", 1)])
    );
    let t = &c.trajectories[0];
    assert_eq!((t.task.key.as_str(), t.task.instruction.as_deref()), ("?/7", None));
    assert_eq!(t.task.environment, None);
    assert_eq!(
        (t.outcome.reward, t.outcome.status),
        (Some(1.0), Status::Unknown),
        "tau2 excludes infrastructure errors"
    );
    assert_eq!(t.steps[0].tool_calls[0].arguments, json!("not json"));
    // Without run info the user turn is still marked (no simulator model known).
    assert_eq!(
        (t.steps[1].role, t.steps[1].authorship, t.steps[1].model.as_deref()),
        (Role::User, Authorship::Unknown, None)
    );
    assert!(!t.extra.contains_key("task"));
}

#[test]
fn tau2_task_definitions_and_personas_synthetic() {
    // Synthetic (the real run has no persona): a results document whose task has a persona
    // and plain-string instructions, read twice (the context cache is reused), then changed
    // on disk (a new context is built).
    let tmp = tempfile::tempdir().expect("tempdir");
    let doc = |persona: &str| {
        json!({"timestamp": "t", "info": {"environment_info": {"domain_name": "retail"}, "user_info": {"llm": "u"}},
            "tasks": [{"id": "7", "description": {"purpose": "p"}, "user_scenario": {"persona": persona,
                "instructions": "Return\nthe item."}, "ticket": "tk", "initial_state": null,
                "evaluation_criteria": {"actions": []}}],
            "simulations": [{"id": "s1", "task_id": "7", "start_time": "a", "end_time": "b", "termination_reason": "user_stop",
                "messages": [{"role": "assistant", "content": "Hi"}, {"role": "user", "content": "Hello"}]}]})
    };
    let path = tmp.path().join("results.json");
    std::fs::write(&path, serde_json::to_vec(&doc("Terse.")).expect("ser")).expect("write");
    for _ in 0..2 {
        let c = read(std::slice::from_ref(&path));
        let t = &c.trajectories[0];
        assert_eq!(t.task.instruction.as_deref(), Some("Persona:\n\tTerse.\nInstructions:\n\tReturn\n\tthe item."));
        assert_eq!(t.extra["task"]["ticket"], json!("tk"));
        assert_eq!(t.extra["task"]["initial_state"], json!(null));
        assert_eq!((t.steps[1].authorship, t.steps[1].model.as_deref()), (Authorship::Unknown, Some("u")));
    }
    std::fs::write(&path, serde_json::to_vec(&doc("Verbose and longer.")).expect("ser")).expect("write");
    let c = read(std::slice::from_ref(&path));
    assert!(c.trajectories[0].task.instruction.as_deref().is_some_and(|i| i.contains("Verbose")));
}

#[test]
fn tau_bench_result_maps_task_outcome_and_calls() {
    let c = read(&[real("tau_bench_v1")]);
    let t = from_file(&c, "tb_airline.json")[0];
    assert_eq!(t.id, "tau-bench-791da314546d3b0d");
    assert_eq!(t.task.id.as_deref(), Some("0"));
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert!(t.task.key.starts_with("h:") && t.task.key.len() == 18);
    assert!(t.task.instruction.as_deref().is_some_and(|i| i.starts_with("You are mia_li_3668.")));
    assert_eq!(t.extra.get("trial"), Some(&json!(0)));
    assert_eq!((t.outcome.reward, t.outcome.status), (Some(0.0), Status::Failure));
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    assert_eq!(t.outcome.reward_components.get("r_actions"), Some(&0.0));
    assert_eq!(t.metrics.as_ref().and_then(|m| m.extra.get("user_cost")), Some(&json!(0.8999999999999999)));
    assert_eq!(t.extra["info"]["source"], json!("user"));
    let roles: Vec<Role> = t.steps[..6].iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::User, Role::Assistant, Role::Tool]);
    // The 9 user messages (python) come from the user simulation: authorship unknown.
    let users: Vec<Authorship> = t.steps.iter().filter(|s| s.role == Role::User).map(|s| s.authorship).collect();
    assert_eq!(users, [Authorship::Unknown; 9]);
    let call = &t.steps[4].tool_calls[0];
    assert_eq!((call.id.as_deref(), call.name.as_str()), (Some("0"), "get_user_details"));
    assert_eq!(call.arguments, json!({"user_id": "mia_li_3668"}));
    let r = &t.steps[5].tool_results[0];
    assert_eq!(r.call_id.as_deref(), Some("0"));
    assert_eq!(r.extra.get("name"), Some(&json!("get_user_details")));
    // Every call reuses id "0": flagged once per reuse.
    assert_eq!(t.gaps.len(), 11);
    assert_eq!(t.steps.last().and_then(|s| s.content.clone()), Some(json!(" ###STOP###")).map(Into::into));
}

#[test]
fn tau_bench_results_array_is_split_synthetic() {
    // Synthetic: run.py's own output is a JSON array of results (the fixture is one object).
    let tmp = tempfile::tempdir().expect("tempdir");
    let row = |task: u64, reward: f64| {
        json!({"task_id": task, "reward": reward, "info": {"task": {"instruction": format!("task {task}")}},
            "traj": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": null, "tool_calls":
            [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "name": "f", "content": "ok"}], "trial": 0})
    };
    let path = tmp.path().join("results.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&json!([row(1, 1.0), row(2, 0.5)])).expect("ser")).expect("w");
    let c = read(&[path]);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("tau-bench"));
    assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls), (2, 2, 6, 2));
    assert!(r.gaps.is_empty());
    let statuses: Vec<Status> = c.trajectories.iter().map(|t| t.outcome.status).collect();
    assert_eq!(statuses, [Status::Success, Status::Failure]);
    assert_eq!(c.trajectories[1].provenance.document_index, Some(1));
    assert_eq!(c.trajectories[0].steps[1].tool_calls[0].arguments, json!({"a": 1}));
}
