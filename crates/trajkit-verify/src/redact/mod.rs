//! Secret redaction of canonical records: credentials are replaced by consistent
//! placeholders (`[REDACTED:openai_key:1]`): the same secret gets the same placeholder in
//! every record a [`Redactor`] sees, so the structure of actions (and ids that happen to
//! contain a secret) stays linked. The report says what kind was replaced where and how
//! often, never the secret. Rules and guarantees: docs/redaction.md.

mod preserve;
pub mod rules;

use std::collections::{BTreeMap, HashMap, HashSet};

use aho_corasick::{AhoCorasick, MatchKind};
use regex::RegexSet;
use serde::Serialize;
use serde_json::Value;
use trajkit_model::Trajectory;

pub use rules::{Rules, RulesError};

/// Shortest secret that, once found, is also replaced wherever else it occurs as plain text.
pub const MIN_PROPAGATE: usize = 6;

/// Kind of the secrets a user lists (`--secrets`).
pub const LITERAL_KIND: &str = "literal";

/// A record that could not be redacted (its JSON form did not round-trip).
#[derive(Debug, thiserror::Error)]
#[error("{location}: cannot redact record {id}: {source}")]
pub struct RedactError {
    pub location: String,
    pub id: String,
    pub source: serde_json::Error,
}

/// One field of one record in which secrets of one kind were replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The record's source file (`provenance.path`).
    pub file: String,
    /// 1-based line of the record in its source, when a JSON Lines record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// 0-based document index, when a document record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_index: Option<u64>,
    /// The record's id.
    pub record: String,
    /// JSON path of the field inside the canonical record (`$.steps[3].content`).
    pub field: String,
    /// Kind of secret (`openai_key`, `password`, `literal`, ...).
    pub kind: String,
    /// Replacements made in this field.
    pub count: u64,
    /// The placeholders written (never the secrets).
    pub placeholders: Vec<String>,
}

/// Totals for one kind of secret.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KindTotal {
    /// Replacements made.
    pub replacements: u64,
    /// Distinct secrets (= distinct placeholders) of this kind.
    pub distinct: u64,
}

/// What a redaction run replaced, where and how often; never a secret.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RedactionReport {
    /// Records seen.
    pub records: u64,
    /// Records in which at least one secret was replaced.
    pub records_redacted: u64,
    /// Replacements in all.
    pub replacements: u64,
    /// Totals per kind.
    pub kinds: BTreeMap<String, KindTotal>,
    /// Per field of each record.
    pub findings: Vec<Finding>,
}

/// Where in a JSON value the walk is.
#[derive(Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

fn json_path(segs: &[Seg]) -> String {
    let mut out = String::from("$");
    for s in segs {
        match s {
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Key(k) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Key(k) => out.push_str(&format!("[{}]", serde_json::Value::String(k.clone()))),
        }
    }
    out
}

/// A secret found in a string: its byte range and kind.
#[derive(Debug, Clone)]
struct Span {
    start: usize,
    end: usize,
    kind: String,
}

/// Replaces secrets in canonical records. Keep one redactor for a whole run: it holds the
/// secret → placeholder table (in memory only) that makes placeholders consistent.
pub struct Redactor {
    rules: Rules,
    set: RegexSet,
    /// User literals and every secret found so far of at least `MIN_PROPAGATE` chars.
    known: Vec<String>,
    known_set: HashSet<String>,
    matcher: Option<AhoCorasick>,
    matcher_stale: bool,
    /// secret -> (kind, placeholder); in memory only.
    placeholders: HashMap<String, (String, String)>,
    counters: BTreeMap<String, u64>,
}

/// Per-record state of a walk.
struct Walk<'a> {
    findings: Vec<Finding>,
    template: &'a Finding,
    learned: bool,
}

impl Redactor {
    /// A redactor running `rules`.
    pub fn new(rules: Rules) -> Redactor {
        // The patterns were compiled individually already, so the set compiles too.
        let set = RegexSet::new(rules.detectors.iter().map(|d| d.regex.as_str())).unwrap_or_else(|_| RegexSet::empty());
        let mut r = Redactor {
            set,
            known: Vec::new(),
            known_set: HashSet::new(),
            matcher: None,
            matcher_stale: true,
            placeholders: HashMap::new(),
            counters: BTreeMap::new(),
            rules,
        };
        for lit in r.rules.literals.clone() {
            r.learn(&lit);
        }
        r
    }

