//! Task clusters: tasks matched by content across keys and sources, so that splits and
//! evaluation protection follow the task, not the key a source happened to give it.
//! The partial (map) phase computes each record's instruction signature; finalize unions
//! (same split key) ∪ (same normalized instruction) ∪ (near-duplicate instructions: MinHash
//! with LSH banding, confirmed by exact Jaccard over the shingle sets, boilerplate
//! shingles ignored). Memory is bounded by distinct (key, instruction) pairs and distinct
//! instructions, never by records; the instructions' shingles wait in a spill file, not in
//! memory. Rules: docs/quality.md#task-clusters.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::path::Path;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::minhash;
use crate::numbering::{number, renumber};
use crate::row::Row;
use crate::spill::{self, Spill, SpillReader};
use crate::split::{SplitConfig, PROTECTED};

/// How tasks are clustered (`trajkit build --instruction-similarity ...`, the registry's
/// `[clusters]` table, `trajkit.build(instruction_similarity=...)`); recorded in `build.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterOptions {
    /// Least exact Jaccard similarity of two instructions' shingle sets (boilerplate
    /// removed) for them to be one task.
    pub instruction_similarity: f64,
    /// A shingle in at least this fraction of the distinct instructions ...
    pub boilerplate_fraction: f64,
    /// ... and in at least this many of them is boilerplate (a shared preamble or
    /// template) and ignored when comparing instructions.
    pub boilerplate_min_instructions: u64,
    /// An instruction that this many distinct split keys share is a generic prompt (a
    /// greeting, a bare system prompt), not a task: it links nothing.
    pub generic_instruction_keys: u64,
    /// Least estimated content similarity of two trajectories of one task cluster for them
    /// to be one near-duplicate group.
    pub trajectory_similarity: f64,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            instruction_similarity: 0.7,
            boilerplate_fraction: 0.01,
            boilerplate_min_instructions: 3,
            generic_instruction_keys: 10,
            trajectory_similarity: 0.8,
        }
    }
}

impl ClusterOptions {
    /// Checks that the similarity and fraction are in (0, 1].
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("instruction similarity", self.instruction_similarity),
            ("boilerplate fraction", self.boilerplate_fraction),
            ("trajectory similarity", self.trajectory_similarity),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                return Err(format!("{name} must be in (0, 1], got {v}"));
            }
        }
        Ok(())
    }
}

/// 16 hex digits of XXH3-64 of the instruction after `normalize_instruction` (whitespace
/// runs collapsed, trimmed); the environment is not part of it. None for a blank one.
pub fn instruction_digest(instruction: &str) -> Option<String> {
    let normal = trajkit_model::canonical::normalize_instruction(instruction);
    (!normal.is_empty()).then(|| format!("{:016x}", minhash::hash64(normal.as_bytes())))
}

/// Why a trajectory is in its cluster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reason {
    /// Its split key is the cluster's anchor key.
    SameKey,
    /// Linked to the anchor through shared keys and equal normalized instructions only.
    SameInstruction,
    /// Linked through near-duplicate instructions; the weakest link's similarity.
    NearDuplicate(f64),
}

impl Reason {
    /// The index's `task_cluster_reason`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Reason::SameKey => "same_key",
            Reason::SameInstruction => "same_instruction",
            Reason::NearDuplicate(_) => "near_duplicate",
        }
    }

    /// The similarity of a near-duplicate link, rounded to 4 decimals.
    pub fn similarity(&self) -> Option<f64> {
        match self {
            Reason::NearDuplicate(s) => Some((s * 10_000.0).round() / 10_000.0),
            _ => None,
        }
    }
}

/// The signatures finalize collects, one entry per distinct key, instruction and pair.
#[derive(Default)]
pub struct Collector {
    keys: foldhash::HashMap<String, u32>,
    instructions: foldhash::HashMap<String, u32>,
    /// Per instruction id, where its shingles lie in `spill` (`None` until a record carrying
    /// them is seen). Held in memory they were most of finalize's growth on a corpus of
    /// distinct instructions.
    shingles: Vec<Option<u64>>,
    spill: Spill,
    /// Shingles spilled, and the instructions with at least one.
    spilled: u64,
    nonempty: u64,
    /// Reused for a spill entry's bytes.
    buf: Vec<u8>,
    /// (key id, instruction id or `u32::MAX`) -> its pair number.
    pairs: foldhash::HashMap<(u32, u32), u32>,
    /// Per pair number: an `evaluation_only` trajectory has it.
    evaluation: Vec<bool>,
}

