//! Running an experiment: every variant x replication, in parallel over
//! independent runs, merged in a fixed order (ARCHITECTURE.md, invariants: determinism and one thread per run).
//!
//! All variants are resolved and compiled before anything runs, so a
//! mistake in any variant is reported before time is spent. Replication `r`
//! keys every stream with `r`, so replications are independent and the
//! same task draws the same numbers in every variant (common random numbers).

use crate::program::Compiled;
use crate::scenario::{compile, ScenarioError, ScenarioFile};
use crate::world::{Limits, RunError, World};
use output::files::{
    CrateVersion, GuestRecord, IdleStateRecord, MachineRecord, Manifest, ResolvedScenario,
};
use output::{ExperimentResult, VariantResult};
use rayon::prelude::*;
use sim::Dur;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Variants to run, in this order; empty means all of the file's.
    pub variants: Vec<String>,
    pub seed: Option<u64>,
    pub reps: u64,
    /// Threads for independent runs; 0 means all cores, 1 the calling thread.
    pub jobs: usize,
    pub limits: Limits,
    /// Progress on stderr when the run takes more than a moment.
    pub progress: crate::progress::ProgressMode,
    /// Keep each series' log2 histogram per window, in this unit
    /// ([`World::keep_window_log2`]); no output file writes them.
    pub window_log2: Option<Dur>,
    /// Thresholds whose exceedances each series counts exactly
    /// ([`World::count_above`]); the headline prints them.
    pub above: Vec<Dur>,
}

/// The thresholds a kernel engineer reads tails by: 1 ms, 10 ms, 100 ms, 1 s.
pub const DEFAULT_ABOVE: [Dur; 4] = [
    Dur(1_000_000),
    Dur(10_000_000),
    Dur(100_000_000),
    Dur(1_000_000_000),
];

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            variants: Vec::new(),
            seed: None,
            reps: 1,
            jobs: 0,
            limits: Limits::default(),
            progress: crate::progress::ProgressMode::Off,
            window_log2: None,
            above: DEFAULT_ABOVE.to_vec(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("variant `{variant}`, replication {rep}: {error}")]
    Run {
        variant: String,
        rep: u64,
        error: Box<RunError>,
    },
    #[error("cannot start worker threads: {0}")]
    Threads(String),
    /// The whole run is over a limit; nothing ran.
    #[error("{0}")]
    Limit(Box<RunError>),
}

pub struct RunOutput {
    /// Replications pooled per variant.
    pub result: ExperimentResult,
    /// Each replication on its own, `[variant][rep]`, for spreads.
    pub per_rep: Vec<Vec<VariantResult>>,
    pub manifest: Manifest,
    pub wall: Duration,
}

/// Resolves and compiles the chosen variants.
pub fn prepare(
    file: &ScenarioFile,
    variants: &[String],
) -> Result<Vec<(Compiled, crate::scenario::Loaded)>, ScenarioError> {
    let names: Vec<String> = if variants.is_empty() {
        file.variants.clone()
    } else {
        variants.to_vec()
    };
    let mut out = Vec::new();
    for v in &names {
        let loaded = file.load(v)?;
        let compiled = compile(&file.source, &loaded.doc, v)?;
        out.push((compiled, loaded));
    }
    Ok(out)
}

/// The versions of the crates that random draws depend on.
pub fn rng_stack() -> Vec<CrateVersion> {
    env!("CONVOY_RNG_STACK")
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(n, v)| CrateVersion {
            name: n.into(),
            version: v.into(),
        })
        .collect()
}

pub fn git_commit() -> Option<String> {
    Some(env!("CONVOY_GIT_COMMIT").to_string()).filter(|s| !s.is_empty())
}

