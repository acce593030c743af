//! SWE-Gym OpenHands sampled trajectories: OpenHands (CodeAct) runs on SWE-Gym instances as
//! OpenAI chat messages with structured `tool_calls`, the tool definitions offered, and the
//! SWE-bench-style evaluation (`resolved`, `test_result.report`).
//!
//! Read from the Agent Data Protocol "raw" export (a JSON array, split into one record per
//! element) or from JSON Lines of the same rows. See docs/formats/swe-gym.md.

use std::ops::Range;

use serde_json::{Map, Value};
use trajkit_model::{Agent, Gap, GapKind, LazyValue, Status, Trajectory};

use crate::input::InputFile;
use crate::json::{idx, into_extra, record_object, take};
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::Problem;
use crate::swe::{bool_outcome, chat_step, standard_gaps, swe_task, task_id};

/// Family name.
const FAMILY: &str = "swe-gym";

/// Reader for SWE-Gym OpenHands sampled trajectories.
pub struct SweGymReader;

impl Reader for SweGymReader {
    fn name(&self) -> &'static str {
        FAMILY
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let claim = |confidence, reason: &str, layout| Some(Detection { confidence, reason: reason.into(), layout });
        if peek.has_key("messages") && peek.has_key("run_id") && peek.has_key("test_result") {
            return claim(90, "messages, run_id and test_result keys", Layout::Lines);
        }
        if peek.is_array_with_keys(&["instance_id", "run_id", "test_result", "messages"]) {
            return claim(
                85,
                "a JSON array of records with instance_id, run_id, test_result and messages",
                Layout::Document,
            );
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

/// Maps one SWE-Gym record.
fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut row = record_object(raw.bytes)?;
    let messages = crate::json::take_list(&mut row, "messages")?;
    let mut steps = Vec::with_capacity(messages.len());
    for (i, m) in messages.into_iter().enumerate() {
        let step = chat_step(m, &idx("$.messages", i), &steps, false)?;
        steps.push(step);
    }
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
