//! `trajkit gallery LIB -o examples.html`: the library's self-contained HTML gallery.

use std::path::Path;

use anyhow::{Context, Result};
use trajkit_export::gallery::{write_gallery, GalleryOptions};
use trajkit_library::Library;

pub fn run(
    library: &Path,
    output: &Path,
    examples_per_source: usize,
    redaction: &super::redaction::RedactArgs,
) -> Result<u8> {
    let lib = Library::open(library)?;
    let engine = redaction.engine()?;
    let redact_fn = engine.clone().map(|e| e.gallery_hook());
    let opts = GalleryOptions {
        examples_per_source,
        redact: redact_fn.as_ref().map(|f| f as &dyn Fn(&mut trajkit_model::Trajectory)),
        ..GalleryOptions::default()
    };
    let report = write_gallery(&lib, output, &opts).with_context(|| format!("writing {}", output.display()))?;
    eprintln!(
        "wrote {} ({} bytes): {} trajectories, {} sources, {} examples",
        output.display(),
        report.bytes,
        report.trajectories,
        report.sources,
        report.examples
    );
    if let Some(engine) = &engine {
        eprintln!("redacted: {} secrets replaced by placeholders", engine.replaced());
    }
    if report.sources_without_examples > 0 {
        eprintln!("{} sources shown without examples to keep the page small", report.sources_without_examples);
    }
    Ok(0)
}
