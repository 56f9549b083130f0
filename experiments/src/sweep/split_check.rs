//! `convoy validate --experiment splitting`: multilevel splitting held
//! against runs one by one, on a report whose stall is rare (about one
//! run in 700) but not so rare that runs one by one cannot count it
//! (docs/sweeps.md, "Is splitting right?").
//!
//! Both methods estimate the same chance per run, from the same points
//! taken as equally likely: the runs one by one as `k` of `n` with its
//! exact (Clopper-Pearson) 95% interval, splitting as the mean of its
//! replicas with a t-interval. Were splitting biased by more than the
//! two intervals' widths, they would not overlap; that is the test.
//! Its cost against theirs is the other figure: the simulated time each
//! spends for the relative error splitting reached.

use super::spec::SweepSpec;
use super::split::{self, Estimate, SplitOptions};
use anyhow::Context;
use rayon::prelude::*;

/// The name `--experiment` takes.
pub const NAME: &str = crate::validate::SPLITTING;

/// The report both methods estimate.
pub const REPORT: &str = include_str!("../../reports/splitting-validation.toml");

/// Replicas of splitting: about as many simulated seconds as a tenth of
/// the runs one by one, and a t-interval whose quantile is within 5% of
/// the normal's.
pub const REPLICAS: usize = 20;

/// The report's text with its master seed replaced by `seed`.
pub fn with_seed(report: &str, seed: u64) -> String {
    report.replacen("\nseed = 1\n", &format!("\nseed = {seed}\n"), 1)
}

/// The two estimates and the verdict.
#[derive(Clone, Debug)]
pub struct Agreement {
    /// Runs one by one, and how many reached the observation.
    pub runs: usize,
    pub reaching: usize,
    /// Their exact 95% interval.
    pub exact: (f64, f64),
    /// Simulated seconds of the runs one by one.
    pub runs_sim_s: f64,
    pub estimate: Estimate,
    pub options: SplitOptions,
    /// The observation, in nanoseconds, and one run's length.
    pub observed: u64,
    pub run: sim::Dur,
    pub seed: u64,
}

impl Agreement {
    /// The chance per run the runs one by one give.
    pub fn p_runs(&self) -> f64 {
        self.reaching as f64 / self.runs.max(1) as f64
    }

    /// Met when the two 95% intervals overlap and splitting reached the
    /// observation in at least two replicas (one gives no interval).
    pub fn met(&self) -> bool {
        let reached = self.estimate.replicas.iter().filter(|r| r.p > 0.0).count();
        reached >= 2
            && self.reaching > 0
            && self.estimate.lo <= self.exact.1
            && self.exact.0 <= self.estimate.hi
    }
}

