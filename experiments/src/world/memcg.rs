//! The world and its memory cgroups: charges, reclaim sleeps, OOM kills
//! and the OOM reaper.

use super::tasks::{Drawn, Killed};
use super::*;
use crate::program::ReclaimFrees;
use models::memcg::Memcg;
use models::oom_reaper::{ReapStep, Reaper};

/// Period of a memcg's background release.
pub(super) const RELEASE_TICK: sim::Dur = sim::Dur(10_000_000);

/// `OOM_REAPER_DELAY` = 2 HZ jiffies (R47, R102), in seconds.
pub(super) const OOM_REAPER_DELAY_HZ: u64 = models::oom_reaper::OOM_REAPER_DELAY_HZ;

/// The memory cgroups: each memcg's charge state (usage, limits, the
/// OOM victim pending), the pages each task charged to each (an OOM
/// kill or the reaper frees them), the background release owed, the
/// reclaim attempts that return their pages at a midpoint, and what
/// the charges cost, for the results.
#[derive(Clone)]
pub(super) struct Memcgs {
    pub(super) groups: TiVec<MemcgId, Memcg>,
    /// Background release owed but not yet applied (fractional pages).
    released: TiVec<MemcgId, f64>,
    /// Pages each task has charged to each memcg, at `task * memcgs + m`
    /// ([`Memcgs::page_slot`]).
    task_pages: Vec<u64>,
    /// Per memcg: time in reclaim and throttled, OOM exits and reaps.
    pub(super) stats: TiVec<MemcgId, MemStats>,
    /// Per task, where its reclaim attempt is when a memcg returns pages
    /// at an attempt's midpoint (`reclaim_frees = "during"`); empty if
    /// none does.
    pub(super) mid_reclaim: TiVec<TaskId, MidReclaim>,
    /// Per memcg, the OOM reaper's loop on its pending victim (R103), and
    /// whether the reaper's next event ends one of its sleeps.
    reapers: TiVec<MemcgId, (Reaper, bool)>,
    /// Per memcg, its `memory.pressure` (R104).
    pub(super) pressure: TiVec<MemcgId, models::psi::Pressure>,
    /// Per task group, the tasks `kill` steps killed (R105); `None` for a
    /// group no `kill` step names, which gets no counter.
    pub(super) signal_kills: TiVec<GroupId, Option<u64>>,
}

impl Memcgs {
    /// The memcgs of `c`, for `ntasks` tasks.
    pub(super) fn new(c: &Compiled, ntasks: usize) -> Memcgs {
        Memcgs {
            groups: (c.memcgs.iter())
                .map(|m| {
                    let mut g = Memcg::new(models::memcg::MemcgConfig {
                        max: m.max,
                        high: m.high,
                        cpus: c.cpus.unwrap_or(1),
                    });
                    g.charge_initial(m.initial);
                    g
                })
                .collect(),
            released: ti_vec![0.0; c.memcgs.len()],
            task_pages: vec![0; ntasks * c.memcgs.len()],
            stats: ti_vec![MemStats::default(); c.memcgs.len()],
            mid_reclaim: if (c.memcgs.iter()).any(|m| m.reclaim_frees == ReclaimFrees::During) {
                ti_vec![MidReclaim::None; ntasks]
            } else {
                TiVec::new()
            },
            reapers: ti_vec![(Reaper::default(), false); c.memcgs.len()],
            pressure: ti_vec![models::psi::Pressure::new(models::psi::period_ns(c.hz)); c.memcgs.len()],
            signal_kills: {
                let mut k: TiVec<GroupId, Option<u64>> = ti_vec![None; c.groups.len()];
                for i in c.groups.iter().flat_map(|g| g.code.iter()) {
                    if let crate::program::Instr::Kill { group } = *i {
                        k[group] = Some(0);
                    }
                }
                k
            },
        }
    }

    /// Where task `t`'s pages charged to memcg `m` are in `task_pages`.
    #[inline]
    fn page_slot(&self, t: TaskId, m: MemcgId) -> usize {
        t.index() * self.groups.len() + m.index()
    }

    /// The pages task `t` has charged to memcg `m`.
    pub(super) fn charged(&self, t: TaskId, m: MemcgId) -> u64 {
        self.task_pages[self.page_slot(t, m)]
    }

