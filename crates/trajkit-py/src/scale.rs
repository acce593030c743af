//! The build phases for `trajkit.ray`: planning (also the read tasks' file groups), a
//! partial build per file group on a worker, and finalize on the driver. Each is the
//! library's own function (`trajkit_library::{plan, build_partial, BuildSession}`); this
//! module only moves options, plans and summaries across as JSON.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::prelude::*;
use serde::Deserialize;
use trajkit_library::{
    BuildOptions, BuildPlan, BuildSession, ClusterOptions, ContaminationOptions, FileGroup, LibraryError, Progress,
};

use crate::errors;
use crate::wait;

/// The options `trajkit.ray` passes (JSON), as the CLI's flags of the same names.
#[derive(Debug, Clone, Deserialize)]
struct Options {
    inputs: Vec<PathBuf>,
    output: PathBuf,
    registry: Option<PathBuf>,
    format: Option<String>,
    outcomes: Option<PathBuf>,
    #[serde(default)]
    strict: bool,
    shard_bytes: Option<u64>,
    max_record_bytes: Option<usize>,
    /// Task clustering (`trajkit_library::ClusterOptions`, fields as its JSON).
    #[serde(default)]
    clusters: Option<ClusterOptions>,
    /// The contamination report (`trajkit_library::ContaminationOptions`, fields as its JSON).
    #[serde(default)]
    contamination: Option<ContaminationOptions>,
}

impl Options {
    fn parse(py: Python<'_>, json: &str) -> PyResult<BuildOptions> {
        let o: Options = serde_json::from_str(json)
            .map_err(|e| errors::with_location::<errors::UsageError>(py, format!("options: {e}"), None, None, None))?;
        let mut opts = BuildOptions {
            inputs: o.inputs,
            registry: o.registry,
            output: o.output,
            format: o.format,
            outcomes: o.outcomes,
            strict: o.strict,
            max_record_bytes: o.max_record_bytes,
            clusters: o.clusters.unwrap_or_default(),
            contamination: o.contamination.unwrap_or_default(),
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            ..BuildOptions::default()
        };
        if let Some(b) = o.shard_bytes {
            opts.shard_bytes = b;
        }
        Ok(opts)
    }
}

/// Finalize's progress: hears Ctrl-C and notes when each stage began, so the summary can
/// say where finalize spent its time (`finalize_stages`).
struct Stages {
    cancel: Arc<AtomicBool>,
    began: Mutex<Vec<(String, Instant)>>,
}

impl Stages {
    fn new(cancel: Arc<AtomicBool>) -> Stages {
        Stages { cancel, began: Mutex::new(vec![("loading partials".to_string(), Instant::now())]) }
    }

    /// Seconds per stage, in order; the last stage runs until now.
    fn seconds(&self) -> Vec<(String, f64)> {
        let began = self.began.lock().map(|b| b.clone()).unwrap_or_default();
        let ends = began.iter().skip(1).map(|(_, t)| *t).chain(std::iter::once(Instant::now()));
        began.iter().zip(ends).map(|((name, start), end)| (name.clone(), (end - *start).as_secs_f64())).collect()
    }
}

