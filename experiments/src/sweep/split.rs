//! `convoy check --splitting`: the chance that one run of a fleet report
//! reaches the observed worst value, estimated by adaptive multilevel
//! splitting when it is too rare for runs one by one (docs/sweeps.md,
//! "Rare stalls: multilevel splitting").
//!
//! A run's level is its worst value so far (`World::level`). Each stage
//! starts N copies, runs each until its level reaches the observation or
//! the run ends, and sets the next level where a fraction `p0` of the
//! copies got to; the copies that got there are run again, exactly, to
//! the instant they cross it, and the next stage's N copies are drawn
//! from those snapshots, each re-keyed (`World::rekey`) so that they go
//! on differently. The estimate is the product of the stages' fractions.
//! Independent replicas (other seeds) give the mean and a t-interval.
//! Copies run in parallel and are merged in their index order: the
//! estimate does not depend on the thread count.

use crate::program::{Compiled, StatId};
use crate::world::{Limits, World};
use anyhow::Context;
use rayon::prelude::*;
use sim::rng::derive_u64;
use sim::{Dur, SimTime};

/// A run that splitting can copy and drive: the world of one report
/// point, or a toy in tests.
pub trait Path: Clone + Send + Sync {
    /// Runs on until the level reaches `target` (stopping at the instant
    /// it does) or the run ends.
    fn advance(&mut self, target: u64) -> anyhow::Result<Step>;
    /// From now on, draws other numbers than a copy with another `key`.
    fn rekey(&mut self, key: u64);
}

/// What an [`Path::advance`] came to and cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The level where it stopped (at or above the target, or where the
    /// run ended below it).
    pub level: u64,
    /// Simulated nanoseconds and events it ran.
    pub sim_ns: u64,
    pub events: u64,
}

/// How to split.
#[derive(Clone, Copy, Debug)]
pub struct SplitOptions {
    /// Copies per stage (N).
    pub copies: usize,
    /// Independent estimates (R), for the confidence interval.
    pub replicas: usize,
    /// The fraction of copies that reach each intermediate level.
    pub p0: f64,
    /// Threads (0: all cores).
    pub jobs: usize,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions {
            copies: 100,
            replicas: 10,
            p0: 0.2,
            jobs: 0,
        }
    }
}

/// One stage of one replica: the level set, and how many of its copies
/// reached it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub level: u64,
    pub copies: usize,
    pub reached: usize,
}

/// One replica's estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct Replica {
    pub seed: u64,
    pub stages: Vec<Stage>,
    /// The product of the stages' fractions (0 when a stage had none).
    pub p: f64,
    /// The highest level any copy reached.
    pub best: u64,
    pub sim_ns: u128,
    pub events: u64,
}

/// R replicas pooled: the mean, its standard error and 95% t-interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub replicas: Vec<Replica>,
    pub p: f64,
    pub se: f64,
    pub lo: f64,
    pub hi: f64,
    /// Standard error over the mean (infinite when the mean is 0).
    pub rel_err: f64,
    pub sim_ns: u128,
    pub events: u64,
}

