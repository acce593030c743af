//! Bit masks of byte classes, 16 bytes at a time, for the hot scans of text (the end of a JSON
//! string, the tokens of a token-id array, the words a signature hashes): bit `i` stands for
//! byte `i`. SSE2 compares on x86_64, where SSE2 is part of every target; elsewhere the same
//! masks from 64-bit words, or byte by byte.

/// The classes of a token-id array's bytes (`integer_blocks`).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) struct NumberClasses {
    pub digit: u16,
    pub comma: u16,
    /// Space, tab, line feed, carriage return.
    pub ws: u16,
    pub zero: u16,
}

/// The bytes of `chunk` that end a run of plain string content: a quote, a backslash or a
/// control character (below 0x20).
#[cfg(target_arch = "x86_64")]
pub(crate) fn string_specials(chunk: &[u8; 16]) -> u16 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of every x86_64 target; the load reads the 16 bytes of `chunk`
    // (unaligned loads allowed).
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Unsigned `v <= 0x1f`: the minimum of the two is `v` itself.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u16
    }
}

/// `string_specials` without vector instructions.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn string_specials(chunk: &[u8; 16]) -> u16 {
    words::string_specials(chunk)
}

/// The ASCII whitespace of `chunk` as `str::split_whitespace` knows it (tab, line feed,
/// vertical tab, form feed, carriage return, space), and its spaces alone.
#[cfg(target_arch = "x86_64")]
pub(crate) fn text_whitespace(chunk: &[u8; 16]) -> (u16, u16) {
    use std::arch::x86_64::*;
    // SAFETY: as in `string_specials`.
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let space = _mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8));
        // Unsigned `v - 9 <= 4`: tab to carriage return.
        let from_tab = _mm_sub_epi8(v, _mm_set1_epi8(9));
        let control = _mm_cmpeq_epi8(_mm_min_epu8(from_tab, _mm_set1_epi8(4)), from_tab);
        let ws = _mm_movemask_epi8(_mm_or_si128(space, control)) as u16;
        (ws, _mm_movemask_epi8(space) as u16)
    }
}

/// `text_whitespace` without vector instructions.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn text_whitespace(chunk: &[u8; 16]) -> (u16, u16) {
    words::text_whitespace(chunk)
}

/// The ASCII letters and digits of `chunk`, and its capitals among them.
#[cfg(target_arch = "x86_64")]
pub(crate) fn alphanumeric(chunk: &[u8; 16]) -> (u16, u16) {
    use std::arch::x86_64::*;
    // SAFETY: as in `string_specials`.
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        // Each range moved to the bottom of the signed range: below -128 + its size is in it.
        let within = |v: __m128i, from: u8, size: u8| {
            let shifted = _mm_add_epi8(v, _mm_set1_epi8(0x80u8.wrapping_sub(from) as i8));
            _mm_cmplt_epi8(shifted, _mm_set1_epi8((0x80u8.wrapping_add(size)) as i8))
        };
        let upper = within(v, b'A', 26);
        let lower = within(v, b'a', 26);
        let digit = within(v, b'0', 10);
        let alphanumeric = _mm_or_si128(_mm_or_si128(upper, lower), digit);
        (_mm_movemask_epi8(alphanumeric) as u16, _mm_movemask_epi8(upper) as u16)
    }
}

/// `alphanumeric` byte by byte.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn alphanumeric_bytes(chunk: &[u8; 16]) -> (u16, u16) {
    chunk.iter().enumerate().fold((0, 0), |(alphanumeric, upper), (i, b)| {
        (alphanumeric | u16::from(b.is_ascii_alphanumeric()) << i, upper | u16::from(b.is_ascii_uppercase()) << i)
    })
}

/// `alphanumeric` without vector instructions.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn alphanumeric(chunk: &[u8; 16]) -> (u16, u16) {
    alphanumeric_bytes(chunk)
}

