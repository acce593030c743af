//! Replay and deletion counterfactuals against the contacts test environment
//! (tests/env/contacts_env.py, Python 3 standard library). Synthetic by nature: no public
//! trajectory records environment state digests, so the trajectories in tests/env/contacts/
//! are recordings of the test environment (tests/env/contacts/make_fixtures.py).

use std::path::{Path, PathBuf};

use serde_json::json;
use trajkit_model::Trajectory;
use trajkit_verify::counterfactual::{counterfactual, Claims};
use trajkit_verify::env::{EnvError, EnvSpec};
use trajkit_verify::replay::{actions, replay, Agreement, ReplayError, ReplayOptions};
use trajkit_verify::state::check::Expectation;
use trajkit_verify::state::{IgnoreSpec, Store};

const INITIAL: &str = "3510c5acadfc87205e124abac7b76676f6f0647faae1ba5c3bdf94c8e754c2b9";
const FINAL: &str = "205e07b2a3d36096b9210944430dd5eb3941e7a7e84020a3e1cf6aba9e1dc699";
const ALTERNATE_FINAL: &str = "c09ebd05b3fc0419cb63be8a06c0e50d783b9100a731ff0e09a87ed035b9136a";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn env_cmd(flags: &str) -> String {
    format!("python3 {} {flags}", root().join("tests/env/contacts_env.py").display())
}

fn trajectory(name: &str) -> Trajectory {
    let bytes = std::fs::read(root().join("tests/env/contacts").join(name)).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn expect() -> Expectation {
    Expectation::load(&root().join("tests/env/contacts/tag_ada.expect.toml")).unwrap()
}

fn options(store: &Path, flags: &str, seed: u64) -> ReplayOptions {
    ReplayOptions {
        env: EnvSpec::new(env_cmd(flags)),
        seed,
        store: Store::create(store).unwrap(),
        ignore: IgnoreSpec::default(),
    }
}

/// The fixtures follow docs/record.md: `content_digest` is the SHA-256 of the canonical JSON
/// without `content_digest`, `id` and `provenance` (the schema-2 `state` digests included);
/// computed here from the serde form and by `trajkit_model::seal`, which must agree.
#[test]
fn fixtures_are_canonical_records_with_their_documented_digest() {
    use sha2::Digest;
    for name in ["tag_ada.json", "tag_ada_alternate.json", "tag_ada_collateral.json"] {
        let t = trajectory(name);
        let mut v = serde_json::to_value(&t).unwrap();
        let obj = v.as_object_mut().unwrap();
        for key in ["content_digest", "id", "provenance"] {
            obj.remove(key);
        }
        let digest = sha2::Sha256::digest(serde_json::to_vec(&v).unwrap());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, t.content_digest, "{name}");
        let mut sealed = t.clone();
        trajkit_model::seal(&mut sealed).unwrap();
        assert_eq!(sealed.content_digest, t.content_digest, "{name}");
        assert_eq!(t.state.as_ref().and_then(|s| s.initial.as_deref()), Some(INITIAL), "{name}");
    }
}

#[test]
fn actions_are_the_assistant_tool_calls_in_order() {
    let acts = actions(&trajectory("tag_ada.json"));
    let shown: Vec<(usize, usize, &str, &str)> =
        acts.iter().map(|a| (a.index, a.step, a.call_id.as_deref().unwrap_or(""), a.name.as_str())).collect();
    assert_eq!(
        shown,
        [(1, 1, "call_1", "search_contacts"), (2, 3, "call_2", "create_contact"), (3, 5, "call_3", "add_tag")]
    );
    assert_eq!(acts[1].arguments, json!({"name": "Ada Lovelace", "email": "ada@example.com"}));
    assert_eq!(acts[1].recorded, Some(json!("{\"id\":4}")));
}

