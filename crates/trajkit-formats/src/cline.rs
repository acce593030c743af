//! Cline and Roo Code task directories: `tasks/<task id>/api_conversation_history.json` (the
//! Anthropic-style messages sent to the model), with `ui_messages.json` (the UI's event
//! log, with per-request cost) and `task_metadata.json` (model and environment history,
//! files in context) beside it. One task directory, one trajectory. See
//! docs/formats/cline.md.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use trajkit_model::{Agent, Authorship, Extra, Metrics, Role, Step, Task, ToolCall, ToolResult, Trajectory};

use crate::input::{self, InputFile};
use crate::json::{idx, take, take_f64, take_object, take_str, take_u64};
use crate::links::link_tool_results_except;
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem, Reason};

/// Reader for Cline / Roo Code task directories.
pub struct ClineReader;

const FAMILY: &str = "cline";
/// The conversation file of a task directory.
const HISTORY: &str = "api_conversation_history.json";
/// Side files of a task directory that the conversation's record consumes.
const SIDE_FILES: &[&str] = &["ui_messages.json", "task_metadata.json"];
/// The call that ends a task: it needs no result.
const COMPLETION: &str = "attempt_completion";

impl Reader for ClineReader {
    fn name(&self) -> &'static str {
        FAMILY
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        if peek.name != HISTORY {
            return None;
        }
        let first = peek.bytes.iter().find(|b| !b.is_ascii_whitespace());
        (first == Some(&b'[') && peek.has_key_anywhere("role")).then(|| Detection {
            confidence: 90,
            reason: format!("{HISTORY}: an array of role/content messages (Cline / Roo Code task)"),
            layout: Layout::Document,
        })
    }

    fn referenced_files(&self, file: &InputFile, _layout: Layout) -> Vec<PathBuf> {
        side_files(file)
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        match read(raw, file) {
            Ok(t) => RecordResult::Accepted { trajectory: Box::new(t), rollout_key: None, consumed: side_files(file) },
            Err(p) => RecordResult::Rejected(vec![p]),
        }
    }
}

/// The side files present beside a task's conversation file (canonical paths).
fn side_files(file: &InputFile) -> Vec<PathBuf> {
    let Some(dir) = task_dir(file) else {
        return Vec::new();
    };
    SIDE_FILES.iter().filter_map(|n| dir.join(n).canonicalize().ok()).filter(|p| p.is_file()).collect()
}

/// The task directory of a conversation file (none for standard input).
fn task_dir(file: &InputFile) -> Option<&Path> {
    if file.is_stdin() {
        return None;
    }
    file.fs_path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p })
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let messages = match parse_record(raw.bytes)? {
        Value::Array(a) => a,
        _ => return Err(schema("$", "a task's conversation must be a JSON array")),
    };
    let mut steps: Vec<Step> = Vec::new();
    let mut model: Option<String> = None;
    for (i, m) in messages.into_iter().enumerate() {
        let path = idx("$", i);
        let Value::Object(mut m) = m else {
            return Err(schema(path, "a message must be a JSON object"));
        };
        match take_str(&mut m, "role").as_deref() {
            Some("assistant") => steps.push(assistant_step(m, steps.len(), &mut model)),
            Some("user") => user_steps(m, &mut steps),
            Some(other) => {
                return Err(Problem::new(
                    Reason::InvalidValue,
                    format!("{path}.role"),
                    format!("role {other:?} (user or assistant expected)"),
                ))
            }
            None => return Err(schema(format!("{path}.role"), "missing role")),
        }
    }
    let mut gaps = Vec::new();
    link_tool_results_except(&steps, |i| ends_task(&steps[i]), &mut gaps);
    if steps.is_empty() {
        gaps.push(trajkit_model::Gap { detail: None, kind: trajkit_model::GapKind::NoSteps, step: None });
    }
    let mut extra = Extra::new();
    let side = SideFiles::load(file, &mut extra);
    let task = task_of(&steps, raw.sha256);
    let session_id = task_dir(file)
        .and_then(|d| d.canonicalize().ok())
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()).filter(|n| !n.is_empty() && n != "."));
    let t = Trajectory {
        agent: Agent { model: model.or(side.model), name: Some(FAMILY.into()), version: side.version },
        extra: side.extra.into_iter().chain(extra).collect(),
        gaps,
        metrics: side.metrics,
        session_id,
        steps,
        ..raw.trajectory(FAMILY, file, task)
    };
    Ok(t)
}

