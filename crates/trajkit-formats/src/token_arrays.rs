//! Token ids and log probabilities read by a tight loop instead of serde_json's per-element
//! path: they are a third of ATIF `validate`'s time. The rest of the record is serde_json's.
//!
//! Every flat number array under a token key is cut out of the text and replaced by a marker
//! holding two per-process random numbers and its index; serde_json parses the shorter text,
//! and the markers in the tree are swapped for the arrays read here. The `Value` is the one
//! serde_json builds from the source (the `token_arrays` tests compare them). An array this
//! loop does not read exactly as serde_json would (`-0`, long integers, anything not a
//! number) stays in the text for serde_json. A key is matched only at a quote that is not
//! escaped; a match at a closing quote leaves a bare word, so that text fails to parse and
//! the source is parsed instead (errors come from the source).

use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::ops::Range;
use std::sync::OnceLock;

use serde_json::{Number, Value};
use trajkit_model::LazyValue;

/// Keys whose values are token ids or log probabilities (ATIF step metrics, NeMo Gym
/// responses, canonical records' metrics extras), without their quotes.
const KEYS: [&[u8]; 5] =
    [b"prompt_token_ids", b"completion_token_ids", b"logprobs", b"generation_token_ids", b"generation_log_probs"];

/// Shorter arrays stay with serde_json: the marker and the tree walk cost more than they save.
const MIN_ELEMENTS: usize = 8;

/// Parses JSON text into the `Value` serde_json builds, reading token arrays by a tight loop.
pub(crate) fn parse(text: &str) -> serde_json::Result<Value> {
    parse_with(text, false).map(Parsed::into_value)
}

/// Parses JSON text as `parse` does, but holds each token array of plain numbers back as
/// text (a `LazyValue`, see `LazyValue::number_array`) behind a marker in the tree: a reader
/// that moves token arrays into a record keeps them text, and nothing builds a `Value` per
/// number only to drop it (13 million of them in corpus-1000's ATIF files).
pub fn parse_keeping(text: &str) -> serde_json::Result<Parsed> {
    parse_with(text, true)
}

fn parse_with(text: &str, keep: bool) -> serde_json::Result<Parsed> {
    let arrays = find_arrays(text, keep);
    if arrays.is_empty() {
        return serde_json::from_str(text).map(Parsed::plain);
    }
    let marker = marker();
    let value = match serde_json::from_str(&cut(text, &arrays, marker)) {
        Ok(v) => v,
        Err(_) => return serde_json::from_str(text).map(Parsed::plain),
    };
    let slots = arrays.into_iter().map(|(_, slot)| slot).collect();
    Ok(Parsed { value, kept: Kept { marker, slots } })
}

/// A parse whose token arrays may still be held back: a marker (an array of two random
/// numbers and an index, which no file can name) stands in `value` for each array in `kept`.
pub struct Parsed {
    pub value: Value,
    pub kept: Kept,
}

impl Parsed {
    fn plain(value: Value) -> Self {
        Parsed { value, kept: Kept { marker: (0, 0), slots: Vec::new() } }
    }

    /// The `Value` serde_json builds from the text: every array in place.
    pub fn into_value(self) -> Value {
        let Parsed { mut value, mut kept } = self;
        for slot in &mut kept.slots {
            *slot = match std::mem::replace(slot, Slot::Empty) {
                Slot::Held(text) => Slot::Text(text, false),
                other => other,
            };
        }
        kept.restore(&mut value);
        value
    }
}

/// The token arrays of a `Parsed`, by marker index.
pub struct Kept {
    marker: (u64, u64),
    slots: Vec<Slot>,
}

/// One token array.
enum Slot {
    /// Read by the loop (numbers `LazyValue::number_array` does not keep as text).
    Values(Vec<Value>),
    /// Kept as text; whether all its elements are integers.
    Text(LazyValue, bool),
    /// Held for a reader: its marker stays in the tree until the reader takes it.
    Held(LazyValue),
    /// Placed in the tree or taken (or dropped with a repeated key, as serde_json drops it).
    Empty,
}

impl Kept {
    /// Whether the parse held back no array at all.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Holds the array that `v` stands for as text, when `v` is the marker of a kept array
    /// (with `integers`, of one whose elements are all integers): `restore` leaves its
    /// marker in place and `take` hands the text out. True when held.
    pub fn hold(&mut self, v: &Value, integers: bool) -> bool {
        let Some(slot) = self.slot(v) else { return false };
        match std::mem::replace(slot, Slot::Empty) {
            Slot::Text(text, all) if all || !integers => {
                *slot = Slot::Held(text);
                true
            }
            other => {
                *slot = other;
                false
            }
        }
    }

