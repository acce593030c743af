//! Diffing two states (live databases or stored snapshots) by merging key-ordered row
//! streams: memory does not depend on table size.

use std::cmp::Ordering;
use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::{json, Map, Value};

use super::capture::{database_names, open_read_only};
use super::error::StateError;
use super::schema::{key_positions, read_schema, IgnoreSpec, SchemaObject, TableInfo};
use super::store::{Prefetched, Snapshot, Store};
use super::value::{key_cmp, Val};

/// A state to compare: live databases, or a snapshot in a store.
pub enum Side {
    Live(Vec<LiveDb>),
    Stored { store: Store, digest: String, snapshot: Snapshot },
}

/// A database opened read-only inside its read transaction.
pub struct LiveDb {
    pub name: String,
    pub path: PathBuf,
    conn: Connection,
    tables: Vec<TableInfo>,
    schema: Vec<SchemaObject>,
}

impl Side {
    /// Opens live databases (each in one read transaction), named by file name.
    pub fn live(paths: &[PathBuf], ignore: &IgnoreSpec) -> Result<Side, StateError> {
        let names = database_names(paths)?;
        let mut dbs = Vec::with_capacity(paths.len());
        for (path, name) in paths.iter().zip(names) {
            let conn = open_read_only(path)?;
            let (tables, schema, _) = read_schema(&conn, path, ignore)?;
            dbs.push(LiveDb { name, path: path.clone(), conn, tables, schema });
        }
        dbs.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(Side::Live(dbs))
    }

    /// A stored snapshot (full digest or unique prefix).
    pub fn stored(store: &Store, digest: &str) -> Result<Side, StateError> {
        let digest = store.resolve(digest)?;
        let snapshot = store.snapshot(&digest)?;
        Ok(Side::Stored { store: store.clone(), digest, snapshot })
    }

    /// Database names on this side.
    pub fn database_names(&self) -> Vec<String> {
        match self {
            Side::Live(dbs) => dbs.iter().map(|d| d.name.clone()).collect(),
            Side::Stored { snapshot, .. } => snapshot.databases.iter().map(|d| d.name.clone()).collect(),
        }
    }

    fn views(&self) -> Vec<DbView<'_>> {
        match self {
            Side::Live(dbs) => dbs.iter().map(DbView::live).collect(),
            Side::Stored { store, snapshot, .. } => snapshot
                .databases
                .iter()
                .map(|d| DbView {
                    name: &d.name,
                    schema: &d.schema,
                    tables: d
                        .tables
                        .iter()
                        .map(|t| TableView {
                            name: &t.name,
                            ddl: &t.ddl,
                            columns: &t.columns,
                            key: &t.key,
                            digest: Some(&t.digest),
                            live: None,
                        })
                        .collect(),
                    source: Source::Stored(store),
                })
                .collect(),
        }
    }
}

/// One database of a side, whichever its source.
struct DbView<'a> {
    name: &'a str,
    schema: &'a [SchemaObject],
    tables: Vec<TableView<'a>>,
    source: Source<'a>,
}

enum Source<'a> {
    Live(&'a Connection, &'a Path),
    Stored(&'a Store),
    Empty,
}

struct TableView<'a> {
    name: &'a str,
    ddl: &'a str,
    columns: &'a [String],
    key: &'a [String],
    digest: Option<&'a str>,
    live: Option<&'a str>,
}

