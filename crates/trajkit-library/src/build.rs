//! `trajkit build`: read every source, score each trajectory, write canonical shards and
//! the index, then everything computed from them; built in a sibling temporary
//! directory and swapped into place only when complete.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use trajkit_formats::outcomes::OutcomeTable;
use trajkit_formats::{FileReport, InputFile, Options, Rejection, Sink};
use trajkit_model::{Authorship, Status, Trajectory};

use crate::error::LibraryError;
use crate::index::{CallRow, FileRow, IndexWriter, Msg, RejectionRow, StepRow};
use crate::registry::{benchmark_hint, Registry, ResolvedSource, Role as SourceRole};
use crate::row::Row;
use crate::score::score;
use crate::shards::ShardWriter;
use crate::split::SplitConfig;
use crate::{coverage, layout, rows_out, stats};

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
}

/// A file to read and the source it belongs to.
struct Planned {
    file: InputFile,
    source: usize,
    bytes: u64,
}

/// Something written into the finished library before its manifest (the gallery): it
/// gets the library opened from the staging directory.
pub type Finisher<'a> = &'a dyn Fn(&crate::read::Library) -> Result<(), String>;

/// Builds the library at `opts.output`.
pub fn build(opts: &BuildOptions, progress: &dyn Progress) -> Result<BuildSummary, LibraryError> {
    build_with(opts, progress, None)
}

/// Builds the library, running `finisher` on the complete library before the manifest
/// is written and the library swapped into place.
pub fn build_with(
    opts: &BuildOptions,
    progress: &dyn Progress,
    finisher: Option<Finisher>,
) -> Result<BuildSummary, LibraryError> {
    opts.split.validate().map_err(|m| LibraryError::Invalid { path: opts.output.clone(), message: m })?;
    // Checked before locking, so no lock file is left beside a directory that is refused.
    layout::check_target(&opts.output)?;
    let lock = layout::BuildLock::acquire(&opts.output, opts.wait)?;
    let registry = match &opts.registry {
        Some(p) => Registry::load(p)?,
        None => Registry::from_inputs(&opts.inputs),
    };
    let (plan, mut warnings) = plan_files(&registry, &opts.inputs)?;
    if opts.registry.is_none() {
        warnings.extend(benchmark_warnings(&registry, &plan));
    }
    for w in &warnings {
        progress.warn(w);
    }
    let outcomes = match &opts.outcomes {
        Some(p) => Some(Arc::new(
            OutcomeTable::load(p).map_err(|e| LibraryError::Invalid { path: p.clone(), message: e.to_string() })?,
        )),
        None => None,
    };
    let staging = layout::Staging::create(&opts.output, &lock)?;
    let summary = build_into(staging.path(), opts, &registry, plan, outcomes, warnings, progress)?;
    if summary.strict_failure.is_some() {
        return Ok(summary); // the staging directory is removed on drop; the old library stays
    }
    if let Some(finish) = finisher {
        let lib = crate::read::Library::open(staging.path())?;
        finish(&lib).map_err(|message| LibraryError::Invalid { path: opts.output.clone(), message })?;
    }
    progress.stage("manifest");
    let manifest_path = staging.path().join(trajkit_verify::manifest::DEFAULT_NAME);
    let manifest = trajkit_verify::manifest::create(staging.path(), &[trajkit_verify::manifest::DEFAULT_NAME])
        .map_err(|e| LibraryError::Invalid { path: manifest_path.clone(), message: e.to_string() })?;
    trajkit_verify::manifest::write(&manifest, &manifest_path)
        .map_err(|e| LibraryError::Invalid { path: manifest_path.clone(), message: e.to_string() })?;
    staging.commit()?;
    progress.stage("done");
    Ok(summary)
}

