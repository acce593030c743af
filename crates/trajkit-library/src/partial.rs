//! Partial builds, the second of a build's phases: one file group is read, validated,
//! canonicalized and scored, and written into the staging directory as
//! `partials/gNNNNNN/`: its canonical shards (`canonical/part-NNNNN.jsonl.zst`, numbered
//! from 0 within the partial), `entries.jsonl` (the index data in reading order: one
//! trajectory, rejection or file report per line) and `partial.json` (its figures).
//! A partial is written in a temporary sibling and renamed into place, replacing any
//! earlier attempt's: a retried task never appends. Format: docs/scale-out.md.

use foldhash::{HashMap, HashMapExt};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::Sender;
use serde::{Deserialize, Serialize};
use trajkit_formats::outcomes::OutcomeTable;
use trajkit_formats::{FileReport, InputFile, Options, Rejection, Sink};
use trajkit_model::Trajectory;

use crate::build::{make_row, step_rows, BuildOptions, Progress};
use crate::digest::Digests;
use crate::error::LibraryError;
use crate::index::{CallRow, RejectionRow, StepRow};
use crate::plan::{partial_dir, registry_of, FileGroup};
use crate::registry::ResolvedSource;
use crate::row::Row;
use crate::shards::ShardWriter;
use crate::signatures::Signatures;
use crate::split::SplitConfig;

/// The index data file of a partial.
pub const ENTRIES: &str = "entries.jsonl";
/// The figures file of a partial, written last.
pub const SUMMARY: &str = "partial.json";

/// One line of `entries.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
pub enum Entry {
    /// An accepted trajectory: the record's own id (before `~N`), and its row (`shard`
    /// names the partial's shard), steps and tool calls.
    Trajectory {
        record_id: String,
        row: Box<Row>,
        steps: Vec<StepRow>,
        calls: Vec<CallRow>,
        /// The instruction's shingle hashes (`clusters`), on the partial's first record
        /// with that instruction only.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "packed::u64s")]
        shingles: Option<Vec<u64>>,
        /// The content sketch (`near`), on one record of each distinct interaction only.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "packed::u32s")]
        content: Option<Vec<u32>>,
        /// The winnowed 13-gram fingerprints (`contamination`), with the content sketch.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "packed::u64s")]
        ngrams: Option<Vec<u64>>,
    },
    Rejection(RejectionRow),
    /// A finished file: its library-wide number, source (registry index) and figures.
    File {
        file: u64,
        source: usize,
        report: FileReport,
    },
}

/// The integer arrays of an entry (shingles, sketch, fingerprints) as base64 (standard
/// alphabet, no padding) of their little-endian bytes (`spill`'s byte helpers): a third of the
/// text of a decimal array, and finalize, which reads every entry on one thread, decodes it
/// without parsing a number per element. `packed::u64s` and `packed::u32s` are the `serde(with)`
/// modules.
mod packed {
    use base64::engine::general_purpose::STANDARD_NO_PAD;
    use base64::Engine;
    use serde::de::{Deserializer, Error, Visitor};
    use serde::Serializer;

    use crate::spill;

    pub mod u64s {
        pub fn serialize<S: serde::Serializer>(v: &Option<Vec<u64>>, s: S) -> Result<S::Ok, S::Error> {
            super::serialize(v, u64::to_le_bytes, s)
        }
        pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<u64>>, D::Error> {
            d.deserialize_option(super::Packed(u64::from_le_bytes))
        }
    }

    pub mod u32s {
        pub fn serialize<S: serde::Serializer>(v: &Option<Vec<u32>>, s: S) -> Result<S::Ok, S::Error> {
            super::serialize(v, u32::to_le_bytes, s)
        }
        pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<u32>>, D::Error> {
            d.deserialize_option(super::Packed(u32::from_le_bytes))
        }
    }

