//! What a database holds: its tables (columns, key, the ordered query that streams them),
//! its other schema objects, and normalized DDL.

use std::collections::BTreeSet;
use std::path::Path;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use super::error::StateError;

/// How the rows of a table are ordered (and keyed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowOrder {
    /// By the declared primary key (rowid tables with a key, and WITHOUT ROWID tables).
    PrimaryKey,
    /// By rowid: rowid tables without a declared key; the rowid is the first column.
    Rowid,
}

/// A table as captured: the columns read (ignored ones dropped) and how rows are keyed.
#[derive(Debug, Clone, PartialEq)]
pub struct TableInfo {
    pub name: String,
    /// Normalized CREATE statement.
    pub ddl: String,
    /// Captured columns in declared order; for `RowOrder::Rowid` the rowid alias comes first.
    pub columns: Vec<String>,
    /// Key column names, in key order.
    pub key: Vec<String>,
    pub order: RowOrder,
    pub without_rowid: bool,
    /// Declared columns left out by `--ignore table.column`.
    pub ignored_columns: Vec<String>,
    /// The query that streams the captured columns in key order.
    pub select: String,
}

impl TableInfo {
    /// Positions of the key columns in `columns`.
    pub fn key_positions(&self) -> Vec<usize> {
        key_positions(&self.columns, &self.key)
    }
}

/// Positions of `key` names in `columns` (names that are missing are skipped).
pub fn key_positions(columns: &[String], key: &[String]) -> Vec<usize> {
    key.iter().filter_map(|k| columns.iter().position(|c| c == k)).collect()
}

/// An index, trigger, view or virtual table: recorded by its normalized SQL, no rows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SchemaObject {
    pub name: String,
    pub sql: String,
    pub table: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// Volatile tables and columns (`--ignore table` / `--ignore table.column`). Names match
/// ASCII case-insensitively, as SQLite identifiers do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoreSpec {
    specs: BTreeSet<String>,
}

impl IgnoreSpec {
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(specs: I) -> IgnoreSpec {
        IgnoreSpec { specs: specs.into_iter().map(Into::into).collect() }
    }

    /// The specs as given, sorted (recorded in every snapshot).
    pub fn specs(&self) -> Vec<String> {
        self.specs.iter().cloned().collect()
    }

    /// True when the whole table is ignored (a spec naming it exactly).
    pub fn ignores_table(&self, table: &str) -> bool {
        self.specs.iter().any(|s| s.eq_ignore_ascii_case(table))
    }

    /// True when `table.column` is ignored (split at the first dot of the spec).
    pub fn ignores_column(&self, table: &str, column: &str) -> bool {
        self.specs.iter().any(|s| match s.split_once('.') {
            Some((t, c)) => t.eq_ignore_ascii_case(table) && c.eq_ignore_ascii_case(column),
            None => false,
        })
    }
}

/// Quotes an SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Tables, other schema objects, and the tables left out by `--ignore`.
pub type DbSchema = (Vec<TableInfo>, Vec<SchemaObject>, Vec<String>);

/// Internal tables that are not application state: ANALYZE statistics.
fn is_statistics(name: &str) -> bool {
    name.to_ascii_lowercase().starts_with("sqlite_stat")
}

/// Tables (sorted by name) and other schema objects of the `main` database. Virtual
/// tables are schema objects: their rows live in their shadow tables, which are tables.
pub fn read_schema(conn: &Connection, path: &Path, ignore: &IgnoreSpec) -> Result<DbSchema, StateError> {
    let err = || StateError::sqlite(path);
    let mut objects = Vec::new();
    let mut tables = Vec::new();
    let mut ignored_tables = Vec::new();
    let mut stmt =
        conn.prepare("SELECT type, name, tbl_name, sql FROM main.sqlite_master WHERE sql IS NOT NULL").map_err(err())?;
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
        })
        .map_err(err())?;
    let mut entries = Vec::new();
    for row in rows {
        entries.push(row.map_err(err())?);
    }
    entries.sort_by(|a, b| a.1.as_bytes().cmp(b.1.as_bytes()));
    for (kind, name, table, sql) in entries {
        let ddl = normalize_ddl(&sql);
        let is_virtual = kind == "table" && ddl.to_ascii_uppercase().starts_with("CREATE VIRTUAL TABLE");
        if kind != "table" || is_virtual {
            let kind = if is_virtual { "virtual table".to_string() } else { kind };
            objects.push(SchemaObject { name, sql: ddl, table, kind });
        } else if is_statistics(&name) {
            continue;
        } else if ignore.ignores_table(&name) {
            ignored_tables.push(name);
        } else {
            tables.push(table_info(conn, path, &name, ddl, ignore)?);
        }
    }
    ignored_tables.sort();
    Ok((tables, objects, ignored_tables))
}

