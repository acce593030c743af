//! `trajkit build`: the library (canonical shards, index, evaluation rows, summary,
//! coverage, manifest), with progress bars on a terminal.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use trajkit_formats::FileReport;
use trajkit_library::{BuildOptions, BuildSummary, Progress, SplitConfig};

/// Options of `trajkit build`.
#[derive(clap::Args)]
pub struct BuildArgs {
    /// Files or directories; optional with --registry (then the registry's paths are read).
    pub paths: Vec<PathBuf>,
    /// The library directory to write (replaced atomically; must be a library or absent).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Source registry (sources.toml): names, licenses, roles, success rules.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// Force a format for every file (a registry source's own format wins).
    #[arg(long)]
    pub format: Option<String>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Join outcomes from a SWE-bench style report by task id (never overrides a record's own).
    #[arg(long, value_name = "FILE")]
    pub outcomes: Option<PathBuf>,
    /// Largest record read, in MiB (line, document or archive member, decompressed); a
    /// larger one is rejected as record_too_large and the rest of its file is read.
    #[arg(long, value_name = "MIB", default_value_t = 128)]
    pub max_record_mib: u64,
    /// Fail (and keep the previous library) at the first rejected record.
    #[arg(long)]
    pub strict: bool,
    /// Exit 1 when any record was rejected or any file unreadable (the library is still built).
    #[arg(long)]
    pub fail_on_rejections: bool,
    /// Wait for another build of the same output to finish instead of refusing.
    #[arg(long)]
    pub wait: bool,
    /// No progress bars or warnings on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Fraction of tasks in the train split.
    #[arg(long, default_value_t = 0.8)]
    pub train: f64,
    /// Fraction of tasks in the validation split.
    #[arg(long, default_value_t = 0.1)]
    pub validation: f64,
    /// Fraction of tasks in the test split.
    #[arg(long, default_value_t = 0.1)]
    pub test: f64,
    /// Salt of the task-key hash that assigns splits.
    #[arg(long, default_value = "trajkit-split-v1")]
    pub split_salt: String,
    /// Uncompressed MiB of canonical JSON per shard.
    #[arg(long, default_value_t = 256)]
    pub shard_mib: u64,
    /// Redaction of the gallery (the library itself keeps the data as read).
    #[command(flatten)]
    pub redaction: super::redaction::RedactArgs,
}

/// Bars on stderr: bytes of input read, files, trajectories; then the later stages.
struct Bars<'a> {
    bar: ProgressBar,
    quiet: bool,
    /// `TRAJKIT_TIMING=1`: print the elapsed time at each stage (for benchmarks).
    timing: Option<std::time::Instant>,
    /// Set by the caller to abandon the build (Ctrl-C in Python).
    cancel: &'a AtomicBool,
}

impl Progress for Bars<'_> {
    fn start(&self, files: u64, bytes: u64) {
        self.bar.set_length(bytes);
        self.bar.set_message(format!("0/{files} files"));
    }
    fn file_done(&self, report: &FileReport, bytes: u64, trajectories: u64) {
        self.bar.inc(bytes);
        self.bar.set_message(format!("{trajectories} trajectories  {}", report.path));
    }
    fn stage(&self, name: &str) {
        self.bar.set_message(name.to_string());
        if let Some(t) = self.timing {
            self.bar.suspend(|| eprintln!("trajkit: [{:.2}s] {name}", t.elapsed().as_secs_f64()));
        }
    }
    fn warn(&self, message: &str) {
        if !self.quiet {
            self.bar.suspend(|| eprintln!("trajkit: warning: {message}"));
        }
    }
    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

fn bar(quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec}  {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

pub fn run(args: &BuildArgs) -> Result<u8> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = args.threads.filter(|n| *n > 0) {
        pool = pool.num_threads(n);
    }
    pool.build_global()?;
    let summary = build(args, &AtomicBool::new(false))?;
    if let Some(failure) = &summary.strict_failure {
        eprintln!("trajkit: --strict: {failure}");
        eprintln!("trajkit: no library written; {} is unchanged", args.output.display());
        return Ok(1);
    }
    if !args.quiet {
        eprintln!(
            "built {}: {} files ({} unreadable), {} records, {} trajectories, {} rejected, {} shard(s)",
            args.output.display(),
            summary.files,
            summary.unreadable,
            summary.records,
            summary.trajectories,
            summary.rejected,
            summary.shards
        );
        if summary.rejected > 0 || summary.unreadable > 0 {
            eprintln!("rejections by reason and file: {}", args.output.join("coverage.json").display());
        }
    }
    Ok(exit_code(&summary, args.fail_on_rejections))
}

/// 2 nothing could be read; otherwise 0 (the library is built), or 1 with
/// `--fail-on-rejections` when a record was rejected or a file unreadable.
fn exit_code(summary: &trajkit_library::BuildSummary, fail_on_rejections: bool) -> u8 {
    if summary.trajectories == 0 && summary.records == 0 {
        return 2;
    }
    u8::from(fail_on_rejections && (summary.rejected > 0 || summary.unreadable > 0))
}

/// Builds the library `args` describe, its gallery included (redacted as asked), on the
/// current rayon pool; `cancel` abandons it (the old library stays).
pub fn build(args: &BuildArgs, cancel: &AtomicBool) -> Result<BuildSummary> {
    if args.paths.is_empty() && args.registry.is_none() {
        anyhow::bail!("give input paths, or a --registry whose sources name them");
    }
    let opts = BuildOptions {
        inputs: args.paths.clone(),
        registry: args.registry.clone(),
        output: args.output.clone(),
        split: SplitConfig {
            train: args.train,
            validation: args.validation,
            test: args.test,
            salt: args.split_salt.clone(),
        },
        format: args.format.clone(),
        outcomes: args.outcomes.clone(),
        strict: args.strict,
        shard_bytes: args.shard_mib.max(1) << 20,
        threads: rayon::current_num_threads(),
        wait: args.wait,
        max_record_bytes: Some(crate::record_bytes(args.max_record_mib)),
    };
    let timing = std::env::var_os("TRAJKIT_TIMING").map(|_| std::time::Instant::now());
    let bars = Bars { bar: bar(args.quiet), quiet: args.quiet, timing, cancel };
    // The gallery is part of the library: written into it before its manifest.
    let title = args.output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "library".into());
    let engine = args.redaction.engine()?;
    let redact_fn = engine.clone().map(|e| {
        move |t: &mut trajkit_model::Trajectory| {
            // A record that cannot be redacted is not shown as it is: its steps are dropped.
            if e.apply(t).is_err() {
                t.steps.clear();
            }
        }
    });
    let gallery = |lib: &trajkit_library::Library| -> Result<(), String> {
        bars.stage("gallery");
        let out = lib.root().join("examples.html");
        let opts = trajkit_export::gallery::GalleryOptions {
            title: Some(&title),
            redact: redact_fn.as_ref().map(|f| f as &dyn Fn(&mut trajkit_model::Trajectory)),
            ..Default::default()
        };
        trajkit_export::gallery::write_gallery(lib, &out, &opts)
            .map(|_| ())
            .map_err(|e| format!("writing the gallery: {e}"))
    };
    let summary = trajkit_library::build_with(&opts, &bars, Some(&gallery))?;
    bars.bar.finish_and_clear();
    Ok(summary)
}
