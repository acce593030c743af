//! Finding input files and opening them, decompressing by extension.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::FormatError;

/// One file to read, with the names reports use for it.
#[derive(Debug, Clone)]
pub struct InputFile {
    /// Path on disk (`-` for standard input).
    pub fs_path: PathBuf,
    /// Path as reports show it: the argument joined with the path below it.
    pub display: String,
    /// Directory that paths inside the data may not escape (canonicalized).
    pub root: PathBuf,
}

impl InputFile {
    /// True for standard input.
    pub fn is_stdin(&self) -> bool {
        self.fs_path.as_os_str() == "-"
    }
}

/// Compression of a file, from its extension (shared with the writers).
pub use trajkit_io::Compression;

/// File name with a compression extension removed (`a.jsonl.gz` -> `a.jsonl`).
pub fn logical_name(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match Compression::of(path) {
        Compression::None => name,
        _ => match name.rfind('.') {
            Some(i) => name[..i].to_string(),
            None => name,
        },
    }
}

/// True when a file name looks like something trajkit reads.
fn is_candidate(path: &Path) -> bool {
    let name = logical_name(path);
    name.ends_with(".json")
        || name.ends_with(".jsonl")
        || name.ends_with(".traj")
        || name.ends_with(".eval")
        || name.ends_with(".parquet")
}

/// Expands arguments into input files: directories recursively (sorted, candidate
/// extensions only), files as given. Missing paths are returned as errors, in order.
pub fn discover(args: &[PathBuf]) -> (Vec<InputFile>, Vec<FormatError>) {
    begin_run();
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for arg in args {
        if arg.as_os_str() == "-" {
            files.push(InputFile {
                fs_path: arg.clone(),
                display: "-".into(),
                root: std::env::current_dir().unwrap_or_default(),
            });
            continue;
        }
        let meta = match std::fs::metadata(arg) {
            Ok(m) => m,
            Err(e) => {
                errors.push(FormatError::Io { path: arg.display().to_string(), source: e });
                continue;
            }
        };
        if meta.is_dir() {
            let root = arg.canonicalize().unwrap_or_else(|_| arg.clone());
            let mut found = Vec::new();
            walk(arg, &mut found, &mut errors);
            for p in found {
                files.push(InputFile { display: p.display().to_string(), fs_path: p, root: root.clone() });
            }
        } else {
            let parent = arg.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let root = parent.canonicalize().unwrap_or_else(|_| parent.to_path_buf());
            files.push(InputFile { fs_path: arg.clone(), display: arg.display().to_string(), root });
        }
    }
    (files, errors)
}

/// Appends the candidate files under `dir` to `out` in path order: each directory's
/// entries sorted by name and walked in turn give the order a sort of the whole list by
/// `Path` gives (it compares paths name by name), without that sort's component parsing
/// (1.7 % of ATIF `validate`'s instructions on 2,200 files, before any file was read).
fn walk(dir: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<FormatError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(FormatError::Io { path: dir.display().to_string(), source: e });
            return;
        }
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| (e.file_name(), e)).collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (_, entry) in entries {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, out, errors),
            Ok(t) if t.is_file() && is_candidate(&path) => out.push(path),
            _ => {}
        }
    }
}

/// Opens a file (or stdin) and decompresses by extension, buffered.
pub fn open(file: &InputFile) -> Result<Box<dyn BufRead + Send>, FormatError> {
    open_sized(file).map(|(reader, _)| reader)
}

/// [`open`], also giving an uncompressed regular file's length, so that a caller reading it
/// whole sizes its buffer once; the reader's buffer is then no larger than the file, so
/// such a read ([`read_at_most`]) goes straight into the caller's buffer.
pub fn open_sized(file: &InputFile) -> Result<(Box<dyn BufRead + Send>, Option<u64>), FormatError> {
    let io_err = |e| FormatError::Io { path: file.display.clone(), source: e };
    if file.is_stdin() {
        return Ok((decompress(Box::new(io::stdin()), Compression::of(&file.fs_path)).map_err(io_err)?, None));
    }
    let compression = Compression::of(&file.fs_path);
    if compression == Compression::None {
        let (f, len) = open_plain(file)?;
        return Ok((buffered(f, len), len));
    }
    let f = File::open(&file.fs_path).map_err(io_err)?;
    Ok((decompress(Box::new(f), compression).map_err(io_err)?, None))
}

