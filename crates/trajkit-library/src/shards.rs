//! Canonical record shards (`canonical/part-NNNNN.jsonl.zst`): records in row order,
//! a new shard once the current one holds `max_bytes` of uncompressed JSON. Each shard is
//! a sequence of independent zstd frames, a new one at the first record boundary after
//! `frame_bytes` of JSON, so one record is read by seeking to its frame and decompressing
//! that frame alone; any zstd tool reads the file as one stream. Frame and shard
//! boundaries depend only on the records and frames are compressed one at a time, so
//! shards are byte-identical whatever `--threads` says.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use trajkit_io::FrameCompressor;

use crate::error::LibraryError;
use crate::row::Row;

/// Uncompressed JSON per zstd frame: reading one record decompresses at most this much
/// (plus the record). Chosen by measurement: docs/PERFORMANCE.md, seekable shards.
pub const FRAME_BYTES: u64 = 1 << 20;

/// zstd level of the shards (level 1: the build's output is on its critical path).
const LEVEL: i32 = 1;

/// Where `ShardWriter::append` put a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The shard, relative to the library root.
    pub shard: String,
    /// 1-based line of the record in its shard.
    pub line: u64,
    /// Byte offset in the shard file where the record's zstd frame starts.
    pub shard_offset: u64,
    /// Byte offset of the record in its decompressed frame.
    pub frame_offset: u64,
}

impl Placement {
    /// Records the placement in the record's row (`shard`, `shard_line`, `shard_offset`, `frame_offset`).
    pub fn fill(self, row: &mut Row) {
        row.shard = self.shard;
        row.shard_line = self.line;
        row.shard_offset = Some(self.shard_offset);
        row.frame_offset = Some(self.frame_offset);
    }
}

/// The shard being written: its file, the compressed bytes written so far, and its figures.
struct OpenShard {
    path: PathBuf,
    file: BufWriter<File>,
    written: u64,
    bytes: u64,
    line: u64,
}

/// Writes records into numbered zstd shards of independent frames.
pub struct ShardWriter {
    dir: PathBuf,
    max_bytes: u64,
    frame_bytes: u64,
    number: u32,
    current: Option<OpenShard>,
    /// Uncompressed JSON of the frame being filled.
    frame: Vec<u8>,
    zstd: FrameCompressor,
}

impl ShardWriter {
    /// Shards go to `dir` (created). `_workers` is kept for callers: frames are compressed
    /// one at a time on the calling thread (a frame is smaller than a zstd worker's job).
    pub fn new(dir: &Path, max_bytes: u64, _workers: usize) -> Result<ShardWriter, LibraryError> {
        std::fs::create_dir_all(dir).map_err(LibraryError::io(dir))?;
        Ok(ShardWriter {
            dir: dir.to_path_buf(),
            max_bytes: max_bytes.max(1),
            frame_bytes: FRAME_BYTES,
            number: 0,
            current: None,
            frame: Vec::new(),
            zstd: FrameCompressor::new(LEVEL).map_err(LibraryError::io(dir))?,
        })
    }

    /// Another frame size (measurements, and tests that want many frames from few records).
    pub fn with_frame_bytes(mut self, frame_bytes: u64) -> ShardWriter {
        self.frame_bytes = frame_bytes.max(1);
        self
    }

    fn name(number: u32) -> String {
        format!("canonical/part-{number:05}.jsonl.zst")
    }

    /// Appends one record (a JSON line); returns where it went.
    pub fn append(&mut self, record: &[u8]) -> Result<Placement, LibraryError> {
        if self.current.as_ref().is_some_and(|s| s.bytes >= self.max_bytes) {
            self.close_current()?;
            self.number += 1;
        }
        if self.current.is_none() {
            let path = self.dir.join(format!("part-{:05}.jsonl.zst", self.number));
            let file = File::create(&path).map_err(LibraryError::io(&path))?;
            let file = BufWriter::with_capacity(1 << 20, file);
            self.current = Some(OpenShard { path, file, written: 0, bytes: 0, line: 0 });
        }
        if self.frame.len() as u64 >= self.frame_bytes {
            self.end_frame()?;
        }
        let frame_offset = self.frame.len() as u64;
        self.frame.extend_from_slice(record);
        if !record.ends_with(b"\n") {
            self.frame.push(b'\n');
        }
        let shard = self
            .current
            .as_mut()
            .ok_or_else(|| LibraryError::Invalid { path: self.dir.clone(), message: "shard not open".into() })?;
        shard.bytes += record.len() as u64;
        shard.line += 1;
        Ok(Placement { shard: Self::name(self.number), line: shard.line, shard_offset: shard.written, frame_offset })
    }

    /// Compresses the frame being filled (if any) into the current shard.
    fn end_frame(&mut self) -> Result<(), LibraryError> {
        let Some(shard) = self.current.as_mut() else { return Ok(()) };
        if self.frame.is_empty() {
            return Ok(());
        }
        let compressed = self.zstd.compress(&self.frame).map_err(LibraryError::io(&shard.path))?;
        shard.file.write_all(compressed).map_err(LibraryError::io(&shard.path))?;
        shard.written += compressed.len() as u64;
        self.frame.clear();
        Ok(())
    }

    fn close_current(&mut self) -> Result<(), LibraryError> {
        self.end_frame()?;
        if let Some(mut shard) = self.current.take() {
            shard.file.flush().map_err(LibraryError::io(&shard.path))?;
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
