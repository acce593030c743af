//! The trajectory library: build, index, statistics.
