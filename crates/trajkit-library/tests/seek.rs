//! Seekable shards (docs/library.md, layout): every record of the example library read by
//! seeking to its zstd frame equals the record the sequential reader streams, the shards
//! stay one ordinary zstd stream, and the same records written with small frames (to get
//! many frames from a small corpus) read back the same way.

mod common;

use std::io::BufRead;
use std::path::{Path, PathBuf};

use trajkit_library::seek::record_in_frame;
use trajkit_library::shards::ShardWriter;
use trajkit_library::{Library, Row};
use trajkit_model::Trajectory;

/// The example library (`examples/sources.toml`), built into `dir/lib`.
fn example_library(dir: &Path) -> Library {
    let registry = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sources.toml");
    let lib = common::build_lib(dir, &[], Some(registry));
    Library::open(&lib).expect("open")
}

/// Every row with its record, read sequentially (the shard streamed from its start).
fn sequential(lib: &Library) -> Vec<(Row, Trajectory)> {
    lib.records().expect("records").collect::<Result<Vec<_>, _>>().expect("read")
}

/// The lines of a shard decoded as one zstd stream, the way any zstd tool reads it.
fn stream_lines(path: &Path) -> Vec<String> {
    let file = std::fs::File::open(path).expect("shard");
    let decoder = zstd::stream::read::Decoder::new(file).expect("zstd");
    std::io::BufReader::new(decoder).lines().collect::<Result<_, _>>().expect("lines")
}

#[test]
fn a_frame_seek_reads_every_record_of_the_example_library_as_the_sequential_reader_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = example_library(dir.path());
    let all = sequential(&lib);
    assert_eq!(all.len(), 38);
    for (row, record) in &all {
        assert!(row.shard_offset.is_some() && row.frame_offset.is_some(), "{}: placed", row.id);
        assert_eq!(&lib.record_at(row).expect("seek read"), record, "{}", row.id);
        // A row without offsets (a library built before frames) is found by its line.
        let legacy = Row { shard_offset: None, frame_offset: None, ..row.clone() };
        assert_eq!(&lib.record_at(&legacy).expect("line read"), record, "{}", row.id);
    }
    // One shard; the example corpus's canonical JSON spans two 1 MiB frames.
    let frames: std::collections::BTreeSet<(String, u64)> =
        all.iter().map(|(r, _)| (r.shard.clone(), r.shard_offset.unwrap_or(u64::MAX))).collect();
    assert_eq!(frames.len(), 2, "{frames:?}");
    let (first, _) = &all[0];
    assert_eq!((first.shard_offset, first.frame_offset), (Some(0), Some(0)));
    // The index and the rows file hold the same offsets.
    let index =
        common::column(lib.root(), "SELECT shard_offset || ':' || frame_offset FROM trajectories ORDER BY ordinal");
    let rows: Vec<String> =
        all.iter().map(|(r, _)| format!("{}:{}", r.shard_offset.unwrap_or(0), r.frame_offset.unwrap_or(0))).collect();
    assert_eq!(index, rows);
    // The multi-frame shard is one ordinary zstd stream of the records, one per line.
    let lines = stream_lines(&lib.root().join("canonical/part-00000.jsonl.zst"));
    assert_eq!(lines.len(), 38);
}

#[test]
fn small_frames_and_shards_read_back_by_seeking_and_as_one_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = example_library(dir.path());
    let all = sequential(&lib);
    let out = dir.path().join("reframed");
    // 8 KiB frames in 256 KiB shards: many frames and several shards from 38 records.
    let mut writer = ShardWriter::new(&out.join("canonical"), 256 << 10, 1).expect("writer").with_frame_bytes(8 << 10);
    let source = stream_lines(&lib.root().join("canonical/part-00000.jsonl.zst"));
    let mut placed = Vec::new();
    for (row, _) in &all {
        assert_eq!(row.shard, "canonical/part-00000.jsonl.zst");
        let mut line = source[row.shard_line as usize - 1].clone().into_bytes();
        line.push(b'\n');
        let mut r = row.clone();
        writer.append(&line).expect("append").fill(&mut r);
        placed.push((r, line));
    }
    let shards = writer.finish().expect("finish");
    let frames: std::collections::BTreeSet<(String, Option<u64>)> =
        placed.iter().map(|(r, _)| (r.shard.clone(), r.shard_offset)).collect();
    assert!(shards > 1 && frames.len() > 2 * shards as usize, "{shards} shards, {} frames", frames.len());
    for ((r, _), (_, record)) in placed.iter().zip(&all) {
        let path: PathBuf = out.join(&r.shard);
        let got = record_in_frame(&path, r, r.shard_offset.unwrap_or(0), r.frame_offset.unwrap_or(0)).expect("seek");
        assert_eq!(&got, record, "{}", r.id);
        assert_eq!(r.frame_offset == Some(0), frames_start_here(&placed, r), "{}", r.id);
    }
    // Each shard decodes as one stream to its records' lines, in order.
    let mut expected: Vec<String> = Vec::new();
    for n in 0..shards {
        let name = format!("canonical/part-{n:05}.jsonl.zst");
        expected.clear();
        expected.extend(
            placed
                .iter()
                .filter(|(r, _)| r.shard == name)
                .map(|(_, l)| String::from_utf8_lossy(&l[..l.len() - 1]).into_owned()),
        );
        assert_eq!(stream_lines(&out.join(&name)), expected, "{name}");
    }
    // A wrong offset is an error naming the shard, never a panic or a wrong record.
    let (r, _) = &placed[1];
    let err = record_in_frame(&out.join(&r.shard), r, 0, 1 << 30).expect_err("past the frame");
    assert!(err.to_string().contains("ends before the record"), "{err}");
}

/// The first record of each frame starts it (offset 0); the others do not.
fn frames_start_here(placed: &[(Row, Vec<u8>)], r: &Row) -> bool {
    placed.iter().find(|(p, _)| p.shard == r.shard && p.shard_offset == r.shard_offset).map(|(p, _)| &p.id)
        == Some(&r.id)
}
