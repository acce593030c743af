//! NeMo Gym reader on the real published example rollouts (tests/fixtures/real/gym).

mod common;

use common::{assert_figures, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Authorship, Role, Status, TaskKeySource, Verification};

type Row = (&'static str, u64, u64, u64, u64, u64, u64, &'static [(&'static str, u64)], &'static [(&'static str, u64)]);

/// file, records, trajectories, steps, tool_calls, duplicate_records, rejected, reasons, gaps.
const FIGURES: &[Row] = &[
    ("anyswe_agent__example_rollouts_hermes.jsonl", 5, 5, 141, 68, 0, 0, &[], &[]),
    ("aviary__example_rollouts.jsonl", 5, 5, 33, 13, 0, 0, &[], &[]),
    ("aviary_bixbench__example_rollouts.jsonl", 1, 1, 6, 1, 0, 0, &[], &[("incomplete_generation", 1)]),
    ("aviary_gsm8k__example_rollouts.jsonl", 2, 2, 8, 3, 0, 0, &[], &[]),
    ("aviary_hotpotqa__example_rollouts.jsonl", 5, 5, 41, 14, 0, 0, &[], &[]),
    ("bbq__example_rollouts.jsonl", 5, 0, 0, 0, 0, 5, &[("not_a_rollout", 5)], &[]),
    ("blackjack__example_rollouts.jsonl", 5, 5, 24, 0, 0, 0, &[], &[]),
    ("circle_click__example_rollouts.jsonl", 5, 5, 20, 5, 0, 0, &[], &[]),
    ("competitive_coding_challenges__example_rollouts.jsonl", 5, 5, 10, 0, 0, 0, &[], &[]),
    ("conversational_tool_use_simulation__example_rollouts.jsonl", 5, 5, 73, 14, 0, 0, &[], &[]),
    ("ether0__example_rollouts.jsonl", 5, 5, 15, 0, 0, 0, &[], &[]),
    ("ether0__example_rollouts_materialized_inputs.jsonl", 5, 0, 0, 0, 0, 5, &[("not_a_rollout", 5)], &[]),
    ("ether0__example_rollouts_reward_profiling.jsonl", 5, 0, 0, 0, 0, 5, &[("not_a_rollout", 5)], &[]),
    ("example_multi_turn_gymnasium__example_rollouts.jsonl", 5, 5, 22, 0, 0, 0, &[], &[]),
    ("example_session_state_mgmt__example_rollouts.jsonl", 5, 5, 35, 15, 0, 0, &[], &[]),
    ("example_single_tool_call__example_rollouts.jsonl", 5, 5, 21, 3, 0, 0, &[], &[]),
    ("example_tool_call_multireward__example_rollouts.jsonl", 5, 5, 25, 5, 0, 0, &[], &[]),
    ("gdpval__example_rollouts.jsonl", 5, 5, 157, 147, 0, 0, &[], &[("unanswered_tool_call", 147)]),
    ("graphwalks__example_rollouts.jsonl", 5, 4, 8, 0, 1, 0, &[], &[]),
    ("grl_sokoban__example_rollouts.jsonl", 5, 5, 194, 0, 0, 0, &[], &[]),
    ("gymnasium__example_rollouts.jsonl", 5, 1, 1, 0, 4, 0, &[], &[]),
    ("hermes_agent__example_math_rollouts.jsonl", 5, 5, 16, 3, 0, 0, &[], &[]),
    ("mini_swe_agent_2__example_rollouts.jsonl", 5, 5, 196, 129, 0, 0, &[], &[("unanswered_tool_call", 5)]),
    ("mrcr__example_rollouts.jsonl", 5, 5, 48, 0, 0, 0, &[], &[]),
    ("multichallenge__example_rollouts.jsonl", 5, 0, 0, 0, 0, 5, &[("not_a_rollout", 5)], &[]),
    ("openair_congestion__example_rollouts.jsonl", 5, 5, 15, 5, 0, 0, &[], &[("unanswered_tool_call", 5)]),
    ("ruler__example_rollouts.jsonl", 5, 5, 10, 0, 0, 0, &[], &[("incomplete_generation", 5)]),
    ("tau2__example_rollouts.jsonl", 5, 5, 65, 20, 0, 0, &[], &[]),
    ("tavily_search__example_rollouts.jsonl", 5, 0, 0, 0, 0, 5, &[("not_a_rollout", 5)], &[]),
    ("toolsandbox__example_rollouts.jsonl", 5, 5, 0, 0, 0, 0, &[], &[("no_steps", 5)]),
];

#[test]
fn every_real_gym_file_has_its_exact_figures() {
    let c = read(&[real("gym")]);
    assert_eq!(c.reports.len(), FIGURES.len(), "one report per fixture file");
    for &(name, records, trajectories, steps, tool_calls, dups, rejected, reasons, gaps) in FIGURES {
        let want = (records, trajectories, 0, steps, tool_calls, dups, rejected);
        assert_figures(report(&c, name), name, "gym", want, reasons, gaps);
    }
}

#[test]
fn parallel_calls_pair_with_outputs_by_call_id() {
    let c = read(&[real("gym/example_session_state_mgmt__example_rollouts.jsonl")]);
    let t = from_file(&c, "example_session_state_mgmt__example_rollouts.jsonl")[0];
    assert_eq!(t.id, "gym-5263cf696ee4ffa4");
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    use Role::*;
    assert_eq!(roles, [User, Assistant, Tool, Tool, Assistant, Tool, Assistant]);
    let calls: Vec<_> = t.steps[1].tool_calls.iter().map(|c| (c.id.as_deref(), c.arguments.value().clone())).collect();
    assert_eq!(
        calls,
        [
            (Some("call_dzh9BD1c6HQ9nWIRidgEO10O"), json!({"count": 13})),
            (Some("call_40zJ55JtKiRMlsDtKfzg8G1C"), json!({"count": 14})),
        ]
    );
    assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("call_dzh9BD1c6HQ9nWIRidgEO10O"));
    assert_eq!(t.steps[3].tool_results[0].call_id.as_deref(), Some("call_40zJ55JtKiRMlsDtKfzg8G1C"));
    assert!(t.gaps.is_empty());
    let m = t.metrics.as_ref().expect("usage");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(128), Some(27), Some(0)));
    assert_eq!(t.outcome.reward, Some(1.0));
    assert_eq!(t.outcome.status, Status::Unknown, "a reward alone never makes a success");
    assert_eq!(t.outcome.verification, Verification::SourceEvaluator);
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert_eq!(t.task.instruction.as_deref(), Some("add 13 then add 14 then get the count"));
}

#[test]
fn simulated_user_turns_in_output_have_unknown_authorship() {
    let c = read(&[real("gym/tau2__example_rollouts.jsonl")]);
    let t = from_file(&c, "tau2__example_rollouts.jsonl")[0];
    let last = t.steps.last().expect("steps");
    assert_eq!((last.role, last.authorship), (Role::User, Authorship::Unknown));
    assert_eq!(last.content.as_deref(), Some(&json!("###TRANSFER###")));
    // Input items (the recorded dialogue) keep declared authorship.
    assert!(t.steps[..5].iter().all(|s| s.authorship == Authorship::Declared));
    assert_eq!(t.agent.name.as_deref(), Some("tau2_benchmark_agent"));
}

#[test]
fn prompt_messages_opening_an_empty_input_are_accepted_with_unknown_authorship() {
    let c = read(&[real("gym/gdpval__example_rollouts.jsonl")]);
    let t = from_file(&c, "gdpval__example_rollouts.jsonl")[0];
    assert_eq!((t.steps[0].role, t.steps[0].authorship), (Role::System, Authorship::Unknown));
    assert_eq!((t.steps[1].role, t.steps[1].authorship), (Role::User, Authorship::Unknown));
    assert_eq!(t.task.key, "gdpval_stirrup_agent/83d10b06-26d1-4636-a32c-23f92c57f30b");
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
}

#[test]
fn byte_identical_lines_load_once() {
    let c = read(&[real("gym/graphwalks__example_rollouts.jsonl")]);
    let lines: Vec<u64> = from_file(&c, "graphwalks").iter().filter_map(|t| t.provenance.line).collect();
    assert_eq!(lines, [1, 2, 3, 4], "line 5 repeats line 4 byte for byte");
    let c = read(&[real("gym/gymnasium__example_rollouts.jsonl")]);
    assert_eq!(c.trajectories.len(), 1);
}

#[test]
fn transitions_load_the_last_transition() {
    let c = read(&[real("gym/aviary__example_rollouts.jsonl")]);
    let t = from_file(&c, "aviary__example_rollouts.jsonl")[0];
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
    assert_eq!(t.steps[1].tool_calls[0].name, "calculator");
    assert_eq!(t.steps[1].tool_calls[0].arguments, json!({"expr": "12 * (50 / 60)"}));
}

#[test]
fn truncated_generation_is_a_gap_and_reasoning_is_kept() {
    let c = read(&[real("gym/ruler__example_rollouts.jsonl")]);
    let t = from_file(&c, "ruler__example_rollouts.jsonl")[0];
    let last = t.steps.last().expect("steps");
    assert_eq!(last.role, Role::Assistant);
    assert!(last.content.is_none() && last.reasoning.as_deref().is_some_and(|r| r.starts_with("Okay, let's tackle")));
    assert_eq!(t.gaps[0].detail.as_deref(), Some("max_output_tokens"));
}

#[test]
fn chat_completions_usage_and_string_input() {
    let c = read(&[real("gym/mrcr__example_rollouts.jsonl")]);
    let m = from_file(&c, "mrcr")[0].metrics.clone().expect("usage");
    assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (Some(112), Some(273), None));
    let c = read(&[real("gym/competitive_coding_challenges__example_rollouts.jsonl")]);
    let t = from_file(&c, "competitive_coding")[0];
    assert_eq!(t.steps[0].role, Role::User);
    assert!(t.steps[0].content.as_ref().and_then(|v| v.as_str()).is_some_and(|s| s.starts_with("You are an expert")));
}

#[test]
fn reward_components_are_named() {
    let c = read(&[real("gym/example_tool_call_multireward__example_rollouts.jsonl")]);
    let t = from_file(&c, "multireward")[0];
    assert_eq!(t.outcome.reward, Some(2.0));
    assert_eq!(t.outcome.reward_components.get("correctness"), Some(&1.0));
    assert_eq!(t.outcome.reward_components.len(), 3);
}

#[test]
fn unmapped_fields_stay_in_extra() {
    let c = read(&[real("gym/mini_swe_agent_2__example_rollouts.jsonl")]);
    let t = from_file(&c, "mini_swe_agent_2")[0];
    // `_ng_task_index` is an index into a task file: kept, but never the task key.
    assert_eq!(t.extra.get("_ng_task_index"), Some(&json!(4)));
    assert!(t.extra.contains_key("metadata") && t.extra.contains_key("instance_id"));
    assert_eq!(t.task.key, "mini_swe_agent_2/scikit-learn__scikit-learn-14141");
}

#[test]
fn reasoning_emitted_after_its_call_stays_with_that_decision() {
    let c = read(&[real("gym/conversational_tool_use_simulation__example_rollouts.jsonl")]);
    let t = from_file(&c, "conversational_tool_use_simulation")[0];
    let step = t.steps.iter().find(|s| !s.tool_calls.is_empty()).expect("a call");
    assert_eq!(step.tool_calls[0].name, "request_accessibility");
    assert!(step.reasoning.as_deref().is_some_and(|r| r.starts_with("I need to help this user with two requests")));
}

#[test]
fn floats_round_trip_exactly() {
    let c = read(&[real("gym/mrcr__example_rollouts.jsonl")]);
    assert_eq!(from_file(&c, "mrcr")[0].outcome.reward, Some(0.9764705882352941));
}

#[test]
fn placeholder_usage_and_empty_model_stay_absent() {
    let c = read(&[real("gym/anyswe_agent__example_rollouts_hermes.jsonl")]);
    let t = from_file(&c, "anyswe_agent")[0];
    assert!(t.metrics.is_none(), "all-zero usage on a run that generated tokens is not a count");
    assert!(t.extra["response"]["usage"]["output_tokens"] == json!(0), "the source's usage is kept in extra");
    let c = read(&[real("gym/tau2__example_rollouts.jsonl")]);
    let t = from_file(&c, "tau2")[0];
    assert_eq!(t.agent.model, None);
    assert_eq!(t.extra["response"]["model"], json!(""));
}

#[test]
fn task_keys_group_attempts_at_the_same_task_only() {
    let keys = |name: &str| -> Vec<String> {
        let c = read(&[real(&format!("gym/{name}"))]);
        c.trajectories.iter().map(|t| t.task.key.clone()).collect()
    };
    let anyswe = keys("anyswe_agent__example_rollouts_hermes.jsonl");
    assert!(anyswe.iter().all(|k| k == "anyswe_hermes/astropy__astropy-12907"), "{anyswe:?}");
    let tau2 = keys("tau2__example_rollouts.jsonl");
    assert_ne!(tau2[1], tau2[4], "different tau2 tasks whose simulated user opens alike");
    let sokoban: std::collections::BTreeSet<String> = keys("grl_sokoban__example_rollouts.jsonl").into_iter().collect();
    assert_eq!(sokoban.len(), 5, "five boards, five tasks");
    let openair: std::collections::BTreeSet<String> =
        keys("openair_congestion__example_rollouts.jsonl").into_iter().collect();
    assert_eq!(openair.len(), 5);
}

#[test]
fn token_ids_and_logprobs_are_step_metrics() {
    let c = read(&[real("gym/competitive_coding_challenges__example_rollouts.jsonl")]);
    let t = from_file(&c, "competitive_coding")[0];
    let step = t.steps.iter().find(|s| s.role == Role::Assistant).expect("assistant");
    let m = step.metrics.as_ref().expect("metrics");
    assert!(m.extra["generation_token_ids"].as_array().is_some_and(|a| !a.is_empty()));
    assert!(m.extra.contains_key("generation_log_probs"));
}

/// Reads `path` keeping its records (each known by SHA-256) and as `inspect` does (known
/// by place and a fast hash, settled by the bytes): the figures and rejections, message
/// included, must be the same.
fn read_both_ways(path: &std::path::Path) -> common::Collected {
    let kept = common::read(&[path.to_path_buf()]);
    let located = common::read_with(&[path.to_path_buf()], trajkit_formats::pipeline::Options::default());
    assert_eq!(kept.reports, located.reports);
    let messages =
        |c: &common::Collected| c.rejections.iter().map(|r| (r.line, r.problems.clone())).collect::<Vec<_>>();
    assert_eq!(messages(&kept), messages(&located));
    kept
}

mod synthetic {
    //! Rules that no real file shows: written here by hand, small on purpose.
    use super::common::read;
    use serde_json::json;
    use std::io::Write;

    fn file(lines: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x_rollouts.jsonl");
        let mut f = std::fs::File::create(&path).expect("create");
        for l in lines {
            writeln!(f, "{l}").expect("write");
        }
        (dir, path)
    }

    const A: &str = r#"{"responses_create_params":{"input":"hi"},"response":{"output":[]},"reward":1,"_ng_task_index":3,"_ng_rollout_index":0}"#;
    const B: &str = r#"{"responses_create_params":{"input":"hi!"},"response":{"output":[]},"reward":0,"_ng_task_index":3,"_ng_rollout_index":0}"#;

    #[test]
    fn a_different_line_with_the_same_rollout_indices_conflicts() {
        let (_d, p) = file(&[A, A, B]);
        let c = super::read_both_ways(&p);
        let r = &c.reports[0];
        assert_eq!((r.records, r.trajectories, r.duplicate_records, r.rejected), (3, 1, 1, 1));
        assert_eq!(c.rejections[0].reason.as_str(), "conflicting_rollout");
        assert_eq!(c.rejections[0].line, Some(3));
    }

    #[test]
    fn output_opening_with_a_prompt_message_after_input_is_ambiguous() {
        let line = r#"{"responses_create_params":{"input":"hi"},"response":{"output":[{"type":"message","role":"user","content":"x"}]}}"#;
        let (_d, p) = file(&[line]);
        let c = read(&[p]);
        assert_eq!(c.rejections[0].reason.as_str(), "ambiguous_history");
        assert_eq!(c.rejections[0].problems[0].json_path, "$.response.output[0]");
    }

    /// An item's problem names the item by its list and place, whichever list holds it.
    #[test]
    fn a_bad_item_is_named_by_its_path() {
        let cases = [
            (
                r#"{"responses_create_params":{"input":[{"content":"x"}]},"response":{"output":[]}}"#,
                "schema_violation",
                "$.responses_create_params.input[0].role",
            ),
            (
                r#"{"responses_create_params":{"input":"hi"},"response":{"output":[{"type":"reasoning","summary":[]},{"type":"function_call","call_id":"c"}]}}"#,
                "schema_violation",
                "$.response.output[1].name",
            ),
            (
                r#"{"responses_create_params":{"input":[{"role":"user","content":"a"},{"role":"critic","content":"b"}]},"response":{"output":[]}}"#,
                "invalid_value",
                "$.responses_create_params.input[1].role",
            ),
            (
                r#"{"responses_create_params":{"input":"hi"},"response":{"output":[{"role":"assistant","content":"a"},7]}}"#,
                "schema_violation",
                "$.response.output[1]",
            ),
        ];
        for (line, reason, path) in cases {
            let (_d, p) = file(&[line]);
            let c = read(&[p]);
            assert_eq!(c.rejections.len(), 1, "{line}");
            assert_eq!(c.rejections[0].reason.as_str(), reason, "{line}");
            assert_eq!(c.rejections[0].problems[0].json_path, path, "{line}");
        }
    }

    #[test]
    fn a_transition_that_rewrites_history_rejects_the_record() {
        let line = r#"{"responses_create_params":{"input":[]},"response":{"contains_transitions":true,"output":[[{"role":"user","content":"a"}],[{"role":"user","content":"b"}]]}}"#;
        let (_d, p) = file(&[line]);
        let c = read(&[p]);
        assert_eq!(c.rejections[0].reason.as_str(), "transition_rewrites_history");
    }

    #[test]
    fn invalid_arguments_are_kept_verbatim_and_flagged() {
        let line = r#"{"responses_create_params":{"input":"hi"},"response":{"output":[{"type":"function_call","call_id":"c","name":"f","arguments":"{oops"},{"type":"function_call_output","call_id":"zz","output":"r"}]}}"#;
        let (_d, p) = file(&[line]);
        let c = read(&[p]);
        let t = &c.trajectories[0];
        let call = &t.steps[1].tool_calls[0];
        assert!(call.arguments_invalid);
        assert_eq!(call.arguments, serde_json::json!("{oops"));
        let kinds: Vec<&str> = t.gaps.iter().map(|g| g.kind.as_str()).collect();
        assert_eq!(kinds, ["result_without_call", "unanswered_tool_call", "invalid_tool_arguments"]);
    }

    /// The request's tools when it offers some, else the response's; what is not taken
    /// (empty, `null`, not a list, the response's when the request has some) stays in
    /// `extra` where it was. Real files carry tools in the request only.
    #[test]
    fn tools_come_from_the_request_then_the_response() {
        let row = |params: &str, response: &str| {
            format!(
                r#"{{"responses_create_params":{{"input":"hi"{params}}},"response":{{"output":[]{response}}},"reward":1}}"#
            )
        };
        let f = r#"[{"type":"function","name":"f"}]"#;
        let g = r#"[{"name":"g","type":"function"} ]"#;
        let cases = [
            (
                row(&format!(",\"tools\":{f}"), &format!(",\"tools\":{g}")),
                Some("f"),
                None,
                Some(json!([{"name": "g", "type": "function"}])),
            ),
            (row(",\"tools\":[]", &format!(",\"tools\":{g}")), Some("g"), Some(json!([])), None),
            (row(",\"tools\":null", ",\"tools\":{}"), None, Some(json!(null)), Some(json!({}))),
            (row("", &format!(",\"tools\":{g}")), Some("g"), None, None),
        ];
        for (line, name, in_params, in_response) in cases {
            let (_d, p) = file(&[&line]);
            let c = read(&[p]);
            let t = &c.trajectories[0];
            let names: Vec<&str> = t.tools.iter().flatten().filter_map(|d| d["name"].as_str()).collect();
            assert_eq!(names, name.into_iter().collect::<Vec<_>>(), "{line}");
            let kept = |part: &str| t.extra.get(part).and_then(|v| v.get("tools")).cloned();
            assert_eq!((kept("responses_create_params"), kept("response")), (in_params, in_response), "{line}");
        }
    }
}

mod rollout_identity {
    //! The rollout key is (task index, rollout index, response id): real lines combined as a
    //! collector would write them.
    use super::common::{read, real};
    use std::io::Write;

    fn lines(name: &str) -> Vec<String> {
        let text = std::fs::read_to_string(real(&format!("gym/{name}"))).expect("fixture");
        text.lines().map(str::to_string).collect()
    }

    fn file(lines: &[String]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runs_rollouts.jsonl");
        let mut f = std::fs::File::create(&path).expect("create");
        for l in lines {
            writeln!(f, "{l}").expect("write");
        }
        (dir, path)
    }

    /// Two collection runs appended to one file: ether0 and example_multi_turn_gymnasium both
    /// use task indices 0-4 with rollout index 0, each row under its own response id.
    #[test]
    fn two_collection_runs_with_the_same_indices_all_load() {
        let mut all = lines("ether0__example_rollouts.jsonl");
        all.extend(lines("example_multi_turn_gymnasium__example_rollouts.jsonl"));
        let (_d, p) = file(&all);
        let c = read(&[p]);
        let r = &c.reports[0];
        assert_eq!((r.records, r.trajectories, r.duplicate_records, r.rejected), (10, 10, 0, 0));
    }

    /// The same run appended twice is the same rollouts recorded twice: loaded once, counted.
    #[test]
    fn a_run_appended_twice_loads_once() {
        let mut all = lines("ether0__example_rollouts.jsonl");
        all.extend(lines("ether0__example_rollouts.jsonl"));
        let (_d, p) = file(&all);
        let c = read(&[p]);
        let r = &c.reports[0];
        assert_eq!((r.records, r.trajectories, r.duplicate_records, r.rejected), (10, 5, 5, 0));
    }

    /// The reverse (derived from a real line): the same indices and response id with a
    /// different reward is one rollout recorded two ways, and the later row is rejected.
    #[test]
    fn the_same_triple_with_different_bytes_conflicts() {
        let first = lines("ether0__example_rollouts.jsonl").remove(0);
        let mut row: serde_json::Value = serde_json::from_str(&first).expect("json");
        row["reward"] = serde_json::json!(0.5);
        let (_d, p) = file(&[first, row.to_string()]);
        let c = super::read_both_ways(&p);
        let r = &c.reports[0];
        assert_eq!((r.records, r.trajectories, r.rejected), (2, 1, 1));
        assert_eq!(c.rejections[0].reason.as_str(), "conflicting_rollout");
        assert_eq!(c.rejections[0].line, Some(2));
    }
}

mod aviary_transitions {
    //! aviary_gsm8k: each transition is the full model input after one environment step.
    use super::common::{from_file, read, real};
    use serde_json::json;
    use std::io::Write;
    use trajkit_model::Role;

    #[test]
    fn the_last_transition_is_the_conversation() {
        let c = read(&[real("gym/aviary_gsm8k__example_rollouts.jsonl")]);
        let t = from_file(&c, "aviary_gsm8k")[1];
        let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
        use Role::*;
        assert_eq!(roles, [User, Assistant, Tool, Assistant, Tool], "two transitions, the second extends the first");
        let calls: Vec<(&str, &serde_json::Value)> =
            t.steps.iter().flat_map(|s| &s.tool_calls).map(|c| (c.name.as_str(), c.arguments.value())).collect();
        assert_eq!(
            calls,
            [("calculator", &json!({"expr": "12 * (50/60)"})), ("submit_answer", &json!({"answer": "$10"}))]
        );
        assert_eq!(t.outcome.reward, Some(-1.0));
        assert_eq!(t.agent.name.as_deref(), Some("gsm8k_aviary_agent"));
        assert!(t.gaps.is_empty());
    }

    /// aviary_bixbench: a notebook agent cut off by max_output_tokens in its second transition.
    #[test]
    fn a_bixbench_rollout_cut_off_mid_answer() {
        let c = read(&[real("gym/aviary_bixbench__example_rollouts.jsonl")]);
        assert!(c.rejections.is_empty());
        let t = from_file(&c, "aviary_bixbench")[0];
        let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
        use Role::*;
        assert_eq!(roles, [User, User, Assistant, Tool, User, Assistant], "transition 2 extends transition 1");
        let call = &t.steps[2].tool_calls[0];
        assert_eq!((call.name.as_str(), call.arguments.value()), ("list_workdir", &json!({})));
        assert_eq!(call.id.as_deref(), Some("chatcmpl-tool-914a510e150aee84"));
        let results: Vec<Option<&str>> = t.steps[3].tool_results.iter().map(|r| r.call_id.as_deref()).collect();
        assert_eq!(results, [call.id.as_deref()], "the output answers the call by id");
        assert_eq!(t.outcome.reward, Some(0.0));
        assert_eq!(t.outcome.status, trajkit_model::Status::Unknown, "a reward without a success rule");
        assert_eq!(t.agent.name.as_deref(), Some("bixbench_aviary_agent"));
        let gaps: Vec<(&str, Option<&str>)> = t.gaps.iter().map(|g| (g.kind.as_str(), g.detail.as_deref())).collect();
        assert_eq!(gaps, [("incomplete_generation", Some("max_output_tokens"))]);
    }

    /// Derived from real line 1: the request input the aviary agent built the first model
    /// input from. Each transition already holds it, so it is not prepended again.
    fn with_input(input: serde_json::Value) -> super::common::Collected {
        let text = std::fs::read_to_string(real("gym/aviary_gsm8k__example_rollouts.jsonl")).expect("fixture");
        let mut row: serde_json::Value = serde_json::from_str(text.lines().next().expect("line")).expect("json");
        row["responses_create_params"]["input"] = input;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("aviary_rollouts.jsonl");
        writeln!(std::fs::File::create(&path).expect("create"), "{row}").expect("write");
        read(&[path])
    }

    #[test]
    fn request_input_that_the_transitions_replay_is_not_doubled() {
        let question = "Julie is reading a 120-page book. Yesterday, she was able to read 12 pages and today, she read twice as many pages as yesterday. If she wants to read half of the remaining pages tomorrow, how many pages should she read?";
        let c = with_input(json!([{"role": "user", "content": question}]));
        assert!(c.rejections.is_empty(), "{:?}", c.rejections.first().map(|r| &r.problems));
        let t = &c.trajectories[0];
        let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
        assert_eq!(t.steps[0].content.as_deref(), Some(&json!(question)));
    }

    #[test]
    fn a_transition_that_drops_the_request_input_rewrites_history() {
        let c = with_input(json!([{"role": "user", "content": "a different question"}]));
        assert!(c.trajectories.is_empty());
        assert_eq!(c.rejections[0].reason.as_str(), "transition_rewrites_history");
        assert_eq!(c.rejections[0].problems[0].json_path, "$.response.output");
    }
}
