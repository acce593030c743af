//! MLflow trace export: `Trace.to_json()` (`{"info": {...}, "data": {"spans": [...]}}`),
//! schema v3 (`info.trace_id`, OTel-style spans with `span_id` / `parent_span_id`) and v2
//! (`info.request_id`, spans with `context.span_id` / `parent_id`). Span attributes hold
//! JSON-encoded values (`mlflow.spanType`, `mlflow.spanInputs`, `mlflow.spanOutputs`).
//! The shared walk is in `traces.rs`. See docs/formats/mlflow.md.

use serde_json::{Map, Value};
use trajkit_model::Extra;

use crate::input::InputFile;
use crate::json::idx;
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{parse_record, schema, Problem};
use crate::traces::{self, order_key_int, usage_metrics, Doc, Kind, Span, Top, Verdict};

/// Reader for MLflow trace JSON.
pub(crate) static READER: FnReader = FnReader { family: "mlflow", detect, read, arrays: false };

/// MLflow trace JSON: `info` and `data.spans` with `mlflow.spanType`.
fn detect(peek: &Peek) -> Option<Detection> {
    let has = |s: &str| peek.has_key_anywhere(s);
    if has("info") && has("spans") && has("mlflow.spanType") {
        return claim(90, "MLflow trace (info, data.spans with mlflow.spanType)", Layout::Document);
    }
    None
}

/// An attribute value: MLflow stores each as a JSON-encoded string.
fn attr(attrs: &Map<String, Value>, key: &str) -> Option<Value> {
    match attrs.get(key)? {
        Value::String(s) => Some(serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))),
        Value::Null => None,
        other => Some(other.clone()),
    }
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<trajkit_model::Trajectory, Problem> {
    let Value::Object(mut doc) = parse_record(raw.bytes)? else {
        return Err(schema("$", "an MLflow trace must be a JSON object"));
    };
    let info = match doc.get("info") {
        Some(Value::Object(i)) => i.clone(),
        _ => return Err(schema("$.info", "info must be an object")),
    };
    let spans_v = match doc.get_mut("data").and_then(Value::as_object_mut).and_then(|d| d.remove("spans")) {
        Some(Value::Array(s)) => s,
        _ => return Err(schema("$.data.spans", "data.spans must be a list")),
    };
    let mut spans = Vec::with_capacity(spans_v.len());
    for (i, s) in spans_v.into_iter().enumerate() {
        spans.push(span(s, &idx("$.data.spans", i))?);
    }
    let meta = info.get("trace_metadata").or_else(|| info.get("request_metadata")).and_then(Value::as_object);
    let tags = info.get("tags").and_then(Value::as_object);
    let lookup = |k: &str| {
        meta.and_then(|m| m.get(k)).or_else(|| tags.and_then(|t| t.get(k))).and_then(Value::as_str).map(str::to_string)
    };
    let trace_id = info.get("trace_id").or_else(|| info.get("request_id")).and_then(Value::as_str).map(str::to_string);
    let session_id = lookup("mlflow.trace.session");
    let agent_name = lookup("mlflow.traceName");
    let task_id = lookup("task_id");
    let format_version = lookup("mlflow.trace_schema.version").map(|v| format!("mlflow-trace-v{v}"));
    let metrics = lookup("mlflow.trace.tokenUsage")
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .and_then(|u| usage_metrics(&u));
    let outcome = traces::outcome(&verdicts(info.get("assessments")));
    let extra: Extra = doc.into();
    let d = Doc { family: "mlflow", raw, file, format_version };
    let top = Top { trace_id, session_id, agent_name, task_id, outcome, metrics, extra };
    Ok(traces::trajectory(&spans, &d, top))
}

/// Trace-level feedback assessments (no `span_id`); `LLM_JUDGE` and `CODE` sources are
/// evaluators, `HUMAN` is reported. Expectations (ground truth) are not verdicts.
fn verdicts(assessments: Option<&Value>) -> Vec<Verdict> {
    let Some(Value::Array(list)) = assessments else {
        return Vec::new();
    };
    list.iter()
        .filter(|a| a.get("span_id").is_none_or(|s| s.is_null() || s.as_str() == Some("")))
        .filter(|a| a.get("valid").and_then(Value::as_bool) != Some(false))
        .filter_map(|a| {
            let name = a.get("assessment_name").or_else(|| a.get("name"))?.as_str()?.to_string();
            let value = a.get("feedback")?.get("value")?.clone();
            let source = a.get("source").and_then(|s| s.get("source_type")).and_then(Value::as_str);
            Some(Verdict { name, value, evaluator: matches!(source, Some("LLM_JUDGE" | "CODE")) })
        })
        .collect()
}

fn span(s: Value, path: &str) -> Result<Span, Problem> {
    let Value::Object(mut raw) = s else {
        return Err(schema(path, "a span must be an object"));
    };
    // The id is removed from `raw` only where it was read from the top level (v3); a v2
    // `context.span_id` stays in place.
    let (id, id_key) = match raw.get("span_id") {
        Some(Value::String(s)) => (s.clone(), Some("span_id")),
        _ => match raw.get("context").and_then(|c| c.get("span_id")).and_then(Value::as_str) {
            Some(s) => (s.to_string(), None),
            None => return Err(schema(format!("{path}.span_id"), "span without a span id")),
        },
    };
    if id_key.is_some() {
        raw.remove("span_id");
    }
    let parent = raw
        .get("parent_span_id")
        .or_else(|| raw.get("parent_id"))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let attrs = raw.get("attributes").and_then(Value::as_object).cloned().unwrap_or_default();
    let kind = match attr(&attrs, "mlflow.spanType").as_ref().and_then(Value::as_str) {
        Some("LLM" | "CHAT_MODEL") => Kind::Llm,
        Some("TOOL") => Kind::Tool,
        Some("AGENT") => Kind::Agent,
        Some("CHAIN") => Kind::Chain,
        _ => Kind::Other,
    };
    let start = raw.get("start_time_unix_nano").or_else(|| raw.get("start_time"));
    let order = match start {
        Some(Value::Number(n)) => n.as_u64().map(|n| order_key_int(n as u128)).unwrap_or_default(),
        Some(Value::String(s)) => s.parse::<u128>().map(order_key_int).unwrap_or_else(|_| s.clone()),
        _ => String::new(),
    };
    let input = attr(&attrs, "mlflow.spanInputs");
    let output = attr(&attrs, "mlflow.spanOutputs");
    let model = ["model", "mlflow.llm.model", "gen_ai.request.model"]
        .iter()
        .find_map(|k| attr(&attrs, k).and_then(|v| v.as_str().map(str::to_string)))
        .or_else(|| {
            let o = output.as_ref()?;
            let m = o.get("model").or_else(|| o.get("llm_output").and_then(|l| l.get("model_name")));
            m.and_then(Value::as_str).map(str::to_string)
        })
        .or_else(|| input.as_ref().and_then(|o| o.get("model")).and_then(Value::as_str).map(str::to_string));
    let metrics = attr(&attrs, "mlflow.chat.tokenUsage").and_then(|u| usage_metrics(&u));
    let call_id = attr(&attrs, "gen_ai.tool.call.id").and_then(|v| v.as_str().map(str::to_string));
    Ok(Span {
        id,
        parent,
        kind,
        name: raw.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
        order,
        timestamp: None,
        input,
        output,
        model,
        metrics,
        call_id,
        raw,
        id_key,
    })
}
