//! Small helpers for mapping parsed JSON into the record without copying.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};

use serde_json::{Map, Value};
use trajkit_model::json_text::{self, Parts, Shape, Split};
use trajkit_model::{Extra, LazyValue};

use crate::rejection::{parse_record, schema, Problem};

/// What the `take` helpers need of an object: a parsed JSON object or a record's `extra`.
pub trait Object {
    fn get(&self, key: &str) -> Option<&Value>;
    fn remove_entry(&mut self, key: &str) -> Option<(String, Value)>;
    fn insert(&mut self, key: String, value: Value) -> Option<Value>;
}

impl Object for Map<String, Value> {
    fn get(&self, key: &str) -> Option<&Value> {
        Map::get(self, key)
    }
    fn remove_entry(&mut self, key: &str) -> Option<(String, Value)> {
        Map::remove_entry(self, key)
    }
    fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        Map::insert(self, key, value)
    }
}

impl Object for Extra {
    fn get(&self, key: &str) -> Option<&Value> {
        Extra::get(self, key)
    }
    fn remove_entry(&mut self, key: &str) -> Option<(String, Value)> {
        Extra::remove_entry(self, key)
    }
    fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        Extra::insert(self, key, value)
    }
}

/// Removes `key` and returns it when it is a non-null value (a `null` stays in the map,
/// so it ends up in `extra` and missing vs null stays visible).
pub fn take(map: &mut (impl Object + ?Sized), key: &str) -> Option<Value> {
    take_if(map, key, |v| !v.is_null())
}

/// Removes `key` when its value passes `keep`; a value that does not is put back. One
/// search of the map when the key is there and passes (the usual case), where a look
/// then a removal made two: the readers' mapping spent a tenth of ATIF `validate` in them.
fn take_if(map: &mut (impl Object + ?Sized), key: &str, keep: impl FnOnce(&Value) -> bool) -> Option<Value> {
    let (key, v) = map.remove_entry(key)?;
    if keep(&v) {
        return Some(v);
    }
    map.insert(key, v);
    None
}

/// Removes the list under `key` of a record's top-level object; missing, `null` or another
/// type is a schema violation at `$.key`.
pub fn take_list(map: &mut Map<String, Value>, key: &str) -> Result<Vec<Value>, Problem> {
    match map.remove(key) {
        Some(Value::Array(items)) => Ok(items),
        None | Some(Value::Null) => Err(schema(format!("$.{key}"), format!("{key} is missing"))),
        Some(_) => Err(schema(format!("$.{key}"), format!("{key} must be a list"))),
    }
}

/// Removes the list under `key` and maps each element with `f`, which gets the element's
/// path (`{path}.{key}[i]`). Absent or `null` is no element (a `null` stays for `extra`);
/// another type is a schema violation at `{path}.{key}`.
pub fn take_each<T>(
    map: &mut Map<String, Value>,
    key: &str,
    path: &str,
    mut f: impl FnMut(Value, &str) -> Result<T, Problem>,
) -> Result<Vec<T>, Problem> {
    match take_if(map, key, Value::is_array) {
        Some(Value::Array(items)) => {
            items.into_iter().enumerate().map(|(i, v)| f(v, &format!("{path}.{key}[{i}]"))).collect()
        }
        _ if map.get(key).is_some_and(|v| !v.is_null()) => {
            Err(schema(format!("{path}.{key}"), format!("{key} must be a list")))
        }
        _ => Ok(Vec::new()),
    }
}

