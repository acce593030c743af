//! Build planning, the first of a build's phases: the input files in build order (sources
//! in registry order, files in discovery order), cut into groups that are read apart and
//! balanced by bytes. Files one record reads together (ATIF subagent and continuation
//! files, SWE-bench side reports, Harbor trial directories) never straddle a cut, so
//! reading the groups one by one gives what reading everything at once gives.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use trajkit_formats::input::real_file_and_metadata;
use trajkit_formats::{InputFile, Options};

use crate::build::BuildOptions;
use crate::error::LibraryError;
use crate::registry::{benchmark_hint, Registry};

/// A file to read and the source (index into the registry) it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedFile {
    /// Path on disk.
    pub path: PathBuf,
    /// Directory paths inside the data may not escape.
    pub root: PathBuf,
    /// The name provenance, index and gallery use (relative to its source's base).
    pub display: String,
    pub source: usize,
    /// Size as stored (compressed).
    pub bytes: u64,
}

impl PlannedFile {
    /// The read driver's view of the file.
    pub fn input(&self) -> InputFile {
        InputFile { fs_path: self.path.clone(), display: self.display.clone(), root: self.root.clone() }
    }

    /// `input`, its paths moved instead of copied (a build's plan lists every file).
    pub fn into_input(self) -> InputFile {
        InputFile { fs_path: self.path, display: self.display, root: self.root }
    }
}

/// A run of consecutive planned files that one partial build reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileGroup {
    /// Position among the plan's groups (names the partial: `partials/gNNNNNN`).
    pub index: u32,
    /// The library-wide number of the group's first file (the index's `files.file`).
    pub first_file: u64,
    pub files: Vec<PlannedFile>,
}

impl FileGroup {
    /// Bytes of the group's files as stored.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// Every file of a build, in groups, and the warnings planning found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildPlan {
    pub files: u64,
    pub bytes: u64,
    pub groups: Vec<FileGroup>,
    pub warnings: Vec<String>,
}

/// The registry a build reads: the named one, or one source per input.
pub fn registry_of(opts: &BuildOptions) -> Result<Registry, LibraryError> {
    match &opts.registry {
        Some(p) => Registry::load(p),
        None => Ok(Registry::from_inputs(&opts.inputs)),
    }
}

/// Plans a build. With `group_bytes` the files are cut into groups of about that many
/// bytes (finding which files read each other costs a detection pass); without it the
/// whole plan is one group.
pub fn plan(opts: &BuildOptions, group_bytes: Option<u64>) -> Result<BuildPlan, LibraryError> {
    let registry = registry_of(opts)?;
    let (files, mut warnings) = plan_files(&registry, &opts.inputs)?;
    if opts.registry.is_none() {
        warnings.extend(benchmark_warnings(&registry, &files));
    }
    let cuts = match group_bytes {
        Some(target) => balanced_cuts(&files, &allowed_cuts(&registry, opts, &files)?, target.max(1)),
        None => Vec::new(),
    };
    let (count, bytes) = (files.len() as u64, files.iter().map(|f| f.bytes).sum());
    Ok(BuildPlan { files: count, bytes, groups: into_groups(files, &cuts), warnings })
}

fn plan_files(registry: &Registry, inputs: &[PathBuf]) -> Result<(Vec<PlannedFile>, Vec<String>), LibraryError> {
    let roots: Vec<PathBuf> = if inputs.is_empty() {
        registry.sources.iter().flat_map(|s| s.roots.iter().cloned()).collect()
    } else {
        inputs.to_vec()
    };
    let (files, errors) = trajkit_formats::discover(&roots);
    if let Some(e) = errors.into_iter().next() {
        return Err(LibraryError::Invalid { path: PathBuf::from("."), message: e.to_string() });
    }
    let mut seen = HashSet::new();
    let mut warnings = Vec::new();
    let mut plan = Vec::new();
    for file in files {
        let (canonical, bytes) = match real_file_and_metadata(&file.fs_path) {
            Some((real, meta)) => (real, meta.len()),
            None => (file.fs_path.clone(), std::fs::metadata(&file.fs_path).map_or(0, |m| m.len())),
        };
        if !seen.insert(canonical.clone()) {
            continue;
        }
        match registry.source_of(&canonical) {
            Some(source) => {
                // Provenance, index and gallery name the file relative to its source's base.
                let display = registry.sources[source].base.relative(&file.fs_path).display().to_string();
                plan.push(PlannedFile { path: file.fs_path, root: file.root, display, source, bytes });
            }
            None => warnings.push(format!("{}: not covered by any source of the registry; not read", file.display)),
        }
    }
    // Sources in registry order; files in discovery order within each.
    plan.sort_by_key(|p| p.source);
    Ok((plan, warnings))
}

