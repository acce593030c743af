//! `trajkit gallery LIB -o examples.html`: the library's self-contained HTML gallery.

use std::path::Path;

use anyhow::{Context, Result};
use trajkit_export::gallery::{write_gallery, GalleryOptions};
use trajkit_library::Library;

pub fn run(library: &Path, output: &Path, examples_per_source: usize) -> Result<u8> {
    let lib = Library::open(library)?;
    let opts = GalleryOptions { examples_per_source, ..GalleryOptions::default() };
    let report = write_gallery(&lib, output, &opts).with_context(|| format!("writing {}", output.display()))?;
    eprintln!(
        "wrote {} ({} bytes): {} trajectories, {} sources, {} examples",
        output.display(),
        report.bytes,
        report.trajectories,
        report.sources,
        report.examples
    );
    if report.sources_without_examples > 0 {
        eprintln!("{} sources shown without examples to keep the page small", report.sources_without_examples);
    }
    Ok(0)
}
