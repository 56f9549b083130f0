//! Terminal views: a summary table and bpftrace-style log2 histograms.

use crate::results::{ExperimentResult, Metric, Series};
use sim::stats::LatencyHist;
use sim::Dur;
use std::fmt::Write;

/// `s` with every control character but the line break escaped
/// (`\u{1b}`), so that text from a file or a name cannot move the cursor,
/// recolour or clear a terminal it is printed to. Messages break lines
/// on purpose (a deadlock's list); names cannot hold a line break (the
/// scenario's checks refuse one).
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() && c != '\n' {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A duration with three significant digits and a unit: `850ns`,
/// `1.30us`, `236ms`, `72.0s`.
pub fn human(d: Dur) -> String {
    let (ns, v) = (d.ns(), d.as_nanos_f64());
    let (x, unit) = if ns < 1_000 {
        return format!("{ns}ns");
    } else if ns < 1_000_000 {
        (v / 1e3, "us")
    } else if ns < 1_000_000_000 {
        (v / 1e6, "ms")
    } else {
        (v / 1e9, "s")
    };
    if x >= 100.0 {
        format!("{x:.0}{unit}")
    } else if x >= 10.0 {
        format!("{x:.1}{unit}")
    } else {
        format!("{x:.2}{unit}")
    }
}

/// A bpftrace bucket bound in ns: `0`, `512`, `1K`, `16M`, `2G` (powers
/// of 1024).
pub fn bpftrace_bound(d: Dur) -> String {
    let v = d.ns();
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for (scale, suffix) in UNITS {
        if v >= scale && v.is_multiple_of(scale) {
            return format!("{}{suffix}", v / scale);
        }
    }
    v.to_string()
}

/// The summary table of an experiment, one row per series and counter.
pub fn summary_table(r: &ExperimentResult) -> String {
    summary_table_of(
        r,
        &[Metric::Wait, Metric::Hold, Metric::Span, Metric::Counter],
    )
}

/// Lock waits still going on when the run ended that lasted longer than
/// any wait of their subject that ended: the summary's max, which counts
/// ended waits only, understates those subjects. One line each, or
/// nothing.
pub fn open_waits_note(r: &ExperimentResult) -> String {
    let mut out = String::new();
    for v in &r.variants {
        for (subject, open) in &v.open_waits {
            let ended = v
                .series(Metric::Wait, subject)
                .map_or(Dur::ZERO, |s| s.hist.max());
            if *open > ended {
                out.push_str(&format!(
                    "note: {} wait {subject}: one was still going on when the run ended, {} so far \
                     (the table's max, {}, counts waits that ended)\n",
                    v.variant,
                    human(*open),
                    human(ended),
                ));
            }
        }
    }
    out
}

/// The hung-task warnings each variant's runs logged (`hung_task/...`
/// counters, R100-R101): one line per variant that has any, or nothing.
pub fn hung_tasks_note(r: &ExperimentResult) -> String {
    let mut out = String::new();
    for v in &r.variants {
        let count = |name: &str| {
            (v.counters.iter())
                .find(|c| c.subject == name)
                .map_or(0, |c| c.value)
        };
        let reports = count("hung_task/reports");
        if reports > 0 {
            out.push_str(&format!(
                "note: {} hung tasks: {reports} report(s) by khungtaskd, {} warning(s) \
                 logged (\"INFO: task ... blocked for more than N seconds\") over {} run(s)\n",
                v.variant,
                count("hung_task/warnings"),
                v.replications,
            ));
        }
    }
    out
}

/// The summary table restricted to some metrics (a compact view: waits and
/// spans only).
pub fn summary_table_of(r: &ExperimentResult, metrics: &[Metric]) -> String {
    let mut rows: Vec<[String; 9]> = vec![[
        "variant", "metric", "subject", "count", "mean", "p50", "p99", "p99.9", "max",
    ]
    .map(String::from)];
    for v in &r.variants {
        for s in v.series.iter().filter(|s| metrics.contains(&s.metric)) {
            let h = &s.hist;
            rows.push([
                v.variant.clone(),
                s.metric.as_str().into(),
                s.subject.clone(),
                h.count().to_string(),
                human(h.mean()),
                human(h.quantile(0.5)),
                human(h.quantile(0.99)),
                human(h.quantile(0.999)),
                human(h.max()),
            ]);
        }
        for c in v
            .counters
            .iter()
            .filter(|_| metrics.contains(&Metric::Counter))
        {
            rows.push([
                v.variant.clone(),
                Metric::Counter.as_str().into(),
                c.subject.clone(),
                c.value.to_string(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
    }
    aligned(&rows, 3)
}

/// One series as a bpftrace `hist()` printout (values in ns), line for
/// line as bpftrace prints a bucket (TextOutput::hist_to_str): every
/// bucket from the first to the last that holds a sample, empty ones
/// too; the label left-aligned in 16 columns, the count right-aligned in
/// 8, and a bar of `count / max * 52` `@`s (in `f32`, truncated), so a
/// printout diffs line by line against a `hist()` of the same values.
pub fn log2_histogram(variant: &str, s: &Series) -> String {
    let mut out = format!("@{}[{}, {}] (ns):\n", s.metric.as_str(), s.subject, variant);
    let buckets = s.hist.log2_buckets();
    let top = buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let mut row = |lo: Dur, hi: Dur, count: u64| {
        let label = if hi - lo == Dur(1) {
            format!("[{}]", bpftrace_bound(lo))
        } else {
            format!("[{}, {})", bpftrace_bound(lo), bpftrace_bound(hi))
        };
        let bar = (count as f32 / top as f32 * 52.0) as usize;
        let _ = writeln!(out, "{label:<16}{count:>8} |{:<52}|", "@".repeat(bar));
    };
    let mut next: Option<Dur> = None;
    for b in &buckets {
        // The empty buckets between two that hold samples.
        while let Some(lo) = next.filter(|&lo| lo < b.lo) {
            let (_, hi) = sim::stats::log2_bounds(lo);
            row(lo, hi, 0);
            next = Some(hi);
        }
        row(b.lo, b.hi, b.count);
        next = Some(b.hi);
    }
    out
}

/// A before/after table, one block per wait or span subject, that fits a
/// 72-column email: count, mean, p50, p99, p99.9, max per variant and the
/// ratio of each variant's p99.9 and max to the base's. With `per_rep`
/// holding more than one replication per variant, three spread lines give
/// the min/median/max over replications of the mean, p99.9 and max. Then one
/// block per named counter: its value per variant, the ratio to the base,
/// and the spread over replications.
pub fn compare_table(
    r: &ExperimentResult,
    per_rep: &[Vec<crate::VariantResult>],
    base: usize,
    counters: &[&str],
) -> String {
    let mut out = String::new();
    let Some(b) = r.variants.get(base) else {
        return out;
    };
    let subjects: Vec<(Metric, &str)> = b
        .series
        .iter()
        .filter(|s| matches!(s.metric, Metric::Wait | Metric::Span) && s.hist.count() > 0)
        .map(|s| (s.metric, s.subject.as_str()))
        .collect();
    let ratio = |x: Dur, y: Dur| ratio_text(x.as_nanos_f64(), y.as_nanos_f64(), 2);
    let spread = |vals: &mut Vec<Dur>| min_med_max(vals, "/");
    for (metric, subject) in subjects {
        let _ = writeln!(out, "{} {subject}", metric.as_str());
        let _ = writeln!(
            out,
            " {:<10} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>5} {:>5}",
            "variant", "count", "mean", "p50", "p99", "p99.9", "max", "x999", "xmax"
        );
        let bh = &b.series(metric, subject).expect("base has it").hist;
        for (vi, v) in r.variants.iter().enumerate() {
            let Some(s) = v.series(metric, subject) else {
                continue;
            };
            let h = &s.hist;
            let name = column_name(&v.variant);
            let _ = writeln!(
                out,
                " {:<10} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>5} {:>5}",
                name,
                h.count(),
                human(h.mean()),
                human(h.quantile(0.5)),
                human(h.quantile(0.99)),
                human(h.quantile(0.999)),
                human(h.max()),
                ratio(h.quantile(0.999), bh.quantile(0.999)),
                ratio(h.max(), bh.max()),
            );
            let Some(reps) = per_rep.get(vi).filter(|r| r.len() > 1) else {
                continue;
            };
            let mut mean: Vec<Dur> = Vec::new();
            let mut p999: Vec<Dur> = Vec::new();
            let mut max: Vec<Dur> = Vec::new();
            for rep in reps {
                if let Some(s) = rep.series(metric, subject) {
                    mean.push(s.hist.mean());
                    p999.push(s.hist.quantile(0.999));
                    max.push(s.hist.max());
                }
            }
            if !p999.is_empty() {
                let n = p999.len();
                let _ = writeln!(
                    out,
                    " {:<10} mean  over {n} reps, min/med/max: {}",
                    "",
                    spread(&mut mean)
                );
                let _ = writeln!(
                    out,
                    " {:<10} p99.9 over {n} reps, min/med/max: {}",
                    "",
                    spread(&mut p999)
                );
                let _ = writeln!(
                    out,
                    " {:<10} max   over {n} reps, min/med/max: {}",
                    "",
                    spread(&mut max)
                );
            }
        }
        out.push('\n');
    }
    for &subject in counters {
        let Some(bc) = b.counter(subject) else {
            continue;
        };
        let _ = writeln!(out, "counter {subject}");
        for (vi, v) in r.variants.iter().enumerate() {
            let Some(c) = v.counter(subject) else {
                continue;
            };
            let name = column_name(&v.variant);
            let x = ratio_text(c as f64, bc as f64, 3);
            let _ = write!(out, " {name:<10} {c:>14} {x:>7}");
            let mut reps: Vec<u64> = per_rep
                .get(vi)
                .filter(|r| r.len() > 1)
                .map(|r| r.iter().filter_map(|v| v.counter(subject)).collect())
                .unwrap_or_default();
            if !reps.is_empty() {
                reps.sort_unstable();
                let _ = write!(
                    out,
                    "  reps {}/{}/{}",
                    reps[0],
                    reps[reps.len() / 2],
                    reps[reps.len() - 1]
                );
            }
            out.push('\n');
        }
        out.push('\n');
    }
    // The names cut to fit, in full.
    let mut cut: Vec<String> = r
        .variants
        .iter()
        .filter(|v| v.variant.chars().count() > NAME_COLUMN)
        .map(|v| format!("{} = {},", column_name(&v.variant), v.variant))
        .collect();
    if let Some(last) = cut.last_mut() {
        last.pop();
        let mut line = String::from("names cut to fit:");
        for c in cut {
            if line.len() + 1 + c.len() > 72 {
                let _ = writeln!(out, "{line}");
                line = String::from("  ");
            } else {
                line.push(' ');
            }
            line.push_str(&c);
        }
        let _ = writeln!(out, "{line}\n");
    }
    out
}

/// Width of the variant column of [`compare_table`].
const NAME_COLUMN: usize = 10;

/// A variant's name in the table: cut to its column with a `~` at the
/// end when longer (`watchers-~`), so a cut name is not read as another.
fn column_name(name: &str) -> String {
    if name.chars().count() <= NAME_COLUMN {
        name.to_string()
    } else {
        let head: String = name.chars().take(NAME_COLUMN - 1).collect();
        format!("{head}~")
    }
}

/// "min/median/max" of durations (the upper median of an even count),
/// the three separated by `sep`.
fn min_med_max(vals: &mut [Dur], sep: &str) -> String {
    vals.sort_unstable();
    let med = vals[vals.len() / 2];
    format!(
        "{}{sep}{}{sep}{}",
        human(vals[0]),
        human(med),
        human(vals[vals.len() - 1])
    )
}

/// The spread over replications of each wait and span of each variant
/// (`per_rep[variant][replication]`): min / median / max of the mean, the
/// p99.9 and the max, two lines per series. Empty with one replication.
pub fn spread_table(per_rep: &[Vec<crate::VariantResult>]) -> String {
    let mut out = String::new();
    let n = per_rep.iter().map(Vec::len).max().unwrap_or(0);
    if n < 2 {
        return out;
    }
    let _ = writeln!(out, "over {n} replications, min / median / max:");
    for reps in per_rep {
        let Some(first) = reps.first() else {
            continue;
        };
        for s in first
            .series
            .iter()
            .filter(|s| matches!(s.metric, Metric::Wait | Metric::Span))
        {
            let hists: Vec<_> = reps
                .iter()
                .filter_map(|r| r.series(s.metric, &s.subject))
                .map(|x| &x.hist)
                .filter(|h| h.count() > 0)
                .collect();
            if hists.is_empty() {
                continue;
            }
            let of = |f: &dyn Fn(&LatencyHist) -> Dur| {
                let mut v: Vec<Dur> = hists.iter().map(|h| f(h)).collect();
                min_med_max(&mut v, " / ")
            };
            let mean = of(&|h| h.mean());
            let p999 = of(&|h| h.quantile(0.999));
            let max = of(&|h| h.max());
            let _ = writeln!(
                out,
                "{} {} {}\n  mean {mean}   p99.9 {p999}   max {max}",
                first.variant,
                s.metric.as_str(),
                s.subject
            );
        }
    }
    out
}

/// `x / y` to `decimals` places; 0/0 is "1.00" (nothing changed) and x/0
/// is "inf".
fn ratio_text(x: f64, y: f64, decimals: usize) -> String {
    if y == 0.0 {
        if x == 0.0 { "1.00" } else { "inf" }.to_string()
    } else {
        format!("{:.decimals$}", x / y)
    }
}

/// `x / y` as a factor, `0.27x` or `5.40x` (three decimals below 0.1, so
/// that a 300x improvement is not `0.00x`); `1.00x` for 0/0, `inf` for x/0.
fn factor(x: f64, y: f64) -> String {
    let small = y != 0.0 && x / y < 0.1;
    match ratio_text(x, y, if small { 3 } else { 2 }) {
        inf if inf == "inf" => inf,
        r => format!("{r}x"),
    }
}

/// A threshold as written: `1ms`, `250us`, `1s` (exact units), else
/// [`human`].
fn threshold_name(t: Dur) -> String {
    let v = t.ns();
    for (scale, unit) in [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ] {
        if v >= scale && v.is_multiple_of(scale) {
            return format!("{}{unit}", v / scale);
        }
    }
    human(t)
}

/// Rows as columns, the first `left` aligned left, the rest right.
fn aligned<R: AsRef<[String]>>(rows: &[R], left: usize) -> String {
    let mut width = vec![0usize; rows.iter().map(|r| r.as_ref().len()).max().unwrap_or(0)];
    for row in rows {
        for (w, cell) in width.iter_mut().zip(row.as_ref()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.as_ref().iter().enumerate() {
            if i < left {
                let _ = write!(line, "{cell:<w$}  ", w = width[i]);
            } else {
                let _ = write!(line, "{cell:>w$}  ", w = width[i]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The headline of a run as rows of cells: the table of every variant's
/// figures, and with several variants the table of ratios to the first
/// (see [`headline_table`], which prints them; `report.html` shows the
/// same rows).
pub struct Headline {
    /// A header row, then one row per variant and wait or span.
    pub table: Vec<Vec<String>>,
    /// With several variants: the first variant's name and the ratio
    /// table (a header row, then one row per later variant and subject).
    pub ratios: Option<(String, Vec<Vec<String>>)>,
}

/// What the ratio table of a headline reads, over the variant `base`.
pub fn ratio_legend(base: &str) -> String {
    format!(
        "after/before: each variant's figure over {base}'s (0.27x: 73% less; 5.40x: 5.4 times; =: none in either)"
    )
}

/// The rows of a run's headline: per lock wait and per span, count, p50,
/// p99, p99.9, p99.99, max and the exact number of samples longer than
/// each of `above` (`-` when the run did not count it); with several
/// variants, each one's figures over the first's.
pub fn headline(r: &ExperimentResult, above: &[Dur]) -> Headline {
    let metrics = [Metric::Wait, Metric::Span];
    let over = |h: &LatencyHist, t: Dur| h.count_above(t);
    let mut rows: Vec<Vec<String>> = vec![["variant", "metric", "subject", "count"]
        .iter()
        .map(|c| c.to_string())
        .chain(["p50", "p99", "p99.9", "p99.99", "max"].map(String::from))
        .chain(above.iter().map(|t| format!(">{}", threshold_name(*t))))
        .collect()];
    for v in &r.variants {
        for s in v.series.iter().filter(|s| metrics.contains(&s.metric)) {
            let h = &s.hist;
            let mut row = vec![
                v.variant.clone(),
                s.metric.as_str().into(),
                s.subject.clone(),
                h.count().to_string(),
            ];
            row.extend([0.5, 0.99, 0.999, 0.9999].map(|q| human(h.quantile(q))));
            row.push(human(h.max()));
            row.extend((above.iter()).map(|t| over(h, *t).map_or("-".into(), |n| n.to_string())));
            rows.push(row);
        }
    }
    let mut out = Headline {
        table: rows,
        ratios: None,
    };
    let Some(base) = r.variants.first() else {
        return out;
    };
    if r.variants.len() < 2 {
        return out;
    }
    let mut rows: Vec<Vec<String>> = vec![["after/before", "metric", "subject"]
        .iter()
        .map(|c| c.to_string())
        .chain(["p99", "p99.9", "p99.99", "max"].map(String::from))
        .chain(above.iter().map(|t| format!(">{}", threshold_name(*t))))
        .collect()];
    for v in &r.variants[1..] {
        for s in v.series.iter().filter(|s| metrics.contains(&s.metric)) {
            let Some(b) = base.series(s.metric, &s.subject) else {
                continue;
            };
            let (h, bh) = (&s.hist, &b.hist);
            let mut row = vec![
                format!("{}/{}", v.variant, base.variant),
                s.metric.as_str().into(),
                s.subject.clone(),
            ];
            row.extend(
                [0.99, 0.999, 0.9999]
                    .map(|q| factor(h.quantile(q).as_nanos_f64(), bh.quantile(q).as_nanos_f64())),
            );
            row.push(factor(h.max().as_nanos_f64(), bh.max().as_nanos_f64()));
            row.extend(above.iter().map(|t| match (over(h, *t), over(bh, *t)) {
                (Some(0), Some(0)) => "=".into(),
                (Some(x), Some(y)) => factor(x as f64, y as f64),
                _ => "-".into(),
            }));
            rows.push(row);
        }
    }
    out.ratios = Some((base.variant.clone(), rows));
    out
}

/// The headline of a run, its first screen: [`headline`]'s tables. A
/// tail hides behind percentiles when most waits are uncontended (zero):
/// the counts above show it. With several variants, a second table gives
/// each variant's figures over the first's (after/before).
pub fn headline_table(r: &ExperimentResult, above: &[Dur]) -> String {
    let h = headline(r, above);
    let mut out = aligned(&h.table, 3);
    if let Some((base, rows)) = &h.ratios {
        let _ = writeln!(out, "\n{}", ratio_legend(base));
        out.push_str(&aligned(rows, 3));
    }
    out
}

/// The one-screen overview of several experiments: for each, its headline
/// subjects (the figures the experiment exists to show) per variant: count,
/// p99.9, max and the exact counts above `above` (two thresholds), with
/// ratios of p99.9, max and the first count to the first variant. A
/// counter fills `count` and its ratio sits under `xp99.9`. 72 columns.
pub fn overview(blocks: &[(&ExperimentResult, &[(Metric, &str)])], above: [Dur; 2]) -> String {
    let mut out = String::new();
    let names = above.map(|t| format!(">{}", threshold_name(t)));
    let _ = writeln!(
        out,
        "  {:<12}{:>9}{:>8}{:>8}{:>7}{:>7}{:>7}{:>6}{:>6}",
        "variant",
        "count",
        "p99.9",
        "max",
        names[0],
        names[1],
        "xp99.9",
        "xmax",
        format!("x{}", names[0])
    );
    // Three decimals below 0.1, so that a 300x improvement is not "0.00".
    let ratio = |x: f64, y: f64| {
        let small = y != 0.0 && x / y < 0.1;
        ratio_text(x, y, if small { 3 } else { 2 })
    };
    let count = |h: &LatencyHist, t: Dur| h.count_above(t).map_or("-".into(), |n| n.to_string());
    for (r, headline) in blocks {
        for &(metric, subject) in headline.iter() {
            let _ = writeln!(out, "{} {} {subject}", r.experiment, metric.as_str());
            let Some(base) = r.variants.first() else {
                continue;
            };
            for v in &r.variants {
                let name: String = v.variant.chars().take(12).collect();
                if metric == Metric::Counter {
                    let (Some(c), b) = (v.counter(subject), base.counter(subject)) else {
                        continue;
                    };
                    let x = ratio(c as f64, b.unwrap_or(0) as f64);
                    let _ = writeln!(
                        out,
                        "  {name:<12}{c:>9}{:>8}{:>8}{:>7}{:>7}{x:>7}",
                        "-", "-", "-", "-"
                    );
                    continue;
                }
                let (Some(s), Some(b)) = (v.series(metric, subject), base.series(metric, subject))
                else {
                    continue;
                };
                let (h, bh) = (&s.hist, &b.hist);
                let x_above = match (h.count_above(above[0]), bh.count_above(above[0])) {
                    (Some(0), Some(0)) => "=".to_string(),
                    (Some(x), Some(y)) => ratio(x as f64, y as f64),
                    _ => "-".to_string(),
                };
                let _ = writeln!(
                    out,
                    "  {name:<12}{:>9}{:>8}{:>8}{:>7}{:>7}{:>7}{:>6}{:>6}",
                    h.count(),
                    human(h.quantile(0.999)),
                    human(h.max()),
                    count(h, above[0]),
                    count(h, above[1]),
                    ratio(
                        h.quantile(0.999).as_nanos_f64(),
                        bh.quantile(0.999).as_nanos_f64()
                    ),
                    ratio(h.max().as_nanos_f64(), bh.max().as_nanos_f64()),
                    x_above,
                );
            }
        }
    }
    out
}

/// The `n` series with the largest maximum (waits and spans first), with
/// their variant, for the terminal.
pub fn worst_series(r: &ExperimentResult, n: usize) -> Vec<(&str, &Series)> {
    let mut all: Vec<(&str, &Series)> = r
        .variants
        .iter()
        .flat_map(|v| v.series.iter().map(move |s| (v.variant.as_str(), s)))
        .filter(|(_, s)| s.metric != Metric::Hold && s.hist.max() > Dur::ZERO)
        .collect();
    all.sort_by(|a, b| {
        b.1.hist
            .max()
            .cmp(&a.1.hist.max())
            .then_with(|| (a.0, &a.1.subject).cmp(&(b.0, &b.1.subject)))
    });
    all.truncate(n);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Counter, Series, VariantResult};
    use sim::stats::Windows;

    #[test]
    fn control_characters_are_escaped_and_line_breaks_kept() {
        assert_eq!(escape_controls("plain"), "plain");
        assert_eq!(
            escape_controls("a\u{1b}[31mred\r\u{7}\ttab\nnext"),
            "a\\u{1b}[31mred\\u{d}\\u{7}\\u{9}tab\nnext"
        );
    }

    #[test]
    fn human_units() {
        assert_eq!(human(Dur(850)), "850ns");
        assert_eq!(human(Dur(1_300)), "1.30us");
        assert_eq!(human(Dur(236_000_000)), "236ms");
        assert_eq!(human(Dur(72_000_000_000)), "72.0s");
    }

    #[test]
    fn bpftrace_labels() {
        assert_eq!(bpftrace_bound(Dur(0)), "0");
        assert_eq!(bpftrace_bound(Dur(512)), "512");
        assert_eq!(bpftrace_bound(Dur(1024)), "1K");
        assert_eq!(bpftrace_bound(Dur(16 << 20)), "16M");
    }

    #[test]
    fn a_log2_histogram_prints_as_bpftrace_prints_hist() {
        // Zeros, one 1 ns wait, three in [4, 8) and one in [1K, 2K): the
        // lines bpftrace's hist() prints for the same values, empty
        // buckets between included.
        let v = one_wait("base", &[0, 0, 1, 4, 5, 7, 1500], &[]);
        let text = log2_histogram("base", &v.series[0]);
        let want = [
            "@wait[L/read/g, base] (ns):",
            "[0]                    2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |",
            "[1]                    1 |@@@@@@@@@@@@@@@@@                                   |",
            "[2, 4)                 0 |                                                    |",
            "[4, 8)                 3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|",
            "[8, 16)                0 |                                                    |",
            "[16, 32)               0 |                                                    |",
            "[32, 64)               0 |                                                    |",
            "[64, 128)              0 |                                                    |",
            "[128, 256)             0 |                                                    |",
            "[256, 512)             0 |                                                    |",
            "[512, 1K)              0 |                                                    |",
            "[1K, 2K)               1 |@@@@@@@@@@@@@@@@@                                   |",
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), want, "{text}");
    }

    /// A variant with one wait series, `L/read/g`'s `waits` (ns), and the
    /// waits still going on at the horizon.
    fn one_wait(variant: &str, waits: &[u64], open: &[(&str, u64)]) -> VariantResult {
        let mut hist = LatencyHist::new();
        for &w in waits {
            hist.record(Dur(w));
        }
        VariantResult {
            variant: variant.into(),
            series: vec![Series {
                metric: Metric::Wait,
                subject: "L/read/g".into(),
                hist: hist.into(),
                windows: Windows::new(sim::Dur::from_secs(10)),
            }],
            counters: vec![],
            horizon: sim::SimTime(1),
            events: 1,
            replications: 1,
            open_waits: open.iter().map(|&(s, ns)| (s.into(), Dur(ns))).collect(),
        }
    }

    #[test]
    fn open_waits_longer_than_any_ended_one_get_a_note() {
        let open = [
            ("L/read/g", 119_000_000_000),
            ("L/read/h", 1_000),
            ("M/lock/x", 3_000),
        ];
        let r = ExperimentResult {
            experiment: "e".into(),
            variants: vec![one_wait("before", &[5_000], &open)],
        };
        // The 119 s wait outlasts the 5 us that ended; the subjects with
        // no ended wait get a note for any wait still going on.
        assert_eq!(
            open_waits_note(&r),
            "note: before wait L/read/g: one was still going on when the run ended, \
             119s so far (the table's max, 5.00us, counts waits that ended)\n\
             note: before wait L/read/h: one was still going on when the run ended, \
             1.00us so far (the table's max, 0ns, counts waits that ended)\n\
             note: before wait M/lock/x: one was still going on when the run ended, \
             3.00us so far (the table's max, 0ns, counts waits that ended)\n"
        );
        // A wait still going on that is shorter than one that ended: no note.
        let r = ExperimentResult {
            experiment: "e".into(),
            variants: vec![one_wait("before", &[5_000], &[("L/read/g", 4_000)])],
        };
        assert_eq!(open_waits_note(&r), "");
    }

    #[test]
    fn hung_task_reports_get_a_note_only_when_there_are_some() {
        let mut v = one_wait("base", &[5_000], &[]);
        let r = ExperimentResult {
            experiment: "e".into(),
            variants: vec![v.clone()],
        };
        assert_eq!(hung_tasks_note(&r), "");
        v.counters = vec![
            Counter {
                subject: "hung_task/reports".into(),
                value: 12,
            },
            Counter {
                subject: "hung_task/warnings".into(),
                value: 10,
            },
        ];
        let r = ExperimentResult {
            experiment: "e".into(),
            variants: vec![v],
        };
        assert_eq!(
            hung_tasks_note(&r),
            "note: base hung tasks: 12 report(s) by khungtaskd, 10 warning(s) logged \
             (\"INFO: task ... blocked for more than N seconds\") over 1 run(s)\n"
        );
    }

    #[test]
    fn compare_table_marks_cut_names_and_gives_them_in_full() {
        let r = ExperimentResult {
            experiment: "e".into(),
            variants: vec![
                one_wait("base", &[1000], &[]),
                one_wait("root-reuse", &[1000], &[]),
                one_wait("inode-requested", &[2000], &[]),
                one_wait("watchers-shortcut", &[500], &[]),
            ],
        };
        let t = compare_table(&r, &[], 0, &[]);
        // Ten characters fit; a longer name ends in `~` at the tenth.
        assert!(t.contains("\n root-reuse "), "{t}");
        assert!(t.contains("\n inode-req~ "), "{t}");
        assert!(t.contains("\n watchers-~ "), "{t}");
        assert!(
            t.ends_with(
                "names cut to fit: inode-req~ = inode-requested,\n  \
                 watchers-~ = watchers-shortcut\n\n"
            ),
            "{t}"
        );
        assert!(t.lines().all(|l| l.chars().count() <= 72), "{t}");
        // No name cut, no legend.
        let r = ExperimentResult {
            experiment: "e".into(),
            variants: vec![one_wait("before", &[1000], &[])],
        };
        assert!(!compare_table(&r, &[], 0, &[]).contains("cut to fit"));
    }

    #[test]
    fn spread_table_gives_min_median_max_over_replications() {
        let rep = |waits: &[u64]| one_wait("base", waits, &[]);
        let one = vec![vec![rep(&[1000])]];
        assert_eq!(spread_table(&one), "");
        let three = vec![vec![rep(&[3000]), rep(&[1000, 3000]), rep(&[5000])]];
        assert_eq!(
            spread_table(&three),
            "over 3 replications, min / median / max:\n\
             base wait L/read/g\n  \
             mean 2.00us / 3.00us / 5.00us   p99.9 3.00us / 3.00us / 5.00us   \
             max 3.00us / 3.00us / 5.00us\n"
        );
    }
}
