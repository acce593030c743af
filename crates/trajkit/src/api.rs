//! The commands the Python package calls with structured results instead of printed
//! ones: the same functions the CLI's `run` wraps, and the CLI's own flag parsing.

use clap::Parser;

pub use crate::commands::build::{build, BuildArgs};
pub use crate::commands::convert::{convert, Converted};

/// `trajkit build`'s flags alone, so Python options parse exactly as the CLI's.
#[derive(Parser)]
#[command(name = "trajkit build", no_binary_name = true)]
struct BuildFlags {
    #[command(flatten)]
    args: BuildArgs,
}

/// Parses `trajkit build`'s flags (without the program and command names).
pub fn parse_build<I: IntoIterator<Item = String>>(flags: I) -> Result<BuildArgs, clap::Error> {
    BuildFlags::try_parse_from(flags).map(|f| f.args)
}
