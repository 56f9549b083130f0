//! Scripted micro-scenarios: a few tasks, fixed durations, exact expected
//! grants, waits and spans. Each test names the behaviour it pins down.

use experiments::runner::{run, RunOptions};
use experiments::scenario::{compile, ScenarioFile, Source};
use experiments::world::{Limits, World};
use models::TaskId;
use output::{Metric, VariantResult};
use sim::Dur;

fn run_variant(text: &str, variant: &str, seed: u64) -> (VariantResult, Vec<(TaskId, Dur)>) {
    let file = ScenarioFile::new(Source::new("t.toml", text)).unwrap();
    let loaded = file.load(variant).unwrap();
    let c = compile(&file.source, &loaded.doc, variant).unwrap();
    let mut w = World::new(&c, seed, 0, Limits::default());
    w.log_draws();
    w.run(&mut |_| {}).unwrap();
    let draws = w.draws().to_vec();
    (w.result(), draws)
}

/// The single sample of a series, checking there is exactly one.
fn one(r: &VariantResult, metric: Metric, subject: &str) -> Dur {
    let s = r
        .series(metric, subject)
        .unwrap_or_else(|| panic!("no {subject}"));
    assert_eq!(s.hist.count(), 1, "{subject}");
    s.hist.max()
}

const MS: Dur = Dur(1_000_000);

#[test]
fn fifo_rwsem_a_queued_writer_parks_new_readers() {
    // A holds read 0-10 ms; W asks for write at 1 ms; B asks for read at
    // 2 ms. B is compatible with A but queues behind W (docs/bench-convoy.md).
    let text = r#"
[scenario]
name = "t"
duration = "1s"
[locks.l]
kind = "rwsem"
policy = "fifo"
[tasks.a]
count = 1
program = ["down_read l", "sleep 10ms", "up_read l"]
[tasks.w]
count = 1
program = ["sleep 1ms", "down_write l", "cpu 2ms", "up_write l"]
[tasks.b]
count = 1
program = ["sleep 2ms", "span_begin r", "down_read l", "cpu 1ms", "up_read l", "span_end r"]

[machine]
profile = 'ideal'
"#;
    let (r, _) = run_variant(text, "base", 1);
    assert_eq!(one(&r, Metric::Wait, "l/read/a"), Dur::ZERO);
    assert_eq!(one(&r, Metric::Wait, "l/write/w"), 9 * MS);
    assert_eq!(one(&r, Metric::Wait, "l/read/b"), 10 * MS);
    assert_eq!(one(&r, Metric::Hold, "l/write/w"), 2 * MS);
    assert_eq!(one(&r, Metric::Span, "r/b"), 11 * MS);
    assert_eq!(r.counter("l/read_contentions"), Some(1));
    assert_eq!(r.counter("l/write_contentions"), Some(1));
    assert_eq!(r.counter("l/read_acquisitions"), Some(2));
}

#[test]
fn fifo_rwsem_release_grants_the_head_run_of_readers_in_order_and_waits_include_cpu_queueing() {
    // One CPU. W holds write 0-5 ms (sleeping, so off CPU). Readers r[0..3]
    // queue at 1 ms. At 5 ms all three are granted in FIFO order, but each
    // must get the CPU: they run one after another, 1 ms each, so their
    // waits (request to running with the lock) are 4, 5 and 6 ms.
    let text = r#"
[scenario]
name = "t"
duration = "1s"
cpus = 1
[locks.l]
kind = "rwsem"
policy = "fifo"
[tasks.w]
count = 1
program = ["down_write l", "sleep 5ms", "up_write l"]
[tasks.r]
count = 3
program = ["sleep 1ms", "down_read l", "cpu 1ms", "up_read l"]

[machine]
profile = 'ideal'
"#;
    let (r, _) = run_variant(text, "base", 1);
    let s = r.series(Metric::Wait, "l/read/r").unwrap();
    assert_eq!(s.hist.count(), 3);
    assert_eq!(s.hist.min(), 4 * MS);
    assert_eq!(s.hist.max(), 6 * MS);
    assert_eq!(s.hist.sum(), u128::from((15 * MS).ns()));
    // Run-queue waits: r[0..3] behind w at start (3), then r[0] behind w
    // when w wakes at 5 ms and releases, then r[1] and r[2] (3 more).
    assert_eq!(r.counter("cpu/runqueue_waits"), Some(6));
}

#[test]
fn cpu_pool_serializes_cpu_steps() {
    // All three begin the span at 0 and sleep off-CPU; at 1 ms all wake,
    // but only two CPUs: the third runs its 1 ms of CPU after the others.
    // A span measures from the moment the task ran `span_begin`.
    let text = r#"
[scenario]
name = "t"
duration = "1s"
cpus = 2
[tasks.t]
count = 3
program = ["span_begin work", "sleep 1ms", "cpu 1ms", "span_end work"]

[machine]
profile = 'ideal'
"#;
    let (r, _) = run_variant(text, "base", 1);
    let s = r.series(Metric::Span, "work/t").unwrap();
    assert_eq!(
        (s.hist.count(), s.hist.min(), s.hist.max()),
        (3, 2 * MS, 3 * MS)
    );
    let (r, _) = run_variant(&text.replace("cpus = 2", "cpus = \"unlimited\""), "base", 1);
    assert_eq!(r.series(Metric::Span, "work/t").unwrap().hist.max(), 2 * MS);
}

