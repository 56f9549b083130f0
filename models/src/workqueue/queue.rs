//! A Linux workqueue (kernel/workqueue.c), rule by rule from
//! docs/kernel-rules.md R32-R36, in the shape R40/R41 need
//! (`cgroup_pidlist_destroy_wq`: per-CPU, max_active 1).
//!
//! This is a pure state machine with no events of its own: the world calls
//! it when something happens (an item is queued, a timer fires, a work
//! function returns, somebody flushes) and it answers with [`Action`]s,
//! appended to a caller-owned buffer in the order the kernel would cause
//! them: a worker may start an item ([`Action::Start`]), a delayed-work
//! timer must be armed ([`Action::ArmTimer`]), a flusher is released
//! ([`Action::FlushDone`]).
//!
//! State, as the kernel keeps it:
//! - one pool_workqueue (pwq) per CPU for a per-CPU workqueue, one for an
//!   unbound or ordered one (a single NUMA node), each with `nr_active`
//!   (at most `max_active`, R32) and the FIFO `inactive_works` list (R33);
//! - per work item the PENDING bit: at most one pending instance, which is
//!   either an armed delayed-work timer (R35) or an entry of a pwq's
//!   worklist (active) or inactive list; plus at most one executing
//!   instance (non-reentrancy: a second run of an executing item is queued
//!   to the pwq it runs on, R33, and starts only when the first returns);
//! - the instances in flight (queued or executing) and the waiting flushers
//!   (R36).
//!
//! Flush colors (R36) are modeled by a sequence number: every instance
//! that `__queue_work` puts on a pwq gets the next number of a
//! workqueue-wide counter (its "color"), a flush snapshots the counter and
//! waits until no instance with a smaller number is in flight. That is
//! what the kernel's 16 colors compute: a flush waits for exactly the
//! items queued before it on all pwqs (active, inactive, timers that have
//! fired), not for later ones nor for armed timers; `mod_delayed_work`
//! takes an instance out of flight and requeues it with a new number (the
//! current color); flushers complete in order (a later snapshot waits for a
//! superset) and new work, numbered after the snapshot, cannot livelock a
//! flush. Only the first flusher is woken by the work that ends its color
//! (R110): the others wait until it has run and cascaded
//! ([`Workqueue::flush_resumed`]), which returns every later flusher whose
//! work is done and arms the next one. A flusher that finds 15 colors in
//! use waits on the overflow list and gets its snapshot at the next
//! cascade (R111), so it also waits for work queued after it was called.
//!
//! Simplified, on purpose:
//! - [`Action::Start`] puts an activated item on its pool's worklist:
//!   which worker takes it, and when, is the world's business. It stays
//!   PENDING there (`queue_work` is a no-op, a grab takes it off with
//!   [`Action::Withdraw`]) until the world says a worker began it
//!   ([`Workqueue::process_begins`]); it then executes until
//!   [`Workqueue::work_done`].
//! - Concurrency management (R37: nr_running, `need_more_worker`, idle
//!   workers) and worker creation (R38: the manager,
//!   `maybe_create_worker`, CREATE_COOLDOWN, mayday and rescuers) are not
//!   in this state machine: they decide *when* an active item gets a
//!   worker, never *whether* it is active, so the world does them with
//!   the start of what [`Action::Start`] names (driving the per-CPU pools
//!   of R37, [`super::worker_pools`]). `max_active` accounting, which
//!   decides whether an item may run at all, is exact.
//! - Unbound workqueues have one node, so one pwq with the whole
//!   `max_active` (R32 splits it over NUMA nodes). Its items start on
//!   [`CpuId::ANY`]: unbound workers are not bound to a CPU.
//! - Timers fire on the CPU that armed them (`dwork->cpu`, no timer
//!   migration). With [`Workqueue::with_timer_wheel`] (the world's
//!   workqueues) they fire as the kernel's timer wheel has them
//!   ([`crate::timer`], R62): on a tick, at the end of the wheel bucket of
//!   `jiffies + delay`; without it, at exactly `now + delay` (the rule
//!   tests here). An `rcu_work` waits for its grace period as a timer
//!   that is never rounded ([`Workqueue::queue_rcu_work`]). `flush_work`,
//!   its barrier items and `drain_workqueue` are not modeled.

use crate::ids::{CpuId, WorkId};
use sim::{Dur, SimTime};
use std::collections::{BTreeSet, VecDeque};

/// `WQ_MAX_ACTIVE` (R32).
pub const WQ_MAX_ACTIVE: u32 = 512;
/// `WQ_DFL_ACTIVE` (R32): the limit when 0 is passed.
pub const WQ_DFL_ACTIVE: u32 = WQ_MAX_ACTIVE / 2;
/// `WORK_NR_COLORS` = 1 << `WORK_STRUCT_COLOR_BITS` (4): flush colors
/// (include/linux/workqueue.h); at most 15 are held by flushers at once
/// (R111).
pub const WORK_NR_COLORS: u32 = 16;
/// `CGROUP_PIDLIST_DESTROY_DELAY` = HZ jiffies = 1 s (R41).
pub const CGROUP_PIDLIST_DESTROY_DELAY: Dur = Dur(1_000_000_000);

/// A flusher waiting in [`Workqueue::flush_workqueue`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlushId(pub u64);

/// How the workqueue was allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WqKind {
    /// `alloc_workqueue(name, 0 | WQ_PERCPU, max_active)`: one pwq per CPU,
    /// `max_active` each (R32).
    PerCpu { cpus: u32 },
    /// `WQ_UNBOUND`: one pwq (one NUMA node) with `max_active`.
    Unbound,
    /// `alloc_ordered_workqueue` (R34): unbound, max_active 1, FIFO.
    Ordered,
}

/// What the workqueue asks of the world.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// The item is on the worklist for a worker bound to this CPU
    /// ([`CpuId::ANY`] on an unbound or ordered workqueue), still pending
    /// until the world calls [`Workqueue::process_begins`]; it then
    /// executes until [`Workqueue::work_done`].
    Start(WorkId, CpuId),
    /// Arm the item's delayed-work timer for this time and call
    /// [`Workqueue::delayed_timer_fired`] then. Timers armed earlier for
    /// the item are dead; their firing is ignored. A timer re-armed to a
    /// later time while armed asks nothing: the world's earlier timer
    /// fires first, finds it re-armed ([`Workqueue::timer_expires`]) and
    /// moves, once instead of once per re-arm (every read of a pidlist
    /// re-arms its destroy timer).
    ArmTimer(WorkId, SimTime),
    /// The flusher returns from `flush_workqueue`.
    FlushDone(FlushId),
    /// A grab took the item off the worklist before a worker began it:
    /// the world drops it from where it waits for a worker.
    Withdraw(WorkId, CpuId),
}

/// The answer to [`Workqueue::flush_workqueue`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FlushOutcome {
    /// Nothing was in flight: the flush returns at once.
    Done,
    /// The flusher sleeps until [`Action::FlushDone`] names it.
    Wait(FlushId),
}

/// Statistics of one pool_workqueue.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PwqStats {
    /// The pwq's CPU ([`CpuId::ANY`] when unbound).
    pub cpu: CpuId,
    /// Items active now (executing, or activated behind their own run).
    pub nr_active: u32,
    /// Length of the inactive list now.
    pub inactive: usize,
    /// Instances queued to this pwq.
    pub queued: u64,
    /// Instances started.
    pub started: u64,
    /// Instances completed.
    pub executed: u64,
    /// Longest inactive list seen.
    pub max_inactive: usize,
}

/// A pending instance on a pwq.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Queued {
    pwq: usize,
    /// Flush sequence number ("color").
    seq: u64,
    at: SimTime,
    /// On the worklist (counted in `nr_active`), not on the inactive list.
    active: bool,
}

/// The PENDING bit and where the pending instance is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Pending {
    No,
    /// A delayed-work timer is armed; it queues on `cpu` at `expires`.
    Timer {
        cpu: CpuId,
        expires: SimTime,
    },
    Queued(Queued),
}

/// The executing instance.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Running {
    pwq: usize,
    seq: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Item {
    pending: Pending,
    running: Option<Running>,
}

impl Default for Item {
    fn default() -> Self {
        Item {
            pending: Pending::No,
            running: None,
        }
    }
}

/// Every item's state, by id: a vector, since ids are dense (a scenario's
/// work types have consecutive ids) and a lookup is on every queue,
/// cancel and completion. Items never touched read as idle. It spans
/// only the ids this workqueue has seen, from the lowest (`base`): a
/// workqueue serves a work type or a few, and a vector from id 0 held
/// every other type's ids too (a few MiB a workqueue with case 2's
/// families of 16,384 items).
#[derive(Clone, Debug, Default)]
struct Items {
    base: usize,
    items: Vec<Item>,
}

impl Items {
    fn get(&self, w: &WorkId) -> Option<&Item> {
        w.index()
            .checked_sub(self.base)
            .and_then(|i| self.items.get(i))
    }

    fn get_mut(&mut self, w: &WorkId) -> Option<&mut Item> {
        (w.index().checked_sub(self.base)).and_then(|i| self.items.get_mut(i))
    }

    fn entry(&mut self, w: WorkId) -> &mut Item {
        let i = w.index();
        if self.items.is_empty() {
            self.base = i;
        } else if i < self.base {
            let before = self.base - i;
            self.items
                .splice(0..0, std::iter::repeat_n(Item::default(), before));
            self.base = i;
        }
        let k = i - self.base;
        if k >= self.items.len() {
            self.items.resize(k + 1, Item::default());
        }
        &mut self.items[k]
    }

    /// Every id this workqueue has seen, with its state.
    fn iter(&self) -> impl Iterator<Item = (WorkId, &Item)> {
        (self.items.iter().enumerate()).map(|(k, it)| (WorkId::from(self.base + k), it))
    }
}

impl std::ops::Index<&WorkId> for Items {
    type Output = Item;
    fn index(&self, w: &WorkId) -> &Item {
        &self.items[w.index() - self.base]
    }
}

