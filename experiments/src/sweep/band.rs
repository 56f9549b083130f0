//! Uncertainty bands (`convoy band`): a scenario run at its machine
//! profile's cited values (the point), then with one value at a time at
//! the low and at the high end of the range its sources allow (or at a
//! Latin-hypercube sample over all the ranges together). The runs are the
//! points of a sweep ([`super::run`]: in parallel, resumable, one file per
//! point), each also written as a run directory, and all run with the
//! point's seed: common random numbers, so that a run differs from the
//! point by its input and not by its draws. A headline statistic's band is
//! the lowest and highest it takes over the runs.
//!
//! The values varied are the machine profile's and the scenario's own
//! `const` costs that cite a range (`[dists.NAME] range`, with its
//! source); task counts and the other costs are the scenario's. The
//! ranges are varied apart (one at a time) or independently (sampled),
//! never as errors that move together.

use super::run::{run_sweep, SweepOptions, RUNS_DIR};
use super::spec::{figure_name, latin_hypercube_units, Figure, Param, Point, SweepSpec};
use super::store;
use crate::builtin;
use crate::program::Compiled;
use crate::runner;
use crate::scenario::compile::IDEAL;
use crate::scenario::doc::MachineDef;
use crate::scenario::{Loaded, ScenarioFile};
use anyhow::{bail, Context};
use models::machine::{profiles, Cited, Machine, Preemption, Profile};
use output::band::{BandInput, BandManifest, BandRow, BandRun, HeldInput, Sensitive};
use output::files::write_atomic;
use output::{Metric, Stat};
use sim::Dur;
use std::path::Path;
use toml::Spanned;

/// Most samples `--lhs` may draw.
pub const MAX_LHS: usize = 10_000;

/// The statistics a band reports for a wait, hold or span (a counter has
/// its count only): how many there were (a churn, a throughput) and
/// their length.
const STATS: [Stat; 5] = [Stat::Count, Stat::Mean, Stat::P99, Stat::P999, Stat::Max];

/// The kernel's CONFIG_HZ choices (`kernel/Kconfig.hz`), in order.
const HZ_CHOICES: [u32; 4] = [100, 250, 300, 1000];
/// The preemption models from least to most preemptible.
const PREEMPTION_ORDER: [Preemption; 3] =
    [Preemption::None, Preemption::Voluntary, Preemption::Full];

/// How a band samples the ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Each value at its low and at its high, the others at their cited
    /// values.
    OneAtATime,
    /// `n` points of a Latin hypercube over every range at once.
    Sample(usize),
}

/// One value a band varies: a machine profile's or a scenario cost's.
#[derive(Clone, Debug)]
pub struct Input {
    /// Its name in the band's tables: the `[machine]` field (`host_wake`)
    /// or the cost (`dists.pidlist_build_cpu`).
    pub field: String,
    /// The `--set` key that moves it (`machine.host_wake`,
    /// `dists.pidlist_build_cpu.value`).
    pub key: String,
    pub cited: Span,
    pub source: String,
}

/// A value's cited range as `--set` text, and how a sample spreads over it.
#[derive(Clone, Debug)]
pub struct Span {
    pub value: String,
    pub low: String,
    pub high: String,
    /// The values between low and high, in order: a duration's range is
    /// continuous, a choice's (HZ, preemption) its options.
    scale: Scale,
}

#[derive(Clone, Debug)]
enum Scale {
    Dur(Dur, Dur),
    /// A number (`steal_fraction`, `irq_rate`), continuous from low to
    /// high.
    Frac(f64, f64),
    Choices(Vec<String>),
}

impl Span {
    fn dur(c: &Cited<Dur>) -> Span {
        Span::durations(c.value, c.low, c.high)
    }

    /// A duration `value` whose range is `low` to `high`.
    fn durations(value: Dur, low: Dur, high: Dur) -> Span {
        Span {
            value: value.to_string(),
            low: low.to_string(),
            high: high.to_string(),
            scale: Scale::Dur(low, high),
        }
    }

    fn frac(c: &Cited<f64>) -> Span {
        Span {
            value: frac_text(c.value),
            low: frac_text(c.low),
            high: frac_text(c.high),
            scale: Scale::Frac(c.low, c.high),
        }
    }

