//! CASES.md case 2 (`pidlist-flush-run-a/b`): each freed cgroup's
//! `cgroup1_pidlist_destroy_all` takes its own pidlist_mutex and re-queues
//! its own destroy work (R40); unpatched it then flushes the whole
//! workqueue (R36), patched it only cancels its own work. (`convoy
//! validate` checks the per-window figures over 300 s.)

mod common;

use common::run_builtin;
use experiments::builtin;
use experiments::runner::{run, RunOptions};
use experiments::scenario::ScenarioFile;
use output::Metric;

#[test]
fn r40_unpatched_flushes_the_workqueue_and_patched_only_cancels_its_own_work() {
    // 100 churners instead of 1000: their rounds of mkdirs and rmdirs
    // through the parent's i_rwsem are ten times shorter, so frees begin
    // within the first second.
    let src = builtin::source(
        "pidlist-flush-run-a",
        &[
            "scenario.duration=3s".into(),
            "tasks.churner.count=100".into(),
        ],
    )
    .unwrap();
    let opts = RunOptions {
        jobs: 1,
        progress: false,
        ..RunOptions::default()
    };
    let r = run(&ScenarioFile::new(src).unwrap(), &opts).unwrap().result;
    let v = |name: &str| r.variants.iter().find(|v| v.variant == name).unwrap();
    let (un, pa) = (v("unpatched"), v("patched"));
    let calls = |v: &output::VariantResult| {
        v.series(Metric::Span, "cgroup1_pidlist_destroy_all/css_free")
            .unwrap()
            .hist
            .count()
    };
    assert!(calls(un) > 20, "{}", calls(un));
    // One flush per call, unpatched; none patched.
    let flushes = |v: &output::VariantResult| v.counter("wq/cgroup_pidlist_destroy_wq/flushes");
    assert_eq!(flushes(un), Some(calls(un)));
    assert_eq!(flushes(pa), Some(0));
    // Each call locks the dying cgroup's pidlist_mutex once.
    assert_eq!(
        un.counter("pidlist_mutex/acquisitions/site/cgroup1_pidlist_destroy_all"),
        Some(calls(un))
    );
    assert_eq!(
        pa.counter("pidlist_mutex/acquisitions/site/cgroup1_pidlist_destroy_own"),
        Some(calls(pa))
    );
    // The unpatched flush waits for a kworker that needs a CPU among 200
    // busy threads: its tail is milliseconds; the patched call never waits
    // for another task (its pidlist_mutex is free) and costs its CPU time
    // only: the fitted own cost (a lognormal body and a Pareto tail capped
    // at 128 us, lib/pidlist-flush.toml) and the 1 us free.
    let span = |v: &output::VariantResult| {
        v.series(Metric::Span, "cgroup1_pidlist_destroy_all/css_free")
            .unwrap()
            .hist
            .clone()
    };
    assert!(span(un).max() > 1_000_000, "{}", span(un).max());
    let pa_mutex_wait = pa
        .series(Metric::Wait, "pidlist_mutex/lock/css_free")
        .unwrap()
        .hist
        .max();
    assert_eq!(pa_mutex_wait, 0);
    let own = span(pa);
    assert!(own.min() > 1_000 && own.max() <= 129_000, "{own:?}");
    assert!(own.mean() > 4_000 && own.mean() < 10_000, "{}", own.mean());
    // Churners never reuse a cgroup that is still being destroyed.
    assert_eq!(un.counter("wq/cgroup_offline_wq/queue_noops"), Some(0));
}

#[test]
fn run_b_runs_at_its_scale() {
    let r = run_builtin("pidlist-flush-run-b", "200ms");
    for v in &r.variants {
        let n = v
            .series(Metric::Span, "cgroup1_pidlist_destroy_all/css_free")
            .unwrap()
            .hist
            .count();
        assert!(n > 100, "{}: {n}", v.variant);
    }
}
