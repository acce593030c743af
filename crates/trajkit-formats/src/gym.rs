//! NVIDIA NeMo Gym rollouts: one JSON line per rollout, a Responses-API request
//! (`responses_create_params`) and response (`response.output`) plus the verifier's reward.
//!
//! The conversation is the input items followed by the output items. See
//! docs/formats/gym.md for the mapping, task-key and outcome rules.

use serde_json::{Map, Value};
use trajkit_model::json_text::{self, Parts, Shape, Split};
use trajkit_model::node::Node;
use trajkit_model::{
    Agent, Authorship, Extra, Gap, GapKind, LazyValue, Metrics, Outcome, Role, Step, Task, ToolCall, ToolResult,
    Trajectory, Verification,
};

use crate::input::InputFile;
use crate::json::{
    into_extra, step_content_text, take_f64, take_lazy, take_lazy_arguments, take_nonempty_str, take_str, take_u64,
};
use crate::links::link_tool_results;
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem, Reason};
use crate::responses::{message_role, take_reasoning};

/// Reader for NeMo Gym rollout JSONL.
pub struct GymReader;

const PLACEHOLDER: &[u8] = b"<PLACEHOLDER ROW>";

impl Reader for GymReader {
    fn name(&self) -> &'static str {
        "gym"
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let lines = |confidence, reason: &str| {
            Some(Detection { confidence, reason: reason.to_string(), layout: Layout::Lines })
        };
        if peek.has_key("responses_create_params") || peek.has_key("_ng_task_index") {
            return lines(95, "rollout keys (responses_create_params / _ng_task_index)");
        }
        if peek.first_line.is_none() && peek.has_key_anywhere("responses_create_params") {
            return lines(80, "rollout key in a first line too long or malformed to parse");
        }
        if peek.has_key("sample") && peek.has_key("mean/reward") {
            return lines(90, "gym reward-profiling rows");
        }
        let rollout_name = peek.name.ends_with(".jsonl") && peek.name.contains("rollouts");
        if rollout_name && peek.has_key("reward") {
            return lines(60, "reward rows in a file named like Gym rollouts");
        }
        if rollout_name && peek.first_line.is_none() && peek.bytes.starts_with(PLACEHOLDER) {
            return lines(60, "placeholder rows in a file named like Gym rollouts");
        }
        if peek.has_key("response") && peek.has_key("reward") {
            return lines(40, "response and reward keys");
        }
        None
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        match read(raw, file) {
            Ok((t, key)) => RecordResult::Accepted { trajectory: Box::new(t), rollout_key: key, consumed: Vec::new() },
            Err(p) => RecordResult::Rejected(vec![p]),
        }
    }
}

fn not_a_rollout(what: &str) -> Problem {
    Problem::new(Reason::NotARollout, "$", format!("not a rollout: {what}"))
}