    /// A choice among `order`'s options, the range being those from low to
    /// high.
    fn choice<T: Copy + PartialEq>(c: &Cited<T>, order: &[T], name: impl Fn(T) -> String) -> Span {
        let at = |v: T| order.iter().position(|o| *o == v).unwrap_or(0);
        let (lo, hi) = (at(c.low).min(at(c.high)), at(c.low).max(at(c.high)));
        Span {
            value: name(c.value),
            low: name(c.low),
            high: name(c.high),
            scale: Scale::Choices(order[lo..=hi].iter().map(|v| name(*v)).collect()),
        }
    }

    /// The value at `u` in (0, 1) of the range, as `--set` text, and its
    /// place for ranking (nanoseconds, or the option's index).
    fn at(&self, u: f64) -> (String, f64) {
        match &self.scale {
            Scale::Dur(lo, hi) => {
                let ns = lo.0 as f64 + (hi.0 as f64 - lo.0 as f64) * u;
                let d = Dur(ns.round() as u64);
                (d.to_string(), d.0 as f64)
            }
            Scale::Frac(lo, hi) => {
                let f = lo + (hi - lo) * u;
                let text = frac_text(f);
                let place = text.parse().unwrap_or(f);
                (text, place)
            }
            Scale::Choices(options) => {
                let i = ((u * options.len() as f64) as usize).min(options.len() - 1);
                (options[i].clone(), i as f64)
            }
        }
    }
}

/// A number as `--set` text: four decimals at most, no trailing zeros
/// (a sample's value is the text the run is given).
fn frac_text(f: f64) -> String {
    let s = format!("{f:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() {
        "0".into()
    } else {
        s.into()
    }
}

/// Every value of `p` that a `[machine]` table sets and that has a range,
/// with its cited range (low may equal high: a constant). The topology and
/// the idle states are not fields of one value.
pub fn cited_values(p: &Profile) -> Vec<Input> {
    let machine = |field: &str, cited: Span, source: &str| Input {
        field: field.into(),
        key: format!("machine.{field}"),
        cited,
        source: source.into(),
    };
    let dur = |field, c: &Cited<Dur>| machine(field, Span::dur(c), c.source);
    let mut out = vec![
        machine(
            "hz",
            Span::choice(&p.hz, &HZ_CHOICES, |v| v.to_string()),
            p.hz.source,
        ),
        machine(
            "preemption",
            Span::choice(&p.preemption, &PREEMPTION_ORDER, |v| v.as_str().into()),
            p.preemption.source,
        ),
        dur("base_slice", &p.base_slice),
        dur("switch_cost", &p.switch_cost),
        dur("ipi", &p.ipi),
        dur("wake_send", &p.wake_send),
        dur("line_local", &p.lines.local),
        dur("line_smt", &p.lines.smt),
        dur("line_socket", &p.lines.socket),
        dur("line_remote", &p.lines.remote),
        dur("tick_cost", &p.interrupts.tick),
        machine(
            "irq_rate",
            Span::frac(&p.interrupts.irq_rate),
            p.interrupts.irq_rate.source,
        ),
        dur("irq_cost", &p.interrupts.irq),
    ];
    if let Some(g) = &p.guest {
        out.push(dur("guest_ipi", &g.ipi));
        out.push(dur("host_halt_poll", &g.host_halt_poll));
        out.push(dur("host_wake", &g.host_wake));
        out.push(machine(
            "steal_fraction",
            Span::frac(&g.steal_fraction),
            g.steal_fraction.source,
        ));
        out.push(dur("steal_episode", &g.steal_episode));
    }
    out
}

