//! The read driver: detect every input, then stream records through the readers in
//! parallel batches, with per-file checks applied in file order so that output order
//! never depends on the thread count.

use std::collections::HashMap;
use std::io::{BufRead, Read, Seek};
use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{bounded, Receiver};
use memmap2::{Mmap, MmapOptions};
use rayon::prelude::*;
use trajkit_model::Trajectory;

use crate::error::FormatError;
use crate::identity::{FileIdentities, Identity, Seen};
use crate::input::{self, InputFile};
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult, TopOf, TopPeek, PEEK_BYTES};
use crate::registry;
use crate::rejection::{schema, Problem, Reason, Rejection};
use crate::report::{FileReport, TrajectoryCounts};
use crate::token_arrays::Parsed;

/// How to read.
#[derive(Clone, Default)]
pub struct Options {
    /// Force this format for every file instead of detecting.
    pub format: Option<String>,
    /// Produce canonical JSON bytes for each accepted trajectory (for `convert`).
    pub canonical: bool,
    /// Outcomes to join by task id (`--outcomes FILE`); a record's own outcome wins.
    pub outcomes: Option<std::sync::Arc<crate::outcomes::OutcomeTable>>,
    /// Hand each accepted record to the sink. Without it the record is dropped on the
    /// worker thread that built it (cheaper: no cross-thread frees).
    pub records: bool,
    /// Computed from each accepted record on the worker thread that built it (in parallel);
    /// the sink gets the result through `Sink::analyzed` instead of the record.
    pub analyze: Option<Analyzer>,
    /// Largest record (line, document, archive member), in decompressed bytes, that is
    /// read; a larger one is rejected as `record_too_large` without being held in memory.
    /// `None`: `DEFAULT_MAX_RECORD_BYTES`.
    pub max_record_bytes: Option<usize>,
}

/// The default record size limit (128 MiB): far above real trajectories, far below the
/// memory a decompression bomb would otherwise take.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 128 << 20;

impl Options {
    /// The record size limit in force.
    pub fn record_limit(&self) -> usize {
        self.max_record_bytes.unwrap_or(DEFAULT_MAX_RECORD_BYTES).max(1)
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("format", &self.format)
            .field("canonical", &self.canonical)
            .field("outcomes", &self.outcomes.is_some())
            .field("records", &self.records)
            .field("analyze", &self.analyze.is_some())
            .field("max_record_bytes", &self.max_record_bytes)
            .finish()
    }
}

/// Per-record work done on the worker threads (see `Options::analyze`).
#[derive(Clone)]
pub struct Analyzer {
    /// Whether `run` is given the record's interaction digest (`interaction_digest`), hashed
    /// side by side with its content digest where the canonical JSON is written.
    pub interaction: bool,
    /// The work: the sealed record and, when `interaction` asks, its interaction digest
    /// (`None` where the pipeline did not take it).
    pub run: AnalyzeFn,
}

/// The function of an `Analyzer`.
pub type AnalyzeFn = std::sync::Arc<dyn Fn(&Trajectory, Option<String>) -> Box<dyn std::any::Any + Send> + Send + Sync>;

/// Receives results in input order.
pub trait Sink {
    /// An accepted top-level trajectory: the record when `Options::records` is set, its
    /// canonical JSON when `Options::canonical` is set.
    fn trajectory(&mut self, file: &InputFile, t: Option<&Trajectory>, canonical: Option<&[u8]>);
    /// An accepted top-level trajectory when `Options::analyze` is set: what the analyzer
    /// computed from it, and its canonical JSON when `Options::canonical` is set.
    fn analyzed(&mut self, _file: &InputFile, _analysis: Box<dyn std::any::Any + Send>, _canonical: Option<&[u8]>) {}
    /// A rejected record.
    fn rejection(&mut self, _r: &Rejection) {}
    /// A file is finished; its figures are final.
    fn file_done(&mut self, _report: &FileReport) {}
    /// True to stop reading (e.g. `--strict` after the first rejection).
    fn should_stop(&self) -> bool {
        false
    }
    /// `done` of `total` files are planned (detected; small documents may be read already).
    fn planned(&mut self, _done: usize, _total: usize) {}
}

/// Plain JSON Lines files are mapped this many bytes at a time (`Producer::mapped_lines`),
/// from an offset that is a multiple of `MAP_ALIGN` (the page size of every platform). A
/// window stays mapped, and its pages resident, until the last batch with a record in it is
/// done: 32 MiB windows held about 25 MiB more of a build's peak than 8 MiB ones, for the
/// same CPU (docs/PERFORMANCE.md, step 96).
#[cfg(not(test))]
const MAP_WINDOW: u64 = 8 << 20;
/// Small in unit tests, so that lines cross windows and outgrow them.
#[cfg(test)]
const MAP_WINDOW: u64 = 256 << 10;
const MAP_ALIGN: u64 = 64 << 10;

/// Records per parallel batch, and bytes per batch. Two batches are mapped at a time (the
/// stage queues the next behind the one being read): 4 MiB each held less than one of
/// 8 MiB mapped alone (step 113).
const BATCH_RECORDS: usize = 2048;
const BATCH_BYTES: usize = 4 << 20;
/// Bytes of copied records (documents, decompressed lines) per batch. Smaller than a
/// batch's share of mapped lines: the buffers of every batch in flight are fresh memory
/// the first time round, and faulting in fresh pages costs more than a smaller batch.
const BUF_BYTES: usize = 2 << 20;

struct Plan {
    /// Shared with the producer's and the stage's job lists (a corpus of many small files
    /// holds one plan per file until that file is read: a copy each would cost per file).
    file: Arc<InputFile>,
    reader: Option<&'static dyn Reader>,
    layout: Layout,
    /// What planning found besides the reader: set only for a file that is not recognised or
    /// not readable, or that another file's records consume.
    notes: Option<Box<Notes>>,
    /// The file's figures, made when its first record is applied (or at its end): every plan
    /// is made before the first file is read, and a report per file waiting to be read was a
    /// sixth of the heap on a corpus of many small files (143 → 121 MiB at 101,064 files).
    report: Option<Box<FileReport>>,
    /// Standard input, already opened for the peek.
    stdin: Option<Box<dyn BufRead + Send>>,
    /// A Parquet file: its rows are the records (see `crate::parquet`), whatever `layout`.
    parquet: bool,
    /// The files its records consume, when found from the peek holding the whole file (so
    /// the file is not read again for them); `None`: ask the reader later.
    references: Option<Vec<PathBuf>>,
    /// The record of a small one-record document, read while planning from the peek and
    /// the detection's parse (see `read_early`); the producer then skips the file.
    /// Boxed: most plans have none, and every plan is made before the first file is read.
    early: Option<Box<Processed>>,
}

/// A plan's findings that go into its file's report.
#[derive(Default)]
struct Notes {
    error: Option<String>,
    guess: Option<String>,
    part_of: Option<String>,
    /// The consumer's family, for a consumed file no reader recognised.
    family: Option<&'static str>,
}

impl Plan {
    /// The file's report, made on first use from what planning found.
    fn report(&mut self) -> &mut FileReport {
        let (file, reader, notes) = (&self.file, self.reader, self.notes.as_deref());
        self.report.get_or_insert_with(|| {
            let format = reader.map(|r| r.name()).or(notes.and_then(|n| n.family));
            let mut report = FileReport::new(&file.display, format);
            if let Some(n) = notes {
                (report.error, report.guess, report.part_of) = (n.error.clone(), n.guess.clone(), n.part_of.clone());
            }
            Box::new(report)
        })
    }

    /// The file's report, owned.
    fn into_report(mut self) -> FileReport {
        std::mem::take(self.report())
    }

    /// Another file's records consume this one.
    fn consumed(&self) -> bool {
        self.notes.as_ref().is_some_and(|n| n.part_of.is_some())
    }

    /// Planning found the file unreadable or not recognised.
    fn failed(&self) -> bool {
        self.notes.as_ref().is_some_and(|n| n.error.is_some())
    }

    /// Notes that the file cannot be read (`error`), with the closest reader's guess.
    fn fail(&mut self, error: String, guess: Option<String>) {
        self.notes = Some(Box::new(Notes { error: Some(error), guess, ..Notes::default() }));
    }
}

/// Records read in one go, possibly from many files: their bytes live in one buffer
/// that is reused (recycled from the consumer back to the producer), so large lines do
/// not churn the allocator, and many small documents still make one parallel batch.
/// Records of plain JSON Lines files are not copied: they are ranges of mapped windows of
/// the file (`maps`), kept alive by the batches that refer to them.
#[derive(Default)]
struct Batch {
    buf: Vec<u8>,
    maps: Vec<Arc<Mmap>>,
    /// Bytes of the records held in `maps`.
    mapped: usize,
    /// Plain files whose records are known by their place (`OwnedRecord::at`): the file
    /// as the producer opened it, for the per-file checks to read records again from.
    handles: Vec<(usize, Arc<std::fs::File>)>,
    items: Vec<Item>,
}

impl Batch {
    /// Makes room for a batch's worth of bytes in the buffer. Called only by the paths that
    /// copy records (mapped JSON Lines never touch the buffer, so their batches do not
    /// allocate, and fault in, 3 MiB each).
    fn reserve_buf(&mut self) {
        let want = BUF_BYTES + (1 << 20);
        if self.buf.capacity() < want {
            self.buf.reserve(want - self.buf.len());
        }
    }

    fn bytes(&self, r: &OwnedRecord) -> &[u8] {
        match r.map {
            None => &self.buf[r.range.clone()],
            Some(m) => &self.maps[m as usize][r.range.clone()],
        }
    }

    fn is_full(&self) -> bool {
        self.items.len() >= BATCH_RECORDS || self.buf.len() >= BUF_BYTES || self.buf.len() + self.mapped >= BATCH_BYTES
    }

    /// Empties the batch for reuse (its buffer's memory is kept, its windows released).
    fn clear(&mut self) {
        self.buf.clear();
        self.maps.clear();
        self.mapped = 0;
        self.handles.clear();
        self.items.clear();
    }

    /// The index of `map` in this batch, added when it is not the last one added.
    fn map_slot(&mut self, map: &Arc<Mmap>) -> u32 {
        if !self.maps.last().is_some_and(|m| Arc::ptr_eq(m, map)) {
            self.maps.push(Arc::clone(map));
        }
        (self.maps.len() - 1) as u32
    }
}

/// A record, a record already read while planning (`Plan::early`), or the end of a file
/// (with the error that ended it early, if any).
enum Item {
    Record(OwnedRecord),
    Early(OwnedRecord),
    End(usize, Option<String>),
}

struct OwnedRecord {
    file: usize,
    /// The record's bytes: `range` of the batch's buffer, or of its window `map`.
    range: std::ops::Range<usize>,
    map: Option<u32>,
    /// Where the bytes start in the file, when the file is plain and the per-file checks
    /// can read them again from it (see `Batch::handles`).
    at: Option<u64>,
    line: Option<u64>,
    document_index: Option<u64>,
    /// Set when the producer could not make the record's bytes (a Parquet row with a value
    /// JSON cannot hold): the record is rejected with it without being read.
    problem: Option<Problem>,
}

impl OwnedRecord {
    /// Record `index` of a document file, at `range` of the batch's buffer.
    fn document(file: usize, range: std::ops::Range<usize>, index: u64) -> Self {
        OwnedRecord { file, range, map: None, at: None, line: None, document_index: Some(index), problem: None }
    }
}

