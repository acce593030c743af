//! The gallery as a person sees it: headless Chromium (Debian `chromium`) loads the page
//! from a file; the tests assert on the DOM it built (`--dump-dom`) and on a screenshot.
//! Without chromium the tests print why and pass, unless TRAJKIT_REQUIRE_CHROMIUM=1 (CI)
//! makes a missing browser a failure.

mod gallery_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gallery_support::{hostile_entry, standard_entries, write_library, HOSTILE};
use trajkit_export::gallery::{write_gallery, GalleryOptions, GalleryReport};

/// The chromium binary on PATH, or None (then the caller skips, unless CI requires it).
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("chromium")).find(|p| p.is_file()));
    if found.is_none() {
        let required = std::env::var("TRAJKIT_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
        assert!(!required, "TRAJKIT_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install chromium)");
        eprintln!("skipped: chromium is not installed (apt-get install chromium); set TRAJKIT_REQUIRE_CHROMIUM=1 to fail instead");
    }
    found
}

/// Runs headless chromium on `page` with `args`, its stdout to `stdout`; killed after 120 s.
fn run_chromium(bin: &Path, page: &Path, args: &[String], stdout: &Path) {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut child = Command::new(bin)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(stdout).expect("stdout file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "chromium exited with {status}");
            return;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
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
    let Some(bin) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (page, html, report) = page(dir.path());
    let dump = dir.path().join("dom.html");
    run_chromium(&bin, &page, &["--dump-dom".to_string()], &dump);
    let dom = std::fs::read_to_string(&dump).expect("dom");

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
    let Some(bin) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (page, _, _) = page(dir.path());
    let png_path = dir.path().join("shot.png");
    let args = [format!("--screenshot={}", png_path.display()), "--window-size=1280,1600".to_string()];
    run_chromium(&bin, &page, &args, &dir.path().join("stdout.txt"));

    let file = std::io::BufReader::new(std::fs::File::open(&png_path).expect("screenshot written"));
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("decode");
    assert_eq!((info.width, info.height), (1280, 1600));
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let luma: Vec<f64> =
        pixels.iter().map(|p| 0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])).collect();
    let mean = luma.iter().sum::<f64>() / luma.len() as f64;
    let variance = luma.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / luma.len() as f64;
    let ink = luma.iter().filter(|&&l| l < 200.0).count() as f64 / luma.len() as f64;
    assert!(variance > 200.0, "a blank page has no variance: {variance:.1}");
    assert!(ink > 0.01, "too little drawn: {:.2}% of pixels", ink * 100.0);
    // The outcome charts are drawn: pixels of the success green and the failure red.
    let near = |p: &[u8], c: [u8; 3]| p.iter().zip(c).all(|(&a, b)| a.abs_diff(b) < 12);
    assert!(pixels.iter().any(|p| near(p, [0x2d, 0xa4, 0x4e])), "no success bar");
    assert!(pixels.iter().any(|p| near(p, [0xcf, 0x22, 0x2e])), "no failure bar");
}
