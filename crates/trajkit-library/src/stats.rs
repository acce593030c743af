//! Recorded-agent performance and library figures, computed from the index (never
//! hand-maintained): `evaluation/summary.json` and `trajkit stats` show the same numbers.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use serde_json::{json, Value};

use crate::attempt_keys::AttemptKeys;
use crate::error::LibraryError;

/// Attempt counts k reported for success@k and the pass estimators (those ≤ the largest group).
pub const KS: [u64; 10] = [1, 2, 3, 4, 5, 8, 10, 16, 32, 100];

/// Keys `trajkit stats --by` accepts, with the column each groups on.
pub const BY_KEYS: [(&str, &str); 7] = [
    ("source", "source"),
    ("model", "model"),
    ("scaffold", "scaffold"),
    ("family", "family"),
    ("tier", "quality_tier"),
    ("split", "split"),
    ("format", "format"),
];

/// Outcome figures of one group of attempts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutcomeRow {
    pub key: Value,
    pub attempts: u64,
    pub tasks: u64,
    pub success: u64,
    pub failure: u64,
    pub unknown: u64,
    /// success / (success + failure); unknown attempts are not in the denominator.
    pub success_rate_known: Option<f64>,
    /// Tasks with at least one successful attempt in the group.
    pub tasks_solved: u64,
}

fn sqlerr(path: &Path) -> impl Fn(rusqlite::Error) -> LibraryError + '_ {
    move |source| LibraryError::Sqlite { path: path.to_path_buf(), source }
}

fn rate(success: u64, failure: u64) -> Option<f64> {
    (success + failure > 0).then(|| round6(success as f64 / (success + failure) as f64))
}

/// Rounds to 6 decimals so summaries stay readable and byte-stable.
fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Outcomes grouped by one column of `trajectories` (`--by`).
pub fn outcomes_by(conn: &Connection, path: &Path, column: &str) -> Result<Vec<OutcomeRow>, LibraryError> {
    Ok(outcomes_by_each(conn, path, &[column])?.pop().unwrap_or_default())
}

/// Outcomes grouped by each of `columns` (of `BY_KEYS`), from one scan of the table: per
/// group its attempts, distinct tasks, outcomes and tasks solved, groups in descending
/// attempts then ascending key (SQLite's order: null, numbers, text by bytes).
pub fn outcomes_by_each(
    conn: &Connection,
    path: &Path,
    columns: &[&str],
) -> Result<Vec<Vec<OutcomeRow>>, LibraryError> {
    grouped_scan(conn, path, columns, None)
}

/// `outcomes_by_each`, with the summary's `totals` gathered in the same scan when given.
fn grouped_scan(
    conn: &Connection,
    path: &Path,
    columns: &[&str],
    mut totals: Option<&mut Totals>,
) -> Result<Vec<Vec<OutcomeRow>>, LibraryError> {
    if let Some(bad) = columns.iter().find(|c| !BY_KEYS.iter().any(|(_, k)| k == *c)) {
        return Err(LibraryError::Invalid { path: path.to_path_buf(), message: format!("cannot group by {bad:?}") });
    }
    let mut read = vec!["task_key", "status"];
    read.extend(columns);
    if totals.is_some() {
        read.extend(Totals::COLUMNS);
    }
    let sql = format!("SELECT {} FROM trajectories", read.join(", "));
    let mut st = conn.prepare(&sql).map_err(sqlerr(path))?;
    let mut rows = st.query([]).map_err(sqlerr(path))?;
    // Task keys as numbers: each group's sets of distinct tasks hold 4 bytes per task.
    let mut tasks: FxHashMap<String, u32> = FxHashMap::default();
    let mut groups: Vec<FxHashMap<Key, Group>> = vec![FxHashMap::default(); columns.len()];
    while let Some(r) = rows.next().map_err(sqlerr(path))? {
        let task_key = text_at(r, 0, path)?;
        let task = crate::numbering::number(&mut tasks, task_key);
        let status = text_at(r, 1, path)?;
        for (i, by) in groups.iter_mut().enumerate() {
            let key = Key::of(r.get_ref(i + 2).map_err(sqlerr(path))?);
            by.entry(key).or_default().add(task, status);
        }
        if let Some(totals) = totals.as_deref_mut() {
            totals.add(r, status, 2 + columns.len()).map_err(sqlerr(path))?;
        }
    }
    Ok(groups.into_iter().map(ordered_rows).collect())
}

/// A grouping column's value, ordered as SQLite orders it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Null,
    Integer(i64),
    /// A real's bits (no column grouped on holds one; kept exact if one does).
    Real(u64),
    Text(String),
    Blob,
}