    /// Redacts `t` in place (every string of the record, nested subagents included; object
    /// keys and numbers are left alone), reseals its content digest and adds what was
    /// replaced to `report`. Returns the number of replacements.
    pub fn redact_trajectory(&mut self, t: &mut Trajectory, report: &mut RedactionReport) -> Result<u64, RedactError> {
        let template = Finding {
            file: t.provenance.path.clone(),
            line: t.provenance.line,
            document_index: t.provenance.document_index,
            record: t.id.clone(),
            field: String::new(),
            kind: String::new(),
            count: 0,
            placeholders: Vec::new(),
        };
        let fail = |source| RedactError { location: location(&template), id: template.record.clone(), source };
        let mut value = serde_json::to_value(&*t).map_err(fail)?;
        let mut walk = Walk { findings: Vec::new(), template: &template, learned: false };
        self.walk(&mut value, &mut Vec::new(), None, &mut walk);
        if walk.learned {
            // A secret found late in the record may also occur earlier in it as plain text.
            walk.learned = false;
            self.walk(&mut value, &mut Vec::new(), None, &mut walk);
        }
        report.records += 1;
        if walk.findings.is_empty() {
            return Ok(0);
        }
        let mut redacted: Trajectory = serde_json::from_value(value).map_err(fail)?;
        trajkit_model::seal(&mut redacted).map_err(fail)?;
        *t = redacted;
        let n: u64 = walk.findings.iter().map(|f| f.count).sum();
        report.records_redacted += 1;
        report.replacements += n;
        for f in &walk.findings {
            report.kinds.entry(f.kind.clone()).or_default().replacements += f.count;
        }
        for (kind, total) in report.kinds.iter_mut() {
            total.distinct = self.counters.get(kind).copied().unwrap_or(0);
        }
        report.findings.append(&mut walk.findings);
        Ok(n)
    }

    /// Redacts one text: the redacted text (when anything was replaced) and the kinds replaced.
    pub fn redact_text(&mut self, text: &str) -> Option<(String, Vec<String>)> {
        let spans = self.find(text, None);
        if spans.is_empty() {
            return None;
        }
        let kinds = spans.iter().map(|s| s.kind.clone()).collect();
        Some((self.replace(text, &spans).0, kinds))
    }

    /// Where the secrets of `text` are (byte ranges and kinds), without replacing anything
    /// or numbering them: for highlighting, and for measuring the detectors.
    pub fn scan(&mut self, text: &str) -> Vec<(std::ops::Range<usize>, String)> {
        self.find(text, None).into_iter().map(|s| (s.start..s.end, s.kind)).collect()
    }

