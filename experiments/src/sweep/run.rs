//! Running a sweep (or one shard of it): points in parallel, each point
//! single-threaded through the same runner as `convoy run`, each finished
//! point written at once, finished points skipped on a restart.

use super::spec::{Point, SweepSpec};
use super::store;
use crate::builtin;
use crate::runner::{self, RunOptions};
use crate::scenario::{ScenarioError, ScenarioFile};
use anyhow::{bail, Context};
use output::files::{write_atomic, write_replications, write_run_dir};
use output::sweep_table::{FigureSpec, ParamAxis, PointRecord, PointVariant, SweepHeader};
use output::{Metric, VariantResult};
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct SweepOptions {
    /// Threads, one point each; 0 means all cores.
    pub jobs: usize,
    /// `(index, count)`: run only the points whose index is `index` modulo
    /// `count`.
    pub shard: Option<(usize, usize)>,
    pub out: PathBuf,
    pub progress: crate::progress::ProgressMode,
    /// `Some(names)`: also write each point's run directory (the files of
    /// `convoy run`), `out/runs/NAME`, `names[index]` naming point
    /// `index`'s (`convoy band`). A sweep keeps only its figures.
    pub run_dirs: Option<Vec<String>>,
}

/// Where `run_dirs` go in the output directory.
pub const RUNS_DIR: &str = "runs";

#[derive(Debug)]
pub struct SweepReport {
    pub header: SweepHeader,
    /// Points of this shard (all points without sharding).
    pub in_shard: usize,
    pub skipped: usize,
    pub ran: usize,
    /// Points of the whole sweep not in the directory at the end.
    pub missing: usize,
    /// The plot files written from every point present, and what a report
    /// says when there are none.
    pub plots: Vec<PathBuf>,
    pub plot_note: String,
    pub wall: Duration,
}

