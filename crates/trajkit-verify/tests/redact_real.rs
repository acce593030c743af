//! Redaction on real published trajectories: secrets planted into real fixture files (the
//! secrets are SYNTHETIC, see `common`) are replaced by consistent placeholders and the
//! redacted records keep every figure (steps, tool calls, gaps, linkage, outcome); and on
//! the untouched fixture tree, what the detectors replace (over-redaction in real data).

mod common;

use std::path::{Path, PathBuf};

use trajkit_formats::report::TrajectoryCounts;
use trajkit_formats::{discover, read_inputs, InputFile, Options, Sink};
use trajkit_model::Trajectory;
use trajkit_verify::redact::{RedactionReport, Redactor, Rules};

fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

struct Collect(Vec<Trajectory>);

impl Sink for Collect {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        self.0.extend(t.cloned());
    }
}

/// Every accepted record of `paths`, read as `trajkit convert` reads them.
fn read(paths: &[PathBuf]) -> Vec<Trajectory> {
    let (files, errors) = discover(paths);
    assert!(errors.is_empty(), "{errors:?}");
    let mut sink = Collect(Vec::new());
    let opts = Options { records: true, ..Options::default() };
    read_inputs(files, &opts, &mut sink).expect("read");
    sink.0
}

/// Inserts `inserts[k]` after the k-th occurrence of `needle` on every line (text inside
/// JSON strings: the needle has spaces, keys do not). Returns the text and the plant count.
fn plant(text: &str, needle: &str, inserts: &[String]) -> (String, usize) {
    let mut out = String::new();
    let mut planted = 0;
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        for insert in inserts {
            let Some(i) = rest.find(needle) else { break };
            out.push_str(&rest[..i + needle.len()]);
            out.push_str(insert);
            out.push(' ');
            rest = &rest[i + needle.len()..];
            planted += 1;
        }
        out.push_str(rest);
    }
    (out, planted)
}

/// The record with the fields that depend on the source bytes blanked: id, provenance and
/// content digest (and the task key, which may hash the instruction the secret sat in).
fn comparable(t: &Trajectory) -> serde_json::Value {
    let mut v = serde_json::to_value(t).expect("json");
    for key in ["id", "provenance", "content_digest"] {
        v[key] = serde_json::Value::Null;
    }
    v["task"]["key"] = serde_json::Value::Null;
    v
}

/// The JSON path of the first difference between two values, with both sides.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let null = serde_json::Value::Null;
                first_difference(x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null), &format!("{at}.{k}"))
            })
        }
        (Array(x), Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]")))
        }
        _ if a == b => None,
        _ => Some(format!("{at}: {a} vs {b}")),
    }
}

fn linkage(t: &Trajectory) -> Vec<(Option<String>, Vec<Option<String>>)> {
    t.steps
        .iter()
        .map(|s| {
            (
                s.tool_calls.first().and_then(|c| c.id.clone()),
                s.tool_results.iter().map(|r| r.call_id.clone()).collect(),
            )
        })
        .collect()
}

const FILES: &[&str] = &[
    "gym/tau2__example_rollouts.jsonl",
    "atif/claude-code-pass-v1.7.trajectory.json",
    "claude_code/spotter/tool_heavy.jsonl",
    "swe_agent_traj/function_calling_simple.traj",
    "openhands_events/basic.json",
];

