//! SWE-smith trajectories: SWE-agent runs on SWE-smith task instances, as chat messages.
//!
//! Two containers hold the same record shape (`messages`, `instance_id`, and in the
//! published dataset `resolved`, `model`, `traj_id`, `patch`): the fine-tuning JSON Lines
//! that SWE-smith's `transform_to_ft` writes (one record per line), and the Agent Data
//! Protocol "raw" export, a JSON array of such records (split into one record per element).
//!
//! In the `xml` style the model writes its one action per turn as text
//! (`<function=NAME><parameter=KEY>VALUE</parameter></function>`), and the harness answers
//! with a user-role message (the helpers it shares with the other SWE-agent-style readers
//! are in `swe`). See docs/formats/swe-smith.md for the rules.

use serde_json::{Map, Value};
use trajkit_model::{Agent, Trajectory};

use crate::input::InputFile;
use crate::json::{into_extra, record_object, take_nonempty_str};
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{schema, Problem, Reason};
use crate::swe::{bool_outcome, chat_step, standard_gaps, steps_of, swe_task};

/// Family name.
const FAMILY: &str = "swe-smith";

/// Reader for SWE-smith trajectories (fine-tuning JSONL and ADP raw arrays).
pub(crate) static READER: FnReader = FnReader { family: FAMILY, detect, read, arrays: true };

/// Rows with `messages` and `instance_id` (and `traj_id`, or `<function=` text calls), one
/// per line or in a JSON array; rows with another SWE family's keys are left to it.
fn detect(peek: &Peek) -> Option<Detection> {
    let other_family = peek.has_key("run_id") || peek.has_key("test_result") || peek.has_key("trajectory");
    if peek.has_key("messages") && peek.has_key("instance_id") && !other_family {
        if peek.has_key("traj_id") {
            return claim(90, "messages, instance_id and traj_id keys", Layout::Lines);
        }
        if peek.contains("<function=") {
            return claim(85, "messages and instance_id with <function=...> text calls", Layout::Lines);
        }
    }
    if peek.is_array_with_keys(&["traj_id", "messages", "instance_id"]) {
        return claim(85, "a JSON array of records with traj_id, messages and instance_id", Layout::Document);
    }
    None
}

/// Maps one SWE-smith record.
fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut row = record_object(raw.bytes)?;
    let messages = messages(&mut row)?;
    let steps = steps_of(messages, "$.messages", |m, path, before| chat_step(m, path, before, true))?;
    let gaps = standard_gaps(&steps);
    let outcome = bool_outcome(&mut row, "resolved");
    let instance_id = take_nonempty_str(&mut row, "instance_id");
    let task = swe_task(FAMILY, instance_id, &steps, raw.sha256);
    let model = take_nonempty_str(&mut row, "model");
    let session_id = take_nonempty_str(&mut row, "traj_id");
    Ok(Trajectory {
        agent: Agent { model, name: Some("swe-agent".into()), version: None },
        extra: into_extra(row),
        gaps,
        outcome,
        session_id,
        steps,
        ..raw.trajectory(FAMILY, file, task)
    })
}

/// `messages` as a list: the list itself, or a JSON string holding it (the published
/// dataset stores it as a string).
fn messages(row: &mut Map<String, Value>) -> Result<Vec<Value>, Problem> {
    match row.remove("messages") {
        Some(Value::Array(items)) => Ok(items),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Array(items)) => Ok(items),
            Ok(_) => Err(schema("$.messages", "messages string must hold a JSON list")),
            Err(e) => Err(Problem::new(Reason::InvalidJson, "$.messages", format!("messages string is not JSON: {e}"))),
        },
        None | Some(Value::Null) => Err(schema("$.messages", "messages is missing")),
        Some(_) => Err(schema("$.messages", "messages must be a list or a JSON string")),
    }
}
