//! Publication manifests: every file of a tree with its byte count and SHA-256, and a
//! digest of the manifest itself, so a published tree can be checked file by file and the
//! whole listing cited by one hash. Format: `docs/manifest.md`.
//!
//! Files are hashed in parallel (rayon, one file per task) with streaming reads, so memory
//! stays flat whatever the file sizes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The `format` value of manifests this version writes and reads.
pub const FORMAT: &str = "trajkit.manifest/1";

/// Default file name of a manifest inside the tree it covers.
pub const DEFAULT_NAME: &str = "manifest.json";

/// Largest read buffer per file being hashed.
const READ_BUFFER: usize = 1 << 20;

/// What can go wrong creating, writing or verifying a manifest; each names the path.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{0}: not a directory")]
    NotADirectory(PathBuf),
    #[error("{0}: file name is not UTF-8; a manifest lists UTF-8 paths only")]
    NonUtf8Path(PathBuf),
    #[error(
        "{0}: is a symbolic link or special file; a manifest covers regular files only (exclude it or replace it)"
    )]
    NotRegular(PathBuf),
    #[error("{path}:{line}:{column}: {source}")]
    Json { path: PathBuf, line: usize, column: usize, source: serde_json::Error },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ManifestError + '_ {
    move |source| ManifestError::Io { path: path.to_path_buf(), source }
}

/// One file of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// Size in bytes.
    pub bytes: u64,
    /// Path relative to the tree root, `/`-separated.
    pub path: String,
    /// Lowercase hex SHA-256 of the file's bytes.
    pub sha256: String,
}

/// A manifest as written to `manifest.json`. Fields are declared in sorted order so the
/// serde form is the canonical (sorted-key) form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Relative paths (files or directories) left out when the manifest was created.
    pub excluded: Vec<String>,
    /// Number of entries in `files`.
    pub file_count: u64,
    /// Every covered file, sorted by the bytes of its path.
    pub files: Vec<FileEntry>,
    /// `trajkit.manifest/1`.
    pub format: String,
    /// SHA-256 of the compact sorted-key JSON of this object without this key.
    pub manifest_sha256: String,
    /// Sum of `files[].bytes`.
    pub total_bytes: u64,
}

/// The manifest minus its own digest: the bytes the digest covers.
#[derive(Serialize)]
struct Body<'a> {
    excluded: &'a [String],
    file_count: u64,
    files: &'a [FileEntry],
    format: &'a str,
    total_bytes: u64,
}

impl Manifest {
    /// The digest the manifest should carry: SHA-256 (hex) of its compact JSON with sorted
    /// keys and the `manifest_sha256` key left out.
    pub fn compute_digest(&self) -> String {
        let body = Body {
            excluded: &self.excluded,
            file_count: self.file_count,
            files: &self.files,
            format: &self.format,
            total_bytes: self.total_bytes,
        };
        // Serializing plain strings and integers into memory cannot fail.
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        trajkit_model::sha256_hex(&bytes)
    }

    /// Reads and checks a manifest file (format, entry paths, counts). The digest is not
    /// checked here: `verify` reports a mismatch as a finding.
    pub fn read(path: &Path) -> Result<Manifest, ManifestError> {
        let bytes = std::fs::read(path).map_err(io_err(path))?;
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|source| ManifestError::Json {
            path: path.to_path_buf(),
            line: source.line(),
            column: source.column(),
            source,
        })?;
        m.check(path)?;
        Ok(m)
    }

    fn check(&self, path: &Path) -> Result<(), ManifestError> {
        let invalid = |message: String| ManifestError::Invalid { path: path.to_path_buf(), message };
        if self.format != FORMAT {
            return Err(invalid(format!("$.format: {:?} is not {FORMAT:?}", self.format)));
        }
        for (i, e) in self.files.iter().enumerate() {
            if !is_safe_relative(&e.path) {
                return Err(invalid(format!("$.files[{i}].path: {:?} is not a relative path inside the tree", e.path)));
            }
            if e.sha256.len() != 64 || !e.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(format!("$.files[{i}].sha256: not 64 hex digits")));
            }
            if i > 0 && self.files[i - 1].path >= e.path {
                return Err(invalid(format!("$.files[{i}].path: {:?} is out of order or repeated", e.path)));
            }
        }
        if self.file_count != self.files.len() as u64 {
            return Err(invalid(format!("$.file_count: {} but {} files listed", self.file_count, self.files.len())));
        }
        Ok(())
    }
}

/// True for a non-empty `/`-separated path with no empty, `.` or `..` component and no
/// leading `/` or backslash: a path that cannot leave the tree.
fn is_safe_relative(p: &str) -> bool {
    !p.is_empty()
        && !p.contains('\\')
        && !p.contains('\0')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
        && Path::new(p).components().all(|c| matches!(c, Component::Normal(_)))
}

/// Normalizes an exclusion given by a user (`./a/b/` → `a/b`).
fn normalize_exclusion(p: &str) -> String {
    p.trim_start_matches("./").trim_end_matches('/').to_string()
}

