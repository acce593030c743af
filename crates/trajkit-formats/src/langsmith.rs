//! LangSmith runs: a run tree (`Run` with nested `child_runs`, as `read_run(...,
//! load_child_runs=True)` and `RunTree` serialize), a flat list of runs of one trace
//! (linked by `parent_run_id`), or the SDK's ingestion batch (`{"post": [...], "patch":
//! [...]}`, patches merged into their runs by id). Runs are spans; the shared walk is in
//! `traces.rs`. See docs/formats/langsmith.md.

use std::collections::HashMap;

use serde_json::{Map, Value};
use trajkit_model::{Extra, Metrics};

use crate::input::InputFile;
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{parse_record, schema, Problem};
use crate::traces::{self, decoded, order_key_int, usage_metrics, Doc, Kind, Span, Top, Verdict};

/// Reader for LangSmith run exports.
pub(crate) static READER: FnReader = FnReader { family: "langsmith", detect, read, arrays: false };

/// LangSmith run exports: runs with `run_type` and `dotted_order` or `child_runs`.
fn detect(peek: &Peek) -> Option<Detection> {
    let has = |s: &str| peek.has_key_anywhere(s);
    if has("run_type") && (has("dotted_order") || has("child_runs")) {
        return claim(85, "LangSmith runs (run_type with dotted_order / child_runs)", Layout::Document);
    }
    None
}

/// A run with its JSON path and the parent its nesting implies.
type FlatRun = (String, Option<String>, Map<String, Value>);

/// The runs of the document, and what else a batch holds.
fn runs(doc: Value) -> Result<(Vec<FlatRun>, Extra), Problem> {
    let mut extra = Extra::new();
    let top: Vec<(String, Value)> = match doc {
        Value::Array(items) => items.into_iter().enumerate().map(|(i, v)| (format!("$[{i}]"), v)).collect(),
        Value::Object(mut o) if o.contains_key("post") || o.contains_key("patch") => {
            let post = match o.remove("post") {
                Some(Value::Array(a)) => a,
                None | Some(Value::Null) => Vec::new(),
                Some(_) => return Err(schema("$.post", "post must be a list of runs")),
            };
            let patch = match o.remove("patch") {
                Some(Value::Array(a)) => a,
                None | Some(Value::Null) => Vec::new(),
                Some(_) => return Err(schema("$.patch", "patch must be a list of runs")),
            };
            extra = o.into();
            merge_batch(post, patch)?
        }
        Value::Object(o) => vec![("$".to_string(), Value::Object(o))],
        _ => return Err(schema("$", "a LangSmith export must be a run, a list of runs or a post/patch batch")),
    };
    let mut out = Vec::new();
    let mut stack: Vec<(String, Option<String>, Value)> = top.into_iter().rev().map(|(p, v)| (p, None, v)).collect();
    while let Some((path, nested_parent, v)) = stack.pop() {
        let Value::Object(mut run) = v else {
            return Err(schema(path, "a run must be an object"));
        };
        let id = match run.get("id") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(schema(format!("{path}.id"), "run without a string id")),
        };
        if let Some(Value::Array(children)) = run.remove("child_runs") {
            for (i, c) in children.into_iter().enumerate().rev() {
                stack.push((format!("{path}.child_runs[{i}]"), Some(id.clone()), c));
            }
        }
        out.push((path, nested_parent, run));
    }
    Ok((out, extra))
}

