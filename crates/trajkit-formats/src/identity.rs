//! Per-file identity of accepted records: byte-identical repeats (`duplicate_records`) and
//! rollouts recorded twice with different content (`conflicting_rollout`). A record is
//! known by the SHA-256 of its bytes, or, where nothing else reads that digest and the
//! bytes lie in a plain file, by a fast hash and its place in the file: equal hashes are
//! then settled by reading both records again and comparing their bytes.

use foldhash::{HashMap, HashSet};
use std::collections::hash_map::Entry;
use std::fs::File;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use twox_hash::XxHash3_64;

/// Different records that may share one hash and length before their file is compared by
/// SHA-256 instead (a file made to collide then costs hashing, never a growing number of
/// reads per record).
const SHARED_HASHES: usize = 8;

/// Bytes read at a time when records are read again (memory stays bounded whatever their
/// size).
const CHUNK: usize = 64 << 10;

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
    /// (`None` when it could not be read again).
    Conflict(Option<[u8; 32]>),
}

/// The identities of a file's accepted records, in the order they were accepted.
#[derive(Default)]
pub(crate) struct FileIdentities {
    shas: HashSet<[u8; 32]>,
    /// Located records by (hash, length): the offset of the first with that content.
    located: HashMap<(u64, u64), u64>,
    /// Further located records whose hash and length equal another's, content not (fewer
    /// than `SHARED_HASHES` per hash).
    collided: HashMap<(u64, u64), Vec<u64>>,
    rollouts: HashMap<String, Identity>,
    /// The file as the producer opened it: located records are read again from it (never
    /// from its path, which may name another file by then).
    file: Option<Arc<File>>,
}

impl FileIdentities {
    /// The file that located records are read again from.
    pub(crate) fn set_file(&mut self, file: Arc<File>) {
        self.file = Some(file);
    }

    /// Checks the record `id` (with its rollout key) against the records of the file
    /// accepted before it, and remembers it when it is accepted (`Seen::New`).
    pub(crate) fn check(&mut self, id: Identity, rollout: Option<&str>) -> Seen {
        let id = match id {
            Identity::Only => return Seen::New,
            // A record known by its hash after located ones (no producer makes such a file
            // today): the file is compared by SHA-256 from then on.
            Identity::Sha(_) if !self.located.is_empty() => {
                self.all_to_sha();
                id
            }
            // Once the file is compared by SHA-256 (see `remember`), so is every record.
            Identity::At { .. } if !self.shas.is_empty() => self.sha_of(id).map_or(id, Identity::Sha),
            _ => id,
        };
        if self.is_repeat(id) {
            return Seen::Repeat;
        }
        if let Some(key) = rollout {
            if let Some(first) = self.rollouts.get(key).copied() {
                return Seen::Conflict(self.sha_of(first));
            }
            self.rollouts.insert(key.to_string(), id);
        }
        self.remember(id);
        Seen::New
    }

    fn is_repeat(&self, id: Identity) -> bool {
        match id {
            Identity::Sha(sha) => self.shas.contains(&sha),
            Identity::At { hash, offset, len } => {
                let first = self.located.get(&(hash, len));
                let others = self.collided.get(&(hash, len)).into_iter().flatten();
                first.into_iter().chain(others).any(|&at| self.same_bytes(at, offset, len))
            }
            Identity::Only => false,
        }
    }

    fn remember(&mut self, id: Identity) {
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
                if shared.len() + 1 < SHARED_HASHES {
                    shared.push(offset);
                    return;
                }
                self.all_to_sha();
                if let Some(sha) = self.sha_of(id) {
                    self.shas.insert(sha);
                }
            }
            Identity::Only => {}
        }
    }

    /// The SHA-256 of an accepted record.
    fn sha_of(&self, id: Identity) -> Option<[u8; 32]> {
        match id {
            Identity::Sha(sha) => Some(sha),
            Identity::At { offset, len, .. } => {
                let mut hasher = Sha256::new();
                self.read_chunks(offset, len, |chunk| hasher.update(chunk))?;
                Some(hasher.finalize().into())
            }
            Identity::Only => None,
        }
    }

    /// Replaces every located identity by the SHA-256 of the bytes it names.
    fn all_to_sha(&mut self) {
        let located: Vec<(u64, u64)> = self
            .located
            .drain()
            .map(|((_, len), at)| (at, len))
            .chain(self.collided.drain().flat_map(|((_, len), ats)| ats.into_iter().map(move |at| (at, len))))
            .collect();
        for (offset, len) in located {
            if let Some(sha) = self.sha_of(Identity::At { hash: 0, offset, len }) {
                self.shas.insert(sha);
            }
        }
        let rollouts: Vec<(String, Identity)> = self.rollouts.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (key, id) in rollouts {
            if let (Identity::At { .. }, Some(sha)) = (id, self.sha_of(id)) {
                self.rollouts.insert(key, Identity::Sha(sha));
            }
        }
    }

    /// True when the `len` bytes at offsets `a` and `b` of the file are the same (false when
    /// they cannot be read).
    fn same_bytes(&self, a: u64, b: u64, len: u64) -> bool {
        let Some(file) = self.file.as_deref() else { return false };
        let (mut x, mut y) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(CHUNK as u64) as usize;
            let read = read_at(file, &mut x[..n], a + done).and_then(|_| read_at(file, &mut y[..n], b + done));
            if read.is_err() || x[..n] != y[..n] {
                return false;
            }
            done += n as u64;
        }
        true
    }

    /// Hands the `len` bytes at `offset` of the file to `f`, a chunk at a time (`None`
    /// when they cannot be read: the file was truncated while it was read).
    fn read_chunks(&self, offset: u64, len: u64, mut f: impl FnMut(&[u8])) -> Option<()> {
        let file = self.file.as_deref()?;
        let mut buf = vec![0u8; CHUNK];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(CHUNK as u64) as usize;
            read_at(file, &mut buf[..n], offset + done).ok()?;
            f(&buf[..n]);
            done += n as u64;
        }
        Some(())
    }
}

