//! The HTTP server (tiny_http, a few worker threads) and the routes. Read-only: GET and
//! HEAD only. Every response carries a Content-Security-Policy that allows no script and
//! no network, and `nosniff`, so data served as JSON is never run as a page.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use tiny_http::{Header, Method, Request, Response};
use trajkit_export::gallery::html::Html;
use trajkit_export::gallery::stats::Summary;

use crate::error::ViewError;
use crate::fts::{self, Column};
use crate::pages::{self, SearchHit};
use crate::query::{self, Filters, PAGE_SIZE};
use crate::state::{Generation, Redact, Shared};
use crate::url::Query;

/// How the viewer is served.
#[derive(Clone)]
pub struct ViewOptions {
    /// Address to bind; 127.0.0.1 unless told otherwise.
    pub host: String,
    /// Port; 0 picks a free one.
    pub port: u16,
    /// Worker threads answering requests.
    pub workers: usize,
    /// Build the search index (on first use); false leaves search off.
    pub search: bool,
    /// Applied to every record before it is shown or indexed (`--redact`).
    pub redact: Option<Redact>,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions { host: "127.0.0.1".into(), port: 8765, workers: 4, search: true, redact: None }
    }
}

/// A running viewer.
pub struct Server {
    http: Arc<tiny_http::Server>,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    addr: SocketAddr,
}

const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

impl Server {
    /// Opens the library at `root`, binds and starts the workers.
    pub fn start(root: &Path, opts: &ViewOptions) -> Result<Server, ViewError> {
        let shared = Arc::new(Shared::new(root, opts.redact.clone(), opts.search)?);
        let http = tiny_http::Server::http((opts.host.as_str(), opts.port)).map_err(|e| ViewError::Io {
            path: format!("{}:{}", opts.host, opts.port).into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let addr = http.server_addr().to_ip().ok_or_else(|| ViewError::BadRequest("not an IP listener".into()))?;
        let http = Arc::new(http);
        let workers = (0..opts.workers.max(1))
            .map(|_| {
                let (http, shared) = (http.clone(), shared.clone());
                std::thread::spawn(move || {
                    for request in http.incoming_requests() {
                        answer(&shared, request);
                    }
                })
            })
            .collect();
        Ok(Server { http, shared, workers, addr })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits until the search index of the current library is ready or failed.
    pub fn wait_for_search(&self) -> Result<fts::SearchIndex, ViewError> {
        let g = self.shared.generation()?;
        Ok(self.shared.fts.wait(&g.digest))
    }

    /// The search sidecar's path.
    pub fn search_index_path(&self) -> &Path {
        self.shared.fts.path()
    }

    /// Serves until the process ends.
    pub fn run(self) {
        for w in self.workers {
            let _ = w.join();
        }
    }

    /// Stops the workers (tests).
    pub fn stop(self) {
        for _ in &self.workers {
            self.http.unblock();
        }
        for w in self.workers {
            let _ = w.join();
        }
    }
}

/// A page to send: status, content type, body.
struct Page {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
}

fn answer(shared: &Shared, request: Request) {
    let page = if matches!(request.method(), Method::Get | Method::Head) {
        route(shared, request.url()).unwrap_or_else(|e| error_page(shared, &e))
    } else {
        html(405, "Method not allowed", &pages::error(405, "the viewer is read-only: GET only"), "")
    };
    let head_only = *request.method() == Method::Head;
    let mut response =
        Response::from_data(if head_only { Vec::new() } else { page.body }).with_status_code(page.status);
    for (k, v) in [
        ("Content-Type", page.content_type),
        ("Content-Security-Policy", CSP),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ] {
        if let Ok(h) = Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            response.add_header(h);
        }
    }
    let _ = request.respond(response);
}

fn html(status: u16, title: &str, body: &Html, library: &str) -> Page {
    Page { status, content_type: "text/html; charset=utf-8", body: pages::layout(title, library, body).into_bytes() }
}

fn error_page(shared: &Shared, e: &ViewError) -> Page {
    let name = shared.generation().map(|g| library_name(&g)).unwrap_or_default();
    html(e.status(), "error", &pages::error(e.status(), &e.to_string()), &name)
}

fn library_name(g: &Generation) -> String {
    let root = std::fs::canonicalize(g.lib.root()).unwrap_or_else(|_| g.lib.root().to_path_buf());
    root.file_name().map_or_else(|| "library".into(), |n| n.to_string_lossy().into_owned())
}

/// Dispatches one URL.
fn route(shared: &Shared, url: &str) -> Result<Page, ViewError> {
    let (path, q) = Query::parse(url)?;
    let g = shared.generation()?;
    let name = library_name(&g);
    match path.as_str() {
        "/" => Ok(html(200, "overview", overview(&g, &name)?, &name)),
        "/list" => {
            let f = Filters::parse(&q)?;
            let index = g.list_index()?;
            let (rows, total) = g.with_index(|c| query::list(c, g.index_path(), &index, &f))?;
            Ok(html(200, "trajectories", &pages::list(&f, index.facets(), &rows, total), &name))
        }
        "/search" => search(shared, &g, &q, &name),
        "/trajectory" => {
            let id = required(&q, "id")?;
            let row = g.with_index(|c| query::row_by_id(c, g.index_path(), id))?;
            let mut t = g.record(&row)?;
            shared.redact(&mut t);
            Ok(html(200, &row.id, &pages::trajectory(&row, &t), &name))
        }
        "/raw" => {
            let id = required(&q, "id")?;
            let row = g.with_index(|c| query::row_by_id(c, g.index_path(), id))?;
            let mut t = g.record(&row)?;
            shared.redact(&mut t);
            let body = serde_json::to_vec_pretty(&t).map_err(|e| ViewError::BadRequest(e.to_string()))?;
            Ok(Page { status: 200, content_type: "application/json; charset=utf-8", body })
        }
        "/task" => {
            let key = required(&q, "key")?;
            let (rows, total) = g.with_index(|c| query::attempts(c, g.index_path(), key))?;
            if total == 0 {
                return Err(ViewError::NotFound(format!("no task {key:?}")));
            }
            Ok(html(200, key, &pages::task(key, &rows, total), &name))
        }
        "/compare" => {
            let (a, b) = (required(&q, "a")?, required(&q, "b")?);
            let ra = g.with_index(|c| query::row_by_id(c, g.index_path(), a))?;
            let rb = g.with_index(|c| query::row_by_id(c, g.index_path(), b))?;
            let (mut ta, mut tb) = (g.record(&ra)?, g.record(&rb)?);
            shared.redact(&mut ta);
            shared.redact(&mut tb);
            Ok(html(200, "side by side", &pages::compare((&ra, &ta), (&rb, &tb)), &name))
        }
        other => Err(ViewError::NotFound(format!("no page {other:?}"))),
    }
}

fn required<'q>(q: &'q Query, key: &str) -> Result<&'q str, ViewError> {
    q.get(key).ok_or_else(|| ViewError::BadRequest(format!("the parameter {key} is required")))
}