#[derive(Clone, Debug)]
struct Pwq {
    cpu: CpuId,
    nr_active: u32,
    inactive: VecDeque<WorkId>,
    queued: u64,
    started: u64,
    executed: u64,
    max_inactive: usize,
}

#[derive(Copy, Clone, Debug)]
struct Flusher {
    id: FlushId,
    /// Waits for every instance with a smaller sequence number.
    snapshot: u64,
    since: SimTime,
    /// Its flush color, numbered without wrapping: each flusher that gets
    /// one when it calls takes a new one, the overflowed flushers share
    /// the one a cascade gives them (R111).
    color: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    queued: u64,
    queue_noops: u64,
    timers_armed: u64,
    timers_fired: u64,
    grabbed: u64,
    started: u64,
    executed: u64,
    start_wait_ns_total: u64,
    start_wait_ns_max: u64,
    max_inactive: u64,
    flushes: u64,
    flushes_waited: u64,
    flush_wait_ns_total: u64,
    flush_wait_ns_max: u64,
    flush_prep_passes: u64,
}

/// One workqueue.
#[derive(Clone, Debug)]
pub struct Workqueue {
    name: String,
    kind: WqKind,
    max_active: u32,
    pwqs: Vec<Pwq>,
    items: Items,
    /// Sequence number of the next queued instance.
    next_seq: u64,
    /// Sequence numbers of the instances in flight (queued or executing).
    in_flight: BTreeSet<u64>,
    /// The flushers that hold a color, oldest first; the front one is
    /// `wq->first_flusher` (R110).
    flushers: VecDeque<Flusher>,
    /// The first flusher was completed (its work is done) and has not yet
    /// run its wake-up-and-cascade phase (R110).
    cascading: bool,
    /// `flusher_overflow`: flushers waiting for a color (R111); their
    /// snapshot is taken when a cascade gives them one.
    overflow: VecDeque<Flusher>,
    /// The next flush color to give (`wq->work_color`, not wrapped).
    next_color: u64,
    next_flush: u64,
    /// CONFIG_HZ when delayed-work timers are on the timer wheel
    /// ([`crate::timer`]); `None`: they fire at exactly `now + delay`.
    timer_hz: Option<u32>,
    n: Counters,
}

/// `wq_clamp_max_active` (R32): 0 means `WQ_DFL_ACTIVE`, and the limit is
/// at most `WQ_MAX_ACTIVE`.
pub fn wq_clamp_max_active(max_active: u32) -> u32 {
    match max_active {
        0 => WQ_DFL_ACTIVE,
        n => n.min(WQ_MAX_ACTIVE),
    }
}

