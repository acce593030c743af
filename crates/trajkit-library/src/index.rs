//! The SQLite index (`index.sqlite`): one writer thread fed by a bounded channel loads
//! rows in one transaction; secondary indexes, duplicate groups, task ranks and splits
//! are computed in SQL once everything is loaded. Schema: docs/library.md.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Sender};
use rusqlite::{params, Connection};

use crate::error::LibraryError;
use crate::row::Row;

/// Tables, created before loading (indexes come after: loading is faster without them).
const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources (name TEXT PRIMARY KEY, format TEXT NOT NULL, license TEXT, family TEXT, version TEXT,
  role TEXT NOT NULL, success_rule TEXT, paths TEXT NOT NULL);
CREATE TABLE files (file INTEGER PRIMARY KEY, source TEXT NOT NULL, path TEXT NOT NULL, format TEXT,
  records INTEGER NOT NULL, trajectories INTEGER NOT NULL, subagents INTEGER NOT NULL, steps INTEGER NOT NULL,
  tool_calls INTEGER NOT NULL, duplicate_records INTEGER NOT NULL, rejected INTEGER NOT NULL,
  reasons TEXT NOT NULL, gaps TEXT NOT NULL, part_of TEXT, error TEXT);
CREATE TABLE trajectories (ordinal INTEGER PRIMARY KEY, id TEXT NOT NULL, source TEXT NOT NULL, format TEXT NOT NULL,
  path TEXT NOT NULL, line INTEGER, document_index INTEGER, shard TEXT NOT NULL, shard_line INTEGER NOT NULL,
  task_key TEXT NOT NULL, split_key TEXT NOT NULL, task_id TEXT, environment TEXT, model TEXT, scaffold TEXT, family TEXT, license TEXT,
  role TEXT NOT NULL, status TEXT NOT NULL, reward REAL, outcome_known INTEGER NOT NULL, verification TEXT NOT NULL,
  structural_valid INTEGER NOT NULL, structural_problems TEXT NOT NULL, action_observation_completeness REAL,
  decisions INTEGER NOT NULL, steps INTEGER NOT NULL, tool_calls INTEGER NOT NULL, subagents INTEGER NOT NULL,
  gaps TEXT NOT NULL, complete INTEGER NOT NULL, sft_eligible INTEGER NOT NULL, training_eligible INTEGER NOT NULL,
  quality_tier INTEGER NOT NULL, task_rank INTEGER NOT NULL, duplicate_group TEXT NOT NULL,
  duplicate_group_size INTEGER NOT NULL, split TEXT NOT NULL, content_digest TEXT NOT NULL,
  prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL, environment_version TEXT,
  interaction_digest TEXT NOT NULL, duplicate_outcomes_disagree INTEGER NOT NULL, duration_seconds REAL,
  cached_tokens INTEGER, shard_offset INTEGER, frame_offset INTEGER,
  instruction_digest TEXT, task_cluster TEXT, task_cluster_reason TEXT, task_cluster_similarity REAL,
  near_duplicate_group TEXT, near_duplicate_group_size INTEGER, near_duplicate_similarity REAL);
CREATE TABLE steps (trajectory INTEGER NOT NULL, step INTEGER NOT NULL, role TEXT NOT NULL, authorship TEXT NOT NULL,
  copied_context INTEGER NOT NULL, subagent INTEGER NOT NULL, model TEXT, timestamp TEXT,
  tool_calls INTEGER NOT NULL, tool_results INTEGER NOT NULL, content_bytes INTEGER NOT NULL,
  has_reasoning INTEGER NOT NULL, PRIMARY KEY (trajectory, step)) WITHOUT ROWID;
CREATE TABLE tool_calls (trajectory INTEGER NOT NULL, step INTEGER NOT NULL, call INTEGER NOT NULL, call_id TEXT,
  name TEXT NOT NULL, arguments_invalid INTEGER NOT NULL, answered INTEGER NOT NULL,
  PRIMARY KEY (trajectory, step, call)) WITHOUT ROWID;
CREATE TABLE rejections (file INTEGER NOT NULL, path TEXT NOT NULL, line INTEGER, document_index INTEGER,
  reason TEXT NOT NULL, json_path TEXT NOT NULL, message TEXT NOT NULL);
";