/// What the producer thread needs per file: the file, its reader when it is to be read,
/// its layout, standard input when that is the file, and whether it is Parquet.
type ProducerJob = (Arc<InputFile>, Option<&'static dyn Reader>, Layout, Option<Box<dyn BufRead + Send>>, bool);

/// The pool that maps records. Called inside a pool (a caller's `install`, as Python's and
/// Ray's per-call pools do), one of the same size: the mapping runs on a thread of its own,
/// where rayon would otherwise use its global pool (every core). Otherwise the global pool.
fn mapping_pool() -> Result<Option<rayon::ThreadPool>, FormatError> {
    if rayon::current_thread_index().is_none() {
        return Ok(None);
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("trajkit-map-{i}"))
        .build()
        .map(Some)
        .map_err(|e| FormatError::Internal(format!("cannot start the mapping threads: {e}")))
}

/// Reads every file, calling the sink in input order; returns one report per file.
pub fn read_inputs(files: Vec<InputFile>, opts: &Options, sink: &mut dyn Sink) -> Result<Vec<FileReport>, FormatError> {
    read_all(files, opts, sink, true)
}

/// Reads every file like `read_inputs`, for a sink that keeps what it needs of each file's
/// report (`Sink::file_done`): a file's plan and report are freed when the file is done,
/// so a corpus of many small files holds no state per finished file.
pub fn read_files(files: Vec<InputFile>, opts: &Options, sink: &mut dyn Sink) -> Result<(), FormatError> {
    read_all(files, opts, sink, false).map(drop)
}

/// The read driver; with `keep_reports` false it returns no reports.
fn read_all(
    files: Vec<InputFile>,
    opts: &Options,
    sink: &mut dyn Sink,
    keep_reports: bool,
) -> Result<Vec<FileReport>, FormatError> {
    input::begin_run();
    let forced = forced_reader(opts)?;
    let limit = opts.record_limit();
    // A command that keeps nothing per record reads small documents while planning.
    let work = Work::of(opts);
    let keeps_nothing = !work.canonical && !work.keep && work.analyze.is_none();
    let early = keeps_nothing.then_some(work);
    let mut plans = plan_all(files, forced, limit, early, sink);
    mark_consumed(&mut plans);
    let was_read: Vec<bool> = plans.iter().map(|p| p.early.is_some() && !p.consumed()).collect();
    let early_read: Vec<std::sync::Mutex<Option<Box<Processed>>>> = plans
        .iter_mut()
        .zip(&was_read)
        .map(|(p, &read)| std::sync::Mutex::new(p.early.take().filter(|_| read)))
        .collect();

    let locate = work.unread();
    // Batches waiting for the parallel stage: each holds up to `BATCH_BYTES` of input
    // (mapped pages or its buffer). Two keep the workers fed (the producer only finds line
    // ends); four held 16 MiB more for no speed (step 96).
    let (tx, rx) = bounded::<Batch>(2);
    let (recycle_tx, recycle_rx) = bounded::<Batch>(8);
    let producer_plans: Vec<ProducerJob> = plans
        .iter_mut()
        .map(|p| {
            let wanted = !p.consumed() && !p.failed();
            (p.file.clone(), p.reader.filter(|_| wanted), p.layout, p.stdin.take(), p.parquet)
        })
        .collect();
    // The stage drops a file's job once its end has gone by.
    let mut stage_jobs: Vec<StageJob> = plans.iter().map(|p| Some((p.reader?, p.file.clone()))).collect();
    // Without `keep_reports`, each plan is freed when its file is done; collected in place, as
    // `Option<Box<_>>` is a pointer too.
    let mut plans: Vec<Option<Box<Plan>>> = plans.into_iter().map(Some).collect();
    let producer = std::thread::spawn(move || {
        let mut out = Producer { tx, recycled: recycle_rx, batch: Batch::default(), limit, locate };
        for (idx, (file, reader, layout, stdin, parquet)) in producer_plans.into_iter().enumerate() {
            let err = match reader {
                Some(_) if was_read[idx] => out.early(idx).err().map(|_| String::new()),
                Some(_) if parquet => out.parquet(idx, &file).err(),
                Some(reader) => out.file(idx, &file, reader, layout, stdin).err(),
                None => None,
            };
            if out.push(Item::End(idx, err)).is_err() {
                return;
            }
        }
        out.flush();
    });
    // The parallel stage runs on its own thread so that records of the next batch are
    // mapped while this thread applies and writes the previous one.
    let (done_tx, done_rx) = bounded::<Mapped>(2);
    let mapping = Arc::new(Mapping { early_read, opts: opts.clone() });
    let pool = mapping_pool()?;
    let stage = std::thread::spawn(move || {
        // One batch is mapped while the next is queued behind it in the pool: a worker that
        // has finished its share of a batch starts on the next one instead of waiting for the
        // other's last record. Batches still leave in order.
        let mut ahead: Option<Receiver<Mapped>> = None;
        for batch in rx {
            let jobs: Vec<StageJob> = batch
                .items
                .iter()
                .map(|item| match item {
                    Item::Record(r) => stage_jobs.get(r.file).cloned().flatten(),
                    Item::Early(_) | Item::End(..) => None,
                })
                .collect();
            for item in &batch.items {
                if let Item::End(idx, _) = item {
                    if let Some(job) = stage_jobs.get_mut(*idx) {
                        *job = None;
                    }
                }
            }
            let (tx, mapped) = bounded::<Mapped>(1);
            let mapping = Arc::clone(&mapping);
            let job = move || {
                // A panic drops `tx`: the stage then reports the failure (rayon would abort).
                let map = std::panic::AssertUnwindSafe(|| mapping.map(&batch, &jobs));
                if let Ok(processed) = std::panic::catch_unwind(map) {
                    let _ = tx.send((batch, processed));
                }
            };
            match &pool {
                Some(p) => p.spawn(job),
                None => rayon::spawn(job),
            }
            if let Some(previous) = ahead.replace(mapped) {
                // On a failed batch or a stopped reading the batch mapped meanwhile is waited
                // for, so that nothing of this read outlives it.
                let waited = |ahead: Option<Receiver<Mapped>>| ahead.is_none_or(|last| last.recv().is_ok());
                let Ok(done) = previous.recv() else {
                    waited(ahead);
                    return false;
                };
                if done_tx.send(done).is_err() {
                    return waited(ahead);
                }
            }
        }
        match ahead.map(|last| last.recv()) {
            Some(Ok(done)) => {
                let _ = done_tx.send(done);
                true
            }
            Some(Err(_)) => false,
            None => true,
        }
    });

    let mut states: HashMap<usize, FileIdentities> = HashMap::new();
    'batches: for (mut batch, processed) in done_rx {
        for (idx, handle) in batch.handles.drain(..) {
            states.entry(idx).or_default().set_file(handle);
        }
        for (item, p) in batch.items.drain(..).zip(processed) {
            match (item, p) {
                (Item::Record(rec) | Item::Early(rec), Some(p)) => {
                    let Some(plan) = plans.get_mut(rec.file).and_then(Option::as_deref_mut) else {
                        continue;
                    };
                    apply(plan, states.entry(rec.file).or_default(), &rec, p, sink);
                    if sink.should_stop() {
                        sink.file_done(plan.report());
                        break 'batches;
                    }
                }
                (Item::End(idx, err), _) => {
                    let Some(slot) = plans.get_mut(idx) else { continue };
                    let Some(plan) = slot.as_deref_mut() else { continue };
                    states.remove(&idx);
                    if let Some(e) = err {
                        plan.report().error = Some(e);
                    }
                    sink.file_done(plan.report());
                    if !keep_reports {
                        *slot = None;
                    }
                }
                (Item::Record(_) | Item::Early(_), None) => {}
            }
        }
        batch.clear();
        let _ = recycle_tx.try_send(batch);
    }
    let stage_ok = stage.join().unwrap_or(false);
    let producer_ok = producer.join().is_ok();
    if !(stage_ok && producer_ok) {
        return Err(FormatError::Internal("a reading thread failed; results are incomplete".into()));
    }
    // With `keep_reports` every plan is still here (a file not done, after a stop, reports what was
    // read of it); without, none is asked for.
    Ok(if keep_reports { plans.into_iter().flatten().map(|p| p.into_report()).collect() } else { Vec::new() })
}

/// A batch with each of its items' result (`None` for a file's end, or a record of a file
/// no longer read).
type Mapped = (Batch, Vec<Option<Processed>>);

/// The reader and file of a record to be read (`None` when its file is not read).
type StageJob = Option<(&'static dyn Reader, Arc<InputFile>)>;

/// Records of a batch read by one task, their source digests hashed together: SHA-256 of
/// Gym lines ran at 1.5 times one message's rate in groups of 8, 1.35 times in pairs.
const HASHED_TOGETHER: usize = 8;

/// Records sealed and analyzed together (`seal_group`) when an analyzer reads them: each
/// waits for the others before it is analyzed, and in groups of eight a Gym `build` read
/// them back out of cache (1–4 % more CPU than pairs, docs/PERFORMANCE.md, step 136).
const ANALYZED_TOGETHER: usize = 2;

/// What the mapping of every batch shares: the records read while planning, and the
/// options that say what work each record gets (`Work::of`).
struct Mapping {
    /// Records read early (a consumed file's is dropped), taken when their file comes up.
    early_read: Vec<std::sync::Mutex<Option<Box<Processed>>>>,
    opts: Options,
}

impl Mapping {
    /// Reads the batch's records in parallel; `jobs` holds each item's reader and file. Records
    /// go in groups, so that their source digests (`hashed_identities`) and the content digests
    /// of canonical text (`seal_group`, in pairs where an analyzer waits for them) are taken
    /// side by side.
    fn map(&self, batch: &Batch, jobs: &[StageJob]) -> Vec<Option<Processed>> {
        let work = Work::of(&self.opts).grouped();
        batch
            .items
            .par_chunks(HASHED_TOGETHER)
            .zip(jobs.par_chunks(HASHED_TOGETHER))
            .flat_map_iter(|(items, jobs)| {
                let mut known = hashed_identities(work, batch, items, jobs).into_iter();
                let every = if work.analyze.is_some() { ANALYZED_TOGETHER } else { HASHED_TOGETHER };
                let mut group: Vec<Option<Processed>> = Vec::with_capacity(items.len());
                for (items, jobs) in items.chunks(every).zip(jobs.chunks(every)) {
                    let start = group.len();
                    let read = items.iter().zip(jobs);
                    group
                        .extend(read.map(|(item, job)| self.read_item(batch, item, job, work, known.next().flatten())));
                    seal_group(&mut group[start..], work.analyze);
                }
                group
            })
            .collect()
    }

    /// One item of a batch: its record read (with its source digest when `known`), the record
    /// read while planning, or nothing.
    fn read_item(
        &self,
        batch: &Batch,
        item: &Item,
        job: &StageJob,
        work: Work,
        known: Option<Identity>,
    ) -> Option<Processed> {
        match (item, job) {
            (Item::Early(r), _) => self.early_read.get(r.file).and_then(|m| m.lock().ok()?.take()).map(|p| *p),
            (Item::Record(r), Some((reader, file))) => {
                let bytes = batch.bytes(r);
                let identity = known.unwrap_or_else(|| identity_of(work, bytes, r, false));
                Some(process_identified(*reader, bytes, r, work, identity, |raw| reader.read_record(raw, file)))
            }
            (Item::Record(_) | Item::End(..), _) => None,
        }
    }
}

/// The SHA-256 identities of the records of `items` to be read that need one, hashed two at a
/// time side by side (`sha256_many`: up to twice the rate of one on CPUs with the SHA
/// extensions); `None` where a record's identity is left to `identity_of`.
fn hashed_identities(
    work: Work,
    batch: &Batch,
    items: &[Item],
    jobs: &[StageJob],
) -> [Option<Identity>; HASHED_TOGETHER] {
    let mut sources: [Option<&[u8]>; HASHED_TOGETHER] = [None; HASHED_TOGETHER];
    for (source, (item, job)) in sources.iter_mut().zip(items.iter().zip(jobs)) {
        if let (Item::Record(r), Some(_)) = (item, job) {
            *source = (r.problem.is_none() && identity_hashes(work, r, false)).then(|| batch.bytes(r));
        }
    }
    let mut identities = [None; HASHED_TOGETHER];
    let pieces: Vec<[&[u8]; 1]> = sources.iter().flatten().map(|&bytes| [bytes]).collect();
    if pieces.len() < 2 {
        return identities; // one record is hashed alone by `identity_of`
    }
    let messages: Vec<&[&[u8]]> = pieces.iter().map(|p| &p[..]).collect();
    let mut digests = [[0u8; 32]; HASHED_TOGETHER];
    trajkit_model::sha256_many::sha256_many(&messages, &mut digests);
    let mut digests = digests.into_iter();
    for (identity, source) in identities.iter_mut().zip(sources) {
        *identity = source.and_then(|_| digests.next()).map(Identity::Sha);
    }
    identities
}

/// The reader `opts.format` forces, if any.
fn forced_reader(opts: &Options) -> Result<Option<&'static dyn Reader>, FormatError> {
    opts.format.as_deref().map(registry::resolve).transpose()
}

