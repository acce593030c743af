//! Typed errors of state capture, storage, diff and check; each names the file concerned.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{path}: SQLite: {error}")]
    Sqlite { path: PathBuf, error: rusqlite::Error },
    #[error("{path}:{line}: {error}")]
    Json { path: PathBuf, line: u64, error: serde_json::Error },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{path}: not supported: {message}")]
    Unsupported { path: PathBuf, message: String },
    #[error("{store}: no snapshot {digest} in the store")]
    NoSnapshot { store: PathBuf, digest: String },
    #[error("{path}: {message}")]
    Expect { path: PathBuf, message: String },
}

impl StateError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> StateError {
        let path = path.into();
        move |error| StateError::Io { path, error }
    }

    pub(crate) fn sqlite(path: impl Into<PathBuf>) -> impl FnOnce(rusqlite::Error) -> StateError {
        let path = path.into();
        move |error| StateError::Sqlite { path, error }
    }

    pub(crate) fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> StateError {
        StateError::Invalid { path: path.into(), message: message.into() }
    }
}
