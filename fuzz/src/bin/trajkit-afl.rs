//! `trajkit-afl TARGET`: the AFL++ entry point (coverage-guided, persistent mode), built by
//! `cargo afl build` with the `afl` feature; each input is framed as `name NUL bytes` and run
//! by the target's one harness function (`targets::run_framed`).
//! `trajkit-afl seeds TARGET DIR`: writes the target's AFL++ seeds, cut from the real fixtures.

use std::path::Path;
use std::process::ExitCode;

use trajkit_fuzz::{seeds, targets};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [cmd, target, dir] if cmd == "seeds" => match write_seeds(target, Path::new(dir)) {
            Ok(n) => {
                println!("{target}: {n} seeds in {dir}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("trajkit-afl: {e}");
                ExitCode::from(2)
            }
        },
        [target] if targets::TARGETS.contains(&target.as_str()) => {
            let scratch = match tempfile::tempdir() {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("trajkit-afl: scratch directory: {e}");
                    return ExitCode::from(2);
                }
            };
            let dir = scratch.path();
            afl::fuzz!(|data: &[u8]| {
                targets::run_framed(target, data, dir);
            });
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!(
                "usage: trajkit-afl TARGET | trajkit-afl seeds TARGET DIR; targets: {}",
                targets::TARGETS.join(", ")
            );
            ExitCode::from(2)
        }
    }
}

/// Writes the seeds of `target` as `DIR/seed-NNN`; returns how many.
fn write_seeds(target: &str, dir: &Path) -> Result<usize, String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let all = seeds::afl_seeds(target, &repo)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (i, seed) in all.iter().enumerate() {
        let path = dir.join(format!("seed-{i:03}"));
        std::fs::write(&path, seed).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(all.len())
}
