//! `trajkit build`: read every source, score each trajectory, write canonical shards and
//! the index, then everything computed from them; built in a sibling temporary
//! directory and swapped into place only when complete. Three phases, whether on one
//! machine or on a cluster: `plan`, `partial`, `finalize` (docs/scale-out.md).

use foldhash::HashSet;
use std::path::{Path, PathBuf};

use trajkit_formats::FileReport;
use trajkit_model::{Authorship, LazyValue, Status, Trajectory};

use crate::clusters::ClusterOptions;
use crate::contamination::ContaminationOptions;
use crate::error::LibraryError;
use crate::finalize::Merge;
use crate::index::{CallRow, StepRow};
use crate::layout;
use crate::plan::BuildPlan;
use crate::registry::{ResolvedSource, Role as SourceRole};
use crate::row::Row;
use crate::score::score;
use crate::split::SplitConfig;

/// How to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Input paths; with a registry they may be empty (the registry's paths are read).
    pub inputs: Vec<PathBuf>,
    pub registry: Option<PathBuf>,
    pub output: PathBuf,
    pub split: SplitConfig,
    /// Force a reader for every file (a source's own `format` wins).
    pub format: Option<String>,
    pub outcomes: Option<PathBuf>,
    /// Fail on the first rejected record instead of counting it.
    pub strict: bool,
    /// Uncompressed bytes per canonical shard.
    pub shard_bytes: u64,
    /// Worker threads (for zstd; the read pool is rayon's global pool).
    pub threads: usize,
    /// Wait for another build of the same output to finish instead of refusing.
    pub wait: bool,
    /// The record size limit (`trajkit_formats::Options::max_record_bytes`).
    pub max_record_bytes: Option<usize>,
    /// How tasks are clustered by content (docs/quality.md#task-clusters).
    pub clusters: ClusterOptions,
    /// The contamination report's rules and `--fail-on-contamination` (docs/quality.md).
    pub contamination: ContaminationOptions,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            inputs: Vec::new(),
            registry: None,
            output: PathBuf::from("library"),
            split: SplitConfig::default(),
            format: None,
            outcomes: None,
            strict: false,
            shard_bytes: 256 << 20,
            threads: 1,
            wait: false,
            max_record_bytes: None,
            clusters: ClusterOptions::default(),
            contamination: ContaminationOptions::default(),
        }
    }
}

/// Progress callbacks (the binary draws bars with them).
pub trait Progress {
    /// Files to read and their total size in bytes (compressed as stored).
    fn start(&self, _files: u64, _bytes: u64) {}
    /// A file is read.
    fn file_done(&self, _report: &FileReport, _bytes: u64, _trajectories_so_far: u64) {}
    /// A later stage begins (indexing, statistics ...).
    fn stage(&self, _name: &str) {}
    /// Reading is over and its threads are idle: a caller whose allocator keeps freed
    /// memory for reuse (the binary's mimalloc) may return it before the serial finalize.
    fn reading_done(&self) {}
    /// A warning for the user.
    fn warn(&self, _message: &str) {}
    /// True once the caller wants the build abandoned (Ctrl-C in Python): reading stops,
    /// the staging directory is removed and the old library stays.
    fn cancelled(&self) -> bool {
        false
    }
}

/// No progress output.
pub struct Quiet;
impl Progress for Quiet {}

/// What a build produced.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSummary {
    pub files: u64,
    pub records: u64,
    pub trajectories: u64,
    pub rejected: u64,
    /// Files that could not be read (or not recognised).
    pub unreadable: u64,
    pub shards: u32,
    pub warnings: Vec<String>,
    /// Stopped at a rejection because of `--strict`: no library was written.
    pub strict_failure: Option<String>,
    /// `--fail-on-contamination` found a training-eligible trajectory overlapping a
    /// protected task: no library was written.
    pub contamination_failure: Option<String>,
}

/// Something written into the finished library before its manifest (the gallery). It sees
/// each row as `evaluation/per_trajectory.jsonl.gz` is written, so that it need not read the
/// rows back, then gets the library opened from the staging directory.
pub trait Finisher {
    /// A row of the library, in library order, as the evaluation rows are written.
    fn row(&mut self, _row: &crate::row::Row) {}
    /// Writes into the complete library (manifest and swap come after).
    fn finish(&mut self, lib: &crate::read::Library) -> Result<(), String>;
}

