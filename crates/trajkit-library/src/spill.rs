//! An append-only temporary file of length-prefixed entries: what finalize would otherwise
//! hold per distinct instruction or interaction (shingles, sketches, fingerprints) while it
//! merges, so that its memory does not grow with a corpus of distinct rollouts.

use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Entries written as they come; `reader` gives them back by position or in order.
#[derive(Default)]
pub struct Spill {
    /// Where the file is made (the staging directory); the system's temporary directory
    /// without one.
    dir: Option<PathBuf>,
    out: Option<BufWriter<File>>,
    /// Bytes written so far: the next entry's position.
    len: u64,
    /// The first write error, returned by `reader`.
    error: Option<std::io::Error>,
}

impl Spill {
    /// A spill whose file is made in `dir` at the first entry.
    pub fn in_dir(dir: &Path) -> Spill {
        Spill { dir: Some(dir.to_path_buf()), ..Spill::default() }
    }

    /// Appends one entry of `parts` (written one after the other) and returns its position.
    /// After a write error nothing more is written; `reader` returns the error.
    pub fn push(&mut self, parts: &[&[u8]]) -> u64 {
        let at = self.len;
        if self.error.is_none() {
            if let Err(e) = self.write(parts) {
                self.error = Some(e);
            }
        }
        at
    }

    fn write(&mut self, parts: &[&[u8]]) -> std::io::Result<()> {
        let out = match &mut self.out {
            Some(out) => out,
            None => {
                let file = match &self.dir {
                    Some(dir) => tempfile::tempfile_in(dir)?,
                    None => tempfile::tempfile()?,
                };
                self.out.insert(BufWriter::with_capacity(1 << 20, file))
            }
        };
        let n: usize = parts.iter().map(|p| p.len()).sum();
        let n = u32::try_from(n).map_err(|_| std::io::Error::new(ErrorKind::InvalidInput, "spill entry over 4 GiB"))?;
        out.write_all(&n.to_le_bytes())?;
        parts.iter().try_for_each(|p| out.write_all(p))?;
        self.len += 4 + u64::from(n);
        Ok(())
    }

    /// The file, flushed, for reading back (or the first write error).
    pub fn reader(self) -> std::io::Result<SpillReader> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let file = self.out.map(|w| w.into_inner().map_err(|e| e.into_error())).transpose()?;
        Ok(SpillReader { file })
    }
}

/// A spill's entries, read back.
pub struct SpillReader {
    file: Option<File>,
}

impl SpillReader {
    /// The entry at `at` (a position `push` returned), into `buf`: one positioned read for
    /// an entry of up to `FIRST_READ` bytes (finalize reads one per candidate pair), and the
    /// reader is not moved, so threads can share it.
    pub fn read_at(&self, at: u64, buf: &mut Vec<u8>) -> std::io::Result<()> {
        let Some(file) = self.file.as_ref() else { return Err(ErrorKind::UnexpectedEof.into()) };
        buf.clear();
        buf.resize(FIRST_READ, 0);
        let mut got = 0;
        while got < 4 {
            match read_at(file, &mut buf[got..], at + got as u64)? {
                0 => return Err(ErrorKind::UnexpectedEof.into()),
                n => got += n,
            }
        }
        let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        buf.resize(len.max(FIRST_READ - 4) + 4, 0);
        while got < len + 4 {
            match read_at(file, &mut buf[got..len + 4], at + got as u64)? {
                0 => return Err(ErrorKind::UnexpectedEof.into()),
                n => got += n,
            }
        }
        buf.truncate(len + 4);
        buf.drain(..4);
        Ok(())
    }

    /// Calls `f` with every entry, in the order written.
    pub fn each(&mut self, mut f: impl FnMut(&[u8])) -> std::io::Result<()> {
        let Some(file) = self.file.as_mut() else { return Ok(()) };
        file.seek(SeekFrom::Start(0))?;
        let mut r = BufReader::with_capacity(1 << 20, &*file);
        let mut buf = Vec::new();
        loop {
            match read_entry(&mut r, &mut buf) {
                Err(e) if e.kind() == ErrorKind::UnexpectedEof && buf.is_empty() => return Ok(()),
                other => other?,
            }
            f(&buf);
        }
    }
}

