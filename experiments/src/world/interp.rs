//! The interpreter: runs a task's compiled program on its CPU until it
//! blocks, sleeps, spins, burns CPU time or exits.

use super::tasks::Drawn;
use super::*;
use crate::program::LineId;

impl<'c> World<'c> {
    /// Task `t` (at a delay step) advances time by `d`, on its CPU or off it
    /// asleep, and will go on at `next`. Returns false for a zero delay (the
    /// task goes on at once).
    #[inline(always)]
    pub(super) fn delay(&mut self, t: TaskId, d: Dur, sleep: bool, next: Pc) -> bool {
        self.delay_drawn(t, d, sleep, next, None)
    }

    /// [`World::delay`] of a `sleep` step that drew `d` from `drawn`: a
    /// sleep of more than zero remembers the draw for blame, the trace and
    /// `stuck`. The task is looked up once for both (and once again only
    /// after a stolen burst's end): this runs at every other event.
    #[inline(always)]
    fn delay_drawn(
        &mut self,
        t: TaskId,
        d: Dur,
        sleep: bool,
        next: Pc,
        drawn: Option<Drawn>,
    ) -> bool {
        if let Some(log) = &mut self.obs.draws {
            log.push((t, d));
        }
        let mut task = &mut self.tasks[t];
        if let Some(drawn) = drawn {
            if sleep && d > Dur::ZERO {
                task.drawn_sleep = Some((drawn, self.clock.now));
            }
        }
        task.pc = next;
        if d == Dur::ZERO {
            return false;
        }
        let at = if !sleep && self.cpus.wake.is_some() {
            let at = self.interrupted_burst_end(t, d);
            task = &mut self.tasks[t];
            at
        } else {
            self.clock.now + d
        };
        if let Some(tr) = self.obs.trace.as_mut() {
            let name = match (sleep, task.off) {
                (true, Doing::Reclaim { .. }) => "memcg reclaim",
                (true, Doing::Throttle { .. }) => "memory.high throttle",
                (true, _) => "sleep",
                (false, _) => "cpu",
            };
            let on = (!sleep && task.cpu != CpuId::ANY).then_some(task.cpu);
            tr.slice_on_cpu(t, name.into(), self.clock.now, at, on);
        }
        if sleep {
            task.state = State::Sleeping;
            let pool = task.pool;
            self.clock.schedule(t, at, Ev::Wake);
            self.leave_cpu_as(t, State::Sleeping, pool);
        } else {
            task.in_burst = true;
            task.burst_start = self.clock.now;
            task.burst_end = at;
            self.clock.schedule(t, at, Ev::Run);
        }
        true
    }

    /// `t` pays what it owes for waking tasks on other CPUs (R122) as CPU
    /// time, then goes on at `pc`. Returns true (it burns the time now).
    #[cold]
    #[inline(never)]
    fn pay_wake_debt(&mut self, t: TaskId, pc: Pc) -> bool {
        let d = std::mem::take(&mut self.tasks[t].wake_debt);
        self.delay(t, d, false, pc)
    }

    /// The lock instance a lock step of `t` names (`lock`, as the
    /// compiled step has it, the family's first for a keyed one): a
    /// `[self]` instance is `t`'s key past it, a `[hash self]` instance the
    /// key's hash, a `[repeat]` instance the pass of the repeat around
    /// the step ([`crate::program::Instance`]).
    #[inline(always)]
    fn lock_instance(&self, t: TaskId, lock: LockId, dynamic: crate::program::Instance) -> LockId {
        use crate::program::{hash_64, Instance};
        match dynamic {
            Instance::Fixed => lock,
            Instance::SelfKey => LockId(lock.0 + self.tasks[t].self_key),
            Instance::Hashed { bits } => {
                LockId(lock.0 + hash_64(u64::from(self.tasks[t].self_key), bits) as u32)
            }
            Instance::Pass { depth, count } => {
                LockId(lock.0 + self.tasks.repeat_pass(t, depth, count))
            }
        }
    }

