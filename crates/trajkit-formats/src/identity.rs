//! Per-file identity of accepted records: byte-identical repeats (`duplicate_records`) and
//! rollouts recorded twice with different content (`conflicting_rollout`). A record is
//! known by the SHA-256 of its bytes, or, where nothing else reads that digest and the
//! bytes lie in a plain file, by a fast hash and its place in the file: equal hashes are
//! then settled by reading both records again and comparing their bytes.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use sha2::{Digest, Sha256};
use twox_hash::XxHash3_64;

/// Different records that may share a hash and length before a file is compared by
/// SHA-256 instead.
const SHARED_HASHES: usize = 8;

/// How a record is told apart from the other records of its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Identity {
    /// SHA-256 of its bytes.
    Sha([u8; 32]),
    /// XXH3 of `len` bytes at `offset` of the (plain) file.
    At { hash: u64, offset: u64, len: u64 },
    /// The file's only record: there is nothing to compare it with.
    Only,
}

impl Identity {
    /// The SHA-256 identity of `bytes`.
    pub(crate) fn sha(bytes: &[u8]) -> Self {
        Identity::Sha(Sha256::digest(bytes).into())
    }

    /// The located identity of `bytes`, found at `offset` of their file.
    pub(crate) fn at(bytes: &[u8], offset: u64) -> Self {
        Identity::At { hash: XxHash3_64::oneshot(bytes), offset, len: bytes.len() as u64 }
    }
}

/// What a record is, next to the records of its file accepted before it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    New,
    /// Byte-identical to an accepted record.
    Repeat,
    /// Its rollout key was accepted before with other content: that record's SHA-256
    /// (`None` when it could not be read again: the file changed while it was read).
    Conflict(Option<[u8; 32]>),
}

/// The identities of a file's accepted records, in the order they were accepted.
#[derive(Default)]
pub(crate) struct FileIdentities {
    shas: HashSet<[u8; 32]>,
    /// Located records by (hash, length): the offset of the first with that content.
    located: HashMap<(u64, u64), u64>,
    /// Further located records whose hash and length equal another's, content not: at
    /// most `SHARED_HASHES` per hash, beyond which the file is compared by SHA-256 (a file
    /// made to collide costs hashing, never a quadratic number of reads).
    collided: HashMap<(u64, u64), Vec<u64>>,
    rollouts: HashMap<String, Identity>,
    file: Option<File>,
}

impl FileIdentities {
    /// Checks the record `id` of the file at `path` (with its rollout key) against the
    /// records accepted before it, and remembers it when it is accepted (`Seen::New`).
    pub(crate) fn check(&mut self, path: &Path, id: Identity, rollout: Option<&str>) -> Seen {
        let id = match id {
            Identity::Only => return Seen::New,
            // A file whose records are known both ways (mapped lines, then read ones after
            // a line longer than a window) is compared by SHA-256 from then on.
            Identity::Sha(_) if !self.located.is_empty() => {
                self.all_to_sha(path);
                id
            }
            Identity::At { offset, len, .. } if !self.shas.is_empty() => match self.reread(path, offset, len) {
                Some(bytes) => Identity::sha(&bytes),
                None => id,
            },
            _ => id,
        };
        if self.is_repeat(path, id) {
            return Seen::Repeat;
        }
        if let Some(key) = rollout {
            if let Some(first) = self.rollouts.get(key).copied() {
                return Seen::Conflict(self.sha_of(path, first));
            }
            self.rollouts.insert(key.to_string(), id);
        }
        self.remember(path, id);
        Seen::New
    }

    fn is_repeat(&mut self, path: &Path, id: Identity) -> bool {
        match id {
            Identity::Sha(sha) => self.shas.contains(&sha),
            Identity::At { hash, offset, len } => {
                let earlier: Vec<u64> = self
                    .located
                    .get(&(hash, len))
                    .into_iter()
                    .chain(self.collided.get(&(hash, len)).into_iter().flatten())
                    .copied()
                    .collect();
                if earlier.is_empty() {
                    return false;
                }
                let Some(this) = self.reread(path, offset, len) else { return false };
                earlier.into_iter().any(|at| self.reread(path, at, len).is_some_and(|b| b == this))
            }
            Identity::Only => false,
        }
    }

    fn remember(&mut self, path: &Path, id: Identity) {
        match id {
            Identity::Sha(sha) => {
                self.shas.insert(sha);
            }
            Identity::At { hash, offset, len } => {
                let key = (hash, len);
                if let Entry::Vacant(first) = self.located.entry(key) {
                    first.insert(offset);
                    return;
                }
                let shared = self.collided.entry(key).or_default();
                if shared.len() < SHARED_HASHES {
                    shared.push(offset);
                    return;
                }
                self.all_to_sha(path);
                if let Some(sha) = self.sha_of(path, id) {
                    self.shas.insert(sha);
                }
            }
            Identity::Only => {}
        }
    }

