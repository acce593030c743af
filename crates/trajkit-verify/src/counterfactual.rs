//! Deletion counterfactuals: replay a trajectory without each of its actions in turn and
//! see which durable effects disappear (edges action -> effect), which later actions'
//! effects change (strong edges action -> action), whether claimed predecessors of the
//! outcome are necessary for the state check, and whether alternate routes pass it.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{json, Value};
use trajkit_model::Trajectory;

use crate::replay::{actions, run, short, ActionRef, Agreement, ReplayError, ReplayOptions, Run};
use crate::state::check::{CheckReport, Expectation};
use crate::state::diff::{diff, row_label, CollectDiff, DiffSink, RowChange, SchemaChange, Side};
use crate::state::{StateError, Store};

/// Kind of a counterfactual report.
pub const COUNTERFACTUAL_KIND: &str = "trajkit-counterfactual/1";

/// One durable effect of the full replay: a row inserted, deleted or updated between the
/// reset state and the final state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Effect {
    /// `table.row[key]` (with `db:` when there are several databases).
    pub id: String,
    pub change: String,
    pub db: String,
    pub table: String,
    pub key: Value,
}

/// Collects the row effects (and schema changes) of a diff.
#[derive(Default)]
struct EffectSink {
    show_db: bool,
    effects: Vec<Effect>,
}

impl DiffSink for EffectSink {
    fn schema(&mut self, db: &str, c: &SchemaChange) {
        let prefix = if self.show_db { format!("{db}:") } else { String::new() };
        self.effects.push(Effect {
            id: format!("schema {}{} {}", prefix, c.object, c.name),
            change: c.change().into(),
            db: db.into(),
            table: c.name.clone(),
            key: Value::Null,
        });
    }

    fn row(&mut self, db: &str, table: &str, c: &RowChange<'_>) {
        self.effects.push(Effect {
            id: row_label(db, table, c, self.show_db),
            change: c.kind.as_str().into(),
            db: db.into(),
            table: table.into(),
            key: c.key_json(),
        });
    }
}

fn effects(store: &Store, a: &str, b: &str, show_db: bool) -> Result<Vec<Effect>, StateError> {
    let mut sink = EffectSink { show_db, effects: Vec::new() };
    diff(&Side::stored(store, a)?, &Side::stored(store, b)?, &mut sink)?;
    Ok(sink.effects)
}

/// The full change list between two stored states (what an action did).
fn change_list(store: &Store, a: &str, b: &str) -> Result<Vec<Value>, StateError> {
    if a == b {
        return Ok(Vec::new());
    }
    let mut sink = CollectDiff::default();
    diff(&Side::stored(store, a)?, &Side::stored(store, b)?, &mut sink)?;
    Ok(sink.changes)
}

/// An action -> effect edge: deleting the action loses (back to the reset value) or
/// alters the effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edge {
    pub action: usize,
    pub effect: String,
    /// `lost` or `altered`.
    pub kind: String,
}

/// Deleting action `from` changes what action `to` does to the state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StrongEdge {
    pub from: usize,
    pub to: usize,
    /// The changes `to` makes in the full replay and without `from`.
    pub effect_full: Vec<Value>,
    pub effect_without: Vec<Value>,
    pub observation_changed: bool,
}

/// The replay without one action.
#[derive(Debug, Clone, Serialize)]
pub struct Deletion {
    pub action: usize,
    pub name: String,
    #[serde(rename = "final")]
    pub final_state: String,
    /// Deleting the action changes nothing in the final state.
    pub trivial: bool,
    pub lost: Vec<String>,
    pub altered: Vec<String>,
    /// Effects that appear only without the action.
    pub new: Vec<String>,
    pub check: Option<Value>,
    /// With `--expect`: the state check fails without this action.
    pub necessary: Option<bool>,
}

/// A claimed predecessor of the outcome: omitting it must make the state check fail.
#[derive(Debug, Clone, Serialize)]
pub struct PredecessorClaim {
    pub action: usize,
    pub name: String,
    pub omission_fails_check: bool,
    pub holds: bool,
}

/// Another trajectory's route to the outcome.
#[derive(Debug, Clone, Serialize)]
pub struct AlternateRoute {
    pub trajectory: String,
    pub path: String,
    pub actions: usize,
    pub initial: String,
    #[serde(rename = "final")]
    pub final_state: String,
    pub reset: Agreement,
    pub same_final_as_reference: bool,
    pub check: Value,
    pub accepted: bool,
}

