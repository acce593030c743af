//! The Python exception classes, one per kind of failure, carrying `path`, `line` and
//! `field` where the failure has them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use trajkit_export::ExportError;
use trajkit_formats::{FormatError, Rejection};
use trajkit_library::LibraryError;
use trajkit_ops::OpsError;
use trajkit_verify::redact::RulesError;

create_exception!(_native, TrajkitError, PyException, "Base class of every trajkit error.");
create_exception!(_native, UsageError, TrajkitError, "Bad arguments: an unknown format or option, a wrong value.");
create_exception!(
    _native,
    InputError,
    TrajkitError,
    "Nothing could be read: missing paths, unreadable or unrecognised files."
);
create_exception!(_native, RejectedRecordError, TrajkitError, "A record was rejected and strict mode was asked for.");
create_exception!(_native, BuildError, TrajkitError, "A library could not be built, read or exported.");

/// An exception of class `E` with `message` and the attributes `path`, `line`, `field`.
pub fn with_location<E: pyo3::PyTypeInfo>(
    py: Python<'_>,
    message: String,
    path: Option<&str>,
    line: Option<u64>,
    field: Option<&str>,
) -> PyErr {
    let err = PyErr::new::<E, _>(message);
    let value = err.value(py);
    // Attribute assignment on a fresh exception instance cannot fail in practice; if it
    // did, the exception still carries its message.
    let _ = value.setattr("path", path);
    let _ = value.setattr("line", line);
    let _ = value.setattr("field", field);
    err
}

/// A read driver failure as a Python exception: an unknown format or a broken mapping file is a
/// usage error, the rest input errors.
pub fn format_error(py: Python<'_>, e: &FormatError) -> PyErr {
    match e {
        FormatError::UnknownFormat { .. } => with_location::<UsageError>(py, e.to_string(), None, None, None),
        FormatError::Mapping { path, .. } => with_location::<UsageError>(py, e.to_string(), Some(path), None, None),
        FormatError::Io { path, .. } | FormatError::Report { path, .. } | FormatError::Empty { path } => {
            with_location::<InputError>(py, e.to_string(), Some(path), None, None)
        }
        FormatError::ReadFailed { path, line, .. } => {
            with_location::<InputError>(py, e.to_string(), Some(path), Some(*line), None)
        }
        _ => with_location::<InputError>(py, e.to_string(), None, None, None),
    }
}

/// The first problem of a rejected record as a `RejectedRecordError`.
pub fn rejected(py: Python<'_>, r: &Rejection) -> PyErr {
    let first = r.problems.first();
    let message = match first {
        Some(p) => format!("{}: {}: {}: {}", r.location(), p.json_path, p.reason.as_str(), p.message),
        None => format!("{}: {}", r.location(), r.reason.as_str()),
    };
    let err =
        with_location::<RejectedRecordError>(py, message, Some(&r.path), r.line, first.map(|p| p.json_path.as_str()));
    let _ = err.value(py).setattr("reason", r.reason.as_str());
    err
}

/// A failure on an engine thread, made a Python exception back on the calling thread.
pub enum Failed {
    Ops(OpsError),
    /// The call's worker threads could not be started.
    Threads(String),
}

impl From<OpsError> for Failed {
    fn from(e: OpsError) -> Self {
        Failed::Ops(e)
    }
}

impl From<rayon::ThreadPoolBuildError> for Failed {
    fn from(e: rayon::ThreadPoolBuildError) -> Self {
        Failed::Threads(format!("cannot start worker threads: {e}"))
    }
}

/// A worker failure as the most specific class its cause allows.
pub fn failed(py: Python<'_>, f: &Failed) -> PyErr {
    match f {
        Failed::Ops(e) => ops_error(py, e),
        Failed::Threads(m) => with_location::<TrajkitError>(py, m.clone(), None, None, None),
    }
}

/// An operation's typed error as its exception: bad arguments are `UsageError`, reading
/// `InputError`, libraries and exports `BuildError`, with the path and line it names.
pub fn ops_error(py: Python<'_>, e: &OpsError) -> PyErr {
    let message = e.to_string();
    match e {
        OpsError::Usage(_) => with_location::<UsageError>(py, message, None, None, None),
        OpsError::Read(f) => format_error(py, f),
        OpsError::Library(l) => library_error(py, message, l),
        OpsError::Export(x) => export_error(py, message, x),
        OpsError::Rules(r) => {
            let (RulesError::Io { path, .. } | RulesError::Toml { path, .. } | RulesError::Invalid { path, .. }) = r;
            let field = match r {
                RulesError::Invalid { what, .. } => Some(what.as_str()),
                _ => None,
            };
            with_location::<UsageError>(py, message, Some(&path.display().to_string()), None, field)
        }
        OpsError::Write { path, .. } => {
            with_location::<TrajkitError>(py, message, Some(&path.display().to_string()), None, None)
        }
        OpsError::Cancelled => with_location::<TrajkitError>(py, message, None, None, None),
    }
}

/// A library failure as `BuildError` with the file (and line) it names.
fn library_error(py: Python<'_>, message: String, e: &LibraryError) -> PyErr {
    let (path, line) = match e {
        LibraryError::Json { path, line, .. } => (Some(path), Some(*line)),
        LibraryError::Io { path, .. }
        | LibraryError::NotALibrary(path)
        | LibraryError::Invalid { path, .. }
        | LibraryError::Sqlite { path, .. } => (Some(path), None),
        LibraryError::Locked { output, .. } => (Some(output), None),
        _ => (None, None),
    };
    let path = path.map(|p| p.display().to_string());
    with_location::<BuildError>(py, message, path.as_deref(), line, None)
}

/// An export failure: bad names are `UsageError`, an unreadable input file (a chat
/// template) `InputError`, the rest `BuildError`.
fn export_error(py: Python<'_>, message: String, e: &ExportError) -> PyErr {
    match e {
        ExportError::Usage(_) => with_location::<UsageError>(py, message, None, None, None),
        ExportError::Library(l) => library_error(py, message, l),
        ExportError::Input { path, line, .. } => {
            with_location::<InputError>(py, message, Some(&path.display().to_string()), Some(*line), None)
        }
        ExportError::Io { path, .. } | ExportError::Parquet { path, .. } => {
            with_location::<BuildError>(py, message, Some(&path.display().to_string()), None, None)
        }
        _ => with_location::<BuildError>(py, message, None, None, None),
    }
}

/// Registers the classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("TrajkitError", py.get_type::<TrajkitError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("RejectedRecordError", py.get_type::<RejectedRecordError>())?;
    m.add("BuildError", py.get_type::<BuildError>())?;
    Ok(())
}
