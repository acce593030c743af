//! The publication commands' contract: manifest, redact, ledger, diagnose, schedule, and
//! `validate --complete` (exit codes, what is printed, what is written). Real fixtures
//! where a published file shows the case; synthetic trees where the case is tampering.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn trajkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trajkit")).args(args).output().expect("run trajkit")
}

fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A copy of a real fixture directory in a temporary directory.
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

#[test]
fn manifest_create_then_verify_on_a_real_tree() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&real("claude_code"), dir.path());
    let out = trajkit(&["manifest", "create", s(dir.path())]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let digest = text(&out.stdout).trim().to_string();
    assert_eq!(digest.len(), 64);
    assert!(text(&out.stderr).contains(": 11 files, 3610283 bytes"), "{}", text(&out.stderr));
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["manifest_sha256"], digest.as_str());
    assert_eq!(m["excluded"], serde_json::json!(["manifest.json"]));

    let ok = trajkit(&["manifest", "verify", s(dir.path()), "--digest", &digest]);
    assert_eq!(ok.status.code(), Some(0), "{}{}", text(&ok.stdout), text(&ok.stderr));
    assert_eq!(text(&ok.stdout), "");
    assert!(text(&ok.stderr).contains("11 listed, 11 hashed (3610283 bytes): 0 missing, 0 extra, 0 changed, digest ok"));

    std::fs::remove_file(dir.path().join("spotter/short.jsonl")).unwrap();
    std::fs::write(dir.path().join("spotter/extra.jsonl"), b"{}\n").unwrap();
    std::fs::write(dir.path().join("NOTICE.md"), b"edited").unwrap();
    let bad = trajkit(&["manifest", "verify", s(dir.path())]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(
        text(&bad.stdout),
        "missing  spotter/short.jsonl\nextra    spotter/extra.jsonl\nchanged  NOTICE.md (bytes 3536 -> 6)\n"
    );
    let json = trajkit(&["manifest", "verify", s(dir.path()), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["clean"], false);
    assert_eq!(v["missing"], serde_json::json!(["spotter/short.jsonl"]));
    assert_eq!(v["changed"][0]["expected_bytes"], 3536);
}

#[test]
fn manifest_verify_exit_codes_for_a_wrong_digest_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), b"a").unwrap();
    let out = tempfile::tempdir().unwrap();
    let m = out.path().join("m.json");
    assert_eq!(trajkit(&["manifest", "create", s(dir.path()), "-o", s(&m)]).status.code(), Some(0));
    let wrong = "0".repeat(64);
    let r = trajkit(&["manifest", "verify", s(dir.path()), "--manifest", s(&m), "--digest", &wrong]);
    assert_eq!(r.status.code(), Some(1));
    assert!(text(&r.stdout).contains(&format!("expected {wrong}")), "{}", text(&r.stdout));
    // No manifest in the tree, a bad digest argument, a missing directory: errors.
    assert_eq!(trajkit(&["manifest", "verify", s(dir.path())]).status.code(), Some(2));
    assert_eq!(trajkit(&["manifest", "verify", s(dir.path()), "--digest", "xyz"]).status.code(), Some(2));
    let gone = trajkit(&["manifest", "create", "/nonexistent/tree"]);
    assert_eq!(gone.status.code(), Some(2));
    assert!(text(&gone.stderr).contains("/nonexistent/tree: not a directory"), "{}", text(&gone.stderr));
}

#[test]
fn redact_a_real_file_and_its_canonical_form_alike() {
    let dir = tempfile::tempdir().unwrap();
    let glaive = real("chat/llamafactory_glaive_toolcall_en_demo.json");
    let out = dir.path().join("out.jsonl");
    let report = dir.path().join("report.json");
    let r = trajkit(&["redact", s(&glaive), "-o", s(&out), "--report", s(&report)]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
    assert!(text(&r.stderr).contains("password: 14 replaced (5 distinct)"), "{}", text(&r.stderr));
    let redacted = std::fs::read_to_string(&out).unwrap();
    assert_eq!(redacted.lines().count(), 265);
    // The passwords the fixture's generate_password tool returned are gone.
    for pw in ["aB3#fG7!kL9@", "a9B7$#fG3&Z1", "A1b2C3d4E5f6", "password123"] {
        assert!(!redacted.contains(pw), "{pw} survived");
    }
    assert_eq!(redacted.matches("[REDACTED:password:2]").count(), 6);
    let rep: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!((rep["records"].as_u64(), rep["records_redacted"].as_u64()), (Some(265), Some(7)));
    assert_eq!(rep["findings"][0]["field"], "$.steps[4].tool_results[0].content");
    assert_eq!(rep["findings"][0]["document_index"], 36);
    assert!(!text(&std::fs::read(&report).unwrap()).contains("aB3#fG7!kL9@"));

    // The same records, first converted to canonical form, redact to the same bytes.
    let canonical = dir.path().join("c.jsonl.zst");
    assert_eq!(trajkit(&["convert", s(&glaive), "-o", s(&canonical)]).status.code(), Some(0));
    let again = dir.path().join("again.jsonl");
    assert_eq!(trajkit(&["redact", s(&canonical), "-o", s(&again)]).status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), redacted);
}

