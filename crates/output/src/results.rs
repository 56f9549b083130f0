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
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Wait => "wait",
            Metric::Hold => "hold",
            Metric::Span => "span",
            Metric::Counter => "counter",
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
}

impl VariantResult {
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