#[test]
fn planted_secrets_are_replaced_and_every_figure_is_kept() {
    let openai = common::secret("openai_key");
    let github = common::secret("github_classic");
    let password = common::secret("password");
    let jwt = common::secret("jwt");
    let secrets =
        [openai.clone(), github.clone(), format!("password={password}"), openai.clone(), format!("Bearer {jwt}")];
    let placeholders = [
        "[REDACTED:openai_key:1]",
        "[REDACTED:github_token:1]",
        "password=[REDACTED:password:1]",
        "[REDACTED:openai_key:1]",
        "Bearer [REDACTED:jwt:1]",
    ]
    .map(String::from);
    let dir = tempfile::tempdir().unwrap();
    let mut redactor = Redactor::new(Rules::builtin());
    let mut report = RedactionReport::default();
    let mut figures = Vec::new();
    for (i, rel) in FILES.iter().enumerate() {
        let original_path = real(rel);
        let name = original_path.file_name().unwrap();
        let text = std::fs::read_to_string(&original_path).unwrap();
        let (planted_text, n) = plant(&text, " the ", &secrets);
        let (expected_text, m) = plant(&text, " the ", &placeholders);
        assert_eq!(n, m);
        let planted_path = dir.path().join(format!("planted{i}")).join(name);
        let expected_path = dir.path().join(format!("expected{i}")).join(name);
        for (p, t) in [(&planted_path, &planted_text), (&expected_path, &expected_text)] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        }
        let original = read(std::slice::from_ref(&original_path));
        let planted = read(&[planted_path]);
        let expected = read(&[expected_path]);
        assert_eq!((planted.len(), expected.len()), (original.len(), original.len()), "{rel}");
        let before = report.replacements;
        for ((mut t, want), orig) in planted.into_iter().zip(&expected).zip(&original) {
            redactor.redact_trajectory(&mut t, &mut report).unwrap();
            let text = serde_json::to_string(&t).unwrap();
            for s in [&openai, &github, &password, &jwt] {
                assert!(!text.contains(s.as_str()), "{rel}: a secret survived");
            }
            assert_eq!(first_difference(&comparable(&t), &comparable(want), "$"), None, "{rel}");
            assert_eq!(TrajectoryCounts::of(&t), TrajectoryCounts::of(orig), "{rel}");
            assert_eq!(t.outcome, orig.outcome, "{rel}");
            assert_eq!(linkage(&t), linkage(orig), "{rel}");
            let mut resealed = t.clone();
            trajkit_model::seal(&mut resealed).unwrap();
            assert_eq!(resealed.content_digest, t.content_digest, "{rel}: digest not resealed");
        }
        // (file, records, secrets planted in the source, replacements in the canonical records):
        // a reader may carry a source text twice (ATIF) or drop a display copy of it
        // (SWE-agent `trajectory[]` next to `history`, OpenHands event `message`).
        figures.push((*rel, original.len(), n, report.replacements - before));
    }
    assert_eq!(
        figures,
        [
            ("gym/tau2__example_rollouts.jsonl", 5, 25, 25),
            ("atif/claude-code-pass-v1.7.trajectory.json", 1, 46, 50),
            ("claude_code/spotter/tool_heavy.jsonl", 1, 17, 17),
            ("swe_agent_traj/function_calling_simple.traj", 1, 42, 30),
            ("openhands_events/basic.json", 1, 24, 19),
        ]
    );
    // One placeholder per distinct secret across all five files.
    let kinds: Vec<(&str, u64, u64)> =
        report.kinds.iter().map(|(k, t)| (k.as_str(), t.replacements, t.distinct)).collect();
    assert_eq!(kinds, [("github_token", 36, 1), ("jwt", 17, 1), ("openai_key", 65, 1), ("password", 23, 1)]);
    let json = serde_json::to_string(&report).unwrap();
    for s in [&openai, &github, &password, &jwt] {
        assert!(!json.contains(s.as_str()), "the report names a secret");
    }
}

#[test]
fn on_the_untouched_real_fixtures_only_displayed_passwords_are_replaced() {
    let records = read(&[real("")]);
    let mut redactor = Redactor::new(Rules::builtin());
    let mut report = RedactionReport::default();
    for mut t in records {
        redactor.redact_trajectory(&mut t, &mut report).unwrap();
    }
    // Over the whole real tree (514 records when this was written) the detectors fire only
    // in the Glaive function-calling demo, whose `generate_password` tool returns passwords
    // that the assistant then shows, and a `create_user` call with a password: replaced by rule
    // (a value under a password key, "password: X" in text, and the user's earlier mention of
    // the same password, found by the second pass over the record); nothing else in real data.
    let files: std::collections::BTreeSet<&str> = report.findings.iter().map(|f| f.file.as_str()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files.iter().all(|f| f.ends_with("chat/llamafactory_glaive_toolcall_en_demo.json")));
    assert!(report.records >= 514, "{}", report.records);
    assert_eq!((report.records_redacted, report.replacements), (7, 14));
    let kinds: Vec<(&str, u64, u64)> =
        report.kinds.iter().map(|(k, t)| (k.as_str(), t.replacements, t.distinct)).collect();
    assert_eq!(kinds, [("password", 14, 5)]);
    let fields: Vec<&str> = report.findings.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(fields.iter().filter(|f| f.ends_with(".tool_results[0].content")).count(), 6);
    assert_eq!(fields.iter().filter(|f| f.ends_with(".arguments.password")).count(), 1);
    let mention = report.findings.iter().find(|f| f.field == "$.steps[2].content").expect("earlier mention");
    assert_eq!(mention.placeholders, ["[REDACTED:password:3]"]);
}

