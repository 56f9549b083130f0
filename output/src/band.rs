//! A band (`convoy band`): each headline statistic at a machine
//! profile's cited values (the point) and the lowest and highest it takes
//! over runs at the ends of the values' cited ranges; `band.csv`, the
//! band's manifest `band.json` and the terminal table.

use crate::files::csv_bytes;
use crate::terminal::human;
use crate::{Metric, Stat};
use serde::Serialize;
use sim::Dur;
use std::fmt::Write;

pub const BAND_CSV: &str = "band.csv";
pub const BAND_JSON: &str = "band.json";

/// `band.csv`'s columns (docs/contract.md).
pub const BAND_COLUMNS: [&str; 10] = [
    "variant",
    "metric",
    "subject",
    "stat",
    "point",
    "band_low",
    "band_high",
    "most_sensitive",
    "its_low_value",
    "its_high_value",
];

/// One statistic of one subject of one variant over a band's runs. Values
/// are integer nanoseconds, or a number for a count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandRow {
    pub variant: String,
    pub metric: Metric,
    pub subject: String,
    pub stat: Stat,
    /// At the profile's cited values.
    pub point: u64,
    /// The lowest and highest over every run, the point's included.
    pub low: u64,
    pub high: u64,
    /// The input that moved the statistic furthest from the point; `None`
    /// when none moved it.
    pub sensitive: Option<Sensitive>,
}

/// The input a statistic is most sensitive to, and the statistic at the
/// input's low and at its high (one at a time: the runs at the ends of its
/// range; sampled: the samples where it was lowest and highest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sensitive {
    pub field: String,
    pub at_low: u64,
    pub at_high: u64,
}

impl BandRow {
    /// A value of this row as a person reads it: `1.23ms`, or a count.
    fn show(&self, v: u64) -> String {
        if self.metric == Metric::Counter || self.stat == Stat::Count {
            v.to_string()
        } else {
            human(Dur(v))
        }
    }
}

/// `band.csv`: one row per variant, subject and statistic, in the order
/// given.
pub fn band_csv(rows: &[BandRow]) -> Vec<u8> {
    csv_bytes(&BAND_COLUMNS, |w| {
        for r in rows {
            let (field, lo, hi) = match &r.sensitive {
                Some(s) => (s.field.clone(), s.at_low.to_string(), s.at_high.to_string()),
                None => (String::new(), String::new(), String::new()),
            };
            w.write_record([
                r.variant.as_str(),
                r.metric.as_str(),
                &r.subject,
                r.stat.as_str(),
                &r.point.to_string(),
                &r.low.to_string(),
                &r.high.to_string(),
                &field,
                &lo,
                &hi,
            ])?;
        }
        Ok(())
    })
}

/// A machine value the band varied: its `[machine]` field, its cited
/// value and range (as `--set` text) and the range's source.
#[derive(Clone, Debug, Serialize)]
pub struct BandInput {
    pub field: String,
    pub value: String,
    pub low: String,
    pub high: String,
    pub source: String,
}

/// A machine value the band did not vary, and why.
#[derive(Clone, Debug, Serialize)]
pub struct HeldInput {
    pub field: String,
    pub value: String,
    pub why: String,
}

/// One run of a band: its directory under `runs/` and the `--set`
/// arguments that made it (after the band's own).
#[derive(Clone, Debug, Serialize)]
pub struct BandRun {
    pub name: String,
    pub sets: Vec<String>,
}

/// `band.json`: what the band varied and how, and its runs. Each run's
/// directory has the run's own `manifest.json`.
#[derive(Clone, Debug, Serialize)]
pub struct BandManifest {
    pub program: String,
    pub version: String,
    pub git_commit: Option<String>,
    pub experiment: String,
    /// The scenario as given: a built-in name or a path.
    pub source: String,
    /// The machine profile whose cited ranges are varied.
    pub machine: String,
    /// `one-at-a-time` or `latin-hypercube`.
    pub method: String,
    /// Every run's seed (common random numbers).
    pub seed: u64,
    /// Replications of each run, pooled.
    pub replications: u64,
    pub duration_ns: u64,
    /// The `--set` arguments every run gets, the duration's and seed's too.
    pub sets: Vec<String>,
    pub varied: Vec<BandInput>,
    pub held: Vec<HeldInput>,
    pub runs: Vec<BandRun>,
}

pub fn band_json(m: &BandManifest) -> Vec<u8> {
    let mut s = serde_json::to_vec_pretty(m).expect("band manifest serializes");
    s.push(b'\n');
    s
}

