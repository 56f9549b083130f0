//! The `convoy` binary as users run it.

use crate::common::{convoy, convoy_status};

const FILES: [&str; 4] = ["summary.csv", "hist.csv", "windows.csv", "manifest.json"];

/// Runs `exp` with 1, 2 and again 1 thread and checks the files match.
fn same_files_with_any_thread_count(exp: &str, duration: &str, reps: &str) {
    let d = tempfile::tempdir().unwrap();
    let run = |out: &str, jobs: &str| {
        convoy(
            &[
                "run",
                exp,
                "--duration",
                duration,
                "--reps",
                reps,
                "--jobs",
                jobs,
                "--out",
                out,
            ],
            d.path(),
        );
    };
    run("a", "1");
    run("b", "2");
    run("c", "1");
    let several = (reps != "1").then_some("replications.csv");
    for f in FILES.into_iter().chain(several) {
        let a = std::fs::read(d.path().join("a").join(f)).unwrap();
        assert!(!a.is_empty(), "{exp}: {f} is empty");
        for other in ["b", "c"] {
            let b = std::fs::read(d.path().join(other).join(f)).unwrap();
            assert!(a == b, "{exp}: {f} differs between runs a and {other}");
        }
    }
}

#[test]
fn same_seed_gives_byte_identical_files_with_any_thread_count() {
    same_files_with_any_thread_count("writer-parks-readers", "2s", "3");
}

#[test]
fn same_seed_gives_byte_identical_files_with_per_cpu_queues_and_eevdf() {
    // Case 2 run-a: 8 per-CPU queues in EEVDF order, wakeup preemption,
    // workqueues and timers.
    same_files_with_any_thread_count("pidlist-flush-run-a", "300ms", "2");
}

#[test]
fn summary_snapshot_at_a_small_fixed_seed() {
    let d = tempfile::tempdir().unwrap();
    convoy(
        &[
            "run",
            "writer-parks-readers",
            "--duration",
            "3s",
            "--seed",
            "5",
            "--out",
            "o",
        ],
        d.path(),
    );
    let summary = std::fs::read_to_string(d.path().join("o/summary.csv")).unwrap();
    insta::assert_snapshot!(summary);
}

