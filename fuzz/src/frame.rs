//! The byte layout of one fuzz input as AFL++ and `fuzz/regressions/` hold it: the file
//! name the input is written under (its extension drives detection), a NUL, the file's
//! bytes. Mutating the name is part of fuzzing detection.

/// Longest name taken from an input; a longer head is file content.
const MAX_NAME: usize = 64;

/// One input as `name NUL bytes`.
pub fn encode(name: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 1 + bytes.len());
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    out.extend_from_slice(bytes);
    out
}

/// The name and bytes of an input; `default` names one without a usable name (no NUL in
/// the first `MAX_NAME + 1` bytes, or characters outside `[A-Za-z0-9._-]`, or `.`/`..`),
/// so a mutated name can never leave the scratch directory.
pub fn decode<'a>(data: &'a [u8], default: &str) -> (String, &'a [u8]) {
    let Some(nul) = data.iter().take(MAX_NAME + 1).position(|b| *b == 0) else {
        return (default.to_string(), data);
    };
    let (head, body) = (&data[..nul], &data[nul + 1..]);
    let safe = !head.is_empty()
        && head.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && head != b"."
        && head != b"..";
    let name = if safe { String::from_utf8_lossy(head).into_owned() } else { default.to_string() };
    (name, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_unsafe_names() {
        let data = encode("a.jsonl.gz", b"\x1f\x8b\0rest");
        assert_eq!(decode(&data, "x.json"), ("a.jsonl.gz".to_string(), &b"\x1f\x8b\0rest"[..]));
        // A name with a path separator or none at all falls back to the default.
        assert_eq!(decode(b"../etc/passwd\0{}", "x.json"), ("x.json".to_string(), &b"{}"[..]));
        assert_eq!(decode(b"..\0{}", "x.json"), ("x.json".to_string(), &b"{}"[..]));
        assert_eq!(decode(b"{\"no\":\"nul\"}", "x.json"), ("x.json".to_string(), &b"{\"no\":\"nul\"}"[..]));
    }
}
