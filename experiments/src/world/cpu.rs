//! The world and its CPUs: taking, giving and leaving a CPU, wakeups,
//! wakeup preemption, need_resched for spinners and time-slice ends.

use super::*;

/// The CPUs: the scheduler's [`CpuPool`] (run queues, fair order, RT
/// first) and what the world keeps beside it to decide what the pool
/// does not: who runs where (preemption's victims, switch costs), the
/// time slice, whether anything can ever ask a running task to
/// reschedule, how many tasks spin on their CPU (need_resched stops
/// them), and what the results count of it.
#[derive(Clone)]
pub(super) struct Cpus {
    pub(super) pool: CpuPool,
    /// The task on each CPU (`NONE` for an idle one), with limited CPUs:
    /// where preemption looks for a victim.
    pub(super) running_on: TiVec<CpuId, TaskId>,
    /// The task that ran last on each CPU (`NONE` before the first): a
    /// task given a CPU that another task ran on last is switched in
    /// (`scenario.switch_cost`).
    pub(super) last_on: TiVec<CpuId, TaskId>,
    /// How long a fair task runs while others wait before the tick ends
    /// its slice: `scenario.timeslice`, or one tick under the orders that
    /// always have a slice (EEVDF's base slice, CFS's granularity).
    pub(super) slice: Option<Dur>,
    /// Whether a task on a CPU can ever be asked to reschedule: time
    /// slices, `preempt` placement, RT tasks or per-CPU queues (EEVDF's
    /// wakeup preemption). Without, `resched_due` costs one test.
    pub(super) may_resched: bool,
    /// Tasks spinning on some lock right now (each keeps its CPU).
    pub(super) spinning: u32,
    /// Wakeup preemptions.
    pub(super) preemptions: u64,
    /// Context switches that cost CPU time (`scenario.switch_cost`).
    pub(super) switches: u64,
    /// Tasks that yielded their CPU at a preemption point.
    pub(super) slice_yields: u64,
    /// Spins ended by need_resched: a task came to wait for the spinner's
    /// CPU.
    pub(super) spin_resched_stops: u64,
    /// When the idle balance's event is armed (`SimTime::MAX`: not), and
    /// the tasks it moved (R121).
    pub(super) balance_at: SimTime,
    pub(super) idle_balance_pulls: u64,
    /// The machine's wake path and steal (`wakepath`); `None` on the ideal
    /// machine.
    pub(super) wake: Option<Box<WakePath>>,
}

/// Whether `c` runs the kernel's scheduler (per-CPU queues and a fair
/// class with a slice, limited CPUs), whose wakeups search for an idle
/// CPU as SIS_UTIL limits it and whose idle CPUs balance (R121).
pub(super) fn sis_util_on(c: &Compiled) -> bool {
    c.cpus.is_some()
        && c.percpu_runqueues
        && (c.timeslice.is_some()
            || matches!(
                c.wake_placement,
                WakePlacement::Eevdf | WakePlacement::Eevdf66 | WakePlacement::Cfs
            ))
}

impl Cpus {
    /// The CPUs of `c`, for `tasks` (their class and weight), in
    /// replication `run` (seed, replication) of it.
    pub(super) fn new(c: &Compiled, tasks: &Tasks, run: (u64, u64)) -> Cpus {
        let mut pool = match c.cpus {
            Some(n) => CpuPool::with_cpus(n),
            None => CpuPool::unlimited(),
        };
        pool.set_wake_first(c.wake_placement.woken_first());
        if c.percpu_runqueues {
            pool.set_percpu();
        }
        let tick = models::timer::shortest_tick_period(c.hz);
        let timeslice = c.timeslice;
        let slice = match c.wake_placement {
            WakePlacement::Eevdf | WakePlacement::Eevdf66 | WakePlacement::Cfs => {
                Some(timeslice.unwrap_or(tick))
            }
            _ => timeslice,
        };
        if sis_util_on(c) {
            // The kernel's scheduler (per-CPU queues, a fair class with a
            // slice): SIS_UTIL limits a wakeup's idle search (R121); an
            // LLC is a socket of the machine's topology.
            let topo = c.machine.topology;
            pool.set_sis_util(tick, |cpu| topo.place(cpu).0);
        }
        match c.wake_placement {
            WakePlacement::Eevdf | WakePlacement::Eevdf66 => pool.set_eevdf(
                timeslice.unwrap_or(tick),
                tick,
                c.wake_placement == WakePlacement::Eevdf,
            ),
            WakePlacement::Cfs => pool.set_cfs(timeslice.unwrap_or(tick)),
            _ => {}
        }
        for (i, task) in tasks.iter() {
            if task.rt {
                pool.set_rt(i);
            }
            // A program task has its group's nice level; kworkers are
            // nice 0 (their group index only names a work program).
            let weight = match task.worker_of {
                None => c.groups[task.group].weight,
                Some(_) => NICE_0_WEIGHT,
            };
            if weight != NICE_0_WEIGHT {
                // The compiler accepts a nice level only for an order
                // that weighs tasks.
                let weighed = pool.set_weight(i, weight);
                debug_assert!(weighed);
            }
        }
        let running_on = ti_vec![NONE; c.cpus.unwrap_or(0) as usize];
        Cpus {
            pool,
            last_on: running_on.clone(),
            running_on,
            slice,
            may_resched: slice.is_some()
                || c.wake_placement.preempts()
                || c.percpu_runqueues
                || tasks.iter().any(|(_, t)| t.rt),
            spinning: 0,
            preemptions: 0,
            switches: 0,
            slice_yields: 0,
            spin_resched_stops: 0,
            balance_at: SimTime::MAX,
            idle_balance_pulls: 0,
            wake: WakePath::new(c, run),
        }
    }

