//! Numeric controls beyond finiteness: agreement of a run with its rerun (at a held-out
//! timestep, another seed, another machine) element by element within relative and
//! absolute tolerance, the worst element located; and the margin of a metric over its
//! witness threshold, which must exceed the run/rerun disagreement. Rules: docs/diagnose.md.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::{read_values, ArrayReport, DiagnoseError, FileReport};

/// `|run - rerun| <= atol + rtol * |rerun|`, as `numpy.isclose(run, rerun, rtol, atol)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

/// numpy.isclose's defaults.
pub const DEFAULT_TOLERANCE: Tolerance = Tolerance { rtol: 1e-5, atol: 1e-8 };

/// The element farthest outside the tolerance (or closest to its edge when all agree).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Worst {
    /// Row-major position.
    pub flat_index: u64,
    /// One entry per axis (JSON: per array level).
    pub index: Vec<u64>,
    /// The two values; non-finite ones as `"NaN"`, `"+Inf"`, `"-Inf"`.
    pub run: Value,
    pub rerun: Value,
    /// `|run - rerun|`; absent when a value is not finite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abs_diff: Option<f64>,
    /// `|run - rerun| / |rerun|`; absent when the rerun value is 0 or a value is not finite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rel_diff: Option<f64>,
}

/// Agreement of one array.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArrayAgreement {
    pub array: String,
    /// The rerun's array it was compared with (the same name, or the single array of each file).
    pub rerun_array: Option<String>,
    pub count: u64,
    /// Elements outside the tolerance (a NaN never agrees; equal infinities do).
    pub disagreeing: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_abs_diff: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst: Option<Worst>,
    /// Why the arrays could not be compared (missing in the rerun, shapes differ).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl ArrayAgreement {
    pub fn agrees(&self) -> bool {
        self.problem.is_none() && self.disagreeing == 0
    }
}

/// Agreement of two files.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    pub run: String,
    pub rerun: String,
    pub tolerance: Tolerance,
    pub arrays: Vec<ArrayAgreement>,
    /// Arrays of the rerun that the run does not have.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rerun_only: Vec<String>,
    pub agree: bool,
}

/// Compares every array of `run` with the rerun's array of the same name (or the single
/// arrays of two one-array files, whatever their names).
pub fn agreement(run: &Path, rerun: &Path, tol: Tolerance) -> Result<Agreement, DiagnoseError> {
    let (a, b) = (read_values(run)?, read_values(rerun)?);
    let single = a.arrays.len() == 1 && b.arrays.len() == 1;
    let mut arrays = Vec::new();
    for x in &a.arrays {
        let y = if single { b.arrays.first() } else { b.arrays.iter().find(|y| y.array == x.array) };
        arrays.push(compare(x, y, tol));
    }
    let rerun_only: Vec<String> = if single {
        Vec::new()
    } else {
        b.arrays.iter().filter(|y| !a.arrays.iter().any(|x| x.array == y.array)).map(|y| y.array.clone()).collect()
    };
    let agree = arrays.iter().all(ArrayAgreement::agrees) && rerun_only.is_empty();
    Ok(Agreement { run: a.file, rerun: b.file, tolerance: tol, arrays, rerun_only, agree })
}

/// A value as JSON: a number, or the name of a non-finite one.
fn shown(v: f64) -> Value {
    match super::NonFinite::of(v) {
        Some(k) => Value::String(k.as_str().into()),
        None => serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
    }
}

/// How far outside the tolerance `(run, rerun)` is: ≤ 0 agrees; `+∞` for a NaN or a
/// non-finite value the other side does not share.
fn excess(a: f64, b: f64, tol: Tolerance) -> f64 {
    if a.is_finite() && b.is_finite() {
        (a - b).abs() - (tol.atol + tol.rtol * b.abs())
    } else if a == b {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    }
}

