//! Where each target's seeds come from: the real fixtures (`tests/fixtures/real`), or files
//! made from them (canonical records, a Parquet file), and the small AFL++ seed set cut
//! from those.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use trajkit_formats::{discover, read_inputs, InputFile, Options, Sink};
use trajkit_model::Trajectory;

use crate::targets::TARGETS;

/// One seed: the file name it is written under (the extension drives detection) and bytes.
pub struct Seed {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// Largest seed handed to AFL++: under its 1 MiB input limit with room for the name (the
/// real SQLite database and the Parquet seed are close to it; `cmin` prefers small seeds).
const AFL_MAX_SEED: usize = (1 << 20) - 128;
/// A JSON Lines seed for AFL++ keeps its first lines up to this size (at least one line).
const AFL_LINES: usize = 16 << 10;

/// The AFL++ seeds of a target: each seed of `seeds` no larger than `AFL_MAX_SEED`, JSON
/// Lines files cut to their first lines; framed as `name NUL bytes` (crate::frame).
pub fn afl_seeds(target: &str, repo: &Path) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    for seed in seeds(target, repo)? {
        let bytes = if seed.name.ends_with(".jsonl") { first_lines(&seed.bytes, AFL_LINES) } else { &seed.bytes };
        if bytes.len() <= AFL_MAX_SEED {
            out.push(crate::frame::encode(&seed.name, bytes));
        }
    }
    Ok(out)
}

/// The first lines of `text` that fit in `limit` bytes, and at least the first line.
fn first_lines(text: &[u8], limit: usize) -> &[u8] {
    let mut end = 0;
    for (i, b) in text.iter().enumerate() {
        if *b == b'\n' {
            if end > 0 && i + 1 > limit {
                break;
            }
            end = i + 1;
        }
    }
    if end == 0 {
        text
    } else {
        &text[..end]
    }
}

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
        "redact" | "json" => pick(&|p| p.ends_with(".json") || p.ends_with(".jsonl") || p.ends_with(".traj")),
        other => return Err(format!("unknown target {other:?}; targets: {}", TARGETS.join(", "))),
    };
    if seeds.is_empty() {
        return Err(format!("no seeds for target {target}"));
    }
    Ok(seeds)
}

/// Every file under `dir`, sorted.
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

/// A seed of one fixture file, named by its file name.
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
                self.0.push(Seed { name: "record.jsonl".into(), bytes: c.to_vec() });
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