    /// `t` runs on `cpu` now: whether another task ran there last (a
    /// context switch, `scenario.switch_cost`).
    #[inline]
    fn switched_in(&mut self, cpu: CpuId, t: TaskId) -> bool {
        let last = &mut self.last_on[cpu];
        let switched = *last != t;
        *last = t;
        switched
    }

    /// The CPU counters for the results (limited CPUs only).
    pub(super) fn counters(&self, c: &Compiled, out: &mut Vec<Counter>) {
        if self.pool.is_unlimited() {
            return;
        }
        for (name, v) in self.pool.counters() {
            out.push(Counter {
                subject: format!("cpu/{name}"),
                value: v,
            });
        }
        if c.preempt_full || c.wake_placement.preempts() {
            out.push(Counter {
                subject: "cpu/preemptions".into(),
                value: self.preemptions,
            });
        }
        if self.slice.is_some() || c.wake_placement.preempts() {
            out.push(Counter {
                subject: "cpu/resched_yields".into(),
                value: self.slice_yields,
            });
        }
        if c.switch_cost > Dur::ZERO {
            out.push(Counter {
                subject: "cpu/context_switches".into(),
                value: self.switches,
            });
        }
        out.push(Counter {
            subject: "cpu/spin_resched_stops".into(),
            value: self.spin_resched_stops,
        });
        if sis_util_on(c) {
            out.push(Counter {
                subject: "cpu/idle_balance_pulls".into(),
                value: self.idle_balance_pulls,
            });
        }
        if let Some(w) = &self.wake {
            w.counters(c, out);
        }
    }
}

impl<'c> World<'c> {
    /// `t` becomes runnable now: it runs at once (as an event at this
    /// instant) if a CPU is free, else it waits in the run queue.
    #[inline]
    pub(super) fn make_runnable(&mut self, t: TaskId) {
        if let Some(cpu) = self.take_cpu(t) {
            self.give_cpu(t, cpu);
            self.clock.schedule(t, self.clock.now, Ev::Run);
        }
    }

    /// `t` is runnable: a free CPU, or a preempted task's CPU under
    /// PREEMPT_FULL, or the run queue (where need_resched may make a
    /// spinner yield its CPU).
    #[inline]
    pub(super) fn take_cpu(&mut self, t: TaskId) -> Option<CpuId> {
        self.tasks[t].state = State::Runnable;
        if self.cpus.pool.is_unlimited() {
            return Some(CpuId::ANY);
        }
        self.take_limited_cpu(t)
    }

