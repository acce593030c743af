//! Each trajectory's rank among the attempts at its task (`trajectories.task_rank`), sorted
//! here instead of by a window function: SQLite's sorter took about 70 ms of the single
//! finalize thread for 32,000 rows, a sort of their keys here a few.

use std::cmp::Ordering;

use rusqlite::functions::FunctionFlags;
use rusqlite::Connection;
use rustc_hash::FxHashMap;

use crate::numbering::{number, renumber};

/// The SQL function `finalize`'s `UPDATE` reads the ranks through: `trajkit_task_rank(ordinal)`.
pub(crate) const FUNCTION: &str = "trajkit_task_rank";

/// The columns the rank is ordered by, in the index's terms: within one task (key,
/// environment and its version, a missing one as empty), the best quality tier first, then
/// success before unknown before failure, the most complete, the fewest steps, and the
/// file, line, document and ordinal as the tie-breaks.
const KEYS: &str = "SELECT ordinal, task_key, coalesce(environment, ''), coalesce(environment_version, ''),
  quality_tier, status, coalesce(action_observation_completeness, 0), steps, path, line, document_index
  FROM trajectories ORDER BY ordinal";

/// One row's sort key, with its task and path as numbers (the path's number follows the
/// paths' order).
struct Key {
    task: u32,
    tier: i64,
    status: u8,
    completeness: f64,
    steps: i64,
    path: u32,
    line: Option<i64>,
    document_index: Option<i64>,
    ordinal: i64,
}

impl Key {
    /// The order of the attempts at one task, `row_number()`'s `ORDER BY` as it was.
    fn attempt_order(&self, other: &Key) -> Ordering {
        other
            .tier
            .cmp(&self.tier)
            .then(self.status.cmp(&other.status))
            .then(other.completeness.total_cmp(&self.completeness))
            .then(self.steps.cmp(&other.steps))
            .then(self.path.cmp(&other.path))
            .then(self.line.cmp(&other.line))
            .then(self.document_index.cmp(&other.document_index))
            .then(self.ordinal.cmp(&other.ordinal))
    }
}

/// Every trajectory's rank (from 1), by ordinal.
pub(crate) struct TaskRanks {
    /// Ascending, as the table holds them.
    ordinals: Vec<i64>,
    ranks: Vec<u32>,
}

impl TaskRanks {
    /// Reads every row's keys from `trajectories` and ranks the attempts at each task.
    pub(crate) fn compute(conn: &Connection) -> rusqlite::Result<TaskRanks> {
        let mut numbers = Numbers::default();
        let mut keys = Vec::new();
        let mut st = conn.prepare(KEYS)?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            keys.push(numbers.key(r)?);
        }
        let place = numbers.path_places();
        for k in &mut keys {
            k.path = place[k.path as usize];
        }
        Ok(Self::rank(&keys))
    }

    /// Ranks `keys` (in ordinal order) within their tasks.
    fn rank(keys: &[Key]) -> TaskRanks {
        let mut order: Vec<u32> = (0..keys.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (&keys[a as usize], &keys[b as usize]);
            a.task.cmp(&b.task).then_with(|| a.attempt_order(b))
        });
        let mut ranks = vec![0u32; keys.len()];
        let mut previous = None;
        let mut rank = 0;
        for i in order {
            let task = keys[i as usize].task;
            rank = if previous == Some(task) { rank + 1 } else { 1 };
            previous = Some(task);
            ranks[i as usize] = rank;
        }
        TaskRanks { ordinals: keys.iter().map(|k| k.ordinal).collect(), ranks }
    }

    /// The rank of the trajectory with this ordinal.
    fn of(&self, ordinal: i64) -> Option<u32> {
        self.ordinals.binary_search(&ordinal).ok().map(|i| self.ranks[i])
    }

    /// Makes the ranks readable as `trajkit_task_rank(ordinal)` on `conn` (an ordinal it
    /// does not know is an error, which fails the statement).
    pub(crate) fn register(self, conn: &Connection) -> rusqlite::Result<()> {
        let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
        conn.create_scalar_function(FUNCTION, 1, flags, move |ctx| {
            let ordinal: i64 = ctx.get(0)?;
            self.of(ordinal).ok_or_else(|| {
                rusqlite::Error::UserFunctionError(format!("no trajectory has the ordinal {ordinal}").into())
            })
        })
    }
}

/// The tasks and paths met so far, numbered as they come.
#[derive(Default)]
struct Numbers {
    tasks: FxHashMap<Vec<u8>, u32>,
    paths: FxHashMap<String, u32>,
    /// The task's three parts, each after its length: no two tasks share the bytes.
    task: Vec<u8>,
    /// The last row's path and its number: a file's records are consecutive rows.
    last_path: Option<(String, u32)>,
}

