//! The engine's clock: the event queue with its slots (one per task,
//! then the OOM reapers', the delayed-work timers' and the background
//! releases'), the time, the task whose step runs, the event count and
//! the checks of the run's limits.

use super::*;

/// What a queue slot's pending event is: a task's (each task has at
/// most one: it is sleeping, burning CPU, or about to run), or a memcg's
/// or a work item's in their own slots ([`EventSlots`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Ev {
    /// The task is on a CPU and continues its program.
    Run,
    /// The task's sleep is over; it becomes runnable.
    Wake,
    /// The task's spin deadline on the lock it asked for passed.
    SpinEnd,
    /// The tick that ends a spinner's time slice, with a task waiting for
    /// its CPU: need_resched is set there (R8, R28).
    SpinResched,
    /// The timed sleep a lock put the task in is over (an RCU grace
    /// period, `Acquire::Sleep`, R82).
    LockTimer,
    /// The task's wake-to-run latency is over; it may take a CPU (or runs
    /// on the one it reserved: `wakepath`).
    Ready,
    /// (A memcg's slot) the OOM reaper's delay after a kill is over (R47).
    Reap,
    /// (A work item's slot) its delayed-work timer fired (R35).
    Timer,
    /// (A memcg's second slot) background release tick.
    Release,
    /// (RCU's slot) a tick while RCU has work (R90-R94).
    Rcu,
    /// (The idle balance's slot) a busy CPU's tick kicks the idle CPUs to
    /// pull waiting tasks (R121).
    IdleBalance,
}

/// Task events between two checks of the limits, and so between two
/// calls of [`World::run`]'s `progress` (a power of two).
pub const CHECK_EVERY: u64 = 1 << 20;

/// What the engine keeps to run events in order and to stop a runaway
/// run: the queue, now and the horizon, the acting task, and the event
/// count with what the limit checks remember between checks.
#[derive(Clone)]
pub(super) struct Clock {
    pub(super) queue: SlotQueue<Ev>,
    /// Which queue slot is whose.
    pub(super) slots: EventSlots,
    pub(super) now: SimTime,
    /// Events at or after it are not run.
    pub(super) horizon: SimTime,
    /// The task whose step is being executed (the waker of any wakeup);
    /// [`NONE`] for a timer's.
    pub(super) current: TaskId,
    /// Task events run so far.
    pub(super) events: u64,
    pub(super) limits: Limits,
    /// The event count at which to report progress or stop at the limit.
    next_check: u64,
    /// The instant of the last event-limit check, and the event count
    /// when that instant was first seen there: events that go on at one
    /// instant past `max_steps_per_instant` are a livelock.
    check_at: SimTime,
    check_from: u64,
}

/// Why [`Clock::check`] stops a run.
pub(super) enum Stop {
    /// The event limit.
    Events,
    /// Too many events at one instant.
    Instant,
}

impl Clock {
    pub(super) fn new(c: &Compiled, tasks: &Tasks, limits: Limits) -> Clock {
        let slots = EventSlots {
            tasks: tasks.len(),
            memcgs: c.memcgs.len(),
            items: work_items(c),
            rcu: usize::from(c.uses_rcu()),
            balance: usize::from(super::cpu::sis_util_on(c)),
        };
        Clock {
            queue: SlotQueue::with_bounds(slots.len(), &queue_bounds(&tasks.table.raw), Ev::Run),
            slots,
            now: SimTime::ZERO,
            horizon: SimTime::ZERO + c.duration,
            current: NONE,
            events: 0,
            limits,
            next_check: limits.max_events.min(CHECK_EVERY),
            check_at: SimTime::MAX,
            check_from: 0,
        }
    }

    /// `t`'s next event: `ev` at `at` (it has none pending).
    #[inline]
    pub(super) fn schedule(&mut self, t: TaskId, at: SimTime, ev: Ev) {
        debug_assert!(
            !self.queue.is_set(t.index()),
            "a task has one pending event"
        );
        self.queue.set(t.index(), at, ev);
    }

    /// Slot `slot`'s event becomes `ev`, `d` from now (instead of any
    /// pending one).
    #[inline]
    pub(super) fn set_after(&mut self, slot: usize, d: Dur, ev: Ev) {
        self.queue.set(slot, self.now + d, ev);
    }

    /// Counts a task's event: whether the limits are due for a check
    /// (every [`CHECK_EVERY`] events, and exactly at the event limit).
    #[inline(always)]
    pub(super) fn count_event(&mut self) -> bool {
        self.events += 1;
        self.events >= self.next_check
    }

