//! `convoy merge`: the output directories of a sweep's shards joined.

use super::flags::MergeArgs;

/// Joins the shards' directories into `--out`.
pub(super) fn execute(a: MergeArgs) -> anyhow::Result<()> {
    let r = crate::sweep::merge(&a.dirs, &a.out)?;
    if r.missing > 0 {
        eprintln!(
            "convoy: warning: {} of {} points missing (shards not merged or not finished)",
            r.missing, r.header.points
        );
    }
    println!(
        "sweep {}: {} of {} points; {}/points.csv",
        r.header.sweep,
        r.points,
        r.header.points,
        a.out.display()
    );
    Ok(())
}
