//! The readers trajkit knows, in detection order.

use crate::reader::Reader;
use crate::{
    atif, claude_code, codex, gym, harbor_traces, harbor_trial, mini_swe_agent, nebius, openhands, swe_agent, swe_gym,
    swe_smith,
};

static CANONICAL: crate::canonical::CanonicalReader = crate::canonical::CanonicalReader;
static ATIF: atif::AtifReader = atif::AtifReader;
static CLAUDE_CODE: claude_code::ClaudeCodeReader = claude_code::ClaudeCodeReader;
static CODEX: codex::CodexReader = codex::CodexReader;
static CLINE: crate::cline::ClineReader = crate::cline::ClineReader;
static GEMINI_CLI: crate::gemini_cli::GeminiCliReader = crate::gemini_cli::GeminiCliReader;
static COPILOT_CHAT: crate::copilot::CopilotChatReader = crate::copilot::CopilotChatReader;
static COPILOT_CLI: crate::copilot::CopilotCliReader = crate::copilot::CopilotCliReader;
static OPENCODE: crate::opencode::OpenCodeReader = crate::opencode::OpenCodeReader;
static SWE_AGENT: swe_agent::SweAgentReader = swe_agent::SweAgentReader;
static MINI_SWE_AGENT: mini_swe_agent::MiniSweAgentReader = mini_swe_agent::MiniSweAgentReader;
static GYM: gym::GymReader = gym::GymReader;
static HARBOR_TRIAL: harbor_trial::HarborTrialReader = harbor_trial::HarborTrialReader;
static HARBOR_TRACES: harbor_traces::HarborTracesReader = harbor_traces::HarborTracesReader;
static OPENHANDS: openhands::OpenHandsReader = openhands::OpenHandsReader;
static BFCL: crate::bfcl::BfclReader = crate::bfcl::BfclReader;
static TAU2: crate::tau2::Tau2Reader = crate::tau2::Tau2Reader;
static INSPECT: crate::inspect::InspectReader = crate::inspect::InspectReader;
static MLFLOW: crate::mlflow::MlflowReader = crate::mlflow::MlflowReader;
static LANGFUSE: crate::langfuse::LangfuseReader = crate::langfuse::LangfuseReader;
static LANGSMITH: crate::langsmith::LangsmithReader = crate::langsmith::LangsmithReader;
static OTEL: crate::otel::OtelReader = crate::otel::OtelReader;
static ALL: &[&dyn Reader] = &[
    &CANONICAL,
    &ATIF,
    &INSPECT,
    &GYM,
    &swe_smith::READER,
    &swe_gym::READER,
    &nebius::READER,
    &SWE_AGENT,
    &MINI_SWE_AGENT,
    &HARBOR_TRIAL,
    &HARBOR_TRACES,
    &OPENHANDS,
    &crate::adp::READER,
    &crate::chat::OPENAI_MESSAGES_READER,
    &crate::chat::SHAREGPT_READER,
    &crate::toolbench::READER,
    &BFCL,
    &TAU2,
    &crate::tau_bench::READER,
    &CLAUDE_CODE,
    &CODEX,
    &CLINE,
    &GEMINI_CLI,
    &COPILOT_CHAT,
    &COPILOT_CLI,
    &OPENCODE,
    &MLFLOW,
    &LANGFUSE,
    &LANGSMITH,
    &OTEL,
];

/// Every registered reader.
pub fn all() -> &'static [&'static dyn Reader] {
    ALL
}

/// Indexes into [`all`], highest `max_confidence` first (registry order among equals).
pub fn by_max_confidence() -> &'static [usize] {
    static ORDER: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    ORDER.get_or_init(|| {
        let mut order: Vec<usize> = (0..ALL.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(ALL[i].max_confidence()));
        order
    })
}

/// The reader for a family name (`--format`).
pub fn by_name(name: &str) -> Option<&'static dyn Reader> {
    ALL.iter().copied().find(|r| r.name() == name)
}

/// Every family name a user may pass to `--format`.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|r| r.name()).collect()
}

/// The reader a `--format` value names: a built-in family, or `mapping:PATH` (a mapping
/// file, see `crate::mapping`).
pub fn resolve(name: &str) -> Result<&'static dyn Reader, crate::FormatError> {
    if let Some(path) = name.strip_prefix(crate::mapping::FORMAT_PREFIX) {
        return Ok(crate::mapping::load(std::path::Path::new(path))?);
    }
    by_name(name).ok_or_else(|| crate::FormatError::UnknownFormat { name: name.to_string(), known: names().join(", ") })
}
