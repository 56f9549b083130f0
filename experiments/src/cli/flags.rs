//! The raw flags: what clap parses, with their help texts, and nothing
//! that reads a file or the environment. Help comes from these doc
//! comments.

use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};

/// Most replications one command runs: each is a whole run, and the
/// runner lays out variants x replications before it starts.
const MAX_REPS: u64 = 100_000;

/// A directory argument without trailing slashes (`results/` is
/// `results`), so the paths printed under it read `results/x`.
fn dir_arg(s: &str) -> Result<PathBuf, String> {
    if s.is_empty() {
        return Err("an empty directory name".into());
    }
    Ok(Path::new(s).components().collect())
}

/// convoy: a deterministic discrete-event simulator of Linux kernel lock
/// convoys (rwsem, mutex, memcg reclaim, workqueues, CPUs).
///
/// With no command, runs every built-in experiment and prints its results.
#[derive(Parser, Debug)]
#[command(name = "convoy", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the built-in experiments.
    List,
    /// Run an experiment: a built-in name or a scenario file.
    Run(Box<RunArgs>),
    /// Run the bench-convoy performance benchmark (docs/bench-convoy.md).
    Bench(BenchFlags),
    /// Run variants with common random numbers and print a before/after
    /// table (72 columns) per wait and span subject, with ratios.
    Compare(CompareArgs),
    /// Run the built-in experiments and check the model against every
    /// calibration target of docs/cases.md; exits 1 if one is not met.
    Validate(ValidateArgs),
    /// Run a parameter sweep (docs/sweeps.md): a built-in sweep name or a
    /// sweep file; resumes where a killed run stopped.
    Sweep(SweepArgs),
    /// Check a fleet stall report against the model: runs sampled over
    /// the report's uncertain parameters, the chance to see the observed
    /// stall over its exposure, and the parameters that produce it.
    Check(CheckArgs),
    /// Join the output directories of a sweep's shards.
    Merge(MergeArgs),
    /// List the built-in machine profiles, or show one with every value,
    /// its range and its source.
    Machines(MachinesArgs),
    /// Run an experiment at its machine profile's cited values (and its
    /// own costs' that cite a range) and with each value at the low and
    /// the high end of its cited range, and print each headline
    /// statistic's band (docs/predictions.md, Bands).
    Band(BandArgs),
}

#[derive(Args, Debug)]
pub struct BandArgs {
    /// Built-in experiment name or path to a scenario file.
    #[arg(value_name = "EXP|FILE")]
    pub experiment: String,
    /// The machine profile whose ranges are varied (`convoy machines`
    /// lists them); default: the scenario's.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Simulated duration of every run, overriding the scenario's.
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    /// Seed of every run (default: the scenario's, else 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override a scalar of the scenario in every run (repeatable); a
    /// `machine.FIELD` or `dists.NAME.value` set here is held, not varied.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Output directory (default: out/band-EXP-PROFILE); finished runs in
    /// it are not run again.
    #[arg(long, value_name = "DIR", value_parser = dir_arg)]
    pub out: Option<PathBuf>,
    /// Threads, one run each; 0 = all cores.
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Progress on stderr: a bar on a terminal and a line every 10 s
    /// otherwise (auto), or as named.
    #[arg(long, value_enum, default_value_t = crate::progress::ProgressMode::Auto)]
    pub progress: crate::progress::ProgressMode,
    /// Instead of one value at a time, N runs of a Latin hypercube over
    /// every range together.
    #[arg(long, value_name = "N")]
    pub lhs: Option<usize>,
    /// Replications of every run, pooled; points.csv gives their spread.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_REPS))]
    pub reps: u64,
}

#[derive(Args, Debug)]
pub struct MachinesArgs {
    /// A profile to show in full; without it, all are listed.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
}