    /// [`World::take_cpu`] with a limited number of CPUs.
    #[inline(never)]
    pub(super) fn take_limited_cpu(&mut self, t: TaskId) -> Option<CpuId> {
        match self.tasks[t].bound {
            Some(cpu) => self.cpus.pool.wake_on(self.clock.now, t, cpu),
            None => {
                // The waker, if a task acts: where wake_affine may place `t` (R127).
                let cur = self.clock.current;
                let waker = (cur != NONE).then(|| (cur, self.tasks[cur].cpu));
                self.cpus.pool.wake(self.clock.now, t, waker)
            }
        }
        // Whether this wakeup asks the CPU it is queued on to reschedule
        // (an IPI its waker sends, R122): counted by the pool.
        let resched_before = self.cpus.pool.wakeup_preemptions();
        if let Some(cpu) = self.tasks[t].bound {
            let got = self.cpus.pool.make_runnable_on(self.clock.now, t, cpu);
            if got.is_none() {
                // A bound kworker waits for its own CPU.
                self.charge_queued_waker(t, cpu, resched_before);
                self.waits_for_cpu(t, Some(cpu));
            }
            return got;
        }
        if let Some(cpu) = self.cpus.pool.try_take_for(self.clock.now, t) {
            return Some(cpu);
        }
        if self.c.preempt_full || self.c.wake_placement.preempts() {
            if let Some(cpu) = self.preempt_for(t) {
                return Some(cpu);
            }
        }
        self.cpus.pool.enqueue_woken(self.clock.now, t);
        let on = self.cpus.pool.queued_on(t);
        if let Some(cpu) = on {
            self.charge_queued_waker(t, cpu, resched_before);
        }
        self.waits_for_cpu(t, on);
        self.arm_idle_balance();
        None
    }

    /// A task waits in a CPU's queue: if a CPU is idle, the next busy
    /// tick at or after the idle CPU's balance is due kicks it to pull
    /// (R121: `nohz_balancer_kick` at a tick of a CPU running two or
    /// more, `nohz_idle_balance`).
    pub(super) fn arm_idle_balance(&mut self) {
        let Some(due) = self.cpus.pool.idle_balance_due() else {
            return;
        };
        let after = due.max(self.clock.now + Dur(1));
        let at = models::timer::tick_at_or_after(after, self.c.hz);
        if at < self.cpus.balance_at {
            self.cpus.balance_at = at;
            let slot = self.clock.slots.balance();
            self.clock.queue.set(slot, at, Ev::IdleBalance);
        }
    }

    /// The idle balance's event: idle CPUs whose balance is due pull a
    /// waiting task each (R121).
    pub(super) fn idle_balance(&mut self) {
        self.cpus.balance_at = SimTime::MAX;
        for (t, cpu, _waited) in self.cpus.pool.idle_balance(self.clock.now) {
            self.cpus.idle_balance_pulls += 1;
            self.give_cpu(t, cpu);
            self.clock.schedule(t, self.clock.now, Ev::Run);
        }
        self.arm_idle_balance();
    }

