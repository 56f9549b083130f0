//! `convoy check`: a fleet report (a sweep with an observation and an
//! exposure) run, judged against what was observed, and the blame chain
//! of a representative run.

use super::flags::CheckArgs;
use super::{run, sweep};
use crate::runner;
use crate::sweep::spec::CheckSpec;
use crate::sweep::{SweepOptions, SweepSpec};
use crate::world::Limits;
use anyhow::bail;
use anyhow::Context;
use std::path::PathBuf;

/// A validated `check`: the report read and expanded, where its runs go,
/// the shard chosen.
pub(super) struct CheckPlan {
    spec: SweepSpec,
    check: CheckSpec,
    out: PathBuf,
    opts: SweepOptions,
    /// `--splitting`: how to split.
    split: Option<crate::sweep::split::SplitOptions>,
}

/// Reads the report (it must have an observation and an exposure) and
/// chooses the directory and the shard.
pub(super) fn plan(a: CheckArgs) -> anyhow::Result<CheckPlan> {
    let mut spec = crate::sweep::parse(&crate::sweep::spec::report_source(&a.report)?)?;
    spec.machine = a.machine;
    let Some(check) = spec.check.clone() else {
        bail!(
            "{}: a report needs `[observation]` and `[exposure]` (docs/sweeps.md)",
            a.report
        );
    };
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from("out").join(format!("check-{}", spec.name)));
    let opts = sweep::options(&a.points, out.clone())?;
    let f = &spec.figures[check.figure];
    if a.splitting && (f.stat != output::Stat::Max || f.metric == output::Metric::Counter) {
        bail!(
            "{}: --splitting: the observation must be the max of a wait, hold or span (it is {} of {})",
            a.report,
            f.stat.as_str(),
            f.metric.as_str()
        );
    }
    let split = a.splitting.then(|| crate::sweep::split::SplitOptions {
        copies: a.copies as usize,
        replicas: a.replicas as usize,
        jobs: a.points.jobs,
        ..Default::default()
    });
    Ok(CheckPlan {
        spec,
        check,
        out,
        opts,
        split,
    })
}

/// Runs the report's points not done yet; when all are done, prints the
/// judgement and a representative run's blame chain.
pub(super) fn execute(p: CheckPlan) -> anyhow::Result<()> {
    let (spec, c, out) = (&p.spec, &p.check, &p.out);
    let r = crate::sweep::run_sweep(spec, &p.opts)?;
    if r.missing > 0 {
        println!(
            "{} of {} runs are in other shards: `convoy merge DIR... --out DIR`, then \
             `convoy check REPORT --out DIR` judges them all",
            r.missing, r.header.points
        );
        return Ok(());
    }
    let points = crate::sweep::store::read_points(out, &r.header)?;
    let verdict = crate::sweep::check::format(spec, c, &points);
    let blame = check_blame(spec, c, &r.header, &points)?;
    print!("{verdict}{blame}");
    // The page holds no wall time: it replays byte-identically.
    let (split, estimate) = match &p.split {
        Some(o) => {
            let (printed, page, estimate) = splitting(spec, c, &r.header, o, out)?;
            print!("{printed}");
            (Some(page), Some(estimate))
        }
        None => (None, None),
    };
    let f = &spec.figures[c.figure];
    let title = format!(
        "check {}: {} {} {}",
        spec.name,
        f.stat.as_str(),
        f.metric.as_str(),
        f.subject
    );
    let runs = crate::sweep::check::run_values(c, &points);
    let plot = output::check_plot::CheckPlot {
        title: &title,
        runs: &runs,
        observed: c.observed,
        duration: !f.stat.is_count(),
        split: estimate,
    };
    let plots = output::check_plot::write_check_plot(out, &plot)?;
    write_report(
        out,
        spec,
        &r,
        &points,
        (&verdict, &blame),
        split.as_deref(),
        &plots,
    )?;
    println!("files written, in {}/:", out.display());
    for line in listing(out)? {
        println!("  {line}");
    }
    Ok(())
}

/// Writes the check's `report.html` over the sweep's: the verdict and
/// the blame chain as printed, then the runs' sections.
fn write_report(
    out: &std::path::Path,
    spec: &SweepSpec,
    r: &crate::sweep::run::SweepReport,
    points: &std::collections::BTreeMap<usize, crate::sweep::store::Stored>,
    (verdict, blame): (&str, &str),
    split: Option<&str>,
    check_plots: &[std::path::PathBuf],
) -> anyhow::Result<()> {
    use output::report::Page;
    let h = &r.header;
    let mut page = Page::new(&format!("convoy check: {}", spec.name));
    page.para(&format!(
        "{}: {} point(s) x {} replication(s), variant(s) {}; seed {}.",
        h.scenario,
        h.points,
        h.reps,
        h.variants.join(", "),
        h.seed
    ));
    page.heading("Verdict");
    page.pre(verdict);
    page.heading("Blame: a representative run's worst wait");
    if blame.is_empty() {
        page.para("No run to explain.");
    } else {
        page.pre(blame);
    }
    if let Some(text) = split {
        page.heading("Splitting: the chance of a rare stall");
        page.pre(text);
    }
    if !check_plots.is_empty() {
        page.heading("How far out the observation is");
        output::report::plots_section(
            &mut page,
            check_plots,
            "The share of the runs one by one at or above each value (log axes), the observation (red), and the splitting estimate at it when asked (black, with its 95% interval).",
        );
    }
    let records: Vec<_> = points.values().map(|s| s.record.clone()).collect();
    let csv = output::sweep_table::points_csv(h, &records);
    output::report::sweep_sections(&mut page, h, points.len(), &csv, &r.plots, &r.plot_note);
    page.write(out)?;
    Ok(())
}

