//! The command-line contract of `state`, `replay`, `counterfactual` and `admit`: outputs,
//! exit codes (0 ok, 1 findings, 2 error) and written reports. Databases are copies of the
//! real Chinook database; environments are the contacts test environment (tests/env/).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn trajkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trajkit")).args(args).current_dir(root()).output().expect("run trajkit")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const CHINOOK: &str = "tests/fixtures/real/sqlite/Chinook_Sqlite.sqlite";
const ENV: &str = "python3 tests/env/contacts_env.py";
const TRAJ: &str = "tests/env/contacts/tag_ada.json";
const EXPECT: &str = "tests/env/contacts/tag_ada.expect.toml";

/// A copy of Chinook with one e-mail changed and one playlist entry deleted.
fn edited(dir: &Path) -> String {
    let p = dir.join("edited.sqlite");
    std::fs::copy(root().join(CHINOOK), &p).unwrap();
    let script = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); \
                  c.execute(\"UPDATE Customer SET Email='luis@example.com' WHERE CustomerId=1\"); \
                  c.execute('DELETE FROM PlaylistTrack WHERE PlaylistId=18'); c.commit()";
    let st = Command::new("python3").args(["-c", script, p.to_str().unwrap()]).status().unwrap();
    assert!(st.success());
    p.to_str().unwrap().to_string()
}

