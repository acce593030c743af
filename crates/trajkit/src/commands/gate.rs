//! `trajkit gate`: the experiment gate of a planned schedule (docs/schedule.md).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trajkit_verify::{gate, ledger};

/// `trajkit gate ...`
#[derive(Args)]
pub struct GateArgs {
    /// The schedule (written by `trajkit schedule`).
    schedule: PathBuf,
    /// Pricing and limits (TOML): cycle cap, provider prices, per-arm request bounds.
    #[arg(long, value_name = "FILE")]
    limits: PathBuf,
    /// When the gate fails, append a `pre_execution_rejected` attempt to this ledger.
    #[arg(long, value_name = "LEDGER", requires = "id")]
    ledger: Option<PathBuf>,
    /// The attempt id written to the ledger.
    #[arg(long)]
    id: Option<String>,
    /// Print the gate as one JSON object.
    #[arg(long)]
    json: bool,
}

/// 0 the gate passes; 1 it fails (the ledger entry is written); 2 an input cannot be read.
pub fn run(args: &GateArgs) -> Result<u8> {
    let s = gate::read_schedule(&args.schedule)?;
    let limits = gate::read_limits(&args.limits)?;
    let g = gate::check(&s, &limits);
    if args.json {
        println!("{}", serde_json::to_string(&g)?);
    } else {
        print!("{}", table(&g));
    }
    if g.passed {
        return Ok(0);
    }
    if let (Some(path), Some(id)) = (&args.ledger, &args.id) {
        let run = format!("trajkit gate {} --limits {}", args.schedule.display(), args.limits.display());
        ledger::append(path, &gate::ledger_entry(id, &s, &g, &run))?;
        eprintln!("{}: added {id} (pre_execution_rejected)", path.display());
    }
    Ok(1)
}

fn money(v: Option<f64>) -> String {
    v.map_or_else(|| "unbounded".into(), |v| format!("${v}"))
}

/// One line per arm and provider, the total against the cap, then each failure.
fn table(g: &gate::Gate) -> String {
    let mut out = String::new();
    for a in &g.arms {
        let provider = a.provider.as_deref().unwrap_or("-");
        out.push_str(&format!(
            "arm {} ({provider}): {} candidates, liability {}\n",
            a.arm,
            a.candidates,
            money(a.liability_usd)
        ));
    }
    for (name, p) in &g.providers {
        let cap = p.cap_usd.map(|c| format!(" (cap ${c})")).unwrap_or_default();
        out.push_str(&format!("provider {name}: liability {}{cap}\n", money(p.liability_usd)));
    }
    out.push_str(&format!(
        "total: {} candidates, maximum liability {} against the cycle cap ${}: {}\n",
        g.candidates,
        money(g.total_usd),
        g.cycle_cap_usd,
        if g.passed { "PASS" } else { "FAIL" }
    ));
    for f in &g.failures {
        out.push_str(&format!("{}: {}\n", f.code, f.message));
    }
    out
}
