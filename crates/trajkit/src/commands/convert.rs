//! `trajkit convert`: canonical records as JSON Lines, written atomically.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use trajkit_formats::{InputFile, Sink};

use super::{init_threads, read, ReadOutcome};
use crate::output::AtomicOutput;
use crate::ReadArgs;

struct Writer<'a> {
    out: AtomicOutput,
    error: Option<std::io::Error>,
    written: u64,
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

    fn rejection(&mut self, r: &trajkit_formats::Rejection) {
        if let Some(p) = r.problems.first() {
            eprintln!("{}: {}: {}: {}", r.location(), p.json_path, p.reason.as_str(), p.message);
        }
    }

    fn file_done(&mut self, report: &trajkit_formats::FileReport) {
        if let Some(e) = &report.error {
            eprintln!("trajkit: {e}");
        }
    }

    fn should_stop(&self) -> bool {
        self.error.is_some() || self.cancel.load(Ordering::Relaxed)
    }
}

/// What `convert` wrote: the read's per-file reports, and the records written
/// (`None` when nothing was written: nothing could be read, or the run was cancelled).
pub struct Converted {
    pub outcome: ReadOutcome,
    pub written: Option<u64>,
}

pub fn run(args: &ReadArgs, output: &Path) -> Result<u8> {
    let threads = init_threads(args)?;
    let converted = convert(args, output, threads, &AtomicBool::new(false))?;
    let Some(written) = converted.written else {
        eprintln!("trajkit: nothing could be read; {} not written", output.display());
        return Ok(2);
    };
    let rejected = converted.outcome.rejected();
    eprintln!("wrote {written} trajectories to {} ({rejected} records rejected)", output.display());
    Ok(converted.outcome.exit_code())
}

/// Reads `args` into canonical JSON Lines at `output`, written atomically: nothing appears
/// under `output` unless something was read and `cancel` stayed unset.
pub fn convert(args: &ReadArgs, output: &Path, threads: usize, cancel: &AtomicBool) -> Result<Converted> {
    let out = AtomicOutput::create(output, threads)?;
    let mut sink = Writer { out, error: None, written: 0, cancel };
    let outcome = read(args, true, &mut sink)?;
    if let Some(e) = sink.error {
        return Err(e).with_context(|| format!("writing {}", output.display()));
    }
    // Nothing read or cancelled: the temporary file is removed when `sink.out` drops.
    if outcome.exit_code() == 2 || cancel.load(Ordering::Relaxed) {
        return Ok(Converted { outcome, written: None });
    }
    sink.out.finish()?;
    Ok(Converted { outcome, written: Some(sink.written) })
}
