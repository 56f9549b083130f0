//! The `convoy` command line, in three layers (after ripgrep): raw flags
//! (clap, no side effects) -> a validated plan -> running the plan.
//! Errors are returned, printed once by `main`, and exit with status 2.

use crate::bench::{self, BenchArgs};
use crate::builtin::{self, BUILTINS};
use crate::runner::{self, RunOptions, RunOutput};
use crate::scenario::ScenarioFile;
use crate::world::Limits;
use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use output::files::{write_replications, write_run_dir};
use output::terminal;
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
    Run(RunArgs),
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
}

/// How a sweep's (or a report's) points are run: threads and shard.
#[derive(Args, Debug)]
pub struct PointFlags {
    /// Threads, one point each; 0 = all cores.
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Run only the points whose index is I modulo the shard count
    /// (default: SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX).
    #[arg(long, value_name = "I")]
    pub shard_index: Option<usize>,
    /// Number of shards.
    #[arg(long, value_name = "N")]
    pub shard_count: Option<usize>,
}

impl PointFlags {
    /// Sweep options writing to `out`, the shard from the flags or the
    /// environment.
    fn options(&self, out: PathBuf) -> anyhow::Result<crate::sweep::SweepOptions> {
        let shard = crate::sweep::run::shard_of(self.shard_index, self.shard_count, &|v| {
            std::env::var(v).ok()
        })?;
        Ok(crate::sweep::SweepOptions {
            jobs: self.jobs,
            shard,
            out,
            progress: true,
        })
    }
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
    /// Replications, each with its own derived random streams; results pool.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=MAX_REPS))]
    pub reps: u64,
    /// Output directory (default: out/EXP).
    #[arg(long, value_name = "DIR", value_parser = dir_arg)]
    pub out: Option<PathBuf>,
    /// Threads for independent runs (variants x replications); 0 = all cores.
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Stop a run after this many engine events.
    #[arg(long, value_name = "N")]
    pub max_events: Option<u64>,
    /// Refuse a simulated duration longer than this (default 366 days).
    #[arg(long, value_name = "D")]
    pub max_sim_time: Option<String>,
    /// Refuse a run whose world is estimated to need more memory than
    /// this, e.g. `16GiB` (default 8 GiB). Amounts are as in charge
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
    /// Histograms to print for the worst subjects.
    #[arg(long, default_value_t = 3)]
    pub histograms: usize,
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
    fn defaults(experiment: String) -> RunArgs {
        RunArgs {
            experiment,
            variants: vec![],
            seed: None,
            duration: None,
            sets: vec![],
            reps: 1,
            out: None,
            jobs: 0,
            max_events: None,
            max_sim_time: None,
            max_memory: None,
            max_tasks: None,
            format: None,
            trace: None,
            trace_window: None,
            histograms: 3,
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
}

/// A validated `run`: everything checked before anything runs.
struct RunPlan {
    file: ScenarioFile,
    opts: RunOptions,
    out: Option<PathBuf>,
    histograms: usize,
    /// `--trace FILE` and its window.
    trace: Option<(PathBuf, sim::SimTime, sim::SimTime)>,
    format: Option<output::formats::Format>,
    /// `--blame`: the worst N, the threshold, the subject.
    blame: Option<(usize, Option<u64>, Option<String>)>,
}

/// `A..B` of durations, either end optional.
fn parse_window(w: &str) -> anyhow::Result<(sim::SimTime, sim::SimTime)> {
    let Some((a, b)) = w.split_once("..") else {
        bail!("--trace-window {w}: expected A..B, e.g. `10s..12s` or `..500ms`");
    };
    let end = |x: &str, default| -> anyhow::Result<sim::SimTime> {
        if x.trim().is_empty() {
            return Ok(default);
        }
        let d =
            sim::time::parse_duration(x.trim()).with_context(|| format!("--trace-window {w}"))?;
        Ok(sim::SimTime(d.0))
    };
    let (from, to) = (end(a, sim::SimTime::ZERO)?, end(b, sim::SimTime::MAX)?);
    if from >= to {
        bail!("--trace-window {w}: the window is empty");
    }
    Ok((from, to))
}

/// The variant `--trace` and `--blame` look at (the first one run), and
/// its compiled scenario.
fn first_variant(p: &RunPlan) -> anyhow::Result<(String, crate::program::Compiled)> {
    let variant = p.opts.variants.first().unwrap_or(&p.file.variants[0]);
    let mut prepared = runner::prepare(&p.file, std::slice::from_ref(variant))?;
    Ok((variant.clone(), prepared.remove(0).0))
}

/// Runs the plan's first variant, replication 0, again with a trace, and
/// writes it atomically.
/// Checks before a run that `path` can be written as a file (a file can
/// be created in the nearest directory of its path that exists), so that
/// the run does not end in an error after writing its results.
fn check_writable(path: &std::path::Path) -> anyhow::Result<()> {
    if path.file_name().is_none() || path.is_dir() {
        bail!("not a file name");
    }
    // The nearest directory that exists must take a new file; the ones
    // below it are made when the file is written, so a run that fails
    // leaves no directory behind.
    let dir = (path.parent().into_iter())
        .flat_map(Path::ancestors)
        .find(|d| !d.as_os_str().is_empty() && d.exists())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    Ok(())
}

fn write_trace(p: &RunPlan, seed: u64) -> anyhow::Result<()> {
    let Some((path, from, to)) = &p.trace else {
        return Ok(());
    };
    let (variant, c) = first_variant(p)?;
    let c = &c;
    let mut w = crate::world::World::new(c, seed, 0, p.opts.limits);
    w.enable_trace(*from, *to);
    w.run(&mut |_| {})?;
    let trace = w.take_trace().expect("tracing was enabled");
    let cut = trace.truncated_at().map(|at| (at, trace.len()));
    let title = format!("{} {variant} seed {seed}", c.experiment);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("--trace {}: not a file name", path.display()))?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    output::files::write_atomic(&dir, name, &trace.into_json(&title))?;
    println!("trace: {} ({variant}, replication 0)", path.display());
    if let Some((at, kept)) = cut {
        eprintln!(
            "convoy: warning: --trace: {kept} events is all a trace holds; {} stops at {:.6} s, before the window's end at {:.6} s: narrow --trace-window to see the rest",
            path.display(),
            at.0 as f64 / 1e9,
            to.0 as f64 / 1e9
        );
    }
    Ok(())
}

/// `--blame`: explains the worst waits of the plan's first variant,
/// replication 0, writes `blame.csv` and `blame-trace.json` into `dir`,
/// and returns the text to print. A wait still going on at the run's end,
/// longer than the worst explained, gets a note and the tasks that held
/// it up then (blame explains waits that ended).
fn write_blame(p: &RunPlan, seed: u64, dir: &std::path::Path) -> anyhow::Result<String> {
    use std::fmt::Write;
    let Some((top, threshold, subject)) = &p.blame else {
        return Ok(String::new());
    };
    let (variant, c) = first_variant(p)?;
    let c = &c;
    let stats = match subject {
        None => None,
        Some(s) => {
            let ids = wait_stats(c, s)?;
            Some(ids)
        }
    };
    let wanted = crate::blame::Wanted {
        top: *top,
        threshold: *threshold,
        stats,
    };
    let b = crate::blame::blame_run(c, (seed, 0), p.opts.limits, wanted, true)?;
    output::files::write_atomic(dir, "blame.csv", &crate::blame::csv(&b.chains))?;
    let mut s = String::new();
    let worst = b.chains.first().map_or(0, |c| c.wait.ns());
    let open_note = match &b.stuck {
        Some(st) if st.so_far > worst => format!(
            "blame explains waits that ended: {} had one still going on when the run \
             ended, {} so far (a longer --duration lets it end)\n\
             what held it up when the run ended ({}):\n{}",
            st.subject,
            output::terminal::human_ns(st.so_far),
            crate::world::stuck_secs(st.at),
            st.render()
        ),
        _ => String::new(),
    };
    if b.chains.is_empty() {
        let _ = writeln!(s, "\nblame ({variant}, replication 0): no lock waited for");
        s.push_str(&open_note);
        return Ok(s);
    }
    if let Some(tr) = b.trace {
        let title = format!("{} {variant} seed {seed}: worst wait", c.experiment);
        output::files::write_atomic(dir, "blame-trace.json", &tr.into_json(&title))?;
    }
    let above = match threshold {
        Some(th) => format!(
            "; {} over {}, in blame.csv with {} more explained",
            b.above_count,
            crate::blame::human(*th),
            b.chains.len() - b.top
        ),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "\nblame ({variant}, replication 0): the {} worst waits{above}",
        b.top
    );
    s.push_str(&crate::blame::render(&b.chains[..b.top]));
    s.push_str(&open_note);
    if b.truncated {
        let _ = writeln!(
            s,
            "(recording cut at {} stretches: later links read `not recorded`)",
            crate::world::recorder::MAX_SEGS
        );
    }
    let _ = writeln!(
        s,
        "blame: {}/blame.csv, {}/blame-trace.json (the worst wait)",
        dir.display(),
        dir.display()
    );
    Ok(s)
}

/// The ids of the wait statistics named `subject`, or an error listing
/// the wait subjects there are.
pub(crate) fn wait_stats(c: &crate::program::Compiled, subject: &str) -> anyhow::Result<Vec<u32>> {
    let waits: Vec<(u32, &str)> = c
        .stats
        .iter()
        .enumerate()
        .filter(|(_, s)| s.metric == output::Metric::Wait)
        .map(|(i, s)| (i as u32, s.subject.as_str()))
        .collect();
    let ids: Vec<u32> = waits
        .iter()
        .filter(|(_, s)| *s == subject)
        .map(|(i, _)| *i)
        .collect();
    if ids.is_empty() {
        let names: Vec<&str> = waits.iter().map(|(_, s)| *s).collect();
        bail!(
            "--blame-subject {subject}: no lock wait of that name; waits: {}",
            names.join(", ")
        );
    }
    Ok(ids)
}

fn plan_run(a: RunArgs) -> anyhow::Result<RunPlan> {
    let mut sets = a.sets.clone();
    if let Some(d) = &a.duration {
        sim::time::parse_duration(d).with_context(|| format!("--duration {d}"))?;
        sets.push(format!("scenario.duration={d}"));
    }
    // The seed goes into the resolved scenario too, as the duration does,
    // so that the manifest's scenario and hash are those of the run.
    if let Some(seed) = a.seed {
        sets.push(format!("scenario.seed={seed}"));
    }
    if a.reps == 0 {
        bail!("--reps 0: at least one replication is needed");
    }
    let src = builtin::source(&a.experiment, &sets)?;
    let file = ScenarioFile::new(src)?;
    for (i, v) in a.variants.iter().enumerate() {
        if !file.variants.contains(v) {
            bail!(
                "{}: no variant `{v}`; this scenario has: {}",
                file.source.name,
                file.variants.join(", ")
            );
        }
        if a.variants[..i].contains(v) {
            bail!("--variant {v}: given twice; each variant runs once");
        }
    }
    let format = match &a.format {
        None => None,
        Some(f) => Some(output::formats::Format::parse(f).with_context(|| {
            format!(
                "--format {f}: expected one of {}",
                output::formats::Format::NAMES.join(", ")
            )
        })?),
    };
    let trace = match &a.trace {
        None => None,
        Some(f) => {
            let (from, to) = match &a.trace_window {
                Some(w) => parse_window(w)?,
                None => (sim::SimTime::ZERO, sim::SimTime::MAX),
            };
            check_writable(f).with_context(|| format!("--trace {}", f.display()))?;
            Some((f.clone(), from, to))
        }
    };
    let blame = if a.blame {
        let th = match &a.blame_threshold {
            None => None,
            Some(d) => Some(
                sim::time::parse_duration(d)
                    .with_context(|| format!("--blame-threshold {d}"))?
                    .0,
            ),
        };
        if a.blame_top == 0 && th.is_none() {
            bail!("--blame-top 0: nothing to explain; give a count or --blame-threshold");
        }
        Some((a.blame_top, th, a.blame_subject.clone()))
    } else {
        None
    };
    let mut limits = Limits::default();
    if let Some(n) = a.max_events {
        limits.max_events = n;
    }
    if let Some(d) = &a.max_sim_time {
        let d = sim::time::parse_duration(d).with_context(|| format!("--max-sim-time {d}"))?;
        limits.max_sim_time = sim::SimTime(d.0);
    }
    if let Some(n) = a.max_tasks {
        limits.max_tasks = n.min(limits.max_tasks);
    }
    if let Some(m) = &a.max_memory {
        let pages = crate::scenario::steps::parse_pages(m)
            .map_err(|e| anyhow::anyhow!("--max-memory {m}: {e}"))?;
        limits.max_memory = pages.saturating_mul(crate::scenario::steps::PAGE_SIZE);
    }
    Ok(RunPlan {
        file,
        opts: RunOptions {
            variants: a.variants,
            seed: a.seed,
            reps: a.reps,
            jobs: a.jobs,
            limits,
            progress: true,
        },
        out: a.out,
        histograms: a.histograms,
        trace,
        format,
        blame,
    })
}

/// The files of a run directory, and with several replications each
/// one's summary (`replications.csv`).
fn write_results(dir: &std::path::Path, out: &RunOutput) -> anyhow::Result<()> {
    write_run_dir(dir, &out.result, &out.manifest)?;
    write_replications(dir, &out.result.experiment, &out.per_rep)?;
    Ok(())
}

fn execute_run(p: RunPlan) -> anyhow::Result<RunOutput> {
    let out = runner::run(&p.file, &p.opts)?;
    let dir = p
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&out.result.experiment));
    // The trace first: a trace that cannot be written leaves no results.
    write_trace(&p, out.manifest.seed)?;
    write_results(&dir, &out)?;
    let blame = write_blame(&p, out.manifest.seed, &dir)?;
    let plots = plots_note(&dir, &out.result);
    if let Some(f) = p.format {
        for v in &out.result.variants {
            let text = f.render(v);
            let name = format!("{}-{}.txt", f.name(), v.variant);
            output::files::write_atomic(&dir, &name, text.as_bytes())?;
            println!("==> {name} <==\n{text}");
        }
    } else {
        print!("{}", terminal::summary_table(&out.result));
        let spread = terminal::spread_table(&out.per_rep);
        if !spread.is_empty() {
            print!("\n{spread}");
        }
        for (variant, s) in terminal::worst_series(&out.result, p.histograms) {
            println!();
            print!("{}", terminal::log2_histogram(variant, s));
        }
    }
    let open = terminal::open_waits_note(&out.result);
    print!("{open}");
    if !open.is_empty() && p.blame.is_none() {
        println!(
            "(--blame, with --blame-subject to pick one, lists what held such a wait up \
             when the run ended)"
        );
    }
    println!("{plots}");
    print!("{blame}");
    println!(
        "\n{}: {} variant(s) x {} replication(s), {} events, {:.2}s wall; results in {}/",
        out.result.experiment,
        out.result.variants.len(),
        p.opts.reps,
        out.result.variants.iter().map(|v| v.events).sum::<u64>(),
        out.wall.as_secs_f64(),
        dir.display()
    );
    Ok(out)
}

