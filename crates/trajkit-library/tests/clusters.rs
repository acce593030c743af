//! Task clusters (docs/quality.md#task-clusters): tasks matched by content across keys and
//! sources, splits per cluster, protection spread to the whole cluster; on real files.

mod common;

use std::path::Path;

use common::{build_in_groups, build_lib, column, real, rows};
use serde_json::Value;
use trajkit_library::{BuildOptions, ClusterOptions};

/// The cluster tables and every trajectory's cluster columns, as text.
fn cluster_state(lib: &Path) -> Vec<Vec<String>> {
    [
        "SELECT task_cluster || '|' || anchor_key || '|' || split || '|' || keys || '|' || instructions || '|' || trajectories FROM task_clusters ORDER BY 1",
        "SELECT split_key || '|' || instruction_digest || '|' || task_cluster || '|' || reason || '|' || coalesce(similarity, '') FROM task_cluster_links ORDER BY 1",
        "SELECT a || '|' || b || '|' || similarity FROM near_duplicate_instructions ORDER BY 1",
        "SELECT ordinal || '|' || task_cluster || '|' || task_cluster_reason || '|' || coalesce(task_cluster_similarity, '') || '|' || split FROM trajectories ORDER BY ordinal",
        "SELECT ordinal || '|' || near_duplicate_group || '|' || near_duplicate_group_size || '|' || coalesce(near_duplicate_similarity, '') FROM trajectories ORDER BY ordinal",
        "SELECT near_duplicate_group || '|' || task_cluster || '|' || interactions || '|' || size || '|' || trajectory_ids FROM near_duplicate_groups ORDER BY 1",
    ]
    .iter()
    .map(|sql| column(lib, sql))
    .collect()
}

/// The cluster of each trajectory whose task key starts with `prefix`, by task key.
fn clusters_of(lib: &Path, prefix: &str) -> Vec<String> {
    column(
        lib,
        &format!(
            "SELECT task_key || ' ' || task_cluster || ' ' || task_cluster_reason FROM trajectories
             WHERE task_key LIKE '{prefix}%' ORDER BY task_key"
        ),
    )
}

fn count_distinct(v: &[String]) -> usize {
    v.iter().map(|s| s.split(' ').nth(1).unwrap_or("")).collect::<std::collections::BTreeSet<_>>().len()
}

