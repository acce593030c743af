//! `trajkit counterfactual`: deletion counterfactuals, predecessor claims and alternate
//! routes against a live environment.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trajkit_verify::counterfactual::{counterfactual, render_human, Claims};
use trajkit_verify::replay::select;
use trajkit_verify::state::check::Expectation;

use super::replay::{load, EnvArgs};

#[derive(Args)]
pub struct CounterfactualArgs {
    /// Canonical trajectory record(s): JSON or JSON Lines, plain, .gz or .zst.
    pub trajectory: PathBuf,
    #[command(flatten)]
    pub env: EnvArgs,
    /// The state check (reset -> final) that claims and alternate routes are judged by.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Claim that action N (1-based) is a predecessor of the outcome: omitting it must make
    /// the state check fail. Repeatable.
    #[arg(long = "claim", value_name = "N")]
    pub claims: Vec<usize>,
    /// Another trajectory (every record in the file) whose final state must pass the same check.
    #[arg(long = "alternate", value_name = "TRAJ")]
    pub alternates: Vec<PathBuf>,
}

pub fn run(args: &CounterfactualArgs) -> Result<u8> {
    let display = args.trajectory.display().to_string();
    let t = select(load(&args.trajectory)?, args.env.id.as_deref(), &display)?;
    let expect = args.expect.as_deref().map(Expectation::load).transpose()?;
    let mut alternates = Vec::new();
    for path in &args.alternates {
        alternates.extend(load(path)?);
    }
    let claims =
        Claims { expect: expect.as_ref(), predecessors: args.claims.clone(), alternates: alternates.iter().collect() };
    let prepared = args.env.prepare()?;
    let report = counterfactual(&t, &prepared.options, &claims)?;
    args.env.report.deliver(&report, render_human)?;
    Ok(u8::from(report.verdict != "pass"))
}
