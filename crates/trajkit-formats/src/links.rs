//! Tool-call linkage shared by every reader: results pair with calls by id, never by
//! position, and whatever does not pair becomes a typed gap.

use std::collections::{HashMap, HashSet};

use trajkit_model::{Gap, GapKind, Step};

/// Pairs results with calls by id and records what does not pair.
pub(crate) fn link_tool_results(steps: &[Step], gaps: &mut Vec<Gap>) {
    link_tool_results_except(steps, |_| false, gaps)
}

/// As [`link_tool_results`], but calls of the steps for which `needs_no_answer` holds (a
/// harness's terminal calls, such as OpenHands' `finish`) are not reported unanswered.
pub(crate) fn link_tool_results_except(steps: &[Step], needs_no_answer: impl Fn(usize) -> bool, gaps: &mut Vec<Gap>) {
    let mut calls: HashMap<&str, usize> = HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        for c in &s.tool_calls {
            if let Some(id) = c.id.as_deref() {
                if calls.insert(id, i).is_some() {
                    gaps.push(Gap::at(GapKind::DuplicateToolCallId, Some(i), id));
                }
            }
        }
    }
    let mut answered: HashSet<&str> = HashSet::new();
    for (i, s) in steps.iter().enumerate() {
        for r in &s.tool_results {
            match r.call_id.as_deref() {
                Some(id) if calls.contains_key(id) => {
                    answered.insert(id);
                }
                other => gaps.push(Gap::at(GapKind::ResultWithoutCall, Some(i), other.unwrap_or("(no call id)"))),
            }
        }
    }
    for (i, s) in steps.iter().enumerate().filter(|(i, _)| !needs_no_answer(*i)) {
        for c in &s.tool_calls {
            if !c.id.as_deref().is_some_and(|id| answered.contains(id)) {
                gaps.push(Gap::at(GapKind::UnansweredToolCall, Some(i), c.id.clone().unwrap_or_default()));
            }
        }
    }
}