/// Whether a step's calls all end the task (`attempt_completion`), so need no result.
fn ends_task(step: &Step) -> bool {
    !step.tool_calls.is_empty() && step.tool_calls.iter().all(|c| c.name == COMPLETION)
}

/// An assistant message: thinking → reasoning, text → content (XML-ish tool calls in it
/// parsed when the message has no `tool_use` block), `tool_use` → calls.
fn assistant_step(mut m: Map<String, Value>, at: usize, model: &mut Option<String>) -> Step {
    let mut step = Step::new(Role::Assistant, None);
    let blocks = match m.remove("content") {
        Some(Value::Array(b)) => b,
        Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
        Some(other) => {
            m.insert("content".into(), other);
            Vec::new()
        }
        None => Vec::new(),
    };
    let mut parts: Vec<Value> = Vec::new();
    for block in blocks {
        let Value::Object(mut b) = block else {
            parts.push(block);
            continue;
        };
        match b.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                b.remove("type");
                let id = take_str(&mut b, "id");
                let name = take_str(&mut b, "name").unwrap_or_default();
                let arguments = b.remove("input").unwrap_or_else(|| Value::Object(Map::new()));
                step.tool_calls.push(ToolCall {
                    arguments: arguments.into(),
                    arguments_invalid: false,
                    extra: b.into(),
                    id,
                    name,
                    text_embedded: false,
                });
            }
            Some("thinking") => {
                b.remove("type");
                if let Some(t) = take_str(&mut b, "thinking") {
                    step.reasoning = Some(match step.reasoning.take() {
                        Some(prev) => format!("{prev}\n{t}"),
                        None => t,
                    });
                }
                if !b.is_empty() {
                    push_extra(&mut step.extra, "thinking", Value::Object(b));
                }
            }
            _ => parts.push(Value::Object(b)),
        }
    }
    if step.tool_calls.is_empty() {
        for (k, call) in parts.iter().filter_map(text_of).flat_map(xml::calls).enumerate() {
            step.tool_calls.push(ToolCall { id: Some(format!("text-call-{at}-{k}")), ..call });
        }
    }
    step.content = content_of(parts).map(Into::into);
    if let Some(Value::Object(mut info)) = m.remove("modelInfo") {
        if let Some(id) = take_str(&mut info, "modelId") {
            match model {
                None => *model = Some(id),
                Some(first) if *first != id => step.model = Some(id),
                Some(_) => {}
            }
        }
        if !info.is_empty() {
            step.extra.insert("modelInfo".into(), Value::Object(info));
        }
    }
    if let Some(Value::Object(metrics)) = m.remove("metrics") {
        let (metrics, left) = step_metrics(metrics);
        step.metrics = metrics;
        if !left.is_empty() {
            step.extra.insert("metrics".into(), Value::Object(left));
        }
    }
    step.extra.extend(m);
    step
}

