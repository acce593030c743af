//! The list's filters and sorts held in memory, one per build: a single pass over the
//! index loads each row's filter values (interned), quality tier and gap kinds, and every
//! sort order of [`SORTS`] is computed once. A list page is then one walk of an order with
//! no SQL: the index's rows are wide, so counting or sorting them per page scanned the
//! whole table (docs/PERFORMANCE.md, trajkit view). Comparisons follow SQLite's (NULL
//! first, numbers before text, text by bytes, ties in library order), so a page is what
//! `ORDER BY key, ordinal LIMIT 50 OFFSET n` on the index returns.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::error::ViewError;
use crate::query::{Facets, Filters, EQUAL_FILTERS, PAGE_SIZE, SORTS};

/// Values offered per filter (the rest can still be typed into the URL).
const MAX_FACET_VALUES: usize = 500;

/// No value (SQL NULL): matches no equality filter.
const NULL_ID: u32 = u32::MAX;

/// One equality-filter column: each row's value id and the ids by value.
#[derive(Default)]
struct Interned {
    ids: Vec<u32>,
    by_value: HashMap<Box<str>, u32>,
}

impl Interned {
    /// Appends a row's value (None for NULL).
    fn push(&mut self, value: Option<&str>) {
        let id = match value {
            None => NULL_ID,
            Some(v) => match self.by_value.get(v) {
                Some(&id) => id,
                None => {
                    let id = self.by_value.len() as u32;
                    self.by_value.insert(v.into(), id);
                    id
                }
            },
        };
        self.ids.push(id);
    }

    /// The distinct values in byte order, at most `limit` (the filter's options).
    fn sorted_values(&self, limit: usize) -> Vec<String> {
        let mut v: Vec<&str> = self.by_value.keys().map(|k| &**k).collect();
        v.sort_unstable();
        v.into_iter().take(limit).map(str::to_string).collect()
    }
}

/// A sort key as SQLite orders values: NULL, then numbers, then text (by byte order,
/// held as the rank of the text among the column's texts). The sort keys are typed
/// columns that never hold a blob; one would sort as NULL.
#[derive(Debug, Clone, Copy)]
enum Key {
    Null,
    Int(i64),
    Real(f64),
    Text(u32),
}

impl Key {
    fn class(self) -> u8 {
        match self {
            Key::Null => 0,
            Key::Int(_) | Key::Real(_) => 1,
            Key::Text(_) => 2,
        }
    }

