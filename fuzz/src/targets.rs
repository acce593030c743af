//! The fuzz targets: each names its seeds (real fixtures, or files made from them) and runs
//! one input through the library as the CLI would, returning a signature of what happened
//! (format, rejection reasons, gap kinds, error class) that guides the corpus.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trajkit_formats::{discover, read_inputs, InputFile, Options, Sink};
use trajkit_model::Trajectory;

/// One seed: the file name it is written under (the extension drives detection) and bytes.
pub struct Seed {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// Every target's name, in the order `fuzz/run.sh` runs them.
pub const TARGETS: &[&str] = &["formats", "canonical", "zip", "parquet", "sqlite", "npy", "redact"];

/// The seeds of a target from the repository's fixtures (`repo` is the repository root).
pub fn seeds(target: &str, repo: &Path) -> Result<Vec<Seed>, String> {
    let real = repo.join("tests/fixtures/real");
    let files = walk(&real);
    let pick = |f: &dyn Fn(&str) -> bool| -> Vec<Seed> {
        files.iter().filter(|p| f(&p.to_string_lossy())).filter_map(|p| read_seed(p)).collect()
    };
    let seeds = match target {
        "formats" => pick(&|p| {
            (p.ends_with(".json") || p.ends_with(".jsonl") || p.ends_with(".traj") || p.ends_with(".jsonl.gz"))
                && !p.contains("/sqlite/")
        }),
        "canonical" => canonical_seeds(&real)?,
        "zip" => pick(&|p| p.ends_with(".eval")),
        "parquet" => vec![parquet_seed(&real.join("gym/tau2__example_rollouts.jsonl"))?],
        "sqlite" => pick(&|p| p.ends_with(".sqlite")),
        "npy" => walk(&repo.join("tests/fixtures/numeric")).iter().filter_map(|p| read_seed(p)).collect(),
        "redact" => pick(&|p| p.ends_with(".json") || p.ends_with(".jsonl") || p.ends_with(".traj")),
        other => return Err(format!("unknown target {other:?}; targets: {}", TARGETS.join(", "))),
    };
    if seeds.is_empty() {
        return Err(format!("no seeds for target {target}"));
    }
    Ok(seeds)
}

/// Runs one input; panics propagate to the caller (which counts them as crashes).
pub fn run(target: &str, name: &str, input: &[u8], scratch: &Path) -> u64 {
    let mut h = DefaultHasher::new();
    match target {
        "canonical" => canonical(input).hash(&mut h),
        "sqlite" => sqlite(input, scratch).hash(&mut h),
        "npy" => npy(name, input, scratch).hash(&mut h),
        "redact" => redact(input).hash(&mut h),
        _ => pipeline(name, input, scratch).hash(&mut h),
    }
    h.finish()
}

/// Counts what the pipeline accepted.
struct Count(u64);

impl Sink for Count {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        self.0 += t.map_or(0, |t| t.steps.len() as u64 + 1);
    }
}

/// Detection and reading through the pipeline, as `trajkit convert` reads a file.
fn pipeline(name: &str, input: &[u8], scratch: &Path) -> String {
    let path = scratch.join(name);
    if std::fs::write(&path, input).is_err() {
        return "write failed".into();
    }
    let (files, _) = discover(&[path]);
    let opts =
        Options { format: None, canonical: true, records: true, outcomes: None, analyze: None, ..Options::default() };
    let mut sink = Count(0);
    match read_inputs(files, &opts, &mut sink) {
        Ok(reports) => reports
            .iter()
            .map(|r| {
                let reasons: Vec<&String> = r.reasons.keys().collect();
                let gaps: Vec<&String> = r.gaps.keys().collect();
                let error = r.error.as_deref().map(error_class);
                format!("{:?} {} {reasons:?} {gaps:?} {error:?}", r.format, r.trajectories.min(3))
            })
            .collect::<Vec<_>>()
            .join("|"),
        Err(e) => format!("error {}", error_class(&e.to_string())),
    }
}

/// A record parsed as the canonical input reader parses it (serde_json into `Trajectory`),
/// then written back canonically and its digest recomputed.
fn canonical(input: &[u8]) -> String {
    match serde_json::from_slice::<Trajectory>(input) {
        Ok(mut t) => {
            let mut out = Vec::new();
            let written = trajkit_model::canonical::write_canonical(&t, &mut out).is_ok();
            let sealed = trajkit_model::seal(&mut t).is_ok();
            format!("ok {} {} {written} {sealed}", t.steps.len().min(4), t.schema_version.len().min(30))
        }
        Err(e) => format!("err {:?} {}", e.classify(), error_class(&e.to_string())),
    }
}

