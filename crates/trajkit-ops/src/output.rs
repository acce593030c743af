//! Atomic, compressed output files (`trajkit_io::AtomicFile` under a compressor).

use std::io::{self, BufWriter, Stdout, Write};
use std::path::Path;

use trajkit_formats::input::Compression;
use trajkit_io::AtomicFile;
use trajkit_library::shards::FrameCompressor;

use crate::OpsError;

/// Uncompressed bytes per zstd frame of a `.zst` output: larger frames compress a little
/// faster and smaller (4 MiB: 1 % larger than one frame; 1 MiB frames 4 % larger and no
/// faster than the streaming encoder), and a frame is held in memory while it fills.
const ZSTD_FRAME: usize = 4 << 20;

/// A destination written to a temporary file and renamed into place by `finish`, so an
/// interrupted run never leaves a half-written file under the final name.
pub struct AtomicOutput {
    writer: Writer,
    /// The destination, named in errors.
    target: std::path::PathBuf,
}

enum Writer {
    Stdout(BufWriter<Stdout>),
    Plain(AtomicFile),
    Gzip(flate2::write::GzEncoder<AtomicFile>),
    Zstd(Frames),
}

/// A `.zst` output as a sequence of independent zstd frames (level 1) of about `ZSTD_FRAME`
/// bytes each; any zstd reader reads the file as one stream.
struct Frames {
    file: AtomicFile,
    /// Uncompressed bytes of the frame being filled.
    frame: Vec<u8>,
    /// Frames written so far.
    frames: u64,
    zstd: FrameCompressor,
}

impl Frames {
    fn new(file: AtomicFile) -> io::Result<Frames> {
        Ok(Frames { file, frame: Vec::with_capacity(ZSTD_FRAME), frames: 0, zstd: FrameCompressor::new()? })
    }

    /// Compresses the frame being filled into the file.
    fn end_frame(&mut self) -> io::Result<()> {
        let compressed = self.zstd.compress(&self.frame)?;
        self.file.write_all(compressed)?;
        self.frame.clear();
        self.frames += 1;
        Ok(())
    }

    /// Ends the last frame (an empty output is one empty frame, a valid `.zst` file).
    fn finish(mut self) -> io::Result<AtomicFile> {
        if !self.frame.is_empty() || self.frames == 0 {
            self.end_frame()?;
        }
        Ok(self.file)
    }
}

impl Write for Frames {
    /// Ends the frame first where `buf` would take it past `ZSTD_FRAME`, so that the frame
    /// and the compressed buffer keep their first size (a larger `buf` is a frame of its own).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.frame.is_empty() && self.frame.len() + buf.len() > ZSTD_FRAME {
            self.end_frame()?;
        }
        self.frame.extend_from_slice(buf);
        Ok(buf.len())
    }
    /// Writes what the file holds; the frame being filled stays open (a frame per flush
    /// would make many small frames).
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl AtomicOutput {
    /// Opens `path` (`-` is stdout); compression by extension (.gz level 1, .zst level 1).
    /// zstd compresses on the writing thread: its own worker threads (`multithread`) cost
    /// 8 % more CPU in Gym `convert` on 2 cores for a larger file, and one thread compresses
    /// canonical JSON at about 800 MB/s, above what the readers produce.
    pub fn create(path: &Path) -> Result<Self, OpsError> {
        if path.as_os_str() == "-" {
            return Ok(AtomicOutput { writer: Writer::Stdout(BufWriter::new(io::stdout())), target: path.into() });
        }
        let file = AtomicFile::create(path).map_err(OpsError::write(path))?;
        let writer = match Compression::of(path) {
            Compression::Gzip => Writer::Gzip(flate2::write::GzEncoder::new(file, flate2::Compression::new(1))),
            Compression::Zstd => Writer::Zstd(Frames::new(file).map_err(OpsError::write(path))?),
            Compression::None => Writer::Plain(file),
        };
        Ok(AtomicOutput { writer, target: path.into() })
    }

    /// Finishes the compressed stream, then syncs and renames the file into place.
    pub fn finish(self) -> Result<(), OpsError> {
        let file = match self.writer {
            Writer::Stdout(mut w) => return w.flush().map_err(OpsError::write("-")),
            Writer::Plain(w) => Ok(w),
            Writer::Gzip(w) => w.finish(),
            Writer::Zstd(w) => w.finish(),
        };
        let file = file.map_err(OpsError::write(&self.target))?;
        file.finish().map(|_| ()).map_err(OpsError::write(&self.target))
    }
}

impl Write for AtomicOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.writer {
            Writer::Stdout(w) => w.write(buf),
            Writer::Plain(w) => w.write(buf),
            Writer::Gzip(w) => w.write(buf),
            Writer::Zstd(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.writer {
            Writer::Stdout(w) => w.flush(),
            Writer::Plain(w) => w.flush(),
            Writer::Gzip(w) => w.flush(),
            Writer::Zstd(w) => w.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Writes `chunks` to a `.zst` output and returns the file's bytes.
    fn written(dir: &Path, chunks: &[&[u8]]) -> Vec<u8> {
        let path = dir.join("out.jsonl.zst");
        let mut out = AtomicOutput::create(&path).unwrap();
        for c in chunks {
            out.write_all(c).unwrap();
        }
        out.finish().unwrap();
        std::fs::read(path).unwrap()
    }

    /// The frames' decompressed sizes, read one frame at a time.
    fn frame_sizes(mut bytes: &[u8]) -> Vec<u64> {
        let mut sizes = Vec::new();
        while !bytes.is_empty() {
            let len = zstd::zstd_safe::find_frame_compressed_size(bytes).unwrap();
            sizes.push(zstd::zstd_safe::get_frame_content_size(&bytes[..len]).unwrap().unwrap());
            bytes = &bytes[len..];
        }
        sizes
    }

    #[test]
    fn a_zst_output_is_frames_that_read_as_one_stream() {
        let dir = tempfile::tempdir().unwrap();
        // Writes of 1 MiB + 1 byte: a frame ends before the write that would take it past
        // 4 MiB, so three make a frame; a write larger than a frame is a frame of its own.
        let line: Vec<u8> = (0..(1 << 20)).map(|i| b"abcdefghij"[(i * 7 + i / 3) % 10]).chain([b'\n']).collect();
        let long = line.repeat(5);
        let mut writes = vec![line.as_slice(); 7];
        writes.insert(4, &long);
        let bytes = written(dir.path(), &writes);
        let n = line.len() as u64;
        assert_eq!(frame_sizes(&bytes), [3 * n, n, 5 * n, 3 * n]);
        let mut text = Vec::new();
        zstd::stream::read::Decoder::new(&bytes[..]).unwrap().read_to_end(&mut text).unwrap();
        assert_eq!(text, writes.concat());
    }

    #[test]
    fn an_empty_zst_output_is_one_empty_frame() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = written(dir.path(), &[]);
        assert_eq!(frame_sizes(&bytes), [0]);
    }
}