/// Step metrics from a message's `metrics`: `tokens.prompt` excludes the cache traffic that
/// `tokens.cached` counts (cache writes and reads), so `prompt_tokens` = prompt + cached;
/// `completion_tokens` = completion; `cost` → `cost_usd`. Returns what is left.
fn step_metrics(mut metrics: Map<String, Value>) -> (Option<Metrics>, Map<String, Value>) {
    let cost = take_f64(&mut metrics, "cost");
    let mut tokens = take_object(&mut metrics, "tokens").unwrap_or_default();
    let completion = take_u64(&mut tokens, "completion");
    let prompt = tokens.get("prompt").and_then(Value::as_u64);
    let cached = tokens.get("cached").and_then(Value::as_u64);
    let total = prompt.and_then(|p| p.checked_add(cached.unwrap_or(0)));
    let m = Metrics {
        cached_tokens: None,
        completion_tokens: completion,
        cost_usd: cost,
        duration_seconds: None,
        extra: tokens.into(),
        prompt_tokens: total,
    };
    ((!m.is_empty()).then_some(m), metrics)
}

/// A user message: text blocks that report a tool's result (`[name for 'x'] Result:` or
/// `Tool [name] was not executed ...`) become one `tool` step, linked by name and order to
/// the calls of the assistant step before it; the other blocks one `user` step.
fn user_steps(mut m: Map<String, Value>, steps: &mut Vec<Step>) {
    let blocks = match m.remove("content") {
        Some(Value::Array(b)) => b,
        Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
        Some(other) => vec![other],
        None => Vec::new(),
    };
    let calls: Vec<(String, Option<String>)> = match steps.last() {
        Some(s) if s.role == Role::Assistant => s.tool_calls.iter().map(|c| (c.name.clone(), c.id.clone())).collect(),
        _ => Vec::new(),
    };
    let mut answered = vec![false; calls.len()];
    let mut results: Vec<ToolResult> = Vec::new();
    let mut others: Vec<Value> = Vec::new();
    // A header block that ends at `Result:` is followed by the output as its own block
    // (older Cline): that block joins the result.
    let mut awaiting = false;
    for block in blocks {
        if std::mem::take(&mut awaiting)
            && text_of(&block).is_some_and(|t| result_tool(t).is_none() && !harness_text(t))
        {
            if let Some(r) = results.last_mut() {
                let header = r.content.take().map(|h| serde_json::json!({"type": "text", "text": h}));
                r.content = Some(Value::Array(header.into_iter().chain([block]).collect()).into());
                continue;
            }
        }
        let named = match &block {
            Value::Object(b) if b.get("type").and_then(Value::as_str) == Some("tool_result") => {
                results.push(native_result(b.clone()));
                continue;
            }
            _ => text_of(&block).and_then(result_tool),
        };
        let Some(name) = named else {
            others.push(block);
            continue;
        };
        let slot = calls.iter().enumerate().position(|(k, (n, _))| *n == name && !answered[k]);
        if let Some(k) = slot {
            answered[k] = true;
        }
        let mut extra = Extra::new();
        extra.insert("tool".into(), Value::String(name));
        let content = match block {
            Value::Object(mut b) => {
                b.remove("type");
                let text = take(&mut b, "text");
                extra.extend(b);
                text
            }
            other => Some(other),
        };
        awaiting = content.as_ref().and_then(Value::as_str).is_some_and(|t| t.trim_end().ends_with("] Result:"));
        let call_id = slot.and_then(|k| calls[k].1.clone());
        results.push(ToolResult { call_id, content: content.map(Into::into), extra, subagent_refs: Vec::new() });
    }
    let had_results = !results.is_empty();
    if had_results {
        let mut step = Step::new(Role::Tool, None);
        step.tool_results = results;
        steps.push(step);
    }
    if !others.is_empty() || !had_results {
        let harness = !others.is_empty() && others.iter().all(|b| text_of(b).is_some_and(harness_text));
        let mut step = Step::new(Role::User, content_of(others));
        if harness {
            step.authorship = Authorship::Unknown;
        }
        steps.push(step);
    }
    if let Some(s) = steps.last_mut() {
        s.extra.extend(m);
    }
}

