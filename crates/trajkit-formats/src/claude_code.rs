//! Claude Code session logs: `~/.claude/projects/<project>/<session>.jsonl`, one JSON
//! object per line, the whole file one session (one trajectory).
//!
//! Lines form a tree through `uuid` / `parentUuid`. The conversation is the branch that
//! ends at the last message of the file, plus the lines that belong to the same turns
//! (the other blocks of a split API response, the results of parallel tool calls);
//! branches the conversation left (rewinds, retries) are recorded as gaps. Sidechain
//! lines (`isSidechain: true`) and subagent files (`<session>/subagents/agent-*.jsonl`,
//! or older `agent-*.jsonl` files next to the session) become nested subagents. See
//! docs/formats/claude-code.md.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use trajkit_model::{
    canonical::sha256_hex, Agent, Authorship, Extra, Gap, GapKind, Metrics, Provenance, Role, Step, Subagent, Task,
    ToolCall, ToolResult, Trajectory,
};

use crate::input::{self, InputFile};
use crate::json::{content_text, take, take_str, take_u64};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem};

/// Reader for Claude Code session logs.
pub struct ClaudeCodeReader;

const FAMILY: &str = "claude-code";

/// Keys every message line repeats; kept once on the trajectory (first value seen) and
/// dropped from a step when the step's value is the same.
const ENVELOPE: &[&str] = &["cwd", "gitBranch", "userType", "slug", "entrypoint", "sessionId", "version"];

impl Reader for ClaudeCodeReader {
    fn name(&self) -> &'static str {
        FAMILY
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let doc = |confidence, reason: &str| claim(confidence, reason, Layout::Document);
        let jsonl = peek.name.ends_with(".jsonl") || peek.multi_line_records;
        if !jsonl {
            return None;
        }
        if peek.has_key("parentUuid")
            && peek.has_key("sessionId")
            && (peek.has_key("uuid") || peek.has_key("isSidechain"))
        {
            return doc(95, "session-log line keys (parentUuid / sessionId / uuid)");
        }
        let first_type = peek.first_line.and_then(|v| v.get("type")).and_then(Value::as_str);
        let metadata_first = match first_type {
            Some("summary") => peek.has_key("leafUuid"),
            Some("file-history-snapshot") => peek.has_key("snapshot"),
            Some("queue-operation" | "last-prompt" | "custom-title" | "agent-name") => peek.has_key("sessionId"),
            Some("progress") => peek.has_key("parentUuid"),
            _ => false,
        };
        let tree_keys = peek.has_key_anywhere("parentUuid") && peek.has_key_anywhere("sessionId");
        if metadata_first && tree_keys {
            return doc(90, "session metadata line followed by session-log lines");
        }
        if peek.first_line.is_none() && tree_keys && peek.has_key_anywhere("isSidechain") {
            return doc(80, "session-log keys in a first line too long or malformed to parse");
        }
        None
    }

    fn referenced_files(&self, file: &InputFile, _layout: Layout) -> Vec<PathBuf> {
        subagent_files(file)
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        RecordResult::from_result(read(raw, file))
    }
}

/// One parsed line of a JSON Lines document.
pub(crate) struct Line {
    /// 1-based line number within the file.
    pub no: u64,
    pub obj: Map<String, Value>,
}

/// Splits a JSON Lines document into objects; any line that is not a JSON object
/// rejects the whole document (a session is one record).
pub(crate) fn parse_lines(bytes: &[u8]) -> Result<Vec<Line>, Problem> {
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let no = i as u64 + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let path = format!("$[line {no}]");
        let value =
            parse_record(line).map_err(|p| Problem::new(p.reason, &path, format!("line {no}: {}", p.message)))?;
        match value {
            Value::Object(obj) => out.push(Line { no, obj }),
            _ => return Err(schema(path, format!("line {no} is not a JSON object"))),
        }
    }
    Ok(out)
}

fn str_of<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str)
}

fn is_sidechain(l: &Line) -> bool {
    l.obj.get("isSidechain").and_then(Value::as_bool) == Some(true)
}

fn line_type(l: &Line) -> &str {
    str_of(&l.obj, "type").unwrap_or("")
}

/// A message line: it has a uuid and is not a streaming progress update.
fn is_message(l: &Line) -> bool {
    str_of(&l.obj, "uuid").is_some() && line_type(l) != "progress"
}