fn benchmark_warnings(registry: &Registry, plan: &[PlannedFile]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, s) in registry.sources.iter().enumerate() {
        let text = format!("{} {}", s.source.name, s.source.paths.join(" "));
        let files: Vec<&str> = plan.iter().filter(|p| p.source == i).map(|p| p.display.as_str()).collect();
        let joined = files.iter().take(200).copied().collect::<Vec<_>>().join(" ");
        if let Some(bench) = benchmark_hint(&format!("{text} {joined}"), &[]) {
            out.push(format!(
                "source {:?} looks like the public evaluation benchmark {bench}; its tasks will be used for \
                 training unless a registry marks it `role = \"evaluation_only\"`",
                s.source.name
            ));
        }
    }
    out
}

/// `allowed[i]`: a group may start at file `i` (no file before it reads one from `i` on,
/// nor the other way round). Sources are read apart anyway, so only pairs inside one
/// source are looked for, with the source's reader options.
fn allowed_cuts(registry: &Registry, opts: &BuildOptions, files: &[PlannedFile]) -> Result<Vec<bool>, LibraryError> {
    let mut blocked = vec![0i64; files.len() + 1];
    let mut start = 0;
    while start < files.len() {
        let source = files[start].source;
        let end = start + files[start..].iter().take_while(|f| f.source == source).count();
        let src = &registry.sources[source].source;
        let format = registry.sources[source].forced_format(opts.format.as_ref());
        let read_opts = Options { format, max_record_bytes: opts.max_record_bytes, ..Default::default() };
        let inputs: Vec<InputFile> = files[start..end].iter().map(PlannedFile::input).collect();
        let edges = trajkit_formats::consumption_edges(&inputs, &read_opts)
            .map_err(|e| LibraryError::Invalid { path: PathBuf::from(&src.name), message: e.to_string() })?;
        for (a, b) in edges {
            let (lo, hi) = (start + a.min(b), start + a.max(b));
            blocked[lo + 1] += 1;
            blocked[hi + 1] -= 1;
        }
        start = end;
    }
    let mut depth = 0;
    Ok(blocked[..files.len()]
        .iter()
        .map(|d| {
            depth += d;
            depth == 0
        })
        .collect())
}

/// Where groups start (after the first): a new group at the first allowed file once the
/// current one holds `target` bytes.
fn balanced_cuts(files: &[PlannedFile], allowed: &[bool], target: u64) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut held = 0u64;
    for (i, f) in files.iter().enumerate() {
        if i > 0 && held >= target && allowed[i] {
            cuts.push(i);
            held = 0;
        }
        held += f.bytes;
    }
    cuts
}

/// Cuts the files into groups before each index of `cuts` (ascending).
fn into_groups(files: Vec<PlannedFile>, cuts: &[usize]) -> Vec<FileGroup> {
    let mut groups: Vec<FileGroup> = Vec::new();
    let mut next_cut = cuts.iter().peekable();
    for (i, f) in files.into_iter().enumerate() {
        let starts = i == 0 || next_cut.next_if_eq(&&i).is_some();
        if starts {
            let index = groups.len() as u32;
            groups.push(FileGroup { index, first_file: i as u64, files: Vec::new() });
        }
        if let Some(g) = groups.last_mut() {
            g.files.push(f);
        }
    }
    groups
}

/// The directory of a group's partial inside a staging directory.
pub fn partial_dir(staging: &Path, group: u32) -> PathBuf {
    staging.join("partials").join(format!("g{group:06}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(bytes: u64) -> PlannedFile {
        PlannedFile { path: "x".into(), root: "".into(), display: "x".into(), source: 0, bytes }
    }

    #[test]
    fn groups_fill_to_the_target_and_never_cut_a_blocked_file() {
        // Synthetic sizes: no real corpus has this shape of references at these sizes.
        let files: Vec<PlannedFile> = [5, 5, 5, 5, 5, 5].into_iter().map(file).collect();
        let allowed = [true, true, false, true, true, true];
        let cuts = balanced_cuts(&files, &allowed, 10);
        assert_eq!(cuts, vec![3, 5]);
        let groups = into_groups(files, &cuts);
        let sizes: Vec<(u64, usize)> = groups.iter().map(|g| (g.first_file, g.files.len())).collect();
        assert_eq!(sizes, vec![(0, 3), (3, 2), (5, 1)]);
    }
}
