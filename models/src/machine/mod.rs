//! The machine under the kernel: topology, the costs of the hardware
//! (cache-line transfers by distance, IPIs, idle-state exits, context
//! switches, interrupts, a hypervisor's wakeups and steal) and the kernel's build
//! and boot choices that shape scheduling (HZ, preemption model, base
//! slice).
//!
//! A [`Profile`] is a named machine whose every value is [`Cited`]: a
//! value, the range its sources allow (for uncertainty bands) and where it
//! comes from (docs/machine-sources.md gathers the sources). A
//! [`Machine`] is a profile resolved for one run: sized to the run's CPU
//! count, with the scenario's overrides applied, holding plain numbers.
//!
//! - [`topology`]: sockets, cores, SMT siblings; the distance between two
//!   CPUs.
//! - [`profiles`]: the built-in profiles.
//! - [`wake`]: what waking a task onto an idle CPU costs (R63-R66):
//!   the idle state it sits in, IPIs, a guest's halt polling.
//! - [`episodes`]: random episodes that take a CPU from its task: a
//!   guest's vCPUs losing time to the host (R67), interrupts (R125).
//! - [`interrupts`]: the tick and the other interrupts of every CPU (R125).

pub mod episodes;
pub mod interrupts;
pub mod profiles;
pub mod topology;
pub mod wake;

use sim::Dur;
pub use topology::{Distance, Topology};

/// A value with the range its sources allow and where it comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cited<T> {
    pub value: T,
    /// The lowest and highest value the sources support (both `value`
    /// when the value is a kernel constant).
    pub low: T,
    pub high: T,
    /// Where the value comes from: a kernel source file and symbol, or a
    /// publication and its figure or table.
    pub source: &'static str,
}

impl<T: Copy> Cited<T> {
    /// A constant: its range is itself.
    pub const fn exact(value: T, source: &'static str) -> Cited<T> {
        Cited {
            value,
            low: value,
            high: value,
            source,
        }
    }

    /// A measured value with the range its sources give.
    pub const fn range(value: T, low: T, high: T, source: &'static str) -> Cited<T> {
        Cited {
            value,
            low,
            high,
            source,
        }
    }
}

/// The kernel's preemption model (CONFIG_PREEMPT_*): where a task that
/// should give up its CPU does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preemption {
    /// PREEMPT_NONE: at the return to user space and at `cond_resched()`.
    None,
    /// PREEMPT_VOLUNTARY: also at `might_resched()` (every `might_sleep()`).
    Voluntary,
    /// PREEMPT (full): at any `preempt_enable()` and interrupt return.
    Full,
}

impl Preemption {
    pub fn as_str(self) -> &'static str {
        match self {
            Preemption::None => "none",
            Preemption::Voluntary => "voluntary",
            Preemption::Full => "full",
        }
    }
}

/// One idle state of a CPU (`struct cpuidle_state`): entered when the
/// CPU expects to stay idle at least `target_residency`, left after
/// `exit_latency`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleState {
    pub name: &'static str,
    pub exit_latency: Dur,
    pub target_residency: Dur,
    /// The CPU polls its thread flags in this state (POLL, MWAIT): a
    /// wakeup needs no IPI (`set_nr_if_polling`).
    pub polling: bool,
}

/// Cache-line transfer costs by the distance between the CPU that has the
/// line and the one that wants it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineCosts<T> {
    /// The line is already in the CPU's own cache.
    pub local: T,
    /// From the CPU's SMT sibling (a shared L1/L2).
    pub smt: T,
    /// From another core of the same socket (through the LLC).
    pub socket: T,
    /// From a core of another socket (over the interconnect).
    pub remote: T,
}

impl LineCosts<Dur> {
    /// The cost of a transfer over `d`.
    pub fn at(&self, d: Distance) -> Dur {
        match d {
            Distance::Same => self.local,
            Distance::Smt => self.smt,
            Distance::Socket => self.socket,
            Distance::Remote => self.remote,
        }
    }
}

