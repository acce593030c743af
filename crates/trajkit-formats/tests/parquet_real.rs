//! Parquet input on Parquet files written here (arrow crate) from the real JSON fixtures:
//! the rows read from Parquet must give the figures of the same rows read from JSON.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, ListArray, RecordBatch, StringArray, StructArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, Schema};
use common::{read, real};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde_json::Value;
use trajkit_formats::FileReport;

// ---------------------------------------------------------------------------------------
// JSON rows to a Parquet table, the way `datasets` / pyarrow store them: objects become
// structs (the union of their keys, missing keys null), arrays lists, numbers int64 or
// float64; the columns named in `json_text` hold each value's JSON text instead.

/// The rows of a fixture: a JSON array, or JSON Lines.
fn json_rows(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("fixture");
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(rows)) => rows,
        _ => text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("line")).collect(),
    }
}

fn infer(v: &Value) -> DataType {
    match v {
        Value::Null => DataType::Null,
        Value::Bool(_) => DataType::Boolean,
        Value::Number(n) if n.is_i64() => DataType::Int64,
        Value::Number(_) => DataType::Float64,
        Value::String(_) => DataType::Utf8,
        Value::Array(items) => {
            let item = items.iter().map(infer).fold(DataType::Null, merge);
            DataType::List(Arc::new(Field::new("item", item, true)))
        }
        Value::Object(m) => {
            DataType::Struct(m.iter().map(|(k, v)| Field::new(k.as_str(), infer(v), true)).collect::<Fields>())
        }
    }
}

fn merge(a: DataType, b: DataType) -> DataType {
    use DataType::*;
    match (a, b) {
        (Null, x) | (x, Null) => x,
        (Int64, Float64) | (Float64, Int64) => Float64,
        (List(a), List(b)) => {
            List(Arc::new(Field::new("item", merge(a.data_type().clone(), b.data_type().clone()), true)))
        }
        (Struct(a), Struct(b)) => {
            let mut fields: Vec<Field> = a.iter().map(|f| f.as_ref().clone()).collect();
            for f in b.iter() {
                match fields.iter_mut().find(|g| g.name() == f.name()) {
                    Some(g) => *g = Field::new(f.name(), merge(g.data_type().clone(), f.data_type().clone()), true),
                    None => fields.push(f.as_ref().clone()),
                }
            }
            Struct(fields.into())
        }
        (a, b) if a == b => a,
        (a, b) => panic!("fixture mixes {a} and {b} in one column"),
    }
}

/// A column never seen with a value is stored as strings (all null).
fn settle(t: DataType) -> DataType {
    match t {
        DataType::Null => DataType::Utf8,
        DataType::List(f) => DataType::List(Arc::new(Field::new("item", settle(f.data_type().clone()), true))),
        DataType::Struct(fs) => DataType::Struct(
            fs.iter().map(|f| Field::new(f.name(), settle(f.data_type().clone()), true)).collect::<Fields>(),
        ),
        t => t,
    }
}

