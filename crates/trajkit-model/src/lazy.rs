//! A JSON value that may still be its source text: parsed the first time it is read, and
//! written by the canonical writer straight from the text.
//!
//! A record's message content, tool arguments and tool output are most of its bytes, and
//! `inspect`, `validate` and `convert` never look inside them. Building a `Value` tree for
//! each and dropping it again was most of what was left of NeMo Gym's parse after `extra`
//! stopped doing it. Only text that `json_text` proves serde_json parses is kept, so reading
//! it cannot fail and gives the `Value` serde_json would have built.

use std::borrow::Cow;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, Serializer};
use serde_json::Value;

use crate::{compact, json_text, Extra};

/// A JSON value, kept as its source text until something reads it (`Deref` to `Value`).
/// Compares, hashes into digests and serializes exactly as the `Value` it stands for. As
/// small as a `Value` (what is not parsed yet is boxed), so records whose readers build
/// `Value`s pay nothing for it.
#[derive(Clone)]
pub struct LazyValue(Repr);

#[derive(Clone)]
enum Repr {
    /// A parsed value (also what a kept value becomes once changed through `DerefMut`).
    Value(Value),
    /// Source text that `json_text` accepted.
    Text(Box<Cell<Box<str>>>),
    /// An object whose members may still be text: what a reader leaves of an object it
    /// took apart (written member by member, never re-read as a whole). Behind an `Arc`,
    /// whose out-of-line drop keeps `Value`'s drop glue from recursing through `Extra`:
    /// with a `Box` here LLVM stopped inlining the drop of array elements, and dropping
    /// ATIF records' token arrays cost 3 % more instructions (`bench/instructions.sh`).
    Members(Arc<Cell<Extra>>),
}

/// What a value is held as, and the `Value` built from it on first read.
#[derive(Clone)]
struct Cell<T> {
    held: T,
    parsed: OnceLock<Value>,
    /// Text already in canonical form (`json_text::split_written`): written as it is.
    canonical: bool,
}

impl<T> Cell<T> {
    fn new(held: T) -> Box<Self> {
        Box::new(Cell { held, parsed: OnceLock::new(), canonical: false })
    }
}

impl LazyValue {
    /// The JSON value `text` (whitespace around it allowed), kept as text; `None` when the
    /// check refuses it (parse it instead, which also gives serde_json's error).
    pub fn from_text(text: &str) -> Option<Self> {
        json_text::value(text).map(|t| Self::from_checked(t.into()))
    }

    /// `from_text` that keeps the string's buffer; the string back when the check refuses it.
    pub fn from_string(text: String) -> Result<Self, String> {
        match json_text::value(&text) {
            Some(t) if t.len() == text.len() => Ok(Self::from_checked(text.into_boxed_str())),
            Some(t) => Ok(Self::from_checked(t.into())),
            None => Err(text),
        }
    }

    /// A flat array of plain JSON numbers (token ids, log probabilities) kept as text, with
    /// its length and whether all its elements are integers; `None` for any other text
    /// (the rule: `json_text::flat_numbers`).
    pub fn number_array(text: &str) -> Option<(Self, usize, bool)> {
        let (count, integers) = json_text::flat_numbers(text)?;
        let trimmed = text.trim_matches(|c| matches!(c, ' ' | '\n' | '\r' | '\t'));
        Some((Self::from_checked(trimmed.into()), count, integers))
    }

    /// Text that `json_text` accepted.
    pub(crate) fn from_checked(text: Box<str>) -> Self {
        LazyValue(Repr::Text(Cell::new(text)))
    }

    /// Text that `json_text` accepted and wrote in canonical form: the writer copies it.
    pub(crate) fn from_canonical(text: Box<str>) -> Self {
        LazyValue(Repr::Text(Box::new(Cell { held: text, parsed: OnceLock::new(), canonical: true })))
    }

    /// An object of `extra`'s members, those kept as text still text.
    pub(crate) fn from_members(extra: Extra) -> Self {
        LazyValue(Repr::Members(Arc::new(Cell { held: extra, parsed: OnceLock::new(), canonical: false })))
    }

    /// The value (built from the text or members on first read).
    pub fn value(&self) -> &Value {
        match &self.0 {
            Repr::Value(v) => v,
            Repr::Text(c) => c.parsed.get_or_init(|| parse(&c.held)),
            Repr::Members(c) => {
                c.parsed.get_or_init(|| Value::Object(c.held.iter().map(|(k, v)| (k.clone(), v.clone())).collect()))
            }
        }
    }

