//! Full-text search: an SQLite FTS5 sidecar beside the library (the library itself is
//! immutable and manifest-checked), `.NAME.trajkit-view.sqlite`, built on first use in a
//! background thread from the canonical records and keyed by the build's `build.json`
//! digest, so a rebuilt library gets a new one. One row per top-level step (rowid =
//! ordinal << 20 | step) with three columns: message, calls, results. Contentless: the
//! sidecar holds the index only, never the text. With `--redact` the redacted text is
//! indexed (in `.NAME.trajkit-view-redacted.sqlite`), so a secret cannot be searched for.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rusqlite::{params, Connection, OpenFlags};
use trajkit_library::Library;

use crate::error::ViewError;
use crate::state::{Generation, Redact};
use crate::text::step_texts;

/// Steps per trajectory that can be indexed (the rowid holds the step in 20 bits).
pub const MAX_STEPS: usize = 1 << 20;
/// Words of a search query used; the rest are ignored.
pub const MAX_TERMS: usize = 16;
/// Matches counted before the count says "more than".
pub const COUNT_CAP: u64 = 10_000;

const SCHEMA: &str = "
PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE fts USING fts5(message, calls, results, content='', tokenize='unicode61 remove_diacritics 2');
";

/// Where the search index of a library stands.
#[derive(Debug, Clone)]
pub enum SearchIndex {
    /// Not built (the server was started without search).
    Disabled,
    /// Being built: trajectories done of total.
    Building { done: u64, total: u64 },
    /// Ready to query at this path.
    Ready(PathBuf),
    /// The build failed; why.
    Failed(String),
}

/// A build of the sidecar for one library digest.
struct Job {
    digest: String,
    done: Arc<AtomicU64>,
    total: u64,
    result: Arc<OnceLock<Result<PathBuf, String>>>,
}

/// The sidecar of one served library.
pub struct Fts {
    path: PathBuf,
    enabled: bool,
    job: Mutex<Option<Job>>,
}

impl Fts {
    /// The sidecar for the library at `root` (beside it, named after it).
    pub fn new(root: &Path, redacted: bool, enabled: bool) -> Fts {
        Fts { path: sidecar_path(root, redacted), enabled, job: Mutex::new(None) }
    }

    /// The sidecar's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes sure the sidecar of generation `g` exists or is being built.
    pub fn prepare(&self, g: &Generation, redact: Option<Redact>) {
        let Ok(mut job) = self.job.lock() else { return };
        if !self.enabled || job.as_ref().is_some_and(|j| j.digest == g.digest) {
            return;
        }
        let result = Arc::new(OnceLock::new());
        let done = Arc::new(AtomicU64::new(0));
        let total = g.with_index(|c| count_rows(c, g.index_path())).unwrap_or(0);
        if sidecar_digest(&self.path).as_deref() == Some(g.digest.as_str()) {
            let _ = result.set(Ok(self.path.clone()));
            done.store(total, Ordering::Relaxed);
        } else {
            let (lib, path, digest) = (g.lib.clone(), self.path.clone(), g.digest.clone());
            let (res, counter) = (result.clone(), done.clone());
            std::thread::spawn(move || {
                let outcome =
                    build(&lib, &path, &digest, redact.as_ref(), &counter).map(|()| path).map_err(|e| e.to_string());
                let _ = res.set(outcome);
            });
        }
        *job = Some(Job { digest: g.digest.clone(), done, total, result });
    }

    /// The state of the sidecar for the library of `digest`.
    pub fn state_for(&self, digest: &str) -> SearchIndex {
        if !self.enabled {
            return SearchIndex::Disabled;
        }
        let Ok(job) = self.job.lock() else { return SearchIndex::Failed("lock poisoned".into()) };
        match job.as_ref().filter(|j| j.digest == digest) {
            None => SearchIndex::Building { done: 0, total: 0 },
            Some(j) => match j.result.get() {
                Some(Ok(p)) => SearchIndex::Ready(p.clone()),
                Some(Err(e)) => SearchIndex::Failed(e.clone()),
                None => SearchIndex::Building { done: j.done.load(Ordering::Relaxed), total: j.total },
            },
        }
    }

    /// Blocks until the sidecar of `digest` is ready or failed (tests, benches).
    pub fn wait(&self, digest: &str) -> SearchIndex {
        loop {
            match self.state_for(digest) {
                SearchIndex::Building { .. } => std::thread::sleep(std::time::Duration::from_millis(20)),
                other => return other,
            }
        }
    }
}

/// `PARENT/.NAME.trajkit-view.sqlite` for the library `PARENT/NAME`.
pub fn sidecar_path(root: &Path, redacted: bool) -> PathBuf {
    let absolute = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let name = absolute.file_name().map_or_else(|| "library".into(), |n| n.to_string_lossy().into_owned());
    let parent = absolute.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let suffix = if redacted { "-redacted" } else { "" };
    parent.join(format!(".{name}.trajkit-view{suffix}.sqlite"))
}

fn count_rows(c: &Connection, path: &Path) -> Result<u64, ViewError> {
    c.query_row("SELECT count(*) FROM trajectories", [], |r| r.get(0)).map_err(ViewError::sql(path))
}

/// The build digest a sidecar was made for, if it is a complete sidecar.
fn sidecar_digest(path: &Path) -> Option<String> {
    let c = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    c.query_row("SELECT value FROM meta WHERE key = 'build_digest'", [], |r| r.get(0)).ok()
}

