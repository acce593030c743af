//! OpenHands: event streams (a JSON array of `action` / `observation` events), evaluation
//! `output.jsonl` lines (`instance_id`, `instruction`, `history`, `metrics`, `test_result`) and
//! resolver output lines (`issue`, `history`, `success`).
//!
//! Every event is one step. Observations are linked to the action they answer by explicit
//! reference only: the `tool_call_id` of `tool_call_metadata`, else the action event that
//! `cause` names (synthetic call id `event:<id>`). See docs/formats/openhands.md.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};
use trajkit_model::{
    Agent, Authorship, Extra, Gap, GapKind, LazyValue, Metrics, Outcome, Role, Status, Step, Task, ToolCall,
    ToolResult, Trajectory, Verification,
};

use crate::input::InputFile;
use crate::json::{
    content_text, into_extra, step_content_text, take, take_f64, take_nonempty_str, take_object, take_str, take_u64,
};
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{parse_record, schema, Problem};

/// Reader for OpenHands event streams, evaluation output and resolver output.
pub(crate) static READER: FnReader = FnReader { family: "openhands", detect, read, arrays: false };

/// Action kinds that are never a tool call of the model: conversation, harness and state events.
const NON_CALL_ACTIONS: &[&str] = &[
    "message",
    "system",
    "start",
    "recall",
    "change_agent_state",
    "null",
    "pause",
    "resume",
    "stop",
    "summarize",
    "condensation",
    "condensation_request",
];

/// Actions that end the run: OpenHands never answers them with an observation.
const TERMINAL_ACTIONS: &[&str] = &["finish", "reject"];

/// OpenHands event streams, evaluation output and resolver output.
fn detect(peek: &Peek) -> Option<Detection> {
    let found = |confidence, reason: &str, layout| claim(confidence, reason, layout);
    if let Some(Value::Object(row)) = peek.first_line {
        if is_output_row(row) {
            return found(95, "output row with an event history (instance_id / issue)", Layout::Lines);
        }
    }
    let has = |k: &str| peek.has_key_anywhere(k);
    if peek.first_line.is_none()
        && peek.name.ends_with(".jsonl")
        && has("history")
        && (has("instance_id") || has("issue"))
        && has("observation")
    {
        return found(70, "event history in a first line too long or malformed to parse", Layout::Lines);
    }
    let array = peek.bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    let events = has("source") && ((has("action") && has("args")) || (has("observation") && has("extras")));
    if array && events {
        if has("tool_call_metadata") {
            return found(90, "array of events with tool_call_metadata", Layout::Document);
        }
        return found(85, "array of action/observation events", Layout::Document);
    }
    None
}

/// An output row: a `history` list of events next to `instance_id`, `issue` or `instruction`.
fn is_output_row(row: &Map<String, Value>) -> bool {
    let named = ["instance_id", "issue", "instruction"].iter().any(|k| row.contains_key(*k));
    let events = match row.get("history") {
        Some(Value::Array(h)) => h.first().is_none_or(|e| e.get("action").is_some() || e.get("observation").is_some()),
        _ => false,
    };
    named && events
}

/// Which of the three record shapes a record is.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// A bare event list (`tests/runtime/trajs`, saved trajectories).
    Events,
    /// An evaluation `output.jsonl` line.
    Eval,
    /// A resolver `output.jsonl` line.
    Resolver,
}

/// Maps one record (an event list, or an output row) to a trajectory.
fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let (shape, events, mut row, base) = match parse_record(raw.bytes)? {
        Value::Array(events) => (Shape::Events, events, Map::new(), "$".to_string()),
        Value::Object(mut row) => {
            let events = match row.remove("history") {
                Some(Value::Array(h)) => h,
                Some(Value::Null) => {
                    row.insert("history".into(), Value::Null);
                    Vec::new()
                }
                Some(_) => return Err(schema("$.history", "history must be a list of events")),
                None => return Err(schema("$.history", "an output row must have a history list")),
            };
            let shape =
                if row.contains_key("issue") && row.contains_key("success") { Shape::Resolver } else { Shape::Eval };
            (shape, events, row, "$.history".to_string())
        }
        _ => return Err(schema("$", "an OpenHands record is a list of events or an output object")),
    };

    let mut events = objects(events, &base)?;
    let links = Links::of(&events);
    let mut ctx = Context::default();
    let mut steps = Vec::with_capacity(events.len());
    for ev in events.drain(..) {
        steps.push(event_step(ev, &links, &mut ctx));
    }

    let agent = agent(&row, &mut ctx);
    for s in steps.iter_mut() {
        if s.model.is_some() && s.model == agent.model {
            s.model = None;
        }
    }
    let mut gaps = Vec::new();
    // Terminal calls (`finish`, `reject`) end the run: nothing answers them.
    crate::links::link_tool_results_except(&steps, |i| ctx.terminal_steps.contains(&i), &mut gaps);
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    for (i, s) in steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }

    let metrics = match take(&mut row, "metrics") {
        Some(Value::Object(m)) => run_metrics(m),
        Some(other) => {
            row.insert("metrics".into(), other);
            None
        }
        None => ctx.last_llm_metrics.take().and_then(run_metrics),
    };
    if let Some(detail) = stopped_early(&row) {
        gaps.push(Gap::at(GapKind::IncompleteGeneration, None, detail));
    }
    let outcome = outcome(shape, &mut row);
    let task = task(shape, &mut row, &steps, raw.sha256);

    Ok(Trajectory {
        agent,
        extra: into_extra(row),
        gaps,
        metrics,
        outcome,
        steps,
        tools: ctx.tools.map(LazyValue::from_values),
        ..raw.trajectory("openhands", file, task)
    })
}

