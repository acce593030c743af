use super::*;
use serde_json::json;
use trajkit_model::ToolCall;

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn contacts(name: &str) -> Trajectory {
    serde_json::from_slice(&std::fs::read(root().join("tests/env/contacts").join(name)).unwrap()).unwrap()
}

fn expectation() -> Expectation {
    Expectation::load(&root().join("tests/env/contacts/tag_ada.expect.toml")).unwrap()
}

const INSTRUCTION: &str = "Add Ada Lovelace (ada@example.com) to my contacts and tag her as vip.";

fn summary_of(m: &[Material]) -> Vec<(MaterialKind, &str, Option<&str>, &str)> {
    m.iter().map(|m| (m.kind, m.from.as_str(), m.field.as_deref(), m.value.as_str())).collect()
}

#[test]
fn the_contacts_task_hides_contact_id_4_and_owner_id_1() {
    // The instruction states "Ada", "Ada Lovelace", the e-mail and "vip"; the witness's
    // observations ("[]", {"id":4}, {"ok":true}) are all shorter than the minimum.
    let m = material(INSTRUCTION, Some(&contacts("tag_ada.json")), &expectation());
    assert_eq!(
        summary_of(&m),
        vec![
            (MaterialKind::WitnessArgument, "witness steps[5].tool_calls[0] add_tag", Some("contact_id"), "4"),
            (MaterialKind::ExpectedValue, "expect[0] contacts", Some("owner_id"), "1"),
            (MaterialKind::ExpectedValue, "expect[1] contact_tags", Some("contact_id"), "4"),
        ]
    );
    // The witness and its alternate route, as solvers, saw none of it ({"id":4} names
    // another field).
    let solvers = [contacts("tag_ada.json"), contacts("tag_ada_alternate.json")];
    assert!(find_leaks(&m, &solvers).is_empty());
}

/// Synthetic (no recorded witness has a long observation): an observation counts as a
/// leak in a system prompt, not in the answer to the same call; short values need their
/// field name.
#[test]
fn observations_are_earned_by_the_same_call_and_short_values_need_their_field() {
    let long = "[{\"id\":7,\"name\":\"Ada Lovelace\",\"phone\":\"+44 20 7946 0000\"}]";
    let mut w = contacts("tag_ada.json");
    w.steps[2].tool_results[0].content = Some(json!(long).into());
    let m = material(INSTRUCTION, Some(&w), &expectation());
    assert_eq!(m.iter().filter(|m| m.kind == MaterialKind::WitnessObservation).count(), 1);

    let mut earned = contacts("tag_ada.json");
    earned.id = "earned".into();
    earned.steps[2].tool_results[0].content = Some(json!(long).into());
    let mut other_call = earned.clone();
    other_call.id = "other-call".into();
    other_call.steps[1].tool_calls[0] =
        ToolCall { arguments: json!({"query": "Lovelace"}).into(), ..earned.steps[1].tool_calls[0].clone() };
    let mut told = contacts("tag_ada.json");
    told.id = "told".into();
    told.steps.insert(0, Step::new(Role::System, Some(json!(format!("Known: {long}; you have 4 contacts.")))));
    let leaks = find_leaks(&m, &[earned, other_call, told]);
    let got: Vec<(&str, &str, MaterialKind)> =
        leaks.iter().map(|l| (l.trajectory.as_str(), l.field.as_str(), l.kind)).collect();
    assert_eq!(
        got,
        vec![
            ("other-call", "steps[2].tool_results[0].content", MaterialKind::WitnessObservation),
            ("told", "steps[0].content", MaterialKind::WitnessObservation),
        ]
    );
}
