//! The list's filters and sorting as parsed from the URL (applied by `list.rs`), the
//! values the filters offer, and rows by id, ordinal or task from the index.

use rusqlite::Connection;
use trajkit_library::rows_out::{row_from_sql, ROW_COLUMNS};
use trajkit_library::Row;

use crate::error::ViewError;
use crate::list::ListIndex;
use crate::url::Query;

/// Rows per list page.
pub const PAGE_SIZE: u64 = 50;
/// Highest page number accepted.
pub const MAX_PAGE: u64 = 1_000_000;

/// Equality filters: (query parameter, column).
pub const EQUAL_FILTERS: [(&str, &str); 9] = [
    ("source", "source"),
    ("format", "format"),
    ("model", "model"),
    ("scaffold", "scaffold"),
    ("outcome", "status"),
    ("split", "split"),
    ("task", "task_key"),
    ("dup", "duplicate_group"),
    ("verification", "verification"),
];

/// Sort keys: (query parameter value, SQL expression of the key, read once per build).
pub const SORTS: [(&str, &str); 8] = [
    ("library", "ordinal"),
    ("steps", "steps"),
    ("tool_calls", "tool_calls"),
    ("reward", "reward"),
    ("tier", "quality_tier"),
    ("task_rank", "task_rank"),
    ("id", "id"),
    ("tokens", "coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0)"),
];

/// What the list shows: filters, sort and page, parsed from (and written back to) the URL.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    /// (parameter, value) of the equality filters set, in [`EQUAL_FILTERS`] order.
    pub equal: Vec<(&'static str, String)>,
    /// Lowest quality tier.
    pub min_tier: Option<u8>,
    /// `any` (some gap) or a gap kind.
    pub gap: Option<String>,
    /// Index into [`SORTS`].
    pub sort: usize,
    pub desc: bool,
    /// 1-based page.
    pub page: u64,
}

impl Filters {
    /// The filters of a query string; unknown sort or tier values are a bad request.
    pub fn parse(q: &Query) -> Result<Filters, ViewError> {
        let equal = EQUAL_FILTERS.iter().filter_map(|(p, _)| q.get(p).map(|v| (*p, v.to_string()))).collect();
        let min_tier = q.number("tier", 4)?.map(|t| t as u8);
        let sort = match q.get("sort") {
            None => 0,
            Some(s) => SORTS
                .iter()
                .position(|(name, _)| *name == s)
                .ok_or_else(|| ViewError::BadRequest(format!("unknown sort {s:?}")))?,
        };
        let desc = match q.get("order") {
            None | Some("asc") => false,
            Some("desc") => true,
            Some(o) => return Err(ViewError::BadRequest(format!("order must be asc or desc, not {o:?}"))),
        };
        let page = q.number("page", MAX_PAGE)?.unwrap_or(1).max(1);
        Ok(Filters { equal, min_tier, gap: q.get("gap").map(str::to_string), sort, desc, page })
    }

    /// The value of filter `param`, if set.
    pub fn value(&self, param: &str) -> Option<&str> {
        self.equal.iter().find(|(p, _)| *p == param).map(|(_, v)| v.as_str())
    }

    /// The query pairs that reproduce these filters, with `page` replaced.
    pub fn pairs(&self, page: u64) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self.equal.iter().map(|(p, v)| (p.to_string(), v.clone())).collect();
        if let Some(t) = self.min_tier {
            out.push(("tier".into(), t.to_string()));
        }
        if let Some(g) = &self.gap {
            out.push(("gap".into(), g.clone()));
        }
        if self.sort != 0 {
            out.push(("sort".into(), SORTS[self.sort].0.into()));
        }
        if self.desc {
            out.push(("order".into(), "desc".into()));
        }
        if page > 1 {
            out.push(("page".into(), page.to_string()));
        }
        out
    }
}

/// One page of the list (rows in order) and how many rows match.
pub fn list(
    c: &Connection,
    path: &std::path::Path,
    index: &ListIndex,
    f: &Filters,
) -> Result<(Vec<Row>, u64), ViewError> {
    let (ordinals, total) = index.page(f);
    let mut rows = Vec::with_capacity(ordinals.len());
    for ordinal in ordinals {
        rows.extend(row_by_ordinal(c, path, ordinal as u64)?);
    }
    Ok((rows, total))
}

/// The row with library id `id`.
pub fn row_by_id(c: &Connection, path: &std::path::Path, id: &str) -> Result<Row, ViewError> {
    one(c, path, "id = ?1", id).and_then(|r| r.ok_or_else(|| ViewError::NotFound(format!("no trajectory {id:?}"))))
}

/// The row at `ordinal`, if any.
pub fn row_by_ordinal(c: &Connection, path: &std::path::Path, ordinal: u64) -> Result<Option<Row>, ViewError> {
    one(c, path, "ordinal = ?1", ordinal as i64)
}

fn one<P: rusqlite::ToSql>(c: &Connection, path: &std::path::Path, cond: &str, p: P) -> Result<Option<Row>, ViewError> {
    let mut st = c
        .prepare_cached(&format!("SELECT {ROW_COLUMNS} FROM trajectories WHERE {cond}"))
        .map_err(ViewError::sql(path))?;
    let mut rows = st.query_map([p], row_from_sql).map_err(ViewError::sql(path))?;
    rows.next().transpose().map_err(ViewError::sql(path))
}

/// Attempts per task shown at most.
pub const MAX_ATTEMPTS: u64 = 2000;

/// Every attempt at task `key`, grouped as success@k groups them (source, model, then
/// source-locator order), at most [`MAX_ATTEMPTS`]; and the total.
pub fn attempts(c: &Connection, path: &std::path::Path, key: &str) -> Result<(Vec<Row>, u64), ViewError> {
    let sql = ViewError::sql(path);
    let total: i64 =
        c.query_row("SELECT count(*) FROM trajectories WHERE task_key = ?1", [key], |r| r.get(0)).map_err(&sql)?;
    let mut st = c
        .prepare_cached(&format!(
            "SELECT {ROW_COLUMNS} FROM trajectories WHERE task_key = ?1
             ORDER BY source, coalesce(model, ''), path, line, document_index, ordinal LIMIT {MAX_ATTEMPTS}"
        ))
        .map_err(&sql)?;
    let rows = st.query_map([key], row_from_sql).map_err(&sql)?.collect::<Result<Vec<_>, _>>().map_err(&sql)?;
    Ok((rows, total as u64))
}

/// The values each filter offers (distinct values in the library).
#[derive(Debug, Clone, Default)]
pub struct Facets {
    /// (parameter, values) for the select-style filters.
    pub values: Vec<(&'static str, Vec<String>)>,
    /// Gap kinds that occur.
    pub gap_kinds: Vec<String>,
}
