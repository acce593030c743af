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

/// Compression of a file, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// Compression named by a path's last extension.
    pub fn of(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Compression::Gzip,
            Some("zst") | Some("zstd") => Compression::Zstd,
            _ => Compression::None,
        }
    }
}

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
            found.sort();
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

fn walk(dir: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<FormatError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(FormatError::Io { path: dir.display().to_string(), source: e });
            return;
        }
    };
    for entry in entries.flatten() {
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
/// such a read goes straight into the caller's buffer instead of through a 256 KiB copy.
pub fn open_sized(file: &InputFile) -> Result<(Box<dyn BufRead + Send>, Option<u64>), FormatError> {
    let io_err = |e| FormatError::Io { path: file.display.clone(), source: e };
    if file.is_stdin() {
        return Ok((decompress(Box::new(io::stdin()), Compression::of(&file.fs_path)).map_err(io_err)?, None));
    }
    let f = File::open(&file.fs_path).map_err(io_err)?;
    let compression = Compression::of(&file.fs_path);
    let len = match compression {
        Compression::None => f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()),
        _ => None,
    };
    let reader: Box<dyn BufRead + Send> = match len {
        Some(n) => Box::new(BufReader::with_capacity(usize::try_from(n).unwrap_or(BUF).clamp(4096, BUF), f)),
        None => decompress(Box::new(f), compression).map_err(io_err)?,
    };
    Ok((reader, len))
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
    let read = open(file).map_err(|e| e.to_string()).and_then(|r| {
        r.take(limit as u64 + 1).read_to_end(&mut buf).map_err(|e| format!("{}: read failed: {e}", file.display))
    });
    match read {
        Err(e) => Err(Problem::new(Reason::InvalidJson, "$", e)),
        Ok(_) if buf.len() > limit => Err(crate::pipeline::too_large_problem(limit)),
        Ok(_) => Ok(buf),
    }
}

pub fn read_all(file: &InputFile) -> Result<Vec<u8>, FormatError> {
    let mut r = open(file)?;
    let mut buf = Vec::new();
    r.read_to_end(&mut buf).map_err(|e| FormatError::Io { path: file.display.clone(), source: e })?;
    Ok(buf)
}

/// Resolves `reference` (a path written inside data) against `base_dir`, refusing any
/// result outside `root`. Returns the path on disk.
pub fn resolve_inside(root: &Path, base_dir: &Path, reference: &str) -> Result<PathBuf, FormatError> {
    resolve_inside_of(root, base_dir, &std::cell::OnceCell::new(), reference)
}

/// [`resolve_inside`] for a caller that resolves several references against one directory:
/// `real_dir` keeps the directory's real path after the first (each `canonicalize` costs a
/// `readlink` per path component).
pub fn resolve_inside_of(
    root: &Path,
    base_dir: &Path,
    real_dir: &std::cell::OnceCell<PathBuf>,
    reference: &str,
) -> Result<PathBuf, FormatError> {
    let rel = Path::new(reference);
    let escapes =
        || FormatError::PathEscapesRoot { reference: reference.to_string(), root: root.display().to_string() };
    if reference.contains("://") {
        return Err(FormatError::RemoteReference { reference: reference.to_string() });
    }
    if rel.is_absolute() {
        return Err(escapes());
    }
    // Normalize lexically first so a missing target still gets the escape check.
    let mut joined =
        real_dir.get_or_init(|| base_dir.canonicalize().unwrap_or_else(|_| base_dir.to_path_buf())).clone();
    for comp in rel.components() {
        match comp {
            std::path::Component::ParentDir => {
                if !joined.pop() {
                    return Err(escapes());
                }
            }
            std::path::Component::Normal(c) => joined.push(c),
            std::path::Component::CurDir => {}
            _ => return Err(escapes()),
        }
    }
    if !joined.starts_with(root) {
        return Err(escapes());
    }
    // Symlinks may still point out: check the real path when the file exists.
    if let Ok(real) = joined.canonicalize() {
        if !real.starts_with(root) {
            return Err(escapes());
        }
        return Ok(real);
    }
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