/// Builds the sidecar of `lib` into a temporary file, then renames it into place.
fn build(lib: &Library, path: &Path, digest: &str, redact: Option<&Redact>, done: &AtomicU64) -> Result<(), ViewError> {
    let tmp = path.with_extension(format!("sqlite.tmp-{}-{}", std::process::id(), &digest[..12.min(digest.len())]));
    let _ = std::fs::remove_file(&tmp);
    let result = fill(lib, &tmp, digest, redact, done).and_then(|()| {
        std::fs::rename(&tmp, path).map_err(|source| ViewError::Io { path: path.to_path_buf(), source })
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn fill(lib: &Library, tmp: &Path, digest: &str, redact: Option<&Redact>, done: &AtomicU64) -> Result<(), ViewError> {
    let sql = ViewError::sql(tmp);
    let c = Connection::open(tmp).map_err(&sql)?;
    c.execute_batch(SCHEMA).map_err(&sql)?;
    c.execute_batch("BEGIN").map_err(&sql)?;
    {
        let mut insert =
            c.prepare("INSERT INTO fts (rowid, message, calls, results) VALUES (?1, ?2, ?3, ?4)").map_err(&sql)?;
        for (ordinal, record) in lib.records()?.enumerate() {
            let (row, mut t) = record?;
            if t.content_digest != row.content_digest {
                return Err(ViewError::Changing(format!("record {} changed while indexing", row.id)));
            }
            if let Some(r) = redact {
                r(&mut t);
            }
            for (step, text) in step_texts(&t).iter().enumerate().take(MAX_STEPS) {
                if text.message.is_empty() && text.calls.is_empty() && text.results.is_empty() {
                    continue;
                }
                let rowid = ((ordinal as i64) << 20) | step as i64;
                insert.execute(params![rowid, text.message, text.calls, text.results]).map_err(&sql)?;
            }
            done.fetch_add(1, Ordering::Relaxed);
        }
    }
    c.execute_batch("INSERT INTO fts(fts) VALUES ('optimize')").map_err(&sql)?;
    c.execute(
        "INSERT INTO meta VALUES ('build_digest', ?1), ('trajkit_version', ?2)",
        params![digest, env!("CARGO_PKG_VERSION")],
    )
    .map_err(&sql)?;
    c.execute_batch("COMMIT").map_err(&sql)?;
    c.close().map_err(|(_, e)| sql(e))
}

/// Which column a search looks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    All,
    Message,
    Calls,
    Results,
}

impl Column {
    /// The column named by a query parameter (`all` when absent); None when unknown.
    pub fn parse(s: Option<&str>) -> Option<Column> {
        Some(match s.unwrap_or("all") {
            "all" => Column::All,
            "message" => Column::Message,
            "calls" => Column::Calls,
            "results" => Column::Results,
            _ => return None,
        })
    }

    /// The parameter value.
    pub fn as_str(self) -> &'static str {
        match self {
            Column::All => "all",
            Column::Message => "message",
            Column::Calls => "calls",
            Column::Results => "results",
        }
    }
}

/// The FTS5 expression for what a person typed: its words (letters and digits), each
/// quoted (so no FTS5 syntax is taken from the input), all required; None without words.
pub fn match_expr(q: &str, column: Column) -> Option<String> {
    let words: Vec<&str> = q.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).take(MAX_TERMS).collect();
    if words.is_empty() {
        return None;
    }
    let prefix = match column {
        Column::All => "",
        Column::Message => "message : ",
        Column::Calls => "calls : ",
        Column::Results => "results : ",
    };
    Some(words.iter().map(|w| format!("{prefix}\"{w}\"")).collect::<Vec<_>>().join(" "))
}

/// One matching step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub ordinal: u64,
    pub step: u64,
}

/// Matching steps in library order from `offset` (at most `limit`), and how many match
/// (counted up to [`COUNT_CAP`]).
pub fn search(path: &Path, expr: &str, offset: u64, limit: u64) -> Result<(Vec<Hit>, u64), ViewError> {
    let sql = ViewError::sql(path);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = Connection::open_with_flags(path, flags).map_err(&sql)?;
    let mut st =
        c.prepare_cached("SELECT rowid FROM fts WHERE fts MATCH ?1 ORDER BY rowid LIMIT ?2 OFFSET ?3").map_err(&sql)?;
    let hits = st
        .query_map(params![expr, limit as i64, offset as i64], |r| r.get::<_, i64>(0))
        .map_err(&sql)?
        .map(|r| r.map(|id| Hit { ordinal: (id >> 20) as u64, step: (id & (MAX_STEPS as i64 - 1)) as u64 }))
        .collect::<Result<Vec<_>, _>>()
        .map_err(&sql)?;
    let count = c
        .query_row(
            "SELECT count(*) FROM (SELECT rowid FROM fts WHERE fts MATCH ?1 LIMIT ?2)",
            params![expr, COUNT_CAP as i64 + 1],
            |r| r.get::<_, i64>(0),
        )
        .map_err(&sql)?;
    Ok((hits, count as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_words_are_quoted_and_syntax_is_dropped() {
        assert_eq!(
            match_expr("ls -la \"x\" OR NEAR(", Column::All).as_deref(),
            Some("\"ls\" \"la\" \"x\" \"OR\" \"NEAR\"")
        );
        assert_eq!(match_expr("grep", Column::Calls).as_deref(), Some("calls : \"grep\""));
        assert_eq!(match_expr(" -- ", Column::All), None);
    }

    #[test]
    fn sidecar_sits_beside_the_library() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lib = dir.path().join("lib");
        std::fs::create_dir(&lib).expect("mkdir");
        let p = sidecar_path(&lib, false);
        assert_eq!(p.file_name().and_then(|n| n.to_str()), Some(".lib.trajkit-view.sqlite"));
        assert_eq!(
            sidecar_path(&lib, true).file_name().and_then(|n| n.to_str()),
            Some(".lib.trajkit-view-redacted.sqlite")
        );
    }
}
