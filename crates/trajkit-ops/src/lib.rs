//! The operations the CLI, the Python package and Ray call: `convert`, `build` and
//! `export` wired around the library crates (atomic output, the gallery, the redaction
//! engine), with typed errors. Callers bring their own progress display and thread pool.

pub mod build;
pub mod convert;
pub mod error;
pub mod export;
pub mod output;
pub mod redaction;

pub use build::{build, BuildRequest};
pub use convert::{convert, Converted, Silent};
pub use error::OpsError;
pub use export::{export, ExportRequest, Exported};
pub use redaction::{Engine, RedactionOptions};

/// `--max-record-mib`'s default: the read driver's own limit, in MiB.
pub const DEFAULT_MAX_RECORD_MIB: u64 = (trajkit_formats::pipeline::DEFAULT_MAX_RECORD_BYTES >> 20) as u64;

/// Bytes of a `--max-record-mib` value (at least 1 MiB, at most what memory can address).
pub fn record_bytes(mib: u64) -> usize {
    usize::try_from(mib.clamp(1, 1 << 20) << 20).unwrap_or(usize::MAX)
}