/// How a sweep's (or a report's) points are run: threads and shard.
#[derive(Args, Debug)]
pub struct PointFlags {
    /// Threads, one point each; 0 = all cores.
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Progress on stderr: a bar on a terminal and a line every 10 s
    /// otherwise (auto), or as named.
    #[arg(long, value_enum, default_value_t = crate::progress::ProgressMode::Auto)]
    pub progress: crate::progress::ProgressMode,
    /// Run only the points whose index is I modulo the shard count
    /// (default: SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX).
    #[arg(long, value_name = "I")]
    pub shard_index: Option<usize>,
    /// Number of shards.
    #[arg(long, value_name = "N")]
    pub shard_count: Option<usize>,
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Built-in sweep name or path to a sweep file.
    #[arg(value_name = "SWEEP.toml")]
    pub sweep: String,
    #[command(flatten)]
    pub points: PointFlags,
    /// Output directory; finished points in it are not run again.
    #[arg(long, value_name = "DIR", value_parser = dir_arg)]
    pub out: PathBuf,
    /// Run on this machine profile (`convoy machines` lists them): it
    /// replaces the scenario's `[machine]` table, overrides and all;
    /// `--set machine.FIELD=V` still applies after it.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Built-in report name or path to a report file (a sweep file with
    /// `[observation]` and `[exposure]`; docs/sweeps.md).
    #[arg(value_name = "REPORT.toml")]
    pub report: String,
    #[command(flatten)]
    pub points: PointFlags,
    /// Directory of the runs (default: out/check-NAME, NAME the report's `name`); finished runs
    /// in it are not run again.
    #[arg(long, value_name = "DIR", value_parser = dir_arg)]
    pub out: Option<PathBuf>,
    /// Run on this machine profile (`convoy machines` lists them): it
    /// replaces the scenario's `[machine]` table, overrides and all;
    /// `--set machine.FIELD=V` still applies after it.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Also estimate the chance per run (and per host-day) of the observed
    /// worst value by multilevel splitting, for stalls too rare for runs
    /// one by one (docs/sweeps.md); writes splitting.csv and
    /// splitting-estimate.csv.
    #[arg(long)]
    pub splitting: bool,
    /// Copies per splitting stage.
    #[arg(long, value_name = "N", default_value_t = 100, requires = "splitting", value_parser = clap::value_parser!(u32).range(10..))]
    pub copies: u32,
    /// Independent splitting estimates, for the confidence interval.
    #[arg(long, value_name = "R", default_value_t = 10, requires = "splitting", value_parser = clap::value_parser!(u32).range(2..))]
    pub replicas: u32,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Output directories of shards of one sweep.
    #[arg(value_name = "DIR", required = true, value_parser = dir_arg)]
    pub dirs: Vec<PathBuf>,
    #[arg(long, value_name = "DIR", value_parser = dir_arg)]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Check only this experiment's targets (repeatable); default: all.
    #[arg(long = "experiment", value_name = "EXP")]
    pub experiments: Vec<String>,
    /// Override a scenario value in every experiment checked, as with
    /// `run` (to try a calibration before editing a file).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Simulated duration of each run, overriding the experiments' own.
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Run on this machine profile (`convoy machines` lists them): it
    /// replaces the scenario's `[machine]` table, overrides and all;
    /// `--set machine.FIELD=V` still applies after it.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Built-in experiment name or path to a scenario file.
    #[arg(value_name = "EXP|FILE")]
    pub experiment: String,
    /// The variant the others are compared with (default: the first).
    #[arg(long, value_name = "V")]
    pub base: Option<String>,
    /// Variants to compare with the base (repeatable; default: all others).
    #[arg(long = "with", value_name = "V")]
    pub with: Vec<String>,
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Run on this machine profile (`convoy machines` lists them): it
    /// replaces the scenario's `[machine]` table, overrides and all;
    /// `--set machine.FIELD=V` still applies after it.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Replications; the table adds the min/median/max over them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=MAX_REPS))]
    pub reps: u64,
    /// A counter to compare too, e.g. `kernfs_rwsem/read_contentions`
    /// (repeatable; default: the built-in experiment's own).
    #[arg(long = "counter", value_name = "NAME")]
    pub counters: Vec<String>,
    #[arg(long, value_name = "DIR", value_parser = dir_arg)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Built-in experiment name (see `convoy list`) or path to a scenario file.
    #[arg(value_name = "EXP|FILE")]
    pub experiment: String,
    /// Variant to run (repeatable); default: all, in the file's order.
    #[arg(long = "variant", value_name = "V")]
    pub variants: Vec<String>,
    /// Seed of the run (default: the scenario's, else 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Simulated duration, overriding the scenario's (e.g. `60s`).
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    /// Override a scalar of the scenario, e.g. `tasks.readers.count=32` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Run on this machine profile (`convoy machines` lists them): it
    /// replaces the scenario's `[machine]` table, overrides and all;
    /// `--set machine.FIELD=V` still applies after it.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Replications, each with its own derived random streams; results pool.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=MAX_REPS))]
    pub reps: u64,
    /// Output directory (default: out/EXP).
    #[arg(long, value_name = "DIR", value_parser = dir_arg)]
    pub out: Option<PathBuf>,
    /// Threads for independent runs (variants x replications); 0 = all cores.
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Progress on stderr: a bar on a terminal and a line every 10 s
    /// otherwise (auto), or as named.
    #[arg(long, value_enum, default_value_t = crate::progress::ProgressMode::Auto)]
    pub progress: crate::progress::ProgressMode,
    /// Stop a run after this many engine events.
    #[arg(long, value_name = "N")]
    pub max_events: Option<u64>,
    /// Refuse a simulated duration longer than this (default 366 days).
    #[arg(long, value_name = "D")]
    pub max_sim_time: Option<String>,
    /// Refuse a run whose whole process is estimated to need more memory
    /// than this at its peak, e.g. `16GiB` (default 8 GiB). Amounts are as in charge
    /// steps: a bare number counts 4 KiB pages.
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// Refuse a scenario with more tasks, kworkers and work items than
    /// this (default and most: 524288).
    #[arg(long, value_name = "N")]
    pub max_tasks: Option<u64>,
    /// Print the results as a measurement tool would (`bpftrace`,
    /// `perf-lock` or `lock_stat`) instead of the summary table, and write
    /// `<FORMAT>-<variant>.txt` per variant beside the CSV files.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Also write the first variant's first replication as Chrome trace
    /// event JSON (Perfetto, chrome://tracing): tasks, waits, holds, CPU
    /// time, wakeups.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The part of the run to trace, `A..B` in simulated time (e.g.
    /// `10s..12s`; either end may be left out).
    #[arg(long, value_name = "A..B", requires = "trace")]
    pub trace_window: Option<String>,
    /// Trace only these task groups or workqueues' kworkers (e.g.
    /// `walkers,kworker/cgroup_destroy`), with the wakeups between them.
    #[arg(
        long,
        value_name = "NAME[,NAME...]",
        value_delimiter = ',',
        requires = "trace"
    )]
    pub trace_tasks: Vec<String>,
    /// Trace the waits, holds, wake arrows and queue counters only of
    /// these locks (e.g. `kernfs_rwsem`; a family by its name).
    #[arg(
        long,
        value_name = "LOCK[,LOCK...]",
        value_delimiter = ',',
        requires = "trace"
    )]
    pub trace_locks: Vec<String>,
    /// Trace the slices only of these spans (e.g. `rmdir`).
    #[arg(
        long,
        value_name = "SPAN[,SPAN...]",
        value_delimiter = ',',
        requires = "trace"
    )]
    pub trace_spans: Vec<String>,
    /// Most events the trace keeps (default 1,000,000, about 100 MB of
    /// JSON, which a browser opens); past it the trace stops, with a
    /// warning.
    #[arg(long, value_name = "N", requires = "trace")]
    pub trace_max_events: Option<usize>,
    /// Histograms to print for the worst subjects.
    #[arg(long, default_value_t = 3)]
    pub histograms: usize,
    /// The thresholds whose exceedances the headline counts, exactly, per
    /// lock wait and span (default 1ms,10ms,100ms,1s).
    #[arg(long, value_name = "D[,D...]")]
    pub above: Option<String>,
    /// Also print the full table: holds, counters and every subject.
    #[arg(long)]
    pub verbose: bool,
    /// Explain the worst lock waits of the first variant's first
    /// replication as chains of waits down to a root cause; print them,
    /// write `blame.csv` and `blame-trace.json` (the worst wait).
    #[arg(long)]
    pub blame: bool,
    /// Chains to print and explain: the worst N waits.
    #[arg(long, value_name = "N", default_value_t = 5, requires = "blame")]
    pub blame_top: usize,
    /// Also explain every wait at least this long (into `blame.csv`, at
    /// most 10000), e.g. `100ms`.
    #[arg(long, value_name = "D", requires = "blame")]
    pub blame_threshold: Option<String>,
    /// Only waits of this subject, e.g. `kernfs_rwsem/read/oomd`.
    #[arg(long, value_name = "SUBJECT", requires = "blame")]
    pub blame_subject: Option<String>,
}

