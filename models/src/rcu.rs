//! Tree RCU's normal grace periods and their callbacks (R90-R94;
//! kernel/rcu/tree.c and tree_plugin.h of 7.3.4).
//!
//! A grace period ends when every CPU has reported a quiescent state.
//! Which CPUs are quiet, and when, is the machine's: a CPU that runs a
//! task takes the scheduler tick, and the tick is where it first notices
//! the new grace period (`rcu_pending` -> `rcu_core` ->
//! `note_gp_changes`) and, at the next tick, passes and reports its
//! quiescent state (`rcu_flavor_sched_clock_irq` -> `rcu_qs`, then
//! `rcu_report_qs_rdp` from the RCU softirq): two ticks (R91). An idle
//! CPU stops its tick (NO_HZ_IDLE) and reports nothing itself; the grace
//! period kthread's forcing scans (`rcu_gp_fqs`, every
//! `jiffies_till_first_fqs` then `jiffies_till_next_fqs` jiffies, R90)
//! report it for it, being in an extended quiescent state. So a busy
//! machine ends a grace period in two ticks and a machine with one idle
//! CPU at the first forcing scan.
//!
//! Callbacks (`call_rcu`) wait for the first grace period that starts
//! after they were queued, and run on their CPU in the RCU softirq at its
//! first tick after that grace period ended (R92); an idle CPU with
//! callbacks keeps its tick (`rcu_needs_cpu`). `synchronize_rcu` waits
//! for the same grace period and is woken by the grace-period kthread at
//! its cleanup (`rcu_normal_wake_from_gp`, R93).
//!
//! Everything happens at ticks: the world calls [`Rcu::tick`] at each
//! tick while [`Rcu::active`], with which CPUs are idle. Not modelled:
//! the grace-period kthread's own CPU time and its wait for a CPU (its
//! work is done at the instant it is woken), the time callbacks take in
//! the softirq, ticks that find the CPU with preemption disabled (no
//! quiescent state there), expedited grace periods, callback offloading
//! (`rcu_nocbs`), lazy callbacks, and CPU stall forcing (`rcu_urgent_qs`).

use crate::ids::{CpuId, TaskId};
use crate::timer;
use sim::{Dur, SimTime};
use std::collections::VecDeque;

/// `jiffies_till_first_fqs` and `jiffies_till_next_fqs` as
/// `rcu_init_geometry` sets them (R90): `RCU_JIFFIES_TILL_FORCE_QS` =
/// 1 + (HZ > 250) + (HZ > 500), plus one jiffy per
/// `RCU_JIFFIES_FQS_DIV` = 256 CPUs (`nr_cpu_ids`).
pub fn fqs_jiffies(hz: u32, cpus: u32) -> u64 {
    1 + u64::from(hz > 250) + u64::from(hz > 500) + u64::from(cpus / 256)
}

/// What the world must do after a tick: run a callback on a CPU, or wake
/// a task in `synchronize_rcu`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RcuAction<C> {
    /// Callback `cb`, queued on `cpu`, runs now (RCU softirq, R92).
    Invoke { cpu: CpuId, cb: C },
    /// The grace period `t` waited for in `synchronize_rcu` is over (R93).
    Wake(TaskId),
}

/// The grace period in progress.
#[derive(Copy, Clone, Debug)]
struct Gp {
    /// Its number: the count of grace periods completed once it ends.
    number: u64,
    start: SimTime,
    /// When the kthread's next forcing scan runs.
    fqs_at: SimTime,
    /// CPUs that have not reported a quiescent state.
    pending: u32,
}

/// A CPU's part in the grace period in progress.
#[derive(Copy, Clone, Debug, Default)]
struct PerCpu {
    /// It has seen the grace period start (`note_gp_changes` at a tick).
    noticed: bool,
    reported: bool,
}

