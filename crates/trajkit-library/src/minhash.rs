//! Word shingles, MinHash signatures and LSH banding: the near-duplicate machinery that
//! task clusters (instructions) and near-duplicate trajectory groups (content) share.
//! Every hash is XXH3-64 or a fixed-seed permutation of it, so signatures are the same
//! on every machine, thread count and partition of a build.

use trajkit_model::ascii_words;
use twox_hash::XxHash3_64;

/// Words per shingle (consecutive lowercase alphanumeric words).
pub const SHINGLE_WORDS: usize = 3;
/// MinHash slots per signature.
pub const PERMUTATIONS: usize = 128;
/// LSH bands; `PERMUTATIONS / BANDS` rows each. 32 bands of 4 rows make a pair of
/// Jaccard similarity 0.5 a candidate with probability 0.87, 0.7 with 0.9996.
pub const BANDS: usize = 32;
const ROWS: usize = PERMUTATIONS / BANDS;

/// XXH3-64 of bytes, seed 0: the stable hash every signature starts from.
pub fn hash64(bytes: &[u8]) -> u64 {
    XxHash3_64::oneshot(bytes)
}

/// Calls `f` with the hash (`hash64`) of each word of `text`, in order: each maximal run of
/// alphanumeric characters (`char::is_alphanumeric`), of the text lowercased first when
/// `lower` (as `str::to_lowercase` lowercases it). ASCII text, most of any text, is split by
/// byte masks (`ascii_words`), and only a word with a capital is lowercased (in `scratch`):
/// decoding chars and looking them up in Unicode tables cost more than the rest of
/// sketching a record's content. Only the words around a character past ASCII take that way
/// (`spans`).
pub fn word_hashes(text: &str, lower: bool, scratch: &mut Vec<u8>, mut f: impl FnMut(u64)) {
    spans(text, |span, ascii| {
        if ascii {
            ascii_words::each(span.as_bytes(), |word, capital| {
                f(if lower && capital { lowered_hash(word, scratch) } else { hash64(word) })
            });
        } else if lower {
            unicode_words(&span.to_lowercase(), &mut f);
        } else {
            unicode_words(span, &mut f);
        }
    });
}

/// `word_hashes` of `text` as written (to `kept`) and lowercased (to `lowered`). ASCII is
/// split once for both, and a word without capitals hashed once.
pub fn word_hashes_both(text: &str, scratch: &mut Vec<u8>, mut kept: impl FnMut(u64), mut lowered: impl FnMut(u64)) {
    spans(text, |span, ascii| {
        if ascii {
            ascii_words::each(span.as_bytes(), |word, capital| {
                let h = hash64(word);
                kept(h);
                lowered(if capital { lowered_hash(word, scratch) } else { h });
            });
        } else {
            unicode_words(span, &mut kept);
            unicode_words(&span.to_lowercase(), &mut lowered);
        }
    });
}

/// Calls `f` with the hash of each word of `text` (`unicode_runs`).
fn unicode_words(text: &str, f: &mut impl FnMut(u64)) {
    unicode_runs(text).for_each(|w| f(hash64(w.as_bytes())));
}

/// The runs of alphanumeric characters (`char::is_alphanumeric`) of `text`: its words where
/// it is not ASCII.
fn unicode_runs(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
}

/// Calls `f` with the spans of `text`, in order, and whether each is ASCII: each character
/// past ASCII with the run of non-whitespace around it is a span of its own. ASCII
/// whitespace ends words, and the one lowercasing that reads a character's neighbours (a
/// final sigma: `str::to_lowercase` looks past letters and case-ignorable characters such
/// as `.` and `'`, never past whitespace) stops there, so the words and lowercased words
/// of the spans are those of the whole text.
fn spans<'t>(text: &'t str, mut f: impl FnMut(&'t str, bool)) {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(at) = b.get(from..).and_then(|rest| rest.iter().position(|c| !c.is_ascii())).map(|n| from + n) {
        let start = b[from..at].iter().rposition(u8::is_ascii_whitespace).map_or(from, |p| from + p + 1);
        let end = b[at..].iter().position(u8::is_ascii_whitespace).map_or(b.len(), |p| at + p);
        if let (Some(ascii), Some(other)) = (text.get(from..start), text.get(start..end)) {
            f(ascii, true);
            f(other, false);
        }
        from = end;
    }
    if let Some(rest) = text.get(from..) {
        f(rest, true);
    }
}

