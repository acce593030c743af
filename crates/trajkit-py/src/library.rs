//! A built library from Python: SQL on its index as Arrow tables, and its records.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use rusqlite::types::Value;
use trajkit_library::{Library, LibraryError};

/// Failures of a library call, as text for the Python exception.
pub type Failure = String;

/// Runs read-only `sql` on the library's index (as `trajkit query` does) and returns its
/// result as one Arrow batch; a column is Int64, Float64 or Utf8 by the values it holds.
pub fn query(root: PathBuf, sql: String) -> Result<RecordBatch, Failure> {
    let lib = Library::open(&root).map_err(|e| e.to_string())?;
    let conn = trajkit_library::index::open_read_only(&lib.root().join("index.sqlite")).map_err(|e| e.to_string())?;
    let mut st = conn.prepare(&sql).map_err(|e| format!("preparing {sql:?}: {e}"))?;
    let names: Vec<String> = st.column_names().iter().map(|s| s.to_string()).collect();
    let mut columns: Vec<Vec<Value>> = vec![Vec::new(); names.len()];
    let mut rows = st.query([]).map_err(|e| e.to_string())?;
    while let Some(r) = rows.next().map_err(|e| e.to_string())? {
        for (i, col) in columns.iter_mut().enumerate() {
            col.push(r.get::<_, Value>(i).map_err(|e| e.to_string())?);
        }
    }
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (name, values) in names.iter().zip(columns) {
        let (dtype, array) = column(values);
        fields.push(Field::new(name, dtype, true));
        arrays.push(array);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(|e| e.to_string())
}

/// `trajkit stats --json` of the library at `root` (the library's own function).
pub fn stats(root: PathBuf, dedup: trajkit_library::Dedup) -> Result<serde_json::Value, Failure> {
    let lib = Library::open(&root).map_err(|e| e.to_string())?;
    trajkit_library::stats::report(lib.root(), dedup).map_err(|e| e.to_string())
}

/// One SQLite result column as an Arrow array of the narrowest type that holds it.
fn column(values: Vec<Value>) -> (DataType, ArrayRef) {
    let all = |f: fn(&Value) -> bool| values.iter().all(|v| matches!(v, Value::Null) || f(v));
    if all(|v| matches!(v, Value::Integer(_))) && values.iter().any(|v| !matches!(v, Value::Null)) {
        let mut b = Int64Builder::new();
        for v in &values {
            b.append_option(if let Value::Integer(i) = v { Some(*i) } else { None });
        }
        return (DataType::Int64, Arc::new(b.finish()));
    }
    if all(|v| matches!(v, Value::Integer(_) | Value::Real(_))) && values.iter().any(|v| !matches!(v, Value::Null)) {
        let mut b = Float64Builder::new();
        for v in &values {
            b.append_option(match v {
                Value::Integer(i) => Some(*i as f64),
                Value::Real(f) => Some(*f),
                _ => None,
            });
        }
        return (DataType::Float64, Arc::new(b.finish()));
    }
    let mut b = StringBuilder::new();
    for v in &values {
        match v {
            Value::Null => b.append_null(),
            Value::Integer(i) => b.append_value(i.to_string()),
            Value::Real(f) => b.append_value(f.to_string()),
            Value::Text(t) => b.append_value(t),
            Value::Blob(x) => b.append_value(format!("<{} bytes>", x.len())),
        }
    }
    (DataType::Utf8, Arc::new(b.finish()))
}

/// Hands the library's canonical records (as JSON) whose index row matches the SQL
/// condition `filter` on the `trajectories` table (all records without one) to `emit`, in
/// library order, one at a time, until `emit` returns false (the consumer stopped).
pub fn each_trajectory(
    root: &Path,
    filter: Option<&str>,
    emit: &mut dyn FnMut(Result<String, Failure>) -> bool,
) -> Result<(), Failure> {
    let lib = Library::open(root).map_err(|e| e.to_string())?;
    let wanted: Option<HashSet<String>> = match filter {
        Some(cond) => {
            let conn =
                trajkit_library::index::open_read_only(&lib.root().join("index.sqlite")).map_err(|e| e.to_string())?;
            let sql = format!("SELECT id FROM trajectories WHERE {cond}");
            let mut st = conn.prepare(&sql).map_err(|e| format!("preparing {sql:?}: {e}"))?;
            let ids = st.query_map([], |r| r.get::<_, String>(0)).map_err(|e| e.to_string())?;
            Some(ids.collect::<Result<_, _>>().map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let records =
        lib.records_where(|row| wanted.as_ref().is_none_or(|w| w.contains(&row.id))).map_err(|e| e.to_string())?;
    for r in records {
        let json = r.and_then(|(_, t)| {
            serde_json::to_string(&t)
                .map_err(|e| LibraryError::Invalid { path: root.to_path_buf(), message: e.to_string() })
        });
        if !emit(json.map_err(|e| e.to_string())) {
            break;
        }
    }
    Ok(())
}