/// Writes the plots of a run (PNG and SVG) and says where they are; a
/// failure to plot is a warning, the CSV results stand.
fn plots_note(dir: &std::path::Path, r: &output::ExperimentResult) -> String {
    let headline = builtin::find(&r.experiment).map_or(&[][..], |b| b.headline);
    match output::plots::write_plots(dir, r, headline, 4) {
        // Plots are of waits and spans that took time (a log time axis).
        Ok(files) if files.is_empty() => {
            "plots: none (no wait or span took longer than 0)".to_string()
        }
        Ok(files) => {
            // The kinds written: a run shorter than two windows has no
            // per-window plot.
            let kinds: Vec<String> = (output::plots::kinds_written(&files).iter())
                .map(|k| format!("*-{k}"))
                .collect();
            format!(
                "plots: {} files in {}/ ({}; .png and .svg)",
                files.len(),
                dir.display(),
                kinds.join(", ")
            )
        }
        Err(e) => {
            eprintln!("convoy: warning: no plots: {e}");
            String::new()
        }
    }
}

fn validate(a: &ValidateArgs) -> anyhow::Result<bool> {
    let mut sets = a.sets.clone();
    if let Some(d) = &a.duration {
        sim::time::parse_duration(d).with_context(|| format!("--duration {d}"))?;
        sets.push(format!("scenario.duration={d}"));
    }
    let opts = RunOptions {
        seed: a.seed,
        jobs: a.jobs,
        ..RunOptions::default()
    };
    let rows = crate::validate::validate(&a.experiments, &sets, &opts)?;
    if !a.sets.is_empty() {
        println!(
            "with --set {}: not the shipped calibration",
            a.sets.join(" --set ")
        );
    }
    print!("{}", crate::validate::format(&rows));
    Ok(crate::validate::all_met(&rows))
}

