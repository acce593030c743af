//! SWE-smith trajectories: SWE-agent runs on SWE-smith task instances, as chat messages.
//!
//! Two containers hold the same record shape (`messages`, `instance_id`, and in the
//! published dataset `resolved`, `model`, `traj_id`, `patch`): the fine-tuning JSON Lines
//! that SWE-smith's `transform_to_ft` writes (one record per line), and the Agent Data
//! Protocol "raw" export, a JSON array of such records (split into one record per element).
//!
//! In the `xml` style the model writes its one action per turn as text
//! (`<function=NAME><parameter=KEY>VALUE</parameter></function>`), and the harness answers
//! with a user-role message. This module also holds the helpers the other SWE-agent-style
//! readers share: array splitting, text-call parsing, observation steps and SWE-bench task
//! ids. See docs/formats/swe-smith.md for the rules.

use std::ops::Range;

use serde_json::{Map, Value};
use trajkit_model::{
    canonical::instruction_task_key, Agent, Authorship, Extra, Gap, GapKind, Outcome, Provenance, Role, Status, Step,
    Task, TaskKeySource, ToolCall, ToolResult, Trajectory, Verification, SCHEMA_VERSION,
};

use crate::input::InputFile;
use crate::json::{content_text, idx, into_extra, take, take_nonempty_str, take_str};
use crate::links::link_tool_results;
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, Problem, Reason};

/// Family name.
const FAMILY: &str = "swe-smith";

/// Reader for SWE-smith trajectories (fine-tuning JSONL and ADP raw arrays).
pub struct SweSmithReader;

impl Reader for SweSmithReader {
    fn name(&self) -> &'static str {
        FAMILY
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let claim = |confidence, reason: &str, layout| Some(Detection { confidence, reason: reason.into(), layout });
        let other_family = peek.has_key("run_id") || peek.has_key("test_result") || peek.has_key("trajectory");
        if peek.has_key("messages") && peek.has_key("instance_id") && !other_family {
            if peek.has_key("traj_id") {
                return claim(90, "messages, instance_id and traj_id keys", Layout::Lines);
            }
            if peek.contains("<function=") {
                return claim(85, "messages and instance_id with <function=...> text calls", Layout::Lines);
            }
        }
        if is_array_document(peek.bytes)
            && peek.contains("\"traj_id\"")
            && peek.contains("\"messages\"")
            && peek.contains("\"instance_id\"")
        {
            return claim(85, "a JSON array of records with traj_id, messages and instance_id", Layout::Document);
        }
        None
    }

    fn split_document(&self, bytes: &[u8]) -> Option<Vec<Range<usize>>> {
        crate::json::array_elements(bytes)
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        RecordResult::from_result(read(raw, file))
    }
}

/// Maps one SWE-smith record.
fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut row = record_object(raw.bytes)?;
    let messages = messages(&mut row)?;
    let mut steps = Vec::with_capacity(messages.len());
    for (i, m) in messages.into_iter().enumerate() {
        let step = chat_step(m, &idx("$.messages", i), &steps, true)?;
        steps.push(step);
    }
    let gaps = standard_gaps(&steps);
    let outcome = bool_outcome(&mut row, "resolved");
    let instance_id = take_nonempty_str(&mut row, "instance_id");
    let task = swe_task(FAMILY, instance_id, &steps, raw.sha256);
    let model = take_nonempty_str(&mut row, "model");
    let session_id = take_nonempty_str(&mut row, "traj_id");
    Ok(Trajectory {
        agent: Agent { model, name: Some("swe-agent".into()), version: None },
        content_digest: String::new(),
        extra: into_extra(row),
        gaps,
        id: format!("{FAMILY}-{}", &raw.sha256[..16]),
        metrics: None,
        outcome,
        provenance: provenance(FAMILY, raw, file),
        schema_version: SCHEMA_VERSION.into(),
        state: None,
        session_id,
        steps,
        subagents: Vec::new(),
        task,
        tools: None,
    })
}

/// `messages` as a list: the list itself, or a JSON string holding it (the published
/// dataset stores it as a string).
fn messages(row: &mut Map<String, Value>) -> Result<Vec<Value>, Problem> {
    match row.remove("messages") {
        Some(Value::Array(items)) => Ok(items),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Array(items)) => Ok(items),
            Ok(_) => Err(Problem::new(Reason::SchemaViolation, "$.messages", "messages string must hold a JSON list")),
            Err(e) => Err(Problem::new(Reason::InvalidJson, "$.messages", format!("messages string is not JSON: {e}"))),
        },
        None | Some(Value::Null) => Err(Problem::new(Reason::SchemaViolation, "$.messages", "messages is missing")),
        Some(_) => Err(Problem::new(Reason::SchemaViolation, "$.messages", "messages must be a list or a JSON string")),
    }
}

/// One chat message (OpenAI chat shape) as a step. Assistant calls come from structured
/// `tool_calls` when present, else (with `text_calls`) from `<function=...>` text in the
/// content. A user message after the first assistant step is, with `text_calls`, the
/// harness's answer (an observation step); without, a user step of unknown authorship
/// (harness auto-replies travel as user messages).
pub(crate) fn chat_step(msg: Value, path: &str, before: &[Step], text_calls: bool) -> Result<Step, Problem> {
    let Value::Object(mut msg) = msg else {
        return Err(Problem::new(Reason::SchemaViolation, path, "a message must be an object"));
    };
    let role = take_str(&mut msg, "role").ok_or_else(|| {
        Problem::new(Reason::SchemaViolation, format!("{path}.role"), "message without a string role")
    })?;
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
                Some(v) => crate::swe_gym::chat_tool_calls(v, &format!("{path}.tool_calls"))?,
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
            step.tool_results.push(ToolResult { call_id, content, extra, subagent_refs: Vec::new() });
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
        s.tool_results.push(ToolResult { call_id, content, extra: Extra::new(), subagent_refs: Vec::new() });
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
            arguments: Value::Object(xml_parameters(body)),
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
        .and_then(|s| s.content.as_ref().and_then(content_text));
    let (key, key_source) = match (&instance_id, &instruction) {
        (Some(id), _) => (id.clone(), TaskKeySource::Explicit),
        (None, Some(text)) => (instruction_task_key(text, Some(family)), TaskKeySource::InstructionHash),
        (None, None) => (format!("r:{}", &sha[..16]), TaskKeySource::RecordHash),
    };
    Task {
        environment: Some(family.to_string()),
        environment_version: None,
        id: instance_id,
        instruction,
        key,
        key_source,
    }
}

/// Provenance of a record of `family`.
pub(crate) fn provenance(family: &str, raw: &RawRecord, file: &InputFile) -> Provenance {
    Provenance {
        document_index: raw.document_index,
        format: family.into(),
        format_version: None,
        line: raw.line,
        path: file.display.clone(),
        sha256: raw.sha256.to_string(),
    }
}

/// Parses a record that must be one JSON object; a whole array (a document that was not
/// split into its elements) is rejected with that said.
pub(crate) fn record_object(bytes: &[u8]) -> Result<Map<String, Value>, Problem> {
    match parse_record(bytes)? {
        Value::Object(m) => Ok(m),
        Value::Array(a) => Err(Problem::new(
            Reason::SchemaViolation,
            "$",
            format!("a JSON array of {} records where one record object was expected", a.len()),
        )),
        _ => Err(Problem::new(Reason::SchemaViolation, "$", "a record must be a JSON object")),
    }
}

/// True when the first non-blank byte opens a JSON array.
pub(crate) fn is_array_document(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

#[cfg(test)]
mod tests {
    use super::*;

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
