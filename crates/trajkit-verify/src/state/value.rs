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
    let mut out = Vec::with_capacity(24);
    push_real(&mut out, f);
    String::from_utf8(out).unwrap_or_default()
}

/// A small stack buffer for `{:e}` (at most 24 bytes for an f64).
struct Sci {
    buf: [u8; 40],
    len: usize,
}

impl std::fmt::Write for Sci {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Appends `format_real(f)` to `out` without allocating.
fn push_real(out: &mut Vec<u8>, f: f64) {
    use std::fmt::Write as _;
    // `{:e}` is Rust's shortest round-trip form in scientific notation: `-1.25e-7`, `1e300`.
    let mut sci = Sci { buf: [0; 40], len: 0 };
    let _ = write!(sci, "{f:e}");
    let text = &sci.buf[..sci.len];
    let e = text.iter().position(|b| *b == b'e').unwrap_or(text.len());
    let exp: i32 =
        std::str::from_utf8(text.get(e + 1..).unwrap_or(b"0")).ok().and_then(|x| x.parse().ok()).unwrap_or(0);
    let (negative, mantissa) = match text[..e].split_first() {
        Some((b'-', m)) => (true, m),
        _ => (false, &text[..e]),
    };
    let mut digits = [0u8; 24];
    let mut n = 0;
    for &b in mantissa.iter().filter(|b| **b != b'.') {
        if n < digits.len() {
            digits[n] = b;
            n += 1;
        }
    }
    let digits = &digits[..n.max(1)];
    if negative {
        out.push(b'-');
    }
    if !(-7..21).contains(&exp) {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        let _ = serde_json::to_writer(&mut *out, &exp);
        return;
    }
    let point = exp + 1;
    let len = digits.len() as i32;
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-point) as usize));
        out.extend_from_slice(digits);
    } else if point >= len {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', (point - len) as usize));
        out.extend_from_slice(b".0");
    } else {
        let (int, frac) = digits.split_at(point as usize);
        out.extend_from_slice(int);
        out.push(b'.');
        out.extend_from_slice(frac);
    }
}

/// Appends the canonical encoding of a SQLite value to `out`.
pub fn encode_ref(v: ValueRef<'_>, out: &mut Vec<u8>) {
    match v {
        ValueRef::Null => out.extend_from_slice(b"null"),
        ValueRef::Integer(i) => {
            let _ = serde_json::to_writer(&mut *out, &i);
        }
        ValueRef::Real(f) if f.is_finite() => push_real(out, f),
        ValueRef::Real(f) => out.extend_from_slice(if f > 0.0 { br#"{"real":"inf"}"# } else { br#"{"real":"-inf"}"# }),
        ValueRef::Text(t) => match std::str::from_utf8(t) {
            // Most text needs no escape: copy it (what serde_json would write, byte for byte).
            Ok(_) if t.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\') => {
                out.push(b'"');
                out.extend_from_slice(t);
                out.push(b'"');
            }
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
    let start = out.len();
    out.resize(start + bytes.len() * 2, 0);
    for (pair, b) in out[start..].chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX[(b >> 4) as usize];
        pair[1] = HEX[(b & 15) as usize];
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

/// Parses one row of a table capture (a JSON array of canonical values) straight into
/// values, without an intermediate JSON tree; `None` when the line is not canonical.
pub fn parse_row(line: &[u8], capacity: usize) -> Option<Vec<Val>> {
    let mut p = RowParser { s: line, i: 0 };
    p.eat(b'[')?;
    let mut row = Vec::with_capacity(capacity);
    if p.peek() == Some(b']') {
        p.i += 1;
    } else {
        loop {
            row.push(p.value()?);
            match p.next()? {
                b',' => continue,
                b']' => break,
                _ => return None,
            }
        }
    }
    (p.i == line.len()).then_some(row)
}

struct RowParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> RowParser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    fn literal(&mut self, text: &[u8]) -> Option<()> {
        let end = self.i + text.len();
        (self.s.get(self.i..end)? == text).then(|| self.i = end)
    }

    fn value(&mut self) -> Option<Val> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|_| Val::Null),
            b'"' => self.string().map(Val::Text),
            b'{' => self.tagged(),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// A JSON string; escapes are decoded by serde_json (rare in application data).
    fn string(&mut self) -> Option<Vec<u8>> {
        let start = self.i;
        self.eat(b'"')?;
        let mut escaped = false;
        loop {
            match self.next()? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.next()?;
                }
                _ => {}
            }
        }
        let raw = &self.s[start..self.i];
        if escaped {
            serde_json::from_slice::<String>(raw).ok().map(String::into_bytes)
        } else {
            Some(raw[1..raw.len() - 1].to_vec())
        }
    }

    fn number(&mut self) -> Option<Val> {
        let start = self.i;
        while matches!(self.peek(), Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        if text.contains(['.', 'e', 'E']) {
            text.parse().ok().map(Val::Real)
        } else {
            text.parse().ok().map(Val::Int)
        }
    }

    /// `{"blob":"hex"}`, `{"text_hex":"hex"}`, `{"real":"inf"}`, `{"real":"-inf"}`.
    fn tagged(&mut self) -> Option<Val> {
        self.eat(b'{')?;
        let tag = self.string()?;
        self.eat(b':')?;
        let arg = self.string()?;
        self.eat(b'}')?;
        match (tag.as_slice(), arg.as_slice()) {
            (b"blob", h) => Some(Val::Blob(from_hex(std::str::from_utf8(h).ok()?)?)),
            (b"text_hex", h) => Some(Val::Text(from_hex(std::str::from_utf8(h).ok()?)?)),
            (b"real", b"inf") => Some(Val::Real(f64::INFINITY)),
            (b"real", b"-inf") => Some(Val::Real(f64::NEG_INFINITY)),
            _ => None,
        }
    }
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
    fn rows_parse_back_to_the_values_they_encode() {
        let row = vec![
            Val::Null,
            Val::Int(-9_223_372_036_854_775_808),
            Val::Real(-1.5e-8),
            Val::Real(f64::NEG_INFINITY),
            Val::Text("quote \" back\\slash \u{1} é".as_bytes().to_vec()),
            Val::Text(vec![0xff, 0x41]),
            Val::Blob(vec![0, 255]),
        ];
        let mut line = b"[".to_vec();
        for (i, v) in row.iter().enumerate() {
            if i > 0 {
                line.push(b',');
            }
            v.encode(&mut line);
        }
        line.push(b']');
        assert_eq!(parse_row(&line, 7), Some(row));
        assert_eq!(parse_row(b"[]", 0), Some(vec![]));
        assert_eq!(parse_row(b"[1,]", 2), None);
        assert_eq!(parse_row(b"[1] ", 1), None);
        assert_eq!(parse_row(b"[{\"x\":\"1\"}]", 1), None);
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
