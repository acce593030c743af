//! OpenCode's storage tree: `<storage>/session/<projectID>/<sessionID>.json` (session info),
//! `<storage>/message/<sessionID>/<messageID>.json` (message info) and
//! `<storage>/part/<messageID>/<partID>.json` (one part each). A session file gathers its
//! messages, their parts and its child sessions (`parentID`) into one record in the export
//! shape (`{info, messages: [{info, parts}]}`, children under [`CHILDREN`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::input::{self, InputFile};
use crate::rejection::{parse_record, schema, Problem, Reason};

/// Key of the assembled record that holds the child sessions' records (not an OpenCode key).
pub(super) const CHILDREN: &str = "trajkit:children";

/// The storage root of a session file (`<root>/session/<projectID>/<id>.json`), when the
/// file sits in that layout.
pub(super) fn root_of(session_file: &Path) -> Option<PathBuf> {
    let project = session_file.parent()?;
    let sessions = project.parent()?;
    (sessions.file_name()? == "session").then(|| sessions.parent().map(Path::to_path_buf))?
}

/// The JSON files of a directory, sorted by name (OpenCode's ids sort by creation time).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.is_file() && input::logical_name(p).ends_with(".json"))
        .collect();
    out.sort();
    out
}

/// `(id, parentID)` of every session file of a project directory, read once per process
/// per directory (keyed by its modification time): every session file of it asks.
fn sessions_of(project: &Path) -> Vec<(String, Option<String>, PathBuf)> {
    use std::sync::{Mutex, OnceLock};
    type Entry = Vec<(String, Option<String>, PathBuf)>;
    type Cache = HashMap<(PathBuf, Option<std::time::SystemTime>), Entry>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let key = (project.to_path_buf(), std::fs::metadata(project).and_then(|m| m.modified()).ok());
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return hit;
    }
    let found: Entry = json_files(project)
        .into_iter()
        .filter_map(|p| {
            let v: Value = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
            let id = v.get("id")?.as_str()?.to_string();
            let parent = v.get("parentID").and_then(Value::as_str).map(str::to_string);
            Some((id, parent, p))
        })
        .collect();
    if let Ok(mut c) = cache.lock() {
        c.insert(key, found.clone());
    }
    found
}

/// One session of the tree: its file, the message files (each with its part files) and
/// its child sessions.
struct Tree {
    file: PathBuf,
    messages: Vec<(PathBuf, Vec<PathBuf>)>,
    children: Vec<Tree>,
}

/// The tree of session `id` (file `file`) under `root`; `depth` bounds a parent cycle.
fn tree(root: &Path, file: &Path, id: &str, depth: usize) -> Tree {
    let messages = json_files(&root.join("message").join(id))
        .into_iter()
        .map(|m| {
            let stem = m.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let parts = json_files(&root.join("part").join(stem));
            (m, parts)
        })
        .collect();
    let children = match file.parent() {
        Some(project) if depth < 16 => sessions_of(project)
            .into_iter()
            .filter(|(cid, parent, _)| parent.as_deref() == Some(id) && cid != id)
            .map(|(cid, _, p)| tree(root, &p, &cid, depth + 1))
            .collect(),
        _ => Vec::new(),
    };
    Tree { file: file.to_path_buf(), messages, children }
}

/// Whether the session of `file` names a parent session whose file is in the same project
/// directory.
fn has_parent_beside(file: &Path) -> bool {
    let Some(project) = file.parent() else { return false };
    let sessions = sessions_of(project);
    let parent = sessions.iter().find(|(_, _, p)| p == file).and_then(|(_, parent, _)| parent.as_deref());
    parent.is_some_and(|pid| sessions.iter().any(|(id, _, _)| id == pid))
}

/// The session tree of a session file, when it sits in the storage layout.
fn tree_of(file: &InputFile) -> Option<Tree> {
    if file.is_stdin() {
        return None;
    }
    let path = file.fs_path.canonicalize().ok()?;
    let root = root_of(&path)?;
    let id = path.file_stem()?.to_string_lossy().into_owned();
    Some(tree(&root, &path, &id, 0))
}