/// Ingestion batch: each patch completes the posted run with the same id (later fields
/// win); a patch of a run not posted here is a run of its own.
fn merge_batch(post: Vec<Value>, patch: Vec<Value>) -> Result<Vec<(String, Value)>, Problem> {
    let mut runs: Vec<(String, Value)> =
        post.into_iter().enumerate().map(|(i, v)| (format!("$.post[{i}]"), v)).collect();
    let index: HashMap<String, usize> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, (_, r))| r.get("id").and_then(Value::as_str).map(|id| (id.to_string(), i)))
        .collect();
    for (i, p) in patch.into_iter().enumerate() {
        let Value::Object(p) = p else {
            return Err(schema(format!("$.patch[{i}]"), "a run must be an object"));
        };
        let target = p.get("id").and_then(Value::as_str).and_then(|id| index.get(id)).copied();
        match target.and_then(|t| runs.get_mut(t)).and_then(|(_, r)| r.as_object_mut()) {
            Some(run) => run.extend(p),
            None if p.contains_key("id") => runs.push((format!("$.patch[{i}]"), Value::Object(p))),
            // A patch without id names its run by position only: it completes the posted
            // run of the same index (the SDK's test payloads omit the id).
            None => match runs.get_mut(i).and_then(|(_, r)| r.as_object_mut()) {
                Some(run) => run.extend(p),
                None => return Err(schema(format!("$.patch[{i}]"), "patch without id and without a posted run")),
            },
        }
    }
    Ok(runs)
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<trajkit_model::Trajectory, Problem> {
    let (runs, batch_extra) = runs(parse_record(raw.bytes)?)?;
    let mut spans = Vec::with_capacity(runs.len());
    let mut roots = Vec::new();
    for (path, nested_parent, run) in runs {
        let s = span(run, nested_parent, &path)?;
        if s.parent.is_none() {
            roots.push(s.raw.clone());
        }
        spans.push(s);
    }
    let mut trace_ids: Vec<&str> = spans.iter().filter_map(|s| s.raw.get("trace_id").and_then(Value::as_str)).collect();
    trace_ids.sort_unstable();
    trace_ids.dedup();
    let trace_id = match (trace_ids.as_slice(), roots.as_slice()) {
        ([one], _) => Some(one.to_string()),
        ([], [root]) => root.get("id").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    let root = roots.first().cloned().unwrap_or_default();
    let meta = root.get("extra").and_then(|e| e.get("metadata"));
    let meta_str = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str).map(str::to_string);
    let session_id = meta_str("thread_id").or_else(|| meta_str("session_id")).or_else(|| meta_str("conversation_id"));
    let task_id = meta_str("task_id");
    let agent_name = root.get("name").and_then(Value::as_str).map(str::to_string);
    let outcome = traces::outcome(&verdicts(&root));
    let metrics = run_totals(&root);
    let mut extra = batch_extra;
    if let Some(fs) = root.get("feedback") {
        extra.insert("feedback".into(), fs.clone());
    }
    let d = Doc { family: "langsmith", raw, file, format_version: None };
    let top = Top { trace_id, session_id, agent_name, task_id, outcome, metrics, extra };
    Ok(traces::trajectory(&spans, &d, top))
}

/// Totals as the root run states them (`prompt_tokens`, `completion_tokens`, `total_cost`).
fn run_totals(root: &Map<String, Value>) -> Option<Metrics> {
    let prompt = root.get("prompt_tokens").and_then(Value::as_u64);
    let completion = root.get("completion_tokens").and_then(Value::as_u64);
    let cost = root.get("total_cost").and_then(|c| c.as_f64().or_else(|| c.as_str().and_then(|s| s.parse().ok())));
    if prompt.is_none() && completion.is_none() && cost.is_none() {
        return None;
    }
    Some(Metrics {
        duration_seconds: None,
        cached_tokens: None,
        completion_tokens: completion,
        cost_usd: cost,
        extra: Extra::new(),
        prompt_tokens: prompt,
    })
}

