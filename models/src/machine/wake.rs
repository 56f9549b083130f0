//! The wake path to an idle CPU (R63-R66, R68): which idle state the CPU
//! sits in after a given idle time, and what waking a task onto it costs
//! on bare metal or in a KVM guest.
//!
//! A wakeup to a busy CPU costs nothing here: the wakee is queued there
//! and waits for the CPU as any runnable task does (R63).

use super::{Distance, IdleState, Machine};
use crate::CpuId;
use sim::Dur;

/// What waking a task onto an idle CPU costs, and what it did on the way
/// (for the `cpu/...` counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeCost {
    /// From the wakeup until the task runs on the CPU.
    pub latency: Dur,
    /// An IPI was sent (a bare-metal CPU that does not poll, or a guest's
    /// vCPU).
    pub ipi: bool,
    /// The idle state left, as an index into `Machine::idle_states`, and
    /// its exit latency: the CPU's own on bare metal; the host CPU's in a
    /// guest whose vCPU thread the host had scheduled out.
    pub exited: Option<usize>,
    /// A guest: the host was still polling the halted vCPU (R66).
    pub halt_poll_hit: bool,
    /// A guest: the host had scheduled the vCPU thread out and wakes it
    /// (R66).
    pub host_wake: bool,
}

/// R65: the idle state a CPU that has been idle for `idle_for` sits in:
/// the deepest whose target residency is at most `idle_for` (state 0,
/// POLL, when none is). `states` is shallowest first.
///
/// This is menu's and teo's choice (`menu_select`, `teo_select`) with an
/// exact prediction of the idle length: both pick the deepest enabled
/// state whose residency fits the predicted idle time. The world knows
/// the idle time only when the wakeup comes, so it gives the governor a
/// perfect predictor; a real one mispredicts both ways (too deep: a
/// longer exit; too shallow: a shorter one), which this rule does not
/// model. It is the cheapest rule that keeps the two things that matter:
/// a CPU idle for long pays the deep state's exit, one idle for a moment
/// pays almost nothing.
pub fn idle_state(states: &[IdleState], idle_for: Dur) -> usize {
    (states.iter())
        .rposition(|s| s.target_residency <= idle_for)
        .unwrap_or(0)
}

/// `try_to_wake_up` of a task onto idle CPU `to`, idle for `idle_for`,
/// from CPU `from` (the waker's, or the one whose timer fired; `None`:
/// another CPU not known).
///
/// - R64: from `to` itself (a timer on that CPU): no IPI; the CPU leaves
///   its idle state for the timer's interrupt.
/// - R63 on bare metal: the wakee goes on `to`'s wake list; an IPI tells
///   it, unless its idle state polls (POLL, MWAIT: `set_nr_if_polling`),
///   when writing its thread flags is enough: one cache-line transfer at
///   the distance between the two. Then the exit latency (R65).
/// - R66 in a guest: the vCPU halted (HLT, no polling): the IPI is a VM
///   exit; beyond the host's halt-poll window for the vCPU, `poll_window`
///   (R119: [`HaltPoll`]), the host also wakes the vCPU thread, and its
///   CPU leaves the idle state it entered when the thread was scheduled
///   out (R65 over the time past the window). Bare metal ignores
///   `poll_window`.
pub fn ttwu_idle(
    m: &Machine,
    from: Option<CpuId>,
    to: CpuId,
    idle_for: Dur,
    poll_window: Dur,
) -> WakeCost {
    let local = from == Some(to);
    match &m.guest {
        None => {
            let i = idle_state(&m.idle_states, idle_for);
            let state = &m.idle_states[i];
            let signal = match (local, state.polling) {
                (true, _) => Dur::ZERO,
                (false, true) => {
                    let d = from.map_or(Distance::Socket, |f| m.topology.distance(f, to));
                    m.lines.at(d)
                }
                (false, false) => m.ipi,
            };
            WakeCost {
                latency: signal + state.exit_latency,
                ipi: !local && !state.polling,
                exited: Some(i),
                halt_poll_hit: false,
                host_wake: false,
            }
        }
        Some(g) => {
            let ipi = if local { Dur::ZERO } else { g.ipi };
            let poll_window = poll_window.min(g.host_halt_poll);
            if idle_for < poll_window {
                return WakeCost {
                    latency: ipi,
                    ipi: !local,
                    exited: None,
                    halt_poll_hit: true,
                    host_wake: false,
                };
            }
            let i = idle_state(&m.idle_states, idle_for - poll_window);
            WakeCost {
                latency: ipi + g.host_wake + m.idle_states[i].exit_latency,
                ipi: !local,
                exited: Some(i),
                halt_poll_hit: false,
                host_wake: true,
            }
        }
    }
}

