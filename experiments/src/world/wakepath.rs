//! The machine's wake path, interrupts and steal (R63-R68, R125), on a
//! machine that is not `ideal` and with a limited number of CPUs: a task
//! woken onto an idle CPU reserves it and runs there after what the
//! machine says waking that CPU costs (an IPI or a polled flag, the idle
//! state's exit, a guest's VM exit and host wakeup); `cpu` steps lose the
//! time their CPU's interrupts take and, in a guest, the time the host
//! steals from their vCPU. On the ideal machine none of this exists
//! (`Cpus::wake` is `None`) and runs are what they were.

use super::*;
use models::machine::episodes::Episodes;
use models::machine::interrupts::Interruptions;
use models::machine::wake::{ttwu_idle, HaltPoll, WakeCost};

/// What the world keeps for the wake path: one field per CPU (when it
/// went idle) and the counters, the CPUs' interrupts and a guest's steal
/// processes.
#[derive(Clone)]
pub(super) struct WakePath {
    /// When each CPU last became idle; `SimTime::MAX` while it is busy or
    /// reserved for a woken task (R68). R65's idle time runs from it.
    pub(super) idle_since: TiVec<CpuId, SimTime>,
    /// A guest's vCPUs: the host's halt-poll window of each (R119); empty
    /// on bare metal.
    halt_poll: TiVec<CpuId, HaltPoll>,
    /// The tick's and the other interrupts' time on each CPU (R125), if
    /// they cost any.
    pub(super) interrupts: Option<Interruptions>,
    /// A guest's steal, if its fraction is above zero (R67).
    pub(super) steal: Option<Episodes>,
    ipis: u64,
    /// CPU time wakers spent waking tasks on other CPUs (R122).
    waker_ns: u64,
    /// Exits per idle state (the machine's, or the host's in a guest).
    idle_exits: Vec<u64>,
    idle_exit_ns: u64,
    halt_poll_hits: u64,
    host_wakes: u64,
    /// Time `cpu` steps lost to the host.
    pub(super) steal_ns: u64,
    /// Time `cpu` steps lost to interrupts.
    irq_ns: u64,
}

impl WakePath {
    /// The wake path of `c`'s machine, for its CPUs; `None` on the ideal
    /// machine or with unlimited CPUs (no CPU is ever idle there). Each
    /// vCPU's steal draws from its own stream, `steal/cpu` with the CPU's
    /// number, and each CPU's interrupts from `irq/cpu`.
    pub(super) fn new(c: &Compiled, (seed, replication): (u64, u64)) -> Option<Box<WakePath>> {
        let n = c.cpus?;
        let m = &c.machine;
        if m.is_ideal() {
            return None;
        }
        let steal = m.guest.as_ref().and_then(|g| {
            let streams = (0..u64::from(n))
                .map(|i| stream(seed, replication, "steal/cpu", i))
                .collect();
            Episodes::steal(g.steal_fraction, g.steal_episode, streams)
        });
        let streams = (0..u64::from(n))
            .map(|i| stream(seed, replication, "irq/cpu", i))
            .collect();
        let interrupts = Interruptions::new(c.hz, &m.interrupts, streams);
        Some(Box::new(WakePath {
            idle_since: ti_vec![SimTime::ZERO; n as usize],
            halt_poll: if m.guest.is_some() {
                ti_vec![HaltPoll::default(); n as usize]
            } else {
                TiVec::new()
            },
            interrupts,
            steal,
            ipis: 0,
            waker_ns: 0,
            idle_exits: vec![0; m.idle_states.len()],
            idle_exit_ns: 0,
            halt_poll_hits: 0,
            host_wakes: 0,
            steal_ns: 0,
            irq_ns: 0,
        }))
    }

    /// `cpu`'s halt-poll window now (R119): none on bare metal.
    fn poll_window(&self, cpu: CpuId) -> Dur {
        self.halt_poll.get(cpu).map_or(Dur::ZERO, |h| h.window)
    }

    /// `cpu` stops idling now, after `halted`: a guest's vCPU ends a halt,
    /// and the host adapts its poll window (R119). Called wherever a CPU's
    /// idle spell ends, woken or given a task.
    pub(super) fn halt_ends(&mut self, m: &models::machine::Machine, cpu: CpuId, halted: Dur) {
        if let (Some(h), Some(g)) = (self.halt_poll.get_mut(cpu), m.guest.as_ref()) {
            h.halt_ended(halted, g.host_halt_poll);
        }
    }

