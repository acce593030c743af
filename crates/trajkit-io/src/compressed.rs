//! Output files compressed by their extension (`.gz`, `.zst`) on top of `AtomicFile`, for
//! `convert`, `redact`, `replay` and the exports; the library's shards use `FrameCompressor`
//! alone (the library's rows file, inside the build's staging folder, deflates on a thread
//! of its own: `trajkit-library` `rows_out.rs`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::AtomicFile;

/// Uncompressed bytes per zstd frame of a `.zst` output: larger frames compress a little
/// faster and smaller (4 MiB: 1 % larger than one frame; 1 MiB frames 4 % larger and no
/// faster than the streaming encoder), and a frame is held in memory while it fills.
const ZSTD_FRAME: usize = 4 << 20;

/// Compression of a file, from its extension (the same rule for reading and writing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// Compression named by a path's last extension.
    pub fn of(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Compression::Gzip,
            Some("zst") | Some("zstd") => Compression::Zstd,
            _ => Compression::None,
        }
    }
}

/// How a `CompressedFile` compresses, whichever of gzip and zstd its extension asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Levels {
    pub gzip: u32,
    pub zstd: i32,
    /// zstd as independent frames of `ZSTD_FRAME` bytes (faster) rather than one stream
    /// (smaller where text repeats further apart than a frame).
    pub zstd_frames: bool,
}

impl Levels {
    /// For outputs on a command's critical path (`convert`, `redact`, `replay`): gzip 1,
    /// zstd 1 in frames.
    pub const FAST: Levels = Levels { gzip: 1, zstd: 1, zstd_frames: true };
    /// For files made to be published (exports): gzip 6, zstd 3 in one stream (frames made
    /// a full-view export of the benchmark library 2.5 times larger: its rollouts repeat).
    pub const SMALL: Levels = Levels { gzip: 6, zstd: 3, zstd_frames: false };
}

/// zstd frames compressed whole, one at a time: no frame depends on another, and zstd never
/// takes the slower external-dictionary path that a streaming encoder's ring buffer sends
/// most blocks through (`convert`: 3.5 % less CPU, docs/PERFORMANCE.md, step 122).
pub struct FrameCompressor {
    compressor: zstd::bulk::Compressor<'static>,
    compressed: Vec<u8>,
}

impl FrameCompressor {
    /// A compressor at `level`; its buffer grows to the largest frame's bound.
    pub fn new(level: i32) -> io::Result<FrameCompressor> {
        Ok(FrameCompressor { compressor: zstd::bulk::Compressor::new(level)?, compressed: Vec::new() })
    }

    /// `frame` as one zstd frame (its size written in the frame's header).
    pub fn compress(&mut self, frame: &[u8]) -> io::Result<&[u8]> {
        self.compressed.clear();
        self.compressed.reserve(zstd::zstd_safe::compress_bound(frame.len()));
        let n = self.compressor.compress_to_buffer(frame, &mut self.compressed)?;
        Ok(&self.compressed[..n])
    }
}

/// An `AtomicFile` under the compressor its extension names; it appears under its final
/// name only once `finish` has ended the compressed stream.
pub struct CompressedFile {
    writer: Writer,
}

enum Writer {
    Plain(AtomicFile),
    Gzip(flate2::write::GzEncoder<AtomicFile>),
    Zstd(Frames),
    ZstdStream(zstd::stream::write::Encoder<'static, AtomicFile>),
}

impl CompressedFile {
    /// Opens a temporary file beside `target`; compression follows `target`'s extension.
    pub fn create(target: &Path, levels: Levels) -> io::Result<CompressedFile> {
        let file = AtomicFile::create(target)?;
        let writer = match Compression::of(target) {
            Compression::Gzip => {
                Writer::Gzip(flate2::write::GzEncoder::new(file, flate2::Compression::new(levels.gzip)))
            }
            Compression::Zstd if levels.zstd_frames => Writer::Zstd(Frames::new(file, levels.zstd)?),
            Compression::Zstd => Writer::ZstdStream(zstd::stream::write::Encoder::new(file, levels.zstd)?),
            Compression::None => Writer::Plain(file),
        };
        Ok(CompressedFile { writer })
    }

    /// The final name.
    pub fn target(&self) -> &Path {
        match &self.writer {
            Writer::Plain(w) => w.target(),
            Writer::Gzip(w) => w.get_ref().target(),
            Writer::Zstd(w) => w.file.target(),
            Writer::ZstdStream(w) => w.get_ref().target(),
        }
    }

