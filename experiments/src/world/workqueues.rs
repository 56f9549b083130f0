//! The world and its workqueues: items, kworkers, the per-CPU worker
//! pools of per-CPU workqueues (R37) and the flushes that wait for them.

use super::*;
use models::workqueue::{Action, Workqueue};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The workqueues: each workqueue's state machine, the kworkers idle per
/// workqueue (or, with limited CPUs, the per-CPU worker pools that run
/// per-CPU workqueues' items), the items started while every kworker was
/// busy, the workqueue of each item's armed timer, the tasks waiting in
/// a flush or for a running item, and the buffer a workqueue appends
/// its actions to (kept so that no call allocates).
#[derive(Clone)]
pub(super) struct Workqueues {
    pub(super) queues: TiVec<WqId, Workqueue>,
    /// Idle kworkers of each workqueue not run by the pools.
    idle: TiVec<WqId, IdleKworkers>,
    /// The per-CPU worker pools that run per-CPU workqueues' items, with
    /// limited CPUs (R37).
    pools: Option<WorkerPools>,
    /// Items a workqueue started while all its kworkers were busy (not
    /// for per-CPU workqueues when pools run them: their worklists are).
    backlog: TiVec<WqId, VecDeque<(WorkId, CpuId)>>,
    /// The workqueue of each item's armed timer.
    timer_wq: TiVec<WorkId, WqId>,
    /// Tasks waiting in `flush_workqueue`, by (workqueue, flush).
    flushers: BTreeMap<(WqId, FlushId), Vec<TaskId>>,
    /// Tasks waiting in `cancel_delayed_work_sync` for a running item.
    work_waiters: BTreeMap<(WqId, WorkId), Vec<TaskId>>,
    actions: Vec<Action>,
}

/// Whether workqueue `wq`'s items run on the per-CPU worker pools (R37):
/// a per-CPU workqueue, with a limited number of CPUs.
pub(super) fn runs_on_pools(c: &Compiled, wq: &crate::program::WorkqueueSpec) -> bool {
    c.cpus.is_some() && matches!(wq.kind, models::workqueue::WqKind::PerCpu { .. })
}

impl Workqueues {
    /// The workqueues of `c`, whose kworkers are tasks from
    /// `first_kworker` on, workqueue by workqueue.
    pub(super) fn new(c: &Compiled, first_kworker: TaskId) -> Workqueues {
        let mut idle = TiVec::new();
        // R37: the kworkers of every pooled workqueue form the per-CPU
        // pools; the others keep to their workqueue.
        let pooled = |wq| runs_on_pools(c, wq);
        let nkworkers = c.workqueues.iter().map(|w| w.workers).sum::<u32>();
        let mut pool_idle = IdleKworkers::empty(first_kworker, nkworkers);
        let mut first = first_kworker;
        for wq in &c.workqueues {
            if pooled(wq) {
                for i in 0..wq.workers {
                    pool_idle.push(TaskId(first.0 + i), None);
                }
                idle.push(IdleKworkers::empty(first, wq.workers));
            } else {
                idle.push(IdleKworkers::new(first, wq.workers));
            }
            first = TaskId(first.0 + wq.workers);
        }
        let pools = (c.workqueues.iter())
            .any(pooled)
            .then(|| WorkerPools::new(c.cpus.unwrap_or(0) as usize, pool_idle));
        Workqueues {
            queues: (c.workqueues.iter())
                .map(|w| {
                    Workqueue::new(w.name.clone(), w.kind, w.max_active).with_timer_wheel(c.hz)
                })
                .collect(),
            idle,
            pools,
            backlog: ti_vec![VecDeque::new(); c.workqueues.len()],
            timer_wq: ti_vec![WqId(0); work_items(c)],
            flushers: BTreeMap::new(),
            work_waiters: BTreeMap::new(),
            actions: Vec::new(),
        }
    }

    /// The workqueue and worker-pool counters for the results.
    pub(super) fn counters(&self, c: &Compiled, out: &mut Vec<Counter>) {
        for (q, wq) in self.queues.iter_enumerated() {
            for (k, v) in wq.counters() {
                out.push(Counter {
                    subject: format!("wq/{}/{k}", c.workqueues[q].name),
                    value: v,
                });
            }
        }
        if let Some(p) = &self.pools {
            for (k, v) in [
                ("kicks", p.kicks),
                ("keep_working", p.keep_working),
                ("idle_wakeups", p.idle_wakeups),
            ] {
                out.push(Counter {
                    subject: format!("worker_pools/{k}"),
                    value: v,
                });
            }
        }
    }
}