/// Pairs `(consumer, consumed)` of indexes into `files`: a record of the first reads the
/// second (subagent and continuation files, side reports, trial directories), found as
/// `read_inputs` finds them. Planners keep such files in one read so that the result is
/// the same as reading everything at once. Standard input is not looked at.
pub fn consumption_edges(files: &[InputFile], opts: &Options) -> Result<Vec<(usize, usize)>, FormatError> {
    let forced = forced_reader(opts)?;
    let limit = opts.record_limit();
    let refs: Vec<(usize, Vec<PathBuf>)> = files
        .par_iter()
        .enumerate()
        .filter(|(_, f)| !f.is_stdin())
        .filter_map(|(i, f)| {
            let p = plan(f.clone(), forced, limit, None);
            let targets = references(p.ref_job())?;
            (!targets.is_empty()).then_some((i, targets))
        })
        .collect();
    if refs.is_empty() {
        return Ok(Vec::new());
    }
    let by_path: HashMap<PathBuf, usize> =
        files.iter().enumerate().filter_map(|(i, f)| Some((input::real_file(&f.fs_path)?, i))).collect();
    let mut edges = Vec::new();
    for (i, targets) in refs {
        edges.extend(targets.iter().filter_map(|t| by_path.get(t)).filter(|&&j| j != i).map(|&j| (i, j)));
    }
    Ok(edges)
}

/// Files planned per parallel round, so that planning (which reads small documents whole
/// for commands that keep nothing per record) reports its progress.
const PLAN_CHUNK: usize = 256;

/// Plans every file in parallel, in input order, telling the sink how many are planned.
/// Boxed, so that the read frees each when its file is done without copying them first.
#[expect(clippy::vec_box, reason = "each plan is freed alone when its file is done")]
fn plan_all(
    files: Vec<InputFile>,
    forced: Option<&'static dyn Reader>,
    limit: usize,
    early: Option<Work>,
    sink: &mut dyn Sink,
) -> Vec<Box<Plan>> {
    let total = files.len();
    let mut plans = Vec::with_capacity(total);
    let mut files = files.into_iter();
    loop {
        let chunk: Vec<InputFile> = files.by_ref().take(PLAN_CHUNK).collect();
        if chunk.is_empty() {
            return plans;
        }
        plans.extend(chunk.into_par_iter().map(|f| Box::new(plan(f, forced, limit, early))).collect::<Vec<_>>());
        sink.planned(plans.len(), total);
    }
}

/// Detects the file's format (or applies the forced one).
fn plan(file: InputFile, forced: Option<&'static dyn Reader>, limit: usize, early: Option<Work>) -> Plan {
    let mut plan = Plan {
        layout: Layout::Document,
        reader: None,
        notes: None,
        report: None,
        stdin: None,
        parquet: false,
        references: None,
        early: None,
        file: Arc::new(file),
    };
    let (mut reader, len) = match input::open_sized(&plan.file) {
        Ok(r) => r,
        Err(e) => {
            plan.fail(e.to_string(), None);
            return plan;
        }
    };
    // A read error here (say a truncated .gz) is not final: detect on what was read and
    // let the record stream meet the error again at its line.
    let first = input::first_read(len);
    let mut peek = Vec::with_capacity(len.map_or(0, |_| first.min(PEEK_BYTES)));
    let peek_error = input::read_at_most(&mut reader, &mut peek, PEEK_BYTES, first).err();
    if peek.is_empty() {
        if let Some(e) = peek_error {
            plan.fail(format!("{}: {}", plan.file.display, e), None);
            return plan;
        }
    }
    let mut name = input::logical_name(&plan.file.fs_path);
    // Parquet is a container: detection runs on its first rows written as JSON Lines.
    if crate::parquet::is_parquet(&name, &peek) {
        let rows = match plan.file.is_stdin() {
            true => Err("Parquet cannot be read from standard input (it needs a file)".to_string()),
            false => crate::parquet::peek_rows(&plan.file.fs_path),
        };
        match rows {
            Ok(rows) => peek = rows,
            Err(e) => {
                plan.fail(format!("{}: {}", plan.file.display, e), None);
                return plan;
            }
        }
        plan.parquet = true;
        name = crate::parquet::rows_name(&name);
    }
    if peek.iter().all(|b| b.is_ascii_whitespace()) {
        plan.fail(FormatError::Empty { path: plan.file.display.clone() }.to_string(), None);
        return plan;
    }
    // The peek ended before its limit without an error: it holds the whole file.
    let whole = peek_error.is_none() && peek.len() < PEEK_BYTES && !plan.parquet;
    if let Some(claimed) = early.filter(|_| whole && !plan.parquet && forced.is_none()).and_then(|work| {
        let single = !plan.file.is_stdin() && peek.len() <= limit;
        single.then(|| claim_and_read_early(work, &plan.file, &peek, &name)).flatten()
    }) {
        let (r, d, processed) = claimed;
        plan.layout = d.layout;
        plan.reader = Some(r);
        plan.references = Some(Vec::new());
        plan.early = Some(Box::new(processed));
        return plan;
    }
    // Nothing will read a parse of the peek (no early record): a claim the top level
    // settles (an ATIF version) is made without building the document.
    let unparsed = early.is_none() && forced.is_none() && !plan.parquet && !plan.file.is_stdin();
    let top = TopPeek::new(&peek, &name);
    if let Some((r, d, multi)) = unparsed.then(|| decisive_top_level(&top)).flatten() {
        plan.layout = d.layout;
        plan.reader = Some(r);
        if whole {
            plan.references = Some(r.referenced_files_top(&plan.file, plan.layout, &top, multi));
        }
        return plan;
    }
    let (first_line, multi) = first_line(&peek);
    let generic_layout = if multi || name.ends_with(".jsonl") { Layout::Lines } else { Layout::Document };
    let prefix = Peek::new(&peek, &name, first_line.as_ref().map(|p| &p.value), multi);
    let claim = best(&prefix);
    // Inconclusive on a value larger than the peek: detect again on its skeleton, which
    // holds every top-level key wherever it falls (read up to the record limit; the bytes
    // read are kept only for standard input, which cannot be read twice).
    let inconclusive = claim.as_ref().is_none_or(|(_, d)| d.confidence < 50);
    let mut grown = None;
    let skeleton = if forced.is_none() && inconclusive && peek.len() >= PEEK_BYTES && !plan.parquet {
        let mut bytes = peek.clone();
        let sk = read_skeleton(&mut reader, &mut bytes, limit);
        grown = Some(bytes);
        sk
    } else {
        None
    };
    if plan.file.is_stdin() {
        let read = grown.unwrap_or_else(|| peek.clone());
        plan.stdin = Some(Box::new(std::io::Cursor::new(read).chain(reader)));
    }
    let (view, claim) = match &skeleton {
        Some(sk) => {
            let line = sk.first_line.as_ref().or(first_line.as_ref().map(|p| &p.value));
            let view = Peek::new(&sk.bytes, &name, line, multi || sk.more);
            let claim = best(&view).or(claim);
            (view, claim)
        }
        None => (prefix, claim),
    };
    match forced {
        Some(r) => {
            plan.layout = r.detect(&view).map(|d| d.layout).unwrap_or(generic_layout);
            plan.reader = Some(r);
        }
        None => match claim {
            Some((r, d)) if d.confidence >= 50 => {
                plan.layout = d.layout;
                plan.reader = Some(r);
            }
            other => {
                let guess = other.map(|(r, d)| format!("{} ({})", r.name(), d.reason));
                let error = FormatError::NotRecognised { path: plan.file.display.clone(), guess: guess.clone() };
                plan.fail(error.to_string(), guess);
            }
        },
    }
    if let (Some(r), true, None) = (plan.reader, whole, &skeleton) {
        if early.is_some() && plan.layout == Layout::Document {
            // `read_early` takes the parse over: made now, the reference walk reads it too.
            view.document();
        }
        plan.references = Some(r.referenced_files_in(&plan.file, plan.layout, &view));
        if let Some(work) = early {
            let stands = view.first_line_is_document();
            let document = view.into_document();
            let parsed = if stands { first_line } else { document };
            plan.early = read_early(work, r, &plan, &peek, parsed, limit).map(Box::new);
        }
    }
    plan
}

/// Reads a small file's one record while planning, when the command keeps nothing per
/// record (so only its figures wait in the plan) and the file is one document, held whole
/// by the peek, that no reader expands or splits: the record is then the peek's bytes, as
/// the producer would read them, and `parsed` (the detection's parse of exactly those
/// bytes) is handed to the reader instead of parsing them again.
fn read_early(
    work: Work,
    reader: &'static dyn Reader,
    plan: &Plan,
    bytes: &[u8],
    parsed: Option<Parsed>,
    limit: usize,
) -> Option<Processed> {
    let single = plan.layout == Layout::Document && !reader.expands() && reader.split_document(bytes).is_none();
    if !single || plan.file.is_stdin() || plan.parquet || bytes.len() > limit {
        return None;
    }
    Some(process(reader, bytes, &OwnedRecord::document(0, 0..bytes.len(), 0), &plan.file, work, parsed, true))
}

