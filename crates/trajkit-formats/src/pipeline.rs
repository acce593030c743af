//! The read driver: detect every input, then stream records through the readers in
//! parallel batches, with per-file checks applied in file order so that output order
//! never depends on the thread count.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read};
use std::path::PathBuf;

use crossbeam_channel::bounded;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use trajkit_model::Trajectory;

use crate::error::FormatError;
use crate::input::{self, InputFile};
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult, PEEK_BYTES};
use crate::registry;
use crate::rejection::{Problem, Reason, Rejection};
use crate::report::FileReport;

/// How to read.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Force this format for every file instead of detecting.
    pub format: Option<String>,
    /// Produce canonical JSON bytes for each accepted trajectory (for `convert`).
    pub canonical: bool,
}

/// Receives results in input order.
pub trait Sink {
    /// An accepted top-level trajectory; `canonical` is its canonical JSON when asked for.
    fn trajectory(&mut self, file: &InputFile, t: &Trajectory, canonical: Option<&[u8]>);
    /// A rejected record.
    fn rejection(&mut self, _r: &Rejection) {}
    /// A file is finished; its figures are final.
    fn file_done(&mut self, _report: &FileReport) {}
    /// True to stop reading (e.g. `--strict` after the first rejection).
    fn should_stop(&self) -> bool {
        false
    }
}

/// Records per parallel batch, and bytes per batch.
const BATCH_RECORDS: usize = 2048;
const BATCH_BYTES: usize = 8 << 20;

struct Plan {
    file: InputFile,
    reader: Option<&'static dyn Reader>,
    layout: Layout,
    report: FileReport,
    /// Standard input, already opened for the peek.
    stdin: Option<Box<dyn BufRead + Send>>,
}

/// Records read in one go: their bytes live in one buffer that is reused (recycled
/// from the consumer back to the producer), so large lines do not churn the allocator.
#[derive(Default)]
struct Batch {
    buf: Vec<u8>,
    records: Vec<OwnedRecord>,
}

impl Batch {
    fn bytes(&self, r: &OwnedRecord) -> &[u8] {
        &self.buf[r.range.clone()]
    }
}

struct OwnedRecord {
    range: std::ops::Range<usize>,
    line: Option<u64>,
    document_index: Option<u64>,
}

/// What the producer thread needs per file: the file, whether to read it, its layout.
type ProducerJob = (InputFile, bool, Layout, Option<Box<dyn BufRead + Send>>);

/// A batch after the parallel stage, or the end of a file.
enum Done {
    Batch(usize, Batch, Vec<Processed>),
    End(usize, Option<String>),
}

enum Msg {
    Batch(usize, Batch),
    End(usize, Option<String>),
}

