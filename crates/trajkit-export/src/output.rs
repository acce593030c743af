//! Output files written atomically (`trajkit_io`), compressed by extension.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::ExportError;

/// Compression chosen by the file name's last extension, as inputs are read.
pub use trajkit_formats::input::Compression;

enum Sink {
    Plain(trajkit_io::AtomicFile),
    Gzip(flate2::write::GzEncoder<trajkit_io::AtomicFile>),
    Zstd(zstd::stream::write::Encoder<'static, trajkit_io::AtomicFile>),
}

/// A file that appears under its final name only once `finish` has succeeded
/// (`trajkit_io::AtomicFile` under a compressor chosen by the extension).
pub struct AtomicFile {
    sink: Sink,
    target: PathBuf,
}

pub use trajkit_io::parent_dir;

impl AtomicFile {
    /// Opens a temporary file beside `target`; compression follows `target`'s extension.
    pub fn create(target: &Path) -> Result<AtomicFile, ExportError> {
        let file = trajkit_io::AtomicFile::create(target).map_err(ExportError::io(target))?;
        let sink = match Compression::of(target) {
            Compression::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(file, flate2::Compression::new(6))),
            Compression::Zstd => {
                Sink::Zstd(zstd::stream::write::Encoder::new(file, 3).map_err(ExportError::io(target))?)
            }
            Compression::None => Sink::Plain(file),
        };
        Ok(AtomicFile { sink, target: target.to_path_buf() })
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        let r = match &mut self.sink {
            Sink::Plain(w) => w.write_all(bytes),
            Sink::Gzip(w) => w.write_all(bytes),
            Sink::Zstd(w) => w.write_all(bytes),
        };
        r.map_err(ExportError::io(&self.target))
    }

    /// Ends the compressed stream and renames the file into place.
    pub fn finish(self) -> Result<PathBuf, ExportError> {
        let target = self.target;
        let file = match self.sink {
            Sink::Plain(w) => Ok(w),
            Sink::Gzip(w) => w.finish(),
            Sink::Zstd(w) => w.finish(),
        };
        file.and_then(trajkit_io::AtomicFile::finish).map_err(ExportError::io(&target))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.sink {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
            Sink::Zstd(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
            Sink::Zstd(w) => w.flush(),
        }
    }
}

/// Writes `bytes` to `target` atomically (uncompressed whatever the name says).
pub fn write_atomic(target: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    trajkit_io::write_atomic(target, bytes).map_err(ExportError::io(target))
}