struct Ignore;

impl Sink for Ignore {
    fn trajectory(&mut self, _: &InputFile, _: Option<&Trajectory>, _: Option<&[u8]>) {}
}

/// The per-file figures `trajkit inspect --json` prints, without the path.
fn inspect(path: &Path) -> serde_json::Value {
    let (files, errors) = discover(&[path.to_path_buf()]);
    assert!(errors.is_empty(), "{errors:?}");
    let opts =
        Options { format: None, canonical: false, records: false, outcomes: None, analyze: None, ..Options::default() };
    let reports = read_inputs(files, &opts, &mut Ignore).expect("read");
    let mut v = serde_json::to_value(&reports).expect("json");
    for r in v.as_array_mut().expect("array") {
        r["path"] = serde_json::Value::Null;
    }
    v
}

#[test]
fn format_preserving_redaction_changes_only_the_secret_bytes_of_real_files() {
    // The same plants as above, redacted in the files' own format (docs/redaction.md,
    // `--preserve-format`): the output is the planted file with exactly the secrets (and for
    // `password=`, the value) replaced, byte for byte, and reads with the same figures.
    let password = common::secret("password");
    let secrets = [
        common::secret("openai_key"),
        common::secret("github_classic"),
        format!("password={password}"),
        common::secret("openai_key"),
        format!("Bearer {}", common::secret("jwt")),
    ];
    let placeholders = [
        "[REDACTED:openai_key:1]",
        "[REDACTED:github_token:1]",
        "password=[REDACTED:password:1]",
        "[REDACTED:openai_key:1]",
        "Bearer [REDACTED:jwt:1]",
    ]
    .map(String::from);
    let dir = tempfile::tempdir().unwrap();
    let mut redactor = Redactor::new(Rules::builtin());
    let mut report = RedactionReport::default();
    let mut counts = Vec::new();
    for rel in FILES {
        let original = real(rel);
        let text = std::fs::read_to_string(&original).unwrap();
        let (planted, n) = plant(&text, " the ", &secrets);
        let (expected, _) = plant(&text, " the ", &placeholders);
        let mut out = Vec::new();
        let replaced = redactor.redact_json_text(rel, planted.as_bytes(), &mut out, &mut report).unwrap();
        assert!(out == expected.as_bytes(), "{rel}: bytes other than the secrets changed");
        let redacted = dir.path().join(original.file_name().unwrap());
        std::fs::write(&redacted, &out).unwrap();
        assert_eq!(inspect(&redacted), inspect(&original), "{rel}: figures changed");
        counts.push((*rel, n, replaced));
    }
    // Every plant replaced exactly once, in the source's own bytes.
    assert_eq!(
        counts,
        [
            ("gym/tau2__example_rollouts.jsonl", 25, 25),
            ("atif/claude-code-pass-v1.7.trajectory.json", 46, 46),
            ("claude_code/spotter/tool_heavy.jsonl", 17, 17),
            ("swe_agent_traj/function_calling_simple.traj", 42, 42),
            ("openhands_events/basic.json", 24, 24),
        ]
    );
    assert_eq!((report.records, report.records_redacted, report.replacements), (5, 5, 154));
    let first = &report.findings[0];
    assert_eq!(
        (first.file.as_str(), first.line, first.field.as_str()),
        (FILES[0], Some(1), "$.responses_create_params.input[0].content")
    );
}
