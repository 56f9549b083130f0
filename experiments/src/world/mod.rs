//! The world: tasks running compiled programs against locks and CPUs.
//!
//! One run is single-threaded (ARCHITECTURE.md, invariants). [`World`]
//! is the compiled scenario and one struct per subsystem, each owning
//! its state, beside the code that drives it:
//! - `Clock` (`clock`): the event queue, the time, the horizon, the
//!   task whose step runs, the event count and the limit checks;
//! - `Tasks` (`tasks`): the task table, each task's program stream and
//!   its hold, span and repeat slots; `interp` runs a task's program;
//! - `Cpus` (`cpu`): the CPU pool, who runs where, time slices,
//!   spinners, preemption and context switches;
//! - `Locks` (`locks`): one [`LockPolicy`] per lock, its counters and
//!   the wake buffer;
//! - `Lines` (`lines`): the cache lines of lock words and of the
//!   scenario's `[lines]`, and the spinners that poll lock words;
//! - `Memcgs` (`memcg`): charges, reclaim, OOM kills and the reaper,
//!   background release;
//! - `Workqueues` (`workqueues`): the workqueues, their kworkers and
//!   per-CPU worker pools, timers, flushers and waiters;
//! - `Stats` (`results`): the statistics and the programs' counters,
//!   and at the end the [`VariantResult`];
//! - `Observers` (`observe`): the trace, blame's picker and recorder,
//!   the draw log;
//! - `WakePath` (`wakepath`, inside `Cpus`): on a machine that is not
//!   ideal, idle CPUs' wake latencies and a guest's steal;
//! - `RcuWorld` (`rcu`): RCU's grace periods, callbacks and
//!   `synchronize_rcu` waiters, when a program uses them.
//!
//! Kernfs has no subsystem here: the kernfs and cgroup operations are a
//! library of scenario steps (`scenarios/lib/kernfs.toml`) over the
//! locks, workqueues and memcgs above, and the one kernfs-like state the
//! world keeps, the `key next` allocators that hand out cgroup ids, is
//! with the programs' counters in `Stats`.
//!
//! A method that needs only one subsystem's state is a method of its
//! struct, so that code holding one subsystem can borrow another; one
//! that needs several is a method of `World`, in the module of the
//! subsystem it is about. Besides them: `limits` (what stops a run, and
//! its errors), `stuck` and `cycle` (what the end of a run finds waiting
//! forever), and what a run records for its observers: [`trace`]
//! (`--trace`) and [`recorder`] (`--blame`).
//!
//! Events (`Ev`; at most one pending per queue slot), each handled by
//! one function of `World::run`'s loop:
//! - `Run(t)`: task `t` is on a CPU and executes steps until it blocks,
//!   sleeps, spins, burns CPU time or exits (`run_task`);
//! - `Wake(t)`: `t`'s sleep is over; it becomes runnable (`sleep_over`);
//! - `Ready(t)`: `t`'s wake latency is over; it may take a CPU, or runs
//!   on the idle CPU it reserved (`wake_latency_over`, `wakepath`);
//! - `SpinEnd(t)`: `t`'s spin deadline on a lock passed (`spin_end`);
//! - `LockTimer(t)`: the timed sleep `t`'s lock put it in is over
//!   (`lock_sleep_over`: a percpu rwsem writer's grace period);
//! - `Timer(item)`: a delayed-work timer fired (`delayed_work_timer`);
//! - `Reap(memcg)`: the OOM reaper's delay after a kill is over
//!   (`Memcgs::oom_reap`);
//! - `Release(memcg)`: a background release tick (`release_tick`);
//! - `Rcu`: a tick while RCU has a grace period or callbacks
//!   (`rcu_tick`, `rcu`).
//!
//! A task that spins on a lock keeps its CPU. The world tells a lock when
//! one of its holders leaves its CPU (spinners on it stop), and when a task
//! finds no free CPU while others spin (need_resched): with per-CPU run
//! queues the spinner on the CPU it waits for yields, others spin on; with
//! one shared queue, one spinner yields.
//!
//! Ordering contract: a lock's wakeups become `Run` events in the order the
//! lock issued them, at the instant of the release, after the releasing
//! task has gone on. Zero-time steps (lock operations, spans, block heads)
//! run inline without events.
//!
//! A lock wait is measured from the request until the waiter runs again
//! holding the lock, as `lock_stat` and `perf lock contention` see it; with
//! unlimited CPUs that is the instant of the grant.