/// The hash of an ASCII word lowercased (in `scratch`).
fn lowered_hash(word: &[u8], scratch: &mut Vec<u8>) -> u64 {
    scratch.clear();
    scratch.extend(word.iter().map(u8::to_ascii_lowercase));
    hash64(scratch)
}

/// The sorted, deduplicated shingle hashes of `text`: lowercase runs of alphanumeric
/// characters are the words; every `SHINGLE_WORDS` consecutive words (joined by one
/// space) are hashed; a text of fewer words is one shingle; a text without words has none.
pub fn shingles(text: &str) -> Vec<u64> {
    let lower = text.to_lowercase();
    let mut words: Vec<&[u8]> = Vec::new();
    spans(&lower, |span, ascii| match ascii {
        true => ascii_words::each(span.as_bytes(), |word, _| words.push(word)),
        false => words.extend(unicode_runs(span).map(str::as_bytes)),
    });
    if words.is_empty() {
        return Vec::new();
    }
    // Each shingle's words are joined in one reused buffer (a `join` per window allocated).
    let mut joined = Vec::new();
    let mut out: Vec<u64> = words
        .windows(SHINGLE_WORDS.min(words.len()))
        .map(|w| {
            joined.clear();
            for (i, word) in w.iter().enumerate() {
                if i > 0 {
                    joined.push(b' ');
                }
                joined.extend_from_slice(word);
            }
            hash64(&joined)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Exact Jaccard similarity of two sorted, deduplicated sets (1.0 for two empty sets).
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut both) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    both as f64 / (a.len() + b.len() - both) as f64
}

/// A MinHash signature: per permutation, the least permuted shingle hash (high 32 bits).
pub type Signature = Vec<u32>;

/// SplitMix64's step from state `z`: the next state and its output.
const fn splitmix(z: u64) -> (u64, u64) {
    let z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let x = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z, x ^ (x >> 31))
}

/// Every slot's permutation `h -> h * mul + add` (mod 2^64), made at compile time: slot
/// `i`'s odd multiplier and addend are the first two SplitMix64 outputs seeded from `i`.
struct Permutations {
    mul: [u64; PERMUTATIONS],
    add: [u64; PERMUTATIONS],
}

const PERMS: Permutations = {
    let mut p = Permutations { mul: [0; PERMUTATIONS], add: [0; PERMUTATIONS] };
    let mut i = 0;
    while i < PERMUTATIONS {
        let (z, a) = splitmix((i as u64).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let (_, b) = splitmix(z);
        p.mul[i] = a | 1;
        p.add[i] = b;
        i += 1;
    }
    p
};

/// The MinHash signature of a shingle set (`u32::MAX` in every slot for an empty set).
/// Task clustering signs every distinct instruction on finalize's single thread, so the
/// slots are folded with the widest vectors the CPU has (the same values on every path).
pub fn signature(shingles: &[u64]) -> Signature {
    let mut sig = [u32::MAX; PERMUTATIONS];
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512dq") && is_x86_feature_detected!("avx512vl") {
            // SAFETY: the CPU has the features `fold_avx512` is compiled for.
            unsafe { fold_avx512(shingles, &mut sig) };
            return sig.to_vec();
        }
        if is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            unsafe { fold_avx2(shingles, &mut sig) };
            return sig.to_vec();
        }
    }
    fold(shingles, &mut sig);
    sig.to_vec()
}

/// Lowers each slot of `sig` to the least high half of a permuted shingle. Shingles outer,
/// slots inner: the slots are independent lanes the compiler vectorizes.
#[inline(always)]
fn fold(shingles: &[u64], sig: &mut [u32; PERMUTATIONS]) {
    for &s in shingles {
        for ((slot, mul), add) in sig.iter_mut().zip(&PERMS.mul).zip(&PERMS.add) {
            *slot = (*slot).min((s.wrapping_mul(*mul).wrapping_add(*add) >> 32) as u32);
        }
    }
}

