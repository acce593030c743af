//! What the SWE-agent-style readers (SWE-smith, SWE-Gym, nebius, ADP, the chat datasets)
//! share: chat messages as steps, OpenAI `tool_calls`, SWE-agent XML text calls and the
//! observations that answer them, the standard gaps, boolean harness outcomes and
//! SWE-bench task ids. One module, so that no reader imports another reader's helpers.

use serde_json::{Map, Value};
use trajkit_model::{
    Authorship, Extra, Gap, GapKind, Outcome, Role, Status, Step, Task, ToolCall, ToolResult, Verification,
};

use crate::json::{content_text, idx, into_extra, step_content_text, take, take_nonempty_str, take_str};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, Layout, Peek};
use crate::rejection::{schema, Problem, Reason};

/// A claim on rows that hold every key of `lines` (90, one per line) or on a JSON array of
/// records holding every key of `array` (85); the reason names the keys.
pub(crate) fn rows_with_keys(peek: &Peek, lines: &[&str], array: &[&str]) -> Option<Detection> {
    if lines.iter().all(|k| peek.has_key(k)) {
        return claim(90, &format!("{} keys", listed(lines)), Layout::Lines);
    }
    if peek.is_array_with_keys(array) {
        return claim(85, &format!("a JSON array of records with {}", listed(array)), Layout::Document);
    }
    None
}

/// `a, b and c`.
fn listed(words: &[&str]) -> String {
    match words.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// A row's list of turns as steps, in order: `step` maps turn `i` (at `path[i]`) knowing
/// the steps before it.
pub(crate) fn steps_of(
    turns: Vec<Value>,
    path: &str,
    mut step: impl FnMut(Value, &str, &[Step]) -> Result<Step, Problem>,
) -> Result<Vec<Step>, Problem> {
    let mut steps = Vec::with_capacity(turns.len());
    for (i, turn) in turns.into_iter().enumerate() {
        let next = step(turn, &idx(path, i), &steps)?;
        steps.push(next);
    }
    Ok(steps)
}

/// One chat message (OpenAI chat shape) as a step. Assistant calls come from structured
/// `tool_calls` when present, else (with `text_calls`) from `<function=...>` text in the
/// content. A user message after the first assistant step is, with `text_calls`, the
/// harness's answer (an observation step); without, a user step of unknown authorship
/// (harness auto-replies travel as user messages).
pub(crate) fn chat_step(msg: Value, path: &str, before: &[Step], text_calls: bool) -> Result<Step, Problem> {
    let Value::Object(mut msg) = msg else {
        return Err(schema(path, "a message must be an object"));
    };
    let role =
        take_str(&mut msg, "role").ok_or_else(|| schema(format!("{path}.role"), "message without a string role"))?;
    let content = take(&mut msg, "content");
    let mut step = match role.as_str() {
        "system" => Step::new(Role::System, content),
        "user" if before.iter().any(|s| s.role == Role::Assistant) => {
            if text_calls {
                observation_step(before.last(), content)
            } else {
                let mut s = Step::new(Role::User, content);
                s.authorship = Authorship::Unknown;
                s
            }
        }
        "user" => Step::new(Role::User, content),
        "assistant" => {
            let calls = match take(&mut msg, "tool_calls") {
                Some(v) => chat_tool_calls(v, &format!("{path}.tool_calls"))?,
                None if text_calls => {
                    let text = content.as_ref().and_then(content_text).unwrap_or_default();
                    xml_calls(&text, before.len())
                }
                None => Vec::new(),
            };
            let mut step = Step::new(Role::Assistant, content);
            step.tool_calls = calls;
            step
        }
        "tool" => {
            let mut step = Step::new(Role::Tool, None);
            let call_id = take_str(&mut msg, "tool_call_id");
            let extra = into_extra(std::mem::take(&mut msg));
            step.tool_results.push(ToolResult {
                call_id,
                content: content.map(Into::into),
                extra,
                subagent_refs: Vec::new(),
            });
            step
        }
        other => {
            return Err(Problem::new(
                Reason::InvalidValue,
                format!("{path}.role"),
                format!("unknown message role '{other}'"),
            ))
        }
    };
    step.extra.extend(into_extra(msg));
    Ok(step)
}

/// A user-role message that answers the previous assistant turn (SWE-agent's
/// `OBSERVATION:` / `Observation:` / "did not produce any output" templates). It becomes an
/// `environment` step whose source role (`user`) stays in `extra.role`.
///
/// SWE-agent runs exactly one action per turn, so when the step right before is an
/// assistant turn with exactly one text-embedded call, the message is that call's result
/// (linked by the call's synthetic id). With several calls the result stays unlinked
/// (`result_without_call`, and the calls `unanswered_tool_call`); with none the message is
/// harness feedback and stays plain content.
pub(crate) fn observation_step(prev: Option<&Step>, content: Option<Value>) -> Step {
    let calls: &[ToolCall] = match prev {
        Some(s) if s.role == Role::Assistant => &s.tool_calls,
        _ => &[],
    };
    let text_calls = calls.iter().all(|c| c.text_embedded);
    let mut step = if calls.is_empty() || !text_calls {
        Step::new(Role::Environment, content)
    } else {
        let call_id = match calls {
            [only] => only.id.clone(),
            _ => None,
        };
        let mut s = Step::new(Role::Environment, None);
        s.tool_results.push(ToolResult {
            call_id,
            content: content.map(Into::into),
            extra: Extra::new(),
            subagent_refs: Vec::new(),
        });
        s
    };
    step.extra.insert("role".into(), Value::String("user".into()));
    step
}

/// Synthetic id of the `k`-th text-embedded call of step `step` (the source has no ids).
pub(crate) fn text_call_id(step: usize, k: usize) -> String {
    format!("text-call-{step}-{k}")
}

/// Parses SWE-agent XML function calls out of `text`: every complete
/// `<function=NAME>...</function>` block, with its `<parameter=KEY>VALUE</parameter>` pairs
/// as string arguments. Names and values are trimmed (as SWE-agent's parser does); a
/// repeated key keeps its last value. Unclosed blocks are not calls.
pub(crate) fn xml_calls(text: &str, step: usize) -> Vec<ToolCall> {
    const OPEN: &str = "<function=";
    const CLOSE: &str = "</function>";
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        let after = &rest[at + OPEN.len()..];
        let Some(gt) = after.find('>') else { break };
        let name = after[..gt].trim();
        let body_and_more = &after[gt + 1..];
        let Some(end) = body_and_more.find(CLOSE) else { break };
        let body = &body_and_more[..end];
        rest = &body_and_more[end + CLOSE.len()..];
        if name.is_empty() {
            continue;
        }
        calls.push(ToolCall {
            arguments: Value::Object(xml_parameters(body)).into(),
            arguments_invalid: false,
            extra: Extra::new(),
            id: Some(text_call_id(step, calls.len())),
            name: name.to_string(),
            text_embedded: true,
        });
    }
    calls
}

