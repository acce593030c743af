//! OpenTelemetry traces as OTLP/JSON: `{"resourceSpans": [...]}` documents from OTLP/JSON
//! exporters and the collector's file exporter (one document, or JSON Lines of them) and
//! Grafana Tempo exports (`batches`, `instrumentationLibrarySpans`), with GenAI semantic
//! convention, OpenInference or OpenLLMetry attributes.
//!
//! The OTLP files of one directory are one input set (the collector rotates its file): the
//! first of them consumes the others, gathers their spans and groups them by trace, so a
//! trace split over files and arriving out of order is read whole. Each trace (or each
//! top-level agent run of it, see [`roots`]) is one record, handed out by `expand_file`;
//! `read_record` maps its spans through the shared span-tree walk (`traces.rs`). See
//! docs/formats/otel.md.

mod attrs;
mod span;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use trajkit_model::{Extra, LazyValue, Outcome, Step, Trajectory};

use crate::input::{self, InputFile};
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult, PEEK_BYTES};
use crate::rejection::{parse_record, schema, Problem, Reason};
use crate::traces::{self, Doc, Kind, Top};
use attrs::{attributes, id};
use span::{is_error, Attrs};

/// Reader for OTLP/JSON trace files.
pub struct OtelReader;

impl Reader for OtelReader {
    fn name(&self) -> &'static str {
        "otel"
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        claim(peek.bytes, peek.first_line)
    }

    /// The first OTLP file of a directory consumes the directory's other OTLP files.
    fn referenced_files(&self, file: &InputFile, _layout: Layout) -> Vec<PathBuf> {
        if file.is_stdin() {
            return Vec::new();
        }
        let set = input_set(&file.fs_path);
        match (file.fs_path.canonicalize().ok(), set.split_first()) {
            (Some(me), Some((lead, rest))) if *lead == me => rest.to_vec(),
            _ => Vec::new(),
        }
    }

    fn expands(&self) -> bool {
        true
    }

    fn expand_file(
        &self,
        file: &InputFile,
        bytes: &[u8],
        limit: usize,
        emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool,
    ) -> Option<Result<(), String>> {
        Some(expand(file, bytes, limit, emit))
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        RecordResult::from_result(read(raw, file))
    }
}

// ---------------------------------------------------------------------------------------
// Detection and input sets
// ---------------------------------------------------------------------------------------

/// Claims an OTLP/JSON document (or the first line of JSON Lines of them) whose spans carry
/// a GenAI, OpenInference or OpenLLMetry attribute (95). OTLP spans without any are no
/// agent trace: a claim of 40, below the bar, so the file is unrecognised with this guess.
/// A document larger than the peek is judged on the peek's text (80).
fn claim(bytes: &[u8], first_line: Option<&Value>) -> Option<Detection> {
    if !(memchr::memmem::find(bytes, b"\"resourceSpans\"").is_some()
        || memchr::memmem::find(bytes, b"\"batches\"").is_some())
    {
        return None;
    }
    let parsed;
    let doc = match first_line {
        Some(v) => Some(v),
        None => {
            parsed = serde_json::from_slice::<Value>(bytes).ok();
            parsed.as_ref()
        }
    };
    let layout = Layout::Document;
    let found = |confidence: u8, reason: &str| crate::reader::claim(confidence, reason, layout);
    match doc {
        Some(d) => {
            let groups = resource_groups(d)?;
            let genai = groups.iter().any(|g| spans_of(g).iter().any(|(_, s)| Attrs::of(s).is_genai()));
            match genai {
                true => found(95, "OTLP/JSON with GenAI/OpenInference spans"),
                false => found(40, "OTLP/JSON spans without GenAI or OpenInference attributes"),
            }
        }
        None => {
            let has = |s: &str| memchr::memmem::find(bytes, s.as_bytes()).is_some();
            if has("\"gen_ai.") || has("\"openinference.span.kind\"") || has("\"llm.") {
                found(80, "OTLP/JSON (larger than the peek) naming GenAI/OpenInference attributes")
            } else {
                None
            }
        }
    }
}