/// Checks that every event is an object with an `action` or `observation` kind.
fn objects(events: Vec<Value>, base: &str) -> Result<Vec<Map<String, Value>>, Problem> {
    let mut out = Vec::with_capacity(events.len());
    for (i, ev) in events.into_iter().enumerate() {
        let Value::Object(ev) = ev else {
            return Err(schema(format!("{base}[{i}]"), "an event must be an object"));
        };
        let kind = |k: &str| ev.get(k).is_some_and(Value::is_string);
        if !kind("action") && !kind("observation") {
            return Err(schema(format!("{base}[{i}]"), "an event needs an action or observation kind"));
        }
        for key in ["args", "tool_call_metadata"] {
            if ev.get(key).is_some_and(|v| !v.is_object() && !v.is_null()) {
                return Err(schema(format!("{base}[{i}].{key}"), format!("{key} must be an object")));
            }
        }
        out.push(ev);
    }
    Ok(out)
}

/// An event id (or cause) as text: numbers and strings as written, anything else none.
fn id_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn tool_call_id(ev: &Map<String, Value>) -> Option<&str> {
    ev.get("tool_call_metadata")?.get("tool_call_id")?.as_str().filter(|s| !s.is_empty())
}

/// True when an action event is a tool call of the model: it carries a `tool_call_id`, or
/// the agent (or an unnamed source) took an action that is not conversation or harness state.
/// Messages and the system prompt are never calls.
fn is_call(ev: &Map<String, Value>, kind: &str) -> bool {
    if kind == "message" || kind == "system" {
        return false;
    }
    if tool_call_id(ev).is_some() {
        return true;
    }
    let by_agent = matches!(ev.get("source").and_then(Value::as_str), None | Some("agent"));
    by_agent && !NON_CALL_ACTIONS.contains(&kind)
}

/// What the observations may refer to: the call id of every tool-call action by event id,
/// and the ids of actions that are not calls.
#[derive(Default)]
struct Links {
    calls: HashMap<String, String>,
    non_calls: HashSet<String>,
}

impl Links {
    fn of(events: &[Map<String, Value>]) -> Self {
        let mut links = Links::default();
        for ev in events {
            let Some(kind) = ev.get("action").and_then(Value::as_str) else {
                continue;
            };
            let Some(id) = id_text(ev.get("id")) else {
                continue;
            };
            if is_call(ev, kind) {
                let call = tool_call_id(ev).map_or_else(|| format!("event:{id}"), str::to_string);
                links.calls.insert(id, call);
            } else {
                links.non_calls.insert(id);
            }
        }
        links
    }
}

/// What the steps tell about the run as a whole.
#[derive(Default)]
struct Context {
    tools: Option<Vec<Value>>,
    agent_class: Option<String>,
    version: Option<String>,
    first_model: Option<String>,
    last_llm_metrics: Option<Map<String, Value>>,
    /// Model responses whose usage is already on a step (one response may yield several actions).
    responses: HashSet<String>,
    /// Steps whose call ends the run (never answered).
    terminal_steps: HashSet<usize>,
    steps: usize,
}

/// Maps one event to one step.
fn event_step(mut ev: Map<String, Value>, links: &Links, ctx: &mut Context) -> Step {
    let source_id = take(&mut ev, "id");
    let timestamp = take_str(&mut ev, "timestamp");
    if let Some(Value::Object(m)) = ev.get("llm_metrics") {
        ctx.last_llm_metrics = Some(m.clone());
    }
    let mut step = match take_str(&mut ev, "action") {
        Some(kind) => action_step(ev, kind, source_id.as_ref(), ctx),
        None => observation_step(ev, links),
    };
    step.source_id = source_id;
    step.timestamp = timestamp;
    ctx.steps += 1;
    step
}