    /// The source text, while the value is still kept as text.
    pub fn text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Text(c) => Some(&c.held),
            _ => None,
        }
    }

    /// Whether the value is still held as text or members (not parsed into a `Value`).
    pub(crate) fn is_lazy(&self) -> bool {
        !matches!(self.0, Repr::Value(_))
    }

    /// The members, when this is an object held as members.
    pub(crate) fn into_members(self) -> Result<Extra, Self> {
        match self.0 {
            Repr::Members(c) => Ok(Arc::try_unwrap(c).map_or_else(|c| c.held.clone(), |c| c.held)),
            repr => Err(LazyValue(repr)),
        }
    }

    /// The value, parsed with `parse` if it is still text (a faster parser that builds the
    /// same `Value`, such as the token-array reader).
    pub fn into_value_with<E>(self, parse: impl FnOnce(&str) -> Result<Value, E>) -> Result<Value, E> {
        match self.0 {
            Repr::Value(v) => Ok(v),
            Repr::Text(c) => match c.parsed.into_inner() {
                Some(v) => Ok(v),
                None => parse(&c.held),
            },
            Repr::Members(c) => {
                let Cell { held, parsed, .. } = Arc::try_unwrap(c).unwrap_or_else(|c| (*c).clone());
                Ok(parsed.into_inner().unwrap_or_else(|| Value::from(held)))
            }
        }
    }

    /// Whether the value is `null`, without parsing text (shadows `Value::is_null`).
    pub fn is_null(&self) -> bool {
        match &self.0 {
            Repr::Value(v) => v.is_null(),
            Repr::Text(c) => &*c.held == "null",
            Repr::Members(_) => false,
        }
    }

    /// Whether the value is a string, without parsing text (shadows `Value::is_string`).
    pub fn is_string(&self) -> bool {
        match &self.0 {
            Repr::Value(v) => v.is_string(),
            Repr::Text(c) => c.held.starts_with('"'),
            Repr::Members(_) => false,
        }
    }

    /// Whether the value, as a step's content, says nothing: `null`, `""` or `[]`. Read from
    /// the text while it is text (scoring asks this of every step).
    pub fn content_is_empty(&self) -> bool {
        match &self.0 {
            Repr::Text(c) => match c.held.as_bytes().first() {
                Some(b'n') => true,
                Some(b'"') => c.held.len() == 2,
                Some(b'[') => c.held[1..].trim_start_matches([' ', '\n', '\r', '\t']).starts_with(']'),
                _ => false,
            },
            Repr::Members(_) => false,
            Repr::Value(v) => match v {
                Value::Null => true,
                Value::String(text) => text.is_empty(),
                Value::Array(items) => items.is_empty(),
                _ => false,
            },
        }
    }

    /// The bytes of text the value carries as a step's content: a string's (decoded), or
    /// for an array its strings' and its objects' `text` strings'; 0 for anything else.
    /// Read from the text while it is text (`build` measures every step's content).
    pub fn content_text_len(&self) -> u64 {
        match &self.0 {
            Repr::Text(c) => text_len_of_text(&c.held).unwrap_or_else(|| text_len_of_value(self.value())),
            Repr::Members(_) => 0,
            Repr::Value(v) => text_len_of_value(v),
        }
    }

    /// The value at `path` (member names) inside this one; the objects on the way that are
    /// still text are checked, not built (`Extra::get_path`).
    pub fn get_path(&self, path: &[&str]) -> Option<Cow<'_, Value>> {
        let Some(mut text) = self.text() else {
            return path.iter().try_fold(self.value(), |v, k| v.get(*k)).map(Cow::Borrowed);
        };
        for key in path {
            // serde_json keeps the last of a repeated name.
            text = json_text::object_members(text)?.into_iter().rev().find(|(name, _)| name == key)?.1;
        }
        Some(Cow::Owned(parse(text)))
    }

    /// A long string still held as text, read at its two ends without decoding the rest:
    /// its first character and the decoded text of its last `keep` to `2 * keep` source
    /// bytes. `None` for anything else (read `value()`): a truncation check needs only a
    /// tool output's two ends.
    pub fn string_ends(&self, keep: usize) -> Option<(char, String)> {
        json_text::string_ends(self.text()?, keep)
    }

    /// The text of a string, read from the source text while it is held as text (escapes
    /// decoded, no `Value` built); `None` when the value is not a string.
    pub fn string_text(&self) -> Option<Cow<'_, str>> {
        match self.text() {
            Some(text) => json_text::string_text(text),
            None => self.value().as_str().map(Cow::Borrowed),
        }
    }

    /// Calls `f` with each string in the value, depth first: elements in order, members by
    /// name (names left out), as a walk of `value()` meets them. Read from the text while it
    /// is text (`build` signs the content of every distinct run), without building a `Value`.
    pub fn for_each_string(&self, f: &mut dyn FnMut(&str)) {
        if let Some(text) = self.text() {
            if let Some(s) = json_text::string_text(text) {
                return f(&s);
            }
            let mut found = Vec::new();
            if json_text::strings(text, &mut found).is_some() {
                return found.iter().for_each(|s| f(s));
            }
        }
        value_strings(self.value(), f);
    }

    /// The elements of an array, each still text if this was; the value itself when it is
    /// not an array.
    pub fn into_array(self) -> Result<Vec<LazyValue>, Value> {
        if let Some(elements) = self.text().and_then(json_text::array_elements) {
            return Ok(elements.into_iter().map(|t| LazyValue::from_checked(t.into())).collect());
        }
        match self.into_value() {
            Value::Array(items) => Ok(items.into_iter().map(LazyValue::from).collect()),
            other => Err(other),
        }
    }

    /// Each of `values`, as parsed values (for record fields that hold a list of values
    /// some readers keep as text).
    pub fn from_values(values: Vec<Value>) -> Vec<LazyValue> {
        values.into_iter().map(LazyValue::from).collect()
    }

    /// The value, owned.
    pub fn into_value(self) -> Value {
        match self.into_value_with(|t| Ok::<_, std::convert::Infallible>(parse(t))) {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }
}

