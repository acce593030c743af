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

/// Keys whose values are token ids or log probabilities (ATIF step metrics, NeMo Gym
/// responses, canonical records' metrics extras), without their quotes.
const KEYS: [&[u8]; 5] =
    [b"prompt_token_ids", b"completion_token_ids", b"logprobs", b"generation_token_ids", b"generation_log_probs"];

/// Shorter arrays stay with serde_json: the marker and the tree walk cost more than they save.
const MIN_ELEMENTS: usize = 8;

/// Parses JSON text into the `Value` serde_json builds, reading token arrays by a tight loop.
pub(crate) fn parse(text: &str) -> serde_json::Result<Value> {
    let arrays = find_arrays(text);
    if arrays.is_empty() {
        return serde_json::from_str(text);
    }
    let marker = marker();
    let mut value = match serde_json::from_str(&cut(text, &arrays, marker)) {
        Ok(v) => v,
        Err(_) => return serde_json::from_str(text),
    };
    let mut slots: Vec<Option<Vec<Value>>> = arrays.into_iter().map(|(_, a)| Some(a)).collect();
    let mut left = slots.len();
    restore(&mut value, marker, &mut slots, &mut left);
    Ok(value)
}

/// The flat number arrays under a token key, with their byte ranges, in text order: each `[`
/// (rarer than quotes) is checked for a token key before it.
fn find_arrays(text: &str) -> Vec<(Range<usize>, Vec<Value>)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = memchr::memchr(b'[', &bytes[from..]) {
        let open = from + found;
        from = open + 1;
        if !after_token_key(&bytes[..open]) {
            continue;
        }
        if let Some((end, values)) = number_array(text, open) {
            if values.len() >= MIN_ELEMENTS {
                out.push((open..end, values));
                from = end;
            }
        }
    }
    out
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

/// Reads `[n, n, ...]` from `open` (the `[`): the end after `]` and the numbers as serde_json
/// makes them, or `None` when any element is something this loop leaves to serde_json.
fn number_array(text: &str, open: usize) -> Option<(usize, Vec<Value>)> {
    let start = open + 1;
    // The search stops at a quote too: every candidate's key has one, so a text of many
    // unclosed candidates is not scanned to its end from each (quadratic).
    let close = start + memchr::memchr2(b']', b'"', &text.as_bytes()[start..])?;
    if text.as_bytes()[close] != b']' {
        return None;
    }
    let body = &text[start..close];
    let mut out = Vec::with_capacity(memchr::memchr_iter(b',', body.as_bytes()).count() + 1);
    let mut i = skip_ws(body.as_bytes(), 0);
    loop {
        let (v, next) = number(body, i)?;
        out.push(v);
        i = skip_ws(body.as_bytes(), next);
        match body.as_bytes().get(i) {
            Some(b',') => i = skip_ws(body.as_bytes(), i + 1),
            None => return Some((close + 1, out)),
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
fn cut(text: &str, arrays: &[(Range<usize>, Vec<Value>)], marker: (u64, u64)) -> String {
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

/// Swaps every marker in the tree for its array; stops once all are placed (a marker under a
/// key that appears twice in its object is dropped with it, as serde_json keeps the last).
fn restore(value: &mut Value, marker: (u64, u64), slots: &mut [Option<Vec<Value>>], left: &mut usize) {
    match value {
        Value::Array(items) => {
            if let Some(index) = marker_index(items, marker) {
                if let Some(array) = slots.get_mut(index).and_then(Option::take) {
                    *items = array;
                    *left -= 1;
                }
                return;
            }
            for item in items.iter_mut().filter(|v| v.is_array() || v.is_object()) {
                if *left == 0 {
                    return;
                }
                restore(item, marker, slots, left);
            }
        }
        Value::Object(map) => {
            for item in map.values_mut().filter(|v| v.is_array() || v.is_object()) {
                if *left == 0 {
                    return;
                }
                restore(item, marker, slots, left);
            }
        }
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
        assert_eq!(find_arrays(&text).iter().map(|(_, a)| a.len()).collect::<Vec<_>>(), [9, 10]);
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
                arrays += find_arrays(t).len();
                let ours = parse(t).map_err(|e| e.to_string());
                let theirs = serde_json::from_str::<Value>(t).map_err(|e| e.to_string());
                assert!(ours == theirs, "{}", f.display);
            }
        }
        assert_eq!(arrays, 158);
    }

    #[test]
    fn unclosed_candidates_are_left_to_serde_json() {
        let many =
            format!(r#"{{"a": [{}], "logprobs": [{LONG}]}}"#, r#"{"logprobs": [1, 2, "x"]}, "#.repeat(2_000) + "1");
        assert_eq!(find_arrays(&many).len(), 1);
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