/// The action's arguments: `args`, or for flat events (`dataclasses.asdict`, resolver
/// output) every field that is not an event-level key.
fn action_args(ev: &mut Map<String, Value>) -> Map<String, Value> {
    match ev.remove("args") {
        Some(Value::Object(a)) => a,
        Some(other) => {
            ev.insert("args".into(), other);
            Map::new()
        }
        None => {
            const EVENT_KEYS: &[&str] =
                &["source", "message", "cause", "tool_call_metadata", "llm_metrics", "timeout", "action"];
            let keys: Vec<String> = ev.keys().filter(|k| !EVENT_KEYS.contains(&k.as_str())).cloned().collect();
            keys.into_iter().filter_map(|k| ev.remove(&k).map(|v| (k, v))).collect()
        }
    }
}

fn action_step(mut ev: Map<String, Value>, kind: String, event_id: Option<&Value>, ctx: &mut Context) -> Step {
    let call = is_call(&ev, &kind);
    let mut args = action_args(&mut ev);
    let mut tcm = take_object(&mut ev, "tool_call_metadata");
    let source = ev.get("source").and_then(Value::as_str).map(str::to_string);
    let mut step = if kind == "system" {
        system_step(&mut args, ctx)
    } else if kind == "message" {
        message_step(&mut args, source.as_deref())
    } else if call {
        call_step(&kind, &mut args, tcm.as_mut(), event_id, ctx)
    } else {
        Step::new(Role::Environment, None)
    };
    if call && TERMINAL_ACTIONS.contains(&kind.as_str()) {
        ctx.terminal_steps.insert(ctx.steps);
    }
    let expected = match step.role {
        Role::User => Some("user"),
        Role::Assistant | Role::System => Some("agent"),
        _ => None,
    };
    if source.is_some() && source.as_deref() == expected {
        ev.remove("source");
    }
    drop_repeated_message(&mut ev, step.content.as_deref());
    step.extra.insert("action".into(), Value::String(kind));
    if !args.is_empty() {
        step.extra.insert("args".into(), Value::Object(args));
    }
    if let Some(t) = tcm.filter(|t| !t.is_empty()) {
        step.extra.insert("tool_call_metadata".into(), Value::Object(t));
    }
    step.extra.extend(ev);
    step
}

/// The event-level `message` is a display string; it is dropped when it repeats the content.
fn drop_repeated_message(ev: &mut Map<String, Value>, content: Option<&Value>) {
    let same = match (ev.get("message"), content) {
        (Some(Value::String(m)), Some(c)) => content_text(c).is_some_and(|t| t == *m),
        _ => false,
    };
    if same {
        ev.remove("message");
    }
}

/// The system prompt; its tool list, agent class and version describe the run.
fn system_step(args: &mut Map<String, Value>, ctx: &mut Context) -> Step {
    let content = take(args, "content");
    if let Some(Value::Array(tools)) = args.get("tools") {
        if ctx.tools.is_none() && !tools.is_empty() {
            if let Some(Value::Array(t)) = args.remove("tools") {
                ctx.tools = Some(t);
            }
        }
    }
    if ctx.agent_class.is_none() {
        ctx.agent_class = take_nonempty_str(args, "agent_class");
    }
    if ctx.version.is_none() {
        ctx.version = take_nonempty_str(args, "openhands_version");
    }
    Step::new(Role::System, content)
}

/// A message: the user's, the agent's (plain text, no call) or, without a source (flat
/// resolver history), a user-role message whose author is unknown.
fn message_step(args: &mut Map<String, Value>, source: Option<&str>) -> Step {
    let content = take(args, "content");
    let (role, authorship) = match source {
        Some("user") => (Role::User, Authorship::Declared),
        Some("agent") => (Role::Assistant, Authorship::Declared),
        Some(_) => (Role::Environment, Authorship::Declared),
        None => (Role::User, Authorship::Unknown),
    };
    let mut step = Step::new(role, content);
    step.authorship = authorship;
    step
}

