//! The world and its locks: a lock's wakes applied to tasks, spinning,
//! the cache-line cost of a lock word, and a lock taken.

use super::*;

impl<'c> World<'c> {
    /// The indices of `t`'s hold slots in `holds` and `held`.
    pub(super) fn hold_slots(&self, t: TaskId) -> std::ops::Range<usize> {
        let task = &self.tasks[t];
        task.slots.hold.range(self.c.groups[task.group].hold_slots)
    }

    /// `t` leaves its CPU holding locks: locks with spinners are told, since
    /// spinning on an owner that is off CPU is refused (R8/R9, R27).
    pub(super) fn holder_off_cpu(&mut self, t: TaskId) {
        for i in self.hold_slots(t) {
            let Some((lock, _)) = held_decode(self.held[i]) else {
                continue;
            };
            if self.locks[lock].has_spinners() {
                with_lock!(self, lock, |l, ctx, wakes| l.owner_off_cpu(ctx, t, wakes));
                self.apply_wakes(lock);
            }
        }
    }

    #[inline]
    pub(super) fn apply_wakes(&mut self, lock: LockId) {
        if !self.wakes.is_empty() {
            self.apply_wakes_slow(lock);
        }
    }

    pub(super) fn apply_wakes_slow(&mut self, lock: LockId) {
        let mut wakes = std::mem::take(&mut self.wakes);
        for w in &wakes {
            match *w {
                Wake::Granted(t) | Wake::Retry(t) => {
                    let granted = matches!(w, Wake::Granted(_));
                    // No waking task when a timer's wakeup makes a spinner
                    // give up (need_resched): then no flow and no waker.
                    if self.current != NONE {
                        if let Some(tr) = self.trace.as_mut() {
                            let name = &self.c.locks[lock].name;
                            tr.flow(self.current, t, self.now, name);
                        }
                        if let Some(r) = self.recorder.as_mut() {
                            r.woken_by(t, self.current);
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
                    self.spinning -= 1;
                    self.blame_switch(t, Doing::OnCpu);
                    // Replaces a pending spin deadline, if any.
                    self.queue.set(t.index(), self.now, Ev::Run);
                }
                Wake::SpinUntil(t, at) => {
                    debug_assert_eq!(self.tasks[t].state, State::Spinning);
                    if at == SimTime::MAX {
                        self.queue.clear(t.index());
                    } else {
                        self.queue.set(t.index(), at, Ev::SpinEnd);
                    }
                }
                Wake::SpinSlept(t) => {
                    if self.trace.is_some() {
                        self.trace_queue(t, lock, true);
                    }
                    let task = &mut self.tasks[t];
                    debug_assert_eq!(task.state, State::Spinning);
                    task.state = State::Blocked;
                    self.spinning -= 1;
                    self.queue.clear(t.index());
                    self.leave_cpu(t);
                }
            }
        }
        wakes.clear();
        if self.wakes.is_empty() {
            self.wakes = wakes;
        }
    }

    /// `t` spins on `lock` (on its CPU) until a wake or `until`.
    pub(super) fn start_spin(&mut self, t: TaskId, until: Option<SimTime>) {
        if self.recorder.is_some() {
            if let Resume::Acquired { lock, mode, .. } = self.tasks[t].resume {
                self.blame_switch(t, Doing::Spin { lock, mode });
            }
        }
        self.tasks[t].state = State::Spinning;
        self.spinning += 1;
        match until {
            Some(at) => self.queue.set(t.index(), at, Ev::SpinEnd),
            None => self.queue.clear(t.index()),
        }
    }

    /// A spinner's deadline passed: ask its lock again.
    pub(super) fn spin_end(&mut self, t: TaskId) -> Result<(), RunError> {
        self.current = t;
        let Resume::Acquired { lock, mode, .. } = self.tasks[t].resume else {
            unreachable!("a spinner has a pending acquisition")
        };
        self.spinning -= 1;
        self.tasks[t].state = State::Running;
        self.blame_switch(t, Doing::OnCpu);
        let r = with_lock!(self, lock, |l, ctx, wakes| l
            .spin_timeout(ctx, t, mode, wakes));
        self.apply_wakes(lock);
        match r {
            Acquire::Granted => self.run_task(t),
            Acquire::Queued => {
                self.tasks[t].state = State::Blocked;
                if self.trace.is_some() {
                    self.trace_queue(t, lock, true);
                }
                self.leave_cpu(t);
                Ok(())
            }
            Acquire::Spin { until } => {
                self.start_spin(t, until);
                Ok(())
            }
        }
    }

    /// The cache-line model (docs/kernel-rules.md "Cache-line contention"):
    /// `t` does an atomic on `lock`'s word. It waits for the line to be free,
    /// then pays a transfer if another CPU wrote it last (a local cost
    /// otherwise); atomics on one line complete one at a time. Returns how
    /// long `t` spends on it; zero for locks without the model or after
    /// the atomic is done (then the step takes effect).
    #[inline(always)]
    pub(super) fn line_atomic(&mut self, t: TaskId, lock: LockId) -> Dur {
        match self.line_costs.get(lock) {
            None | Some(None) => Dur::ZERO,
            Some(&Some((transfer, local))) => self.line_atomic_slow(t, lock, transfer, local),
        }
    }

    pub(super) fn line_atomic_slow(
        &mut self,
        t: TaskId,
        lock: LockId,
        transfer: Dur,
        local: Dur,
    ) -> Dur {
        let task = &mut self.tasks[t];
        if std::mem::take(&mut task.atomic_done) {
            return Dur::ZERO;
        }
        // With unlimited CPUs each task is its own CPU.
        let cpu = if task.cpu == CpuId::ANY {
            LineOwner::Task(t)
        } else {
            LineOwner::Cpu(task.cpu)
        };
        let (owner, free_at) = self.lines[lock];
        let start = free_at.max(self.now);
        let cost = if owner == cpu { local } else { transfer };
        if owner != cpu {
            self.line_transfers[lock] += 1;
        }
        let done = start + cost;
        self.lines[lock] = (cpu, done);
        let d = done.since(self.now);
        self.line_wait[lock] += start.since(self.now);
        if d > Dur::ZERO {
            let task = &mut self.tasks[t];
            task.atomic_done = true;
            task.in_burst = true;
            task.burst_start = self.now;
            task.burst_end = done;
            self.schedule(t, done, Ev::Run);
        }
        d
    }

    /// Finishes an acquisition for `t`: wait, hold start, counters.
    #[inline(always)]
    pub(super) fn acquired(&mut self, t: TaskId, lock: LockId, mode: Mode, wait: StatId, slot: u8) {
        let since = self.tasks[t].since;
        let waited = self.now.since(since);
        self.record(wait, waited);
        if waited > Dur::ZERO && (self.trace.is_some() || self.picker.is_some()) {
            self.observe_wait(t, lock, mode, wait, since);
        }
        let i = self.tasks[t].slots.hold.at(slot);
        self.holds[i] = self.now;
        self.held[i] = held_code(lock, mode);
        self.acquisitions[lock][mode_index(mode)] += 1;
    }
}
