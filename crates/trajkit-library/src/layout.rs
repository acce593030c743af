//! The library directory on disk: refusing to replace what is not a library, building
//! in a sibling staging directory, and swapping it into place only when complete.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::error::LibraryError;

/// Prefix of staging and retired directories next to the output (`.NAME.trajkit-*`).
fn sibling(output: &Path, what: &str) -> PathBuf {
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "library".into());
    let parent = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    parent.join(format!(".{name}.trajkit-{what}-{}-{nanos}", std::process::id()))
}

/// `-o` may name a missing path, an empty directory or an existing trajkit library;
/// anything else is refused so a build never deletes somebody's data.
pub fn check_target(output: &Path) -> Result<(), LibraryError> {
    match std::fs::metadata(output) {
        Err(_) => Ok(()),
        Ok(m) if !m.is_dir() => Err(LibraryError::Invalid {
            path: output.to_path_buf(),
            message: "exists and is not a directory; refusing to replace it".into(),
        }),
        Ok(_) => {
            let empty = std::fs::read_dir(output).map_err(LibraryError::io(output))?.next().is_none();
            if empty || crate::read::Library::open(output).is_ok() {
                Ok(())
            } else {
                Err(LibraryError::Invalid {
                    path: output.to_path_buf(),
                    message: "exists and is not a trajkit library (no build.json of kind \"trajkit-library\"); \
                              refusing to replace it"
                        .into(),
                })
            }
        }
    }
}

/// An exclusive OS lock (`flock`) on `.NAME.trajkit.lock` beside the output, held for a
/// whole build so two builds never share staging directories; released when dropped (or
/// when the process dies). The file keeps the holder's pid for the other build's message.
pub struct BuildLock {
    _file: File,
}

/// The lock file of an output (not matched by the staging prefix `.NAME.trajkit-`).
fn lock_path(output: &Path) -> PathBuf {
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "library".into());
    trajkit_io::parent_dir(output).join(format!(".{name}.trajkit.lock"))
}

impl BuildLock {
    /// Takes the lock; when another build holds it, waits (`wait`) or fails naming its pid.
    pub fn acquire(output: &Path, wait: bool) -> Result<BuildLock, LibraryError> {
        let path = lock_path(output);
        let dir = trajkit_io::parent_dir(output);
        std::fs::create_dir_all(dir).map_err(LibraryError::io(dir))?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(LibraryError::io(&path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) if wait => file.lock().map_err(LibraryError::io(&path))?,
            Err(TryLockError::WouldBlock) => {
                return Err(LibraryError::Locked {
                    output: output.to_path_buf(),
                    pid: holder_pid(&mut file),
                    lock: path,
                })
            }
            Err(TryLockError::Error(e)) => return Err(LibraryError::Io { path, source: e }),
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(LibraryError::io(&path))?;
        Ok(BuildLock { _file: file })
    }
}

/// The pid the lock's holder wrote (none while it has not written it yet).
fn holder_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// A staging directory; removed on drop unless committed.
pub struct Staging {
    dir: PathBuf,
    output: PathBuf,
    committed: bool,
}

impl Staging {
    /// Creates `.NAME.trajkit-build-*` next to the output, removing leftovers of builds
    /// that were killed. The caller holds the output's `BuildLock`, so no live build owns
    /// any of them.
    pub fn create(output: &Path, _lock: &BuildLock) -> Result<Staging, LibraryError> {
        remove_leftovers(output);
        let dir = sibling(output, "build");
        std::fs::create_dir_all(dir.join("evaluation")).map_err(LibraryError::io(&dir))?;
        Ok(Staging { dir, output: output.to_path_buf(), committed: false })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Moves the finished library into place: the old one (if any) is renamed aside
    /// first, the new one renamed in, then the old one deleted.
    pub fn commit(mut self) -> Result<(), LibraryError> {
        let retired = sibling(&self.output, "old");
        let had_old = self.output.exists();
        if had_old {
            std::fs::rename(&self.output, &retired).map_err(LibraryError::io(&self.output))?;
        }
        if let Err(e) = std::fs::rename(&self.dir, &self.output) {
            if had_old {
                let _ = std::fs::rename(&retired, &self.output);
            }
            return Err(LibraryError::Io { path: self.output.clone(), source: e });
        }
        self.committed = true;
        if had_old {
            std::fs::remove_dir_all(&retired).map_err(LibraryError::io(&retired))?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn remove_leftovers(output: &Path) {
    let Some(name) = output.file_name().map(|n| n.to_string_lossy().into_owned()) else { return };
    let parent = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let prefix = format!(".{name}.trajkit-");
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Writes pretty JSON atomically (temporary file in the same directory, then rename),
/// streamed: `coverage.json` of a many-file corpus is megabytes (docs/PERFORMANCE.md, step 98).
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), LibraryError> {
    let mut out = trajkit_io::AtomicFile::create(path).map_err(LibraryError::io(path))?;
    serde_json::to_writer_pretty(&mut out, value).map_err(|e| match e.is_io() {
        true => LibraryError::Io { path: path.to_path_buf(), source: e.into() },
        false => LibraryError::Invalid { path: path.to_path_buf(), message: e.to_string() },
    })?;
    out.write_all(b"\n").map_err(LibraryError::io(path))?;
    out.finish().map(drop).map_err(LibraryError::io(path))
}

/// Writes bytes atomically (`trajkit_io`: temporary file, fsync, rename; mode 0666 less the umask).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), LibraryError> {
    trajkit_io::write_atomic(path, bytes).map_err(LibraryError::io(path))
}
