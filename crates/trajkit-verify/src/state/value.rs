//! SQLite values, their canonical text encoding and SQLite's sort order.
//!
//! The encoding is one JSON value per column: `null`, an integer, a real in shortest
//! round-trip form (always with `.` or an exponent, so it never reads back as an integer),
//! a string for UTF-8 text, and tagged objects for what JSON cannot say directly:
//! `{"blob":"<hex>"}`, `{"real":"inf"}` / `{"real":"-inf"}`, `{"text_hex":"<hex>"}` (text
//! that is not valid UTF-8). Equal values always encode to the same bytes.

use std::cmp::Ordering;

use rusqlite::types::ValueRef;
use serde_json::Value;

/// One column value as SQLite stores it (text kept as bytes: SQLite does not enforce UTF-8).
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl Val {
    /// Copies a value out of a SQLite row.
    pub fn from_ref(v: ValueRef<'_>) -> Val {
        match v {
            ValueRef::Null => Val::Null,
            ValueRef::Integer(i) => Val::Int(i),
            ValueRef::Real(f) => Val::Real(f),
            ValueRef::Text(t) => Val::Text(t.to_vec()),
            ValueRef::Blob(b) => Val::Blob(b.to_vec()),
        }
    }

    /// Appends the canonical encoding of this value to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode_ref(self.as_ref(), out)
    }

    /// Borrowed view, to share the encoder with rows read straight from SQLite.
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Val::Null => ValueRef::Null,
            Val::Int(i) => ValueRef::Integer(*i),
            Val::Real(f) => ValueRef::Real(*f),
            Val::Text(t) => ValueRef::Text(t),
            Val::Blob(b) => ValueRef::Blob(b),
        }
    }

    /// The canonical encoding as a JSON value (for reports).
    pub fn to_json(&self) -> Value {
        let mut buf = Vec::new();
        self.encode(&mut buf);
        serde_json::from_slice(&buf).unwrap_or(Value::Null)
    }

    /// Reads a value back from its canonical encoding; `None` when it is not one.
    pub fn from_json(v: &Value) -> Option<Val> {
        Some(match v {
            Value::Null => Val::Null,
            Value::Number(n) => match n.as_i64() {
                Some(i) if !n.is_f64() => Val::Int(i),
                _ => Val::Real(n.as_f64()?),
            },
            Value::String(s) => Val::Text(s.as_bytes().to_vec()),
            Value::Object(m) if m.len() == 1 => {
                let (tag, inner) = m.iter().next()?;
                let s = inner.as_str()?;
                match (tag.as_str(), s) {
                    ("blob", hex) => Val::Blob(from_hex(hex)?),
                    ("text_hex", hex) => Val::Text(from_hex(hex)?),
                    ("real", "inf") => Val::Real(f64::INFINITY),
                    ("real", "-inf") => Val::Real(f64::NEG_INFINITY),
                    _ => return None,
                }
            }
            _ => return None,
        })
    }

    /// Short human form: text quoted, blobs as `x'..'` (SQL literal style).
    pub fn display(&self) -> String {
        match self {
            Val::Null => "NULL".into(),
            Val::Int(i) => i.to_string(),
            Val::Real(_) => String::from_utf8_lossy(&self.encoded()).into_owned(),
            Val::Text(t) => match std::str::from_utf8(t) {
                Ok(s) => serde_json::to_string(s).unwrap_or_default(),
                Err(_) => format!("text_hex'{}'", hex(t)),
            },
            Val::Blob(b) => format!("x'{}'", hex(b)),
        }
    }

    /// The canonical encoding as bytes.
    pub fn encoded(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        self.encode(&mut buf);
        buf
    }
}

