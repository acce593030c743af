//! Flat arrays of non-negative integers (token ids, millions of them in a corpus) checked
//! 64 bytes at a time: each block becomes bit masks of its digits, commas and whitespace
//! (`byte_masks`), and the array's grammar is checked on the masks (the run-carrying
//! additions of simdjson's stage 1). This is a fast path for `json_text::flat_numbers`:
//! `count` answers only for arrays it can judge whole and leaves every other text (signs,
//! fractions, long numbers, any other byte) to the byte-by-byte walk, which decides.

use crate::byte_masks;

/// Digits in a row beyond which the walk decides (it allows up to 19).
const LONGEST_RUN: u32 = 15;

/// How many integers the array body `body` (the text between its brackets) holds, when it
/// holds at least one and nothing but integers of up to `LONGEST_RUN` digits without
/// leading zeros, separated by commas, with JSON whitespace anywhere between them. `None`
/// for any other body, valid or not.
pub(crate) fn count(body: &[u8]) -> Option<usize> {
    walk(body, |_, _| {})
}

/// `count`, appending to `out` the body without its whitespace as it goes: the canonical
/// JSON between the brackets, in the pass that checks it. When the answer is `None`, what
/// was appended is left for the caller to cut.
pub(crate) fn write(body: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let compactor = byte_masks::Compactor::detect();
    out.reserve(body.len());
    walk(body, |block, ws| compactor.append_kept(block, !ws, out))
}

/// `count`'s pass, handing `each` every checked block with its whitespace mask.
#[inline(always)]
fn walk(body: &[u8], mut each: impl FnMut(&[u8; 64], u64)) -> Option<usize> {
    let mut state = State::default();
    let mut blocks = body.chunks_exact(64);
    for block in blocks.by_ref() {
        let block: &[u8; 64] = block.try_into().ok()?;
        let masks = Masks::of(block);
        let ws = masks.ws;
        state.block(masks)?;
        each(block, ws);
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        // Padded with spaces: whitespace after the last integer changes nothing.
        let mut last = [b' '; 64];
        last[..rest.len()].copy_from_slice(rest);
        let masks = Masks::of(&last);
        let ws = masks.ws;
        state.block(masks)?;
        each(&last, ws);
    }
    (state.seen && state.last_digit).then_some(state.commas + 1)
}

/// One block's classes, bit `i` standing for its byte `i`.
struct Masks {
    digit: u64,
    comma: u64,
    ws: u64,
    zero: u64,
}

impl Masks {
    /// The masks of a block of 64 bytes.
    fn of(block: &[u8; 64]) -> Masks {
        let mut m = Masks { digit: 0, comma: 0, ws: 0, zero: 0 };
        for (k, chunk) in block.chunks_exact(16).enumerate() {
            let Ok(chunk) = <&[u8; 16]>::try_from(chunk) else { continue };
            let classes = byte_masks::number_classes(chunk);
            let shift = 16 * k;
            m.digit |= u64::from(classes.digit) << shift;
            m.comma |= u64::from(classes.comma) << shift;
            m.ws |= u64::from(classes.ws) << shift;
            m.zero |= u64::from(classes.zero) << shift;
        }
        m
    }
}

/// What the blocks read so far leave for the next one.
#[derive(Default)]
struct State {
    /// The last byte read was a digit / a comma (0 or 1).
    prev_digit: u64,
    prev_comma: u64,
    /// Whitespace that began right after a digit / a comma runs to the end of the last block.
    ws_after_digit: u64,
    ws_after_comma: u64,
    /// The last byte read was a `0` that begins an integer.
    zero_start: u64,
    /// Digits in a row at the end of the last block.
    run: u32,
    commas: usize,
    /// Whether anything but whitespace was read, and whether the last such byte is a digit.
    seen: bool,
    last_digit: bool,
}

