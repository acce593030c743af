//! The shards' manifest entries, hashed on a thread of their own from the end of the merge:
//! the shards are final then, and finalize's SQL that follows keeps one core busy while
//! the other has nothing to do; the manifest stage, which hashed them after everything
//! else, takes these entries (`manifest::create_with`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use trajkit_verify::manifest::{hash_file, FileEntry};

/// The hashing under way; dropped unfinished (a failed or cancelled build), it stops after
/// the file it is on and is waited for, so nothing reads the staging directory after.
pub(crate) struct ShardDigests {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<FileEntry>>>,
}

impl ShardDigests {
    /// Starts hashing every file of `staging/canonical/`.
    pub(crate) fn start(staging: &Path) -> ShardDigests {
        let stop = Arc::new(AtomicBool::new(false));
        let (root, halt) = (staging.to_path_buf(), Arc::clone(&stop));
        let spawned = std::thread::Builder::new().name("shard-digests".into()).spawn(move || hash_all(&root, &halt));
        ShardDigests { stop, handle: spawned.ok() }
    }

    /// The entries hashed; none where anything failed (the manifest then hashes those
    /// files itself).
    pub(crate) fn finish(mut self) -> Vec<FileEntry> {
        self.handle.take().and_then(|h| h.join().ok()).unwrap_or_default()
    }
}

impl Drop for ShardDigests {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// Every shard's entry, or none if one cannot be read or `stop` is raised.
fn hash_all(root: &Path, stop: &AtomicBool) -> Vec<FileEntry> {
    let Ok(dir) = std::fs::read_dir(root.join("canonical")) else { return Vec::new() };
    let mut files: Vec<(String, PathBuf, u64)> = Vec::new();
    for entry in dir {
        let Ok(entry) = entry else { return Vec::new() };
        let (Ok(name), Ok(meta)) = (entry.file_name().into_string(), entry.metadata()) else { return Vec::new() };
        if meta.is_file() {
            files.push((format!("canonical/{name}"), entry.path(), meta.len()));
        }
    }
    let mut out = Vec::with_capacity(files.len());
    for (rel, path, len) in files {
        if stop.load(Ordering::Relaxed) {
            return Vec::new();
        }
        match hash_file(&path, len) {
            Ok((sha256, bytes)) => out.push(FileEntry { bytes, path: rel, sha256 }),
            Err(_) => return Vec::new(),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic (a staging directory's shards are the build's own files): the entries are
    /// the ones the manifest computes for the same files, and a tree without shards gives
    /// none.
    #[test]
    fn the_entries_are_the_manifests() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ShardDigests::start(dir.path()).finish().is_empty());
        std::fs::create_dir(dir.path().join("canonical")).unwrap();
        std::fs::write(dir.path().join("canonical/part-00000.jsonl.zst"), b"zero").unwrap();
        std::fs::write(dir.path().join("canonical/part-00001.jsonl.zst"), vec![7u8; 3 << 20]).unwrap();
        std::fs::write(dir.path().join("index.sqlite"), b"not hashed here").unwrap();
        let mut ours = ShardDigests::start(dir.path()).finish();
        ours.sort_by(|a, b| a.path.cmp(&b.path));
        let manifest = trajkit_verify::manifest::create(dir.path(), &[]).unwrap();
        let shards: Vec<FileEntry> = manifest.files.into_iter().filter(|f| f.path.starts_with("canonical/")).collect();
        assert_eq!(ours, shards);
        assert_eq!(ours.len(), 2);
    }
}
