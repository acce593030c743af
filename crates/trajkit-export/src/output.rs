//! Output files written atomically (temporary file + rename), compressed by extension.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::ExportError;

/// Compression chosen by the file name's last extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    pub fn of(path: &Path) -> Compression {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Compression::Gzip,
            Some("zst") | Some("zstd") => Compression::Zstd,
            _ => Compression::None,
        }
    }
}

enum Sink {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
}

/// A file that appears under its final name only once `finish` has succeeded.
pub struct AtomicFile {
    sink: Sink,
    temp: tempfile::TempPath,
    target: PathBuf,
}

/// The directory a path lives in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

impl AtomicFile {
    /// Opens a temporary file beside `target`; compression follows `target`'s extension.
    pub fn create(target: &Path) -> Result<AtomicFile, ExportError> {
        let dir = parent_dir(target);
        std::fs::create_dir_all(dir).map_err(ExportError::io(dir))?;
        let named = tempfile::Builder::new()
            .prefix(".trajkit-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(ExportError::io(dir))?;
        let (file, temp) = named.into_parts();
        let buffered = BufWriter::with_capacity(1 << 20, file);
        let sink = match Compression::of(target) {
            Compression::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(buffered, flate2::Compression::new(6))),
            Compression::Zstd => {
                Sink::Zstd(zstd::stream::write::Encoder::new(buffered, 3).map_err(ExportError::io(target))?)
            }
            Compression::None => Sink::Plain(buffered),
        };
        Ok(AtomicFile { sink, temp, target: target.to_path_buf() })
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

    /// Ends the compressed stream, flushes and renames the file into place.
    pub fn finish(self) -> Result<PathBuf, ExportError> {
        let target = self.target;
        let io = |e: std::io::Error| ExportError::Io { path: target.clone(), source: e };
        let file = match self.sink {
            Sink::Plain(w) => w.into_inner().map_err(|e| io(e.into_error()))?,
            Sink::Gzip(w) => w.finish().map_err(io)?.into_inner().map_err(|e| io(e.into_error()))?,
            Sink::Zstd(w) => w.finish().map_err(io)?.into_inner().map_err(|e| io(e.into_error()))?,
        };
        drop(file);
        self.temp.persist(&target).map_err(|e| io(e.error))?;
        Ok(target)
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

/// Writes `bytes` to `target` atomically (uncompressed unless the name says otherwise).
pub fn write_atomic(target: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    let mut f = AtomicFile::create(target)?;
    f.write_all(bytes)?;
    f.finish().map(|_| ())
}