/// Maps one rollout line; returns the trajectory and its rollout key.
fn read(raw: &RawRecord, file: &InputFile) -> Result<(Trajectory, Option<String>), Problem> {
    if raw.bytes.trim_ascii() == PLACEHOLDER {
        return Err(not_a_rollout("placeholder row"));
    }
    let (mut row, [response, params]) = row_fields(raw.bytes, raw.written)?;
    let has_params = params.is_some();
    let Some(response) = response.filter(|r| !r.is_null()) else {
        return Err(not_a_rollout(classify_non_rollout(&row, has_params)));
    };
    let (mut response, [output, response_tools]) =
        response.into_object(["output", "tools"]).map_err(|_| schema("$.response", "response must be an object"))?;
    let (mut params, [input, params_tools]) = match params.filter(|p| !p.is_null()) {
        None => (Extra::new(), [None, None]),
        Some(p) => p
            .into_object(["input", "tools"])
            .map_err(|_| schema("$.responses_create_params", "responses_create_params must be an object"))?,
    };

    let input = input_items(input)?;
    let transitions = response.get("contains_transitions").and_then(Value::as_bool) == Some(true);
    let output = output_items(output, transitions)?;
    // A transition already holds the full model input, request input included.
    let input = if transitions { replayed_input(input, &output)? } else { input };
    let input: Vec<Option<Extra>> = input.into_iter().map(|i| i.into_extra().ok()).collect();
    let output: Vec<Option<Extra>> = output.into_iter().map(|i| i.into_extra().ok()).collect();
    let input_len = input.len();
    if input_len > 0 {
        if let Some(Some(first)) = output.first() {
            if is_prompt_message(first) {
                return Err(Problem::new(
                    Reason::AmbiguousHistory,
                    "$.response.output[0]",
                    "output starts with a prompt-role message while the input is non-empty",
                ));
            }
        }
    }

    let mut steps = Vec::with_capacity(input_len + output.len());
    let mut gaps = Vec::new();
    let mut builder = StepBuilder::default();
    for (i, item) in input.into_iter().enumerate() {
        builder.push(item, false, ItemPath("$.responses_create_params.input", i), &mut steps)?;
    }
    for (i, item) in output.into_iter().enumerate() {
        builder.push(item, true, ItemPath("$.response.output", i), &mut steps)?;
    }
    builder.flush(&mut steps);
    link_tool_results(&steps, &mut gaps);
    if steps.is_empty() {
        gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    if let Some(reason) = response.get("incomplete_details").and_then(|d| d.get("reason")).and_then(Value::as_str) {
        gaps.push(Gap::at(GapKind::IncompleteGeneration, None, reason));
    }
    for (i, s) in steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }

    let rollout_key = rollout_key(&row, &response);
    let agent_name = row.get("agent_ref").and_then(|a| a.get("name")).and_then(Value::as_str).map(str::to_string);
    let model = take_nonempty_str(&mut response, "model").or_else(|| take_nonempty_str(&mut params, "model"));
    // The request's tools, else the response's; what is not taken stays where it was.
    let tools = match tool_list(params_tools, &mut params) {
        Some(t) => {
            if let Some(kept) = response_tools {
                response.insert_lazy("tools".into(), kept.into_lazy());
            }
            Some(t)
        }
        None => tool_list(response_tools, &mut response),
    };
    let generated = steps.iter().any(|s| s.role == Role::Assistant);
    let metrics = usage_metrics(&mut response, generated);
    let outcome = outcome(&mut row);
    let task = task(&mut row, &steps, agent_name.as_deref(), raw.sha256);

    let mut extra = row;
    if !params.is_empty() {
        extra.insert_lazy("responses_create_params".into(), params.into());
    }
    if !response.is_empty() {
        extra.insert_lazy("response".into(), response.into());
    }
    let t = Trajectory {
        agent: Agent { model, name: agent_name, version: None },
        extra,
        gaps,
        metrics,
        outcome,
        steps,
        tools,
        ..raw.trajectory("gym", file, task)
    };
    Ok((t, rollout_key))
}

/// The items of the request's input or the response's output, taken apart to their fields.
const ITEMS: Shape = Shape::Array(&Shape::Object(&[]));

/// Tool definitions: each one whole (carried to the record as its text).
const TOOLS: Shape = Shape::Array(&Shape::Whole);

/// How far the one pass over a row takes it apart: to the fields of each item, and to each
/// tool definition.
const ROW: Shape = Shape::Object(&[
    ("response", Shape::Object(&[("output", ITEMS), ("tools", TOOLS)])),
    ("responses_create_params", Shape::Object(&[("input", ITEMS), ("tools", TOOLS)])),
]);

/// The row's fields, and the response and request handed out to be taken apart. Each field
/// stays its source text until the mapping reads it: most of a row (`instance_config`, the
/// verifier's details, message content, tool arguments and output) is only carried to the
/// record, and building its `Value` tree was most of `inspect`'s time; the canonical writer
/// writes such a field straight from its text (`written`: the split writes its canonical
/// form while checking it). Text the check in `json_text::split` refuses is parsed whole
/// (serde_json's result or error).
fn row_fields(bytes: &[u8], written: bool) -> Result<(Extra, [Option<Node<'_>>; 2]), Problem> {
    let split = |text| if written { json_text::split_written(text, &ROW) } else { json_text::split(text, &ROW) };
    let split = std::str::from_utf8(bytes).ok().and_then(split);
    let row = match split {
        Some(split @ Split { parts: Parts::Members(_), .. }) => Node::Split(split),
        _ => match parse_record(bytes)? {
            row @ Value::Object(_) => Node::Value(row.into()),
            _ => return Err(schema("$", "a rollout line must be a JSON object")),
        },
    };
    row.into_object(["response", "responses_create_params"])
        .map_err(|_| schema("$", "a rollout line must be a JSON object"))
}

/// A non-empty list of tool definitions, each kept as it is held (text stays text); any
/// other value goes back into `extra` under `tools`, and `None`.
fn tool_list(tools: Option<Node<'_>>, extra: &mut Extra) -> Option<Vec<LazyValue>> {
    match tools?.into_elements() {
        Ok(defs) if !defs.is_empty() => Some(defs.into_iter().map(Node::into_lazy).collect()),
        Ok(_) => {
            extra.insert_lazy("tools".into(), Value::Array(Vec::new()).into());
            None
        }
        Err(other) => {
            extra.insert_lazy("tools".into(), other.into());
            None
        }
    }
}

/// Says what a row without `response` is, for the rejection message.
fn classify_non_rollout(row: &Extra, has_params: bool) -> &'static str {
    if row.contains_key("sample") && row.keys().any(|k| k.starts_with("mean/")) {
        "reward-profiling row (no response)"
    } else if has_params {
        "task input row (no response)"
    } else if row.contains_key("reward") {
        "reward-only row (no response)"
    } else {
        "row without a response"
    }
}