impl RunArgs {
    /// `convoy run EXP` with every flag at its default, for the commands
    /// that run an experiment on the user's behalf (the overview,
    /// `compare`); a test holds it to the parser's defaults.
    pub(super) fn defaults(experiment: String) -> RunArgs {
        RunArgs {
            experiment,
            variants: vec![],
            seed: None,
            duration: None,
            sets: vec![],
            machine: None,
            reps: 1,
            out: None,
            jobs: 0,
            progress: crate::progress::ProgressMode::Auto,
            max_events: None,
            max_sim_time: None,
            max_memory: None,
            max_tasks: None,
            format: None,
            trace: None,
            trace_window: None,
            trace_tasks: vec![],
            trace_locks: vec![],
            trace_spans: vec![],
            trace_max_events: None,
            histograms: 3,
            above: None,
            verbose: false,
            blame: false,
            blame_top: 5,
            blame_threshold: None,
            blame_subject: None,
        }
    }
}

#[derive(Args, Debug)]
pub struct BenchFlags {
    /// Number of reader processes R.
    #[arg(long, default_value_t = 64)]
    pub readers: u32,
    /// Number of writer processes W.
    #[arg(long, default_value_t = 4)]
    pub writers: u32,
    /// Simulated time T.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Lock policy of the rwsem.
    #[arg(long, default_value = "fifo")]
    pub policy: String,
    /// Run on this machine profile (`convoy machines` lists them): it
    /// replaces the scenario's `[machine]` table, overrides and all;
    /// `--set machine.FIELD=V` still applies after it.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Instead: N CPUs incrementing one cache line on each machine
    /// profile, increments per second and ns per increment by N.
    #[arg(long)]
    pub lines: bool,
    /// Instead: the engine's cost per event on 8, 64, 316, 1024 and 4096
    /// CPUs of `server-2s`, 8 tasks per CPU, and its ratio to 64 CPUs.
    #[arg(long, conflicts_with = "lines")]
    pub scale: bool,
    /// With --scale: the machine sizes (comma-separated CPU counts).
    #[arg(long, value_delimiter = ',', value_name = "N,N,..", requires = "scale")]
    pub cpus: Vec<u32>,
    /// With --scale: events each size runs, about.
    #[arg(long, value_name = "N", requires = "scale")]
    pub events: Option<u64>,
    /// With --scale: rounds over all sizes; each size's figure is the
    /// median of its rounds.
    #[arg(long, value_name = "N", requires = "scale", default_value_t = 3)]
    pub rounds: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_args_defaults_are_the_parsers_defaults() {
        let cli = Cli::try_parse_from(["convoy", "run", "x"]).expect("parses");
        let Some(Command::Run(parsed)) = cli.command else {
            panic!("not a run: {cli:?}");
        };
        assert_eq!(
            format!("{parsed:?}"),
            format!("{:?}", RunArgs::defaults("x".into()))
        );
    }
}