fn list() {
    let names = BUILTINS.iter().map(|b| b.name);
    let files = builtin::SWEEPS.iter().chain(builtin::REPORTS);
    let w = names
        .chain(files.clone().map(|s| s.0))
        .map(str::len)
        .max()
        .unwrap_or(0);
    for b in BUILTINS {
        println!("{:<w$}  {}", b.name, b.summary);
    }
    for (title, list) in [
        (
            "sweeps (convoy sweep NAME --out DIR; docs/sweeps.md)",
            builtin::SWEEPS,
        ),
        (
            "fleet reports (convoy check NAME; docs/sweeps.md)",
            builtin::REPORTS,
        ),
    ] {
        println!("\n{title}:");
        for (name, text) in list {
            let about = crate::sweep::parse(&crate::scenario::Source::new(*name, *text))
                .map(|s| s.description)
                .unwrap_or_default();
            println!("{name:<w$}  {about}");
        }
    }
}

/// The default job: every built-in experiment with its default settings,
/// files and plots written, and a one-screen overview of the headline
/// figures.
fn run_builtins() -> anyhow::Result<()> {
    let mut done = Vec::new();
    for b in BUILTINS {
        eprintln!("convoy: running {} ...", b.name);
        let plan = plan_run(RunArgs {
            duration: b.overview.map(String::from),
            histograms: 0,
            ..RunArgs::defaults(b.name.into())
        })?;
        let out = runner::run(&plan.file, &plan.opts)?;
        let dir = PathBuf::from("out").join(&out.result.experiment);
        write_results(&dir, &out)?;
        let table = terminal::compare_table(&out.result, &out.per_rep, 0, b.counters);
        output::files::write_atomic(&dir, "compare.txt", table.as_bytes())?;
        plots_note(&dir, &out.result);
        done.push((b, out));
    }
    let blocks: Vec<_> = done.iter().map(|(b, o)| (&o.result, b.headline)).collect();
    print!("{}", terminal::overview(&blocks));
    let short: Vec<String> = BUILTINS
        .iter()
        .filter_map(|b| b.overview.map(|d| format!("{} {d}", b.name)))
        .collect();
    println!(
        "\nx: ratio to the first variant. All subjects, holds, counters and\n\
         plots: out/<experiment>/. `convoy compare EXP` runs one in full\n\
         (shortened here: {}).\n\
         Measured cases: `convoy validate`; predictions: docs/predictions.md",
        short.join(", ")
    );
    Ok(())
}

