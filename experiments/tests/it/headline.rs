//! The headline `convoy run` prints first: tails per lock wait and span,
//! exact counts above thresholds, after/before ratios, `--above`.

use crate::common::{convoy, convoy_status};

/// A mutex held 2 s (1.96 s in `after`) from time 0; waiters ask for it
/// at 1999 ms (a), 1950 ms (b, two of them) and 500 ms (c), so on the
/// ideal machine their waits are 1 ms, 50 ms and 1.5 s (after: 0, 10 ms,
/// 1.46 s).
const SCENARIO: &str = r#"
[scenario]
name = "tails"
duration = "3s"
variants = ["base", "after"]
[locks.m]
kind = "mutex"
[tasks.holder]
count = 1
program = ["mutex_lock m", "sleep 2s", "mutex_unlock m", "sleep 10s"]
[tasks.a]
count = 1
program = ["sleep 1999ms", "mutex_lock m", "mutex_unlock m", "sleep 10s"]
[tasks.b]
count = 2
program = ["sleep 1950ms", "mutex_lock m", "mutex_unlock m", "sleep 10s"]
[tasks.c]
count = 1
program = ["sleep 500ms", "mutex_lock m", "mutex_unlock m", "sleep 10s"]
[variants.after.tasks.holder]
count = 1
program = ["mutex_lock m", "sleep 1960ms", "mutex_unlock m", "sleep 10s"]

[machine]
profile = 'ideal'
"#;

#[test]
fn headline_counts_waits_longer_than_each_threshold_exactly_with_ratios() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("s.toml"), SCENARIO).unwrap();
    let o = convoy(
        &["run", "s.toml", "--out", "r", "--above", "40ms,1ms,1s"],
        d.path(),
    );
    let s = String::from_utf8_lossy(&o.stdout);
    // A wait of exactly 1 ms is not longer than 1 ms; the thresholds are
    // sorted.
    let expected = "\
variant  metric  subject        count     p50     p99   p99.9  p99.99     max  >1ms  >40ms  >1s
base     wait    m/lock/a           1  1.00ms  1.00ms  1.00ms  1.00ms  1.00ms     0      0    0
base     wait    m/lock/b           2  50.0ms  50.0ms  50.0ms  50.0ms  50.0ms     2      2    0
base     wait    m/lock/c           1   1.50s   1.50s   1.50s   1.50s   1.50s     1      1    1
base     wait    m/lock/holder      1     0ns     0ns     0ns     0ns     0ns     0      0    0
after    wait    m/lock/a           1     0ns     0ns     0ns     0ns     0ns     0      0    0
after    wait    m/lock/b           2  10.0ms  10.0ms  10.0ms  10.0ms  10.0ms     2      0    0
after    wait    m/lock/c           1   1.46s   1.46s   1.46s   1.46s   1.46s     1      1    1
after    wait    m/lock/holder      1     0ns     0ns     0ns     0ns     0ns     0      0    0

after/before: each variant's figure over base's (0.27x: 73% less; 5.40x: 5.4 times; =: none in either)
after/before  metric  subject           p99   p99.9  p99.99     max   >1ms   >40ms    >1s
after/base    wait    m/lock/a       0.000x  0.000x  0.000x  0.000x      =       =      =
after/base    wait    m/lock/b        0.20x   0.20x   0.20x   0.20x  1.00x  0.000x      =
after/base    wait    m/lock/c        0.97x   0.97x   0.97x   0.97x  1.00x   1.00x  1.00x
after/base    wait    m/lock/holder   1.00x   1.00x   1.00x   1.00x      =       =      =
";
    assert!(s.starts_with(expected), "{s}");
}

#[test]
fn a_builtin_run_shows_tails_and_default_thresholds_and_the_full_table_with_verbose() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "writer-parks-readers",
        "--variant",
        "base",
        "--duration",
        "1s",
        "--seed",
        "7",
        "--out",
        "r",
    ];
    let o = convoy(&args, d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    let header = s.lines().next().unwrap();
    for col in ["p99.9", "p99.99", "max", ">1ms", ">10ms", ">100ms", ">1s"] {
        assert!(header.split_whitespace().any(|c| c == col), "{header}");
    }
    assert!(s.contains(" wait ") && s.contains(" span "), "{s}");
    // Holds and counters only with --verbose; one variant, no ratios.
    assert!(!s.contains(" hold ") && !s.contains(" counter "), "{s}");
    assert!(!s.contains("after/before"), "{s}");
    let o = convoy(&[&args[..], &["--verbose"]].concat(), d.path());
    let v = String::from_utf8_lossy(&o.stdout);
    assert!(v.contains(" hold ") && v.starts_with(header), "{v}");
}

#[test]
fn bad_above_lists_are_errors_that_name_the_flag() {
    let d = tempfile::tempdir().unwrap();
    for (list, says) in [
        ("30", "--above 30: `30`"),
        ("1ms,,1s", "--above 1ms,,1s: ``"),
        ("0ms", "--above 0ms: a threshold must be longer than 0"),
        ("1ms,1000us", "--above 1ms,1000us: `1000us` given twice"),
    ] {
        let o = convoy_status(
            &["run", "writer-parks-readers", "--above", list, "--out", "r"],
            d.path(),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{list}: {err}");
        assert!(!d.path().join("r").exists(), "{list}");
    }
}
