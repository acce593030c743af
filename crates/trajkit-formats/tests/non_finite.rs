//! Non-finite numbers on the way in (docs/numbers.md): a record holding NaN or ±Infinity is
//! rejected, naming where, never read with a `null` in its place. Synthetic by nature: the
//! real fixtures hold no non-finite number; the Parquet file is written here with arrow, the
//! JSON line as Python's `json.dumps` writes a NaN reward.

mod common;

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, ListArray, RecordBatch, StringArray, StructArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields};
use parquet::arrow::ArrowWriter;

/// Two chat rows (`messages` + a `score` column); the second row's score is NaN.
fn chat_parquet(path: &std::path::Path) {
    let fields =
        Fields::from(vec![Field::new("role", DataType::Utf8, false), Field::new("content", DataType::Utf8, false)]);
    let roles: ArrayRef = Arc::new(StringArray::from(vec!["user", "assistant", "user", "assistant"]));
    let contents: ArrayRef = Arc::new(StringArray::from(vec!["hi", "hello", "hi again", "hello again"]));
    let messages = StructArray::new(fields.clone(), vec![roles, contents], None);
    let item = Arc::new(Field::new("item", DataType::Struct(fields), false));
    let lists = ListArray::new(item, OffsetBuffer::from_lengths([2, 2]), Arc::new(messages), None);
    let scores = Float64Array::from(vec![0.5, f64::NAN]);
    let batch = RecordBatch::try_from_iter([
        ("messages", Arc::new(lists) as ArrayRef),
        ("score", Arc::new(scores) as ArrayRef),
    ])
    .expect("batch");
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(path).expect("create"), batch.schema(), None).expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
}

#[test]
fn a_nan_in_parquet_rejects_its_row_with_the_column_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.parquet");
    chat_parquet(&path);
    let c = common::read(&[path]);
    let r = &c.reports[0];
    assert_eq!((r.format.as_deref(), r.trajectories, r.rejected), (Some("openai-messages"), 1, 1));
    let p = &c.rejections[0].problems[0];
    assert_eq!((p.reason.as_str(), p.json_path.as_str()), ("schema_violation", "$.score"));
    assert_eq!(
        p.message,
        "Parquet value not representable as JSON: non-finite float NaN (NaN and Infinity have no JSON form)"
    );
    // The accepted row kept its finite score; nothing became null.
    assert_eq!(c.trajectories[0].extra.get("score"), Some(&serde_json::json!(0.5)));
}

#[test]
fn python_nan_and_overflowing_numbers_in_json_are_rejected_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x__rollouts.jsonl");
    let row = |reward: &str| {
        format!(
            r#"{{"responses_create_params":{{"input":"hi"}},"response":{{"output":[{{"type":"message","role":"assistant","content":"hello"}}]}},"reward":{reward}}}"#
        )
    };
    std::fs::write(&path, format!("{}\n{}\n{}\n", row("1.0"), row("NaN"), row("1e400"))).unwrap();
    let c = common::read(&[path]);
    assert_eq!((c.reports[0].trajectories, c.reports[0].rejected), (1, 2));
    let lines: Vec<(Option<u64>, &str)> =
        c.rejections.iter().map(|r| (r.line, r.problems[0].reason.as_str())).collect();
    assert_eq!(lines, [(Some(2), "invalid_json"), (Some(3), "invalid_json")]);
    assert!(c.rejections[1].problems[0].message.contains("number out of range"), "{:?}", c.rejections[1].problems[0]);
    assert_eq!(c.trajectories[0].outcome.reward, Some(1.0));
}
