//! `trajkit build`: the library (canonical shards, index, evaluation rows, summary,
//! coverage, gallery, manifest; `trajkit_ops::build`), with progress bars on a terminal.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use trajkit_formats::FileReport;
use trajkit_library::{BuildOptions, ClusterOptions, ContaminationOptions, Progress, SplitConfig};
use trajkit_ops::BuildRequest;

/// Options of `trajkit build`.
#[derive(clap::Args)]
#[command(mut_arg("format", |a| a.help("Force a format for every file (a registry source's own format wins)")))]
pub struct BuildArgs {
    /// Files or directories; optional with --registry (then the registry's paths are read).
    pub paths: Vec<PathBuf>,
    /// The library directory to write (replaced atomically; must be a library or absent).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Source registry (sources.toml): names, licenses, roles, success rules.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    #[command(flatten)]
    pub read: crate::ReadOptions,
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
    /// Task clustering by content (docs/quality.md#task-clusters).
    #[command(flatten)]
    pub clusters: ClusterArgs,
    /// The contamination report (docs/quality.md#contamination-report).
    #[command(flatten)]
    pub contamination: ContaminationArgs,
}

/// The contamination options of `trajkit build` (`trajkit_library::ContaminationOptions`).
#[derive(clap::Args)]
pub struct ContaminationArgs {
    /// Fail (exit 1, nothing written, the previous library kept) when a training-eligible
    /// trajectory shares 13-word n-grams with a protected task.
    #[arg(long)]
    pub fail_on_contamination: bool,
    /// An n-gram in more than this many training interactions or protected tasks is common
    /// phrasing and ignored.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub contamination_max_documents: u64,
    /// Least shared n-grams for a content overlap.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub contamination_min_ngrams: u64,
}

impl ContaminationArgs {
    /// The library's options.
    pub fn options(&self) -> ContaminationOptions {
        ContaminationOptions {
            max_documents: self.contamination_max_documents,
            min_ngrams: self.contamination_min_ngrams,
            fail: self.fail_on_contamination,
        }
    }
}

/// The task-cluster options of `trajkit build` (`trajkit_library::ClusterOptions`).
#[derive(clap::Args)]
pub struct ClusterArgs {
    /// Least exact Jaccard similarity of two instructions' word-shingle sets (boilerplate
    /// removed) for them to be one task.
    #[arg(long, default_value_t = 0.7, value_name = "S")]
    pub instruction_similarity: f64,
    /// A shingle in at least this fraction of the distinct instructions (and in at least
    /// --boilerplate-min-instructions of them) is boilerplate and ignored.
    #[arg(long, default_value_t = 0.01, value_name = "F")]
    pub boilerplate_fraction: f64,
    /// See --boilerplate-fraction.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub boilerplate_min_instructions: u64,
    /// An instruction shared by this many distinct task keys is a generic prompt and links nothing.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub generic_instruction_keys: u64,
    /// Least estimated content similarity of two trajectories of one task cluster for them to
    /// be one near-duplicate group.
    #[arg(long, default_value_t = 0.8, value_name = "S")]
    pub trajectory_similarity: f64,
}

impl ClusterArgs {
    /// The library's options.
    pub fn options(&self) -> ClusterOptions {
        ClusterOptions {
            instruction_similarity: self.instruction_similarity,
            boilerplate_fraction: self.boilerplate_fraction,
            boilerplate_min_instructions: self.boilerplate_min_instructions,
            generic_instruction_keys: self.generic_instruction_keys,
            trajectory_similarity: self.trajectory_similarity,
        }
    }
}

/// Bars on stderr: bytes of input read, files, trajectories; then the later stages.
struct Bars {
    bar: ProgressBar,
    quiet: bool,
    /// `TRAJKIT_TIMING=1`: print the elapsed time at each stage (for benchmarks).
    timing: Option<std::time::Instant>,
}

impl Progress for Bars {
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
    fn reading_done(&self) {
        crate::alloc::release_freed_memory();
    }
    fn warn(&self, message: &str) {
        if !self.quiet {
            self.bar.suspend(|| eprintln!("trajkit: warning: {message}"));
        }
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
    if let Some(n) = args.read.threads.filter(|n| *n > 0) {
        pool = pool.num_threads(n);
    }
    pool.build_global()?;
    let timing = std::env::var_os("TRAJKIT_TIMING").map(|_| std::time::Instant::now());
    let bars = Bars { bar: bar(args.quiet), quiet: args.quiet, timing };
    let summary = trajkit_ops::build(&args.request(), &bars)?;
    bars.bar.finish_and_clear();
    if let Some(failure) = &summary.strict_failure {
        eprintln!("trajkit: --strict: {failure}");
        eprintln!("trajkit: no library written; {} is unchanged", args.output.display());
        return Ok(1);
    }
    if let Some(failure) = &summary.contamination_failure {
        eprintln!("trajkit: --fail-on-contamination: {failure}");
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

impl BuildArgs {
    /// The build these flags ask for.
    pub fn request(&self) -> BuildRequest {
        BuildRequest {
            library: BuildOptions {
                inputs: self.paths.clone(),
                registry: self.registry.clone(),
                output: self.output.clone(),
                split: SplitConfig {
                    train: self.train,
                    validation: self.validation,
                    test: self.test,
                    salt: self.split_salt.clone(),
                },
                format: self.read.forced_format(),
                outcomes: self.read.outcomes.clone(),
                strict: self.strict,
                shard_bytes: self.shard_mib.max(1) << 20,
                threads: 0,
                wait: self.wait,
                max_record_bytes: Some(self.read.max_record_bytes()),
                clusters: self.clusters.options(),
                contamination: self.contamination.options(),
            },
            redaction: self.redaction.options(),
        }
    }
}
