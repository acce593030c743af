//! Leakage-safe splits: a task's split comes from hashing its key (never a trajectory
//! id), so every attempt, source and view of one task lands in the same split.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The split of tasks from `evaluation_only` sources, wherever else they appear.
pub const PROTECTED: &str = "protected_evaluation";

/// Split fractions and the hash salt; recorded in `build.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitConfig {
    pub train: f64,
    pub validation: f64,
    pub test: f64,
    pub salt: String,
}

impl Default for SplitConfig {
    fn default() -> Self {
        SplitConfig { train: 0.8, validation: 0.1, test: 0.1, salt: "trajkit-split-v1".into() }
    }
}

impl SplitConfig {
    /// Checks that the fractions are non-negative and sum to 1.
    pub fn validate(&self) -> Result<(), String> {
        let parts = [self.train, self.validation, self.test];
        if parts.iter().any(|f| !f.is_finite() || *f < 0.0) {
            return Err(format!("split fractions must be non-negative numbers, got {parts:?}"));
        }
        let sum: f64 = parts.iter().sum();
        if (sum - 1.0).abs() > 1e-9 {
            return Err(format!("split fractions must sum to 1, got {sum}"));
        }
        Ok(())
    }

    /// `train`, `validation` or `test` for a task key: the first 8 bytes of
    /// SHA-256(salt, NUL, key) as a big-endian integer, scaled to [0, 1).
    pub fn assign(&self, task_key: &str) -> &'static str {
        let mut h = Sha256::new();
        h.update(self.salt.as_bytes());
        h.update([0u8]);
        h.update(task_key.as_bytes());
        let digest = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let x = (u64::from_be_bytes(first) >> 11) as f64 / (1u64 << 53) as f64;
        if x < self.train {
            "train"
        } else if x < self.train + self.validation {
            "validation"
        } else {
            "test"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_key_same_split_and_fractions_hold_roughly() {
        let c = SplitConfig::default();
        assert_eq!(c.assign("swe:django__django-11099"), c.assign("swe:django__django-11099"));
        let mut counts = std::collections::HashMap::new();
        for i in 0..10_000 {
            *counts.entry(c.assign(&format!("task-{i}"))).or_insert(0) += 1;
        }
        let train = counts["train"];
        assert!((7_700..8_300).contains(&train), "{counts:?}");
        assert!(counts["validation"] > 800 && counts["test"] > 800, "{counts:?}");
    }

    #[test]
    fn salt_changes_assignment_and_bad_fractions_are_refused() {
        let a = SplitConfig::default();
        let b = SplitConfig { salt: "other".into(), ..SplitConfig::default() };
        let differ = (0..100).filter(|i| a.assign(&i.to_string()) != b.assign(&i.to_string())).count();
        assert!(differ > 10);
        assert!(SplitConfig { train: 0.5, ..SplitConfig::default() }.validate().is_err());
        assert!(SplitConfig { train: 1.0, validation: 0.0, test: 0.0, salt: String::new() }.validate().is_ok());
    }
}