/// `<parameter=KEY>VALUE</parameter>` pairs of a function body.
fn xml_parameters(body: &str) -> Map<String, Value> {
    const OPEN: &str = "<parameter=";
    const CLOSE: &str = "</parameter>";
    let mut args = Map::new();
    let mut rest = body;
    while let Some(at) = rest.find(OPEN) {
        let after = &rest[at + OPEN.len()..];
        let Some(gt) = after.find('>') else { break };
        let key = after[..gt].trim();
        let value_and_more = &after[gt + 1..];
        let Some(end) = value_and_more.find(CLOSE) else { break };
        args.insert(key.to_string(), Value::String(value_and_more[..end].trim().to_string()));
        rest = &value_and_more[end + CLOSE.len()..];
    }
    args
}

/// Gaps every reader of this module family records: call/result linking, no steps, and
/// arguments that were not JSON.
pub(crate) fn standard_gaps(steps: &[Step]) -> Vec<Gap> {
    let mut gaps = Vec::new();
    link_tool_results(steps, &mut gaps);
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    for (i, s) in steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }
    gaps
}

/// Outcome from a boolean SWE-bench-harness field (`resolved`, `target`): true is a success,
/// false a failure, both `source_evaluator`. Absent (or not a boolean, which stays in
/// `extra`) is unknown and unverified.
pub(crate) fn bool_outcome(row: &mut Map<String, Value>, key: &str) -> Outcome {
    let status = match row.get(key) {
        Some(Value::Bool(true)) => Status::Success,
        Some(Value::Bool(false)) => Status::Failure,
        _ => return Outcome::default(),
    };
    row.remove(key);
    Outcome { status, verification: Verification::SourceEvaluator, ..Outcome::default() }
}

