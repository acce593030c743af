//! The gallery as a person sees it: headless Chromium (Debian `chromium`) loads the page
//! from a file; the tests assert on the DOM it built (`--dump-dom`) and on a screenshot.
//! Without chromium the tests print why and pass, unless TRAJKIT_REQUIRE_CHROMIUM=1 (CI)
//! makes a missing browser a failure.

mod chromium;
mod gallery_support;

use std::path::{Path, PathBuf};

use gallery_support::{hostile_entry, standard_entries, write_library, HOSTILE};
use trajkit_export::gallery::{write_gallery, GalleryOptions, GalleryReport};

/// The `file://` URL of a page.
fn url(page: &Path) -> String {
    format!("file://{}", page.display())
}

/// The gallery of the real-fixture library plus the hostile record, in `dir`.
fn page(dir: &Path) -> (PathBuf, String, GalleryReport) {
    let mut entries = standard_entries();
    entries.push(hostile_entry());
    let lib = write_library(&dir.join("lib"), &entries);
    let out = dir.join("examples.html");
    let report = write_gallery(&lib, &out, &GalleryOptions::default()).expect("gallery");
    let html = std::fs::read_to_string(&out).expect("page");
    (out, html, report)
}

/// How a DOM serializer writes `s` as a text node.
fn as_text_node(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[test]
fn the_browser_builds_the_page_we_wrote_and_runs_nothing_from_the_data() {
    let Some(bin) = chromium::find() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (page, html, report) = page(dir.path());
    let dom = chromium::dom(&bin, &url(&page));

    // What a reader sees: the figures, one article per example, their titles.
    assert!(dom.contains("<dd id=\"fig-trajectories\">19</dd>"), "figures");
    assert_eq!(report.examples, 4 + 4 + 4 + 2 + 2 + 1);
    assert_eq!(dom.matches("<article class=\"example\"").count(), report.examples);
    for title in ["function_calling_simple", "pydicom__pydicom-1458"] {
        assert!(dom.contains(&format!("<h3 class=\"ex-title\">{title}</h3>")), "{title}");
    }
    assert_eq!(dom.matches("<details").count(), html.matches("<details").count(), "structure intact");
    assert_eq!(dom.matches("<svg").count(), 4);

    // The hostile record: every string is there as text, nothing it carries became an element.
    for h in HOSTILE {
        assert!(dom.contains(&as_text_node(h)), "not shown as text: {h}");
    }
    for injected in ["<script", "<img", "<iframe", "id=\"injected\"", "<svg onload", "<a href=\"javascript"] {
        assert!(!dom.contains(injected), "injected element: {injected}");
    }
    assert!(dom.contains("<title>trajkit gallery · lib</title>"), "the title was not rewritten by a script");
    let hostile_user = format!("<div class=\"text\">{}</div>", as_text_node(&gallery_support::hostile_text()));
    assert!(dom.contains(&hostile_user), "the hostile message is one text block");
}

#[test]
fn the_screenshot_shows_the_page() {
    let Some(bin) = chromium::find() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (page, _, _) = page(dir.path());
    let png_path = dir.path().join("shot.png");
    chromium::screenshot(&bin, &url(&page), &png_path, (1280, 1600));

    let (width, height, pixels) = chromium::rgb_pixels(&png_path);
    assert_eq!((width, height), (1280, 1600));
    let luma: Vec<f64> =
        pixels.iter().map(|p| 0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])).collect();
    let mean = luma.iter().sum::<f64>() / luma.len() as f64;
    let variance = luma.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / luma.len() as f64;
    let ink = luma.iter().filter(|&&l| l < 200.0).count() as f64 / luma.len() as f64;
    assert!(variance > 200.0, "a blank page has no variance: {variance:.1}");
    assert!(ink > 0.01, "too little drawn: {:.2}% of pixels", ink * 100.0);
    // The outcome charts are drawn: pixels of the success green and the failure red.
    let near = |p: &[u8; 3], c: [u8; 3]| p.iter().zip(c).all(|(&a, b)| a.abs_diff(b) < 12);
    assert!(pixels.iter().any(|p| near(p, [0x2d, 0xa4, 0x4e])), "no success bar");
    assert!(pixels.iter().any(|p| near(p, [0xcf, 0x22, 0x2e])), "no failure bar");
}
