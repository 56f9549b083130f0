//! Numbers at the edges: zero and huge durations, 1 and 4096 CPUs, 100,000
//! tasks, a histogram with one sample, empty windows, empty groups and
//! blocks. Each is handled (a run or an error naming file, line and field),
//! never a panic, an abort, an allocation without bound or a hang.

use experiments::scenario::{compile, ScenarioFile, Source};
use output::files::{hist_csv, summary_csv, windows_csv};
use output::{ExperimentResult, Metric, VariantResult};
use sim::{Dur, SimTime};

const MS: Dur = Dur(1_000_000);

fn run(text: &str) -> VariantResult {
    crate::common::run_text(text, 1)
}

/// The error a scenario text gives when loaded and compiled.
fn error(text: &str) -> String {
    let f = ScenarioFile::new(Source::new("t.toml", text)).unwrap();
    let e = match f.load(&f.base) {
        Err(e) => e,
        Ok(l) => match compile(&f.source, &l.doc, &f.base) {
            Err(e) => e,
            Ok(_) => panic!("expected an error from:\n{text}"),
        },
    };
    e.to_string()
}

fn assert_error(text: &str, needles: &[&str]) {
    let e = error(text);
    for n in needles {
        assert!(e.contains(n), "missing `{n}` in: {e}");
    }
}

fn counter(r: &VariantResult, s: &str) -> u64 {
    r.counter(s)
        .unwrap_or_else(|| panic!("no counter {s}: {:?}", r.counters))
}

fn hist<'a>(r: &'a VariantResult, m: Metric, s: &str) -> &'a sim::stats::LatencyHist {
    &r.series(m, s)
        .unwrap_or_else(|| panic!("no series {s}"))
        .hist
}

fn csv(bytes: Vec<u8>) -> Vec<String> {
    String::from_utf8(bytes)
        .unwrap()
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect()
}

