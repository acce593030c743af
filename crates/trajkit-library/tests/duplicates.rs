//! Duplicate groups are keyed by the interaction (docs/library.md, "Duplicate groups"), on
//! real files: a Gym rollout collected again with another rollout index and reward, and the
//! copies `bench/make_corpus.py` makes of Gym lines and ATIF documents.

mod common;

use common::{build_lib, column, json_lines, real, rows, summary, write_lines};
use serde_json::json;

/// The first rollout of the real tau2 Gym file (task 192, rollout 3, reward 1.0), once as
/// published and once with only `_ng_rollout_index` and `reward` changed: one group of two,
/// flagged as disagreeing. Before grouping by interaction these were two groups of one.
#[test]
fn a_gym_rollout_with_another_rollout_index_and_reward_is_the_same_interaction() {
    let dir = tempfile::tempdir().unwrap();
    let src = real("gym/tau2__example_rollouts.jsonl");
    let text = std::fs::read_to_string(&src).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    std::fs::write(dir.path().join("in/a.jsonl"), format!("{first}\n")).unwrap();
    let mut again = json_lines(&src).remove(0);
    assert_eq!((again["_ng_rollout_index"].clone(), again["reward"].clone()), (json!(3), json!(1.0)));
    again.insert("_ng_rollout_index".into(), json!(9));
    again.insert("reward".into(), json!(0.0));
    write_lines(&dir.path().join("in/b.jsonl"), &[again]);

    let lib = build_lib(dir.path(), &[dir.path().join("in")], None);
    let rows = rows(&lib);
    assert_eq!(rows.len(), 2);
    assert_ne!(rows[0]["id"], rows[1]["id"]);
    assert_ne!(rows[0]["content_digest"], rows[1]["content_digest"], "the records differ");
    assert_eq!(rows[0]["duplicate_group"], rows[1]["duplicate_group"]);
    assert_eq!(rows[0]["interaction_digest"], rows[1]["interaction_digest"]);
    for r in &rows {
        assert_eq!(
            (r["duplicate_group_size"].as_u64(), r["duplicate_outcomes_disagree"].as_bool()),
            (Some(2), Some(true))
        );
    }
    // Without a success rule Gym outcomes stay unknown: the rewards are what disagree.
    assert_eq!((rows[0]["reward"].as_f64(), rows[1]["reward"].as_f64()), (Some(1.0), Some(0.0)));
    let ids = column(&lib, "SELECT trajectory_ids FROM duplicate_groups");
    assert_eq!(ids, vec![json!([rows[0]["id"], rows[1]["id"]]).to_string()]);
    assert_eq!(column(&lib, "SELECT size || ',' || outcomes_disagree FROM duplicate_groups"), vec!["2,1"]);
    let d = &summary(&lib)["duplicates"];
    assert_eq!((d["groups"].as_u64(), d["groups_with_duplicates"].as_u64()), (Some(1), Some(1)));
    assert_eq!(d["groups_with_disagreeing_outcomes"].as_u64(), Some(1));
}

/// `bench/make_corpus.py`'s copying rule on real files: Gym lines get `_bench_copy` and lose
/// `_ng_task_index`; ATIF documents get a new `session_id`. Two copies of each are groups of
/// two with agreeing outcomes (5 Gym rollouts and 1 ATIF trajectory: 6 groups, 12 rows).
#[test]
fn make_corpus_copies_group_together() {
    let dir = tempfile::tempdir().unwrap();
    let rollouts = json_lines(&real("gym/tau2__example_rollouts.jsonl"));
    assert_eq!(rollouts.len(), 5);
    let mut gym = Vec::new();
    for copy in 0..2 {
        for r in &rollouts {
            let mut r = r.clone();
            r.insert("_bench_copy".into(), json!(copy));
            r.remove("_ng_task_index");
            gym.push(r);
        }
    }
    write_lines(&dir.path().join("in/gym/rollouts-000.jsonl"), &gym);
    let atif: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&std::fs::read(real("atif/terminus2-hello-world-v1.3.trajectory.json")).unwrap())
            .unwrap();
    for n in 0..2 {
        let mut d = atif.clone();
        d.insert("session_id".into(), json!(format!("bench-{n}")));
        let path = dir.path().join(format!("in/atif/t{n}.trajectory.json"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_vec(&d).unwrap()).unwrap();
    }

    let lib = build_lib(dir.path(), &[dir.path().join("in")], None);
    let rows = rows(&lib);
    assert_eq!(rows.len(), 12);
    assert!(rows.iter().all(|r| r["duplicate_group_size"] == 2 && r["duplicate_outcomes_disagree"] == false));
    let d = &summary(&lib)["duplicates"];
    assert_eq!(
        (d["groups"].as_u64(), d["groups_with_duplicates"].as_u64(), d["trajectories_in_duplicate_groups"].as_u64()),
        (Some(6), Some(6), Some(12))
    );
    assert_eq!(d["groups_with_disagreeing_outcomes"].as_u64(), Some(0));
}

/// `coverage.json`'s `duplicate_groups_across_files`, per source: the content digests that
/// more than one of the source's own trajectories has. Real files under three sources: `a`
/// holds the tau2 Gym file twice (5 records repeated), `b` the mrcr file once and the
/// tau2 file once (the tau2 copies in `a` are another source's: not counted in `b`), `c`
/// nothing repeated.
#[test]
fn repeated_content_is_counted_within_each_source() {
    let dir = tempfile::tempdir().unwrap();
    let tau2 = std::fs::read(real("gym/tau2__example_rollouts.jsonl")).unwrap();
    let mrcr = std::fs::read(real("gym/mrcr__example_rollouts.jsonl")).unwrap();
    let ruler = std::fs::read(real("gym/ruler__example_rollouts.jsonl")).unwrap();
    for (rel, bytes) in
        [("a/1.jsonl", &tau2), ("a/2.jsonl", &tau2), ("b/1.jsonl", &mrcr), ("b/2.jsonl", &tau2), ("c/1.jsonl", &ruler)]
    {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let registry = dir.path().join("sources.toml");
    let source = |name: &str| format!("[[source]]\nname = \"{name}\"\npaths = [\"{name}\"]\nrole = \"training\"\n\n");
    std::fs::write(&registry, ["a", "b", "c"].map(source).concat()).unwrap();
    let lib = build_lib(dir.path(), &[], Some(registry));
    let coverage: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lib.join("coverage.json")).unwrap()).unwrap();
    let got: Vec<(String, u64, u64)> = coverage["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let name = s["source"].as_str().unwrap().to_string();
            (name, s["accepted"].as_u64().unwrap(), s["duplicate_groups_across_files"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(got, [("a".to_string(), 10, 5), ("b".to_string(), 10, 0), ("c".to_string(), 5, 0)]);
}
