//! `trajkit`: the command-line program. All of it is [`trajkit::cli::run`]; this file
//! only chooses the allocator.

use std::process::ExitCode;

/// mimalloc: the read path allocates and frees many small JSON values per record.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `purge_delay` option (its index in `mi_option_e`, the same in mimalloc v2 and v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps freed memory committed instead of returning it to the OS after 10 ms: the read
/// path frees and reallocates record-sized blocks continuously, and re-faulting
/// (zeroing) transparent huge pages cost a fifth of the run. Peak memory stays bounded by
/// the batch size.
fn tune_allocator() {
    // SAFETY: mi_option_set only stores an integer option; called before any threads start.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}

fn main() -> ExitCode {
    tune_allocator();
    trajkit::pipe::install_panic_hook();
    ExitCode::from(trajkit::cli::run(std::env::args_os()))
}
