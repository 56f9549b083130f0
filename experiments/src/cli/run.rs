//! `convoy run`: the flags checked into a [`RunPlan`] (the scenario read,
//! the variants, limits, trace window and blame settings checked), then the
//! runs, their files and the printed results; `--trace` and `--blame` run
//! the first variant again.

use super::flags::RunArgs;
use crate::builtin;
use crate::runner::{self, RunOptions, RunOutput};
use crate::scenario::ScenarioFile;
use crate::world::Limits;
use anyhow::{bail, Context};
use output::files::{write_replications, write_run_dir};
use output::terminal;
use std::path::{Path, PathBuf};

/// `--trace FILE`, its window and its filters (`--trace-tasks`,
/// `--trace-locks`, `--trace-spans`; empty keeps all).
struct TracePlan {
    path: PathBuf,
    from: sim::SimTime,
    to: sim::SimTime,
    tasks: Vec<String>,
    locks: Vec<String>,
    spans: Vec<String>,
    /// `--trace-max-events`.
    max_events: Option<usize>,
}

/// A validated `run`: everything checked before anything runs.
pub(super) struct RunPlan {
    pub file: ScenarioFile,
    pub opts: RunOptions,
    pub out: Option<PathBuf>,
    histograms: usize,
    /// `--verbose`: the full table after the headline.
    verbose: bool,
    /// `--trace FILE` and what to keep of it.
    trace: Option<TracePlan>,
    format: Option<output::formats::Format>,
    /// `--blame`: the worst N, the threshold, the subject.
    blame: Option<(usize, Option<sim::Dur>, Option<String>)>,
}

/// `--above D[,D...]`: distinct durations above zero, in increasing order.
fn parse_above(list: &str) -> anyhow::Result<Vec<sim::Dur>> {
    let mut out = Vec::new();
    for d in list.split(',') {
        let t = sim::time::parse_duration(d.trim())
            .with_context(|| format!("--above {list}: `{}`", d.trim()))?;
        if t == sim::Dur::ZERO {
            bail!("--above {list}: a threshold must be longer than 0");
        }
        if out.contains(&t) {
            bail!("--above {list}: `{}` given twice", d.trim());
        }
        out.push(t);
    }
    out.sort();
    Ok(out)
}

/// `A..B` of durations, either end optional.
fn parse_window(w: &str) -> anyhow::Result<(sim::SimTime, sim::SimTime)> {
    let Some((a, b)) = w.split_once("..") else {
        bail!("--trace-window {w}: expected A..B, e.g. `10s..12s` or `..500ms`");
    };
    let end = |x: &str, default| -> anyhow::Result<sim::SimTime> {
        if x.trim().is_empty() {
            return Ok(default);
        }
        let d =
            sim::time::parse_duration(x.trim()).with_context(|| format!("--trace-window {w}"))?;
        Ok(sim::SimTime(d.0))
    };
    let (from, to) = (end(a, sim::SimTime::ZERO)?, end(b, sim::SimTime::MAX)?);
    if from >= to {
        bail!("--trace-window {w}: the window is empty");
    }
    Ok((from, to))
}

/// The variant `--trace` and `--blame` look at (the first one run), and
/// its compiled scenario.
fn first_variant(p: &RunPlan) -> anyhow::Result<(String, crate::program::Compiled)> {
    let variant = p.opts.variants.first().unwrap_or(&p.file.variants[0]);
    let mut prepared = runner::prepare(&p.file, std::slice::from_ref(variant))?;
    Ok((variant.clone(), prepared.remove(0).0))
}

/// Checks before a run that `path` can be written as a file (a file can
/// be created in the nearest directory of its path that exists), so that
/// the run does not end in an error after writing its results.
fn check_writable(path: &std::path::Path) -> anyhow::Result<()> {
    if path.file_name().is_none() || path.is_dir() {
        bail!("not a file name");
    }
    // The nearest directory that exists must take a new file; the ones
    // below it are made when the file is written, so a run that fails
    // leaves no directory behind.
    let dir = (path.parent().into_iter())
        .flat_map(Path::ancestors)
        .find(|d| !d.as_os_str().is_empty() && d.exists())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    Ok(())
}