fn compare(a: CompareArgs) -> anyhow::Result<()> {
    let src = builtin::source(&a.experiment, &[])?;
    let all = ScenarioFile::new(src)?.variants;
    let base = a.base.clone().unwrap_or_else(|| all[0].clone());
    let with: Vec<String> = if a.with.is_empty() {
        all.iter().filter(|v| **v != base).cloned().collect()
    } else {
        a.with.clone()
    };
    let variants: Vec<String> = std::iter::once(base).chain(with).collect();
    let (experiment, a_counters) = (a.experiment.clone(), a.counters);
    let plan = plan_run(RunArgs {
        variants,
        seed: a.seed,
        duration: a.duration,
        sets: a.sets,
        reps: a.reps,
        out: a.out,
        jobs: a.jobs,
        histograms: 0,
        ..RunArgs::defaults(a.experiment)
    })?;
    let out = runner::run(&plan.file, &plan.opts)?;
    let dir = plan
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&out.result.experiment));
    write_results(&dir, &out)?;
    let plots = plots_note(&dir, &out.result);
    let counters: Vec<&str> = if a_counters.is_empty() {
        builtin::find(&experiment)
            .map(|b| b.counters.to_vec())
            .unwrap_or_default()
    } else {
        a_counters.iter().map(String::as_str).collect()
    };
    for c in &counters {
        if out.result.variants[0].counter(c).is_none() {
            eprintln!("convoy: warning: no counter `{c}` in this run (summary.csv lists them)");
        }
    }
    let table = terminal::compare_table(&out.result, &out.per_rep, 0, &counters);
    output::files::write_atomic(&dir, "compare.txt", table.as_bytes())?;
    print!("{table}");
    println!("{plots}");
    println!(
        "{}: base `{}`, seed {}, {} replication(s); files in {}/",
        out.result.experiment,
        out.result.variants[0].variant,
        out.manifest.seed,
        plan.opts.reps,
        dir.display()
    );
    Ok(())
}