/// The value a scenario's `[machine]` table (after its variant's overlay
/// and the `--set`s) gives `field` itself, as written; `None` if it
/// leaves it to the profile.
fn set_value(m: &MachineDef, field: &str) -> Option<String> {
    fn shown<T: std::fmt::Display>(v: &Option<Spanned<T>>) -> Option<String> {
        v.as_ref().map(|v| v.get_ref().to_string())
    }
    match field {
        "hz" => shown(&m.hz),
        "preemption" => shown(&m.preemption),
        "base_slice" => shown(&m.base_slice),
        "switch_cost" => shown(&m.switch_cost),
        "ipi" => shown(&m.ipi),
        "wake_send" => shown(&m.wake_send),
        "line_local" => shown(&m.line_local),
        "line_smt" => shown(&m.line_smt),
        "line_socket" => shown(&m.line_socket),
        "line_remote" => shown(&m.line_remote),
        "tick_cost" => shown(&m.tick_cost),
        "irq_rate" => shown(&m.irq_rate),
        "irq_cost" => shown(&m.irq_cost),
        "guest_ipi" => shown(&m.guest_ipi),
        "host_halt_poll" => shown(&m.host_halt_poll),
        "host_wake" => shown(&m.host_wake),
        "steal_fraction" => shown(&m.steal_fraction),
        "steal_episode" => shown(&m.steal_episode),
        _ => None,
    }
}

/// Why a value, though it has a range, cannot matter on this run's
/// machine: a cost at a distance its topology does not have, a bare-metal
/// IPI in a guest, the length of steal episodes when nothing is stolen.
fn absent(field: &str, m: &Machine) -> Option<&'static str> {
    match field {
        "line_smt" if m.topology.threads_per_core == 1 => {
            Some("the run's topology has no SMT siblings")
        }
        "line_remote" if m.topology.sockets == 1 => Some("the run's topology has one socket"),
        "ipi" if m.guest.is_some() => Some("a guest's IPIs cost guest_ipi"),
        "steal_episode" if m.guest.as_ref().is_some_and(|g| g.steal_fraction == 0.0) => {
            Some("steal_fraction is 0: nothing is stolen")
        }
        "irq_cost" if m.interrupts.irq_rate == 0.0 => Some("irq_rate is 0: no interrupt comes"),
        _ => None,
    }
}

/// What of a compiled variant the world reads of the machine and the
/// scheduler: two variants equal here run alike. The machine's own
/// `base_slice` is left out: the run's slice is `timeslice`, which is the
/// base slice only when the scenario sets none.
#[derive(PartialEq)]
struct RunsAs {
    hz: u32,
    preempt_full: bool,
    voluntary: bool,
    timeslice: Option<Dur>,
    switch_cost: Dur,
    machine: Machine,
}

fn runs_as(c: &Compiled) -> RunsAs {
    RunsAs {
        hz: c.hz,
        preempt_full: c.preempt_full,
        voluntary: c.voluntary,
        timeslice: c.timeslice,
        switch_cost: c.switch_cost,
        machine: Machine {
            base_slice: Dur::ZERO,
            ..c.machine.clone()
        },
    }
}

/// Which of `profile`'s values to vary for the compiled variants
/// `prepared`, and why each other one is held: a constant, a value the
/// scenario sets, a cost the run's machine does not have, or one that
/// `moves` (compiling the variants at its two ends) finds changes nothing.
/// `joint`: the values are sampled together (a Latin hypercube), not one
/// at a time.
pub fn choose(
    profile: &Profile,
    prepared: &[(Compiled, Loaded)],
    joint: bool,
    mut moves: impl FnMut(&Input) -> anyhow::Result<bool>,
) -> anyhow::Result<(Vec<Input>, Vec<HeldInput>)> {
    let mut varied = Vec::new();
    let mut held = Vec::new();
    for input in cited_values(profile) {
        let s = &input.cited;
        let hold = |why: String| HeldInput {
            field: input.field.clone(),
            value: s.value.clone(),
            why,
        };
        if s.low == s.high {
            held.push(hold("exact: its sources allow one value".into()));
            continue;
        }
        let set_by = prepared.iter().find_map(|(_, l)| {
            let m = l.doc.machine.as_ref()?;
            set_value(m.get_ref(), &input.field).map(|v| (l, v))
        });
        if let Some((l, value)) = set_by {
            let whose = match prepared.len() {
                1 => String::new(),
                _ => format!(" (variant `{}`)", l.variant),
            };
            held.push(HeldInput {
                field: input.field.clone(),
                value,
                why: format!(
                    "set by [machine] or a --set{whose}, in place of the profile's {}",
                    s.value
                ),
            });
            continue;
        }
        // Absent from every variant's machine (a variant may set its own
        // topology).
        // Sampled together with a varied steal fraction, the episode
        // length matters even where the fraction's cited value is 0.
        let steal_varies = joint && varied.iter().any(|v: &Input| v.field == "steal_fraction");
        let absent_in: Vec<Option<&str>> = (prepared.iter())
            .map(|(c, _)| match input.field.as_str() {
                "steal_episode" if steal_varies => None,
                field => absent(field, &c.machine),
            })
            .collect();
        if let Some(Some(why)) = absent_in
            .first()
            .filter(|_| absent_in.iter().all(Option::is_some))
        {
            held.push(hold(why.to_string()));
            continue;
        }
        if !moves(&input)? {
            held.push(hold(format!(
                "no effect: the scenario's [scenario] table sets what `{}` would",
                input.field
            )));
            continue;
        }
        varied.push(input);
    }
    Ok((varied, held))
}