/// The resource groups of an OTLP document: `resourceSpans`, or Tempo's `batches`.
fn resource_groups(doc: &Value) -> Option<&Vec<Value>> {
    let o = doc.as_object()?;
    o.get("resourceSpans").or_else(|| o.get("batches")).and_then(Value::as_array)
}

/// The spans of one resource group with their scope: `scopeSpans` (`scope`), or the
/// older `instrumentationLibrarySpans` (`instrumentationLibrary`).
fn spans_of(group: &Value) -> Vec<(&Value, &Map<String, Value>)> {
    let scopes = group.get("scopeSpans").or_else(|| group.get("instrumentationLibrarySpans"));
    let mut out = Vec::new();
    for sc in scopes.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
        let scope = sc.get("scope").or_else(|| sc.get("instrumentationLibrary")).unwrap_or(&Value::Null);
        for s in sc.get("spans").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
            if let Value::Object(m) = s {
                out.push((scope, m));
            }
        }
    }
    out
}

/// The OTLP files of `path`'s directory that this reader claims, canonical and sorted:
/// one input set. Computed once per process per directory (keyed by its modification
/// time), as every file of the directory asks.
fn input_set(path: &Path) -> Vec<PathBuf> {
    use std::sync::{Mutex, OnceLock};
    type Cache = HashMap<(PathBuf, Option<std::time::SystemTime>), Vec<PathBuf>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let Some(dir) = path.canonicalize().ok().and_then(|p| p.parent().map(Path::to_path_buf)) else {
        return Vec::new();
    };
    let key = (dir.clone(), std::fs::metadata(&dir).and_then(|m| m.modified()).ok());
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return hit;
    }
    let mut set: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.is_file() && is_otlp_name(p) && claims_file(p))
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    set.sort();
    if let Ok(mut c) = cache.lock() {
        c.insert(key, set.clone());
    }
    set
}

/// A name `discover` would read as JSON (compressed or not).
fn is_otlp_name(p: &Path) -> bool {
    let name = input::logical_name(p);
    name.ends_with(".json") || name.ends_with(".jsonl")
}

/// True when this reader claims the file (confidence 50 or more) from its first bytes.
fn claims_file(p: &Path) -> bool {
    let f = InputFile { fs_path: p.to_path_buf(), display: p.display().to_string(), root: PathBuf::new() };
    let Ok(reader) = input::open(&f) else {
        return false;
    };
    let mut peek = Vec::new();
    if reader.take(PEEK_BYTES as u64).read_to_end(&mut peek).is_err() && peek.is_empty() {
        return false;
    }
    let (first, _) = crate::pipeline::first_line(&peek);
    claim(&peek, first.as_ref().map(|p| &p.value)).is_some_and(|d| d.confidence >= 50)
}

// ---------------------------------------------------------------------------------------
// Gathering spans by trace
// ---------------------------------------------------------------------------------------

/// One span as found: its file (index into the set's display names), line (JSON Lines),
/// resource group (index into the resources) and scope.
struct Found {
    file: usize,
    line: Option<u64>,
    resource: usize,
    scope: Value,
    span: Map<String, Value>,
}

/// Every span of the set, the resources they name, and the files' display names.
#[derive(Default)]
struct Gathered {
    files: Vec<String>,
    resources: Vec<Value>,
    /// Resource (as JSON text) -> index in `resources`.
    resource_index: HashMap<String, usize>,
    spans: Vec<Found>,
}

impl Gathered {
    /// The index of a resource, the same for equal resources (each document repeats its
    /// resource).
    fn resource(&mut self, r: Value) -> usize {
        let key = r.to_string();
        let next = self.resources.len();
        let at = *self.resource_index.entry(key).or_insert(next);
        if at == next {
            self.resources.push(r);
        }
        at
    }
}

