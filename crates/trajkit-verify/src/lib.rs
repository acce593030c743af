//! Verification: what can be checked about trajectories and the environments and
//! publications around them, beyond reading them.

pub mod completeness;
pub mod diagnose;
pub mod finite;
pub mod ledger;
pub mod manifest;
pub mod redact;
pub mod schedule;
