//! `convoy bench`: the bench-convoy benchmark (docs/bench-convoy.md), or
//! with `--lines` N CPUs incrementing one cache line on each profile.

use super::flags::BenchFlags;
use crate::bench::{self, BenchArgs};
use anyhow::Context;

/// Which benchmark to run.
pub(super) enum BenchPlan {
    Convoy(BenchArgs),
    Lines,
    Scale {
        cpus: Vec<u32>,
        events: u64,
        seed: u64,
        rounds: u32,
    },
}

/// The largest machine `--scale` builds: 8 tasks per CPU must fit the
/// task table.
const MAX_SCALE_CPUS: u32 = 65_536;

/// The most events a `--scale` point runs (about an hour at 4096 CPUs).
const MAX_SCALE_EVENTS: u64 = 10_000_000_000;

/// The most rounds `--scale` runs.
const MAX_SCALE_ROUNDS: u32 = 100;

/// Checks the duration: the benchmark's arguments.
pub(super) fn plan(f: BenchFlags) -> anyhow::Result<BenchPlan> {
    if f.lines {
        return Ok(BenchPlan::Lines);
    }
    if f.scale {
        let cpus = if f.cpus.is_empty() {
            bench::SCALE_CPUS.to_vec()
        } else {
            f.cpus
        };
        if let Some(&bad) = cpus.iter().find(|&&n| n == 0 || n > MAX_SCALE_CPUS) {
            anyhow::bail!("--cpus {bad}: each size is 1 to {MAX_SCALE_CPUS} CPUs");
        }
        let events = f.events.unwrap_or(bench::SCALE_EVENTS);
        if events == 0 || events > MAX_SCALE_EVENTS {
            anyhow::bail!("--events {events}: 1 to {MAX_SCALE_EVENTS}");
        }
        if f.rounds == 0 || f.rounds > MAX_SCALE_ROUNDS {
            anyhow::bail!("--rounds {}: 1 to {MAX_SCALE_ROUNDS}", f.rounds);
        }
        return Ok(BenchPlan::Scale {
            cpus,
            events,
            seed: f.seed,
            rounds: f.rounds,
        });
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
        BenchPlan::Scale {
            cpus,
            events,
            seed,
            rounds,
        } => print!(
            "{}",
            bench::format_scale(&bench::scale(&cpus, events, seed, rounds)?)
        ),
        BenchPlan::Convoy(a) => {
            let r = bench::run(&a)?;
            print!("{}", bench::format(&r));
        }
    }
    Ok(())
}