/// Removes `key` when it is a string.
pub fn take_str(map: &mut (impl Object + ?Sized), key: &str) -> Option<String> {
    match take_if(map, key, Value::is_string)? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// Removes `key` when it is an object; a value of another type stays where it was (so it
/// ends up in `extra`).
pub fn take_object(map: &mut (impl Object + ?Sized), key: &str) -> Option<Map<String, Value>> {
    match take_if(map, key, Value::is_object)? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// Removes `key` when it is a non-empty string (an empty string stays where it was).
pub fn take_nonempty_str(map: &mut (impl Object + ?Sized), key: &str) -> Option<String> {
    match map.get(key) {
        Some(Value::String(s)) if !s.is_empty() => take_str(map, key),
        _ => None,
    }
}

/// Removes a call's `arguments`: a JSON string parsed (kept verbatim, and `true` for
/// `arguments_invalid`, when it is not JSON), any other value as it is, absent `{}`.
pub fn take_arguments(map: &mut Map<String, Value>) -> (LazyValue, bool) {
    arguments_of(map.remove("arguments").map(LazyValue::from))
}

/// A call's arguments by the rule of `take_arguments`, from a value that may still be text (a
/// JSON string's JSON is kept as text too when the check accepts it).
pub fn arguments_of(arguments: Option<LazyValue>) -> (LazyValue, bool) {
    let Some(arguments) = arguments else {
        return (Value::Object(Map::new()).into(), false);
    };
    if !arguments.is_string() {
        return (arguments, false);
    }
    // A string still held as text is decoded from it, without a `Value` on the way.
    let decoded = arguments.text().and_then(trajkit_model::json_text::string_text).map(Cow::into_owned);
    let text = match decoded {
        Some(text) => text,
        None => match arguments.into_value() {
            Value::String(s) => s,
            other => return (other.into(), false),
        },
    };
    match LazyValue::from_string(text) {
        Ok(v) => (v, false),
        Err(s) => match serde_json::from_str::<Value>(&s) {
            Ok(v) => (v.into(), false),
            Err(_) => (Value::String(s).into(), true),
        },
    }
}

/// Removes `key` when it is a number.
pub fn take_f64(map: &mut (impl Object + ?Sized), key: &str) -> Option<f64> {
    take_if(map, key, |v| v.as_f64().is_some())?.as_f64()
}

/// Removes `key` when it is a non-negative number of seconds (a duration or latency).
pub fn take_seconds(map: &mut (impl Object + ?Sized), key: &str) -> Option<f64> {
    let seconds = |v: &Value| v.as_f64().filter(|s| *s >= 0.0);
    seconds(&take_if(map, key, |v| seconds(v).is_some())?)
}

/// Removes `key` when it is a non-negative integer.
pub fn take_u64(map: &mut (impl Object + ?Sized), key: &str) -> Option<u64> {
    take_if(map, key, |v| v.as_u64().is_some())?.as_u64()
}

/// Walks an object once: `take` gets each key with its value and either keeps the value
/// (returns `None`) or hands it back (`Some`); what is handed back becomes `extra`. A
/// reader that knows many keys of one object saves a removal each (`take`, `take_str`,
/// which rebalance the map): 2 % of ATIF `validate`'s instructions.
pub fn split_fields(map: Map<String, Value>, mut take: impl FnMut(&str, Value) -> Option<Value>) -> Extra {
    map.into_iter().filter_map(|(key, v)| take(&key, v).map(|v| (key, v))).collect()
}

/// What is left of a source object becomes `extra` as it is (the same sorted map type).
pub fn into_extra(map: Map<String, Value>) -> Extra {
    map.into()
}

/// Text of a content value: a string, or the `text` of text parts joined by newlines.
pub fn content_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
            if texts.is_empty() {
                None
            } else {
                Some(texts.join("\n"))
            }
        }
        _ => None,
    }
}

/// `content_text` of a step's content, a string read from its text without building a
/// `Value` (each record's instruction is taken this way; parsing it was 1 % of ATIF
/// `inspect`).
pub fn step_content_text(content: &LazyValue) -> Option<String> {
    if let Some(found) = content.text().and_then(content_text_in) {
        return found;
    }
    content_text(content.value())
}

/// A list of content parts, each an object read by its members' names.
const PARTS: Shape = Shape::Array(&Shape::Object(&[]));

/// `content_text` of a value held as its checked JSON `text`, read from the text: a string
/// decoded, or the `text` strings of a list of parts joined (a reasoning item's summary was
/// parsed into a `Value` only for that: 1 % of Gym `inspect`). The outer `None` when the
/// text must be parsed to tell (neither a string nor a list, or the split refuses it).
pub fn content_text_in(text: &str) -> Option<Option<String>> {
    if text.starts_with('"') {
        return json_text::string_text(text).map(|t| Some(t.into_owned()));
    }
    if !text.starts_with('[') {
        return None;
    }
    let Parts::Elements(parts) = json_text::split(text, &PARTS)?.parts else { return None };
    let texts: Vec<Cow<'_, str>> = parts
        .iter()
        .filter_map(|part| match &part.parts {
            // serde_json keeps the last of a repeated name.
            Parts::Members(members) => members.iter().rev().find(|(name, _)| name == "text"),
            _ => None,
        })
        .filter_map(|(_, text)| json_text::string_text(text.text))
        .collect();
    Some((!texts.is_empty()).then(|| texts.join("\n")))
}

