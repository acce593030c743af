//! Typed errors of the export crate; each names the file (and line or field) concerned.

use std::path::PathBuf;

/// What can stop an export or a scoring run.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Library(#[from] trajkit_library::LibraryError),
    #[error("{path}:{line}: {message}")]
    Input { path: PathBuf, line: u64, message: String },
    #[error("{0}")]
    Usage(String),
    #[error("{path}: Parquet: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("record {id}: {message}")]
    Record { id: String, message: String },
    #[error("export cancelled; nothing written")]
    Cancelled,
}

impl ExportError {
    /// A closure mapping an I/O error on `path` into this type.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ExportError {
        let path = path.into();
        move |source| ExportError::Io { path, source }
    }
}
