//! The Linux `rw_semaphore` (policy `linux`), rule by rule from
//! docs/kernel-rules.md R1-R24 (kernel/locking/rwsem.c, !PREEMPT_RT).
//!
//! State, as the kernel keeps it:
//! - the count word (R1): `writer_locked`, the number of `readers` that own
//!   the lock (readers granted in a batch own it before they run, R18), the
//!   `handoff` flag; WAITERS is "the wait list is not empty";
//! - the owner word (R2): the writer, or the last reader (READER_OWNED is a
//!   hint that survives `up_read`), and NONSPINNABLE;
//! - the FIFO wait list of sleeping waiters (R6, R12), each with its
//!   enqueue jiffy and `handoff_set`;
//! - the optimistic spinners (R8-R11): writers on their CPUs, in OSQ order;
//!   only the head spins on the owner, and a head writer that set handoff
//!   spins on the owner from the wait list (R15).
//!
//! Within one instant the order is the kernel's: a release updates the
//! count, then a spinner polling the lock may take it (spinners barge, R9),
//! then the waker's `rwsem_mark_wake` runs with whatever state that leaves.
//! Timeouts are evaluated lazily where the kernel evaluates them (R13 when a
//! writer runs, R17 when a waker looks at a reader head), in jiffies (R14).

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake};
use sim::{Dur, SimTime};
use std::collections::VecDeque;

/// `MAX_READERS_WAKEUP` (R18).
pub const MAX_READERS_WAKEUP: u32 = 0x100;

/// Build-time options of the kernel that change the rwsem.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LinuxRwsemConfig {
    /// CONFIG_RWSEM_SPIN_ON_OWNER (default y on SMP, !RT): writers spin.
    pub spin_on_owner: bool,
}

impl Default for LinuxRwsemConfig {
    fn default() -> Self {
        LinuxRwsemConfig {
            spin_on_owner: true,
        }
    }
}

/// The owner word's task part (R2).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Owner {
    /// Stored 0 (after `up_write`, or never owned).
    None,
    Writer(TaskId),
    /// READER_OWNED: the last owner was this reader (a hint).
    Reader(TaskId),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Waiter {
    task: TaskId,
    mode: Mode,
    /// jiffies at enqueue; the timeout is `enq + RWSEM_WAIT_TIMEOUT` (R14).
    enq: u64,
    handoff_set: bool,
    /// Woken (`Wake::Retry`) and not yet run: not woken twice.
    woken: bool,
}

/// The kinds of `rwsem_mark_wake` (R16-R18).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum WakeType {
    Any,
    Readers,
    ReadOwned,
}

/// What the head spinner does next.
enum SpinStep {
    Took,
    Stop,
    Keep(Option<SimTime>),
}

#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    steals: u64,
    spins: u64,
    spin_successes: u64,
    handoffs: u64,
    wakeups: u64,
    reader_batches: u64,
    reader_batch_max: u64,
    nonspinnable_sets: u64,
}

#[derive(Clone, Debug)]
pub struct LinuxRwsem {
    cfg: LinuxRwsemConfig,
    writer_locked: bool,
    readers: u32,
    handoff: bool,
    owner: Owner,
    nonspinnable: bool,
    queue: VecDeque<Waiter>,
    /// Optimistic spinners in OSQ order, each with its current deadline.
    osq: VecDeque<(TaskId, Option<SimTime>)>,
    /// The head waiter that set handoff and spins on the owner (R15).
    handoff_spinner: Option<TaskId>,
    n: Counters,
}

impl Default for LinuxRwsem {
    fn default() -> Self {
        Self::new(LinuxRwsemConfig::default())
    }
}

/// `RWSEM_WAIT_TIMEOUT = DIV_ROUND_UP(HZ, 250)` jiffies (R14).
pub fn rwsem_wait_timeout(hz: u32) -> u64 {
    u64::from(hz.div_ceil(250))
}

/// The reader-owned spin budget (R10): (20 + min(readers, 30)) / 2 us.
pub fn rwsem_rspin_threshold(readers: u32) -> Dur {
    Dur(u64::from(20 + readers.min(30)) * 1000 / 2)
}

impl LinuxRwsem {
    pub fn new(cfg: LinuxRwsemConfig) -> Self {
        LinuxRwsem {
            cfg,
            writer_locked: false,
            readers: 0,
            handoff: false,
            owner: Owner::None,
            nonspinnable: false,
            queue: VecDeque::new(),
            osq: VecDeque::new(),
            handoff_spinner: None,
            n: Counters::default(),
        }
    }

    fn waiters(&self) -> bool {
        !self.queue.is_empty()
    }

    fn is_free(&self) -> bool {
        self.readers == 0 && !self.writer_locked
    }

    /// `time_after(jiffies, waiter->timeout)`: true once jiffies >= enq + T + 1.
    fn timed_out(ctx: &LockCtx, w: &Waiter) -> bool {
        ctx.jiffies() > w.enq + rwsem_wait_timeout(ctx.hz)
    }

    fn position(&self, t: TaskId) -> Option<usize> {
        self.queue.iter().position(|w| w.task == t)
    }

    /// [`Self::position`], trying `hint` first: callers usually know where
    /// the waiter is (just enqueued at the tail, or woken at the head), and
    /// a queue of a thousand writers is long to scan.
    fn position_from(&self, t: TaskId, hint: usize) -> Option<usize> {
        match self.queue.get(hint) {
            Some(w) if w.task == t => Some(hint),
            _ => self.position(t),
        }
    }

    /// `rwsem_set_reader_owned`: the owner hint is this reader; NONSPINNABLE
    /// is kept (R2).
    fn set_reader_owned(&mut self, t: TaskId) {
        self.owner = Owner::Reader(t);
    }

    /// `rwsem_read_trylock` (R3): the fast path fails on a writer, any
    /// waiter, or handoff.
    fn rwsem_read_trylock(&mut self, t: TaskId) -> bool {
        if self.writer_locked || self.waiters() || self.handoff {
            return false;
        }
        self.readers += 1;
        self.set_reader_owned(t);
        true
    }

