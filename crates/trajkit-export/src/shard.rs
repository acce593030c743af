//! Where rows go: one file, or a folder of shards (`--shard-size N`) named the way Hugging
//! Face `datasets` infers splits (`<split>-00000-of-00003.jsonl.zst`), or a folder of ATIF
//! documents. A folder is assembled under a temporary name and renamed into place at the end.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::card::CardEntry;
use crate::error::ExportError;
use crate::export::{ExportOptions, Format};
use crate::output::{parent_dir, AtomicFile};
use crate::parquet::{self, ParquetFile};
use crate::rows::View;

/// Data file extensions trajkit writes, longest first.
const DATA_EXTS: &[&str] = &[".jsonl.gz", ".jsonl.zst", ".jsonl.zstd", ".jsonl", ".parquet"];

fn data_ext(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    DATA_EXTS.iter().copied().find(|e| name.ends_with(e) && name.len() > e.len())
}

/// One encoded output unit.
pub enum Unit {
    /// A JSON Lines line (newline included).
    Line(Vec<u8>),
    /// A Parquet row (the OpenAI row object).
    Value(Value),
    /// An ATIF document file: name and bytes.
    Doc(String, Vec<u8>),
}

#[derive(Debug, Clone)]
enum Layout {
    File(PathBuf),
    Shards { dir: PathBuf, size: u64 },
    Docs(PathBuf),
}

/// The resolved destination of an export.
#[derive(Debug, Clone)]
pub struct Plan {
    pub format: Format,
    layout: Layout,
    /// Extension of each data file (`.jsonl.zst`, `.parquet`, ...).
    ext: String,
    split: String,
}

fn usage(msg: String) -> ExportError {
    ExportError::Usage(msg)
}

impl Plan {
    /// Checks format, extension, view and destination before anything is read.
    pub fn new(opts: &ExportOptions) -> Result<Plan, ExportError> {
        let out = &opts.output;
        let ext = data_ext(out);
        let format = match (opts.format, ext) {
            (Some(f), _) => f,
            (None, Some(".parquet")) => Format::Parquet,
            (None, Some(_)) => Format::OpenAi,
            (None, None) => {
                return Err(usage(format!(
                    "cannot infer the format of {}: use .jsonl[.gz|.zst] or .parquet, or --format",
                    out.display()
                )))
            }
        };
        let lines = matches!(ext, Some(e) if e != ".parquet");
        let ok = match format {
            Format::OpenAi | Format::ShareGpt => lines || (ext.is_none() && opts.shard_size.is_some()),
            Format::Parquet => ext == Some(".parquet") || (ext.is_none() && opts.shard_size.is_some()),
            Format::Atif => lines || ext.is_none(),
        };
        if !ok {
            return Err(usage(format!("{}: not a {} output name", out.display(), format.as_str())));
        }
        if format == Format::Atif && opts.view != View::Full {
            return Err(usage("--format atif writes whole trajectories: use --view full".into()));
        }
        if opts.shard_size == Some(0) {
            return Err(usage("--shard-size must be at least 1".into()));
        }
        let default_ext = if format == Format::Parquet { ".parquet" } else { ".jsonl" };
        let ext_s = ext.unwrap_or(default_ext).to_string();
        let strip = |p: &Path| -> PathBuf {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            p.with_file_name(name.strip_suffix(ext.unwrap_or("")).unwrap_or(&name))
        };
        let layout = match (opts.shard_size, format, ext) {
            (Some(size), _, _) => Layout::Shards { dir: strip(out), size },
            (None, Format::Atif, None) => Layout::Docs(out.clone()),
            (None, _, _) => Layout::File(out.clone()),
        };
        if let Layout::Shards { dir, .. } | Layout::Docs(dir) = &layout {
            check_free(dir)?;
        }
        Ok(Plan { format, layout, ext: ext_s, split: opts.filter.split.as_str().into() })
    }