/// The counterfactual report (`trajkit counterfactual --json`; evidence for `trajkit admit`).
#[derive(Debug, Clone, Serialize)]
pub struct CounterfactualReport {
    pub kind: String,
    pub trajectory: Value,
    pub env: String,
    pub seed: u64,
    pub actions: Vec<Value>,
    pub full: Value,
    pub effects: Vec<Effect>,
    pub deletions: Vec<Deletion>,
    pub edges: Vec<Edge>,
    pub strong_edges: Vec<StrongEdge>,
    pub predecessors: Vec<PredecessorClaim>,
    pub alternates: Vec<AlternateRoute>,
    pub expect_sha256: Option<String>,
    pub findings: Vec<String>,
    pub verdict: String,
}

/// What to claim and compare besides the deletions.
#[derive(Debug, Clone, Default)]
pub struct Claims<'a> {
    pub expect: Option<&'a Expectation>,
    /// 1-based indexes of actions claimed to be predecessors of the outcome.
    pub predecessors: Vec<usize>,
    pub alternates: Vec<&'a Trajectory>,
}

fn check_between(exp: &Expectation, store: &Store, a: &str, b: &str) -> Result<CheckReport, StateError> {
    crate::replay::check_run(exp, store, a, b)
}

/// Runs the full replay (twice, to make sure the environment is reproducible), one replay
/// per deleted action, and one per alternate route.
pub fn counterfactual(
    t: &Trajectory,
    opts: &ReplayOptions,
    claims: &Claims<'_>,
) -> Result<CounterfactualReport, ReplayError> {
    let acts = actions(t);
    for &c in &claims.predecessors {
        if c == 0 || c > acts.len() {
            return Err(ReplayError::Usage(format!("--claim {c}: the trajectory has actions 1 to {}", acts.len())));
        }
    }
    if !claims.predecessors.is_empty() && claims.expect.is_none() {
        return Err(ReplayError::Usage(
            "a predecessor claim needs --expect (the state check it is necessary for)".into(),
        ));
    }
    let all: Vec<&ActionRef> = acts.iter().collect();
    let full = run(&all, opts)?;
    let again = run(&all, opts)?;
    let mut report = CounterfactualReport {
        kind: COUNTERFACTUAL_KIND.into(),
        trajectory: json!({"id": t.id, "path": t.provenance.path, "task_key": t.task.key}),
        env: opts.env.command.clone(),
        seed: opts.seed,
        actions: Vec::new(),
        full: Value::Null,
        effects: Vec::new(),
        deletions: Vec::new(),
        edges: Vec::new(),
        strong_edges: Vec::new(),
        predecessors: Vec::new(),
        alternates: Vec::new(),
        expect_sha256: claims.expect.map(|e| e.sha256.clone()),
        findings: Vec::new(),
        verdict: String::new(),
    };
    let reproducible = full.initial == again.initial && full.steps == again.steps;
    let full_check = match claims.expect {
        Some(e) => Some(check_between(e, &opts.store, &full.initial, full.final_state())?),
        None => None,
    };
    report.full = json!({"initial": full.initial, "final": full.final_state(), "reproducible": reproducible,
                         "check": full_check.as_ref().map(CheckReport::to_json)});
    if let Some(rec) = t.state.as_ref().and_then(|s| s.initial.as_deref()) {
        if rec != full.initial {
            report.findings.push(format!(
                "reset discipline violated: the environment reset to {}, the trajectory recorded {}",
                short(&full.initial),
                short(rec)
            ));
        }
    }
    if !reproducible {
        let d = crate::replay::first_divergence(&acts, &[full.clone(), again]);
        let what = d.map(|d| d.describe()).unwrap_or_else(|| "the replays differ".into());
        report.findings.push(format!(
            "the environment is not reproducible ({what}): deletion counterfactuals would be noise, none computed"
        ));
        report.verdict = "fail".into();
        return Ok(report);
    }
    if let Some(c) = &full_check {
        for f in c.failures() {
            report.findings.push(format!("the full replay does not pass the state check: {f}"));
        }
    }
    let show_db = Side::stored(&opts.store, &full.initial)?.database_names().len() > 1;
    report.effects = effects(&opts.store, &full.initial, full.final_state(), show_db)?;
    let action_effects = per_action_effects(&opts.store, &full, show_db)?;
    for a in &acts {
        let without: Vec<&ActionRef> = acts.iter().filter(|x| x.index != a.index).collect();
        let cut = run(&without, opts)?;
        let deletion = deletion(&opts.store, a, &full, &cut, &report.effects, claims.expect, show_db)?;
        report.edges.extend(edges_of(&deletion));
        report.strong_edges.extend(strong_edges(&opts.store, a, &acts, &full, &cut)?);
        report.deletions.push(deletion);
    }
    report.actions = acts
        .iter()
        .zip(&action_effects)
        .zip(&report.deletions)
        .map(|((a, eff), d)| {
            json!({"index": a.index, "name": a.name, "arguments": a.arguments, "effects": eff,
                   "trivial": d.trivial, "necessary": d.necessary})
        })
        .collect();
    for &c in &claims.predecessors {
        let d = &report.deletions[c - 1];
        let fails = d.necessary == Some(true);
        if !fails {
            report.findings.push(format!(
                "claimed predecessor action {c} ({}) is not necessary: the state check still passes without it",
                d.name
            ));
        }
        report.predecessors.push(PredecessorClaim {
            action: c,
            name: d.name.clone(),
            omission_fails_check: fails,
            holds: fails,
        });
    }
    for alt in &claims.alternates {
        let route = alternate(alt, opts, claims.expect, full.final_state())?;
        if !route.accepted {
            let why = route.check.get("failures").cloned().unwrap_or(Value::Null);
            report.findings.push(format!("alternate route {} rejected: {}", route.trajectory, why));
        }
        report.alternates.push(route);
    }
    report.verdict = if report.findings.is_empty() { "pass" } else { "fail" }.into();
    Ok(report)
}

