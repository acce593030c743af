//! Small inline SVG charts: outcome bars per label (source, model) and histograms. Labels
//! and tooltips are data, so they go through the same escaping as everything else.

use super::html::Html;
use super::render::clip;
use super::stats::{Class, Histogram, Outcomes, BUCKETS};

/// Bars shown per outcome chart; the rest are summed into one "other" bar.
pub const MAX_BARS: usize = 12;

const WIDTH: f64 = 560.0;
const LABEL_W: f64 = 190.0;
const COUNT_W: f64 = 60.0;
const ROW_H: f64 = 22.0;
const LABEL_CHARS: usize = 22;

fn color(class: Class) -> &'static str {
    match class {
        Class::Success => "#2da44e",
        Class::Failure => "#cf222e",
        Class::Unknown => "#afb8c1",
    }
}

/// The bars of an outcome chart: the `MAX_BARS` largest (ties by name), then "other".
pub fn top_bars<'a>(items: impl Iterator<Item = (&'a str, Outcomes)>) -> Vec<(String, Outcomes)> {
    let mut all: Vec<(&str, Outcomes)> = items.collect();
    all.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then(a.0.cmp(b.0)));
    let mut bars: Vec<(String, Outcomes)> = all.iter().take(MAX_BARS).map(|(k, o)| (k.to_string(), *o)).collect();
    if all.len() > MAX_BARS {
        let mut other = Outcomes::default();
        all[MAX_BARS..].iter().for_each(|(_, o)| other.merge(o));
        bars.push((format!("other ({})", all.len() - MAX_BARS), other));
    }
    bars
}

/// Horizontal stacked bars (success, failure, unknown) with the total at the end.
pub fn outcome_bars(title: &'static str, bars: &[(String, Outcomes)]) -> Html {
    let max = bars.iter().map(|(_, o)| o.total()).max().unwrap_or(0).max(1) as f64;
    let height = ROW_H * bars.len().max(1) as f64 + 8.0;
    let mut svg = Html::new();
    svg.raw("<figure class=\"chart\"><figcaption>").raw(title).raw("</figcaption>");
    svg.raw("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ").dec(WIDTH, 0).raw(" ").dec(height, 0);
    svg.raw("\" role=\"img\" aria-label=\"").raw(title).raw("\">");
    let bar_w = WIDTH - LABEL_W - COUNT_W;
    for (i, (label, o)) in bars.iter().enumerate() {
        let y = 4.0 + ROW_H * i as f64;
        let (short, cut) = clip(label, LABEL_CHARS);
        svg.raw("<text class=\"label\" x=\"").dec(LABEL_W - 6.0, 1).raw("\" y=\"").dec(y + 15.0, 1);
        svg.raw("\" text-anchor=\"end\"><title>").text(label).raw("</title>").text(short);
        if cut > 0 {
            svg.raw("…");
        }
        svg.raw("</text>");
        let mut x = LABEL_W;
        for class in Class::ALL {
            let n = o.get(class);
            if n == 0 {
                continue;
            }
            let w = bar_w * n as f64 / max;
            svg.raw("<rect x=\"").dec(x, 1).raw("\" y=\"").dec(y + 3.0, 1).raw("\" width=\"").dec(w.max(1.0), 1);
            svg.raw("\" height=\"16\" fill=\"").raw(color(class)).raw("\"><title>").text(label).raw(": ");
            svg.num(n).raw(" ").raw(class.name()).raw("</title></rect>");
            x += w;
        }
        svg.raw("<text class=\"count\" x=\"").dec(x + 6.0, 1).raw("\" y=\"").dec(y + 15.0, 1).raw("\">");
        svg.num(o.total()).raw("</text>");
    }
    svg.raw("</svg></figure>");
    svg
}

/// Vertical bars of a log2-bucketed histogram, with counts above and bucket labels below.
pub fn histogram(title: &'static str, h: &Histogram) -> Html {
    const H: f64 = 170.0;
    const TOP: f64 = 18.0;
    const AXIS: f64 = 140.0;
    let max = h.counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let slot = WIDTH / BUCKETS as f64;
    let mut svg = Html::new();
    svg.raw("<figure class=\"chart\"><figcaption>").raw(title).raw("</figcaption>");
    svg.raw("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ").dec(WIDTH, 0).raw(" ").dec(H, 0);
    svg.raw("\" role=\"img\" aria-label=\"").raw(title).raw("\">");
    svg.raw("<line x1=\"0\" x2=\"").dec(WIDTH, 0).raw("\" y1=\"").dec(AXIS, 0).raw("\" y2=\"").dec(AXIS, 0);
    svg.raw("\" stroke=\"#d0d7de\"/>");
    for (i, &n) in h.counts.iter().enumerate() {
        let x = slot * i as f64;
        let bar_h = (AXIS - TOP) * n as f64 / max;
        let label = Histogram::label(i);
        if n > 0 {
            svg.raw("<rect x=\"").dec(x + 6.0, 1).raw("\" y=\"").dec(AXIS - bar_h, 1).raw("\" width=\"");
            svg.dec(slot - 12.0, 1).raw("\" height=\"").dec(bar_h, 1).raw("\" fill=\"#0969da\"><title>");
            svg.text(&label).raw(": ").num(n).raw("</title></rect>");
            svg.raw("<text class=\"count\" x=\"").dec(x + slot / 2.0, 1).raw("\" y=\"").dec(AXIS - bar_h - 4.0, 1);
            svg.raw("\" text-anchor=\"middle\">").num(n).raw("</text>");
        }
        svg.raw("<text class=\"label small\" x=\"").dec(x + slot / 2.0, 1).raw("\" y=\"").dec(AXIS + 16.0, 1);
        svg.raw("\" text-anchor=\"middle\">").text(&label).raw("</text>");
    }
    svg.raw("</svg></figure>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_twelve_labels_fold_into_other() {
        let o = |n| Outcomes { success: n, failure: 0, unknown: 1 };
        let names: Vec<String> = (0..15).map(|i| format!("m{i:02}")).collect();
        let bars = top_bars(names.iter().enumerate().map(|(i, n)| (n.as_str(), o(i as u64))));
        assert_eq!(bars.len(), 13);
        assert_eq!(bars[0].0, "m14");
        assert_eq!(bars[12], ("other (3)".to_string(), Outcomes { success: 3, failure: 0, unknown: 3 }));
    }
}
