//! The record size limit on real files: lines, documents and `.eval` archive members over
//! the limit are rejected as `record_too_large` where they are, and the rest is read.

mod common;

use common::{read_with, real};
use trajkit_formats::{Options, Reason};

fn limited(bytes: usize) -> Options {
    Options { records: true, max_record_bytes: Some(bytes), ..Options::default() }
}

#[test]
fn lines_over_the_limit_are_rejected_with_their_line_and_the_others_read() {
    // Lines of tau2__example_rollouts.jsonl: 62,929 / 89,581 / 61,274 / 87,430 / 86,897 bytes.
    let c = read_with(&[real("gym/tau2__example_rollouts.jsonl")], limited(80_000));
    let lines: Vec<Option<u64>> = c.trajectories.iter().map(|t| t.provenance.line).collect();
    assert_eq!(lines, [Some(1), Some(3)]);
    let rejected: Vec<(Option<u64>, Reason)> = c.rejections.iter().map(|r| (r.line, r.reason)).collect();
    let too_large = Reason::RecordTooLarge;
    assert_eq!(rejected, [(Some(2), too_large), (Some(4), too_large), (Some(5), too_large)]);
    assert_eq!(c.rejections[0].problems[0].message, "record larger than the record size limit (80000 bytes); not read");
    let all = read_with(&[real("gym/tau2__example_rollouts.jsonl")], limited(1 << 20));
    assert_eq!(c.trajectories[0], all.trajectories[0]);
    assert_eq!(c.trajectories[1], all.trajectories[2]);
}

#[test]
fn a_document_over_the_limit_is_rejected_whole() {
    // The .traj is 104,975 bytes.
    let path = real("swe_agent_traj/pydicom__pydicom-1458.traj");
    let c = read_with(std::slice::from_ref(&path), limited(100_000));
    let r = &c.reports[0];
    assert_eq!((r.format.as_deref(), r.records, r.trajectories, r.rejected), (Some("swe-agent"), 1, 0, 1));
    assert_eq!((c.rejections[0].document_index, c.rejections[0].reason), (Some(0), Reason::RecordTooLarge));
    let c = read_with(&[path], limited(110_000));
    assert_eq!((c.reports[0].trajectories, c.reports[0].steps), (1, 26));
}

#[test]
fn eval_members_over_the_limit_are_rejected_and_the_other_samples_read() {
    // Samples of this log are 7,624 to 7,855 bytes decompressed; four exceed 7,800. The
    // archive itself (larger than the limit) is held compressed.
    let path = real("inspect/scorer_logs__2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval");
    let c = read_with(&[path], limited(7_800));
    let r = &c.reports[0];
    assert_eq!((r.records, r.trajectories, r.steps, r.rejected), (10, 6, 18, 4));
    assert_eq!(r.reasons.get("record_too_large"), Some(&4));
}
