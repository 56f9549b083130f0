//! The world and its CPUs: taking, giving and leaving a CPU, wakeups,
//! wakeup preemption, need_resched for spinners and time-slice ends.

use super::*;

impl<'c> World<'c> {
    /// `t` becomes runnable now: it runs at once (as an event at this
    /// instant) if a CPU is free, else it waits in the run queue.
    #[inline]
    pub(super) fn make_runnable(&mut self, t: TaskId) {
        if let Some(cpu) = self.take_cpu(t) {
            self.give_cpu(t, cpu);
            self.schedule(t, self.now, Ev::Run);
        }
    }

    /// `t` is runnable: a free CPU, or a preempted task's CPU under
    /// PREEMPT_FULL, or the run queue (where need_resched may make a
    /// spinner yield its CPU).
    #[inline]
    pub(super) fn take_cpu(&mut self, t: TaskId) -> Option<CpuId> {
        self.tasks[t].state = State::Runnable;
        if self.cpu.is_unlimited() {
            return Some(CpuId::ANY);
        }
        self.take_limited_cpu(t)
    }

    /// [`World::take_cpu`] with a limited number of CPUs.
    #[inline(never)]
    pub(super) fn take_limited_cpu(&mut self, t: TaskId) -> Option<CpuId> {
        match self.tasks[t].bound {
            Some(cpu) => self.cpu.wake_on(self.now, t, cpu),
            None => self.cpu.wake(self.now, t),
        }
        if let Some(cpu) = self.tasks[t].bound {
            let got = self.cpu.make_runnable_on(self.now, t, cpu);
            if got.is_none() {
                // A bound kworker waits for its own CPU.
                self.waits_for_cpu(t, Some(cpu));
            }
            return got;
        }
        if let Some(cpu) = self.cpu.try_take_for(t) {
            return Some(cpu);
        }
        if self.c.preempt_full || self.c.wake_placement.preempts() {
            if let Some(cpu) = self.preempt_for(t) {
                return Some(cpu);
            }
        }
        self.cpu.enqueue_woken(self.now, t);
        let on = self.cpu.queued_on(t);
        self.waits_for_cpu(t, on);
        None
    }

    /// Woken `t` now waits for CPU `on` (`None`: any CPU, one shared
    /// queue or RT): traced as runnable, and need_resched there stops the
    /// spinner it waits for (R8/R9, R28).
    fn waits_for_cpu(&mut self, t: TaskId, on: Option<CpuId>) {
        self.tasks[t].queued_at = Some(self.now);
        self.blame_switch(t, Doing::Runnable);
        if self.spinning > 0 {
            match on {
                Some(cpu) => self.resched_cpu(cpu),
                None => self.resched(),
            }
        }
    }

    /// Wakeup preemption: the task in a `cpu` burst that has run longest
    /// (never an RT task for a normal wakee) loses its CPU to `t` and
    /// requeues with the rest of its burst. Under PREEMPT_FULL any burst
    /// will do; with `wake_placement = "preempt"` only a task's burst that
    /// holds no lock: PREEMPT_NONE/VOLUNTARY reschedule at a preemption
    /// point, such as the return to user space that a lock-free burst of a
    /// task stands for, and kernfs/cgroup sections have none. A kworker's
    /// burst is kernel code with no return to user space, so it is never a
    /// victim there. Returns the CPU, if a victim was found.
    pub(super) fn preempt_for(&mut self, t: TaskId) -> Option<CpuId> {
        let wakee_rt = self.tasks[t].rt;
        let now = self.now;
        let victim = self
            .running_on
            .iter()
            .filter(|&&v| v != NONE)
            .map(|&v| (v, &self.tasks[v]))
            .filter(|(_, v)| v.state == State::Running && v.in_burst && v.burst_end > now)
            .filter(|(_, v)| wakee_rt || !v.rt)
            .filter(|(i, _)| self.c.preempt_full || self.at_user_boundary(*i))
            .min_by_key(|(i, v)| (v.rt, v.burst_start, *i))
            .map(|(i, _)| i)?;
        let v = &mut self.tasks[victim];
        v.remaining = v.burst_end.since(now);
        v.in_burst = false;
        v.state = State::Runnable;
        let cpu = v.cpu;
        self.running_on[cpu] = NONE;
        self.queue.clear(victim.index());
        self.preemptions += 1;
        self.blame_switch(victim, Doing::Runnable);
        if self.spinning > 0 {
            self.holder_off_cpu(victim);
        }
        self.cpu.stopped(now, victim, true);
        self.requeue(victim);
        Some(cpu)
    }

