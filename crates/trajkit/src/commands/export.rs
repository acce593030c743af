//! `trajkit export`: a library's rows as training or evaluation data, with a dataset card.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use trajkit_export::template::ChatTemplate;
use trajkit_export::{ExportError, ExportOptions, Filter, Format, Purpose, Selection, Split, View};

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
    /// Output file (or shard folder); compression by extension (.gz, .zst).
    #[arg(short, long)]
    pub output: PathBuf,
}

fn options(a: &ExportArgs, redactor: Option<Arc<dyn trajkit_export::Redactor>>) -> Result<ExportOptions, ExportError> {
    let filter = Filter {
        selection: a.selection.parse::<Selection>()?,
        split: a.split.parse::<Split>()?,
        sources: a.sources.clone(),
        purpose: if a.evaluation { Purpose::Evaluation } else { Purpose::Training },
    };
    let chat_template = match &a.chat_template {
        Some(p) => Some(Arc::new(ChatTemplate::load(p)?)),
        None => None,
    };
    Ok(ExportOptions {
        view: a.view.parse::<View>()?,
        format: a.format.as_deref().map(str::parse::<Format>).transpose()?,
        filter,
        output: a.output.clone(),
        shard_size: a.shard_size,
        library_label: a.library.display().to_string(),
        chat_template,
        redactor,
    })
}

/// 0 rows written; 1 no row matched (an empty file and its card are written); 2 error.
pub fn run(a: &ExportArgs) -> Result<u8> {
    let engine = a.redaction.engine()?;
    let redactor = engine.clone().map(|e| e as Arc<dyn trajkit_export::Redactor>);
    let opts = match options(a, redactor) {
        Ok(o) => o,
        Err(e) => return usage(e),
    };
    if let Some(n) = a.threads.filter(|n| *n > 0) {
        rayon::ThreadPoolBuilder::new().num_threads(n).build_global()?;
    }
    let lib = trajkit_library::Library::open(&a.library)?;
    let summary = match trajkit_export::export(&lib, &opts) {
        Ok(s) => s,
        Err(e @ ExportError::Usage(_)) => return usage(e),
        Err(e) => return Err(e.into()),
    };
    let e = &summary.entry;
    let kind = if e.purpose == "evaluation" { "EVALUATION export (not for training)" } else { "training export" };
    let skipped: Vec<String> = e.skipped.iter().map(|(k, v)| format!("{k} {v}")).collect();
    eprintln!(
        "wrote {} rows from {} trajectories ({kind}, {} view, {}) to {}; card {}",
        e.rows,
        e.trajectories,
        e.view,
        e.format,
        opts.output.display(),
        summary.card.display()
    );
    eprintln!(
        "left out: {}; {} selected trajectories without a decision",
        if skipped.is_empty() { "none".into() } else { skipped.join(", ") },
        e.without_decision
    );
    if let Some(engine) = &engine {
        eprintln!("redacted: {} secrets replaced by placeholders", engine.replaced());
    }
    Ok(u8::from(e.rows == 0))
}

fn usage(e: ExportError) -> Result<u8> {
    eprintln!("trajkit: error: {e}");
    Ok(2)
}
