//! Task admission from evidence recorded by real replays and counterfactuals of the
//! contacts test environment (synthetic by nature, see tests/env/README.md). One evidence
//! directory admits the task; each variant removes or spoils the evidence of one question.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use trajkit_model::Trajectory;
use trajkit_model::{Role, Step};
use trajkit_verify::admission::{admit, admit_with_solvers, render_human, Answer};
use trajkit_verify::counterfactual::{counterfactual, Claims};
use trajkit_verify::env::EnvSpec;
use trajkit_verify::isolation::MaterialKind;
use trajkit_verify::replay::{replay, ReplayOptions};
use trajkit_verify::state::check::Expectation;
use trajkit_verify::state::{IgnoreSpec, Store};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn trajectory(name: &str) -> Trajectory {
    serde_json::from_slice(&std::fs::read(root().join("tests/env/contacts").join(name)).unwrap()).unwrap()
}

fn options(store: &Path, seed: u64) -> ReplayOptions {
    let cmd = format!("python3 {}", root().join("tests/env/contacts_env.py").display());
    ReplayOptions { env: EnvSpec::new(cmd), seed, store: Store::create(store).unwrap(), ignore: IgnoreSpec::default() }
}

fn write_json(path: &Path, v: &impl serde::Serialize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
}

fn attempts(dir: &Path, passed: usize, total: usize) {
    let lines: Vec<String> =
        (0..total).map(|i| json!({"attempt": format!("a{i}"), "passed": i < passed}).to_string()).collect();
    std::fs::write(dir.join("attempts.jsonl"), lines.join("\n") + "\n").unwrap();
}

fn review(dir: &Path, denotes: bool) {
    write_json(
        &dir.join("review.json"),
        &json!({"reviewer": "r.ada", "outcome_worth_expressing": true, "instruction_denotes_outcome": denotes}),
    );
}

/// A task directory with task.json next to a copy of the expectation.
fn task(dir: &Path, extra: Value) -> PathBuf {
    let t = dir.join("task");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::copy(root().join("tests/env/contacts/tag_ada.expect.toml"), t.join("expect.toml")).unwrap();
    let mut v = json!({"id": "contacts/tag-ada", "instruction": "Add Ada Lovelace (ada@example.com) to my contacts and tag her as vip.", "expect": "expect.toml"});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    write_json(&t.join("task.json"), &v);
    t.join("task.json")
}