/// One declared column: name, position in the primary key (0 = not in it), hidden flag.
struct Column {
    name: String,
    pk: i64,
    hidden: i64,
}

fn table_columns(conn: &Connection, path: &Path, table: &str) -> Result<Vec<Column>, StateError> {
    let err = || StateError::sqlite(path);
    let mut stmt = conn.prepare("SELECT name, pk, hidden FROM pragma_table_xinfo(?1, 'main')").map_err(err())?;
    let rows =
        stmt.query_map([table], |r| Ok(Column { name: r.get(0)?, pk: r.get(1)?, hidden: r.get(2)? })).map_err(err())?;
    let mut cols = Vec::new();
    for c in rows {
        let c = c.map_err(err())?;
        // hidden = 1: a virtual table's hidden column; generated columns (2, 3) are read.
        if c.hidden != 1 {
            cols.push(c);
        }
    }
    Ok(cols)
}

/// The key columns of the primary-key index with their collation, or `None` when the
/// table has no such index (no declared key, or an INTEGER PRIMARY KEY rowid alias).
fn pk_index(conn: &Connection, path: &Path, table: &str) -> Result<Option<Vec<(String, String)>>, StateError> {
    let err = || StateError::sqlite(path);
    let index: Option<String> = conn
        .query_row("SELECT name FROM pragma_index_list(?1, 'main') WHERE origin = 'pk'", [table], |r| r.get(0))
        .map(Some)
        .or_else(|e| if matches!(e, rusqlite::Error::QueryReturnedNoRows) { Ok(None) } else { Err(e) })
        .map_err(err())?;
    let Some(index) = index else { return Ok(None) };
    let mut stmt = conn
        .prepare("SELECT name, coll FROM pragma_index_xinfo(?1, 'main') WHERE key = 1 AND cid >= 0 ORDER BY seqno")
        .map_err(err())?;
    let rows = stmt.query_map([&index], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).map_err(err())?;
    let mut cols = Vec::new();
    for c in rows {
        cols.push(c.map_err(err())?);
    }
    Ok(Some(cols))
}

fn is_without_rowid(conn: &Connection, path: &Path, table: &str) -> Result<bool, StateError> {
    conn.query_row("SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1", [table], |r| {
        r.get::<_, i64>(0)
    })
    .map(|wr| wr != 0)
    .map_err(StateError::sqlite(path))
}

/// Columns, key and ordered query of one table.
fn table_info(
    conn: &Connection,
    path: &Path,
    name: &str,
    ddl: String,
    ignore: &IgnoreSpec,
) -> Result<TableInfo, StateError> {
    let cols = table_columns(conn, path, name)?;
    let without_rowid = is_without_rowid(conn, path, name)?;
    let mut pk: Vec<&Column> = cols.iter().filter(|c| c.pk > 0).collect();
    pk.sort_by_key(|c| c.pk);
    let (captured, ignored_columns): (Vec<&Column>, Vec<&Column>) =
        cols.iter().partition(|c| !ignore.ignores_column(name, &c.name));
    if let Some(k) = pk.iter().find(|k| ignored_columns.iter().any(|c| c.name == k.name)) {
        return Err(StateError::Unsupported {
            path: path.to_path_buf(),
            message: format!("--ignore {name}.{}: a primary key column cannot be ignored", k.name),
        });
    }
    let mut columns: Vec<String> = captured.iter().map(|c| c.name.clone()).collect();
    let ignored_columns = ignored_columns.iter().map(|c| c.name.clone()).collect();
    let rowid = rowid_alias(&cols);
    let (order, key, order_by) = if pk.is_empty() {
        let Some(alias) = rowid else {
            return Err(StateError::Unsupported {
                path: path.to_path_buf(),
                message: format!("table {name} has no primary key and columns shadow rowid, _rowid_ and oid"),
            });
        };
        columns.insert(0, alias.to_string());
        (RowOrder::Rowid, vec![alias.to_string()], quote_ident(alias))
    } else {
        let key: Vec<String> = pk.iter().map(|c| c.name.clone()).collect();
        let order_by = match pk_index(conn, path, name)? {
            Some(index_cols) => primary_key_order(&index_cols, if without_rowid { None } else { rowid }),
            // A rowid alias (INTEGER PRIMARY KEY): the table's own b-tree order.
            None => quote_ident(&key[0]),
        };
        (RowOrder::PrimaryKey, key, order_by)
    };
    let select = format!(
        "SELECT {} FROM main.{} ORDER BY {}",
        columns.iter().map(|c| quote_ident(c)).collect::<Vec<_>>().join(", "),
        quote_ident(name),
        order_by
    );
    Ok(TableInfo { name: name.to_string(), ddl, columns, key, order, without_rowid, ignored_columns, select })
}

