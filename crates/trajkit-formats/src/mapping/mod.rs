//! The declarative reader: a mapping file (`--mapping FILE`, `mapping = ".."` in
//! sources.toml, or `--format mapping:FILE`) says where an in-house JSON shape keeps the
//! messages, roles, calls, results, task and outcome, so that shape needs no code. Mapped
//! records are ordinary records: same validation, gaps and rejections, with the field that
//! did not fit named by its path.

pub mod path;
pub mod spec;

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value};
use trajkit_model::{Agent, LazyValue, Metrics, Outcome, Role, Status, Step, ToolCall, ToolResult, Trajectory};

use crate::error::FormatError;
use crate::input::InputFile;
use crate::json::{content_text, idx, into_extra, record_object};
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{schema, Problem, Reason};
use path::{type_name, FieldPath};
use spec::{RecordLayout, Spec};

/// `--format mapping:PATH` names a mapping file instead of a built-in family.
pub const FORMAT_PREFIX: &str = "mapping:";

/// A reader built from a mapping file.
#[derive(Debug)]
pub struct MappingReader {
    spec: Spec,
    /// `mapping:NAME`: the format records and reports show.
    format: &'static str,
    /// The first 12 hex digits of the mapping file's SHA-256: the records' `format_version`,
    /// so a record says which mapping made it.
    version: String,
}

/// The reader of the mapping file at `path`. Readers live for the whole process (the read
/// driver holds `&'static` readers); one is made per distinct file content, so reloading a
/// changed file takes effect and an unchanged one costs nothing.
pub fn load(path: &Path) -> Result<&'static MappingReader, FormatError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| FormatError::Io { path: shown.clone(), source })?;
    let digest = trajkit_model::sha256_hex(text.as_bytes());
    static CACHE: OnceLock<Mutex<HashMap<String, &'static MappingReader>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(reader) = cache.get(&digest) {
        return Ok(reader);
    }
    let spec = Spec::parse(&text).map_err(|message| FormatError::Mapping { path: shown, message })?;
    let format: &'static str = Box::leak(format!("{FORMAT_PREFIX}{}", spec.name).into_boxed_str());
    let version = digest.get(..12).unwrap_or(&digest).to_string();
    let reader: &'static MappingReader = Box::leak(Box::new(MappingReader { spec, format, version }));
    cache.insert(digest, reader);
    Ok(reader)
}

impl Reader for MappingReader {
    fn name(&self) -> &'static str {
        self.format
    }

    fn max_confidence(&self) -> u8 {
        100
    }

    /// A mapping is always forced, never detected: it claims whatever it is applied to.
    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let layout = match self.spec.layout {
            RecordLayout::Lines => Layout::Lines,
            RecordLayout::Document | RecordLayout::Array => Layout::Document,
            RecordLayout::Auto if peek.multi_line_records || peek.name.ends_with(".jsonl") => Layout::Lines,
            RecordLayout::Auto => Layout::Document,
        };
        Some(Detection { confidence: 100, reason: format!("mapping {}", self.spec.name), layout })
    }

    fn split_document(&self, bytes: &[u8]) -> Option<Vec<Range<usize>>> {
        let array = match self.spec.layout {
            RecordLayout::Array => true,
            RecordLayout::Auto => self.spec.records.is_none() && crate::json::is_array_document(bytes),
            _ => false,
        };
        array.then(|| crate::json::array_elements(bytes)).flatten()
    }

    fn expands(&self) -> bool {
        true
    }

    fn expand_document(
        &self,
        bytes: &[u8],
        limit: usize,
        emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool,
    ) -> Option<Result<(), String>> {
        let records = self.spec.records.as_ref()?;
        Some(expand(records, bytes, limit, emit))
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        RecordResult::from_result(self.map_record(raw, file))
    }
}

/// Emits the elements of the array at `records` in the document, one record each.
fn expand(
    records: &FieldPath,
    bytes: &[u8],
    limit: usize,
    emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool,
) -> Result<(), String> {
    let mut doc = record_object(bytes).map_err(|p| format!("{}: {}", p.json_path, p.message))?;
    let items = match records.take(&mut doc, "$").map_err(|p| p.message)? {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(format!(
                "mapping path `{}` (records) needs an array at {}, found {}",
                records.as_str(),
                records.place("$"),
                type_name(&other)
            ))
        }
        None => return Err(format!("mapping path `{}` (records) is missing from the document", records.as_str())),
    };
    for item in items {
        let record = match serde_json::to_vec(&item) {
            Ok(b) if b.len() > limit => Err(crate::pipeline::too_large_problem(limit)),
            Ok(b) => Ok(b),
            Err(e) => Err(schema("$", format!("cannot re-encode the record: {e}"))),
        };
        if !emit(record) {
            break;
        }
    }
    Ok(())
}

