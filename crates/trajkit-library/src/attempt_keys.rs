//! Each trajectory's attempt keys (source, model, task, environment, locator, outcome), read
//! in one unsorted scan and ordered here: the statistics' success@k groups and attempts per
//! environment were two SQLite sorts of the whole table, texts compared by the sorter.

use std::cmp::Ordering;
use std::path::Path;

use rusqlite::Connection;
use rustc_hash::FxHashMap;
use serde_json::{json, Value};

use crate::error::LibraryError;
use crate::numbering::{number, renumber};

/// What the scan reads: `coalesce(model, '')` as success@k groups it, `environment` as is
/// (attempts per environment tell a missing one from an empty one).
const KEYS: &str = "SELECT source, coalesce(model, ''), task_key, status, path, line, document_index, ordinal,
  environment FROM trajectories";

/// One trajectory's keys; texts as numbers that follow the texts' byte order (SQLite's
/// BINARY collation) once `AttemptKeys::read` has renumbered them.
struct Attempt {
    source: u32,
    model: u32,
    task: u32,
    /// `None`: no environment (SQLite's `NULL`, which sorts first).
    environment: Option<u32>,
    path: u32,
    line: Option<i64>,
    document_index: Option<i64>,
    ordinal: i64,
    /// 2 success, 1 failure, 0 anything else.
    status: u8,
}

impl Attempt {
    /// success@k's order: by group (source, model, task), then source-locator order (path,
    /// line, document index; missing first, as SQLite orders `NULL`) and the ordinal.
    fn group_order(&self, other: &Attempt) -> Ordering {
        (self.source, self.model, self.task, self.path, self.line, self.document_index, self.ordinal).cmp(&(
            other.source,
            other.model,
            other.task,
            other.path,
            other.line,
            other.document_index,
            other.ordinal,
        ))
    }
}

/// Every trajectory's attempt keys, and the texts its numbers stand for.
pub(crate) struct AttemptKeys {
    rows: Vec<Attempt>,
    /// Environment texts by number (in byte order).
    environments: Vec<String>,
    /// The number of the empty environment (`coalesce(environment, '')` of a missing one).
    empty_environment: u32,
}

/// Texts numbered as the scan meets them (`numbering`), one table per kind of text.
#[derive(Default)]
struct Texts {
    sources: FxHashMap<String, u32>,
    models: FxHashMap<String, u32>,
    tasks: FxHashMap<String, u32>,
    paths: FxHashMap<String, u32>,
    environments: FxHashMap<String, u32>,
}

impl AttemptKeys {
    /// Reads every trajectory's keys in one scan of `trajectories` (the index at `path`).
    pub(crate) fn read(conn: &Connection, path: &Path) -> Result<AttemptKeys, LibraryError> {
        let sql = |source| LibraryError::Sqlite { path: path.to_path_buf(), source };
        let mut texts = Texts::default();
        let mut rows = Vec::new();
        let mut st = conn.prepare(KEYS).map_err(sql)?;
        let mut scan = st.query([]).map_err(sql)?;
        while let Some(r) = scan.next().map_err(sql)? {
            rows.push(texts.attempt(r).map_err(sql)?);
        }
        let empty_environment = number(&mut texts.environments, "");
        let [source, model, task, place] =
            [texts.sources, texts.models, texts.tasks, texts.paths].map(|map| renumber(map).1);
        let (environments, environment) = renumber(texts.environments);
        for a in &mut rows {
            a.source = source[a.source as usize];
            a.model = model[a.model as usize];
            a.task = task[a.task as usize];
            a.path = place[a.path as usize];
            a.environment = a.environment.map(|e| environment[e as usize]);
        }
        Ok(AttemptKeys { rows, environments, empty_environment: environment[empty_environment as usize] })
    }

    /// Each (source, model, task) group's outcomes, attempts in source-locator order; the
    /// groups in the order of their keys.
    pub(crate) fn each_group(&self, mut add_group: impl FnMut(&[u8])) {
        let mut order: Vec<&Attempt> = self.rows.iter().collect();
        order.sort_unstable_by(|a, b| a.group_order(b));
        let mut statuses: Vec<u8> = Vec::new();
        let mut group = None;
        for a in order {
            let key = (a.source, a.model, a.task);
            if group != Some(key) {
                add_group(&statuses);
                statuses.clear();
                group = Some(key);
            }
            statuses.push(a.status);
        }
        add_group(&statuses);
    }

    /// Per environment (a missing one apart from an empty one): its attempts, its tasks and
    /// the most attempts at one of them, where a task's attempts count a missing and an empty
    /// environment as one (as the `tasks` table does); most attempts first, then by
    /// environment (missing first).
    pub(crate) fn per_environment(&self) -> Vec<Value> {
        // Attempts per (environment, task), and per (task, environment or empty).
        let mut by_pair: FxHashMap<(Option<u32>, u32), u64> = FxHashMap::default();
        let mut by_task: FxHashMap<(u32, u32), u64> = FxHashMap::default();
        for a in &self.rows {
            *by_pair.entry((a.environment, a.task)).or_default() += 1;
            *by_task.entry((a.task, a.environment.unwrap_or(self.empty_environment))).or_default() += 1;
        }
        // Per environment: attempts, tasks, most attempts at one task.
        let mut per: FxHashMap<Option<u32>, (u64, u64, u64)> = FxHashMap::default();
        for (&(environment, task), &c) in &by_pair {
            let n = by_task.get(&(task, environment.unwrap_or(self.empty_environment))).copied().unwrap_or(0);
            let e = per.entry(environment).or_default();
            e.0 += c;
            e.1 += 1;
            e.2 = e.2.max(n);
        }
        let mut per: Vec<(Option<u32>, (u64, u64, u64))> = per.into_iter().collect();
        per.sort_unstable_by(|(ea, a), (eb, b)| b.0.cmp(&a.0).then(ea.cmp(eb)));
        per.into_iter()
            .map(|(environment, (attempts, tasks, most))| {
                let environment = environment.map(|e| self.environments[e as usize].as_str());
                json!({"environment": environment, "attempts": attempts, "tasks": tasks,
                       "max_attempts_per_task": most})
            })
            .collect()
    }
}

impl Texts {
    /// One row of `KEYS` as an attempt, its texts numbered in the order they were met.
    fn attempt(&mut self, r: &rusqlite::Row<'_>) -> rusqlite::Result<Attempt> {
        let text = |i: usize| r.get_ref(i)?.as_str().map_err(rusqlite::Error::from);
        Ok(Attempt {
            source: number(&mut self.sources, text(0)?),
            model: number(&mut self.models, text(1)?),
            task: number(&mut self.tasks, text(2)?),
            status: match text(3)? {
                "success" => 2,
                "failure" => 1,
                _ => 0,
            },
            path: number(&mut self.paths, text(4)?),
            line: r.get(5)?,
            document_index: r.get(6)?,
            ordinal: r.get(7)?,
            environment: r.get_ref(8)?.as_str_or_null()?.map(|e| number(&mut self.environments, e)),
        })
    }
}