/// The classes of the 16 bytes of `chunk`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn number_classes(chunk: &[u8; 16]) -> NumberClasses {
    use std::arch::x86_64::*;
    // SAFETY: as in `string_specials`.
    let [digit, comma, ws, zero] = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
        // Digits moved to the bottom of the signed range: below -118 is a digit.
        let shifted = _mm_add_epi8(v, _mm_set1_epi8(0x80u8.wrapping_sub(b'0') as i8));
        let digit = _mm_cmplt_epi8(shifted, _mm_set1_epi8(-118));
        let ws = _mm_or_si128(_mm_or_si128(eq(b' '), eq(b'\n')), _mm_or_si128(eq(b'\r'), eq(b'\t')));
        [digit, eq(b','), ws, eq(b'0')].map(|mask| _mm_movemask_epi8(mask) as u16)
    };
    NumberClasses { digit, comma, ws, zero }
}

/// `number_classes` without vector instructions.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn number_classes(chunk: &[u8; 16]) -> NumberClasses {
    words::number_classes(chunk)
}

/// How the bytes a mask keeps are appended (`append_kept`): chosen once per array, for the
/// CPU at hand.
#[derive(Clone, Copy)]
pub(crate) enum Compactor {
    /// AVX-512 VBMI2's byte compression: a block in two instructions.
    #[cfg(target_arch = "x86_64")]
    Compress,
    /// Run by run, on any CPU.
    Runs,
}

impl Compactor {
    /// The fastest this CPU has.
    pub(crate) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            // Every feature `append_compressed` enables (a hypervisor may report them apart).
            if has!("avx512f") && has!("avx512bw") && has!("avx512vbmi2") {
                return Compactor::Compress;
            }
        }
        Compactor::Runs
    }

    /// Appends the bytes of `block` whose bits are set in `keep`, in order: the token ids of
    /// an array without the whitespace between them.
    #[inline(always)]
    pub(crate) fn append_kept(self, block: &[u8; 64], keep: u64, out: &mut Vec<u8>) {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `detect` chose it on a CPU with AVX-512 F, BW and VBMI2.
            Compactor::Compress => unsafe { append_compressed(block, keep, out) },
            Compactor::Runs => append_runs(block, keep, out),
        }
    }
}

/// `append_kept` by AVX-512 VBMI2: the kept bytes packed to the front of a register, which
/// is stored whole into spare capacity; the length grows by the kept bytes only.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2")]
unsafe fn append_compressed(block: &[u8; 64], keep: u64, out: &mut Vec<u8>) {
    use std::arch::x86_64::*;
    out.reserve(64);
    let len = out.len();
    // SAFETY: the load reads the 64 bytes of `block`; `reserve` left at least 64 bytes of
    // capacity past `len` for the store, and `set_len` covers only the bytes kept, which the
    // store initialized.
    unsafe {
        let packed = _mm512_maskz_compress_epi8(keep, _mm512_loadu_si512(block.as_ptr().cast()));
        _mm512_storeu_si512(out.as_mut_ptr().add(len).cast(), packed);
        out.set_len(len + keep.count_ones() as usize);
    }
}

/// `append_kept` one run of kept bytes at a time.
fn append_runs(block: &[u8; 64], mut keep: u64, out: &mut Vec<u8>) {
    while keep != 0 {
        let start = keep.trailing_zeros() as usize;
        let end = start + (keep >> start).trailing_ones() as usize;
        out.extend_from_slice(&block[start..end]);
        keep = if end == 64 { 0 } else { keep & (u64::MAX << end) };
    }
}

