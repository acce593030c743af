//! The mapping file (`mapping.toml`): where an in-house JSON shape keeps each part of a
//! trajectory, as field paths. Every field has a default (the OpenAI chat shape), so a
//! mapping states only what differs. docs/formats/mapping.md documents each key.

use std::collections::BTreeMap;

use serde::Deserialize;
use trajkit_model::{Role, SuccessRule, Verification};

use super::path::FieldPath;

/// The file as written (TOML).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: String,
    #[serde(default)]
    layout: Option<String>,
    #[serde(default)]
    records: Option<String>,
    #[serde(default)]
    record: RecordFile,
    #[serde(default)]
    message: MessageFile,
    #[serde(default)]
    tool_call: ToolCallFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordFile {
    messages: Option<String>,
    session: Option<String>,
    task_id: Option<String>,
    instruction: Option<String>,
    environment: Option<String>,
    model: Option<String>,
    agent: Option<String>,
    tools: Option<String>,
    reward: Option<String>,
    success: Option<String>,
    status: Option<String>,
    #[serde(default)]
    success_values: Vec<String>,
    #[serde(default)]
    failure_values: Vec<String>,
    verification: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageFile {
    role: Option<String>,
    content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<String>,
    tool_call_id: Option<String>,
    timestamp: Option<String>,
    prompt_tokens: Option<String>,
    completion_tokens: Option<String>,
    cost_usd: Option<String>,
    default_role: Option<String>,
    call_name: Option<String>,
    call_arguments: Option<String>,
    call_id: Option<String>,
    result: Option<String>,
    #[serde(default)]
    roles: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCallFile {
    id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
}

/// How a mapped file holds its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordLayout {
    /// JSON Lines: one record per line.
    Lines,
    /// The whole file is one record.
    Document,
    /// The file is a JSON array of records.
    Array,
    /// Decided per file: `.jsonl` or several lines → lines, a top-level array → array,
    /// else one document.
    Auto,
}

/// A checked mapping: every path parsed, every rule understood.
#[derive(Debug)]
pub struct Spec {
    /// The mapping's name (`[a-z0-9][a-z0-9_-]*`): records report format `mapping:NAME`.
    pub name: String,
    pub layout: RecordLayout,
    /// Where the records are inside a document (an array), when not at the top.
    pub records: Option<FieldPath>,
    pub record: RecordPaths,
    pub message: MessagePaths,
    pub tool_call: ToolCallPaths,
}

/// Record-level fields.
#[derive(Debug)]
pub struct RecordPaths {
    pub messages: FieldPath,
    pub session: Option<FieldPath>,
    pub task_id: Option<FieldPath>,
    pub instruction: Option<FieldPath>,
    pub environment: Option<FieldPath>,
    pub model: Option<FieldPath>,
    pub agent: Option<FieldPath>,
    pub tools: Option<FieldPath>,
    pub reward: Option<FieldPath>,
    pub success: Option<SuccessRule>,
    pub status: Option<FieldPath>,
    pub success_values: Vec<String>,
    pub failure_values: Vec<String>,
    pub verification: Verification,
}

/// Fields of one message, relative to the message.
#[derive(Debug)]
pub struct MessagePaths {
    pub role: FieldPath,
    pub content: FieldPath,
    pub reasoning: Option<FieldPath>,
    pub tool_calls: FieldPath,
    pub tool_call_id: FieldPath,
    pub timestamp: Option<FieldPath>,
    /// Token counts and cost of the model call that wrote the message.
    pub prompt_tokens: Option<FieldPath>,
    pub completion_tokens: Option<FieldPath>,
    pub cost_usd: Option<FieldPath>,
    /// The role (a source value) of messages without one: ReAct step lists have no roles.
    pub default_role: Option<String>,
    /// One call written in the message itself (`action.name`, `action.args`), read when the
    /// message has no `tool_calls` array.
    pub inline_call: Option<InlineCall>,
    /// The result of the message's call carried in the same message (`observation`).
    pub result: Option<FieldPath>,
    /// Source role value → canonical role.
    pub roles: BTreeMap<String, Role>,
}

/// Paths of a call written in its message, relative to the message.
#[derive(Debug)]
pub struct InlineCall {
    pub name: FieldPath,
    pub arguments: Option<FieldPath>,
    pub id: Option<FieldPath>,
}

/// Fields of one tool call, relative to the call.
#[derive(Debug)]
pub struct ToolCallPaths {
    pub id: FieldPath,
    pub name: FieldPath,
    pub arguments: FieldPath,
}

impl Spec {
    /// Parses and checks a mapping file's text; the error names the key at fault.
    pub fn parse(text: &str) -> Result<Spec, String> {
        let file: SpecFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let name_ok = file.name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && file.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !name_ok {
            return Err(format!("`name` {:?} must match [a-z0-9][a-z0-9_-]*", file.name));
        }
        let layout = match file.layout.as_deref() {
            None | Some("auto") => RecordLayout::Auto,
            Some("lines") => RecordLayout::Lines,
            Some("document") => RecordLayout::Document,
            Some("array") => RecordLayout::Array,
            Some(other) => return Err(format!("`layout` {other:?} is not one of auto, lines, document, array")),
        };
        if file.records.is_some() && !matches!(layout, RecordLayout::Document | RecordLayout::Auto) {
            return Err("`records` (an array inside a document) needs `layout = \"document\"`".into());
        }
        Ok(Spec {
            name: file.name,
            layout,
            records: opt_path("records", file.records)?,
            record: record_paths(file.record)?,
            message: message_paths(file.message)?,
            tool_call: ToolCallPaths {
                id: path_or("tool_call.id", file.tool_call.id, "id")?,
                name: path_or("tool_call.name", file.tool_call.name, "function.name")?,
                arguments: path_or("tool_call.arguments", file.tool_call.arguments, "function.arguments")?,
            },
        })
    }
}

fn record_paths(r: RecordFile) -> Result<RecordPaths, String> {
    let success = match r.success {
        Some(text) => Some(
            SuccessRule::parse(&text)
                .ok_or_else(|| format!("`record.success` {text:?} is not `reward OP NUMBER` (OP: >=, >, <=, <, ==)"))?,
        ),
        None => None,
    };
    if success.is_some() && r.reward.is_none() {
        return Err("`record.success` needs `record.reward` (the rule applies to it)".into());
    }
    let verification = match r.verification.as_deref() {
        None | Some("source_reported") => Verification::SourceReported,
        Some("source_evaluator") => Verification::SourceEvaluator,
        Some(other) => {
            return Err(format!("`record.verification` {other:?} is not source_reported or source_evaluator"))
        }
    };
    Ok(RecordPaths {
        messages: path_or("record.messages", r.messages, "messages")?,
        session: opt_path("record.session", r.session)?,
        task_id: opt_path("record.task_id", r.task_id)?,
        instruction: opt_path("record.instruction", r.instruction)?,
        environment: opt_path("record.environment", r.environment)?,
        model: opt_path("record.model", r.model)?,
        agent: opt_path("record.agent", r.agent)?,
        tools: opt_path("record.tools", r.tools)?,
        reward: opt_path("record.reward", r.reward)?,
        success,
        status: opt_path("record.status", r.status)?,
        success_values: r.success_values,
        failure_values: r.failure_values,
        verification,
    })
}

fn message_paths(m: MessageFile) -> Result<MessagePaths, String> {
    let mut roles: BTreeMap<String, Role> =
        [("system", Role::System), ("user", Role::User), ("assistant", Role::Assistant), ("tool", Role::Tool)]
            .into_iter()
            .map(|(k, r)| (k.to_string(), r))
            .collect();
    for (from, to) in m.roles {
        let role = match to.as_str() {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            "environment" => Role::Environment,
            other => {
                return Err(format!(
                    "`message.roles.{from}` = {other:?}: not one of system, user, assistant, tool, environment"
                ))
            }
        };
        roles.insert(from, role);
    }
    if let Some(d) = &m.default_role {
        if !roles.contains_key(d) {
            return Err(format!("`message.default_role` {d:?} is not a role of [message.roles]"));
        }
    }
    let inline_call = match m.call_name {
        Some(name) => Some(InlineCall {
            name: path_or("message.call_name", Some(name), "")?,
            arguments: opt_path("message.call_arguments", m.call_arguments)?,
            id: opt_path("message.call_id", m.call_id)?,
        }),
        None if m.call_arguments.is_some() || m.call_id.is_some() => {
            return Err("`message.call_arguments` / `message.call_id` need `message.call_name`".into())
        }
        None => None,
    };
    Ok(MessagePaths {
        default_role: m.default_role,
        inline_call,
        result: opt_path("message.result", m.result)?,
        role: path_or("message.role", m.role, "role")?,
        content: path_or("message.content", m.content, "content")?,
        reasoning: opt_path("message.reasoning", m.reasoning)?,
        tool_calls: path_or("message.tool_calls", m.tool_calls, "tool_calls")?,
        tool_call_id: path_or("message.tool_call_id", m.tool_call_id, "tool_call_id")?,
        timestamp: opt_path("message.timestamp", m.timestamp)?,
        prompt_tokens: opt_path("message.prompt_tokens", m.prompt_tokens)?,
        completion_tokens: opt_path("message.completion_tokens", m.completion_tokens)?,
        cost_usd: opt_path("message.cost_usd", m.cost_usd)?,
        roles,
    })
}

fn opt_path(key: &str, text: Option<String>) -> Result<Option<FieldPath>, String> {
    text.map(|t| FieldPath::parse(&t).map_err(|e| format!("`{key}`: {e}"))).transpose()
}

fn path_or(key: &str, text: Option<String>, default: &str) -> Result<FieldPath, String> {
    FieldPath::parse(text.as_deref().unwrap_or(default)).map_err(|e| format!("`{key}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_alone_is_the_openai_chat_shape() {
        let s = Spec::parse("name = \"acme\"").unwrap();
        assert_eq!(s.layout, RecordLayout::Auto);
        assert_eq!(s.record.messages.as_str(), "messages");
        assert_eq!(s.tool_call.name.as_str(), "function.name");
        assert_eq!(s.message.roles.get("tool"), Some(&Role::Tool));
    }

    #[test]
    fn mistakes_name_the_key() {
        let bad = |t: &str| Spec::parse(t).unwrap_err();
        assert!(bad("name = \"Acme\"").contains("`name`"));
        assert!(bad("name = \"a\"\n[record]\nsuccess = \"score > 1\"\nreward = \"r\"").contains("`record.success`"));
        assert!(bad("name = \"a\"\n[record]\nsuccess = \"reward > 1\"").contains("needs `record.reward`"));
        assert!(bad("name = \"a\"\n[message.roles]\nbot = \"robot\"").contains("`message.roles.bot`"));
        assert!(bad("name = \"a\"\n[record]\nmodel = \"a..b\"").contains("`record.model`"));
        assert!(bad("name = \"a\"\n[record]\nmodle = \"m\"").contains("unknown field"));
        assert!(bad("name = \"a\"\nlayout = \"lines\"\nrecords = \"data\"").contains("`records`"));
    }
}