impl<'a> DbView<'a> {
    fn live(db: &'a LiveDb) -> DbView<'a> {
        DbView {
            name: &db.name,
            schema: &db.schema,
            tables: db
                .tables
                .iter()
                .map(|t| TableView {
                    name: &t.name,
                    ddl: &t.ddl,
                    columns: &t.columns,
                    key: &t.key,
                    digest: None,
                    live: Some(&t.select),
                })
                .collect(),
            source: Source::Live(&db.conn, &db.path),
        }
    }

    fn empty(name: &'a str) -> DbView<'a> {
        DbView { name, schema: &[], tables: Vec::new(), source: Source::Empty }
    }

    /// Runs `f` over the rows of `table`, in key order.
    fn with_rows<R>(
        &self,
        table: &TableView<'_>,
        f: impl FnOnce(&mut dyn RowStream) -> Result<R, StateError>,
    ) -> Result<R, StateError> {
        match (&self.source, table.live, table.digest) {
            (Source::Live(conn, path), Some(select), _) => {
                let err = || StateError::sqlite(*path);
                let mut stmt = conn.prepare(select).map_err(err())?;
                let rows = stmt.query([]).map_err(err())?;
                let mut stream = LiveRows { rows, ncols: table.columns.len(), path };
                f(&mut stream)
            }
            (Source::Stored(store), _, Some(digest)) => {
                let mut rows = store.table(digest)?.rows.prefetch();
                f(&mut rows)
            }
            _ => f(&mut NoRows),
        }
    }
}

/// A stream of rows in key order.
pub trait RowStream {
    fn next_row(&mut self) -> Result<Option<Vec<Val>>, StateError>;
}

struct LiveRows<'s, 'p> {
    rows: rusqlite::Rows<'s>,
    ncols: usize,
    path: &'p Path,
}

impl RowStream for LiveRows<'_, '_> {
    fn next_row(&mut self) -> Result<Option<Vec<Val>>, StateError> {
        let err = || StateError::sqlite(self.path);
        let Some(row) = self.rows.next().map_err(err())? else { return Ok(None) };
        let mut vals = Vec::with_capacity(self.ncols);
        for i in 0..self.ncols {
            vals.push(Val::from_ref(row.get_ref(i).map_err(err())?));
        }
        Ok(Some(vals))
    }
}

impl RowStream for Prefetched {
    fn next_row(&mut self) -> Result<Option<Vec<Val>>, StateError> {
        Prefetched::next_row(self)
    }
}

struct NoRows;

impl RowStream for NoRows {
    fn next_row(&mut self) -> Result<Option<Vec<Val>>, StateError> {
        Ok(None)
    }
}

/// Kind of a row change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Insert,
    Delete,
    Update,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Insert => "insert",
            ChangeKind::Delete => "delete",
            ChangeKind::Update => "update",
        }
    }

    /// Past tense, for messages ("inserted").
    pub fn past(self) -> &'static str {
        match self {
            ChangeKind::Insert => "inserted",
            ChangeKind::Delete => "deleted",
            ChangeKind::Update => "updated",
        }
    }
}

/// A row as one side has it: column names and values.
#[derive(Debug, Clone, Copy)]
pub struct RowRef<'a> {
    pub columns: &'a [String],
    pub values: &'a [Val],
}

impl<'a> RowRef<'a> {
    /// The value of `column`, `None` when this side has no such column.
    pub fn get(&self, column: &str) -> Option<&'a Val> {
        self.columns.iter().position(|c| c == column).and_then(|i| self.values.get(i))
    }

    /// Column -> canonical value, as a JSON object.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        for (c, v) in self.columns.iter().zip(self.values) {
            m.insert(c.clone(), v.to_json());
        }
        Value::Object(m)
    }
}

/// One changed column of an updated row (`None`: the column does not exist on that side).
#[derive(Debug, Clone, Copy)]
pub struct ColumnChange<'a> {
    pub column: &'a str,
    pub before: Option<&'a Val>,
    pub after: Option<&'a Val>,
}

/// One inserted, deleted or updated row.
#[derive(Debug, Clone)]
pub struct RowChange<'a> {
    pub kind: ChangeKind,
    pub key: &'a [String],
    pub before: Option<RowRef<'a>>,
    pub after: Option<RowRef<'a>>,
    /// For updates: the columns whose values differ, in column order.
    pub changed: Vec<ColumnChange<'a>>,
}