/// Root-run feedback: `feedback_stats` (`{key: {n, avg}}`, averages with n > 0; reported)
/// and, when exported with the run, `feedback` objects (`key`, `score`; an evaluator when
/// `feedback_source.type` is `model`).
fn verdicts(root: &Map<String, Value>) -> Vec<Verdict> {
    let mut out = Vec::new();
    if let Some(Value::Array(list)) = root.get("feedback") {
        for f in list {
            let (Some(name), Some(value)) = (f.get("key").and_then(Value::as_str), f.get("score")) else {
                continue;
            };
            let evaluator =
                f.get("feedback_source").and_then(|s| s.get("type")).and_then(Value::as_str) == Some("model");
            out.push(Verdict { name: name.to_string(), value: value.clone(), evaluator });
        }
    }
    if let Some(Value::Object(stats)) = root.get("feedback_stats") {
        for (name, s) in stats {
            if out.iter().any(|v| &v.name == name) {
                continue;
            }
            let n = s.get("n").and_then(Value::as_u64).unwrap_or(0);
            if let Some(avg) = s.get("avg").filter(|a| a.is_number() && n > 0) {
                out.push(Verdict { name: name.clone(), value: avg.clone(), evaluator: false });
            }
        }
    }
    out
}

fn span(mut raw: Map<String, Value>, nested_parent: Option<String>, path: &str) -> Result<Span, Problem> {
    let id = match raw.remove("id") {
        Some(Value::String(s)) => s,
        _ => return Err(schema(format!("{path}.id"), "run without a string id")),
    };
    let str_of = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
    let kind = match raw.get("run_type").and_then(Value::as_str) {
        Some("llm" | "chat_model") => Kind::Llm,
        Some("tool") => Kind::Tool,
        Some("agent") => Kind::Agent,
        Some("chain") => Kind::Chain,
        _ => Kind::Other,
    };
    let parent = str_of("parent_run_id").or(nested_parent);
    let order = match (raw.get("dotted_order"), raw.get("start_time")) {
        (Some(Value::String(d)), _) if !d.is_empty() => d.clone(),
        (_, Some(Value::String(t))) => t.clone(),
        (_, Some(Value::Number(n))) => n.as_u64().map(|n| order_key_int(n as u128)).unwrap_or_default(),
        _ => String::new(),
    };
    let input = raw.get("inputs").filter(|v| !v.is_null()).map(decoded);
    let mut output = raw.get("outputs").filter(|v| !v.is_null()).map(decoded);
    let meta = raw.get("extra").and_then(|e| e.get("metadata"));
    let model = output
        .as_ref()
        .and_then(|o| o.get("model").or_else(|| o.get("llm_output").and_then(|l| l.get("model_name"))))
        .and_then(Value::as_str)
        .or_else(|| meta.and_then(|m| m.get("ls_model_name")).and_then(Value::as_str))
        .map(str::to_string);
    let mut metrics = output.as_ref().and_then(|o| {
        o.get("usage_metadata")
            .and_then(usage_metrics)
            .or_else(|| o.get("usage").and_then(usage_metrics))
            .or_else(|| o.get("llm_output").and_then(|l| l.get("token_usage")).and_then(usage_metrics))
    });
    if kind == Kind::Llm {
        if let Some(c) = raw.get("total_cost").and_then(Value::as_f64) {
            metrics.get_or_insert_with(Metrics::default).cost_usd = Some(c);
        }
    }
    // A tool run's ToolMessage output names the call it answers.
    let call_id = output
        .as_ref()
        .and_then(|o| o.get("output"))
        .and_then(|m| m.get("tool_call_id").or_else(|| m.get("kwargs").and_then(|k| k.get("tool_call_id"))))
        .and_then(Value::as_str)
        .map(str::to_string);
    // A tool run's result is the ToolMessage content (the whole outputs stay in extra).
    if kind == Kind::Tool {
        let msg = output.as_ref().and_then(|o| o.get("output"));
        let content = msg.and_then(|m| m.get("kwargs").and_then(|k| k.get("content")).or_else(|| m.get("content")));
        if let Some(c) = content.or(msg.filter(|m| m.is_string())).cloned() {
            output = Some(c);
        }
    }
    let timestamp = str_of("start_time");
    Ok(Span {
        name: str_of("name").unwrap_or_default(),
        id,
        parent,
        kind,
        order,
        timestamp,
        input,
        output,
        model,
        metrics,
        call_id,
        raw,
        id_key: Some("id"),
    })
}