/// A distinct (split key, instruction) pair, by number: what the near-duplicate collector
/// keeps per interaction instead of the two strings (`Clusters::cluster_of` finds its
/// cluster).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskPair(u32);

const NO_INSTRUCTION: u32 = u32::MAX;

impl Collector {
    /// A collector that spills the shingles into `dir`.
    pub fn in_dir(dir: &Path) -> Collector {
        Collector { spill: Spill::in_dir(dir), ..Collector::default() }
    }

    /// Notes one trajectory's row and, when its entry carries them, its shingles; returns
    /// the row's (split key, instruction) pair.
    pub fn add(&mut self, row: &Row, shingles: Option<Vec<u64>>) -> TaskPair {
        let key = number(&mut self.keys, &row.split_key);
        let instruction = match &row.instruction_digest {
            Some(d) => {
                let id = number(&mut self.instructions, d);
                if id as usize == self.shingles.len() {
                    self.shingles.push(None);
                }
                if let (Some(slot @ None), Some(s)) = (self.shingles.get_mut(id as usize), shingles) {
                    spill::to_bytes(&s, u64::to_le_bytes, &mut self.buf);
                    *slot = Some(self.spill.push(&[&self.buf]));
                    self.spilled += s.len() as u64;
                    self.nonempty += u64::from(!s.is_empty());
                }
                id
            }
            None => NO_INSTRUCTION,
        };
        let n = self.evaluation.len() as u32;
        let pair = *self.pairs.entry((key, instruction)).or_insert(n);
        if pair == n {
            self.evaluation.push(false);
        }
        if let Some(e) = self.evaluation.get_mut(pair as usize) {
            *e |= row.role == "evaluation_only";
        }
        TaskPair(pair)
    }
}

/// One distinct (split key, instruction) pair's cluster membership.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub split_key: String,
    /// `""` for trajectories without an instruction.
    pub instruction_digest: String,
    pub cluster: String,
    pub reason: Reason,
}

/// One task cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    pub id: String,
    /// The key the split is drawn from: the least split key among evaluation trajectories,
    /// else the least split key.
    pub anchor: String,
    pub split: String,
    pub keys: u64,
    pub instructions: u64,
}

/// Near-duplicate instruction pairs confirmed by exact Jaccard.
#[derive(Debug, Clone, PartialEq)]
pub struct NearPair {
    pub a: String,
    pub b: String,
    pub similarity: f64,
}

/// What clustering found, sorted (clusters by id, links by key then instruction).
#[derive(Debug, Default)]
pub struct Clusters {
    pub clusters: Vec<Cluster>,
    pub links: Vec<Link>,
    pub near_pairs: Vec<NearPair>,
    /// Shingles treated as boilerplate, and the distinct instructions counted.
    pub boilerplate_shingles: u64,
    pub instructions: u64,
    /// Per `TaskPair`, the number of its cluster (in the order clusters were made, not
    /// `clusters`' order; `NO_CLUSTER` for none).
    pair_clusters: Vec<u32>,
}

const NO_CLUSTER: u32 = u32::MAX;

impl Clusters {
    /// The cluster of a pair the collector numbered, as a number the same for every pair
    /// of one cluster and different between clusters; `None` for a pair with no cluster.
    pub fn cluster_of(&self, pair: TaskPair) -> Option<u32> {
        self.pair_clusters.get(pair.0 as usize).copied().filter(|&c| c != NO_CLUSTER)
    }
}

/// A link's strength from the anchor: exact links beat every near-duplicate one.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Strength(Option<f64>);

impl Strength {
    fn rank(&self) -> f64 {
        self.0.unwrap_or(2.0)
    }
    fn min(self, other: Strength) -> Strength {
        if self.rank() <= other.rank() {
            self
        } else {
            other
        }
    }
}

