//! ToolBench (OpenBMB): DFSDT / CoT answer files, `conversations` SFT files built from
//! them, and the query (instruction) lists the answers were generated from.
//!
//! An answer file is one JSON document: the search `tree`, and `answer_generation` whose
//! `train_messages` hold the taken path as OpenAI chat messages. See docs/formats/toolbench.md.

use std::path::Path;

use serde_json::{Map, Value};
use trajkit_model::{
    Agent, Extra, Gap, GapKind, LazyValue, Metrics, Outcome, Role, Step, Task, ToolCall, ToolResult, Trajectory,
    Verification,
};

use crate::input::InputFile;
use crate::json::{into_extra, take, take_str};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{parse_record, schema, Problem, Reason};

/// Reader for ToolBench answer, SFT and query files: query lists and SFT files are arrays
/// (one record per element), an answer file is one object (read whole).
pub(crate) static READER: FnReader = FnReader { family: FAMILY, detect, read, arrays: true };

const FAMILY: &str = "toolbench";

/// ToolBench answer files (one object), query lists and SFT conversations (arrays).
fn detect(peek: &Peek) -> Option<Detection> {
    let doc = |confidence, reason: &str| claim(confidence, reason, Layout::Document);
    let start = peek.bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if start == Some(b'{') && peek.has_key_anywhere("answer_generation") && peek.has_key_anywhere("finish_type") {
        return doc(95, "ToolBench answer file (answer_generation, finish_type)");
    }
    // `answer_generation` is written after the tree, which can outgrow the peek.
    if start == Some(b'{')
        && peek.has_key_anywhere("win")
        && peek.has_key_anywhere("tree")
        && peek.has_key_anywhere("node_type")
    {
        return doc(85, "ToolBench answer file (win and a DFS tree)");
    }
    if start == Some(b'[') {
        if peek.has_key_anywhere("query_id") && peek.has_key_anywhere("api_list") {
            return doc(90, "ToolBench query list (query_id, api_list)");
        }
        if peek.has_key_anywhere("conversations") && peek.has_key_anywhere("from") && peek.contains("Action Input:") {
            return doc(75, "ToolBench SFT conversations (from/value with Action Input)");
        }
    }
    None
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let Value::Object(row) = parse_record(raw.bytes)? else {
        return Err(schema("$", "a ToolBench record must be a JSON object"));
    };
    if row.contains_key("answer_generation") {
        return answer(row, raw, file);
    }
    if row.contains_key("conversations") {
        return conversation(row, raw, file);
    }
    if row.contains_key("query_id") && row.contains_key("query") {
        return Err(Problem::new(
            Reason::NotARollout,
            "$",
            "a ToolBench query (task input: query, api_list), not a trajectory",
        ));
    }
    Err(schema("$", "neither answer_generation nor conversations"))
}

fn base(raw: &RawRecord, file: &InputFile, steps: Vec<Step>, task: Task) -> Trajectory {
    Trajectory { steps, ..raw.trajectory(FAMILY, file, task) }
}

/// Synthetic call id of the call made by step `i` (ToolBench messages carry none; the
/// `function` message right after the call answers it).
fn call_id(i: usize) -> String {
    format!("call-{i}")
}

fn common_gaps(t: &mut Trajectory) {
    link_tool_results(&t.steps, &mut t.gaps);
    for (i, s) in t.steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            t.gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }
    if t.steps.is_empty() {
        t.gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
}

fn parse_arguments(text: String) -> (Value, bool) {
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => (v, false),
        Err(_) => (Value::String(text), true),
    }
}

// ---------------------------------------------------------------- answer files

/// `<query_id>_<backbone>_<method>.json`, the name qa_pipeline gives an answer file.
fn name_parts(path: &Path) -> (Option<String>, Option<String>, Option<String>) {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let mut parts = stem.splitn(3, '_');
    let qid = parts.next().filter(|q| !q.is_empty() && q.bytes().all(|b| b.is_ascii_digit())).map(str::to_string);
    if qid.is_none() {
        return (None, None, None);
    }
    (qid, parts.next().map(str::to_string), parts.next().map(str::to_string))
}

/// `G1` from a parent directory `G1_answer` (the producer's layout).
fn group_of(path: &Path) -> Option<String> {
    let dir = path.parent()?.file_name()?.to_str()?;
    let (group, _) = dir.split_once('_')?;
    let digits = group.strip_prefix('G')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| group.to_string())
}