/// An agent action: an assistant step with one tool call. The name and arguments are the
/// model's own call (matched by `tool_call_id` in `model_response`) when the event carries
/// it, else the action kind and its `args`.
fn call_step(
    kind: &str,
    args: &mut Map<String, Value>,
    mut tcm: Option<&mut Map<String, Value>>,
    event_id: Option<&Value>,
    ctx: &mut Context,
) -> Step {
    let mut step = Step::new(Role::Assistant, None);
    if let Some(thought) = take_nonempty_str(args, "thought") {
        step.content = Some(Value::String(thought).into());
    }
    let id = match tcm.as_deref_mut() {
        Some(t) => take_nonempty_str(t, "tool_call_id"),
        None => None,
    }
    .or_else(|| id_text(event_id).map(|i| format!("event:{i}")));
    let name = tcm.as_deref_mut().and_then(|t| take_nonempty_str(t, "function_name")).unwrap_or_else(|| kind.into());
    let response = tcm.and_then(|t| match t.get_mut("model_response") {
        Some(Value::Object(r)) => Some(r),
        _ => None,
    });
    let mut model_arguments = None;
    if let Some(r) = response {
        model_arguments = id.as_deref().and_then(|id| model_call_arguments(r, id));
        step.model = r.get("model").and_then(Value::as_str).filter(|m| !m.is_empty()).map(str::to_string);
        if ctx.first_model.is_none() {
            ctx.first_model = step.model.clone();
        }
        let rid = r.get("id").and_then(Value::as_str).map(str::to_string);
        let fresh = rid.as_ref().is_none_or(|rid| !ctx.responses.contains(rid));
        if fresh {
            if let Some(Value::Object(usage)) = r.remove("usage") {
                step.metrics = Some(usage_metrics(usage));
            }
            ctx.responses.extend(rid);
        }
    }
    let (arguments, invalid) = match model_arguments {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(v) => (v, false),
            Err(_) => (Value::String(s), true),
        },
        Some(v) => (v, false),
        None => (Value::Object(std::mem::take(args)), false),
    };
    step.tool_calls.push(ToolCall {
        arguments: arguments.into(),
        arguments_invalid: invalid,
        extra: Extra::new(),
        id,
        name,
        text_embedded: false,
    });
    step
}

/// The `function.arguments` of the model's tool call with this id, in any choice.
fn model_call_arguments(response: &Map<String, Value>, id: &str) -> Option<Value> {
    let choices = response.get("choices")?.as_array()?;
    choices.iter().find_map(|c| {
        let calls = c.get("message")?.get("tool_calls")?.as_array()?;
        let call = calls.iter().find(|tc| tc.get("id").and_then(Value::as_str) == Some(id))?;
        call.get("function")?.get("arguments").cloned()
    })
}

/// Per-response usage (OpenAI style, as LiteLLM reports it).
fn usage_metrics(mut usage: Map<String, Value>) -> Metrics {
    let prompt = take_u64(&mut usage, "prompt_tokens");
    let completion = take_u64(&mut usage, "completion_tokens");
    let cached = match usage.get_mut("prompt_tokens_details") {
        Some(Value::Object(d)) => take_u64(d, "cached_tokens"),
        _ => None,
    };
    Metrics {
        duration_seconds: None,
        cached_tokens: cached,
        completion_tokens: completion,
        cost_usd: None,
        extra: into_extra(usage),
        prompt_tokens: prompt,
    }
}

/// An observation: a tool step when it answers a tool call by explicit reference, else an
/// environment step (it answers a harness action, or nothing names what it answers).
fn observation_step(mut ev: Map<String, Value>, links: &Links) -> Step {
    let explicit = tool_call_id(&ev).map(str::to_string);
    let link = match explicit {
        Some(id) => {
            if let Some(Value::Object(t)) = ev.get_mut("tool_call_metadata") {
                t.remove("tool_call_id");
            }
            Some(id)
        }
        None => match id_text(ev.get("cause")) {
            Some(c) if links.non_calls.contains(&c) => None,
            Some(c) => Some(links.calls.get(&c).cloned().unwrap_or_else(|| format!("event:{c}"))),
            None => None,
        },
    };
    let content = take(&mut ev, "content");
    drop_repeated_message(&mut ev, content.as_ref());
    match link {
        Some(call_id) => {
            let mut step = Step::new(Role::Tool, None);
            step.tool_results.push(ToolResult {
                call_id: Some(call_id),
                content: content.map(Into::into),
                extra: into_extra(ev),
                subagent_refs: Vec::new(),
            });
            step
        }
        None => {
            let mut step = Step::new(Role::Environment, content);
            step.extra = into_extra(ev);
            step
        }
    }
}

