//! Which library rows an export takes: selection, split, sources, and the eligibility rules
//! that keep training data clean (training needs `training_eligible`; `protected_evaluation`
//! rows only ever leave the library in an explicit evaluation export of that split).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use trajkit_library::Row;

use crate::error::ExportError;

/// `--selection`: which outcomes (or quality tiers) to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum Selection {
    All,
    Success,
    Failure,
    /// `quality_tier >= T`.
    TierAtLeast(u8),
}

impl FromStr for Selection {
    type Err = ExportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "all" => Ok(Selection::All),
            "success" => Ok(Selection::Success),
            "failure" => Ok(Selection::Failure),
            _ => {
                let tier = s.strip_prefix("tier>=").and_then(|t| t.parse::<u8>().ok()).filter(|t| *t <= 4);
                tier.map(Selection::TierAtLeast).ok_or_else(|| {
                    ExportError::Usage(format!(
                        "--selection {s:?}: expected all, success, failure or tier>=T (T in 0..=4)"
                    ))
                })
            }
        }
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selection::All => f.write_str("all"),
            Selection::Success => f.write_str("success"),
            Selection::Failure => f.write_str("failure"),
            Selection::TierAtLeast(t) => write!(f, "tier>={t}"),
        }
    }
}

impl From<Selection> for String {
    fn from(s: Selection) -> String {
        s.to_string()
    }
}

/// The library's splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    Train,
    Validation,
    Test,
    ProtectedEvaluation,
}

impl Split {
    /// The name the library's rows use.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Validation => "validation",
            Split::Test => "test",
            Split::ProtectedEvaluation => "protected_evaluation",
        }
    }
}

impl FromStr for Split {
    type Err = ExportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "train" => Ok(Split::Train),
            "validation" => Ok(Split::Validation),
            "test" => Ok(Split::Test),
            "protected_evaluation" => Ok(Split::ProtectedEvaluation),
            _ => Err(ExportError::Usage(format!(
                "--split {s:?}: expected train, validation, test or protected_evaluation"
            ))),
        }
    }
}

/// What the export is for: training data, or an explicit evaluation set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    Training,
    Evaluation,
}

/// The row filter of one export.
#[derive(Debug, Clone, Serialize)]
pub struct Filter {
    pub selection: Selection,
    pub split: Split,
    /// Registry source names to keep; empty keeps every source.
    pub sources: Vec<String>,
    pub purpose: Purpose,
    /// `--dedup`: each duplicate group's first admitted row only.
    #[serde(skip)]
    pub dedup: trajkit_library::Dedup,
}

/// Why a row was left out (the keys of the card's `skipped` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    OtherSplit,
    OtherSource,
    NotSelected,
    NotTrainingEligible,
    ProtectedEvaluation,
    /// A later member of a duplicate group (`--dedup`).
    Duplicate,
}

impl Skip {
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::OtherSplit => "other_split",
            Skip::OtherSource => "other_source",
            Skip::NotSelected => "not_selected",
            Skip::NotTrainingEligible => "not_training_eligible",
            Skip::ProtectedEvaluation => "protected_evaluation",
            Skip::Duplicate => "duplicate",
        }
    }
}

impl Filter {
    /// Checks the combination of flags before any row is read: a training export of the
    /// protected split is refused outright.
    pub fn validate(&self) -> Result<(), ExportError> {
        if self.purpose == Purpose::Training && self.split == Split::ProtectedEvaluation {
            return Err(ExportError::Usage(
                "protected_evaluation rows never enter a training export; an evaluation export of that split \
                 needs --evaluation"
                    .into(),
            ));
        }
        Ok(())
    }

    /// `Ok(())` when the row goes into the export, else the first rule that keeps it out.
    pub fn admit(&self, row: &Row) -> Result<(), Skip> {
        if row.split != self.split.as_str() {
            return Err(Skip::OtherSplit);
        }
        if !self.sources.is_empty() && !self.sources.contains(&row.source) {
            return Err(Skip::OtherSource);
        }
        let selected = match self.selection {
            Selection::All => true,
            Selection::Success => row.status == "success",
            Selection::Failure => row.status == "failure",
            Selection::TierAtLeast(t) => row.quality_tier >= t,
        };
        if !selected {
            return Err(Skip::NotSelected);
        }
        if self.purpose == Purpose::Training {
            // Defence in depth: the split check above already excludes it for a validated filter.
            if row.split == Split::ProtectedEvaluation.as_str() {
                return Err(Skip::ProtectedEvaluation);
            }
            if !row.training_eligible {
                return Err(Skip::NotTrainingEligible);
            }
        }
        Ok(())
    }
}

/// Counts of skipped rows by reason, for the card and the command's summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkipCounts(pub BTreeMap<&'static str, u64>);

impl SkipCounts {
    pub fn add(&mut self, skip: Skip) {
        *self.0.entry(skip.as_str()).or_default() += 1;
    }
}
