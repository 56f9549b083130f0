//! The built-in machine profiles. Every value names its source; the
//! sources are gathered, with how each was read, in
//! docs/machine-sources.md (§ numbers below are its sections).

use super::{Cited, GuestCosts, IdleState, Interrupts, LineCosts, Preemption, Profile, Topology};
use sim::Dur;

const fn us(n: u64) -> Dur {
    Dur(n * 1_000)
}
const fn ns(n: u64) -> Dur {
    Dur(n)
}

/// `drivers/idle/intel_idle.c`, `icx_cstates` (Ice Lake server), with
/// state 0 `POLL` from `drivers/cpuidle/poll_state.c` (§2.1).
const ICX_IDLE: &[IdleState] = &[
    IdleState {
        name: "POLL",
        exit_latency: ns(0),
        target_residency: ns(0),
        polling: true,
    },
    IdleState {
        name: "C1",
        exit_latency: us(1),
        target_residency: us(1),
        polling: true,
    },
    IdleState {
        name: "C1E",
        exit_latency: us(4),
        target_residency: us(4),
        polling: true,
    },
    IdleState {
        name: "C6",
        exit_latency: us(170),
        target_residency: us(600),
        polling: true,
    },
];

/// `drivers/idle/intel_idle.c`, `skx_cstates` (Skylake-SP, Cascade Lake),
/// with state 0 `POLL` (§2.1).
const SKX_IDLE: &[IdleState] = &[
    IdleState {
        name: "POLL",
        exit_latency: ns(0),
        target_residency: ns(0),
        polling: true,
    },
    IdleState {
        name: "C1",
        exit_latency: us(2),
        target_residency: us(2),
        polling: true,
    },
    IdleState {
        name: "C1E",
        exit_latency: us(10),
        target_residency: us(20),
        polling: true,
    },
    IdleState {
        name: "C6",
        exit_latency: us(133),
        target_residency: us(600),
        polling: true,
    },
];

/// No idle cost: the `ideal` machine.
const NO_IDLE: &[IdleState] = &[IdleState {
    name: "POLL",
    exit_latency: ns(0),
    target_residency: ns(0),
    polling: true,
}];

const HZ_DEFAULT: Cited<u32> = Cited::range(
    250,
    100,
    1000,
    "kernel/Kconfig.hz: default HZ_250; Debian 13's 6.12 and 7.3 kernels ship HZ=250 (§1.1); the band spans the kernel's choices",
);
const BASE_SLICE: Cited<Dur> = Cited::range(
    Dur(700_000),
    Dur(700_000),
    Dur(750_000),
    "kernel/sched/fair.c: normalized_sysctl_sched_base_slice, 0.70 ms from v6.15 (and 6.12.117), 0.75 ms v6.6-v6.14 (§1.2)",
);
const SWITCH_COST: Cited<Dur> = Cited::range(
    Dur(2_400),
    Dur(1_100),
    Dur(3_800),
    "pipe ping-pong, half a round trip: 1.1 us between threads, 2.4 us between processes (Linux 6.6, i7 11th gen); 3.8 us direct cost, Li, Ding and Shen, ExpCS 2007 (§4)",
);
const PREEMPT_VOLUNTARY: Cited<Preemption> = Cited::range(
    Preemption::Voluntary,
    Preemption::None,
    Preemption::Full,
    "Debian 13's 6.12 kernel: PREEMPT_VOLUNTARY with PREEMPT_DYNAMIC (§1.1); the kernel's own default is NONE (§1.5)",
);

/// Ice Lake server cache-line transfers: one-way CAS latency, half a
/// ping-pong round trip (§5.2); the bands span the Intel server rows.
const ICX_LINES: LineCosts<Cited<Dur>> = LineCosts {
    local: Cited::range(ns(1), ns(1), ns(2), "L1 hit: 3 cycles (David, Guerraoui, Trigonakis, SOSP 2013, Xeon; §5.1), 1 ns at 2.9 GHz"),
    smt: Cited::range(ns(8), ns(7), ns(10), "core-to-core-latency, Xeon Platinum 8375C (c6i.metal): SMT sibling 8.1 ns; Intel rows 7.4-7.6 (§5.2)"),
    socket: Cited::range(ns(51), ns(44), ns(56), "core-to-core-latency, Xeon Platinum 8375C: same socket 51 ns; Intel rows 44-48; SOSP 2013 Xeon CAS on die 56 ns (§5.1, §5.2)"),
    remote: Cited::range(ns(108), ns(108), ns(152), "core-to-core-latency, Xeon Platinum 8375C: other socket 108 ns; Cascade Lake 134-136; SOSP 2013 Xeon CAS one hop 152 ns (§5.1, §5.2)"),
};

