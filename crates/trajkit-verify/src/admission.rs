//! Task admission: four questions answered independently from recorded evidence
//! (docs/admission.md). Success on one never implies another; a question without
//! evidence is `unanswered`, never passed; a task is admitted only if all four are `yes`.

use std::fs;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use trajkit_model::Trajectory;

use crate::isolation::{isolation, render_leaks, summary, IsolationReport};
use crate::state::check::Expectation;
use crate::state::StateError;

/// Kind of an admission record.
pub const ADMISSION_KIND: &str = "trajkit-admission/1";

#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{path}:{line}: {message}")]
    Invalid { path: PathBuf, line: u64, message: String },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Replay(#[from] crate::replay::ReplayError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AdmissionError + '_ {
    move |error| AdmissionError::Io { path: path.to_path_buf(), error }
}

fn invalid(path: &Path, line: u64, message: impl Into<String>) -> AdmissionError {
    AdmissionError::Invalid { path: path.to_path_buf(), line, message: message.into() }
}

/// `task.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub id: String,
    #[serde(default)]
    pub instruction: Option<String>,
    /// The expectation file, relative to task.json's directory.
    pub expect: String,
    /// The witness route (a canonical reference trajectory), relative to task.json's
    /// directory: its material must not reach solvers (isolation).
    #[serde(default)]
    pub witness: Option<String>,
    #[serde(default)]
    pub learning_value: LearningValueConfig,
}

/// The pass-rate band of the learning-value question.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearningValueConfig {
    /// Lower and upper bound of the band (pass rates, 0 to 1).
    pub band: [f64; 2],
    /// Bounds included in the band; the default excludes them (so 0/k and k/k fail).
    pub inclusive: bool,
    /// Confidence of the Wilson interval.
    pub confidence: f64,
    /// `rate`: the observed pass rate must lie in the band; `interval`: the whole Wilson
    /// interval must.
    pub criterion: String,
    /// Fewer attempts than this leave the question unanswered.
    pub min_attempts: u64,
}

impl Default for LearningValueConfig {
    fn default() -> Self {
        LearningValueConfig {
            band: [0.0, 1.0],
            inclusive: false,
            confidence: 0.95,
            criterion: "rate".into(),
            min_attempts: 1,
        }
    }
}

/// `yes`, `no` or `unanswered`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Yes,
    No,
    Unanswered,
}

/// One question's answer with its reason and the evidence it rests on.
#[derive(Debug, Clone, Serialize)]
pub struct Question {
    pub answer: Answer,
    pub reason: String,
    pub evidence: Vec<Value>,
    /// Question-specific figures (learning value: passes, attempts, rate, Wilson interval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figures: Option<Value>,
}

impl Question {
    fn new(answer: Answer, reason: impl Into<String>, evidence: Vec<Value>) -> Question {
        Question { answer, reason: reason.into(), evidence, figures: None }
    }
}

/// The admission record.
#[derive(Debug, Clone, Serialize)]
pub struct AdmissionRecord {
    pub kind: String,
    pub task: Value,
    pub evidence_dir: String,
    pub admitted: bool,
    pub feasibility: Question,
    pub meaning: Question,
    pub correctness: Question,
    pub learning_value: Question,
    /// Solver isolation, when solver trajectories were given: a leak refuses admission.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<IsolationReport>,
}

/// Recorded evidence read from the evidence directory.
struct Evidence {
    /// (file name relative to the evidence dir, parsed report)
    replays: Vec<(String, Value)>,
    counterfactuals: Vec<(String, Value)>,
    review: Option<Value>,
    attempts: Option<Vec<bool>>,
}

/// Resolves a path named in task.json's `field`: relative, no `..`, inside `base`.
fn inside(base: &Path, field: &str, rel: &str, file: &Path) -> Result<PathBuf, AdmissionError> {
    let p = Path::new(rel);
    if rel.is_empty() || p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(invalid(file, 1, format!("{field}: {rel:?} must be a relative path inside the task's directory")));
    }
    Ok(base.join(p))
}