/// A `tool_result` block (Cline's native-tool variant may write them): linked by its id.
fn native_result(mut b: Map<String, Value>) -> ToolResult {
    b.remove("type");
    let call_id = take_str(&mut b, "tool_use_id");
    let content = take(&mut b, "content");
    ToolResult { call_id, content: content.map(Into::into), extra: b.into(), subagent_refs: Vec::new() }
}

/// The tool a result text names: `[name for '...'] Result:`, `[name] Result:` or
/// `Tool [name] was not executed because ...`.
fn result_tool(text: &str) -> Option<String> {
    let name_ok = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if let Some(rest) = text.strip_prefix("Tool [") {
        let (name, tail) = rest.split_once(']')?;
        return (name_ok(name) && tail.starts_with(" was not executed")).then(|| name.to_string());
    }
    let inner = text.strip_prefix('[')?;
    let (head, tail) = inner.split_once("] Result:")?;
    let name = head.split(" for ").next().unwrap_or(head);
    (name_ok(name) && !head.contains('\n') && (tail.is_empty() || tail.starts_with(['\n', ' '])))
        .then(|| name.to_string())
}

/// Whether a user text block is written by the extension rather than typed by the person.
fn harness_text(text: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "<environment_details>",
        "[TASK RESUMPTION]",
        "[ERROR]",
        "# TODO LIST",
        "# task_progress",
        "<explicit_instructions",
    ];
    let t = text.trim_start();
    PREFIXES.iter().any(|p| t.starts_with(p))
}

fn text_of(b: &Value) -> Option<&str> {
    match b {
        Value::String(s) => Some(s),
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("text") => {
            o.get("text").and_then(Value::as_str)
        }
        _ => None,
    }
}

/// A content value from blocks: one string when every block is a plain `{type, text}`
/// block, else the blocks as given; none when there are no blocks.
fn content_of(blocks: Vec<Value>) -> Option<Value> {
    if blocks.is_empty() {
        return None;
    }
    let plain = blocks.iter().all(|b| {
        b.as_object().is_some_and(|m| m.len() == 2 && m.get("text").is_some_and(Value::is_string))
            && text_of(b).is_some()
    });
    if plain {
        let texts: Vec<&str> = blocks.iter().filter_map(text_of).collect();
        return Some(Value::String(texts.join("\n")));
    }
    Some(Value::Array(blocks))
}

fn push_extra(extra: &mut Extra, key: &str, v: Value) {
    if let Value::Array(a) = extra.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
        a.push(v);
    }
}

/// The task: the text inside `<task>...</task>` of the first user step (the person's
/// request), else its whole text; hashed into the key.
fn task_of(steps: &[Step], sha: &str) -> Task {
    let first = steps.iter().find(|s| s.role == Role::User).and_then(|s| s.content.as_ref());
    let text = first.and_then(crate::json::step_content_text);
    let instruction = text.map(|t| match (t.find("<task>"), t.find("</task>")) {
        (Some(a), Some(b)) if a < b => t[a + "<task>".len()..b].trim().to_string(),
        _ => t,
    });
    crate::chat::session_task(instruction.filter(|t| !t.trim().is_empty()), sha)
}

/// What the side files of a task directory add.
#[derive(Default)]
struct SideFiles {
    extra: Extra,
    model: Option<String>,
    version: Option<String>,
    metrics: Option<Metrics>,
}

impl SideFiles {
    /// Reads the side files present; one that cannot be read or parsed is named in
    /// `extra.side_file_errors` (the conversation is still read).
    fn load(file: &InputFile, errors_into: &mut Extra) -> SideFiles {
        let mut out = SideFiles::default();
        let Some(dir) = task_dir(file) else {
            return out;
        };
        let mut errors = Vec::new();
        for name in SIDE_FILES {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            let side = InputFile { fs_path: path, display: display_of(file, name), root: file.root.clone() };
            let parsed = input::read_all(&side)
                .map_err(|e| e.to_string())
                .and_then(|b| parse_record(&b).map_err(|p| format!("{}: {}", p.json_path, p.message)));
            match (parsed, *name) {
                (Ok(Value::Array(ui)), "ui_messages.json") => out.ui_messages(&ui),
                (Ok(Value::Object(meta)), "task_metadata.json") => out.task_metadata(meta),
                (Ok(_), _) => errors.push(Value::String(format!("{}: unexpected JSON type", side.display))),
                (Err(e), _) => errors.push(Value::String(format!("{}: {e}", side.display))),
            }
        }
        if !errors.is_empty() {
            errors_into.insert("side_file_errors".into(), Value::Array(errors));
        }
        out
    }

