//! Shared by the integration tests: run a scenario text, exact queueing
//! formulas.
#![allow(dead_code)]

use experiments::builtin;
use experiments::program::Compiled;
use experiments::runner::{run, RunOptions};
use experiments::scenario::{compile, ScenarioFile, Source};
use experiments::world::{Limits, World};
use output::{ExperimentResult, VariantResult};
use std::path::Path;
use std::process::{Command, Output};

/// Runs the `convoy` binary in `cwd` with extra environment variables
/// (and none of the shard variables of the test's own environment) and
/// returns what it did, whatever its exit status.
pub fn convoy_env(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_convoy"));
    c.args(args)
        .current_dir(cwd)
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Runs `convoy`, whatever its exit status.
pub fn convoy_status(args: &[&str], cwd: &Path) -> Output {
    convoy_env(args, cwd, &[])
}

/// Runs `convoy`, which must succeed.
pub fn convoy(args: &[&str], cwd: &Path) -> Output {
    let o = convoy_status(args, cwd);
    assert!(
        o.status.success(),
        "convoy {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Runs every variant of a built-in experiment for `duration`, seed from
/// the scenario, one thread.
pub fn run_builtin(name: &str, duration: &str) -> ExperimentResult {
    run_builtin_seeded(name, duration, None)
}

/// [`run_builtin`] with the seed given.
pub fn run_builtin_seeded(name: &str, duration: &str, seed: Option<u64>) -> ExperimentResult {
    let src = builtin::source(name, &[format!("scenario.duration={duration}")]).unwrap();
    let opts = RunOptions {
        seed,
        jobs: 1,
        progress: experiments::progress::ProgressMode::Off,
        ..RunOptions::default()
    };
    run(&ScenarioFile::new(src).unwrap(), &opts).unwrap().result
}

/// Runs a built-in as `convoy validate` runs it (its targets' run
/// options: the windows' log2 histograms kept), with `sets` and `reps`
/// replications, one thread.
pub fn run_for_validate(name: &str, sets: &[&str], reps: u64) -> experiments::runner::RunOutput {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let src = builtin::source(name, &sets).unwrap();
    let base = RunOptions {
        jobs: 1,
        ..RunOptions::default()
    };
    let opts = RunOptions {
        reps,
        ..experiments::validate::run_options(name, &base)
    };
    run(&ScenarioFile::new(src).unwrap(), &opts).unwrap()
}

/// The base variant of a scenario text, compiled.
pub fn compile_text(text: &str) -> Compiled {
    let file = ScenarioFile::new(Source::new("t.toml", text)).unwrap();
    let loaded = file.load(&file.base).unwrap();
    compile(&file.source, &loaded.doc, &file.base).unwrap()
}

/// The message of the error that loading or compiling the base variant
/// of a scenario text (file `t.toml`) gives. Panics if there is none.
pub fn compile_error(text: &str) -> String {
    let file = ScenarioFile::new(Source::new("t.toml", text)).unwrap();
    let e = match file.load(&file.base) {
        Err(e) => e,
        Ok(loaded) => compile(&file.source, &loaded.doc, &file.base).unwrap_err(),
    };
    e.to_string()
}

/// Runs the base variant of a scenario text with `seed`.
pub fn run_text(text: &str, seed: u64) -> VariantResult {
    let c = compile_text(text);
    let mut w = World::new(&c, seed, 0, Limits::default());
    w.run(&mut |_| {}).unwrap();
    w.result()
}

/// The convoy recipe with real reclaim (R45, R49, R51, R3, R4): a lookup
/// takes kernfs_rwsem for read at 0 and charges a full memcg, one 50 ms
/// reclaim attempt with the lock held; mkdir queues for write at 1 ms;
/// four walkers come at 2 ms and park behind the writer.
pub const RECLAIM_CHAIN: &str = r#"
[scenario]
name = "reclaim-convoy"
duration = "1s"
cpus = 8
[memcg.full]
max = "256MiB"
initial = "256MiB"
reclaim = "50ms"
reclaim_pages = 32
[locks.kernfs_rwsem]
kind = "rwsem"
[tasks.lookup]
count = 1
program = ["down_read kernfs_rwsem", "charge full 1 page", "up_read kernfs_rwsem"]
[tasks.mkdir]
count = 1
program = ["sleep 1ms", "down_write kernfs_rwsem", "cpu 20us", "up_write kernfs_rwsem"]
[tasks.walkers]
count = 4
program = ["sleep 2ms", "down_read kernfs_rwsem", "cpu 1us", "up_read kernfs_rwsem"]

[machine]
profile = 'ideal'
"#;

/// Exact mean wait (queueing delay before service) of the finite-source
/// M/M/1 queue (machine repairman) with `n` sources, think rate `lambda`,
/// service rate `mu` (docs/bench-convoy.md, "Analytical check").
pub fn machine_repairman_wq(n: u32, lambda: f64, mu: f64) -> f64 {
    // p_k proportional to n!/(n-k)! (lambda/mu)^k.
    let rho = lambda / mu;
    let mut weights = vec![1.0];
    for k in 1..=n {
        let last = *weights.last().unwrap();
        weights.push(last * f64::from(n - k + 1) * rho);
    }
    let total: f64 = weights.iter().sum();
    let p: Vec<f64> = weights.iter().map(|w| w / total).collect();
    let l: f64 = p.iter().enumerate().map(|(k, pk)| k as f64 * pk).sum();
    l / (mu * (1.0 - p[0])) - 1.0 / mu
}

/// A small scenario: readers and one writer on an rwsem, 2 CPUs.
pub const TINY_SCENARIO: &str = r#"
[scenario]
name = "tiny"
duration = "200ms"
cpus = 2
variants = ["base", "fifo"]

[locks.l]
kind = "rwsem"

[dists.think]
dist = "exp"
mean = "1ms"

[tasks.readers]
count = 4
program = ["loop", "  sleep $think", "  down_read l", "  cpu 20us", "  up_read l", "end"]

[tasks.writer]
count = 1
program = ["loop", "  sleep 5ms", "  down_write l", "  cpu 50us", "  up_write l", "end"]

[variants.fifo.locks.l]
policy = "fifo"

[machine]
profile = 'ideal'
"#;

/// A mutex held for `hold` (1 ms) while a waiter asks for it: the
/// scenario of the `check` tests' fleet report.
pub const HOLDS_SCENARIO: &str = r#"
[scenario]
name = "holds"
duration = "10ms"
[dists.hold]
dist = "const"
value = "1ms"
[locks.m]
kind = "mutex"
[tasks.holder]
count = 1
program = ["mutex_lock m", "sleep $hold", "mutex_unlock m", "sleep 1s"]
[tasks.waiter]
count = 1
program = ["sleep 100us", "mutex_lock m", "mutex_unlock m", "sleep 1s"]

[machine]
profile = 'ideal'
"#;

/// Four runs, the hold 1..4 ms: the waiter waits hold - 0.1 ms. The
/// observed worst wait, 2.5 ms, is reached by 2 of 4 runs; the exposure
/// is 4 runs long.
pub const HOLDS_REPORT: &str = r#"
[sweep]
name = "r"
scenario = "holds.toml"
duration = "10ms"
[[param]]
key = "dists.hold.value"
name = "hold_ms"
format = "{}ms"
values = [1, 2, 3, 4]
[observation]
metric = "wait"
subject = "m/lock/waiter"
stat = "max"
value = "2500us"
[exposure]
hosts = 2
duration = "20ms"
"#;
