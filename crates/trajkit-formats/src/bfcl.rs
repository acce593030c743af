//! Berkeley Function Calling Leaderboard (BFCL, `bfcl_eval`): task files, their
//! `possible_answer` ground truth, model result files and score files. All are JSON Lines
//! even though named `.json`.
//!
//! Only multi-turn result rows whose inference log holds executed calls and returned
//! observations are trajectories; every other row is counted and rejected (see
//! docs/formats/bfcl.md).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use trajkit_model::{
    Agent, Extra, Gap, GapKind, Metrics, Outcome, Role, Step, Task, TaskKeySource, ToolCall, ToolResult, Trajectory,
    Verification,
};

use crate::input::InputFile;
use crate::json::{into_extra, take, take_str};
use crate::links::link_tool_results;
use crate::reader::{claim, Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem, Reason};

/// Reader for BFCL task, possible-answer, result and score files.
pub struct BfclReader;

const FAMILY: &str = "bfcl";

/// Result directories `bfcl_eval` groups categories into (`result/<model>/<group>/`).
const GROUP_DIRS: &[&str] =
    &["non_live", "live", "multi_turn", "agentic", "format_sensitivity", "memory", "web_search"];

impl Reader for BfclReader {
    fn name(&self) -> &'static str {
        FAMILY
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let lines = |confidence, reason: &str| claim(confidence, reason, Layout::Lines);
        let id = peek.first_line.and_then(|v| v.get("id")).is_some_and(Value::is_string);
        let bfcl_name = peek.name.starts_with("BFCL_") || peek.name.contains(".BFCL_");
        if id && peek.has_key("question") && peek.has_key("function") {
            return lines(90, "BFCL task rows (id, question, function)");
        }
        if id && peek.has_key("question") && (peek.has_key("involved_classes") || bfcl_name) {
            return lines(90, "BFCL multi-turn task rows (id, question, involved_classes)");
        }
        if id && peek.has_key("ground_truth") && bfcl_name {
            return lines(85, "BFCL possible_answer rows (id, ground_truth)");
        }
        if id && peek.has_key("result") && (bfcl_name || peek.name.ends_with("_result.json")) {
            return lines(90, "BFCL result rows (id, result)");
        }
        if id && peek.has_key("result") && (peek.has_key("inference_log") || peek.has_key("input_token_count")) {
            return lines(80, "BFCL result rows (id, result, inference metadata)");
        }
        if peek.first_line.is_none() && bfcl_name && peek.bytes.starts_with(b"{\"id\"") {
            return lines(70, "BFCL-named JSON Lines whose first row is too long to parse in the peek");
        }
        let score = peek.has_key("accuracy") && peek.has_key("correct_count") && peek.has_key("total_count");
        if score && (bfcl_name || peek.name.ends_with("_score.json")) {
            return lines(85, "BFCL score file (accuracy header)");
        }
        None
    }

    /// The ground truth of a task file: `possible_answer/<same name>` (the layout of
    /// `bfcl_eval/data`), or `possible_answer.<same name>` beside it.
    fn referenced_files(&self, file: &InputFile, _layout: Layout) -> Vec<PathBuf> {
        possible_answer_files(&file.fs_path, &file.root)
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        RecordResult::from_result(read(raw, file))
    }
}

fn possible_answer_files(path: &Path, root: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    if !name.starts_with("BFCL_") || name.ends_with("_result.json") || name.ends_with("_score.json") {
        return Vec::new();
    }
    [dir.join("possible_answer").join(name), dir.join(format!("possible_answer.{name}"))]
        .into_iter()
        .filter(|p| p.is_file())
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| root.as_os_str().is_empty() || p.starts_with(root))
        .collect()
}