    /// `t` was woken (sleep over, lock granted or retry): after the wake
    /// latency, it becomes runnable. Returns true if it has a CPU now and
    /// the caller (`inline`) may run it at once.
    #[inline(always)]
    pub(super) fn wakeup(&mut self, t: TaskId, inline: bool) -> bool {
        // A task bound to the CPU its waker runs on is queued there by the
        // waker itself (no IPI, no idle exit): the latency is drawn, to
        // keep the stream in step, but not applied.
        if let Some(l) = self.c.wake_latency.as_ref() {
            let waker_cpu = (self.current != NONE).then(|| self.tasks[self.current].cpu);
            let local = waker_cpu.is_some() && self.tasks[t].bound == waker_cpu;
            let s = self.tasks[t]
                .sched
                .as_mut()
                .expect("a wake latency gives every task its stream");
            let d = l.sample(s);
            if d > Dur::ZERO && !local {
                self.tasks[t].state = State::Runnable;
                self.blame_switch(t, Doing::Waking);
                self.schedule(t, self.now + d, Ev::Ready);
                return false;
            }
        }
        if inline {
            match self.take_cpu(t) {
                Some(cpu) => {
                    self.give_cpu(t, cpu);
                    true
                }
                None => false,
            }
        } else {
            self.make_runnable(t);
            false
        }
    }

    /// A task waits for any CPU (one shared run queue, or an RT task)
    /// while others spin: need_resched makes one spinner give up (R8/R9
    /// stop on need_resched), freeing its CPU.
    pub(super) fn resched(&mut self) {
        for lock in (0..self.locks.len()).map(LockId::from) {
            if self.locks[lock].has_spinners() {
                let stopped = with_lock!(self, lock, |l, ctx, wakes| l.resched(ctx, None, wakes));
                self.apply_wakes(lock);
                if stopped {
                    self.spin_resched_stops += 1;
                    return;
                }
            }
        }
    }

    /// A task now waits for `cpu` (per-CPU run queues, or a bound kworker):
    /// need_resched there makes the task spinning on it, if any, give up
    /// (R8/R9, R28). Spinners on other CPUs go on.
    pub(super) fn resched_cpu(&mut self, cpu: CpuId) {
        let Some(&v) = self.running_on.get(cpu) else {
            return;
        };
        if v == NONE || self.tasks[v].state != State::Spinning {
            return;
        }
        let Resume::Acquired { lock, .. } = self.tasks[v].resume else {
            unreachable!("a spinner has a pending acquisition")
        };
        if with_lock!(self, lock, |l, ctx, wakes| l.resched(ctx, Some(v), wakes)) {
            self.spin_resched_stops += 1;
        }
        self.apply_wakes(lock);
    }

    /// `t` runs on `cpu` from now; its time slice starts.
    #[inline(always)]
    pub(super) fn give_cpu(&mut self, t: TaskId, cpu: CpuId) {
        let task = &mut self.tasks[t];
        task.cpu = cpu;
        task.on_cpu_since = self.now;
        // Unlimited CPUs with nothing observed: no more to do.
        if cpu != CpuId::ANY || self.recorder.is_some() || self.trace.is_some() {
            self.give_cpu_rest(t, cpu);
        }
    }

    /// The rest of [`World::give_cpu`]: the pool, blame and the trace.
    #[inline(never)]
    fn give_cpu_rest(&mut self, t: TaskId, cpu: CpuId) {
        if let Some(r) = self.running_on.get_mut(cpu) {
            *r = t;
            self.cpu.started(self.now, t, cpu);
            // context_switch: a task that another one follows on this CPU
            // first spends the switch's CPU time, as the rest of a burst
            // (an idle spell in between does not count: the same task
            // coming back finds its context in place).
            let last = &mut self.last_on[cpu];
            if *last != t {
                *last = t;
                if self.c.switch_cost > Dur::ZERO {
                    self.switches += 1;
                    self.tasks[t].remaining += self.c.switch_cost;
                }
            }
        }
        if self.recorder.is_some() {
            self.blame_on_cpu(t);
        }
        if let Some(tr) = self.trace.as_mut() {
            // Runnable since it was queued, if it waited for this CPU.
            let task = &mut self.tasks[t];
            if let Some(since) = task.queued_at.take() {
                if since < self.now {
                    let on = (cpu != CpuId::ANY).then_some(cpu);
                    tr.slice_on_cpu(t, "runnable".into(), since, self.now, on);
                }
            }
        }
    }

    /// Whether a step boundary of `t` stands for a return to user space:
    /// a task (not a kworker) that holds no lock.
    pub(super) fn at_user_boundary(&self, t: TaskId) -> bool {
        self.tasks[t].worker_of.is_none() && !self.holds_lock(t)
    }