/// The instance id without the `_N` counter that the Agent Data Protocol export appends to
/// SWE-bench-style ids (`owner__repo-123_4` → `owner__repo-123`); other ids unchanged.
pub(crate) fn strip_adp_counter(id: &str) -> &str {
    let Some((head, counter)) = id.rsplit_once('_') else { return id };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let pr_number = head.rsplit_once('-').is_some_and(|(_, n)| digits(n));
    if digits(counter) && pr_number {
        head
    } else {
        id
    }
}

/// Task of a SWE-bench-style record: key = the instance id (explicit; SWE-bench instance
/// ids are global, so attempts from different harnesses group together), else the hashed
/// first instruction, else the record hash.
pub(crate) fn swe_task(family: &str, instance_id: Option<String>, steps: &[Step], sha: &str) -> Task {
    let instruction = steps
        .iter()
        .take_while(|s| s.role != Role::Assistant)
        .find(|s| s.role == Role::User)
        .and_then(|s| s.content.as_ref().and_then(step_content_text));
    Task::keyed(instance_id.clone(), instance_id, instruction, Some(family.to_string()), sha)
}

/// The task id: `instance_id` without the ADP per-instance counter. When the counter was
/// removed, the verbatim `instance_id` stays in `extra`.
pub(crate) fn task_id(row: &mut Map<String, Value>) -> Option<String> {
    let id = match row.get("instance_id") {
        Some(Value::String(s)) if !s.is_empty() => s,
        _ => return None,
    };
    let stripped = strip_adp_counter(id);
    if stripped.len() == id.len() {
        return take_nonempty_str(row, "instance_id");
    }
    Some(stripped.to_string())
}

/// OpenAI chat `tool_calls`: `[{id, type, function: {name, arguments}}]`. `arguments` is
/// parsed when it is a JSON string (kept verbatim with `arguments_invalid` when not JSON);
/// every other field (`type`, `index`, ...) stays in the call's `extra`.
pub(crate) fn chat_tool_calls(v: Value, path: &str) -> Result<Vec<ToolCall>, Problem> {
    let Value::Array(items) = v else {
        return Err(schema(path, "tool_calls must be a list"));
    };
    let mut calls = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let p = idx(path, i);
        let Value::Object(mut item) = item else {
            return Err(schema(p, "a tool call must be an object"));
        };
        let Some(Value::Object(mut function)) = item.remove("function") else {
            return Err(schema(format!("{p}.function"), "function must be an object"));
        };
        let name = take_str(&mut function, "name")
            .ok_or_else(|| schema(format!("{p}.function.name"), "tool call without a string name"))?;
        let (arguments, invalid) = crate::json::take_arguments(&mut function);
        let id = take_str(&mut item, "id");
        if !function.is_empty() {
            item.insert("function".into(), Value::Object(function));
        }
        calls.push(ToolCall {
            arguments,
            arguments_invalid: invalid,
            extra: into_extra(item),
            id,
            name,
            text_embedded: false,
        });
    }
    Ok(calls)
}

/// A SWE-bench predictions row: `instance_id`, `model_patch`, `model_name_or_path`.
pub(crate) fn is_predictions_row(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object).is_some_and(is_prediction)
}

/// The predictions row's keys, without a trajectory's `history`.
pub(crate) fn is_prediction(m: &Map<String, Value>) -> bool {
    m.contains_key("instance_id") && m.contains_key("model_patch") && !m.contains_key("history")
}

/// `{instance_id: predictions row}` (SWE-agent `preds.json`, mini-swe-agent `results.json`).
pub(crate) fn predictions_map(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object).is_some_and(is_prediction_map)
}

/// A non-empty object whose every value is a predictions row.
pub(crate) fn is_prediction_map(m: &Map<String, Value>) -> bool {
    !m.is_empty() && m.values().all(|r| is_predictions_row(Some(r)))
}

/// A SWE-bench evaluation report (`report.json`, run summary): outcomes, not a trajectory.
pub(crate) fn is_report(m: &Map<String, Value>) -> bool {
    let summary =
        ["resolved_ids", "ids_resolved", "unresolved_ids", "ids_unresolved"].iter().any(|k| m.contains_key(*k));
    let flat = m.contains_key("resolved") && (m.contains_key("tests_status") || m.contains_key("patch_exists"));
    let keyed = !m.is_empty() && m.values().all(|r| r.get("resolved").is_some_and(Value::is_boolean));
    summary || flat || keyed
}