fn final_call_only(what: &str) -> Problem {
    Problem::new(Reason::FinalCallOnly, "$", what.to_string())
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let Value::Object(row) = parse_record(raw.bytes)? else {
        return Err(schema("$", "a BFCL row must be a JSON object"));
    };
    if row.contains_key("accuracy") && row.contains_key("total_count") {
        return Err(Problem::new(Reason::EvaluationReport, "$", "BFCL score header (accuracy of a category)"));
    }
    if row.get("valid").is_some_and(Value::is_boolean) && row.contains_key("model_result_raw") {
        return Err(Problem::new(Reason::EvaluationReport, "$", "BFCL score entry (a failed test case)"));
    }
    if row.contains_key("ground_truth") && !row.contains_key("result") {
        return Err(Problem::new(Reason::NotARollout, "$", "BFCL possible_answer row: expected calls, not a run"));
    }
    if row.contains_key("question") && !row.contains_key("result") {
        let multi = row.contains_key("involved_classes") || row.contains_key("initial_config");
        return Err(final_call_only(if multi {
            "BFCL multi-turn task: no executed calls or returned observations"
        } else {
            "BFCL task: the model's calls are scored without being executed (no observations)"
        }));
    }
    if !row.contains_key("result") {
        return Err(schema("$", "neither question, ground_truth nor result"));
    }
    result_row(row, raw, file)
}

/// A result row: `{"id", "result", "input_token_count", "output_token_count", "latency",
/// "inference_log"?, "reasoning_content"?}` (or `{"id", "result": "Error during inference:
/// ...", "traceback"}`).
fn result_row(mut row: Map<String, Value>, raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let id = match row.get("id") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(schema("$.id", "a result row needs a string id")),
    };
    let Some(Value::Array(log)) = row.get("inference_log") else {
        return Err(final_call_only("BFCL result without an inference log: a final call, nothing executed"));
    };
    let executed = log.iter().any(|e| {
        e.as_object().is_some_and(|turn| {
            turn.iter().filter(|(k, _)| k.starts_with("step_")).any(|(_, s)| {
                s.as_array().is_some_and(|es| es.iter().any(|e| e.get("role").and_then(Value::as_str) == Some("tool")))
            })
        })
    });
    if !executed {
        return Err(final_call_only("BFCL result whose inference log has no executed call with an observation"));
    }
    let Some(Value::Array(log)) = row.remove("inference_log") else {
        return Err(Problem::new(Reason::InternalError, "$.inference_log", "inference_log vanished"));
    };
    let mut tokens = TokenTable::take(&mut row);
    let mut steps = Vec::new();
    let mut gaps = Vec::new();
    let mut turn = 0usize;
    for (i, entry) in log.into_iter().enumerate() {
        let path = format!("$.inference_log[{i}]");
        match entry {
            // A state snapshot of the environment's classes (before and after each turn).
            Value::Array(states) => {
                let mut s = Step::new(Role::Environment, Some(Value::Array(states)));
                s.extra.insert("role".into(), Value::String("state_info".into()));
                steps.push(s);
            }
            Value::Object(t) => {
                read_turn(t, turn, &path, &mut tokens, &mut steps, &mut gaps)?;
                turn += 1;
            }
            _ => return Err(schema(path, "a log entry must be a list or an object")),
        }
    }
    link_tool_results(&steps, &mut gaps);
    for (i, s) in steps.iter().enumerate() {
        for c in s.tool_calls.iter().filter(|c| c.arguments_invalid) {
            gaps.push(Gap::at(GapKind::InvalidToolArguments, Some(i), c.name.clone()));
        }
    }
    tokens.put_back(&mut row);
    let task = Task {
        environment_version: None,
        environment: Some(FAMILY.into()),
        id: Some(id.clone()),
        instruction: steps
            .iter()
            .find(|s| s.role == Role::User)
            .and_then(|s| s.content.as_ref()?.as_str().map(str::to_string)),
        key: format!("{FAMILY}/{id}"),
        key_source: TaskKeySource::Explicit,
    };
    Ok(Trajectory {
        agent: Agent { model: model_of(&file.fs_path), name: None, version: None },
        extra: into_extra(row),
        gaps,
        outcome: Outcome { verification: Verification::Unverified, ..Default::default() },
        steps,
        ..raw.trajectory(FAMILY, file, task)
    })
}

