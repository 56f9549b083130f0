//! Pass 1, first half: the `[machine]` table read into a profile, a
//! built-in one (`models::machine::profiles`) with the scenario's
//! overrides written over its values. `settings` sizes it to the run's
//! CPUs and takes the scheduler's defaults from it.

use super::dur_field;
use crate::scenario::doc::{Doc, MachineDef};
use crate::scenario::error::ScenarioError;
use crate::scenario::source::Source;
use models::machine::{profiles, Preemption, Profile, Topology};
use sim::Dur;
use toml::Spanned;

/// The profile of a scenario without a `[machine]` table, or whose table
/// names none. A later step makes this a real machine.
pub const DEFAULT_PROFILE: &str = "server-1s";

/// The profile of no physical cost. A run on it keeps the scheduler
/// defaults that every scenario had before machines were modelled.
pub const IDEAL: &str = "ideal";

/// Where a value the scenario overrides comes from, in place of the
/// profile's citation.
const SET_HERE: &str = "set in the scenario ([machine])";

/// Most sockets, cores per socket and threads per core an override may
/// give: larger than any machine Linux runs on, small enough that their
/// product stays a count of CPUs.
const MAX_SOCKETS: u32 = 64;
const MAX_CORES: u32 = 4096;
const MAX_THREADS: u32 = 8;

/// The longest machine cost or slice an override may give: a value past
/// it is a unit mistake (`1s` for `1us`), not a machine.
const MAX_COST: Dur = Dur(1_000_000_000);

/// The guest fields, in the table's order: an error on a bare-metal
/// profile.
const GUEST_FIELDS: [&str; 5] = [
    "guest_ipi",
    "host_halt_poll",
    "host_wake",
    "steal_fraction",
    "steal_episode",
];