/// `LazyValue::for_each_string` of a parsed value (and the definition `json_text::strings`
/// is tested against).
pub(crate) fn value_strings(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| value_strings(x, f)),
        Value::Object(o) => o.values().for_each(|x| value_strings(x, f)),
        _ => {}
    }
}

/// `LazyValue::content_text_len` of checked text; `None` if the text were not what
/// `json_text` accepted (the caller parses it then).
fn text_len_of_text(text: &str) -> Option<u64> {
    let string_len = |t: &str| json_text::string_len(t).map(|n| n as u64);
    match text.as_bytes().first()? {
        b'"' => string_len(text),
        b'[' => json_text::array_elements(text)?.into_iter().try_fold(0, |sum, part| {
            let len = match part.as_bytes().first()? {
                b'"' => string_len(part)?,
                // serde_json keeps the last of a repeated name.
                b'{' => match json_text::object_members(part)?.into_iter().rev().find(|(name, _)| name == "text") {
                    Some((_, text)) if text.starts_with('"') => string_len(text)?,
                    _ => 0,
                },
                _ => 0,
            };
            Some(sum + len)
        }),
        _ => Some(0),
    }
}

/// `LazyValue::content_text_len` of a parsed value.
fn text_len_of_value(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.len() as u64,
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => s.len() as u64,
                Value::Object(o) => o.get("text").and_then(Value::as_str).map_or(0, |t| t.len() as u64),
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// `json_text` accepted the text, so serde_json parses it; `Null` stands in only if that
/// guarantee were broken. A string without escapes, a literal or a small non-negative
/// integer is built directly: the readers take many short fields (`type`, `role`, ids),
/// and serde_json's set-up cost several times the value's bytes (`bench/instructions.sh`).
pub(crate) fn parse(text: &str) -> Value {
    if let Some(v) = parse_scalar(text) {
        return v;
    }
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// The value of checked text that is a plain string, `true`, `false`, `null` or an integer
/// of up to 18 digits, as serde_json builds it; `None` for anything else.
fn parse_scalar(text: &str) -> Option<Value> {
    match text.as_bytes().first()? {
        b'"' => {
            let inner = text.get(1..text.len().checked_sub(1)?)?;
            (!inner.contains('\\')).then(|| Value::String(inner.to_owned()))
        }
        b't' if text == "true" => Some(Value::Bool(true)),
        b'f' if text == "false" => Some(Value::Bool(false)),
        b'n' if text == "null" => Some(Value::Null),
        b'0'..=b'9' if text.len() <= 18 && text.bytes().all(|c| c.is_ascii_digit()) => {
            text.parse::<u64>().ok().map(Value::from)
        }
        _ => None,
    }
}

impl Deref for LazyValue {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

/// Changing the value drops the text it came from.
impl DerefMut for LazyValue {
    fn deref_mut(&mut self) -> &mut Value {
        if self.is_lazy() {
            let value = std::mem::take(self).into_value();
            self.0 = Repr::Value(value);
        }
        match &mut self.0 {
            Repr::Value(v) => v,
            _ => unreachable!("made a value just above"),
        }
    }
}

impl From<Value> for LazyValue {
    fn from(value: Value) -> Self {
        LazyValue(Repr::Value(value))
    }
}

impl From<LazyValue> for Value {
    fn from(lazy: LazyValue) -> Self {
        lazy.into_value()
    }
}

impl Default for LazyValue {
    fn default() -> Self {
        Value::Null.into()
    }
}

impl fmt::Debug for LazyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value().fmt(f)
    }
}

/// Equal as values (the same text is the same value without parsing it).
impl PartialEq for LazyValue {
    fn eq(&self, other: &Self) -> bool {
        match (self.text(), other.text()) {
            (Some(a), Some(b)) if a == b => true,
            _ => self.value() == other.value(),
        }
    }
}

impl PartialEq<Value> for LazyValue {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl Serialize for LazyValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Value(v) => v.serialize(serializer),
            Repr::Text(c) => {
                let name = if c.canonical { compact::JSON_CANONICAL } else { compact::JSON_TEXT };
                serializer.serialize_newtype_struct(name, &TextOrValue(&c.held, &c.parsed))
            }
            Repr::Members(c) => c.held.serialize(serializer),
        }
    }
}