/// A validated sweep: the file read and expanded, the shard chosen.
struct SweepPlan {
    spec: crate::sweep::SweepSpec,
    opts: crate::sweep::SweepOptions,
}

fn plan_sweep(a: SweepArgs) -> anyhow::Result<SweepPlan> {
    let spec = crate::sweep::parse(&crate::sweep::sweep_source(&a.sweep)?)?;
    Ok(SweepPlan {
        spec,
        opts: a.points.options(a.out)?,
    })
}

fn execute_sweep(p: SweepPlan) -> anyhow::Result<()> {
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

fn check(a: CheckArgs) -> anyhow::Result<()> {
    let spec = crate::sweep::parse(&crate::sweep::spec::report_source(&a.report)?)?;
    let Some(c) = spec.check.clone() else {
        bail!(
            "{}: a report needs `[observation]` and `[exposure]` (docs/sweeps.md)",
            a.report
        );
    };
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from("out").join(format!("check-{}", spec.name)));
    let opts = a.points.options(out.clone())?;
    let r = crate::sweep::run_sweep(&spec, &opts)?;
    if r.missing > 0 {
        println!(
            "{} of {} runs are in other shards: `convoy merge DIR... --out DIR`, then \
             `convoy check REPORT --out DIR` judges them all",
            r.missing, r.header.points
        );
        return Ok(());
    }
    let points = crate::sweep::store::read_points(&out, &r.header)?;
    print!("{}", crate::sweep::check::format(&spec, &c, &points));
    print!("{}", check_blame(&spec, &c, &r.header, &points)?);
    println!("runs in {}/ (points.csv, plots)", out.display());
    Ok(())
}

