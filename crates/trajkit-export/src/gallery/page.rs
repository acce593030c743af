//! The page around the examples: head with inline CSS (no script, no network: a
//! Content-Security-Policy says so to the browser), the summary with its charts, the
//! source sections and the footer.

use super::charts::{histogram, outcome_bars, top_bars};
use super::html::Html;
use super::render::clip;
use super::stats::{Class, Summary};

/// Rows of the sources table; the rest are counted in one line.
pub const MAX_SOURCE_ROWS: usize = 200;

/// The stylesheet of the gallery, shared by the viewer (`trajkit-view`).
pub const CSS: &str = r#"
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#f6f8fa;--ok:#1a7f37;--bad:#cf222e;--unk:#6e7781}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;color:var(--fg);background:#fff}
main{max-width:1100px;margin:0 auto;padding:24px 28px 64px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:36px 0 8px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:16px;margin:0 0 6px;word-break:break-word}
.sub{color:var(--muted);margin:0 0 18px}
nav{margin:8px 0 20px;color:var(--muted)}nav a{margin-right:10px}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
code,pre,.json,.args,.result .text,.call .text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px;margin:0 0 18px;padding:0}
.figures div{border:1px solid var(--line);border-radius:8px;padding:10px 12px;background:var(--bg)}
.figures dt{color:var(--muted);font-size:12px}.figures dd{margin:0;font-size:22px;font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:14px}
.chart{margin:0;border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.chart figcaption{font-weight:600;margin-bottom:6px}.chart svg{width:100%;height:auto;display:block}
.chart text{font-size:12px;fill:#1f2328}.chart text.small{font-size:10px}.chart .count{fill:#57606a}
.legend span{display:inline-block;margin-right:14px;color:var(--muted)}.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:left;vertical-align:top}
th{background:var(--bg)}td.n{text-align:right;font-variant-numeric:tabular-nums}
.tables{display:flex;flex-wrap:wrap;align-items:flex-start;gap:24px}
.source-info{color:var(--muted);margin:0 0 12px}
.example{border:1px solid var(--line);border-radius:10px;margin:16px 0 24px;overflow:hidden}
.example>header{background:var(--bg);padding:12px 16px;border-bottom:1px solid var(--line)}
.badges{margin:2px 0 8px}.badge{display:inline-block;border:1px solid var(--line);border-radius:999px;padding:0 8px;margin:0 6px 4px 0;font-size:12px;background:#fff;color:var(--muted)}
.badge.status-success{background:var(--ok);border-color:var(--ok);color:#fff;font-weight:600}
.badge.status-failure{background:var(--bad);border-color:var(--bad);color:#fff;font-weight:600}
.badge.status-unknown{background:var(--unk);border-color:var(--unk);color:#fff;font-weight:600}
.badge.warn{border-color:#d4a72c;color:#7d4e00;background:#fff8c5}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0;font-size:13px}
.facts dt{color:var(--muted)}.facts dd{margin:0;word-break:break-all}
details>summary{cursor:pointer;color:var(--muted)}
.instruction{margin-top:8px}
ol.steps{list-style:none;margin:0;padding:12px 16px}
.step{border-left:4px solid var(--line);padding:6px 12px;margin:0 0 10px;background:#fff}
.step-head{display:flex;flex-wrap:wrap;align-items:center;gap:6px;margin-bottom:4px}
.step-head .badge{margin:0}
.role{font-weight:700;text-transform:uppercase;font-size:11px;letter-spacing:.04em;padding:1px 6px;border-radius:4px;background:#eaeef2}
.idx,.ts,.tokens{color:var(--muted);font-size:12px}
.role-system{border-left-color:#8c959f}.role-system .role{background:#eaeef2}
.role-user{border-left-color:#0969da}.role-user .role{background:#ddf4ff;color:#0550ae}
.role-assistant{border-left-color:#8250df}.role-assistant .role{background:#fbefff;color:#6639ba}
.role-tool{border-left-color:#bc4c00}.role-tool .role{background:#fff1e5;color:#953800}
.role-environment{border-left-color:#1b7c83}.role-environment .role{background:#d8f3f6;color:#0e5a60}
.sidechain{margin-left:24px}.copied{opacity:.7}
.text{white-space:pre-wrap;word-break:break-word;max-height:26em;overflow:auto;margin:4px 0}
pre.json{white-space:pre-wrap;word-break:break-word;max-height:20em;overflow:auto;background:var(--bg);padding:6px 8px;border-radius:6px;margin:4px 0}
.reasoning{margin:4px 0;padding:4px 8px;background:#fbf7ff;border-radius:6px}.reasoning .text{color:#57606a;font-style:italic}
.call,.result{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:6px 0;background:var(--bg)}
.result{background:#fff}.result .text{max-height:16em;font-size:12.5px}
.call:target,.result:target,.subagent:target{outline:3px solid #54aeff}
.call-head{display:flex;flex-wrap:wrap;align-items:center;gap:6px}.call-head .badge{margin:0}
.kind{font-size:11px;text-transform:uppercase;color:var(--muted);font-weight:600}.fn{font-weight:600;font-family:ui-monospace,Menlo,Consolas,monospace}
.cid{color:var(--muted);font-size:11.5px}
.args{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:4px 0}.args dt{color:var(--muted)}.args dd{margin:0;white-space:pre-wrap;word-break:break-word;max-height:20em;overflow:auto}
.subagent-item{margin:0 0 10px}.subagent{border:1px dashed #8250df;border-radius:8px;padding:6px 10px;background:#fdfaff}
.subagent ol.steps{padding:8px 0 0 8px}
.note{color:var(--muted);font-style:italic}
.gap{list-style:none;margin:0 0 10px;padding:4px 12px;border-left:4px dashed #d4a72c;color:#7d4e00;font-size:13px}
.trunc{display:inline-block;margin-left:4px;color:#7d4e00;background:#fff8c5;border-radius:4px;padding:0 4px;font-style:normal;font-family:system-ui,sans-serif;font-size:12px}
footer{margin-top:40px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:10px}
"#;

/// The document head and the page title.
pub fn head(library_name: &str) -> Html {
    let mut h = Html::new();
    h.raw("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.raw("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">");
    h.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    h.raw("<title>trajkit gallery · ").text(library_name).raw("</title><style>").raw(CSS).raw("</style></head>\n");
    h.raw("<body><main><h1>Trajectory library <code>").text(library_name).raw("</code></h1>");
    h
}

/// Links to the summary and to each source's examples (ids `src-N` in page order).
pub fn nav(h: &mut Html, s: &Summary) {
    h.raw("<nav><a href=\"#summary\">Summary</a> Examples:");
    for (i, (name, _)) in s.sources_in_page_order().iter().take(MAX_SOURCE_ROWS).enumerate() {
        let (short, cut) = clip(name, 40);
        h.raw(" <a href=\"#src-").num(i as u64 + 1).raw("\">").text(short);
        if cut > 0 {
            h.raw("…");
        }
        h.raw("</a>");
    }
    h.raw("</nav>");
}

fn figure(out: &mut Html, id: &'static str, label: &'static str, value: u64) {
    out.raw("<div><dt>").raw(label).raw("</dt><dd id=\"").raw(id).raw("\">").num(value).raw("</dd></div>");
}

/// The summary (after the gallery's [`nav`]): headline figures, charts, splits, verification and the sources table.
pub fn summary(s: &Summary) -> Html {
    let mut h = Html::new();
    h.raw("<section id=\"summary\"><h2>Summary</h2><dl class=\"figures\">");
    figure(&mut h, "fig-trajectories", "trajectories", s.trajectories);
    figure(&mut h, "fig-tasks", "tasks", s.tasks());
    figure(&mut h, "fig-sources", "sources", s.by_source.len() as u64);
    figure(&mut h, "fig-models", "models", s.by_model.len() as u64);
    figure(&mut h, "fig-success", "success", s.outcomes.success);
    figure(&mut h, "fig-failure", "failure", s.outcomes.failure);
    figure(&mut h, "fig-unknown", "unknown outcome", s.outcomes.unknown);
    figure(&mut h, "fig-steps", "steps", s.total_steps);
    figure(&mut h, "fig-tool-calls", "tool calls", s.total_tool_calls);
    figure(&mut h, "fig-subagents", "subagents", s.total_subagents);
    h.raw("</dl><p class=\"legend\">");
    for (class, color) in [(Class::Success, "#2da44e"), (Class::Failure, "#cf222e"), (Class::Unknown, "#afb8c1")] {
        h.raw("<span><i style=\"background:").raw(color).raw("\"></i>").raw(class.name()).raw("</span>");
    }
    h.raw("</p><div class=\"charts\">");
    let sources = top_bars(s.by_source.iter().map(|(k, f)| (k.as_str(), f.outcomes)));
    h.append(&outcome_bars("Outcomes by source", &sources));
    let models = top_bars(s.by_model.iter().map(|(k, o)| (k.as_str(), *o)));
    h.append(&outcome_bars("Outcomes by model", &models));
    h.append(&histogram("Steps per trajectory", &s.steps));
    h.append(&histogram("Tool calls per trajectory", &s.tool_calls));
    h.raw("</div><div class=\"tables\">");
    count_table(&mut h, "split", "splits", &s.by_split);
    count_table(&mut h, "verification", "verification", &s.by_verification);
    h.raw("</div>");
    sources_table(&mut h, s);
    h.raw("</section>\n");
    h
}

fn count_table(h: &mut Html, key: &'static str, id: &'static str, counts: &std::collections::BTreeMap<String, u64>) {
    h.raw("<table id=\"").raw(id).raw("\"><tr><th>").raw(key).raw("</th><th>trajectories</th></tr>");
    for (k, n) in counts {
        h.raw("<tr><td>").text(k).raw("</td><td class=\"n\">").num(*n).raw("</td></tr>");
    }
    h.raw("</table>");
}

fn sources_table(h: &mut Html, s: &Summary) {
    h.raw("<table id=\"sources\"><tr><th>source</th><th>format</th><th>family</th><th>license</th>");
    h.raw(
        "<th>trajectories</th><th>success</th><th>failure</th><th>unknown</th><th>steps</th><th>tool calls</th></tr>",
    );
    let order = s.sources_in_page_order();
    for (name, f) in order.iter().take(MAX_SOURCE_ROWS) {
        h.raw("<tr><td>").text(name).raw("</td><td>");
        h.text(&f.formats.iter().cloned().collect::<Vec<_>>().join(", ")).raw("</td><td>");
        h.text(f.family.as_deref().unwrap_or("")).raw("</td><td>").text(f.license.as_deref().unwrap_or(""));
        h.raw("</td>");
        for n in [f.outcomes.total(), f.outcomes.success, f.outcomes.failure, f.outcomes.unknown, f.steps, f.tool_calls]
        {
            h.raw("<td class=\"n\">").num(n).raw("</td>");
        }
        h.raw("</tr>");
    }
    h.raw("</table>");
    if order.len() > MAX_SOURCE_ROWS {
        h.raw("<p class=\"note\">").num((order.len() - MAX_SOURCE_ROWS) as u64).raw(" more sources not listed.</p>");
    }
}

/// The footer: how the examples were chosen and what bounds the page.
pub fn footer(examples_per_source: usize, max_steps: usize, max_chars: usize) -> Html {
    let mut h = Html::new();
    h.raw("<footer>Examples: per source at most ").num(examples_per_source as u64);
    h.raw(", half successes and half failures when the source has them (then unknown outcomes), ");
    h.raw("chosen by a stable hash of the trajectory id: the same library always gives the same page. ");
    h.raw("At most ").num(max_steps as u64).raw(" steps per conversation and ").num(max_chars as u64);
    h.raw(" characters per text are shown. Written by trajkit ").raw(env!("CARGO_PKG_VERSION"));
    h.raw(".</footer></main></body></html>\n");
    h
}
