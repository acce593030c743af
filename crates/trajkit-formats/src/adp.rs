//! Agent Data Protocol (ADP, neulab/agent-data-protocol): standardized trajectories
//! (`{id, content: [action | observation, ...], details}`) and the SFT view ADP derives
//! from them for OpenHands (`{id, conversations: [{from, value}], system}`, actions written
//! as `<function=NAME><parameter=KEY>VALUE</parameter></function>` text).
//!
//! Both are read as family `adp`: a JSON array of records (split into one record per
//! element) or JSON Lines. See docs/formats/adp.md for the mapping and the linking rule.

use serde_json::{Map, Value};
use trajkit_model::{
    Authorship, Extra, LazyValue, Outcome, Provenance, Role, Status, Step, Task, ToolCall, ToolResult, Trajectory,
    Verification,
};

use crate::chat::first_instruction;
use crate::input::InputFile;
use crate::json::{idx, into_extra, take, take_str};
use crate::json::{is_array_document, record_object};
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{schema, Problem, Reason};
use crate::swe::{observation_step, standard_gaps, strip_adp_counter, xml_calls};

/// Family name.
const FAMILY: &str = "adp";

/// Content item classes of the ADP schema (`schema/trajectory.py`).
const CLASSES: &[&str] = &[
    "\"api_action\"",
    "\"code_action\"",
    "\"message_action\"",
    "\"text_observation\"",
    "\"image_observation\"",
    "\"web_observation\"",
];

/// Reader for ADP standardized trajectories and their OpenHands SFT view.
pub(crate) static READER: FnReader = FnReader { family: FAMILY, detect, read, arrays: true };

/// Standardized trajectories (`content` items tagged by `class_`) and SFT rows (`id`,
/// `conversations`, `system` with `<function=` calls), one per line or in a JSON array.
fn detect(peek: &Peek) -> Option<Detection> {
    let has_class = || peek.has_key_anywhere("class_") && CLASSES.iter().any(|c| peek.contains(c));
    if peek.has_key("id") && peek.has_key("content") && has_class() {
        return claim(90, "rows with id and content items tagged by ADP class_", Layout::Lines);
    }
    let array = is_array_document(peek.bytes);
    if array && peek.has_key_anywhere("content") && has_class() {
        return claim(90, "a JSON array of ADP trajectories (content items tagged by class_)", Layout::Document);
    }
    // The SFT view: id, conversations and system, with OpenHands text function calls.
    let sft_keys =
        peek.has_key_anywhere("conversations") && peek.has_key_anywhere("system") && peek.has_key_anywhere("id");
    if sft_keys && peek.contains("<function=") {
        if peek.has_key("conversations") && peek.has_key("system") && peek.has_key("id") {
            return claim(75, "ADP SFT rows (id, conversations, system) with <function=...> calls", Layout::Lines);
        }
        if array {
            return claim(75, "a JSON array of ADP SFT rows with <function=...> calls", Layout::Document);
        }
    }
    None
}

/// Maps one record: a standardized trajectory (`content`) or an SFT row (`conversations`).
fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut row = record_object(raw.bytes)?;
    let (steps, tools, outcome) = if row.contains_key("content") {
        let content = match row.remove("content") {
            Some(Value::Array(items)) => items,
            _ => return Err(schema("$.content", "content must be a list")),
        };
        let steps = standard_steps(content)?;
        let (tools, outcome) = details(&mut row);
        (steps, tools, outcome)
    } else if row.contains_key("conversations") {
        (sft_steps(&mut row)?, None, Outcome::default())
    } else {
        return Err(schema("$", "neither content nor conversations"));
    };
    let gaps = standard_gaps(&steps);
    let session_id = take_str(&mut row, "id");
    let task = task(session_id.as_deref(), &steps, raw.sha256);
    let provenance =
        Provenance { format_version: take_str(&mut row, "schema_version"), ..raw.provenance(FAMILY, file) };
    Ok(Trajectory {
        extra: into_extra(row),
        gaps,
        outcome,
        session_id,
        steps,
        tools: tools.map(LazyValue::from_values),
        ..Trajectory::new(raw.id(FAMILY), provenance, task)
    })
}

/// Synthetic id of the action at content index `i` (ADP actions carry no ids before
/// `tool_call_id` was added to the schema).
fn synthetic_id(i: usize) -> String {
    format!("adp-action-{i}")
}