/// `bytes` compressed with gzip: a trace named `*.gz` (Perfetto opens it
/// as it is, at about a tenth of the size).
fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes)?;
    enc.finish()
}

/// A world of `c` set up to trace what `tr` asks for; an error names the
/// flag whose task, lock or span name the scenario does not have.
fn traced_world<'c>(
    c: &'c crate::program::Compiled,
    seed: u64,
    limits: crate::world::Limits,
    tr: &TracePlan,
) -> anyhow::Result<crate::world::World<'c>> {
    let mut w = crate::world::World::new(c, seed, 0, limits);
    w.enable_trace(tr.from, tr.to);
    if let Some(n) = tr.max_events {
        w.limit_trace(n);
    }
    let named = |flag: &str, names: &[String], r: Result<(), String>| {
        r.map_err(|e| anyhow::anyhow!("{flag} {}: {e}", names.join(",")))
    };
    if !tr.tasks.is_empty() {
        named("--trace-tasks", &tr.tasks, w.trace_only(&tr.tasks))?;
    }
    if !tr.locks.is_empty() {
        named("--trace-locks", &tr.locks, w.trace_only_locks(&tr.locks))?;
    }
    if !tr.spans.is_empty() {
        named("--trace-spans", &tr.spans, w.trace_only_spans(&tr.spans))?;
    }
    Ok(w)
}

/// Runs the plan's first variant, replication 0, again with a trace, and
/// writes it atomically.
fn write_trace(p: &RunPlan, seed: u64) -> anyhow::Result<()> {
    let Some(tr) = &p.trace else {
        return Ok(());
    };
    let (path, to) = (&tr.path, &tr.to);
    let (variant, c) = first_variant(p)?;
    let c = &c;
    let mut w = traced_world(c, seed, p.opts.limits, tr)?;
    let cap = tr.max_events.unwrap_or(crate::world::trace::MAX_EVENTS);
    if p.opts.progress != crate::progress::ProgressMode::Off {
        eprintln!(
            "convoy: --trace {}: {variant}, replication 0, runs again for the trace: at most {cap} events, about {} of JSON",
            path.display(),
            size_text(cap as f64 * JSON_BYTES_PER_EVENT)
        );
    }
    let mut progress = crate::progress::Progress::new(
        p.opts.progress,
        format!("trace {}", c.experiment),
        crate::progress::Unit::Simulated,
        c.duration.0,
        "{spinner} trace: simulated {percent:>3}% [{bar:30}] elapsed {elapsed} eta {eta}",
    );
    w.run(&mut |t| progress.set(t.0))?;
    progress.finish();
    let trace = w.take_trace().expect("tracing was enabled");
    let cut = trace.truncated_at().map(|at| (at, trace.len()));
    let window_events = trace.window_events();
    let title = format!("{} {variant} seed {seed}", c.experiment);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("--trace {}: not a file name", path.display()))?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let events = trace.len();
    let mut bytes = trace.into_json(&title);
    let json_per_event = bytes.len() as f64 / events.max(1) as f64;
    if name.ends_with(".gz") {
        bytes = gzip(&bytes).with_context(|| format!("--trace {}", path.display()))?;
    }
    output::files::write_atomic(&dir, name, &bytes)?;
    println!(
        "trace: {} ({variant}, replication 0): {events} events, {}",
        path.display(),
        size_text(bytes.len() as f64)
    );
    if let Some((at, kept)) = cut {
        eprintln!(
            "convoy: warning: --trace: {kept} events is all a trace holds; {} stops at {:.6} s, before the window's end at {:.6} s; the whole window holds {window_events} events, about {} of JSON: narrow --trace-window to see the rest, or raise --trace-max-events",
            path.display(),
            at.0 as f64 / 1e9,
            (*to).min(sim::SimTime(c.duration.0)).0 as f64 / 1e9,
            size_text(window_events as f64 * json_per_event)
        );
    }
    Ok(())
}

/// Bytes of JSON an event of a trace takes, about: what the size told
/// before a traced run assumes (96-101 on the built-ins' traces of 200 ms).
const JSON_BYTES_PER_EVENT: f64 = 100.0;