impl Numbers {
    /// One row of `KEYS` as a key, its path numbered in the order paths were met.
    fn key(&mut self, r: &rusqlite::Row<'_>) -> rusqlite::Result<Key> {
        self.task.clear();
        for i in 1..=3 {
            let part = r.get_ref(i)?.as_bytes()?;
            self.task.extend_from_slice(&(part.len() as u64).to_le_bytes());
            self.task.extend_from_slice(part);
        }
        let task = number(&mut self.tasks, self.task.as_slice());
        let path = r.get_ref(8)?.as_str()?;
        let path = match &self.last_path {
            Some((last, n)) if last == path => *n,
            _ => {
                let n = number(&mut self.paths, path);
                self.last_path = Some((path.to_string(), n));
                n
            }
        };
        let status = match r.get_ref(5)?.as_str()? {
            "success" => 0,
            "unknown" => 1,
            _ => 2,
        };
        // SQLite holds no NaN, and compares 0.0 and -0.0 as equal (`+ 0.0` makes -0.0 0.0).
        let completeness = r.get::<_, f64>(6)? + 0.0;
        let (tier, steps) = (r.get(4)?, r.get(7)?);
        let (line, document_index, ordinal) = (r.get(9)?, r.get(10)?, r.get(0)?);
        Ok(Key { task, tier, status, completeness, steps, path, line, document_index, ordinal })
    }

    /// For each path number, its place in the paths' byte order (SQLite's BINARY collation).
    fn path_places(self) -> Vec<u32> {
        renumber(self.paths).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ordering the window function gave, kept here to check the sort against.
    const WINDOW: &str = "SELECT row_number() OVER (
      PARTITION BY task_key, coalesce(environment, ''), coalesce(environment_version, '')
      ORDER BY quality_tier DESC, CASE status WHEN 'success' THEN 0 WHEN 'unknown' THEN 1 ELSE 2 END,
        coalesce(action_observation_completeness, 0) DESC, steps ASC, path, line, document_index, ordinal)
      FROM trajectories ORDER BY ordinal";

    /// Synthetic: rows made to tie on every key but one, with the values that compare in
    /// SQLite's own way (a missing environment as an empty one, a missing line first, a
    /// missing completeness as 0, -0.0 as 0.0, paths by bytes); the ranks must be the
    /// window function's, row for row. No real corpus holds all these ties.
    #[test]
    fn ranks_are_the_window_functions() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE trajectories (ordinal INTEGER PRIMARY KEY, task_key TEXT NOT NULL, environment TEXT,
               environment_version TEXT, quality_tier INTEGER NOT NULL, status TEXT NOT NULL,
               action_observation_completeness REAL, steps INTEGER NOT NULL, path TEXT NOT NULL, line INTEGER,
               document_index INTEGER)",
        )
        .unwrap();
        let tasks = ["t1", "t2", "1:t"];
        let environments: [Option<&str>; 3] = [None, Some(""), Some("env")];
        let statuses = ["success", "unknown", "failure", "error"];
        let completeness: [Option<f64>; 4] = [None, Some(0.0), Some(-0.0), Some(0.5)];
        let paths = ["b/x.json", "a/y.json", "a/y.jsonl", "Z.json", "é.json"];
        let mut insert = conn.prepare("INSERT INTO trajectories VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)").unwrap();
        // A fixed pseudo-random walk over the values (no dependency for randomness).
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut pick = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for ordinal in 1..=3000i64 {
            let line = [None, Some(1i64), Some(2), Some(10)][pick(4)];
            let document_index = [None, Some(0i64), Some(1)][pick(3)];
            insert
                .execute(rusqlite::params![
                    ordinal * 3,
                    tasks[pick(3)],
                    environments[pick(3)],
                    environments[pick(3)].map(|_| "v1"),
                    pick(3) as i64,
                    statuses[pick(4)],
                    completeness[pick(4)],
                    pick(3) as i64,
                    paths[pick(5)],
                    line,
                    document_index,
                ])
                .unwrap();
        }
        drop(insert);
        let window: Vec<i64> =
            conn.prepare(WINDOW).unwrap().query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        TaskRanks::compute(&conn).unwrap().register(&conn).unwrap();
        let ours: Vec<i64> = conn
            .prepare(&format!("SELECT {FUNCTION}(ordinal) FROM trajectories ORDER BY ordinal"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(ours.len(), 3000);
        assert_eq!(ours, window);
        // The sample reached deep ranks, not only firsts.
        assert!(window.iter().any(|&r| r > 50));
    }

    /// Synthetic: an ordinal the table does not hold fails the statement instead of
    /// ranking it.
    #[test]
    fn an_unknown_ordinal_is_an_error() {
        let conn = Connection::open_in_memory().unwrap();
        TaskRanks { ordinals: vec![1, 2], ranks: vec![1, 1] }.register(&conn).unwrap();
        let r: i64 = conn.query_row(&format!("SELECT {FUNCTION}(2)"), [], |r| r.get(0)).unwrap();
        assert_eq!(r, 1);
        let err = conn.query_row(&format!("SELECT {FUNCTION}(3)"), [], |r| r.get::<_, i64>(0)).unwrap_err();
        assert!(err.to_string().contains("no trajectory has the ordinal 3"), "{err}");
    }
}
