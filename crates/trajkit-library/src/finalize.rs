//! Finalizing, the last of a build's phases: the partials of every group, in plan order,
//! become one library in the staging directory: library-unique ids (`~N` across groups),
//! shards renumbered into `canonical/`, the index loaded in reading order, then the
//! cross-record work (duplicate groups, ranks, protected splits), evaluation rows,
//! coverage, summary (its statistics computed on another thread beside the two before it)
//! and `build.json`. Cancellation is polled between and within stages.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::json;

use crate::build::{BuildOptions, BuildSummary, Progress};
use crate::error::LibraryError;
use crate::index::{FileRow, IndexWriter, Msg};
use crate::partial::{unique_id, with_id, Entry, IdCounts, PartialSummary, ENTRIES, SUMMARY};
use crate::plan::{partial_dir, registry_of, BuildPlan};
use crate::registry::{Registry, Role};
use crate::shard_digests::ShardDigests;
use crate::shards::{Placement, ShardWriter};
use crate::{coverage, layout, rows_out, stats};

/// Entries loaded between two looks at `Progress::cancelled`.
const POLL_EVERY: u64 = 4096;

/// Finalizes the partials of `plan` in `staging` into a library there (not yet swapped
/// into place). A partial that is missing fails the build, naming its group.
pub fn finalize(
    opts: &BuildOptions,
    plan: &BuildPlan,
    staging: &Path,
    progress: &dyn Progress,
) -> Result<BuildSummary, LibraryError> {
    finalize_from(opts, plan, staging, progress, None, &mut |_| {}, None)
}

/// `finalize`, given the merge of the plan's first partial when it ran while that partial
/// was read (`Merge::streamed`): its entries are loaded already, its shards are placed here.
/// `rows` sees each evaluation row as it is written (`Finisher::row`); `shard_digests`, when
/// given (a caller that writes the manifest), receives the shards' manifest entries being
/// hashed from the end of the merge.
pub(crate) fn finalize_from(
    opts: &BuildOptions,
    plan: &BuildPlan,
    staging: &Path,
    progress: &dyn Progress,
    streamed: Option<Merge>,
    rows: &mut dyn FnMut(&crate::row::Row),
    shard_digests: Option<&mut Option<ShardDigests>>,
) -> Result<BuildSummary, LibraryError> {
    let registry = registry_of(opts)?;
    let partials = read_summaries(plan, staging)?;
    if let Some(failure) = partials.iter().find_map(|p| p.strict_failure.clone()) {
        // A streamed merge's writer stops when it is dropped here, before the staging
        // directory (and the index in it) is removed.
        drop(streamed);
        let mut summary = figures(&partials, &crate::coverage::Collector::in_dir(staging), plan.warnings.clone());
        summary.strict_failure = Some(failure);
        return Ok(summary);
    }
    progress.stage("merging");
    let index_path = staging.join("index.sqlite");
    let first = usize::from(streamed.is_some());
    let mut merge = match streamed {
        Some(merge) => merge,
        None => Merge::start(opts, &registry, staging, plan.bytes)?,
    };
    for p in partials.iter().take(first) {
        merge.place_streamed(staging, p)?;
    }
    for p in partials.iter().skip(first) {
        merge.partial(staging, p, &registry, &|| progress.cancelled())?;
    }
    // The record ids taken (one per trajectory) are not needed past the merge.
    let Merge { index, reports, tasks, near, contamination: fingerprints, ids, .. } = merge;
    drop(ids);
    if let Some(digests) = shard_digests {
        *digests = Some(ShardDigests::start(staging));
    }
    // The index writer may still be inserting the last partial's rows: task clusters, in
    // memory, are computed meanwhile.
    progress.stage("task clusters");
    let clusters = tasks.cluster(&opts.clusters, &opts.split).map_err(|source| LibraryError::Io {
        path: index_path.with_file_name("task cluster shingles (temporary file)"),
        source,
    })?;
    // Near-duplicate groups are made on other threads while the clusters go into the index.
    let (members, conn) = std::thread::scope(|s| {
        let clusters = &clusters;
        let grouping = s.spawn(move || near.group(clusters, opts.clusters.trajectory_similarity));
        let written = index.finish().and_then(|conn| {
            cancelled(progress)?;
            crate::clusters::write_index(&conn, &index_path, clusters)?;
            Ok(conn)
        });
        let members = grouping
            .join()
            .map_err(|_| LibraryError::Invalid {
                path: index_path.clone(),
                message: "the near-duplicate grouping thread panicked".to_string(),
            })?
            .map_err(|source| LibraryError::Io {
                path: index_path.with_file_name("near-duplicate sketches (temporary file)"),
                source,
            })?;
        Ok::<_, LibraryError>((members, written?))
    })?;
    // The clusters are in the index now; held on, their links (a few hundred bytes per
    // distinct task) stayed in memory through every later stage.
    drop(clusters);
    cancelled(progress)?;
    let dir = staging.join("partials");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(LibraryError::io(&dir))?;
    }
    let mut summary = figures(&partials, &reports, plan.warnings.clone());
    progress.stage("indexing");
    crate::index::finalize(&conn, &index_path, &|| progress.cancelled())?;
    cancelled(progress)?;
    progress.stage("near duplicates");
    crate::near::write_index(&conn, &index_path, &members)?;
    cancelled(progress)?;
    progress.stage("contamination");
    let report = fingerprints.report(&conn, &index_path, &opts.contamination)?;
    if opts.contamination.fail {
        if let Some(failure) = report.failure() {
            summary.contamination_failure = Some(failure);
            return Ok(summary);
        }
    }
    let evaluation = staging.join("evaluation");
    std::fs::create_dir_all(&evaluation).map_err(LibraryError::io(&evaluation))?;
    layout::write_json(&staging.join(crate::contamination::REPORT), &report.to_json())?;
    cancelled(progress)?;
    // The index is complete: the rest only reads it. The statistics, the longest of those
    // reads, run on a second thread with their own connection (the writer's is closed: it
    // holds the file exclusively) while the evaluation rows and the coverage report are
    // written; the statistics stage is what is left of them after those.
    drop(conn);
    std::thread::scope(|s| {
        let statistics = s.spawn(|| stats::compute(&crate::index::open_read_only(&index_path)?, &index_path));
        let conn = crate::index::open_read_only(&index_path)?;
        progress.stage("evaluation rows");
        rows_out::write_rows(&conn, &index_path, &staging.join(crate::read::ROWS_PATH), rows)?;
        cancelled(progress)?;
        progress.stage("coverage");
        let coverage = coverage::coverage(&registry, reports, &conn, &index_path)?;
        layout::write_json(&staging.join("coverage.json"), &coverage)?;
        cancelled(progress)?;
        progress.stage("statistics");
        let stats = statistics.join().map_err(|_| LibraryError::Invalid {
            path: index_path.clone(),
            message: "the statistics thread panicked".to_string(),
        })??;
        layout::write_json(&staging.join("evaluation/summary.json"), &stats)?;
        layout::write_json(&staging.join("evaluation/model_imitation.json"), &model_imitation())
    })?;
    cancelled(progress)?;
    layout::write_json(&staging.join("build.json"), &build_info(opts, &registry, &summary))?;
    summary.warnings.sort();
    Ok(summary)
}