/// A small file's one record claimed and read in one pass (`Reader::claim_and_read`) by
/// the reader whose claim no other reader can match; `None` when none claims it so.
fn claim_and_read_early(
    work: Work,
    file: &InputFile,
    bytes: &[u8],
    name: &str,
) -> Option<(&'static dyn Reader, Detection, Processed)> {
    let rec = OwnedRecord::document(0, 0..bytes.len(), 0);
    let identity = identity_of(work, bytes, &rec, true);
    let sha_hex = hex_of(identity);
    let (line, document_index, written) = (rec.line, rec.document_index, work.written());
    let raw = RawRecord { bytes, sha256: &sha_hex, line, document_index, written };
    let readers = registry::all();
    for (i, &r) in readers.iter().enumerate() {
        // A reader that panics here claims nothing: detection and its own read decide.
        let claim = std::panic::AssertUnwindSafe(|| r.claim_and_read(&raw, file, name));
        let claimed = std::panic::catch_unwind(claim).ok().flatten();
        let Some((d, result)) = claimed else { continue };
        let mut others = readers.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, o)| o.max_confidence());
        if others.all(|bound| d.confidence > bound) {
            return Some((r, d, settle(r, work, bytes.len(), identity, || result)));
        }
    }
    None
}

/// The skeleton of a value larger than the peek (see `crate::skeleton`), with the parsed
/// first line when the value is the first line, and whether more records follow it.
struct SkeletonPeek {
    bytes: Vec<u8>,
    first_line: Option<serde_json::Value>,
    more: bool,
}

/// Reads on after the peek (into `bytes`) until the first JSON value is complete, doubling
/// what is read each time (so the scans cost about twice the value's size), at most to the
/// record limit; then builds its skeleton.
fn read_skeleton(reader: &mut dyn BufRead, bytes: &mut Vec<u8>, limit: usize) -> Option<SkeletonPeek> {
    if let Some(sk) = skeleton_peek(bytes) {
        return Some(sk);
    }
    let mut want = bytes.len();
    while bytes.len() < limit {
        want = (want * 2).min(limit);
        let before = bytes.len();
        if input::read_at_most(reader, bytes, want - before, want - before).is_err() || bytes.len() == before {
            return skeleton_peek(bytes);
        }
        if let Some(sk) = skeleton_peek(bytes) {
            return Some(sk);
        }
    }
    None
}

/// Builds the skeleton of the first JSON value of `bytes`, when it is complete.
fn skeleton_peek(bytes: &[u8]) -> Option<SkeletonPeek> {
    let (sk, end) = crate::skeleton::skeleton(bytes)?;
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(0);
    let one_line = memchr::memchr(b'\n', &bytes[start..end]).is_none();
    let more = bytes[end..].iter().any(|b| !b.is_ascii_whitespace());
    let first_line = if one_line { serde_json::from_slice(&sk).ok() } else { None };
    Some(SkeletonPeek { bytes: sk, first_line, more: more && one_line })
}

/// The highest claim on a peek (the last reader in registry order among equal claims).
/// Readers are asked from the highest `max_confidence` down, and no longer once a claim
/// exceeds what the rest could claim: an ATIF file is not scanned by every other detector.
fn best(peek: &Peek) -> Option<(&'static dyn Reader, Detection)> {
    let mut claims = Vec::new();
    let mut floor = 0;
    for &i in registry::by_max_confidence() {
        let reader = registry::all()[i];
        if reader.max_confidence() < floor {
            break;
        }
        if let Some(d) = reader.detect(peek) {
            debug_assert!(d.confidence <= reader.max_confidence(), "{} claims above its bound", reader.name());
            floor = floor.max(d.confidence);
            claims.push((i, reader, d));
        }
    }
    claims.into_iter().max_by_key(|(i, _, d)| (d.confidence, *i)).map(|(_, r, d)| (r, d))
}

/// The claim `best` would settle on when a reader's `detect_top_level` makes it: above
/// every other reader's bound. With whether more lines follow a first line that parses
/// (`Peek::multi_line_records`).
fn decisive_top_level(view: &TopPeek) -> Option<(&'static dyn Reader, Detection, bool)> {
    let readers = registry::all();
    let (r, d) = readers.iter().enumerate().find_map(|(i, &r)| {
        let d = r.detect_top_level(view)?;
        let others = readers.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, o)| o.max_confidence());
        others.max().is_none_or(|bound| d.confidence > bound).then_some((r, d))
    })?;
    let multi = view.top().is_some_and(|(_, of)| *of == TopOf::FirstLine { multi: true });
    Some((r, d, multi))
}

/// Parses the first non-blank line when it is complete within the peek; also tells
/// whether another non-blank line follows (the file is JSON Lines).
pub(crate) fn first_line(peek: &[u8]) -> (Option<Parsed>, bool) {
    let (line, more) = crate::reader::first_line_span(peek);
    let value = crate::json::parse_text_keeping(line);
    let multi = more && value.is_some();
    (value, multi)
}

/// What finding a plan's consumed files needs (a plan itself is not `Sync`: it may hold
/// standard input).
struct RefJob<'a> {
    file: &'a InputFile,
    reader: Option<&'static dyn Reader>,
    layout: Layout,
    found: Option<&'a Vec<PathBuf>>,
}

impl Plan {
    fn ref_job(&self) -> RefJob<'_> {
        let reader = self.reader.filter(|_| !self.parquet);
        RefJob { file: &self.file, reader, layout: self.layout, found: self.references.as_ref() }
    }
}

/// The files a plan's records consume: found while planning, or asked of its reader now.
/// Parquet rows reference no files (and the readers would read the file as JSON); standard
/// input not held whole by the peek is not read again for them.
fn references(job: RefJob) -> Option<Vec<PathBuf>> {
    let reader = job.reader?;
    match job.found {
        Some(found) => Some(found.clone()),
        None if job.file.is_stdin() => None,
        None => Some(reader.referenced_files(job.file, job.layout)),
    }
}