    /// The error for task `t` that ran more steps than the limit at one
    /// instant, now at `pc`.
    #[cold]
    #[inline(never)]
    fn livelock(&self, t: TaskId, pc: Pc) -> RunError {
        let g = &self.c.groups[self.tasks[t].group];
        RunError::Livelock {
            task: self.tasks.name(self.c, t),
            location: g
                .origins
                .get(pc)
                .map(|o| o.location.clone())
                .unwrap_or_default(),
            at: self.clock.now,
            holding: self.held_names(t),
        }
    }

    /// The error for events that went on at instant `at` past the limit,
    /// the last one task `t`'s.
    #[cold]
    #[inline(never)]
    pub(super) fn instant_livelock(&self, t: TaskId, at: SimTime) -> RunError {
        let task = &self.tasks[t];
        let g = &self.c.groups[task.group];
        RunError::InstantLivelock {
            events: self.clock.limits.max_steps_per_instant,
            at,
            task: self.tasks.name(self.c, t),
            location: g
                .origins
                .get(task.pc)
                .map(|o| o.location.clone())
                .unwrap_or_default(),
        }
    }

    /// One draw of compiled distribution `dist` from task `t`'s stream.
    #[inline(always)]
    fn draw(&mut self, t: TaskId, dist: DistId) -> Dur {
        self.c.dists[dist].sample(&mut self.tasks.rngs[t])
    }

    /// `read_seqcount_retry` of `t` on `lock` (R87): `None` while the
    /// count's load is under way, else whether to read again. The read
    /// section in hold slot `slot` ends, recorded under `hold`.
    #[inline(never)]
    fn seq_retry(&mut self, t: TaskId, lock: LockId, hold: StatId, slot: u8) -> Option<bool> {
        if self.line_atomic(t, lock, Mode::Read, false) > Dur::ZERO {
            return None;
        }
        self.end_hold(t, lock, Mode::Read, hold, slot);
        Some(self.lock_op(lock, |l, ctx, _| l.read_retry(ctx, t)))
    }

    /// The lock acquisition `t` was woken for (its `resume`, not
    /// `Resume::Nothing`) takes effect as it runs: granted, or retried.
    /// Returns false if `t` waits on (it goes no further now).
    #[inline]
    fn resume_acquisition(&mut self, t: TaskId) -> bool {
        match self.tasks[t].resume {
            Resume::Nothing => {}
            Resume::Acquired {
                lock,
                mode,
                wait,
                slot,
            } => {
                self.tasks[t].resume = Resume::Nothing;
                self.acquired(t, lock, mode, wait, slot);
            }
            Resume::Retry {
                lock,
                mode,
                wait,
                slot,
            } => {
                let r = self.lock_op(lock, |l, ctx, wakes| l.retry(ctx, t, mode, wakes));
                if r == Acquire::Granted {
                    self.tasks[t].resume = Resume::Nothing;
                    self.acquired(t, lock, mode, wait, slot);
                } else {
                    // Not yet: it waits on, the acquisition still its own.
                    self.tasks[t].resume = Resume::Acquired {
                        lock,
                        mode,
                        wait,
                        slot,
                    };
                    match r {
                        Acquire::Granted => unreachable!("handled above"),
                        Acquire::Queued => {
                            self.tasks[t].state = State::Blocked;
                            self.leave_cpu(t);
                        }
                        Acquire::Spin { until } => self.start_spin(t, until),
                        Acquire::Sleep { until } => self.lock_sleep(t, lock, until),
                        Acquire::GracePeriod => self.lock_grace_period(t, lock),
                    }
                    return false;
                }
            }
        }
        true
    }