/// Builds the library at `opts.output`.
pub fn build(opts: &BuildOptions, progress: &dyn Progress) -> Result<BuildSummary, LibraryError> {
    build_with(opts, progress, None)
}

/// Builds the library, running `finisher` on the complete library before the manifest
/// is written and the library swapped into place. The same phases as a build on a
/// cluster (`plan`, `build_partial`, `finalize`), with the whole plan as one partial: one
/// read keeps every core busy, and its shards and index are today's byte for byte. The
/// first partial's entries go straight to finalize's merge, on a thread of its own while the
/// partial is read, instead of through `entries.jsonl` (written as JSON, then parsed back).
pub fn build_with(
    opts: &BuildOptions,
    progress: &dyn Progress,
    finisher: Option<&mut dyn Finisher>,
) -> Result<BuildSummary, LibraryError> {
    let session = BuildSession::begin(opts)?;
    let mut plan = crate::plan::plan(opts, None)?;
    for w in &plan.warnings {
        progress.warn(w);
    }
    progress.start(plan.files, plan.bytes);
    progress.stage("reading");
    let staging = session.staging();
    let input_bytes = plan.bytes;
    let streamed = std::thread::scope(|s| -> Result<Option<Merge>, LibraryError> {
        let Some(first) = plan.groups.first() else { return Ok(None) };
        let (tee, entries) = crossbeam_channel::bounded(MERGE_QUEUE);
        // Errors name the partial: its entries never reach `entries.jsonl` here.
        let named = crate::plan::partial_dir(staging, first.index);
        let merging = s.spawn(move || Merge::streamed(opts, staging, &named, entries, input_bytes));
        let mut tee = Some(tee);
        // Each group's file list goes to its read (finalize needs only the groups' numbers).
        for group in plan.groups.iter_mut() {
            let files = std::mem::take(&mut group.files);
            let owned = crate::plan::FileGroup { index: group.index, first_file: group.first_file, files };
            let partial = crate::partial::build_partial_teed(opts, owned, staging, progress, tee.take());
            if partial?.strict_failure.is_some() {
                break; // finalize reports it; the groups after it need not be read
            }
        }
        let merged = merging.join().map_err(|_| LibraryError::Invalid {
            path: staging.join("index.sqlite"),
            message: "the merging thread panicked".into(),
        })?;
        merged.map(Some)
    })?;
    progress.reading_done();
    if progress.cancelled() {
        return Err(LibraryError::Cancelled);
    }
    session.finish_from(opts, &plan, progress, finisher, streamed)
}

/// Entries queued for the merging thread at most (a few KiB each): when the index writer
/// falls behind, the reading waits instead of holding the entries in memory.
const MERGE_QUEUE: usize = 1024;

/// A build in progress: the output's build lock and its staging directory, where the
/// partials are written. Dropped unfinished, the staging directory is removed and the
/// old library stays.
pub struct BuildSession {
    // Field order is drop order: the staging directory goes before the lock is released.
    staging: layout::Staging,
    _lock: layout::BuildLock,
}

impl BuildSession {
    /// Checks the options and the output, takes the build lock, creates the staging directory.
    pub fn begin(opts: &BuildOptions) -> Result<BuildSession, LibraryError> {
        opts.split.validate().map_err(|m| LibraryError::Invalid { path: opts.output.clone(), message: m })?;
        opts.clusters.validate().map_err(|m| LibraryError::Invalid { path: opts.output.clone(), message: m })?;
        // Checked before locking, so no lock file is left beside a directory that is refused.
        layout::check_target(&opts.output)?;
        let lock = layout::BuildLock::acquire(&opts.output, opts.wait)?;
        let staging = layout::Staging::create(&opts.output, &lock)?;
        Ok(BuildSession { staging, _lock: lock })
    }

    /// The staging directory (partials go to its `partials/`).
    pub fn staging(&self) -> &Path {
        self.staging.path()
    }