impl Collector {
    /// Clusters everything collected. Deterministic: ids are re-numbered in string order
    /// first, so neither reading order nor partition matters. Fails only reading the spill.
    pub fn cluster(self, opts: &ClusterOptions, split: &SplitConfig) -> std::io::Result<Clusters> {
        let mut g = Graph::new(self)?;
        g.mark_generic(opts.generic_instruction_keys);
        let (near, boilerplate) = g.near_pairs(opts)?;
        let mut uf = UnionFind::new(g.nodes());
        for (k, i) in g.linking_pairs() {
            uf.union(k as usize, g.inode(i));
        }
        for &(a, b, _) in &near {
            uf.union(g.inode(a), g.inode(b));
        }
        // Nodes by component (root, then node): one vector, not a `Vec` per component.
        let mut members: Vec<(usize, usize)> = (0..g.nodes()).map(|n| (uf.find(n), n)).collect();
        members.sort_unstable();
        drop(uf);
        let adjacency = g.adjacency(&near);
        let mut out = Clusters {
            boilerplate_shingles: boilerplate,
            instructions: g.instructions.len() as u64,
            near_pairs: near
                .iter()
                .map(|&(a, b, s)| NearPair {
                    a: g.instructions[a as usize].clone(),
                    b: g.instructions[b as usize].clone(),
                    similarity: (s * 10_000.0).round() / 10_000.0,
                })
                .collect(),
            pair_clusters: vec![NO_CLUSTER; g.pairs.len()],
            ..Clusters::default()
        };
        let nodes: Vec<usize> = members.iter().map(|&(_, n)| n).collect();
        let mut start = 0;
        for run in members.chunk_by(|a, b| a.0 == b.0) {
            g.emit(&nodes[start..start + run.len()], &adjacency, split, &mut out);
            start += run.len();
        }
        out.clusters.sort_by(|a, b| a.id.cmp(&b.id));
        out.links.sort_by(|a, b| (&a.split_key, &a.instruction_digest).cmp(&(&b.split_key, &b.instruction_digest)));
        Ok(out)
    }
}

/// Two near-duplicate instructions `(a, b)`, `a < b`, and their Jaccard similarity.
type NearLink = (u32, u32, f64);

/// Keys (nodes `0..K`) and instructions (nodes `K..K+I`), numbered in string order.
struct Graph {
    keys: Vec<String>,
    instructions: Vec<String>,
    /// Per instruction, where its shingles lie in `spill`.
    shingles: Vec<Option<u64>>,
    spill: SpillReader,
    /// Shingles spilled, and the instructions with at least one.
    spilled: u64,
    nonempty: u64,
    /// (key, instruction) -> (an `evaluation_only` trajectory has it, its `TaskPair`).
    pairs: BTreeMap<(u32, u32), (bool, u32)>,
    /// Per instruction: a generic prompt that links nothing (see `ClusterOptions`).
    generic: Vec<bool>,
}

impl Graph {
    fn new(c: Collector) -> std::io::Result<Graph> {
        let (keys, key_map) = renumber(c.keys);
        let (instructions, instr_map) = renumber(c.instructions);
        let mut shingles = vec![None; instructions.len()];
        for (old, s) in c.shingles.into_iter().enumerate() {
            if let Some(&new) = instr_map.get(old) {
                shingles[new as usize] = s;
            }
        }
        let evaluation = c.evaluation;
        let pairs = c
            .pairs
            .into_iter()
            .map(|((k, i), pair)| {
                let i = if i == NO_INSTRUCTION { i } else { instr_map[i as usize] };
                let e = evaluation.get(pair as usize).copied().unwrap_or(false);
                ((key_map[k as usize], i), (e, pair))
            })
            .collect();
        let (spilled, nonempty) = (c.spilled, c.nonempty);
        let spill = c.spill.reader()?;
        Ok(Graph { keys, instructions, shingles, spill, spilled, nonempty, pairs, generic: Vec::new() })
    }

    /// Marks the instructions that at least `limit` distinct keys share.
    fn mark_generic(&mut self, limit: u64) {
        let mut holders = vec![0u64; self.instructions.len()];
        for &(_, i) in self.pairs.keys() {
            if let Some(h) = holders.get_mut(i as usize) {
                *h += 1;
            }
        }
        self.generic = holders.into_iter().map(|h| h >= limit.max(2)).collect();
    }