/// Runs one replication of one compiled variant.
pub fn run_one(
    c: &Compiled,
    seed: u64,
    rep: u64,
    limits: Limits,
    window_log2: Option<Dur>,
    above: &[Dur],
    progress: &mut dyn FnMut(sim::SimTime),
) -> Result<VariantResult, RunError> {
    crate::world::check_limits(c, &limits)?;
    let mut w = World::new(c, seed, rep, limits);
    w.count_above(above);
    if let Some(unit) = window_log2 {
        w.keep_window_log2(unit);
    }
    w.run(progress)?;
    Ok(w.result())
}

/// Runs every chosen variant `reps` times and pools replications.
pub fn run(file: &ScenarioFile, opts: &RunOptions) -> Result<RunOutput, RunnerError> {
    let start = Instant::now();
    let prepared = prepare(file, &opts.variants)?;
    let seed = opts
        .seed
        .or(prepared.first().and_then(|(c, _)| c.seed))
        .unwrap_or(1);
    let reps = opts.reps.max(1);
    let jobs: Vec<(usize, u64)> = (0..prepared.len())
        .flat_map(|v| (0..reps).map(move |r| (v, r)))
        .collect();
    // One job runs on the calling thread: a sweep calls this from its own
    // pool's workers, and a nested pool would make them wait busily.
    // No more threads than runs (`--jobs 100000` on one run); 0: all cores.
    let threads = match opts.jobs {
        0 => 0,
        n => n.min(jobs.len()).max(1),
    };
    let at_once = match threads {
        0 => rayon::current_num_threads().min(jobs.len()),
        n => n,
    };
    // The whole run against --max-memory, before any world is made.
    let compiled: Vec<&Compiled> = prepared.iter().map(|(c, _)| c).collect();
    let memory = crate::world::estimated_run_memory(&compiled, reps, at_once);
    crate::world::check_run_memory(&memory, &opts.limits)
        .map_err(|e| RunnerError::Limit(Box::new(e)))?;
    let total: u64 = prepared.iter().map(|(c, _)| c.duration.0).sum::<u64>() * reps;
    let done = AtomicU64::new(0);
    let label = format!(
        "run {}",
        prepared.first().map_or("", |(c, _)| c.experiment.as_str())
    );
    let progress = Mutex::new(crate::progress::Progress::new(
        opts.progress,
        label,
        crate::progress::Unit::Simulated,
        total,
        "{spinner} simulated {percent:>3}% [{bar:30}] elapsed {elapsed} eta {eta}",
    ));
    let tick = |delta: u64| {
        let d = done.fetch_add(delta, Ordering::Relaxed) + delta;
        progress.lock().unwrap_or_else(|e| e.into_inner()).set(d);
    };
    let run_job = |&(v, rep): &(usize, u64)| {
        let c = &prepared[v].0;
        let mut last = 0u64;
        let mut progress = |t: sim::SimTime| {
            tick(t.0.saturating_sub(last));
            last = t.0;
        };
        let r = run_one(
            c,
            seed,
            rep,
            opts.limits,
            opts.window_log2,
            &opts.above,
            &mut progress,
        )
        .map_err(|error| RunnerError::Run {
            variant: c.variant.clone(),
            rep,
            error: Box::new(error),
        });
        tick(c.duration.0.saturating_sub(last));
        r
    };
    let results: Vec<Result<VariantResult, RunnerError>> = if threads == 1 {
        jobs.iter().map(run_job).collect()
    } else {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| RunnerError::Threads(e.to_string()))?;
        pool.install(|| jobs.par_iter().map(run_job).collect())
    };
    progress.lock().unwrap_or_else(|e| e.into_inner()).finish();
    let mut variants: Vec<VariantResult> = Vec::new();
    let mut per_rep: Vec<Vec<VariantResult>> = vec![Vec::new(); prepared.len()];
    for ((v, _rep), r) in jobs.iter().zip(results) {
        let r = r?;
        match variants.get_mut(*v) {
            Some(acc) => acc.merge(&r),
            None => variants.push(r.clone()),
        }
        per_rep[*v].push(r);
    }
    let experiment = prepared
        .first()
        .map(|(c, _)| c.experiment.clone())
        .unwrap_or_default();
    let machines: Vec<MachineRecord> = prepared.iter().map(|(c, _)| machine_record(c)).collect();
    let manifest = Manifest {
        program: "convoy".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: git_commit(),
        experiment: experiment.clone(),
        source: file.source.name.clone(),
        seed,
        replications: reps,
        variants: prepared.iter().map(|(c, _)| c.variant.clone()).collect(),
        duration: prepared.first().map_or(sim::Dur::ZERO, |(c, _)| c.duration),
        machine: machines
            .first()
            .cloned()
            .expect("a scenario file has at least one variant"),
        resolved_scenarios: (prepared.iter().zip(&machines))
            .map(|((_, l), m)| ResolvedScenario {
                variant: l.variant.clone(),
                hash: l.hash.clone(),
                toml: l.resolved_toml.clone(),
                machine: (Some(m) != machines.first()).then(|| m.clone()),
            })
            .collect(),
        rng_stack: rng_stack(),
    };
    Ok(RunOutput {
        result: ExperimentResult {
            experiment,
            variants,
        },
        per_rep,
        manifest,
        wall: start.elapsed(),
    })
}