/// True when `rel` is an excluded path or lies below an excluded directory.
fn is_excluded(rel: &str, excluded: &[String]) -> bool {
    excluded
        .iter()
        .any(|e| rel == e || (rel.len() > e.len() && rel.starts_with(e.as_str()) && rel.as_bytes()[e.len()] == b'/'))
}

/// A file found under the root: relative path and size.
#[derive(Debug, Clone)]
struct Found {
    rel: String,
    bytes: u64,
}

/// What a walk of the tree found: regular files, and other entries (symlinks, sockets).
#[derive(Default)]
struct Walk {
    files: Vec<Found>,
    special: Vec<String>,
}

/// Lists the tree below `root` (not following symbolic links), sorted by path bytes.
fn walk(root: &Path, excluded: &[String]) -> Result<Walk, ManifestError> {
    let mut out = Walk::default();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(io_err(&dir))? {
            let entry = entry.map_err(io_err(&dir))?;
            let path = entry.path();
            let name = entry.file_name().into_string().map_err(|_| ManifestError::NonUtf8Path(path.clone()))?;
            let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
            if is_excluded(&rel, excluded) {
                continue;
            }
            let kind = entry.file_type().map_err(io_err(&path))?;
            if kind.is_dir() {
                stack.push((path, rel));
            } else if kind.is_file() {
                let bytes = entry.metadata().map_err(io_err(&path))?.len();
                out.files.push(Found { rel, bytes });
            } else {
                out.special.push(rel);
            }
        }
    }
    out.files.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    out.special.sort_unstable();
    Ok(out)
}

/// SHA-256 (hex) of a file, read in chunks of at most 1 MiB.
pub fn hash_file(path: &Path, size_hint: u64) -> Result<(String, u64), ManifestError> {
    let mut file = File::open(path).map_err(io_err(path))?;
    let mut buf = vec![0u8; (size_hint as usize).clamp(1, READ_BUFFER)];
    let mut hasher = Sha256::new();
    let mut total = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(path)(e)),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((trajkit_model::canonical::hex(&hasher.finalize()), total))
}

/// Runs `work` on every item in parallel, largest first and one item per task (so a few big
/// files among many small ones are spread over the threads, and none starts last), and
/// returns the results in the items' order.
fn largest_first<T: Sync, R: Send>(
    items: &[T],
    size: impl Fn(&T) -> u64,
    work: impl Fn(&T) -> Result<R, ManifestError> + Sync,
) -> Result<Vec<R>, ManifestError> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(size(&items[i])));
    let mut done: Vec<(usize, R)> =
        order.par_iter().with_max_len(1).map(|&i| work(&items[i]).map(|r| (i, r))).collect::<Result<_, _>>()?;
    done.sort_unstable_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, r)| r).collect())
}

/// Builds the manifest of every file under `root` except the `exclude` paths (relative,
/// `/`-separated; a directory excludes everything below it). Symbolic links and special
/// files are an error: a manifest vouches for bytes, and a link's target may change.
pub fn create(root: &Path, exclude: &[&str]) -> Result<Manifest, ManifestError> {
    create_with(root, exclude, &[])
}

/// `create`, with the entries of files hashed earlier (`known`, by relative path) taken
/// instead of hashing those files again, for a caller that hashed them while nothing could
/// change them (a build's shards, during its finalize). A known entry whose size no longer
/// matches the file is ignored and the file hashed.
pub fn create_with(root: &Path, exclude: &[&str], known: &[FileEntry]) -> Result<Manifest, ManifestError> {
    if !root.is_dir() {
        return Err(ManifestError::NotADirectory(root.to_path_buf()));
    }
    let mut excluded: Vec<String> = exclude.iter().map(|e| normalize_exclusion(e)).collect();
    excluded.sort_unstable();
    excluded.dedup();
    let tree = walk(root, &excluded)?;
    if let Some(s) = tree.special.first() {
        return Err(ManifestError::NotRegular(root.join(s)));
    }
    let known: HashMap<&str, &FileEntry> = known.iter().map(|k| (k.path.as_str(), k)).collect();
    let files = largest_first(
        &tree.files,
        |f| f.bytes,
        |f| match known.get(f.rel.as_str()).filter(|k| k.bytes == f.bytes) {
            Some(k) => Ok((*k).clone()),
            None => {
                let (sha256, bytes) = hash_file(&root.join(&f.rel), f.bytes)?;
                Ok(FileEntry { bytes, path: f.rel.clone(), sha256 })
            }
        },
    )?;
    let mut m = Manifest {
        excluded,
        file_count: files.len() as u64,
        total_bytes: files.iter().map(|f| f.bytes).sum(),
        files,
        format: FORMAT.to_string(),
        manifest_sha256: String::new(),
    };
    m.manifest_sha256 = m.compute_digest();
    Ok(m)
}