/// Byte ranges of the elements of a top-level JSON array (whitespace around each element
/// excluded), or `None` when `bytes` is not one complete array. A small scanner: it tracks
/// string state (with escapes) and bracket depth and does not validate the elements, which
/// are parsed (and, when malformed, rejected) one by one.
pub fn array_elements(bytes: &[u8]) -> Option<Vec<Range<usize>>> {
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let mut i = skip_ws(if bytes.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 });
    if bytes.get(i) != Some(&b'[') {
        return None;
    }
    i = skip_ws(i + 1);
    let mut out = Vec::new();
    if bytes.get(i) == Some(&b']') {
        return (skip_ws(i + 1) == bytes.len()).then_some(out);
    }
    loop {
        let start = i;
        let (end, closer) = scan_value(bytes, i)?;
        let mut trimmed = end;
        while trimmed > start && bytes[trimmed - 1].is_ascii_whitespace() {
            trimmed -= 1;
        }
        if trimmed == start {
            return None;
        }
        out.push(start..trimmed);
        i = skip_ws(end + 1);
        if closer == b']' {
            return (i == bytes.len()).then_some(out);
        }
    }
}

/// Scans one array element from `start`: returns the index of the `,` or `]` that ends it
/// (at depth 0) and that byte.
fn scan_value(bytes: &[u8], start: usize) -> Option<(usize, u8)> {
    value_end(bytes, start, b']')
}

/// Scans one JSON value (an array element or an object member's value) from `start`,
/// skipping strings and nested containers: the index of the `,` or `closer` (`]` or `}`)
/// that ends it at depth 0, and that byte. `None` at the wrong closer or the end of bytes.
pub fn value_end(bytes: &[u8], start: usize, closer: u8) -> Option<(usize, u8)> {
    let other = if closer == b']' { b'}' } else { b']' };
    let mut depth = 0usize;
    let mut i = start;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                i = string_close(bytes, i)? + 1;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth > 0 => depth -= 1,
            b',' if depth == 0 => return Some((i, b)),
            _ if b == closer && depth == 0 => return Some((i, b)),
            _ if b == other => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index of the quote that closes the JSON string opening at `open`, `None` when the bytes
/// end first. Jumps from backslash to quote with `memchr` (detection scans every document's
/// strings this way, and most of a trajectory's bytes are strings).
pub fn string_close(bytes: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    loop {
        let at = i + memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
        if bytes[at] == b'"' {
            return Some(at);
        }
        i = at + 2;
    }
}

/// A member of a JSON object found by [`object_members`]: its key, the byte range of its
/// value (to the end of the bytes when the value is cut off there) and whether the value
/// ends within the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub key: String,
    pub value: Range<usize>,
    pub complete: bool,
}

/// The members of the JSON object that `bytes` starts with, in order, as far as they can
/// be scanned; `None` when `bytes` does not start with `{`. A small scanner (string state
/// and bracket depth, no validation), so detection reads the keys of a document whose peek
/// ends mid-value from the keys themselves, not from a substring search.
pub fn object_members(bytes: &[u8]) -> Option<Vec<Member>> {
    let ws = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let mut i = ws(if bytes.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 });
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    let mut out = Vec::new();
    i = ws(i + 1);
    loop {
        if bytes.get(i) != Some(&b'"') {
            return Some(out);
        }
        let Some(key_end) = string_close(bytes, i) else {
            return Some(out);
        };
        let quoted = &bytes[i..=key_end];
        let key = serde_json::from_slice::<String>(quoted)
            .unwrap_or_else(|_| String::from_utf8_lossy(&quoted[1..quoted.len() - 1]).into_owned());
        i = ws(key_end + 1);
        if bytes.get(i) != Some(&b':') {
            return Some(out);
        }
        let start = ws(i + 1);
        match value_end(bytes, start, b'}') {
            Some((end, closer)) => {
                let mut trimmed = end;
                while trimmed > start && bytes[trimmed - 1].is_ascii_whitespace() {
                    trimmed -= 1;
                }
                out.push(Member { key, value: start..trimmed, complete: true });
                if closer == b'}' {
                    return Some(out);
                }
                i = ws(end + 1);
            }
            None => {
                out.push(Member { key, value: start..bytes.len(), complete: false });
                return Some(out);
            }
        }
    }
}

