//! The HTML gallery: one self-contained static page (inline CSS and SVG, no script, no
//! network) showing what a library holds: summary figures and charts, then a few example
//! conversations per source. Documented in docs/gallery.md.
//!
//! One streaming pass over the library's rows gives the figures and the sample (counters
//! and a few rows per source are kept, never the records); then each chosen record is read
//! from its own zstd frame. The page stays within [`GalleryOptions::max_bytes`].

pub mod charts;
pub mod html;
pub mod page;
pub mod render;
pub mod stats;

use std::path::{Path, PathBuf};

use trajkit_library::{Library, LibraryError, Row};
use trajkit_model::Trajectory;

pub use html::escape;
use html::Html;
use stats::{Pick, Sampler, Summary};

/// What the gallery shows and how much of it.
#[derive(Clone, Copy)]
pub struct GalleryOptions<'a> {
    /// Examples per source: half successes (rounded up), half failures, the places a class
    /// cannot fill going to the other class, then to unknown outcomes.
    pub examples_per_source: usize,
    /// Steps rendered per conversation (top level and each subagent).
    pub max_steps_per_example: usize,
    /// Characters kept of any one text; the rest is cut with a visible marker.
    pub max_text_chars: usize,
    /// Upper bound of the page in bytes.
    pub max_bytes: usize,
    /// Applied to every example record before it is rendered (redaction rules).
    pub redact: Option<&'a dyn Fn(&mut Trajectory)>,
    /// Page title; default: the library directory's name (`build` passes the final name,
    /// since it renders the gallery in its staging directory).
    pub title: Option<&'a str>,
}

impl Default for GalleryOptions<'_> {
    fn default() -> Self {
        GalleryOptions {
            examples_per_source: 4,
            max_steps_per_example: 40,
            max_text_chars: 2000,
            max_bytes: 4 << 20,
            redact: None,
            title: None,
        }
    }
}