impl RowChange<'_> {
    /// Key column -> value, from whichever side has the row.
    pub fn key_values(&self) -> Vec<(&str, &Val)> {
        let Some(row) = self.after.or(self.before) else { return Vec::new() };
        self.key.iter().filter_map(|k| row.get(k).map(|v| (k.as_str(), v))).collect()
    }

    /// `id=4` or `contact_id=4,tag="vip"`.
    pub fn key_label(&self) -> String {
        self.key_values().iter().map(|(k, v)| format!("{k}={}", v.display())).collect::<Vec<_>>().join(",")
    }

    /// Key as a JSON object.
    pub fn key_json(&self) -> Value {
        Value::Object(self.key_values().into_iter().map(|(k, v)| (k.to_string(), v.to_json())).collect())
    }

    /// The change as one JSON object (`kind: "row"`).
    pub fn to_json(&self, db: &str, table: &str) -> Value {
        let mut v =
            json!({"kind": "row", "db": db, "table": table, "change": self.kind.as_str(), "key": self.key_json()});
        match self.kind {
            ChangeKind::Insert => v["after"] = self.after.map(|r| r.to_json()).unwrap_or(Value::Null),
            ChangeKind::Delete => v["before"] = self.before.map(|r| r.to_json()).unwrap_or(Value::Null),
            ChangeKind::Update => {
                let cols: Map<String, Value> = self
                    .changed
                    .iter()
                    .map(|c| (c.column.to_string(), json!({"before": opt_json(c.before), "after": opt_json(c.after)})))
                    .collect();
                v["columns"] = Value::Object(cols);
            }
        }
        v
    }

    /// Human form of what changed: all values for inserts and deletes, before -> after for updates.
    pub fn describe(&self) -> String {
        match self.kind {
            ChangeKind::Update => self
                .changed
                .iter()
                .map(|c| format!("{}: {} -> {}", c.column, opt_display(c.before), opt_display(c.after)))
                .collect::<Vec<_>>()
                .join(", "),
            _ => {
                let row = self.after.or(self.before);
                row.map(|r| {
                    r.columns
                        .iter()
                        .zip(r.values)
                        .map(|(c, v)| format!("{c}={}", v.display()))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default()
            }
        }
    }
}

fn opt_json(v: Option<&Val>) -> Value {
    v.map(Val::to_json).unwrap_or_else(|| json!({"absent": true}))
}

fn opt_display(v: Option<&Val>) -> String {
    v.map(Val::display).unwrap_or_else(|| "(no such column)".into())
}

/// What happened to a schema object (a table or an index, trigger, view, virtual table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    pub object: String,
    pub name: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

impl SchemaChange {
    pub fn change(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "created",
            (_, None) => "dropped",
            _ => "changed",
        }
    }

    pub fn to_json(&self, db: &str) -> Value {
        json!({"kind": "schema", "db": db, "object": self.object, "name": self.name, "change": self.change(),
               "before": self.before, "after": self.after})
    }
}

/// Receives a diff as it streams.
pub trait DiffSink {
    fn schema(&mut self, db: &str, change: &SchemaChange);
    fn row(&mut self, db: &str, table: &str, change: &RowChange<'_>);
    /// Called once per table whose rows or schema changed.
    fn table_done(&mut self, _stats: &TableStats) {}
}

/// Changes of one table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableStats {
    pub db: String,
    pub table: String,
    pub inserted: u64,
    pub deleted: u64,
    pub updated: u64,
    pub schema_changed: bool,
}

impl TableStats {
    pub fn rows_changed(&self) -> u64 {
        self.inserted + self.deleted + self.updated
    }
}

/// Totals of a diff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffSummary {
    /// Tables with row or schema changes, in order.
    pub tables: Vec<TableStats>,
    pub schema_changes: u64,
    pub inserted: u64,
    pub deleted: u64,
    pub updated: u64,
}

impl DiffSummary {
    pub fn is_empty(&self) -> bool {
        self.schema_changes == 0 && self.inserted + self.deleted + self.updated == 0
    }

    pub fn to_json(&self) -> Value {
        json!({"kind": "summary", "tables_changed": self.tables.len(), "schema_changes": self.schema_changes,
               "inserted": self.inserted, "deleted": self.deleted, "updated": self.updated})
    }
}

/// Diffs state `a` against state `b`, streaming every change to `sink`. Databases are
/// paired by name, except that two single-database sides are always paired.
pub fn diff(a: &Side, b: &Side, sink: &mut dyn DiffSink) -> Result<DiffSummary, StateError> {
    let va = a.views();
    let vb = b.views();
    let mut summary = DiffSummary::default();
    if va.len() == 1 && vb.len() == 1 {
        diff_db(&va[0], &vb[0], va[0].name, sink, &mut summary)?;
        return Ok(summary);
    }
    let mut names: Vec<&str> = va.iter().chain(&vb).map(|d| d.name).collect();
    names.sort_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
    names.dedup();
    for name in names {
        let da = va.iter().find(|d| d.name == name);
        let db = vb.iter().find(|d| d.name == name);
        let (ea, eb) = (DbView::empty(name), DbView::empty(name));
        diff_db(da.unwrap_or(&ea), db.unwrap_or(&eb), name, sink, &mut summary)?;
    }
    Ok(summary)
}

