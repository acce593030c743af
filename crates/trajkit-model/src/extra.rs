//! Unmapped source fields, some kept as their source text until something reads them.
//!
//! A reader that maps a few fields of a large object leaves the rest to `extra`. Building a
//! `Value` tree for every field nobody looks into was half of `inspect`'s time on NeMo Gym
//! rows: `Extra::from_object_text` keeps each member as its text, and a member becomes a
//! `Value` the first time it is read, written or compared. Only text that `json_text` proves
//! serde_json parses is kept this way, so reading a member cannot fail and gives the `Value`
//! serde_json would have built from the whole object.

use std::borrow::Cow;
use std::collections::btree_map::{self, BTreeMap};
use std::fmt;

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::json_text;
use crate::lazy::LazyValue;

/// Unmapped source fields under their source names, in name order (the canonical order).
/// A name is in one of the two maps, never both: `texts` holds the members not parsed yet
/// (text, or an object's members). Most records have none, and for them this is the `Map`
/// it wraps (`From<Map>` and `into_map` move it).
#[derive(Clone, Default)]
pub struct Extra {
    values: Map<String, Value>,
    texts: BTreeMap<String, LazyValue>,
}

impl Extra {
    /// An empty set of fields.
    pub fn new() -> Self {
        Extra::default()
    }

    /// The members of the JSON object `text`, each kept as its text until read. `None` when
    /// the text is not an object that `json_text` can prove serde_json parses the same way
    /// member by member (deep nesting, lone surrogates, numbers near the ends of `f64`, any
    /// syntax error): parse it whole instead, which also gives serde_json's error.
    pub fn from_object_text(text: &str) -> Option<Self> {
        let members = json_text::object_members(text)?;
        Some(Self::from_texts(members.into_iter().map(|(key, value)| (key, LazyValue::from_checked(value.into())))))
    }

    /// Members that `json_text` checked, each a value still held as text (its source, or its
    /// canonical form when the split wrote one), the last of a repeated name kept (as
    /// serde_json keeps it). Built in one sorted pass: inserting them one by one was 8 % of
    /// Gym `inspect`'s instructions.
    pub(crate) fn from_texts<'a>(members: impl IntoIterator<Item = (Cow<'a, str>, LazyValue)>) -> Self {
        let texts = members.into_iter().map(|(key, value)| (key.into_owned(), value));
        Extra { values: Map::new(), texts: texts.collect() }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty() && self.texts.is_empty()
    }

    pub fn len(&self) -> usize {
        self.values.len() + self.texts.len()
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.values.contains_key(key) || self.texts.contains_key(key)
    }

    /// The member `key`, parsed from its text on first read.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key).or_else(|| self.texts.get(key).map(LazyValue::value))
    }

    /// The value at `path` (member names, the first one of this object), without parsing
    /// the members on the way that are still text: a reader looking for one id inside a
    /// large carried field (`instance_config`) checks its text instead of building it.
    pub fn get_path(&self, path: &[&str]) -> Option<Cow<'_, Value>> {
        let (first, rest) = path.split_first()?;
        match self.values.get(*first) {
            Some(v) => rest.iter().try_fold(v, |v, k| v.get(*k)).map(Cow::Borrowed),
            None => self.texts.get(*first)?.get_path(rest),
        }
    }

    /// The member `key` for changing (it stops being text).
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.make_value(key);
        self.values.get_mut(key)
    }

    /// Sets `key`, returning the value it replaces.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        let old = self.texts.remove(&key).map(LazyValue::into_value);
        self.values.insert(key, value).or(old)
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.values.remove(key).or_else(|| self.texts.remove(key).map(LazyValue::into_value))
    }

    /// Removes `key`, returning its name and value.
    pub fn remove_entry(&mut self, key: &str) -> Option<(String, Value)> {
        self.values.remove_entry(key).or_else(|| self.texts.remove_entry(key).map(|(k, t)| (k, t.into_value())))
    }

    /// Removes `key`, parsing a member still kept as text with `parse` (a faster parser
    /// that builds the same `Value`, such as the token-array reader).
    pub fn remove_with<E>(
        &mut self,
        key: &str,
        parse: impl FnOnce(&str) -> Result<Value, E>,
    ) -> Option<Result<Value, E>> {
        if let Some(v) = self.values.remove(key) {
            return Some(Ok(v));
        }
        Some(self.texts.remove(key)?.into_value_with(parse))
    }

    /// Removes `key` as it is held: still text if it was kept as text.
    pub fn remove_lazy(&mut self, key: &str) -> Option<LazyValue> {
        self.values.remove(key).map(LazyValue::from).or_else(|| self.texts.remove(key))
    }

    /// Sets `key` to a value that may still be text.
    pub fn insert_lazy(&mut self, key: String, value: LazyValue) {
        if value.is_lazy() {
            self.values.remove(&key);
            self.texts.insert(key, value);
        } else {
            self.texts.remove(&key);
            self.values.insert(key, value.into_value());
        }
    }

    /// serde_json's entry for `key` (a member kept as text is parsed first).
    pub fn entry(&mut self, key: impl Into<String>) -> serde_json::map::Entry<'_> {
        let key = key.into();
        self.make_value(&key);
        self.values.entry(key)
    }

    /// Names in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.iter().map(|(k, _)| k)
    }

    /// Members in name order (each read from its text if it is still text).
    pub fn iter(&self) -> Iter<'_> {
        Iter { values: self.values.iter().peekable(), texts: self.texts.iter().peekable() }
    }

    /// A JSON object of the members.
    pub fn into_map(mut self) -> Map<String, Value> {
        self.make_values();
        self.values
    }

    /// Parses member `key` into the value map if it is still text.
    fn make_value(&mut self, key: &str) {
        if let Some((key, text)) = self.texts.remove_entry(key) {
            self.values.insert(key, text.into_value());
        }
    }

    /// Parses every member still kept as text.
    fn make_values(&mut self) {
        for (key, text) in std::mem::take(&mut self.texts) {
            self.values.insert(key, text.into_value());
        }
    }
}