    fn serialize<S: Serializer, T: Copy, const N: usize>(
        values: &Option<Vec<T>>,
        to: fn(T) -> [u8; N],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let Some(values) = values else { return s.serialize_none() };
        let mut bytes = Vec::new();
        spill::to_bytes(values, to, &mut bytes);
        s.serialize_str(&STANDARD_NO_PAD.encode(bytes))
    }

    /// Reads the base64 text back, each `N` bytes turned into a value by the function held.
    struct Packed<T, const N: usize>(fn([u8; N]) -> T);

    impl<'de, T, const N: usize> Visitor<'de> for Packed<T, N> {
        type Value = Option<Vec<T>>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "base64 of {N}-byte little-endian integers")
        }

        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(self)
        }

        fn visit_str<E: Error>(self, text: &str) -> Result<Self::Value, E> {
            let bytes = STANDARD_NO_PAD.decode(text).map_err(E::custom)?;
            if bytes.len() % N != 0 {
                return Err(E::custom(format!("{} bytes is not a whole number of {N}-byte integers", bytes.len())));
            }
            let mut out = Vec::new();
            spill::from_bytes(&bytes, self.0, &mut out);
            Ok(Some(out))
        }
    }
}

/// What a partial build produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialSummary {
    pub group: u32,
    pub files: u64,
    pub trajectories: u64,
    pub shards: u32,
    /// Stopped at a rejection because of `--strict`.
    pub strict_failure: Option<String>,
}

/// Reads one group and writes its partial into `staging` (replacing an earlier one).
pub fn build_partial(
    opts: &BuildOptions,
    group: &FileGroup,
    staging: &Path,
    progress: &dyn Progress,
) -> Result<PartialSummary, LibraryError> {
    build_partial_teed(opts, group.clone(), staging, progress, None)
}

/// `build_partial`, each entry sent to `tee` instead of written to `entries.jsonl` (which
/// stays empty): the build on one machine merges the partial into the index while it is read.
pub(crate) fn build_partial_teed(
    opts: &BuildOptions,
    group: FileGroup,
    staging: &Path,
    progress: &dyn Progress,
    tee: Option<Sender<Entry>>,
) -> Result<PartialSummary, LibraryError> {
    let registry = registry_of(opts)?;
    let outcomes = match &opts.outcomes {
        Some(p) => Some(Arc::new(
            OutcomeTable::load(p).map_err(|e| LibraryError::Invalid { path: p.clone(), message: e.to_string() })?,
        )),
        None => None,
    };
    let target = partial_dir(staging, group.index);
    let parent = target.parent().unwrap_or(staging);
    std::fs::create_dir_all(parent).map_err(LibraryError::io(parent))?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".g{:06}-", group.index))
        .tempdir_in(parent)
        .map_err(LibraryError::io(parent))?;
    let summary = write_partial(tmp.path(), opts, &registry.sources, group, outcomes, progress, tee)?;
    if progress.cancelled() {
        return Err(LibraryError::Cancelled);
    }
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(LibraryError::io(&target))?;
    }
    let dir = tmp.keep();
    std::fs::rename(&dir, &target).map_err(LibraryError::io(&target))?;
    Ok(summary)
}