/// `Err(Cancelled)` once the caller asked to stop.
fn cancelled(progress: &dyn Progress) -> Result<(), LibraryError> {
    if progress.cancelled() {
        Err(LibraryError::Cancelled)
    } else {
        Ok(())
    }
}

/// The summaries of every group's partial, in plan order.
fn read_summaries(plan: &BuildPlan, staging: &Path) -> Result<Vec<PartialSummary>, LibraryError> {
    plan.groups
        .iter()
        .map(|g| {
            let path = partial_dir(staging, g.index).join(SUMMARY);
            let bytes = std::fs::read(&path).map_err(|e| LibraryError::Invalid {
                path: path.clone(),
                message: format!("the partial of group {} is missing (its task did not finish): {e}", g.index),
            })?;
            serde_json::from_slice(&bytes).map_err(|source| LibraryError::Json { path, line: 1, source })
        })
        .collect()
}

/// The build's figures from its partials and file reports.
fn figures(partials: &[PartialSummary], reports: &crate::coverage::Collector, warnings: Vec<String>) -> BuildSummary {
    let (records, rejected, unreadable) = reports.figures();
    BuildSummary {
        files: partials.iter().map(|p| p.files).sum(),
        records,
        trajectories: partials.iter().map(|p| p.trajectories).sum(),
        rejected,
        unreadable,
        shards: partials.iter().map(|p| p.shards).sum(),
        warnings,
        strict_failure: None,
        contamination_failure: None,
    }
}

