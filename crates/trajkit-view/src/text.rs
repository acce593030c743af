//! The searchable text of a trajectory, per top-level step: the message (content and
//! reasoning), the tool calls (name and arguments) and the tool results. Subagent steps
//! count under the step that spawned them (the first step when none is named).

use serde_json::Value;
use trajkit_model::Trajectory;

/// Bytes kept of one column of one step; the rest is not searchable (bounds memory).
pub const MAX_COLUMN_BYTES: usize = 1 << 20;

/// The three searchable columns of one step.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StepText {
    pub message: String,
    pub calls: String,
    pub results: String,
}

/// One [`StepText`] per top-level step of `t` (subagents folded in).
pub fn step_texts(t: &Trajectory) -> Vec<StepText> {
    let mut out = vec![StepText::default(); t.steps.len()];
    collect(t, &mut out, None);
    out
}

/// Adds the text of `t`'s steps to `out`: at their own index, or all at `at` (a subagent).
fn collect(t: &Trajectory, out: &mut [StepText], at: Option<usize>) {
    for (i, step) in t.steps.iter().enumerate() {
        let Some(slot) = out.get_mut(at.unwrap_or(i)) else { continue };
        if let Some(c) = &step.content {
            push_value(&mut slot.message, c);
        }
        if let Some(r) = &step.reasoning {
            push(&mut slot.message, r);
        }
        for call in &step.tool_calls {
            push(&mut slot.calls, &call.name);
            push_value(&mut slot.calls, &call.arguments);
        }
        for result in &step.tool_results {
            if let Some(c) = &result.content {
                push_value(&mut slot.results, c);
            }
        }
    }
    for sub in &t.subagents {
        let spawned = at.or(sub.spawned_by_step).unwrap_or(0);
        collect(&sub.trajectory, out, Some(spawned));
    }
}

/// Appends the strings of `v`: every string and number leaf (object keys left out).
fn push_value(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => push(out, s),
        Value::Number(n) => push(out, &n.to_string()),
        Value::Array(items) => items.iter().for_each(|x| push_value(out, x)),
        Value::Object(map) => map.values().for_each(|x| push_value(out, x)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// Appends `s` and a separator, within [`MAX_COLUMN_BYTES`] (cut at a char boundary).
fn push(out: &mut String, s: &str) {
    let room = MAX_COLUMN_BYTES.saturating_sub(out.len());
    if room == 0 {
        return;
    }
    let mut end = s.len().min(room);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&s[..end]);
    out.push('\n');
}