/// The terminal table: what was varied and held, then per variant and
/// subject one line per statistic (the point, the band, the most
/// sensitive input and the statistic at its two ends). At most 100
/// columns but for a long subject's heading.
pub fn band_table(m: &BandManifest, rows: &[BandRow]) -> String {
    let mut s = String::new();
    let how = match m.method.as_str() {
        "one-at-a-time" => "one value at a time at its cited low and high",
        _ => "all values sampled together over their cited ranges",
    };
    let reps = match m.replications {
        1 => String::new(),
        n => format!(" x {n} replications"),
    };
    let _ = writeln!(
        s,
        "band: {} on {}, {}, seed {}: {} runs{reps}, {how}",
        m.experiment,
        m.machine,
        Dur(m.duration_ns),
        m.seed,
        m.runs.len()
    );
    let fw = (m.varied.iter().map(|i| i.field.len()))
        .chain(m.held.iter().map(|i| i.field.len()))
        .max()
        .unwrap_or(0);
    let _ = writeln!(s, "varied (value: low .. high):");
    for i in &m.varied {
        let _ = writeln!(
            s,
            "  {:<fw$}  {}: {} .. {}",
            i.field, i.value, i.low, i.high
        );
    }
    if !m.held.is_empty() {
        let _ = writeln!(s, "held:");
        for h in &m.held {
            let _ = writeln!(s, "  {:<fw$}  {}: {}", h.field, h.value, h.why);
        }
    }
    let sens_w = (rows.iter())
        .filter_map(|r| r.sensitive.as_ref().map(|x| x.field.len()))
        .max()
        .unwrap_or(0)
        .max("most sensitive".len());
    let mut last: Option<(&str, Metric, &str)> = None;
    for r in rows {
        let key = (r.variant.as_str(), r.metric, r.subject.as_str());
        if last != Some(key) {
            let _ = writeln!(
                s,
                "\n{}: {} {}\n  {:<5} {:>8}  {:<20}  {:<sens_w$}  at its low .. high",
                r.variant,
                r.metric.as_str(),
                r.subject,
                "stat",
                "point",
                "band",
                "most sensitive",
            );
            last = Some(key);
        }
        let band = format!("{} .. {}", r.show(r.low), r.show(r.high));
        let (field, ends) = match &r.sensitive {
            Some(x) => (
                x.field.as_str(),
                format!("{} .. {}", r.show(x.at_low), r.show(x.at_high)),
            ),
            None => ("-", String::new()),
        };
        let line = format!(
            "  {:<5} {:>8}  {band:<20}  {field:<sens_w$}  {ends}",
            r.stat.as_str(),
            r.show(r.point),
        );
        let _ = writeln!(s, "{}", line.trim_end());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(stat: Stat, sensitive: Option<Sensitive>) -> BandRow {
        BandRow {
            variant: "base".into(),
            metric: Metric::Span,
            subject: "flush/css_free".into(),
            stat,
            point: 1_500_000,
            low: 1_200_000,
            high: 2_000_000,
            sensitive,
        }
    }

    fn manifest() -> BandManifest {
        BandManifest {
            program: "convoy".into(),
            version: "0".into(),
            git_commit: None,
            experiment: "x".into(),
            source: "x".into(),
            machine: "kvm-guest".into(),
            method: "one-at-a-time".into(),
            seed: 1,
            replications: 1,
            duration_ns: 30_000_000_000,
            sets: vec![],
            varied: vec![BandInput {
                field: "host_wake".into(),
                value: "5us".into(),
                low: "2us".into(),
                high: "10us".into(),
                source: "s".into(),
            }],
            held: vec![HeldInput {
                field: "hz".into(),
                value: "250".into(),
                why: "set by the scenario".into(),
            }],
            runs: vec![],
        }
    }

    #[test]
    fn band_csv_has_its_columns_and_leaves_no_sensitive_input_empty() {
        let rows = [
            row(
                Stat::Max,
                Some(Sensitive {
                    field: "host_wake".into(),
                    at_low: 1_200_000,
                    at_high: 2_000_000,
                }),
            ),
            row(Stat::Mean, None),
        ];
        let text = String::from_utf8(band_csv(&rows)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], BAND_COLUMNS.join(","));
        assert_eq!(
            lines[1],
            "base,span,flush/css_free,max,1500000,1200000,2000000,host_wake,1200000,2000000"
        );
        assert_eq!(
            lines[2],
            "base,span,flush/css_free,mean,1500000,1200000,2000000,,,"
        );
    }

    #[test]
    fn the_table_fits_100_columns() {
        let rows = [row(
            Stat::P999,
            Some(Sensitive {
                field: "host_halt_poll".into(),
                at_low: 123_456_789,
                at_high: 987_654_321,
            }),
        )];
        let t = band_table(&manifest(), &rows);
        assert!(t.contains("p999"), "{t}");
        for line in t.lines() {
            assert!(line.chars().count() <= 100, "{line}");
        }
    }
}