/// task.json read and checked, with its expectation loaded and its witness located.
pub struct LoadedTask {
    pub task: Task,
    pub expect: Expectation,
    pub witness_path: Option<PathBuf>,
}

/// Reads and validates task.json and loads its expectation.
pub fn load_task(task_path: &Path) -> Result<LoadedTask, AdmissionError> {
    let bytes = fs::read(task_path).map_err(io(task_path))?;
    let task: Task = serde_json::from_slice(&bytes).map_err(|e| invalid(task_path, e.line() as u64, e.to_string()))?;
    let lv = &task.learning_value;
    if !(0.0..=1.0).contains(&lv.band[0]) || !(0.0..=1.0).contains(&lv.band[1]) || lv.band[0] > lv.band[1] {
        return Err(invalid(task_path, 1, "learning_value.band: want [low, high] with 0 <= low <= high <= 1"));
    }
    if !(lv.confidence > 0.0 && lv.confidence < 1.0) {
        return Err(invalid(task_path, 1, "learning_value.confidence: want a number strictly between 0 and 1"));
    }
    if lv.criterion != "rate" && lv.criterion != "interval" {
        return Err(invalid(task_path, 1, "learning_value.criterion: want \"rate\" or \"interval\""));
    }
    let base = task_path.parent().unwrap_or(Path::new("."));
    let expect = Expectation::load(&inside(base, "expect", &task.expect, task_path)?)?;
    let witness_path = task.witness.as_deref().map(|w| inside(base, "witness", w, task_path)).transpose()?;
    Ok(LoadedTask { task, expect, witness_path })
}

/// Reads task.json and the evidence directory and answers the four questions.
pub fn admit(task_path: &Path, evidence_dir: &Path) -> Result<AdmissionRecord, AdmissionError> {
    admit_with_solvers(task_path, evidence_dir, None)
}

/// [`admit`], and with solver trajectories also solver isolation: a task whose solvers saw
/// witness-only material or expected values is not admitted.
pub fn admit_with_solvers(
    task_path: &Path,
    evidence_dir: &Path,
    solvers: Option<&[Trajectory]>,
) -> Result<AdmissionRecord, AdmissionError> {
    let LoadedTask { task, expect, .. } = load_task(task_path)?;
    let isolation = solvers.map(|s| isolation(task_path, s)).transpose()?;
    let ev = read_evidence(evidence_dir)?;
    let feasibility = feasibility(&ev, &expect.sha256);
    let meaning = meaning(&ev);
    let correctness = correctness(&ev, &expect.sha256);
    let learning_value = learning_value(&ev, &task.learning_value);
    let admitted = [&feasibility, &meaning, &correctness, &learning_value].iter().all(|q| q.answer == Answer::Yes)
        && isolation.as_ref().is_none_or(|i| i.isolated);
    Ok(AdmissionRecord {
        kind: ADMISSION_KIND.into(),
        task: json!({"id": task.id, "path": task_path.display().to_string(), "instruction": task.instruction,
                     "expect": {"path": task.expect, "sha256": expect.sha256}}),
        evidence_dir: evidence_dir.display().to_string(),
        admitted,
        feasibility,
        meaning,
        correctness,
        learning_value,
        isolation,
    })
}

fn read_reports(dir: &Path, kind: &str) -> Result<Vec<(String, Value)>, AdmissionError> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    let mut names: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    for p in names {
        let bytes = fs::read(&p).map_err(io(&p))?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| invalid(&p, e.line() as u64, e.to_string()))?;
        if v.get("kind").and_then(Value::as_str) != Some(kind) {
            return Err(invalid(&p, 1, format!("kind: want {kind:?}")));
        }
        let rel = format!(
            "{}/{}",
            dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        );
        out.push((rel, v));
    }
    Ok(out)
}

