//! `trajkit stats`: recorded-agent performance of a library, recomputed from its index.

use crate::pipe::{out, outln};
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Result};
use serde_json::Value;
use trajkit_library::stats::{self, OutcomeRow, BY_KEYS};
use trajkit_library::Library;

use crate::table::render;

fn num(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.3}"),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn outcome_table(rows: &[OutcomeRow], key: &str) -> String {
    let header: Vec<String> =
        [key, "attempts", "tasks", "success", "failure", "unknown", "success_rate_known", "tasks_solved"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                if r.key.is_null() { "(none)".into() } else { num(&r.key) },
                r.attempts.to_string(),
                r.tasks.to_string(),
                r.success.to_string(),
                r.failure.to_string(),
                r.unknown.to_string(),
                r.success_rate_known.map_or("-".into(), |x| format!("{x:.3}")),
                r.tasks_solved.to_string(),
            ]
        })
        .collect();
    render(&header, &body)
}

fn k_table(section: &Value, columns: &[&str]) -> String {
    let header: Vec<String> = columns.iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<String>> = section["by_k"]
        .as_array()
        .map(|a| a.iter().map(|r| columns.iter().map(|c| num(&r[*c])).collect()).collect())
        .unwrap_or_default();
    render(&header, &rows)
}

pub fn run(library: &Path, by: Option<&str>, json: bool, dedup: Option<&str>) -> Result<u8> {
    let lib = Library::open(library)?;
    let index = lib.root().join("index.sqlite");
    let conn = trajkit_library::index::open_read_only(&index)?;
    let dedup: trajkit_library::Dedup = dedup.unwrap_or("none").parse().map_err(anyhow::Error::msg)?;
    dedup.apply(&conn, &index)?;
    if let Some(by) = by {
        let Some((_, column)) = BY_KEYS.iter().find(|(k, _)| *k == by) else {
            bail!("--by must be one of {}", BY_KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", "));
        };
        let rows = stats::outcomes_by(&conn, &index, column)?;
        if json {
            outln!("{}", serde_json::to_string_pretty(&rows)?);
        } else {
            out!("{}", outcome_table(&rows, by));
        }
        return Ok(0);
    }
    let mut s = stats::report(lib.root(), dedup)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(0);
    }
    let contamination = s.as_object_mut().and_then(|o| o.remove("contamination")).unwrap_or_default();
    print_summary(&s, &contamination, &conn, &index)?;
    Ok(0)
}

/// The contamination report's totals and its per-source table (evaluation/contamination.json).
fn print_contamination(c: &Value) {
    if c.get("status").is_some() {
        outln!("\ncontamination: not computed (library built before the report existed)");
        return;
    }
    let t = &c["totals"];
    outln!(
        "\ncontamination ({}-word n-grams): {} of {} protected tasks overlapped; {} training trajectories caught by \
         instruction (now protected), {} training-eligible by content",
        c["method"]["ngram_words"],
        t["tasks_with_overlaps"],
        c["protected_clusters"],
        t["instruction_overlaps"],
        t["content_overlaps"]
    );
    let rows: Vec<Vec<String>> = c["by_source"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| vec![num(&r["source"]), num(&r["instruction_overlaps"]), num(&r["content_overlaps"])])
                .collect()
        })
        .unwrap_or_default();
    if !rows.is_empty() {
        let header: Vec<String> = ["source", "instruction (now protected)", "content (training-eligible)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        out!("{}", render(&header, &rows));
    }
}

/// Latency per source and model: only groups where some attempt published a duration.
fn print_latency(s: &Value) {
    let columns = ["count", "mean_seconds", "p50_seconds", "p90_seconds", "max_seconds"];
    let rows: Vec<Vec<String>> = s["usage"]["latency"]["by_source_model"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|r| r["count"].as_u64().unwrap_or(0) > 0)
                .map(|r| {
                    let model = if r["model"].is_null() { "(none)".into() } else { num(&r["model"]) };
                    let figures = columns.iter().map(|c| num(&r[*c]));
                    [num(&r["source"]), model, num(&r["attempts"])].into_iter().chain(figures).collect()
                })
                .collect()
        })
        .unwrap_or_default();
    if rows.is_empty() {
        outln!("\nlatency: no source publishes a run duration");
        return;
    }
    outln!("\nlatency in seconds, where the source publishes it (count = attempts with a duration):");
    let header: Vec<String> =
        ["source", "model", "attempts", "count", "mean", "p50", "p90", "max"].iter().map(|s| s.to_string()).collect();
    out!("{}", render(&header, &rows));
}

