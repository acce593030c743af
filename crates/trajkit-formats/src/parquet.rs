//! Parquet input (Hugging Face dataset shards): a container, not a family.
//!
//! A `.parquet` file is decoded batch by batch with the arrow reader (never the whole file:
//! the reader pulls one page per column at a time and this module holds one record batch of
//! a few MiB), and each row is written as one JSON object. The rows are then handed to the
//! family reader that claims them, exactly as if they were lines of a JSON Lines file:
//! detection runs on the first rows written as JSON Lines (see [`peek_rows`]), and every
//! row is one record whose `document_index` is its 0-based row index (`ds[i]` in
//! `datasets`). See docs/formats/parquet.md for the value mapping and the limits.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, Float16Type, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};

use crate::reader::PEEK_BYTES;
use crate::rejection::{schema, Problem};

/// The 4 bytes every Parquet file begins (and ends) with.
pub const MAGIC: &[u8] = b"PAR1";

/// Decoded bytes a record batch aims at: rows per batch = this / the file's average row.
const BATCH_BYTES: u64 = 4 << 20;
/// Rows per batch at most (small rows).
const MAX_BATCH_ROWS: u64 = 1024;

/// True when a file is to be read as Parquet: its name ends in `.parquet`, or it starts
/// with the Parquet magic. A `.parquet` name without the magic is still read as Parquet so
/// that the reader's error (not a Parquet file) names it.
pub fn is_parquet(name: &str, head: &[u8]) -> bool {
    name.ends_with(".parquet") || head.starts_with(MAGIC)
}

/// The name rows are detected under: rows are JSON Lines records (`x.parquet` -> `x.jsonl`).
pub fn rows_name(name: &str) -> String {
    let stem = name.strip_suffix(".parquet").unwrap_or(name);
    format!("{stem}.jsonl")
}

/// The first rows as JSON Lines, for detection: the first row whole (whatever its size),
/// then more rows while the text stays within `PEEK_BYTES`. Rows that cannot be converted
/// are left out. `Err` when the file cannot be read as Parquet.
pub fn peek_rows(path: &Path) -> Result<Vec<u8>, String> {
    let mut rows = Rows::open(path)?;
    let mut out = Vec::new();
    let mut unconvertible: Option<Problem> = None;
    loop {
        let start = out.len();
        match rows.next_row(&mut out)? {
            // Every row failed to convert: say why instead of looking like an empty file.
            Next::End if out.is_empty() => {
                return match unconvertible {
                    Some(p) => Err(format!("no row could be converted to JSON ({}: {})", p.json_path, p.message)),
                    None => Ok(out),
                }
            }
            Next::End => return Ok(out),
            Next::Unconvertible(p) => {
                out.truncate(start);
                unconvertible.get_or_insert(p);
            }
            Next::Row => {
                if start > 0 && out.len() > PEEK_BYTES {
                    out.truncate(start);
                    return Ok(out);
                }
                out.push(b'\n');
                if out.len() >= PEEK_BYTES {
                    return Ok(out);
                }
            }
        }
    }
}

/// What [`Rows::next_row`] produced.
#[derive(Debug)]
pub enum Next {
    /// A row's JSON object was appended.
    Row,
    /// The row could not be written as JSON (nothing appended): its rejection.
    Unconvertible(Problem),
    /// No more rows.
    End,
}

/// A Parquet file's rows, one at a time, decoded a record batch at a time.
///
/// Each row group gets its own reader, whose batch size (rows per record batch) is chosen
/// so that a decoded batch stays near `BATCH_BYTES`: from the largest decoded size per row
/// measured so far, or, before any batch was decoded, from the footer's (encoded) sizes
/// with the first batch held to `FIRST_BATCH_ROWS` rows, because dictionary-encoded
/// columns decode far larger than they are stored.
pub struct Rows {
    file: File,
    meta: ArrowReaderMetadata,
    /// Next row group to open.
    group: usize,
    reader: Option<ParquetRecordBatchReader>,
    batch: Option<RecordBatch>,
    /// Next row within `batch`.
    pos: usize,
    /// 0-based index in the file of the next row.
    index: u64,
    /// Largest decoded bytes per row seen (0 before the first batch).
    row_bytes: u64,
}