/// Work done once everything is loaded: duplicate groups, then eligibility, group sizes,
/// ranks and task clusters (`clusters::write_index` wrote their tables) in one `UPDATE`
/// (each full `UPDATE` rewrites every wide row; the near-duplicate group size starts as the
/// exact one, `near` enlarges it for members), tasks, then the secondary indexes. Every row
/// has exactly one duplicate group (grouped by its interaction digest) and one cluster link
/// (every trajectory's split key and instruction are a pair of the task collector, and
/// every pair is linked), so the joined `UPDATE` reaches every row, front to back; it sets
/// `split` from the row's cluster, so eligibility reads the cluster's split, and the rank
/// from `task_rank` (`finalize` registers the function). The digest indexes come after
/// the cluster index, as they did when the clusters were applied first (the schema lists
/// them in that order).
const FINALIZE: &str = "
CREATE TABLE duplicate_groups (duplicate_group TEXT PRIMARY KEY, interaction_digest TEXT NOT NULL,
  size INTEGER NOT NULL, outcomes_disagree INTEGER NOT NULL, trajectory_ids TEXT NOT NULL);
INSERT INTO duplicate_groups
  SELECT duplicate_group, interaction_digest, count(*),
    count(DISTINCT status) > 1 OR count(DISTINCT reward) > 1 OR count(reward) NOT IN (0, count(*)),
    json_group_array(id)
  FROM (SELECT duplicate_group, interaction_digest, id, status, reward FROM trajectories ORDER BY ordinal)
  GROUP BY interaction_digest ORDER BY duplicate_group, interaction_digest;
UPDATE trajectories SET
    training_eligible = (sft_eligible AND role = 'training' AND c.split <> 'protected_evaluation'),
    duplicate_group_size = g.size, duplicate_outcomes_disagree = g.outcomes_disagree,
    task_rank = trajkit_task_rank(trajectories.ordinal), near_duplicate_group_size = g.size,
    task_cluster = l.task_cluster, task_cluster_reason = l.reason, task_cluster_similarity = l.similarity,
    split = c.split
  FROM duplicate_groups AS g,
    task_cluster_links AS l JOIN task_clusters AS c ON c.task_cluster = l.task_cluster
  WHERE g.interaction_digest = trajectories.interaction_digest
    AND l.split_key = trajectories.split_key AND l.instruction_digest = coalesce(trajectories.instruction_digest, '');
CREATE INDEX trajectories_task_cluster ON trajectories (task_cluster);
UPDATE task_clusters SET trajectories = n.n FROM
  (SELECT task_cluster, count(*) AS n FROM trajectories GROUP BY task_cluster) AS n
  WHERE n.task_cluster = task_clusters.task_cluster;
CREATE INDEX trajectories_content_digest ON trajectories (content_digest);
CREATE INDEX trajectories_interaction_digest ON trajectories (interaction_digest);
CREATE TABLE tasks (task_key TEXT PRIMARY KEY, split TEXT NOT NULL, attempts INTEGER NOT NULL,
  success INTEGER NOT NULL, failure INTEGER NOT NULL, unknown INTEGER NOT NULL,
  sources INTEGER NOT NULL, environments INTEGER NOT NULL, task_id TEXT, environment TEXT);
INSERT INTO tasks
  SELECT task_key, min(split), count(*), sum(status = 'success'), sum(status = 'failure'), sum(status = 'unknown'),
    count(DISTINCT source), count(DISTINCT coalesce(environment, '')), min(task_id), min(environment)
  FROM trajectories GROUP BY task_key ORDER BY task_key;
CREATE UNIQUE INDEX trajectories_id ON trajectories (id);
CREATE INDEX trajectories_task_key ON trajectories (task_key);
CREATE INDEX trajectories_source ON trajectories (source, status);
CREATE INDEX trajectories_model ON trajectories (model);
CREATE INDEX trajectories_split ON trajectories (split, training_eligible, quality_tier);
CREATE INDEX tool_calls_name ON tool_calls (name);
CREATE INDEX rejections_reason ON rejections (reason);
ANALYZE;
";

/// A step as the index keeps it (serialized in a partial's entries).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StepRow {
    pub role: Cow<'static, str>,
    pub authorship: Cow<'static, str>,
    pub copied_context: bool,
    pub subagent: bool,
    pub model: Option<String>,
    pub timestamp: Option<String>,
    pub tool_calls: u32,
    pub tool_results: u32,
    pub content_bytes: u64,
    pub has_reasoning: bool,
}

/// A tool call as the index keeps it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CallRow {
    pub step: u32,
    pub call: u32,
    pub call_id: Option<String>,
    pub name: String,
    pub arguments_invalid: bool,
    pub answered: bool,
}

