//! ATIF out: one ATIF-v1.7 document per trajectory, valid under Harbor's rules as the
//! project's ATIF reader enforces them (`trajkit_formats::atif`). What ATIF has no field for
//! goes into the owning object's `extra`; trajkit's own facts (outcome, task, provenance,
//! gaps) go to the root `extra.trajkit`. See docs/export.md for the mapping.

use std::collections::HashSet;

use serde_json::{json, Map, Value};
use trajkit_formats::atif::valid_timestamp;
use trajkit_model::{Authorship, Extra, Metrics, Role, Step, ToolCall, ToolResult, Trajectory};

use crate::views::content_text;

/// The schema version written.
pub const VERSION: &str = "ATIF-v1.7";
const MEDIA_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];

/// ATIF `extra` from a canonical leftover map: the source's own `extra` object (ATIF
/// readers keep it under `extra`), then the other keys under their names.
fn merge_extra(m: &Extra, skip: &[&str]) -> Map<String, Value> {
    let mut out = match m.get("extra") {
        Some(Value::Object(o)) => o.clone(),
        _ => Map::new(),
    };
    for (k, v) in m {
        if (k == "extra" && v.is_object()) || skip.contains(&k.as_str()) {
            continue;
        }
        out.entry(k.clone()).or_insert_with(|| v.clone());
    }
    out
}

fn put_extra(o: &mut Map<String, Value>, extra: Map<String, Value>) {
    if !extra.is_empty() {
        o.insert("extra".into(), Value::Object(extra));
    }
}

fn valid_part(p: &Value) -> bool {
    let Some(m) = p.as_object() else { return false };
    match m.get("type").and_then(Value::as_str) {
        Some("text") => m.keys().all(|k| k == "type" || k == "text") && m.get("text").is_some_and(Value::is_string),
        Some("image") => {
            let src = m.get("source").and_then(Value::as_object);
            m.keys().all(|k| k == "type" || k == "source")
                && src.is_some_and(|s| {
                    s.keys().all(|k| k == "media_type" || k == "path")
                        && s.get("path").is_some_and(Value::is_string)
                        && s.get("media_type").and_then(Value::as_str).is_some_and(|t| MEDIA_TYPES.contains(&t))
                })
        }
        _ => false,
    }
}

/// An ATIF message/content value; the original goes to `extra[key]` when it had to change.
fn content(v: Option<&Value>, extra: &mut Map<String, Value>, key: &str) -> Value {
    match v {
        None => Value::String(String::new()),
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Array(parts)) if parts.iter().all(valid_part) => Value::Array(parts.clone()),
        Some(other) => {
            extra.insert(key.into(), other.clone());
            Value::String(content_text(Some(other), &mut 0))
        }
    }
}

fn int_array(v: Option<&Value>) -> Option<Value> {
    let a = v?.as_array()?;
    a.iter().all(|x| x.as_i64().is_some() || x.as_u64().is_some()).then(|| Value::Array(a.clone()))
}

fn num_array(v: Option<&Value>) -> Option<Value> {
    let a = v?.as_array()?;
    a.iter().all(Value::is_number).then(|| Value::Array(a.clone()))
}

/// Step metrics: token figures, token ids and log probs (Gym's names mapped to ATIF's).
fn metrics(m: &Metrics) -> Value {
    let mut o = Map::new();
    let mut rest = m.extra.clone();
    let mut take = |o: &mut Map<String, Value>, out: &str, keys: &[&str], f: fn(Option<&Value>) -> Option<Value>| {
        for k in keys {
            if let Some(v) = f(rest.get(k)) {
                rest.remove(k);
                o.insert(out.into(), v);
                return;
            }
        }
    };
    take(&mut o, "prompt_token_ids", &["prompt_token_ids"], int_array);
    take(&mut o, "completion_token_ids", &["completion_token_ids", "generation_token_ids"], int_array);
    take(&mut o, "logprobs", &["logprobs", "generation_log_probs"], num_array);
    for (k, v) in [
        ("prompt_tokens", m.prompt_tokens),
        ("completion_tokens", m.completion_tokens),
        ("cached_tokens", m.cached_tokens),
    ] {
        if let Some(v) = v {
            o.insert(k.into(), json!(v));
        }
    }
    if let Some(c) = m.cost_usd {
        o.insert("cost_usd".into(), json!(c));
    }
    put_extra(&mut o, merge_extra(&rest, &[]));
    Value::Object(o)
}