impl Progress for Stages {
    fn stage(&self, name: &str) {
        if let Ok(mut b) = self.began.lock() {
            b.push((name.to_string(), Instant::now()));
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

/// A library error as the package's exception (cancellation never gets here: `wait::run`
/// raises KeyboardInterrupt first).
fn library_error(py: Python<'_>, e: &LibraryError) -> PyErr {
    errors::with_location::<errors::BuildError>(py, e.to_string(), None, None, None)
}

fn json_error(py: Python<'_>, what: &str, e: serde_json::Error) -> PyErr {
    errors::with_location::<errors::UsageError>(py, format!("{what}: {e}"), None, None, None)
}

/// Plans a read or build of `options` (JSON) in groups of about `group_bytes`; returns the
/// plan as JSON (`trajkit_library::BuildPlan`).
#[pyfunction]
pub fn plan(py: Python<'_>, options: String, group_bytes: u64) -> PyResult<String> {
    let opts = Options::parse(py, &options)?;
    let plan =
        wait::run(py, move |_| trajkit_library::plan(&opts, Some(group_bytes)))?.map_err(|e| library_error(py, &e))?;
    serde_json::to_string(&plan).map_err(|e| json_error(py, "plan", e))
}

/// Builds the partial of one group (JSON, from a plan) into `staging`; returns its
/// summary as JSON. Runs on a Ray worker; retried, it replaces its earlier partial.
#[pyfunction]
pub fn build_partial(py: Python<'_>, options: String, group: String, staging: PathBuf) -> PyResult<String> {
    let opts = Options::parse(py, &options)?;
    let group: FileGroup = serde_json::from_str(&group).map_err(|e| json_error(py, "group", e))?;
    let summary = wait::run(py, move |cancel| {
        let pool =
            wait::pool(None).map_err(|e| LibraryError::Invalid { path: staging.clone(), message: e.to_string() })?;
        pool.install(|| {
            let summary = trajkit_library::build_partial(&opts, &group, &staging, &wait::Cancel(cancel));
            // A Ray worker process is reused for the next task: it keeps no reading memory.
            trajkit::alloc::release_freed_memory();
            summary
        })
    })?
    .map_err(|e| library_error(py, &e))?;
    serde_json::to_string(&summary).map_err(|e| json_error(py, "summary", e))
}

/// A build in progress on the driver: holds the output's build lock and its staging
/// directory from `begin` to `finish` (or until dropped: then nothing is written).
#[pyclass(module = "trajkit._native")]
pub struct RayBuild {
    opts: BuildOptions,
    session: Arc<Mutex<Option<BuildSession>>>,
    staging: PathBuf,
}

#[pymethods]
impl RayBuild {
    /// Checks the output, takes the build lock and creates the staging directory.
    #[new]
    fn new(py: Python<'_>, options: String) -> PyResult<RayBuild> {
        let opts = Options::parse(py, &options)?;
        let session = BuildSession::begin(&opts).map_err(|e| library_error(py, &e))?;
        let staging = session.staging().to_path_buf();
        Ok(RayBuild { opts, session: Arc::new(Mutex::new(Some(session))), staging })
    }

    /// The staging directory the partials are written into.
    #[getter]
    fn staging(&self) -> String {
        self.staging.display().to_string()
    }

    /// Finalizes the partials of `plan` (JSON) and swaps the library into place, with its
    /// gallery; returns the build summary as JSON, with `finalize_stages`: `[stage,
    /// seconds]` in order (merging, indexing, ..., gallery, manifest).
    fn finish(&self, py: Python<'_>, plan: String) -> PyResult<String> {
        let plan: BuildPlan = serde_json::from_str(&plan).map_err(|e| json_error(py, "plan", e))?;
        let session = self.session.lock().ok().and_then(|mut s| s.take()).ok_or_else(|| {
            errors::with_location::<errors::UsageError>(py, "this build is finished".into(), None, None, None)
        })?;
        let req = trajkit_ops::BuildRequest { library: self.opts.clone(), ..Default::default() };
        let (summary, stages) = wait::run(py, move |cancel| {
            let stages = Stages::new(cancel);
            (trajkit_ops::build::finish(session, &req, &plan, &stages), stages.seconds())
        })?;
        let summary = summary.map_err(|e| errors::ops_error(py, &e))?;
        let mut json = crate::build_summary(py, &self.opts.output, &summary)?;
        json["finalize_stages"] = serde_json::json!(stages);
        Ok(json.to_string())
    }

    /// Abandons the build: the staging directory is removed and the lock released.
    fn abort(&self) {
        if let Ok(mut s) = self.session.lock() {
            s.take();
        }
    }
}
