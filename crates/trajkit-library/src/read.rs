//! Reading a built library back, streaming: rows of the per-trajectory table, and each
//! row with its canonical record (rows and shard records are in the same order).

use std::fs::File;
use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};

use trajkit_model::Trajectory;

use crate::error::LibraryError;
use crate::row::Row;

/// The `kind` that marks a directory as a trajkit library in its `build.json`.
pub const LIBRARY_KIND: &str = "trajkit-library";

/// Relative path of the per-trajectory table.
pub const ROWS_PATH: &str = "evaluation/per_trajectory.jsonl.gz";

/// An opened library directory.
#[derive(Debug, Clone)]
pub struct Library {
    root: PathBuf,
    build: serde_json::Value,
}

impl Library {
    /// Opens `root`, checking that its `build.json` marks it as a trajkit library.
    pub fn open(root: &Path) -> Result<Library, LibraryError> {
        let path = root.join("build.json");
        let bytes = std::fs::read(&path).map_err(|_| LibraryError::NotALibrary(root.to_path_buf()))?;
        let build: serde_json::Value = serde_json::from_slice(&bytes).map_err(|source| LibraryError::Json {
            path: path.clone(),
            line: 1,
            source,
        })?;
        if build.get("kind").and_then(|k| k.as_str()) != Some(LIBRARY_KIND) {
            return Err(LibraryError::NotALibrary(root.to_path_buf()));
        }
        Ok(Library { root: root.to_path_buf(), build })
    }

    /// The library directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The parsed `build.json`.
    pub fn build_info(&self) -> &serde_json::Value {
        &self.build
    }

    /// Streams the per-trajectory rows in library order.
    pub fn rows(&self) -> Result<Rows, LibraryError> {
        let path = self.root.join(ROWS_PATH);
        let file = File::open(&path).map_err(LibraryError::io(&path))?;
        // Inflated on a thread of its own while the rows are parsed here.
        let inflated = crate::read_ahead::ReadAhead::new(flate2::read::MultiGzDecoder::new(file), "trajkit-rows")
            .map_err(LibraryError::io(&path))?;
        let reader: Box<dyn BufRead + Send> = Box::new(inflated);
        Ok(Rows { path, lines: reader.lines(), line: 0 })
    }

    /// The canonical record of `row`: its shard's zstd frame alone is decompressed (a
    /// library built before shards had frames is decompressed up to the record's line).
    /// For one record at a time (the viewer); streaming readers use [`Library::records`].
    pub fn record_at(&self, row: &Row) -> Result<Trajectory, LibraryError> {
        if let (Some(shard_offset), Some(frame_offset)) = (row.shard_offset, row.frame_offset) {
            let path = shard_path(&self.root, row, &self.root.join(ROWS_PATH))?;
            return crate::seek::record_in_frame(&path, row, shard_offset, frame_offset);
        }
        let mut records = Records { root: self.root.clone(), rows: Rows::empty(), shard: None, keep: |_: &Row| true };
        records.record_for(row)
    }

    /// Streams every row together with its canonical record.
    pub fn records(&self) -> Result<Records, LibraryError> {
        self.records_where(|_| true)
    }

    /// Streams the rows `keep` accepts, each with its canonical record. Records of other
    /// rows are skipped without being parsed (and shards none of them is in, unread), so a
    /// selective reader pays for decompression at most.
    pub fn records_where<F: FnMut(&Row) -> bool>(&self, keep: F) -> Result<Records<F>, LibraryError> {
        Ok(Records { root: self.root.clone(), rows: self.rows()?, shard: None, keep })
    }
}

/// Iterator over the rows of `evaluation/per_trajectory.jsonl.gz`.
pub struct Rows {
    path: PathBuf,
    lines: Lines<Box<dyn BufRead + Send>>,
    line: u64,
}

impl Rows {
    /// No rows (for a single-record reader that needs no row stream).
    fn empty() -> Rows {
        let reader: Box<dyn BufRead + Send> = Box::new(std::io::empty());
        Rows { path: PathBuf::new(), lines: reader.lines(), line: 0 }
    }
}

