//! Claude Code reader on real published session logs (tests/fixtures/real/claude_code,
//! see its NOTICE.md), plus small synthetic cases for rules no real file shows.
//!
//! Expected figures were counted independently with python from the files (the main
//! thread = ancestors of the last message plus the split-response and parallel-result
//! lines attached to it), not copied from the program's output.

mod common;

use common::{counts, from_file, read, real, report};
use serde_json::{json, Value};
use trajkit_model::{Authorship, Role, Status, TaskKeySource, Verification};

type Row = (&'static str, u64, u64, u64, u64, &'static [(&'static str, u64)], Option<&'static str>);

/// file (relative to the fixture dir), records, subagents, steps, tool_calls, gaps, part_of.
/// spotter/subagent.jsonl (lines 17-19 + 22) and spotter/tool_heavy.jsonl (lines 34 + 37) each
/// hold one API response split around a tool result: one assistant step each.
const FIGURES: &[Row] = &[
    ("codemie/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", 1, 2, 16, 6, &[], None),
    ("codemie/-tmp-private/agent-36541525.jsonl", 0, 0, 0, 0, &[], Some("4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")),
    ("codemie/-tmp-private/agent-50243ee8.jsonl", 0, 0, 0, 0, &[], Some("4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")),
    ("codemie/incremental-subagents/turn-2.jsonl", 1, 1, 28, 14, &[], None),
    ("codemie/incremental-subagents/turn-2/subagents/agent-a485154.jsonl", 0, 0, 0, 0, &[], Some("turn-2.jsonl")),
    ("codemie/session-624a4a58.jsonl", 1, 0, 125, 48, &[], None),
    ("codemie/session-9eda1058.jsonl", 1, 0, 14, 3, &[("unresolved_subagent_ref", 2)], None),
    ("spotter/short.jsonl", 1, 0, 7, 2, &[], None),
    ("spotter/subagent.jsonl", 1, 1, 33, 16, &[], None),
    ("spotter/tool_heavy.jsonl", 1, 0, 19, 6, &[], None),
];

#[test]
fn every_real_claude_code_file_has_its_exact_figures() {
    let c = read(&[real("claude_code")]);
    assert_eq!(c.reports.len(), FIGURES.len(), "one report per fixture file");
    for &(name, records, subagents, steps, tool_calls, gaps, part_of) in FIGURES {
        let r = report(&c, name);
        assert_eq!(r.format.as_deref(), Some("claude-code"), "{name}");
        let got = (r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.duplicate_records, r.rejected);
        assert_eq!(got, (records, records, subagents, steps, tool_calls, 0, 0), "{name}");
        assert!(r.reasons.is_empty(), "{name}");
        assert_eq!(r.gaps, counts(gaps), "{name} gaps");
        assert_eq!(r.part_of.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p)), part_of, "{name}");
        assert!(r.error.is_none(), "{name}");
    }
}

