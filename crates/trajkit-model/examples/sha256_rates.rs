//! Measures SHA-256 rates on this CPU (docs/PERFORMANCE.md, steps 115–116): `sha2` one
//! message at a time against `sha256_many` (two lanes side by side) on the lines of a JSON
//! Lines file, in groups of 2, 8 and all lines, and on equal 32 KiB messages. Where the lines
//! are canonical records (`trajkit convert`), also `build`'s two digests of each record
//! (content and interaction) hashed a record at a time against groups of 2, 4 and 8 records
//! (`canonical::seal_written_with`, step 136).
//! Usage: cargo run --release -p trajkit-model --example sha256_rates -- FILE.jsonl

use std::time::Instant;

use sha2::{Digest, Sha256};
use trajkit_model::canonical::{seal_written_with, write_unsealed, Unsealed};
use trajkit_model::interaction::write_interaction;
use trajkit_model::sha256_many::sha256_many;
use trajkit_model::Trajectory;

/// Repeats of each measurement (the best is reported: the machine is shared).
const ROUNDS: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(path) = std::env::args().nth(1) else {
        return Err("usage: sha256_rates FILE.jsonl".into());
    };
    let data = std::fs::read(&path)?;
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let equal: Vec<&[u8]> = data.chunks_exact(32 << 10).collect();
    for (name, messages) in [("lines", &lines), ("32 KiB pieces", &equal)] {
        let bytes: usize = messages.iter().map(|m| m.len()).sum();
        let rate = |seconds: f64| bytes as f64 / seconds / 1e9;
        let one = best(|| {
            std::hint::black_box(messages.iter().map(|m| Sha256::digest(m)[0] as usize).sum::<usize>());
        });
        print!("{name} ({} messages, {bytes} bytes): sha2 {:.2} GB/s", messages.len(), rate(one));
        for group in [2, 8, messages.len()] {
            let seconds = best(|| {
                let mut out = vec![[0u8; 32]; group];
                for chunk in messages.chunks(group) {
                    let pieces: Vec<[&[u8]; 1]> = chunk.iter().map(|m| [*m]).collect();
                    let refs: Vec<&[&[u8]]> = pieces.iter().map(|p| &p[..]).collect();
                    sha256_many(&refs, &mut out);
                    std::hint::black_box(&out);
                }
            });
            print!(", sha256_many by {group} {:.2} GB/s", rate(seconds));
        }
        println!();
    }
    let text = std::str::from_utf8(&data)?;
    seal_groups(&mut text.lines().filter_map(|l| serde_json::from_str::<Trajectory>(l).ok()))
}

/// One record written as `build` writes it: canonical text awaiting its digest, and its
/// interaction's JSON.
struct Written {
    text: Vec<u8>,
    unsealed: Option<Unsealed>,
    interaction: Vec<u8>,
}

/// Times the content and interaction digests of `records` sealed in groups of 1, 2, 4 and 8.
fn seal_groups(records: &mut dyn Iterator<Item = Trajectory>) -> Result<(), Box<dyn std::error::Error>> {
    let mut written = Vec::new();
    for mut t in records {
        let (mut text, mut interaction) = (Vec::new(), Vec::new());
        let unsealed = write_unsealed(&mut t, &mut text)?;
        write_interaction(&t, &mut interaction)?;
        written.push(Written { text, unsealed, interaction });
    }
    if written.is_empty() {
        return Ok(());
    }
    let bytes: usize = written.iter().map(|r| r.text.len() + r.interaction.len()).sum();
    print!("records ({}, {bytes} bytes of content and interaction):", written.len());
    for group in [1, 2, 4, 8] {
        let seconds = best(|| {
            for chunk in written.chunks_mut(group) {
                let (mut open, mut others, mut slots) = (Vec::new(), Vec::new(), Vec::new());
                for Written { text, unsealed, interaction } in chunk.iter_mut() {
                    others.push(interaction.as_slice());
                    if let Some(u) = unsealed.take() {
                        open.push((text, u));
                        slots.push(unsealed);
                    }
                }
                std::hint::black_box(seal_written_with(&mut open, &others));
                for (slot, (_, u)) in slots.into_iter().zip(open) {
                    *slot = Some(u);
                }
            }
        });
        print!(" groups of {group} {:.2} GB/s", bytes as f64 / seconds / 1e9);
    }
    println!();
    Ok(())
}

/// The shortest of `ROUNDS` timings of `f`, in seconds.
fn best(mut f: impl FnMut()) -> f64 {
    (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}