    /// The pairs that link a key to an instruction (not a generic one).
    fn linking_pairs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.pairs.keys().copied().filter(|&(_, i)| self.generic.get(i as usize).is_some_and(|g| !g))
    }

    fn nodes(&self) -> usize {
        self.keys.len() + self.instructions.len()
    }

    fn inode(&self, i: u32) -> usize {
        self.keys.len() + i as usize
    }

    /// Confirmed near-duplicate instruction pairs `(a, b, jaccard)` and the number of
    /// boilerplate shingles ignored. The signatures and the candidates' similarities are
    /// computed on every core (finalize's other work waits for them); which pairs are found
    /// does not depend on how many.
    fn near_pairs(&mut self, opts: &ClusterOptions) -> std::io::Result<(Vec<NearLink>, u64)> {
        let n = self.nonempty as f64;
        let floor = ((opts.boilerplate_fraction * n).ceil() as u64).max(opts.boilerplate_min_instructions).max(2);
        let boilerplate = frequent_shingles(&mut self.spill, self.spilled, floor)?;
        let sets = Sets { graph: self, boilerplate: &boilerplate };
        let signed = sets.signed()?;
        // Instructions equal once boilerplate is removed are linked to the first of them
        // (similarity 1) without banding, so a bucket never holds many equal sets. Sets are
        // looked up by hash and compared in full.
        // Keyed by an XXH3 hash already: SipHash over it cost more than the rest of the lookup.
        let mut first_of: FxHashMap<u64, Vec<u32>> = Default::default();
        let mut near = Vec::new();
        // Only the band keys are kept (half a signature): 512 bytes per distinct instruction
        // were the task-cluster stage's largest holding at 8 GB of distinct rollouts.
        let mut items: Vec<(u32, minhash::BandKeys)> = Vec::new();
        let (mut set, mut other, mut buf) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (hash, keys)) in signed {
            let firsts = first_of.entry(hash).or_default();
            let mut equal = None;
            if !firsts.is_empty() {
                sets.read(i, &mut set, &mut buf)?;
                for &f in firsts.iter() {
                    if sets.read(f, &mut other, &mut buf)? && other == set {
                        equal = Some(f);
                        break;
                    }
                }
            }
            match equal {
                Some(first) => near.push((first, i, 1.0)),
                None => {
                    firsts.push(i);
                    items.push((i, keys));
                }
            }
        }
        let candidates = minhash::banded_candidates(&items);
        drop(items);
        near.extend(sets.similar(&candidates, opts.instruction_similarity)?);
        near.sort_by_key(|&(a, b, _)| (a, b));
        Ok((near, boilerplate.len() as u64))
    }

    /// Per node, its neighbours and the strength of each edge.
    fn adjacency(&self, near: &[NearLink]) -> Adjacency {
        let edges = || {
            let exact = self.linking_pairs().map(|(k, i)| (k as usize, self.inode(i), Strength(None)));
            exact.chain(near.iter().map(|&(a, b, s)| (self.inode(a), self.inode(b), Strength(Some(s)))))
        };
        let mut start = vec![0usize; self.nodes() + 1];
        for (a, b, _) in edges() {
            start[a + 1] += 1;
            start[b + 1] += 1;
        }
        for n in 1..start.len() {
            start[n] += start[n - 1];
        }
        let mut fill = start.clone();
        let mut to = vec![(0usize, Strength(None)); start.last().copied().unwrap_or(0)];
        for (a, b, s) in edges() {
            to[fill[a]] = (b, s);
            fill[a] += 1;
            to[fill[b]] = (a, s);
            fill[b] += 1;
        }
        Adjacency { start, to }
    }

    /// Writes one component's cluster and links: the anchor, the split, and per pair the
    /// strongest chain of links from the anchor (widest path).
    fn emit(&self, nodes: &[usize], adj: &Adjacency, split: &SplitConfig, out: &mut Clusters) {
        let key_nodes: Vec<usize> = nodes.iter().copied().filter(|&n| n < self.keys.len()).collect();
        // The cluster is protected when one of its keys has an evaluation trajectory: looked
        // up per key (a scan of every pair per cluster made this stage quadratic).
        let eval_key = key_nodes
            .iter()
            .copied()
            .find(|&k| self.pairs.range((k as u32, 0)..=(k as u32, u32::MAX)).any(|(_, &(e, _))| e));
        let protected = eval_key.is_some();
        let Some(anchor) = eval_key.or_else(|| key_nodes.first().copied()) else { return };
        let anchor_key = &self.keys[anchor];
        let id = format!("tc-{}", &hex(&Sha256::digest(anchor_key.as_bytes()))[..16]);
        let strength = widest_paths(anchor, adj);
        let number = out.clusters.len() as u32;
        for k in &key_nodes {
            for (&(_, i), &(_, pair)) in self.pairs.range((*k as u32, 0)..=(*k as u32, u32::MAX)) {
                if let Some(c) = out.pair_clusters.get_mut(pair as usize) {
                    *c = number;
                }
                let reason = if *k == anchor {
                    Reason::SameKey
                } else {
                    match strength.get(k).and_then(|s| s.0) {
                        Some(s) => Reason::NearDuplicate(s),
                        None => Reason::SameInstruction,
                    }
                };
                let instruction_digest =
                    if i == NO_INSTRUCTION { String::new() } else { self.instructions[i as usize].clone() };
                out.links.push(Link {
                    split_key: self.keys[*k].clone(),
                    instruction_digest,
                    cluster: id.clone(),
                    reason,
                });
            }
        }
        out.clusters.push(Cluster {
            id,
            anchor: anchor_key.clone(),
            split: if protected { PROTECTED.to_string() } else { split.assign(anchor_key).to_string() },
            keys: key_nodes.len() as u64,
            instructions: (nodes.len() - key_nodes.len()) as u64,
        });
    }
}