/// Reads the group into `dir`: shards, entries, then the summary.
fn write_partial(
    dir: &Path,
    opts: &BuildOptions,
    sources: &[ResolvedSource],
    group: FileGroup,
    outcomes: Option<Arc<OutcomeTable>>,
    progress: &dyn Progress,
    tee: Option<Sender<Entry>>,
) -> Result<PartialSummary, LibraryError> {
    let entries_path = dir.join(ENTRIES);
    let entries = File::create(&entries_path).map_err(LibraryError::io(&entries_path))?;
    // Each file's number in the library and its size, by the path reports give.
    let FileGroup { index, first_file, files: planned } = group;
    let files: HashMap<String, (u64, u64)> =
        planned.iter().enumerate().map(|(i, f)| (f.display.clone(), (first_file + i as u64, f.bytes))).collect();
    let mut sink = PartialSink {
        entries: BufWriter::with_capacity(1 << 20, entries),
        entries_path: entries_path.clone(),
        line: Vec::new(),
        tee,
        shards: ShardWriter::new(&dir.join("canonical"), opts.shard_bytes, opts.threads)?,
        source: 0,
        files: &files,
        ordinal: 0,
        ids: HashMap::new(),
        error: None,
        strict: opts.strict,
        strict_failure: None,
        progress,
        signed: Signing::default(),
        fingerprinted: fingerprinted(sources),
    };
    let mut files = 0u64;
    let signed = sink.signed.clone();
    for (source, run) in runs_by_source(planned) {
        if sink.should_stop() {
            break;
        }
        let resolved = sources.get(source).ok_or_else(|| LibraryError::Invalid {
            path: PathBuf::from(run.first().map_or("", |f| f.display.as_str())),
            message: format!("source {source} is not in the registry"),
        })?;
        sink.source = source;
        let src = &resolved.source;
        let format = resolved.forced_format(opts.format.as_ref());
        let read_opts = Options {
            format,
            canonical: true,
            records: false,
            outcomes: outcomes.clone(),
            analyze: Some(analyzer(resolved, &opts.split, signed.clone(), sink.fingerprinted)),
            max_record_bytes: opts.max_record_bytes,
        };
        files += run.len() as u64;
        trajkit_formats::read_files(run, &read_opts, &mut sink)
            .map_err(|e| LibraryError::Invalid { path: PathBuf::from(&src.name), message: e.to_string() })?;
    }
    let PartialSink { shards, error, strict_failure, ordinal, mut entries, tee, .. } = sink;
    // The merge taking the entries ends with them, while the shards are finished.
    drop(tee);
    let shard_count = shards.finish()?;
    entries.flush().map_err(LibraryError::io(&entries_path))?;
    if let Some(e) = error {
        return Err(e);
    }
    let summary = PartialSummary { group: index, files, trajectories: ordinal, shards: shard_count, strict_failure };
    crate::layout::write_json(&dir.join(SUMMARY), &summary)?;
    Ok(summary)
}

/// The planned files as runs of one source each, their paths moved; the plan's list is freed
/// before the reading starts instead of held (88 bytes a file) until its last run is read.
fn runs_by_source(planned: Vec<crate::plan::PlannedFile>) -> Vec<(usize, Vec<InputFile>)> {
    let mut lengths: Vec<(usize, usize)> = Vec::new();
    for f in &planned {
        match lengths.last_mut() {
            Some((source, n)) if *source == f.source => *n += 1,
            _ => lengths.push((f.source, 1)),
        }
    }
    let mut files = planned.into_iter();
    lengths
        .into_iter()
        .map(|(source, n)| (source, files.by_ref().take(n).map(crate::plan::PlannedFile::into_input).collect()))
        .collect()
}

/// Everything the reading sink keeps while records stream by.
struct PartialSink<'a> {
    entries: BufWriter<File>,
    entries_path: PathBuf,
    /// The entry being written (compact JSON, then one `write_all`).
    line: Vec<u8>,
    /// Where the entries go instead of `entries.jsonl` (`build_partial_teed`).
    tee: Option<Sender<Entry>>,
    shards: ShardWriter,
    source: usize,
    /// Each file's number in the library and its size in bytes, by its display path.
    files: &'a HashMap<String, (u64, u64)>,
    ordinal: u64,
    ids: HashMap<u64, u32>,
    error: Option<LibraryError>,
    strict: bool,
    strict_failure: Option<String>,
    progress: &'a dyn Progress,
    /// The digests the analyzers made signatures of (`MADE`), and those whose signatures
    /// this partial has written (`FILED`).
    signed: Signing,
    /// Whether content fingerprints are made (`fingerprinted`).
    fingerprinted: bool,
}

/// Counts of ids seen so far, by hash (the `~N` suffixes).
pub(crate) type IdCounts = HashMap<u64, u32>;