/// The scenario's `const` costs that cite a range (`[dists.NAME] range`,
/// checked when the scenario compiled), over all variants, first seen
/// first: those to vary, and those a `--set` in `sets` fixes, held.
pub fn cost_values(
    prepared: &[(Compiled, Loaded)],
    sets: &[String],
) -> (Vec<Input>, Vec<HeldInput>) {
    let (mut varied, mut held) = (Vec::<Input>::new(), Vec::<HeldInput>::new());
    for (_, l) in prepared {
        for (name, def) in &l.doc.dists {
            let d = def.get_ref();
            let (Some(range), Some(value)) = (&d.range, &d.value) else {
                continue;
            };
            let field = format!("dists.{name}");
            if varied.iter().any(|i| i.field == field) || held.iter().any(|h| h.field == field) {
                continue;
            }
            let dur = |v: &Spanned<String>| sim::time::parse_duration(v.get_ref()).ok();
            let (Some(low), Some(high), Some(at)) = (
                range.get_ref().first().and_then(dur),
                range.get_ref().get(1).and_then(dur),
                dur(value),
            ) else {
                continue;
            };
            let key = format!("{field}.value");
            let cited = Span::durations(at, low, high);
            if sets.iter().any(|s| s.starts_with(&format!("{key}="))) {
                held.push(HeldInput {
                    field,
                    value: cited.value,
                    why: format!("set by a --set, in place of the cited range {low} .. {high}"),
                });
            } else if low == high {
                held.push(HeldInput {
                    field,
                    value: cited.value,
                    why: "exact: its sources allow one value".into(),
                });
            } else {
                varied.push(Input {
                    field,
                    key,
                    cited,
                    source: d
                        .source
                        .as_ref()
                        .map(|s| s.get_ref().clone())
                        .unwrap_or_default(),
                });
            }
        }
    }
    (varied, held)
}

/// One run of the band: its name (its directory under `runs/`) and the
/// input it moved and to which end, `None` for the point and a sample.
#[derive(Clone, Debug)]
pub struct Run {
    pub name: String,
    pub moved: Option<(usize, End)>,
    /// A sample's place of each input (for ranking), empty otherwise.
    pub places: Vec<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Low,
    High,
}

/// A checked band: the sweep it runs, the values it varies and holds.
pub struct BandPlan {
    pub spec: SweepSpec,
    pub experiment: String,
    pub profile: String,
    pub method: Method,
    pub duration: Dur,
    pub varied: Vec<Input>,
    pub held: Vec<HeldInput>,
    /// One per point of `spec`, in order; the point first.
    pub runs: Vec<Run>,
}

impl BandPlan {
    /// The directory a band writes to when not told: `out/band-EXP-PROFILE`.
    pub fn default_out(&self) -> std::path::PathBuf {
        Path::new("out").join(format!("band-{}-{}", self.experiment, self.profile))
    }
}

/// The scenario `experiment` with `sets` after `--machine`; `flags` say
/// which sets a flag made (errors name it).
fn scenario(
    experiment: &str,
    machine: &Option<String>,
    sets: &[String],
    flags: &[(usize, String)],
) -> anyhow::Result<ScenarioFile> {
    let mut src = builtin::source(experiment, sets)?;
    src.flags = flags.to_vec();
    src.machine = machine.clone();
    Ok(ScenarioFile::new(src)?)
}