/// The cluster tables, loaded before the index is finalized.
const SCHEMA: &str = "
CREATE TABLE task_clusters (task_cluster TEXT PRIMARY KEY, anchor_key TEXT NOT NULL, split TEXT NOT NULL,
  keys INTEGER NOT NULL, instructions INTEGER NOT NULL, trajectories INTEGER NOT NULL);
CREATE TABLE task_cluster_links (split_key TEXT NOT NULL, instruction_digest TEXT NOT NULL,
  task_cluster TEXT NOT NULL, reason TEXT NOT NULL, similarity REAL,
  PRIMARY KEY (split_key, instruction_digest)) WITHOUT ROWID;
CREATE TABLE near_duplicate_instructions (a TEXT NOT NULL, b TEXT NOT NULL, similarity REAL NOT NULL,
  PRIMARY KEY (a, b)) WITHOUT ROWID;
";

/// Writes the cluster tables into the loaded index. `index::finalize` applies them to the
/// trajectories (cluster, reason, split) in its one joined `UPDATE` and counts each cluster's
/// trajectories: a second pass rewriting every wide row cost 0.35 s at 4 GB.
pub fn write_index(
    conn: &rusqlite::Connection,
    path: &std::path::Path,
    c: &Clusters,
) -> Result<(), crate::LibraryError> {
    use rusqlite::params;
    let sql = |source| crate::LibraryError::Sqlite { path: path.to_path_buf(), source };
    conn.execute_batch("BEGIN").map_err(sql)?;
    conn.execute_batch(SCHEMA).map_err(sql)?;
    let mut st = conn.prepare("INSERT INTO task_clusters VALUES (?1, ?2, ?3, ?4, ?5, 0)").map_err(sql)?;
    for k in &c.clusters {
        st.execute(params![k.id, k.anchor, k.split, k.keys, k.instructions]).map_err(sql)?;
    }
    let mut st = conn.prepare("INSERT INTO task_cluster_links VALUES (?1, ?2, ?3, ?4, ?5)").map_err(sql)?;
    for l in &c.links {
        st.execute(params![l.split_key, l.instruction_digest, l.cluster, l.reason.as_str(), l.reason.similarity()])
            .map_err(sql)?;
    }
    let mut st = conn.prepare("INSERT INTO near_duplicate_instructions VALUES (?1, ?2, ?3)").map_err(sql)?;
    for p in &c.near_pairs {
        st.execute(params![p.a, p.b, p.similarity]).map_err(sql)?;
    }
    conn.execute_batch("COMMIT").map_err(sql)
}

/// Per reached node, the strongest weakest link on a path from `from` (max-min Dijkstra).
fn widest_paths(from: usize, adj: &Adjacency) -> HashMap<usize, Strength> {
    #[derive(PartialEq)]
    struct Item(f64, usize);
    impl Eq for Item {}
    impl PartialOrd for Item {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Item {
        fn cmp(&self, o: &Self) -> Ordering {
            self.0.total_cmp(&o.0).then_with(|| o.1.cmp(&self.1))
        }
    }
    let mut best: HashMap<usize, Strength> = HashMap::new();
    let mut heap = BinaryHeap::new();
    best.insert(from, Strength(None));
    heap.push(Item(Strength(None).rank(), from));
    while let Some(Item(rank, n)) = heap.pop() {
        if best.get(&n).is_some_and(|s| s.rank() > rank) {
            continue;
        }
        let here = best.get(&n).copied().unwrap_or(Strength(None));
        for &(m, edge) in adj.of(n) {
            let via = here.min(edge);
            if best.get(&m).is_none_or(|s| s.rank() < via.rank()) {
                best.insert(m, via);
                heap.push(Item(via.rank(), m));
            }
        }
    }
    best
}

/// An instruction's shingles read back from the spill, boilerplate removed.
struct Sets<'a> {
    graph: &'a Graph,
    boilerplate: &'a FxHashSet<u64>,
}

