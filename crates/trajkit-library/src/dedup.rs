//! `--dedup exact|near` of `trajkit stats` and `trajkit export`: count each duplicate group
//! once, keeping its first trajectory in library order. Without it, every attempt counts.

use std::str::FromStr;

use rusqlite::Connection;

use crate::error::LibraryError;
use crate::row::Row;

/// Which duplicates count once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dedup {
    /// Every trajectory (today's figures and outputs, byte for byte).
    #[default]
    None,
    /// One per exact duplicate group (`duplicate_group`).
    Exact,
    /// One per near-duplicate group (`near_duplicate_group`; exact duplicates included).
    Near,
}

impl FromStr for Dedup {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Dedup::None),
            "exact" => Ok(Dedup::Exact),
            "near" => Ok(Dedup::Near),
            _ => Err(format!("--dedup must be exact or near, got {s:?}")),
        }
    }
}

impl Dedup {
    /// The group a row counts once in (`None` without deduplication).
    pub fn group<'a>(&self, row: &'a Row) -> Option<&'a str> {
        match self {
            Dedup::None => None,
            Dedup::Exact => Some(&row.duplicate_group),
            Dedup::Near => Some(row.near_duplicate_group.as_deref().unwrap_or(&row.duplicate_group)),
        }
    }

    /// The index column of the group.
    fn column(&self) -> Option<&'static str> {
        match self {
            Dedup::None => None,
            Dedup::Exact => Some("duplicate_group"),
            Dedup::Near => Some("coalesce(near_duplicate_group, duplicate_group)"),
        }
    }

    /// On a (read-only) connection, shadows `trajectories` with a temporary view of each
    /// group's first trajectory, so every statistic that follows counts groups once.
    pub fn apply(&self, conn: &Connection, path: &std::path::Path) -> Result<(), LibraryError> {
        let Some(column) = self.column() else { return Ok(()) };
        conn.execute_batch(&format!(
            "CREATE TEMP VIEW trajectories AS SELECT * FROM main.trajectories
             WHERE ordinal IN (SELECT min(ordinal) FROM main.trajectories GROUP BY {column})"
        ))
        .map_err(|source| LibraryError::Sqlite { path: path.to_path_buf(), source })
    }
}
