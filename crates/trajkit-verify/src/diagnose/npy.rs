//! The `.npy` format (numpy's `NEP 1`): magic, version 1.0 / 2.0 / 3.0, a header that is a
//! Python dict literal (`descr`, `fortran_order`, `shape`), then the raw values.

use std::io::Read;

use super::{fill, ArrayReport, DiagnoseError, Stats};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Largest header accepted (numpy itself writes a few hundred bytes).
const MAX_HEADER: usize = 1 << 20;

/// Value types read: floats, signed and unsigned integers, booleans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Float,
    Int,
    UInt,
    Bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Dtype {
    kind: Kind,
    size: usize,
    big_endian: bool,
}

/// The parsed header.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// Reads one array, streaming its values.
pub(super) fn read<R: Read>(mut r: R, array: &str, path: &str, keep: bool) -> Result<ArrayReport, DiagnoseError> {
    let invalid = |message: String| DiagnoseError::Invalid { path: path.to_string(), message };
    let io = |source| DiagnoseError::Io { path: path.to_string(), source };
    let mut lead = [0u8; 8];
    if fill(&mut r, &mut lead).map_err(io)? < 8 || &lead[..6] != MAGIC {
        return Err(invalid("not a .npy array (no \\x93NUMPY magic)".into()));
    }
    let (major, minor) = (lead[6], lead[7]);
    let len_bytes = match major {
        1 => 2,
        2 | 3 => 4,
        _ => {
            return Err(invalid(format!("offset 6: .npy version {major}.{minor} is not supported (1.0, 2.0, 3.0 are)")))
        }
    };
    let mut len = [0u8; 4];
    if fill(&mut r, &mut len[..len_bytes]).map_err(io)? < len_bytes {
        return Err(invalid("offset 8: the file ends inside the header length".into()));
    }
    let header_len = u32::from_le_bytes(len) as usize;
    if header_len > MAX_HEADER {
        return Err(invalid(format!("offset 8: header of {header_len} bytes is too large")));
    }
    let mut raw = vec![0u8; header_len];
    if fill(&mut r, &mut raw).map_err(io)? < header_len {
        return Err(invalid(format!("offset {}: the file ends inside the header", 8 + len_bytes)));
    }
    // v1/v2 headers are latin-1, v3 UTF-8; every byte that matters is ASCII.
    let text = String::from_utf8_lossy(&raw);
    let header = parse_header(&text).map_err(|m| invalid(format!("header: {m}")))?;
    let dtype = parse_dtype(&header.descr).map_err(|m| invalid(format!("array {array}: {m}")))?;
    let count = header.shape.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n));
    let bytes = count.and_then(|c| c.checked_mul(dtype.size as u64));
    let (Some(count), Some(bytes)) = (count, bytes) else {
        return Err(invalid(format!("array {array}: shape {:?} is too large", header.shape)));
    };
    let data_offset = (8 + len_bytes + header_len) as u64;
    let stats = stream(&mut r, dtype, bytes, keep).map_err(|e| match e {
        Stream::Io(source) => io(source),
        Stream::Short(got) => invalid(format!(
            "array {array}: data ends at offset {} after {got} of {bytes} bytes ({} of {count} values)",
            data_offset + got,
            got / dtype.size as u64
        )),
        Stream::Trailing => {
            invalid(format!("array {array}: bytes after the {count} values (offset {})", data_offset + bytes))
        }
    })?;
    let shape = header.shape.clone();
    let fortran = header.fortran_order;
    let locate = move |position: u64| unravel(position, &header.shape, header.fortran_order);
    let mut report = stats.report(array.to_string(), header.descr.clone(), Some(shape.clone()), locate);
    if let Some(kept) = report.kept.as_mut().filter(|_| fortran) {
        kept.values = c_order(&kept.values, &shape);
    }
    Ok(report)
}

/// Values of a Fortran-order file in row-major (C) order.
fn c_order(values: &[f64], shape: &[u64]) -> Vec<f64> {
    let mut out = vec![0.0; values.len()];
    for (p, v) in values.iter().enumerate() {
        let at = super::c_flat(&unravel(p as u64, shape, true), shape) as usize;
        if let Some(slot) = out.get_mut(at) {
            *slot = *v;
        }
    }
    out
}

enum Stream {
    Io(std::io::Error),
    Short(u64),
    Trailing,
}

/// Feeds `bytes` bytes of values to the statistics, 1 MiB at a time.
fn stream<R: Read>(r: &mut R, dtype: Dtype, bytes: u64, keep: bool) -> Result<Stats, Stream> {
    let chunk = ((1 << 20) / dtype.size) * dtype.size;
    let mut buf = vec![0u8; chunk.min(bytes as usize).max(dtype.size)];
    let mut stats = Stats::new(keep);
    let mut done = 0u64;
    while done < bytes {
        let want = (bytes - done).min(buf.len() as u64) as usize;
        let got = fill(r, &mut buf[..want]).map_err(Stream::Io)?;
        if got < want {
            return Err(Stream::Short(done + got as u64));
        }
        for item in buf[..want].chunks_exact(dtype.size) {
            value(item, dtype, &mut stats);
        }
        done += want as u64;
    }
    let mut extra = [0u8; 1];
    if fill(r, &mut extra).map_err(Stream::Io)? > 0 {
        return Err(Stream::Trailing);
    }
    Ok(stats)
}

