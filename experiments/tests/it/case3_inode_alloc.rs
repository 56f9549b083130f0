//! docs/cases.md case 3 (`inode-alloc-reclaim`): the mechanism, not the fit
//! (`convoy validate` checks the worst waits over 39 replications).

use crate::common::run_builtin;
use output::Metric;
use sim::Dur;

const MS: Dur = Dur(1_000_000);

#[test]
fn r51_reclaim_under_kernfs_rwsem_parks_other_readers_until_the_patch() {
    let r = run_builtin("inode-alloc-reclaim", "20s");
    let max = |variant: &str, metric: Metric, subject: &str| {
        let v = r.variants.iter().find(|v| v.variant == variant).unwrap();
        v.series(metric, subject).unwrap().hist.max()
    };
    // Before: the allocator holds kernfs_rwsem R across direct reclaim
    // (R51, R45); the creator's mkdir queues (R3) and the lister of an
    // unrelated directory parks behind it (R4).
    assert!(max("before", Metric::Hold, "kernfs_rwsem/read/allocator") > 10 * MS);
    assert!(max("before", Metric::Wait, "kernfs_rwsem/write/creator") > 10 * MS);
    assert!(max("before", Metric::Span, "readdir/lister") > 10 * MS);
    // After: reclaim happens before the lock; the hold is the 1.65 us
    // lookup and nobody waits long for kernfs_rwsem.
    assert_eq!(
        max("after", Metric::Hold, "kernfs_rwsem/read/allocator"),
        Dur(1_650)
    );
    for subject in [
        "kernfs_rwsem/read/oomd",
        "kernfs_rwsem/read/below",
        "kernfs_rwsem/read/lister",
        "kernfs_rwsem/write/creator",
    ] {
        assert!(max("after", Metric::Wait, subject) < MS / 10, "{subject}");
    }
    // The allocator still reclaims, with no lock held.
    let after = r.variants.iter().find(|v| v.variant == "after").unwrap();
    assert!(after.counter("memcg/caller/reclaims").unwrap() > 0);
    assert!(
        after
            .series(Metric::Span, "lookup/allocator")
            .unwrap()
            .hist
            .max()
            > 10 * MS
    );
}