fn final_metrics(m: &Metrics) -> Value {
    let mut o = Map::new();
    let pairs = [
        ("total_prompt_tokens", m.prompt_tokens),
        ("total_completion_tokens", m.completion_tokens),
        ("total_cached_tokens", m.cached_tokens),
    ];
    for (k, v) in pairs {
        if let Some(v) = v {
            o.insert(k.into(), json!(v));
        }
    }
    if let Some(c) = m.cost_usd {
        o.insert("total_cost_usd".into(), json!(c));
    }
    let mut skip = Vec::new();
    if let Some(n) = m.extra.get("total_steps").and_then(Value::as_u64) {
        o.insert("total_steps".into(), json!(n));
        skip.push("total_steps");
    }
    put_extra(&mut o, merge_extra(&m.extra, &skip));
    Value::Object(o)
}

fn tool_call(c: &ToolCall, step_id: usize, k: usize) -> Value {
    let mut extra = merge_extra(&c.extra, &[]);
    let id = c.id.clone().unwrap_or_else(|| {
        extra.insert("trajkit_generated_id".into(), Value::Bool(true));
        format!("call-{step_id}-{k}")
    });
    let arguments = match c.arguments.value() {
        Value::Object(_) if !c.arguments_invalid => c.arguments.value().clone(),
        other => {
            extra.insert("trajkit_arguments".into(), other.clone());
            if c.arguments_invalid {
                extra.insert("arguments_invalid".into(), Value::Bool(true));
            }
            Value::Object(Map::new())
        }
    };
    if c.text_embedded {
        extra.insert("text_embedded".into(), Value::Bool(true));
    }
    let mut o = Map::new();
    o.insert("tool_call_id".into(), Value::String(id));
    o.insert("function_name".into(), Value::String(c.name.clone()));
    o.insert("arguments".into(), arguments);
    put_extra(&mut o, extra);
    Value::Object(o)
}

/// An observation result; `source_call_id` only when it names a call of the same step.
fn result(r: &ToolResult, calls: &HashSet<String>, timestamp: Option<&str>) -> Value {
    let mut extra = merge_extra(&r.extra, &[]);
    let mut o = Map::new();
    match &r.call_id {
        Some(id) if calls.contains(id) => {
            o.insert("source_call_id".into(), Value::String(id.clone()));
        }
        Some(id) => {
            extra.insert("trajkit_call_id".into(), Value::String(id.clone()));
        }
        None => {}
    }
    if let Some(c) = &r.content {
        o.insert("content".into(), content(Some(c), &mut extra, "trajkit_content"));
    }
    if !r.subagent_refs.is_empty() {
        let refs: Vec<Value> = r.subagent_refs.iter().map(|id| json!({"trajectory_id": id})).collect();
        o.insert("subagent_trajectory_ref".into(), Value::Array(refs));
    }
    if let Some(ts) = timestamp {
        extra.insert("timestamp".into(), Value::String(ts.into()));
    }
    put_extra(&mut o, extra);
    Value::Object(o)
}

/// A step's own fields (results are added by the caller).
fn step(s: &Step, step_id: usize) -> (Map<String, Value>, HashSet<String>) {
    let agent = s.role == Role::Assistant;
    let mut extra = merge_extra(&s.extra, &["llm_call_count", "reasoning_effort"]);
    let mut o = Map::new();
    o.insert("step_id".into(), json!(step_id));
    o.insert(
        "source".into(),
        Value::String(
            if agent {
                "agent"
            } else if s.role == Role::User {
                "user"
            } else {
                "system"
            }
            .into(),
        ),
    );
    if !matches!(s.role, Role::System | Role::User | Role::Assistant) {
        extra.insert("trajkit_role".into(), json!(s.role));
    }
    if s.authorship == Authorship::Unknown {
        extra.insert("trajkit_authorship".into(), Value::String("unknown".into()));
    }
    if s.subagent {
        extra.insert("is_sidechain".into(), Value::Bool(true));
    }
    o.insert("message".into(), content(s.content.as_deref(), &mut extra, "trajkit_message"));
    match s.timestamp.as_deref() {
        Some(ts) if valid_timestamp(ts) => {
            o.insert("timestamp".into(), Value::String(ts.into()));
        }
        Some(ts) => {
            extra.insert("trajkit_timestamp".into(), Value::String(ts.into()));
        }
        None => {}
    }
    if s.copied_context {
        o.insert("is_copied_context".into(), Value::Bool(true));
    }
    let llm_calls = s.extra.get("llm_call_count").and_then(Value::as_u64);
    if let Some(n) = llm_calls {
        o.insert("llm_call_count".into(), json!(n));
    }
    let mut calls = HashSet::new();
    if agent {
        agent_fields(s, step_id, llm_calls, &mut o, &mut extra, &mut calls);
    } else {
        non_agent_fields(s, &mut extra);
    }
    if let Some(e) = s.extra.get("reasoning_effort").filter(|e| e.is_string() || e.is_number()) {
        if agent {
            o.insert("reasoning_effort".into(), e.clone());
        } else {
            extra.insert("reasoning_effort".into(), e.clone());
        }
    }
    put_extra(&mut o, extra);
    (o, calls)
}

