//! `trajkit validate`: every problem with file:line and field; the exit status tells.

use crate::pipe::Lines;
use anyhow::Result;
use serde_json::json;
use trajkit_formats::{FileReport, InputFile, Rejection, Sink};
use trajkit_verify::completeness::{self, Tally};

use super::{init_threads, read_with};
use crate::ReadArgs;

struct Problems {
    out: Lines,
    json: bool,
    strict: bool,
    rejected: u64,
    /// `--complete`: the publication check, and its tally.
    complete: Option<Tally>,
}

impl Sink for Problems {
    fn trajectory(&mut self, _: &InputFile, t: Option<&trajkit_model::Trajectory>, _: Option<&[u8]>) {
        if let (Some(tally), Some(t)) = (&mut self.complete, t) {
            let lacks = tally.add(t);
            if !lacks.is_empty() {
                let line =
                    if self.json { completeness::json_line(t, &lacks) } else { completeness::text_line(t, &lacks) };
                self.out.line(format_args!("{line}"));
            }
        }
    }

    fn rejection(&mut self, r: &Rejection) {
        self.rejected += 1;
        if self.json {
            self.out.line(format_args!("{}", serde_json::to_string(r).unwrap_or_default()));
            return;
        }
        for p in &r.problems {
            self.out.line(format_args!("{}: {}: {}: {}", r.location(), p.json_path, p.reason.as_str(), p.message));
        }
    }

    fn file_done(&mut self, report: &FileReport) {
        if let Some(e) = &report.error {
            if self.json {
                self.out.line(format_args!("{}", json!({"path": report.path, "error": e})));
            } else {
                self.out.line(format_args!("{e}"));
            }
        }
    }

    fn should_stop(&self) -> bool {
        self.strict && self.rejected > 0
    }
}

pub fn run(args: &ReadArgs, strict: bool, json: bool, complete: bool) -> Result<u8> {
    init_threads(&args.options)?;
    let mut sink =
        Problems { out: Lines::stdout(), json, strict, rejected: 0, complete: complete.then(Tally::default) };
    let outcome = read_with(args, false, complete, &mut sink)?;
    // The problems come before the summary on stderr.
    sink.out.finish();
    let files = outcome.reports.len();
    let accepted: u64 = outcome.reports.iter().map(|r| r.trajectories).sum();
    let rejected: u64 = outcome.reports.iter().map(|r| r.rejected).sum();
    let errors = outcome.reports.iter().filter(|r| r.error.is_some()).count() + outcome.missing.len();
    eprintln!(
        "{files} files: {accepted} trajectories accepted, {rejected} records rejected, {errors} files with read errors"
    );
    let code = outcome.exit_code();
    match &sink.complete {
        Some(tally) => {
            eprintln!("{}", tally.summary());
            Ok(if code == 0 && tally.incomplete > 0 { 1 } else { code })
        }
        None => Ok(code),
    }
}