fn answer(mut row: Map<String, Value>, raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut gen = match row.remove("answer_generation") {
        Some(Value::Object(g)) => g,
        _ => return Err(schema("$.answer_generation", "answer_generation must be an object")),
    };
    let lists = match gen.remove("train_messages") {
        None => Vec::new(),
        Some(Value::Array(l)) => l,
        Some(_) => return Err(schema("$.answer_generation.train_messages", "train_messages must be a list")),
    };
    let mut lists: Vec<Vec<Value>> = lists
        .into_iter()
        .enumerate()
        .map(|(i, l)| match l {
            Value::Array(m) => Ok(m),
            _ => Err(schema(format!("$.answer_generation.train_messages[{i}]"), "a message list must be a list")),
        })
        .collect::<Result<_, _>>()?;
    // Each list is one training sample: the path up to one decision. The last one is the
    // whole path; earlier ones are normally its prefixes and then carry nothing new.
    let last = lists.pop().unwrap_or_default();
    if lists.iter().all(|l| l.len() <= last.len() && last[..l.len()] == l[..]) {
        if !lists.is_empty() {
            let lens: Vec<Value> = lists.iter().map(|l| Value::from(l.len())).collect();
            gen.insert("train_messages_prefix_lengths".into(), Value::Array(lens));
        }
    } else {
        gen.insert("train_messages_earlier".into(), Value::Array(lists.into_iter().map(Value::Array).collect()));
    }
    let (mut steps, raw_args) = openai_steps(last)?;

    let mut gaps = Vec::new();
    if let Some(root) = row.get("tree").and_then(|t| t.get("tree")) {
        walk_tree(root, &mut steps, &raw_args, &mut gaps);
    }

    let (qid, backbone, method) = name_parts(&file.fs_path);
    let instruction = take_str(&mut gen, "query");
    let key = match (&qid, group_of(&file.fs_path)) {
        (Some(q), Some(g)) => Some(format!("{FAMILY}/{g}/{q}")),
        _ => None,
    };
    let task = Task::keyed(key, qid, instruction, Some(FAMILY.into()), raw.sha256);
    let mut t = base(raw, file, steps, task);
    t.agent = Agent { model: backbone, name: method, version: None };
    t.tools = match take(&mut gen, "function") {
        Some(Value::Array(f)) => Some(LazyValue::from_values(f)),
        Some(other) => {
            gen.insert("function".into(), other);
            None
        }
        None => None,
    };
    let mut m = Map::new();
    for k in ["total_tokens", "query_count"] {
        if gen.get(k).is_some_and(Value::is_u64) {
            if let Some(v) = gen.remove(k) {
                m.insert(k.into(), v);
            }
        }
    }
    if !m.is_empty() {
        t.metrics = Some(Metrics { extra: m.into(), ..Default::default() });
    }
    // `win` is the search's own flag (a Finish(give_answer) node was reached), not a
    // judgement of the answer: it stays in `extra` and the status stays unknown.
    t.outcome = Outcome { verification: Verification::Unverified, ..Default::default() };
    t.gaps = gaps;
    common_gaps(&mut t);
    let mut extra = into_extra(row);
    if !gen.is_empty() {
        extra.insert("answer_generation".into(), Value::Object(gen));
    }
    t.extra = extra;
    Ok(t)
}