impl Sets<'_> {
    /// Reads instruction `i`'s set into `out` (its little-endian bytes, what its hash is
    /// taken of, into `buf`); false when it is empty.
    fn read(&self, i: u32, out: &mut Vec<u64>, buf: &mut Vec<u8>) -> std::io::Result<bool> {
        out.clear();
        let Some(at) = self.graph.shingles.get(i as usize).copied().flatten() else { return Ok(false) };
        self.graph.spill.read_at(at, buf)?;
        spill::from_bytes(buf, u64::from_le_bytes, out);
        out.retain(|x| !self.boilerplate.contains(x));
        spill::to_bytes(out, u64::to_le_bytes, buf);
        Ok(!out.is_empty())
    }

    /// Each instruction that is not generic and whose set is not empty, in order, with its
    /// set's hash and its signature's band keys.
    fn signed(&self) -> std::io::Result<Vec<(u32, (u64, minhash::BandKeys))>> {
        let g = self.graph;
        (0..g.instructions.len() as u32)
            .into_par_iter()
            .map_init(
                || (Vec::new(), Vec::new()),
                |(set, buf), i| {
                    if g.generic.get(i as usize).is_none_or(|g| *g) || !self.read(i, set, buf)? {
                        return Ok(None);
                    }
                    Ok(Some((i, (minhash::hash64(buf), minhash::band_keys(&minhash::signature(set))))))
                },
            )
            .filter_map(Result::transpose)
            .collect()
    }

    /// The pairs of `candidates` (sorted) whose sets' Jaccard similarity is at least `least`.
    fn similar(&self, candidates: &[(u32, u32)], least: f64) -> std::io::Result<Vec<NearLink>> {
        let found: std::io::Result<Vec<Vec<NearLink>>> = candidates
            .par_chunk_by(|x, y| x.0 == y.0)
            .map_init(
                || (Vec::new(), Vec::new(), Vec::new()),
                |(set, other, buf), run| {
                    let mut near = Vec::new();
                    let Some(&(a, _)) = run.first() else { return Ok(near) };
                    self.read(a, set, buf)?;
                    for &(_, b) in run {
                        self.read(b, other, buf)?;
                        let j = minhash::jaccard(set, other);
                        if j >= least {
                            near.push((a, b, j));
                        }
                    }
                    Ok(near)
                },
            )
            .collect();
        Ok(found?.into_iter().flatten().collect())
    }
}