fn build(values: &[Option<&Value>], t: &DataType) -> ArrayRef {
    let values: Vec<Option<&Value>> = values.iter().map(|v| v.filter(|v| !v.is_null())).collect();
    match t {
        DataType::Utf8 => Arc::new(values.iter().map(|v| v.and_then(Value::as_str)).collect::<StringArray>()),
        DataType::Boolean => Arc::new(values.iter().map(|v| v.and_then(Value::as_bool)).collect::<BooleanArray>()),
        DataType::Int64 => Arc::new(values.iter().map(|v| v.and_then(Value::as_i64)).collect::<Int64Array>()),
        DataType::Float64 => Arc::new(values.iter().map(|v| v.and_then(Value::as_f64)).collect::<Float64Array>()),
        DataType::List(field) => {
            let lists: Vec<Option<&Vec<Value>>> = values.iter().map(|v| v.and_then(Value::as_array)).collect();
            let items: Vec<Option<&Value>> = lists.iter().flatten().flat_map(|l| l.iter().map(Some)).collect();
            let offsets = OffsetBuffer::from_lengths(lists.iter().map(|l| l.map_or(0, |l| l.len())));
            let nulls = NullBuffer::from(lists.iter().map(Option::is_some).collect::<Vec<bool>>());
            let child = build(&items, field.data_type());
            Arc::new(ListArray::try_new(field.clone(), offsets, child, Some(nulls)).expect("list"))
        }
        DataType::Struct(fields) => {
            let objects: Vec<Option<&serde_json::Map<String, Value>>> =
                values.iter().map(|v| v.and_then(Value::as_object)).collect();
            let children: Vec<ArrayRef> = fields
                .iter()
                .map(|f| {
                    let vals: Vec<Option<&Value>> = objects.iter().map(|o| o.and_then(|o| o.get(f.name()))).collect();
                    build(&vals, f.data_type())
                })
                .collect();
            let nulls = NullBuffer::from(objects.iter().map(Option::is_some).collect::<Vec<bool>>());
            Arc::new(StructArray::try_new(fields.clone(), children, Some(nulls)).expect("struct"))
        }
        t => panic!("no builder for {t}"),
    }
}

/// The rows as a record batch; the columns in `json_text` hold JSON text.
fn table(rows: &[Value], json_text: &[&str]) -> RecordBatch {
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            for c in json_text {
                if let Some(v) = r.get_mut(*c) {
                    *v = Value::String(serde_json::to_string(v).expect("json"));
                }
            }
            r
        })
        .collect();
    let DataType::Struct(fields) = settle(rows.iter().map(infer).fold(DataType::Null, merge)) else {
        panic!("rows are objects")
    };
    let values: Vec<Option<&Value>> = rows.iter().map(Some).collect();
    let columns = fields.iter().map(|f| {
        let vals: Vec<Option<&Value>> = values.iter().map(|o| o.and_then(|o| o.get(f.name()))).collect();
        build(&vals, f.data_type())
    });
    RecordBatch::try_new(Arc::new(Schema::new(fields.clone())), columns.collect()).expect("batch")
}

/// Writes `batch` as a Parquet file of row groups of at most `group_rows` rows.
fn write_parquet(path: &Path, batch: &RecordBatch, group_rows: usize, compression: Compression) {
    let props =
        WriterProperties::builder().set_max_row_group_row_count(Some(group_rows)).set_compression(compression).build();
    let file = std::fs::File::create(path).expect("create");
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("writer");
    w.write(batch).expect("write");
    w.close().expect("close");
}

fn row_groups(path: &Path) -> usize {
    let file = std::fs::File::open(path).expect("open");
    let reader = parquet::file::reader::SerializedFileReader::new(file).expect("parquet");
    parquet::file::reader::FileReader::metadata(&reader).num_row_groups()
}