/// The profile `doc`'s `[machine]` table describes: the named one (or
/// [`DEFAULT_PROFILE`]) with every override written over its value.
pub(super) fn profile(src: &Source, doc: &Doc) -> Result<Profile, ScenarioError> {
    let empty = MachineDef::default();
    let m = doc.machine.as_ref().map_or(&empty, Spanned::get_ref);
    let base = match &m.profile {
        None => profiles::by_name(DEFAULT_PROFILE).expect("the default profile is built in"),
        Some(name) => profiles::by_name(name.get_ref()).ok_or_else(|| {
            ScenarioError::new(
                src.locate(Some(name.span())),
                "machine.profile",
                unknown_profile(name.get_ref()),
            )
        })?,
    };
    let mut p = base.clone();
    let t = p.topology.value;
    let sockets = count(src, "machine.sockets", &m.sockets, MAX_SOCKETS)?;
    let cores = count(
        src,
        "machine.cores_per_socket",
        &m.cores_per_socket,
        MAX_CORES,
    )?;
    let threads = count(
        src,
        "machine.threads_per_core",
        &m.threads_per_core,
        MAX_THREADS,
    )?;
    if sockets.is_some() || cores.is_some() || threads.is_some() {
        p.topology.value = Topology::new(
            sockets.unwrap_or(t.sockets),
            cores.unwrap_or(t.cores_per_socket),
            threads.unwrap_or(t.threads_per_core),
        );
        p.topology.source = SET_HERE;
    }
    if let Some(v) = &m.hz {
        p.hz.value = hz(src, "machine.hz", v)?;
        p.hz.source = SET_HERE;
    }
    if let Some(v) = &m.preemption {
        p.preemption.value = preemption(src, "machine.preemption", v)?;
        p.preemption.source = SET_HERE;
    }
    if let Some(d) = cost(src, "machine.base_slice", &m.base_slice)? {
        if d == Dur::ZERO {
            let span = m.base_slice.as_ref().map(Spanned::span);
            return Err(ScenarioError::new(
                src.locate(span),
                "machine.base_slice",
                "a base slice must be longer than 0",
            ));
        }
        set(&mut p.base_slice, d);
    }
    if let Some(d) = cost(src, "machine.switch_cost", &m.switch_cost)? {
        set(&mut p.switch_cost, d);
    }
    if let Some(d) = cost(src, "machine.ipi", &m.ipi)? {
        set(&mut p.ipi, d);
    }
    if let Some(d) = cost(src, "machine.wake_send", &m.wake_send)? {
        set(&mut p.wake_send, d);
    }
    for (field, v, slot) in [
        ("machine.line_local", &m.line_local, &mut p.lines.local),
        ("machine.line_smt", &m.line_smt, &mut p.lines.smt),
        ("machine.line_socket", &m.line_socket, &mut p.lines.socket),
        ("machine.line_remote", &m.line_remote, &mut p.lines.remote),
    ] {
        if let Some(d) = cost(src, field, v)? {
            set(slot, d);
        }
    }
    interrupts(src, m, &mut p)?;
    let guest_spans = [
        m.guest_ipi.as_ref().map(Spanned::span),
        m.host_halt_poll.as_ref().map(Spanned::span),
        m.host_wake.as_ref().map(Spanned::span),
        m.steal_fraction.as_ref().map(Spanned::span),
        m.steal_episode.as_ref().map(Spanned::span),
    ];
    match p.guest.as_mut() {
        None => {
            if let Some((field, span)) =
                (GUEST_FIELDS.iter().zip(guest_spans)).find_map(|(f, s)| s.map(|s| (*f, s)))
            {
                let guests: Vec<&str> = (profiles::PROFILES.iter())
                    .filter(|p| p.guest.is_some())
                    .map(|p| p.name)
                    .collect();
                return Err(ScenarioError::new(
                    src.locate(Some(span)),
                    format!("machine.{field}"),
                    format!(
                        "`{field}` is a virtual machine's value; profile `{}` is bare metal \
                         (guest profiles: {})",
                        p.name,
                        guests.join(", ")
                    ),
                ));
            }
        }
        Some(g) => {
            for (field, v, slot) in [
                ("machine.guest_ipi", &m.guest_ipi, &mut g.ipi),
                (
                    "machine.host_halt_poll",
                    &m.host_halt_poll,
                    &mut g.host_halt_poll,
                ),
                ("machine.host_wake", &m.host_wake, &mut g.host_wake),
                (
                    "machine.steal_episode",
                    &m.steal_episode,
                    &mut g.steal_episode,
                ),
            ] {
                if let Some(d) = cost(src, field, v)? {
                    set(slot, d);
                }
            }
            if let Some(v) = &m.steal_fraction {
                let f = *v.get_ref();
                if !(0.0..1.0).contains(&f) {
                    return Err(ScenarioError::new(
                        src.locate(Some(v.span())),
                        "machine.steal_fraction",
                        format!(
                            "{f} is out of range; expected a fraction of a vCPU's time \
                             from 0 up to (not including) 1"
                        ),
                    ));
                }
                g.steal_fraction = models::machine::Cited::exact(f, SET_HERE);
            }
        }
    }
    Ok(p)
}

/// Most interrupts a second on one CPU an override may give: one every
/// microsecond is a CPU that does nothing else.
const MAX_IRQ_RATE: f64 = 1e6;

