//! ToolBench reader on the real published examples (tests/fixtures/real/toolbench).

mod common;

use common::{assert_figures, from_file, read, real, report};
use serde_json::json;
use trajkit_model::{Role, Status, TaskKeySource, Verification};

type Row = (&'static str, u64, u64, u64, u64, &'static [(&'static str, u64)], &'static [(&'static str, u64)]);

/// file, records, trajectories, steps, tool_calls, reasons, gaps (figures checked with
/// python: 7 train messages + the Finish observation from the tree; 5 queries).
const FIGURES: &[Row] = &[
    ("10_ChatGPT_DFS_woFilter_w2.json", 1, 1, 8, 3, &[], &[("truncated_observation", 1)]),
    ("G1_query.json", 5, 0, 0, 0, &[("not_a_rollout", 5)], &[]),
];

#[test]
fn every_real_toolbench_file_has_its_exact_figures() {
    let c = read(&[real("toolbench")]);
    assert_eq!(c.reports.len(), FIGURES.len(), "one report per fixture file");
    for &(name, records, trajectories, steps, tool_calls, reasons, gaps) in FIGURES {
        let rejected = reasons.iter().map(|(_, n)| n).sum::<u64>();
        let want = (records, trajectories, 0, steps, tool_calls, 0, rejected);
        assert_figures(report(&c, name), name, "toolbench", want, reasons, gaps);
    }
}

#[test]
fn the_answer_is_the_taken_path_with_the_finish_observation_from_the_tree() {
    let c = read(&[real("toolbench/10_ChatGPT_DFS_woFilter_w2.json")]);
    let t = &c.trajectories[0];
    use Role::*;
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, [System, User, Assistant, Tool, Assistant, Tool, Assistant, Tool]);
    let calls: Vec<(&str, Option<&str>)> =
        t.steps.iter().flat_map(|s| &s.tool_calls).map(|c| (c.name.as_str(), c.id.as_deref())).collect();
    assert_eq!(
        calls,
        [
            ("transitaires_for_transitaires", Some("call-2")),
            ("transitaire_for_transitaires", Some("call-4")),
            ("Finish", Some("call-6"))
        ]
    );
    assert_eq!(t.steps[4].tool_calls[0].arguments, json!({"is_id": "ACT_AGENCE_CALEDONIENNE_DE_TRANSIT"}));
    assert_eq!(t.steps[5].tool_results[0].call_id.as_deref(), Some("call-4"));
    let finish = &t.steps[7].tool_results[0];
    assert_eq!(finish.call_id.as_deref(), Some("call-6"));
    assert_eq!(finish.content.as_deref(), Some(&json!("{\"response\":\"successfully giving the final answer.\"}")));
    assert_eq!(
        (finish.extra.get("observation_code"), finish.extra.get("source")),
        (Some(&json!(3)), Some(&json!("tree")))
    );
    // The collector stopped the first observation at 1,024 characters and closed it with "...".
    let gaps: Vec<(&str, Option<usize>)> = t.gaps.iter().map(|g| (g.kind.as_str(), g.step)).collect();
    assert_eq!(gaps, [("truncated_observation", Some(3))]);
    assert_eq!(t.id, "toolbench-76a77721640045e0");
}

#[test]
fn answer_task_agent_outcome_and_extra() {
    let c = read(&[real("toolbench/10_ChatGPT_DFS_woFilter_w2.json")]);
    let t = &c.trajectories[0];
    assert_eq!(t.task.id.as_deref(), Some("10"), "the query id is the file name's prefix");
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash, "no G<n>_answer directory: no group");
    assert!(t.task.instruction.as_deref().is_some_and(|i| i.starts_with("Can you retrieve the contact details")));
    assert_eq!((t.agent.model.as_deref(), t.agent.name.as_deref()), (Some("ChatGPT"), Some("DFS_woFilter_w2")));
    assert_eq!(t.outcome.status, Status::Unknown, "win says an answer was given, not that it is right");
    assert_eq!(t.outcome.verification, Verification::Unverified);
    assert_eq!(t.extra.get("win"), Some(&json!(true)));
    assert!(t.extra.contains_key("tree") && t.extra.contains_key("compare_candidates"));
    assert_eq!(t.extra["answer_generation"]["train_messages_prefix_lengths"], json!([3, 5]));
    assert_eq!(t.extra["answer_generation"]["finish_type"], json!("give_answer"));
    assert_eq!(t.tools.as_ref().map(Vec::len), Some(3));
    let m = t.metrics.as_ref().expect("metrics");
    assert_eq!((m.extra.get("total_tokens"), m.extra.get("query_count")), (Some(&json!(2916)), Some(&json!(3))));
    assert_eq!(m.prompt_tokens, None, "total_tokens is not split by the source");
}

#[test]
fn in_the_producer_layout_the_group_makes_an_explicit_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let group = dir.path().join("answer/G1_answer");
    std::fs::create_dir_all(&group).expect("mkdir");
    let name = "10_ChatGPT_DFS_woFilter_w2.json";
    std::fs::copy(real(&format!("toolbench/{name}")), group.join(name)).expect("copy");
    let c = read(&[dir.path().to_path_buf()]);
    let t = &c.trajectories[0];
    assert_eq!((t.task.key.as_str(), t.task.key_source), ("toolbench/G1/10", TaskKeySource::Explicit));
}

#[test]
fn query_rows_are_counted_not_read_as_trajectories() {
    let c = read(&[real("toolbench/G1_query.json")]);
    let docs: Vec<Option<u64>> = c.rejections.iter().map(|r| r.document_index).collect();
    assert_eq!(docs, [Some(0), Some(1), Some(2), Some(3), Some(4)]);
    assert!(from_file(&c, "G1_query").is_empty());
}

mod synthetic {
    //! Rules that no real file shows: written here by hand, small on purpose, in the
    //! shapes ToolBench's code writes (DFS.py `to_json`, preprocess_toolllama_data.py).
    use super::common::read;
    use serde_json::json;
    use trajkit_model::Role;

    fn write(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    fn node(kind: &str, desc: &str, children: serde_json::Value) -> serde_json::Value {
        json!({"is_terminal": false, "pruned": false, "finished": false, "node_type": kind, "description": desc, "children": children})
    }

    #[test]
    fn pruned_branches_are_abandoned_branch_gaps() {
        let pruned = node("Action", "b", json!([node("Action Input", "{}", json!([]))]));
        let finish = node(
            "Action",
            "Finish",
            json!([{"node_type": "Action Input", "description": "{\"return_type\": \"give_answer\"}", "observation": "ok", "observation_code": 3, "children": []}]),
        );
        let taken = node(
            "Action",
            "a",
            json!([{"node_type": "Action Input", "description": "{}", "observation": "A", "children": [finish]}]),
        );
        let doc = json!({
            "win": true,
            "tree": {"size": 7, "tree": node("Action Input", "", json!([pruned, taken]))},
            "answer_generation": {"valid_data": true, "finish_type": "give_answer", "query": "q", "train_messages": [[
                {"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                {"role": "assistant", "content": null, "function_call": {"name": "a", "arguments": "{}"}},
                {"role": "function", "name": "a", "content": "A"},
                {"role": "assistant", "content": null, "function_call": {"name": "Finish", "arguments": "{\"return_type\": \"give_answer\"}"}}
            ]]}
        });
        let (_d, p) = write("7_ChatGPT_DFS_woFilter_w2.json", &doc.to_string());
        let c = read(&[p]);
        let t = &c.trajectories[0];
        let gaps: Vec<(&str, Option<usize>)> = t.gaps.iter().map(|g| (g.kind.as_str(), g.step)).collect();
        assert_eq!(gaps, [("abandoned_branch", Some(2))]);
        assert!(t.gaps[0].detail.as_deref().is_some_and(|d| d.contains("Action \"b\" (2 nodes)")));
        assert_eq!(t.steps.len(), 6, "5 messages and the Finish observation");
        assert_eq!(c.reports[0].gaps.get("abandoned_branch"), Some(&1));
    }

    #[test]
    fn react_text_in_sft_conversations_becomes_text_embedded_calls() {
        let doc = json!([{
            "id": "Step 4: find quotes",
            "conversations": [
                {"from": "system", "value": "You are AutoGPT"},
                {"from": "user", "value": "\nfind quotes\nBegin!\n"},
                {"from": "assistant", "value": "\nThought: I should call it\nAction: love_quote_for_olato_quotes\nAction Input: {}"},
                {"from": "function", "value": "{\"error\": \"\", \"response\": \"q\"}"},
                {"from": "assistant", "value": "\nThought: \nAction: Finish\nAction Input: {\"return_type\": \"give_answer\""}
            ]
        }]);
        let (_d, p) = write("G1_demo_DFS_woFilter_w2.json", &serde_json::to_string_pretty(&doc).expect("json"));
        let c = read(&[p]);
        assert_eq!(c.reports[0].format.as_deref(), Some("toolbench"));
        let t = &c.trajectories[0];
        let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
        let call = &t.steps[2].tool_calls[0];
        assert!(call.text_embedded && call.name == "love_quote_for_olato_quotes" && call.arguments == json!({}));
        assert_eq!(t.steps[2].reasoning.as_deref(), Some("I should call it"));
        assert_eq!(t.steps[3].tool_results[0].call_id, call.id);
        let last = &t.steps[4].tool_calls[0];
        assert!(last.arguments_invalid, "truncated JSON stays verbatim");
        assert_eq!(t.steps[4].reasoning, None);
        assert_eq!(t.task.instruction.as_deref(), Some("find quotes"));
        assert_eq!(t.extra.get("id"), Some(&json!("Step 4: find quotes")));
        let kinds: Vec<&str> = t.gaps.iter().map(|g| g.kind.as_str()).collect();
        assert_eq!(kinds, ["unanswered_tool_call", "invalid_tool_arguments"]);
    }
}
