//! Optional chat-template rendering (`--chat-template tokenizer_config.json`): the model's
//! Jinja template run by minijinja with the Python-compatibility methods, `raise_exception`,
//! `strftime_now` and a `tojson` that writes what Python's `json.dumps` writes, as
//! Hugging Face transformers does. Each row gets the rendered `text`. Token counts and an
//! assistant-token mask need a tokenizer and are not computed (see docs/export.md).

use std::path::Path;

use minijinja::value::{Kwargs, Serde};
use minijinja::{Environment, Error, ErrorKind, Value as JValue};
use serde_json::{json, Map, Value};
use trajkit_model::time::{civil_from_days, days_from_civil};

use crate::error::ExportError;
use crate::rows::{Body, ExportRow};
use crate::views::Message;

/// A loaded chat template.
pub struct ChatTemplate {
    /// The file it came from (recorded in the card).
    pub label: String,
    env: Environment<'static>,
    bos: String,
    eos: String,
}

/// `bos_token` / `eos_token`: a string, or an added-token object with `content`.
fn token(cfg: &Value, key: &str) -> String {
    match cfg.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o.get("content").and_then(Value::as_str).unwrap_or_default().to_string(),
        _ => String::new(),
    }
}

/// The template source: a string, or the `default` (else first) of a list of named templates.
fn template_source(cfg: &Value) -> Option<String> {
    match cfg.get("chat_template")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(list) => {
            let named = |n: &str| list.iter().find(|t| t.get("name").and_then(Value::as_str) == Some(n));
            named("default")
                .or_else(|| list.first())
                .and_then(|t| t.get("template"))
                .and_then(Value::as_str)
                .map(String::from)
        }
        _ => None,
    }
}

impl ChatTemplate {
    /// Loads `tokenizer_config.json` (or any JSON file with a `chat_template`).
    pub fn load(path: &Path) -> Result<ChatTemplate, ExportError> {
        let bytes = std::fs::read(path).map_err(ExportError::io(path))?;
        let cfg: Value = serde_json::from_slice(&bytes).map_err(|e| ExportError::Input {
            path: path.to_path_buf(),
            line: e.line() as u64,
            message: e.to_string(),
        })?;
        let source = template_source(&cfg).ok_or_else(|| ExportError::Input {
            path: path.to_path_buf(),
            line: 1,
            message: "$.chat_template: missing (a string or a list of {name, template})".into(),
        })?;
        let env = environment(source).map_err(|e| ExportError::Input {
            path: path.to_path_buf(),
            line: e.line().unwrap_or(1) as u64,
            message: format!("$.chat_template: {e}"),
        })?;
        Ok(ChatTemplate {
            label: path.display().to_string(),
            env,
            bos: token(&cfg, "bos_token"),
            eos: token(&cfg, "eos_token"),
        })
    }

    /// Renders a conversation (`add_generation_prompt` false).
    pub fn render(&self, messages: &[Value], tools: &[Value]) -> Result<String, String> {
        let tpl = self.env.get_template("chat").map_err(|e| e.to_string())?;
        let mut ctx = Map::new();
        ctx.insert("messages".into(), Value::Array(messages.to_vec()));
        ctx.insert("bos_token".into(), Value::String(self.bos.clone()));
        ctx.insert("eos_token".into(), Value::String(self.eos.clone()));
        ctx.insert("add_generation_prompt".into(), Value::Bool(false));
        if !tools.is_empty() {
            ctx.insert("tools".into(), Value::Array(tools.to_vec()));
        }
        let ctx = JValue::from(Serde(Value::Object(ctx)));
        tpl.render(ctx).map_err(|e| format!("chat template: {e:#}"))
    }

    /// Renders a row: the full conversation, or prompt followed by the completion.
    pub fn render_row(&self, r: &ExportRow) -> Result<String, String> {
        let messages: Vec<Value> = match &r.body {
            Body::Full { messages } => messages.iter().map(template_message).collect(),
            Body::Turn { prompt, completion } => {
                prompt.iter().chain(std::iter::once(completion)).map(template_message).collect()
            }
        };
        self.render(&messages, &r.tools)
    }
}