impl Workqueue {
    /// `alloc_workqueue(name, flags, max_active)` (R32), or
    /// `alloc_ordered_workqueue(name)` for [`WqKind::Ordered`], whose
    /// `max_active` is always 1 (R34). A per-CPU workqueue has at least one
    /// CPU.
    pub fn new(name: impl Into<String>, kind: WqKind, max_active: u32) -> Self {
        let (kind, max_active) = match kind {
            WqKind::PerCpu { cpus } => (
                WqKind::PerCpu { cpus: cpus.max(1) },
                wq_clamp_max_active(max_active),
            ),
            WqKind::Unbound => (kind, wq_clamp_max_active(max_active)),
            WqKind::Ordered => (kind, 1),
        };
        let cpus: Vec<CpuId> = match kind {
            WqKind::PerCpu { cpus } => (0..cpus).map(CpuId).collect(),
            WqKind::Unbound | WqKind::Ordered => vec![CpuId::ANY],
        };
        Workqueue {
            name: name.into(),
            kind,
            max_active,
            pwqs: cpus
                .into_iter()
                .map(|cpu| Pwq {
                    cpu,
                    nr_active: 0,
                    inactive: VecDeque::new(),
                    queued: 0,
                    started: 0,
                    executed: 0,
                    max_inactive: 0,
                })
                .collect(),
            items: Items::default(),
            next_seq: 0,
            in_flight: BTreeSet::new(),
            flushers: VecDeque::new(),
            cascading: false,
            overflow: VecDeque::new(),
            next_color: 0,
            next_flush: 0,
            timer_hz: None,
            n: Counters::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> WqKind {
        self.kind
    }

    /// The effective `max_active` of each pwq.
    pub fn max_active(&self) -> u32 {
        self.max_active
    }

    /// `queue_work_on(cpu, wq, work)` (R33); `cpu` is the current CPU (a
    /// per-CPU workqueue queues there; an unbound one ignores it). Returns
    /// false, doing nothing, if the item is already pending (queued, or its
    /// delayed timer is armed). An executing item gets a second run, queued
    /// to the pwq it executes on.
    pub fn queue_work(
        &mut self,
        now: SimTime,
        work: WorkId,
        cpu: CpuId,
        out: &mut Vec<Action>,
    ) -> bool {
        if self.work_pending(work) {
            self.n.queue_noops += 1;
            return false;
        }
        self.__queue_work(now, work, cpu, out);
        true
    }

    /// Delayed-work timers go on the timer wheel of a kernel built with
    /// `hz` (CONFIG_HZ): armed at `jiffies + delay`, they fire at the end
    /// of their wheel bucket ([`crate::timer::fires_at`]). Without this,
    /// a timer fires at exactly `now + delay`.
    pub fn with_timer_wheel(mut self, hz: u32) -> Self {
        self.timer_hz = Some(hz);
        self
    }

    /// When a timer armed now for `delay` fires.
    fn timer_fires(&self, now: SimTime, delay: Dur) -> SimTime {
        match self.timer_hz {
            Some(hz) => crate::timer::fires_at(now, delay, hz),
            None => now + delay,
        }
    }

    /// `queue_delayed_work_on(cpu, wq, dwork, delay)` (R35): with a zero
    /// delay the item is queued now; otherwise it becomes pending with an
    /// armed timer ([`Action::ArmTimer`] at `now + delay`, or the end of its
    /// timer-wheel bucket, [`Self::with_timer_wheel`]), queued on `cpu`
    /// when the timer fires. Returns false, doing nothing, if the item is
    /// already pending.
    pub fn queue_delayed_work(
        &mut self,
        now: SimTime,
        work: WorkId,
        cpu: CpuId,
        delay: Dur,
        out: &mut Vec<Action>,
    ) -> bool {
        if self.work_pending(work) {
            self.n.queue_noops += 1;
            return false;
        }
        let expires = self.timer_fires(now, delay);
        self.__queue_delayed_work(now, work, cpu, delay, expires, out);
        true
    }

    /// `queue_rcu_work(wq, rwork)`: the item becomes pending and is queued
    /// on `cpu` once an RCU grace period of `grace_period` has passed
    /// (`rcu_work_rcufn`). A grace period is not a timer: it ends at
    /// exactly `now + grace_period`, with no jiffies rounding; it is
    /// counted with the timers (`timers_armed`, `timers_fired`). Returns
    /// false, doing nothing, if the item is already pending.
    pub fn queue_rcu_work(
        &mut self,
        now: SimTime,
        work: WorkId,
        cpu: CpuId,
        grace_period: Dur,
        out: &mut Vec<Action>,
    ) -> bool {
        if self.work_pending(work) {
            self.n.queue_noops += 1;
            return false;
        }
        self.__queue_delayed_work(now, work, cpu, grace_period, now + grace_period, out);
        true
    }

    /// `queue_rcu_work(wq, rwork)` with a modelled grace period (R94):
    /// the item becomes pending now and waits for its RCU callback
    /// ([`Self::rcu_work_rcufn`]), which the caller registers with the
    /// grace-period model; no timer is armed. Returns false, doing nothing,
    /// if the item is already pending.
    pub fn queue_rcu_work_modelled(&mut self, work: WorkId, cpu: CpuId) -> bool {
        if self.work_pending(work) {
            self.n.queue_noops += 1;
            return false;
        }
        self.pwq_index(cpu);
        self.items.entry(work).pending = Pending::Timer {
            cpu,
            expires: SimTime::MAX,
        };
        self.n.timers_armed += 1;
        true
    }

    /// `rcu_work_rcufn` (R94): the grace period of an item queued with
    /// [`Self::queue_rcu_work_modelled`] is over and its callback runs:
    /// the item is queued with `__queue_work` on the CPU it was queued
    /// from (the callback runs there). Returns false for an item that is
    /// not waiting for its grace period.
    pub fn rcu_work_rcufn(&mut self, now: SimTime, work: WorkId, out: &mut Vec<Action>) -> bool {
        let Some(item) = self.items.get_mut(&work) else {
            return false;
        };
        let Pending::Timer { cpu, expires } = item.pending else {
            return false;
        };
        if expires != SimTime::MAX {
            return false;
        }
        item.pending = Pending::No;
        self.n.timers_fired += 1;
        self.__queue_work(now, work, cpu, out);
        true
    }

    /// `delayed_work_timer_fn` (R35): the item's timer fired; it is queued
    /// with `__queue_work` on the CPU recorded when the timer was armed.
    /// Returns false, doing nothing, for a dead timer (killed or re-armed
    /// to a later time since).
    pub fn delayed_timer_fired(
        &mut self,
        now: SimTime,
        work: WorkId,
        out: &mut Vec<Action>,
    ) -> bool {
        let Some(item) = self.items.get_mut(&work) else {
            return false;
        };
        let Pending::Timer { cpu, expires } = item.pending else {
            return false;
        };
        if now < expires {
            return false;
        }
        item.pending = Pending::No;
        self.n.timers_fired += 1;
        self.__queue_work(now, work, cpu, out);
        true
    }

    /// `mod_delayed_work_on(cpu, wq, dwork, delay)` (R35): grabs the pending
    /// instance (kills its timer, or takes it off its pwq's worklist or
    /// inactive list, out of flight) and queues it again as
    /// [`Self::queue_delayed_work`] would: with a zero delay at the tail of
    /// the queue with a new flush sequence number (the current color). An
    /// executing, non-pending item gets a second run. Returns whether the
    /// item was pending.
    pub fn mod_delayed_work(
        &mut self,
        now: SimTime,
        work: WorkId,
        cpu: CpuId,
        delay: Dur,
        out: &mut Vec<Action>,
    ) -> bool {
        let new_expiry = self.timer_fires(now, delay);
        // An armed timer moved later: grabbed and armed again, as below,
        // with nothing for the world to do (see `Action::ArmTimer`).
        if let Some(Item {
            pending: Pending::Timer { expires, .. },
            ..
        }) = self.items.get(&work)
        {
            if delay > Dur::ZERO && new_expiry >= *expires {
                self.pwq_index(cpu);
                self.items.entry(work).pending = Pending::Timer {
                    cpu,
                    expires: new_expiry,
                };
                self.n.grabbed += 1;
                self.n.timers_armed += 1;
                return true;
            }
        }
        let was_pending = self.try_to_grab_pending(now, work, out);
        self.__queue_delayed_work(now, work, cpu, delay, new_expiry, out);
        was_pending
    }

    /// `cancel_delayed_work(dwork)` (also `cancel_work`): grabs the pending
    /// instance as [`Self::mod_delayed_work`] does and drops it. An
    /// executing instance is not waited for (the `_sync` variants wait for
    /// [`Self::work_running`] to end; that wait is the world's). Returns
    /// whether the item was pending.
    pub fn cancel_delayed_work(
        &mut self,
        now: SimTime,
        work: WorkId,
        out: &mut Vec<Action>,
    ) -> bool {
        self.try_to_grab_pending(now, work, out)
    }

    /// The work function of an executing item returned (the end of
    /// `process_one_work`, then `pwq_dec_nr_in_flight`, R33): the slot in
    /// `nr_active` frees and the oldest inactive item of the pwq is
    /// activated; flushers whose earlier work is now all done return, in
    /// order; then a second run of the item, queued behind it, starts.
    ///
    /// Panics if the item is not executing.
    pub fn work_done(&mut self, now: SimTime, work: WorkId, out: &mut Vec<Action>) {
        let item = self.items.entry(work);
        let Some(run) = item.running.take() else {
            panic!(
                "workqueue {}: work_done({work:?}) but it is not executing",
                self.name
            );
        };
        // A second run queued behind this one while it executed, active
        // already (not one the activation below makes active and starts).
        let collided = match item.pending {
            Pending::Queued(q) if q.active => Some(q),
            _ => None,
        };
        let pwq = &mut self.pwqs[run.pwq];
        pwq.nr_active -= 1;
        pwq.executed += 1;
        self.n.executed += 1;
        self.pwq_activate_first_inactive(run.pwq, out);
        self.in_flight.remove(&run.seq);
        self.flush_check(now, out);
        // The executing worker goes on with the collided second run.
        if let Some(q) = collided {
            self.start(work, q, out);
        }
    }

    /// `flush_workqueue` (R36): waits until every instance queued before it
    /// on any pwq has completed (active, inactive, timers that fired), but
    /// not items queued later nor armed timers. Returns
    /// [`FlushOutcome::Done`] if no flush is in progress and nothing is in
    /// flight; otherwise the flusher's [`Action::FlushDone`] comes later,
    /// after those of earlier flushers.
    ///
    /// `__flush_workqueue`'s start-to-wait phase (R110, R111): with no
    /// flush in progress the flusher becomes the first flusher; with one
    /// in progress it queues behind it, even if nothing it waits for is in
    /// flight (a first flusher's cascade returns it), or, with 15 colors
    /// in use, on the overflow list without a snapshot. A flusher that
    /// gets [`FlushOutcome::Wait`] must call [`Self::flush_resumed`] when
    /// it runs again.
    pub fn flush_workqueue(&mut self, now: SimTime) -> FlushOutcome {
        self.n.flushes += 1;
        if self.flushers.is_empty() && self.in_flight.is_empty() {
            debug_assert!(self.overflow.is_empty() && !self.cascading);
            return FlushOutcome::Done;
        }
        self.n.flushes_waited += 1;
        let id = FlushId(self.next_flush);
        self.next_flush += 1;
        let mut f = Flusher {
            id,
            snapshot: self.next_seq,
            since: now,
            color: self.next_color,
        };
        if self.colors_in_use() < WORK_NR_COLORS - 1 {
            // `wq->work_color` advances for every flusher that gets a
            // color, whether or not work was queued since the last one.
            self.next_color += 1;
            self.flushers.push_back(f);
        } else {
            f.color = u64::MAX;
            self.overflow.push_back(f);
        }
        FlushOutcome::Wait(id)
    }

    /// The `flush_workqueue_prep_pwqs` passes a flush started now makes
    /// before it waits or returns (R118): one, unless the 15 colours are
    /// all in use and it goes on the overflow list, which makes none.
    pub fn flush_start_passes(&self) -> u32 {
        u32::from(self.colors_in_use() < WORK_NR_COLORS - 1)
    }

    /// Counts `n` passes over the pwqs that a flusher made (R118).
    pub fn count_prep_passes(&mut self, n: u32) {
        self.n.flush_prep_passes += u64::from(n);
    }

    /// Colors between `wq->flush_color` and `wq->work_color`: those of
    /// the flushers that hold one (R111); the flushers of one overflow
    /// share theirs.
    fn colors_in_use(&self) -> u32 {
        match (self.flushers.front(), self.flushers.back()) {
            (Some(first), Some(last)) => (last.color - first.color + 1) as u32,
            _ => 0,
        }
    }

    /// A flusher that waited runs again (its [`Action::FlushDone`] woke
    /// it): `__flush_workqueue`'s wake-up-and-cascade phase (R110). If it
    /// is the first flusher, its color is freed: overflowed flushers get a
    /// color (a snapshot of now, R111), every following flusher whose work
    /// is all done returns, in order, and the first one still waiting
    /// becomes the first flusher, returned later by the work that ends its
    /// color. Any other flusher just returns.
    ///
    /// Returns the passes over the pwqs the cascade made (R118): one for
    /// each colour given to overflowed flushers, and one for each
    /// following flusher it made the first (`flush_workqueue_prep_pwqs`
    /// with the new `flush_color`), whether or not that one then waits.
    /// The kernel makes them under `wq->mutex` before it returns; the
    /// flushers the cascade completes are released at once here, ahead
    /// of the passes between them (a few microseconds each).
    pub fn flush_resumed(&mut self, now: SimTime, id: FlushId, out: &mut Vec<Action>) -> u32 {
        if !self.cascading || self.flushers.front().is_none_or(|f| f.id != id) {
            return 0;
        }
        self.cascading = false;
        let mut armed = self.flushers.pop_front().map_or(u64::MAX, |f| f.color);
        let mut passes = 0;
        loop {
            // One color was freed: the overflowed flushers share the next.
            if !self.overflow.is_empty() {
                let (snapshot, color) = (self.next_seq, self.next_color);
                self.next_color += 1;
                for mut f in self.overflow.drain(..) {
                    f.snapshot = snapshot;
                    f.color = color;
                    self.flushers.push_back(f);
                }
                passes += 1;
            }
            let Some(f) = self.flushers.front().copied() else {
                break;
            };
            // Made the first flusher: its colour's pass. The flushers
            // that share a colour are completed together, by one pass.
            if f.color != armed {
                passes += 1;
                armed = f.color;
            }
            if !self.flush_satisfied(f.snapshot) {
                break;
            }
            // `flush_workqueue_prep_pwqs` found nothing of its color in
            // flight: the cascade completes it and goes on.
            self.flushers.pop_front();
            self.flush_returns(now, f, out);
        }
        passes
    }

    /// No instance queued before `snapshot` is in flight.
    fn flush_satisfied(&self, snapshot: u64) -> bool {
        self.in_flight.first().is_none_or(|&s| s >= snapshot)
    }

    fn flush_returns(&mut self, now: SimTime, f: Flusher, out: &mut Vec<Action>) {
        let wait = now.since(f.since).ns();
        self.n.flush_wait_ns_total += wait;
        self.n.flush_wait_ns_max = self.n.flush_wait_ns_max.max(wait);
        out.push(Action::FlushDone(f.id));
    }

    /// Each waiting flush, in order, with the items executing now that
    /// it waits for (R36: they were queued before it), in id order: it
    /// cannot end before each of them returns. Items still queued are not
    /// listed: which kworker runs them, and when, is the world's. One pass
    /// over the items, for a deadlock report at the end of a run.
    pub fn flushes_wait_on(&self) -> Vec<(FlushId, Vec<WorkId>)> {
        let running: Vec<(u64, WorkId)> = (self.items.iter())
            .filter_map(|(id, it)| it.running.map(|r| (r.seq, id)))
            .collect();
        (self.flushers.iter())
            .map(|fl| {
                let on = (running.iter())
                    .filter(|&&(seq, _)| seq < fl.snapshot)
                    .map(|&(_, id)| id)
                    .collect();
                (fl.id, on)
            })
            .collect()
    }

    /// `work_pending`: the item is queued or its delayed timer is armed.
    pub fn work_pending(&self, work: WorkId) -> bool {
        self.items
            .get(&work)
            .is_some_and(|i| i.pending != Pending::No)
    }

    /// `work_busy()`: the item is pending (timer armed or queued) or
    /// executing.
    pub fn work_busy(&self, work: WorkId) -> bool {
        self.work_pending(work) || self.work_running(work)
    }

    /// The item is executing (started, [`Self::work_done`] not yet called).
    pub fn work_running(&self, work: WorkId) -> bool {
        self.items.get(&work).is_some_and(|i| i.running.is_some())
    }

    /// When the item's armed delayed-work timer fires, if one is armed.
    pub fn timer_expires(&self, work: WorkId) -> Option<SimTime> {
        match self.items.get(&work)?.pending {
            Pending::Timer { expires, .. } => Some(expires),
            _ => None,
        }
    }

    /// Instances in flight (queued to a pwq or executing) on all pwqs.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Flushers waiting (the first flusher until it has cascaded, and
    /// the overflowed ones).
    pub fn flushers_waiting(&self) -> usize {
        self.flushers.len() + self.overflow.len()
    }

    /// `nr_active` of the pwq that a queue on `cpu` uses.
    pub fn nr_active(&self, cpu: CpuId) -> u32 {
        self.pwqs[self.pwq_index(cpu)].nr_active
    }

    /// The inactive list, oldest first, of the pwq that a queue on `cpu`
    /// uses.
    pub fn inactive(&self, cpu: CpuId) -> Vec<WorkId> {
        self.pwqs[self.pwq_index(cpu)]
            .inactive
            .iter()
            .copied()
            .collect()
    }

    /// Per-pwq statistics, in CPU order.
    pub fn pwq_stats(&self) -> Vec<PwqStats> {
        self.pwqs
            .iter()
            .map(|p| PwqStats {
                cpu: p.cpu,
                nr_active: p.nr_active,
                inactive: p.inactive.len(),
                queued: p.queued,
                started: p.started,
                executed: p.executed,
                max_inactive: p.max_inactive,
            })
            .collect()
    }

    /// Counters, name and value, in a fixed order.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let n = &self.n;
        vec![
            ("queued", n.queued),
            ("queue_noops", n.queue_noops),
            ("timers_armed", n.timers_armed),
            ("timers_fired", n.timers_fired),
            ("grabbed", n.grabbed),
            ("started", n.started),
            ("executed", n.executed),
            ("start_wait_ns_total", n.start_wait_ns_total),
            ("start_wait_ns_max", n.start_wait_ns_max),
            ("max_inactive", n.max_inactive),
            ("flushes", n.flushes),
            ("flushes_waited", n.flushes_waited),
            ("flush_wait_ns_total", n.flush_wait_ns_total),
            ("flush_wait_ns_max", n.flush_wait_ns_max),
            ("flush_prep_passes", n.flush_prep_passes),
        ]
    }

    /// The pwq of a queue from `cpu`: the CPU's on a per-CPU workqueue (R33
    /// uses the current CPU), the only one otherwise.
    fn pwq_index(&self, cpu: CpuId) -> usize {
        match self.kind {
            WqKind::PerCpu { cpus } => {
                assert!(
                    cpu.0 < cpus,
                    "workqueue {}: per-CPU queue on {cpu:?}, which is not one of its {cpus} CPUs",
                    self.name
                );
                cpu.index()
            }
            WqKind::Unbound | WqKind::Ordered => 0,
        }
    }

    /// `__queue_delayed_work` (R35) for an item that is not pending: its
    /// timer fires at `expires` (the caller's rounding).
    fn __queue_delayed_work(
        &mut self,
        now: SimTime,
        work: WorkId,
        cpu: CpuId,
        delay: Dur,
        expires: SimTime,
        out: &mut Vec<Action>,
    ) {
        if delay == Dur::ZERO {
            self.__queue_work(now, work, cpu, out);
            return;
        }
        // Check the CPU now, not when the timer fires.
        self.pwq_index(cpu);
        self.items.entry(work).pending = Pending::Timer { cpu, expires };
        self.n.timers_armed += 1;
        out.push(Action::ArmTimer(work, expires));
    }

    /// `__queue_work` (R33) for an item that is not pending: to the pwq it
    /// executes on if it executes (non-reentrancy), else to `cpu`'s; takes
    /// the next flush sequence number (`nr_in_flight[color]++`); active if
    /// the inactive list is empty and `nr_active < max_active`, else at the
    /// tail of the inactive list.
    fn __queue_work(&mut self, now: SimTime, work: WorkId, cpu: CpuId, out: &mut Vec<Action>) {
        let running = self.items.get(&work).and_then(|i| i.running);
        let pwq = match running {
            Some(r) => r.pwq,
            None => self.pwq_index(cpu),
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight.insert(seq);
        self.n.queued += 1;
        let max_active = self.max_active;
        let p = &mut self.pwqs[pwq];
        p.queued += 1;
        let active = p.inactive.is_empty() && p.nr_active < max_active;
        if active {
            p.nr_active += 1;
        } else {
            p.inactive.push_back(work);
            p.max_inactive = p.max_inactive.max(p.inactive.len());
            self.n.max_inactive = self.n.max_inactive.max(p.inactive.len() as u64);
        }
        let q = Queued {
            pwq,
            seq,
            at: now,
            active,
        };
        self.items.entry(work).pending = Pending::Queued(q);
        if active && running.is_none() {
            self.start(work, q, out);
        }
    }

    /// The activated instance goes on its pool's worklist: the world
    /// finds it a worker ([`Action::Start`]); it stays pending.
    fn start(&mut self, work: WorkId, q: Queued, out: &mut Vec<Action>) {
        debug_assert!(q.active && self.items[&work].running.is_none());
        out.push(Action::Start(work, self.pwqs[q.pwq].cpu));
    }

    /// `process_one_work` begins: a worker takes the item off the
    /// worklist, PENDING clears and it executes.
    pub fn process_begins(&mut self, now: SimTime, work: WorkId) {
        let item = self.items.get_mut(&work).expect("a queued item exists");
        let Pending::Queued(q) = item.pending else {
            panic!("workqueue {}: {work:?} begins but is not queued", self.name);
        };
        debug_assert!(q.active && item.running.is_none());
        item.pending = Pending::No;
        item.running = Some(Running {
            pwq: q.pwq,
            seq: q.seq,
        });
        let p = &mut self.pwqs[q.pwq];
        p.started += 1;
        self.n.started += 1;
        let wait = now.since(q.at).ns();
        self.n.start_wait_ns_total += wait;
        self.n.start_wait_ns_max = self.n.start_wait_ns_max.max(wait);
    }

    /// `pwq_activate_first_inactive` (R33): if a slot is free, the oldest
    /// inactive item becomes active and starts, unless its own earlier run
    /// still executes (then it waits on the worklist for it).
    fn pwq_activate_first_inactive(&mut self, pwq: usize, out: &mut Vec<Action>) {
        let p = &mut self.pwqs[pwq];
        if p.nr_active >= self.max_active {
            return;
        }
        let Some(work) = p.inactive.pop_front() else {
            return;
        };
        p.nr_active += 1;
        let item = self.items.get_mut(&work).expect("an inactive item exists");
        let Pending::Queued(mut q) = item.pending else {
            unreachable!("inactive item {work:?} is not queued");
        };
        q.active = true;
        item.pending = Pending::Queued(q);
        if item.running.is_none() {
            self.start(work, q, out);
        }
    }

    /// `try_to_grab_pending` (R35): takes the pending instance, if any: kills
    /// its timer, or takes it off the worklist (freeing its slot, which
    /// activates the oldest inactive item) or the inactive list; then
    /// `nr_in_flight[color]-1`, which may release flushers. Returns whether
    /// the item was pending.
    fn try_to_grab_pending(&mut self, now: SimTime, work: WorkId, out: &mut Vec<Action>) -> bool {
        let Some(item) = self.items.get_mut(&work) else {
            return false;
        };
        let pending = std::mem::replace(&mut item.pending, Pending::No);
        let on_worklist = item.running.is_none();
        match pending {
            Pending::No => return false,
            Pending::Timer { .. } => {}
            Pending::Queued(q) => {
                let p = &mut self.pwqs[q.pwq];
                if q.active {
                    if on_worklist {
                        out.push(Action::Withdraw(work, p.cpu));
                    }
                    p.nr_active -= 1;
                    self.pwq_activate_first_inactive(q.pwq, out);
                } else {
                    let i = p
                        .inactive
                        .iter()
                        .position(|&w| w == work)
                        .expect("an inactive item is on its pwq's inactive list");
                    p.inactive.remove(i);
                }
                self.in_flight.remove(&q.seq);
                self.flush_check(now, out);
            }
        }
        self.n.grabbed += 1;
        true
    }

    /// Returns the first flusher once its earlier instances have all
    /// completed (`pwq_dec_nr_in_flight` completes `wq->first_flusher`
    /// only, R110); the later flushers wait for its cascade
    /// ([`Self::flush_resumed`]).
    fn flush_check(&mut self, now: SimTime, out: &mut Vec<Action>) {
        if self.cascading {
            return;
        }
        let Some(f) = self.flushers.front().copied() else {
            return;
        };
        if self.flush_satisfied(f.snapshot) {
            self.cascading = true;
            self.flush_returns(now, f, out);
        }
    }

    /// Checks the structural invariants (tests only).
    #[cfg(test)]
    fn check_invariants(&self) {
        let mut in_flight = BTreeSet::new();
        let mut active = vec![0u32; self.pwqs.len()];
        for (w, item) in self.items.iter() {
            if let Some(r) = item.running {
                active[r.pwq] += 1;
                assert!(in_flight.insert(r.seq));
            }
            if let Pending::Queued(q) = item.pending {
                assert!(in_flight.insert(q.seq));
                let on_list = self.pwqs[q.pwq].inactive.contains(&w);
                assert_eq!(on_list, !q.active, "{w:?}");
                if q.active {
                    active[q.pwq] += 1;
                }
                if let Some(r) = item.running {
                    assert_eq!(r.pwq, q.pwq, "non-reentrancy");
                    assert!(r.seq < q.seq);
                }
            }
        }
        assert_eq!(in_flight, self.in_flight);
        for (p, &a) in self.pwqs.iter().zip(&active) {
            assert_eq!(p.nr_active, a);
            assert!(p.nr_active <= self.max_active);
            if !p.inactive.is_empty() {
                assert_eq!(p.nr_active, self.max_active);
            }
        }
        // The first flusher waits for work until it is completed; the
        // others may be done and wait for its cascade (R110).
        if let (Some(f), false) = (self.flushers.front(), self.cascading) {
            assert!(!self.flush_satisfied(f.snapshot));
        }
        assert!(!self.cascading || !self.flushers.is_empty());
        let mut last = 0;
        for f in &self.flushers {
            assert!(f.snapshot >= last);
            last = f.snapshot;
        }
        if !self.overflow.is_empty() {
            assert_eq!(self.colors_in_use(), WORK_NR_COLORS - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Scripted micro-scenarios, one rule each (docs/kernel-rules.md
    //! R32-R36, R40/R41): fixed calls in a fixed order, the exact actions
    //! asserted.
    use super::*;

    #[test]
    fn items_span_only_the_ids_seen() {
        let mut items = Items::default();
        items.entry(WorkId::from(100)).running = Some(Running { pwq: 1, seq: 7 });
        items.entry(WorkId::from(103));
        assert_eq!((items.base, items.items.len()), (100, 4));
        items.entry(WorkId::from(98)).running = Some(Running { pwq: 2, seq: 9 });
        assert_eq!((items.base, items.items.len()), (98, 6));
        assert_eq!(items.get(&WorkId::from(97)), None);
        assert_eq!(items.get(&WorkId::from(104)), None);
        assert_eq!(
            items[&WorkId::from(100)].running,
            Some(Running { pwq: 1, seq: 7 })
        );
        let running: Vec<(WorkId, u64)> = (items.iter())
            .filter_map(|(id, it)| it.running.map(|r| (id, r.seq)))
            .collect();
        assert_eq!(running, [(WorkId::from(98), 9), (WorkId::from(100), 7)]);
    }
    use std::collections::BTreeMap;
    use Action::{ArmTimer, FlushDone, Start, Withdraw};

    const MS: u64 = 1_000_000;

    /// A workqueue and a clock.
    struct H {
        wq: Workqueue,
        now: SimTime,
        /// Workers begin started items only when told (`begin`); else a
        /// worker takes each item off the worklist at once.
        lazy: bool,
    }

    fn w(n: u32) -> WorkId {
        WorkId(n)
    }
    fn c(n: u32) -> CpuId {
        CpuId(n)
    }
    fn ms(n: u64) -> SimTime {
        SimTime(n * MS)
    }
    fn none() -> Vec<Action> {
        Vec::new()
    }

    impl H {
        fn new(kind: WqKind, max_active: u32) -> H {
            H {
                wq: Workqueue::new("test", kind, max_active),
                now: SimTime::ZERO,
                lazy: false,
            }
        }
        fn percpu(cpus: u32, max_active: u32) -> H {
            H::new(WqKind::PerCpu { cpus }, max_active)
        }
        fn at_ms(&mut self, n: u64) -> &mut Self {
            self.now = ms(n);
            self
        }
        /// Calls `f` on the queue at the current time with a fresh action
        /// buffer, then checks the invariants.
        fn call<R>(
            &mut self,
            f: impl FnOnce(&mut Workqueue, SimTime, &mut Vec<Action>) -> R,
        ) -> (R, Vec<Action>) {
            let mut out = Vec::new();
            let r = f(&mut self.wq, self.now, &mut out);
            self.wq.check_invariants();
            if !self.lazy {
                for a in &out {
                    if let Start(wk, _) = *a {
                        self.wq.process_begins(self.now, wk);
                        self.wq.check_invariants();
                    }
                }
            }
            (r, out)
        }
        /// A worker takes `work` off the worklist (`process_one_work`).
        fn begin(&mut self, work: u32) {
            self.wq.process_begins(self.now, w(work));
            self.wq.check_invariants();
        }
        fn queue(&mut self, work: u32, cpu: u32) -> (bool, Vec<Action>) {
            self.call(|q, now, out| q.queue_work(now, w(work), c(cpu), out))
        }
        fn delayed(&mut self, work: u32, cpu: u32, delay_ms: u64) -> (bool, Vec<Action>) {
            let d = Dur::from_ms(delay_ms);
            self.call(|q, now, out| q.queue_delayed_work(now, w(work), c(cpu), d, out))
        }
        fn fire(&mut self, work: u32) -> (bool, Vec<Action>) {
            self.call(|q, now, out| q.delayed_timer_fired(now, w(work), out))
        }
        fn modify(&mut self, work: u32, cpu: u32, delay_ms: u64) -> (bool, Vec<Action>) {
            let d = Dur::from_ms(delay_ms);
            self.call(|q, now, out| q.mod_delayed_work(now, w(work), c(cpu), d, out))
        }
        fn cancel(&mut self, work: u32) -> (bool, Vec<Action>) {
            self.call(|q, now, out| q.cancel_delayed_work(now, w(work), out))
        }
        fn done(&mut self, work: u32) -> Vec<Action> {
            self.call(|q, now, out| q.work_done(now, w(work), out)).1
        }
        fn flush(&mut self) -> FlushOutcome {
            let r = self.wq.flush_workqueue(self.now);
            self.wq.check_invariants();
            r
        }
        /// Flusher `id` runs again after its `FlushDone` (R110).
        fn resumed(&mut self, id: u64) -> Vec<Action> {
            self.call(|q, now, out| q.flush_resumed(now, FlushId(id), out))
                .1
        }
        fn counter(&self, name: &str) -> u64 {
            self.wq
                .counters()
                .into_iter()
                .find(|c| c.0 == name)
                .unwrap()
                .1
        }
    }

    #[test]
    fn r32_max_active_defaults_and_clamps() {
        assert_eq!(
            [0, 1, 256, 512, 513, 10_000].map(wq_clamp_max_active),
            [256, 1, 256, 512, 512, 512]
        );
        assert_eq!(
            Workqueue::new("a", WqKind::Unbound, 0).max_active(),
            WQ_DFL_ACTIVE
        );
        assert_eq!(
            Workqueue::new("b", WqKind::PerCpu { cpus: 2 }, 4096).max_active(),
            WQ_MAX_ACTIVE
        );
        assert_eq!(Workqueue::new("c", WqKind::Ordered, 8).max_active(), 1);
    }

    #[test]
    fn r32_max_active_is_per_cpu_pwq() {
        let mut h = H::percpu(2, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(2, 0), (true, none()));
        // CPU 1 has its own pwq and its own limit.
        assert_eq!(h.queue(3, 1), (true, vec![Start(w(3), c(1))]));
        assert_eq!((h.wq.nr_active(c(0)), h.wq.inactive(c(0))), (1, vec![w(2)]));
        assert_eq!((h.wq.nr_active(c(1)), h.wq.inactive(c(1))), (1, vec![]));
        // An unbound workqueue has one pwq: the same calls queue 3 too.
        let mut u = H::new(WqKind::Unbound, 1);
        assert_eq!(u.queue(1, 0), (true, vec![Start(w(1), CpuId::ANY)]));
        assert_eq!(u.queue(2, 0), (true, none()));
        assert_eq!(u.queue(3, 1), (true, none()));
        assert_eq!(u.wq.inactive(c(1)), vec![w(2), w(3)]);
    }

    #[test]
    fn r33_completion_activates_the_oldest_inactive_item() {
        let mut h = H::percpu(1, 2);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(2, 0), (true, vec![Start(w(2), c(0))]));
        for n in 3..=5 {
            assert_eq!(h.queue(n, 0), (true, none()));
        }
        assert_eq!(h.wq.inactive(c(0)), vec![w(3), w(4), w(5)]);
        assert_eq!(h.at_ms(1).done(2), vec![Start(w(3), c(0))]);
        assert_eq!(h.at_ms(2).done(1), vec![Start(w(4), c(0))]);
        assert_eq!(h.at_ms(3).done(4), vec![Start(w(5), c(0))]);
        assert_eq!(h.done(3), none());
        assert_eq!(h.done(5), none());
        assert_eq!(h.wq.nr_active(c(0)), 0);
        assert_eq!(h.counter("max_inactive"), 3);
        // Item 5 waited from 0 to 3 ms for a slot.
        assert_eq!(h.counter("start_wait_ns_max"), 3 * MS);
        let s = h.wq.pwq_stats()[0];
        assert_eq!(
            (s.queued, s.started, s.executed, s.max_inactive),
            (5, 5, 5, 3)
        );
    }

    #[test]
    fn r33_pending_item_is_not_queued_twice() {
        let mut h = H::percpu(2, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(2, 0), (true, none()));
        // 2 is pending (inactive): queueing it again, from any CPU, is a no-op.
        assert_eq!(h.queue(2, 0), (false, none()));
        assert_eq!(h.queue(2, 1), (false, none()));
        assert_eq!(h.wq.inactive(c(0)), vec![w(2)]);
        // An armed delayed timer is pending too.
        assert_eq!(
            h.delayed(3, 1, 1000),
            (true, vec![ArmTimer(w(3), ms(1000))])
        );
        assert_eq!(h.queue(3, 1), (false, none()));
        assert_eq!(h.delayed(3, 1, 10), (false, none()));
        assert_eq!(h.wq.timer_expires(w(3)), Some(ms(1000)));
        assert_eq!((h.counter("queued"), h.counter("queue_noops")), (2, 4));
    }

    #[test]
    fn r33_running_item_can_be_queued_again() {
        // max_active 2: the second run is active at once but waits for the
        // first on the pwq it executes on (CPU 0), even when queued from CPU 1.
        let mut h = H::percpu(2, 2);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert!(h.wq.work_running(w(1)) && !h.wq.work_pending(w(1)));
        assert_eq!(h.queue(1, 1), (true, none()));
        assert!(h.wq.work_running(w(1)) && h.wq.work_pending(w(1)));
        assert_eq!((h.wq.nr_active(c(0)), h.wq.nr_active(c(1))), (2, 0));
        assert_eq!(h.queue(1, 1), (false, none()));
        assert_eq!(h.done(1), vec![Start(w(1), c(0))]);
        assert_eq!(h.done(1), none());
        // max_active 1: the second run is inactive behind its first.
        let mut h = H::percpu(2, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(1, 1), (true, none()));
        assert_eq!(h.wq.inactive(c(0)), vec![w(1)]);
        assert_eq!(h.done(1), vec![Start(w(1), c(0))]);
        assert_eq!(h.done(1), none());
        // Not executing any more: it goes to the CPU that queues it.
        assert_eq!(h.queue(1, 1), (true, vec![Start(w(1), c(1))]));
    }

    #[test]
    fn r33_r35_an_item_on_the_worklist_stays_pending_until_a_worker_begins_it() {
        // Activated, not yet taken by a worker: still PENDING on the
        // worklist (process_one_work clears it), so queue_work is a no-op.
        let mut h = H::percpu(2, 1);
        h.lazy = true;
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert!(h.wq.work_pending(w(1)) && !h.wq.work_running(w(1)));
        assert_eq!(h.queue(1, 0), (false, none()));
        // A flush taken now waits for it. mod_delayed_work(0) takes it off
        // the worklist (R35: nr_in_flight-1, which completes the flush,
        // R36) and queues it at the tail with the current color.
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(0)));
        assert_eq!(
            h.modify(1, 0, 0),
            (
                true,
                vec![
                    Withdraw(w(1), c(0)),
                    FlushDone(FlushId(0)),
                    Start(w(1), c(0))
                ]
            )
        );
        assert_eq!(h.counter("grabbed"), 1);
        // A worker takes it: it executes, no longer pending; it runs once.
        h.begin(1);
        assert!(!h.wq.work_pending(w(1)) && h.wq.work_running(w(1)));
        assert_eq!(h.done(1), none());
        assert_eq!((h.counter("started"), h.counter("executed")), (1, 1));
    }

    #[test]
    fn r34_ordered_workqueue_runs_one_at_a_time_in_fifo_order() {
        let mut h = H::new(WqKind::Ordered, 0);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), CpuId::ANY)]));
        assert_eq!(h.queue(2, 1), (true, none()));
        assert_eq!(h.queue(3, 0), (true, none()));
        assert_eq!(h.queue(4, 3), (true, none()));
        assert_eq!(h.done(1), vec![Start(w(2), CpuId::ANY)]);
        assert_eq!(h.done(2), vec![Start(w(3), CpuId::ANY)]);
        assert_eq!(h.done(3), vec![Start(w(4), CpuId::ANY)]);
        assert_eq!(h.done(4), none());
    }

    #[test]
    fn r35_delayed_work_is_queued_when_its_timer_fires() {
        let mut h = H::percpu(2, 1);
        // A zero delay queues now.
        assert_eq!(h.delayed(1, 0, 0), (true, vec![Start(w(1), c(0))]));
        // Armed on CPU 1 for 1 s: pending, but not in flight.
        assert_eq!(
            h.delayed(2, 1, 1000),
            (true, vec![ArmTimer(w(2), ms(1000))])
        );
        assert!(h.wq.work_pending(w(2)));
        assert_eq!(h.wq.in_flight(), 1);
        // A fire before the expiry is a dead timer.
        assert_eq!(h.at_ms(999).fire(2), (false, none()));
        // It fires on the CPU that armed it.
        assert_eq!(h.at_ms(1000).fire(2), (true, vec![Start(w(2), c(1))]));
        assert_eq!(h.fire(2), (false, none()));
        // Fired behind a busy CPU 0: inactive there.
        assert_eq!(h.delayed(3, 0, 5), (true, vec![ArmTimer(w(3), ms(1005))]));
        assert_eq!(h.at_ms(1005).fire(3), (true, none()));
        assert_eq!(h.wq.inactive(c(0)), vec![w(3)]);
        assert_eq!(h.done(1), vec![Start(w(3), c(0))]);
        assert_eq!(
            (h.counter("timers_armed"), h.counter("timers_fired")),
            (2, 2)
        );
    }

    #[test]
    fn r35_mod_delayed_work_with_zero_delay_moves_a_pending_item_to_the_tail() {
        let mut h = H::percpu(1, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(2, 0), (true, none()));
        assert_eq!(h.queue(3, 0), (true, none()));
        // A flush taken now waits for 1, 2 and 3.
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(0)));
        // 2 was pending: it moves behind 3, with the current color, so the
        // flush no longer waits for it.
        assert_eq!(h.modify(2, 0, 0), (true, none()));
        assert_eq!(h.wq.inactive(c(0)), vec![w(3), w(2)]);
        assert_eq!(h.done(1), vec![Start(w(3), c(0))]);
        assert_eq!(h.done(3), vec![Start(w(2), c(0)), FlushDone(FlushId(0))]);
        // Executing and not pending: false, and a second run is queued.
        assert_eq!(h.modify(2, 0, 0), (false, none()));
        assert_eq!(h.done(2), vec![Start(w(2), c(0))]);
        assert_eq!(h.done(2), none());
        // Idle and not pending: false, queued now.
        assert_eq!(h.modify(4, 0, 0), (false, vec![Start(w(4), c(0))]));
        assert_eq!(h.counter("grabbed"), 1);
    }

    #[test]
    fn r35_mod_delayed_work_rearms_an_armed_timer() {
        let mut h = H::percpu(2, 1);
        assert_eq!(
            h.delayed(1, 0, 1000),
            (true, vec![ArmTimer(w(1), ms(1000))])
        );
        // Re-armed later while armed: nothing for the world to do; the
        // first timer still fires, finds it re-armed, and moves.
        assert_eq!(h.at_ms(500).modify(1, 1, 1000), (true, none()));
        assert_eq!(h.wq.timer_expires(w(1)), Some(ms(1500)));
        assert_eq!(h.counter("grabbed"), 1);
        assert_eq!(h.counter("timers_armed"), 2);
        assert_eq!(h.at_ms(1000).fire(1), (false, none()));
        // The new one queues on the CPU that re-armed it.
        assert_eq!(h.at_ms(1500).fire(1), (true, vec![Start(w(1), c(1))]));
        // An armed timer modified to zero queues now.
        assert_eq!(
            h.delayed(2, 0, 1000),
            (true, vec![ArmTimer(w(2), ms(2500))])
        );
        assert_eq!(
            h.at_ms(1600).modify(2, 0, 0),
            (true, vec![Start(w(2), c(0))])
        );
        assert_eq!(h.at_ms(2500).fire(2), (false, none()));
        // A queued (inactive) item modified to a delay leaves its pwq and
        // waits for its timer.
        assert_eq!(h.queue(3, 0), (true, none()));
        assert_eq!(h.modify(3, 0, 10), (true, vec![ArmTimer(w(3), ms(2510))]));
        assert_eq!(h.wq.inactive(c(0)), vec![]);
        assert_eq!(h.done(2), none());
    }

    #[test]
    fn r35_r62_timers_on_the_wheel_fire_at_their_bucket_and_rcu_work_does_not_round() {
        // HZ 1000. A 1 s timer armed at 10.5 ms (jiffy 10) expires at
        // jiffy 1010: level 2, 64-jiffy buckets, so it fires at 1024 ms.
        let mut h = H::percpu(1, 1);
        h.wq = Workqueue::new("test", WqKind::PerCpu { cpus: 1 }, 1).with_timer_wheel(1000);
        h.now = SimTime(10_500_000);
        assert_eq!(
            h.delayed(1, 0, 1000),
            (true, vec![ArmTimer(w(1), ms(1024))])
        );
        // Re-armed 10 ms later (expires 1020): the same bucket.
        h.now = SimTime(20_500_000);
        assert_eq!(h.modify(1, 0, 1000), (true, none()));
        assert_eq!(h.wq.timer_expires(w(1)), Some(ms(1024)));
        // Re-armed past the boundary (expires 1040): the next bucket.
        h.now = SimTime(40_000_000);
        assert_eq!(h.modify(1, 0, 1000), (true, none()));
        assert_eq!(h.wq.timer_expires(w(1)), Some(ms(1088)));
        // A 10 ms timer (level 0) fires one jiffy after jiffies + 10.
        assert_eq!(h.delayed(2, 0, 10), (true, vec![ArmTimer(w(2), ms(51))]));
        // An rcu_work's grace period is not rounded.
        let gp = Dur(1_234_567);
        let (queued, out) = h.call(|q, now, out| q.queue_rcu_work(now, w(3), c(0), gp, out));
        assert!(queued);
        assert_eq!(out, vec![ArmTimer(w(3), SimTime(41_234_567))]);
        // Pending until it is queued: a second queue_rcu_work is a no-op.
        let (queued, _) = h.call(|q, now, out| q.queue_rcu_work(now, w(3), c(0), gp, out));
        assert!(!queued);
        h.now = SimTime(41_234_567);
        assert_eq!(h.fire(3), (true, vec![Start(w(3), c(0))]));
    }

    #[test]
    fn r94_a_modelled_rcu_work_is_pending_until_its_callback_queues_it() {
        let mut h = H::percpu(2, 1);
        // Pending at once, no timer armed; a second queue is a no-op.
        assert!(h.wq.queue_rcu_work_modelled(w(4), c(1)));
        assert!(h.wq.work_pending(w(4)));
        assert!(!h.wq.queue_rcu_work_modelled(w(4), c(1)));
        // A flush does not wait for it (R36).
        assert_eq!(h.flush(), FlushOutcome::Done);
        // A timer event for it is dead; its callback queues it on its CPU.
        assert_eq!(h.fire(4), (false, none()));
        let (queued, out) = h.call(|q, now, out| q.rcu_work_rcufn(now, w(4), out));
        assert!(queued);
        assert_eq!(out, vec![Start(w(4), c(1))]);
        let (again, _) = h.call(|q, now, out| q.rcu_work_rcufn(now, w(4), out));
        assert!(!again);
    }

    #[test]
    fn r35_cancel_delayed_work_drops_the_pending_instance_only() {
        let mut h = H::percpu(1, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(2, 0), (true, none()));
        assert_eq!(h.delayed(3, 0, 10), (true, vec![ArmTimer(w(3), ms(10))]));
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(0)));
        assert_eq!(h.cancel(3), (true, none()));
        assert_eq!(h.at_ms(10).fire(3), (false, none()));
        // The executing instance is not cancelled.
        assert_eq!(h.cancel(1), (false, none()));
        assert!(h.wq.work_running(w(1)));
        assert_eq!(h.done(1), vec![Start(w(2), c(0))]);
        // Cancelling the last instance the flush waits for releases it.
        assert_eq!(h.queue(4, 0), (true, none()));
        assert_eq!(h.done(2), vec![Start(w(4), c(0)), FlushDone(FlushId(0))]);
        // Grabbing an activated second run frees its slot.
        let mut h = H::percpu(1, 2);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(1, 0), (true, none()));
        assert_eq!(h.queue(2, 0), (true, none()));
        assert_eq!(h.cancel(1), (true, vec![Start(w(2), c(0))]));
        assert_eq!(h.done(1), none());
        assert_eq!(h.done(2), none());
        assert_eq!(h.cancel(1), (false, none()));
    }

    #[test]
    fn r36_flush_waits_for_everything_queued_before_it_on_all_cpus() {
        let mut h = H::percpu(2, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(2, 0), (true, none()));
        assert_eq!(h.queue(3, 1), (true, vec![Start(w(3), c(1))]));
        // A delayed item whose timer fired before the flush counts.
        assert_eq!(h.delayed(4, 1, 5), (true, vec![ArmTimer(w(4), ms(5))]));
        assert_eq!(h.at_ms(5).fire(4), (true, none()));
        assert_eq!(h.at_ms(6).flush(), FlushOutcome::Wait(FlushId(0)));
        assert_eq!(h.at_ms(7).done(1), vec![Start(w(2), c(0))]);
        assert_eq!(h.done(3), vec![Start(w(4), c(1))]);
        assert_eq!(h.done(2), none());
        assert_eq!(h.at_ms(9).done(4), vec![FlushDone(FlushId(0))]);
        assert_eq!(h.counter("flush_wait_ns_max"), 3 * MS);
    }

    #[test]
    fn r36_flush_ignores_later_items_and_unfired_timers() {
        let mut h = H::percpu(2, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(
            h.delayed(2, 0, 1000),
            (true, vec![ArmTimer(w(2), ms(1000))])
        );
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(0)));
        // Later items, even one queued behind the flushed one and one that
        // keeps being requeued, do not hold the flush (no livelock).
        assert_eq!(h.queue(3, 0), (true, none()));
        assert_eq!(h.queue(4, 1), (true, vec![Start(w(4), c(1))]));
        assert_eq!(h.done(4), none());
        assert_eq!(h.queue(4, 1), (true, vec![Start(w(4), c(1))]));
        assert_eq!(h.done(1), vec![Start(w(3), c(0)), FlushDone(FlushId(0))]);
        // The timer is still armed; when it fires, the item is new work.
        assert_eq!(h.wq.timer_expires(w(2)), Some(ms(1000)));
        assert_eq!(h.at_ms(1000).fire(2), (true, none()));
        assert_eq!(h.wq.inactive(c(0)), vec![w(2)]);
    }

    #[test]
    fn r36_flush_with_nothing_in_flight_completes_at_once() {
        let mut h = H::percpu(2, 1);
        assert_eq!(h.flush(), FlushOutcome::Done);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.done(1), none());
        assert_eq!(h.flush(), FlushOutcome::Done);
        // An armed timer is not in flight.
        assert_eq!(
            h.delayed(2, 1, 1000),
            (true, vec![ArmTimer(w(2), ms(1000))])
        );
        assert_eq!(h.flush(), FlushOutcome::Done);
        assert_eq!((h.counter("flushes"), h.counter("flushes_waited")), (3, 0));
    }

    #[test]
    fn r36_a_flush_waits_on_the_running_items_queued_before_it() {
        // What a deadlock report follows from a flusher: the items it
        // waits for that are executing now, not those queued after it.
        let mut h = H::percpu(2, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(2, 0), (true, none()));
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(0)));
        assert_eq!(h.queue(3, 1), (true, vec![Start(w(3), c(1))]));
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(1)));
        assert_eq!(
            h.wq.flushes_wait_on(),
            vec![(FlushId(0), vec![w(1)]), (FlushId(1), vec![w(1), w(3)])]
        );
        assert_eq!(h.done(1), vec![Start(w(2), c(0))]);
        assert_eq!(
            h.wq.flushes_wait_on(),
            vec![(FlushId(0), vec![w(2)]), (FlushId(1), vec![w(2), w(3)])]
        );
        assert_eq!(h.done(2), vec![FlushDone(FlushId(0))]);
        // Flush 0 keeps its place until it runs its cascade (R110).
        assert_eq!(
            h.wq.flushes_wait_on(),
            vec![(FlushId(0), vec![]), (FlushId(1), vec![w(3)])]
        );
        assert_eq!(h.resumed(0), none());
        assert_eq!(h.wq.flushes_wait_on(), vec![(FlushId(1), vec![w(3)])]);
        assert_eq!(h.done(3), vec![FlushDone(FlushId(1))]);
        assert_eq!(h.resumed(1), none());
        assert_eq!(h.wq.flushes_wait_on(), vec![]);
    }

    #[test]
    fn r36_flushers_complete_in_order() {
        let mut h = H::percpu(2, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(0)));
        assert_eq!(h.queue(2, 1), (true, vec![Start(w(2), c(1))]));
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(1)));
        // Nothing new since flush 1, yet flush 2 waits behind it.
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(2)));
        assert_eq!(h.queue(3, 1), (true, none()));
        // 2 completes first; flush 1 still waits for 1, as flush 0 does.
        assert_eq!(h.done(2), vec![Start(w(3), c(1))]);
        assert_eq!(h.wq.flushers_waiting(), 3);
        // 1 completes the first flusher only (R110); its cascade returns
        // the other two.
        assert_eq!(h.done(1), vec![FlushDone(FlushId(0))]);
        assert_eq!(h.wq.flushers_waiting(), 3);
        assert_eq!(
            h.resumed(0),
            vec![FlushDone(FlushId(1)), FlushDone(FlushId(2))]
        );
        assert_eq!(h.wq.flushers_waiting(), 0);
        // Flushers that the cascade returned have nothing to cascade.
        assert_eq!(h.resumed(1), none());
        assert_eq!(h.resumed(2), none());
        // 3 came after all three flushes.
        assert_eq!(h.done(3), none());
    }

    #[test]
    fn r110_only_the_first_flusher_is_woken_and_its_cascade_returns_the_rest() {
        let mut h = H::percpu(2, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.at_ms(1).flush(), FlushOutcome::Wait(FlushId(0)));
        assert_eq!(h.queue(2, 1), (true, vec![Start(w(2), c(1))]));
        assert_eq!(h.at_ms(2).flush(), FlushOutcome::Wait(FlushId(1)));
        assert_eq!(h.queue(3, 1), (true, none()));
        assert_eq!(h.at_ms(3).flush(), FlushOutcome::Wait(FlushId(2)));
        // Flush 1's color ends first: nobody is woken (it is not the
        // first flusher).
        assert_eq!(h.at_ms(4).done(2), vec![Start(w(3), c(1))]);
        // Flush 0's color ends: pwq_dec_nr_in_flight wakes flush 0 only.
        assert_eq!(h.at_ms(5).done(1), vec![FlushDone(FlushId(0))]);
        // A flush made now queues behind the first flusher, although
        // nothing it waits for is in flight on CPU 0 and 3 is on CPU 1.
        assert_eq!(h.at_ms(6).flush(), FlushOutcome::Wait(FlushId(3)));
        // Flush 0 runs at 7 ms: its cascade returns flush 1 (its work is
        // done) and arms flush 2, which waits for 3.
        assert_eq!(h.at_ms(7).resumed(0), vec![FlushDone(FlushId(1))]);
        assert_eq!(h.wq.flushers_waiting(), 2);
        // Flush 2's color ends: flush 2 is now the first flusher, woken.
        assert_eq!(h.at_ms(8).done(3), vec![FlushDone(FlushId(2))]);
        // Flush 3 waits for flush 2 to run, at 10 ms.
        assert_eq!(h.at_ms(10).resumed(2), vec![FlushDone(FlushId(3))]);
        assert_eq!(h.resumed(3), none());
        assert_eq!(h.wq.flushers_waiting(), 0);
        // Waits: flush 0 from 1 to 5 ms, 1 from 2 to 7 (its own work was
        // done at 4), 2 from 3 to 8, 3 from 6 to 10.
        assert_eq!(h.counter("flush_wait_ns_total"), 18 * MS);
        assert_eq!(h.counter("flush_wait_ns_max"), 5 * MS);
        assert_eq!(h.flush(), FlushOutcome::Done);
    }

    #[test]
    fn r111_every_flusher_takes_a_color_even_with_nothing_queued_between() {
        let mut h = H::percpu(1, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        // Fifteen flushes back to back, nothing queued between them: each
        // advances the work color, so the sixteenth finds none free.
        for n in 0..15u64 {
            assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(n)));
        }
        assert_eq!(h.wq.colors_in_use(), 15);
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(15)));
        assert_eq!(h.wq.overflow.len(), 1);
        // Item 2 is queued before the overflowed flush gets its color.
        assert_eq!(h.queue(2, 0), (true, none()));
        assert_eq!(h.done(1), vec![Start(w(2), c(0)), FlushDone(FlushId(0))]);
        // The first flusher's cascade returns 1-14 (their work is done)
        // and gives flush 15 a color: it waits for item 2.
        let back: Vec<Action> = (1..15).map(|n| FlushDone(FlushId(n))).collect();
        assert_eq!(h.resumed(0), back);
        assert_eq!(h.wq.flushers_waiting(), 1);
        assert_eq!(h.done(2), vec![FlushDone(FlushId(15))]);
        assert_eq!(h.resumed(15), none());
        assert_eq!(h.wq.flushers_waiting(), 0);
    }

    /// R118: a flusher makes one pass over the pwqs when it takes a
    /// colour, none when it overflows; the first flusher's cascade makes
    /// one for the overflowed flushers' colour and one for each colour it
    /// arms, 16 here: the overflow's, flushes 1-14's and flush 15's.
    #[test]
    fn r118_a_cascade_makes_one_pass_per_colour_it_arms_and_one_for_the_overflow() {
        let mut h = H::percpu(1, 1);
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        for n in 0..15u64 {
            assert_eq!(h.wq.flush_start_passes(), 1);
            assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(n)));
        }
        assert_eq!(h.wq.flush_start_passes(), 0);
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(15)));
        assert_eq!(h.queue(2, 0), (true, none()));
        assert_eq!(h.done(1), vec![Start(w(2), c(0)), FlushDone(FlushId(0))]);
        let (passes, back) = h.call(|q, now, out| q.flush_resumed(now, FlushId(0), out));
        assert_eq!(back.len(), 14);
        assert_eq!(passes, 16);
        // A flusher that is not the first makes no pass when it runs again.
        assert_eq!(
            h.call(|q, now, out| q.flush_resumed(now, FlushId(3), out))
                .0,
            0
        );
        assert_eq!(h.done(2), vec![FlushDone(FlushId(15))]);
        // The last first flusher arms nothing: no pass.
        assert_eq!(
            h.call(|q, now, out| q.flush_resumed(now, FlushId(15), out))
                .0,
            0
        );
        h.wq.count_prep_passes(16 + 15);
        assert_eq!(h.counter("flush_prep_passes"), 31);
    }

    #[test]
    fn r111_flushers_beyond_15_colors_overflow_and_take_a_later_snapshot() {
        let mut h = H::percpu(1, 1);
        // Item n+1 is queued before flush n; item 1 runs, the rest wait.
        for n in 0..15u32 {
            let started = if n == 0 {
                vec![Start(w(1), c(0))]
            } else {
                none()
            };
            assert_eq!(h.queue(n + 1, 0), (true, started));
            assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(u64::from(n))));
        }
        // Fifteen colors are in use: flushes 15 and 16 overflow.
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(15)));
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(16)));
        assert_eq!(h.wq.flushers_waiting(), 17);
        // Item 16, queued after the overflowed flushes were made, but
        // before they get a color.
        assert_eq!(h.queue(16, 0), (true, none()));
        assert_eq!(h.done(1), vec![Start(w(2), c(0)), FlushDone(FlushId(0))]);
        // Flush 0's cascade frees a color: flushes 15 and 16 take one
        // now, so they wait for item 16 as well.
        assert_eq!(h.resumed(0), none());
        for n in 2..=15u32 {
            assert_eq!(
                h.done(n),
                vec![Start(w(n + 1), c(0)), FlushDone(FlushId(u64::from(n - 1)))]
            );
            assert_eq!(h.resumed(u64::from(n - 1)), none());
        }
        // Item 16 ends: flush 15 (the first) is woken, and its cascade
        // returns flush 16, which shares its color.
        assert_eq!(h.done(16), vec![FlushDone(FlushId(15))]);
        assert_eq!(h.resumed(15), vec![FlushDone(FlushId(16))]);
        assert_eq!(h.wq.flushers_waiting(), 0);
    }

    #[test]
    fn r40_flush_waits_for_a_backlog_on_a_max_active_1_per_cpu_queue() {
        // R41: cgroup_pidlist_destroy_wq = alloc_workqueue(name, 0, 1).
        const K: u32 = 5;
        let mut h = H {
            wq: Workqueue::new("cgroup_pidlist_destroy", WqKind::PerCpu { cpus: 4 }, 1),
            now: SimTime::ZERO,
            lazy: false,
        };
        let delay = CGROUP_PIDLIST_DESTROY_DELAY.ns() / MS;
        // Pidlists 1..K of other cgroups were read on CPU 2; their destroy
        // timers fire there together: one runs, K-1 wait.
        for n in 1..=K {
            assert_eq!(
                h.delayed(n, 2, delay),
                (true, vec![ArmTimer(w(n), ms(delay))])
            );
        }
        // Pidlist 100 of yet another cgroup has an armed timer on CPU 2.
        assert_eq!(
            h.at_ms(10).delayed(100, 2, delay),
            (true, vec![ArmTimer(w(100), ms(10 + delay))])
        );
        assert_eq!(h.at_ms(delay).fire(1), (true, vec![Start(w(1), c(2))]));
        for n in 2..=K {
            assert_eq!(h.fire(n), (true, none()));
        }
        // R40: css_free of the removed cgroup runs elsewhere, finds nothing
        // of its own pending, and flushes the whole workqueue.
        assert_eq!(h.at_ms(delay + 1).flush(), FlushOutcome::Wait(FlushId(0)));
        for n in 1..K {
            assert_eq!(
                h.at_ms(delay + 1 + u64::from(n)).done(n),
                vec![Start(w(n + 1), c(2))]
            );
        }
        assert_eq!(h.wq.flushers_waiting(), 1);
        assert_eq!(
            h.at_ms(delay + 1 + u64::from(K)).done(K),
            vec![FlushDone(FlushId(0))]
        );
        // The armed timer was not waited for.
        assert_eq!(h.wq.timer_expires(w(100)), Some(ms(10 + delay)));
        assert_eq!(h.counter("flush_wait_ns_max"), u64::from(K) * MS);
        assert_eq!(h.wq.pwq_stats()[2].max_inactive, K as usize - 1);
    }

    #[test]
    fn r40_own_pidlist_modified_to_zero_delay_is_flushed_behind_the_backlog() {
        let mut h = H::percpu(2, 1);
        // Other cgroups' fired items on CPU 0, own pidlist armed on CPU 0.
        assert_eq!(h.queue(1, 0), (true, vec![Start(w(1), c(0))]));
        assert_eq!(h.queue(2, 0), (true, none()));
        assert_eq!(
            h.delayed(9, 0, 1000),
            (true, vec![ArmTimer(w(9), ms(1000))])
        );
        // Under pidlist_mutex: mod_delayed_work(wq, own, 0) queues at the tail.
        assert_eq!(h.modify(9, 0, 0), (true, none()));
        assert_eq!(h.flush(), FlushOutcome::Wait(FlushId(0)));
        assert_eq!(h.done(1), vec![Start(w(2), c(0))]);
        assert_eq!(h.done(2), vec![Start(w(9), c(0))]);
        assert_eq!(h.done(9), vec![FlushDone(FlushId(0))]);
    }

    /// A deterministic random script of every operation; the invariants are
    /// checked after each call. Flushers must come back in order, not
    /// before every item executing when they were taken has returned, and
    /// all of them once everything has run.
    #[test]
    fn invariants_hold_under_a_deterministic_random_script() {
        for (kind, max_active) in [
            (WqKind::PerCpu { cpus: 3 }, 1),
            (WqKind::PerCpu { cpus: 2 }, 2),
            (WqKind::Unbound, 3),
            (WqKind::Ordered, 0),
        ] {
            let mut h = H::new(kind, max_active);
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            let mut rnd = |n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % n
            };
            let cpus = match kind {
                WqKind::PerCpu { cpus } => cpus,
                _ => 4,
            };
            let mut running: Vec<u32> = Vec::new();
            let mut timers: Vec<(SimTime, u32)> = Vec::new();
            let mut done_count = BTreeMap::<u32, u64>::new();
            // Per waiting flusher: (item, completions it needs) for every
            // item executing when it was taken.
            let mut flushes: VecDeque<(FlushId, Vec<(u32, u64)>)> = VecDeque::new();
            let mut t = 0;
            let step = |h: &mut H,
                        acts: Vec<Action>,
                        running: &mut Vec<u32>,
                        timers: &mut Vec<(SimTime, u32)>,
                        flushes: &mut VecDeque<(FlushId, Vec<(u32, u64)>)>,
                        done_count: &BTreeMap<u32, u64>| {
                let mut acts = acts;
                while !acts.is_empty() {
                    let mut cascade = Vec::new();
                    for a in acts {
                        match a {
                            Start(wk, cpu) => {
                                assert!(!running.contains(&wk.0), "non-reentrancy");
                                assert_eq!(
                                    cpu == CpuId::ANY,
                                    !matches!(h.wq.kind(), WqKind::PerCpu { .. })
                                );
                                running.push(wk.0);
                            }
                            ArmTimer(wk, at) => timers.push((at, wk.0)),
                            Withdraw(..) => unreachable!("workers begin items at once here"),
                            FlushDone(id) => {
                                let (first, needs) = flushes.pop_front().expect("a flusher waits");
                                assert_eq!(first, id, "flushers complete in order");
                                for (wk, need) in needs {
                                    assert!(done_count.get(&wk).copied().unwrap_or(0) >= need);
                                }
                                // The flusher runs at once: its cascade (R110).
                                cascade.push(id);
                            }
                        }
                    }
                    acts = Vec::new();
                    for id in cascade {
                        acts.extend(h.resumed(id.0));
                    }
                }
            };
            for _ in 0..4000 {
                t += rnd(3);
                h.now = ms(t);
                let work = rnd(8) as u32;
                let cpu = rnd(u64::from(cpus)) as u32;
                let acts = match rnd(8) {
                    0 | 1 => h.queue(work, cpu).1,
                    2 => {
                        let d = rnd(4);
                        h.delayed(work, cpu, d).1
                    }
                    3 => {
                        let d = rnd(3);
                        h.modify(work, cpu, d).1
                    }
                    4 => h.cancel(work).1,
                    5 => match timers.iter().position(|&(at, _)| at <= h.now) {
                        Some(i) => {
                            let (_, wk) = timers.remove(i);
                            h.fire(wk).1
                        }
                        None => none(),
                    },
                    6 => {
                        let idle = h.wq.in_flight() == 0;
                        match h.flush() {
                            FlushOutcome::Wait(id) => {
                                let needs = running
                                    .iter()
                                    .map(|&wk| (wk, done_count.get(&wk).copied().unwrap_or(0) + 1))
                                    .collect();
                                flushes.push_back((id, needs));
                            }
                            FlushOutcome::Done => assert!(idle),
                        }
                        none()
                    }
                    _ if running.is_empty() => none(),
                    _ => {
                        let wk = running.remove(rnd(running.len() as u64) as usize);
                        *done_count.entry(wk).or_default() += 1;
                        h.done(wk)
                    }
                };
                step(
                    &mut h,
                    acts,
                    &mut running,
                    &mut timers,
                    &mut flushes,
                    &done_count,
                );
            }
            // Run everything queued to the end, firing no timer: every
            // flusher comes back.
            while let Some(wk) = running.pop() {
                *done_count.entry(wk).or_default() += 1;
                let acts = h.done(wk);
                step(
                    &mut h,
                    acts,
                    &mut running,
                    &mut timers,
                    &mut flushes,
                    &done_count,
                );
            }
            assert!(flushes.is_empty());
            assert_eq!(h.wq.in_flight(), 0);
            assert_eq!(h.counter("started"), h.counter("executed"));
            assert!(h.counter("flushes_waited") > 10 && h.counter("grabbed") > 10);
        }
    }
}