/// `bytes` parsed as JSON when they are UTF-8 and valid JSON: UTF-8 checked once, then
/// parsed as text (cheaper than serde_json's byte parser, which checks every string), token
/// arrays by `token_arrays`' loop.
pub fn parse_text(bytes: &[u8]) -> Option<Value> {
    crate::token_arrays::parse(std::str::from_utf8(bytes).ok()?).ok()
}

/// `parse_text` with token arrays held back as text (`token_arrays::parse_keeping`): the
/// planner's parse of a small document, which the reader may take over.
pub fn parse_text_keeping(bytes: &[u8]) -> Option<crate::token_arrays::Parsed> {
    crate::token_arrays::parse_keeping(std::str::from_utf8(bytes).ok()?).ok()
}

/// JSON path of an array element: `$.steps[3]`.
pub fn idx(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// Parses a record that must be one JSON object; a whole array (a document that was not
/// split into its elements) is rejected with that said.
pub(crate) fn record_object(bytes: &[u8]) -> Result<Map<String, Value>, Problem> {
    match parse_record(bytes)? {
        Value::Object(m) => Ok(m),
        Value::Array(a) => {
            Err(schema("$", format!("a JSON array of {} records where one record object was expected", a.len())))
        }
        _ => Err(schema("$", "a record must be a JSON object")),
    }
}

/// True when the first non-blank byte opens a JSON array.
pub(crate) fn is_array_document(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// What detection needs of a JSON value without building it: whether it is an object,
/// and its top-level keys in order, each with its value when that is a string.
#[derive(Default)]
pub struct TopLevel<'a> {
    pub object: bool,
    members: Vec<(Cow<'a, str>, Option<Cow<'a, str>>)>,
    /// The value as `json_text::split` took it apart, with the shape it was given (a
    /// reader's walk of the same text reads it instead of splitting again); `None` where
    /// serde_json decided.
    split: Option<(Split<'a>, &'static Shape<'static>)>,
}

impl<'a> TopLevel<'a> {
    /// Whether the object has `key`.
    pub fn has(&self, key: &str) -> bool {
        self.members.iter().any(|(k, _)| k == key)
    }

    /// The value of `key` when it is a string; of its last occurrence, the one a parse
    /// into `Value` keeps.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.members.iter().rev().find(|(k, _)| k == key).and_then(|(_, v)| v.as_deref())
    }

    /// The split of the value when it was split with `shape` (this very static).
    pub fn split_as(&self, shape: &'static Shape<'static>) -> Option<&Split<'a>> {
        self.split.as_ref().filter(|(_, made)| std::ptr::eq(*made, shape)).map(|(split, _)| split)
    }
}

/// The shape of [`top_level`]: an object's members, each kept whole.
pub static TOP_MEMBERS: Shape<'static> = Shape::Object(&[]);

/// `bytes` read as [`TopLevel`] when they are UTF-8 and one valid JSON value. The whole
/// value is tokenized as serde_json parses a `Value` (the same recursion limit, number
/// range and string escapes), so this is `Some` exactly when [`parse_text`] into a
/// `Value` is; nothing below the top level is built, which costs a third of that parse.
pub fn top_level(bytes: &[u8]) -> Option<TopLevel<'_>> {
    top_level_as(bytes, &TOP_MEMBERS)
}

/// [`top_level`], with the value taken apart as `shape` says and kept
/// ([`TopLevel::split_as`]) when `json_text` accepts it.
pub fn top_level_as<'a>(bytes: &'a [u8], shape: &'static Shape<'static>) -> Option<TopLevel<'a>> {
    let text = std::str::from_utf8(bytes).ok()?;
    // Text `json_text` accepts serde_json parses to the same members, and its check is
    // several times faster; what it refuses (deep nesting, lone surrogates, extreme
    // numbers, any error) serde_json decides.
    if let Some(split) = json_text::split(text, shape) {
        let Parts::Members(members) = &split.parts else { return Some(TopLevel::default()) };
        let members = members.iter().map(|(k, v)| (k.clone(), json_text::string_text(v.text))).collect();
        return Some(TopLevel { object: true, members, split: Some((split, shape)) });
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let top = serde::Deserializer::deserialize_any(&mut de, TopVisitor).ok()?;
    de.end().ok()?;
    Some(top)
}

