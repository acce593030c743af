//! Latency and cached tokens where upstream publishes them (docs/library.md, "Latency"):
//! rows, index and `summary.json` on real tau2, Inspect, ATIF and Harbor trial files.
//! Expected figures were computed with python from the files (durations, sorted, nearest
//! rank at ⌊(n − 1)·q⌋), not copied from the program's output.

mod common;

use std::path::Path;

use common::{build_lib, column, real, rows, summary};
use serde_json::{json, Value};

/// A Harbor trial directory: the real TrialResult that line 1 of the NeMo Gym Harbor
/// rollouts carries under `metadata` (agent execution 06:45:21.371891 → 06:46:30.823937)
/// and a byte copy of a real ATIF trajectory.
fn harbor_trial(dir: &Path) {
    let text = std::fs::read_to_string(real("terminal_bench_harbor/example_output.jsonl")).unwrap();
    let row: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    std::fs::create_dir_all(dir.join("agent")).unwrap();
    std::fs::write(dir.join("result.json"), serde_json::to_vec(&row["metadata"]).unwrap()).unwrap();
    std::fs::copy(real("atif/terminus2-hello-world-v1.3.trajectory.json"), dir.join("agent/trajectory.json")).unwrap();
}

fn group<'a>(s: &'a Value, source: &str, model: &str) -> &'a Value {
    let all = s["usage"]["latency"]["by_source_model"].as_array().unwrap();
    all.iter().find(|g| g["source"] == source && g["model"] == model).unwrap_or_else(|| panic!("{source}/{model}"))
}

fn figures(g: &Value) -> Value {
    json!([g["attempts"], g["count"], g["mean_seconds"], g["p50_seconds"], g["p90_seconds"], g["max_seconds"]])
}

#[test]
fn durations_reach_rows_index_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let trials = dir.path().join("trials");
    harbor_trial(&trials.join("scientific_computing_task_0001__a"));
    let lib = build_lib(dir.path(), &[real("tau2"), real("inspect"), real("atif"), trials], None);
    let s = summary(&lib);
    // tau2: each simulation's `duration`.
    assert_eq!(figures(group(&s, "tau2", "gpt-4o")), json!([20, 20, 234.9, 213.15, 333.195, 469.719]));
    // Inspect: each sample's `total_time` (20 of the 27 gpt-4o-mini samples publish none).
    assert_eq!(figures(group(&s, "inspect", "openai/gpt-4o-mini")), json!([27, 7, 6.178, 5.394, 9.96, 18.517]));
    assert_eq!(figures(group(&s, "inspect", "ollama/gemma3")), json!([2, 2, 1.263, 0.413, 0.413, 2.113]));
    // ATIF: first to last step timestamp (claude-code pass 420.81 s, fail 840.741 s).
    // The mean, 630.7755, is a tie at the millisecond: either rounding is right.
    let g = group(&s, "atif", "claude-opus-4-6");
    assert!((g["mean_seconds"].as_f64().unwrap() - 630.7755).abs() <= 0.0005, "{g}");
    let f = figures(g);
    assert_eq!(
        [&f[0], &f[1], &f[3], &f[4], &f[5]],
        [&json!(2), &json!(2), &json!(420.81), &json!(420.81), &json!(840.741)]
    );
    // Harbor trial: the agent's execution, not the trial's 98.9 s including setup and verifier.
    let trial = rows(&lib).into_iter().find(|r| r["format"] == "harbor-trial").unwrap();
    assert_eq!(trial["duration_seconds"].as_f64().map(|s| (s * 1e6).round() / 1e6), Some(69.452046));
    assert_eq!(
        column(&lib, "SELECT count(duration_seconds) || ',' || count(cached_tokens) || ',' || sum(cached_tokens) FROM trajectories WHERE source = 'inspect'"),
        vec!["11,8,9088"]
    );
    assert_eq!(
        column(&lib, "SELECT round(duration_seconds, 3) FROM trajectories WHERE path LIKE '%terminus2-hello-world-v1.3%' AND format = 'atif'"),
        vec!["1.422"]
    );
}