impl<'c> World<'c> {
    /// The work type that item `id` belongs to.
    pub(super) fn work_type(&self, id: WorkId) -> WorkTypeId {
        (self.c.works)
            .position(|s| s.instance(id).is_some())
            .expect("item ids come from work types")
    }

    /// The work type that item `id` belongs to.
    pub(super) fn work_spec(&self, id: WorkId) -> &'c crate::program::WorkSpec {
        &self.c.works[self.work_type(id)]
    }

    /// The item id of work type `work` and key `key` for task `t`.
    pub(super) fn work_id(
        &mut self,
        t: TaskId,
        work: WorkTypeId,
        key: crate::program::WorkKey,
    ) -> WorkId {
        use crate::program::WorkKey;
        let spec = &self.c.works[work];
        let task = &mut self.tasks[t];
        let k = match key {
            WorkKey::Index(i) => i,
            WorkKey::SelfIndex => task.self_key,
            WorkKey::Seq => {
                let stride = self.c.groups[task.group].count.max(1);
                let k = (u64::from(task.seq) * u64::from(stride) + u64::from(task.index))
                    % u64::from(spec.instances);
                task.seq = task.seq.wrapping_add(1);
                k as u32
            }
        };
        spec.item(k.min(spec.instances - 1))
    }

    /// The CPU a per-CPU workqueue uses for `t`'s queue_work: its own
    /// (R33); CPU 0 when CPUs are unlimited.
    pub(super) fn wq_cpu(&self, t: TaskId, wq: WqId) -> CpuId {
        match self.c.workqueues[wq].kind {
            models::workqueue::WqKind::PerCpu { cpus } => {
                let c = self.tasks[t].cpu;
                // A task's CPU is below the pool's count but for a pool
                // smaller than the machine: no division in the usual case.
                CpuId(if c == CpuId::ANY {
                    0
                } else if c.0 < cpus {
                    c.0
                } else {
                    c.0 % cpus.max(1)
                })
            }
            _ => CpuId::ANY,
        }
    }

    /// `flush_workqueue` (R36) by `t`, at its flush step `pc`: it waits
    /// for the items queued on `wq` so far, if any is not done. Returns
    /// whether `t` now waits. Out of the interpreter's way, as rare.
    #[inline(never)]
    pub(super) fn flush_workqueue(&mut self, t: TaskId, pc: Pc, wq: WqId) -> bool {
        match self.wq.queues[wq].flush_workqueue(self.clock.now) {
            models::workqueue::FlushOutcome::Done => false,
            models::workqueue::FlushOutcome::Wait(f) => {
                self.wq.flushers.entry((wq, f)).or_default().push(t);
                // It resumes at this step, to cascade (R110).
                self.tasks[t].flushing = Some((wq, f));
                self.block_waiting(t, pc, Doing::Flush { wq });
                true
            }
        }
    }

    /// `passes` of `flush_workqueue_prep_pwqs` over `wq` by `t` (R118):
    /// counted, and paid on `t`'s CPU as a `cpu` step that goes on at
    /// `next`. Returns whether `t` is now busy with them (false when they
    /// cost nothing: no pass, or a machine whose lines cost nothing).
    pub(super) fn flush_prep(&mut self, t: TaskId, wq: WqId, passes: u32, next: Pc) -> bool {
        if passes == 0 {
            return false;
        }
        self.wq.queues[wq].count_prep_passes(passes);
        let m = &self.c.machine;
        let topology = self.c.cpus.map(|_| m.topology);
        let kind = self.c.workqueues[wq].kind;
        let pass = models::workqueue::flush_prep::prep_pass_cost(
            kind,
            topology,
            &m.lines,
            self.tasks[t].cpu,
        );
        let d = Dur(pass.ns() * u64::from(passes));
        d > Dur::ZERO && self.delay(t, d, false, next)
    }

    /// `cancel_delayed_work_sync` of item `id` of `wq` by `t`, which goes
    /// on at `pc`: the item is cancelled, and if it is running `t` waits
    /// until it returns. Returns whether `t` now waits.
    #[inline(never)]
    pub(super) fn cancel_delayed_work_sync(
        &mut self,
        t: TaskId,
        pc: Pc,
        wq: WqId,
        id: WorkId,
    ) -> bool {
        self.wq_call(wq, |q, now, out| q.cancel_delayed_work(now, id, out));
        if !self.wq.queues[wq].work_running(id) {
            return false;
        }
        self.wq.work_waiters.entry((wq, id)).or_default().push(t);
        self.block_waiting(t, pc, Doing::WorkWait { wq });
        true
    }

    /// Each task asleep in `flush_workqueue` or `cancel_delayed_work_sync`
    /// with the work items executing now that it waits for, each with the
    /// kworker running it: its wait cannot end before each of them
    /// returns. For the deadlock report at the end of a run: one pass over
    /// the tasks, the flushers and the items.
    pub(super) fn item_waits(&self) -> HashMap<TaskId, Vec<(TaskId, WorkId)>> {
        let mut runner: HashMap<WorkId, TaskId> = HashMap::new();
        for (k, task) in self.tasks.iter() {
            if let (Some(_), Some(id)) = (task.worker_of, task.work) {
                if !matches!(task.state, State::Idle | State::Exited) {
                    runner.insert(id, k);
                }
            }
        }
        let blocked = |t: &TaskId| self.tasks[*t].state == State::Blocked;
        let mut out: HashMap<TaskId, Vec<(TaskId, WorkId)>> = HashMap::new();
        for (q, queue) in self.wq.queues.iter_enumerated() {
            for (f, on) in queue.flushes_wait_on() {
                let Some(ts) = self.wq.flushers.get(&(q, f)) else {
                    continue;
                };
                for t in ts.iter().filter(|t| blocked(t)) {
                    let waits = out.entry(*t).or_default();
                    waits.extend(on.iter().filter_map(|id| runner.get(id).map(|&k| (k, *id))));
                }
            }
        }
        for ((_, id), ts) in &self.wq.work_waiters {
            if let Some(&k) = runner.get(id) {
                for t in ts.iter().filter(|t| blocked(t)) {
                    out.entry(*t).or_default().push((k, *id));
                }
            }
        }
        out
    }

    /// An item's name: its work type and instance, `pidlist_destroy[3]`.
    pub(super) fn item_name(&self, id: WorkId) -> String {
        let spec = self.work_spec(id);
        format!("{}[{}]", spec.name, spec.instance(id).unwrap_or(0))
    }

    /// `t` sleeps until a flush or a work item it waits for completes.
    pub(super) fn block_waiting(&mut self, t: TaskId, pc: Pc, why: Doing) {
        let task = &mut self.tasks[t];
        task.pc = pc;
        task.off = why;
        task.state = State::Blocked;
        // When this wait began, for the deadlock error.
        task.since = self.clock.now;
        self.leave_cpu(t);
    }

    /// Items of workqueue `q` run on the per-CPU pools (R37).
    pub(super) fn pooled(&self, q: WqId) -> bool {
        runs_on_pools(self.c, &self.c.workqueues[q])
    }

    /// `kick_pool` (R37): wakes an idle kworker for `cpu`'s pool, bound to
    /// that CPU; it takes an item when it runs.
    pub(super) fn kick_pool(&mut self, cpu: CpuId) {
        let Some(w) = self.wq.pools.as_mut().and_then(|p| p.kick(cpu)) else {
            return;
        };
        self.tasks[w].pool = PoolState::Kicked;
        self.bind_worker(w, cpu);
        self.wake_worker(w);
    }

    /// A kworker of a pool gets its CPU (R37, `worker_thread` and
    /// `wq_worker_running`). Returns false if it went back to sleep.
    #[inline(never)]
    pub(super) fn pool_worker_runs(&mut self, w: TaskId) -> bool {
        let cpu = self.tasks[w].bound.expect("pool kworkers are bound");
        let pools = self.wq.pools.as_mut().expect("pooled");
        match self.tasks[w].pool {
            PoolState::Kicked => match pools.kicked_runs(w, cpu) {
                Some((q, id)) => {
                    self.tasks[w].pool = PoolState::Running;
                    self.begin_item(w, q, id);
                }
                None => {
                    // Nothing left for it: no switch-in owed either.
                    self.tasks[w].remaining = Dur::ZERO;
                    self.pool_worker_idles(w);
                    return false;
                }
            },
            PoolState::Sleeping => {
                pools.running(cpu);
                self.tasks[w].pool = PoolState::Running;
            }
            PoolState::Running | PoolState::No => {}
        }
        true
    }

    /// Pool kworker `w` has no item and sleeps on the idle list.
    pub(super) fn pool_worker_idles(&mut self, w: TaskId) {
        let task = &mut self.tasks[w];
        task.pool = PoolState::No;
        task.state = State::Idle;
        self.leave_cpu(w);
        let task = &mut self.tasks[w];
        task.bound = None;
        let home = task.home;
        let pools = self.wq.pools.as_mut().expect("pooled");
        pools.idle.push(w, home);
        if let Some(cpu) = pools.next_starved() {
            self.kick_pool(cpu);
        }
    }

    /// `wq_worker_sleeping` (R37): pool kworker `w` sleeps inside its
    /// item; the pool may wake another for its worklist.
    #[inline(never)]
    pub(super) fn pool_worker_sleeps(&mut self, w: TaskId) {
        let cpu = self.tasks[w].bound.expect("pool kworkers are bound");
        self.tasks[w].pool = PoolState::Sleeping;
        if self.wq.pools.as_mut().expect("pooled").sleeping(cpu) {
            self.kick_pool(cpu);
        }
    }

    /// Item `work`'s delayed-work timer fires (`Ev::Timer`, R35).
    pub(super) fn delayed_work_timer(&mut self, work: WorkId) {
        let q = self.wq.timer_wq[work];
        let mut out = std::mem::take(&mut self.wq.actions);
        if !self.wq.queues[q].delayed_timer_fired(self.clock.now, work, &mut out) {
            // A lazily re-armed timer (see ArmTimer): on to its current
            // expiry. A killed one is dropped.
            if let Some(e) = self.wq.queues[q].timer_expires(work) {
                let slot = self.clock.slots.timer(work);
                self.clock.queue.set(slot, e, Ev::Timer);
            }
        }
        self.apply_wq_actions(q, out);
    }

    /// Calls workqueue `wq` with the time and the action buffer, then
    /// applies the actions it asked for (R33-R36).
    pub(super) fn wq_call<R>(
        &mut self,
        wq: WqId,
        op: impl FnOnce(&mut Workqueue, SimTime, &mut Vec<Action>) -> R,
    ) -> R {
        let mut out = std::mem::take(&mut self.wq.actions);
        let r = op(&mut self.wq.queues[wq], self.clock.now, &mut out);
        self.apply_wq_actions(wq, out);
        r
    }

    /// Carries out what a workqueue said: start items on kworkers, arm
    /// timers, release flushers.
    pub(super) fn apply_wq_actions(&mut self, q: WqId, mut out: Vec<Action>) {
        for a in out.drain(..) {
            match a {
                Action::Start(id, cpu) if self.pooled(q) => {
                    let pools = self.wq.pools.as_mut().expect("pooled");
                    if pools.insert_work(cpu, q, id) {
                        self.kick_pool(cpu);
                    }
                }
                // An idle kworker of the workqueue, in
                // IdleKworkers::take's order.
                Action::Start(id, cpu) => match self.wq.idle[q].take(cpu) {
                    Some(w) => self.start_work(w, q, id, cpu),
                    None => self.wq.backlog[q].push_back((id, cpu)),
                },
                Action::Withdraw(id, cpu) if self.pooled(q) => {
                    let pools = self.wq.pools.as_mut().expect("pooled");
                    pools.remove_work(cpu, q, id);
                }
                Action::Withdraw(id, _) => {
                    let b = &mut self.wq.backlog[q];
                    if let Some(i) = b.iter().position(|&(w, _)| w == id) {
                        b.remove(i);
                    }
                }
                Action::ArmTimer(id, at) => {
                    self.wq.timer_wq[id] = q;
                    let slot = self.clock.slots.timer(id);
                    // Re-arming later (mod_delayed_work on every read of a
                    // pidlist) leaves the earlier event in place: it fires,
                    // finds the timer re-armed and moves it then, once,
                    // instead of once per re-arm.
                    if self.clock.queue.time_of(slot).is_none_or(|t| t > at) {
                        self.clock.queue.set(slot, at, Ev::Timer);
                    }
                }
                Action::FlushDone(f) => {
                    for t in self.wq.flushers.remove(&(q, f)).unwrap_or_default() {
                        if let (Some(r), true) =
                            (self.obs.recorder.as_mut(), self.clock.current != NONE)
                        {
                            r.woken_by(t, self.clock.current);
                        }
                        self.wakeup(t, false);
                    }
                }
            }
        }
        if self.wq.actions.is_empty() {
            self.wq.actions = out;
        }
    }

    /// kworker `w` runs item `id`: the item's program from the top, on
    /// `cpu` for a per-CPU workqueue.
    pub(super) fn start_work(&mut self, w: TaskId, q: WqId, id: WorkId, cpu: CpuId) {
        debug_assert_eq!(self.tasks[w].worker_of, Some(q));
        self.begin_item(w, q, id);
        self.bind_worker(w, cpu);
        self.wake_worker(w);
    }

    /// Kworker `w` takes item `id` of workqueue `q` (`process_one_work`
    /// begins): its program runs from the start.
    pub(super) fn begin_item(&mut self, w: TaskId, q: WqId, id: WorkId) {
        self.wq.queues[q].process_begins(self.clock.now, id);
        let spec = self.work_spec(id);
        let task = &mut self.tasks[w];
        task.group = spec.group;
        task.pc = Pc::START;
        task.self_key = spec.instance(id).expect("an item of its work type");
        task.work = Some(id);
        task.item_wq = q;
        task.work_start = self.clock.now;
    }

    /// Kworker `w` will run on `cpu` ([`CpuId::ANY`]: unbound).
    pub(super) fn bind_worker(&mut self, w: TaskId, cpu: CpuId) {
        let task = &mut self.tasks[w];
        task.bound = (cpu != CpuId::ANY && !self.cpus.pool.is_unlimited()).then_some(cpu);
        if task.bound.is_some() && task.home != task.bound {
            // Each CPU has its own pool of kworkers (R37): one that moves
            // to another CPU stands for that CPU's kworker, which has its
            // own scheduling history, not this one's.
            let moved = task.home.is_some();
            task.home = task.bound;
            if moved {
                self.cpus.pool.forget_fair(w);
            }
        }
    }

    /// Idle kworker `w` is woken (after its creation, if it is the first
    /// time it is needed).
    pub(super) fn wake_worker(&mut self, w: TaskId) {
        let task = &mut self.tasks[w];
        task.state = State::Blocked;
        let q = task.worker_of.expect("a kworker");
        if std::mem::take(&mut task.cold) {
            // The manager creates this kworker first (R38).
            let lat = &self.c.workqueues[q].create_latency;
            let d = lat.sample(&mut self.tasks.rngs[w]);
            if d > Dur::ZERO {
                // Its pool's manager, on the pool's CPU, wakes it.
                self.tasks[w].waker_cpu = self.tasks[w].bound;
                self.tasks[w].state = State::Runnable;
                self.blame_switch(w, Doing::Creating);
                self.clock.schedule(w, self.clock.now + d, Ev::Ready);
                return;
            }
        }
        self.wakeup(w, false);
    }

    /// kworker `w` returned from item `id` (`process_one_work` ends).
    pub(super) fn work_done(&mut self, w: TaskId, q: WqId, id: WorkId) {
        if self.obs.trace.is_some() {
            let spec = self.work_spec(id);
            let k = spec.instance(id).expect("an item of its work type");
            let name = format!("work {}[{k}]", spec.name);
            let start = self.tasks[w].work_start;
            if let Some(tr) = self.obs.trace.as_mut() {
                tr.slice(w, "work", name, start, self.clock.now);
            }
        }
        let mut out = std::mem::take(&mut self.wq.actions);
        self.wq.queues[q].work_done(self.clock.now, id, &mut out);
        for t in self.wq.work_waiters.remove(&(q, id)).unwrap_or_default() {
            if let Some(r) = self.obs.recorder.as_mut() {
                r.woken_by(t, w);
            }
            self.wakeup(t, false);
        }
        // The kworker wakes the flushers it completes before it sleeps, so
        // a flusher bound to this CPU is first in line for it.
        out.retain(|a| match *a {
            Action::FlushDone(f) => {
                for t in self.wq.flushers.remove(&(q, f)).unwrap_or_default() {
                    if let Some(r) = self.obs.recorder.as_mut() {
                        r.woken_by(t, w);
                    }
                    self.wakeup(t, false);
                }
                false
            }
            _ => true,
        });
        if self.tasks[w].pool == PoolState::Running {
            // R37: items this one activated join the worklist first; then
            // keep_working, or idle.
            self.apply_wq_actions(q, out);
            let cpu = self.tasks[w].bound.expect("pool kworkers are bound");
            match self.wq.pools.as_mut().expect("pooled").finished(cpu) {
                Some((q2, id2)) => {
                    self.begin_item(w, q2, id2);
                    self.clock.schedule(w, self.clock.now, Ev::Run);
                }
                None => self.pool_worker_idles(w),
            }
            return;
        }
        self.tasks[w].state = State::Idle;
        self.leave_cpu(w);
        self.tasks[w].bound = None;
        match self.wq.backlog[q].pop_front() {
            Some((next, cpu)) => self.start_work(w, q, next, cpu),
            None => self.wq.idle[q].push(w, self.tasks[w].home),
        }
        self.apply_wq_actions(q, out);
    }
}
