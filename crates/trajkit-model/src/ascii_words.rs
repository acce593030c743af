//! Runs of ASCII letters and digits, found 64 bytes at a time from byte masks: the words of
//! the signatures `build` makes of every distinct run's content, where a test and a branch
//! per byte cost about as much as hashing the words.

use crate::byte_masks;

/// Bytes per block of masks.
const BLOCK: usize = 64;

/// Calls `f` with each maximal run of ASCII letters and digits in `bytes`, in order, and
/// whether the run holds a capital letter.
pub fn each<'b>(bytes: &'b [u8], mut f: impl FnMut(&'b [u8], bool)) {
    // A run that reached the end of the block before: where it starts, whether it has a
    // capital so far.
    let mut open: Option<(usize, bool)> = None;
    for (n, block) in bytes.chunks(BLOCK).enumerate() {
        let base = n * BLOCK;
        let (mut word, upper) = masks(block);
        if let Some((start, capital)) = open.take() {
            let len = word.trailing_ones() as usize;
            let capital = capital || upper & below(len) != 0;
            if len == BLOCK {
                open = Some((start, capital));
                continue;
            }
            if let Some(run) = bytes.get(start..base + len) {
                f(run, capital);
            }
            word &= !below(len);
        }
        while word != 0 {
            let start = word.trailing_zeros() as usize;
            let end = start + (word >> start).trailing_ones() as usize;
            let capital = upper & below(end) & !below(start) != 0;
            if end == BLOCK {
                open = Some((base + start, capital));
                break;
            }
            if let Some(run) = block.get(start..end) {
                f(run, capital);
            }
            word &= !below(end);
        }
    }
    if let Some((start, capital)) = open {
        if let Some(run) = bytes.get(start..) {
            f(run, capital);
        }
    }
}

/// The bits below bit `n` (all of them from 64 on).
fn below(n: usize) -> u64 {
    u64::MAX.checked_shl(n as u32).map_or(u64::MAX, |high| !high)
}

/// The letters and digits of a block of at most `BLOCK` bytes, and its capitals; no bit past
/// its end.
fn masks(block: &[u8]) -> (u64, u64) {
    let mut padded = [0u8; BLOCK];
    let full = match <&[u8; BLOCK]>::try_from(block) {
        Ok(full) => full,
        Err(_) => {
            padded.get_mut(..block.len()).into_iter().for_each(|p| p.copy_from_slice(block));
            &padded
        }
    };
    let (chunks, _) = full.as_chunks::<16>();
    chunks.iter().enumerate().fold((0, 0), |(word, upper), (i, chunk)| {
        let (w, u) = byte_masks::alphanumeric(chunk);
        (word | u64::from(w) << (16 * i), upper | u64::from(u) << (16 * i))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs by the definition, byte by byte.
    fn by_definition(bytes: &[u8]) -> Vec<(Vec<u8>, bool)> {
        bytes
            .split(|b| !b.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| (w.to_vec(), w.iter().any(u8::is_ascii_uppercase)))
            .collect()
    }

    /// Synthetic (block edges no real text is made to hit): texts of 0 to 300 bytes drawn
    /// from letters of both cases, digits, punctuation, spaces, bytes past ASCII and NUL,
    /// with runs of every length across the 64-byte block edges, and texts of one long run.
    #[test]
    fn runs_are_the_runs_of_letters_and_digits() {
        let alphabet = b"aZ09 .,_-\n\x00\xc3\xa9qQm";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for len in 0..300 {
            for density in [1u64, 3, 9] {
                texts.push(
                    (0..len)
                        .map(|_| {
                            state ^= state << 13;
                            state ^= state >> 7;
                            state ^= state << 17;
                            // Letters most of the time at the low densities: long runs.
                            let pick = state % (alphabet.len() as u64 * density);
                            alphabet[if pick < alphabet.len() as u64 { pick as usize } else { (pick % 4) as usize }]
                        })
                        .collect(),
                );
            }
            texts.push(vec![b'x'; len]);
            texts.push((0..len).map(|i| if i % 64 == 63 { b'Q' } else { b'q' }).collect());
        }
        for text in texts {
            let mut got = Vec::new();
            each(&text, |run, capital| got.push((run.to_vec(), capital)));
            assert_eq!(got, by_definition(&text), "{:?}", String::from_utf8_lossy(&text));
        }
    }
}
