//! `trajkit evaluate-actions`: next-action scores of predictions against a held-out export.

use crate::pipe::{out, outln};
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

/// Flags of `trajkit evaluate-actions`.
#[derive(Args)]
pub struct EvaluateArgs {
    /// The held-out assistant-turn export (OpenAI JSONL, .gz/.zst allowed).
    pub heldout: PathBuf,
    /// Predictions: JSON Lines of `{"id": ROW_ID, "message": {assistant message}}`.
    pub predictions: PathBuf,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// 0 every row predicted exactly once; 1 rows without a prediction or unknown/duplicate ids; 2 error.
pub fn run(a: &EvaluateArgs) -> Result<u8> {
    let report = trajkit_export::evaluate::evaluate(&a.heldout, &a.predictions)?;
    if a.json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        out!("{}", trajkit_export::evaluate::table(&report));
    }
    Ok(report.exit_code())
}
