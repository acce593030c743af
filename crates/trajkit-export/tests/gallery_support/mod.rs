//! Test support for the gallery: a library directory in the documented layout
//! (`build.json`, `canonical/part-00000.jsonl.zst`, `evaluation/per_trajectory.jsonl.gz`)
//! assembled from canonical records of the real fixtures, with the row values (source,
//! status, split) set by the test. A stand-in until `trajkit build` exists; then the tests
//! build their library with it. Used by crates/trajkit/tests/gallery_cli.rs too (`#[path]`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use trajkit_formats::{discover, read_inputs, InputFile, Options, Sink};
use trajkit_library::{Library, Row};
use trajkit_model::{Role, Trajectory};

/// Shard of every record of a test library.
pub const SHARD: &str = "canonical/part-00000.jsonl.zst";

/// The project's copy of the real fixture `rel` (below tests/fixtures/real).
pub fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

struct Collect(Vec<Trajectory>);

impl Sink for Collect {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        self.0.extend(t.cloned());
    }
}

/// The canonical records of the real fixtures `rels`, in input order (readers of trajkit-formats).
pub fn read_real(rels: &[&str]) -> Vec<Trajectory> {
    let paths: Vec<PathBuf> = rels.iter().map(|r| real(r)).collect();
    let (files, errors) = discover(&paths);
    assert!(errors.is_empty(), "{errors:?}");
    let mut sink = Collect(Vec::new());
    read_inputs(files, &Options { records: true, ..Options::default() }, &mut sink).expect("read fixtures");
    sink.0
}

/// Steps that count (copied context and interleaved subagent steps excluded, as `inspect` counts).
fn own_steps(t: &Trajectory) -> impl Iterator<Item = &trajkit_model::Step> {
    t.steps.iter().filter(|s| !s.copied_context && !s.subagent)
}

/// The row of `t` with the given source, status and split; every other field is taken
/// from the record (counts as `inspect` counts them) or a neutral value.
pub fn row(t: &Trajectory, source: &str, status: &str, split: &str) -> Row {
    let mut gaps: BTreeMap<String, u64> = BTreeMap::new();
    for g in &t.gaps {
        *gaps.entry(g.kind.as_str().to_string()).or_default() += 1;
    }
    let verification = serde_json::to_value(t.outcome.verification).expect("enum");
    let metrics = t.metrics.as_ref();
    Row {
        id: t.id.clone(),
        source: source.into(),
        format: t.provenance.format.clone(),
        path: t.provenance.path.clone(),
        line: t.provenance.line,
        document_index: t.provenance.document_index,
        shard: SHARD.into(),
        shard_line: 0,
        task_key: t.task.key.clone(),
        split_key: t.task.key.clone(),
        task_id: t.task.id.clone(),
        environment: t.task.environment.clone(),
        model: t.agent.model.clone(),
        scaffold: t.agent.name.clone(),
        family: None,
        license: None,
        role: "training".into(),
        status: status.into(),
        reward: t.outcome.reward,
        outcome_known: status != "unknown",
        verification: verification.as_str().unwrap_or_default().into(),
        structural_valid: true,
        structural_problems: vec![],
        action_observation_completeness: None,
        decisions: own_steps(t).filter(|s| s.role == Role::Assistant).count() as u64,
        steps: own_steps(t).count() as u64,
        tool_calls: own_steps(t).map(|s| s.tool_calls.len() as u64).sum(),
        subagents: t.subagents.len() as u64,
        complete: gaps.is_empty(),
        gaps,
        sft_eligible: true,
        training_eligible: true,
        quality_tier: 2,
        task_rank: 1,
        duplicate_group: format!("dup-{}", &t.content_digest[..16.min(t.content_digest.len())]),
        duplicate_group_size: 1,
        split: split.into(),
        content_digest: t.content_digest.clone(),
        prompt_tokens: metrics.and_then(|m| m.prompt_tokens),
        completion_tokens: metrics.and_then(|m| m.completion_tokens),
        cost_usd: metrics.and_then(|m| m.cost_usd),
        environment_version: None,
        interaction_digest: t.content_digest.clone(),
        duplicate_outcomes_disagree: false,
        duration_seconds: None,
        cached_tokens: metrics.and_then(|m| m.cached_tokens),
        ..Row::default()
    }
}

/// Writes a library at `dir`: one shard with the records in order, the rows in the same
/// order with `shard`/`shard_line` set, and `build.json`; opens it.
pub fn write_library(dir: &Path, entries: &[(Row, Trajectory)]) -> Library {
    std::fs::create_dir_all(dir.join("canonical")).expect("mkdir");
    std::fs::create_dir_all(dir.join("evaluation")).expect("mkdir");
    std::fs::write(dir.join("build.json"), br#"{"kind":"trajkit-library"}"#).expect("build.json");
    let shard = std::fs::File::create(dir.join(SHARD)).expect("shard");
    let mut records = zstd::stream::write::Encoder::new(shard, 1).expect("zstd");
    let table = std::fs::File::create(dir.join(trajkit_library::ROWS_PATH)).expect("rows");
    let mut rows = flate2::write::GzEncoder::new(table, flate2::Compression::fast());
    for (i, (row, t)) in entries.iter().enumerate() {
        let mut row = row.clone();
        row.shard = SHARD.into();
        row.shard_line = i as u64 + 1;
        serde_json::to_writer(&mut records, t).expect("record");
        records.write_all(b"\n").expect("record");
        serde_json::to_writer(&mut rows, &row).expect("row");
        rows.write_all(b"\n").expect("row");
    }
    records.finish().expect("zstd");
    rows.finish().expect("gzip");
    Library::open(dir).expect("open the test library")
}

/// Status of a Gym rollout under the success rule `reward >= 1` (as a registry would set it).
pub fn by_reward(t: &Trajectory) -> &'static str {
    match t.outcome.reward {
        Some(r) if r >= 1.0 => "success",
        Some(_) => "failure",
        None => "unknown",
    }
}

