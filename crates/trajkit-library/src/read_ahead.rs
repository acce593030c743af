//! A reader whose source (a decompressor) runs on a thread of its own, a few chunks ahead
//! of the consumer: decoding and parsing a library's rows then take two cores instead of
//! one. The thread ends at the source's end or error, or when the reader is dropped.

use std::io::{self, BufRead, Read};

use crossbeam_channel::{bounded, Receiver, Sender};

/// Bytes read from the source at a time.
const CHUNK: usize = 1 << 20;
/// Chunks decoded ahead of the consumer at most (memory: `AHEAD + 2` chunks).
const AHEAD: usize = 4;

/// `BufRead` over chunks a thread reads from the source.
pub struct ReadAhead {
    chunks: Receiver<io::Result<Vec<u8>>>,
    /// Emptied chunks, returned to the thread for reuse.
    spent: Sender<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
}

impl ReadAhead {
    /// Starts reading `source` on a new thread named `name`.
    pub fn new<R: Read + Send + 'static>(source: R, name: &str) -> io::Result<ReadAhead> {
        let (tx, chunks) = bounded(AHEAD);
        let (spent, reuse) = bounded(AHEAD + 2);
        std::thread::Builder::new().name(name.into()).spawn(move || pump(source, &tx, &reuse))?;
        Ok(ReadAhead { chunks, spent, chunk: Vec::new(), pos: 0 })
    }
}

/// The thread's loop: a chunk at a time until the end, an error (after the bytes read
/// before it) or a gone reader.
fn pump<R: Read>(mut source: R, tx: &Sender<io::Result<Vec<u8>>>, reuse: &Receiver<Vec<u8>>) {
    loop {
        let mut buf = reuse.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        buf.clear();
        let got = (&mut source).take(CHUNK as u64).read_to_end(&mut buf);
        if !buf.is_empty() && tx.send(Ok(buf)).is_err() {
            return;
        }
        match got {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

impl BufRead for ReadAhead {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.chunk.len() {
            match self.chunks.recv() {
                Ok(Ok(next)) => {
                    let spent = std::mem::replace(&mut self.chunk, next);
                    // The thread may have ended: a chunk it cannot reuse is dropped here.
                    let _ = self.spent.try_send(spent);
                    self.pos = 0;
                }
                Ok(Err(e)) => return Err(e),
                // The source ended (the thread dropped its sender).
                Err(_) => return Ok(&[]),
            }
        }
        Ok(self.chunk.get(self.pos..).unwrap_or_default())
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.chunk.len());
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic (no input file has a chunk boundary or a failing decoder to show): every
    /// byte arrives in order across chunk boundaries, and a source's error reaches the reader
    /// after the bytes before it.
    #[test]
    fn bytes_arrive_in_order_then_the_error() {
        let data: Vec<u8> = (0..(3 * CHUNK + 12_345)).map(|i| (i * 31 % 251) as u8).collect();
        let mut got = Vec::new();
        ReadAhead::new(io::Cursor::new(data.clone()), "test").unwrap().read_to_end(&mut got).unwrap();
        assert_eq!(got, data);

        let lines: Vec<String> = ReadAhead::new(io::Cursor::new(b"a\nbb\n\nccc".to_vec()), "test")
            .unwrap()
            .lines()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(lines, ["a", "bb", "", "ccc"]);

        struct Failing(usize);
        impl Read for Failing {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt deflate stream"));
                }
                let n = self.0.min(out.len());
                out[..n].fill(b'x');
                self.0 -= n;
                Ok(n)
            }
        }
        let mut reader = ReadAhead::new(Failing(CHUNK + 10), "test").unwrap();
        let mut got = Vec::new();
        let err = reader.read_to_end(&mut got).unwrap_err();
        assert_eq!(err.to_string(), "corrupt deflate stream");
        assert_eq!(got.len(), CHUNK + 10);
    }

    #[test]
    fn a_reader_dropped_early_stops_its_thread() {
        let endless = io::repeat(b'z');
        let mut reader = ReadAhead::new(endless, "test").unwrap();
        let mut first = [0u8; 10];
        reader.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"zzzzzzzzzz");
        drop(reader); // the thread's next send fails and it returns; nothing to join
    }
}
