//! A JSON value that may still be its source text: parsed the first time it is read, and
//! written by the canonical writer straight from the text.
//!
//! A record's message content, tool arguments and tool output are most of its bytes, and
//! `inspect`, `validate` and `convert` never look inside them. Building a `Value` tree for
//! each and dropping it again was most of what was left of NeMo Gym's parse after `extra`
//! stopped doing it. Only text that `json_text` proves serde_json parses is kept, so reading
//! it cannot fail and gives the `Value` serde_json would have built.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, Serializer};
use serde_json::Value;

use crate::{compact, json_text, Extra};

/// A JSON value, kept as its source text until something reads it (`Deref` to `Value`).
/// Compares, hashes into digests and serializes exactly as the `Value` it stands for.
#[derive(Clone)]
pub struct LazyValue {
    /// What the value is held as until read; `Held::Value` once changed through `DerefMut`.
    held: Held,
    /// The value, built from `held` on first read (always set when `held` is `Held::Value`).
    parsed: OnceLock<Value>,
}

#[derive(Clone)]
enum Held {
    /// Source text that `json_text` accepted.
    Text(Box<str>),
    /// An object whose members may still be text: what a reader leaves of an object it
    /// took apart (written member by member, never re-read as a whole).
    Members(Box<Extra>),
    /// Only the parsed value.
    Value,
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

    /// Text that `json_text` accepted.
    pub(crate) fn from_checked(text: Box<str>) -> Self {
        LazyValue { held: Held::Text(text), parsed: OnceLock::new() }
    }

    /// An object of `extra`'s members, those kept as text still text.
    pub(crate) fn from_members(extra: Extra) -> Self {
        LazyValue { held: Held::Members(Box::new(extra)), parsed: OnceLock::new() }
    }

    /// The value (built from the text or members on first read).
    pub fn value(&self) -> &Value {
        self.parsed.get_or_init(|| match &self.held {
            Held::Text(text) => parse(text),
            Held::Members(extra) => Value::Object(extra.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            Held::Value => Value::Null,
        })
    }

    /// The source text, while the value is still kept as text.
    pub fn text(&self) -> Option<&str> {
        match &self.held {
            Held::Text(text) => Some(text),
            _ => None,
        }
    }

    /// Whether the value is still held as text or members (not parsed into a `Value`).
    pub(crate) fn is_lazy(&self) -> bool {
        !matches!(self.held, Held::Value)
    }

    /// The members, when this is an object held as members.
    pub(crate) fn into_members(self) -> Result<Extra, Self> {
        match self.held {
            Held::Members(extra) => Ok(*extra),
            held => Err(LazyValue { held, parsed: self.parsed }),
        }
    }

    /// The value, parsed with `parse` if it is still text (a faster parser that builds the
    /// same `Value`, such as the token-array reader).
    pub fn into_value_with<E>(self, parse: impl FnOnce(&str) -> Result<Value, E>) -> Result<Value, E> {
        let LazyValue { held, parsed } = self;
        match (parsed.into_inner(), held) {
            (Some(v), _) => Ok(v),
            (None, Held::Text(text)) => parse(&text),
            (None, Held::Members(extra)) => Ok(Value::from(*extra)),
            (None, Held::Value) => Ok(Value::Null),
        }
    }

    /// Whether the value is `null`, without parsing text (shadows `Value::is_null`).
    pub fn is_null(&self) -> bool {
        match &self.held {
            Held::Text(text) => &**text == "null",
            Held::Members(_) => false,
            Held::Value => self.value().is_null(),
        }
    }

    /// Whether the value is a string, without parsing text (shadows `Value::is_string`).
    pub fn is_string(&self) -> bool {
        match &self.held {
            Held::Text(text) => text.starts_with('"'),
            Held::Members(_) => false,
            Held::Value => self.value().is_string(),
        }
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

    /// The value, owned.
    pub fn into_value(self) -> Value {
        match self.into_value_with(|t| Ok::<_, std::convert::Infallible>(parse(t))) {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }
}

/// `json_text` accepted the text, so serde_json parses it; `Null` stands in only if that
/// guarantee were broken.
pub(crate) fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
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
        self.value(); // parsed now if it was not yet
        self.held = Held::Value;
        match self.parsed.get_mut() {
            Some(v) => v,
            None => unreachable!("`get` sets the value"),
        }
    }
}

impl From<Value> for LazyValue {
    fn from(value: Value) -> Self {
        LazyValue { held: Held::Value, parsed: OnceLock::from(value) }
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
        match &self.held {
            Held::Text(text) => {
                serializer.serialize_newtype_struct(compact::JSON_TEXT, &TextOrValue(text, &self.parsed))
            }
            Held::Members(extra) => extra.serialize(serializer),
            Held::Value => self.value().serialize(serializer),
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

    /// Synthetic: a value kept as text reads, writes and compares as its parsed value in
    /// every form a record is written in, and stops being text once changed.
    #[test]
    fn text_reads_writes_and_compares_as_its_value() {
        let text = r#" {"z": [3, {"b": 1, "a": 2}], "m": "\u00e9\n", "a": 1.50, "dup": 1, "dup": 2} "#;
        let whole: Value = serde_json::from_str(text).expect("valid");
        let lazy = LazyValue::from_text(text).expect("accepted");
        assert_eq!(lazy.text(), Some(text.trim()));
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
