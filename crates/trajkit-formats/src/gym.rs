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
    arguments_of, content_text, content_text_in, into_extra, step_content_text, take_f64, take_nonempty_str, take_u64,
};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem, Reason};
use crate::responses::{message_role, reasoning_text};

/// Reader for NeMo Gym rollout JSONL.
pub struct GymReader;

const PLACEHOLDER: &[u8] = b"<PLACEHOLDER ROW>";

impl Reader for GymReader {
    fn name(&self) -> &'static str {
        "gym"
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let lines = |confidence, reason: &str| claim(confidence, reason, Layout::Lines);
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
    // Items are taken apart as they are pushed (an `Item` is a few hundred bytes: a list of
    // them was copied whole on the way).
    let input_len = input.len();
    let mut output = output.into_iter().map(Item::of).peekable();
    if input_len > 0 {
        if let Some(Some(first)) = output.peek() {
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
    for (i, item) in input.into_iter().map(Item::of).enumerate() {
        builder.push(item, false, ItemPath("$.responses_create_params.input", i), &mut steps)?;
    }
    for (i, item) in output.enumerate() {
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

fn is_prompt_message(item: &Item) -> bool {
    let kind = item.str_of("type");
    matches!(kind.as_deref(), None | Some("message"))
        && matches!(item.str_of("role").as_deref(), Some("user" | "system" | "developer"))
}

/// The members of an item the builder reads by name.
const ITEM_KEYS: [&str; 8] = ["type", "role", "content", "call_id", "output", "name", "arguments", "summary"];

/// An input or output item taken apart once: the members `ITEM_KEYS` names handed out as
/// nodes, the others already `extra`. Before, every member went into a map that the
/// builder then emptied key by key (5 % of Gym `inspect`'s samples in the map's removals,
/// and a `Value` made of each string taken).
struct Item<'a> {
    rest: Extra,
    named: [Option<Node<'a>>; ITEM_KEYS.len()],
}

impl<'a> Item<'a> {
    /// The item, when it is an object.
    fn of(node: Node<'a>) -> Option<Self> {
        let (rest, named) = node.into_object(ITEM_KEYS).ok()?;
        Some(Item { rest, named })
    }

    /// The slot of a member `ITEM_KEYS` names.
    fn slot(&mut self, key: &str) -> Option<&mut Option<Node<'a>>> {
        let i = ITEM_KEYS.iter().position(|k| *k == key)?;
        self.named.get_mut(i)
    }

    /// The member `key` (one `ITEM_KEYS` names), when the item has it and it is not taken.
    fn node(&self, key: &str) -> Option<&Node<'a>> {
        let i = ITEM_KEYS.iter().position(|k| *k == key)?;
        self.named.get(i)?.as_ref()
    }

    /// The text of the string under `key` (`None` for another type or none), left in place.
    fn str_of(&self, key: &str) -> Option<std::borrow::Cow<'_, str>> {
        match self.node(key)? {
            Node::Split(split) => json_text::string_text(split.text),
            Node::Value(v) => v.value().as_str().map(std::borrow::Cow::Borrowed),
        }
    }

    /// The string under `key`, taken; a value of another type stays (`json::take_str`).
    fn take_str(&mut self, key: &str) -> Option<String> {
        let text = self.str_of(key)?.into_owned();
        self.slot(key)?.take();
        Some(text)
    }

    /// The value under `key`, taken unless it is `null` (which stays in `extra`).
    fn take_lazy(&mut self, key: &str) -> Option<LazyValue> {
        let slot = self.slot(key)?;
        if slot.as_ref()?.is_null() {
            return None;
        }
        slot.take().map(Node::into_lazy)
    }

    /// The value under `key`, taken whatever it is.
    fn remove_lazy(&mut self, key: &str) -> Option<LazyValue> {
        self.slot(key)?.take().map(Node::into_lazy)
    }

    /// `responses::take_reasoning` read from the members' text (`responses::reasoning_text`);
    /// `content` and `summary` are taken when one gives text.
    fn take_reasoning(&mut self) -> Option<String> {
        let text = reasoning_text(|key| self.content_text(key))?;
        self.remove_lazy("summary");
        self.remove_lazy("content");
        Some(text)
    }

    /// `json::content_text` of the member `key`, read from its text where it can be.
    fn content_text(&self, key: &str) -> Option<String> {
        match self.node(key)? {
            node @ Node::Split(split) => content_text_in(split.text).unwrap_or_else(|| content_text(&node.value())),
            Node::Value(v) => step_content_text(v),
        }
    }

    /// The members not taken: the others, and those named but left in place.
    fn into_extra(self) -> Extra {
        let mut extra = self.rest;
        for (key, node) in ITEM_KEYS.iter().zip(self.named) {
            if let Some(node) = node {
                extra.insert_lazy((*key).into(), node.into_lazy());
            }
        }
        extra
    }
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
        item: Option<Item>,
        from_output: bool,
        path: ItemPath,
        steps: &mut Vec<Step>,
    ) -> Result<(), Problem> {
        let Some(mut item) = item else {
            return Err(schema(path.to_string(), "an item must be an object"));
        };
        let kind = item.take_str("type");
        match kind.as_deref() {
            None | Some("message") => {
                let role =
                    item.take_str("role").ok_or_else(|| schema(format!("{path}.role"), "message without role"))?;
                let content = item.take_lazy("content");
                if role == "assistant" {
                    let step = self.assistant(steps, "message");
                    step.content = content;
                    let mut item = item.into_extra();
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
                keep_leftovers(&mut step.extra, "message", item.into_extra(), kind.is_none());
                steps.push(step);
            }
            Some("reasoning") => {
                let text = item.take_reasoning();
                let item = item.into_extra();
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
                let call_id = item.take_str("call_id");
                let content = item.take_lazy("output");
                let mut step = Step::new(Role::Tool, None);
                let extra = item.into_extra();
                step.tool_results.push(ToolResult { call_id, content, extra, subagent_refs: Vec::new() });
                steps.push(step);
            }
            Some(other) => {
                // Unknown item kinds (web_search_call, ...) are kept whole as environment steps.
                self.flush(steps);
                let mut step = Step::new(Role::Environment, None);
                step.extra.insert("type".into(), Value::String(other.to_string()));
                step.extra.insert_lazy("item".into(), item.into_extra().into());
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

fn tool_call(mut item: Item, path: ItemPath) -> Result<ToolCall, Problem> {
    let name = item.take_str("name").ok_or_else(|| schema(format!("{path}.name"), "function_call without name"))?;
    let id = item.take_str("call_id");
    let (arguments, invalid) = arguments_of(item.remove_lazy("arguments"));
    Ok(ToolCall { arguments, arguments_invalid: invalid, extra: item.into_extra(), id, name, text_embedded: false })
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

#[cfg(test)]
mod tests {
    use super::{Item, ITEMS};
    use crate::json::take_str;
    use trajkit_model::json_text::split;
    use trajkit_model::node::Node;
    use trajkit_model::{Extra, LazyValue};

    /// What the builder took from an item, and what it left: by `Item` and by the map the
    /// items were before (each member in `extra`, then removed key by key).
    type Taken = (Option<String>, Option<String>, Option<serde_json::Value>, Option<serde_json::Value>, Extra);

    fn by_item(node: Node) -> Option<Taken> {
        let mut item = Item::of(node)?;
        let kind = item.take_str("type");
        let call_id = item.take_str("call_id");
        let content = item.take_lazy("content").map(LazyValue::into_value);
        let arguments = item.remove_lazy("arguments").map(LazyValue::into_value);
        Some((kind, call_id, content, arguments, item.into_extra()))
    }

    fn by_map(node: Node) -> Option<Taken> {
        let mut item = node.into_extra().ok()?;
        let kind = take_str(&mut item, "type");
        let call_id = take_str(&mut item, "call_id");
        // A `null` content stays in `extra`.
        let content = match item.remove_lazy("content") {
            Some(c) if c.is_null() => {
                item.insert_lazy("content".into(), c);
                None
            }
            other => other.map(LazyValue::into_value),
        };
        let arguments = item.remove_lazy("arguments").map(LazyValue::into_value);
        Some((kind, call_id, content, arguments, item))
    }

    /// Synthetic (real items hold strings where strings belong, once each): an item taken
    /// apart once gives what emptying a map of all its members gave, and its leftovers write
    /// the same canonical JSON, for members of the wrong type, `null`, repeated names,
    /// escapes, an empty object and a non-object.
    #[test]
    fn items_taken_apart_once_as_from_a_map() {
        let list = r#"[
            {"type": "function_call", "call_id": "c\u00e9\n1", "name": "f", "arguments": "{\"a\": 1}", "id": "x"},
            {"type": 5, "call_id": null, "content": null, "status": "done"},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}], "type": "message"},
            {"type": "a", "type": "b", "call_id": 1, "call_id": "last", "content": "c", "content": null},
            {"arguments": {"z": [1, 2.50, "\/"]}, "output": "o", "name": ["n"]},
            {},
            7
        ]"#;
        let items = |()| Node::Split(split(list, &ITEMS).expect("a valid list")).into_elements().expect("a list");
        let mut seen = 0;
        for (a, b) in items(()).into_iter().zip(items(())) {
            let (a, b) = (by_item(a), by_map(b));
            assert_eq!(a.is_some(), b.is_some());
            let (Some(a), Some(b)) = (a, b) else { continue };
            assert_eq!((&a.0, &a.1, &a.2, &a.3), (&b.0, &b.1, &b.2, &b.3));
            assert_eq!(a.4.clone().into_map(), b.4.clone().into_map());
            let json = |e: &Extra| trajkit_model::compact::to_string(e).expect("writable");
            assert_eq!(json(&a.4), json(&b.4));
            seen += 1;
        }
        assert_eq!(seen, 6, "six of the seven elements are objects");
    }

    /// Synthetic (the real reasoning items hold a list of summary parts): an item's
    /// reasoning read from its members' text is what `responses::take_reasoning` reads from
    /// the map, and both leave the same members, for content and summary as strings, lists of
    /// parts (repeated `text`, parts that are not objects or whose `text` is not a string,
    /// escapes), empty, `null` and missing.
    #[test]
    fn reasoning_read_from_text_as_from_a_map() {
        let list = r#"[
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "a\nb"}, {"text": "c"}], "id": "r"},
            {"type": "reasoning", "content": "direct", "summary": [{"text": "ignored"}]},
            {"type": "reasoning", "content": "", "summary": [{"text": "x", "text": "last"}, 5, {"text": 7}, []]},
            {"type": "reasoning", "content": null, "summary": []},
            {"type": "reasoning", "content": [{"text": ""}], "summary": "s\u00e9"},
            {"type": "reasoning", "summary": {"text": "an object"}},
            {"type": "reasoning"}
        ]"#;
        let items = |()| Node::Split(split(list, &ITEMS).expect("a valid list")).into_elements().expect("a list");
        let mut found = Vec::new();
        for (a, b) in items(()).into_iter().zip(items(())) {
            let mut item = Item::of(a).expect("an object");
            let text = item.take_reasoning();
            let mut map = b.into_extra().expect("an object");
            assert_eq!(text, crate::responses::take_reasoning(&mut map));
            assert_eq!(item.into_extra().into_map(), map.into_map());
            found.push(text);
        }
        let want = ["a\nb\nc", "direct", "last", "", "s\u{e9}", "", ""];
        assert_eq!(found, want.map(|t| (!t.is_empty()).then(|| t.to_string())));
    }
}