#[test]
fn redact_literal_secrets_and_bad_rule_files() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("secrets.txt");
    // A word of the real Gym fixture stands in for a secret the user lists.
    std::fs::write(&secrets, "graphwalks\n").unwrap();
    let out = dir.path().join("out.jsonl");
    let input = real("gym/graphwalks__example_rollouts.jsonl");
    let r = trajkit(&["redact", s(&input), "-o", s(&out), "--secrets", s(&secrets)]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
    let redacted = std::fs::read_to_string(&out).unwrap();
    assert_eq!(redacted.lines().count(), 4);
    assert!(!redacted.contains("graphwalks"));
    assert!(redacted.contains("[REDACTED:literal:1]"));
    std::fs::write(&secrets, "ab\n").unwrap();
    let bad = trajkit(&["redact", s(&input), "-o", s(&out), "--secrets", s(&secrets)]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("secrets.txt: line 1: a secret must have at least 4 characters"));
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, "disable = [\"no_such\"]\n").unwrap();
    let bad = trajkit(&["redact", s(&input), "-o", s(&out), "--rules", s(&rules)]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("rules.toml: disable: \"no_such\" is not a built-in detector"));
}

#[test]
fn validate_complete_names_what_each_real_record_lacks() {
    let swe_gym = real("swe_gym_openhands/adp_swe-gym_sample_raw.json");
    let out = trajkit(&["validate", "--complete", s(&swe_gym)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 5);
    let first = stdout.lines().next().unwrap();
    assert!(
        first.ends_with(
            "adp_swe-gym_sample_raw.json#0: incomplete: swe-gym-576e799b844ab4a0: lacks tool_results (1 of 21 tool calls have no linked result), initial_state (no initial state digest), final_state (no final state digest), final_output (the last assistant step (step 40) has no text)"
        ),
        "{first}"
    );
    assert!(text(&out.stderr).contains(
        "complete: 0 of 5 trajectories; lacking: tool_results=5 initial_state=5 final_state=5 final_output=4"
    ));
    // Without --complete the same records are valid.
    assert_eq!(trajkit(&["validate", s(&swe_gym)]).status.code(), Some(0));
    let json = trajkit(&["validate", "--complete", "--json", s(&real("atif/claude-code-pass-v1.7.trajectory.json"))]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["document_index"], 0);
    let parts: Vec<&str> = v["lacks"].as_array().unwrap().iter().map(|l| l["part"].as_str().unwrap()).collect();
    assert_eq!(parts, ["initial_state", "final_state", "verifier_outcome"]);
}

const SEED: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

#[test]
fn schedule_summary_bytes_and_errors() {
    let args = ["schedule", "--seed", SEED, "--app", "gmail", "--app", "phone"];
    let summary =
        trajkit(&[&args[..], &["--arm-name", "A", "--arm-name", "B", "--arm-name", "C", "--summary"]].concat());
    assert_eq!(summary.status.code(), Some(0));
    assert_eq!(text(&summary.stdout), "32 96\n");
    let full = trajkit(&args);
    assert_eq!(full.status.code(), Some(0));
    // SHA-256 of the whole output; the Python reference in docs/schedule.md gives the same.
    let digest = trajkit_model::sha256_hex(&full.stdout);
    assert_eq!(digest, "64a3f2748c84f59937fb6f20e7e6a619f6cc6e17d1134b8fe2e9a64cfb858986");
    let v: serde_json::Value = serde_json::from_slice(&full.stdout).unwrap();
    assert_eq!(v["blocks"][0]["candidates"], serde_json::json!(["b00-A", "b00-B", "b00-C"]));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    assert_eq!(trajkit(&[&args[..], &["-o", s(&out)]].concat()).status.code(), Some(0));
    assert_eq!(std::fs::read(&out).unwrap(), full.stdout);
    let bad = trajkit(&["schedule", "--seed", "abc", "--app", "gmail"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("--seed: expected 64 hex digits (32 bytes), got \"abc\""));
    assert_eq!(trajkit(&["schedule", "--seed", SEED]).status.code(), Some(2));
}

fn example(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/publication").join(rel)
}

#[test]
fn ledger_validate_and_render_the_shipped_example() {
    let ok = trajkit(&["ledger", "validate", s(&example("ledger.jsonl"))]);
    assert_eq!(ok.status.code(), Some(0), "{}{}", text(&ok.stdout), text(&ok.stderr));
    assert!(
        text(&ok.stderr).contains("3 attempts (1 executed, 1 component_tested, 1 pre_execution_rejected), 0 findings")
    );
    // The example's manifest is itself clean.
    assert_eq!(trajkit(&["manifest", "verify", s(&example(""))]).status.code(), Some(0));
    let table = trajkit(&["ledger", "render", s(&example("ledger.jsonl"))]);
    assert_eq!(table.status.code(), Some(0));
    let out = text(&table.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7);
    assert!(lines[0].starts_with("| attempt | environment | approach | classification | run |"));
    assert!(lines[4].starts_with("| replay-public-trajectories | "));
    assert!(lines[4].contains("| `pre_execution_rejected` |"));
    assert_eq!(lines[6], "3 attempts: 1 executed, 1 component_tested, 1 pre_execution_rejected.");
}

#[test]
fn ledger_findings_name_line_field_and_code() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&example(""), dir.path());
    let ledger = dir.path().join("ledger.jsonl");
    std::fs::remove_file(dir.path().join("results/completeness.txt")).unwrap();
    std::fs::write(dir.path().join("results/schedule-gmail-phone.json"), b"{}").unwrap();
    let r = trajkit(&["ledger", "validate", s(&ledger)]);
    assert_eq!(r.status.code(), Some(1));
    let out = text(&r.stdout);
    let codes: Vec<&str> = out.lines().map(|l| l.split(": ").nth(2).unwrap_or("")).collect();
    assert_eq!(codes, ["location_changed", "location_missing"], "{out}");
    assert!(out.contains("ledger.jsonl:2: $.public_locations[0]: location_changed: \"results/schedule-gmail-phone.json\" has 2 bytes, the manifest lists 23821"));

    let text_in = std::fs::read_to_string(&ledger).unwrap().replace("\"executed\"", "\"done\"");
    std::fs::write(&ledger, text_in).unwrap();
    let r = trajkit(&["ledger", "render", s(&ledger)]);
    assert_eq!(r.status.code(), Some(1));
    assert_eq!(text(&r.stdout), "");
    assert!(text(&r.stderr).contains("ledger.jsonl:1: $.classification: invalid_classification: \"done\" is not one of executed, component_tested, pre_execution_rejected"));
    assert_eq!(trajkit(&["ledger", "validate", "/nonexistent/ledger.jsonl"]).status.code(), Some(2));
}