fn diff_db(
    a: &DbView<'_>,
    b: &DbView<'_>,
    name: &str,
    sink: &mut dyn DiffSink,
    summary: &mut DiffSummary,
) -> Result<(), StateError> {
    let mut tables: Vec<&str> = a.tables.iter().chain(&b.tables).map(|t| t.name).collect();
    tables.sort_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
    tables.dedup();
    for t in tables {
        let ta = a.tables.iter().find(|x| x.name == t);
        let tb = b.tables.iter().find(|x| x.name == t);
        let mut stats = TableStats { db: name.to_string(), table: t.to_string(), ..TableStats::default() };
        let ddl_a = ta.map(|x| x.ddl.to_string());
        let ddl_b = tb.map(|x| x.ddl.to_string());
        if ddl_a != ddl_b {
            stats.schema_changed = true;
            summary.schema_changes += 1;
            let change = SchemaChange { object: "table".into(), name: t.to_string(), before: ddl_a, after: ddl_b };
            sink.schema(name, &change);
        }
        let same_digest =
            matches!((ta.and_then(|x| x.digest), tb.and_then(|x| x.digest)), (Some(x), Some(y)) if x == y);
        if !same_digest {
            diff_rows(a, ta, b, tb, &mut stats, sink)?;
        }
        if stats.schema_changed || stats.rows_changed() > 0 {
            summary.inserted += stats.inserted;
            summary.deleted += stats.deleted;
            summary.updated += stats.updated;
            sink.table_done(&stats);
            summary.tables.push(stats);
        }
    }
    diff_objects(a.schema, b.schema, name, sink, summary);
    Ok(())
}

/// Indexes, triggers, views and virtual tables: created, dropped or changed SQL.
fn diff_objects(a: &[SchemaObject], b: &[SchemaObject], db: &str, sink: &mut dyn DiffSink, summary: &mut DiffSummary) {
    let mut keys: Vec<(&str, &str)> = a.iter().chain(b).map(|o| (o.kind.as_str(), o.name.as_str())).collect();
    keys.sort();
    keys.dedup();
    for (kind, name) in keys {
        let find = |s: &[SchemaObject]| s.iter().find(|o| o.kind == kind && o.name == name).map(|o| o.sql.clone());
        let (before, after) = (find(a), find(b));
        if before != after {
            summary.schema_changes += 1;
            sink.schema(db, &SchemaChange { object: kind.to_string(), name: name.to_string(), before, after });
        }
    }
}

static NO_COLUMNS: [String; 0] = [];

fn diff_rows(
    a: &DbView<'_>,
    ta: Option<&TableView<'_>>,
    b: &DbView<'_>,
    tb: Option<&TableView<'_>>,
    stats: &mut TableStats,
    sink: &mut dyn DiffSink,
) -> Result<(), StateError> {
    let empty = TableView { name: "", ddl: "", columns: &NO_COLUMNS, key: &NO_COLUMNS, digest: None, live: None };
    let (xa, xb) = (ta.unwrap_or(&empty), tb.unwrap_or(&empty));
    let shape = Shape::new(xa, xb);
    let (db, table) = (stats.db.clone(), stats.table.clone());
    let label = format!("{db}:{table}");
    let mut emit = |c: &RowChange<'_>| {
        match c.kind {
            ChangeKind::Insert => stats.inserted += 1,
            ChangeKind::Delete => stats.deleted += 1,
            ChangeKind::Update => stats.updated += 1,
        }
        sink.row(&db, &table, c);
    };
    a.with_rows(xa, |ra| b.with_rows(xb, |rb| merge(ra, rb, &shape, &label, &mut emit)))
}

/// A column name with its position on side A and side B (absent on one side: `None`).
type UnionColumn<'a> = (&'a str, Option<usize>, Option<usize>);

/// How two sides' rows line up.
struct Shape<'a> {
    a_cols: &'a [String],
    b_cols: &'a [String],
    a_key: Vec<usize>,
    b_key: Vec<usize>,
    key: &'a [String],
    /// Keys differ: rows cannot be matched; everything is deleted and inserted.
    unmatched: bool,
    /// Union of column names with their positions on each side (when the columns differ).
    union: Option<Vec<UnionColumn<'a>>>,
}

