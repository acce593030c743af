//! The one escaping rule of the gallery and a markup builder that applies it: markup
//! literals are `&'static str`, so text from the data can only enter the page escaped.

use std::fmt::Write as _;

/// Escapes `s` for HTML text, attribute values (quoted) and inline SVG text alike:
/// `& < > " '` become entities; control characters other than tab, newline and carriage
/// return (which HTML forbids) become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    escape_into(&mut out, s);
    out
}

/// [`escape`], appending to `out`.
pub fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// A page fragment under construction. Strings from the data go through [`Html::text`];
/// markup is only ever a `&'static str` literal or a number.
#[derive(Default)]
pub struct Html {
    buf: String,
}

impl Html {
    pub fn new() -> Html {
        Html::default()
    }

    /// Appends markup written in this crate.
    pub fn raw(&mut self, markup: &'static str) -> &mut Html {
        self.buf.push_str(markup);
        self
    }

    /// Appends text from the data, escaped (valid in element text and quoted attributes).
    pub fn text(&mut self, s: &str) -> &mut Html {
        escape_into(&mut self.buf, s);
        self
    }

    /// Appends an integer.
    pub fn num(&mut self, n: u64) -> &mut Html {
        let _ = write!(self.buf, "{n}");
        self
    }

    /// Appends a float with `decimals` digits after the point (SVG geometry, rewards).
    pub fn dec(&mut self, x: f64, decimals: usize) -> &mut Html {
        if x.is_finite() {
            let _ = write!(self.buf, "{x:.decimals$}");
        } else {
            self.buf.push('0');
        }
        self
    }

    /// Appends another fragment (already built through these methods).
    pub fn append(&mut self, other: &Html) -> &mut Html {
        self.buf.push_str(&other.buf);
        self
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The finished markup.
    pub fn into_string(self) -> String {
        self.buf
    }

    /// The markup so far (for tests).
    pub fn as_str(&self) -> &str {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_controls() {
        assert_eq!(
            escape("<script>alert(\"x\")</script> & 'y'"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(escape("a\tb\nc\u{0}d\u{7f}e\u{85}"), "a\tb\nc\u{FFFD}d\u{FFFD}e\u{FFFD}");
        assert_eq!(escape("</details>"), "&lt;/details&gt;");
        assert_eq!(escape("é ✓"), "é ✓");
    }

    #[test]
    fn builder_escapes_text_but_not_literals() {
        let mut h = Html::new();
        h.raw("<b title=\"").text("\"><i>").raw("\">").num(3).raw("</b>").dec(0.26, 1);
        assert_eq!(h.as_str(), "<b title=\"&quot;&gt;&lt;i&gt;\">3</b>0.3");
    }
}