fn read_evidence(dir: &Path) -> Result<Evidence, AdmissionError> {
    if !dir.is_dir() {
        let error = std::io::Error::new(std::io::ErrorKind::NotFound, "no such evidence directory");
        return Err(AdmissionError::Io { path: dir.to_path_buf(), error });
    }
    let replays = read_reports(&dir.join("replays"), crate::replay::REPLAY_KIND)?;
    let counterfactuals = read_reports(&dir.join("counterfactuals"), crate::counterfactual::COUNTERFACTUAL_KIND)?;
    let review_path = dir.join("review.json");
    let review = if review_path.is_file() {
        let bytes = fs::read(&review_path).map_err(io(&review_path))?;
        Some(serde_json::from_slice(&bytes).map_err(|e| invalid(&review_path, e.line() as u64, e.to_string()))?)
    } else {
        None
    };
    let attempts_path = dir.join("attempts.jsonl");
    let attempts = if attempts_path.is_file() { Some(read_attempts(&attempts_path)?) } else { None };
    Ok(Evidence { replays, counterfactuals, review, attempts })
}

fn read_attempts(path: &Path) -> Result<Vec<bool>, AdmissionError> {
    let text = fs::read_to_string(path).map_err(io(path))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let n = i as u64 + 1;
        let v: Value = serde_json::from_str(line).map_err(|e| invalid(path, n, e.to_string()))?;
        let passed =
            v.get("passed").and_then(Value::as_bool).ok_or_else(|| invalid(path, n, "passed: want true or false"))?;
        out.push(passed);
    }
    Ok(out)
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Reports that checked this task's expectation, and a note for those that did not.
fn relevant<'a>(reports: &'a [(String, Value)], sha: &str, evidence: &mut Vec<Value>) -> Vec<&'a (String, Value)> {
    let mut out = Vec::new();
    for r in reports {
        if str_of(&r.1, "expect_sha256") == sha {
            out.push(r);
        } else {
            evidence.push(
                json!({"file": r.0, "ignored": "checked a different expectation (expect_sha256 differs) or none"}),
            );
        }
    }
    out
}

fn checks_pass(report: &Value) -> bool {
    match report.get("checks").and_then(Value::as_array) {
        Some(cs) if !cs.is_empty() => cs.iter().all(|c| c.get("passed") == Some(&Value::Bool(true))),
        _ => false,
    }
}

/// Feasibility: at least one positive replay (reset discipline kept, the state check
/// passes) reaches the outcome through the environment's own actions.
fn feasibility(ev: &Evidence, sha: &str) -> Question {
    let mut evidence = Vec::new();
    let reports = relevant(&ev.replays, sha, &mut evidence);
    if reports.is_empty() {
        return Question::new(Answer::Unanswered, "no replay report for this task's expectation", evidence);
    }
    let mut positive = 0;
    for (file, r) in &reports {
        let reset_ok = str_of(r, "reset") == "match";
        let check_ok = checks_pass(r);
        if reset_ok && check_ok {
            positive += 1;
        }
        evidence.push(json!({"file": file, "trajectory": r["trajectory"]["id"], "reset": r["reset"],
                             "state_check_passes": check_ok, "positive": reset_ok && check_ok}));
    }
    if positive > 0 {
        Question::new(
            Answer::Yes,
            format!("{positive} of {} replay reports reach the outcome from the recorded reset state", reports.len()),
            evidence,
        )
    } else {
        Question::new(Answer::No, "no replay reaches the outcome from the recorded reset state", evidence)
    }
}

/// Meaning: an explicit review annotation; absent means unanswered, never passed.
fn meaning(ev: &Evidence) -> Question {
    let Some(review) = &ev.review else {
        return Question::new(Answer::Unanswered, "no review annotation (review.json)", Vec::new());
    };
    let evidence = vec![json!({"file": "review.json", "review": review})];
    let reviewer = str_of(review, "reviewer");
    let denotes = review.get("instruction_denotes_outcome").and_then(Value::as_bool);
    let worth = review.get("outcome_worth_expressing").and_then(Value::as_bool);
    match (reviewer.is_empty(), denotes, worth) {
        (true, _, _) => Question::new(Answer::Unanswered, "review.json names no reviewer", evidence),
        (_, Some(true), Some(true)) => Question::new(
            Answer::Yes,
            format!("{reviewer}: the outcome is worth expressing and the instruction denotes it"),
            evidence,
        ),
        (_, Some(false), _) => {
            Question::new(Answer::No, format!("{reviewer}: the instruction does not denote the outcome"), evidence)
        }
        (_, _, Some(false)) => {
            Question::new(Answer::No, format!("{reviewer}: the outcome is not worth expressing"), evidence)
        }
        _ => Question::new(
            Answer::Unanswered,
            "review.json lacks a boolean instruction_denotes_outcome or outcome_worth_expressing",
            evidence,
        ),
    }
}

