//! The in-memory list (`ListIndex`) returns exactly what SQL on the index returns: the
//! same rows, order and count for every filter, sort, direction and page. The oracle is the
//! `WHERE ... ORDER BY key, ordinal LIMIT 50 OFFSET n` query the list ran before.

mod support;

use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection};
use trajkit_view::list::ListIndex;
use trajkit_view::query::{Filters, EQUAL_FILTERS, PAGE_SIZE, SORTS};

/// The page and count SQL gives for `f`.
fn oracle(c: &Connection, f: &Filters) -> (Vec<i64>, u64) {
    let mut conds = Vec::new();
    let mut values = Vec::new();
    for (param, value) in &f.equal {
        let col = EQUAL_FILTERS.iter().find(|(p, _)| p == param).expect("a filter").1;
        conds.push(format!("{col} = ?"));
        values.push(Value::Text(value.clone()));
    }
    if let Some(t) = f.min_tier {
        conds.push("quality_tier >= ?".into());
        values.push(Value::Integer(i64::from(t)));
    }
    match f.gap.as_deref() {
        None => {}
        Some("any") => conds.push("gaps <> '{}'".into()),
        Some(kind) => {
            conds.push("EXISTS (SELECT 1 FROM json_each(trajectories.gaps) WHERE key = ?)".into());
            values.push(Value::Text(kind.into()));
        }
    }
    let clause = if conds.is_empty() { String::new() } else { format!("WHERE {}", conds.join(" AND ")) };
    let total: i64 = c
        .query_row(&format!("SELECT count(*) FROM trajectories {clause}"), params_from_iter(&values), |r| r.get(0))
        .expect("count");
    let dir = if f.desc { "DESC" } else { "ASC" };
    let sql = format!(
        "SELECT ordinal FROM trajectories {clause} ORDER BY {} {dir}, ordinal LIMIT {PAGE_SIZE} OFFSET {}",
        SORTS[f.sort].1,
        (f.page - 1) * PAGE_SIZE
    );
    let mut st = c.prepare(&sql).expect("prepare");
    let page = st.query_map(params_from_iter(&values), |r| r.get(0)).expect("query").map(|r| r.expect("row")).collect();
    (page, total as u64)
}

/// Checks every sort, direction and page in `pages` of each filter set against the oracle;
/// returns how many of the filter sets matched at least one row.
fn check_all(c: &Connection, index: &ListIndex, filter_sets: &[Filters], pages: u64) -> usize {
    let mut nonempty = 0;
    for base in filter_sets {
        let mut any = false;
        for sort in 0..SORTS.len() {
            for desc in [false, true] {
                for page in 1..=pages {
                    let f = Filters { sort, desc, page, ..base.clone() };
                    let expected = oracle(c, &f);
                    assert_eq!(index.page(&f), expected, "{f:?}");
                    any |= expected.1 > 0;
                }
            }
        }
        nonempty += usize::from(any);
    }
    nonempty
}

