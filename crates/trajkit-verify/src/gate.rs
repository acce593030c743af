//! The experiment gate: before a planned schedule runs, its maximum liability (candidates ×
//! requests × bounded input and output tokens × price, per provider and in total) is
//! computed from a limits file and checked against the caps, and every arm must count and
//! bound each request's input before sending it. A failed gate becomes the ledger's
//! `pre_execution_rejected` attempt. Format and rules: docs/schedule.md.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::schedule::{self, Schedule};

/// Picodollars per dollar: prices and caps are held as integers of 10⁻¹² USD.
const PICO: f64 = 1e12;

/// What the gate cannot be computed from.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: not a {format} schedule: {message}", format = schedule::FORMAT)]
    Schedule { path: String, message: String },
    #[error("{path}: {message}")]
    Limits { path: String, message: String },
}

/// Price of one provider, in US dollars per million tokens, and its own cap.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_usd_per_mtok: f64,
    pub output_usd_per_mtok: f64,
    /// Most this provider may cost in one cycle (optional).
    pub cap_usd: Option<f64>,
}

/// How one arm makes its requests. A missing bound is a gate failure, not a parse error:
/// an unbounded arm has unbounded liability.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmLimits {
    pub provider: String,
    /// Most model requests one candidate of this arm may make.
    pub requests_per_candidate: Option<u64>,
    /// Most input tokens of one request.
    pub max_input_tokens: Option<u64>,
    /// Most output tokens of one request (the request's `max_tokens`).
    pub max_output_tokens: Option<u64>,
    /// The harness counts every request's input tokens before sending it and refuses one
    /// above `max_input_tokens`.
    #[serde(default)]
    pub input_counted: bool,
}

/// The pricing and limits file (TOML).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Most the whole cycle may cost, in US dollars.
    pub cycle_cap_usd: f64,
    #[serde(default)]
    pub providers: BTreeMap<String, Price>,
    #[serde(default)]
    pub arms: BTreeMap<String, ArmLimits>,
}

/// One reason a gate fails (`code` from a closed set, docs/schedule.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
}

/// The liability of one arm (`null` when some bound is missing).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmLiability {
    pub arm: String,
    pub provider: Option<String>,
    pub candidates: u64,
    /// Most requests of all this arm's candidates.
    pub max_requests: Option<u64>,
    pub max_input_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub liability_usd: Option<f64>,
}

/// The liability of one provider against its cap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderLiability {
    pub liability_usd: Option<f64>,
    pub cap_usd: Option<f64>,
}

/// The gate's verdict and the figures behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    pub candidates: u64,
    pub arms: Vec<ArmLiability>,
    pub providers: BTreeMap<String, ProviderLiability>,
    /// Maximum liability of the cycle; `null` when some arm is unbounded.
    pub total_usd: Option<f64>,
    pub cycle_cap_usd: f64,
    pub passed: bool,
    pub failures: Vec<Failure>,
}

/// Reads a schedule written by `trajkit schedule`.
pub fn read_schedule(path: &Path) -> Result<Schedule, GateError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| GateError::Io { path: name.clone(), source })?;
    let s: Schedule = serde_json::from_slice(&bytes)
        .map_err(|e| GateError::Schedule { path: name.clone(), message: e.to_string() })?;
    if s.format != schedule::FORMAT {
        return Err(GateError::Schedule { path: name, message: format!("format is {:?}", s.format) });
    }
    Ok(s)
}

/// Reads and checks a limits file: prices and caps finite and not negative.
pub fn read_limits(path: &Path) -> Result<Limits, GateError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| GateError::Io { path: name.clone(), source })?;
    let bad = |message: String| GateError::Limits { path: name.clone(), message };
    let limits: Limits = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let mut amounts = vec![("cycle_cap_usd".to_string(), Some(limits.cycle_cap_usd))];
    for (p, price) in &limits.providers {
        amounts.push((format!("providers.{p}.input_usd_per_mtok"), Some(price.input_usd_per_mtok)));
        amounts.push((format!("providers.{p}.output_usd_per_mtok"), Some(price.output_usd_per_mtok)));
        amounts.push((format!("providers.{p}.cap_usd"), price.cap_usd));
    }
    for (field, v) in amounts {
        if let Some(v) = v.filter(|v| !v.is_finite() || *v < 0.0 || *v * PICO > u64::MAX as f64) {
            return Err(bad(format!("{field}: {v} is not an amount of dollars (finite, 0 or more)")));
        }
    }
    Ok(limits)
}

/// Dollars as whole picodollars.
fn pico(usd: f64) -> u128 {
    (usd * PICO).round() as u128
}

/// Picodollars per token of a price in dollars per million tokens (read to 10⁻⁶ dollar).
fn per_token(usd_per_mtok: f64) -> u128 {
    (usd_per_mtok * 1e6).round() as u128
}

fn usd(pico: u128) -> f64 {
    pico as f64 / PICO
}

