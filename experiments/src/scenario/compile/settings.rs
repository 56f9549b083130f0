//! Pass 1, the run's settings: the `[scenario]` table checked and read
//! (name, duration and windows, CPUs, HZ, wake latency, preemption model,
//! time slice, CPU speed, context-switch cost, wake placement, run queues)
//! over the machine's defaults (`machine`: a `[scenario]` field that is
//! set wins over the machine).

use super::dur_field;
use super::machine::{self, IDEAL};
use crate::program::WakePlacement;
use crate::scenario::doc::Doc;
use crate::scenario::error::ScenarioError;
use crate::scenario::source::Source;
use models::hung_task::HungTaskConfig;
use models::machine::{Machine, Preemption};
use sim::Dur;
use toml::Spanned;

/// The range of `scenario.cpu_speed`: a hundredth to a hundred times the
/// speed the costs were measured at.
const MIN_CPU_SPEED: f64 = 0.01;
const MAX_CPU_SPEED: f64 = 100.0;

/// The `[scenario]` table, checked.
pub(super) struct Settings {
    pub duration: Dur,
    pub window: Dur,
    pub cpus: Option<u32>,
    pub hz: u32,
    pub wake_latency: Option<sim::dist::Dist>,
    pub preempt_full: bool,
    pub voluntary: bool,
    pub timeslice: Option<Dur>,
    /// What a `cpu` step's time is multiplied by: 1 / `scenario.cpu_speed`.
    pub cpu_scale: f64,
    pub switch_cost: Dur,
    pub wake_placement: WakePlacement,
    pub percpu_runqueues: bool,
    pub machine: Machine,
    /// khungtaskd's sysctls (R100-R101).
    pub hung_task: HungTaskConfig,
}

