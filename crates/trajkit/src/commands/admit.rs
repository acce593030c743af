//! `trajkit admit`: the four admission questions answered from recorded evidence
//! (docs/admission.md), and solver isolation with `--solvers`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trajkit_verify::admission::{admit_with_solvers, render_human};

use super::isolation::SolverArgs;
use super::replay::deliver;

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
    /// Print the admission record as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write the admission record to this file (atomically).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: &AdmitArgs) -> Result<u8> {
    let solvers = if args.solvers.solvers.is_empty() { None } else { Some(args.solvers.read()?) };
    let record = admit_with_solvers(&args.task, &args.evidence, solvers.as_deref())?;
    deliver(args.output.as_deref(), args.json, &record, render_human)?;
    Ok(u8::from(!record.admitted))
}