#[test]
fn state_capture_prints_digests_and_stores_nothing_new_the_second_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let out = trajkit(&["state", "capture", CHINOOK, "-o", store.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "state e325ccf0c25d350b9d9404a9939b73a04c4d472abab5b6d33c125f002627c4a2");
    assert_eq!(lines[1], "Chinook_Sqlite.sqlite: 11 tables, 15607 rows, 11 other schema objects");
    assert_eq!(lines[2], "  Album                 347 rows  800c94b76d5fc347");
    assert!(lines[13].ends_with(": 11 new table captures of 11, new snapshot"), "{stdout}");
    let again = text(&trajkit(&["state", "capture", CHINOOK, "-o", store.to_str().unwrap()]).stdout);
    assert!(again.ends_with(": nothing new (every table capture and the snapshot were already stored)\n"), "{again}");
    let json = trajkit(&["state", "capture", CHINOOK, "--json", "--ignore", "PlaylistTrack"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["stats"]["rows"], 15607 - 8715);
    assert_eq!(v["snapshot"]["databases"][0]["ignored_tables"][0], "PlaylistTrack");
    let missing = trajkit(&["state", "capture", "nope.sqlite"]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(text(&missing.stderr), "trajkit: error: nope.sqlite: no such database file\n");
}

#[test]
fn state_diff_exits_1_on_differences_and_reads_snapshots_by_digest() {
    let dir = tempfile::tempdir().unwrap();
    let b = edited(dir.path());
    let out = trajkit(&["state", "diff", CHINOOK, &b]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "~ Customer.row[CustomerId=1] Email: \"luisg@embraer.com.br\" -> \"luis@example.com\"\n\
         = Customer: 0 inserted, 0 deleted, 1 updated\n\
         - PlaylistTrack.row[PlaylistId=18,TrackId=597] PlaylistId=18 TrackId=597\n\
         = PlaylistTrack: 0 inserted, 1 deleted, 0 updated\n\
         2 tables changed: 0 inserted, 1 deleted, 1 updated, 0 schema changes\n"
    );
    let same = trajkit(&["state", "diff", CHINOOK, CHINOOK]);
    assert_eq!((same.status.code(), text(&same.stdout)), (Some(0), "no differences\n".to_string()));
    // Snapshot digests (prefixes) in a store, JSON Lines output.
    let store = dir.path().join("store");
    let s = store.to_str().unwrap();
    assert_eq!(trajkit(&["state", "capture", &b, "-o", s]).status.code(), Some(0));
    let out = trajkit(&["state", "diff", "--store", s, "--json", CHINOOK, "fbd5"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "unknown digest prefix: {stderr}");
    assert!(stderr.contains("no snapshot fbd5 in the store"), "{stderr}");
    let digest = text(&trajkit(&["state", "capture", &b, "--json"]).stdout);
    let digest: serde_json::Value = serde_json::from_str(&digest).unwrap();
    let prefix = &digest["digest"].as_str().unwrap()[..10];
    let out = trajkit(&["state", "diff", "--store", s, "--json", CHINOOK, prefix]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["row", "table", "row", "table", "summary"]);
    assert_eq!(lines[4]["updated"], 1);
    assert_eq!(lines[2]["before"], serde_json::json!({"PlaylistId": 18, "TrackId": 597}));
    let no_store = trajkit(&["state", "diff", CHINOOK, prefix]);
    assert_eq!(no_store.status.code(), Some(2));
    assert!(text(&no_store.stderr).contains("no such database file (give --store STORE to name a snapshot by digest)"));
}

#[test]
fn state_check_exit_status_tells_pass_violation_and_error() {
    let dir = tempfile::tempdir().unwrap();
    let b = edited(dir.path());
    let expect = dir.path().join("expect.toml");
    std::fs::write(
        &expect,
        "[[expect]]\ntable = \"Customer\"\nchange = \"update\"\nwhere = { CustomerId = 1 }\nvalues = { Email = \"luis@example.com\" }\n",
    )
    .unwrap();
    let e = expect.to_str().unwrap();
    let out = trajkit(&["state", "check", "--expect", e, CHINOOK, &b]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "expect #1 update of Customer where CustomerId = 1 with Email = \"luis@example.com\": ok (1 matching)\n\
         disallowed collateral effect: PlaylistTrack.row[PlaylistId=18,TrackId=597] deleted (PlaylistId=18 TrackId=597)\n\
         FAIL: 2 changes checked, 1 violations\n"
    );
    std::fs::write(
        &expect,
        std::fs::read_to_string(&expect).unwrap() + "\n[[allow]]\ntable = \"PlaylistTrack\"\nchange = \"delete\"\n",
    )
    .unwrap();
    let out = trajkit(&["state", "check", "--expect", e, "--json", CHINOOK, &b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["passed"].as_bool(), v["changes"].as_u64()), (Some(true), Some(2)));
    std::fs::write(&expect, "[[expect]]\ntable = \"Customer\"\n").unwrap();
    let out = trajkit(&["state", "check", "--expect", e, CHINOOK, &b]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).ends_with("expect.toml: line 1, column 1: missing field `change`\n"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn replay_passes_a_faithful_trajectory_and_fails_a_flaky_environment() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("replay.json");
    let out =
        trajkit(&["replay", TRAJ, "--env", ENV, "--times", "2", "--expect", EXPECT, "-o", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "trajectory contacts-tag-ada-reference: 3 actions, 2 replays with `python3 tests/env/contacts_env.py` (seed 0)\n\
         replay 1: reset 3510c5acadfc -> final 205e07b2a3d3\n\
         replay 2: reset 3510c5acadfc -> final 205e07b2a3d3\n\
         reset state: matches the record\n\
         final state: matches the record\n\
         reproducible: yes\n\
         state check: 2/2 replays pass\n\
         verdict: pass\n"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!((v["kind"].as_str(), v["verdict"].as_str()), (Some("trajkit-replay/1"), Some("pass")));
    let flaky = trajkit(&["replay", TRAJ, "--env", "python3 tests/env/contacts_env.py --flaky", "--json"]);
    assert_eq!(flaky.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&flaky.stdout).unwrap();
    assert_eq!(v["divergence"]["action"], 2);
    assert_eq!(v["divergence"]["name"], "create_contact");
    let broken = trajkit(&["replay", TRAJ, "--env", "exit 0"]);
    assert_eq!(broken.status.code(), Some(2));
    assert!(
        text(&broken.stderr).contains("environment `exit 0`: exited before answering reset"),
        "{}",
        text(&broken.stderr)
    );
}

#[test]
fn counterfactual_and_admit_produce_and_read_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let ev = dir.path().join("evidence");
    std::fs::create_dir_all(ev.join("replays")).unwrap();
    let replay_report = ev.join("replays/tag_ada.json");
    let cf_report = ev.join("counterfactuals/tag_ada.json");
    std::fs::create_dir_all(cf_report.parent().unwrap()).unwrap();
    let out = trajkit(&["replay", TRAJ, "--env", ENV, "--expect", EXPECT, "-o", replay_report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = trajkit(&[
        "counterfactual",
        TRAJ,
        "--env",
        ENV,
        "--expect",
        EXPECT,
        "--claim",
        "2",
        "--claim",
        "3",
        "--alternate",
        "tests/env/contacts/tag_ada_alternate.json",
        "-o",
        cf_report.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("action 1 (search_contacts): causally trivial: deleting it changes nothing; the state check passes without it\n"), "{stdout}");
    assert!(stdout.contains("strong edge to action 3; the state check fails without it\n"), "{stdout}");
    assert!(stdout.contains("alternate route contacts-tag-ada-alternate (3 actions): accepted (final state differs from the reference)\n"), "{stdout}");
    let task = dir.path().join("task.json");
    std::fs::copy(root().join(EXPECT), dir.path().join("expect.toml")).unwrap();
    std::fs::write(&task, r#"{"id": "contacts/tag-ada", "expect": "expect.toml"}"#).unwrap();
    std::fs::write(ev.join("attempts.jsonl"), "{\"passed\":true}\n{\"passed\":false}\n{\"passed\":false}\n").unwrap();
    let record = dir.path().join("admission.json");
    let args = ["admit", task.to_str().unwrap(), "--evidence", ev.to_str().unwrap(), "-o", record.to_str().unwrap()];
    let out = trajkit(&args);
    assert_eq!(out.status.code(), Some(1), "no review yet");
    assert_eq!(text(&out.stdout).lines().nth(2), Some("  meaning: unanswered — no review annotation (review.json)"));
    std::fs::write(
        ev.join("review.json"),
        r#"{"reviewer": "r.ada", "outcome_worth_expressing": true, "instruction_denotes_outcome": true}"#,
    )
    .unwrap();
    let out = trajkit(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(text(&out.stdout).lines().next(), Some("task contacts/tag-ada: ADMITTED"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert_eq!(v["admitted"], true);
    assert_eq!(v["learning_value"]["figures"]["passes"], 1);
    assert_eq!(v["learning_value"]["figures"]["attempts"], 3);
}

/// The contacts witness as an OpenAI-messages solver run (any readable format is a solver
/// file), with `system` as its system prompt when given.
fn messages_run(id: &str, system: Option<&str>) -> String {
    let mut msgs = Vec::new();
    if let Some(s) = system {
        msgs.push(serde_json::json!({"role": "system", "content": s}));
    }
    msgs.push(serde_json::json!({"role": "user", "content": "Add Ada Lovelace (ada@example.com) to my contacts and tag her as vip."}));
    for (call, name, args, result) in [
        ("c1", "search_contacts", r#"{"query": "Ada"}"#, "[]"),
        ("c2", "create_contact", r#"{"name": "Ada Lovelace", "email": "ada@example.com"}"#, r#"{"id":4}"#),
        ("c3", "add_tag", r#"{"contact_id": 4, "tag": "vip"}"#, r#"{"ok":true}"#),
    ] {
        msgs.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": call, "type": "function", "function": {"name": name, "arguments": args}}]}));
        msgs.push(serde_json::json!({"role": "tool", "tool_call_id": call, "content": result}));
    }
    serde_json::json!({"id": id, "messages": msgs}).to_string() + "\n"
}

#[test]
fn isolation_and_admit_solvers_exit_1_on_a_leak_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(root().join(EXPECT), d.join("expect.toml")).unwrap();
    std::fs::copy(root().join(TRAJ), d.join("witness.json")).unwrap();
    let task = d.join("task.json");
    std::fs::write(&task, r#"{"id": "contacts/tag-ada", "instruction": "Add Ada Lovelace (ada@example.com) to my contacts and tag her as vip.", "expect": "expect.toml", "witness": "witness.json"}"#).unwrap();
    let solvers = d.join("solvers");
    std::fs::create_dir_all(&solvers).unwrap();
    std::fs::write(
        solvers.join("clean.jsonl"),
        messages_run("s1", None) + &messages_run("s2", Some("You manage contacts.")),
    )
    .unwrap();
    let args = |extra: &str| {
        let mut v = vec![
            "isolation".to_string(),
            task.display().to_string(),
            "--solvers".into(),
            solvers.display().to_string(),
        ];
        v.extend(extra.split_whitespace().map(str::to_string));
        v
    };
    let run = |a: Vec<String>| trajkit(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let out = run(args(""));
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "task contacts/tag-ada: ISOLATED — 2 solver trajectories saw none of 3 pieces of witness-only material and expected values\n"
    );

    std::fs::write(solvers.join("leaky.jsonl"), messages_run("s3", Some("Hint: add_tag with contact_id=4."))).unwrap();
    let out = run(args("--json"));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "trajkit-isolation/1");
    assert_eq!((v["isolated"].as_bool(), v["solvers"].as_u64()), (Some(false), Some(3)));
    let leaks: Vec<String> = v["leaks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| format!("{} {} {} {} {}", l["trajectory"], l["line"], l["field"], l["kind"], l["value"]))
        .collect();
    let s3 = r#""openai-messages-443120bb517c28bb" 1 "steps[0].content""#;
    assert_eq!(leaks, vec![format!(r#"{s3} "witness_argument" "4""#), format!(r#"{s3} "expected_value" "4""#)]);

    // admit: the same solvers refuse admission (exit 1) whatever the evidence says.
    let ev = d.join("evidence");
    std::fs::create_dir_all(&ev).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trajkit"))
        .args(["admit", "task.json", "--evidence", "evidence", "--solvers", "solvers"])
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).ends_with(
        "  isolation: no — 2 leaks in 1 of 3 solver trajectories\n\
         \x20   LEAK openai-messages-443120bb517c28bb (solvers/leaky.jsonl:1) steps[0].content: witness argument contact_id = \"4\" (from witness steps[5].tool_calls[0] add_tag)\n\
         \x20   LEAK openai-messages-443120bb517c28bb (solvers/leaky.jsonl:1) steps[0].content: expected value contact_id = \"4\" (from expect[1] contact_tags)\n"
    ), "{}", text(&out.stdout));

    // An unreadable solver file is an error (2): an unread run cannot be cleared.
    std::fs::write(solvers.join("broken.jsonl"), "{\"id\": \"x\", \"messages\": [\n").unwrap();
    assert_eq!(run(args("")).status.code(), Some(2));
}
