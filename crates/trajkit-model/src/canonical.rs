//! Canonical JSON and digests.
//!
//! Canonical form: keys sorted (record structs declare fields in sorted order and all
//! maps are `BTreeMap`), no insignificant whitespace, numbers as serde_json prints them
//! (integers verbatim, floats in shortest round-trip form).

use sha2::{Digest, Sha256};

use crate::compact;
use crate::record::{Provenance, Trajectory};

/// Lowercase hex of a byte slice.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Writes the canonical JSON of a record into `out` (no trailing newline).
pub fn write_canonical(record: &Trajectory, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    compact::to_writer(out, record)
}

/// Canonical JSON of a record as a string.
pub fn to_canonical_string(record: &Trajectory) -> Result<String, serde_json::Error> {
    compact::to_string(record)
}

/// Identity fields of nested subagents, blanked while their parent's content is hashed.
struct Identity {
    id: String,
    provenance: Provenance,
    digest: String,
    children: Vec<Identity>,
}

fn take_identity(t: &mut Trajectory) -> Identity {
    Identity {
        id: std::mem::take(&mut t.id),
        provenance: std::mem::take(&mut t.provenance),
        digest: std::mem::take(&mut t.content_digest),
        children: t.subagents.iter_mut().map(|s| take_identity(&mut s.trajectory)).collect(),
    }
}

fn restore_identity(t: &mut Trajectory, saved: Identity) {
    t.id = saved.id;
    t.provenance = saved.provenance;
    t.content_digest = saved.digest;
    for (s, child) in t.subagents.iter_mut().zip(saved.children) {
        restore_identity(&mut s.trajectory, child);
    }
}

/// Byte ranges of the identity fields (`,"key":value`) in a written record, and where
/// the digest's 64 hex digits go.
struct Layout {
    identity: [std::ops::Range<usize>; 3],
    digest_at: usize,
}

const DIGEST_PLACEHOLDER: &[u8; 64] = &[b'0'; 64];

/// Writes the canonical JSON of `t` (digest as a placeholder) field by field, exactly as
/// serde would, remembering where the identity fields are.
fn write_fields(t: &Trajectory, out: &mut Vec<u8>) -> Result<Layout, serde_json::Error> {
    fn field<T: serde::Serialize>(
        out: &mut Vec<u8>,
        key: &str,
        v: &T,
    ) -> Result<std::ops::Range<usize>, serde_json::Error> {
        let start = out.len();
        out.push(b',');
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        compact::to_writer(out, v)?;
        Ok(start..out.len())
    }
    out.extend_from_slice(b"{\"agent\":");
    compact::to_writer(out, &t.agent)?;
    let digest_start = out.len();
    out.extend_from_slice(b",\"content_digest\":\"");
    let digest_at = out.len();
    out.extend_from_slice(DIGEST_PLACEHOLDER);
    out.push(b'"');
    let digest_range = digest_start..out.len();
    if !t.extra.is_empty() {
        field(out, "extra", &t.extra)?;
    }
    if !t.gaps.is_empty() {
        field(out, "gaps", &t.gaps)?;
    }
    let id = field(out, "id", &t.id)?;
    if let Some(m) = &t.metrics {
        field(out, "metrics", m)?;
    }
    field(out, "outcome", &t.outcome)?;
    let provenance = field(out, "provenance", &t.provenance)?;
    field(out, "schema_version", &t.schema_version)?;
    if let Some(s) = &t.session_id {
        field(out, "session_id", s)?;
    }
    if let Some(s) = &t.state {
        field(out, "state", s)?;
    }
    field(out, "steps", &t.steps)?;
    if !t.subagents.is_empty() {
        field(out, "subagents", &t.subagents)?;
    }
    field(out, "task", &t.task)?;
    if let Some(tools) = &t.tools {
        field(out, "tools", tools)?;
    }
    out.push(b'}');
    Ok(Layout { identity: [digest_range, id, provenance], digest_at })
}

/// SHA-256 of `bytes[start..]` without the identity ranges.
fn hash_without(bytes: &[u8], start: usize, layout: &Layout) -> String {
    let mut h = Sha256::new();
    for piece in pieces_without(bytes, start, layout) {
        h.update(piece);
    }
    hex(&h.finalize())
}

