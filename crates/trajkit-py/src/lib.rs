//! `trajkit._native`: the extension module of the Python package. Every function calls
//! the same functions as the CLI (`trajkit_formats::read_paths`, `trajkit_ops`, and the
//! CLI itself through `trajkit::cli::run`), runs the engine with the GIL released on a
//! per-call thread pool, and honours Ctrl-C within about 100 ms.

mod arrow;
mod errors;
mod library;
mod records;
mod scale;
mod stream;
mod wait;

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3_arrow::PySchema;
use trajkit_formats::ReadRequest;

use crate::stream::{Mode, Stream};

/// mimalloc, as in the `trajkit` binary: the engine's own allocations (parsed records,
/// Arrow buffers) go through it; Python's objects keep Python's allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs the `trajkit` command line (`argv[0]` is the program name) and returns its exit
/// status: the binary's flags, output and exit codes.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| trajkit::cli::run(argv))
}

/// Starts reading `paths`; `mode` is `records`, `arrow` or `reports`.
#[pyfunction]
#[pyo3(signature = (paths, mode, *, format=None, threads=None, outcomes=None, strict=false, max_record_mib=trajkit_ops::DEFAULT_MAX_RECORD_MIB))]
fn read_stream(
    paths: Vec<PathBuf>,
    mode: &str,
    format: Option<String>,
    threads: Option<usize>,
    outcomes: Option<PathBuf>,
    strict: bool,
    max_record_mib: u64,
) -> PyResult<Stream> {
    let mode = match mode {
        "records" => Mode::Records,
        "arrow" => Mode::Arrow,
        "reports" => Mode::Reports,
        other => return Err(pyo3::exceptions::PyValueError::new_err(format!("unknown mode {other:?}"))),
    };
    let req =
        ReadRequest { paths, format, outcomes, max_record_bytes: Some(trajkit_ops::record_bytes(max_record_mib)) };
    Ok(Stream::start(req, threads, mode, strict))
}

/// The Arrow schema of `read_arrow` rows, as a `pyarrow.Schema`.
#[pyfunction(name = "arrow_schema")]
fn rows_schema(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    PySchema::new(arrow::schema()).into_pyarrow(py)
}

/// `trajkit convert`: writes canonical JSON Lines to `output` atomically; returns
/// (records written or None when nothing was written, per-file reports as JSON, exit status).
#[pyfunction]
#[pyo3(signature = (paths, output, *, format=None, threads=None, outcomes=None, max_record_mib=trajkit_ops::DEFAULT_MAX_RECORD_MIB))]
fn convert(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    output: PathBuf,
    format: Option<String>,
    threads: Option<usize>,
    outcomes: Option<PathBuf>,
    max_record_mib: u64,
) -> PyResult<(Option<u64>, Vec<String>, u8)> {
    let req =
        ReadRequest { paths, format, outcomes, max_record_bytes: Some(trajkit_ops::record_bytes(max_record_mib)) };
    let result = wait::run(py, move |cancel| -> Result<_, errors::Failed> {
        let pool = wait::pool(threads)?;
        let silent = &mut trajkit_ops::Silent;
        Ok(pool.install(|| trajkit_ops::convert(&req, &output, &cancel, &mut |_, _| {}, silent))?)
    })?;
    let converted = result.map_err(|e| errors::failed(py, &e))?;
    let reports = converted.outcome.reports.iter().map(|r| serde_json::to_string(r).unwrap_or_default()).collect();
    Ok((converted.written, reports, converted.outcome.exit_code()))
}

/// `trajkit build` with these flags (as on the command line, after `build`); returns the
/// build summary as JSON. Raises RejectedRecordError when `--strict` stopped it.
#[pyfunction]
fn build(py: Python<'_>, flags: Vec<String>) -> PyResult<String> {
    let args = trajkit::api::parse_build(flags)
        .map_err(|e| errors::with_location::<errors::UsageError>(py, e.to_string(), None, None, None))?;
    let output = args.output.clone();
    let (req, threads) = (args.request(), args.read.threads);
    let result = wait::run(py, move |cancel| -> Result<_, errors::Failed> {
        let pool = wait::pool(threads)?;
        Ok(pool.install(|| trajkit_ops::build(&req, &wait::Cancel(cancel)))?)
    })?;
    let summary = result.map_err(|e| errors::failed(py, &e))?;
    Ok(build_summary(py, &output, &summary)?.to_string())
}

