//! The export driver: stream the library's records in order, keep the admitted ones,
//! turn each into rows of the chosen view in parallel (rayon, per batch), and write them in
//! library order to one file or to shards, then the dataset card.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value;
use trajkit_library::{Library, Row};
use trajkit_model::Trajectory;

use crate::card::{self, CardEntry, SourceEntry};
use crate::error::ExportError;
use crate::rows::{rows_of, ExportRow, View};
use crate::select::{Filter, Skip, SkipCounts};
use crate::shard::{Plan, Sink, Unit};
use crate::template::ChatTemplate;
use crate::{atif, openai, sharegpt};

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    OpenAi,
    ShareGpt,
    Parquet,
    Atif,
}

impl std::str::FromStr for Format {
    type Err = ExportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(Format::OpenAi),
            "sharegpt" => Ok(Format::ShareGpt),
            "parquet" => Ok(Format::Parquet),
            "atif" => Ok(Format::Atif),
            _ => Err(ExportError::Usage(format!("--format {s:?}: expected openai, sharegpt, parquet or atif"))),
        }
    }
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::ShareGpt => "sharegpt",
            Format::Parquet => "parquet",
            Format::Atif => "atif",
        }
    }
}

/// The integration point for `--redact`: the redaction engine (trajkit-verify) implements
/// this; the export applies it to every record before any view is taken. No implementation
/// lives in this crate.
pub trait Redactor: Send + Sync {
    /// Rewrites the record in place; returns how many values were replaced.
    fn redact(&self, record: &mut Trajectory) -> Result<u64, String>;
    /// A one-line description for the dataset card (rule set and version).
    fn describe(&self) -> String;
}

/// Everything `trajkit export` decides.
pub struct ExportOptions {
    pub view: View,
    /// `None`: inferred from the output name.
    pub format: Option<Format>,
    pub filter: Filter,
    pub output: PathBuf,
    pub shard_size: Option<u64>,
    /// The library argument as given (recorded in the card).
    pub library_label: String,
    pub chat_template: Option<Arc<ChatTemplate>>,
    pub redactor: Option<Arc<dyn Redactor>>,
}

/// What an export wrote.
#[derive(Debug)]
pub struct ExportSummary {
    pub entry: CardEntry,
    pub card: PathBuf,
    pub files: Vec<PathBuf>,
}

/// What one record turned into.
struct Produced {
    source: String,
    license: Option<String>,
    family: Option<String>,
    rows: u64,
    units: Vec<Unit>,
}

/// Records per parallel batch: the assistant-turn view repeats each prefix, so its batches are small.
fn batch_size(view: View) -> usize {
    match view {
        View::Full => 256,
        View::AssistantTurn => 4 * rayon::current_num_threads().max(1),
    }
}

/// Runs an export.
pub fn export(lib: &Library, opts: &ExportOptions) -> Result<ExportSummary, ExportError> {
    export_cancellable(lib, opts, &AtomicBool::new(false))
}

