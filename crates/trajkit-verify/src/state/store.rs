//! The content-addressed state store.
//!
//! ```text
//! STORE/objects/<first 2 hex>/<table digest>.jsonl.zst   one table capture (header line + rows)
//! STORE/snapshots/<state digest>.json                      one snapshot manifest
//! STORE/tmp/                                              temporary files, renamed into place
//! ```
//! A table capture is stored once under the SHA-256 of its uncompressed bytes; a snapshot
//! is the small manifest of table digests, stored under the SHA-256 of its own bytes. So
//! capturing an unchanged database again writes nothing new.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::StateError;
use super::schema::{RowOrder, SchemaObject};
use super::value::{hex, parse_row, Val};

/// `kind` of a snapshot manifest.
pub const SNAPSHOT_KIND: &str = "trajkit-state/1";
/// `kind` of a table capture's header line.
pub const TABLE_KIND: &str = "trajkit-table/1";

/// A state snapshot: per database, its tables' digests and its other schema objects.
/// Its canonical JSON (these fields, sorted, no whitespace) is what the state digest hashes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub databases: Vec<DatabaseManifest>,
    /// `--ignore` specs in force, sorted.
    pub ignore: Vec<String>,
    pub kind: String,
}

/// One database of a snapshot, named by its file name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatabaseManifest {
    /// Tables left out by `--ignore TABLE`.
    pub ignored_tables: Vec<String>,
    pub name: String,
    /// Indexes, triggers, views and virtual tables.
    pub schema: Vec<SchemaObject>,
    /// Tables sorted by name (bytewise).
    pub tables: Vec<TableEntry>,
}

/// One captured table: its shape and the digest of its capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableEntry {
    pub columns: Vec<String>,
    pub ddl: String,
    pub digest: String,
    pub key: Vec<String>,
    pub name: String,
    pub rows: u64,
}

/// First line of a table capture; the rest are rows, one JSON array of canonical values each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableHeader {
    pub columns: Vec<String>,
    pub ddl: String,
    pub ignored_columns: Vec<String>,
    pub key: Vec<String>,
    pub kind: String,
    pub order: RowOrder,
    pub table: String,
    pub without_rowid: bool,
}

impl Snapshot {
    /// The canonical bytes the state digest is computed over.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The state digest: SHA-256 (hex) of the canonical bytes.
    pub fn digest(&self) -> String {
        hex(&Sha256::digest(self.canonical_bytes()))
    }

    /// The database named `name`.
    pub fn database(&self, name: &str) -> Option<&DatabaseManifest> {
        self.databases.iter().find(|d| d.name == name)
    }
}