/// `fold` compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fold_avx2(shingles: &[u64], sig: &mut [u32; PERMUTATIONS]) {
    fold(shingles, sig)
}

/// `fold` compiled for AVX-512 (64-bit lane multiplies).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
fn fold_avx512(shingles: &[u64], sig: &mut [u32; PERMUTATIONS]) {
    fold(shingles, sig)
}

/// The fraction of equal slots: the MinHash estimate of Jaccard similarity.
pub fn estimate(a: &[u32], b: &[u32]) -> f64 {
    if a.is_empty() || a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64
}

/// A signature's bucket in each band: XXH3-64 of the band's rows (little-endian). Two
/// signatures that agree on every row of a band share its key; 256 bytes per item instead of
/// the 512-byte signature is all that banding needs.
pub type BandKeys = [u64; BANDS];

/// The band keys of a signature (a short signature has 0 for the bands it lacks).
pub fn band_keys(sig: &[u32]) -> BandKeys {
    let mut keys = [0u64; BANDS];
    let mut bytes = [0u8; ROWS * 4];
    for (band, key) in keys.iter_mut().enumerate() {
        let Some(rows) = sig.get(band * ROWS..(band + 1) * ROWS) else { continue };
        for (chunk, r) in bytes.chunks_exact_mut(4).zip(rows) {
            chunk.copy_from_slice(&r.to_le_bytes());
        }
        *key = hash64(&bytes);
    }
    keys
}

/// Candidate pairs `(i, j)`, `i < j`, sorted: items whose signatures agree on every row of
/// at least one band. `items` are `(id, signature)`; ids must be distinct. A signature shorter
/// than `PERMUTATIONS` (none is made) takes part in no band.
pub fn candidates(items: &[(u32, &[u32])]) -> Vec<(u32, u32)> {
    let keyed: Vec<(u32, BandKeys)> =
        items.iter().filter(|(_, sig)| sig.len() >= PERMUTATIONS).map(|(id, sig)| (*id, band_keys(sig))).collect();
    banded_candidates(&keyed)
}

