//! `convoy check REPORT.toml`: is a fleet stall report consistent with the
//! model, and under which conditions?
//!
//! A report is a sweep file (its parameters are what is uncertain, sampled
//! or gridded, each replication one run) with an `[observation]` (a
//! statistic of a subject and the value seen) and an `[exposure]` (hosts x
//! running time per host). Every replication of every point is one
//! simulated run; the exposure amounts to N such runs. For a worst-case
//! statistic (a max, or a high percentile read per run), the chance to see
//! the observed value or worse somewhere in the exposure is
//! `1 - (1 - p)^N`, with `p` the fraction of runs that reach it, taking
//! the points' parameter values as equally likely. Runs are computed,
//! stored, sharded and resumed exactly as a sweep's points.

use super::spec::{CheckSpec, SweepSpec};
use super::store::Stored;
use output::terminal::human;
use sim::Dur;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Below this chance over the exposure, the observation is called
/// implausible under the model (and above `1 - PLAUSIBLE`, the model
/// expects worse than what was seen).
pub const PLAUSIBLE: f64 = 0.05;

/// The confidence of the bound stated when no run reaches the
/// observation.
pub const BOUND_CONFIDENCE: f64 = 0.95;

/// The report's verdict and the figures behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    /// Simulated runs (point x replication) with a value.
    pub runs: usize,
    /// Runs at or above the observed value.
    pub reaching: usize,
    /// Chance that one run reaches the observed value.
    pub p_run: f64,
    /// Runs of the scenario in the exposure.
    pub exposure_runs: f64,
    /// Chance to see the observed value or worse over the exposure (an
    /// upper bound when no run reached it).
    pub p_exposure: f64,
    pub bound_only: bool,
    /// Fraction of runs below the observed value.
    pub percentile: f64,
    /// Chance that nothing over the whole exposure reaches the observed
    /// value: small means the model expects worse than what was seen.
    pub p_none: f64,
}

/// The values of the observed figure, one per (point, replication), of
/// the report's first variant, with the point index.
fn samples(check: &CheckSpec, points: &BTreeMap<usize, Stored>) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    for (i, s) in points {
        let Some(v) = s.record.variants.first() else {
            continue;
        };
        for rep in &v.reps {
            if let Some(Some(x)) = rep.get(check.figure) {
                out.push((*i, *x));
            }
        }
    }
    out
}

/// The observed figure's value in each run of the report's first variant
/// (each point's replications), for the check's plot.
pub fn run_values(check: &CheckSpec, points: &BTreeMap<usize, Stored>) -> Vec<u64> {
    samples(check, points).into_iter().map(|(_, v)| v).collect()
}

/// The run that stands for the observation: for a worst value, the one
/// with the smallest value at or above it, else the one with the largest
/// value; for a count, the one with the most. As `(point, replication,
/// value)`.
pub fn representative(
    check: &CheckSpec,
    points: &BTreeMap<usize, Stored>,
    count: bool,
) -> Option<(usize, usize, u64)> {
    let mut runs = Vec::new();
    for (i, s) in points {
        let Some(v) = s.record.variants.first() else {
            continue;
        };
        for (r, rep) in v.reps.iter().enumerate() {
            if let Some(Some(x)) = rep.get(check.figure) {
                runs.push((*i, r, *x));
            }
        }
    }
    let above = runs
        .iter()
        .filter(|r| !count && r.2 >= check.observed)
        .min_by_key(|r| (r.2, r.0, r.1));
    above
        .or_else(|| {
            runs.iter()
                .max_by_key(|r| (r.2, std::cmp::Reverse((r.0, r.1))))
        })
        .copied()
}