fn numeric(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/numeric").join(name)
}

#[test]
fn diagnose_locates_the_first_non_finite_value_and_sets_the_exit_status() {
    let out = trajkit(&["diagnose", s(&numeric("velocity_f8_v1.npy")), s(&numeric("history_python.json"))]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().map(|l| l.rsplit_once("numeric/").map_or(l, |(_, r)| r)).collect();
    assert_eq!(lines[0], "velocity_f8_v1.npy: <f8 (50, 3) count 150 finite 148 nan 1 +inf 1 -inf 0 min -2.516759710820513 max 2.2447566264860495 mean -0.1660098952826866");
    assert_eq!(lines[1], "velocity_f8_v1.npy: first non-finite: NaN at leading index 12, flat index 37, index (12, 1)");
    assert!(lines.contains(
        &"history_python.json: $.steps[*].u: first non-finite: NaN at leading index 7, flat index 14, index (7, 0)"
    ));
    assert!(text(&out.stderr).contains("2 files, 5 arrays: 3 with non-finite values, 0 files not readable"));

    let clean = trajkit(&["diagnose", s(&numeric("finite.json")), s(&numeric("counts_i8.npy"))]);
    assert_eq!(clean.status.code(), Some(0));

    let json = trajkit(&["diagnose", "--json", s(&numeric("simulation_stored.npz"))]);
    assert_eq!(json.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        v["arrays"][1]["first_non_finite"],
        serde_json::json!({"kind": "-Inf", "leading_index": 15, "flat_index": 15, "index": [15]})
    );

    let unsupported = trajkit(&["diagnose", s(&numeric("complex_c16.npy")), s(&numeric("finite.json"))]);
    assert_eq!(unsupported.status.code(), Some(2));
    assert!(text(&unsupported.stderr).contains("dtype \"<c16\" is not supported"));
    assert_eq!(trajkit(&["diagnose"]).status.code(), Some(2));
}

/// Issue 19 item 8 (limits made up for the test): the gate passes under a roomy cap, and
/// a failed gate appends its `pre_execution_rejected` attempt to the ledger once.
#[test]
fn gate_exit_status_and_the_ledger_line_of_a_failed_gate() {
    let dir = tempfile::tempdir().unwrap();
    let sched = dir.path().join("s.json");
    let args = ["schedule", "--seed", SEED, "--app", "gmail", "--app", "phone", "-o", s(&sched)];
    assert_eq!(trajkit(&args).status.code(), Some(0));
    let limits = dir.path().join("limits.toml");
    let body = |cap: &str| {
        let arm = |name: &str, provider: &str| {
            format!("[arms.{name}]\nprovider = \"{provider}\"\nrequests_per_candidate = 10\nmax_input_tokens = 8000\nmax_output_tokens = 1000\ninput_counted = true\n")
        };
        format!(
            "cycle_cap_usd = {cap}\n[providers.openai]\ninput_usd_per_mtok = 2.5\noutput_usd_per_mtok = 10\n[providers.anthropic]\ninput_usd_per_mtok = 3\noutput_usd_per_mtok = 15\n{}{}{}",
            arm("A", "openai"),
            arm("B", "openai"),
            arm("C", "anthropic")
        )
    };
    std::fs::write(&limits, body("50")).unwrap();
    let ok = trajkit(&["gate", s(&sched), "--limits", s(&limits)]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let out = text(&ok.stdout);
    assert!(out.contains("arm C (anthropic): 32 candidates, liability $12.48\n"), "{out}");
    assert!(out.contains("total: 96 candidates, maximum liability $31.68 against the cycle cap $50: PASS\n"), "{out}");

    std::fs::write(&limits, body("20")).unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let gate = ["gate", s(&sched), "--limits", s(&limits), "--ledger", s(&ledger), "--id", "gate-cycle-1"];
    let failed = trajkit(&gate);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    assert!(text(&failed.stdout).contains("cycle_cap_exceeded: maximum liability $31.68 exceeds the cycle cap $20\n"));
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&ledger).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["classification"], "pre_execution_rejected");
    assert_eq!(
        lines[0]["failed"],
        serde_json::json!(["cycle_cap_exceeded: maximum liability $31.68 exceeds the cycle cap $20"])
    );
    let valid = trajkit(&["ledger", "validate", s(&ledger)]);
    assert!(text(&valid.stderr).contains("1 attempts (0 executed, 0 component_tested, 1 pre_execution_rejected)"));
    // The same id again is refused and nothing is added.
    let again = trajkit(&gate);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("$.id: duplicate_id"), "{}", text(&again.stderr));
    assert_eq!(std::fs::read_to_string(&ledger).unwrap().lines().count(), 1);
    assert_eq!(trajkit(&["gate", s(&sched), "--limits", s(&dir.path().join("none.toml"))]).status.code(), Some(2));
}

