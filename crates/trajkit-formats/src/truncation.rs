//! Observations the collector cut short, found the same way for every reader: a closing
//! truncation marker, or a JSON payload that stops mid-value. The rule, and why prose
//! ending in "..." is not caught, is in docs/record.md (`truncated_observation`).

use serde_json::Value;
use trajkit_model::{Gap, GapKind, LazyValue, Role, Step, Trajectory};

/// Markers a collector appends where it cut an observation (compared case-insensitively
/// at the very end of the text, trailing whitespace and dots ignored).
const MARKERS: &[&str] = &["[truncated]", "(truncated)", "<truncated>", "[output truncated]", "<response clipped>"];

/// Adds a `truncated_observation` gap for each observation step of `t` (and of its
/// subagents) whose text the collector cut short; the detail says which signature.
pub(crate) fn mark_truncated_observations(t: &mut Trajectory) {
    for (i, step) in t.steps.iter().enumerate() {
        // Idempotent: a canonical record read back already carries the gaps found when it
        // was first read, and `convert` of `convert`'s output must give the same bytes.
        let marked = t.gaps.iter().any(|g| g.kind == GapKind::TruncatedObservation && g.step == Some(i));
        if let Some(signature) = step_truncation(step).filter(|_| !marked) {
            t.gaps.push(Gap::at(GapKind::TruncatedObservation, Some(i), signature));
        }
    }
    for sub in &mut t.subagents {
        mark_truncated_observations(&mut sub.trajectory);
    }
}

/// The first truncation signature among a step's observations: its tool results, and its
/// own content when the step is a tool step.
fn step_truncation(step: &Step) -> Option<&'static str> {
    let own = (step.role == Role::Tool).then_some(step.content.as_ref()).flatten();
    step.tool_results.iter().filter_map(|r| r.content.as_ref()).chain(own).find_map(observation_truncation)
}

/// `truncation` of one observation. A long string still held as text is judged from its
/// end alone when that decides (a tool output is often tens of kilobytes, and decoding it
/// whole was 4 % of Gym `inspect`'s instructions); otherwise it is read whole.
fn observation_truncation(v: &LazyValue) -> Option<&'static str> {
    if let Some((first, tail)) = v.string_ends(TAIL_BYTES) {
        if let Some(found) = tail_truncation(first, &tail) {
            return found;
        }
    }
    // A string is read from its text, not built into a `Value` (short tool outputs are
    // most of ATIF's).
    if let Some(text) = v.string_text() {
        return truncation(&text);
    }
    truncation(&text_of(v)?)
}

/// Source bytes of a string's end that `tail_truncation` reads (it needs 24 characters after
/// trailing whitespace and dots are trimmed).
const TAIL_BYTES: usize = 256;

/// `truncation` of a text known by its first character and its end, when that decides:
/// `None` when the end is too short once trimmed, or the text may be a JSON prefix (that
/// takes the whole text to judge).
fn tail_truncation(first: char, tail: &str) -> Option<Option<&'static str>> {
    let (end, bare) = ends(tail);
    if bare.len() < 32 {
        return None;
    }
    let json_like = matches!(first, '{' | '[');
    if json_like && !end.ends_with(['}', ']']) {
        return None;
    }
    Some(marker(bare))
}

/// The observation as text: a string, or the text parts of a content list.
fn text_of(v: &Value) -> Option<String> {
    crate::json::content_text(v)
}

/// Which signature, if any, says `text` was cut short.
pub fn truncation(text: &str) -> Option<&'static str> {
    let (end, bare) = ends(text);
    if let Some(found) = marker(bare) {
        return Some(found);
    }
    // A complete JSON value ends with its closing bracket: only other endings are parsed.
    let json_like = matches!(end.as_bytes().first(), Some(b'{' | b'['));
    if json_like && !end.ends_with(['}', ']']) && is_cut_json(bare) {
        return Some("JSON payload cut mid-value");
    }
    None
}

/// The text without trailing whitespace, and without trailing whitespace and dots.
fn ends(text: &str) -> (&str, &str) {
    let end = text.trim_end();
    (end, end.trim_end_matches(['.', '…']).trim_end())
}

/// A truncation marker at the end of `bare` (the text without trailing whitespace and dots),
/// compared in place: no lowercased copy of the text's end per observation.
fn marker(bare: &str) -> Option<&'static str> {
    let b = bare.as_bytes();
    let ends_with = |m: &str| {
        let start = b.len().checked_sub(m.len());
        start.and_then(|s| b.get(s..)).is_some_and(|end| end.eq_ignore_ascii_case(m.as_bytes()))
    };
    MARKERS.iter().any(|m| ends_with(m)).then_some("truncation marker")
}

/// True when `text` is a JSON prefix that ends before its value closes: the parser reaches
/// the end of input with nothing malformed before it (a fixed-length or "..." cut).
fn is_cut_json(text: &str) -> bool {
    match serde_json::from_str::<Value>(text) {
        Ok(_) => false,
        Err(e) => e.is_eof(),
    }
}

