//! The contamination report (`evaluation/contamination.json`): for every protected task
//! cluster, the trajectories of training sources that overlap it, by instruction (already
//! caught by the task clusters: listed as now protected) and by long n-gram overlap of
//! content (13-word n-grams, as in published decontamination studies). Fingerprints are
//! winnowed per distinct interaction in the partial (map) phase and matched in finalize.
//! Rules: docs/quality.md#contamination-report.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use trajkit_model::Trajectory;

use crate::error::LibraryError;
use crate::spill::{Spill, SpillReader};

/// Words per n-gram (the GPT-3 paper's contamination analysis used 13).
pub const NGRAM_WORDS: usize = 13;
/// Winnowing window in n-grams: every shared passage of at least `NGRAM_WORDS + WINDOW - 1`
/// (24) words shares a fingerprint; shorter shared passages of 13 words or more may.
pub const WINDOW: usize = 12;
/// The report's path inside a library.
pub const REPORT: &str = "evaluation/contamination.json";

/// The report's options (`trajkit build --fail-on-contamination ...`, the same fields in
/// `trajkit.build` and `trajkit.ray.build(contamination=...)`); recorded in `build.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContaminationOptions {
    /// An n-gram found in more than this many distinct training interactions, or in more
    /// than this many protected clusters, is common phrasing or boilerplate and ignored.
    pub max_documents: u64,
    /// Least shared n-gram fingerprints for a content overlap.
    pub min_ngrams: u64,
    /// Fail the build (nothing written) when a training-eligible trajectory overlaps a
    /// protected task by content.
    pub fail: bool,
}

impl Default for ContaminationOptions {
    fn default() -> Self {
        ContaminationOptions { max_documents: 10, min_ngrams: 1, fail: false }
    }
}

/// The winnowed 13-gram fingerprints of a run, sorted and deduplicated: the instruction and
/// the text of its own steps (content, tool-call names and argument values, tool results);
/// system prompts (an environment's policy, shared by all of its tasks) and copied context
/// are left out. Words are lowercase runs of letters and digits; an n-gram never spans
/// two texts. `None` when no text has 13 words.
pub fn fingerprints(t: &Trajectory) -> Option<Vec<u64>> {
    crate::signatures::of(t, false, true).fingerprints
}

