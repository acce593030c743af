//! The library being served, as generations: a generation is one build of the library
//! (identified by its `build.json`: inode, size, mtime and SHA-256). Each request takes the
//! current generation; when `build` swaps a new library in, the next request opens it,
//! while requests in flight finish on the old one (their index connection still reads
//! the old file). A library caught mid-swap (no `build.json`) is answered 503, never half.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use rusqlite::Connection;
use sha2::{Digest, Sha256};
use trajkit_library::{Library, Row};
use trajkit_model::Trajectory;

use crate::error::ViewError;
use crate::fts::{Fts, SearchIndex};
use crate::list::ListIndex;

/// What is shown is passed through this first (`--redact`).
pub type Redact = Arc<dyn Fn(&mut Trajectory) + Send + Sync>;

/// The file identity of `build.json`: changes whenever a build replaces the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl Identity {
    /// The identity of `root/build.json`, or `Changing` when it is absent (mid-swap).
    fn of(root: &Path) -> Result<Identity, ViewError> {
        let path = root.join("build.json");
        let meta = std::fs::metadata(&path).map_err(|e| ViewError::Changing(format!("{}: {e}", path.display())))?;
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        Ok(Identity { dev, ino, len: meta.len(), mtime_ns })
    }
}

/// One build of the library and what was computed from it (lazily, once).
pub struct Generation {
    identity: Identity,
    /// SHA-256 (hex) of `build.json`: names the build for the search sidecar.
    pub digest: String,
    pub lib: Library,
    index_path: PathBuf,
    pool: Mutex<Vec<Connection>>,
    /// The overview's summary and charts (rendered once per generation).
    pub overview: OnceLock<trajkit_export::gallery::html::Html>,
    /// The list's filters and sort orders (loaded on the first list page).
    list: Mutex<Option<Arc<ListIndex>>>,
}

impl Generation {
    fn open(root: &Path, identity: Identity) -> Result<Generation, ViewError> {
        let build = root.join("build.json");
        let bytes = std::fs::read(&build).map_err(|e| ViewError::Changing(format!("{}: {e}", build.display())))?;
        let lib = Library::open(root)?;
        let index_path = root.join("index.sqlite");
        if !index_path.is_file() {
            return Err(ViewError::NotFound(format!("{}: the library has no index", index_path.display())));
        }
        Ok(Generation {
            identity,
            digest: hex(&Sha256::digest(&bytes)),
            lib,
            index_path,
            pool: Mutex::new(Vec::new()),
            overview: OnceLock::new(),
            list: Mutex::new(None),
        })
    }

    /// Runs `f` on a read-only connection to this generation's index (pooled).
    pub fn with_index<T>(&self, f: impl FnOnce(&Connection) -> Result<T, ViewError>) -> Result<T, ViewError> {
        let pooled = self.pool.lock().ok().and_then(|mut p| p.pop());
        let conn = match pooled {
            Some(c) => c,
            None => trajkit_library::index::open_read_only(&self.index_path)?,
        };
        let result = f(&conn);
        if let Ok(mut pool) = self.pool.lock() {
            pool.push(conn);
        }
        result
    }

    /// The list's filters and orders of this build, loaded once (other requests for it wait).
    pub fn list_index(&self) -> Result<Arc<ListIndex>, ViewError> {
        let mut list = self.list.lock().map_err(|_| ViewError::Changing("list lock poisoned".into()))?;
        if let Some(index) = list.as_ref() {
            return Ok(index.clone());
        }
        let index = Arc::new(self.with_index(|c| ListIndex::load(c, &self.index_path))?);
        *list = Some(index.clone());
        Ok(index)
    }

    /// The index file (for error messages).
    pub fn index_path(&self) -> &Path {
        &self.index_path
    }

    /// The canonical record of `row`, checked against the row's content digest (a
    /// mismatch means the library was swapped between the index and the shard: 503).
    pub fn record(&self, row: &Row) -> Result<Trajectory, ViewError> {
        let t = self.lib.record_at(row).map_err(|e| match e {
            trajkit_library::LibraryError::Io { .. } => ViewError::Changing(e.to_string()),
            other => ViewError::Library(other),
        })?;
        if t.content_digest != row.content_digest {
            return Err(ViewError::Changing(format!("record {} changed under the request", row.id)));
        }
        Ok(t)
    }
}

/// What every request shares: the library root, the current generation, the search
/// sidecar and the redaction hook.
pub struct Shared {
    root: PathBuf,
    current: RwLock<Option<Arc<Generation>>>,
    pub fts: Arc<Fts>,
    pub redact: Option<Redact>,
}

impl Shared {
    /// State for the library at `root`; opens it once to fail early on a non-library.
    pub fn new(root: &Path, redact: Option<Redact>, build_search: bool) -> Result<Shared, ViewError> {
        let fts = Arc::new(Fts::new(root, redact.is_some(), build_search));
        let shared = Shared { root: root.to_path_buf(), current: RwLock::new(None), fts, redact };
        shared.generation()?;
        Ok(shared)
    }

    /// The generation to answer a request with: the current one, or the library as it
    /// is now when `build.json` changed since (then its search index is prepared).
    pub fn generation(&self) -> Result<Arc<Generation>, ViewError> {
        let identity = Identity::of(&self.root)?;
        if let Some(g) = self.current.read().ok().and_then(|c| c.clone()) {
            if g.identity == identity {
                return Ok(g);
            }
        }
        let mut current = self.current.write().map_err(|_| ViewError::Changing("state lock poisoned".into()))?;
        if let Some(g) = current.as_ref().filter(|g| g.identity == identity) {
            return Ok(g.clone());
        }
        let g = Arc::new(Generation::open(&self.root, identity)?);
        self.fts.prepare(&g, self.redact.clone());
        *current = Some(g.clone());
        Ok(g)
    }

    /// The search index of generation `g`, when it is ready.
    pub fn search_index(&self, g: &Generation) -> SearchIndex {
        self.fts.state_for(&g.digest)
    }

    /// Applies the redaction hook, if any.
    pub fn redact(&self, t: &mut Trajectory) {
        if let Some(r) = &self.redact {
            r(t);
        }
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
