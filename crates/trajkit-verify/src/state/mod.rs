//! Environment state: read-only capture of SQLite databases into a content-addressed
//! store, streaming diffs between states, and checks of a change against an expectation.
//! Formats and rules: docs/state.md.

pub mod capture;
pub mod check;
pub mod diff;
pub mod error;
pub mod schema;
pub mod store;
pub mod value;

pub use capture::{capture, open_read_only, Capture, CaptureStats};
pub use check::{check, CheckReport, Expectation};
pub use diff::{diff, ChangeKind, DiffSink, DiffSummary, RowChange, SchemaChange, Side};
pub use error::StateError;
pub use schema::IgnoreSpec;
pub use store::{Snapshot, Store};
pub use value::Val;
