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
pub mod isolation;
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

use anyhow::Result;
use trajkit_formats::{FileReport, InputFile, Sink};

use crate::ReadArgs;

/// Configures the thread pool once per process.
pub fn init_threads(read: &crate::ReadOptions) -> Result<usize> {
    let n = read.threads.unwrap_or(0);
    let mut builder = rayon::ThreadPoolBuilder::new();
    if n > 0 {
        builder = builder.num_threads(n);
    }
    builder.build_global()?;
    Ok(rayon::current_num_threads())
}

pub use trajkit_formats::ReadOutcome;

/// Discovers inputs and reads them through `sink`, showing progress.
pub fn read(read: &ReadArgs, canonical: bool, sink: &mut dyn Sink) -> Result<ReadOutcome> {
    read_with(read, canonical, false, sink)
}

/// `read`, also handing each accepted record to the sink when `records` is set.
pub fn read_with(read: &ReadArgs, canonical: bool, records: bool, sink: &mut dyn Sink) -> Result<ReadOutcome> {
    let req = read.request();
    watched(sink, |start, sink| Ok(trajkit_formats::read_paths(&req, canonical, records, start, sink)?))
}

/// Runs a read `f` with the CLI's watchers: missing paths printed, a file progress bar
/// moved by the sink it is given (`sink` wrapped).
pub fn watched<R>(
    sink: &mut dyn Sink,
    f: impl FnOnce(&mut dyn FnMut(&[String], usize), &mut dyn Sink) -> Result<R>,
) -> Result<R> {
    let bar = crate::progress::files(0);
    let mut start = |missing: &[String], files: usize| {
        for m in missing {
            eprintln!("trajkit: error: {m}");
        }
        bar.set_length(files as u64);
    };
    let mut with_bar = ProgressSink { inner: sink, bar: &bar };
    let result = f(&mut start, &mut with_bar)?;
    bar.finish_and_clear();
    Ok(result)
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
    fn planned(&mut self, done: usize, total: usize) {
        // Planning reads small documents whole for commands that keep nothing per record.
        self.bar.set_message(if done < total { format!("detecting {done}/{total}") } else { String::new() });
        self.inner.planned(done, total)
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