/// Counters for the results.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RcuCounts {
    pub grace_periods: u64,
    /// Sum and maximum of the grace periods' lengths, start to end.
    pub gp_ns_total: u64,
    pub gp_ns_max: u64,
    pub fqs_scans: u64,
    /// Quiescent states reported by forcing scans for idle CPUs.
    pub fqs_reports: u64,
    pub callbacks: u64,
    pub synchronize_waits: u64,
}

/// Tree RCU (`rcu_state`, the `rcu_data` of each CPU): the grace period
/// in progress, each CPU's callbacks with the grace period each waits for,
/// and the tasks in `synchronize_rcu`. `C` is what a callback does (the
/// world's business).
#[derive(Clone, Debug)]
pub struct Rcu<C> {
    hz: u32,
    fqs_jiffies: u64,
    completed: u64,
    gp: Option<Gp>,
    cpus: Vec<PerCpu>,
    cbs: Vec<VecDeque<(u64, C)>>,
    /// Callbacks queued and not yet invoked.
    queued: usize,
    waiters: Vec<(u64, TaskId)>,
    pub n: RcuCounts,
}

impl<C: Clone> Rcu<C> {
    /// RCU on `cpus` CPUs (`nr_cpu_ids`, at least 1) at `hz`.
    pub fn new(cpus: u32, hz: u32) -> Self {
        let cpus = cpus.max(1);
        Rcu {
            hz,
            fqs_jiffies: fqs_jiffies(hz, cpus),
            completed: 0,
            gp: None,
            cpus: vec![PerCpu::default(); cpus as usize],
            cbs: vec![VecDeque::new(); cpus as usize],
            queued: 0,
            waiters: Vec::new(),
            n: RcuCounts::default(),
        }
    }

    pub fn cpus(&self) -> u32 {
        self.cpus.len() as u32
    }

    /// Whether the world must call [`Rcu::tick`] at the next tick: a grace
    /// period is in progress or callbacks wait to run.
    pub fn active(&self) -> bool {
        self.gp.is_some() || self.queued > 0
    }

    /// Grace periods completed so far.
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// The grace period a callback or waiter arriving now waits for
    /// (`rcu_seq_snap`): the next one to start, so the one after the grace
    /// period in progress.
    fn needed(&self) -> u64 {
        match self.gp {
            Some(_) => self.completed + 2,
            None => self.completed + 1,
        }
    }

    fn cpu_index(&self, cpu: CpuId) -> usize {
        if cpu == CpuId::ANY {
            0
        } else {
            cpu.index() % self.cpus.len()
        }
    }

    /// `call_rcu(head, func)` on `cpu` (R92): `cb` runs on `cpu` after the
    /// next grace period to start; one starts now if none is in progress
    /// (`call_rcu_core` -> `rcu_accelerate_cbs_unlocked`).
    pub fn call_rcu(&mut self, now: SimTime, cpu: CpuId, cb: C) {
        let n = self.needed();
        let i = self.cpu_index(cpu);
        self.cbs[i].push_back((n, cb));
        self.queued += 1;
        if self.gp.is_none() {
            self.start(now);
        }
    }

    /// `synchronize_rcu()` by `t` (R93): it waits for the next grace
    /// period to start (`start_poll_synchronize_rcu`) to end.
    pub fn synchronize_rcu(&mut self, now: SimTime, t: TaskId) {
        let n = self.needed();
        self.waiters.push((n, t));
        self.n.synchronize_waits += 1;
        if self.gp.is_none() {
            self.start(now);
        }
    }

    /// `rcu_gp_init` (R90): grace period `completed + 1` starts at `now`;
    /// the kthread's first forcing scan is a `jiffies_till_first_fqs`
    /// timeout (`swait_event_idle_timeout_exclusive`), a timer of the
    /// wheel (R62).
    fn start(&mut self, now: SimTime) {
        let pending = self.cpus.len() as u32;
        self.gp = Some(Gp {
            number: self.completed + 1,
            start: now,
            fqs_at: timer::fires_after_jiffies(now, self.fqs_jiffies, self.hz),
            pending,
        });
        for p in &mut self.cpus {
            *p = PerCpu::default();
        }
    }

