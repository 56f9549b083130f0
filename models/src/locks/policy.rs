//! The lock interface: what every lock policy implements.
//!
//! A policy owns the state of one lock instance (holders, wait queue,
//! flags, spinners) and answers: may this task have the lock now
//! ([`LockPolicy::acquire`]), whom does a release wake
//! ([`LockPolicy::release`]), and may a woken task that was *not* granted
//! the lock have it now that it runs ([`LockPolicy::retry`]).
//!
//! An acquisition either succeeds, sleeps in the wait queue, or **spins**:
//! the task keeps its CPU and waits, optionally until a deadline (an rwsem
//! writer's 10-25 us budget on a reader-owned lock, R10). The world then
//! tells the policy when the deadline passes ([`LockPolicy::spin_timeout`]),
//! when a holder leaves its CPU ([`LockPolicy::owner_off_cpu`]: spinning on
//! a sleeping owner is pointless, R8/R9) and when a CPU is wanted
//! ([`LockPolicy::resched`]: need_resched ends a spin). need_resched is
//! per CPU, as the kernel's TIF_NEED_RESCHED is a flag of the task on a
//! CPU: a task waiting for CPU 3 does not end a spin on CPU 5.
//!
//! Wakeups come in these kinds, because the kernel has all of them:
//! - [`Wake::Granted`]: the lock was handed to a sleeping task before it
//!   runs (a FIFO handoff; Linux rwsem readers woken in a batch, R18);
//! - [`Wake::Retry`]: a sleeping task is only woken and must try again when
//!   it gets a CPU (a Linux rwsem writer, R16), and may lose;
//! - [`Wake::SpinGranted`]: a spinning task got the lock (it is on its CPU);
//! - [`Wake::SpinSlept`]: a spinning task gave up and now sleeps in the wait
//!   queue (it leaves its CPU);
//! - [`Wake::SpinUntil`]: a spinning task goes on with a new deadline.
//!
//! Wakes are appended to a caller-owned buffer in the order the lock issues
//! them; the world turns them into events in that order, so policies never
//! allocate on the hot path and the order of wakeups is part of the model.

use crate::ids::TaskId;
use sim::SimTime;

/// Read (shared) or write (exclusive). A mutex is always `Write`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    Read,
    Write,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
        }
    }
}

/// Who holds an rwsem under the simple policies: a reader count and a
/// writer flag (their count word).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Holders {
    pub readers: u32,
    pub writer: bool,
}

impl Holders {
    pub fn is_free(&self) -> bool {
        self.readers == 0 && !self.writer
    }

    /// `mode` takes the lock (the caller checked it may).
    pub fn take(&mut self, mode: Mode) {
        match mode {
            Mode::Read => self.readers += 1,
            Mode::Write => {
                debug_assert!(self.is_free(), "a writer needs the lock free");
                self.writer = true;
            }
        }
    }

    /// A hold in `mode` ends.
    pub fn release(&mut self, mode: Mode) {
        match mode {
            Mode::Read => {
                debug_assert!(self.readers > 0, "up_read of a lock with no readers");
                self.readers = self.readers.saturating_sub(1);
            }
            Mode::Write => {
                debug_assert!(self.writer, "up_write of a lock with no writer");
                self.writer = false;
            }
        }
    }
}

/// The kind of lock a scenario declares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LockKind {
    Rwsem,
    Mutex,
}

/// The answer to an acquisition request (or a retry, or a spin timeout).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// The task owns the lock now and goes on.
    Granted,
    /// The task sleeps until a [`Wake`] names it.
    Queued,
    /// The task keeps its CPU and spins, until a wake names it or, if
    /// `until` is set, until then ([`LockPolicy::spin_timeout`]).
    Spin { until: Option<SimTime> },
}

/// A wakeup issued by a lock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    /// A sleeping task owns the lock; it goes on when it runs.
    Granted(TaskId),
    /// A sleeping task was woken without the lock; when it runs it calls
    /// [`LockPolicy::retry`].
    Retry(TaskId),
    /// A spinning task owns the lock and goes on at once.
    SpinGranted(TaskId),
    /// A spinning task stopped spinning and sleeps in the wait queue.
    SpinSlept(TaskId),
    /// A spinning task goes on spinning, now with this deadline (it became
    /// the head of the spinners, or a new reader phase reset its budget);
    /// `SimTime::MAX` means no deadline.
    SpinUntil(TaskId, SimTime),
}

