//! Pass 1 over the rows: the summary figures (counters only, no record is held) and the
//! deterministic sample of examples (a few ids per source).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashSet};

use trajkit_library::Row;

/// Outcome class of a row, from its `status` (anything but success/failure is unknown:
/// an unknown outcome is never counted as a failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    Success,
    Failure,
    Unknown,
}

impl Class {
    pub const ALL: [Class; 3] = [Class::Success, Class::Failure, Class::Unknown];

    pub fn of(status: &str) -> Class {
        match status {
            "success" => Class::Success,
            "failure" => Class::Failure,
            _ => Class::Unknown,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Success => "success",
            Class::Failure => "failure",
            Class::Unknown => "unknown",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Trajectories per outcome class.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcomes {
    pub success: u64,
    pub failure: u64,
    pub unknown: u64,
}

impl Outcomes {
    pub fn add(&mut self, class: Class, n: u64) {
        match class {
            Class::Success => self.success += n,
            Class::Failure => self.failure += n,
            Class::Unknown => self.unknown += n,
        }
    }

    pub fn get(&self, class: Class) -> u64 {
        match class {
            Class::Success => self.success,
            Class::Failure => self.failure,
            Class::Unknown => self.unknown,
        }
    }

    pub fn total(&self) -> u64 {
        self.success + self.failure + self.unknown
    }

    pub fn merge(&mut self, other: &Outcomes) {
        for c in Class::ALL {
            self.add(c, other.get(c));
        }
    }
}

/// Buckets of a histogram: 0, 1, 2–3, 4–7, ... 256–511, 512 and more.
pub const BUCKETS: usize = 11;

/// A log2-bucketed histogram (fixed size whatever the library size).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Histogram {
    pub counts: [u64; BUCKETS],
}

impl Histogram {
    pub fn add(&mut self, value: u64) {
        let bucket = if value == 0 { 0 } else { (1 + value.ilog2() as usize).min(BUCKETS - 1) };
        self.counts[bucket] += 1;
    }

    /// The label of bucket `i` (`0`, `1`, `2–3`, ..., `512+`).
    pub fn label(i: usize) -> String {
        match i {
            0 => "0".into(),
            1 => "1".into(),
            i if i == BUCKETS - 1 => format!("{}+", 1u64 << (i - 1)),
            i => format!("{}–{}", 1u64 << (i - 1), (1u64 << i) - 1),
        }
    }
}

/// What the summary shows about one source.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SourceFigures {
    pub outcomes: Outcomes,
    pub formats: BTreeSet<String>,
    pub family: Option<String>,
    pub license: Option<String>,
    pub steps: u64,
    pub tool_calls: u64,
}

/// The label used for rows that name no model.
pub const NO_MODEL: &str = "(not stated)";

/// Summary figures of a library, accumulated one row at a time.
#[derive(Debug, Default)]
pub struct Summary {
    pub trajectories: u64,
    /// 64-bit hashes of the distinct task keys: 8 bytes per task, not the keys themselves.
    task_hashes: HashSet<u64>,
    pub outcomes: Outcomes,
    pub by_source: BTreeMap<String, SourceFigures>,
    pub by_model: BTreeMap<String, Outcomes>,
    pub by_split: BTreeMap<String, u64>,
    pub by_verification: BTreeMap<String, u64>,
    pub steps: Histogram,
    pub tool_calls: Histogram,
    pub total_steps: u64,
    pub total_tool_calls: u64,
    pub total_subagents: u64,
}

impl Summary {
    pub fn add(&mut self, row: &Row) {
        let class = Class::of(&row.status);
        self.trajectories += 1;
        self.task_hashes.insert(stable_hash(row.task_key.as_bytes()));
        self.outcomes.add(class, 1);
        let source = self.by_source.entry(row.source.clone()).or_default();
        source.outcomes.add(class, 1);
        if !source.formats.contains(&row.format) {
            source.formats.insert(row.format.clone());
        }
        source.family = source.family.take().or_else(|| row.family.clone());
        source.license = source.license.take().or_else(|| row.license.clone());
        source.steps += row.steps;
        source.tool_calls += row.tool_calls;
        let model = row.model.as_deref().unwrap_or(NO_MODEL);
        self.by_model.entry(model.to_string()).or_default().add(class, 1);
        *self.by_split.entry(row.split.clone()).or_default() += 1;
        *self.by_verification.entry(row.verification.clone()).or_default() += 1;
        self.steps.add(row.steps);
        self.tool_calls.add(row.tool_calls);
        self.total_steps += row.steps;
        self.total_tool_calls += row.tool_calls;
        self.total_subagents += row.subagents;
    }

