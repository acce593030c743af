//! The canonical trajectory record: one shape for every source format.
//!
//! Field names serialize in sorted order (see `canonical.rs`), so the canonical JSON
//! form of a record is the plain serde form. Every optional field that the source did
//! not state is `None` and is omitted; a field the source stated as `null` is kept in
//! the owning `extra` map under its source name, so missing and `null` stay apart.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::instruction_task_key;
use crate::lazy::LazyValue;

/// Version of the record's own schema. Bump on any change a reader of old outputs can see.
pub const SCHEMA_VERSION: &str = "trajkit.trajectory/2";

pub use crate::extra::Extra;

fn is_false(b: &bool) -> bool {
    !*b
}

/// One agent run (or one subagent run nested inside it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trajectory {
    /// Who ran: harness name, version and model.
    #[serde(default)]
    pub agent: Agent,
    /// SHA-256 (hex) of the canonical JSON of the record without `id`, `provenance`
    /// and `content_digest` (recursively for subagents): equal content, equal digest.
    #[serde(default)]
    pub content_digest: String,
    /// Unmapped top-level source fields, under their source names.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
    /// Irregularities that did not make the record invalid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<Gap>,
    /// Stable identity: the same source bytes always give the same id.
    pub id: String,
    /// Run totals as the source states them (never summed by trajkit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// How the run ended and who says so.
    #[serde(default)]
    pub outcome: Outcome,
    /// Where the record came from.
    pub provenance: Provenance,
    /// Version of this record schema (`trajkit.trajectory/2`).
    pub schema_version: String,
    /// Run-scoped session id from the source; never used as the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Digests of the environment's state before and after the run, when the source
    /// captured them (see `trajkit state capture`); needed for replay and completeness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<StateDigests>,
    /// Ordered steps of the conversation.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Nested subagent runs, each a full record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<Subagent>,
    /// The task this run attempted.
    pub task: Task,
    /// Tool (function) definitions offered to the model, as the source gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<LazyValue>>,
}

impl Trajectory {
    /// A record with its id, origin and task and every other field empty: the base that
    /// readers complete with struct update syntax (`Trajectory { steps, ..Trajectory::new(..) }`)
    /// instead of listing every field.
    pub fn new(id: impl Into<String>, provenance: Provenance, task: Task) -> Self {
        Trajectory {
            agent: Agent::default(),
            content_digest: String::new(),
            extra: Extra::new(),
            gaps: Vec::new(),
            id: id.into(),
            metrics: None,
            outcome: Outcome::default(),
            provenance,
            schema_version: SCHEMA_VERSION.into(),
            session_id: None,
            state: None,
            steps: Vec::new(),
            subagents: Vec::new(),
            task,
            tools: None,
        }
    }
}

/// Environment state digests of a run (trajkit state digests: lowercase hex SHA-256).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StateDigests {
    /// State digest after the run ended.
    #[serde(default, rename = "final", skip_serializing_if = "Option::is_none")]
    pub final_state: Option<String>,
    /// State digest before the first action (after reset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<String>,
}

/// A nested trajectory and where it was spawned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Subagent {
    /// Index (0-based) of the parent step that referenced this subagent, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_by_step: Option<usize>,
    /// Tool call id in the parent that spawned it, when the source says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_by_tool_call: Option<String>,
    /// The subagent's own record.
    pub trajectory: Box<Trajectory>,
}

/// Where a record came from: enough to find its exact bytes again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Provenance {
    /// Document index within a file holding several documents (0-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_index: Option<u64>,
    /// Source family name (`atif`, `gym`, ...).
    pub format: String,
    /// Version of the source format when the source states one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_version: Option<String>,
    /// Line number (1-based) in a JSON Lines file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Path as given on the command line joined with the path below it.
    pub path: String,
    /// SHA-256 (hex) of the exact source bytes of the record (the line, or the document).
    pub sha256: String,
}

impl Provenance {
    /// The origin of a record of family `format` in file `path` whose source bytes hash to
    /// `sha256`; line, document index and format version unset.
    pub fn new(format: impl Into<String>, path: impl Into<String>, sha256: impl Into<String>) -> Self {
        Provenance {
            document_index: None,
            format: format.into(),
            format_version: None,
            line: None,
            path: path.into(),
            sha256: sha256.into(),
        }
    }
}

/// The task a run attempted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    /// Environment (benchmark, resource server) name when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// Version of the environment (commit, release) when the source states it; attempts
    /// are ranked only against attempts of the same version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_version: Option<String>,
    /// The task's own id as the source names it (instance id, task id), when it has one;
    /// outcome joins (`--outcomes`, side files) match on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// First instruction given to the agent, when identifiable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// Grouping key for all attempts at the same task (rule per format, see docs/formats).
    pub key: String,
    /// How `key` was derived.
    pub key_source: TaskKeySource,
}

