//! Record rejections: why a record produced no trajectory, with where and which field.

use serde::Serialize;

/// The closed set of rejection reasons (documented in docs/record.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The record is not valid JSON (syntax, truncation, nesting beyond 128 levels).
    InvalidJson,
    /// The record's bytes are not UTF-8.
    InvalidUtf8,
    /// A required field is missing or has the wrong type.
    SchemaViolation,
    /// A key the format does not allow (ATIF forbids unknown keys outside `extra`).
    UnknownField,
    /// A value outside the format's allowed set (e.g. an unknown ATIF schema_version).
    InvalidValue,
    /// ATIF step ids are not 1, 2, 3, ... in order.
    NonSequentialStepId,
    /// An agent-only ATIF field on a non-agent step.
    AgentOnlyField,
    /// ATIF metrics or reasoning on an agent step with `llm_call_count` 0.
    FieldForbiddenWithoutLlmCall,
    /// A timestamp that is not ISO 8601.
    InvalidTimestamp,
    /// An observation result's `source_call_id` names no tool call of its step.
    UnknownSourceCallId,
    /// Embedded subagents without a unique `trajectory_id`.
    InvalidSubagentId,
    /// A subagent reference with neither `trajectory_id` nor `trajectory_path`.
    UnresolvableSubagentRef,
    /// A path inside the data points outside the input root.
    PathEscapesRoot,
    /// A row of a rollout family that is not a rollout (inputs, profiling, placeholders).
    NotARollout,
    /// Another line of the file already recorded this rollout with different content.
    ConflictingRollout,
    /// Output starts with a prompt-role message while the input is non-empty.
    AmbiguousHistory,
    /// A transition list that rewrites earlier history.
    TransitionRewritesHistory,
    /// A prediction (model patch) without a trajectory: SWE-bench predictions files.
    PredictionOnly,
    /// An evaluation report (outcomes), not a trajectory.
    EvaluationReport,
    /// A function-calling evaluation row with no executed calls and returned observations
    /// (BFCL tasks and single-call outputs): the final call only, not a trajectory.
    FinalCallOnly,
    /// A canonical record whose `content_digest` does not match its content (edited after
    /// it was sealed).
    DigestMismatch,
    /// A record (line, document or archive member) larger than the record size limit
    /// (`--max-record-mib`): skipped without being held in memory.
    RecordTooLarge,
    /// The reader failed on this record (a trajkit bug): reported, never dropped.
    InternalError,
}

impl Reason {
    /// The snake_case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::InvalidJson => "invalid_json",
            Reason::InvalidUtf8 => "invalid_utf8",
            Reason::SchemaViolation => "schema_violation",
            Reason::UnknownField => "unknown_field",
            Reason::InvalidValue => "invalid_value",
            Reason::NonSequentialStepId => "non_sequential_step_id",
            Reason::AgentOnlyField => "agent_only_field",
            Reason::FieldForbiddenWithoutLlmCall => "field_forbidden_without_llm_call",
            Reason::InvalidTimestamp => "invalid_timestamp",
            Reason::UnknownSourceCallId => "unknown_source_call_id",
            Reason::InvalidSubagentId => "invalid_subagent_id",
            Reason::UnresolvableSubagentRef => "unresolvable_subagent_ref",
            Reason::PathEscapesRoot => "path_escapes_root",
            Reason::NotARollout => "not_a_rollout",
            Reason::ConflictingRollout => "conflicting_rollout",
            Reason::AmbiguousHistory => "ambiguous_history",
            Reason::TransitionRewritesHistory => "transition_rewrites_history",
            Reason::PredictionOnly => "prediction_only",
            Reason::EvaluationReport => "evaluation_report",
            Reason::FinalCallOnly => "final_call_only",
            Reason::DigestMismatch => "digest_mismatch",
            Reason::RecordTooLarge => "record_too_large",
            Reason::InternalError => "internal_error",
        }
    }

    /// Every reason, for documentation and tests.
    pub const ALL: [Reason; 23] = [
        Reason::InvalidJson,
        Reason::InvalidUtf8,
        Reason::SchemaViolation,
        Reason::UnknownField,
        Reason::InvalidValue,
        Reason::NonSequentialStepId,
        Reason::AgentOnlyField,
        Reason::FieldForbiddenWithoutLlmCall,
        Reason::InvalidTimestamp,
        Reason::UnknownSourceCallId,
        Reason::InvalidSubagentId,
        Reason::UnresolvableSubagentRef,
        Reason::PathEscapesRoot,
        Reason::NotARollout,
        Reason::ConflictingRollout,
        Reason::AmbiguousHistory,
        Reason::TransitionRewritesHistory,
        Reason::PredictionOnly,
        Reason::EvaluationReport,
        Reason::FinalCallOnly,
        Reason::DigestMismatch,
        Reason::RecordTooLarge,
        Reason::InternalError,
    ];
}

/// One problem found in a record: the field (JSON path) and what is wrong.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    pub reason: Reason,
    /// JSON path of the field, `$` for the whole record.
    pub json_path: String,
    /// A sentence for a person.
    pub message: String,
}

impl Problem {
    pub fn new(reason: Reason, json_path: impl Into<String>, message: impl Into<String>) -> Self {
        Problem { reason, json_path: json_path.into(), message: message.into() }
    }
}

/// A schema violation at `json_path`: the problem readers report most.
pub(crate) fn schema(json_path: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem::new(Reason::SchemaViolation, json_path, message)
}

/// A rejected record: where it is and every problem found (the first is the reason counted).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_index: Option<u64>,
    pub reason: Reason,
    pub problems: Vec<Problem>,
}

impl Rejection {
    /// `path:line` or `path#doc` or `path`, as error messages show a location.
    pub fn location(&self) -> String {
        match (self.line, self.document_index) {
            (Some(l), _) => format!("{}:{}", self.path, l),
            (None, Some(d)) => format!("{}#{}", self.path, d),
            _ => self.path.clone(),
        }
    }
}

/// Maps a serde_json parse error to a problem naming line and column within the record.
pub fn json_problem(err: &serde_json::Error) -> Problem {
    Problem::new(
        Reason::InvalidJson,
        "$",
        format!("invalid JSON at line {} column {}: {}", err.line(), err.column(), err),
    )
}

/// The problem of bytes that are not UTF-8: it names the byte offset of the first bad byte.
fn invalid_utf8(e: &std::str::Utf8Error) -> Problem {
    Problem::new(Reason::InvalidUtf8, "$", format!("invalid UTF-8 at byte offset {}", e.valid_up_to()))
}

/// Parses a record. UTF-8 is checked once over the whole record (a bad byte is reported as
/// `invalid_utf8` with its offset), then parsed as text: serde_json's byte parser checks
/// every string on its own, which costs about a fifth more CPU on real records. Token arrays
/// are read by `token_arrays`' loop.
pub fn parse_record(bytes: &[u8]) -> Result<serde_json::Value, Problem> {
    let text = std::str::from_utf8(bytes).map_err(|e| invalid_utf8(&e))?;
    crate::token_arrays::parse(text).map_err(|e| json_problem(&e))
}

/// `parse_record` with token arrays held back as text (`token_arrays::parse_keeping`), for
/// a reader that moves them into the record as they are.
pub fn parse_record_keeping(bytes: &[u8]) -> Result<crate::token_arrays::Parsed, Problem> {
    let text = std::str::from_utf8(bytes).map_err(|e| invalid_utf8(&e))?;
    crate::token_arrays::parse_keeping(text).map_err(|e| json_problem(&e))
}
