//! trajkit's fuzz targets, shared by the coverage-guided AFL++ entry point (`trajkit-afl`),
//! the outcome-guided mutation fuzzer (`trajkit-fuzz`) and the regression tests
//! (`tests/regressions.rs`): each target is one harness function in `targets`.

pub mod frame;
pub mod mutate;
pub mod seeds;
pub mod targets;