/// State capture of a (corrupted) SQLite database.
fn sqlite(input: &[u8], scratch: &Path) -> String {
    let path = scratch.join("state.sqlite");
    if std::fs::write(&path, input).is_err() {
        return "write failed".into();
    }
    let ignore = trajkit_verify::state::IgnoreSpec::default();
    match trajkit_verify::state::capture::capture_database(&path, "db", &ignore, None) {
        Ok((db, stats)) => format!("ok {} {}", db.tables.len(), stats.rows.min(10)),
        Err(e) => format!("err {}", error_class(&e.to_string())),
    }
}

/// `trajkit diagnose` on a (malformed) .npy or .npz.
fn npy(name: &str, input: &[u8], scratch: &Path) -> String {
    let path = scratch.join(name);
    if std::fs::write(&path, input).is_err() {
        return "write failed".into();
    }
    match trajkit_verify::diagnose::diagnose(&path) {
        Ok(r) => format!("ok {} {} {}", r.arrays.len(), r.skipped.len(), r.has_non_finite()),
        Err(e) => format!("err {}", error_class(&e.to_string())),
    }
}

/// Format-preserving redaction (`trajkit redact --preserve-format`) of any bytes: when
/// nothing is replaced the output must be the input, byte for byte (a panic otherwise).
fn redact(input: &[u8]) -> String {
    use trajkit_verify::redact::{RedactionReport, Redactor, Rules};
    // One redactor for the run (compiling the detectors per input would be most of the time);
    // the secrets it learns carry over, as they do across the files of one `redact` run.
    static REDACTOR: std::sync::Mutex<Option<Redactor>> = std::sync::Mutex::new(None);
    let mut guard = REDACTOR.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let redactor = guard.get_or_insert_with(|| Redactor::new(Rules::builtin()));
    let mut report = RedactionReport::default();
    let mut out = Vec::new();
    match redactor.redact_json_text("input", input, &mut out, &mut report) {
        Ok(0) => {
            assert!(out == input, "redaction with no replacement changed the bytes");
            "none".into()
        }
        Ok(n) => {
            let kinds: Vec<&String> = report.kinds.keys().collect();
            format!("{} {kinds:?}", n.min(4))
        }
        Err(e) => format!("err {}", error_class(&e.to_string())),
    }
}

/// An error message without its path and numbers: the class of problem.
fn error_class(message: &str) -> String {
    let tail = message.rsplit(": ").next().unwrap_or(message);
    tail.chars().filter(|c| !c.is_ascii_digit()).take(60).collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn read_seed(p: &Path) -> Option<Seed> {
    let bytes = std::fs::read(p).ok()?;
    // Seeds over 4 MiB slow every execution down; the small ones cover the same code.
    let name = p.file_name()?.to_string_lossy().into_owned();
    (bytes.len() <= 4 << 20).then_some(Seed { name, bytes })
}

/// Canonical records of the real fixtures, one per seed (what `trajkit convert` writes).
fn canonical_seeds(real: &Path) -> Result<Vec<Seed>, String> {
    struct Keep(Vec<Seed>);
    impl Sink for Keep {
        fn trajectory(&mut self, _: &InputFile, _: Option<&Trajectory>, canonical: Option<&[u8]>) {
            if let Some(c) = canonical.filter(|c| c.len() <= 1 << 20) {
                self.0.push(Seed { name: "record.json".into(), bytes: c.to_vec() });
            }
        }
    }
    let (files, _) = discover(&[real.to_path_buf()]);
    let opts =
        Options { format: None, canonical: true, records: false, outcomes: None, analyze: None, ..Options::default() };
    let mut keep = Keep(Vec::new());
    read_inputs(files, &opts, &mut keep).map_err(|e| e.to_string())?;
    Ok(keep.0)
}

/// A Parquet file of a real JSON Lines file: one string column per top-level key holding
/// the value's JSON text (as `datasets` stores nested columns it cannot type).
fn parquet_seed(jsonl: &Path) -> Result<Seed, String> {
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    let text = std::fs::read_to_string(jsonl).map_err(|e| e.to_string())?;
    let rows: Vec<serde_json::Map<String, serde_json::Value>> =
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let keys: Vec<String> = rows.first().map(|r| r.keys().cloned().collect()).unwrap_or_default();
    let columns: Vec<ArrayRef> = keys
        .iter()
        .map(|k| {
            let values: Vec<Option<String>> = rows
                .iter()
                .map(|r| r.get(k).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)))
                .collect();
            Arc::new(StringArray::from(values)) as ArrayRef
        })
        .collect();
    let schema = Arc::new(Schema::new(keys.iter().map(|k| Field::new(k, DataType::Utf8, true)).collect::<Vec<_>>()));
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut bytes, schema, None).map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.close().map_err(|e| e.to_string())?;
    Ok(Seed { name: "rows.parquet".into(), bytes })
}