/// One replica of adaptive multilevel splitting from `starts` (the N
/// copies of stage 0, already distinct) toward `target`.
pub fn replica<P: Path>(
    starts: Vec<P>,
    target: u64,
    o: &SplitOptions,
    seed: u64,
    pool: &rayon::ThreadPool,
) -> anyhow::Result<Replica> {
    let n = starts.len();
    let mut r = Replica {
        seed,
        stages: Vec::new(),
        p: 1.0,
        best: 0,
        sim_ns: 0,
        events: 0,
    };
    let mut starts = starts;
    // Each stage's level is above the last: the stages end.
    let mut k = 0u64;
    loop {
        let ends: Vec<Step> = pool.install(|| {
            (starts.par_iter())
                .map(|s| s.clone().advance(target))
                .collect::<anyhow::Result<_>>()
        })?;
        for e in &ends {
            r.sim_ns += u128::from(e.sim_ns);
            r.events += e.events;
            r.best = r.best.max(e.level);
        }
        let Some(level) = next_level(&ends, target, o.p0) else {
            r.stages.push(Stage {
                level: target,
                copies: n,
                reached: 0,
            });
            r.p = 0.0;
            return Ok(r);
        };
        let reached: Vec<usize> = (0..n).filter(|&i| ends[i].level >= level).collect();
        r.stages.push(Stage {
            level,
            copies: n,
            reached: reached.len(),
        });
        r.p *= reached.len() as f64 / n as f64;
        if level >= target {
            return Ok(r);
        }
        // Run the copies that reached the level again, each exactly as
        // before, to the instant they cross it: the snapshots the next
        // stage starts from.
        let snaps: Vec<(P, Step)> = pool.install(|| {
            (reached.par_iter())
                .map(|&i| {
                    let mut s = starts[i].clone();
                    s.advance(level).map(|st| (s, st))
                })
                .collect::<anyhow::Result<_>>()
        })?;
        for (_, st) in &snaps {
            r.sim_ns += u128::from(st.sim_ns);
            r.events += st.events;
        }
        let stage_key = derive_u64(seed, "split stage", k);
        starts = (0..n)
            .map(|j| {
                let mut c = snaps[j * snaps.len() / n].0.clone();
                c.rekey(derive_u64(stage_key, "split copy", j as u64));
                c
            })
            .collect();
        k += 1;
    }
}

/// The next level: copies at or above it go on. It is one nanosecond
/// above the level of the copy ranked just below the best fraction `p0`
/// (so that no copy that sets the level goes on: one whose path ends
/// exactly there could go no further, and is no sample of the paths that
/// cross it), one above the next lower level when the best ones tie, and
/// the target when that is reached. `None` when all copies ended level
/// (none got further than another).
pub fn next_level(ends: &[Step], target: u64, p0: f64) -> Option<u64> {
    let mut levels: Vec<u64> = ends.iter().map(|e| e.level).collect();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    let k = ((p0 * levels.len() as f64).ceil() as usize).clamp(1, levels.len() - 1);
    let mut below = levels[k];
    if below.saturating_add(1) >= target {
        return Some(target);
    }
    if below == levels[0] {
        below = *levels.iter().find(|&&l| l < levels[0])?;
    }
    Some((below + 1).min(target))
}

/// Pools replicas: their mean and a 95% t-interval from their spread.
pub fn pool_replicas(replicas: Vec<Replica>) -> Estimate {
    let r = replicas.len() as f64;
    let ps: Vec<f64> = replicas.iter().map(|x| x.p).collect();
    let p = ps.iter().sum::<f64>() / r;
    let var = if replicas.len() > 1 {
        ps.iter().map(|x| (x - p).powi(2)).sum::<f64>() / (r - 1.0)
    } else {
        f64::INFINITY
    };
    let se = (var / r).sqrt();
    let half = t975(replicas.len().saturating_sub(1)) * se;
    Estimate {
        p,
        se,
        lo: (p - half).max(0.0),
        hi: p + half,
        rel_err: if p > 0.0 { se / p } else { f64::INFINITY },
        sim_ns: replicas.iter().map(|x| x.sim_ns).sum(),
        events: replicas.iter().map(|x| x.events).sum(),
        replicas,
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom
/// (infinite with none: one replica gives no spread).
pub fn t975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        df => distrs::StudentsT::ppf(0.975, df as f64),
    }
}

/// Runs of length `run_ns` that brute force needs for relative error
/// `rel_err` on a chance `p`: (1 - p) / (p x RE^2).
pub fn brute_force_runs(p: f64, rel_err: f64) -> f64 {
    (1.0 - p) / (p * rel_err * rel_err)
}

/// One run of a report point, part way: its world, the instant it has
/// been run to, and the statistics whose worst value is its level.
#[derive(Clone)]
pub struct WorldPath<'c> {
    world: World<'c>,
    at: SimTime,
    stats: std::sync::Arc<[StatId]>,
    /// Whether lock waits still going on count (a wait figure).
    open: bool,
}