/// The fingerprints of a run's n-grams: winnowed, sorted and deduplicated.
pub(crate) fn fingerprints_of(grams: &[u64]) -> Option<Vec<u64>> {
    let mut out = winnow(grams);
    out.sort_unstable();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// Appends the hash of every `NGRAM_WORDS` consecutive words of the word hashes `words`.
pub(crate) fn ngrams_of(words: &[u64], out: &mut Vec<u64>) {
    let start = out.len();
    crate::minhash::window_folds::<NGRAM_WORDS>(words, out);
    for x in &mut out[start..] {
        let y = *x ^ (*x >> 31);
        *x = y.wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ (y >> 29);
    }
}

/// Winnowing (Schleimer et al., 2003): the least hash of every `WINDOW` consecutive
/// n-grams (all of them when there are fewer), so two texts sharing a window share its pick.
fn winnow(grams: &[u64]) -> Vec<u64> {
    if grams.len() <= WINDOW {
        return grams.iter().min().copied().into_iter().collect();
    }
    // Each window spans the tail of one block of `WINDOW` n-grams and the head of the next:
    // its least is the lesser of the tail's and the head's (three passes instead of a
    // comparison per n-gram and window position).
    let mut heads = grams.to_vec();
    for block in heads.chunks_mut(WINDOW) {
        for i in 1..block.len() {
            block[i] = block[i].min(block[i - 1]);
        }
    }
    let mut tails = grams.to_vec();
    for block in tails.chunks_mut(WINDOW) {
        for i in (0..block.len().saturating_sub(1)).rev() {
            block[i] = block[i].min(block[i + 1]);
        }
    }
    let mut out: Vec<u64> = tails.iter().zip(&heads[WINDOW - 1..]).map(|(t, h)| *t.min(h)).collect();
    out.dedup();
    out
}

/// Fingerprints per distinct interaction, collected while finalize merges the partials.
/// They are spilled to a temporary file as they come (a few KiB per interaction: held in
/// memory they made a 4 GB corpus of distinct rollouts peak at 768 MiB) and read back in
/// two passes by `report`.
#[derive(Default)]
pub struct Collector {
    spill: Spill,
    /// Reused for an entry's bytes.
    buf: Vec<u8>,
    /// An `evaluation_only` trajectory was noted: without one there is no protected content
    /// to match, and the report needs no scan of the trajectories.
    evaluation: bool,
}

impl Collector {
    /// A collector that spills into `dir`.
    pub fn in_dir(dir: &Path) -> Collector {
        Collector { spill: Spill::in_dir(dir), ..Collector::default() }
    }

    /// Notes a trajectory's interaction and its fingerprints (carried by one of its records
    /// per partial; the first noted for a digest is the one used, and all are the same), and
    /// whether it is `evaluation_only`. Spilled as the digest's length and bytes, then the
    /// fingerprints, little-endian.
    pub fn add(&mut self, interaction_digest: &str, evaluation: bool, fingerprints: Option<Vec<u64>>) {
        self.evaluation |= evaluation;
        let Some(f) = fingerprints else { return };
        crate::spill::to_bytes(&f, u64::to_le_bytes, &mut self.buf);
        let len = (interaction_digest.len() as u32).to_le_bytes();
        self.spill.push(&[&len, interaction_digest.as_bytes(), &self.buf]);
    }

    /// Calls `f` with the first item spilled for each digest, in the order they came.
    fn each_first(spill: &mut SpillReader, mut f: impl FnMut(&str, &[u64])) -> std::io::Result<()> {
        let mut fps = Vec::new();
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        spill.each(|entry| {
            let (len, rest) = entry.split_at(4.min(entry.len()));
            let len = u32::from_le_bytes(len.try_into().unwrap_or_default()) as usize;
            let (digest, rest) = rest.split_at(len.min(rest.len()));
            if seen.contains(digest) {
                return;
            }
            seen.insert(digest.to_vec());
            crate::spill::from_bytes(rest, u64::from_le_bytes, &mut fps);
            f(std::str::from_utf8(digest).unwrap_or_default(), &fps);
        })
    }

    /// Matches the training-eligible interactions against the protected clusters' and
    /// builds the report from the finalized index.
    pub fn report(self, conn: &Connection, path: &Path, opts: &ContaminationOptions) -> Result<Report, LibraryError> {
        let sql = |source| LibraryError::Sqlite { path: path.to_path_buf(), source };
        let spill_path = path.with_file_name("contamination fingerprints (temporary file)");
        let spill_err = |source| LibraryError::Io { path: spill_path.clone(), source };
        let mut spill = self.spill.reader().map_err(&spill_err)?;
        // Each query scans every trajectory (0.2 s apiece on a 4 GB corpus): asked only when
        // its answer can matter.
        let eval = if self.evaluation { pairs(conn, EVALUATION).map_err(sql)? } else { Vec::new() };
        let mut eval_clusters: HashMap<&str, Vec<&str>> = HashMap::new();
        for (cluster, digest) in &eval {
            eval_clusters.entry(digest.as_str()).or_default().push(cluster.as_str());
        }
        let mut clusters: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
        if !eval_clusters.is_empty() {
            Self::each_first(&mut spill, |digest, fps| {
                for c in eval_clusters.get(digest).into_iter().flatten() {
                    fps.iter().for_each(|fp| _ = clusters.entry(*fp).or_default().insert(c));
                }
            })
            .map_err(&spill_err)?;
        }
        clusters.retain(|_, c| c.len() as u64 <= opts.max_documents);
        let mut hits: Vec<(String, Vec<u64>)> = Vec::new();
        let mut documents: HashMap<u64, u64> = HashMap::new();
        if !clusters.is_empty() {
            let train = pairs(conn, TRAINING).map_err(sql)?;
            let train: HashSet<&str> = train.iter().map(|(d, _)| d.as_str()).collect();
            Self::each_first(&mut spill, |digest, fps| {
                if !train.contains(digest) {
                    return;
                }
                let shared: Vec<u64> = fps.iter().filter(|fp| clusters.contains_key(fp)).copied().collect();
                shared.iter().for_each(|fp| *documents.entry(*fp).or_default() += 1);
                if !shared.is_empty() {
                    hits.push((digest.to_string(), shared));
                }
            })
            .map_err(&spill_err)?;
        }
        // In digest order, as the training interactions were listed.
        hits.sort_by(|a, b| a.0.cmp(&b.0));
        let mut content = Vec::new();
        for (digest, shared) in hits {
            let mut per: BTreeMap<&str, u64> = BTreeMap::new();
            for fp in shared.iter().filter(|fp| documents.get(fp).is_some_and(|n| *n <= opts.max_documents)) {
                for c in clusters.get(fp).into_iter().flatten() {
                    *per.entry(c).or_default() += 1;
                }
            }
            for (cluster, n) in per.into_iter().filter(|(_, n)| *n >= opts.min_ngrams) {
                content.push(ContentOverlap {
                    interaction_digest: digest.to_string(),
                    cluster: cluster.to_string(),
                    ngrams: n,
                });
            }
        }
        Report::assemble(conn, content, opts).map_err(sql)
    }
}

/// The evaluation interactions and their clusters.
const EVALUATION: &str = "SELECT DISTINCT task_cluster, interaction_digest FROM trajectories
  WHERE role = 'evaluation_only' AND task_cluster IS NOT NULL ORDER BY 1, 2";
/// The training-eligible interactions.
const TRAINING: &str = "SELECT DISTINCT interaction_digest, '' FROM trajectories WHERE training_eligible ORDER BY 1";

/// `(a, b)` text pairs of a two-column query.
fn pairs(conn: &Connection, query: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let mut st = conn.prepare(query)?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// A training-eligible interaction that shares n-grams with a protected cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentOverlap {
    pub interaction_digest: String,
    pub cluster: String,
    /// Shared fingerprints (distinct winnowed 13-grams) after the boilerplate rule.
    pub ngrams: u64,
}

/// One overlapping trajectory as the report lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overlap {
    pub id: String,
    pub source: String,
    /// The file it was read from (as the index names it).
    pub path: String,
    pub task_key: String,
    /// `same_key`, `same_instruction`, `near_duplicate` (instruction overlaps, now
    /// protected) or `ngram` (content overlaps).
    pub kind: String,
    /// The instruction similarity of a `near_duplicate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// Shared 13-gram fingerprints of an `ngram` overlap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ngrams: Option<u64>,
    /// `now_protected` (in the protected cluster, out of training) or `training_eligible`.
    pub status: String,
}