/// What a policy may ask about tasks.
pub trait TaskView {
    /// The task runs in a real-time class (R13/R14: an RT writer sets
    /// handoff at once).
    fn is_rt(&self, t: TaskId) -> bool;
    /// The task is on a CPU (running or spinning), not asleep or waiting for
    /// a CPU (R8: spinning on an owner that is off CPU is refused).
    fn on_cpu(&self, t: TaskId) -> bool;
    /// Task `t`'s CPU is wanted: a task waits for it (need_resched on that
    /// CPU; `t` spins or is about to, and stops or does not start, R8/R9,
    /// R27/R28). With one shared run queue every waiting task wants every
    /// CPU.
    fn need_resched(&self, t: TaskId) -> bool;
}

/// A view for tests and for worlds without tasks of interest: nobody is RT,
/// everybody is on a CPU, no CPU is wanted.
pub struct AllOnCpu;

impl TaskView for AllOnCpu {
    fn is_rt(&self, _: TaskId) -> bool {
        false
    }
    fn on_cpu(&self, _: TaskId) -> bool {
        true
    }
    fn need_resched(&self, _: TaskId) -> bool {
        false
    }
}

/// The world as a policy sees it when it decides.
pub struct LockCtx<'a> {
    pub now: SimTime,
    /// Kernel tick rate (CONFIG_HZ) for jiffies (R14).
    pub hz: u32,
    pub tasks: &'a dyn TaskView,
}

impl LockCtx<'_> {
    /// `jiffies` at `now`: whole ticks since the start of the run.
    #[inline]
    pub fn jiffies(&self) -> u64 {
        crate::timer::jiffies_at(self.now, self.hz)
    }
}

/// One lock instance under one policy.
pub trait LockPolicy: Send {
    /// The policy's name as scenario files spell it (`fifo`, `linux`, ...).
    fn policy(&self) -> &'static str;

    /// `task` asks for the lock in `mode`. Grants and wakeups this causes
    /// for other tasks are appended to `wakes`.
    fn acquire(
        &mut self,
        ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        wakes: &mut Vec<Wake>,
    ) -> Acquire;

    /// `task` releases a hold in `mode`; tasks that now get the lock (or are
    /// woken to retry, or stop spinning) are appended to `wakes`, in order.
    fn release(&mut self, ctx: &LockCtx, task: TaskId, mode: Mode, wakes: &mut Vec<Wake>);

    /// A task woken with [`Wake::Retry`] runs again and tries once more.
    /// Policies that never issue `Retry` keep the default.
    fn retry(&mut self, ctx: &LockCtx, task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        let _ = (ctx, task, mode, wakes);
        Acquire::Queued
    }

    /// A spinning task's deadline passed. Policies that never spin with a
    /// deadline keep the default.
    fn spin_timeout(
        &mut self,
        ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        wakes: &mut Vec<Wake>,
    ) -> Acquire {
        let _ = (ctx, task, mode, wakes);
        Acquire::Queued
    }

    /// `holder`, which holds this lock, left its CPU (sleeps or waits for
    /// another lock). Spinners that spin on it stop.
    fn owner_off_cpu(&mut self, ctx: &LockCtx, holder: TaskId, wakes: &mut Vec<Wake>) {
        let _ = (ctx, holder, wakes);
    }

    /// A CPU is wanted: the task spinning on it, `Some(t)`, stops if it
    /// spins on this lock; with `None` (one shared run queue: any CPU will
    /// do) the last spinner stops. A stopped spinner sleeps in the wait
    /// queue, or takes the lock if the slowpath finds it free. Returns
    /// whether one stopped.
    fn resched(&mut self, ctx: &LockCtx, spinner: Option<TaskId>, wakes: &mut Vec<Wake>) -> bool {
        let _ = (ctx, spinner, wakes);
        false
    }

    /// Whether any task spins on this lock.
    fn has_spinners(&self) -> bool {
        false
    }

    /// The spinners that poll the lock word now, at most two: the OSQ
    /// head (R9, R28) and a first waiter that spins on the owner (R15,
    /// R29). The other OSQ spinners poll their own per-CPU node (R73).
    /// Each poller keeps a copy of the word's cache line.
    fn word_pollers(&self) -> [Option<TaskId>; 2] {
        [None, None]
    }

    /// `downgrade_write`: the writer `task` becomes a reader (rwsem only).
    fn downgrade(&mut self, ctx: &LockCtx, task: TaskId, wakes: &mut Vec<Wake>) {
        let _ = (ctx, task, wakes);
        unreachable!("downgrade_write on a lock policy without it")
    }

    /// A queued (sleeping) waiter leaves without the lock (a fatal signal,
    /// R23). Returns whether it was queued.
    fn remove_waiter(&mut self, ctx: &LockCtx, task: TaskId, wakes: &mut Vec<Wake>) -> bool {
        let _ = (ctx, task, wakes);
        false
    }

    /// Number of tasks currently queued (sleeping).
    fn queued(&self) -> usize;

    /// Policy-specific counters (handoffs, steals, ...), name and value, in a
    /// fixed order.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