/// An opened store directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// Opens `root`, creating the layout when it does not exist yet.
    pub fn create(root: &Path) -> Result<Store, StateError> {
        for sub in ["objects", "snapshots", "tmp"] {
            let dir = root.join(sub);
            fs::create_dir_all(&dir).map_err(StateError::io(&dir))?;
        }
        Ok(Store { root: root.to_path_buf() })
    }

    /// Opens an existing store.
    pub fn open(root: &Path) -> Result<Store, StateError> {
        let snapshots = root.join("snapshots");
        if !snapshots.is_dir() {
            return Err(StateError::invalid(root, "not a trajkit state store (no snapshots/ directory)"));
        }
        Ok(Store { root: root.to_path_buf() })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the capture with table digest `digest` lives.
    pub fn object_path(&self, digest: &str) -> PathBuf {
        let prefix = digest.get(..2).unwrap_or("00");
        self.root.join("objects").join(prefix).join(format!("{digest}.jsonl.zst"))
    }

    fn snapshot_path(&self, digest: &str) -> PathBuf {
        self.root.join("snapshots").join(format!("{digest}.json"))
    }

    /// A temporary file in the store (same file system, so it can be renamed into place).
    pub(crate) fn temp_file(&self) -> Result<tempfile::NamedTempFile, StateError> {
        let dir = self.root.join("tmp");
        tempfile::Builder::new().prefix(".capture-").tempfile_in(&dir).map_err(StateError::io(&dir))
    }

    /// Moves a finished temporary table capture into place; false when it was already there.
    pub(crate) fn put_object(&self, digest: &str, temp: tempfile::TempPath) -> Result<bool, StateError> {
        let target = self.object_path(digest);
        if target.exists() {
            return Ok(false);
        }
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir).map_err(StateError::io(dir))?;
        }
        temp.persist(&target).map_err(|e| StateError::Io { path: target.clone(), error: e.error })?;
        Ok(true)
    }

    /// Writes a snapshot manifest unless it is already stored; returns (digest, written).
    pub fn put_snapshot(&self, snapshot: &Snapshot) -> Result<(String, bool), StateError> {
        let bytes = snapshot.canonical_bytes();
        let digest = hex(&Sha256::digest(&bytes));
        let target = self.snapshot_path(&digest);
        if target.exists() {
            return Ok((digest, false));
        }
        let mut temp = self.temp_file()?;
        temp.write_all(&bytes).map_err(StateError::io(temp.path()))?;
        temp.persist(&target).map_err(|e| StateError::Io { path: target.clone(), error: e.error })?;
        Ok((digest, true))
    }

    /// Resolves a full digest or a unique prefix (at least 6 hex digits) to a stored snapshot.
    pub fn resolve(&self, digest: &str) -> Result<String, StateError> {
        let none = || StateError::NoSnapshot { store: self.root.clone(), digest: digest.to_string() };
        if digest.len() < 6 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(none());
        }
        if self.snapshot_path(digest).is_file() {
            return Ok(digest.to_string());
        }
        let dir = self.root.join("snapshots");
        let mut found = Vec::new();
        for entry in fs::read_dir(&dir).map_err(StateError::io(&dir))? {
            let name = entry.map_err(StateError::io(&dir))?.file_name().to_string_lossy().into_owned();
            if let Some(d) = name.strip_suffix(".json").filter(|d| d.starts_with(digest)) {
                found.push(d.to_string());
            }
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(none()),
            n => Err(StateError::invalid(&dir, format!("digest prefix {digest} is ambiguous ({n} snapshots)"))),
        }
    }

    /// Reads a snapshot manifest, checking that its bytes hash to its name.
    pub fn snapshot(&self, digest: &str) -> Result<Snapshot, StateError> {
        let digest = self.resolve(digest)?;
        let path = self.snapshot_path(&digest);
        let bytes = fs::read(&path).map_err(StateError::io(&path))?;
        if hex(&Sha256::digest(&bytes)) != digest {
            return Err(StateError::invalid(&path, "snapshot bytes do not match their digest (store corrupted)"));
        }
        let snap: Snapshot =
            serde_json::from_slice(&bytes).map_err(|error| StateError::Json { path: path.clone(), line: 1, error })?;
        if snap.kind != SNAPSHOT_KIND {
            return Err(StateError::invalid(&path, format!("kind {:?}, expected {SNAPSHOT_KIND}", snap.kind)));
        }
        Ok(snap)
    }

    /// Opens a stored table capture for streaming.
    pub fn table(&self, digest: &str) -> Result<StoredTable, StateError> {
        let path = self.object_path(digest);
        let file = File::open(&path).map_err(StateError::io(&path))?;
        let decoder = zstd::stream::read::Decoder::new(file).map_err(StateError::io(&path))?;
        let mut reader = TableReader {
            path,
            expected: digest.to_string(),
            input: BufReader::with_capacity(1 << 16, decoder),
            hasher: Sha256::new(),
            line: 0,
            buf: Vec::new(),
            done: false,
            width: 0,
        };
        let header = reader.next_line()?.ok_or_else(|| StateError::invalid(&reader.path, "empty table capture"))?;
        let header: TableHeader = serde_json::from_slice(&header).map_err(|error| StateError::Json {
            path: reader.path.clone(),
            line: 1,
            error,
        })?;
        if header.kind != TABLE_KIND {
            return Err(StateError::invalid(&reader.path, format!("kind {:?}, expected {TABLE_KIND}", header.kind)));
        }
        Ok(reader.with_header(header))
    }
}

