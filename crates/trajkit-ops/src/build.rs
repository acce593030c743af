//! `build`: the library (`trajkit_library::build_with`, or the finalize of partials built
//! apart) with its gallery written into it, redacted as asked, before the manifest.

use trajkit_export::gallery::{write_gallery_of, GalleryOptions, GalleryRows};
use trajkit_library::{
    BuildOptions, BuildPlan, BuildSession, BuildSummary, Finisher, Library, LibraryError, Progress, Row,
};
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
    run: impl FnOnce(&mut dyn Finisher) -> Result<BuildSummary, LibraryError>,
) -> Result<BuildSummary, OpsError> {
    let title = opts.output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "library".into());
    let redact = redaction.engine()?.map(|e| e.gallery_hook());
    let options = GalleryOptions {
        title: Some(&title),
        redact: redact.as_ref().map(|f| f as &dyn Fn(&mut Trajectory)),
        ..Default::default()
    };
    let mut gallery = Gallery { options, progress, rows: Some(GalleryRows::new(&options)) };
    Ok(run(&mut gallery)?)
}

/// The gallery as a build's finisher: it gathers the rows as finalize writes them, then
/// renders the page (instead of reading every row back from the finished library).
struct Gallery<'a> {
    /// The sample's size and the page's, one set of options for both.
    options: GalleryOptions<'a>,
    progress: &'a dyn Progress,
    /// Taken by `finish`.
    rows: Option<GalleryRows>,
}

impl Finisher for Gallery<'_> {
    fn row(&mut self, row: &Row) {
        if let Some(rows) = self.rows.as_mut() {
            rows.add(row);
        }
    }

    fn finish(&mut self, lib: &Library) -> Result<(), String> {
        self.progress.stage("gallery");
        let out = lib.root().join("examples.html");
        let rows = self.rows.take().ok_or("the gallery was already written")?;
        write_gallery_of(lib, rows, &out, &self.options).map(|_| ()).map_err(|e| format!("writing the gallery: {e}"))
    }
}
