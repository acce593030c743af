//! The trajectory library: build (validate, score, deduplicate, split), the SQLite
//! index, statistics, and reading a built library back.

mod attempt_keys;
pub mod build;
pub mod clusters;
pub mod contamination;
pub mod coverage;
pub mod dedup;
mod digest;
pub mod error;
pub mod finalize;
pub mod index;
pub mod latency;
pub mod layout;
pub mod minhash;
pub mod near;
mod numbering;
pub mod partial;
pub mod plan;
pub mod read;
mod read_ahead;
pub mod registry;
pub mod row;
pub mod rows_out;
pub mod score;
pub mod seek;
mod shard_digests;
pub mod shards;
pub mod signatures;
pub mod spill;
pub mod split;
pub mod stats;
mod task_rank;
mod write_behind;

pub use build::{build, build_with, BuildOptions, BuildSession, BuildSummary, Finisher, Progress, Quiet};
pub use clusters::ClusterOptions;
pub use contamination::ContaminationOptions;
pub use dedup::Dedup;
pub use error::LibraryError;
pub use finalize::finalize;
pub use partial::{build_partial, PartialSummary};
pub use plan::{plan, BuildPlan, FileGroup, PlannedFile};
pub use read::{Library, Records, Rows, LIBRARY_KIND, ROWS_PATH};
pub use registry::Registry;
pub use row::Row;
pub use split::SplitConfig;
