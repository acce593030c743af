//! The publication standard for a trajectory (`trajkit validate --complete`): what a
//! published record must preserve — model outputs, tool calls, tool results, environment
//! state digests where there is an environment, the final output and a verifier's outcome —
//! and, for each record, what it lacks. Rules: docs/completeness.md.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use trajkit_model::{Role, Status, Step, Trajectory, Verification};

/// One part a published trajectory must preserve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// An assistant step with text, reasoning or tool calls.
    ModelOutputs,
    /// At least one tool call.
    ToolCalls,
    /// A linked result for every tool call.
    ToolResults,
    /// The environment's state digest before the first action.
    InitialState,
    /// The environment's state digest after the run.
    FinalState,
    /// The run ends with the model's final text.
    FinalOutput,
    /// A success/failure outcome established by a verifier.
    VerifierOutcome,
}

impl Part {
    /// The snake_case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Part::ModelOutputs => "model_outputs",
            Part::ToolCalls => "tool_calls",
            Part::ToolResults => "tool_results",
            Part::InitialState => "initial_state",
            Part::FinalState => "final_state",
            Part::FinalOutput => "final_output",
            Part::VerifierOutcome => "verifier_outcome",
        }
    }

    /// Every part, in report order.
    pub const ALL: [Part; 7] = [
        Part::ModelOutputs,
        Part::ToolCalls,
        Part::ToolResults,
        Part::InitialState,
        Part::FinalState,
        Part::FinalOutput,
        Part::VerifierOutcome,
    ];
}

/// A part a record lacks, and why in a few words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lack {
    pub part: Part,
    pub detail: String,
}

impl Lack {
    fn new(part: Part, detail: impl Into<String>) -> Lack {
        Lack { part, detail: detail.into() }
    }
}

/// Steps of the run itself: not context copied from an earlier segment, not a subagent's.
fn own_steps(t: &Trajectory) -> impl Iterator<Item = (usize, &Step)> {
    t.steps.iter().enumerate().filter(|(_, s)| !s.copied_context && !s.subagent)
}

fn has_text(v: Option<&serde_json::Value>) -> bool {
    match v {
        Some(serde_json::Value::String(s)) => !s.trim().is_empty(),
        Some(serde_json::Value::Array(parts)) => !parts.is_empty(),
        Some(serde_json::Value::Null) | None => false,
        Some(_) => true,
    }
}

/// What `t` lacks against the publication standard, in `Part::ALL` order (empty: complete).
pub fn check(t: &Trajectory) -> Vec<Lack> {
    let mut lacks = Vec::new();
    let calls: Vec<_> = own_steps(t).flat_map(|(_, s)| s.tool_calls.iter()).collect();
    let model_output = own_steps(t).any(|(_, s)| {
        s.role == Role::Assistant
            && (has_text(s.content.as_deref())
                || s.reasoning.as_deref().is_some_and(|r| !r.trim().is_empty())
                || !s.tool_calls.is_empty())
    });
    if !model_output {
        lacks.push(Lack::new(Part::ModelOutputs, "no assistant step with text, reasoning or tool calls"));
    }
    if calls.is_empty() {
        let observations = own_steps(t).filter(|(_, s)| matches!(s.role, Role::Tool | Role::Environment)).count();
        let detail = if observations > 0 {
            format!("no tool call recorded ({observations} tool/environment steps without one)")
        } else {
            "no tool call recorded".to_string()
        };
        lacks.push(Lack::new(Part::ToolCalls, detail));
    } else if let Some(lack) = unanswered(t, calls.len()) {
        lacks.push(lack);
    }
    if has_environment(t, !calls.is_empty()) {
        let state = t.state.as_ref();
        if state.and_then(|s| s.initial.as_ref()).is_none() {
            lacks.push(Lack::new(Part::InitialState, "no initial state digest"));
        }
        if state.and_then(|s| s.final_state.as_ref()).is_none() {
            lacks.push(Lack::new(Part::FinalState, "no final state digest"));
        }
    }
    if let Some(lack) = final_output(t) {
        lacks.push(lack);
    }
    if let Some(lack) = verifier_outcome(t) {
        lacks.push(lack);
    }
    lacks
}