    /// `task_metadata.json`: kept whole in `extra.task_metadata`; the first `model_usage`
    /// model and the last `environment_history` `cline_version` name the agent.
    fn task_metadata(&mut self, meta: Map<String, Value>) {
        let first_model = meta.get("model_usage").and_then(Value::as_array).and_then(|a| a.first());
        self.model = first_model.and_then(|m| m.get("model_id")).and_then(Value::as_str).map(str::to_string);
        let last_env = meta.get("environment_history").and_then(Value::as_array).and_then(|a| a.last());
        self.version = last_env.and_then(|e| e.get("cline_version")).and_then(Value::as_str).map(str::to_string);
        self.extra.insert("task_metadata".into(), Value::Object(meta));
    }

    /// `ui_messages.json`: the run's totals from its `api_req_started` events (`tokensIn`,
    /// `tokensOut`, `cacheWrites`, `cacheReads`, `cost`), its first and last `ts`, and the
    /// count of events; the events themselves repeat the conversation and are not copied.
    fn ui_messages(&mut self, ui: &[Value]) {
        // Checked: a sum that overflows 64 bits is absent, not wrong.
        let mut sums = [Some(0u64); 4];
        let mut cost = 0.0f64;
        let mut requests = 0u64;
        for e in ui {
            if e.get("say").and_then(Value::as_str) != Some("api_req_started") {
                continue;
            }
            let Some(Ok(Value::Object(req))) = e.get("text").and_then(Value::as_str).map(serde_json::from_str) else {
                continue;
            };
            requests += 1;
            for (k, key) in ["tokensIn", "tokensOut", "cacheWrites", "cacheReads"].iter().enumerate() {
                sums[k] = sums[k].and_then(|s| s.checked_add(req.get(*key).and_then(Value::as_u64).unwrap_or(0)));
            }
            cost += req.get("cost").and_then(Value::as_f64).unwrap_or(0.0);
        }
        let ts: Vec<u64> = ui.iter().filter_map(|e| e.get("ts").and_then(Value::as_u64)).collect();
        let mut summary = Map::new();
        summary.insert("events".into(), Value::from(ui.len()));
        summary.insert("api_requests".into(), Value::from(requests));
        if let (Some(first), Some(last)) = (ts.iter().min(), ts.iter().max()) {
            summary.insert("first_ts".into(), Value::from(*first));
            summary.insert("last_ts".into(), Value::from(*last));
        }
        self.extra.insert("ui_messages".into(), Value::Object(summary));
        if requests == 0 {
            return;
        }
        let [input, output, writes, reads] = sums;
        let mut extra = Map::new();
        if let Some(w) = writes {
            extra.insert("cache_write_tokens".into(), Value::from(w));
        }
        self.metrics = Some(Metrics {
            cached_tokens: reads,
            completion_tokens: output,
            cost_usd: Some(cost),
            duration_seconds: match (ts.iter().min(), ts.iter().max()) {
                (Some(a), Some(b)) => Some((b - a) as f64 / 1000.0),
                _ => None,
            },
            extra: extra.into(),
            prompt_tokens: input.zip(writes).zip(reads).and_then(|((i, w), r)| i.checked_add(w)?.checked_add(r)),
        });
    }
}

