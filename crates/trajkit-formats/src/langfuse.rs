//! Langfuse v3 trace detail with embedded observations: the UI's trace download
//! (`{"trace": {...}, "observations": [...]}`) or the public API's
//! `GET /api/public/traces/{id}` response (`{id, ..., observations, scores}`).
//! Observations are spans; the shared walk is in `traces.rs`. See docs/formats/langfuse.md.

use serde_json::{Map, Value};
use trajkit_model::{Extra, Metrics};

use crate::input::InputFile;
use crate::json::idx;
use crate::reader::{claim, Detection, FnReader, Layout, Peek, RawRecord};
use crate::rejection::{parse_record, schema, Problem};
use crate::traces::{self, decoded, usage_metrics, Doc, Kind, Span, Top, Verdict};

/// Reader for Langfuse trace exports.
pub(crate) static READER: FnReader = FnReader { family: "langfuse", detect, read, arrays: false };

/// Langfuse trace exports: observations with `parentObservationId` and `traceId`.
fn detect(peek: &Peek) -> Option<Detection> {
    let has = |s: &str| peek.has_key_anywhere(s);
    if has("observations") && has("parentObservationId") && has("traceId") {
        return claim(90, "Langfuse trace with observations (parentObservationId, traceId)", Layout::Document);
    }
    None
}

fn read(raw: &RawRecord, file: &InputFile) -> Result<trajkit_model::Trajectory, Problem> {
    let Value::Object(mut doc) = parse_record(raw.bytes)? else {
        return Err(schema("$", "a Langfuse trace must be a JSON object"));
    };
    let observations = match doc.remove("observations") {
        Some(Value::Array(a)) => a,
        _ => return Err(schema("$.observations", "observations must be a list")),
    };
    // The UI download nests the trace (which repeats the observations); the API response
    // is the trace itself.
    let (mut trace, nested) = match doc.remove("trace") {
        Some(Value::Object(t)) => (t, true),
        Some(other) => {
            doc.insert("trace".into(), other);
            return Err(schema("$.trace", "trace must be an object"));
        }
        None => (std::mem::take(&mut doc), false),
    };
    if nested && trace.get("observations") == Some(&Value::Array(observations.clone())) {
        trace.remove("observations");
    }
    let mut spans = Vec::with_capacity(observations.len());
    for (i, o) in observations.into_iter().enumerate() {
        spans.push(span(o, &idx("$.observations", i))?);
    }
    let trace_id = trace.get("id").and_then(Value::as_str).map(str::to_string);
    let session_id = trace.get("sessionId").and_then(Value::as_str).map(str::to_string);
    let agent_name = trace.get("name").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let metadata = trace.get("metadata").map(decoded);
    let task_id = metadata
        .as_ref()
        .and_then(|m| m.get("task_id").or_else(|| m.get("taskId")))
        .and_then(Value::as_str)
        .map(str::to_string);
    let outcome = traces::outcome(&verdicts(trace.get("scores")));
    let metrics =
        trace.get("totalCost").and_then(Value::as_f64).map(|c| Metrics { cost_usd: Some(c), ..Default::default() });
    let mut extra: Extra = doc.into();
    if nested {
        extra.insert("trace".into(), Value::Object(trace));
    } else {
        extra.extend(trace);
    }
    let d = Doc { family: "langfuse", raw, file, format_version: None };
    let top = Top { trace_id, session_id, agent_name, task_id, outcome, metrics, extra };
    Ok(traces::trajectory(&spans, &d, top))
}

/// Trace-level scores (no `observationId`) of type NUMERIC or BOOLEAN; `source: EVAL`
/// is an evaluator.
fn verdicts(scores: Option<&Value>) -> Vec<Verdict> {
    let Some(Value::Array(scores)) = scores else {
        return Vec::new();
    };
    scores
        .iter()
        .filter(|s| s.get("observationId").is_none_or(Value::is_null))
        .filter_map(|s| {
            let name = s.get("name")?.as_str()?.to_string();
            let value = s.get("value")?;
            let value = match s.get("dataType").and_then(Value::as_str) {
                Some("BOOLEAN") => Value::Bool(value.as_f64()? != 0.0),
                Some("NUMERIC") | None if value.is_number() => value.clone(),
                _ => return None,
            };
            let evaluator = s.get("source").and_then(Value::as_str) == Some("EVAL");
            Some(Verdict { name, value, evaluator })
        })
        .collect()
}

fn span(o: Value, path: &str) -> Result<Span, Problem> {
    let Value::Object(mut raw) = o else {
        return Err(schema(path, "an observation must be an object"));
    };
    let id = match raw.remove("id") {
        Some(Value::String(s)) => s,
        _ => return Err(schema(format!("{path}.id"), "observation without a string id")),
    };
    let kind = match raw.get("type").and_then(Value::as_str) {
        Some("GENERATION") => Kind::Llm,
        Some("TOOL") => Kind::Tool,
        Some("AGENT") => Kind::Agent,
        Some("CHAIN") => Kind::Chain,
        _ => Kind::Other,
    };
    let get_str = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
    let start = get_str(&raw, "startTime");
    let mut metrics =
        raw.get("usageDetails").and_then(usage_metrics).or_else(|| raw.get("usage").and_then(usage_metrics));
    let cost = raw.get("costDetails").and_then(|c| c.get("total")).and_then(Value::as_f64);
    if let Some(c) = cost {
        metrics.get_or_insert_with(Metrics::default).cost_usd = Some(c);
    }
    let metadata = raw.get("metadata").map(decoded);
    let call_id = metadata
        .as_ref()
        .and_then(|m| m.get("attributes").unwrap_or(m).get("gen_ai.tool.call.id"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(Span {
        parent: get_str(&raw, "parentObservationId"),
        kind,
        name: get_str(&raw, "name").unwrap_or_default(),
        order: start.clone().unwrap_or_default(),
        timestamp: start,
        input: raw.get("input").filter(|v| !v.is_null()).map(decoded),
        output: raw.get("output").filter(|v| !v.is_null()).map(decoded),
        model: get_str(&raw, "model").or_else(|| get_str(&raw, "providedModelName")),
        metrics,
        call_id,
        id,
        raw,
        id_key: Some("id"),
    })
}
