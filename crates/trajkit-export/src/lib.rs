//! From a library to what people use: SFT exports in trainer formats, next-action
//! scoring, and the HTML gallery.

pub mod atif;
pub mod card;
pub mod error;
pub mod evaluate;
pub mod export;
pub mod gallery;
pub mod openai;
pub mod output;
pub mod parquet;
pub mod rows;
pub mod select;
pub mod shard;
pub mod sharegpt;
pub mod template;
pub mod views;

pub use error::ExportError;
pub use export::{export, ExportOptions, ExportSummary, Format, Redactor};
pub use rows::View;
pub use select::{Filter, Purpose, Selection, Split};