/// The library id of the next record with id `id`: `id` itself the first time, `id~N`
/// for its N-th repeat.
pub(crate) fn unique_id(ids: &mut IdCounts, id: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    let n = ids.entry(h.finish()).or_insert(0);
    *n += 1;
    if *n == 1 {
        id.to_string()
    } else {
        format!("{id}~{}", *n - 1)
    }
}

impl PartialSink<'_> {
    fn fail(&mut self, e: LibraryError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    fn write(&mut self, entry: Entry) -> Result<(), LibraryError> {
        if let Some(tee) = &self.tee {
            // A send fails only once the merge stopped: its error is the build's, reported
            // when it is joined.
            let _ = tee.send(entry);
            return Ok(());
        }
        let path = &self.entries_path;
        self.line.clear();
        trajkit_model::compact::to_writer(&mut self.line, &entry)
            .map_err(|e| LibraryError::Invalid { path: path.clone(), message: e.to_string() })?;
        self.line.push(b'\n');
        self.entries.write_all(&self.line).map_err(LibraryError::io(path))
    }

    /// Marks `digest` in the set `which` picks as filed; true the first time.
    fn filed(&self, which: fn(&mut Signed) -> &mut Digests, digest: &str) -> bool {
        match self.signed.lock() {
            Ok(mut s) => which(&mut s).mark(digest, FILED),
            Err(_) => true,
        }
    }

    /// The content sketch to write with this record: on the first record of each interaction
    /// only. The analyzers sketch the first copy they meet; when that copy was not filed (a
    /// repeated line), the sketch is made here from the canonical record.
    fn content_once(
        &mut self,
        row: &Row,
        content: Option<Signatures>,
        canonical: &[u8],
    ) -> Result<Signatures, LibraryError> {
        if !self.filed(|s| &mut s.interactions, &row.interaction_digest) {
            return Ok(Signatures::default());
        }
        if let Some(c) = content {
            return Ok(c);
        }
        let t: Trajectory = serde_json::from_slice(canonical)
            .map_err(|e| LibraryError::Invalid { path: PathBuf::from(&row.path), message: e.to_string() })?;
        Ok(content_of(&t, self.fingerprinted))
    }

    /// Files a record: a unique id within the partial, a shard line, and its entry.
    fn add(&mut self, analysis: Analysis, canonical: &[u8]) -> Result<(), LibraryError> {
        let Analysis { mut row, steps, calls, shingles, content } = analysis;
        let Signatures { sketch: content, fingerprints: ngrams } = self.content_once(&row, content, canonical)?;
        let shingles = match &row.instruction_digest {
            Some(d) if self.filed(|s| &mut s.instructions, d) => Some(match shingles {
                Some(s) => s,
                None => shingles_of_record(canonical, &row.path)?,
            }),
            _ => None,
        };
        let id = unique_id(&mut self.ids, &row.id);
        let renamed;
        let bytes = if id == row.id {
            canonical
        } else {
            renamed = with_id(canonical, &id, &row.path)?;
            &renamed
        };
        let placed = self.shards.append(bytes)?;
        let record_id = std::mem::replace(&mut row.id, id);
        placed.fill(&mut row);
        self.ordinal += 1;
        self.write(Entry::Trajectory { record_id, row: Box::new(row), steps, calls, shingles, content, ngrams })
    }
}

/// What the worker threads compute from each accepted record (`Options::analyze`), so the
/// ordered thread only files it.
struct Analysis {
    row: Row,
    steps: Vec<StepRow>,
    calls: Vec<CallRow>,
    /// The instruction's shingle hashes, on the first record of each instruction to reach
    /// an analyzer.
    shingles: Option<Vec<u64>>,
    /// The content signatures, on the first record of each interaction to reach an analyzer.
    content: Option<Signatures>,
}

/// What is computed once per distinct interaction: its content sketch (`near`) and, when
/// `fingerprinted`, its n-gram fingerprints (`contamination`); none with the bench switch
/// `signatures_off`.
fn content_of(t: &Trajectory, fingerprinted: bool) -> Signatures {
    if signatures_off() {
        return Signatures::default();
    }
    crate::signatures::of(t, true, fingerprinted)
}