    /// The pages task `t` has charged to memcg `m`, to change.
    #[inline]
    pub(super) fn pages(&mut self, t: TaskId, m: MemcgId) -> &mut u64 {
        let i = self.page_slot(t, m);
        &mut self.task_pages[i]
    }

    /// `t` uncharges up to `pages` of what it charged to `m`.
    pub(super) fn uncharge(&mut self, t: TaskId, m: MemcgId, pages: u64) {
        let tp = self.pages(t, m);
        let n = pages.min(*tp);
        *tp -= n;
        self.groups[m].uncharge(n);
    }

    /// Victim `v` of `m`'s OOM killer is gone (exited or reaped): the
    /// pages it charged to `m` leave it.
    pub(super) fn victim_gone(&mut self, v: TaskId, m: MemcgId) {
        let pages = std::mem::take(self.pages(v, m));
        self.groups[m].victim_gone(v, pages);
    }

    /// A background release tick of `m`: `rate` pages per second over
    /// a tick, the whole pages of what is owed.
    fn release(&mut self, m: MemcgId, rate: f64) {
        let owed = self.released[m] + rate * RELEASE_TICK.as_secs_f64();
        let pages = owed.floor();
        self.released[m] = owed - pages;
        self.groups[m].uncharge(pages as u64);
    }

    /// The memcg counters for the results: each memcg's own, what its
    /// charges cost, and its usage at the end.
    pub(super) fn counters(&self, c: &Compiled, horizon: SimTime, out: &mut Vec<Counter>) {
        for (g, k) in self.signal_kills.iter_enumerated() {
            if let Some(k) = *k {
                out.push(Counter {
                    subject: format!("kill/{}", c.groups[g].name),
                    value: k,
                });
            }
        }
        for (m, g) in self.groups.iter_enumerated() {
            let name = &c.memcgs[m].name;
            for (k, v) in g.counters() {
                out.push(Counter {
                    subject: format!("memcg/{name}/{k}"),
                    value: v,
                });
            }
            let s = self.stats[m];
            for (k, v) in [
                ("reclaim_ns", s.reclaim.ns()),
                ("throttle_ns", s.throttle.ns()),
                ("oom_exits", s.oom_exits),
                ("oom_reaps", s.oom_reaps),
                // memory.pressure's `some ... total=`, in microseconds.
                (
                    "pressure_some_us",
                    self.pressure[m].clone().total_ns(horizon.0) / 1000,
                ),
            ] {
                out.push(Counter {
                    subject: format!("memcg/{name}/{k}"),
                    value: v,
                });
            }
            // memory.oom.group's extra kills, where it is set (R106).
            if c.memcgs[m].oom_group {
                out.push(Counter {
                    subject: format!("memcg/{name}/oom_group_kills"),
                    value: s.oom_group_kills,
                });
            }
            // The reaper's trylocks, where it has a lock to try (R103).
            if c.memcgs[m].mmap_lock.is_some() {
                for (k, v) in [
                    ("oom_reap_attempts", s.reap_attempts),
                    ("oom_reap_failures", s.reap_failures),
                    ("oom_reaper_gave_up", s.reaper_gave_up),
                ] {
                    out.push(Counter {
                        subject: format!("memcg/{name}/{k}"),
                        value: v,
                    });
                }
            }
            out.push(Counter {
                subject: format!("memcg/{name}/usage_pages_at_end"),
                value: g.usage(),
            });
        }
    }
}

/// A reclaim attempt of a memcg that returns its pages at the midpoint
/// (`reclaim_frees = "during"`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum MidReclaim {
    /// No such attempt in progress.
    #[default]
    None,
    /// Before the midpoint: `pages` come back then, and the attempt goes
    /// on for `rest`.
    Freeing { pages: u64, rest: Dur },
    /// After it: `pages` came back (the retry's progress).
    Freed { pages: u64 },
}