/// `convoy` version and commit: shards of one sweep must come from one
/// program.
pub fn program_version() -> String {
    match runner::git_commit() {
        Some(c) => format!("{}+{}", env!("CARGO_PKG_VERSION"), &c[..c.len().min(12)]),
        None => env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// A point's `--set` arguments: the sweep's fixed ones, then its own.
fn point_sets(spec: &SweepSpec, p: &Point) -> Vec<String> {
    spec.sets.iter().chain(&p.sets).cloned().collect()
}

pub fn scenario_file(spec: &SweepSpec, p: &Point) -> Result<ScenarioFile, ScenarioError> {
    let mut src = builtin::source(&spec.scenario, &point_sets(spec, p))?;
    src.machine = spec.machine.clone();
    ScenarioFile::new(src)
}

/// A scenario error caused by a parameter's `--set` argument, told as an
/// error of the parameter's line in the sweep file.
fn in_sweep_file(spec: &SweepSpec, e: ScenarioError) -> anyhow::Error {
    let param = e.location.strip_prefix("--set ").and_then(|arg| {
        spec.params
            .iter()
            .enumerate()
            .find(|(_, p)| arg.starts_with(&format!("{}=", p.key)))
            .map(|(i, p)| (i, p, arg))
    });
    match param {
        Some((i, p, arg)) => anyhow::anyhow!(
            "{}: field `param[{i}].key`: {arg}: {} (in {})",
            p.location,
            e.message,
            spec.scenario
        ),
        None => e.into(),
    }
}

/// Compiles each parameter's every value (a grid's; a sample's lowest
/// and highest), the others as in the first point, so that a value the
/// scenario refuses stops the sweep before it runs, not at its point.
fn check_values(spec: &SweepSpec, first: &Point) -> anyhow::Result<()> {
    for (i, param) in spec.params.iter().enumerate() {
        let mut values: Vec<&str> = if param.values.is_empty() {
            let all = || spec.points.iter().map(|p| p.values[i].as_str());
            let by_num = |v: &&str| v.parse::<f64>().unwrap_or(f64::NAN);
            let lo = all().min_by(|a, b| by_num(a).total_cmp(&by_num(b)));
            let hi = all().max_by(|a, b| by_num(a).total_cmp(&by_num(b)));
            lo.into_iter().chain(hi).collect()
        } else {
            param.values.iter().map(String::as_str).collect()
        };
        values.dedup();
        for v in values {
            if v == first.values[i] {
                continue;
            }
            let mut p = first.clone();
            p.sets[i] = param.set(v);
            let file = scenario_file(spec, &p).map_err(|e| in_sweep_file(spec, e))?;
            runner::prepare(&file, &spec.variants).map_err(|e| in_sweep_file(spec, e))?;
        }
    }
    Ok(())
}

/// The header of a sweep: resolves and compiles the first point's every
/// variant (so a bad key, value or variant is reported before anything
/// runs) and hashes what decides the results.
pub fn header(spec: &SweepSpec) -> anyhow::Result<SweepHeader> {
    let first = spec.points.first().context("the sweep has no points")?;
    let file = scenario_file(spec, first).map_err(|e| in_sweep_file(spec, e))?;
    for v in &spec.variants {
        if !file.variants.contains(v) {
            bail!(
                "sweep `{}`: no variant `{v}` in {}; it has: {}",
                spec.name,
                spec.scenario,
                file.variants.join(", ")
            );
        }
    }
    let prepared = runner::prepare(&file, &spec.variants).map_err(|e| in_sweep_file(spec, e))?;
    check_values(spec, first)?;
    let variants: Vec<String> = prepared.iter().map(|(c, _)| c.variant.clone()).collect();
    let mut h = blake3::Hasher::new_derive_key("convoy 2026 sweep identity v1");
    let mut put = |s: &str| {
        h.update(&(s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    put(&spec.name);
    put(&spec.reps.to_string());
    for (_, l) in &prepared {
        put(&l.variant);
        put(&l.hash);
    }
    spec.sets.iter().for_each(|s| put(s));
    spec.points.iter().for_each(|p| put(&p.key));
    for f in &spec.figures {
        put(&format!(
            "{}|{}|{}|{}",
            f.name,
            f.metric.as_str(),
            f.subject,
            f.stat.as_str()
        ));
    }
    for p in &spec.params {
        put(&format!("{}|{}|{}", p.key, p.name, p.log));
    }
    Ok(SweepHeader {
        sweep: spec.name.clone(),
        scenario: spec.scenario.clone(),
        hash: h.finalize().to_hex().to_string(),
        version: program_version(),
        seed: spec.seed,
        reps: spec.reps,
        points: spec.points.len(),
        variants,
        params: spec
            .params
            .iter()
            .map(|p| ParamAxis {
                key: p.key.clone(),
                name: p.name.clone(),
                log: p.log,
                values: p.values.clone(),
            })
            .collect(),
        figures: spec
            .figures
            .iter()
            .map(|f| FigureSpec {
                name: f.name.clone(),
                metric: f.metric.as_str().into(),
                subject: f.subject.clone(),
                stat: f.stat.as_str().into(),
            })
            .collect(),
    })
}

/// A figure of one variant's result; `None` when it has no such subject.
/// A report's worst wait counts the waits still going on at the horizon:
/// a stall that outlasts the run reached at least that much (a fleet
/// report's 72 s wait in a 120 s run need not end in it).
fn figure(r: &VariantResult, f: &super::spec::Figure) -> Option<u64> {
    match (f.metric, f.stat) {
        (Metric::Counter, _) => r.counter(&f.subject),
        (Metric::Wait, output::Stat::Max) if f.open_waits => {
            r.worst_wait_with_open(&f.subject).map(|d| d.ns())
        }
        (m, _) => r.series(m, &f.subject).map(|s| f.stat.of(&s.hist).raw()),
    }
}

/// Runs one point: every variant x replication on this thread, figures
/// from the pooled and the per-replication results.
pub fn run_point(spec: &SweepSpec, h: &SweepHeader, p: &Point) -> anyhow::Result<PointRecord> {
    run_point_output(spec, h, p).map(|(r, _)| r)
}

/// [`run_point`], with the run's whole output beside its record.
fn run_point_output(
    spec: &SweepSpec,
    h: &SweepHeader,
    p: &Point,
) -> anyhow::Result<(PointRecord, runner::RunOutput)> {
    let file = scenario_file(spec, p)?;
    let out = runner::run(
        &file,
        &RunOptions {
            variants: h.variants.clone(),
            seed: Some(p.seed),
            reps: spec.reps,
            jobs: 1,
            ..RunOptions::default()
        },
    )?;
    for f in &spec.figures {
        if out.result.variants.iter().all(|v| figure(v, f).is_none()) {
            let v = &out.result.variants[0];
            let known: Vec<&str> = match f.metric {
                Metric::Counter => v.counters.iter().map(|c| c.subject.as_str()).collect(),
                m => v
                    .series
                    .iter()
                    .filter(|s| s.metric == m)
                    .map(|s| s.subject.as_str())
                    .collect(),
            };
            bail!(
                "figure `{}`: no {} subject `{}` in this scenario; there are: {}",
                f.name,
                f.metric.as_str(),
                f.subject,
                known.join(", ")
            );
        }
    }
    let variants = out
        .result
        .variants
        .iter()
        .zip(&out.per_rep)
        .map(|(v, reps)| PointVariant {
            variant: v.variant.clone(),
            pooled: spec.figures.iter().map(|f| figure(v, f)).collect(),
            reps: reps
                .iter()
                .map(|r| spec.figures.iter().map(|f| figure(r, f)).collect())
                .collect(),
        })
        .collect();
    let record = PointRecord {
        hash: h.hash.clone(),
        version: h.version.clone(),
        seed: h.seed,
        index: p.index,
        point_seed: p.seed,
        values: p.values.clone(),
        sets: point_sets(spec, p),
        variants,
    };
    Ok((record, out))
}

/// Which shard to run: `--shard-index`, else `SLURM_ARRAY_TASK_ID`, else
/// `JOB_COMPLETION_INDEX` (a Kubernetes Indexed Job), with `--shard-count`.
pub fn shard_of(
    index: Option<usize>,
    count: Option<usize>,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Option<(usize, usize)>> {
    let Some(count) = count else {
        if index.is_some() {
            bail!("--shard-index needs --shard-count");
        }
        return Ok(None);
    };
    if count == 0 {
        bail!("--shard-count 0: at least one shard is needed");
    }
    let index = match index {
        Some(i) => i,
        None => {
            let (var, text) = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"]
                .iter()
                .find_map(|v| env(v).map(|t| (*v, t)))
                .context(
                    "--shard-count needs --shard-index, or SLURM_ARRAY_TASK_ID or \
                     JOB_COMPLETION_INDEX in the environment",
                )?;
            text.trim()
                .parse()
                .with_context(|| format!("{var}={text}: expected a shard index"))?
        }
    };
    if index >= count {
        bail!("shard index {index} is not below the shard count {count} (indices start at 0)");
    }
    Ok(Some((index, count)))
}

/// Runs the sweep's points of this shard that `opts.out` does not hold yet,
/// then writes `points.csv` and plots from every point there.
pub fn run_sweep(spec: &SweepSpec, opts: &SweepOptions) -> anyhow::Result<SweepReport> {
    let start = Instant::now();
    let h = header(spec)?;
    store::init(&opts.out, &h)?;
    let done = store::read_points(&opts.out, &h)?;
    for (i, s) in &done {
        if s.record.sets.get(spec.sets.len()..) != Some(&spec.points[*i].sets[..]) {
            bail!(
                "{}: holds another point than point {i} of this sweep",
                s.path.display()
            );
        }
    }
    let mine: Vec<&Point> = spec
        .points
        .iter()
        .filter(|p| opts.shard.is_none_or(|(i, n)| p.index % n == i))
        .collect();
    let todo: Vec<&Point> = mine
        .iter()
        .copied()
        .filter(|p| !done.contains_key(&p.index))
        .collect();
    let skipped = mine.len() - todo.len();
    let shard = opts
        .shard
        .map(|(i, n)| format!(", shard {i} of {n}"))
        .unwrap_or_default();
    eprintln!(
        "convoy: sweep {}: {} points{shard}; skipped {skipped} finished points, running {}",
        spec.name,
        spec.points.len(),
        todo.len()
    );
    let bar = std::sync::Mutex::new(crate::progress::Progress::new(
        opts.progress,
        format!("sweep {}", spec.name),
        crate::progress::Unit::Points,
        todo.len() as u64,
        "{spinner} points {pos}/{len} [{bar:30}] {per_sec} elapsed {elapsed} eta {eta}",
    ));
    let finished = std::sync::atomic::AtomicU64::new(0);
    // No more threads than points to run; 0: all cores.
    let threads = match opts.jobs {
        0 => 0,
        n => n.min(todo.len()).max(1),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("cannot start worker threads")?;
    let points_dir = opts.out.join(store::POINTS_DIR);
    pool.install(|| {
        todo.par_iter().try_for_each(|p| -> anyhow::Result<()> {
            let (r, out) = run_point_output(spec, &h, p)
                .with_context(|| format!("point {} ({})", p.index, p.key.replace('\n', ", ")))?;
            // The run's directory before the point's file, all or
            // nothing: a point on disk is one whose directory is whole.
            if let Some(names) = &opts.run_dirs {
                let dir = opts.out.join(RUNS_DIR).join(&names[p.index]);
                runner::write_all_or_nothing(&dir, |tmp| {
                    write_run_dir(tmp, &out.result, &out.manifest)?;
                    write_replications(tmp, &out.result.experiment, &out.per_rep)?;
                    Ok(())
                })?;
            }
            let name = store::point_file_name(p.index, &p.key);
            write_atomic(&points_dir, &name, &store::point_bytes(&r))?;
            let n = finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            bar.lock().unwrap_or_else(|e| e.into_inner()).set(n);
            Ok(())
        })
    })?;
    bar.lock().unwrap_or_else(|e| e.into_inner()).finish();
    let all = store::read_points(&opts.out, &h)?;
    let finished = store::finish(&opts.out, &h, &all)?;
    Ok(SweepReport {
        in_shard: mine.len(),
        skipped,
        ran: todo.len(),
        missing: finished.missing,
        plots: finished.plots,
        plot_note: finished.plot_note,
        header: h,
        wall: start.elapsed(),
    })
}
