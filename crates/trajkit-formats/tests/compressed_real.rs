//! Compressed input written the way parallel compressors and log rotation write it: several
//! zstd frames (`pzstd`, `zstd -T0 --rsyncable` chunks, `cat a.zst b.zst`) and several gzip
//! members (`pigz --independent`, `cat a.gz b.gz`) in one file. Every frame and member is
//! read, so the figures equal the plain file's. The content is a real Gym fixture; only the
//! framing is made here.

mod common;

use std::io::Write;

use common::{read, real};

const FIXTURE: &str = "gym/aviary__example_rollouts.jsonl";

/// The fixture cut in two at a line boundary.
fn halves() -> (Vec<u8>, Vec<u8>) {
    let bytes = std::fs::read(real(FIXTURE)).unwrap();
    let mid = bytes.len() / 2;
    let cut = mid + bytes[mid..].iter().position(|&b| b == b'\n').unwrap() + 1;
    (bytes[..cut].to_vec(), bytes[cut..].to_vec())
}

fn zstd_frame(b: &[u8]) -> Vec<u8> {
    zstd::encode_all(b, 1).unwrap()
}

fn gzip_member(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// (records, trajectories, steps, tool calls, rejected) of one file.
fn figures(path: &std::path::Path) -> (u64, u64, u64, u64, u64) {
    let c = read(&[path.to_path_buf()]);
    let r = &c.reports[0];
    assert!(r.error.is_none(), "{:?}", r.error);
    (r.records, r.trajectories, r.steps, r.tool_calls, r.rejected)
}

#[test]
fn every_zstd_frame_and_gzip_member_is_read() {
    let plain = figures(&real(FIXTURE));
    assert!(plain.1 > 1, "the fixture has several trajectories: {plain:?}");
    let (a, b) = halves();
    let dir = tempfile::tempdir().unwrap();
    let zst = dir.path().join("rollouts.jsonl.zst");
    std::fs::write(&zst, [zstd_frame(&a), zstd_frame(&b)].concat()).unwrap();
    let gz = dir.path().join("rollouts.jsonl.gz");
    std::fs::write(&gz, [gzip_member(&a), gzip_member(&b)].concat()).unwrap();
    assert_eq!(figures(&zst), plain, "two zstd frames");
    assert_eq!(figures(&gz), plain, "two gzip members");
}