/// Cascade Lake, one socket (Xeon Gold 6242, §5.2).
const CLX_LINES: LineCosts<Cited<Dur>> = LineCosts {
    local: Cited::range(ns(1), ns(1), ns(2), "L1 hit: 3 cycles (SOSP 2013; §5.1)"),
    smt: Cited::range(
        ns(7),
        ns(7),
        ns(8),
        "core-to-core-latency, Xeon Gold 6242: SMT sibling 7.4 ns (§5.2)",
    ),
    socket: Cited::range(
        ns(48),
        ns(44),
        ns(56),
        "core-to-core-latency, Xeon Gold 6242: same socket 48 ns (§5.2)",
    ),
    remote: Cited::range(
        ns(136),
        ns(134),
        ns(152),
        "one socket: never used; Xeon Gold 6242 across sockets 136 ns (§5.2)",
    ),
};

const IPI_BARE: Cited<Dur> = Cited::range(
    Dur(1_000),
    Dur(500),
    Dur(1_450),
    "assumed: no bare-metal x86 figure with a named machine was found (§3.2); below the 1.32-1.45 us one-way measured in KVM guests, which adds a VM exit (§3.3)",
);

/// R122: the waker's side of a wakeup on another CPU that needs an IPI,
/// on bare metal (§3.2).
const WAKE_SEND_BARE: Cited<Dur> = Cited::range(
    Dur(550),
    Dur(410),
    Dur(690),
    "the sender's cost of an asynchronous smp_call_function_single, Westmere: ~1,600 cycles to the same socket, ~2,000 to the other, ~1,200 when the target polls in MWAIT (Pallipadi, LKML, Feb 2012); 0.41-0.69 us at 2.93 GHz (§3.2)",
);

/// R125 on bare metal: the tick's handler and the other interrupts of a
/// quiet machine (§7).
const INTERRUPTS_BARE: Interrupts<Cited<Dur>, Cited<f64>> = Interrupts {
    tick: Cited::range(ns(2_000), ns(1_800), ns(2_900), "Documentation/trace/osnoise-tracer.rst: the local timer interrupt of two irq_noise samples took 1,845 and 2,848 ns (an 8-CPU machine, not named; §7.1)"),
    irq_rate: Cited::range(35.0, 20.0, 60.0, "Documentation/trace/osnoise-tracer.rst, the sample table at HZ 1000: 1,002-1,016 IRQs a second per CPU (2-16 beyond the ticks) and 16-49 softirqs, 22-55 a second in all (§7.2)"),
    irq: Cited::range(us(3), us(1), us(12), "assumed: no bare-metal duration of a device interrupt or softirq found; the development VM's softirqs took 3-12 us (§7.2)"),
};