/// Runs `spec`'s points one by one (each replication one run, of its
/// first variant) and splitting with `o` over the same points.
pub fn agreement(spec: &SweepSpec, o: &SplitOptions) -> anyhow::Result<Agreement> {
    let c = spec
        .check
        .as_ref()
        .context("the splitting validation needs a report ([observation], [exposure])")?;
    let f = &spec.figures[c.figure];
    let h = super::run::header(spec)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(o.jobs)
        .build()
        .context("cannot start worker threads")?;
    let records = pool.install(|| {
        (spec.points.par_iter())
            .map(|p| super::run::run_point(spec, &h, p))
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let values: Vec<u64> = (records.iter())
        .filter_map(|r| r.variants.first())
        .flat_map(|v| {
            v.reps
                .iter()
                .filter_map(|rep| rep.get(c.figure).copied().flatten())
        })
        .collect();
    let reaching = values.iter().filter(|&&v| v >= c.observed).count();
    let compiled = split::compile_points(spec, &h)?;
    let estimate = split::estimate(&compiled, (f.metric, &f.subject), c.observed, spec.seed, o)?;
    Ok(Agreement {
        runs: values.len(),
        reaching,
        exact: binomial_interval(reaching as u64, values.len() as u64, 0.95),
        runs_sim_s: values.len() as f64 * c.run.as_nanos_f64() / 1e9,
        estimate,
        options: *o,
        observed: c.observed,
        run: c.run,
        seed: spec.seed,
    })
}

/// The agreement as `convoy validate` prints it, in lines of at most 72
/// columns as its table.
pub fn format(a: &Agreement, report: &str) -> String {
    let e = &a.estimate;
    let observed = output::terminal::human(sim::Dur(a.observed));
    let run = output::terminal::human(a.run);
    let mut s = format!(
        "{NAME}: multilevel splitting against runs one by one\n  ({report}: runs of {run} reaching {observed}, seed {})\n",
        a.seed
    );
    s.push_str(&format!(
        "  one by one: {} of {} runs, {:.3e} (95% {:.3e}-{:.3e})\n",
        a.reaching,
        a.runs,
        a.p_runs(),
        a.exact.0,
        a.exact.1,
    ));
    s.push_str(&format!(
        "  splitting:  {:.3e} (95% {:.3e}-{:.3e}), RE {:.3}\n",
        e.p, e.lo, e.hi, e.rel_err
    ));
    s.push_str(&format!(
        "    {} replicas x {} copies, p0 {}\n",
        a.options.replicas, a.options.copies, a.options.p0
    ));
    let split_s = e.sim_ns as f64 / 1e9;
    s.push_str(&format!(
        "  simulated s: one by one {:.0}, splitting {split_s:.0}\n",
        a.runs_sim_s
    ));
    if e.p > 0.0 && e.rel_err.is_finite() {
        let bf_s = split::brute_force_runs(e.p, e.rel_err) * a.run.as_nanos_f64() / 1e9;
        s.push_str(&format!(
            "  one by one to RE {:.3}: {bf_s:.0} s, {:.1} x splitting's\n",
            e.rel_err,
            bf_s / split_s.max(1e-9)
        ));
    }
    s.push_str(if a.met() {
        "  met: the two 95% intervals overlap\n"
    } else if a.reaching == 0 {
        "  NOT MET: no run one by one reached it: nothing to hold\n    splitting to\n"
    } else if e.replicas.iter().filter(|r| r.p > 0.0).count() < 2 {
        "  NOT MET: fewer than two splitting replicas reached it:\n    no interval\n"
    } else {
        "  NOT MET: the two 95% intervals do not overlap\n"
    });
    s
}

/// The exact (Clopper-Pearson) two-sided interval, at confidence `conf`,
/// of a chance seen `k` times in `n` trials: the chances at which `k` or
/// more (for the low end) and `k` or fewer (for the high end) have
/// probability `(1 - conf) / 2`. Found by bisection on the binomial tail,
/// summed in logarithms so that no term underflows.
pub fn binomial_interval(k: u64, n: u64, conf: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let tail = (1.0 - conf) / 2.0;
    let lo = if k == 0 {
        0.0
    } else {
        // P(X >= k | p) grows with p.
        bisect(|p| 1.0 - binomial_cdf(k - 1, n, p) - tail)
    };
    let hi = if k >= n {
        1.0
    } else {
        // P(X <= k | p) falls as p grows.
        bisect(|p| tail - binomial_cdf(k, n, p))
    };
    (lo, hi)
}

/// The p in (0, 1) where an increasing `f` crosses zero.
fn bisect(f: impl Fn(f64) -> f64) -> f64 {
    let (mut a, mut b) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let m = 0.5 * (a + b);
        if f(m) < 0.0 {
            a = m;
        } else {
            b = m;
        }
        if b - a <= f64::EPSILON * m {
            break;
        }
    }
    0.5 * (a + b)
}

/// P(X <= k) for X binomial(n, p), 0 < p < 1.
fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    // ln P(X = j), from j = 0 up by the ratio of neighbouring terms.
    let mut term = n as f64 * lq;
    let mut terms = Vec::with_capacity(k as usize + 1);
    terms.push(term);
    for j in 0..k.min(n) {
        term += ((n - j) as f64 / (j + 1) as f64).ln() + lp - lq;
        terms.push(term);
    }
    let top = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|t| (t - top).exp()).sum();
    (top + sum.ln()).exp().min(1.0)
}

#[cfg(test)]
mod tests {
    use super::binomial_interval;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    /// Against intervals worked out another way: 0 of 10 up to
    /// 1 - 0.025^(1/10) = 0.3085 and 10 of 10 from 0.025^(1/10) = 0.6915,
    /// by hand; 5 of 10 and 28 of 20,000 (the splitting validation's
    /// count) from the beta distribution's quantiles (R's
    /// `binom.test(5, 10)`: 0.1871-0.8129).
    #[test]
    fn the_seed_of_the_report_can_be_replaced() {
        let t = super::with_seed(super::REPORT, 7);
        assert!(t.contains("\nseed = 7\n") && !t.contains("\nseed = 1\n"));
    }

    #[test]
    fn exact_intervals_match_the_tables() {
        let (lo, hi) = binomial_interval(0, 10, 0.95);
        assert_eq!(lo, 0.0);
        assert!(close(hi, 0.3085, 1e-3), "{hi}");
        let (lo, hi) = binomial_interval(5, 10, 0.95);
        assert!(
            close(lo, 0.1871, 1e-3) && close(hi, 0.8129, 1e-3),
            "{lo} {hi}"
        );
        let (lo, hi) = binomial_interval(10, 10, 0.95);
        assert!(close(lo, 0.6915, 1e-3) && hi == 1.0, "{lo} {hi}");
        let (lo, hi) = binomial_interval(28, 20_000, 0.95);
        assert!(
            close(lo, 0.930e-3, 5e-3) && close(hi, 2.02e-3, 5e-3),
            "{lo} {hi}"
        );
    }
}
