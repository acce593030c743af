//! The gallery page on a library assembled from the real fixtures (see
//! gallery_support): figures, sampling, links, subagents, escaping, caps, size bound,
//! redaction and determinism, asserted on the HTML text. The browser's view is tested in
//! gallery_browser.rs.

mod gallery_support;

use gallery_support::{hostile_entry, standard_entries, write_library, HOSTILE};
use trajkit_export::gallery::{escape, write_gallery, GalleryOptions, GalleryReport};
use trajkit_library::Row;
use trajkit_model::{Step, Trajectory};

/// Writes the gallery of a library made of `entries` and reads the page back.
fn gallery(entries: &[(Row, Trajectory)], opts: &GalleryOptions) -> (String, GalleryReport) {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = write_library(&dir.path().join("lib"), entries);
    let out = dir.path().join("examples.html");
    let report = write_gallery(&lib, &out, opts).expect("gallery");
    let page = std::fs::read_to_string(&out).expect("page");
    assert_eq!(report.bytes, page.len());
    (page, report)
}

/// The HTML of the source section whose heading is `name`.
fn section<'a>(page: &'a str, name: &str) -> &'a str {
    let heading = format!("<h2>{}</h2>", escape(name));
    let at = page.find(&heading).unwrap_or_else(|| panic!("no section {name}"));
    let start = page[..at].rfind("<section class=\"source\"").expect("section start");
    let end = page[at..].find("</section>").map_or(page.len(), |e| at + e);
    &page[start..end]
}

/// The article of the example whose record id is `id`.
fn article<'a>(page: &'a str, id: &str) -> &'a str {
    let marker = format!("id <code>{}</code>", escape(id));
    let at = page.find(&marker).unwrap_or_else(|| panic!("example {id} not on the page"));
    let start = page[..at].rfind("<article").expect("article start");
    let end = page[at..].find("</article>").map_or(page.len(), |e| at + e);
    &page[start..end]
}

fn figure(page: &str, id: &str) -> u64 {
    let marker = format!("id=\"{id}\">");
    let at = page.find(&marker).unwrap_or_else(|| panic!("no figure {id}")) + marker.len();
    page[at..].split('<').next().and_then(|n| n.parse().ok()).expect("a number")
}

fn entry<'a>(entries: &'a [(Row, Trajectory)], path_part: &str) -> &'a (Row, Trajectory) {
    entries.iter().find(|(r, _)| r.path.contains(path_part)).expect("fixture in the library")
}

#[test]
fn summary_figures_are_those_of_the_rows() {
    let entries = standard_entries();
    let (page, report) = gallery(&entries, &GalleryOptions::default());
    // Totals as `trajkit inspect` reports them for these files (README, fixture NOTICEs).
    assert_eq!(report.trajectories, 18);
    assert_eq!(report.sources, 5);
    assert_eq!(figure(&page, "fig-trajectories"), 18);
    assert_eq!(figure(&page, "fig-tasks"), 17, "the two terminus2 hello-world runs share one task key");
    assert_eq!(figure(&page, "fig-sources"), 5);
    assert_eq!(figure(&page, "fig-success"), 7);
    assert_eq!(figure(&page, "fig-failure"), 5);
    assert_eq!(figure(&page, "fig-unknown"), 6);
    assert_eq!(figure(&page, "fig-steps"), 12 + 40 + 10 + 4 + 33 + 65 + 16 + 28 + 12 + 26);
    assert_eq!(figure(&page, "fig-tool-calls"), 12 + 46 + 7 + 3 + 13 + 20 + 6 + 14 + 5 + 12);
    assert_eq!(figure(&page, "fig-subagents"), 3 + 2 + 1);
    // Splits table and the sources table row of the Gym aviary source.
    assert!(page.contains("<tr><td>test</td><td class=\"n\">4</td></tr>"));
    assert!(page.contains("<tr><td>train</td><td class=\"n\">9</td></tr>"));
    assert!(page.contains("<tr><td>validation</td><td class=\"n\">5</td></tr>"));
    assert!(page.contains(
        "<tr><td>nemo-gym-aviary</td><td>gym</td><td></td><td></td><td class=\"n\">5</td><td class=\"n\">1</td>\
         <td class=\"n\">4</td><td class=\"n\">0</td><td class=\"n\">33</td><td class=\"n\">13</td></tr>"
    ));
    // Four charts, each an inline SVG.
    assert_eq!(page.matches("<svg ").count(), 4);
    for caption in ["Outcomes by source", "Outcomes by model", "Steps per trajectory", "Tool calls per trajectory"] {
        assert!(page.contains(&format!("<figcaption>{caption}</figcaption>")), "{caption}");
    }
}