/// Reads and checks `doc`'s `[scenario]` table.
pub(super) fn settings(src: &Source, doc: &Doc) -> Result<Settings, ScenarioError> {
    let h = &doc.scenario;
    // Also here: `--set scenario.name=...` comes after the file's check;
    // its value's span names that argument.
    if let Some(p) = crate::scenario::resolve::file_name_problem(h.name.get_ref()) {
        return Err(ScenarioError::new(
            src.locate(Some(h.name.span())),
            "scenario.name",
            p,
        ));
    }
    let duration = dur_field(src, "scenario.duration", &h.duration)?;
    if duration == Dur::ZERO {
        return Err(ScenarioError::new(
            src.locate(Some(h.duration.span())),
            "scenario.duration",
            "must be more than zero",
        ));
    }
    let window = match &h.window {
        Some(w) => {
            let d = dur_field(src, "scenario.window", w)?;
            if d == Dur::ZERO {
                return Err(ScenarioError::new(
                    src.locate(Some(w.span())),
                    "scenario.window",
                    "must be more than zero",
                ));
            }
            d
        }
        None => sim::stats::DEFAULT_WINDOW,
    };
    // Every series keeps a bin per window: a tiny window on a long run is
    // an error, not an allocation without bound.
    let windows = duration.0.div_ceil(window.0);
    if windows > sim::stats::MAX_WINDOWS {
        let (span, field) = match &h.window {
            Some(w) => (w.span(), "scenario.window"),
            None => (h.duration.span(), "scenario.duration"),
        };
        return Err(ScenarioError::new(
            src.locate(Some(span)),
            field,
            format!(
                "a run of {duration} in windows of {window} has {windows} windows; \
                 expected at most {} (set a wider `scenario.window`)",
                sim::stats::MAX_WINDOWS
            ),
        ));
    }
    let profile = machine::profile(src, doc)?;
    // The ideal machine keeps the defaults every scenario had before
    // machines were modelled; a real one has the kernel's.
    let real = profile.name != IDEAL;
    let cpus = match &h.cpus {
        // A real machine has its CPUs; the ideal one, as many as it takes.
        None if real => Some(profile.topology.value.cpus()),
        None => None,
        Some(v) => match v.get_ref() {
            toml::Value::String(s) if s == "unlimited" => None,
            toml::Value::Integer(n) if (1..=1_000_000).contains(n) => Some(*n as u32),
            other => {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    "scenario.cpus",
                    format!(
                        "expected a number of CPUs (1 or more) or \"unlimited\", found `{other}`"
                    ),
                ))
            }
        },
    };
    let mut run_machine = Machine::from_profile(&profile, cpus);
    // The run queues, slices and switches of a real machine need CPUs to
    // be about: with unlimited CPUs they keep the ideal machine's
    // defaults (no queue is ever waited in).
    let kernel_defaults = real && cpus.is_some();
    let hz = match &h.hz {
        None => run_machine.hz,
        Some(v) => machine::hz(src, "scenario.hz", v)?,
    };
    tick_fits(src, doc, &h.hz, hz, run_machine.interrupts.tick)?;
    let wake_latency = match &h.wake_latency {
        None => None,
        Some(v) => {
            let d = sim::dist::parse_inline(v.get_ref()).map_err(|e| {
                ScenarioError::new(
                    src.locate(Some(v.span())),
                    "scenario.wake_latency",
                    e.to_string(),
                )
            })?;
            (!d.is_always_zero()).then_some(d)
        }
    };
    let preemption = match &h.preemption {
        None => run_machine.preemption,
        Some(v) => machine::preemption(src, "scenario.preemption", v)?,
    };
    let (preempt_full, voluntary) = match preemption {
        Preemption::None => (false, false),
        Preemption::Voluntary => (false, true),
        Preemption::Full => (true, true),
    };
    let timeslice = match &h.timeslice {
        None if kernel_defaults => Some(run_machine.base_slice),
        None => None,
        Some(v) => match dur_field(src, "scenario.timeslice", v)? {
            Dur(0) => {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    "scenario.timeslice",
                    "a time slice must be longer than 0",
                ))
            }
            d => Some(d),
        },
    };
    let cpu_speed = match &h.cpu_speed {
        None => 1.0,
        Some(v) if (MIN_CPU_SPEED..=MAX_CPU_SPEED).contains(v.get_ref()) => *v.get_ref(),
        Some(v) => {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                "scenario.cpu_speed",
                format!(
                    "{} is out of range; expected a speed from {MIN_CPU_SPEED} to {MAX_CPU_SPEED} \
                     (1: the CPUs the costs were measured on, 0.5: half as fast)",
                    v.get_ref()
                ),
            ))
        }
    };
    // Every `cpu` step's distribution is scaled by this at compile time.
    let cpu_scale = 1.0 / cpu_speed;
    let switch_cost = match &h.switch_cost {
        // With unlimited CPUs no task is switched out.
        None if cpus.is_none() => Dur::ZERO,
        None => scaled(run_machine.switch_cost, cpu_scale),
        Some(v) => {
            let Dur(ns) = dur_field(src, "scenario.switch_cost", v)?;
            if ns > 0 && cpus.is_none() {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    "scenario.switch_cost",
                    "a context-switch cost needs a number of CPUs (`scenario.cpus`); \
                     with unlimited CPUs no task is switched out",
                ));
            }
            scaled(Dur(ns), cpu_scale)
        }
    };
    let wake_placement = choice(
        src,
        "scenario.wake_placement",
        "wake placement",
        h.wake_placement.as_ref(),
        &[
            ("fifo", WakePlacement::Fifo),
            ("first", WakePlacement::First),
            ("preempt", WakePlacement::Preempt),
            ("eevdf", WakePlacement::Eevdf),
            ("eevdf-6.6", WakePlacement::Eevdf66),
            ("cfs", WakePlacement::Cfs),
        ],
    )?
    .unwrap_or(if kernel_defaults {
        WakePlacement::Eevdf
    } else {
        WakePlacement::Fifo
    });
    let percpu_runqueues = choice(
        src,
        "scenario.runqueue",
        "run queue",
        h.runqueue.as_ref(),
        &[("shared", false), ("percpu", true)],
    )?
    .unwrap_or(kernel_defaults);
    if percpu_runqueues {
        // `preempt` picks its victim among all CPUs for a task woken into
        // the shared queue: it is not written per CPU.
        if let Some(v) = h
            .wake_placement
            .as_ref()
            .filter(|_| wake_placement == WakePlacement::Preempt)
        {
            let why = if h.runqueue.is_none() {
                format!(
                    " (machine `{}` has one run queue per CPU: set `scenario.runqueue = \"shared\"`)",
                    profile.name
                )
            } else {
                String::new()
            };
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                "scenario.wake_placement",
                format!(
                    "wake placement `{}` needs the shared run queue; with runqueue = \"percpu\" use fifo, first, eevdf, eevdf-6.6 or cfs{why}",
                    v.get_ref()
                ),
            ));
        }
    }
    // The machine the run runs on: the `[scenario]` fields that override
    // it are written into it, so that it says what the run used.
    run_machine.hz = hz;
    run_machine.preemption = preemption;
    run_machine.switch_cost = switch_cost;
    if let Some(t) = timeslice {
        run_machine.base_slice = t;
    }
    Ok(Settings {
        duration,
        window,
        cpus,
        hz,
        wake_latency,
        preempt_full,
        voluntary,
        timeslice,
        cpu_scale,
        switch_cost,
        wake_placement,
        percpu_runqueues,
        machine: run_machine,
        hung_task: hung_task(src, h)?,
    })
}

