//! The allocator tuning shared by the two programs that declare mimalloc as their global
//! allocator: the `trajkit` binary and the Python package's extension module. mimalloc is
//! built without transparent huge pages (`no_thp` in Cargo.toml): a first touch of a huge
//! page zeroes 2 MiB, which cost 6-10 % of a run and inflated peak RSS by a third.

/// mimalloc's `purge_delay` option (its index in `mi_option_e`, the same in mimalloc v2 and v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps freed memory committed instead of returning it to the OS after 10 ms: the read
/// path frees and reallocates record-sized blocks continuously, and re-faulting
/// (zeroing) transparent huge pages cost a fifth of the run. Peak memory stays bounded by
/// the batch size. Call it before reading starts.
pub fn tune_allocator() {
    // SAFETY: mi_option_set only stores an integer option.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}

/// Hands the memory that the reading threads freed back to the OS, and keeps handing
/// freed memory back until [`tune_allocator`] is called again. With purging off, pages
/// freed on the mapping threads (and the pages of threads that have exited) stay
/// committed, and a single-threaded phase after them (a build's finalize) cannot reuse
/// them: it faults in fresh pages on top, so peak RSS grew with the corpus. Call it between
/// a parallel phase and a serial one; a process that reads again afterwards (Python) calls
/// `tune_allocator` once the serial phase is over.
pub fn release_freed_memory() {
    // SAFETY: mi_option_set stores an integer option; mi_collect only walks the calling
    // thread's heap and the abandoned pages.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
        libmimalloc_sys::mi_collect(true);
    }
    // SAFETY: as above, on each thread of the current pool.
    rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
}