    /// `rwsem_mark_wake` (R16-R18).
    fn rwsem_mark_wake(&mut self, ctx: &LockCtx, ty: WakeType, wakes: &mut Vec<Wake>) {
        let Some(head) = self.queue.front().copied() else {
            return;
        };
        if head.mode == Mode::Write {
            // R16: only WAKE_ANY wakes the head writer; it is not a grant.
            if ty == WakeType::Any && !head.woken {
                self.queue[0].woken = true;
                self.n.wakeups += 1;
                wakes.push(Wake::Retry(head.task));
            }
            return;
        }
        if ty != WakeType::ReadOwned {
            // R17: a writer owns the lock (it stole it): a timed-out reader
            // head sets handoff; nobody is woken.
            if self.writer_locked {
                if Self::timed_out(ctx, &head) {
                    if !self.handoff {
                        self.handoff = true;
                        self.n.handoffs += 1;
                    }
                    self.queue[0].handoff_set = true;
                }
                return;
            }
            self.set_reader_owned(head.task);
        }
        // R18: every queued reader, including readers behind writers, up to
        // MAX_READERS_WAKEUP; they own the lock before they run.
        let mut woken = 0u32;
        let mut i = 0;
        while i < self.queue.len() && woken < MAX_READERS_WAKEUP {
            if self.queue[i].mode == Mode::Read {
                let w = self.queue.remove(i).expect("index in range");
                wakes.push(Wake::Granted(w.task));
                woken += 1;
            } else {
                i += 1;
            }
        }
        self.readers += woken;
        if self.queue.is_empty() || woken > 0 {
            self.handoff = false;
        }
        self.n.wakeups += u64::from(woken);
        self.n.reader_batches += 1;
        self.n.reader_batch_max = self.n.reader_batch_max.max(u64::from(woken));
    }

    /// `rwsem_cond_wake_waiter` (R6, R12).
    fn rwsem_cond_wake_waiter(&mut self, ctx: &LockCtx, wakes: &mut Vec<Wake>) {
        if self.writer_locked {
            return;
        }
        if self.readers > 0 {
            self.rwsem_mark_wake(ctx, WakeType::Readers, wakes);
        } else {
            self.nonspinnable = false;
            self.rwsem_mark_wake(ctx, WakeType::Any, wakes);
        }
    }

    /// `rwsem_down_read_slowpath` (R4-R6). Returns whether `t` owns the lock.
    fn rwsem_down_read_slowpath(
        &mut self,
        ctx: &LockCtx,
        t: TaskId,
        wakes: &mut Vec<Wake>,
    ) -> bool {
        let rcnt = self.readers + 1; // the bias R3 added, its own included
        let reader_owned = matches!(self.owner, Owner::Reader(_));
        // R4(a): queue on a reader-owned lock with other readers (anti-starvation);
        // R4(b): otherwise steal unless a writer holds it or handoff is set.
        let anti_starvation = reader_owned && rcnt > 1 && !self.writer_locked;
        let may_steal = !self.writer_locked && !self.handoff;
        if !anti_starvation && may_steal {
            // R4(b): steal, even though waiters are queued.
            self.readers += 1;
            self.set_reader_owned(t);
            self.n.steals += 1;
            // R5: a lone stealer wakes the queued readers if a reader heads.
            if rcnt == 1 && self.waiters() {
                self.rwsem_mark_wake(ctx, WakeType::ReadOwned, wakes);
            }
            return true;
        }
        // R6: enqueue.
        if self.queue.is_empty() && !self.writer_locked {
            self.readers += 1;
            self.set_reader_owned(t);
            return true;
        }
        self.queue.push_back(Waiter {
            task: t,
            mode: Mode::Read,
            enq: ctx.jiffies(),
            handoff_set: false,
            woken: false,
        });
        let before = wakes.len();
        self.rwsem_cond_wake_waiter(ctx, wakes);
        // The waker may have granted this very reader.
        if let Some(i) = wakes[before..].iter().position(|w| *w == Wake::Granted(t)) {
            wakes.remove(before + i);
            self.n.wakeups -= 1;
            return true;
        }
        false
    }

    /// `rwsem_try_write_lock` (R13) for waiter `t`, under wait_lock;
    /// `hint` is where `t` probably is in the queue.
    fn rwsem_try_write_lock(&mut self, ctx: &LockCtx, t: TaskId, hint: usize) -> bool {
        let Some(i) = self.position_from(t, hint) else {
            return false;
        };
        let head = self.queue[0];
        if self.handoff && head.handoff_set && head.task != t {
            return false;
        }
        if !self.is_free() {
            if self.handoff || (!ctx.tasks.is_rt(t) && !Self::timed_out(ctx, &self.queue[i])) {
                return false;
            }
            self.handoff = true;
            self.n.handoffs += 1;
            self.queue[0].handoff_set = true;
            return false;
        }
        self.writer_locked = true;
        self.handoff = false;
        self.owner = Owner::Writer(t);
        self.queue.remove(i);
        if self.handoff_spinner == Some(t) {
            self.handoff_spinner = None;
        }
        true
    }

    /// `rwsem_down_write_slowpath` (R12): enqueue and try once. Returns
    /// whether `t` owns the lock.
    fn rwsem_down_write_slowpath(
        &mut self,
        ctx: &LockCtx,
        t: TaskId,
        wakes: &mut Vec<Wake>,
    ) -> bool {
        let first = self.queue.is_empty();
        self.queue.push_back(Waiter {
            task: t,
            mode: Mode::Write,
            enq: ctx.jiffies(),
            handoff_set: false,
            woken: false,
        });
        if !first {
            self.rwsem_cond_wake_waiter(ctx, wakes);
        }
        let tail = self.queue.len().saturating_sub(1);
        self.rwsem_try_write_lock(ctx, t, tail)
    }

    /// After a failed `rwsem_try_write_lock`, a writer that set handoff
    /// spins on a writer owner that is on CPU (R15), unless its own CPU is
    /// wanted (`rwsem_spin_on_owner` stops on need_resched, R8); otherwise
    /// it sleeps.
    fn writer_waits(&mut self, ctx: &LockCtx, t: TaskId) -> Acquire {
        let spins = self
            .queue
            .front()
            .is_some_and(|w| w.task == t && w.handoff_set)
            && matches!(self.owner, Owner::Writer(o) if self.writer_locked && ctx.tasks.on_cpu(o))
            && self.cfg.spin_on_owner
            && !ctx.tasks.need_resched(t);
        if spins {
            self.handoff_spinner = Some(t);
            Acquire::Spin { until: None }
        } else {
            Acquire::Queued
        }
    }

    /// `rwsem_can_spin_on_owner` (R8) for `t`.
    fn rwsem_can_spin_on_owner(&self, ctx: &LockCtx, t: TaskId) -> bool {
        if !self.cfg.spin_on_owner || ctx.tasks.need_resched(t) || self.nonspinnable {
            return false;
        }
        !matches!(self.owner, Owner::Writer(o) if self.writer_locked && !ctx.tasks.on_cpu(o))
    }

