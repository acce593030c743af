//! What can go wrong while serving, each mapped to an HTTP status by the server.

use std::path::PathBuf;

/// A request that could not be answered with the page it asked for.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The library could not be read (opening, index, shards).
    #[error(transparent)]
    Library(#[from] trajkit_library::LibraryError),
    /// An SQL error on the index or the search sidecar.
    #[error("{path}: {source}")]
    Sqlite { path: PathBuf, source: rusqlite::Error },
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// A path or query parameter is not valid (HTTP 400).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// No such page, trajectory or task (HTTP 404).
    #[error("not found: {0}")]
    NotFound(String),
    /// The library is being replaced or changed under a request (HTTP 503: reload).
    #[error("the library is being rebuilt: {0}")]
    Changing(String),
}

impl ViewError {
    /// The error for an SQL failure on `path`.
    pub fn sql(path: &std::path::Path) -> impl Fn(rusqlite::Error) -> ViewError + '_ {
        move |source| ViewError::Sqlite { path: path.to_path_buf(), source }
    }

    /// The HTTP status this error is answered with.
    pub fn status(&self) -> u16 {
        match self {
            ViewError::BadRequest(_) => 400,
            ViewError::NotFound(_) => 404,
            ViewError::Changing(_) => 503,
            _ => 500,
        }
    }
}
