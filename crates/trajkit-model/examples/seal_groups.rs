//! Measures step 136 (docs/PERFORMANCE.md): the time to hash `build`'s two digests of each
//! record (content and interaction) with the record's two messages side by side, as before,
//! against eight records' sixteen messages at a time (`canonical::seal_written_with`), as
//! the pipeline's groups do now. The records are canonical JSON Lines (`trajkit convert`).
//! Usage: cargo run --release -p trajkit-model --example seal_groups -- FILE.jsonl

use std::time::Instant;

use trajkit_model::canonical::{seal_written_with, write_unsealed, Unsealed};
use trajkit_model::interaction::write_interaction;
use trajkit_model::Trajectory;

/// Repeats of each measurement (the best is reported: the machine is shared).
const ROUNDS: usize = 5;

/// One record written as `build` writes it: canonical text awaiting its digest, and its
/// interaction's JSON.
struct Written {
    text: Vec<u8>,
    unsealed: Option<Unsealed>,
    interaction: Vec<u8>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(path) = std::env::args().nth(1) else {
        return Err("usage: seal_groups FILE.jsonl".into());
    };
    let data = std::fs::read_to_string(&path)?;
    let mut records = Vec::new();
    for line in data.lines() {
        let Ok(mut t) = serde_json::from_str::<Trajectory>(line) else { continue };
        let (mut text, mut interaction) = (Vec::new(), Vec::new());
        let unsealed = write_unsealed(&mut t, &mut text)?;
        write_interaction(&t, &mut interaction)?;
        records.push(Written { text, unsealed, interaction });
    }
    let bytes: usize = records.iter().map(|r| r.text.len() + r.interaction.len()).sum();
    println!("{} records, {bytes} bytes of content and interaction", records.len());
    for group in [1, 2, 4, 8] {
        let seconds = best(|| {
            for chunk in records.chunks_mut(group) {
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
        println!("groups of {group}: {:.3} s, {:.2} GB/s", seconds, bytes as f64 / seconds / 1e9);
    }
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
