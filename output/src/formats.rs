//! Simulated results in the formats kernel people measure with, so that a
//! prediction can be put beside (or diffed against) a measurement:
//! - `bpftrace`: one `hist()` map per wait, hold and span subject;
//! - `perf-lock`: `perf lock contention` columns, one line per lock class
//!   and mode (the `caller` column names the lock, as `-l` does);
//! - `lock_stat`: `/proc/lock_stat` (version 0.4) columns, `-R`/`-W` lines
//!   for an rwsem's read and write sides, times in microseconds.
//!
//! Locks are read off the wait and hold series (`lock/mode/group`), merged
//! over groups exactly, and the `L/<mode>_acquisitions` counters. What the
//! model does not have (cache-line bounces) is printed as 0.

use crate::results::{Metric, VariantResult};
use crate::terminal::log2_histogram;
use sim::stats::LatencyHist;
use sim::Dur;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A measurement format `--format` names.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Bpftrace,
    PerfLock,
    LockStat,
}

impl Format {
    pub const NAMES: [&'static str; 3] = ["bpftrace", "perf-lock", "lock_stat"];

    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "bpftrace" => Some(Format::Bpftrace),
            "perf-lock" => Some(Format::PerfLock),
            "lock_stat" => Some(Format::LockStat),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Bpftrace => "bpftrace",
            Format::PerfLock => "perf-lock",
            Format::LockStat => "lock_stat",
        }
    }

    /// One variant's results in this format.
    pub fn render(self, v: &VariantResult) -> String {
        match self {
            Format::Bpftrace => bpftrace(v),
            Format::PerfLock => perf_lock(v),
            Format::LockStat => lock_stat(v),
        }
    }
}

fn bpftrace(v: &VariantResult) -> String {
    let mut out = String::new();
    for s in v.series.iter().filter(|s| s.hist.count() > 0) {
        out.push_str(&log2_histogram(&v.variant, s));
        out.push('\n');
    }
    out
}

/// Waits and holds of one lock class and mode, all groups merged.
#[derive(Default)]
struct LockSide {
    wait: LatencyHist,
    hold: LatencyHist,
}

/// (lock class, mode) -> its waits and holds, in name order.
fn lock_sides(v: &VariantResult) -> BTreeMap<(String, String), LockSide> {
    let mut sides: BTreeMap<(String, String), LockSide> = BTreeMap::new();
    for s in &v.series {
        let mut parts = s.subject.splitn(3, '/');
        let (Some(lock), Some(mode), Some(_group)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let side = sides.entry((lock.into(), mode.into())).or_default();
        match s.metric {
            Metric::Wait => side.wait.merge(&s.hist),
            Metric::Hold => side.hold.merge(&s.hist),
            _ => {}
        }
    }
    sides
}

/// Contended waits: the non-zero ones (count, total in ns, min, max).
fn contended(h: &LatencyHist) -> (u64, u128, Dur, Dur) {
    (h.count() - h.zeros(), h.sum(), h.min_nonzero(), h.max())
}

/// `12.34 ms` style, as perf prints durations.
fn perf_time(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} us", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn perf_lock(v: &VariantResult) -> String {
    let mut rows: Vec<(u64, String)> = Vec::new();
    for ((lock, mode), side) in lock_sides(v) {
        let (n, total, _, max) = contended(&side.wait);
        if n == 0 {
            continue;
        }
        let kind = match mode.as_str() {
            "read" => "rwsem:R",
            "write" => "rwsem:W",
            _ => "mutex",
        };
        rows.push((
            n,
            format!(
                "{n:>10} {:>12} {:>12} {:>12} {kind:>12}   {lock}",
                perf_time(total as f64),
                perf_time(max.as_nanos_f64()),
                perf_time(total as f64 / n as f64),
            ),
        ));
    }
    // perf sorts by contentions, most first.
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out = format!(
        "{:>10} {:>12} {:>12} {:>12} {:>12}   caller\n\n",
        "contended", "total wait", "max wait", "avg wait", "type"
    );
    for (_, r) in rows {
        out.push_str(&r);
        out.push('\n');
    }
    out
}