/// The shingles in at least `floor` of the spilled sets, exactly, in memory of at most
/// `spilled / floor` counters (not one per distinct shingle): a Misra-Gries pass keeps every
/// shingle more frequent than `spilled / (k + 1)` among its `k` candidates, and a second pass
/// counts the candidates.
fn frequent_shingles(spill: &mut SpillReader, spilled: u64, floor: u64) -> std::io::Result<FxHashSet<u64>> {
    let k = (spilled / floor.max(1) + 1) as usize;
    // Shingles are XXH3 hashes already: SipHash over them was half of this pass.
    let mut counts: FxHashMap<u64, u64> = FxHashMap::with_capacity_and_hasher(k + 1, Default::default());
    let mut set = Vec::new();
    spill.each(|entry| {
        spill::from_bytes(entry, u64::from_le_bytes, &mut set);
        for x in &set {
            if let Some(c) = counts.get_mut(x) {
                *c += 1;
            } else if counts.len() < k {
                counts.insert(*x, 1);
            } else {
                counts.retain(|_, c| {
                    *c -= 1;
                    *c > 0
                });
            }
        }
    })?;
    counts.values_mut().for_each(|c| *c = 0);
    spill.each(|entry| {
        spill::from_bytes(entry, u64::from_le_bytes, &mut set);
        set.iter().for_each(|x| _ = counts.get_mut(x).map(|c| *c += 1));
    })?;
    Ok(counts.into_iter().filter(|&(_, c)| c >= floor).map(|(x, _)| x).collect())
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The graph's edges by node, in one vector (a `Vec` per node cost more than its edges):
/// node `n`'s neighbours and edge strengths are `to[start[n]..start[n + 1]]`, in the order
/// they were added.
struct Adjacency {
    start: Vec<usize>,
    to: Vec<(usize, Strength)>,
}

impl Adjacency {
    fn of(&self, n: usize) -> &[(usize, Strength)] {
        match (self.start.get(n), self.start.get(n + 1)) {
            (Some(&a), Some(&b)) => self.to.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// Union-find with path halving; the smaller root wins, so roots do not depend on order.
struct UnionFind(Vec<usize>);

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind((0..n).collect())
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        let (lo, hi) = (a.min(b), a.max(b));
        self.0[hi] = lo;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, instruction: Option<&str>, role: &str) -> (Row, Option<Vec<u64>>) {
        let mut r: Row = serde_json::from_str(
            r#"{"id": "", "source": "s", "format": "f", "path": "p", "line": null, "document_index": null,
            "shard": "", "shard_line": 0, "task_key": "", "split_key": "", "task_id": null, "environment": null,
            "model": null, "scaffold": null, "family": null, "license": null, "role": "", "status": "unknown",
            "reward": null, "outcome_known": false, "verification": "unverified", "structural_valid": true,
            "structural_problems": [], "action_observation_completeness": null, "decisions": 0, "steps": 0,
            "tool_calls": 0, "subagents": 0, "gaps": {}, "complete": true, "sft_eligible": true,
            "training_eligible": true, "quality_tier": 0, "task_rank": 0, "duplicate_group": "",
            "duplicate_group_size": 1, "split": "train", "content_digest": "", "prompt_tokens": null,
            "completion_tokens": null, "cost_usd": null, "environment_version": null, "interaction_digest": "",
            "duplicate_outcomes_disagree": false, "duration_seconds": null, "cached_tokens": null}"#,
        )
        .expect("row");
        (r.id, r.task_key, r.split_key, r.role) = (key.into(), key.into(), key.into(), role.into());
        r.instruction_digest = instruction.and_then(instruction_digest);
        (r, instruction.map(minhash::shingles))
    }

    fn cluster_of(rows: &[(Row, Option<Vec<u64>>)], opts: &ClusterOptions) -> Clusters {
        let mut c = Collector::default();
        for (r, s) in rows {
            c.add(r, s.clone());
        }
        c.cluster(opts, &SplitConfig::default()).expect("cluster")
    }

    #[test]
    fn frequent_shingles_are_exactly_those_in_at_least_floor_sets() {
        // Synthetic: the counting rule itself, against a full count, on skewed sets (a few
        // shingles in many sets, most in one or two) and every floor from 1 to 40.
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        let sets: Vec<Vec<u64>> = (0..300)
            .map(|_| {
                let mut s: Vec<u64> = (0..next() % 40).map(|_| next() % (1 + next() % 2_000)).collect();
                s.sort_unstable();
                s.dedup();
                s
            })
            .collect();
        let mut df: HashMap<u64, u64> = HashMap::new();
        sets.iter().flatten().for_each(|x| *df.entry(*x).or_default() += 1);
        let mut spill = Spill::default();
        let mut buf = Vec::new();
        for s in &sets {
            spill::to_bytes(s, u64::to_le_bytes, &mut buf);
            spill.push(&[&buf]);
        }
        let mut reader = spill.reader().expect("reader");
        let spilled = sets.iter().map(|s| s.len() as u64).sum();
        for floor in 1..=40 {
            let want: FxHashSet<u64> = df.iter().filter(|&(_, &c)| c >= floor).map(|(x, _)| *x).collect();
            let got = frequent_shingles(&mut reader, spilled, floor).expect("count");
            assert_eq!(got, want, "floor {floor}");
            if floor == 10 {
                // The counters are fewer than the distinct shingles: candidates were evicted.
                assert_eq!((want.len(), df.len(), spilled / floor + 1), (81, 1480, 535));
            }
        }
    }

    /// Synthetic: a chain key -> instruction -> key -> near-duplicate, an unrelated task
    /// and a row without an instruction.
    fn chain() -> Vec<(Row, Option<Vec<u64>>)> {
        let base = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu";
        vec![
            row("k-eval", Some(base), "evaluation_only"),
            row("a-copy", Some(base), "training"),
            row("b-near", Some(&format!("{base} nu")), "training"),
            row("c-other", Some("something else entirely different here"), "training"),
            row("d-none", None, "training"),
        ]
    }

    #[test]
    fn keys_and_instructions_union_and_reasons_follow_the_strongest_chain() {
        // Synthetic: the rule itself.
        let rows = chain();
        let got = cluster_of(&rows, &ClusterOptions::default());
        assert_eq!(got.clusters.len(), 3);
        let by_key: HashMap<&str, &Link> = got.links.iter().map(|l| (l.split_key.as_str(), l)).collect();
        assert_eq!(by_key["k-eval"].reason, Reason::SameKey);
        assert_eq!(by_key["a-copy"].reason, Reason::SameInstruction);
        assert_eq!(by_key["b-near"].reason, Reason::NearDuplicate(10.0 / 11.0));
        assert_eq!(by_key["k-eval"].cluster, by_key["b-near"].cluster);
        assert_ne!(by_key["k-eval"].cluster, by_key["c-other"].cluster);
        assert_eq!(by_key["d-none"].instruction_digest, "");
        let protected = got.clusters.iter().find(|c| c.id == by_key["k-eval"].cluster).expect("cluster");
        assert_eq!((protected.anchor.as_str(), protected.split.as_str(), protected.keys), ("k-eval", PROTECTED, 3));
    }

    #[test]
    fn a_task_pair_finds_the_cluster_its_link_names() {
        // Synthetic: the chain above, a repeated pair and a second key of an instruction;
        // the near-duplicate groups bucket interactions by `cluster_of`.
        let mut rows = chain();
        rows.insert(
            4,
            row("k-eval", Some("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"), "training"),
        );
        rows.push(row("d-none", Some("something else entirely different here"), "training"));
        let mut c = Collector::default();
        let pairs: Vec<TaskPair> = rows.iter().map(|(r, s)| c.add(r, s.clone())).collect();
        assert_eq!(pairs[0], pairs[4]);
        let got = c.cluster(&ClusterOptions::default(), &SplitConfig::default()).expect("cluster");
        let link = |r: &Row| {
            let instruction = r.instruction_digest.clone().unwrap_or_default();
            got.links.iter().find(|l| l.split_key == r.split_key && l.instruction_digest == instruction).expect("link")
        };
        for (a, pa) in rows.iter().zip(&pairs) {
            assert!(got.cluster_of(*pa).is_some());
            for (b, pb) in rows.iter().zip(&pairs) {
                let same = link(&a.0).cluster == link(&b.0).cluster;
                assert_eq!(got.cluster_of(*pa) == got.cluster_of(*pb), same, "{} {}", a.0.split_key, b.0.split_key);
            }
        }
        assert_eq!(got.clusters.len(), 2);
        assert_eq!(got.cluster_of(TaskPair(pairs.len() as u32 + 1)), None);
    }

    #[test]
    fn order_of_arrival_does_not_matter() {
        let rows: Vec<_> = (0..30)
            .map(|i| row(&format!("k{i}"), Some(&format!("task {} word {} more words here", i % 7, i % 3)), "training"))
            .collect();
        let a = cluster_of(&rows, &ClusterOptions::default());
        let mut reversed = rows.clone();
        reversed.reverse();
        let b = cluster_of(&reversed, &ClusterOptions::default());
        assert_eq!(a.links, b.links);
        assert_eq!(a.clusters, b.clusters);
    }

    #[test]
    fn a_shared_template_does_not_merge_unrelated_tasks() {
        // Synthetic: 20 tasks behind one 60-word preamble, each with its own short request.
        let preamble: String = (0..60).map(|i| format!("rule{i} ")).collect();
        let rows: Vec<_> = (0..20)
            .map(|i| {
                let task = format!("{preamble} now do task number {i} on file f{i} with option o{i}");
                row(&format!("k{i:02}"), Some(&task), "training")
            })
            .collect();
        let got = cluster_of(&rows, &ClusterOptions::default());
        assert_eq!(got.clusters.len(), 20, "the preamble is boilerplate");
        assert!(got.boilerplate_shingles >= 58);
        let off =
            ClusterOptions { boilerplate_fraction: 1.0, boilerplate_min_instructions: 1_000, ..Default::default() };
        assert_eq!(cluster_of(&rows, &off).clusters.len(), 1, "without the rule the template merges all");
    }
}
