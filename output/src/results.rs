//! Result types: what one run of an experiment produced.

use sim::stats::{LatencyHist, Windows};
use sim::SimTime;

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
    /// Samples at or above a threshold (ns), to HDR resolution: a fleet
    /// report's "N stalls over 100 ms" (not a summary.csv column).
    Above(u64),
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
        [Stat::Count, Stat::Above(0)]
            .iter()
            .any(|s| s.as_str() == name)
    }

    pub fn parse(s: &str) -> Option<Stat> {
        Stat::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The statistic of `h`: nearest-rank quantiles of the exact HDR
    /// histogram, integer mean, exact count and maximum.
    pub fn of(self, h: &LatencyHist) -> u64 {
        match self {
            Stat::Count => h.count(),
            Stat::Mean => h.mean(),
            Stat::P50 => h.quantile(0.50),
            Stat::P90 => h.quantile(0.90),
            Stat::P99 => h.quantile(0.99),
            Stat::P999 => h.quantile(0.999),
            Stat::Max => h.max(),
            Stat::Above(0) => h.count(),
            Stat::Above(t) => {
                let below = h.cdf_at(t - 1) * h.count() as f64;
                h.count() - (below.round() as u64).min(h.count())
            }
        }
    }
}

/// A distribution of durations for one (metric, subject).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub metric: Metric,
    pub subject: String,
    pub hist: LatencyHist,
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
    pub open_waits: Vec<(String, u64)>,
}

impl VariantResult {
    /// The longest wait of `subject` still going on at the horizon, if any.
    pub fn open_wait(&self, subject: &str) -> Option<u64> {
        self.open_waits
            .binary_search_by(|(s, _)| s.as_str().cmp(subject))
            .ok()
            .map(|i| self.open_waits[i].1)
    }

    /// The longest wait of `subject`, ended or still going on at the
    /// horizon; `None` when it has neither.
    pub fn worst_wait_with_open(&self, subject: &str) -> Option<u64> {
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
                    self.series[i].hist.merge(&s.hist);
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
        for (subject, ns) in &other.open_waits {
            match self
                .open_waits
                .binary_search_by(|(s, _)| s.as_str().cmp(subject))
            {
                Ok(i) => self.open_waits[i].1 = self.open_waits[i].1.max(*ns),
                Err(i) => self.open_waits.insert(i, (subject.clone(), *ns)),
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