fn equal(pairs: &[(&'static str, &str)]) -> Filters {
    Filters { equal: pairs.iter().map(|(p, v)| (*p, v.to_string())).collect(), page: 1, ..Filters::default() }
}

#[test]
fn every_filter_and_sort_of_the_example_library_matches_sql() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = support::corpus(dir.path());
    let lib = dir.path().join("lib");
    support::build_library(&src.join("sources.toml"), &lib);
    let path = lib.join("index.sqlite");
    let c = trajkit_library::index::open_read_only(&path).expect("open");
    let index = ListIndex::load(&c, &path).expect("load");
    assert_eq!(index.len(), 39);

    // Each value each select filter offers, each gap kind, a task and a duplicate group,
    // tiers, combinations, and values that occur nowhere.
    let facets = index.facets().clone();
    assert_eq!(facets.gap_kinds.len(), 5, "{:?}", facets.gap_kinds);
    let mut sets = vec![equal(&[])];
    for (param, values) in &facets.values {
        sets.extend(values.iter().map(|v| equal(&[(param, v.as_str())])));
    }
    for kind in facets.gap_kinds.iter().map(String::as_str).chain(["any", "no_such_gap"]) {
        sets.push(Filters { gap: Some(kind.into()), ..equal(&[]) });
    }
    let task: String =
        c.query_row("SELECT task_key FROM trajectories WHERE ordinal = 3", [], |r| r.get(0)).expect("task");
    let dup: String =
        c.query_row("SELECT duplicate_group FROM trajectories WHERE ordinal = 5", [], |r| r.get(0)).expect("dup");
    sets.push(equal(&[("task", &task)]));
    sets.push(equal(&[("dup", &dup)]));
    for tier in 0..=4 {
        sets.push(Filters { min_tier: Some(tier), ..equal(&[]) });
    }
    sets.push(Filters {
        min_tier: Some(2),
        gap: Some("any".into()),
        ..equal(&[("source", "nemo-gym"), ("outcome", "success")])
    });
    sets.push(equal(&[("source", "' OR 1=1 --")]));
    sets.push(equal(&[("model", "")]));
    let nonempty = check_all(&c, &index, &sets, 2);
    assert_eq!((sets.len(), nonempty), (59, 56));
}

/// Synthetic rows (no small real library has several pages, NULL rewards, ties on every
/// key, ids that sort differently by bytes than by letters, and several gap kinds in one
/// row): pages 1 to 7 of every filter and sort match SQL.
#[test]
fn pages_nulls_ties_and_byte_order_match_sql() {
    let c = Connection::open_in_memory().expect("memory");
    c.execute_batch(
        "CREATE TABLE trajectories (ordinal INTEGER PRIMARY KEY, id TEXT NOT NULL, source TEXT NOT NULL,
           format TEXT NOT NULL, model TEXT, scaffold TEXT, status TEXT NOT NULL, split TEXT NOT NULL,
           task_key TEXT NOT NULL, duplicate_group TEXT NOT NULL, verification TEXT NOT NULL,
           quality_tier INTEGER NOT NULL, gaps TEXT NOT NULL, steps INTEGER NOT NULL, tool_calls INTEGER NOT NULL,
           reward REAL, task_rank INTEGER NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER)",
    )
    .expect("schema");
    let ids = ["b", "B", "a", "é", "Z", "a b", "ab", "a-1"];
    let gaps = ["{}", "{\"k1\":1}", "{\"k1\":2,\"k2\":1}", "{\"k3\":1}", "{}"];
    for i in 0..260i64 {
        let model = (i % 5 != 0).then(|| format!("m{}", i % 3));
        let reward = (i % 4 != 0).then_some(((i % 9) as f64 - 4.0) / 2.0);
        c.execute(
            "INSERT INTO trajectories VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
            rusqlite::params![
                i,
                format!("{}{}", ids[(i % 8) as usize], i / 8),
                ["a", "b", "c"][(i % 3) as usize],
                ["x", "y"][(i % 2) as usize],
                model,
                (i % 7 == 0).then_some("s"),
                ["success", "failure", "unknown"][(i % 3) as usize],
                ["train", "test"][(i % 2) as usize],
                format!("t{}", i % 7),
                format!("g{}", i % 11),
                ["reward", "none"][(i % 2) as usize],
                i % 5,
                gaps[(i % 5) as usize],
                (i * 7) % 13,
                i % 4,
                reward,
                i % 6,
                (i % 3 != 0).then_some(i % 10),
                (i % 2 == 0).then_some(i % 7),
            ],
        )
        .expect("insert");
    }
    let index = ListIndex::load(&c, std::path::Path::new(":memory:")).expect("load");
    assert_eq!(index.facets().gap_kinds, ["k1", "k2", "k3"]);
    let sets = vec![
        equal(&[]),
        equal(&[("source", "b")]),
        equal(&[("model", "m1"), ("outcome", "failure")]),
        equal(&[("scaffold", "s")]),
        equal(&[("task", "t3"), ("split", "test")]),
        equal(&[("dup", "g4")]),
        Filters { min_tier: Some(3), ..equal(&[("format", "y")]) },
        Filters { gap: Some("any".into()), ..equal(&[]) },
        Filters { gap: Some("k2".into()), ..equal(&[("verification", "none")]) },
        equal(&[("source", "nowhere")]),
    ];
    assert_eq!(check_all(&c, &index, &sets, 7), 9);
}
