//! `trajkit-fuzz TARGET [--seconds N] [--seed N] [--replay FILE]`: the outcome-guided,
//! structure-aware mutation fuzzer over the real fixtures, an ordinary binary that needs no
//! instrumented build (the fallback beside AFL++; fuzz/README.md). An input whose outcome
//! signature is new joins the corpus; a panic is a crash, saved under `fuzz/artifacts/TARGET/`.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use trajkit_fuzz::mutate::{self, mutate, Rng};
use trajkit_fuzz::seeds::{self, Seed};
use trajkit_fuzz::targets;

/// Largest input tried: bigger ones only slow the loop down.
const MAX_LEN: usize = 8 << 20;
/// An execution slower than this is reported (and saved) as a hang.
const SLOW: Duration = Duration::from_secs(10);

/// The last panic's message and place (set by the panic hook, read after `catch_unwind`).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

struct Args {
    target: String,
    seconds: u64,
    seed: u64,
    replay: Option<PathBuf>,
    repo: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let target = it.next().ok_or_else(|| {
        format!(
            "usage: trajkit-fuzz TARGET [--seconds N] [--seed N] [--replay FILE] [--repo DIR]; targets: {}",
            targets::TARGETS.join(", ")
        )
    })?;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut args = Args { target, seconds: 20, seed: 1, replay: None, repo };
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<u64>().map_err(|e| format!("{flag} {value}: {e}"));
        match flag.as_str() {
            "--seconds" => args.seconds = number()?,
            "--seed" => args.seed = number()?,
            "--replay" => args.replay = Some(PathBuf::from(&value)),
            "--repo" => args.repo = PathBuf::from(&value),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(args)
}

/// Strings (keys and short values) of the seeds, used as replacement tokens.
fn harvest_words(seeds: &[Seed]) -> Vec<Vec<u8>> {
    let mut seen = HashSet::new();
    for s in seeds {
        for part in s.bytes.split(|b| *b == b'"').skip(1).step_by(2) {
            if (1..40).contains(&part.len()) && !part.contains(&b'\\') && seen.len() < 4000 {
                let mut w = Vec::with_capacity(part.len() + 2);
                w.push(b'"');
                w.extend_from_slice(part);
                w.push(b'"');
                seen.insert(w);
            }
        }
    }
    let mut words: Vec<Vec<u8>> = seen.into_iter().collect();
    words.sort();
    words
}

/// What one execution did.
enum Outcome {
    Signature(u64),
    Crash(String),
}

fn execute(target: &str, name: &str, input: &[u8], scratch: &Path) -> Outcome {
    match std::panic::catch_unwind(|| targets::run(target, name, input, scratch)) {
        Ok(sig) => {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            sig.hash(&mut h);
            Outcome::Signature(h.finish())
        }
        Err(_) => {
            let message = LAST_PANIC.lock().map(|mut m| m.take()).unwrap_or(None);
            Outcome::Crash(message.unwrap_or_else(|| "panic".into()))
        }
    }
}

fn save(dir: &Path, kind: &str, name: &str, input: &[u8]) -> PathBuf {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    input.hash(&mut h);
    let path = dir.join(format!("{kind}-{:016x}-{name}", h.finish()));
    let _ = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, input));
    path
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("trajkit-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut m) = LAST_PANIC.lock() {
            *m = Some(info.to_string());
        }
    }));
    match fuzz(&args) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("trajkit-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the target; returns the number of crashes and hangs found.
fn fuzz(args: &Args) -> Result<u64, String> {
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    let artifacts = args.repo.join("fuzz/artifacts").join(&args.target);
    if let Some(file) = &args.replay {
        let input = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let name = name.splitn(3, '-').nth(2).unwrap_or(&name).to_string();
        return Ok(match execute(&args.target, &name, &input, scratch.path()) {
            Outcome::Signature(s) => {
                println!("{}: no crash (signature {s:016x})", file.display());
                0
            }
            Outcome::Crash(m) => {
                println!("{}: CRASH {m}", file.display());
                1
            }
        });
    }
    let mut corpus = seeds::seeds(&args.target, &args.repo)?;
    let seeds = corpus.len();
    let words = harvest_words(&corpus);
    let mut signatures = HashSet::new();
    let (mut execs, mut crashes, mut hangs) = (0u64, 0u64, 0u64);
    let mut crash_messages = HashSet::new();
    let start = Instant::now();
    let budget = Duration::from_secs(args.seconds);
    let mut rng = Rng::new(args.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut next_seed = 0;
    while start.elapsed() < budget {
        // First every seed as it is, then mutants of random corpus entries.
        let (name, input) = if next_seed < corpus.len() {
            next_seed += 1;
            (corpus[next_seed - 1].name.clone(), corpus[next_seed - 1].bytes.clone())
        } else {
            let parent = &corpus[rng.below(corpus.len())];
            let other = &corpus[rng.below(corpus.len())].bytes;
            let mut child = parent.bytes.clone();
            if args.target == "sqlite" && rng.below(2) == 0 {
                mutate::sqlite_page_header(&mut child, &mut rng);
            } else {
                mutate(&mut child, other, &words, &mut rng);
            }
            child.truncate(MAX_LEN);
            (parent.name.clone(), child)
        };
        let t = Instant::now();
        let outcome = execute(&args.target, &name, &input, scratch.path());
        execs += 1;
        if t.elapsed() > SLOW {
            hangs += 1;
            let p = save(&artifacts, "slow", &name, &input);
            println!("{}: SLOW {:.1}s: {}", args.target, t.elapsed().as_secs_f64(), p.display());
        }
        match outcome {
            Outcome::Signature(sig) => {
                if signatures.insert(sig) && next_seed >= corpus.len() {
                    corpus.push(Seed { name, bytes: input });
                }
            }
            Outcome::Crash(message) => {
                crashes += 1;
                if crash_messages.insert(message.clone()) {
                    let p = save(&artifacts, "crash", &name, &input);
                    println!("{}: CRASH {message}\n  input: {}", args.target, p.display());
                }
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}: {execs} executions in {secs:.0} s ({:.0}/s), {} signatures, corpus {} ({seeds} seeds), {crashes} crashes ({} distinct), {hangs} slow",
        args.target,
        execs as f64 / secs.max(0.001),
        signatures.len(),
        corpus.len(),
        crash_messages.len()
    );
    Ok(crash_messages.len() as u64 + hangs)
}