/// Runs an export that stops between batches once `cancel` is set (Ctrl-C in Python):
/// `ExportError::Cancelled`, the temporary output removed and the card untouched.
pub fn export_cancellable(
    lib: &Library,
    opts: &ExportOptions,
    cancel: &AtomicBool,
) -> Result<ExportSummary, ExportError> {
    opts.filter.validate()?;
    let plan = Plan::new(opts)?;
    let mut sink = Sink::open(&plan, opts.view, opts.chat_template.is_some())?;
    let mut skipped = SkipCounts::default();
    let mut sources: BTreeMap<String, SourceEntry> = BTreeMap::new();
    let (mut rows, mut trajectories, mut without) = (0u64, 0u64, 0u64);
    // Rows the filter refuses are counted by reason and their records never parsed.
    let mut seen = std::collections::HashSet::new();
    let mut records = lib.records_where(|row| {
        let admitted = opts.filter.admit(row).and_then(|()| match opts.filter.dedup.group(row) {
            Some(g) if !seen.insert(g.to_string()) => Err(Skip::Duplicate),
            _ => Ok(()),
        });
        match admitted {
            Ok(()) => true,
            Err(skip) => {
                skipped.add(skip);
                false
            }
        }
    })?;
    let size = batch_size(opts.view);
    loop {
        let mut batch: Vec<(Row, Trajectory)> = Vec::with_capacity(size);
        while batch.len() < size {
            match records.next() {
                None => break,
                Some(Err(e)) => return Err(e.into()),
                Some(Ok((row, mut t))) => {
                    // Redaction runs here, in library order, so placeholders are numbered
                    // the same way at every run whatever the thread count.
                    if let Some(r) = &opts.redactor {
                        r.redact(&mut t).map_err(|message| ExportError::Record { id: row.id.clone(), message })?;
                    }
                    batch.push((row, t));
                }
            }
        }
        if batch.is_empty() {
            break;
        }
        if cancel.load(Ordering::Relaxed) {
            return Err(ExportError::Cancelled);
        }
        let produced: Vec<Produced> =
            batch.into_par_iter().map(|(row, t)| produce(row, t, opts, &plan)).collect::<Result<_, _>>()?;
        for p in produced {
            if p.rows == 0 {
                without += 1;
                continue;
            }
            rows += p.rows;
            trajectories += 1;
            let e = sources.entry(p.source.clone()).or_insert_with(|| SourceEntry {
                name: p.source.clone(),
                license: p.license.clone(),
                family: p.family.clone(),
                trajectories: 0,
                rows: 0,
            });
            e.trajectories += 1;
            e.rows += p.rows;
            sink.write(p.units)?;
        }
    }
    let entry = CardEntry {
        output: plan.output_name(),
        files: Vec::new(),
        format: plan.format.as_str().into(),
        view: opts.view.as_str().into(),
        selection: opts.filter.selection.to_string(),
        split: opts.filter.split.as_str().into(),
        purpose: serde_json::to_value(opts.filter.purpose)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        source_filter: opts.filter.sources.clone(),
        trajkit_version: env!("CARGO_PKG_VERSION").into(),
        library: opts.library_label.clone(),
        rows,
        trajectories,
        sources: sources.into_values().collect(),
        skipped: skipped.0.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        without_decision: without,
        redaction: opts.redactor.as_ref().map(|r| r.describe()).unwrap_or_else(|| "not applied".into()),
        chat_template: opts.chat_template.as_ref().map(|t| t.label.clone()),
    };
    let (files, entry) = sink.finish(entry)?;
    let card = card::card_path(&plan.card_anchor(), plan.is_folder());
    card::update(&card, entry.clone())?;
    Ok(ExportSummary { entry, card, files })
}

/// Takes the view and encodes the rows of one (already redacted) record.
fn produce(row: Row, t: Trajectory, opts: &ExportOptions, plan: &Plan) -> Result<Produced, ExportError> {
    let rows = rows_of(&row, &t, opts.view, opts.filter.purpose);
    let n = rows.len() as u64;
    let units = if n == 0 { Vec::new() } else { encode(&row, &t, rows, opts, plan)? };
    Ok(Produced { source: row.source, license: row.license, family: row.family, rows: n, units })
}

fn encode(
    row: &Row,
    t: &Trajectory,
    rows: Vec<ExportRow>,
    opts: &ExportOptions,
    plan: &Plan,
) -> Result<Vec<Unit>, ExportError> {
    if plan.format == Format::Atif {
        let mut doc = atif::document(t);
        if let Some(extra) = doc.get_mut("extra").and_then(|e| e.get_mut("trajkit")).and_then(Value::as_object_mut) {
            if let Some(first) = rows.first() {
                extra.insert("export".into(), serde_json::to_value(&first.meta).unwrap_or(Value::Null));
            }
        }
        return Ok(vec![plan.atif_unit(&row.id, &doc)]);
    }
    let mut units = Vec::with_capacity(rows.len());
    for r in &rows {
        let mut v = match plan.format {
            Format::ShareGpt => sharegpt::row_json(r),
            _ => openai::row_json(r),
        };
        if let Some(tpl) = &opts.chat_template {
            let text = tpl.render_row(r).map_err(|message| ExportError::Record { id: r.id.clone(), message })?;
            if let Some(o) = v.as_object_mut() {
                o.insert("text".into(), Value::String(text));
            }
        }
        units.push(match plan.format {
            Format::Parquet => Unit::Value(v),
            _ => Unit::Line(line(&v)),
        });
    }
    Ok(units)
}

/// One JSON Lines line.
pub fn line(v: &Value) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(1024);
    if trajkit_model::compact::to_writer(&mut bytes, v).is_err() {
        bytes.clear();
    }
    bytes.push(b'\n');
    bytes
}

/// The library directory a command was given, opened.
pub fn open_library(path: &Path) -> Result<Library, ExportError> {
    Ok(Library::open(path)?)
}
