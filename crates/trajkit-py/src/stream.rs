//! The read driver on a worker thread feeding a bounded channel; Python pulls records
//! (canonical JSON), Arrow batches, or nothing (inspect, validate), and afterwards the
//! per-file reports and the rejections of the same call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use crossbeam_channel::{bounded, Receiver, Sender};
use pyo3::prelude::*;
use pyo3_arrow::PyRecordBatch;
use trajkit_formats::pipeline::Analyzer;
use trajkit_formats::{FileReport, FormatError, InputFile, ReadOutcome, ReadRequest, Rejection, Sink};

use crate::arrow::{Rows, Summary};
use crate::errors;
use crate::wait;

/// What a stream yields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Canonical JSON lines (`read`).
    Records,
    /// Arrow record batches (`read_arrow`).
    Arrow,
    /// Nothing but reports and rejections (`inspect`, `validate`).
    Reports,
}

/// The largest canonical record an Arrow `Utf8` column holds (its offsets are `i32`).
const MAX_RECORD_COLUMN_BYTES: usize = i32::MAX as usize;

/// Messages from the worker, in input order.
enum Item {
    Record(Vec<u8>),
    Batch(RecordBatch),
    Rejection(Box<Rejection>),
    Done(Result<ReadOutcome, FormatError>),
    Failed(String),
}

/// The worker's sink: forwards what the mode asks for; stops on cancel, on a closed
/// channel, or at the first rejection under `strict`.
struct Forward {
    mode: Mode,
    strict: bool,
    rejected: bool,
    tx: Sender<Item>,
    rows: Rows,
    cancel: Arc<AtomicBool>,
    closed: bool,
}

impl Forward {
    fn send(&mut self, item: Item) {
        if !self.closed && self.tx.send(item).is_err() {
            self.closed = true;
        }
    }

    fn flush_rows(&mut self) {
        if self.rows.len() == 0 {
            return;
        }
        match self.rows.finish() {
            Ok(b) => self.send(Item::Batch(b)),
            Err(e) => self.send(Item::Failed(format!("building an Arrow batch: {e}"))),
        }
    }
}

impl Sink for Forward {
    fn trajectory(&mut self, _: &InputFile, _: Option<&trajkit_model::Trajectory>, canonical: Option<&[u8]>) {
        if let (Mode::Records, Some(bytes)) = (self.mode, canonical) {
            self.send(Item::Record(bytes.to_vec()));
        }
    }

    /// Arrow mode: the row's summary was computed on a worker thread; append it.
    fn analyzed(&mut self, _: &InputFile, analysis: Box<dyn std::any::Any + Send>, canonical: Option<&[u8]>) {
        let (Ok(summary), Some(bytes)) = (analysis.downcast::<Summary>(), canonical) else {
            return self
                .send(Item::Failed("internal error: a record reached the Arrow rows without its summary".into()));
        };
        if bytes.len() > MAX_RECORD_COLUMN_BYTES {
            let message = format!("a canonical record of {} bytes does not fit an Arrow string column", bytes.len());
            return self.send(Item::Failed(message));
        }
        if self.rows.full_before(bytes.len()) {
            self.flush_rows();
        }
        self.rows.push(&summary, bytes);
    }

    fn rejection(&mut self, r: &Rejection) {
        self.rejected = true;
        self.send(Item::Rejection(Box::new(r.clone())));
    }

    fn should_stop(&self) -> bool {
        self.closed || self.cancel.load(Ordering::Relaxed) || (self.strict && self.rejected)
    }
}

/// Starts reading `req` on a worker thread with its own rayon pool.
fn spawn(
    req: ReadRequest,
    threads: Option<usize>,
    mode: Mode,
    strict: bool,
    cancel: Arc<AtomicBool>,
) -> (Receiver<Item>, JoinHandle<()>) {
    let cap = if mode == Mode::Arrow { 2 } else { 256 };
    let (tx, rx) = bounded(cap);
    let handle = std::thread::spawn(move || {
        let pool = match wait::pool(threads) {
            Ok(p) => p,
            Err(e) => {
                let _ = tx.send(Item::Failed(format!("cannot start worker threads: {e}")));
                return;
            }
        };
        let mut sink =
            Forward { mode, strict, rejected: false, tx: tx.clone(), rows: Rows::default(), cancel, closed: false };
        let canonical = mode != Mode::Reports;
        // Arrow rows: the summary is computed on the worker threads (the record is dropped
        // there too); the ordered thread only appends it with the canonical JSON.
        let analyze: Option<Analyzer> = (mode == Mode::Arrow).then(|| Analyzer {
            interaction: false,
            run: Arc::new(|t: &trajkit_model::Trajectory, _| Box::new(Summary::of(t)) as Box<dyn std::any::Any + Send>),
        });
        let done = pool.install(|| {
            trajkit_formats::read_paths_analyzed(&req, canonical, false, analyze, &mut |_, _| {}, &mut sink)
        });
        sink.flush_rows();
        let _ = tx.send(Item::Done(done));
    });
    (rx, handle)
}