fn message_id(l: &Line) -> Option<&str> {
    l.obj.get("message").and_then(|m| m.get("id")).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn message_content(l: &Line) -> Option<&Value> {
    l.obj.get("message").and_then(|m| m.get("content"))
}

/// A user line that carries only tool results.
fn is_tool_result_line(l: &Line) -> bool {
    line_type(l) == "user"
        && matches!(message_content(l), Some(Value::Array(blocks))
            if !blocks.is_empty() && blocks.iter().all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")))
}

/// Where a line's parent pointer leads.
enum Parent {
    Root,
    Message(usize),
    Missing(String),
}

/// The tree of one scope (main conversation, one sidechain, one subagent file).
struct Tree<'a> {
    lines: Vec<&'a Line>,
    /// uuid -> index in `lines` for message lines.
    messages: HashMap<&'a str, usize>,
    /// uuid -> parent uuid for every line with a uuid (progress lines included).
    parent_of: HashMap<&'a str, Option<&'a str>>,
}

impl<'a> Tree<'a> {
    fn new(lines: Vec<&'a Line>) -> Self {
        let mut messages = HashMap::new();
        let mut parent_of = HashMap::new();
        for (i, l) in lines.iter().enumerate() {
            let Some(uuid) = str_of(&l.obj, "uuid") else {
                continue;
            };
            let parent = str_of(&l.obj, "parentUuid").or_else(|| str_of(&l.obj, "logicalParentUuid"));
            parent_of.insert(uuid, parent);
            if is_message(l) {
                messages.insert(uuid, i);
            }
        }
        Tree { lines, messages, parent_of }
    }

    /// The nearest message ancestor, walking through progress lines.
    fn parent(&self, i: usize) -> Parent {
        let mut next = self
            .lines
            .get(i)
            .and_then(|l| str_of(&l.obj, "parentUuid").or_else(|| str_of(&l.obj, "logicalParentUuid")));
        for _ in 0..=self.parent_of.len() {
            let Some(p) = next else {
                return Parent::Root;
            };
            if let Some(&j) = self.messages.get(p) {
                return Parent::Message(j);
            }
            match self.parent_of.get(p) {
                Some(up) => next = *up,
                None => return Parent::Missing(p.to_string()),
            }
        }
        Parent::Root
    }
}

/// The conversation of one scope: the lines kept, in file order, and what was left.
struct Thread {
    kept: Vec<usize>,
    /// Abandoned branches: (parent line index in the tree, line indices of the branch).
    abandoned: Vec<(Option<usize>, Vec<usize>)>,
    /// Kept lines whose parent is not in the file: (line index, missing uuid).
    missing: Vec<(usize, String)>,
}

fn select_thread(tree: &Tree) -> Thread {
    let msg_idx: Vec<usize> = (0..tree.lines.len()).filter(|&i| is_message(tree.lines[i])).collect();
    let mut thread = Thread { kept: Vec::new(), abandoned: Vec::new(), missing: Vec::new() };
    let Some(&leaf) = msg_idx.last() else {
        return thread;
    };
    let mut on_path: HashSet<usize> = HashSet::new();
    let mut cur = leaf;
    loop {
        if !on_path.insert(cur) {
            break;
        }
        match tree.parent(cur) {
            Parent::Message(p) => cur = p,
            Parent::Root => break,
            Parent::Missing(uuid) => {
                thread.missing.push((cur, uuid));
                break;
            }
        }
    }
    let mut kept: HashSet<usize> = HashSet::new();
    for &i in &msg_idx {
        let keep = on_path.contains(&i)
            || match tree.parent(i) {
                Parent::Message(p) if kept.contains(&p) => {
                    let (l, pl) = (tree.lines[i], tree.lines[p]);
                    let same_response = line_type(l) == "assistant"
                        && line_type(pl) == "assistant"
                        && message_id(l).is_some()
                        && message_id(l) == message_id(pl);
                    same_response || is_tool_result_line(l)
                }
                _ => false,
            };
        if keep {
            kept.insert(i);
            thread.kept.push(i);
        }
    }
    // Abandoned lines grouped by the branch they start.
    let mut branch_of: HashMap<usize, usize> = HashMap::new();
    for &i in &msg_idx {
        if kept.contains(&i) {
            continue;
        }
        let parent = match tree.parent(i) {
            Parent::Message(p) => Some(p),
            _ => None,
        };
        match parent.and_then(|p| branch_of.get(&p).copied()) {
            Some(b) => {
                branch_of.insert(i, b);
                if let Some(entry) = thread.abandoned.get_mut(b) {
                    entry.1.push(i);
                }
            }
            None => {
                branch_of.insert(i, thread.abandoned.len());
                thread.abandoned.push((parent.filter(|p| kept.contains(p)), vec![i]));
            }
        }
    }
    thread
}

/// Whether a user text is written by the harness rather than typed by the person.
fn harness_text(text: &str) -> bool {
    const PREFIXES: &[&str] =
        &["<command-", "<local-command-", "<bash-stdout>", "<bash-stderr>", "Caveat: ", "[Request interrupted by user"];
    PREFIXES.iter().any(|p| text.trim_start().starts_with(p))
}

/// A content value from blocks: one string when every block is a plain text block,
/// else the blocks as the source gives them.
fn content_from_blocks(blocks: Vec<Value>) -> Option<Value> {
    if blocks.is_empty() {
        return None;
    }
    let plain = blocks.iter().all(|b| {
        b.as_object().is_some_and(|m| {
            m.len() == 2
                && m.get("type").and_then(Value::as_str) == Some("text")
                && m.get("text").is_some_and(Value::is_string)
        })
    });
    if plain {
        let texts: Vec<&str> = blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect();
        return Some(Value::String(texts.join("\n")));
    }
    Some(Value::Array(blocks))
}

/// Trajectory-wide values first seen in the lines of a scope.
#[derive(Default)]
struct Envelope {
    values: Map<String, Value>,
}

impl Envelope {
    fn observe(&mut self, lines: &[&Line]) {
        for l in lines {
            for k in ENVELOPE {
                if !self.values.contains_key(*k) {
                    if let Some(v) = l.obj.get(*k).filter(|v| !v.is_null()) {
                        self.values.insert((*k).to_string(), v.clone());
                    }
                }
            }
        }
    }

    /// Removes envelope keys whose value equals the trajectory's.
    fn strip(&self, m: &mut Map<String, Value>) {
        for k in ENVELOPE {
            if m.get(*k).is_some_and(|v| self.values.get(*k) == Some(v)) {
                m.remove(*k);
            }
        }
    }
}

/// What building one scope produced besides the trajectory.
#[derive(Default)]
struct Links {
    /// tool_use id -> step index of the call.
    call_step: HashMap<String, usize>,
    /// agent id -> spawning tool_use id, from results and progress lines.
    agent_call: Vec<(String, String)>,
    /// Prompt of a Task/Agent call -> its id (links sidechains without agent ids).
    prompt_call: HashMap<String, String>,
}

/// Steps, gaps and leftovers of one scope.
struct Built {
    steps: Vec<Step>,
    gaps: Vec<Gap>,
    extra: Extra,
    model: Option<String>,
    links: Links,
}

fn usage_metrics(usage: Value) -> Option<Metrics> {
    let Value::Object(mut usage) = usage else {
        return None;
    };
    let input = usage.get("input_tokens").and_then(Value::as_u64);
    let creation = usage.get("cache_creation_input_tokens").and_then(Value::as_u64);
    let read = take_u64(&mut usage, "cache_read_input_tokens");
    // Checked: on overflow the figure stays absent (the raw counts stay in `extra`).
    let prompt = input.and_then(|i| i.checked_add(creation.unwrap_or(0))?.checked_add(read.unwrap_or(0)));
    if input.is_some() && prompt.is_none() {
        if let Some(r) = read {
            usage.insert("cache_read_input_tokens".into(), Value::from(r));
        }
    }
    let completion = take_u64(&mut usage, "output_tokens");
    let m = Metrics {
        duration_seconds: None,
        cached_tokens: read,
        completion_tokens: completion,
        cost_usd: None,
        extra: usage.into(),
        prompt_tokens: prompt,
    };
    (!m.is_empty()).then_some(m)
}

fn tool_call(mut block: Map<String, Value>) -> ToolCall {
    let id = take_str(&mut block, "id");
    let name = take_str(&mut block, "name").unwrap_or_default();
    let arguments = block.remove("input").unwrap_or(Value::Object(Map::new()));
    block.remove("type");
    ToolCall {
        arguments: arguments.into(),
        arguments_invalid: false,
        extra: block.into(),
        id,
        name,
        text_embedded: false,
    }
}

/// Builds the steps of one scope from its kept lines.
fn build_scope(tree: &Tree, env: &Envelope) -> Built {
    let thread = select_thread(tree);
    let mut steps: Vec<Step> = Vec::new();
    let mut gaps = Vec::new();
    let mut links = Links::default();
    let mut model: Option<String> = None;
    // Line index -> index of the step it produced (the last one when it made two).
    let mut step_of: HashMap<usize, usize> = HashMap::new();
    // message.id -> step of that API response; responses whose usage is on a step already.
    let mut response_step: HashMap<String, usize> = HashMap::new();
    let mut metered: HashSet<String> = HashSet::new();
    // Step -> raw usages equal to its metrics so far, with the merged_lines entry of each.
    let mut step_usage: HashMap<usize, Vec<(Value, Option<usize>)>> = HashMap::new();

    for &i in &thread.kept {
        let line = tree.lines[i];
        let mut obj = line.obj.clone();
        let kind = take_str(&mut obj, "type").unwrap_or_default();
        let uuid = take(&mut obj, "uuid");
        let timestamp = take_str(&mut obj, "timestamp");
        for k in ["parentUuid", "logicalParentUuid", "isSidechain"] {
            obj.remove(k);
        }
        env.strip(&mut obj);
        let message = match obj.remove("message") {
            Some(Value::Object(m)) => Some(m),
            Some(other) => {
                obj.insert("message".into(), other);
                None
            }
            None => None,
        };
        match (kind.as_str(), message) {
            ("assistant", Some(mut msg)) => {
                let mid = str_of(&msg, "id").map(str::to_string);
                // The step of the same API response, when only tool results lie between it
                // and this line (a response split around the result of an eager tool call).
                let target = mid.as_ref().and_then(|id| response_step.get(id).copied()).filter(|&j| {
                    steps.get(j).is_some_and(|s| s.role == Role::Assistant && !s.subagent)
                        && steps.get(j + 1..).is_some_and(|rest| rest.iter().all(|s| s.role == Role::Tool))
                });
                let continues = target.is_some();
                let at = match target {
                    Some(j) => j,
                    None => {
                        let mut step = Step::new(Role::Assistant, None);
                        step.source_id = uuid.clone();
                        step.timestamp = timestamp.clone();
                        steps.push(step);
                        steps.len() - 1
                    }
                };
                if let Some(id) = &mid {
                    response_step.insert(id.clone(), at);
                }
                let Some(step) = steps.get_mut(at) else {
                    continue;
                };
                if continues {
                    if let Some(u) = uuid {
                        push_extra(&mut step.extra, "merged_uuids", u);
                    }
                }
                let msg_model = take_str(&mut msg, "model");
                if let Some(m) = msg_model {
                    if model.is_none() && m != "<synthetic>" {
                        model = Some(m.clone());
                    }
                    let current = step.model.as_deref().or(model.as_deref());
                    if continues && current != Some(m.as_str()) {
                        // A later line names another model: kept with that line.
                        msg.insert("model".into(), Value::String(m));
                    } else if !continues && step.model.is_none() && model.as_deref() != Some(m.as_str()) {
                        step.model = Some(m);
                    }
                }
                let usage = msg.remove("usage");
                let blocks = match msg.remove("content") {
                    Some(Value::Array(b)) => b,
                    Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
                    _ => Vec::new(),
                };
                let mut parts: Vec<Value> = match step.content.take().map(Value::from) {
                    Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
                    Some(Value::Array(a)) => a,
                    _ => Vec::new(),
                };
                for block in blocks {
                    let Value::Object(mut b) = block else {
                        parts.push(block);
                        continue;
                    };
                    match str_of(&b, "type") {
                        Some("tool_use" | "server_tool_use") => {
                            let call = tool_call(b);
                            if let Some(id) = &call.id {
                                links.call_step.insert(id.clone(), at);
                                if matches!(call.name.as_str(), "Task" | "Agent") {
                                    if let Some(p) = call.arguments.get("prompt").and_then(Value::as_str) {
                                        links.prompt_call.insert(p.to_string(), id.clone());
                                    }
                                }
                            }
                            step.tool_calls.push(call);
                        }
                        Some("thinking") => {
                            if let Some(t) = take_str(&mut b, "thinking") {
                                step.reasoning = Some(match step.reasoning.take() {
                                    Some(prev) => format!("{prev}\n{t}"),
                                    None => t,
                                });
                            }
                            b.remove("type");
                            if !b.is_empty() {
                                push_extra(&mut step.extra, "thinking", Value::Object(b));
                            }
                        }
                        Some("redacted_thinking") => push_extra(&mut step.extra, "redacted_thinking", Value::Object(b)),
                        _ => parts.push(Value::Object(b)),
                    }
                }
                step.content = content_from_blocks(parts).map(Into::into);
                msg.remove("role");
                // Where this line's own values go: the step (first line) or a merged_lines entry.
                let slot = if continues {
                    // Message fields equal to the first line's are not repeated.
                    let first = step.extra.get("message").and_then(Value::as_object);
                    msg.retain(|k, v| first.and_then(|f| f.get(k)) != Some(v));
                    let mut entry = obj;
                    if let Some(t) = timestamp {
                        entry.insert("timestamp".into(), Value::String(t));
                    }
                    if !msg.is_empty() {
                        entry.insert("message".into(), Value::Object(msg));
                    }
                    entry.entry("line").or_insert(Value::from(line.no));
                    push_extra(&mut step.extra, "merged_lines", Value::Object(entry));
                    step.extra.get("merged_lines").and_then(Value::as_array).map(|a| a.len().saturating_sub(1))
                } else {
                    if !msg.is_empty() {
                        step.extra.insert("message".into(), Value::Object(msg));
                    }
                    keep_line_extra(&mut step.extra, obj);
                    None
                };
                if let Some(u) = usage {
                    // The step's metrics come from the last line of the response (streamed
                    // logs write a placeholder output_tokens on the earlier lines); an earlier
                    // line's usage that differs stays with that line.
                    // A response already metered on an earlier step (split around a user
                    // message) keeps its usage with the line, so it is not counted twice.
                    let metered_elsewhere =
                        !step_usage.contains_key(&at) && mid.as_ref().is_some_and(|id| metered.contains(id));
                    if metered_elsewhere {
                        keep_line_usage(&mut step.extra, slot, u);
                    } else {
                        // Earlier lines whose usage differs from this (now final) one keep it;
                        // equal ones are the step's metrics already.
                        let pending = step_usage.entry(at).or_default();
                        for (prev, prev_slot) in std::mem::take(pending) {
                            if prev == u {
                                pending.push((prev, prev_slot));
                            } else {
                                keep_line_usage(&mut step.extra, prev_slot, prev);
                            }
                        }
                        pending.push((u.clone(), slot));
                        step.metrics = usage_metrics(u);
                        if let Some(id) = &mid {
                            metered.insert(id.clone());
                        }
                    }
                }
                step_of.insert(i, at);
            }
            ("user", Some(mut msg)) => {
                let meta = obj.get("isMeta").and_then(Value::as_bool) == Some(true)
                    || obj.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
                let (results, others): (Vec<Value>, Vec<Value>) = match msg.remove("content") {
                    Some(Value::Array(blocks)) => {
                        blocks.into_iter().partition(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                    }
                    Some(Value::String(s)) => (Vec::new(), vec![Value::String(s)]),
                    Some(other) => (Vec::new(), vec![other]),
                    None => (Vec::new(), Vec::new()),
                };
                msg.remove("role");
                let tool_use_result = obj.remove("toolUseResult");
                let had_results = !results.is_empty();
                if had_results {
                    let mut step = Step::new(Role::Tool, None);
                    step.source_id = uuid.clone();
                    step.timestamp = timestamp.clone();
                    let single = results.len() == 1;
                    for r in results {
                        let Value::Object(mut r) = r else {
                            continue;
                        };
                        r.remove("type");
                        let call_id = take_str(&mut r, "tool_use_id");
                        let content = take(&mut r, "content");
                        if single {
                            if let Some(t) = &tool_use_result {
                                r.insert("toolUseResult".into(), t.clone());
                            }
                        }
                        if let Some(id) = &call_id {
                            for agent in agent_ids_of(tool_use_result.as_ref(), content.as_ref(), &obj) {
                                links.agent_call.push((agent, id.clone()));
                            }
                        }
                        step.tool_results.push(ToolResult {
                            call_id,
                            content: content.map(Into::into),
                            extra: r.into(),
                            subagent_refs: Vec::new(),
                        });
                    }
                    if !single {
                        if let Some(t) = tool_use_result.clone() {
                            step.extra.insert("toolUseResult".into(), t);
                        }
                    }
                    steps.push(step);
                }
                if !others.is_empty() || !had_results {
                    let content = match others.as_slice() {
                        [Value::String(s)] => Some(Value::String(s.clone())),
                        _ => content_from_blocks(others),
                    };
                    let text = content.as_ref().and_then(content_text).unwrap_or_default();
                    let mut step = Step::new(Role::User, content);
                    step.source_id = uuid;
                    step.timestamp = timestamp;
                    if meta || harness_text(&text) {
                        step.authorship = Authorship::Unknown;
                    }
                    steps.push(step);
                }
                if let Some(step) = steps.last_mut() {
                    if !msg.is_empty() {
                        step.extra.insert("message".into(), Value::Object(msg));
                    }
                    keep_line_extra(&mut step.extra, obj);
                }
                step_of.insert(i, steps.len() - 1);
            }
            (_, message) => {
                let role = if kind == "system" { Role::System } else { Role::Environment };
                let content = take(&mut obj, "content");
                let mut step = Step::new(role, content);
                step.source_id = uuid;
                step.timestamp = timestamp;
                if kind != "system" {
                    step.extra.insert("type".into(), Value::String(kind.clone()));
                }
                if let Some(m) = message {
                    step.extra.insert("message".into(), Value::Object(m));
                }
                keep_line_extra(&mut step.extra, obj);
                steps.push(step);
                step_of.insert(i, steps.len() - 1);
            }
        }
    }

    // Progress lines also name the agent a tool call runs.
    for l in &tree.lines {
        if line_type(l) != "progress" {
            continue;
        }
        let data = l.obj.get("data");
        let agent = data.and_then(|d| d.get("agentId")).and_then(Value::as_str);
        let call = str_of(&l.obj, "parentToolUseID");
        if let (Some(a), Some(c)) = (agent, call) {
            links.agent_call.push((a.to_string(), c.to_string()));
        }
    }

    link_tool_results(&steps, &mut gaps);
    for (i, uuid) in &thread.missing {
        gaps.push(Gap::at(GapKind::UnresolvedContinuation, step_of.get(i).copied(), format!("parentUuid {uuid}")));
    }
    let mut extra = Extra::new();
    let mut branches = Vec::new();
    for (parent, members) in &thread.abandoned {
        let first = members.first().map(|&i| tree.lines[i]);
        let lines: Vec<Value> = members.iter().map(|&i| Value::from(tree.lines[i].no)).collect();
        let uuid = first.and_then(|l| str_of(&l.obj, "uuid")).unwrap_or_default();
        let detail = format!(
            "{} message line(s) from line {} (uuid {uuid}) not on the kept conversation",
            members.len(),
            first.map(|l| l.no).unwrap_or(0)
        );
        gaps.push(Gap::at(GapKind::AbandonedBranch, parent.and_then(|p| step_of.get(&p).copied()), detail));
        let mut b = Map::new();
        b.insert("root_uuid".into(), Value::String(uuid.to_string()));
        b.insert("lines".into(), Value::Array(lines));
        branches.push(Value::Object(b));
    }
    if !branches.is_empty() {
        extra.insert("abandoned_branches".into(), Value::Array(branches));
    }
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    Built { steps, gaps, extra, model, links }
}

/// Agent ids a tool result names: `toolUseResult.agentId`, a line-level `agentId`, or
/// the `agentId: <id>` note Claude Code appends to a Task result's text.
fn agent_ids_of(tool_use_result: Option<&Value>, content: Option<&Value>, line: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(a) = tool_use_result.and_then(|t| t.get("agentId")).and_then(Value::as_str) {
        out.push(a.to_string());
    }
    if let Some(a) = str_of(line, "agentId") {
        out.push(a.to_string());
    }
    if let Some(text) = content.and_then(content_text) {
        if let Some(pos) = text.find("agentId: ") {
            let rest = &text[pos + "agentId: ".len()..];
            let id: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect();
            if !id.is_empty() {
                out.push(id);
            }
        }
    }
    out.dedup();
    out
}

/// Keeps a superseded `usage` with the line it came from: in the message leftovers of the
/// step's first line (`extra.message`) or of its `merged_lines[n]` entry.
fn keep_line_usage(extra: &mut Extra, merged: Option<usize>, usage: Value) {
    let empty = || Value::Object(Map::new());
    let slot = match merged {
        Some(n) => extra
            .get_mut("merged_lines")
            .and_then(Value::as_array_mut)
            .and_then(|a| a.get_mut(n))
            .and_then(Value::as_object_mut)
            .map(|h| h.entry("message").or_insert_with(empty)),
        None => Some(extra.entry("message").or_insert_with(empty)),
    };
    match slot.and_then(Value::as_object_mut) {
        Some(m) if !m.contains_key("usage") => {
            m.insert("usage".into(), usage);
        }
        _ => {}
    }
}

fn push_extra(extra: &mut Extra, key: &str, v: Value) {
    let slot = extra.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(a) = slot {
        a.push(v);
    }
}

/// What is left of a line goes to the step's extra.
fn keep_line_extra(extra: &mut Extra, obj: Map<String, Value>) {
    for (k, v) in obj {
        extra.insert(k, v);
    }
}

/// The first user prompt the person typed (harness-written user lines skipped).
fn first_prompt(steps: &[Step]) -> Option<String> {
    steps
        .iter()
        .filter(|s| s.role == Role::User && s.authorship == Authorship::Declared)
        .find_map(|s| s.content.as_ref().and_then(crate::json::step_content_text).filter(|t| !t.trim().is_empty()))
}

fn task_of(steps: &[Step], sha: &str) -> Task {
    crate::chat::session_task(first_prompt(steps), sha)
}

/// Session-level lines that are not messages go to the trajectory's extra.
fn metadata_extra(lines: &[&Line], extra: &mut Extra) {
    let mut progress = 0u64;
    for l in lines {
        if is_message(l) {
            continue;
        }
        match line_type(l) {
            "progress" => {
                progress += 1;
                // Verbatim with its line number: hook runs (hookName, command) and
                // agent_progress transcripts exist nowhere else in some sessions.
                let mut o = l.obj.clone();
                o.entry("line").or_insert(Value::from(l.no));
                push_extra(extra, "progress", Value::Object(o));
            }
            "summary" => push_extra(extra, "summaries", Value::Object(l.obj.clone())),
            "file-history-snapshot" => push_extra(extra, "file_history_snapshots", Value::Object(l.obj.clone())),
            _ => push_extra(extra, "other_lines", Value::Object(l.obj.clone())),
        }
    }
    if progress > 0 {
        extra.insert("progress_lines".into(), Value::from(progress));
    }
}

/// Builds a trajectory from the lines of one scope.
fn trajectory(lines: Vec<&Line>, id: String, provenance: Provenance, sha: &str) -> (Trajectory, Links) {
    let mut env = Envelope::default();
    env.observe(&lines);
    let tree = Tree::new(lines);
    let built = build_scope(&tree, &env);
    let mut extra = built.extra;
    metadata_extra(&tree.lines, &mut extra);
    let mut values = env.values;
    let session_id = match values.remove("sessionId") {
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            extra.insert("sessionId".into(), other);
            None
        }
        None => None,
    };
    let version = match values.remove("version") {
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            extra.insert("version".into(), other);
            None
        }
        None => None,
    };
    for (k, v) in values {
        extra.insert(k, v);
    }
    let task = task_of(&built.steps, sha);
    let t = Trajectory {
        agent: Agent { model: built.model, name: Some(FAMILY.into()), version },
        extra,
        gaps: built.gaps,
        session_id,
        steps: built.steps,
        ..Trajectory::new(id, provenance, task)
    };
    (t, built.links)
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let lines = parse_lines(raw.bytes)?;
    // A file of sidechain lines only is a subagent transcript read on its own.
    let all_side = lines.iter().filter(|l| is_message(l)).all(is_sidechain);
    let (main, side): (Vec<&Line>, Vec<&Line>) = lines.iter().partition(|l| all_side || !is_sidechain(l));
    // A session is one document: its lines are events, never records of their own.
    let prov = Provenance { line: None, ..raw.provenance(FAMILY, file) };
    let (mut t, links) = trajectory(main, raw.id(FAMILY), prov, raw.sha256);

    let mut subagents: Vec<(Option<String>, Option<String>, Trajectory)> = Vec::new();
    // Sidechains written into the session file itself.
    for group in sidechain_groups(&side) {
        let root = group.first().and_then(|l| str_of(&l.obj, "uuid")).unwrap_or_default().to_string();
        let agent = group.iter().find_map(|l| str_of(&l.obj, "agentId")).map(str::to_string);
        let sid = sha256_hex(format!("{}/{root}", raw.sha256).as_bytes());
        let prompt =
            group.iter().find(|l| line_type(l) == "user").and_then(|l| message_content(l)).and_then(content_text);
        let (sub, _) = trajectory(group, format!("claude-code-{}", &sid[..16]), prov_of(&t), raw.sha256);
        subagents.push((agent, prompt, sub));
    }
    // Subagent files.
    for path in subagent_files(file) {
        let display = display_of(file, &path);
        let sub_file = InputFile { fs_path: path.clone(), display: display.clone(), root: file.root.clone() };
        let parsed = input::read_all(&sub_file).map_err(|e| e.to_string()).and_then(|bytes| {
            let sha = sha256_hex(&bytes);
            parse_lines(&bytes).map(|l| (l, sha)).map_err(|p| p.message)
        });
        match parsed {
            Ok((sub_lines, sha)) => {
                let name_id = logical_stem(&path).and_then(|s| s.strip_prefix("agent-").map(str::to_string));
                let agent = sub_lines.iter().find_map(|l| str_of(&l.obj, "agentId")).map(str::to_string).or(name_id);
                let refs: Vec<&Line> = sub_lines.iter().collect();
                let prompt = refs
                    .iter()
                    .find(|l| line_type(l) == "user")
                    .and_then(|l| message_content(l))
                    .and_then(content_text);
                let (sub, _) = trajectory(
                    refs,
                    format!("claude-code-{}", &sha[..16]),
                    Provenance::new(FAMILY, display, sha.as_str()),
                    &sha,
                );
                subagents.push((agent, prompt, sub));
            }
            Err(e) => t.gaps.push(Gap::at(GapKind::UnresolvedSubagentRef, None, format!("{display}: {e}"))),
        }
    }

    // Agents whose transcript is only in agent_progress lines.
    let covered: HashSet<String> = subagents.iter().filter_map(|(a, _, _)| a.clone()).collect();
    let streamed = progress_subagents(&lines, &covered, raw.sha256, &prov_of(&t));
    if !streamed.is_empty() {
        let built: HashSet<&str> = streamed.iter().filter_map(|(a, _, _)| a.as_deref()).collect();
        slim_progress(&mut t.extra, &built);
    }
    subagents.extend(streamed);

    let mut resolved: HashSet<String> = HashSet::new();
    for (agent, prompt, sub) in subagents {
        let call = agent
            .as_ref()
            .and_then(|a| links.agent_call.iter().find(|(x, _)| x == a).map(|(_, c)| c.clone()))
            .or_else(|| prompt.as_ref().and_then(|p| links.prompt_call.get(p).cloned()));
        if let Some(a) = &agent {
            resolved.insert(a.clone());
        }
        let step = call.as_ref().and_then(|c| links.call_step.get(c).copied());
        if let Some(c) = &call {
            for s in t.steps.iter_mut() {
                for r in s.tool_results.iter_mut().filter(|r| r.call_id.as_deref() == Some(c.as_str())) {
                    r.subagent_refs.push(sub.id.clone());
                }
            }
        }
        t.subagents.push(Subagent { spawned_by_step: step, spawned_by_tool_call: call, trajectory: Box::new(sub) });
    }
    let mut reported: HashSet<&str> = HashSet::new();
    for (agent, call) in &links.agent_call {
        if resolved.contains(agent) || !reported.insert(agent.as_str()) {
            continue;
        }
        let step = links.call_step.get(call).copied();
        let progress = lines
            .iter()
            .filter(|l| {
                line_type(l) == "progress"
                    && l.obj.get("data").and_then(|d| d.get("agentId")).and_then(Value::as_str) == Some(agent.as_str())
            })
            .count();
        let detail = if progress > 0 {
            format!(
                "agent {agent} (tool call {call}): no sidechain or subagent file; its transcript is only in \
                 {progress} agent_progress line(s), kept in extra.progress"
            )
        } else {
            format!("agent {agent} (tool call {call}): no sidechain or subagent file")
        };
        t.gaps.push(Gap::at(GapKind::UnresolvedSubagentRef, step, detail));
    }
    Ok(t)
}

