//! From a library to what people use: SFT exports in trainer formats, next-action
//! scoring, and the HTML gallery.

pub mod gallery;