/// Rows of the first record batch of a file, before any decoded size is known.
const FIRST_BATCH_ROWS: u64 = 16;

impl Rows {
    /// Opens a file and reads its footer (the metadata only).
    pub fn open(path: &Path) -> Result<Self, String> {
        let file = File::open(path).map_err(|e| e.to_string())?;
        let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .map_err(|e| format!("not a readable Parquet file: {e}"))?;
        Ok(Rows { file, meta, group: 0, reader: None, batch: None, pos: 0, index: 0, row_bytes: 0 })
    }

    /// The 0-based index of the row the next call to `next_row` reads.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Rows per record batch for the next row group: from the larger of the decoded size
    /// per row seen so far and this group's own (uncompressed) size per row, so a group of
    /// much larger rows than the ones before it still decodes in bounded batches.
    fn batch_rows(&self) -> usize {
        let group_row = self
            .meta
            .metadata()
            .row_groups()
            .get(self.group)
            .map(|g| (g.total_byte_size().max(0) as u64).checked_div(g.num_rows().max(0) as u64).unwrap_or(1))
            .unwrap_or(1)
            .max(1);
        let rows = match self.row_bytes {
            0 => (BATCH_BYTES / group_row).min(FIRST_BATCH_ROWS),
            decoded_row => BATCH_BYTES / decoded_row.max(group_row),
        };
        rows.clamp(1, MAX_BATCH_ROWS) as usize
    }