fn lock_stat(v: &VariantResult) -> String {
    let rule = "-".repeat(227);
    let mut out = format!("lock_stat version 0.4\n{rule}\n");
    let _ = writeln!(
        out,
        "{:>40} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14}",
        "class name",
        "con-bounces",
        "contentions",
        "waittime-min",
        "waittime-max",
        "waittime-total",
        "waittime-avg",
        "acq-bounces",
        "acquisitions",
        "holdtime-min",
        "holdtime-max",
        "holdtime-total",
        "holdtime-avg"
    );
    let _ = writeln!(out, "{rule}\n");
    let us = |ns: f64| format!("{:.2}", ns / 1e3);
    for ((lock, mode), side) in lock_sides(v) {
        let suffix = match mode.as_str() {
            "read" => "-R",
            "write" => "-W",
            _ => "",
        };
        let (n, wtotal, wmin, wmax) = contended(&side.wait);
        let acq = v
            .counter(&match mode.as_str() {
                "lock" => format!("{lock}/acquisitions"),
                m => format!("{lock}/{m}_acquisitions"),
            })
            .unwrap_or(side.hold.count());
        let h = &side.hold;
        let havg = if h.count() == 0 { 0.0 } else { h.mean_f64() };
        let wavg = if n == 0 {
            0.0
        } else {
            wtotal as f64 / n as f64
        };
        let _ = writeln!(
            out,
            "{:>40} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14} {:>14}",
            format!("&{lock}{suffix}:"),
            0,
            n,
            us(wmin.as_nanos_f64()),
            us(wmax.as_nanos_f64()),
            us(wtotal as f64),
            us(wavg),
            0,
            acq,
            us(h.min().as_nanos_f64()),
            us(h.max().as_nanos_f64()),
            us(h.sum() as f64),
            us(havg),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Series;
    use sim::stats::Windows;
    use sim::SimTime;

    fn series(metric: Metric, subject: &str, values: &[u64]) -> Series {
        let mut hist = LatencyHist::new();
        for &v in values {
            hist.record(Dur(v));
        }
        Series {
            metric,
            subject: subject.into(),
            hist: hist.into(),
            windows: Windows::new(Dur(10_000_000_000)),
        }
    }

    fn variant() -> VariantResult {
        VariantResult {
            variant: "base".into(),
            series: vec![
                series(Metric::Wait, "kernfs_rwsem/read/a", &[0, 0, 2_000, 4_000]),
                series(Metric::Wait, "kernfs_rwsem/read/b", &[0, 6_000]),
                series(
                    Metric::Hold,
                    "kernfs_rwsem/read/a",
                    &[1_000, 1_000, 1_000, 1_000],
                ),
                series(Metric::Hold, "kernfs_rwsem/read/b", &[3_000, 3_000]),
                series(Metric::Wait, "m/lock/a", &[0]),
                series(Metric::Hold, "m/lock/a", &[500]),
            ],
            counters: vec![crate::Counter {
                subject: "kernfs_rwsem/read_acquisitions".into(),
                value: 6,
            }],
            horizon: SimTime(1_000_000_000),
            events: 0,
            replications: 1,
            open_waits: Vec::new(),
        }
    }

    #[test]
    fn what_perf_lock_and_lock_stat_print_reads_back() {
        let v = variant();
        let perf = crate::measured::read_perf_lock(&perf_lock(&v)).unwrap();
        let ls = crate::measured::read_lock_stat(&lock_stat(&v)).unwrap();
        for lines in [&perf, &ls] {
            let r = lines
                .iter()
                .find(|l| l.lock == "kernfs_rwsem" && l.mode == "read")
                .unwrap();
            // Contended waits of a and b: 2, 4 and 6 us.
            assert_eq!((r.contentions, r.wait_max_ns), (3, 6_000.0));
            assert_eq!((r.wait_total_ns, r.wait_avg_ns), (12_000.0, 4_000.0));
        }
        assert_eq!(
            ls.iter().find(|l| l.lock == "m").unwrap().hold_max_ns,
            Some(500.0)
        );
    }

    #[test]
    fn lock_stat_merges_groups_and_counts_only_contended_waits() {
        let s = lock_stat(&variant());
        assert!(s.starts_with("lock_stat version 0.4\n"));
        let line = s.lines().find(|l| l.contains("&kernfs_rwsem-R:")).unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        // name, con-bounces, contentions 3, wait min 2 us, max 6, total 12,
        // avg 4, acq-bounces, acquisitions 6, hold min 1, max 3, total 10.
        assert_eq!(
            cols,
            [
                "&kernfs_rwsem-R:",
                "0",
                "3",
                "2.00",
                "6.00",
                "12.00",
                "4.00",
                "0",
                "6",
                "1.00",
                "3.00",
                "10.00",
                "1.67"
            ]
        );
        let m = s.lines().find(|l| l.contains("&m:")).unwrap();
        assert_eq!(m.split_whitespace().nth(2), Some("0"));
    }

    #[test]
    fn perf_lock_lists_contended_locks_most_first() {
        let s = perf_lock(&variant());
        let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(lines[0].contains("contended") && lines[0].contains("caller"));
        assert_eq!(lines.len(), 2, "{s}");
        let cols: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cols,
            [
                "3",
                "12.00",
                "us",
                "6.00",
                "us",
                "4.00",
                "us",
                "rwsem:R",
                "kernfs_rwsem"
            ]
        );
    }

    #[test]
    fn bpftrace_prints_a_hist_map_per_subject() {
        let s = bpftrace(&variant());
        assert!(s.contains("@wait[kernfs_rwsem/read/a, base] (ns):"));
        assert!(s.contains("[2K, 4K)"));
    }
}