/// The verdict's figures from the runs' values, `(point, value)`.
pub fn analyse(check: &CheckSpec, s: &[(usize, u64)]) -> CheckResult {
    let runs = s.len();
    let reaching = s.iter().filter(|(_, x)| *x >= check.observed).count();
    let n = check.runs_in_exposure();
    let bound_only = reaching == 0;
    // No run reached it: the exact one-sided 95% upper bound on p for no
    // success in `runs` trials (Clopper-Pearson), 1 - 0.05^(1/runs),
    // about 3 / runs (the rule of three) for many runs.
    let p_run = if runs == 0 {
        0.0
    } else if bound_only {
        1.0 - (1.0 - BOUND_CONFIDENCE).powf(1.0 / runs as f64)
    } else {
        reaching as f64 / runs as f64
    };
    let p_none = (1.0 - p_run).powf(n);
    let p_exposure = 1.0 - p_none;
    let percentile = if runs == 0 {
        0.0
    } else {
        s.iter().filter(|(_, x)| *x < check.observed).count() as f64 / runs as f64
    };
    CheckResult {
        runs,
        reaching,
        p_run,
        exposure_runs: n,
        p_exposure,
        bound_only,
        percentile,
        p_none,
    }
}

/// A figure's value as a file keeps it: a count, or nanoseconds.
fn show(value: u64, count: bool) -> String {
    if count {
        return value.to_string();
    }
    human(Dur(value))
}

/// The verdict on a worst value seen over the exposure: explained if the
/// model reaches it with some chance and does not almost surely go beyond;
/// only if `conditions` hold when the runs that reach it come from part
/// of the swept parameters.
fn worst_verdict(r: &CheckResult, conditions: &[String]) -> String {
    let chance = if r.bound_only {
        format!(
            "at most {:.3} (95% upper bound: no run reaches it)",
            r.p_exposure
        )
    } else {
        format!("{:.3}", r.p_exposure)
    };
    let verdict = if r.p_exposure < PLAUSIBLE {
        "NOT EXPLAINED: the model almost never gets that far over this exposure".to_string()
    } else if r.bound_only {
        "UNDECIDED: no run reaches it, but too few runs to rule it out (sample more points)"
            .to_string()
    } else if r.p_none < PLAUSIBLE {
        "NOT EXPLAINED as the worst seen: over such an exposure the model expects worse".to_string()
    } else {
        explained(conditions)
    };
    format!(
        "  chance to see it or worse over the exposure: {chance}; to see nothing that bad: {:.3}\n  verdict: {verdict}\n",
        r.p_none
    )
}