/// A finished build as Python gets it: its summary as JSON, or RejectedRecordError when
/// `--strict` stopped it (nothing written). Shared by `build` and the Ray build's finish.
pub(crate) fn build_summary(
    py: Python<'_>,
    output: &std::path::Path,
    summary: &trajkit_library::BuildSummary,
) -> PyResult<serde_json::Value> {
    if let Some(failure) = &summary.strict_failure {
        let message = format!("--strict: {failure}; no library written, {} is unchanged", output.display());
        return Err(errors::with_location::<errors::RejectedRecordError>(py, message, None, None, None));
    }
    if let Some(failure) = &summary.contamination_failure {
        let message =
            format!("--fail-on-contamination: {failure}; no library written, {} is unchanged", output.display());
        return Err(errors::with_location::<errors::BuildError>(py, message, None, None, None));
    }
    let json = serde_json::json!({
        "library": output.display().to_string(),
        "files": summary.files,
        "unreadable": summary.unreadable,
        "records": summary.records,
        "trajectories": summary.trajectories,
        "rejected": summary.rejected,
        "shards": summary.shards,
        "warnings": summary.warnings,
    });
    Ok(json)
}

/// `trajkit export` with these flags (as on the command line, after `export`), on its own
/// thread pool; returns the CLI's exit status (0 rows written, 1 no row matched).
#[pyfunction]
fn export(py: Python<'_>, flags: Vec<String>) -> PyResult<u8> {
    let args = trajkit::api::parse_export(flags)
        .map_err(|e| errors::with_location::<errors::UsageError>(py, e.to_string(), None, None, None))?;
    let (req, threads) = (args.request(), args.threads);
    let result = wait::run(py, move |cancel| -> Result<_, errors::Failed> {
        let pool = wait::pool(threads)?;
        Ok(pool.install(|| trajkit_ops::export(&req, &cancel))?)
    })?;
    let exported = result.map_err(|e| errors::failed(py, &e))?;
    Ok(u8::from(exported.summary.entry.rows == 0))
}

/// Read-only SQL on a library's index as a `pyarrow.Table`.
#[pyfunction]
fn query(py: Python<'_>, library: PathBuf, sql: String) -> PyResult<Bound<'_, PyAny>> {
    let batch = wait::run(py, move |_| library::query(library, sql))?
        .map_err(|m| errors::with_location::<errors::BuildError>(py, m, None, None, None))?;
    let table = pyo3_arrow::PyTable::try_new(vec![batch.clone()], batch.schema())?;
    table.into_pyarrow(py)
}

/// `trajkit stats --json` of a library (`dedup`: none, exact or near), as a JSON string:
/// the same library function the CLI calls.
#[pyfunction]
#[pyo3(signature = (library, dedup=None))]
fn stats(py: Python<'_>, library: PathBuf, dedup: Option<String>) -> PyResult<String> {
    let dedup: trajkit_library::Dedup = dedup
        .as_deref()
        .unwrap_or("none")
        .parse()
        .map_err(|e: String| errors::with_location::<errors::UsageError>(py, e, None, None, None))?;
    let value = wait::run(py, move |_| library::stats(library, dedup))?
        .map_err(|m| errors::with_location::<errors::BuildError>(py, m, None, None, None))?;
    Ok(value.to_string())
}

/// A library's canonical records (JSON strings) matching an optional SQL condition,
/// streamed in library order.
#[pyfunction]
#[pyo3(signature = (library, filter=None))]
fn trajectories(library: PathBuf, filter: Option<String>) -> records::Records {
    records::Records::start(library, filter)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_MAX_RECORD_MIB", trajkit_ops::DEFAULT_MAX_RECORD_MIB)?;
    m.add_class::<Stream>()?;
    m.add_class::<records::Records>()?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(read_stream, m)?)?;
    m.add_function(wrap_pyfunction!(rows_schema, m)?)?;
    m.add_function(wrap_pyfunction!(convert, m)?)?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(export, m)?)?;
    m.add_function(wrap_pyfunction!(query, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_function(wrap_pyfunction!(trajectories, m)?)?;
    m.add_class::<scale::RayBuild>()?;
    m.add_function(wrap_pyfunction!(scale::plan, m)?)?;
    m.add_function(wrap_pyfunction!(scale::build_partial, m)?)?;
    errors::register(m)
}
