//! GitHub Copilot sessions, one family per form: `copilot-chat` reads VS Code Copilot Chat
//! sessions (`workspaceStorage/<hash>/chatSessions/<id>.json`, the newer `<id>.jsonl`
//! mutation log, and "Chat: Export Chat..." files); `copilot-cli` reads Copilot CLI session
//! logs (`~/.copilot/session-state/<id>/events.jsonl`). One file, one session, one
//! trajectory. See docs/formats/copilot.md.

mod chat;
mod cli;
mod oplog;

pub(crate) use chat::READER as CHAT_READER;
pub(crate) use cli::READER as CLI_READER;

use serde_json::{Map, Value};
use trajkit_model::{Extra, Gap, GapKind, Metrics, Step, ToolCall};

/// A tool call as both forms record it: id, name and arguments (a JSON string parsed, kept
/// verbatim and flagged when it is not JSON), the rest of the source object in `extra`.
fn tool_call(mut c: Map<String, Value>, id_key: &str, name_key: &str) -> ToolCall {
    let id = crate::json::take_str(&mut c, id_key);
    let name = crate::json::take_str(&mut c, name_key).unwrap_or_default();
    let (arguments, arguments_invalid) = crate::json::take_arguments(&mut c);
    ToolCall { arguments, arguments_invalid, extra: c.into(), id, name, text_embedded: false }
}

/// Token figures from named fields (prompt, completion, cached); `None` when none is there.
fn metrics(prompt: Option<u64>, completion: Option<u64>, cached: Option<u64>, extra: Extra) -> Option<Metrics> {
    let m = Metrics {
        cached_tokens: cached,
        completion_tokens: completion,
        cost_usd: None,
        duration_seconds: None,
        prompt_tokens: prompt,
        extra,
    };
    (!m.is_empty()).then_some(m)
}

/// ISO-8601 of a Unix time in milliseconds (VS Code writes request and round times so).
fn iso_from_millis(v: &Value) -> Option<String> {
    let ms = u128::from(v.as_u64()?);
    trajkit_model::time::iso_from_unix_nanos(ms.checked_mul(1_000_000)?)
}

/// The gaps every session gets after its steps are built: calls and results paired by id
/// (`links`), an `invalid_tool_arguments` gap per call whose arguments were not JSON, and
/// `no_steps` for an empty session.
fn session_gaps(steps: &[Step], gaps: &mut Vec<Gap>) {
    crate::links::link_tool_results(steps, gaps);
    for (i, s) in steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
}