impl<'a> Shape<'a> {
    fn new(a: &TableView<'a>, b: &TableView<'a>) -> Shape<'a> {
        let union = if a.columns == b.columns || a.columns.is_empty() || b.columns.is_empty() {
            None
        } else {
            let mut u: Vec<(&str, Option<usize>, Option<usize>)> = a
                .columns
                .iter()
                .enumerate()
                .map(|(i, c)| (c.as_str(), Some(i), b.columns.iter().position(|x| x == c)))
                .collect();
            for (j, c) in b.columns.iter().enumerate() {
                if !a.columns.contains(c) {
                    u.push((c.as_str(), None, Some(j)));
                }
            }
            Some(u)
        };
        let key = if a.key.is_empty() { b.key } else { a.key };
        Shape {
            a_cols: a.columns,
            b_cols: b.columns,
            a_key: key_positions(a.columns, a.key),
            b_key: key_positions(b.columns, b.key),
            key,
            unmatched: !a.key.is_empty() && !b.key.is_empty() && a.key != b.key,
            union,
        }
    }

    fn key_order(&self, ra: &[Val], rb: &[Val]) -> Ordering {
        if self.unmatched {
            return Ordering::Less;
        }
        cmp_keys(ra, &self.a_key, rb, &self.b_key)
    }

    /// Columns whose values differ between the two versions of a row.
    fn changed<'r>(&self, ra: &'r [Val], rb: &'r [Val]) -> Vec<ColumnChange<'r>>
    where
        'a: 'r,
    {
        match &self.union {
            None => self
                .a_cols
                .iter()
                .zip(ra.iter().zip(rb))
                .filter(|(_, (x, y))| !same(x, y))
                .map(|(c, (x, y))| ColumnChange { column: c, before: Some(x), after: Some(y) })
                .collect(),
            Some(u) => u
                .iter()
                .filter_map(|(c, ia, ib)| {
                    let x = ia.and_then(|i| ra.get(i));
                    let y = ib.and_then(|i| rb.get(i));
                    let differ = match (x, y) {
                        (Some(x), Some(y)) => !same(x, y),
                        _ => true,
                    };
                    differ.then_some(ColumnChange { column: c, before: x, after: y })
                })
                .collect(),
        }
    }
}

fn cmp_keys(ra: &[Val], ka: &[usize], rb: &[Val], kb: &[usize]) -> Ordering {
    for (i, j) in ka.iter().zip(kb) {
        match (ra.get(*i), rb.get(*j)) {
            (Some(x), Some(y)) => match key_cmp(std::slice::from_ref(x), std::slice::from_ref(y)) {
                Ordering::Equal => {}
                o => return o,
            },
            _ => return Ordering::Equal,
        }
    }
    Ordering::Equal
}