#[test]
fn a_positive_replay_keeps_reset_discipline_and_reproduces_the_recorded_final_state() {
    let dir = tempfile::tempdir().unwrap();
    let t = trajectory("tag_ada.json");
    let exp = expect();
    let report = replay(&t, &options(dir.path(), "", 0), 3, Some(&exp)).unwrap();
    assert_eq!(report.verdict, "pass", "{:?}", report.findings);
    assert_eq!((report.reset, report.final_state, report.reproducible), (Agreement::Match, Agreement::Match, true));
    assert_eq!(report.runs.len(), 3);
    for run in &report.runs {
        assert_eq!((run["initial"].as_str(), run["final"].as_str()), (Some(INITIAL), Some(FINAL)));
        assert_eq!(run["steps"].as_array().map(Vec::len), Some(3));
    }
    // Action 1 (a search) leaves the state as reset left it.
    assert_eq!(report.runs[0]["steps"][0]["state"], INITIAL);
    let checks = report.checks.unwrap();
    assert_eq!(checks.len(), 3);
    assert_eq!(checks[0]["changes"], 4, "contact, tag and two audit rows");
    assert_eq!(checks[0]["effects"][0]["matched"], 1);
    assert_eq!(report.expect_sha256.as_deref(), Some(exp.sha256.as_str()));
}

#[test]
fn a_non_reproducible_environment_is_caught_at_the_first_diverging_action() {
    let dir = tempfile::tempdir().unwrap();
    let report = replay(&trajectory("tag_ada.json"), &options(dir.path(), "--flaky", 0), 2, None).unwrap();
    assert_eq!(report.verdict, "fail");
    assert!(!report.reproducible);
    assert_eq!((report.reset, report.final_state), (Agreement::Match, Agreement::Mismatch));
    let d = report.divergence.unwrap();
    assert_eq!((d.action, d.name.as_deref(), d.replay, d.against.as_str()), (2, Some("create_contact"), 2, "replay 1"));
    assert_eq!(d.differs, ["state"], "the observation ({{\"id\": 4}}) agrees; the stored timestamp does not");
    assert_eq!(
        report.findings.last().unwrap(),
        "replays disagree: replay 2 differs from replay 1 at action 2 (create_contact): state differs"
    );
}

#[test]
fn a_reset_to_another_state_violates_reset_discipline() {
    let dir = tempfile::tempdir().unwrap();
    let report = replay(&trajectory("tag_ada.json"), &options(dir.path(), "", 1), 1, None).unwrap();
    assert_eq!(report.reset, Agreement::Mismatch);
    let initial = report.runs[0]["initial"].as_str().unwrap().to_string();
    assert_eq!(
        report.findings[0],
        format!(
            "reset discipline violated: replay 1 reset to state {}, the trajectory recorded initial state {}",
            &initial[..12],
            &INITIAL[..12]
        )
    );
}

#[test]
fn an_observation_unlike_the_recorded_result_is_a_divergence_from_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = trajectory("tag_ada.json");
    t.steps[4].tool_results[0].content = Some(json!("{\"id\":5}").into());
    let report = replay(&t, &options(dir.path(), "", 0), 1, None).unwrap();
    let d = report.divergence.unwrap();
    assert_eq!((d.action, d.against.as_str()), (2, "record"));
    assert_eq!(
        (d.expected.clone(), d.got.clone()),
        (json!({"observation": "{\"id\":5}"}), json!({"observation": {"id": 4}}))
    );
}

