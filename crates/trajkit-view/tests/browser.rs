//! The viewer as a person uses it: the server on a free port, headless Chromium (Debian
//! `chromium`) loads the overview, a filtered list, a search, the hit it opens, the
//! result a call links to, and the side-by-side view; each DOM (`--dump-dom`) is checked,
//! and a screenshot must not be blank. Without chromium the test prints why and passes,
//! unless TRAJKIT_REQUIRE_CHROMIUM=1 (CI) makes a missing browser a failure.

#[path = "../../trajkit-export/tests/chromium/mod.rs"]
mod chromium;
mod support;

use std::path::Path;

use chromium::dom;
use support::{as_text, serve, HOSTILE};
use trajkit_view::ViewOptions;

/// The first `href` in `dom` starting with `prefix`, decoded from the DOM's `&amp;`.
fn href(dom: &str, prefix: &str) -> String {
    let needle = format!("href=\"{prefix}");
    let i = dom.find(&needle).unwrap_or_else(|| panic!("no link {prefix}")) + "href=\"".len();
    dom[i..].split('"').next().unwrap_or_default().replace("&amp;", "&")
}

#[test]
fn a_person_browses_filters_searches_opens_follows_and_compares() {
    let Some(bin) = chromium::find() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, server) = serve(dir.path(), ViewOptions::default());
    let base = format!("http://{}", server.addr());

    // The overview.
    let overview = dom(&bin, &format!("{base}/"));
    assert!(overview.contains("<dd id=\"fig-trajectories\">39</dd>"));
    assert_eq!(overview.matches("<svg").count(), 4);

    // Filter the list the way the form submits it (GET with the chosen values).
    let list_url = href(&overview, "/list?source=nemo-gym");
    let list = dom(&bin, &format!("{base}{list_url}&outcome=success&sort=steps&order=desc"));
    assert!(list.contains("<p id=\"count\">16 trajectories match.</p>"), "filtered list");
    assert!(list.contains("<option value=\"success\" selected=\"\">success</option>"), "the form keeps the filter");

    // Type a search (the form's GET), open the first hit at its step.
    let hits = dom(&bin, &format!("{base}/search?q=zebraquartz&in=all"));
    assert!(hits.contains("<p id=\"count\">1 matching steps.</p>"));
    let hit = href(&hits, "/trajectory?id=");
    assert!(hit.ends_with("#e1-step3"), "{hit}");
    let page = dom(&bin, &format!("{base}{hit}"));
    assert!(page.contains("id=\"e1-step3\""), "the hit's step is on the page");
    for h in HOSTILE {
        assert!(page.contains(&as_text(h)), "shown as text: {h}");
    }
    for injected in ["<script", "<img", "<iframe", "<svg onload"] {
        assert!(!page.contains(injected), "injected element: {injected}");
    }
    assert!(page.contains("<title>"), "the title was not rewritten");
    assert!(!page.contains("pwned</title>"));

    // Follow the call to its result: the link's target is an element of the page.
    let to_result = href(&page, "#e1-r");
    let anchor = format!("id=\"{}\"", &to_result[1..]);
    assert!(page.contains(&anchor), "the result {to_result} is on the page");

    // The side-by-side view of two attempts of one task, chosen on the task page.
    let task_dom = dom(&bin, &format!("{base}{}", href(&list, "/task?key=")));
    assert!(task_dom.contains("id=\"attempts\""));
    let ids: Vec<String> = list
        .match_indices("href=\"/trajectory?id=")
        .take(2)
        .map(|(i, _)| href(&list[i..], "/trajectory?id="))
        .collect();
    let a = ids[0].trim_start_matches("/trajectory?id=");
    let b = ids[1].trim_start_matches("/trajectory?id=");
    let side_url = format!("{base}/compare?a={a}&b={b}");
    let side = dom(&bin, &side_url);
    assert!(side.contains("id=\"side-by-side\""));
    assert!(side.matches("<tr class=\"aligned\">").count() > 1);

    // A screenshot of the side-by-side view is not blank.
    let shot = dir.path().join("shot.png");
    chromium::screenshot(&bin, &side_url, &shot, (1280, 900));
    assert_not_blank(&shot);
    if let Ok(keep) = std::env::var("TRAJKIT_VIEW_SCREENSHOT") {
        std::fs::copy(&shot, keep).expect("keep screenshot");
    }
    server.stop();
}

/// The PNG at `path` is 1280×900 with many distinct shades (a rendered page, not a blank one).
fn assert_not_blank(path: &Path) {
    let (width, height, pixels) = chromium::rgb_pixels(path);
    assert_eq!((width, height), (1280, 900));
    let mut shades = std::collections::HashSet::new();
    let mut dark = 0usize;
    for px in pixels {
        let luma = (u32::from(px[0]) + u32::from(px[1]) + u32::from(px[2])) / 3;
        shades.insert(luma);
        if luma < 128 {
            dark += 1;
        }
    }
    assert!(shades.len() > 50, "only {} shades: blank?", shades.len());
    assert!(dark > 5_000, "only {dark} dark pixels: no text?");
}
