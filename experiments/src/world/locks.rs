//! The world and its locks: a lock's wakes applied to tasks, spinning,
//! and a lock taken.

use super::cpu::ReschedRule;
use super::*;

/// The locks: one [`LockPolicy`] per lock instance, what the results
/// count per lock and mode, and the buffer a policy appends its wakes to
/// (kept so that no lock operation allocates).
#[derive(Clone)]
pub(super) struct Locks {
    pub(super) policies: TiVec<LockId, AnyLock>,
    /// Some lock's `rcu_sync` is on the RCU model: ask after each call
    /// whether it wants a callback ([`World::lock_op`]).
    rcu_sync: bool,
    /// Per lock and mode ([`mode_index`]): acquisitions, and those that
    /// waited or spun.
    acquisitions: TiVec<LockId, [u64; 2]>,
    contentions: TiVec<LockId, [u64; 2]>,
    /// What the last policy call issued, applied in order
    /// ([`World::apply_wakes`]).
    pub(super) wakes: Vec<Wake>,
}

impl Locks {
    pub(super) fn new(c: &Compiled) -> Locks {
        Locks {
            rcu_sync: c.rcu_sync_on_rcu(),
            policies: (c.locks.iter())
                .map(|l| {
                    AnyLock::with_options(l.kind, &l.policy, l.options)
                        .expect("the compiler accepts only known policies")
                })
                .collect(),
            acquisitions: ti_vec![[0; 2]; c.locks.len()],
            contentions: ti_vec![[0; 2]; c.locks.len()],
            wakes: Vec::new(),
        }
    }

    /// A task took `lock` in `mode`.
    #[inline(always)]
    pub(super) fn count_acquisition(&mut self, lock: LockId, mode: Mode) {
        self.acquisitions[lock][mode_index(mode)] += 1;
    }

    /// A task asked for `lock` in `mode` and has to wait or spin.
    #[inline(always)]
    pub(super) fn count_contention(&mut self, lock: LockId, mode: Mode) {
        self.contentions[lock][mode_index(mode)] += 1;
    }

    /// The lock counters per lock class, as /proc/lock_stat shows them:
    /// the instances of a family (`pidlist_mutex[3]`) add up under its
    /// name, as `class/counter`.
    pub(super) fn counters(&self, c: &Compiled, lines: &super::Lines) -> Vec<(String, u64)> {
        let mut by_class: Vec<(String, u64)> = Vec::new();
        let mut add = |class: &str, name: &str, value: u64| {
            let subject = format!("{class}/{name}");
            match by_class.iter_mut().rev().find(|(s, _)| *s == subject) {
                Some((_, v)) => *v += value,
                None => by_class.push((subject, value)),
            }
        };
        for (i, l) in c.locks.iter_enumerated() {
            let class = l.name.split('[').next().unwrap_or(&l.name);
            let modes: &[(Mode, &str)] = match l.kind {
                LockKind::Mutex | LockKind::Spinlock => &[(Mode::Write, "")],
                LockKind::Rwsem
                | LockKind::PercpuRwsem
                | LockKind::Seqcount
                | LockKind::Seqlock => &[(Mode::Read, "read_"), (Mode::Write, "write_")],
            };
            for &(m, prefix) in modes {
                let acquisitions = self.acquisitions[i][mode_index(m)];
                let contentions = self.contentions[i][mode_index(m)];
                add(class, &format!("{prefix}acquisitions"), acquisitions);
                add(class, &format!("{prefix}contentions"), contentions);
            }
            if let Some(s) = lines.lock_stats(i) {
                add(class, "line_transfers", s.transfers);
                add(class, "line_wait_ns", s.wait.ns());
                add(class, "line_invalidations", s.invalidations);
            }
            for (name, v) in self.policies[i].counters() {
                add(class, name, v);
            }
        }
        by_class
    }
}

