//! docs/cases.md case 1 (`rmdir-cost`): the calibration targets within their
//! tolerance (`convoy validate`) and the per-removal counts of the trace
//! table exactly.

use crate::common::run_builtin;
use experiments::runner::RunOptions;
use experiments::validate::{validate, Verdict};
use output::Metric;

#[test]
fn rmdir_cost_reproduces_case_1_targets_and_trace_counts() {
    let r = run_builtin("rmdir-cost", "100ms");
    // The calibration targets, as `convoy validate` checks them.
    let rows = validate(
        &["rmdir-cost".into()],
        (&["scenario.duration=100ms".into()], &[]),
        None,
        &RunOptions::default(),
    )
    .unwrap();
    let case1: Vec<_> = rows.iter().filter(|r| r.target.case == 1).collect();
    assert_eq!(case1.len(), 5);
    for r in case1 {
        assert_eq!(r.verdict, Verdict::Ok, "{r:?}");
    }
    // The trace table, per removal.
    let per = |variant: &str, counter: &str| {
        let v = r.variants.iter().find(|v| v.variant == variant).unwrap();
        let n = v.series(Metric::Span, "rmdir/bench").unwrap().hist.count();
        v.counter(&format!("{counter}/bench")).unwrap() as f64 / n as f64
    };
    for (variant, attr, ilookup, supers, rcu) in [
        ("base", 26.0, 0.0, 0.0, 0.0),
        ("guard", 52.0, 0.0, 0.0, 0.0),
        ("notify", 52.0, 26.0, 26.0, 234.0),
        ("root-reuse", 52.0, 26.0, 26.0, 78.0),
        ("inode-inited", 52.0, 1.0, 26.0, 234.0),
        ("inode-requested", 52.0, 1.0, 26.0, 234.0),
        ("watchers-shortcut", 52.0, 0.0, 26.0, 234.0),
    ] {
        // A removal still in progress at the horizon has counted some nodes.
        let close = |a: f64, b: f64| (a - b).abs() < 0.01 * b.max(1.0);
        assert!(
            close(per(variant, "attr_write_locks"), attr),
            "{variant} attr"
        );
        assert!(close(per(variant, "ilookup"), ilookup), "{variant} ilookup");
        assert!(
            close(per(variant, "supers_read_locks"), supers),
            "{variant} supers"
        );
        assert!(
            close(per(variant, "rcu_read_sections"), rcu),
            "{variant} rcu"
        );
    }
}

#[test]
fn rmdir_churn_notify_slows_churn_and_inode_requested_recovers_part_of_it() {
    // 1 s: the recovery is 1-3% of the churn, within a 300 ms run's
    // noise since the wakeups' idle search is the kernel's (R121).
    let r = run_builtin("rmdir-churn", "1s");
    let removals = |v: &str| {
        let v = r.variants.iter().find(|x| x.variant == v).unwrap();
        v.series(Metric::Span, "rmdir/churner")
            .unwrap()
            .hist
            .count()
    };
    let (base, notify, fixed) = (
        removals("base"),
        removals("notify"),
        removals("inode-requested"),
    );
    assert!(
        notify < base && fixed > notify && fixed < base,
        "{base} {notify} {fixed}"
    );
}
