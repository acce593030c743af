//! Per-trajectory quality fields, each computed independently from the record alone:
//! structural validity, action/observation completeness, eligibility and the quality
//! tier. The policy is documented in docs/quality.md; change both together.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use trajkit_model::{GapKind, Role, Status, Step, Trajectory, Verification};

/// Gap kinds that mean content is missing or cut short: such a record is not complete.
/// A truncated observation counts: the decisions after it acted on output the record lacks.
pub const INCOMPLETE_GAPS: [GapKind; 5] = [
    GapKind::NoSteps,
    GapKind::IncompleteGeneration,
    GapKind::UnresolvedSubagentRef,
    GapKind::UnresolvedContinuation,
    GapKind::TruncatedObservation,
];

/// Tier names, in order; a row's `quality_tier` indexes this list.
pub const TIERS: [&str; 5] = ["invalid", "valid", "sft", "sft_outcome_reported", "sft_outcome_verified"];

/// What scoring found for one record.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    pub structural_valid: bool,
    pub structural_problems: Vec<String>,
    pub action_observation_completeness: Option<f64>,
    pub decisions: u64,
    pub steps: u64,
    pub tool_calls: u64,
    pub subagents: u64,
    pub gaps: BTreeMap<String, u64>,
    pub complete: bool,
    pub sft_eligible: bool,
    pub status: Status,
    pub quality_tier: u8,
}

/// Scores a record; `status` is its outcome after the source's success rule.
pub fn score(t: &Trajectory, status: Status) -> Scores {
    let own: Vec<&Step> = t.steps.iter().filter(|s| !s.copied_context && !s.subagent).collect();
    let decisions = own.iter().filter(|s| s.role == Role::Assistant).count() as u64;
    let structural_problems = structural_problems(t);
    let structural_valid = structural_problems.is_empty();
    let completeness = completeness(t);
    let mut gaps = BTreeMap::new();
    count_gaps(t, &mut gaps);
    let complete = !t.gaps.iter().any(|g| INCOMPLETE_GAPS.contains(&g.kind));
    let sft_eligible = structural_valid && complete && decisions >= 2 && completeness == Some(1.0);
    let quality_tier = tier(structural_valid, sft_eligible, status, t.outcome.verification);
    Scores {
        structural_valid,
        structural_problems,
        action_observation_completeness: completeness,
        decisions,
        steps: own.len() as u64,
        tool_calls: own.iter().map(|s| s.tool_calls.len() as u64).sum(),
        subagents: count_subagents(t),
        gaps,
        complete,
        sft_eligible,
        status,
        quality_tier,
    }
}

/// The ordered tier policy (docs/quality.md): each tier requires everything below it.
pub fn tier(structural_valid: bool, sft_eligible: bool, status: Status, verification: Verification) -> u8 {
    if !structural_valid {
        return 0;
    }
    if !sft_eligible {
        return 1;
    }
    if status == Status::Unknown {
        return 2;
    }
    match verification {
        Verification::SourceEvaluator | Verification::IndependentlyReproduced => 4,
        Verification::SourceReported | Verification::Unverified => 3,
    }
}

fn count_subagents(t: &Trajectory) -> u64 {
    t.subagents.iter().map(|s| 1 + count_subagents(&s.trajectory)).sum()
}

fn count_gaps(t: &Trajectory, out: &mut BTreeMap<String, u64>) {
    for g in &t.gaps {
        *out.entry(g.kind.as_str().to_string()).or_default() += 1;
    }
    for s in &t.subagents {
        count_gaps(&s.trajectory, out);
    }
}

/// Why a record is not structurally sound: ids, roles, ordering, tool-call linkage.
/// Only what the record states is checked (calls without ids cannot be linked, so they
/// are not held against it).
pub fn structural_problems(t: &Trajectory) -> Vec<String> {
    let mut problems = Vec::new();
    if t.id.is_empty() {
        problems.push("empty id".to_string());
    }
    if t.task.key.is_empty() {
        problems.push("empty task key".to_string());
    }
    if t.steps.is_empty() {
        problems.push("no steps".to_string());
    }
    check_roles(&t.steps, &mut problems);
    check_linkage(&t.steps, &mut problems);
    check_timestamps(&t.steps, &mut problems);
    problems
}

fn check_roles(steps: &[Step], problems: &mut Vec<String>) {
    let mut calls_seen = false;
    for (i, s) in steps.iter().enumerate() {
        if !s.tool_calls.is_empty() && s.role != Role::Assistant {
            problems.push(format!("step {i}: tool calls on a {} step", s.role.as_str()));
        }
        calls_seen |= !s.tool_calls.is_empty();
        if s.role == Role::Tool && !calls_seen && !s.copied_context {
            problems.push(format!("step {i}: tool step before any tool call"));
        }
    }
}

