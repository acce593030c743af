//! Outputs of the commands that write records (`convert`, `redact`, `replay`): standard
//! output, or a `trajkit_io::CompressedFile` at the fast levels.

use std::io::{self, BufWriter, Stdout, Write};
use std::path::Path;

use trajkit_io::{CompressedFile, Levels};

use crate::OpsError;

/// A destination written to a temporary file and renamed into place by `finish`, so an
/// interrupted run never leaves a half-written file under the final name.
pub struct AtomicOutput {
    writer: Writer,
}

enum Writer {
    Stdout(BufWriter<Stdout>),
    File(Box<CompressedFile>),
}

impl AtomicOutput {
    /// Opens `path` (`-` is stdout); compression by extension (.gz level 1, .zst level 1 in
    /// independent frames). zstd compresses on the writing thread: its own worker threads
    /// (`multithread`) cost 8 % more CPU in Gym `convert` on 2 cores for a larger file, and
    /// one thread compresses canonical JSON at about 800 MB/s, above what the readers produce.
    pub fn create(path: &Path) -> Result<Self, OpsError> {
        let writer = if path.as_os_str() == "-" {
            Writer::Stdout(BufWriter::new(io::stdout()))
        } else {
            Writer::File(Box::new(CompressedFile::create(path, Levels::FAST).map_err(OpsError::write(path))?))
        };
        Ok(AtomicOutput { writer })
    }

    /// Finishes the compressed stream, then syncs and renames the file into place.
    pub fn finish(self) -> Result<(), OpsError> {
        match self.writer {
            Writer::Stdout(mut w) => w.flush().map_err(OpsError::write("-")),
            Writer::File(w) => {
                let target = w.target().to_path_buf();
                w.finish().map(|_| ()).map_err(OpsError::write(&target))
            }
        }
    }
}

impl Write for AtomicOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.writer {
            Writer::Stdout(w) => w.write(buf),
            Writer::File(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.writer {
            Writer::Stdout(w) => w.flush(),
            Writer::File(w) => w.flush(),
        }
    }
}
