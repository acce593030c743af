//! JSON text kept as text: a check, without building anything, that the text is what
//! serde_json parses into a `Value` (it finds the members of an object on the way), and the
//! canonical JSON of such text written straight from it, the bytes that parsing it into a
//! `Value` and writing that with `compact` would give. `unescape` decodes one escape for
//! them and for redaction's span mapping.
//!
//! The check is stricter than serde_json where exactness would cost code: nesting deeper
//! than `MAX_DEPTH`, a lone surrogate escape, a number with an exponent that reads as zero
//! or near the ends of `f64`. Text it refuses is parsed whole by the caller, which gives
//! serde_json's own result or error; text it accepts parses member by member into the
//! `Value`s serde_json builds from the whole.

use std::borrow::Cow;

use serde::ser::Error as _;

use crate::compact::write_str;
use crate::{byte_masks, integer_blocks};

/// Deeper nesting is left to serde_json (its limit is 128 levels, the object counted).
const MAX_DEPTH: usize = 100;

/// The members of the object `text` (names decoded, values as their text), or `None` when
/// the text is not one JSON object or the check refuses it.
pub(crate) fn object_members(text: &str) -> Option<Vec<(Cow<'_, str>, &str)>> {
    match split(text, &Shape::Object(&[]))?.parts {
        Parts::Members(members) => Some(members.into_iter().map(|(key, v)| (key, v.text)).collect()),
        _ => None,
    }
}

/// The JSON value `text` without the whitespace around it, or `None` when the check
/// refuses it.
pub(crate) fn value(text: &str) -> Option<&str> {
    let mut s = Scanner::new(text);
    s.ws();
    let start = s.i;
    s.value()?;
    let end = s.i;
    s.ws();
    (s.i == s.b.len()).then(|| text.get(start..end)).flatten()
}

/// The elements of the array `text`, each as its text, or `None` when the text is not one
/// JSON array or the check refuses it.
pub(crate) fn array_elements(text: &str) -> Option<Vec<&str>> {
    match split(text, &Shape::Array(&Shape::Whole))?.parts {
        Parts::Elements(elements) => Some(elements.into_iter().map(|e| e.text).collect()),
        _ => None,
    }
}

/// When `text` is a flat array of plain JSON numbers: how many, and whether all are
/// integers. Plain means what serde_json reads without a special case and `write_number`
/// writes as serde_json does: an integer of up to 19 digits (18 when negative, not `-0`) or
/// a fraction of up to 40 characters without an exponent. One tight pass, for token ids and
/// log probabilities (millions of numbers in a corpus), which stay text in the record.
pub(crate) fn flat_numbers(text: &str) -> Option<(usize, bool)> {
    if let Some(count) = array_body(text).and_then(integer_blocks::count) {
        return Some((count, true));
    }
    each_plain_number(text, |_, _, _| {})
}

/// The text between the brackets of `text` when it is `[`…`]` with whitespace around.
fn array_body(text: &str) -> Option<&[u8]> {
    let b = text.trim_matches(|c: char| c.is_ascii() && is_ws(c as u8)).as_bytes();
    b.strip_prefix(b"[")?.strip_suffix(b"]")
}

/// Walks `text` as `flat_numbers` checks it, handing `each` every number token's place in
/// the array, byte range and whether it is an integer; `flat_numbers`' answer, or `None` at the first
/// thing that is not a plain number in a flat array (`each` may have been called before).
#[inline(always)]
fn each_plain_number(text: &str, mut each: impl FnMut(usize, std::ops::Range<usize>, bool)) -> Option<(usize, bool)> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return (skip_ws(b, i + 1) == b.len()).then_some((0, true));
    }
    let (mut count, mut integers) = (0, true);
    loop {
        let (end, integer) = plain_number(b, i)?;
        each(count, i..end, integer);
        count += 1;
        integers &= integer;
        i = end;
        if b.get(i).is_some_and(|c| is_ws(*c)) {
            i = skip_ws(b, i);
        }
        match b.get(i) {
            Some(b',') => {
                // The common separators, `,` and `, `, without the general loop.
                i += 1;
                if b.get(i) == Some(&b' ') {
                    i += 1;
                }
                if b.get(i).is_some_and(|c| is_ws(*c)) {
                    i = skip_ws(b, i);
                }
            }
            Some(b']') => return (skip_ws(b, i + 1) == b.len()).then_some((count, integers)),
            _ => return None,
        }
    }
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

/// `bytes` without the blanks JSON allows around a value at either end: the span a split
/// of a whole text covers.
pub fn trim_blanks(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|c| !is_ws(*c)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|c| !is_ws(*c)).map_or(start, |i| i + 1);
    &bytes[start..end]
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| is_ws(*c)) {
        i += 1;
    }
    i
}

/// The end of a plain number (see `flat_numbers`) at `start`, and whether it is an integer.
#[inline(always)]
fn plain_number(b: &[u8], start: usize) -> Option<(usize, bool)> {
    let negative = b.get(start) == Some(&b'-');
    let digits_start = start + usize::from(negative);
    let mut i = digits_end(b, digits_start);
    let digits = i - digits_start;
    if digits == 0 || (digits > 1 && b[digits_start] == b'0') {
        return None;
    }
    match b.get(i) {
        Some(b'.') => {
            let fraction = i + 1;
            i = digits_end(b, fraction);
            let plain = i > fraction && i - start <= 40 && !matches!(b.get(i), Some(b'e' | b'E'));
            plain.then_some((i, false))
        }
        Some(b'e' | b'E') => None,
        _ => {
            let zero = digits == 1 && b[digits_start] == b'0';
            (digits <= 19 - usize::from(negative) && !(negative && zero)).then_some((i, true))
        }
    }
}