/// Writes the manifest as pretty JSON (two-space indent, trailing newline) to a temporary
/// file next to `path` and renames it into place.
pub fn write(manifest: &Manifest, path: &Path) -> Result<(), ManifestError> {
    let mut bytes = serde_json::to_vec_pretty(manifest).map_err(|source| ManifestError::Json {
        path: path.to_path_buf(),
        line: 0,
        column: 0,
        source,
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Writes `bytes` atomically (`trajkit_io`: temporary file, fsync, rename), with the
/// permissions of a new file (0666 less the umask): published files must be readable.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ManifestError> {
    trajkit_io::write_atomic(path, bytes).map_err(io_err(path))
}

/// A file whose size or content differs from the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    pub path: String,
    pub expected_bytes: u64,
    pub actual_bytes: u64,
    pub expected_sha256: String,
    /// Absent when the size already differs (the file is then not hashed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_sha256: Option<String>,
}

/// The result of checking a tree against its manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The manifest file that was checked.
    pub manifest: String,
    /// Files listed in the manifest.
    pub listed: u64,
    /// Files hashed (listed, present and of the listed size).
    pub hashed: u64,
    /// Bytes read while hashing.
    pub bytes_hashed: u64,
    /// The digest recorded in the manifest.
    pub recorded_digest: String,
    /// The digest recomputed from the manifest's content.
    pub computed_digest: String,
    /// Listed but absent.
    pub missing: Vec<String>,
    /// Present but not listed (not excluded, not the manifest itself); includes symbolic links.
    pub extra: Vec<String>,
    /// Present with another size or content.
    pub changed: Vec<Changed>,
}

impl VerifyReport {
    /// True when the tree matches and the manifest's own digest is intact.
    pub fn is_clean(&self) -> bool {
        self.digest_ok() && self.missing.is_empty() && self.extra.is_empty() && self.changed.is_empty()
    }

    /// The manifest's recorded digest matches its content.
    pub fn digest_ok(&self) -> bool {
        self.recorded_digest == self.computed_digest
    }
}

/// Checks `root` against `root/manifest.json`.
pub fn verify(root: &Path) -> Result<VerifyReport, ManifestError> {
    verify_with(root, &root.join(DEFAULT_NAME))
}

/// Checks `root` against the manifest at `manifest_path` (which, when inside the tree, is
/// not itself an extra file).
pub fn verify_with(root: &Path, manifest_path: &Path) -> Result<VerifyReport, ManifestError> {
    if !root.is_dir() {
        return Err(ManifestError::NotADirectory(root.to_path_buf()));
    }
    let m = Manifest::read(manifest_path)?;
    let mut excluded = m.excluded.clone();
    if let Some(rel) = relative_inside(root, manifest_path) {
        excluded.push(rel);
    }
    let tree = walk(root, &excluded)?;
    let present: BTreeMap<&str, u64> = tree.files.iter().map(|f| (f.rel.as_str(), f.bytes)).collect();
    let listed: BTreeSet<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
    let missing = m.files.iter().filter(|f| !present.contains_key(f.path.as_str())).map(|f| f.path.clone()).collect();
    let mut extra: Vec<String> =
        tree.files.iter().filter(|f| !listed.contains(f.rel.as_str())).map(|f| f.rel.clone()).collect();
    extra.extend(tree.special.iter().cloned());
    extra.sort_unstable();
    let to_check: Vec<(&FileEntry, u64)> =
        m.files.iter().filter_map(|f| present.get(f.path.as_str()).map(|&size| (f, size))).collect();
    let checks = largest_first(&to_check, |(_, size)| *size, |(f, size)| compare(root, f, *size))?;
    Ok(VerifyReport {
        manifest: manifest_path.display().to_string(),
        listed: m.files.len() as u64,
        hashed: checks.iter().filter(|(c, _)| c.as_ref().is_none_or(|c| c.actual_sha256.is_some())).count() as u64,
        bytes_hashed: checks.iter().map(|(_, n)| n).sum(),
        recorded_digest: m.manifest_sha256.clone(),
        computed_digest: m.compute_digest(),
        missing,
        extra,
        changed: checks.into_iter().filter_map(|(c, _)| c).collect(),
    })
}

/// Compares one present file with its entry: by size first, then by hash. Returns the
/// difference (if any) and the bytes hashed.
fn compare(root: &Path, f: &FileEntry, size: u64) -> Result<(Option<Changed>, u64), ManifestError> {
    let changed = |actual_bytes, actual_sha256| Changed {
        path: f.path.clone(),
        expected_bytes: f.bytes,
        actual_bytes,
        expected_sha256: f.sha256.clone(),
        actual_sha256,
    };
    if size != f.bytes {
        return Ok((Some(changed(size, None)), 0));
    }
    let (sha, n) = hash_file(&root.join(&f.path), size)?;
    let differs = n != f.bytes || !sha.eq_ignore_ascii_case(&f.sha256);
    Ok((differs.then(|| changed(n, Some(sha))), n))
}

/// `path` relative to `root` as a `/`-separated string, when it lies inside `root` (both
/// resolved through the file system, so `./x/../DIR/m.json` counts).
pub fn relative_inside(root: &Path, path: &Path) -> Option<String> {
    let root = std::fs::canonicalize(root).ok()?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let full = std::fs::canonicalize(parent).ok()?.join(path.file_name()?);
    let rel = full.strip_prefix(&root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

#[cfg(test)]
mod tests;