/// Correctness: the state check passes on every positive replay (which must be
/// reproducible and end in the recorded final state), accepted alternate routes pass it,
/// and deleting each claimed essential action makes it fail.
fn correctness(ev: &Evidence, sha: &str) -> Question {
    let mut evidence = Vec::new();
    let replays = relevant(&ev.replays, sha, &mut evidence);
    let counterfactuals = relevant(&ev.counterfactuals, sha, &mut evidence);
    let mut problems = Vec::new();
    for (file, r) in &replays {
        let ok = checks_pass(r);
        let reproducible = r.get("reproducible") == Some(&Value::Bool(true));
        let final_ok = str_of(r, "final") == "match";
        evidence
            .push(json!({"file": file, "state_check_passes": ok, "reproducible": reproducible, "final": r["final"]}));
        if !ok {
            problems.push(format!("{file}: the state check fails on a replay"));
        }
        if !reproducible {
            problems.push(format!("{file}: replays disagree"));
        }
        if !final_ok {
            problems.push(format!(
                "{file}: final state {} the record",
                if str_of(r, "final") == "unrecorded" { "not compared with" } else { "differs from" }
            ));
        }
    }
    let mut claims = 0;
    for (file, c) in &counterfactuals {
        let full_ok = c["full"]["check"]["passed"] == Value::Bool(true);
        let preds = c.get("predecessors").and_then(Value::as_array).cloned().unwrap_or_default();
        let alts = c.get("alternates").and_then(Value::as_array).cloned().unwrap_or_default();
        claims += preds.len();
        evidence.push(json!({"file": file, "full_replay_passes": full_ok, "predecessors": preds.iter().map(|p| json!({"action": p["action"], "holds": p["holds"]})).collect::<Vec<_>>(),
                             "alternates": alts.iter().map(|a| json!({"trajectory": a["trajectory"], "accepted": a["accepted"]})).collect::<Vec<_>>()}));
        if !full_ok {
            problems.push(format!("{file}: the full replay does not pass the state check"));
        }
        for p in preds.iter().filter(|p| p["holds"] != Value::Bool(true)) {
            problems.push(format!(
                "{file}: deleting claimed essential action {} does not make the check fail",
                p["action"]
            ));
        }
        for a in alts.iter().filter(|a| a["accepted"] != Value::Bool(true)) {
            problems.push(format!("{file}: alternate route {} does not pass the check", str_of(a, "trajectory")));
        }
    }
    if !problems.is_empty() {
        return Question::new(Answer::No, problems.join("; "), evidence);
    }
    if replays.is_empty() {
        return Question::new(Answer::Unanswered, "no replay report for this task's expectation", evidence);
    }
    if claims == 0 {
        return Question::new(Answer::Unanswered, "no deletion counterfactual of a claimed essential action", evidence);
    }
    Question::new(
        Answer::Yes,
        format!(
            "the state check passes on {} replay reports; {claims} essential-action deletions make it fail",
            replays.len()
        ),
        evidence,
    )
}

