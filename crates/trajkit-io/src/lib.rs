//! The one way trajkit writes an output file: a temporary file in the destination's
//! directory, synced and renamed into place, so a killed run never leaves a half-written
//! file under the final name. Outputs get ordinary permissions (0666 less the umask), not
//! the private 0600 of a temporary file.
//!
//! A crate of its own because every writer (library layout, manifest, exports, gallery,
//! the binary) needs it, and the lowest crate they share, `trajkit-model`, does no I/O.
//! `CompressedFile` puts gzip or zstd frames under it, chosen by the file's extension.

mod compressed;

pub use compressed::{CompressedFile, Compression, FrameCompressor, Levels};

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Buffer between the caller's writes and the temporary file.
const BUFFER: usize = 1 << 20;

/// A file that appears under its final name only when `finish` succeeds; dropped
/// unfinished, its temporary file is removed.
pub struct AtomicFile {
    writer: BufWriter<File>,
    /// `None` when the target is a special file written in place (see `create`).
    temp: Option<tempfile::TempPath>,
    target: PathBuf,
}

/// The directory a path lives in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

impl AtomicFile {
    /// Creates the destination's directory if needed and a temporary file inside it.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        if target.file_name().is_none() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "the output path names no file"));
        }
        // A device, FIFO or socket (`-o /dev/null`, a named pipe) is written in place:
        // renaming a file over it would replace the device with a regular file.
        if std::fs::metadata(target).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
            let file = std::fs::OpenOptions::new().write(true).open(target)?;
            let writer = BufWriter::with_capacity(BUFFER, file);
            return Ok(AtomicFile { writer, temp: None, target: target.to_path_buf() });
        }
        let dir = parent_dir(target);
        std::fs::create_dir_all(dir)?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(".trajkit-").suffix(".tmp");
        // The kernel applies the umask to the mode given at creation: 0666 & !umask.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let (file, temp) = builder.tempfile_in(dir)?.into_parts();
        Ok(AtomicFile {
            writer: BufWriter::with_capacity(BUFFER, file),
            temp: Some(temp),
            target: target.to_path_buf(),
        })
    }

    /// The final name.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes, syncs the data to disk and renames the file to its final name (a special
    /// file is only flushed).
    pub fn finish(self) -> io::Result<PathBuf> {
        let file = self.writer.into_inner().map_err(|e| e.into_error())?;
        if let Some(temp) = self.temp {
            file.sync_all()?;
            drop(file);
            temp.persist(&self.target).map_err(|e| e.error)?;
        }
        Ok(self.target)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

/// Writes `bytes` to `target` atomically.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::create(target)?;
    f.write_all(bytes)?;
    f.finish().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-o /dev/null` once renamed a file over the device; a named pipe stands in for it
    /// here (the same rule, and a failure cannot break the machine's /dev/null).
    #[cfg(unix)]
    #[test]
    fn a_special_file_is_written_in_place_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left beside it");
    }

    /// The mode of an ordinary new file here (`File::create` asks for 0666; the umask applies).
    #[cfg(unix)]
    fn ordinary_mode(dir: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        let probe = dir.join("probe");
        File::create(&probe).unwrap();
        std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn writes_whole_file_with_ordinary_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub/out.txt");
        write_atomic(&target, b"hello\n").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"hello\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, ordinary_mode(dir.path()));
            assert_ne!(mode, 0o600);
        }
        // Nothing but the output and the probe is left in the directory.
        let names: Vec<_> =
            std::fs::read_dir(dir.path().join("sub")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.txt")]);
    }

    #[test]
    fn unfinished_file_leaves_nothing_and_keeps_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.txt");
        std::fs::write(&target, b"old").unwrap();
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"new, half written").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let err = write_atomic(Path::new("/"), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