impl std::fmt::Debug for GalleryOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GalleryOptions")
            .field("examples_per_source", &self.examples_per_source)
            .field("max_steps_per_example", &self.max_steps_per_example)
            .field("max_text_chars", &self.max_text_chars)
            .field("max_bytes", &self.max_bytes)
            .field("redact", &self.redact.is_some())
            .finish()
    }
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GalleryReport {
    /// Trajectories in the library (rows).
    pub trajectories: u64,
    /// Sources in the library.
    pub sources: usize,
    /// Example conversations on the page.
    pub examples: usize,
    /// Sources whose examples were left out to keep the page within its size bound.
    pub sources_without_examples: usize,
    /// Size of the page in bytes.
    pub bytes: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum GalleryError {
    #[error(transparent)]
    Library(#[from] LibraryError),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// Smallest share of the page an example gets; fewer examples are shown rather than less.
const MIN_EXAMPLE_BYTES: usize = 16 << 10;
/// Largest share of the page one example gets.
const MAX_EXAMPLE_BYTES: usize = 256 << 10;
/// Bytes kept for the page's fixed parts (head, CSS, source headings, footer).
const CHROME_BYTES: usize = 24 << 10;

/// What the page needs of the library's rows, gathered one row at a time: the figures and
/// the sample. `build` feeds it the rows as it writes them (`Finisher::row`); a finished
/// library's rows are read back (`GalleryRows::of`).
pub struct GalleryRows {
    summary: Summary,
    sampler: Sampler,
}

impl GalleryRows {
    /// Nothing seen yet; the sample keeps `opts.examples_per_source` rows per source and class.
    pub fn new(opts: &GalleryOptions) -> GalleryRows {
        GalleryRows { summary: Summary::default(), sampler: Sampler::new(opts.examples_per_source) }
    }

    /// Counts `row` and offers it to the sample.
    pub fn add(&mut self, row: &Row) {
        self.summary.add(row);
        self.sampler.add(row);
    }

    /// Every row of `lib`, read from its evaluation rows.
    pub fn of(lib: &Library, opts: &GalleryOptions) -> Result<GalleryRows, GalleryError> {
        let mut rows = GalleryRows::new(opts);
        for row in lib.rows()? {
            rows.add(&row?);
        }
        Ok(rows)
    }
}

/// Writes the gallery of `lib` to `out` atomically (temporary file, then rename).
pub fn write_gallery(lib: &Library, out: &Path, opts: &GalleryOptions) -> Result<GalleryReport, GalleryError> {
    write_gallery_of(lib, GalleryRows::of(lib, opts)?, out, opts)
}

/// `write_gallery` from rows already gathered (every row of `lib`, in library order).
pub fn write_gallery_of(
    lib: &Library,
    rows: GalleryRows,
    out: &Path,
    opts: &GalleryOptions,
) -> Result<GalleryReport, GalleryError> {
    let (page, report) = render_rows(lib, rows, opts)?;
    write_atomically(out, page.as_bytes())?;
    Ok(report)
}

/// The page as a string, and its report.
pub fn render_gallery(lib: &Library, opts: &GalleryOptions) -> Result<(String, GalleryReport), GalleryError> {
    render_rows(lib, GalleryRows::of(lib, opts)?, opts)
}

/// The page of `lib` from its gathered rows.
fn render_rows(
    lib: &Library,
    rows: GalleryRows,
    opts: &GalleryOptions,
) -> Result<(String, GalleryReport), GalleryError> {
    let GalleryRows { summary, sampler } = rows;
    let name = opts.title.map_or_else(|| library_name(lib.root()), str::to_string);
    let head = page::head(&name);
    let mut summary_html = Html::new();
    page::nav(&mut summary_html, &summary);
    summary_html.append(&page::summary(&summary));
    let budget =
        opts.max_bytes.saturating_sub(head.len() + summary_html.len() + CHROME_BYTES + sources_bytes(&summary));
    let plan = plan_examples(&summary, sampler, budget);
    let per_example = (budget / plan.count.max(1)).min(MAX_EXAMPLE_BYTES);
    let examples = fetch_and_render(lib, opts, &plan, per_example)?;

    let mut page = head;
    page.append(&summary_html);
    let without = sections(&mut page, &summary, &plan, &examples);
    page.append(&page::footer(opts.examples_per_source, opts.max_steps_per_example, opts.max_text_chars));
    let page = page.into_string();
    let report = GalleryReport {
        trajectories: summary.trajectories,
        sources: summary.by_source.len(),
        examples: plan.count,
        sources_without_examples: without,
        bytes: page.len(),
    };
    Ok((page, report))
}

/// The directory name of the library, for the title.
fn library_name(root: &Path) -> String {
    let absolute = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    absolute.file_name().map_or_else(|| "library".to_string(), |n| n.to_string_lossy().into_owned())
}

/// Upper bound of a source heading and its line of figures (name clipped to 200 chars).
const SOURCE_HEADING_BYTES: usize = 2048;

fn sources_bytes(s: &Summary) -> usize {
    s.by_source.len() * SOURCE_HEADING_BYTES
}

/// The chosen examples per source in page order, limited so each gets its minimum share.
struct ExamplePlan {
    /// (source, picks, left out by the size bound) in page order.
    sources: Vec<(String, Vec<Pick>, bool)>,
    /// Examples in total.
    count: usize,
}

fn plan_examples(summary: &Summary, sampler: Sampler, budget: usize) -> ExamplePlan {
    let mut chosen = sampler.choose();
    let mut room = budget / MIN_EXAMPLE_BYTES;
    let mut count = 0;
    let sources = summary
        .sources_in_page_order()
        .into_iter()
        .map(|(name, _)| {
            let picks = chosen.remove(name).unwrap_or_default();
            if picks.len() > room {
                return (name.to_string(), Vec::new(), true);
            }
            room -= picks.len();
            count += picks.len();
            (name.to_string(), picks, false)
        })
        .collect();
    ExamplePlan { sources, count }
}

/// Reads and renders every chosen record (redacted first), each from its own zstd frame,
/// in library order (the order redaction numbers placeholders in).
fn fetch_and_render(
    lib: &Library,
    opts: &GalleryOptions,
    plan: &ExamplePlan,
    per_example: usize,
) -> Result<Vec<Option<Html>>, GalleryError> {
    let mut picks: Vec<(usize, &Pick)> =
        plan.sources.iter().flat_map(|(_, picks, _)| picks.iter()).enumerate().collect();
    picks.sort_by_key(|(_, p)| p.seq);
    let limits = render::Limits {
        max_steps: opts.max_steps_per_example,
        max_text_chars: opts.max_text_chars,
        budget: per_example,
    };
    let mut rendered: Vec<Option<Html>> = (0..plan.count).map(|_| None).collect();
    for (slot, pick) in picks {
        let mut t = lib.record_at(&pick.row)?;
        if let Some(redact) = opts.redact {
            redact(&mut t);
        }
        rendered[slot] = Some(render::example(slot as u64 + 1, &pick.row, &t, limits));
    }
    Ok(rendered)
}

/// Appends one section per source with its examples; returns how many sources had
/// examples left out by the size bound.
fn sections(page: &mut Html, summary: &Summary, plan: &ExamplePlan, examples: &[Option<Html>]) -> usize {
    page.raw("<section id=\"examples\"><h2>Examples by source</h2>");
    let mut next = 0;
    let mut without = 0;
    for (i, (name, picks, left_out)) in plan.sources.iter().enumerate() {
        let Some(f) = summary.by_source.get(name) else { continue };
        let (short, cut) = render::clip(name, 200);
        page.raw("<section class=\"source\" id=\"src-").num(i as u64 + 1).raw("\"><h2>").text(short);
        if cut > 0 {
            page.raw("…");
        }
        page.raw("</h2><p class=\"source-info\">").num(f.outcomes.total()).raw(" trajectories: ");
        page.num(f.outcomes.success).raw(" success, ").num(f.outcomes.failure).raw(" failure, ");
        page.num(f.outcomes.unknown).raw(" unknown. ");
        if *left_out {
            without += 1;
            page.raw("Examples left out: the page keeps within its size bound.</p>");
        } else {
            page.raw("Showing ").num(picks.len() as u64).raw(".</p>");
        }
        for _ in picks {
            if let Some(Some(example)) = examples.get(next) {
                page.append(example);
            }
            next += 1;
        }
        page.raw("</section>\n");
    }
    page.raw("</section>");
    without
}

/// Writes the page atomically (`trajkit_io`).
fn write_atomically(out: &Path, bytes: &[u8]) -> Result<(), GalleryError> {
    trajkit_io::write_atomic(out, bytes).map_err(|source| GalleryError::Io { path: out.to_path_buf(), source })
}