fn compare(x: &ArrayReport, y: Option<&ArrayReport>, tol: Tolerance) -> ArrayAgreement {
    let mut out = ArrayAgreement {
        array: x.array.clone(),
        rerun_array: y.map(|y| y.array.clone()),
        count: x.count,
        disagreeing: 0,
        max_abs_diff: None,
        worst: None,
        problem: None,
    };
    let Some(y) = y else {
        out.problem = Some("not in the rerun".into());
        return out;
    };
    let (Some(kx), Some(ky)) = (&x.kept, &y.kept) else {
        out.problem = Some("values not read".into());
        return out;
    };
    if x.shape != y.shape || kx.values.len() != ky.values.len() || kx.indices != ky.indices {
        out.problem = Some(format!("shapes differ: {} vs {}", shape_of(x), shape_of(y)));
        return out;
    }
    let mut worst: Option<(usize, f64)> = None;
    for (i, (&a, &b)) in kx.values.iter().zip(&ky.values).enumerate() {
        let e = excess(a, b, tol);
        out.disagreeing += u64::from(e > 0.0);
        if a.is_finite() && b.is_finite() {
            let d = (a - b).abs();
            out.max_abs_diff = Some(out.max_abs_diff.map_or(d, |m: f64| m.max(d)));
        }
        if worst.is_none_or(|(_, w)| e > w) {
            worst = Some((i, e));
        }
    }
    out.worst = worst.map(|(i, _)| {
        let (a, b) = (kx.values[i], ky.values[i]);
        let finite = a.is_finite() && b.is_finite();
        let index = match (&kx.indices, &x.shape) {
            (Some(ix), _) => ix.get(i).cloned().unwrap_or_default(),
            (None, Some(shape)) => super::npy::unravel(i as u64, shape, false),
            (None, None) => Vec::new(),
        };
        Worst {
            flat_index: i as u64,
            index,
            run: shown(a),
            rerun: shown(b),
            abs_diff: finite.then(|| (a - b).abs()),
            rel_diff: (finite && b != 0.0).then(|| (a - b).abs() / b.abs()),
        }
    });
    out
}

fn shape_of(a: &ArrayReport) -> String {
    match &a.shape {
        Some(s) => format!("{s:?}"),
        None => format!("{} values", a.count),
    }
}

/// Which side of the threshold passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PassIf {
    /// The metric passes at or above the threshold (a success rate).
    Above,
    /// The metric passes at or below the threshold (an error, a drag coefficient).
    Below,
}

/// Why a margin does not hold (a closed set, docs/diagnose.md).
pub const MARGIN_FINDINGS: [&str; 4] = ["non_finite", "wrong_side", "below_min_margin", "within_rerun_noise"];

/// The margin of a metric over its witness threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Margin {
    pub metric: String,
    pub value: Value,
    pub threshold: f64,
    pub pass_if: PassIf,
    /// Signed distance on the passing side (negative: the metric fails the threshold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margin: Option<f64>,
    /// `margin / |threshold|`; absent for a zero threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative_margin: Option<f64>,
    pub min_margin: f64,
    /// The rerun's value and `|run - rerun|`, when a rerun is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun_value: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun_disagreement: Option<f64>,
    /// Codes from `MARGIN_FINDINGS`; empty when the margin holds.
    pub findings: Vec<&'static str>,
    pub holds: bool,
}

/// The one value of array `metric` (`$.drag` or `drag`) of a file.
fn metric_value(file: &FileReport, metric: &str) -> Result<f64, DiagnoseError> {
    let invalid = |message: String| DiagnoseError::Invalid { path: file.file.clone(), message };
    let a = file
        .arrays
        .iter()
        .find(|a| a.array == metric || a.array.strip_prefix("$.") == Some(metric))
        .ok_or_else(|| invalid(format!("no array {metric:?}")))?;
    match a.kept.as_ref().map(|k| k.values.as_slice()) {
        Some([v]) => Ok(*v),
        _ => Err(invalid(format!("{}: {} values; a metric is one value", a.array, a.count))),
    }
}

/// Checks that `metric` in `run` passes `threshold` on the `pass_if` side by at least
/// `min_margin`, and by more than its disagreement with `rerun` when given.
pub fn margin(
    run: &Path,
    metric: &str,
    threshold: f64,
    pass_if: PassIf,
    min_margin: f64,
    rerun: Option<&Path>,
) -> Result<Margin, DiagnoseError> {
    let value = metric_value(&read_values(run)?, metric)?;
    let rerun_value = rerun.map(|p| read_values(p).and_then(|f| metric_value(&f, metric))).transpose()?;
    let margin = match pass_if {
        PassIf::Above => value - threshold,
        PassIf::Below => threshold - value,
    };
    let disagreement = rerun_value.map(|r| (value - r).abs());
    let mut findings = Vec::new();
    if !margin.is_finite() || disagreement.is_some_and(|d| !d.is_finite()) {
        findings.push(MARGIN_FINDINGS[0]);
    } else {
        if margin < 0.0 {
            findings.push(MARGIN_FINDINGS[1]);
        }
        if margin < min_margin {
            findings.push(MARGIN_FINDINGS[2]);
        }
        if disagreement.is_some_and(|d| margin <= d) {
            findings.push(MARGIN_FINDINGS[3]);
        }
    }
    let finite = margin.is_finite();
    Ok(Margin {
        metric: metric.to_string(),
        value: shown(value),
        threshold,
        pass_if,
        margin: finite.then_some(margin),
        relative_margin: (finite && threshold != 0.0).then(|| margin / threshold.abs()),
        min_margin,
        rerun_value: rerun_value.map(shown),
        rerun_disagreement: disagreement.filter(|d| d.is_finite()),
        holds: findings.is_empty(),
        findings,
    })
}