    /// The next record batch, opening row groups in turn; `None` at the end.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>, String> {
        loop {
            if let Some(reader) = &mut self.reader {
                match reader.next() {
                    Some(Ok(batch)) => {
                        let rows = batch.num_rows().max(1) as u64;
                        self.row_bytes = self.row_bytes.max(batch.get_array_memory_size() as u64 / rows);
                        return Ok(Some(batch));
                    }
                    Some(Err(e)) => return Err(format!("cannot decode row {}: {e}", self.index)),
                    None => self.reader = None,
                }
            }
            if self.group >= self.meta.metadata().num_row_groups() {
                return Ok(None);
            }
            let file = self.file.try_clone().map_err(|e| e.to_string())?;
            let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.meta.clone())
                .with_row_groups(vec![self.group])
                .with_batch_size(self.batch_rows())
                .build()
                .map_err(|e| format!("cannot read row group {}: {e}", self.group))?;
            self.group += 1;
            self.reader = Some(reader);
        }
    }

    /// Appends the next row to `out` as one JSON object (no newline). `Err` when decoding
    /// fails (a corrupt page): the file stops there.
    pub fn next_row(&mut self, out: &mut Vec<u8>) -> Result<Next, String> {
        loop {
            if let Some(batch) = &self.batch {
                if self.pos < batch.num_rows() {
                    let start = out.len();
                    let result = write_row(batch, self.pos, out);
                    self.pos += 1;
                    self.index += 1;
                    return Ok(match result {
                        Ok(()) => Next::Row,
                        Err(e) => {
                            out.truncate(start);
                            Next::Unconvertible(e.problem())
                        }
                    });
                }
            }
            // Drop the spent batch before decoding the next one.
            self.batch = None;
            match self.next_batch()? {
                None => return Ok(Next::End),
                Some(batch) => {
                    self.batch = Some(batch);
                    self.pos = 0;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Arrow values to JSON text.

/// Why a value could not be written: the message and the path to it (innermost first).
struct Unconvertible {
    path: Vec<String>,
    message: String,
}

impl Unconvertible {
    fn new(message: String) -> Self {
        Unconvertible { path: Vec::new(), message }
    }

    fn at(mut self, segment: String) -> Self {
        self.path.push(segment);
        self
    }

    fn problem(self) -> Problem {
        let path: String = std::iter::once("$".to_string()).chain(self.path.into_iter().rev()).collect();
        schema(path, format!("Parquet value not representable as JSON: {}", self.message))
    }
}

type Written = Result<(), Unconvertible>;

/// One row as an object of all its columns, as `datasets` shows a row (`ds[i]`): a null
/// column or struct field is written `null`, never left out (Parquet cannot tell a missing
/// key from a null one, and the readers treat both alike).
fn write_row(batch: &RecordBatch, row: usize, out: &mut Vec<u8>) -> Written {
    let schema = batch.schema();
    out.push(b'{');
    let mut first = true;
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        if !first {
            out.push(b',');
        }
        first = false;
        write_str(field.name(), out);
        out.push(b':');
        write_value(column.as_ref(), row, out).map_err(|e| e.at(format!(".{}", field.name())))?;
    }
    out.push(b'}');
    Ok(())
}

fn write_str(s: &str, out: &mut Vec<u8>) {
    // Writing into a Vec cannot fail; the string is escaped by serde_json.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write_display(v: impl std::fmt::Display, out: &mut Vec<u8>) {
    let _ = write!(out, "{v}");
}

fn write_f64(v: f64, out: &mut Vec<u8>) -> Written {
    finite(v.is_finite(), v)?;
    let _ = serde_json::to_writer(&mut *out, &v);
    Ok(())
}

fn write_f32(v: f32, out: &mut Vec<u8>) -> Written {
    finite(v.is_finite(), v)?;
    // Shortest f32 text (0.1, not 0.10000000149011612).
    let _ = serde_json::to_writer(&mut *out, &v);
    Ok(())
}

/// NaN and ±Infinity have no JSON form, and serde_json would write them as `null`: the row
/// is refused instead (docs/numbers.md), naming the value's path.
fn finite(ok: bool, v: impl std::fmt::Display) -> Written {
    if ok {
        Ok(())
    } else {
        Err(Unconvertible::new(format!("non-finite float {v} (NaN and Infinity have no JSON form)")))
    }
}

/// Writes element `i` of `array` as JSON.
fn write_value(array: &dyn Array, i: usize, out: &mut Vec<u8>) -> Written {
    if array.is_null(i) {
        out.extend_from_slice(b"null");
        return Ok(());
    }
    let unsupported = || Unconvertible::new(format!("type {} is not supported", array.data_type()));
    macro_rules! prim {
        ($t:ty) => {
            array.as_primitive_opt::<$t>().map(|a| a.value(i)).ok_or_else(unsupported)?
        };
    }
    match array.data_type() {
        DataType::Null => out.extend_from_slice(b"null"),
        DataType::Boolean => {
            let v = array.as_boolean_opt().map(|a| a.value(i)).ok_or_else(unsupported)?;
            out.extend_from_slice(if v { b"true" } else { b"false" });
        }
        DataType::Int8 => write_display(prim!(Int8Type), out),
        DataType::Int16 => write_display(prim!(Int16Type), out),
        DataType::Int32 => write_display(prim!(Int32Type), out),
        DataType::Int64 => write_display(prim!(Int64Type), out),
        DataType::UInt8 => write_display(prim!(UInt8Type), out),
        DataType::UInt16 => write_display(prim!(UInt16Type), out),
        DataType::UInt32 => write_display(prim!(UInt32Type), out),
        DataType::UInt64 => write_display(prim!(UInt64Type), out),
        DataType::Float16 => write_f32(prim!(Float16Type).to_f32(), out)?,
        DataType::Float32 => write_f32(prim!(Float32Type), out)?,
        DataType::Float64 => write_f64(prim!(Float64Type), out)?,
        DataType::Decimal128(..) => {
            // A JSON string: exact digits and scale (a JSON number would pass through f64).
            let a = array.as_primitive_opt::<Decimal128Type>().ok_or_else(unsupported)?;
            write_str(&a.value_as_string(i), out);
        }
        DataType::Decimal256(..) => {
            let a = array.as_primitive_opt::<Decimal256Type>().ok_or_else(unsupported)?;
            write_str(&a.value_as_string(i), out);
        }
        DataType::Utf8 => write_str(array.as_string_opt::<i32>().map(|a| a.value(i)).ok_or_else(unsupported)?, out),
        DataType::LargeUtf8 => {
            write_str(array.as_string_opt::<i64>().map(|a| a.value(i)).ok_or_else(unsupported)?, out)
        }
        DataType::Utf8View => write_str(array.as_string_view_opt().map(|a| a.value(i)).ok_or_else(unsupported)?, out),
        DataType::Binary => {
            write_bytes(array.as_binary_opt::<i32>().map(|a| a.value(i)).ok_or_else(unsupported)?, out)?
        }
        DataType::LargeBinary => {
            write_bytes(array.as_binary_opt::<i64>().map(|a| a.value(i)).ok_or_else(unsupported)?, out)?
        }
        DataType::BinaryView => {
            write_bytes(array.as_binary_view_opt().map(|a| a.value(i)).ok_or_else(unsupported)?, out)?
        }
        DataType::FixedSizeBinary(_) => {
            write_bytes(array.as_fixed_size_binary_opt().map(|a| a.value(i)).ok_or_else(unsupported)?, out)?
        }
        DataType::Date32 => {
            let d = array.as_primitive_opt::<Date32Type>().and_then(|a| a.value_as_date(i));
            write_str(&d.ok_or_else(unsupported)?.to_string(), out);
        }
        DataType::Date64 => {
            let d = array.as_primitive_opt::<Date64Type>().and_then(|a| a.value_as_date(i));
            write_str(&d.ok_or_else(unsupported)?.to_string(), out);
        }
        DataType::Timestamp(unit, tz) => {
            let t = match unit {
                TimeUnit::Second => {
                    array.as_primitive_opt::<TimestampSecondType>().and_then(|a| a.value_as_datetime(i))
                }
                TimeUnit::Millisecond => {
                    array.as_primitive_opt::<TimestampMillisecondType>().and_then(|a| a.value_as_datetime(i))
                }
                TimeUnit::Microsecond => {
                    array.as_primitive_opt::<TimestampMicrosecondType>().and_then(|a| a.value_as_datetime(i))
                }
                TimeUnit::Nanosecond => {
                    array.as_primitive_opt::<TimestampNanosecondType>().and_then(|a| a.value_as_datetime(i))
                }
            };
            let t = t.ok_or_else(|| Unconvertible::new("timestamp out of range".into()))?;
            // With a time zone the stored instant is UTC; without one it is wall-clock time.
            let zone = if tz.is_some() { "Z" } else { "" };
            write_str(&format!("{}{zone}", t.format("%Y-%m-%dT%H:%M:%S%.f")), out);
        }
        DataType::List(_) => {
            let list = array.as_list_opt::<i32>().ok_or_else(unsupported)?;
            write_list(list.value(i), out)?;
        }
        DataType::LargeList(_) => {
            let list = array.as_list_opt::<i64>().ok_or_else(unsupported)?;
            write_list(list.value(i), out)?;
        }
        DataType::FixedSizeList(..) => {
            let list = array.as_fixed_size_list_opt().ok_or_else(unsupported)?;
            write_list(list.value(i), out)?;
        }
        DataType::Struct(fields) => {
            let s = array.as_struct_opt().ok_or_else(unsupported)?;
            out.push(b'{');
            let mut first = true;
            for (field, column) in fields.iter().zip(s.columns()) {
                if !first {
                    out.push(b',');
                }
                first = false;
                write_str(field.name(), out);
                out.push(b':');
                write_value(column.as_ref(), i, out).map_err(|e| e.at(format!(".{}", field.name())))?;
            }
            out.push(b'}');
        }
        DataType::Map(..) => {
            let map = array.as_map_opt().ok_or_else(unsupported)?;
            let entries = map.value(i);
            let (keys, values) = (entries.column(0), entries.column(1));
            out.push(b'{');
            let mut key = Vec::new();
            for j in 0..entries.len() {
                if j > 0 {
                    out.push(b',');
                }
                key.clear();
                write_value(keys.as_ref(), j, &mut key).map_err(|e| e.at(format!("[{j}]")))?;
                if key.first() == Some(&b'"') {
                    out.extend_from_slice(&key);
                } else {
                    // A non-string key becomes the string of its JSON text.
                    write_str(&String::from_utf8_lossy(&key), out);
                }
                out.push(b':');
                write_value(values.as_ref(), j, out).map_err(|e| e.at(format!("[{j}]")))?;
            }
            out.push(b'}');
        }
        DataType::Dictionary(..) => {
            let dict = array.as_any_dictionary_opt().ok_or_else(unsupported)?;
            let key = dictionary_key(dict.keys(), i).ok_or_else(unsupported)?;
            let values = dict.values();
            if key >= values.len() {
                return Err(Unconvertible::new(format!("dictionary key {key} out of range")));
            }
            write_value(values.as_ref(), key, out)?;
        }
        _ => return Err(unsupported()),
    }
    Ok(())
}

/// A list's elements as a JSON array (nulls kept: positions matter).
fn write_list(items: ArrayRef, out: &mut Vec<u8>) -> Written {
    out.push(b'[');
    for j in 0..items.len() {
        if j > 0 {
            out.push(b',');
        }
        write_value(items.as_ref(), j, out).map_err(|e| e.at(format!("[{j}]")))?;
    }
    out.push(b']');
    Ok(())
}

/// Bytes as a JSON string when they are UTF-8 (JSON has no bytes).
fn write_bytes(bytes: &[u8], out: &mut Vec<u8>) -> Written {
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            write_str(s, out);
            Ok(())
        }
        Err(e) => {
            Err(Unconvertible::new(format!("binary value is not UTF-8 (bad byte at offset {})", e.valid_up_to())))
        }
    }
}

/// Key `i` of a dictionary's integer key array.
fn dictionary_key(keys: &dyn Array, i: usize) -> Option<usize> {
    let k: i128 = match keys.data_type() {
        DataType::Int8 => keys.as_primitive_opt::<Int8Type>()?.value(i).into(),
        DataType::Int16 => keys.as_primitive_opt::<Int16Type>()?.value(i).into(),
        DataType::Int32 => keys.as_primitive_opt::<Int32Type>()?.value(i).into(),
        DataType::Int64 => keys.as_primitive_opt::<Int64Type>()?.value(i).into(),
        DataType::UInt8 => keys.as_primitive_opt::<UInt8Type>()?.value(i).into(),
        DataType::UInt16 => keys.as_primitive_opt::<UInt16Type>()?.value(i).into(),
        DataType::UInt32 => keys.as_primitive_opt::<UInt32Type>()?.value(i).into(),
        DataType::UInt64 => keys.as_primitive_opt::<UInt64Type>()?.value(i).into(),
        _ => return None,
    };
    usize::try_from(k).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rejection::Reason;

    #[test]
    fn rows_are_detected_as_json_lines() {
        assert_eq!(rows_name("train-00000-of-00002.parquet"), "train-00000-of-00002.jsonl");
        assert!(is_parquet("x.bin", b"PAR1\x15\x04"));
        assert!(is_parquet("x.parquet", b"garbage"));
        assert!(!is_parquet("x.jsonl", b"{\"a\":1}"));
    }

    #[test]
    fn a_problem_names_the_path_of_the_value() {
        let p = Unconvertible::new("type X is not supported".into()).at("[2]".into()).at(".messages".into()).problem();
        assert_eq!(p.json_path, "$.messages[2]");
        assert_eq!(p.reason, Reason::SchemaViolation);
    }
}