impl Key {
    fn of(v: rusqlite::types::ValueRef<'_>) -> Key {
        use rusqlite::types::ValueRef;
        match v {
            ValueRef::Null => Key::Null,
            ValueRef::Integer(i) => Key::Integer(i),
            ValueRef::Real(f) => Key::Real(f.to_bits()),
            ValueRef::Text(t) => Key::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(_) => Key::Blob,
        }
    }

    /// SQLite's storage class rank: null, numbers, text, blob.
    fn class(&self) -> u8 {
        match self {
            Key::Null => 0,
            Key::Integer(_) | Key::Real(_) => 1,
            Key::Text(_) => 2,
            Key::Blob => 3,
        }
    }

    fn json(&self) -> Value {
        match self {
            Key::Integer(i) => json!(i),
            Key::Real(bits) => json!(f64::from_bits(*bits)),
            Key::Text(s) => json!(s),
            Key::Null | Key::Blob => Value::Null,
        }
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let number = |k: &Key| match k {
            Key::Integer(i) => *i as f64,
            Key::Real(bits) => f64::from_bits(*bits),
            _ => 0.0,
        };
        match (self, other) {
            (Key::Integer(a), Key::Integer(b)) => a.cmp(b),
            (Key::Text(a), Key::Text(b)) => a.cmp(b),
            _ if self.class() == 1 && other.class() == 1 => number(self).total_cmp(&number(other)),
            _ => self.class().cmp(&other.class()),
        }
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// One group's attempts while the table is scanned.
#[derive(Clone, Default)]
struct Group {
    attempts: u64,
    success: u64,
    failure: u64,
    unknown: u64,
    tasks: FxHashSet<u32>,
    solved: FxHashSet<u32>,
}

impl Group {
    fn add(&mut self, task: u32, status: &str) {
        self.attempts += 1;
        self.tasks.insert(task);
        match status {
            "success" => {
                self.success += 1;
                self.solved.insert(task);
            }
            "failure" => self.failure += 1,
            "unknown" => self.unknown += 1,
            _ => {}
        }
    }
}

/// A column's groups as rows, most attempts first, then by key.
fn ordered_rows(groups: FxHashMap<Key, Group>) -> Vec<OutcomeRow> {
    let mut groups: Vec<(Key, Group)> = groups.into_iter().collect();
    groups.sort_by(|(ka, a), (kb, b)| b.attempts.cmp(&a.attempts).then_with(|| ka.cmp(kb)));
    groups
        .into_iter()
        .map(|(key, g)| OutcomeRow {
            key: key.json(),
            attempts: g.attempts,
            tasks: g.tasks.len() as u64,
            success: g.success,
            failure: g.failure,
            unknown: g.unknown,
            success_rate_known: rate(g.success, g.failure),
            tasks_solved: g.solved.len() as u64,
        })
        .collect()
}

fn one_u64(conn: &Connection, path: &Path, sql: &str) -> Result<u64, LibraryError> {
    conn.query_row(sql, [], |r| r.get::<_, Option<u64>>(0)).map(|v| v.unwrap_or(0)).map_err(sqlerr(path))
}

/// Count, min, median, mean, p90, max and a power-of-two histogram of a column, from its
/// values with their counts in order.
fn distribution(values: &[(u64, u64)]) -> Value {
    let n: u64 = values.iter().map(|(_, c)| c).sum();
    let (Some(&(min, _)), Some(&(max, _))) = (values.first(), values.last()) else {
        return json!({"count": 0});
    };
    let total: u64 = values.iter().map(|(v, c)| v * c).sum();
    // The value at sorted position floor((n - 1) * q), as `ORDER BY .. LIMIT 1 OFFSET` gives it.
    let quantile = |q: f64| {
        let offset = ((n - 1) as f64 * q).floor() as u64;
        let mut seen = 0;
        values
            .iter()
            .find(|(_, c)| {
                seen += c;
                seen > offset
            })
            .map_or(max, |(v, _)| *v)
    };
    let mut histogram = BTreeMap::new();
    for &(value, count) in values {
        // Bucket b holds 2^(b-1) ..= 2^b - 1; bucket 0 holds 0.
        let bucket = 64 - u64::from(value.leading_zeros());
        let label = match bucket {
            0 => "0".to_string(),
            1 => "1".to_string(),
            b => format!("{}-{}", 1u64 << (b - 1), (1u64 << b) - 1),
        };
        *histogram.entry(format!("{bucket:02}:{label}")).or_insert(0u64) += count;
    }
    let histogram: Vec<Value> = histogram
        .into_iter()
        .map(|(k, v)| json!({"range": k.split_once(':').map(|x| x.1).unwrap_or(&k), "count": v}))
        .collect();
    // SQLite's avg() of integers: their exact sum over the count, in double precision.
    let mean = total as f64 / n as f64;
    json!({
        "count": n, "total": total, "min": min, "median": quantile(0.5), "mean": round6(mean),
        "p90": quantile(0.9), "max": max, "histogram": histogram
    })
}

/// Estimators and success@k over groups of attempts (source, model, task), attempts in
/// source-locator order (path, line, document index).
fn at_k(keys: &AttemptKeys) -> Value {
    let mut acc = AtK::default();
    keys.each_group(|statuses| acc.add_group(statuses));
    acc.to_json()
}

/// Column `i` of a row as text, borrowed from the statement.
fn text_at<'r>(r: &'r rusqlite::Row<'_>, i: usize, path: &Path) -> Result<&'r str, LibraryError> {
    r.get_ref(i).map_err(sqlerr(path))?.as_str().map_err(|e| sqlerr(path)(e.into()))
}

#[derive(Default)]
struct AtK {
    max_group: u64,
    /// per k: (groups with ≥ k attempts, success, failure, unknown) of the first k.
    empirical: BTreeMap<u64, [u64; 4]>,
    /// per k: (groups with ≥ k known attempts, sum of pass@k, sum of pass^k).
    estimates: BTreeMap<u64, (u64, f64, f64)>,
}

impl AtK {
    fn add_group(&mut self, statuses: &[u8]) {
        if statuses.is_empty() {
            return;
        }
        self.max_group = self.max_group.max(statuses.len() as u64);
        let n = statuses.iter().filter(|s| **s != 0).count() as u64;
        let c = statuses.iter().filter(|s| **s == 2).count() as u64;
        for k in KS {
            if statuses.len() as u64 >= k {
                let first = &statuses[..k as usize];
                let e = self.empirical.entry(k).or_default();
                e[0] += 1;
                if first.contains(&2) {
                    e[1] += 1;
                } else if first.iter().all(|s| *s == 1) {
                    e[2] += 1;
                } else {
                    e[3] += 1;
                }
            }
            if n >= k {
                let e = self.estimates.entry(k).or_default();
                e.0 += 1;
                e.1 += pass_at_k(n, c, k);
                e.2 += pass_hat_k(n, c, k);
            }
        }
    }

    fn to_json(&self) -> Value {
        let empirical: Vec<Value> = self
            .empirical
            .iter()
            .map(|(k, [groups, s, f, u])| {
                json!({"k": k, "groups": groups, "success": s, "failure": f, "unknown": u, "rate_known": rate(*s, *f)})
            })
            .collect();
        let pass: Vec<Value> = self
            .estimates
            .iter()
            .map(|(k, (groups, p, _))| json!({"k": k, "groups": groups, "estimate": round6(p / *groups as f64)}))
            .collect();
        let hat: Vec<Value> = self
            .estimates
            .iter()
            .map(|(k, (groups, _, h))| json!({"k": k, "groups": groups, "estimate": round6(h / *groups as f64)}))
            .collect();
        json!({
            "groups_by": ["source", "model", "task_key"],
            "largest_group": self.max_group,
            "success_at_k_empirical": {
                "description": "descriptive, not an estimate: for each group with at least k recorded attempts, its first k attempts in source-locator order (path, line, document index); success if any succeeded, failure if all k failed, unknown otherwise",
                "by_k": empirical
            },
            "pass_at_k_estimate": {
                "description": "estimate: unbiased pass@k = 1 - C(n-c, k) / C(n, k) averaged over groups with n >= k attempts of known outcome (c successes); unknown outcomes excluded",
                "by_k": pass
            },
            "pass_hat_k_estimate": {
                "description": "estimate: pass^k = C(c, k) / C(n, k), the chance that k attempts drawn without replacement all succeed, averaged over groups with n >= k attempts of known outcome",
                "by_k": hat
            }
        })
    }
}

/// Unbiased pass@k estimate for n attempts with c successes (n ≥ k).
pub fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
    if n - c < k {
        return 1.0;
    }
    // 1 - prod_{i = n-c+1}^{n} (1 - k / i), numerically stable.
    1.0 - ((n - c + 1)..=n).map(|i| 1.0 - k as f64 / i as f64).product::<f64>()
}

/// pass^k estimate: C(c, k) / C(n, k) (n ≥ k).
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> f64 {
    if c < k {
        return 0.0;
    }
    (0..k).map(|i| (c - i) as f64 / (n - i) as f64).product()
}

/// Tokens and cost as sources publish them, per source and model: never summed across sources.
fn usage(conn: &Connection, path: &Path) -> Result<Value, LibraryError> {
    let mut st = conn
        .prepare(
            "SELECT source, model, count(*), count(prompt_tokens), sum(prompt_tokens), count(completion_tokens),
                    sum(completion_tokens), count(cost_usd), sum(cost_usd), count(cached_tokens), sum(cached_tokens)
             FROM trajectories GROUP BY source, model ORDER BY source, model",
        )
        .map_err(sqlerr(path))?;
    let rows = st
        .query_map([], |r| {
            Ok(json!({
                "source": r.get::<_, String>(0)?,
                "model": r.get::<_, Option<String>>(1)?,
                "attempts": r.get::<_, u64>(2)?,
                "with_prompt_tokens": r.get::<_, u64>(3)?,
                "prompt_tokens": r.get::<_, Option<u64>>(4)?,
                "with_completion_tokens": r.get::<_, u64>(5)?,
                "completion_tokens": r.get::<_, Option<u64>>(6)?,
                "with_cost_usd": r.get::<_, u64>(7)?,
                "cost_usd": r.get::<_, Option<f64>>(8)?.map(round6),
                "with_cached_tokens": r.get::<_, u64>(9)?,
                "cached_tokens": r.get::<_, Option<u64>>(10)?,
            }))
        })
        .map_err(sqlerr(path))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(sqlerr(path)).map(Value::Array)
}

/// Attempts per task (histogram of attempt counts) and per environment.
fn attempts(conn: &Connection, path: &Path, keys: &AttemptKeys) -> Result<Value, LibraryError> {
    let mut st = conn
        .prepare("SELECT attempts, count(*) FROM tasks GROUP BY attempts ORDER BY attempts")
        .map_err(sqlerr(path))?;
    let per_task: Vec<Value> = st
        .query_map([], |r| Ok(json!({"attempts": r.get::<_, u64>(0)?, "tasks": r.get::<_, u64>(1)?})))
        .map_err(sqlerr(path))?
        .collect::<Result<_, _>>()
        .map_err(sqlerr(path))?;
    Ok(json!({"per_task": per_task, "per_environment": keys.per_environment()}))
}

/// What `trajkit stats --json` prints and the Python `Library.stats()` returns: the summary
/// recomputed from the library's index (each duplicate group counted once with `dedup`) and
/// the contamination report's summary under `contamination`.
pub fn report(root: &Path, dedup: crate::Dedup) -> Result<Value, LibraryError> {
    let index = root.join("index.sqlite");
    let conn = crate::index::open_read_only(&index)?;
    dedup.apply(&conn, &index)?;
    let mut s = compute(&conn, &index)?;
    if let Some(o) = s.as_object_mut() {
        o.insert("contamination".into(), crate::contamination::summary(root)?);
    }
    Ok(s)
}

/// The summary's counts over all trajectories, gathered in the grouped figures' scan
/// (`grouped_scan`) instead of scans of their own.
#[derive(Default)]
struct Totals {
    attempts: u64,
    success: u64,
    failure: u64,
    unknown: u64,
    structural_valid: u64,
    complete: u64,
    sft_eligible: u64,
    training_eligible: u64,
    /// Per column `distribution` describes (steps, decisions, tool calls): each value and
    /// how many trajectories hold it, in order.
    values: [BTreeMap<u64, u64>; 3],
    /// Trajectories per verification, in byte order (SQLite's `ORDER BY verification`).
    verification: BTreeMap<String, u64>,
}

impl Totals {
    /// What `add` reads, after the grouped columns: the four flags (`NOT NULL` integers, true
    /// when not 0, as SQLite's `FILTER (WHERE flag)`), the three counted columns, verification.
    const COLUMNS: [&'static str; 8] = [
        "structural_valid",
        "complete",
        "sft_eligible",
        "training_eligible",
        "steps",
        "decisions",
        "tool_calls",
        "verification",
    ];