/// Where the digits from `i` end, eight bytes at a time while eight remain.
#[inline(always)]
fn digits_end(b: &[u8], mut i: usize) -> usize {
    while let Some(word) = b.get(i..i + 8).and_then(|c| <[u8; 8]>::try_from(c).ok()) {
        let other = non_digit_bytes(u64::from_le_bytes(word));
        if other != 0 {
            return i + (other.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// Non-zero in each byte of `word` that is not an ASCII digit (the first such byte is the
/// lowest non-zero one). A digit is a byte whose high nibble is 3 both as it is and plus 6;
/// the addition carries into the next byte only from a byte of 0xFA or more, which UTF-8
/// text never holds (and which is not a digit itself, so the first non-digit is found).
fn non_digit_bytes(word: u64) -> u64 {
    const HIGH_NIBBLES: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    let tagged = (word & HIGH_NIBBLES) | ((word.wrapping_add(0x0606_0606_0606_0606) & HIGH_NIBBLES) >> 4);
    tagged ^ 0x3333_3333_3333_3333
}

/// Appends the canonical JSON of `text` when it is a flat array of plain numbers (see
/// `flat_numbers`): integer tokens copied as they are, fractions re-printed as serde_json
/// prints them. Token arrays kept as text are millions of numbers, and the generic writer
/// reads each twice. The array's count and whether all are integers, as `flat_numbers`
/// answers; `None`, with nothing appended, for any other text.
fn write_flat_numbers(out: &mut Vec<u8>, text: &str) -> Option<(usize, bool)> {
    let start = out.len();
    out.push(b'[');
    if let Some(body) = array_body(text) {
        // Integers only: the body without its whitespace is canonical.
        if let Some(count) = integer_blocks::write(body, out) {
            out.push(b']');
            return Some((count, true));
        }
        out.truncate(start + 1);
    }
    let mut written = true;
    let walked = each_plain_number(text, |place, token, integer| {
        if place > 0 {
            out.push(b',');
        }
        match text.get(token) {
            Some(token) if integer => out.extend_from_slice(token.as_bytes()),
            Some(token) => written &= write_number(out, token).is_some(),
            None => written = false,
        }
    });
    match walked {
        Some(found) if written => {
            out.push(b']');
            Some(found)
        }
        _ => {
            out.truncate(start);
            None
        }
    }
}

/// How far `split` takes a value apart.
pub enum Shape<'s> {
    /// The value stays one text.
    Whole,
    /// An object: its members, the named ones split by their own shapes, the rest whole.
    Object(&'s [(&'s str, Shape<'s>)]),
    /// An array: its elements, each split by the shape.
    Array(&'s Shape<'s>),
    /// A flat array of plain numbers (token ids, log probabilities), checked as
    /// `flat_numbers` checks it; any other value stays one text.
    Numbers,
}

/// A value's text, and its parts where `split` took it apart.
pub struct Split<'a> {
    pub text: &'a str,
    pub parts: Parts<'a>,
}

/// What `split` found inside a value.
pub enum Parts<'a> {
    /// Not taken apart: the shape said so, or the value is not of the shape's kind.
    Whole,
    /// An object's members in source order (names decoded).
    Members(Vec<(Cow<'a, str>, Split<'a>)>),
    /// An array's elements.
    Elements(Vec<Split<'a>>),
    /// A flat array of plain numbers (`Shape::Numbers`): how many, whether all are integers,
    /// and (`split_written`) its canonical form, written in the pass that checked it.
    Numbers { count: usize, integers: bool, canonical: Option<Box<str>> },
    /// Kept whole, an object or array that `split_written` also wrote in canonical form.
    Canonical(Box<str>),
    /// Kept whole, a string `split_written` found in canonical form already (no escape the
    /// canonical writer would write otherwise).
    Verbatim,
}

/// `text` checked as `object_members` checks it, in one pass, and taken apart as deep as
/// `shape` says: a reader that maps members a few levels down gets their texts without
/// checking the same bytes once per level. `None` when the check refuses the text.
pub fn split<'a>(text: &'a str, shape: &Shape<'_>) -> Option<Split<'a>> {
    split_with(Scanner::new(text), shape)
}

/// Whether `split` took apart every value of the kind `shape` names: false where the depth
/// limit kept one whole (a container at the deepest level the check allows), which a walk
/// that must see every such value then reads another way.
pub fn fully_split(split: &Split<'_>, shape: &Shape<'_>) -> bool {
    match (shape, &split.parts) {
        (Shape::Object(named), Parts::Members(members)) => members.iter().all(|(key, v)| {
            named.iter().find(|(name, _)| *name == key.as_ref()).is_none_or(|(_, shape)| fully_split(v, shape))
        }),
        (Shape::Array(shape), Parts::Elements(items)) => items.iter().all(|v| fully_split(v, shape)),
        (Shape::Object(_), _) => !split.text.starts_with('{'),
        (Shape::Array(_), _) => !split.text.starts_with('['),
        (Shape::Whole | Shape::Numbers, _) => true,
    }
}

/// `split` for a record that will be written: each object or array kept whole is written in
/// canonical form in the same pass that checks it (`Parts::Canonical`), and each string kept
/// whole that is canonical already is marked so (`Parts::Verbatim`): the writer copies them
/// instead of reading their text a second time. Accepts exactly what `split` accepts.
pub fn split_written<'a>(text: &'a str, shape: &Shape<'_>) -> Option<Split<'a>> {
    // Sized for the record's text, which bounds what one value kept whole usually writes:
    // grown from empty, the buffer was copied at each doubling, in every record.
    split_with(Scanner { written: Some(Vec::with_capacity(text.len())), ..Scanner::new(text) }, shape)
}

fn split_with<'a>(mut s: Scanner<'a>, shape: &Shape<'_>) -> Option<Split<'a>> {
    let text = s.t;
    s.ws();
    let split = s.split(text, shape, 0)?;
    s.ws();
    (s.i == s.b.len()).then_some(split)
}

impl<'a> Scanner<'a> {
    /// One value inside `enclosing` containers, taken apart as `shape` says.
    fn split(&mut self, text: &'a str, shape: &Shape<'_>, enclosing: usize) -> Option<Split<'a>> {
        let start = self.i;
        let parts = match (shape, self.peek()?) {
            (Shape::Object(named), b'{') if enclosing + 1 < MAX_DEPTH => {
                self.i += 1;
                let mut members = Vec::new();
                self.items(b'}', |s| {
                    let key = s.key(text)?;
                    let shape = named.iter().find(|(n, _)| *n == key).map_or(&Shape::Whole, |(_, shape)| shape);
                    members.push((key, s.split(text, shape, enclosing + 1)?));
                    Some(())
                })?;
                Parts::Members(members)
            }
            (Shape::Array(shape), b'[') if enclosing + 1 < MAX_DEPTH => {
                self.i += 1;
                let mut elements = Vec::new();
                self.items(b']', |s| {
                    elements.push(s.split(text, shape, enclosing + 1)?);
                    Some(())
                })?;
                Parts::Elements(elements)
            }
            (Shape::Numbers, b'[') if enclosing < MAX_DEPTH => match self.split_numbers() {
                Some(numbers) => numbers,
                None if self.writes_whole() => self.write_whole(text, enclosing)?,
                None => {
                    self.value_in(enclosing)?;
                    Parts::Whole
                }
            },
            _ if self.writes_whole() => self.write_whole(text, enclosing)?,
            (_, b'"') if self.written.is_some() => {
                self.i += 1;
                match self.string()? {
                    Escapes::Rewritten => Parts::Whole,
                    _ => Parts::Verbatim,
                }
            }
            _ => {
                self.value_in(enclosing)?;
                Parts::Whole
            }
        };
        Some(Split { text: text.get(start..self.i)?, parts })
    }

    /// Whether the value here, kept whole, is written too: the scanner writes and it is an
    /// object or array. (A scalar's canonical form is its text or nearly: writing it would
    /// cost a copy and save little.)
    #[inline]
    fn writes_whole(&self) -> bool {
        self.written.is_some() && matches!(self.peek(), Some(b'{' | b'['))
    }

    /// An object or array kept whole inside `enclosing` containers, checked and written in
    /// canonical form in one pass.
    fn write_whole(&mut self, text: &'a str, enclosing: usize) -> Option<Parts<'a>> {
        let mut out = self.written.take().unwrap_or_default();
        out.clear();
        let written = self.write_value(&mut out, text, enclosing + 1);
        let canonical = written.and_then(|()| std::str::from_utf8(&out).ok().map(Box::from));
        self.written = Some(out);
        canonical.map(Parts::Canonical)
    }

    /// The text of what may be a flat array of plain numbers at the scanner (at its `[`):
    /// up to its closing bracket, which for such an array is the next bracket. Nothing past
    /// the next bracket is looked at, so no byte is searched from two opening brackets.
    /// `None` when the text cannot be one.
    fn numbers_text(&self) -> Option<&'a str> {
        let from = self.i + 1;
        let rest = self.b.get(from..)?;
        let first = rest.iter().position(|c| !is_ws(*c))?;
        if !matches!(rest.get(first), Some(b'-' | b'0'..=b'9' | b']')) {
            return None;
        }
        let close = from + memchr::memchr2(b']', b'[', rest)?;
        if self.b.get(close) != Some(&b']') {
            return None;
        }
        self.t.get(self.i..=close)
    }

    /// The flat array of plain numbers at the scanner (at its `[`, as `flat_numbers` reads
    /// it), passed: its count and whether all are integers; `None` (and not moved) for
    /// anything else.
    fn flat_numbers(&mut self) -> Option<(usize, bool)> {
        let array = self.numbers_text()?;
        let found = flat_numbers(array)?;
        self.i += array.len();
        Some(found)
    }

    /// `flat_numbers` for `split`: when the scanner writes, the array is written in
    /// canonical form in the pass that checks it (`write_flat_numbers`), which the writer
    /// then copies.
    fn split_numbers(&mut self) -> Option<Parts<'a>> {
        if self.written.is_none() {
            let (count, integers) = self.flat_numbers()?;
            return Some(Parts::Numbers { count, integers, canonical: None });
        }
        let array = self.numbers_text()?;
        let out = self.written.as_mut()?;
        out.clear();
        let (count, integers) = write_flat_numbers(out, array)?;
        let canonical = Some(std::str::from_utf8(out).ok()?.into());
        self.i += array.len();
        Some(Parts::Numbers { count, integers, canonical })
    }

    /// The items of a container whose opening bracket is behind, each read by `item`, up
    /// to and past `close`.
    fn items(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            match self.next()? {
                b',' => {}
                c if c == close => return Some(()),
                _ => return None,
            }
        }
    }
}

/// Appends the canonical JSON of `text`, a value `object_members` accepted (alone or as a
/// member); an error only if it was not.
pub(crate) fn write_canonical(out: &mut Vec<u8>, text: &str) -> Result<(), serde_json::Error> {
    if text.starts_with('[') && write_flat_numbers(out, text).is_some() {
        return Ok(());
    }
    // A string alone (a message, a tool output): checked text holds no raw quote or control
    // character inside, so its end is the text's end and only escapes need a look.
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        if memchr::memchr(b'\\', inner.as_bytes()).is_none() {
            out.extend_from_slice(text.as_bytes());
            return Ok(());
        }
        let start = out.len();
        if write_escaped(out, inner.as_bytes()).is_some() {
            return Ok(());
        }
        out.truncate(start);
    }
    let mut s = Scanner::new(text);
    s.ws();
    s.write_value(out, text, 1)
        .ok_or_else(|| serde_json::Error::custom("JSON text kept for `extra` does not parse"))?;
    s.ws();
    (s.i == s.b.len()).then_some(()).ok_or_else(|| serde_json::Error::custom("trailing characters after JSON text"))
}

/// What escapes a string held.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escapes {
    None,
    /// Only ones the canonical writer writes as they are (`\"`, `\\`, `\n`, ...).
    Canonical,
    /// Some it writes otherwise: `\/` and `\u` escapes, decoded.
    Rewritten,
}