    /// The held array that `v` stands for, as text.
    pub fn take(&mut self, v: &Value) -> Option<LazyValue> {
        let slot = self.slot(v)?;
        match std::mem::replace(slot, Slot::Empty) {
            Slot::Held(text) => Some(text),
            other => {
                *slot = other;
                None
            }
        }
    }

    /// Puts every array that is not held into the tree (a walk of the tree, skipped when
    /// there is none).
    pub fn restore(&mut self, value: &mut Value) {
        let mut left = self.slots.iter().filter(|s| matches!(s, Slot::Values(_) | Slot::Text(..))).count();
        if left > 0 {
            restore(value, self.marker, &mut self.slots, &mut left);
        }
    }

    fn slot(&mut self, v: &Value) -> Option<&mut Slot> {
        let index = marker_index(v.as_array()?, self.marker)?;
        self.slots.get_mut(index)
    }
}

/// The flat number arrays under a token key, with their byte ranges, in text order: each `[`
/// (rarer than quotes) is checked for a token key before it. With `keep`, arrays of plain
/// numbers are kept as text.
fn find_arrays(text: &str, keep: bool) -> Vec<(Range<usize>, Slot)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = memchr::memchr(b'[', &bytes[from..]) {
        let open = from + found;
        from = open + 1;
        if !after_token_key(&bytes[..open]) {
            continue;
        }
        let Some(end) = closing(bytes, open) else { continue };
        let kept = keep.then(|| LazyValue::number_array(&text[open..end])).flatten();
        let slot = match kept {
            Some((text, n, integers)) if n >= MIN_ELEMENTS => Some(Slot::Text(text, integers)),
            Some(_) => None,
            None => {
                number_array(&text[open + 1..end - 1]).filter(|values| values.len() >= MIN_ELEMENTS).map(Slot::Values)
            }
        };
        if let Some(slot) = slot {
            out.push((open..end, slot));
            from = end;
        }
    }
    out
}

/// The end (after `]`) of the candidate array opening at `open`. The search stops at a
/// quote too: every candidate's key has one, so a text of many unclosed candidates is not
/// scanned to its end from each (quadratic).
fn closing(bytes: &[u8], open: usize) -> Option<usize> {
    let close = open + 1 + memchr::memchr2(b']', b'"', &bytes[open + 1..])?;
    (bytes[close] == b']').then_some(close + 1)
}

/// True when `before` ends with `"key"`, a colon and whitespace, for a token key whose opening
/// quote is not escaped.
fn after_token_key(before: &[u8]) -> bool {
    let Some(colon) = before.iter().rposition(|b| !is_ws(*b)) else {
        return false;
    };
    if before[colon] != b':' {
        return false;
    }
    let Some(close) = before[..colon].iter().rposition(|b| !is_ws(*b)) else {
        return false;
    };
    if before[close] != b'"' {
        return false;
    }
    let name = &before[..close];
    KEYS.iter().any(|key| {
        name.ends_with(key)
            && name.len() > key.len()
            && name[name.len() - key.len() - 1] == b'"'
            && !escaped(&name[..name.len() - key.len() - 1])
    })
}

/// True when `before` ends with an odd number of backslashes (the next quote is escaped).
fn escaped(before: &[u8]) -> bool {
    before.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(|b| is_ws(*b)) {
        i += 1;
    }
    i
}

/// Reads the body of `[n, n, ...]` (between the brackets): the numbers as serde_json makes
/// them, or `None` when any element is something this loop leaves to serde_json.
fn number_array(body: &str) -> Option<Vec<Value>> {
    let mut out = Vec::with_capacity(memchr::memchr_iter(b',', body.as_bytes()).count() + 1);
    let mut i = skip_ws(body.as_bytes(), 0);
    loop {
        let (v, next) = number(body, i)?;
        out.push(v);
        i = skip_ws(body.as_bytes(), next);
        match body.as_bytes().get(i) {
            Some(b',') => i = skip_ws(body.as_bytes(), i + 1),
            None => return Some(out),
            Some(_) => return None,
        }
    }
}