/// Fills `buf` from `offset` of `file` without moving its position (the producer may still
/// be reading it).
#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Elsewhere no record is known by its place (see `Producer::locate`).
#[cfg(not(unix))]
fn read_at(_file: &File, _buf: &mut [u8], _offset: u64) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "positioned reads"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `lines` (each followed by a newline), opened, and each line's offset.
    fn file_of(lines: &[&[u8]]) -> (tempfile::TempDir, std::path::PathBuf, Arc<File>, Vec<u64>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f.jsonl");
        let (mut text, mut offsets) = (Vec::new(), Vec::new());
        for l in lines {
            offsets.push(text.len() as u64);
            text.extend_from_slice(l);
            text.push(b'\n');
        }
        std::fs::write(&path, &text).expect("write");
        let handle = Arc::new(File::open(&path).expect("open"));
        (dir, path, handle, offsets)
    }

    /// Synthetic: repeats and rollout conflicts found from located records equal those
    /// found from SHA-256, including a file that switches from one to the other and two
    /// different records forced to share a hash.
    #[test]
    fn located_identities_decide_as_sha_does() {
        let lines: [&[u8]; 6] = [b"{\"a\":1}", b"{\"b\":2}", b"{\"a\":1}", b"{\"c\":3}", b"{\"b\":2}", b"{\"d\":4}"];
        let keys = [Some("k1"), None, Some("k1"), Some("k1"), None, Some("k2")];
        let (_dir, _, handle, offsets) = file_of(&lines);
        let run = |kind: &dyn Fn(usize) -> Identity| {
            let mut ids = FileIdentities::default();
            ids.set_file(Arc::clone(&handle));
            (0..lines.len()).map(|i| ids.check(kind(i), keys[i])).collect::<Vec<_>>()
        };
        let by_sha = run(&|i| Identity::sha(lines[i]));
        let first_sha: [u8; 32] = Sha256::digest(lines[0]).into();
        let want = [Seen::New, Seen::New, Seen::Repeat, Seen::Conflict(Some(first_sha)), Seen::Repeat, Seen::New];
        assert_eq!(by_sha, want);
        assert_eq!(run(&|i| Identity::at(lines[i], offsets[i])), want);
        // Located for the first three records, hashed after.
        assert_eq!(run(&|i| if i < 3 { Identity::at(lines[i], offsets[i]) } else { Identity::sha(lines[i]) }), want);
        // Every record given the same hash: only the bytes tell them apart.
        let same = |i: usize| Identity::At { hash: 7, offset: offsets[i], len: lines[i].len() as u64 };
        assert_eq!(run(&same), want);
    }

    /// Synthetic: records are read again from the file as it was opened, not from its path
    /// (which a writer may have pointed at a new file by then), and a record longer than a
    /// read chunk is compared and hashed whole.
    #[test]
    fn records_are_read_again_from_the_file_opened() {
        let long = format!("{{\"x\":\"{}\"}}", "y".repeat(CHUNK * 2 + 17));
        let (_dir, path, handle, offsets) = file_of(&[long.as_bytes(), long.as_bytes()]);
        let mut ids = FileIdentities::default();
        ids.set_file(handle);
        // The path now names another file (a rotation or an atomic replace).
        std::fs::remove_file(&path).expect("remove");
        std::fs::write(&path, "{}\n").expect("write");
        assert_eq!(ids.check(Identity::at(long.as_bytes(), offsets[0]), Some("k")), Seen::New);
        assert_eq!(ids.check(Identity::at(long.as_bytes(), offsets[1]), Some("k")), Seen::Repeat);
        let sha: [u8; 32] = Sha256::digest(long.as_bytes()).into();
        assert_eq!(ids.sha_of(Identity::at(long.as_bytes(), offsets[0])), Some(sha));
    }

    /// Synthetic: more different records sharing one hash than `SHARED_HASHES` turn the
    /// file over to SHA-256, and repeats of any of them are still found.
    #[test]
    fn a_file_made_to_collide_is_compared_by_sha() {
        let distinct: Vec<String> = (0..SHARED_HASHES + 5).map(|i| format!("{{\"n\":{i:03}}}")).collect();
        let lines: Vec<&[u8]> = distinct.iter().chain(distinct.iter().rev()).map(|l| l.as_bytes()).collect();
        let (_dir, _, handle, offsets) = file_of(&lines);
        let mut idents = FileIdentities::default();
        idents.set_file(handle);
        let seen: Vec<Seen> = lines
            .iter()
            .zip(&offsets)
            .map(|(l, &offset)| idents.check(Identity::At { hash: 1, offset, len: l.len() as u64 }, None))
            .collect();
        let n = distinct.len();
        assert!(seen[..n].iter().all(|s| *s == Seen::New), "{seen:?}");
        assert!(seen[n..].iter().all(|s| *s == Seen::Repeat), "{seen:?}");
        assert!(idents.located.is_empty() && idents.shas.len() == n);
    }
}