/// The agent a progress line streams, when it is an `agent_progress` line.
fn progress_agent(l: &Line) -> Option<&str> {
    let data = l.obj.get("data")?;
    if line_type(l) != "progress" || data.get("type").and_then(Value::as_str) != Some("agent_progress") {
        return None;
    }
    data.get("agentId").and_then(Value::as_str)
}

/// Subagents rebuilt from `agent_progress` lines, for agents with no sidechain or file
/// (`covered`): each nested `data.message` (first copy of each uuid) becomes a line of the
/// agent's transcript, chained in file order, with the progress line's number and envelope.
fn progress_subagents(
    lines: &[Line],
    covered: &HashSet<String>,
    sha: &str,
    prov: &Provenance,
) -> Vec<(Option<String>, Option<String>, Trajectory)> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: HashMap<&str, Vec<&Line>> = HashMap::new();
    for l in lines {
        if let Some(a) = progress_agent(l).filter(|a| !covered.contains(*a)) {
            if !groups.contains_key(a) {
                order.push(a);
            }
            groups.entry(a).or_default().push(l);
        }
    }
    let mut out = Vec::new();
    for agent in order {
        let transcript = progress_transcript(groups.get(agent).map(Vec::as_slice).unwrap_or_default());
        let Some(root) = transcript.first().and_then(|l| str_of(&l.obj, "uuid")).map(str::to_string) else {
            continue;
        };
        let prompt =
            transcript.iter().find(|l| line_type(l) == "user").and_then(|l| message_content(l)).and_then(content_text);
        let sid = sha256_hex(format!("{sha}/{root}").as_bytes());
        let count = transcript.len();
        let (mut sub, _) =
            trajectory(transcript.iter().collect(), format!("claude-code-{}", &sid[..16]), prov.clone(), sha);
        sub.extra.insert("agentId".into(), Value::String(agent.to_string()));
        sub.extra.insert("transcript_source".into(), Value::String("agent_progress".into()));
        sub.extra.insert("progress_messages".into(), Value::from(count));
        out.push((Some(agent.to_string()), prompt, sub));
    }
    out
}

