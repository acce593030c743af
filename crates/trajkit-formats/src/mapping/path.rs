//! Field paths of a mapping (`task.prompt`, `messages[0].content`, `attributes["gen_ai.system"]`):
//! parsed once, then used to take values out of each record, naming the exact place where a
//! record does not fit.

use serde_json::{Map, Value};

use crate::rejection::{schema, Problem};

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// A parsed field path, relative to the value it is applied to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    segments: Vec<Segment>,
}

impl FieldPath {
    /// Parses `a.b[2]["c.d"]`; a leading `$` or `$.` is allowed. Keys are any characters but
    /// `.`, `[`, `]` and `"`; other keys go in `["..."]` (with `\"` and `\\` escapes).
    pub fn parse(text: &str) -> Result<FieldPath, String> {
        let body = text.strip_prefix('$').unwrap_or(text);
        let body = body.strip_prefix('.').unwrap_or(body);
        let mut segments = Vec::new();
        let mut chars = body.chars().peekable();
        while let Some(&c) = chars.peek() {
            match c {
                '.' => {
                    chars.next();
                    if matches!(chars.peek(), None | Some('.') | Some('[')) {
                        return Err(format!("path {text:?}: empty key after '.'"));
                    }
                }
                '[' => {
                    chars.next();
                    segments.push(bracket(&mut chars).map_err(|e| format!("path {text:?}: {e}"))?);
                }
                _ => {
                    let mut key = String::new();
                    while let Some(&k) = chars.peek() {
                        if matches!(k, '.' | '[' | ']' | '"') {
                            break;
                        }
                        key.push(k);
                        chars.next();
                    }
                    if key.is_empty() {
                        return Err(format!("path {text:?}: unexpected {c:?}"));
                    }
                    segments.push(Segment::Key(key));
                }
            }
        }
        if segments.is_empty() {
            return Err(format!("path {text:?} names no field"));
        }
        Ok(FieldPath { text: text.to_string(), segments })
    }

    /// The path as the mapping wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Removes and returns the value at this path under `map` (a `null` or missing leaf is
    /// `None` and stays). `at` is where `map` sits in the record (`$`, `$.messages[3]`).
    /// Passing through a value of the wrong type is a problem naming the place.
    pub fn take(&self, map: &mut Map<String, Value>, at: &str) -> Result<Option<Value>, Problem> {
        let (last, parents) = match self.segments.split_last() {
            Some(split) => split,
            None => return Ok(None),
        };
        let mut here = at.to_string();
        let mut node: &mut Value = match parents.first() {
            None => return Ok(take_leaf_of_map(map, last)),
            Some(Segment::Key(k)) => match map.get_mut(k) {
                None | Some(Value::Null) => return Ok(None),
                Some(v) => {
                    here = key_path(&here, k);
                    v
                }
            },
            Some(Segment::Index(_)) => return Err(self.mismatch(at, "an object", "an array index")),
        };
        for seg in &parents[1..] {
            node = match step(node, seg) {
                Step::Found(next) => {
                    here = seg_path(&here, seg);
                    next
                }
                Step::Missing => return Ok(None),
                Step::WrongType(found) => return Err(self.mismatch(&here, expected(seg), found)),
            };
        }
        match (node, last) {
            (Value::Object(m), seg @ Segment::Key(_)) => Ok(take_leaf_of_map(m, seg)),
            (Value::Array(items), Segment::Index(i)) => Ok(items.get(*i).filter(|v| !v.is_null()).cloned()),
            (other, seg) => Err(self.mismatch(&here, expected(seg), type_name(other))),
        }
    }

    /// The problem of a record whose value at `place` is not what the path needs.
    fn mismatch(&self, place: &str, wanted: &str, found: &str) -> Problem {
        schema(place, format!("mapping path `{}` needs {wanted} at {place}, found {found}", self.text))
    }

    /// Where this path points when applied at `at` (for messages naming a field).
    pub fn place(&self, at: &str) -> String {
        self.segments.iter().fold(at.to_string(), |acc, s| seg_path(&acc, s))
    }
}

