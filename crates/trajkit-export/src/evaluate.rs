//! `evaluate-actions`: scores per-turn predictions against a held-out assistant-turn export,
//! or against canonical records whose decisions the export's assistant-turn view derives.
//! Only each row's `completion` (the decision) is compared; no later row, observation or
//! outcome is read. Rows without a prediction count as misses, never as skipped.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use trajkit_model::Trajectory;

use crate::error::ExportError;
use crate::{openai, views};
use trajkit_formats::input::{decompress, Compression};

/// A next action: tool calls `(name, canonical JSON arguments)` and text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Action {
    pub calls: Vec<(String, Value)>,
    pub text: String,
}

/// Counters of one group (overall, a source, a family).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub rows: u64,
    pub predicted: u64,
    pub action_turns: u64,
    pub action_exact: u64,
    pub tool_name_correct: u64,
    pub arg_true_positive: u64,
    pub arg_predicted: u64,
    pub arg_target: u64,
    pub text_turns: u64,
    pub text_exact: u64,
    pub text_normalized: u64,
}

fn rate(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

/// The reported figures of a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scores {
    pub rows: u64,
    pub predicted: u64,
    pub missing: u64,
    pub coverage: Option<f64>,
    pub action_turns: u64,
    pub exact_action_match: Option<f64>,
    pub tool_name_accuracy: Option<f64>,
    pub argument_precision: Option<f64>,
    pub argument_recall: Option<f64>,
    pub argument_f1: Option<f64>,
    pub text_turns: u64,
    pub text_exact_match: Option<f64>,
    pub text_normalized_match: Option<f64>,
}

impl Counts {
    pub fn scores(&self) -> Scores {
        let p = rate(self.arg_true_positive, self.arg_predicted);
        let r = rate(self.arg_true_positive, self.arg_target);
        let f1 = match (p, r) {
            (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
        Scores {
            rows: self.rows,
            predicted: self.predicted,
            missing: self.rows - self.predicted,
            coverage: rate(self.predicted, self.rows),
            action_turns: self.action_turns,
            exact_action_match: rate(self.action_exact, self.action_turns),
            tool_name_accuracy: rate(self.tool_name_correct, self.action_turns),
            argument_precision: p,
            argument_recall: r,
            argument_f1: f1,
            text_turns: self.text_turns,
            text_exact_match: rate(self.text_exact, self.text_turns),
            text_normalized_match: rate(self.text_normalized, self.text_turns),
        }
    }

    fn add(&mut self, o: &Counts) {
        self.rows += o.rows;
        self.predicted += o.predicted;
        self.action_turns += o.action_turns;
        self.action_exact += o.action_exact;
        self.tool_name_correct += o.tool_name_correct;
        self.arg_true_positive += o.arg_true_positive;
        self.arg_predicted += o.arg_predicted;
        self.arg_target += o.arg_target;
        self.text_turns += o.text_turns;
        self.text_exact += o.text_exact;
        self.text_normalized += o.text_normalized;
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub overall: Scores,
    pub by_source: BTreeMap<String, Scores>,
    pub by_family: BTreeMap<String, Scores>,
    /// Prediction lines read.
    pub predictions: u64,
    /// Predictions whose id names no held-out row.
    pub unknown_ids: u64,
    /// Repeated prediction ids (the first is scored).
    pub duplicate_ids: u64,
}

impl Report {
    /// 0 when every row has exactly one prediction and none is unknown, else 1 (findings).
    pub fn exit_code(&self) -> u8 {
        u8::from(self.overall.missing > 0 || self.unknown_ids > 0 || self.duplicate_ids > 0)
    }
}

/// Whitespace-collapsed, trimmed, lower-cased text.
pub fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// An action from an OpenAI assistant message; arguments may be JSON text or an object.
pub fn action_of(msg: &Value) -> Action {
    let text = match msg.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Array(_)) => crate::views::content_text(Some(v), &mut 0),
        _ => String::new(),
    };
    let calls = msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let f = c.get("function").unwrap_or(c);
                    let name = f.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                    let args = match f.get("arguments") {
                        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
                        Some(v) => v.clone(),
                        None => Value::Object(Default::default()),
                    };
                    (name, args)
                })
                .collect()
        })
        .unwrap_or_default();
    Action { calls, text }
}