/// Marks files that another file's records consume as `part_of` that file.
fn mark_consumed(plans: &mut [Box<Plan>]) {
    let jobs: Vec<(usize, RefJob)> = plans.iter().map(|p| p.ref_job()).enumerate().collect();
    let refs: Vec<(usize, Vec<PathBuf>)> = jobs
        .into_par_iter()
        .filter_map(|(i, job)| Some((i, references(job)?)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let mut consumer: HashMap<PathBuf, (String, Option<&'static str>)> = HashMap::new();
    for (i, targets) in refs {
        for t in targets {
            consumer.entry(t).or_insert_with(|| (plans[i].file.display.clone(), plans[i].reader.map(|r| r.name())));
        }
    }
    if consumer.is_empty() {
        return;
    }
    for p in plans.iter_mut() {
        let Some(real) = input::real_file(&p.file.fs_path) else {
            continue;
        };
        if let Some((by, family)) = consumer.get(&real) {
            if *by != p.file.display {
                // A side file nobody else claims belongs to its consumer's family.
                let family = if p.reader.is_none() { *family } else { None };
                p.notes = Some(Box::new(Notes { part_of: Some(by.clone()), family, ..Notes::default() }));
            }
        }
    }
}

/// The producer thread's side: fills batches in input order and sends them when full.
struct Producer {
    tx: crossbeam_channel::Sender<Batch>,
    recycled: crossbeam_channel::Receiver<Batch>,
    batch: Batch,
    /// The record size limit, in bytes.
    limit: usize,
    /// Records of plain files are known by their place (`Work::unread`): the per-file
    /// checks get a handle on each such file.
    locate: bool,
}

/// The consumer has stopped (e.g. `--strict`): stop reading.
struct Stopped;

impl Producer {
    /// Adds an item; sends the batch when it is full.
    fn push(&mut self, item: Item) -> Result<(), Stopped> {
        self.batch.items.push(item);
        self.send_if_full()
    }

    /// The place of a file whose one record was read while planning.
    fn early(&mut self, idx: usize) -> Result<(), Stopped> {
        self.push(Item::Early(OwnedRecord::document(idx, 0..0, 0)))
    }

    /// Sends the batch when it is full.
    fn send_if_full(&mut self) -> Result<(), Stopped> {
        if self.batch.is_full() {
            let next = self.recycled.try_recv().unwrap_or_else(|_| Batch::default());
            self.tx.send(std::mem::replace(&mut self.batch, next)).map_err(|_| Stopped)?;
        }
        Ok(())
    }

    fn flush(&mut self) {
        if !self.batch.items.is_empty() {
            let _ = self.tx.send(std::mem::take(&mut self.batch));
        }
    }

    /// Streams one file's records (a document, or one record per line).
    fn file(
        &mut self,
        idx: usize,
        file: &InputFile,
        reader_of: &dyn Reader,
        layout: Layout,
        stdin: Option<Box<dyn BufRead + Send>>,
    ) -> Result<(), String> {
        let plain = input::Compression::of(&file.fs_path) == input::Compression::None;
        if layout == Layout::Lines && stdin.is_none() && plain {
            return self.mapped_lines(idx, file);
        }
        let mut located = false;
        let (mut reader, len) = match stdin {
            Some(r) => (r, None),
            None if plain && layout == Layout::Document => {
                let (f, len) = input::open_plain(file).map_err(|e| e.to_string())?;
                located = self.locate(idx, &f);
                (input::buffered(f, len), len)
            }
            None => input::open_sized(file).map_err(|e| e.to_string())?,
        };
        if layout == Layout::Document {
            self.batch.reserve_buf();
            // A plain file is read straight into room of its size: no doubling of the buffer.
            let start = self.batch.buf.len();
            let read = input::read_at_most(&mut reader, &mut self.batch.buf, self.limit + 1, input::first_read(len));
            if let Err(e) = read {
                self.batch.buf.truncate(start);
                return Err(format!("{}: read failed: {}", file.display, e));
            }
            // A zip archive (Inspect `.eval`) is held compressed, as large as it is on disk:
            // its members are the records, each bounded by the limit as it is inflated.
            let zip = self.batch.buf[start..].starts_with(b"PK\x03\x04");
            if zip && self.batch.buf.len() - start > self.limit {
                if let Err(e) = reader.read_to_end(&mut self.batch.buf) {
                    self.batch.buf.truncate(start);
                    return Err(format!("{}: read failed: {}", file.display, e));
                }
            } else if self.batch.buf.len() - start > self.limit {
                self.batch.buf.truncate(start);
                self.batch.buf.shrink_to(BUF_BYTES + (1 << 20));
                self.too_large(idx, None, Some(0));
                return self.send_if_full().map_err(|_| String::new());
            }
            let end = self.batch.buf.len();
            if reader_of.expands() {
                if let Some(done) = self.expand(idx, file, reader_of, start) {
                    return done;
                }
            }
            let ranges = reader_of.split_document(&self.batch.buf[start..end]).unwrap_or_else(|| {
                let whole = 0..end - start;
                vec![whole]
            });
            for (i, r) in ranges.into_iter().enumerate() {
                let mut rec = OwnedRecord::document(idx, start + r.start..start + r.end, i as u64);
                rec.at = located.then_some(r.start as u64);
                self.batch.items.push(Item::Record(rec));
            }
            return self.send_if_full().map_err(|_| String::new());
        }
        self.lines(idx, file, &mut reader, 0, None)
    }

    /// Asks an expanding reader for the records of the document at `start..` of the batch
    /// buffer (see `Reader::expand_file`). `None`: the reader declined, the document is
    /// back in place for `split_document`; else the file's outcome.
    fn expand(
        &mut self,
        idx: usize,
        file: &InputFile,
        reader_of: &dyn Reader,
        start: usize,
    ) -> Option<Result<(), String>> {
        // Records that are not byte ranges of the file (zip members): the reader streams
        // them to `emit` one at a time, and they take the file's place in the batch. The
        // document is detached from the batch first (moved when the batch held nothing
        // else, else copied) so that full batches can be sent during the expansion.
        let doc = if start == 0 { std::mem::take(&mut self.batch.buf) } else { self.batch.buf[start..].to_vec() };
        let mut emitted = 0u64;
        let mut stopped = false;
        let expanded = {
            let limit = self.limit;
            let mut emit = |member: Result<Vec<u8>, Problem>| {
                if emitted == 0 && start > 0 {
                    self.batch.buf.truncate(start);
                }
                let at = self.batch.buf.len();
                let problem = match member {
                    Ok(bytes) => {
                        self.batch.buf.extend_from_slice(&bytes);
                        None
                    }
                    Err(p) => Some(p),
                };
                let range = at..self.batch.buf.len();
                let rec = OwnedRecord {
                    file: idx,
                    range,
                    map: None,
                    at: None,
                    line: None,
                    document_index: Some(emitted),
                    problem,
                };
                emitted += 1;
                self.batch.items.push(Item::Record(rec));
                stopped = self.send_if_full().is_err();
                !stopped
            };
            reader_of.expand_file(file, &doc, limit, &mut emit)
        };
        match expanded {
            Some(result) => {
                if emitted == 0 && start > 0 {
                    self.batch.buf.truncate(start);
                }
                if stopped {
                    return Some(Err(String::new()));
                }
                Some(result.map_err(|e| format!("{}: {}", file.display, e)))
            }
            None if start == 0 => {
                self.batch.buf = doc;
                None
            }
            None => None,
        }
    }

    /// Plain JSON Lines without copying: the file is mapped a window at a time and each
    /// line's record is a range of its window (the kernel's copy into a buffer cost a fifth
    /// of `inspect`'s CPU). A line that does not end within a whole window from its start,
    /// and a file that cannot be mapped, are read on by `lines` from there.
    fn mapped_lines(&mut self, idx: usize, file: &InputFile) -> Result<(), String> {
        let io = |e: std::io::Error| format!("{}: {}", file.display, e);
        let mut f = std::fs::File::open(&file.fs_path).map_err(io)?;
        let len = f.metadata().map_err(io)?.len();
        let located = self.locate(idx, &f);
        let (mut next, mut line_no) = (0u64, 0u64);
        while next < len {
            let start = next - next % MAP_ALIGN;
            let map_len = (len - start).min(MAP_WINDOW);
            // SAFETY: the mapping is read-only and private to this process; a file that
            // another process truncates while it is read can fault (as with any mmap
            // reader: ripgrep makes the same trade-off).
            let Ok(map) = (unsafe { MmapOptions::new().offset(start).len(map_len as usize).map(&f) }) else {
                break;
            };
            let map = Arc::new(map);
            let at_end = start + map_len == len;
            let base = (next - start) as usize;
            let mut pos = base;
            for nl in memchr::memchr_iter(b'\n', &map[base..]) {
                line_no += 1;
                let at = located.then_some(start);
                self.mapped_record(idx, &map, at, pos..base + nl, line_no).map_err(|_| String::new())?;
                pos = base + nl + 1;
            }
            if at_end {
                if pos < map.len() {
                    line_no += 1;
                    let at = located.then_some(start);
                    self.mapped_record(idx, &map, at, pos..map.len(), line_no).map_err(|_| String::new())?;
                }
                return Ok(());
            }
            next = start + pos as u64;
            if pos == base {
                break;
            }
        }
        if next >= len {
            return Ok(());
        }
        f.seek(std::io::SeekFrom::Start(next)).map_err(io)?;
        let mut reader = input::decompress(Box::new(f), input::Compression::None).map_err(io)?;
        self.lines(idx, file, &mut reader, line_no, located.then_some(next))
    }

    /// Hands the per-file checks a handle on the plain file `f` (file `idx`) to read its
    /// records again from (positioned reads: the producer's own reads are not disturbed);
    /// false when there is none, and the records are then hashed.
    fn locate(&mut self, idx: usize, f: &std::fs::File) -> bool {
        if !self.locate || !cfg!(unix) {
            return false;
        }
        match f.try_clone() {
            Ok(handle) => {
                self.batch.handles.push((idx, Arc::new(handle)));
                true
            }
            Err(_) => false,
        }
    }

    /// Adds line `line` at `range` of `map` (the window at file offset `window`, when the
    /// record is to be known by its place) unless it is blank (as `record` does for the
    /// buffer); sends the batch when it is full.
    fn mapped_record(
        &mut self,
        idx: usize,
        map: &Arc<Mmap>,
        window: Option<u64>,
        mut range: std::ops::Range<usize>,
        line: u64,
    ) -> Result<(), Stopped> {
        if range.len() > self.limit {
            self.too_large(idx, Some(line), None);
            return self.send_if_full();
        }
        while range.end > range.start && map[range.end - 1] == b'\r' {
            range.end -= 1;
        }
        if map[range.clone()].iter().all(|b| b.is_ascii_whitespace()) {
            return Ok(());
        }
        let slot = self.batch.map_slot(map);
        self.batch.mapped += range.len();
        let at = window.map(|w| w + range.start as u64);
        let rec = OwnedRecord {
            file: idx,
            range,
            map: Some(slot),
            at,
            line: Some(line),
            document_index: None,
            problem: None,
        };
        self.batch.items.push(Item::Record(rec));
        self.send_if_full()
    }

    /// Reads JSON Lines in large chunks straight into the batch buffer and cuts records at
    /// newlines (no per-line copy); a line cut by the end of a batch moves to the next one.
    /// `line_no`: lines already read before the reader's position. `from`: the file offset
    /// of that position, when the reader reads a plain file whose records are to be known
    /// by their place.
    fn lines(
        &mut self,
        idx: usize,
        file: &InputFile,
        reader: &mut dyn BufRead,
        mut line_no: u64,
        from: Option<u64>,
    ) -> Result<(), String> {
        const CHUNK: usize = 1 << 20;
        let mut line_start = self.batch.buf.len();
        // The file offset of the next byte read: the buffer's last bytes are those before it.
        let mut next_at = from.unwrap_or(0);
        loop {
            self.batch.reserve_buf();
            let scan_from = self.batch.buf.len();
            let read = input::read_at_most(reader, &mut self.batch.buf, CHUNK, CHUNK);
            next_at += (self.batch.buf.len() - scan_from) as u64;
            let at = |buf_len: usize, start: usize| from.map(|_| next_at - (buf_len - start) as u64);
            // Complete lines are records even when the read then failed (bytes read before
            // an error are kept by read_to_end).
            let newlines: Vec<usize> =
                memchr::memchr_iter(b'\n', &self.batch.buf[scan_from..]).map(|p| p + scan_from).collect();
            for nl in newlines {
                line_no += 1;
                let line_at = at(self.batch.buf.len(), line_start);
                self.record(idx, line_start..nl, line_no, line_at);
                line_start = nl + 1;
            }
            let n = match read {
                Ok(n) => n,
                Err(e) => {
                    self.batch.buf.truncate(line_start);
                    return Err(format!("{}:{}: read failed after line {}: {}", file.display, line_no + 1, line_no, e));
                }
            };
            let end = self.batch.buf.len();
            if end - line_start > self.limit {
                // Too large: stop holding it (and the memory it grew), and skip to the end
                // of the line unread.
                self.batch.buf.truncate(line_start);
                self.batch.buf.shrink_to(BUF_BYTES + (1 << 20));
                line_no += 1;
                self.too_large(idx, Some(line_no), None);
                match skip_line(reader) {
                    Ok((true, skipped)) => {
                        next_at += skipped;
                        continue;
                    }
                    Ok((false, _)) => return Ok(()),
                    Err(e) => {
                        return Err(format!("{}:{}: read failed in line {}: {}", file.display, line_no, line_no, e))
                    }
                }
            }
            if n == 0 {
                // A last line without a newline.
                if line_start < end {
                    line_no += 1;
                    let line_at = at(end, line_start);
                    self.record(idx, line_start..end, line_no, line_at);
                }
                return Ok(());
            }
            // A batch holding only part of one long line keeps growing instead.
            if self.batch.is_full() && !self.batch.items.is_empty() {
                line_start = match self.send_keeping_tail(line_start) {
                    Ok(s) => s,
                    Err(Stopped) => return Ok(()),
                };
            }
        }
    }

    /// Adds the line at `range` (without its newline; at file offset `at`, when known by
    /// its place) unless it is blank.
    fn record(&mut self, idx: usize, mut range: std::ops::Range<usize>, line: u64, at: Option<u64>) {
        if range.len() > self.limit {
            self.too_large(idx, Some(line), None);
            return;
        }
        let buf = &self.batch.buf;
        while range.end > range.start && buf[range.end - 1] == b'\r' {
            range.end -= 1;
        }
        if buf[range.clone()].iter().all(|b| b.is_ascii_whitespace()) {
            return;
        }
        self.batch.items.push(Item::Record(OwnedRecord {
            file: idx,
            range,
            map: None,
            at,
            line: Some(line),
            document_index: None,
            problem: None,
        }));
    }

    /// Adds a `record_too_large` rejection in place of a record that was not held.
    fn too_large(&mut self, idx: usize, line: Option<u64>, document_index: Option<u64>) {
        let problem = Some(too_large_problem(self.limit));
        let at = self.batch.buf.len();
        self.batch.items.push(Item::Record(OwnedRecord {
            file: idx,
            range: at..at,
            map: None,
            at: None,
            line,
            document_index,
            problem,
        }));
    }

    /// Streams a Parquet file's rows, one record each (`document_index` = row index), a
    /// record batch at a time (`crate::parquet::Rows`): memory holds one decoded batch and
    /// the batches in flight, never the file.
    fn parquet(&mut self, idx: usize, file: &InputFile) -> Result<(), String> {
        use crate::parquet::{Next, Rows};
        let mut rows = Rows::open(&file.fs_path).map_err(|e| format!("{}: {}", file.display, e))?;
        loop {
            self.batch.reserve_buf();
            let start = self.batch.buf.len();
            let index = rows.index();
            let problem = match rows.next_row(&mut self.batch.buf) {
                Ok(Next::Row) => None,
                Ok(Next::Unconvertible(p)) => Some(p),
                Ok(Next::End) => return Ok(()),
                Err(e) => return Err(format!("{}#{}: {}", file.display, index, e)),
            };
            let range = start..self.batch.buf.len();
            let rec =
                OwnedRecord { file: idx, range, map: None, at: None, line: None, document_index: Some(index), problem };
            self.batch.items.push(Item::Record(rec));
            self.send_if_full().map_err(|_| String::new())?;
        }
    }

    /// Sends the full batch; the partial line from `tail` on starts the next batch.
    /// Returns where that partial line starts in the new buffer.
    fn send_keeping_tail(&mut self, tail: usize) -> Result<usize, Stopped> {
        let mut next = self.recycled.try_recv().unwrap_or_else(|_| Batch::default());
        next.buf.extend_from_slice(&self.batch.buf[tail..]);
        self.batch.buf.truncate(tail);
        self.tx.send(std::mem::replace(&mut self.batch, next)).map_err(|_| Stopped)?;
        Ok(0)
    }
}

/// The rejection of a record larger than `limit` bytes.
pub fn too_large_problem(limit: usize) -> Problem {
    let msg = format!("record larger than the record size limit ({}); not read", human_size(limit));
    Problem::new(Reason::RecordTooLarge, "$", msg)
}

/// `128 MiB`, or bytes below one MiB.
fn human_size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// Consumes the rest of the current line without keeping it: true when a newline ended
/// it, false at the end of the stream; and the bytes consumed.
fn skip_line(reader: &mut dyn BufRead) -> std::io::Result<(bool, u64)> {
    let mut skipped = 0u64;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((false, skipped));
        }
        match memchr::memchr(b'\n', buf) {
            Some(i) => {
                reader.consume(i + 1);
                return Ok((true, skipped + i as u64 + 1));
            }
            None => {
                let n = buf.len();
                reader.consume(n);
                skipped += n as u64;
            }
        }
    }
}

/// A record after the parallel stage.
struct Processed {
    /// How the record is told apart from its file's other records (see `process`).
    identity: Identity,
    outcome: Result<Accepted, Vec<Problem>>,
}

struct Accepted {
    trajectory: Option<Box<Trajectory>>,
    analysis: Option<Box<dyn std::any::Any + Send>>,
    counts: TrajectoryCounts,
    rollout_key: Option<String>,
    canonical: Option<Vec<u8>>,
    /// Where `canonical` awaits its content digest (`Work::grouped`): hashed with the other
    /// records of its group (`seal_group`).
    unsealed: Option<trajkit_model::canonical::Unsealed>,
    /// The record, unsealed, when the analyzer runs after its group's digests are hashed
    /// (`seal_group`); `analysis` is `None` until then.
    awaiting: Option<Box<Trajectory>>,
}

/// What the parallel stage does with each accepted record (from `Options`).
#[derive(Clone, Copy)]
struct Work<'a> {
    canonical: bool,
    keep: bool,
    outcomes: Option<&'a crate::outcomes::OutcomeTable>,
    analyze: Option<&'a Analyzer>,
    /// The caller hashes the content digests of canonical text that leaves the worker as text
    /// only in groups (`seal_group`), so the record is written with its digest blank.
    grouped: bool,
}

