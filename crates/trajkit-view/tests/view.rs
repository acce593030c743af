//! The viewer over HTTP on a library built from the example corpus (real files of seven
//! formats) plus one hostile record: every page, filters, search, 404/400/405, escaping,
//! and a rebuild while serving.

mod support;

use support::{as_text, get, headers, request, serve, HOSTILE};
use trajkit_view::ViewOptions;

/// The text between `<p id="count">` and the next space: the page's match count.
fn count(body: &str) -> u64 {
    let start = body.find("<p id=\"count\">").expect("a count") + "<p id=\"count\">".len();
    body[start..].split(' ').next().and_then(|n| n.parse().ok()).expect("a number")
}

#[test]
fn overview_list_filters_task_and_side_by_side() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, server) = serve(dir.path(), ViewOptions::default());
    let addr = server.addr();

    let (status, body) = get(addr, "/");
    assert_eq!(status, 200);
    assert!(body.contains("<dd id=\"fig-trajectories\">39</dd>"), "38 example trajectories + the hostile one");
    assert_eq!(body.matches("<svg").count(), 4, "the gallery's four charts");

    // Filters, alone and together; the URL holds them.
    for (query, expected) in [
        ("/list", 39),
        ("/list?source=nemo-gym", 29),
        ("/list?source=nemo-gym&outcome=success", 16),
        ("/list?outcome=failure", 14),
        ("/list?split=protected_evaluation", 1),
        ("/list?gap=any", 13),
        ("/list?gap=unanswered_tool_call", 5),
        ("/list?format=atif", 4),
        ("/list?tier=3", 20),
    ] {
        let (status, body) = get(addr, query);
        assert_eq!(status, 200, "{query}");
        assert_eq!(count(&body), expected, "{query}");
    }
    let (_, body) = get(addr, "/list?source=nemo-gym&sort=steps&order=desc");
    assert!(body.contains("<option value=\"nemo-gym\" selected>"), "the form shows the filter");
    assert!(body.contains("<option value=\"steps\" selected>"), "and the sort");

    // Pagination: 29 rows, 50 a page → one page; the whole library sorted by steps, descending.
    let (_, body) = get(addr, "/list?sort=steps&order=desc");
    assert!(body.contains("page 1 of 1"));

    // A task page lists every attempt; two attempts side by side.
    let (_, list) = get(addr, "/list?source=nemo-gym&outcome=success");
    let task = between(&list, "href=\"/task?key=", "\"");
    let (status, body) = get(addr, &format!("/task?key={}", task.replace("&amp;", "&")));
    assert_eq!(status, 200);
    assert!(body.contains("<table class=\"list\" id=\"attempts\">"));
    let ids: Vec<String> = list
        .match_indices("href=\"/trajectory?id=")
        .map(|(i, _)| between(&list[i..], "href=\"/trajectory?id=", "\"").replace("&amp;", "&"))
        .collect();
    assert_eq!(ids.len(), 16);
    let (status, body) = get(addr, &format!("/compare?a={}&b={}", ids[0], ids[1]));
    assert_eq!(status, 200);
    assert!(body.contains("id=\"side-by-side\""));
    assert!(body.matches("<tr class=\"aligned\">").count() > 1, "steps aligned in rows");
    server.stop();
}

/// The text after `start` up to `end`.
fn between(s: &str, start: &str, end: &str) -> String {
    let i = s.find(start).expect(start) + start.len();
    s[i..].split(end).next().unwrap_or_default().to_string()
}

#[test]
fn trajectory_page_links_calls_to_results_and_shows_gaps_and_raw_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, server) = serve(dir.path(), ViewOptions::default());
    let addr = server.addr();
    let (_, list) = get(addr, "/list?gap=unanswered_tool_call");
    let id = between(&list, "href=\"/trajectory?id=", "\"").replace("&amp;", "&");
    let (status, page) = get(addr, &format!("/trajectory?id={id}"));
    assert_eq!(status, 200);
    assert!(
        page.contains("<li class=\"gap\"><span class=\"badge warn\">gap unanswered_tool_call</span>"),
        "gap at its step"
    );
    assert!(page.contains("href=\"#e1-r1\"") && page.contains("id=\"e1-r1\""), "call 1 links to its result");
    assert!(page.contains("id=\"e1-step0\""), "steps are anchors for search hits");
    let (status, raw) = get(addr, &format!("/raw?id={id}"));
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&raw).expect("raw is the canonical JSON");
    assert!(v.get("steps").and_then(|s| s.as_array()).is_some_and(|s| !s.is_empty()));
    assert!(headers(addr, &format!("/raw?id={id}")).contains("application/json"));
    server.stop();
}

