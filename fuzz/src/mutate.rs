//! Mutations: byte-level (flips, inserts, deletes, splices) and structure-aware ones that
//! know JSON text (swap a value token for an edge case, drop or repeat a line, nest deeply).

/// xorshift64*: a tiny deterministic generator (runs are reproducible from the seed).
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (never zero inside).
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// JSON values that readers get wrong: empty, null, huge, negative, non-finite, lone
/// surrogates, wrong types, and deep nesting.
const EDGE_VALUES: &[&str] = &[
    "null",
    "\"\"",
    "0",
    "-1",
    "1e309",
    "-1e309",
    "18446744073709551616",
    "-9223372036854775809",
    "0.5",
    "true",
    "[]",
    "{}",
    "[null]",
    "{\"\":null}",
    "\"\\ud800\"",
    "\"\\u0000\"",
    "\"\u{202e}\u{fffd}\"",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
];

/// Applies one to three random mutations to `data`; `other` is another corpus input for
/// splicing; `words` are strings (keys, values) harvested from the seeds.
pub fn mutate(data: &mut Vec<u8>, other: &[u8], words: &[Vec<u8>], rng: &mut Rng) {
    for _ in 0..=rng.below(3) {
        match rng.below(12) {
            0 => flip_bit(data, rng),
            1 => set_byte(data, rng),
            2 => delete_chunk(data, rng),
            3 => insert_chunk(data, other, rng),
            4 => truncate(data, rng),
            5 | 6 => replace_token(data, EDGE_VALUES[rng.below(EDGE_VALUES.len())].as_bytes(), rng),
            7 => {
                if let Some(w) = words.get(rng.below(words.len())) {
                    replace_token(data, w, rng);
                }
            }
            8 => repeat_or_drop_line(data, rng),
            9 => nest(data, rng),
            10 => splice(data, other, rng),
            _ => change_digits(data, rng),
        }
    }
}

fn flip_bit(data: &mut [u8], rng: &mut Rng) {
    if !data.is_empty() {
        let i = rng.below(data.len());
        data[i] ^= 1 << rng.below(8);
    }
}

fn set_byte(data: &mut [u8], rng: &mut Rng) {
    const INTERESTING: &[u8] = &[0, 0xff, 0x7f, 0x80, b'"', b'\\', b'{', b'}', b'[', b']', b'\n', b',', b':'];
    if !data.is_empty() {
        let i = rng.below(data.len());
        data[i] = INTERESTING[rng.below(INTERESTING.len())];
    }
}

fn delete_chunk(data: &mut Vec<u8>, rng: &mut Rng) {
    if !data.is_empty() {
        let at = rng.below(data.len());
        let len = 1 + rng.below((data.len() - at).min(256));
        data.drain(at..at + len);
    }
}

fn insert_chunk(data: &mut Vec<u8>, other: &[u8], rng: &mut Rng) {
    if other.is_empty() {
        return;
    }
    let from = rng.below(other.len());
    let len = 1 + rng.below((other.len() - from).min(256));
    let at = rng.below(data.len() + 1);
    data.splice(at..at, other[from..from + len].iter().copied());
}

fn truncate(data: &mut Vec<u8>, rng: &mut Rng) {
    let keep = rng.below(data.len() + 1);
    data.truncate(keep);
}

/// The head of `data` and the tail of `other`, cut at random points.
fn splice(data: &mut Vec<u8>, other: &[u8], rng: &mut Rng) {
    let at = rng.below(data.len() + 1);
    let from = rng.below(other.len() + 1);
    data.truncate(at);
    data.extend_from_slice(&other[from..]);
}

/// Byte range of a JSON scalar token (string, number, literal) starting near `from`.
fn token_at(data: &[u8], from: usize) -> Option<(usize, usize)> {
    let start =
        from + data.get(from..)?.iter().position(|b| matches!(b, b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'))?;
    let end = if data[start] == b'"' {
        let mut i = start + 1;
        while i < data.len() && data[i] != b'"' {
            i += if data[i] == b'\\' { 2 } else { 1 };
        }
        (i + 1).min(data.len())
    } else {
        start
            + data[start..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\n'))
                .unwrap_or(data.len() - start)
    };
    Some((start, end))
}

/// Replaces the scalar token at a random place by `with`.
fn replace_token(data: &mut Vec<u8>, with: &[u8], rng: &mut Rng) {
    if let Some((s, e)) = token_at(data, rng.below(data.len())) {
        data.splice(s..e, with.iter().copied());
    }
}

/// Repeats or drops one line (JSON Lines records, pretty-printed members).
fn repeat_or_drop_line(data: &mut Vec<u8>, rng: &mut Rng) {
    let starts: Vec<usize> =
        std::iter::once(0).chain(data.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1)).collect();
    let i = rng.below(starts.len());
    let (s, e) = (starts[i], starts.get(i + 1).copied().unwrap_or(data.len()));
    if rng.below(2) == 0 {
        let line = data[s..e].to_vec();
        data.splice(s..s, line);
    } else {
        data.drain(s..e);
    }
}

/// Wraps the scalar token at a random place in many arrays or objects.
fn nest(data: &mut Vec<u8>, rng: &mut Rng) {
    if let Some((s, e)) = token_at(data, rng.below(data.len())) {
        let depth = 1 + rng.below(300);
        let (open, close): (&[u8], &[u8]) = if rng.below(2) == 0 { (b"[", b"]") } else { (b"{\"a\":", b"}") };
        let inner = data[s..e].to_vec();
        let mut v = open.repeat(depth);
        v.extend_from_slice(&inner);
        v.extend_from_slice(&close.repeat(depth));
        data.splice(s..e, v);
    }
}

/// Replaces a run of digits (counts, shapes, lengths in headers) by an edge number.
fn change_digits(data: &mut Vec<u8>, rng: &mut Rng) {
    const NUMBERS: &[&str] = &["0", "1", "255", "65535", "4294967295", "18446744073709551615", "999999999999"];
    let from = rng.below(data.len());
    let Some(off) = data.get(from..).and_then(|d| d.iter().position(u8::is_ascii_digit)) else { return };
    let s = from + off;
    let e = s + data[s..].iter().take_while(|b| b.is_ascii_digit()).count();
    data.splice(s..e, NUMBERS[rng.below(NUMBERS.len())].bytes());
}

/// Corrupts a SQLite file where it hurts: the 100-byte database header or the b-tree page
/// header at the start of a random page (page size read from the header, bytes 16-17).
pub fn sqlite_page_header(data: &mut [u8], rng: &mut Rng) {
    let size = match data.get(16..18) {
        Some([1, 0]) => 65536,
        Some(&[hi, lo]) => usize::from(u16::from_be_bytes([hi, lo])).max(512),
        _ => return,
    };
    let page = rng.below(data.len() / size + 1);
    let at = page * size + if page == 0 { rng.below(112) } else { rng.below(12) };
    if let Some(b) = data.get_mut(at) {
        *b = match rng.below(3) {
            0 => 0,
            1 => 0xff,
            _ => rng.next_u64() as u8,
        };
    }
}