impl Work<'_> {
    /// The work `opts` asks for.
    fn of(opts: &Options) -> Work<'_> {
        Work {
            canonical: opts.canonical,
            keep: opts.records,
            outcomes: opts.outcomes.as_deref(),
            analyze: opts.analyze.as_ref(),
            grouped: false,
        }
    }

    /// This work, with content digests left for `seal_group`.
    fn grouped(self) -> Self {
        Work { grouped: true, ..self }
    }

    /// True when nothing but the per-file checks reads a record's source digest: no
    /// output, no record or analysis leaving the worker, no outcome joined by a task id
    /// that a reader may have made from the digest.
    fn unread(&self) -> bool {
        !self.canonical && !self.keep && self.analyze.is_none() && self.outcomes.is_none()
    }

    /// True when each accepted record is serialized (written, or sealed with its digest).
    fn written(&self) -> bool {
        self.canonical || self.keep || self.analyze.is_some()
    }
}

/// Stands in for the source digest of a record nobody reads it from: the trajectory is
/// dropped in the worker and no outcome is joined by a task id made from it.
const UNHASHED: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Reads one record (from `parsed` when the planner already parsed its bytes) and does
/// `work` with it; a reader's panic becomes a rejection. `only`: the record is its file's
/// only one, so no identity check reads its digest.
fn process(
    reader: &dyn Reader,
    bytes: &[u8],
    rec: &OwnedRecord,
    file: &InputFile,
    work: Work,
    parsed: Option<Parsed>,
    only: bool,
) -> Processed {
    process_with(reader, bytes, rec, work, only, |raw| match parsed {
        Some(value) => reader.read_parsed(value, raw, file),
        None => reader.read_record(raw, file),
    })
}

/// `process` with the record read by `read`.
fn process_with(
    reader: &dyn Reader,
    bytes: &[u8],
    rec: &OwnedRecord,
    work: Work,
    only: bool,
    read: impl FnOnce(&RawRecord) -> RecordResult,
) -> Processed {
    process_identified(reader, bytes, rec, work, identity_of(work, bytes, rec, only), read)
}

/// `process_with` for a record whose `identity` is known.
fn process_identified(
    reader: &dyn Reader,
    bytes: &[u8],
    rec: &OwnedRecord,
    work: Work,
    identity: Identity,
    read: impl FnOnce(&RawRecord) -> RecordResult,
) -> Processed {
    if let Some(problem) = &rec.problem {
        return Processed { identity: Identity::Only, outcome: Err(vec![problem.clone()]) };
    }
    let sha_hex = hex_of(identity);
    let (line, document_index, written) = (rec.line, rec.document_index, work.written());
    let raw = RawRecord { bytes, sha256: &sha_hex, line, document_index, written };
    settle(reader, work, bytes.len(), identity, || read(&raw))
}

/// How a record of `bytes` is known. SHA-256 of the source was 15 % of `validate`'s CPU on
/// small ATIF files and 17 % of `inspect`'s on Gym lines: where only the per-file checks
/// read it, a record is known by its place in the file and a fast hash instead
/// (`crate::identity`).
fn identity_of(work: Work, bytes: &[u8], rec: &OwnedRecord, only: bool) -> Identity {
    match rec.at {
        _ if identity_hashes(work, rec, only) => Identity::sha(bytes),
        Some(offset) if !only => Identity::at(bytes, offset),
        _ => Identity::Only,
    }
}

/// Whether `identity_of` hashes the record with SHA-256.
fn identity_hashes(work: Work, rec: &OwnedRecord, only: bool) -> bool {
    !(work.unread() && (only || rec.at.is_some()))
}

/// The SHA-256 a reader is given: the record's, or zeros when it is not hashed.
fn hex_of(identity: Identity) -> std::borrow::Cow<'static, str> {
    match identity {
        Identity::Sha(sha) => trajkit_model::canonical::hex(&sha).into(),
        _ => UNHASHED.into(),
    }
}

/// The record `read` gives, joined with outcomes, checked for truncation and sealed or
/// written as `work` asks.
fn settle(
    reader: &dyn Reader,
    work: Work,
    source_len: usize,
    identity: Identity,
    read: impl FnOnce() -> RecordResult,
) -> Processed {
    let Work { canonical, keep, outcomes, analyze, grouped } = work;
    // A reader bug must never make a record vanish (or end the run looking successful):
    // a panic becomes a rejection of that record, named as an internal error.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match read() {
        RecordResult::Rejected(problems) => Err(problems),
        RecordResult::Accepted { mut trajectory, rollout_key, .. } => {
            if let Some(table) = outcomes {
                table.join(&mut trajectory);
            }
            crate::truncation::mark_truncated_observations(&mut trajectory);
            let interaction = analyze.is_some_and(|a| a.interaction);
            let sealed = keep || analyze.is_some();
            // An analyzed record whose canonical text leaves the worker is sealed and
            // analyzed with its group; a record handed to the sink is sealed here.
            let grouped = grouped && canonical && !keep;
            let output = Output { canonical, sealed, interaction, grouped };
            match seal_and_serialize(&mut trajectory, output, source_len) {
                Ok(written) => {
                    // Unsealed and analyzed: the analyzer runs once `seal_group` has sealed it.
                    let awaits = analyze.is_some() && written.unsealed.is_some();
                    let analysis = analyze.filter(|_| !awaits).map(|a| (a.run)(&trajectory, written.interaction));
                    let counts = TrajectoryCounts::of(&trajectory);
                    let (trajectory, awaiting) = match (keep, awaits) {
                        (true, _) => (Some(trajectory), None),
                        (false, true) => (None, Some(trajectory)),
                        (false, false) => (None, None),
                    };
                    Ok(Accepted {
                        counts,
                        analysis,
                        trajectory,
                        rollout_key,
                        canonical: written.canonical,
                        unsealed: written.unsealed,
                        awaiting,
                    })
                }
                Err(e) => Err(vec![schema("$", format!("cannot serialize record: {e}"))]),
            }
        }
    }))
    .unwrap_or_else(|panic| Err(vec![internal_error(&format!("the {} reader", reader.name()), panic)]));
    Processed { identity, outcome }
}

/// The rejection of a record on which `who` panicked.
fn internal_error(who: &str, panic: Box<dyn std::any::Any + Send>) -> Problem {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    Problem::new(Reason::InternalError, "$", format!("{who} failed on this record: {what}"))
}

/// What leaves the worker for an accepted record.
#[derive(Clone, Copy)]
struct Output {
    /// Its canonical JSON (`convert`).
    canonical: bool,
    /// The record itself, or what an analyzer computed from it: it must carry its digest.
    sealed: bool,
    /// Its interaction digest, for the analyzer (taken with the canonical JSON only).
    interaction: bool,
    /// Its canonical JSON only, its content digest left for `seal_group`.
    grouped: bool,
}

/// What `seal_and_serialize` wrote.
#[derive(Default)]
struct Written {
    canonical: Option<Vec<u8>>,
    interaction: Option<String>,
    unsealed: Option<trajkit_model::canonical::Unsealed>,
}

/// Seals the record and writes its canonical JSON, as far as `output` asks, with its
/// interaction digest when asked. When neither leaves the worker (`inspect`, `validate`:
/// per-file figures only) the record is neither serialized nor hashed a second time; its
/// source bytes' SHA-256 is all that is used.
fn seal_and_serialize(t: &mut Trajectory, output: Output, source_len: usize) -> Result<Written, serde_json::Error> {
    use trajkit_model::canonical;
    if !output.canonical {
        if output.sealed {
            trajkit_model::seal(t)?;
        }
        return Ok(Written::default());
    }
    // The canonical form is about as long as the source: size the buffer once.
    let mut out = Vec::with_capacity(source_len + source_len / 4 + 1024);
    let mut written = Written::default();
    match (output.interaction, output.grouped) {
        (_, true) => {
            written.unsealed = canonical::write_unsealed(t, &mut out)?;
            // A record with subagents is sealed whole: its analyzer runs on the spot.
            if written.unsealed.is_none() && output.interaction {
                written.interaction = trajkit_model::interaction_digest(t).ok();
            }
        }
        (true, false) => written.interaction = canonical::write_sealed_with_interaction(t, &mut out)?,
        (false, false) => canonical::write_sealed(t, &mut out)?,
    }
    out.push(b'\n');
    written.canonical = Some(out);
    Ok(written)
}

/// Writes the content digests that `Work::grouped` left blank in `processed`, hashed side
/// by side (SHA-256 of the canonical text was a seventh of `convert`'s worker time, one
/// record at a time), with the interactions of records awaiting `analyze`; then seals those
/// records and runs the analyzer on each.
fn seal_group(processed: &mut [Option<Processed>], analyze: Option<&Analyzer>) {
    GROUP_SCRATCH.with(|cell| {
        let mut interactions = cell.take();
        interactions.clear();
        seal_group_in(processed, analyze, &mut interactions);
        if interactions.capacity() <= GROUP_SCRATCH_KEPT {
            cell.replace(interactions);
        }
    })
}

