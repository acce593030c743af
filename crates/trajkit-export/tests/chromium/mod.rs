//! Headless Chromium (Debian `chromium`) for the browser tests of the gallery and of the
//! viewer (crates/trajkit-view/tests/browser.rs includes this file with `#[path]`): finding
//! the browser, running it on a URL with a throwaway profile and a time limit, and reading
//! the screenshot it took. A missing browser skips a test, unless TRAJKIT_REQUIRE_CHROMIUM=1
//! (CI) makes it a failure.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one chromium run may take before the test fails.
const LIMIT: Duration = Duration::from_secs(120);

/// The chromium binary on PATH, or None (the caller then skips) — a panic instead when
/// TRAJKIT_REQUIRE_CHROMIUM=1.
pub fn find() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("chromium")).find(|p| p.is_file()));
    if found.is_none() {
        let required = std::env::var("TRAJKIT_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
        assert!(!required, "TRAJKIT_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install chromium)");
        eprintln!("skipped: chromium is not installed (apt-get install chromium); set TRAJKIT_REQUIRE_CHROMIUM=1 to fail instead");
    }
    found
}

/// Headless chromium on `url` with `args` and a fresh profile; its stdout. Killed (and the
/// test failed) after two minutes; a non-zero exit fails the test.
pub fn run(bin: &Path, url: &str, args: &[String]) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let out = profile.path().join("stdout");
    let mut child = Command::new(bin)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().join("profile").display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "chromium exited with {status}");
            break;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in {} s", LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::read_to_string(out).expect("chromium's stdout")
}

/// The DOM chromium built for `url` (`--dump-dom`).
pub fn dom(bin: &Path, url: &str) -> String {
    run(bin, url, &["--dump-dom".to_string()])
}

/// A `width`×`height` screenshot of `url` written to `png`.
pub fn screenshot(bin: &Path, url: &str, png: &Path, (width, height): (u32, u32)) {
    run(bin, url, &[format!("--screenshot={}", png.display()), format!("--window-size={width},{height}")]);
}

/// The screenshot at `path`: its width, height and pixels as RGB.
pub fn rgb_pixels(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file = std::io::BufReader::new(std::fs::File::open(path).expect("screenshot written"));
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("decode");
    let channels = info.color_type.samples();
    let pixels = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| if channels >= 3 { [p[0], p[1], p[2]] } else { [p[0]; 3] })
        .collect();
    (info.width, info.height, pixels)
}