/// Reads every file, calling the sink in input order; returns one report per file.
pub fn read_inputs(files: Vec<InputFile>, opts: &Options, sink: &mut dyn Sink) -> Result<Vec<FileReport>, FormatError> {
    let forced =
        match &opts.format {
            Some(name) => Some(registry::by_name(name).ok_or_else(|| FormatError::UnknownFormat {
                name: name.clone(),
                known: registry::names().join(", "),
            })?),
            None => None,
        };
    let mut plans: Vec<Plan> = files.into_par_iter().map(|f| plan(f, forced)).collect();
    mark_consumed(&mut plans);

    let (tx, rx) = bounded::<Msg>(4);
    let (recycle_tx, recycle_rx) = bounded::<Batch>(8);
    let producer_plans: Vec<ProducerJob> = plans
        .iter_mut()
        .map(|p| {
            (
                p.file.clone(),
                p.reader.is_some() && p.report.part_of.is_none() && p.report.error.is_none(),
                p.layout,
                p.stdin.take(),
            )
        })
        .collect();
    let stage_jobs: Vec<(Option<&'static dyn Reader>, InputFile)> =
        plans.iter().map(|p| (p.reader, p.file.clone())).collect();
    let producer = std::thread::spawn(move || {
        for (idx, (file, wanted, layout, stdin)) in producer_plans.into_iter().enumerate() {
            let err = if wanted { produce(idx, &file, layout, stdin, &tx, &recycle_rx).err() } else { None };
            if tx.send(Msg::End(idx, err)).is_err() {
                return;
            }
        }
    });
    // The parallel stage runs on its own thread so that records of the next batch are
    // mapped while this thread applies and writes the previous one.
    let (done_tx, done_rx) = bounded::<Done>(2);
    let canonical = opts.canonical;
    let stage = std::thread::spawn(move || {
        for msg in rx {
            let out = match msg {
                Msg::Batch(idx, batch) => {
                    let Some((Some(reader), file)) = stage_jobs.get(idx) else { continue };
                    let processed: Vec<Processed> = batch
                        .records
                        .par_iter()
                        .map(|r| process(*reader, batch.bytes(r), r, file, canonical))
                        .collect();
                    Done::Batch(idx, batch, processed)
                }
                Msg::End(idx, err) => Done::End(idx, err),
            };
            if done_tx.send(out).is_err() {
                return;
            }
        }
    });

    let mut states: HashMap<usize, FileState> = HashMap::new();
    for msg in done_rx {
        match msg {
            Done::Batch(idx, mut batch, processed) => {
                let plan = &mut plans[idx];
                let state = states.entry(idx).or_default();
                for (rec, p) in batch.records.iter().zip(processed) {
                    apply(plan, state, rec, p, sink);
                    if sink.should_stop() {
                        break;
                    }
                }
                batch.buf.clear();
                batch.records.clear();
                let _ = recycle_tx.try_send(batch);
                if sink.should_stop() {
                    sink.file_done(&plan.report);
                    break;
                }
            }
            Done::End(idx, err) => {
                let plan = &mut plans[idx];
                states.remove(&idx);
                if let Some(e) = err {
                    plan.report.error = Some(e);
                }
                sink.file_done(&plan.report);
            }
        }
    }
    let _ = stage.join();
    let _ = producer.join();
    Ok(plans.into_iter().map(|p| p.report).collect())
}

/// Detects the file's format (or applies the forced one).
fn plan(file: InputFile, forced: Option<&'static dyn Reader>) -> Plan {
    let mut report = FileReport::new(&file.display, None);
    let mut plan = Plan { layout: Layout::Document, reader: None, report: FileReport::default(), stdin: None, file };
    let mut reader = match input::open(&plan.file) {
        Ok(r) => r,
        Err(e) => {
            report.error = Some(e.to_string());
            plan.report = report;
            return plan;
        }
    };
    // A read error here (say a truncated .gz) is not final: detect on what was read and
    // let the record stream meet the error again at its line.
    let mut peek = Vec::new();
    let peek_error = (&mut reader).take(PEEK_BYTES as u64).read_to_end(&mut peek).err();
    if peek.is_empty() {
        if let Some(e) = peek_error {
            report.error = Some(format!("{}: {}", plan.file.display, e));
            plan.report = report;
            return plan;
        }
    }
    if plan.file.is_stdin() {
        plan.stdin = Some(Box::new(std::io::Cursor::new(peek.clone()).chain(reader)));
    }
    if peek.iter().all(|b| b.is_ascii_whitespace()) {
        report.error = Some(FormatError::Empty { path: plan.file.display.clone() }.to_string());
        plan.report = report;
        return plan;
    }
    let name = input::logical_name(&plan.file.fs_path);
    let (first_line, multi) = first_line(&peek);
    let peek = Peek { bytes: &peek, name: &name, first_line: first_line.as_ref(), multi_line_records: multi };
    let generic_layout = if multi || name.ends_with(".jsonl") { Layout::Lines } else { Layout::Document };
    match forced {
        Some(r) => {
            plan.layout = r.detect(&peek).map(|d| d.layout).unwrap_or(generic_layout);
            plan.reader = Some(r);
            report.format = Some(r.name().to_string());
        }
        None => match best(&peek) {
            Some((r, d)) if d.confidence >= 50 => {
                plan.layout = d.layout;
                plan.reader = Some(r);
                report.format = Some(r.name().to_string());
            }
            other => {
                let guess = other.map(|(r, d)| format!("{} ({})", r.name(), d.reason));
                report.error = Some(
                    FormatError::NotRecognised { path: plan.file.display.clone(), guess: guess.clone() }.to_string(),
                );
                report.guess = guess;
            }
        },
    }
    plan.report = report;
    plan
}

fn best(peek: &Peek) -> Option<(&'static dyn Reader, Detection)> {
    registry::all().iter().filter_map(|r| r.detect(peek).map(|d| (*r, d))).max_by_key(|(_, d)| d.confidence)
}

/// Parses the first non-blank line when it is complete within the peek; also tells
/// whether another non-blank line follows (the file is JSON Lines).
fn first_line(peek: &[u8]) -> (Option<serde_json::Value>, bool) {
    let start = peek.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(peek.len());
    let rest = &peek[start..];
    let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
        return (serde_json::from_slice(rest).ok(), false);
    };
    let value: Option<serde_json::Value> = serde_json::from_slice(&rest[..nl]).ok();
    let more = rest[nl..].iter().any(|b| !b.is_ascii_whitespace());
    let multi = more && value.is_some();
    (value, multi)
}

