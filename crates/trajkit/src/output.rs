//! Atomic, compressed output files.

use std::fs::File;
use std::io::{self, BufWriter, Stdout, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// zstd level 1: 1.5x faster than level 3 on trajectory JSON for a slightly larger file.
const ZSTD_LEVEL: i32 = 1;

/// A destination written to a temporary file and renamed into place by `finish`, so an
/// interrupted run never leaves a half-written file under the final name.
pub struct AtomicOutput {
    writer: Writer,
    target: Option<(tempfile::TempPath, PathBuf)>,
}

enum Writer {
    Stdout(BufWriter<Stdout>),
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
}

impl AtomicOutput {
    /// Opens `path` (`-` is stdout); compression by extension (.gz level 1, .zst level 1).
    pub fn create(path: &Path, threads: usize) -> Result<Self> {
        if path.as_os_str() == "-" {
            return Ok(AtomicOutput { writer: Writer::Stdout(BufWriter::new(io::stdout())), target: None });
        }
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let named = tempfile::Builder::new()
            .prefix(".trajkit-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        let (file, temp) = named.into_parts();
        let buffered = BufWriter::with_capacity(1 << 20, file);
        let writer = match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Writer::Gzip(flate2::write::GzEncoder::new(buffered, flate2::Compression::new(1))),
            Some("zst") | Some("zstd") => {
                let mut z = zstd::stream::write::Encoder::new(buffered, ZSTD_LEVEL)?;
                if threads > 1 {
                    z.multithread(threads as u32)?;
                }
                Writer::Zstd(z)
            }
            _ => Writer::Plain(buffered),
        };
        Ok(AtomicOutput { writer, target: Some((temp, path.to_path_buf())) })
    }

    /// Finishes the compressed stream, flushes, and renames the file into place.
    pub fn finish(self) -> Result<()> {
        let file = match self.writer {
            Writer::Stdout(mut w) => {
                w.flush()?;
                None
            }
            Writer::Plain(w) => Some(w.into_inner().map_err(|e| e.into_error())?),
            Writer::Gzip(w) => Some(w.finish()?.into_inner().map_err(|e| e.into_error())?),
            Writer::Zstd(w) => Some(w.finish()?.into_inner().map_err(|e| e.into_error())?),
        };
        if let (Some(file), Some((temp, target))) = (file, self.target) {
            // No fsync: the rename already guarantees that a killed run leaves no
            // half-written file under the final name; durability is the OS's job.
            // The temporary file is private (0600); the output is an ordinary file.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
            }
            drop(file);
            temp.persist(&target).with_context(|| format!("cannot write {}", target.display()))?;
        }
        Ok(())
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