/// Builds a [`TopLevel`]: the members of an object, nothing of anything else.
struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = TopLevel<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key_seed(StrSeed)? {
            members.push((key.unwrap_or_default(), map.next_value_seed(StrSeed)?));
        }
        Ok(TopLevel { object: true, members, split: None })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Skip.visit_seq(seq).map(|_| TopLevel::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
}

/// A value kept when it is a string (borrowed unless it had escapes), skipped otherwise.
struct StrSeed;

impl<'de> DeserializeSeed<'de> for StrSeed {
    type Value = Option<Cow<'de, str>>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrSeed {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_owned())))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Skip.visit_map(map).map(|_| None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Skip.visit_seq(seq).map(|_| None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// Any value, parsed through `deserialize_any` as a `Value` would be (so a number out of
/// range or a bad escape fails as it would there; `IgnoredAny` skips more leniently) and
/// dropped as it goes.
#[derive(Clone, Copy)]
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::array_elements as elements;
    use super::{object_members, parse_text, top_level, top_level_as, Map, Shape, Value, TOP_MEMBERS};

    /// A content read from its text gives what `content_text` gives of its parsed value:
    /// escapes and surrogate pairs decoded, parts joined, nothing for other kinds.
    #[test]
    fn step_content_text_matches_content_text() {
        let texts = [
            r#""plain""#,
            r#""tab\there \"q\" \u00e9 \ud83d\ude00 \/ end""#,
            r#""""#,
            r#"[{"type":"text","text":"a"},{"type":"image"},{"text":"b\nc"}]"#,
            "[]",
            "null",
            "12",
            r#"{"text":"not parts"}"#,
        ];
        for text in texts {
            let lazy = trajkit_model::LazyValue::from_text(text).unwrap();
            assert!(lazy.text().is_some(), "{text}: held as text");
            let parsed: Value = serde_json::from_str(text).unwrap();
            assert_eq!(super::step_content_text(&lazy), super::content_text(&parsed), "{text}");
        }
    }