    /// The SHA-256 of an accepted record.
    fn sha_of(&mut self, path: &Path, id: Identity) -> Option<[u8; 32]> {
        match id {
            Identity::Sha(sha) => Some(sha),
            Identity::At { offset, len, .. } => self.reread(path, offset, len).map(|b| Sha256::digest(&b).into()),
            Identity::Only => None,
        }
    }

    /// Replaces every located identity by the SHA-256 of the bytes it names.
    fn all_to_sha(&mut self, path: &Path) {
        let located: Vec<(u64, u64)> = self
            .located
            .drain()
            .map(|((_, len), at)| (at, len))
            .chain(self.collided.drain().flat_map(|((_, len), ats)| ats.into_iter().map(move |at| (at, len))))
            .collect();
        for (at, len) in located {
            if let Some(sha) = self.sha_of(path, Identity::At { hash: 0, offset: at, len }) {
                self.shas.insert(sha);
            }
        }
        let keys: Vec<String> = self.rollouts.keys().cloned().collect();
        for key in keys {
            if let Some(id @ Identity::At { .. }) = self.rollouts.get(&key).copied() {
                if let Some(sha) = self.sha_of(path, id) {
                    self.rollouts.insert(key, Identity::Sha(sha));
                }
            }
        }
    }

    /// The `len` bytes at `offset` of the file, read again (`None` when they cannot be:
    /// the file was truncated or removed while it was read).
    fn reread(&mut self, path: &Path, offset: u64, len: u64) -> Option<Vec<u8>> {
        if self.file.is_none() {
            self.file = File::open(path).ok();
        }
        let file = self.file.as_mut()?;
        file.seek(SeekFrom::Start(offset)).ok()?;
        let mut bytes = vec![0; usize::try_from(len).ok()?];
        file.read_exact(&mut bytes).ok()?;
        Some(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic: repeats and rollout conflicts found from located records equal those
    /// found from SHA-256, including a file that switches from one to the other and two
    /// different records forced to share a hash.
    #[test]
    fn located_identities_decide_as_sha_does() {
        let dir = std::env::temp_dir().join(format!("trajkit-identity-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.jsonl");
        let lines: [&[u8]; 6] = [b"{\"a\":1}", b"{\"b\":2}", b"{\"a\":1}", b"{\"c\":3}", b"{\"b\":2}", b"{\"d\":4}"];
        let keys = [Some("k1"), None, Some("k1"), Some("k1"), None, Some("k2")];
        let mut file = Vec::new();
        let mut offsets = Vec::new();
        for l in lines {
            offsets.push(file.len() as u64);
            file.extend_from_slice(l);
            file.push(b'\n');
        }
        std::fs::write(&path, &file).unwrap();
        let run = |kind: &dyn Fn(usize) -> Identity| {
            let mut ids = FileIdentities::default();
            (0..lines.len()).map(|i| ids.check(&path, kind(i), keys[i])).collect::<Vec<_>>()
        };
        let by_sha = run(&|i| Identity::sha(lines[i]));
        let first_sha: [u8; 32] = Sha256::digest(lines[0]).into();
        let want = [Seen::New, Seen::New, Seen::Repeat, Seen::Conflict(Some(first_sha)), Seen::Repeat, Seen::New];
        assert_eq!(by_sha, want);
        assert_eq!(run(&|i| Identity::at(lines[i], offsets[i])), want);
        // Mapped for the first three records, read (SHA-256) after.
        assert_eq!(run(&|i| if i < 3 { Identity::at(lines[i], offsets[i]) } else { Identity::sha(lines[i]) }), want);
        // Every record given the same hash: only the bytes tell them apart.
        let same = |i: usize| Identity::At { hash: 7, offset: offsets[i], len: lines[i].len() as u64 };
        assert_eq!(run(&same), want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Synthetic: more different records sharing one hash than `SHARED_HASHES` turn the
    /// file over to SHA-256, and repeats of any of them are still found.
    #[test]
    fn a_file_made_to_collide_is_compared_by_sha() {
        let dir = std::env::temp_dir().join(format!("trajkit-collide-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.jsonl");
        let distinct: Vec<String> = (0..SHARED_HASHES + 5).map(|i| format!("{{\"n\":{:03}}}", i)).collect();
        let lines: Vec<&String> = distinct.iter().chain(distinct.iter().rev()).collect();
        let mut file = Vec::new();
        let mut ids = Vec::new();
        for l in &lines {
            ids.push(Identity::At { hash: 1, offset: file.len() as u64, len: l.len() as u64 });
            file.extend_from_slice(l.as_bytes());
            file.push(b'\n');
        }
        std::fs::write(&path, &file).unwrap();
        let mut idents = FileIdentities::default();
        let seen: Vec<Seen> = ids.iter().map(|id| idents.check(&path, *id, None)).collect();
        std::fs::remove_dir_all(&dir).unwrap();
        let n = distinct.len();
        assert!(seen[..n].iter().all(|s| *s == Seen::New), "{seen:?}");
        assert!(seen[n..].iter().all(|s| *s == Seen::Repeat), "{seen:?}");
        assert!(idents.located.is_empty() && idents.shas.len() == n);
    }
}
