//! `trajkit manifest create|verify`: publication manifests (docs/manifest.md).

use crate::pipe::outln;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use trajkit_verify::manifest::{self, VerifyReport};

/// `trajkit manifest ...`
#[derive(Args)]
pub struct ManifestArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// List every file under DIR with size and SHA-256, plus a digest of the manifest.
    Create {
        /// The publication tree.
        dir: PathBuf,
        /// Where to write the manifest (default DIR/manifest.json); written atomically.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Relative path (file or directory) to leave out; repeatable.
        #[arg(long, value_name = "REL")]
        exclude: Vec<String>,
        /// Hashing threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Compare DIR with its manifest: exit 0 clean, 1 differences, 2 error.
    Verify {
        /// The publication tree.
        dir: PathBuf,
        /// The manifest to check against (default DIR/manifest.json).
        #[arg(long)]
        manifest: Option<PathBuf>,
        /// Also require the manifest's digest to be this one (64 hex digits).
        #[arg(long, value_name = "HEX")]
        digest: Option<String>,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Hashing threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
    },
}

pub fn run(args: &ManifestArgs) -> Result<u8> {
    match &args.action {
        Action::Create { dir, output, exclude, threads } => create(dir, output.as_deref(), exclude, *threads),
        Action::Verify { dir, manifest, digest, json, threads } => {
            verify(dir, manifest.as_deref(), digest.as_deref(), *json, *threads)
        }
    }
}

/// Sizes the global rayon pool (0 or absent: all cores).
pub fn threads(n: Option<usize>) -> Result<()> {
    rayon::ThreadPoolBuilder::new().num_threads(n.unwrap_or(0)).build_global()?;
    Ok(())
}

fn create(dir: &Path, output: Option<&Path>, exclude: &[String], n: Option<usize>) -> Result<u8> {
    threads(n)?;
    let output = output.map(Path::to_path_buf).unwrap_or_else(|| dir.join(manifest::DEFAULT_NAME));
    let mut excluded: Vec<&str> = exclude.iter().map(String::as_str).collect();
    let inside = manifest::relative_inside(dir, &output);
    if let Some(rel) = &inside {
        excluded.push(rel);
    }
    let m = manifest::create(dir, &excluded)?;
    manifest::write(&m, &output)?;
    outln!("{}", m.manifest_sha256);
    eprintln!("wrote {}: {} files, {} bytes", output.display(), m.file_count, m.total_bytes);
    Ok(0)
}

fn verify(dir: &Path, path: Option<&Path>, digest: Option<&str>, json: bool, n: Option<usize>) -> Result<u8> {
    threads(n)?;
    if let Some(d) = digest {
        if d.len() != 64 || !d.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!("--digest: {d:?} is not 64 hex digits");
        }
    }
    let path = path.map(Path::to_path_buf).unwrap_or_else(|| dir.join(manifest::DEFAULT_NAME));
    let report = manifest::verify_with(dir, &path).with_context(|| format!("verifying {}", dir.display()))?;
    let expected_ok = digest.is_none_or(|d| d.eq_ignore_ascii_case(&report.recorded_digest));
    let clean = report.is_clean() && expected_ok;
    if json {
        let mut v = serde_json::to_value(&report)?;
        v["clean"] = clean.into();
        outln!("{v}");
    } else {
        print_findings(&report, digest.filter(|_| !expected_ok));
    }
    eprintln!(
        "{}: {} listed, {} hashed ({} bytes): {} missing, {} extra, {} changed, digest {}",
        report.manifest,
        report.listed,
        report.hashed,
        report.bytes_hashed,
        report.missing.len(),
        report.extra.len(),
        report.changed.len(),
        if report.digest_ok() && expected_ok { "ok" } else { "MISMATCH" }
    );
    Ok(u8::from(!clean))
}

fn print_findings(r: &VerifyReport, wrong_expected: Option<&str>) {
    for p in &r.missing {
        outln!("missing  {p}");
    }
    for p in &r.extra {
        outln!("extra    {p}");
    }
    for c in &r.changed {
        if c.actual_sha256.is_some() {
            outln!("changed  {} (same size, sha256 differs)", c.path);
        } else {
            outln!("changed  {} (bytes {} -> {})", c.path, c.expected_bytes, c.actual_bytes);
        }
    }
    if !r.digest_ok() {
        outln!("manifest digest mismatch: recorded {}, computed {}", r.recorded_digest, r.computed_digest);
    }
    if let Some(d) = wrong_expected {
        outln!("manifest digest is {}, expected {}", r.recorded_digest, d.to_ascii_lowercase());
    }
}