/// The transcript lines of one agent's progress lines: each message with a uuid not seen
/// before, its parent the previous message (the stream is in order and carries no tree).
fn progress_transcript(group: &[&Line]) -> Vec<Line> {
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut prev: Option<&str> = None;
    for l in group {
        let Some(Value::Object(msg)) = l.obj.get("data").and_then(|d| d.get("message")) else {
            continue;
        };
        let Some(uuid) = str_of(msg, "uuid").filter(|u| seen.insert(u)) else {
            continue;
        };
        let mut obj = msg.clone();
        obj.insert("parentUuid".into(), prev.map_or(Value::Null, |p| Value::String(p.to_string())));
        obj.insert("isSidechain".into(), Value::Bool(true));
        for k in ENVELOPE {
            if let Some(v) = l.obj.get(*k) {
                obj.entry(*k).or_insert_with(|| v.clone());
            }
        }
        prev = Some(uuid);
        out.push(Line { no: l.no, obj });
    }
    out
}

/// In the kept progress lines of agents rebuilt as subagents, the first copy of each
/// `data.message` (now a step of the subagent) is replaced by `data.message_uuid` (that
/// step's `source_id`); a repeated copy stays verbatim.
fn slim_progress(extra: &mut Extra, agents: &HashSet<&str>) {
    let Some(Value::Array(kept)) = extra.get_mut("progress") else {
        return;
    };
    let mut seen: HashSet<String> = HashSet::new();
    for p in kept.iter_mut() {
        let Some(data) = p.get_mut("data").and_then(Value::as_object_mut) else {
            continue;
        };
        let streamed = data.get("type").and_then(Value::as_str) == Some("agent_progress")
            && data.get("agentId").and_then(Value::as_str).is_some_and(|a| agents.contains(a));
        if !streamed {
            continue;
        }
        let uuid = data.get("message").and_then(|m| m.get("uuid")).and_then(Value::as_str).map(str::to_string);
        if let Some(u) = uuid.filter(|u| seen.insert(u.clone())) {
            data.remove("message");
            data.insert("message_uuid".into(), Value::String(u));
        }
    }
}