    /// One look of the OSQ head at the lock (R9-R11, R15).
    fn rwsem_optimistic_spin_step(
        &mut self,
        ctx: &LockCtx,
        t: TaskId,
        deadline: Option<SimTime>,
    ) -> SpinStep {
        // rwsem_try_write_lock_unqueued: no holders and no handoff; WAITERS
        // does not stop it, so spinners barge past sleepers (R9).
        if self.is_free() && !self.handoff {
            return SpinStep::Took;
        }
        if self.handoff || ctx.tasks.need_resched(t) || self.nonspinnable {
            return SpinStep::Stop;
        }
        match self.owner {
            Owner::Writer(o) if self.writer_locked => {
                if ctx.tasks.on_cpu(o) {
                    SpinStep::Keep(None)
                } else {
                    SpinStep::Stop
                }
            }
            _ if self.readers > 0 => {
                // R10: a budget on a reader-owned lock, set when the spinner
                // first sees this reader phase.
                let until = deadline.unwrap_or(ctx.now + rwsem_rspin_threshold(self.readers));
                if ctx.now >= until {
                    if matches!(self.owner, Owner::Reader(_)) {
                        self.nonspinnable = true;
                        self.n.nonspinnable_sets += 1;
                    }
                    SpinStep::Stop
                } else {
                    SpinStep::Keep(Some(until))
                }
            }
            _ => SpinStep::Keep(None),
        }
    }

    /// Takes the lock for the OSQ head `t` (it barged, R9).
    fn take_unqueued(&mut self, t: TaskId) {
        self.writer_locked = true;
        self.owner = Owner::Writer(t);
        self.n.spin_successes += 1;
    }

    /// Lets the spinners react to the lock's new state: the head may take
    /// the lock, give up (and enqueue as a sleeping writer), or keep
    /// spinning with a new deadline; each new head looks in turn.
    #[inline(always)]
    fn update_spinners(&mut self, ctx: &LockCtx, wakes: &mut Vec<Wake>) {
        // Most lock operations find no spinner: decided here, inline.
        if self.handoff_spinner.is_some() || !self.osq.is_empty() {
            self.update_spinners_slow(ctx, wakes);
        }
    }

    /// [`Self::update_spinners`] when there is a spinner.
    #[inline(never)]
    fn update_spinners_slow(&mut self, ctx: &LockCtx, wakes: &mut Vec<Wake>) {
        // A head waiter that set handoff and spins on the owner (R15).
        if let Some(t) = self.handoff_spinner {
            if self.is_free() {
                self.handoff_spinner = None;
                if self.rwsem_try_write_lock(ctx, t, 0) {
                    wakes.push(Wake::SpinGranted(t));
                } else {
                    wakes.push(Wake::SpinSlept(t));
                }
            } else if !matches!(self.owner, Owner::Writer(o) if self.writer_locked && ctx.tasks.on_cpu(o))
            {
                self.handoff_spinner = None;
                wakes.push(Wake::SpinSlept(t));
            }
        }
        while let Some(&(t, deadline)) = self.osq.front() {
            match self.rwsem_optimistic_spin_step(ctx, t, deadline) {
                SpinStep::Took => {
                    self.osq.pop_front();
                    self.take_unqueued(t);
                    wakes.push(Wake::SpinGranted(t));
                }
                SpinStep::Stop => {
                    self.osq.pop_front();
                    let w = self.stop_spinning(ctx, t, wakes);
                    wakes.push(w);
                }
                SpinStep::Keep(until) => {
                    if until != deadline {
                        self.osq[0].1 = until;
                        wakes.push(Wake::SpinUntil(t, until.unwrap_or(SimTime::MAX)));
                    }
                    return;
                }
            }
        }
    }

    /// A spinner gives up: the write slowpath (R12). Its wake: granted at
    /// enqueue, or asleep.
    fn stop_spinning(&mut self, ctx: &LockCtx, t: TaskId, wakes: &mut Vec<Wake>) -> Wake {
        if self.rwsem_down_write_slowpath(ctx, t, wakes) {
            Wake::SpinGranted(t)
        } else {
            match self.writer_waits(ctx, t) {
                Acquire::Spin { .. } => {
                    // It set handoff and now spins from the wait list; the
                    // world sees it still spinning, with no deadline.
                    Wake::SpinUntil(t, SimTime::MAX)
                }
                _ => Wake::SpinSlept(t),
            }
        }
    }

    /// `rwsem_wake` after a release left WAITERS: spinners first (they
    /// poll and barge, R9), then `rwsem_mark_wake(ANY)` on what is left.
    fn release_wake(&mut self, ctx: &LockCtx, had_waiters_free: bool, wakes: &mut Vec<Wake>) {
        self.update_spinners(ctx, wakes);
        if had_waiters_free {
            self.rwsem_mark_wake(ctx, WakeType::Any, wakes);
            self.update_spinners(ctx, wakes);
        }
    }
}

