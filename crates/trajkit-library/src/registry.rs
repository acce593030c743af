//! The source registry (`sources.toml`): which files belong to which source, and what
//! each source may be used for. Without a registry every top-level input is a source.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};
pub use trajkit_model::SuccessRule;

use crate::error::LibraryError;

/// What a source may be used for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// May enter training exports (when a record is eligible).
    #[default]
    Training,
    /// Held out: every task it contains is `protected_evaluation` in every source.
    EvaluationOnly,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Training => "training",
            Role::EvaluationOnly => "evaluation_only",
        }
    }
}

/// One source as `sources.toml` declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Unique name, used in rows, stats and exports.
    pub name: String,
    /// Files, directories or globs (relative to the registry file) the source covers.
    pub paths: Vec<String>,
    /// Reader family to force, or `auto` (default) to detect per file.
    #[serde(default = "auto")]
    pub format: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Task family: swe, terminal, tool-use, web ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Version or pin (commit, dataset revision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default)]
    pub role: Role,
    /// Success rule for sources whose outcome is a reward, e.g. `reward >= 1.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<String>,
    /// A mapping file (relative to the registry file) that reads the source's in-house
    /// shape (docs/formats/mapping.md); excludes `format`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping: Option<String>,
}

fn auto() -> String {
    "auto".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryFile {
    #[serde(default, rename = "source")]
    sources: Vec<Source>,
}

/// A source with its paths resolved and its rule parsed.
#[derive(Debug, Clone)]
pub struct ResolvedSource {
    pub source: Source,
    pub rule: Option<SuccessRule>,
    /// Plain paths (files or directories) the source covers.
    prefixes: Vec<PathBuf>,
    /// Glob patterns (absolute) the source covers.
    globs: Vec<GlobMatcher>,
    /// Where to look for files: the plain paths and the fixed prefix of each glob.
    pub roots: Vec<PathBuf>,
    /// What the library's paths are relative to: the registry's directory, or the input
    /// argument (its directory for a file), so they do not depend on the working directory.
    pub base: SourceBase,
    /// The source's mapping file, absolute.
    pub mapping: Option<PathBuf>,
}

/// A source's base directory, as the user named it and canonical.
#[derive(Debug, Clone)]
pub struct SourceBase {
    pub given: PathBuf,
    pub canonical: PathBuf,
}

impl SourceBase {
    fn new(given: &Path) -> SourceBase {
        SourceBase {
            given: given.to_path_buf(),
            canonical: given.canonicalize().unwrap_or_else(|_| given.to_path_buf()),
        }
    }

    /// `file` relative to the base: lexically when it was found below it, else from the
    /// canonical paths (with `..` for a file outside the base).
    pub fn relative(&self, file: &Path) -> PathBuf {
        if let Ok(rel) = file.strip_prefix(&self.given) {
            if !rel.as_os_str().is_empty() {
                return rel.to_path_buf();
            }
        }
        let abs = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
        let common = self.canonical.components().zip(abs.components()).take_while(|(a, b)| a == b).count();
        let mut rel: PathBuf = self.canonical.components().skip(common).map(|_| "..").collect();
        rel.extend(abs.components().skip(common));
        rel
    }
}

impl ResolvedSource {
    /// The format to force on this source's files: its mapping (`mapping:PATH`), its
    /// `format`, or when that is `auto` the build's `--format` (`default`).
    pub fn forced_format(&self, default: Option<&String>) -> Option<String> {
        match (&self.mapping, self.source.format.as_str()) {
            (Some(m), _) => Some(format!("{}{}", trajkit_formats::mapping::FORMAT_PREFIX, m.display())),
            (None, "auto") => default.cloned(),
            (None, f) => Some(f.to_string()),
        }
    }

    /// True when `path` (absolute, canonical) belongs to this source.
    pub fn covers(&self, path: &Path) -> bool {
        self.prefixes.iter().any(|p| path.starts_with(p)) || self.globs.iter().any(|g| g.is_match(path))
    }
}

/// The sources of a build, in registry order.
#[derive(Debug, Clone)]
pub struct Registry {
    pub sources: Vec<ResolvedSource>,
    /// The registry file, when there is one.
    pub file: Option<PathBuf>,
}

impl Registry {
    /// Loads and checks `sources.toml`; paths resolve against its directory.
    pub fn load(path: &Path) -> Result<Registry, LibraryError> {
        let text = std::fs::read_to_string(path).map_err(LibraryError::io(path))?;
        let file: RegistryFile = toml::from_str(&text)
            .map_err(|e| LibraryError::Invalid { path: path.to_path_buf(), message: e.to_string() })?;
        let given = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let base = given.canonicalize().map_err(LibraryError::io(given))?;
        let mut sources = Vec::new();
        for (i, source) in file.sources.into_iter().enumerate() {
            let name = source.name.clone();
            let invalid = |message: String| LibraryError::Invalid {
                path: path.to_path_buf(),
                message: format!("source[{i}] ({name}): {message}"),
            };
            if source.name.is_empty() {
                return Err(invalid("`name` is empty".into()));
            }
            if sources.iter().any(|s: &ResolvedSource| s.source.name == source.name) {
                return Err(invalid("duplicate source name".into()));
            }
            if source.paths.is_empty() {
                return Err(invalid("`paths` is empty".into()));
            }
            let rule = match &source.success {
                Some(text) => Some(SuccessRule::parse(text).ok_or_else(|| {
                    invalid(format!("`success` {text:?} is not `reward OP NUMBER` (OP: >=, >, <=, <, ==)"))
                })?),
                None => None,
            };
            sources.push(resolve(source, rule, &base, given).map_err(invalid)?);
        }
        if sources.is_empty() {
            return Err(LibraryError::Invalid { path: path.to_path_buf(), message: "no [[source]] entries".into() });
        }
        Ok(Registry { sources, file: Some(path.to_path_buf()) })
    }

    /// The default: each top-level input path is one training source named after it.
    pub fn from_inputs(inputs: &[PathBuf]) -> Registry {
        let mut sources: Vec<ResolvedSource> = Vec::new();
        for input in inputs {
            let abs = input.canonicalize().unwrap_or_else(|_| input.clone());
            let mut name = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .filter(|n| !n.is_empty() && n != "." && n != "..")
                .unwrap_or_else(|| abs.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or("input".into()));
            let stem = name.clone();
            let mut k = 2;
            while sources.iter().any(|s| s.source.name == name) {
                name = format!("{stem}-{k}");
                k += 1;
            }
            let source = Source {
                name,
                paths: vec![input.display().to_string()],
                format: auto(),
                license: None,
                family: None,
                version: None,
                role: Role::Training,
                success: None,
                mapping: None,
            };
            let base = if abs.is_dir() { input.as_path() } else { trajkit_io::parent_dir(input) };
            sources.push(ResolvedSource {
                source,
                rule: None,
                prefixes: vec![abs.clone()],
                globs: vec![],
                roots: vec![input.clone()],
                base: SourceBase::new(base),
                mapping: None,
            });
        }
        Registry { sources, file: None }
    }

    /// The first source covering `real`, a path already canonical (or as given when it
    /// cannot be resolved).
    pub fn source_of(&self, real: &Path) -> Option<usize> {
        self.sources.iter().position(|s| s.covers(real))
    }
}

/// Resolves a source's paths against the registry's directory: `base` canonical (for
/// matching), `given` as the user named it (for reading, so reported paths stay relative).
fn resolve(source: Source, rule: Option<SuccessRule>, base: &Path, given: &Path) -> Result<ResolvedSource, String> {
    let mut prefixes = Vec::new();
    let mut globs = Vec::new();
    let mut roots = Vec::new();
    for p in &source.paths {
        let joined = base.join(p);
        if p.contains(['*', '?', '[', '{']) {
            let pattern = joined.to_string_lossy().into_owned();
            let glob = Glob::new(&pattern).map_err(|e| format!("path {p:?}: {e}"))?;
            globs.push(glob.compile_matcher());
            roots.push(literal_prefix(&given.join(p)));
        } else {
            let abs = joined.canonicalize().map_err(|e| format!("path {p:?}: {e}"))?;
            roots.push(given.join(p));
            prefixes.push(abs);
        }
    }
    let mapping = match &source.mapping {
        Some(_) if source.format != "auto" => return Err("`mapping` and `format` exclude each other".into()),
        Some(m) => {
            let abs = base.join(m);
            trajkit_formats::mapping::load(&abs).map_err(|e| format!("`mapping`: {e}"))?;
            Some(abs)
        }
        None => None,
    };
    Ok(ResolvedSource { source, rule, prefixes, globs, roots, base: SourceBase::new(given), mapping })
}

/// The directories of a glob before its first wildcard component.
fn literal_prefix(pattern: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in pattern.components() {
        if c.as_os_str().to_string_lossy().contains(['*', '?', '[', '{']) {
            break;
        }
        out.push(c);
    }
    out
}

/// Public evaluation benchmarks a source's name, paths or formats suggest, for the
/// warning a build without a registry gives (so the user can mark them evaluation_only).
pub fn benchmark_hint(name_and_paths: &str, formats: &[&str]) -> Option<&'static str> {
    let text = name_and_paths.to_ascii_lowercase();
    let by_format = formats.iter().find_map(|f| match *f {
        "tau2" => Some("tau2-bench"),
        "tau-bench" => Some("tau-bench"),
        "bfcl" => Some("BFCL"),
        _ => None,
    });
    by_format.or_else(|| {
        [
            ("swe-bench_verified", "SWE-bench Verified"),
            ("swe_bench_verified", "SWE-bench Verified"),
            ("swebench_verified", "SWE-bench Verified"),
            ("verified", "SWE-bench Verified"),
            ("terminal-bench", "Terminal-Bench"),
            ("terminal_bench", "Terminal-Bench"),
            ("tau2", "tau2-bench"),
            ("tau_bench", "tau-bench"),
            ("tau-bench", "tau-bench"),
            ("bfcl", "BFCL"),
            ("gaia", "GAIA"),
            ("webarena", "WebArena"),
            ("swe-bench", "SWE-bench"),
            ("swe_bench", "SWE-bench"),
        ]
        .iter()
        .find(|(needle, _)| text.contains(needle))
        .map(|(_, name)| *name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn benchmark_hints() {
        assert_eq!(benchmark_hint("data/tau2_runs", &[]), Some("tau2-bench"));
        assert_eq!(benchmark_hint("x", &["bfcl"]), Some("BFCL"));
        assert_eq!(benchmark_hint("data/my_rollouts", &["gym"]), None);
    }
}