/// The pieces of `bytes[start..]` around the identity ranges.
fn pieces_without<'a>(bytes: &'a [u8], start: usize, layout: &Layout) -> [&'a [u8]; 4] {
    let [a, b, c] = &layout.identity;
    [&bytes[start..a.start], &bytes[a.end..b.start], &bytes[b.end..c.start], &bytes[c.end..]]
}

/// Seals nested subagents and returns the parent's digest, hashing children with their
/// identity blanked so that where a subagent was read from never changes the digest.
fn digest_with_children(t: &mut Trajectory, scratch: &mut Vec<u8>) -> Result<String, serde_json::Error> {
    for s in t.subagents.iter_mut() {
        seal(&mut s.trajectory)?;
    }
    let saved: Vec<Identity> = t.subagents.iter_mut().map(|s| take_identity(&mut s.trajectory)).collect();
    scratch.clear();
    let result = write_fields(t, scratch);
    for (s, child) in t.subagents.iter_mut().zip(saved) {
        restore_identity(&mut s.trajectory, child);
    }
    let layout = result?;
    Ok(hash_without(scratch, 0, &layout))
}

/// SHA-256 of the canonical JSON of the record without its `content_digest`, `id` and
/// `provenance` keys (nested subagents hashed with those blanked): equal content, equal digest.
pub fn content_digest(t: &mut Trajectory) -> Result<String, serde_json::Error> {
    let mut scratch = Vec::new();
    digest_with_children(t, &mut scratch)
}

/// Fills `content_digest` on the record and all of its subagents.
pub fn seal(t: &mut Trajectory) -> Result<(), serde_json::Error> {
    t.content_digest = content_digest(t)?;
    Ok(())
}

/// Seals the record and appends its canonical JSON to `out` in one serialization pass
/// (the hot path of `convert`): the digest is hashed from the written bytes.
pub fn write_sealed(t: &mut Trajectory, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    if !t.subagents.is_empty() {
        seal(t)?;
        return write_canonical(t, out);
    }
    let start = out.len();
    let layout = write_fields(t, out)?;
    let digest = hash_without(out, start, &layout);
    out[layout.digest_at..layout.digest_at + 64].copy_from_slice(digest.as_bytes());
    t.content_digest = digest;
    Ok(())
}

/// Where a record `write_unsealed` wrote awaits its content digest.
pub struct Unsealed {
    /// The record's text in the buffer (a newline may follow).
    text: std::ops::Range<usize>,
    layout: Layout,
}

/// `write_sealed` without the hashing: appends the canonical JSON of `t` with its content
/// digest left blank, for `seal_written` to hash side by side with other records' (`convert`,
/// whose records leave as text only). A record with subagents, whose digest hashes its
/// children apart, is sealed and written whole: `None`. `t.content_digest` is not set.
pub fn write_unsealed(t: &mut Trajectory, out: &mut Vec<u8>) -> Result<Option<Unsealed>, serde_json::Error> {
    if !t.subagents.is_empty() {
        write_sealed(t, out)?;
        return Ok(None);
    }
    let start = out.len();
    let layout = write_fields(t, out)?;
    Ok(Some(Unsealed { text: start..out.len(), layout }))
}

/// Writes the content digests of records `write_unsealed` wrote into their text, hashing
/// them side by side (`sha256_many`); each gets the digest `write_sealed` would have written.
pub fn seal_written(records: &mut [(&mut Vec<u8>, Unsealed)]) {
    seal_written_with(records, &[]);
}

/// `seal_written`, with the `others` messages hashed in the same lanes (`build` adds the
/// records' interactions): the records' content digests in order, then the others'.
pub fn seal_written_with(records: &mut [(&mut Vec<u8>, Unsealed)], others: &[&[u8]]) -> Vec<[u8; 32]> {
    let mut digests = vec![[0u8; 32]; records.len() + others.len()];
    let pieces: Vec<[&[u8]; 4]> =
        records.iter().map(|(b, u)| pieces_without(&b[..u.text.end], u.text.start, &u.layout)).collect();
    let messages: Vec<&[&[u8]]> =
        pieces.iter().map(|p| &p[..]).chain(others.iter().map(std::slice::from_ref)).collect();
    crate::sha256_many::sha256_many(&messages, &mut digests);
    for ((bytes, u), digest) in records.iter_mut().zip(&digests) {
        bytes[u.layout.digest_at..u.layout.digest_at + 64].copy_from_slice(hex(digest).as_bytes());
    }
    digests
}

