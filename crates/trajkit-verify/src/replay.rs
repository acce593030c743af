//! Fresh-process replay of a trajectory's actions against a live environment.
//!
//! The actions are the tool calls of the trajectory's own assistant steps, in order (copied
//! context and interleaved subagent steps excluded), each sent as `step {name, arguments}`.
//! Every replay starts a fresh environment process; its state is captured after reset and
//! after every action; the reset state must equal the recorded initial digest, the final
//! state the recorded final digest, and all replays must agree step by step.

use std::io::BufRead;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use trajkit_model::{Role, Trajectory};

use crate::env::{Action, EnvError, EnvProcess, EnvSpec};
use crate::state::check::{check, CheckReport, Expectation};
use crate::state::{capture, IgnoreSpec, Side, StateError, Store};

/// Kind of a replay report.
pub const REPLAY_KIND: &str = "trajkit-replay/1";

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("{path}:{line}: {message}")]
    Input { path: String, line: u64, message: String },
    #[error("{0}")]
    Usage(String),
}

/// One action of a trajectory: where it was recorded and what was observed then.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionRef {
    /// 1-based position among the trajectory's actions.
    pub index: usize,
    /// 0-based index of the assistant step that made the call.
    pub step: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub name: String,
    pub arguments: Value,
    /// The recorded tool result content for this call (linked by call id), if any.
    #[serde(skip)]
    pub recorded: Option<Value>,
}

impl ActionRef {
    pub fn action(&self) -> Action {
        Action { name: self.name.clone(), arguments: self.arguments.clone() }
    }

    /// `action 2 (create_contact)`.
    pub fn label(&self) -> String {
        format!("action {} ({})", self.index, self.name)
    }
}

/// The actions of a trajectory, in order.
pub fn actions(t: &Trajectory) -> Vec<ActionRef> {
    let mut out = Vec::new();
    for (i, step) in t.steps.iter().enumerate() {
        if step.role != Role::Assistant || step.copied_context || step.subagent {
            continue;
        }
        for call in &step.tool_calls {
            let recorded = call.id.as_ref().and_then(|id| recorded_result(t, id));
            out.push(ActionRef {
                index: out.len() + 1,
                step: i,
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.value().clone(),
                recorded,
            });
        }
    }
    out
}

fn recorded_result(t: &Trajectory, call_id: &str) -> Option<Value> {
    t.steps
        .iter()
        .filter(|s| !s.copied_context && !s.subagent)
        .flat_map(|s| &s.tool_results)
        .find(|r| r.call_id.as_deref() == Some(call_id))
        .and_then(|r| r.content.as_deref().cloned())
}

/// Whether a replayed observation equals a recorded tool result: equal JSON, or the
/// recorded text (a string, or text content parts joined) equals the observation's text
/// (a string as is, anything else as compact JSON).
pub fn observation_matches(observation: &Value, recorded: &Value) -> bool {
    if observation == recorded {
        return true;
    }
    let recorded_text = match recorded {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => parts
            .iter()
            .map(|p| p.get("text").and_then(Value::as_str).map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(|t| t.concat()),
        _ => None,
    };
    let observed_text = match observation {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    recorded_text.is_some_and(|t| t == observed_text)
}

/// Reads canonical trajectory records: one JSON document, or JSON Lines.
pub fn read_trajectories(mut input: impl BufRead, path: &str) -> Result<Vec<Trajectory>, ReplayError> {
    let mut text = String::new();
    input.read_to_string(&mut text).map_err(|e| ReplayError::Input {
        path: path.into(),
        line: 0,
        message: e.to_string(),
    })?;
    if let Ok(t) = serde_json::from_str::<Trajectory>(&text) {
        return Ok(vec![t]);
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let t = serde_json::from_str::<Trajectory>(line).map_err(|e| ReplayError::Input {
            path: path.into(),
            line: i as u64 + 1,
            message: format!("not a canonical trajectory record: {e}"),
        })?;
        out.push(t);
    }
    if out.is_empty() {
        return Err(ReplayError::Input { path: path.into(), line: 1, message: "no trajectory record".into() });
    }
    Ok(out)
}

/// Picks the trajectory with `id`, or the only one.
pub fn select(mut trajectories: Vec<Trajectory>, id: Option<&str>, path: &str) -> Result<Trajectory, ReplayError> {
    match id {
        Some(id) => trajectories
            .into_iter()
            .find(|t| t.id == id)
            .ok_or_else(|| ReplayError::Usage(format!("{path}: no trajectory with id {id}"))),
        None if trajectories.len() == 1 => Ok(trajectories.remove(0)),
        None => Err(ReplayError::Usage(format!("{path}: {} trajectories; choose one with --id", trajectories.len()))),
    }
}

/// Where replays run and where their states go.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    pub env: EnvSpec,
    pub seed: u64,
    pub store: Store,
    pub ignore: IgnoreSpec,
}

/// One replay: the state after reset and after every action.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub reset_state: Value,
    pub initial: String,
    pub steps: Vec<StepRecord>,
}