impl Iterator for Rows {
    type Item = Result<Row, LibraryError>;

    fn next(&mut self) -> Option<Self::Item> {
        let line = self.lines.next()?;
        self.line += 1;
        Some(match line {
            Ok(text) => serde_json::from_str(&text).map_err(|source| LibraryError::Json {
                path: self.path.clone(),
                line: self.line,
                source,
            }),
            Err(e) => Err(LibraryError::Io { path: self.path.clone(), source: e }),
        })
    }
}

/// `root`/`row.shard`, or an error naming `rows` when the shard name leaves the library.
fn shard_path(root: &Path, row: &Row, rows: &Path) -> Result<PathBuf, LibraryError> {
    if row.shard.contains("..") || Path::new(&row.shard).is_absolute() {
        return Err(LibraryError::Invalid {
            path: rows.to_path_buf(),
            message: format!("row {}: shard path {:?} leaves the library", row.id, row.shard),
        });
    }
    Ok(root.join(&row.shard))
}

/// The shard being read: its relative name, reader, and the last line number read.
struct OpenShard {
    name: String,
    path: PathBuf,
    reader: Box<dyn BufRead + Send>,
    line: u64,
}

/// A row filter that accepts every row.
pub type All = fn(&Row) -> bool;

/// Iterator over `(row, record)` pairs of the rows its filter accepts, opening shards as
/// the rows reach them.
pub struct Records<F = All> {
    root: PathBuf,
    rows: Rows,
    shard: Option<OpenShard>,
    keep: F,
}

impl<F: FnMut(&Row) -> bool> Records<F> {
    fn open_shard(&mut self, name: &str) -> Result<(), LibraryError> {
        let path = self.root.join(name);
        let file = File::open(&path).map_err(LibraryError::io(&path))?;
        let decoder = zstd::stream::read::Decoder::new(file).map_err(LibraryError::io(&path))?;
        let reader: Box<dyn BufRead + Send> = Box::new(BufReader::with_capacity(1 << 16, decoder));
        self.shard = Some(OpenShard { name: name.to_string(), path, reader, line: 0 });
        Ok(())
    }

    fn record_for(&mut self, row: &Row) -> Result<Trajectory, LibraryError> {
        if self.shard.as_ref().map(|s| s.name.as_str()) != Some(row.shard.as_str()) {
            shard_path(&self.root, row, &self.rows.path)?;
            self.open_shard(&row.shard)?;
        }
        let shard = self
            .shard
            .as_mut()
            .ok_or_else(|| LibraryError::Invalid { path: self.root.clone(), message: "no shard open".into() })?;
        let ends_early = |shard: &OpenShard| LibraryError::Invalid {
            path: shard.path.clone(),
            message: format!("ends before line {} (row {})", row.shard_line, row.id),
        };
        // Lines before the wanted one are skipped unparsed.
        while shard.line + 1 < row.shard_line {
            let n = shard.reader.skip_until(b'\n').map_err(LibraryError::io(&shard.path))?;
            if n == 0 {
                return Err(ends_early(shard));
            }
            shard.line += 1;
        }
        if shard.line + 1 == row.shard_line {
            let mut text = Vec::new();
            let n = shard.reader.read_until(b'\n', &mut text).map_err(LibraryError::io(&shard.path))?;
            if n == 0 {
                return Err(ends_early(shard));
            }
            shard.line += 1;
            return serde_json::from_slice(&text).map_err(|source| LibraryError::Json {
                path: shard.path.clone(),
                line: shard.line,
                source,
            });
        }
        Err(LibraryError::Invalid {
            path: shard.path.clone(),
            message: format!("row {} points back to line {} (rows out of shard order)", row.id, row.shard_line),
        })
    }
}

impl<F: FnMut(&Row) -> bool> Iterator for Records<F> {
    type Item = Result<(Row, Trajectory), LibraryError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let row = match self.rows.next()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            if (self.keep)(&row) {
                return Some(self.record_for(&row).map(|t| (row, t)));
            }
        }
    }
}
