//! Diagnostics on files written by numpy 2.4.6 and Python's json module
//! (`tests/fixtures/numeric/make.py`: synthetic values, real writers). Expected figures are
//! numpy's own (`np.isfinite`, `np.unravel_index`, `min`, `max`, `mean`).

use std::path::{Path, PathBuf};

use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/numeric").join(name)
}

fn one(name: &str) -> ArrayReport {
    let mut r = diagnose(&fixture(name)).unwrap();
    assert_eq!(r.arrays.len(), 1);
    r.arrays.remove(0)
}

fn counts(a: &ArrayReport) -> (u64, u64, u64, u64, u64) {
    (a.count, a.finite, a.nan, a.pos_inf, a.neg_inf)
}

fn close(a: Option<f64>, b: f64) {
    let a = a.expect("a mean");
    assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
}

#[test]
fn float64_v1_header_first_nan_located() {
    let a = one("velocity_f8_v1.npy");
    assert_eq!(
        (a.array.as_str(), a.dtype.as_str(), a.shape.as_deref()),
        ("velocity_f8_v1.npy", "<f8", Some(&[50, 3][..]))
    );
    assert_eq!(counts(&a), (150, 148, 1, 1, 0));
    let first = a.first_non_finite.clone().unwrap();
    assert_eq!(
        (first.kind, first.leading_index, first.flat_index, first.index),
        (NonFinite::Nan, Some(12), 37, vec![12, 1])
    );
    assert_eq!(a.min, Some(Extreme::Float(-2.516759710820513)));
    assert_eq!(a.max, Some(Extreme::Float(2.2447566264860495)));
    close(a.mean, -0.1660098952826866);
}

#[test]
fn big_endian_float32_v2_header() {
    let a = one("pressure_f4be_v2.npy");
    assert_eq!(a.dtype, ">f4");
    assert_eq!(counts(&a), (120, 119, 0, 1, 0));
    let first = a.first_non_finite.unwrap();
    assert_eq!((first.kind, first.flat_index, first.index), (NonFinite::PosInf, 82, vec![2, 3, 4]));
    assert_eq!(a.min.map(|m| m.to_string()).as_deref(), Some("-3.2514384"));
    assert_eq!(a.max.map(|m| m.to_string()).as_deref(), Some("2.025161"));
    close(a.mean, -0.16234388281473844);
}

#[test]
fn fortran_order_is_located_in_c_order() {
    let a = one("fortran_f8.npy");
    let first = a.first_non_finite.unwrap();
    // The value is 8th in the file (first axis fastest) but index (1, 2), C-flat 6.
    assert_eq!(
        (first.kind, first.leading_index, first.flat_index, first.index),
        (NonFinite::NegInf, Some(1), 6, vec![1, 2])
    );
    close(a.mean, 5.454545454545454);
}

#[test]
fn float16_v3_header() {
    let a = one("half_f2_v3.npy");
    assert_eq!((a.dtype.as_str(), counts(&a)), ("<f2", (10, 9, 1, 0, 0)));
    assert_eq!(a.first_non_finite.unwrap().flat_index, 7);
    assert_eq!((a.min, a.max), (Some(Extreme::Float32(0.0)), Some(Extreme::Float32(1.0))));
    close(a.mean, 0.4690755208333333);
}

#[test]
fn integers_and_booleans_are_exact_and_finite() {
    let a = one("counts_i8.npy");
    assert_eq!((a.min, a.max), (Some(Extreme::Int(-(1 << 62))), Some(Extreme::Int(1 << 62))));
    // The compensated sum keeps the small terms numpy's float64 mean loses (numpy: 0.5).
    assert_eq!(a.mean, Some(5.0 / 6.0));
    assert!(a.first_non_finite.is_none());
    assert_eq!((one("levels_u1.npy").min, one("levels_u1.npy").max), (Some(Extreme::Int(0)), Some(Extreme::Int(255))));
    assert_eq!(one("ids_i2be.npy").min, Some(Extreme::Int(-300)));
    let mask = one("mask_b1.npy");
    assert_eq!((mask.dtype.as_str(), mask.max), ("|b1", Some(Extreme::Int(1))));
}

#[test]
fn zero_d_and_empty_arrays() {
    let s = one("scalar_nan.npy");
    let first = s.first_non_finite.clone().unwrap();
    assert_eq!((first.leading_index, first.flat_index, first.index.len()), (None, 0, 0));
    assert_eq!((s.min, s.mean), (None, None));
    let e = one("empty_f8.npy");
    assert_eq!((e.count, e.shape.as_deref()), (0, Some(&[0, 3][..])));
}

