//! `trajkit convert`: canonical records as JSON Lines, written atomically
//! (`trajkit_ops::convert`), each rejection and unreadable file printed on stderr.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use trajkit_formats::{FileReport, InputFile, Rejection, Sink};

use super::{init_threads, watched};
use crate::ReadArgs;

/// Prints what the read rejects, one line each.
struct Printer;

impl Sink for Printer {
    fn trajectory(&mut self, _: &InputFile, _: Option<&trajkit_model::Trajectory>, _: Option<&[u8]>) {}

    fn rejection(&mut self, r: &Rejection) {
        if let Some(p) = r.problems.first() {
            eprintln!("{}: {}: {}: {}", r.location(), p.json_path, p.reason.as_str(), p.message);
        }
    }

    fn file_done(&mut self, report: &FileReport) {
        if let Some(e) = &report.error {
            eprintln!("trajkit: {e}");
        }
    }
}

pub fn run(args: &ReadArgs, output: &Path) -> Result<u8> {
    init_threads(&args.options)?;
    let req = args.request();
    let cancel = AtomicBool::new(false);
    let converted = watched(&mut Printer, |start, sink| Ok(trajkit_ops::convert(&req, output, &cancel, start, sink)?))?;
    let Some(written) = converted.written else {
        eprintln!("trajkit: nothing could be read; {} not written", output.display());
        return Ok(2);
    };
    let rejected = converted.outcome.rejected();
    eprintln!("wrote {written} trajectories to {} ({rejected} records rejected)", output.display());
    Ok(converted.outcome.exit_code())
}