/// `n` bytes as a person reads them: kB under a megabyte, else MB or GB.
fn size_text(n: f64) -> String {
    match n {
        n if n < 1e6 => format!("{} kB", (n / 1e3).ceil() as u64),
        n if n < 1e9 => format!("{:.1} MB", n / 1e6),
        n => format!("{:.1} GB", n / 1e9),
    }
}

/// `--blame`: explains the worst waits of the plan's first variant,
/// replication 0, writes `blame.csv` and `blame-trace.json` into `dir`
/// (the staging directory of `shown`, which the text names), and returns
/// the text to print. A wait still going on at the run's end, longer than
/// the worst explained, gets a note and the tasks that held it up then
/// (blame explains waits that ended). The text comes in two parts: the
/// chains (which `report.html` shows too) and the line naming the files.
fn write_blame(
    p: &RunPlan,
    seed: u64,
    dir: &Path,
    shown: &Path,
) -> anyhow::Result<Option<(String, String)>> {
    use std::fmt::Write;
    let Some((top, threshold, subject)) = &p.blame else {
        return Ok(None);
    };
    let (variant, c) = first_variant(p)?;
    let c = &c;
    let stats = match subject {
        None => None,
        Some(s) => {
            let ids = wait_stats(c, s)?;
            Some(ids)
        }
    };
    let wanted = crate::blame::Wanted {
        top: *top,
        threshold: *threshold,
        stats,
    };
    let b = crate::blame::blame_run(c, (seed, 0), p.opts.limits, wanted, true)?;
    output::files::write_atomic(dir, "blame.csv", &crate::blame::csv(&b.chains))?;
    let mut s = String::new();
    let worst = (b.chains.first()).map_or(sim::Dur::ZERO, |c| c.wait.end - c.wait.start);
    let open_note = match &b.stuck {
        Some(st) if st.so_far > worst => format!(
            "blame explains waits that ended: {} had one still going on when the run \
             ended, {} so far (a longer --duration lets it end)\n\
             what held it up when the run ended ({}):\n{}",
            st.subject,
            terminal::human(st.so_far),
            crate::world::stuck_secs(st.at),
            st.render()
        ),
        _ => String::new(),
    };
    if b.chains.is_empty() {
        let _ = writeln!(s, "\nblame ({variant}, replication 0): no lock waited for");
        s.push_str(&open_note);
        return Ok(Some((s, String::new())));
    }
    if let Some(tr) = b.trace {
        let title = format!("{} {variant} seed {seed}: worst wait", c.experiment);
        output::files::write_atomic(dir, "blame-trace.json", &tr.into_json(&title))?;
    }
    let above = match threshold {
        Some(th) => format!(
            "; {} over {}, in blame.csv with {} more explained",
            b.above_count,
            crate::blame::human(*th),
            b.chains.len() - b.top
        ),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "\nblame ({variant}, replication 0): the {} worst waits{above}",
        b.top
    );
    s.push_str(&crate::blame::render(&b.chains[..b.top]));
    s.push_str(&open_note);
    if b.truncated {
        let _ = writeln!(
            s,
            "(recording cut at {} stretches: later links read `not recorded`)",
            crate::world::recorder::MAX_SEGS
        );
    }
    let files = format!(
        "blame: {}/blame.csv, {}/blame-trace.json (the worst wait)\n",
        shown.display(),
        shown.display()
    );
    Ok(Some((s, files)))
}

/// The ids of the wait statistics named `subject`, or an error listing
/// the wait subjects there are.
pub(super) fn wait_stats(
    c: &crate::program::Compiled,
    subject: &str,
) -> anyhow::Result<Vec<crate::program::StatId>> {
    let waits: Vec<(crate::program::StatId, &str)> = c
        .stats
        .iter_enumerated()
        .filter(|(_, s)| s.metric == output::Metric::Wait)
        .map(|(i, s)| (i, s.subject.as_str()))
        .collect();
    let ids: Vec<crate::program::StatId> = waits
        .iter()
        .filter(|(_, s)| *s == subject)
        .map(|(i, _)| *i)
        .collect();
    if ids.is_empty() {
        let names: Vec<&str> = waits.iter().map(|(_, s)| *s).collect();
        bail!(
            "--blame-subject {subject}: no lock wait of that name; waits: {}",
            names.join(", ")
        );
    }
    Ok(ids)
}

