//! SWE-Gym OpenHands sampled trajectories: OpenHands (CodeAct) runs on SWE-Gym instances as
//! OpenAI chat messages with structured `tool_calls`, the tool definitions offered, and the
//! SWE-bench-style evaluation (`resolved`, `test_result.report`).
//!
//! Read from the Agent Data Protocol "raw" export (a JSON array, split into one record per
//! element) or from JSON Lines of the same rows. See docs/formats/swe-gym.md.

use serde_json::{Map, Value};
use trajkit_model::{Agent, Gap, GapKind, LazyValue, Status, Trajectory};

use crate::input::InputFile;
use crate::json::{into_extra, record_object, take};
use crate::reader::{Detection, FnReader, Peek, RawRecord};
use crate::rejection::Problem;
use crate::swe::{bool_outcome, chat_step, rows_with_keys, standard_gaps, steps_of, swe_task, task_id};

/// Family name.
const FAMILY: &str = "swe-gym";

/// Reader for SWE-Gym OpenHands sampled trajectories.
pub(crate) static READER: FnReader = FnReader { family: FAMILY, detect, read, arrays: true };

/// Rows with `messages`, `run_id` and `test_result`, one per line or in a JSON array.
fn detect(peek: &Peek) -> Option<Detection> {
    let lines = ["messages", "run_id", "test_result"];
    rows_with_keys(peek, &lines, &["instance_id", "run_id", "test_result", "messages"])
}

/// Maps one SWE-Gym record.
fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut row = record_object(raw.bytes)?;
    let messages = crate::json::take_list(&mut row, "messages")?;
    let steps = steps_of(messages, "$.messages", |m, path, before| chat_step(m, path, before, false))?;
    let mut gaps = standard_gaps(&steps);
    let mut outcome = bool_outcome(&mut row, "resolved");
    if let Some(report) = report_resolved(&row) {
        // Without a top-level flag, the harness report the row carries is the outcome.
        if outcome.status == Status::Unknown {
            outcome.status = if report { Status::Success } else { Status::Failure };
            outcome.verification = trajkit_model::Verification::SourceEvaluator;
        }
        let own = match outcome.status {
            Status::Success => Some(true),
            Status::Failure => Some(false),
            Status::Unknown => None,
        };
        if own.is_some_and(|own| own != report) {
            let detail = format!("resolved is {} but test_result.report.resolved is {report}", !report);
            gaps.push(Gap::at(GapKind::OutcomeConflict, None, detail));
        }
    }
    let task_id = task_id(&mut row);
    let task = swe_task(FAMILY, task_id, &steps, raw.sha256);
    let tools = match take(&mut row, "tools") {
        Some(Value::Array(t)) => Some(LazyValue::from_values(t)),
        Some(other) => {
            row.insert("tools".into(), other);
            None
        }
        None => None,
    };
    Ok(Trajectory {
        agent: Agent { model: None, name: Some("openhands".into()), version: None },
        extra: into_extra(row),
        gaps,
        outcome,
        steps,
        tools,
        ..raw.trajectory(FAMILY, file, task)
    })
}

/// `test_result.report.resolved` when it is a boolean (the harness report; it stays in
/// `extra` with the rest of `test_result`).
fn report_resolved(row: &Map<String, Value>) -> Option<bool> {
    row.get("test_result")?.get("report")?.get("resolved")?.as_bool()
}
