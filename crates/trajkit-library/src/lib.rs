//! The trajectory library: build (validate, score, deduplicate, split), the SQLite
//! index, statistics, and reading a built library back.

pub mod build;
pub mod coverage;
pub mod error;
pub mod index;
pub mod latency;
pub mod layout;
pub mod read;
pub mod registry;
pub mod row;
pub mod rows_out;
pub mod score;
pub mod seek;
pub mod shards;
pub mod split;
pub mod stats;

pub use build::{build, build_with, BuildOptions, BuildSummary, Finisher, Progress, Quiet};
pub use error::LibraryError;
pub use read::{Library, Records, Rows, LIBRARY_KIND, ROWS_PATH};
pub use registry::Registry;
pub use row::Row;
pub use split::SplitConfig;
