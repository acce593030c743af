//! `trajkit ledger validate|render`: the attempt ledger (docs/ledger.md).

use crate::pipe::{out, outln};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, Subcommand};
use trajkit_verify::ledger::{self, Finding, Ledger};

/// `trajkit ledger ...`
#[derive(Args)]
pub struct LedgerArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Check the ledger: fields, classification, and that public locations exist and are in the manifest.
    Validate {
        /// The ledger (JSON Lines, one attempt per line).
        ledger: PathBuf,
        /// The publication tree public locations are relative to (default: the ledger's directory).
        #[arg(long)]
        root: Option<PathBuf>,
        /// The manifest covering the tree (default ROOT/manifest.json).
        #[arg(long)]
        manifest: Option<PathBuf>,
        /// One JSON object per finding.
        #[arg(long)]
        json: bool,
    },
    /// Print the markdown table a README shows (refuses a ledger with structural problems).
    Render {
        /// The ledger.
        ledger: PathBuf,
        /// Write the table here (atomically) instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

pub fn run(args: &LedgerArgs) -> Result<u8> {
    match &args.action {
        Action::Validate { ledger, root, manifest, json } => {
            validate(ledger, root.as_deref(), manifest.as_deref(), *json)
        }
        Action::Render { ledger, output } => render(ledger, output.as_deref()),
    }
}

fn validate(path: &Path, root: Option<&Path>, manifest: Option<&Path>, json: bool) -> Result<u8> {
    let l = ledger::read(path)?;
    let root = root.map(Path::to_path_buf).unwrap_or_else(|| parent(path));
    if !root.is_dir() {
        anyhow::bail!("{}: not a directory", root.display());
    }
    let manifest = manifest.map(Path::to_path_buf).unwrap_or_else(|| root.join(trajkit_verify::manifest::DEFAULT_NAME));
    let mut findings = l.findings.clone();
    findings.extend(ledger::check_locations(&l, &root, &manifest)?);
    findings.sort_by_key(|f| f.line);
    for f in &findings {
        if json {
            outln!("{}", serde_json::to_string(f)?);
        } else {
            outln!("{}", line(path, f));
        }
    }
    eprintln!("{}, {} findings", summary(&l), findings.len());
    Ok(u8::from(!findings.is_empty()))
}

fn render(path: &Path, output: Option<&Path>) -> Result<u8> {
    let l = ledger::read(path)?;
    if !l.findings.is_empty() {
        for f in &l.findings {
            eprintln!("{}", line(path, f));
        }
        eprintln!("{} findings; fix them first (trajkit ledger validate)", l.findings.len());
        return Ok(1);
    }
    let table = ledger::render(&l);
    match output {
        Some(p) => {
            trajkit_verify::manifest::write_atomic(p, table.as_bytes())?;
            eprintln!("wrote {}: {}", p.display(), summary(&l));
        }
        None => out!("{table}"),
    }
    Ok(0)
}

/// `ledger.jsonl:3: $.classification: invalid_classification: message` (no line for the whole).
fn line(path: &Path, f: &Finding) -> String {
    let at = if f.line > 0 { format!("{}:{}", path.display(), f.line) } else { path.display().to_string() };
    format!("{at}: {}: {}: {}", f.field, f.code, f.message)
}

fn summary(l: &Ledger) -> String {
    let counts: Vec<String> = l.counts().iter().map(|(c, n)| format!("{n} {c}")).collect();
    format!("{} attempts ({})", l.attempts.len(), counts.join(", "))
}

fn parent(path: &Path) -> PathBuf {
    path.parent().filter(|p| !p.as_os_str().is_empty()).map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}