/// Bytes `SpillReader::read_at` asks for first: most entries (an instruction's shingles, a
/// sketch) are shorter.
const FIRST_READ: usize = 8 << 10;

/// Reads from `file` at `offset` into `buf`, without moving the file's position.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buf, offset);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buf, offset);
}

/// Reads one length-prefixed entry into `buf` (left empty at the end of the file).
fn read_entry(r: &mut impl Read, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.clear();
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    buf.resize(u32::from_le_bytes(len) as usize, 0);
    r.read_exact(buf)
}

/// The bytes of `values`, each turned by `to` (`u64::to_le_bytes`), into `buf`.
pub fn to_bytes<T: Copy, const N: usize>(values: &[T], to: impl Fn(T) -> [u8; N], buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend(values.iter().flat_map(|v| to(*v)));
}

/// The values of `bytes`, each `N` turned by `from` (`u64::from_le_bytes`), into `out`.
pub fn from_bytes<T, const N: usize>(bytes: &[u8], from: impl Fn([u8; N]) -> T, out: &mut Vec<T>) {
    out.clear();
    out.extend(bytes.chunks_exact(N).map(|b| from(b.try_into().unwrap_or([0; N]))));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_by_position_and_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = Spill::in_dir(dir.path());
        let a = s.push(&[b"ab", b"c"]);
        let b = s.push(&[]);
        let c = s.push(&[b"xyz"]);
        let mut r = s.reader().expect("reader");
        let mut buf = Vec::new();
        r.read_at(c, &mut buf).expect("c");
        assert_eq!(buf, b"xyz");
        r.read_at(a, &mut buf).expect("a");
        assert_eq!(buf, b"abc");
        r.read_at(b, &mut buf).expect("b");
        assert!(buf.is_empty());
        let mut all = Vec::new();
        r.each(|e| all.push(e.to_vec())).expect("each");
        assert_eq!(all, [b"abc".to_vec(), Vec::new(), b"xyz".to_vec()]);
    }

    #[test]
    fn entries_longer_than_the_first_read_and_at_the_end_come_back_whole() {
        // Synthetic: entries on both sides of `FIRST_READ`, the last one shorter than it at
        // the end of the file, read back from two threads sharing the reader.
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = Spill::in_dir(dir.path());
        let entries: Vec<Vec<u8>> = [FIRST_READ - 5, FIRST_READ - 4, FIRST_READ - 3, 3 * FIRST_READ + 1, 1, 7]
            .iter()
            .map(|&n| (0..n).map(|i| (i % 251) as u8).collect())
            .collect();
        let at: Vec<u64> = entries.iter().map(|e| s.push(&[e])).collect();
        let r = s.reader().expect("reader");
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    let mut buf = Vec::new();
                    for (e, &p) in entries.iter().zip(&at).rev() {
                        r.read_at(p, &mut buf).expect("read");
                        assert_eq!(&buf, e);
                    }
                });
            }
        });
        // The file's end, and a position whose length runs past it: no entry.
        let end = at.last().copied().unwrap_or_default() + 4 + 7;
        for p in [end, end - 7] {
            assert_eq!(r.read_at(p, &mut Vec::new()).map_err(|e| e.kind()), Err(ErrorKind::UnexpectedEof), "{p}");
        }
    }

    #[test]
    fn a_failed_write_is_returned_by_reader() {
        // Synthetic: a spill whose directory is gone cannot make its file; the build reports
        // that when it reads the spill back, naming it.
        let dir = tempfile::tempdir().expect("tempdir");
        let gone = dir.path().join("gone");
        let mut s = Spill::in_dir(&gone);
        assert_eq!(s.push(&[b"abc"]), 0);
        assert_eq!(s.push(&[b"d"]), 0, "nothing was written");
        assert_eq!(s.reader().err().map(|e| e.kind()), Some(ErrorKind::NotFound));
    }

    #[test]
    fn an_empty_spill_has_no_entries() {
        let mut r = Spill::default().reader().expect("reader");
        let mut n = 0;
        r.each(|_| n += 1).expect("each");
        assert_eq!(n, 0);
        assert!(r.read_at(0, &mut Vec::new()).is_err());
    }
}
