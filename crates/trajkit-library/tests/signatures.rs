//! A run's content signatures made in one walk (`signatures::of` with both) equal those made
//! one at a time, on every accepted record of the real fixtures.

use std::path::{Path, PathBuf};

use trajkit_formats::{discover, read_inputs, InputFile, Options, Sink};
use trajkit_library::signatures::{self, Signatures};
use trajkit_model::{LazyValue, Trajectory};

struct Collect(Vec<Trajectory>);

impl Sink for Collect {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        self.0.extend(t.cloned());
    }
}

/// Reads every real fixture's accepted records.
fn real_records() -> Vec<Trajectory> {
    let real: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
    let (files, errors) = discover(&[real]);
    assert!(errors.is_empty(), "{errors:?}");
    let mut sink = Collect(Vec::new());
    read_inputs(files, &Options { records: true, ..Options::default() }, &mut sink).expect("read");
    sink.0
}

/// Content, arguments and tool output kept as text are signed from their text; the
/// signatures are those of the parsed values, on every accepted record of the real fixtures.
#[test]
fn values_kept_as_text_sign_as_their_parsed_values() {
    let parsed = |v: &LazyValue| LazyValue::from(v.value().clone());
    let (mut texts, mut containers) = (0, 0);
    for t in &real_records() {
        let mut values = t.clone();
        for step in &mut values.steps {
            let lazies = step.content.iter_mut().chain(step.tool_calls.iter_mut().map(|c| &mut c.arguments));
            for v in lazies.chain(step.tool_results.iter_mut().filter_map(|r| r.content.as_mut())) {
                if let Some(text) = v.text() {
                    texts += 1;
                    containers += usize::from(!text.starts_with('"'));
                }
                *v = parsed(v);
            }
        }
        assert_eq!(signatures::of(t, true, true), signatures::of(&values, true, true), "{}", t.id);
    }
    // Values kept as text, of which arrays and objects (the others are strings).
    assert_eq!((texts, containers), (2147, 1345));
}

#[test]
fn one_walk_makes_the_signatures_each_walk_makes() {
    let records = real_records();
    let (mut sketched, mut fingerprinted, mut non_ascii) = (0, 0, 0);
    for t in &records {
        let both = signatures::of(t, true, true);
        let apart = Signatures {
            sketch: signatures::of(t, true, false).sketch,
            fingerprints: signatures::of(t, false, true).fingerprints,
        };
        assert_eq!(both, apart, "{}", t.id);
        sketched += usize::from(both.sketch.is_some());
        fingerprinted += usize::from(both.fingerprints.is_some());
        non_ascii += usize::from(!serde_json::to_string(&t.steps).unwrap().is_ascii());
    }
    // 101 records hold non-ASCII text, which takes the two-pass path.
    assert_eq!((records.len(), sketched, fingerprinted, non_ascii), (529, 524, 497, 101));
}