    /// Counts what a wakeup did.
    fn count(&mut self, m: &models::machine::Machine, w: &WakeCost) {
        self.ipis += u64::from(w.ipi);
        if let Some(i) = w.exited {
            self.idle_exits[i] += 1;
            self.idle_exit_ns += m.idle_states[i].exit_latency.0;
        }
        self.halt_poll_hits += u64::from(w.halt_poll_hit);
        self.host_wakes += u64::from(w.host_wake);
    }

    /// The counters (docs/scenario-language.md, "The wake path").
    pub(super) fn counters(&self, c: &Compiled, out: &mut Vec<Counter>) {
        let mut add = |name: String, value: u64| {
            out.push(Counter {
                subject: format!("cpu/{name}"),
                value,
            })
        };
        add("ipis".into(), self.ipis);
        add("waker_ns".into(), self.waker_ns);
        for (s, &n) in c.machine.idle_states.iter().zip(&self.idle_exits) {
            add(format!("idle_exits_{}", s.name), n);
        }
        add("idle_exit_ns".into(), self.idle_exit_ns);
        add("irq_ns".into(), self.irq_ns);
        if c.machine.guest.is_some() {
            add("halt_poll_hits".into(), self.halt_poll_hits);
            add("host_wakes".into(), self.host_wakes);
            add("steal_ns".into(), self.steal_ns);
        }
    }
}

impl<'c> World<'c> {
    /// The CPU `t`'s wakeup comes from: the waking task's; with no task
    /// acting (a timer), the CPU a bound kworker is bound to (a timer on
    /// that CPU queued its item: R35, R33) or, for a task whose sleep is
    /// over, the CPU it slept on (its hrtimer's); else not known.
    pub(super) fn waker_cpu(&self, t: TaskId) -> Option<CpuId> {
        let cpu = if self.clock.current != NONE {
            self.tasks[self.clock.current].cpu
        } else if let Some(cpu) = self.tasks[t].bound {
            cpu
        } else if self.tasks[t].state == State::Sleeping {
            self.tasks[t].cpu
        } else {
            return None;
        };
        (cpu != CpuId::ANY).then_some(cpu)
    }

    /// Woken `t`, from CPU `from`, is placed (R63): on a busy CPU it is
    /// queued (or takes a preempted task's CPU) at once; on an idle one it
    /// reserves the CPU (R68) and runs there after the machine's wake
    /// latency (R63-R66). Returns true if it has a CPU now and the caller
    /// (`inline`) may run it at once.
    #[inline(never)]
    pub(super) fn wake_onto_cpu(&mut self, t: TaskId, from: Option<CpuId>, inline: bool) -> bool {
        let Some(cpu) = self.take_cpu(t) else {
            return false;
        };
        let now = self.clock.now;
        let w = self.cpus.wake.as_mut().expect("the machine's wake path");
        let since = w.idle_since[cpu];
        let (latency, ipi) = if since == SimTime::MAX {
            // A busy CPU, taken from a preempted task: no idle to leave,
            // but the preemption is asked for with an IPI.
            (Dur::ZERO, true)
        } else {
            let halted = now.since(since);
            let cost = ttwu_idle(&self.c.machine, from, cpu, halted, w.poll_window(cpu));
            w.count(&self.c.machine, &cost);
            w.halt_ends(&self.c.machine, cpu, halted);
            w.idle_since[cpu] = SimTime::MAX;
            (cost.latency, cost.ipi)
        };
        self.charge_waker(t, cpu, ipi);
        if latency == Dur::ZERO {
            self.give_cpu(t, cpu);
            if inline {
                return true;
            }
            self.clock.schedule(t, now, Ev::Run);
            return false;
        }
        let task = &mut self.tasks[t];
        task.cpu = cpu;
        task.arriving = true;
        task.queued_at = Some(now);
        self.blame_switch(t, Doing::Waking);
        self.clock.schedule(t, now + latency, Ev::Ready);
        false
    }

