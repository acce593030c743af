//! OpenCode sessions. The real fixtures (tests/fixtures/real/opencode, see its NOTICE.md) are
//! OpenCode's own session, message and part objects as captured from a running OpenCode by
//! opencode.nvim's test data (Apache-2.0), laid out as OpenCode's storage tree (a parent
//! session whose `task` call spawned an `explore` child session, OpenCode 1.2.15) and as an
//! `opencode export` document (an `edit` call, a patch, an attached file, OpenCode 0.15.0).
//! The objects are verbatim; the layout was rebuilt from the capture (no published storage
//! tree or export file under a license was found). Rules no real file shows (an unreadable
//! part file, a malformed part, a pending tool, an assistant error) use small synthetic
//! sessions written below, each said so.

mod common;

use std::path::{Path, PathBuf};

use common::{counts, read, real, report};
use serde_json::{json, Value};
use trajkit_model::{GapKind, Role, Status, TaskKeySource};

const PARENT: &str = "ses_341f480cfffekQwFX2LabeJFAU";
const CHILD: &str = "ses_341f3e676ffez6WUF6zpok7dUZ";
const EXPORT: &str = "ses_628d8425dffe9s3gzVjQ6L1iC2.json";

fn storage() -> PathBuf {
    real("opencode").join("storage")
}

/// The storage tree: one trajectory (the parent session) with the child session nested
/// under its `task` call; every message, part and the child's session file consumed.
#[test]
fn storage_tree_is_one_session_with_its_child_nested() {
    let c = read(&[storage()]);
    assert_eq!(c.reports.len(), 68 - 1, "2 session files, 14 message files, 51 part files");
    let r = report(&c, &format!("{PARENT}.json"));
    assert_eq!(r.format.as_deref(), Some("opencode"));
    assert_eq!((r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.rejected), (1, 1, 1, 4, 1, 0));
    assert_eq!(r.gaps, counts(&[]));
    let consumed =
        c.reports.iter().filter(|f| f.part_of.as_deref().is_some_and(|p| p.ends_with(&format!("{PARENT}.json"))));
    assert_eq!(consumed.count(), 66, "the child session file and all 14 + 51 message and part files");
    assert_eq!(c.trajectories.len(), 1);
    let t = &c.trajectories[0];
    assert_eq!(t.session_id.as_deref(), Some(PARENT));
    assert_eq!(
        (t.agent.name.as_deref(), t.agent.model.as_deref(), t.agent.version.as_deref()),
        (Some("opencode"), Some("claude-sonnet-4.6"), Some("1.2.15"))
    );
    assert_eq!(t.extra["providerID"], json!("github-copilot"));
    assert_eq!(t.outcome.status, Status::Unknown, "OpenCode records no outcome");
    assert_eq!(t.task.key_source, TaskKeySource::InstructionHash);
    assert!(t.task.instruction.as_deref().is_some_and(|i| i.starts_with("can you explore the code base")));
    let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
    let call = &t.steps[1].tool_calls[0];
    assert_eq!((call.name.as_str(), call.id.as_deref()), ("task", Some("tooluse_C0boORGPEm10D1XX0tfO6K")));
    assert_eq!(call.arguments["subagent_type"], json!("explore"));
    let result = &t.steps[2].tool_results[0];
    assert_eq!(result.call_id, call.id);
    assert_eq!(result.extra["status"], json!("completed"));
    // Step tokens: OpenCode 1.x `input` excludes the cache (total = input + output +
    // reasoning + cache read + cache write), so prompt = input + cache read + cache write.
    assert_eq!(tokens(t), (24_448, 450, 11_389));
    let sub = &t.subagents[0];
    assert_eq!((sub.spawned_by_step, sub.spawned_by_tool_call.as_deref()), (Some(1), call.id.as_deref()));
    assert_eq!(result.subagent_refs, std::slice::from_ref(&sub.trajectory.id));
    let child = &sub.trajectory;
    assert_eq!(child.session_id.as_deref(), Some(CHILD));
    assert_eq!(child.extra["parentID"], json!(PARENT));
    assert_eq!((child.steps.len(), calls(child), linked(child)), (20, 18, 18));
    assert_eq!(child.gaps, []);
    assert_eq!(tokens(child), (170_493, 2_484, 136_346));
    assert_eq!(child.steps[1].metrics.as_ref().and_then(|m| m.extra.get("total")), Some(&json!(6114)));
}

