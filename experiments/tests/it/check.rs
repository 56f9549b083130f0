//! `convoy check REPORT.toml`: a fleet report judged against sampled runs.

use crate::common::{convoy_status, HOLDS_REPORT as REPORT, HOLDS_SCENARIO as SCENARIO};

/// A directory with the scenario, the report reading its observation of
/// lock `m` from `file` (in `format`), and `file` holding `text`.
fn measured_report(file: &str, format: &str, text: &str) -> tempfile::TempDir {
    let report = REPORT.replace(
        "value = \"2500us\"",
        &format!("from = {{ file = \"{file}\", format = \"{format}\", lock = \"m\" }}"),
    );
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("holds.toml"), SCENARIO).unwrap();
    std::fs::write(d.path().join("r.toml"), &report).unwrap();
    std::fs::write(d.path().join(file), text).unwrap();
    d
}

fn check(report: &str) -> (String, String, Option<i32>) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("holds.toml"), SCENARIO).unwrap();
    std::fs::write(d.path().join("r.toml"), report).unwrap();
    let o = convoy_status(&["check", "r.toml", "--out", "c", "--jobs", "1"], d.path());
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code(),
    )
}

#[test]
fn a_report_gets_the_chance_of_its_observation_over_its_exposure() {
    let (out, err, code) = check(REPORT);
    assert_eq!(code, Some(0), "{err}");
    for needle in [
        "max of wait m/lock/waiter observed 2.50ms over 2 host(s) x 20.0ms",
        "= 4 run(s) of 10.0ms",
        "per run: min 900us, p50 2.90ms, p90 3.90ms, max 3.90ms",
        "the observation is at p50.0 of single runs; 2 of 4 runs reach it",
        // 1 - (1 - 1/2)^4 and (1/2)^4.
        "chance to see it or worse over the exposure: 0.938; to see nothing that bad: 0.062",
        // Only the runs holding 3 or 4 ms reach it: the verdict says so.
        "verdict: EXPLAINED ONLY IF hold_ms in 3..4",
        "hold_ms in 3..4 (swept 1..4)",
        // The run closest above the observation, blamed: the waiter slept
        // in the mutex's queue while the holder slept holding it.
        "blame: a representative run (point 2, replication 0: hold_ms=3; m/lock/waiter 2.90ms), its worst wait of that subject:",
        "#1 waiter[0] waited 2.900 ms (wait m/lock/waiter)",
        "2.900 ms    waiter[0] waited for m (lock) [woken by holder[0]]",
        "2.900 ms    holder[0] asleep (sleep step) [holding m (lock)]",
    ] {
        assert!(out.contains(needle), "{needle}\n{out}");
    }
    // A stall no run reaches, over one run: not plausible.
    // A stall no run reaches, over one run: too few runs to tell; with 80
    // runs (20 replications of each point) the bound says not plausible.
    let once = REPORT
        .replace("2500us", "50ms")
        .replace("hosts = 2", "hosts = 1")
        .replace("\"20ms\"", "\"10ms\"");
    let (out, _, _) = check(&once);
    assert!(out.contains("0 of 4 runs reach it"), "{out}");
    assert!(
        // 1 - 0.05^(1/4): the exact 95% bound for none in 4 runs.
        out.contains("at most 0.527 (95% upper bound: no run reaches it)")
            && out.contains("UNDECIDED"),
        "{out}"
    );
    let many = once.replacen("[[param]]", "reps = 20\n[[param]]", 1);
    let (out, _, _) = check(&many);
    assert!(out.contains("0 of 80 runs reach it"), "{out}");
    assert!(
        out.contains("verdict: NOT EXPLAINED: the model almost never"),
        "{out}"
    );
    // Seen as the worst over a long exposure, a value most runs exceed.
    let (out, _, _) = check(
        &REPORT
            .replace("2500us", "1ms")
            .replace("\"20ms\"", "\"1s\""),
    );
    assert!(
        out.contains("verdict: NOT EXPLAINED as the worst seen: over such an exposure the model expects worse"),
        "{out}"
    );
    // The files written are listed at the end.
    let (out, _, _) = check(REPORT);
    let tail: Vec<&str> = out.lines().rev().take(10).collect();
    assert!(tail.iter().any(|l| l.trim() == "points.csv"), "{out}");
    assert!(
        tail.iter().any(|l| l.starts_with("files written, in c/")),
        "{out}"
    );
}

