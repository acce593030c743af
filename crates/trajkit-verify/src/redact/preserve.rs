//! Format-preserving redaction: rewrites JSON text (one document, pretty or not, or JSON
//! Lines) replacing only the bytes of secrets inside string values, so a publisher's raw
//! files keep their format and every byte outside a replaced secret (docs/redaction.md).

use std::io::{self, BufRead, Write};

use super::{json_path, Finding, RedactionReport, Redactor, Seg, Span};
use trajkit_model::json_text::unescape;

/// Where the scanner is in the JSON nesting.
enum Frame {
    /// Inside an object: the last key read, and whether the next string is a key.
    Object { key: Option<String>, expect_key: bool },
    /// Inside an array: the index of the current item.
    Array { index: usize },
}

/// Scanner state carried from line to line (JSON strings never span lines; values do).
struct Scan {
    stack: Vec<Frame>,
    line: u64,
    findings: Vec<Finding>,
    replacements: u64,
}

/// A JSON string's decoded text and, for each decoded byte (plus one past the end), the
/// offset in the raw token of the character or escape that produced it.
struct Decoded {
    text: String,
    raw_at: Vec<usize>,
}

impl Redactor {
    /// Copies JSON text from `input` to `output`, replacing each secret inside a string
    /// value by its placeholder; object keys, numbers, whitespace, escapes of the rest of the
    /// string and bytes that are not JSON are written unchanged. `file` names the findings.
    /// Returns the number of replacements; findings go to `report` (one record per file).
    pub fn redact_json_text(
        &mut self,
        file: &str,
        mut input: impl BufRead,
        mut output: impl Write,
        report: &mut RedactionReport,
    ) -> io::Result<u64> {
        let mut scan = Scan { stack: Vec::new(), line: 0, findings: Vec::new(), replacements: 0 };
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            scan.line += 1;
            out.clear();
            self.redact_line(&line, &mut scan, file, &mut out);
            output.write_all(&out)?;
        }
        report.records += 1;
        if scan.replacements > 0 {
            report.records_redacted += 1;
            report.replacements += scan.replacements;
            for f in &scan.findings {
                report.kinds.entry(f.kind.clone()).or_default().replacements += f.count;
            }
            for (kind, total) in report.kinds.iter_mut() {
                total.distinct = self.counters.get(kind).copied().unwrap_or(0);
            }
            report.findings.append(&mut scan.findings);
        }
        Ok(scan.replacements)
    }

    /// Scans one line, appending it to `out` with the secrets of its string values replaced.
    fn redact_line(&mut self, line: &[u8], scan: &mut Scan, file: &str, out: &mut Vec<u8>) {
        let mut i = 0;
        while i < line.len() {
            match line[i] {
                b'"' => {
                    let Some(end) = string_end(line, i + 1) else {
                        // An unterminated string: not JSON, kept as it is.
                        out.extend_from_slice(&line[i..]);
                        return;
                    };
                    self.string_token(&line[i..=end], scan, file, out);
                    i = end + 1;
                    continue;
                }
                b'{' => scan.stack.push(Frame::Object { key: None, expect_key: true }),
                b'[' => scan.stack.push(Frame::Array { index: 0 }),
                b'}' | b']' => {
                    scan.stack.pop();
                }
                b',' => match scan.stack.last_mut() {
                    Some(Frame::Object { key, expect_key }) => {
                        *key = None;
                        *expect_key = true;
                    }
                    Some(Frame::Array { index }) => *index += 1,
                    None => {}
                },
                _ => {}
            }
            out.push(line[i]);
            i += 1;
        }
    }

    /// Handles one string token (quotes included): a key is remembered, a value redacted.
    fn string_token(&mut self, token: &[u8], scan: &mut Scan, file: &str, out: &mut Vec<u8>) {
        if let Some(Frame::Object { key, expect_key: expect @ true }) = scan.stack.last_mut() {
            *expect = false;
            *key = decode(&token[1..token.len() - 1]).map(|d| d.text);
            out.extend_from_slice(token);
            return;
        }
        let raw = &token[1..token.len() - 1];
        let Some(decoded) = decode(raw) else {
            out.extend_from_slice(token);
            return;
        };
        let key = match scan.stack.last() {
            Some(Frame::Object { key, .. }) => key.as_deref(),
            _ => None,
        };
        let field_kind = key.and_then(|k| self.rules.field_kind(k)).map(str::to_string);
        let spans = self.find(&decoded.text, field_kind.as_deref());
        if spans.is_empty() {
            out.extend_from_slice(token);
            return;
        }
        out.push(b'"');
        let mut at = 0;
        let mut placeholders = Vec::with_capacity(spans.len());
        for span in &spans {
            let (start, end) = (decoded.raw_at[span.start], decoded.raw_at[span.end]);
            let placeholder = self.placeholder(&decoded.text[span.start..span.end], &span.kind);
            out.extend_from_slice(&raw[at..start]);
            // Placeholders are `[REDACTED:<kind>:<n>]` with kind in [a-z0-9_]: no escaping.
            out.extend_from_slice(placeholder.as_bytes());
            placeholders.push(placeholder);
            at = end;
        }
        out.extend_from_slice(&raw[at..]);
        out.push(b'"');
        scan.note(file, &spans, placeholders);
    }
}