/// The rejection for predictions: they hold a patch, not a trajectory.
pub(crate) fn prediction_only() -> Problem {
    Problem::new(Reason::PredictionOnly, "$", "a prediction (model patch), not a trajectory")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic: the claims and reasons nebius and SWE-Gym make from their keys (the
    /// reasons `inspect` shows stay word for word what those readers wrote out before).
    #[test]
    fn rows_with_keys_claims_lines_then_arrays_and_names_the_keys() {
        let row = serde_json::json!({"trajectory": [], "target": true, "exit_status": "submitted"});
        let line = Peek::new(b"{}", "x.jsonl", Some(&row), false);
        let claim = rows_with_keys(&line, &["trajectory", "target", "exit_status"], &["trajectory"]);
        let claim = claim.map(|d| (d.confidence, d.reason, d.layout));
        assert_eq!(claim, Some((90, "trajectory, target and exit_status keys".to_string(), Layout::Lines)));
        let array = Peek::new(br#"[{"instance_id": 1, "run_id": 2, "messages": []}]"#, "x.json", None, false);
        let claim =
            rows_with_keys(&array, &["messages", "run_id", "test_result"], &["instance_id", "run_id", "messages"]);
        let claim = claim.map(|d| (d.confidence, d.reason, d.layout));
        let reason = "a JSON array of records with instance_id, run_id and messages".to_string();
        assert_eq!(claim, Some((85, reason, Layout::Document)));
        assert!(rows_with_keys(&array, &["messages"], &["test_result"]).is_none());
        assert_eq!(listed(&["a"]), "a");
    }

    #[test]
    fn xml_calls_are_parsed_with_trimmed_values() {
        let text = "Look.\n\n<function=str_replace_editor>\n<parameter=command>view</parameter>\n\
                    <parameter=path>/testbed/a.py</parameter>\n<parameter=old_str>\n  x = 1\n</parameter>\n</function>";
        let calls = xml_calls(text, 4);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "str_replace_editor");
        assert_eq!(calls[0].id.as_deref(), Some("text-call-4-0"));
        assert_eq!(
            calls[0].arguments,
            serde_json::json!({"command": "view", "path": "/testbed/a.py", "old_str": "x = 1"})
        );
        assert!(calls[0].text_embedded);
        assert!(xml_calls("<function=bash>\n<parameter=command>ls</parameter>", 0).is_empty(), "unclosed");
        let two = xml_calls("<function=a>\n</function> and <function=b>\n</function>", 1);
        assert_eq!(two.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn adp_counters_are_stripped_from_swe_bench_ids_only() {
        assert_eq!(strip_adp_counter("python__mypy-15976_0"), "python__mypy-15976");
        assert_eq!(
            strip_adp_counter("brightway-lca__brightway2-analyzer-19_23"),
            "brightway-lca__brightway2-analyzer-19"
        );
        assert_eq!(strip_adp_counter("python__mypy-15976"), "python__mypy-15976");
        assert_eq!(
            strip_adp_counter("arrow-py__arrow.1d70d009.lm_rewrite__nuzjfyur"),
            "arrow-py__arrow.1d70d009.lm_rewrite__nuzjfyur"
        );
        assert_eq!(strip_adp_counter("a_1"), "a_1");
    }

    #[test]
    fn observation_linking_needs_exactly_one_text_call() {
        let mut one = Step::new(Role::Assistant, None);
        one.tool_calls = xml_calls("<function=bash>\n<parameter=command>ls</parameter>\n</function>", 2);
        let s = observation_step(Some(&one), Some(Value::String("OBSERVATION:\nx".into())));
        assert_eq!((s.role, s.tool_results[0].call_id.as_deref()), (Role::Environment, Some("text-call-2-0")));
        assert_eq!(s.extra["role"], "user");
        let mut two = one.clone();
        two.tool_calls.extend(one.tool_calls.clone());
        let s = observation_step(Some(&two), Some(Value::String("x".into())));
        assert_eq!(s.tool_results[0].call_id, None);
        let none = Step::new(Role::Assistant, None);
        let s = observation_step(Some(&none), Some(Value::String("x".into())));
        assert!(s.tool_results.is_empty() && s.content.is_some());
    }
}