/// The statistics a band reports: the built-in's headline subjects, or
/// for a scenario file its spans (its lock waits when it has none).
fn figures(experiment: &str, c: &Compiled) -> Vec<Figure> {
    let subjects: Vec<(Metric, String)> = match builtin::find(experiment) {
        Some(b) => (b.headline.iter())
            .map(|(m, s)| (*m, s.to_string()))
            .collect(),
        None => {
            let of = |metric| {
                let mut v: Vec<(Metric, String)> = (c.stats.iter())
                    .filter(|s| s.metric == metric)
                    .map(|s| (metric, s.subject.clone()))
                    .collect();
                v.dedup();
                v
            };
            let spans = of(Metric::Span);
            if spans.is_empty() {
                of(Metric::Wait)
            } else {
                spans
            }
        }
    };
    let mut out = Vec::new();
    for (metric, subject) in subjects {
        let stats: &[Stat] = if metric == Metric::Counter {
            &[Stat::Count]
        } else {
            &STATS
        };
        for &stat in stats {
            out.push(Figure {
                name: figure_name(metric, &subject, stat),
                metric,
                subject: subject.clone(),
                stat,
                open_waits: false,
            });
        }
    }
    out
}

/// Reads the scenario, finds its machine profile and the values to vary,
/// and lays out the runs, each of `reps` replications pooled. `sets` are
/// the user's (`--duration` and `--seed` included, as `run` takes them),
/// with the indices of those a flag made and the flag.
pub fn plan(
    experiment: &str,
    machine: Option<String>,
    (sets, flags): (Vec<String>, Vec<(usize, String)>),
    seed: Option<u64>,
    reps: u64,
    method: Method,
) -> anyhow::Result<BandPlan> {
    let file = scenario(experiment, &machine, &sets, &flags)?;
    let prepared = runner::prepare(&file, &[])?;
    let first = &prepared[0].0;
    let profile_name = first.machine.profile.clone();
    if let Some((c, _)) = prepared
        .iter()
        .find(|(c, _)| c.machine.profile != profile_name)
    {
        bail!(
            "{experiment}: variant `{}` runs on machine `{}` and `{}` on `{}`; a band varies \
             one profile's values (--machine NAME runs every variant on one)",
            first.variant,
            profile_name,
            c.variant,
            c.machine.profile
        );
    }
    let (costs, costs_held) = cost_values(&prepared, &sets);
    let (mut varied, mut held) = if profile_name == IDEAL {
        if costs.is_empty() {
            let real: Vec<&str> = (profiles::PROFILES.iter())
                .map(|p| p.name)
                .filter(|n| *n != IDEAL)
                .collect();
            bail!(
                "{experiment} runs on the `{IDEAL}` machine, whose costs are zero by construction, \
                 and cites no range for a cost of its own: \
                 nothing to vary; name a machine with --machine ({})",
                real.join(", ")
            );
        }
        (Vec::new(), Vec::new())
    } else {
        let profile = profiles::by_name(&profile_name).context("a compiled machine is built in")?;
        let point: Vec<RunsAs> = prepared.iter().map(|(c, _)| runs_as(c)).collect();
        // A value the scenario's `[scenario]` table overrides (hz,
        // preemption, timeslice, switch_cost) changes nothing.
        let joint = matches!(method, Method::Sample(_));
        choose(profile, &prepared, joint, |input| {
            let mut moves = false;
            for end in [&input.cited.low, &input.cited.high] {
                let mut with = sets.clone();
                with.push(format!("{}={end}", input.key));
                let f = scenario(experiment, &machine, &with, &flags)?;
                let at: Vec<RunsAs> = (runner::prepare(&f, &[])?.iter())
                    .map(|(c, _)| runs_as(c))
                    .collect();
                moves |= at != point;
            }
            Ok(moves)
        })?
    };
    varied.extend(costs);
    held.extend(costs_held);
    if varied.is_empty() {
        let why: Vec<String> = held
            .iter()
            .map(|h| format!("{}: {}", h.field, h.why))
            .collect();
        bail!(
            "{experiment} on machine `{profile_name}`: nothing to vary: {}",
            why.join("; ")
        );
    }
    let seed = seed.or(first.seed).unwrap_or(1);
    let (points, runs) = layout(&varied, method, seed);
    let params = (varied.iter())
        .map(|i| Param {
            key: i.key.clone(),
            location: "convoy band".into(),
            name: i.field.clone(),
            format: None,
            log: false,
            values: Vec::new(),
        })
        .collect();
    let spec = SweepSpec {
        name: format!("band-{}-{profile_name}", first.experiment),
        description: String::new(),
        scenario: experiment.to_string(),
        variants: Vec::new(),
        seed,
        reps: reps.max(1),
        sets,
        params,
        figures: figures(experiment, first),
        points,
        check: None,
        machine,
    };
    Ok(BandPlan {
        spec,
        experiment: first.experiment.clone(),
        profile: profile_name,
        method,
        duration: first.duration,
        varied,
        held,
        runs,
    })
}