impl Scan {
    /// The JSON path of the current value inside its top-level value.
    fn path(&self) -> String {
        let segs: Vec<Seg> = self
            .stack
            .iter()
            .map(|f| match f {
                Frame::Object { key, .. } => Seg::Key(key.clone().unwrap_or_default()),
                Frame::Array { index } => Seg::Index(*index),
            })
            .collect();
        json_path(&segs)
    }

    /// Adds the replacements of one string to the findings (one per line, field and kind).
    fn note(&mut self, file: &str, spans: &[Span], placeholders: Vec<String>) {
        let field = self.path();
        for (span, placeholder) in spans.iter().zip(placeholders) {
            self.replacements += 1;
            let line = Some(self.line);
            let at = self.findings.iter().position(|f| f.line == line && f.field == field && f.kind == span.kind);
            let at = at.unwrap_or_else(|| {
                self.findings.push(Finding {
                    file: file.to_string(),
                    line,
                    document_index: None,
                    record: String::new(),
                    field: field.clone(),
                    kind: span.kind.clone(),
                    count: 0,
                    placeholders: Vec::new(),
                });
                self.findings.len() - 1
            });
            let f = &mut self.findings[at];
            f.count += 1;
            if !f.placeholders.contains(&placeholder) {
                f.placeholders.push(placeholder);
            }
        }
    }
}

/// Index of the closing quote of a string whose content starts at `from`, if on this line.
fn string_end(line: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Decodes a JSON string's raw content (without quotes); `None` when it is not valid JSON
/// string content (bad escape, lone surrogate, invalid UTF-8): such a string is kept as is.
fn decode(raw: &[u8]) -> Option<Decoded> {
    let mut text = String::with_capacity(raw.len());
    let mut raw_at = Vec::with_capacity(raw.len() + 1);
    let mut i = 0;
    while i < raw.len() {
        let start = i;
        let c = if raw[i] == b'\\' {
            let (c, len) = unescape(raw, i)?;
            i += len;
            c
        } else {
            let len = utf8_len(raw[i]);
            let c = std::str::from_utf8(raw.get(i..i + len)?).ok()?.chars().next()?;
            i += len;
            c
        };
        text.push(c);
        raw_at.resize(text.len(), start);
    }
    raw_at.push(raw.len());
    Some(Decoded { text, raw_at })
}

/// Length of the UTF-8 sequence a lead byte starts (1 for a stray byte, which then fails).
fn utf8_len(b: u8) -> usize {
    match b {
        0xF0..=0xF7 => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Rules;

    fn run(text: &str) -> (String, RedactionReport) {
        let mut r = Redactor::new(Rules::builtin());
        let mut report = RedactionReport::default();
        let mut out = Vec::new();
        r.redact_json_text("f.jsonl", text.as_bytes(), &mut out, &mut report).expect("in memory");
        (String::from_utf8(out).expect("utf8"), report)
    }

    #[test]
    fn replaces_only_the_secret_bytes_and_keeps_escapes() {
        // Synthetic: escapes around and inside a secret-bearing string (no real file has one).
        let key = "ghp_".to_string() + &"aB3".repeat(12);
        let text =
            format!("{{\"a\": \"caf\\u00e9 \\/ {key}\\n\",  \"n\":1}}\n[\"x\", {{\"password\" : \"Tr0ub4dor&3\"}}]\n");
        let (out, report) = run(&text);
        assert_eq!(
            out,
            "{\"a\": \"caf\\u00e9 \\/ [REDACTED:github_token:1]\\n\",  \"n\":1}\n\
             [\"x\", {\"password\" : \"[REDACTED:password:1]\"}]\n"
        );
        assert_eq!(report.replacements, 2);
        let fields: Vec<(Option<u64>, &str)> = report.findings.iter().map(|f| (f.line, f.field.as_str())).collect();
        assert_eq!(fields, [(Some(1), "$.a"), (Some(2), "$[1].password")]);
    }

    #[test]
    fn keys_and_invalid_strings_are_left_alone() {
        // Synthetic: a secret as an object key, a bad escape and an unterminated string.
        let key = "sk-proj-".to_string() + &"Ab1".repeat(10);
        let text = format!("{{\"{key}\": 1, \"b\": \"\\q {key}\", \"c\": \"{key}\n");
        let (out, report) = run(&text);
        assert_eq!(out, text);
        assert_eq!(report.replacements, 0);
    }

    #[test]
    fn escaped_secret_is_replaced_whole() {
        // Synthetic: a secret written with \u escapes maps back onto its raw bytes.
        let (out, _) = run("{\"t\": \"x \\u0067hp_aB3aB3aB3aB3aB3aB3aB3aB3aB3aB3aB3aB3 y\"}");
        assert_eq!(out, "{\"t\": \"x [REDACTED:github_token:1] y\"}");
    }
}
