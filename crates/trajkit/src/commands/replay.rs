//! `trajkit replay`: fresh-process replays of a trajectory's actions against a live
//! environment (docs/environment-protocol.md).

use crate::pipe::{out, outln};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use trajkit_formats::input::{open, InputFile};
use trajkit_model::Trajectory;
use trajkit_verify::env::EnvSpec;
use trajkit_verify::replay::{read_trajectories, render_human, replay, select, ReplayOptions};
use trajkit_verify::state::check::Expectation;
use trajkit_verify::state::Store;

use super::state::IgnoreArgs;
use trajkit_ops::output::AtomicOutput;

/// How to start the environment and where replayed states go.
#[derive(Args, Clone)]
pub struct EnvArgs {
    /// Environment command line (run with `sh -c`), speaking the adapter protocol.
    #[arg(long, value_name = "CMD")]
    pub env: String,
    /// Seed sent with `reset`.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Which trajectory of TRAJ, when it holds several.
    #[arg(long)]
    pub id: Option<String>,
    /// Keep the captured states in this store (default: a temporary store, removed).
    #[arg(long, value_name = "STORE")]
    pub store: Option<PathBuf>,
    /// Seconds one request may take before the environment is killed.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
    #[command(flatten)]
    pub ignore: IgnoreArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// How a verification command hands its report over (replay, counterfactual, admit,
/// isolation): one set of flags.
#[derive(Args, Clone)]
pub struct ReportArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to this file (atomically; replay and counterfactual reports
    /// are the evidence `trajkit admit` reads).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The options plus the temporary store directory that must outlive them.
pub struct Prepared {
    pub options: ReplayOptions,
    _temp: Option<tempfile::TempDir>,
}

impl EnvArgs {
    pub fn prepare(&self) -> Result<Prepared> {
        let (store, temp) = match &self.store {
            Some(dir) => (Store::create(dir)?, None),
            None => {
                let temp = tempfile::Builder::new().prefix("trajkit-replay-").tempdir()?;
                (Store::create(temp.path())?, Some(temp))
            }
        };
        let mut env = EnvSpec::new(self.env.clone());
        env.timeout = Duration::from_secs(self.timeout.max(1));
        let options = ReplayOptions { env, seed: self.seed, store, ignore: self.ignore.spec() };
        Ok(Prepared { options, _temp: temp })
    }
}

/// Reads canonical trajectory records (plain, .gz or .zst).
pub fn load(path: &Path) -> Result<Vec<Trajectory>> {
    let display = path.display().to_string();
    let root = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let file = InputFile { fs_path: path.to_path_buf(), display: display.clone(), root };
    let reader = open(&file)?;
    Ok(read_trajectories(reader, &display)?)
}

impl ReportArgs {
    /// Hands `report` over: written to `--output` (atomically) when asked, and printed as
    /// one JSON line with `--json`, else as `human` renders it.
    pub fn deliver<R: serde::Serialize>(&self, report: &R, human: impl FnOnce(&R) -> String) -> Result<()> {
        if let Some(path) = &self.output {
            write_report(path, report)?;
        }
        if self.json {
            outln!("{}", serde_json::to_string(report)?);
        } else {
            out!("{}", human(report));
        }
        Ok(())
    }
}

/// Writes a JSON report atomically.
pub fn write_report(path: &Path, report: &impl serde::Serialize) -> Result<()> {
    let mut out = AtomicOutput::create(path)?;
    serde_json::to_writer_pretty(&mut out, report)?;
    out.write_all(b"\n")?;
    out.finish().with_context(|| format!("cannot write {}", path.display()))
}

#[derive(Args)]
pub struct ReplayArgs {
    /// Canonical trajectory record(s): JSON or JSON Lines, plain, .gz or .zst.
    pub trajectory: PathBuf,
    #[command(flatten)]
    pub env: EnvArgs,
    /// Number of replays, each in a fresh process; all must agree.
    #[arg(long, default_value_t = 2)]
    pub times: usize,
    /// Also check each replay's change (reset -> final) against this expectation.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
}

pub fn run(args: &ReplayArgs) -> Result<u8> {
    let display = args.trajectory.display().to_string();
    let t = select(load(&args.trajectory)?, args.env.id.as_deref(), &display)?;
    let expect = args.expect.as_deref().map(Expectation::load).transpose()?;
    let prepared = args.env.prepare()?;
    let report = replay(&t, &prepared.options, args.times, expect.as_ref())?;
    args.env.report.deliver(&report, render_human)?;
    Ok(u8::from(report.verdict != "pass"))
}
