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
    // Its errors name the flags the user typed, not these sets.
    src.flags = vec![
        (0, format!("--readers {}", args.readers)),
        (1, format!("--writers {}", args.writers)),
        (2, format!("--duration {}", args.duration)),
        (3, format!("--policy {}", args.policy)),
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

/// `convoy bench --lines`: N CPUs incrementing one cache line, on each
/// built-in profile but the ideal one (R70; docs/scenario-language.md,
/// "Cache lines"). Simulated time per point.
pub const LINES_DURATION: sim::Dur = sim::Dur(1_000_000);

/// One point of the line benchmark.
#[derive(Clone, Debug)]
pub struct LineRow {
    pub profile: &'static str,
    pub cpus: u32,
    /// Sockets the CPUs span.
    pub sockets: u32,
    /// Increments done, with the tasks asking for the line in CPU order
    /// at the start, and with each task starting at a random instant in
    /// the first microsecond (a random order).
    pub increments: u64,
    pub shuffled: u64,
    /// The mean cost of one hop of the line in CPU order, each CPU passing
    /// it to the next (the local cost for one CPU).
    pub predicted_ns: f64,
}

impl LineRow {
    pub fn ns_per_increment(&self) -> f64 {
        LINES_DURATION.as_nanos_f64() / self.increments.max(1) as f64
    }
    pub fn increments_per_sec(&self) -> f64 {
        self.increments as f64 / (LINES_DURATION.as_nanos_f64() / 1e9)
    }
    /// In a random order: over ten times as long, as the tasks that
    /// start first increment alone for a while (up to 1 us).
    pub fn shuffled_ns_per_increment(&self) -> f64 {
        10.0 * LINES_DURATION.as_nanos_f64() / self.shuffled.max(1) as f64
    }
}

/// The N CPUs the line benchmark runs on a profile: powers of two up to
/// its CPUs.
fn line_cpus(p: &models::machine::Profile) -> Vec<u32> {
    let max = p.topology.value.cpus();
    (0..).map(|k| 1u32 << k).take_while(|&n| n <= max).collect()
}

/// Runs the line benchmark: every profile but `ideal` (where an access
/// costs nothing), every N of [`line_cpus`].
pub fn lines() -> anyhow::Result<Vec<LineRow>> {
    let mut rows = Vec::new();
    for p in models::machine::profiles::PROFILES {
        if p.name == "ideal" {
            continue;
        }
        for n in line_cpus(p) {
            let m = models::machine::Machine::from_profile(p, Some(n));
            let run = |start: &str, duration: sim::Dur| -> anyhow::Result<u64> {
                let text = format!(
                    "[scenario]\nname = \"lines\"\nduration = \"{duration}\"\ncpus = {n}\n\
                     [lines.counter]\n[tasks.inc]\ncount = {n}\n\
                     program = [{start}\"loop\", \"atomic counter\", \"count incs\", \"end\"]\n",
                );
                let file = ScenarioFile::new(crate::scenario::Source::new("bench:lines", text))?;
                let loaded = file.load(&file.base)?;
                let mut c = compile(&file.source, &loaded.doc, &file.base)?;
                c.machine = m.clone();
                let mut world = World::new(&c, 1, 0, Limits::default());
                world.run(&mut |_| {})?;
                Ok(world.result().counter("incs/inc").unwrap_or(0))
            };
            let predicted_ns = if n == 1 {
                m.lines.local.as_nanos_f64()
            } else {
                let hop = |i: u32| {
                    let d = m
                        .topology
                        .distance(models::CpuId(i), models::CpuId((i + 1) % n));
                    m.lines.at(d).as_nanos_f64()
                };
                (0..n).map(hop).sum::<f64>() / f64::from(n)
            };
            rows.push(LineRow {
                profile: p.name,
                cpus: n,
                sockets: m.topology.sockets,
                increments: run("", LINES_DURATION)?,
                shuffled: run(
                    "\"cpu uniform(0ns, 1us)\", ",
                    sim::Dur(10 * LINES_DURATION.0),
                )?,
                predicted_ns,
            });
        }
    }
    Ok(rows)
}

/// The line benchmark's table.
pub fn format_lines(rows: &[LineRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "lines: N CPUs incrementing one cache line (loop: atomic counter), {} simulated per point",
        LINES_DURATION
    );
    let _ = writeln!(
        s,
        "{:<10} {:>4} {:>7} {:>10} {:>10} {:>9} {:>9} {:>12}",
        "profile", "N", "sockets", "incr/s", "ns/incr", "predicted", "ratio", "shuffled_ns"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<10} {:>4} {:>7} {:>10.3e} {:>10.2} {:>9.2} {:>9.3} {:>12.2}",
            r.profile,
            r.cpus,
            r.sockets,
            r.increments_per_sec(),
            r.ns_per_increment(),
            r.predicted_ns,
            r.ns_per_increment() / r.predicted_ns,
            r.shuffled_ns_per_increment()
        );
    }
    let _ = writeln!(
        s,
        "predicted: the mean transfer from each CPU to the next in CPU order (docs/machine-sources.md §5.2);"
    );
    let _ = writeln!(
        s,
        "shuffled: the tasks first ask for the line in a random order, which the line keeps."
    );
    s
}