/// `seal_group` with `interactions` as the buffer for the interactions' JSON.
fn seal_group_in(processed: &mut [Option<Processed>], analyze: Option<&Analyzer>, interactions: &mut Vec<u8>) {
    // Each awaiting record's interaction: its range in `interactions`, `None` where it
    // cannot be written (the analyzer then gets no interaction digest).
    let mut ranges: Vec<Option<std::ops::Range<usize>>> = Vec::new();
    if analyze.is_some_and(|a| a.interaction) {
        let accepted = processed.iter().flatten().filter_map(|p| p.outcome.as_ref().ok());
        for t in accepted.filter_map(|acc| acc.awaiting.as_deref()) {
            let start = interactions.len();
            let written = trajkit_model::interaction::write_interaction(t, interactions).is_ok();
            if !written {
                interactions.truncate(start);
            }
            ranges.push(written.then_some(start..interactions.len()));
        }
    }
    let others: Vec<&[u8]> = ranges.iter().flatten().map(|r| &interactions[r.clone()]).collect();
    let mut open = Vec::new();
    let mut awaiting = Vec::new();
    for acc in processed.iter_mut().flatten().filter_map(|p| p.outcome.as_mut().ok()) {
        if let (Some(text), Some(unsealed)) = (acc.canonical.as_mut(), acc.unsealed.take()) {
            open.push((text, unsealed));
            awaiting.push(acc.awaiting.is_some());
        }
    }
    let digests = trajkit_model::canonical::seal_written_with(&mut open, &others);
    let Some(analyzer) = analyze else { return };
    let (content, interaction) = digests.split_at(open.len());
    let mut content = content.iter().zip(awaiting).filter_map(|(d, awaits)| awaits.then_some(d));
    let (mut interaction, mut written) = (interaction.iter(), ranges.iter().map(Option::is_some));
    for p in processed.iter_mut().flatten() {
        let Ok(acc) = p.outcome.as_mut() else { continue };
        let Some(mut t) = acc.awaiting.take() else { continue };
        t.content_digest = content.next().map(|d| trajkit_model::canonical::hex(d)).unwrap_or_default();
        let taken = written.next().unwrap_or(false);
        let interaction = taken.then(|| interaction.next()).flatten().map(|d| trajkit_model::canonical::hex(d));
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (analyzer.run)(&t, interaction))) {
            Ok(analysis) => acc.analysis = Some(analysis),
            Err(panic) => p.outcome = Err(vec![internal_error("the analyzer", panic)]),
        }
    }
}

/// Largest interaction buffer a worker keeps between groups (a larger one is freed).
const GROUP_SCRATCH_KEPT: usize = 16 << 20;