fn agent_fields(
    s: &Step,
    step_id: usize,
    llm_calls: Option<u64>,
    o: &mut Map<String, Value>,
    extra: &mut Map<String, Value>,
    calls: &mut HashSet<String>,
) {
    if let Some(m) = &s.model {
        o.insert("model_name".into(), Value::String(m.clone()));
    }
    // Deterministic dispatch (llm_call_count 0) forbids metrics and reasoning: keep them in extra.
    let dispatch = llm_calls == Some(0);
    if let Some(r) = &s.reasoning {
        let target = if dispatch { &mut *extra } else { &mut *o };
        target.insert("reasoning_content".into(), Value::String(r.clone()));
    }
    if let Some(m) = &s.metrics {
        let target = if dispatch { &mut *extra } else { &mut *o };
        target.insert("metrics".into(), metrics(m));
    }
    if !s.tool_calls.is_empty() {
        let list: Vec<Value> = s.tool_calls.iter().enumerate().map(|(k, c)| tool_call(c, step_id, k)).collect();
        calls.extend(list.iter().filter_map(|c| c.get("tool_call_id").and_then(Value::as_str)).map(str::to_string));
        o.insert("tool_calls".into(), Value::Array(list));
    }
}

/// Agent-only fields of a non-agent step are kept in `extra`.
fn non_agent_fields(s: &Step, extra: &mut Map<String, Value>) {
    if let Some(m) = &s.model {
        extra.insert("model_name".into(), Value::String(m.clone()));
    }
    if let Some(r) = &s.reasoning {
        extra.insert("reasoning_content".into(), Value::String(r.clone()));
    }
    if let Some(m) = &s.metrics {
        extra.insert("metrics".into(), serde_json::to_value(m).unwrap_or(Value::Null));
    }
    if !s.tool_calls.is_empty() {
        extra.insert("tool_calls".into(), serde_json::to_value(&s.tool_calls).unwrap_or(Value::Null));
    }
}

/// Appends results to a step's observation.
fn add_results(o: &mut Map<String, Value>, results: Vec<Value>) {
    if results.is_empty() {
        return;
    }
    let obs = o.entry("observation").or_insert_with(|| json!({"results": []}));
    if let Some(list) = obs.get_mut("results").and_then(Value::as_array_mut) {
        list.extend(results);
    }
}

/// ATIF steps of a record. Tool steps directly after an agent step become results of
/// that step's observation (ATIF has no tool source); other tool steps become system
/// steps whose results name no call.
fn steps(t: &Trajectory) -> Vec<Value> {
    let mut out: Vec<(Map<String, Value>, HashSet<String>)> = Vec::new();
    let mut attach: Option<usize> = None;
    for s in &t.steps {
        if s.role == Role::Tool {
            if let Some(j) = attach {
                let (o, calls) = &mut out[j];
                let rs = tool_step_results(s, calls);
                add_results(o, rs);
                continue;
            }
        }
        let id = out.len() + 1;
        let (mut o, calls) = step(s, id);
        let rs: Vec<Value> = s.tool_results.iter().map(|r| result(r, &calls, None)).collect();
        add_results(&mut o, rs);
        attach = (s.role == Role::Assistant).then_some(out.len());
        out.push((o, calls));
    }
    out.into_iter().map(|(o, _)| Value::Object(o)).collect()
}