/// The report: per protected cluster with an overlap, its overlapping trajectories.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub protected_clusters: u64,
    /// Per cluster: instruction overlaps then content overlaps, in index order.
    pub tasks: BTreeMap<String, Vec<Overlap>>,
    pub options: ContaminationOptions,
}

/// The training-source trajectories that clustering pulled into protected clusters.
const INSTRUCTION: &str =
    "SELECT task_cluster, id, source, task_key, task_cluster_reason, task_cluster_similarity, path
  FROM trajectories WHERE split = 'protected_evaluation' AND role <> 'evaluation_only' AND task_cluster IS NOT NULL
  ORDER BY ordinal";

impl Report {
    /// Lists the trajectories of each overlap from the index.
    fn assemble(
        conn: &Connection,
        content: Vec<ContentOverlap>,
        opts: &ContaminationOptions,
    ) -> rusqlite::Result<Report> {
        let protected_clusters: u64 = conn.query_row(
            "SELECT count(DISTINCT task_cluster) FROM trajectories WHERE split = 'protected_evaluation'",
            [],
            |r| r.get(0),
        )?;
        let mut tasks: BTreeMap<String, Vec<Overlap>> = BTreeMap::new();
        let mut st = conn.prepare(INSTRUCTION)?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let reason: Option<String> = r.get(4)?;
            tasks.entry(r.get(0)?).or_default().push(Overlap {
                id: r.get(1)?,
                source: r.get(2)?,
                task_key: r.get(3)?,
                kind: reason.unwrap_or_else(|| "same_key".into()),
                similarity: r.get(5)?,
                path: r.get(6)?,
                ngrams: None,
                status: "now_protected".into(),
            });
        }
        let mut st = conn.prepare(
            "SELECT id, source, task_key, path FROM trajectories WHERE training_eligible AND interaction_digest = ?1 ORDER BY ordinal",
        )?;
        for c in content {
            let mut rows = st.query([&c.interaction_digest])?;
            while let Some(r) = rows.next()? {
                tasks.entry(c.cluster.clone()).or_default().push(Overlap {
                    id: r.get(0)?,
                    source: r.get(1)?,
                    task_key: r.get(2)?,
                    path: r.get(3)?,
                    kind: "ngram".into(),
                    similarity: None,
                    ngrams: Some(c.ngrams),
                    status: "training_eligible".into(),
                });
            }
        }
        Ok(Report { protected_clusters, tasks, options: opts.clone() })
    }

    /// The content overlaps (training-eligible trajectories), as `(cluster, overlap)`.
    pub fn content_overlaps(&self) -> impl Iterator<Item = (&str, &Overlap)> {
        self.tasks.iter().flat_map(|(c, v)| v.iter().filter(|o| o.kind == "ngram").map(move |o| (c.as_str(), o)))
    }

    /// The failure message of `--fail-on-contamination`, or `None` for a clean library.
    pub fn failure(&self) -> Option<String> {
        let all: Vec<_> = self.content_overlaps().collect();
        let (cluster, first) = all.first()?;
        Some(format!(
            "{} training-eligible trajector{} overlap a protected task by content; first: trajectory {} \
             ({}, source {}, task {}) shares {} 13-word n-gram(s) with protected task cluster {} \
             (report: {REPORT} of a build without --fail-on-contamination)",
            all.len(),
            if all.len() == 1 { "y" } else { "ies" },
            first.id,
            first.path,
            first.source,
            first.task_key,
            first.ngrams.unwrap_or(0),
            cluster
        ))
    }

    /// The report as JSON: method, totals, per source, per task.
    pub fn to_json(&self) -> Value {
        let mut by_source: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        let (mut instruction, mut content) = (0u64, 0u64);
        for o in self.tasks.values().flatten() {
            let e = by_source.entry(&o.source).or_default();
            if o.kind == "ngram" {
                e.1 += 1;
                content += 1;
            } else {
                e.0 += 1;
                instruction += 1;
            }
        }
        let tasks: Vec<Value> = self
            .tasks
            .iter()
            .map(|(cluster, v)| {
                let count = |ngram: bool| v.iter().filter(|o| (o.kind == "ngram") == ngram).count();
                json!({
                    "task_cluster": cluster,
                    "instruction_overlaps": count(false),
                    "content_overlaps": count(true),
                    "trajectories": v,
                })
            })
            .collect();
        json!({
            "method": {
                "ngram_words": NGRAM_WORDS,
                "winnowing_window": WINDOW,
                "guaranteed_passage_words": NGRAM_WORDS + WINDOW - 1,
                "normalisation": "lowercase; words are runs of letters and digits; punctuation and whitespace separate words",
                "max_documents": self.options.max_documents,
                "min_ngrams": self.options.min_ngrams,
            },
            "protected_clusters": self.protected_clusters,
            "totals": {
                "tasks_with_overlaps": self.tasks.len(),
                "instruction_overlaps": instruction,
                "content_overlaps": content,
            },
            "by_source": by_source.iter().map(|(s, (i, c))| json!({
                "source": s, "instruction_overlaps": i, "content_overlaps": c
            })).collect::<Vec<_>>(),
            "tasks": tasks,
        })
    }
}