/// Multiset intersection size of two sorted lists.
fn overlap<T: Ord>(a: &[T], b: &[T]) -> u64 {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// `(tool, argument, canonical value)` triples of an action's calls.
fn arg_triples(a: &Action) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (name, args) in &a.calls {
        match args {
            Value::Object(m) => out.extend(m.iter().map(|(k, v)| (name.clone(), k.clone(), v.to_string()))),
            other => out.push((name.clone(), String::new(), other.to_string())),
        }
    }
    out.sort();
    out
}

fn sorted_calls(a: &Action) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = a.calls.iter().map(|(n, args)| (n.clone(), args.to_string())).collect();
    v.sort();
    v
}

/// Scores one row (a missing prediction scores as a miss on every figure).
pub fn score(target: &Action, predicted: Option<&Action>) -> Counts {
    let mut c = Counts { rows: 1, predicted: u64::from(predicted.is_some()), ..Counts::default() };
    let empty = Action::default();
    let p = predicted.unwrap_or(&empty);
    if target.calls.is_empty() {
        c.text_turns = 1;
        if predicted.is_some() && p.calls.is_empty() {
            c.text_exact = u64::from(p.text == target.text);
            c.text_normalized = u64::from(normalize(&p.text) == normalize(&target.text));
        }
        return c;
    }
    c.action_turns = 1;
    let (t_calls, p_calls) = (sorted_calls(target), sorted_calls(p));
    c.action_exact = u64::from(predicted.is_some() && t_calls == p_calls);
    let names = |v: &[(String, String)]| {
        let mut n: Vec<String> = v.iter().map(|(n, _)| n.clone()).collect();
        n.sort();
        n
    };
    c.tool_name_correct = u64::from(predicted.is_some() && names(&t_calls) == names(&p_calls));
    let (t_args, p_args) = (arg_triples(target), arg_triples(p));
    c.arg_true_positive = overlap(&t_args, &p_args);
    c.arg_predicted = p_args.len() as u64;
    c.arg_target = t_args.len() as u64;
    c
}

fn open_lines(path: &Path) -> Result<Box<dyn BufRead>, ExportError> {
    let file = File::open(path).map_err(ExportError::io(path))?;
    Ok(decompress(Box::new(file), Compression::of(path)).map_err(ExportError::io(path))?)
}

/// Calls `f(line_number, value)` for each non-empty JSON line of a (compressed) file.
fn each_json_line(path: &Path, mut f: impl FnMut(u64, Value) -> Result<(), ExportError>) -> Result<(), ExportError> {
    for (i, line) in open_lines(path)?.lines().enumerate() {
        let n = i as u64 + 1;
        let line = line.map_err(ExportError::io(path))?;
        if line.trim().is_empty() {
            continue;
        }
        let v = serde_json::from_str(&line).map_err(|e| ExportError::Input {
            path: path.to_path_buf(),
            line: n,
            message: format!("invalid JSON: {e}"),
        })?;
        f(n, v)?;
    }
    Ok(())
}

fn input_err(path: &Path, line: u64, message: &str) -> ExportError {
    ExportError::Input { path: PathBuf::from(path), line, message: message.into() }
}

/// Predictions by id: `{"id", "message": {...}}` or `{"id", "completion": [{...}]}`.
fn load_predictions(path: &Path) -> Result<(HashMap<String, Action>, u64, u64), ExportError> {
    let (mut map, mut lines, mut dups) = (HashMap::new(), 0u64, 0u64);
    each_json_line(path, |n, v| {
        lines += 1;
        let id =
            v.get("id").and_then(Value::as_str).ok_or_else(|| input_err(path, n, "$.id: missing or not a string"))?;
        let msg = v
            .get("message")
            .or_else(|| v.get("completion").and_then(|c| c.get(0)))
            .ok_or_else(|| input_err(path, n, "$.message: missing (or $.completion[0])"))?;
        if map.contains_key(id) {
            dups += 1;
        } else {
            map.insert(id.to_string(), action_of(msg));
        }
        Ok(())
    })?;
    Ok((map, lines, dups))
}

/// One held-out decision: its row id, the target action and its groups.
struct Target {
    id: String,
    action: Action,
    source: String,
    family: String,
}