/// Members in name order, merged from the two maps.
pub struct Iter<'a> {
    values: std::iter::Peekable<serde_json::map::Iter<'a>>,
    texts: std::iter::Peekable<btree_map::Iter<'a, String, LazyValue>>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a String, &'a Value);

    fn next(&mut self) -> Option<Self::Item> {
        let text_first = match (self.values.peek(), self.texts.peek()) {
            (Some((v, _)), Some((t, _))) => t < v,
            (None, Some(_)) => true,
            _ => false,
        };
        if text_first {
            self.texts.next().map(|(k, t)| (k, t.value()))
        } else {
            self.values.next()
        }
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Equal members, compared as values (a member kept as text equals its parsed value).
impl PartialEq for Extra {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        let mut texts = self.texts.iter().peekable();
        for (key, value) in &self.values {
            while let Some((k, t)) = texts.next_if(|(k, _)| *k < key) {
                map.serialize_entry(k, t)?;
            }
            map.serialize_entry(key, value)?;
        }
        for (k, t) in texts {
            map.serialize_entry(k, t)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(deserializer).map(Extra::from)
    }
}

impl schemars::JsonSchema for Extra {
    /// Inlined, as the map it stands for is.
    fn is_referenceable() -> bool {
        false
    }

    fn schema_name() -> String {
        Map::<String, Value>::schema_name()
    }

    fn json_schema(generator: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
        Map::<String, Value>::json_schema(generator)
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(values: Map<String, Value>) -> Self {
        Extra { values, texts: BTreeMap::new() }
    }
}

/// The members of an object, each still text if the object was; the value itself when it
/// is not an object.
impl TryFrom<LazyValue> for Extra {
    type Error = Value;

    fn try_from(value: LazyValue) -> Result<Self, Value> {
        let value = match value.into_members() {
            Ok(extra) => return Ok(extra),
            Err(value) => value,
        };
        if let Some(extra) = value.text().and_then(Extra::from_object_text) {
            return Ok(extra);
        }
        match value.into_value() {
            Value::Object(map) => Ok(map.into()),
            other => Err(other),
        }
    }
}

/// The object of the members, held as they are when some are still text.
impl From<Extra> for LazyValue {
    fn from(extra: Extra) -> Self {
        if extra.texts.is_empty() {
            return Value::Object(extra.values).into();
        }
        LazyValue::from_members(extra)
    }
}

impl From<Extra> for Value {
    fn from(extra: Extra) -> Self {
        Value::Object(extra.into_map())
    }
}

impl FromIterator<(String, Value)> for Extra {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        Extra::from(Map::from_iter(iter))
    }
}

impl Extend<(String, Value)> for Extra {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl IntoIterator for Extra {
    type Item = (String, Value);
    type IntoIter = serde_json::map::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.into_map().into_iter()
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

static NULL: Value = Value::Null;

/// `extra["key"]`: the member, or `null` when there is none (as `Value` indexes).
impl std::ops::Index<&str> for Extra {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Synthetic: the members kept as text mixed with values set later, in every form a
    /// record is written in (no real file is needed for the map's own rules).
    #[test]
    fn text_members_read_write_and_compare_as_values() {
        let text = r#"{"z": [3, {"b": 1, "a": 2}], "m": "\u00e9\n", "a": 1.50, "dup": 1, "dup": 2}"#;
        let whole: Value = serde_json::from_str(text).expect("valid");
        let mut extra = Extra::from_object_text(text).expect("accepted");
        extra.insert("k".into(), json!({"y": null, "x": [true]}));
        let mut expected = whole.as_object().cloned().expect("an object");
        expected.insert("k".into(), json!({"y": null, "x": [true]}));
        let expected_value = Value::Object(expected.clone());

        assert_eq!(crate::compact::to_string(&extra).ok(), crate::compact::to_string(&expected_value).ok());
        assert_eq!(serde_json::to_string(&extra).ok(), serde_json::to_string(&expected_value).ok());
        assert_eq!(serde_json::to_value(&extra).ok(), Some(expected_value.clone()));
        assert_eq!(extra.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
        assert_eq!(extra, Extra::from(expected.clone()));
        assert_eq!(extra["dup"], json!(2));
        assert_eq!(extra.get("z"), expected.get("z"));
        assert_eq!(extra.len(), 5);

        let mut changed = extra.clone();
        if let Some(v) = changed.get_mut("a") {
            *v = json!(7);
        }
        assert_eq!(changed["a"], json!(7));
        assert_eq!(
            changed.remove_with("m", |t| serde_json::from_str::<Value>(t)).and_then(Result::ok),
            Some(json!("é\n"))
        );
        assert_eq!(changed.remove("z"), expected.get("z").cloned());
        assert_eq!(changed.insert("dup".into(), json!(3)), Some(json!(2)));
        assert_eq!(changed.into_map().len(), 3);
        assert_eq!(extra.into_map(), expected);
    }

    /// Synthetic: an object left of one a reader took apart stays member by member (text
    /// members still text) inside a value, and reads, writes and compares as the object.
    #[test]
    fn members_held_in_a_value() {
        let text = r#"{"b": {"y": [1, 2.50]}, "a": "\u00e9", "c": 1}"#;
        let whole: Value = serde_json::from_str(text).expect("valid");
        let mut extra = Extra::from_object_text(text).expect("accepted");
        assert_eq!(extra.remove("c"), Some(json!(1)));
        let mut expected = whole.clone();
        expected.as_object_mut().map(|o| o.remove("c"));

        let lazy = LazyValue::from(extra.clone());
        assert_eq!(lazy.text(), None);
        assert!(!lazy.is_null() && !lazy.is_string());
        assert_eq!(crate::compact::to_string(&lazy).ok(), crate::compact::to_string(&expected).ok());
        assert_eq!(serde_json::to_string(&lazy).ok(), serde_json::to_string(&expected).ok());
        assert_eq!(*lazy, expected);
        let mut holder = Extra::new();
        holder.insert_lazy("k".into(), lazy.clone());
        assert_eq!(holder.get("k"), Some(&expected));
        assert_eq!(Extra::try_from(lazy.clone()).ok(), Some(extra));
        let mut changed = lazy.clone();
        changed["b"] = json!(0);
        assert_eq!(changed["b"], json!(0));
        assert_eq!(*lazy, expected, "a clone shares the members, never a change");
        assert_eq!(lazy.into_value(), expected);
        assert_eq!(LazyValue::from(Extra::new()).into_value(), json!({}));
    }

    /// Synthetic: text the check refuses is left for a whole parse.
    #[test]
    fn refused_text_is_none() {
        assert!(Extra::from_object_text("[1]").is_none());
        assert!(Extra::from_object_text(r#"{"a": NaN}"#).is_none());
        assert!(Extra::from_object_text(r#"{"a": "\ud800"}"#).is_none());
    }
}
