//! Compact JSON writer for the canonical form: the same bytes as `serde_json::to_writer`,
//! with strings scanned for escapes eight bytes at a time instead of one (serde_json's loop
//! was 8–10 % of `convert`'s CPU on long-content records).

use serde::ser::{self, Error as _, Serialize};

type Error = serde_json::Error;
type Result<T = ()> = std::result::Result<T, Error>;

/// Appends the compact JSON of `value` to `out`, byte for byte what serde_json writes.
pub fn to_writer<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result {
    value.serialize(&mut Writer { out })
}

/// The compact JSON of `value` as a string.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    let mut out = Vec::with_capacity(128);
    to_writer(&mut out, value)?;
    // Only valid UTF-8 is ever written: `&str` pieces and ASCII.
    String::from_utf8(out).map_err(|e| Error::custom(e.to_string()))
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of every byte of `w` that must be escaped: below 0x20, a quote or a
/// backslash. Exact per byte (no carries between bytes), so set bits name the positions.
#[inline]
fn escape_mask(w: u64) -> u64 {
    // High bit of each byte that is non-zero; adding to 7-bit values never carries.
    let nonzero = |v: u64| ((v & LOWS).wrapping_add(LOWS) | v) & HIGHS;
    let at_least_space = ((w & LOWS).wrapping_add(ONES * (0x80 - 0x20)) | w) & HIGHS;
    let not_quote = nonzero(w ^ (ONES * b'"' as u64));
    let not_backslash = nonzero(w ^ (ONES * b'\\' as u64));
    !(at_least_space & not_quote & not_backslash) & HIGHS
}

/// serde_json's escape of a byte that `escape_mask` flags.
#[inline]
pub(crate) fn escape_of(b: u8) -> &'static [u8] {
    const CONTROL: [&[u8]; 32] = [
        b"\\u0000", b"\\u0001", b"\\u0002", b"\\u0003", b"\\u0004", b"\\u0005", b"\\u0006", b"\\u0007", b"\\b", b"\\t",
        b"\\n", b"\\u000b", b"\\f", b"\\r", b"\\u000e", b"\\u000f", b"\\u0010", b"\\u0011", b"\\u0012", b"\\u0013",
        b"\\u0014", b"\\u0015", b"\\u0016", b"\\u0017", b"\\u0018", b"\\u0019", b"\\u001a", b"\\u001b", b"\\u001c",
        b"\\u001d", b"\\u001e", b"\\u001f",
    ];
    match b {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        _ => CONTROL[(b & 0x1f) as usize],
    }
}

