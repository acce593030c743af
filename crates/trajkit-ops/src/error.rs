//! Typed errors of the operations; each keeps the lower crate's error (with its file,
//! line or field) so the CLI prints it and Python maps it to an exception class.

use std::path::PathBuf;

/// What can stop `convert`, `build` or `export`.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// Bad arguments: no inputs, an unknown view or split, a bad value.
    #[error("{0}")]
    Usage(String),
    /// Reading the inputs failed before any record (no input, a bad outcomes file, ...).
    #[error(transparent)]
    Read(#[from] trajkit_formats::FormatError),
    /// Building or opening a library failed.
    #[error(transparent)]
    Library(#[from] trajkit_library::LibraryError),
    /// An export failed.
    #[error(transparent)]
    Export(#[from] trajkit_export::ExportError),
    /// A redaction rules or secrets file is unreadable or invalid.
    #[error(transparent)]
    Rules(#[from] trajkit_verify::redact::RulesError),
    /// An output file could not be created or written.
    #[error("{path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    /// The caller's cancellation flag was set (Ctrl-C in Python); nothing was written.
    #[error("cancelled; nothing written")]
    Cancelled,
}

impl OpsError {
    /// A closure mapping an I/O error on `path` into a write error.
    pub fn write(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> OpsError {
        let path = path.into();
        move |source| OpsError::Write { path, source }
    }
}