impl MappingReader {
    /// One record through the mapping.
    fn map_record(&self, raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
        let mut row = record_object(raw.bytes)?;
        let filled = filled_objects(&row);
        let r = &self.spec.record;
        let messages = match r.messages.take(&mut row, "$")? {
            Some(Value::Array(items)) => items,
            Some(other) => return Err(self.wrong(&r.messages, "$", "an array of messages", &other)),
            None => {
                return Err(schema(
                    r.messages.place("$"),
                    format!("no messages at mapping path `{}`", r.messages.as_str()),
                ))
            }
        };
        let base = r.messages.place("$");
        let mut steps = Vec::with_capacity(messages.len());
        for (i, m) in messages.into_iter().enumerate() {
            self.map_message(m, &idx(&base, i), &mut steps)?;
        }
        let session = self.scalar_text_at(r.session.as_ref(), &mut row, "$")?;
        let task_id = self.scalar_text_at(r.task_id.as_ref(), &mut row, "$")?;
        let instruction = match &r.instruction {
            Some(p) => p.take(&mut row, "$")?.as_ref().and_then(content_text),
            None => crate::chat::first_instruction(&steps),
        };
        let environment =
            self.text_at(r.environment.as_ref(), &mut row, "$")?.unwrap_or_else(|| self.spec.name.clone());
        let model = self.text_at(r.model.as_ref(), &mut row, "$")?;
        let agent = self.text_at(r.agent.as_ref(), &mut row, "$")?;
        let tools = self.tools(&mut row)?.map(LazyValue::from_values);
        let outcome = self.outcome(&mut row)?;
        let task = crate::chat::task_of(&environment, task_id, instruction, raw.sha256);
        drop_emptied(&mut row, &filled);
        let mut provenance = raw.provenance(self.format, file);
        provenance.format_version = Some(self.version.clone());
        Ok(Trajectory {
            agent: Agent { model, name: agent, version: None },
            extra: into_extra(row),
            gaps: crate::swe::standard_gaps(&steps),
            outcome,
            session_id: session,
            steps,
            tools,
            ..Trajectory::new(raw.id(&self.spec.name), provenance, task)
        })
    }

    /// One message as a step: its role through `[message.roles]`, content, reasoning,
    /// timestamp, an assistant's (or simulated user's) calls, a tool message's result (linked
    /// by call id later, never by position); what the mapping does not name stays in the
    /// step's `extra`. A result carried in the message itself (`message.result`) follows as
    /// its own step.
    fn map_message(&self, msg: Value, at: &str, steps: &mut Vec<Step>) -> Result<(), Problem> {
        let Value::Object(mut msg) = msg else {
            return Err(schema(at, "a message must be an object"));
        };
        let m = &self.spec.message;
        let filled = filled_objects(&msg);
        let (role_text, stated) = match (m.role.take(&mut msg, at)?, &m.default_role) {
            (Some(Value::String(s)), _) => (s, true),
            (Some(other), _) => return Err(self.wrong(&m.role, at, "a string role", &other)),
            (None, Some(default)) => (default.clone(), false),
            (None, None) => {
                return Err(schema(
                    m.role.place(at),
                    format!("message without a role at mapping path `{}`", m.role.as_str()),
                ))
            }
        };
        let Some(&role) = m.roles.get(&role_text) else {
            return Err(Problem::new(
                Reason::InvalidValue,
                m.role.place(at),
                format!("role {role_text:?} is not in the mapping's [message.roles]"),
            ));
        };
        let content = m.content.take(&mut msg, at)?;
        let reasoning = self.text_at(m.reasoning.as_ref(), &mut msg, at)?;
        let timestamp = self.text_at(m.timestamp.as_ref(), &mut msg, at)?;
        let mut step = match role {
            Role::Tool => {
                let call_id = self.scalar_text_at(Some(&m.tool_call_id), &mut msg, at)?;
                let mut s = Step::new(Role::Tool, None);
                s.tool_results.push(result(call_id, content));
                s
            }
            // A simulated user may call tools too (tau2's user tools).
            Role::Assistant | Role::User => {
                let mut s = Step::new(role, content);
                s.tool_calls = self.calls(&mut msg, at)?;
                if s.tool_calls.is_empty() {
                    s.tool_calls.extend(self.inline_call(&mut msg, at)?);
                }
                s
            }
            other => Step::new(other, content),
        };
        if stated && role_text != role.as_str() {
            step.extra.insert("role".into(), Value::String(role_text));
        }
        step.reasoning = reasoning;
        step.timestamp = timestamp;
        step.metrics = self.metrics(&mut msg, at)?;
        let answer = match &m.result {
            Some(path) => path.take(&mut msg, at)?,
            None => None,
        };
        drop_emptied(&mut msg, &filled);
        step.extra.extend(into_extra(msg));
        let answer = answer.map(|v| answer_step(&mut step, steps.len(), v));
        steps.push(step);
        steps.extend(answer);
        Ok(())
    }

