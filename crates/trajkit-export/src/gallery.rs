//! The HTML gallery: a self-contained page showing what a library holds.
