//! SHA-256 of many messages, two at a time. With the x86 SHA extensions one message's rounds
//! form a chain in which every instruction waits for the one before, so the SHA unit sits idle
//! between them; stepping a second message through the same rounds fills those gaps (3.2 GB/s
//! on equal 32 KiB messages against 1.8 for one at a time on this project's AMD EPYC,
//! `examples/sha256_rates.rs`, `docs/PERFORMANCE.md`, steps 115–116). Elsewhere the messages
//! are hashed one after the other by `sha2`. A message is given as the pieces it is made of.

use sha2::{Digest, Sha256};

/// The SHA-256 digest of each message (the concatenation of its pieces) into `out`, in order:
/// two at a time side by side, longest first, the next message starting on whichever side
/// ends first.
/// Digests past the shorter of the two slices are not taken.
pub fn sha256_many(messages: &[&[&[u8]]], out: &mut [[u8; 32]]) {
    #[cfg(target_arch = "x86_64")]
    if shani::available() {
        // SAFETY: the CPU has the features `shani::many` is compiled for (checked just above).
        return unsafe { shani::many(messages, out) };
    }
    for (m, o) in messages.iter().zip(out) {
        *o = one(m);
    }
}

/// SHA-256 of one message's pieces by `sha2`.
fn one(pieces: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in pieces {
        h.update(p);
    }
    h.finalize().into()
}

/// A message's 64-byte blocks, padding included, read across its pieces.
struct Blocks<'a> {
    pieces: &'a [&'a [u8]],
    piece: usize,
    at: usize,
    /// The message's length in bytes.
    len: u64,
    tail: Tail,
}

/// Where a message's padding stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Message bytes are left (or the `0x80` byte is not yet written).
    Data,
    /// Only the block holding the bit length is left.
    Length,
    Done,
}

impl<'a> Blocks<'a> {
    fn new(pieces: &'a [&'a [u8]]) -> Self {
        let len = pieces.iter().map(|p| p.len() as u64).sum();
        Blocks { pieces, piece: 0, at: 0, len, tail: Tail::Data }
    }

    /// The next block: a slice of a piece where 64 bytes lie in one, else gathered into
    /// `buf` (the message's end is padded there).
    fn next<'s>(&mut self, buf: &'s mut [u8; 64]) -> Option<&'s [u8; 64]>
    where
        'a: 's,
    {
        match self.tail {
            Tail::Done => None,
            Tail::Length => {
                *buf = [0; 64];
                buf[56..].copy_from_slice(&self.len.wrapping_mul(8).to_be_bytes());
                self.tail = Tail::Done;
                Some(buf)
            }
            Tail::Data => Some(self.data_block(buf)),
        }
    }

    /// The next block while message bytes are left.
    fn data_block<'s>(&mut self, buf: &'s mut [u8; 64]) -> &'s [u8; 64]
    where
        'a: 's,
    {
        while self.pieces.get(self.piece).is_some_and(|p| self.at == p.len()) {
            (self.piece, self.at) = (self.piece + 1, 0);
        }
        if let Some(block) = self.pieces.get(self.piece).and_then(|p| p[self.at..].first_chunk::<64>()) {
            self.at += 64;
            return block;
        }
        let mut n = 0;
        while let Some(p) = self.pieces.get(self.piece).filter(|_| n < 64) {
            let take = (p.len() - self.at).min(64 - n);
            buf[n..n + take].copy_from_slice(&p[self.at..self.at + take]);
            (n, self.at) = (n + take, self.at + take);
            if self.at == p.len() {
                (self.piece, self.at) = (self.piece + 1, 0);
            }
        }
        if n == 64 {
            return buf;
        }
        buf[n] = 0x80;
        buf[n + 1..].fill(0);
        if n + 1 + 8 <= 64 {
            buf[56..].copy_from_slice(&self.len.wrapping_mul(8).to_be_bytes());
            self.tail = Tail::Done;
        } else {
            self.tail = Tail::Length;
        }
        buf
    }
}

#[cfg(target_arch = "x86_64")]
mod shani {
    use super::Blocks;
    use std::arch::x86_64::*;