    /// The call written in the message itself (`message.call_name`, ...), if any.
    fn inline_call(&self, msg: &mut Map<String, Value>, at: &str) -> Result<Option<ToolCall>, Problem> {
        let Some(c) = &self.spec.message.inline_call else { return Ok(None) };
        let name = match c.name.take(msg, at)? {
            None => return Ok(None),
            Some(Value::String(s)) => s,
            Some(other) => return Err(self.wrong(&c.name, at, "a string tool name", &other)),
        };
        let id = self.scalar_text_at(c.id.as_ref(), msg, at)?;
        let raw = match &c.arguments {
            Some(p) => p.take(msg, at)?,
            None => None,
        };
        let (arguments, arguments_invalid) = arguments(raw);
        Ok(Some(ToolCall { arguments, arguments_invalid, extra: Default::default(), id, name, text_embedded: false }))
    }

    /// Token counts and cost of a message, when the mapping names them and any is present.
    fn metrics(&self, msg: &mut Map<String, Value>, at: &str) -> Result<Option<Metrics>, Problem> {
        let m = &self.spec.message;
        let mut metrics = Metrics {
            prompt_tokens: self.count(m.prompt_tokens.as_ref(), msg, at)?,
            completion_tokens: self.count(m.completion_tokens.as_ref(), msg, at)?,
            ..Metrics::default()
        };
        if let Some(path) = &m.cost_usd {
            metrics.cost_usd = match path.take(msg, at)? {
                None => None,
                Some(Value::Number(n)) => n.as_f64().filter(|x| x.is_finite()),
                Some(other) => return Err(self.wrong(path, at, "a number", &other)),
            };
        }
        Ok((!metrics.is_empty()).then_some(metrics))
    }

    /// A non-negative integer count.
    fn count(&self, path: Option<&FieldPath>, map: &mut Map<String, Value>, at: &str) -> Result<Option<u64>, Problem> {
        let Some(path) = path else { return Ok(None) };
        match path.take(map, at)? {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
            Some(other) => Err(self.wrong(path, at, "a non-negative integer", &other)),
        }
    }

    /// A message's tool calls (absent: none).
    fn calls(&self, msg: &mut Map<String, Value>, at: &str) -> Result<Vec<ToolCall>, Problem> {
        let path = &self.spec.message.tool_calls;
        let items = match path.take(msg, at)? {
            None => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => return Err(self.wrong(path, at, "an array of tool calls", &other)),
        };
        let base = path.place(at);
        let t = &self.spec.tool_call;
        let mut calls = Vec::with_capacity(items.len());
        for (k, item) in items.into_iter().enumerate() {
            let here = idx(&base, k);
            let Value::Object(mut item) = item else {
                return Err(schema(here, "a tool call must be an object"));
            };
            let filled = filled_objects(&item);
            let name = match t.name.take(&mut item, &here)? {
                Some(Value::String(s)) => s,
                Some(other) => return Err(self.wrong(&t.name, &here, "a string tool name", &other)),
                None => {
                    return Err(schema(
                        t.name.place(&here),
                        format!("tool call without a name at mapping path `{}`", t.name.as_str()),
                    ))
                }
            };
            let id = self.scalar_text_at(Some(&t.id), &mut item, &here)?;
            let (arguments, arguments_invalid) = arguments(t.arguments.take(&mut item, &here)?);
            drop_emptied(&mut item, &filled);
            calls.push(ToolCall {
                arguments,
                arguments_invalid,
                extra: into_extra(item),
                id,
                name,
                text_embedded: false,
            });
        }
        Ok(calls)
    }