    /// `t`, killed and not yet exiting, unwinds as it next runs: a
    /// flusher returns from its flush, then it exits at once or goes on
    /// at its `exit` steps. Returns false if it exited.
    #[cold]
    #[inline(never)]
    fn unwind_killed(&mut self, t: TaskId) -> bool {
        // A flusher returns from flush_workqueue, cascading (R110),
        // before a kill can unwind it (its wait is uninterruptible).
        // Its cascade's passes over the pwqs (R118) are not paid: the
        // exit that unwinds it comes at once.
        self.tasks[t].flush_prepped = false;
        if let Some((q, f)) = self.tasks[t].flushing.take() {
            self.wq_call(q, |q, now, out| q.flush_resumed(now, f, out));
        }
        let exit_pc = self.c.groups[self.tasks[t].group].exit_pc;
        if matches!(
            self.c.groups[self.tasks[t].group].code[exit_pc],
            Instr::Exit
        ) {
            self.exit_killed(t);
            return false;
        }
        // do_exit: exit_mm frees its memory, then its `exit` steps
        // (cgroup_exit and after) run with no lock held.
        self.die(t);
        self.tasks[t].exiting = true;
        self.tasks[t].pc = exit_pc;
        true
    }

    /// Runs task `t` (which is on a CPU) until it blocks, sleeps, burns CPU
    /// time or exits.
    ///
    /// Up to its first step it keeps one reference to the task, looked up
    /// again only after a call that needs the whole world (a pooled
    /// kworker, a lock acquisition to finish, a kill): each lookup is a
    /// bounds check and an address, at every event.
    #[inline(always)]
    pub(super) fn run_task(&mut self, t: TaskId) -> Result<(), RunError> {
        self.clock.current = t;
        let mut task = &mut self.tasks[t];
        task.state = State::Running;
        task.in_burst = false;
        if task.pool != PoolState::No {
            if !self.pool_worker_runs(t) {
                return Ok(());
            }
            task = &mut self.tasks[t];
        }
        if task.remaining > Dur::ZERO {
            // Back on a CPU after a preemption: finish the burst.
            let d = std::mem::take(&mut task.remaining);
            let end = if self.cpus.wake.is_some() {
                self.interrupted_burst_end(t, d)
            } else {
                self.clock.now + d
            };
            let task = &mut self.tasks[t];
            task.in_burst = true;
            task.burst_start = self.clock.now;
            task.burst_end = end;
            self.clock.schedule(t, end, Ev::Run);
            return Ok(());
        }
        if !matches!(task.resume, Resume::Nothing) {
            if !self.resume_acquisition(t) {
                return Ok(());
            }
            task = &mut self.tasks[t];
        }
        // A kill lands while the victim is not executing (only one task runs
        // at a time), so it is seen here, when the victim next runs, after
        // it took any lock it was granted (it exits releasing that too).
        if task.killed.is_some() && !task.exiting {
            if !self.unwind_killed(t) {
                return Ok(());
            }
            task = &mut self.tasks[t];
        }
        let (atomic_done, group, pc) = (task.atomic_done, task.group, task.pc);
        // A task's step boundary holding no lock is a preemption point (the
        // return to user space); a kworker's is not (a work item is kernel
        // code throughout); under PREEMPT_FULL every boundary is. A task
        // back from a stall on its lock step's cache line is not at a
        // boundary: it is inside that step (in spin_lock, with preemption
        // off, R75), and the step takes effect now.
        // The boundary test before the slow part of resched_due: it is
        // cheaper, and most steps of a task that holds a lock end there.
        if self.cpus.may_resched
            && !atomic_done
            && (self.c.preempt_full || self.at_user_boundary(t))
            && self.resched_due_slow(t)
            && !self.preempt_off(t)
        {
            self.yield_cpu(t, pc);
            return Ok(());
        }
        let c: &'c Compiled = self.c;
        let code = &c.groups[group].code;
        let mut pc = pc;
        // Steps taken at this instant, counted and checked on back edges
        // only: a program can only run forever at one instant through a
        // loop or a repeat.
        let max_steps = self.clock.limits.max_steps_per_instant;
        let mut steps: u64 = 0;
        macro_rules! back_edge {
            () => {
                steps += 1;
                if steps > max_steps {
                    return Err(self.livelock(t, pc));
                }
            };
        }
        // A delay's continuation: a back edge if it goes back.
        macro_rules! go_to {
            ($next:expr) => {
                let next = $next;
                let back = next <= pc;
                pc = next;
                if back {
                    back_edge!();
                }
            };
        }
        // Only the machine's wake path charges wakers (R122).
        let wakers_pay = self.cpus.wake.is_some();
        loop {
            // R122: what its wakeups of tasks on other CPUs cost it, on
            // its own CPU, before its next step.
            if wakers_pay && self.tasks[t].wake_debt > Dur::ZERO && self.pay_wake_debt(t, pc) {
                return Ok(());
            }
            match code[pc] {
                Instr::QueueWork {
                    wq,
                    work,
                    key,
                    delay,
                    rcu,
                } => {
                    pc += 1;
                    let (id, cpu) = (self.work_id(t, work, key), self.wq_cpu(t, wq));
                    let delay = delay.map(|d| self.draw(t, d));
                    self.wq_call(wq, |q, now, out| match delay {
                        None => q.queue_work(now, id, cpu, out),
                        Some(d) if rcu => q.queue_rcu_work(now, id, cpu, d, out),
                        Some(d) => q.queue_delayed_work(now, id, cpu, d, out),
                    });
                }
                Instr::RcuQueue {
                    wq,
                    work,
                    key,
                    rcu_work,
                } => {
                    pc += 1;
                    self.rcu_queue(t, wq, work, key, rcu_work);
                }
                Instr::SynchronizeRcu => {
                    pc += 1;
                    self.synchronize_rcu(t, pc);
                    return Ok(());
                }
                Instr::ModDelayedWork {
                    wq,
                    work,
                    key,
                    delay,
                } => {
                    pc += 1;
                    let (id, cpu) = (self.work_id(t, work, key), self.wq_cpu(t, wq));
                    let d = self.draw(t, delay);
                    self.wq_call(wq, |q, now, out| q.mod_delayed_work(now, id, cpu, d, out));
                }
                Instr::CancelWorkSync { wq, work, key } => {
                    pc += 1;
                    let id = self.work_id(t, work, key);
                    if self.cancel_delayed_work_sync(t, pc, wq, id) {
                        return Ok(());
                    }
                }
                Instr::Count { counter } => {
                    pc += 1;
                    self.stats.counts[counter] += 1;
                }
                Instr::Line {
                    line,
                    write,
                    dynamic,
                } => {
                    pc += 1;
                    let line = if dynamic {
                        LineId(line.0 + self.tasks[t].self_key)
                    } else {
                        line
                    };
                    if self.data_line(t, line, write) {
                        self.tasks[t].pc = pc;
                        return Ok(());
                    }
                }
                Instr::MightResched => {
                    pc += 1;
                    if self.c.voluntary && self.resched_due(t) {
                        self.yield_cpu(t, pc);
                        return Ok(());
                    }
                }
                Instr::CondResched => {
                    // R123: `cond_resched()` schedules under NONE and
                    // VOLUNTARY alike; the compiler refuses it where
                    // preemption is off.
                    pc += 1;
                    if self.resched_due(t) {
                        self.yield_cpu(t, pc);
                        return Ok(());
                    }
                }
                Instr::SetKey { lo, span, next } => {
                    pc += 1;
                    let k = match next {
                        _ if span == 0 => 0,
                        Some(n) => self.stats.next_key(n, span),
                        None => sim::rng::below(&mut self.tasks.rngs[t], span),
                    };
                    self.tasks[t].self_key = lo + k;
                }
                Instr::FlushWorkqueue { wq } => {
                    if let Some((q, f)) = self.tasks[t].flushing.take() {
                        // Back from a flush that waited: the first
                        // flusher's wake-up-and-cascade phase (R110), and
                        // its passes over the pwqs (R118).
                        let passes = self.wq_call(q, |q, now, out| q.flush_resumed(now, f, out));
                        pc += 1;
                        if self.flush_prep(t, q, passes, pc) {
                            return Ok(());
                        }
                    } else {
                        // The pass over the pwqs comes first (R118); the
                        // flush decides when it is done, at this step again.
                        if !std::mem::take(&mut self.tasks[t].flush_prepped) {
                            let passes = self.wq.queues[wq].flush_start_passes();
                            if self.flush_prep(t, wq, passes, pc) {
                                self.tasks[t].flush_prepped = true;
                                return Ok(());
                            }
                        }
                        if self.flush_workqueue(t, pc, wq) {
                            return Ok(());
                        }
                        pc += 1;
                    }
                }
                Instr::Charge { memcg, pages, gfp } => {
                    if self.charge(t, pc, memcg, pages, gfp) {
                        return Ok(());
                    }
                    pc += 1;
                }
                Instr::Uncharge { memcg, pages } => {
                    pc += 1;
                    self.memcg.uncharge(t, memcg, pages);
                }
                Instr::Delay { dist, sleep, next } => {
                    let d = self.draw(t, dist);
                    if self.delay_drawn(t, d, sleep, next, Some(Drawn::Dist(dist))) {
                        return Ok(());
                    }
                    go_to!(next);
                }
                Instr::DelayExp { mean, sleep, next } => {
                    let d = sim::dist::sample_exp(mean, &mut self.tasks.rngs[t]);
                    if self.delay_drawn(t, d, sleep, next, Some(Drawn::Exp(mean))) {
                        return Ok(());
                    }
                    go_to!(next);
                }
                Instr::DelayConst { dur, sleep, next } => {
                    if self.delay(t, dur, sleep, next) {
                        return Ok(());
                    }
                    go_to!(next);
                }
                Instr::Acquire {
                    lock,
                    mode,
                    wait,
                    slot,
                    dynamic,
                    site,
                } => {
                    // might_sleep() in down_*/mutex_lock: a voluntary
                    // preemption point, even holding other locks (not in
                    // spin_lock, R75, which a sleeping hold cannot be in).
                    if self.c.voluntary
                        && !self.tasks[t].atomic_done
                        && self.resched_due(t)
                        && self.c.locks[lock].kind.acquire_may_sleep()
                    {
                        self.yield_cpu(t, pc);
                        return Ok(());
                    }
                    if let Some(site) = site {
                        if !self.tasks[t].atomic_done {
                            self.stats.counts[site] += 1;
                        }
                    }
                    let lock = self.lock_instance(t, lock, dynamic);
                    if !self.tasks[t].atomic_done {
                        self.tasks[t].since = self.clock.now;
                    }
                    if self.line_atomic(t, lock, mode, true) > Dur::ZERO {
                        self.tasks[t].pc = pc;
                        return Ok(());
                    }
                    pc += 1;
                    let r = self.lock_op(lock, |l, ctx, wakes| l.acquire(ctx, t, mode, wakes));
                    match r {
                        Acquire::Granted => self.acquired(t, lock, mode, wait, slot),
                        contended => {
                            self.locks.count_contention(lock, mode);
                            if contended == Acquire::Queued && self.obs.trace.is_some() {
                                self.trace_queue(t, lock, true);
                            }
                            let task = &mut self.tasks[t];
                            task.pc = pc;
                            task.resume = Resume::Acquired {
                                lock,
                                mode,
                                wait,
                                slot,
                            };
                            match contended {
                                Acquire::Spin { until } => self.start_spin(t, until),
                                Acquire::Sleep { until } => self.lock_sleep(t, lock, until),
                                Acquire::GracePeriod => self.lock_grace_period(t, lock),
                                Acquire::Queued => {
                                    self.tasks[t].state = State::Blocked;
                                    self.leave_cpu(t);
                                }
                                Acquire::Granted => unreachable!("handled above"),
                            }
                            return Ok(());
                        }
                    }
                }
                Instr::Release {
                    lock,
                    mode,
                    hold,
                    slot,
                    dynamic,
                } => {
                    let lock = self.lock_instance(t, lock, dynamic);
                    if self.line_atomic(t, lock, mode, false) > Dur::ZERO {
                        self.tasks[t].pc = pc;
                        return Ok(());
                    }
                    pc += 1;
                    self.end_hold(t, lock, mode, hold, slot);
                    self.lock_op(lock, |l, ctx, wakes| l.release(ctx, t, mode, wakes));
                    // preempt_enable() in spin_unlock: under PREEMPT_FULL a
                    // preemption point once no hold disables it (R75).
                    if self.c.preempt_full
                        && self.c.locks[lock].kind.disables_preemption(mode)
                        && self.resched_due(t)
                        && !self.preempt_off(t)
                    {
                        self.yield_cpu(t, pc);
                        return Ok(());
                    }
                }
                Instr::SeqRetry {
                    lock,
                    hold,
                    slot,
                    dynamic,
                    begin,
                } => {
                    let lock = self.lock_instance(t, lock, dynamic);
                    match self.seq_retry(t, lock, hold, slot) {
                        None => {
                            self.tasks[t].pc = pc;
                            return Ok(());
                        }
                        Some(true) => {
                            pc = begin;
                            back_edge!();
                        }
                        Some(false) => pc += 1,
                    }
                }
                Instr::Downgrade {
                    lock,
                    slot,
                    hold,
                    dynamic,
                } => {
                    let lock = self.lock_instance(t, lock, dynamic);
                    pc += 1;
                    let start = self.tasks.hold_start(t, slot);
                    self.stats
                        .record(hold, self.clock.now, self.clock.now.since(start));
                    if self.obs.trace.is_some() {
                        self.trace_lock(t, "hold", lock, Mode::Write, start);
                    }
                    (self.tasks).hold(t, slot, lock, Mode::Read, self.clock.now);
                    self.lock_op(lock, |l, ctx, wakes| l.downgrade(ctx, t, wakes));
                }
                Instr::SpanBegin { slot } => {
                    self.tasks.span_begin(t, slot, self.clock.now);
                    pc += 1;
                }
                Instr::SpanEnd { stat, slot } => {
                    pc += 1;
                    let start = self.tasks.span_start(t, slot);
                    self.stats
                        .record(stat, self.clock.now, self.clock.now.since(start));
                    if let Some(tr) = self.obs.trace.as_mut() {
                        let name = &self.c.stats[stat].subject;
                        if tr.keeps_span(name) {
                            tr.slice(t, "span", name.clone(), start, self.clock.now);
                        }
                    }
                }
                Instr::RepeatBegin { count, end, depth } => {
                    if count == 0 {
                        pc = end;
                    } else {
                        self.tasks.repeat_begin(t, depth, count);
                        pc += 1;
                    }
                }
                Instr::RepeatEnd { begin, depth } => {
                    pc = if self.tasks.repeat_again(t, depth) {
                        begin + 1
                    } else {
                        pc + 1
                    };
                    back_edge!();
                }
                Instr::WithProb { p, end } => {
                    let u = sim::rng::unit(&mut self.tasks.rngs[t]);
                    pc = if u < p { pc + 1 } else { end };
                }
                Instr::IfWorkBusy { wq, work, key, end } => {
                    let id = self.work_id(t, work, key);
                    pc = if self.wq.queues[wq].work_busy(id) {
                        pc + 1
                    } else {
                        end
                    };
                }
                Instr::IfPressure {
                    memcg,
                    window,
                    centi,
                    end,
                } => {
                    let now = self.clock.now.0;
                    let shown = self.memcg.pressure[memcg].some_centi(now, window);
                    pc = if shown >= centi { pc + 1 } else { end };
                }
                Instr::Kill { group } => {
                    pc += 1;
                    self.kill_group(group);
                }
                Instr::Jump { to } => {
                    pc = to;
                    back_edge!();
                }
                Instr::Exit => {
                    // R123: process_one_work's cond_resched() comes after
                    // the item's function and before the item counts as
                    // done (pwq_dec_nr_in_flight): a kworker whose CPU is
                    // wanted yields here, and its flushers wait for it.
                    if self.tasks[t].work.is_some() && self.resched_due(t) {
                        self.yield_cpu(t, pc);
                        return Ok(());
                    }
                    let task = &mut self.tasks[t];
                    task.pc = pc;
                    if let (Some(_), Some(id)) = (task.worker_of, task.work.take()) {
                        let q = task.item_wq;
                        self.work_done(t, q, id);
                        return Ok(());
                    }
                    task.state = State::Exited;
                    self.leave_cpu(t);
                    return Ok(());
                }
            }
        }
    }
}