/// `convoy bench --scale`: the machine sizes, in CPUs, whose cost per
/// event it measures (issue 38: a fleet host has 316; 4096 is the
/// kernel's largest common NR_CPUS).
pub const SCALE_CPUS: [u32; 5] = [8, 64, 316, 1024, 4096];

/// The size whose cost the others are compared with.
pub const SCALE_REFERENCE_CPUS: u32 = 64;

/// Events each point of `--scale` aims at (by default): enough that the
/// start (every task runnable at once) is a small part of the run.
pub const SCALE_EVENTS: u64 = 8_000_000;

/// Events per CPU per simulated second of the scale workload (measured:
/// 16.4 M events in 1 s on 64 CPUs), to size each point's duration.
const SCALE_EVENTS_PER_CPU_SEC: u64 = 257_000;

/// One point of the scale benchmark.
#[derive(Clone, Debug)]
pub struct ScaleRow {
    pub cpus: u32,
    pub tasks: u32,
    pub simulated: sim::Dur,
    pub events: u64,
    /// Building the world (its tables grow with the machine).
    pub setup: Duration,
    /// The whole run.
    pub wall: Duration,
    /// The events and the wall time after the first quarter of the
    /// events (every task runnable at once at the start, and every
    /// task's state touched for the first time): the steady cost.
    pub steady_events: u64,
    pub steady_wall: Duration,
    /// `--max-memory`'s estimate of the world, in bytes.
    pub memory: u64,
    /// Cloning the world at the end of the run (a snapshot, as rare-event
    /// splitting takes them).
    pub clone: Duration,
    /// The steady ns per event of each round (`--rounds`), in run order.
    pub rounds: Vec<f64>,
}

impl ScaleRow {
    /// Wall time per event in the steady part of a run: the median over
    /// the rounds.
    pub fn ns_per_event(&self) -> f64 {
        let mut v = self.rounds.clone();
        if v.is_empty() {
            return self.steady_ns();
        }
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        if v.len() % 2 == 1 {
            v[m]
        } else {
            (v[m - 1] + v[m]) / 2.0
        }
    }

    /// This run's wall time per event in its steady part.
    fn steady_ns(&self) -> f64 {
        self.steady_wall.as_nanos() as f64 / self.steady_events.max(1) as f64
    }

    /// The lowest and highest ns per event over the rounds.
    pub fn range(&self) -> (f64, f64) {
        let lo = self.rounds.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self
            .rounds
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    }
}

/// The scale workload (`scenarios/bench-scale.toml`) on `cpus` CPUs of
/// `server-2s`, 8 tasks per CPU, one rwsem of the family per 8 CPUs,
/// compiled with a simulated duration of about `events` events.
pub fn scale_scenario(
    cpus: u32,
    events: u64,
) -> anyhow::Result<(crate::program::Compiled, sim::Dur)> {
    let text = include_str!("../scenarios/bench-scale.toml");
    let mut src = crate::scenario::Source::new("builtin:bench-scale", text);
    let families = (cpus / 8).max(1);
    // Whole microseconds, at least one millisecond.
    let ns = events.saturating_mul(1_000_000_000) / (SCALE_EVENTS_PER_CPU_SEC * u64::from(cpus));
    let simulated = sim::Dur((ns / 1000 * 1000).max(1_000_000));
    src.sets = vec![
        format!("scenario.cpus={cpus}"),
        format!("scenario.duration={}ns", simulated.0),
        format!("tasks.work.count={}", 8 * cpus),
        format!("locks.fam.instances={families}"),
        format!("params.families={families}"),
    ];
    let file = ScenarioFile::new(src)?;
    let loaded = file.load(&file.base)?;
    Ok((compile(&file.source, &loaded.doc, &file.base)?, simulated))
}