/// The report's summary for `trajkit stats` (method, counts, totals, per source); a
/// library built before the report existed gets `{"status": "not_computed"}`.
pub fn summary(library: &Path) -> Result<Value, LibraryError> {
    let path = library.join(REPORT);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(json!({"status": "not_computed"})),
        Err(e) => return Err(LibraryError::Io { path, source: e }),
    };
    let mut v: Value = serde_json::from_slice(&bytes).map_err(|source| LibraryError::Json { path, line: 1, source })?;
    if let Some(o) = v.as_object_mut() {
        o.remove("tasks");
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(text: &str) -> Vec<u64> {
        let mut words = Vec::new();
        crate::minhash::word_hashes(text, true, &mut Vec::new(), |h| words.push(h));
        let mut g = Vec::new();
        ngrams_of(&words, &mut g);
        fingerprints_of(&g).unwrap_or_default()
    }

    /// Synthetic sequences (an algorithm's equivalence, not a file format's rule): the
    /// least of each window, by blocks, equals the least found by comparing the window.
    #[test]
    fn winnowing_by_blocks_picks_each_windows_least() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in 0..200 {
            let grams: Vec<u64> = (0..n)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    x >> 56
                })
                .collect();
            let mut want: Vec<u64> = if n <= WINDOW {
                grams.iter().min().copied().into_iter().collect()
            } else {
                grams.windows(WINDOW).filter_map(|w| w.iter().min().copied()).collect()
            };
            want.dedup();
            assert_eq!(winnow(&grams), want, "{n} n-grams");
        }
    }

    #[test]
    fn ngrams_are_thirteen_normalised_words() {
        let words: Vec<String> = (0..13).map(|i| format!("w{i}")).collect();
        assert_eq!(fp(&words.join(" ")).len(), 1);
        assert_eq!(fp(&words.join(" ")), fp(&format!("{}!", words.join(",  ").to_uppercase())));
        assert!(fp(&words[..12].join(" ")).is_empty(), "twelve words make no n-gram");
    }

    #[test]
    fn a_shared_passage_of_24_words_always_shares_a_fingerprint() {
        let passage: Vec<String> = (0..24).map(|i| format!("p{i}")).collect();
        for pad in 0..30 {
            let a: Vec<String> = (0..pad).map(|i| format!("a{i}")).chain(passage.iter().cloned()).collect();
            let b: Vec<String> = passage.iter().cloned().chain((0..40).map(|i| format!("b{i}"))).collect();
            let (fa, fb) = (fp(&a.join(" ")), fp(&b.join(" ")));
            assert!(fa.iter().any(|x| fb.binary_search(x).is_ok()), "padding {pad}");
        }
        let other: Vec<String> = (0..100).map(|i| format!("x{i}")).collect();
        let a: Vec<String> = (0..100).map(|i| format!("p{i}")).collect();
        assert!(!fp(&a.join(" ")).iter().any(|x| fp(&other.join(" ")).contains(x)));
    }
}
