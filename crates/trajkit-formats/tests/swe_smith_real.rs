//! SWE-smith reader on real files (tests/fixtures/real/swe_smith): the fine-tuning JSONL
//! of SWE-smith's test logs and the Agent Data Protocol raw export (a JSON array).
//! Figures were computed independently with Python from the files.

mod common;

use common::{assert_figures, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Role, Status, TaskKeySource, Verification};

type Row = (&'static str, u64, u64, u64, u64, u64, u64, &'static [(&'static str, u64)], &'static [(&'static str, u64)]);

/// file, records, trajectories, steps, tool_calls, duplicate_records, rejected, reasons, gaps.
const FIGURES: &[Row] = &[
    ("adp_swe-smith_sample_raw.json", 5, 5, 237, 116, 0, 0, &[], &[("unanswered_tool_call", 5)]),
    ("ft_xml_example.jsonl", 3, 3, 209, 103, 0, 0, &[], &[("unanswered_tool_call", 3)]),
];

#[test]
fn every_real_swe_smith_file_has_its_exact_figures() {
    // The folder also holds SWE-agent `.traj` files of another reader: read ours by name.
    let paths: Vec<_> = FIGURES.iter().map(|row| real(&format!("swe_smith/{}", row.0))).collect();
    let c = read(&paths);
    assert_eq!(c.reports.len(), FIGURES.len(), "one report per fixture file");
    for &(name, records, trajectories, steps, tool_calls, dups, rejected, reasons, gaps) in FIGURES {
        let want = (records, trajectories, 0, steps, tool_calls, dups, rejected);
        assert_figures(report(&c, name), name, "swe-smith", want, reasons, gaps);
    }
}

#[test]
fn adp_elements_are_records_with_their_index() {
    let c = read(&[real("swe_smith/adp_swe-smith_sample_raw.json")]);
    let ts = from_file(&c, "adp_swe-smith_sample_raw.json");
    let idx: Vec<Option<u64>> = ts.iter().map(|t| t.provenance.document_index).collect();
    assert_eq!(idx, [Some(0), Some(1), Some(2), Some(3), Some(4)]);
    let t = ts[0];
    assert_eq!(t.id, "swe-smith-ec386d8789d58de7");
    assert_eq!(t.task.id.as_deref(), Some("arrow-py__arrow.1d70d009.lm_rewrite__nuzjfyur"));
    assert_eq!(t.task.key, "arrow-py__arrow.1d70d009.lm_rewrite__nuzjfyur");
    assert_eq!(t.task.key_source, TaskKeySource::Explicit);
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Success, Verification::SourceEvaluator));
    assert_eq!(t.agent.model.as_deref(), Some("claude-3-7-sonnet-20250219"));
    assert_eq!(t.session_id.as_deref(), Some("arrow-py__arrow.1d70d009.lm_rewrite__nuzjfyur.l13ggwmx"));
    // The ADP export's own counter id stays in extra, as does the patch.
    assert_eq!(t.extra["id"], json!("arrow-py__arrow.1d70d009.lm_rewrite__nuzjfyur.l13ggwmx_1"));
    assert!(t.extra.contains_key("patch"));
}

#[test]
fn xml_calls_are_parsed_and_linked_to_the_next_observation() {
    let c = read(&[real("swe_smith/adp_swe-smith_sample_raw.json")]);
    let t = from_file(&c, "adp_swe-smith")[0];
    let roles: Vec<Role> = t.steps[..4].iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::Environment]);
    let call = &t.steps[2].tool_calls[0];
    assert_eq!(call.name, "bash");
    assert_eq!(
        call.arguments,
        json!({"command": "find /testbed -type f -name \"*.py\" | grep -v \"__pycache__\" | sort"})
    );
    assert!(call.text_embedded);
    assert_eq!(call.id.as_deref(), Some("text-call-2-0"));
    // The original text is kept as the step's content.
    assert!(t.steps[2].content.as_ref().and_then(|v| v.as_str()).is_some_and(|s| s.ends_with("</function>")));
    let obs = &t.steps[3];
    assert_eq!(obs.extra["role"], json!("user"), "the source role is kept");
    assert_eq!(obs.tool_results[0].call_id.as_deref(), Some("text-call-2-0"));
    assert!(obs.tool_results[0]
        .content
        .as_ref()
        .and_then(|v| v.as_str())
        .is_some_and(|s| s.starts_with("OBSERVATION:\n")));
    let edit = &t.steps[4].tool_calls[0];
    assert_eq!(edit.name, "str_replace_editor");
    assert_eq!(edit.arguments, json!({"command": "view", "path": "/testbed/arrow/arrow.py"}));
    // The final submit has no observation.
    let last = t.steps.last().expect("steps");
    assert_eq!(last.tool_calls[0].name, "submit");
    assert_eq!(t.gaps.len(), 1);
    assert_eq!(t.gaps[0].kind.as_str(), "unanswered_tool_call");
    assert_eq!(t.gaps[0].step, Some(t.steps.len() - 1));
}

#[test]
fn the_other_observation_templates_are_linked_too() {
    let c = read(&[real("swe_smith/adp_swe-smith_sample_raw.json")]);
    let moto = from_file(&c, "adp_swe-smith")[4];
    let r = &moto.steps[3].tool_results[0];
    assert!(r.content.as_ref().and_then(|v| v.as_str()).is_some_and(|s| s.starts_with("Observation: /testbed")));
    assert_eq!(r.call_id.as_deref(), Some("text-call-2-0"));
    let arrow = from_file(&c, "adp_swe-smith")[0];
    let r = &arrow.steps[29].tool_results[0];
    assert_eq!(r.content.as_deref(), Some(&json!("Your command ran successfully and did not produce any output.")));
    assert_eq!(r.call_id.as_deref(), Some("text-call-28-0"));
}

#[test]
fn fine_tuning_lines_have_no_outcome() {
    let c = read(&[real("swe_smith/ft_xml_example.jsonl")]);
    let ts = from_file(&c, "ft_xml_example.jsonl");
    let t = ts[0];
    assert_eq!(t.id, "swe-smith-22cb06c281dc33b3");
    assert_eq!(t.provenance.line, Some(1));
    assert_eq!(t.task.id.as_deref(), Some("pandas-dev__pandas.95280573.pr_53652"));
    assert_eq!((t.outcome.status, t.outcome.verification), (Status::Unknown, Verification::Unverified));
    assert_eq!((t.agent.model.as_deref(), t.session_id.as_deref()), (None, None));
    assert!(t.task.instruction.as_deref().is_some_and(|s| s.starts_with("<uploaded_files>")));
    let call = &t.steps[2].tool_calls[0];
    assert_eq!(
        call.arguments,
        json!({"command": "find /testbed -type f -name \"*.py\" | grep -v \"__pycache__\" | grep -v \"test_\" | head -20"})
    );
    assert!(t.extra.is_empty(), "{:?}", t.extra.keys().collect::<Vec<_>>());
}

mod synthetic {
    //! Rules that no real file shows: written here by hand, small on purpose.
    use super::common::read;
    use serde_json::json;
    use std::io::Write;

    fn file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::File::create(&path).and_then(|mut f| f.write_all(text.as_bytes())).expect("write");
        (dir, path)
    }

    #[test]
    fn messages_as_a_json_string_and_resolved_false() {
        let msgs = json!([
            {"role": "system", "content": "s"}, {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "<function=bash>\n<parameter=command>ls</parameter>\n</function>"},
            {"role": "user", "content": "OBSERVATION:\na"}
        ]);
        let row = json!({"messages": msgs.to_string(), "instance_id": "o__r.1.x", "resolved": false, "traj_id": "t1", "model": "m"});
        let (_d, p) = file("x.jsonl", &format!("{row}\n{row}\n"));
        let c = read(&[p]);
        let r = &c.reports[0];
        assert_eq!((r.format.as_deref(), r.records, r.trajectories, r.duplicate_records), (Some("swe-smith"), 2, 1, 1));
        let t = &c.trajectories[0];
        assert_eq!(t.outcome.status, trajkit_model::Status::Failure);
        assert!(t.gaps.is_empty());
        assert_eq!(t.steps[3].tool_results[0].call_id.as_deref(), Some("text-call-2-0"));
    }

    #[test]
    fn two_calls_in_one_turn_are_not_paired_by_position() {
        let msgs = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "<function=a>\n</function><function=b>\n</function>"},
            {"role": "user", "content": "OBSERVATION:\nboth"},
            {"role": "assistant", "content": "no call here"},
            {"role": "user", "content": "Your last output did not use any tool calls!"}
        ]);
        let row = json!({"messages": msgs, "instance_id": "i", "traj_id": "t"});
        let (_d, p) = file("x.jsonl", &format!("{row}\n"));
        let c = read(&[p]);
        let t = &c.trajectories[0];
        assert_eq!(t.steps[2].tool_results[0].call_id, None);
        assert!(t.steps[4].tool_results.is_empty(), "harness feedback after a turn without calls");
        assert_eq!(t.steps[4].content.as_deref(), Some(&json!("Your last output did not use any tool calls!")));
        let kinds: Vec<&str> = t.gaps.iter().map(|g| g.kind.as_str()).collect();
        assert_eq!(kinds, ["result_without_call", "unanswered_tool_call", "unanswered_tool_call"]);
    }

    #[test]
    fn bad_records_are_rejected_with_their_index() {
        let text = r#"[{"messages": [], "instance_id": "a", "traj_id": "t"}, {"messages": "[oops", "instance_id": "b", "traj_id": "t"}, {"messages": [{"role": "robot"}], "instance_id": "c", "traj_id": "t"}]"#;
        let (_d, p) = file("raw.json", text);
        let c = read(&[p]);
        let r = &c.reports[0];
        assert_eq!((r.records, r.trajectories, r.rejected), (3, 1, 2));
        assert_eq!(c.trajectories[0].gaps[0].kind.as_str(), "no_steps");
        let got: Vec<(Option<u64>, &str, &str)> = c
            .rejections
            .iter()
            .map(|r| (r.document_index, r.reason.as_str(), r.problems[0].json_path.as_str()))
            .collect();
        assert_eq!(got, [(Some(1), "invalid_json", "$.messages"), (Some(2), "invalid_value", "$.messages[0].role")]);
    }
}
