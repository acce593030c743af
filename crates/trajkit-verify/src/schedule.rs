//! Deterministic paired schedules for comparing arms (agents, prompts, models): blocks of
//! one candidate per arm sharing the block's seed and app, block seeds derived from a root
//! seed by SHA-256 over a fixed byte encoding, apps spread over blocks in balance. The same
//! inputs always give the same bytes. Format and encoding: docs/schedule.md.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The `format` of schedules this version writes; also the domain prefix of block seeds.
pub const FORMAT: &str = "trajkit.schedule/1";

/// Arm names when none are given.
pub const DEFAULT_ARMS: [&str; 3] = ["A", "B", "C"];

/// Blocks when not given.
pub const DEFAULT_BLOCKS: u32 = 32;

/// Most blocks a schedule may have.
pub const MAX_BLOCKS: u32 = 1_000_000;

/// Why a schedule cannot be built from the inputs.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScheduleError {
    #[error("--seed: expected 64 hex digits (32 bytes), got {0:?}")]
    Seed(String),
    #[error("--app: at least one app is needed")]
    NoApps,
    #[error("--arm-name: at least two arms are needed to compare")]
    TooFewArms,
    #[error("{what}: {name:?} is given twice")]
    Duplicate { what: &'static str, name: String },
    #[error("{what}: {name:?} must be non-empty without whitespace")]
    BadName { what: &'static str, name: String },
    #[error("--blocks: must be between 1 and {MAX_BLOCKS}, got {0}")]
    Blocks(u64),
}

/// One block: the arms' candidates that share a seed and an app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    pub index: u32,
    pub seed: String,
    pub app: String,
    /// Candidate ids, one per arm, in arm order.
    pub candidates: Vec<String>,
}

/// One run to make: an arm on a block's app with the block's seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: String,
    pub block: u32,
    pub arm: String,
    pub app: String,
    pub seed: String,
}

/// A paired schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub format: String,
    pub root_seed: String,
    pub apps: Vec<String>,
    pub arms: Vec<String>,
    pub blocks: Vec<Block>,
    pub candidates: Vec<Candidate>,
}

/// Parses 64 hex digits (either case) into the 32-byte root seed.
pub fn parse_seed(hex: &str) -> Result<[u8; 32], ScheduleError> {
    let bad = || ScheduleError::Seed(hex.to_string());
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// SHA-256 of `trajkit.schedule/1` (18 ASCII bytes), one zero byte, the 32 root-seed bytes
/// and the block index as a 4-byte big-endian unsigned integer: 55 bytes in all.
pub fn block_seed(root: &[u8; 32], index: u32) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(FORMAT.as_bytes());
    h.update([0u8]);
    h.update(root);
    h.update(index.to_be_bytes());
    h.finalize().into()
}

fn check_names(what: &'static str, names: &[String]) -> Result<(), ScheduleError> {
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() || n.chars().any(char::is_whitespace) {
            return Err(ScheduleError::BadName { what, name: n.clone() });
        }
        if names[..i].contains(n) {
            return Err(ScheduleError::Duplicate { what, name: n.clone() });
        }
    }
    Ok(())
}

/// Builds the schedule. Apps go to blocks in balance: blocks are ordered by their seeds
/// (bytes ascending) and the k-th block in that order gets `apps[k % apps.len()]`, so each
/// app gets ⌊blocks/apps⌋ or ⌈blocks/apps⌉ blocks (earlier apps the extra ones) and which
/// blocks an app gets depends on the root seed only.
pub fn build(root_hex: &str, apps: &[String], arms: &[String], blocks: u64) -> Result<Schedule, ScheduleError> {
    let root = parse_seed(root_hex)?;
    if apps.is_empty() {
        return Err(ScheduleError::NoApps);
    }
    if arms.len() < 2 {
        return Err(ScheduleError::TooFewArms);
    }
    check_names("--app", apps)?;
    check_names("--arm-name", arms)?;
    if blocks == 0 || blocks > u64::from(MAX_BLOCKS) {
        return Err(ScheduleError::Blocks(blocks));
    }
    let n = blocks as u32;
    let seeds: Vec<[u8; 32]> = (0..n).map(|i| block_seed(&root, i)).collect();
    let mut order: Vec<u32> = (0..n).collect();
    order.sort_by(|a, b| seeds[*a as usize].cmp(&seeds[*b as usize]).then(a.cmp(b)));
    let mut app_of = vec![0usize; n as usize];
    for (k, &block) in order.iter().enumerate() {
        app_of[block as usize] = k % apps.len();
    }
    let width = (n - 1).max(1).to_string().len().max(2);
    let mut out = Schedule {
        format: FORMAT.to_string(),
        root_seed: trajkit_model::canonical::hex(&root),
        apps: apps.to_vec(),
        arms: arms.to_vec(),
        blocks: Vec::with_capacity(n as usize),
        candidates: Vec::with_capacity(n as usize * arms.len()),
    };
    for i in 0..n {
        let seed = trajkit_model::canonical::hex(&seeds[i as usize]);
        let app = apps[app_of[i as usize]].clone();
        let ids: Vec<String> = arms.iter().map(|arm| format!("b{i:0width$}-{arm}")).collect();
        for (id, arm) in ids.iter().zip(arms) {
            out.candidates.push(Candidate {
                id: id.clone(),
                block: i,
                arm: arm.clone(),
                app: app.clone(),
                seed: seed.clone(),
            });
        }
        out.blocks.push(Block { index: i, seed, app, candidates: ids });
    }
    Ok(out)
}

/// The schedule's JSON: two-space indentation, fields in declaration order, final newline.
pub fn to_json(s: &Schedule) -> Vec<u8> {
    // Strings and integers only: serializing into memory cannot fail.
    let mut bytes = serde_json::to_vec_pretty(s).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests;
