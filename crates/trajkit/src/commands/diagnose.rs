//! `trajkit diagnose`: finiteness and summary statistics of numeric arrays (docs/diagnose.md).

use crate::pipe::outln;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
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
}

pub fn run(args: &DiagnoseArgs) -> Result<u8> {
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