#[test]
fn every_real_fixture_clusters_the_same_in_any_partition_and_templates_do_not_merge() {
    let dir = tempfile::tempdir().unwrap();
    let one = build_lib(&dir.path().join("one"), &[real("")], None);
    let many = dir.path().join("many/lib");
    let opts = BuildOptions { inputs: vec![real("")], output: many.clone(), ..BuildOptions::default() };
    let (summary, groups) = build_in_groups(&opts);
    assert!(groups > 100, "{groups}");
    assert_eq!(cluster_state(&one), cluster_state(&many));

    let state = cluster_state(&one);
    assert_eq!(summary.trajectories, 529);
    assert_eq!(column(&one, "SELECT count(DISTINCT split_key) FROM trajectories"), ["414"]);
    assert_eq!(state[0].len(), 388, "clusters");
    assert_eq!(state[2].len(), 19, "confirmed near-duplicate instruction pairs");
    assert_eq!(
        column(
            &one,
            "SELECT r || ' ' || n FROM (SELECT task_cluster_reason AS r, count(*) AS n FROM trajectories GROUP BY 1) ORDER BY 1"
        ),
        ["near_duplicate 21", "same_instruction 8", "same_key 500"]
    );

    // Near-duplicate trajectories: 16 groups of 2 to 5 interactions (40 in all) inside their
    // task clusters; 485 near groups over the 509 exact ones.
    assert_eq!(state[5].len(), 16, "near-duplicate groups of two or more interactions");
    assert_eq!(column(&one, "SELECT count(*) FROM near_duplicate_members"), ["40"]);
    assert_eq!(
        column(
            &one,
            "SELECT count(DISTINCT duplicate_group) || ' ' || count(DISTINCT near_duplicate_group) FROM trajectories"
        ),
        ["509 485"]
    );

    // One task under two keys: tau2 telecom's airplane_mode_on and break_apn_settings give
    // the user the same instruction (the fault differs in the hidden environment state),
    // and the Easy/Hard persona variants carry the same request behind a persona preamble.
    let telecom = clusters_of(&one, "telecom/[service_issue]");
    assert_eq!(count_distinct(&telecom), 1, "{telecom:#?}");
    assert!(
        telecom.iter().any(|t| t.starts_with("telecom/[service_issue]break_apn_settings[PERSONA:None] ")
            && t.ends_with(" same_instruction")),
        "{telecom:#?}"
    );
    assert_eq!(
        column(&one, "SELECT task_cluster_similarity FROM trajectories WHERE task_key = 'h:6a70a1994f35fba1'"),
        ["1"],
        "'Hi, can you tell me the distance ...' is the task without 'Hi, ' (a boilerplate shingle)"
    );

    // Templates: mini-SWE-agent wraps five different SWE-bench issues in one long
    // instruction template (Jaccard 0.76 to 0.93 between them with the template counted).
    // Its shingles are in at least 3 instructions, so they are boilerplate: five clusters.
    let swe = clusters_of(&one, "mini_swe_agent_2/");
    assert_eq!((swe.len(), count_distinct(&swe)), (5, 5), "{swe:#?}");
    let off = ClusterOptions { boilerplate_fraction: 1.0, boilerplate_min_instructions: 10_000, ..Default::default() };
    let opts = BuildOptions {
        inputs: vec![real("")],
        output: dir.path().join("off/lib"),
        clusters: off,
        ..BuildOptions::default()
    };
    trajkit_library::build(&opts, &trajkit_library::Quiet).expect("build");
    let merged = clusters_of(&opts.output, "mini_swe_agent_2/");
    assert_eq!(count_distinct(&merged), 1, "without the boilerplate rule the template merges them: {merged:#?}");
    assert_eq!(column(&opts.output, "SELECT count(*) FROM task_clusters"), ["371"]);
}

/// Each instruction's shingles come from whichever copy an analyzer thread meets first,
/// or from the canonical record when that copy is a repeated line (not filed): the real
/// Gym files with every line written twice cluster exactly as the files do.
#[test]
fn repeated_lines_leave_the_clusters_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let doubled = dir.path().join("doubled");
    std::fs::create_dir(&doubled).unwrap();
    let mut lines = 0;
    for entry in std::fs::read_dir(real("gym")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            let text = std::fs::read_to_string(&path).unwrap();
            let twice: String = text.lines().map(|l| format!("{l}\n{l}\n")).collect();
            lines += text.lines().count();
            std::fs::write(doubled.join(path.file_name().unwrap()), twice).unwrap();
        }
    }
    assert_eq!(lines, 143);
    let build = |input: &Path, name: &str| {
        let output = dir.path().join(name);
        let opts = BuildOptions {
            inputs: vec![input.to_path_buf()],
            output: output.clone(),
            threads: 2,
            ..BuildOptions::default()
        };
        trajkit_library::build(&opts, &trajkit_library::Quiet).expect("build");
        output
    };
    let once = build(&real("gym"), "once");
    let twice = build(&doubled, "twice");
    // Every accepted line repeated (the 20 rejected lines are rejected twice).
    assert_eq!(column(&twice, "SELECT sum(duplicate_records) FROM files"), ["123"]);
    let state = cluster_state(&once);
    assert_eq!(state[1].len(), 103, "distinct (split key, instruction) links");
    assert_eq!(cluster_state(&twice), state);
}

