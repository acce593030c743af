//! The Python exception classes, one per kind of failure, carrying `path`, `line` and
//! `field` where the failure has them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use trajkit_formats::{FormatError, Rejection};

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

/// A read driver failure as a Python exception: unknown format is a usage error, the rest input errors.
pub fn format_error(py: Python<'_>, e: &FormatError) -> PyErr {
    match e {
        FormatError::UnknownFormat { .. } => with_location::<UsageError>(py, e.to_string(), None, None, None),
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

/// A CLI-level failure (an `anyhow` chain) as the most specific class its cause allows.
pub fn command_error(py: Python<'_>, e: &anyhow::Error) -> PyErr {
    if let Some(f) = e.downcast_ref::<FormatError>() {
        return format_error(py, f);
    }
    if let Some(c) = e.downcast_ref::<clap::Error>() {
        return with_location::<UsageError>(py, c.to_string(), None, None, None);
    }
    with_location::<BuildError>(py, format!("{e:#}"), None, None, None)
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