/// Reads the lead file (`bytes`) and the rest of its input set, groups the spans by trace
/// (in order of first appearance) and emits one record per trace or top-level agent run.
/// Unreadable lines and spans without ids are emitted as rejections naming file and line.
fn expand(
    file: &InputFile,
    bytes: &[u8],
    limit: usize,
    emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool,
) -> Result<(), String> {
    let mut g = Gathered::default();
    let mut problems = Vec::new();
    g.files.push(file.display.clone());
    gather(&mut g, 0, bytes, &mut problems);
    let consumed = if file.is_stdin() { Vec::new() } else { OtelReader.referenced_files(file, Layout::Document) };
    for path in consumed {
        let display = sibling_display(file, &path);
        let idx = g.files.len();
        g.files.push(display.clone());
        let f = InputFile { fs_path: path, display, root: file.root.clone() };
        match input::read_gathered(&f, limit) {
            Ok(buf) => gather(&mut g, idx, &buf, &mut problems),
            Err(p) => problems.push(p),
        }
    }
    for p in problems {
        if !emit(Err(p)) {
            return Ok(());
        }
    }
    for record in records(&g) {
        let out = if record.len() > limit { Err(crate::pipeline::too_large_problem(limit)) } else { Ok(record) };
        if !emit(out) {
            return Ok(());
        }
    }
    Ok(())
}

/// A consumed file's name as reports show it: beside the lead file's display path.
fn sibling_display(lead: &InputFile, path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match Path::new(&lead.display).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(name).display().to_string(),
        _ => name,
    }
}

/// Adds the spans of one file (a document, or JSON Lines of documents).
fn gather(g: &mut Gathered, file: usize, bytes: &[u8], problems: &mut Vec<Problem>) {
    if let Ok(doc) = serde_json::from_slice::<Value>(bytes) {
        gather_doc(g, file, None, &doc, problems);
        return;
    }
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = i as u64 + 1;
        match parse_record(line) {
            Ok(doc) => gather_doc(g, file, Some(at), &doc, problems),
            Err(mut p) => {
                p.message = format!("{} line {at}: {}", g.files[file], p.message);
                problems.push(p);
            }
        }
    }
}

/// Adds the spans of one OTLP document; a span without a trace or span id is a problem.
fn gather_doc(g: &mut Gathered, file: usize, line: Option<u64>, doc: &Value, problems: &mut Vec<Problem>) {
    let at = match line {
        Some(l) => format!("{} line {l}", g.files[file]),
        None => g.files[file].clone(),
    };
    let Some(groups) = resource_groups(doc) else {
        let msg = format!("{at}: an OTLP document needs resourceSpans (or batches)");
        problems.push(schema("$.resourceSpans", msg));
        return;
    };
    for (gi, group) in groups.iter().enumerate() {
        let resource = g.resource(group.get("resource").cloned().unwrap_or(Value::Null));
        for (si, (scope, s)) in spans_of(group).into_iter().enumerate() {
            for key in ["traceId", "spanId"] {
                if id(s.get(key)).is_none() {
                    let path = format!("$.resourceSpans[{gi}].spans[{si}].{key}");
                    problems.push(schema(path, format!("{at}: span without {key}")));
                }
            }
            if id(s.get("traceId")).is_some() && id(s.get("spanId")).is_some() {
                g.spans.push(Found { file, line, resource, scope: scope.clone(), span: s.clone() });
            }
        }
    }
}

/// The records of a gathered set, as JSON: per trace, in order of first appearance.
fn records(g: &Gathered) -> Vec<Vec<u8>> {
    let mut order: Vec<String> = Vec::new();
    let mut by_trace: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, f) in g.spans.iter().enumerate() {
        let t = id(f.span.get("traceId")).unwrap_or_default();
        by_trace
            .entry(t.clone())
            .or_insert_with(|| {
                order.push(t.clone());
                Vec::new()
            })
            .push(i);
    }
    let mut out = Vec::new();
    for t in order {
        let members = &by_trace[&t];
        for (root, subset) in roots(g, members) {
            out.push(bundle(g, &t, root.as_deref(), &subset));
        }
    }
    out
}

