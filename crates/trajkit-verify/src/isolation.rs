//! Solver isolation (docs/admission.md): a task admitted with a witness route and a state
//! check is a fair test only if no solver's model input carried witness-only material (the
//! witness's argument values the instruction does not state, its observations) or the
//! check's expected values. This module lists that material and finds it in solvers' inputs.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;
use trajkit_model::{Role, Step, Trajectory};

use crate::admission::{load_task, AdmissionError};
use crate::state::check::{Expectation, Pred};
use crate::state::value::Val;

/// Kind of an isolation report.
pub const ISOLATION_KIND: &str = "trajkit-isolation/1";
/// A witness observation shorter than this (characters, trimmed) is not material: "ok",
/// "[]" or "1" are what any run sees.
pub const MIN_OBSERVATION_CHARS: usize = 16;
/// A value shorter than this (characters) counts only beside its field name
/// (`contact_id = 4`, `"contact_id": 4`); a longer one counts anywhere as a whole token.
pub const MIN_UNKEYED_VALUE_CHARS: usize = 4;

/// What a piece of material is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MaterialKind {
    WitnessArgument,
    WitnessObservation,
    ExpectedValue,
}

impl MaterialKind {
    /// The words the human report uses.
    fn words(self) -> &'static str {
        match self {
            MaterialKind::WitnessArgument => "witness argument",
            MaterialKind::WitnessObservation => "witness observation",
            MaterialKind::ExpectedValue => "expected value",
        }
    }
}

/// One thing a solver must not have seen.
#[derive(Debug, Clone, Serialize)]
pub struct Material {
    pub kind: MaterialKind,
    /// Where it comes from: `witness steps[3].tool_calls[0] add_tag` or `expect[1] contact_tags`.
    pub from: String,
    /// The field it is the value of (`contact_id`), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub value: String,
    /// An observation: the call (tool name, arguments) that earns it; a solver that made
    /// the same call saw it legitimately.
    #[serde(skip)]
    earned_by: Option<(String, Value)>,
}

/// One place where a solver saw material.
#[derive(Debug, Clone, Serialize)]
pub struct Leak {
    /// The solver trajectory's id and file.
    pub trajectory: String,
    pub path: String,
    /// The record's line in a JSON Lines file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Index of the step in `steps` (none for `tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// The record field that carries it (`steps[0].content`, `steps[4].tool_results[0].content`, `tools`).
    pub field: String,
    pub kind: MaterialKind,
    pub from: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub material_field: Option<String>,
    pub value: String,
}

/// The isolation report of a task over a set of solver trajectories.
#[derive(Debug, Clone, Serialize)]
pub struct IsolationReport {
    pub kind: String,
    pub task: String,
    /// The witness file (task.json's `witness`), when the task names one.
    pub witness: Option<String>,
    pub min_observation_chars: usize,
    pub min_unkeyed_value_chars: usize,
    pub material: Vec<Material>,
    pub solvers: usize,
    pub isolated: bool,
    pub leaks: Vec<Leak>,
}

/// Reads task.json (its instruction, `expect` and optional `witness`) and checks `solvers`.
pub fn isolation(task_path: &Path, solvers: &[Trajectory]) -> Result<IsolationReport, AdmissionError> {
    let loaded = load_task(task_path)?;
    let witness = match &loaded.witness_path {
        Some(p) => {
            let display = p.display().to_string();
            let file = std::fs::File::open(p).map_err(|error| AdmissionError::Io { path: p.clone(), error })?;
            let all = crate::replay::read_trajectories(std::io::BufReader::new(file), &display)?;
            Some(crate::replay::select(all, None, &display)?)
        }
        None => None,
    };
    let instruction = loaded.task.instruction.clone().unwrap_or_default();
    let material = material(&instruction, witness.as_ref(), &loaded.expect);
    let leaks = find_leaks(&material, solvers);
    Ok(IsolationReport {
        kind: ISOLATION_KIND.into(),
        task: loaded.task.id.clone(),
        witness: loaded.task.witness.clone(),
        min_observation_chars: MIN_OBSERVATION_CHARS,
        min_unkeyed_value_chars: MIN_UNKEYED_VALUE_CHARS,
        material,
        solvers: solvers.len(),
        isolated: leaks.is_empty(),
        leaks,
    })
}

/// Everything a solver must not see: the witness's argument values and the expected
/// values that `instruction` does not state, and the witness's long observations.
pub fn material(instruction: &str, witness: Option<&Trajectory>, expect: &Expectation) -> Vec<Material> {
    let mut out = Vec::new();
    if let Some(w) = witness {
        witness_material(w, &mut out);
    }
    expected_material(expect, &mut out);
    let stated = |m: &Material| m.kind != MaterialKind::WitnessObservation && states(instruction, &m.value);
    let mut seen = BTreeSet::new();
    out.retain(|m| !stated(m) && seen.insert((m.kind, m.field.clone(), m.value.clone())));
    out
}