/// A `[N]` or `["key"]` segment, after its `[`.
fn bracket(chars: &mut std::iter::Peekable<std::str::Chars>) -> Result<Segment, String> {
    if chars.peek() == Some(&'"') {
        chars.next();
        let mut key = String::new();
        loop {
            match chars.next() {
                Some('\\') => key.push(chars.next().ok_or("unterminated escape")?),
                Some('"') => break,
                Some(c) => key.push(c),
                None => return Err("unterminated quoted key".into()),
            }
        }
        return match chars.next() {
            Some(']') => Ok(Segment::Key(key)),
            _ => Err("expected ']' after a quoted key".into()),
        };
    }
    let mut digits = String::new();
    for c in chars.by_ref() {
        if c == ']' {
            return digits.parse().map(Segment::Index).map_err(|_| format!("[{digits}] is not an index"));
        }
        digits.push(c);
    }
    Err("unterminated '['".into())
}

enum Step<'a> {
    Found(&'a mut Value),
    Missing,
    WrongType(&'static str),
}

/// One step down from `node`.
fn step<'a>(node: &'a mut Value, seg: &Segment) -> Step<'a> {
    match (node, seg) {
        (Value::Object(m), Segment::Key(k)) => match m.get_mut(k) {
            None | Some(Value::Null) => Step::Missing,
            Some(v) => Step::Found(v),
        },
        (Value::Array(items), Segment::Index(i)) => match items.get_mut(*i) {
            None | Some(Value::Null) => Step::Missing,
            Some(v) => Step::Found(v),
        },
        (other, _) => Step::WrongType(type_name(other)),
    }
}

/// Takes a leaf out of an object (a key is removed; `null` stays, as `json::take` does).
fn take_leaf_of_map(map: &mut Map<String, Value>, seg: &Segment) -> Option<Value> {
    match seg {
        Segment::Key(k) => crate::json::take(map, k),
        Segment::Index(_) => None,
    }
}

fn expected(seg: &Segment) -> &'static str {
    match seg {
        Segment::Key(_) => "an object",
        Segment::Index(_) => "an array",
    }
}

/// JSON type names for messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn key_path(base: &str, key: &str) -> String {
    if key.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
        format!("{base}.{key}")
    } else {
        format!("{base}[{}]", Value::String(key.to_string()))
    }
}

fn seg_path(base: &str, seg: &Segment) -> String {
    match seg {
        Segment::Key(k) => key_path(base, k),
        Segment::Index(i) => crate::json::idx(base, *i),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn paths_parse_keys_indexes_and_quoted_keys() {
        let p = FieldPath::parse(r#"$.a.b[2]["gen_ai.system"]"#).unwrap();
        assert_eq!(
            p.segments,
            [
                Segment::Key("a".into()),
                Segment::Key("b".into()),
                Segment::Index(2),
                Segment::Key("gen_ai.system".into())
            ]
        );
        assert!(FieldPath::parse("").is_err());
        assert!(FieldPath::parse("a..b").is_err());
        assert!(FieldPath::parse("a[x]").is_err());
        assert!(FieldPath::parse("a[\"b").is_err());
    }

    #[test]
    fn take_removes_the_leaf_and_leaves_the_rest() {
        let mut m = obj(json!({"task": {"prompt": "fix it", "repo": "x"}, "n": null}));
        let p = FieldPath::parse("task.prompt").unwrap();
        assert_eq!(p.take(&mut m, "$").unwrap(), Some(json!("fix it")));
        assert_eq!(Value::Object(m.clone()), json!({"task": {"repo": "x"}, "n": null}));
        assert_eq!(FieldPath::parse("n").unwrap().take(&mut m, "$").unwrap(), None);
        assert_eq!(FieldPath::parse("task.missing.deeper").unwrap().take(&mut m, "$").unwrap(), None);
    }

    #[test]
    fn a_value_of_the_wrong_type_names_path_and_place() {
        let mut m = obj(json!({"task": {"prompt": "fix it"}}));
        let p = FieldPath::parse("task.prompt.text").unwrap();
        let e = p.take(&mut m, "$.rows[3]").unwrap_err();
        assert_eq!(e.json_path, "$.rows[3].task.prompt");
        assert_eq!(
            e.message,
            "mapping path `task.prompt.text` needs an object at $.rows[3].task.prompt, found a string"
        );
    }
}
