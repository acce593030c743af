//! Waiting for the engine without holding the GIL, and with Ctrl-C honoured: the
//! calling thread wakes every 100 ms, re-attaches and runs Python's signal handlers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};
use pyo3::prelude::*;

/// How often a waiting call re-attaches to check for signals.
const TICK: Duration = Duration::from_millis(100);

/// Receives the next message from `rx`, detached from the interpreter. On a pending
/// KeyboardInterrupt (or any signal handler's exception) it sets `cancel`, waits for the
/// worker to stop and returns that exception. `None` when the worker has finished.
pub fn next<T: Send>(
    py: Python<'_>,
    rx: &Receiver<T>,
    cancel: &Arc<AtomicBool>,
    worker: &mut Option<JoinHandle<()>>,
) -> PyResult<Option<T>> {
    loop {
        match py.detach(|| rx.recv_timeout(TICK)) {
            Ok(item) => return Ok(Some(item)),
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    stop(py, rx, cancel, worker);
                    return Err(e);
                }
            }
        }
    }
}

/// Asks the worker to stop and waits until it has (draining its channel so it never
/// blocks on a full one), detached.
pub fn stop<T: Send>(py: Python<'_>, rx: &Receiver<T>, cancel: &AtomicBool, worker: &mut Option<JoinHandle<()>>) {
    cancel.store(true, Ordering::Relaxed);
    if let Some(handle) = worker.take() {
        py.detach(|| {
            while !handle.is_finished() {
                while rx.try_recv().is_ok() {}
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = handle.join();
        });
    }
}

/// Runs `job` on a worker thread and waits for its result with [`next`]'s Ctrl-C handling.
pub fn run<R: Send + 'static>(py: Python<'_>, job: impl FnOnce(Arc<AtomicBool>) -> R + Send + 'static) -> PyResult<R> {
    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = crossbeam_channel::bounded(1);
    let flag = cancel.clone();
    let mut worker = Some(std::thread::spawn(move || {
        let _ = tx.send(job(flag));
    }));
    match next(py, &rx, &cancel, &mut worker)? {
        Some(r) => {
            if let Some(h) = worker.take() {
                let _ = py.detach(|| h.join());
            }
            Ok(r)
        }
        None => Err(crate::errors::with_location::<crate::errors::TrajkitError>(
            py,
            "internal error: the worker thread stopped without a result".into(),
            None,
            None,
            None,
        )),
    }
}

/// A rayon pool of `threads` workers (all cores when `None` or 0) for one call.
pub fn pool(threads: Option<usize>) -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads.filter(|n| *n > 0) {
        b = b.num_threads(n);
    }
    b.build()
}

/// A build's progress for Python: nothing shown; `cancelled` is the call's Ctrl-C flag.
pub struct Cancel(pub Arc<AtomicBool>);

impl trajkit_library::Progress for Cancel {
    fn reading_done(&self) {
        trajkit::alloc::release_freed_memory();
    }

    fn cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