/// What a virtual machine adds to the wake path and takes from its vCPUs:
/// durations `T` and the steal fraction `F` (cited in a profile, plain in
/// a machine).
#[derive(Clone, Debug, PartialEq)]
pub struct GuestCosts<T, F = f64> {
    /// An IPI sent from a guest: a VM exit, the host's delivery and the
    /// entry on the target (no IPI virtualization).
    pub ipi: T,
    /// How long the host polls a halted vCPU before it schedules the vCPU
    /// thread out (`halt_poll_ns`); a wakeup within it costs no host
    /// wakeup.
    pub host_halt_poll: T,
    /// A halted vCPU whose thread the host scheduled out: the host's
    /// wakeup of the thread and the VM entry.
    pub host_wake: T,
    /// Fraction of a vCPU's time the host runs something else (steal).
    pub steal_fraction: F,
    /// Mean length of one steal episode.
    pub steal_episode: T,
}

/// What takes a running task's CPU for a few microseconds at a time
/// (R125): durations `T` and a rate `F` (cited in a profile, plain in a
/// machine).
#[derive(Clone, Debug, PartialEq)]
pub struct Interrupts<T, F = f64> {
    /// The scheduler tick's handler on a CPU that runs a task
    /// (`tick_nohz_handler` and what it calls: `update_process_times`,
    /// `sched_tick`), HZ times a second.
    pub tick: T,
    /// Other interrupts a second on each CPU: device interrupts, IPIs,
    /// softirqs, in a guest the host's own interrupts and exits.
    pub irq_rate: F,
    /// Mean time of one of them (exponential).
    pub irq: T,
}

/// A named machine: every value cited. The built-in ones are in
/// [`profiles::PROFILES`].
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: &'static str,
    /// One line: what machine this is.
    pub summary: &'static str,
    pub topology: Cited<Topology>,
    /// CONFIG_HZ.
    pub hz: Cited<u32>,
    pub preemption: Cited<Preemption>,
    /// The EEVDF base slice before scaling (`normalized_sysctl_sched_base_slice`).
    pub base_slice: Cited<Dur>,
    /// CPU time of one context switch (`context_switch`, the switch of
    /// address space and stack, not the cache refill after it).
    pub switch_cost: Cited<Dur>,
    /// An IPI on bare metal, from the send to the handler on the target.
    pub ipi: Cited<Dur>,
    /// CPU time a waker spends on its own CPU to wake a task on another
    /// CPU with an IPI (R122): the send on bare metal; in a guest, the VM
    /// exit of the APIC write.
    pub wake_send: Cited<Dur>,
    /// The cpuidle states, shallowest first (state 0 is POLL).
    pub idle_states: Cited<&'static [IdleState]>,
    pub lines: LineCosts<Cited<Dur>>,
    pub interrupts: Interrupts<Cited<Dur>, Cited<f64>>,
    /// For a virtual machine, what the hypervisor adds.
    pub guest: Option<GuestCosts<Cited<Dur>, Cited<f64>>>,
}

/// A profile resolved for one run: plain numbers, sized to its CPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// The profile's name (`ideal`, `server-2s`, ...).
    pub profile: String,
    pub topology: Topology,
    pub hz: u32,
    pub preemption: Preemption,
    /// The EEVDF base slice as the kernel sets it for this CPU count
    /// ([`scaled_base_slice`]).
    pub base_slice: Dur,
    pub switch_cost: Dur,
    pub ipi: Dur,
    pub wake_send: Dur,
    pub idle_states: Vec<IdleState>,
    pub lines: LineCosts<Dur>,
    pub interrupts: Interrupts<Dur>,
    pub guest: Option<GuestCosts<Dur>>,
}