/// The masks from 64-bit words: eight bytes at a time, each class's bytes marked in their
/// high bit, then gathered into eight bits by one multiplication.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod words {
    use super::NumberClasses;

    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HIGH: u64 = 0x8080_8080_8080_8080;

    const fn splat(b: u8) -> u64 {
        b as u64 * 0x0101_0101_0101_0101
    }

    /// The high bit of each byte of `w` that is not zero (exact: no carry crosses bytes).
    fn nonzero(w: u64) -> u64 {
        (((w & LOW7) + LOW7) | w) & HIGH
    }

    /// The high bit of each byte of `w` equal to `b`.
    fn equal(w: u64, b: u8) -> u64 {
        !nonzero(w ^ splat(b)) & HIGH
    }

    /// The high bit of each byte of `w` below `limit` (at most 0x80).
    fn below(w: u64, limit: u8) -> u64 {
        !((((w & LOW7) + splat(0x80 - limit)) | w) & HIGH) & HIGH
    }

    /// The high bits of a word's eight bytes gathered into eight bits, byte 0 first.
    fn pack(high_bits: u64) -> u16 {
        ((high_bits >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u16
    }

    /// Both words of a chunk, each through `classes`, as 16-bit masks.
    fn each_word(chunk: &[u8; 16], classes: impl Fn(u64) -> u64) -> u16 {
        let (low, high) = chunk.split_at(8);
        let word = |half: &[u8]| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(half);
            pack(classes(u64::from_le_bytes(bytes)))
        };
        word(low) | word(high) << 8
    }

    pub(super) fn string_specials(chunk: &[u8; 16]) -> u16 {
        each_word(chunk, |w| equal(w, b'"') | equal(w, b'\\') | below(w, 0x20))
    }

    pub(super) fn text_whitespace(chunk: &[u8; 16]) -> (u16, u16) {
        let space = each_word(chunk, |w| equal(w, b' '));
        // Tab to carriage return: below 14 and not below 9.
        (space | each_word(chunk, |w| below(w, 14) & !below(w, 9)), space)
    }

    pub(super) fn number_classes(chunk: &[u8; 16]) -> NumberClasses {
        NumberClasses {
            digit: each_word(chunk, |w| below(w ^ splat(b'0'), 10)),
            comma: each_word(chunk, |w| equal(w, b',')),
            ws: each_word(chunk, |w| equal(w, b' ') | equal(w, b'\n') | equal(w, b'\r') | equal(w, b'\t')),
            zero: each_word(chunk, |w| equal(w, b'0')),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic: both compactors append exactly the bytes a mask keeps, for masks of every
    /// density, the full and empty ones included, after text already in the buffer.
    #[test]
    fn compactors_append_the_kept_bytes() {
        let block: [u8; 64] = std::array::from_fn(|i| b'!' + i as u8);
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut masks = vec![0, u64::MAX, 1, 1 << 63, u64::MAX >> 1, u64::MAX << 1];
        for _ in 0..2000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            masks.extend([state, state & state.rotate_left(7), state | state.rotate_left(13)]);
        }
        for compactor in [Compactor::detect(), Compactor::Runs] {
            for &keep in &masks {
                let mut out = b"[7,".to_vec();
                compactor.append_kept(&block, keep, &mut out);
                let mut expected = b"[7,".to_vec();
                expected.extend((0..64).filter(|i| keep >> i & 1 == 1).map(|i| block[i]));
                assert_eq!(out, expected, "{keep:#x}");
            }
        }
    }

    /// Every byte value at every place of a chunk, in both implementations, against the
    /// byte-by-byte rule.
    #[test]
    fn masks_match_the_byte_rules() {
        let mask = |chunk: &[u8; 16], class: fn(u8) -> bool| {
            (0..16).filter(|&i| class(chunk[i])).fold(0u16, |m, i| m | 1 << i)
        };
        for first in 0..=255u8 {
            for step in [1u8, 37, 101] {
                let chunk: [u8; 16] = std::array::from_fn(|i| first.wrapping_add(step.wrapping_mul(i as u8)));
                let specials = mask(&chunk, |b| b == b'"' || b == b'\\' || b < 0x20);
                assert_eq!(string_specials(&chunk), specials);
                assert_eq!(words::string_specials(&chunk), specials);
                let ws = (mask(&chunk, |b| matches!(b, b'\t'..=b'\r' | b' ')), mask(&chunk, |b| b == b' '));
                assert_eq!(text_whitespace(&chunk), ws);
                assert_eq!(words::text_whitespace(&chunk), ws);
                let expected = NumberClasses {
                    digit: mask(&chunk, |b| b.is_ascii_digit()),
                    comma: mask(&chunk, |b| b == b','),
                    ws: mask(&chunk, |b| matches!(b, b' ' | b'\n' | b'\r' | b'\t')),
                    zero: mask(&chunk, |b| b == b'0'),
                };
                assert_eq!(number_classes(&chunk), expected);
                assert_eq!(words::number_classes(&chunk), expected);
                let words = (mask(&chunk, |b| b.is_ascii_alphanumeric()), mask(&chunk, |b| b.is_ascii_uppercase()));
                assert_eq!(alphanumeric(&chunk), words);
                assert_eq!(alphanumeric_bytes(&chunk), words);
            }
        }
    }
}