fn plan_files(registry: &Registry, inputs: &[PathBuf]) -> Result<(Vec<Planned>, Vec<String>), LibraryError> {
    let roots: Vec<PathBuf> = if inputs.is_empty() {
        registry.sources.iter().flat_map(|s| s.roots.iter().cloned()).collect()
    } else {
        inputs.to_vec()
    };
    let (files, errors) = trajkit_formats::discover(&roots);
    if let Some(e) = errors.into_iter().next() {
        return Err(LibraryError::Invalid { path: PathBuf::from("."), message: e.to_string() });
    }
    let mut seen = HashSet::new();
    let mut warnings = Vec::new();
    let mut plan = Vec::new();
    for file in files {
        let canonical = file.fs_path.canonicalize().unwrap_or_else(|_| file.fs_path.clone());
        if !seen.insert(canonical.clone()) {
            continue;
        }
        match registry.source_of(&canonical) {
            Some(source) => {
                let bytes = std::fs::metadata(&file.fs_path).map(|m| m.len()).unwrap_or(0);
                // Provenance, index and gallery name the file relative to its source's base.
                let display = registry.sources[source].base.relative(&file.fs_path).display().to_string();
                plan.push(Planned { file: InputFile { display, ..file }, source, bytes });
            }
            None => warnings.push(format!("{}: not covered by any source of the registry; not read", file.display)),
        }
    }
    // Sources in registry order; files in discovery order within each.
    plan.sort_by_key(|p| p.source);
    Ok((plan, warnings))
}

fn benchmark_warnings(registry: &Registry, plan: &[Planned]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, s) in registry.sources.iter().enumerate() {
        let text = format!("{} {}", s.source.name, s.source.paths.join(" "));
        let files: Vec<&str> = plan.iter().filter(|p| p.source == i).map(|p| p.file.display.as_str()).collect();
        let joined = files.iter().take(200).copied().collect::<Vec<_>>().join(" ");
        if let Some(bench) = benchmark_hint(&format!("{text} {joined}"), &[]) {
            out.push(format!(
                "source {:?} looks like the public evaluation benchmark {bench}; its tasks will be used for \
                 training unless a registry marks it `role = \"evaluation_only\"`",
                s.source.name
            ));
        }
    }
    out
}

/// Everything the reading sink keeps while records stream by.
struct LibrarySink<'a> {
    index: &'a IndexWriter,
    shards: ShardWriter,
    source: &'a ResolvedSource,
    file_numbers: &'a HashMap<String, u64>,
    ordinal: u64,
    ids: HashMap<u64, u32>,
    error: Option<LibraryError>,
    strict: bool,
    strict_failure: Option<String>,
    progress: &'a dyn Progress,
    sizes: &'a HashMap<String, u64>,
    formats_seen: BTreeMap<String, u64>,
}

impl LibrarySink<'_> {
    fn fail(&mut self, e: LibraryError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// The library id: the record's, suffixed `~N` for its N-th repeat elsewhere.
    fn unique_id(&mut self, id: &str) -> String {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        id.hash(&mut h);
        let n = self.ids.entry(h.finish()).or_insert(0);
        *n += 1;
        if *n == 1 {
            id.to_string()
        } else {
            format!("{id}~{}", *n - 1)
        }
    }

    /// Files a record: a library-unique id, a shard line, and its row, steps and tool
    /// calls (computed on the worker threads) to the index.
    fn add(&mut self, analysis: Analysis, canonical: &[u8]) -> Result<(), LibraryError> {
        let Analysis { mut row, steps, calls } = analysis;
        let id = self.unique_id(&row.id);
        let renamed;
        let bytes = if id == row.id {
            canonical
        } else {
            renamed = with_id(canonical, &id, &row.path)?;
            &renamed
        };
        let placed = self.shards.append(bytes)?;
        row.id = id;
        placed.fill(&mut row);
        *self.formats_seen.entry(row.format.clone()).or_default() += 1;
        let ordinal = self.ordinal;
        self.ordinal += 1;
        if !self.index.send(Msg::Trajectory { ordinal, row: Box::new(row), steps, calls }) {
            return Err(LibraryError::Invalid {
                path: PathBuf::from("index.sqlite"),
                message: "index writer stopped".into(),
            });
        }
        Ok(())
    }
}

/// What the worker threads compute from each accepted record (`Options::analyze`), so the
/// ordered thread only files it.
struct Analysis {
    row: Row,
    steps: Vec<StepRow>,
    calls: Vec<CallRow>,
}