/// One replayed action.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// 1-based index of the action in the trajectory.
    pub action: usize,
    pub observation: Value,
    /// The environment's own state token.
    pub env_state: Value,
    /// trajkit state digest after the action.
    pub state: String,
}

impl Run {
    /// The state digest after the last action (the reset state when there is none).
    pub fn final_state(&self) -> &str {
        self.steps.last().map(|s| s.state.as_str()).unwrap_or(&self.initial)
    }

    /// The state digest before step `i` (0-based) of this run.
    pub fn before(&self, i: usize) -> &str {
        if i == 0 {
            &self.initial
        } else {
            &self.steps[i - 1].state
        }
    }
}

fn capture_env(env: &mut EnvProcess, opts: &ReplayOptions) -> Result<String, ReplayError> {
    let paths: Vec<PathBuf> = env.capture()?;
    Ok(capture(&paths, &opts.ignore, Some(&opts.store))?.digest)
}

/// Replays `actions` in a fresh environment process.
pub fn run(actions: &[&ActionRef], opts: &ReplayOptions) -> Result<Run, ReplayError> {
    let mut env = EnvProcess::spawn(&opts.env)?;
    let reset_state = env.reset(opts.seed)?;
    let initial = capture_env(&mut env, opts)?;
    let mut steps = Vec::with_capacity(actions.len());
    for a in actions {
        let reply = env.step(&a.action(), &format!("step for {}", a.label()))?;
        let state = capture_env(&mut env, opts)?;
        steps.push(StepRecord { action: a.index, observation: reply.observation, env_state: reply.state, state });
    }
    env.close()?;
    Ok(Run { reset_state, initial, steps })
}

/// How a replayed digest compares with the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    Match,
    Mismatch,
    Unrecorded,
}

/// The first point where replays (or a replay and the record) part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    /// 1-based action index; 0 is the reset.
    pub action: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The replay (1-based) that differs.
    pub replay: usize,
    /// `replay 1` or `record`.
    pub against: String,
    /// What differs: `observation`, `state`, `env_state`.
    pub differs: Vec<String>,
    pub expected: Value,
    pub got: Value,
}

impl Divergence {
    pub fn describe(&self) -> String {
        let at = match &self.name {
            Some(n) => format!("action {} ({n})", self.action),
            None => "reset".to_string(),
        };
        format!("replay {} differs from {} at {at}: {} differs", self.replay, self.against, self.differs.join(", "))
    }
}

/// The replay report (`trajkit replay --json`; evidence for `trajkit admit`).
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub kind: String,
    pub trajectory: Value,
    pub env: String,
    pub seed: u64,
    pub times: usize,
    pub actions: Vec<ActionRef>,
    pub recorded: Value,
    pub runs: Vec<Value>,
    pub reset: Agreement,
    #[serde(rename = "final")]
    pub final_state: Agreement,
    pub reproducible: bool,
    pub divergence: Option<Divergence>,
    /// The state check of each replay (reset state -> final state), with `--expect`.
    pub checks: Option<Vec<Value>>,
    pub expect_sha256: Option<String>,
    pub findings: Vec<String>,
    pub verdict: String,
}

fn sha(v: &Value) -> String {
    crate::state::value::hex(&Sha256::digest(serde_json::to_vec(v).unwrap_or_default()))
}

/// Short form of a digest for messages.
pub fn short(d: &str) -> &str {
    d.get(..12).unwrap_or(d)
}