#[test]
fn a_report_without_its_observation_or_exposure_is_an_error() {
    let (_, err, code) = check(&REPORT.replace("[exposure]\nhosts = 2\nduration = \"20ms\"\n", ""));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("a report needs `[exposure]`"), "{err}");
    // Without `[observation]` the report has no figure either; what it
    // lacks is the observation, and the error says so.
    let (_, err, code) = check(&REPORT.replace(
        "[observation]\nmetric = \"wait\"\nsubject = \"m/lock/waiter\"\nstat = \"max\"\nvalue = \"2500us\"\n",
        "",
    ));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("r.toml:11: field `observation`: a report needs `[observation]`"),
        "{err}"
    );
    // A report without a run's duration is told at its `[sweep]` line.
    let (_, err, code) = check(&REPORT.replace("duration = \"10ms\"\n", ""));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("r.toml:2: field `sweep.duration`: a report needs `duration` in [sweep]"),
        "{err}"
    );
    let (_, err, code) = check(&REPORT.replace("value = \"2500us\"", "value = \"soon\""));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("r.toml:") && err.contains("observation.value"),
        "{err}"
    );
}

#[test]
fn the_built_in_reports_parse() {
    for r in [
        "lookup-holds-625ms",
        "readdir-waits-72s",
        "readdir-waits-72s-nonblocking",
        "lookup-waits-15min",
        "lookup-waits-15min-thrash",
    ] {
        let spec = experiments::sweep::parse(&experiments::sweep::spec::report_source(r).unwrap())
            .unwrap();
        assert!(spec.check.is_some(), "{r}");
    }
}

#[test]
fn a_count_of_stalls_over_the_exposure_is_judged_by_its_expected_total() {
    // Per run, the waiter's one wait is at least 2 ms in 2 of the 4
    // points (holds of 3 and 4 ms): 0.5 per run, variance 0.25. Over 4
    // runs: 2 expected, sd 1.
    let counted = REPORT.replace(
        "stat = \"max\"\nvalue = \"2500us\"",
        "stat = \"count_above\"\nthreshold = \"2ms\"\nvalue = 2",
    );
    let (out, err, code) = check(&counted);
    assert_eq!(code, Some(0), "{err}");
    for needle in [
        "count at or above 2.00ms of wait m/lock/waiter observed 2 over 2 host(s)",
        "per run: min 0, p50 1, p90 1, max 1",
        "expected over the exposure: 2.0 (sd 1.0); chance of at least the observed: 0.691, of at most: 0.691",
        // Only the runs holding 3 or 4 ms reach it: the verdict says so.
        "verdict: EXPLAINED ONLY IF hold_ms in 3..4",
        "hold_ms in 3..4 (swept 1..4)",
        // The run with the most such waits (the first of two), blamed.
        "blame: a representative run (point 2, replication 0: hold_ms=3; m/lock/waiter count 1), its worst wait of that subject:",
        "#1 waiter[0] waited 2.900 ms (wait m/lock/waiter)",
        "2.900 ms    waiter[0] waited for m (lock) [woken by holder[0]]",
        "2.900 ms    holder[0] asleep (sleep step) [holding m (lock)]",
    ] {
        assert!(out.contains(needle), "{needle}\n{out}");
    }
    let (out, _, _) = check(&counted.replace("value = 2", "value = 9"));
    assert!(
        out.contains("NOT EXPLAINED: the model expects fewer"),
        "{out}"
    );
    let (_, err, code) = check(&counted.replace("threshold = \"2ms\"\n", ""));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("field `observation.threshold`: `count_above` needs `threshold`"),
        "{err}"
    );
}