#[test]
fn npz_members_stored_and_deflated_alike() {
    for name in ["simulation_deflated.npz", "simulation_stored.npz"] {
        let r = diagnose(&fixture(name)).unwrap();
        let names: Vec<&str> = r.arrays.iter().map(|a| a.array.as_str()).collect();
        assert_eq!(names, ["u", "p"]);
        assert_eq!(counts(&r.arrays[0]), (160, 160, 0, 0, 0));
        close(r.arrays[0].mean, 0.00595325673699082);
        let p = &r.arrays[1];
        assert_eq!(counts(p), (20, 19, 0, 0, 1));
        assert_eq!(p.first_non_finite.as_ref().map(|f| (f.kind, f.flat_index)), Some((NonFinite::NegInf, 15)));
        assert!(r.has_non_finite());
    }
}

#[test]
fn python_json_with_nan_and_infinity() {
    let r = diagnose(&fixture("history_python.json")).unwrap();
    let names: Vec<&str> = r.arrays.iter().map(|a| a.array.as_str()).collect();
    assert_eq!(names, ["$.dt", "$.steps[*].t", "$.steps[*].u", "$.residual"]);
    let u = &r.arrays[2];
    assert_eq!(counts(u), (20, 19, 1, 0, 0));
    let first = u.first_non_finite.clone().unwrap();
    // Step 7, first component: the 15th value of the array in document order.
    assert_eq!(
        (first.kind, first.leading_index, first.flat_index, first.index),
        (NonFinite::Nan, Some(7), 14, vec![7, 0])
    );
    let res = &r.arrays[3];
    assert_eq!((res.pos_inf, res.first_non_finite.as_ref().map(|f| f.flat_index)), (1, Some(2)));
    assert_eq!(r.arrays[0].first_non_finite, None);
}

#[test]
fn javascript_nulls_and_overflowing_literals() {
    let r = diagnose(&fixture("field_js.json")).unwrap();
    let field = &r.arrays[0];
    assert_eq!((field.array.as_str(), field.null, field.finite), ("$.field", 1, 3));
    let first = field.first_non_finite.clone().unwrap();
    assert_eq!((first.kind, first.index), (NonFinite::Null, vec![1, 0]));
    let peak = &r.arrays[1];
    let first = peak.first_non_finite.clone().unwrap();
    assert_eq!((first.kind, first.detail.as_deref()), (NonFinite::PosInf, Some("overflow: 1e400")));
    let clean = diagnose(&fixture("finite.json")).unwrap();
    assert!(!clean.has_non_finite());
    assert_eq!(clean.arrays[0].max, Some(Extreme::Float(4.5)));
}

