//! Redactor behaviour on small synthetic records (every secret here is made up for the
//! test; the real-data and corpus figures are in tests/redact_real.rs and
//! tests/redaction_corpus.rs).

use std::path::Path;

use serde_json::json;
use trajkit_model::{Provenance, Role, Step, Task, ToolCall, ToolResult, Trajectory};

use super::*;

const KEY: &str = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z";
const KEY2: &str = "sk-proj-Zz9yXx8wVv7uTt6sRr5qQp4oOn3mMl2k";

fn record(id: &str, line: u64, steps: Vec<Step>) -> Trajectory {
    let mut t: Trajectory = serde_json::from_value(json!({
        "id": id,
        "schema_version": trajkit_model::SCHEMA_VERSION,
        "provenance": Provenance { format: "gym".into(), path: "run.jsonl".into(), line: Some(line), sha256: "0".repeat(64), ..Default::default() },
        "task": Task { key: "k".into(), ..Default::default() },
    }))
    .unwrap();
    t.steps = steps;
    trajkit_model::seal(&mut t).unwrap();
    t
}

fn text(role: Role, s: &str) -> Step {
    Step::new(role, Some(json!(s)))
}

fn call(id: &str, args: serde_json::Value) -> Step {
    let mut s = Step::new(Role::Assistant, None);
    s.tool_calls.push(ToolCall {
        arguments: args.into(),
        arguments_invalid: false,
        extra: Default::default(),
        id: Some(id.into()),
        name: "login".into(),
        text_embedded: false,
    });
    s
}

fn result(id: &str, content: &str) -> Step {
    let mut s = Step::new(Role::Tool, None);
    s.tool_results.push(ToolResult {
        call_id: Some(id.into()),
        content: Some(json!(content).into()),
        extra: Default::default(),
        subagent_refs: vec![],
    });
    s
}

fn content(t: &Trajectory, i: usize) -> &str {
    t.steps[i].content.as_ref().and_then(|c| c.as_str()).unwrap_or("")
}

#[test]
fn the_same_secret_gets_the_same_placeholder_in_every_record() {
    let mut r = Redactor::new(Rules::builtin());
    let mut report = RedactionReport::default();
    let mut a = record("a", 1, vec![text(Role::User, &format!("export OPENAI_API_KEY={KEY}"))]);
    let mut b = record("b", 2, vec![text(Role::User, &format!("{KEY2} then {KEY} again"))]);
    assert_eq!(r.redact_trajectory(&mut a, &mut report).unwrap(), 1);
    assert_eq!(r.redact_trajectory(&mut b, &mut report).unwrap(), 2);
    assert_eq!(content(&a, 0), "export OPENAI_API_KEY=[REDACTED:openai_key:1]");
    assert_eq!(content(&b, 0), "[REDACTED:openai_key:2] then [REDACTED:openai_key:1] again");
    assert_eq!((report.records, report.records_redacted, report.replacements), (2, 2, 3));
    assert_eq!(report.kinds["openai_key"], KindTotal { replacements: 3, distinct: 2 });
    let f = &report.findings[1];
    assert_eq!((f.file.as_str(), f.line, f.record.as_str()), ("run.jsonl", Some(2), "b"));
    assert_eq!((f.field.as_str(), f.kind.as_str(), f.count), ("$.steps[0].content", "openai_key", 2));
    assert_eq!(f.placeholders, ["[REDACTED:openai_key:2]", "[REDACTED:openai_key:1]"]);
    // The digest is recomputed for the new content.
    let mut resealed = b.clone();
    trajkit_model::seal(&mut resealed).unwrap();
    assert_eq!(resealed.content_digest, b.content_digest);
}

