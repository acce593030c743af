//! JSON numeric arrays, streamed. Accepts what Python's `json` writes for non-finite floats
//! (`NaN`, `Infinity`, `-Infinity`), which is not JSON, and reports `null` inside arrays
//! (what JavaScript writes for them). Every number belongs to the array named by its path
//! with indices dropped: `{"u": [[1, 2]]}` → `$.u`; `[{"t": 0, "v": [..]}, ...]` → `$[*].v`.

use std::collections::HashMap;
use std::io::BufRead;

use super::{ArrayReport, DiagnoseError, NonFinite, Stats};

/// Deepest nesting accepted (as trajkit's readers).
const MAX_DEPTH: usize = 128;

enum Seg {
    Key(String),
    Array,
}

/// One named array being collected: its figures and the index of its first non-finite value.
struct Named {
    name: String,
    stats: Stats,
    first_index: Option<Vec<u64>>,
    /// The index of every value, when values are kept.
    indices: Option<Vec<Vec<u64>>>,
}

struct Scan<'p, R> {
    r: R,
    offset: u64,
    path: &'p str,
    segs: Vec<Seg>,
    indices: Vec<u64>,
    arrays: Vec<Named>,
    by_name: HashMap<String, usize>,
    current: Option<usize>,
    keep: bool,
}

pub(super) fn read<R: BufRead>(r: R, path: &str, keep: bool) -> Result<Vec<ArrayReport>, DiagnoseError> {
    let mut s = Scan {
        r,
        offset: 0,
        path,
        segs: Vec::new(),
        indices: Vec::new(),
        arrays: Vec::new(),
        by_name: HashMap::new(),
        current: None,
        keep,
    };
    s.value(0)?;
    s.ws()?;
    if s.peek()?.is_some() {
        return Err(s.err("data after the JSON value"));
    }
    Ok(s.arrays
        .into_iter()
        .map(|a| {
            let index = a.first_index.unwrap_or_default();
            let mut report = a.stats.report(a.name, "json".into(), None, move |_| index.clone());
            if let Some(kept) = report.kept.as_mut() {
                kept.indices = a.indices;
            }
            report
        })
        .collect())
}