/// Every file a session file's record consumes: its message and part files, and its child
/// sessions' files with theirs (canonical paths). A child session whose parent's file is
/// beside it claims nothing: the parent's record consumes it and its files.
pub(super) fn consumed(file: &InputFile) -> Vec<PathBuf> {
    fn walk(t: &Tree, top: bool, out: &mut Vec<PathBuf>) {
        if !top {
            out.push(t.file.clone());
        }
        for (m, parts) in &t.messages {
            out.push(m.clone());
            out.extend(parts.iter().cloned());
        }
        for c in &t.children {
            walk(c, false, out);
        }
    }
    let mut out = Vec::new();
    if let Some(t) = tree_of(file).filter(|t| !has_parent_beside(&t.file)) {
        walk(&t, true, &mut out);
    }
    out.into_iter().filter_map(|p| p.canonicalize().ok()).collect()
}

/// Assembles a session file (`bytes`) with its tree into one record; unreadable message and
/// part files become problems naming the file (the rest of the session is still read).
pub(super) fn assemble(
    file: &InputFile,
    bytes: &[u8],
    limit: usize,
    problems: &mut Vec<Problem>,
) -> Result<Vec<u8>, Problem> {
    let info = object(bytes, &file.display)?;
    if info.contains_key("info") && info.contains_key("messages") {
        // An export document that happens to sit where session files do.
        return Ok(bytes.to_vec());
    }
    let record = match tree_of(file) {
        Some(t) => session_record(info, &t, file, limit, problems),
        None => session_record(
            info,
            &Tree { file: PathBuf::new(), messages: Vec::new(), children: Vec::new() },
            file,
            limit,
            problems,
        ),
    };
    serde_json::to_vec(&record).map_err(|e| Problem::new(Reason::InternalError, "$", e.to_string()))
}

/// `{info, messages, trajkit:children}` of one session.
fn session_record(
    info: Map<String, Value>,
    t: &Tree,
    lead: &InputFile,
    limit: usize,
    problems: &mut Vec<Problem>,
) -> Value {
    let mut messages = Vec::new();
    for (m, parts) in &t.messages {
        let Some(info) = load(m, lead, limit, problems) else { continue };
        let parts: Vec<Value> =
            parts.iter().filter_map(|p| load(p, lead, limit, problems)).map(Value::Object).collect();
        messages.push(serde_json::json!({"info": info, "parts": parts}));
    }
    let children: Vec<Value> = t
        .children
        .iter()
        .filter_map(|c| load(&c.file, lead, limit, problems).map(|info| session_record(info, c, lead, limit, problems)))
        .collect();
    let mut out = Map::new();
    out.insert("info".into(), Value::Object(info));
    out.insert("messages".into(), Value::Array(messages));
    if !children.is_empty() {
        out.insert(CHILDREN.into(), Value::Array(children));
    }
    Value::Object(out)
}

/// One storage file as an object; a file that cannot be read, is too large or is not a JSON
/// object becomes a problem naming it.
fn load(path: &Path, lead: &InputFile, limit: usize, problems: &mut Vec<Problem>) -> Option<Map<String, Value>> {
    let display = display_of(lead, path);
    let f = InputFile { fs_path: path.to_path_buf(), display: display.clone(), root: lead.root.clone() };
    match input::read_gathered(&f, limit).and_then(|buf| object(&buf, &display)) {
        Ok(m) => Some(m),
        Err(p) => {
            problems.push(p);
            None
        }
    }
}

/// Parses one storage file that must be a JSON object; the problem's message names it.
fn object(bytes: &[u8], display: &str) -> Result<Map<String, Value>, Problem> {
    match parse_record(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(schema("$", format!("{display}: not a JSON object"))),
        Err(mut p) => {
            p.message = format!("{display}: {}", p.message);
            Err(p)
        }
    }
}

/// Report path of a storage file: relative to the session file's storage root, joined to
/// the root as the session file's display path shows it.
fn display_of(lead: &InputFile, path: &Path) -> String {
    let shown = Path::new(&lead.display);
    let root_shown = shown.parent().and_then(Path::parent).and_then(Path::parent);
    let root_real = lead.fs_path.canonicalize().ok().as_deref().and_then(root_of);
    match (root_shown, root_real.and_then(|r| path.strip_prefix(&r).ok().map(Path::to_path_buf))) {
        (Some(r), Some(rel)) => r.join(rel).display().to_string(),
        _ => path.display().to_string(),
    }
}