/// How a trace divides into records: one per top-level agent span (an agent span with no
/// agent above it) when it has two or more and every model call runs inside one of them;
/// else the whole trace. Each entry: the agent span id (when divided) and its spans.
fn roots(g: &Gathered, members: &[usize]) -> Vec<(Option<String>, Vec<usize>)> {
    let sid = |i: usize| id(g.spans[i].span.get("spanId")).unwrap_or_default();
    let index: HashMap<String, usize> = members.iter().map(|&i| (sid(i), i)).collect();
    let kinds: HashMap<usize, Kind> = members.iter().map(|&i| (i, Attrs::of(&g.spans[i].span).kind())).collect();
    // The nearest agent at or above each span (bounded walk: parent links may cycle).
    let top_agent = |i: usize| -> Option<usize> {
        let mut at = Some(i);
        let mut top = None;
        let mut seen = HashSet::new();
        while let Some(j) = at {
            if !seen.insert(j) {
                break;
            }
            if kinds.get(&j) == Some(&Kind::Agent) {
                top = Some(j);
            }
            at = id(g.spans[j].span.get("parentSpanId")).and_then(|p| index.get(&p).copied());
        }
        top
    };
    let tops: Vec<Option<usize>> = members.iter().map(|&i| top_agent(i)).collect();
    let mut distinct: Vec<usize> = tops.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    let llm_outside = members.iter().zip(&tops).any(|(i, t)| kinds.get(i) == Some(&Kind::Llm) && t.is_none());
    if distinct.len() < 2 || llm_outside {
        return vec![(None, members.to_vec())];
    }
    // In order of the agents' first spans in the set.
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for (&i, t) in members.iter().zip(&tops) {
        let Some(t) = t else { continue };
        match groups.iter_mut().find(|(a, _)| a == t) {
            Some((_, v)) => v.push(i),
            None => groups.push((*t, vec![i])),
        }
    }
    groups.sort_by_key(|(a, _)| *a);
    groups.into_iter().map(|(a, v)| (Some(sid(a)), v)).collect()
}

