//! `trajkit isolation`: did any solver's model input carry the witness route's material or
//! the state check's expected values (docs/admission.md, "Solver isolation")? Also read by
//! `trajkit admit --solvers`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use trajkit_formats::{InputFile, Rejection, Sink};
use trajkit_model::Trajectory;
use trajkit_verify::isolation::{isolation, render_human};

use super::replay::ReportArgs;
use crate::{ReadArgs, ReadOptions};

/// Solver trajectories: files or directories of any readable format.
#[derive(Args, Clone)]
pub struct SolverArgs {
    /// Solver trajectories (files or directories, any readable format); repeatable.
    #[arg(long = "solvers", value_name = "PATH")]
    pub solvers: Vec<PathBuf>,
    /// Force a format for the solver files instead of detecting it per file.
    #[arg(long = "solvers-format", value_name = "FORMAT")]
    pub format: Option<String>,
}

/// Keeps every accepted record and every rejection's location.
#[derive(Default)]
struct Collect {
    trajectories: Vec<Trajectory>,
    rejected: Vec<String>,
}

impl Sink for Collect {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        self.trajectories.extend(t.cloned());
    }
    fn rejection(&mut self, r: &Rejection) {
        let problem = r.problems.first().map(|p| format!(": {} {}", p.json_path, p.message)).unwrap_or_default();
        self.rejected.push(format!("{}{problem}", r.location()));
    }
}

impl SolverArgs {
    /// Reads every solver trajectory, sorted by (file, id); a rejected record or an
    /// unreadable file is an error, since an unread trajectory cannot be cleared.
    pub fn read(&self) -> Result<Vec<Trajectory>> {
        let read = ReadArgs {
            paths: self.solvers.clone(),
            options: ReadOptions {
                format: self.format.clone(),
                mapping: None,
                threads: None,
                outcomes: None,
                max_record_mib: trajkit_ops::DEFAULT_MAX_RECORD_MIB,
            },
        };
        let mut sink = Collect::default();
        let outcome = super::read_with(&read, false, true, &mut sink)?;
        let errors: Vec<String> = outcome
            .missing
            .iter()
            .cloned()
            .chain(outcome.reports.iter().filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.path))))
            .chain(sink.rejected)
            .collect();
        if !errors.is_empty() {
            bail!("solver trajectories not read, so not cleared: {}", errors.join("; "));
        }
        let mut ts = sink.trajectories;
        ts.sort_by(|a, b| (&a.provenance.path, &a.id).cmp(&(&b.provenance.path, &b.id)));
        Ok(ts)
    }
}

#[derive(Args)]
pub struct IsolationArgs {
    /// The task description (task.json, with `expect` and optionally `witness`).
    pub task: PathBuf,
    #[command(flatten)]
    pub solvers: SolverArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(args: &IsolationArgs) -> Result<u8> {
    if args.solvers.solvers.is_empty() {
        bail!("no solver trajectories: give --solvers PATH");
    }
    let report = isolation(&args.task, &args.solvers.read()?)?;
    args.report.deliver(&report, render_human)?;
    Ok(u8::from(!report.isolated))
}