/// The witness's argument values (leaves of each call's arguments) and observations.
fn witness_material(w: &Trajectory, out: &mut Vec<Material>) {
    let mut calls: HashMap<&str, (String, Value)> = HashMap::new();
    for (i, step) in w.steps.iter().enumerate() {
        for (j, call) in step.tool_calls.iter().enumerate() {
            if let Some(id) = &call.id {
                calls.insert(id, (call.name.clone(), call.arguments.value().clone()));
            }
            let from = format!("witness steps[{i}].tool_calls[{j}] {}", call.name);
            let mut leaves = Vec::new();
            value_leaves(&call.arguments, None, &mut leaves);
            for (field, value) in leaves {
                out.push(Material {
                    kind: MaterialKind::WitnessArgument,
                    from: from.clone(),
                    field,
                    value,
                    earned_by: None,
                });
            }
        }
        for (j, result) in step.tool_results.iter().enumerate() {
            let mut texts = Vec::new();
            if let Some(c) = &result.content {
                string_leaves(c, &mut texts);
            }
            for text in texts.into_iter().map(str::trim).filter(|t| t.chars().count() >= MIN_OBSERVATION_CHARS) {
                let earned_by = result.call_id.as_deref().and_then(|id| calls.get(id)).cloned();
                out.push(Material {
                    kind: MaterialKind::WitnessObservation,
                    from: format!("witness steps[{i}].tool_results[{j}]"),
                    field: None,
                    value: text.to_string(),
                    earned_by,
                });
            }
        }
    }
}

/// The values the state check expects: `where` and `values` of each `[[expect]]` (equality,
/// membership and containment predicates; bounds are not values).
fn expected_material(expect: &Expectation, out: &mut Vec<Material>) {
    for (i, effect) in expect.expect.iter().enumerate() {
        let from = format!("expect[{i}] {}", effect.table);
        for (column, pred) in effect.r#where.iter().chain(&effect.values) {
            let vals: Vec<String> = match pred {
                Pred::Eq(v) => val_text(v).into_iter().collect(),
                Pred::In(vs) => vs.iter().filter_map(val_text).collect(),
                Pred::Contains(s) => vec![s.clone()],
                _ => Vec::new(),
            };
            for value in vals.into_iter().filter(|v| !v.trim().is_empty()) {
                let field = Some(column.clone());
                out.push(Material {
                    kind: MaterialKind::ExpectedValue,
                    from: from.clone(),
                    field,
                    value,
                    earned_by: None,
                });
            }
        }
    }
}

/// A state value as text, or none for NULL and blobs.
fn val_text(v: &Val) -> Option<String> {
    match v {
        Val::Int(i) => Some(i.to_string()),
        Val::Real(f) => Some(f.to_string()),
        Val::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        Val::Null | Val::Blob(_) => None,
    }
}

/// Scalar leaves of a JSON value with the object key they sit under (booleans and null
/// are no material: they carry no information a solver could copy).
fn value_leaves(v: &Value, key: Option<&str>, out: &mut Vec<(Option<String>, String)>) {
    match v {
        Value::String(s) if !s.trim().is_empty() => out.push((key.map(str::to_string), s.clone())),
        Value::Number(n) => out.push((key.map(str::to_string), n.to_string())),
        Value::Array(a) => a.iter().for_each(|x| value_leaves(x, key, out)),
        Value::Object(m) => m.iter().for_each(|(k, x)| value_leaves(x, Some(k), out)),
        _ => {}
    }
}

/// Every string inside a content value (a string, or content parts).
fn string_leaves<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| string_leaves(x, out)),
        Value::Object(m) => m.values().for_each(|x| string_leaves(x, out)),
        _ => {}
    }
}

/// True when `text` states `value` as a whole token (case-insensitive): the instruction's test.
fn states(text: &str, value: &str) -> bool {
    token_regex(&format!("(?i){}", regex::escape(value)), value).is_some_and(|r| r.is_match(text))
}

/// `pattern` wrapped in word boundaries where `value` starts or ends with a word character.
fn token_regex(pattern: &str, value: &str) -> Option<Regex> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let pre = if word(value.chars().next()) { r"\b" } else { "" };
    let post = if word(value.chars().last()) { r"\b" } else { "" };
    Regex::new(&format!("{pre}{pattern}{post}")).ok()
}

/// How one piece of material is found in text.
enum Matcher {
    /// An observation: a plain substring.
    Text(String),
    Pattern(Regex),
}

impl Matcher {
    /// A long value anywhere as a token; a short one only after its field name and `:` or `=`.
    fn new(m: &Material) -> Option<Matcher> {
        let escaped = regex::escape(&m.value);
        match (&m.kind, &m.field) {
            (MaterialKind::WitnessObservation, _) => Some(Matcher::Text(m.value.clone())),
            (_, Some(field)) if m.value.chars().count() < MIN_UNKEYED_VALUE_CHARS => {
                let keyed = format!(r#"\b{}\b["']?\s*[:=]\s*["']?{escaped}"#, regex::escape(field));
                token_regex(&keyed, &m.value).map(Matcher::Pattern)
            }
            _ => token_regex(&escaped, &m.value).map(Matcher::Pattern),
        }
    }

    fn found_in(&self, text: &str) -> bool {
        match self {
            Matcher::Text(t) => text.contains(t.as_str()),
            Matcher::Pattern(r) => r.is_match(text),
        }
    }
}

/// One text a solver's model saw: where it is, and the call it answers (tool results).
struct Input<'a> {
    step: Option<usize>,
    field: String,
    text: &'a str,
    answers: Option<(&'a str, &'a Value)>,
}