/// Marks files that another file's records consume as `part_of` that file.
fn mark_consumed(plans: &mut [Plan]) {
    let jobs: Vec<(usize, &InputFile, &'static dyn Reader, Layout)> =
        plans.iter().enumerate().filter_map(|(i, p)| p.reader.map(|r| (i, &p.file, r, p.layout))).collect();
    let refs: Vec<(usize, Vec<PathBuf>)> =
        jobs.into_par_iter().map(|(i, f, r, l)| (i, r.referenced_files(f, l))).filter(|(_, v)| !v.is_empty()).collect();
    let mut consumer: HashMap<PathBuf, String> = HashMap::new();
    for (i, targets) in refs {
        for t in targets {
            consumer.entry(t).or_insert_with(|| plans[i].file.display.clone());
        }
    }
    if consumer.is_empty() {
        return;
    }
    for p in plans.iter_mut() {
        let Ok(real) = p.file.fs_path.canonicalize() else {
            continue;
        };
        if let Some(by) = consumer.get(&real) {
            if *by != p.file.display {
                p.report.part_of = Some(by.clone());
                p.report.error = None;
            }
        }
    }
}

/// Streams a file's records into batches on the channel.
fn produce(
    idx: usize,
    file: &InputFile,
    layout: Layout,
    stdin: Option<Box<dyn BufRead + Send>>,
    tx: &crossbeam_channel::Sender<Msg>,
    recycled: &crossbeam_channel::Receiver<Batch>,
) -> Result<(), String> {
    let mut reader = match stdin {
        Some(r) => r,
        None => input::open(file).map_err(|e| e.to_string())?,
    };
    let fresh = || {
        recycled
            .try_recv()
            .unwrap_or_else(|_| Batch { buf: Vec::with_capacity(BATCH_BYTES + (1 << 20)), records: Vec::new() })
    };
    if layout == Layout::Document {
        let mut batch = fresh();
        reader.read_to_end(&mut batch.buf).map_err(|e| format!("{}: read failed: {}", file.display, e))?;
        batch.records.push(OwnedRecord { range: 0..batch.buf.len(), line: None, document_index: Some(0) });
        let _ = tx.send(Msg::Batch(idx, batch));
        return Ok(());
    }
    let mut batch = fresh();
    let mut line_no = 0u64;
    loop {
        let start = batch.buf.len();
        let n = match reader.read_until(b'\n', &mut batch.buf) {
            Ok(n) => n,
            Err(e) => {
                // Records read before the failure still count.
                batch.buf.truncate(start);
                if !batch.records.is_empty() {
                    let _ = tx.send(Msg::Batch(idx, batch));
                }
                return Err(format!("{}:{}: read failed after line {}: {}", file.display, line_no + 1, line_no, e));
            }
        };
        if n == 0 {
            break;
        }
        line_no += 1;
        while batch.buf.len() > start && matches!(batch.buf.last(), Some(b'\n' | b'\r')) {
            batch.buf.pop();
        }
        if batch.buf[start..].iter().all(|b| b.is_ascii_whitespace()) {
            batch.buf.truncate(start);
            continue;
        }
        let end = batch.buf.len();
        batch.records.push(OwnedRecord { range: start..end, line: Some(line_no), document_index: None });
        if (batch.records.len() >= BATCH_RECORDS || batch.buf.len() >= BATCH_BYTES)
            && tx.send(Msg::Batch(idx, std::mem::replace(&mut batch, fresh()))).is_err()
        {
            return Ok(());
        }
    }
    if !batch.records.is_empty() {
        let _ = tx.send(Msg::Batch(idx, batch));
    }
    Ok(())
}

/// A record after the parallel stage.
struct Processed {
    sha: [u8; 32],
    outcome: Result<Accepted, Vec<Problem>>,
}

struct Accepted {
    trajectory: Box<Trajectory>,
    rollout_key: Option<String>,
    canonical: Option<Vec<u8>>,
}

fn process(reader: &dyn Reader, bytes: &[u8], rec: &OwnedRecord, file: &InputFile, canonical: bool) -> Processed {
    let sha: [u8; 32] = Sha256::digest(bytes).into();
    let sha_hex = trajkit_model::canonical::hex(&sha);
    let raw = RawRecord { bytes, sha256: &sha_hex, line: rec.line, document_index: rec.document_index };
    let outcome = match reader.read_record(&raw, file) {
        RecordResult::Rejected(problems) => Err(problems),
        RecordResult::Accepted { mut trajectory, rollout_key, .. } => {
            match seal_and_serialize(&mut trajectory, canonical, bytes.len()) {
                Ok(bytes) => Ok(Accepted { trajectory, rollout_key, canonical: bytes }),
                Err(e) => {
                    Err(vec![Problem::new(Reason::SchemaViolation, "$", format!("cannot serialize record: {e}"))])
                }
            }
        }
    };
    Processed { sha, outcome }
}

fn seal_and_serialize(
    t: &mut Trajectory,
    canonical: bool,
    source_len: usize,
) -> Result<Option<Vec<u8>>, serde_json::Error> {
    if !canonical {
        trajkit_model::seal(t)?;
        return Ok(None);
    }
    // The canonical form is about as long as the source: size the buffer once.
    let mut out = Vec::with_capacity(source_len + source_len / 4 + 1024);
    trajkit_model::canonical::write_sealed(t, &mut out)?;
    out.push(b'\n');
    Ok(Some(out))
}

/// Per-file memory of what was accepted: identical repeats and conflicting rollouts.
#[derive(Default)]
struct FileState {
    seen: HashSet<[u8; 32]>,
    rollouts: HashMap<String, [u8; 32]>,
}

fn apply(plan: &mut Plan, state: &mut FileState, rec: &OwnedRecord, p: Processed, sink: &mut dyn Sink) {
    plan.report.records += 1;
    let reject = |plan: &mut Plan, sink: &mut dyn Sink, problems: Vec<Problem>| {
        let reason = problems.first().map(|p| p.reason).unwrap_or(Reason::SchemaViolation);
        plan.report.add_rejection(reason);
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
        Ok(acc) => {
            if state.seen.contains(&p.sha) {
                plan.report.duplicate_records += 1;
                return;
            }
            if let Some(key) = &acc.rollout_key {
                if let Some(first) = state.rollouts.get(key) {
                    let msg = format!(
                        "rollout {key} was already recorded with different content (sha256 {})",
                        &trajkit_model::canonical::hex(first)[..16]
                    );
                    reject(plan, sink, vec![Problem::new(Reason::ConflictingRollout, "$", msg)]);
                    return;
                }
                state.rollouts.insert(key.clone(), p.sha);
            }
            state.seen.insert(p.sha);
            plan.report.add_trajectory(&acc.trajectory);
            sink.trajectory(&plan.file, &acc.trajectory, acc.canonical.as_deref());
        }
    }
}
