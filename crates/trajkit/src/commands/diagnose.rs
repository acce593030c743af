//! `trajkit diagnose`: finiteness and summary statistics of numeric arrays (docs/diagnose.md).

use crate::pipe::outln;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use trajkit_verify::diagnose::agree::{self, PassIf, Tolerance};
use trajkit_verify::diagnose::{self, ArrayReport, FileReport};

/// `trajkit diagnose ...`
#[derive(Args)]
pub struct DiagnoseArgs {
    /// `.npy`, `.npz` or `.json` files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// One JSON object per file per line.
    #[arg(long)]
    json: bool,
    /// Compare the one FILE (the run) with its rerun, element by element.
    #[arg(long, value_name = "FILE")]
    rerun: Option<PathBuf>,
    /// Relative tolerance of the comparison (`|run - rerun| <= atol + rtol * |rerun|`).
    #[arg(long, default_value_t = agree::DEFAULT_TOLERANCE.rtol)]
    rtol: f64,
    /// Absolute tolerance of the comparison.
    #[arg(long, default_value_t = agree::DEFAULT_TOLERANCE.atol)]
    atol: f64,
    /// Check this one-value array of FILE (`$.drag` or `drag`) against --threshold.
    #[arg(long, value_name = "NAME", requires_all = ["threshold", "pass_if"])]
    metric: Option<String>,
    /// The witness threshold of --metric.
    #[arg(long, requires = "metric")]
    threshold: Option<f64>,
    /// Which side of the threshold passes.
    #[arg(long, value_enum, requires = "metric")]
    pass_if: Option<Side>,
    /// The least margin accepted over the threshold.
    #[arg(long, default_value_t = 0.0, requires = "metric")]
    min_margin: f64,
}

/// `--pass-if`.
#[derive(Clone, Copy, ValueEnum)]
enum Side {
    Above,
    Below,
}

pub fn run(args: &DiagnoseArgs) -> Result<u8> {
    if args.metric.is_some() || args.rerun.is_some() {
        let [file] = args.files.as_slice() else { bail!("--rerun and --metric take exactly one FILE (the run)") };
        return match (&args.metric, args.threshold, args.pass_if) {
            (Some(metric), Some(threshold), Some(side)) => margin(args, file, metric, threshold, side),
            _ => agreement(args, file),
        };
    }
    let (mut arrays, mut flagged, mut errors) = (0usize, 0usize, 0usize);
    for path in &args.files {
        match diagnose::diagnose(path) {
            Ok(report) => {
                arrays += report.arrays.len();
                flagged += report.arrays.iter().filter(|a| a.non_finite() > 0).count();
                if args.json {
                    outln!("{}", serde_json::to_string(&report)?);
                } else {
                    print_file(&report);
                }
            }
            Err(e) => {
                errors += 1;
                if args.json {
                    outln!("{}", serde_json::json!({"file": path.display().to_string(), "error": e.to_string()}));
                }
                eprintln!("trajkit: {e}");
            }
        }
    }
    eprintln!(
        "{} files, {arrays} arrays: {flagged} with non-finite values, {errors} files not readable",
        args.files.len()
    );
    Ok(if errors > 0 { 2 } else { u8::from(flagged > 0) })
}

