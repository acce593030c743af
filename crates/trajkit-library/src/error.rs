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
    #[error("build cancelled; no library written")]
    Cancelled,
    #[error("{path}: SQLite: {source}")]
    Sqlite { path: PathBuf, source: rusqlite::Error },
}

impl LibraryError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> LibraryError {
        let path = path.into();
        move |source| LibraryError::Io { path, source }
    }
}