/// Sources and build metadata, loaded before any record.
fn send_header(index: &IndexWriter, registry: &Registry, opts: &BuildOptions) {
    for s in &registry.sources {
        let src = &s.source;
        index.send(Msg::Source {
            name: src.name.clone(),
            format: src.format.clone(),
            license: src.license.clone(),
            family: src.family.clone(),
            version: src.version.clone(),
            role: src.role.as_str().to_string(),
            success_rule: src.success.clone(),
            paths: serde_json::to_string(&src.paths).unwrap_or_default(),
        });
    }
    for (key, value) in [
        ("trajkit_version", env!("CARGO_PKG_VERSION").to_string()),
        ("record_schema_version", trajkit_model::SCHEMA_VERSION.to_string()),
        ("split", serde_json::to_string(&opts.split).unwrap_or_default()),
    ] {
        index.send(Msg::Meta(key.to_string(), value));
    }
}

/// The merge of partials into the index and `canonical/`, in plan order.
pub(crate) struct Merge {
    index: IndexWriter,
    ids: IdCounts,
    ordinal: u64,
    /// Shards placed so far (the next partial's shards are numbered from here).
    shards: u32,
    /// Each file's report, for `coverage.json` and the build's figures.
    reports: crate::coverage::Collector,
    /// Instruction signatures for the task clusters.
    tasks: crate::clusters::Collector,
    /// Content sketches for the near-duplicate groups.
    near: crate::near::Collector,
    /// N-gram fingerprints for the contamination report.
    contamination: crate::contamination::Collector,
}

/// Per shard of a partial: line -> the id its record takes in the library.
type Renames = BTreeMap<u32, HashMap<u64, String>>;

/// Per rewritten shard of a partial: where each line's record now lies.
type Placements = BTreeMap<u32, Vec<Placement>>;

/// What the id pass reads of an `entries.jsonl` line (the rest is skipped, not built).
#[derive(Deserialize)]
enum IdEntry {
    Trajectory { record_id: String, row: IdRow },
    Rejection(IgnoredAny),
    File {},
}

/// The row fields the id pass needs.
#[derive(Deserialize)]
struct IdRow {
    id: String,
    shard: String,
    shard_line: u64,
}

impl Merge {
    /// An empty merge: the index writer started (sized for a plan of `input_bytes`), sources
    /// and build metadata sent.
    pub(crate) fn start(
        opts: &BuildOptions,
        registry: &Registry,
        staging: &Path,
        input_bytes: u64,
    ) -> Result<Merge, LibraryError> {
        let page_size = crate::index::page_size(input_bytes);
        let index = IndexWriter::start(&staging.join("index.sqlite"), page_size)?;
        send_header(&index, registry, opts);
        Ok(Merge {
            index,
            ids: IdCounts::default(),
            ordinal: 0,
            shards: 0,
            reports: crate::coverage::Collector::in_dir(staging),
            tasks: crate::clusters::Collector::in_dir(staging),
            near: crate::near::Collector::in_dir(staging),
            contamination: crate::contamination::Collector::in_dir(staging),
        })
    }

    /// The merge of the plan's first partial, its entries loaded as its sink makes them
    /// (`entries`, until the sender is dropped; none goes through `entries.jsonl`): what
    /// `partial` does, done while the partial is read. The first partial's ids are the
    /// library's and its shards keep their numbers, so no entry waits for the partial's end.
    /// `path` names the partial in errors; `input_bytes` are the plan's (`Merge::start`).
    pub(crate) fn streamed(
        opts: &BuildOptions,
        staging: &Path,
        path: &Path,
        entries: crossbeam_channel::Receiver<Entry>,
        input_bytes: u64,
    ) -> Result<Merge, LibraryError> {
        let registry = registry_of(opts)?;
        let mut merge = Merge::start(opts, &registry, staging, input_bytes)?;
        let none = Placements::new();
        for (n, entry) in entries.iter().enumerate() {
            merge.entry(path, n, entry, None, &none, &registry)?;
        }
        Ok(merge)
    }

    /// Places the shards of a partial whose entries were streamed (`streamed`).
    fn place_streamed(&mut self, staging: &Path, p: &PartialSummary) -> Result<(), LibraryError> {
        self.place_shards(staging, &partial_dir(staging, p.group), p.shards, &Renames::new())?;
        self.shards += p.shards;
        Ok(())
    }

