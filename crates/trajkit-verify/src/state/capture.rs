//! Capturing SQLite databases: read-only, one read transaction per database, rows streamed
//! in key order and hashed (and, with a store, compressed to a temporary file) as they are
//! read, so memory does not depend on table size.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;
use std::time::Duration;

use rayon::prelude::*;
use rusqlite::{Connection, OpenFlags};
use sha2::{Digest, Sha256};

use super::error::StateError;
use super::schema::{read_schema, IgnoreSpec, TableInfo};
use super::store::{DatabaseManifest, Snapshot, Store, TableEntry, TableHeader, SNAPSHOT_KIND, TABLE_KIND};
use super::value::{encode_ref, hex};

/// Encoded rows are handed to the hashing/compressing side in chunks of this size.
const CHUNK: usize = 1 << 20;
/// zstd level of stored table captures (level 1: fast; the store is a cache, not an archive).
const ZSTD_LEVEL: i32 = 1;
/// How long a reader waits for another connection's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// What a capture produced.
#[derive(Debug, Clone)]
pub struct Capture {
    pub snapshot: Snapshot,
    /// The state digest (SHA-256 of the snapshot's canonical bytes).
    pub digest: String,
    pub stats: CaptureStats,
}

/// Figures of one capture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureStats {
    pub databases: usize,
    pub tables: usize,
    pub rows: u64,
    /// Uncompressed bytes of the table captures (header lines and rows).
    pub bytes: u64,
    /// Table captures newly written to the store (0 when everything was already there).
    pub new_objects: usize,
    /// True when the snapshot manifest was newly written to the store.
    pub new_snapshot: bool,
}

/// Opens a database read-only and starts its read transaction: everything read through
/// the returned connection sees one consistent state, whatever other connections write.
pub fn open_read_only(path: &Path) -> Result<Connection, StateError> {
    if !path.is_file() {
        let error = std::io::Error::new(std::io::ErrorKind::NotFound, "no such database file");
        return Err(StateError::Io { path: path.to_path_buf(), error });
    }
    let err = || StateError::sqlite(path);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(err())?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err())?;
    let encoding: String = conn.query_row("PRAGMA encoding", [], |r| r.get(0)).map_err(err())?;
    if encoding != "UTF-8" {
        return Err(StateError::Unsupported {
            path: path.to_path_buf(),
            message: format!("database text encoding {encoding} (only UTF-8 databases are captured)"),
        });
    }
    conn.execute_batch("BEGIN").map_err(err())?;
    // The first read starts the transaction; every later read sees the same state.
    conn.query_row("SELECT count(*) FROM main.sqlite_master", [], |r| r.get::<_, i64>(0)).map_err(err())?;
    Ok(conn)
}

/// Database names of a multi-database capture: file names, which must be distinct.
pub fn database_names(paths: &[PathBuf]) -> Result<Vec<String>, StateError> {
    let mut names: Vec<String> = Vec::with_capacity(paths.len());
    for p in paths {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.is_empty() || names.contains(&name) {
            return Err(StateError::invalid(p, format!("database name {name:?} is empty or given twice")));
        }
        names.push(name);
    }
    Ok(names)
}

/// Captures databases (named by file name) into a snapshot; with a store, writes the
/// table captures and the manifest there (only what is not stored yet).
pub fn capture(paths: &[PathBuf], ignore: &IgnoreSpec, store: Option<&Store>) -> Result<Capture, StateError> {
    let names = database_names(paths)?;
    let results: Vec<Result<(DatabaseManifest, CaptureStats), StateError>> =
        paths.par_iter().zip(names.par_iter()).map(|(p, n)| capture_database(p, n, ignore, store)).collect();
    let mut databases = Vec::with_capacity(paths.len());
    let mut stats = CaptureStats::default();
    for r in results {
        let (db, s) = r?;
        stats.databases += 1;
        stats.tables += s.tables;
        stats.rows += s.rows;
        stats.bytes += s.bytes;
        stats.new_objects += s.new_objects;
        databases.push(db);
    }
    databases.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    let snapshot = Snapshot { databases, ignore: ignore.specs(), kind: SNAPSHOT_KIND.to_string() };
    let digest = match store {
        Some(s) => {
            let (digest, written) = s.put_snapshot(&snapshot)?;
            stats.new_snapshot = written;
            digest
        }
        None => snapshot.digest(),
    };
    Ok(Capture { snapshot, digest, stats })
}