impl Task {
    /// The task of a record by the one rule every reader follows: keyed by `explicit`, the
    /// key a reader spells from the source's own name for the task, when there is one; else
    /// by `instruction` hashed within `environment`; else by `sha`, the record's digest
    /// (`r:` and its first 16 hex digits), a task of its own. `id` is the source's task id.
    pub fn keyed(
        explicit: Option<String>,
        id: Option<String>,
        instruction: Option<String>,
        environment: Option<String>,
        sha: &str,
    ) -> Task {
        let (key, key_source) = match (explicit, &instruction) {
            (Some(key), _) => (key, TaskKeySource::Explicit),
            (None, Some(text)) => (instruction_task_key(text, environment.as_deref()), TaskKeySource::InstructionHash),
            (None, None) => (format!("r:{}", sha.get(..16).unwrap_or(sha)), TaskKeySource::RecordHash),
        };
        Task { environment, environment_version: None, id, instruction, key, key_source }
    }
}

/// How a task key was derived.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskKeySource {
    /// The source names the task explicitly.
    Explicit,
    /// SHA-256 of the normalized first instruction plus environment name.
    #[default]
    InstructionHash,
    /// Neither an id nor an instruction: hash of the record's source bytes (a task of its own).
    RecordHash,
}

/// Who ran the trajectory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Agent {
    /// Model name (the default for steps that do not name one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Agent / harness name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Agent / harness version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Role of a step in the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
    Environment,
}

impl Role {
    /// The snake_case name used in JSON, reports and the index.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Environment => "environment",
        }
    }

    /// Every role, for tests.
    pub const ALL: [Role; 5] = [Role::System, Role::User, Role::Assistant, Role::Tool, Role::Environment];
}

/// Whether the step's author is what its role says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Authorship {
    /// The source states who wrote the step.
    #[default]
    Declared,
    /// The role is a transport role only: it may be a simulated user, an environment
    /// observation or a harness message (e.g. prompt-role items in Gym output).
    Unknown,
}

/// One message, decision or observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// Whether the role names the real author.
    #[serde(default, skip_serializing_if = "is_authorship_declared")]
    pub authorship: Authorship,
    /// Content: a string, or a list of content parts exactly as the source gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<LazyValue>,
    /// Context repeated from an earlier segment (not a new interaction).
    #[serde(default, skip_serializing_if = "is_false")]
    pub copied_context: bool,
    /// Unmapped step fields, under their source names.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
    /// Per-step usage as the source states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// Model that produced this step when it differs from or refines the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model reasoning text shown with the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Who speaks.
    pub role: Role,
    /// The source's own step id, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<Value>,
    /// The step belongs to a subagent interleaved into this run (Claude Code sidechains).
    #[serde(default, skip_serializing_if = "is_false")]
    pub subagent: bool,
    /// ISO-8601 timestamp as the source wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Tool calls the step makes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tool results the step carries, each linked to its call by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResult>,
}

fn is_authorship_declared(a: &Authorship) -> bool {
    *a == Authorship::Declared
}

impl Step {
    /// A step with only a role and content; everything else absent.
    pub fn new(role: Role, content: Option<Value>) -> Self {
        Step {
            authorship: Authorship::Declared,
            content: content.map(LazyValue::from),
            copied_context: false,
            extra: Extra::new(),
            metrics: None,
            model: None,
            reasoning: None,
            role,
            source_id: None,
            subagent: false,
            timestamp: None,
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
        }
    }
}

/// A function call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// Parsed JSON arguments; when `arguments_invalid` is set, the verbatim text.
    pub arguments: LazyValue,
    /// The arguments were not valid JSON and are kept verbatim as a string.
    #[serde(default, skip_serializing_if = "is_false")]
    pub arguments_invalid: bool,
    /// Unmapped call fields, under their source names.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
    /// Call id that results refer to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Function name.
    pub name: String,
    /// The call was parsed out of free text, not given as a structured call.
    #[serde(default, skip_serializing_if = "is_false")]
    pub text_embedded: bool,
}

/// The result of a tool call, linked by call id (never by position).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResult {
    /// Id of the call this answers; `None` when the source gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Result content: a string or content parts as the source gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<LazyValue>,
    /// Unmapped result fields, under their source names.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
    /// Ids of the subagent records this result refers to (see `Trajectory::subagents`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagent_refs: Vec<String>,
}

/// Token and cost figures. A figure the source does not give is absent, never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Metrics {
    /// Prompt tokens served from cache (part of `prompt_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Cost in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Wall-clock seconds of the run (or of the step's model call), as the source states
    /// them or as the difference of the start and end times it states (docs/record.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
    /// Other usage figures (token ids, logprobs, provider extras), under source names.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
    /// All input tokens, cached included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
}

impl Metrics {
    /// True when no figure is present.
    pub fn is_empty(&self) -> bool {
        self.cached_tokens.is_none()
            && self.completion_tokens.is_none()
            && self.cost_usd.is_none()
            && self.duration_seconds.is_none()
            && self.prompt_tokens.is_none()
            && self.extra.is_empty()
    }
}