/// Evidence of a good task: a positive replay, counterfactuals with essential actions 2
/// and 3 and an accepted alternate route, a review, and 3 of 10 solver attempts passed.
fn good_evidence(dir: &Path) -> PathBuf {
    let ev = dir.join("evidence");
    let exp = Expectation::load(&root().join("tests/env/contacts/tag_ada.expect.toml")).unwrap();
    let opts = options(&dir.join("store"), 0);
    let t = trajectory("tag_ada.json");
    let r = replay(&t, &opts, 2, Some(&exp)).unwrap();
    write_json(&ev.join("replays/tag_ada.json"), &r);
    let alt = trajectory("tag_ada_alternate.json");
    let claims = Claims { expect: Some(&exp), predecessors: vec![2, 3], alternates: vec![&alt] };
    write_json(&ev.join("counterfactuals/tag_ada.json"), &counterfactual(&t, &opts, &claims).unwrap());
    review(&ev, true);
    attempts(&ev, 3, 10);
    ev
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn answers(task: &Path, ev: &Path) -> (bool, [Answer; 4]) {
    let r = admit(task, ev).unwrap();
    (r.admitted, [r.feasibility.answer, r.meaning.answer, r.correctness.answer, r.learning_value.answer])
}

const YES: Answer = Answer::Yes;

#[test]
fn each_question_is_answered_from_its_own_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let task_json = task(d, json!({}));
    let ev = good_evidence(d);

    let record = admit(&task_json, &ev).unwrap();
    assert!(record.admitted);
    assert_eq!(record.feasibility.reason, "1 of 1 replay reports reach the outcome from the recorded reset state");
    assert_eq!(record.meaning.reason, "r.ada: the outcome is worth expressing and the instruction denotes it");
    assert_eq!(
        record.correctness.reason,
        "the state check passes on 1 replay reports; 2 essential-action deletions make it fail"
    );
    assert_eq!(
        record.learning_value.reason,
        "3/10 attempts passed (rate 0.300, Wilson 95% [0.108, 0.603]): pass rate inside band (0, 1)"
    );
    let lv = record.learning_value.figures.as_ref().unwrap();
    assert_eq!((lv["passes"].as_u64(), lv["attempts"].as_u64()), (Some(3), Some(10)));

    // Meaning absent: unanswered, never passed; the other three answers do not move.
    let v = d.join("no-review");
    copy_dir(&ev, &v);
    std::fs::remove_file(v.join("review.json")).unwrap();
    assert_eq!(answers(&task_json, &v), (false, [YES, Answer::Unanswered, YES, YES]));
    review(&v, false);
    assert_eq!(answers(&task_json, &v), (false, [YES, Answer::No, YES, YES]));

    // Learning value: solved k/k is correct but not useful; 0/k too.
    let v = d.join("always-solved");
    copy_dir(&ev, &v);
    attempts(&v, 10, 10);
    let r = admit(&task_json, &v).unwrap();
    assert_eq!((r.admitted, r.correctness.answer, r.learning_value.answer), (false, YES, Answer::No));
    assert_eq!(
        r.learning_value.reason,
        "10/10 attempts passed (rate 1.000, Wilson 95% [0.722, 1.000]): pass rate outside band (0, 1)"
    );
    attempts(&v, 0, 10);
    assert_eq!(answers(&task_json, &v).1[3], Answer::No);
    std::fs::remove_file(v.join("attempts.jsonl")).unwrap();
    assert_eq!(answers(&task_json, &v).1[3], Answer::Unanswered);
    // A band on the whole Wilson interval: 3/10 gives [0.108, 0.603], not inside [0.2, 0.8].
    let strict = task(&d.join("strict"), json!({"learning_value": {"band": [0.2, 0.8], "criterion": "interval"}}));
    assert_eq!(answers(&strict, &ev), (false, [YES, YES, YES, Answer::No]));

    // Correctness: no counterfactual evidence is unanswered; a claimed essential action
    // whose deletion still passes the check is a no.
    let v = d.join("no-counterfactuals");
    copy_dir(&ev, &v);
    std::fs::remove_dir_all(v.join("counterfactuals")).unwrap();
    assert_eq!(answers(&task_json, &v), (false, [YES, YES, Answer::Unanswered, YES]));
    let exp = Expectation::load(&root().join("tests/env/contacts/tag_ada.expect.toml")).unwrap();
    let claims = Claims { expect: Some(&exp), predecessors: vec![1], alternates: vec![] };
    let bad = counterfactual(&trajectory("tag_ada.json"), &options(&d.join("store"), 0), &claims).unwrap();
    write_json(&v.join("counterfactuals/claim_1.json"), &bad);
    let r = admit(&task_json, &v).unwrap();
    assert_eq!((r.feasibility.answer, r.correctness.answer), (YES, Answer::No));
    assert_eq!(
        r.correctness.reason,
        "counterfactuals/claim_1.json: deleting claimed essential action 1 does not make the check fail"
    );

    // Feasibility: a replay that reset elsewhere reaches nothing the task is about.
    let v = d.join("wrong-reset");
    copy_dir(&ev, &v);
    let wrong = replay(&trajectory("tag_ada.json"), &options(&d.join("store"), 1), 1, Some(&exp)).unwrap();
    write_json(&v.join("replays/tag_ada.json"), &wrong);
    let r = admit(&task_json, &v).unwrap();
    assert_eq!((r.feasibility.answer, r.meaning.answer, r.learning_value.answer), (Answer::No, YES, YES));
    assert_eq!(r.feasibility.reason, "no replay reaches the outcome from the recorded reset state");
    // Evidence for another expectation does not count: unanswered.
    let other = task(&d.join("other"), json!({}));
    std::fs::write(other.with_file_name("expect.toml"), "[[allow]]\ntable = \"audit_log\"\n").unwrap();
    let r = admit(&other, &ev).unwrap();
    assert_eq!((r.feasibility.answer, r.correctness.answer), (Answer::Unanswered, Answer::Unanswered));
}

#[test]
fn malformed_task_and_evidence_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = task(d, json!({"expect": "../escape.toml"}));
    let ev = d.join("evidence");
    std::fs::create_dir_all(&ev).unwrap();
    let err = admit(&t, &ev).unwrap_err().to_string();
    assert!(
        err.ends_with("task.json:1: expect: \"../escape.toml\" must be a relative path inside the task's directory"),
        "{err}"
    );
    let t = task(d, json!({"expect": "expect.toml"}));
    std::fs::write(ev.join("attempts.jsonl"), "{\"passed\": true}\n{\"passed\": \"yes\"}\n").unwrap();
    let err = admit(&t, &ev).unwrap_err().to_string();
    assert!(err.ends_with("attempts.jsonl:2: passed: want true or false"), "{err}");
}