    /// Loads one partial's entries and moves its shards into place, rewriting the
    /// records whose id repeats one of an earlier group (and their frame offsets).
    fn partial(
        &mut self,
        staging: &Path,
        p: &PartialSummary,
        registry: &Registry,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(), LibraryError> {
        let dir = partial_dir(staging, p.group);
        let path = dir.join(ENTRIES);
        // The first partial's ids are already the library's: the id pass is needed only
        // once an earlier group has taken ids.
        let assigned = if self.ids.is_empty() { None } else { Some(self.assign_ids(&path)?) };
        let renames = assigned.as_ref().map(|(_, r)| r.clone()).unwrap_or_default();
        let placements = self.place_shards(staging, &dir, p.shards, &renames)?;
        let mut ids = assigned.map(|(ids, _)| ids.into_iter());
        for (n, line) in entry_lines(&path)?.enumerate() {
            let line = line.map_err(LibraryError::io(&path))?;
            if (n as u64).is_multiple_of(POLL_EVERY) && cancelled() {
                return Err(LibraryError::Cancelled);
            }
            let entry = parse_entry(&path, n, line.as_bytes())?;
            self.entry(&path, n, entry, ids.as_mut(), &placements, registry)?;
        }
        self.shards += p.shards;
        Ok(())
    }

    /// Loads entry `n` of a partial: a trajectory takes its library id (the next
    /// of `ids`, else its own made unique), placement and shard number.
    fn entry(
        &mut self,
        path: &Path,
        n: usize,
        entry: Entry,
        ids: Option<&mut std::vec::IntoIter<String>>,
        placements: &Placements,
        registry: &Registry,
    ) -> Result<(), LibraryError> {
        let msg = match entry {
            Entry::Trajectory { record_id, mut row, steps, calls, shingles, content, ngrams } => {
                let task = self.tasks.add(&row, shingles);
                self.near.add(&row.interaction_digest, task, content);
                self.contamination.add(&row.interaction_digest, row.role == Role::EvaluationOnly.as_str(), ngrams);
                let local = local_shard(path, n, &row.shard)?;
                row.id = match ids.and_then(|i| i.next()) {
                    Some(id) => id,
                    None => unique_id(&mut self.ids, &record_id),
                };
                let line = (row.shard_line as usize).checked_sub(1);
                if let Some(placed) = placements.get(&local).zip(line).and_then(|(v, i)| v.get(i)) {
                    placed.clone().fill(&mut row);
                }
                row.shard = shard_name(self.shards + local);
                let ordinal = self.ordinal;
                self.ordinal += 1;
                Msg::Trajectory { ordinal, row, steps, calls }
            }
            Entry::Rejection(r) => Msg::Rejection(r),
            Entry::File { file, source, report } => {
                let name = registry.sources.get(source).map(|s| s.source.name.clone()).unwrap_or_default();
                self.reports.add(source, &report);
                Msg::File(FileRow { file, source: name, report })
            }
        };
        if self.index.send(msg) {
            Ok(())
        } else {
            Err(LibraryError::Invalid { path: PathBuf::from("index.sqlite"), message: "index writer stopped".into() })
        }
    }

    /// The id pass: the library id of each trajectory of the partial, in order, and the
    /// shard lines whose record must be rewritten with it.
    fn assign_ids(&mut self, path: &Path) -> Result<(Vec<String>, Renames), LibraryError> {
        let mut ids = Vec::new();
        let mut renames = Renames::new();
        for (n, line) in entry_lines(path)?.enumerate() {
            let line = line.map_err(LibraryError::io(path))?;
            if let IdEntry::Trajectory { record_id, row } = parse_entry(path, n, line.as_bytes())? {
                let id = unique_id(&mut self.ids, &record_id);
                if id != row.id {
                    let local = local_shard(path, n, &row.shard)?;
                    renames.entry(local).or_default().insert(row.shard_line, id.clone());
                }
                ids.push(id);
            }
        }
        Ok((ids, renames))
    }

    /// Moves the partial's shards to their library numbers (a rename; rewritten when
    /// some of their records take another id, whose new placements are returned).
    fn place_shards(
        &self,
        staging: &Path,
        dir: &Path,
        count: u32,
        renames: &Renames,
    ) -> Result<Placements, LibraryError> {
        let canonical = staging.join("canonical");
        std::fs::create_dir_all(&canonical).map_err(LibraryError::io(&canonical))?;
        let mut placements = Placements::new();
        for local in 0..count {
            let from = dir.join(shard_name(local));
            let to = staging.join(shard_name(self.shards + local));
            match renames.get(&local) {
                None => std::fs::rename(&from, &to).map_err(LibraryError::io(&to))?,
                Some(ids) => {
                    placements.insert(local, rewrite_shard(&from, &to, ids)?);
                }
            }
        }
        Ok(placements)
    }
}

/// The lines of a partial's `entries.jsonl`.
fn entry_lines(path: &Path) -> Result<std::io::Lines<BufReader<std::fs::File>>, LibraryError> {
    let file = std::fs::File::open(path).map_err(LibraryError::io(path))?;
    Ok(BufReader::with_capacity(1 << 20, file).lines())
}

/// One line of `entries.jsonl`, parsed as `T`; an error names the file and line.
fn parse_entry<T: serde::de::DeserializeOwned>(path: &Path, n: usize, line: &[u8]) -> Result<T, LibraryError> {
    serde_json::from_slice(line).map_err(|source| LibraryError::Json {
        path: path.to_path_buf(),
        line: n as u64 + 1,
        source,
    })
}

/// The number of the partial's shard a row names; an error names the partial (`path`) and
/// the entry (`n`, 0-based: its line in `entries.jsonl` when the entries went through it).
fn local_shard(path: &Path, n: usize, shard: &str) -> Result<u32, LibraryError> {
    shard_number(shard).ok_or_else(|| LibraryError::Invalid {
        path: path.to_path_buf(),
        message: format!("entry {}: shard {shard:?} is not a partial's shard", n + 1),
    })
}

/// Copies a shard, giving the records at the lines of `ids` their library id; returns
/// every record's new placement, by line.
fn rewrite_shard(from: &Path, to: &Path, ids: &HashMap<u64, String>) -> Result<Vec<Placement>, LibraryError> {
    let file = std::fs::File::open(from).map_err(LibraryError::io(from))?;
    let reader = BufReader::new(zstd::stream::read::Decoder::new(file).map_err(LibraryError::io(from))?);
    let tmp = tempfile::tempdir_in(trajkit_io::parent_dir(to)).map_err(LibraryError::io(to))?;
    let mut writer = ShardWriter::new(&tmp.path().join("canonical"), u64::MAX, 1)?;
    let mut placed = Vec::new();
    for (n, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(LibraryError::io(from))?;
        placed.push(match ids.get(&(n as u64 + 1)) {
            Some(id) => writer.append(&with_id(&line, id, &from.display().to_string())?)?,
            None => writer.append(&line)?,
        });
    }
    writer.finish()?;
    let written = tmp.path().join(shard_name(0));
    std::fs::rename(&written, to).map_err(LibraryError::io(to))?;
    Ok(placed)
}

/// `canonical/part-NNNNN.jsonl.zst`: a shard's name relative to the library root.
fn shard_name(number: u32) -> String {
    format!("canonical/part-{number:05}.jsonl.zst")
}

/// The number in a shard's name.
fn shard_number(name: &str) -> Option<u32> {
    name.strip_prefix("canonical/part-")?.strip_suffix(".jsonl.zst")?.parse().ok()
}

fn model_imitation() -> serde_json::Value {
    json!({
        "status": "not_computed",
        "reason": "teacher-forced token NLL needs a model, a tokenizer and an inference runtime; none is configured for this build",
        "metrics": null
    })
}

/// Seconds since the epoch: `SOURCE_DATE_EPOCH` when set (reproducible builds), else now.
fn built_at() -> u64 {
    let env = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.trim().parse().ok());
    env.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
    })
}

fn build_info(opts: &BuildOptions, registry: &Registry, summary: &BuildSummary) -> serde_json::Value {
    let built_at = built_at();
    json!({
        "kind": crate::read::LIBRARY_KIND,
        "trajkit_version": env!("CARGO_PKG_VERSION"),
        "record_schema_version": trajkit_model::SCHEMA_VERSION,
        "library_layout_version": 1,
        "options": {
            "format": opts.format,
            "outcomes": opts.outcomes.as_ref().map(|p| p.display().to_string()),
            "strict": opts.strict,
            "shard_bytes": opts.shard_bytes,
            "clusters": opts.clusters,
            "contamination": opts.contamination,
        },
        "split": opts.split,
        // The file name only: where it lies on the builder's machine is not the library's business.
        "registry": registry.file.as_ref().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()),
        "sources": registry.sources.iter().map(|s| &s.source).collect::<Vec<_>>(),
        "inputs": opts.inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "figures": {
            "files": summary.files,
            "records": summary.records,
            "trajectories": summary.trajectories,
            "rejected": summary.rejected,
            "shards": summary.shards,
        },
        "warnings": summary.warnings,
        "built_at_unix": built_at,
    })
}
