//! The publication standard on real published trajectories: what each record lacks.
//! No public source records environment state digests, so no real record is complete.

use std::path::{Path, PathBuf};

use trajkit_formats::{discover, read_inputs, InputFile, Options, Sink};
use trajkit_model::Trajectory;
use trajkit_verify::completeness::check;

fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

struct Lacks(Vec<Vec<String>>);

impl Sink for Lacks {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        if let Some(t) = t {
            self.0.push(check(t).iter().map(|l| format!("{}: {}", l.part.as_str(), l.detail)).collect());
        }
    }
}

fn lacks(rel: &str) -> Vec<Vec<String>> {
    let (files, errors) = discover(&[real(rel)]);
    assert!(errors.is_empty());
    let mut sink = Lacks(Vec::new());
    let opts = Options { records: true, ..Options::default() };
    read_inputs(files, &opts, &mut sink).expect("read");
    sink.0
}

const NO_STATE: [&str; 2] = ["initial_state: no initial state digest", "final_state: no final state digest"];

#[test]
fn atif_claude_code_run_lacks_state_and_a_verifier() {
    let got = lacks("atif/claude-code-pass-v1.7.trajectory.json");
    assert_eq!(got, [[NO_STATE[0], NO_STATE[1], "verifier_outcome: outcome unknown"]]);
}

#[test]
fn swe_gym_runs_end_without_a_final_message_and_leave_the_last_call_unanswered() {
    let got = lacks("swe_gym_openhands/adp_swe-gym_sample_raw.json");
    assert_eq!(got.len(), 5);
    assert_eq!(
        got[0],
        [
            "tool_results: 1 of 21 tool calls have no linked result",
            NO_STATE[0],
            NO_STATE[1],
            "final_output: the last assistant step (step 40) has no text"
        ]
    );
    assert_eq!(got[3], ["tool_results: 1 of 17 tool calls have no linked result", NO_STATE[0], NO_STATE[1]]);
    // The resolved/test_result outcome comes from SWE-Gym's evaluator: no record lacks it.
    assert!(got.iter().all(|l| !l.iter().any(|x| x.starts_with("verifier_outcome"))));
}

#[test]
fn tau2_simulations_end_on_the_simulated_user() {
    let got = lacks("tau2");
    assert_eq!(got.len(), 20);
    assert!(got.iter().all(|l| l.len() == 3
        && l[..2] == NO_STATE
        && l[2].starts_with("final_output: the run ends with a user step")));
    assert_eq!(got[0][2], "final_output: the run ends with a user step (step 43)");
}

#[test]
fn terminal_bench_rollouts_lack_results_final_output_and_outcome() {
    let got = lacks("terminal_bench_harbor/example_output.jsonl");
    let first: Vec<&str> = got.iter().map(|l| l[0].as_str()).collect();
    assert_eq!(
        first,
        [
            "tool_results: 1 of 10 tool calls have no linked result",
            "tool_results: 8 of 23 tool calls have no linked result",
            "tool_results: 7 of 22 tool calls have no linked result"
        ]
    );
    assert_eq!(
        got[0][3..],
        ["final_output: the run ends with a tool step (step 24)", "verifier_outcome: outcome unknown"]
    );
}

#[test]
fn gym_rows_without_a_tool_call_need_no_environment_state() {
    let got = lacks("gym/example_single_tool_call__example_rollouts.jsonl");
    assert_eq!(got[0], ["tool_calls: no tool call recorded", "verifier_outcome: outcome unknown"]);
    assert_eq!(got[2], [NO_STATE[0], NO_STATE[1], "verifier_outcome: outcome unknown"]);
}
