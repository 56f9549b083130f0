//! docs/cases.md case 4 (`revalidate-lock`): the predictions have the shape the
//! mechanism implies, at a short duration (the numbers are in the note).

use crate::common::run_builtin;

#[test]
fn lockless_revalidation_removes_the_revalidate_readers_and_their_contention() {
    let r = run_builtin("revalidate-lock", "300ms");
    let (before, after) = (&r.variants[0], &r.variants[1]);
    let c = |v: &output::VariantResult, k: &str| v.counter(k).unwrap_or(0);
    // Before: revalidation is the top call site of read acquisitions.
    let reval = c(
        before,
        "kernfs_rwsem/read_acquisitions/site/kernfs_dop_revalidate",
    );
    assert!(reval as f64 > 0.9 * c(before, "kernfs_rwsem/read_acquisitions") as f64);
    assert!(c(before, "kernfs_rwsem/read_contentions") > 0);
    // After: the remaining readers are lookups and readdir only.
    assert_eq!(
        c(
            after,
            "kernfs_rwsem/read_acquisitions/site/kernfs_dop_revalidate"
        ),
        0
    );
    assert!(c(after, "kernfs_rwsem/read_acquisitions") > 0);
    assert!(
        c(after, "kernfs_rwsem/read_acquisitions") * 10
            < c(before, "kernfs_rwsem/read_acquisitions")
    );
    assert!(
        c(after, "kernfs_rwsem/read_contentions") * 10 < c(before, "kernfs_rwsem/read_contentions")
    );
    // Readers walk more often, and the churner churns more.
    assert!(c(after, "walks/walkers") > c(before, "walks/walkers"));
}