/// The canonical writer takes the text and writes its canonical form straight from it; any
/// other serializer gets the parsed `Value`.
struct TextOrValue<'a>(&'a str, &'a OnceLock<Value>);

impl Serialize for TextOrValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let TextOrValue(text, parsed) = *self;
        if compact::takes_text() {
            return serializer.serialize_str(text);
        }
        match parsed.get() {
            Some(v) => v.serialize(serializer),
            // Written once: parse to a temporary instead of keeping the tree.
            None => parse(text).serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for LazyValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(LazyValue::from)
    }
}

impl schemars::JsonSchema for LazyValue {
    /// Inlined, as the `Value` it stands for is.
    fn is_referenceable() -> bool {
        false
    }

    fn schema_name() -> String {
        Value::schema_name()
    }

    fn json_schema(generator: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
        Value::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Synthetic: a step content's emptiness and text bytes read from its text are what the
    /// parsed value gives: escapes decoded (surrogate pairs to four bytes), whitespace inside
    /// arrays, repeated `text` names (the last kept), parts that carry no text.
    #[test]
    fn content_measures_from_text_are_the_parsed_values() {
        let contents = [
            r#""""#,
            r#""plain""#,
            r#""a\"b\\c\/d\n\t\u00e9\u20ac\ud83d\ude00 é 😀""#,
            "null",
            "[]",
            "[ \n\t]",
            "[ \"\" ]",
            r#"["one", "tw\u00f6", 3, null, [], {"text": 5}]"#,
            r#"[{"type": "text", "text": "hi \"there\""}, {"text": "x", "text": "last\u00e9"}]"#,
            r#"[{"type": "image", "url": "u"}, {"text": null}, {"text": ["a"]}]"#,
            r#"{"text": "an object is content with no text"}"#,
            "{}",
            "0",
            "true",
        ];
        for text in contents {
            let lazy = LazyValue::from_text(text).expect("checked");
            assert!(lazy.is_lazy(), "{text}");
            let parsed = LazyValue::from(serde_json::from_str::<Value>(text).expect("valid"));
            assert_eq!(lazy.content_is_empty(), parsed.content_is_empty(), "{text}");
            assert_eq!(lazy.content_text_len(), parsed.content_text_len(), "{text}");
            assert!(lazy.is_lazy(), "measured without parsing: {text}");
        }
        let len = |t: &str| LazyValue::from_text(t).expect("checked").content_text_len();
        assert_eq!(len(r#""\ud83d\ude00\u00e9""#), 6);
        assert_eq!(len(r#"[{"text": "x", "text": "last"}, "ab"]"#), 6);
        let empty = |t: &str| LazyValue::from_text(t).expect("checked").content_is_empty();
        assert!(empty("[ ]") && empty(r#""""#) && empty("null"));
        assert!(!empty("{}") && !empty(r#"" ""#) && !empty("[null]"));
    }

    /// Synthetic: the scalars built without serde_json are the values serde_json builds, and
    /// a path inside text finds what the parsed value holds (the last of a repeated name).
    #[test]
    fn scalars_and_paths_read_as_serde_json_reads_them() {
        let scalars = [
            r#""""#,
            r#""type""#,
            r#""é 😀""#,
            r#""a\"b""#,
            r#""\u00e9""#,
            "true",
            "false",
            "null",
            "0",
            "7",
            "123456789012345678",
            "1234567890123456789",
            "18446744073709551616",
            "-0",
            "-1",
            "1.5",
            "1e2",
            "[]",
            "{}",
        ];
        for text in scalars {
            let expected: Value = serde_json::from_str(text).expect("valid");
            assert_eq!(parse(text), expected, "{text}");
            if let Some(v) = parse_scalar(text) {
                assert_eq!(format!("{v:?}"), format!("{expected:?}"), "same variant for {text}");
            }
        }
        let text = r#"{"p": {"id": "first", "x": [1]}, "q": 2, "p": {"id": "last", "n": {"k": 7}}}"#;
        let whole: Value = serde_json::from_str(text).expect("valid");
        let lazy = LazyValue::from_text(text).expect("accepted");
        let parsed = LazyValue::from(whole.clone());
        for path in [&["p", "id"][..], &["p", "n", "k"], &["q"], &["q", "r"], &["p", "x"], &["none"], &[]] {
            let expected = path.iter().try_fold(&whole, |v, k| v.get(*k));
            assert_eq!(lazy.get_path(path).as_deref(), expected, "{path:?}");
            assert_eq!(parsed.get_path(path).as_deref(), expected, "{path:?}");
        }
        assert!(lazy.text().is_some(), "finding a path parses nothing");
    }

    /// Synthetic: a value kept as text reads, writes and compares as its parsed value in
    /// every form a record is written in, and stops being text once changed.
    #[test]
    fn text_reads_writes_and_compares_as_its_value() {
        let text = r#" {"z": [3, {"b": 1, "a": 2}], "m": "\u00e9\n", "a": 1.50, "dup": 1, "dup": 2} "#;
        let whole: Value = serde_json::from_str(text).expect("valid");
        let lazy = LazyValue::from_text(text).expect("accepted");
        assert_eq!(lazy.text(), Some(text.trim()));
        assert_eq!(std::mem::size_of::<LazyValue>(), std::mem::size_of::<Value>(), "no bigger than a Value");
        assert_eq!(compact::to_string(&lazy).ok(), compact::to_string(&whole).ok());
        assert_eq!(serde_json::to_string(&lazy).ok(), serde_json::to_string(&whole).ok());
        assert_eq!(serde_json::to_value(&lazy).ok(), Some(whole.clone()));
        assert_eq!(*lazy, whole);
        assert_eq!(lazy, LazyValue::from(whole.clone()));
        assert_eq!(lazy["dup"], json!(2));

        let mut changed = lazy.clone();
        changed["a"] = json!(7);
        assert_eq!(changed.text(), None);
        assert_eq!(
            compact::to_string(&changed).ok().as_deref(),
            Some(r#"{"a":7,"dup":2,"m":"é\n","z":[3,{"a":2,"b":1}]}"#)
        );
        assert_eq!(lazy.clone().into_value(), whole);
        assert_eq!(Value::from(lazy), whole);
    }

    /// Synthetic: text the check refuses is left for a whole parse.
    #[test]
    fn refused_text_is_none() {
        assert!(LazyValue::from_text("[1] 2").is_none());
        assert!(LazyValue::from_text("NaN").is_none());
        assert!(LazyValue::from_text(r#""\ud800""#).is_none());
        assert!(LazyValue::from_text("").is_none());
        assert_eq!(LazyValue::from_text(" \"s\" ").map(|v| v.into_value()), Some(json!("s")));
    }
}
