//! Ledger checks on small ledgers written for each rule (the ledger is trajkit's own
//! format; the shipped example `examples/publication/` is checked by the CLI tests).

use super::*;

const GOOD: &str = r#"{"id":"a1","environment":"gmail","approach":"baseline","classification":"executed","run":"trajkit schedule ...","passed":["12 tasks"],"failed":[],"output":"none","public_locations":["results/a1.json"],"limitation":"one seed"}
{"id":"a2","environment":"phone","approach":"tool | retry","classification":"component_tested","run":"scorer only","passed":"scorer unit tests","failed":"agent not run","output":"see log","public_locations":["results/"],"limitation":"no agent run\nat all"}

{"id":"a3","environment":"phone","approach":"new arm","classification":"pre_execution_rejected","run":"admission check","passed":[],"failed":["task not admitted"],"output":"state digest missing","public_locations":[],"limitation":"never ran","x_cost":3}
"#;

fn codes(l: &Ledger) -> Vec<(u64, &str, &str)> {
    l.findings.iter().map(|f| (f.line, f.field.as_str(), f.code)).collect()
}

#[test]
fn a_good_ledger_reads_with_counts_and_no_findings() {
    let l = parse(GOOD.as_bytes());
    assert_eq!(codes(&l), []);
    assert_eq!(l.lines, 3);
    assert_eq!(l.counts(), [("executed", 1), ("component_tested", 1), ("pre_execution_rejected", 1)]);
    assert_eq!(l.attempts[1].line, 2);
    assert_eq!(l.attempts[2].line, 4);
    assert_eq!(l.attempts[1].passed, ["scorer unit tests"]);
}

#[test]
fn every_structural_problem_is_named_by_line_and_field() {
    let text = [
        r#"{"id":"a1","environment":"e","approach":"x","classification":"Executed","run":"r","passed":[],"failed":[],"output":"o","public_locations":["../etc/passwd","/abs"],"limitation":"l","colour":"red"}"#,
        r#"{"id":"a2","environment":"","approach":"x","classification":"executed","run":"r","passed":[1],"failed":[],"output":"o","public_locations":"results","limitation":"l"}"#,
        r#"{"id":"a3","environment":"e","approach":"x","classification":"executed","run":"r","failed":[],"output":"o","public_locations":[],"limitation":"l"}"#,
        r#"["not", "an", "object"]"#,
        r#"{"id": "broken"#,
        r#"{"id":"a5","environment":"e","approach":"x","classification":"executed","run":"r","passed":[],"failed":[],"output":"o","public_locations":[],"limitation":"l"}"#,
        r#"{"id":"a5","environment":"e","approach":"x","classification":"executed","run":"r","passed":[],"failed":[],"output":"o","public_locations":[],"limitation":"l"}"#,
    ]
    .join("\n");
    let l = parse(text.as_bytes());
    assert_eq!(
        codes(&l),
        [
            (1, "$.colour", "unknown_field"),
            (1, "$.classification", "invalid_classification"),
            (1, "$.public_locations[0]", "unsafe_location"),
            (1, "$.public_locations[1]", "unsafe_location"),
            (2, "$.environment", "empty_value"),
            (2, "$.passed", "wrong_type"),
            (2, "$.public_locations", "wrong_type"),
            (3, "$.passed", "missing_field"),
            (4, "$", "not_an_object"),
            (5, "$", "invalid_json"),
            (7, "$.id", "duplicate_id"),
        ]
    );
    assert_eq!(l.findings[1].message, "\"Executed\" is not one of executed, component_tested, pre_execution_rejected");
    assert_eq!(l.findings[10].message, "\"a5\" is already used on line 6");
    assert_eq!(l.attempts.len(), 1);
}

#[test]
fn public_locations_must_exist_and_be_covered_by_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("results/sub")).unwrap();
    std::fs::write(root.join("results/a1.json"), b"{}").unwrap();
    std::fs::write(root.join("results/sub/x.txt"), b"x").unwrap();
    let l = parse(GOOD.as_bytes());
    // No manifest yet: existence is checked, coverage cannot be.
    let f = check_locations(&l, root, &root.join("manifest.json")).unwrap();
    assert_eq!(f.iter().map(|f| f.code).collect::<Vec<_>>(), ["no_manifest"]);
    let m = manifest::create(root, &["manifest.json"]).unwrap();
    manifest::write(&m, &root.join("manifest.json")).unwrap();
    assert_eq!(check_locations(&l, root, &root.join("manifest.json")).unwrap(), []);
    // A file added under a listed directory, a listed file grown, a location removed.
    std::fs::write(root.join("results/sub/new.txt"), b"n").unwrap();
    std::fs::write(root.join("results/a1.json"), b"{ }").unwrap();
    let f = check_locations(&l, root, &root.join("manifest.json")).unwrap();
    let got: Vec<(u64, &str, &str, &str)> =
        f.iter().map(|f| (f.line, f.field.as_str(), f.code, f.message.as_str())).collect();
    assert_eq!(
        got,
        [
            (1, "$.public_locations[0]", "location_changed", "\"results/a1.json\" has 3 bytes, the manifest lists 2"),
            (2, "$.public_locations[0]", "location_changed", "\"results/a1.json\" has 3 bytes, the manifest lists 2"),
            (
                2,
                "$.public_locations[0]",
                "location_not_in_manifest",
                "not covered by the manifest: results/sub/new.txt"
            ),
        ]
    );
    std::fs::remove_file(root.join("results/a1.json")).unwrap();
    let f = check_locations(&l, root, &root.join("manifest.json")).unwrap();
    assert_eq!(f[0].code, "location_missing");
}

#[test]
fn an_edited_manifest_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a"), b"a").unwrap();
    let mut m = manifest::create(dir.path(), &["manifest.json"]).unwrap();
    m.files[0].bytes = 2;
    manifest::write(&m, &dir.path().join("manifest.json")).unwrap();
    let f = check_locations(&Ledger::default(), dir.path(), &dir.path().join("manifest.json")).unwrap();
    assert_eq!(f[0].code, "manifest_digest_mismatch");
}

#[test]
fn the_readme_table() {
    let l = parse(GOOD.as_bytes());
    let table = render(&l);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[2],
        "| a1 | gmail | baseline | `executed` | trajkit schedule ... | 12 tasks | — | none | [`results/a1.json`](results/a1.json) | one seed |"
    );
    assert_eq!(
        lines[3],
        "| a2 | phone | tool \\| retry | `component_tested` | scorer only | scorer unit tests | agent not run | see log | [`results/`](results/) | no agent run<br>at all |"
    );
    assert_eq!(lines[4].split(" | ").nth(8), Some("—"));
    assert_eq!(lines[6], "3 attempts: 1 executed, 1 component_tested, 1 pre_execution_rejected.");
}