/// The hung-task detector's sysctls (R100-R101) over the kernel's
/// defaults: the timeout and the interval in whole seconds, as the
/// sysctls hold them.
fn hung_task(
    src: &Source,
    h: &crate::scenario::doc::Header,
) -> Result<HungTaskConfig, ScenarioError> {
    let secs = |field: &str, v: &Option<Spanned<String>>, default: u64| {
        let Some(v) = v else { return Ok(default) };
        let d = dur_field(src, field, v)?;
        if d.0 % 1_000_000_000 != 0 {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                field,
                format!(
                    "`{}` is not a whole number of seconds; the kernel's sysctl holds seconds (\"120s\", \"0s\" for off)",
                    v.get_ref()
                ),
            ));
        }
        Ok(d.0 / 1_000_000_000)
    };
    let d = HungTaskConfig::default();
    let warnings = match &h.hung_task_warnings {
        None => d.warnings,
        Some(v) if *v.get_ref() >= -1 => *v.get_ref(),
        Some(v) => {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                "scenario.hung_task_warnings",
                format!(
                    "{} is out of range; expected a count of 0 or more, or -1 for no limit",
                    v.get_ref()
                ),
            ))
        }
    };
    Ok(HungTaskConfig {
        timeout_secs: secs(
            "scenario.hung_task_timeout",
            &h.hung_task_timeout,
            d.timeout_secs,
        )?,
        interval_secs: secs(
            "scenario.hung_task_check_interval",
            &h.hung_task_check_interval,
            d.interval_secs,
        )?,
        warnings,
    })
}

/// A CPU cost on CPUs `1 / scale` as fast; one that was not zero stays at
/// least 1 ns.
fn scaled(d: Dur, scale: f64) -> Dur {
    if d == Dur::ZERO {
        Dur::ZERO
    } else {
        sim::dist::to_ns(d.0 as f64 * scale).max(Dur(1))
    }
}

/// One of a few named settings (`None` when absent), or an error that
/// lists them.
fn choice<T: Copy>(
    src: &Source,
    field: &str,
    what: &str,
    v: Option<&Spanned<String>>,
    options: &[(&str, T)],
) -> Result<Option<T>, ScenarioError> {
    let Some(v) = v else { return Ok(None) };
    match options.iter().find(|(n, _)| n == v.get_ref()) {
        Some((_, t)) => Ok(Some(*t)),
        None => {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            Err(ScenarioError::new(
                src.locate(Some(v.span())),
                field,
                format!(
                    "unknown {what} `{}`; expected {}",
                    v.get_ref(),
                    names.join(", ")
                ),
            ))
        }
    }
}

/// R125: the machine's tick handler leaves time between ticks at the
/// run's HZ. The error names `scenario.hz` when the scenario chose the
/// HZ, else the machine's `tick_cost` (or its `hz`).
fn tick_fits(
    src: &Source,
    doc: &Doc,
    scenario_hz: &Option<Spanned<u32>>,
    hz: u32,
    tick: Dur,
) -> Result<(), ScenarioError> {
    let period = models::timer::shortest_tick_period(hz);
    if tick < period {
        return Ok(());
    }
    if let Some(v) = scenario_hz {
        return Err(ScenarioError::new(
            src.locate(Some(v.span())),
            "scenario.hz",
            format!(
                "at HZ {hz} the machine's tick of {tick} leaves no time between ticks \
                 (a period of {period})"
            ),
        ));
    }
    let m = doc.machine.as_ref().map(Spanned::get_ref);
    let span = (m.and_then(|m| m.tick_cost.as_ref().map(Spanned::span)))
        .or(m.and_then(|m| m.hz.as_ref().map(Spanned::span)));
    Err(ScenarioError::new(
        src.locate(span),
        "machine.tick_cost",
        format!("a tick of {tick} leaves no time between ticks at HZ {hz} (a period of {period})"),
    ))
}
