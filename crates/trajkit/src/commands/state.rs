//! `trajkit state capture | diff | check`: environment state of SQLite databases
//! (docs/state.md).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use trajkit_verify::state::check::{check, Expectation};
use trajkit_verify::state::diff::{diff, HumanDiff, JsonDiff};
use trajkit_verify::state::{capture, IgnoreSpec, Side, Store};

#[derive(Subcommand)]
pub enum StateCommand {
    /// Capture databases read-only into a snapshot (normalized, digested; stored with -o).
    Capture {
        /// SQLite database files (named by file name in the snapshot).
        #[arg(required = true)]
        databases: Vec<PathBuf>,
        /// Store directory for the table captures and the snapshot (content-addressed).
        #[arg(short, long, value_name = "STORE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        ignore: IgnoreArgs,
        /// Print the snapshot manifest and figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rows inserted, deleted and updated (by primary key) and schema changes from A to B;
    /// exit 0 same, 1 different.
    Diff {
        /// A database file, or a snapshot digest (or unique prefix) in --store.
        a: String,
        /// A database file, or a snapshot digest (or unique prefix) in --store.
        b: String,
        #[command(flatten)]
        source: SourceArgs,
        /// One JSON object per change (then per table), one per line.
        #[arg(long)]
        json: bool,
    },
    /// Check the change from START to END against an expectation; exit 0 pass, 1 violation.
    Check {
        /// Expected effects and allowed collateral (TOML).
        #[arg(long, value_name = "FILE")]
        expect: PathBuf,
        /// A database file, or a snapshot digest in --store.
        start: String,
        /// A database file, or a snapshot digest in --store.
        end: String,
        #[command(flatten)]
        source: SourceArgs,
        /// The check report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Volatile tables and columns.
#[derive(Args, Clone, Default)]
pub struct IgnoreArgs {
    /// Leave out a volatile table (`TABLE`) or column (`TABLE.COLUMN`); repeatable.
    #[arg(long, value_name = "TABLE[.COLUMN]")]
    pub ignore: Vec<String>,
}

impl IgnoreArgs {
    pub fn spec(&self) -> IgnoreSpec {
        IgnoreSpec::new(self.ignore.iter().cloned())
    }
}

#[derive(Args, Clone)]
pub struct SourceArgs {
    /// Store that holds snapshots named by digest.
    #[arg(long, value_name = "STORE")]
    store: Option<PathBuf>,
    #[command(flatten)]
    ignore: IgnoreArgs,
}

pub fn run(cmd: &StateCommand) -> Result<u8> {
    match cmd {
        StateCommand::Capture { databases, output, ignore, json } => {
            run_capture(databases, output.as_deref(), ignore, *json)
        }
        StateCommand::Diff { a, b, source, json } => run_diff(a, b, source, *json),
        StateCommand::Check { expect, start, end, source, json } => run_check(expect, start, end, source, *json),
    }
}

fn run_capture(databases: &[PathBuf], output: Option<&Path>, ignore: &IgnoreArgs, json: bool) -> Result<u8> {
    let store = output.map(Store::create).transpose()?;
    let cap = capture(databases, &ignore.spec(), store.as_ref())?;
    let s = cap.stats;
    let mut out = std::io::stdout().lock();
    if json {
        let v = json!({"digest": cap.digest, "snapshot": cap.snapshot, "stats": {
            "databases": s.databases, "tables": s.tables, "rows": s.rows, "bytes": s.bytes,
            "new_objects": s.new_objects, "new_snapshot": s.new_snapshot}});
        writeln!(out, "{v}")?;
        return Ok(0);
    }
    writeln!(out, "state {}", cap.digest)?;
    for db in &cap.snapshot.databases {
        let rows: u64 = db.tables.iter().map(|t| t.rows).sum();
        writeln!(
            out,
            "{}: {} tables, {rows} rows, {} other schema objects",
            db.name,
            db.tables.len(),
            db.schema.len()
        )?;
        let width = db.tables.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in &db.tables {
            writeln!(out, "  {:width$}  {:>10} rows  {}", t.name, t.rows, &t.digest[..16])?;
        }
        if !db.ignored_tables.is_empty() {
            writeln!(out, "  ignored tables: {}", db.ignored_tables.join(", "))?;
        }
    }
    if !cap.snapshot.ignore.is_empty() {
        writeln!(out, "ignored: {}", cap.snapshot.ignore.join(", "))?;
    }
    if let Some(store) = &store {
        if s.new_objects == 0 && !s.new_snapshot {
            writeln!(
                out,
                "{}: nothing new (every table capture and the snapshot were already stored)",
                store.root().display()
            )?;
        } else {
            let snap = if s.new_snapshot { "new snapshot" } else { "snapshot already stored" };
            writeln!(out, "{}: {} new table captures of {}, {snap}", store.root().display(), s.new_objects, s.tables)?;
        }
    }
    Ok(0)
}

/// A database path when the file exists, else a snapshot digest in the store.
pub fn side(arg: &str, source: &SourceArgs) -> Result<Side> {
    let path = Path::new(arg);
    if path.is_file() {
        return Ok(Side::live(&[path.to_path_buf()], &source.ignore.spec())?);
    }
    let Some(store) = &source.store else {
        bail!("{arg}: no such database file (give --store STORE to name a snapshot by digest)");
    };
    Ok(Side::stored(&Store::open(store)?, arg)?)
}

fn run_diff(a: &str, b: &str, source: &SourceArgs, json: bool) -> Result<u8> {
    let (sa, sb) = (side(a, source)?, side(b, source)?);
    let show_db = sa.database_names().len() > 1 || sb.database_names().len() > 1;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let summary = if json {
        let mut sink = JsonDiff { out: &mut out };
        let summary = diff(&sa, &sb, &mut sink)?;
        writeln!(out, "{}", summary.to_json())?;
        summary
    } else {
        let mut sink = HumanDiff { out: &mut out, show_db };
        let summary = diff(&sa, &sb, &mut sink)?;
        if summary.is_empty() {
            writeln!(out, "no differences")?;
        } else {
            writeln!(
                out,
                "{} tables changed: {} inserted, {} deleted, {} updated, {} schema changes",
                summary.tables.len(),
                summary.inserted,
                summary.deleted,
                summary.updated,
                summary.schema_changes
            )?;
        }
        summary
    };
    out.flush()?;
    Ok(u8::from(!summary.is_empty()))
}

fn run_check(expect: &Path, start: &str, end: &str, source: &SourceArgs, json: bool) -> Result<u8> {
    let exp = Expectation::load(expect)?;
    let report = check(&exp, &side(start, source)?, &side(end, source)?)?;
    let mut out = std::io::stdout().lock();
    if json {
        let mut v = report.to_json();
        v["failures"] = json!(report.failures());
        writeln!(out, "{v}")?;
    } else {
        for (i, e) in report.effects.iter().enumerate() {
            let status = if e.met() { "ok" } else { "MISSING" };
            writeln!(out, "expect #{} {}: {status} ({} matching)", i + 1, e.description, e.matched)?;
        }
        for f in report.failures() {
            writeln!(out, "{f}")?;
        }
        let verdict = if report.passed() { "pass" } else { "FAIL" };
        writeln!(out, "{verdict}: {} changes checked, {} violations", report.changes, report.violation_count)?;
    }
    Ok(u8::from(!report.passed()))
}