/// Tool calls without a result linked by id (a call without an id cannot be linked).
fn unanswered(t: &Trajectory, total: usize) -> Option<Lack> {
    let answered: HashSet<&str> =
        own_steps(t).flat_map(|(_, s)| s.tool_results.iter()).filter_map(|r| r.call_id.as_deref()).collect();
    let missing = own_steps(t)
        .flat_map(|(_, s)| s.tool_calls.iter())
        .filter(|c| c.id.as_deref().is_none_or(|id| !answered.contains(id)))
        .count();
    (missing > 0)
        .then(|| Lack::new(Part::ToolResults, format!("{missing} of {total} tool calls have no linked result")))
}

/// The run acts on an environment: the source names one, or the agent calls tools.
fn has_environment(t: &Trajectory, any_calls: bool) -> bool {
    t.task.environment.is_some() || any_calls
}

/// The run must end with an assistant step that has text.
fn final_output(t: &Trajectory) -> Option<Lack> {
    let last = own_steps(t).filter(|(_, s)| s.role != Role::System).last();
    match last {
        None => Some(Lack::new(Part::FinalOutput, "no steps")),
        Some((i, s)) if s.role != Role::Assistant => {
            Some(Lack::new(Part::FinalOutput, format!("the run ends with a {} step (step {i})", s.role.as_str())))
        }
        Some((i, s)) if !has_text(s.content.as_deref()) => {
            Some(Lack::new(Part::FinalOutput, format!("the last assistant step (step {i}) has no text")))
        }
        Some(_) => None,
    }
}

/// A success or failure established by a verifier (the source's grader, or re-run).
fn verifier_outcome(t: &Trajectory) -> Option<Lack> {
    let o = &t.outcome;
    if o.status == Status::Unknown {
        return Some(Lack::new(Part::VerifierOutcome, "outcome unknown"));
    }
    match o.verification {
        Verification::SourceEvaluator | Verification::IndependentlyReproduced => None,
        Verification::SourceReported => {
            Some(Lack::new(Part::VerifierOutcome, "outcome stated by the source without a verifier"))
        }
        Verification::Unverified => Some(Lack::new(Part::VerifierOutcome, "outcome unverified")),
    }
}

/// Running counts of a completeness check over many records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub complete: u64,
    pub incomplete: u64,
    /// Records lacking each part.
    pub lacking: BTreeMap<Part, u64>,
}

impl Tally {
    /// Checks `t`, counts it, and returns what it lacks.
    pub fn add(&mut self, t: &Trajectory) -> Vec<Lack> {
        let lacks = check(t);
        if lacks.is_empty() {
            self.complete += 1;
        } else {
            self.incomplete += 1;
        }
        for l in &lacks {
            *self.lacking.entry(l.part).or_default() += 1;
        }
        lacks
    }

    /// `complete: C of N trajectories; lacking: part=n ...`.
    pub fn summary(&self) -> String {
        let lacking: Vec<String> = self.lacking.iter().map(|(p, n)| format!("{}={n}", p.as_str())).collect();
        format!(
            "complete: {} of {} trajectories; lacking: {}",
            self.complete,
            self.complete + self.incomplete,
            if lacking.is_empty() { "nothing".to_string() } else { lacking.join(" ") }
        )
    }
}

/// `path:line: incomplete: id: lacks part (detail), ...` (`path#doc` for document records).
pub fn text_line(t: &Trajectory, lacks: &[Lack]) -> String {
    let p = &t.provenance;
    let location = match (p.line, p.document_index) {
        (Some(l), _) => format!("{}:{l}", p.path),
        (None, Some(d)) => format!("{}#{d}", p.path),
        _ => p.path.clone(),
    };
    let parts: Vec<String> = lacks.iter().map(|l| format!("{} ({})", l.part.as_str(), l.detail)).collect();
    format!("{location}: incomplete: {}: lacks {}", t.id, parts.join(", "))
}

/// One JSON object: `path`, `line` or `document_index`, `id`, `lacks` (`[{part, detail}]`).
pub fn json_line(t: &Trajectory, lacks: &[Lack]) -> String {
    let mut m = serde_json::Map::new();
    m.insert("path".into(), t.provenance.path.clone().into());
    if let Some(l) = t.provenance.line {
        m.insert("line".into(), l.into());
    }
    if let Some(d) = t.provenance.document_index {
        m.insert("document_index".into(), d.into());
    }
    m.insert("id".into(), t.id.clone().into());
    m.insert("lacks".into(), serde_json::to_value(lacks).unwrap_or_default());
    serde_json::Value::Object(m).to_string()
}

#[cfg(test)]
mod tests;