/// Standard normal CDF (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.3275911 * x);
    let poly = t
        * (0.254829592
            + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// "EXPLAINED", or "EXPLAINED ONLY IF" the conditions.
fn explained(conditions: &[String]) -> String {
    if conditions.is_empty() {
        "EXPLAINED by the model".to_string()
    } else {
        format!("EXPLAINED ONLY IF {}", conditions.join(" and "))
    }
}

/// The verdict on a count over the exposure: the sum of N runs' counts,
/// normal with the runs' mean and variance (Poisson's if they all agree),
/// against the observed count.
fn count_verdict(check: &CheckSpec, per_run: &[u64], conditions: &[String]) -> String {
    if per_run.is_empty() {
        return "  verdict: UNDECIDED: no run\n".into();
    }
    let n = check.runs_in_exposure();
    let k = per_run.len() as f64;
    let mean = per_run.iter().map(|&c| c as f64).sum::<f64>() / k;
    let var = per_run
        .iter()
        .map(|&c| (c as f64 - mean).powi(2))
        .sum::<f64>()
        / k;
    let expected = n * mean;
    let sd = (n * if var > 0.0 { var } else { mean }).sqrt().max(1e-9);
    let obs = check.observed as f64;
    let p_more = 1.0 - normal_cdf((obs - 0.5 - expected) / sd);
    let p_fewer = normal_cdf((obs + 0.5 - expected) / sd);
    let verdict = if p_more < PLAUSIBLE {
        "NOT EXPLAINED: the model expects fewer".to_string()
    } else if p_fewer < PLAUSIBLE {
        "NOT EXPLAINED: the model expects more".to_string()
    } else {
        explained(conditions)
    };
    format!(
        "  expected over the exposure: {expected:.1} (sd {sd:.1}); chance of at least the observed: {p_more:.3}, of at most: {p_fewer:.3}\n  verdict: {verdict}\n"
    )
}

/// An exposure in hours (and days) when it is that long.
fn exposure_text(d: Dur) -> String {
    let h = d.as_nanos_f64() / 3.6e12;
    if h >= 48.0 {
        format!("{h:.0} h ({:.1} days)", h / 24.0)
    } else if h >= 1.0 {
        format!("{h:.1} h")
    } else {
        human(d)
    }
}

/// The report as text: the simulated distribution, where the observation
/// falls, the verdict, and the parameter region that reaches it.
pub fn format(spec: &SweepSpec, check: &CheckSpec, points: &BTreeMap<usize, Stored>) -> String {
    let runs = samples(check, points);
    let r = analyse(check, &runs);
    let f = &spec.figures[check.figure];
    let count = f.stat.is_count();
    let mut out = String::new();
    let stat = match f.stat {
        output::Stat::Above(t) => format!("count at or above {}", human(t)),
        s => s.as_str().to_string(),
    };
    let _ = writeln!(
        out,
        "check {}: {} of {} {} observed {} over {} host(s) x {}",
        spec.name,
        stat,
        f.metric.as_str(),
        f.subject,
        show(check.observed, count),
        check.hosts,
        exposure_text(check.exposure)
    );
    let _ = writeln!(
        out,
        "  = {:.0} run(s) of {} (the report's exposure); {} simulated run(s) over {} point(s)",
        r.exposure_runs,
        human(check.run),
        r.runs,
        points.len()
    );
    let mut values: Vec<u64> = runs.iter().map(|&(_, x)| x).collect();
    values.sort_unstable();
    if let (Some(lo), Some(hi)) = (values.first(), values.last()) {
        let q = |p: f64| values[((p * values.len() as f64) as usize).min(values.len() - 1)];
        let _ = writeln!(
            out,
            "  per run: min {}, p50 {}, p90 {}, max {}",
            show(*lo, count),
            show(q(0.5), count),
            show(q(0.9), count),
            show(*hi, count)
        );
    }
    if !count {
        let _ = writeln!(
            out,
            "  the observation is at p{:.1} of single runs; {} of {} runs reach it",
            r.percentile * 100.0,
            r.reaching,
            r.runs
        );
    }
    // Which parameter values the reaching runs come from (for a count:
    // the runs with any such event); a narrower range than swept is a
    // condition of the verdict.
    let floor = if count { 1 } else { check.observed };
    let reaching: Vec<usize> = runs
        .iter()
        .filter(|&&(_, x)| x >= floor)
        .map(|&(i, _)| i)
        .collect();
    let mut from = Vec::new();
    let mut conditions = Vec::new();
    for (k, p) in spec.params.iter().enumerate() {
        let vals: Vec<f64> = reaching
            .iter()
            .filter_map(|i| points.get(i))
            .filter_map(|s| s.record.values.get(k)?.parse::<f64>().ok())
            .collect();
        let all: Vec<f64> = points
            .values()
            .filter_map(|s| s.record.values.get(k)?.parse::<f64>().ok())
            .collect();
        let range = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (lo, hi)
        };
        if vals.is_empty() {
            continue;
        }
        let ((lo, hi), (alo, ahi)) = (range(&vals), range(&all));
        from.push(format!("    {} in {lo}..{hi} (swept {alo}..{ahi})", p.name));
        if lo > alo || hi < ahi {
            conditions.push(format!("{} in {lo}..{hi}", p.name));
        }
    }
    if count {
        let _ = write!(out, "{}", count_verdict(check, &values, &conditions));
    } else {
        let _ = write!(out, "{}", worst_verdict(&r, &conditions));
    }
    if !from.is_empty() {
        let _ = writeln!(out, "  runs that reach it come from:");
        for line in from {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explanation_names_its_conditions_or_none() {
        assert_eq!(explained(&[]), "EXPLAINED by the model");
        assert_eq!(
            explained(&["hold_ms in 3..4".into(), "readers in 8..16".into()]),
            "EXPLAINED ONLY IF hold_ms in 3..4 and readers in 8..16"
        );
    }
}
