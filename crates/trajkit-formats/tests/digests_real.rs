//! The digest pin: every record of every real fixture and of the example corpus, converted
//! as `trajkit convert` converts them, against the checked-in `tests/fixtures/digests/*.tsv`
//! (id, `content_digest` and SHA-256 of the canonical bytes per record; every rejection and
//! unreadable file). Any change to a reader's output shows here as a row diff.
//!
//! Re-bless only when a change of the canonical output is intended:
//! `TRAJKIT_BLESS_DIGESTS=1 cargo test -p trajkit-formats --test digests_real`.

use std::path::{Path, PathBuf};

use trajkit_formats::{discover, read_inputs, InputFile, Options, Rejection, Sink};
use trajkit_model::{sha256_hex, Trajectory};

/// The environment variable that rewrites the pin files instead of comparing.
const BLESS: &str = "TRAJKIT_BLESS_DIGESTS";

/// The pin file's first line: its columns.
const HEADER: &str = "path\tposition\tverdict\tid\tcontent_digest\trecord_sha256";

/// One row per accepted record, rejection and unreadable file, in output order; paths
/// relative to the tree's root (`root` is relative to the crate, as cargo runs tests there).
struct Pin<'a> {
    root: &'a str,
    rows: Vec<String>,
}

impl Pin<'_> {
    /// `path` relative to the root of the tree being pinned.
    fn relative<'p>(&self, path: &'p str) -> &'p str {
        path.strip_prefix(self.root).map(|p| p.trim_start_matches('/')).unwrap_or(path)
    }
}

/// `line N`, `doc N` or `-`: where in its file a record stands.
fn position(line: Option<u64>, document_index: Option<u64>) -> String {
    match (line, document_index) {
        (Some(l), _) => format!("line {l}"),
        (None, Some(d)) => format!("doc {d}"),
        (None, None) => "-".into(),
    }
}

impl Sink for Pin<'_> {
    fn trajectory(&mut self, _: &InputFile, t: Option<&Trajectory>, canonical: Option<&[u8]>) {
        let (Some(t), Some(bytes)) = (t, canonical) else {
            panic!("the pin reads with records and canonical bytes on");
        };
        let p = &t.provenance;
        let row = format!(
            "{}\t{}\taccepted\t{}\t{}\t{}",
            self.relative(&p.path),
            position(p.line, p.document_index),
            t.id,
            t.content_digest,
            sha256_hex(bytes)
        );
        self.rows.push(row);
    }

    fn rejection(&mut self, r: &Rejection) {
        let row = format!(
            "{}\t{}\trejected\t{}\t-\t-",
            self.relative(&r.path),
            position(r.line, r.document_index),
            r.reason.as_str()
        );
        self.rows.push(row);
    }
}

/// Converts the tree at `root` (relative to the crate) and returns its pin rows.
fn pin_rows(root: &str) -> Vec<String> {
    let (files, errors) = discover(&[PathBuf::from(root)]);
    assert!(errors.is_empty(), "{errors:?}");
    let mut pin = Pin { root, rows: Vec::new() };
    let opts = Options { canonical: true, records: true, ..Options::default() };
    let reports = read_inputs(files, &opts, &mut pin).expect("read");
    for r in reports.iter().filter(|r| r.error.is_some()) {
        pin.rows.push(format!("{}\t-\tunreadable\t-\t-\t-", pin.relative(&r.path)));
    }
    pin.rows
}