/// `result/<model>/<group>/BFCL_..._result.json`: the model's registry name.
fn model_of(path: &Path) -> Option<String> {
    let group = path.parent()?;
    let g = group.file_name()?.to_str()?;
    if !GROUP_DIRS.contains(&g) {
        return None;
    }
    group.parent()?.file_name()?.to_str().map(str::to_string)
}

/// Per-turn, per-step token counts and latency (`[[..], ..]`), handed out to assistant
/// steps. A list goes back to `extra` whole (under its source name) unless every one of its
/// figures was placed on a step: when the shapes do not line up, a turn or step has no
/// assistant entry, or a count is not a whole number, nothing is lost.
struct TokenTable {
    input: Option<Value>,
    output: Option<Value>,
    latency: Option<Value>,
    /// `(turn, step)` of the figures placed, per list (input, output, latency).
    placed: [std::collections::BTreeSet<(usize, usize)>; 3],
}

impl TokenTable {
    fn take(row: &mut Map<String, Value>) -> Self {
        let nested = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|t| t.iter().all(Value::is_array));
        let ok = nested(row.get("input_token_count")) && nested(row.get("output_token_count"));
        let placed = Default::default();
        if !ok {
            return TokenTable { input: None, output: None, latency: None, placed };
        }
        let latency = if nested(row.get("latency")) { row.remove("latency") } else { None };
        TokenTable { input: row.remove("input_token_count"), output: row.remove("output_token_count"), latency, placed }
    }

    fn at(v: &Option<Value>, turn: usize, step: usize) -> Option<&Value> {
        v.as_ref()?.get(turn)?.get(step)
    }

    fn metrics(&mut self, turn: usize, step: usize) -> Option<Metrics> {
        let int = |v: Option<&Value>| {
            v.and_then(|n| {
                n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
            })
        };
        let prompt = int(Self::at(&self.input, turn, step));
        let completion = int(Self::at(&self.output, turn, step));
        let mut extra = Extra::new();
        let mut duration = None;
        if let Some(l) = Self::at(&self.latency, turn, step) {
            // BFCL times each model call in seconds; anything else stays as written.
            match l.as_f64().filter(|s| *s >= 0.0) {
                Some(seconds) => duration = Some(seconds),
                None => {
                    extra.insert("latency".into(), l.clone());
                }
            }
            self.placed[2].insert((turn, step));
        }
        if prompt.is_some() {
            self.placed[0].insert((turn, step));
        }
        if completion.is_some() {
            self.placed[1].insert((turn, step));
        }
        let m = Metrics {
            duration_seconds: duration,
            cached_tokens: None,
            completion_tokens: completion,
            cost_usd: None,
            extra,
            prompt_tokens: prompt,
        };
        (!m.is_empty()).then_some(m)
    }

    /// Each list goes back to `extra` unless all of its figures were placed.
    fn put_back(self, row: &mut Map<String, Value>) {
        let lists = [("input_token_count", self.input), ("output_token_count", self.output), ("latency", self.latency)];
        for ((k, v), placed) in lists.into_iter().zip(&self.placed) {
            let Some(v) = v else { continue };
            let all_placed = v.as_array().is_some_and(|turns| {
                turns
                    .iter()
                    .enumerate()
                    .all(|(t, steps)| steps.as_array().is_some_and(|s| (0..s.len()).all(|n| placed.contains(&(t, n)))))
            });
            if !all_placed {
                row.insert(k.into(), v);
            }
        }
    }
}