/// Steps of a standardized trajectory, one per content item. A user step after the first
/// assistant step has unknown authorship, as in the SFT view: OpenHands' automatic "Please
/// continue working on the task..." replies are converted as `source: user` observations,
/// and nothing in the record tells them from a person's follow-up.
fn standard_steps(content: Vec<Value>) -> Result<Vec<Step>, Problem> {
    let mut steps = Vec::with_capacity(content.len());
    // Id of the call made by the item right before, when it was an api or code action.
    let mut previous_call: Option<String> = None;
    for (i, item) in content.into_iter().enumerate() {
        let path = idx("$.content", i);
        let Value::Object(mut item) = item else {
            return Err(schema(path, "a content item must be an object"));
        };
        let class = take_str(&mut item, "class_")
            .ok_or_else(|| schema(format!("{path}.class_"), "content item without a string class_"))?;
        let answered = previous_call.take();
        let step = match class.as_str() {
            "api_action" | "code_action" => {
                let step = action_step(&class, item, i, &path)?;
                previous_call = step.tool_calls.first().and_then(|c| c.id.clone());
                step
            }
            "message_action" => {
                let content = required_str(&mut item, "content", &path)?;
                let mut step = Step::new(Role::Assistant, Some(Value::String(content)));
                step.reasoning = take_str(&mut item, "reasoning_content");
                step.extra = into_extra(item);
                step
            }
            "text_observation" | "image_observation" | "web_observation" | "json_observation" => {
                observation(&class, item, answered, &path)?
            }
            other => {
                return Err(Problem::new(
                    Reason::InvalidValue,
                    format!("{path}.class_"),
                    format!("unknown ADP content class '{other}'"),
                ))
            }
        };
        let mut step = step;
        if step.role == Role::User && steps.iter().any(|s: &Step| s.role == Role::Assistant) {
            step.authorship = Authorship::Unknown;
        }
        steps.push(step);
    }
    Ok(steps)
}

fn required_str(item: &mut Map<String, Value>, key: &str, path: &str) -> Result<String, Problem> {
    take_str(item, key).ok_or_else(|| schema(format!("{path}.{key}"), format!("{key} must be a string")))
}

/// An api action (`function` + `kwargs`) or a code action (`language` + `content`, a call
/// named by the language with arguments `{"content": code}`) as an assistant step with one
/// structured call. `description` (the text the model wrote with the action) is the step's
/// content, `reasoning_content` its reasoning.
fn action_step(class: &str, mut item: Map<String, Value>, i: usize, path: &str) -> Result<Step, Problem> {
    let (name, arguments) = if class == "api_action" {
        let name = required_str(&mut item, "function", path)?;
        let kwargs = match item.remove("kwargs") {
            Some(v @ Value::Object(_)) => v,
            _ => return Err(schema(format!("{path}.kwargs"), "kwargs must be an object")),
        };
        (name, kwargs)
    } else {
        let language = required_str(&mut item, "language", path)?;
        let code = required_str(&mut item, "content", path)?;
        let mut args = Map::new();
        args.insert("content".into(), Value::String(code));
        (language, Value::Object(args))
    };
    let id = take_str(&mut item, "tool_call_id").unwrap_or_else(|| synthetic_id(i));
    let mut call_extra = Extra::new();
    if class == "code_action" {
        call_extra.insert("class_".into(), Value::String(class.into()));
    }
    let mut step = Step::new(Role::Assistant, take(&mut item, "description"));
    step.reasoning = take_str(&mut item, "reasoning_content");
    step.tool_calls.push(ToolCall {
        arguments: arguments.into(),
        arguments_invalid: false,
        extra: call_extra,
        id: Some(id),
        name,
        text_embedded: false,
    });
    step.extra = into_extra(item);
    Ok(step)
}

/// An observation. With a `tool_call_id`, or right after an api / code action (ADP's
/// adjacency convention, `schema/tool_call_links.py`: an observation that directly follows
/// a tool action is that action's result), it is a `tool` step whose result is linked to
/// the call. Otherwise a text observation speaks as its `source` says (`user` → user,
/// `system` → system, `agent` / `assistant` → assistant, `environment` → environment);
/// image, web and JSON observations are environment steps.
fn observation(
    class: &str,
    mut item: Map<String, Value>,
    answered: Option<String>,
    path: &str,
) -> Result<Step, Problem> {
    let content = match class {
        "text_observation" => Some(Value::String(required_str(&mut item, "content", path)?)),
        "image_observation" | "json_observation" => take(&mut item, "content"),
        _ => None,
    };
    if class != "text_observation" {
        item.insert("class_".into(), Value::String(class.into()));
    }
    let call_id = take_str(&mut item, "tool_call_id").or(answered);
    if call_id.is_some() {
        let mut step = Step::new(Role::Tool, None);
        step.tool_results.push(ToolResult {
            call_id,
            content: content.map(Into::into),
            extra: into_extra(item),
            subagent_refs: Vec::new(),
        });
        return Ok(step);
    }
    let role = match item.get("source").and_then(Value::as_str) {
        _ if class != "text_observation" => Role::Environment,
        Some("user") => Role::User,
        Some("system") => Role::System,
        Some("agent" | "assistant") => Role::Assistant,
        Some("environment") => Role::Environment,
        Some(other) => {
            return Err(Problem::new(
                Reason::InvalidValue,
                format!("{path}.source"),
                format!("unknown observation source '{other}'"),
            ))
        }
        None => return Err(schema(format!("{path}.source"), "source must be a string")),
    };
    if class == "text_observation" {
        item.remove("source");
    }
    let mut step = Step::new(role, content);
    step.extra = into_extra(item);
    Ok(step)
}

