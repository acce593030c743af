//! `read_arrow`'s rows: one per trajectory, summary columns plus the canonical record as
//! a JSON string column, built with arrow-array builders (no per-row Python objects).

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use trajkit_model::Trajectory;

/// Rows per record batch: large enough to amortise the crossing, small enough to keep
/// memory bounded (a few MiB of canonical JSON per batch).
pub const BATCH_ROWS: usize = 1024;

/// The documented schema of `read_arrow` (docs/python.md).
pub fn schema() -> SchemaRef {
    let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    Arc::new(Schema::new(vec![
        text("id", false),
        text("format", false),
        text("source_path", false),
        Field::new("source_line", DataType::UInt64, true),
        text("task_key", false),
        text("task_id", true),
        text("environment", true),
        text("outcome", false),
        text("verification", false),
        Field::new("reward", DataType::Float64, true),
        text("agent", true),
        text("model", true),
        Field::new("steps", DataType::UInt64, false),
        Field::new("tool_calls", DataType::UInt64, false),
        text("record", false),
    ]))
}

/// Column builders for one batch in progress.
#[derive(Default)]
pub struct Rows {
    len: usize,
    id: StringBuilder,
    format: StringBuilder,
    source_path: StringBuilder,
    source_line: UInt64Builder,
    task_key: StringBuilder,
    task_id: StringBuilder,
    environment: StringBuilder,
    outcome: StringBuilder,
    verification: StringBuilder,
    reward: Float64Builder,
    agent: StringBuilder,
    model: StringBuilder,
    steps: UInt64Builder,
    tool_calls: UInt64Builder,
    record: StringBuilder,
}

impl Rows {
    /// Rows appended since the last `finish`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Appends one trajectory and its canonical JSON line.
    pub fn push(&mut self, t: &Trajectory, canonical: &[u8]) {
        self.len += 1;
        self.id.append_value(&t.id);
        self.format.append_value(&t.provenance.format);
        self.source_path.append_value(&t.provenance.path);
        self.source_line.append_option(t.provenance.line);
        self.task_key.append_value(&t.task.key);
        self.task_id.append_option(t.task.id.as_deref());
        self.environment.append_option(t.task.environment.as_deref());
        self.outcome.append_value(t.outcome.status.as_str());
        self.verification.append_value(t.outcome.verification.as_str());
        self.reward.append_option(t.outcome.reward);
        self.agent.append_option(t.agent.name.as_deref());
        self.model.append_option(t.agent.model.as_deref());
        self.steps.append_value(t.steps.len() as u64);
        self.tool_calls.append_value(t.steps.iter().map(|s| s.tool_calls.len() as u64).sum());
        let line = canonical.strip_suffix(b"\n").unwrap_or(canonical);
        self.record.append_value(String::from_utf8_lossy(line));
    }

    /// The rows so far as a batch; the builders start over.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        self.len = 0;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.id.finish()),
            Arc::new(self.format.finish()),
            Arc::new(self.source_path.finish()),
            Arc::new(self.source_line.finish()),
            Arc::new(self.task_key.finish()),
            Arc::new(self.task_id.finish()),
            Arc::new(self.environment.finish()),
            Arc::new(self.outcome.finish()),
            Arc::new(self.verification.finish()),
            Arc::new(self.reward.finish()),
            Arc::new(self.agent.finish()),
            Arc::new(self.model.finish()),
            Arc::new(self.steps.finish()),
            Arc::new(self.tool_calls.finish()),
            Arc::new(self.record.finish()),
        ];
        RecordBatch::try_new(schema(), columns)
    }
}