#[test]
fn an_observation_is_read_off_perf_lock_or_lock_stat_output() {
    // The same 2.5 ms worst wait as REPORT, as perf lock contention and
    // /proc/lock_stat print it.
    let perf = "\
 contended   total wait     max wait     avg wait         type   caller

         4      6.00 ms      2.50 ms      1.50 ms        mutex   m
";
    let lock_stat = "\
lock_stat version 0.4
                                      m:             0              4        1000.00        2500.00        6000.00        1500.00              0             10         100.00         900.00        2000.00         200.00
";
    for (file, format, text) in [
        ("perf.txt", "perf-lock", perf),
        ("ls.txt", "lock_stat", lock_stat),
    ] {
        let d = measured_report(file, format, text);
        let o = convoy_status(&["check", "r.toml", "--out", "c", "--jobs", "1"], d.path());
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(out.contains("observed 2.50ms"), "{format}: {out}");
        assert!(out.contains("2 of 4 runs reach it"), "{format}: {out}");
        // A lock the file does not have: the error names the file and
        // lists what it has.
        let report = std::fs::read_to_string(d.path().join("r.toml")).unwrap();
        std::fs::write(
            d.path().join("r.toml"),
            report.replace("lock = \"m\"", "lock = \"x\""),
        )
        .unwrap();
        let o = convoy_status(&["check", "r.toml", "--out", "c2"], d.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(
            err.contains("observation.from.lock")
                && err.contains("no line for `x` (lock); it has: m (lock)"),
            "{err}"
        );
    }
}

#[test]
fn a_worst_wait_still_going_on_at_the_end_of_a_run_counts_as_reached() {
    // Holds of 1 and 20 ms in 10 ms runs: with 20 ms the waiter, which
    // asked at 0.1 ms, is still waiting when the run ends, 9.9 ms on. The
    // wait never ends, so no histogram has it, but the stall reached
    // 9.9 ms: it counts for the observed 5 ms.
    let report = REPORT
        .replace("values = [1, 2, 3, 4]", "values = [1, 20]")
        .replace("2500us", "5ms");
    let (out, err, code) = check(&report);
    assert_eq!(code, Some(0), "{err}");
    for needle in [
        "per run: min 900us, p50 9.90ms, p90 9.90ms, max 9.90ms",
        "1 of 2 runs reach it",
        "hold_ms=20; m/lock/waiter 9.90ms), its worst wait of that subject:\n  \
         (still going on when the run ended: no finished wait to explain)\n  \
         what held it up when the run ended (0.010000 s):\n    \
         waiter[0] waits for m (lock) since 0.000100 s\n      \
         holder[0] in a sleep step until 0.020000 s; holding m (lock)\n",
    ] {
        assert!(out.contains(needle), "{needle}\n{out}");
    }
}

#[test]
fn a_measured_number_out_of_range_is_an_error_at_its_line_and_column() {
    // NaN, an infinity, a negative time or a fractional count: each used
    // to give a verdict with exit 0; each is now told by line and column
    // (the column of the number: where `bad` is in the line).
    let lock_stat = |contentions: &str, max: &str| {
        let line =
            format!(
            "{:>40} {:>14} {contentions:>14} {:>14} {max:>14} {:>14} {:>14} {:>14} {:>14} {:>14} \
             {:>14} {:>14} {:>14}",
            "m:", 0, "1000.00", "6000.00", "1500.00", 0, 10, "100.00", "900.00", "2000.00",
            "200.00"
        );
        format!("lock_stat version 0.4\n{line}\n")
    };
    let perf = |max: &str| {
        let line = format!(
            "{:>10} {:>12} {max:>9} ms {:>12} {:>12} {:>8}",
            4, "6.00 ms", "1.50 ms", "mutex", "m"
        );
        format!(
            " contended   total wait     max wait     avg wait         type   caller\n\n{line}\n"
        )
    };
    let cases = [
        (
            "ls.txt",
            "lock_stat",
            lock_stat("4", "NaN"),
            "NaN",
            "not a finite number",
        ),
        (
            "ls.txt",
            "lock_stat",
            lock_stat("4", "-2500.00"),
            "-2500.00",
            "not a finite number",
        ),
        (
            "ls.txt",
            "lock_stat",
            lock_stat("4", "inf"),
            "inf",
            "not a finite number",
        ),
        (
            "ls.txt",
            "lock_stat",
            lock_stat("4.5", "2500.00"),
            "4.5",
            "not a whole number",
        ),
        (
            "perf.txt",
            "perf-lock",
            perf("inf"),
            "inf",
            "not a finite number",
        ),
        (
            "perf.txt",
            "perf-lock",
            perf("-2.50"),
            "-2.50",
            "not a finite number",
        ),
    ];
    for (file, format, text, bad, says) in cases {
        let (n, line) = (text.lines().enumerate())
            .find(|(_, l)| l.contains(bad))
            .unwrap();
        let at = format!(
            "line {}, column {}: {says}",
            n + 1,
            line.find(bad).unwrap() + 1
        );
        let d = measured_report(file, format, &text);
        let o = convoy_status(&["check", "r.toml", "--out", "c"], d.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}\n{err}");
        assert!(
            err.contains(&format!("field `observation.from`: {file}: {at}")),
            "{at}\n{text}\n{err}"
        );
        assert!(!d.path().join("c").exists());
    }
}

/// A hold of 40 sleeps of exp(100us): the waiter, asking at 100 us, waits
/// about 4 ms, rarely 6 ms.
const SPLIT_SCENARIO: &str = r#"
[scenario]
name = "holds"
duration = "20ms"
[locks.m]
kind = "mutex"
[tasks.holder]
count = 1
program = ["mutex_lock m", "repeat 40", "  sleep exp(100us)", "end", "mutex_unlock m", "sleep 1s"]
[tasks.waiter]
count = 1
program = ["sleep 100us", "mutex_lock m", "mutex_unlock m", "sleep 1s"]

[machine]
profile = 'ideal'
"#;

const SPLIT_REPORT: &str = r#"
[sweep]
name = "r"
scenario = "holds.toml"
duration = "20ms"
reps = 4
[[param]]
key = "tasks.waiter.count"
name = "waiters"
values = [1, 2]
[observation]
metric = "wait"
subject = "m/lock/waiter"
stat = "max"
value = "6ms"
[exposure]
hosts = 1
duration = "20ms"
"#;

#[test]
fn splitting_estimates_the_chance_and_replays_whatever_the_thread_count() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("holds.toml"), SPLIT_SCENARIO).unwrap();
    std::fs::write(d.path().join("r.toml"), SPLIT_REPORT).unwrap();
    let go = |out: &str, jobs: &str| {
        let o = convoy_status(
            &[
                "check",
                "r.toml",
                "--out",
                out,
                "--jobs",
                jobs,
                "--splitting",
                "--copies",
                "30",
                "--replicas",
                "3",
            ],
            d.path(),
        );
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        stdout
    };
    let one = go("c1", "1");
    go("c2", "2");
    for needle in [
        "splitting: 3 replica(s) x 30 copies per stage",
        "chance per run of 6.00ms or more: ",
        "rate per host-day: ",
        "runs one by one for the same relative error: ",
        "splitting.csv",
        "splitting-estimate.csv",
    ] {
        assert!(one.contains(needle), "{needle}\n{one}");
    }
    let page = std::fs::read_to_string(d.path().join("c1/report.html")).unwrap();
    assert!(
        page.contains("Splitting: the chance of a rare stall"),
        "{page}"
    );
    // The check's plot: the runs' tail, the observation and the estimate,
    // on the page too.
    assert!(
        one.contains("check-runs.png") && one.contains("check-runs.svg"),
        "{one}"
    );
    assert!(page.contains("How far out the observation is"), "{page}");
    let svg = std::fs::read_to_string(d.path().join("c1/check-runs.svg")).unwrap();
    for label in ["runs one by one (", "observed: 6.00ms", "splitting: "] {
        assert!(svg.contains(label), "{label} not in the plot");
    }
    for f in [
        "splitting.csv",
        "splitting-estimate.csv",
        "report.html",
        "check-runs.png",
        "check-runs.svg",
    ] {
        let a = std::fs::read(d.path().join("c1").join(f)).unwrap();
        let b = std::fs::read(d.path().join("c2").join(f)).unwrap();
        assert_eq!(a, b, "{f} differs with the thread count");
    }
    let est = std::fs::read_to_string(d.path().join("c1/splitting-estimate.csv")).unwrap();
    assert!(
        est.starts_with("observed_ns,run_ns,replicas,copies,p0,p_run,"),
        "{est}"
    );
    // Splitting follows a run's worst value, not a percentile.
    let count = SPLIT_REPORT.replace("stat = \"max\"", "stat = \"p99\"");
    std::fs::write(d.path().join("n.toml"), count).unwrap();
    let o = convoy_status(
        &[
            "check",
            "n.toml",
            "--out",
            "c3",
            "--jobs",
            "1",
            "--splitting",
        ],
        d.path(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--splitting: the observation must be the max of a wait, hold or span"),
        "{err}"
    );
}
