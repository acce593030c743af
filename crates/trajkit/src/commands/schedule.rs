//! `trajkit schedule`: a deterministic paired schedule (docs/schedule.md).

use crate::pipe::outln;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trajkit_verify::schedule;

/// `trajkit schedule ...`
#[derive(Args)]
pub struct ScheduleArgs {
    /// Root seed: 64 hex digits (32 bytes).
    #[arg(long, value_name = "HEX")]
    seed: String,
    /// An app (environment) to spread over the blocks; repeatable, order matters.
    #[arg(long = "app", value_name = "NAME", required = true)]
    apps: Vec<String>,
    /// Arm names, in order; repeatable (default A, B, C).
    #[arg(long = "arm-name", value_name = "NAME")]
    arms: Vec<String>,
    /// Number of blocks.
    #[arg(long, default_value_t = schedule::DEFAULT_BLOCKS as u64)]
    blocks: u64,
    /// Print the block and candidate counts instead of the schedule.
    #[arg(long)]
    summary: bool,
    /// Write the schedule here (atomically) instead of standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn run(args: &ScheduleArgs) -> Result<u8> {
    let arms: Vec<String> = if args.arms.is_empty() {
        schedule::DEFAULT_ARMS.iter().map(|a| a.to_string()).collect()
    } else {
        args.arms.clone()
    };
    let s = schedule::build(&args.seed, &args.apps, &arms, args.blocks)?;
    if args.summary {
        outln!("{} {}", s.blocks.len(), s.candidates.len());
        return Ok(0);
    }
    let bytes = schedule::to_json(&s);
    match &args.output {
        Some(p) => trajkit_verify::manifest::write_atomic(p, &bytes)?,
        None => std::io::stdout().lock().write_all(&bytes)?,
    }
    Ok(0)
}