/// The model's input of a trajectory: tool definitions, every non-assistant step's content
/// and every tool result; never the model's own outputs (assistant content, reasoning, calls).
fn inputs(t: &Trajectory) -> (Vec<Input<'_>>, String) {
    let tools = t.tools.as_ref().map(|v| serde_json::to_string(v).unwrap_or_default()).unwrap_or_default();
    let calls: HashMap<&str, (&str, &Value)> = t
        .steps
        .iter()
        .flat_map(|s| &s.tool_calls)
        .filter_map(|c| c.id.as_deref().map(|id| (id, (c.name.as_str(), c.arguments.value()))))
        .collect();
    let mut out = Vec::new();
    for (i, step) in t.steps.iter().enumerate() {
        step_inputs(i, step, &calls, &mut out);
    }
    (out, tools)
}

/// The inputs one step carries.
fn step_inputs<'a>(i: usize, step: &'a Step, calls: &HashMap<&'a str, (&'a str, &'a Value)>, out: &mut Vec<Input<'a>>) {
    if step.role != Role::Assistant {
        let mut texts = Vec::new();
        if let Some(c) = &step.content {
            string_leaves(c, &mut texts);
        }
        let field = format!("steps[{i}].content");
        out.extend(texts.into_iter().map(|text| Input { step: Some(i), field: field.clone(), text, answers: None }));
    }
    for (j, result) in step.tool_results.iter().enumerate() {
        let mut texts = Vec::new();
        if let Some(c) = &result.content {
            string_leaves(c, &mut texts);
        }
        let answers = result.call_id.as_deref().and_then(|id| calls.get(id)).copied();
        let field = format!("steps[{i}].tool_results[{j}].content");
        out.extend(texts.into_iter().map(|text| Input { step: Some(i), field: field.clone(), text, answers }));
    }
}

/// Every (solver, field, material) where a solver's input carries material; an observation
/// in the result of the very call (same tool, same arguments) that earned it is no leak.
pub fn find_leaks(material: &[Material], solvers: &[Trajectory]) -> Vec<Leak> {
    let matchers: Vec<(&Material, Matcher)> = material.iter().filter_map(|m| Matcher::new(m).map(|x| (m, x))).collect();
    let mut leaks = Vec::new();
    for t in solvers {
        let (mut inputs, tools) = inputs(t);
        if !tools.is_empty() {
            inputs.insert(0, Input { step: None, field: "tools".into(), text: &tools, answers: None });
        }
        let mut seen = BTreeSet::new();
        for input in &inputs {
            for (k, (m, matcher)) in matchers.iter().enumerate() {
                let earned = match (&m.earned_by, input.answers) {
                    (Some((name, args)), Some((n, a))) => name == n && args == a,
                    _ => false,
                };
                if earned || !matcher.found_in(input.text) || !seen.insert((input.field.clone(), k)) {
                    continue;
                }
                leaks.push(Leak {
                    trajectory: t.id.clone(),
                    path: t.provenance.path.clone(),
                    line: t.provenance.line,
                    step: input.step,
                    field: input.field.clone(),
                    kind: m.kind,
                    from: m.from.clone(),
                    material_field: m.field.clone(),
                    value: m.value.clone(),
                });
            }
        }
    }
    leaks
}

/// One line per leak, as `admit` and `isolation` print them.
pub fn render_leaks(report: &IsolationReport) -> String {
    let mut s = String::new();
    for l in &report.leaks {
        let name = l.material_field.as_deref().map(|f| format!("{f} = ")).unwrap_or_default();
        let value: String = l.value.chars().take(80).collect();
        let line = l.line.map(|n| format!(":{n}")).unwrap_or_default();
        s += &format!(
            "    LEAK {} ({}{line}) {}: {} {name}{value:?} (from {})\n",
            l.trajectory,
            l.path,
            l.field,
            l.kind.words(),
            l.from
        );
    }
    s
}

/// The one-line verdict of an isolation report.
pub fn summary(report: &IsolationReport) -> String {
    if report.isolated {
        format!(
            "{} solver trajectories saw none of {} pieces of witness-only material and expected values",
            report.solvers,
            report.material.len()
        )
    } else {
        let trajectories: BTreeSet<&str> = report.leaks.iter().map(|l| l.trajectory.as_str()).collect();
        format!("{} leaks in {} of {} solver trajectories", report.leaks.len(), trajectories.len(), report.solvers)
    }
}

/// Human form of a standalone isolation report.
pub fn render_human(report: &IsolationReport) -> String {
    let verdict = if report.isolated { "ISOLATED" } else { "LEAKED" };
    format!("task {}: {verdict} — {}\n{}", report.task, summary(report), render_leaks(report))
}

#[cfg(test)]
mod tests;