/// A mode's index in the per-mode counters.
fn mode_index(m: Mode) -> usize {
    match m {
        Mode::Read => 0,
        Mode::Write => 1,
    }
}

/// The task table as lock policies see it. It keeps references only and
/// works out need_resched's rule when a policy asks (few do, and rarely):
/// a lock operation builds one at every acquisition and release.
pub(super) struct TasksView<'a> {
    tasks: &'a TiSlice<TaskId, Task>,
    cpus: &'a Cpus,
    c: &'a Compiled,
    now: SimTime,
}

impl TaskView for TasksView<'_> {
    fn is_rt(&self, t: TaskId) -> bool {
        self.tasks[t].rt
    }
    fn on_cpu(&self, t: TaskId) -> bool {
        matches!(self.tasks[t].state, State::Running | State::Spinning)
    }
    /// need_resched on `t`'s CPU: the kernel's rule (R120) with per-CPU
    /// run queues and a time slice; else a task waiting for that CPU (one
    /// queued there, or an RT task anywhere; with one shared queue, any).
    fn need_resched(&self, t: TaskId) -> bool {
        let pool = &self.cpus.pool;
        // need_resched as the kernel sets it ([`World::kernel_need_resched`]),
        // else any task waiting for the CPU sets it.
        if ReschedRule::kernel(self.c, self.cpus) {
            ReschedRule::at(self.c, self.cpus, self.now).due(&self.tasks[t], pool)
        } else {
            pool.waiting_for(self.tasks[t].cpu) > 0
        }
    }
}

impl<'c> World<'c> {
    /// Asks `lock`'s policy (`op`: the lock, the world as a policy sees
    /// it and the wake buffer), then carries out the wakes it issued, in
    /// order (the ordering contract, in the module doc).
    #[inline(always)]
    pub(super) fn lock_op<R>(
        &mut self,
        lock: LockId,
        op: impl FnOnce(&mut AnyLock, &LockCtx, &mut Vec<Wake>) -> R,
    ) -> R {
        let view = TasksView {
            tasks: &self.tasks.table,
            cpus: &self.cpus,
            c: self.c,
            now: self.clock.now,
        };
        let ctx = &LockCtx {
            now: self.clock.now,
            hz: self.c.hz,
            tasks: &view,
        };
        let r = op(&mut self.locks.policies[lock], ctx, &mut self.locks.wakes);
        self.apply_wakes(lock);
        if self.locks.rcu_sync && self.locks.policies[lock].take_rcu_callback() {
            self.rcu_sync_call(lock);
        }
        r
    }

    /// `t` leaves its CPU holding locks: locks with spinners are told, since
    /// spinning on an owner that is off CPU is refused (R8/R9, R27).
    pub(super) fn holder_off_cpu(&mut self, t: TaskId) {
        for i in self.tasks.hold_slots(self.c, t) {
            let Some((lock, _)) = held_decode(self.tasks.held[i]) else {
                continue;
            };
            if self.locks.policies[lock].has_spinners() {
                self.lock_op(lock, |l, ctx, wakes| l.owner_off_cpu(ctx, t, wakes));
            }
        }
    }

    #[inline]
    pub(super) fn apply_wakes(&mut self, lock: LockId) {
        if !self.locks.wakes.is_empty() {
            self.apply_wakes_slow(lock);
        }
    }