/// Computes the gate of `s` under `limits`.
pub fn check(s: &Schedule, limits: &Limits) -> Gate {
    let mut failures = Vec::new();
    let mut fail = |code: &'static str, message: String| failures.push(Failure { code, message });
    let mut arms = Vec::new();
    let mut per_provider: BTreeMap<String, Option<u128>> = BTreeMap::new();
    let mut total: Option<u128> = Some(0);
    for arm in &s.arms {
        let candidates = s.candidates.iter().filter(|c| &c.arm == arm).count() as u64;
        let (row, liability) = arm_liability(arm, candidates, limits, &mut fail);
        if let Some(p) = &row.provider {
            let slot = per_provider.entry(p.clone()).or_insert(Some(0));
            *slot = slot.zip(liability).map(|(a, b)| a.saturating_add(b));
        }
        total = total.zip(liability).map(|(a, b)| a.saturating_add(b));
        arms.push(row);
    }
    let mut providers = BTreeMap::new();
    for (name, liability) in per_provider {
        let cap = limits.providers.get(&name).and_then(|p| p.cap_usd);
        if let (Some(l), Some(c)) = (liability, cap) {
            if l > pico(c) {
                fail("provider_cap_exceeded", format!("provider {name}: liability ${} exceeds its cap ${c}", usd(l)));
            }
        }
        providers.insert(name, ProviderLiability { liability_usd: liability.map(usd), cap_usd: cap });
    }
    match total {
        Some(t) if t > pico(limits.cycle_cap_usd) => fail(
            "cycle_cap_exceeded",
            format!("maximum liability ${} exceeds the cycle cap ${}", usd(t), limits.cycle_cap_usd),
        ),
        _ => {}
    }
    Gate {
        candidates: s.candidates.len() as u64,
        arms,
        providers,
        total_usd: total.map(usd),
        cycle_cap_usd: limits.cycle_cap_usd,
        passed: failures.is_empty(),
        failures,
    }
}

/// One arm's figures and liability in picodollars (`None` when unbounded or unpriced).
fn arm_liability(
    arm: &str,
    candidates: u64,
    limits: &Limits,
    fail: &mut impl FnMut(&'static str, String),
) -> (ArmLiability, Option<u128>) {
    let Some(a) = limits.arms.get(arm) else {
        fail("arm_without_limits", format!("arm {arm}: no [arms.{arm}] in the limits file"));
        let row = ArmLiability {
            arm: arm.to_string(),
            provider: None,
            candidates,
            max_requests: None,
            max_input_tokens: None,
            max_output_tokens: None,
            liability_usd: None,
        };
        return (row, None);
    };
    if !a.input_counted {
        fail("input_not_counted", format!("arm {arm}: request input is not counted before sending (input_counted)"));
    }
    let bounds = [
        ("requests_unbounded", "requests_per_candidate", a.requests_per_candidate),
        ("input_unbounded", "max_input_tokens", a.max_input_tokens),
        ("output_unbounded", "max_output_tokens", a.max_output_tokens),
    ];
    for (code, field, v) in bounds {
        if v.is_none() {
            fail(code, format!("arm {arm}: no {field}"));
        }
    }
    let price = limits.providers.get(&a.provider);
    if price.is_none() {
        fail("provider_without_price", format!("arm {arm}: provider {} has no [providers.{}]", a.provider, a.provider));
    }
    // Saturating below: a liability beyond 128 bits is above any cap all the same.
    let max_requests = a.requests_per_candidate.map(|r| u128::from(r) * u128::from(candidates));
    let liability = match (max_requests, a.max_input_tokens, a.max_output_tokens, price) {
        (Some(r), Some(i), Some(o), Some(p)) if a.input_counted => {
            let input = u128::from(i).saturating_mul(per_token(p.input_usd_per_mtok));
            let output = u128::from(o).saturating_mul(per_token(p.output_usd_per_mtok));
            Some(r.saturating_mul(input.saturating_add(output)))
        }
        _ => None,
    };
    let row = ArmLiability {
        arm: arm.to_string(),
        provider: Some(a.provider.clone()),
        candidates,
        max_requests: max_requests.map(|r| r.min(u128::from(u64::MAX)) as u64),
        max_input_tokens: a.max_input_tokens,
        max_output_tokens: a.max_output_tokens,
        liability_usd: liability.map(usd),
    };
    (row, liability)
}

/// The ledger line of a failed gate: a `pre_execution_rejected` attempt naming the check
/// (`run`), what passed and failed, and the liability against the cap.
pub fn ledger_entry(id: &str, s: &Schedule, g: &Gate, run: &str) -> Value {
    let failed: Vec<String> = g.failures.iter().map(|f| format!("{}: {}", f.code, f.message)).collect();
    let mut passed =
        vec![format!("{} candidates planned ({} arms, {} blocks)", g.candidates, s.arms.len(), s.blocks.len())];
    if g.arms.iter().all(|a| a.liability_usd.is_some()) {
        passed.push("every request's input counted and bounded before sending".into());
    }
    let output = match g.total_usd {
        Some(t) => format!("maximum liability ${t} against the cycle cap ${}", g.cycle_cap_usd),
        None => format!("maximum liability unbounded against the cycle cap ${}", g.cycle_cap_usd),
    };
    json!({
        "id": id,
        "environment": s.apps.join(", "),
        "approach": format!("arms {} (schedule root seed {})", s.arms.join(", "), s.root_seed),
        "classification": "pre_execution_rejected",
        "run": run,
        "passed": passed,
        "failed": failed,
        "output": output,
        "public_locations": [],
        "limitation": "rejected on the planned schedule and the declared limits alone: no request was sent",
    })
}

#[cfg(test)]
mod tests;
