//! The built-in `lock-policies` is a showcase: its rows must differ, each
//! for the reason docs/lock-policies.md gives. These orderings are what
//! the table says; a model change that makes two policies alike fails here.

use crate::common::run_builtin_seeded;
use output::Metric;
use sim::Dur;

/// The p99 (or p99.9) wait of `subject` under each policy, by name.
fn tail(r: &output::ExperimentResult, subject: &str, q: f64) -> Vec<(String, Dur)> {
    r.variants
        .iter()
        .map(|v| {
            let s = v.series(Metric::Wait, subject).expect(subject);
            (v.variant.clone(), s.hist.quantile(q))
        })
        .collect()
}

fn of(t: &[(String, Dur)], policy: &str) -> Dur {
    t.iter().find(|(p, _)| p == policy).expect(policy).1
}

#[test]
fn lock_policies_rows_differ_for_the_reasons_the_table_gives() {
    let r = run_builtin_seeded("lock-policies", "2s", None);
    let readers = tail(&r, "kernfs_rwsem/read/walkers", 0.99);
    let writers = tail(&r, "kernfs_rwsem/write/writers", 0.99);
    let rt_writer = tail(&r, "kernfs_rwsem/write/rt_writer", 0.999);
    let x = |t: &[(String, Dur)], p| of(t, p);

    // Readers: passing queued writers (reader-pref) beats one writer per
    // phase (phase-fair), beats arrival order (fifo), beats Linux (whose
    // spinning writers barge past queued readers, R8/R9), beats serving
    // every queued writer first (writer-pref).
    assert!(
        x(&readers, "reader-pref") < x(&readers, "phase-fair"),
        "{readers:?}"
    );
    assert!(
        x(&readers, "phase-fair") < x(&readers, "fifo"),
        "{readers:?}"
    );
    assert!(x(&readers, "fifo") < x(&readers, "linux"), "{readers:?}");
    assert!(
        x(&readers, "linux") < x(&readers, "writer-pref"),
        "{readers:?}"
    );
    // Writers pay the other way round.
    assert!(
        x(&writers, "writer-pref") < x(&writers, "fifo"),
        "{writers:?}"
    );
    assert!(x(&writers, "linux") < x(&writers, "fifo"), "{writers:?}");
    assert!(
        x(&writers, "fifo") < x(&writers, "phase-fair"),
        "{writers:?}"
    );
    // rt is writer-pref but for priority: the SCHED_FIFO writer goes first.
    assert!(
        x(&rt_writer, "rt") < x(&rt_writer, "writer-pref"),
        "{rt_writer:?}"
    );
    // no lock, no wait.
    assert_eq!(x(&readers, "none"), Dur::ZERO);

    // Linux's difference from fifo is its spinning writers.
    let linux = r.variants.iter().find(|v| v.variant == "linux").unwrap();
    let fifo = r.variants.iter().find(|v| v.variant == "fifo").unwrap();
    let won = linux.counter("kernfs_rwsem/spin_successes").unwrap();
    let writes = linux.counter("kernfs_rwsem/write_acquisitions").unwrap();
    assert!(won * 4 > writes, "{won} of {writes} writes won by spinning");
    assert_eq!(fifo.counter("kernfs_rwsem/spin_successes").unwrap_or(0), 0);
}