#[cfg(test)]
mod tests {
    use super::{observation_truncation, tail_truncation, truncation, TAIL_BYTES};
    use serde_json::Value;
    use trajkit_model::LazyValue;

    /// Synthetic: a long tool output kept as text is judged from its end exactly as the
    /// whole decoded text is, whatever its ends hold (markers, escapes, whitespace, a JSON
    /// prefix that needs the whole text).
    #[test]
    fn a_string_judged_from_its_end_as_from_the_whole() {
        // JSON source text (escapes as written in a file).
        let bodies = [r"line of output\n", r#"\"quoted\" \\ path\t"#, r#"{\"k\": [1, 2], "#, "é😀 ", "x"];
        let ends = [
            "",
            " [truncated]",
            r"\n[Output Truncated]...\n",
            "<response clipped>   ",
            " done.",
            "...",
            r"\u2026",
            "]",
            "}",
            r#"\"}"#,
            r"\n\n\n",
            r"\u0020\u0020[truncated]",
        ];
        let starts = ["", r#"{\"rows\": ["#, "[", " {", r"\u007b"];
        for body in bodies {
            for start in starts {
                for end in ends {
                    for (repeat, pad) in
                        [(1, ""), (200, ""), (200, "                                        "), (3, &*" ".repeat(700))]
                    {
                        let literal = format!("\"{start}{}{end}{pad}\"", body.repeat(repeat));
                        let text: String = serde_json::from_str(&literal).expect("valid");
                        let lazy = LazyValue::from_text(&literal).expect("accepted");
                        assert_eq!(observation_truncation(&lazy), truncation(&text), "{literal}");
                        if repeat == 200 && body != "x" && !text.starts_with(['{', '[']) {
                            let tail = lazy.string_ends(TAIL_BYTES);
                            let decided = tail.and_then(|(first, tail)| tail_truncation(first, &tail));
                            assert!(decided.is_some(), "judged from the end: {literal}");
                        }
                        let parsed = LazyValue::from(Value::String(text.clone()));
                        assert_eq!(observation_truncation(&parsed), truncation(&text), "{literal}");
                    }
                }
            }
        }
    }

    /// Synthetic (no real observation ends in these mixes): each marker found in place as
    /// the lowercased copy of the text's last 24 bytes found it, whatever case, whatever
    /// multi-byte characters are cut by or fall in that window, and whatever is too short.
    #[test]
    fn markers_found_in_place_as_in_a_lowercased_copy() {
        fn by_copy(bare: &str) -> Option<&'static str> {
            let start = (bare.len().saturating_sub(24)..=bare.len()).find(|&i| bare.is_char_boundary(i)).unwrap_or(0);
            let tail = bare[start..].to_ascii_lowercase();
            super::MARKERS.iter().any(|m| tail.ends_with(m)).then_some("truncation marker")
        }
        let heads = ["", "x", "é", "😀😀😀😀😀😀", "out: ééééééééééé", "TRUNCATED"];
        let ends = [
            "",
            "[truncated]",
            "[TRUNCATED]",
            "(Truncated)",
            "<truncated>",
            "[Output Truncated]",
            "<RESPONSE clipped>",
            "truncated]",
            "[truncated",
            "[truncatéd]",
            "é[truncated]",
            "😀(truncated)",
            "[output truncated]x",
            "ẞ<response clipped>",
            "<response clipped",
        ];
        let mut found = 0;
        for head in heads {
            for end in ends {
                let bare = format!("{head}{end}");
                assert_eq!(super::marker(&bare), by_copy(&bare), "{bare}");
                found += usize::from(super::marker(&bare).is_some());
            }
        }
        assert_eq!(found, 9 * heads.len(), "nine endings hold a marker");
    }

    /// Synthetic: the signatures one by one, and the prose and JSON that must not match.
    #[test]
    fn signatures_and_what_is_not_one() {
        assert_eq!(truncation("line 1\nline 2 [truncated]\n"), Some("truncation marker"));
        assert_eq!(truncation("abc... (Truncated)..."), Some("truncation marker"));
        assert_eq!(truncation("  351 x = 1\n  352 # [B, <response clipped>"), Some("truncation marker"));
        assert_eq!(truncation(r#"{"files": ["a.py", "b.py", "c..."#), Some("JSON payload cut mid-value"));
        assert_eq!(truncation(r#"[{"id": 1}, {"id": 2}, {"id"...."#), Some("JSON payload cut mid-value"));
        assert_eq!(truncation(r#"{"rows": [1, 2, 3"#), Some("JSON payload cut mid-value"));
        assert_eq!(truncation("Let me think about this..."), None, "prose ending in dots");
        assert_eq!(truncation("[1/3] Building..."), None, "bracketed prose is not a JSON prefix");
        assert_eq!(truncation(r#"{"status": "ok"}"#), None);
        assert_eq!(truncation(r#"{"note": "to be continued..."}"#), None, "dots inside a complete value");
        assert_eq!(
            truncation(
                "<response clipped><NOTE>To save on context only part of this file has been shown to you.</NOTE>"
            ),
            None,
            "the harness's announced clip, shown to the model, is a complete observation"
        );
    }
}
