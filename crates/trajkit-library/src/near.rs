//! Near-duplicate trajectory groups: within one task cluster, trajectories whose
//! action/observation content is nearly the same (one-permutation MinHash over 5-word
//! shingles, LSH banding, estimated similarity at least `--trajectory-similarity`).
//! Beside the exact duplicate groups; sketched once per distinct interaction in the
//! partial (map) phase, grouped in finalize (the sketches wait in a spill file, not in
//! memory). Rules: docs/library.md#near-duplicate-groups.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rayon::prelude::*;
use trajkit_model::Trajectory;

use crate::clusters::{Clusters, TaskPair};
use crate::digest::Digest;
use crate::minhash::{self, Signature};
use crate::spill::{self, Spill};

/// The content sketch of a run: the text of its own steps' content, tool calls (name and
/// argument values) and tool results, in order; copied context left out.
pub fn content_sketch(t: &Trajectory) -> Option<Signature> {
    crate::signatures::of(t, true, false).sketch
}

/// The `near-` group id of an interaction digest (16 hex digits, like `dup-`).
pub fn group_id(interaction_digest: &str) -> String {
    format!("near-{}", interaction_digest.get(..16).unwrap_or(interaction_digest))
}

/// Per distinct interaction: its task (the tasks collector's number for its split key and
/// instruction) and where its sketch lies in the spill. Held in memory, the sketches grew
/// finalize by 0.5 KiB per distinct interaction; the digest and the task's two strings by
/// about 200 bytes more than this 64-byte entry.
#[derive(Default)]
pub struct Collector {
    items: HashMap<Digest, (TaskPair, Option<u64>)>,
    spill: Spill,
    /// Reused for a sketch's bytes.
    buf: Vec<u8>,
}

impl Collector {
    /// A collector that spills the sketches into `dir`.
    pub fn in_dir(dir: &Path) -> Collector {
        Collector { spill: Spill::in_dir(dir), ..Collector::default() }
    }

    /// Notes a trajectory's interaction and task (the first row of each names its task).
    pub fn add(&mut self, interaction_digest: &str, task: TaskPair, sketch: Option<Signature>) {
        let e = self.items.entry(Digest::new(interaction_digest)).or_insert((task, None));
        if let (None, Some(sketch)) = (e.1, sketch) {
            spill::to_bytes(&sketch, u32::to_le_bytes, &mut self.buf);
            e.1 = Some(self.spill.push(&[&self.buf]));
        }
    }

    /// Groups near-duplicate interactions within each task cluster: the members of groups
    /// of at least two interactions, by digest, with their group and best similarity. Fails
    /// only reading the spill.
    pub fn group(self, clusters: &Clusters, threshold: f64) -> std::io::Result<Vec<Member>> {
        let mut by_cluster: BTreeMap<u32, Vec<(&Digest, u64)>> = BTreeMap::new();
        for (digest, (task, at)) in &self.items {
            if let (Some(c), Some(at)) = (clusters.cluster_of(*task), at) {
                by_cluster.entry(c).or_default().push((digest, *at));
            }
        }
        let spill = self.spill.reader()?;
        // Clusters are grouped apart, on every core.
        let clusters: Vec<_> = by_cluster.into_values().filter(|m| m.len() > 1).collect();
        let groups: std::io::Result<Vec<Vec<Member>>> = clusters
            .into_par_iter()
            .map_init(Vec::new, |buf, members| {
                let mut members: Vec<(String, u64)> = members.into_iter().map(|(d, at)| (d.to_string(), at)).collect();
                members.sort_unstable();
                let mut sketches = Vec::with_capacity(members.len());
                for (digest, at) in &members {
                    spill.read_at(*at, buf)?;
                    let mut sketch = Vec::new();
                    spill::from_bytes(buf, u32::from_le_bytes, &mut sketch);
                    sketches.push((digest.as_str(), sketch));
                }
                Ok(group_cluster(&sketches, threshold))
            })
            .collect();
        let mut out: Vec<Member> = groups?.into_iter().flatten().collect();
        out.sort_by(|a, b| a.interaction_digest.cmp(&b.interaction_digest));
        Ok(out)
    }
}