/// Every stated call id is unique, every result's call id names an earlier call, and
/// every call with an id is answered unless it belongs to the last decision.
fn check_linkage(steps: &[Step], problems: &mut Vec<String>) {
    let mut calls: HashMap<&str, usize> = HashMap::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (i, s) in steps.iter().enumerate() {
        // A step may carry its own calls' results (ATIF observations): calls first.
        for c in &s.tool_calls {
            let Some(id) = c.id.as_deref() else { continue };
            if calls.insert(id, i).is_some() {
                problems.push(format!("step {i}: duplicate tool call id {id:?}"));
            }
        }
        if s.tool_results.iter().any(|r| r.call_id.is_none()) {
            // A result that names no call (ATIF observations may omit source_call_id)
            // answers the calls of the latest decision; the source states a result exists.
            let latest = steps[..=i].iter().rposition(|st| !st.tool_calls.is_empty());
            if let Some(j) = latest {
                answered.extend(steps[j].tool_calls.iter().filter_map(|c| c.id.as_deref()));
            }
        }
        for r in &s.tool_results {
            let Some(id) = r.call_id.as_deref() else { continue };
            if calls.contains_key(id) {
                answered.insert(id);
            } else if steps[i..].iter().any(|later| later.tool_calls.iter().any(|c| c.id.as_deref() == Some(id))) {
                problems.push(format!("step {i}: result for call {id:?} comes before the call"));
            } else {
                problems.push(format!("step {i}: result for unknown call {id:?}"));
            }
        }
    }
    let last_decision = steps.iter().rposition(|s| s.role == Role::Assistant);
    let mut unanswered: Vec<(&str, usize)> =
        calls.into_iter().filter(|(id, step)| !answered.contains(id) && Some(*step) != last_decision).collect();
    unanswered.sort_by_key(|(id, step)| (*step, *id));
    for (id, step) in unanswered {
        problems.push(format!("step {step}: tool call {id:?} has no result"));
    }
}

/// Timestamps of the same shape (ISO 8601 with the same precision and offset) compare
/// as text; a later step stamped earlier than the one before it is out of order.
fn check_timestamps(steps: &[Step], problems: &mut Vec<String>) {
    let mut previous: Option<(usize, &str)> = None;
    for (i, s) in steps.iter().enumerate() {
        if s.copied_context || s.subagent {
            continue;
        }
        let Some(ts) = s.timestamp.as_deref().filter(|t| is_iso_like(t)) else { continue };
        if let Some((j, before)) = previous {
            if same_shape(before, ts) && ts < before {
                problems.push(format!("step {i}: timestamp {ts} is earlier than step {j}'s {before}"));
            }
        }
        previous = Some((i, ts));
    }
}

fn is_iso_like(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 19 && b[4] == b'-' && b[7] == b'-' && (b[10] == b'T' || b[10] == b' ') && b[13] == b':'
}

fn same_shape(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.get(19..).map(suffix_shape) == b.get(19..).map(suffix_shape)
}