/// One turn: `{"begin_of_turn_query": [messages], "step_0": [entries], "step_1": ...}`.
fn read_turn(
    mut turn: Map<String, Value>,
    t: usize,
    path: &str,
    tokens: &mut TokenTable,
    steps: &mut Vec<Step>,
    gaps: &mut Vec<Gap>,
) -> Result<(), Problem> {
    if let Some(Value::Array(msgs)) = take(&mut turn, "begin_of_turn_query") {
        for (i, m) in msgs.into_iter().enumerate() {
            let Value::Object(mut m) = m else {
                return Err(schema(format!("{path}.begin_of_turn_query[{i}]"), "a message must be an object"));
            };
            let role = match take_str(&mut m, "role").as_deref() {
                Some("system") => Role::System,
                Some("user") | None => Role::User,
                Some("assistant") => Role::Assistant,
                Some(other) => {
                    return Err(Problem::new(
                        Reason::InvalidValue,
                        format!("{path}.begin_of_turn_query[{i}].role"),
                        format!("unknown role '{other}'"),
                    ))
                }
            };
            let mut s = Step::new(role, take(&mut m, "content"));
            s.extra = into_extra(m);
            steps.push(s);
        }
    }
    // Steps in numeric order (`step_10` after `step_9`).
    let mut keys: Vec<(usize, String)> =
        turn.keys().filter_map(|k| Some((k.strip_prefix("step_")?.parse::<usize>().ok()?, k.clone()))).collect();
    keys.sort();
    for (n, key) in keys {
        let Some(Value::Array(entries)) = turn.remove(&key) else {
            return Err(schema(format!("{path}.{key}"), "a step must be a list"));
        };
        read_step(entries, t, n, &format!("{path}.{key}"), tokens, steps, gaps)?;
    }
    if !turn.is_empty() {
        let mut s = Step::new(Role::Environment, None);
        s.extra.insert("turn_fields".into(), Value::Object(turn));
        steps.push(s);
    }
    Ok(())
}

/// One model step: `assistant` (model output), `handler_log` (decoding, with
/// `model_response_decoded`), then one `tool` entry per executed call, in call order.
fn read_step(
    entries: Vec<Value>,
    t: usize,
    n: usize,
    path: &str,
    tokens: &mut TokenTable,
    steps: &mut Vec<Step>,
    gaps: &mut Vec<Gap>,
) -> Result<(), Problem> {
    let mut assistant: Option<usize> = None;
    let mut results = 0usize;
    let mut pre: Vec<Value> = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        let Value::Object(mut e) = e else {
            return Err(schema(format!("{path}[{i}]"), "a log entry must be an object"));
        };
        let role = e.get("role").and_then(Value::as_str).unwrap_or_default().to_string();
        match role.as_str() {
            "assistant" => {
                e.remove("role");
                let content = take(&mut e, "content");
                let mut s = Step::new(Role::Assistant, content);
                s.reasoning = take_str(&mut e, "reasoning_content").filter(|r| !r.is_empty());
                s.metrics = tokens.metrics(t, n);
                s.tool_calls = structured_calls(s.content.as_deref(), t, n);
                if !pre.is_empty() {
                    e.insert("preceding_log".into(), Value::Array(std::mem::take(&mut pre)));
                }
                s.extra = into_extra(e);
                steps.push(s);
                assistant = Some(steps.len() - 1);
            }
            "handler_log" => {
                let Some(a) = assistant else {
                    pre.push(Value::Object(e));
                    continue;
                };
                let Some(step) = steps.get_mut(a) else { continue };
                if let Some(Value::Array(decoded)) = e.get("model_response_decoded") {
                    if step.tool_calls.is_empty() {
                        step.tool_calls = decoded
                            .iter()
                            .enumerate()
                            .filter_map(|(k, d)| d.as_str().map(|d| text_call(d, format!("t{t}.s{n}.c{k}"))))
                            .collect();
                    }
                }
                if let Some(msg) = e.get("content").and_then(Value::as_str) {
                    if msg.contains("forced to quit") {
                        gaps.push(Gap::at(GapKind::IncompleteGeneration, Some(a), msg.to_string()));
                    }
                }
                let logs = step.extra.entry("handler_log").or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(l) = logs {
                    l.push(Value::Object(e));
                }
            }
            "tool" => {
                e.remove("role");
                let content = take(&mut e, "content");
                let call_id = assistant
                    .and_then(|a| steps.get(a))
                    .and_then(|s| s.tool_calls.get(results))
                    .and_then(|c| c.id.clone());
                results += 1;
                let mut s = Step::new(Role::Tool, None);
                s.tool_results.push(ToolResult {
                    call_id,
                    content: content.map(Into::into),
                    extra: into_extra(e),
                    subagent_refs: Vec::new(),
                });
                steps.push(s);
            }
            _ => pre.push(Value::Object(e)),
        }
    }
    if !pre.is_empty() {
        let mut s = Step::new(Role::Environment, None);
        s.extra.insert("log".into(), Value::Array(pre));
        steps.push(s);
    }
    Ok(())
}