    /// Distinct task keys.
    pub fn tasks(&self) -> u64 {
        self.task_hashes.len() as u64
    }

    /// Sources in page order: most trajectories first, then by name.
    pub fn sources_in_page_order(&self) -> Vec<(&str, &SourceFigures)> {
        let mut v: Vec<(&str, &SourceFigures)> = self.by_source.iter().map(|(k, f)| (k.as_str(), f)).collect();
        v.sort_by(|a, b| b.1.outcomes.total().cmp(&a.1.outcomes.total()).then(a.0.cmp(b.0)));
        v
    }
}

/// FNV-1a over `bytes`, finished with the SplitMix64 mixer: a stable 64-bit hash (the
/// same on every machine and release, unlike `std`'s randomly keyed hasher).
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A sampling candidate, ordered by its rank: rows with steps before empty ones, then
/// by the stable hash of the row id (the id breaks the practically impossible ties).
/// It keeps its row (where its record lies) and its place in library order.
#[derive(Debug, Clone)]
struct Candidate {
    empty: bool,
    hash: u64,
    seq: u64,
    row: Box<Row>,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.empty, self.hash, &self.row.id).cmp(&(other.empty, other.hash, &other.row.id))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One chosen example: its row, and its place in library order (the order in which its
/// record is redacted, so that placeholders are numbered as they always were).
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub class: Class,
    pub seq: u64,
    pub row: Box<Row>,
}

/// Keeps, per source and outcome class, the `k` best-ranked rows (a bounded max-heap):
/// memory is at most 3·k ids per source, whatever the library size, and the choice does
/// not depend on the order of the rows.
pub struct Sampler {
    k: usize,
    per_source: BTreeMap<String, [BinaryHeap<Candidate>; 3]>,
    /// Rows added so far.
    seen: u64,
}

impl Sampler {
    pub fn new(k: usize) -> Sampler {
        Sampler { k, per_source: BTreeMap::new(), seen: 0 }
    }

    pub fn add(&mut self, row: &Row) {
        if self.k == 0 {
            return;
        }
        let seq = self.seen;
        self.seen += 1;
        let heaps = self.per_source.entry(row.source.clone()).or_default();
        let heap = &mut heaps[Class::of(&row.status).index()];
        let (empty, hash) = (row.steps == 0, stable_hash(row.id.as_bytes()));
        if heap.len() >= self.k {
            // Full: the row replaces the worst candidate only when it ranks before it.
            let worse = |w: &Candidate| (empty, hash, row.id.as_str()) >= (w.empty, w.hash, w.row.id.as_str());
            if heap.peek().is_none_or(worse) {
                return;
            }
            heap.pop();
        }
        heap.push(Candidate { empty, hash, seq, row: Box::new(row.clone()) });
    }

