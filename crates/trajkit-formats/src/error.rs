//! Typed errors of the formats crate.

/// Errors that stop reading a whole file (record-level problems are `Rejection`s).
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}:{line}: read failed after {line} lines: {source}")]
    ReadFailed { path: String, line: u64, source: std::io::Error },
    #[error("{path}: {message}")]
    Report { path: String, message: String },
    #[error("'{reference}' is a remote reference (not read)")]
    RemoteReference { reference: String },
    #[error("path '{reference}' escapes the input root {root}")]
    PathEscapesRoot { reference: String, root: String },
    #[error("{path}: not a recognised trajectory format{}", guess.as_ref().map(|g| format!(" (closest guess: {g})")).unwrap_or_default())]
    NotRecognised { path: String, guess: Option<String> },
    #[error("{path}: empty file")]
    Empty { path: String },
    #[error("internal error: {0}")]
    Internal(String),
    #[error("no input files found (looked for .json, .jsonl, .traj, optionally .gz/.zst)")]
    NoInput,
    #[error("mapping {path}: {message}")]
    Mapping { path: String, message: String },
    #[error("unknown format '{name}' (known: {known})")]
    UnknownFormat { name: String, known: String },
}