struct Scanner<'a> {
    t: &'a str,
    b: &'a [u8],
    i: usize,
    /// `split_written`'s buffer for the canonical form of each part kept whole.
    written: Option<Vec<u8>>,
    /// The member names of the objects being written and their values' ranges in the output,
    /// innermost object last: one buffer for every object instead of one per object.
    members: Vec<(Cow<'a, str>, std::ops::Range<usize>)>,
    /// An out-of-order object's members other than its largest value, in name order, while
    /// it is sorted (`reorder`; reused likewise).
    reordered: Vec<u8>,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner { t: text, b: text.as_bytes(), i: 0, written: None, members: Vec::new(), reordered: Vec::new() }
    }
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    /// A member name and its colon; the name decoded when it holds an escape.
    fn key<'t>(&mut self, text: &'t str) -> Option<Cow<'t, str>> {
        let key = self.decoded_string(text)?;
        self.ws();
        self.expect(b':')?;
        self.ws();
        Some(key)
    }

    /// One value starting here (whitespace before it already skipped); a member value
    /// sits one level inside the object.
    fn value(&mut self) -> Option<()> {
        self.value_in(1)
    }

    /// One value starting here inside `enclosing` containers.
    fn value_in(&mut self, enclosing: usize) -> Option<()> {
        // The closing bracket of each open container, innermost last.
        let mut open = Closers::default();
        'value: loop {
            match self.peek()? {
                c @ (b'{' | b'[') => {
                    if open.len + 1 + enclosing > MAX_DEPTH {
                        return None;
                    }
                    // A flat array of plain numbers (token ids) is checked whole, 64 bytes
                    // at a time, where the walk below goes number by number.
                    if c == b'{' || self.flat_numbers().is_none() {
                        self.i += 1;
                        let close = if c == b'{' { b'}' } else { b']' };
                        self.ws();
                        if self.peek() == Some(close) {
                            self.i += 1;
                        } else {
                            open.push(close);
                            if close == b'}' {
                                self.key_only()?;
                            }
                            continue 'value;
                        }
                    }
                }
                b'"' => {
                    self.i += 1;
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => self.number()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => return None,
            }
            // A value is complete: close containers or go on to the next element.
            loop {
                let Some(close) = open.last() else { return Some(()) };
                self.ws();
                match self.next()? {
                    b',' => {
                        self.ws();
                        if close == b'}' {
                            self.key_only()?;
                        }
                        continue 'value;
                    }
                    c if c == close => {
                        open.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    /// A member name inside a value and its colon (not decoded: only checked).
    fn key_only(&mut self) -> Option<()> {
        self.expect(b'"')?;
        self.string()?;
        self.ws();
        self.expect(b':')?;
        self.ws();
        Some(())
    }

    /// Moves past the rest of a string whose opening quote is behind; what escapes it held.
    fn string(&mut self) -> Option<Escapes> {
        let b = self.b;
        let mut i = self.i;
        let (mut escaped, mut rewritten) = (false, false);
        loop {
            // To the next quote, backslash or control character: 16 bytes at a time, then
            // (fewer than 16 left) 8 at a time, then byte by byte. A special found in a
            // block goes straight to the dispatch below, not through the narrower loops.
            i = match b.get(i..i + 16).and_then(|c| <&[u8; 16]>::try_from(c).ok()) {
                Some(chunk) => match byte_masks::string_specials(chunk) {
                    0 => {
                        i += 16;
                        continue;
                    }
                    special => i + special.trailing_zeros() as usize,
                },
                None => match b.get(i..i + 8).and_then(|c| <[u8; 8]>::try_from(c).ok()) {
                    Some(word) => match special_bytes(u64::from_le_bytes(word)) {
                        0 => {
                            i += 8;
                            continue;
                        }
                        special => i + (special.trailing_zeros() / 8) as usize,
                    },
                    None => i,
                },
            };
            match *b.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return Some(match (escaped, rewritten) {
                        (_, true) => Escapes::Rewritten,
                        (true, false) => Escapes::Canonical,
                        (false, false) => Escapes::None,
                    });
                }
                b'\\' => {
                    escaped = true;
                    // The one-letter escapes need no decoding to be checked; the canonical
                    // writer writes them as they are, but for `\/` (and every `\u`).
                    i += match b.get(i + 1) {
                        Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                        Some(b'/') => {
                            rewritten = true;
                            2
                        }
                        _ => {
                            rewritten = true;
                            unescape(b, i)?.1
                        }
                    };
                }
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
    }

    /// Writes the value starting here in canonical form: objects with their members sorted
    /// by name (the last of a repeated name kept), no whitespace, strings escaped as
    /// `compact` escapes them, numbers as serde_json reads and writes them.
    /// `depth` counts the containers around the value and the value itself when it is one;
    /// a container deeper than `MAX_DEPTH` is refused, as `value_in` refuses it.
    fn write_value(&mut self, out: &mut Vec<u8>, text: &str, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' | b'[' if depth > MAX_DEPTH => None,
            b'{' => self.write_object(out, text, depth),
            b'[' => {
                // A flat array of plain numbers (token ids) is checked and written whole, in
                // one pass.
                if let Some(array) = self.numbers_text() {
                    if write_flat_numbers(out, array).is_some() {
                        self.i += array.len();
                        return Some(());
                    }
                }
                self.i += 1;
                out.push(b'[');
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    out.push(b']');
                    return Some(());
                }
                loop {
                    self.write_value(out, text, depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => {
                            out.push(b',');
                            self.ws();
                        }
                        b']' => {
                            out.push(b']');
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => {
                let start = self.i;
                self.i += 1;
                if self.string()? == Escapes::Rewritten {
                    write_escaped(out, self.b.get(start + 1..self.i - 1)?)
                } else {
                    // Only escapes the writer writes too and (checked) no control character:
                    // already canonical.
                    out.extend_from_slice(self.b.get(start..self.i)?);
                    Some(())
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                self.number()?;
                write_number(out, text.get(start..self.i)?)
            }
            b't' | b'f' | b'n' => {
                let start = self.i;
                let word: &[u8] = match self.peek()? {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                self.literal(word)?;
                out.extend_from_slice(self.b.get(start..self.i)?);
                Some(())
            }
            _ => None,
        }
    }

    /// An object: its members written as they come; when their names were not in strictly
    /// increasing order, written again sorted (the last of a repeated name kept).
    fn write_object(&mut self, out: &mut Vec<u8>, text: &str, depth: usize) -> Option<()> {
        self.i += 1;
        self.ws();
        let object = out.len();
        out.push(b'{');
        if self.peek() == Some(b'}') {
            self.i += 1;
            out.push(b'}');
            return Some(());
        }
        let base = self.members.len();
        let written = self.write_members(out, text, depth, base);
        let sorted = written.map(|()| self.reorder(out, object, base));
        self.members.truncate(base);
        sorted.flatten()
    }

    /// The members of the object being written, as they come; each name and the range of its
    /// value in `out` pushed on `members` (above `base`, where the enclosing objects' lie).
    fn write_members(&mut self, out: &mut Vec<u8>, text: &str, depth: usize, base: usize) -> Option<()> {
        let names: &'a str = self.t;
        loop {
            self.ws();
            let key = self.decoded_string(names)?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            if self.members.len() > base {
                out.push(b',');
            }
            write_key(out, &key, matches!(key, Cow::Owned(_)));
            out.push(b':');
            let start = out.len();
            self.write_value(out, text, depth + 1)?;
            self.members.push((key, start..out.len()));
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// Closes the object written from `object` in `out`; when its member names (`members`
    /// above `base`) were not strictly increasing, writes it again sorted. The largest value
    /// (most often the one long text) is moved once, within `out`; the other members are
    /// assembled around its place in the reused `reordered` buffer and copied back. Copying
    /// the whole object out and back moved each byte of a nested object twice per level.
    fn reorder(&mut self, out: &mut Vec<u8>, object: usize, base: usize) -> Option<()> {
        let members = self.members.get_mut(base..)?;
        if members.windows(2).all(|w| w[0].0 < w[1].0) {
            out.push(b'}');
            return Some(());
        }
        // Stable: of members with one name, the last in the text is the last in its run.
        members.sort_by(|a, b| a.0.cmp(&b.0));
        let members = &*members;
        let kept = |n: usize| members.get(n + 1).is_none_or(|next| next.0 != members[n].0);
        let largest = (0..members.len()).filter(|&n| kept(n)).max_by_key(|&n| members[n].1.len())?;
        let mut pieces = std::mem::take(&mut self.reordered);
        pieces.clear();
        pieces.push(b'{');
        let mut gap = 0;
        for (n, (key, range)) in members.iter().enumerate().filter(|&(n, _)| kept(n)) {
            if pieces.len() > 1 {
                pieces.push(b',');
            }
            write_key(&mut pieces, key, matches!(key, Cow::Owned(_)));
            pieces.push(b':');
            if n == largest {
                gap = pieces.len();
            } else {
                pieces.extend_from_slice(out.get(range.clone())?);
            }
        }
        pieces.push(b'}');
        let moved = members[largest].1.clone();
        let (before, after) = pieces.split_at(gap);
        // Sorted, the object is at most one byte (its `}`) longer than as written.
        let end = object + pieces.len() + moved.len();
        if out.len() < end {
            out.resize(end, 0);
        }
        let at = object + gap;
        if moved.end > out.len() || at + moved.len() > end {
            return None;
        }
        out.copy_within(moved.clone(), at);
        out.get_mut(object..at)?.copy_from_slice(before);
        out.get_mut(at + moved.len()..end)?.copy_from_slice(after);
        out.truncate(end);
        self.reordered = pieces;
        Some(())
    }

    /// A string starting here, its escapes decoded (by serde_json, so exactly as it would).
    fn decoded_string<'t>(&mut self, text: &'t str) -> Option<Cow<'t, str>> {
        let start = self.i;
        self.expect(b'"')?;
        let escaped = self.string()? != Escapes::None;
        let quoted = text.get(start..self.i)?;
        if escaped {
            serde_json::from_str::<String>(quoted).ok().map(Cow::Owned)
        } else {
            quoted.get(1..quoted.len() - 1).map(Cow::Borrowed)
        }
    }

    /// `strings` of the value here, `depth` counting it and the containers around it (as
    /// `write_value` counts them).
    fn strings_in<'t>(&mut self, text: &'t str, out: &mut Vec<Cow<'t, str>>, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' | b'[' if depth > MAX_DEPTH => None,
            b'"' => {
                let start = self.i;
                self.i += 1;
                self.string()?;
                out.push(string_text(text.get(start..self.i)?)?);
                Some(())
            }
            b'[' => {
                self.i += 1;
                self.items(b']', |s| s.strings_in(text, out, depth + 1))
            }
            b'{' => {
                self.i += 1;
                let mut members: Vec<(Cow<'t, str>, std::ops::Range<usize>)> = Vec::new();
                self.items(b'}', |s| {
                    let key = s.key(text)?;
                    let from = out.len();
                    s.strings_in(text, out, depth + 1)?;
                    members.push((key, from..out.len()));
                    Some(())
                })?;
                sort_members(out, &mut members);
                Some(())
            }
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => None,
        }
    }

    /// A number in JSON's grammar; one serde_json might read as out of range (or round to
    /// zero) is refused.
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let mut digits = match self.next()? {
            b'0' => 1,
            b'1'..=b'9' => 1 + self.digits(),
            _ => return None,
        };
        if self.peek() == Some(b'.') {
            self.i += 1;
            let fraction = self.digits();
            if fraction == 0 {
                return None;
            }
            digits += fraction;
        }
        let mut exponent = false;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
            exponent = true;
        }
        if exponent || digits > 300 {
            let f: f64 = std::str::from_utf8(self.b.get(start..self.i)?).ok()?.parse().ok()?;
            if !(f != 0.0 && f.abs() > 1e-300 && f.abs() < 1e300) {
                return None;
            }
        }
        Some(())
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        (self.b.get(self.i..self.i + word.len())? == word).then(|| self.i += word.len())
    }
}

/// A member name as `write_str` writes it. One the source held without escapes (not
/// `decoded` from them) holds (checked) no quote, backslash or control character either, so
/// it is copied.
fn write_key(out: &mut Vec<u8>, key: &str, decoded: bool) {
    if decoded {
        write_str(out, key);
    } else {
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.push(b'"');
    }
}

/// A number token as serde_json reads it into a `Value` and `compact` writes it: an
/// integer of up to 18 digits is its own text, a fraction or exponent a float re-printed
/// in shortest form; other integers go through serde_json's `Number` (`-0` is the float
/// `-0.0`, integers beyond 64 bits become floats).
fn write_number(out: &mut Vec<u8>, token: &str) -> Option<()> {
    let digits = token.strip_prefix('-').unwrap_or(token);
    if digits.len() <= 18 && digits.bytes().all(|c| c.is_ascii_digit()) && token != "-0" {
        out.extend_from_slice(token.as_bytes());
        return Some(());
    }
    if write_short_decimal(out, token) {
        return Some(());
    }
    if token.bytes().any(|c| matches!(c, b'.' | b'e' | b'E')) {
        // serde_json (with `float_roundtrip`) and `str::parse` both round correctly.
        let f: f64 = token.parse().ok().filter(|f: &f64| f.is_finite())?;
        out.extend_from_slice(zmij::Buffer::new().format_finite(f).as_bytes());
        return Some(());
    }
    let number: serde_json::Number = serde_json::from_str(token).ok()?;
    crate::compact::to_writer(out, &number).ok()
}

/// Writes a fraction without an exponent that has at most 15 significant digits, not zero,
/// and whose first significant digit is between 10^-5 and 10^15, as `zmij` prints its double:
/// its own digits, the fraction's trailing zeros dropped (one kept after the point). A
/// decimal of at most 15 digits is the only one of that many that reads back as its double
/// (`f64::DIGITS`), so it is the shortest, and `zmij` prints exponents -5 to 15 in plain
/// notation. Most fractions in agents' metrics and log probabilities are such, and parsing
/// and re-printing each was 2 % of an ATIF `build`. `false`, with nothing written, otherwise.
fn write_short_decimal(out: &mut Vec<u8>, token: &str) -> bool {
    let b = token.as_bytes();
    let unsigned = b.strip_prefix(b"-").unwrap_or(b);
    let Some(dot) = unsigned.iter().position(|&c| c == b'.') else {
        return false;
    };
    let (int, fraction) = (&unsigned[..dot], &unsigned[dot + 1..]);
    let digits = |part: &[u8]| !part.is_empty() && part.iter().all(u8::is_ascii_digit);
    if !digits(int) || !digits(fraction) || (int.len() > 1 && int[0] == b'0') {
        return false;
    }
    let fraction = &fraction[..fraction.len() - fraction.iter().rev().take_while(|&&c| c == b'0').count()];
    let (significant, exponent) = if int != b"0" {
        let int_zeros = if fraction.is_empty() { int.iter().rev().take_while(|&&c| c == b'0').count() } else { 0 };
        (int.len() - int_zeros + fraction.len(), int.len() as i64 - 1)
    } else {
        let zeros = fraction.iter().take_while(|&&c| c == b'0').count();
        if zeros == fraction.len() {
            return false; // zero, and `-0.0`: left to the float
        }
        (fraction.len() - zeros, -(zeros as i64) - 1)
    };
    if significant > 15 || !(-5..=15).contains(&exponent) {
        return false;
    }
    out.extend_from_slice(&b[..b.len() - unsigned.len()]);
    out.extend_from_slice(int);
    out.push(b'.');
    out.extend_from_slice(if fraction.is_empty() { b"0" } else { fraction });
    true
}

/// Writes a string's content that holds escapes (`raw`, between the quotes, as checked by
/// `Scanner::string`) with `compact`'s escapes: `\"`, `\\` and control characters escaped
/// (`\n` and the like, else `\u00XX`), everything else as UTF-8. That is what decoding it
/// and writing the result with `write_str` gives, without the decoded copy. The short
/// escapes `compact` writes itself (nearly all in real text) are copied with the bytes
/// around them; only `\/` and `\u` escapes are decoded.
fn write_escaped(out: &mut Vec<u8>, raw: &[u8]) -> Option<()> {
    out.push(b'"');
    let mut run = 0;
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'\\', raw.get(i..)?).map(|found| i + found) {
        if matches!(raw.get(at + 1), Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't')) {
            i = at + 2;
            continue;
        }
        out.extend_from_slice(raw.get(run..at)?);
        let (c, len) = unescape(raw, at)?;
        i = at + len;
        if c < ' ' || c == '"' || c == '\\' {
            out.extend_from_slice(crate::compact::escape_of(c as u8));
        } else {
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
        run = i;
    }
    out.extend_from_slice(raw.get(run..)?);
    out.push(b'"');
    Some(())
}

/// The two ends of the string literal `literal` (checked text, quotes included): its first
/// character, and its decoded text from a point `keep` to `2 * keep` source bytes before the
/// closing quote where no escape is cut (six bytes before it hold no backslash) to the end.
/// `None` when the literal is not longer than `2 * keep`, no such point is found, or an
/// escape does not decode.
pub(crate) fn string_ends(literal: &str, keep: usize) -> Option<(char, String)> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let first = if inner.starts_with('\\') { unescape(inner.as_bytes(), 0)?.0 } else { inner.chars().next()? };
    Some((first, string_tail(inner, keep)?))
}

/// `string_ends`' tail of a literal's inner text, decoded by serde_json.
fn string_tail(inner: &str, keep: usize) -> Option<String> {
    let (bytes, len) = (inner.as_bytes(), inner.len());
    if keep < 6 || len <= 2 * keep {
        return None;
    }
    let uncut = |p: usize| {
        inner.is_char_boundary(p) && p.checked_sub(6).and_then(|b| bytes.get(b..p)).is_some_and(|b| !b.contains(&b'\\'))
    };
    let start = (len - 2 * keep..=len - keep).rev().find(|&p| uncut(p))?;
    serde_json::from_str(&format!("\"{}\"", inner.get(start..)?)).ok()
}

/// The text of the string literal `literal` (checked text, quotes included) with its
/// escapes decoded, borrowed when it has none; `None` for any other value. What serde_json
/// decodes, without building a `Value` to read one string.
pub fn string_text(literal: &str) -> Option<Cow<'_, str>> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let b = inner.as_bytes();
    let Some(mut at) = memchr::memchr(b'\\', b) else { return Some(Cow::Borrowed(inner)) };
    let mut out = String::with_capacity(inner.len());
    let mut from = 0;
    loop {
        out.push_str(inner.get(from..at)?);
        let (c, len) = unescape(b, at)?;
        out.push(c);
        from = at + len;
        match memchr::memchr(b'\\', b.get(from..)?) {
            Some(n) => at = from + n,
            None => break,
        }
    }
    out.push_str(inner.get(from..)?);
    Some(Cow::Owned(out))
}

/// Each string value in `text` (checked text), decoded, in the order a walk of the `Value`
/// serde_json builds meets them: elements in order, members by name with the last of a
/// repeated name kept, names left out. Pushed on `out`; `None`, with nothing pushed, when the
/// check refuses the text. Signing a run reads every string of its content and arguments,
/// and building a `Value` tree only to walk it was most of the cost.
pub(crate) fn strings<'t>(text: &'t str, out: &mut Vec<Cow<'t, str>>) -> Option<()> {
    let start = out.len();
    let mut s = Scanner::new(text);
    s.ws();
    let walked = s.strings_in(text, out, 2).and_then(|()| {
        s.ws();
        (s.i == s.b.len()).then_some(())
    });
    if walked.is_none() {
        out.truncate(start);
    }
    walked
}

/// Puts the strings an object's members pushed on `out` (each member's name and range) in
/// the order of their names, the last of a repeated name kept, as serde_json's map holds
/// them. Names in strictly increasing order, the usual case, need nothing.
fn sort_members<'t>(out: &mut Vec<Cow<'t, str>>, members: &mut [(Cow<'t, str>, std::ops::Range<usize>)]) {
    if members.windows(2).all(|w| w[0].0 < w[1].0) {
        return;
    }
    let Some(base) = members.first().map(|m| m.1.start) else { return };
    // Stable: of equal names, the last in the text ends its run.
    members.sort_by(|a, b| a.0.cmp(&b.0));
    let pushed: Vec<Cow<'t, str>> = out.drain(base..).collect();
    for (n, (name, range)) in members.iter().enumerate() {
        if members.get(n + 1).is_none_or(|next| next.0 != *name) {
            out.extend(pushed.get(range.start - base..range.end - base).into_iter().flatten().cloned());
        }
    }
}

/// The length in bytes of the string `literal` once its escapes are decoded (what
/// `string_text` would give), counted without building it; `None` as for `string_text`.
pub(crate) fn string_len(literal: &str) -> Option<usize> {
    let b = literal.strip_prefix('"')?.strip_suffix('"')?.as_bytes();
    let mut len = b.len();
    let mut from = 0;
    while let Some(n) = memchr::memchr(b'\\', b.get(from..)?) {
        let (c, escape) = unescape(b, from + n)?;
        len = len - escape + c.len_utf8();
        from += n + escape;
    }
    Some(len)
}

/// The character the JSON escape whose backslash is at `i` stands for, and the escape's
/// length in bytes; `None` for an escape JSON does not have or a surrogate not in a
/// high-low pair.
pub fn unescape(raw: &[u8], i: usize) -> Option<(char, usize)> {
    let c = match *raw.get(i + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let unit = hex4(raw, i + 2)?;
            if !(0xD800..0xDC00).contains(&unit) {
                // A lone low surrogate is no `char`.
                return Some((char::from_u32(unit)?, 6));
            }
            if raw.get(i + 6..i + 8)? != b"\\u" {
                return None;
            }
            let low = hex4(raw, i + 8)?;
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            return Some((char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?, 12));
        }
        _ => return None,
    };
    Some((c, 2))
}

/// Four hex digits at `i`.
fn hex4(b: &[u8], i: usize) -> Option<u32> {
    b.get(i..i + 4)?.iter().try_fold(0, |n, c| Some(n * 16 + char::from(*c).to_digit(16)?))
}

/// The closing brackets of the containers open inside one value, innermost last, one bit
/// each (set for `}`): `MAX_DEPTH` fits, so checking a value allocates nothing.
#[derive(Default)]
struct Closers {
    bits: u128,
    len: usize,
}

impl Closers {
    fn push(&mut self, close: u8) {
        self.bits = self.bits << 1 | u128::from(close == b'}');
        self.len += 1;
    }

    fn last(&self) -> Option<u8> {
        (self.len > 0).then_some(if self.bits & 1 == 1 { b'}' } else { b']' })
    }

    fn pop(&mut self) {
        self.bits >>= 1;
        self.len = self.len.saturating_sub(1);
    }
}

const _: () = assert!(MAX_DEPTH <= 128, "Closers holds at most 128 brackets");

/// The high bit of each byte of `word` that is a quote, a backslash or a control
/// character; exact up to the lowest one set (borrows may mark bytes above it).
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    zero(word ^ (ONES * u64::from(b'"')))
        | zero(word ^ (ONES * u64::from(b'\\')))
        | (word.wrapping_sub(ONES * 0x20) & !word & HIGH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};

    /// What the members parse to, as one object; `None` when the check refuses the text.
    fn members_value(text: &str) -> Option<Value> {
        let members = object_members(text)?;
        let mut map = Map::new();
        for (k, v) in members {
            map.insert(k.into_owned(), serde_json::from_str(v).expect("an accepted member parses"));
        }
        Some(Value::Object(map))
    }

    /// Accepted text parses to what serde_json builds from the whole, and its canonical
    /// JSON written from the text is the canonical JSON of that `Value`.
    fn accepted(text: &str) {
        let whole: Value = serde_json::from_str(text).expect("serde_json parses it");
        assert_eq!(members_value(text).as_ref(), Some(&whole), "{text}");
        let mut ours = Vec::new();
        write_canonical(&mut ours, text).expect("accepted text is written");
        let mut theirs = Vec::new();
        crate::compact::to_writer(&mut theirs, &whole).expect("a value is written");
        assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs), "{text}");
    }

    fn refused(text: &str) {
        assert_eq!(object_members(text), None, "{text}");
    }

    /// Synthetic: objects written out of order, sorted as serde_json sorts them, with the
    /// largest value (the one moved in place) first, last, between the others, a repeated
    /// name (its earlier, larger value dropped), and out-of-order objects nested in it.
    #[test]
    fn out_of_order_objects_are_sorted_around_their_largest_value() {
        let long = |c: char| format!("\"{}\"", c.to_string().repeat(300));
        let inner = r#"{"z": [1, {"y": 2, "x": "\u00e9"}], "b": {"d": 1, "c": 2}}"#;
        let values = [long('L'), "1".to_string(), inner.to_string(), "[3, {\"q\": 4, \"p\": 5}]".to_string()];
        let names = ["m", "a", "z", "k\\\"ey", "\\u00e9"];
        let mut texts = Vec::new();
        for rotation in 0..names.len() {
            for place in 0..values.len() {
                let mut values = values.to_vec();
                values.swap(0, place);
                let members: Vec<String> = (0..values.len())
                    .map(|i| format!("\"{}\": {}", names[(i + rotation) % names.len()], values[i]))
                    .collect();
                texts.push(format!("{{{}}}", members.join(", ")));
                // The first member's name again at the end: its first value (the long one, once) is dropped.
                texts.push(format!("{{{}, \"{}\": 0}}", members.join(", "), names[rotation]));
                texts.push(format!("{{\"w\": {{{}}}, \"v\": {}}}", members.join(","), long('S')));
            }
        }
        for text in &texts {
            accepted(text);
        }
    }

    /// Synthetic: each JSON rule the check enforces, one text each.
    #[test]
    fn grammar() {
        accepted("{}");
        accepted(" { } \n");
        accepted(r#"{"a":1,"b":[1,2,{"c":null}],"d":{"e":[]},"f":"x\"y\\z\u00e9\n","g":true,"h":false}"#);
        accepted(r#"{ "a" : -0.5e-3 , "b" : [ ] , "c" : { } , "d":0,"e":-0,"f":1E+2}"#);
        accepted(r#"{"a":1,"a":2}"#);
        accepted(r#"{"k\"ey":"\ud83d\ude00","\u00e9":"é"}"#);
        accepted(
            r#"{"n":[-0,0,1.0,1e2,1E+2,-1.5e-7,0.1,12345678901234567890,123456789012345678,-9223372036854775809]}"#,
        );
        accepted(r#"{"z":{"b":1,"a":[{"d":2,"c":3,"d":4}],"b":5},"\u00e9":"\/\u0001\b\f","a":"\u20ac"}"#);
        accepted(r#"{"a":"0123456789abcdef0123456789","b":"\t"}"#);
        for bad in [
            "",
            "[]",
            "1",
            "{",
            "}",
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{"a":1,}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":[1 2]}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":1e}"#,
            r#"{"a":+1}"#,
            r#"{"a":tru}"#,
            r#"{"a":nul}"#,
            r#"{"a":"x}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12"}"#,
            r#"{"a":1}x"#,
            r#"{"a":1}}"#,
            r#"{"a":[}"#,
            r#"{"a":{]}"#,
            r#"{a:1}"#,
            r#"{"a":NaN}"#,
            r#"{"a":Infinity}"#,
            "{\"a\":\"\u{1}\"}",
            "{\"a\":\"x\ny\"}",
        ] {
            refused(bad);
            assert!(serde_json::from_str::<Value>(bad).map(|v| !v.is_object()).unwrap_or(true), "{bad}");
        }
    }

    /// Synthetic: where the check is stricter than serde_json (the caller parses those whole).
    #[test]
    fn stricter_than_serde_json() {
        refused(r#"{"a":"\ud800"}"#);
        refused(r#"{"a":"\udc00x"}"#);
        refused(r#"{"a":1e400}"#);
        refused(r#"{"a":1e-400}"#);
        refused(r#"{"a":0e0}"#);
        refused(&format!("{{\"a\":{}}}", "9".repeat(400)));
        let deep = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        accepted(&deep(MAX_DEPTH - 1));
        refused(&deep(MAX_DEPTH));
        refused(&deep(10_000));
        accepted(&format!("{{\"a\":{}}}", "9".repeat(300)));
        accepted(r#"{"a":1.5e299,"b":-2e-299}"#);
    }

    /// Synthetic: objects and arrays nested in turn as deep as allowed close in order (the
    /// closing brackets are kept one bit each), and a wrong closing bracket at any depth,
    /// past the 64th level too, is refused.
    #[test]
    fn mixed_nesting_closes_in_order() {
        let depth = MAX_DEPTH - 1;
        let open: String = (0..depth).map(|d| if d % 2 == 0 { "[" } else { "{\"k\":" }).collect();
        let close: Vec<&str> = (0..depth).rev().map(|d| if d % 2 == 0 { "]" } else { "}" }).collect();
        let text = |close: &[&str]| format!("{{\"a\":{open}1{}}}", close.concat());
        accepted(&text(&close));
        for wrong in [0, 1, 30, 63, 64, 65, depth - 2, depth - 1] {
            let mut bad = close.clone();
            bad[wrong] = if bad[wrong] == "]" { "}" } else { "]" };
            refused(&text(&bad));
        }
    }

    /// Synthetic (orders no real file shows together): members out of order, repeated names
    /// (the last kept, in its name's place), escaped names that sort by their decoded text,
    /// nesting, and strings among every other kind of value; refused text pushes nothing.
    #[test]
    fn strings_come_in_the_order_of_the_parsed_value() {
        let texts = [
            r#""one""#,
            r#"  "sp\u00e9ce\n"  "#,
            r#"[1, "a", null, ["b", {"z": "c", "y": ["d", 2.5]}], true, "e"]"#,
            r#"{"b": "2", "a": "1", "c": {"y": "4", "x": "3"}}"#,
            r#"{"k": "first", "j": "j", "k": "last"}"#,
            r#"{"k": ["first", "x"], "k": {"n": "last"}, "a": "a"}"#,
            r#"{"\u0062": "b-escaped", "a": "a", "c": "c"}"#,
            r#"{"é": "e-acute", "z": "z", "\u00e8": "e-grave"}"#,
            r#"{"a": {"b": "x", "a": "y", "b": "z"}, "a": "outer last"}"#,
            r#"{}"#,
            r#"[]"#,
            r#"{"tokens": [1, 2, 3], "text": "t"}"#,
        ];
        for text in texts {
            let mut want = Vec::new();
            crate::lazy::value_strings(&serde_json::from_str(text).unwrap(), &mut |s| want.push(s.to_string()));
            let mut got = vec![Cow::Borrowed("before")];
            assert_eq!(strings(text, &mut got), Some(()), "{text}");
            assert_eq!(got[1..], want, "{text}");
        }
        for refused in [r#"{"a": "b""#, r#"["a", ]"#, r#""a" "b""#, r#"{"a": 01}"#] {
            let mut got = vec![Cow::Borrowed("before")];
            assert_eq!(strings(refused, &mut got), None, "{refused}");
            assert_eq!(got, ["before"], "{refused}");
        }
        let deep = format!("{}\"x\"{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(strings(&deep, &mut Vec::new()), None, "deeper than the check allows");
    }

    /// Synthetic: a string literal's text is what serde_json decodes, and a lone literal is
    /// written as serde_json writes that text, for every escape form at every place of short
    /// strings (and runs of them); other values have no text.
    #[test]
    fn string_text_decodes_as_serde_json() {
        let forms = [
            r"\/",
            r"\b\f\r\t",
            r"\u001f",
            r"\u001F",
            r"\u000a",
            r"\u0041",
            r"\ud83d\ude00",
            r"\\",
            r#"\""#,
            r"\n",
            "\u{e9}",
        ];
        for n in 0..12 {
            let base: String = "abcdefghijkl".chars().take(n).collect();
            for at in 0..=n {
                for form in forms {
                    for repeat in [1, 3] {
                        let literal = format!("\"{}{}{}\"", &base[..at], form.repeat(repeat), &base[at..]);
                        let expected: String = serde_json::from_str(&literal).unwrap();
                        assert_eq!(string_text(&literal).as_deref(), Some(expected.as_str()), "{literal}");
                        let mut written = Vec::new();
                        write_canonical(&mut written, &literal).unwrap();
                        assert_eq!(written, serde_json::to_vec(&expected).unwrap(), "{literal} written alone");
                    }
                }
            }
        }
        assert!(matches!(string_text(r#""plain""#), Some(Cow::Borrowed("plain"))));
        for other in ["7", "[\"a\"]", "null", "{}"] {
            assert_eq!(string_text(other), None, "{other}");
        }
    }

    /// Synthetic: arrays of numbers inside values (checked whole when flat) are accepted
    /// exactly where serde_json parses them, nested, broken or next to brackets in strings.
    #[test]
    fn number_arrays_inside_values_keep_the_rules() {
        let arrays = [
            "[1, [2, 3], 4]",
            "[[1],[2]]",
            "[1, 2]",
            "[1,2,]",
            "[1 2]",
            "[1, \"]\"]",
            "[\"[\", 1]",
            "[-0]",
            "[1e5, [1]]",
            "[ ]",
            "[1,\n2\t]",
            "[01]",
            "[1, {\"a\": [2]}]",
            "[1, 2",
            "[1.5, -2.25, 3]",
            "[1, -]",
            "[9999999999999999999999]",
        ];
        for a in arrays {
            for text in
                [a.to_string(), format!("{{\"k\": {a}}}"), format!("[{a}, {a}]"), format!("{{\"k\": [{a}], \"j\": 1}}")]
            {
                let serde = serde_json::from_str::<serde_json::Value>(&text).is_ok();
                assert_eq!(value(&text).is_some(), serde, "{text}");
            }
        }
    }

    /// Synthetic: a value split as `Shape::Numbers` is accepted exactly where it is as a
    /// whole value, with `flat_numbers`' count and integer flag when it is a flat array of
    /// plain numbers, and whole otherwise (its end found after any bracket inside it).
    #[test]
    fn number_arrays_split_as_numbers() {
        const SHAPE: Shape = Shape::Object(&[("a", Shape::Numbers)]);
        let cases = [
            ("[1, 2, 3]", Some((3, true))),
            ("[ 1.5 ,-2 ]", Some((2, false))),
            ("[0.10, 2.50000, -0.30000000000000004, 1000000000000000.0]", Some((4, false))),
            ("[\n  151644,\n  8948, 198,\t2610 ]", Some((4, true))),
            ("[]", Some((0, true))),
            ("[1e5]", None),
            ("[1, \"x]\"]", None),
            ("[[1], 2]", None),
            ("[1, 2", None),
            ("[01]", None),
            ("[-0]", None),
            ("[1,]", None),
            ("\"[1]\"", None),
            ("7", None),
        ];
        for (value, numbers) in cases {
            for text in [format!("{{\"a\": {value}, \"b\": [4]}}"), format!("{{\"a\": {value}}}")] {
                let whole =
                    object_members(&text).map(|m| m.iter().map(|(k, v)| (k.to_string(), *v)).collect::<Vec<_>>());
                let Some(Split { parts: Parts::Members(members), .. }) = split(&text, &SHAPE) else {
                    assert!(whole.is_none(), "{text}: refused, but accepted whole");
                    continue;
                };
                let texts: Vec<_> = members.iter().map(|(k, v)| (k.to_string(), v.text)).collect();
                assert_eq!(Some(texts), whole, "{text}");
                match members[0].1.parts {
                    Parts::Numbers { count, integers, .. } => {
                        assert_eq!(Some((count, integers)), numbers, "{text}")
                    }
                    _ => assert_eq!(None, numbers, "{text}: not split as numbers"),
                }
                // Split for writing: the same figures, and the canonical form the writer
                // writes from the text.
                let Some(Split { parts: Parts::Members(written), .. }) = split_written(&text, &SHAPE) else {
                    panic!("{text}: split_written refused what split accepted");
                };
                match &written[0].1.parts {
                    Parts::Numbers { count, integers, canonical: Some(canonical) } => {
                        assert_eq!(Some((*count, *integers)), numbers, "{text}");
                        let mut expected = Vec::new();
                        write_canonical(&mut expected, written[0].1.text).expect("written");
                        assert_eq!(canonical.as_bytes(), expected, "{text}");
                    }
                    Parts::Numbers { canonical: None, .. } => panic!("{text}: no canonical form"),
                    _ => assert_eq!(None, numbers, "{text}: not split as numbers"),
                }
            }
        }
    }

    /// Synthetic: a split taken several levels down refuses the same texts as a split of
    /// the top level alone (the depth counted from the whole text), and its parts are the
    /// texts of the values at those places.
    #[test]
    fn split_levels_keep_the_checks_rules() {
        const DEEP: Shape = Shape::Object(&[("a", Shape::Array(&Shape::Object(&[("b", Shape::Object(&[]))])))]);
        let nested = |n: usize| format!("{{\"a\":[{{\"b\":{{\"c\":{}1{}}}}}]}}", "[".repeat(n), "]".repeat(n));
        for n in [0, 1, MAX_DEPTH - 5, MAX_DEPTH - 4, MAX_DEPTH - 3, MAX_DEPTH, 10_000] {
            let text = nested(n);
            assert_eq!(split(&text, &DEEP).is_some(), object_members(&text).is_some(), "depth {n}");
            assert_eq!(object_members(&text).is_some(), n <= MAX_DEPTH - 4, "depth {n}");
        }
        // A shape as deep as the text: taken apart to the level before the deepest the
        // check allows, and `fully_split` says where it was not.
        static RECURSIVE: Shape<'static> = Shape::Array(&RECURSIVE);
        for n in [1, MAX_DEPTH - 1, MAX_DEPTH] {
            let text = format!("{}{}", "[".repeat(n), "]".repeat(n));
            let whole = split(&text, &RECURSIVE).expect("within the limit");
            assert_eq!(fully_split(&whole, &RECURSIVE), n < MAX_DEPTH, "depth {n}");
        }
        let kinds = split(r#"{"a": 1, "b": {"c": 2}}"#, &Shape::Object(&[("a", Shape::Array(&Shape::Whole))]));
        assert!(fully_split(&kinds.expect("valid"), &Shape::Object(&[("a", Shape::Array(&Shape::Whole))])));
        let text = r#" {"a": [{"b": {"c": "\u00e9", "d": [1]}, "e": 2}, 3], "f": {"b": 1}} "#;
        let Some(Split { parts: Parts::Members(members), text: whole }) = split(text, &DEEP) else {
            panic!("accepted");
        };
        assert_eq!(whole, text.trim());
        let names: Vec<_> = members.iter().map(|(k, v)| (k.as_ref(), v.text)).collect();
        assert_eq!(names, [("a", r#"[{"b": {"c": "\u00e9", "d": [1]}, "e": 2}, 3]"#), ("f", r#"{"b": 1}"#)]);
        assert!(matches!(members[1].1.parts, Parts::Whole), "only the named members are split");
        let Parts::Elements(items) = &members[0].1.parts else { panic!("an array") };
        assert!(matches!(items[1].parts, Parts::Whole), "an element not of the shape's kind stays whole");
        let Parts::Members(item) = &items[0].parts else { panic!("an object") };
        let Parts::Members(b) = &item[0].1.parts else { panic!("an object") };
        let b: Vec<_> = b.iter().map(|(k, v)| (k.as_ref(), v.text)).collect();
        assert_eq!(b, [("c", r#""\u00e9""#), ("d", "[1]")]);
        assert!(split(r#"{"a": [{"b": {"c": 1,}}]}"#, &DEEP).is_none());
        assert_eq!(array_elements(" [1, {\"a\": 2} ,\"x\"] "), Some(vec!["1", "{\"a\": 2}", "\"x\""]));
        assert_eq!(array_elements("[]"), Some(vec![]));
        assert_eq!(array_elements("[1,]"), None);
        assert_eq!(value(" \"x\" "), Some("\"x\""));
    }

    /// Synthetic (the real files' rows are pinned by `digests_real`, which writes them):
    /// `split_written` accepts what `split` accepts, to the depth limit, and each part kept
    /// whole carries what the writer would write from its text.
    #[test]
    fn split_written_parts_are_the_canonical_form_of_their_text() {
        const DEEP: Shape = Shape::Object(&[("a", Shape::Array(&Shape::Object(&[("b", Shape::Object(&[]))])))]);
        fn wholes<'s>(split: &'s Split<'_>, out: &mut Vec<(&'s str, Option<&'s str>)>) {
            match &split.parts {
                Parts::Members(members) => members.iter().for_each(|(_, m)| wholes(m, out)),
                Parts::Elements(items) => items.iter().for_each(|i| wholes(i, out)),
                Parts::Whole => out.push((split.text, None)),
                Parts::Canonical(canonical) => out.push((split.text, Some(canonical))),
                Parts::Verbatim => out.push((split.text, Some(split.text))),
                Parts::Numbers { canonical, .. } => out.push((split.text, canonical.as_deref())),
            }
        }
        let nested = |n: usize, inner: &str| {
            format!("{{\"a\":[{{\"b\":{{\"c\":{}{inner}{}}}}}]}}", "[".repeat(n), "]".repeat(n))
        };
        let mut texts: Vec<String> = [MAX_DEPTH - 5, MAX_DEPTH - 4, MAX_DEPTH - 3]
            .iter()
            .flat_map(|&n| [nested(n, "1"), nested(n, "[]"), nested(n, "{}"), nested(n, "{\"x\":[]}")])
            .collect();
        texts.extend(
            [
                r#" {"a": [{"b": {"z": 1.50, "c": "\u00e9\/", "d": [1e2, -0, 12345678901234567890]}, "e": {"y": 2, "x": 1}}, 3], "f": {"b": true, "a": null}} "#,
                r#"{"a": [{"b": {"k": 1, "k": {"n": [ ], "m": "\t\ud83d\ude00"}}}, "\"q\""], "z": "x\u0001"}"#,
                r#"{"a": [{"b": {"s": "plain", "t": "a\nb\\c\"d\b\f\r", "u": "x\/y", "v": "\u0041"}}]}"#,
                r#"{"a": [{"b": {"c": 1,}}]}"#,
                r#"{"a": [{"b": {"c": "\ud800"}}]}"#,
                r#"{"a": [{"b": {"c": 01}}]}"#,
                r#"{"f": {"x": 1e999}}"#,
            ]
            .map(String::from),
        );
        let mut written_parts = 0;
        for text in &texts {
            let (plain, written) = (split(text, &DEEP), split_written(text, &DEEP));
            assert_eq!(plain.is_some(), written.is_some(), "{text}");
            let Some(written) = written else { continue };
            let mut parts = Vec::new();
            wholes(&written, &mut parts);
            assert!(!parts.is_empty(), "{text}");
            for (source, canonical) in parts {
                written_parts += usize::from(canonical.is_some());
                let mut expected = Vec::new();
                write_canonical(&mut expected, source).expect("checked text writes");
                match canonical {
                    Some(canonical) => assert_eq!(canonical.as_bytes(), &*expected, "{source}"),
                    None => assert!(
                        !source.starts_with(['{', '[', '"']) || source.contains("\\u") || source.contains("\\/"),
                        "{source}: not written"
                    ),
                }
            }
        }
        let (first, mut plain) = (split(&texts[texts.len() - 7], &DEEP).expect("accepted"), Vec::new());
        wholes(&first, &mut plain);
        assert!(plain.iter().all(|(_, canonical)| canonical.is_none()), "`split` writes nothing");
        assert_eq!(written_parts, 11, "the objects, arrays and canonical strings kept whole are written");
    }

    /// Synthetic (no real string has every escape at every cut point): a string's tail is
    /// a suffix of its whole decoded text, whatever escape sits where the tail begins.
    #[test]
    fn string_tails_are_suffixes_of_the_decoded_string() {
        let specials = ["\\\"", "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "é", "😀"];
        for len in [13, 20, 21, 40, 64, 200] {
            for at in 0..len {
                for special in specials {
                    for fill in ["x", "\\\\"] {
                        let mut raw: String = fill.repeat(len);
                        raw.insert_str(at * fill.len(), special);
                        let literal = format!("\"{raw}\"");
                        let whole: String = serde_json::from_str(&literal).expect("valid");
                        match string_ends(&literal, 6) {
                            Some((first, tail)) => {
                                assert_eq!(whole.chars().next(), Some(first), "{literal}");
                                assert!(whole.ends_with(&tail), "{literal}: {tail:?}");
                                assert!(tail.len() >= 3, "{literal}: {tail:?}");
                            }
                            None => {
                                let end = &raw.as_bytes()[raw.len().saturating_sub(18)..];
                                assert!(raw.len() <= 12 || end.contains(&b'\\'), "{literal}");
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(string_ends(&format!("\"{}\"", "ab".repeat(20)), 6), Some(('a', "ababab".into())));
        assert_eq!(string_ends("\"short\"", 6), None);
        assert_eq!(string_ends("17", 6), None);
    }

    /// Synthetic: every split of a string across the eight-byte steps finds its end, with
    /// whitespace of every kind between tokens, and every escape is written as serde_json
    /// writes what it decodes to (copied or decoded, at every place of the string).
    #[test]
    fn strings_of_every_length_and_escape_position() {
        for len in (0..40).chain([63, 64, 65, 100, 200]) {
            for at in 0..len {
                let specials = [
                    "\\\"",
                    "\\\\",
                    "\\n",
                    "\\u00e9",
                    "é",
                    "\\/",
                    "\\b\\f\\r\\t",
                    "\\u001f",
                    "\\u001F",
                    "\\u000a",
                    "\\u0041",
                    "\\ud83d\\ude00",
                    "\\\\\\n\\\"\\/",
                ];
                for special in specials {
                    let mut s: String = "x".repeat(len);
                    s.replace_range(at..at + 1, special);
                    accepted(&format!("{{\"k\":\"{s}\",\"n\":1}}"));
                    accepted(&format!("{{\"k\":\"{s}\",\t\"n\":1}}"));
                }
                let mut raw: Vec<u8> = vec![b'x'; len];
                raw[at] = 0x1f;
                refused(&format!("{{\"k\":\"{}\"}}", String::from_utf8(raw).expect("ascii")));
            }
        }
    }

    /// A fixed-seed xorshift generator, for the synthetic cases.
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Synthetic: numbers in many spellings (a fixed-seed generator) are written as serde_json
    /// reads and writes them.
    #[test]
    fn numbers_are_written_as_serde_json_writes_them() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut tokens = Vec::new();
        for _ in 0..3000 {
            let f = f64::from_bits(next());
            if f.is_finite() && f.abs() > 1e-290 && f.abs() < 1e290 {
                tokens.push(format!("{f}"));
                tokens.push(format!("{f:e}"));
                tokens.push(format!("{f:.3}"));
            }
            let n = next();
            tokens.push(format!("{}", n % 1_000_000));
            tokens.push(format!("-{}", n));
            tokens.push(format!("{}.{}E-{}", n % 1000, n % 97, n % 300));
            tokens.push(format!("{}{}", n, n % 1000));
        }
        for token in tokens {
            accepted(&format!("{{\"n\":{token}}}"));
        }
    }

    /// Synthetic: `write_short_decimal` writes what parsing and re-printing writes, on
    /// fractions of every length and magnitude around its limits (15 digits, exponents -5
    /// and 15), with trailing and leading zeros, and takes the ones it should.
    #[test]
    fn short_decimals_are_written_as_their_doubles_print() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let (mut taken, mut left) = (0, 0);
        for _ in 0..200_000 {
            let r = next();
            let digit = |n: u64| (b'0' + (n % 10) as u8) as char;
            let mut int: String = (0..r % 18).map(|i| digit(next() >> (i % 7))).collect();
            if int.is_empty() || (int.len() > 1 && int.starts_with('0')) {
                int = if r.is_multiple_of(3) {
                    "0".into()
                } else {
                    format!("{}{}", 1 + r % 9, &int.get(1..).unwrap_or(""))
                };
            }
            let zeros = "0".repeat(((r >> 8) % 8) as usize);
            let tail: String = (0..(r >> 16) % 19).map(|_| digit(next())).collect();
            let trailing = "0".repeat(((r >> 24) % 3) as usize);
            let sign = if r >> 40 & 1 == 1 { "-" } else { "" };
            let token = format!("{sign}{int}.{zeros}{tail}{trailing}");
            let mut ours = Vec::new();
            let expected = zmij::Buffer::new().format_finite(token.parse::<f64>().unwrap()).to_string();
            if write_short_decimal(&mut ours, &token) {
                taken += 1;
                assert_eq!(String::from_utf8(ours).unwrap(), expected, "{token}");
            } else {
                left += 1;
                assert!(ours.is_empty(), "{token}");
                let mut written = Vec::new();
                write_number(&mut written, &token).unwrap();
                assert_eq!(String::from_utf8(written).unwrap(), expected, "{token}");
            }
        }
        assert!(taken > 50_000 && left > 50_000, "taken {taken}, left {left}");
        let cases = [
            ("0.00001", true),
            ("0.000001", false),
            ("-0.0001234", true),
            ("1000000000000000.0", true),
            ("10000000000000000.0", false),
            ("123456789012345.0", true),
            ("1234567890123456.0", false),
            ("0.30000000000000004", false),
            ("0.3000", true),
            ("100.00", true),
            ("0.0", false),
            ("-0.0", false),
            ("1e5", false),
            ("1.5e3", false),
            ("01.5", false),
            ("1.", false),
            (".5", false),
        ];
        for (token, short) in cases {
            let mut out = Vec::new();
            assert_eq!(write_short_decimal(&mut out, token), short, "{token}");
            if short {
                let expected = zmij::Buffer::new().format_finite(token.parse::<f64>().unwrap()).to_string();
                assert_eq!(String::from_utf8(out).unwrap(), expected, "{token}");
            }
        }
    }

    /// Synthetic: digits found eight at a time end where a byte-by-byte loop says, for every
    /// byte value at every place of a word.
    #[test]
    fn digit_runs_end_where_the_first_non_digit_is() {
        for place in 0..12 {
            for byte in 0..=255u8 {
                let mut b = vec![b'7'; 12];
                b[place] = byte;
                for from in [0, 3] {
                    let expected = (from..b.len()).find(|&i| !b[i].is_ascii_digit()).unwrap_or(b.len());
                    assert_eq!(digits_end(&b, from), expected, "byte {byte:#x} at {place}, from {from}");
                }
            }
        }
    }

    /// Synthetic: the number forms `flat_numbers` keeps and the ones it leaves to serde_json
    /// (real token arrays hold only short integers and plain fractions). What it keeps must
    /// parse and write as the whole text does through serde_json.
    #[test]
    fn flat_number_arrays() {
        let kept = [
            ("[]", (0, true)),
            (" [ 1 , 2,3 ] ", (3, true)),
            ("[0,-1,1234567890123456789,-123456789012345678]", (4, true)),
            ("[-0.0,0.5,-0.30000000000000004,1.0,3.14159265358979323846264338327950]", (5, false)),
            ("[1,\n\t2.5]", (2, false)),
        ];
        // Written alone (the fast writer) and inside an object (the generic one).
        let written_alone = |text: &str| {
            let whole: Value = serde_json::from_str(text).expect("serde_json parses it");
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            write_canonical(&mut ours, text).expect("accepted text is written");
            crate::compact::to_writer(&mut theirs, &whole).expect("a value is written");
            assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs), "{text}");
        };
        for (text, expected) in kept {
            assert_eq!(flat_numbers(text), Some(expected), "{text}");
            accepted(&format!("{{\"a\":{text}}}"));
            written_alone(text.trim());
        }
        for text in
            ["[-0]", "[1e3, 2]", "[1, 12345678901234567890]", "[-1234567890123456789]", "[1, \"x\"]", "[1, [2]]"]
        {
            written_alone(text);
        }
        let refused = [
            "[-0]",
            "[01]",
            "[1.]",
            "[.5]",
            "[1e3]",
            "[1.5E-3]",
            "[12345678901234567890]",
            "[-1234567890123456789]",
            "[0.1234567890123456789012345678901234567890]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[\"1\"]",
            "[[1]]",
            "[null]",
            "[1] x",
            "[1",
            "{}",
            "1",
        ];
        for text in refused {
            assert_eq!(flat_numbers(text), None, "{text}");
        }
    }

    /// Real NeMo Gym, ATIF and canonical lines: every one is accepted and parses the same.
    #[test]
    fn real_lines_parse_the_same() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/real");
        let mut lines = 0;
        for dir in ["gym", "atif", "tau2", "inspect"] {
            let Ok(entries) = std::fs::read_dir(format!("{root}/{dir}")) else { continue };
            for entry in entries.flatten() {
                let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
                let lines_file = entry.path().extension().is_some_and(|e| e == "jsonl");
                let docs: Vec<&str> = if lines_file { text.lines().collect() } else { vec![text.as_str()] };
                for doc in docs.into_iter().filter(|d| serde_json::from_str::<Value>(d).is_ok_and(|v| v.is_object())) {
                    accepted(doc);
                    lines += 1;
                }
            }
        }
        assert!(lines > 10, "{lines} real documents");
    }
}