/// Report path of a side file: the conversation's display path with the file name replaced.
fn display_of(file: &InputFile, name: &str) -> String {
    match Path::new(&file.display).parent() {
        Some(p) => p.join(name).display().to_string(),
        None => name.to_string(),
    }
}

/// Tool calls written as XML-ish text (Cline's and Roo Code's prompt-based tool use, whose
/// system prompt asks for `<tool_name>\n<param>value</param>\n...\n</tool_name>`).
mod xml {
    use serde_json::{Map, Value};
    use trajkit_model::{Extra, ToolCall};

    /// Tags that are never calls (the model's reasoning wrapper).
    const NOT_CALLS: &[&str] = &["thinking"];

    /// Every complete `<name>` block of `text` whose body is one or more `<param>value</param>`
    /// pairs, in order; values are strings with one surrounding newline trimmed. An unclosed
    /// block, or one whose body is anything else, is not a call.
    pub(super) fn calls(text: &str) -> Vec<ToolCall> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('<') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('>') else {
                break;
            };
            let name = &after[..close];
            let body_and_rest = &after[close + 1..];
            let end_tag = format!("</{name}>");
            let found = (is_name(name) && !NOT_CALLS.contains(&name))
                .then(|| body_and_rest.find(&end_tag))
                .flatten()
                .and_then(|end| params(&body_and_rest[..end]).map(|args| (end, args)));
            match found {
                Some((end, arguments)) => {
                    out.push(ToolCall {
                        arguments: Value::Object(arguments).into(),
                        arguments_invalid: false,
                        extra: Extra::new(),
                        id: None,
                        name: name.to_string(),
                        text_embedded: true,
                    });
                    rest = &body_and_rest[end + end_tag.len()..];
                }
                None => rest = after,
            }
        }
        out
    }

    /// A tag name as tools are named: lower-case letters, digits, `_` and `-`.
    fn is_name(s: &str) -> bool {
        s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    }

    /// The `<param>value</param>` pairs of a call body, or none when the body holds
    /// anything else (or no pair). A repeated key keeps its last value.
    fn params(body: &str) -> Option<Map<String, Value>> {
        let mut out = Map::new();
        let mut rest = body.trim_start();
        while !rest.is_empty() {
            let inner = rest.strip_prefix('<')?;
            let (key, after) = inner.split_once('>')?;
            if !is_name(key) {
                return None;
            }
            let end_tag = format!("</{key}>");
            let end = after.find(&end_tag)?;
            let value = &after[..end];
            let value = value.strip_prefix('\n').unwrap_or(value);
            let value = value.strip_suffix('\n').unwrap_or(value);
            out.insert(key.to_string(), Value::String(value.to_string()));
            rest = after[end + end_tag.len()..].trim_start();
        }
        (!out.is_empty()).then_some(out)
    }

    #[cfg(test)]
    mod tests {
        use super::calls;
        use serde_json::json;

        /// Synthetic: no published Cline/Roo task with prompt-based (XML) tool use was found;
        /// the shape is the one Cline's system prompt prescribes (see docs/formats/cline.md).
        #[test]
        fn xml_tool_blocks_become_text_embedded_calls() {
            let text = "I'll read it.\n\n<thinking>which <path>x</path></thinking>\n<read_file>\n<path>src/a.ts</path>\n</read_file>\n\
                        <write_to_file>\n<path>b.txt</path>\n<content>\nline <1>\n</content>\n</write_to_file> <open_tag> <x>y</x";
            let got = calls(text);
            assert_eq!(got.len(), 2);
            assert_eq!((got[0].name.as_str(), got[0].arguments.value()), ("read_file", &json!({"path": "src/a.ts"})));
            assert_eq!(got[1].arguments, json!({"path": "b.txt", "content": "line <1>"}));
            assert!(got.iter().all(|c| c.text_embedded && c.id.is_none()));
            assert!(calls("use <b>bold</b> prose, <read_file>no params</read_file>").is_empty());
        }
    }
}