/// Outcome status. Unknown is never a failure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Success,
    Failure,
    #[default]
    Unknown,
}

impl Status {
    /// The snake_case name used in JSON, reports and the index.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Failure => "failure",
            Status::Unknown => "unknown",
        }
    }

    /// Every status, for tests.
    pub const ALL: [Status; 3] = [Status::Success, Status::Failure, Status::Unknown];
}

/// Who established the outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verification {
    /// trajkit (or a declared verifier) re-ran the check and got the same result.
    IndependentlyReproduced,
    /// A grader or verifier of the source harness produced the reward/result.
    SourceEvaluator,
    /// The source states an outcome without evidence of how it was established.
    SourceReported,
    /// Nothing establishes an outcome.
    #[default]
    Unverified,
}

impl Verification {
    /// The snake_case name used in JSON, reports and the index.
    pub fn as_str(self) -> &'static str {
        match self {
            Verification::IndependentlyReproduced => "independently_reproduced",
            Verification::SourceEvaluator => "source_evaluator",
            Verification::SourceReported => "source_reported",
            Verification::Unverified => "unverified",
        }
    }

    /// Every verification level, for tests.
    pub const ALL: [Verification; 4] = [
        Verification::IndependentlyReproduced,
        Verification::SourceEvaluator,
        Verification::SourceReported,
        Verification::Unverified,
    ];
}

/// How the run ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    /// Scalar reward when the source gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
    /// Named reward components when the source gives them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reward_components: BTreeMap<String, f64>,
    /// Where the status came from when not from the record itself: the report file that
    /// was joined (a side file or `--outcomes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// success / failure / unknown.
    pub status: Status,
    /// Provenance of the outcome.
    pub verification: Verification,
}

/// A typed irregularity that did not invalidate the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gap {
    /// Free-text detail (ids, paths) for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What kind of irregularity.
    pub kind: GapKind,
    /// Index (0-based) of the step concerned, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
}

/// The closed set of gap kinds (documented in docs/record.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GapKind {
    /// A tool call that no result answers.
    UnansweredToolCall,
    /// A tool result whose call id matches no call.
    ResultWithoutCall,
    /// Two calls of one trajectory share an id; results cannot be linked uniquely.
    DuplicateToolCallId,
    /// A subagent reference whose target could not be found.
    UnresolvedSubagentRef,
    /// A continuation reference whose target could not be found.
    UnresolvedContinuation,
    /// The trajectory has no steps at all.
    NoSteps,
    /// Generation stopped early (token limit, timeout) per the source.
    IncompleteGeneration,
    /// Tool-call arguments were not valid JSON and are kept verbatim.
    InvalidToolArguments,
    /// A joined outcome (side file, `--outcomes`) disagrees with the record's own; the
    /// record's own is kept.
    OutcomeConflict,
    /// A branch of the source's message tree that the kept conversation does not follow
    /// (a rewound, edited or retried turn); its lines are not steps.
    AbandonedBranch,
    /// A tool observation the collector cut short (a truncation marker, or a JSON payload
    /// cut mid-value); the record lacks part of what the tool returned.
    TruncatedObservation,
}

impl GapKind {
    /// The snake_case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            GapKind::UnansweredToolCall => "unanswered_tool_call",
            GapKind::ResultWithoutCall => "result_without_call",
            GapKind::DuplicateToolCallId => "duplicate_tool_call_id",
            GapKind::UnresolvedSubagentRef => "unresolved_subagent_ref",
            GapKind::UnresolvedContinuation => "unresolved_continuation",
            GapKind::NoSteps => "no_steps",
            GapKind::IncompleteGeneration => "incomplete_generation",
            GapKind::InvalidToolArguments => "invalid_tool_arguments",
            GapKind::OutcomeConflict => "outcome_conflict",
            GapKind::AbandonedBranch => "abandoned_branch",
            GapKind::TruncatedObservation => "truncated_observation",
        }
    }

    /// Every gap kind, for documentation and tests.
    pub const ALL: [GapKind; 11] = [
        GapKind::UnansweredToolCall,
        GapKind::ResultWithoutCall,
        GapKind::DuplicateToolCallId,
        GapKind::UnresolvedSubagentRef,
        GapKind::UnresolvedContinuation,
        GapKind::NoSteps,
        GapKind::IncompleteGeneration,
        GapKind::InvalidToolArguments,
        GapKind::OutcomeConflict,
        GapKind::AbandonedBranch,
        GapKind::TruncatedObservation,
    ];
}

impl Gap {
    /// A gap at a step with a detail.
    pub fn at(kind: GapKind, step: Option<usize>, detail: impl Into<String>) -> Self {
        Gap { detail: Some(detail.into()), kind, step }
    }
}
