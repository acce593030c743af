//! Manifest creation, digest and verification. The real tree is the Claude Code fixture
//! directory (nested folders, a file and a folder sharing a prefix); the tampering cases
//! are synthetic by nature.

use std::path::{Path, PathBuf};

use super::*;

fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, bytes) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    dir
}

#[test]
fn real_tree_is_listed_sorted_by_path_bytes_with_sizes_and_hashes() {
    let m = create(&real("claude_code"), &[]).unwrap();
    let listed: Vec<(&str, u64)> = m.files.iter().map(|f| (f.path.as_str(), f.bytes)).collect();
    assert_eq!(
        listed,
        [
            ("NOTICE.md", 3536),
            ("codemie/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", 17659),
            ("codemie/-tmp-private/agent-36541525.jsonl", 20420),
            ("codemie/-tmp-private/agent-50243ee8.jsonl", 1953),
            ("codemie/incremental-subagents/turn-2.jsonl", 164996),
            ("codemie/incremental-subagents/turn-2/subagents/agent-a485154.jsonl", 346552),
            ("codemie/session-624a4a58.jsonl", 2636063),
            ("codemie/session-9eda1058.jsonl", 132610),
            ("spotter/short.jsonl", 10491),
            ("spotter/subagent.jsonl", 236724),
            ("spotter/tool_heavy.jsonl", 39279),
        ]
    );
    assert_eq!(m.file_count, 11);
    assert_eq!(m.total_bytes, 3_610_283);
    // `sha256sum` of the same files.
    assert_eq!(m.files[0].sha256, "20f3fb350e23a837802ed60069e0bec037a145ead6eaa9b0bb0e76ed1ab151b5");
    assert_eq!(m.files[6].sha256, "487cba2d5d6a86d009641e5c071d1f0488ed90659a4afba74cf31b2dde6ac722");
    assert_eq!(m.files[10].sha256, "036f9a476f513bb56bad7b9e8d15826aacc8515a57d531487799a51deb41d8cb");
    assert_eq!(m.manifest_sha256, m.compute_digest());
}

#[test]
fn the_digest_covers_the_compact_sorted_json_without_its_own_key() {
    let dir = tree(&[("b.txt", b"hello\n"), ("A/x", b""), ("skip/y", b"y")]);
    let m = create(dir.path(), &["./skip/", "manifest.json"]).unwrap();
    let body = concat!(
        r#"{"excluded":["manifest.json","skip"],"file_count":2,"files":["#,
        r#"{"bytes":0,"path":"A/x","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},"#,
        r#"{"bytes":6,"path":"b.txt","sha256":"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"}],"#,
        r#""format":"trajkit.manifest/1","total_bytes":6}"#
    );
    assert_eq!(m.manifest_sha256, trajkit_model::sha256_hex(body.as_bytes()));
    // The same figure from Python: json.dumps(body, separators=(",", ":"), sort_keys=True).
    assert_eq!(m.manifest_sha256, "97b2d01cfd80987105b30678a4ee26463be02d46bfc4a26ddb5257f94bfe5bd4");
}

#[test]
fn a_written_manifest_verifies_clean_and_is_not_its_own_extra() {
    let dir = tree(&[("data/a.json", b"[1,2]"), ("README.md", b"# r\n")]);
    let m = create(dir.path(), &[DEFAULT_NAME]).unwrap();
    write(&m, &dir.path().join(DEFAULT_NAME)).unwrap();
    let text = std::fs::read_to_string(dir.path().join(DEFAULT_NAME)).unwrap();
    assert!(text.starts_with("{\n  \"excluded\": [\n    \"manifest.json\"\n  ],\n  \"file_count\": 2,"), "{text}");
    assert!(text.ends_with("}\n"));
    assert_eq!(Manifest::read(&dir.path().join(DEFAULT_NAME)).unwrap(), m);
    let r = verify(dir.path()).unwrap();
    assert!(r.is_clean(), "{r:?}");
    assert_eq!((r.listed, r.hashed, r.bytes_hashed), (2, 2, 9));
}