/// The built-in profiles, `ideal` first.
pub static PROFILES: &[Profile] = &[
    Profile {
        name: "ideal",
        summary: "no physical cost: zero wake, switch and cache-line costs, for checking a model's logic apart from the machine's",
        topology: Cited::exact(Topology::new(1, 1, 1), "sized to the scenario's CPUs; one socket, no SMT"),
        hz: HZ_DEFAULT,
        preemption: Cited::exact(Preemption::None, "kernel/Kconfig.preempt: default PREEMPT_NONE before v7.0 (§1.5)"),
        base_slice: BASE_SLICE,
        switch_cost: Cited::exact(Dur::ZERO, "zero by construction: the ideal machine"),
        ipi: Cited::exact(Dur::ZERO, "zero by construction: the ideal machine"),
        wake_send: Cited::exact(Dur::ZERO, "zero by construction: the ideal machine"),
        idle_states: Cited::exact(NO_IDLE, "zero by construction: the ideal machine"),
        lines: LineCosts {
            local: Cited::exact(Dur::ZERO, "zero by construction: the ideal machine"),
            smt: Cited::exact(Dur::ZERO, "zero by construction: the ideal machine"),
            socket: Cited::exact(Dur::ZERO, "zero by construction: the ideal machine"),
            remote: Cited::exact(Dur::ZERO, "zero by construction: the ideal machine"),
        },
        interrupts: Interrupts {
            tick: Cited::exact(Dur::ZERO, "zero by construction: the ideal machine"),
            irq_rate: Cited::exact(0.0, "zero by construction: the ideal machine"),
            irq: Cited::exact(Dur::ZERO, "zero by construction: the ideal machine"),
        },
        guest: None,
    },
    Profile {
        name: "server-2s",
        summary: "two-socket bare-metal server: 2 x Xeon Platinum 8375C (Ice Lake), 32 cores and SMT 2 each, 128 CPUs (AWS c6i.metal)",
        topology: Cited::exact(Topology::new(2, 32, 2), "AWS c6i.metal: 2 x 32 cores, SMT 2 (§6)"),
        hz: HZ_DEFAULT,
        preemption: PREEMPT_VOLUNTARY,
        base_slice: BASE_SLICE,
        switch_cost: SWITCH_COST,
        ipi: IPI_BARE,
        wake_send: WAKE_SEND_BARE,
        idle_states: Cited::exact(ICX_IDLE, "drivers/idle/intel_idle.c icx_cstates; POLL from drivers/cpuidle/poll_state.c (§2.1)"),
        lines: ICX_LINES,
        interrupts: INTERRUPTS_BARE,
        guest: None,
    },
    Profile {
        name: "server-1s",
        summary: "one-socket server: Xeon Gold 6242 (Cascade Lake), 16 cores, SMT 2, 32 CPUs",
        topology: Cited::exact(Topology::new(1, 16, 2), "Xeon Gold 6242: 16 cores, SMT 2 (§5.2, §6)"),
        hz: HZ_DEFAULT,
        preemption: PREEMPT_VOLUNTARY,
        base_slice: BASE_SLICE,
        switch_cost: SWITCH_COST,
        ipi: IPI_BARE,
        wake_send: WAKE_SEND_BARE,
        idle_states: Cited::exact(SKX_IDLE, "drivers/idle/intel_idle.c skx_cstates; POLL from drivers/cpuidle/poll_state.c (§2.1)"),
        lines: CLX_LINES,
        interrupts: INTERRUPTS_BARE,
        guest: None,
    },
    Profile {
        name: "kvm-guest",
        summary: "cloud KVM guest on an Ice Lake host: vCPUs seen as one socket without SMT, halted vCPUs woken through the host, steal",
        topology: Cited::exact(Topology::new(1, 64, 1), "the guest's view: one socket, one thread per vCPU (§6); sized to the scenario's CPUs"),
        hz: HZ_DEFAULT,
        preemption: PREEMPT_VOLUNTARY,
        base_slice: BASE_SLICE,
        switch_cost: SWITCH_COST,
        ipi: Cited::range(Dur(1_450), Dur(1_320), Dur(1_750), "ipi_benchmark in a KVM guest, x2APIC: 1.45 us send to handler without IPI virtualization, 1.32 us with it, 1.75 us round trip (IPIv cover letter, 2021; §3.3)"),
        wake_send: Cited::range(Dur(1_450), Dur(550), Dur(8_100), "the guest's APIC write is a VM exit: at most the 1.45 us one-way send-to-handler of ipi_benchmark without IPI virtualization (IPIv cover letter, 2021; §3.3); as bare metal (0.55 us) with IPIv, which has no exit; 5.8-8.1 us measured in a nested guest (docs/findings/2026-12-04-case-2-operation-costs-on-the-development-vm.md §4)"),
        idle_states: Cited::exact(ICX_IDLE, "the host's: drivers/idle/intel_idle.c icx_cstates (§2.1); the guest itself idles in HLT"),
        lines: ICX_LINES,
        interrupts: Interrupts {
            tick: Cited::range(us(8), ns(1_800), us(13), "the development VM, a KVM guest at HZ 250: the guest's local timer handler p50 8 us, p90 13 us by its own clock, the VM exit and entry around it not counted (§7.3); bare metal's 1.8 us at the low end (§7.1)"),
            irq_rate: Cited::range(560.0, 20.0, 690.0, "the development VM: a vCPU spinning on the clock was taken away 685-941 times a second, 431-687 of them beside its 254 ticks (the host's interrupts and exits, the guest's softirqs; §7.3); bare metal's 20 at the low end (§7.2)"),
            irq: Cited::range(us(14), us(3), us(15), "the development VM: 0.87-1.11% of the time lost, 0.21% of it the tick, leaves 13-15 us for each other interruption (§7.3); bare metal's assumed 3 us at the low end (§7.2)"),
        },
        guest: Some(GuestCosts {
            ipi: Cited::range(Dur(1_450), Dur(1_320), Dur(1_750), "ipi_benchmark in a KVM guest (IPIv cover letter, 2021; §3.3)"),
            host_halt_poll: Cited::range(us(200), us(0), us(200), "KVM_HALT_POLL_NS_DEFAULT, arch/x86/include/asm/kvm_host.h: 200000 ns, the maximum of each vCPU's window, which grows from 10 us and shrinks by halves (virt/kvm/kvm_main.c, R119; §3.3)"),
            host_wake: Cited::range(us(5), us(2), us(10), "Documentation/virt/kvm/halt-polling.rst: a trip through the host scheduler is \"on the order of a few micro-seconds\" (§3.3)"),
            steal_fraction: Cited::range(0.0, 0.0, 0.12, "no published steal distribution for KVM clouds (§3.4): 0 by default; up to 12% measured on one Xen VM (2009)"),
            steal_episode: Cited::range(us(4_000), us(1_000), us(12_000), "assumed: one host tick to a few host slices (HZ=250, 2.8-3 ms slices; §1.2)"),
        }),
    },
];

/// The profile called `name`.
pub fn by_name(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name == name)
}