/// The `--set`s of a command that takes `--duration` and `--seed`: the
/// user's, then one per such flag given, and which of them came from a
/// flag (errors in their values name the flag).
pub(super) fn flag_sets(
    user: &[String],
    duration: Option<&str>,
    seed: Option<u64>,
) -> anyhow::Result<(Vec<String>, crate::scenario::source::FlagSets)> {
    let mut sets = user.to_vec();
    let mut flags = Vec::new();
    if let Some(d) = duration {
        sim::time::parse_duration(d).with_context(|| format!("--duration {d}"))?;
        flags.push((sets.len(), format!("--duration {d}")));
        sets.push(format!("scenario.duration={d}"));
    }
    // The seed goes into the resolved scenario too, as the duration does,
    // so that the manifest's scenario and hash are those of the run.
    if let Some(seed) = seed {
        flags.push((sets.len(), format!("--seed {seed}")));
        sets.push(format!("scenario.seed={seed}"));
    }
    Ok((sets, flags))
}

/// Checks `run`'s flags and reads the scenario: the plan.
pub(super) fn plan(a: RunArgs) -> anyhow::Result<RunPlan> {
    let (sets, flags) = flag_sets(&a.sets, a.duration.as_deref(), a.seed)?;
    if a.reps == 0 {
        bail!("--reps 0: at least one replication is needed");
    }
    let mut src = builtin::source(&a.experiment, &sets)?;
    src.flags = flags;
    src.machine = a.machine.clone();
    let file = ScenarioFile::new(src)?;
    for (i, v) in a.variants.iter().enumerate() {
        if !file.variants.contains(v) {
            bail!(
                "{}: no variant `{v}`; this scenario has: {}",
                file.source.name,
                file.variants.join(", ")
            );
        }
        if a.variants[..i].contains(v) {
            bail!("--variant {v}: given twice; each variant runs once");
        }
    }
    let format = match &a.format {
        None => None,
        Some(f) => Some(output::formats::Format::parse(f).with_context(|| {
            format!(
                "--format {f}: expected one of {}",
                output::formats::Format::NAMES.join(", ")
            )
        })?),
    };
    let trace = match &a.trace {
        None => None,
        Some(f) => {
            let (from, to) = match &a.trace_window {
                Some(w) => parse_window(w)?,
                None => (sim::SimTime::ZERO, sim::SimTime::MAX),
            };
            check_writable(f).with_context(|| format!("--trace {}", f.display()))?;
            Some(TracePlan {
                path: f.clone(),
                from,
                to,
                tasks: a.trace_tasks.clone(),
                locks: a.trace_locks.clone(),
                spans: a.trace_spans.clone(),
                max_events: a.trace_max_events,
            })
        }
    };
    let blame = if a.blame {
        let th = match &a.blame_threshold {
            None => None,
            Some(d) => Some(
                sim::time::parse_duration(d).with_context(|| format!("--blame-threshold {d}"))?,
            ),
        };
        if a.blame_top == 0 && th.is_none() {
            bail!("--blame-top 0: nothing to explain; give a count or --blame-threshold");
        }
        Some((a.blame_top, th, a.blame_subject.clone()))
    } else {
        None
    };
    let above = match &a.above {
        None => runner::DEFAULT_ABOVE.to_vec(),
        Some(l) => parse_above(l)?,
    };
    let mut limits = Limits::default();
    if let Some(n) = a.max_events {
        limits.max_events = n;
    }
    if let Some(d) = &a.max_sim_time {
        let d = sim::time::parse_duration(d).with_context(|| format!("--max-sim-time {d}"))?;
        limits.max_sim_time = d;
    }
    if let Some(n) = a.max_tasks {
        limits.max_tasks = n.min(limits.max_tasks);
    }
    if let Some(m) = &a.max_memory {
        let pages = crate::scenario::steps::parse_pages(m)
            .map_err(|e| anyhow::anyhow!("--max-memory {m}: {e}"))?;
        limits.max_memory = pages.saturating_mul(crate::scenario::steps::PAGE_SIZE);
    }
    Ok(RunPlan {
        file,
        opts: RunOptions {
            variants: a.variants,
            seed: a.seed,
            reps: a.reps,
            jobs: a.jobs,
            limits,
            progress: a.progress,
            window_log2: None,
            above,
        },
        out: a.out,
        histograms: a.histograms,
        verbose: a.verbose,
        trace,
        format,
        blame,
    })
}