/// Runs [`scale_scenario`] and times it.
pub fn scale_point(cpus: u32, events: u64, seed: u64) -> anyhow::Result<ScaleRow> {
    let (c, simulated) = scale_scenario(cpus, events)?;
    let tasks = 8 * cpus;
    let start = Instant::now();
    let mut world = World::new(&c, seed, 0, Limits::default());
    let setup = start.elapsed();
    // `progress` is called every CHECK_EVERY events: the instants of the
    // calls time the steady part.
    let mut calls: Vec<Instant> = Vec::new();
    let start = Instant::now();
    world.run(&mut |_| calls.push(Instant::now()))?;
    let wall = start.elapsed();
    let events = world.events();
    let start = Instant::now();
    let snapshot = world.clone();
    let clone = start.elapsed();
    drop(snapshot);
    let first = (calls.len() / 4).min(calls.len().saturating_sub(2));
    let (steady_events, steady_wall) = match (calls.get(first), calls.last()) {
        (Some(a), Some(b)) if calls.len() >= 2 => (
            (calls.len() - 1 - first) as u64 * crate::world::CHECK_EVERY,
            b.duration_since(*a),
        ),
        _ => (events, wall),
    };
    Ok(ScaleRow {
        cpus,
        tasks,
        simulated,
        events,
        setup,
        wall,
        steady_events,
        steady_wall,
        memory: crate::world::estimated_memory(&c),
        clone,
        rounds: Vec::new(),
    })
}

/// The scale benchmark: [`scale_point`] at each of `cpus`.
/// Every size runs once per round, the sizes in turn, so that a drift in
/// the machine's speed hits every size alike; each row keeps its first
/// round's figures and every round's ns per event.
pub fn scale(cpus: &[u32], events: u64, seed: u64, rounds: u32) -> anyhow::Result<Vec<ScaleRow>> {
    let mut rows: Vec<ScaleRow> = Vec::new();
    for round in 0..rounds.max(1) {
        for (i, &n) in cpus.iter().enumerate() {
            let r = scale_point(n, events, seed)?;
            let ns = r.steady_ns();
            if round == 0 {
                rows.push(r);
            }
            rows[i].rounds.push(ns);
        }
    }
    Ok(rows)
}

/// The columns of the scale benchmark's table (docs/contract.md).
pub const SCALE_COLUMNS: [&str; 11] = [
    "cpus",
    "tasks",
    "simulated",
    "events",
    "setup_s",
    "run_s",
    "ns/event",
    "range",
    "ratio",
    "mem_mib",
    "clone_ms",
];

/// The scale benchmark's table; its last line is
/// `ratio_4096_to_64=<x>` (the largest size against the reference).
pub fn format_scale(rows: &[ScaleRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "scale: cost per event by machine size (server-2s, 8 tasks per CPU, scenarios/bench-scale.toml)"
    );
    let c = SCALE_COLUMNS;
    let _ = writeln!(
        s,
        "{:>5} {:>7} {:>10} {:>10} {:>8} {:>8} {:>9} {:>13} {:>6} {:>8} {:>9}",
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]
    );
    let reference = rows
        .iter()
        .find(|r| r.cpus == SCALE_REFERENCE_CPUS)
        .map(ScaleRow::ns_per_event);
    for r in rows {
        let ratio = reference.map_or("-".to_string(), |x| format!("{:.2}", r.ns_per_event() / x));
        let _ = writeln!(
            s,
            "{:>5} {:>7} {:>10} {:>10} {:>8.3} {:>8.3} {:>9.1} {:>13} {:>6} {:>8.1} {:>9.3}",
            r.cpus,
            r.tasks,
            r.simulated.to_string(),
            r.events,
            r.setup.as_secs_f64(),
            r.wall.as_secs_f64(),
            r.ns_per_event(),
            {
                let (lo, hi) = r.range();
                format!("{lo:.1}-{hi:.1}")
            },
            ratio,
            r.memory as f64 / f64::from(1 << 20),
            r.clone.as_secs_f64() * 1e3
        );
    }
    let _ = writeln!(
        s,
        "ns/event: wall time per event after the first quarter of the events, the median of {} round(s)\n\
         (range: lowest-highest); ratio: against {SCALE_REFERENCE_CPUS} CPUs; setup_s, run_s: the first round;\n\
         mem_mib: the world's estimated memory (--max-memory); clone_ms: a snapshot of the world at the end.\n\
         Wall times drift on a shared machine: compare builds side by side.",
        rows.first().map_or(0, |r| r.rounds.len())
    );
    if let (Some(x), Some(last)) = (reference, rows.last()) {
        let _ = writeln!(
            s,
            "ratio_{}_to_{}={:.2}",
            last.cpus,
            SCALE_REFERENCE_CPUS,
            last.ns_per_event() / x
        );
    }
    s
}