impl State {
    /// Checks one block against the grammar (`None`: not an array `count` accepts).
    fn block(&mut self, m: Masks) -> Option<()> {
        let Masks { digit, comma, ws, zero } = m;
        if !(digit | comma | ws) != 0 {
            return None;
        }
        let digit_before = (digit << 1) | self.prev_digit;
        let comma_before = (comma << 1) | self.prev_comma;
        // A run of whitespace begun after a digit (or comma), plus one at its first byte,
        // carries through the run to the first byte after it.
        let (ends_d, carry_d) = ws.overflowing_add((digit_before & ws) | self.ws_after_digit);
        let (ends_c, carry_c) = ws.overflowing_add((comma_before & ws) | self.ws_after_comma);
        // Bytes other than whitespace whose previous byte other than whitespace is a digit / comma.
        let after_digit = (digit_before & !ws) | (ends_d & !ws);
        let after_comma = (comma_before & !ws) | (ends_c & !ws);
        let starts = digit & !digit_before;
        // Two integers with only whitespace between them; a comma not after an integer
        // (first, or after a comma); a comma right after a comma.
        if starts & after_digit != 0 || comma & !after_digit != 0 || after_comma & comma != 0 {
            return None;
        }
        let zero_starts = starts & zero;
        if (zero_starts << 1) & digit != 0 || self.zero_start & digit != 0 {
            return None;
        }
        let mut long = digit;
        for shift in [1, 2, 4, 8] {
            long &= long >> shift;
        }
        if long != 0 || self.run + digit.trailing_ones() > LONGEST_RUN {
            return None;
        }
        let tokens = digit | comma;
        if tokens != 0 {
            self.seen = true;
            self.last_digit = digit >> (63 - tokens.leading_zeros()) & 1 == 1;
        }
        self.commas += comma.count_ones() as usize;
        self.prev_digit = digit >> 63;
        self.prev_comma = comma >> 63;
        self.ws_after_digit = u64::from(carry_d);
        self.ws_after_comma = u64::from(carry_c);
        self.zero_start = zero_starts >> 63;
        self.run = if digit == u64::MAX { 64 } else { digit.leading_ones() };
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule `count` must agree with wherever it answers: serde_json's reading of the
    /// array as non-negative integers.
    fn reference(body: &[u8]) -> Option<usize> {
        let text = format!("[{}]", std::str::from_utf8(body).ok()?);
        let values: Vec<serde_json::Value> = serde_json::from_str(&text).ok()?;
        let plain = |v: &serde_json::Value| v.is_u64();
        (!values.is_empty() && values.iter().all(plain)).then_some(values.len())
    }

    /// Whether `count` answered; where it did, it answered as the reference, and it
    /// answered for every array of integers of up to `LONGEST_RUN` digits.
    fn agrees(body: &[u8]) -> bool {
        let n = count(body);
        let mut written = b"[".to_vec();
        assert_eq!(write(body, &mut written), n, "{:?}", String::from_utf8_lossy(body));
        if n.is_some() {
            let mut expected = b"[".to_vec();
            expected.extend(body.iter().filter(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t')));
            assert_eq!(written, expected, "{:?}", String::from_utf8_lossy(body));
        }
        let short = body.split(|b| !b.is_ascii_digit()).all(|run| run.len() <= LONGEST_RUN as usize);
        if n.is_some() || short {
            assert_eq!(n, reference(body), "{:?}", String::from_utf8_lossy(body));
        }
        n.is_some()
    }

    /// Synthetic: every body of up to six bytes over digits, zero, comma, whitespace and a
    /// sign (real token arrays hold only well-formed ones).
    #[test]
    fn short_bodies_exhaustively() {
        let alphabet = b"07, \n-";
        let mut answered = 0;
        for len in 1..=6u32 {
            for n in 0..alphabet.len().pow(len) {
                let mut k = n;
                let body: Vec<u8> = (0..len)
                    .map(|_| {
                        let b = alphabet[k % alphabet.len()];
                        k /= alphabet.len();
                        b
                    })
                    .collect();
                answered += usize::from(agrees(&body));
            }
        }
        assert!(answered > 1_000, "{answered} answered");
    }

    /// Synthetic: bodies that cross block boundaries at every offset, valid and broken.
    #[test]
    fn across_blocks() {
        let valid = "1, 22, 333,4444 ,55555\n,\t0, 7, 123456789012345, 9";
        assert_eq!(count(valid.as_bytes()), Some(9));
        for pad in 0..130 {
            for (body, expected) in [
                (format!("{}{valid}", " ".repeat(pad)), Some(9)),
                (format!("{}{valid}", "1,".repeat(pad)), Some(9 + pad)),
                (format!("{}1 2", "3, ".repeat(pad)), None),
                (format!("{}1,,2", "3, ".repeat(pad)), None),
                (format!("{}01", "3, ".repeat(pad)), None),
                (format!("{}1,", "3, ".repeat(pad)), None),
                (format!("{}1234567890123456", "3, ".repeat(pad)), None),
                (format!("{}1{}2", "3, ".repeat(pad), " ".repeat(pad + 1)), None),
                (format!("{}1{},{}2", "3,".repeat(pad), " ".repeat(pad), "\n".repeat(pad)), Some(pad + 2)),
                (format!("{}1,{}, 2", "3, ".repeat(pad), " ".repeat(pad)), None),
                (format!("{}0{}1", "3, ".repeat(pad), " ".repeat(pad + 1)), None),
                (format!("{}-1", "3, ".repeat(pad)), None),
            ] {
                assert_eq!(count(body.as_bytes()), expected, "{body:?}");
                agrees(body.as_bytes());
            }
        }
        assert_eq!(count(b""), None);
        assert_eq!(count(b"   "), None);
        assert_eq!(count(&[b'1'; 64]), None);
    }

    /// Synthetic: pseudo-random arrays of integers of 1 to 17 digits (some with a leading
    /// zero) and separators with whitespace, a third of them with one byte changed.
    #[test]
    fn random_bodies() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        let separators = [",", ", ", " ,", ",\n  ", "\t,\r\n", ",,", " "];
        let other = b"0123456789, \n-.e]x";
        let mut answered = 0;
        for _ in 0..20_000 {
            let mut body = Vec::new();
            for i in 0..next(40) + 1 {
                if i > 0 {
                    let which = if next(50) == 0 { 5 + next(2) } else { next(5) };
                    body.extend_from_slice(separators[which as usize].as_bytes());
                }
                let digits = if next(20) == 0 { 16 + next(2) } else { 1 + next(6) };
                for d in 0..digits {
                    let lead_zero = d == 0 && digits > 1 && next(30) != 0;
                    body.push(if lead_zero { b'1' + next(9) as u8 } else { b'0' + next(10) as u8 });
                }
            }
            if next(3) == 0 {
                let at = next(body.len() as u64) as usize;
                body[at] = other[next(other.len() as u64) as usize];
            }
            answered += usize::from(agrees(&body));
        }
        assert!(answered > 2_000, "{answered} of 20,000 answered");
    }
}