/// Opens a plain (uncompressed) file, with its length when it is a regular file.
pub fn open_plain(file: &InputFile) -> Result<(File, Option<u64>), FormatError> {
    let f = File::open(&file.fs_path).map_err(|e| FormatError::Io { path: file.display.clone(), source: e })?;
    let len = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    Ok((f, len))
}

/// A plain file buffered for reading: a buffer of its size when it is small (a regular
/// file of length `len`), else the usual one.
pub fn buffered(f: File, len: Option<u64>) -> Box<dyn BufRead + Send> {
    let cap = len.map_or(BUF, |n| usize::try_from(n).unwrap_or(BUF).clamp(4096, BUF));
    Box::new(BufReader::with_capacity(cap, f))
}

/// The buffer of a decoding or file reader.
const BUF: usize = 256 * 1024;

/// Wraps a reader in the decoder for `compression`, buffered.
pub fn decompress(raw: Box<dyn Read + Send>, compression: Compression) -> io::Result<Box<dyn BufRead + Send>> {
    Ok(match compression {
        Compression::None => Box::new(BufReader::with_capacity(BUF, raw)),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            BUF,
            flate2::read::MultiGzDecoder::new(BufReader::with_capacity(BUF, raw)),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(BUF, zstd::stream::read::Decoder::new(raw)?)),
    })
}

/// Reads a whole (decompressed) file: for single-document formats and side files.
/// Reads a file that a record gathers besides its own (an OTLP set's other files, an
/// OpenCode session's message and part files), at most `limit` bytes: a file that cannot be
/// read or is larger than the limit is a problem of the record, naming the file.
pub(crate) fn read_gathered(file: &InputFile, limit: usize) -> Result<Vec<u8>, crate::rejection::Problem> {
    use crate::rejection::{Problem, Reason};
    let mut buf = Vec::new();
    let read = open_sized(file).map_err(|e| e.to_string()).and_then(|(mut r, len)| {
        read_at_most(&mut r, &mut buf, limit + 1, first_read(len))
            .map_err(|e| format!("{}: read failed: {e}", file.display))
    });
    match read {
        Err(e) => Err(Problem::new(Reason::InvalidJson, "$", e)),
        Ok(_) if buf.len() > limit => Err(crate::pipeline::too_large_problem(limit)),
        Ok(_) => Ok(buf),
    }
}

/// The whole (decompressed) file, read as planning and the producer read documents
/// (`read_at_most`: a plain file in one request of its size).
pub fn read_all(file: &InputFile) -> Result<Vec<u8>, FormatError> {
    let (mut r, len) = open_sized(file)?;
    let mut buf = Vec::new();
    read_at_most(&mut r, &mut buf, usize::MAX, first_read(len))
        .map_err(|e| FormatError::Io { path: file.display.clone(), source: e })?;
    Ok(buf)
}

