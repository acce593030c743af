//! A writer whose sink (a compressor) runs on a thread of its own, a few chunks behind the
//! producer: writing a library's rows then takes two cores, one reading the index and
//! serializing, one compressing. The counterpart of `read_ahead`. Each `write` reaches the
//! sink as one `write_all` of the same bytes: a compressor's output can depend on how its
//! input is cut, and the bytes written stay those of writing to the sink directly.

use std::io::{self, Write};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};

/// Bytes handed to the thread at a time (at least).
const CHUNK: usize = 1 << 20;
/// Chunks waiting for the thread at most (memory: about `BEHIND + 2` chunks).
const BEHIND: usize = 4;

/// `Write` into chunks that a thread writes to the sink; `finish` returns the sink.
pub struct WriteBehind<W: Write + Send + 'static> {
    chunks: Option<Sender<Chunk>>,
    /// Written chunks, returned by the thread for reuse.
    spent: Receiver<Chunk>,
    chunk: Chunk,
    thread: Option<JoinHandle<io::Result<W>>>,
}

impl<W: Write + Send + 'static> WriteBehind<W> {
    /// Starts writing to `sink` on a new thread named `name`.
    pub fn new(sink: W, name: &str) -> io::Result<WriteBehind<W>> {
        let (chunks, rx) = bounded(BEHIND);
        let (tx, spent) = bounded(BEHIND + 2);
        let thread = std::thread::Builder::new().name(name.into()).spawn(move || drain(sink, &rx, &tx))?;
        Ok(WriteBehind { chunks: Some(chunks), spent, chunk: Chunk::default(), thread: Some(thread) })
    }

    /// Writes what is left, waits for the thread, and returns the sink (or the first error
    /// writing to it).
    pub fn finish(mut self) -> io::Result<W> {
        self.send()?;
        self.chunks = None;
        self.join()
    }

    /// Hands the current chunk to the thread; the thread's error if it has stopped.
    fn send(&mut self) -> io::Result<()> {
        if self.chunk.writes.is_empty() {
            return Ok(());
        }
        let next = self.spent.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.chunk, next);
        let sent = self.chunks.as_ref().is_some_and(|c| c.send(full).is_ok());
        if sent {
            return Ok(());
        }
        // The thread stopped at a write error: that error.
        self.chunks = None;
        match self.join() {
            Ok(_) => Err(io::Error::other("the writing thread stopped")),
            Err(e) => Err(e),
        }
    }

    fn join(&mut self) -> io::Result<W> {
        let thread = self.thread.take().ok_or_else(|| io::Error::other("the writing thread already ended"))?;
        thread.join().map_err(|_| io::Error::other("the writing thread panicked"))?
    }
}

/// Bytes of several writes, and where each ends.
#[derive(Default)]
struct Chunk {
    bytes: Vec<u8>,
    writes: Vec<usize>,
}

/// The thread's loop: every chunk into `sink` until the producer is done, or the first error.
fn drain<W: Write>(mut sink: W, chunks: &Receiver<Chunk>, spent: &Sender<Chunk>) -> io::Result<W> {
    for mut chunk in chunks {
        let mut from = 0;
        for &end in &chunk.writes {
            sink.write_all(chunk.bytes.get(from..end).unwrap_or_default())?;
            from = end;
        }
        chunk.bytes.clear();
        chunk.writes.clear();
        // The producer may be done: a chunk it cannot reuse is dropped here.
        let _ = spent.try_send(chunk);
    }
    Ok(sink)
}

impl<W: Write + Send + 'static> Write for WriteBehind<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.chunk.bytes.extend_from_slice(bytes);
        self.chunk.writes.push(self.chunk.bytes.len());
        if self.chunk.bytes.len() >= CHUNK {
            self.send()?;
        }
        Ok(bytes.len())
    }

    /// Hands over what is buffered; the sink itself is flushed by its owner after `finish`.
    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// Dropped without `finish` (an error on the way): the thread writes what it has and ends.
impl<W: Write + Send + 'static> Drop for WriteBehind<W> {
    fn drop(&mut self) {
        self.chunks = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that notes each write's length and fails once it holds more than `limit` bytes.
    struct Limited {
        got: Vec<u8>,
        calls: Vec<usize>,
        limit: usize,
    }

    impl Write for Limited {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if self.got.len() + bytes.len() > self.limit {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
            }
            self.got.extend_from_slice(bytes);
            self.calls.push(bytes.len());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn bytes_arrive_in_order_and_the_sink_comes_back() {
        // Synthetic: writes of every size across chunk boundaries reach the sink in order,
        // one sink write each, and the sink comes back.
        let mut w = WriteBehind::new(Limited { got: Vec::new(), calls: Vec::new(), limit: usize::MAX }, "test")
            .expect("thread");
        let (mut want, mut calls) = (Vec::new(), Vec::new());
        for n in [1, 7, CHUNK - 8, CHUNK, 3 * CHUNK + 5, 2] {
            let bytes: Vec<u8> = (0..n).map(|i| (i % 253) as u8).collect();
            w.write_all(&bytes).expect("write");
            want.extend_from_slice(&bytes);
            calls.push(n);
        }
        w.flush().expect("flush");
        w.write_all(b"end").expect("write");
        want.extend_from_slice(b"end");
        calls.push(3);
        let sink = w.finish().expect("finish");
        assert_eq!((sink.got == want, sink.calls), (true, calls));
    }

    #[test]
    fn the_sinks_error_reaches_the_writer() {
        // Synthetic: a sink that fails partway (a full disk); a later write or `finish`
        // returns its error, and nothing hangs.
        let mut w = WriteBehind::new(Limited { got: Vec::new(), calls: Vec::new(), limit: CHUNK + 10 }, "test")
            .expect("thread");
        let big = vec![1u8; 8 * CHUNK];
        let wrote = w.write_all(&big).and_then(|()| w.finish().map(|_| ()));
        assert_eq!(wrote.map_err(|e| e.kind()), Err(io::ErrorKind::StorageFull));
    }

    #[test]
    fn dropped_unfinished_it_ends_its_thread() {
        let mut w = WriteBehind::new(Limited { got: Vec::new(), calls: Vec::new(), limit: usize::MAX }, "test")
            .expect("thread");
        w.write_all(&vec![0u8; 2 * CHUNK]).expect("write");
        drop(w);
    }
}