/// The zone part of a timestamp tail, digits ignored: `.123Z` and `.456Z` match.
fn suffix_shape(tail: &str) -> String {
    tail.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// Fraction of decisions that have source-derived context since the preceding decision:
/// a later observation or message (with content or tool results), and, when the
/// preceding decision called tools with ids, a result for each of them. The first
/// decision needs a prompt: an earlier step or the task's instruction.
/// `None` when the record has no decision.
pub fn completeness(t: &Trajectory) -> Option<f64> {
    let mut decisions = 0u64;
    let mut with_context = 0u64;
    let mut observed = t.task.instruction.is_some();
    let mut pending: HashSet<&str> = HashSet::new();
    for s in &t.steps {
        if s.subagent {
            continue;
        }
        if s.role == Role::Assistant && !s.copied_context {
            decisions += 1;
            if observed && pending.is_empty() {
                with_context += 1;
            }
            observed = false;
            pending = s.tool_calls.iter().filter_map(|c| c.id.as_deref()).collect();
        }
        // Results may ride on the deciding step itself (ATIF observations).
        if s.role == Role::Assistant && !s.tool_results.is_empty() && !s.copied_context {
            observed = true;
        }
        for r in &s.tool_results {
            match r.call_id.as_deref() {
                Some(id) => {
                    pending.remove(id);
                }
                // A result naming no call answers the latest decision's calls.
                None => pending.clear(),
            }
        }
        if s.role != Role::Assistant && (has_content(s) || !s.tool_results.is_empty()) {
            observed = true;
        }
    }
    (decisions > 0).then(|| with_context as f64 / decisions as f64)
}

/// Whether a step's content says something (not missing, `null`, `""` or `[]`), read from
/// its text without parsing it.
fn has_content(s: &Step) -> bool {
    s.content.as_ref().is_some_and(|c| !c.content_is_empty())
}

#[cfg(test)]
mod tests {
    //! Synthetic records: each pins one rule on a shape no real fixture isolates.
    use super::*;

    fn record(steps: serde_json::Value) -> Trajectory {
        serde_json::from_value(serde_json::json!({
            "id": "t", "schema_version": trajkit_model::SCHEMA_VERSION,
            "provenance": {"format": "test", "path": "x", "sha256": "00"},
            "task": {"key": "k", "key_source": "explicit"},
            "outcome": {"status": "unknown", "verification": "unverified"},
            "steps": steps
        }))
        .expect("record")
    }

    fn call(id: &str) -> serde_json::Value {
        serde_json::json!({"id": id, "name": "bash", "arguments": {}})
    }

    #[test]
    fn a_result_before_its_call_and_an_unknown_result_break_linkage() {
        let t = record(serde_json::json!([
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_results": [{"call_id": "a", "content": "early"}]},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "tool", "tool_results": [{"call_id": "zzz", "content": "?"}]},
            {"role": "assistant", "content": "done"}
        ]));
        let p = structural_problems(&t);
        assert_eq!(
            p,
            vec![
                "step 1: tool step before any tool call",
                "step 1: result for call \"a\" comes before the call",
                "step 3: result for unknown call \"zzz\"",
                // The early result does not count: the call itself is never answered.
                "step 2: tool call \"a\" has no result",
            ]
        );
    }

    #[test]
    fn a_call_left_unanswered_before_the_last_decision_is_a_problem_and_lacks_context() {
        let t = record(serde_json::json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "assistant", "tool_calls": [call("b")]},
            {"role": "tool", "tool_results": [{"call_id": "b", "content": "ok"}]},
            {"role": "assistant", "tool_calls": [call("c")]}
        ]));
        assert_eq!(structural_problems(&t), vec!["step 1: tool call \"a\" has no result"]);
        // Decision 2 saw no result of call a; decisions 1 and 3 had context.
        assert_eq!(completeness(&t), Some(2.0 / 3.0));
        let s = score(&t, Status::Unknown);
        assert!(!s.sft_eligible);
        assert_eq!(s.quality_tier, 0);
    }

    #[test]
    fn results_on_the_deciding_step_count_as_observations() {
        // ATIF keeps a step's observation on the step itself.
        let t = record(serde_json::json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [call("a")], "tool_results": [{"call_id": "a", "content": "1"}]},
            {"role": "assistant", "tool_calls": [call("b")], "tool_results": [{"content": "2"}]},
            {"role": "assistant", "content": "done"}
        ]));
        assert!(structural_problems(&t).is_empty());
        assert_eq!(completeness(&t), Some(1.0));
        let s = score(&t, Status::Success);
        assert!(s.sft_eligible);
        assert_eq!((s.decisions, s.quality_tier), (3, 3));
    }

    #[test]
    fn timestamps_of_one_shape_must_not_go_backwards() {
        let t = record(serde_json::json!([
            {"role": "user", "content": "go", "timestamp": "2025-01-01T10:00:05Z"},
            {"role": "assistant", "content": "a", "timestamp": "2025-01-01T10:00:04Z"},
            {"role": "user", "content": "b", "timestamp": "2025-01-01T09:00:00.000+01:00"}
        ]));
        assert_eq!(
            structural_problems(&t),
            vec!["step 1: timestamp 2025-01-01T10:00:04Z is earlier than step 0's 2025-01-01T10:00:05Z"]
        );
    }

    #[test]
    fn tiers_are_ordered() {
        use Verification::*;
        assert_eq!(tier(false, false, Status::Success, SourceEvaluator), 0);
        assert_eq!(tier(true, false, Status::Success, SourceEvaluator), 1);
        assert_eq!(tier(true, true, Status::Unknown, SourceEvaluator), 2);
        assert_eq!(tier(true, true, Status::Failure, SourceReported), 3);
        assert_eq!(tier(true, true, Status::Failure, SourceEvaluator), 4);
        assert_eq!(tier(true, true, Status::Success, IndependentlyReproduced), 4);
    }
}