/// Appends at most `max` bytes of `reader` to `buf`, as `take(max).read_to_end` does (bytes
/// read before an error stay), in reads as large as the room left: the first has room for
/// `first` bytes, each next twice the last. std's `read_to_end` without a size hint asks
/// 8 KiB at a time, so a `BufReader` copied every file out of its buffer; a read at least
/// as large as that buffer skips it. A file of known length `n` is read with `first = n + 1`.
pub fn read_at_most(reader: &mut dyn Read, buf: &mut Vec<u8>, max: usize, first: usize) -> io::Result<usize> {
    let start = buf.len();
    let mut room = first.max(1).min(max);
    let mut filled = 0;
    let result = loop {
        if filled == room {
            if room == max {
                break Ok(());
            }
            room = room.saturating_mul(2).min(max);
        }
        buf.resize(start + room, 0);
        match reader.read(&mut buf[start + filled..]) {
            Ok(0) => break Ok(()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    buf.truncate(start + filled);
    result.map(|()| filled)
}

/// The first read's room for a file of `len` bytes (unknown: 64 KiB), for [`read_at_most`].
pub fn first_read(len: Option<u64>) -> usize {
    len.map_or(64 << 10, |n| usize::try_from(n).unwrap_or(usize::MAX).saturating_add(1))
}

/// Resolves `reference` (a path written inside data) against `base_dir`, refusing any
/// result outside `root`. Returns the path on disk.
pub fn resolve_inside(root: &Path, base_dir: &Path, reference: &str) -> Result<PathBuf, FormatError> {
    resolve_inside_of(root, base_dir, &RealDir::default(), reference)
}

/// A directory's real path, resolved on first use and kept for every reference below it
/// (`canonicalize` costs a `readlink` per path component).
#[derive(Debug, Default, Clone)]
pub struct RealDir(std::cell::OnceCell<Option<PathBuf>>);

impl RealDir {
    /// The real path of `dir`, or `None` when it cannot be resolved.
    fn of(&self, dir: &Path) -> Option<&Path> {
        self.0.get_or_init(|| real_dir(dir)).as_deref()
    }
}

/// Bumped by every [`discover`] and every read: a remembered real path or resolution holds
/// for the run that found it, never for a later run in the same process (the Python
/// package's, or a caller's that changed the files in between).
static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Forgets what the file system answered before: [`real_dir`]'s and the resolutions' caches
/// hold within one run.
pub(crate) fn begin_run() {
    RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// A thread's last `N` answers of the file system in the current run, oldest first.
struct Recent<K, V, const N: usize>(Vec<(u64, K, V)>);

impl<K, V: Clone, const N: usize> Recent<K, V, N> {
    const fn new() -> Self {
        Recent(Vec::new())
    }

    /// The answer kept in this run for the key that `is` accepts, else the key and answer
    /// `ask` gives, kept in place of the oldest.
    fn get(&mut self, is: impl Fn(&K) -> bool, ask: impl FnOnce() -> (K, V)) -> V {
        let run = RUN.load(std::sync::atomic::Ordering::Relaxed);
        if let Some((.., v)) = self.0.iter().find(|(r, k, _)| *r == run && is(k)) {
            return v.clone();
        }
        let (k, v) = ask();
        if self.0.len() == N {
            self.0.remove(0);
        }
        self.0.push((run, k, v.clone()));
        v
    }
}

/// What `canonicalize` gives for a directory, kept for the thread's next call with the same
/// one in the same run: files are read in directory order, and each resolution costs a
/// `readlink` per component (16 per ATIF file that names another, before).
pub fn real_dir(dir: &Path) -> Option<PathBuf> {
    thread_local! {
        static LAST: std::cell::RefCell<Recent<PathBuf, Option<PathBuf>, 1>> = const { std::cell::RefCell::new(Recent::new()) };
    }
    LAST.with(|last| last.borrow_mut().get(|d| d == dir, || (dir.to_path_buf(), dir.canonicalize().ok())))
}

/// What `canonicalize` and `metadata` (which follow links) give for `path`, or `None` when
/// either fails. A file that is not itself a link is its directory's real path joined with
/// its name, with one `lstat` instead of a `readlink` per component.
pub fn real_file_and_metadata(path: &Path) -> Option<(PathBuf, std::fs::Metadata)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    match path.file_name() {
        Some(name) if !meta.file_type().is_symlink() => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Some((real_dir(parent)?.join(name), meta))
        }
        _ => Some((path.canonicalize().ok()?, std::fs::metadata(path).ok()?)),
    }
}

/// What `canonicalize` gives for a file ([`real_file_and_metadata`] without the metadata).
pub fn real_file(path: &Path) -> Option<PathBuf> {
    real_file_and_metadata(path).map(|(real, _)| real)
}

/// [`resolve_inside`] for a caller that resolves several references against one directory,
/// whose real path `real_dir` keeps after the first.
pub fn resolve_inside_of(
    root: &Path,
    base_dir: &Path,
    real_dir: &RealDir,
    reference: &str,
) -> Result<PathBuf, FormatError> {
    resolve_target(root, base_dir, real_dir, reference).map(|(path, _)| path)
}

/// [`resolve_inside_of`] for a reference to a file: the path when it is a regular file
/// (following links), else `None`. Where the path holds no link, the `lstat` that checked
/// for one already says so, where a `stat` followed it (two per ATIF subagent reference).
pub fn resolve_file_inside_of(
    root: &Path,
    base_dir: &Path,
    real_dir: &RealDir,
    reference: &str,
) -> Result<Option<PathBuf>, FormatError> {
    let (path, is_file) = resolve_target(root, base_dir, real_dir, reference)?;
    let is_file = is_file.unwrap_or_else(|| path.is_file());
    Ok(is_file.then_some(path))
}

/// [`resolve_inside_of`], with whether the result is a regular file when the resolution
/// learned it (`None`: ask the file system).
fn resolve_target(
    root: &Path,
    base_dir: &Path,
    real_dir: &RealDir,
    reference: &str,
) -> Result<(PathBuf, Option<bool>), FormatError> {
    let rel = Path::new(reference);
    let escapes =
        || FormatError::PathEscapesRoot { reference: reference.to_string(), root: root.display().to_string() };
    if reference.contains("://") {
        return Err(FormatError::RemoteReference { reference: reference.to_string() });
    }
    if rel.is_absolute() {
        return Err(escapes());
    }
    // Normalize lexically first so a missing target still gets the escape check. The
    // leading `known` components stay a prefix of the real directory, so real themselves.
    let real_base = real_dir.of(base_dir);
    let mut joined = real_base.unwrap_or(base_dir).to_path_buf();
    let mut depth = joined.components().count();
    let mut known = if real_base.is_some() { depth } else { 0 };
    for comp in rel.components() {
        match comp {
            std::path::Component::ParentDir => {
                if !joined.pop() {
                    return Err(escapes());
                }
                depth -= 1;
                known = known.min(depth);
            }
            std::path::Component::Normal(c) => {
                joined.push(c);
                depth += 1;
            }
            std::path::Component::CurDir => {}
            _ => return Err(escapes()),
        }
    }
    if !joined.starts_with(root) {
        return Err(escapes());
    }
    // Symlinks may still point out: check the real path when the file exists.
    match real_beyond_recent(&joined, known) {
        Some((real, _)) if !real.starts_with(root) => Err(escapes()),
        Some((real, is_file)) => Ok((real, is_file)),
        // A path that cannot be resolved is no file (its `stat` fails as its `lstat` did).
        None if known > 0 => Ok((joined, Some(false))),
        None => Ok((joined, None)),
    }
}

/// [`real_beyond`], kept for the thread's next few calls in the same run: the plan
/// resolves an ATIF file's references to find the files it consumes, then the validator
/// and the loader resolve them again, one after the other on the same thread.
fn real_beyond_recent(path: &Path, known: usize) -> Option<(PathBuf, Option<bool>)> {
    type Found = Option<(PathBuf, Option<bool>)>;
    thread_local! {
        static RECENT: std::cell::RefCell<Recent<(PathBuf, usize), Found, 8>> = const { std::cell::RefCell::new(Recent::new()) };
    }
    RECENT.with(|recent| {
        recent
            .borrow_mut()
            .get(|(p, k)| p == path && *k == known, || ((path.to_path_buf(), known), real_beyond(path, known)))
    })
}

/// What `canonicalize` gives for `path` (`None` where it fails) when its first `known`
/// components are already a real path: an `lstat` of each further prefix, and
/// `canonicalize` itself from the first link on. With it, whether the path is a regular
/// file when the last `lstat` was of the path itself and found no link.
fn real_beyond(path: &Path, known: usize) -> Option<(PathBuf, Option<bool>)> {
    if known == 0 {
        return path.canonicalize().ok().map(|real| (real, None));
    }
    let mut prefix = PathBuf::new();
    let mut is_file = None;
    for (i, c) in path.components().enumerate() {
        prefix.push(c);
        if i >= known {
            let kind = std::fs::symlink_metadata(&prefix).ok()?.file_type();
            if kind.is_symlink() {
                return path.canonicalize().ok().map(|real| (real, None));
            }
            is_file = Some(kind.is_file());
        }
    }
    Some((path.to_path_buf(), is_file))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files `discover` finds under `dir`, and the same list sorted as paths.
    fn found_and_sorted(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let (files, errors) = discover(&[dir.to_path_buf()]);
        assert!(errors.is_empty(), "{errors:?}");
        let found: Vec<PathBuf> = files.into_iter().map(|f| f.fs_path).collect();
        let mut sorted = found.clone();
        sorted.sort();
        (found, sorted)
    }

    /// Synthetic (names chosen to order differently as whole strings and as paths, which no
    /// fixture directory mixes): the walk gives the order of a sort of every path.
    #[test]
    fn walk_order_is_path_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        let names = [
            "a/b.json",
            "a-b.json",
            "a.json",
            "a0/z.json",
            "a/b/c.json",
            "a.b/x.json",
            "B.json",
            "é/1.json",
            "a/a-.json",
            "ab.jsonl",
        ];
        for name in names {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(&path, b"{}").expect("file");
        }
        let (found, sorted) = found_and_sorted(dir.path());
        assert_eq!(found.len(), names.len());
        assert_eq!(found, sorted);
        // Sorted as strings, `a-b.json` would come before `a/b.json`; as paths, after.
        let at = |name: &str| found.iter().position(|p| p.ends_with(name)).expect("found");
        assert!(at("a/b.json") < at("a-b.json") && at("a/b/c.json") < at("a-b.json"));
    }

    /// Every real fixture, walked as one directory (196 candidate files): in path order.
    #[test]
    fn real_fixtures_walk_in_path_order() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
        let (found, sorted) = found_and_sorted(&root);
        assert_eq!(found.len(), 196);
        assert_eq!(found, sorted);
    }

    /// Synthetic (no real fixture holds links): references through links inside and out of
    /// the root, `..`, a missing file and a file used as a directory resolve as joining
    /// them to the real directory and canonicalizing the result does.
    #[test]
    fn references_resolve_as_canonicalize_does() {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path().canonicalize().expect("real temp dir");
        let root = d.join("root");
        std::fs::create_dir_all(root.join("run/sub")).expect("dirs");
        std::fs::create_dir_all(d.join("outside")).expect("outside");
        std::fs::write(root.join("run/sub/a.json"), b"{}").expect("file");
        std::fs::write(d.join("outside/secret.json"), b"{}").expect("file");
        std::os::unix::fs::symlink(root.join("run/sub"), root.join("run/inlink")).expect("link in");
        std::os::unix::fs::symlink(d.join("outside"), root.join("run/outlink")).expect("link out");
        std::os::unix::fs::symlink(root.join("run/sub/a.json"), root.join("run/alink.json")).expect("file link");
        let oracle = |reference: &str| -> Result<PathBuf, String> {
            let mut joined = root.join("run");
            for c in Path::new(reference).components() {
                match c {
                    std::path::Component::ParentDir => _ = joined.pop(),
                    std::path::Component::Normal(n) => joined.push(n),
                    _ => {}
                }
            }
            if !joined.starts_with(&root) {
                return Err("escapes".into());
            }
            match joined.canonicalize() {
                Ok(real) if !real.starts_with(&root) => Err("escapes".into()),
                Ok(real) => Ok(real),
                Err(_) => Ok(joined),
            }
        };
        let real_dir = RealDir::default();
        for reference in [
            "sub/a.json",
            "./sub/a.json",
            "inlink/a.json",
            "alink.json",
            "outlink/secret.json",
            "sub/../sub/a.json",
            "inlink/../sub/a.json",
            "../run/sub/a.json",
            "../../outside/secret.json",
            "sub/missing.json",
            "sub/a.json/x.json",
            "sub",
            "inlink",
            ".",
            "",
        ] {
            let got =
                resolve_inside_of(&root, &root.join("run"), &real_dir, reference).map_err(|_| "escapes".to_string());
            assert_eq!(got, oracle(reference), "{reference}");
            // The file answer, from the resolution's own `lstat` where it has one, is `is_file`'s.
            let file = resolve_file_inside_of(&root, &root.join("run"), &real_dir, reference)
                .map_err(|_| "escapes".to_string());
            let want = oracle(reference).map(|p| p.is_file().then_some(p));
            assert_eq!(file, want, "{reference}");
        }
    }

    /// Synthetic: a file created after a reference to it was resolved is found by the next
    /// run (the thread's recent resolutions hold within one run only).
    #[test]
    fn a_new_run_finds_files_created_since() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("real temp dir");
        let real_dir = RealDir::default();
        assert_eq!(resolve_file_inside_of(&root, &root, &real_dir, "late.json").ok(), Some(None));
        std::fs::write(root.join("late.json"), b"{}").expect("file");
        begin_run();
        assert_eq!(
            resolve_file_inside_of(&root, &root, &real_dir, "late.json").ok(),
            Some(Some(root.join("late.json")))
        );
    }

    /// Synthetic (no real fixture holds links): real paths through a linked file, a
    /// linked directory, `..` and a bare name equal `canonicalize`'s.
    #[test]
    fn real_paths_equal_canonicalize() {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        std::fs::create_dir_all(d.join("a/b")).expect("dirs");
        std::fs::write(d.join("a/b/x.json"), b"{}").expect("file");
        std::os::unix::fs::symlink(d.join("a/b/x.json"), d.join("a/link.json")).expect("file link");
        std::os::unix::fs::symlink(d.join("a/b"), d.join("dirlink")).expect("dir link");
        let paths = [
            d.join("a/b/x.json"),
            d.join("a/link.json"),
            d.join("dirlink/x.json"),
            d.join("a/b/../b/x.json"),
            d.join("a/b/missing.json"),
            d.join("a/b"),
        ];
        for p in &paths {
            let got = real_file_and_metadata(p);
            let want = p.canonicalize().ok().zip(std::fs::metadata(p).ok());
            assert_eq!(got.as_ref().map(|g| &g.0), want.as_ref().map(|w| &w.0), "{}", p.display());
            assert_eq!(got.map(|g| g.1.len()), want.map(|w| w.1.len()), "{}", p.display());
            // Twice each: the second answer comes from the thread's remembered directory.
            for _ in 0..2 {
                assert_eq!(real_file(p), p.canonicalize().ok(), "{}", p.display());
            }
        }
        // A bare name is in the working directory (the package's, under cargo test).
        let bare = Path::new("Cargo.toml");
        assert_eq!(real_file(bare), bare.canonicalize().ok());
        assert_eq!(real_dir(&d.join("dirlink")), d.join("a/b").canonicalize().ok());
        assert_eq!(real_dir(&d.join("none")), None);
    }

    fn input(path: &Path) -> InputFile {
        InputFile { fs_path: path.to_path_buf(), display: path.display().to_string(), root: PathBuf::new() }
    }

    /// A plain file gives its length and reads whole through the small buffer; a compressed
    /// one gives no length (its decoded size is unknown) and still decodes.
    #[test]
    fn open_sized_gives_plain_lengths_only() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.jsonl");
        let body = "{\"k\": 1}\n".repeat(1000);
        std::fs::write(&plain, &body).unwrap();
        let (mut r, len) = open_sized(&input(&plain)).unwrap();
        assert_eq!(len, Some(body.len() as u64));
        let mut read = Vec::new();
        r.read_to_end(&mut read).unwrap();
        assert_eq!(read, body.as_bytes());

        let gz = dir.path().join("a.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, body.as_bytes()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        let (mut r, len) = open_sized(&input(&gz)).unwrap();
        assert_eq!(len, None);
        let mut read = Vec::new();
        r.read_to_end(&mut read).unwrap();
        assert_eq!(read, body.as_bytes());
    }

    /// Synthetic (no input file shows a read split in pieces, an interruption or an error
    /// after some bytes): `read_at_most` appends what `take(max).read_to_end` appends, for
    /// any first room, with the bytes before an error kept.
    #[test]
    fn read_at_most_appends_what_take_read_to_end_does() {
        /// Gives `data` at most 777 bytes a read, each read after an interruption; then
        /// the end, or (`fails`) an error.
        struct Pieces {
            data: Vec<u8>,
            at: usize,
            interrupt: bool,
            fails: bool,
        }
        impl Read for Pieces {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                self.interrupt = !self.interrupt;
                if !self.interrupt {
                    return Err(io::Error::new(io::ErrorKind::Interrupted, "again"));
                }
                let n = out.len().min(777).min(self.data.len() - self.at);
                if n == 0 && self.fails {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt deflate stream"));
                }
                out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
                self.at += n;
                Ok(n)
            }
        }
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let pieces = |fails| Pieces { data: data.clone(), at: 0, interrupt: false, fails };
        for max in [0, 1, 999, 10_000, 10_001, 50_000] {
            for first in [0, 1, 2, 4096, 10_000, 10_001, 1 << 20] {
                let mut want = b"kept".to_vec();
                io::Cursor::new(&data).take(max as u64).read_to_end(&mut want).unwrap();
                let mut got = b"kept".to_vec();
                let n = read_at_most(&mut pieces(false), &mut got, max, first).unwrap();
                assert_eq!((n, &got), (want.len() - 4, &want), "max {max}, first {first}");
            }
        }
        let mut got = Vec::new();
        let err = read_at_most(&mut pieces(true), &mut got, 1 << 20, 100).unwrap_err();
        assert_eq!((err.to_string().as_str(), got), ("corrupt deflate stream", data));
    }
}