/// OpenAI chat messages (`function_call` style) into steps.
/// Also returns, per step, the verbatim argument text of its call.
fn openai_steps(messages: Vec<Value>) -> Result<(Vec<Step>, Vec<Option<String>>), Problem> {
    let mut steps: Vec<Step> = Vec::with_capacity(messages.len());
    let mut raw_args: Vec<Option<String>> = Vec::with_capacity(messages.len());
    let mut pending: Option<(String, String)> = None;
    for (i, msg) in messages.into_iter().enumerate() {
        let path = format!("$.answer_generation.train_messages[-1][{i}]");
        let Value::Object(mut m) = msg else {
            return Err(schema(path, "a message must be an object"));
        };
        let role = take_str(&mut m, "role").ok_or_else(|| schema(format!("{path}.role"), "message without role"))?;
        let content = take(&mut m, "content");
        let mut raw = None;
        let mut step = match role.as_str() {
            "system" => Step::new(Role::System, content),
            "user" => Step::new(Role::User, content),
            "assistant" => {
                let mut s = Step::new(Role::Assistant, content);
                if let Some(Value::Object(mut fc)) = m.remove("function_call") {
                    let name = take_str(&mut fc, "name")
                        .ok_or_else(|| schema(format!("{path}.function_call.name"), "function_call without name"))?;
                    let (arguments, invalid) = match fc.remove("arguments") {
                        Some(Value::String(a)) => {
                            raw = Some(a.clone());
                            parse_arguments(a)
                        }
                        Some(other) => (other, false),
                        None => (Value::Object(Map::new()), false),
                    };
                    let id = call_id(i);
                    pending = Some((id.clone(), name.clone()));
                    s.tool_calls.push(ToolCall {
                        arguments: arguments.into(),
                        arguments_invalid: invalid,
                        extra: into_extra(fc),
                        id: Some(id),
                        name,
                        text_embedded: false,
                    });
                } else {
                    pending = None;
                }
                s
            }
            "function" | "tool" => {
                let mut s = Step::new(Role::Tool, None);
                let name = m.get("name").and_then(Value::as_str);
                let call_id = match pending.take() {
                    Some((id, called)) if name.is_none_or(|n| n == called) => Some(id),
                    _ => None,
                };
                s.tool_results.push(ToolResult {
                    call_id,
                    content: content.map(Into::into),
                    extra: Extra::new(),
                    subagent_refs: Vec::new(),
                });
                s
            }
            other => {
                return Err(Problem::new(
                    Reason::InvalidValue,
                    format!("{path}.role"),
                    format!("unknown role '{other}'"),
                ))
            }
        };
        step.extra = into_extra(m);
        steps.push(step);
        raw_args.push(raw);
    }
    Ok((steps, raw_args))
}

