//! Reading named paths: discovery, the outcomes join and the read driver in one call,
//! shared by the CLI's reading commands and the Python package.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::FormatError;
use crate::input::discover;
use crate::outcomes::OutcomeTable;
use crate::pipeline::{read_inputs, Analyzer, Options, Sink};
use crate::report::FileReport;

/// What to read and how: the `ReadArgs` of every reading command.
#[derive(Debug, Clone, Default)]
pub struct ReadRequest {
    /// Files or directories (recursive); `-` is standard input.
    pub paths: Vec<PathBuf>,
    /// Force this format for every file instead of detecting.
    pub format: Option<String>,
    /// A SWE-bench style report whose outcomes are joined by task id.
    pub outcomes: Option<PathBuf>,
    /// The record size limit (`Options::max_record_bytes`; `None`: the default).
    pub max_record_bytes: Option<usize>,
}

/// What a read got: per-file reports, and the named paths that do not exist.
#[derive(Debug, Clone, Default)]
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

    /// Records rejected over all files.
    pub fn rejected(&self) -> u64 {
        self.reports.iter().map(|r| r.rejected).sum()
    }
}

/// Discovers `req.paths` and reads them through `sink`; `on_start` hears the missing
/// paths and the number of files found before reading starts (the CLI prints and sizes
/// its progress bar). Fails only when there is nothing to read at all.
pub fn read_paths(
    req: &ReadRequest,
    canonical: bool,
    records: bool,
    on_start: &mut dyn FnMut(&[String], usize),
    sink: &mut dyn Sink,
) -> Result<ReadOutcome, FormatError> {
    read_paths_analyzed(req, canonical, records, None, on_start, sink)
}

/// `read_paths` with `analyze` run on each accepted record on the worker threads
/// (`Options::analyze`): the sink gets its result through `Sink::analyzed`, so the
/// ordered thread only files what the workers computed (Python's `read_arrow` rows).
pub fn read_paths_analyzed(
    req: &ReadRequest,
    canonical: bool,
    records: bool,
    analyze: Option<Analyzer>,
    on_start: &mut dyn FnMut(&[String], usize),
    sink: &mut dyn Sink,
) -> Result<ReadOutcome, FormatError> {
    let (files, errors) = discover(&req.paths);
    let missing: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    on_start(&missing, files.len());
    if files.is_empty() && missing.is_empty() {
        return Err(FormatError::NoInput);
    }
    let outcomes = match &req.outcomes {
        Some(path) => Some(Arc::new(OutcomeTable::load(path)?)),
        None => None,
    };
    let opts = Options {
        format: req.format.clone(),
        canonical,
        records,
        outcomes,
        analyze,
        max_record_bytes: req.max_record_bytes,
    };
    let reports = read_inputs(files, &opts, sink)?;
    Ok(ReadOutcome { reports, missing })
}