/// The analyzer of one source: its row (id and shard filled in later), steps and calls.
fn analyzer(source: &ResolvedSource, split: &SplitConfig) -> trajkit_formats::pipeline::Analyzer {
    let (source, split) = (source.clone(), split.clone());
    Arc::new(move |t: &Trajectory| {
        let row = make_row(t, t.id.clone(), &source, &split, String::new(), 0);
        let (steps, calls) = step_rows(t);
        Box::new(Analysis { row, steps, calls }) as Box<dyn std::any::Any + Send>
    })
}

/// The canonical JSON of a record with another id (the rare repeat of an id).
fn with_id(canonical: &[u8], id: &str, path: &str) -> Result<Vec<u8>, LibraryError> {
    let invalid = |e: serde_json::Error| LibraryError::Invalid { path: PathBuf::from(path), message: e.to_string() };
    let mut t: Trajectory = serde_json::from_slice(canonical).map_err(invalid)?;
    t.id = id.to_string();
    let mut out = Vec::with_capacity(canonical.len() + 8);
    trajkit_model::canonical::write_canonical(&t, &mut out).map_err(invalid)?;
    out.push(b'\n');
    Ok(out)
}

impl Sink for LibrarySink<'_> {
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
        let file = self.file_numbers.get(&r.path).copied().unwrap_or(u64::MAX);
        for p in &r.problems {
            self.index.send(Msg::Rejection(RejectionRow {
                file,
                path: r.path.clone(),
                line: r.line,
                document_index: r.document_index,
                reason: p.reason.as_str().to_string(),
                json_path: p.json_path.clone(),
                message: p.message.clone(),
            }));
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
        let file = self.file_numbers.get(&report.path).copied().unwrap_or(u64::MAX);
        if self.strict && self.strict_failure.is_none() {
            if let Some(e) = &report.error {
                self.strict_failure = Some(format!("{}: {e}", report.path));
            }
        }
        self.index.send(Msg::File(FileRow { file, source: self.source.source.name.clone(), report: report.clone() }));
        let bytes = self.sizes.get(&report.path).copied().unwrap_or(0);
        self.progress.file_done(report, bytes, self.ordinal);
    }

    fn should_stop(&self) -> bool {
        self.error.is_some() || self.strict_failure.is_some() || self.progress.cancelled()
    }
}