/// Whether a build of `sources` needs content fingerprints: the contamination report
/// matches training content against `evaluation_only` trajectories' only, so without such a
/// source they would be made and never read (a quarter of signing a run's content). Every
/// partial and finalize of a build read the same registry.
fn fingerprinted(sources: &[ResolvedSource]) -> bool {
    sources.iter().any(|s| s.source.role == crate::registry::Role::EvaluationOnly)
}

/// Bench switch `TRAJKIT_BENCH_NO_SIGNATURES=1`: the map phase computes no instruction
/// shingles, content sketches or fingerprints, so bench/ab.sh can price them (docs/PERFORMANCE.md).
/// Not a user option: the library it builds lacks near-duplicates and contamination.
fn signatures_off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var_os("TRAJKIT_BENCH_NO_SIGNATURES").is_some_and(|v| v == "1"))
}

/// Bench switch `TRAJKIT_BENCH_SIGN_EVERY=1`: the analyzers sketch every record's content,
/// as on a corpus whose interactions are all distinct. bench/make_corpus.py repeats the real
/// rollouts, so its records share a few hundred interactions and sketching would otherwise go
/// unmeasured. The library is the same (the sink still files one sketch per interaction).
fn sign_every() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("TRAJKIT_BENCH_SIGN_EVERY").is_some_and(|v| v == "1"))
}

/// The analyzer of one source: its row (id and shard filled in later), steps and calls.
fn analyzer(
    source: &ResolvedSource,
    split: &SplitConfig,
    signed: Signing,
    fingerprinted: bool,
) -> trajkit_formats::pipeline::Analyzer {
    let (source, split) = (source.clone(), split.clone());
    let run = Arc::new(move |t: &Trajectory, interaction_digest: Option<String>| {
        let row = make_row(t, t.id.clone(), interaction_digest, &source, &split, String::new(), 0);
        let (steps, calls) = step_rows(t);
        // Which copy of an instruction or interaction carries its signatures varies between
        // runs; the signatures do not (they are functions of the digest's text), and finalize
        // keys them by digest.
        let (instruction, interaction) = match signed.lock() {
            Ok(mut s) => (
                row.instruction_digest.as_deref().is_some_and(|d| s.instructions.mark(d, MADE)),
                s.interactions.mark(&row.interaction_digest, MADE) || sign_every(),
            ),
            Err(_) => (true, true),
        };
        let shingles = t.task.instruction.as_deref().filter(|_| instruction).map(instruction_shingles);
        let content = interaction.then(|| content_of(t, fingerprinted));
        Box::new(Analysis { row, steps, calls, shingles, content }) as Box<dyn std::any::Any + Send>
    });
    trajkit_formats::pipeline::Analyzer { interaction: true, run }
}

/// The digests of this partial whose signatures the analyzer threads have made (`MADE`) and
/// the sink has filed (`FILED`). Which copy of a digest an analyzer meets first is not the
/// first one filed; one table per kind holds both marks (two sets held each digest twice,
/// for the whole read of a local build).
#[derive(Default)]
struct Signed {
    /// Instruction digests (shingles).
    instructions: Digests,
    /// Interaction digests (content sketch and fingerprints).
    interactions: Digests,
}

const MADE: u8 = 1;
const FILED: u8 = 2;

/// `Signed`, shared by the analyzer threads and the sink.
type Signing = Arc<std::sync::Mutex<Signed>>;

/// The shingles of an instruction (none with the bench switch `signatures_off`).
fn instruction_shingles(text: &str) -> Vec<u64> {
    if signatures_off() {
        return Vec::new();
    }
    crate::minhash::shingles(text)
}

/// The shingles of the instruction of a canonical record (the rare record whose analysis
/// did not make them: another copy of its instruction, not filed, did).
fn shingles_of_record(canonical: &[u8], path: &str) -> Result<Vec<u64>, LibraryError> {
    #[derive(Deserialize)]
    struct Record {
        task: Task,
    }
    #[derive(Deserialize)]
    struct Task {
        instruction: Option<String>,
    }
    let r: Record = serde_json::from_slice(canonical)
        .map_err(|e| LibraryError::Invalid { path: PathBuf::from(path), message: e.to_string() })?;
    Ok(r.task.instruction.as_deref().map(instruction_shingles).unwrap_or_default())
}