#[test]
fn task_subagent_file_is_nested_and_linked_to_its_call() {
    let c = read(&[real("claude_code/codemie/incremental-subagents")]);
    let t = from_file(&c, "turn-2.jsonl")[0];
    assert_eq!(t.session_id.as_deref(), Some("e9fb405b-169f-40eb-9396-7e75076f045d"));
    assert_eq!(t.agent.name.as_deref(), Some("claude-code"));
    assert_eq!(t.agent.version.as_deref(), Some("2.1.7"));
    assert_eq!(t.agent.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert!(t.id.starts_with("claude-code-") && t.id.len() == "claude-code-".len() + 16);
    // Lines 4-6 (thinking, text, tool_use) are one API response: one step.
    let s = &t.steps[1];
    assert_eq!(s.role, Role::Assistant);
    assert!(s.reasoning.is_some() && s.content.is_some());
    let call = &s.tool_calls[0];
    assert_eq!(call.name, "Task");
    assert_eq!(call.id.as_deref(), Some("toolu_bdrk_019PUUtqzQg8U5ogfuyQ7yLV"));
    assert_eq!(call.arguments["subagent_type"], json!("solution-architect"));
    let res = &t.steps[2];
    assert_eq!(res.role, Role::Tool);
    assert_eq!(res.tool_results[0].call_id.as_deref(), Some("toolu_bdrk_019PUUtqzQg8U5ogfuyQ7yLV"));
    assert_eq!(t.subagents.len(), 1);
    let sub = &t.subagents[0];
    assert_eq!(sub.spawned_by_tool_call.as_deref(), Some("toolu_bdrk_019PUUtqzQg8U5ogfuyQ7yLV"));
    assert_eq!(sub.spawned_by_step, Some(1));
    assert_eq!(res.tool_results[0].subagent_refs, vec![sub.trajectory.id.clone()]);
    assert_eq!(
        (sub.trajectory.steps.len(), sub.trajectory.steps.iter().map(|s| s.tool_calls.len()).sum::<usize>()),
        (27, 20)
    );
    assert!(sub.trajectory.provenance.path.ends_with("turn-2/subagents/agent-a485154.jsonl"));
    assert_eq!(t.outcome.status, Status::Unknown);
    assert_eq!(t.outcome.verification, Verification::Unverified);
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert!(t.task.instruction.as_deref().is_some_and(|i| i.starts_with("@\"solution-architect (agent)\"")));
    assert_eq!(t.task.id, None);
}

#[test]
fn parallel_tool_results_off_the_parent_chain_are_kept() {
    // Lines 29-31 are one response with three tool_use blocks; their results (32-34)
    // hang off different lines of it, so only one lies on the ancestor path of the end.
    let c = read(&[real("claude_code/codemie/incremental-subagents/turn-2.jsonl")]);
    let t = &c.trajectories[0];
    let i = t.steps.iter().position(|s| s.tool_calls.len() == 3).expect("the three-call step");
    let ids: Vec<_> = t.steps[i].tool_calls.iter().filter_map(|c| c.id.clone()).collect();
    let answered: Vec<_> = t.steps[i + 1..i + 4].iter().filter_map(|s| s.tool_results[0].call_id.clone()).collect();
    assert_eq!(answered.len(), 3);
    assert!(answered.iter().all(|a| ids.contains(a)));
    assert!(t.gaps.is_empty());
}

#[test]
fn old_layout_agent_files_are_subagents_of_their_session() {
    let c = read(&[real("claude_code/codemie/-tmp-private")]);
    let t = &c.trajectories[0];
    assert_eq!(c.trajectories.len(), 1);
    let subs: Vec<_> =
        t.subagents.iter().map(|s| s.trajectory.provenance.path.rsplit('/').next().unwrap_or("")).collect();
    assert_eq!(subs, ["agent-36541525.jsonl", "agent-50243ee8.jsonl"]);
    // Warmup sidechains are not spawned by a tool call.
    assert!(t.subagents.iter().all(|s| s.spawned_by_tool_call.is_none()));
    assert_eq!(t.subagents[0].trajectory.task.instruction.as_deref(), Some("Warmup"));
}

#[test]
fn compaction_boundary_continues_the_conversation() {
    // The compact_boundary line has parentUuid null and logicalParentUuid: the lines
    // before it stay on the kept conversation (no abandoned branch).
    let c = read(&[real("claude_code/codemie/session-624a4a58.jsonl")]);
    let t = &c.trajectories[0];
    assert!(t.gaps.is_empty());
    let b = t.steps.iter().position(|s| s.extra.get("subtype") == Some(&json!("compact_boundary"))).expect("boundary");
    assert_eq!(t.steps[b].role, Role::System);
    assert!(b > 50, "the boundary comes after the pre-compaction turns");
    let summary = &t.steps[b + 1];
    assert_eq!((summary.role, summary.authorship), (Role::User, Authorship::Unknown));
    // The first line is a harness caveat (isMeta): not the task instruction.
    assert_eq!(t.steps[0].authorship, Authorship::Unknown);
    assert!(!t.task.instruction.as_deref().unwrap_or("").starts_with("Caveat"));
}

#[test]
fn usage_becomes_step_metrics_with_cache_reads_included() {
    let c = read(&[real("claude_code/codemie/-tmp-private")]);
    let t = &c.trajectories[0];
    let s = t.steps.iter().find(|s| s.role == Role::Assistant).expect("assistant");
    let m = s.metrics.as_ref().expect("usage");
    // input 3 + cache creation 35066 + cache read 0; output 395 from the response's last line
    // (its first three lines carry the streaming placeholder 4, kept in extra.message.usage).
    assert_eq!((m.prompt_tokens, m.cached_tokens, m.completion_tokens), (Some(35069), Some(0), Some(395)));
    assert_eq!(s.extra["message"]["usage"]["output_tokens"], json!(4));
    assert_eq!(m.extra["cache_creation_input_tokens"], json!(35066));
    assert!(t.metrics.is_none(), "a session log states no run totals");
}

#[test]
fn streamed_response_takes_the_last_lines_usage_and_keeps_each_lines_values() {
    // Lines 17-19 are msg_bdrk_011G94...: output_tokens 1, 1, 219; stop_reason null, null,
    // "tool_use"; three timestamps.
    let c = read(&[real("claude_code/codemie/session-624a4a58.jsonl")]);
    let t = &c.trajectories[0];
    let s = t
        .steps
        .iter()
        .find(|s| s.extra.get("message").and_then(|m| m.get("id")) == Some(&json!("msg_bdrk_011G94YvQ5bKjk7nngi5DUMK")))
        .expect("the response");
    assert_eq!(s.timestamp.as_deref(), Some("2026-01-07T20:24:57.934Z"));
    let m = s.metrics.as_ref().expect("usage");
    assert_eq!(
        (m.completion_tokens, m.prompt_tokens, m.cached_tokens),
        (Some(219), Some(14 + 18649 + 50989), Some(50989))
    );
    assert_eq!(s.extra["message"]["usage"]["output_tokens"], json!(1), "the first line's differing usage");
    assert_eq!(s.extra["message"]["stop_reason"], json!(null));
    let merged = s.extra["merged_lines"].as_array().expect("merged lines");
    let got: Vec<(Value, Value)> = merged.iter().map(|e| (e["line"].clone(), e["timestamp"].clone())).collect();
    assert_eq!(got, [(json!(18), json!("2026-01-07T20:24:59.927Z")), (json!(19), json!("2026-01-07T20:24:59.948Z"))]);
    // Line 18 repeats line 17's message fields: only its (placeholder) usage differs from the
    // final one. Line 19's usage is the step's metrics; its stop_reason is the final one.
    let keys: Vec<&String> = merged[0]["message"].as_object().map(|m| m.keys().collect()).unwrap_or_default();
    assert_eq!(keys, ["usage"]);
    assert_eq!(merged[0]["message"]["usage"]["output_tokens"], json!(1));
    assert_eq!(merged[1]["message"], json!({"stop_reason": "tool_use"}), "the final stop_reason");
}

#[test]
fn a_response_split_around_a_tool_result_is_one_decision() {
    // tool_heavy.jsonl lines 34 and 37: msg_019BN3FR..., a tool_use, its result (36), then a
    // second tool_use of the same response. One step with both calls, results after it.
    let c = read(&[real("claude_code/spotter/tool_heavy.jsonl")]);
    let t = &c.trajectories[0];
    let i = t
        .steps
        .iter()
        .position(|s| s.tool_calls.iter().any(|c| c.id.as_deref() == Some("toolu_01VpPeBD2ziigLLpybShAGoU")))
        .expect("the response");
    let ids: Vec<_> = t.steps[i].tool_calls.iter().filter_map(|c| c.id.as_deref()).collect();
    assert_eq!(ids, ["toolu_01VpPeBD2ziigLLpybShAGoU", "toolu_017Q5Sr8KaSgowYhbKXBnfV2"]);
    assert_eq!(t.steps[i].extra["merged_lines"][0]["line"], json!(37));
    let results: Vec<_> = t.steps[i + 1..i + 3].iter().filter_map(|s| s.tool_results[0].call_id.as_deref()).collect();
    assert_eq!(results, ids, "results stay after their calls");
    assert!(t.gaps.is_empty());
}

#[test]
fn progress_only_subagent_becomes_a_nested_trajectory() {
    // spotter/subagent.jsonl: 25 hook_progress + 19 agent_progress lines (37-55); the Task
    // call toolu_01Cz2Pnv7qNcnK1ZiocxWhQX (line 36) runs agent afb92ff, whose transcript
    // exists only in those lines' `data.message`: the prompt (line 37), 9 tool_use lines
    // from 5 API responses (38/40/42, 44/46, 48/50, 52, 54) and 9 tool results.
    let c = read(&[real("claude_code/spotter/subagent.jsonl")]);
    let t = &c.trajectories[0];
    let progress = t.extra["progress"].as_array().expect("progress lines");
    assert_eq!(progress.len(), 44);
    assert_eq!(progress[0]["line"], json!(2));
    assert_eq!(progress[0]["data"]["hookName"], json!("SessionStart:startup"));
    assert_eq!(progress[0]["data"]["command"], json!("/home/marco/.claude/hooks/tmux-waiting.sh clear"));
    let agent: Vec<&Value> = progress.iter().filter(|p| p["data"]["type"] == json!("agent_progress")).collect();
    assert_eq!(agent.len(), 19);
    // The nested message moved to the subagent; the progress line keeps its uuid.
    assert_eq!(agent[0]["line"], json!(37));
    assert!(agent.iter().all(|p| p["data"].get("message").is_none()));
    assert_eq!(agent[0]["data"]["message_uuid"], json!("a2bb9623-3017-492e-b392-36b3dcaac2e3"));
    assert!(t.gaps.is_empty(), "{:?}", t.gaps);

    assert_eq!(t.subagents.len(), 1);
    let sub = &t.subagents[0];
    assert_eq!(sub.spawned_by_tool_call.as_deref(), Some("toolu_01Cz2Pnv7qNcnK1ZiocxWhQX"));
    let spawn = sub.spawned_by_step.expect("spawning step");
    assert!(t.steps[spawn].tool_calls.iter().any(|c| c.name == "Task"));
    let result = t
        .steps
        .iter()
        .flat_map(|s| &s.tool_results)
        .find(|r| r.call_id.as_deref() == Some("toolu_01Cz2Pnv7qNcnK1ZiocxWhQX"))
        .expect("Task result");
    assert_eq!(result.subagent_refs, vec![sub.trajectory.id.clone()]);

    let s = &sub.trajectory;
    assert_eq!(s.extra["agentId"], json!("afb92ff"));
    assert_eq!(s.extra["transcript_source"], json!("agent_progress"));
    assert_eq!(s.extra["progress_messages"], json!(19));
    assert_eq!(s.session_id.as_deref(), Some("491e126e-1e71-469c-ade2-fcc8af567c74"));
    assert_eq!(s.agent.version.as_deref(), Some("2.1.38"));
    assert_eq!(s.agent.model.as_deref(), Some("claude-haiku-4-5-20251001"));
    let roles: Vec<Role> = s.steps.iter().map(|s| s.role).collect();
    use Role::{Assistant as A, Tool as T, User as U};
    assert_eq!(roles, [U, A, T, T, T, A, T, T, A, T, T, A, T, A, T]);
    let calls: Vec<usize> = s.steps.iter().map(|s| s.tool_calls.len()).collect();
    assert_eq!(calls, [0, 3, 0, 0, 0, 2, 0, 0, 2, 0, 0, 1, 0, 1, 0]);
    assert_eq!(s.steps.iter().map(|s| s.tool_results.len()).sum::<usize>(), 9);
    assert!(s.gaps.is_empty(), "every call answered: {:?}", s.gaps);
    assert_eq!(s.steps[0].source_id.as_ref().and_then(Value::as_str), Some("a2bb9623-3017-492e-b392-36b3dcaac2e3"));
    assert_eq!(s.steps[1].extra["merged_lines"][1]["line"], json!(42));
    assert_eq!(s.task.instruction.as_deref().map(|i| i.starts_with("Draft bead content")), Some(true));
    assert_eq!(s.outcome.status, Status::Unknown);
}

#[test]
fn metadata_lines_go_to_extra() {
    let c = read(&[real("claude_code/codemie/session-9eda1058.jsonl")]);
    let t = &c.trajectories[0];
    assert_eq!(t.extra["summaries"].as_array().map(Vec::len), Some(16));
    assert_eq!(t.extra["file_history_snapshots"].as_array().map(Vec::len), Some(3));
    assert_eq!(t.extra["cwd"], json!("/Users/user/repo"));
}

mod synthetic {
    //! Rules that no real fixture shows, written here by hand (labelled synthetic).
    use super::common::read;
    use serde_json::json;
    use std::io::Write;
    use trajkit_model::Role;

    fn session(lines: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        let mut f = std::fs::File::create(&path).expect("create");
        for l in lines {
            writeln!(f, "{l}").expect("write");
        }
        (dir, path)
    }

    fn user(uuid: &str, parent: &str, text: &str, side: bool) -> String {
        let parent = if parent.is_empty() { "null".to_string() } else { format!("\"{parent}\"") };
        format!(
            r#"{{"type":"user","uuid":"{uuid}","parentUuid":{parent},"isSidechain":{side},"sessionId":"S","message":{{"role":"user","content":"{text}"}}}}"#
        )
    }

    fn assistant(uuid: &str, parent: &str, id: &str, block: &str, side: bool) -> String {
        format!(
            r#"{{"type":"assistant","uuid":"{uuid}","parentUuid":"{parent}","isSidechain":{side},"sessionId":"S","message":{{"id":"{id}","role":"assistant","model":"m","content":[{block}]}}}}"#
        )
    }

    #[test]
    fn a_rewound_turn_is_an_abandoned_branch_not_a_step() {
        let lines = [
            user("u1", "", "sort a list", false),
            assistant("a1", "u1", "m1", r#"{"type":"text","text":"which sort?"}"#, false),
            user("u2a", "a1", "quicksort", false),
            assistant("a2a", "u2a", "m2", r#"{"type":"text","text":"ok quick"}"#, false),
            user("u2b", "a1", "mergesort", false),
            assistant("a2b", "u2b", "m3", r#"{"type":"text","text":"ok merge"}"#, false),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (_d, p) = session(&refs);
        let c = read(&[p]);
        let t = &c.trajectories[0];
        let texts: Vec<_> = t.steps.iter().filter_map(|s| s.content.as_ref()).collect();
        assert_eq!(
            texts,
            [
                &serde_json::json!("sort a list"),
                &serde_json::json!("which sort?"),
                &serde_json::json!("mergesort"),
                &serde_json::json!("ok merge")
            ]
        );
        assert_eq!(t.gaps.len(), 1);
        assert_eq!(t.gaps[0].kind.as_str(), "abandoned_branch");
        assert_eq!(t.gaps[0].step, Some(1));
        assert_eq!(t.extra["abandoned_branches"][0]["lines"], serde_json::json!([3, 4]));
    }

    #[test]
    fn inline_sidechains_become_subagents_linked_by_prompt() {
        let lines = [
            user("u1", "", "research it", false),
            assistant(
                "a1",
                "u1",
                "m1",
                r#"{"type":"tool_use","id":"toolu_T","name":"Task","input":{"prompt":"look around","description":"d"}}"#,
                false,
            ),
            user("s1", "", "look around", true),
            assistant("s2", "s1", "m9", r#"{"type":"text","text":"found it"}"#, true),
            r#"{"type":"user","uuid":"r1","parentUuid":"a1","isSidechain":false,"sessionId":"S","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_T","content":"found it"}]}}"#.to_string(),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (_d, p) = session(&refs);
        let c = read(&[p]);
        let r = &c.reports[0];
        assert_eq!((r.steps, r.tool_calls, r.subagents), (3, 1, 1));
        let t = &c.trajectories[0];
        let sub = &t.subagents[0];
        assert_eq!(sub.spawned_by_tool_call.as_deref(), Some("toolu_T"));
        assert_eq!(sub.spawned_by_step, Some(1));
        let roles: Vec<Role> = sub.trajectory.steps.iter().map(|s| s.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant]);
        assert_eq!(t.steps[2].tool_results[0].subagent_refs, vec![sub.trajectory.id.clone()]);
        assert!(t.gaps.is_empty());
    }

    #[test]
    fn a_split_response_keeps_the_second_parts_usage() {
        // SYNTHETIC (reviewer's split.jsonl): m1 = tool_use t1, result, tool_use t2.
        let lines = [
            r#"{"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s", "message": {"role": "user", "content": "hi"}}"#,
            r#"{"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s", "message": {"id": "m1", "role": "assistant", "model": "x", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}], "usage": {"input_tokens": 10, "output_tokens": 1}, "stop_reason": null}}"#,
            r#"{"type": "user", "uuid": "r1", "parentUuid": "a1", "sessionId": "s", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}"#,
            r#"{"type": "assistant", "uuid": "a2", "parentUuid": "a1", "sessionId": "s", "message": {"id": "m1", "role": "assistant", "model": "x", "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}], "usage": {"input_tokens": 10, "output_tokens": 50}, "stop_reason": "tool_use"}}"#,
            r#"{"type": "user", "uuid": "r2", "parentUuid": "a2", "sessionId": "s", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]}}"#,
        ];
        let (_d, p) = session(&lines);
        let c = read(&[p]);
        let t = &c.trajectories[0];
        let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Tool]);
        let s = &t.steps[1];
        assert_eq!(s.tool_calls.len(), 2);
        assert_eq!(s.metrics.as_ref().and_then(|m| m.completion_tokens), Some(50));
        assert_eq!(s.extra["message"]["usage"]["output_tokens"], json!(1));
        assert_eq!(s.extra["merged_lines"][0]["message"], json!({"stop_reason": "tool_use"}));
        assert!(t.gaps.is_empty());
    }

    #[test]
    fn overflowing_usage_leaves_prompt_tokens_absent() {
        // SYNTHETIC (reviewer's ovf.jsonl): input_tokens u64::MAX + 5 cache reads.
        let lines = [
            user("u1", "", "hi", false),
            r#"{"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "S", "isSidechain": false, "message": {"id": "m1", "role": "assistant", "model": "x", "content": [{"type": "text", "text": "yo"}], "usage": {"input_tokens": 18446744073709551615, "cache_read_input_tokens": 5, "output_tokens": 1}}}"#.to_string(),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (_d, p) = session(&refs);
        let c = read(&[p]);
        let m = c.trajectories[0].steps[1].metrics.as_ref().expect("usage");
        assert_eq!((m.prompt_tokens, m.completion_tokens, m.cached_tokens), (None, Some(1), Some(5)));
        assert_eq!(m.extra["input_tokens"], json!(u64::MAX));
        assert_eq!(m.extra["cache_read_input_tokens"], json!(5));
    }

    #[test]
    fn a_bad_line_rejects_the_session_naming_the_line() {
        let good = user("u1", "", "hi", false);
        let (_d, p) = session(&[good.as_str(), "{\"type\":\"user\",\"uuid\":"]);
        let c = read(&[p]);
        assert_eq!(c.rejections[0].reason.as_str(), "invalid_json");
        assert_eq!(c.rejections[0].problems[0].json_path, "$[line 2]");
    }
}