/// Python's tuple notation: `()`, `(20,)`, `(50, 3)`.
fn tuple(items: &[u64]) -> String {
    let parts: Vec<String> = items.iter().map(u64::to_string).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

fn print_file(report: &FileReport) {
    let base = std::path::Path::new(&report.file).file_name().map(|n| n.to_string_lossy().into_owned());
    for a in &report.arrays {
        // A .npy file is its one array: name it once.
        let label = if base.as_deref() == Some(a.array.as_str()) {
            report.file.clone()
        } else {
            format!("{}: {}", report.file, a.array)
        };
        outln!("{label}: {}", figures(a));
        if let Some(f) = &a.first_non_finite {
            let leading = f.leading_index.map(|i| format!("leading index {i}, ")).unwrap_or_default();
            let detail = f.detail.as_ref().map(|d| format!(" ({d})")).unwrap_or_default();
            outln!(
                "{label}: first non-finite: {}{detail} at {leading}flat index {}, index {}",
                f.kind.as_str(),
                f.flat_index,
                tuple(&f.index)
            );
        }
    }
    for s in &report.skipped {
        outln!("{}: {s}: skipped (not a .npy member)", report.file);
    }
}

/// `<f8 (50, 3) count 150 finite 148 nan 1 +inf 1 -inf 0 min .. max .. mean ..`.
fn figures(a: &ArrayReport) -> String {
    let shape = a.shape.as_ref().map(|s| format!(" {}", tuple(s))).unwrap_or_default();
    let mut out = format!(
        "{}{shape} count {} finite {} nan {} +inf {} -inf {}",
        a.dtype, a.count, a.finite, a.nan, a.pos_inf, a.neg_inf
    );
    if a.null > 0 {
        out.push_str(&format!(" null {}", a.null));
    }
    if let (Some(lo), Some(hi)) = (a.min, a.max) {
        out.push_str(&format!(" min {lo} max {hi}"));
    }
    if let Some(m) = a.mean {
        out.push_str(&format!(" mean {m}"));
    }
    out
}

/// `--rerun`: 0 every array agrees, 1 some does not (or cannot be compared).
fn agreement(args: &DiagnoseArgs, file: &std::path::Path) -> Result<u8> {
    let Some(rerun) = &args.rerun else { bail!("--rerun FILE is needed") };
    if !(args.rtol >= 0.0 && args.atol >= 0.0) {
        bail!("--rtol and --atol must be 0 or more");
    }
    let g = agree::agreement(file, rerun, Tolerance { rtol: args.rtol, atol: args.atol })?;
    if args.json {
        println!("{}", serde_json::to_string(&g)?);
    } else {
        for a in &g.arrays {
            let label = format!("{} vs {}: {}", g.run, g.rerun, a.array);
            match (&a.problem, &a.worst) {
                (Some(p), _) => println!("{label}: not compared: {p}"),
                (None, w) => {
                    let max = a.max_abs_diff.map(|d| format!(", max |diff| {d}")).unwrap_or_default();
                    println!("{label}: {} of {} values disagree{max}", a.disagreeing, a.count);
                    if let Some(w) = w.as_ref().filter(|_| a.disagreeing > 0) {
                        println!(
                            "{label}: worst at flat index {}, index {}: run {} rerun {}",
                            w.flat_index,
                            tuple(&w.index),
                            w.run,
                            w.rerun
                        );
                    }
                }
            }
        }
        for name in &g.rerun_only {
            println!("{}: {name}: only in the rerun", g.rerun);
        }
    }
    let bad = g.arrays.iter().filter(|a| !a.agrees()).count() + g.rerun_only.len();
    eprintln!("{} arrays compared (rtol {}, atol {}): {bad} disagree", g.arrays.len(), args.rtol, args.atol);
    Ok(u8::from(!g.agree))
}

/// `--metric`: 0 the margin holds, 1 it does not.
fn margin(args: &DiagnoseArgs, file: &std::path::Path, metric: &str, threshold: f64, side: Side) -> Result<u8> {
    let pass_if = match side {
        Side::Above => PassIf::Above,
        Side::Below => PassIf::Below,
    };
    let m = agree::margin(file, metric, threshold, pass_if, args.min_margin, args.rerun.as_deref())?;
    if args.json {
        println!("{}", serde_json::to_string(&m)?);
    } else {
        let margin = m.margin.map_or_else(|| "none".to_string(), |v| v.to_string());
        let rerun = match (&m.rerun_value, m.rerun_disagreement) {
            (Some(v), Some(d)) => format!(", rerun {v} (|diff| {d})"),
            (Some(v), None) => format!(", rerun {v}"),
            _ => String::new(),
        };
        let side = if pass_if == PassIf::Above { ">=" } else { "<=" };
        let verdict = if m.holds { "holds".to_string() } else { format!("does not hold: {}", m.findings.join(", ")) };
        println!(
            "{}: {metric} = {} (pass if {side} {threshold}): margin {margin}{rerun}: {verdict}",
            file.display(),
            m.value
        );
    }
    Ok(u8::from(!m.holds))
}
