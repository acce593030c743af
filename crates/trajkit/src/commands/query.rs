//! `trajkit query`: SQL on a library's index, opened read-only.

use crate::pipe::{out, Lines};
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::types::ValueRef;
use trajkit_library::Library;

/// A cell as JSON.
fn to_json(v: ValueRef<'_>) -> serde_json::Value {
    match v {
        ValueRef::Null => serde_json::Value::Null,
        ValueRef::Integer(i) => i.into(),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map(Into::into).unwrap_or(serde_json::Value::Null),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
        ValueRef::Blob(b) => format!("<{} bytes>", b.len()).into(),
    }
}

/// A cell as table text (NULL shown as `NULL`, long text cut at 80 characters).
fn to_text(v: ValueRef<'_>) -> String {
    let s = match v {
        ValueRef::Null => "NULL".to_string(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Text(t) => String::from_utf8_lossy(t).replace(['\n', '\t'], " "),
        ValueRef::Blob(b) => format!("<{} bytes>", b.len()),
    };
    if s.chars().count() > 80 {
        s.chars().take(79).chain(['…']).collect()
    } else {
        s
    }
}

pub fn run(library: &Path, sql: &str, json: bool) -> Result<u8> {
    let lib = Library::open(library)?;
    let conn = trajkit_library::index::open_read_only(&lib.root().join("index.sqlite"))?;
    let mut st = conn.prepare(sql).with_context(|| format!("preparing {sql:?}"))?;
    let names: Vec<String> = st.column_names().iter().map(|s| s.to_string()).collect();
    let mut rows = st.query([])?;
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut lines = Lines::stdout();
    while let Some(r) = rows.next()? {
        if json {
            let mut obj = serde_json::Map::new();
            for (i, n) in names.iter().enumerate() {
                obj.insert(n.clone(), to_json(r.get_ref(i)?));
            }
            lines.line(format_args!("{}", serde_json::Value::Object(obj)));
        } else {
            table.push((0..names.len()).map(|i| r.get_ref(i).map(to_text)).collect::<Result<_, _>>()?);
        }
    }
    lines.finish();
    if !json {
        out!("{}", crate::table::render(&names, &table));
    }
    Ok(0)
}
