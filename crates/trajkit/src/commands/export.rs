//! `trajkit export`: a library's rows as training or evaluation data, with a dataset card
//! (`trajkit_ops::export`).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use clap::Args;
use trajkit_ops::ExportRequest;

/// Flags of `trajkit export`.
#[derive(Args)]
pub struct ExportArgs {
    /// The library directory (`trajkit build` output).
    pub library: PathBuf,
    /// `full` (one row per trajectory, per-message weights) or `assistant-turn` (one row per decision).
    #[arg(long)]
    pub view: String,
    /// `all`, `success`, `failure` or `tier>=T`.
    #[arg(long, default_value = "all")]
    pub selection: String,
    /// `train`, `validation`, `test` or `protected_evaluation`.
    #[arg(long)]
    pub split: String,
    /// Keep only these registry sources (repeatable).
    #[arg(long = "source", value_name = "NAME")]
    pub sources: Vec<String>,
    /// `openai`, `sharegpt`, `parquet` or `atif` (default: from the output name).
    #[arg(long)]
    pub format: Option<String>,
    /// Write a folder of shards of N rows each, named for Hugging Face `datasets`.
    #[arg(long, value_name = "N")]
    pub shard_size: Option<u64>,
    /// An evaluation export: rows need not be training-eligible, and the protected split is allowed; output and card say so.
    #[arg(long)]
    pub evaluation: bool,
    /// Render each row with this chat template (`tokenizer_config.json`) into a `text` column.
    #[arg(long, value_name = "FILE")]
    pub chat_template: Option<PathBuf>,
    #[command(flatten)]
    pub redaction: super::redaction::RedactArgs,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Export each exact (or near-) duplicate group once: its first admitted trajectory.
    #[arg(long, value_parser = ["exact", "near"])]
    pub dedup: Option<String>,
    /// Output file (or shard folder); compression by extension (.gz, .zst).
    #[arg(short, long)]
    pub output: PathBuf,
}

impl ExportArgs {
    /// The export these flags ask for.
    pub fn request(&self) -> ExportRequest {
        ExportRequest {
            library: self.library.clone(),
            view: self.view.clone(),
            selection: self.selection.clone(),
            split: self.split.clone(),
            sources: self.sources.clone(),
            format: self.format.clone(),
            shard_size: self.shard_size,
            evaluation: self.evaluation,
            chat_template: self.chat_template.clone(),
            redaction: self.redaction.options(),
            output: self.output.clone(),
            dedup: self.dedup.clone(),
        }
    }
}

/// 0 rows written; 1 no row matched (an empty file and its card are written); 2 error.
pub fn run(a: &ExportArgs) -> Result<u8> {
    if let Some(n) = a.threads.filter(|n| *n > 0) {
        rayon::ThreadPoolBuilder::new().num_threads(n).build_global()?;
    }
    let exported = trajkit_ops::export(&a.request(), &AtomicBool::new(false))?;
    let (summary, e) = (&exported.summary, &exported.summary.entry);
    let kind = if e.purpose == "evaluation" { "EVALUATION export (not for training)" } else { "training export" };
    let skipped: Vec<String> = e.skipped.iter().map(|(k, v)| format!("{k} {v}")).collect();
    eprintln!(
        "wrote {} rows from {} trajectories ({kind}, {} view, {}) to {}; card {}",
        e.rows,
        e.trajectories,
        e.view,
        e.format,
        a.output.display(),
        summary.card.display()
    );
    eprintln!(
        "left out: {}; {} selected trajectories without a decision",
        if skipped.is_empty() { "none".into() } else { skipped.join(", ") },
        e.without_decision
    );
    if let Some(n) = exported.redacted {
        eprintln!("redacted: {n} secrets replaced by placeholders");
    }
    Ok(u8::from(e.rows == 0))
}
