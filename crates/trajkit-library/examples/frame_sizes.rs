//! Measures the shard frame size (bench/frames.sh runs it on a release build): rewrites
//! the canonical records of a built library with each frame size and reports the shards'
//! compressed size against one frame per shard, the CPU time of writing them, and the
//! mean time to read one record by seeking (sampled rows, every 97th).
//! Usage: frame_sizes LIBRARY WORK_DIR [FRAME_KIB...]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use trajkit_library::seek::record_in_frame;
use trajkit_library::shards::ShardWriter;
use trajkit_library::{Library, Row};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(lib), Some(work)) = (args.first(), args.get(1)) else {
        return Err("usage: frame_sizes LIBRARY WORK_DIR [FRAME_KIB...]".into());
    };
    let lib = Library::open(Path::new(lib))?;
    let sizes: Vec<u64> = match args.get(2..) {
        Some(rest) if !rest.is_empty() => rest.iter().map(|s| s.parse()).collect::<Result<_, _>>()?,
        _ => vec![64, 256, 1024, 4096, 262_144],
    };
    let shard_bytes = lib.build_info()["options"]["shard_bytes"].as_u64().unwrap_or(256 << 20);
    let rows: Vec<Row> = lib.rows()?.collect::<Result<_, _>>()?;
    println!(
        "| frame KiB | shards MiB | vs one frame per shard | write s (CPU, one thread) | seek read ms (mean of {}) |",
        rows.len().div_ceil(97)
    );
    println!("|---|---|---|---|---|");
    let mut baseline = None;
    for kib in sizes.iter().rev() {
        let out = Path::new(work).join(format!("frames-{kib}"));
        let (bytes, write, placed) = rewrite(&lib, &rows, &out, shard_bytes, kib << 10)?;
        let base = *baseline.get_or_insert(bytes);
        let read = seek_reads(&out, &placed)?;
        println!(
            "| {kib} | {:.1} | {:+.2} % | {:.2} | {:.2} |",
            bytes as f64 / 1048576.0,
            (bytes as f64 / base as f64 - 1.0) * 100.0,
            write.as_secs_f64(),
            read.as_secs_f64() * 1000.0
        );
        std::fs::remove_dir_all(&out)?;
    }
    Ok(())
}

/// Writes every record of `lib` to `out` with `frame` bytes per frame; the shards' total
/// size, the time spent in the writer, and each sampled row placed anew.
fn rewrite(
    lib: &Library,
    rows: &[Row],
    out: &Path,
    shard_bytes: u64,
    frame: u64,
) -> Result<(u64, Duration, Vec<Row>), Box<dyn std::error::Error>> {
    let mut writer = ShardWriter::new(&out.join("canonical"), shard_bytes, 1)?.with_frame_bytes(frame);
    let mut spent = Duration::ZERO;
    let mut placed = Vec::new();
    let mut shard: Option<(String, Box<dyn BufRead>)> = None;
    let mut line = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if shard.as_ref().map(|(n, _)| n) != Some(&row.shard) {
            let file = std::fs::File::open(lib.root().join(&row.shard))?;
            let reader = std::io::BufReader::with_capacity(1 << 20, zstd::stream::read::Decoder::new(file)?);
            shard = Some((row.shard.clone(), Box::new(reader)));
        }
        line.clear();
        if let Some((_, reader)) = shard.as_mut() {
            reader.read_until(b'\n', &mut line)?;
        }
        let start = Instant::now();
        let at = writer.append(&line)?;
        spent += start.elapsed();
        if i % 97 == 0 {
            let mut r = row.clone();
            at.fill(&mut r);
            placed.push(r);
        }
    }
    let start = Instant::now();
    writer.finish()?;
    spent += start.elapsed();
    let mut bytes = 0;
    for e in std::fs::read_dir(out.join("canonical"))? {
        bytes += e?.metadata()?.len();
    }
    Ok((bytes, spent, placed))
}

/// Mean time to read each placed row by seeking to its frame.
fn seek_reads(out: &Path, placed: &[Row]) -> Result<Duration, Box<dyn std::error::Error>> {
    let start = Instant::now();
    for r in placed {
        let path: PathBuf = out.join(&r.shard);
        record_in_frame(&path, r, r.shard_offset.unwrap_or(0), r.frame_offset.unwrap_or(0))?;
    }
    Ok(start.elapsed() / placed.len().max(1) as u32)
}
