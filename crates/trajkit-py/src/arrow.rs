//! `read_arrow`'s rows: one per trajectory, summary columns plus the canonical record as
//! a JSON string column, built with arrow-array builders (no per-row Python objects).

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use trajkit_model::Trajectory;

/// Rows per record batch at most: large enough to amortise the crossing into Python.
pub const BATCH_ROWS: usize = 1024;

/// Bytes of canonical JSON per record batch: a batch is sent once it holds this much, so
/// memory in flight does not grow with record size (a 1 MiB rollout would otherwise make
/// 1 GiB batches) and the `record` column stays far below Utf8's 2 GiB offset limit.
pub const BATCH_BYTES: usize = 16 << 20;

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

/// One row's values, computed from the record on the worker thread that built it
/// (`Options::analyze`), so the ordered thread only appends them.
pub struct Summary {
    id: String,
    format: String,
    source_path: String,
    source_line: Option<u64>,
    task_key: String,
    task_id: Option<String>,
    environment: Option<String>,
    outcome: &'static str,
    verification: &'static str,
    reward: Option<f64>,
    agent: Option<String>,
    model: Option<String>,
    steps: u64,
    tool_calls: u64,
}

impl Summary {
    /// The summary columns of `t`.
    pub fn of(t: &Trajectory) -> Summary {
        Summary {
            id: t.id.clone(),
            format: t.provenance.format.clone(),
            source_path: t.provenance.path.clone(),
            source_line: t.provenance.line,
            task_key: t.task.key.clone(),
            task_id: t.task.id.clone(),
            environment: t.task.environment.clone(),
            outcome: t.outcome.status.as_str(),
            verification: t.outcome.verification.as_str(),
            reward: t.outcome.reward,
            agent: t.agent.name.clone(),
            model: t.agent.model.clone(),
            steps: t.steps.len() as u64,
            tool_calls: t.steps.iter().map(|s| s.tool_calls.len() as u64).sum(),
        }
    }
}

/// Column builders for one batch in progress.
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

impl Default for Rows {
    /// Empty builders; the record column is sized for a whole batch up front, so it is
    /// never grown (copied) while rows are appended.
    fn default() -> Self {
        Rows {
            len: 0,
            id: StringBuilder::new(),
            format: StringBuilder::new(),
            source_path: StringBuilder::new(),
            source_line: UInt64Builder::new(),
            task_key: StringBuilder::new(),
            task_id: StringBuilder::new(),
            environment: StringBuilder::new(),
            outcome: StringBuilder::new(),
            verification: StringBuilder::new(),
            reward: Float64Builder::new(),
            agent: StringBuilder::new(),
            model: StringBuilder::new(),
            steps: UInt64Builder::new(),
            tool_calls: UInt64Builder::new(),
            record: StringBuilder::with_capacity(BATCH_ROWS, BATCH_BYTES + (1 << 20)),
        }
    }
}

impl Rows {
    /// Rows appended since the last `finish`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the batch is full by rows, or would pass `BATCH_BYTES` with a record of
    /// `next` bytes: send it first.
    pub fn full_before(&self, next: usize) -> bool {
        let bytes = self.record.values_slice().len();
        self.len >= BATCH_ROWS || (self.len > 0 && bytes + next > BATCH_BYTES)
    }

    /// Appends one trajectory's summary and its canonical JSON line.
    pub fn push(&mut self, s: &Summary, canonical: &[u8]) {
        self.len += 1;
        self.id.append_value(&s.id);
        self.format.append_value(&s.format);
        self.source_path.append_value(&s.source_path);
        self.source_line.append_option(s.source_line);
        self.task_key.append_value(&s.task_key);
        self.task_id.append_option(s.task_id.as_deref());
        self.environment.append_option(s.environment.as_deref());
        self.outcome.append_value(s.outcome);
        self.verification.append_value(s.verification);
        self.reward.append_option(s.reward);
        self.agent.append_option(s.agent.as_deref());
        self.model.append_option(s.model.as_deref());
        self.steps.append_value(s.steps);
        self.tool_calls.append_value(s.tool_calls);
        let line = canonical.strip_suffix(b"\n").unwrap_or(canonical);
        self.record.append_value(String::from_utf8_lossy(line));
    }

    /// The rows so far as a batch; the builders start over (with fresh, presized ones).
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let mut done = std::mem::take(self);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(done.id.finish()),
            Arc::new(done.format.finish()),
            Arc::new(done.source_path.finish()),
            Arc::new(done.source_line.finish()),
            Arc::new(done.task_key.finish()),
            Arc::new(done.task_id.finish()),
            Arc::new(done.environment.finish()),
            Arc::new(done.outcome.finish()),
            Arc::new(done.verification.finish()),
            Arc::new(done.reward.finish()),
            Arc::new(done.agent.finish()),
            Arc::new(done.model.finish()),
            Arc::new(done.steps.finish()),
            Arc::new(done.tool_calls.finish()),
            Arc::new(done.record.finish()),
        ];
        RecordBatch::try_new(schema(), columns)
    }
}