#[test]
fn manifest_records_seed_variants_resolved_scenario_and_rng_stack() {
    let d = tempfile::tempdir().unwrap();
    convoy(
        &[
            "run",
            "writer-parks-readers",
            "--duration",
            "1s",
            "--seed",
            "9",
            "--set",
            "tasks.walkers.count=4",
            "--out",
            "o",
        ],
        d.path(),
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("o/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(m["seed"], 9);
    assert_eq!(m["variants"], serde_json::json!(["base", "short-hold"]));
    let resolved = m["resolved_scenarios"][1]["toml"].as_str().unwrap();
    assert!(
        resolved.contains("count = 4"),
        "--set is in the resolved scenario"
    );
    assert!(
        resolved.contains("value = \"1ms\""),
        "the variant overlay is applied"
    );
    assert!(resolved.contains("duration = \"1s\""));
    // --seed, like --duration, is in the scenario the hash stands for.
    assert!(resolved.contains("seed = 9"), "{resolved}");
    assert_eq!(
        m["resolved_scenarios"][1]["hash"].as_str().unwrap().len(),
        64
    );
    let stack: Vec<&str> = m["rng_stack"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for c in ["rand_chacha", "rand_distr", "blake3"] {
        assert!(stack.contains(&c), "{c} missing from {stack:?}");
    }
}

#[test]
fn list_names_the_builtin_experiments() {
    let d = tempfile::tempdir().unwrap();
    let o = convoy(&["list"], d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("bench-convoy")
            && s.contains("writer-parks-readers")
            && s.contains("inode-alloc-reclaim-map"),
        "{s}"
    );
}

#[test]
fn bench_lines_prints_increments_by_profile_and_cpus() {
    let d = tempfile::tempdir().unwrap();
    let o = convoy(&["bench", "--lines"], d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("ns/incr") && s.contains("incr/s"), "{s}");
    // One row per profile but `ideal` and N: 8 + 6 + 7.
    let rows: Vec<&str> = s
        .lines()
        .filter(|l| l.starts_with("server-") || l.starts_with("kvm-"))
        .collect();
    assert_eq!(rows.len(), 21, "{s}");
    // server-2s at N = 4: 51 ns, as predicted.
    let row = rows
        .iter()
        .find(|l| l.split_whitespace().take(2).eq(["server-2s", "4"]))
        .unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    let (predicted, ratio): (f64, f64) = (cols[5].parse().unwrap(), cols[6].parse().unwrap());
    assert_eq!(predicted, 51.0, "{row}");
    assert!((ratio - 1.0).abs() < 0.01, "{row}");
    assert!(!s.contains("ideal"), "{s}");
}

#[test]
fn bench_prints_the_metrics_and_ends_with_acquisitions_per_sec() {
    let d = tempfile::tempdir().unwrap();
    let o = convoy(
        &[
            "bench",
            "--duration",
            "200ms",
            "--readers",
            "8",
            "--writers",
            "2",
        ],
        d.path(),
    );
    let s = String::from_utf8_lossy(&o.stdout);
    for key in [
        "readers",
        "writers",
        "total_acquisitions=",
        "events=",
        "events_per_sec=",
        "wall_seconds=",
    ] {
        assert!(s.contains(key), "{key} missing: {s}");
    }
    let last = s.lines().last().unwrap();
    let n = last.strip_prefix("acquisitions_per_sec=").expect(last);
    assert!(n.parse::<u64>().unwrap() > 0);
}

#[test]
fn no_arguments_runs_every_builtin_and_writes_results() {
    let d = tempfile::tempdir().unwrap();
    let o = convoy(&[], d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    // One screen: every experiment's headline, 72 columns.
    for b in experiments::builtin::BUILTINS {
        assert!(
            s.contains(&format!("{} ", b.name)),
            "{} missing: {s}",
            b.name
        );
    }
    assert!(s.contains("rmdir-cost span rmdir/bench"), "{s}");
    assert!(s.lines().count() <= 50, "{} lines:\n{s}", s.lines().count());
    for line in s.lines() {
        assert!(line.chars().count() <= 72, "{line}");
    }
    for exp in ["bench-convoy", "writer-parks-readers"] {
        for f in FILES.iter().chain(&["compare.txt"]) {
            assert!(d.path().join("out").join(exp).join(f).exists(), "{exp}/{f}");
        }
    }
    let figures = std::fs::read_dir(d.path().join("out/writer-parks-readers"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "png")
        })
        .count();
    assert!(figures > 0, "no PNG figures written");
}

#[test]
fn run_with_replications_writes_each_ones_summary_and_prints_the_spread() {
    let d = tempfile::tempdir().unwrap();
    let args = |reps: &'static str| {
        [
            "run",
            "writer-parks-readers",
            "--variant",
            "base",
            "--duration",
            "1s",
            "--reps",
            reps,
            "--out",
            "r",
        ]
    };
    let o = convoy(&args("3"), d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("over 3 replications, min / median / max:"),
        "{s}"
    );
    assert!(
        s.contains("base wait kernfs_rwsem/read/walkers\n  mean "),
        "{s}"
    );
    let reps = std::fs::read_to_string(d.path().join("r/replications.csv")).unwrap();
    let summary = std::fs::read_to_string(d.path().join("r/summary.csv")).unwrap();
    // The pooled count of a series is the sum of the replications' counts.
    let count = |line: &str, at: usize| line.split(',').nth(at).unwrap().parse::<u64>().unwrap();
    let walkers = |l: &&str| l.contains(",wait,kernfs_rwsem/read/walkers,");
    let per_rep: Vec<u64> = reps.lines().filter(walkers).map(|l| count(l, 5)).collect();
    let pooled = summary.lines().find(walkers).map(|l| count(l, 4)).unwrap();
    assert_eq!(per_rep.len(), 3, "{reps}");
    assert_eq!(per_rep.iter().sum::<u64>(), pooled);
    for (i, l) in reps.lines().filter(walkers).enumerate() {
        assert!(
            l.starts_with(&format!("writer-parks-readers,base,{i},")),
            "{l}"
        );
    }
    // One replication into the same directory: no stale file is left.
    convoy(&args("1"), d.path());
    assert!(!d.path().join("r/replications.csv").exists());
}

#[test]
fn compare_prints_a_72_column_table_with_ratios_and_spreads() {
    let d = tempfile::tempdir().unwrap();
    let o = convoy(
        &[
            "compare",
            "writer-parks-readers",
            "--duration",
            "2s",
            "--reps",
            "3",
            "--out",
            "c",
        ],
        d.path(),
    );
    let s = String::from_utf8_lossy(&o.stdout);
    for line in s.lines() {
        assert!(
            line.chars().count() <= 72,
            "too wide ({}): {line}",
            line.chars().count()
        );
    }
    assert!(s.contains("wait kernfs_rwsem/write/writer"), "{s}");
    assert!(s.contains("x999") && s.contains("xmax"), "{s}");
    assert!(s.contains("p99.9 over 3 reps, min/med/max:"), "{s}");
    // The base against itself is 1.00; the short hold shrinks the writer's
    // worst wait by two orders of magnitude or more (0.01 or less).
    let writer: Vec<&str> = s
        .lines()
        .skip_while(|l| *l != "wait kernfs_rwsem/write/writer")
        .filter(|l| l.trim_start().starts_with("short-hold"))
        .collect();
    let ratio = writer[0].trim_end().rsplit(' ').next().unwrap();
    assert!(ratio == "0.01" || ratio == "0.00", "{writer:?}");
    let table = std::fs::read_to_string(d.path().join("c/compare.txt")).unwrap();
    assert!(s.starts_with(&table[..200]));
}

#[test]
fn validate_checks_the_chosen_experiments_with_overrides() {
    let d = tempfile::tempdir().unwrap();
    // `convoy validate --experiment rmdir-cost --duration 100ms ARGS...`:
    // exit status, stdout, stderr.
    let validate = |more: &[&str]| {
        let mut args = vec![
            "validate",
            "--experiment",
            "rmdir-cost",
            "--duration",
            "100ms",
        ];
        args.extend_from_slice(more);
        let o = convoy_status(&args, d.path());
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (o.status.code(), out, err)
    };
    let (code, s, _) = validate(&[]);
    assert_eq!(code, Some(0), "{s}");
    assert!(s.contains("case 1 rmdir-cost"), "{s}");
    assert!(!s.contains("case 2") && !s.contains("case 3"), "{s}");
    assert!(s.contains("5 of 5 targets met"), "{s}");
    // A removal cost four times the fitted one moves rmdir off its target.
    let (code, s, _) = validate(&["--set", "dists.remove_node.value=1us"]);
    assert_eq!(code, Some(1), "{s}");
    assert!(
        s.starts_with("with --set dists.remove_node.value=1us: not the shipped calibration"),
        "{s}"
    );
    let base = s.lines().find(|l| l.contains("base rmdir us")).expect(&s);
    assert!(base.ends_with("OUTSIDE"), "{base}");
    // A key the experiment lacks: the experiment, then the usual message, once.
    let (code, _, e) = validate(&["--set", "dists.nope.value=1us"]);
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.starts_with(
            "convoy: error: rmdir-cost: --set dists.nope.value=1us: no table `dists.nope`"
        ),
        "{e}"
    );
    assert_eq!(e.matches("no table").count(), 1, "{e}");
    // Case 2's figures are per 10 s window: another width is an error,
    // before anything runs.
    let o = convoy_status(
        &[
            "validate",
            "--experiment",
            "pidlist-flush-run-b",
            "--set",
            "scenario.window=1s",
        ],
        d.path(),
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.starts_with("convoy: error: pidlist-flush-run-b: the targets are per 10 s window, as the case's script printed them; this run's windows are 1s (scenario.window)"),
        "{e}"
    );
    let (code, _, e) = validate(&["--experiment", "bench-convoy"]);
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains("--experiment bench-convoy: no calibration targets; experiments with targets: rmdir-cost, pidlist-flush-run-a, pidlist-flush-run-b, inode-alloc-reclaim, splitting"),
        "{e}"
    );
}