/// A member of a near-duplicate group of two or more interactions.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub interaction_digest: String,
    pub group: String,
    /// The highest estimated similarity to another member, 4 decimals.
    pub similarity: f64,
}

/// The groups of one cluster's interactions (sorted by digest).
fn group_cluster(members: &[(&str, Signature)], threshold: f64) -> Vec<Member> {
    let refs: Vec<(u32, &[u32])> = members.iter().enumerate().map(|(i, (_, s))| (i as u32, s.as_slice())).collect();
    let mut parent: Vec<usize> = (0..members.len()).collect();
    let mut best = vec![0.0f64; members.len()];
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for (a, b) in minhash::candidates(&refs) {
        let (a, b) = (a as usize, b as usize);
        let s = minhash::estimate(&members[a].1, &members[b].1);
        if s >= threshold {
            best[a] = best[a].max(s);
            best[b] = best[b].max(s);
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            parent[ra.max(rb)] = ra.min(rb);
        }
    }
    (0..members.len())
        .filter(|&i| best[i] > 0.0)
        .map(|i| {
            let root = find(&mut parent, i);
            Member {
                interaction_digest: members[i].0.to_string(),
                group: group_id(members[root].0),
                similarity: (best[i] * 10_000.0).round() / 10_000.0,
            }
        })
        .collect()
}

/// The near-duplicate tables, and each trajectory's group, size and similarity; run after
/// `index::finalize` (exact duplicate group sizes, the near-duplicate group size of a
/// non-member, and the interaction index exist).
const APPLY: &str = "
CREATE TABLE near_duplicate_members (interaction_digest TEXT PRIMARY KEY, near_duplicate_group TEXT NOT NULL,
  similarity REAL NOT NULL) WITHOUT ROWID;
";

const FINISH: &str = "
UPDATE trajectories SET near_duplicate_group = m.near_duplicate_group, near_duplicate_similarity = m.similarity
  FROM near_duplicate_members AS m WHERE m.interaction_digest = trajectories.interaction_digest;
CREATE TABLE near_duplicate_groups (near_duplicate_group TEXT PRIMARY KEY, task_cluster TEXT,
  interactions INTEGER NOT NULL, size INTEGER NOT NULL, trajectory_ids TEXT NOT NULL);
INSERT INTO near_duplicate_groups
  SELECT near_duplicate_group, min(task_cluster), count(DISTINCT interaction_digest), count(*), json_group_array(id)
  FROM (SELECT near_duplicate_group, task_cluster, interaction_digest, id FROM trajectories
        WHERE interaction_digest IN (SELECT interaction_digest FROM near_duplicate_members) ORDER BY ordinal)
  GROUP BY near_duplicate_group ORDER BY near_duplicate_group;
UPDATE trajectories SET near_duplicate_group_size = g.size
  FROM near_duplicate_groups AS g WHERE g.near_duplicate_group = trajectories.near_duplicate_group;
CREATE INDEX trajectories_near_duplicate_group ON trajectories (near_duplicate_group);
";

/// Writes the near-duplicate groups into the finalized index.
pub fn write_index(
    conn: &rusqlite::Connection,
    path: &std::path::Path,
    members: &[Member],
) -> Result<(), crate::LibraryError> {
    let sql = |source| crate::LibraryError::Sqlite { path: path.to_path_buf(), source };
    conn.execute_batch("BEGIN").map_err(sql)?;
    conn.execute_batch(APPLY).map_err(sql)?;
    let mut st = conn.prepare("INSERT INTO near_duplicate_members VALUES (?1, ?2, ?3)").map_err(sql)?;
    for m in members {
        st.execute(rusqlite::params![m.interaction_digest, m.group, m.similarity]).map_err(sql)?;
    }
    conn.execute_batch(FINISH).map_err(sql)?;
    conn.execute_batch("COMMIT").map_err(sql)
}