    /// Finalizes the partials of `plan`, runs the finisher, writes the manifest and swaps
    /// the library into place. A strict failure returns its summary and writes nothing.
    pub fn finish(
        self,
        opts: &BuildOptions,
        plan: &BuildPlan,
        progress: &dyn Progress,
        finisher: Option<&mut dyn Finisher>,
    ) -> Result<BuildSummary, LibraryError> {
        self.finish_from(opts, plan, progress, finisher, None)
    }

    /// `finish`, with the first partial already merged when it was streamed (`build_with`).
    fn finish_from(
        self,
        opts: &BuildOptions,
        plan: &BuildPlan,
        progress: &dyn Progress,
        mut finisher: Option<&mut dyn Finisher>,
        streamed: Option<Merge>,
    ) -> Result<BuildSummary, LibraryError> {
        let staging = self.staging.path();
        let mut rows = |row: &crate::row::Row| {
            if let Some(f) = finisher.as_deref_mut() {
                f.row(row);
            }
        };
        let mut shard_digests = None;
        let summary = crate::finalize::finalize_from(
            opts,
            plan,
            staging,
            progress,
            streamed,
            &mut rows,
            Some(&mut shard_digests),
        )?;
        if summary.strict_failure.is_some() || summary.contamination_failure.is_some() {
            return Ok(summary); // the staging directory is removed on drop; the old library stays
        }
        if let Some(finish) = finisher {
            let lib = crate::read::Library::open(staging)?;
            finish.finish(&lib).map_err(|message| LibraryError::Invalid { path: opts.output.clone(), message })?;
        }
        if progress.cancelled() {
            return Err(LibraryError::Cancelled);
        }
        progress.stage("manifest");
        let manifest_path = staging.join(trajkit_verify::manifest::DEFAULT_NAME);
        let known = shard_digests.map(crate::shard_digests::ShardDigests::finish).unwrap_or_default();
        let manifest =
            trajkit_verify::manifest::create_with(staging, &[trajkit_verify::manifest::DEFAULT_NAME], &known)
                .map_err(|e| LibraryError::Invalid { path: manifest_path.clone(), message: e.to_string() })?;
        trajkit_verify::manifest::write(&manifest, &manifest_path)
            .map_err(|e| LibraryError::Invalid { path: manifest_path.clone(), message: e.to_string() })?;
        self.staging.commit()?;
        progress.stage("done");
        Ok(summary)
    }
}