#[test]
fn validate_prints_model_against_targets_and_exits_1_when_one_is_outside() {
    let d = tempfile::tempdir().unwrap();
    let o = convoy_status(&["validate", "--duration", "100ms"], d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    let base = s.lines().find(|l| l.contains("base rmdir us")).expect(&s);
    assert!(base.ends_with("ok"), "{base}");
    // 100 ms cannot show case 2's 10 s windows: outside, so exit 1.
    let calls = s
        .lines()
        .find(|l| l.contains("unpatched calls/10s"))
        .expect(&s);
    assert!(calls.ends_with("OUTSIDE"), "{calls}");
    assert!(
        s.contains("unpatched calls/10s       399.5        -      -    -  OUTSIDE\n    run too short: no whole window after the first (a warm-up)\n"),
        "{s}"
    );
    assert_eq!(o.status.code(), Some(1), "{s}");
    // Run-b's targets have their rows too.
    assert!(
        s.contains("case 2 pidlist-flush-run-b\n  unpatched calls/10s"),
        "{s}"
    );
    assert!(s.contains("patched hist med us"), "{s}");
    // The splitting check runs only when named (`--experiment splitting`).
    assert!(!s.contains("splitting:"), "{s}");
    for line in s.lines() {
        assert!(line.chars().count() <= 72, "{line}");
    }
}

#[test]
fn run_notes_a_wait_still_going_on_at_the_end_that_the_summary_max_misses() {
    // The holder keeps the mutex past the end of the 1 s run: the
    // waiter's wait never ends, so the summary's max (ended waits) is 0,
    // and `run` says how long it had lasted.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("s.toml"),
        r#"
[scenario]
name = "stuck"
duration = "1s"
[locks.m]
kind = "mutex"
[tasks.holder]
count = 1
program = ["mutex_lock m", "sleep 10s", "mutex_unlock m"]
[tasks.waiter]
count = 1
program = ["sleep 250ms", "mutex_lock m", "mutex_unlock m", "sleep 10s"]

[machine]
profile = 'ideal'
"#,
    )
    .unwrap();
    let o = convoy(&["run", "s.toml", "--out", "r"], d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains(
            "note: base wait m/lock/waiter: one was still going on when the run ended, \
             750ms so far (the table's max, 0ns, counts waits that ended)"
        ),
        "{s}"
    );
    assert!(
        s.contains("(--blame, with --blame-subject to pick one, lists what held such a wait up"),
        "{s}"
    );
    // --blame explains ended waits, says the longer one had not ended,
    // and what held it up when the run ended.
    let o = convoy(&["run", "s.toml", "--out", "r", "--blame"], d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains(
            "blame explains waits that ended: m/lock/waiter had one still going on when \
             the run ended, 750ms so far (a longer --duration lets it end)\n\
             what held it up when the run ended (1.000000 s):\n\
             \x20 waiter[0] waits for m (lock) since 0.250000 s\n\
             \x20   holder[0] in a sleep step until 10.000000 s; holding m (lock)\n"
        ),
        "{s}"
    );
    assert!(!s.contains("(--blame, with"), "{s}");
}