/// Captures one database in one read transaction.
pub fn capture_database(
    path: &Path,
    name: &str,
    ignore: &IgnoreSpec,
    store: Option<&Store>,
) -> Result<(DatabaseManifest, CaptureStats), StateError> {
    let conn = open_read_only(path)?;
    let (tables, schema, ignored_tables) = read_schema(&conn, path, ignore)?;
    let mut stats = CaptureStats { databases: 1, ..CaptureStats::default() };
    let mut entries = Vec::with_capacity(tables.len());
    for table in &tables {
        let (entry, bytes, new) = capture_table(&conn, path, table, store)?;
        stats.tables += 1;
        stats.rows += entry.rows;
        stats.bytes += bytes;
        stats.new_objects += usize::from(new);
        entries.push(entry);
    }
    conn.execute_batch("COMMIT").map_err(StateError::sqlite(path))?;
    Ok((DatabaseManifest { ignored_tables, name: name.to_string(), schema, tables: entries }, stats))
}

/// The header line of a table capture.
pub fn table_header(table: &TableInfo) -> TableHeader {
    TableHeader {
        columns: table.columns.clone(),
        ddl: table.ddl.clone(),
        ignored_columns: table.ignored_columns.clone(),
        key: table.key.clone(),
        kind: TABLE_KIND.to_string(),
        order: table.order,
        table: table.name.clone(),
        without_rowid: table.without_rowid,
    }
}

/// Captures one table: returns its manifest entry, uncompressed size, and whether a new
/// object was stored. Tables are hashed first; only a table whose digest the store does not
/// hold yet is read a second time (same read transaction, so the same rows) and compressed
/// into the store. An unchanged table thus costs one read and no compression.
fn capture_table(
    conn: &Connection,
    path: &Path,
    table: &TableInfo,
    store: Option<&Store>,
) -> Result<(TableEntry, u64, bool), StateError> {
    let (digest, bytes, count, _) = stream_table(conn, path, table, None)?;
    let new = match store {
        Some(s) if !s.object_path(&digest).is_file() => {
            let (again, _, _, temp) = stream_table(conn, path, table, Some(s))?;
            match temp {
                Some(t) if again == digest => s.put_object(&digest, t)?,
                _ => {
                    let message = format!("table {} read differently twice in one transaction", table.name);
                    return Err(StateError::invalid(path, message));
                }
            }
        }
        _ => false,
    };
    let entry = TableEntry {
        columns: table.columns.clone(),
        ddl: table.ddl.clone(),
        digest,
        key: table.key.clone(),
        name: table.name.clone(),
        rows: count,
    };
    Ok((entry, bytes, new))
}

/// Streams one table's capture bytes into a hasher (and a compressed temporary file in
/// `store`): returns (digest, uncompressed bytes, rows, temporary file).
fn stream_table(
    conn: &Connection,
    path: &Path,
    table: &TableInfo,
    store: Option<&Store>,
) -> Result<(String, u64, u64, Option<tempfile::TempPath>), StateError> {
    let err = || StateError::sqlite(path);
    let mut sink = ChunkSink::new(store)?;
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    serde_json::to_writer(&mut buf, &table_header(table)).map_err(|e| StateError::invalid(path, e.to_string()))?;
    buf.push(b'\n');
    let mut stmt = conn.prepare_cached(&table.select).map_err(err())?;
    let ncols = table.columns.len();
    let mut rows = stmt.query([]).map_err(err())?;
    let mut count = 0u64;
    while let Some(row) = rows.next().map_err(err())? {
        buf.push(b'[');
        for i in 0..ncols {
            if i > 0 {
                buf.push(b',');
            }
            encode_ref(row.get_ref(i).map_err(err())?, &mut buf);
        }
        buf.extend_from_slice(b"]\n");
        count += 1;
        if buf.len() >= CHUNK {
            buf = sink.send(buf).map_err(StateError::io(path))?;
        }
    }
    sink.send(buf).map_err(StateError::io(path))?;
    let (digest, bytes, temp) = sink.finish().map_err(StateError::io(path))?;
    Ok((digest, bytes, count, temp))
}

