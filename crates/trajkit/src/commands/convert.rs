//! `trajkit convert`: canonical records as JSON Lines, written atomically.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use trajkit_formats::{InputFile, Sink};

use super::{init_threads, read};
use crate::output::AtomicOutput;
use crate::ReadArgs;

struct Writer {
    out: AtomicOutput,
    error: Option<std::io::Error>,
    written: u64,
}

impl Sink for Writer {
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
        self.error.is_some()
    }
}

pub fn run(args: &ReadArgs, output: &Path) -> Result<u8> {
    let threads = init_threads(args)?;
    let out = AtomicOutput::create(output, threads)?;
    let mut sink = Writer { out, error: None, written: 0 };
    let outcome = read(args, true, &mut sink)?;
    if let Some(e) = sink.error {
        return Err(e).with_context(|| format!("writing {}", output.display()));
    }
    if outcome.exit_code() == 2 {
        // Nothing could be read: leave no output behind (the temporary file is removed).
        eprintln!("trajkit: nothing could be read; {} not written", output.display());
        return Ok(2);
    }
    sink.out.finish()?;
    let rejected: u64 = outcome.reports.iter().map(|r| r.rejected).sum();
    eprintln!("wrote {} trajectories to {} ({rejected} records rejected)", sink.written, output.display());
    Ok(outcome.exit_code())
}
