//! `trajkit admit`: the four admission questions answered from recorded evidence
//! (docs/admission.md), and solver isolation with `--solvers`.

use crate::pipe::{out, outln};
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trajkit_verify::admission::{admit_with_solvers, render_human};

use super::isolation::SolverArgs;
use super::replay::write_report;

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
    if let Some(path) = &args.output {
        write_report(path, &record)?;
    }
    if args.json {
        outln!("{}", serde_json::to_string(&record)?);
    } else {
        out!("{}", render_human(&record));
    }
    Ok(u8::from(!record.admitted))
}