thread_local! {
    /// The worker's buffer for its group's interactions (`seal_group`).
    static GROUP_SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

fn apply(plan: &mut Plan, state: &mut FileIdentities, rec: &OwnedRecord, p: Processed, sink: &mut dyn Sink) {
    plan.report().records += 1;
    let reject = |plan: &mut Plan, sink: &mut dyn Sink, problems: Vec<Problem>| {
        let reason = problems.first().map(|p| p.reason).unwrap_or(Reason::SchemaViolation);
        plan.report().add_rejection(reason);
        let r = Rejection {
            path: plan.file.display.clone(),
            line: rec.line,
            document_index: rec.document_index,
            reason,
            problems,
        };
        sink.rejection(&r);
    };
    match p.outcome {
        Err(problems) => reject(plan, sink, problems),
        Ok(mut acc) => {
            match state.check(p.identity, acc.rollout_key.as_deref()) {
                Seen::New => {}
                Seen::Repeat => {
                    plan.report().duplicate_records += 1;
                    return;
                }
                Seen::Conflict(first) => {
                    let first = first.map_or("unknown: the file changed while it was read".into(), |sha| {
                        trajkit_model::canonical::hex(&sha)[..16].to_string()
                    });
                    let key = acc.rollout_key.unwrap_or_default();
                    let msg = format!("rollout {key} was already recorded with different content (sha256 {first})");
                    reject(plan, sink, vec![Problem::new(Reason::ConflictingRollout, "$", msg)]);
                    return;
                }
            }
            plan.report().add_trajectory(&acc.counts);
            // A digest no group hashed is hashed here: no blank digest reaches the sink.
            if let (Some(text), Some(unsealed)) = (acc.canonical.as_mut(), acc.unsealed.take()) {
                trajkit_model::canonical::seal_written(&mut [(text, unsealed)]);
            }
            match acc.analysis {
                Some(analysis) => sink.analyzed(&plan.file, analysis, acc.canonical.as_deref()),
                None => sink.trajectory(&plan.file, acc.trajectory.as_deref(), acc.canonical.as_deref()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every real fixture with its detection peek and logical name.
    fn fixture_peeks() -> Vec<(InputFile, Vec<u8>, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
        let (files, errors) = crate::discover(&[root]);
        assert!(errors.is_empty() && files.len() > 100, "{} fixture files", files.len());
        let with_peek = |f: InputFile| {
            let (mut reader, _) = input::open_sized(&f).expect("fixture opens");
            let mut peek = Vec::new();
            let _ = (&mut reader).take(PEEK_BYTES as u64).read_to_end(&mut peek);
            let name = input::logical_name(&f.fs_path);
            (f, peek, name)
        };
        files.into_iter().map(with_peek).collect()
    }

    /// Every real fixture gets the same claim whether detection stops at a decisive claim or
    /// asks every reader, and no reader claims above its `max_confidence`.
    #[test]
    fn pruned_detection_equals_asking_every_reader() {
        let atif = registry::by_name("atif").expect("atif reader").max_confidence();
        let mut decisive = 0;
        for (f, peek, name) in fixture_peeks() {
            let (line, multi) = first_line(&peek);
            let view = Peek::new(&peek, &name, line.as_ref().map(|p| &p.value), multi);
            let every: Vec<_> = registry::all().iter().filter_map(|r| r.detect(&view).map(|d| (*r, d))).collect();
            for (r, d) in &every {
                assert!(d.confidence <= r.max_confidence(), "{} claims {} on {}", r.name(), d.confidence, f.display);
            }
            let want = every.into_iter().max_by_key(|(_, d)| d.confidence).map(|(r, d)| (r.name(), d));
            let got = best(&view).map(|(r, d)| (r.name(), d));
            decisive += usize::from(got.as_ref().is_some_and(|(_, d)| d.confidence == atif));
            assert_eq!(got, want, "{}", f.display);
        }
        assert!(decisive > 10, "{decisive} files claimed decisively");
    }

    /// Detection from the top level alone (`build`, `convert`) settles on the claim full
    /// detection makes, with the same layout, records-per-line answer and referenced files
    /// (found from the text without a parse), on every real fixture it settles; it misses
    /// no decisive ATIF file.
    #[test]
    fn top_level_claims_equal_full_detection() {
        let (mut settled, mut naming) = (0, 0);
        for (f, peek, name) in fixture_peeks() {
            let (line, multi) = first_line(&peek);
            let view = Peek::new(&peek, &name, line.as_ref().map(|p| &p.value), multi);
            let full = best(&view);
            let top = TopPeek::new(&peek, &name);
            let Some((r, d, top_multi)) = decisive_top_level(&top) else {
                let atif = full.as_ref().is_some_and(|(r, d)| r.name() == "atif" && d.confidence >= 97);
                assert!(!atif, "{}: a decisive ATIF claim missed", f.display);
                continue;
            };
            settled += 1;
            assert_eq!(Some((r.name(), &d)), full.as_ref().map(|(r, d)| (r.name(), d)), "{}", f.display);
            assert_eq!(top_multi, multi, "{}", f.display);
            let refs = r.referenced_files_top(&f, d.layout, &top, top_multi);
            view.document();
            assert_eq!(refs, r.referenced_files_in(&f, d.layout, &view), "{}", f.display);
            naming += usize::from(!refs.is_empty());
        }
        assert_eq!((settled, naming), (18, 3), "settled by the top level, of which name other files");
    }

    /// Synthetic (no real file is shaped so): the layout of a pretty-printed ATIF
    /// document named `.jsonl`, of one-line ATIF records, a repeated version key (the
    /// last counts, as in a parsed `Value`), and a form feed before the document (JSON
    /// does not allow it: detected as usual).
    #[test]
    fn top_level_claims_follow_the_layout_and_the_last_key() {
        let doc = "{\n  \"schema_version\": \"ATIF-v1.7\",\n  \"agent\": {},\n  \"steps\": []\n}\n";
        let one = r#"{"schema_version": "ATIF-v1.7", "agent": {}, "steps": []}"#;
        let twice = r#"{"schema_version": "ATIF-v1.7", "agent": {}, "steps": [], "schema_version": 1}"#;
        let cases = [
            (doc.to_string(), "x.jsonl", Some(Layout::Document)),
            (format!("{one}\n{one}\n"), "x.json", Some(Layout::Lines)),
            (format!("{one}\n"), "x.json", Some(Layout::Document)),
            (format!("{one}\n"), "x.jsonl", Some(Layout::Lines)),
            (twice.to_string(), "x.json", None),
            (format!("\x0c{one}"), "x.json", None),
        ];
        for (text, name, want) in cases {
            let peek = text.as_bytes();
            let got = decisive_top_level(&TopPeek::new(peek, name));
            assert_eq!(got.as_ref().map(|(_, d, _)| d.layout), want, "{text:?}");
            let (line, multi) = first_line(peek);
            let full = best(&Peek::new(peek, name, line.as_ref().map(|p| &p.value), multi));
            if let Some((r, d, m)) = got {
                assert_eq!((m, Some((r.name(), d))), (multi, full.map(|(r, d)| (r.name(), d))), "{text:?}");
            }
        }
    }

    /// Every real fixture's figures and rejections are the same whether its records are
    /// read while planning without hashing their source (nothing kept) or hashed and kept.
    #[test]
    fn figures_do_not_depend_on_the_source_digest() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
        let (files, _) = crate::discover(&[root]);
        #[derive(Default)]
        struct Seen(Vec<(String, Reason, Vec<Problem>)>, usize);
        impl Sink for Seen {
            fn trajectory(&mut self, _: &InputFile, _: Option<&Trajectory>, _: Option<&[u8]>) {
                self.1 += 1;
            }
            fn rejection(&mut self, r: &Rejection) {
                self.0.push((r.location(), r.reason, r.problems.clone()));
            }
        }
        let run = |opts: &Options| {
            let mut sink = Seen::default();
            let reports = read_inputs(files.clone(), opts, &mut sink).expect("fixtures read");
            (reports, sink.0, sink.1)
        };
        let (unhashed, hashed) = (run(&Options::default()), run(&Options { records: true, ..Options::default() }));
        // The figures `trajkit validate tests/fixtures/real` prints.
        assert_eq!((unhashed.2, unhashed.1.len()), (529, 252));
        assert_eq!(unhashed.2, hashed.2);
        assert_eq!(unhashed.1, hashed.1);
        assert_eq!(unhashed.0, hashed.0);
    }

    /// `read_files` (each plan freed when its file is done) gives the sink what
    /// `read_inputs` gives it on every real fixture: the same records, rejections and
    /// reports, in the same order, and the reports `read_inputs` returns are those.
    #[test]
    fn reading_without_keeping_reports_tells_the_sink_the_same() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
        let (files, _) = crate::discover(&[root]);
        #[derive(Default, PartialEq, Debug)]
        struct Told(Vec<String>, Vec<FileReport>);
        impl Sink for Told {
            fn trajectory(&mut self, f: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
                self.0.push(format!("{} {:?}", f.display, t.map(|t| (&t.id, &t.content_digest))));
            }
            fn rejection(&mut self, r: &Rejection) {
                self.0.push(format!("{} {:?}", r.location(), r.reason));
            }
            fn file_done(&mut self, report: &FileReport) {
                self.1.push(report.clone());
            }
        }
        let opts = Options { records: true, ..Options::default() };
        let (mut kept, mut freed) = (Told::default(), Told::default());
        let reports = read_inputs(files.clone(), &opts, &mut kept).expect("read_inputs");
        read_files(files.clone(), &opts, &mut freed).expect("read_files");
        assert_eq!((kept.0.len(), kept.1.len()), (529 + 252, files.len()));
        assert_eq!(kept, freed);
        assert_eq!(reports, kept.1);
    }

    /// Copies of two real ATIF files of different sizes (5 MiB, three batches, two of
    /// them mapped at once): every record reaches the sink in file order, as read alone.
    #[test]
    fn batches_mapped_side_by_side_leave_in_order() {
        let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real/atif");
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..300 {
            let name = if i % 3 == 0 { "oracle-simple-v1.2" } else { "claude-code-pass-v1.7" };
            let to = dir.path().join(format!("t{i:03}.trajectory.json"));
            std::fs::copy(real.join(format!("{name}.trajectory.json")), to).expect("copy");
        }
        #[derive(Default)]
        struct Order(Vec<(String, String)>);
        impl Sink for Order {
            fn trajectory(&mut self, f: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
                self.0.push((f.display.clone(), t.map(|t| t.content_digest.clone()).unwrap_or_default()));
            }
            fn rejection(&mut self, _: &Rejection) {}
        }
        let (files, _) = crate::discover(&[dir.path().to_path_buf()]);
        let opts = Options { canonical: true, ..Options::default() };
        let mut all = Order::default();
        read_files(files.clone(), &opts, &mut all).expect("read");
        let alone: Vec<(String, String)> = files
            .iter()
            .flat_map(|f| {
                let mut one = Order::default();
                read_files(vec![f.clone()], &opts, &mut one).expect("read one");
                one.0
            })
            .collect();
        assert_eq!(all.0.len(), 300);
        assert_eq!(all.0, alone);
    }

    /// Synthetic: a line longer than a mapped window sends the rest of the file down the
    /// read path; a repeat of a mapped line after it, and a conflicting rollout, are still
    /// found when records are known by place (`inspect`) as when they are hashed.
    #[test]
    fn repeats_are_found_across_the_switch_from_mapped_to_read_lines() {
        let dir = std::env::temp_dir().join(format!("trajkit-switch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let row = |input: &str, reward: u8| {
            format!(
                r#"{{"responses_create_params":{{"input":"{input}"}},"response":{{"output":[]}},"reward":{reward},"_ng_task_index":3,"_ng_rollout_index":0}}"#
            )
        };
        let long =
            row(&"x".repeat(MAP_WINDOW as usize + 1000), 1).replace("\"_ng_task_index\":3", "\"_ng_task_index\":4");
        let lines = [row("hi", 1), long, row("hi", 1), row("hi", 0)];
        std::fs::write(dir.join("x_rollouts.jsonl"), lines.join("\n") + "\n").unwrap();
        let (files, _) = crate::discover(std::slice::from_ref(&dir));
        #[derive(Default)]
        struct Seen(Vec<(Option<u64>, Vec<Problem>)>);
        impl Sink for Seen {
            fn trajectory(&mut self, _: &InputFile, _: Option<&Trajectory>, _: Option<&[u8]>) {}
            fn rejection(&mut self, r: &Rejection) {
                self.0.push((r.line, r.problems.clone()));
            }
        }
        let run = |opts: &Options| {
            let mut sink = Seen::default();
            let reports = read_inputs(files.clone(), opts, &mut sink).expect("read");
            (reports, sink.0)
        };
        let (located, hashed) = (run(&Options::default()), run(&Options { records: true, ..Options::default() }));
        std::fs::remove_dir_all(&dir).unwrap();
        let r = &located.0[0];
        assert_eq!((r.records, r.trajectories, r.duplicate_records, r.rejected), (4, 2, 1, 1), "{r:?}");
        assert_eq!(located.1[0].0, Some(4));
        assert_eq!(located, hashed);
    }

    /// A reader with a bug (synthetic): it panics on every record.
    struct Panics;
    impl Reader for Panics {
        fn name(&self) -> &'static str {
            "panics"
        }
        fn detect(&self, _: &Peek) -> Option<Detection> {
            None
        }
        fn read_record(&self, _: &RawRecord, _: &InputFile) -> RecordResult {
            panic!("attempt to add with overflow")
        }
    }

    #[test]
    fn a_reader_panic_is_a_rejection_not_a_lost_record() {
        let file = InputFile { fs_path: "x.jsonl".into(), display: "x.jsonl".into(), root: PathBuf::new() };
        let rec = OwnedRecord {
            file: 0,
            range: 0..2,
            map: None,
            at: None,
            line: Some(7),
            document_index: None,
            problem: None,
        };
        let p = process(
            &Panics,
            b"{}",
            &rec,
            &file,
            Work { canonical: true, keep: false, outcomes: None, analyze: None, grouped: false },
            None,
            false,
        );
        let problems = p.outcome.err().expect("rejected");
        assert_eq!(problems[0].reason, Reason::InternalError);
        assert!(problems[0].message.contains("attempt to add with overflow"), "{}", problems[0].message);
    }

    /// A produced record: its line and its bytes, or the reason it was rejected.
    type Produced = (Option<u64>, Result<Vec<u8>, Reason>);

    /// The records that the producer makes of `file`, mapped or read. A mapped file's
    /// records (and those read on after a line longer than a window) are known by their
    /// place: their bytes must be the file's at that offset.
    fn produced(file: &InputFile, mapped: bool, limit: usize) -> Vec<Produced> {
        let text = std::fs::read(&file.fs_path).expect("read the file");
        let (tx, rx) = bounded::<Batch>(1024);
        let (_keep, recycled) = bounded::<Batch>(1);
        let mut p = Producer { tx, recycled, batch: Batch::default(), limit, locate: true };
        let done = match mapped {
            true => p.mapped_lines(0, file),
            false => input::open(file).map_err(|e| e.to_string()).and_then(|mut r| p.lines(0, file, &mut r, 0, None)),
        };
        assert_eq!(done, Ok(()));
        p.flush();
        drop(p);
        let mut out = Vec::new();
        for batch in rx {
            for item in &batch.items {
                if let Item::Record(r) = item {
                    if r.problem.is_none() && mapped && cfg!(unix) {
                        let at = r.at.expect("a mapped file's record is known by its place") as usize;
                        let bytes = batch.bytes(r);
                        assert_eq!(&text[at..at + bytes.len()], bytes, "line {:?} is not at {at}", r.line);
                    }
                    let got = match &r.problem {
                        Some(problem) => Err(problem.reason),
                        None => Ok(batch.bytes(r).to_vec()),
                    };
                    out.push((r.line, got));
                }
            }
        }
        out
    }

    /// Synthetic: the elements of a plain JSON array document are known by their place
    /// (inspect's checks), and their bytes are the file's at that offset (a byte order
    /// mark and whitespace before them).
    #[test]
    fn array_elements_are_known_by_their_place() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("x.json");
        let row = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
        let text = format!("\u{feff} [\n  {row},\n  {row} , {{\"messages\": []}}\n]\n");
        std::fs::write(&path, &text).expect("write");
        let file = InputFile { display: "x.json".into(), fs_path: path, root: dir.path().to_path_buf() };
        let reader = registry::by_name(crate::chat::OPENAI_MESSAGES).expect("reader");
        let (tx, rx) = bounded::<Batch>(16);
        let (_keep, recycled) = bounded::<Batch>(1);
        let mut p = Producer { tx, recycled, batch: Batch::default(), limit: 1 << 20, locate: true };
        assert_eq!(p.file(0, &file, reader, Layout::Document, None), Ok(()));
        p.flush();
        drop(p);
        let mut located = 0;
        for batch in rx {
            assert_eq!(batch.handles.len(), usize::from(cfg!(unix)));
            for item in &batch.items {
                let Item::Record(r) = item else { continue };
                if let Some(at) = r.at {
                    let bytes = batch.bytes(r);
                    assert_eq!(&text.as_bytes()[at as usize..at as usize + bytes.len()], bytes);
                    located += 1;
                }
            }
        }
        assert_eq!(located, if cfg!(unix) { 3 } else { 0 });
    }

    #[test]
    fn mapped_lines_are_the_lines_read() {
        // Synthetic: lines that cross the (test-sized) window, one longer than a window,
        // one over the record limit, CRLF, blank lines, no newline at the end.
        let mut text = Vec::new();
        for i in 0..12000 {
            text.extend_from_slice(format!("{{\"n\": {i}, \"pad\": \"{}\"}}\n", "x".repeat(i % 97)).as_bytes());
        }
        text.extend_from_slice(format!("{{\"long\": \"{}\"}}\r\n\n  \n", "y".repeat(300 << 10)).as_bytes());
        text.extend_from_slice(format!("{{\"over\": \"{}\"}}\n", "z".repeat(600 << 10)).as_bytes());
        // Longer than a read chunk too: skipped unread.
        text.extend_from_slice(format!("{{\"huge\": \"{}\"}}\n", "w".repeat(5 << 19)).as_bytes());
        text.extend_from_slice(b"{\"after\": 1}\n");
        text.extend_from_slice(b"{\"last\": true}");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, &text).expect("write");
        let file = InputFile { display: "x.jsonl".into(), fs_path: path, root: dir.path().to_path_buf() };
        let limit = 512 << 10;
        let read = produced(&file, false, limit);
        assert_eq!(read.len(), 12005);
        assert_eq!(read[12000].0, Some(12001));
        assert_eq!(read[12001], (Some(12004), Err(Reason::RecordTooLarge)));
        assert_eq!(read[12002], (Some(12005), Err(Reason::RecordTooLarge)));
        assert_eq!(read[12003], (Some(12006), Ok(b"{\"after\": 1}".to_vec())));
        assert_eq!(read[12004], (Some(12007), Ok(b"{\"last\": true}".to_vec())));
        assert!(produced(&file, true, limit) == read, "mapped records differ from read ones");
    }

    /// Synthetic: a document with a form feed before it is rejected by a read during
    /// planning exactly as by the producer's read (the detection's parse is not handed on).
    #[test]
    fn an_early_read_rejects_what_the_producer_rejects() {
        let dir = std::env::temp_dir().join(format!("trajkit-early-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let doc = r#"{"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 1, "source": "user", "message": "hi"}]}"#;
        std::fs::write(dir.join("plain.json"), doc).unwrap();
        std::fs::write(dir.join("feed.json"), format!("\x0c{doc}")).unwrap();
        let (files, _) = crate::input::discover(std::slice::from_ref(&dir));
        let run = |opts: &Options| {
            struct Count(usize);
            impl Sink for Count {
                fn trajectory(&mut self, _: &InputFile, _: Option<&Trajectory>, _: Option<&[u8]>) {}
                fn rejection(&mut self, _: &Rejection) {
                    self.0 += 1;
                }
            }
            let mut sink = Count(0);
            let reports = read_inputs(files.clone(), opts, &mut sink).unwrap();
            (reports.iter().map(|r| (r.trajectories, r.rejected)).collect::<Vec<_>>(), sink.0)
        };
        let early = run(&Options::default());
        let late = run(&Options { records: true, ..Options::default() });
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(early, late);
        assert_eq!(early.0.iter().map(|(t, _)| t).sum::<u64>(), 1, "{early:?}");
    }
}
