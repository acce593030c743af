//! `trajkit redact`: canonical records with secrets replaced by consistent placeholders
//! (docs/redaction.md). Reads any supported source format, and canonical records
//! (`trajkit convert` output) as they are; `--preserve-format` rewrites raw JSON files in
//! their own format instead.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use trajkit_formats::{discover, FileReport, InputFile, Options, Rejection, Sink};
use trajkit_model::Trajectory;
use trajkit_verify::redact::{RedactionReport, Redactor, Rules};

use super::init_threads;
use crate::ReadArgs;
use trajkit_ops::output::AtomicOutput;

/// `trajkit redact ...`
#[derive(Args)]
pub struct RedactArgs {
    #[command(flatten)]
    read: ReadArgs,
    /// Output: canonical JSON Lines (.gz/.zst by extension, `-` for standard output); atomic.
    /// With `--preserve-format`, the directory the rewritten files go to.
    #[arg(short, long)]
    output: PathBuf,
    /// Literal secrets to replace, one per line (at least 4 characters each).
    #[arg(long, value_name = "FILE")]
    secrets: Option<PathBuf>,
    /// Rules: built-in detectors to disable, extra secret keys and detectors (TOML).
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Also write the report (kind, file, record, field, count; never a secret) as JSON.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Rewrite each input file in its own format and compression under the directory `-o`,
    /// replacing only the secrets inside JSON string values (every other byte kept).
    #[arg(long)]
    preserve_format: bool,
}

/// Where redacted records go, and what happened on the way.
struct Redacting<'a> {
    redactor: &'a mut Redactor,
    report: &'a mut RedactionReport,
    out: &'a mut AtomicOutput,
    buf: Vec<u8>,
    error: Option<anyhow::Error>,
    rejected: u64,
}

impl Redacting<'_> {
    fn record(&mut self, mut t: Trajectory) {
        if self.error.is_some() {
            return;
        }
        // Never write a non-finite number (serde_json would write null): docs/numbers.md.
        if let Err(e) = trajkit_verify::finite::check_trajectory(&t) {
            self.rejected += 1;
            eprintln!("{}: {}: {e}", t.provenance.path, t.id);
            return;
        }
        let result = self
            .redactor
            .redact_trajectory(&mut t, self.report)
            .map_err(anyhow::Error::from)
            .and_then(|_| self.write(&t));
        if let Err(e) = result {
            self.error = Some(e);
        }
    }

    fn write(&mut self, t: &Trajectory) -> Result<()> {
        self.buf.clear();
        trajkit_model::canonical::write_canonical(t, &mut self.buf)?;
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)?;
        Ok(())
    }
}

impl Sink for Redacting<'_> {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        if let Some(t) = t {
            self.record(t.clone());
        }
    }

    fn rejection(&mut self, r: &Rejection) {
        self.rejected += 1;
        if let Some(p) = r.problems.first() {
            eprintln!("{}: {}: {}: {}", r.location(), p.json_path, p.reason.as_str(), p.message);
        }
    }

    fn file_done(&mut self, report: &FileReport) {
        if let Some(e) = &report.error {
            eprintln!("trajkit: {e}");
        }
    }

    fn should_stop(&self) -> bool {
        self.error.is_some()
    }
}

pub fn run(args: &RedactArgs) -> Result<u8> {
    let mut rules = Rules::builtin();
    if let Some(p) = &args.rules {
        rules.load_toml(p)?;
    }
    if let Some(p) = &args.secrets {
        rules.load_secrets(p)?;
    }
    init_threads(&args.read.options)?;
    if args.preserve_format {
        return run_preserving(args, rules);
    }
    let (files, missing) = discover(&args.read.paths);
    for m in &missing {
        eprintln!("trajkit: error: {m}");
    }
    if files.is_empty() {
        bail!("no input files found");
    }
    let (canonical, sources): (Vec<InputFile>, Vec<InputFile>) = files.into_iter().partition(is_canonical);
    let mut redactor = Redactor::new(rules);
    let mut report = RedactionReport::default();
    let mut out = AtomicOutput::create(&args.output)?;
    let mut sink = Redacting {
        redactor: &mut redactor,
        report: &mut report,
        out: &mut out,
        buf: Vec::new(),
        error: None,
        rejected: 0,
    };
    let mut read_any = false;
    let mut file_errors = missing.len();
    if !sources.is_empty() {
        let outcomes = match &args.read.options.outcomes {
            Some(p) => Some(std::sync::Arc::new(trajkit_formats::outcomes::OutcomeTable::load(p)?)),
            None => None,
        };
        let opts = Options {
            format: args.read.options.forced_format(),
            canonical: false,
            records: true,
            outcomes,
            analyze: None,
            max_record_bytes: Some(args.read.options.max_record_bytes()),
        };
        let reports = trajkit_formats::read_inputs(sources, &opts, &mut sink)?;
        read_any |= reports.iter().any(|r| r.error.is_none() || r.records > 0);
        file_errors += reports.iter().filter(|r| r.error.is_some()).count();
    }
    for file in &canonical {
        match read_canonical(file, &mut sink) {
            Ok(()) => read_any = true,
            Err(e) => {
                eprintln!("trajkit: {e:#}");
                file_errors += 1;
            }
        }
    }
    let (rejected, error) = (sink.rejected, sink.error.take());
    if let Some(e) = error {
        return Err(e).with_context(|| format!("writing {}", args.output.display()));
    }
    if !read_any {
        eprintln!("trajkit: nothing could be read; {} not written", args.output.display());
        return Ok(2);
    }
    out.finish()?;
    if let Some(p) = &args.report {
        write_report(&report, p)?;
    }
    summarize(&report, &args.output, rejected);
    Ok(u8::from(rejected > 0 || file_errors > 0))
}

