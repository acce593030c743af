//! `trajkit view`: a local, read-only web app over a built library — the overview, a
//! filtered and sorted trajectory list from the SQLite index, full-text search (an FTS5
//! sidecar built on first use), trajectory, task and side-by-side pages. Every value from
//! the data is escaped by the gallery's one escaping function. Documented in docs/view.md.

pub mod error;
pub mod fts;
pub mod list;
pub mod pages;
pub mod query;
pub mod server;
pub mod state;
pub mod text;
pub mod url;

pub use error::ViewError;
pub use server::{Server, ViewOptions};
pub use state::Redact;