/// The files of a run directory, and with several replications each
/// one's summary (`replications.csv`).
pub(super) fn write_results(dir: &std::path::Path, out: &RunOutput) -> anyhow::Result<()> {
    write_run_dir(dir, &out.result, &out.manifest)?;
    write_replications(dir, &out.result.experiment, &out.per_rep)?;
    Ok(())
}

/// Runs the plan, writes its files (all or nothing) and prints its
/// results.
pub(super) fn execute(p: RunPlan) -> anyhow::Result<RunOutput> {
    if let Some(tr) = &p.trace {
        // The trace's names are checked before the runs, not after them:
        // the same set-up as the trace's run, within the run's limits.
        let (_, c) = first_variant(&p)?;
        crate::world::check_limits(&c, &p.opts.limits)?;
        traced_world(&c, 0, p.opts.limits, tr)?;
    }
    if let Some(dir) = &p.out {
        output::files::in_the_way(dir)?;
    }
    let out = runner::run(&p.file, &p.opts)?;
    let dir = p
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&out.result.experiment));
    // The trace first: a trace that cannot be written leaves no results.
    write_trace(&p, out.manifest.seed)?;
    let (blame, plots, formatted) = runner::write_all_or_nothing(&dir, |tmp| {
        write_results(tmp, &out)?;
        let blame = write_blame(&p, out.manifest.seed, tmp, &dir)?;
        let plots = plots_note(tmp, &dir, &out.result)?;
        write_report(
            tmp,
            &out,
            &p.opts.above,
            &plots,
            None,
            blame.as_ref().map(|b| b.0.as_str()),
        )?;
        let mut formatted = Vec::new();
        for (f, v) in p
            .format
            .iter()
            .flat_map(|f| out.result.variants.iter().map(move |v| (f, v)))
        {
            let text = f.render(v);
            let name = format!("{}-{}.txt", f.name(), v.variant);
            output::files::write_atomic(tmp, &name, text.as_bytes())?;
            formatted.push((name, text));
        }
        Ok((blame, plots, formatted))
    })?;
    if p.format.is_some() {
        for (name, text) in formatted {
            println!("==> {name} <==\n{text}");
        }
    } else {
        print!("{}", terminal::headline_table(&out.result, &p.opts.above));
        if p.verbose {
            print!("\n{}", terminal::summary_table(&out.result));
        }
        let spread = terminal::spread_table(&out.per_rep);
        if !spread.is_empty() {
            print!("\n{spread}");
        }
        for (variant, s) in terminal::worst_series(&out.result, p.histograms) {
            println!();
            print!("{}", terminal::log2_histogram(variant, s));
        }
    }
    let open = terminal::open_waits_note(&out.result);
    print!("{open}");
    if !open.is_empty() && p.blame.is_none() {
        println!(
            "(--blame, with --blame-subject to pick one, lists what held such a wait up \
             when the run ended)"
        );
    }
    print!("{}", terminal::hung_tasks_note(&out.result));
    println!("{}", plots.note);
    if let Some((chains, files)) = &blame {
        print!("{chains}{files}");
    }
    println!(
        "\n{}: {} variant(s) x {} replication(s), {} events, {:.2}s wall; results in {}/",
        out.result.experiment,
        out.result.variants.len(),
        p.opts.reps,
        out.result.variants.iter().map(|v| v.events).sum::<u64>(),
        out.wall.as_secs_f64(),
        dir.display()
    );
    Ok(out)
}

