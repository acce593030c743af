//! The allocator tuning shared by the two programs that declare mimalloc as their global
//! allocator: the `trajkit` binary and the Python package's extension module.

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