/// The machine `c` runs on, as the manifest records it.
pub fn machine_record(c: &Compiled) -> MachineRecord {
    let m = &c.machine;
    MachineRecord {
        profile: m.profile.clone(),
        cpus: c.cpus,
        sockets: m.topology.sockets,
        cores_per_socket: m.topology.cores_per_socket,
        threads_per_core: m.topology.threads_per_core,
        hz: m.hz,
        preemption: m.preemption.as_str().into(),
        base_slice: m.base_slice,
        switch_cost: m.switch_cost,
        ipi: m.ipi,
        wake_send: m.wake_send,
        idle_states: (m.idle_states.iter())
            .map(|s| IdleStateRecord {
                name: s.name.into(),
                exit_latency: s.exit_latency,
                target_residency: s.target_residency,
                polling: s.polling,
            })
            .collect(),
        line_local: m.lines.local,
        line_smt: m.lines.smt,
        line_socket: m.lines.socket,
        line_remote: m.lines.remote,
        tick_cost: m.interrupts.tick,
        irq_rate: m.interrupts.irq_rate,
        irq_cost: m.interrupts.irq,
        guest: m.guest.as_ref().map(|g| GuestRecord {
            ipi: g.ipi,
            host_halt_poll: g.host_halt_poll,
            host_wake: g.host_wake,
            steal_fraction: g.steal_fraction,
            steal_episode: g.steal_episode,
        }),
    }
}

/// Writes a run directory all or nothing ([`output::files::Staged`]):
/// `write` puts every file into the staging directory it is given, and
/// only when it succeeds are they moved into `dir` (a `replications.csv`
/// of an earlier run into the same directory goes with them). On any
/// error nothing is left: no partial directory, no directory made for it.
/// An error about a file names its final path.
pub fn write_all_or_nothing<T>(
    dir: &std::path::Path,
    write: impl FnOnce(&std::path::Path) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    use output::files::{WriteError, REPLICATIONS_CSV};
    use output::plots::PlotError;
    let staged = output::files::Staged::new(dir)?;
    let shown = |e: anyhow::Error| -> anyhow::Error {
        let e = match e.downcast::<WriteError>() {
            Ok(w) => return staged.shown_error(w).into(),
            Err(e) => e,
        };
        match e.downcast::<PlotError>() {
            Ok(PlotError::Draw { path, message }) => PlotError::Draw {
                path: staged.shown(&path),
                message,
            }
            .into(),
            Ok(PlotError::Write(w)) => staged.shown_error(w).into(),
            Ok(other) => other.into(),
            Err(e) => e,
        }
    };
    let r = write(staged.path()).map_err(shown)?;
    staged.commit(&[REPLICATIONS_CSV])?;
    Ok(r)
}
