//! One record of a shard read by seeking: the shard is opened at the record's zstd frame
//! (`Row::shard_offset`) and only that frame is decompressed, up to the end of the record
//! (`Row::frame_offset` bytes in), so the cost does not grow with the shard.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use trajkit_model::Trajectory;

use crate::error::LibraryError;
use crate::row::Row;

/// The record of `row` in the shard file `path`, its frame starting at byte `shard_offset`
/// and the record `frame_offset` bytes into the decompressed frame.
pub fn record_in_frame(
    path: &Path,
    row: &Row,
    shard_offset: u64,
    frame_offset: u64,
) -> Result<Trajectory, LibraryError> {
    let mut file = File::open(path).map_err(LibraryError::io(path))?;
    file.seek(SeekFrom::Start(shard_offset)).map_err(LibraryError::io(path))?;
    let frame = zstd::stream::read::Decoder::new(file).map_err(LibraryError::io(path))?.single_frame();
    let mut reader = BufReader::with_capacity(1 << 16, frame);
    let skipped =
        std::io::copy(&mut (&mut reader).take(frame_offset), &mut std::io::sink()).map_err(LibraryError::io(path))?;
    let mut text = Vec::new();
    if skipped == frame_offset {
        reader.read_until(b'\n', &mut text).map_err(LibraryError::io(path))?;
    }
    if text.last() != Some(&b'\n') {
        return Err(LibraryError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "the zstd frame at byte {shard_offset} ends before the record {frame_offset} bytes in (row {}, line {})",
                row.id, row.shard_line
            ),
        });
    }
    serde_json::from_slice(&text).map_err(|source| LibraryError::Json {
        path: path.to_path_buf(),
        line: row.shard_line,
        source,
    })
}