/// Value identity: same type and same canonical encoding (so 0.0 and -0.0 differ, as
/// their digests do, and 1 and 1.0 differ).
pub fn same(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Real(x), Val::Real(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// Reads the next row and checks that keys never go down.
fn advance(s: &mut dyn RowStream, cur: &mut Option<Vec<Val>>, key: &[usize], label: &str) -> Result<(), StateError> {
    let next = s.next_row()?;
    if let (Some(n), Some(p)) = (&next, &*cur) {
        if cmp_keys(n, key, p, key) == Ordering::Less {
            return Err(StateError::invalid(label, "rows are not in key order: cannot merge (collation?)"));
        }
    }
    *cur = next;
    Ok(())
}

fn merge(
    a: &mut dyn RowStream,
    b: &mut dyn RowStream,
    shape: &Shape<'_>,
    label: &str,
    emit: &mut dyn FnMut(&RowChange<'_>),
) -> Result<(), StateError> {
    let (mut ca, mut cb) = (a.next_row()?, b.next_row()?);
    loop {
        let order = match (&ca, &cb) {
            (None, None) => return Ok(()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(x), Some(y)) => shape.key_order(x, y),
        };
        match order {
            Ordering::Less => {
                if let Some(x) = &ca {
                    let before = RowRef { columns: shape.a_cols, values: x };
                    let c = RowChange {
                        kind: ChangeKind::Delete,
                        key: shape.key,
                        before: Some(before),
                        after: None,
                        changed: Vec::new(),
                    };
                    emit(&c);
                }
                advance(a, &mut ca, &shape.a_key, label)?;
            }
            Ordering::Greater => {
                if let Some(y) = &cb {
                    let after = RowRef { columns: shape.b_cols, values: y };
                    let c = RowChange {
                        kind: ChangeKind::Insert,
                        key: shape.key,
                        before: None,
                        after: Some(after),
                        changed: Vec::new(),
                    };
                    emit(&c);
                }
                advance(b, &mut cb, &shape.b_key, label)?;
            }
            Ordering::Equal => {
                if let (Some(x), Some(y)) = (&ca, &cb) {
                    let changed = shape.changed(x, y);
                    if !changed.is_empty() {
                        let c = RowChange {
                            kind: ChangeKind::Update,
                            key: shape.key,
                            before: Some(RowRef { columns: shape.a_cols, values: x }),
                            after: Some(RowRef { columns: shape.b_cols, values: y }),
                            changed,
                        };
                        emit(&c);
                    }
                }
                advance(a, &mut ca, &shape.a_key, label)?;
                advance(b, &mut cb, &shape.b_key, label)?;
            }
        }
    }
}

/// `table.row[key]`, prefixed with `db:` when several databases are involved.
pub fn row_label(db: &str, table: &str, change: &RowChange<'_>, show_db: bool) -> String {
    let prefix = if show_db { format!("{db}:") } else { String::new() };
    format!("{prefix}{table}.row[{}]", change.key_label())
}

/// Prints a diff for people: one line per change, then one line per changed table.
pub struct HumanDiff<'w> {
    pub out: &'w mut dyn Write,
    pub show_db: bool,
}

impl DiffSink for HumanDiff<'_> {
    fn schema(&mut self, db: &str, c: &SchemaChange) {
        let prefix = if self.show_db { format!("{db}: ") } else { String::new() };
        let _ = match (&c.before, &c.after) {
            (Some(x), Some(y)) => {
                writeln!(self.out, "schema {prefix}{} {} changed:\n  - {x}\n  + {y}", c.object, c.name)
            }
            (None, Some(y)) => writeln!(self.out, "schema {prefix}{} {} created: {y}", c.object, c.name),
            (Some(x), None) => writeln!(self.out, "schema {prefix}{} {} dropped: {x}", c.object, c.name),
            (None, None) => Ok(()),
        };
    }

    fn row(&mut self, db: &str, table: &str, c: &RowChange<'_>) {
        let sign = match c.kind {
            ChangeKind::Insert => '+',
            ChangeKind::Delete => '-',
            ChangeKind::Update => '~',
        };
        let _ = writeln!(self.out, "{sign} {} {}", row_label(db, table, c, self.show_db), c.describe());
    }

    fn table_done(&mut self, s: &TableStats) {
        let name = if self.show_db { format!("{}:{}", s.db, s.table) } else { s.table.clone() };
        let schema = if s.schema_changed { ", schema changed" } else { "" };
        let _ = writeln!(
            self.out,
            "= {name}: {} inserted, {} deleted, {} updated{schema}",
            s.inserted, s.deleted, s.updated
        );
    }
}

/// Prints a diff as JSON Lines: `schema`, `row` and `table` objects as they stream.
pub struct JsonDiff<'w> {
    pub out: &'w mut dyn Write,
}

impl DiffSink for JsonDiff<'_> {
    fn schema(&mut self, db: &str, c: &SchemaChange) {
        let _ = writeln!(self.out, "{}", c.to_json(db));
    }

    fn row(&mut self, db: &str, table: &str, c: &RowChange<'_>) {
        let _ = writeln!(self.out, "{}", c.to_json(db, table));
    }

    fn table_done(&mut self, s: &TableStats) {
        let v = json!({"kind": "table", "db": s.db, "table": s.table, "inserted": s.inserted,
                       "deleted": s.deleted, "updated": s.updated, "schema_changed": s.schema_changed});
        let _ = writeln!(self.out, "{v}");
    }
}

/// Collects every change as JSON values (small diffs: per-action effects, tests).
#[derive(Debug, Default)]
pub struct CollectDiff {
    pub changes: Vec<Value>,
}

impl DiffSink for CollectDiff {
    fn schema(&mut self, db: &str, c: &SchemaChange) {
        self.changes.push(c.to_json(db));
    }

    fn row(&mut self, db: &str, table: &str, c: &RowChange<'_>) {
        self.changes.push(c.to_json(db, table));
    }
}
