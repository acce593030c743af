//! The library directory on disk: refusing to replace what is not a library, building
//! in a sibling staging directory, and swapping it into place only when complete.

use std::io::Write;
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

/// A staging directory; removed on drop unless committed.
pub struct Staging {
    dir: PathBuf,
    output: PathBuf,
    committed: bool,
}

impl Staging {
    /// Creates `.NAME.trajkit-build-*` next to the output, removing leftovers of builds
    /// that were killed (their staging directories are never a library in place).
    pub fn create(output: &Path) -> Result<Staging, LibraryError> {
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

/// Writes pretty JSON atomically (temporary file in the same directory, then rename).
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), LibraryError> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| LibraryError::Invalid { path: path.to_path_buf(), message: e.to_string() })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Writes bytes atomically (temporary file in the same directory, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), LibraryError> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(LibraryError::io(dir))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(LibraryError::io(dir))?;
    tmp.write_all(bytes).map_err(LibraryError::io(path))?;
    // Temporary files are private (0600); library files are for everyone who can read the directory.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(LibraryError::io(path))?;
    }
    tmp.persist(path).map_err(|e| LibraryError::Io { path: path.to_path_buf(), source: e.error })?;
    Ok(())
}
