//! trajkit's command line as a library: [`cli::run`] is what the `trajkit` binary and the
//! Python package's `trajkit` command execute, so both have the same flags, output and
//! exit codes.

pub mod alloc;
pub mod api;
pub mod cli;
mod commands;
pub mod pipe;
mod progress;
mod table;

pub use cli::{run, ReadArgs, ReadOptions};