/// The `[machine]` interrupt fields (R125) written over `p`'s: a rate
/// from 0 to [`MAX_IRQ_RATE`], and interrupts that take less than all of
/// a CPU's time. Whether the tick leaves time between ticks depends on
/// the run's HZ, which `settings` checks.
fn interrupts(src: &Source, m: &MachineDef, p: &mut Profile) -> Result<(), ScenarioError> {
    if let Some(d) = cost(src, "machine.tick_cost", &m.tick_cost)? {
        set(&mut p.interrupts.tick, d);
    }
    if let Some(d) = cost(src, "machine.irq_cost", &m.irq_cost)? {
        set(&mut p.interrupts.irq, d);
    }
    if let Some(v) = &m.irq_rate {
        let r = *v.get_ref();
        if !(0.0..=MAX_IRQ_RATE).contains(&r) {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                "machine.irq_rate",
                format!(
                    "{r} is out of range; expected interrupts a second on one CPU, \
                     from 0 to {MAX_IRQ_RATE}"
                ),
            ));
        }
        p.interrupts.irq_rate = models::machine::Cited::exact(r, SET_HERE);
    }
    let i = &p.interrupts;
    let busy = i.irq_rate.value * i.irq.value.0 as f64 / 1e9;
    if busy >= 1.0 {
        let span =
            (m.irq_rate.as_ref().map(Spanned::span)).or(m.irq_cost.as_ref().map(Spanned::span));
        return Err(ScenarioError::new(
            src.locate(span),
            if m.irq_rate.is_some() {
                "machine.irq_rate"
            } else {
                "machine.irq_cost"
            },
            format!(
                "{} interrupts a second of {} each take all of a CPU's time; expected less",
                i.irq_rate.value, i.irq.value
            ),
        ));
    }
    Ok(())
}

/// The message for a profile name that is not built in: the names, and
/// the nearest one if a typo is likely.
pub fn unknown_profile(name: &str) -> String {
    let names: Vec<&str> = profiles::PROFILES.iter().map(|p| p.name).collect();
    let hint = crate::scenario::hint::suggestion(name, names.iter().copied());
    format!(
        "unknown machine profile `{name}`; expected one of {}{hint} (`convoy machines` lists them)",
        names.join(", ")
    )
}

/// Writes an override over a cited value.
fn set(c: &mut models::machine::Cited<Dur>, d: Dur) {
    c.value = d;
    c.source = SET_HERE;
}

/// A whole number from 1 to `max`.
fn count(
    src: &Source,
    field: &str,
    v: &Option<Spanned<u32>>,
    max: u32,
) -> Result<Option<u32>, ScenarioError> {
    match v {
        None => Ok(None),
        Some(v) if (1..=max).contains(v.get_ref()) => Ok(Some(*v.get_ref())),
        Some(v) => Err(ScenarioError::new(
            src.locate(Some(v.span())),
            field,
            format!("{} is out of range; expected 1 to {max}", v.get_ref()),
        )),
    }
}

/// A duration from 0 to [`MAX_COST`].
fn cost(
    src: &Source,
    field: &str,
    v: &Option<Spanned<String>>,
) -> Result<Option<Dur>, ScenarioError> {
    let Some(v) = v else { return Ok(None) };
    let d = dur_field(src, field, v)?;
    if d > MAX_COST {
        return Err(ScenarioError::new(
            src.locate(Some(v.span())),
            field,
            format!("{d} is more than a machine cost can be; expected at most 1s"),
        ));
    }
    Ok(Some(d))
}

/// CONFIG_HZ: one of the kernel's choices (`kernel/Kconfig.hz`).
pub(super) fn hz(src: &Source, field: &str, v: &Spanned<u32>) -> Result<u32, ScenarioError> {
    if [100, 250, 300, 1000].contains(v.get_ref()) {
        Ok(*v.get_ref())
    } else {
        Err(ScenarioError::new(
            src.locate(Some(v.span())),
            field,
            format!(
                "HZ {} is not a kernel choice; expected 100, 250, 300 or 1000",
                v.get_ref()
            ),
        ))
    }
}

/// A preemption model by its name.
pub(super) fn preemption(
    src: &Source,
    field: &str,
    v: &Spanned<String>,
) -> Result<Preemption, ScenarioError> {
    match v.get_ref().as_str() {
        "none" => Ok(Preemption::None),
        "voluntary" => Ok(Preemption::Voluntary),
        "full" => Ok(Preemption::Full),
        other => Err(ScenarioError::new(
            src.locate(Some(v.span())),
            field,
            format!("unknown preemption model `{other}`; expected none, voluntary, full"),
        )),
    }
}
