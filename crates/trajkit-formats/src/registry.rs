//! The readers trajkit knows, in detection order.

use crate::reader::Reader;
use crate::{
    adp, atif, bfcl, canonical, chat, claude_code, cline, codex, copilot, gemini_cli, gym, harbor_traces, harbor_trial,
    inspect, langfuse, langsmith, mini_swe_agent, mlflow, nebius, opencode, openhands, otel, swe_agent, swe_gym,
    swe_smith, tau2, tau_bench, toolbench,
};

// Readers with state or methods of their own; the others are `reader::FnReader` statics in
// their modules (`READER`).
static CANONICAL: canonical::CanonicalReader = canonical::CanonicalReader;
static ATIF: atif::AtifReader = atif::AtifReader;
static CLAUDE_CODE: claude_code::ClaudeCodeReader = claude_code::ClaudeCodeReader;
static CLINE: cline::ClineReader = cline::ClineReader;
static OPENCODE: opencode::OpenCodeReader = opencode::OpenCodeReader;
static SWE_AGENT: swe_agent::SweAgentReader = swe_agent::SweAgentReader;
static GYM: gym::GymReader = gym::GymReader;
static HARBOR_TRIAL: harbor_trial::HarborTrialReader = harbor_trial::HarborTrialReader;
static HARBOR_TRACES: harbor_traces::HarborTracesReader = harbor_traces::HarborTracesReader;
static BFCL: bfcl::BfclReader = bfcl::BfclReader;
static TAU2: tau2::Tau2Reader = tau2::Tau2Reader;
static INSPECT: inspect::InspectReader = inspect::InspectReader;
static OTEL: otel::OtelReader = otel::OtelReader;
static ALL: &[&dyn Reader] = &[
    &CANONICAL,
    &ATIF,
    &INSPECT,
    &GYM,
    &swe_smith::READER,
    &swe_gym::READER,
    &nebius::READER,
    &SWE_AGENT,
    &mini_swe_agent::READER,
    &HARBOR_TRIAL,
    &HARBOR_TRACES,
    &openhands::READER,
    &adp::READER,
    &chat::OPENAI_MESSAGES_READER,
    &chat::SHAREGPT_READER,
    &toolbench::READER,
    &BFCL,
    &TAU2,
    &tau_bench::READER,
    &CLAUDE_CODE,
    &codex::READER,
    &CLINE,
    &gemini_cli::READER,
    &copilot::CHAT_READER,
    &copilot::CLI_READER,
    &OPENCODE,
    &mlflow::READER,
    &langfuse::READER,
    &langsmith::READER,
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