#[test]
fn unknown_ids_bad_parameters_and_writes_are_refused_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, server) = serve(dir.path(), ViewOptions::default());
    let addr = server.addr();
    for (target, status) in [
        ("/trajectory?id=no-such-id", 404),
        ("/raw?id=%3Cscript%3E", 404),
        ("/task?key=nope", 404),
        ("/compare?a=x&b=y", 404),
        ("/nothing/here", 404),
        ("/../../etc/passwd", 404),
        ("/trajectory", 400),
        ("/list?tier=9", 400),
        ("/list?sort=ordinal;DROP%20TABLE%20x", 400),
        ("/list?page=-1", 400),
        ("/search?in=everywhere&q=x", 400),
        ("/list?source=%27%20OR%201%3D1%20--", 200),
    ] {
        let (got, body) = get(addr, target);
        assert_eq!(got, status, "{target}");
        if status != 200 {
            assert!(body.contains("<h1 id=\"error\">"), "an error page for {target}");
        }
    }
    let (_, body) = get(addr, "/list?source=%27%20OR%201%3D1%20--");
    assert_eq!(count(&body), 0, "a value is a value, never SQL");
    assert_eq!(request(addr, "POST", "/list").0, 405);
    let h = headers(addr, "/");
    assert!(h.contains("Content-Security-Policy: default-src 'none'"), "{h}");
    assert!(h.contains("X-Content-Type-Options: nosniff"));
    server.stop();
}

#[test]
fn markup_in_the_data_is_shown_as_text_everywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, server) = serve(dir.path(), ViewOptions::default());
    let addr = server.addr();
    let (_, list) = get(addr, "/list?format=openai-messages");
    assert_eq!(count(&list), 1);
    assert!(list.contains(&as_text("hostile <i>source</i>")), "source name as text");
    let id = between(&list, "href=\"/trajectory?id=", "\"").replace("&amp;", "&");
    let (status, page) = get(addr, &format!("/trajectory?{}", form(&[("id", &id)])));
    assert_eq!(status, 200);
    for h in HOSTILE {
        let escaped = trajkit_export::gallery::escape(h);
        assert!(page.contains(&escaped), "not shown as text: {h}");
    }
    assert!(page.contains(&trajkit_export::gallery::escape("x<img src=y onerror=alert(3)>.jsonl")), "path as text");
    for injected in ["<script", "<img", "<iframe", "<svg onload", "<b>evil"] {
        assert!(!page.contains(injected), "injected element: {injected}");
    }
    let (_, overview) = get(addr, "/");
    assert!(!overview.contains("<i>source</i>"));
    let (_, hits) = get(addr, "/search?q=zebraquartz");
    assert_eq!(count(&hits), 1);
    assert!(!hits.contains("<iframe"));
    server.stop();
}

/// Form-encodes pairs.
fn form(pairs: &[(&str, &str)]) -> String {
    pairs.iter().map(|(k, v)| format!("{k}={}", enc(v))).collect::<Vec<_>>().join("&")
}

fn enc(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[test]
fn search_finds_words_in_messages_calls_and_results() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lib, server) = serve(dir.path(), ViewOptions::default());
    let addr = server.addr();
    assert!(server.search_index_path().ends_with(".lib.trajkit-view.sqlite"));
    assert!(!lib.join(".trajkit-view.sqlite").exists(), "the library itself is not touched");
    let (_, all) = get(addr, "/search?q=zebraquartz");
    assert!(all.contains("href=\"/trajectory?id="), "a hit links to its step");
    assert!(all.contains("#e1-step3\""), "the fourth step");
    let (_, calls) = get(addr, "/search?q=evil_tool&in=calls");
    assert_eq!(count(&calls), 1);
    let (_, results) = get(addr, "/search?q=evil_tool&in=results");
    assert_eq!(count(&results), 0);
    let (_, nothing) = get(addr, "/search?q=zebraquartz+OR+qqqxxyy");
    assert_eq!(count(&nothing), 0, "OR is a word to find, not an operator");
    assert_eq!(count(&get(addr, "/search?q=zebraquartz*%29%28").1), 1, "other syntax separates words");
    server.stop();
}

#[test]
fn a_rebuild_while_serving_is_picked_up_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lib, server) = serve(dir.path(), ViewOptions::default());
    let addr = server.addr();
    assert_eq!(count(&get(addr, "/list").1), 39);
    let (_, before) = get(addr, "/search?q=zebraquartz");
    assert_eq!(count(&before), 1);

    // Rebuild the same library from the Gym source alone while the server runs.
    let registry = dir.path().join("src/gym-only.toml");
    std::fs::write(
        &registry,
        "[[source]]\nname = \"nemo-gym\"\npaths = [\"corpus/gym\"]\nsuccess = \"reward >= 1.0\"\n",
    )
    .expect("registry");
    support::build_library(&registry, &lib);
    assert_eq!(count(&get(addr, "/list").1), 29, "the new library");
    assert!(get(addr, "/").1.contains("<dd id=\"fig-trajectories\">29</dd>"));
    server.wait_for_search().expect("new search index");
    assert_eq!(count(&get(addr, "/search?q=zebraquartz").1), 0, "the new search index");
    server.stop();
}