/// FC models' output: `[{"func_name": "<JSON arguments>"}, ...]`.
fn structured_calls(content: Option<&Value>, t: usize, n: usize) -> Vec<ToolCall> {
    let Some(Value::Array(items)) = content else { return Vec::new() };
    let single = |v: &Value| v.as_object().filter(|m| m.len() == 1).is_some();
    if items.is_empty() || !items.iter().all(single) {
        return Vec::new();
    }
    items
        .iter()
        .enumerate()
        .filter_map(|(k, item)| {
            let (name, args) = item.as_object()?.iter().next()?;
            let (arguments, invalid) = match args {
                Value::String(s) => match serde_json::from_str::<Value>(s) {
                    Ok(v) => (v, false),
                    Err(_) => (args.clone(), true),
                },
                other => (other.clone(), false),
            };
            Some(ToolCall {
                arguments: arguments.into(),
                arguments_invalid: invalid,
                extra: Extra::new(),
                id: Some(format!("t{t}.s{n}.c{k}")),
                name: name.clone(),
                text_embedded: false,
            })
        })
        .collect()
}

/// A decoded call string `name(arg=literal, ...)` (prompting models): keyword arguments
/// with Python literals become a JSON object; anything else is kept verbatim.
fn text_call(text: &str, id: String) -> ToolCall {
    let name = text.split('(').next().unwrap_or_default().trim().to_string();
    let parsed = text
        .trim()
        .strip_prefix(name.as_str())
        .and_then(|rest| rest.trim().strip_prefix('('))
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(py::kwargs);
    let (arguments, invalid) = match parsed {
        Some(v) => (Value::Object(v), false),
        None => (Value::String(text.to_string()), true),
    };
    ToolCall {
        arguments: arguments.into(),
        arguments_invalid: invalid,
        extra: Extra::new(),
        id: Some(id),
        name,
        text_embedded: true,
    }
}

/// A small parser for the Python literals BFCL writes in decoded calls.
mod py {
    use serde_json::{Map, Number, Value};

    /// Deepest nesting of lists, tuples and dicts parsed (serde_json's limit); deeper text
    /// is not parsed (the call keeps its text verbatim, `arguments_invalid`).
    pub const MAX_DEPTH: usize = 128;

    /// `a=1, b='x'` into an object; `None` on anything else (positional arguments,
    /// expressions, nesting deeper than [`MAX_DEPTH`], string escapes Python would not
    /// accept or that name no Unicode scalar value).
    pub fn kwargs(s: &str) -> Option<Map<String, Value>> {
        let mut p = P { b: s.as_bytes(), i: 0, depth: 0 };
        let mut out = Map::new();
        p.ws();
        while p.i < p.b.len() {
            let start = p.i;
            while p.i < p.b.len() && (p.b[p.i].is_ascii_alphanumeric() || p.b[p.i] == b'_') {
                p.i += 1;
            }
            let key = std::str::from_utf8(&p.b[start..p.i]).ok()?.to_string();
            p.ws();
            if key.is_empty() || !p.eat(b'=') {
                return None;
            }
            let v = p.value()?;
            out.insert(key, v);
            p.ws();
            if !p.eat(b',') {
                break;
            }
            p.ws();
        }
        p.ws();
        (p.i == p.b.len()).then_some(out)
    }