    /// Ends the compressed stream, then syncs and renames the file into place.
    pub fn finish(self) -> io::Result<PathBuf> {
        let file = match self.writer {
            Writer::Plain(w) => w,
            Writer::Gzip(w) => w.finish()?,
            Writer::Zstd(w) => w.finish()?,
            Writer::ZstdStream(w) => w.finish()?,
        };
        file.finish()
    }
}

impl Write for CompressedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.writer {
            Writer::Plain(w) => w.write(buf),
            Writer::Gzip(w) => w.write(buf),
            Writer::Zstd(w) => w.write(buf),
            Writer::ZstdStream(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.writer {
            Writer::Plain(w) => w.flush(),
            Writer::Gzip(w) => w.flush(),
            Writer::Zstd(w) => w.flush(),
            Writer::ZstdStream(w) => w.flush(),
        }
    }
}

/// A `.zst` output as a sequence of independent zstd frames of about `ZSTD_FRAME` bytes each;
/// any zstd reader reads the file as one stream.
struct Frames {
    file: AtomicFile,
    /// Uncompressed bytes of the frame being filled.
    frame: Vec<u8>,
    /// Frames written so far.
    frames: u64,
    zstd: FrameCompressor,
}

impl Frames {
    fn new(file: AtomicFile, level: i32) -> io::Result<Frames> {
        Ok(Frames { file, frame: Vec::with_capacity(ZSTD_FRAME), frames: 0, zstd: FrameCompressor::new(level)? })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Writes `chunks` to `name` in a fresh directory and returns the file's bytes.
    fn written(dir: &Path, name: &str, levels: Levels, chunks: &[&[u8]]) -> Vec<u8> {
        let path = dir.join(name);
        let mut out = CompressedFile::create(&path, levels).unwrap();
        assert_eq!(out.target(), path);
        for c in chunks {
            out.write_all(c).unwrap();
        }
        assert_eq!(out.finish().unwrap(), path);
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
        let bytes = written(dir.path(), "out.jsonl.zst", Levels::FAST, &writes);
        let n = line.len() as u64;
        assert_eq!(frame_sizes(&bytes), [3 * n, n, 5 * n, 3 * n]);
        let mut text = Vec::new();
        zstd::stream::read::Decoder::new(&bytes[..]).unwrap().read_to_end(&mut text).unwrap();
        assert_eq!(text, writes.concat());
    }

    #[test]
    fn an_empty_zst_output_is_one_empty_frame() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = written(dir.path(), "out.jsonl.zst", Levels::FAST, &[]);
        assert_eq!(frame_sizes(&bytes), [0]);
    }

    /// The levels reach the compressors: repetitive text compresses smaller at the publishing
    /// levels than at the fast ones, and every form reads back as what was written.
    #[test]
    fn each_extension_gets_its_compressor_at_the_given_levels() {
        let dir = tempfile::tempdir().unwrap();
        let text: Vec<u8> =
            (0..200_000u32).flat_map(|i| format!("{{\"step\":{},\"v\":{}}}\n", i % 977, i % 13).into_bytes()).collect();
        let write = |name: &str, levels| written(dir.path(), name, levels, &[&text]);
        assert_eq!(write("a.jsonl", Levels::FAST), text);
        for name in ["a.jsonl.gz", "a.jsonl.zst"] {
            let (fast, small) = (write(name, Levels::FAST), write(name, Levels::SMALL));
            assert!(small.len() < fast.len(), "{name}: {} against {}", small.len(), fast.len());
            for bytes in [fast, small] {
                let mut back = Vec::new();
                match Compression::of(Path::new(name)) {
                    Compression::Gzip => flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut back),
                    _ => zstd::stream::read::Decoder::new(&bytes[..]).unwrap().read_to_end(&mut back),
                }
                .unwrap();
                assert_eq!(back, text, "{name}");
            }
        }
    }

    /// The publishing levels write zstd as one stream: text that repeats further apart than
    /// a frame still compresses (the fast levels' frames cannot reach back past their start).
    #[test]
    fn the_publishing_levels_write_zstd_as_one_stream() {
        let dir = tempfile::tempdir().unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..1_500_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        // Three copies: frames of the fast levels hold two and one, the stream all three.
        let copies = [noise.as_slice(); 3];
        let stream = written(dir.path(), "s.zst", Levels::SMALL, &copies);
        let frames = written(dir.path(), "f.zst", Levels { zstd: 3, ..Levels::FAST }, &copies);
        assert_eq!(frame_sizes(&frames), [3_000_000, 1_500_000]);
        assert_eq!(zstd::zstd_safe::find_frame_compressed_size(&stream), Ok(stream.len()), "one frame");
        assert!(stream.len() < frames.len() * 2 / 3, "{} against {}", stream.len(), frames.len());
        let mut text = Vec::new();
        zstd::stream::read::Decoder::new(&stream[..]).unwrap().read_to_end(&mut text).unwrap();
        assert_eq!(text, copies.concat());
    }

    #[test]
    fn compression_follows_the_last_extension() {
        let of = |p: &str| Compression::of(Path::new(p));
        assert_eq!(of("a.jsonl.gz"), Compression::Gzip);
        assert_eq!(of("a.jsonl.zst"), Compression::Zstd);
        assert_eq!(of("a.zstd"), Compression::Zstd);
        assert_eq!(of("a.gz.jsonl"), Compression::None);
        assert_eq!(of("zst"), Compression::None);
    }
}
