//! Result types: what one run of an experiment produced.

use sim::stats::{LatencyHist, Windows};
use sim::{Dur, SimTime};
use std::sync::Arc;

/// What a series measures (the `metric` column of the CSV files).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Request to grant of a lock acquisition (until the waiter runs again
    /// holding the lock), keyed `lock/mode/group`.
    Wait,
    /// Acquisition to release, keyed `lock/mode/group`.
    Hold,
    /// Latency of a named span, keyed `span/group`.
    Span,
    /// An event count, keyed e.g. `kernfs_rwsem/read_acquisitions`.
    Counter,
}

impl Metric {
    pub const ALL: [Metric; 4] = [Metric::Wait, Metric::Hold, Metric::Span, Metric::Counter];

    pub fn parse(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Wait => "wait",
            Metric::Hold => "hold",
            Metric::Span => "span",
            Metric::Counter => "counter",
        }
    }
}

/// A statistic of a histogram, as `summary.csv` reports it (one column
/// each); sweeps collect the same numbers, so a sweep figure equals the
/// `summary.csv` cell of a run of that point and seed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stat {
    Count,
    Mean,
    P50,
    P90,
    P99,
    P999,
    Max,
    /// Samples at or above a threshold, to HDR resolution: a fleet
    /// report's "N stalls over 100 ms" (not a summary.csv column).
    Above(Dur),
}

/// What a [`Stat`] of a histogram is: a number of samples or a duration.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StatValue {
    Count(u64),
    Duration(Dur),
}

impl StatValue {
    /// The integer a file keeps (`summary.csv`, a sweep's figures): the
    /// count, or the duration in nanoseconds.
    pub fn raw(self) -> u64 {
        match self {
            StatValue::Count(n) => n,
            StatValue::Duration(d) => d.ns(),
        }
    }
}

impl Stat {
    /// In `summary.csv` column order.
    pub const ALL: [Stat; 7] = [
        Stat::Count,
        Stat::Mean,
        Stat::P50,
        Stat::P90,
        Stat::P99,
        Stat::P999,
        Stat::Max,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stat::Count => "count",
            Stat::Mean => "mean",
            Stat::P50 => "p50",
            Stat::P90 => "p90",
            Stat::P99 => "p99",
            Stat::P999 => "p999",
            Stat::Max => "max",
            Stat::Above(_) => "count_above",
        }
    }

    /// Whether the statistic counts samples (`count`, `count_above`)
    /// rather than measuring a duration.
    pub fn is_count(self) -> bool {
        matches!(self, Stat::Count | Stat::Above(_))
    }

    /// [`Stat::is_count`] of the statistic that [`Stat::as_str`] names
    /// `name` (a sweep file's figure keeps only the name).
    pub fn name_is_count(name: &str) -> bool {
        [Stat::Count, Stat::Above(Dur::ZERO)]
            .iter()
            .any(|s| s.as_str() == name)
    }

    pub fn parse(s: &str) -> Option<Stat> {
        Stat::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The statistic of `h`: nearest-rank quantiles of the exact HDR
    /// histogram, integer mean, exact count and maximum.
    pub fn of(self, h: &LatencyHist) -> StatValue {
        use StatValue::{Count, Duration};
        match self {
            Stat::Count => Count(h.count()),
            Stat::Mean => Duration(h.mean()),
            Stat::P50 => Duration(h.quantile(0.50)),
            Stat::P90 => Duration(h.quantile(0.90)),
            Stat::P99 => Duration(h.quantile(0.99)),
            Stat::P999 => Duration(h.quantile(0.999)),
            Stat::Max => Duration(h.max()),
            Stat::Above(Dur::ZERO) => Count(h.count()),
            Stat::Above(t) => {
                let below = h.cdf_at(t - Dur(1)) * h.count() as f64;
                Count(h.count() - (below.round() as u64).min(h.count()))
            }
        }
    }
}

/// A distribution of durations for one (metric, subject).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub metric: Metric,
    pub subject: String,
    /// Shared by a run's pooled result and its one replication's own
    /// (`RunOutcome::per_rep`): copied only when another replication is
    /// pooled in, so a run of one replication holds each histogram once.
    pub hist: Arc<LatencyHist>,
    pub windows: Windows,
}

/// A count for one subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counter {
    pub subject: String,
    pub value: u64,
}

/// Everything one variant produced (replications pooled).
#[derive(Clone, Debug, PartialEq)]
pub struct VariantResult {
    pub variant: String,
    /// Series in a canonical order: by metric, then subject.
    pub series: Vec<Series>,
    /// Counters sorted by subject.
    pub counters: Vec<Counter>,
    /// Simulated horizon of one replication.
    pub horizon: SimTime,
    /// Engine events processed, over all replications.
    pub events: u64,
    pub replications: u64,
    /// Lock waits still going on at the horizon, per wait subject: the
    /// longest so far (horizon minus request), over replications. A wait
    /// is recorded when it ends, so these are in no histogram and no
    /// output file; a fleet check of a worst wait counts them (a stall
    /// that outlasts the run reached at least that much). Sorted by
    /// subject.
    pub open_waits: Vec<(String, Dur)>,
}

