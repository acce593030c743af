//! Verification: what can be checked about trajectories and the environments and
//! publications around them, beyond reading them.

pub mod admission;
pub mod counterfactual;
pub mod env;
pub mod manifest;
pub mod replay;
pub mod state;