#[test]
fn a_secret_bearing_key_is_replaced_whole_and_its_value_everywhere_in_the_record() {
    let mut r = Redactor::new(Rules::builtin());
    let mut report = RedactionReport::default();
    let mut t = record(
        "a",
        1,
        vec![
            text(Role::User, "log in as bob, my pass is Tr0ub4dor and keep it quiet"),
            call("c1", json!({"user": "bob", "password": "Tr0ub4dor", "token": "hello"})),
            result("c1", "welcome bob"),
        ],
    );
    r.redact_trajectory(&mut t, &mut report).unwrap();
    assert_eq!(
        t.steps[1].tool_calls[0].arguments,
        json!({"user": "bob", "password": "[REDACTED:password:1]", "token": "hello"})
    );
    // Found in step 1, replaced in step 0 too (second pass over the record).
    assert_eq!(content(&t, 0), "log in as bob, my pass is [REDACTED:password:1] and keep it quiet");
    // Linkage untouched.
    assert_eq!(t.steps[2].tool_results[0].call_id.as_deref(), Some("c1"));
    let fields: Vec<&str> = report.findings.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(fields, ["$.steps[1].tool_calls[0].arguments.password", "$.steps[0].content"]);
}

#[test]
fn references_and_placeholders_are_not_secrets_and_redaction_is_idempotent() {
    let mut r = Redactor::new(Rules::builtin());
    let mut report = RedactionReport::default();
    let mut t = record(
        "a",
        1,
        vec![
            call("c1", json!({"api_key": "EMPTY", "password": "${DB_PASSWORD}", "client_secret": "<your secret>"})),
            text(Role::User, "password: ********, api_key = os.environ[\"KEY\"]"),
        ],
    );
    assert_eq!(r.redact_trajectory(&mut t, &mut report).unwrap(), 0);
    let mut u = record("b", 2, vec![text(Role::User, &format!("password: Sup3r-Secret! and {KEY}"))]);
    assert_eq!(r.redact_trajectory(&mut u, &mut report).unwrap(), 2);
    let once = u.clone();
    assert_eq!(r.redact_trajectory(&mut u, &mut report).unwrap(), 0);
    assert_eq!(u, once);
    assert_eq!(content(&u, 0), "password: [REDACTED:password:1] and [REDACTED:openai_key:1]");
}

#[test]
fn contextual_detectors_take_only_the_secret() {
    let mut r = Redactor::new(Rules::builtin());
    let cases = [
        ("postgres://app:s3cr3t-pw@db:5432/x", "postgres://app:[REDACTED:url_password:1]@db:5432/x"),
        ("https://x.io/login?password=Hx7!kQ2z&user=bob", "https://x.io/login?password=[REDACTED:password:1]&user=bob"),
        ("The password is Blue42sky.", "The password is [REDACTED:password:2]."),
        ("The password is incorrect.", "The password is incorrect."),
        ("curl -H 'Authorization: Bearer abcDEF1234567890xyz'", "curl -H 'Authorization: Bearer [REDACTED:bearer_token:1]'"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----\nrest",
            "[REDACTED:private_key:1]\nrest",
        ),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B (truncated", "[REDACTED:private_key:2]"),
    ];
    for (input, want) in cases {
        let got = r.redact_text(input).map(|(s, _)| s).unwrap_or_else(|| input.to_string());
        assert_eq!(got, want);
    }
}

#[test]
fn user_literals_and_rules_files() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("secrets.txt");
    std::fs::write(&secrets, "corp-token-7781\r\n\nhunter2-ish\n").unwrap();
    let rules_path = dir.path().join("rules.toml");
    std::fs::write(
        &rules_path,
        "disable = [\"bearer_token\"]\n[fields]\nsession_cookie_value = \"cookie\"\n[[detector]]\nkind = \"internal_token\"\nregex = \"itk_[a-z0-9]{8}\"\n",
    )
    .unwrap();
    let mut rules = Rules::builtin();
    rules.load_secrets(&secrets).unwrap();
    rules.load_toml(&rules_path).unwrap();
    assert_eq!(rules.literals, ["corp-token-7781", "hunter2-ish"]);
    let mut r = Redactor::new(rules);
    let (out, kinds) = r.redact_text("use corp-token-7781 or itk_ab12cd34, Bearer abcDEF1234567890xyz").unwrap();
    assert_eq!(out, "use [REDACTED:literal:1] or [REDACTED:internal_token:1], Bearer abcDEF1234567890xyz");
    assert_eq!(kinds, ["literal", "internal_token"]);
    let mut report = RedactionReport::default();
    let mut t = record("a", 1, vec![call("c", json!({"Session-Cookie-Value": "abc"}))]);
    r.redact_trajectory(&mut t, &mut report).unwrap();
    assert_eq!(t.steps[0].tool_calls[0].arguments, json!({"Session-Cookie-Value": "[REDACTED:cookie:1]"}));
}