/// What must be equal between a JSON read and a Parquet read of the same rows.
fn figures(r: &FileReport) -> impl PartialEq + std::fmt::Debug {
    (
        r.format.clone(),
        (r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.duplicate_records, r.rejected),
        r.reasons.clone(),
        r.gaps.clone(),
        r.error.clone(),
    )
}

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        Case { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// Reads `fixture` as JSON and as a Parquet file of its rows; asserts equal figures and
/// steps, and returns the Parquet report.
fn same_as_json(fixture: &str, json_text: &[&str], group_rows: usize, family: &str) -> FileReport {
    let source = real(fixture);
    let json = read(std::slice::from_ref(&source));
    let case = Case::new();
    let path = case.path("train-00000-of-00001.parquet");
    write_parquet(&path, &table(&json_rows(&source), json_text), group_rows, Compression::SNAPPY);
    let pq = read(&[case.dir.path().to_path_buf()]);
    assert_eq!(pq.reports.len(), 1, "the directory's .parquet file is found");
    let (j, p) = (&json.reports[0], &pq.reports[0]);
    assert_eq!(p.format.as_deref(), Some(family), "{fixture}: {p:?}");
    assert_eq!(figures(p), figures(j), "{fixture}");
    assert!(p.records > 0);
    // Same steps, in the same order, record by record.
    assert_eq!(pq.trajectories.len(), json.trajectories.len());
    for (a, b) in pq.trajectories.iter().zip(&json.trajectories) {
        let differ = a.steps.iter().zip(&b.steps).position(|(x, y)| x != y);
        assert_eq!(
            differ,
            None,
            "{fixture}: steps of {} differ: {:?}",
            b.id,
            differ.map(|i| (&a.steps[i], &b.steps[i]))
        );
        assert_eq!(a.steps.len(), b.steps.len());
        assert_eq!(a.outcome, b.outcome, "{fixture}: outcome of {}", b.id);
        assert_eq!(
            a.provenance.document_index.map(|i| i + 1),
            b.provenance.line.or(b.provenance.document_index.map(|i| i + 1))
        );
    }
    p.clone()
}

#[test]
fn swe_gym_rows_with_nested_messages_read_as_from_json() {
    let r = same_as_json("swe_gym_openhands/adp_swe-gym_sample_raw.json", &[], 1000, "swe-gym");
    assert_eq!(r.records, 5);
}

/// Parquet hands rows over as they are: a JSON-text column stays a string. The SWE-Gym
/// reader wants `messages` as a list (the published dataset stores it nested), so rows
/// with `messages` as JSON text are rejected, each naming the field, never lost.
#[test]
fn swe_gym_rows_with_messages_as_json_text_are_rejected_naming_the_field() {
    let case = Case::new();
    let path = case.path("x.parquet");
    let rows = json_rows(&real("swe_gym_openhands/adp_swe-gym_sample_raw.json"));
    write_parquet(&path, &table(&rows, &["messages", "tools"]), 1000, Compression::SNAPPY);
    let c = read(&[path]);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("swe-gym"));
    assert_eq!((r.records, r.trajectories, r.rejected), (5, 0, 5));
    assert!(c.rejections.iter().all(|x| x.problems[0].json_path == "$.messages"));
    let indices: Vec<Option<u64>> = c.rejections.iter().map(|x| x.document_index).collect();
    assert_eq!(indices, [Some(0), Some(1), Some(2), Some(3), Some(4)]);
}

#[test]
fn swe_smith_rows_with_messages_as_json_text_read_as_from_json() {
    let r = same_as_json("swe_smith/ft_xml_example.jsonl", &["messages"], 1000, "swe-smith");
    assert_eq!(r.records, 3);
}

#[test]
fn sharegpt_rows_read_as_from_json() {
    let r = same_as_json("chat/llamafactory_glaive_toolcall_en_demo.json", &[], 1000, "sharegpt");
    assert_eq!(r.records, 300);
}

#[test]
fn many_row_groups_read_every_row_in_order() {
    let r = same_as_json("chat/llamafactory_glaive_toolcall_en_demo.json", &[], 7, "sharegpt");
    assert_eq!(r.records, 300);
    let r = same_as_json("swe_gym_openhands/adp_swe-gym_sample_raw.json", &[], 2, "swe-gym");
    assert_eq!(r.records, 5);
    // And the files really have that many row groups.
    let case = Case::new();
    let path = case.path("x.parquet");
    let rows = json_rows(&real("chat/llamafactory_glaive_toolcall_en_demo.json"));
    write_parquet(&path, &table(&rows, &[]), 7, Compression::ZSTD(ZstdLevel::default()));
    assert_eq!(row_groups(&path), 43);
    let json = read(&[real("chat/llamafactory_glaive_toolcall_en_demo.json")]);
    let c = read(&[path]);
    assert_eq!(figures(&c.reports[0]), figures(&json.reports[0]));
}