/// The export document: user text (its synthetic parts in extra), one `edit` call answered
/// by id, the patch and attached file parts kept, tokens of OpenCode 0.15.0 (no `total`:
/// `input` as recorded).
#[test]
fn export_document_has_its_exact_figures() {
    let c = read(&[real("opencode").join("export")]);
    let r = report(&c, EXPORT);
    assert_eq!(r.format.as_deref(), Some("opencode"));
    assert_eq!((r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.rejected), (1, 1, 0, 4, 1, 0));
    assert_eq!(r.gaps, counts(&[]));
    let t = &c.trajectories[0];
    assert_eq!(t.session_id.as_deref(), Some("ses_628d8425dffe9s3gzVjQ6L1iC2"));
    assert_eq!(
        (t.agent.model.as_deref(), t.agent.version.as_deref(), t.outcome.status),
        (Some("claude-sonnet-4.5"), Some("0.15.0"), Status::Unknown)
    );
    assert_eq!(t.task.instruction.as_deref(), Some("can you add \"great\" before \"string\" in @diff-test.txt?"));
    let user = &t.steps[0];
    assert_eq!(user.extra["synthetic_parts"].as_array().map(Vec::len), Some(2));
    assert_eq!(user.extra["parts"][0]["type"], json!("file"));
    assert_eq!(user.timestamp.as_deref(), Some("2025-10-12T06:42:56.233000000Z"));
    let call = &t.steps[1].tool_calls[0];
    assert_eq!((call.name.as_str(), call.arguments["newString"].clone()), ("edit", json!("this is a great string")));
    assert_eq!(t.steps[2].tool_results[0].call_id, call.id);
    assert_eq!(t.steps[1].extra["parts"][0]["type"], json!("patch"));
    assert_eq!(tokens(t), (11_471 + 11_606, 108 + 2, 11_081));
}

/// Both fixtures through the CLI's detection: the export and the session file claimed at 90,
/// message and part files left to their consumer.
#[test]
fn detection_claims_session_files_and_exports_by_their_keys() {
    let c = read(&[real("opencode")]);
    let claimed: Vec<&str> = c.reports.iter().filter(|r| r.records > 0).map(|r| r.path.as_str()).collect();
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    assert!(c.reports.iter().all(|r| r.format.as_deref() == Some("opencode") && r.error.is_none()));
    assert_eq!(c.trajectories.len(), 2);
}

/// Synthetic: a storage tree whose one part file is not JSON. The part is rejected
/// (`invalid_json`, the file named) and the session is read without it.
#[test]
fn synthetic_unreadable_part_file_is_rejected_and_the_session_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("storage");
    write(
        &root.join("session/p1/ses_a.json"),
        &json!({"id": "ses_a", "projectID": "p1", "version": "1.2.15", "time": {"created": 1}}),
    );
    write(
        &root.join("message/ses_a/msg_1.json"),
        &json!({"id": "msg_1", "sessionID": "ses_a", "role": "user", "time": {"created": 2}}),
    );
    write(&root.join("part/msg_1/prt_1.json"), &json!({"id": "prt_1", "type": "text", "text": "fix the build"}));
    std::fs::write(root.join("part/msg_1/prt_2.json"), b"{\"id\": \"prt_2\", \"type\": ").expect("write");
    let c = read(&[root]);
    let r = report(&c, "ses_a.json");
    assert_eq!((r.records, r.trajectories, r.steps, r.rejected), (2, 1, 1, 1));
    assert_eq!(r.reasons, counts(&[("invalid_json", 1)]));
    let message = &c.rejections[0].problems[0].message;
    assert!(message.contains("storage/part/msg_1/prt_2.json"), "{message}");
    assert_eq!(c.trajectories[0].task.instruction.as_deref(), Some("fix the build"));
}