    /// The tick at `now` (a tick instant) on every CPU, `idle(cpu)` saying
    /// which CPUs are idle: callbacks whose grace period ended before it
    /// run (R92), CPUs notice the grace period or report their quiescent
    /// state (R91), the kthread's forcing scan runs if due (R90), and a
    /// grace period whose CPUs have all reported ends (R93): its waiters
    /// wake and the next starts at once if anything waits for it.
    pub fn tick(
        &mut self,
        now: SimTime,
        idle: impl Fn(CpuId) -> bool,
        out: &mut Vec<RcuAction<C>>,
    ) {
        for i in 0..self.cpus.len() {
            let cpu = CpuId(i as u32);
            let is_idle = idle(cpu);
            // NO_HZ_IDLE: an idle CPU keeps its tick only for callbacks
            // (`rcu_needs_cpu`).
            if is_idle && self.cbs[i].is_empty() {
                continue;
            }
            while let Some((n, _)) = self.cbs[i].front() {
                if *n > self.completed {
                    break;
                }
                let (_, cb) = self.cbs[i].pop_front().expect("a front");
                self.queued -= 1;
                self.n.callbacks += 1;
                out.push(RcuAction::Invoke { cpu, cb });
            }
            if let Some(gp) = &mut self.gp {
                let p = &mut self.cpus[i];
                if !p.reported {
                    if p.noticed {
                        p.reported = true;
                        gp.pending -= 1;
                    } else {
                        p.noticed = true;
                    }
                }
            }
        }
        if let Some(gp) = &mut self.gp {
            if now >= gp.fqs_at {
                self.n.fqs_scans += 1;
                for (i, p) in self.cpus.iter_mut().enumerate() {
                    if !p.reported && idle(CpuId(i as u32)) {
                        p.reported = true;
                        gp.pending -= 1;
                        self.n.fqs_reports += 1;
                    }
                }
                gp.fqs_at = timer::fires_after_jiffies(now, self.fqs_jiffies, self.hz);
            }
        }
        if self.gp.is_some_and(|gp| gp.pending == 0) {
            self.end(now, out);
        }
    }

    /// `rcu_gp_cleanup`: the grace period ends at `now`; the tasks that
    /// waited for it wake (`rcu_sr_normal_gp_cleanup`), and the next one
    /// starts if a callback or a waiter needs it (`needgp`).
    fn end(&mut self, now: SimTime, out: &mut Vec<RcuAction<C>>) {
        let gp = self.gp.take().expect("a grace period in progress");
        self.completed = gp.number;
        let len = now.since(gp.start).0;
        self.n.grace_periods += 1;
        self.n.gp_ns_total += len;
        self.n.gp_ns_max = self.n.gp_ns_max.max(len);
        let done = self.completed;
        self.waiters.retain(|&(n, t)| {
            if n <= done {
                out.push(RcuAction::Wake(t));
                false
            } else {
                true
            }
        });
        let more = !self.waiters.is_empty()
            || self
                .cbs
                .iter()
                .any(|q| q.back().is_some_and(|(n, _)| *n > done));
        if more {
            self.start(now);
        }
    }