    /// Woken `t` now waits for CPU `on` (`None`: any CPU, one shared
    /// queue or RT): traced as runnable, and need_resched there stops the
    /// spinner it waits for (R8/R9, R28).
    fn waits_for_cpu(&mut self, t: TaskId, on: Option<CpuId>) {
        self.tasks[t].queued_at = Some(self.clock.now);
        self.blame_switch(t, Doing::Runnable);
        if self.cpus.spinning > 0 {
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
        let now = self.clock.now;
        let victim = (self.cpus.running_on.iter())
            .filter(|&&v| v != NONE)
            .map(|&v| (v, &self.tasks[v]))
            .filter(|(_, v)| v.state == State::Running && v.in_burst && v.burst_end > now)
            .filter(|(_, v)| wakee_rt || !v.rt)
            .filter(|(i, _)| self.c.preempt_full || self.at_user_boundary(*i))
            // Not a holder with preemption disabled (R75).
            .filter(|(i, _)| !self.preempt_off(*i))
            .min_by_key(|(i, v)| (v.rt, v.burst_start, *i))
            .map(|(i, _)| i)?;
        let lost = self.lost_in_rest(victim);
        let v = &mut self.tasks[victim];
        v.remaining = v.burst_end.since(now) - lost;
        v.in_burst = false;
        v.state = State::Runnable;
        let cpu = v.cpu;
        self.cpus.running_on[cpu] = NONE;
        self.clock.queue.clear(victim.index());
        self.cpus.preemptions += 1;
        self.blame_switch(victim, Doing::Runnable);
        if self.cpus.spinning > 0 {
            self.holder_off_cpu(victim);
        }
        self.cpus.pool.stopped(now, victim, true);
        self.requeue(victim);
        Some(cpu)
    }

    /// `t` was woken (sleep over, lock granted or retry): after the wake
    /// latency, it becomes runnable. Returns true if it has a CPU now and
    /// the caller (`inline`) may run it at once.
    #[inline(always)]
    pub(super) fn wakeup(&mut self, t: TaskId, inline: bool) -> bool {
        if self.hung.on {
            self.hung.woken(t, self.clock.now);
        }
        // A task bound to the CPU its waker runs on is queued there by the
        // waker itself (no IPI, no idle exit): the latency is drawn, to
        // keep the stream in step, but not applied.
        if let Some(l) = self.c.wake_latency.as_ref() {
            let waker_cpu =
                (self.clock.current != NONE).then(|| self.tasks[self.clock.current].cpu);
            let local = waker_cpu.is_some() && self.tasks[t].bound == waker_cpu;
            let s = self.tasks[t]
                .sched
                .as_mut()
                .expect("a wake latency gives every task its stream");
            let d = l.sample(s);
            if d > Dur::ZERO && !local {
                if self.cpus.wake.is_some() {
                    // Placed when the latency is over: from the CPU the
                    // wakeup came from now.
                    self.tasks[t].waker_cpu = self.waker_cpu(t);
                }
                self.tasks[t].state = State::Runnable;
                self.blame_switch(t, Doing::Waking);
                self.clock.schedule(t, self.clock.now + d, Ev::Ready);
                return false;
            }
        }
        if self.cpus.wake.is_some() {
            let from = self.waker_cpu(t);
            return self.wake_onto_cpu(t, from, inline);
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
        for lock in (0..self.locks.policies.len()).map(LockId::from) {
            if self.locks.policies[lock].has_spinners() {
                let stopped = self.lock_op(lock, |l, ctx, wakes| l.resched(ctx, None, wakes));
                if stopped {
                    self.cpus.spin_resched_stops += 1;
                    return;
                }
            }
        }
    }

    /// A task now waits for `cpu` (per-CPU run queues, or a bound kworker):
    /// need_resched there makes the task spinning on it, if any, give up
    /// (R8/R9, R28). Spinners on other CPUs go on.
    pub(super) fn resched_cpu(&mut self, cpu: CpuId) {
        let Some(&v) = self.cpus.running_on.get(cpu) else {
            return;
        };
        if v == NONE || self.tasks[v].state != State::Spinning {
            return;
        }
        if self.kernel_need_resched() && !self.resched_due(v) {
            // need_resched comes with the tick that ends its slice.
            self.arm_spinner(v);
            return;
        }
        let Resume::Acquired { lock, .. } = self.tasks[v].resume else {
            unreachable!("a spinner has a pending acquisition")
        };
        if self.lock_op(lock, |l, ctx, wakes| l.resched(ctx, Some(v), wakes)) {
            self.cpus.spin_resched_stops += 1;
        }
    }

    /// `t` runs on `cpu` from now; its time slice starts.
    #[inline(always)]
    pub(super) fn give_cpu(&mut self, t: TaskId, cpu: CpuId) {
        let task = &mut self.tasks[t];
        task.cpu = cpu;
        task.on_cpu_since = self.clock.now;
        // Unlimited CPUs with nothing observed: no more to do.
        if cpu != CpuId::ANY || self.obs.recorder.is_some() || self.obs.trace.is_some() {
            self.give_cpu_rest(t, cpu);
        }
    }

    /// The rest of [`World::give_cpu`]: the pool, blame and the trace.
    #[inline(never)]
    fn give_cpu_rest(&mut self, t: TaskId, cpu: CpuId) {
        if let Some(r) = self.cpus.running_on.get_mut(cpu) {
            *r = t;
            if let Some(w) = self.cpus.wake.as_mut() {
                let since = std::mem::replace(&mut w.idle_since[cpu], SimTime::MAX);
                if since != SimTime::MAX {
                    // An idle spell that ends without a wakeup through
                    // the wake path still ends a guest's halt (R119).
                    w.halt_ends(&self.c.machine, cpu, self.clock.now.since(since));
                }
            }
            self.cpus.pool.started(self.clock.now, t, cpu);
            // context_switch: a task that another one follows on this CPU
            // first spends the switch's CPU time, as the rest of a burst
            // (an idle spell in between does not count: the same task
            // coming back finds its context in place).
            if self.cpus.switched_in(cpu, t) && self.c.switch_cost > Dur::ZERO {
                self.cpus.switches += 1;
                self.tasks[t].remaining += self.c.switch_cost;
            }
        }
        if self.obs.recorder.is_some() {
            self.blame_on_cpu(t);
        }
        if let Some(tr) = self.obs.trace.as_mut() {
            // Runnable since it was queued, if it waited for this CPU.
            let task = &mut self.tasks[t];
            if let Some(since) = task.queued_at.take() {
                if since < self.clock.now {
                    let on = (cpu != CpuId::ANY).then_some(cpu);
                    tr.slice_on_cpu(t, "runnable".into(), since, self.clock.now, on);
                }
            }
        }
    }

    /// Whether a step boundary of `t` stands for a return to user space:
    /// a task (not a kworker) that holds no lock and is not inside a lock
    /// step (`Task::in_lock_step`).
    pub(super) fn at_user_boundary(&self, t: TaskId) -> bool {
        let task = &self.tasks[t];
        task.worker_of.is_none() && !task.in_lock_step() && !self.tasks.holds_lock(self.c, t)
    }

    /// Whether a reschedule is due for `t`, on a CPU: others wait for a
    /// CPU (its CPU's, with per-CPU queues) and `t` has used up its time
    /// slice (seen at a tick), or an RT task waits, or a woken task asked
    /// for the CPU (`preempt` placement; EEVDF wakeup preemption with
    /// per-CPU queues). The cheap tests go first: this runs at every
    /// event of a task.
    #[inline(always)]
    pub(super) fn resched_due(&self, t: TaskId) -> bool {
        self.cpus.may_resched && self.resched_due_slow(t)
    }

    /// [`World::resched_due`] when a reschedule can happen at all.
    #[inline(never)]
    pub(super) fn resched_due_slow(&self, t: TaskId) -> bool {
        self.resched_rule().due(&self.tasks[t], &self.cpus.pool)
    }

    /// Whether a spinner's need_resched follows the kernel's rule
    /// ([`ReschedRule`]): per-CPU run queues with a time slice, the
    /// scheduler that has the rule's sources. Without them (one shared
    /// queue, or no slice) any task waiting for the spinner's CPU sets it.
    pub(super) fn kernel_need_resched(&self) -> bool {
        ReschedRule::kernel(self.c, &self.cpus)
    }

    /// What decides need_resched, as of now ([`ReschedRule::due`]).
    pub(super) fn resched_rule(&self) -> ReschedRule {
        ReschedRule::at(self.c, &self.cpus, self.clock.now)
    }

    /// `t` gives up its CPU to the run queue's tail and resumes at `pc`.
    pub(super) fn yield_cpu(&mut self, t: TaskId, pc: Pc) {
        self.cpus.slice_yields += 1;
        let task = &mut self.tasks[t];
        task.pc = pc;
        task.state = State::Runnable;
        // Back in the queue before its CPU is handed on: the pick sees it
        // (EEVDF may choose it again), and a CPU nobody else wants is not
        // left free while it waits.
        self.cpus.pool.stopped(self.clock.now, t, true);
        self.requeue(t);
        self.leave_cpu(t);
    }

    /// `t`, preempted, waits at the tail: of its CPU's queue if bound.
    pub(super) fn requeue(&mut self, t: TaskId) {
        self.tasks[t].queued_at = Some(self.clock.now);
        match self.tasks[t].bound {
            Some(cpu) => self.cpus.pool.requeue_on(self.clock.now, t, cpu),
            None => {
                self.cpus.pool.requeue(self.clock.now, t);
                self.arm_idle_balance();
            }
        }
    }

    /// `t` leaves its CPU; the next runnable task (if any) gets it.
    #[inline(always)]
    pub(super) fn leave_cpu(&mut self, t: TaskId) {
        // An uninterruptible sleep begins (R100's D state).
        if self.hung.on && self.tasks[t].state == State::Blocked {
            self.hung.asleep(t, self.clock.now);
        }
        // Unlimited CPUs, no spinners, no pool, nothing observed: nothing
        // to hand on or account.
        if self.obs.recorder.is_some()
            || self.cpus.spinning > 0
            || !self.cpus.pool.is_unlimited()
            || self.tasks[t].pool != PoolState::No
        {
            self.leave_cpu_rest(t);
        }
    }

    /// [`World::leave_cpu`] for a caller that knows `t`'s state and pool
    /// state (a sleep that just set them, its event scheduled since): the
    /// task is not looked up again, at every sleep.
    #[inline(always)]
    pub(super) fn leave_cpu_as(&mut self, t: TaskId, state: State, pool: PoolState) {
        // An uninterruptible sleep begins (R100's D state).
        if self.hung.on && state == State::Blocked {
            self.hung.asleep(t, self.clock.now);
        }
        // Unlimited CPUs, no spinners, no pool, nothing observed: nothing
        // to hand on or account.
        if self.obs.recorder.is_some()
            || self.cpus.spinning > 0
            || !self.cpus.pool.is_unlimited()
            || pool != PoolState::No
        {
            self.leave_cpu_rest(t);
        }
    }

    /// [`World::leave_cpu`] when there is something to do.
    #[inline(never)]
    fn leave_cpu_rest(&mut self, t: TaskId) {
        if self.obs.recorder.is_some() {
            self.blame_off_cpu(t);
        }
        let cpu = self.tasks[t].cpu;
        if self.cpus.spinning > 0 {
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
        if !self.cpus.pool.is_unlimited() {
            if self.tasks[t].cpu != cpu {
                // A task that yields is back in the run queue before it
                // leaves; a spinner that gave up above, its lock's owner
                // going off CPU, handed it the spinner's CPU: it runs
                // there (started), and only the CPU it left is handed on.
                self.hand_on_cpu(cpu);
                return;
            }
            let runnable = self.tasks[t].state == State::Runnable;
            self.cpus.pool.stopped(self.clock.now, t, runnable);
            self.release_cpu(t);
        }
    }

    /// `t`'s CPU goes to the next task waiting for it, if any.
    #[inline(never)]
    pub(super) fn release_cpu(&mut self, t: TaskId) {
        self.hand_on_cpu(self.tasks[t].cpu);
    }

    /// `cpu`, left by its task, goes to the next task waiting for it, if
    /// any.
    fn hand_on_cpu(&mut self, cpu: CpuId) {
        self.cpus.running_on[cpu] = NONE;
        if let Some((next, _waited)) = self.cpus.pool.release(self.clock.now, cpu) {
            self.give_cpu(next, cpu);
            self.clock.schedule(next, self.clock.now, Ev::Run);
        } else if let Some(w) = self.cpus.wake.as_mut() {
            // Idle from now (R65 measures its idle time from here).
            w.idle_since[cpu] = self.clock.now;
        }
    }
}

/// need_resched (TIF_NEED_RESCHED) of a task on a CPU: set by the tick
/// that finds its time slice used up, by a wakeup that the fair order lets
/// preempt it (EEVDF's `check_preempt_wakeup_fair`, which RUN_TO_PARITY
/// holds off while the running task's request lasts, and the enqueue's
/// `update_curr` once it is used up, R124), or by an RT task
/// waiting; and only while another task waits for that CPU. A task merely
/// queued behind it does not set it: spinners (R8, R27-R28) stop on it,
/// not on a busy run queue.
#[derive(Clone, Copy, Debug)]
pub(super) struct ReschedRule {
    now: SimTime,
    hz: u32,
    slice: Option<Dur>,
    preempts: bool,
    may: bool,
}

impl ReschedRule {
    /// [`World::kernel_need_resched`] of scenario `c` on `cpus`.
    #[inline]
    pub(super) fn kernel(c: &Compiled, cpus: &Cpus) -> bool {
        c.percpu_runqueues && cpus.slice.is_some()
    }

    /// [`World::resched_rule`] of scenario `c` on `cpus` at `now`.
    #[inline]
    pub(super) fn at(c: &Compiled, cpus: &Cpus, now: SimTime) -> ReschedRule {
        ReschedRule {
            now,
            hz: c.hz,
            slice: cpus.slice,
            preempts: c.wake_placement.preempts(),
            may: cpus.may_resched,
        }
    }

    pub(super) fn due(&self, task: &Task, pool: &CpuPool) -> bool {
        // The RT class runs first: a waiting RT task reschedules a fair
        // task at once, and an RT task (SCHED_FIFO) has no slice.
        if !self.may || task.rt {
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
            self.now >= models::timer::tick_at_or_after(end, self.hz)
        };
        let asked = pool.rt_waiting() > 0
            || pool.resched_set(task.cpu)
            || (self.preempts && pool.woken_waiting() > 0)
            || self.slice.is_some_and(over);
        asked && pool.waiting_for(task.cpu) > 0
    }

    /// When the tick that ends `task`'s slice comes (`None`: no slice).
    pub(super) fn slice_tick(&self, task: &Task) -> Option<SimTime> {
        let end = task.on_cpu_since + self.slice?;
        Some(models::timer::tick_at_or_after(end, self.hz))
    }
}