/// Hashes (and optionally compresses) the bytes of one table capture.
struct ObjectWriter {
    hasher: Sha256,
    bytes: u64,
    encoder: Option<(zstd::stream::write::Encoder<'static, BufWriter<File>>, tempfile::TempPath)>,
}

impl ObjectWriter {
    fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        self.hasher.update(chunk);
        self.bytes += chunk.len() as u64;
        if let Some((enc, _)) = &mut self.encoder {
            enc.write_all(chunk)?;
        }
        Ok(())
    }

    fn finish(self) -> std::io::Result<(String, u64, Option<tempfile::TempPath>)> {
        let digest = hex(&self.hasher.finalize());
        let temp = match self.encoder {
            Some((enc, temp)) => {
                enc.finish()?.flush()?;
                Some(temp)
            }
            None => None,
        };
        Ok((digest, self.bytes, temp))
    }
}

type WorkerResult = std::io::Result<ObjectWriter>;

/// The worker side of a `ChunkSink`: chunk sender, recycled-buffer receiver, thread.
type Worker = (SyncSender<Vec<u8>>, std::sync::mpsc::Receiver<Vec<u8>>, JoinHandle<WorkerResult>);

/// Chunks go to the writer inline for small tables; once a table outgrows one chunk, a
/// worker thread takes over hashing and compression, so reading overlaps them. At most
/// a few chunks are in flight.
struct ChunkSink {
    inline: Option<ObjectWriter>,
    worker: Option<Worker>,
}

impl ChunkSink {
    fn new(store: Option<&Store>) -> Result<ChunkSink, StateError> {
        let encoder = match store {
            Some(s) => {
                let (file, temp) = s.temp_file()?.into_parts();
                let enc = zstd::stream::write::Encoder::new(BufWriter::with_capacity(1 << 16, file), ZSTD_LEVEL)
                    .map_err(StateError::io(&*temp))?;
                Some((enc, temp))
            }
            None => None,
        };
        Ok(ChunkSink { inline: Some(ObjectWriter { hasher: Sha256::new(), bytes: 0, encoder }), worker: None })
    }

    /// Hands over a chunk; returns an empty buffer to fill next.
    fn send(&mut self, chunk: Vec<u8>) -> std::io::Result<Vec<u8>> {
        if self.worker.is_none() && chunk.len() >= CHUNK {
            if let Some(writer) = self.inline.take() {
                self.start_worker(writer);
            }
        }
        match (&mut self.inline, &self.worker) {
            (Some(w), _) => {
                w.write(&chunk)?;
                let mut chunk = chunk;
                chunk.clear();
                Ok(chunk)
            }
            (None, Some((tx, back, _))) => {
                if tx.send(chunk).is_err() {
                    return Err(self.worker_failure());
                }
                Ok(back.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK + 4096)))
            }
            (None, None) => Err(std::io::Error::other("capture writer already finished")),
        }
    }

    fn start_worker(&mut self, mut writer: ObjectWriter) {
        let (tx, rx) = sync_channel::<Vec<u8>>(3);
        let (back_tx, back_rx) = sync_channel::<Vec<u8>>(4);
        let handle = std::thread::spawn(move || {
            for mut chunk in rx {
                writer.write(&chunk)?;
                chunk.clear();
                let _ = back_tx.try_send(chunk);
            }
            Ok(writer)
        });
        self.worker = Some((tx, back_rx, handle));
    }

    fn worker_failure(&mut self) -> std::io::Error {
        match self.worker.take() {
            Some((tx, _, handle)) => {
                drop(tx);
                match handle.join() {
                    Ok(Err(e)) => e,
                    _ => std::io::Error::other("capture writer thread failed"),
                }
            }
            None => std::io::Error::other("capture writer thread failed"),
        }
    }

    /// Waits for the writer; returns (table digest, uncompressed bytes, temporary file).
    fn finish(mut self) -> std::io::Result<(String, u64, Option<tempfile::TempPath>)> {
        let writer = match (self.inline.take(), self.worker.take()) {
            (Some(w), _) => w,
            (None, Some((tx, _, handle))) => {
                drop(tx);
                handle.join().map_err(|_| std::io::Error::other("capture writer thread panicked"))??
            }
            (None, None) => return Err(std::io::Error::other("capture writer missing")),
        };
        writer.finish()
    }
}