    /// The examples of each source in display order (successes, failures, unknown; each
    /// by rank), `k` at most: half successes (rounded up) and half failures, a class with
    /// too few rows leaving its places to the other, then to unknown outcomes.
    pub fn choose(self) -> BTreeMap<String, Vec<Pick>> {
        let k = self.k;
        self.per_source
            .into_iter()
            .map(|(source, heaps)| {
                let [s, f, u] = heaps.map(BinaryHeap::into_sorted_vec);
                let (ns, nf, nu) = allot(k, s.len(), f.len(), u.len());
                let picks = [(s, ns, Class::Success), (f, nf, Class::Failure), (u, nu, Class::Unknown)]
                    .into_iter()
                    .flat_map(|(v, n, class)| {
                        v.into_iter().take(n).map(move |c| Pick { class, seq: c.seq, row: c.row })
                    })
                    .collect();
                (source, picks)
            })
            .collect()
    }
}

/// How many successes, failures and unknown-outcome examples to show out of `k`.
fn allot(k: usize, s: usize, f: usize, u: usize) -> (usize, usize, usize) {
    let mut ns = s.min(k.div_ceil(2));
    let mut nf = f.min(k / 2);
    let mut rest = k - ns - nf;
    let more_s = rest.min(s - ns);
    ns += more_s;
    rest -= more_s;
    let more_f = rest.min(f - nf);
    nf += more_f;
    rest -= more_f;
    (ns, nf, rest.min(u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allotment_balances_and_backfills() {
        assert_eq!(allot(4, 10, 10, 10), (2, 2, 0));
        assert_eq!(allot(4, 1, 10, 0), (1, 3, 0));
        assert_eq!(allot(4, 0, 0, 7), (0, 0, 4));
        assert_eq!(allot(5, 1, 1, 7), (1, 1, 3));
        assert_eq!(allot(3, 9, 9, 0), (2, 1, 0));
        assert_eq!(allot(0, 9, 9, 9), (0, 0, 0));
    }

    #[test]
    fn histogram_buckets_are_log2() {
        let mut h = Histogram::default();
        for v in [0, 1, 2, 3, 4, 7, 8, 511, 512, 100_000] {
            h.add(v);
        }
        assert_eq!(h.counts, [1, 1, 2, 2, 1, 0, 0, 0, 0, 1, 2]);
        assert_eq!(Histogram::label(2), "2–3");
        assert_eq!(Histogram::label(9), "256–511");
        assert_eq!(Histogram::label(10), "512+");
    }

    fn row(id: &str, source: &str, status: &str, steps: u64) -> Row {
        Row {
            id: id.into(),
            source: source.into(),
            format: "gym".into(),
            path: "p.jsonl".into(),
            line: Some(1),
            document_index: None,
            shard: "canonical/part-00000.jsonl.zst".into(),
            shard_line: 1,
            task_key: format!("task-{}", id.len()),
            split_key: format!("task-{}", id.len()),
            task_id: None,
            environment: None,
            model: None,
            scaffold: None,
            family: None,
            license: None,
            role: "training".into(),
            status: status.into(),
            reward: None,
            outcome_known: status != "unknown",
            verification: "unverified".into(),
            structural_valid: true,
            structural_problems: vec![],
            action_observation_completeness: None,
            decisions: 0,
            steps,
            tool_calls: 0,
            subagents: 0,
            gaps: BTreeMap::new(),
            complete: true,
            sft_eligible: true,
            training_eligible: true,
            quality_tier: 0,
            task_rank: 1,
            duplicate_group: "dup-0".into(),
            duplicate_group_size: 1,
            split: "train".into(),
            content_digest: String::new(),
            prompt_tokens: None,
            completion_tokens: None,
            cost_usd: None,
            environment_version: None,
            interaction_digest: String::new(),
            duplicate_outcomes_disagree: false,
            duration_seconds: None,
            cached_tokens: None,
            ..Row::default()
        }
    }

    #[test]
    fn the_sample_does_not_depend_on_row_order_and_prefers_rows_with_steps() {
        let rows: Vec<Row> = (0..40)
            .map(|i| {
                let status = ["success", "failure", "unknown"][i % 3];
                row(&format!("r{i}"), if i % 2 == 0 { "a" } else { "b" }, status, (i % 5) as u64)
            })
            .collect();
        let choose = |order: &mut dyn Iterator<Item = &Row>| {
            let mut s = Sampler::new(4);
            order.for_each(|r| s.add(r));
            s.choose()
        };
        // What was chosen (classes and rows); `seq` is each pick's place in the order read.
        let chosen = |picks: &BTreeMap<String, Vec<Pick>>| -> Vec<(String, Class, Row)> {
            let all = picks.iter().flat_map(|(s, v)| v.iter().map(move |p| (s.clone(), p.class, *p.row.clone())));
            all.collect()
        };
        let forward = choose(&mut rows.iter());
        let backward = choose(&mut rows.iter().rev());
        assert_eq!(chosen(&forward), chosen(&backward));
        for picks in forward.values() {
            for p in picks {
                assert_eq!(rows[p.seq as usize], *p.row, "seq is the place in the order read");
            }
        }
        for picks in forward.values() {
            assert_eq!(
                picks.iter().map(|p| p.class).collect::<Vec<_>>(),
                [Class::Success, Class::Success, Class::Failure, Class::Failure]
            );
            for p in picks {
                let r = rows.iter().find(|r| r.id == p.row.id).expect("picked row");
                assert_ne!(r.steps, 0, "{} has no steps but rows with steps were left", r.id);
            }
        }
        assert_eq!(stable_hash(b"r1"), stable_hash(b"r1"));
        assert_ne!(stable_hash(b"r1"), stable_hash(b"r2"));
    }
}
