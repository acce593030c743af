//! `export`: a library's rows as training or evaluation data, from the options as the
//! user spelled them (view, selection, split and format names), redacted as asked.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use trajkit_export::template::ChatTemplate;
use trajkit_export::{ExportError, ExportOptions, ExportSummary, Filter, Format, Purpose, Selection, Split, View};
use trajkit_library::Library;

use crate::{OpsError, RedactionOptions};

/// What `trajkit export` decides (its flags, before parsing).
#[derive(Clone, Debug, Default)]
pub struct ExportRequest {
    /// The library directory (`trajkit build` output).
    pub library: PathBuf,
    /// `full` or `assistant-turn`.
    pub view: String,
    /// `all`, `success`, `failure` or `tier>=T`.
    pub selection: String,
    /// `train`, `validation`, `test` or `protected_evaluation`.
    pub split: String,
    /// Keep only these registry sources (none: all).
    pub sources: Vec<String>,
    /// `openai`, `sharegpt`, `parquet` or `atif` (`None`: from the output name).
    pub format: Option<String>,
    /// A folder of shards of this many rows.
    pub shard_size: Option<u64>,
    /// An evaluation export (rows need not be training-eligible; the protected split is allowed).
    pub evaluation: bool,
    /// A chat template (`tokenizer_config.json`) rendered into a `text` column.
    pub chat_template: Option<PathBuf>,
    pub redaction: RedactionOptions,
    /// `exact` or `near`: each duplicate group's first admitted row only (`None`: every row).
    pub dedup: Option<String>,
    /// Output file (or shard folder); compression by extension.
    pub output: PathBuf,
}

/// What an export wrote, and how many secrets redaction replaced (when it ran).
#[derive(Debug)]
pub struct Exported {
    pub summary: ExportSummary,
    pub redacted: Option<u64>,
}

/// Runs the export `req` describes on the current rayon pool; `cancel` abandons it
/// (nothing is written). Bad names are `OpsError::Usage`.
pub fn export(req: &ExportRequest, cancel: &AtomicBool) -> Result<Exported, OpsError> {
    let engine = req.redaction.engine()?;
    let redactor = engine.clone().map(|e| e as Arc<dyn trajkit_export::Redactor>);
    let opts = options(req, redactor).map_err(usage)?;
    let lib = Library::open(&req.library)?;
    let summary = trajkit_export::export::export_cancellable(&lib, &opts, cancel).map_err(usage)?;
    Ok(Exported { summary, redacted: engine.map(|e| e.replaced()) })
}

/// The export crate's usage errors as `OpsError::Usage`, the rest as they are.
fn usage(e: ExportError) -> OpsError {
    match e {
        ExportError::Usage(m) => OpsError::Usage(m),
        ExportError::Cancelled => OpsError::Cancelled,
        e => OpsError::Export(e),
    }
}

fn options(
    a: &ExportRequest,
    redactor: Option<Arc<dyn trajkit_export::Redactor>>,
) -> Result<ExportOptions, ExportError> {
    let filter = Filter {
        selection: a.selection.parse::<Selection>()?,
        split: a.split.parse::<Split>()?,
        sources: a.sources.clone(),
        purpose: if a.evaluation { Purpose::Evaluation } else { Purpose::Training },
        dedup: a.dedup.as_deref().unwrap_or("none").parse().map_err(ExportError::Usage)?,
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
