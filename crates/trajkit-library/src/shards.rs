//! Canonical record shards (`canonical/part-NNNNN.jsonl.zst`): records in row order,
//! a new shard once the current one holds `max_bytes` of uncompressed JSON. Shard
//! boundaries depend only on the records, and zstd's multi-threaded output does not
//! depend on the worker count, so shards are byte-identical whatever `--threads` says.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::LibraryError;

/// Writes records into numbered zstd shards.
pub struct ShardWriter {
    dir: PathBuf,
    max_bytes: u64,
    workers: u32,
    number: u32,
    current: Option<zstd::stream::write::Encoder<'static, BufWriter<File>>>,
    bytes: u64,
    line: u64,
}

impl ShardWriter {
    /// Shards go to `dir` (created); `workers` zstd threads (at least 1).
    pub fn new(dir: &Path, max_bytes: u64, workers: usize) -> Result<ShardWriter, LibraryError> {
        std::fs::create_dir_all(dir).map_err(LibraryError::io(dir))?;
        Ok(ShardWriter {
            dir: dir.to_path_buf(),
            max_bytes: max_bytes.max(1),
            workers: workers.clamp(1, 64) as u32,
            number: 0,
            current: None,
            bytes: 0,
            line: 0,
        })
    }

    fn name(number: u32) -> String {
        format!("canonical/part-{number:05}.jsonl.zst")
    }

    /// Appends one record (a JSON line); returns its shard name and 1-based line.
    pub fn append(&mut self, record: &[u8]) -> Result<(String, u64), LibraryError> {
        if self.current.is_some() && self.bytes >= self.max_bytes {
            self.close_current()?;
            self.number += 1;
        }
        let path = self.dir.join(format!("part-{:05}.jsonl.zst", self.number));
        if self.current.is_none() {
            let file = File::create(&path).map_err(LibraryError::io(&path))?;
            let mut enc = zstd::stream::write::Encoder::new(BufWriter::with_capacity(1 << 20, file), 1)
                .map_err(LibraryError::io(&path))?;
            // Multi-threaded mode even for one worker: its output is the same for any count.
            enc.multithread(self.workers).map_err(LibraryError::io(&path))?;
            self.current = Some(enc);
            self.bytes = 0;
            self.line = 0;
        }
        let enc = self
            .current
            .as_mut()
            .ok_or_else(|| LibraryError::Invalid { path: path.clone(), message: "shard not open".into() })?;
        enc.write_all(record).map_err(LibraryError::io(&path))?;
        if !record.ends_with(b"\n") {
            enc.write_all(b"\n").map_err(LibraryError::io(&path))?;
        }
        self.bytes += record.len() as u64;
        self.line += 1;
        Ok((Self::name(self.number), self.line))
    }

    fn close_current(&mut self) -> Result<(), LibraryError> {
        if let Some(enc) = self.current.take() {
            let path = self.dir.join(format!("part-{:05}.jsonl.zst", self.number));
            let mut w = enc.finish().map_err(LibraryError::io(&path))?;
            w.flush().map_err(LibraryError::io(&path))?;
        }
        Ok(())
    }

    /// Finishes the last shard; returns how many shards were written.
    pub fn finish(mut self) -> Result<u32, LibraryError> {
        let had = self.current.is_some();
        self.close_current()?;
        Ok(if had { self.number + 1 } else { 0 })
    }
}
