//! The command line: parse flags, call the crates, print, and return an exit status
//! scripts can trust (per command in the README's table; 2 is always a usage error or
//! nothing read). A closed stdout ends any command quietly with 0. The binary and the
//! Python package's `trajkit` command both call [`run`].

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::commands;

/// Toolkit for AI-agent trajectory data.
#[derive(Parser)]
#[command(name = "trajkit", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The inputs of the reading commands (inspect, validate, convert, redact).
#[derive(Args, Clone)]
pub struct ReadArgs {
    /// Files or directories (recursive); `-` reads standard input.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub options: ReadOptions,
}

/// How every command that reads (build included) reads: one set of flags.
#[derive(Args, Clone)]
pub struct ReadOptions {
    /// Force a format instead of detecting it per file.
    #[arg(long)]
    pub format: Option<String>,
    /// Read every file through a mapping file (docs/formats/mapping.md): an in-house JSON
    /// shape without code. Same as `--format mapping:FILE`.
    #[arg(long, value_name = "FILE", conflicts_with = "format")]
    pub mapping: Option<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Join outcomes from a SWE-bench style report by task id (never overrides a record's own).
    #[arg(long, value_name = "FILE")]
    pub outcomes: Option<PathBuf>,
    /// Largest record read, in MiB (line, document or archive member, decompressed); a
    /// larger one is rejected as record_too_large and the rest of its file is read.
    #[arg(long, value_name = "MIB", default_value_t = trajkit_ops::DEFAULT_MAX_RECORD_MIB)]
    pub max_record_mib: u64,
}

impl ReadOptions {
    /// The forced format: `--format`, or `--mapping` as `mapping:ABSOLUTE_PATH` (absolute,
    /// so that worker processes in other directories find the same file).
    pub fn forced_format(&self) -> Option<String> {
        match &self.mapping {
            Some(path) => {
                let abs = std::path::absolute(path).unwrap_or_else(|_| path.clone());
                Some(format!("{}{}", trajkit_formats::mapping::FORMAT_PREFIX, abs.display()))
            }
            None => self.format.clone(),
        }
    }

