//! Canonical JSON and digests.
//!
//! Canonical form: keys sorted (record structs declare fields in sorted order and all
//! maps are `BTreeMap`), no insignificant whitespace, numbers as serde_json prints them
//! (integers verbatim, floats in shortest round-trip form).

use sha2::{Digest, Sha256};

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
    serde_json::to_writer(out, record)
}

/// Canonical JSON of a record as a string.
pub fn to_canonical_string(record: &Trajectory) -> Result<String, serde_json::Error> {
    serde_json::to_string(record)
}

/// Identity fields taken out of a record while its content is hashed.
struct Identity {
    id: String,
    provenance: Provenance,
    children: Vec<Identity>,
}

fn take_identity(t: &mut Trajectory) -> Identity {
    t.content_digest.clear();
    Identity {
        id: std::mem::take(&mut t.id),
        provenance: std::mem::take(&mut t.provenance),
        children: t.subagents.iter_mut().map(|s| take_identity(&mut s.trajectory)).collect(),
    }
}

fn restore_identity(t: &mut Trajectory, saved: Identity) {
    t.id = saved.id;
    t.provenance = saved.provenance;
    for (s, child) in t.subagents.iter_mut().zip(saved.children) {
        restore_identity(&mut s.trajectory, child);
    }
}

/// SHA-256 of the canonical JSON of the record without `id`, `provenance` and
/// `content_digest` (recursively): two records with the same content share it.
pub fn content_digest(t: &mut Trajectory) -> Result<String, serde_json::Error> {
    let mut child_digests = Vec::with_capacity(t.subagents.len());
    for s in t.subagents.iter_mut() {
        child_digests.push(content_digest(&mut s.trajectory)?);
    }
    let saved = take_identity(t);
    let mut hasher = HashWriter(Sha256::new());
    let result = serde_json::to_writer(&mut hasher, &*t);
    restore_identity(t, saved);
    for (s, d) in t.subagents.iter_mut().zip(child_digests) {
        s.trajectory.content_digest = d;
    }
    result?;
    Ok(hex(&hasher.0.finalize()))
}

/// Fills `content_digest` on the record and all of its subagents.
pub fn seal(t: &mut Trajectory) -> Result<(), serde_json::Error> {
    t.content_digest = content_digest(t)?;
    Ok(())
}

struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Collapses runs of whitespace to one space and trims: the normal form of an
/// instruction before it is hashed into a task key.
pub fn normalize_instruction(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Task key from an instruction and environment: `h:` + 16 hex digits of
/// SHA-256(environment, NUL, normalized instruction).
pub fn instruction_task_key(instruction: &str, environment: Option<&str>) -> String {
    let mut h = Sha256::new();
    h.update(environment.unwrap_or("").as_bytes());
    h.update([0u8]);
    h.update(normalize_instruction(instruction).as_bytes());
    let digest = hex(&h.finalize());
    format!("h:{}", &digest[..16])
}
