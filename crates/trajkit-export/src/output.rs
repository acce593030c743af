//! Output files written atomically and compressed by extension (`trajkit_io`) at the
//! publishing levels, with errors that name the file.

use std::io::Write;
use std::path::{Path, PathBuf};

use trajkit_io::{CompressedFile, Levels};

use crate::error::ExportError;

/// A file that appears under its final name only once `finish` has succeeded (gzip level 6
/// or zstd level 3 by the extension: exports are made to be published).
pub struct AtomicFile {
    file: CompressedFile,
}

pub use trajkit_io::parent_dir;

impl AtomicFile {
    /// Opens a temporary file beside `target`; compression follows `target`'s extension.
    pub fn create(target: &Path) -> Result<AtomicFile, ExportError> {
        let file = CompressedFile::create(target, Levels::SMALL).map_err(ExportError::io(target))?;
        Ok(AtomicFile { file })
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        self.file.write_all(bytes).map_err(|e| ExportError::io(self.file.target())(e))
    }

    /// Ends the compressed stream and renames the file into place.
    pub fn finish(self) -> Result<PathBuf, ExportError> {
        let target = self.file.target().to_path_buf();
        self.file.finish().map_err(ExportError::io(&target))
    }
}

/// Writes `bytes` to `target` atomically (uncompressed whatever the name says).
pub fn write_atomic(target: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    trajkit_io::write_atomic(target, bytes).map_err(ExportError::io(target))
}