#[test]
fn fifo_mutex_hands_off_in_arrival_order() {
    let text = r#"
[scenario]
name = "t"
duration = "1s"
[locks.m]
kind = "mutex"
policy = "fifo"
[tasks.holder]
count = 1
program = ["mutex_lock m", "sleep 10ms", "mutex_unlock m"]
[tasks.late]
count = 1
program = ["sleep 2ms", "mutex_lock m", "cpu 3ms", "mutex_unlock m"]
[tasks.early]
count = 1
program = ["sleep 1ms", "mutex_lock m", "cpu 3ms", "mutex_unlock m"]

[machine]
profile = 'ideal'
"#;
    let (r, _) = run_variant(text, "base", 1);
    assert_eq!(one(&r, Metric::Wait, "m/lock/early"), 9 * MS);
    assert_eq!(one(&r, Metric::Wait, "m/lock/late"), 11 * MS);
}

#[test]
fn repeat_and_with_prob_blocks() {
    let text = r#"
[scenario]
name = "t"
duration = "1s"
[tasks.t]
count = 1
program = [
  "span_begin rep", "repeat 3", "  cpu 1ms", "end", "span_end rep",
  "span_begin zero", "repeat 0", "  cpu 1ms", "end", "span_end zero",
  "span_begin never", "with_prob 0", "  cpu 1ms", "end", "span_end never",
  "span_begin always", "with_prob 1", "  cpu 1ms", "end", "span_end always",
  "span_begin nested", "repeat 2", "  repeat 3", "    cpu 1ms", "  end", "end", "span_end nested",
]

[machine]
profile = 'ideal'
"#;
    let (r, _) = run_variant(text, "base", 1);
    assert_eq!(one(&r, Metric::Span, "rep/t"), 3 * MS);
    assert_eq!(one(&r, Metric::Span, "zero/t"), Dur::ZERO);
    assert_eq!(one(&r, Metric::Span, "never/t"), Dur::ZERO);
    assert_eq!(one(&r, Metric::Span, "always/t"), MS);
    assert_eq!(one(&r, Metric::Span, "nested/t"), 6 * MS);
}

#[test]
fn horizon_censors_grants_and_holds_at_or_after_the_duration() {
    // Grants at 0, 4, 8 ms (the next would be at 12 ms, past the 10 ms
    // horizon); the hold begun at 8 ms would end at 11 ms: censored.
    let text = r#"
[scenario]
name = "t"
duration = "10ms"
[locks.l]
kind = "mutex"
[tasks.t]
count = 1
program = ["loop", "mutex_lock l", "cpu 3ms", "mutex_unlock l", "sleep 1ms", "end"]

[machine]
profile = 'ideal'
"#;
    let (r, _) = run_variant(text, "base", 1);
    assert_eq!(r.series(Metric::Wait, "l/lock/t").unwrap().hist.count(), 3);
    assert_eq!(r.series(Metric::Hold, "l/lock/t").unwrap().hist.count(), 2);
}

const CRN: &str = r#"
[scenario]
name = "crn"
duration = "2s"
cpus = 4
[locks.l]
kind = "rwsem"
[ops.lookup]
steps = ["down_read l", "cpu exp(5us)", "up_read l"]
[ops.mkdir]
steps = ["down_write l", "cpu exp(50us)", "up_write l"]
[tasks.walkers]
count = 8
program = ["loop", "sleep exp(100us)", "call lookup", "end"]
[tasks.churn]
count = 2
program = ["loop", "sleep exp(1ms)", "call mkdir", "end"]
[variants.after.ops.mkdir]
steps = ["cpu exp(20us)", "down_write l", "cpu exp(30us)", "up_write l"]

[machine]
profile = 'ideal'
"#;

#[test]
fn common_random_numbers_a_variant_leaves_other_tasks_draws_unchanged() {
    let (before, d0) = run_variant(CRN, "base", 3);
    let (after, d1) = run_variant(CRN, "after", 3);
    // The patch changes what the churners draw ...
    let churn = |d: &[(TaskId, Dur)], t: u32| {
        d.iter()
            .filter(|x| x.0 == TaskId(t))
            .map(|x| x.1)
            .collect::<Vec<_>>()
    };
    assert_ne!(churn(&d0, 8), churn(&d1, 8));
    // ... and the walkers' timing (they share the lock) ...
    assert_ne!(
        before.series(Metric::Wait, "l/read/walkers").unwrap().hist,
        after.series(Metric::Wait, "l/read/walkers").unwrap().hist
    );
    // ... but every walker draws exactly the same numbers, in the same order,
    // as far as both runs got.
    for t in 0..8u32 {
        let (a, b) = (churn(&d0, t), churn(&d1, t));
        let n = a.len().min(b.len());
        assert!(n > 1000, "walker {t} drew only {n} numbers");
        assert_eq!(
            a[..n],
            b[..n],
            "walker {t}'s draws changed with the variant"
        );
    }
}