fn prov_of(t: &Trajectory) -> Provenance {
    Provenance { document_index: None, line: None, ..t.provenance.clone() }
}

/// Sidechain lines grouped into runs: by `agentId` when lines carry one, else by the
/// tree (a line joins its parent's group).
fn sidechain_groups<'a>(side: &[&'a Line]) -> Vec<Vec<&'a Line>> {
    let mut groups: Vec<Vec<&'a Line>> = Vec::new();
    let mut by_agent: HashMap<&str, usize> = HashMap::new();
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    for l in side {
        let agent = str_of(&l.obj, "agentId");
        let parent = str_of(&l.obj, "parentUuid").and_then(|p| by_uuid.get(p).copied());
        let g = match agent.and_then(|a| by_agent.get(a).copied()).or(parent) {
            Some(g) => g,
            None => {
                groups.push(Vec::new());
                groups.len() - 1
            }
        };
        if let Some(a) = agent {
            by_agent.entry(a).or_insert(g);
        }
        if let Some(u) = str_of(&l.obj, "uuid") {
            by_uuid.insert(u, g);
        }
        if let Some(group) = groups.get_mut(g) {
            group.push(l);
        }
    }
    groups
}

/// File name without compression and `.jsonl` extensions.
fn logical_stem(path: &Path) -> Option<String> {
    input::logical_name(path).strip_suffix(".jsonl").map(str::to_string)
}

