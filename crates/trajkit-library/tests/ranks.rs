//! Ranks are within task, environment and environment version (docs/quality.md, "Task
//! rank"), on real files: the same Gym rollouts registered as two versions of one
//! environment, and tau2 results whose own `info.git_commit` names the version.

mod common;

use common::{build_lib, column, real, rows};

#[test]
fn attempts_against_two_environment_versions_do_not_compete() {
    let dir = tempfile::tempdir().unwrap();
    let gym = real("gym/tau2__example_rollouts.jsonl");
    for v in ["v1", "v2"] {
        std::fs::create_dir_all(dir.path().join(v)).unwrap();
        std::fs::copy(&gym, dir.path().join(v).join("rollouts.jsonl")).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("tau2")).unwrap();
    let results = "2025-08-10T02:44:06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json";
    std::fs::copy(real("tau2").join(results), dir.path().join("tau2").join(results)).unwrap();
    let registry = dir.path().join("sources.toml");
    std::fs::write(
        &registry,
        r#"
[[source]]
name = "gym-v1"
paths = ["v1"]
version = "tau2@v1"

[[source]]
name = "gym-v2"
paths = ["v2"]
version = "tau2@v2"

[[source]]
name = "tau2"
paths = ["tau2"]
version = "registry-pin"
"#,
    )
    .unwrap();
    let lib = build_lib(dir.path(), &[], Some(registry));
    let rows = rows(&lib);
    assert_eq!(rows.len(), 30);
    let (gym_rows, tau2_rows) = rows.split_at(10);
    // Five tasks, each attempted once per version: every attempt ranks first in its version
    // (before, the second version's attempts ranked 2).
    for (i, r) in gym_rows.iter().enumerate() {
        let version = if i < 5 { "tau2@v1" } else { "tau2@v2" };
        assert_eq!((r["environment_version"].as_str(), r["task_rank"].as_u64()), (Some(version), Some(1)), "{r}");
    }
    // The record's own version wins over the registry's.
    assert!(tau2_rows.iter().all(|r| r["environment_version"] == "40f46d3540dc95aca145ddecb0464fdd9a1e8c15"));
    assert_eq!(
        column(
            &lib,
            "SELECT v || ':' || n FROM (SELECT environment_version AS v, count(*) AS n FROM trajectories GROUP BY v) ORDER BY v"
        ),
        vec!["40f46d3540dc95aca145ddecb0464fdd9a1e8c15:20", "tau2@v1:5", "tau2@v2:5"]
    );
}