impl LockPolicy for LinuxRwsem {
    fn policy(&self) -> &'static str {
        "linux"
    }

    fn acquire(&mut self, ctx: &LockCtx, t: TaskId, mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        match mode {
            Mode::Read => {
                if self.rwsem_read_trylock(t) || self.rwsem_down_read_slowpath(ctx, t, wakes) {
                    self.update_spinners(ctx, wakes);
                    Acquire::Granted
                } else {
                    self.update_spinners(ctx, wakes);
                    Acquire::Queued
                }
            }
            Mode::Write => {
                // R7: the fast path needs the count word to be 0.
                if self.is_free() && !self.waiters() && !self.handoff {
                    self.writer_locked = true;
                    self.owner = Owner::Writer(t);
                    self.update_spinners(ctx, wakes);
                    return Acquire::Granted;
                }
                // R8/R9: spin if the owner allows; join the OSQ.
                if self.rwsem_can_spin_on_owner(ctx, t) {
                    self.n.spins += 1;
                    self.osq.push_back((t, None));
                    if self.osq.len() > 1 {
                        return Acquire::Spin { until: None };
                    }
                    return match self.rwsem_optimistic_spin_step(ctx, t, None) {
                        SpinStep::Took => {
                            self.osq.pop_front();
                            self.take_unqueued(t);
                            Acquire::Granted
                        }
                        SpinStep::Keep(until) => {
                            self.osq[0].1 = until;
                            Acquire::Spin { until }
                        }
                        SpinStep::Stop => {
                            self.osq.pop_front();
                            self.write_slowpath_outcome(ctx, t, wakes)
                        }
                    };
                }
                self.write_slowpath_outcome(ctx, t, wakes)
            }
        }
    }

    fn release(&mut self, ctx: &LockCtx, t: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        match mode {
            Mode::Read => {
                // R19: only the last reader wakes anyone.
                debug_assert!(self.readers > 0, "up_read with no readers");
                self.readers = self.readers.saturating_sub(1);
                let wake = self.readers == 0 && !self.writer_locked && self.waiters();
                if wake {
                    self.nonspinnable = false;
                }
                self.release_wake(ctx, wake, wakes);
            }
            Mode::Write => {
                // R20.
                debug_assert!(self.writer_locked && self.owner == Owner::Writer(t));
                self.owner = Owner::None;
                self.writer_locked = false;
                let wake = self.waiters();
                self.release_wake(ctx, wake, wakes);
            }
        }
    }

    fn retry(&mut self, ctx: &LockCtx, t: TaskId, mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        debug_assert_eq!(
            mode,
            Mode::Write,
            "only writers are woken without a grant (R16, R22)"
        );
        let at = self.position_from(t, 0);
        if let Some(i) = at {
            self.queue[i].woken = false;
        }
        let r = if self.rwsem_try_write_lock(ctx, t, at.unwrap_or(0)) {
            Acquire::Granted
        } else {
            self.writer_waits(ctx, t)
        };
        self.update_spinners(ctx, wakes);
        r
    }

    fn spin_timeout(
        &mut self,
        ctx: &LockCtx,
        t: TaskId,
        _mode: Mode,
        wakes: &mut Vec<Wake>,
    ) -> Acquire {
        // Only the OSQ head has a deadline (the reader-owned budget, R10).
        debug_assert_eq!(self.osq.front().map(|s| s.0), Some(t));
        let deadline = self.osq.front().and_then(|s| s.1);
        let r = match self.rwsem_optimistic_spin_step(ctx, t, deadline) {
            SpinStep::Took => {
                self.osq.pop_front();
                self.take_unqueued(t);
                Acquire::Granted
            }
            SpinStep::Keep(until) => {
                self.osq[0].1 = until;
                return Acquire::Spin { until };
            }
            SpinStep::Stop => {
                self.osq.pop_front();
                self.write_slowpath_outcome(ctx, t, wakes)
            }
        };
        self.update_spinners(ctx, wakes);
        r
    }

    fn owner_off_cpu(&mut self, ctx: &LockCtx, _holder: TaskId, wakes: &mut Vec<Wake>) {
        self.update_spinners(ctx, wakes);
    }

    fn resched(&mut self, ctx: &LockCtx, spinner: Option<TaskId>, wakes: &mut Vec<Wake>) -> bool {
        // An OSQ node unqueues on need_resched (R28): the one on the wanted
        // CPU, or the last one; it goes to the slowpath.
        let node = match spinner {
            Some(t) => self.osq.iter().position(|&(s, _)| s == t),
            None => self.osq.len().checked_sub(1),
        };
        if let Some((t, _)) = node.and_then(|i| self.osq.remove(i)) {
            let w = self.stop_spinning(ctx, t, wakes);
            wakes.push(w);
            self.update_spinners(ctx, wakes);
            return true;
        }
        if let Some(t) = self
            .handoff_spinner
            .filter(|&h| spinner.is_none_or(|s| s == h))
        {
            self.handoff_spinner = None;
            wakes.push(Wake::SpinSlept(t));
            return true;
        }
        false
    }

    fn has_spinners(&self) -> bool {
        !self.osq.is_empty() || self.handoff_spinner.is_some()
    }

    /// R73: the OSQ head and the writer spinning after setting handoff
    /// (R15) read `sem->owner` (`rwsem_spin_on_owner`).
    fn word_pollers(&self) -> [Option<TaskId>; 2] {
        [self.osq.front().map(|s| s.0), self.handoff_spinner]
    }

    fn downgrade(&mut self, ctx: &LockCtx, t: TaskId, wakes: &mut Vec<Wake>) {
        // R21: count += BIAS - WRITER; wake readers only if a reader heads.
        debug_assert!(self.writer_locked && self.owner == Owner::Writer(t));
        self.writer_locked = false;
        self.readers += 1;
        self.set_reader_owned(t);
        if self.waiters() {
            self.rwsem_mark_wake(ctx, WakeType::ReadOwned, wakes);
        }
        self.update_spinners(ctx, wakes);
    }

    fn remove_waiter(&mut self, ctx: &LockCtx, t: TaskId, wakes: &mut Vec<Wake>) -> bool {
        // R23: rwsem_del_wake_waiter.
        let Some(i) = self.position(t) else {
            return false;
        };
        self.queue.remove(i);
        if self.handoff_spinner == Some(t) {
            self.handoff_spinner = None;
        }
        if self.queue.is_empty() {
            self.handoff = false;
        } else if i == 0 {
            self.rwsem_mark_wake(ctx, WakeType::Any, wakes);
        }
        self.update_spinners(ctx, wakes);
        true
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }

    /// `__down_read_trylock` (R3; the OOM reaper's, R103): it fails on any bit of
    /// `RWSEM_READ_FAILED_MASK`: a writer owns the lock, waiters are
    /// queued, or a handoff is set. Readers alone do not stop it.
    fn read_trylock_ok(&self) -> bool {
        !self.writer_locked && self.queue.is_empty() && !self.handoff
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let n = &self.n;
        vec![
            ("steals", n.steals),
            ("spins", n.spins),
            ("spin_successes", n.spin_successes),
            ("handoffs", n.handoffs),
            ("wakeups", n.wakeups),
            ("reader_batches", n.reader_batches),
            ("reader_batch_max", n.reader_batch_max),
            ("nonspinnable_sets", n.nonspinnable_sets),
        ]
    }
}

impl LinuxRwsem {
    /// The write slowpath for a task that called `down_write` itself.
    fn write_slowpath_outcome(
        &mut self,
        ctx: &LockCtx,
        t: TaskId,
        wakes: &mut Vec<Wake>,
    ) -> Acquire {
        let r = if self.rwsem_down_write_slowpath(ctx, t, wakes) {
            Acquire::Granted
        } else {
            self.writer_waits(ctx, t)
        };
        self.update_spinners(ctx, wakes);
        r
    }
}

#[cfg(test)]
mod tests {
    //! Scripted micro-scenarios, one rule each (docs/kernel-rules.md R3-R24):
    //! fixed calls in a fixed order, the exact grants and wakeups asserted.
    use super::*;
    use crate::locks::policy::TaskView;
    use std::cell::RefCell;
    use std::collections::BTreeSet;
    use Acquire::{Granted, Queued};
    use Mode::{Read as R, Write as W};

    #[derive(Default)]
    struct View {
        off_cpu: RefCell<BTreeSet<TaskId>>,
        rt: BTreeSet<TaskId>,
        /// Tasks whose CPU is wanted (need_resched there).
        wanted: BTreeSet<TaskId>,
    }
    impl TaskView for View {
        fn is_rt(&self, t: TaskId) -> bool {
            self.rt.contains(&t)
        }
        fn on_cpu(&self, t: TaskId) -> bool {
            !self.off_cpu.borrow().contains(&t)
        }
        fn need_resched(&self, t: TaskId) -> bool {
            self.wanted.contains(&t)
        }
    }

    /// A lock, a clock and a view of the tasks.
    struct H {
        l: LinuxRwsem,
        now: SimTime,
        view: View,
    }

