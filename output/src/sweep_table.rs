//! Sweep results: what a sweep directory holds (`sweep.json`, one file per
//! point) and `points.csv`, the table built from them.
//!
//! A point is never split: all its replications and variants run in one
//! process, and its figures are computed there from the exact pooled HDR
//! histograms (as `summary.csv` computes them). Shards and resumed runs
//! only ever add whole points, so `points.csv` depends on the set of point
//! files alone, never on which process, thread or shard produced them.

use crate::files::csv_bytes;
use serde::{Deserialize, Serialize};

/// `sweep.json`: which sweep a directory holds results of. Two directories
/// may be merged only when their headers are equal.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SweepHeader {
    pub sweep: String,
    /// The scenario as the sweep file names it (built-in name or path).
    pub scenario: String,
    /// BLAKE3 of everything that decides the results but the seed and the
    /// program: points, fixed overrides, variants, replications, figures and
    /// the resolved scenario of every variant.
    pub hash: String,
    /// `convoy` version and git commit.
    pub version: String,
    /// The master seed; each point's seed derives from it and the point.
    pub seed: u64,
    pub reps: u64,
    /// Number of points of the whole sweep (all shards).
    pub points: usize,
    pub variants: Vec<String>,
    pub params: Vec<ParamAxis>,
    pub figures: Vec<FigureSpec>,
}

/// A swept parameter as a column and a plot axis.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ParamAxis {
    /// The `--set` key.
    pub key: String,
    /// The column name in `points.csv` (and the axis label).
    pub name: String,
    /// Values were spaced on a log scale (plot on a log axis).
    pub log: bool,
    /// The grid's values in order; empty for a random sample.
    pub values: Vec<String>,
}

/// A figure collected at every point: one statistic of one subject, as in
/// `summary.csv`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FigureSpec {
    /// Column name in `points.csv`.
    pub name: String,
    pub metric: String,
    pub subject: String,
    pub stat: String,
}

impl FigureSpec {
    /// A duration in ns (everything but counts: a counter, `count`, and
    /// `count_above`, which counts samples at or above a threshold).
    pub fn is_duration(&self) -> bool {
        self.metric != "counter" && !crate::Stat::name_is_count(&self.stat)
    }
}

/// One point's results: `points/<index>-<hash>.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PointRecord {
    pub hash: String,
    pub version: String,
    pub seed: u64,
    pub index: usize,
    /// The seed the point ran with (`convoy run --seed` reproduces it).
    pub point_seed: u64,
    /// Parameter values, in the header's parameter order.
    pub values: Vec<String>,
    /// The `--set` arguments of the point (fixed ones first).
    pub sets: Vec<String>,
    pub variants: Vec<PointVariant>,
}

/// One variant at one point: figures from the replications pooled, and
/// from each replication alone (for the spread).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PointVariant {
    pub variant: String,
    /// One per figure; `None` when the variant has no such subject.
    pub pooled: Vec<Option<u64>>,
    /// `[rep][figure]`.
    pub reps: Vec<Vec<Option<u64>>>,
}

impl PointVariant {
    /// Min, median (upper middle, as `compare` reports it) and max over
    /// replications of figure `f`.
    pub fn spread(&self, f: usize) -> Option<(u64, u64, u64)> {
        let mut v: Vec<u64> = self.reps.iter().filter_map(|r| r[f]).collect();
        v.sort_unstable();
        Some((*v.first()?, v[v.len() / 2], *v.last()?))
    }
}

/// The bytes of `points.csv`: one row per point and variant, by point index
/// then the header's variant order. Columns: `point`, `seed`, one per
/// parameter, `variant`, then per figure the pooled value and its
/// `_min`, `_median`, `_max` over replications. Integers; durations in ns.
pub fn points_csv(h: &SweepHeader, points: &[PointRecord]) -> Vec<u8> {
    let mut header: Vec<String> = vec!["point".into(), "seed".into()];
    header.extend(h.params.iter().map(|p| p.name.clone()));
    header.push("variant".into());
    for f in &h.figures {
        header.push(f.name.clone());
        for s in ["min", "median", "max"] {
            header.push(format!("{}_{s}", f.name));
        }
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let cell = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    let mut sorted: Vec<&PointRecord> = points.iter().collect();
    sorted.sort_by_key(|p| p.index);
    csv_bytes(&header, |w| {
        for p in sorted {
            for v in &p.variants {
                let mut row = vec![p.index.to_string(), p.point_seed.to_string()];
                row.extend(p.values.iter().cloned());
                row.push(v.variant.clone());
                for (f, pooled) in v.pooled.iter().enumerate() {
                    row.push(cell(*pooled));
                    let s = v.spread(f);
                    row.push(cell(s.map(|s| s.0)));
                    row.push(cell(s.map(|s| s.1)));
                    row.push(cell(s.map(|s| s.2)));
                }
                w.write_record(&row)?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A header of one figure, `wait l/read/g max`, for tests.
    pub(crate) fn header(reps: u64, variants: &[&str], params: Vec<ParamAxis>) -> SweepHeader {
        SweepHeader {
            sweep: "s".into(),
            scenario: "x".into(),
            hash: "h".into(),
            version: "v".into(),
            seed: 1,
            reps,
            points: params.iter().map(|p| p.values.len()).product(),
            variants: variants.iter().map(|v| v.to_string()).collect(),
            params,
            figures: vec![FigureSpec {
                name: "f".into(),
                metric: "wait".into(),
                subject: "l/read/g".into(),
                stat: "max".into(),
            }],
        }
    }

    #[test]
    fn counts_are_not_durations() {
        let f = |metric: &str, stat: &str| FigureSpec {
            name: "f".into(),
            metric: metric.into(),
            subject: "s".into(),
            stat: stat.into(),
        };
        assert!(f("wait", "max").is_duration());
        assert!(f("span", "p99").is_duration());
        assert!(!f("wait", "count").is_duration());
        assert!(!f("span", "count_above").is_duration());
        assert!(!f("counter", "count").is_duration());
    }

    #[test]
    fn rows_by_point_then_variant_with_spreads() {
        let h = header(
            3,
            &["a"],
            vec![ParamAxis {
                key: "k.x".into(),
                name: "x".into(),
                log: false,
                values: vec!["1".into(), "2".into()],
            }],
        );
        let p = |index: usize, reps: [Option<u64>; 3]| PointRecord {
            hash: "h".into(),
            version: "v".into(),
            seed: 1,
            index,
            point_seed: 7,
            values: vec![(index + 1).to_string()],
            sets: vec![],
            variants: vec![PointVariant {
                variant: "a".into(),
                pooled: vec![reps.iter().flatten().max().copied()],
                reps: reps.iter().map(|r| vec![*r]).collect(),
            }],
        };
        let text = String::from_utf8(points_csv(
            &h,
            &[p(1, [None, None, None]), p(0, [Some(5), Some(1), Some(3)])],
        ))
        .unwrap();
        assert_eq!(
            text,
            "point,seed,x,variant,f,f_min,f_median,f_max\n\
             0,7,1,a,5,1,3,5\n\
             1,7,2,a,,,,\n"
        );
    }
}
