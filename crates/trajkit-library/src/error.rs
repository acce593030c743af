//! Typed errors of the library crate; each names the file (and line) concerned.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: {source}")]
    Json { path: PathBuf, line: u64, source: serde_json::Error },
    #[error("{0}: not a trajkit library (no build.json with kind \"trajkit-library\")")]
    NotALibrary(PathBuf),
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{output}: {holder} is building this library (lock {lock}); wait for it, or pass --wait", holder = holder(*pid))]
    Locked { output: PathBuf, lock: PathBuf, pid: Option<u32> },
    #[error("build cancelled; no library written")]
    Cancelled,
    #[error("{path}: SQLite: {source}")]
    Sqlite { path: PathBuf, source: rusqlite::Error },
}

/// "another trajkit build (process N)", or without the pid when the lock file has none yet.
fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("another trajkit build (process {pid})"),
        None => "another trajkit build".into(),
    }
}

impl LibraryError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> LibraryError {
        let path = path.into();
        move |source| LibraryError::Io { path, source }
    }
}