/// Appends `s` as a quoted, escaped JSON string.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut run = 0; // start of the bytes not yet copied
    let mut escape = |out: &mut Vec<u8>, i: usize| {
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(escape_of(bytes[i]));
        run = i + 1;
    };
    let mut words = bytes.chunks_exact(8);
    for (w, word) in words.by_ref().enumerate() {
        let Ok(word) = <[u8; 8]>::try_from(word) else { break };
        let mut mask = escape_mask(u64::from_le_bytes(word));
        while mask != 0 {
            escape(out, w * 8 + (mask.trailing_zeros() / 8) as usize);
            mask &= mask - 1;
        }
    }
    // The last 0-7 bytes one at a time: a partial word would cost a stack round trip.
    let tail = bytes.len() - words.remainder().len();
    for (i, &b) in words.remainder().iter().enumerate() {
        if b < 0x20 || b == b'"' || b == b'\\' {
            escape(out, tail + i);
        }
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// `serialize_i8` ... `serialize_u128`, each through the serializer's `int`.
macro_rules! integers {
    () => {
        integers!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64, serialize_i128: i128,
            serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128);
    };
    ($($method:ident : $t:ty),*) => {$(
        fn $method(self, v: $t) -> Result {
            self.int(v)
        }
    )*};
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

/// The newtype name under which `Extra` hands this writer a member it keeps as JSON text.
pub(crate) const JSON_TEXT: &str = "$trajkit::json_text";

/// The newtype name of JSON text already in canonical form: written as it is.
pub(crate) const JSON_CANONICAL: &str = "$trajkit::json_canonical";

thread_local! {
    /// Set by the writer just before it serializes a `JSON_TEXT` newtype's content: that
    /// content then gives its text (`serialize_str`) instead of a parsed `Value`.
    static TAKES_TEXT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True (once) when the serializer at hand is this writer asking for JSON text.
pub(crate) fn takes_text() -> bool {
    TAKES_TEXT.with(|t| t.replace(false))
}

impl Writer<'_> {
    fn int(&mut self, v: impl itoa::Integer) -> Result {
        self.out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        Ok(())
    }

    /// A float in shortest round-trip form (zmij), as serde_json writes it; non-finite is `null`.
    fn float<F: zmij::Float>(&mut self, v: F, finite: bool) -> Result {
        if finite {
            self.out.extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
        } else {
            self.out.extend_from_slice(b"null");
        }
        Ok(())
    }

    /// Opens `{"variant":` for the externally tagged enum forms.
    fn open_variant(&mut self, variant: &str) {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
    }
}

/// An open array, object or enum variant; `first` is false once a member was written.
struct Compound<'w, 'a> {
    w: &'w mut Writer<'a>,
    first: bool,
    /// Closing bytes: `]`, `}`, or `]}` / `}}` for a variant.
    close: &'static [u8],
}

impl<'w, 'a> Compound<'w, 'a> {
    fn open(w: &'w mut Writer<'a>, open: u8, close: &'static [u8]) -> Self {
        w.out.push(open);
        Compound { w, first: true, close }
    }

    fn comma(&mut self) {
        if !self.first {
            self.w.out.push(b',');
        }
        self.first = false;
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.comma();
        value.serialize(&mut *self.w)
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result {
        self.comma();
        write_str(self.w.out, key);
        self.w.out.push(b':');
        value.serialize(&mut *self.w)
    }

    fn close(self) -> Result {
        self.w.out.extend_from_slice(self.close);
        Ok(())
    }
}

impl<'w, 'a> ser::Serializer for &'w mut Writer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'w, 'a>;
    type SerializeTuple = Compound<'w, 'a>;
    type SerializeTupleStruct = Compound<'w, 'a>;
    type SerializeTupleVariant = Compound<'w, 'a>;
    type SerializeMap = Compound<'w, 'a>;
    type SerializeStruct = Compound<'w, 'a>;
    type SerializeStructVariant = Compound<'w, 'a>;

    fn serialize_bool(self, v: bool) -> Result {
        self.out.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    integers!();
    fn serialize_f32(self, v: f32) -> Result {
        self.float(v, v.is_finite())
    }
    fn serialize_f64(self, v: f64) -> Result {
        self.float(v, v.is_finite())
    }
    fn serialize_char(self, v: char) -> Result {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result {
        write_str(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, name: &'static str, value: &T) -> Result {
        if name == JSON_TEXT || name == JSON_CANONICAL {
            TAKES_TEXT.with(|t| t.set(true));
            let mut text = TextWriter { out: self.out, canonical: name == JSON_CANONICAL };
            let written = value.serialize(&mut text);
            TAKES_TEXT.with(|t| t.set(false));
            return written;
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        self.open_variant(variant);
        value.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Ok(Compound::open(self, b'[', b"]"))
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Self::SerializeTupleStruct> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        self.open_variant(variant);
        Ok(Compound::open(self, b'[', b"]}"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Ok(Compound::open(self, b'{', b"}"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Ok(Compound::open(self, b'{', b"}"))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        self.open_variant(variant);
        Ok(Compound::open(self, b'{', b"}}"))
    }
}

/// The sequence-like compound traits: each element is a value after a comma.
macro_rules! elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
                self.element(value)
            }
            fn end(self) -> Result {
                self.close()
            }
        }
    )*};
}
elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        self.comma();
        key.serialize(KeyWriter { out: self.w.out })?;
        self.w.out.push(b':');
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        value.serialize(&mut *self.w)
    }
    fn end(self) -> Result {
        self.close()
    }
}

/// The struct-like compound traits: each field is `"key":value` after a comma.
macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
                self.field(key, value)
            }
            fn end(self) -> Result {
                self.close()
            }
        }
    )*};
}
fields!(SerializeStruct, SerializeStructVariant);