fn build_into(
    dir: &Path,
    opts: &BuildOptions,
    registry: &Registry,
    plan: Vec<Planned>,
    outcomes: Option<Arc<OutcomeTable>>,
    warnings: Vec<String>,
    progress: &dyn Progress,
) -> Result<BuildSummary, LibraryError> {
    let index_path = dir.join("index.sqlite");
    let index = IndexWriter::start(&index_path)?;
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
    let file_numbers: HashMap<String, u64> =
        plan.iter().enumerate().map(|(i, p)| (p.file.display.clone(), i as u64)).collect();
    let sizes: HashMap<String, u64> = plan.iter().map(|p| (p.file.display.clone(), p.bytes)).collect();
    progress.start(plan.len() as u64, plan.iter().map(|p| p.bytes).sum());
    progress.stage("reading");
    let mut sink = LibrarySink {
        index: &index,
        shards: ShardWriter::new(&dir.join("canonical"), opts.shard_bytes, opts.threads)?,
        source: &registry.sources[0],
        file_numbers: &file_numbers,
        ordinal: 0,
        ids: HashMap::new(),
        error: None,
        strict: opts.strict,
        strict_failure: None,
        progress,
        sizes: &sizes,
        formats_seen: BTreeMap::new(),
    };
    let mut reports: Vec<(usize, FileReport)> = Vec::new();
    let mut by_source: Vec<Vec<InputFile>> = vec![Vec::new(); registry.sources.len()];
    for p in plan {
        by_source[p.source].push(p.file);
    }
    for (i, files) in by_source.into_iter().enumerate() {
        if files.is_empty() || sink.should_stop() {
            continue;
        }
        let source = &registry.sources[i];
        sink.source = source;
        let format =
            if source.source.format == "auto" { opts.format.clone() } else { Some(source.source.format.clone()) };
        let read_opts = Options {
            format,
            canonical: true,
            records: false,
            outcomes: outcomes.clone(),
            analyze: Some(analyzer(source, &opts.split)),
            max_record_bytes: opts.max_record_bytes,
        };
        let got = trajkit_formats::read_inputs(files, &read_opts, &mut sink)
            .map_err(|e| LibraryError::Invalid { path: PathBuf::from(&source.source.name), message: e.to_string() })?;
        reports.extend(got.into_iter().map(|r| (i, r)));
    }
    let LibrarySink { shards, error, strict_failure, ordinal, .. } = sink;
    let shard_count = shards.finish()?;
    let conn = index.finish()?;
    if let Some(e) = error {
        return Err(e);
    }
    if progress.cancelled() {
        return Err(LibraryError::Cancelled);
    }
    let records: u64 = reports.iter().map(|(_, r)| r.records).sum();
    let rejected: u64 = reports.iter().map(|(_, r)| r.rejected).sum();
    let mut summary = BuildSummary {
        files: reports.len() as u64,
        records,
        trajectories: ordinal,
        rejected,
        unreadable: reports.iter().filter(|(_, r)| r.error.is_some()).count() as u64,
        shards: shard_count,
        warnings,
        strict_failure,
    };
    if summary.strict_failure.is_some() {
        return Ok(summary);
    }
    progress.stage("indexing");
    crate::index::finalize(&conn, &index_path)?;
    progress.stage("evaluation rows");
    rows_out::write_rows(&conn, &index_path, &dir.join(crate::read::ROWS_PATH))?;
    progress.stage("statistics");
    let stats = stats::compute(&conn, &index_path)?;
    layout::write_json(&dir.join("evaluation/summary.json"), &stats)?;
    layout::write_json(&dir.join("evaluation/model_imitation.json"), &model_imitation())?;
    progress.stage("coverage");
    layout::write_json(&dir.join("coverage.json"), &coverage::coverage(registry, &reports, &conn, &index_path)?)?;
    drop(conn);
    layout::write_json(&dir.join("build.json"), &build_info(opts, registry, &summary))?;
    summary.warnings.sort();
    Ok(summary)
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

/// The row of a trajectory: identity, provenance and every field computed from the
/// record alone. Fields that need all rows (duplicate group size, task rank, protected
/// splits, training eligibility) are completed in the index.
fn make_row(
    t: &Trajectory,
    id: String,
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
    let interaction = trajkit_model::interaction_digest(t).unwrap_or_else(|_| t.content_digest.clone());
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
fn step_rows(t: &Trajectory) -> (Vec<StepRow>, Vec<CallRow>) {
    let answered: HashSet<&str> =
        t.steps.iter().flat_map(|s| s.tool_results.iter().filter_map(|r| r.call_id.as_deref())).collect();
    let mut steps = Vec::with_capacity(t.steps.len());
    let mut calls = Vec::new();
    for (i, s) in t.steps.iter().enumerate() {
        steps.push(StepRow {
            role: s.role.as_str(),
            authorship: if s.authorship == Authorship::Unknown { "unknown" } else { "declared" },
            copied_context: s.copied_context,
            subagent: s.subagent,
            model: s.model.clone(),
            timestamp: s.timestamp.clone(),
            tool_calls: s.tool_calls.len() as u32,
            tool_results: s.tool_results.len() as u32,
            content_bytes: content_bytes(s.content.as_ref()),
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

/// Bytes of text in a step's content (strings, and `text` of content parts).
fn content_bytes(content: Option<&serde_json::Value>) -> u64 {
    match content {
        Some(serde_json::Value::String(s)) => s.len() as u64,
        Some(serde_json::Value::Array(parts)) => parts
            .iter()
            .map(|p| match p {
                serde_json::Value::String(s) => s.len() as u64,
                serde_json::Value::Object(o) => o.get("text").and_then(|t| t.as_str()).map_or(0, |t| t.len() as u64),
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}
