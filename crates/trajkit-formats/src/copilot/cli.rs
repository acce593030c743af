//! Copilot CLI session logs (`copilot-cli`): `~/.copilot/session-state/<session id>/events.jsonl`,
//! one event a line (`type`, `data`, `id`, `timestamp`, `parentId`, and `agentId` on the
//! events of a subagent). Messages and tool completions become steps; every other event
//! is kept as written in `extra.events`; a subagent's events become a nested trajectory.

use serde_json::{Map, Value};
use trajkit_model::{
    canonical::sha256_hex, Agent, Extra, Gap, GapKind, Role, Step, Subagent, Task, ToolResult, Trajectory,
};

use super::{metrics, session_gaps, tool_call};
use crate::chat::first_user_task;
use crate::claude_code::{parse_lines, Line};
use crate::input::InputFile;
use crate::json::{take, take_str, take_u64};
use crate::reader::{Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{schema, Problem};

/// Reader for Copilot CLI session logs.
pub(crate) static READER: FnReader = FnReader { family: FAMILY, detect, read, arrays: false };

const FAMILY: &str = "copilot-cli";

/// Copilot CLI session logs.
fn detect(peek: &Peek) -> Option<Detection> {
    let line = peek.first_line?;
    let kind = line.get("type").and_then(Value::as_str)?;
    let session = line.get("data").and_then(|d| d.get("sessionId")).is_some_and(Value::is_string);
    (session && matches!(kind, "session.start" | "session.resume")).then(|| Detection {
        confidence: 90,
        reason: format!("session log opening with a {kind} event (data.sessionId)"),
        layout: Layout::Document,
    })
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    // The main agent's events, and each subagent's (by `agentId`, in order of appearance).
    let mut main = Vec::new();
    let mut agents: Vec<(String, Vec<Line>)> = Vec::new();
    for line in parse_lines(raw.bytes)? {
        if !line.obj.get("type").is_some_and(Value::is_string) {
            let path = format!("$[line {}].type", line.no);
            return Err(schema(path, "an event needs a string type"));
        }
        match line.obj.get("agentId").and_then(Value::as_str) {
            None => main.push(line),
            Some(a) => match agents.iter_mut().find(|(x, _)| x == a) {
                Some((_, lines)) => lines.push(line),
                None => agents.push((a.to_string(), vec![line])),
            },
        }
    }
    let log = Log::build(main);
    let task = first_user_task(&log.steps, raw.sha256);
    let mut t = log.trajectory(raw.trajectory(FAMILY, file, task));
    for (agent, lines) in agents {
        let sub = subagent(raw, file, &t, &agent, lines);
        let step = t.steps.iter().position(|s| s.tool_calls.iter().any(|c| c.id.as_deref() == Some(agent.as_str())));
        for r in t.steps.iter_mut().flat_map(|s| s.tool_results.iter_mut()) {
            if r.call_id.as_deref() == Some(agent.as_str()) {
                r.subagent_refs.push(sub.id.clone());
            }
        }
        let call = step.map(|_| agent);
        t.subagents.push(Subagent { spawned_by_step: step, spawned_by_tool_call: call, trajectory: Box::new(sub) });
    }
    Ok(t)
}

/// A subagent's events as its own trajectory: id from the session's digest and the agent
/// id, task from the spawning call's `prompt` argument.
fn subagent(raw: &RawRecord, file: &InputFile, parent: &Trajectory, agent: &str, lines: Vec<Line>) -> Trajectory {
    let log = Log::build(lines);
    let sid = sha256_hex(format!("{}/{agent}", raw.sha256).as_bytes());
    let prompt = parent
        .steps
        .iter()
        .flat_map(|s| &s.tool_calls)
        .find(|c| c.id.as_deref() == Some(agent))
        .and_then(|c| c.arguments.get("prompt"))
        .and_then(Value::as_str);
    let task = match prompt {
        Some(p) => Task::keyed(None, None, Some(p.to_string()), None, &sid),
        None => first_user_task(&log.steps, &sid),
    };
    let base = Trajectory::new(format!("{FAMILY}-{}", &sid[..16]), raw.provenance(FAMILY, file), task);
    let mut sub = log.trajectory(base);
    // A subagent runs inside the session's CLI: the same version.
    sub.agent.version = sub.agent.version.or_else(|| parent.agent.version.clone());
    sub
}

/// What one agent's events build: steps, gaps, the events kept as written, session facts.
#[derive(Default)]
struct Log {
    steps: Vec<Step>,
    gaps: Vec<Gap>,
    events: Vec<Value>,
    model: Option<String>,
    version: Option<String>,
    session_id: Option<String>,
    metrics: Option<trajkit_model::Metrics>,
}

impl Log {
    fn build(lines: Vec<Line>) -> Log {
        let mut log = Log::default();
        for line in lines {
            log.event(line);
        }
        session_gaps(&log.steps, &mut log.gaps);
        log
    }

    /// `base` completed with what the events built.
    fn trajectory(self, base: Trajectory) -> Trajectory {
        let mut extra = Extra::new();
        if !self.events.is_empty() {
            extra.insert("events".into(), Value::Array(self.events));
        }
        Trajectory {
            agent: Agent { model: self.model, name: Some(FAMILY.into()), version: self.version },
            extra,
            gaps: self.gaps,
            metrics: self.metrics,
            session_id: self.session_id,
            steps: self.steps,
            ..base
        }
    }

    /// One event: messages and tool completions become steps; the rest is kept as written
    /// (session facts, a model change, errors and aborts read from it first).
    fn event(&mut self, line: Line) {
        let Line { no, mut obj } = line;
        let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        let role = match kind.as_str() {
            "system.message" => Some(Role::System),
            "user.message" => Some(Role::User),
            "assistant.message" => Some(Role::Assistant),
            "tool.execution_complete" => Some(Role::Tool),
            _ => None,
        };
        let data = match obj.get("data") {
            Some(Value::Object(_)) if role.is_some() => match obj.remove("data") {
                Some(Value::Object(d)) => d,
                _ => Map::new(),
            },
            _ => {
                self.note(no, &kind, &obj);
                self.events.push(Value::Object(obj));
                return;
            }
        };
        obj.remove("type");
        match role {
            Some(Role::Tool) => self.tool_result(data, obj),
            Some(role) => self.message(role, data, obj),
            None => {}
        }
    }

    /// Facts of an event that is not a step: the session id, version and model, a model
    /// change, the run's token totals, and errors and aborts as gaps.
    fn note(&mut self, no: u64, kind: &str, obj: &Map<String, Value>) {
        let data = obj.get("data");
        let str_at = |k: &str| data.and_then(|d| d.get(k)).and_then(Value::as_str).map(str::to_string);
        match kind {
            "session.start" | "session.resume" => {
                self.session_id = self.session_id.take().or_else(|| str_at("sessionId"));
                self.version = self.version.take().or_else(|| str_at("copilotVersion"));
                self.model = self.model.take().or_else(|| str_at("selectedModel"));
            }
            "session.model_change" => self.model = self.model.take().or_else(|| str_at("newModel")),
            "session.shutdown" => {
                let count = |k: &str| {
                    data.and_then(|d| d.get("tokenDetails")).and_then(|t| t.get(k)).and_then(|t| t.get("tokenCount"))
                };
                let mut extra = Extra::new();
                for k in ["input", "cache_write"] {
                    if let Some(v) = count(k) {
                        extra.insert(format!("{k}_tokens"), v.clone());
                    }
                }
                let output = count("output").and_then(Value::as_u64);
                self.metrics = metrics(None, output, count("cache_read").and_then(Value::as_u64), extra);
            }
            "session.error" | "abort" => {
                let why = str_at("message").or_else(|| str_at("reason")).unwrap_or_default();
                self.gaps.push(Gap::at(GapKind::IncompleteGeneration, None, format!("line {no}: {kind}: {why}")));
            }
            _ => {}
        }
    }

    /// A system, user or assistant message as a step: `content`, and for the assistant
    /// `toolRequests` as calls, `reasoningText` as reasoning, `outputTokens` as usage and
    /// `model` (on the step when it differs from the session's).
    fn message(&mut self, role: Role, mut data: Map<String, Value>, mut envelope: Map<String, Value>) {
        let content = take(&mut data, "content").filter(|c| c.as_str() != Some(""));
        let mut step = Step::new(role, content);
        step.source_id = take(&mut envelope, "id");
        step.timestamp = take_str(&mut envelope, "timestamp");
        if role == Role::Assistant {
            if let Some(Value::Array(requests)) = data.remove("toolRequests") {
                let mut other = Vec::new();
                for r in requests {
                    match r {
                        Value::Object(r) => step.tool_calls.push(tool_call(r, "toolCallId", "name")),
                        r => other.push(r),
                    }
                }
                if !other.is_empty() {
                    data.insert("toolRequests".into(), Value::Array(other));
                }
            }
            step.reasoning = take_str(&mut data, "reasoningText").filter(|r| !r.is_empty());
            step.metrics = metrics(None, take_u64(&mut data, "outputTokens"), None, Extra::new());
            if let Some(m) = take_str(&mut data, "model") {
                match &self.model {
                    None => self.model = Some(m),
                    Some(first) if *first != m => step.model = Some(m),
                    Some(_) => {}
                }
            }
        }
        step.extra = data.into();
        step.extra.extend(envelope);
        self.steps.push(step);
    }

    /// A tool completion as a result linked by `toolCallId`: `result.content` (else the
    /// `error`) as content; consecutive completions share one tool step.
    fn tool_result(&mut self, mut data: Map<String, Value>, envelope: Map<String, Value>) {
        let call_id = take_str(&mut data, "toolCallId");
        let content = match data.get_mut("result") {
            Some(Value::Object(r)) => {
                let c = take(r, "content");
                if r.is_empty() {
                    data.remove("result");
                }
                c
            }
            _ => take(&mut data, "result"),
        };
        let content = content.or_else(|| take(&mut data, "error"));
        let timestamp = envelope.get("timestamp").and_then(Value::as_str).map(str::to_string);
        data.extend(envelope);
        let result =
            ToolResult { call_id, content: content.map(Into::into), extra: data.into(), subagent_refs: Vec::new() };
        match self.steps.last_mut().filter(|s| s.role == Role::Tool) {
            Some(step) => step.tool_results.push(result),
            None => {
                let mut step = Step::new(Role::Tool, None);
                step.timestamp = timestamp;
                step.tool_results.push(result);
                self.steps.push(step);
            }
        }
    }
}