/// Streams the rows of one stored table capture, verifying its digest at the end.
pub struct TableReader {
    path: PathBuf,
    expected: String,
    input: BufReader<zstd::stream::read::Decoder<'static, BufReader<File>>>,
    hasher: Sha256,
    line: u64,
    buf: Vec<u8>,
    done: bool,
    width: usize,
}

/// A stored table capture: its header and a row stream.
pub struct StoredTable {
    pub header: TableHeader,
    pub rows: TableReader,
}

impl TableReader {
    fn with_header(mut self, header: TableHeader) -> StoredTable {
        self.width = header.columns.len();
        StoredTable { header, rows: self }
    }

    /// Moves reading (decompression, hashing, parsing) to its own thread, which stays a few
    /// batches ahead: diffing two stored tables then uses two cores.
    pub fn prefetch(mut self) -> Prefetched {
        const BATCH: usize = 2048;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Vec<Vec<Val>>, StateError>>(4);
        std::thread::spawn(move || loop {
            let mut batch = Vec::with_capacity(BATCH);
            let end = loop {
                match self.next_row() {
                    Ok(Some(row)) => {
                        batch.push(row);
                        if batch.len() == BATCH {
                            break false;
                        }
                    }
                    Ok(None) => break true,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            };
            if (!batch.is_empty() && tx.send(Ok(batch)).is_err()) || end {
                return;
            }
        });
        Prefetched { rx, current: Vec::new().into_iter() }
    }

    /// The next line (without its newline), hashing it; `None` at the end.
    fn next_line(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        self.buf.clear();
        let n = self.input.read_until(b'\n', &mut self.buf).map_err(StateError::io(&self.path))?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        self.hasher.update(&self.buf);
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        Ok(Some(std::mem::take(&mut self.buf)))
    }

    /// The next row, or `None` at the end (after checking the digest).
    pub fn next_row(&mut self) -> Result<Option<Vec<Val>>, StateError> {
        if self.done {
            return Ok(None);
        }
        let Some(line) = self.next_line()? else {
            self.done = true;
            let got = hex(&std::mem::take(&mut self.hasher).finalize());
            if got != self.expected {
                return Err(StateError::invalid(
                    &self.path,
                    "table capture does not match its digest (store corrupted)",
                ));
            }
            return Ok(None);
        };
        let row = parse_row(&line, self.width)
            .ok_or_else(|| StateError::invalid(&self.path, format!("line {}: not a canonical row", self.line)))?;
        self.buf = line;
        Ok(Some(row))
    }
}

/// Rows read ahead by a `TableReader` on its own thread.
pub struct Prefetched {
    rx: std::sync::mpsc::Receiver<Result<Vec<Vec<Val>>, StateError>>,
    current: std::vec::IntoIter<Vec<Val>>,
}

impl Prefetched {
    /// The next row, or `None` at the end (the reader has verified the digest by then).
    pub fn next_row(&mut self) -> Result<Option<Vec<Val>>, StateError> {
        loop {
            if let Some(row) = self.current.next() {
                return Ok(Some(row));
            }
            match self.rx.recv() {
                Ok(batch) => self.current = batch?.into_iter(),
                Err(_) => return Ok(None),
            }
        }
    }
}

/// Reads everything left (used to drain a reader and verify its digest).
pub fn drain(reader: &mut TableReader) -> Result<u64, StateError> {
    let mut n = 0;
    while reader.next_row()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// Reads a whole file into memory (small files: manifests, expectations).
pub(crate) fn read_small(path: &Path) -> Result<Vec<u8>, StateError> {
    let mut buf = Vec::new();
    File::open(path).and_then(|mut f| f.read_to_end(&mut buf)).map_err(StateError::io(path))?;
    Ok(buf)
}