/// The row of a trajectory: identity, provenance and every field computed from the
/// record alone (`interaction`: its interaction digest, where the pipeline took it with the
/// content digest). Fields that need all rows (duplicate group size, task rank, protected
/// splits, training eligibility) are completed in the index.
pub(crate) fn make_row(
    t: &Trajectory,
    id: String,
    interaction: Option<String>,
    source: &ResolvedSource,
    split: &SplitConfig,
    shard: String,
    shard_line: u64,
) -> Row {
    let status = match (source.rule, t.outcome.reward) {
        (Some(rule), Some(reward)) => rule.status(reward),
        _ => t.outcome.status,
    };
    let s = score(t, status);
    let role = source.source.role;
    let split_key = split_key(&t.task.key, t.task.id.as_deref());
    let split_name =
        if role == SourceRole::EvaluationOnly { crate::split::PROTECTED } else { split.assign(&split_key) };
    let model = t.agent.model.clone().or_else(|| t.steps.iter().find_map(|st| st.model.clone()));
    // Serializing borrowed parts of a record does not fail; were it to, the record would
    // group by its whole content instead.
    let interaction = interaction
        .map_or_else(|| trajkit_model::interaction_digest(t), Ok)
        .unwrap_or_else(|_| t.content_digest.clone());
    let near_group = crate::near::group_id(&interaction);
    Row {
        id,
        source: source.source.name.clone(),
        format: t.provenance.format.clone(),
        path: t.provenance.path.clone(),
        line: t.provenance.line,
        document_index: t.provenance.document_index,
        shard,
        shard_line,
        task_key: t.task.key.clone(),
        split_key,
        task_id: t.task.id.clone(),
        environment: t.task.environment.clone(),
        model,
        scaffold: t.agent.name.clone(),
        family: source.source.family.clone(),
        license: source.source.license.clone(),
        role: role.as_str().to_string(),
        status: status.as_str().to_string(),
        reward: t.outcome.reward,
        outcome_known: status != Status::Unknown,
        verification: t.outcome.verification.as_str().to_string(),
        structural_valid: s.structural_valid,
        structural_problems: s.structural_problems,
        action_observation_completeness: s.action_observation_completeness,
        decisions: s.decisions,
        steps: s.steps,
        tool_calls: s.tool_calls,
        subagents: s.subagents,
        gaps: s.gaps,
        complete: s.complete,
        sft_eligible: s.sft_eligible,
        training_eligible: s.sft_eligible && role == SourceRole::Training,
        quality_tier: s.quality_tier,
        task_rank: 0,
        duplicate_group: format!("dup-{}", interaction.get(..16).unwrap_or(&interaction)),
        duplicate_group_size: 1,
        split: split_name.to_string(),
        content_digest: t.content_digest.clone(),
        prompt_tokens: t.metrics.as_ref().and_then(|m| m.prompt_tokens),
        completion_tokens: t.metrics.as_ref().and_then(|m| m.completion_tokens),
        cost_usd: t.metrics.as_ref().and_then(|m| m.cost_usd),
        environment_version: t.task.environment_version.clone().or_else(|| source.source.version.clone()),
        interaction_digest: interaction,
        duplicate_outcomes_disagree: false,
        duration_seconds: crate::latency::duration_seconds(t),
        cached_tokens: t.metrics.as_ref().and_then(|m| m.cached_tokens),
        shard_offset: None,
        frame_offset: None,
        instruction_digest: t.task.instruction.as_deref().and_then(crate::clusters::instruction_digest),
        task_cluster: None,
        task_cluster_reason: None,
        task_cluster_similarity: None,
        near_duplicate_group: Some(near_group),
        near_duplicate_group_size: None,
        near_duplicate_similarity: None,
    }
}

/// The key a task's split is drawn from: a SWE-bench style instance id (`owner__repo-123`,
/// globally unique) on its own, wherever a source namespaced it; otherwise the task key.
pub fn split_key(task_key: &str, task_id: Option<&str>) -> String {
    let last = task_key.rsplit('/').next().unwrap_or(task_key);
    [task_id.unwrap_or(""), last].into_iter().find(|c| is_instance_id(c)).unwrap_or(task_key).to_string()
}

/// `owner__repo-123`: the SWE-bench instance id shape.
fn is_instance_id(s: &str) -> bool {
    let Some((owner, rest)) = s.split_once("__") else { return false };
    let Some((repo, number)) = rest.rsplit_once('-') else { return false };
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    word(owner) && word(repo) && !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
}

/// Step and tool-call rows of the run's own steps (index order = step order).
pub(crate) fn step_rows(t: &Trajectory) -> (Vec<StepRow>, Vec<CallRow>) {
    let answered: HashSet<&str> =
        t.steps.iter().flat_map(|s| s.tool_results.iter().filter_map(|r| r.call_id.as_deref())).collect();
    let mut steps = Vec::with_capacity(t.steps.len());
    let mut calls = Vec::new();
    for (i, s) in t.steps.iter().enumerate() {
        steps.push(StepRow {
            role: s.role.as_str().into(),
            authorship: if s.authorship == Authorship::Unknown { "unknown" } else { "declared" }.into(),
            copied_context: s.copied_context,
            subagent: s.subagent,
            model: s.model.clone(),
            timestamp: s.timestamp.clone(),
            tool_calls: s.tool_calls.len() as u32,
            tool_results: s.tool_results.len() as u32,
            content_bytes: s.content.as_ref().map_or(0, LazyValue::content_text_len),
            has_reasoning: s.reasoning.is_some(),
        });
        for (j, c) in s.tool_calls.iter().enumerate() {
            calls.push(CallRow {
                step: i as u32,
                call: j as u32,
                call_id: c.id.clone(),
                name: c.name.clone(),
                arguments_invalid: c.arguments_invalid,
                answered: c.id.as_deref().is_some_and(|id| answered.contains(id)),
            });
        }
    }
    (steps, calls)
}
