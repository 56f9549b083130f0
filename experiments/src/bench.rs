//! `convoy bench`: the `bench-convoy` benchmark of docs/bench-convoy.md.
//!
//! It runs the built-in `bench-convoy` scenario through the same scenario
//! language, compiler and world as every other experiment (so it measures
//! the real engine, not a special path), and prints the metrics the
//! benchmark defines, ending with `acquisitions_per_sec=<integer>`.

use crate::builtin;
use crate::scenario::{compile, ScenarioFile};
use crate::world::{Limits, World};
use output::{Metric, VariantResult};
use sim::stats::LatencyHist;
use std::fmt::Write;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct BenchArgs {
    pub readers: u32,
    pub writers: u32,
    pub duration: String,
    pub seed: u64,
    pub policy: String,
    /// `--machine`: the profile to run on (default: the scenario's).
    pub machine: Option<String>,
}

impl Default for BenchArgs {
    fn default() -> Self {
        BenchArgs {
            readers: 64,
            writers: 4,
            duration: "10s".into(),
            seed: 1,
            policy: "fifo".into(),
            machine: None,
        }
    }
}

pub struct BenchReport {
    pub args: BenchArgs,
    pub result: VariantResult,
    pub wall: Duration,
    pub events: u64,
}

impl BenchReport {
    pub fn readers(&self) -> &LatencyHist {
        self.class("lock/read/readers")
    }
    pub fn writers(&self) -> &LatencyHist {
        self.class("lock/write/writers")
    }
    fn class(&self, subject: &str) -> &LatencyHist {
        &self
            .result
            .series(Metric::Wait, subject)
            .expect("bench-convoy defines both classes")
            .hist
    }
    pub fn acquisitions(&self) -> u64 {
        self.readers().count() + self.writers().count()
    }
    pub fn acquisitions_per_sec(&self) -> u64 {
        (self.acquisitions() as f64 / self.wall.as_secs_f64().max(1e-9)) as u64
    }
}

/// Runs the benchmark once.
pub fn run(args: &BenchArgs) -> anyhow::Result<BenchReport> {
    let b = builtin::find("bench-convoy").expect("bench-convoy is built in");
    let mut src = crate::scenario::Source::new("builtin:bench-convoy", b.text);
    src.sets = vec![
        format!("tasks.readers.count={}", args.readers),
        format!("tasks.writers.count={}", args.writers),
        format!("scenario.duration={}", args.duration),
        format!("locks.lock.policy={}", args.policy),
    ];
    src.machine = args.machine.clone();
    let file = ScenarioFile::new(src)?;
    let start = Instant::now();
    let loaded = file.load(&file.base)?;
    let c = compile(&file.source, &loaded.doc, &file.base)?;
    let mut world = World::new(&c, args.seed, 0, Limits::default());
    world.run(&mut |_| {})?;
    let wall = start.elapsed();
    let events = world.events();
    Ok(BenchReport {
        args: args.clone(),
        result: world.result(),
        wall,
        events,
    })
}

fn us(d: sim::Dur) -> String {
    format!("{:.3}", d.as_nanos_f64() / 1e3)
}

/// The benchmark's printout; the last line is `acquisitions_per_sec=N`.
pub fn format(r: &BenchReport) -> String {
    let a = &r.args;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "bench-convoy: R={} W={} T={} seed={} policy={}",
        a.readers, a.writers, a.duration, a.seed, a.policy
    );
    let _ = writeln!(
        s,
        "{:<8} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "class", "acquisitions", "mean_us", "p50_us", "p99_us", "p999_us", "max_us"
    );
    for (name, h) in [("readers", r.readers()), ("writers", r.writers())] {
        let _ = writeln!(
            s,
            "{:<8} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10}",
            name,
            h.count(),
            format!("{:.3}", h.mean_f64() / 1e3),
            us(h.quantile(0.5)),
            us(h.quantile(0.99)),
            us(h.quantile(0.999)),
            us(h.max())
        );
    }
    let wall = r.wall.as_secs_f64();
    let _ = writeln!(s, "total_acquisitions={}", r.acquisitions());
    let _ = writeln!(s, "wall_seconds={wall:.6}");
    let _ = writeln!(s, "events={}", r.events);
    let _ = writeln!(
        s,
        "events_per_sec={}",
        (r.events as f64 / wall.max(1e-9)) as u64
    );
    let _ = writeln!(s, "acquisitions_per_sec={}", r.acquisitions_per_sec());
    s
}