    pub fn is_folder(&self) -> bool {
        !matches!(self.layout, Layout::File(_))
    }

    /// The path the card sits beside (a file) or in (a folder).
    pub fn card_anchor(&self) -> PathBuf {
        match &self.layout {
            Layout::File(p) | Layout::Shards { dir: p, .. } | Layout::Docs(p) => p.clone(),
        }
    }

    /// The output's name relative to the card's directory.
    pub fn output_name(&self) -> String {
        match &self.layout {
            Layout::File(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            Layout::Shards { .. } | Layout::Docs(_) => ".".into(),
        }
    }

    /// The encoded ATIF document of a record: a line, or a document file.
    pub fn atif_unit(&self, id: &str, doc: &Value) -> Unit {
        match self.layout {
            Layout::Docs(_) => {
                let bytes = serde_json::to_vec_pretty(doc).unwrap_or_default();
                Unit::Doc(format!("{}.json", safe_name(id)), bytes)
            }
            _ => Unit::Line(crate::export::line(doc)),
        }
    }
}

/// A folder output must not exist yet, or be empty.
fn check_free(dir: &Path) -> Result<(), ExportError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(usage(format!("{} exists and is not empty; choose a new folder", dir.display())));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ExportError::Io { path: dir.to_path_buf(), source: e }),
    }
}