    /// Whether `t` holds any lock now.
    pub(super) fn holds_lock(&self, t: TaskId) -> bool {
        self.held[self.hold_slots(t)].iter().any(|&h| h != 0)
    }

    /// Whether a reschedule is due for `t`, on a CPU: others wait for a
    /// CPU (its CPU's, with per-CPU queues) and `t` has used up its time
    /// slice (seen at a tick), or an RT task waits, or a woken task asked
    /// for the CPU (`preempt` placement; EEVDF wakeup preemption with
    /// per-CPU queues). The cheap tests go first: this runs at every
    /// event of a task.
    #[inline(always)]
    pub(super) fn resched_due(&self, t: TaskId) -> bool {
        self.may_resched && self.resched_due_slow(t)
    }

    /// [`World::resched_due`] when a reschedule can happen at all.
    #[inline(never)]
    pub(super) fn resched_due_slow(&self, t: TaskId) -> bool {
        // The RT class runs first: a waiting RT task reschedules a fair
        // task at once, and an RT task (SCHED_FIFO) has no slice.
        let task = &self.tasks[t];
        if task.rt {
            return false;
        }
        // The scheduler tick notices a used-up slice: the slice ends at the
        // first tick at or after it runs out (the divisions only once it
        // has run out). Ticks are where jiffies change (models::timer), so
        // at HZ 300 they do not drift from the timers' by 1/3 ns a tick.
        let over = |slice: Dur| {
            let end = task.on_cpu_since + slice;
            if self.now < end {
                return false;
            }
            self.now >= models::timer::tick_at_or_after(end, self.c.hz)
        };
        let asked = self.cpu.rt_waiting() > 0
            || self.cpu.resched_set(task.cpu)
            || (self.c.wake_placement.preempts() && self.cpu.woken_waiting() > 0)
            || self.slice.is_some_and(over);
        asked && self.cpu.waiting_for(task.cpu) > 0
    }

    /// `t` gives up its CPU to the run queue's tail and resumes at `pc`.
    pub(super) fn yield_cpu(&mut self, t: TaskId, pc: Pc) {
        self.slice_yields += 1;
        let task = &mut self.tasks[t];
        task.pc = pc;
        task.state = State::Runnable;
        // Back in the queue before its CPU is handed on: the pick sees it
        // (EEVDF may choose it again), and a CPU nobody else wants is not
        // left free while it waits.
        self.cpu.stopped(self.now, t, true);
        self.requeue(t);
        self.leave_cpu(t);
    }

    /// `t`, preempted, waits at the tail: of its CPU's queue if bound.
    pub(super) fn requeue(&mut self, t: TaskId) {
        self.tasks[t].queued_at = Some(self.now);
        match self.tasks[t].bound {
            Some(cpu) => self.cpu.requeue_on(self.now, t, cpu),
            None => self.cpu.requeue(self.now, t),
        }
    }

    /// `t` leaves its CPU; the next runnable task (if any) gets it.
    #[inline(always)]
    pub(super) fn leave_cpu(&mut self, t: TaskId) {
        // Unlimited CPUs, no spinners, no pool, nothing observed: nothing
        // to hand on or account.
        if self.recorder.is_some()
            || self.spinning > 0
            || !self.cpu.is_unlimited()
            || self.tasks[t].pool != PoolState::No
        {
            self.leave_cpu_rest(t);
        }
    }

    /// [`World::leave_cpu`] when there is something to do.
    #[inline(never)]
    fn leave_cpu_rest(&mut self, t: TaskId) {
        if self.recorder.is_some() {
            self.blame_off_cpu(t);
        }
        if self.spinning > 0 {
            self.holder_off_cpu(t);
        }
        // A pool kworker that sleeps inside its item (not one preempted)
        // leaves nr_running before its CPU is handed on: schedule() calls
        // wq_worker_sleeping (sched_submit_work) before __schedule picks,
        // so a kworker that kick_pool wakes for this CPU is in that pick.
        let task = &self.tasks[t];
        if task.pool == PoolState::Running && matches!(task.state, State::Blocked | State::Sleeping)
        {
            self.pool_worker_sleeps(t);
        }
        if !self.cpu.is_unlimited() {
            let runnable = self.tasks[t].state == State::Runnable;
            self.cpu.stopped(self.now, t, runnable);
            self.release_cpu(t);
        }
    }

    /// `t`'s CPU goes to the next task waiting for it, if any.
    #[inline(never)]
    pub(super) fn release_cpu(&mut self, t: TaskId) {
        let cpu = self.tasks[t].cpu;
        self.running_on[cpu] = NONE;
        if let Some((next, _waited)) = self.cpu.release(self.now, cpu) {
            self.give_cpu(next, cpu);
            self.schedule(next, self.now, Ev::Run);
        }
    }
}