impl<'c> WorldPath<'c> {
    /// A run of `c` with its own seed, not started, whose level is the
    /// worst `metric` of `subject`.
    pub fn new(
        c: &'c Compiled,
        seed: u64,
        metric: output::Metric,
        subject: &str,
    ) -> anyhow::Result<Self> {
        let world = World::new(c, seed, 0, Limits::default());
        let stats = world.stats_of(metric, subject);
        anyhow::ensure!(
            !stats.is_empty(),
            "no {} subject `{subject}` in this scenario",
            metric.as_str()
        );
        Ok(WorldPath {
            world,
            at: SimTime::ZERO,
            stats: stats.into(),
            open: metric == output::Metric::Wait,
        })
    }
}

impl Path for WorldPath<'_> {
    /// Runs in steps: to the instant the first lock wait going on would
    /// reach the target, or as far as no new wait could (the target's
    /// length on); holds and spans count when they end, so for them a
    /// step is an eighth of the target, and the copy stops at the end
    /// of the step in which one reached it.
    fn advance(&mut self, target: u64) -> anyhow::Result<Step> {
        let (t0, e0) = (self.at, self.world.events());
        let horizon = self.world.horizon();
        let target_d = Dur(target);
        let step = if self.open {
            target_d
        } else {
            Dur((target / 8).max(1))
        };
        loop {
            let level = self.world.level(&self.stats, self.open, self.at);
            if level >= target_d || self.at >= horizon {
                if self.at >= horizon {
                    // The run's end, as a whole run ends (a deadlock or a
                    // cycle is an error, as in the runs one by one).
                    self.world.run(&mut |_| {})?;
                }
                return Ok(Step {
                    level: level.ns(),
                    sim_ns: self.at.since(t0).ns(),
                    events: self.world.events() - e0,
                });
            }
            let mut next = self.at + step.max(Dur(1));
            if self.open {
                if let Some(c) = self.world.next_crossing(&self.stats, target_d) {
                    next = next.min(c);
                }
            }
            let next = next.min(horizon).max(self.at + Dur(1));
            self.world.run_until(next, &mut |_| {})?;
            self.at = next;
        }
    }

    fn rekey(&mut self, key: u64) {
        self.world.rekey_at(key, self.at);
    }
}