/// R119: the host's halt-poll window of one vCPU, as KVM adapts it after
/// every halt (virt/kvm/kvm_main.c `kvm_vcpu_halt`, `grow_halt_poll_ns`,
/// `shrink_halt_poll_ns`; 6.12.118). A vCPU starts with none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HaltPoll {
    /// `vcpu->halt_poll_ns`: how long the host polls the next halt
    /// (capped at the VM's maximum when it is used).
    pub window: Dur,
}

/// `halt_poll_ns_grow`: a window that grows doubles.
pub const HALT_POLL_GROW: u64 = 2;
/// `halt_poll_ns_grow_start`: the first window, 10 us.
pub const HALT_POLL_GROW_START: Dur = Dur(10_000);
/// `halt_poll_ns_shrink`: a window that shrinks halves.
pub const HALT_POLL_SHRINK: u64 = 2;

impl HaltPoll {
    /// The window the next halt polls for, under the VM's maximum `max`
    /// (`kvm_vcpu_max_halt_poll_ns`, the host's `halt_poll_ns`).
    pub fn current(&self, max: Dur) -> Dur {
        self.window.min(max)
    }

    /// A halt of `halt` (from the HLT to the wakeup) is over: the window
    /// adapts as `kvm_vcpu_halt` has it. A halt the poll covered leaves
    /// it; one longer than the maximum halves it (to none below 10 us);
    /// one shorter than the maximum that the poll missed doubles it (to
    /// 10 us from none). A window past the maximum is cut to it at the
    /// next halt, as the kernel does.
    pub fn halt_ended(&mut self, halt: Dur, max: Dur) {
        let w = self.current(max);
        self.window = if max == Dur::ZERO {
            Dur::ZERO
        } else if halt <= w {
            w
        } else if w > Dur::ZERO && halt > max {
            let half = Dur(w.ns() / HALT_POLL_SHRINK);
            if half < HALT_POLL_GROW_START {
                Dur::ZERO
            } else {
                half
            }
        } else if w < max && halt < max {
            Dur(w.ns() * HALT_POLL_GROW).max(HALT_POLL_GROW_START)
        } else {
            w
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::profiles;

    const US: Dur = Dur(1_000);

    fn server() -> Machine {
        Machine::from_profile(profiles::by_name("server-2s").unwrap(), Some(128))
    }

    #[test]
    fn r65_the_deepest_state_whose_residency_fits_the_idle_time() {
        let m = server();
        let name = |d| m.idle_states[idle_state(&m.idle_states, d)].name;
        // icx_cstates: C1 1/1, C1E 4/4, C6 170/600 (us, exit/residency).
        assert_eq!(name(Dur::ZERO), "POLL");
        assert_eq!(name(Dur(999)), "POLL");
        assert_eq!(name(US), "C1");
        assert_eq!(name(4 * US), "C1E");
        assert_eq!(name(599 * US), "C1E");
        assert_eq!(name(600 * US), "C6");
        assert_eq!(name(Dur(10_000_000_000)), "C6");
    }

    #[test]
    fn r63_r64_bare_metal_costs_by_state_and_distance() {
        let m = server();
        // CPU 0 and 1 share a socket (51 ns a line), 0 and 32 do not
        // (108 ns); every Ice Lake state polls (MWAIT): no IPI.
        let c = ttwu_idle(&m, Some(CpuId(0)), CpuId(1), 700 * US, Dur::ZERO);
        assert_eq!(c.latency, Dur(51) + 170 * US);
        assert!(!c.ipi);
        assert_eq!(c.exited, Some(3));
        let c = ttwu_idle(&m, Some(CpuId(0)), CpuId(32), 2 * US, Dur::ZERO);
        assert_eq!(c.latency, Dur(108) + US);
        // Not known where from: a transfer within the socket.
        assert_eq!(
            ttwu_idle(&m, None, CpuId(1), Dur::ZERO, Dur::ZERO).latency,
            Dur(51)
        );
        // A timer on the CPU itself: only the exit.
        let c = ttwu_idle(&m, Some(CpuId(5)), CpuId(5), 10 * US, Dur::ZERO);
        assert_eq!(c.latency, 4 * US);
        assert!(!c.ipi);
        // A state that does not poll needs the IPI.
        let mut halt = m.clone();
        halt.idle_states[2].polling = false;
        let c = ttwu_idle(&halt, Some(CpuId(0)), CpuId(1), 10 * US, Dur::ZERO);
        assert_eq!(c.latency, halt.ipi + 4 * US);
        assert!(c.ipi);
    }

    #[test]
    fn r66_a_guest_pays_the_vm_exit_and_past_the_poll_window_the_host_wake() {
        let m = Machine::from_profile(profiles::by_name("kvm-guest").unwrap(), Some(8));
        let g = m.guest.clone().unwrap();
        // Within the 200 us window: a poll hit, the IPI's VM exit only.
        let c = ttwu_idle(&m, Some(CpuId(0)), CpuId(1), 199 * US, g.host_halt_poll);
        assert_eq!(c.latency, g.ipi);
        assert!(c.ipi && c.halt_poll_hit && !c.host_wake);
        assert_eq!(c.exited, None);
        // 900 us halted: the host CPU idled 700 us past the window, in C6.
        let c = ttwu_idle(&m, Some(CpuId(0)), CpuId(1), 900 * US, g.host_halt_poll);
        assert_eq!(c.latency, g.ipi + g.host_wake + 170 * US);
        assert!(c.host_wake && !c.halt_poll_hit);
        assert_eq!(c.exited, Some(3));
        // 210 us: 10 us past the window, the host CPU in C1E.
        let c = ttwu_idle(&m, Some(CpuId(0)), CpuId(1), 210 * US, g.host_halt_poll);
        assert_eq!(c.latency, g.ipi + g.host_wake + 4 * US);
        // The vCPU's own timer: no IPI, the host's part alone.
        let c = ttwu_idle(&m, Some(CpuId(1)), CpuId(1), 900 * US, g.host_halt_poll);
        assert_eq!(c.latency, g.host_wake + 170 * US);
        assert!(!c.ipi);
    }

    /// R119: from none, 190 us halts the poll missed (shorter than the
    /// 200 us maximum) grow the window 10, 20, 40, 80, 160 us, then past
    /// the maximum (used as 200); a halt the poll covered leaves it; a
    /// halt longer than the maximum halves it, and below 10 us it is gone.
    #[test]
    fn r119_the_window_grows_from_10us_on_short_halts_and_halves_on_long_ones() {
        let max = 200 * US;
        let mut h = HaltPoll::default();
        let mut seen = vec![];
        for _ in 0..6 {
            h.halt_ended(190 * US, max);
            seen.push(h.current(max));
        }
        assert_eq!(seen, [10, 20, 40, 80, 160, 200].map(|u| u * US));
        assert_eq!(h.window, 320 * US);
        // Covered by the poll: unchanged (cut to the maximum first).
        h.halt_ended(190 * US, max);
        assert_eq!(h.window, max);
        // A long halt halves it: 100, 50, 25, 12 (12.5) us, then none.
        let mut seen = vec![];
        for _ in 0..5 {
            h.halt_ended(1000 * US, max);
            seen.push(h.window);
        }
        assert_eq!(
            seen,
            [
                Dur(100_000),
                Dur(50_000),
                Dur(25_000),
                Dur(12_500),
                Dur::ZERO
            ]
        );
        // With none, a long halt leaves none; a halt of exactly the
        // maximum neither grows nor shrinks it.
        h.halt_ended(1000 * US, max);
        assert_eq!(h.window, Dur::ZERO);
        h.halt_ended(max, max);
        assert_eq!(h.window, Dur::ZERO);
        // No polling on the host: never a window.
        h.halt_ended(5 * US, Dur::ZERO);
        assert_eq!(h.window, Dur::ZERO);
    }

    /// R66 with R119: a wakeup inside the vCPU's current window is a poll
    /// hit; with no window every wakeup goes through the host.
    #[test]
    fn r66_r119_the_poll_hit_follows_the_vcpus_window() {
        let m = Machine::from_profile(profiles::by_name("kvm-guest").unwrap(), Some(8));
        let g = m.guest.clone().unwrap();
        let c = ttwu_idle(&m, Some(CpuId(0)), CpuId(1), 30 * US, 40 * US);
        assert!(c.halt_poll_hit);
        assert_eq!(c.latency, g.ipi);
        // 30 us halted, a 20 us window: 10 us past it, the host CPU in C1E.
        let c = ttwu_idle(&m, Some(CpuId(0)), CpuId(1), 30 * US, 20 * US);
        assert!(c.host_wake);
        assert_eq!(c.latency, g.ipi + g.host_wake + 4 * US);
        // No window: the host CPU idled the whole 2 us, in C1.
        let c = ttwu_idle(&m, Some(CpuId(0)), CpuId(1), 2 * US, Dur::ZERO);
        assert_eq!(c.latency, g.ipi + g.host_wake + US);
        // A window past the host's maximum is cut to it.
        let c = ttwu_idle(&m, Some(CpuId(0)), CpuId(1), 250 * US, 400 * US);
        assert!(c.host_wake);
    }
}