/// One JSON number at `start`: a `u64` or `i64` for integers serde_json keeps as such, an
/// `f64` (correctly rounded, as serde_json's `float_roundtrip` parse) for the rest.
fn number(text: &str, start: usize) -> Option<(Value, usize)> {
    let bytes = text.as_bytes();
    let negative = bytes.get(start) == Some(&b'-');
    let digits_start = start + usize::from(negative);
    let mut i = digits_start;
    let mut magnitude = 0u64;
    while let Some(&b) = bytes.get(i) {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        magnitude = magnitude.wrapping_mul(10).wrapping_add(u64::from(digit));
        i += 1;
    }
    let digits = i - digits_start;
    if digits == 0 || (digits > 1 && bytes[digits_start] == b'0') {
        return None;
    }
    if let Some(b'.' | b'e' | b'E') = bytes.get(i) {
        let end = fraction_and_exponent(bytes, i)?;
        return Some((float_value(&text[start..end])?, end));
    }
    Some((int_value(magnitude, digits, negative)?, i))
}

/// The end of a number's `.digits` and `e[+-]digits` parts from `i`, if they are well formed.
fn fraction_and_exponent(bytes: &[u8], mut i: usize) -> Option<usize> {
    if bytes.get(i) == Some(&b'.') {
        let after = skip_digits(bytes, i + 1);
        if after == i + 1 {
            return None;
        }
        i = after;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let after = skip_digits(bytes, i);
        if after == i {
            return None;
        }
        i = after;
    }
    Some(i)
}