    fn walk(&mut self, v: &mut Value, path: &mut Vec<Seg>, key: Option<&str>, w: &mut Walk) {
        match v {
            Value::String(s) => {
                let field_kind = key.and_then(|k| self.rules.field_kind(k)).map(str::to_string);
                let spans = self.find(s, field_kind.as_deref());
                if !spans.is_empty() {
                    let learned_before = self.known.len();
                    let (new, placeholders) = self.replace(s, &spans);
                    w.learned |= self.known.len() > learned_before;
                    note(w, path, &spans, placeholders);
                    *s = new;
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    path.push(Seg::Index(i));
                    self.walk(item, path, None, w);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    path.push(Seg::Key(k.clone()));
                    self.walk(item, path, Some(k), w);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    /// Every secret in `text`: known secrets first (literals and those found before), then
    /// detectors in priority order, then — when nothing else matched — the whole value of a
    /// secret-bearing key. Spans never overlap.
    fn find(&mut self, text: &str, field_kind: Option<&str>) -> Vec<Span> {
        // Placeholders already in the text are held as spans so that nothing overlapping one
        // is taken for a secret (a key-value detector would otherwise match the placeholder a
        // first pass wrote, and a second pass would count one secret twice); dropped at the end.
        let mut spans: Vec<Span> = placeholder_spans(text);
        let held = spans.len();
        self.find_known(text, &mut spans);
        if self.set.is_match(text) {
            for i in self.set.matches(text).iter() {
                let d = &self.rules.detectors[i];
                for caps in d.regex.captures_iter(text) {
                    let m = (1..caps.len()).find_map(|g| caps.get(g)).or_else(|| caps.get(0));
                    let Some(m) = m else { continue };
                    let end = query_end(text, m.start(), sentence_end(text, m.start(), m.end()));
                    let secret = &text[m.start()..end];
                    if secret.is_empty() || !d.check.accepts(secret) {
                        continue;
                    }
                    push_free(&mut spans, Span { start: m.start(), end, kind: d.kind.clone() });
                }
            }
        }
        if spans.is_empty() {
            if let Some(kind) = field_kind {
                if !rules::looks_like_reference(text) {
                    spans.push(Span { start: 0, end: text.len(), kind: kind.to_string() });
                }
            }
        }
        spans.drain(..held);
        spans.sort_by_key(|s| s.start);
        spans
    }

    fn find_known(&mut self, text: &str, spans: &mut Vec<Span>) {
        if self.known.is_empty() {
            return;
        }
        if self.matcher_stale {
            self.matcher = AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&self.known).ok();
            self.matcher_stale = false;
        }
        let Some(matcher) = &self.matcher else { return };
        for m in matcher.find_iter(text) {
            let secret = &self.known[m.pattern().as_usize()];
            let kind = self.placeholders.get(secret).map_or(LITERAL_KIND, |(kind, _)| kind.as_str()).to_string();
            push_free(spans, Span { start: m.start(), end: m.end(), kind });
        }
    }

    /// Rewrites `text` with each span replaced by its secret's placeholder; returns the new
    /// text and the placeholder of each span.
    fn replace(&mut self, text: &str, spans: &[Span]) -> (String, Vec<String>) {
        let mut out = String::with_capacity(text.len());
        let mut used = Vec::with_capacity(spans.len());
        let mut at = 0;
        for span in spans {
            let placeholder = self.placeholder(&text[span.start..span.end], &span.kind);
            out.push_str(&text[at..span.start]);
            out.push_str(&placeholder);
            used.push(placeholder);
            at = span.end;
        }
        out.push_str(&text[at..]);
        (out, used)
    }

    /// The placeholder of a secret, numbering a new secret within its kind.
    fn placeholder(&mut self, secret: &str, kind: &str) -> String {
        if let Some((_, p)) = self.placeholders.get(secret) {
            return p.clone();
        }
        let n = self.counters.entry(kind.to_string()).or_insert(0);
        *n += 1;
        let p = format!("[REDACTED:{kind}:{n}]");
        self.placeholders.insert(secret.to_string(), (kind.to_string(), p.clone()));
        if secret.chars().count() >= MIN_PROPAGATE {
            self.learn(secret);
        }
        p
    }

    fn learn(&mut self, secret: &str) {
        if self.known_set.insert(secret.to_string()) {
            self.known.push(secret.to_string());
            self.matcher_stale = true;
        }
    }
}

/// Records the replacements of one string in the record's findings (one per field and kind).
fn note(w: &mut Walk, path: &[Seg], spans: &[Span], placeholders: Vec<String>) {
    let field = json_path(path);
    for (span, placeholder) in spans.iter().zip(placeholders) {
        let at = match w.findings.iter().position(|f| f.field == field && f.kind == span.kind) {
            Some(i) => i,
            None => {
                w.findings.push(Finding { field: field.clone(), kind: span.kind.clone(), ..w.template.clone() });
                w.findings.len() - 1
            }
        };
        let f = &mut w.findings[at];
        f.count += 1;
        if !f.placeholders.contains(&placeholder) {
            f.placeholders.push(placeholder);
        }
    }
}

/// The end of a secret without a sentence's closing period (`... is hunter2.` → `hunter2`).
fn sentence_end(text: &str, start: usize, end: usize) -> usize {
    let at_break = text[end..].chars().next().is_none_or(char::is_whitespace);
    if at_break && end > start + 1 && text[..end].ends_with('.') {
        end - 1
    } else {
        end
    }
}

/// The end of a secret before a following query parameter (`pw&user=x` → `pw`): URL
/// queries chain parameters with `&`, which passwords may also contain.
fn query_end(text: &str, start: usize, end: usize) -> usize {
    let value = &text[start..end];
    let mut from = 0;
    while let Some(i) = value[from..].find('&') {
        let at = from + i;
        let rest = &value[at + 1..];
        let name = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        if name > 0 && rest.as_bytes().get(name) == Some(&b'=') {
            return start + at;
        }
        from = at + 1;
    }
    end
}

/// Byte ranges of the placeholders (`[REDACTED:kind:n]`) in `text`.
fn placeholder_spans(text: &str) -> Vec<Span> {
    const OPEN: &str = "[REDACTED:";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(OPEN) {
        let start = from + i;
        let rest = &text[start + OPEN.len()..];
        let end = rest.find(']').filter(|&j| is_placeholder_body(&rest[..j]));
        match end {
            Some(j) => {
                let end = start + OPEN.len() + j + 1;
                out.push(Span { start, end, kind: String::new() });
                from = end;
            }
            None => from = start + OPEN.len(),
        }
    }
    out
}

/// `kind:n` with a rule-kind name and a number.
fn is_placeholder_body(body: &str) -> bool {
    let Some((kind, n)) = body.rsplit_once(':') else { return false };
    !kind.is_empty()
        && kind.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
}

/// Adds `span` unless it overlaps one already chosen (earlier rules win).
fn push_free(spans: &mut Vec<Span>, span: Span) {
    if spans.iter().all(|s| span.end <= s.start || span.start >= s.end) {
        spans.push(span);
    }
}

fn location(f: &Finding) -> String {
    match (f.line, f.document_index) {
        (Some(l), _) => format!("{}:{l}", f.file),
        (None, Some(d)) => format!("{}#{d}", f.file),
        (None, None) => f.file.clone(),
    }
}

#[cfg(test)]
mod tests;
