//! A run's content signatures made in one walk (`signatures::of` with both) equal those made
//! one at a time, on every accepted record of the real fixtures.

use std::path::{Path, PathBuf};

use trajkit_formats::{discover, read_inputs, InputFile, Options, Sink};
use trajkit_library::signatures::{self, Signatures};
use trajkit_model::Trajectory;

struct Collect(Vec<Trajectory>);

impl Sink for Collect {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, _: Option<&[u8]>) {
        self.0.extend(t.cloned());
    }
}

#[test]
fn one_walk_makes_the_signatures_each_walk_makes() {
    let real: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real");
    let (files, errors) = discover(&[real]);
    assert!(errors.is_empty(), "{errors:?}");
    let mut sink = Collect(Vec::new());
    read_inputs(files, &Options { records: true, ..Options::default() }, &mut sink).expect("read");
    let (mut sketched, mut fingerprinted, mut non_ascii) = (0, 0, 0);
    for t in &sink.0 {
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
    assert_eq!((sink.0.len(), sketched, fingerprinted, non_ascii), (529, 524, 497, 101));
}
