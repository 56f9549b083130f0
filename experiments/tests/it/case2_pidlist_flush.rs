//! docs/cases.md case 2 (`pidlist-flush-run-a/b`): each freed cgroup's
//! `cgroup1_pidlist_destroy_all` takes its own pidlist_mutex and re-queues
//! its own destroy work (R40); unpatched it then flushes the whole
//! workqueue (R36), patched it only cancels its own work. (`convoy
//! validate` checks the per-window figures and histograms over 300 s
//! runs; the tests below check its rules' arithmetic on short runs.)

use crate::common::{run_builtin, run_for_validate};
use experiments::builtin;
use experiments::runner::{run, RunOptions};
use experiments::scenario::ScenarioFile;
use experiments::validate::{judge, Measure, Verdict, WindowStat, TARGETS};
use output::Metric;
use sim::Dur;

#[test]
fn r40_unpatched_flushes_the_workqueue_and_patched_only_cancels_its_own_work() {
    // 20 churners instead of 1000: their rounds of mkdirs and rmdirs
    // through the parent's i_rwsem are fifty times shorter, so frees begin
    // within the first second, and most come less than a second after
    // the churner's read (its pidlist is still there, patched or not).
    let src = builtin::source(
        "pidlist-flush-run-a",
        &[
            "scenario.duration=3s".into(),
            "tasks.churner.count=20".into(),
        ],
    )
    .unwrap();
    let opts = RunOptions {
        jobs: 1,
        progress: experiments::progress::ProgressMode::Off,
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
    // Patched, only a cgroup whose pidlist is still there (its destroy
    // work armed) takes it, to free the pidlist.
    let own = pa
        .counter("pidlist_mutex/acquisitions/site/cgroup1_pidlist_destroy_own")
        .unwrap();
    assert!(own > 0 && own <= calls(pa), "{own} of {}", calls(pa));
    // The unpatched flush waits for a kworker that needs a CPU among 200
    // busy threads: its tail is milliseconds; the patched call never waits
    // for another task (its pidlist_mutex is free) and costs its CPU time
    // only: the fitted own cost (a lognormal body and a Pareto tail capped
    // at 128 us, lib/pidlist-flush.toml) and, while the pidlist is still
    // there, the 1 us free.
    let span = |v: &output::VariantResult| {
        v.series(Metric::Span, "cgroup1_pidlist_destroy_all/css_free")
            .unwrap()
            .hist
            .clone()
    };
    assert!(span(un).max() > Dur::from_ms(1), "{}", span(un).max());
    let pa_mutex_wait = pa
        .series(Metric::Wait, "pidlist_mutex/lock/css_free")
        .unwrap()
        .hist
        .max();
    // No other task holds it: the wait is at most the mutex word's cache
    // line coming from the CPU that touched it last (R70).
    assert!(pa_mutex_wait < Dur::from_us(1), "{pa_mutex_wait:?}");
    let own = span(pa);
    assert!(
        own.min() > Dur::from_us(1) && own.max() <= Dur::from_us(129),
        "{own:?}"
    );
    let mean = own.mean();
    assert!(mean > Dur::from_us(4) && mean < Dur::from_us(10), "{mean}");
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

/// One task reads two cgroups' `tasks` files (each read builds a pidlist
/// and arms its 1 s destroy timer, R41/R42), then frees the first 0.5 s
/// later and the second 2 s later, with the patch's op.
const OWN_FREE: &str = r#"
[scenario]
name = "own-free"
duration = "10s"
cpus = 2
include = ["kernfs", "cgroup", "pidlist-flush"]
[params]
seed_cgroups = 1
[dists.pidlist_build_cpu]
dist = "const"
value = "10us"
[dists.destroy_all_cpu]
dist = "const"
value = "5us"
[tasks.reader]
count = 0
[tasks.churner]
count = 0
[tasks.freer]
count = 1
program = ["key 3", "call tasks_read_new", "sleep 500ms",
           "span_begin soon", "call cgroup1_pidlist_destroy_own", "span_end soon",
           "key 4", "call tasks_read_new", "sleep 2s",
           "span_begin late", "call cgroup1_pidlist_destroy_own", "span_end late",
           "sleep 100s"]

[machine]
profile = 'ideal'
"#;

#[test]
fn r41_r42_the_patched_call_frees_a_pidlist_only_while_its_destroy_work_is_armed() {
    let r = crate::common::run_text(OWN_FREE, 1);
    let span = |name: &str| r.series(Metric::Span, name).unwrap().hist.clone();
    // 0.5 s after the read the timer is armed: the call cancels it and
    // frees the pidlist itself, 1 us under its pidlist_mutex.
    assert_eq!(
        (span("soon/freer").count(), span("soon/freer").max()),
        (1, Dur::from_us(6))
    );
    // 2 s after the read the destroy work has run and freed it: the call
    // finds nothing to cancel or free.
    assert_eq!(
        (span("late/freer").count(), span("late/freer").max()),
        (1, Dur::from_us(5))
    );
    assert_eq!(
        r.counter("pidlist_mutex/acquisitions/site/cgroup1_pidlist_destroy_own"),
        Some(1)
    );
    assert_eq!(r.counter("wq/cgroup_pidlist_destroy_wq/executed"), Some(1));
}

/// A writer holds the common parent's i_rwsem from 0 to 1 ms and a
/// second one queues for it at 0.1 ms. At 0.2 ms a churner reads its new
/// cgroup's `tasks` and a reader an old cgroup's `cgroup.procs`.
const FRESH_LOOKUP: &str = r#"
[scenario]
name = "fresh-lookup"
duration = "1s"
cpus = 4
include = ["kernfs", "cgroup", "pidlist-flush"]
[params]
seed_cgroups = 1
[dists.pidlist_build_cpu]
dist = "const"
value = "10us"
[tasks.reader]
count = 0
[tasks.churner]
count = 0
[tasks.w1]
count = 1
program = ["down_write root_dir_i_rwsem", "cpu 1ms", "up_write root_dir_i_rwsem", "sleep 100s"]
[tasks.w2]
count = 1
program = ["sleep 100us", "down_write root_dir_i_rwsem", "cpu 1ms", "up_write root_dir_i_rwsem", "sleep 100s"]
[tasks.fresh]
count = 1
program = ["sleep 200us", "key 3", "span_begin fresh", "call tasks_read_new", "span_end fresh", "sleep 100s"]
[tasks.old]
count = 1
program = ["sleep 200us", "span_begin old", "call procs_read", "span_end old", "sleep 100s"]

[machine]
profile = 'ideal'
"#;

#[test]
fn r126_a_read_of_a_new_cgroups_file_looks_its_directory_up_under_the_parents_i_rwsem() {
    let r = crate::common::run_text(FRESH_LOOKUP, 1);
    let wait = |s: &str| r.series(Metric::Wait, s).unwrap().hist.max();
    // The second writer is granted at the first one's release (1 ms);
    // the churner's lookup, a reader behind a queued writer (R16), waits
    // for the second writer's release at 2 ms.
    assert_eq!(wait("root_dir_i_rwsem/write/w2"), Dur::from_us(900));
    assert_eq!(wait("root_dir_i_rwsem/read/fresh"), Dur::from_us(1_800));
    let span = |s: &str| r.series(Metric::Span, s).unwrap().hist.max();
    assert!(
        span("fresh/fresh") > Dur::from_us(1_800),
        "{:?}",
        span("fresh/fresh")
    );
    // A reader of an old cgroup's file walks valid dentries: no parent
    // lock, done long before the writers are.
    assert!(r
        .series(Metric::Wait, "root_dir_i_rwsem/read/old")
        .is_none());
    assert!(span("old/old") < Dur::from_us(100), "{:?}", span("old/old"));
}

const FLUSH: &str = "cgroup1_pidlist_destroy_all/css_free";

/// The earth mover's distance of two log2 histograms, normalised, as
/// docs/sweeps.md defines it: the sum of the cumulative shares'
/// differences (written again here, apart from `validate`'s).
fn emd(a: &[u64], b: &[u64]) -> f64 {
    let (na, nb) = (a.iter().sum::<u64>() as f64, b.iter().sum::<u64>() as f64);
    let (mut ca, mut cb) = (0.0, 0.0);
    let mut d = 0.0;
    for i in 0..65 {
        ca += a[i] as f64 / na;
        cb += b[i] as f64 / nb;
        d += (ca - cb).abs();
    }
    d
}

#[test]
fn validate_judges_run_a_by_the_central_90_percent_of_windows_and_the_histograms_distance() {
    // 3 s in 100 ms windows with 100 churners: 30 whole windows, 29
    // after the warm-up, in one run (as 300 s give in 10 s windows).
    let out = run_for_validate(
        "pidlist-flush-run-a",
        &[
            "scenario.duration=3s",
            "scenario.window=100ms",
            "tasks.churner.count=100",
        ],
        1,
    );
    let targets: Vec<_> = TARGETS
        .iter()
        .filter(|t| t.experiment == "pidlist-flush-run-a")
        .collect();
    assert_eq!(targets.len(), 8);
    for t in targets {
        let row = judge(t, &out).unwrap();
        let model = row
            .model
            .unwrap_or_else(|| panic!("{}: no model value", t.what));
        let variant = match t.measure {
            Measure::Window { variant, .. } | Measure::Hist { variant, .. } => variant,
            _ => unreachable!("{t:?}"),
        };
        let vi = out
            .result
            .variants
            .iter()
            .position(|v| v.variant == variant)
            .unwrap();
        let s = out.per_rep[vi][0].series(Metric::Span, FLUSH).unwrap();
        let bins: Vec<_> = s.windows.iter().map(|(_, b)| *b).collect();
        assert_eq!(bins.len(), 30);
        let (_, log2) = s.windows.log2().unwrap();
        // Each window's histogram holds its calls, and all of them the
        // run's.
        for (b, h) in bins.iter().zip(log2) {
            assert_eq!(h.iter().sum::<u64>(), b.count);
        }
        assert_eq!(log2.iter().flatten().sum::<u64>(), s.hist.count());
        match t.measure {
            Measure::Window { stat, windows, .. } => {
                let mut v: Vec<f64> = bins[1..]
                    .iter()
                    .filter(|b| b.count > 0 || matches!(stat, WindowStat::Calls))
                    .map(|b| match stat {
                        WindowStat::Calls => b.count as f64,
                        WindowStat::MeanUs => b.mean().as_nanos_f64() / 1e3,
                        WindowStat::MaxUs => b.max.as_nanos_f64() / 1e3,
                    })
                    .collect();
                v.sort_by(f64::total_cmp);
                let n = v.len();
                if let WindowStat::Calls = stat {
                    // 29 windows: p5 is rank ceil(1.45) = 2, p95 rank
                    // ceil(27.55) = 28, the median rank 15.
                    assert_eq!(n, 29);
                    assert_eq!(row.interval, Some((v[1], v[27])), "{}", t.what);
                    assert_eq!(model, v[14]);
                    // 1 + 2 of the 30 ranks a measured window may take
                    // lie outside: 4 in 30.
                    assert_eq!(row.chance, 4.0 / 30.0);
                }
                let rank = |p: usize| v[(p * n).div_ceil(100).max(1) - 1];
                let (lo, hi) = (rank(5), rank(95));
                assert_eq!(row.interval, Some((lo, hi)), "{}", t.what);
                assert_eq!(model, rank(50));
                // Met when each measured window, or the whole microsecond
                // a printed one stands for, meets [p5, p95].
                let meets = |m: f64| match stat {
                    WindowStat::Calls => lo <= m && m <= hi,
                    _ => lo < m + 1.0 && m <= hi,
                };
                let within: Vec<bool> = windows.iter().map(|&m| meets(m)).collect();
                assert_eq!(row.comparisons, within, "{}", t.what);
                let ok = within.iter().all(|&x| x);
                assert_eq!(row.verdict == Verdict::Ok, ok, "{}: {row:?}", t.what);
            }
            Measure::Hist { windows, .. } => {
                let model_h: Vec<&[u64; 65]> = log2[1..]
                    .iter()
                    .filter(|h| h.iter().any(|&n| n > 0))
                    .collect();
                let mut pooled = [0u64; 65];
                for h in &model_h {
                    for i in 0..65 {
                        pooled[i] += h[i];
                    }
                }
                let mut own: Vec<f64> = model_h
                    .iter()
                    .map(|h| {
                        let rest: Vec<u64> = (0..65).map(|i| pooled[i] - h[i]).collect();
                        emd(&h[..], &rest)
                    })
                    .collect();
                own.sort_by(f64::total_cmp);
                let n = own.len();
                let threshold = own[(90 * n).div_ceil(100) - 1];
                let measured: Vec<f64> = windows
                    .iter()
                    .map(|w| {
                        let mut h = [0u64; 65];
                        for &(lo, c) in *w {
                            // [0] -> 0, [1] -> 1, [2,4) -> 2, [4,8) -> 3, ...
                            let i = if lo == 0 {
                                0
                            } else {
                                lo.trailing_zeros() as usize + 1
                            };
                            h[i] += c;
                        }
                        emd(&h, &pooled)
                    })
                    .collect();
                let d = row.distance.as_ref().unwrap();
                assert!((d.threshold - threshold).abs() < 1e-9, "{d:?} {threshold}");
                assert!((d.median - own[(50 * n).div_ceil(100) - 1]).abs() < 1e-9);
                for (a, b) in d.measured.iter().zip(&measured) {
                    assert!((a - b).abs() < 1e-9, "{d:?} {measured:?}");
                }
                // A distance past rank ceil(0.9 n) of n + 1: outside.
                let r = (90 * n).div_ceil(100);
                assert_eq!(row.chance, (n + 1 - r) as f64 / (n + 1) as f64);
                let ok = measured.iter().all(|&m| m <= threshold);
                assert_eq!(row.verdict == Verdict::Ok, ok, "{}: {row:?}", t.what);
            }
            _ => unreachable!(),
        }
    }
}

#[test]
fn validate_reads_every_run_b_target_off_a_short_run() {
    // 300 ms in 100 ms windows: two after the warm-up, in each of two
    // runs. Run-b's targets are expected to fail today; here only that
    // each one's reader finds its series and gives a model value.
    let out = run_for_validate(
        "pidlist-flush-run-b",
        &["scenario.duration=300ms", "scenario.window=100ms"],
        2,
    );
    let targets: Vec<_> = TARGETS
        .iter()
        .filter(|t| t.experiment == "pidlist-flush-run-b")
        .collect();
    assert_eq!(targets.len(), 8);
    for t in targets {
        let row = judge(t, &out).unwrap();
        assert!(row.model.is_some_and(|m| m > 0.0), "{}: {row:?}", t.what);
        let (lo, hi) = row.interval.unwrap();
        assert!(lo <= hi, "{}: {row:?}", t.what);
        if let Measure::Hist { windows, .. } = t.measure {
            assert_eq!(row.distance.unwrap().measured.len(), windows.len());
        }
    }
}