/// The overview's summary, computed once per generation from the rows.
fn overview<'g>(g: &'g Generation, name: &str) -> Result<&'g Html, ViewError> {
    if let Some(h) = g.overview.get() {
        return Ok(h);
    }
    let mut summary = Summary::default();
    for row in g.lib.rows()? {
        summary.add(&row?);
    }
    Ok(g.overview.get_or_init(|| pages::overview(&summary, name)))
}

fn search(shared: &Shared, g: &Generation, q: &Query, name: &str) -> Result<Page, ViewError> {
    let words = q.get("q").unwrap_or("");
    let column = Column::parse(q.get("in"))
        .ok_or_else(|| ViewError::BadRequest("in must be all, message, calls or results".into()))?;
    let page = q.number("page", fts::COUNT_CAP / PAGE_SIZE + 1)?.unwrap_or(1).max(1);
    let state = shared.search_index(g);
    let (mut hits, mut count) = (Vec::new(), 0);
    if let (fts::SearchIndex::Ready(path), Some(expr)) = (&state, fts::match_expr(words, column)) {
        let (found, n) = fts::search(path, &expr, (page - 1) * PAGE_SIZE, PAGE_SIZE)?;
        count = n;
        hits = g.with_index(|c| {
            found
                .iter()
                .filter_map(|h| match query::row_by_ordinal(c, g.index_path(), h.ordinal) {
                    Ok(Some(row)) => Some(Ok(SearchHit { row, step: h.step })),
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
    }
    Ok(html(200, "search", &pages::search(words, column, &state, &hits, count, page), name))
}
