//! `trajkit validate`: every problem with file:line and field; the exit status tells.

use anyhow::Result;
use serde_json::json;
use trajkit_formats::{FileReport, InputFile, Rejection, Sink};

use super::{init_threads, read};
use crate::ReadArgs;

struct Problems {
    json: bool,
    strict: bool,
    rejected: u64,
}

impl Sink for Problems {
    fn trajectory(&mut self, _: &InputFile, _: Option<&trajkit_model::Trajectory>, _: Option<&[u8]>) {}

    fn rejection(&mut self, r: &Rejection) {
        self.rejected += 1;
        if self.json {
            println!("{}", serde_json::to_string(r).unwrap_or_default());
            return;
        }
        for p in &r.problems {
            println!("{}: {}: {}: {}", r.location(), p.json_path, p.reason.as_str(), p.message);
        }
    }

    fn file_done(&mut self, report: &FileReport) {
        if let Some(e) = &report.error {
            if self.json {
                println!("{}", json!({"path": report.path, "error": e}));
            } else {
                println!("{e}");
            }
        }
    }

    fn should_stop(&self) -> bool {
        self.strict && self.rejected > 0
    }
}

pub fn run(args: &ReadArgs, strict: bool, json: bool) -> Result<u8> {
    init_threads(args)?;
    let mut sink = Problems { json, strict, rejected: 0 };
    let outcome = read(args, false, &mut sink)?;
    let files = outcome.reports.len();
    let accepted: u64 = outcome.reports.iter().map(|r| r.trajectories).sum();
    let rejected: u64 = outcome.reports.iter().map(|r| r.rejected).sum();
    let errors = outcome.reports.iter().filter(|r| r.error.is_some()).count() + outcome.missing.len();
    eprintln!(
        "{files} files: {accepted} trajectories accepted, {rejected} records rejected, {errors} files with read errors"
    );
    Ok(outcome.exit_code())
}