    pub(super) fn apply_wakes_slow(&mut self, lock: LockId) {
        // The spinners that poll the word change only with a wake, a new
        // spin (`start_spin`) or a spinner's own timeout (`spin_end`).
        self.lock_pollers_changed(lock);
        let mut wakes = std::mem::take(&mut self.locks.wakes);
        for w in &wakes {
            match *w {
                Wake::Granted(t) | Wake::Retry(t) => {
                    let granted = matches!(w, Wake::Granted(_));
                    // No waking task when a timer's wakeup makes a spinner
                    // give up (need_resched): then no flow and no waker.
                    if self.clock.current != NONE {
                        if let Some(tr) = self.obs.trace.as_mut().filter(|tr| tr.keeps_lock(lock)) {
                            let name = &self.c.locks[lock].name;
                            tr.flow(self.clock.current, t, self.clock.now, name);
                        }
                        if let Some(r) = self.obs.recorder.as_mut() {
                            r.woken_by(t, self.clock.current);
                        }
                    }
                    let task = &mut self.tasks[t];
                    debug_assert_eq!(task.state, State::Blocked, "only sleepers are woken");
                    task.resume = pending(task.resume, lock, granted);
                    self.wakeup(t, false);
                }
                Wake::SpinGranted(t) => {
                    let task = &mut self.tasks[t];
                    debug_assert_eq!(task.state, State::Spinning);
                    task.resume = pending(task.resume, lock, true);
                    task.state = State::Running;
                    self.cpus.spinning -= 1;
                    self.blame_switch(t, Doing::OnCpu);
                    // It runs once its cmpxchg on the word is done (R73),
                    // or its re-read that saw the lock its (R80).
                    let rereads = self.any_rereaders() && {
                        let mode = (self.tasks[t].resume.lock_wait()).map_or(Mode::Write, |w| w.1);
                        self.locks.policies[lock].rereads(mode)
                    };
                    let at = if rereads {
                        self.spinner_reread(t)
                    } else {
                        self.spinner_cmpxchg(t, lock)
                    };
                    // Replaces a pending spin deadline, if any.
                    self.clock.queue.set(t.index(), at, Ev::Run);
                }
                Wake::SpinUntil(t, at) => {
                    debug_assert_eq!(self.tasks[t].state, State::Spinning);
                    self.tasks[t].spin_until = at;
                    self.arm_spinner(t);
                }
                Wake::SpinSlept(t) => {
                    if self.obs.trace.is_some() {
                        self.trace_queue(t, lock, true);
                    }
                    let task = &mut self.tasks[t];
                    debug_assert_eq!(task.state, State::Spinning);
                    task.state = State::Blocked;
                    self.cpus.spinning -= 1;
                    self.clock.queue.clear(t.index());
                    self.leave_cpu(t);
                }
            }
        }
        wakes.clear();
        if self.locks.wakes.is_empty() {
            self.locks.wakes = wakes;
        }
    }

    /// `t` spins on `lock` (on its CPU) until a wake or `until`.
    pub(super) fn start_spin(&mut self, t: TaskId, until: Option<SimTime>) {
        if self.obs.recorder.is_some() {
            if let Resume::Acquired { lock, mode, .. } = self.tasks[t].resume {
                self.blame_switch(t, Doing::Spin { lock, mode });
            }
        }
        self.tasks[t].state = State::Spinning;
        self.cpus.spinning += 1;
        if let Resume::Acquired { lock, .. } = self.tasks[t].resume {
            self.lock_pollers_changed(lock);
        }
        self.tasks[t].spin_until = until.unwrap_or(SimTime::MAX);
        self.arm_spinner(t);
    }

    /// Sets spinner `t`'s event: its lock's deadline, or before it the
    /// tick that ends its slice if a task waits for its CPU and that tick
    /// is still to come (R120), where need_resched stops it (R8, R28).
    pub(super) fn arm_spinner(&mut self, t: TaskId) {
        let task = &self.tasks[t];
        let mut next = (task.spin_until, Ev::SpinEnd);
        if self.kernel_need_resched() && self.cpus.pool.waiting_for(task.cpu) > 0 {
            if let Some(tick) = self.resched_rule().slice_tick(task) {
                if self.clock.now < tick && tick < next.0 {
                    next = (tick, Ev::SpinResched);
                }
            }
        }
        match next {
            (SimTime::MAX, _) => self.clock.queue.clear(t.index()),
            (at, ev) => self.clock.queue.set(t.index(), at, ev),
        }
    }