#[test]
fn examples_balance_successes_and_failures_per_source() {
    let entries = standard_entries();
    let count = |s: &str, class: &str| s.matches(&format!("badge status-{class}\"")).count();
    for (k, expected) in [
        // source: (success, failure, unknown) for k = 4 and k = 2
        (4, [("harbor-atif", (1, 1, 2)), ("nemo-gym-aviary", (1, 3, 0)), ("nemo-gym-tau2", (4, 0, 0))]),
        (2, [("harbor-atif", (1, 1, 0)), ("nemo-gym-aviary", (1, 1, 0)), ("nemo-gym-tau2", (2, 0, 0))]),
    ] {
        let opts = GalleryOptions { examples_per_source: k, ..GalleryOptions::default() };
        let (page, report) = gallery(&entries, &opts);
        for (source, (s, f, u)) in expected {
            let sec = section(&page, source);
            assert_eq!((count(sec, "success"), count(sec, "failure"), count(sec, "unknown")), (s, f, u), "{source}");
        }
        for source in ["claude-code", "swe-agent"] {
            assert_eq!(count(section(&page, source), "unknown"), 2, "{source}");
        }
        assert_eq!(report.examples, if k == 4 { 4 + 4 + 4 + 2 + 2 } else { 2 + 2 + 2 + 2 + 2 });
        assert_eq!(page.matches("<article class=\"example\"").count(), report.examples);
        assert_eq!(report.sources_without_examples, 0);
    }
}

#[test]
fn the_same_library_gives_the_same_bytes() {
    let entries = standard_entries();
    let (a, _) = gallery(&entries, &GalleryOptions::default());
    let (b, _) = gallery(&entries, &GalleryOptions::default());
    assert!(a == b, "two renders of one library differ");
}

#[test]
fn tool_calls_link_to_their_results_and_every_anchor_resolves() {
    let entries = standard_entries();
    let (page, _) = gallery(&entries, &GalleryOptions::default());
    let mut links = 0;
    for href in page.split("href=\"").skip(1) {
        let target = href.split('"').next().unwrap_or_default();
        assert!(target.starts_with('#'), "a link leaves the page: {target}");
        assert!(page.contains(&format!("id=\"{}\"", &target[1..])), "dangling link {target}");
        links += 1;
    }
    assert!(links > 0);
    // The Claude Code pass run (the only success of its source, so always shown): every
    // call answered by a result in the record links to it, and each result links back.
    let (_, t) = entry(&entries, "claude-code-pass");
    let answered = |s: &Step| s.tool_results.iter().filter_map(|r| r.call_id.clone()).collect::<Vec<_>>();
    let ids: Vec<String> = t.steps.iter().flat_map(answered).collect();
    let calls = t.steps.iter().flat_map(|s| &s.tool_calls).filter(|c| c.id.as_ref().is_some_and(|i| ids.contains(i)));
    let ex = article(&page, &t.id);
    assert_eq!(ex.matches(">result ↓</a>").count(), calls.count());
    assert_eq!(ex.matches(" ↑</a>").count(), ids.len());
    assert_eq!(ex.matches("<div class=\"call\"").count(), 12);
}

#[test]
fn subagents_are_nested_and_collapsible() {
    let entries = standard_entries();
    let (page, _) = gallery(&entries, &GalleryOptions::default());
    let (_, t) = entry(&entries, "terminus2-context-summarization-v1.7");
    let ex = article(&page, &t.id);
    assert_eq!(ex.matches("<details class=\"subagent\"").count(), 3);
    for sub in &t.subagents {
        assert!(ex.contains(&format!(
            "<code>{}</code> · {} steps",
            escape(&sub.trajectory.id),
            sub.trajectory.steps.len()
        )));
    }
    // Spawned by step 5 (index 4): the subagents follow that step, before step 6.
    let step5 = ex.find("step 5</span>").expect("step 5");
    let first_sub = ex.find("<details class=\"subagent\"").expect("subagent");
    let step6 = ex[first_sub..].find("<span class=\"idx\">step 6</span>").map(|i| i + first_sub);
    assert!(step5 < first_sub && step6.is_some());
    assert_eq!(page.matches("<details class=\"subagent\"").count(), 3 + 2 + 1);
}

#[test]
fn hostile_markup_in_the_data_renders_as_text() {
    // Synthetic by necessity: no published trajectory carries markup meant to break a viewer.
    let mut entries = standard_entries();
    entries.push(hostile_entry());
    let (page, _) = gallery(&entries, &GalleryOptions::default());
    for bad in ["<script", "<img", "<iframe", "<h1 id=injected", "href=\"javascript", "<svg onload"] {
        assert!(!page.contains(bad), "unescaped {bad}");
    }
    for h in HOSTILE {
        assert!(page.contains(&escape(h)), "{h} not shown as text");
    }
    assert_eq!(page.matches("<details").count(), page.matches("</details>").count());
    assert_eq!(page.matches("<article").count(), page.matches("</article>").count());
    assert_eq!(page.matches("<style>").count(), 1);
    // The hostile source's examples, chart labels and table rows are all there, escaped.
    let ex = article(&page, "hostile-1");
    // Title: environment · task id.
    assert!(ex.contains(&format!("<h3 class=\"ex-title\">{} · task {}</h3>", escape(HOSTILE[2]), escape(HOSTILE[0]))));
    assert!(page.contains(&format!("<tr><td>hostile {}</td>", escape(HOSTILE[0]))));
    assert!(page.contains(&format!("<title>{}</title>", escape(HOSTILE[6]))), "model chart label");
}