fn print_summary(s: &Value, contamination: &Value, conn: &rusqlite::Connection, index: &Path) -> Result<()> {
    let o = &s["outcomes"];
    let solved = &s["tasks_solved_at_least_once"];
    outln!("{} attempts of {} tasks from {} sources", s["attempts"], s["tasks"], s["sources"]);
    outln!(
        "outcomes: {} success, {} failure, {} unknown (success rate over known outcomes: {})",
        o["success"],
        o["failure"],
        o["unknown"],
        num(&o["success_rate_known"])
    );
    outln!(
        "tasks solved at least once: {} of {} ({} of {} tasks with a known outcome)",
        solved["solved"],
        solved["tasks"],
        solved["solved"],
        solved["tasks_with_known_outcome"]
    );
    outln!("\nby source:");
    out!("{}", outcome_table(&stats::outcomes_by(conn, index, "source")?, "source"));
    outln!("\nby model:");
    out!("{}", outcome_table(&stats::outcomes_by(conn, index, "model")?, "model"));
    let at_k = &s["at_k"];
    outln!("\nsuccess@k, descriptive (first k attempts per source/model/task in source-locator order):");
    out!(
        "{}",
        k_table(&at_k["success_at_k_empirical"], &["k", "groups", "success", "failure", "unknown", "rate_known"])
    );
    outln!("\npass@k, estimate (unbiased estimator over attempts of known outcome):");
    out!("{}", k_table(&at_k["pass_at_k_estimate"], &["k", "groups", "estimate"]));
    outln!("\npass^k, estimate:");
    out!("{}", k_table(&at_k["pass_hat_k_estimate"], &["k", "groups", "estimate"]));
    outln!("\nactions per attempt:");
    let header: Vec<String> =
        ["", "total", "min", "median", "mean", "p90", "max"].iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<String>> = ["steps", "decisions", "tool_calls"]
        .iter()
        .map(|k| {
            let d = &s["actions"][*k];
            std::iter::once(k.to_string())
                .chain(["total", "min", "median", "mean", "p90", "max"].iter().map(|c| num(&d[*c])))
                .collect()
        })
        .collect();
    out!("{}", render(&header, &rows));
    let per_task: Vec<String> = s["attempts_distribution"]["per_task"]
        .as_array()
        .map(|a| a.iter().map(|r| format!("{} with {}", r["tasks"], r["attempts"])).collect())
        .unwrap_or_default();
    outln!("\ntasks by attempt count: {}", per_task.join(", "));
    outln!("\ntokens and cost as sources publish them (never summed across sources):");
    let header: Vec<String> =
        ["source", "model", "attempts", "prompt_tokens", "cached_tokens", "completion_tokens", "cost_usd"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let rows: Vec<Vec<String>> = s["usage"]["by_source_model"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    let with = |v: &str, n: &str| format!("{} ({} of {})", num(&r[v]), r[n], r["attempts"]);
                    vec![
                        num(&r["source"]),
                        if r["model"].is_null() { "(none)".into() } else { num(&r["model"]) },
                        num(&r["attempts"]),
                        with("prompt_tokens", "with_prompt_tokens"),
                        with("cached_tokens", "with_cached_tokens"),
                        with("completion_tokens", "with_completion_tokens"),
                        with("cost_usd", "with_cost_usd"),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    out!("{}", render(&header, &rows));
    print_latency(s);
    let q = &s["quality"];
    outln!(
        "\nquality: {} structurally valid, {} complete, {} SFT-eligible, {} training-eligible; {} duplicate groups with more than one trajectory ({} whose members disagree on outcome or reward); {} records rejected",
        q["structural_valid"], q["complete"], q["sft_eligible"], q["training_eligible"],
        s["duplicates"]["groups_with_duplicates"], s["duplicates"]["groups_with_disagreeing_outcomes"], s["rejected_records"]
    );
    print_contamination(contamination);
    outln!("\n(--json for everything, including outcomes by scaffold, family and tier)");
    Ok(())
}
