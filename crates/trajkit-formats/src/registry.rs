//! The readers trajkit knows, in detection order.

use crate::reader::Reader;
use crate::{atif, gym};

static ATIF: atif::AtifReader = atif::AtifReader;
static GYM: gym::GymReader = gym::GymReader;
static ALL: [&'static dyn Reader; 2] = [&ATIF, &GYM];

/// Every registered reader.
pub fn all() -> &'static [&'static dyn Reader] {
    &ALL
}

/// The reader for a family name (`--format`).
pub fn by_name(name: &str) -> Option<&'static dyn Reader> {
    ALL.iter().copied().find(|r| r.name() == name)
}

/// Every family name a user may pass to `--format`.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|r| r.name()).collect()
}