/// Learning value: the solver pass rate (or its Wilson interval) inside the band.
fn learning_value(ev: &Evidence, cfg: &LearningValueConfig) -> Question {
    let Some(attempts) = &ev.attempts else {
        return Question::new(Answer::Unanswered, "no solver attempts (attempts.jsonl)", Vec::new());
    };
    let k = attempts.len() as u64;
    let s = attempts.iter().filter(|p| **p).count() as u64;
    let evidence = vec![json!({"file": "attempts.jsonl", "attempts": k, "passes": s})];
    if k < cfg.min_attempts.max(1) {
        return Question::new(
            Answer::Unanswered,
            format!("{k} attempts, at least {} needed", cfg.min_attempts.max(1)),
            evidence,
        );
    }
    let rate = s as f64 / k as f64;
    let (lo, hi) = wilson(s, k, cfg.confidence);
    let within =
        |x: f64| if cfg.inclusive { x >= cfg.band[0] && x <= cfg.band[1] } else { x > cfg.band[0] && x < cfg.band[1] };
    let ok = if cfg.criterion == "interval" { within(lo) && within(hi) } else { within(rate) };
    let (open, close) = if cfg.inclusive { ('[', ']') } else { ('(', ')') };
    let band = format!("{open}{}, {}{close}", cfg.band[0], cfg.band[1]);
    let what = if cfg.criterion == "interval" { "Wilson interval" } else { "pass rate" };
    let reason = format!(
        "{s}/{k} attempts passed (rate {rate:.3}, Wilson {:.0}% [{lo:.3}, {hi:.3}]): {what} {} band {band}",
        cfg.confidence * 100.0,
        if ok { "inside" } else { "outside" }
    );
    let mut q = Question::new(if ok { Answer::Yes } else { Answer::No }, reason, evidence);
    q.figures = Some(json!({"passes": s, "attempts": k, "rate": rate,
                            "wilson": {"low": lo, "high": hi, "confidence": cfg.confidence},
                            "band": {"low": cfg.band[0], "high": cfg.band[1], "inclusive": cfg.inclusive},
                            "criterion": cfg.criterion}));
    q
}

/// Wilson score interval for `s` successes in `k` trials at `confidence`.
pub fn wilson(s: u64, k: u64, confidence: f64) -> (f64, f64) {
    if k == 0 {
        return (0.0, 1.0);
    }
    let z = normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    let n = k as f64;
    let p = s as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// Quantile of the standard normal distribution (Acklam's rational approximation,
/// relative error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let plow = 0.02425;
    if p < plow {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - plow {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    }
}

/// Human form of an admission record.
pub fn render_human(r: &AdmissionRecord) -> String {
    let id = r.task.get("id").and_then(Value::as_str).unwrap_or("");
    let mut s = format!("task {id}: {}\n", if r.admitted { "ADMITTED" } else { "NOT ADMITTED" });
    let word = |a: Answer| match a {
        Answer::Yes => "yes",
        Answer::No => "no",
        Answer::Unanswered => "unanswered",
    };
    for (name, q) in [
        ("feasibility", &r.feasibility),
        ("meaning", &r.meaning),
        ("correctness", &r.correctness),
        ("learning value", &r.learning_value),
    ] {
        s += &format!("  {name}: {} — {}\n", word(q.answer), q.reason);
    }
    if let Some(i) = &r.isolation {
        s += &format!("  isolation: {} — {}\n{}", if i.isolated { "yes" } else { "no" }, summary(i), render_leaks(i));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_interval_matches_the_textbook_figures() {
        // 95 %: z = 1.959964; 3 of 10 gives [0.1078, 0.6032] (Newcombe 1998, table I style).
        let (lo, hi) = wilson(3, 10, 0.95);
        assert_eq!((format!("{lo:.4}"), format!("{hi:.4}")), ("0.1078".to_string(), "0.6032".to_string()));
        let (lo, hi) = wilson(10, 10, 0.95);
        assert_eq!((format!("{lo:.4}"), format!("{hi:.4}")), ("0.7225".to_string(), "1.0000".to_string()));
        let (lo, hi) = wilson(0, 10, 0.95);
        assert_eq!((format!("{lo:.4}"), format!("{hi:.4}")), ("0.0000".to_string(), "0.2775".to_string()));
        assert_eq!(format!("{:.7}", normal_quantile(0.975)), "1.9599640");
        assert_eq!(format!("{:.7}", normal_quantile(0.995)), "2.5758293");
    }
}
