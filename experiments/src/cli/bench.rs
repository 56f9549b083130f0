//! `convoy bench`: the bench-convoy benchmark (docs/bench-convoy.md), or
//! with `--lines` N CPUs incrementing one cache line on each profile.

use super::flags::BenchFlags;
use crate::bench::{self, BenchArgs};
use anyhow::Context;

/// Which benchmark to run.
pub(super) enum BenchPlan {
    Convoy(BenchArgs),
    Lines,
}

/// Checks the duration: the benchmark's arguments.
pub(super) fn plan(f: BenchFlags) -> anyhow::Result<BenchPlan> {
    if f.lines {
        return Ok(BenchPlan::Lines);
    }
    sim::time::parse_duration(&f.duration).with_context(|| format!("--duration {}", f.duration))?;
    Ok(BenchPlan::Convoy(BenchArgs {
        readers: f.readers,
        writers: f.writers,
        duration: f.duration,
        seed: f.seed,
        policy: f.policy,
        machine: f.machine,
    }))
}

/// Runs the benchmark and prints its figures.
pub(super) fn execute(p: BenchPlan) -> anyhow::Result<()> {
    match p {
        BenchPlan::Lines => print!("{}", bench::format_lines(&bench::lines()?)),
        BenchPlan::Convoy(a) => {
            let r = bench::run(&a)?;
            print!("{}", bench::format(&r));
        }
    }
    Ok(())
}
