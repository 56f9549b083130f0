//! The engine against queueing theory (docs/bench-convoy.md, "Analytical check").
//!
//! With no readers the benchmark lock is one server and the W writers form
//! a finite-source M/M/1 queue (machine repairman). The simulated mean
//! writer wait must match the exact value within 2%.

use crate::common::machine_repairman_wq;
use experiments::bench::{self, BenchArgs};

#[test]
fn writer_only_bench_matches_finite_source_mm1_within_2_percent() {
    // docs/bench-convoy.md: W = 4, think Exp(2 ms), hold Exp(100 us), >= 100 s.
    // 400 s simulated gives ~750k acquisitions; the standard error of the
    // mean wait is then well under 1%, so 2% is a real check, not noise.
    let exact_us = machine_repairman_wq(4, 1.0 / 2000.0, 1.0 / 100.0);
    let r = bench::run(&BenchArgs {
        readers: 0,
        writers: 4,
        duration: "400s".into(),
        seed: 7,
        policy: "fifo".into(),
        machine: None,
    })
    .unwrap();
    let w = r.writers();
    let sim_us = w.mean_f64() / 1e3;
    let err = (sim_us - exact_us).abs() / exact_us;
    assert!(w.count() > 700_000, "too few acquisitions: {}", w.count());
    assert!(
        err < 0.02,
        "mean writer wait {sim_us:.3} us vs exact {exact_us:.3} us: {:.2}% off",
        err * 100.0
    );
    assert_eq!(r.readers().count(), 0);
}

#[test]
fn exact_formula_sanity() {
    // One source never waits.
    assert!(machine_repairman_wq(1, 0.5, 1.0).abs() < 1e-12);
    // Two sources, rho = 1: p = (1, 2, 2)/5, L = 6/5, X = 4/5, Wq = 1/2.
    assert!((machine_repairman_wq(2, 1.0, 1.0) - 0.5).abs() < 1e-12);
}
