//! The per-trajectory row: one per accepted trajectory, the library's evaluation table
//! (`evaluation/per_trajectory.jsonl.gz`, and the `trajectories` table of the index).
//! Field meanings are documented in docs/library.md.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One accepted trajectory as the library sees it. Field order is the JSON key order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Library-unique id: the record's id, suffixed `~N` for the N-th later record with the same id.
    pub id: String,
    /// Registry source name.
    pub source: String,
    /// Reader family that read the record.
    pub format: String,
    /// Input path (relative to the source root as the record's provenance names it).
    pub path: String,
    /// 1-based line of a JSON Lines record.
    pub line: Option<u64>,
    /// 0-based index of a record inside a JSON document.
    pub document_index: Option<u64>,
    /// Shard holding the canonical record, relative to the library root.
    pub shard: String,
    /// 1-based line of the record in its shard.
    pub shard_line: u64,
    /// Task key (see docs/record.md).
    pub task_key: String,
    /// The key splits are assigned by: the task key, or a SWE-bench style instance id
    /// (`owner__repo-123`) on its own, so one instance shares a split across sources.
    pub split_key: String,
    /// The task's own id, when the source names one.
    pub task_id: Option<String>,
    /// Environment name, when the source names one.
    pub environment: Option<String>,
    /// Model that produced the decisions.
    pub model: Option<String>,
    /// Agent harness (scaffold) name.
    pub scaffold: Option<String>,
    /// Task family from the registry (swe, terminal, tool-use, web ...).
    pub family: Option<String>,
    /// License from the registry.
    pub license: Option<String>,
    /// `training` or `evaluation_only`.
    pub role: String,
    /// `success`, `failure` or `unknown` (after the registry's success rule, if any).
    pub status: String,
    /// Scalar reward as the source gives it.
    pub reward: Option<f64>,
    /// Whether the status is success or failure (unknown is never a failure).
    pub outcome_known: bool,
    /// Who established the outcome.
    pub verification: String,
    /// Ids, roles, ordering and tool-call linkage hold.
    pub structural_valid: bool,
    /// Why `structural_valid` is false (empty when it is true).
    pub structural_problems: Vec<String>,
    /// Fraction of decisions with source-derived context since the preceding decision.
    pub action_observation_completeness: Option<f64>,
    /// Assistant decisions (steps of role assistant, copied context excluded).
    pub decisions: u64,
    /// Steps (copied context excluded).
    pub steps: u64,
    /// Tool calls (copied context excluded).
    pub tool_calls: u64,
    /// Nested subagent runs.
    pub subagents: u64,
    /// Gaps by kind.
    pub gaps: BTreeMap<String, u64>,
    /// Record is complete: no gap that marks missing or truncated content.
    pub complete: bool,
    /// Usable as a supervised fine-tuning example.
    pub sft_eligible: bool,
    /// `sft_eligible` and the source may be used for training.
    pub training_eligible: bool,
    /// Ordered quality tier, 0 (worst) to 4 (best); see docs/quality.md.
    pub quality_tier: u8,
    /// Rank among attempts of the same task, environment and environment version (1 = best).
    pub task_rank: u64,
    /// Exact-duplicate group: `dup-` + the first 16 hex digits of the interaction digest.
    pub duplicate_group: String,
    /// Trajectories in the duplicate group (1 when there is no duplicate).
    pub duplicate_group_size: u64,
    /// `train`, `validation`, `test` or `protected_evaluation`.
    pub split: String,
    /// SHA-256 of the record's content (see docs/record.md).
    pub content_digest: String,
    /// Prompt tokens as the source states them.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens as the source states them.
    pub completion_tokens: Option<u64>,
    /// Cost in US dollars as the source states it.
    pub cost_usd: Option<f64>,
    /// Environment version: the record's, else the registry source's `version`.
    pub environment_version: Option<String>,
    /// SHA-256 of the interaction (docs/library.md, duplicate groups): the duplicate key.
    pub interaction_digest: String,
    /// Members of the duplicate group disagree on status or reward (false for a group of one).
    pub duplicate_outcomes_disagree: bool,
    /// Wall-clock seconds of the run (docs/library.md, latency), when the source gives them.
    pub duration_seconds: Option<f64>,
    /// Prompt tokens served from cache, as the source states them.
    pub cached_tokens: Option<u64>,
    /// Byte offset in the shard where the zstd frame holding the record starts (`None` in
    /// libraries built before shards had frames: the record is found by its line).
    #[serde(default)]
    pub shard_offset: Option<u64>,
    /// Byte offset of the record in its decompressed frame (with `shard_offset`).
    #[serde(default)]
    pub frame_offset: Option<u64>,
    /// 16 hex digits of XXH3-64 of the normalized instruction (none without an instruction).
    #[serde(default)]
    pub instruction_digest: Option<String>,
    /// Task cluster (`tc-` + 16 hex digits): the task by content across keys and sources.
    #[serde(default)]
    pub task_cluster: Option<String>,
    /// Why the trajectory is in its cluster: `same_key`, `same_instruction`, `near_duplicate`.
    #[serde(default)]
    pub task_cluster_reason: Option<String>,
    /// For `near_duplicate`: the weakest instruction similarity linking it to the cluster's anchor.
    #[serde(default)]
    pub task_cluster_similarity: Option<f64>,
    /// Near-duplicate group (`near-` + 16 hex digits): same task cluster, nearly the same
    /// action/observation content; an exact duplicate group is inside one near group.
    #[serde(default)]
    pub near_duplicate_group: Option<String>,
    /// Trajectories in the near-duplicate group (exact duplicates included).
    #[serde(default)]
    pub near_duplicate_group_size: Option<u64>,
    /// The highest estimated content similarity to another interaction of the group.
    #[serde(default)]
    pub near_duplicate_similarity: Option<f64>,
}