#[test]
fn zero_length_steps_and_a_const_zero_distribution_run_inside_a_loop_that_advances_time() {
    let r = run(r#"
[scenario]
name = "zero"
duration = "1ms"
[locks.l]
kind = "mutex"
[dists.nothing]
dist = "const"
value = "0ns"
[tasks.a]
count = 2
program = ["loop", "cpu 0ns", "sleep 0ns", "mutex_lock l", "cpu const(0ns)",
           "sleep $nothing", "mutex_unlock l", "sleep 10us", "end"]

[machine]
profile = 'ideal'
"#);
    // Passes start at 0, 10 us, ..., 990 us: 100 per task. A hold of zero
    // length never makes the other task wait.
    assert_eq!(counter(&r, "l/acquisitions"), 200);
    assert_eq!(counter(&r, "l/contentions"), 0);
    assert_eq!(hist(&r, Metric::Hold, "l/lock/a").count(), 200);
    assert_eq!(hist(&r, Metric::Hold, "l/lock/a").max(), Dur::ZERO);
    assert_eq!(hist(&r, Metric::Wait, "l/lock/a").max(), Dur::ZERO);
}

#[test]
fn a_zero_duration_run_is_an_error_naming_the_field() {
    let text = "[scenario]\nname = \"z\"\nduration = \"0ns\"\n[tasks.a]\ncount = 1\nprogram = [\"sleep 1ms\"]\n\n[machine]\nprofile = 'ideal'\n";
    assert_error(text, &["t.toml:3", "scenario.duration", "more than zero"]);
    assert_error(
        &text.replace("\"0ns\"", "\"0\""),
        &["t.toml:3", "scenario.duration"],
    );
}

#[test]
fn a_one_nanosecond_run_processes_time_zero_only() {
    let r = run(r#"
[scenario]
name = "tiny"
duration = "1ns"
[tasks.a]
count = 3
program = ["span_begin s", "sleep 0ns", "span_end s", "count started", "loop", "sleep 1ns", "count passes", "end"]

[machine]
profile = 'ideal'
"#);
    let s = r.series(Metric::Span, "s/a").unwrap();
    assert_eq!((s.hist.count(), s.hist.max()), (3, Dur::ZERO));
    // The sleeps of 1 ns end at the horizon: not processed.
    assert_eq!(counter(&r, "started/a"), 3);
    assert_eq!(counter(&r, "passes/a"), 0);
    assert_eq!(r.horizon.0, 1);
    // One window, holding all three samples.
    let w: Vec<u64> = s.windows.iter().map(|(_, b)| b.count).collect();
    assert_eq!(w, vec![3]);
}

#[test]
fn sleeps_beyond_the_event_trees_time_span_are_exact_and_cheap() {
    // 1000000 s (11.6 days) is far beyond the slot queue's 4.9 h span: the
    // side heap. 30 days of simulated time in a few dozen events.
    let r = run(r#"
[scenario]
name = "long"
duration = "720h"
window = "1h"
[tasks.a]
count = 3
program = ["loop", "span_begin s", "sleep 1000000s", "span_end s", "end"]
[tasks.b]
count = 1
program = ["loop", "sleep 5h", "count tick", "end"]
[tasks.c]
count = 2
program = ["loop", "sleep 4h", "count tick", "end"]

[machine]
profile = 'ideal'
"#);
    // 1e6 s and 2e6 s end before 30 days (2.592e6 s); 3e6 s does not.
    let s = hist(&r, Metric::Span, "s/a");
    assert_eq!(s.count(), 6);
    assert_eq!(
        (s.min(), s.max()),
        (Dur::from_secs(1_000_000), Dur::from_secs(1_000_000))
    );
    // 5 h, 10 h, ..., 715 h (720 h is the horizon): 143.
    assert_eq!(counter(&r, "tick/b"), 143);
    assert_eq!(counter(&r, "tick/c"), 2 * 179);
    assert!(r.events < 700, "{} events", r.events);
    assert_eq!(r.series(Metric::Span, "s/a").unwrap().windows.len(), 720);
}

#[test]
fn a_hundred_thousand_tasks_sleeping_beyond_the_span_do_not_slow_the_queue() {
    // Each of 100,000 sleeps beyond the tree's span used to sort every
    // pending event (minutes); now a few hundred milliseconds.
    let r = run(r#"
[scenario]
name = "many"
duration = "10ms"
cpus = 4096
[locks.l]
kind = "rwsem"
[tasks.exit]
count = 50000
program = ["down_read l", "cpu 1us", "up_read l", "count done"]
[tasks.nap]
count = 50000
program = ["down_write l", "cpu 10ns", "up_write l", "count done", "sleep 1000000s", "count woke"]

[machine]
profile = 'ideal'
"#);
    assert_eq!(counter(&r, "done/exit"), 50_000);
    assert_eq!(counter(&r, "done/nap"), 50_000);
    assert_eq!(counter(&r, "woke/nap"), 0);
    assert_eq!(counter(&r, "l/read_acquisitions"), 50_000);
    assert_eq!(counter(&r, "l/write_acquisitions"), 50_000);
    assert_eq!(hist(&r, Metric::Hold, "l/write/nap").count(), 50_000);
    assert!(r.events < 1_000_000, "{} events", r.events);
}

#[test]
fn durations_too_large_are_errors_naming_the_field_not_clamps_or_panics() {
    let base = r#"
[scenario]
name = "big"
duration = "1s"
[tasks.a]
count = 1
program = ["loop", "sleep 1ms", "end"]

[machine]
profile = 'ideal'
"#;
    // Past u64 nanoseconds.
    assert_error(
        &base.replace("\"1s\"", "\"99999999999999999999s\""),
        &["t.toml:4", "scenario.duration", "too large"],
    );
    // Within u64 but beyond what a draw can be (2^62 ns, 146 years) was
    // silently clamped, so `sleep 5000000h` slept 146 years.
    for step in [
        "sleep 99999999999999999999s",
        "cpu exp(99999999999999999999s)",
        "sleep 5000000h",
        "sleep const(5000000h)",
    ] {
        assert_error(
            &base.replace("sleep 1ms", step),
            &["t.toml:7", "tasks.a.program[1]", "too large"],
        );
    }
    let named = format!("{base}[dists.forever]\ndist = \"const\"\nvalue = \"5000000h\"\n");
    assert_error(&named, &["dists.forever", "too large"]);
    // The largest allowed constant still runs.
    let r = run(&base.replace(
        "sleep 1ms",
        "span_begin s\", \"sleep 4611686018427387904ns\", \"span_end s",
    ));
    assert_eq!(hist(&r, Metric::Span, "s/a").count(), 0);
}

#[test]
fn too_many_windows_is_an_error_not_an_allocation() {
    // 1 ns windows over 60 s would be 6e10 bins per series (an abort).
    let text = r#"
[scenario]
name = "w"
duration = "60s"
window = "1ns"
[tasks.a]
count = 1
program = ["span_begin s", "sleep 1ms", "span_end s"]

[machine]
profile = 'ideal'
"#;
    assert_error(text, &["t.toml:5", "scenario.window", "at most 1048576"]);
    // The default 10 s window over 500 years: the duration is named.
    assert_error(
        &text
            .replace("window = \"1ns\"\n", "")
            .replace("\"60s\"", "\"4380000h\""),
        &["t.toml:4", "scenario.duration", "scenario.window"],
    );
    // Through the CLI: exit status 2, no abort, no output.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.toml"), text).unwrap();
    let o = crate::common::convoy_status(&["run", "w.toml", "--out", "out"], dir.path());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("w.toml:5") && stderr.contains("scenario.window"),
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_window_wider_than_the_time_left_does_not_overflow() {
    // 500-year windows; the sample lands 103 years in: `at + width` passed
    // u64::MAX (a panic in debug builds).
    let r = run(r#"
[scenario]
name = "wide"
duration = "1000000h"
window = "4380000h"
[tasks.a]
count = 1
program = ["sleep 900000h", "span_begin s", "sleep 1ms", "span_end s"]

[machine]
profile = 'ideal'
"#);
    let s = r.series(Metric::Span, "s/a").unwrap();
    assert_eq!((s.hist.count(), s.hist.max()), (1, MS));
    let w: Vec<(SimTime, u64)> = s.windows.iter().map(|(t, b)| (t, b.count)).collect();
    assert_eq!(w, vec![(SimTime::ZERO, 1)]);
    assert_eq!(r.events, 3);
}

#[test]
fn one_cpu_serves_two_hundred_tasks_in_turn() {
    let r = run(r#"
[scenario]
name = "one"
duration = "200ms"
cpus = 1
[tasks.a]
count = 200
program = ["cpu 1ms", "count done"]

[machine]
profile = 'ideal'
"#);
    // Task i finishes at (i + 1) ms; the last at 200 ms, the horizon.
    assert_eq!(counter(&r, "done/a"), 199);
    assert_eq!(counter(&r, "cpu/runqueue_waits"), 199);
    assert_eq!(counter(&r, "cpu/runqueue_max_len"), 199);
    // Waits of 1, 2, ..., 199 ms.
    assert_eq!(
        counter(&r, "cpu/runqueue_wait_ns"),
        (199 * 200 / 2 * MS).ns()
    );
}

#[test]
fn four_thousand_ninety_six_cpus_with_few_and_with_more_tasks() {
    let few = run(r#"
[scenario]
name = "wide"
duration = "10ms"
cpus = 4096
[locks.l]
kind = "mutex"
[tasks.a]
count = 3
program = ["loop", "mutex_lock l", "cpu 1ms", "mutex_unlock l", "end"]

[machine]
profile = 'ideal'
"#);
    // The lock, not the CPUs, serialises them: holds of 1 ms ending at
    // 1, 2, ..., 9 ms (10 ms is the horizon).
    assert_eq!(hist(&few, Metric::Hold, "l/lock/a").count(), 9);
    assert_eq!(few.counter("cpu/runqueue_waits").unwrap_or(0), 0);
    let more = run(r#"
[scenario]
name = "wide"
duration = "10ms"
cpus = 4096
[tasks.a]
count = 5000
program = ["cpu 1ms", "count done"]

[machine]
profile = 'ideal'
"#);
    assert_eq!(counter(&more, "done/a"), 5000);
    assert_eq!(counter(&more, "cpu/runqueue_waits"), 5000 - 4096);
    assert_eq!(counter(&more, "cpu/runqueue_max_len"), 5000 - 4096);
}

/// One span of 1,234,567 ns ending at 22.23 ms: in the third of five 10 ms
/// windows.
const ONE_SAMPLE: &str = r#"
[scenario]
name = "one"
duration = "45ms"
window = "10ms"
[tasks.a]
count = 1
program = ["sleep 21ms", "span_begin s", "sleep 1234567ns", "span_end s"]

[machine]
profile = 'ideal'
"#;

#[test]
fn a_histogram_with_one_sample_has_every_figure_equal_to_it() {
    let r = run(ONE_SAMPLE);
    let e = ExperimentResult {
        experiment: "one".into(),
        variants: vec![r],
    };
    let summary = csv(summary_csv(&e));
    assert_eq!(
        summary,
        vec!["one,base,span,s/a,1,1234567,1234567,1234567,1234567,1234567,1234567"]
    );
    // One log2 bucket: [2^20, 2^21).
    assert_eq!(
        csv(hist_csv(&e)),
        vec!["one,base,span,s/a,1048576,2097152,1"]
    );
}

#[test]
fn windows_before_and_after_the_only_sample_are_reported_empty() {
    let e = ExperimentResult {
        experiment: "one".into(),
        variants: vec![run(ONE_SAMPLE)],
    };
    assert_eq!(
        csv(windows_csv(&e)),
        vec![
            "one,base,span,s/a,0,0,0,0",
            "one,base,span,s/a,10000000,0,0,0",
            "one,base,span,s/a,20000000,1,1234567,1234567",
            "one,base,span,s/a,30000000,0,0,0",
            "one,base,span,s/a,40000000,0,0,0",
        ]
    );
}

#[test]
fn a_single_zero_sample_is_the_zero_bucket() {
    let r = run(&ONE_SAMPLE.replace("sleep 1234567ns\", \"span_end", "sleep 0ns\", \"span_end"));
    let e = ExperimentResult {
        experiment: "one".into(),
        variants: vec![r],
    };
    assert_eq!(
        csv(summary_csv(&e)),
        vec!["one,base,span,s/a,1,0,0,0,0,0,0"]
    );
    assert_eq!(csv(hist_csv(&e)), vec!["one,base,span,s/a,0,1,1"]);
    // It ended at 21 ms: the third window again.
    let counts: Vec<u64> = e.variants[0].series[0]
        .windows
        .iter()
        .map(|(_, b)| b.count)
        .collect();
    assert_eq!(counts, vec![0, 0, 1, 0, 0]);
}

#[test]
fn empty_groups_and_blocks_one_instance_families_and_certain_probabilities() {
    let text = r#"
[scenario]
name = "empty"
duration = "1s"
[locks.fam]
kind = "mutex"
instances = 1
[tasks.none]
count = 0
program = ["span_begin n", "sleep 1ms", "span_end n", "count ran"]
[tasks.a]
count = 2
program = ["repeat 0", "count zero", "sleep 1ms", "end",
           "with_prob 0", "count never", "sleep 1ms", "end",
           "with_prob 1", "count always", "end",
           "mutex_lock fam[0]", "cpu 1us", "mutex_unlock fam[0]",
           "span_begin s", "sleep 1ms", "span_end s"]
[tasks.solo]
count = 1
program = ["mutex_lock fam[self]", "cpu 1us", "mutex_unlock fam[self]"]

[machine]
profile = 'ideal'
"#;
    let r = run(text);
    assert_eq!(r.counter("ran/none").unwrap_or(0), 0);
    assert_eq!(
        r.series(Metric::Span, "n/none")
            .map_or(0, |s| s.hist.count()),
        0
    );
    assert_eq!(counter(&r, "zero/a"), 0);
    assert_eq!(counter(&r, "never/a"), 0);
    assert_eq!(counter(&r, "always/a"), 2);
    assert_eq!(counter(&r, "fam/acquisitions"), 3);
    // Neither the empty repeat nor the untaken block took any time.
    let s = hist(&r, Metric::Span, "s/a");
    assert_eq!((s.count(), s.min(), s.max()), (2, MS, MS));
    // `[self]` of a group of 2 names instance 1, which a family of 1 lacks.
    assert_error(
        &text.replace("[tasks.solo]\ncount = 1", "[tasks.solo]\ncount = 2"),
        &[
            "tasks.solo.program[0]",
            "`self` takes 2 values",
            "1 instances",
        ],
    );
}

#[test]
fn probabilities_outside_zero_to_one_are_errors_naming_the_field() {
    let text = r#"
[scenario]
name = "p"
duration = "1s"
[tasks.a]
count = 1
program = ["with_prob 1.5", "count x", "end", "sleep 1ms"]

[machine]
profile = 'ideal'
"#;
    assert_error(text, &["t.toml:7", "tasks.a.program[0]"]);
    assert_error(
        &text.replace("1.5", "-0.1"),
        &["t.toml:7", "tasks.a.program[0]"],
    );
}

/// The scale scenario of the robustness note: 4096 CPUs and 100,000 tasks
/// on one kernfs root (the library's ops): stat readers, dcache-miss
/// lookups in 1024 directories, cgroup mkdir/rmdir churn. The note's
/// figures come from this text in a file, run in release for 1 s and 10 s.
const SCALE: &str = r#"
[scenario]
name = "scale-4096"
description = "4096 CPUs, 100,000 tasks on one kernfs root: stat readers, slow lookups, cgroup churn"
duration = "1s"
cpus = 4096
seed = 1
include = ["kernfs"]

[locks.i_rwsem]
instances = 4000          # [self] of the 4000 lookup tasks (their keys: 0..1023)

[tasks.reader]
count = 95000
program = ["loop", "sleep exp(10ms)", "call stat", "end"]

[tasks.lookup]
count = 4000
program = ["loop", "sleep exp(50ms)", "key random 0 1024", "call lookup_slow", "end"]

[tasks.churner]
count = 1000
program = ["loop", "sleep exp(100ms)", "call cgroup_mkdir", "call cgroup_rmdir", "end"]

[machine]
profile = 'ideal'
"#;

#[test]
fn four_thousand_ninety_six_cpus_and_a_hundred_thousand_kernfs_tasks_run_a_millisecond() {
    let r = run(&SCALE.replace("duration = \"1s\"", "duration = \"1ms\""));
    // Each reader's first sleep, exp(10 ms), ends before 1 ms with chance
    // 1 - e^-0.1: about 9,050 of 95,000 (seed 1: within 6 sd).
    let stats = hist(&r, Metric::Span, "stat/reader").count();
    assert!((8_500..9_600).contains(&stats), "{stats} stats");
    let lookups = hist(&r, Metric::Span, "lookup/lookup").count();
    assert!((60..140).contains(&lookups), "{lookups} lookups");
    assert!(r.events > 100_000, "{} events", r.events);
}