fn children(node: &Value) -> &[Value] {
    node.get("children").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn node_is(node: &Value, kind: &str, description: Option<&str>) -> bool {
    node.get("node_type").and_then(Value::as_str) == Some(kind)
        && description.is_none_or(|d| node.get("description").and_then(Value::as_str) == Some(d))
}

fn subtree_size(node: &Value) -> usize {
    1 + children(node).iter().map(subtree_size).sum::<usize>()
}

/// One `abandoned_branch` gap per child of `parent` other than `keep`.
fn branches(parent: &Value, keep: Option<&Value>, step: Option<usize>, gaps: &mut Vec<Gap>) {
    for c in children(parent).iter().filter(|c| !keep.is_some_and(|k| std::ptr::eq(*c, k))) {
        let kind = c.get("node_type").and_then(Value::as_str).unwrap_or("?");
        let desc: String = c.get("description").and_then(Value::as_str).unwrap_or("").chars().take(80).collect();
        let depth = c.get("depth").map(Value::to_string).unwrap_or_default();
        gaps.push(Gap::at(
            GapKind::AbandonedBranch,
            step,
            format!("tree depth {depth}: {kind} {desc:?} ({} nodes)", subtree_size(c)),
        ));
    }
}

/// Follows the taken path through the DFS tree (Thought / Action / Action Input nodes
/// matching each assistant message; `raw_args[i]` is the verbatim argument text of step
/// `i`'s call, as tree nodes store it). Every other child of a node on the path is a
/// branch the search abandoned: one `abandoned_branch` gap each (the tree stays in
/// `extra`). The walk stops where the messages and the tree disagree.
/// The last call's observation exists only in the tree (train messages end with the
/// call): it becomes the tool result of that call.
fn walk_tree(root: &Value, steps: &mut Vec<Step>, raw_args: &[Option<String>], gaps: &mut Vec<Gap>) {
    let mut node = root;
    let mut last_input: Option<(&Value, usize)> = None;
    let mut complete = true;
    for (i, s) in steps.iter().enumerate().filter(|(_, s)| s.role == Role::Assistant) {
        if let Some(text) = s.content.as_deref().and_then(Value::as_str) {
            let Some(next) = children(node).iter().find(|c| node_is(c, "Thought", Some(text))) else {
                complete = false;
                break;
            };
            branches(node, Some(next), Some(i), gaps);
            node = next;
        }
        let (Some(call), Some(Some(args))) = (s.tool_calls.first(), raw_args.get(i)) else { continue };
        let hallucinated = call.name == "invalid_hallucination_function_name";
        let found = children(node).iter().find_map(|a| {
            if !node_is(a, "Action", (!hallucinated).then_some(call.name.as_str())) {
                return None;
            }
            children(a).iter().find(|c| node_is(c, "Action Input", Some(args))).map(|input| (a, input))
        });
        let Some((action, input)) = found else {
            complete = false;
            break;
        };
        branches(node, Some(action), Some(i), gaps);
        branches(action, Some(input), Some(i), gaps);
        node = input;
        last_input = Some((input, i));
    }
    if complete {
        branches(node, None, None, gaps);
    }
    // The final call (normally Finish) is answered only in the tree.
    let Some((input, i)) = last_input else { return };
    let answered = steps.iter().skip(i + 1).any(|s| !s.tool_results.is_empty());
    let observation = input.get("observation").filter(|o| o.is_string());
    let id = steps.get(i).and_then(|s| s.tool_calls.first()).and_then(|c| c.id.clone());
    if let (false, Some(obs), Some(id)) = (answered, observation, id) {
        let mut extra = Extra::new();
        if let Some(code) = input.get("observation_code") {
            extra.insert("observation_code".into(), code.clone());
        }
        extra.insert("source".into(), Value::String("tree".into()));
        let mut step = Step::new(Role::Tool, None);
        step.tool_results.push(ToolResult {
            call_id: Some(id),
            content: Some(obs.clone().into()),
            extra,
            subagent_refs: Vec::new(),
        });
        steps.insert(i + 1, step);
    }
}

// ---------------------------------------------------------------- SFT conversations

/// `{"id": "Step N: <query>", "conversations": [{"from", "value"}, ...]}`: assistant values
/// are ReAct text (`Thought: ... Action: ... Action Input: ...`), parsed into a call.
fn conversation(mut row: Map<String, Value>, raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let turns = match row.remove("conversations") {
        Some(Value::Array(c)) => c,
        _ => return Err(schema("$.conversations", "conversations must be a list")),
    };
    let mut steps: Vec<Step> = Vec::with_capacity(turns.len());
    let mut pending: Option<String> = None;
    for (i, turn) in turns.into_iter().enumerate() {
        let path = format!("$.conversations[{i}]");
        let Value::Object(mut m) = turn else {
            return Err(schema(path, "a turn must be an object"));
        };
        let from = take_str(&mut m, "from").ok_or_else(|| schema(format!("{path}.from"), "turn without from"))?;
        let value = take(&mut m, "value");
        let step = match from.as_str() {
            "system" => Step::new(Role::System, value),
            "user" => Step::new(Role::User, value),
            "assistant" => {
                let mut s = Step::new(Role::Assistant, None);
                if let Some(text) = value.as_ref().and_then(Value::as_str) {
                    let (thought, call) = parse_react(text);
                    s.reasoning = thought;
                    pending = None;
                    if let Some((name, args)) = call {
                        let (arguments, invalid) = parse_arguments(args);
                        let id = call_id(steps.len());
                        pending = Some(id.clone());
                        s.tool_calls.push(ToolCall {
                            arguments: arguments.into(),
                            arguments_invalid: invalid,
                            extra: Extra::new(),
                            id: Some(id),
                            name,
                            text_embedded: true,
                        });
                    }
                }
                s.content = value.map(Into::into);
                s
            }
            "function" | "tool" => {
                let mut s = Step::new(Role::Tool, None);
                s.tool_results.push(ToolResult {
                    call_id: pending.take(),
                    content: value.map(Into::into),
                    extra: Extra::new(),
                    subagent_refs: Vec::new(),
                });
                s
            }
            other => {
                return Err(Problem::new(
                    Reason::InvalidValue,
                    format!("{path}.from"),
                    format!("unknown speaker '{other}'"),
                ))
            }
        };
        let mut step = step;
        step.extra = into_extra(m);
        steps.push(step);
    }
    let instruction = steps
        .iter()
        .find(|s| s.role == Role::User)
        .and_then(|s| s.content.as_ref()?.as_str())
        .map(|t| t.trim().trim_end_matches("Begin!").trim().to_string())
        .filter(|t| !t.is_empty());
    let task = Task::keyed(None, None, instruction, Some(FAMILY.into()), raw.sha256);
    let mut t = base(raw, file, steps, task);
    common_gaps(&mut t);
    t.extra = into_extra(row);
    Ok(t)
}

/// Splits ReAct text into the thought and the (action, action input) pair.
fn parse_react(text: &str) -> (Option<String>, Option<(String, String)>) {
    let input_at = text.rfind("Action Input:");
    let action_at = input_at.and_then(|at| text[..at].rfind("Action:"));
    let thought_end = action_at.unwrap_or(text.len());
    let thought =
        text[..thought_end].trim().strip_prefix("Thought:").map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    let call = match (action_at, input_at) {
        (Some(a), Some(b)) => {
            let name = text[a + "Action:".len()..b].trim().to_string();
            let args = text[b + "Action Input:".len()..].trim().to_string();
            (!name.is_empty()).then_some((name, args))
        }
        _ => None,
    };
    (thought, call)
}
