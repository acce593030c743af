//! `convert`: canonical records as JSON Lines, written atomically.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use trajkit_formats::{FileReport, InputFile, ReadOutcome, ReadRequest, Rejection, Sink};

use crate::output::AtomicOutput;
use crate::OpsError;

struct Writer<'a> {
    out: AtomicOutput,
    error: Option<std::io::Error>,
    written: u64,
    /// Hears each rejection and finished file (the CLI prints them).
    watch: &'a mut dyn Sink,
    /// Set by the caller to abandon the run (Ctrl-C in Python); nothing is written.
    cancel: &'a AtomicBool,
}

impl Sink for Writer<'_> {
    fn trajectory(&mut self, _: &InputFile, _: Option<&trajkit_model::Trajectory>, canonical: Option<&[u8]>) {
        if self.error.is_some() {
            return;
        }
        if let Some(bytes) = canonical {
            match self.out.write_all(bytes) {
                Ok(()) => self.written += 1,
                Err(e) => self.error = Some(e),
            }
        }
    }

    fn rejection(&mut self, r: &Rejection) {
        self.watch.rejection(r)
    }

    fn file_done(&mut self, report: &FileReport) {
        self.watch.file_done(report)
    }

    fn should_stop(&self) -> bool {
        self.error.is_some() || self.cancel.load(Ordering::Relaxed) || self.watch.should_stop()
    }
}

/// A watcher that hears nothing (Python: rejections are in the returned reports).
pub struct Silent;

impl Sink for Silent {
    fn trajectory(&mut self, _: &InputFile, _: Option<&trajkit_model::Trajectory>, _: Option<&[u8]>) {}
}

/// What `convert` wrote: the read's per-file reports, and the records written
/// (`None` when nothing was written: nothing could be read, or the run was cancelled).
pub struct Converted {
    pub outcome: ReadOutcome,
    pub written: Option<u64>,
}

/// Reads `req` into canonical JSON Lines at `output` (`-` is stdout; .gz/.zst by
/// extension), written atomically: nothing appears under `output`
/// unless something was read and `cancel` stayed unset. `on_start` and `watch` hear what
/// `trajkit_formats::read_paths` reports (missing paths, rejections, finished files).
pub fn convert(
    req: &ReadRequest,
    output: &Path,
    cancel: &AtomicBool,
    on_start: &mut dyn FnMut(&[String], usize),
    watch: &mut dyn Sink,
) -> Result<Converted, OpsError> {
    let out = AtomicOutput::create(output)?;
    let mut sink = Writer { out, error: None, written: 0, watch, cancel };
    let outcome = trajkit_formats::read_paths(req, true, false, on_start, &mut sink)?;
    if let Some(e) = sink.error {
        return Err(OpsError::Write { path: output.to_path_buf(), source: e });
    }
    // Nothing read or cancelled: the temporary file is removed when `sink.out` drops.
    if outcome.exit_code() == 2 || cancel.load(Ordering::Relaxed) {
        return Ok(Converted { outcome, written: None });
    }
    sink.out.finish()?;
    Ok(Converted { outcome, written: Some(sink.written) })
}