/// Replays `t` `times` times, each in a fresh process, and compares.
pub fn replay(
    t: &Trajectory,
    opts: &ReplayOptions,
    times: usize,
    expect: Option<&Expectation>,
) -> Result<ReplayReport, ReplayError> {
    if times == 0 {
        return Err(ReplayError::Usage("--times must be at least 1".into()));
    }
    let acts = actions(t);
    let refs: Vec<&ActionRef> = acts.iter().collect();
    let mut runs = Vec::with_capacity(times);
    for _ in 0..times {
        runs.push(run(&refs, opts)?);
    }
    let checks = match expect {
        Some(e) => Some(
            runs.iter()
                .map(|r| check_run(e, &opts.store, &r.initial, r.final_state()))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None => None,
    };
    Ok(assemble(t, opts, &acts, &runs, checks, expect))
}

/// Checks a run's change (reset state -> final state) against an expectation.
pub fn check_run(exp: &Expectation, store: &Store, start: &str, end: &str) -> Result<CheckReport, StateError> {
    check(exp, &Side::stored(store, start)?, &Side::stored(store, end)?)
}

fn agreement(recorded: Option<&str>, got: impl Iterator<Item = String>) -> Agreement {
    match recorded {
        None => Agreement::Unrecorded,
        Some(r) => {
            if got.into_iter().all(|g| g == r) {
                Agreement::Match
            } else {
                Agreement::Mismatch
            }
        }
    }
}

fn assemble(
    t: &Trajectory,
    opts: &ReplayOptions,
    acts: &[ActionRef],
    runs: &[Run],
    checks: Option<Vec<CheckReport>>,
    expect: Option<&Expectation>,
) -> ReplayReport {
    let rec_initial = t.state.as_ref().and_then(|s| s.initial.clone());
    let rec_final = t.state.as_ref().and_then(|s| s.final_state.clone());
    let reset = agreement(rec_initial.as_deref(), runs.iter().map(|r| r.initial.clone()));
    let final_state = agreement(rec_final.as_deref(), runs.iter().map(|r| r.final_state().to_string()));
    let divergence = first_divergence(acts, runs);
    let reproducible = runs.iter().all(|r| r == &runs[0] || same_trace(r, &runs[0]));
    let mut findings = Vec::new();
    match (reset, &rec_initial) {
        (Agreement::Unrecorded, _) => {
            findings.push("the trajectory records no initial state digest: reset discipline not checked".into())
        }
        (Agreement::Mismatch, Some(rec)) => {
            for (i, r) in runs.iter().enumerate().filter(|(_, r)| &r.initial != rec) {
                findings.push(format!(
                    "reset discipline violated: replay {} reset to state {}, the trajectory recorded initial state {}",
                    i + 1,
                    short(&r.initial),
                    short(rec)
                ));
            }
        }
        _ => {}
    }
    match (final_state, &rec_final) {
        (Agreement::Unrecorded, _) => {
            findings.push("the trajectory records no final state digest: final state not compared".into())
        }
        (Agreement::Mismatch, Some(rec)) => {
            for (i, r) in runs.iter().enumerate().filter(|(_, r)| r.final_state() != rec) {
                findings.push(format!(
                    "final state of replay {} is {}, the trajectory recorded {}",
                    i + 1,
                    short(r.final_state()),
                    short(rec)
                ));
            }
        }
        _ => {}
    }
    if let Some(d) = &divergence {
        findings.push(if d.against == "record" {
            format!("{}: the observation differs from the recorded tool result", d.describe())
        } else {
            format!("replays disagree: {}", d.describe())
        });
    }
    if let Some(cs) = &checks {
        for (i, c) in cs.iter().enumerate() {
            for f in c.failures() {
                findings.push(format!("replay {}: state check failed: {f}", i + 1));
            }
        }
    }
    let verdict = if findings.is_empty() { "pass" } else { "fail" };
    ReplayReport {
        kind: REPLAY_KIND.into(),
        trajectory: json!({"id": t.id, "path": t.provenance.path, "task_key": t.task.key}),
        env: opts.env.command.clone(),
        seed: opts.seed,
        times: runs.len(),
        actions: acts.to_vec(),
        recorded: json!({"initial": rec_initial, "final": rec_final}),
        runs: runs.iter().map(run_json).collect(),
        reset,
        final_state,
        reproducible,
        divergence,
        checks: checks.map(|cs| cs.iter().map(CheckReport::to_json).collect()),
        expect_sha256: expect.map(|e| e.sha256.clone()),
        findings,
        verdict: verdict.into(),
    }
}

fn same_trace(a: &Run, b: &Run) -> bool {
    a.initial == b.initial && a.steps == b.steps
}

fn run_json(r: &Run) -> Value {
    let steps: Vec<Value> = r
        .steps
        .iter()
        .map(|s| json!({"action": s.action, "state": s.state, "observation_sha256": sha(&s.observation)}))
        .collect();
    json!({"initial": r.initial, "final": r.final_state(), "steps": steps})
}

/// The first action at which a replay differs from replay 1 (observation, state or env
/// state) or from the recorded tool result; at one action, disagreement between replays
/// is reported before disagreement with the record.
pub fn first_divergence(acts: &[ActionRef], runs: &[Run]) -> Option<Divergence> {
    let first = runs.first()?;
    for (r, run) in runs.iter().enumerate().skip(1) {
        if run.initial != first.initial {
            return Some(Divergence {
                action: 0,
                name: None,
                replay: r + 1,
                against: "replay 1".into(),
                differs: vec!["state".into()],
                expected: json!({"state": first.initial}),
                got: json!({"state": run.initial}),
            });
        }
    }
    for (i, a) in acts.iter().enumerate() {
        for (r, run) in runs.iter().enumerate().skip(1) {
            if let Some(d) = step_difference(&first.steps[i], &run.steps[i]) {
                let (differs, expected, got) = d;
                return Some(Divergence {
                    action: a.index,
                    name: Some(a.name.clone()),
                    replay: r + 1,
                    against: "replay 1".into(),
                    differs,
                    expected,
                    got,
                });
            }
        }
        if let Some(rec) = &a.recorded {
            for (r, run) in runs.iter().enumerate() {
                let obs = &run.steps[i].observation;
                if !observation_matches(obs, rec) {
                    return Some(Divergence {
                        action: a.index,
                        name: Some(a.name.clone()),
                        replay: r + 1,
                        against: "record".into(),
                        differs: vec!["observation".into()],
                        expected: json!({"observation": rec}),
                        got: json!({"observation": obs}),
                    });
                }
            }
        }
    }
    None
}

type Difference = (Vec<String>, Value, Value);

fn step_difference(a: &StepRecord, b: &StepRecord) -> Option<Difference> {
    let mut differs = Vec::new();
    let mut expected = serde_json::Map::new();
    let mut got = serde_json::Map::new();
    let mut note = |name: &str, x: Value, y: Value| {
        differs.push(name.to_string());
        expected.insert(name.into(), x);
        got.insert(name.into(), y);
    };
    if a.observation != b.observation {
        note("observation", a.observation.clone(), b.observation.clone());
    }
    if a.state != b.state {
        note("state", json!(a.state), json!(b.state));
    }
    if a.env_state != b.env_state {
        note("env_state", a.env_state.clone(), b.env_state.clone());
    }
    (!differs.is_empty()).then_some((differs, Value::Object(expected), Value::Object(got)))
}

/// Human form of a replay report.
pub fn render_human(r: &ReplayReport) -> String {
    let mut s = String::new();
    let id = r.trajectory.get("id").and_then(Value::as_str).unwrap_or("");
    s += &format!(
        "trajectory {id}: {} actions, {} replays with `{}` (seed {})\n",
        r.actions.len(),
        r.times,
        r.env,
        r.seed
    );
    for (i, run) in r.runs.iter().enumerate() {
        let get = |k: &str| run.get(k).and_then(Value::as_str).map(short).unwrap_or("").to_string();
        s += &format!("replay {}: reset {} -> final {}\n", i + 1, get("initial"), get("final"));
    }
    let word = |a: Agreement| match a {
        Agreement::Match => "matches the record",
        Agreement::Mismatch => "DIFFERS from the record",
        Agreement::Unrecorded => "not recorded",
    };
    s += &format!("reset state: {}\nfinal state: {}\n", word(r.reset), word(r.final_state));
    s += &format!("reproducible: {}\n", if r.reproducible { "yes" } else { "no" });
    if let Some(cs) = &r.checks {
        let passed = cs.iter().filter(|c| c.get("passed") == Some(&Value::Bool(true))).count();
        s += &format!("state check: {passed}/{} replays pass\n", cs.len());
    }
    for f in &r.findings {
        s += &format!("finding: {f}\n");
    }
    s += &format!("verdict: {}\n", r.verdict);
    s
}