/// A solver run: a recorded run of the task under another id, with `step` inserted at `at`.
fn solver(id: &str, at: usize, role: Role, text: &str) -> Trajectory {
    let mut t = trajectory("tag_ada.json");
    t.id = id.into();
    t.steps.insert(at, Step::new(role, Some(json!(text))));
    t
}

#[test]
fn solver_isolation_refuses_a_task_whose_solvers_saw_the_witness_or_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let task_json = task(d, json!({"witness": "witness.json"}));
    std::fs::copy(root().join("tests/env/contacts/tag_ada.json"), d.join("task/witness.json")).unwrap();
    let ev = good_evidence(d);

    // The recorded runs as solvers: they saw the instruction and their own tool results.
    let clean = [trajectory("tag_ada.json"), trajectory("tag_ada_alternate.json")];
    let r = admit_with_solvers(&task_json, &ev, Some(&clean)).unwrap();
    let iso = r.isolation.as_ref().unwrap();
    assert_eq!((r.admitted, iso.isolated, iso.solvers, iso.material.len()), (true, true, 2, 3));
    assert!(render_human(&r).ends_with(
        "  isolation: yes — 2 solver trajectories saw none of 3 pieces of witness-only material and expected values\n"
    ));

    // A system prompt carrying the witness's route: contact_id 4 is the witness's argument
    // and the check's expected value; the rest the instruction states.
    let route = solver(
        "solver-route",
        0,
        Role::System,
        "You manage contacts. A known-good route: search_contacts(query=\"Ada\"), \
         create_contact(name=\"Ada Lovelace\", email=\"ada@example.com\"), add_tag(contact_id=4, tag=\"vip\").",
    );
    // A user turn that gives away the check's owner_id.
    let told = solver("solver-told", 1, Role::User, "It is checked that the contact is saved with owner_id = 1.");
    let r = admit_with_solvers(&task_json, &ev, Some(&[clean[0].clone(), route, told])).unwrap();
    let answers = [r.feasibility.answer, r.meaning.answer, r.correctness.answer, r.learning_value.answer];
    assert_eq!((r.admitted, answers), (false, [YES; 4]));
    let iso = r.isolation.as_ref().unwrap();
    let leaks: Vec<_> = iso
        .leaks
        .iter()
        .map(|l| {
            (
                l.trajectory.as_str(),
                l.step,
                l.field.as_str(),
                l.kind,
                l.from.as_str(),
                l.material_field.as_deref(),
                l.value.as_str(),
            )
        })
        .collect();
    assert_eq!(
        leaks,
        vec![
            (
                "solver-route",
                Some(0),
                "steps[0].content",
                MaterialKind::WitnessArgument,
                "witness steps[5].tool_calls[0] add_tag",
                Some("contact_id"),
                "4"
            ),
            (
                "solver-route",
                Some(0),
                "steps[0].content",
                MaterialKind::ExpectedValue,
                "expect[1] contact_tags",
                Some("contact_id"),
                "4"
            ),
            (
                "solver-told",
                Some(1),
                "steps[1].content",
                MaterialKind::ExpectedValue,
                "expect[0] contacts",
                Some("owner_id"),
                "1"
            ),
        ]
    );
    let human = render_human(&r);
    assert!(human.starts_with("task contacts/tag-ada: NOT ADMITTED\n"), "{human}");
    assert!(human.ends_with(
        "  isolation: no — 3 leaks in 2 of 3 solver trajectories\n\
         \x20   LEAK solver-route (tests/env/contacts/tag_ada.json) steps[0].content: witness argument contact_id = \"4\" (from witness steps[5].tool_calls[0] add_tag)\n\
         \x20   LEAK solver-route (tests/env/contacts/tag_ada.json) steps[0].content: expected value contact_id = \"4\" (from expect[1] contact_tags)\n\
         \x20   LEAK solver-told (tests/env/contacts/tag_ada.json) steps[1].content: expected value owner_id = \"1\" (from expect[0] contacts)\n"
    ), "{human}");
    // Without solvers, isolation is not asked: the record is the four questions as before.
    assert!(admit(&task_json, &ev).unwrap().isolation.is_none());
}