/// A rejected record as the index keeps it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RejectionRow {
    pub file: u64,
    pub path: String,
    pub line: Option<u64>,
    pub document_index: Option<u64>,
    pub reason: String,
    pub json_path: String,
    pub message: String,
}

/// Per-file figures as the index keeps them.
#[derive(Debug, Clone)]
pub struct FileRow {
    pub file: u64,
    pub source: String,
    pub report: trajkit_formats::FileReport,
}

/// What the writer thread loads.
pub enum Msg {
    Trajectory {
        ordinal: u64,
        row: Box<Row>,
        steps: Vec<StepRow>,
        calls: Vec<CallRow>,
    },
    Rejection(RejectionRow),
    File(FileRow),
    Source {
        name: String,
        format: String,
        license: Option<String>,
        family: Option<String>,
        version: Option<String>,
        role: String,
        success_rule: Option<String>,
        paths: String,
    },
    Meta(String, String),
}

/// The page cache (KiB), for loading (which appends in key order and runs beside the
/// reading) and for the cluster updates, index builds and `UPDATE`s after it: 64 MiB for
/// those was as fast as 16 and the build's peak on many small files (docs/PERFORMANCE.md,
/// step 101).
const CACHE_KIB: u32 = 16 << 10;

/// The index's page size for a build that reads `input_bytes`. From `LARGE_PAGES_FROM` on,
/// SQLite's largest: the cache holds as many bytes as with 8 KiB pages, and each page read
/// or written past it is an eighth of the system calls (a 4 GB build took 6 % less wall time,
/// for the same SQL dump). Below it 8 KiB: every table and index takes a page at least, so
/// 64 KiB pages made the example corpus's index 2.2 MB instead of 0.4 MB, for nothing
/// (docs/PERFORMANCE.md, step 149). The plan's bytes are the same for every way of building.
pub(crate) fn page_size(input_bytes: u64) -> u32 {
    if input_bytes >= LARGE_PAGES_FROM {
        64 << 10
    } else {
        8 << 10
    }
}

/// Input bytes from which the index gets 64 KiB pages.
const LARGE_PAGES_FROM: u64 = 64 << 20;

/// Messages queued for the writer thread at most.
const QUEUE: usize = 8192;

/// The writer thread and its channel.
pub struct IndexWriter {
    tx: Option<Sender<Msg>>,
    handle: Option<JoinHandle<Result<Connection, LibraryError>>>,
    path: PathBuf,
}

impl IndexWriter {
    /// Creates the database at `path`, in pages of `page_size` bytes, and starts loading on
    /// a thread of its own.
    pub fn start(path: &Path, page_size: u32) -> Result<IndexWriter, LibraryError> {
        let conn = open_for_build(path, page_size)?;
        // Room for the merge to run ahead of the inserts (a few KiB per trajectory): while
        // the writer drains it, finalize computes the clusters and near-duplicate groups.
        let (tx, rx) = bounded::<Msg>(QUEUE);
        let p = path.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("trajkit-index".into())
            .spawn(move || {
                let sql = |source| LibraryError::Sqlite { path: p.clone(), source };
                conn.execute_batch("BEGIN").map_err(sql)?;
                for msg in rx {
                    insert(&conn, msg).map_err(sql)?;
                }
                conn.execute_batch("COMMIT").map_err(sql)?;
                Ok(conn)
            })
            .map_err(LibraryError::io(path))?;
        Ok(IndexWriter { tx: Some(tx), handle: Some(handle), path: path.to_path_buf() })
    }

    /// Queues a message; false when the writer stopped (its error comes from `finish`).
    pub fn send(&self, msg: Msg) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(msg).is_ok())
    }

    /// Waits for the loading to end; returns the connection for finalizing.
    pub fn finish(mut self) -> Result<Connection, LibraryError> {
        drop(self.tx.take());
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(result)) => result,
            _ => Err(LibraryError::Invalid { path: self.path.clone(), message: "index writer thread panicked".into() }),
        }
    }
}