#[test]
fn unsupported_and_damaged_files_are_named() {
    let err = diagnose(&fixture("complex_c16.npy")).unwrap_err().to_string();
    assert!(err.ends_with("complex_c16.npy: array complex_c16.npy: dtype \"<c16\" is not supported (floats f2 f4 f8, ints i1-i8, uints u1-u8, bool b1)"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("velocity_f8_v1.npy")).unwrap();
    let cut = dir.path().join("cut.npy");
    std::fs::write(&cut, &bytes[..bytes.len() - 12]).unwrap();
    let err = diagnose(&cut).unwrap_err().to_string();
    assert!(
        err.ends_with("cut.npy: array cut.npy: data ends at offset 1316 after 1188 of 1200 bytes (148 of 150 values)"),
        "{err}"
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, b"{\"a\": [1, 2,, 3]}").unwrap();
    let err = diagnose(&bad).unwrap_err().to_string();
    assert!(err.ends_with("bad.json: offset 12: unexpected character"), "{err}");
    let other = dir.path().join("x.csv");
    std::fs::write(&other, b"1,2").unwrap();
    assert!(matches!(diagnose(&other), Err(DiagnoseError::UnknownKind { .. })));
}

#[test]
fn report_json_never_holds_a_non_finite_number() {
    let r = diagnose(&fixture("scalar_nan.npy")).unwrap();
    let json = serde_json::to_string(&r).unwrap();
    // Valid JSON (no bare NaN), and no statistic silently turned into null.
    assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok() && !json.contains("null"), "{json}");
    assert!(json.contains(r#""first_non_finite":{"kind":"NaN","flat_index":0,"index":[]}"#), "{json}");
}

// Issue 19 item 9: run/rerun agreement and metric margins on
// `tests/fixtures/numeric/make_agreement.py`'s files (synthetic values, numpy-written); the
// expected figures are the ones that script prints from `numpy.isclose`.

#[test]
fn rerun_agreement_locates_the_worst_element_by_index_across_memory_orders() {
    let g = agree::agreement(&fixture("run_u.npy"), &fixture("rerun_u_fortran.npy"), agree::DEFAULT_TOLERANCE).unwrap();
    assert!(!g.agree);
    let a = &g.arrays[0];
    assert_eq!((a.array.as_str(), a.rerun_array.as_deref()), ("run_u.npy", Some("rerun_u_fortran.npy")));
    assert_eq!((a.count, a.disagreeing, a.max_abs_diff), (60, 1, Some(0.0010000009046846614)));
    let w = a.worst.as_ref().unwrap();
    assert_eq!((w.flat_index, w.index.as_slice()), (41, &[13, 2][..]));
    assert_eq!((w.run.as_f64(), w.rerun.as_f64()), (Some(1.199963415268209), Some(1.2009634161728937)));
    // A tolerance wider than the planted error: everything agrees.
    let loose = agree::Tolerance { rtol: 1e-3, atol: 0.0 };
    let g = agree::agreement(&fixture("run_u.npy"), &fixture("rerun_u_fortran.npy"), loose).unwrap();
    assert!(g.agree);
    assert_eq!(g.arrays[0].disagreeing, 0);
}

#[test]
fn metric_files_agree_by_name_and_shapes_must_match() {
    let g = agree::agreement(&fixture("metrics_run.json"), &fixture("metrics_rerun.json"), agree::DEFAULT_TOLERANCE)
        .unwrap();
    let got: Vec<(&str, u64, u64)> = g.arrays.iter().map(|a| (a.array.as_str(), a.count, a.disagreeing)).collect();
    assert_eq!(got, [("$.drag", 1, 1), ("$.lift", 1, 0), ("$.u_final", 3, 1)]);
    let w = g.arrays[2].worst.as_ref().unwrap();
    assert_eq!((w.flat_index, w.index.as_slice(), w.abs_diff), (2, &[2][..], Some(1.0000000000010001e-05)));
    assert!(!g.agree);
    // A run against a file of another shape: not compared, named.
    let g = agree::agreement(&fixture("run_u.npy"), &fixture("velocity_f8_v1.npy"), agree::DEFAULT_TOLERANCE).unwrap();
    assert_eq!(g.arrays[0].problem.as_deref(), Some("shapes differ: [20, 3] vs [50, 3]"));
    // NaN never agrees, not even with itself.
    let g = agree::agreement(&fixture("scalar_nan.npy"), &fixture("scalar_nan.npy"), agree::DEFAULT_TOLERANCE).unwrap();
    assert_eq!((g.arrays[0].disagreeing, g.arrays[0].worst.as_ref().map(|w| w.run.clone())), (1, Some("NaN".into())));
}

#[test]
fn a_margin_must_exceed_the_rerun_disagreement() {
    let (run, rerun) = (fixture("metrics_run.json"), fixture("metrics_rerun.json"));
    // drag 0.2981 (rerun 0.2992) passes "below 0.3" by 0.0019 > |run - rerun| = 0.0011.
    let m = agree::margin(&run, "drag", 0.3, agree::PassIf::Below, 0.0, Some(&rerun)).unwrap();
    assert_eq!(
        (m.margin, m.rerun_disagreement, m.holds),
        (Some(0.0019000000000000128), Some(0.0011000000000000454), true)
    );
    assert_eq!(m.relative_margin, Some(0.0019000000000000128 / 0.3));
    // Below 0.299 it passes by 0.0009, inside the rerun noise.
    let m = agree::margin(&run, "$.drag", 0.299, agree::PassIf::Below, 0.0, Some(&rerun)).unwrap();
    assert_eq!((m.findings.as_slice(), m.holds), (&["within_rerun_noise"][..], false));
    // Above 0.3 it fails outright; a required margin is checked too.
    let m = agree::margin(&run, "drag", 0.3, agree::PassIf::Above, 0.01, None).unwrap();
    assert_eq!(m.findings, ["wrong_side", "below_min_margin"]);
    let err = agree::margin(&run, "u_final", 0.3, agree::PassIf::Above, 0.0, None).unwrap_err().to_string();
    assert!(err.ends_with("metrics_run.json: $.u_final: 3 values; a metric is one value"), "{err}");
    let err = agree::margin(&run, "speed", 0.3, agree::PassIf::Above, 0.0, None).unwrap_err().to_string();
    assert!(err.ends_with("metrics_run.json: no array \"speed\""), "{err}");
}