/// Synthetic: export documents breaking the part rules are rejected at the field, by reason.
#[test]
fn synthetic_malformed_exports_are_rejected_by_reason_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = [
        ("no_state.json", json!([{"type": "tool", "callID": "c1", "tool": "bash"}]), "$.messages[0].parts[0].state"),
        ("not_object.json", json!(["text"]), "$.messages[0].parts[0]"),
        ("no_type.json", json!([{"text": "x"}]), "$.messages[0].parts[0].type"),
    ];
    for (name, parts, _) in &bad {
        let doc = json!({"info": {"id": "ses_b", "version": "1.2.15"}, "messages": [
            {"info": {"id": "msg_1", "role": "assistant", "modelID": "m"}, "parts": parts}]});
        write(&dir.path().join(name), &doc);
    }
    let c = read(&[dir.path().to_path_buf()]);
    for (name, _, path) in bad {
        let r = report(&c, name);
        assert_eq!((r.format.as_deref(), r.rejected, r.trajectories), (Some("opencode"), 1, 0), "{name}");
        assert_eq!(r.reasons, counts(&[("schema_violation", 1)]), "{name}");
        assert!(c.rejections.iter().any(|x| x.problems[0].json_path == path), "{name}: {path}");
    }
}

/// Synthetic: a `running` tool (no output yet) is a call without a result (a gap); an
/// assistant `error` is an incomplete generation; a `task` whose child is not in the export
/// is an unresolved subagent reference; the outcome stays unknown; an `error` tool state is
/// a result carrying the error.
#[test]
fn synthetic_pending_tool_error_and_missing_child_are_gaps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = json!({"info": {"id": "ses_c", "version": "1.2.15"}, "messages": [
        {"info": {"id": "msg_1", "role": "user"}, "parts": [{"type": "text", "text": "run it"}]},
        {"info": {"id": "msg_2", "role": "assistant", "modelID": "m1", "providerID": "p",
                  "error": {"name": "APIError", "data": {"message": "overloaded"}}},
         "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "try bash"},
            {"type": "tool", "callID": "c1", "tool": "bash", "state": {"status": "running", "input": {"command": "make"}}},
            {"type": "tool", "callID": "c2", "tool": "read", "state": {"status": "error", "input": {}, "error": "no such file"}},
            {"type": "tool", "callID": "c3", "tool": "task", "state": {"status": "completed", "input": {}, "output": "done",
             "metadata": {"sessionId": "ses_child"}}},
            {"type": "step-finish", "tokens": {"input": 10, "output": 5, "reasoning": 2, "cache": {"read": 3, "write": 1}, "total": 21}, "cost": 0.5}]}]});
    write(&dir.path().join("e.json"), &doc);
    let c = read(&[dir.path().join("e.json")]);
    let r = report(&c, "e.json");
    assert_eq!((r.trajectories, r.steps, r.tool_calls, r.rejected), (1, 3, 3, 0));
    let gaps = counts(&[("incomplete_generation", 1), ("unanswered_tool_call", 1), ("unresolved_subagent_ref", 1)]);
    assert_eq!(r.gaps, gaps);
    let t = &c.trajectories[0];
    assert_eq!(t.outcome.status, Status::Unknown);
    let error = t.gaps.iter().find(|g| g.kind == GapKind::IncompleteGeneration).expect("the error's gap");
    assert_eq!((error.step, error.detail.as_deref()), (Some(1), Some("APIError: overloaded")), "at the assistant step");
    assert_eq!(t.steps[1].reasoning.as_deref(), Some("try bash"));
    assert_eq!(t.steps[2].tool_results[0].content.as_deref(), Some(&json!("no such file")));
    let m = t.steps[1].metrics.as_ref().expect("step-finish metrics");
    assert_eq!(
        (m.prompt_tokens, m.completion_tokens, m.cached_tokens, m.cost_usd),
        (Some(14), Some(7), Some(3), Some(0.5))
    );
}

/// Steps' summed (prompt, completion, cached) tokens.
fn tokens(t: &trajkit_model::Trajectory) -> (u64, u64, u64) {
    let sum =
        |f: fn(&trajkit_model::Metrics) -> Option<u64>| t.steps.iter().filter_map(|s| f(s.metrics.as_ref()?)).sum();
    (sum(|m| m.prompt_tokens), sum(|m| m.completion_tokens), sum(|m| m.cached_tokens))
}