/// What a memcg's charges cost its tasks, counted for the results.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct MemStats {
    /// Time in direct reclaim attempts (R45).
    pub reclaim: Dur,
    /// Time throttled over memory.high (R48).
    pub throttle: Dur,
    /// Tasks the OOM killer killed that exited.
    pub oom_exits: u64,
    /// Victims the OOM reaper freed before they exited (R47).
    pub oom_reaps: u64,
    /// The reaper's mmap_lock trylocks, those that failed, and victims it
    /// gave up on (R103).
    pub reap_attempts: u64,
    pub reap_failures: u64,
    pub reaper_gave_up: u64,
    /// Tasks killed with an OOM victim by memory.oom.group (R106).
    pub oom_group_kills: u64,
}

impl<'c> World<'c> {
    /// Runs the charge step at `pc` for `t` (R45-R48). Returns true if the
    /// task now sleeps (a reclaim attempt or a memory.high throttle) and
    /// false once the charge is done (charged, or failed with -ENOMEM).
    pub(super) fn charge(
        &mut self,
        t: TaskId,
        pc: Pc,
        m: MemcgId,
        pages: u64,
        gfp: crate::program::GfpWord,
    ) -> bool {
        use models::memcg::{Charge, ChargeStep, OomOutcome};
        let spec = &self.c.memcgs[m];
        let cpu = self.tasks[t].cpu;
        let cpu = if cpu == CpuId::ANY { CpuId(0) } else { cpu };
        let (mut ch, mut step) = match self.tasks[t].charging.take() {
            None => {
                let mut ch = Charge::new(pages, cpu, gfp.flags());
                let st = self.memcg.groups[m].try_charge_memcg(&mut ch);
                (ch, st)
            }
            Some((_, mut ch)) => {
                let st = match self.memcg.mid_reclaim.get_mut(t).map(std::mem::take) {
                    // Its pages came back at the midpoint; others may have
                    // charged them since.
                    Some(MidReclaim::Freed { pages }) => {
                        self.memcg.groups[m].retry_after_reclaim(&mut ch, pages)
                    }
                    _ => {
                        // Back from a reclaim attempt: did it free a batch?
                        let rng = self.tasks[t].mem_rng.as_mut().expect("memcg stream");
                        let (freed, taken) = reclaim_outcome(spec, rng);
                        self.memcg.groups[m].after_reclaim(&mut ch, freed, taken)
                    }
                };
                (ch, st)
            }
        };
        loop {
            match step {
                ChargeStep::Charged { .. } => {
                    let tp = self.memcg.pages(t, m);
                    *tp = tp.saturating_add(pages);
                    // memory.high, handled in the charge above a batch (R48).
                    let usage_over = spec.high.is_some_and(|h| self.memcg.groups[m].usage() > h);
                    if !usage_over {
                        self.tasks[t].over_high = 0;
                        return false;
                    }
                    self.tasks[t].over_high += pages.max(models::memcg::MEMCG_CHARGE_BATCH);
                    let debt = self.tasks[t].over_high;
                    let (_, jiffies) = self.memcg.groups[m].over_high(debt, self.c.hz);
                    if jiffies == 0 {
                        return false;
                    }
                    self.tasks[t].over_high = 0;
                    self.tasks[t].off = Doing::Throttle { memcg: m };
                    self.memstall_enter(t, m);
                    // schedule_timeout_killable(penalty): a timer at
                    // jiffies + penalty, on the timer wheel.
                    let wakes =
                        models::timer::fires_after_jiffies(self.clock.now, jiffies, self.c.hz);
                    let d = wakes.since(self.clock.now);
                    self.memcg.stats[m].throttle += d;
                    return self.delay(t, d, true, pc + 1);
                }
                ChargeStep::Reclaim => {
                    let rng = self.tasks[t].mem_rng.as_mut().expect("memcg stream");
                    let d = spec.reclaim.sample(rng);
                    self.memcg.stats[m].reclaim += d;
                    if d == Dur::ZERO {
                        let (freed, taken) = reclaim_outcome(spec, rng);
                        step = self.memcg.groups[m].after_reclaim(&mut ch, freed, taken);
                        continue;
                    }
                    // The batch of an attempt that returns it at the
                    // midpoint is drawn now, in the same order.
                    let mid = (spec.reclaim_frees == ReclaimFrees::During)
                        .then(|| reclaim_outcome(spec, rng).0);
                    self.tasks[t].charging = Some((m, ch));
                    if mid.is_none() {
                        self.tasks[t].drawn_sleep = Some((Drawn::Reclaim(m), self.clock.now));
                    }
                    self.tasks[t].off = Doing::Reclaim { memcg: m };
                    self.memstall_enter(t, m);
                    // Direct reclaim sleeps (I/O, swap) with the task's locks held.
                    if let Some(pages) = mid {
                        // The batch comes back at the midpoint (an event
                        // of the sleep); the trace and blame see one sleep.
                        let half = d / 2;
                        self.memcg.mid_reclaim[t] = MidReclaim::Freeing {
                            pages,
                            rest: d - half,
                        };
                        let slept = self.delay(t, d, true, pc);
                        self.clock.set_after(t.index(), half, Ev::Wake);
                        return slept;
                    }
                    return self.delay(t, d, true, pc);
                }
                ChargeStep::Oom => {
                    // Under oom_lock (instantaneous here: the OOM scan takes no
                    // modelled time, so the lock is never contended).
                    let cands = self.oom_candidates(m);
                    step = match self.memcg.groups[m].mem_cgroup_oom(&mut ch, 0, &cands) {
                        OomOutcome::Retry => self.memcg.groups[m].try_charge_memcg(&mut ch),
                        OomOutcome::Kill(v) => {
                            self.kill(v, m);
                            if spec.oom_group {
                                self.kill_oom_group(v, m, &cands);
                            }
                            if v == t {
                                // The charger killed itself: it exits now.
                                self.tasks[t].pc = pc;
                                self.exit_killed(t);
                                return true;
                            }
                            self.memcg.groups[m].try_charge_memcg(&mut ch)
                        }
                        OomOutcome::NoMem => self.memcg.groups[m].oom_failed(&ch),
                    };
                }
                ChargeStep::NoMem => return false,
            }
        }
    }