#[test]
fn counterfactuals_find_trivial_actions_edges_strong_edges_predecessors_and_alternate_routes() {
    let dir = tempfile::tempdir().unwrap();
    let (t, alt, bad) =
        (trajectory("tag_ada.json"), trajectory("tag_ada_alternate.json"), trajectory("tag_ada_collateral.json"));
    let exp = expect();
    let claims = Claims { expect: Some(&exp), predecessors: vec![2, 3, 1], alternates: vec![&alt, &bad] };
    let r = counterfactual(&t, &options(dir.path(), "", 0), &claims).unwrap();
    assert_eq!(r.full["reproducible"], true);
    assert_eq!(r.full["check"]["passed"], true);
    let effects: Vec<String> = r.effects.iter().map(|e| format!("{} {}", e.id, e.change)).collect();
    assert_eq!(
        effects,
        [
            "audit_log.row[rowid=1] insert",
            "audit_log.row[rowid=2] insert",
            "contact_tags.row[contact_id=4,tag=\"vip\"] insert",
            "contacts.row[id=4] insert"
        ]
    );
    // Action 1 (search) is causally trivial: deleting it changes nothing.
    let d1 = &r.deletions[0];
    assert_eq!((d1.trivial, d1.final_state.as_str(), d1.lost.len(), d1.necessary), (true, FINAL, 0, Some(false)));
    // Action 2 (create) carries every effect; action 3 (add_tag) the tag and its audit row.
    assert_eq!(r.deletions[1].lost.len(), 4);
    assert_eq!(r.deletions[2].lost, ["audit_log.row[rowid=2]", "contact_tags.row[contact_id=4,tag=\"vip\"]"]);
    let edges: Vec<(usize, &str)> = r.edges.iter().map(|e| (e.action, e.effect.as_str())).collect();
    assert_eq!(edges.len(), 6);
    assert!(edges.contains(&(2, "contacts.row[id=4]")) && edges.contains(&(3, "audit_log.row[rowid=2]")));
    // Strong edge 2 -> 3: without the contact, add_tag inserts nothing (and says so).
    let strong: Vec<(usize, usize)> = r.strong_edges.iter().map(|e| (e.from, e.to)).collect();
    assert_eq!(strong, [(2, 3)]);
    let s = &r.strong_edges[0];
    assert_eq!((s.effect_full.len(), s.effect_without.len(), s.observation_changed), (2, 0, true));
    // Predecessor omission: 2 and 3 are necessary for the check, 1 is not.
    let claims: Vec<(usize, bool)> = r.predecessors.iter().map(|p| (p.action, p.holds)).collect();
    assert_eq!(claims, [(2, true), (3, true), (1, false)]);
    // Alternate routes: a different final state that passes the check is accepted.
    let a = &r.alternates[0];
    assert_eq!((a.accepted, a.same_final_as_reference, a.final_state.as_str()), (true, false, ALTERNATE_FINAL));
    let b = &r.alternates[1];
    assert!(!b.accepted);
    assert_eq!(
        b.check["failures"][1],
        "disallowed collateral effect: contacts.row[id=2] deleted (id=2 owner_id=1 name=\"Grace Hopper\" email=\"grace@example.org\" phone=\"+1 202 555 0102\" favorite=0 created_at=\"2024-04-01T08:00:00Z\")"
    );
    assert_eq!(r.verdict, "fail");
    assert_eq!(
        r.findings[0],
        "claimed predecessor action 1 (search_contacts) is not necessary: the state check still passes without it"
    );
    assert_eq!(r.findings.len(), 2);
}

#[test]
fn counterfactuals_refuse_a_non_reproducible_environment() {
    let dir = tempfile::tempdir().unwrap();
    let r =
        counterfactual(&trajectory("tag_ada.json"), &options(dir.path(), "--flaky", 0), &Claims::default()).unwrap();
    assert_eq!(r.full["reproducible"], false);
    assert!(r.deletions.is_empty());
    assert!(r.findings[0].starts_with("the environment is not reproducible (replay 2 differs from replay 1 at action 2 (create_contact): state differs)"), "{}", r.findings[0]);
}

#[test]
fn environment_failures_are_errors_that_name_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path(), "", 0);
    opts.env = EnvSpec::new("echo 'cannot start: no licence' >&2; exit 3");
    let err = replay(&trajectory("tag_ada.json"), &opts, 1, None).unwrap_err();
    assert!(matches!(err, ReplayError::Env(EnvError::Exited { .. })), "{err}");
    assert!(
        err.to_string().ends_with("exited before answering reset; its stderr ends with:\ncannot start: no licence"),
        "{err}"
    );
    opts.env = EnvSpec::new("echo not-json; read line");
    let err = replay(&trajectory("tag_ada.json"), &opts, 1, None).unwrap_err();
    assert!(err.to_string().contains("reset: bad answer: not JSON"), "{err}");
}