    /// Counts one trajectory: its `status`, and `COLUMNS` from column `at` of `r` on.
    fn add(&mut self, r: &rusqlite::Row<'_>, status: &str, at: usize) -> rusqlite::Result<()> {
        self.attempts += 1;
        match status {
            "success" => self.success += 1,
            "failure" => self.failure += 1,
            "unknown" => self.unknown += 1,
            _ => {}
        }
        let flags =
            [&mut self.structural_valid, &mut self.complete, &mut self.sft_eligible, &mut self.training_eligible];
        for (i, count) in flags.into_iter().enumerate() {
            *count += u64::from(r.get::<_, i64>(at + i)? != 0);
        }
        for (i, values) in self.values.iter_mut().enumerate() {
            *values.entry(r.get::<_, u64>(at + 4 + i)?).or_insert(0) += 1;
        }
        let verification = r.get_ref(at + 7)?.as_str()?;
        match self.verification.get_mut(verification) {
            Some(n) => *n += 1,
            None => {
                self.verification.insert(verification.to_string(), 1);
            }
        }
        Ok(())
    }
}

/// The whole summary (`evaluation/summary.json`).
pub fn compute(conn: &Connection, path: &Path) -> Result<Value, LibraryError> {
    let q = |sql: &str| one_u64(conn, path, sql);
    let keys = AttemptKeys::read(conn, path)?;
    let columns: Vec<&str> = BY_KEYS.iter().map(|(_, column)| *column).collect();
    let mut c = Totals::default();
    let grouped = grouped_scan(conn, path, &columns, Some(&mut c))?;
    // `count(DISTINCT source)`: `source` is `NOT NULL`, so one group per source.
    let sources = columns.iter().position(|column| *column == "source").map_or(0, |i| grouped[i].len() as u64);
    let mut by = serde_json::Map::new();
    for ((name, _), rows) in BY_KEYS.iter().zip(grouped) {
        by.insert(name.to_string(), serde_json::to_value(rows).unwrap_or_default());
    }
    let [steps, decisions, tool_calls] = std::mem::take(&mut c.values).map(|m| m.into_iter().collect::<Vec<_>>());
    let (success, failure) = (c.success, c.failure);
    let tasks = q("SELECT count(*) FROM tasks")?;
    let solved = q("SELECT count(*) FROM tasks WHERE success > 0")?;
    let known_tasks = q("SELECT count(*) FROM tasks WHERE success + failure > 0")?;
    let top_tools: Vec<Value> = conn
        .prepare("SELECT name, count(*) FROM tool_calls GROUP BY name ORDER BY count(*) DESC, name LIMIT 20")
        .and_then(|mut st| {
            st.query_map([], |r| Ok(json!({"name": r.get::<_, String>(0)?, "calls": r.get::<_, u64>(1)?})))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(sqlerr(path))?;
    Ok(json!({
        "description": "recorded-agent performance, computed from evaluation/per_trajectory.jsonl.gz and index.sqlite by trajkit build; see docs/library.md",
        "attempts": c.attempts,
        "tasks": tasks,
        "sources": sources,
        "outcomes": {
            "success": success,
            "failure": failure,
            "unknown": c.unknown,
            "success_rate_known": rate(success, failure),
        },
        "tasks_solved_at_least_once": {
            "solved": solved,
            "tasks": tasks,
            "tasks_with_known_outcome": known_tasks,
            "fraction_of_tasks": (tasks > 0).then(|| round6(solved as f64 / tasks as f64)),
            "fraction_of_tasks_with_known_outcome": (known_tasks > 0).then(|| round6(solved as f64 / known_tasks as f64)),
        },
        "by": by,
        "attempts_distribution": attempts(conn, path, &keys)?,
        "at_k": at_k(&keys),
        "actions": {
            "steps": distribution(&steps),
            "decisions": distribution(&decisions),
            "tool_calls": distribution(&tool_calls),
            "top_tools": top_tools,
        },
        "usage": {
            "description": "tokens and cost as each source publishes them, per source and model; never summed across sources (units and tokenizers differ)",
            "by_source_model": usage(conn, path)?,
            "latency": {
                "description": "wall-clock seconds per attempt where the source publishes them (duration_seconds); attempts without one are not counted",
                "by_source_model": crate::latency::by_source_model(conn, path)?,
            },
        },
        "quality": {
            "structural_valid": c.structural_valid,
            "complete": c.complete,
            "sft_eligible": c.sft_eligible,
            "training_eligible": c.training_eligible,
            "verification": c.verification,
        },
        "duplicates": {
            "groups": q("SELECT count(*) FROM duplicate_groups")?,
            "groups_with_duplicates": q("SELECT count(*) FROM duplicate_groups WHERE size > 1")?,
            "trajectories_in_duplicate_groups": q("SELECT coalesce(sum(size), 0) FROM duplicate_groups WHERE size > 1")?,
            "groups_with_disagreeing_outcomes": q("SELECT count(*) FROM duplicate_groups WHERE outcomes_disagree")?,
        },
        "rejected_records": q("SELECT coalesce(sum(rejected), 0) FROM files")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures as SQLite computes them, one statement each (how they were computed
    /// before one scan served every column).
    fn by_sql(conn: &Connection, n: u64) -> (u64, u64, u64, f64, u64, u64) {
        let one = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, u64>(0)).unwrap();
        let at = |q: f64| one(&format!("SELECT v FROM t ORDER BY v LIMIT 1 OFFSET {}", ((n - 1) as f64 * q).floor()));
        let (min, max, avg, sum) = conn
            .query_row("SELECT min(v), max(v), avg(v), sum(v) FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap();
        (min, at(0.5), at(0.9), avg, max, sum)
    }

    #[test]
    fn distribution_matches_sqlite_on_every_size() {
        // Synthetic: sizes 1..=60 with repeats, gaps and a large value (no real file needed).
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v INTEGER NOT NULL)").unwrap();
        for i in 1u64..=60 {
            let v = (i * 7919) % 23 + if i % 17 == 0 { 1 << 40 } else { 0 };
            conn.execute("INSERT INTO t VALUES (?1)", [v]).unwrap();
            let mut st = conn.prepare("SELECT v, count(*) FROM t GROUP BY v ORDER BY v").unwrap();
            let values: Vec<(u64, u64)> =
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
            let d = distribution(&values);
            let (min, median, p90, avg, max, sum) = by_sql(&conn, i);
            assert_eq!(d["count"], json!(i));
            assert_eq!(
                (&d["min"], &d["median"], &d["p90"], &d["max"], &d["total"]),
                (&json!(min), &json!(median), &json!(p90), &json!(max), &json!(sum)),
                "{i} values"
            );
            assert_eq!(d["mean"], json!(round6(avg)), "{i} values");
        }
        assert_eq!(distribution(&[]), json!({"count": 0}));
    }

    /// A `trajectories` table with the columns the grouped figures read. Synthetic: keys
    /// null, empty, text and integer, ties in attempts, a task under a missing and an empty
    /// environment, statuses outside the three (no real file has all of these at once).
    fn grouping_table() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE trajectories (task_key TEXT NOT NULL, status TEXT NOT NULL, source TEXT, model TEXT,
               scaffold TEXT, family TEXT, quality_tier INTEGER, split TEXT, format TEXT, environment TEXT,
               path TEXT NOT NULL, line INTEGER, document_index INTEGER, ordinal INTEGER PRIMARY KEY,
               structural_valid INTEGER NOT NULL, complete INTEGER NOT NULL, sft_eligible INTEGER NOT NULL,
               training_eligible INTEGER NOT NULL, steps INTEGER NOT NULL, decisions INTEGER NOT NULL,
               tool_calls INTEGER NOT NULL, verification TEXT NOT NULL)",
        )
        .unwrap();
        let texts = [None, Some(""), Some("a"), Some("B"), Some("b"), Some("é")];
        let statuses = ["success", "failure", "unknown", "success", "partial"];
        for i in 0u64..400 {
            let text = |m: u64| texts[((i * m) % 7 % 6) as usize];
            let tier = if i % 11 == 0 { None } else { Some((i * 5 % 4) as i64 - 1) };
            conn.execute(
                "INSERT INTO trajectories VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,
                   ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
                rusqlite::params![
                    format!("t{}", i * 13 % 37),
                    statuses[(i * 3 % 5) as usize],
                    text(1),
                    text(3),
                    text(5),
                    text(2),
                    tier,
                    text(4),
                    Some(["x", "y"][(i % 2) as usize]),
                    text(6),
                    ["b.jsonl", "a.jsonl", "B.json", "é.json", "a.jsonl.gz"][(i * 7 % 5) as usize],
                    (i % 3 != 0).then_some((i * 11 % 4) as i64),
                    (i % 5 == 0).then_some((i % 2) as i64),
                    // Ordinals not in insertion order, so that only the sort can order ties.
                    (i * 7919 % 400) as i64,
                    // Flags as SQLite's FILTER reads them: any integer but 0 is true.
                    [0, 1, 2][(i % 3) as usize],
                    (i % 4 == 1) as i64,
                    (i % 7 < 3) as i64,
                    [0, 1, -1][(i * 5 % 3) as usize],
                    i * 37 % 90,
                    i * 13 % 11,
                    if i % 9 == 0 { 1 << 33 } else { i % 5 },
                    ["unverified", "verified", "Verified", "harness", "é"][(i * 3 % 5) as usize],
                ],
            )
            .unwrap();
        }
        conn
    }

    #[test]
    fn one_scan_groups_as_the_sql_did() {
        let conn = grouping_table();
        let path = Path::new("index.sqlite");
        let columns: Vec<&str> = BY_KEYS.iter().map(|(_, c)| *c).collect();
        let scanned = outcomes_by_each(&conn, path, &columns).unwrap();
        for (column, rows) in columns.iter().zip(&scanned) {
            let sql = format!(
                "SELECT {column}, count(*), count(DISTINCT task_key), sum(status = 'success'), sum(status = 'failure'),
                        sum(status = 'unknown'), count(DISTINCT CASE WHEN status = 'success' THEN task_key END)
                 FROM trajectories GROUP BY {column} ORDER BY count(*) DESC, {column}"
            );
            let mut st = conn.prepare(&sql).unwrap();
            let want: Vec<Value> = st
                .query_map([], |r| {
                    let key = match r.get::<_, rusqlite::types::Value>(0)? {
                        rusqlite::types::Value::Integer(i) => json!(i),
                        rusqlite::types::Value::Text(s) => json!(s),
                        _ => Value::Null,
                    };
                    let (success, failure): (u64, u64) = (r.get(3)?, r.get(4)?);
                    Ok(json!([
                        key,
                        r.get::<_, u64>(1)?,
                        r.get::<_, u64>(2)?,
                        success,
                        failure,
                        r.get::<_, u64>(5)?,
                        rate(success, failure),
                        r.get::<_, u64>(6)?
                    ]))
                })
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let got: Vec<Value> = rows
                .iter()
                .map(|o| {
                    json!([
                        o.key,
                        o.attempts,
                        o.tasks,
                        o.success,
                        o.failure,
                        o.unknown,
                        o.success_rate_known,
                        o.tasks_solved
                    ])
                })
                .collect();
            assert!(want.len() >= 2, "{column}: {want:?}");
            assert_eq!(got, want, "{column}");
        }
        assert_eq!(outcomes_by(&conn, path, "model").unwrap(), scanned[1]);
        assert!(outcomes_by(&conn, path, "task_key").is_err());
    }

    /// The summary's totals, gathered in the grouped scan, as the statements of their own
    /// counted them before.
    #[test]
    fn totals_as_the_sql_counted_them() {
        let conn = grouping_table();
        let path = Path::new("index.sqlite");
        let columns: Vec<&str> = BY_KEYS.iter().map(|(_, c)| *c).collect();
        let mut got = Totals::default();
        let grouped = grouped_scan(&conn, path, &columns, Some(&mut got)).unwrap();
        assert_eq!(grouped, outcomes_by_each(&conn, path, &columns).unwrap());
        let want: [u64; 8] = conn
            .query_row(
                "SELECT count(*), count(*) FILTER (WHERE status = 'success'),
                   count(*) FILTER (WHERE status = 'failure'), count(*) FILTER (WHERE status = 'unknown'),
                   count(*) FILTER (WHERE structural_valid), count(*) FILTER (WHERE complete),
                   count(*) FILTER (WHERE sft_eligible), count(*) FILTER (WHERE training_eligible)
                 FROM trajectories",
                [],
                |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?]),
            )
            .unwrap();
        let counted = [
            got.attempts,
            got.success,
            got.failure,
            got.unknown,
            got.structural_valid,
            got.complete,
            got.sft_eligible,
            got.training_eligible,
        ];
        assert_eq!(counted, want);
        assert!(want[1..].iter().all(|&n| n > 0 && n < want[0]), "{want:?}");
        let grouped_counts = |sql: &str| -> Vec<(Value, u64)> {
            let mut st = conn.prepare(sql).unwrap();
            st.query_map([], |r| Ok((json!(r.get::<_, rusqlite::types::Value>(0).map(sql_json)?), r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        for (column, values) in ["steps", "decisions", "tool_calls"].iter().zip(&got.values) {
            let want = grouped_counts(&format!("SELECT {column}, count(*) FROM trajectories GROUP BY 1 ORDER BY 1"));
            let values: Vec<(Value, u64)> = values.iter().map(|(v, n)| (json!(v), *n)).collect();
            assert_eq!(values, want, "{column}");
        }
        let want = grouped_counts("SELECT verification, count(*) FROM trajectories GROUP BY 1 ORDER BY 1");
        let verification: Vec<(Value, u64)> = got.verification.iter().map(|(v, n)| (json!(v), *n)).collect();
        assert_eq!(verification, want);
    }

    /// A SQLite value as JSON (integers and texts; the columns counted hold nothing else).
    fn sql_json(v: rusqlite::types::Value) -> Value {
        match v {
            rusqlite::types::Value::Integer(i) => json!(i),
            rusqlite::types::Value::Text(s) => json!(s),
            _ => Value::Null,
        }
    }

    /// success@k as it was computed before the keys were sorted here: SQLite's sorter over
    /// the whole table. Task `t0`'s attempts tie on path, line and document index, leaving
    /// the ordinal to order them; a missing source stands for no row of the index (`source`
    /// is `NOT NULL` there) and is left out.
    #[test]
    fn at_k_groups_as_the_sql_sort_did() {
        let conn = grouping_table();
        // Fewer, larger groups, so that the first k of each depend on the attempts' order.
        conn.execute_batch(
            "DELETE FROM trajectories WHERE source IS NULL;
             UPDATE trajectories SET source = substr(source, 1, 1), task_key = 't' || (ordinal % 4),
               path = substr('bBa', ordinal % 3 + 1, 1);
             UPDATE trajectories SET path = 'a', line = NULL, document_index = NULL WHERE task_key = 't0'",
        )
        .unwrap();
        let mut st = conn
            .prepare(
                "SELECT source, coalesce(model, ''), task_key, status FROM trajectories
                 ORDER BY source, coalesce(model, ''), task_key, path, line, document_index, ordinal",
            )
            .unwrap();
        let rows: Vec<[String; 4]> = st
            .query_map([], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?]))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut want = AtK::default();
        let mut groups = 0;
        for group in rows.chunk_by(|a, b| a[..3] == b[..3]) {
            let status = |r: &[String; 4]| match r[3].as_str() {
                "success" => 2,
                "failure" => 1,
                _ => 0,
            };
            want.add_group(&group.iter().map(status).collect::<Vec<u8>>());
            groups += 1;
        }
        assert!(groups > 10, "{groups} groups");
        let got = at_k(&AttemptKeys::read(&conn, Path::new("index.sqlite")).unwrap());
        assert!(got["largest_group"].as_u64().unwrap() >= 12, "{got}");
        let first = &got["success_at_k_empirical"]["by_k"][0];
        assert!(first["success"].as_u64() < first["groups"].as_u64(), "the order decides: {first}");
        assert_eq!(got, want.to_json());
    }

    #[test]
    fn attempts_per_environment_as_the_join_did() {
        let conn = grouping_table();
        // `source` is `NOT NULL` in the index.
        conn.execute_batch("DELETE FROM trajectories WHERE source IS NULL").unwrap();
        let joined: Vec<Value> = conn
            .prepare(
                "SELECT environment, count(*), count(DISTINCT task_key), max(n) FROM trajectories
                 JOIN (SELECT task_key AS k, coalesce(environment, '') AS e, count(*) AS n FROM trajectories GROUP BY 1, 2)
                   ON k = task_key AND e = coalesce(environment, '')
                 GROUP BY environment ORDER BY count(*) DESC, environment",
            )
            .unwrap()
            .query_map([], |r| {
                Ok(json!({"environment": r.get::<_, Option<String>>(0)?, "attempts": r.get::<_, u64>(1)?,
                          "tasks": r.get::<_, u64>(2)?, "max_attempts_per_task": r.get::<_, u64>(3)?}))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(joined.len() > 2);
        assert_eq!(attempts_test_view(&conn)["per_environment"], json!(joined));
    }

    /// `attempts` needs the `tasks` table for its first half: an empty one here.
    fn attempts_test_view(conn: &Connection) -> Value {
        conn.execute_batch("CREATE TABLE IF NOT EXISTS tasks (attempts INTEGER)").unwrap();
        let path = Path::new("index.sqlite");
        attempts(conn, path, &AttemptKeys::read(conn, path).unwrap()).unwrap()
    }

    #[test]
    fn estimators_match_closed_forms() {
        // n = 5, c = 2, k = 2: pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10.
        assert!((pass_at_k(5, 2, 2) - 0.7).abs() < 1e-12);
        // pass^2 = C(2,2)/C(5,2) = 1/10.
        assert!((pass_hat_k(5, 2, 2) - 0.1).abs() < 1e-12);
        assert_eq!(pass_at_k(3, 0, 1), 0.0);
        assert_eq!(pass_at_k(3, 3, 3), 1.0);
        assert_eq!(pass_hat_k(3, 1, 2), 0.0);
        assert!((pass_at_k(4, 1, 1) - 0.25).abs() < 1e-12);
    }
}
