//! The CLI's flag parsing for the Python package: Python's `build` and `Library.export`
//! take the commands' flags, parse them exactly as the CLI does, and call the same
//! `trajkit_ops` functions with the requests these give.

use clap::Parser;

pub use crate::commands::build::BuildArgs;
pub use crate::commands::export::ExportArgs;

/// `trajkit build`'s flags alone, so Python options parse exactly as the CLI's.
#[derive(Parser)]
#[command(name = "trajkit build", no_binary_name = true)]
struct BuildFlags {
    #[command(flatten)]
    args: BuildArgs,
}

/// `trajkit export`'s flags alone.
#[derive(Parser)]
#[command(name = "trajkit export", no_binary_name = true)]
struct ExportFlags {
    #[command(flatten)]
    args: ExportArgs,
}

/// Parses `trajkit build`'s flags (without the program and command names).
pub fn parse_build<I: IntoIterator<Item = String>>(flags: I) -> Result<BuildArgs, clap::Error> {
    BuildFlags::try_parse_from(flags).map(|f| f.args)
}

/// Parses `trajkit export`'s flags (without the program and command names).
pub fn parse_export<I: IntoIterator<Item = String>>(flags: I) -> Result<ExportArgs, clap::Error> {
    ExportFlags::try_parse_from(flags).map(|f| f.args)
}