/// Held-out rows of one line: an assistant-turn export row, or every decision of a canonical
/// record (`trajkit.trajectory/*`) derived by the export's own assistant-turn view, with the
/// ids the export would give them (`<record id>#<turn>`).
fn targets_of(path: &Path, n: u64, v: Value) -> Result<Vec<Target>, ExportError> {
    if is_canonical(&v) {
        let t: Trajectory =
            serde_json::from_value(v).map_err(|e| input_err(path, n, &format!("not a valid canonical record: {e}")))?;
        let (turns, _) = views::assistant_turns(&t);
        return Ok(turns
            .iter()
            .map(|turn| Target {
                id: format!("{}#{}", t.id, turn.turn),
                action: action_of(&openai::message_json(&turn.completion)),
                source: t.provenance.format.clone(),
                family: UNKNOWN.into(),
            })
            .collect());
    }
    let id = v.get("id").and_then(Value::as_str).ok_or_else(|| input_err(path, n, "$.id: missing"))?;
    let target = v.get("completion").and_then(|c| c.get(0)).ok_or_else(|| {
        input_err(path, n, "$.completion[0]: missing (neither an assistant-turn export row nor a canonical record)")
    })?;
    let meta = v.get("metadata");
    let group = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or(UNKNOWN).to_string();
    Ok(vec![Target { id: id.to_string(), action: action_of(target), source: group("source"), family: group("family") }])
}

/// Group name when a row does not say.
const UNKNOWN: &str = "unknown";

/// A canonical record line: `schema_version` names the trajkit record schema.
fn is_canonical(v: &Value) -> bool {
    let schema = v.get("schema_version").and_then(Value::as_str);
    schema.is_some_and(|s| s.starts_with("trajkit.trajectory/")) && v.get("completion").is_none()
}

/// Scores `predictions` against `heldout`: an assistant-turn export, or canonical records
/// whose decisions are derived as the export derives them.
pub fn evaluate(heldout: &Path, predictions: &Path) -> Result<Report, ExportError> {
    let (preds, lines, dups) = load_predictions(predictions)?;
    let mut overall = Counts::default();
    let mut by_source: BTreeMap<String, Counts> = BTreeMap::new();
    let mut by_family: BTreeMap<String, Counts> = BTreeMap::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut used = 0u64;
    each_json_line(heldout, |n, v| {
        for t in targets_of(heldout, n, v)? {
            if let Some(first) = seen.insert(t.id.clone(), n) {
                return Err(input_err(heldout, n, &format!("row id {:?} repeats line {first}", t.id)));
            }
            let predicted = preds.get(&t.id);
            used += u64::from(predicted.is_some());
            let c = score(&t.action, predicted);
            overall.add(&c);
            by_source.entry(t.source).or_default().add(&c);
            by_family.entry(t.family).or_default().add(&c);
        }
        Ok(())
    })?;
    Ok(Report {
        overall: overall.scores(),
        by_source: by_source.iter().map(|(k, c)| (k.clone(), c.scores())).collect(),
        by_family: by_family.iter().map(|(k, c)| (k.clone(), c.scores())).collect(),
        predictions: lines,
        unknown_ids: preds.len() as u64 - used,
        duplicate_ids: dups,
    })
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_else(|| "-".into())
}

fn table_row(name: &str, s: &Scores) -> String {
    format!(
        "{:<28} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
        name,
        s.rows,
        pct(s.coverage),
        pct(s.exact_action_match),
        pct(s.tool_name_accuracy),
        pct(s.argument_precision),
        pct(s.argument_recall),
        pct(s.argument_f1),
        pct(s.text_exact_match),
        pct(s.text_normalized_match)
    )
}

/// The report as a text table: overall, then per source and per family.
pub fn table(r: &Report) -> String {
    let mut s = format!(
        "{:<28} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
        "group", "rows", "coverage", "exact", "tool", "arg P", "arg R", "arg F1", "text", "text~"
    );
    s.push_str(&table_row("overall", &r.overall));
    for (k, v) in &r.by_source {
        s.push_str(&table_row(&format!("source:{k}"), v));
    }
    for (k, v) in &r.by_family {
        s.push_str(&table_row(&format!("family:{k}"), v));
    }
    s.push_str(&format!(
        "\n{} prediction lines; {} rows without a prediction (counted as misses); {} unknown ids; {} duplicate ids\n\
         exact = structured next-action match over {} tool-call turns; text = exact, text~ = normalized match over {} text-only turns\n",
        r.predictions, r.overall.missing, r.unknown_ids, r.duplicate_ids, r.overall.action_turns, r.overall.text_turns
    ));
    s
}