    /// Whether this CPU has the SHA extensions and the SSE levels the kernel uses.
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("sha")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("sse4.1")
    }

    /// The round constants.
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
        0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
        0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
        0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
        0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
        0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];

    /// The initial hash value.
    const H0: [u32; 8] =
        [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

    /// A hash state as the round instruction takes it: words A, B, E, F and C, D, G, H.
    #[derive(Clone, Copy)]
    struct State {
        abef: __m128i,
        cdgh: __m128i,
    }

    /// Byte order of `_mm_shuffle_epi8` that swaps each 32-bit word (the message words and
    /// the digest are big-endian).
    #[inline(always)]
    unsafe fn word_swap() -> __m128i {
        _mm_set_epi64x(0x0c0d0e0f08090a0b, 0x0405060700010203)
    }

    #[inline(always)]
    unsafe fn initial() -> State {
        let abcd = _mm_loadu_si128(H0.as_ptr().cast());
        let efgh = _mm_loadu_si128(H0.as_ptr().add(4).cast());
        let cdab = _mm_shuffle_epi32(abcd, 0xB1);
        let hgfe = _mm_shuffle_epi32(efgh, 0x1B);
        State { abef: _mm_alignr_epi8(cdab, hgfe, 8), cdgh: _mm_blend_epi16(hgfe, cdab, 0xF0) }
    }

    /// The digest's 32 bytes.
    #[inline(always)]
    unsafe fn digest(s: State) -> [u8; 32] {
        let feba = _mm_shuffle_epi32(s.abef, 0x1B);
        let dchg = _mm_shuffle_epi32(s.cdgh, 0xB1);
        let abcd = _mm_blend_epi16(feba, dchg, 0xF0);
        let efgh = _mm_alignr_epi8(dchg, feba, 8);
        let mut out = [0u8; 32];
        _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_shuffle_epi8(abcd, word_swap()));
        _mm_storeu_si128(out.as_mut_ptr().add(16).cast(), _mm_shuffle_epi8(efgh, word_swap()));
        out
    }

    /// One block of each of `N` states, their rounds interleaved. Indexed loops: written with
    /// iterators, the compiler kept one state on the stack (1.6 against 2.4 GB/s on Gym lines).
    #[inline(always)]
    #[allow(clippy::needless_range_loop)]
    unsafe fn compress<const N: usize>(st: &mut [State; N], blocks: [&[u8; 64]; N]) {
        let saved = *st;
        let mut w = [[_mm_setzero_si128(); 4]; N];
        for s in 0..N {
            for j in 0..4 {
                w[s][j] = _mm_shuffle_epi8(_mm_loadu_si128(blocks[s].as_ptr().add(16 * j).cast()), word_swap());
            }
        }
        // Group `i` holds rounds 4i..4i+4; `w[i % 4]` is replaced by the schedule words
        // W[4i..4i+4] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16] from the four groups before.
        macro_rules! group {
            ($i:literal) => {
                for s in 0..N {
                    let w = &mut w[s];
                    if $i >= 4 {
                        let sum = _mm_add_epi32(
                            _mm_sha256msg1_epu32(w[$i % 4], w[($i + 1) % 4]),
                            _mm_alignr_epi8(w[($i + 3) % 4], w[($i + 2) % 4], 4),
                        );
                        w[$i % 4] = _mm_sha256msg2_epu32(sum, w[($i + 3) % 4]);
                    }
                    let wk = _mm_add_epi32(w[$i % 4], _mm_loadu_si128(K.as_ptr().add(4 * $i).cast()));
                    st[s].cdgh = _mm_sha256rnds2_epu32(st[s].cdgh, st[s].abef, wk);
                    st[s].abef = _mm_sha256rnds2_epu32(st[s].abef, st[s].cdgh, _mm_shuffle_epi32(wk, 0x0E));
                }
            };
        }
        group!(0);
        group!(1);
        group!(2);
        group!(3);
        group!(4);
        group!(5);
        group!(6);
        group!(7);
        group!(8);
        group!(9);
        group!(10);
        group!(11);
        group!(12);
        group!(13);
        group!(14);
        group!(15);
        for s in 0..N {
            st[s].abef = _mm_add_epi32(st[s].abef, saved[s].abef);
            st[s].cdgh = _mm_add_epi32(st[s].cdgh, saved[s].cdgh);
        }
    }

    /// A message being hashed on one side.
    struct Lane<'a> {
        index: usize,
        blocks: Blocks<'a>,
        state: State,
        buf: [u8; 64],
    }

    /// The messages' digests, two lanes compressed side by side while both have a message.
    ///
    /// # Safety
    /// The CPU must have the SHA extensions, SSSE3 and SSE4.1 (`available`).
    #[target_feature(enable = "sha,ssse3,sse4.1")]
    pub(super) unsafe fn many(messages: &[&[&[u8]]], out: &mut [[u8; 32]]) {
        let count = messages.len().min(out.len());
        let mut queue = longest_first(&messages[..count]).into_iter();
        let mut start = || {
            let index = queue.next()?;
            Some(Lane { index, blocks: Blocks::new(messages[index]), state: initial(), buf: [0; 64] })
        };
        let mut lanes = [start(), start()];
        loop {
            // The blocks of two lanes of which one (or both) just ran out of blocks.
            let uneven = match &mut lanes {
                [Some(a), Some(b)] => match (a.blocks.next(&mut a.buf), b.blocks.next(&mut b.buf)) {
                    (Some(x), Some(y)) => {
                        let mut st = [a.state, b.state];
                        compress::<2>(&mut st, [x, y]);
                        [a.state, b.state] = st;
                        continue;
                    }
                    (x, y) => [x.copied(), y.copied()],
                },
                [Some(l), None] | [None, Some(l)] => {
                    while let Some(block) = l.blocks.next(&mut l.buf) {
                        compress_one(&mut l.state, block);
                    }
                    out[l.index] = digest(l.state);
                    lanes = [start(), None];
                    continue;
                }
                [None, None] => return,
            };
            for (lane, block) in lanes.iter_mut().zip(uneven) {
                let Some(l) = lane else { continue };
                match block {
                    Some(block) => compress_one(&mut l.state, &block),
                    None => {
                        out[l.index] = digest(l.state);
                        *lane = start();
                    }
                }
            }
        }
    }

    /// The indexes of `messages`, longest first: the last message then runs alone for as
    /// short a time as it can.
    fn longest_first(messages: &[&[&[u8]]]) -> Vec<usize> {
        let len = |i: usize| messages[i].iter().map(|p| p.len()).sum::<usize>();
        let mut order: Vec<usize> = (0..messages.len()).collect();
        order.sort_by_cached_key(|&i| std::cmp::Reverse(len(i)));
        order
    }

    /// One block of one state.
    #[inline(always)]
    unsafe fn compress_one(state: &mut State, block: &[u8; 64]) {
        let mut one = [*state];
        compress::<1>(&mut one, [block]);
        *state = one[0];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both digests of two messages.
    fn pair(a: &[&[u8]], b: &[&[u8]]) -> [[u8; 32]; 2] {
        let mut out = [[0; 32]; 2];
        sha256_many(&[a, b], &mut out);
        out
    }

    /// Every message length around the padding's edges, split into pieces at every kind
    /// of place, against `sha2` on the joined bytes.
    #[test]
    fn pairs_match_sha2_at_every_padding_edge() {
        let data: Vec<u8> = (0..2000u32).map(|i| (i.wrapping_mul(131) % 251) as u8).collect();
        let lengths = (0..=200).chain([255, 256, 257, 511, 1000, 1999]);
        let others = [0usize, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 640, 1500];
        for a in lengths {
            for &b in &others {
                let (ma, mb) = (&data[..a], &data[3..3 + b]);
                let want = [one(&[ma]), one(&[mb])];
                assert_eq!(pair(&[ma], &[mb]), want, "lengths {a} and {b}");
                assert_eq!(pair(&[mb], &[ma]), [want[1], want[0]], "lengths {b} and {a}");
                let (a1, a2) = ma.split_at(a / 3);
                let (b1, b2) = mb.split_at(b.min(70));
                let pieces_a: [&[u8]; 4] = [a1, &[], a2, &[]];
                let pieces_b: [&[u8]; 3] = [&[], b1, b2];
                assert_eq!(pair(&pieces_a, &pieces_b), want, "pieces of {a} and {b}");
            }
        }
    }

    /// Many messages of mixed lengths, each lane taking the next message as its own ends,
    /// against `sha2`; an `out` shorter than the messages gets the first digests.
    #[test]
    fn many_matches_sha2_as_lanes_refill() {
        let data: Vec<u8> = (0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let lengths = [0usize, 5000, 64, 1, 65_000, 55, 56, 119, 7000, 128, 0, 300, 64_000, 3];
        let pieces: Vec<[&[u8]; 2]> = lengths.iter().map(|&n| data[..n].split_at(n / 2)).map(|(a, b)| [a, b]).collect();
        let messages: Vec<&[&[u8]]> = pieces.iter().map(|p| &p[..]).collect();
        let want: Vec<[u8; 32]> = lengths.iter().map(|&n| one(&[&data[..n]])).collect();
        for count in 0..=messages.len() {
            let mut out = vec![[0u8; 32]; messages.len()];
            sha256_many(&messages[..count], &mut out);
            assert_eq!(out[..count], want[..count], "{count} messages");
        }
        let mut short = [[0u8; 32]; 3];
        sha256_many(&messages, &mut short);
        assert_eq!(short[..], want[..3]);
    }

    /// Known digests (FIPS 180-2 examples) through the pair.
    #[test]
    fn known_digests() {
        let abc = pair(&[b"abc"], &[b""]);
        assert_eq!(crate::canonical::hex(&abc[0]), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(crate::canonical::hex(&abc[1]), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