    /// Tasks the OOM killer of memcg `m` may kill, preferred first: the
    /// configured groups in order (else every task that charged it), the
    /// task with the most pages first (R46: the largest). Never a kworker:
    /// kernel threads are unkillable (`oom_unkillable_task`).
    pub(super) fn oom_candidates(&self, m: MemcgId) -> Vec<TaskId> {
        let spec = &self.c.memcgs[m];
        let mut v: Vec<(usize, std::cmp::Reverse<u64>, TaskId)> = (self.tasks.iter())
            .filter(|(_, k)| k.state != State::Exited && k.killed.is_none())
            .filter(|(_, k)| k.worker_of.is_none())
            .filter_map(|(i, k)| {
                let pages = self.memcg.charged(i, m);
                let pref = if spec.oom_victims.is_empty() {
                    (pages > 0).then_some(0)
                } else {
                    spec.oom_victims.iter().position(|&g| g == k.group)
                };
                pref.map(|p| (p, std::cmp::Reverse(pages), i))
            })
            .collect();
        v.sort();
        v.into_iter().map(|x| x.2).collect()
    }

    /// The OOM killer of memcg `m` kills `v`: it exits at its next step; a
    /// sleep is cut short (killable), a lock wait is not (D state, R47).
    /// The reaper frees its memory after OOM_REAPER_DELAY if it has not
    /// exited by then: `queue_oom_reaper` arms a timer at jiffies + 2 HZ,
    /// which fires at the end of its timer-wheel bucket.
    pub(super) fn kill(&mut self, v: TaskId, m: MemcgId) {
        self.memcg.reapers[m] = (Reaper::default(), false);
        let task = &mut self.tasks[v];
        task.killed = Some(Killed::Oom(m));
        if task.state == State::Sleeping {
            self.clock.queue.set(v.index(), self.clock.now, Ev::Wake);
        }
        let slot = self.clock.slots.reaper(m);
        let reap = models::timer::fires_after_jiffies(
            self.clock.now,
            OOM_REAPER_DELAY_HZ * u64::from(self.c.hz),
            self.c.hz,
        );
        self.clock.queue.set(slot, reap, Ev::Reap);
    }