    /// The check [`Clock::count_event`] asked for, at the current event.
    pub(super) fn check(&mut self) -> Result<(), Stop> {
        if self.events >= self.limits.max_events {
            return Err(Stop::Events);
        }
        if self.now != self.check_at {
            self.check_at = self.now;
            self.check_from = self.events;
        } else if self.events - self.check_from > self.limits.max_steps_per_instant {
            return Err(Stop::Instant);
        }
        self.next_check = ((self.events | (CHECK_EVERY - 1)) + 1).min(self.limits.max_events);
        Ok(())
    }
}

/// How many work items the scenario's work types have (one timer slot
/// each).
pub(super) fn work_items(c: &Compiled) -> usize {
    c.works.iter().map(|w| w.instances as usize).sum()
}

/// The event queue's slots, in order: one per task, then one per memcg
/// for its OOM reaper, one per work item for its delayed-work timer, one
/// per memcg for its background release, RCU's tick if a program
/// uses RCU, and the idle balance with the kernel's scheduler (R121).
#[derive(Copy, Clone, Debug)]
pub(super) struct EventSlots {
    tasks: usize,
    memcgs: usize,
    items: usize,
    rcu: usize,
    balance: usize,
}

impl EventSlots {
    fn len(self) -> usize {
        self.tasks + self.memcgs + self.items + self.memcgs + self.rcu + self.balance
    }

    /// The idle balance (only with the kernel's scheduler, R121).
    pub(super) fn balance(self) -> usize {
        debug_assert_eq!(self.balance, 1);
        self.tasks + self.memcgs + self.items + self.memcgs + self.rcu
    }

    /// RCU's tick (only when a program uses RCU).
    pub(super) fn rcu(self) -> usize {
        debug_assert_eq!(self.rcu, 1);
        self.tasks + self.memcgs + self.items + self.memcgs
    }

    /// The task whose slot `slot` is, if it is a task's.
    #[inline(always)]
    pub(super) fn task(self, slot: usize) -> Option<TaskId> {
        (slot < self.tasks).then(|| TaskId::from(slot))
    }

    /// Memcg `m`'s OOM reaper.
    pub(super) fn reaper(self, m: MemcgId) -> usize {
        self.tasks + m.index()
    }

    /// Item `w`'s delayed-work timer.
    pub(super) fn timer(self, w: WorkId) -> usize {
        self.tasks + self.memcgs + w.index()
    }

    /// Memcg `m`'s background release.
    pub(super) fn release(self, m: MemcgId) -> usize {
        self.tasks + self.memcgs + self.items + m.index()
    }

    /// The memcg whose reaper's slot `slot` is.
    pub(super) fn reaper_of(self, slot: usize) -> MemcgId {
        MemcgId::from(slot - self.tasks)
    }

    /// The item whose timer's slot `slot` is.
    pub(super) fn timer_of(self, slot: usize) -> WorkId {
        WorkId::from(slot - self.tasks - self.memcgs)
    }

    /// The memcg whose background release's slot `slot` is.
    pub(super) fn release_of(self, slot: usize) -> MemcgId {
        MemcgId::from(slot - self.tasks - self.memcgs - self.items)
    }
}

/// Where the event queue's trees start (besides slot 0): a task group of
/// 64 or more tasks gets a tree of its own, smaller groups share one with
/// their neighbours, the kworkers have one, and the timers (after the
/// tasks) another. Tasks are set at almost every event, timers are many but
/// rare, and a busy group (readers) then replays a short path in a small
/// tree that its many idle neighbours (churners parked on a mutex) do not
/// lengthen. The trees change no event's order.
fn queue_bounds(tasks: &[Task]) -> Vec<usize> {
    const MIN_TREE: usize = 64;
    // A small world's tree fits the cache whole: one tree and a pick
    // among fewer roots serve it better.
    if tasks.len() < 4 * MIN_TREE {
        return vec![tasks.len()];
    }
    let same =
        |a: &Task, b: &Task| a.group == b.group && a.worker_of.is_some() == b.worker_of.is_some();
    let mut bounds = Vec::new();
    let mut i = 0;
    while i < tasks.len() {
        let mut j = i + 1;
        while j < tasks.len() && same(&tasks[i], &tasks[j]) {
            j += 1;
        }
        if j - i >= MIN_TREE && bounds.len() < 250 {
            bounds.push(i);
            bounds.push(j);
        }
        i = j;
    }
    bounds.push(tasks.len());
    bounds.dedup();
    bounds
}