/// The points of the sweep and the band's runs: the point first, then one
/// run per end of each range that is not the cited value itself (that run
/// would be the point), or the samples. Every point has the same seed.
fn layout(varied: &[Input], method: Method, seed: u64) -> (Vec<Point>, Vec<Run>) {
    let cited: Vec<String> = varied.iter().map(|i| i.cited.value.clone()).collect();
    let mut plan: Vec<(Vec<String>, Run)> = vec![(
        cited.clone(),
        Run {
            name: "point".into(),
            moved: None,
            places: Vec::new(),
        },
    )];
    match method {
        Method::OneAtATime => {
            for (k, input) in varied.iter().enumerate() {
                for (end, v, tag) in [
                    (End::Low, &input.cited.low, "low"),
                    (End::High, &input.cited.high, "high"),
                ] {
                    if *v == input.cited.value {
                        continue;
                    }
                    let mut values = cited.clone();
                    values[k] = v.clone();
                    let run = Run {
                        name: format!("{}-{tag}", input.field),
                        moved: Some((k, end)),
                        places: Vec::new(),
                    };
                    plan.push((values, run));
                }
            }
        }
        Method::Sample(n) => {
            let keys: Vec<String> = varied.iter().map(|i| format!("band/{}", i.field)).collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            for (j, units) in latin_hypercube_units(n, seed, &keys).iter().enumerate() {
                let (values, places) = (varied.iter().zip(units))
                    .map(|(i, u)| i.cited.at(*u))
                    .unzip();
                let run = Run {
                    name: format!("sample-{:0w$}", j + 1, w = n.to_string().len()),
                    moved: None,
                    places,
                };
                plan.push((values, run));
            }
        }
    }
    let points = (plan.iter().enumerate())
        .map(|(index, (values, _))| {
            let sets: Vec<String> = (varied.iter().zip(values))
                .map(|(i, v)| format!("{}={v}", i.key))
                .collect();
            Point {
                index,
                values: values.clone(),
                key: sets.join("\n"),
                sets,
                seed,
            }
        })
        .collect();
    (points, plan.into_iter().map(|(_, r)| r).collect())
}

/// A finished band: its rows and manifest, as written.
pub struct Band {
    pub rows: Vec<BandRow>,
    pub manifest: BandManifest,
    /// Runs done now (the others were in the directory already).
    pub ran: usize,
    pub wall: std::time::Duration,
}

/// Runs the band's points not in `opts.out` yet, each with its run
/// directory, then writes `band.csv` and `band.json` there.
pub fn run_band(
    p: &BandPlan,
    jobs: usize,
    out: &Path,
    progress: crate::progress::ProgressMode,
) -> anyhow::Result<Band> {
    let opts = SweepOptions {
        jobs,
        shard: None,
        out: out.to_path_buf(),
        progress,
        run_dirs: Some(p.runs.iter().map(|r| r.name.clone()).collect()),
    };
    let report = run_sweep(&p.spec, &opts)?;
    let stored = store::read_points(out, &report.header)?;
    let records: Vec<&output::sweep_table::PointRecord> =
        stored.values().map(|s| &s.record).collect();
    if records.len() != p.runs.len() {
        bail!(
            "{}: {} of the band's {} runs are missing",
            out.display(),
            p.runs.len() - records.len(),
            p.runs.len()
        );
    }
    let rows = rows(p, &records);
    let manifest = manifest(p);
    write_atomic(out, output::band::BAND_CSV, &output::band::band_csv(&rows))?;
    write_atomic(
        out,
        output::band::BAND_JSON,
        &output::band::band_json(&manifest),
    )?;
    Ok(Band {
        rows,
        manifest,
        ran: report.ran,
        wall: report.wall,
    })
}