/// A message as transformers passes it to templates: tool-call arguments as objects.
fn template_message(m: &Message) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), Value::String(m.role.as_str().into()));
    o.insert("content".into(), Value::String(m.content.clone()));
    if let Some(r) = &m.reasoning {
        o.insert("reasoning_content".into(), Value::String(r.clone()));
    }
    if !m.tool_calls.is_empty() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_value()}})
            })
            .collect();
        o.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        o.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    Value::Object(o)
}

fn environment(source: String) -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build()?;
    env.set_syntax(syntax);
    minijinja_contrib::add_to_environment(&mut env);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", raise_exception);
    env.add_function("strftime_now", strftime_now);
    env.add_filter("tojson", tojson);
    env.add_template_owned("chat", source)?;
    Ok(env)
}

fn raise_exception(message: String) -> Result<JValue, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// Python's `json.dumps(value, ensure_ascii=False, indent=indent)`: `", "` and `": "`
/// separators without indent, `","` with; non-ASCII written as is.
fn tojson(value: JValue, kwargs: Kwargs) -> Result<JValue, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    kwargs.assert_all_used()?;
    let v: Value = serde_json::to_value(&value).map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let mut out = String::new();
    py_json(&v, indent, 0, &mut out);
    Ok(JValue::from_safe_string(out))
}

fn py_json(v: &Value, indent: Option<usize>, depth: usize, out: &mut String) {
    let newline = |out: &mut String, d: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * d));
        }
    };
    let sep = if indent.is_some() { "," } else { ", " };
    match v {
        Value::Array(a) if !a.is_empty() => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                newline(out, depth + 1);
                py_json(x, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Object(m) if !m.is_empty() => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                newline(out, depth + 1);
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                py_json(x, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `strftime_now(format)`: the current UTC time, for the directives templates use
/// (`%Y %m %d %H %M %S %y %b %B %A %a %j %%`).
fn strftime_now(format: String) -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    strftime(&format, secs)
}

/// Formats a Unix time (UTC) with a subset of C's strftime.
pub fn strftime(format: &str, secs: u64) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = ["Thursday", "Friday", "Saturday", "Sunday", "Monday", "Tuesday", "Wednesday"];
    let days = secs / 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    let yday = days as i64 - days_from_civil(y, 1, 1) + 1;
    let (hh, mm, ss) = ((secs % 86_400) / 3600, (secs % 3600) / 60, secs % 60);
    let month = MONTHS[(m - 1) as usize];
    let weekday = DAYS[(days % 7) as usize];
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&y.to_string()),
            Some('y') => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('H') => out.push_str(&format!("{hh:02}")),
            Some('M') => out.push_str(&format!("{mm:02}")),
            Some('S') => out.push_str(&format!("{ss:02}")),
            Some('j') => out.push_str(&format!("{yday:03}")),
            Some('B') => out.push_str(month),
            Some('b') => out.push_str(&month[..3]),
            Some('A') => out.push_str(weekday),
            Some('a') => out.push_str(&weekday[..3]),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strftime_formats_known_instants() {
        // 2024-02-29T13:05:09Z is 1709211909 (a Thursday, day 60 of a leap year).
        assert_eq!(strftime("%d %b %Y", 1_709_211_909), "29 Feb 2024");
        assert_eq!(strftime("%Y-%m-%dT%H:%M:%S %A %j %%", 1_709_211_909), "2024-02-29T13:05:09 Thursday 060 %");
        assert_eq!(strftime("%B %y %a", 0), "January 70 Thu");
    }

    #[test]
    fn tojson_matches_python_json_dumps() {
        let v = json!({"b": [1, 2.5, "é<"], "a": {}});
        let mut s = String::new();
        py_json(&v, None, 0, &mut s);
        assert_eq!(s, r#"{"a": {}, "b": [1, 2.5, "é<"]}"#);
        let mut s = String::new();
        py_json(&json!({"a": [1]}), Some(2), 0, &mut s);
        assert_eq!(s, "{\n  \"a\": [\n    1\n  ]\n}");
    }
}
