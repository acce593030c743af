//! nebius SWE-agent trajectories: SWE-agent (thought-action style) runs on SWE-bench-extra
//! and SWE-bench dev instances, as `trajectory` turns `{role: system|user|ai, text, ...}`
//! with the evaluation result `target`.
//!
//! Read from the Agent Data Protocol "raw" export (a JSON array, split into one record per
//! element) or from JSON Lines of the same rows. See docs/formats/nebius.md.

use serde_json::{Map, Value};
use trajkit_model::{Agent, Extra, Role, Step, ToolCall, Trajectory};

use crate::input::InputFile;
use crate::json::{into_extra, record_object, take, take_nonempty_str, take_str};
use crate::reader::{Detection, FnReader, Peek, RawRecord};
use crate::rejection::{schema, Problem, Reason};
use crate::swe::{
    bool_outcome, observation_step, rows_with_keys, standard_gaps, steps_of, swe_task, task_id, text_call_id,
};

/// Family name.
const FAMILY: &str = "nebius";

/// Reader for nebius/SWE-agent-trajectories rows.
pub(crate) static READER: FnReader = FnReader { family: FAMILY, detect, read, arrays: true };

/// Rows with `trajectory`, `target` and `exit_status`, one per line or in a JSON array.
fn detect(peek: &Peek) -> Option<Detection> {
    let lines = ["trajectory", "target", "exit_status"];
    rows_with_keys(peek, &lines, &["trajectory", "target", "exit_status", "generated_patch"])
}

/// Maps one nebius row.
fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut row = record_object(raw.bytes)?;
    let turns = crate::json::take_list(&mut row, "trajectory")?;
    let steps = steps_of(turns, "$.trajectory", turn_step)?;
    let gaps = standard_gaps(&steps);
    let outcome = bool_outcome(&mut row, "target");
    let task_id = task_id(&mut row);
    let task = swe_task(FAMILY, task_id, &steps, raw.sha256);
    let model = take_nonempty_str(&mut row, "model_name");
    Ok(Trajectory {
        agent: Agent { model, name: Some("swe-agent".into()), version: None },
        extra: into_extra(row),
        gaps,
        outcome,
        steps,
        ..raw.trajectory(FAMILY, file, task)
    })
}

/// One turn as a step. `system` turns carry their prompt in `system_prompt` (`text` is
/// null); `ai` turns are assistant decisions whose action is the last fenced code block;
/// `user` turns after the first `ai` turn are the environment's answers.
fn turn_step(turn: Value, path: &str, before: &[Step]) -> Result<Step, Problem> {
    let Value::Object(mut turn) = turn else {
        return Err(schema(path, "a turn must be an object"));
    };
    let role =
        take_str(&mut turn, "role").ok_or_else(|| schema(format!("{path}.role"), "turn without a string role"))?;
    let text = take(&mut turn, "text");
    let mut step = match role.as_str() {
        "system" => {
            let content = text.or_else(|| take(&mut turn, "system_prompt"));
            Step::new(Role::System, content)
        }
        "user" if before.iter().any(|s| s.role == Role::Assistant) => observation_step(before.last(), text),
        "user" => Step::new(Role::User, text),
        "ai" => {
            let action = text.as_ref().and_then(Value::as_str).and_then(last_fenced_block);
            let mut step = Step::new(Role::Assistant, None);
            if let Some(action) = action {
                step.tool_calls.push(action_call(action, before.len()));
            }
            step.content = text.map(Into::into);
            step.extra.insert("role".into(), Value::String(role));
            step
        }
        other => {
            return Err(Problem::new(
                Reason::InvalidValue,
                format!("{path}.role"),
                format!("unknown turn role '{other}'"),
            ))
        }
    };
    step.extra.extend(into_extra(turn));
    Ok(step)
}

/// The action of a thought-action turn as a call: SWE-agent hands the command line to its
/// shell session (its own commands are shell functions there), so the call is `bash` with
/// the command as `command`.
fn action_call(action: &str, step: usize) -> ToolCall {
    let mut args = Map::new();
    args.insert("command".into(), Value::String(action.to_string()));
    ToolCall {
        arguments: Value::Object(args).into(),
        arguments_invalid: false,
        extra: Extra::new(),
        id: Some(text_call_id(step, 0)),
        name: "bash".into(),
        text_embedded: true,
    }
}

/// The content of the last outermost fenced code block, trimmed, per SWE-agent's
/// thought-action parser: a line "```" or "```lang" opens a block, a bare "```" line
/// closes the innermost open one; blocks may nest. `None` when there is no complete block
/// or it is empty.
pub(crate) fn last_fenced_block(text: &str) -> Option<&str> {
    let mut open: Vec<usize> = Vec::new();
    let mut last: Option<(usize, usize)> = None;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let line_start = pos;
        pos += line.len();
        let Some(rest) = line.strip_prefix("```") else { continue };
        let has_newline = rest.ends_with('\n');
        let word = rest.trim_end();
        if word.contains(char::is_whitespace) {
            continue;
        }
        if !open.is_empty() && word.is_empty() {
            if let Some(start) = open.pop() {
                if open.is_empty() {
                    last = Some((start, line_start));
                }
            }
        } else if has_newline {
            open.push(pos);
        }
    }
    let (start, end) = last?;
    let action = text.get(start..end)?.trim();
    (!action.is_empty()).then_some(action)
}

#[cfg(test)]
mod tests {
    use super::last_fenced_block;

    #[test]
    fn the_last_outer_block_is_the_action() {
        assert_eq!(last_fenced_block("Think.\n```\nls -F\n```\n"), Some("ls -F"));
        assert_eq!(last_fenced_block("a\n```\nfirst\n```\nb\n```bash\nsecond\n```"), Some("second"));
        let edit = "Fix.\n```\nedit 1:1\n```python\nx\n```\nend_of_edit\n```\n";
        assert_eq!(last_fenced_block(edit), Some("edit 1:1\n```python\nx\n```\nend_of_edit"));
        assert_eq!(last_fenced_block("no block"), None);
        assert_eq!(last_fenced_block("```\nunclosed"), None);
    }
}