/// The report's splitting estimate: `replicas` independent replicas, each
/// of `copies` runs at points drawn uniformly from `compiled` (one
/// compiled program per point, the points' parameter values taken as
/// equally likely, as the runs one by one take them).
pub fn estimate(
    compiled: &[Compiled],
    (metric, subject): (output::Metric, &str),
    target: u64,
    seed: u64,
    o: &SplitOptions,
) -> anyhow::Result<Estimate> {
    anyhow::ensure!(!compiled.is_empty(), "no point to run");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(o.jobs)
        .build()
        .context("cannot start worker threads")?;
    let mut replicas = Vec::new();
    for r in 0..o.replicas {
        let rseed = derive_u64(seed, "split replica", r as u64);
        let starts = (0..o.copies)
            .map(|i| {
                let point = derive_u64(rseed, "split point", i as u64) % compiled.len() as u64;
                let s = derive_u64(rseed, "split start", i as u64);
                WorldPath::new(&compiled[point as usize], s, metric, subject)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        replicas.push(replica(starts, target, o, rseed, &pool)?);
    }
    Ok(pool_replicas(replicas))
}

/// Each point of `spec` compiled, in its first variant of `h`'s (the
/// variant a report judges), for [`estimate`].
pub fn compile_points(
    spec: &super::SweepSpec,
    h: &output::sweep_table::SweepHeader,
) -> anyhow::Result<Vec<Compiled>> {
    let mut compiled = Vec::new();
    for point in &spec.points {
        let file = super::run::scenario_file(spec, point)?;
        let variant = h.variants.first().unwrap_or(&file.variants[0]).clone();
        let mut prepared = crate::runner::prepare(&file, std::slice::from_ref(&variant))?;
        compiled.push(prepared.remove(0).0);
    }
    Ok(compiled)
}

/// Seconds in a host-day: a rate per host-day is the chance per run
/// times the runs in a day.
const DAY_NS: f64 = 86_400e9;

/// The report's splitting estimate as text: the chance per run, the rate
/// per host-day, their 95% intervals, the relative error, the effort and
/// what runs one by one would need for the same relative error, and the
/// wall time if given (for the terminal only: files replay
/// byte-identically).
pub fn format(
    e: &Estimate,
    o: &SplitOptions,
    observed: &str,
    run: Dur,
    wall: Option<f64>,
) -> String {
    let t = run.as_nanos_f64();
    let per_day = DAY_NS / t;
    let mut s = format!(
        "splitting: {} replica(s) x {} copies per stage, p0 {}; a run is {} (at most one stall per run assumed)\n",
        o.replicas,
        o.copies,
        o.p0,
        output::terminal::human(run)
    );
    let sim_s = e.sim_ns as f64 / 1e9;
    if e.p > 0.0 {
        s.push_str(&format!(
            "  chance per run of {observed} or more: {:.3e} (95% CI {:.3e}-{:.3e}), relative error {:.2}\n",
            e.p, e.lo, e.hi, e.rel_err
        ));
        s.push_str(&format!(
            "  rate per host-day: {:.3e} (95% CI {:.3e}-{:.3e})\n",
            e.p * per_day,
            e.lo * per_day,
            e.hi * per_day
        ));
    } else {
        let best = e.replicas.iter().map(|r| r.best).max().unwrap_or(0);
        s.push_str(&format!(
            "  no copy reached {observed}: no estimate (the closest any copy came: {})\n",
            output::terminal::human(Dur(best))
        ));
    }
    let wall = wall.map(|w| format!(", {w:.1} s wall")).unwrap_or_default();
    s.push_str(&format!(
        "  effort: {sim_s:.0} simulated s, {} events{wall}\n",
        e.events
    ));
    let reached = e.replicas.iter().filter(|r| r.p > 0.0).count();
    if e.p > 0.0 && reached < 2 {
        s.push_str(&format!(
            "  only {reached} of {} replicas reached it: the estimate says the stall is that rare or rarer, not how rare; more replicas (--replicas) or copies (--copies) narrow it\n",
            e.replicas.len()
        ));
    } else if e.p > 0.0 && e.rel_err.is_finite() && e.rel_err > 0.0 {
        let n = brute_force_runs(e.p, e.rel_err);
        let bf_s = n * t / 1e9;
        s.push_str(&format!(
            "  runs one by one for the same relative error: {n:.3e} runs = {bf_s:.3e} simulated s ({:.3} times the effort of splitting)\n",
            bf_s / sim_s.max(1e-9)
        ));
    }
    s
}

/// `splitting.csv`: one row per replica and stage.
pub fn stages_csv(e: &Estimate) -> String {
    let mut s = String::from("replica,seed,stage,level_ns,copies,reached,p_replica\n");
    for (i, r) in e.replicas.iter().enumerate() {
        for (k, st) in r.stages.iter().enumerate() {
            s.push_str(&format!(
                "{i},{},{k},{},{},{},{:e}\n",
                r.seed, st.level, st.copies, st.reached, r.p
            ));
        }
    }
    s
}

/// `splitting-estimate.csv`: the pooled estimate, one row.
pub fn estimate_csv(e: &Estimate, o: &SplitOptions, observed_ns: u64, run: Dur) -> String {
    let t = run.as_nanos_f64();
    let per_day = DAY_NS / t;
    let (bf_runs, bf_s) = if e.p > 0.0 && e.rel_err.is_finite() && e.rel_err > 0.0 {
        let n = brute_force_runs(e.p, e.rel_err);
        (format!("{n:e}"), format!("{:e}", n * t / 1e9))
    } else {
        (String::new(), String::new())
    };
    let best = e.replicas.iter().map(|r| r.best).max().unwrap_or(0);
    format!(
        "observed_ns,run_ns,replicas,copies,p0,p_run,p_run_lo,p_run_hi,rel_err,per_host_day,per_host_day_lo,per_host_day_hi,best_ns,sim_s,events,brute_force_runs,brute_force_sim_s\n\
         {observed_ns},{},{},{},{},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{best},{:e},{},{bf_runs},{bf_s}\n",
        run.0,
        o.replicas,
        o.copies,
        o.p0,
        e.p,
        e.lo,
        e.hi,
        e.rel_err,
        e.p * per_day,
        e.lo * per_day,
        e.hi * per_day,
        e.sim_ns as f64 / 1e9,
        e.events,
    )
}

#[cfg(test)]
mod tests {
    /// Against the printed table (e.g. NIST/SEMATECH e-Handbook, 1.3.6.7.2):
    /// 12.706 at 1, 2.042 at 30, 2.000 at 60, 1.984 at 100; the normal's
    /// 1.96, which this used beyond 30, is 2% short at 60.
    #[test]
    fn t975_matches_the_table_beyond_thirty_too() {
        for (df, t) in [
            (1, 12.706),
            (2, 4.303),
            (10, 2.228),
            (30, 2.042),
            (60, 2.000),
            (100, 1.984),
        ] {
            assert!(
                (super::t975(df) - t).abs() < 0.0015,
                "df {df}: {}",
                super::t975(df)
            );
        }
        assert!(super::t975(0).is_infinite());
    }

    use super::*;

    /// A symmetric random walk of `len` steps from 0; its level is the
    /// highest point so far. The chance that it reaches `m` is known
    /// exactly: P(S_len = m) + 2 P(S_len > m) (the reflection principle).
    #[derive(Clone)]
    struct Walk {
        rng: sim::Stream,
        pos: i64,
        max: i64,
        step: u64,
        len: u64,
    }

    impl Path for Walk {
        fn advance(&mut self, target: u64) -> anyhow::Result<Step> {
            let start = self.step;
            while (self.max as u64) < target && self.step < self.len {
                self.pos += if sim::rng::unit(&mut self.rng) < 0.5 {
                    1
                } else {
                    -1
                };
                self.max = self.max.max(self.pos);
                self.step += 1;
            }
            Ok(Step {
                level: self.max as u64,
                sim_ns: self.step - start,
                events: self.step - start,
            })
        }
        fn rekey(&mut self, key: u64) {
            self.rng = sim::rng::rekey(&self.rng, key);
        }
    }

    /// P(max of a `len`-step walk >= m), exactly.
    fn exact(len: u64, m: i64) -> f64 {
        // S_len = 2k - len for k up-steps, with chance C(len, k) / 2^len.
        let mut ln_c = vec![0.0f64; len as usize + 1];
        for k in 1..=len as usize {
            ln_c[k] = ln_c[k - 1] + ((len as usize - k + 1) as f64 / k as f64).ln();
        }
        let pr = |k: usize| (ln_c[k] - len as f64 * std::f64::consts::LN_2).exp();
        (0..=len as usize)
            .map(|k| {
                let s = 2 * k as i64 - len as i64;
                if s == m {
                    pr(k)
                } else if s > m {
                    2.0 * pr(k)
                } else {
                    0.0
                }
            })
            .sum()
    }

    fn walks(seed: u64, n: usize, len: u64) -> Vec<Walk> {
        (0..n)
            .map(|i| Walk {
                rng: sim::rng::stream(seed, 0, "walk", i as u64),
                pos: 0,
                max: 0,
                step: 0,
                len,
            })
            .collect()
    }

    fn run(o: &SplitOptions, len: u64, m: u64) -> Estimate {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(o.jobs)
            .build()
            .unwrap();
        let reps = (0..o.replicas)
            .map(|r| {
                let seed = derive_u64(1, "walk replica", r as u64);
                replica(walks(seed, o.copies, len), m, o, seed, &pool).unwrap()
            })
            .collect();
        pool_replicas(reps)
    }

    #[test]
    fn splitting_finds_a_random_walks_known_tail_chance() {
        // P(max of 400 steps >= 60) is about 2.7e-3.
        let (len, m) = (400, 60);
        let truth = exact(len, m as i64);
        assert!((2e-3..5e-3).contains(&truth), "{truth}");
        let o = SplitOptions {
            copies: 100,
            replicas: 200,
            p0: 0.2,
            jobs: 2,
        };
        // Replicas' estimates are skewed (most a little low, a few high):
        // the interval holds the truth with many of them.
        let e = run(&o, len, m);
        assert!(e.lo <= truth && truth <= e.hi, "{truth} not in {e:?}");
        assert!(e.rel_err < 0.1, "{}", e.rel_err);
        // Several stages, each about p0 but the last.
        assert!(e.replicas.iter().all(|r| r.stages.len() >= 3));
    }

    #[test]
    fn the_estimate_does_not_depend_on_the_thread_count() {
        let o = SplitOptions {
            copies: 50,
            replicas: 3,
            p0: 0.2,
            jobs: 1,
        };
        let one = run(&o, 200, 40);
        let four = run(&SplitOptions { jobs: 4, ..o }, 200, 40);
        assert_eq!(one, four);
        assert!(one.p > 0.0);
    }

    #[test]
    fn levels_rise_past_ties_and_stop_at_the_target() {
        let at = |l: &[u64]| -> Vec<Step> {
            l.iter()
                .map(|&level| Step {
                    level,
                    sim_ns: 0,
                    events: 0,
                })
                .collect()
        };
        // The top fifth of ten: above the third highest.
        assert_eq!(
            next_level(&at(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), 100, 0.2),
            Some(9)
        );
        // Enough copies at the target: the target.
        assert_eq!(next_level(&at(&[50, 100, 100]), 100, 0.2), Some(100));
        // The best ones tie: just above the next lower level.
        assert_eq!(next_level(&at(&[5, 5, 7, 7, 7, 6]), 100, 0.2), Some(7));
        // All alike: none can be told to go on.
        assert_eq!(next_level(&at(&[5, 5, 5]), 100, 0.2), None);
    }

    #[test]
    fn one_replica_that_reached_the_stall_gives_no_effort_ratio() {
        let rep = |p: f64| Replica {
            seed: 0,
            stages: vec![],
            p,
            best: 0,
            sim_ns: 1_000_000_000,
            events: 2,
        };
        let o = SplitOptions {
            copies: 30,
            replicas: 4,
            p0: 0.2,
            jobs: 1,
        };
        let run = Dur(1_200_000_000_000);
        let few = format(
            &pool_replicas(vec![rep(1e-19), rep(0.0), rep(0.0), rep(0.0)]),
            &o,
            "900s",
            run,
            None,
        );
        assert!(few.contains("only 1 of 4 replicas reached it"), "{few}");
        assert!(!few.contains("times the effort"), "{few}");
        let two = format(
            &pool_replicas(vec![rep(1e-3), rep(2e-3), rep(0.0), rep(0.0)]),
            &o,
            "900s",
            run,
            None,
        );
        assert!(two.contains("times the effort of splitting"), "{two}");
    }

    #[test]
    fn pooled_replicas_give_a_t_interval() {
        let rep = |p: f64| Replica {
            seed: 0,
            stages: vec![],
            p,
            best: 0,
            sim_ns: 1,
            events: 2,
        };
        let e = pool_replicas(vec![rep(1e-3), rep(2e-3), rep(3e-3)]);
        assert!((e.p - 2e-3).abs() < 1e-15);
        // sd 1e-3, se 1e-3 / sqrt 3, t(2) = 4.303 (4.30265).
        let se = 1e-3 / 3f64.sqrt();
        assert!((e.se - se).abs() < 1e-12);
        assert!((e.hi - (2e-3 + 4.30265 * se)).abs() < 1e-5 * se);
        assert_eq!(e.lo, 0.0);
        assert!((e.rel_err - se / 2e-3).abs() < 1e-12);
        assert_eq!((e.sim_ns, e.events), (3, 6));
        assert!((brute_force_runs(0.01, 0.1) - 9900.0).abs() < 1e-6);
    }
}