/// `details` (dataset-specific, every value a string): a `tools` string holding a JSON list
/// becomes `tools`, and `resolved` (`"True"` / `"False"`) the outcome (`source_reported`:
/// the details say so without the evidence). Everything else stays in `extra.details`.
fn details(row: &mut Map<String, Value>) -> (Option<Vec<Value>>, Outcome) {
    let mut outcome = Outcome::default();
    let Some(Value::Object(details)) = row.get_mut("details") else {
        return (None, outcome);
    };
    let tools = match details.get("tools").and_then(Value::as_str).map(serde_json::from_str::<Value>) {
        Some(Ok(Value::Array(t))) => {
            details.remove("tools");
            Some(t)
        }
        _ => None,
    };
    let status = match details.get("resolved").and_then(Value::as_str) {
        Some("True" | "true") => Some(Status::Success),
        Some("False" | "false") => Some(Status::Failure),
        _ => None,
    };
    if let Some(status) = status {
        details.remove("resolved");
        outcome.status = status;
        outcome.verification = Verification::SourceReported;
    }
    (tools, outcome)
}

/// Steps of the SFT view: `system` first, then the turns. `gpt` / `function_call` turns are
/// assistant steps whose `<function=...>` blocks are text-embedded calls; an `observation`
/// turn, or a `human` turn right after a step that made calls, is that step's result
/// (linked when there is exactly one call); other `human` turns are user steps (after the
/// first assistant step of unknown authorship: OpenHands' automatic "Please continue"
/// replies travel as human turns).
fn sft_steps(row: &mut Map<String, Value>) -> Result<Vec<Step>, Problem> {
    let turns = match row.remove("conversations") {
        Some(Value::Array(t)) => t,
        _ => return Err(schema("$.conversations", "conversations must be a list")),
    };
    let mut steps = Vec::with_capacity(turns.len() + 1);
    if let Some(system) = take_str(row, "system") {
        steps.push(Step::new(Role::System, Some(Value::String(system))));
    }
    for (i, turn) in turns.into_iter().enumerate() {
        let path = idx("$.conversations", i);
        let Value::Object(mut turn) = turn else {
            return Err(schema(path, "a turn must be an object"));
        };
        let from = required_str(&mut turn, "from", &path)?;
        let value = take(&mut turn, "value");
        let prev = steps.last();
        let prev_called = prev.is_some_and(|s: &Step| s.role == Role::Assistant && !s.tool_calls.is_empty());
        let mut step = match from.as_str() {
            "gpt" | "function_call" => {
                let text = value.as_ref().and_then(Value::as_str).unwrap_or_default();
                let calls = xml_calls(text, steps.len());
                let mut s = Step::new(Role::Assistant, value);
                s.tool_calls = calls;
                s
            }
            "human" | "observation" if prev_called || from == "observation" => {
                let mut s = observation_step(prev, value);
                s.extra.remove("role");
                s.extra.insert("from".into(), Value::String(from.clone()));
                s
            }
            "human" => {
                let mut s = Step::new(Role::User, value);
                if steps.iter().any(|s| s.role == Role::Assistant) {
                    s.authorship = Authorship::Unknown;
                }
                s
            }
            "system" => Step::new(Role::System, value),
            other => {
                return Err(Problem::new(
                    Reason::InvalidValue,
                    format!("{path}.from"),
                    format!("unknown speaker '{other}'"),
                ))
            }
        };
        if from == "function_call" {
            step.extra.insert("from".into(), Value::String(from));
        }
        step.extra.extend(turn);
        steps.push(step);
    }
    Ok(steps)
}

/// Task: an id of the SWE-bench shape with the ADP export's `_N` counter names its instance
/// (`python__mypy-15976_0` → `python__mypy-15976`, explicit: the same key as SWE-Gym's raw
/// rows); any other ADP id names the trajectory, not the task, so the key is the hashed
/// first user instruction (environment `adp`), else the record hash.
fn task(id: Option<&str>, steps: &[Step], sha: &str) -> Task {
    let instance = id.map(strip_adp_counter).filter(|bare| id.is_some_and(|full| bare.len() < full.len()));
    let instruction = first_instruction(steps);
    let instance = instance.map(str::to_string);
    Task::keyed(instance.clone(), instance, instruction, Some(FAMILY.into()), sha)
}
