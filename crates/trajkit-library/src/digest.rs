//! Digests held for the length of a build: a lowercase hex digest (SHA-256, XXH3), the usual
//! case, as its digit count and packed digits instead of a `String` and its text. The sets
//! and maps keyed by digest span the whole read of a local build, one entry per distinct
//! interaction or instruction, so their size is how `build`'s memory grows with the corpus.
use foldhash::HashMap;
#[cfg(test)]
use std::collections::HashSet;
use std::fmt;

/// A digest as a table key: packed hex digits inline (40 bytes, no allocation), other text
/// as it is. Two keys are equal exactly when their texts are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Digest {
    Hex(u8, [u8; 32]),
    Text(Box<str>),
}

impl Digest {
    pub(crate) fn new(text: &str) -> Digest {
        match pack(text) {
            Some((n, digits)) => Digest::Hex(n, digits),
            None => Digest::Text(text.into()),
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Digest::Hex(n, digits) => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let mut text = [0u8; 64];
                for (i, c) in text.iter_mut().enumerate().take(usize::from(*n)) {
                    *c = HEX[usize::from((digits[i / 2] >> (4 * (1 - i % 2))) & 0xf)];
                }
                // Only hex digits were written.
                f.write_str(std::str::from_utf8(&text[..usize::from(*n)]).map_err(|_| fmt::Error)?)
            }
            Digest::Text(t) => f.write_str(t),
        }
    }
}

/// Digests, each with a few marks (bits): packed hex ones take 34 bytes in the table (a
/// `Digest` would take 40), other text is kept as it is. One table holds what several sets
/// of the same digests would (a build marks a digest's signatures made, then filed).
#[derive(Default)]
pub(crate) struct Digests {
    packed: HashMap<(u8, [u8; 32]), u8>,
    other: HashMap<Box<str>, u8>,
}

impl Digests {
    /// Sets mark `bit` on `digest`; true when it was not set yet.
    pub(crate) fn mark(&mut self, digest: &str, bit: u8) -> bool {
        let marks = match pack(digest) {
            Some(p) => self.packed.entry(p).or_insert(0),
            None => match self.other.get_mut(digest) {
                Some(m) => m,
                None => self.other.entry(digest.into()).or_insert(0),
            },
        };
        let new = *marks & bit == 0;
        *marks |= bit;
        new
    }
}

/// Up to 64 lowercase hex digits as (digit count, digits two to a byte); None for other text.
fn pack(digest: &str) -> Option<(u8, [u8; 32])> {
    let b = digest.as_bytes();
    if b.len() > 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, &c) in b.iter().enumerate() {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        out[i / 2] |= v << (4 * (1 - i % 2));
    }
    Some((b.len() as u8, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic: packing must not merge two different texts (a shorter digit string, a
    /// trailing zero, capitals, more than 64 digits) or miss a repeat.
    const SHA: &str = "7d865e959b2466918c9863afca942d0fb89d7c9ac0c99bafc3749504ded97730";

    fn texts() -> Vec<String> {
        ["", "0", "00", "ab", "ab0", "AB", "aB", "0123456789abcdef", SHA, &format!("{SHA}0"), "not hex", "é"]
            .map(str::to_string)
            .to_vec()
    }

    #[test]
    fn digests_are_told_apart_exactly() {
        let mut d = Digests::default();
        for t in texts() {
            assert!(d.mark(&t, 1), "first {t:?}");
        }
        for t in texts() {
            assert!(!d.mark(&t, 1), "repeat {t:?}");
        }
        assert_eq!((d.packed.len(), d.other.len()), (7, 5));
        // A second mark is its own: first time true, whatever the first mark says.
        for t in texts() {
            assert!(d.mark(&t, 2), "second mark {t:?}");
            assert!(!d.mark(&t, 2) && !d.mark(&t, 1), "both set {t:?}");
        }
        assert!(d.mark("ab00", 2) && d.mark("ab00", 1));
        assert_eq!((d.packed.len(), d.other.len()), (8, 5));
    }

    #[test]
    fn a_digest_key_gives_its_text_back_and_equals_only_itself() {
        let keys: Vec<Digest> = texts().iter().map(|t| Digest::new(t)).collect();
        for (t, k) in texts().iter().zip(&keys) {
            assert_eq!(&k.to_string(), t);
        }
        let hex = keys.iter().filter(|k| matches!(k, Digest::Hex(..))).count();
        assert_eq!(hex, 7);
        let distinct: HashSet<&Digest> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len());
        assert_eq!(std::mem::size_of::<Digest>(), 40);
    }
}
