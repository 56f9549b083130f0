//! `convoy bench`: the bench-convoy benchmark (docs/bench-convoy.md).

use super::flags::BenchFlags;
use crate::bench::{self, BenchArgs};
use anyhow::Context;

/// Checks the duration: the benchmark's arguments.
pub(super) fn plan(f: BenchFlags) -> anyhow::Result<BenchArgs> {
    sim::time::parse_duration(&f.duration).with_context(|| format!("--duration {}", f.duration))?;
    Ok(BenchArgs {
        readers: f.readers,
        writers: f.writers,
        duration: f.duration,
        seed: f.seed,
        policy: f.policy,
        machine: f.machine,
    })
}

/// Runs the benchmark and prints its figures.
pub(super) fn execute(a: BenchArgs) -> anyhow::Result<()> {
    let r = bench::run(&a)?;
    print!("{}", bench::format(&r));
    Ok(())
}
