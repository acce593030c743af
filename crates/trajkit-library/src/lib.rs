//! The trajectory library: build (validate, score, deduplicate, split), the SQLite
//! index, statistics, and reading a built library back.

pub mod error;
pub mod read;
pub mod row;

pub use error::LibraryError;
pub use read::{Library, Records, Rows, LIBRARY_KIND, ROWS_PATH};
pub use row::Row;
