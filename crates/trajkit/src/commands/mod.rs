//! One module per subcommand.

pub mod admit;
pub mod build;
pub mod convert;
pub mod counterfactual;
pub mod diagnose;
pub mod evaluate_actions;
pub mod export;
pub mod gallery;
pub mod gate;
pub mod inspect;
pub mod ledger;
pub mod manifest;
pub mod query;
pub mod redact;
pub mod redaction;
pub mod replay;
pub mod schedule;
pub mod schema;
pub mod state;
pub mod stats;
pub mod validate;
pub mod view;

use anyhow::{bail, Result};
use trajkit_formats::{discover, FileReport, InputFile, Options, Sink};

use crate::ReadArgs;

/// Configures the thread pool once per process.
pub fn init_threads(read: &ReadArgs) -> Result<usize> {
    let n = read.threads.unwrap_or(0);
    let mut builder = rayon::ThreadPoolBuilder::new();
    if n > 0 {
        builder = builder.num_threads(n);
    }
    builder.build_global()?;
    Ok(rayon::current_num_threads())
}

/// What a reading command got: per-file reports and input errors (missing paths).
pub struct ReadOutcome {
    pub reports: Vec<FileReport>,
    pub missing: Vec<String>,
}

impl ReadOutcome {
    /// 0 all accepted; 1 something rejected or unreadable but something was read; 2 nothing read.
    pub fn exit_code(&self) -> u8 {
        let read_any = self.reports.iter().any(|r| r.error.is_none() || r.records > 0);
        if !read_any {
            return 2;
        }
        let trouble = !self.missing.is_empty() || self.reports.iter().any(|r| r.rejected > 0 || r.error.is_some());
        u8::from(trouble)
    }
}

/// Discovers inputs and reads them through `sink`, showing progress.
pub fn read(read: &ReadArgs, canonical: bool, sink: &mut dyn Sink) -> Result<ReadOutcome> {
    read_with(read, canonical, false, sink)
}

/// `read`, also handing each accepted record to the sink when `records` is set.
pub fn read_with(read: &ReadArgs, canonical: bool, records: bool, sink: &mut dyn Sink) -> Result<ReadOutcome> {
    let (files, errors) = discover(&read.paths);
    let missing: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    for m in &missing {
        eprintln!("trajkit: error: {m}");
    }
    if files.is_empty() && missing.is_empty() {
        bail!("no input files found (looked for .json, .jsonl, .traj, optionally .gz/.zst)");
    }
    let bar = crate::progress::files(files.len());
    let mut with_bar = ProgressSink { inner: sink, bar: &bar };
    let outcomes = match &read.outcomes {
        Some(path) => Some(std::sync::Arc::new(trajkit_formats::outcomes::OutcomeTable::load(path)?)),
        None => None,
    };
    let max_record_bytes = Some(crate::record_bytes(read.max_record_mib));
    let opts = Options { format: read.format.clone(), canonical, records, outcomes, analyze: None, max_record_bytes };
    let reports = trajkit_formats::read_inputs(files, &opts, &mut with_bar)?;
    bar.finish_and_clear();
    Ok(ReadOutcome { reports, missing })
}

struct ProgressSink<'a> {
    inner: &'a mut dyn Sink,
    bar: &'a indicatif::ProgressBar,
}

impl Sink for ProgressSink<'_> {
    fn trajectory(&mut self, file: &InputFile, t: Option<&trajkit_model::Trajectory>, canonical: Option<&[u8]>) {
        self.inner.trajectory(file, t, canonical)
    }
    fn rejection(&mut self, r: &trajkit_formats::Rejection) {
        self.inner.rejection(r)
    }
    fn file_done(&mut self, report: &FileReport) {
        self.bar.inc(1);
        self.bar.set_message(report.path.clone());
        self.inner.file_done(report)
    }
    fn should_stop(&self) -> bool {
        self.inner.should_stop()
    }
}