/// A running read: iterate it for records or batches; `reports` and `rejections` hold
/// the figures once it is exhausted.
#[pyclass(module = "trajkit._native")]
pub struct Stream {
    rx: Receiver<Item>,
    worker: Option<JoinHandle<()>>,
    cancel: Arc<AtomicBool>,
    strict: bool,
    mode: Mode,
    finished: bool,
    outcome: Option<ReadOutcome>,
    rejections: Vec<Rejection>,
}

impl Stream {
    /// Starts the read `req`.
    pub fn start(req: ReadRequest, threads: Option<usize>, mode: Mode, strict: bool) -> Stream {
        let cancel = Arc::new(AtomicBool::new(false));
        let (rx, worker) = spawn(req, threads, mode, strict, cancel.clone());
        Stream {
            rx,
            worker: Some(worker),
            cancel,
            strict,
            mode,
            finished: false,
            outcome: None,
            rejections: Vec::new(),
        }
    }

    /// The next record or batch, handling rejections and the end on the way; `None` at the end.
    fn pull(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        while !self.finished {
            let Some(item) = wait::next(py, &self.rx, &self.cancel, &mut self.worker)? else {
                self.finished = true;
                return Err(errors::with_location::<errors::TrajkitError>(
                    py,
                    "internal error: the reader stopped without a result".into(),
                    None,
                    None,
                    None,
                ));
            };
            match item {
                Item::Record(bytes) => return Ok(Some(pyo3::types::PyBytes::new(py, &bytes).into_any().unbind())),
                Item::Batch(b) => return Ok(Some(PyRecordBatch::new(b).into_pyarrow(py)?.unbind())),
                Item::Rejection(r) => {
                    if self.strict {
                        let err = errors::rejected(py, &r);
                        wait::stop(py, &self.rx, &self.cancel, &mut self.worker);
                        self.finished = true;
                        self.rejections.push(*r);
                        return Err(err);
                    }
                    self.rejections.push(*r);
                }
                Item::Failed(message) => {
                    wait::stop(py, &self.rx, &self.cancel, &mut self.worker);
                    self.finished = true;
                    return Err(errors::with_location::<errors::TrajkitError>(py, message, None, None, None));
                }
                Item::Done(result) => {
                    self.finished = true;
                    if let Some(h) = self.worker.take() {
                        let _ = py.detach(|| h.join());
                    }
                    let outcome = result.map_err(|e| errors::format_error(py, &e))?;
                    let nothing = outcome.exit_code() == 2 && self.mode != Mode::Reports;
                    let first_missing = outcome.missing.first().cloned();
                    self.outcome = Some(outcome);
                    if nothing {
                        let message = first_missing.unwrap_or_else(|| "nothing could be read".into());
                        return Err(errors::with_location::<errors::InputError>(py, message, None, None, None));
                    }
                }
            }
        }
        Ok(None)
    }
}

#[pymethods]
impl Stream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.pull(py)
    }

    /// Runs the stream to its end (inspect, validate).
    fn drain(&mut self, py: Python<'_>) -> PyResult<()> {
        while self.pull(py)?.is_some() {}
        Ok(())
    }

    /// Per-file reports as JSON lines (the `inspect --json` objects); empty until the end.
    fn reports_json(&self) -> PyResult<Vec<String>> {
        let reports: &[FileReport] = self.outcome.as_ref().map(|o| o.reports.as_slice()).unwrap_or(&[]);
        reports
            .iter()
            .map(|r| serde_json::to_string(r).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string())))
            .collect()
    }

    /// Rejected records so far as JSON lines (the `validate --json` objects).
    fn rejections_json(&self) -> PyResult<Vec<String>> {
        self.rejections
            .iter()
            .map(|r| serde_json::to_string(r).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string())))
            .collect()
    }

    /// Paths given that do not exist, as error messages.
    fn missing(&self) -> Vec<String> {
        self.outcome.as_ref().map(|o| o.missing.clone()).unwrap_or_default()
    }

    /// The CLI's exit status for this read (0, 1 or 2); `None` until the end.
    fn exit_code(&self) -> Option<u8> {
        self.outcome.as_ref().map(|o| o.exit_code())
    }

    /// Stops the worker (the iterator ends); safe to call at any time.
    fn close(&mut self, py: Python<'_>) {
        wait::stop(py, &self.rx, &self.cancel, &mut self.worker);
        self.finished = true;
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Abandoned mid-way: tell the worker to stop; it ends on its own (its sends fail).
        self.cancel.store(true, Ordering::Relaxed);
    }
}