use crate::program::{Compiled, CounterId, DistId, GroupId, GroupProg, Instr, KeyCounterId};
use crate::program::{Pc, StatId, WakePlacement, WorkTypeId};
use models::locks::AnyLock;
use models::sched::CpuPool;
use models::sched::NICE_0_WEIGHT;
use models::workqueue::{FlushId, IdleKworkers, PoolState, WorkerPools};
use models::{Acquire, LockCtx, LockKind, LockPolicy, Mode, TaskView, Wake, WordAccess};
use models::{CpuId, LockId, MemcgId, TaskId, WorkId, WqId};
use output::{Counter, Series, VariantResult};
use sim::rng::{stream, Stream};
use sim::stats::{HdrCounts, WindowLog2, Windows};
use sim::{Dur, SimTime, SlotQueue};
use std::fmt;
use typed_index_collections::{ti_vec, TiSlice, TiVec};

mod clock;
pub use clock::CHECK_EVERY;
use clock::{work_items, Clock, Ev, Stop};
mod cpu;
use cpu::Cpus;
mod cycle;
mod hung;
pub use hung::HungReport;
use hung::HungTasks;
mod interp;
mod limits;
mod lines;
pub use limits::{
    check_limits, check_run_memory, estimated_memory, estimated_run_memory, Limits, RunError,
};
use lines::Lines;
mod locks;
use locks::Locks;
mod memcg;
use memcg::{Memcgs, RELEASE_TICK};
mod observe;
use observe::Observers;
pub mod recorder;
use recorder::{Doing, Focus, Names, Picker, Recorder, Wait, Wanted};
mod rcu;
use rcu::RcuWorld;
mod results;
use results::Stats;
mod split;
mod stuck;
pub use stuck::{secs as stuck_secs, Stuck, StuckLine};
mod tasks;
use tasks::{held_decode, pending, Resume, State, Task, Tasks};
pub mod trace;
use trace::Trace;
mod wakepath;
use wakepath::WakePath;
mod workqueues;
use workqueues::Workqueues;

/// No task (an idle CPU in [`Cpus::running_on`], no current task).
const NONE: TaskId = TaskId(u32::MAX);

/// The task count from which each task event prefetches the task's state
/// (and the event queue the entry of its next winner): about where a
/// task's half kilobyte of hot state (its entry, random stream, scheduler
/// entity and queue leaf) times the tasks outgrows a 1 MiB L2 cache.
/// Below it the prefetches are pure overhead (13% more instructions on
/// 512 tasks); above it they halve the cost of an event on 32,768
/// (docs/findings/2026-12-03-cost-per-event-by-machine-size.md).
pub const PREFETCH_FROM_TASKS: usize = 2048;

/// One replication of one variant: the compiled scenario, and the state
/// of each subsystem it runs, each driven by the code beside it.
#[derive(Clone)]
pub struct World<'c> {
    /// The compiled scenario: the programs and the specs of the locks,
    /// memcgs, workqueues and statistics.
    c: &'c Compiled,
    clock: Clock,
    tasks: Tasks,
    cpus: Cpus,
    locks: Locks,
    lines: Lines,
    memcg: Memcgs,
    wq: Workqueues,
    /// RCU's grace periods and callbacks, if a program uses them.
    rcu: Option<Box<RcuWorld>>,
    /// What khungtaskd reports (R100-R101).
    hung: HungTasks,
    stats: Stats,
    obs: Observers,
    /// Whether each task event prefetches the task's state: on when the
    /// tasks' state outgrows the cache ([`PREFETCH_FROM_TASKS`]).
    prefetch: bool,
    /// Whether the run has begun (a [`World::run_until`] stopped part way).
    started: bool,
}

