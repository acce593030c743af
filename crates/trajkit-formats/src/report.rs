//! Per-file figures: the `inspect --json` contract every later feature counts from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use trajkit_model::{GapKind, Step, Trajectory};

use crate::rejection::Reason;

/// Figures for one input file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileReport {
    pub path: String,
    /// Family name, or `null` when no reader recognises the file.
    pub format: Option<String>,
    /// Record candidates the format defines (a JSONL line, a JSON document).
    pub records: u64,
    /// Accepted top-level trajectories.
    pub trajectories: u64,
    /// Accepted subagent trajectories (embedded or referenced).
    pub subagents: u64,
    /// Steps of accepted top-level trajectories (subagents and copied context excluded).
    pub steps: u64,
    /// Tool calls of accepted top-level trajectories (subagents and copied context excluded).
    pub tool_calls: u64,
    /// Byte-identical repeats of an earlier record of the file.
    pub duplicate_records: u64,
    /// Records rejected.
    pub rejected: u64,
    /// Rejected records by reason.
    pub reasons: BTreeMap<String, u64>,
    /// Gaps of accepted trajectories by kind (subagents' gaps included).
    pub gaps: BTreeMap<String, u64>,
    /// The path of the file that consumed this one (subagent, continuation, side file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_of: Option<String>,
    /// A problem that stopped reading the file (unreadable, truncated, not recognised).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Closest guess when the format is not recognised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guess: Option<String>,
}

impl FileReport {
    pub fn new(path: &str, format: Option<&str>) -> Self {
        FileReport { path: path.to_string(), format: format.map(str::to_string), ..Default::default() }
    }

    /// Counts an accepted top-level trajectory.
    pub fn add_trajectory(&mut self, c: &TrajectoryCounts) {
        self.trajectories += 1;
        self.steps += c.steps;
        self.tool_calls += c.tool_calls;
        self.subagents += c.subagents;
        for (kind, n) in &c.gaps {
            *self.gaps.entry(kind.as_str().to_string()).or_default() += n;
        }
    }

    /// Counts a rejected record.
    pub fn add_rejection(&mut self, reason: Reason) {
        self.rejected += 1;
        *self.reasons.entry(reason.as_str().to_string()).or_default() += 1;
    }
}

/// What one accepted trajectory adds to its file's figures; computed where the record is
/// built so the record itself need not travel further.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrajectoryCounts {
    pub steps: u64,
    pub tool_calls: u64,
    pub subagents: u64,
    pub gaps: BTreeMap<GapKind, u64>,
}

impl TrajectoryCounts {
    /// Steps and calls of the run itself (copied context repeats earlier steps; sidechain
    /// steps belong to subagents), subagents recursively, gaps of all of them.
    pub fn of(t: &Trajectory) -> Self {
        let own = |s: &&Step| !s.copied_context && !s.subagent;
        let mut c = TrajectoryCounts {
            steps: t.steps.iter().filter(own).count() as u64,
            tool_calls: t.steps.iter().filter(own).map(|s| s.tool_calls.len() as u64).sum(),
            ..Default::default()
        };
        c.add_gaps_and_subagents(t);
        c
    }

    fn add_gaps_and_subagents(&mut self, t: &Trajectory) {
        for g in &t.gaps {
            *self.gaps.entry(g.kind).or_default() += 1;
        }
        for s in &t.subagents {
            self.subagents += 1;
            self.add_gaps_and_subagents(&s.trajectory);
        }
    }
}