/// Issue 19 item 9: rerun agreement and metric margins as a user runs them.
#[test]
fn diagnose_rerun_agreement_and_metric_margin() {
    let out = trajkit(&["diagnose", s(&numeric("run_u.npy")), "--rerun", s(&numeric("rerun_u_fortran.npy"))]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("run_u.npy: 1 of 60 values disagree, max |diff| 0.0010000009046846614\n"), "{stdout}");
    assert!(stdout.contains("worst at flat index 41, index (13, 2): run 1.199963415268209 rerun 1.2009634161728937"));
    let loose = trajkit(&[
        "diagnose",
        s(&numeric("run_u.npy")),
        "--rerun",
        s(&numeric("rerun_u_fortran.npy")),
        "--rtol",
        "1e-3",
    ]);
    assert_eq!(loose.status.code(), Some(0));
    let (run, rerun) = (numeric("metrics_run.json"), numeric("metrics_rerun.json"));
    let m = ["diagnose", s(&run), "--metric", "drag", "--pass-if", "below", "--rerun", s(&rerun), "--threshold"];
    let holds = trajkit(&[&m[..], &["0.3"]].concat());
    assert_eq!(holds.status.code(), Some(0), "{}", text(&holds.stdout));
    let noisy = trajkit(&[&m[..], &["0.299", "--json"]].concat());
    assert_eq!(noisy.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&noisy.stdout).unwrap();
    assert_eq!(v["findings"], serde_json::json!(["within_rerun_noise"]));
    assert_eq!(v["rerun_disagreement"].as_f64(), Some(0.0011000000000000454));
    let two = trajkit(&["diagnose", s(&run), s(&rerun), "--rerun", s(&rerun)]);
    assert_eq!(two.status.code(), Some(2));
    assert_eq!(trajkit(&["diagnose", s(&run), "--metric", "drag"]).status.code(), Some(2));
}