fn manifest(p: &BandPlan) -> BandManifest {
    BandManifest {
        program: "convoy".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: runner::git_commit(),
        experiment: p.experiment.clone(),
        source: p.spec.scenario.clone(),
        machine: p.profile.clone(),
        method: match p.method {
            Method::OneAtATime => "one-at-a-time".into(),
            Method::Sample(_) => "latin-hypercube".into(),
        },
        seed: p.spec.seed,
        replications: p.spec.reps,
        duration_ns: p.duration.0,
        sets: p.spec.sets.clone(),
        varied: (p.varied.iter())
            .map(|i| BandInput {
                field: i.field.clone(),
                value: i.cited.value.clone(),
                low: i.cited.low.clone(),
                high: i.cited.high.clone(),
                source: i.source.clone(),
            })
            .collect(),
        held: p.held.clone(),
        runs: (p.runs.iter().zip(&p.spec.points))
            .map(|(r, pt)| BandRun {
                name: format!("{RUNS_DIR}/{}", r.name),
                sets: pt.sets.clone(),
            })
            .collect(),
    }
}

/// One row per variant, figure: the point, the band over every run, the
/// most sensitive input.
fn rows(p: &BandPlan, records: &[&output::sweep_table::PointRecord]) -> Vec<BandRow> {
    let mut out = Vec::new();
    let variants = &records[0].variants;
    for (vi, v) in variants.iter().enumerate() {
        for (fi, f) in p.spec.figures.iter().enumerate() {
            let at: Vec<Option<u64>> = (records.iter())
                .map(|r| r.variants.get(vi).and_then(|v| v.pooled[fi]))
                .collect();
            let Some(point) = at[0] else { continue };
            let all = at.iter().flatten();
            let (low, high) = (all.clone().min(), all.max());
            out.push(BandRow {
                variant: v.variant.clone(),
                metric: f.metric,
                subject: f.subject.clone(),
                stat: f.stat,
                point,
                low: low.copied().unwrap_or(point),
                high: high.copied().unwrap_or(point),
                sensitive: match p.method {
                    Method::OneAtATime => one_at_a_time(p, &at, point),
                    Method::Sample(_) => sampled(p, &at),
                },
            });
        }
    }
    out
}

/// The input whose run at its low or high lies furthest from the point
/// (the first in the profile's order on a tie); `None` if no run moved.
fn one_at_a_time(p: &BandPlan, at: &[Option<u64>], point: u64) -> Option<Sensitive> {
    let mut best: Option<(u64, Sensitive)> = None;
    for (k, input) in p.varied.iter().enumerate() {
        let end = |e: End| {
            (p.runs.iter().zip(at))
                .find(|(r, _)| r.moved == Some((k, e)))
                .map_or(Some(point), |(_, v)| *v)
        };
        let (Some(lo), Some(hi)) = (end(End::Low), end(End::High)) else {
            continue;
        };
        let moved = lo.abs_diff(point).max(hi.abs_diff(point));
        if moved > 0 && best.as_ref().is_none_or(|(m, _)| moved > *m) {
            let s = Sensitive {
                field: input.field.clone(),
                at_low: lo,
                at_high: hi,
            };
            best = Some((moved, s));
        }
    }
    best.map(|(_, s)| s)
}