fn skip_digits(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// An integer serde_json keeps as `u64` (up to 19 digits) or `i64` (negative, up to 18
/// digits, not `-0`, which serde_json makes a float).
fn int_value(magnitude: u64, digits: usize, negative: bool) -> Option<Value> {
    if digits > 19 - usize::from(negative) {
        return None;
    }
    match (negative, magnitude) {
        (false, m) => Some(Value::from(m)),
        (true, 0) => None,
        (true, m) => Some(Value::from(-i64::try_from(m).ok()?)),
    }
}

/// A float token, correctly rounded; out-of-range and overlong tokens are left to serde_json.
fn float_value(token: &str) -> Option<Value> {
    if token.len() > 40 {
        return None;
    }
    let f: f64 = token.parse().ok()?;
    Number::from_f64(f).filter(|_| f.is_finite()).map(Value::Number)
}

/// Two random numbers fixed for the process: a file cannot name them.
fn marker() -> (u64, u64) {
    static MARKER: OnceLock<(u64, u64)> = OnceLock::new();
    *MARKER.get_or_init(|| {
        let random = || std::collections::hash_map::RandomState::new().build_hasher().finish();
        (random(), random())
    })
}

/// The text with each array replaced by `[marker0,marker1,index]`.
fn cut(text: &str, arrays: &[(Range<usize>, Slot)], marker: (u64, u64)) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (index, (range, _)) in arrays.iter().enumerate() {
        out.push_str(&text[at..range.start]);
        let _ = write!(out, "[{},{},{index}]", marker.0, marker.1);
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Swaps every marker of an array not held for the array; stops once all are placed (a
/// marker under a key that appears twice in its object is dropped with it, as serde_json
/// keeps the last).
fn restore(value: &mut Value, marker: (u64, u64), slots: &mut [Slot], left: &mut usize) {
    let index = match &*value {
        Value::Array(items) => marker_index(items, marker),
        _ => None,
    };
    if let Some(index) = index {
        let Some(slot) = slots.get_mut(index) else { return };
        match std::mem::replace(slot, Slot::Empty) {
            Slot::Values(array) => *value = Value::Array(array),
            Slot::Text(text, _) => *value = text.into_value(),
            held => {
                *slot = held;
                return;
            }
        }
        *left -= 1;
        return;
    }
    let mut walk = |item: &mut Value| {
        if *left > 0 && (item.is_array() || item.is_object()) {
            restore(item, marker, slots, left);
        }
    };
    match value {
        Value::Array(items) => items.iter_mut().for_each(&mut walk),
        Value::Object(map) => map.values_mut().for_each(&mut walk),
        _ => {}
    }
}

fn marker_index(items: &[Value], marker: (u64, u64)) -> Option<usize> {
    match items {
        [a, b, index] if a.as_u64() == Some(marker.0) && b.as_u64() == Some(marker.1) => {
            usize::try_from(index.as_u64()?).ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic: the rules below (escapes, duplicates, numbers serde_json treats specially)
    /// appear in no real file; the real fixtures' digests cover the common shape.
    fn same(text: &str) {
        let ours = parse(text).map_err(|e| e.to_string());
        let theirs = serde_json::from_str::<Value>(text).map_err(|e| e.to_string());
        assert_eq!(ours, theirs, "{text}");
        let kept = parse_keeping(text).map(Parsed::into_value).map_err(|e| e.to_string());
        assert_eq!(kept, theirs, "{text}");
        if let (Ok(a), Ok(b)) = (&ours, &theirs) {
            assert_eq!(serde_json::to_string(a).ok(), serde_json::to_string(b).ok(), "{text}");
        }
    }

    const LONG: &str = "1, 2, 3, 4, 5, 6, 7, 8, 9";

    #[test]
    fn token_arrays_equal_serde_json() {
        let text = format!(
            r#"{{"a": [{{"prompt_token_ids": [{LONG}]}}, {{"logprobs": [{LONG}, 1e3]}}], "logprobs": [1, 2]}}"#
        );
        let lengths = |keep| {
            let arrays = find_arrays(&text, keep);
            arrays.iter().map(|(r, _)| text[r.clone()].matches(',').count() + 1).collect::<Vec<_>>()
        };
        assert_eq!(lengths(false), [9, 10]);
        assert_eq!(lengths(true), [9, 10]);
        same(&text);
        same(&format!(
            r#"{{"metrics": {{"prompt_token_ids": [{LONG}], "logprobs": [-0.1, -0.2, -0.30000000000000004, 1e-5, 2E+3, -1.5e-7, 0.0, -0.0, 3.14]}}}}"#
        ));
        same(&format!(r#"[{{"completion_token_ids" :[ {LONG} ] }}, {{"generation_token_ids":[{LONG}]}}]"#));
        same(&format!("{{\"generation_log_probs\":\n[\n{LONG}\n]\n}}"));
    }

    #[test]
    fn unusual_numbers_stay_with_serde_json() {
        for odd in [
            "-0",
            "18446744073709551615",
            "18446744073709551616",
            "123456789012345678901234",
            "-9223372036854775808",
            "-9223372036854775809",
            "1e400",
            "-1e400",
            "1e-400",
            "4.9e-324",
            "2.2250738585072011e-308",
            "0.1000000000000000055511151231257827021181583404541015625",
            "1.7976931348623157e308",
            "9007199254740993",
            "1.00000000000000011102230246251565404236316680908203125",
        ] {
            same(&format!(r#"{{"prompt_token_ids": [{LONG}, {odd}]}}"#));
            same(&format!(r#"{{"logprobs": [{odd}, {LONG}]}}"#));
        }
        for bad in ["01", "1.", ".5", "+1", "1e", "-", "1 2", "NaN", "\"1\"", "null", "[1]", "{}"] {
            same(&format!(r#"{{"prompt_token_ids": [{LONG}, {bad}]}}"#));
        }
        same(&format!(r#"{{"prompt_token_ids": [{LONG},]}}"#));
        same(&format!(r#"{{"prompt_token_ids": [{LONG}"#));
    }

    #[test]
    fn keys_inside_strings_and_duplicates() {
        same(&format!(r#"{{"a\"logprobs": [{LONG}], "b": "\"logprobs\": [{LONG}]"}}"#));
        same(&format!(r#"{{"x": "a\\"logprobs": [{LONG}]}}"#));
        same(&format!(r#"{{"a\\\"logprobs": [{LONG}]}}"#));
        same(&format!(r#"{{"logprobs": [{LONG}], "logprobs": [9, 9, 9, 9, 9, 9, 9, 9, 9]}}"#));
        same(&format!(r#"{{"logprobs": [{LONG}], "logprobs": 1}}"#));
        same(&format!(r#"{{"logprob\u0073": [{LONG}], "logprobs": [{LONG}, 10]}}"#));
        same(&format!(r#"{{"logprobs": [{LONG}], "x": [1, 2, 3], "logprobs" : {{"content": [{LONG}]}}}}"#));
    }

    /// Every real fixture file, and each line of it, parses to serde_json's `Value`; the
    /// figure pins how many token arrays the fixtures hold.
    #[test]
    fn real_fixtures_equal_serde_json() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
        let (files, _) = crate::discover(&[root]);
        let mut arrays = 0;
        for f in &files {
            let Ok(bytes) = crate::input::read_all(f) else { continue };
            let Ok(text) = std::str::from_utf8(&bytes) else { continue };
            let lines = text.lines().filter(|l| text.len() > l.len() && !l.trim().is_empty());
            for t in std::iter::once(text).chain(lines) {
                arrays += find_arrays(t, false).len();
                assert_eq!(find_arrays(t, true).len(), find_arrays(t, false).len(), "{}", f.display);
                let ours = parse(t).map_err(|e| e.to_string());
                let theirs = serde_json::from_str::<Value>(t).map_err(|e| e.to_string());
                assert!(ours == theirs, "{}", f.display);
                let kept = parse_keeping(t).map(Parsed::into_value).map_err(|e| e.to_string());
                assert!(kept == theirs, "{}", f.display);
            }
        }
        assert_eq!(arrays, 158);
    }

    /// Synthetic: what a reader holds stays a marker until taken, as its source text; an id
    /// array with a fraction is not held; everything else is put back as serde_json reads it.
    #[test]
    fn held_arrays_stay_text_until_taken() {
        let text = format!(
            r#"{{"steps": [{{"metrics": {{"prompt_token_ids": [{LONG}], "logprobs": [{LONG}, 0.5]}}}}],
                "ids": {{"prompt_token_ids": [{LONG}, 0.5]}}, "extra": {{"logprobs": [ {LONG} ]}}}}"#
        );
        let whole: Value = serde_json::from_str(&text).expect("JSON");
        let Parsed { mut value, mut kept } = parse_keeping(&text).expect("JSON");
        let ids = value["steps"][0]["metrics"]["prompt_token_ids"].clone();
        let logprobs = value["steps"][0]["metrics"]["logprobs"].clone();
        assert!(kept.hold(&ids, true));
        assert!(!kept.hold(&logprobs, true), "a fraction among ids");
        assert!(kept.hold(&logprobs, false));
        kept.restore(&mut value);
        assert_eq!(value["steps"][0]["metrics"]["prompt_token_ids"], ids, "a held array stays a marker");
        assert_eq!(value["ids"], whole["ids"]);
        assert_eq!(value["extra"], whole["extra"]);
        let taken = kept.take(&ids).expect("held");
        assert_eq!(taken.text(), Some(&*format!("[{LONG}]")));
        assert_eq!(taken.value(), &whole["steps"][0]["metrics"]["prompt_token_ids"]);
        assert!(kept.take(&ids).is_none(), "taken once");
        assert_eq!(
            kept.take(&logprobs).map(|t| t.into_value()),
            Some(whole["steps"][0]["metrics"]["logprobs"].clone())
        );
    }

    #[test]
    fn unclosed_candidates_are_left_to_serde_json() {
        let many =
            format!(r#"{{"a": [{}], "logprobs": [{LONG}]}}"#, r#"{"logprobs": [1, 2, "x"]}, "#.repeat(2_000) + "1");
        assert_eq!(find_arrays(&many, false).len(), 1);
        same(&many);
        same(&r#""logprobs": [1, 2"#.repeat(2_000));
    }

    /// The loop writes numbers as serde_json's `Number` holds them without its
    /// `arbitrary_precision` feature, which would keep `1.50` as written: this fails first
    /// if a dependency ever turns that feature on.
    #[test]
    fn serde_json_numbers_are_not_arbitrary_precision() {
        assert_eq!(serde_json::from_str::<Value>("1.50").map(|v| v.to_string()).ok().as_deref(), Some("1.5"));
    }

    #[test]
    fn nesting_limits_are_serde_json_s() {
        let deep = |n: usize| format!("{}{{\"logprobs\": [{LONG}]}}{}", "[".repeat(n), "]".repeat(n));
        same(&deep(126));
        same(&deep(127));
        same(&deep(200));
    }

    #[test]
    fn random_numbers_equal_serde_json() {
        // A small linear congruential generator: reproducible tokens of every shape.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        let mut tokens = Vec::new();
        for _ in 0..20_000 {
            let digits: String = (0..1 + next() % 22).map(|_| char::from(b'0' + (next() % 10) as u8)).collect();
            let digits = digits.trim_start_matches('0');
            let int = if digits.is_empty() { "0" } else { digits };
            let mut t = String::new();
            if next() % 2 == 0 {
                t.push('-');
            }
            t.push_str(int);
            if next() % 2 == 0 {
                t.push('.');
                t.push_str(&(0..1 + next() % 20).map(|_| char::from(b'0' + (next() % 10) as u8)).collect::<String>());
            }
            if next() % 3 == 0 {
                t.push_str(["e", "E", "e-", "e+"][(next() % 4) as usize]);
                t.push_str(&(next() % 330).to_string());
            }
            tokens.push(t);
        }
        for chunk in tokens.chunks(50) {
            same(&format!(r#"{{"logprobs": [{}]}}"#, chunk.join(", ")));
            for t in chunk {
                same(&format!(r#"{{"logprobs": [{LONG}, {t}]}}"#));
            }
        }
    }
}