#[test]
fn the_plots_line_names_the_kinds_of_plot_written() {
    // A run shorter than two 10 s windows has no per-window plot, and the
    // line that says where the plots are does not promise one.
    let d = tempfile::tempdir().unwrap();
    let run = |duration: &str| {
        let o = convoy(
            &[
                "run",
                "writer-parks-readers",
                "--variant",
                "base",
                "--duration",
                duration,
                "--out",
                duration,
            ],
            d.path(),
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let short = run("1s");
    assert!(
        short.contains("(*-percentiles, *-log2; .png and .svg)"),
        "{short}"
    );
    assert!(!d.path().join("1s/span-walk-walkers-windows.png").exists());
    let long = run("25s");
    assert!(
        long.contains("(*-percentiles, *-log2, *-windows; .png and .svg)"),
        "{long}"
    );
    assert!(d.path().join("25s/span-walk-walkers-windows.png").exists());
}

#[test]
fn a_run_with_nothing_to_plot_says_so() {
    // One task alone with its mutex: every wait is 0, and plots have a
    // log time axis, so there is nothing to draw; the run says why.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("s.toml"),
        r#"
[scenario]
name = "alone"
duration = "10ms"
[locks.m]
kind = "mutex"
[tasks.a]
count = 1
program = ["loop", "mutex_lock m", "mutex_unlock m", "sleep 1ms", "end"]

[machine]
profile = 'ideal'
"#,
    )
    .unwrap();
    let o = convoy(&["run", "s.toml", "--out", "o"], d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("plots: none (no wait or span took longer than 0)"),
        "{s}"
    );
    assert!(!d.path().join("o/wait-m-lock-a-log2.png").exists());
}

#[test]
fn every_example_scenario_and_sweep_runs() {
    // The examples of experiments/scenarios/examples/ are files, not
    // built-ins: they run as a user runs them.
    let d = tempfile::tempdir().unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/examples");
    let mut ran = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let p = path.to_str().unwrap();
        let name = path.file_stem().unwrap().to_str().unwrap();
        let out = d.path().join(name);
        let o = if name.ends_with("-sweep") {
            convoy(&["sweep", p, "--out", out.to_str().unwrap()], d.path())
        } else {
            convoy(
                &[
                    "run",
                    p,
                    "--duration",
                    "20ms",
                    "--out",
                    out.to_str().unwrap(),
                ],
                d.path(),
            )
        };
        assert!(o.status.success(), "{name}");
        ran += 1;
    }
    assert!(ran >= 4, "{ran} examples in {}", dir.display());
}