impl<R: BufRead> Scan<'_, R> {
    fn err(&self, message: &str) -> DiagnoseError {
        DiagnoseError::Invalid { path: self.path.to_string(), message: format!("offset {}: {message}", self.offset) }
    }

    fn io(&self, source: std::io::Error) -> DiagnoseError {
        DiagnoseError::Io { path: self.path.to_string(), source }
    }

    fn peek(&mut self) -> Result<Option<u8>, DiagnoseError> {
        match self.r.fill_buf() {
            Ok(buf) => Ok(buf.first().copied()),
            Err(e) => Err(self.io(e)),
        }
    }

    fn bump(&mut self) {
        self.r.consume(1);
        self.offset += 1;
    }

    fn next(&mut self) -> Result<u8, DiagnoseError> {
        let b = self.peek()?.ok_or_else(|| self.err("unexpected end of file"))?;
        self.bump();
        Ok(b)
    }

    fn ws(&mut self) -> Result<(), DiagnoseError> {
        while self.peek()?.is_some_and(|b| b.is_ascii_whitespace()) {
            self.bump();
        }
        Ok(())
    }

    fn word(&mut self, word: &str) -> Result<(), DiagnoseError> {
        for expected in word.bytes() {
            if self.next()? != expected {
                return Err(self.err(&format!("expected {word}")));
            }
        }
        Ok(())
    }

    fn value(&mut self, depth: usize) -> Result<(), DiagnoseError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested deeper than 128 levels"));
        }
        self.ws()?;
        match self.peek()? {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(drop),
            Some(b't') => self.word("true"),
            Some(b'f') => self.word("false"),
            Some(b'n') => {
                self.word("null")?;
                if !self.indices.is_empty() {
                    self.record(|s| s.special(NonFinite::Null, None));
                }
                Ok(())
            }
            Some(b'N') => {
                self.word("NaN")?;
                self.record(|s| s.float(f64::NAN));
                Ok(())
            }
            Some(b'I') => {
                self.word("Infinity")?;
                self.record(|s| s.float(f64::INFINITY));
                Ok(())
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected character")),
            None => Err(self.err("unexpected end of file")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<(), DiagnoseError> {
        self.bump();
        self.ws()?;
        if self.peek()? == Some(b'}') {
            self.bump();
            return Ok(());
        }
        loop {
            self.ws()?;
            if self.peek()? != Some(b'"') {
                return Err(self.err("expected a key"));
            }
            let key = self.string()?;
            self.ws()?;
            if self.next()? != b':' {
                return Err(self.err("expected ':'"));
            }
            self.segs.push(Seg::Key(key));
            self.current = None;
            self.value(depth + 1)?;
            self.segs.pop();
            self.current = None;
            self.ws()?;
            match self.next()? {
                b',' => continue,
                b'}' => return Ok(()),
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), DiagnoseError> {
        self.bump();
        self.segs.push(Seg::Array);
        self.indices.push(0);
        self.ws()?;
        if self.peek()? == Some(b']') {
            self.bump();
        } else {
            loop {
                self.value(depth + 1)?;
                if let Some(i) = self.indices.last_mut() {
                    *i += 1;
                }
                self.ws()?;
                match self.next()? {
                    b',' => continue,
                    b']' => break,
                    _ => return Err(self.err("expected ',' or ']'")),
                }
            }
        }
        self.segs.pop();
        self.indices.pop();
        Ok(())
    }

    /// A number (or `-Infinity`); a literal beyond the float64 range is an overflow.
    fn number(&mut self) -> Result<(), DiagnoseError> {
        let mut text = String::new();
        while let Some(b) = self.peek()? {
            if b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E') {
                text.push(b as char);
                self.bump();
            } else {
                break;
            }
        }
        if text == "-" && self.peek()? == Some(b'I') {
            self.word("Infinity")?;
            self.record(|s| s.float(f64::NEG_INFINITY));
            return Ok(());
        }
        let v: f64 = text.parse().map_err(|_| self.err(&format!("bad number {text:?}")))?;
        match NonFinite::of(v) {
            Some(kind) => {
                let shown: String = text.chars().take(32).collect();
                self.record(|s| s.special(kind, Some(format!("overflow: {shown}"))));
            }
            None => self.record(|s| s.float(v)),
        }
        Ok(())
    }

    /// A string, unescaped (keys name arrays; other strings are skipped).
    fn string(&mut self) -> Result<String, DiagnoseError> {
        self.bump();
        let mut bytes = Vec::new();
        loop {
            match self.next()? {
                b'"' => break,
                b'\\' => match self.next()? {
                    b'u' => {
                        let c = self.unicode()?;
                        let mut tmp = [0u8; 4];
                        bytes.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                    }
                    b'n' => bytes.push(b'\n'),
                    b't' => bytes.push(b'\t'),
                    b'r' => bytes.push(b'\r'),
                    b'b' => bytes.push(8),
                    b'f' => bytes.push(12),
                    other => bytes.push(other),
                },
                b => bytes.push(b),
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn hex4(&mut self) -> Result<u32, DiagnoseError> {
        let mut v = 0;
        for _ in 0..4 {
            let d = (self.next()? as char).to_digit(16).ok_or_else(|| self.err("bad \\u escape"))?;
            v = v * 16 + d;
        }
        Ok(v)
    }

    /// `\uXXXX`, joining a surrogate pair; a lone surrogate becomes U+FFFD.
    fn unicode(&mut self) -> Result<char, DiagnoseError> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) && self.peek()? == Some(b'\\') {
            self.bump();
            if self.next()? == b'u' {
                let lo = self.hex4()?;
                let code = 0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF);
                return Ok(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
        }
        Ok(char::from_u32(hi).unwrap_or('\u{FFFD}'))
    }

    /// Adds a value to the array the current path names.
    fn record(&mut self, add: impl FnOnce(&mut Stats)) {
        let i = match self.current {
            Some(i) => i,
            None => {
                let name = self.name();
                let i = match self.by_name.get(&name) {
                    Some(&i) => i,
                    None => {
                        let (stats, indices) = (Stats::new(self.keep), self.keep.then(Vec::new));
                        self.arrays.push(Named { name: name.clone(), stats, first_index: None, indices });
                        self.by_name.insert(name, self.arrays.len() - 1);
                        self.arrays.len() - 1
                    }
                };
                self.current = Some(i);
                i
            }
        };
        let a = &mut self.arrays[i];
        add(&mut a.stats);
        if let Some(indices) = &mut a.indices {
            indices.push(self.indices.clone());
        }
        if a.stats.first.is_some() && a.first_index.is_none() {
            a.first_index = Some(self.indices.clone());
        }
    }

    /// The path with array indices as `[*]` and trailing ones dropped.
    fn name(&self) -> String {
        let end = self.segs.iter().rposition(|s| matches!(s, Seg::Key(_))).map_or(0, |i| i + 1);
        let mut out = String::from("$");
        for s in &self.segs[..end] {
            match s {
                Seg::Array => out.push_str("[*]"),
                Seg::Key(k) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                    out.push('.');
                    out.push_str(k);
                }
                Seg::Key(k) => out.push_str(&format!("[{}]", serde_json::Value::String(k.clone()))),
            }
        }
        out
    }
}