/// `write_sealed`, and the record's interaction digest (`interaction_digest`) hashed side by
/// side with its content digest (`sha256_many`): `build` takes both of every record. The
/// interaction digest is `None` where its JSON cannot be written (the content digest is then
/// hashed alone, and the record is written as `write_sealed` writes it).
pub fn write_sealed_with_interaction(
    t: &mut Trajectory,
    out: &mut Vec<u8>,
) -> Result<Option<String>, serde_json::Error> {
    if !t.subagents.is_empty() {
        write_sealed(t, out)?;
        return Ok(crate::interaction::interaction_digest(t).ok());
    }
    let start = out.len();
    let layout = write_fields(t, out)?;
    let pieces = pieces_without(out, start, &layout);
    let mut digests = [[0; 32]; 2];
    let both = crate::interaction::with_interaction(t, |interaction| {
        crate::sha256_many::sha256_many(&[&pieces, &[interaction]], &mut digests);
    });
    if both.is_err() {
        crate::sha256_many::sha256_many(&[&pieces], &mut digests);
    }
    let content = hex(&digests[0]);
    out[layout.digest_at..layout.digest_at + 64].copy_from_slice(content.as_bytes());
    t.content_digest = content;
    Ok(both.ok().map(|()| hex(&digests[1])))
}

/// Collapses runs of whitespace to one space and trims: the normal form of an
/// instruction before it is hashed into a task key. Whitespace is what
/// `str::split_whitespace` splits at (Unicode White_Space); an ASCII text, the usual case,
/// is copied 16 bytes at a time where its whitespace is single spaces between words, byte
/// by byte elsewhere (decoding every char was 2 % of reading ATIF, and splitting it into
/// words 3 % of ATIF `validate`'s instructions).
pub fn normalize_instruction(text: &str) -> String {
    if !text.is_ascii() {
        return text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut gap = false;
    let mut chunks = bytes.chunks_exact(16);
    for chunk in chunks.by_ref() {
        let Ok(block) = <&[u8; 16]>::try_from(chunk) else { continue };
        let (ws, spaces) = crate::byte_masks::text_whitespace(block);
        // Copied whole: no gap pending, only single spaces, none at the chunk's end (more
        // whitespace or the text's end may follow) and none at its start before any word.
        let single_spaces = ws == spaces && ws & (ws >> 1) == 0 && ws & 0x8000 == 0;
        if !gap && single_spaces && (ws & 1 == 0 || !out.is_empty()) {
            out.extend_from_slice(block);
        } else {
            collapse(&mut out, &mut gap, chunk);
        }
    }
    collapse(&mut out, &mut gap, chunks.remainder());
    // ASCII bytes, so always UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// Appends `bytes` to `out` with each run of whitespace turned into one space before the
/// next word (`gap`: a run is pending); leading whitespace is dropped.
fn collapse(out: &mut Vec<u8>, gap: &mut bool, bytes: &[u8]) {
    for &b in bytes {
        // The ASCII White_Space characters: tab, line feed, vertical tab, form feed, CR, space.
        if matches!(b, b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r' | b' ') {
            *gap = !out.is_empty();
        } else {
            if std::mem::take(gap) {
                out.push(b' ');
            }
            out.push(b);
        }
    }
}

/// Task key from an instruction and environment: `h:` + 16 hex digits of
/// SHA-256(environment, NUL, normalized instruction).
pub fn instruction_task_key(instruction: &str, environment: Option<&str>) -> String {
    let normalized = normalize_instruction(instruction);
    let mut h = Sha256::new();
    h.update(environment.unwrap_or("").as_bytes());
    h.update([0u8]);
    h.update(normalized.as_bytes());
    let digest = hex(&h.finalize());
    format!("h:{}", &digest[..16])
}
