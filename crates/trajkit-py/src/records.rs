//! A library's canonical records streamed to Python: a worker thread reads the shards in
//! library order into a bounded channel, so memory holds a few records, never the library.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver};
use pyo3::prelude::*;

use crate::{errors, library, wait};

/// Records in flight between the reading thread and Python.
const IN_FLIGHT: usize = 64;

/// The records of `Library.trajectories()`: iterate it for JSON strings.
#[pyclass(module = "trajkit._native")]
pub struct Records {
    rx: Receiver<Result<String, library::Failure>>,
    worker: Option<JoinHandle<()>>,
    cancel: Arc<AtomicBool>,
}

impl Records {
    /// Starts reading the records of the library at `root` that match `filter`.
    pub fn start(root: PathBuf, filter: Option<String>) -> Records {
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, rx) = bounded(IN_FLIGHT);
        let flag = cancel.clone();
        let worker = std::thread::spawn(move || {
            let mut emit = |item| !flag.load(Ordering::Relaxed) && tx.send(item).is_ok();
            if let Err(message) = library::each_trajectory(&root, filter.as_deref(), &mut emit) {
                let _ = tx.send(Err(message));
            }
        });
        Records { rx, worker: Some(worker), cancel }
    }
}

#[pymethods]
impl Records {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next record as canonical JSON; BuildError when the library cannot be read.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<String>> {
        match wait::next(py, &self.rx, &self.cancel, &mut self.worker)? {
            Some(Ok(json)) => Ok(Some(json)),
            Some(Err(message)) => {
                wait::stop(py, &self.rx, &self.cancel, &mut self.worker);
                Err(errors::with_location::<errors::BuildError>(py, message, None, None, None))
            }
            None => {
                if let Some(h) = self.worker.take() {
                    let _ = py.detach(|| h.join());
                }
                Ok(None)
            }
        }
    }

    /// Stops the reading thread (the iterator ends); safe to call at any time.
    fn close(&mut self, py: Python<'_>) {
        wait::stop(py, &self.rx, &self.cancel, &mut self.worker);
    }
}

impl Drop for Records {
    fn drop(&mut self) {
        // Abandoned mid-way: tell the worker to stop; it ends on its own (its sends fail).
        self.cancel.store(true, Ordering::Relaxed);
    }
}
