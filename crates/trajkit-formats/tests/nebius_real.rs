//! nebius SWE-agent reader on the real ADP raw export (tests/fixtures/real/nebius_swe_agent).
//! Figures were computed independently with Python from the file.

mod common;

use common::{assert_figures, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Role, Status, TaskKeySource, Verification};

const FILE: &str = "adp_nebius_sample_raw.json";

#[test]
fn the_real_file_has_its_exact_figures() {
    let c = read(&[real("nebius_swe_agent")]);
    assert_eq!(c.reports.len(), 1);
    // Each run ends with submit, never answered.
    let gaps = [("unanswered_tool_call", 5)];
    assert_figures(report(&c, FILE), FILE, "nebius", (5, 5, 0, 103, 49, 0, 0), &[], &gaps);
}

#[test]
fn record_fields() {
    let c = read(&[real("nebius_swe_agent")]);
    let ts = from_file(&c, FILE);
    let ids: Vec<&str> = ts.iter().filter_map(|t| t.task.id.as_deref()).collect();
    assert_eq!(
        ids,
        [
            "tomerfiliba__plumbum-366",
            "tempoCollaboration__OQuPy-74",
            "marshmallow-code__apispec-811",
            "brightway-lca__brightway2-analyzer-19",
            "ReviewNB__treon-25"
        ]
    );
    let t = ts[0];
    assert_eq!(t.id, "nebius-a4c99113b6647d62");
    assert_eq!(t.task.key, "tomerfiliba__plumbum-366");
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
    assert_eq!(t.extra["instance_id"], json!("tomerfiliba__plumbum-366_17"));
    assert_eq!(t.extra["exit_status"], json!("submitted"));
    assert!(t.extra.contains_key("generated_patch") && t.extra.contains_key("eval_logs"));
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Success, Verification::SourceEvaluator));
    assert_eq!(t.agent.model.as_deref(), Some("swe-agent-llama-70b"));
    assert_eq!(ts[3].agent.model.as_deref(), Some("swe-agent-llama-405b"));
}

#[test]
fn turns_map_to_steps_and_actions_to_linked_calls() {
    let c = read(&[real("nebius_swe_agent")]);
    let t = from_file(&c, FILE)[0];
    let roles: Vec<Role> = t.steps[..4].iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::Environment]);
    let system = &t.steps[0];
    assert!(system
        .content
        .as_ref()
        .and_then(|v| v.as_str())
        .is_some_and(|s| s.starts_with("SETTING: You are an autonomous programmer")));
    assert_eq!(system.extra["text"], json!(null), "the null text stays");
    assert_eq!(system.extra["cutoff_date"], json!("01.01.2023"));
    let ai = &t.steps[2];
    assert_eq!(ai.extra["role"], json!("ai"));
    assert_eq!(ai.extra["mask"], json!(true));
    let call = &ai.tool_calls[0];
    assert_eq!((call.name.as_str(), call.arguments.value()), ("bash", &json!({"command": "ls -F"})));
    assert!(call.text_embedded);
    let obs = &t.steps[3];
    assert_eq!(obs.extra["role"], json!("user"));
    assert_eq!(obs.tool_results[0].call_id, call.id);
    assert!(obs.tool_results[0]
        .content
        .as_ref()
        .and_then(|v| v.as_str())
        .is_some_and(|s| s.starts_with("CHANGELOG.rst")));
    let last = t.steps.last().expect("steps");
    assert_eq!(last.tool_calls[0].arguments, json!({"command": "submit"}));
}