/// The blame chain of a representative run of a report: the run closest
/// above the observation (else the worst), its worst wait of the observed
/// subject when that is a wait, else its worst wait.
fn check_blame(
    spec: &crate::sweep::SweepSpec,
    c: &crate::sweep::spec::CheckSpec,
    h: &output::sweep_table::SweepHeader,
    points: &std::collections::BTreeMap<usize, crate::sweep::store::Stored>,
) -> anyhow::Result<String> {
    let f = &spec.figures[c.figure];
    let count = f.stat.is_count();
    let Some((i, rep, value)) = crate::sweep::check::representative(c, points, count) else {
        return Ok(String::new());
    };
    let point = &spec.points[i];
    let file = crate::sweep::run::scenario_file(spec, point)?;
    let variant = h.variants.first().unwrap_or(&file.variants[0]).clone();
    let prepared = runner::prepare(&file, std::slice::from_ref(&variant))?;
    let compiled = &prepared[0].0;
    let stats = match f.metric {
        output::Metric::Wait => Some(wait_stats(compiled, &f.subject)?),
        _ => None,
    };
    let wanted = crate::blame::Wanted {
        top: 1,
        threshold: None,
        stats,
    };
    let b = crate::blame::blame_run(
        compiled,
        (point.seed, rep as u64),
        Limits::default(),
        wanted,
        false,
    )?;
    let what = if f.metric == output::Metric::Wait {
        "its worst wait of that subject"
    } else {
        "its worst lock wait"
    };
    let params: Vec<String> = spec
        .params
        .iter()
        .zip(&point.values)
        .map(|(p, v)| format!("{}={v}", p.name))
        .collect();
    let shown = if count {
        format!("count {value}")
    } else {
        output::terminal::human_ns(value)
    };
    let mut s = format!(
        "blame: a representative run (point {i}, replication {rep}: {}; {} {shown}), {what}:\n",
        params.join(", "),
        f.subject,
    );
    // The figure counts a wait the horizon cut off; blame explains waits
    // that ended. Say so when the representative value is such a wait.
    let longest_ended = b.chains.first().map_or(0, |ch| ch.wait.ns());
    if f.metric == output::Metric::Wait && !count && longest_ended < value {
        if b.chains.is_empty() {
            s.push_str("  (still going on when the run ended: no finished wait to explain)\n");
        } else {
            s.push_str("  (still going on when the run ended; below, its longest finished wait)\n");
        }
        if let Some(st) = &b.stuck {
            s.push_str(&format!(
                "  what held it up when the run ended ({}):\n",
                crate::world::stuck_secs(st.at)
            ));
            for l in st.render().lines() {
                s.push_str(&format!("  {l}\n"));
            }
        }
    }
    if b.chains.is_empty() && longest_ended >= value {
        s.push_str("  (no lock wait in it was longer than 0: nothing to explain)\n");
    }
    s.push_str(&crate::blame::render(&b.chains));
    Ok(s)
}

fn merge(a: MergeArgs) -> anyhow::Result<()> {
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

/// Runs a command; `Ok(false)` means it ran and found a failure to report
/// through the exit status (a target `validate` did not meet).
pub fn main_with(cli: Cli) -> anyhow::Result<bool> {
    let done = match cli.command {
        None => run_builtins(),
        Some(Command::List) => {
            list();
            Ok(())
        }
        Some(Command::Run(a)) => execute_run(plan_run(a)?).map(drop),
        Some(Command::Compare(a)) => compare(a),
        Some(Command::Bench(f)) => {
            sim::time::parse_duration(&f.duration)
                .with_context(|| format!("--duration {}", f.duration))?;
            let r = bench::run(&BenchArgs {
                readers: f.readers,
                writers: f.writers,
                duration: f.duration,
                seed: f.seed,
                policy: f.policy,
            })?;
            print!("{}", bench::format(&r));
            Ok(())
        }
        Some(Command::Validate(a)) => return validate(&a),
        Some(Command::Sweep(a)) => execute_sweep(plan_sweep(a)?),
        Some(Command::Check(a)) => check(a),
        Some(Command::Merge(a)) => merge(a),
    };
    done.map(|()| true)
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