/// `input` as a list of items (a plain string becomes one user message); each item stays
/// text until mapped.
fn input_items(input: Option<Node<'_>>) -> Result<Vec<Node<'_>>, Problem> {
    let Some(input) = input.filter(|i| !i.is_null()) else {
        return Ok(Vec::new());
    };
    match input.into_elements() {
        Ok(items) => Ok(items),
        Err(Value::String(s)) => {
            let mut m = Map::new();
            m.insert("role".into(), Value::String("user".into()));
            m.insert("content".into(), Value::String(s));
            m.insert("type".into(), Value::String("message".into()));
            Ok(vec![Node::Value(Value::Object(m).into())])
        }
        Err(_) => Err(schema("$.responses_create_params.input", "input must be a string or a list of items")),
    }
}

/// `output` items; for transition lists, the last transition when each extends the previous.
fn output_items(output: Option<Node<'_>>, transitions: bool) -> Result<Vec<Node<'_>>, Problem> {
    let Some(output) = output.filter(|o| !o.is_null()) else {
        return Ok(Vec::new());
    };
    let output = output.into_elements().map_err(|_| schema("$.response.output", "output must be a list"))?;
    if !transitions {
        return Ok(output);
    }
    let mut lists = Vec::with_capacity(output.len());
    for (i, t) in output.into_iter().enumerate() {
        match t.into_elements() {
            Ok(items) => lists.push(items),
            Err(_) => {
                return Err(schema(
                    format!("$.response.output[{i}]"),
                    "with contains_transitions each output entry must be a list of items",
                ))
            }
        }
    }
    for i in 1..lists.len() {
        let (prev, next) = (&lists[i - 1], &lists[i]);
        let extends = next.len() >= prev.len() && prev.iter().zip(next).all(|(a, b)| a.value() == b.value());
        if !extends {
            return Err(Problem::new(
                Reason::TransitionRewritesHistory,
                format!("$.response.output[{i}]"),
                format!("transition {i} does not extend transition {}: history was rewritten", i - 1),
            ));
        }
    }
    Ok(lists.pop().unwrap_or_default())
}

/// With transitions the conversation is the last transition, which must begin with the
/// request input (the aviary agent builds each model input from it): the input is then not
/// prepended again. A last transition that drops or alters it rewrites history.
fn replayed_input<'a>(input: Vec<Node<'a>>, conversation: &[Node<'a>]) -> Result<Vec<Node<'a>>, Problem> {
    let kept = conversation.len() >= input.len()
        && input.iter().zip(conversation).all(|(a, b)| same_item(&a.value(), &b.value()));
    if kept {
        return Ok(Vec::new());
    }
    Err(Problem::new(
        Reason::TransitionRewritesHistory,
        "$.response.output",
        "the last transition does not begin with the request input: history was rewritten",
    ))
}

/// Item equality where a missing `type` means `message` (input items often omit it).
fn same_item(a: &Value, b: &Value) -> bool {
    let typed = |v: &Value| match v {
        Value::Object(m) if !m.contains_key("type") => {
            let mut m = m.clone();
            m.insert("type".into(), Value::String("message".into()));
            Value::Object(m)
        }
        other => other.clone(),
    };
    a == b || typed(a) == typed(b)
}

fn is_prompt_message(item: &Extra) -> bool {
    let kind = item.get("type").and_then(Value::as_str);
    matches!(kind, None | Some("message"))
        && matches!(item.get("role").and_then(Value::as_str), Some("user" | "system" | "developer"))
}

/// Groups Responses items into steps: reasoning, an assistant message and the function
/// calls that follow it form one assistant decision; every other item is a step of its own.
#[derive(Default)]
struct StepBuilder {
    open: Option<Step>,
}

impl StepBuilder {
    fn flush(&mut self, steps: &mut Vec<Step>) {
        if let Some(s) = self.open.take() {
            steps.push(s);
        }
    }

    /// The open assistant step if it can take `what`, else a fresh one.
    fn assistant(&mut self, steps: &mut Vec<Step>, what: &str) -> &mut Step {
        let fits = match &self.open {
            Some(s) => match what {
                "function_call" => true,
                "message" => s.content.is_none() && s.tool_calls.is_empty(),
                // Reasoning opens a decision, or follows the calls it explains
                // (some agents emit function_call before its reasoning item).
                _ => s.reasoning.is_none() && (s.content.is_none() || !s.tool_calls.is_empty()),
            },
            None => false,
        };
        if !fits {
            self.flush(steps);
        }
        self.open.get_or_insert_with(|| Step::new(Role::Assistant, None))
    }

    fn push(
        &mut self,
        item: Option<Extra>,
        from_output: bool,
        path: ItemPath,
        steps: &mut Vec<Step>,
    ) -> Result<(), Problem> {
        let Some(mut item) = item else {
            return Err(schema(path.to_string(), "an item must be an object"));
        };
        let kind = take_str(&mut item, "type");
        match kind.as_deref() {
            None | Some("message") => {
                let role = take_str(&mut item, "role")
                    .ok_or_else(|| schema(format!("{path}.role"), "message without role"))?;
                let content = take_lazy(&mut item, "content");
                if role == "assistant" {
                    let step = self.assistant(steps, "message");
                    step.content = content;
                    move_token_fields(&mut item, step);
                    keep_leftovers(&mut step.extra, "message", item, kind.is_none());
                    return Ok(());
                }
                let role_enum = message_role(&role, path)?;
                self.flush(steps);
                let mut step = Step::new(role_enum, None);
                step.content = content;
                if from_output {
                    step.authorship = Authorship::Unknown;
                }
                if role == "developer" {
                    step.extra.insert("role".into(), Value::String(role));
                }
                keep_leftovers(&mut step.extra, "message", item, kind.is_none());
                steps.push(step);
            }
            Some("reasoning") => {
                let text = take_reasoning(&mut item);
                let step = self.assistant(steps, "reasoning");
                if text.is_some() {
                    step.reasoning = text;
                }
                keep_leftovers(&mut step.extra, "reasoning", item, false);
            }
            Some("function_call") => {
                let call = tool_call(item, path)?;
                self.assistant(steps, "function_call").tool_calls.push(call);
            }
            Some("function_call_output") => {
                self.flush(steps);
                let call_id = take_str(&mut item, "call_id");
                let content = take_lazy(&mut item, "output");
                let mut step = Step::new(Role::Tool, None);
                step.tool_results.push(ToolResult { call_id, content, extra: item, subagent_refs: Vec::new() });
                steps.push(step);
            }
            Some(other) => {
                // Unknown item kinds (web_search_call, ...) are kept whole as environment steps.
                self.flush(steps);
                let mut step = Step::new(Role::Environment, None);
                step.extra.insert("type".into(), Value::String(other.to_string()));
                step.extra.insert_lazy("item".into(), item.into());
                steps.push(step);
            }
        }
        Ok(())
    }
}

/// Where an item of a rollout sits (`$.response.output[3]`): written out only in an error,
/// so that reading a row's items formats no path.
#[derive(Clone, Copy)]
struct ItemPath(&'static str, usize);

impl std::fmt::Display for ItemPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[{}]", self.0, self.1)
    }
}

/// Training fields (token ids, log probs) on output messages go to the step's metrics, as
/// text when they were (nothing reads them before they are written).
fn move_token_fields(item: &mut Extra, step: &mut Step) {
    for key in ["prompt_token_ids", "generation_token_ids", "generation_log_probs"] {
        if let Some(v) = item.remove_lazy(key) {
            step.metrics.get_or_insert_with(Metrics::default).extra.insert_lazy(key.into(), v);
        }
    }
}

/// Keeps an item's unmapped fields under `key` (and records a missing `type`), those still
/// text kept as text: made into a `Value` here, they were parsed only to be written again
/// (2.4 % of Gym `convert`'s samples under `lazy::parse`).
fn keep_leftovers(extra: &mut Extra, key: &str, mut item: Extra, untyped: bool) {
    if untyped {
        item.insert("type".into(), Value::Null);
    }
    if !item.is_empty() {
        extra.insert_lazy(key.into(), item.into());
    }
}

fn tool_call(mut item: Extra, path: ItemPath) -> Result<ToolCall, Problem> {
    let name =
        take_str(&mut item, "name").ok_or_else(|| schema(format!("{path}.name"), "function_call without name"))?;
    let id = take_str(&mut item, "call_id");
    let (arguments, invalid) = take_lazy_arguments(&mut item);
    Ok(ToolCall { arguments, arguments_invalid: invalid, extra: item, id, name, text_embedded: false })
}

/// Token usage: Responses (`input_tokens`) or Chat Completions (`prompt_tokens`) style.
/// A usage of all zeros on a rollout that generated steps is a server default, not a
/// count: it stays in `extra` (under `response.usage`) and the figures stay absent.
fn usage_metrics(response: &mut Extra, generated: bool) -> Option<Metrics> {
    let Some(Value::Object(usage)) = response.get("usage") else {
        return None;
    };
    let zero = |k: &str| usage.get(k).and_then(Value::as_u64) == Some(0);
    let placeholder =
        (zero("input_tokens") || zero("prompt_tokens")) && (zero("output_tokens") || zero("completion_tokens"));
    if placeholder && generated {
        return None;
    }
    let Some(Value::Object(mut usage)) = response.remove("usage") else {
        return None;
    };
    let prompt = take_u64(&mut usage, "input_tokens").or_else(|| take_u64(&mut usage, "prompt_tokens"));
    let completion = take_u64(&mut usage, "output_tokens").or_else(|| take_u64(&mut usage, "completion_tokens"));
    let cached = ["input_tokens_details", "prompt_tokens_details"].iter().find_map(|k| {
        let details = usage.get_mut(*k)?.as_object_mut()?;
        take_u64(details, "cached_tokens")
    });
    let cost = take_f64(&mut usage, "cost");
    Some(Metrics {
        duration_seconds: None,
        cached_tokens: cached,
        completion_tokens: completion,
        cost_usd: cost,
        extra: into_extra(usage),
        prompt_tokens: prompt,
    })
}

/// Reward from the resources server's verifier; status stays unknown (no success rule here).
fn outcome(row: &mut Extra) -> Outcome {
    let reward = take_f64(row, "reward");
    let mut components = std::collections::BTreeMap::new();
    if let Some(Value::Object(c)) = row.get("reward_components") {
        if c.values().all(Value::is_number) {
            for (k, v) in c {
                if let Some(f) = v.as_f64() {
                    components.insert(k.clone(), f);
                }
            }
            row.remove("reward_components");
        }
    }
    let verification = if reward.is_some() { Verification::SourceEvaluator } else { Verification::Unverified };
    Outcome { reward, reward_components: components, source: None, status: Default::default(), verification }
}

/// Rollout key: (`_ng_task_index`, `_ng_rollout_index`, `response.id`), else
/// `ng_trajectory`'s rollout id. The response id tells two collection runs with the same
/// indices apart; the indices tell apart rows whose producer reuses one response id.
fn rollout_key(row: &Extra, response: &Extra) -> Option<String> {
    if let (Some(t), Some(r)) = (row.get("_ng_task_index"), row.get("_ng_rollout_index")) {
        if !t.is_null() && !r.is_null() {
            return Some(match scalar(response.get("id")) {
                Some(id) => format!("task {t} rollout {r} response {id}"),
                None => format!("task {t} rollout {r}"),
            });
        }
    }
    let traj = row.get("ng_trajectory")?;
    ["rollout_id", "id"].iter().find_map(|k| scalar(traj.get(*k))).map(|v| format!("ng_trajectory {v}"))
}

/// A string or number usable as an identity (rendered as JSON), else None.
fn scalar(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| v.is_string() || v.is_number())
}

/// Where rollouts name their task explicitly, in order of preference.
const TASK_ID_PATHS: &[&[&str]] = &[
    &["task_id"],
    &["instance_id"],
    &["task", "id"],
    &["instance_config", "problem_info", "instance_id"],
    &["scenario_id"],
];

/// The instruction: every user message before the first assistant step, joined (the
/// first message alone is often a generic prompt shared by many tasks).
fn initial_instruction(steps: &[Step]) -> Option<String> {
    let texts: Vec<String> = steps
        .iter()
        .take_while(|s| s.role != Role::Assistant)
        .filter(|s| s.role == Role::User)
        .filter_map(|s| s.content.as_ref().and_then(step_content_text))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// Task: an explicit id (`TASK_ID_PATHS`), else the hashed initial user instruction
/// plus the agent (environment) name. `_ng_task_index` is never a key.
fn task(row: &mut Extra, steps: &[Step], environment: Option<&str>, sha: &str) -> Task {
    let explicit = TASK_ID_PATHS.iter().find_map(|path| match row.get_path(path)?.as_ref() {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    });
    let key = explicit.as_ref().map(|id| format!("{}/{}", environment.unwrap_or("gym"), id));
    Task::keyed(key, explicit, initial_instruction(steps), environment.map(str::to_string), sha)
}