#[test]
fn progress_lines_show_a_long_run_is_alive_where_no_bar_is_drawn() {
    // Under nohup or CI stderr is no terminal: `auto` writes lines (here
    // every millisecond instead of every 10 s), `off` nothing.
    let dir = tempfile::tempdir().unwrap();
    let env = [("CONVOY_PROGRESS_EVERY_MS", "1")];
    let args = |mode: &'static str| {
        vec![
            "run",
            "bench-convoy",
            "--duration",
            "3s",
            "--progress",
            mode,
            "--out",
            "o",
        ]
    };
    for mode in ["auto", "lines"] {
        let o = crate::common::convoy_env(&args(mode), dir.path(), &env);
        assert!(o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        let line = err
            .lines()
            .find(|l| l.starts_with("convoy: run bench-convoy: "))
            .unwrap_or_else(|| panic!("{mode}: no progress line in {err}"));
        assert!(line.contains("% simulated, elapsed "), "{line}");
        assert!(line.contains(", eta "), "{line}");
    }
    let o = crate::common::convoy_env(&args("off"), dir.path(), &env);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("% simulated"), "{err}");
    // A sweep counts points.
    std::fs::write(
        dir.path().join("s.toml"),
        "[sweep]\nname = \"tiny\"\nscenario = \"bench-convoy\"\nduration = \"200ms\"\n\
         [[param]]\nkey = \"tasks.readers.count\"\nvalues = [8, 16]\n\
         [[figure]]\nmetric = \"wait\"\nsubject = \"lock/read/readers\"\nstat = \"p99\"\n",
    )
    .unwrap();
    let o = crate::common::convoy_env(
        &[
            "sweep",
            "s.toml",
            "--progress",
            "lines",
            "--jobs",
            "1",
            "--out",
            "sw",
        ],
        dir.path(),
        &env,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("convoy: sweep tiny: "), "{err}");
    assert!(err.contains(" points, elapsed "), "{err}");
}