#[test]
fn bad_rules_and_secrets_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.txt");
    std::fs::write(&p, "long-enough\nabc\n").unwrap();
    let err = Rules::builtin().load_secrets(&p).unwrap_err().to_string();
    assert!(err.ends_with("bad.txt: line 2: a secret must have at least 4 characters"), "{err}");
    let cases = [
        ("disable = [\"nope\"]", "disable: \"nope\" is not a built-in detector"),
        ("[[detector]]\nkind = \"x\"\nregex = \"(\"", "detector[0] (x): regex parse error"),
        ("[[detector]]\nkind = \"x\"\nregex = \"a*\"", "detector[0] (x): the regex matches the empty string"),
        ("[[detector]]\nkind = \"Bad Kind\"\nregex = \"a\"", "kind \"Bad Kind\" is not [a-z][a-z0-9_]*"),
        ("colour = 1", "unknown field `colour`"),
    ];
    for (toml, want) in cases {
        let err = Rules::builtin().apply_toml(toml, Path::new("rules.toml")).unwrap_err().to_string();
        assert!(err.starts_with("rules.toml: ") && err.contains(want), "{err}");
    }
}

#[test]
fn every_builtin_detector_compiles() {
    assert_eq!(Rules::builtin().detectors.len(), rules::BUILTIN.len());
}

/// Issue 19 item 10: a JSON-quoted secret is one secret replaced once, so the report says
/// one replacement of one distinct secret, as the output holds one placeholder.
#[test]
fn a_json_quoted_secret_is_counted_as_the_one_placeholder_written() {
    let mut r = Redactor::new(Rules::builtin());
    let mut report = RedactionReport::default();
    let mut t = record("a", 1, vec![text(Role::User, r#"{"access_token": "abcd1234efgh5678ijkl"}"#)]);
    assert_eq!(r.redact_trajectory(&mut t, &mut report).unwrap(), 1);
    let out = content(&t, 0);
    assert_eq!(out.matches("[REDACTED:").count(), 1, "{out}");
    assert!(!out.contains("abcd1234efgh5678ijkl"), "{out}");
    assert_eq!((report.records_redacted, report.replacements), (1, 1));
    let totals: Vec<(&str, u64, u64)> =
        report.kinds.iter().map(|(k, t)| (k.as_str(), t.replacements, t.distinct)).collect();
    assert_eq!(totals, [("assigned_secret", 1, 1)], "{out}");
    let f: Vec<(&str, &str, u64, usize)> =
        report.findings.iter().map(|f| (f.field.as_str(), f.kind.as_str(), f.count, f.placeholders.len())).collect();
    assert_eq!(f, [("$.steps[0].content", "assigned_secret", 1, 1)]);
    assert_eq!(out, r#"{"access_token": "[REDACTED:assigned_secret:1]"}"#);
    // A placeholder already in the text (a redacted input) is never a secret itself.
    let mut again = record("b", 2, vec![text(Role::User, out)]);
    assert_eq!(r.redact_trajectory(&mut again, &mut report).unwrap(), 0);
    let mut field = record("c", 3, vec![call("c1", json!({"password": "[REDACTED:password:4]"}))]);
    assert_eq!(r.redact_trajectory(&mut field, &mut report).unwrap(), 0);
}
