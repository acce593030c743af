//! Verification: what can be checked about trajectories and the environments and
//! publications around them, beyond reading them.

pub mod admission;
pub mod completeness;
pub mod counterfactual;
pub mod diagnose;
pub mod env;
pub mod finite;
pub mod gate;
pub mod isolation;
pub mod ledger;
pub mod manifest;
pub mod redact;
pub mod replay;
pub mod schedule;
pub mod state;