    #[test]
    fn members_of_a_truncated_object() {
        let doc = br#"{"a": {"x": "},"}, "b" : [1, {"c": 2}], "tasks": [ {"id": 1"#;
        let m = object_members(doc).unwrap_or_default();
        let keys: Vec<&str> = m.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "tasks"]);
        assert_eq!((&doc[m[1].value.clone()], m[1].complete), (&br#"[1, {"c": 2}]"#[..], true));
        assert_eq!((&doc[m[2].value.clone()], m[2].complete), (&br#"[ {"id": 1"#[..], false));
        assert_eq!(object_members(b"[1]"), None);
    }

    #[test]
    fn elements_of_arrays() {
        let doc = br#" [ {"a": "x,]\"}"} , [1, [2]], "s" ,3 ] "#;
        let got: Vec<&[u8]> = elements(doc).unwrap_or_default().into_iter().map(|r| &doc[r]).collect();
        assert_eq!(got, [&br#"{"a": "x,]\"}"}"#[..], b"[1, [2]]", b"\"s\"", b"3"]);
        assert_eq!(elements(b"[]"), Some(vec![]));
        assert_eq!(elements(b"{}"), None);
        assert_eq!(elements(b"[1,"), None);
        assert_eq!(elements(b"[1] x"), None);
        assert_eq!(elements(b"[1,,2]"), None);
    }

    #[test]
    fn object_members_read_keys_up_to_a_cut_off_value() {
        use super::object_members;
        let doc = br#" {"kind": 0, "v": {"requests": [1, "a\"}"], "x": 2}, "z": "#;
        let got: Vec<(String, &[u8])> =
            object_members(doc).unwrap_or_default().into_iter().map(|m| (m.key, &doc[m.value])).collect();
        assert_eq!(got[0], ("kind".to_string(), &b"0"[..]));
        assert_eq!(got[1], ("v".to_string(), &br#"{"requests": [1, "a\"}"], "x": 2}"#[..]));
        assert_eq!(got[2], ("z".to_string(), &b""[..]), "a value cut off at the end of the bytes");
        assert_eq!(object_members(br#"{"a": [1, 2"#).map(|m| m.len()), Some(1), "a key whose value is cut off counts");
        assert_eq!(object_members(b"[1]"), None);
        assert_eq!(object_members(b"{}"), Some(vec![]));
    }

    #[test]
    fn strings_close_at_the_first_unescaped_quote() {
        use super::{string_close, value_end};
        assert_eq!(string_close(br#""abc" x"#, 0), Some(4));
        assert_eq!(string_close(br#""a\\" x"#, 0), Some(4), "an escaped backslash does not escape the quote");
        assert_eq!(string_close(br#""a\"b" x"#, 0), Some(5));
        assert_eq!(string_close(br#""a\""#, 0), None, "unterminated");
        assert_eq!(string_close(br#""a\"#, 0), None, "ends inside an escape");
        assert_eq!(value_end(br#"{"k": "}\"", "l": [1]}, 2"#, 0, b']'), Some((22, b',')));
        assert_eq!(value_end(br#"1 ]"#, 0, b'}'), None, "the wrong closer");
    }

    /// `top_level` accepts exactly what a parse into `Value` accepts, and reads its keys
    /// as that `Value` holds them: synthetic edge cases (depth at serde_json's limit,
    /// numbers out of range, bad escapes and surrogates, control characters, repeated
    /// keys, trailing bytes, a BOM), then every real fixture whole and line by line.
    #[test]
    fn top_level_accepts_what_a_value_parse_accepts() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let mut texts: Vec<Vec<u8>> = [
            deep(127),
            deep(128),
            deep(129),
            format!("{{\"a\": {}}}", deep(127)),
            "1e400".into(),
            "[-1e400]".into(),
            "1e-400".into(),
            "18446744073709551616".into(),
            r#"{"a": "\ud800"}"#.into(),
            r#"{"a": "\ud83d\ude00", "b\n": "x\"y"}"#.into(),
            r#"{"a": "\x"}"#.into(),
            "{\"a\": \"tab\there\"}".into(),
            r#"{"v": "one", "v": 2}"#.into(),
            r#"{"v": 2, "v": "two"}"#.into(),
            r#"{"v": 1} x"#.into(),
            "\u{feff}{}".into(),
            "{\"a\": 1,}".into(),
            " \t\r\n{} \n".into(),
            "\"text\"".into(),
            "null".into(),
        ]
        .into_iter()
        .map(String::into_bytes)
        .collect();
        texts.push(b"{\"a\": \"\xff\"}".to_vec());
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
        let (files, _) = crate::discover(&[root]);
        for f in &files {
            let Ok(bytes) = crate::input::read_all(f) else { continue };
            texts.extend(bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).take(50).map(<[u8]>::to_vec));
            texts.push(bytes);
        }
        // A shape that takes objects and arrays apart at every level (`top_level_as`).
        static DEEP: Shape<'static> = Shape::Object(&[("steps", Shape::Array(&DEEP)), ("a", Shape::Array(&DEEP))]);
        for t in &texts {
            let value: Option<Value> = parse_text(t);
            let top = top_level(t);
            assert_eq!(top.is_some(), value.is_some(), "{}", String::from_utf8_lossy(t));
            let deep = top_level_as(t, &DEEP);
            assert_eq!(deep.is_some(), value.is_some(), "{}", String::from_utf8_lossy(t));
            if let (Some(top), Some(deep)) = (&top, &deep) {
                assert_eq!((top.object, &top.members), (deep.object, &deep.members));
                assert_eq!(deep.split_as(&DEEP).is_some(), top.split_as(&TOP_MEMBERS).is_some());
            }
            let (Some(top), Some(value)) = (top, value) else { continue };
            assert_eq!(top.object, value.is_object());
            for (k, v) in value.as_object().into_iter().flatten() {
                assert!(top.has(k), "{k}");
                assert_eq!(top.str(k), v.as_str(), "{k}");
            }
            assert!(top.members.len() >= value.as_object().map_or(0, Map::len));
        }
    }
}