/// One record: the trace id, the agent span it is limited to, the set's files and
/// resources, and its spans with where each was found.
fn bundle(g: &Gathered, trace: &str, root: Option<&str>, members: &[usize]) -> Vec<u8> {
    let mut used: Vec<usize> = members.iter().map(|&i| g.spans[i].resource).collect();
    used.sort_unstable();
    used.dedup();
    let spans: Vec<Value> = members
        .iter()
        .map(|&i| {
            let f = &g.spans[i];
            let r = used.binary_search(&f.resource).unwrap_or(0);
            json!({"file": g.files[f.file], "line": f.line, "resource": r, "scope": f.scope, "span": f.span})
        })
        .collect();
    let resources: Vec<&Value> = used.iter().map(|&r| &g.resources[r]).collect();
    let doc = json!({"traceId": trace, "root": root, "resources": resources, "spans": spans});
    serde_json::to_vec(&doc).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// One record
// ---------------------------------------------------------------------------------------

/// A record made by `expand` as a trajectory.
fn read(raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let Value::Object(mut doc) = parse_record(raw.bytes)? else {
        return Err(schema("$", "an OTLP trace record must be a JSON object"));
    };
    let Some(Value::Array(entries)) = doc.remove("spans") else {
        return Err(schema("$.spans", "an OTLP trace record needs its spans (read OTLP files with --format otel)"));
    };
    let trace_id = doc.get("traceId").and_then(Value::as_str).unwrap_or_default().to_string();
    let root = doc.get("root").and_then(Value::as_str).map(str::to_string);
    let mut spans = Vec::with_capacity(entries.len());
    let mut errors: HashMap<String, Value> = HashMap::new();
    let (mut session_id, mut genai) = (None, false);
    // Tool definitions of the earliest model call that lists them: (order, definitions).
    let mut tools: Option<(String, Vec<Value>)> = None;
    // Provenance: where the root span (else the first span) was found.
    let mut first: Option<(String, Option<u64>)> = None;
    let mut first_is_root = false;
    for e in entries {
        let Some(Value::Object(s)) = e.get("span").cloned() else {
            return Err(schema("$.spans[].span", "a span must be an object"));
        };
        let a = Attrs::of(&s);
        genai |= a.is_genai();
        if session_id.is_none() {
            session_id = ["gen_ai.conversation.id", "session.id"]
                .iter()
                .find_map(|k| a.map.get(*k).and_then(Value::as_str))
                .map(str::to_string);
        }
        if is_error(s.get("status")) {
            let msg = s.get("status").and_then(|st| st.get("message")).and_then(Value::as_str).unwrap_or("error");
            errors.insert(id(s.get("spanId")).unwrap_or_default(), Value::String(msg.to_string()));
        }
        let sp = span::span(s, &a);
        if sp.kind == Kind::Llm && tools.as_ref().is_none_or(|(o, _)| sp.order < *o) {
            let defs = span::tool_definitions(&a);
            if !defs.is_empty() {
                tools = Some((sp.order.clone(), defs));
            }
        }
        let file_of = e.get("file").and_then(Value::as_str).unwrap_or_default().to_string();
        let is_root = sp.parent.is_none() || root.as_deref() == Some(sp.id.as_str());
        if first.is_none() || (is_root && !first_is_root) {
            first = Some((file_of, e.get("line").and_then(Value::as_u64)));
            first_is_root = is_root;
        }
        spans.push(sp);
    }
    if !genai {
        let msg = format!("trace {trace_id} holds no GenAI, OpenInference or OpenLLMetry span: not an agent trace");
        return Err(Problem::new(Reason::NotARollout, "$.spans", msg));
    }
    let agent_name = agent_name(&spans);
    let (path, line) = first.unwrap_or_else(|| (file.display.clone(), None));
    let at_file = InputFile { display: path, ..file.clone() };
    let at = RawRecord { line, ..*raw };
    let d = Doc { family: "otel", raw: &at, file: &at_file, format_version: None };
    let mut extra = Extra::new();
    if let Some(Value::Array(r)) = doc.remove("resources") {
        let flat: Vec<Value> =
            r.iter().map(|x| Value::Object(attributes(x.get("attributes").unwrap_or(&Value::Null)))).collect();
        extra.insert("resources".into(), Value::Array(flat));
    }
    let trace_key = match &root {
        Some(r) => format!("{trace_id}-{r}"),
        None => trace_id,
    };
    let top = Top {
        trace_id: Some(trace_key),
        session_id,
        agent_name,
        task_id: None,
        outcome: Outcome::default(),
        metrics: None,
        extra,
    };
    let mut t = traces::trajectory(&spans, &d, top);
    if t.tools.is_none() {
        t.tools = tools.map(|(_, defs)| LazyValue::from_values(defs));
    }
    if !errors.is_empty() {
        mark_errors(&mut t, &errors);
    }
    Ok(t)
}

/// The name of the outermost agent span.
fn agent_name(spans: &[traces::Span]) -> Option<String> {
    let ids: HashSet<&str> = spans.iter().map(|s| s.id.as_str()).collect();
    let mut agents: Vec<&traces::Span> = spans.iter().filter(|s| s.kind == Kind::Agent).collect();
    agents.sort_by(|a, b| a.order.cmp(&b.order));
    let outer = agents.iter().find(|s| s.parent.as_deref().is_none_or(|p| !ids.contains(p))).or(agents.first());
    outer.map(|s| s.name.clone()).filter(|n| !n.is_empty())
}

/// Spans with an error status: the error is kept on the step the span became (on its
/// tool results for a tool span), never as the run's outcome.
fn mark_errors(t: &mut Trajectory, errors: &HashMap<String, Value>) {
    for step in &mut t.steps {
        mark_step(step, errors);
    }
    for sub in &mut t.subagents {
        mark_errors(&mut sub.trajectory, errors);
    }
}

fn mark_step(step: &mut Step, errors: &HashMap<String, Value>) {
    let Some(Value::String(sid)) = &step.source_id else {
        return;
    };
    let Some(err) = errors.get(sid) else {
        return;
    };
    if step.tool_results.is_empty() {
        step.extra.insert("error".into(), err.clone());
    }
    for r in &mut step.tool_results {
        r.extra.insert("error".into(), err.clone());
    }
}
