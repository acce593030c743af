//! `trajkit admit`: the four admission questions answered from recorded evidence
//! (docs/admission.md), and solver isolation with `--solvers`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trajkit_verify::admission::{admit_with_solvers, render_human};

use super::isolation::SolverArgs;
use super::replay::ReportArgs;

#[derive(Args)]
pub struct AdmitArgs {
    /// The task description (task.json).
    pub task: PathBuf,
    /// Directory of recorded evidence (replays/, counterfactuals/, review.json, attempts.jsonl).
    #[arg(long, value_name = "DIR")]
    pub evidence: PathBuf,
    /// Also check solver isolation over these solver trajectories: a leak refuses admission.
    #[command(flatten)]
    pub solvers: SolverArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(args: &AdmitArgs) -> Result<u8> {
    let solvers = if args.solvers.solvers.is_empty() { None } else { Some(args.solvers.read()?) };
    let record = admit_with_solvers(&args.task, &args.evidence, solvers.as_deref())?;
    args.report.deliver(&record, render_human)?;
    Ok(u8::from(!record.admitted))
}