/// Agent: class and model from the evaluation `metadata`, else from the system event and the
/// first model response; version from the system event.
fn agent(row: &Map<String, Value>, ctx: &mut Context) -> Agent {
    let meta = row.get("metadata");
    let text = |v: Option<&Value>| v.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let name = text(meta.and_then(|m| m.get("agent_class"))).or_else(|| ctx.agent_class.take());
    let model = text(meta.and_then(|m| m.get("llm_config")).and_then(|c| c.get("model"))).or(ctx.first_model.take());
    Agent { model, name, version: ctx.version.take() }
}

/// Run totals (`metrics` of an output row, or the last event's `llm_metrics`): accumulated
/// cost and token usage. A cost of 0 next to counted tokens means the model was not priced:
/// it stays in `extra`.
fn run_metrics(mut m: Map<String, Value>) -> Option<Metrics> {
    let mut usage = take_object(&mut m, "accumulated_token_usage").unwrap_or_default();
    let prompt = take_u64(&mut usage, "prompt_tokens");
    let completion = take_u64(&mut usage, "completion_tokens");
    let cached = take_u64(&mut usage, "cache_read_tokens");
    // No sum: `prompt + completion` can overflow on hostile input.
    let counted = prompt.is_some_and(|p| p > 0) || completion.is_some_and(|c| c > 0);
    let unpriced = m.get("accumulated_cost").and_then(Value::as_f64) == Some(0.0) && counted;
    let cost = if unpriced { None } else { take_f64(&mut m, "accumulated_cost") };
    if !usage.is_empty() {
        m.insert("accumulated_token_usage".into(), Value::Object(usage));
    }
    let metrics = Metrics {
        duration_seconds: None,
        cached_tokens: cached,
        completion_tokens: completion,
        cost_usd: cost,
        extra: m.into(),
        prompt_tokens: prompt,
    };
    (!metrics.is_empty()).then_some(metrics)
}

/// An output row's `error` saying the run stopped before the agent finished (iteration
/// limit, budget, timeout): the error text, kept also in `extra.error`.
fn stopped_early(row: &Map<String, Value>) -> Option<String> {
    const MARKERS: &[&str] = &["maximum iteration", "max iteration", "budget", "timeout", "timed out"];
    let err = row.get("error").and_then(Value::as_str)?;
    let lower = err.to_ascii_lowercase();
    MARKERS.iter().any(|m| lower.contains(m)).then(|| err.to_string())
}

/// Evaluation: `test_result.report.resolved` (or `test_result.resolved`), set by the
/// benchmark's test harness. Resolver: `success`, the resolver's own judgement of the run.
fn outcome(shape: Shape, row: &mut Map<String, Value>) -> Outcome {
    let verdict = match shape {
        Shape::Events => None,
        Shape::Eval => row.get("test_result").and_then(|t| {
            t.get("report")
                .and_then(|r| r.get("resolved"))
                .and_then(Value::as_bool)
                .or_else(|| t.get("resolved").and_then(Value::as_bool))
        }),
        Shape::Resolver => match row.get("success") {
            Some(Value::Bool(b)) => {
                let b = *b;
                row.remove("success");
                Some(b)
            }
            _ => None,
        },
    };
    match verdict {
        Some(ok) => Outcome {
            status: if ok { Status::Success } else { Status::Failure },
            verification: Verification::SourceEvaluator,
            ..Outcome::default()
        },
        None => Outcome::default(),
    }
}

/// Task: `instance_id` (evaluation) or `owner/repo#number` of the issue (resolver) →
/// `openhands/<id>`; else the hashed first user message; else the record hash.
fn task(shape: Shape, row: &mut Map<String, Value>, steps: &[Step], sha: &str) -> Task {
    let id = match shape {
        Shape::Events => None,
        Shape::Eval => match row.get("instance_id") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        },
        Shape::Resolver => issue_id(row.get("issue")),
    };
    let environment = row.get("metadata").and_then(|m| m.get("dataset")).and_then(Value::as_str).map(str::to_string);
    let instruction = take_nonempty_str(row, "instruction").or_else(|| {
        let first = steps.iter().find(|s| s.role == Role::User)?;
        first.content.as_ref().and_then(step_content_text).filter(|t| !t.is_empty())
    });
    Task::keyed(id.clone(), id, instruction, environment, sha)
}

/// `owner/repo#number` of a resolver issue, when all three are stated.
fn issue_id(issue: Option<&Value>) -> Option<String> {
    let issue = issue?;
    let owner = issue.get("owner")?.as_str()?;
    let repo = issue.get("repo")?.as_str()?;
    let number = issue.get("number")?;
    let number = number.as_u64().map(|n| n.to_string()).or_else(|| number.as_str().map(str::to_string))?;
    Some(format!("{owner}/{repo}#{number}"))
}