/// `--splitting`: the report's observation estimated by multilevel
/// splitting over its points (each equally likely, as for the runs one
/// by one), written to `splitting.csv` and `splitting-estimate.csv`; the
/// text to print (with the wall time) and the text for the page.
fn splitting(
    spec: &SweepSpec,
    c: &CheckSpec,
    h: &output::sweep_table::SweepHeader,
    o: &crate::sweep::split::SplitOptions,
    out: &std::path::Path,
) -> anyhow::Result<(String, String, (f64, f64, f64))> {
    use crate::sweep::split;
    let f = &spec.figures[c.figure];
    let start = std::time::Instant::now();
    let compiled = split::compile_points(spec, h)?;
    let e = split::estimate(&compiled, (f.metric, &f.subject), c.observed, spec.seed, o)?;
    let wall = start.elapsed().as_secs_f64();
    let observed = output::terminal::human(sim::Dur(c.observed));
    output::files::write_atomic(out, "splitting.csv", split::stages_csv(&e).as_bytes())?;
    output::files::write_atomic(
        out,
        "splitting-estimate.csv",
        split::estimate_csv(&e, o, c.observed, c.run).as_bytes(),
    )?;
    Ok((
        split::format(&e, o, &observed, c.run, Some(wall)),
        split::format(&e, o, &observed, c.run, None),
        (e.p, e.lo, e.hi),
    ))
}

/// What a check's directory holds, sorted: its files, and each directory
/// with the number of entries in it.
fn listing(dir: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let read = |d: &std::path::Path| {
        std::fs::read_dir(d).with_context(|| format!("cannot read {}", d.display()))
    };
    let mut lines = Vec::new();
    for e in read(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if e.file_type()?.is_dir() {
            lines.push(format!("{name}/ ({} entries)", read(&e.path())?.count()));
        } else {
            lines.push(name);
        }
    }
    lines.sort();
    Ok(lines)
}

/// The blame chain of a representative run of a report: the run closest
/// above the observation (else the worst), its worst wait of the observed
/// subject when that is a wait, else its worst wait.
fn check_blame(
    spec: &SweepSpec,
    c: &CheckSpec,
    h: &output::sweep_table::SweepHeader,
    points: &std::collections::BTreeMap<usize, crate::sweep::store::Stored>,
) -> anyhow::Result<String> {
    let f = &spec.figures[c.figure];
    let count = f.stat.is_count();
    let Some((i, rep, value)) = crate::sweep::check::representative(c, points, count) else {
        return Ok(String::new());
    };
    let point = &spec.points[i];
    let file = crate::sweep::run::scenario_file(spec, point)?;
    let variant = h.variants.first().unwrap_or(&file.variants[0]).clone();
    let prepared = runner::prepare(&file, std::slice::from_ref(&variant))?;
    let compiled = &prepared[0].0;
    let stats = match f.metric {
        output::Metric::Wait => Some(run::wait_stats(compiled, &f.subject)?),
        _ => None,
    };
    let wanted = crate::blame::Wanted {
        top: 1,
        threshold: None,
        stats,
    };
    let b = crate::blame::blame_run(
        compiled,
        (point.seed, rep as u64),
        Limits::default(),
        wanted,
        false,
    )?;
    let what = if f.metric == output::Metric::Wait {
        "its worst wait of that subject"
    } else {
        "its worst lock wait"
    };
    let params: Vec<String> = spec
        .params
        .iter()
        .zip(&point.values)
        .map(|(p, v)| format!("{}={v}", p.name))
        .collect();
    let shown = if count {
        format!("count {value}")
    } else {
        output::terminal::human(sim::Dur(value))
    };
    let mut s = format!(
        "blame: a representative run (point {i}, replication {rep}: {}; {} {shown}), {what}:\n",
        params.join(", "),
        f.subject,
    );
    // The figure counts a wait the horizon cut off; blame explains waits
    // that ended. Say so when the representative value is such a wait.
    let longest_ended = b.chains.first().map_or(0, |ch| ch.wait.dur().ns());
    if f.metric == output::Metric::Wait && !count && longest_ended < value {
        if b.chains.is_empty() {
            s.push_str("  (still going on when the run ended: no finished wait to explain)\n");
        } else {
            s.push_str("  (still going on when the run ended; below, its longest finished wait)\n");
        }
        if let Some(st) = &b.stuck {
            s.push_str(&format!(
                "  what held it up when the run ended ({}):\n",
                crate::world::stuck_secs(st.at)
            ));
            for l in st.render().lines() {
                s.push_str(&format!("  {l}\n"));
            }
        }
    }
    if b.chains.is_empty() && longest_ended >= value {
        s.push_str("  (no lock wait in it was longer than 0: nothing to explain)\n");
    }
    s.push_str(&crate::blame::render(&b.chains));
    Ok(s)
}