    /// Tool definitions: a non-empty array, or a JSON string holding one.
    fn tools(&self, row: &mut Map<String, Value>) -> Result<Option<Vec<Value>>, Problem> {
        let Some(path) = &self.spec.record.tools else { return Ok(None) };
        match path.take(row, "$")? {
            None => Ok(None),
            Some(Value::Array(t)) => Ok((!t.is_empty()).then_some(t)),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
                Ok(Value::Array(t)) => Ok((!t.is_empty()).then_some(t)),
                _ => Err(Problem::new(
                    Reason::InvalidValue,
                    path.place("$"),
                    format!("mapping path `{}`: a string that is not a JSON array of tools", path.as_str()),
                )),
            },
            Some(other) => Err(self.wrong(path, "$", "an array of tools", &other)),
        }
    }

    /// Reward and status as the mapping states them; unknown, unverified without them. A
    /// status value the mapping does not list keeps the outcome unknown and stays in
    /// `extra` under the status path.
    fn outcome(&self, row: &mut Map<String, Value>) -> Result<Outcome, Problem> {
        let r = &self.spec.record;
        let mut outcome = Outcome::default();
        if let Some(path) = &r.reward {
            match path.take(row, "$")? {
                None => {}
                Some(Value::Number(n)) => outcome.reward = n.as_f64().filter(|x| x.is_finite()),
                Some(other) => return Err(self.wrong(path, "$", "a number", &other)),
            }
        }
        if let (Some(rule), Some(reward)) = (&r.success, outcome.reward) {
            outcome.status = rule.status(reward);
        }
        if let Some(path) = &r.status {
            let value = path.take(row, "$")?;
            let status = match &value {
                None => None,
                Some(Value::Bool(true)) => Some(Status::Success),
                Some(Value::Bool(false)) => Some(Status::Failure),
                Some(Value::String(s)) if r.success_values.contains(s) => Some(Status::Success),
                Some(Value::String(s)) if r.failure_values.contains(s) => Some(Status::Failure),
                Some(_) => None,
            };
            match (status, value) {
                (Some(s), _) => outcome.status = s,
                (None, Some(v)) => {
                    row.insert(path.as_str().to_string(), v);
                }
                (None, None) => {}
            }
        }
        if outcome.reward.is_some() || outcome.status != Status::Unknown {
            outcome.verification = r.verification;
        }
        Ok(outcome)
    }

    /// A string at a mapped path (`None` when the mapping names no path or the record has
    /// no value there).
    fn text_at(
        &self,
        path: Option<&FieldPath>,
        map: &mut Map<String, Value>,
        at: &str,
    ) -> Result<Option<String>, Problem> {
        self.string_at(path, map, at, false)
    }

    /// An id: a string, or a number written as text.
    fn scalar_text_at(
        &self,
        path: Option<&FieldPath>,
        map: &mut Map<String, Value>,
        at: &str,
    ) -> Result<Option<String>, Problem> {
        self.string_at(path, map, at, true)
    }

    /// A string at a mapped path, or with `numbers` a number as text.
    fn string_at(
        &self,
        path: Option<&FieldPath>,
        map: &mut Map<String, Value>,
        at: &str,
        numbers: bool,
    ) -> Result<Option<String>, Problem> {
        let Some(path) = path else { return Ok(None) };
        match path.take(map, at)? {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(Value::Number(n)) if numbers => Ok(Some(n.to_string())),
            Some(other) => Err(self.wrong(path, at, if numbers { "a string or number" } else { "a string" }, &other)),
        }
    }

    /// The problem of a value of the wrong type at a mapped path.
    fn wrong(&self, path: &FieldPath, at: &str, wanted: &str, found: &Value) -> Problem {
        schema(path.place(at), format!("mapping path `{}` needs {wanted}, found {}", path.as_str(), type_name(found)))
    }
}

/// A result answering `call_id` (none: unlinked).
fn result(call_id: Option<String>, content: Option<Value>) -> ToolResult {
    ToolResult { call_id, content: content.map(Into::into), extra: Default::default(), subagent_refs: Vec::new() }
}

/// The step of a result carried in message `index` (`step`): it answers the message's only
/// call (an id-less call gets `inline-call-<index>`, as text-embedded calls get synthetic
/// ids); a message with several calls leaves it unlinked (a gap), one with none makes it an
/// environment observation.
fn answer_step(step: &mut Step, index: usize, content: Value) -> Step {
    match step.tool_calls.as_mut_slice() {
        [] => Step::new(Role::Environment, Some(content)),
        [only] => {
            let id = only.id.get_or_insert_with(|| format!("inline-call-{index}")).clone();
            let mut s = Step::new(Role::Tool, None);
            s.tool_results.push(result(Some(id), Some(content)));
            s
        }
        _ => {
            let mut s = Step::new(Role::Tool, None);
            s.tool_results.push(result(None, Some(content)));
            s
        }
    }
}

/// A call's arguments: an object as it is, a JSON string parsed (kept verbatim and flagged
/// when it is not JSON), absent `{}` (the rule of `json::take_arguments`).
fn arguments(value: Option<Value>) -> (LazyValue, bool) {
    crate::json::arguments_of(value.map(LazyValue::from))
}

/// Removes the objects of `filled` that taking mapped fields emptied.
fn drop_emptied(map: &mut Map<String, Value>, filled: &[String]) {
    map.retain(|k, v| !(filled.contains(k) && matches!(v, Value::Object(o) if o.is_empty())));
}

/// Keys of non-empty objects: those that taking mapped fields leaves empty (`function: {}`
/// once its name and arguments are taken) are dropped, so `extra` holds only what the
/// mapping did not use, while an object that was empty in the source stays.
fn filled_objects(map: &Map<String, Value>) -> Vec<String> {
    map.iter().filter(|(_, v)| matches!(v, Value::Object(o) if !o.is_empty())).map(|(k, _)| k.clone()).collect()
}