fn calls(t: &trajkit_model::Trajectory) -> usize {
    t.steps.iter().map(|s| s.tool_calls.len()).sum()
}

/// Results whose call id names a call of the trajectory.
fn linked(t: &trajkit_model::Trajectory) -> usize {
    let ids: Vec<&str> = t.steps.iter().flat_map(|s| &s.tool_calls).filter_map(|c| c.id.as_deref()).collect();
    t.steps
        .iter()
        .flat_map(|s| &s.tool_results)
        .filter(|r| r.call_id.as_deref().is_some_and(|id| ids.contains(&id)))
        .count()
}

fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, serde_json::to_vec_pretty(v).expect("json")).expect("write");
}

/// A real session info file copied out of its storage tree is claimed but rejected with the
/// reason said (its messages are not beside it), not read as an empty session.
#[test]
fn a_session_file_outside_its_storage_tree_is_rejected_saying_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = storage().join("session/29d43526f88157cd4edd071b899dd01f240b771b").join(format!("{PARENT}.json"));
    let copy = dir.path().join(format!("{PARENT}.json"));
    std::fs::copy(&src, &copy).expect("copy");
    let c = read(&[copy]);
    let r = report(&c, &format!("{PARENT}.json"));
    assert_eq!((r.format.as_deref(), r.records, r.trajectories, r.rejected), (Some("opencode"), 1, 0, 1));
    assert_eq!(r.reasons, counts(&[("schema_violation", 1)]));
    assert!(c.rejections[0].problems[0].message.contains("outside OpenCode's storage tree"));
}

/// Synthetic (no real tree with a grandchild was found): a child session that spawns its own
/// child nests two levels deep, every id distinct, every file consumed by the top session.
#[test]
fn synthetic_grandchild_sessions_nest_with_distinct_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("storage");
    let session = |id: &str, parent: Option<&str>, spawns: Option<&str>| {
        let mut info = json!({"id": id, "projectID": "p1", "version": "1.2.15", "time": {"created": 1}});
        if let Some(p) = parent {
            info["parentID"] = json!(p);
        }
        write(&root.join(format!("session/p1/{id}.json")), &info);
        let (user, asst) = (format!("msg_{id}_1"), format!("msg_{id}_2"));
        write(&root.join(format!("message/{id}/{user}.json")), &json!({"id": user, "role": "user"}));
        write(&root.join(format!("part/{user}/prt_1.json")), &json!({"type": "text", "text": format!("work of {id}")}));
        write(
            &root.join(format!("message/{id}/{asst}.json")),
            &json!({"id": asst, "role": "assistant", "modelID": "m"}),
        );
        if let Some(child) = spawns {
            let state = json!({"status": "completed", "input": {}, "output": "ok", "metadata": {"sessionId": child}});
            let part = json!({"type": "tool", "callID": format!("call_{id}"), "tool": "task", "state": state});
            write(&root.join(format!("part/{asst}/prt_1.json")), &part);
        } else {
            write(&root.join(format!("part/{asst}/prt_1.json")), &json!({"type": "text", "text": "done"}));
        }
    };
    session("ses_a", None, Some("ses_b"));
    session("ses_b", Some("ses_a"), Some("ses_c"));
    session("ses_c", Some("ses_b"), None);
    let c = read(&[root]);
    let r = report(&c, "ses_a.json");
    assert_eq!((r.trajectories, r.subagents, r.rejected), (1, 2, 0));
    assert_eq!(r.gaps, counts(&[]));
    assert_eq!(
        c.reports.iter().filter(|f| f.part_of.is_some()).count(),
        2 + 3 * 4,
        "2 session files, 12 message and part files"
    );
    let a = &c.trajectories[0];
    let b = &a.subagents[0].trajectory;
    let grandchild = &b.subagents[0].trajectory;
    assert_eq!((b.session_id.as_deref(), grandchild.session_id.as_deref()), (Some("ses_b"), Some("ses_c")));
    assert_eq!(b.subagents[0].spawned_by_tool_call.as_deref(), Some("call_ses_b"));
    assert!(a.id != b.id && b.id != grandchild.id && a.id != grandchild.id);
}