#[test]
fn a_file_that_is_not_parquet_is_a_file_error() {
    let case = Case::new();
    let garbage = case.path("bad.parquet");
    std::fs::write(&garbage, b"PAR1 this is not a parquet file at all").expect("write");
    // A real file with its footer cut off.
    let truncated = case.path("truncated.parquet");
    let rows = json_rows(&real("swe_smith/ft_xml_example.jsonl"));
    write_parquet(&truncated, &table(&rows, &["messages"]), 1000, Compression::SNAPPY);
    let bytes = std::fs::read(&truncated).expect("read");
    std::fs::write(&truncated, &bytes[..bytes.len() - 20]).expect("write");
    let c = read(&[case.dir.path().to_path_buf()]);
    assert_eq!(c.reports.len(), 2);
    for r in &c.reports {
        let e = r.error.as_deref().unwrap_or_else(|| panic!("an error: {r:?}"));
        assert!(e.starts_with(&r.path), "the error names the file: {e}");
        assert!(e.contains("Parquet"), "{e}");
        assert_eq!((r.records, r.trajectories), (0, 0));
    }
}

#[test]
fn a_row_json_cannot_hold_is_a_rejection_naming_the_row() {
    let rows: Vec<Value> =
        json_rows(&real("chat/llamafactory_glaive_toolcall_en_demo.json")).into_iter().take(4).collect();
    let batch = table(&rows, &[]);
    // An extra binary column: UTF-8 bytes are text, other bytes have no JSON form.
    let blob: ArrayRef =
        Arc::new(BinaryArray::from(vec![Some(&b"ok"[..]), Some(&b"\xff\xfe"[..]), None, Some(&b"fine"[..])]));
    let mut fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("blob", DataType::Binary, true));
    let mut columns = batch.columns().to_vec();
    columns.push(blob);
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("batch");
    let case = Case::new();
    let path = case.path("x.parquet");
    write_parquet(&path, &batch, 1000, Compression::SNAPPY);
    let c = read(&[path]);
    let r = &c.reports[0];
    assert_eq!(r.format.as_deref(), Some("sharegpt"));
    assert_eq!((r.records, r.trajectories, r.rejected), (4, 3, 1), "{r:?}");
    let rej = &c.rejections[0];
    assert_eq!((rej.line, rej.document_index), (None, Some(1)));
    assert_eq!(rej.reason.as_str(), "schema_violation");
    assert_eq!(rej.problems[0].json_path, "$.blob");
    assert!(rej.problems[0].message.contains("not UTF-8"), "{}", rej.problems[0].message);
    let indices: Vec<Option<u64>> = c.trajectories.iter().map(|t| t.provenance.document_index).collect();
    assert_eq!(indices, [Some(0), Some(2), Some(3)]);
}

#[test]
fn nebius_rows_with_nested_trajectories_read_as_from_json() {
    let r = same_as_json("nebius_swe_agent/adp_nebius_sample_raw.json", &[], 1000, "nebius");
    assert!(r.trajectories > 0);
}

#[test]
fn swe_smith_rows_with_nested_messages_read_as_from_json() {
    let r = same_as_json("swe_smith/adp_swe-smith_sample_raw.json", &[], 2, "swe-smith");
    assert!(r.trajectories > 0);
}

/// Writes a large Parquet file of SWE-Gym rows for a peak-memory check by hand:
/// `TRAJKIT_PARQUET_BIG=/tmp/big.parquet cargo test --test parquet_real -- --ignored`, then
/// `/usr/bin/time -v trajkit inspect /tmp/big.parquet`.
#[test]
#[ignore]
fn write_a_large_file_for_a_memory_check() {
    let Some(path) = std::env::var_os("TRAJKIT_PARQUET_BIG") else { return };
    let rows = json_rows(&real("swe_gym_openhands/adp_swe-gym_sample_raw.json"));
    let batch = table(&rows, &[]);
    let props = WriterProperties::builder().set_max_row_group_row_count(Some(100)).build();
    let file = std::fs::File::create(path).expect("create");
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("writer");
    for _ in 0..400 {
        w.write(&batch).expect("write");
    }
    w.close().expect("close");
}