impl VariantResult {
    /// The longest wait of `subject` still going on at the horizon, if any.
    pub fn open_wait(&self, subject: &str) -> Option<Dur> {
        self.open_waits
            .binary_search_by(|(s, _)| s.as_str().cmp(subject))
            .ok()
            .map(|i| self.open_waits[i].1)
    }

    /// The longest wait of `subject`, ended or still going on at the
    /// horizon; `None` when it has neither.
    pub fn worst_wait_with_open(&self, subject: &str) -> Option<Dur> {
        let ended = self.series(Metric::Wait, subject).map(|s| s.hist.max());
        match (ended, self.open_wait(subject)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Puts series and counters in canonical order.
    pub fn normalize(&mut self) {
        self.series
            .sort_by(|a, b| (a.metric, &a.subject).cmp(&(b.metric, &b.subject)));
        self.counters.sort_by(|a, b| a.subject.cmp(&b.subject));
    }

    /// Pools another replication of the same variant into this one:
    /// histograms merge exactly, windows merge, counters add.
    pub fn merge(&mut self, other: &VariantResult) {
        for s in &other.series {
            match self
                .series
                .binary_search_by(|x| (x.metric, &x.subject).cmp(&(s.metric, &s.subject)))
            {
                Ok(i) => {
                    Arc::make_mut(&mut self.series[i].hist).merge(&s.hist);
                    self.series[i].windows.merge(&s.windows);
                }
                Err(i) => self.series.insert(i, s.clone()),
            }
        }
        for c in &other.counters {
            match self
                .counters
                .binary_search_by(|x| x.subject.cmp(&c.subject))
            {
                Ok(i) => self.counters[i].value += c.value,
                Err(i) => self.counters.insert(i, c.clone()),
            }
        }
        for (subject, so_far) in &other.open_waits {
            match self
                .open_waits
                .binary_search_by(|(s, _)| s.as_str().cmp(subject))
            {
                Ok(i) => self.open_waits[i].1 = self.open_waits[i].1.max(*so_far),
                Err(i) => self.open_waits.insert(i, (subject.clone(), *so_far)),
            }
        }
        self.events += other.events;
        self.replications += other.replications;
    }

    pub fn series(&self, metric: Metric, subject: &str) -> Option<&Series> {
        self.series
            .iter()
            .find(|s| s.metric == metric && s.subject == subject)
    }

    pub fn counter(&self, subject: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|c| c.subject == subject)
            .map(|c| c.value)
    }
}

/// All variants of one experiment, in the experiment's variant order.
#[derive(Clone, Debug, PartialEq)]
pub struct ExperimentResult {
    pub experiment: String,
    pub variants: Vec<VariantResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_is_a_count_or_a_duration_and_a_file_keeps_either_as_an_integer() {
        let mut h = LatencyHist::new();
        for ns in [0, 1_500, 3_000, 250_000_000] {
            h.record(Dur(ns));
        }
        assert_eq!(Stat::Count.of(&h), StatValue::Count(4));
        assert_eq!(Stat::Max.of(&h), StatValue::Duration(Dur(250_000_000)));
        assert_eq!(Stat::Mean.of(&h).raw(), 62_501_125);
        // At or above 3 us: 3 us itself and 250 ms; every sample at 0.
        assert_eq!(Stat::Above(Dur(3_000)).of(&h), StatValue::Count(2));
        assert_eq!(Stat::Above(Dur::ZERO).of(&h), StatValue::Count(4));
        assert!(Stat::Above(Dur(1)).is_count() && !Stat::P999.is_count());
    }

    #[test]
    fn the_worst_wait_counts_one_still_going_on() {
        let mut hist = LatencyHist::new();
        hist.record(Dur(5_000));
        let v = VariantResult {
            variant: "v".into(),
            series: vec![Series {
                metric: Metric::Wait,
                subject: "l/read/g".into(),
                hist: hist.into(),
                windows: Windows::new(Dur::from_secs(10)),
            }],
            counters: vec![],
            horizon: SimTime(1),
            events: 0,
            replications: 1,
            open_waits: vec![("l/read/g".into(), Dur(9_000)), ("m/lock/h".into(), Dur(7))],
        };
        assert_eq!(v.worst_wait_with_open("l/read/g"), Some(Dur(9_000)));
        assert_eq!(v.worst_wait_with_open("m/lock/h"), Some(Dur(7)));
        assert_eq!(v.worst_wait_with_open("x/lock/y"), None);
    }
}