#[test]
fn verify_names_missing_extra_and_changed_files() {
    let dir = tree(&[("a", b"aaaa"), ("b", b"bbbb"), ("c", b"cccc"), ("d/e", b"eeee")]);
    let m = create(dir.path(), &[DEFAULT_NAME]).unwrap();
    write(&m, &dir.path().join(DEFAULT_NAME)).unwrap();
    std::fs::remove_file(dir.path().join("a")).unwrap();
    std::fs::write(dir.path().join("b"), b"bbbB").unwrap(); // same size, other bytes
    std::fs::write(dir.path().join("c"), b"cc").unwrap(); // other size
    std::fs::write(dir.path().join("d/new"), b"n").unwrap();
    let r = verify(dir.path()).unwrap();
    assert!(!r.is_clean());
    assert!(r.digest_ok());
    assert_eq!(r.missing, ["a"]);
    assert_eq!(r.extra, ["d/new"]);
    let changed: Vec<(&str, u64, bool)> =
        r.changed.iter().map(|c| (c.path.as_str(), c.actual_bytes, c.actual_sha256.is_some())).collect();
    assert_eq!(changed, [("b", 4, true), ("c", 2, false)]);
    // b and d/e hashed; c differs by size and is not read.
    assert_eq!((r.listed, r.hashed, r.bytes_hashed), (4, 2, 8));
}

#[test]
fn an_edited_manifest_fails_its_own_digest() {
    let dir = tree(&[("a", b"aaaa")]);
    let mut m = create(dir.path(), &[DEFAULT_NAME]).unwrap();
    m.excluded.push("secret-dir".into()); // hides a directory without re-digesting
    write(&m, &dir.path().join(DEFAULT_NAME)).unwrap();
    let r = verify(dir.path()).unwrap();
    assert!(!r.digest_ok());
    assert!(!r.is_clean());
    assert!(r.missing.is_empty() && r.extra.is_empty() && r.changed.is_empty());
}

#[test]
fn paths_inside_a_manifest_are_not_trusted() {
    let dir = tree(&[("a", b"aaaa")]);
    let sha = "0".repeat(64);
    for (path, why) in
        [("../outside", "not a relative path"), ("/etc/passwd", "not a relative path"), ("a//b", "not a")]
    {
        let text = format!(
            r#"{{"excluded":[],"file_count":1,"files":[{{"bytes":1,"path":"{path}","sha256":"{sha}"}}],"format":"trajkit.manifest/1","manifest_sha256":"","total_bytes":1}}"#
        );
        std::fs::write(dir.path().join(DEFAULT_NAME), text).unwrap();
        let err = verify(dir.path()).unwrap_err().to_string();
        assert!(err.contains("$.files[0].path") && err.contains(why), "{err}");
    }
    std::fs::write(dir.path().join(DEFAULT_NAME), "{\"format\": 1}").unwrap();
    let err = verify(dir.path()).unwrap_err().to_string();
    assert!(err.contains("manifest.json:1:"), "{err}");
}

#[cfg(unix)]
#[test]
fn symbolic_links_are_refused_on_create_and_reported_extra_on_verify() {
    let dir = tree(&[("a", b"aaaa")]);
    let m = create(dir.path(), &[DEFAULT_NAME]).unwrap();
    write(&m, &dir.path().join(DEFAULT_NAME)).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link")).unwrap();
    let err = create(dir.path(), &[DEFAULT_NAME]).unwrap_err();
    assert!(matches!(err, ManifestError::NotRegular(ref p) if p.ends_with("link")), "{err}");
    assert_eq!(verify(dir.path()).unwrap().extra, ["link"]);
}

#[test]
fn a_manifest_outside_the_tree_and_a_missing_root_are_handled() {
    let dir = tree(&[("a", b"aaaa")]);
    let out = tempfile::tempdir().unwrap();
    let m = create(dir.path(), &[]).unwrap();
    write(&m, &out.path().join("m.json")).unwrap();
    assert!(verify_with(dir.path(), &out.path().join("m.json")).unwrap().is_clean());
    assert!(matches!(create(&dir.path().join("nope"), &[]), Err(ManifestError::NotADirectory(_))));
}

/// A known entry stands for its file while the size matches (its digest is taken, not
/// recomputed); one whose size no longer matches is hashed again. Synthetic: the known
/// digest is made up so that taking it shows.
#[test]
fn known_entries_are_taken_while_their_size_matches() {
    let dir = tree(&[("a.txt", b"alpha"), ("b/c.txt", b"gamma!")]);
    let plain = create(dir.path(), &[]).unwrap();
    let taken = FileEntry { bytes: 5, path: "a.txt".into(), sha256: "0".repeat(64) };
    let stale = FileEntry { bytes: 99, path: "b/c.txt".into(), sha256: "1".repeat(64) };
    let m = create_with(dir.path(), &[], &[taken.clone(), stale]).unwrap();
    assert_eq!(m.files[0], taken);
    assert_eq!(m.files[1], plain.files[1]);
    assert_eq!(m.manifest_sha256, m.compute_digest());
    // With every entry known as it is, the manifest is the one hashing makes.
    assert_eq!(create_with(dir.path(), &[], &plain.files).unwrap(), plain);
}