    /// R122: the task waking `t` onto CPU `to` now pays its side of the
    /// wakeup on its own CPU, before its next step: the machine's
    /// `wake_send` when the wakeup sends an IPI (an idle CPU that does not
    /// poll, every halted vCPU, a busy CPU whose task must reschedule),
    /// else one cache-line transfer at the distance between the two CPUs
    /// (the polling target's thread flags, or the run queue it is put
    /// on). Nothing when no task wakes it (a timer) or for a wakeup onto
    /// the waker's own CPU, whose cost is inside the step's.
    pub(super) fn charge_waker(&mut self, t: TaskId, to: CpuId, ipi: bool) {
        let waker = self.clock.current;
        if waker == NONE || waker == t || to == CpuId::ANY {
            return;
        }
        let Some(w) = self.cpus.wake.as_mut() else {
            return;
        };
        let from = self.tasks[waker].cpu;
        if from == CpuId::ANY || from == to {
            return;
        }
        let m = &self.c.machine;
        let cost = if ipi {
            m.wake_send
        } else {
            m.lines.at(m.topology.distance(from, to))
        };
        w.waker_ns += cost.0;
        self.tasks[waker].wake_debt += cost;
    }

    /// [`World::charge_waker`] for `t` queued on busy CPU `to`: the
    /// wakeup sent an IPI if it asked `to` to reschedule, which the pool
    /// counts (`resched_before`: its count before the wakeup).
    pub(super) fn charge_queued_waker(&mut self, t: TaskId, to: CpuId, resched_before: u64) {
        if self.cpus.wake.is_some() {
            let ipi = self.cpus.pool.wakeup_preemptions() > resched_before;
            self.charge_waker(t, to, ipi);
        }
    }

    /// `t`'s wake latency on the CPU it reserved is over: it runs there.
    /// The trace shows the latency as a `waking` slice on that CPU.
    #[inline(never)]
    pub(super) fn arrive(&mut self, t: TaskId) -> Result<(), RunError> {
        let task = &mut self.tasks[t];
        task.arriving = false;
        let cpu = task.cpu;
        let since = task.queued_at.take();
        if let (Some(tr), Some(since)) = (self.obs.trace.as_mut(), since) {
            tr.slice_on_cpu(t, "waking".into(), since, self.clock.now, Some(cpu));
        }
        self.give_cpu(t, cpu);
        self.run_task(t)
    }

    /// A `cpu` step of `d` that `t` starts now on its CPU: when it ends,
    /// with the interrupts (R125) and then the steal (R67) it overlaps,
    /// counted. The interrupts that would land in a stolen stretch are not
    /// added: the vCPU was not running to take them.
    #[inline(never)]
    pub(super) fn interrupted_burst_end(&mut self, t: TaskId, d: Dur) -> SimTime {
        let now = self.clock.now;
        let cpu = self.tasks[t].cpu;
        let Some(w) = self.cpus.wake.as_mut() else {
            return now + d;
        };
        if cpu == CpuId::ANY {
            return now + d;
        }
        let mut end = now + d;
        if let Some(i) = w.interrupts.as_mut() {
            end = i.stretch(cpu, now, d);
            w.irq_ns += end.since(now).0 - d.0;
        }
        if let Some(s) = w.steal.as_mut() {
            let busy = end.since(now);
            end = s.stretch(cpu, now, busy);
            w.steal_ns += end.since(now).0 - busy.0;
        }
        end
    }

    /// The interrupt and steal time that `victim`'s `cpu` step (or wait
    /// for a cache line), cut short now by a preemption, would have lost
    /// after now: taken off its rest and off the counts.
    pub(super) fn lost_in_rest(&mut self, victim: TaskId) -> Dur {
        let v = &self.tasks[victim];
        let Some(w) = self.cpus.wake.as_mut() else {
            return Dur::ZERO;
        };
        if v.cpu == CpuId::ANY {
            return Dur::ZERO;
        }
        let (now, end) = (self.clock.now, v.burst_end);
        let stolen = w
            .steal
            .as_ref()
            .map_or(Dur::ZERO, |s| s.stolen_within(v.cpu, now, end));
        let rest = end.since(now) - stolen;
        let irq = (w.interrupts.as_ref())
            .map_or(Dur::ZERO, |i| i.within(v.cpu, now, end))
            .min(rest);
        w.steal_ns = w.steal_ns.saturating_sub(stolen.0);
        w.irq_ns = w.irq_ns.saturating_sub(irq.0);
        stolen + irq
    }
}