impl Machine {
    /// `p` resolved for `cpus` CPUs (its own topology when `None`), every
    /// value at its cited value.
    pub fn from_profile(p: &Profile, cpus: Option<u32>) -> Machine {
        let topology = match cpus {
            Some(n) => p.topology.value.resized(n),
            None => p.topology.value,
        };
        // The kernel scales by the CPUs online, not by the shape they
        // were cut from: a resized topology may round up (3 of 2 x 32 x 2
        // is one socket of 2 cores x 2 threads).
        let online = cpus.unwrap_or(topology.cpus());
        Machine {
            profile: p.name.to_string(),
            topology,
            hz: p.hz.value,
            preemption: p.preemption.value,
            base_slice: scaled_base_slice(p.base_slice.value, online),
            switch_cost: p.switch_cost.value,
            ipi: p.ipi.value,
            wake_send: p.wake_send.value,
            idle_states: p.idle_states.value.to_vec(),
            lines: LineCosts {
                local: p.lines.local.value,
                smt: p.lines.smt.value,
                socket: p.lines.socket.value,
                remote: p.lines.remote.value,
            },
            interrupts: Interrupts {
                tick: p.interrupts.tick.value,
                irq_rate: p.interrupts.irq_rate.value,
                irq: p.interrupts.irq.value,
            },
            guest: p.guest.as_ref().map(|g| GuestCosts {
                ipi: g.ipi.value,
                host_halt_poll: g.host_halt_poll.value,
                host_wake: g.host_wake.value,
                steal_fraction: g.steal_fraction.value,
                steal_episode: g.steal_episode.value,
            }),
        }
    }

    /// The machine of no physical cost: what every run was before
    /// machines were modelled, kept for checking a model's logic apart
    /// from the machine's.
    pub fn ideal(cpus: Option<u32>) -> Machine {
        Machine::from_profile(profiles::by_name("ideal").expect("ideal is built in"), cpus)
    }

    /// True when the machine adds no cost of its own to the wake path, to
    /// cache lines or to a CPU's time (the `ideal` profile): the world
    /// skips those models.
    pub fn is_ideal(&self) -> bool {
        self.ipi == Dur::ZERO
            && self.wake_send == Dur::ZERO
            && self.idle_states.iter().all(|s| s.exit_latency == Dur::ZERO)
            && self.lines.local == Dur::ZERO
            && self.lines.smt == Dur::ZERO
            && self.lines.socket == Dur::ZERO
            && self.lines.remote == Dur::ZERO
            && self.interrupts.tick == Dur::ZERO
            && (self.interrupts.irq_rate == 0.0 || self.interrupts.irq == Dur::ZERO)
            && self.guest.is_none()
    }
}

/// The kernel's base slice for `cpus` online CPUs: `update_sysctl()` in
/// kernel/sched/fair.c multiplies `normalized_sysctl_sched_base_slice` by
/// `1 + ilog2(min(cpus, 8))` (SCHED_TUNABLESCALING_LOG, the default).
pub fn scaled_base_slice(normalized: Dur, cpus: u32) -> Dur {
    let factor = 1 + u64::from(cpus.clamp(1, 8).ilog2());
    Dur(normalized.0 * factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_slice_scales_as_update_sysctl_does() {
        let n = Dur(700_000);
        let ms = |c| scaled_base_slice(n, c).0 as f64 / 1e6;
        assert_eq!(ms(1), 0.7);
        assert_eq!(ms(2), 1.4);
        assert_eq!(ms(3), 1.4);
        assert_eq!(ms(4), 2.1);
        assert_eq!(ms(7), 2.1);
        assert_eq!(ms(8), 2.8);
        assert_eq!(ms(64), 2.8, "scaling stops at 8 CPUs");
    }

    #[test]
    fn base_slice_scales_with_the_cpus_online_not_the_rounded_topology() {
        let p = profiles::by_name("server-2s").unwrap();
        let m = Machine::from_profile(p, Some(3));
        assert_eq!(m.topology.cpus(), 4, "3 CPUs cut from SMT pairs round up");
        assert_eq!(m.base_slice, Dur(1_400_000), "1 + ilog2(3) = 2");
        let whole = Machine::from_profile(p, None);
        assert_eq!(whole.base_slice, Dur(2_800_000));
    }

    #[test]
    fn every_profile_resolves_and_only_ideal_is_free() {
        for p in profiles::PROFILES {
            let m = Machine::from_profile(p, None);
            assert_eq!(m.is_ideal(), p.name == "ideal", "{}", p.name);
            assert!(m.topology.cpus() >= 1);
        }
    }
}
