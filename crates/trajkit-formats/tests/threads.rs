//! The record mapping stays on the caller's pool: `threads=N` in Python and a Ray task's
//! pool bound the work, rather than rayon's global pool taking every core.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use common::real;
use trajkit_formats::pipeline::Analyzer;
use trajkit_formats::{read_paths_analyzed, InputFile, ReadRequest, Sink};

/// A sink that keeps nothing.
struct Discard;
impl Sink for Discard {
    fn trajectory(&mut self, _: &InputFile, _: Option<&trajkit_model::Trajectory>, _: Option<&[u8]>) {}
}

/// The names of the threads that mapped records of the real Gym fixtures, read inside a
/// pool of `threads` threads.
fn mapping_threads(threads: usize) -> BTreeSet<String> {
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let record = seen.clone();
    let run = Arc::new(move |_t: &trajkit_model::Trajectory, _interaction: Option<String>| {
        let name = std::thread::current().name().unwrap_or("unnamed").to_string();
        record.lock().expect("lock").insert(name);
        Box::new(()) as Box<dyn std::any::Any + Send>
    });
    let analyze = Analyzer { interaction: false, run };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
    let req = ReadRequest { paths: vec![real("gym")], ..ReadRequest::default() };
    let outcome = pool.install(|| read_paths_analyzed(&req, true, false, Some(analyze), &mut |_, _| {}, &mut Discard));
    assert_eq!(outcome.expect("read").reports.len(), 30, "one report per Gym fixture");
    let guard = seen.lock().expect("lock");
    guard.clone()
}

#[test]
fn a_one_thread_pool_maps_on_one_thread() {
    assert_eq!(mapping_threads(1), BTreeSet::from(["trajkit-map-0".to_string()]));
}

#[test]
fn a_two_thread_pool_maps_on_its_own_threads_only() {
    let names = mapping_threads(2);
    assert!(!names.is_empty() && names.iter().all(|n| n == "trajkit-map-0" || n == "trajkit-map-1"), "{names:?}");
}