#[test]
fn long_texts_and_long_conversations_are_cut_with_a_visible_note() {
    let entries = standard_entries();
    let opts = GalleryOptions { max_text_chars: 100, max_steps_per_example: 5, ..GalleryOptions::default() };
    let (page, _) = gallery(&entries, &opts);
    let (_, fail) = entry(&entries, "claude-code-fail");
    let ex = article(&page, &fail.id);
    assert_eq!(fail.steps.len(), 40);
    assert!(ex.contains("35 more steps not shown (at most 5 steps per conversation)."));
    assert_eq!(ex.matches("<li class=\"step ").count(), 5);
    let instruction = fail.task.instruction.as_deref().expect("instruction");
    let cut = instruction.chars().count() - 100;
    assert!(ex.contains(&format!("… [truncated: {cut} more characters]")), "instruction cut by {cut}");
}

#[test]
fn the_page_stays_within_its_size_bound() {
    let entries = standard_entries();
    let opts = GalleryOptions { max_bytes: 150_000, ..GalleryOptions::default() };
    let (page, report) = gallery(&entries, &opts);
    assert!(page.len() <= 150_000, "{} bytes", page.len());
    assert!(report.sources_without_examples > 0);
    assert_eq!(page.matches("Examples left out").count(), report.sources_without_examples);
    assert_eq!(page.matches("<article class=\"example\"").count(), report.examples);

    // A library of 80 sources (real records repeated under new ids), default options: more
    // examples than 4 MiB holds at their minimum share, so the last sources show none.
    let mut many = Vec::new();
    for s in 0..80 {
        for (row, t) in entries.iter().take(6) {
            let (mut row, mut t) = (row.clone(), t.clone());
            row.id = format!("{}~{s}", row.id);
            t.id = row.id.clone();
            row.source = format!("source-{s:02}");
            many.push((row, t));
        }
    }
    let (page, report) = gallery(&many, &GalleryOptions::default());
    assert_eq!((report.trajectories, report.sources), (480, 80));
    assert!(page.len() <= 4 << 20, "{} bytes", page.len());
    assert!(report.sources_without_examples > 0);
    assert_eq!(report.examples + 4 * report.sources_without_examples, 4 * 80);
    let shown = 80 - report.sources_without_examples;
    assert!(section(&page, &format!("source-{:02}", shown - 1)).contains("Showing 4."));
    assert!(section(&page, &format!("source-{shown:02}")).contains("Examples left out"));
}

#[test]
fn the_redaction_hook_sees_every_example_before_it_is_rendered() {
    let entries = standard_entries();
    let (_, pass) = entry(&entries, "claude-code-pass");
    let secret = pass.task.instruction.clone().expect("instruction");
    let secret_line = escape(secret.lines().next().expect("a line"));
    let (plain, _) = gallery(&entries, &GalleryOptions::default());
    assert!(plain.contains(&secret_line));
    let redact = |t: &mut Trajectory| {
        t.task.instruction = Some("[redacted]".into());
        for s in &mut t.steps {
            if s.content.is_some() {
                s.content = Some(serde_json::Value::from("[redacted]").into());
            }
            for r in &mut s.tool_results {
                r.content = Some(serde_json::Value::from("[redacted]").into());
            }
        }
    };
    let opts = GalleryOptions { redact: Some(&redact), ..GalleryOptions::default() };
    let (page, report) = gallery(&entries, &opts);
    assert!(!page.contains(&secret_line));
    let ex = article(&page, &pass.id);
    let contents = pass.steps.iter().filter(|s| s.content.is_some()).count();
    let results: usize = pass.steps.iter().map(|s| s.tool_results.len()).sum();
    // The title (the instruction's first line), the instruction, every content and result.
    assert_eq!(ex.matches("[redacted]").count(), 2 + contents + results);
    assert_eq!(report.examples, 4 + 4 + 4 + 2 + 2);
}

#[test]
fn an_empty_library_gives_a_page_of_zeros() {
    let (page, report) = gallery(&[], &GalleryOptions::default());
    assert_eq!(
        report,
        GalleryReport { trajectories: 0, sources: 0, examples: 0, sources_without_examples: 0, bytes: page.len() }
    );
    for id in ["fig-trajectories", "fig-tasks", "fig-sources", "fig-success", "fig-failure", "fig-unknown"] {
        assert_eq!(figure(&page, id), 0, "{id}");
    }
    assert!(!page.contains("<article"));
    assert!(page.ends_with("</html>\n"));
}