/// Report path of a subagent file: the session's display path with the relative part.
fn display_of(file: &InputFile, path: &Path) -> String {
    let parent_fs = file.fs_path.parent().and_then(|p| p.canonicalize().ok());
    let rel = parent_fs.as_ref().and_then(|p| path.strip_prefix(p).ok());
    match (rel, Path::new(&file.display).parent()) {
        (Some(rel), Some(dp)) => dp.join(rel).display().to_string(),
        _ => path.display().to_string(),
    }
}

fn is_agent_file(path: &Path) -> bool {
    logical_stem(path).is_some_and(|s| s.starts_with("agent-"))
}

/// Session ids of the `agent-*.jsonl` files of a directory, read once per process per
/// directory (a session and its `referenced_files` both ask; a project directory holds
/// many sessions). Keyed by the directory and its modification time.
fn sibling_session_ids(dir: &Path, files: Vec<PathBuf>) -> Vec<(PathBuf, Option<String>)> {
    use std::sync::{Mutex, OnceLock};
    type Cache = HashMap<(PathBuf, Option<std::time::SystemTime>), Vec<(PathBuf, Option<String>)>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let key = (dir.to_path_buf(), std::fs::metadata(dir).and_then(|m| m.modified()).ok());
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Ok(c) = cache.lock() {
        if let Some(hit) = c.get(&key) {
            return hit.clone();
        }
    }
    let ids: Vec<(PathBuf, Option<String>)> = files
        .into_iter()
        .map(|p| {
            let id = session_id_of(&p);
            (p, id)
        })
        .collect();
    if let Ok(mut c) = cache.lock() {
        c.insert(key, ids.clone());
    }
    ids
}