/// The input whose samples rank most like the statistic's (Spearman's
/// rank correlation, by its size; the first on a tie), with the statistic
/// at the sample where the input was lowest and where it was highest.
fn sampled(p: &BandPlan, at: &[Option<u64>]) -> Option<Sensitive> {
    let samples: Vec<(&Run, u64)> = (p.runs.iter().zip(at))
        .filter(|(r, _)| !r.places.is_empty())
        .filter_map(|(r, v)| v.map(|v| (r, v)))
        .collect();
    if samples.len() < 3 {
        return None;
    }
    let stat: Vec<f64> = samples.iter().map(|(_, v)| *v as f64).collect();
    let stat_ranks = ranks(&stat);
    let mut best: Option<(f64, Sensitive)> = None;
    for (k, input) in p.varied.iter().enumerate() {
        let x: Vec<f64> = samples.iter().map(|(r, _)| r.places[k]).collect();
        let rho = pearson(&ranks(&x), &stat_ranks).abs();
        if rho > 0.0 && best.as_ref().is_none_or(|(b, _)| rho > *b) {
            let lo = (0..x.len()).min_by(|&a, &b| x[a].total_cmp(&x[b]));
            let hi = (0..x.len()).max_by(|&a, &b| x[a].total_cmp(&x[b]));
            let (Some(lo), Some(hi)) = (lo, hi) else {
                continue;
            };
            let s = Sensitive {
                field: input.field.clone(),
                at_low: samples[lo].1,
                at_high: samples[hi].1,
            };
            best = Some((rho, s));
        }
    }
    best.map(|(_, s)| s)
}

/// Ranks from 1, ties given their mean rank.
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &o in &order[i..=j] {
            r[o] = mean;
        }
        i = j + 1;
    }
    r
}

/// Pearson's correlation; 0 when either side does not vary.
fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    if saa == 0.0 || sbb == 0.0 {
        0.0
    } else {
        sab / (saa * sbb).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_whose_low_is_its_high_is_listed_exact_and_only_ranges_are_spans() {
        let mut p = profiles::by_name("server-2s").unwrap().clone();
        p.switch_cost = Cited::exact(Dur(2_000), "test");
        let values = cited_values(&p);
        let sw = values.iter().find(|i| i.field == "switch_cost").unwrap();
        assert_eq!(
            (sw.cited.low.as_str(), sw.cited.high.as_str()),
            ("2us", "2us")
        );
        let hz = values.iter().find(|i| i.field == "hz").unwrap();
        assert_eq!(
            (hz.cited.low.as_str(), hz.cited.high.as_str()),
            ("100", "1000")
        );
        assert!(
            values.iter().all(|i| !i.field.starts_with("host_")),
            "bare metal"
        );
    }

    #[test]
    fn a_sample_spreads_a_choice_over_its_options_and_a_duration_evenly() {
        let p = profiles::by_name("server-2s").unwrap();
        let values = cited_values(p);
        let hz = &values.iter().find(|i| i.field == "hz").unwrap().cited;
        let got: Vec<String> = [0.01, 0.3, 0.6, 0.99].iter().map(|u| hz.at(*u).0).collect();
        assert_eq!(got, ["100", "250", "300", "1000"]);
        let pre = &values
            .iter()
            .find(|i| i.field == "preemption")
            .unwrap()
            .cited;
        assert_eq!(pre.at(0.5).0, "voluntary");
        let sw = &values
            .iter()
            .find(|i| i.field == "switch_cost")
            .unwrap()
            .cited;
        assert_eq!(sw.at(0.5).0, "2.45us", "midway between 1.1us and 3.8us");
    }

    #[test]
    fn one_at_a_time_runs_each_end_that_is_not_the_cited_value() {
        let p = profiles::by_name("kvm-guest").unwrap();
        let varied: Vec<Input> = (cited_values(p).into_iter())
            .filter(|i| ["host_halt_poll", "host_wake"].contains(&i.field.as_str()))
            .collect();
        let (points, runs) = layout(&varied, Method::OneAtATime, 7);
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        // host_halt_poll's cited value is its high end (200us).
        assert_eq!(
            names,
            [
                "point",
                "host_halt_poll-low",
                "host_wake-low",
                "host_wake-high"
            ]
        );
        assert_eq!(
            points[1].sets,
            ["machine.host_halt_poll=0ns", "machine.host_wake=5us"]
        );
        assert!(points.iter().all(|p| p.seed == 7), "common random numbers");
    }

    #[test]
    fn ranks_share_ties_and_correlation_reads_order() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
        assert!((pearson(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]) - 1.0).abs() < 1e-12);
        assert_eq!(pearson(&[1.0, 1.0], &[1.0, 2.0]), 0.0);
    }
}