#[test]
fn redact_preserve_format_rewrites_real_files_in_their_own_format() {
    use std::io::{Read, Write};
    // A real Gym file (gzip) and a real ATIF document, each with a SYNTHETIC key planted in
    // a message (shaped like a GitHub token; never a real credential).
    let key = format!("ghp_{}", "Zq7x".repeat(9));
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("gym")).unwrap();
    let gym = std::fs::read_to_string(real("gym/tau2__example_rollouts.jsonl")).unwrap();
    let planted_gym = gym.replacen(" the ", &format!(" the {key} "), 3);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(planted_gym.as_bytes()).unwrap();
    std::fs::write(input.join("gym/tau2.jsonl.gz"), gz.finish().unwrap()).unwrap();
    let atif = std::fs::read_to_string(real("atif/claude-code-pass-v1.7.trajectory.json")).unwrap();
    let planted_atif = atif.replacen(" the ", &format!(" the {key} "), 2);
    std::fs::write(input.join("run.trajectory.json"), &planted_atif).unwrap();
    let out = dir.path().join("out");
    let report = dir.path().join("report.json");
    let r = trajkit(&["redact", "--preserve-format", s(&input), "-o", s(&out), "--report", s(&report)]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
    assert_eq!(
        text(&r.stderr),
        format!("github_token: 5 replaced (1 distinct)\nwrote 2 files to {} (2 redacted, 5 replacements, 0 files not written)\n", out.display())
    );
    let placeholder = " the [REDACTED:github_token:1] ";
    let mut gym_out = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(out.join("gym/tau2.jsonl.gz")).unwrap())
        .read_to_string(&mut gym_out)
        .unwrap();
    assert!(gym_out == gym.replacen(" the ", placeholder, 3), "gym bytes changed beyond the secret");
    let atif_out = std::fs::read_to_string(out.join("run.trajectory.json")).unwrap();
    assert!(atif_out == atif.replacen(" the ", placeholder, 2), "ATIF bytes changed beyond the secret");
    // The redacted files read with the figures of the originals.
    let figures = |p: &Path| {
        let r = trajkit(&["inspect", "--json", s(p)]);
        text(&r.stdout)
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["path"] = serde_json::Value::Null;
                v
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(figures(&out.join("gym/tau2.jsonl.gz")), figures(&real("gym/tau2__example_rollouts.jsonl")));
    assert_eq!(figures(&out.join("run.trajectory.json")), figures(&real("atif/claude-code-pass-v1.7.trajectory.json")));
    let rep = std::fs::read_to_string(&report).unwrap();
    assert!(!rep.contains(&key) && rep.contains("\"replacements\": 5"), "{rep}");
    // A Parquet file cannot be rewritten byte for byte: refused by name, the rest written.
    std::fs::write(input.join("rows.parquet"), b"PAR1").unwrap();
    let r = trajkit(&["redact", "--preserve-format", s(&input), "-o", s(&out)]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("rows.parquet: Parquet and .eval (zip) files cannot be rewritten in place"),
        "{}",
        text(&r.stderr)
    );
}