    /// `memory.oom.group` (R106): after the chosen victim `v`, the OOM
    /// killer kills every other task it may kill in memcg `m` (`cands`,
    /// the memcg's tasks). Each exits at its next step as `v` does; the
    /// reaper follows `v` only (one pending victim a memcg): the others'
    /// memory comes back when they exit.
    fn kill_oom_group(&mut self, v: TaskId, m: MemcgId, cands: &[TaskId]) {
        for &u in cands.iter().filter(|&&u| u != v) {
            let task = &mut self.tasks[u];
            task.killed = Some(Killed::Oom(m));
            self.memcg.stats[m].oom_group_kills += 1;
            if task.state == State::Sleeping {
                self.clock.queue.set(u.index(), self.clock.now, Ev::Wake);
            }
        }
    }

    /// The OOM reaper of memcg `m` runs (`Ev::Reap`): its timer after the
    /// kill (R102) or the end of a sleep between two attempts (R103). A
    /// victim that exited left nothing to do. Without a `mmap_lock` the
    /// trylock always succeeds; with one, a failed trylock sleeps HZ/10
    /// (a timer of the wheel, R62), and after ten the reaper gives up:
    /// `MMF_OOM_SKIP` without the victim's memory.
    pub(super) fn oom_reap(&mut self, m: MemcgId) {
        let Some(v) = self.memcg.groups[m].pending_victim() else {
            return;
        };
        let (mut reaper, slept) = self.memcg.reapers[m];
        if slept && !reaper.after_sleep() {
            self.memcg.groups[m].victim_skipped(v);
            self.memcg.stats[m].reaper_gave_up += 1;
            self.memcg.reapers[m] = (reaper, false);
            return;
        }
        let ok = match self.c.memcgs[m].mmap_lock {
            None => true,
            Some((first, n)) => {
                self.memcg.stats[m].reap_attempts += 1;
                let lock = LockId(first.0 + self.tasks[v].index % n);
                self.locks.policies[lock].read_trylock_ok()
            }
        };
        match reaper.attempt(ok) {
            ReapStep::Reaped => {
                self.memcg.victim_gone(v, m);
                self.memcg.stats[m].oom_reaps += 1;
                self.memcg.reapers[m] = (reaper, false);
            }
            ReapStep::Sleep => {
                self.memcg.stats[m].reap_failures += 1;
                self.memcg.reapers[m] = (reaper, true);
                let slot = self.clock.slots.reaper(m);
                let at = models::timer::fires_after_jiffies(
                    self.clock.now,
                    models::oom_reaper::retry_sleep_jiffies(self.c.hz),
                    self.c.hz,
                );
                self.clock.queue.set(slot, at, Ev::Reap);
            }
        }
    }

    /// The hold statistic of `t`'s hold slot `slot` held in `mode`: the
    /// one its program's release of that slot records.
    fn hold_stat_of_slot(&self, t: TaskId, slot: u8, mode: Mode) -> Option<StatId> {
        let g = &self.c.groups[self.tasks[t].group];
        g.code.iter().find_map(|i| match *i {
            Instr::Release {
                slot: s,
                mode: m,
                hold,
                ..
            } if s == slot && m == mode => Some(hold),
            _ => None,
        })
    }

    /// `t` enters a memory stall of memcg `m` (`psi_memstall_enter`
    /// around direct reclaim and the memory.high throttle, R104).
    fn memstall_enter(&mut self, t: TaskId, m: MemcgId) {
        self.memcg.pressure[m].enter(self.clock.now.0);
        self.tasks[t].memstall = Some(m);
    }

    /// `t`'s memory stall, if it is in one, ends now
    /// (`psi_memstall_leave`): its reclaim attempt or throttle is over.
    pub(super) fn memstall_leave(&mut self, t: TaskId) {
        if let Some(m) = self.tasks[t].memstall.take() {
            self.memcg.pressure[m].leave(self.clock.now.0);
        }
    }