/// The plots of a run as written: the line `run` prints, the files, and
/// what the report says when there are none.
pub(super) struct Plots {
    pub note: String,
    pub files: Vec<PathBuf>,
    pub report_note: String,
}

/// Writes the plots of a run (PNG and SVG) into `dir` (the staging
/// directory of `shown`, which the text names) and says where they are.
/// Without a font the plots are left out with a warning (the CSV results
/// stand); a plot that cannot be drawn or written is an error, as any
/// other file of the run.
pub(super) fn plots_note(
    dir: &Path,
    shown: &Path,
    r: &output::ExperimentResult,
) -> anyhow::Result<Plots> {
    let headline = builtin::find(&r.experiment).map_or(&[][..], |b| b.headline);
    let none = |note: &str, report: String| Plots {
        note: note.to_string(),
        files: Vec::new(),
        report_note: report,
    };
    Ok(match output::plots::write_plots(dir, r, headline, 4) {
        // Plots are of waits and spans that took time (a log time axis).
        Ok(files) if files.is_empty() => none(
            "plots: none (no wait or span took longer than 0)",
            "No plot: no wait or span took longer than 0.".into(),
        ),
        Ok(files) => {
            // The kinds written: a run shorter than two windows has no
            // per-window plot.
            let kinds: Vec<String> = (output::plots::kinds_written(&files).iter())
                .map(|k| format!("*-{k}"))
                .collect();
            Plots {
                note: format!(
                    "plots: {} files in {}/ ({}; .png and .svg)",
                    files.len(),
                    shown.display(),
                    kinds.join(", ")
                ),
                report_note: format!(
                    "The files beside this page ({}; each also as .svg), for the subjects \
                     with the largest maxima.",
                    kinds.join(", ")
                ),
                files,
            }
        }
        Err(e @ output::plots::PlotError::NoFont) => {
            eprintln!("convoy: warning: no plots: {e}");
            none("", format!("No plot: {e}."))
        }
        Err(e) => return Err(e.into()),
    })
}

/// Writes `report.html` into `dir` (a run directory being staged): the
/// headline, `compare` (the table of `compare.txt`, when the directory
/// has one), the plots, `blame` (the text `--blame` printed, when it ran)
/// and the manifest.
pub(super) fn write_report(
    dir: &Path,
    out: &RunOutput,
    above: &[sim::Dur],
    plots: &Plots,
    compare: Option<&str>,
    blame: Option<&str>,
) -> anyhow::Result<()> {
    use output::report;
    let r = &out.result;
    let m = &out.manifest;
    let mut page = report::Page::new(&format!("convoy: {}", r.experiment));
    page.para(&format!(
        "{}: variant(s) {}; seed {}; {} replication(s) of {} simulated; machine {}.",
        m.source,
        m.variants.join(", "),
        m.seed,
        m.replications,
        terminal::human(m.duration),
        m.machine.profile
    ));
    report::headline_section(&mut page, r, above);
    if let Some(table) = compare {
        page.heading("Variants side by side (compare.txt)");
        page.pre(table);
    }
    page.heading("Plots");
    if let Some((metric, subject)) = builtin::find(&r.experiment).and_then(|b| b.bars) {
        match report::mean_bars_svg(r, metric, subject) {
            Ok(Some(svg)) => page.svg(
                &format!("mean-{}", output::plots::file_stem(metric, subject)),
                &format!("mean {subject} per variant, in microseconds (drawn in this page)"),
                &svg,
            ),
            Ok(None) => {}
            Err(output::plots::PlotError::NoFont) => {}
            Err(e) => return Err(e.into()),
        }
    }
    report::plots_section(&mut page, &plots.files, &plots.report_note);
    page.heading("Blame: the worst waits");
    match blame {
        Some(text) => page.pre(text.trim_start_matches('\n')),
        None => page.para(&format!(
            "Not computed for this run: `convoy run {} --blame` explains the worst waits \
             of the first variant, as chains of who waited behind whom (it runs that \
             variant again; docs/blame.md).",
            m.source
        )),
    }
    report::record_section(&mut page, "Manifest (manifest.json)", "manifest", m);
    page.write(dir)?;
    Ok(())
}