/// `candidates` from the items' band keys: per band, the items sorted by key, each run of
/// equal keys a bucket.
pub fn banded_candidates(items: &[(u32, BandKeys)]) -> Vec<(u32, u32)> {
    let mut pairs = Vec::new();
    let mut bucket: Vec<(u64, u32)> = Vec::with_capacity(items.len());
    for band in 0..BANDS {
        bucket.clear();
        bucket.extend(items.iter().map(|(id, keys)| (keys[band], *id)));
        bucket.sort_unstable();
        for run in bucket.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
            for (n, &(_, x)) in run.iter().enumerate() {
                for &(_, y) in &run[n + 1..] {
                    pairs.push((x.min(y), x.max(y)));
                }
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// A content shingle's hash from the fold of its words.
fn shingle_hash(fold: u64) -> u64 {
    let x = fold ^ (fold >> 31);
    let x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

/// Words per content shingle (trajectory content is longer and more repetitive than an instruction).
pub const CONTENT_SHINGLE_WORDS: usize = 5;

/// The step that folds a word's hash `h` into `x`: n-grams and content shingles hash their
/// words oldest first from 0.
#[inline(always)]
fn fold_word(x: u64, h: u64) -> u64 {
    (x.rotate_left(23) ^ h).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Appends the fold (`fold_word`) of every `N` consecutive hashes of `words`, in order (none
/// when there are fewer). With 64-bit vector multiplies the windows are folded side by side,
/// each a lane (the same values on every path): a fold per word and window position one
/// after another was most of signing a run's content.
pub(crate) fn window_folds<const N: usize>(words: &[u64], out: &mut Vec<u64>) {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512dq") && is_x86_feature_detected!("avx512vl") {
            // SAFETY: the CPU has the features `folds_side_by_side_avx512` is compiled for.
            return unsafe { folds_side_by_side_avx512::<N>(words, out) };
        }
    }
    out.extend(words.windows(N).map(|w| w.iter().fold(0, |x, h| fold_word(x, *h))));
}

/// `window_folds` one word position at a time, over every window: a pass per position, each
/// window a lane (without 64-bit vector multiplies the window-by-window fold is faster).
#[inline(always)]
fn folds_side_by_side<const N: usize>(words: &[u64], out: &mut Vec<u64>) {
    let Some(count) = (words.len() + 1).checked_sub(N).filter(|&n| n > 0) else { return };
    let start = out.len();
    out.resize(start + count, 0);
    let windows = &mut out[start..];
    for k in 0..N {
        for (x, h) in windows.iter_mut().zip(&words[k..]) {
            *x = fold_word(*x, *h);
        }
    }
}

/// `folds_side_by_side` compiled for AVX-512 (64-bit lane multiplies and rotates).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
fn folds_side_by_side_avx512<const N: usize>(words: &[u64], out: &mut Vec<u64>) {
    folds_side_by_side::<N>(words, out)
}

/// A one-permutation MinHash over a stream of text: each shingle of `CONTENT_SHINGLE_WORDS`
/// words (runs of alphanumeric characters, case kept) is hashed once; its top 7 bits pick
/// one of `PERMUTATIONS` bins, which keeps the least of its low 32 bits. One hash per
/// shingle instead of one per slot: sketching costs about as much as reading the text.
pub struct ContentSketch {
    window: [u64; CONTENT_SHINGLE_WORDS],
    words: usize,
    bins: Vec<u32>,
    filled: bool,
    /// The last words before a text and the text's words, then their shingles' folds.
    run: Vec<u64>,
    folds: Vec<u64>,
}

impl Default for ContentSketch {
    fn default() -> Self {
        ContentSketch {
            window: [0; CONTENT_SHINGLE_WORDS],
            words: 0,
            bins: vec![u32::MAX; PERMUTATIONS],
            filled: false,
            run: Vec::new(),
            folds: Vec::new(),
        }
    }
}

impl ContentSketch {
    /// Adds the words whose hashes are `words`, in order: a shingle ends at each word with
    /// at least `CONTENT_SHINGLE_WORDS - 1` words before it, here or in earlier calls.
    pub fn add_words(&mut self, words: &[u64]) {
        let before = self.words.min(CONTENT_SHINGLE_WORDS - 1);
        self.run.clear();
        self.run.extend((0..before).map(|k| self.window[(self.words - before + k) % CONTENT_SHINGLE_WORDS]));
        self.run.extend_from_slice(words);
        self.folds.clear();
        window_folds::<CONTENT_SHINGLE_WORDS>(&self.run, &mut self.folds);
        let folds = std::mem::take(&mut self.folds);
        folds.iter().for_each(|&x| self.add_shingle(shingle_hash(x)));
        self.folds = folds;
        // The window keeps word `i` at `i % CONTENT_SHINGLE_WORDS`; only the last ones stay.
        let skipped = words.len().saturating_sub(CONTENT_SHINGLE_WORDS);
        self.words += skipped;
        for &h in &words[skipped..] {
            self.window[self.words % CONTENT_SHINGLE_WORDS] = h;
            self.words += 1;
        }
    }

    /// The hash of the last `n` words, oldest first.
    fn combined(&self, n: usize) -> u64 {
        let last = |k| self.window[(self.words + CONTENT_SHINGLE_WORDS - n + k) % CONTENT_SHINGLE_WORDS];
        shingle_hash((0..n).fold(0, |x, k| fold_word(x, last(k))))
    }

    fn add_shingle(&mut self, x: u64) {
        let bin = (x >> 57) as usize % PERMUTATIONS;
        if let Some(slot) = self.bins.get_mut(bin) {
            *slot = (*slot).min(x as u32);
        }
        self.filled = true;
    }

    /// The signature, `None` for a text without words. A text shorter than a shingle is one
    /// shingle; empty bins take the next filled bin's value plus their distance to it
    /// (rotation densification), so sketches of short texts still compare.
    pub fn finish(mut self) -> Option<Signature> {
        if !self.filled && self.words > 0 {
            self.add_shingle(self.combined(self.words));
        }
        if !self.filled {
            return None;
        }
        let n = self.bins.len();
        let mut out = self.bins.clone();
        for (i, slot) in out.iter_mut().enumerate() {
            if self.bins[i] != u32::MAX {
                continue;
            }
            if let Some(d) = (1..n).find(|d| self.bins[(i + d) % n] != u32::MAX) {
                *slot = self.bins[(i + d) % n].wrapping_add((d as u32).wrapping_mul(0x9E37_79B9));
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shingles_ignore_case_punctuation_and_whitespace() {
        assert_eq!(shingles("Fix the  bug, NOW!\n"), shingles("fix the bug now"));
        assert_eq!(shingles("fix the bug now").len(), 2);
        assert_eq!(shingles("two words").len(), 1);
        assert!(shingles("  ... ").is_empty());
        assert_eq!(shingles("a b c a b c a b c").len(), 3, "repeated shingles count once");
    }

    /// Synthetic texts: every kind of separator, case and non-ASCII character next to the
    /// ASCII path (İ lowercases to i and a combining dot, which splits the word), and final
    /// sigmas whose lowercasing reads past punctuation to an ASCII letter, or stops at
    /// whitespace, within texts that are mostly ASCII.
    #[test]
    fn word_hashes_are_the_hashes_of_the_split_words() {
        let texts = [
            "",
            "  ...  ",
            "Fix the bug, NOW!\n\tthen\r\nrun `cargo test` (x2) -- a_b c-d e.f 3.14",
            "word",
            "trailing space ",
            "ΣΊΣΥΦΟΣ rolls; İstanbul naïve café 東京 2026",
            "MiXeD123abc DEF",
            "ΟΔΟΣ.ΑΒ ΟΔΟΣ ΑΣ'B ΑΣ.b ΑΣ Β Σ aΣ. ΣΑΣ\tΣ x",
            "The quick ΔΟΣ brown Fox. Jumps ΑΣ.b over\nthe LAZY ΑΣ\rdog",
            "é starts, ends with é",
            "İİ\nİ ﬃ ß ΐ Straße",
            "a\u{a0}B nbsp; café—NAÏVE — em dash",
            "plain ASCII before\n\n\u{1F600} an emoji and after, ASCII AGAIN",
        ];
        for text in texts {
            for lower in [false, true] {
                let source = if lower { text.to_lowercase() } else { text.to_string() };
                let want: Vec<u64> = source
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(|w| hash64(w.as_bytes()))
                    .collect();
                let mut got = Vec::new();
                word_hashes(text, lower, &mut Vec::new(), |h| got.push(h));
                assert_eq!(got, want, "{text:?} lower {lower}");
            }
            let (mut kept, mut lowered) = (Vec::new(), Vec::new());
            word_hashes_both(text, &mut Vec::new(), |h| kept.push(h), |h| lowered.push(h));
            let (mut want_kept, mut want_lowered) = (Vec::new(), Vec::new());
            word_hashes(text, false, &mut Vec::new(), |h| want_kept.push(h));
            word_hashes(text, true, &mut Vec::new(), |h| want_lowered.push(h));
            assert_eq!((kept, lowered), (want_kept, want_lowered), "{text:?} both");
        }
    }

    /// Synthetic: mostly ASCII instructions with characters past ASCII (final sigmas, dotted
    /// capital I, emoji) give the shingles of the whole text lowercased and split by chars.
    #[test]
    fn shingles_are_those_of_the_text_split_by_chars() {
        let by_chars = |text: &str| {
            let lower = text.to_lowercase();
            let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
            let mut out: Vec<u64> =
                words.windows(SHINGLE_WORDS.min(words.len()).max(1)).map(|w| hash64(w.join(" ").as_bytes())).collect();
            out.sort_unstable();
            out.dedup();
            out
        };
        for text in [
            "Fix the bug, NOW!\n\tthen run `cargo test` (x2)",
            "ΟΔΟΣ.ΑΒ ΟΔΟΣ ΑΣ'B ΑΣ.b ΑΣ Β Σ aΣ. ΣΑΣ\tΣ x",
            "İİ\nİ ﬃ ß ΐ Straße, then \u{1F600} and ASCII AGAIN",
            "one",
            " ... ",
        ] {
            assert_eq!(shingles(text), by_chars(text), "{text:?}");
        }
    }

    #[test]
    fn a_shingle_is_the_hash_of_its_words_joined_by_one_space() {
        let mut want = vec![hash64(b"fix the bug"), hash64(b"the bug now")];
        want.sort_unstable();
        assert_eq!(shingles("Fix  the bug, now"), want);
        assert_eq!(shingles("two, words"), [hash64(b"two words")]);
        assert_eq!(shingles("word"), [hash64(b"word")]);
    }

    #[test]
    fn jaccard_is_exact() {
        assert_eq!(jaccard(&[1, 2, 3, 4], &[3, 4, 5, 6]), 2.0 / 6.0);
        assert_eq!(jaccard(&[], &[]), 1.0);
        assert_eq!(jaccard(&[1], &[]), 0.0);
        let a = shingles("one two three four five six seven eight nine ten");
        let b = shingles("one two three four five six seven eight nine ten eleven");
        assert_eq!(jaccard(&a, &b), 8.0 / 9.0);
    }

    #[test]
    fn signatures_are_stable_and_estimate_similarity() {
        // Pinned: a change to the hash or the permutations changes every library's groups.
        let sig = signature(&shingles("fix the bug now"));
        assert_eq!(sig.len(), PERMUTATIONS);
        assert_eq!(sig, signature(&shingles("FIX the bug; now")));
        let words: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
        let a = shingles(&words.join(" "));
        let b = shingles(&words[..180].join(" "));
        let exact = jaccard(&a, &b);
        let est = estimate(&signature(&a), &signature(&b));
        assert!((est - exact).abs() < 0.15, "estimate {est} exact {exact}");
        assert_eq!(estimate(&signature(&a), &signature(&a)), 1.0);
    }

    /// The next value of the xorshift64 sequence in `x`: synthetic hashes.
    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// The definition: per slot, the least high half of `h * mul + add` over the set, with
    /// slot `i`'s SplitMix64 pair computed at run time.
    fn signature_by_definition(shingles: &[u64]) -> Signature {
        (0..PERMUTATIONS)
            .map(|i| {
                let (z, a) = splitmix((i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let b = splitmix(z).1;
                shingles.iter().map(|s| (s.wrapping_mul(a | 1).wrapping_add(b) >> 32) as u32).fold(u32::MAX, u32::min)
            })
            .collect()
    }

    #[test]
    fn every_signature_path_gives_the_definition() {
        // Synthetic (an algorithm's equivalence, not a file's rule): sets of 0 to 299
        // pseudo-random shingles, through `signature` (the widest path this CPU has) and
        // through the plain fold.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for n in 0..300 {
            let set: Vec<u64> = (0..n).map(|_| xorshift(&mut x)).collect();
            let want = signature_by_definition(&set);
            assert_eq!(signature(&set), want, "{n} shingles");
            let mut plain = [u32::MAX; PERMUTATIONS];
            fold(&set, &mut plain);
            assert_eq!(plain.to_vec(), want, "{n} shingles, plain fold");
        }
        // Pinned: a change to the hash or the permutations changes every library's groups.
        let sig = signature(&shingles("fix the bug now"));
        assert_eq!(sig[..4], [862_845_923, 1_767_984_584, 1_589_379_256, 1_687_721_858]);
    }

    #[test]
    fn banding_finds_near_duplicates_and_not_strangers() {
        let words: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let other: Vec<String> = (0..100).map(|i| format!("x{i}")).collect();
        let a = signature(&shingles(&words.join(" ")));
        let b = signature(&shingles(&(words.join(" ") + " please be thorough")));
        let c = signature(&shingles(&other.join(" ")));
        let got = candidates(&[(7, &a), (3, &b), (5, &c)]);
        assert_eq!(got, vec![(3, 7)]);
    }

    #[test]
    fn candidates_are_the_pairs_that_agree_on_a_whole_band() {
        // Synthetic: 40 signatures drawn from few values, so that many pairs share a band and
        // many share rows without a whole band; checked against a slot-by-slot comparison.
        let mut state = 11u64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u32
        };
        let sigs: Vec<Signature> = (0..40).map(|_| (0..PERMUTATIONS).map(|_| next() % 3).collect()).collect();
        let items: Vec<(u32, &[u32])> = sigs.iter().enumerate().map(|(i, s)| (i as u32 * 3, s.as_slice())).collect();
        let mut want = Vec::new();
        for (n, (x, a)) in items.iter().enumerate() {
            for (y, b) in &items[n + 1..] {
                if a.chunks(ROWS).zip(b.chunks(ROWS)).any(|(p, q)| p == q) {
                    want.push((*x.min(y), *x.max(y)));
                }
            }
        }
        want.sort_unstable();
        let got = candidates(&items);
        assert_eq!(got, want);
        assert!(got.len() > 40 && got.len() < 780, "some pairs, not all: {}", got.len());
    }

    /// Synthetic (an algorithm's equivalence): window folds on every path equal the fold
    /// of each window, for 0 to 40 words and windows of 1, 5 and 13; a sketch fed in calls of
    /// every size (a shingle spanning calls, a first call shorter than a shingle) equals one
    /// fed word by word with the per-word fold it replaced.
    #[test]
    fn window_folds_and_sketches_fold_each_window() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let words: Vec<u64> = (0..40).map(|_| xorshift(&mut x)).collect();
        fn by_window<const N: usize>(words: &[u64]) -> Vec<u64> {
            words.windows(N).map(|w| w.iter().fold(0, |x, h| fold_word(x, *h))).collect()
        }
        for n in 0..=words.len() {
            let w = &words[..n];
            let (mut fast, mut side_by_side) = (vec![7], vec![7]);
            window_folds::<13>(w, &mut fast);
            folds_side_by_side::<13>(w, &mut side_by_side);
            assert_eq!(fast[1..], by_window::<13>(w), "{n} words");
            assert_eq!(side_by_side, fast, "{n} words, side by side");
            let (mut five, mut one) = (Vec::new(), Vec::new());
            window_folds::<5>(w, &mut five);
            window_folds::<1>(w, &mut one);
            assert_eq!((five, one), (by_window::<5>(w), by_window::<1>(w)), "{n} words");
        }
        let word_by_word = |words: &[u64]| {
            let mut s = ContentSketch::default();
            for (i, _) in words.iter().enumerate() {
                if i + 1 >= CONTENT_SHINGLE_WORDS {
                    let fold = words[i + 1 - CONTENT_SHINGLE_WORDS..=i].iter().fold(0, |x, h| fold_word(x, *h));
                    s.add_shingle(shingle_hash(fold));
                }
            }
            s.words = words.len();
            for (i, h) in words.iter().enumerate() {
                s.window[i % CONTENT_SHINGLE_WORDS] = *h;
            }
            s.finish()
        };
        for n in 0..=words.len() {
            for call in [1, 2, 3, 4, 5, 7, 40] {
                let mut s = ContentSketch::default();
                words[..n].chunks(call).for_each(|c| s.add_words(c));
                s.add_words(&[]);
                assert_eq!(s.finish(), word_by_word(&words[..n]), "{n} words in calls of {call}");
            }
        }
    }

    /// The sketch of `text`'s words, case kept (as `signatures` sketches a run's content).
    fn sketch(text: &str) -> Option<Signature> {
        let mut words = Vec::new();
        word_hashes(text, false, &mut Vec::new(), |h| words.push(h));
        let mut s = ContentSketch::default();
        s.add_words(&words);
        s.finish()
    }

    #[test]
    fn content_sketches_estimate_similarity_of_long_texts() {
        let words: Vec<String> = (0..2000).map(|i| format!("w{}", i % 1500)).collect();
        let a = sketch(&words.join(" ")).expect("sketch");
        let mut edited = words.clone();
        edited[1000] = "changed".into();
        let b = sketch(&edited.join(" ")).expect("sketch");
        let est = estimate(&a, &b);
        assert!(est > 0.9, "{est}");
        let other: Vec<String> = (0..2000).map(|i| format!("x{i}")).collect();
        assert!(estimate(&a, &sketch(&other.join(" ")).expect("sketch")) < 0.1);
        assert_eq!(sketch("same words, same sketch"), sketch("same  words same sketch"));
        assert!(sketch("two words").is_some() && sketch(" ... ").is_none());
    }
}
