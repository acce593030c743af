//! Exact bytes of schedules for a fixed root seed. The expected digests and seeds were
//! computed independently by the Python reference in docs/schedule.md (hashlib, json).

use super::*;

const ROOT: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn default_arms() -> Vec<String> {
    names(&DEFAULT_ARMS)
}

#[test]
fn block_seeds_follow_the_documented_encoding() {
    let root = parse_seed(ROOT).unwrap();
    let mut encoded = b"trajkit.schedule/1\0".to_vec();
    encoded.extend_from_slice(&root);
    encoded.extend_from_slice(&[0, 0, 0, 1]);
    assert_eq!(encoded.len(), 55);
    assert_eq!(block_seed(&root, 1), <[u8; 32]>::from(Sha256::digest(&encoded)));
    let hex = |i| trajkit_model::canonical::hex(&block_seed(&root, i));
    assert_eq!(hex(0), "ab2b4dd02e1ef71d569e213a4b7df49e851782d1089a840f7350bdadf05737b4");
    assert_eq!(hex(1), "edea0e847208f037cadf45199bfa32ef50dc0a4c09c6a3c36f37e820e13fdc21");
}

#[test]
fn the_default_schedule_has_exact_bytes() {
    let s = build(ROOT, &names(&["gmail", "phone"]), &default_arms(), 32).unwrap();
    assert_eq!((s.blocks.len(), s.candidates.len()), (32, 96));
    let bytes = to_json(&s);
    assert_eq!(bytes.len(), 23821);
    assert_eq!(trajkit_model::sha256_hex(&bytes), "64a3f2748c84f59937fb6f20e7e6a619f6cc6e17d1134b8fe2e9a64cfb858986");
    let apps: Vec<&str> = s.blocks.iter().take(8).map(|b| b.app.as_str()).collect();
    assert_eq!(apps, ["gmail", "phone", "gmail", "gmail", "phone", "gmail", "gmail", "phone"]);
    // Upper-case hex gives the same schedule.
    assert_eq!(build(&ROOT.to_uppercase(), &names(&["gmail", "phone"]), &default_arms(), 32).unwrap(), s);
}

#[test]
fn blocks_are_paired_and_apps_balanced() {
    let apps = names(&["gmail", "phone", "maps"]);
    let s = build(ROOT, &apps, &names(&["base", "tool"]), 32).unwrap();
    for b in &s.blocks {
        let members: Vec<&Candidate> = s.candidates.iter().filter(|c| c.block == b.index).collect();
        assert_eq!(members.len(), 2);
        assert!(members.iter().all(|c| c.seed == b.seed && c.app == b.app));
        assert_eq!(b.candidates, members.iter().map(|c| c.id.clone()).collect::<Vec<_>>());
    }
    let per_app: Vec<usize> = apps.iter().map(|a| s.blocks.iter().filter(|b| &b.app == a).count()).collect();
    assert_eq!(per_app, [11, 11, 10]);
    assert_eq!(s.candidates[0].id, "b00-base");
    let big = build(ROOT, &apps, &default_arms(), 1000).unwrap();
    assert_eq!(big.candidates[2999].id, "b999-C");
}

#[test]
fn bad_inputs_are_refused() {
    let apps = names(&["gmail"]);
    assert_eq!(build("00", &apps, &default_arms(), 32), Err(ScheduleError::Seed("00".into())));
    assert!(matches!(build(&"g".repeat(64), &apps, &default_arms(), 32), Err(ScheduleError::Seed(_))));
    assert_eq!(build(ROOT, &[], &default_arms(), 32), Err(ScheduleError::NoApps));
    assert_eq!(build(ROOT, &apps, &names(&["A"]), 32), Err(ScheduleError::TooFewArms));
    assert_eq!(
        build(ROOT, &names(&["a", "a"]), &default_arms(), 32),
        Err(ScheduleError::Duplicate { what: "--app", name: "a".into() })
    );
    assert!(matches!(build(ROOT, &names(&["my app"]), &default_arms(), 32), Err(ScheduleError::BadName { .. })));
    assert_eq!(build(ROOT, &apps, &default_arms(), 0), Err(ScheduleError::Blocks(0)));
}