    /// The tick that ends spinner `t`'s slice: need_resched stops it if a
    /// task still waits for its CPU; else it spins on to its deadline.
    pub(super) fn spin_resched(&mut self, t: TaskId) {
        self.clock.current = t;
        debug_assert_eq!(self.tasks[t].state, State::Spinning);
        if self.resched_due(t) {
            let Resume::Acquired { lock, .. } = self.tasks[t].resume else {
                unreachable!("a spinner has a pending acquisition")
            };
            if self.lock_op(lock, |l, ctx, wakes| l.resched(ctx, Some(t), wakes)) {
                self.cpus.spin_resched_stops += 1;
            }
        }
        if self.tasks[t].state == State::Spinning && !self.clock.queue.is_set(t.index()) {
            self.arm_spinner(t);
        }
    }

    /// A spinner's deadline passed: ask its lock again.
    pub(super) fn spin_end(&mut self, t: TaskId) -> Result<(), RunError> {
        self.clock.current = t;
        self.tasks[t].spin_until = SimTime::MAX;
        let Resume::Acquired { lock, mode, .. } = self.tasks[t].resume else {
            unreachable!("a spinner has a pending acquisition")
        };
        self.cpus.spinning -= 1;
        self.tasks[t].state = State::Running;
        self.blame_switch(t, Doing::OnCpu);
        let r = self.lock_op(lock, |l, ctx, wakes| l.spin_timeout(ctx, t, mode, wakes));
        self.lock_pollers_changed(lock);
        match r {
            Acquire::Granted => self.run_task(t),
            Acquire::Queued => {
                self.tasks[t].state = State::Blocked;
                if self.obs.trace.is_some() {
                    self.trace_queue(t, lock, true);
                }
                self.leave_cpu(t);
                Ok(())
            }
            Acquire::Spin { until } => {
                self.start_spin(t, until);
                Ok(())
            }
            Acquire::Sleep { until } => {
                self.lock_sleep(t, lock, until);
                Ok(())
            }
            Acquire::GracePeriod => {
                self.lock_grace_period(t, lock);
                Ok(())
            }
        }
    }

    /// `t`, running, sleeps on `lock` until `until` (R82's grace
    /// period): a lock wait, uninterruptible, that a timer ends.
    #[cold]
    #[inline(never)]
    pub(super) fn lock_sleep(&mut self, t: TaskId, lock: LockId, until: SimTime) {
        if self.obs.trace.is_some() {
            self.trace_queue(t, lock, true);
        }
        self.tasks[t].state = State::Blocked;
        self.clock.schedule(t, until, Ev::LockTimer);
        self.leave_cpu(t);
    }

    /// `t`, running, waits on `lock` in `synchronize_rcu` (R82 on R93):
    /// a lock wait, uninterruptible, that the RCU model's grace period
    /// ends ([`World::lock_grace_period_over`]).
    #[cold]
    #[inline(never)]
    pub(super) fn lock_grace_period(&mut self, t: TaskId, lock: LockId) {
        if self.obs.trace.is_some() {
            self.trace_queue(t, lock, true);
        }
        self.tasks[t].state = State::Blocked;
        self.rcu_wait(t);
        self.leave_cpu(t);
    }

    /// The grace period `t` waited for on its lock is over: it is woken
    /// to try again, as when a lock's timed sleep ends.
    #[cold]
    #[inline(never)]
    pub(super) fn lock_grace_period_over(&mut self, t: TaskId, lock: LockId) {
        let task = &mut self.tasks[t];
        task.resume = pending(task.resume, lock, false);
        self.wakeup(t, false);
    }

