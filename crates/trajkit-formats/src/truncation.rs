//! Observations the collector cut short, found the same way for every reader: a closing
//! truncation marker, or a JSON payload that stops mid-value. The rule, and why prose
//! ending in "..." is not caught, is in docs/record.md (`truncated_observation`).

use serde_json::Value;
use trajkit_model::{Gap, GapKind, Role, Step, Trajectory};

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
    step.tool_results.iter().filter_map(|r| r.content.as_ref()).chain(own).find_map(|v| truncation(&text_of(v)?))
}

/// The observation as text: a string, or the text parts of a content list.
fn text_of(v: &Value) -> Option<String> {
    crate::json::content_text(v)
}

/// Which signature, if any, says `text` was cut short.
pub fn truncation(text: &str) -> Option<&'static str> {
    let end = text.trim_end();
    let bare = end.trim_end_matches(['.', '…']).trim_end();
    let tail_start = (bare.len().saturating_sub(24)..=bare.len()).find(|&i| bare.is_char_boundary(i)).unwrap_or(0);
    let tail = bare[tail_start..].to_ascii_lowercase();
    if MARKERS.iter().any(|m| tail.ends_with(m)) {
        return Some("truncation marker");
    }
    // A complete JSON value ends with its closing bracket: only other endings are parsed.
    let json_like = matches!(end.as_bytes().first(), Some(b'{' | b'['));
    if json_like && !end.ends_with(['}', ']']) && is_cut_json(bare) {
        return Some("JSON payload cut mid-value");
    }
    None
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
    use super::truncation;

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