/// A file name from a record id: letters, digits, `.`, `_`, `-` kept, the rest `_`.
fn safe_name(id: &str) -> String {
    let s: String = id
        .chars()
        .take(120)
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .collect();
    if s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

enum Writer {
    Lines(AtomicFile),
    Parquet(ParquetFile),
}

/// The open destination.
pub struct Sink {
    plan: Plan,
    view: View,
    with_text: bool,
    /// Temporary folder for shards and documents.
    staging: Option<tempfile::TempDir>,
    current: Option<Writer>,
    in_current: u64,
    /// Data files written so far (temporary names inside staging for folders).
    files: Vec<PathBuf>,
    doc_names: std::collections::HashSet<String>,
}

impl Sink {
    pub fn open(plan: &Plan, view: View, with_text: bool) -> Result<Sink, ExportError> {
        let staging = match &plan.layout {
            Layout::File(_) => None,
            Layout::Shards { dir, .. } | Layout::Docs(dir) => {
                let parent = parent_dir(dir);
                std::fs::create_dir_all(parent).map_err(ExportError::io(parent))?;
                let t =
                    tempfile::Builder::new().prefix(".trajkit-").tempdir_in(parent).map_err(ExportError::io(parent))?;
                Some(t)
            }
        };
        Ok(Sink {
            plan: plan.clone(),
            view,
            with_text,
            staging,
            current: None,
            in_current: 0,
            files: Vec::new(),
            doc_names: Default::default(),
        })
    }

    fn staging_dir(&self) -> Result<&Path, ExportError> {
        self.staging.as_ref().map(|t| t.path()).ok_or_else(|| usage("internal: no staging folder".into()))
    }

    fn open_writer(&mut self) -> Result<(), ExportError> {
        let path = match &self.plan.layout {
            Layout::File(p) => p.clone(),
            _ => self.staging_dir()?.join(format!("{}-{:05}{}", self.plan.split, self.files.len(), self.plan.ext)),
        };
        let w = if self.plan.format == Format::Parquet {
            Writer::Parquet(ParquetFile::create(&path, parquet::schema(self.view, self.with_text))?)
        } else {
            Writer::Lines(AtomicFile::create(&path)?)
        };
        self.current = Some(w);
        self.in_current = 0;
        Ok(())
    }

    /// Closes the current file (a shard; the single file is closed by `finish`).
    fn close_current(&mut self, card_json: Option<String>) -> Result<(), ExportError> {
        let path = match self.current.take() {
            None => return Ok(()),
            Some(Writer::Lines(f)) => f.finish()?,
            Some(Writer::Parquet(p)) => p.finish(card_json)?,
        };
        self.files.push(path);
        Ok(())
    }

    /// Writes the units of one record (in order), starting new shards as they fill.
    pub fn write(&mut self, units: Vec<Unit>) -> Result<(), ExportError> {
        let mut values = Vec::new();
        for u in units {
            if let Unit::Doc(name, bytes) = u {
                self.write_doc(name, &bytes)?;
                continue;
            }
            if let Layout::Shards { size, .. } = self.plan.layout {
                if self.in_current >= size {
                    self.flush_values(&mut values)?;
                    self.close_current(None)?;
                }
            }
            if self.current.is_none() {
                self.open_writer()?;
            }
            self.in_current += 1;
            match u {
                Unit::Line(bytes) => match &mut self.current {
                    Some(Writer::Lines(f)) => f.write_all(&bytes)?,
                    _ => return Err(usage("internal: a line for a Parquet file".into())),
                },
                Unit::Value(v) => values.push(v),
                Unit::Doc(..) => {}
            }
        }
        self.flush_values(&mut values)
    }

    fn flush_values(&mut self, values: &mut Vec<Value>) -> Result<(), ExportError> {
        if let Some(Writer::Parquet(p)) = &mut self.current {
            p.write_rows(values)?;
        }
        values.clear();
        Ok(())
    }

    fn write_doc(&mut self, name: String, bytes: &[u8]) -> Result<(), ExportError> {
        let mut unique = name.clone();
        let mut k = 1;
        while !self.doc_names.insert(unique.clone()) {
            unique = format!("{}~{k}.json", name.trim_end_matches(".json"));
            k += 1;
        }
        let path = self.staging_dir()?.join(&unique);
        crate::output::write_atomic(&path, bytes)?;
        self.files.push(path);
        Ok(())
    }

    /// Closes everything, names shards `-of-N`, moves a folder into place; returns the data
    /// files (final paths) and the card entry with its file list filled in.
    pub fn finish(mut self, mut entry: CardEntry) -> Result<(Vec<PathBuf>, CardEntry), ExportError> {
        if self.current.is_none() && matches!(self.plan.layout, Layout::File(_)) {
            // An export with no rows still writes its (empty) file, so the result is explicit.
            self.open_writer()?;
        }
        let rel = |p: &Path, base: &Path| p.strip_prefix(base).unwrap_or(p).to_string_lossy().into_owned();
        if let Layout::File(p) = &self.plan.layout {
            entry.files = vec![p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()];
            let json = serde_json::to_string(&entry).ok();
            self.close_current(json)?;
            return Ok((self.files, entry));
        }
        self.close_current(None)?;
        let n = self.files.len();
        let mut finals = Vec::with_capacity(n);
        for (i, p) in self.files.iter().enumerate() {
            let to = match self.plan.layout {
                Layout::Shards { .. } => {
                    p.with_file_name(format!("{}-{i:05}-of-{n:05}{}", self.plan.split, self.plan.ext))
                }
                _ => p.clone(),
            };
            if to != *p {
                std::fs::rename(p, &to).map_err(ExportError::io(&to))?;
            }
            finals.push(to);
        }
        let staging = self.staging.take().ok_or_else(|| usage("internal: no staging folder".into()))?;
        let dir = self.plan.card_anchor();
        entry.files = match self.plan.layout {
            Layout::Shards { .. } => vec![format!("{}-*{}", self.plan.split, self.plan.ext)],
            _ => vec!["*.json".into()],
        };
        let base = staging.path().to_path_buf();
        let kept = staging.keep();
        if dir.is_dir() {
            std::fs::remove_dir(&dir).map_err(ExportError::io(&dir))?;
        }
        std::fs::rename(&kept, &dir).map_err(ExportError::io(&dir))?;
        let files = finals.iter().map(|p| dir.join(rel(p, &base))).collect();
        Ok((files, entry))
    }
}