/// Results of a tool step merged into the preceding agent step (its content, if any, as
/// one more result without a call).
fn tool_step_results(s: &Step, calls: &HashSet<String>) -> Vec<Value> {
    let ts = s.timestamp.as_deref();
    let mut rs: Vec<Value> = s.tool_results.iter().map(|r| result(r, calls, ts)).collect();
    if s.content.is_some() {
        let r =
            ToolResult { call_id: None, content: s.content.clone(), extra: s.extra.clone(), subagent_refs: Vec::new() };
        rs.push(result(&r, calls, ts));
    }
    rs
}

fn agent(t: &Trajectory) -> Value {
    let agent_extra = match t.extra.get("agent") {
        Some(Value::Object(m)) => merge_extra(&Extra::from(m.clone()), &[]),
        _ => Map::new(),
    };
    let mut extra = agent_extra;
    let mut o = Map::new();
    o.insert("name".into(), Value::String(t.agent.name.clone().unwrap_or_else(|| "unknown".into())));
    o.insert("version".into(), Value::String(t.agent.version.clone().unwrap_or_else(|| "unknown".into())));
    if let Some(m) = &t.agent.model {
        o.insert("model_name".into(), Value::String(m.clone()));
    }
    if let Some(tools) = &t.tools {
        let (objects, other): (Vec<Value>, Vec<Value>) =
            tools.iter().map(|t| t.value().clone()).partition(Value::is_object);
        o.insert("tool_definitions".into(), Value::Array(objects));
        if !other.is_empty() {
            extra.insert("trajkit_tool_definitions".into(), Value::Array(other));
        }
    }
    put_extra(&mut o, extra);
    Value::Object(o)
}

fn trajkit_block(t: &Trajectory) -> Value {
    json!({
        "outcome": t.outcome,
        "task": t.task,
        "provenance": t.provenance,
        "gaps": t.gaps,
        "content_digest": t.content_digest,
        "state": t.state,
    })
}

/// The ATIF document of a record (subagents embedded, each with a unique `trajectory_id`).
pub fn document(t: &Trajectory) -> Value {
    let mut o = Map::new();
    o.insert("schema_version".into(), Value::String(VERSION.into()));
    o.insert("trajectory_id".into(), Value::String(t.id.clone()));
    if let Some(s) = &t.session_id {
        o.insert("session_id".into(), Value::String(s.clone()));
    }
    o.insert("agent".into(), agent(t));
    let mut st = steps(t);
    if st.is_empty() {
        // ATIF needs a step; a record without one gets a system step saying so.
        st.push(json!({"step_id": 1, "source": "system", "message": "", "extra": {"trajkit_no_steps": true}}));
    }
    o.insert("steps".into(), Value::Array(st));
    let mut skip = vec!["agent"];
    if let Some(Value::String(n)) = t.extra.get("notes") {
        o.insert("notes".into(), Value::String(n.clone()));
        skip.push("notes");
    }
    if let Some(m) = &t.metrics {
        o.insert("final_metrics".into(), final_metrics(m));
    }
    if !t.subagents.is_empty() {
        o.insert("subagent_trajectories".into(), Value::Array(subagents(t)));
    }
    let mut extra = merge_extra(&t.extra, &skip);
    extra.insert("trajkit".into(), trajkit_block(t));
    put_extra(&mut o, extra);
    Value::Object(o)
}

fn subagents(t: &Trajectory) -> Vec<Value> {
    let mut ids = HashSet::new();
    let mut out = Vec::new();
    for s in &t.subagents {
        let mut doc = document(&s.trajectory);
        if !ids.insert(s.trajectory.id.clone()) {
            // A repeated id cannot be embedded twice under ATIF's rule; keep it distinct.
            let id = format!("{}~{}", s.trajectory.id, out.len());
            ids.insert(id.clone());
            if let Some(o) = doc.as_object_mut() {
                o.insert("trajectory_id".into(), Value::String(id));
            }
        }
        if let (Some(o), Some(step)) = (doc.as_object_mut(), s.spawned_by_step) {
            let e = o.entry("extra").or_insert_with(|| json!({}));
            if let Some(e) = e.as_object_mut() {
                e.insert("trajkit_spawned_by_step".into(), json!(step));
            }
        }
        out.push(doc);
    }
    out
}