    const MS: u64 = 1_000_000;

    impl H {
        fn new(spin: bool) -> H {
            H {
                l: LinuxRwsem::new(LinuxRwsemConfig {
                    spin_on_owner: spin,
                }),
                now: SimTime(0),
                view: View::default(),
            }
        }
        fn at_ms(&mut self, ms: u64) -> &mut Self {
            self.now = SimTime(ms * MS);
            self
        }
        fn acq(&mut self, t: u32, m: Mode) -> (Acquire, Vec<Wake>) {
            let t = TaskId(t);
            let mut w = Vec::new();
            let ctx = LockCtx {
                now: self.now,
                hz: 250,
                tasks: &self.view,
            };
            let a = self.l.acquire(&ctx, t, m, &mut w);
            (a, w)
        }
        fn rel(&mut self, t: u32, m: Mode) -> Vec<Wake> {
            let t = TaskId(t);
            let mut w = Vec::new();
            let ctx = LockCtx {
                now: self.now,
                hz: 250,
                tasks: &self.view,
            };
            self.l.release(&ctx, t, m, &mut w);
            w
        }
        fn retry(&mut self, t: u32) -> (Acquire, Vec<Wake>) {
            let t = TaskId(t);
            let mut w = Vec::new();
            let ctx = LockCtx {
                now: self.now,
                hz: 250,
                tasks: &self.view,
            };
            let a = self.l.retry(&ctx, t, W, &mut w);
            (a, w)
        }
        fn timeout(&mut self, t: u32) -> (Acquire, Vec<Wake>) {
            let t = TaskId(t);
            let mut w = Vec::new();
            let ctx = LockCtx {
                now: self.now,
                hz: 250,
                tasks: &self.view,
            };
            let a = self.l.spin_timeout(&ctx, t, W, &mut w);
            (a, w)
        }
        fn counter(&self, name: &str) -> u64 {
            self.l
                .counters()
                .into_iter()
                .find(|c| c.0 == name)
                .unwrap()
                .1
        }
        /// Any other call on the lock, with a context at `now`; returns
        /// what it returned and the wakes.
        fn call<R>(
            &mut self,
            f: impl FnOnce(&mut LinuxRwsem, &LockCtx, &mut Vec<Wake>) -> R,
        ) -> (R, Vec<Wake>) {
            let mut w = Vec::new();
            let ctx = LockCtx {
                now: self.now,
                hz: 250,
                tasks: &self.view,
            };
            let r = f(&mut self.l, &ctx, &mut w);
            (r, w)
        }
    }

    fn none() -> Vec<Wake> {
        Vec::new()
    }

    #[test]
    fn r14_wait_timeout_per_hz_and_r10_spin_budget() {
        assert_eq!([100, 250, 300, 1000].map(rwsem_wait_timeout), [1, 1, 2, 4]);
        assert_eq!(rwsem_rspin_threshold(1), Dur(10_500));
        assert_eq!(rwsem_rspin_threshold(30), Dur(25_000));
        assert_eq!(rwsem_rspin_threshold(100), Dur(25_000));
    }