    /// The record size limit in bytes.
    pub fn max_record_bytes(&self) -> usize {
        trajkit_ops::record_bytes(self.max_record_mib)
    }
}

impl ReadArgs {
    /// The read driver's request for these arguments.
    pub fn request(&self) -> trajkit_formats::ReadRequest {
        trajkit_formats::ReadRequest {
            paths: self.paths.clone(),
            format: self.options.forced_format(),
            outcomes: self.options.outcomes.clone(),
            max_record_bytes: Some(self.options.max_record_bytes()),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Show what is in each file: format, records, trajectories, steps, tool calls, rejections.
    Inspect {
        #[command(flatten)]
        read: ReadArgs,
        /// One JSON object per input file per line.
        #[arg(long)]
        json: bool,
    },
    /// Report every problem with file:line and field; exit 1 if any record is rejected.
    Validate {
        #[command(flatten)]
        read: ReadArgs,
        /// Stop at the first rejected record.
        #[arg(long)]
        strict: bool,
        /// One JSON object per problem per line.
        #[arg(long)]
        json: bool,
        /// Also require what a published trajectory must preserve; name what each record lacks.
        #[arg(long)]
        complete: bool,
    },
    /// Write one canonical record per trajectory as JSON Lines (.gz/.zst by extension).
    Convert {
        #[command(flatten)]
        read: ReadArgs,
        /// Output file (`-` for standard output); written atomically.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Print the JSON Schema of the canonical record.
    Schema,
    /// Build a library: validate, score, deduplicate, split, index, evaluate, report coverage.
    Build(commands::build::BuildArgs),
    /// Recorded-agent performance of a library (recomputed from its index).
    Stats {
        /// The library directory.
        library: PathBuf,
        /// One table grouped by this key.
        #[arg(long, value_parser = ["source", "model", "scaffold", "family", "tier", "split", "format"])]
        by: Option<String>,
        /// JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Count each exact (or near-) duplicate group once: its first trajectory.
        #[arg(long, value_parser = ["exact", "near"])]
        dedup: Option<String>,
    },
    /// Run read-only SQL on a library's index.
    Query {
        /// The library directory.
        library: PathBuf,
        /// One SQL statement (the index is opened read-only).
        sql: String,
        /// One JSON object per row per line.
        #[arg(long)]
        json: bool,
    },
    /// Publication manifests: every file with size and SHA-256 (create), checked by verify.
    Manifest(commands::manifest::ManifestArgs),
    /// Write a self-contained HTML page showing a library: summary, charts, example conversations.
    Gallery {
        /// Library directory (written by `trajkit build`).
        library: PathBuf,
        /// Output HTML file; written atomically.
        #[arg(short, long)]
        output: PathBuf,
        /// Example trajectories per source (half successes, half failures when there are).
        #[arg(long, default_value_t = 4)]
        examples_per_source: usize,
        #[command(flatten)]
        redaction: commands::redaction::RedactArgs,
    },
    /// Browse, search and compare a library in the browser (a local, read-only web app).
    View(commands::view::ViewArgs),
    /// Export a library as training or evaluation data (OpenAI/TRL JSONL, ShareGPT, Parquet, ATIF).
    Export(commands::export::ExportArgs),
    /// Score next-action predictions against a held-out assistant-turn export or canonical records.
    EvaluateActions(commands::evaluate_actions::EvaluateArgs),
    /// Environment state of SQLite databases: capture, diff, check.
    State {
        #[command(subcommand)]
        command: commands::state::StateCommand,
    },
    /// Replay a trajectory's actions in fresh environment processes and compare states.
    Replay(commands::replay::ReplayArgs),
    /// Replay without each action in turn: effects, strong edges, predecessor claims, alternate routes.
    Counterfactual(commands::counterfactual::CounterfactualArgs),
    /// Answer the four admission questions of a task from recorded evidence.
    Admit(commands::admit::AdmitArgs),
    /// Solver isolation: did solvers see the witness route's material or the check's expected values?
    Isolation(commands::isolation::IsolationArgs),
    /// Replace secrets by consistent placeholders; writes canonical records and a report.
    Redact(commands::redact::RedactArgs),
    /// The attempt ledger: validate it against the tree and manifest, or render its table.
    Ledger(commands::ledger::LedgerArgs),
    /// A deterministic paired schedule: blocks of one candidate per arm sharing seed and app.
    Schedule(commands::schedule::ScheduleArgs),
    /// The experiment gate: a schedule's maximum liability against its caps, bounded requests.
    Gate(commands::gate::GateArgs),
    /// Check numeric arrays (.npy, .npz, JSON) for NaN/Inf, locate the first, summarize each.
    Diagnose(commands::diagnose::DiagnoseArgs),
}

/// Runs one command line (`args[0]` is the program name) and returns its exit status.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match cli.command {
        Command::Inspect { read, json } => commands::inspect::run(&read, json),
        Command::Validate { read, strict, json, complete } => commands::validate::run(&read, strict, json, complete),
        Command::Convert { read, output } => commands::convert::run(&read, &output),
        Command::Schema => commands::schema::run(),
        Command::Build(args) => commands::build::run(&args),
        Command::Stats { library, by, json, dedup } => {
            commands::stats::run(&library, by.as_deref(), json, dedup.as_deref())
        }
        Command::Query { library, sql, json } => commands::query::run(&library, &sql, json),
        Command::Manifest(args) => commands::manifest::run(&args),
        Command::Gallery { library, output, examples_per_source, redaction } => {
            commands::gallery::run(&library, &output, examples_per_source, &redaction)
        }
        Command::View(args) => commands::view::run(&args),
        Command::Export(args) => commands::export::run(&args),
        Command::EvaluateActions(args) => commands::evaluate_actions::run(&args),
        Command::State { command } => commands::state::run(&command),
        Command::Replay(args) => commands::replay::run(&args),
        Command::Counterfactual(args) => commands::counterfactual::run(&args),
        Command::Admit(args) => commands::admit::run(&args),
        Command::Isolation(args) => commands::isolation::run(&args),
        Command::Redact(args) => commands::redact::run(&args),
        Command::Ledger(args) => commands::ledger::run(&args),
        Command::Schedule(args) => commands::schedule::run(&args),
        Command::Gate(args) => commands::gate::run(&args),
        Command::Diagnose(args) => commands::diagnose::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) if crate::pipe::is_closed_pipe(&e) => 0,
        Err(e) => {
            eprintln!("trajkit: error: {}", report(&e));
            2
        }
    }
}

/// The error and its causes joined by `: `, as `{:#}` joins them, but a cause is left out
/// where the text before it already ends with it: the typed errors put their I/O cause in
/// their own message (`out.jsonl.zst: No space left on device`), which `{:#}` printed twice.
fn report(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod report_tests {
    /// Synthetic (the chain no fixture can make fail): a cause the message already names is
    /// printed once, a context and a cause it does not name are both kept.
    #[test]
    fn a_cause_the_message_names_is_printed_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::StorageFull, "No space left on device");
        let typed = trajkit_ops::OpsError::write("/dev/full")(io());
        assert_eq!(super::report(&anyhow::Error::new(typed)), "/dev/full: No space left on device");
        let context = anyhow::Error::new(io()).context("writing the gallery");
        assert_eq!(super::report(&context), "writing the gallery: No space left on device");
    }
}
