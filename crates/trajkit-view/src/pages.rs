//! The viewer's pages, built with the gallery's markup builder: text from the data only
//! enters through `Html::text` (escaped), markup only as literals. No script anywhere:
//! filters and search are plain GET forms, so every view is a URL that can be shared.

use trajkit_export::gallery::html::Html;
use trajkit_export::gallery::page::CSS;
use trajkit_export::gallery::render::{self, clip, Limits};
use trajkit_export::gallery::stats::Summary;
use trajkit_library::Row;
use trajkit_model::Trajectory;

use crate::fts::{Column, SearchIndex, COUNT_CAP};
use crate::query::{Facets, Filters, EQUAL_FILTERS, PAGE_SIZE, SORTS};
use crate::url::link;

/// Caps of a trajectory page: every step, long texts cut with a marker, 64 MiB at most.
pub const TRAJECTORY_LIMITS: Limits = Limits { max_steps: 1 << 20, max_text_chars: 20_000, budget: 64 << 20 };
/// Caps of each side of the side-by-side view.
pub const COMPARE_LIMITS: Limits = Limits { max_steps: 5_000, max_text_chars: 5_000, budget: 16 << 20 };

const EXTRA_CSS: &str = "
header.top{background:#24292f;color:#fff;padding:10px 28px;display:flex;gap:18px;align-items:center}
header.top a{color:#fff;font-weight:600}header.top .lib{color:#8c959f;margin-left:auto}
form.filters{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:flex-end;margin:12px 0;padding:10px;border:1px solid var(--line);border-radius:8px;background:var(--bg)}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}
form.filters select,form.filters input{font:inherit;font-size:13px;padding:2px 4px;max-width:220px}
table.list{width:100%}table.list td{max-width:320px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.pager{margin:10px 0;display:flex;gap:14px;align-items:center;color:var(--muted)}
table.side{width:100%;table-layout:fixed}table.side>tbody>tr>td{width:50%;vertical-align:top;padding:0 6px;border:0}
table.side ol.steps{padding:0}.side-head td{border-bottom:1px solid var(--line)}
.status-success{color:var(--ok);font-weight:600}.status-failure{color:var(--bad);font-weight:600}.status-unknown{color:var(--unk)}
";

/// The whole document around `body`; `title` is data (escaped).
pub fn layout(title: &str, library: &str, body: &Html) -> String {
    let mut h = Html::new();
    h.raw("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    h.raw("<title>").text(title).raw(" · trajkit view</title><style>").raw(CSS).raw(EXTRA_CSS).raw("</style></head>\n");
    h.raw("<body><header class=\"top\"><a href=\"/\">Overview</a><a href=\"/list\">Trajectories</a>");
    h.raw("<a href=\"/search\">Search</a><span class=\"lib\">").text(library).raw("</span></header><main>");
    h.append(body);
    h.raw("<footer>trajkit view ").raw(env!("CARGO_PKG_VERSION")).raw(" · read-only</footer></main></body></html>\n");
    h.into_string()
}

/// The overview: the gallery's summary and charts, then a link per source to its list.
pub fn overview(summary: &Summary, library: &str) -> Html {
    let mut h = Html::new();
    h.raw("<h1>Trajectory library <code>").text(library).raw("</code></h1>");
    h.append(&trajkit_export::gallery::page::summary(summary));
    h.raw("<section id=\"browse\"><h2>Browse</h2><p>");
    for (name, f) in summary.sources_in_page_order() {
        h.raw("<a href=\"").text(&link("/list", &[("source", name)])).raw("\">").text(clip(name, 80).0);
        h.raw("</a> (").num(f.outcomes.total()).raw(") · ");
    }
    h.raw("<a href=\"/list?gap=any\">with gaps</a> · <a href=\"/list?outcome=failure\">failures</a></p></section>");
    h
}

/// A link to a trajectory page (optionally to one of its steps).
fn trajectory_link(h: &mut Html, id: &str, step: Option<u64>) {
    let mut url = link("/trajectory", &[("id", id)]);
    if let Some(s) = step {
        url.push_str(&format!("#e1-step{s}"));
    }
    h.raw("<a href=\"").text(&url).raw("\">");
}

fn status_cell(h: &mut Html, status: &str) {
    let class: &'static str = match status {
        "success" => "status-success",
        "failure" => "status-failure",
        _ => "status-unknown",
    };
    h.raw("<td class=\"").raw(class).raw("\">").text(status).raw("</td>");
}

/// The list: the filter form (values from the library), the page of rows, the pager.
pub fn list(f: &Filters, facets: &Facets, rows: &[Row], total: u64) -> Html {
    let mut h = Html::new();
    h.raw("<h1>Trajectories</h1><form class=\"filters\" method=\"get\" action=\"/list\">");
    for (param, values) in &facets.values {
        h.raw("<label>").text(param).raw("<select name=\"").text(param).raw("\"><option value=\"\">any</option>");
        let chosen = f.value(param);
        for v in values {
            h.raw("<option value=\"").text(v).raw("\"");
            if chosen == Some(v.as_str()) {
                h.raw(" selected");
            }
            h.raw(">").text(clip(v, 60).0).raw("</option>");
        }
        h.raw("</select></label>");
    }
    for (param, label) in [("task", "task key"), ("dup", "duplicate group")] {
        h.raw("<label>").raw(label).raw("<input name=\"").raw(param).raw("\" value=\"");
        h.text(f.value(param).unwrap_or("")).raw("\"></label>");
    }
    h.raw("<label>tier ≥<select name=\"tier\"><option value=\"\">any</option>");
    for t in 0..=4u64 {
        h.raw("<option");
        if f.min_tier.map(u64::from) == Some(t) {
            h.raw(" selected");
        }
        h.raw(">").num(t).raw("</option>");
    }
    h.raw("</select></label><label>gaps<select name=\"gap\"><option value=\"\">any or none</option>");
    let kinds = std::iter::once("any").chain(facets.gap_kinds.iter().map(String::as_str));
    for k in kinds {
        h.raw("<option value=\"").text(k).raw("\"");
        if f.gap.as_deref() == Some(k) {
            h.raw(" selected");
        }
        h.raw(">").text(if k == "any" { "some gap" } else { k }).raw("</option>");
    }
    h.raw("</select></label><label>sort<select name=\"sort\">");
    for (i, (name, _)) in SORTS.iter().enumerate() {
        h.raw("<option value=\"").raw(name).raw("\"");
        if i == f.sort {
            h.raw(" selected");
        }
        h.raw(">").raw(name).raw("</option>");
    }
    h.raw("</select></label><label>order<select name=\"order\"><option value=\"asc\">ascending</option>");
    h.raw("<option value=\"desc\"")
        .raw(if f.desc { " selected" } else { "" })
        .raw(">descending</option></select></label>");
    h.raw("<button type=\"submit\" id=\"apply\">Apply</button> <a href=\"/list\">clear</a></form>");
    h.raw("<p id=\"count\">").num(total).raw(" trajectories match.</p>");
    h.raw("<table class=\"list\" id=\"results\"><tr><th>id</th><th>source</th><th>model</th><th>task</th>");
    h.raw("<th>outcome</th><th>tier</th><th>split</th><th>steps</th><th>tool calls</th><th>gaps</th></tr>");
    for r in rows {
        h.raw("<tr><td>");
        trajectory_link(&mut h, &r.id, None);
        h.text(clip(&r.id, 60).0).raw("</a></td><td>").text(&r.source).raw("</td><td>");
        h.text(r.model.as_deref().unwrap_or(""))
            .raw("</td><td><a href=\"")
            .text(&link("/task", &[("key", &r.task_key)]));
        h.raw("\">").text(clip(&r.task_key, 60).0).raw("</a></td>");
        status_cell(&mut h, &r.status);
        h.raw("<td class=\"n\">").num(u64::from(r.quality_tier)).raw("</td><td>").text(&r.split).raw("</td>");
        h.raw("<td class=\"n\">").num(r.steps).raw("</td><td class=\"n\">").num(r.tool_calls).raw("</td><td>");
        h.num(r.gaps.values().sum()).raw("</td></tr>");
    }
    h.raw("</table>");
    pager(&mut h, "/list", &f.pairs(1), f.page, total);
    h
}

/// Previous / next links keeping the other parameters.
fn pager(h: &mut Html, path: &str, base: &[(String, String)], page: u64, total: u64) {
    let pages = total.div_ceil(PAGE_SIZE).max(1);
    let at = |p: u64| {
        let mut pairs: Vec<(&str, String)> = base.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        if p > 1 {
            pairs.push(("page", p.to_string()));
        }
        let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        link(path, &refs)
    };
    h.raw("<p class=\"pager\">");
    if page > 1 {
        h.raw("<a rel=\"prev\" href=\"").text(&at(page - 1)).raw("\">← previous</a>");
    }
    h.raw("<span>page ").num(page).raw(" of ").num(pages).raw("</span>");
    if page < pages {
        h.raw("<a rel=\"next\" id=\"next\" href=\"").text(&at(page + 1)).raw("\">next →</a>");
    }
    h.raw("</p>");
}

/// One search hit: the step's trajectory row and step index.
pub struct SearchHit {
    pub row: Row,
    pub step: u64,
}

/// The search page: the form, then the state of the index or the hits.
pub fn search(q: &str, column: Column, state: &SearchIndex, hits: &[SearchHit], count: u64, page: u64) -> Html {
    let mut h = Html::new();
    h.raw("<h1>Search</h1><form class=\"filters\" method=\"get\" action=\"/search\"><label>words");
    h.raw("<input name=\"q\" id=\"q\" size=\"40\" value=\"").text(q).raw("\"></label><label>in<select name=\"in\">");
    for c in [Column::All, Column::Message, Column::Calls, Column::Results] {
        h.raw("<option value=\"").raw(c.as_str()).raw("\"").raw(if c == column { " selected" } else { "" });
        h.raw(">").raw(c.as_str()).raw("</option>");
    }
    h.raw("</select></label><button type=\"submit\" id=\"go\">Search</button></form>");
    h.raw("<p class=\"note\">Every word must occur in one step (messages and reasoning, tool calls, tool results; ");
    h.raw("subagent steps count under the step that spawned them). Hits in library order.</p>");
    match state {
        SearchIndex::Disabled => {
            h.raw("<p id=\"search-state\">Search is off (started with --no-search).</p>");
        }
        SearchIndex::Building { done, total } => {
            h.raw("<p id=\"search-state\">The search index is being built: ").num(*done).raw(" of ").num(*total);
            h.raw(" trajectories. Reload in a moment.</p>");
        }
        SearchIndex::Failed(e) => {
            h.raw("<p id=\"search-state\">The search index could not be built: ").text(e).raw("</p>");
        }
        SearchIndex::Ready(_) if q.trim().is_empty() => {}
        SearchIndex::Ready(_) => {
            h.raw("<p id=\"count\">");
            if count > COUNT_CAP {
                h.raw("more than ").num(COUNT_CAP);
            } else {
                h.num(count);
            }
            h.raw(" matching steps.</p><table class=\"list\" id=\"results\"><tr><th>trajectory</th><th>step</th>");
            h.raw("<th>source</th><th>model</th><th>task</th><th>outcome</th></tr>");
            for hit in hits {
                h.raw("<tr><td>");
                trajectory_link(&mut h, &hit.row.id, Some(hit.step));
                h.text(clip(&hit.row.id, 60).0).raw("</a></td><td class=\"n\">").num(hit.step + 1).raw("</td><td>");
                h.text(&hit.row.source).raw("</td><td>").text(hit.row.model.as_deref().unwrap_or("")).raw("</td><td>");
                h.text(clip(&hit.row.task_key, 60).0).raw("</td>");
                status_cell(&mut h, &hit.row.status);
                h.raw("</tr>");
            }
            h.raw("</table>");
            let base = vec![("q".to_string(), q.to_string()), ("in".to_string(), column.as_str().to_string())];
            pager(&mut h, "/search", &base, page, count.min(COUNT_CAP));
        }
    }
    h
}

/// Facts of a row the example header does not show, as a definition list.
fn row_facts(h: &mut Html, row: &Row) {
    h.raw("<dl class=\"facts\" id=\"metadata\">");
    let mut fact = |name: &'static str, value: &str| {
        h.raw("<dt>").raw(name).raw("</dt><dd>").text(value).raw("</dd>");
    };
    fact("library id", &row.id);
    fact("source", &row.source);
    fact("split", &row.split);
    fact("quality tier", &row.quality_tier.to_string());
    fact("task rank", &row.task_rank.to_string());
    fact("training eligible", if row.training_eligible { "yes" } else { "no" });
    fact("duplicate group", &format!("{} ({} trajectories)", row.duplicate_group, row.duplicate_group_size));
    if let (Some(p), Some(c)) = (row.prompt_tokens, row.completion_tokens) {
        fact("tokens", &format!("{p} prompt, {c} completion"));
    }
    if let Some(cost) = row.cost_usd {
        fact("cost (USD)", &format!("{cost}"));
    }
    if !row.structural_problems.is_empty() {
        fact("structural problems", &row.structural_problems.join("; "));
    }
    h.raw("</dl>");
}

/// The trajectory page: header, links, row facts, the whole conversation.
pub fn trajectory(row: &Row, t: &Trajectory) -> Html {
    let mut h = Html::new();
    h.raw("<p class=\"links\"><a href=\"").text(&link("/task", &[("key", &row.task_key)])).raw("\" id=\"task-link\">");
    h.raw("all attempts at this task</a> · <a href=\"").text(&link("/list", &[("dup", &row.duplicate_group)]));
    h.raw("\">duplicate group</a> · <a id=\"raw-link\" href=\"").text(&link("/raw", &[("id", &row.id)]));
    h.raw("\">raw canonical JSON</a></p>");
    h.append(&render::example(1, row, t, TRAJECTORY_LIMITS));
    h.raw("<details><summary>Library metadata</summary>");
    row_facts(&mut h, row);
    h.raw("</details>");
    h
}

/// The task page: every attempt with its outcome, grouped as success@k groups them, and
/// a form to open two attempts side by side.
pub fn task(key: &str, rows: &[Row], total: u64) -> Html {
    let mut h = Html::new();
    h.raw("<h1>Task <code>").text(key).raw("</code></h1><p id=\"count\">").num(total).raw(" attempts");
    if total > rows.len() as u64 {
        h.raw(" (the first ").num(rows.len() as u64).raw(" shown)");
    }
    h.raw(". success@k counts a (source, model) group as solved at k when one of its first k attempts, in ");
    h.raw("source-locator order (the order below), succeeded; unknown outcomes are not failures.</p>");
    h.raw("<form method=\"get\" action=\"/compare\"><table class=\"list\" id=\"attempts\"><tr><th>A</th><th>B</th>");
    h.raw("<th>#</th><th>source</th><th>model</th><th>outcome</th><th>reward</th><th>steps</th><th>first success at k</th><th>id</th></tr>");
    let mut group: Option<(&str, Option<&str>)> = None;
    let (mut k, mut first_success) = (0u64, None);
    for (i, r) in rows.iter().enumerate() {
        let key = (r.source.as_str(), r.model.as_deref());
        if group != Some(key) {
            group = Some(key);
            k = 0;
            first_success = None;
        }
        k += 1;
        if r.status == "success" && first_success.is_none() {
            first_success = Some(k);
        }
        h.raw("<tr><td><input type=\"radio\" name=\"a\" value=\"").text(&r.id).raw("\"");
        h.raw(if i == 0 { " checked" } else { "" }).raw("></td><td><input type=\"radio\" name=\"b\" value=\"");
        h.text(&r.id).raw("\"").raw(if i == 1 { " checked" } else { "" }).raw("></td><td class=\"n\">").num(k);
        h.raw("</td><td>").text(&r.source).raw("</td><td>").text(r.model.as_deref().unwrap_or("")).raw("</td>");
        status_cell(&mut h, &r.status);
        h.raw("<td>");
        if let Some(x) = r.reward {
            h.dec(x, 3);
        }
        h.raw("</td><td class=\"n\">").num(r.steps).raw("</td><td>");
        if let Some(s) = first_success {
            h.num(s);
        }
        h.raw("</td><td>");
        trajectory_link(&mut h, &r.id, None);
        h.text(clip(&r.id, 60).0).raw("</a></td></tr>");
    }
    h.raw("</table><button type=\"submit\" id=\"compare\">Side by side</button></form>");
    h
}

/// Two attempts side by side, aligned by step index.
pub fn compare(a: (&Row, &Trajectory), b: (&Row, &Trajectory)) -> Html {
    let mut h = Html::new();
    h.raw("<h1>Side by side</h1><table class=\"side\" id=\"side-by-side\"><tr class=\"side-head\">");
    for (n, (row, t)) in [(1u64, a), (2, b)] {
        h.raw("<td><article class=\"example\" id=\"e").num(n).raw("\">");
        h.append(&render::header_html(row, t, COMPARE_LIMITS.max_text_chars));
        h.raw("<p>");
        trajectory_link(&mut h, &row.id, None);
        h.raw("open this trajectory</a></p></article></td>");
    }
    h.raw("</tr>");
    let left = render::step_blocks(1, a.1, COMPARE_LIMITS);
    let right = render::step_blocks(2, b.1, COMPARE_LIMITS);
    for i in 0..left.len().max(right.len()) {
        h.raw("<tr class=\"aligned\">");
        for side in [&left, &right] {
            h.raw("<td><ol class=\"steps\">");
            if let Some(block) = side.get(i) {
                h.append(block);
            }
            h.raw("</ol></td>");
        }
        h.raw("</tr>");
    }
    h.raw("</table>");
    h
}

/// An error page (404, 400, 503, 500) with the message as text.
pub fn error(status: u16, message: &str) -> Html {
    let mut h = Html::new();
    let title: &'static str = match status {
        404 => "Not found",
        400 => "Bad request",
        503 => "The library is being rebuilt",
        _ => "Error",
    };
    h.raw("<h1 id=\"error\">").raw(title).raw("</h1><p>").text(message).raw("</p>");
    if status == 503 {
        h.raw("<p>Reload in a moment.</p>");
    }
    h.raw("<p><a href=\"/\">Overview</a></p>");
    h
}

/// The query parameters the list understands (for the docs and tests).
pub fn list_parameters() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = EQUAL_FILTERS.iter().map(|(p, _)| *p).collect();
    v.extend(["tier", "gap", "sort", "order", "page"]);
    v
}