impl<'c> World<'c> {
    /// Builds the world of one replication. Each task's stream is keyed by
    /// (seed, replication, `task/GROUP`, index).
    pub fn new(c: &'c Compiled, seed: u64, replication: u64, limits: Limits) -> Self {
        let tasks = Tasks::new(c, (seed, replication));
        let prefetch = tasks.len() >= PREFETCH_FROM_TASKS;
        let mut clock = Clock::new(c, &tasks, limits);
        clock.queue.set_prefetch(prefetch);
        World {
            c,
            clock,
            cpus: Cpus::new(c, &tasks, (seed, replication)),
            locks: Locks::new(c),
            lines: Lines::new(c),
            memcg: Memcgs::new(c, tasks.len()),
            wq: Workqueues::new(c, tasks.first_kworker()),
            rcu: RcuWorld::new(c),
            hung: HungTasks::new(c, tasks.len()),
            stats: Stats::new(c),
            obs: Observers::default(),
            prefetch,
            started: false,
            tasks,
        }
    }

    /// Turns the prefetching of each event's state on or off, whatever
    /// the task count: for tests that a prefetch changes no result.
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch = on;
        self.clock.queue.set_prefetch(on);
    }

    /// Records every random duration drawn, as (task, value): for tests of
    /// common random numbers.
    pub fn log_draws(&mut self) {
        self.obs.draws = Some(Vec::new());
    }

    pub fn draws(&self) -> &[(TaskId, Dur)] {
        self.obs.draws.as_deref().unwrap_or(&[])
    }

    /// Runs until the horizon (events at times `< duration`), calling
    /// `progress` now and then with the simulated time reached.
    pub fn run(&mut self, progress: &mut dyn FnMut(SimTime)) -> Result<(), RunError> {
        self.start();
        self.run_to_horizon(progress)
    }

    /// Runs the events before `until` (and before the horizon), and
    /// stops with the rest pending: a clone of the world then is a
    /// snapshot, and [`World::run`] on it or on the original goes on
    /// exactly as one uninterrupted run would (same events, same order).
    pub fn run_until(
        &mut self,
        until: SimTime,
        progress: &mut dyn FnMut(SimTime),
    ) -> Result<(), RunError> {
        self.start();
        let until = until.min(self.clock.horizon);
        // Peek before each pop: an event popped at `until` and set again
        // would take a new sequence number, after events set before it
        // for the same instant.
        while self.clock.queue.peek_time().is_some_and(|at| at < until) {
            let (at, slot, ev) = self.clock.queue.pop().expect("peeked");
            self.clock.now = at;
            self.event(slot, ev, progress)?;
        }
        Ok(())
    }

    /// One event popped at `slot` (the clock is at its time).
    #[inline(always)]
    fn event(
        &mut self,
        slot: usize,
        ev: Ev,
        progress: &mut dyn FnMut(SimTime),
    ) -> Result<(), RunError> {
        let slots = self.clock.slots;
        let Some(t) = slots.task(slot) else {
            self.clock.current = NONE;
            match ev {
                Ev::Timer => self.delayed_work_timer(slots.timer_of(slot)),
                Ev::Reap => self.oom_reap(slots.reaper_of(slot)),
                Ev::Release => self.release_tick(slots.release_of(slot)),
                Ev::Rcu => self.rcu_tick(),
                Ev::IdleBalance => self.idle_balance(),
                Ev::Run | Ev::Wake | Ev::Ready | Ev::SpinEnd | Ev::SpinResched | Ev::LockTimer => {
                    unreachable!("a task's event is in the task's slot")
                }
            }
            return Ok(());
        };
        if self.prefetch {
            self.prefetch_task(t);
        }
        self.count_event(t, progress)?;
        match ev {
            Ev::Run => self.run_task(t),
            Ev::Wake => self.sleep_over(t),
            Ev::Ready => self.wake_latency_over(t),
            Ev::SpinEnd => self.spin_end(t),
            Ev::SpinResched => {
                self.spin_resched(t);
                Ok(())
            }
            Ev::LockTimer => self.lock_sleep_over(t),
            Ev::Timer | Ev::Reap | Ev::Release | Ev::Rcu | Ev::IdleBalance => {
                unreachable!("timer, reaper and release events are in their own slots")
            }
        }
    }

    /// The run's loop, from wherever it is to the horizon.
    fn run_to_horizon(&mut self, progress: &mut dyn FnMut(SimTime)) -> Result<(), RunError> {
        while let Some((at, slot, ev)) = self.clock.queue.pop() {
            if at >= self.clock.horizon {
                self.stop_at_horizon(slot, at, ev);
                return self.no_wait_cycle();
            }
            self.clock.now = at;
            self.event(slot, ev, progress)?;
        }
        self.nothing_left()
    }

    /// Starts loading task `t`'s state from each table an event of its
    /// reads (its task entry, its random stream, its scheduler entity),
    /// so that on a large machine the cache misses overlap
    /// (docs/findings/2026-12-03-cost-per-event-by-machine-size.md).
    #[inline(always)]
    fn prefetch_task(&self, t: TaskId) {
        sim::prefetch::lines(&self.tasks.table[t]);
        sim::prefetch::lines(&self.tasks.rngs[t]);
        self.cpus.pool.prefetch(t);
        // A task's slot is its index (`EventSlots::task`).
        self.clock.queue.prefetch_path(t.index());
    }

    /// Every task but the idle kworkers becomes runnable, and the
    /// memcgs' background releases start ticking.
    #[cold]
    #[inline(never)]
    fn start(&mut self) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        for t in (0..self.tasks.len()).map(TaskId::from) {
            if self.tasks[t].state != State::Idle {
                self.make_runnable(t);
            }
        }
        for (m, spec) in self.c.memcgs.iter_enumerated() {
            if spec.release_rate > 0.0 {
                let slot = self.clock.slots.release(m);
                self.clock.set_after(slot, RELEASE_TICK, Ev::Release);
            }
        }
    }

    /// Counts task `t`'s event; at the counts [`Clock::count_event`]
    /// asks for, checks the limits and reports progress.
    #[inline(always)]
    fn count_event(
        &mut self,
        t: TaskId,
        progress: &mut dyn FnMut(SimTime),
    ) -> Result<(), RunError> {
        if self.clock.count_event() {
            self.check_limits(t, progress)?;
        }
        Ok(())
    }

    /// The limits that stop a runaway run, at task `t`'s event: the
    /// event limit, and events that go on at one instant.
    #[cold]
    #[inline(never)]
    fn check_limits(
        &mut self,
        t: TaskId,
        progress: &mut dyn FnMut(SimTime),
    ) -> Result<(), RunError> {
        let at = self.clock.now;
        match self.clock.check() {
            Ok(()) => {
                progress(at);
                Ok(())
            }
            Err(Stop::Events) => Err(RunError::EventLimit {
                limit: self.clock.limits.max_events,
                at,
            }),
            Err(Stop::Instant) => Err(self.instant_livelock(t, at)),
        }
    }

    /// `t`'s sleep is over (`Ev::Wake`): a timer wakes it, not a task.
    /// It runs at once if a CPU is free (no second event); the midpoint
    /// of a reclaim attempt that returns its pages then is a wake too.
    #[inline(always)]
    fn sleep_over(&mut self, t: TaskId) -> Result<(), RunError> {
        self.clock.current = NONE;
        if !self.memcg.mid_reclaim.is_empty() && self.reclaim_midpoint(t) {
            return Ok(());
        }
        // What this sleep was for (reclaim, throttle) was said for it
        // alone: blame, the trace and `stuck` read it.
        let task = &mut self.tasks[t];
        task.off = Doing::Sleep;
        task.drawn_sleep = None;
        if task.memstall.is_some() {
            self.memstall_leave(t);
        }
        if self.wakeup(t, true) {
            self.run_task(t)?;
        }
        Ok(())
    }

    /// `t`'s wake latency is over (`Ev::Ready`): it takes a CPU if it
    /// can, and runs. No task acts: what its placement sets off (a
    /// spinner stopped by need_resched) has no waker.
    #[inline(always)]
    fn wake_latency_over(&mut self, t: TaskId) -> Result<(), RunError> {
        self.clock.current = NONE;
        if self.cpus.wake.is_some() {
            if self.tasks[t].arriving {
                return self.arrive(t);
            }
            let from = self.tasks[t].waker_cpu.take();
            if self.wake_onto_cpu(t, from, true) {
                self.run_task(t)?;
            }
            return Ok(());
        }
        if let Some(cpu) = self.take_cpu(t) {
            self.give_cpu(t, cpu);
            self.run_task(t)?;
        }
        Ok(())
    }

    /// Nothing left to happen before the horizon. A task blocked on a
    /// lock or a flush waits forever, and so does a spinner: a spinner
    /// with no deadline spins while its lock's owner stays on its CPU
    /// (R9, R27), and with no event left nothing moves that owner (two
    /// tasks that spin each on the other's lock: ABBA on CPUs).
    #[cold]
    #[inline(never)]
    fn nothing_left(&mut self) -> Result<(), RunError> {
        let waiters: Vec<String> = (self.tasks.iter())
            .filter(|(_, task)| matches!(task.state, State::Blocked | State::Spinning))
            .map(|(t, _)| t)
            .take(20)
            .map(|t| self.stuck_line(t))
            .collect();
        if !waiters.is_empty() {
            return Err(RunError::Deadlock {
                at: self.clock.now,
                waiters,
            });
        }
        self.clock.now = self.clock.horizon;
        Ok(())
    }

    /// The run reached its horizon with the event `(at, slot, ev)`
    /// popped: it goes back, so that the world at the end still says when
    /// each pending sleep would have ended (`World::stuck`).
    fn stop_at_horizon(&mut self, slot: usize, at: SimTime, ev: Ev) {
        self.clock.queue.set(slot, at, ev);
        self.clock.now = self.clock.horizon;
    }

    /// The lock waits going on now: each waiting task, its wait
    /// statistic and how long it has waited (it asked for the lock and has
    /// not run holding it yet).
    fn open_lock_waits(&self) -> impl Iterator<Item = (TaskId, StatId, Dur)> + '_ {
        (self.tasks.iter()).filter_map(|(t, task)| {
            let (_, _, wait) = task.resume.lock_wait()?;
            Some((t, wait, self.clock.now.since(task.since)))
        })
    }

    /// A task as the deadlock errors name it: `one[0]`, or a kworker
    /// with its item, `kworker/q/0 (running wk[1])`.
    fn stuck_name(&self, t: TaskId) -> String {
        let task = &self.tasks[t];
        match (task.worker_of, task.work) {
            (Some(_), Some(id)) => {
                format!("{} (running {})", self.track_name(t), self.item_name(id))
            }
            _ => self.tasks.name(self.c, t),
        }
    }

    /// A task that waits forever, for the deadlock errors: `one[0]
    /// blocked on b (lock) since t=1ms at s.toml:10`.
    fn stuck_line(&self, t: TaskId) -> String {
        let task = &self.tasks[t];
        let g = &self.c.groups[task.group];
        // A flusher waits at its flush step (R110); other waits, past it.
        let back = u32::from(task.flushing.is_none());
        let at = g.origins.get(Pc(task.pc.0.saturating_sub(back)));
        let what = match task.resume {
            Resume::Acquired { lock, mode, .. } | Resume::Retry { lock, mode, .. } => {
                let l = &self.c.locks[lock];
                format!("{} ({})", l.name, crate::program::mode_label(l.kind, mode))
            }
            Resume::Nothing => match task.off {
                Doing::Flush { wq } => {
                    format!("a flush of {} (workqueue)", self.c.workqueues[wq].name)
                }
                Doing::WorkWait { wq } => format!(
                    "a running work item of {} (workqueue, cancel_*_sync)",
                    self.c.workqueues[wq].name
                ),
                _ => "a flush or a work item (workqueue)".into(),
            },
        };
        let how = if task.state == State::Spinning {
            "spinning on its CPU for"
        } else {
            "blocked on"
        };
        format!(
            "{} {how} {what} since t={} at {}",
            self.stuck_name(t),
            task.since,
            at.map(|o| o.location.as_str()).unwrap_or("?")
        )
    }

    /// The first hung-task reports (R101) up to now, in the kernel's
    /// order: as if the run ended now.
    pub fn hung_task_reports(&self) -> Vec<HungReport> {
        let mut h = self.hung.clone();
        h.finish(self.clock.now);
        h.first().to_vec()
    }

    pub fn events(&self) -> u64 {
        self.clock.events
    }
}
