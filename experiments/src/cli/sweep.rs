//! `convoy sweep`: the sweep file read and expanded into points, the
//! shard chosen, then the points not yet done run.

use super::flags::{PointFlags, SweepArgs};
use crate::sweep::{SweepOptions, SweepSpec};
use std::path::PathBuf;

/// A validated sweep: the file read and expanded, the shard chosen.
pub(super) struct SweepPlan {
    spec: SweepSpec,
    opts: SweepOptions,
}

/// Sweep options writing to `out`, the shard from the flags or the
/// environment (`SLURM_ARRAY_TASK_ID`, `JOB_COMPLETION_INDEX`).
pub(super) fn options(f: &PointFlags, out: PathBuf) -> anyhow::Result<SweepOptions> {
    let shard =
        crate::sweep::run::shard_of(f.shard_index, f.shard_count, &|v| std::env::var(v).ok())?;
    Ok(SweepOptions {
        jobs: f.jobs,
        shard,
        out,
        progress: f.progress,
        run_dirs: None,
    })
}

/// Reads the sweep and chooses the shard.
pub(super) fn plan(a: SweepArgs) -> anyhow::Result<SweepPlan> {
    let mut spec = crate::sweep::parse(&crate::sweep::sweep_source(&a.sweep)?)?;
    spec.machine = a.machine;
    Ok(SweepPlan {
        spec,
        opts: options(&a.points, a.out)?,
    })
}

/// Runs the points of the shard not done yet and says what is left.
pub(super) fn execute(p: SweepPlan) -> anyhow::Result<()> {
    let r = crate::sweep::run_sweep(&p.spec, &p.opts)?;
    let out = p.opts.out.display();
    println!(
        "sweep {}: ran {} point(s), {} already done, {:.2}s wall; {out}/points.csv",
        r.header.sweep,
        r.ran,
        r.skipped,
        r.wall.as_secs_f64()
    );
    if r.missing > 0 {
        println!(
            "{} of {} points are in other shards: `convoy merge DIR... --out DIR` joins them",
            r.missing, r.header.points
        );
    }
    Ok(())
}
