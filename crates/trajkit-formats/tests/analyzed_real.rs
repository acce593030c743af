//! An analyzer sees every record sealed: the records whose canonical text leaves the worker
//! are sealed and analyzed after their group's digests are hashed side by side (`build`,
//! Python's Arrow rows), and the content and interaction digests the analyzer gets must be
//! the ones the record has when taken alone, and the ones its canonical text carries.

mod common;

use std::sync::Arc;

use common::real;
use trajkit_formats::pipeline::Analyzer;
use trajkit_formats::{read_paths_analyzed, InputFile, ReadRequest, Rejection, Sink};
use trajkit_model::{content_digest, interaction_digest, Trajectory};

/// What the analyzer saw of one record, and what the record gives taken alone.
struct Seen {
    given: (String, Option<String>),
    alone: (String, Option<String>),
    subagents: usize,
}

/// Checks each analysis against the canonical text it comes with.
#[derive(Default)]
struct Check {
    records: usize,
    with_subagents: usize,
    mismatches: Vec<String>,
    rejections: Vec<String>,
}

impl Sink for Check {
    fn trajectory(&mut self, _: &InputFile, _: Option<&Trajectory>, _: Option<&[u8]>) {
        self.mismatches.push("a record reached the sink unanalyzed".into());
    }

    fn rejection(&mut self, r: &Rejection) {
        self.rejections.push(format!("{:?}: {}", r.reason, r.problems.first().map_or("", |p| p.message.as_str())));
    }

    fn analyzed(&mut self, file: &InputFile, analysis: Box<dyn std::any::Any + Send>, canonical: Option<&[u8]>) {
        self.records += 1;
        let Ok(seen) = analysis.downcast::<Seen>() else { return self.mismatches.push("not a Seen".into()) };
        self.with_subagents += usize::from(seen.subagents > 0);
        let text: serde_json::Value = canonical.and_then(|c| serde_json::from_slice(c).ok()).unwrap_or_default();
        let written = text["content_digest"].as_str().unwrap_or_default();
        if seen.given != seen.alone || written != seen.given.0 {
            self.mismatches.push(format!("{}: {:?} {:?} {written}", file.display, seen.given, seen.alone));
        }
    }
}

/// Reads every real fixture with canonical text and an analyzer taking (or not) the
/// interaction digest; returns the sink.
fn analyze_all(interaction: bool) -> Check {
    let run = Arc::new(move |t: &Trajectory, given: Option<String>| {
        let alone = content_digest(&mut t.clone()).unwrap_or_default();
        let alone_interaction = interaction.then(|| interaction_digest(t).ok()).flatten();
        let seen = Seen {
            given: (t.content_digest.clone(), given),
            alone: (alone, alone_interaction),
            subagents: t.subagents.len(),
        };
        Box::new(seen) as Box<dyn std::any::Any + Send>
    });
    let analyze = Analyzer { interaction, run };
    let req = ReadRequest { paths: vec![real("")], ..ReadRequest::default() };
    let mut check = Check::default();
    read_paths_analyzed(&req, true, false, Some(analyze), &mut |_, _| {}, &mut check).expect("read");
    check
}

/// The accepted records of the real fixtures, as the digest pin lists them.
fn accepted_in_pin() -> usize {
    let pin = std::fs::read_to_string(real("").join("../digests/real.tsv")).expect("pin");
    pin.lines().filter(|l| l.split('\t').nth(2) == Some("accepted")).count()
}

#[test]
fn every_analyzed_record_carries_the_digests_it_has_alone() {
    for interaction in [true, false] {
        let check = analyze_all(interaction);
        assert_eq!(check.mismatches, Vec::<String>::new());
        assert_eq!(check.records, 529);
        assert_eq!(check.records, accepted_in_pin());
        assert_eq!(check.with_subagents, 11, "records with subagents are sealed on the spot");
    }
}

/// An analyzer that panics rejects the record it panicked on, named as an internal error,
/// and the read goes on: here on the five records of the real tau2 Gym fixture (the panic
/// messages on stderr are the test's own).
#[test]
fn an_analyzer_panic_rejects_its_record() {
    let run = Arc::new(|t: &Trajectory, given: Option<String>| -> Box<dyn std::any::Any + Send> {
        assert!(!t.provenance.path.ends_with("tau2__example_rollouts.jsonl"), "analyzer bug");
        let seen = Seen {
            given: (t.content_digest.clone(), given.clone()),
            alone: (t.content_digest.clone(), given),
            subagents: 0,
        };
        Box::new(seen)
    });
    let analyze = Analyzer { interaction: true, run };
    let req = ReadRequest { paths: vec![real("gym")], ..ReadRequest::default() };
    let mut check = Check::default();
    let outcome = read_paths_analyzed(&req, true, false, Some(analyze), &mut |_, _| {}, &mut check).expect("read");
    // `inspect` accepts 113 records of these files and rejects 25 as not rollouts.
    assert_eq!(check.records, 113 - 5);
    let want = "InternalError: the analyzer failed on this record: analyzer bug";
    assert_eq!(check.rejections.iter().filter(|r| *r == want).count(), 5);
    assert_eq!(check.rejections.iter().filter(|r| r.starts_with("NotARollout")).count(), 25);
    assert_eq!(check.rejections.len(), 30);
    assert_eq!(outcome.reports.len(), 30);
}