    /// The next tick after `now`, where [`Rcu::tick`] is due.
    pub fn next_tick(&self, now: SimTime) -> SimTime {
        timer::tick_at_or_after(now + Dur(1), self.hz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ms(x: u64) -> SimTime {
        SimTime(x * MS)
    }

    /// Runs ticks from `from` to `to` (HZ 1000: every ms), CPUs idle as
    /// `idle` says at each, and returns (time, action) in order.
    fn run(
        r: &mut Rcu<u32>,
        from: u64,
        to: u64,
        idle: impl Fn(SimTime, CpuId) -> bool,
    ) -> Vec<(u64, RcuAction<u32>)> {
        let mut all = Vec::new();
        for t in from..=to {
            let now = ms(t);
            let mut out = Vec::new();
            r.tick(now, |c| idle(now, c), &mut out);
            all.extend(out.into_iter().map(|a| (t, a)));
        }
        all
    }

    #[test]
    fn r90_fqs_jiffies_follow_hz_and_cpu_count() {
        assert_eq!(fqs_jiffies(1000, 64), 3);
        assert_eq!(fqs_jiffies(300, 8), 2);
        assert_eq!(fqs_jiffies(250, 64), 1);
        assert_eq!(fqs_jiffies(100, 8), 1);
        assert_eq!(fqs_jiffies(250, 512), 3);
    }

    #[test]
    fn r91_busy_cpus_report_at_their_second_tick() {
        // Four busy CPUs, HZ 1000: a callback at 0.5 ms starts grace
        // period 1; the tick at 1 ms is each CPU's notice, the one at 2
        // ms its report, so the grace period ends at 2 ms; the callback
        // runs at its CPU's next tick, 3 ms. The first forcing scan (3
        // jiffies from 0.5 ms: jiffies 0 + 3, fires at jiffy 4) never runs.
        let mut r: Rcu<u32> = Rcu::new(4, 1000);
        r.call_rcu(SimTime(MS / 2), CpuId(2), 7);
        assert!(r.active());
        let acts = run(&mut r, 1, 4, |_, _| false);
        assert_eq!(
            acts,
            vec![(
                3,
                RcuAction::Invoke {
                    cpu: CpuId(2),
                    cb: 7
                }
            )]
        );
        assert_eq!(r.n.grace_periods, 1);
        assert_eq!(r.n.gp_ns_max, 3 * MS / 2);
        assert_eq!(r.n.fqs_scans, 0);
        assert!(!r.active());
    }

    #[test]
    fn r90_r91_an_idle_cpu_waits_for_the_forcing_scan() {
        // CPU 1 idle throughout: its tick is stopped, so only the first
        // forcing scan reports it. Started at 0.5 ms (jiffy 0), the scan
        // is a 3-jiffy timer: expires at jiffy 3, fires at jiffy 4 (R62).
        let mut r: Rcu<u32> = Rcu::new(2, 1000);
        r.call_rcu(SimTime(MS / 2), CpuId(0), 1);
        let acts = run(&mut r, 1, 6, |_, c| c == CpuId(1));
        // Grace period ends at 4 ms; CPU 0's tick at 5 ms runs the callback.
        assert_eq!(
            acts,
            vec![(
                5,
                RcuAction::Invoke {
                    cpu: CpuId(0),
                    cb: 1
                }
            )]
        );
        assert_eq!(r.n.gp_ns_max, 7 * MS / 2);
        assert_eq!((r.n.fqs_scans, r.n.fqs_reports), (1, 1));
    }

    #[test]
    fn r90_r91_a_cpu_idle_between_ticks_is_reported_by_its_own_ticks() {
        // CPU 1 is idle at tick 1 (tick stopped: it does not notice) and
        // busy from tick 2: it notices at 2 and reports at 3. A forcing
        // scan reports only CPUs idle at its instant; scans run at ticks,
        // so a CPU busy at a scan's tick reports by its own ticks first
        // (the kernel's recheck of CPUs idle since the last scan adds
        // nothing here: every tick of a busy CPU is a quiescent state).
        let mut r: Rcu<u32> = Rcu::new(2, 1000);
        r.synchronize_rcu(SimTime(MS / 2), TaskId(3));
        let acts = run(&mut r, 1, 4, |t, c| c == CpuId(1) && t == ms(1));
        assert_eq!(acts, vec![(3, RcuAction::Wake(TaskId(3)))]);
        assert_eq!((r.n.fqs_scans, r.n.fqs_reports), (0, 0));
    }

    #[test]
    fn r92_callbacks_wait_for_the_grace_period_after_the_current_one() {
        // Grace period 1 starts at 0.5 ms for callback a; callback b,
        // queued at 1.5 ms while it runs, waits for grace period 2, which
        // starts when 1 ends (2 ms, busy CPUs) and ends at 4 ms. a runs at
        // 3 ms, b at 5 ms, each on its own CPU, in queueing order per CPU.
        let mut r: Rcu<char> = Rcu::new(2, 1000);
        r.call_rcu(SimTime(MS / 2), CpuId(0), 'a');
        let mut out = Vec::new();
        r.tick(ms(1), |_| false, &mut out);
        r.call_rcu(SimTime(3 * MS / 2), CpuId(1), 'b');
        r.call_rcu(SimTime(3 * MS / 2), CpuId(1), 'c');
        let mut acts = Vec::new();
        for t in 2..=6 {
            let mut out = Vec::new();
            r.tick(ms(t), |_| false, &mut out);
            acts.extend(out.into_iter().map(|a| (t, a)));
        }
        assert_eq!(
            acts,
            vec![
                (
                    3,
                    RcuAction::Invoke {
                        cpu: CpuId(0),
                        cb: 'a'
                    }
                ),
                (
                    5,
                    RcuAction::Invoke {
                        cpu: CpuId(1),
                        cb: 'b'
                    }
                ),
                (
                    5,
                    RcuAction::Invoke {
                        cpu: CpuId(1),
                        cb: 'c'
                    }
                ),
            ]
        );
        assert_eq!(r.n.grace_periods, 2);
        assert_eq!(r.completed(), 2);
    }

    #[test]
    fn r92_an_idle_cpu_with_callbacks_keeps_its_tick() {
        // Both CPUs idle at every tick; CPU 0 has a callback, so it ticks
        // (notices at 1, reports at 2); CPU 1 is reported by the scan at
        // 4 ms (started at 0.5 ms, HZ 1000). The callback runs at 5 ms.
        let mut r: Rcu<u32> = Rcu::new(2, 1000);
        r.call_rcu(SimTime(MS / 2), CpuId(0), 5);
        let acts = run(&mut r, 1, 5, |_, _| true);
        assert_eq!(
            acts,
            vec![(
                5,
                RcuAction::Invoke {
                    cpu: CpuId(0),
                    cb: 5
                }
            )]
        );
        assert_eq!(r.n.fqs_reports, 1);
    }

    #[test]
    fn r93_synchronize_rcu_wakes_at_the_end_of_the_next_full_grace_period() {
        // HZ 250 (4 ms ticks), 8 CPUs, one idle: jiffies_till_first_fqs =
        // 1, so the scan armed at 1 ms (jiffy 0) expires at jiffy 1 and
        // fires at jiffy 2 (8 ms). A waiter arriving at 5 ms, during grace
        // period 1, needs grace period 2: it starts at 8 ms, its scan fires
        // at jiffy 2 + 1 + 1 = 4 (16 ms), where the waiter wakes.
        let mut r: Rcu<u32> = Rcu::new(8, 250);
        r.synchronize_rcu(ms(1), TaskId(1));
        let mut acts = Vec::new();
        for j in 1..=5u64 {
            if j == 2 {
                r.synchronize_rcu(ms(5), TaskId(2));
            }
            let now = SimTime(j * 4 * MS);
            let mut out = Vec::new();
            r.tick(now, |c| c == CpuId(7), &mut out);
            acts.extend(out.into_iter().map(|a| (j * 4, a)));
        }
        assert_eq!(
            acts,
            vec![
                (8, RcuAction::Wake(TaskId(1))),
                (16, RcuAction::Wake(TaskId(2)))
            ]
        );
        assert!(!r.active());
    }
}
