//! The lock interface: what every lock policy implements.
//!
//! A policy owns the state of one lock instance (holders, wait queue,
//! flags) and answers three questions: may this task have the lock now
//! ([`LockPolicy::acquire`]), whom does a release wake
//! ([`LockPolicy::release`]), and may a woken task that was *not* granted
//! the lock have it now that it runs ([`LockPolicy::retry`]).
//!
//! A wakeup is one of two kinds, because the kernel has both:
//! - [`Wake::Granted`]: the lock was handed to the task before it runs (a
//!   FIFO handoff; Linux rwsem readers woken in a batch, R18);
//! - [`Wake::Retry`]: the task is only woken and must try again when it gets
//!   a CPU (a Linux rwsem writer, R16), and may lose.
//!
//! Wakes are appended to a caller-owned buffer in the order the lock issues
//! them; the world turns them into events in that order, so policies never
//! allocate on the hot path and the order of wakeups is part of the model.

use sim::SimTime;

/// Index of a task in the world.
pub type TaskId = u32;

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

/// The kind of lock a scenario declares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LockKind {
    Rwsem,
    Mutex,
}

/// The answer to an acquisition request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// The task owns the lock now and goes on.
    Granted,
    /// The task sleeps until a [`Wake`] names it.
    Queued,
}

/// A wakeup issued by a lock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The task owns the lock; it goes on when it runs.
    Granted(TaskId),
    /// The task was woken without the lock; when it runs it calls
    /// [`LockPolicy::retry`].
    Retry(TaskId),
}

/// One lock instance under one policy.
pub trait LockPolicy: Send {
    /// The policy's name as scenario files spell it (`fifo`, `linux`, ...).
    fn policy(&self) -> &'static str;

    /// `task` asks for the lock in `mode`. Releases and grants that this
    /// causes for other tasks are appended to `wakes`.
    fn acquire(&mut self, now: SimTime, task: TaskId, mode: Mode, wakes: &mut Vec<Wake>)
        -> Acquire;

    /// `task` releases a hold in `mode`; tasks that now get the lock (or are
    /// woken to retry) are appended to `wakes`, in wake order.
    fn release(&mut self, now: SimTime, task: TaskId, mode: Mode, wakes: &mut Vec<Wake>);

    /// A task woken with [`Wake::Retry`] runs again and tries once more.
    /// Policies that never issue `Retry` keep the default.
    fn retry(&mut self, now: SimTime, task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        let _ = (now, task, mode, wakes);
        Acquire::Queued
    }

    /// Number of tasks currently queued.
    fn queued(&self) -> usize;

    /// Policy-specific counters (handoffs, steals, ...), name and value, in a
    /// fixed order.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