/// A writer dropped unfinished (a failed or cancelled build) stops before its caller goes
/// on: the staging directory holding its database is removed next.
impl Drop for IndexWriter {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

fn open_for_build(path: &Path, page_size: u32) -> Result<Connection, LibraryError> {
    let sql = |source| LibraryError::Sqlite { path: path.to_path_buf(), source };
    let conn = Connection::open(path).map_err(sql)?;
    // The library is built in a temporary directory and swapped in only when complete,
    // so durability while building buys nothing; no journal means no -wal/-shm files.
    conn.execute_batch(&format!(
        "PRAGMA page_size = {page_size}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
         PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = FILE; PRAGMA cache_size = -{CACHE_KIB};"
    ))
    .map_err(sql)?;
    conn.execute_batch(SCHEMA).map_err(sql)?;
    // Every statement `insert` prepares, the multi-row ones of each length included.
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

fn insert(conn: &Connection, msg: Msg) -> rusqlite::Result<()> {
    match msg {
        Msg::Trajectory { ordinal, row, steps, calls } => insert_trajectory(conn, ordinal, &row, &steps, &calls),
        Msg::Rejection(r) => {
            let mut st = conn.prepare_cached("INSERT INTO rejections VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
            st.execute(params![r.file, r.path, r.line, r.document_index, r.reason, r.json_path, r.message])?;
            Ok(())
        }
        Msg::File(f) => {
            let r = &f.report;
            let mut st = conn.prepare_cached(
                "INSERT INTO files VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )?;
            st.execute(params![
                f.file,
                f.source,
                r.path,
                r.format,
                r.records,
                r.trajectories,
                r.subagents,
                r.steps,
                r.tool_calls,
                r.duplicate_records,
                r.rejected,
                json(&r.reasons),
                json(&r.gaps),
                r.part_of,
                r.error
            ])?;
            Ok(())
        }
        Msg::Source { name, format, license, family, version, role, success_rule, paths } => {
            let mut st = conn.prepare_cached("INSERT INTO sources VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
            st.execute(params![name, format, license, family, version, role, success_rule, paths])?;
            Ok(())
        }
        Msg::Meta(key, value) => {
            conn.prepare_cached("INSERT OR REPLACE INTO meta VALUES (?1, ?2)")?.execute(params![key, value])?;
            Ok(())
        }
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    trajkit_model::compact::to_string(v).unwrap_or_default()
}

fn insert_trajectory(
    conn: &Connection,
    ordinal: u64,
    r: &Row,
    steps: &[StepRow],
    calls: &[CallRow],
) -> rusqlite::Result<()> {
    let mut st = conn.prepare_cached(
        "INSERT INTO trajectories VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
         ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38, ?39,
         ?40, ?41, ?42, ?43, ?44, ?45, ?46, ?47, ?48, ?49, ?50, ?51, ?52, ?53, ?54, ?55, ?56)",
    )?;
    st.execute(params![
        ordinal,
        r.id,
        r.source,
        r.format,
        r.path,
        r.line,
        r.document_index,
        r.shard,
        r.shard_line,
        r.task_key,
        r.split_key,
        r.task_id,
        r.environment,
        r.model,
        r.scaffold,
        r.family,
        r.license,
        r.role,
        r.status,
        r.reward,
        r.outcome_known,
        r.verification,
        r.structural_valid,
        json(&r.structural_problems),
        r.action_observation_completeness,
        r.decisions,
        r.steps,
        r.tool_calls,
        r.subagents,
        json(&r.gaps),
        r.complete,
        r.sft_eligible,
        r.training_eligible,
        r.quality_tier,
        r.task_rank,
        r.duplicate_group,
        r.duplicate_group_size,
        r.split,
        r.content_digest,
        r.prompt_tokens,
        r.completion_tokens,
        r.cost_usd,
        r.environment_version,
        r.interaction_digest,
        r.duplicate_outcomes_disagree,
        r.duration_seconds,
        r.cached_tokens,
        r.shard_offset,
        r.frame_offset,
        r.instruction_digest,
        r.task_cluster,
        r.task_cluster_reason,
        r.task_cluster_similarity,
        r.near_duplicate_group,
        r.near_duplicate_group_size,
        r.near_duplicate_similarity,
    ])?;
    let numbered: Vec<(usize, &StepRow)> = steps.iter().enumerate().collect();
    insert_rows(conn, "steps", 12, &numbered, |st, at, &(i, s)| {
        bind(st, at, &[&ordinal, &(i as u64), &s.role.as_ref(), &s.authorship.as_ref(), &s.copied_context])?;
        bind(st, at + 5, &[&s.subagent, &s.model, &s.timestamp, &s.tool_calls, &s.tool_results])?;
        bind(st, at + 10, &[&s.content_bytes, &s.has_reasoning])
    })?;
    insert_rows(conn, "tool_calls", 7, calls, |st, at, c| {
        bind(st, at, &[&ordinal, &c.step, &c.call, &c.call_id, &c.name, &c.arguments_invalid, &c.answered])
    })
}

/// Rows one `INSERT` statement carries at most: stepping and resetting a statement per row
/// cost more than a step's insert itself.
const ROWS_PER_INSERT: usize = 16;

/// Inserts `rows` into `table` (`columns` wide) in order, up to `ROWS_PER_INSERT` rows per
/// statement; `bind_row` binds a row's values from parameter `at` (1-based) on.
fn insert_rows<T>(
    conn: &Connection,
    table: &str,
    columns: usize,
    rows: &[T],
    bind_row: impl Fn(&mut rusqlite::Statement<'_>, usize, &T) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let mut st = conn.prepare_cached(&insert_sql(table, columns, chunk.len()))?;
        for (k, row) in chunk.iter().enumerate() {
            bind_row(&mut st, k * columns + 1, row)?;
        }
        st.raw_execute()?;
    }
    Ok(())
}

/// Binds `values` to the parameters from `at` on.
fn bind(st: &mut rusqlite::Statement<'_>, at: usize, values: &[&dyn rusqlite::ToSql]) -> rusqlite::Result<()> {
    values.iter().enumerate().try_for_each(|(k, v)| st.raw_bind_parameter(at + k, v))
}

/// `INSERT INTO table VALUES (?, ...), ...` for `rows` rows of `columns` values.
fn insert_sql(table: &str, columns: usize, rows: usize) -> String {
    let row = format!("({})", vec!["?"; columns].join(","));
    format!("INSERT INTO {table} VALUES {}", vec![row; rows].join(","))
}

/// Computes everything that needs all rows and builds the indexes, one statement at a
/// time so that `cancelled` is heard between them. No `VACUUM`: the file is written once
/// by one thread in row order (deterministic as it is), and compacting it cost a third of
/// the finalize time for a few percent of size.
pub fn finalize(conn: &Connection, path: &Path, cancelled: &dyn Fn() -> bool) -> Result<(), LibraryError> {
    let sql = |source| LibraryError::Sqlite { path: path.to_path_buf(), source };
    conn.execute_batch("BEGIN").map_err(sql)?;
    crate::task_rank::TaskRanks::compute(conn).and_then(|ranks| ranks.register(conn)).map_err(sql)?;
    // The statements hold no `;` inside literals.
    for statement in FINALIZE.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        if cancelled() {
            conn.execute_batch("ROLLBACK").map_err(sql)?;
            return Err(LibraryError::Cancelled);
        }
        conn.execute_batch(statement).map_err(sql)?;
    }
    conn.remove_function(crate::task_rank::FUNCTION, 1).map_err(sql)?;
    conn.execute_batch("COMMIT").map_err(sql)?;
    Ok(())
}

/// Opens an index read-only (`trajkit query`, `stats`): nothing can change the library.
pub fn open_read_only(path: &Path) -> Result<Connection, LibraryError> {
    use rusqlite::OpenFlags;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    Connection::open_with_flags(path, flags).map_err(|source| LibraryError::Sqlite { path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic (a failed build is what drops a writer unfinished; no input file shows it):
    /// once dropped, the writer's thread has ended and what it was sent is committed.
    #[test]
    fn a_dropped_writer_has_stopped_and_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        let writer = IndexWriter::start(&path, page_size(0)).unwrap();
        for n in 0..200_000 {
            assert!(writer.send(Msg::Meta(format!("key{n}"), n.to_string())));
        }
        drop(writer);
        let conn = open_read_only(&path).unwrap();
        // No waiting for a lock: the writer's connection must be closed already.
        conn.busy_timeout(std::time::Duration::ZERO).unwrap();
        let rows: u64 = conn.query_row("SELECT count(*) FROM meta", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 200_000);
    }

    /// Synthetic (sizes at the threshold; no fixture is 64 MiB): the index written has the
    /// page size its plan's input calls for, 8 KiB below `LARGE_PAGES_FROM`, 64 KiB from it.
    #[test]
    fn the_index_has_the_page_size_of_its_input() {
        for (bytes, expected) in [(0, 8192), (LARGE_PAGES_FROM - 1, 8192), (LARGE_PAGES_FROM, 65536), (4 << 30, 65536)]
        {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("index.sqlite");
            drop(IndexWriter::start(&path, page_size(bytes)).unwrap());
            let conn = open_read_only(&path).unwrap();
            let size: u32 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
            assert_eq!(size, expected, "{bytes} input bytes");
        }
    }
}
