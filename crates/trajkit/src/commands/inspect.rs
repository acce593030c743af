//! `trajkit inspect`: per-file figures, as a table or JSON lines.

use crate::pipe::Lines;
use anyhow::Result;
use std::fmt::Write as _;
use trajkit_formats::{FileReport, InputFile, Sink};

use super::{init_threads, read};
use crate::ReadArgs;

struct Discard;
impl Sink for Discard {
    fn trajectory(&mut self, _: &InputFile, _: Option<&trajkit_model::Trajectory>, _: Option<&[u8]>) {}
}

pub fn run(args: &ReadArgs, json: bool) -> Result<u8> {
    init_threads(&args.options)?;
    let outcome = read(args, false, &mut Discard)?;
    let mut out = Lines::stdout();
    if json {
        for r in &outcome.reports {
            out.line(format_args!("{}", serde_json::to_string(r)?));
        }
    } else {
        print_table(&mut out, &outcome.reports);
    }
    out.finish();
    // inspect describes; it fails only when nothing could be read.
    Ok(if outcome.exit_code() == 2 { 2 } else { 0 })
}

fn print_table(out: &mut Lines, reports: &[FileReport]) {
    let header = ["path", "format", "records", "traj", "subagents", "steps", "tool_calls", "dup", "rejected", "notes"];
    let rows: Vec<[String; 10]> = reports
        .iter()
        .map(|r| {
            [
                r.path.clone(),
                r.format.clone().unwrap_or_else(|| "-".into()),
                r.records.to_string(),
                r.trajectories.to_string(),
                r.subagents.to_string(),
                r.steps.to_string(),
                r.tool_calls.to_string(),
                r.duplicate_records.to_string(),
                r.rejected.to_string(),
                notes(r),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let mut line = |out: &mut Lines, cells: &[String]| {
        text.clear();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            // Writing to a `String` cannot fail.
            let _ = if i == cells.len() - 1 {
                write!(text, "{c}")
            } else if (2..9).contains(&i) {
                write!(text, "{c:>w$}  ")
            } else {
                write!(text, "{c:<w$}  ")
            };
        }
        out.line(format_args!("{}", text.trim_end()));
    };
    line(out, &header.map(String::from));
    for row in &rows {
        line(out, row);
    }
    let total = |f: fn(&FileReport) -> u64| reports.iter().map(f).sum::<u64>();
    out.line(format_args!(
        "{} files: {} trajectories, {} subagents, {} steps, {} tool calls, {} duplicates, {} rejected",
        reports.len(),
        total(|r| r.trajectories),
        total(|r| r.subagents),
        total(|r| r.steps),
        total(|r| r.tool_calls),
        total(|r| r.duplicate_records),
        total(|r| r.rejected)
    ));
}

fn notes(r: &FileReport) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &r.part_of {
        parts.push(format!("part of {p}"));
    }
    if let Some(e) = &r.error {
        parts.push(e.clone());
    }
    for (k, v) in &r.reasons {
        parts.push(format!("{k}={v}"));
    }
    for (k, v) in &r.gaps {
        parts.push(format!("gap {k}={v}"));
    }
    parts.join("; ")
}