/// A finite real in its canonical form: the shortest digits that read back to the same
/// double; plain decimal (always with a fraction: `1.0`) when 1e-7 <= |x| < 1e21 or x is
/// zero, otherwise `d.ddde±x` without a `+` (`1e300`, `1.5e-8`).
pub fn format_real(f: f64) -> String {
    // `{:e}` is Rust's shortest round-trip form in scientific notation: `-1.25e-7`, `1e300`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-7..21).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        return format!("{sign}{first}{frac}e{exp}");
    }
    let point = exp + 1;
    let len = digits.len() as i32;
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else if point >= len {
        format!("{sign}{digits}{}.0", "0".repeat((point - len) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

/// Appends the canonical encoding of a SQLite value to `out`.
pub fn encode_ref(v: ValueRef<'_>, out: &mut Vec<u8>) {
    match v {
        ValueRef::Null => out.extend_from_slice(b"null"),
        ValueRef::Integer(i) => {
            let _ = serde_json::to_writer(&mut *out, &i);
        }
        ValueRef::Real(f) if f.is_finite() => out.extend_from_slice(format_real(f).as_bytes()),
        ValueRef::Real(f) => out.extend_from_slice(if f > 0.0 { br#"{"real":"inf"}"# } else { br#"{"real":"-inf"}"# }),
        ValueRef::Text(t) => match std::str::from_utf8(t) {
            Ok(s) => {
                let _ = serde_json::to_writer(&mut *out, s);
            }
            Err(_) => tagged_hex(out, "text_hex", t),
        },
        ValueRef::Blob(b) => tagged_hex(out, "blob", b),
    }
}

fn tagged_hex(out: &mut Vec<u8>, tag: &str, bytes: &[u8]) {
    out.extend_from_slice(b"{\"");
    out.extend_from_slice(tag.as_bytes());
    out.extend_from_slice(b"\":\"");
    push_hex(out, bytes);
    out.extend_from_slice(b"\"}");
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    String::from_utf8(out).unwrap_or_default()
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// SQLite's sort order with the BINARY collation: NULL, then numbers (integers and reals
/// compared by value), then text (bytewise), then blobs (bytewise).
pub fn sqlite_cmp(a: &Val, b: &Val) -> Ordering {
    fn class(v: &Val) -> u8 {
        match v {
            Val::Null => 0,
            Val::Int(_) | Val::Real(_) => 1,
            Val::Text(_) => 2,
            Val::Blob(_) => 3,
        }
    }
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => x.cmp(y),
        (Val::Real(x), Val::Real(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Val::Int(x), Val::Real(y)) => int_real_cmp(*x, *y),
        (Val::Real(x), Val::Int(y)) => int_real_cmp(*y, *x).reverse(),
        (Val::Text(x), Val::Text(y)) | (Val::Blob(x), Val::Blob(y)) => x.cmp(y),
        _ => class(a).cmp(&class(b)),
    }
}

/// Exact comparison of an integer with a real (no rounding of the integer to f64).
fn int_real_cmp(i: i64, r: f64) -> Ordering {
    if r.is_nan() {
        return Ordering::Equal;
    }
    // 2^63 as f64 is exact; every real at or beyond it is above any i64.
    if r >= 9_223_372_036_854_775_808.0 {
        return Ordering::Less;
    }
    if r < -9_223_372_036_854_775_808.0 {
        return Ordering::Greater;
    }
    let t = r.trunc();
    // `t` is integral and inside the i64 range, so the cast is exact.
    let ti = t as i64;
    match i.cmp(&ti) {
        Ordering::Equal => 0.0f64.partial_cmp(&(r - t)).unwrap_or(Ordering::Equal),
        o => o,
    }
}

/// Compares two keys column by column in SQLite order.
pub fn key_cmp(a: &[Val], b: &[Val]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match sqlite_cmp(x, y) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: Val) -> String {
        String::from_utf8(v.encoded()).unwrap()
    }

    #[test]
    fn encoding_is_canonical_and_reads_back() {
        let cases = [
            (Val::Null, "null"),
            (Val::Int(-42), "-42"),
            (Val::Real(1.0), "1.0"),
            (Val::Real(0.1), "0.1"),
            (Val::Real(1e300), "1e300"),
            (Val::Real(-1.5e-8), "-1.5e-8"),
            (Val::Real(1.25e-7), "0.000000125"),
            (Val::Real(123456.789), "123456.789"),
            (Val::Real(1e20), "100000000000000000000.0"),
            (Val::Real(1e21), "1e21"),
            (Val::Real(-0.0), "-0.0"),
            (Val::Real(f64::MAX), "1.7976931348623157e308"),
            (Val::Real(f64::INFINITY), r#"{"real":"inf"}"#),
            (Val::Text(b"a\"b\n".to_vec()), r#""a\"b\n""#),
            (Val::Text(vec![0xff, 0x41]), r#"{"text_hex":"ff41"}"#),
            (Val::Blob(vec![0, 1, 254]), r#"{"blob":"0001fe"}"#),
        ];
        for (v, want) in cases {
            assert_eq!(enc(v.clone()), want);
            let parsed: Value = serde_json::from_str(want).unwrap();
            assert_eq!(Val::from_json(&parsed), Some(v));
        }
    }

    #[test]
    fn order_follows_sqlite() {
        let mut vals = [
            Val::Blob(vec![0]),
            Val::Text(b"b".to_vec()),
            Val::Real(2.5),
            Val::Int(2),
            Val::Null,
            Val::Text(b"a".to_vec()),
            Val::Int(3),
        ];
        vals.sort_by(sqlite_cmp);
        let shown: Vec<String> = vals.iter().map(Val::display).collect();
        assert_eq!(shown, ["NULL", "2", "2.5", "3", "\"a\"", "\"b\"", "x'00'"]);
        assert_eq!(sqlite_cmp(&Val::Int(i64::MAX), &Val::Real(9.223372036854776e18)), Ordering::Less);
        assert_eq!(sqlite_cmp(&Val::Int(-3), &Val::Real(-2.5)), Ordering::Less);
        assert_eq!(sqlite_cmp(&Val::Int(2), &Val::Real(2.0)), Ordering::Equal);
    }
}