/// True when the file starts like a canonical record: keys are sorted, so the first line
/// begins `{"agent":{...},"content_digest":"<64 hex>"`, which no source format writes. Only
/// the first 64 KiB are read (standard input is always a source: it cannot be read twice).
fn is_canonical(file: &InputFile) -> bool {
    if file.is_stdin() {
        return false;
    }
    let Ok(reader) = trajkit_formats::input::open(file) else { return false };
    let mut head = Vec::with_capacity(1 << 16);
    if reader.take(1 << 16).read_to_end(&mut head).is_err() || !head.starts_with(b"{\"agent\":{") {
        return false;
    }
    let key = b"\"content_digest\":\"";
    let Some(at) = head.windows(key.len()).position(|w| w == key) else { return false };
    let digest = &head[at + key.len()..];
    digest.len() > 64 && digest[..64].iter().all(|b| b.is_ascii_hexdigit()) && digest[64] == b'"'
}

/// Redacts every line of a canonical JSON Lines file; a line that is not a record is
/// reported with its line number and counted as rejected.
fn read_canonical(file: &InputFile, sink: &mut Redacting) -> Result<()> {
    let reader = trajkit_formats::input::open(file)?;
    for (i, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}", file.display, i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Trajectory>(&line) {
            Ok(t) if t.schema_version.starts_with("trajkit.trajectory/") => sink.record(t),
            Ok(t) => {
                sink.rejected += 1;
                eprintln!("{}:{}: schema_version {:?} is not a trajkit record", file.display, i + 1, t.schema_version);
            }
            Err(e) => {
                sink.rejected += 1;
                eprintln!("{}:{}: not a canonical record: {e}", file.display, i + 1);
            }
        }
        if sink.error.is_some() {
            break;
        }
    }
    Ok(())
}

/// `--preserve-format`: each input file rewritten under the output directory at its path
/// below its argument (a file argument: its name), in its own compression, with only the
/// secrets inside JSON strings replaced. Parquet and `.eval` (zip) files cannot be rewritten
/// byte for byte and are refused by name.
fn run_preserving(args: &RedactArgs, rules: Rules) -> Result<u8> {
    if args.read.paths.iter().any(|p| p.as_os_str() == "-") || args.output.as_os_str() == "-" {
        bail!("--preserve-format reads and writes files: standard input and output are not supported");
    }
    let mut redactor = Redactor::new(rules);
    let mut report = RedactionReport::default();
    let (mut written, mut failed) = (0u64, 0u64);
    for arg in &args.read.paths {
        let (files, missing) = discover(std::slice::from_ref(arg));
        for m in &missing {
            eprintln!("trajkit: error: {m}");
            failed += 1;
        }
        for file in &files {
            let target = args.output.join(preserved_path(arg, &file.fs_path));
            match redact_preserving(file, &target, &mut redactor, &mut report) {
                Ok(()) => written += 1,
                Err(e) => {
                    eprintln!("trajkit: {}: {e:#}", file.display);
                    failed += 1;
                }
            }
        }
    }
    if written == 0 {
        eprintln!("trajkit: nothing could be read; nothing written");
        return Ok(2);
    }
    if let Some(p) = &args.report {
        write_report(&report, p)?;
    }
    for (kind, t) in &report.kinds {
        eprintln!("{kind}: {} replaced ({} distinct)", t.replacements, t.distinct);
    }
    eprintln!(
        "wrote {written} files to {} ({} redacted, {} replacements, {failed} files not written)",
        args.output.display(),
        report.records_redacted,
        report.replacements
    );
    Ok(u8::from(failed > 0))
}

/// Where a file found under `arg` goes below the output directory: its path below the
/// argument, or its name when the argument is the file (never a path from inside the data).
fn preserved_path(arg: &Path, file: &Path) -> PathBuf {
    match file.strip_prefix(arg) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => file.file_name().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("input")),
    }
}

/// Rewrites one file to `target` (atomically, compressed like the input).
fn redact_preserving(
    file: &InputFile,
    target: &Path,
    redactor: &mut Redactor,
    report: &mut RedactionReport,
) -> Result<()> {
    let name = trajkit_formats::input::logical_name(&file.fs_path);
    if name.ends_with(".parquet") || name.ends_with(".eval") {
        bail!("Parquet and .eval (zip) files cannot be rewritten in place; redact them to canonical records instead");
    }
    if let (Ok(a), Ok(b)) = (file.fs_path.canonicalize(), target.canonicalize()) {
        if a == b {
            bail!("the output {} is the input itself", target.display());
        }
    }
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let input = trajkit_formats::input::open(file)?;
    let mut out = AtomicOutput::create(target)?;
    redactor.redact_json_text(&file.display, input, &mut out, report)?;
    Ok(out.finish()?)
}

fn write_report(report: &RedactionReport, path: &Path) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(report)?;
    bytes.push(b'\n');
    trajkit_verify::manifest::write_atomic(path, &bytes)?;
    Ok(())
}

/// One line per kind, then the totals (standard error: standard output may carry the records).
fn summarize(report: &RedactionReport, output: &Path, rejected: u64) {
    for (kind, t) in &report.kinds {
        eprintln!("{kind}: {} replaced ({} distinct)", t.replacements, t.distinct);
    }
    eprintln!(
        "wrote {} records to {} ({} redacted, {} replacements, {rejected} records rejected)",
        report.records,
        output.display(),
        report.records_redacted,
        report.replacements
    );
}