/// The effect ids each action of the full replay produced (state before -> after it).
fn per_action_effects(store: &Store, full: &Run, show_db: bool) -> Result<Vec<Vec<String>>, StateError> {
    (0..full.steps.len())
        .map(|i| {
            let (a, b) = (full.before(i), full.steps[i].state.as_str());
            if a == b {
                return Ok(Vec::new());
            }
            Ok(effects(store, a, b, show_db)?.into_iter().map(|e| format!("{} {}", e.id, e.change)).collect())
        })
        .collect()
}

fn deletion(
    store: &Store,
    a: &ActionRef,
    full: &Run,
    cut: &Run,
    full_effects: &[Effect],
    expect: Option<&Expectation>,
    show_db: bool,
) -> Result<Deletion, StateError> {
    let trivial = cut.final_state() == full.final_state();
    let (mut lost, mut altered, mut new) = (Vec::new(), Vec::new(), Vec::new());
    if !trivial {
        let vs_full: BTreeSet<String> =
            effects(store, full.final_state(), cut.final_state(), show_db)?.into_iter().map(|e| e.id).collect();
        let cut_effects: BTreeSet<String> =
            effects(store, &cut.initial, cut.final_state(), show_db)?.into_iter().map(|e| e.id).collect();
        let full_ids: BTreeSet<&str> = full_effects.iter().map(|e| e.id.as_str()).collect();
        for e in full_effects.iter().filter(|e| vs_full.contains(&e.id)) {
            if cut_effects.contains(&e.id) {
                altered.push(e.id.clone());
            } else {
                lost.push(e.id.clone());
            }
        }
        new = cut_effects.into_iter().filter(|id| !full_ids.contains(id.as_str())).collect();
    }
    let check = match expect {
        Some(e) => Some(check_between(e, store, &cut.initial, cut.final_state())?),
        None => None,
    };
    Ok(Deletion {
        action: a.index,
        name: a.name.clone(),
        final_state: cut.final_state().to_string(),
        trivial,
        lost,
        altered,
        new,
        necessary: check.as_ref().map(|c| !c.passed()),
        check: check.as_ref().map(CheckReport::to_json),
    })
}

fn edges_of(d: &Deletion) -> Vec<Edge> {
    let lost = d.lost.iter().map(|e| Edge { action: d.action, effect: e.clone(), kind: "lost".into() });
    let altered = d.altered.iter().map(|e| Edge { action: d.action, effect: e.clone(), kind: "altered".into() });
    lost.chain(altered).collect()
}

