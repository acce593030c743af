//! `build`: the library (`trajkit_library::build_with`, or the finalize of partials built
//! apart) with its gallery written into it, redacted as asked, before the manifest.

use trajkit_export::gallery::{write_gallery, GalleryOptions};
use trajkit_library::{BuildOptions, BuildPlan, BuildSession, BuildSummary, Finisher, Library, LibraryError, Progress};
use trajkit_model::Trajectory;

use crate::{OpsError, RedactionOptions};

/// Everything a build decides: the library's options and the gallery's redaction.
#[derive(Clone, Debug, Default)]
pub struct BuildRequest {
    /// `threads` is set from the rayon pool the build runs on.
    pub library: BuildOptions,
    /// Redaction of the gallery (the library itself keeps the data as read).
    pub redaction: RedactionOptions,
}

/// Builds the library `req` describes, its gallery included, on the current rayon pool;
/// `progress` hears the stages and its `cancelled` abandons the build (the old library
/// stays). A `--strict` stop is a summary with `strict_failure`, not an error.
pub fn build(req: &BuildRequest, progress: &dyn Progress) -> Result<BuildSummary, OpsError> {
    let opts = BuildOptions { threads: rayon::current_num_threads(), ..req.library.clone() };
    if opts.inputs.is_empty() && opts.registry.is_none() {
        return Err(OpsError::Usage("give input paths, or a --registry whose sources name them".into()));
    }
    with_gallery(&opts, &req.redaction, progress, |gallery| trajkit_library::build_with(&opts, progress, Some(gallery)))
}

/// Finalizes a build whose partials were made apart (the Ray build) into the library,
/// with the same gallery `build` writes.
pub fn finish(
    session: BuildSession,
    req: &BuildRequest,
    plan: &BuildPlan,
    progress: &dyn Progress,
) -> Result<BuildSummary, OpsError> {
    with_gallery(&req.library, &req.redaction, progress, |gallery| {
        session.finish(&req.library, plan, progress, Some(gallery))
    })
}

/// Runs `run` with the library's finisher: the gallery, titled with the library's name and
/// redacted as asked, written into the library before its manifest.
fn with_gallery(
    opts: &BuildOptions,
    redaction: &RedactionOptions,
    progress: &dyn Progress,
    run: impl FnOnce(Finisher) -> Result<BuildSummary, LibraryError>,
) -> Result<BuildSummary, OpsError> {
    let title = opts.output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "library".into());
    let redact_fn = redaction.engine()?.map(|e| e.gallery_hook());
    let gallery = |lib: &Library| -> Result<(), String> {
        progress.stage("gallery");
        let out = lib.root().join("examples.html");
        let opts = GalleryOptions {
            title: Some(&title),
            redact: redact_fn.as_ref().map(|f| f as &dyn Fn(&mut Trajectory)),
            ..Default::default()
        };
        write_gallery(lib, &out, &opts).map(|_| ()).map_err(|e| format!("writing the gallery: {e}"))
    };
    Ok(run(&gallery)?)
}