/// The test library of five sources from the real fixtures (18 trajectories):
/// - `harbor-atif` (split test): Claude Code pass → success, fail → failure (as the
///   fixtures' NOTICE describes the runs), the context-summarization run (3 subagents) and
///   the timeout run → unknown;
/// - `nemo-gym-aviary` (train): 5 rollouts, status by reward (1 success, 4 failures);
/// - `nemo-gym-tau2` (validation): 5 rollouts, status by reward (5 successes);
/// - `claude-code` (train): two sessions with subagents → unknown;
/// - `swe-agent` (train): two `.traj` files → unknown.
pub fn standard_entries() -> Vec<(Row, Trajectory)> {
    let mut entries = Vec::new();
    let atif = [
        ("atif/claude-code-pass-v1.7.trajectory.json", "success"),
        ("atif/claude-code-fail-agent-tool-v1.7.trajectory.json", "failure"),
        ("atif/terminus2-context-summarization-v1.7", "unknown"),
        ("atif/terminus2-timeout-v1.6.trajectory.json", "unknown"),
    ];
    for (rel, status) in atif {
        for t in read_real(&[rel]) {
            entries.push((row(&t, "harbor-atif", status, "test"), t));
        }
    }
    for (rel, source, split) in [
        ("gym/aviary__example_rollouts.jsonl", "nemo-gym-aviary", "train"),
        ("gym/tau2__example_rollouts.jsonl", "nemo-gym-tau2", "validation"),
    ] {
        for t in read_real(&[rel]) {
            entries.push((row(&t, source, by_reward(&t), split), t));
        }
    }
    for t in read_real(&[
        "claude_code/codemie/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        "claude_code/codemie/incremental-subagents",
    ]) {
        entries.push((row(&t, "claude-code", "unknown", "train"), t));
    }
    for t in read_real(&["swe_agent_traj/function_calling_simple.traj", "swe_agent_traj/pydicom__pydicom-1458.traj"]) {
        entries.push((row(&t, "swe-agent", "unknown", "train"), t));
    }
    entries
}

/// Markup a hostile record carries: each would run script, load something, break out of
/// an attribute, an element, the style sheet or an SVG label if it were not escaped.
pub const HOSTILE: [&str; 7] = [
    "<script>document.title='pwned'</script>",
    "\"><img src=x onerror=alert(1)>",
    "'><svg onload=alert(2)>",
    "</details></li></ol></article><h1 id=injected>injected</h1>",
    "<a href=\"javascript:alert(document.cookie)\">click me</a> javascript:alert(3)",
    "</style><style>body{display:none}</style>",
    "</text></svg><iframe src=\"https://example.com/\"></iframe>",
];

/// All hostile strings in one text.
pub fn hostile_text() -> String {
    HOSTILE.join(" | ")
}

/// A real-looking hostile record (synthetic: no published file carries markup meant to
/// break a viewer): a real tau2 Gym rollout whose task, agent, provenance, a user message,
/// a reasoning text, a tool call and its result, and the row's source, model, split and
/// gap names are replaced by [`HOSTILE`] markup. Its source is `hostile <script>`.
pub fn hostile_entry() -> (Row, Trajectory) {
    let mut t = read_real(&["gym/tau2__example_rollouts.jsonl"]).remove(0);
    let h = hostile_text();
    t.id = "hostile-1".into();
    t.task.id = Some(format!("task {}", HOSTILE[0]));
    t.task.instruction = Some(h.clone());
    t.task.environment = Some(HOSTILE[2].into());
    t.agent.name = Some(HOSTILE[1].into());
    t.agent.model = Some(HOSTILE[2].into());
    t.provenance.path = format!("runs/{}.jsonl", HOSTILE[1]);
    let user = t.steps.iter_mut().find(|s| s.role == Role::User).expect("a user step");
    user.content = Some(serde_json::Value::String(h.clone()).into());
    let call_step = t.steps.iter().position(|s| !s.tool_calls.is_empty()).expect("a tool call");
    let old_id = t.steps[call_step].tool_calls[0].id.clone();
    let new_id = format!("call{}", HOSTILE[1]);
    {
        let step = &mut t.steps[call_step];
        step.reasoning = Some(HOSTILE[3].into());
        step.tool_calls[0].name = HOSTILE[4].into();
        step.tool_calls[0].id = Some(new_id.clone());
        step.tool_calls[0].arguments = serde_json::json!({ HOSTILE[5]: HOSTILE[6], "all": h }).into();
    }
    for step in &mut t.steps {
        for r in &mut step.tool_results {
            if r.call_id.is_some() && r.call_id == old_id {
                r.call_id = Some(new_id.clone());
                r.content = Some(serde_json::Value::String(h.clone()).into());
            }
        }
    }
    let mut r = row(&t, &format!("hostile {}", HOSTILE[0]), "failure", HOSTILE[5]);
    r.model = Some(HOSTILE[6].into());
    r.verification = HOSTILE[1].into();
    r.gaps.insert(HOSTILE[3].into(), 1);
    (r, t)
}