/// The case: an `evaluation_only` source with one real ATIF trajectory and a
/// `training` source with it twice under other session ids, once with a newline added to
/// the instruction and once with " Please be thorough." appended.
#[test]
fn an_evaluation_task_reworded_in_training_is_protected_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(real("atif/openhands-hello-world-v1.5.trajectory.json")).unwrap();
    let original: Value = serde_json::from_str(&text).unwrap();
    let variant = |session: &str, edit: &dyn Fn(&str) -> String| {
        let mut v = original.clone();
        v["session_id"] = Value::from(session);
        let steps = v["steps"].as_array_mut().unwrap();
        let user = steps.iter_mut().find(|s| s["source"] == "user").unwrap();
        let message = edit(user["message"].as_str().unwrap());
        user["message"] = Value::from(message);
        v
    };
    let write = |rel: &str, v: &Value| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    };
    write("eval/hello.trajectory.json", &variant("eval-session", &|m| m.to_string()));
    write("train/newline.trajectory.json", &variant("copy-newline", &|m| format!("{m}\n")));
    write("train/thorough.trajectory.json", &variant("copy-thorough", &|m| format!("{m} Please be thorough.")));
    let registry = dir.path().join("sources.toml");
    std::fs::write(
        &registry,
        "[[source]]\nname = \"bench\"\npaths = [\"eval\"]\nrole = \"evaluation_only\"\n\n\
         [[source]]\nname = \"mine\"\npaths = [\"train\"]\nrole = \"training\"\n",
    )
    .unwrap();
    let lib = build_lib(dir.path(), &[], Some(registry));
    let got: Vec<(String, String, String, String, Value, bool, bool)> = rows(&lib)
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["task_key"].as_str().unwrap().to_string(),
                r["split"].as_str().unwrap().to_string(),
                r["task_cluster_reason"].as_str().unwrap().to_string(),
                r["task_cluster_similarity"].clone(),
                r["training_eligible"].as_bool().unwrap(),
                r["sft_eligible"].as_bool().unwrap(),
            )
        })
        .collect();
    let cluster: Vec<String> = rows(&lib).iter().map(|r| r["task_cluster"].as_str().unwrap().to_string()).collect();
    assert_eq!(cluster.len(), 3);
    assert!(cluster.iter().all(|c| *c == cluster[0]), "one cluster: {cluster:?}");
    let eval_key = got[0].1.clone();
    assert_eq!(
        got,
        vec![
            (
                "eval/hello.trajectory.json".into(),
                eval_key.clone(),
                "protected_evaluation".into(),
                "same_key".into(),
                Value::Null,
                false,
                true
            ),
            (
                "train/newline.trajectory.json".into(),
                eval_key.clone(),
                "protected_evaluation".into(),
                "same_key".into(),
                Value::Null,
                false,
                true
            ),
            (
                "train/thorough.trajectory.json".into(),
                got[2].1.clone(),
                "protected_evaluation".into(),
                "near_duplicate".into(),
                Value::from(0.7692),
                false,
                true
            ),
        ]
    );
    assert_ne!(got[2].1, eval_key, "the appended sentence gives another task key");
    // Three interactions (the instruction is part of it), one near-duplicate group.
    let sizes: Vec<(u64, u64, String)> = rows(&lib)
        .iter()
        .map(|r| {
            let exact = r["duplicate_group_size"].as_u64().unwrap();
            (
                exact,
                r["near_duplicate_group_size"].as_u64().unwrap(),
                r["near_duplicate_group"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(sizes.iter().all(|(e, n, g)| (*e, *n) == (1, 3) && *g == sizes[0].2), "{sizes:?}");
    // 10 shingles of 12 words shared, 3 new ones from the appended sentence: 10/13.
    assert_eq!(column(&lib, "SELECT similarity FROM near_duplicate_instructions"), ["0.7692"]);
    assert_eq!(
        column(&lib, "SELECT anchor_key || ' ' || split || ' ' || keys || ' ' || trajectories FROM task_clusters"),
        [format!("{eval_key} protected_evaluation 2 3")]
    );
}
