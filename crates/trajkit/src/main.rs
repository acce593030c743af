//! `trajkit`: the command-line program. All of it is [`trajkit::cli::run`]; this file
//! only chooses the allocator.

use std::process::ExitCode;

/// mimalloc: the read path allocates and frees many small JSON values per record.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    trajkit::pipe::install_panic_hook();
    ExitCode::from(trajkit::cli::run(std::env::args_os()))
}