    #[test]
    fn r3_r7_fast_paths_on_a_free_lock() {
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R), (Granted, none()));
        assert_eq!(h.acq(2, R), (Granted, none()));
        assert_eq!(h.rel(1, R), none());
        assert_eq!(h.rel(2, R), none());
        assert_eq!(h.acq(3, W), (Granted, none()));
        assert_eq!(h.acq(4, R), (Queued, none()));
    }

    #[test]
    fn r3_r4a_queued_writer_parks_new_readers_on_a_reader_owned_lock() {
        // Reader 1 holds; writer 2 queues (no spinning); reader 3 misses the
        // fast path (a waiter is queued, R3) and, the lock being reader-owned
        // with another reader, queues too (R4a): the convoy.
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.acq(2, W), (Queued, none()));
        assert_eq!(h.acq(3, R), (Queued, none()));
        assert_eq!(h.acq(4, R), (Queued, none()));
        // R19: the last reader wakes the head writer, which is not a grant (R16).
        assert_eq!(h.rel(1, R), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.retry(2), (Granted, none()));
        // R20 + R18: up_write grants both queued readers in one batch.
        assert_eq!(
            h.rel(2, W),
            vec![Wake::Granted(TaskId(3)), Wake::Granted(TaskId(4))]
        );
        assert_eq!(h.counter("reader_batches"), 1);
    }

    #[test]
    fn r4b_r24_reader_steals_while_the_woken_writer_has_not_run() {
        // The lock is momentarily free (rcnt == 1) between the wakeup of the
        // head writer and its run: a new reader steals it (R4b), and the
        // writer, when it runs, fails and sleeps again.
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.acq(2, W).0, Queued);
        assert_eq!(h.rel(1, R), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.acq(3, R), (Granted, none()));
        assert_eq!(h.counter("steals"), 1);
        assert_eq!(h.retry(2), (Queued, none()));
        // After a writer's up_write the owner hint is 0, so a reader also
        // steals past a queued writer (R24, second case).
        let mut h = H::new(false);
        assert_eq!(h.acq(1, W).0, Granted);
        assert_eq!(h.acq(2, W).0, Queued);
        assert_eq!(h.rel(1, W), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.acq(3, R), (Granted, none()));
    }

    #[test]
    fn r5_lone_stealer_wakes_queued_readers_only_if_a_reader_heads() {
        // The kernel's race window: the lock is free and a reader heads the
        // wait list (its waker has not run yet). In this model a release
        // wakes at once, so the state is set up directly.
        let mut h = H::new(false);
        for t in [2, 3] {
            h.l.queue.push_back(Waiter {
                task: TaskId(t),
                mode: R,
                enq: 0,
                handoff_set: false,
                woken: false,
            });
        }
        h.l.queue.insert(
            1,
            Waiter {
                task: TaskId(9),
                mode: W,
                enq: 0,
                handoff_set: false,
                woken: false,
            },
        );
        // Reader 5 misses the fast path (waiters), steals (R4b), and being
        // alone (rcnt == 1) calls mark_wake(READ_OWNED): the readers, also the
        // one behind writer 9, are granted with it (R5 + R18).
        assert_eq!(
            h.acq(5, R),
            (
                Granted,
                vec![Wake::Granted(TaskId(2)), Wake::Granted(TaskId(3))]
            )
        );
        assert_eq!(h.l.readers, 3);
        // With a writer at the head, the same steal wakes nobody.
        let mut h = H::new(false);
        assert_eq!(h.acq(1, W).0, Granted);
        assert_eq!(h.acq(2, W).0, Queued);
        assert_eq!(h.acq(3, R).0, Queued);
        assert_eq!(h.rel(1, W), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.acq(5, R), (Granted, none()));
    }

    #[test]
    fn r6_reader_enqueue_on_a_free_lock_wakes_the_head() {
        // A writer is queued and woken but has not run; the lock is free and
        // reader-owned hint set by a reader that released: reader 4 fails the
        // fast path (waiters), queues (R4a needs rcnt > 1: no, rcnt == 1 and
        // the owner is a reader hint, so it steals) ...
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.acq(2, R).0, Granted);
        assert_eq!(h.acq(3, W).0, Queued);
        // ... with two readers in, a new reader queues (R4a) and the
        // condition wake (readers > 0, writer at head) wakes nobody (R16).
        assert_eq!(h.acq(4, R), (Queued, none()));
        assert_eq!(h.l.queued(), 2);
    }

    #[test]
    fn r8_readers_never_spin_and_writers_do_not_spin_on_an_off_cpu_writer() {
        let mut h = H::new(true);
        assert_eq!(h.acq(1, W).0, Granted);
        // The owner runs: a second writer spins (no deadline on a writer owner).
        assert_eq!(h.acq(2, W), (Acquire::Spin { until: None }, none()));
        // A reader never spins (R8): it queues.
        assert_eq!(h.acq(3, R), (Queued, none()));
        // The owner sleeps (e.g. in reclaim): the spinner stops and sleeps.
        h.view.off_cpu.borrow_mut().insert(TaskId(1));
        let (_, w) = h.call(|l, c, w| l.owner_off_cpu(c, TaskId(1), w));
        assert_eq!(w, vec![Wake::SpinSlept(TaskId(2))]);
        // A new writer does not even start spinning on an off-CPU owner.
        assert_eq!(h.acq(4, W), (Queued, none()));
    }

    #[test]
    fn r9_spinner_barges_past_sleeping_waiters() {
        let mut h = H::new(true);
        assert_eq!(h.acq(1, W).0, Granted);
        h.view.off_cpu.borrow_mut().insert(TaskId(1)); // owner sleeps: 2 queues asleep
        assert_eq!(h.acq(2, W), (Queued, none()));
        h.view.off_cpu.borrow_mut().remove(&TaskId(1)); // owner runs again
        assert_eq!(h.acq(3, W), (Acquire::Spin { until: None }, none()));
        // Release: the spinner takes the lock before the sleeper's wakeup,
        // then the head writer is still woken (WAITERS was set) and fails.
        assert_eq!(
            h.rel(1, W),
            vec![Wake::SpinGranted(TaskId(3)), Wake::Retry(TaskId(2))]
        );
        assert_eq!(h.retry(2), (Queued, none()));
        assert_eq!(h.counter("spin_successes"), 1);
    }

    #[test]
    fn r73_only_the_osq_head_polls_the_owner_word() {
        let mut h = H::new(true);
        assert_eq!(h.acq(1, W).0, Granted);
        assert_eq!(h.l.word_pollers(), [None, None]);
        h.acq(2, W);
        h.acq(3, W);
        // 3 spins on its own OSQ node, not on the lock word.
        assert_eq!(h.l.word_pollers(), [Some(TaskId(2)), None]);
        assert_eq!(h.rel(1, W), vec![Wake::SpinGranted(TaskId(2))]);
        assert_eq!(h.l.word_pollers(), [Some(TaskId(3)), None]);
    }

    #[test]
    fn r10_r11_reader_owned_spin_budget_then_nonspinnable_until_the_lock_frees() {
        let mut h = H::new(true);
        assert_eq!(h.acq(1, R).0, Granted);
        // One reader: budget (20 + 1) / 2 = 10.5 us.
        let until = SimTime(10_500);
        assert_eq!(h.acq(2, W), (Acquire::Spin { until: Some(until) }, none()));
        h.now = until;
        // Budget gone: NONSPINNABLE is set and the writer queues.
        assert_eq!(h.timeout(2), (Queued, none()));
        assert_eq!(h.counter("nonspinnable_sets"), 1);
        // While NONSPINNABLE, writers skip spinning entirely (R11).
        assert_eq!(h.acq(3, W), (Queued, none()));
        // The last reader's up_read clears it (R11, R19) and wakes the head.
        assert_eq!(h.rel(1, R), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.retry(2), (Granted, none()));
        assert_eq!(h.acq(4, W), (Acquire::Spin { until: None }, none()));
    }

    #[test]
    fn r13_r14_r15_writer_sets_handoff_lazily_after_the_timeout_then_readers_cannot_steal() {
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.acq(2, W).0, Queued); // enqueued at jiffy 0
                                           // Readers keep the lock busy by stealing whenever it is free.
        assert_eq!(h.rel(1, R), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.at_ms(7).acq(3, R).0, Granted); // steals
                                                     // At 7 ms (jiffy 1) the writer runs: not timed out yet (needs
                                                     // jiffies >= 0 + 1 + 1), so it only sleeps again.
        assert_eq!(h.retry(2), (Queued, none()));
        assert_eq!(h.counter("handoffs"), 0);
        assert_eq!(h.rel(3, R), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.acq(4, R).0, Granted); // steals again
                                            // At 8 ms (jiffy 2) the writer runs, times out, sets HANDOFF (R13).
        assert_eq!(h.at_ms(8).retry(2), (Queued, none()));
        assert_eq!(h.counter("handoffs"), 1);
        // With HANDOFF set, a new reader cannot steal (R15) and queues.
        assert_eq!(h.acq(5, R), (Queued, none()));
        // The holder drains; the head writer gets the lock next.
        assert_eq!(h.rel(4, R), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.retry(2), (Granted, none()));
        assert_eq!(h.rel(2, W), vec![Wake::Granted(TaskId(5))]);
    }

    #[test]
    fn r14_rt_writer_sets_handoff_at_once() {
        let mut h = H::new(false);
        h.view.rt.insert(TaskId(2));
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.acq(2, W), (Queued, none()));
        // The try at enqueue already set handoff: no stealing.
        assert_eq!(h.counter("handoffs"), 1);
        assert_eq!(h.acq(3, R), (Queued, none()));
    }

    /// Writer 1 holds the lock and runs; RT writer 2 queued while 1 was
    /// off CPU, and set handoff at enqueue (R13/R14).
    fn rt_head_with_handoff_behind_a_running_owner() -> H {
        let mut h = H::new(true);
        h.view.rt.insert(TaskId(2));
        assert_eq!(h.acq(1, W).0, Granted);
        h.view.off_cpu.borrow_mut().insert(TaskId(1));
        assert_eq!(h.acq(2, W), (Queued, none()));
        h.view.off_cpu.borrow_mut().remove(&TaskId(1));
        h
    }

    #[test]
    fn r15_handoff_setter_spins_on_a_running_writer_owner_and_spinners_stop() {
        let mut h = rt_head_with_handoff_behind_a_running_owner();
        // An optimistic spinner fails at once under HANDOFF (R15) and queues.
        assert_eq!(h.acq(3, W), (Queued, none()));
    }

    #[test]
    fn r15_r8_the_handoff_setter_spins_on_the_owner_only_while_its_cpu_is_not_wanted() {
        for wanted in [false, true] {
            let mut h = rt_head_with_handoff_behind_a_running_owner();
            if wanted {
                h.view.wanted.insert(TaskId(2));
            }
            // Woken while 1 runs again: the head that set handoff spins on
            // the owner (R15), unless need_resched is set on its CPU (R8).
            let expect = if wanted {
                Queued
            } else {
                Acquire::Spin { until: None }
            };
            assert_eq!(h.retry(2), (expect, none()), "wanted: {wanted}");
        }
    }

    #[test]
    fn r16_writer_at_head_blocks_readers_behind_it_from_a_readers_wake() {
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.acq(2, R).0, Granted);
        assert_eq!(h.acq(3, W).0, Queued);
        assert_eq!(h.acq(4, R).0, Queued);
        // up_read of one of two readers wakes nobody (R19).
        assert_eq!(h.rel(1, R), none());
        assert_eq!(h.rel(2, R), vec![Wake::Retry(TaskId(3))]);
        // Readers behind the writer still sleep; the writer wins when it runs.
        assert_eq!(h.retry(3), (Granted, none()));
    }

    #[test]
    fn r17_timed_out_reader_head_sets_handoff_against_a_writer_that_stole() {
        let mut h = H::new(true);
        assert_eq!(h.acq(1, W).0, Granted);
        h.view.off_cpu.borrow_mut().insert(TaskId(1));
        assert_eq!(h.acq(2, R), (Queued, none())); // reader head, jiffy 0
        h.view.off_cpu.borrow_mut().remove(&TaskId(1));
        assert_eq!(h.acq(3, W), (Acquire::Spin { until: None }, none()));
        // At 8 ms: up_write; the spinner takes the lock first (R9); the waker
        // then finds a writer owner and a timed-out reader head: HANDOFF (R17).
        assert_eq!(h.at_ms(8).rel(1, W), vec![Wake::SpinGranted(TaskId(3))]);
        assert_eq!(h.counter("handoffs"), 1);
        // New spinners now fail (R15) and the head reader goes next.
        assert_eq!(h.acq(4, W), (Queued, none()));
        assert_eq!(h.rel(3, W), vec![Wake::Granted(TaskId(2))]);
    }

    #[test]
    fn r18_batch_grant_skips_writers_and_takes_readers_behind_them() {
        let mut h = H::new(false);
        assert_eq!(h.acq(1, W).0, Granted);
        for (t, m) in [(2, R), (3, W), (4, R), (5, W), (6, R)] {
            assert_eq!(h.acq(t, m).0, Queued);
        }
        assert_eq!(
            h.rel(1, W),
            vec![
                Wake::Granted(TaskId(2)),
                Wake::Granted(TaskId(4)),
                Wake::Granted(TaskId(6))
            ]
        );
        assert_eq!(h.l.queued(), 2);
        assert_eq!(h.counter("reader_batch_max"), 3);
        // The writers go after the batch drains, head first.
        assert_eq!(h.rel(2, R), none());
        assert_eq!(h.rel(4, R), none());
        assert_eq!(h.rel(6, R), vec![Wake::Retry(TaskId(3))]);
    }

    #[test]
    fn r18_batch_grant_stops_at_max_readers_wakeup() {
        let mut h = H::new(false);
        assert_eq!(h.acq(0, W).0, Granted);
        for t in 1..=300 {
            assert_eq!(h.acq(t, R).0, Queued);
        }
        let w = h.rel(0, W);
        assert_eq!(w.len(), 256);
        assert_eq!(w[0], Wake::Granted(TaskId(1)));
        assert_eq!(w[255], Wake::Granted(TaskId(256)));
        assert_eq!(h.l.queued(), 44);
    }

    #[test]
    fn r19_only_the_last_reader_wakes() {
        let mut h = H::new(false);
        for t in 1..=3 {
            assert_eq!(h.acq(t, R).0, Granted);
        }
        assert_eq!(h.acq(4, W).0, Queued);
        assert_eq!(h.rel(1, R), none());
        assert_eq!(h.rel(2, R), none());
        assert_eq!(h.rel(3, R), vec![Wake::Retry(TaskId(4))]);
    }

    #[test]
    fn r20_up_write_wakes_the_head_writer_once() {
        let mut h = H::new(false);
        assert_eq!(h.acq(1, W).0, Granted);
        assert_eq!(h.acq(2, W).0, Queued);
        assert_eq!(h.acq(3, W).0, Queued);
        assert_eq!(h.rel(1, W), vec![Wake::Retry(TaskId(2))]);
        // A reader steals and releases before 2 runs: 2 is not woken twice.
        assert_eq!(h.acq(4, R).0, Granted);
        assert_eq!(h.rel(4, R), none());
        assert_eq!(h.retry(2), (Granted, none()));
    }

    #[test]
    fn r21_downgrade_wakes_readers_only_if_a_reader_heads() {
        let mut h = H::new(false);
        assert_eq!(h.acq(1, W).0, Granted);
        assert_eq!(h.acq(2, R).0, Queued);
        assert_eq!(h.acq(3, W).0, Queued);
        assert_eq!(h.acq(4, R).0, Queued);
        let (_, w) = h.call(|l, c, w| l.downgrade(c, TaskId(1), w));
        // Reader head: every queued reader, including the one behind writer 3.
        assert_eq!(w, vec![Wake::Granted(TaskId(2)), Wake::Granted(TaskId(4))]);
        let mut h = H::new(false);
        assert_eq!(h.acq(1, W).0, Granted);
        assert_eq!(h.acq(2, W).0, Queued);
        assert_eq!(h.acq(3, R).0, Queued);
        let (_, w) = h.call(|l, c, w| l.downgrade(c, TaskId(1), w));
        assert_eq!(w, none(), "a writer heads: READ_OWNED wakes nobody");
    }

    #[test]
    fn r23_a_removed_head_waiter_wakes_the_next() {
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.acq(2, W).0, Queued);
        assert_eq!(h.acq(3, R).0, Queued);
        let (ok, w) = h.call(|l, c, w| l.remove_waiter(c, TaskId(2), w));
        assert!(ok);
        // The reader head is granted: the lock is reader-owned.
        assert_eq!(w, vec![Wake::Granted(TaskId(3))]);
    }

    #[test]
    fn r28_need_resched_makes_the_last_spinner_sleep() {
        let mut h = H::new(true);
        assert_eq!(h.acq(1, W).0, Granted);
        assert_eq!(h.acq(2, W).0, Acquire::Spin { until: None });
        assert_eq!(h.acq(3, W).0, Acquire::Spin { until: None });
        let mut w = Vec::new();
        let ctx = LockCtx {
            now: h.now,
            hz: 250,
            tasks: &h.view,
        };
        assert!(h.l.resched(&ctx, None, &mut w));
        assert_eq!(w, vec![Wake::SpinSlept(TaskId(3))]);
        // The head spinner still gets the lock at release; 3 is woken after.
        assert_eq!(
            h.rel(1, W),
            vec![Wake::SpinGranted(TaskId(2)), Wake::Retry(TaskId(3))]
        );
    }

    #[test]
    fn r8_r28_need_resched_is_per_cpu_only_the_spinner_whose_cpu_is_wanted_stops() {
        let mut h = H::new(true);
        assert_eq!(h.acq(1, W).0, Granted);
        // 4's CPU is wanted: it may not spin (R8) and sleeps.
        h.view.wanted.insert(TaskId(4));
        assert_eq!(h.acq(4, W).0, Queued);
        assert_eq!(h.acq(2, W).0, Acquire::Spin { until: None });
        assert_eq!(h.acq(3, W).0, Acquire::Spin { until: None });
        // 2's CPU becomes wanted: 2, the OSQ head, unqueues (R28) and
        // sleeps; 3 heads the OSQ and spins on. No spinner runs on 9's CPU.
        h.view.wanted.insert(TaskId(2));
        let mut w = Vec::new();
        let ctx = LockCtx {
            now: h.now,
            hz: 250,
            tasks: &h.view,
        };
        assert!(!h.l.resched(&ctx, Some(TaskId(9)), &mut w));
        assert!(h.l.resched(&ctx, Some(TaskId(2)), &mut w));
        assert_eq!(w, vec![Wake::SpinSlept(TaskId(2))]);
        // 3 takes the lock at release; 4, the first sleeper, is woken.
        assert_eq!(
            h.rel(1, W),
            vec![Wake::SpinGranted(TaskId(3)), Wake::Retry(TaskId(4))]
        );
    }

    #[test]
    fn r1_r2_count_and_owner_hint_survive_up_read() {
        // READER_OWNED is a hint: up_read does not clear it (R2), so after
        // the last reader leaves, the owner is still "a reader".
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.rel(1, R), none());
        assert_eq!(h.l.owner, Owner::Reader(TaskId(1)));
        assert_eq!(
            (h.l.readers, h.l.writer_locked, h.l.handoff),
            (0, false, false)
        );
        // up_write stores 0 (R20).
        assert_eq!(h.acq(2, W).0, Granted);
        assert_eq!(h.rel(2, W), none());
        assert_eq!(h.l.owner, Owner::None);
    }

    #[test]
    fn r12_writer_enqueued_behind_a_reader_head_wakes_the_readers_of_a_reader_owned_lock() {
        // Readers 1, 2 hold; writer 3 queues; reader 4 queues behind it (R4a).
        // Writer 3 leaves (R23) and reader 4 heads the list on a lock that
        // readers still own: it is granted at once.
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.acq(2, R).0, Granted);
        assert_eq!(h.acq(3, W).0, Queued);
        assert_eq!(h.acq(4, R).0, Queued);
        let (ok, w) = h.call(|l, c, w| l.remove_waiter(c, TaskId(3), w));
        assert!(ok);
        assert_eq!(w, vec![Wake::Granted(TaskId(4))]);
        // A writer enqueueing behind a reader head on a reader-owned lock
        // calls rwsem_cond_wake_waiter (R12), which grants the readers.
        let mut h = H::new(false);
        assert_eq!(h.acq(1, R).0, Granted);
        assert_eq!(h.acq(2, R).0, Granted);
        assert_eq!(h.acq(3, W).0, Queued);
        h.l.queue.push_back(Waiter {
            task: TaskId(4),
            mode: R,
            enq: 0,
            handoff_set: false,
            woken: false,
        });
        h.l.queue.swap(0, 1); // reader 4 now heads, writer 3 behind
        assert_eq!(h.acq(5, W), (Queued, vec![Wake::Granted(TaskId(4))]));
    }

    #[test]
    fn r12_r13_a_writer_that_enqueues_takes_the_free_lock_before_the_woken_head_runs() {
        // No spinning (R8 off), so writers go straight to the slowpath.
        let mut h = H::new(false);
        assert_eq!(h.acq(1, W).0, Granted);
        // Writer 2 enqueues at jiffy 0.
        assert_eq!(h.acq(2, W), (Queued, none()));
        // Release: writer 2 is only woken (R22); the lock is free.
        assert_eq!(h.rel(1, W), vec![Wake::Retry(TaskId(2))]);
        assert!(!h.l.writer_locked);
        // Before 2 runs, writer 3 enqueues behind it and its first
        // rwsem_try_write_lock finds the lock free and no handoff: it
        // takes the lock from the tail (R12, R13).
        assert_eq!(h.acq(3, W), (Granted, none()));
        // Writer 2 runs at 7 ms (jiffy 1 at HZ=250), finds the lock
        // taken, and has not waited past the timeout (R14: 1 jiffy, passed
        // from jiffy 2): no handoff, back to sleep at the head.
        h.at_ms(7);
        assert_eq!(h.retry(2), (Queued, none()));
        assert_eq!(h.counter("handoffs"), 0);
        // The same again: 3 releases, 4 takes the lock first.
        assert_eq!(h.rel(3, W), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.acq(4, W), (Granted, none()));
        // At 8 ms (jiffy 2) 2 has waited past the timeout: its failed try
        // sets handoff, a newcomer can no longer take the lock, and the
        // next release is 2's.
        h.at_ms(8);
        assert_eq!(h.retry(2), (Queued, none()));
        assert_eq!(h.counter("handoffs"), 1);
        assert_eq!(h.acq(5, W), (Queued, none()));
        assert_eq!(h.rel(4, W), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.retry(2), (Granted, none()));
    }

    #[test]
    fn r22_a_reader_wakeup_is_a_grant_a_writer_wakeup_is_not() {
        let mut h = H::new(false);
        assert_eq!(h.acq(1, W).0, Granted);
        assert_eq!(h.acq(2, R).0, Queued);
        // The reader owns the lock when woken: readers == 1 before it runs.
        assert_eq!(h.rel(1, W), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(h.l.readers, 1);
        assert_eq!(h.acq(3, W).0, Queued);
        // The writer is only woken: the lock is free but not its own.
        assert_eq!(h.rel(2, R), vec![Wake::Retry(TaskId(3))]);
        assert!(!h.l.writer_locked);
        assert_eq!(h.retry(3), (Granted, none()));
    }
}
