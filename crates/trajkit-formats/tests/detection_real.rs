//! Detection does not depend on where keys fall: every real document fixture, rewritten so
//! that its largest member comes first and is padded past 3 MiB (the other members after
//! it, in reverse order), is detected as the same family and read to the same figures.

mod common;

use std::path::{Path, PathBuf};

use common::{read, real};
use serde_json::Value;
use trajkit_formats::FileReport;

/// Padding (JSON whitespace inside the first member) that pushes every later key past the
/// detection peek (1 MiB) three times over.
const PAD: usize = 3 << 20;

/// The document rewritten: for an object, its largest member first, padded, then the others
/// in reverse order; for an array, the same for its first element. `None` when the file is
/// not one JSON object or array.
fn keys_last(bytes: &[u8]) -> Option<Vec<u8>> {
    match serde_json::from_slice::<Value>(bytes).ok()? {
        Value::Object(m) => Some(object_keys_last(&m)),
        Value::Array(items) => {
            let first = items.first()?.as_object()?;
            let mut out = b"[".to_vec();
            out.extend(object_keys_last(first));
            for item in &items[1..] {
                out.push(b',');
                out.extend(item.to_string().into_bytes());
            }
            out.push(b']');
            Some(out)
        }
        _ => None,
    }
}

fn object_keys_last(m: &serde_json::Map<String, Value>) -> Vec<u8> {
    let mut members: Vec<(&String, String)> = m.iter().map(|(k, v)| (k, v.to_string())).collect();
    members.reverse();
    let largest = (0..members.len()).max_by_key(|&i| members[i].1.len()).unwrap_or(0);
    let big = members.remove(largest);
    members.insert(0, big);
    let mut out = b"{".to_vec();
    for (i, (k, v)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend(Value::String(k.to_string()).to_string().into_bytes());
        out.push(b':');
        if i == 0 {
            out.resize(out.len() + PAD, b' ');
        }
        out.extend(v.as_bytes());
    }
    out.push(b'}');
    out
}

/// The figures that must not change (not the path, which differs).
fn figures(r: &FileReport) -> impl PartialEq + std::fmt::Debug {
    let r = r.clone();
    (r.format, r.records, r.trajectories, r.subagents, r.steps, r.tool_calls, r.rejected, r.reasons, r.gaps, r.error)
}

/// Uncompressed `.json` / `.traj` documents under `dir`, recursively, sorted.
fn documents(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).expect("dir").flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if p.is_dir() {
            documents(&p, out);
        } else if name.ends_with(".json") || name.ends_with(".traj") {
            out.push(p);
        }
    }
}

/// Copies a directory tree.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("dir").flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

#[test]
fn every_document_family_is_detected_with_its_keys_last_in_a_multi_mib_document() {
    let root = real("");
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_tree(&root, tmp.path());
    let mut docs = Vec::new();
    documents(&root, &mut docs);
    let mut families = std::collections::BTreeMap::<String, u64>::new();
    for doc in docs {
        let original = read(std::slice::from_ref(&doc));
        let before = &original.reports[0];
        let Some(format) = before.format.clone() else { continue };
        if before.error.is_some() {
            continue;
        }
        let bytes = std::fs::read(&doc).expect("read");
        let Some(padded) = keys_last(&bytes) else { continue };
        let copy = tmp.path().join(doc.strip_prefix(&root).expect("inside"));
        std::fs::write(&copy, &padded).unwrap_or_else(|e| panic!("write {}: {e}", copy.display()));
        let rewritten = read(std::slice::from_ref(&copy));
        std::fs::write(&copy, &bytes).expect("restore");
        assert_eq!(figures(&rewritten.reports[0]), figures(before), "{}", doc.display());
        *families.entry(format).or_default() += 1;
    }
    let got: Vec<(&str, u64)> = families.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let want = [
        ("adp", 2),
        ("atif", 18),
        ("gemini-cli", 1),
        ("harbor-traces", 1),
        ("inspect", 9),
        ("langfuse", 8),
        ("langsmith", 3),
        ("mini-swe-agent", 3),
        ("mlflow", 2),
        ("nebius", 1),
        ("opencode", 3),
        ("openhands", 3),
        ("otel", 4),
        ("sharegpt", 1),
        ("swe-agent", 5),
        ("swe-gym", 1),
        ("swe-smith", 1),
        ("tau-bench", 1),
        ("tau2", 1),
        ("toolbench", 2),
    ];
    assert_eq!(got, want, "families and documents covered");
}

/// The reported case with real content only: a SWE-agent `.traj` whose `trajectory` list
/// (the real one, repeated to 4 MB) comes first, so `history` and `info` lie past 1 MiB.
#[test]
fn a_multi_mib_swe_agent_traj_with_its_trajectory_first_is_detected() {
    let src = real("swe_agent_traj/pydicom__pydicom-1458.traj");
    let doc: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(&src).expect("read")).expect("json");
    let steps = doc["trajectory"].as_array().expect("trajectory list").clone();
    let mut repeated = Vec::new();
    while Value::Array(repeated.clone()).to_string().len() < 4_000_000 {
        repeated.extend(steps.iter().cloned());
    }
    let mut out = format!("{{\"trajectory\":{}", Value::Array(repeated));
    for (k, v) in doc.iter().filter(|(k, _)| *k != "trajectory") {
        out.push_str(&format!(",{}:{v}", Value::String(k.clone())));
    }
    out.push('}');
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("pydicom__pydicom-1458.traj");
    std::fs::write(&path, out).expect("write");
    let c = read(&[path]);
    let r = &c.reports[0];
    let got = (r.format.as_deref(), r.records, r.trajectories, r.steps, r.tool_calls, r.rejected);
    assert_eq!(got, (Some("swe-agent"), 1, 1, 26, 12, 0));
}