    fn cmp(self, other: Key) -> Ordering {
        match (self, other) {
            (Key::Int(a), Key::Int(b)) => a.cmp(&b),
            (Key::Text(a), Key::Text(b)) => a.cmp(&b),
            (Key::Int(a), Key::Real(b)) => (a as f64).partial_cmp(&b).unwrap_or(Ordering::Equal),
            (Key::Real(a), Key::Int(b)) => a.partial_cmp(&(b as f64)).unwrap_or(Ordering::Equal),
            (Key::Real(a), Key::Real(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
            (a, b) => a.class().cmp(&b.class()),
        }
    }
}

/// A sort column while loading: keys, with texts kept aside until they are ranked.
#[derive(Default)]
struct KeyColumn {
    keys: Vec<Key>,
    texts: Vec<(u32, Box<str>)>,
}

impl KeyColumn {
    fn push(&mut self, v: ValueRef<'_>) {
        let key = match v {
            ValueRef::Null | ValueRef::Blob(_) => Key::Null,
            ValueRef::Integer(i) => Key::Int(i),
            ValueRef::Real(f) => Key::Real(f),
            ValueRef::Text(t) => {
                self.texts.push((self.keys.len() as u32, String::from_utf8_lossy(t).into()));
                Key::Text(0)
            }
        };
        self.keys.push(key);
    }

    /// The keys with each text replaced by its rank (equal texts share a rank).
    fn ranked(mut self) -> Vec<Key> {
        self.texts.sort_unstable_by(|a, b| a.1.cmp(&b.1));
        let mut rank = 0u32;
        for i in 0..self.texts.len() {
            if i > 0 && self.texts[i].1 != self.texts[i - 1].1 {
                rank += 1;
            }
            self.keys[self.texts[i].0 as usize] = Key::Text(rank);
        }
        self.keys
    }
}

/// Every row of one build as the list filters and sorts them.
pub struct ListIndex {
    /// Each row's ordinal, in library order (positions below index these).
    ordinals: Vec<i64>,
    /// One column per [`EQUAL_FILTERS`] entry.
    columns: Vec<Interned>,
    tier: Vec<i64>,
    /// Whether the row has any gap (`gaps` is not `{}`).
    has_gap: Vec<bool>,
    /// Each row's gap kinds (ids into `gap_ids`).
    gap_kinds: Vec<Box<[u32]>>,
    gap_ids: HashMap<String, u32>,
    /// Row positions in each order: `orders[2 * sort + desc]`.
    orders: Vec<Vec<u32>>,
    facets: Facets,
}

/// A compiled filter: per equality filter its column and the value's id (None: the
/// value occurs nowhere, so nothing matches).
struct Predicate {
    equal: Vec<(usize, Option<u32>)>,
    min_tier: Option<i64>,
    gap: GapFilter,
}

enum GapFilter {
    None,
    Any,
    Kind(Option<u32>),
}

impl ListIndex {
    /// Loads every row of the index at `path` (one table scan) and computes the orders.
    pub fn load(c: &Connection, path: &Path) -> Result<ListIndex, ViewError> {
        let sql = ViewError::sql(path);
        let equal: Vec<&str> = EQUAL_FILTERS.iter().map(|(_, col)| *col).collect();
        let sorts: Vec<&str> = SORTS.iter().map(|(_, expr)| *expr).collect();
        let query = format!(
            "SELECT ordinal, quality_tier, gaps, {}, {} FROM trajectories ORDER BY ordinal",
            equal.join(", "),
            sorts.join(", ")
        );
        let mut st = c.prepare(&query).map_err(&sql)?;
        let mut rows = st.query([]).map_err(&sql)?;
        let mut index = ListIndex {
            ordinals: Vec::new(),
            columns: equal.iter().map(|_| Interned::default()).collect(),
            tier: Vec::new(),
            has_gap: Vec::new(),
            gap_kinds: Vec::new(),
            gap_ids: HashMap::new(),
            orders: Vec::new(),
            facets: Facets::default(),
        };
        let mut keys: Vec<KeyColumn> = sorts.iter().map(|_| KeyColumn::default()).collect();
        while let Some(r) = rows.next().map_err(&sql)? {
            let ordinal: i64 = r.get(0).map_err(&sql)?;
            index.ordinals.push(ordinal);
            index.tier.push(r.get(1).map_err(&sql)?);
            let gaps: String = r.get(2).map_err(&sql)?;
            index.push_gaps(&gaps, ordinal, path)?;
            for (i, column) in index.columns.iter_mut().enumerate() {
                column.push(r.get::<_, Option<String>>(3 + i).map_err(&sql)?.as_deref());
            }
            for (i, column) in keys.iter_mut().enumerate() {
                column.push(r.get_ref(3 + equal.len() + i).map_err(&sql)?);
            }
        }
        for column in keys {
            let keys = column.ranked();
            for desc in [false, true] {
                index.orders.push(order(&keys, desc));
            }
        }
        index.facets = index.compute_facets();
        Ok(index)
    }

    fn push_gaps(&mut self, gaps: &str, ordinal: i64, path: &Path) -> Result<(), ViewError> {
        self.has_gap.push(gaps != "{}");
        if gaps == "{}" {
            self.gap_kinds.push(Box::default());
            return Ok(());
        }
        let kinds: BTreeMap<String, serde_json::Value> = serde_json::from_str(gaps).map_err(|e| {
            ViewError::Library(trajkit_library::LibraryError::Invalid {
                path: path.to_path_buf(),
                message: format!("trajectories row {ordinal}: gaps is not a JSON object: {e}"),
            })
        })?;
        let mut ids = Vec::with_capacity(kinds.len());
        for kind in kinds.into_keys() {
            let next = self.gap_ids.len() as u32;
            ids.push(*self.gap_ids.entry(kind).or_insert(next));
        }
        self.gap_kinds.push(ids.into_boxed_slice());
        Ok(())
    }

    /// How many rows there are.
    pub fn len(&self) -> usize {
        self.ordinals.len()
    }

    /// Whether the library has no rows.
    pub fn is_empty(&self) -> bool {
        self.ordinals.is_empty()
    }

    /// The ordinals of the page `f` asks for, in its order, and how many rows match.
    pub fn page(&self, f: &Filters) -> (Vec<i64>, u64) {
        let p = self.predicate(f);
        let first = f.page.saturating_sub(1).saturating_mul(PAGE_SIZE);
        let end = first.saturating_add(PAGE_SIZE);
        let mut page = Vec::new();
        let mut total = 0u64;
        let order = self.orders.get(2 * f.sort + usize::from(f.desc)).map_or(&[][..], Vec::as_slice);
        for &at in order {
            if self.matches(&p, at as usize) {
                if total >= first && total < end {
                    page.push(self.ordinals[at as usize]);
                }
                total += 1;
            }
        }
        (page, total)
    }

    /// The values each select-style filter offers and the gap kinds that occur.
    pub fn facets(&self) -> &Facets {
        &self.facets
    }

    fn compute_facets(&self) -> Facets {
        let values = EQUAL_FILTERS
            .iter()
            .zip(&self.columns)
            .filter(|((p, _), _)| !matches!(*p, "task" | "dup"))
            .map(|((p, _), column)| (*p, column.sorted_values(MAX_FACET_VALUES)))
            .collect();
        let mut gap_kinds: Vec<String> = self.gap_ids.keys().cloned().collect();
        gap_kinds.sort_unstable();
        Facets { values, gap_kinds }
    }

    fn predicate(&self, f: &Filters) -> Predicate {
        let equal = f
            .equal
            .iter()
            .filter_map(|(param, value)| {
                let col = EQUAL_FILTERS.iter().position(|(p, _)| p == param)?;
                Some((col, self.columns[col].by_value.get(value.as_str()).copied()))
            })
            .collect();
        let gap = match f.gap.as_deref() {
            None => GapFilter::None,
            Some("any") => GapFilter::Any,
            Some(kind) => GapFilter::Kind(self.gap_ids.get(kind).copied()),
        };
        Predicate { equal, min_tier: f.min_tier.map(i64::from), gap }
    }

    fn matches(&self, p: &Predicate, at: usize) -> bool {
        p.equal.iter().all(|&(col, id)| id.is_some_and(|id| self.columns[col].ids[at] == id))
            && p.min_tier.is_none_or(|t| self.tier[at] >= t)
            && match p.gap {
                GapFilter::None => true,
                GapFilter::Any => self.has_gap[at],
                GapFilter::Kind(kind) => kind.is_some_and(|k| self.gap_kinds[at].contains(&k)),
            }
    }
}

/// Row positions sorted by `keys` (descending when `desc`), ties in library order.
fn order(keys: &[Key], desc: bool) -> Vec<u32> {
    let mut positions: Vec<u32> = (0..keys.len() as u32).collect();
    positions.sort_by(|&a, &b| {
        let o = keys[a as usize].cmp(keys[b as usize]);
        if desc {
            o.reverse()
        } else {
            o
        }
    });
    positions
}