#[test]
fn adding_a_task_group_does_not_shift_other_groups_draws() {
    let extra = format!(
        "{CRN}\n[tasks.extra]\ncount = 5\nprogram = [\"loop\", \"sleep exp(3ms)\", \"end\"]\n"
    );
    let (_, d0) = run_variant(CRN, "base", 3);
    let (_, d1) = run_variant(&extra, "base", 3);
    let of = |d: &[(TaskId, Dur)], t: u32| {
        d.iter()
            .filter(|x| x.0 == TaskId(t))
            .map(|x| x.1)
            .take(500)
            .collect::<Vec<_>>()
    };
    for t in 0..10u32 {
        assert_eq!(of(&d0, t), of(&d1, t), "task {t}");
    }
}

#[test]
fn same_seed_same_results_and_threads_do_not_matter() {
    let file = ScenarioFile::new(Source::new("crn.toml", CRN)).unwrap();
    let go = |jobs| {
        run(
            &file,
            &RunOptions {
                reps: 3,
                jobs,
                seed: Some(11),
                ..RunOptions::default()
            },
        )
        .unwrap()
        .result
    };
    let a = go(1);
    let b = go(2);
    let c = go(1);
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(
        output::files::summary_csv(&a),
        output::files::summary_csv(&b)
    );
    assert_eq!(output::files::hist_csv(&a), output::files::hist_csv(&b));
    assert_eq!(
        output::files::windows_csv(&a),
        output::files::windows_csv(&b)
    );
    // Replications pool: three times the acquisitions of one.
    let one_rep = run(
        &file,
        &RunOptions {
            reps: 1,
            jobs: 1,
            seed: Some(11),
            ..RunOptions::default()
        },
    )
    .unwrap()
    .result;
    let n1 = one_rep.variants[0].counter("l/read_acquisitions").unwrap();
    let n3 = a.variants[0].counter("l/read_acquisitions").unwrap();
    assert!(n3 > 2 * n1 && n3 < 4 * n1, "{n1} vs {n3}");
}

#[test]
fn different_seeds_differ() {
    let (a, _) = run_variant(CRN, "base", 1);
    let (b, _) = run_variant(CRN, "base", 2);
    assert_ne!(a, b);
}

#[test]
fn empirical_distributions_load_from_files_next_to_the_scenario() {
    // A bpftrace hist() dump (docs/cases.md case 2, window 1, units us) and a
    // TSV column of samples, both relative to the scenario file.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("destroy.hist"),
        "@usecs:\n[0]  16 |@@@|\n[1]  2 ||\n[2, 4)  80 |@@@@|\n[4, 8)  131 |@@@@@|\n[8, 16)  121 |@@@@|\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("rmdir.tsv"),
        "point\tremove_mean_ns\nA\t6500\nB\t6600\n",
    )
    .unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        r#"
[scenario]
name = "emp"
duration = "1s"
[dists.destroy]
dist = "empirical"
file = "destroy.hist"
format = "bpftrace-hist"
unit = "us"
[dists.rmdir]
dist = "empirical"
file = "rmdir.tsv"
format = "samples"
column = "remove_mean_ns"
unit = "ns"
[tasks.t]
count = 1
program = ["loop", "span_begin a", "cpu $destroy", "span_end a",
           "span_begin b", "cpu $rmdir", "span_end b", "end"]

[machine]
profile = 'ideal'
"#,
    )
    .unwrap();
    let src = experiments::builtin::source(scenario.to_str().unwrap(), &[]).unwrap();
    let file = ScenarioFile::new(src).unwrap();
    let r = run(
        &file,
        &RunOptions {
            jobs: 1,
            ..RunOptions::default()
        },
    )
    .unwrap()
    .result;
    let v = &r.variants[0];
    let a = &v.series(Metric::Span, "a/t").unwrap().hist;
    let b = &v.series(Metric::Span, "b/t").unwrap().hist;
    assert!(a.count() > 10_000);
    assert!(
        a.max() < Dur::from_us(16),
        "hist buckets end at 16 us: {}",
        a.max()
    );
    assert_eq!(
        a.quantile(0.04),
        Dur::ZERO,
        "the [0] bucket holds 16 of 350 samples (4.6%)"
    );
    assert!(
        a.quantile(0.06) >= Dur::from_us(1),
        "then [1] holds 2 more: the 6th percentile is in [2, 4) us"
    );
    assert_eq!(
        (b.min(), b.max()),
        (Dur(6_500), Dur(6_600)),
        "samples are drawn as they are"
    );
    // A missing file is an error naming the field and the path.
    std::fs::remove_file(dir.path().join("rmdir.tsv")).unwrap();
    let src = experiments::builtin::source(scenario.to_str().unwrap(), &[]).unwrap();
    let e = run(&ScenarioFile::new(src).unwrap(), &RunOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("dists.rmdir.file") && e.contains("rmdir.tsv"),
        "{e}"
    );
}