/// The compound and variant methods of a serializer that takes only scalars: each fails
/// with `$error()` (`KeyWriter`, `TextWriter`).
macro_rules! refuse_compounds {
    ($error:ident) => {
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result {
            Err($error())
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
            Err($error())
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
            Err($error())
        }
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct> {
            Err($error())
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant> {
            Err($error())
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
            Err($error())
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
            Err($error())
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant> {
            Err($error())
        }
    };
}

/// Takes the text of a value `LazyValue` keeps as JSON text and writes its canonical form
/// (copies it when it is canonical already); anything but a string is an error (only
/// `LazyValue` sends these newtypes).
struct TextWriter<'a> {
    out: &'a mut Vec<u8>,
    canonical: bool,
}

fn not_json_text() -> Error {
    Error::custom("a JSON text member must be given as its text")
}

/// Serializer methods that fail with `$error` for a writer that takes one kind of value.
macro_rules! refuse {
    ($error:ident; $($method:ident($($arg:ty),*)),*) => {$(
        fn $method(self, $(_: $arg),*) -> Result {
            Err($error())
        }
    )*};
}

impl ser::Serializer for &mut TextWriter<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_str(self, text: &str) -> Result {
        if self.canonical {
            self.out.extend_from_slice(text.as_bytes());
            return Ok(());
        }
        crate::json_text::write_canonical(self.out, text)
    }
    refuse!(not_json_text; serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
        serialize_i64(i64), serialize_u8(u8), serialize_u16(u16), serialize_u32(u32), serialize_u64(u64),
        serialize_f32(f32), serialize_f64(f64), serialize_char(char), serialize_bytes(&[u8]), serialize_none(),
        serialize_unit(), serialize_unit_struct(&'static str), serialize_unit_variant(&'static str, u32, &'static str));
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result {
        Err(not_json_text())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, _: &T) -> Result {
        Err(not_json_text())
    }
    refuse_compounds!(not_json_text);
}

/// Map keys as serde_json writes them: strings, and numbers, booleans and chars quoted.
struct KeyWriter<'a> {
    out: &'a mut Vec<u8>,
}

fn key_must_be_a_string() -> Error {
    Error::custom("key must be a string")
}

impl KeyWriter<'_> {
    fn quoted(self, text: &str) -> Result {
        self.out.push(b'"');
        self.out.extend_from_slice(text.as_bytes());
        self.out.push(b'"');
        Ok(())
    }
    fn int(self, v: impl itoa::Integer) -> Result {
        self.quoted(itoa::Buffer::new().format(v))
    }
    fn float<F: zmij::Float>(self, v: F, finite: bool) -> Result {
        if !finite {
            return Err(Error::custom("float key must be finite (got NaN or +/-inf)"));
        }
        self.quoted(zmij::Buffer::new().format_finite(v))
    }
}

impl ser::Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result {
        write_str(self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_bool(self, v: bool) -> Result {
        self.quoted(if v { "true" } else { "false" })
    }
    integers!();
    fn serialize_f32(self, v: f32) -> Result {
        self.float(v, v.is_finite())
    }
    fn serialize_f64(self, v: f64) -> Result {
        self.float(v, v.is_finite())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_none(self) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result {
        Err(key_must_be_a_string())
    }
    refuse_compounds!(key_must_be_a_string);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same_as_serde_json(v: &serde_json::Value) {
        let ours = to_string(v).unwrap();
        assert_eq!(ours, serde_json::to_string(v).unwrap());
    }

    #[test]
    fn every_byte_escapes_as_serde_json_does() {
        // Each ASCII byte and a few multi-byte characters at every offset of an 8-byte word.
        let mut chars: Vec<char> = (0u8..0x80).map(char::from).collect();
        chars.extend(['é', '€', '😀', '\u{7f}', '\u{2028}']);
        for c in &chars {
            for pad in 0..10 {
                let s = format!("{}{c}{}", "a".repeat(pad), "b".repeat(9 - pad));
                same_as_serde_json(&json!(s));
                same_as_serde_json(&json!({ s.clone(): [s] }));
            }
        }
        let all: String = chars.iter().collect();
        same_as_serde_json(&json!(all.repeat(3)));
    }

    #[test]
    fn numbers_and_shapes_match_serde_json() {
        same_as_serde_json(&json!({
            "a": [1, -1, 0, u64::MAX, i64::MIN, 0.1, 1e300, -2.5e-8, 1.0, 100.0, 1e16, 123456789.125],
            "b": {"": null, "x": true, "y": false, "z": []},
            "c": [[], {}, [{}], "", "\"\\/"],
        }));
        assert_eq!(to_string(&f64::NAN).unwrap(), serde_json::to_string(&f64::NAN).unwrap());
        assert_eq!(to_string(&1.5f32).unwrap(), serde_json::to_string(&1.5f32).unwrap());
    }

    #[test]
    fn enums_tuples_and_non_string_keys_match_serde_json() {
        #[derive(serde::Serialize)]
        enum E {
            Unit,
            New(u8),
            Tuple(u8, &'static str),
            Struct { a: Option<u8>, b: char },
        }
        let values = (E::Unit, E::New(7), E::Tuple(1, "t"), E::Struct { a: None, b: '"' }, (1u8, b"ab".as_slice()));
        assert_eq!(to_string(&values).unwrap(), serde_json::to_string(&values).unwrap());
        let keys: std::collections::BTreeMap<i32, bool> = [(-3, true), (4, false)].into();
        assert_eq!(to_string(&keys).unwrap(), serde_json::to_string(&keys).unwrap());
        let bad: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
        assert!(to_string(&bad).is_err() && serde_json::to_string(&bad).is_err());
    }
}