/// Decodes one value into the statistics.
fn value(item: &[u8], d: Dtype, stats: &mut Stats) {
    let mut b = [0u8; 8];
    b[..d.size].copy_from_slice(item);
    if d.big_endian {
        b[..d.size].reverse();
    }
    match (d.kind, d.size) {
        (Kind::Float, 2) => stats.float(half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64()),
        (Kind::Float, 4) => stats.float(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        (Kind::Float, _) => stats.float(f64::from_le_bytes(b)),
        (Kind::Int, n) => {
            // Sign-extend from n bytes.
            let shift = 64 - 8 * n as u32;
            stats.int(i128::from((i64::from_le_bytes(b) << shift) >> shift))
        }
        (Kind::UInt, _) => stats.int(i128::from(u64::from_le_bytes(b))),
        (Kind::Bool, _) => stats.int(i128::from(b[0] != 0)),
    }
}

/// Index of the value at file position `p` (C order, or first axis fastest in Fortran order).
pub(super) fn unravel(mut p: u64, shape: &[u64], fortran: bool) -> Vec<u64> {
    let mut index = vec![0u64; shape.len()];
    let axes: Vec<usize> = if fortran { (0..shape.len()).collect() } else { (0..shape.len()).rev().collect() };
    for axis in axes {
        let n = shape[axis].max(1);
        index[axis] = p % n;
        p /= n;
    }
    index
}

/// `<f8`, `>i2`, `|u1`, `|b1`: byte order, kind, size.
fn parse_dtype(descr: &str) -> Result<Dtype, String> {
    let unsupported =
        || format!("dtype {descr:?} is not supported (floats f2 f4 f8, ints i1-i8, uints u1-u8, bool b1)");
    let mut chars = descr.chars();
    let order = chars.next().ok_or_else(unsupported)?;
    let kind = match chars.next() {
        Some('f') => Kind::Float,
        Some('i') => Kind::Int,
        Some('u') => Kind::UInt,
        Some('b') => Kind::Bool,
        _ => return Err(unsupported()),
    };
    let size: usize = chars.as_str().parse().map_err(|_| unsupported())?;
    let size_ok = match kind {
        Kind::Float => matches!(size, 2 | 4 | 8),
        Kind::Int | Kind::UInt => matches!(size, 1 | 2 | 4 | 8),
        Kind::Bool => size == 1,
    };
    let big_endian = match order {
        '<' => false,
        '>' => true,
        '|' if size == 1 => false,
        _ => return Err(unsupported()),
    };
    if !size_ok {
        return Err(unsupported());
    }
    Ok(Dtype { kind, size, big_endian })
}

/// Parses the header dict: `{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }`.
fn parse_header(text: &str) -> Result<Header, String> {
    let mut p = Parser { s: text.as_bytes(), at: 0 };
    p.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.ws();
        p.expect(b':')?;
        p.ws();
        match key.as_str() {
            "descr" if p.peek() == Some(b'[') => return Err("structured dtypes are not supported".into()),
            "descr" => descr = Some(p.string()?),
            "fortran_order" => fortran = Some(p.boolean()?),
            "shape" => shape = Some(p.tuple()?),
            other => return Err(format!("unknown key {other:?} at byte {}", p.at)),
        }
        p.ws();
        if !p.eat(b',') {
            p.ws();
            p.expect(b'}')?;
            break;
        }
    }
    Ok(Header {
        descr: descr.ok_or("no 'descr'")?,
        fortran_order: fortran.ok_or("no 'fortran_order'")?,
        shape: shape.ok_or("no 'shape'")?,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }
    fn ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }
    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.at += usize::from(hit);
        hit
    }
    fn expect(&mut self, b: u8) -> Result<(), String> {
        self.ws();
        if self.eat(b) {
            Ok(())
        } else {
            Err(format!("expected {:?} at byte {}", b as char, self.at))
        }
    }
    fn string(&mut self) -> Result<String, String> {
        let quote = self
            .peek()
            .filter(|q| *q == b'\'' || *q == b'"')
            .ok_or(format!("expected a string at byte {}", self.at))?;
        self.at += 1;
        let start = self.at;
        while self.peek().is_some_and(|b| b != quote) {
            self.at += 1;
        }
        let s = String::from_utf8_lossy(&self.s[start..self.at]).into_owned();
        self.expect(quote)?;
        Ok(s)
    }
    fn boolean(&mut self) -> Result<bool, String> {
        for (word, v) in [("True", true), ("False", false)] {
            if self.s[self.at..].starts_with(word.as_bytes()) {
                self.at += word.len();
                return Ok(v);
            }
        }
        Err(format!("expected True or False at byte {}", self.at))
    }
    fn tuple(&mut self) -> Result<Vec<u64>, String> {
        self.expect(b'(')?;
        let mut out = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                return Ok(out);
            }
            let start = self.at;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.at += 1;
            }
            let n = std::str::from_utf8(&self.s[start..self.at]).ok().and_then(|t| t.parse().ok());
            out.push(n.ok_or(format!("expected a dimension at byte {start}"))?);
            self.ws();
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(out);
            }
        }
    }
}
