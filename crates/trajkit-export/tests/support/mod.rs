//! Test support: assembles a library directory in the documented layout (`build.json` of
//! kind `trajkit-library`, `canonical/part-00000.jsonl.zst`, `evaluation/per_trajectory.jsonl.gz`)
//! from canonical records read from the real fixtures, with row values each test sets.
//! `trajkit build` will replace this: keep every library-building step here.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

use trajkit_formats::{discover, read_inputs, InputFile, Options, Rejection, Sink};
use trajkit_library::Row;
use trajkit_model::{Role, Trajectory};

/// A path below `tests/fixtures/real/`.
pub fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

#[derive(Default)]
struct Collect(Vec<Trajectory>, Vec<String>);

impl Sink for Collect {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        self.0.extend(t.cloned());
    }
    fn rejection(&mut self, r: &Rejection) {
        let first = r.problems.first().map(|p| format!("{} {} {}", p.json_path, p.reason.as_str(), p.message));
        self.1.push(format!("{}: {}", r.location(), first.unwrap_or_default()));
    }
}

/// Canonical records of the given fixture paths (rejections are ignored: the fixtures'
/// own tests pin them).
pub fn records(rels: &[&str]) -> Vec<Trajectory> {
    let paths: Vec<PathBuf> = rels.iter().map(|r| real(r)).collect();
    let (files, errors) = discover(&paths);
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = Collect::default();
    read_inputs(files, &Options { records: true, ..Options::default() }, &mut c).expect("read fixtures");
    c.0
}

/// The row values a test chooses.
#[derive(Clone, Debug)]
pub struct Spec {
    pub source: String,
    pub split: &'static str,
    pub status: &'static str,
    pub training_eligible: bool,
    pub quality_tier: u8,
    pub license: Option<String>,
    pub family: Option<String>,
}

impl Spec {
    pub fn new(source: &str, split: &'static str, status: &'static str) -> Spec {
        Spec {
            source: source.into(),
            split,
            status,
            training_eligible: true,
            quality_tier: 3,
            license: Some("Apache-2.0".into()),
            family: Some("terminal".into()),
        }
    }
    pub fn eligible(mut self, yes: bool) -> Spec {
        self.training_eligible = yes;
        self
    }
    pub fn tier(mut self, t: u8) -> Spec {
        self.quality_tier = t;
        self
    }
    pub fn family(mut self, f: &str) -> Spec {
        self.family = Some(f.into());
        self
    }
}

fn row(t: &Trajectory, spec: &Spec, shard_line: u64) -> Row {
    let live = t.steps.iter().filter(|s| !s.copied_context);
    let decisions = live.clone().filter(|s| s.role == Role::Assistant).count() as u64;
    let tool_calls = live.clone().map(|s| s.tool_calls.len() as u64).sum();
    let mut gaps = std::collections::BTreeMap::new();
    for g in &t.gaps {
        *gaps.entry(g.kind.as_str().to_string()).or_insert(0) += 1;
    }
    Row {
        id: t.id.clone(),
        source: spec.source.clone(),
        format: t.provenance.format.clone(),
        path: t.provenance.path.clone(),
        line: t.provenance.line,
        document_index: t.provenance.document_index,
        shard: "canonical/part-00000.jsonl.zst".into(),
        shard_line,
        task_key: t.task.key.clone(),
        split_key: t.task.key.clone(),
        task_id: t.task.id.clone(),
        environment: t.task.environment.clone(),
        model: t.agent.model.clone(),
        scaffold: t.agent.name.clone(),
        family: spec.family.clone(),
        license: spec.license.clone(),
        role: "training".into(),
        status: spec.status.into(),
        reward: t.outcome.reward,
        outcome_known: spec.status != "unknown",
        verification: "source_reported".into(),
        structural_valid: true,
        structural_problems: Vec::new(),
        action_observation_completeness: None,
        decisions,
        steps: live.count() as u64,
        tool_calls,
        subagents: t.subagents.len() as u64,
        gaps,
        complete: true,
        sft_eligible: true,
        training_eligible: spec.training_eligible,
        quality_tier: spec.quality_tier,
        task_rank: 1,
        duplicate_group: format!("dup-{}", &t.content_digest[..16.min(t.content_digest.len())]),
        duplicate_group_size: 1,
        split: spec.split.into(),
        content_digest: t.content_digest.clone(),
        prompt_tokens: t.metrics.as_ref().and_then(|m| m.prompt_tokens),
        completion_tokens: t.metrics.as_ref().and_then(|m| m.completion_tokens),
        cost_usd: t.metrics.as_ref().and_then(|m| m.cost_usd),
        environment_version: None,
        interaction_digest: t.content_digest.clone(),
        duplicate_outcomes_disagree: false,
        duration_seconds: None,
        cached_tokens: t.metrics.as_ref().and_then(|m| m.cached_tokens),
        ..Row::default()
    }
}

/// Writes a library holding `items` (in order) under `dir`; returns `dir`.
pub fn library(dir: &Path, items: &[(Trajectory, Spec)]) -> PathBuf {
    std::fs::create_dir_all(dir.join("canonical")).expect("mkdir");
    std::fs::create_dir_all(dir.join("evaluation")).expect("mkdir");
    std::fs::write(dir.join("build.json"), br#"{"kind":"trajkit-library","note":"assembled by trajkit-export tests"}"#)
        .expect("build.json");
    let shard = std::fs::File::create(dir.join("canonical/part-00000.jsonl.zst")).expect("shard");
    let mut z = zstd::stream::write::Encoder::new(shard, 1).expect("zstd");
    let rows = std::fs::File::create(dir.join("evaluation/per_trajectory.jsonl.gz")).expect("rows");
    let mut g = flate2::write::GzEncoder::new(rows, flate2::Compression::fast());
    for (i, (t, spec)) in items.iter().enumerate() {
        let mut line = Vec::new();
        trajkit_model::canonical::write_canonical(t, &mut line).expect("canonical");
        line.push(b'\n');
        z.write_all(&line).expect("write");
        serde_json::to_writer(&mut g, &row(t, spec, i as u64 + 1)).expect("row");
        g.write_all(b"\n").expect("write");
    }
    z.finish().expect("zstd");
    g.finish().expect("gz");
    dir.to_path_buf()
}

/// The one record of a fixture file.
pub fn one(rel: &str) -> Trajectory {
    let mut v = records(&[rel]);
    assert_eq!(v.len(), 1, "{rel}");
    v.remove(0)
}

/// Everything a read of `paths` produced: records and the locations of rejected records.
pub fn read_paths(paths: &[PathBuf]) -> (Vec<Trajectory>, Vec<String>) {
    let (files, errors) = discover(paths);
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = Collect::default();
    read_inputs(files, &Options { records: true, ..Options::default() }, &mut c).expect("read");
    (c.0, c.1)
}

/// Like `read_paths`, with a forced reader (`--format`).
pub fn read_paths_as(paths: &[PathBuf], format: Option<&str>) -> (Vec<Trajectory>, Vec<String>) {
    let (files, errors) = discover(paths);
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = Collect::default();
    let opts = Options { records: true, format: format.map(String::from), ..Options::default() };
    read_inputs(files, &opts, &mut c).expect("read");
    (c.0, c.1)
}