/// Rows in `a` that are not in `b` (as a multiset), in `a`'s order.
fn missing_from<'a>(a: &'a [String], b: &[String]) -> Vec<&'a String> {
    let mut left: std::collections::HashMap<&String, usize> = std::collections::HashMap::new();
    for row in b {
        *left.entry(row).or_default() += 1;
    }
    a.iter()
        .filter(|row| match left.get_mut(row) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

/// A readable diff of pinned against actual rows, at most `limit` of each side.
fn diff(pinned: &[String], actual: &[String], limit: usize) -> String {
    let gone = missing_from(pinned, actual);
    let new = missing_from(actual, pinned);
    let mut out = format!("{} pinned rows missing, {} new rows:\n", gone.len(), new.len());
    for row in gone.iter().take(limit) {
        out.push_str(&format!("- {row}\n"));
    }
    for row in new.iter().take(limit) {
        out.push_str(&format!("+ {row}\n"));
    }
    if gone.is_empty() && new.is_empty() {
        out.push_str("(same rows in another order)\n");
    }
    out
}

/// Compares the rows of `root` with the pin file `name`, or rewrites it under `BLESS`.
fn check(root: &str, name: &str) -> Vec<String> {
    let rows = pin_rows(root);
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/digests").join(name);
    let text = format!("{HEADER}\n{}\n", rows.join("\n"));
    if std::env::var_os(BLESS).is_some() {
        std::fs::write(&file, text).expect("write the pin file");
        return rows;
    }
    let pinned_text = std::fs::read_to_string(&file).expect("the pin file (bless it once to create it)");
    let pinned: Vec<String> = pinned_text.lines().skip(1).map(str::to_string).collect();
    assert!(
        pinned == rows,
        "canonical output of {root} differs from {name}:\n{}\nIf the change is intended, re-bless with \
         {BLESS}=1 cargo test -p trajkit-formats --test digests_real and commit the pin file.",
        diff(&pinned, &rows, 40)
    );
    rows
}

/// Counts rows by verdict: accepted, rejected, unreadable.
fn verdicts(rows: &[String]) -> (usize, usize, usize) {
    let count = |v: &str| rows.iter().filter(|r| r.split('\t').nth(2) == Some(v)).count();
    (count("accepted"), count("rejected"), count("unreadable"))
}

#[test]
fn every_real_fixture_record_converts_to_its_pinned_digest() {
    let rows = check("../../tests/fixtures/real", "real.tsv");
    assert_eq!(verdicts(&rows), (529, 252, 1), "accepted, rejected, unreadable of the fixture tree");
}

#[test]
fn every_example_corpus_record_converts_to_its_pinned_digest() {
    let rows = check("../../examples/corpus", "examples.tsv");
    assert_eq!(verdicts(&rows), (38, 21, 0), "accepted, rejected, unreadable of the example corpus");
}

#[test]
fn the_diff_names_missing_and_new_rows() {
    // Synthetic: the diff's own rule, no real file involved.
    let pinned: Vec<String> = ["a", "b", "b", "c"].map(String::from).to_vec();
    let actual: Vec<String> = ["a", "b", "d", "c"].map(String::from).to_vec();
    assert_eq!(diff(&pinned, &actual, 10), "1 pinned rows missing, 1 new rows:\n- b\n+ d\n");
    let reordered: Vec<String> = ["c", "a", "b", "b"].map(String::from).to_vec();
    assert!(diff(&pinned, &reordered, 10).ends_with("(same rows in another order)\n"));
}

/// Per-file figures and rejections of `root` read with `opts` (records discarded).
fn figures(root: &str, opts: &Options) -> (Vec<trajkit_formats::FileReport>, Vec<String>) {
    let (files, _) = discover(&[PathBuf::from(root)]);
    let mut pin = Pin { root, rows: Vec::new() };
    struct Rejections<'p, 'a>(&'p mut Pin<'a>);
    impl Sink for Rejections<'_, '_> {
        fn trajectory(&mut self, _: &InputFile, _: Option<&Trajectory>, _: Option<&[u8]>) {}
        fn rejection(&mut self, r: &Rejection) {
            self.0.rejection(r);
        }
    }
    let reports = read_inputs(files, opts, &mut Rejections(&mut pin)).expect("read");
    (reports, pin.rows)
}

#[test]
fn inspect_and_validate_count_the_same_without_sealing_records() {
    // `inspect` and `validate` keep no record, so the driver neither serializes nor hashes
    // it a second time, and reads small documents while planning (from the detection's
    // parse); every figure and rejection must be what `convert` sees.
    for root in ["../../tests/fixtures/real", "../../examples/corpus"] {
        let unsealed = figures(root, &Options::default());
        let sealed = figures(root, &Options { canonical: true, records: true, ..Options::default() });
        assert!(unsealed == sealed, "figures of {root} differ when records are not sealed");
    }
}
