//! The allocator tuning shared by the two programs that declare mimalloc as their global
//! allocator: the `trajkit` binary and the Python package's extension module. mimalloc is
//! built without transparent huge pages (`no_thp` in Cargo.toml): a first touch of a huge
//! page zeroes 2 MiB, which cost 6-10 % of a run and inflated peak RSS by a third. It is
//! mimalloc 2 (`v2`): version 3 ran no faster and kept more freed pages committed, so a
//! build's peak grew with the corpus (docs/PERFORMANCE.md, step 114).
//!
//! Freed memory is returned to the OS after mimalloc's default delay (10 ms). Keeping it
//! committed instead (`purge_delay` -1) paid while huge pages were re-faulted; without them
//! it saves nothing measurable and a build's reading phase kept 20-60 MiB more
//! (docs/PERFORMANCE.md, step 78).

/// Hands the memory that the reading threads freed back to the OS. Pages freed on the
/// mapping threads (and the pages of threads that have exited) that are still committed
/// cannot be reused by a single-threaded phase after them (a build's finalize), which would
/// fault in fresh pages on top. Call it between a parallel phase and a serial one.
pub fn release_freed_memory() {
    // SAFETY: mi_collect only walks the calling thread's heap and the abandoned pages.
    unsafe { libmimalloc_sys::mi_collect(true) };
    // SAFETY: as above, on each thread of the current pool.
    rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
}