/// The session id of a file: the first `sessionId` among its first lines.
fn session_id_of(path: &Path) -> Option<String> {
    use std::io::{BufRead, BufReader, Read};
    let f = InputFile { fs_path: path.to_path_buf(), display: String::new(), root: PathBuf::new() };
    let reader = input::open(&f).ok()?;
    for line in BufReader::new(reader.take(4 << 20)).lines().take(50) {
        let line = line.ok()?;
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(s) = m.get("sessionId").and_then(Value::as_str) {
            return Some(s.to_string());
        }
    }
    None
}

/// Subagent transcripts of a session file: `<dir>/<stem>/subagents/agent-*.jsonl`, and
/// `agent-*.jsonl` files in the same directory that carry the session's id (the layout
/// of Claude Code 2.0). Canonical paths, sorted.
fn subagent_files(file: &InputFile) -> Vec<PathBuf> {
    if file.is_stdin() || is_agent_file(&file.fs_path) {
        return Vec::new();
    }
    let Some(stem) = logical_stem(&file.fs_path) else {
        return Vec::new();
    };
    let Some(dir) = file.fs_path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let list = |d: &Path| -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(d) else {
            return Vec::new();
        };
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && is_agent_file(p))
            .filter_map(|p| p.canonicalize().ok())
            .collect()
    };
    out.extend(list(&dir.join(&stem).join("subagents")));
    let siblings = list(dir);
    if !siblings.is_empty() {
        if let Some(sid) = session_id_of(&file.fs_path) {
            let ids = sibling_session_ids(dir, siblings);
            out.extend(ids.into_iter().filter(|(_, id)| id.as_deref() == Some(sid.as_str())).map(|(p, _)| p));
        }
    }
    out.sort();
    out.dedup();
    out
}