    struct P<'a> {
        b: &'a [u8],
        i: usize,
        /// Open lists, tuples and dicts around the current position.
        depth: usize,
    }

    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }

        fn eat(&mut self, c: u8) -> bool {
            if self.b.get(self.i) == Some(&c) {
                self.i += 1;
                true
            } else {
                false
            }
        }

        fn value(&mut self) -> Option<Value> {
            self.ws();
            match *self.b.get(self.i)? {
                b'\'' | b'"' => self.string().map(Value::String),
                open @ (b'[' | b'(' | b'{') => {
                    if self.depth >= MAX_DEPTH {
                        return None;
                    }
                    self.depth += 1;
                    self.i += 1;
                    let v = if open == b'{' { self.dict() } else { self.list(if open == b'[' { b']' } else { b')' }) };
                    self.depth -= 1;
                    v
                }
                _ => self.atom(),
            }
        }

        /// The items of a list or tuple after its opening bracket.
        fn list(&mut self, close: u8) -> Option<Value> {
            let mut items = Vec::new();
            loop {
                self.ws();
                if self.eat(close) {
                    return Some(Value::Array(items));
                }
                items.push(self.value()?);
                self.ws();
                if !self.eat(b',') {
                    self.ws();
                    return self.eat(close).then_some(Value::Array(items));
                }
            }
        }

        /// The entries of a dict after its `{`.
        fn dict(&mut self) -> Option<Value> {
            let mut m = Map::new();
            loop {
                self.ws();
                if self.eat(b'}') {
                    return Some(Value::Object(m));
                }
                let k = match self.value()? {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                self.ws();
                if !self.eat(b':') {
                    return None;
                }
                let v = self.value()?;
                m.insert(k, v);
                self.ws();
                if !self.eat(b',') {
                    self.ws();
                    return self.eat(b'}').then_some(Value::Object(m));
                }
            }
        }

        fn atom(&mut self) -> Option<Value> {
            let start = self.i;
            while self.i < self.b.len() && !matches!(self.b[self.i], b',' | b')' | b']' | b'}' | b':') {
                self.i += 1;
            }
            let word = std::str::from_utf8(&self.b[start..self.i]).ok()?.trim();
            match word {
                "True" => Some(Value::Bool(true)),
                "False" => Some(Value::Bool(false)),
                "None" => Some(Value::Null),
                _ => {
                    if let Ok(n) = word.parse::<i64>() {
                        return Some(Value::Number(n.into()));
                    }
                    word.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number)
                }
            }
        }

        /// `n` hex digits as a number.
        fn hex(&mut self, n: usize) -> Option<u32> {
            let digits = self.b.get(self.i..self.i + n)?;
            let text = std::str::from_utf8(digits).ok()?;
            if !text.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            self.i += n;
            u32::from_str_radix(text, 16).ok()
        }

        /// A quoted string with Python's escapes (`\\`, `\'`, `\"`, `\a` `\b` `\f` `\n` `\r`
        /// `\t` `\v`, `\<newline>`, octal `\ooo`, `\xhh`, `\uhhhh`, `\Uhhhhhhhh`; an unknown
        /// escape keeps its backslash, as Python does). `None` when an escape is malformed,
        /// names no Unicode scalar value (a lone surrogate), or is `\N{...}` (named
        /// characters are not resolved): the caller then keeps the call's text verbatim.
        fn string(&mut self) -> Option<String> {
            let quote = self.b[self.i];
            self.i += 1;
            let mut out: Vec<u8> = Vec::new();
            let push = |out: &mut Vec<u8>, c: char| out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            while let Some(&c) = self.b.get(self.i) {
                self.i += 1;
                match c {
                    b'\\' => {
                        let e = *self.b.get(self.i)?;
                        self.i += 1;
                        match e {
                            b'\\' | b'\'' | b'"' => out.push(e),
                            b'\n' => {}
                            b'a' => out.push(0x07),
                            b'b' => out.push(0x08),
                            b'f' => out.push(0x0c),
                            b'n' => out.push(b'\n'),
                            b'r' => out.push(b'\r'),
                            b't' => out.push(b'\t'),
                            b'v' => out.push(0x0b),
                            b'0'..=b'7' => {
                                let mut v = u32::from(e - b'0');
                                for _ in 0..2 {
                                    match self.b.get(self.i) {
                                        Some(&d @ b'0'..=b'7') => {
                                            v = v * 8 + u32::from(d - b'0');
                                            self.i += 1;
                                        }
                                        _ => break,
                                    }
                                }
                                push(&mut out, char::from_u32(v)?);
                            }
                            b'x' => push(&mut out, char::from_u32(self.hex(2)?)?),
                            b'u' => push(&mut out, char::from_u32(self.hex(4)?)?),
                            b'U' => push(&mut out, char::from_u32(self.hex(8)?)?),
                            b'N' => return None,
                            other => {
                                out.push(b'\\');
                                out.push(other);
                            }
                        }
                    }
                    c if c == quote => return String::from_utf8(out).ok(),
                    c => out.push(c),
                }
            }
            None
        }
    }

    #[cfg(test)]
    mod tests {
        use serde_json::json;

        #[test]
        fn keyword_literals() {
            let m = super::kwargs("a='x, y', b=[1, 2.5], c={'k': None}, d=True").map(serde_json::Value::Object);
            assert_eq!(m, Some(json!({"a": "x, y", "b": [1, 2.5], "c": {"k": null}, "d": true})));
            assert_eq!(super::kwargs("'positional'"), None);
            assert_eq!(super::kwargs(""), Some(serde_json::Map::new()));
        }

        /// Synthetic: nesting deeper than the cap is not parsed (no recursion without
        /// bound: 5000 levels used to overflow the stack), at the cap it is.
        #[test]
        fn nesting_is_capped() {
            let deep = |n: usize| format!("a={}{}", "[".repeat(n), "]".repeat(n));
            assert_eq!(super::kwargs(&deep(5000)), None);
            assert_eq!(super::kwargs(&deep(super::MAX_DEPTH + 1)), None);
            let mut want = json!([]);
            for _ in 1..super::MAX_DEPTH {
                want = json!([want]);
            }
            assert_eq!(super::kwargs(&deep(super::MAX_DEPTH)).map(serde_json::Value::Object), Some(json!({"a": want})));
            let mixed = format!("a={}1{}", "({[".repeat(20), "]})".repeat(20));
            assert!(super::kwargs(&mixed).is_none(), "dict keys need a colon: not a literal");
        }

        /// Synthetic: Python's string escapes (values checked with CPython's
        /// `ast.literal_eval`).
        #[test]
        fn python_escapes() {
            let one = |s: &str| super::kwargs(&format!("a={s}")).and_then(|m| m.get("a").cloned());
            assert_eq!(one(r"'caf\u00e9'"), Some(json!("café")));
            assert_eq!(one(r"'\x41\x42'"), Some(json!("AB")));
            assert_eq!(one(r"'\U0001F600'"), Some(json!("\u{1F600}")));
            assert_eq!(one(r"'\101\0\7'"), Some(json!("A\u{0}\u{7}")));
            assert_eq!(one(r#"'it\'s \"q\" \\ \a\b\f\v'"#), Some(json!("it's \"q\" \\ \u{7}\u{8}\u{c}\u{b}")));
            assert_eq!(one("'a\\\nb'"), Some(json!("ab")), "backslash-newline continues the line");
            assert_eq!(one(r"'C:\data\d'"), Some(json!("C:\\data\\d")), "unknown escapes keep the backslash");
            assert_eq!(one(r"'\x4'"), None, "malformed");
            assert_eq!(one(r"'\ud800'"), None, "a lone surrogate is no Unicode scalar value");
            assert_eq!(one(r"'\N{DASH}'"), None, "named escapes are not resolved");
        }
    }
}