    /// The timed sleep of `t` on its lock is over (`Ev::LockTimer`): a
    /// timer, not a task, wakes it to try again.
    #[cold]
    #[inline(never)]
    pub(super) fn lock_sleep_over(&mut self, t: TaskId) -> Result<(), RunError> {
        self.clock.current = NONE;
        let Some((lock, _, _)) = self.tasks[t].resume.lock_wait() else {
            unreachable!("a lock's sleeper waits for it")
        };
        let task = &mut self.tasks[t];
        task.resume = pending(task.resume, lock, false);
        if self.wakeup(t, true) {
            self.run_task(t)?;
        }
        Ok(())
    }

    /// `t`'s hold of `lock` in `mode`, in its hold slot `slot`, ends now:
    /// recorded under `hold`.
    #[inline(always)]
    pub(super) fn end_hold(&mut self, t: TaskId, lock: LockId, mode: Mode, hold: StatId, slot: u8) {
        self.hold_ended(t, lock, mode, Some(hold), slot);
    }

    /// [`World::end_hold`], recorded under `hold` if there is one (a
    /// killed task's exit releases holds its program has no release for).
    #[inline(always)]
    pub(super) fn hold_ended(
        &mut self,
        t: TaskId,
        lock: LockId,
        mode: Mode,
        hold: Option<StatId>,
        slot: u8,
    ) {
        let start = self.tasks.unhold(t, slot);
        if let Some(hold) = hold {
            self.stats
                .record(hold, self.clock.now, self.clock.now.since(start));
        }
        if self.obs.trace.is_some() {
            self.trace_lock(t, "hold", lock, mode, start);
        }
        if let Some(r) = self.obs.recorder.as_mut() {
            r.hold(t, lock, mode, start, self.clock.now);
        }
    }

    /// Whether `t` holds a lock whose hold disables preemption (a
    /// spinlock, a sequence count's write section: R75, R86): it is not
    /// preempted and does not yield.
    #[inline(always)]
    pub(super) fn preempt_off(&self, t: TaskId) -> bool {
        self.c.atomic_holds && self.preempt_off_slow(t)
    }

    #[inline(never)]
    fn preempt_off_slow(&self, t: TaskId) -> bool {
        let off = |(lock, mode): (LockId, Mode)| self.c.locks[lock].kind.disables_preemption(mode);
        (self.tasks.held_locks(self.c, t)).any(|(lock, mode, _)| off((lock, mode)))
            || self.lock_step_of(t).is_some_and(off)
    }

    /// The lock and mode of the acquisition `t` is inside, if any: stalled
    /// on the word's line before its step takes effect, or granted the
    /// lock and not yet run holding it (a spinner's cmpxchg, a woken
    /// waiter). That is kernel code with no return to user space, and
    /// `spin_lock` disables preemption before its atomic (R75), so such a
    /// task is never preempted as if it held nothing: one that was would
    /// own the lock off its CPU while the others spin for it.
    fn lock_step_of(&self, t: TaskId) -> Option<(LockId, Mode)> {
        let task = &self.tasks[t];
        if !task.in_lock_step() {
            return None;
        }
        if let Some((lock, mode, _)) = task.resume.lock_wait() {
            return Some((lock, mode));
        }
        match self.c.groups[task.group].code.get(task.pc) {
            // The family's first instance: every instance has its kind.
            Some(&crate::program::Instr::Acquire { lock, mode, .. }) => Some((lock, mode)),
            _ => None,
        }
    }

    /// Finishes an acquisition for `t`: wait, hold start, counters.
    #[inline(always)]
    pub(super) fn acquired(&mut self, t: TaskId, lock: LockId, mode: Mode, wait: StatId, slot: u8) {
        let since = self.tasks[t].since;
        let waited = self.clock.now.since(since);
        self.stats.record(wait, self.clock.now, waited);
        if waited > Dur::ZERO && (self.obs.trace.is_some() || self.obs.picker.is_some()) {
            self.observe_wait(t, lock, mode, wait, since);
        }
        self.tasks.hold(t, slot, lock, mode, self.clock.now);
        self.locks.count_acquisition(lock, mode);
    }
}