/// Actions after `a` whose own change to the state differs once `a` is deleted.
fn strong_edges(
    store: &Store,
    a: &ActionRef,
    acts: &[ActionRef],
    full: &Run,
    cut: &Run,
) -> Result<Vec<StrongEdge>, StateError> {
    let mut out = Vec::new();
    // Position of action j in `full` is j-1; in `cut` (without a) it is j-2 for j > a.
    for j in (a.index + 1)..=acts.len() {
        let (fi, ci) = (j - 1, j - 2);
        let effect_full = change_list(store, full.before(fi), &full.steps[fi].state)?;
        let effect_without = change_list(store, cut.before(ci), &cut.steps[ci].state)?;
        if effect_full != effect_without {
            let observation_changed = full.steps[fi].observation != cut.steps[ci].observation;
            out.push(StrongEdge { from: a.index, to: j, effect_full, effect_without, observation_changed });
        }
    }
    Ok(out)
}

fn alternate(
    t: &Trajectory,
    opts: &ReplayOptions,
    expect: Option<&Expectation>,
    reference_final: &str,
) -> Result<AlternateRoute, ReplayError> {
    let Some(exp) = expect else {
        return Err(ReplayError::Usage("an alternate route needs --expect (the state check it must pass)".into()));
    };
    let acts = actions(t);
    let refs: Vec<&ActionRef> = acts.iter().collect();
    let r = run(&refs, opts)?;
    let reset = match t.state.as_ref().and_then(|s| s.initial.as_deref()) {
        None => Agreement::Unrecorded,
        Some(rec) if rec == r.initial => Agreement::Match,
        Some(_) => Agreement::Mismatch,
    };
    let c = check_between(exp, &opts.store, &r.initial, r.final_state())?;
    let mut check = c.to_json();
    check["failures"] = json!(c.failures());
    Ok(AlternateRoute {
        trajectory: t.id.clone(),
        path: t.provenance.path.clone(),
        actions: acts.len(),
        initial: r.initial.clone(),
        final_state: r.final_state().to_string(),
        reset,
        same_final_as_reference: r.final_state() == reference_final,
        accepted: c.passed() && reset != Agreement::Mismatch,
        check,
    })
}

/// Human form of a counterfactual report.
pub fn render_human(r: &CounterfactualReport) -> String {
    let mut s = String::new();
    let id = r.trajectory.get("id").and_then(Value::as_str).unwrap_or("");
    let get = |k: &str| r.full.get(k).and_then(Value::as_str).map(short).unwrap_or("").to_string();
    s += &format!("trajectory {id}: full replay reset {} -> final {}\n", get("initial"), get("final"));
    if !r.effects.is_empty() || !r.deletions.is_empty() {
        s += &format!("effects of the full replay: {}\n", r.effects.len());
        for e in &r.effects {
            s += &format!("  {} {}\n", e.id, e.change);
        }
    }
    for d in &r.deletions {
        s += &format!("action {} ({}): ", d.action, d.name);
        if d.trivial {
            s += "causally trivial: deleting it changes nothing";
        } else {
            let mut parts = Vec::new();
            if !d.lost.is_empty() {
                parts.push(format!("loses {}", d.lost.join(", ")));
            }
            if !d.altered.is_empty() {
                parts.push(format!("alters {}", d.altered.join(", ")));
            }
            if !d.new.is_empty() {
                parts.push(format!("adds {}", d.new.join(", ")));
            }
            s += &format!("deleting it {}", parts.join("; "));
        }
        let strong: Vec<String> =
            r.strong_edges.iter().filter(|e| e.from == d.action).map(|e| format!("action {}", e.to)).collect();
        if !strong.is_empty() {
            s += &format!("; strong edge to {}", strong.join(", "));
        }
        match d.necessary {
            Some(true) => s += "; the state check fails without it",
            Some(false) => s += "; the state check passes without it",
            None => {}
        }
        s += "\n";
    }
    for p in &r.predecessors {
        let verdict =
            if p.holds { "holds (the check fails without it)" } else { "DOES NOT HOLD (the check passes without it)" };
        s += &format!("predecessor claim action {} ({}): {verdict}\n", p.action, p.name);
    }
    for a in &r.alternates {
        let same = if a.same_final_as_reference {
            "same final state as the reference"
        } else {
            "final state differs from the reference"
        };
        let verdict = if a.accepted { "accepted" } else { "REJECTED" };
        s += &format!("alternate route {} ({} actions): {verdict} ({same})\n", a.trajectory, a.actions);
    }
    for f in &r.findings {
        s += &format!("finding: {f}\n");
    }
    s += &format!("verdict: {}\n", r.verdict);
    s
}