    /// A `kill GROUP` step: SIGKILL to every live task of `group` (R105).
    /// As for the OOM killer's victim, each exits at its next step; a
    /// sleep is cut short (killable), a lock wait is not (D state). Its
    /// pages are freed as it exits; no reaper runs (it is not an OOM
    /// victim).
    pub(super) fn kill_group(&mut self, group: GroupId) {
        let now = self.clock.now;
        let victims: Vec<TaskId> = (self.tasks.iter())
            .filter(|(_, k)| k.group == group && k.state != State::Exited && k.killed.is_none())
            .map(|(v, _)| v)
            .collect();
        for v in victims {
            let task = &mut self.tasks[v];
            task.killed = Some(Killed::Signal);
            if let Some(k) = &mut self.memcg.signal_kills[group] {
                *k += 1;
            }
            if task.state == State::Sleeping {
                self.clock.queue.set(v.index(), now, Ev::Wake);
            }
        }
    }

    /// A killed task exits: it releases its locks (as the syscall unwinds),
    /// frees the pages it charged, and is gone.
    pub(super) fn exit_killed(&mut self, t: TaskId) {
        self.die(t);
        self.tasks[t].state = State::Exited;
        self.leave_cpu(t);
    }

    /// What a killed task's death does before its `exit` steps: its locks
    /// are released (as the syscall unwinds) and the pages it charged are
    /// freed (`exit_mm`); an OOM victim's exit is counted.
    pub(super) fn die(&mut self, t: TaskId) {
        let base = self.tasks[t].slots.hold;
        for slot in 0..self.c.groups[self.tasks[t].group].hold_slots {
            let i = base.at(slot);
            if let Some((lock, mode)) = held_decode(self.tasks.held[i]) {
                // The hold ends here, and counts as the program's release
                // of that slot would have counted it.
                let hold = self.hold_stat_of_slot(t, slot, mode);
                self.hold_ended(t, lock, mode, hold, slot);
                self.lock_op(lock, |l, ctx, wakes| l.release(ctx, t, mode, wakes));
            }
        }
        for m in (0..self.memcg.groups.len()).map(MemcgId::from) {
            self.memcg.victim_gone(t, m);
        }
        if let Some(Killed::Oom(m)) = self.tasks[t].killed {
            self.memcg.stats[m].oom_exits += 1;
            if self.memcg.groups[m].pending_victim().is_none() {
                self.clock.queue.clear(self.clock.slots.reaper(m));
            }
        }
        self.tasks[t].charging = None;
        if let Some(r) = self.memcg.mid_reclaim.get_mut(t) {
            *r = MidReclaim::None;
        }
    }

    /// The midpoint of `t`'s reclaim attempt, if this wake is one: the
    /// attempt's pages leave the memcg's usage, so its other tasks can
    /// charge them before `t` retries (R45), and `t` sleeps on. Returns
    /// whether it was. A task killed before the midpoint freed nothing.
    pub(super) fn reclaim_midpoint(&mut self, t: TaskId) -> bool {
        let MidReclaim::Freeing { pages, rest } = self.memcg.mid_reclaim[t] else {
            return false;
        };
        let Some((m, _)) = self.tasks[t].charging else {
            return false;
        };
        if self.tasks[t].killed.is_some() {
            self.memcg.mid_reclaim[t] = MidReclaim::None;
            return false;
        }
        self.memcg.groups[m].uncharge(pages);
        self.memcg.mid_reclaim[t] = MidReclaim::Freed { pages };
        self.clock.set_after(t.index(), rest, Ev::Wake);
        true
    }

    /// Background release of memcg `m` (`Ev::Release`): `release_rate`
    /// pages per second, applied every tick, and the next tick.
    pub(super) fn release_tick(&mut self, m: MemcgId) {
        self.memcg.release(m, self.c.memcgs[m].release_rate);
        let slot = self.clock.slots.release(m);
        self.clock.set_after(slot, RELEASE_TICK, Ev::Release);
    }
}

/// What one reclaim attempt of memcg `spec` did: the pages it freed, and
/// how many of them other chargers took before the retry (all or none).
/// The second draw is made only when `reclaim_kept` is below 1, so a
/// scenario without it draws as before.
fn reclaim_outcome(spec: &crate::program::MemcgSpec, rng: &mut sim::Stream) -> (u64, u64) {
    if sim::rng::unit(rng) >= spec.reclaim_success {
        return (0, 0);
    }
    let freed = spec.reclaim_pages;
    let kept = spec.reclaim_kept >= 1.0 || sim::rng::unit(rng) < spec.reclaim_kept;
    (freed, if kept { 0 } else { freed })
}