/// ORDER BY for a primary-key index: each key column in BINARY order (a declared NOCASE or
/// RTRIM collation would disagree with the byte order the diff merges in), then the rowid
/// to order equal keys (NULLs: SQLite allows them in rowid tables' keys).
fn primary_key_order(index_cols: &[(String, String)], rowid: Option<&str>) -> String {
    let mut parts: Vec<String> = index_cols
        .iter()
        .map(|(c, coll)| {
            if coll.eq_ignore_ascii_case("BINARY") {
                quote_ident(c)
            } else {
                format!("{} COLLATE BINARY", quote_ident(c))
            }
        })
        .collect();
    if let Some(r) = rowid {
        parts.push(quote_ident(r));
    }
    parts.join(", ")
}

/// The first of SQLite's rowid names that no declared column shadows.
fn rowid_alias(cols: &[Column]) -> Option<&'static str> {
    ["rowid", "_rowid_", "oid"].into_iter().find(|a| !cols.iter().any(|c| c.name.eq_ignore_ascii_case(a)))
}

/// Normalized DDL: comments removed, whitespace runs collapsed to one space outside quotes,
/// no space next to `(`, `)` and `,`, no trailing `;`. Case and quoting are kept.
pub fn normalize_ddl(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut pending_space = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' | '`' | '[' => {
                flush_space(&mut out, &mut pending_space, c);
                let close = if c == '[' { ']' } else { c };
                out.push(c);
                for d in chars.by_ref() {
                    out.push(d);
                    if d == close {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
                pending_space = true;
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for d in chars.by_ref() {
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
                pending_space = true;
            }
            c if c.is_whitespace() => pending_space = true,
            c => {
                flush_space(&mut out, &mut pending_space, c);
                out.push(c);
            }
        }
    }
    out.trim_end_matches([';', ' ']).to_string()
}

/// Writes a pending single space unless it would touch punctuation.
fn flush_space(out: &mut String, pending: &mut bool, next: char) {
    if *pending && !out.is_empty() && !matches!(next, '(' | ')' | ',') && !out.ends_with(['(', ',']) {
        out.push(' ');
    }
    *pending = false;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_normalization_removes_layout_only() {
        let sql = "CREATE TABLE  contacts (\n  id INTEGER PRIMARY KEY, -- the key\n  name TEXT /* shown */ NOT NULL ,\n  note TEXT DEFAULT 'a  b'\n);";
        assert_eq!(
            normalize_ddl(sql),
            "CREATE TABLE contacts(id INTEGER PRIMARY KEY,name TEXT NOT NULL,note TEXT DEFAULT 'a  b')"
        );
        assert_eq!(normalize_ddl("CREATE TABLE \"a  b\" ( x )"), "CREATE TABLE \"a  b\"(x)");
    }

    #[test]
    fn ignore_specs_match_tables_and_columns() {
        let ig = IgnoreSpec::new(["audit_log", "sessions.Last_Seen"]);
        assert!(ig.ignores_table("AUDIT_LOG"));
        assert!(!ig.ignores_table("sessions"));
        assert!(ig.ignores_column("sessions", "last_seen"));
        assert!(!ig.ignores_column("sessions", "id"));
    }
}