/// The canonical JSON of a record with another id (the rare repeat of an id).
pub(crate) fn with_id(canonical: &[u8], id: &str, path: &str) -> Result<Vec<u8>, LibraryError> {
    let invalid = |e: serde_json::Error| LibraryError::Invalid { path: PathBuf::from(path), message: e.to_string() };
    let mut t: Trajectory = serde_json::from_slice(canonical).map_err(invalid)?;
    t.id = id.to_string();
    let mut out = Vec::with_capacity(canonical.len() + 8);
    trajkit_model::canonical::write_canonical(&t, &mut out).map_err(invalid)?;
    out.push(b'\n');
    Ok(out)
}

impl Sink for PartialSink<'_> {
    fn trajectory(&mut self, _file: &InputFile, _t: Option<&Trajectory>, _canonical: Option<&[u8]>) {
        // Every record comes through `analyzed` (the build always sets an analyzer).
    }

    fn analyzed(&mut self, _file: &InputFile, analysis: Box<dyn std::any::Any + Send>, canonical: Option<&[u8]>) {
        if self.error.is_some() {
            return;
        }
        let (Ok(analysis), Some(c)) = (analysis.downcast::<Analysis>(), canonical) else {
            self.fail(LibraryError::Invalid {
                path: PathBuf::from("."),
                message: "record without its analysis".into(),
            });
            return;
        };
        if let Err(e) = self.add(*analysis, c) {
            self.fail(e);
        }
    }

    fn rejection(&mut self, r: &Rejection) {
        let file = self.files.get(r.path.as_str()).map_or(u64::MAX, |f| f.0);
        for p in &r.problems {
            let entry = Entry::Rejection(RejectionRow {
                file,
                path: r.path.clone(),
                line: r.line,
                document_index: r.document_index,
                reason: p.reason.as_str().to_string(),
                json_path: p.json_path.clone(),
                message: p.message.clone(),
            });
            if let Err(e) = self.write(entry) {
                self.fail(e);
            }
        }
        if self.strict && self.strict_failure.is_none() {
            let p = r.problems.first();
            self.strict_failure = Some(format!(
                "{}: {}: {}: {}",
                r.location(),
                p.map(|p| p.json_path.as_str()).unwrap_or("$"),
                r.reason.as_str(),
                p.map(|p| p.message.as_str()).unwrap_or("")
            ));
        }
    }

    fn file_done(&mut self, report: &FileReport) {
        let (file, bytes) = self.files.get(report.path.as_str()).copied().unwrap_or((u64::MAX, 0));
        if self.strict && self.strict_failure.is_none() {
            if let Some(e) = &report.error {
                self.strict_failure = Some(format!("{}: {e}", report.path));
            }
        }
        if let Err(e) = self.write(Entry::File { file, source: self.source, report: report.clone() }) {
            self.fail(e);
        }
        self.progress.file_done(report, bytes, self.ordinal);
    }

    fn should_stop(&self) -> bool {
        self.error.is_some() || self.strict_failure.is_some() || self.progress.cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic (a registry's sources interleave only in plans of several sources): planned
    /// files become runs of one source each, in plan order, a source coming back making a run
    /// of its own, each file's paths kept.
    #[test]
    fn planned_files_become_runs_by_source_in_order() {
        let planned: Vec<crate::plan::PlannedFile> = [0, 0, 2, 2, 2, 0]
            .iter()
            .enumerate()
            .map(|(i, &source)| crate::plan::PlannedFile {
                path: PathBuf::from(format!("/d/{i}.json")),
                root: PathBuf::from("/d"),
                display: format!("{i}.json"),
                source,
                bytes: i as u64,
            })
            .collect();
        let runs = runs_by_source(planned);
        let shape: Vec<(usize, Vec<&str>)> =
            runs.iter().map(|(s, run)| (*s, run.iter().map(|f| f.display.as_str()).collect())).collect();
        assert_eq!(
            shape,
            [(0, vec!["0.json", "1.json"]), (2, vec!["2.json", "3.json", "4.json"]), (0, vec!["5.json"])]
        );
        assert_eq!(runs[1].1[0].fs_path, PathBuf::from("/d/2.json"));
        assert_eq!(runs[1].1[0].root, PathBuf::from("/d"));
        assert!(runs_by_source(Vec::new()).is_empty());
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Arrays {
        #[serde(default, skip_serializing_if = "Option::is_none", with = "packed::u64s")]
        wide: Option<Vec<u64>>,
        #[serde(default, skip_serializing_if = "Option::is_none", with = "packed::u32s")]
        narrow: Option<Vec<u32>>,
    }

    #[test]
    fn integer_arrays_travel_as_base64_of_their_bytes() {
        // Synthetic: the entry format's encoding, both widths, empty and absent arrays.
        let both = Arrays { wide: Some(vec![1, u64::MAX]), narrow: Some(vec![0x0403_0201]) };
        let mut text = Vec::new();
        trajkit_model::compact::to_writer(&mut text, &both).unwrap();
        assert_eq!(String::from_utf8_lossy(&text), r#"{"wide":"AQAAAAAAAAD//////////w","narrow":"AQIDBA"}"#);
        assert_eq!(serde_json::from_slice::<Arrays>(&text).unwrap(), both);
        let empty = Arrays { wide: Some(vec![]), narrow: None };
        text.clear();
        trajkit_model::compact::to_writer(&mut text, &empty).unwrap();
        assert_eq!(String::from_utf8_lossy(&text), r#"{"wide":""}"#);
        assert_eq!(serde_json::from_slice::<Arrays>(&text).unwrap(), empty);
        assert_eq!(serde_json::from_str::<Arrays>(r#"{"wide":null}"#).unwrap(), Arrays { wide: None, narrow: None });
        // Five bytes are not whole u32s; a decimal array is not this format.
        let err = serde_json::from_str::<Arrays>(r#"{"narrow":"AQIDBAU"}"#).unwrap_err().to_string();
        assert!(err.contains("not a whole number of 4-byte integers"), "{err}");
        assert!(serde_json::from_str::<Arrays>(r#"{"wide":[1,2]}"#).is_err());
        assert!(serde_json::from_str::<Arrays>(r#"{"wide":"not base64!"}"#).is_err());
    }

    use std::io::Read;

    /// The sink's fallback reads a canonical record's instruction as the analyzer does:
    /// every record of two real Gym files, as a build canonicalized them (mrcr's records
    /// have instructions, tau2's none).
    #[test]
    fn a_canonical_records_shingles_are_its_instructions() {
        let dir = tempfile::tempdir().unwrap();
        let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real/gym");
        let inputs = vec![real.join("mrcr__example_rollouts.jsonl"), real.join("tau2__example_rollouts.jsonl")];
        let opts = BuildOptions { inputs, output: dir.path().join("lib"), ..BuildOptions::default() };
        crate::build(&opts, &crate::Quiet).unwrap();
        let shard = File::open(dir.path().join("lib/canonical/part-00000.jsonl.zst")).unwrap();
        let mut text = String::new();
        zstd::stream::read::Decoder::new(shard).unwrap().read_to_string(&mut text).unwrap();
        let mut shingled = Vec::new();
        for line in text.lines() {
            let t: Trajectory = serde_json::from_str(line).unwrap();
            let want = t.task.instruction.as_deref().map(crate::minhash::shingles).unwrap_or_default();
            assert_eq!(shingles_of_record(line.as_bytes(), "x").unwrap(), want);
            shingled.push(want.len());
        }
        assert_eq!(shingled, [4, 3, 1, 5, 3, 0, 0, 0, 0, 0]);
    }
}
