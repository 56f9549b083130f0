//! `spinlock_t` (kind `spinlock`): the Linux queued spinlock (policy
//! `linux`, R75-R78) and, as a what-if, the ticket lock Linux used before
//! 4.2 and that `include/asm-generic/spinlock.h` still defines (policy
//! `ticket`, R79).
//!
//! A waiter never sleeps: it spins on its CPU, with preemption disabled
//! (R75), until the lock is handed to it. So a policy here answers only
//! `Granted` or `Spin { until: None }`, issues only `SpinGranted`, and
//! ignores need_resched and an owner leaving its CPU (a spinlock holder
//! cannot sleep; a guest's host can still stop its vCPU, R67).
//!
//! The two differ in who polls the lock word, which is what the machine
//! charges for (docs/kernel-rules.md R73, R80):
//! - qspinlock: at most two tasks poll the word, the pending waiter and
//!   the head of the MCS queue; the others spin on their own per-CPU node
//!   ([`QSpinlock::word_pollers`]);
//! - ticket: every waiter polls the word and re-reads it after every
//!   write, so a handoff's cost grows with the waiters
//!   ([`TicketSpinlock::rereaders`]).
//!
//! Both hand the lock over at the release, in FIFO order: no waiter or
//! new arrival can take it past them (R78, R79).

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake};
use std::collections::VecDeque;

/// The Linux qspinlock (kernel/locking/qspinlock.c, R76-R78): a locked
/// byte, a pending bit, and an MCS queue whose tail is in the lock word.
#[derive(Clone, Debug, Default)]
pub struct QSpinlock {
    /// The task whose `spin_lock` set the locked byte.
    owner: Option<TaskId>,
    /// The waiter that set the pending bit (R77): it spins on the locked
    /// byte and takes the lock before the queue.
    pending: Option<TaskId>,
    /// The MCS queue (R78): the head spins on the lock word, the others
    /// on their own node.
    queue: VecDeque<TaskId>,
    /// Acquisitions through the pending bit and through the queue.
    via_pending: u64,
    via_queue: u64,
}

impl QSpinlock {
    pub fn new() -> Self {
        Self::default()
    }

    /// The task holding the lock.
    pub fn owner(&self) -> Option<TaskId> {
        self.owner
    }
}

impl LockPolicy for QSpinlock {
    fn policy(&self) -> &'static str {
        "linux"
    }

    fn acquire(&mut self, _ctx: &LockCtx, t: TaskId, _m: Mode, _w: &mut Vec<Wake>) -> Acquire {
        // R76: the fast path's cmpxchg of the whole word from 0. The
        // model hands the lock over at the release, so a free lock has no
        // pending waiter and no queue.
        if self.owner.is_none() {
            debug_assert!(self.pending.is_none() && self.queue.is_empty());
            self.owner = Some(t);
            return Acquire::Granted;
        }
        // R77: only the locked byte set: set pending and spin on it.
        if self.pending.is_none() && self.queue.is_empty() {
            self.pending = Some(t);
            self.via_pending += 1;
        } else {
            // R78: any other contention: queue (the tail's xchg).
            self.queue.push_back(t);
            self.via_queue += 1;
        }
        Acquire::Spin { until: None }
    }

    fn release(&mut self, _ctx: &LockCtx, t: TaskId, _m: Mode, wakes: &mut Vec<Wake>) {
        debug_assert_eq!(self.owner, Some(t), "spin_unlock by a non-owner");
        // R77: the pending waiter sees the locked byte clear first (the
        // queue head also waits for pending to clear).
        self.owner = self.pending.take().or_else(|| self.queue.pop_front());
        if let Some(next) = self.owner {
            wakes.push(Wake::SpinGranted(next));
        }
    }

    fn has_spinners(&self) -> bool {
        self.pending.is_some() || !self.queue.is_empty()
    }

    /// R73, R78: the pending waiter polls the locked byte, the queue head
    /// the whole word; the other waiters their own node.
    fn word_pollers(&self) -> [Option<TaskId>; 2] {
        [self.pending, self.queue.front().copied()]
    }

    fn queued(&self) -> usize {
        0
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("pending", self.via_pending), ("queued", self.via_queue)]
    }
}

/// A ticket lock (include/asm-generic/spinlock.h, R79): `next` and
/// `owner` halves of one word; an arrival takes a ticket with a
/// fetch-add, spins until `owner` reaches it, and the release increments
/// `owner`.
#[derive(Clone, Debug, Default)]
pub struct TicketSpinlock {
    owner: Option<TaskId>,
    /// Waiters in ticket order; every one polls the word.
    queue: VecDeque<TaskId>,
    /// Most waiters at once.
    max_waiters: u64,
}

impl TicketSpinlock {
    pub fn new() -> Self {
        Self::default()
    }
}

impl LockPolicy for TicketSpinlock {
    fn policy(&self) -> &'static str {
        "ticket"
    }

    fn acquire(&mut self, _ctx: &LockCtx, t: TaskId, _m: Mode, _w: &mut Vec<Wake>) -> Acquire {
        if self.owner.is_none() {
            debug_assert!(self.queue.is_empty());
            self.owner = Some(t);
            return Acquire::Granted;
        }
        self.queue.push_back(t);
        self.max_waiters = self.max_waiters.max(self.queue.len() as u64);
        Acquire::Spin { until: None }
    }

    fn release(&mut self, _ctx: &LockCtx, t: TaskId, _m: Mode, wakes: &mut Vec<Wake>) {
        debug_assert_eq!(self.owner, Some(t), "spin_unlock by a non-owner");
        self.owner = self.queue.pop_front();
        if let Some(next) = self.owner {
            wakes.push(Wake::SpinGranted(next));
        }
    }

    fn has_spinners(&self) -> bool {
        !self.queue.is_empty()
    }

    /// R79, R80: every waiter re-reads the word after each write.
    fn rereaders(&self, out: &mut Vec<TaskId>) {
        out.extend(self.queue.iter().copied());
    }

    fn rereads(&self, _mode: Mode) -> bool {
        true
    }

    fn queued(&self) -> usize {
        0
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("max_waiters", self.max_waiters)]
    }
}

#[cfg(test)]
mod tests {
    //! Scripted micro-scenarios, one rule each (docs/kernel-rules.md
    //! R75-R79); the times are the world's (experiments/tests/it/spinlock.rs).
    use super::*;
    use crate::locks::testing::{acq, rel};
    use Acquire::{Granted, Spin};

    const SPIN: Acquire = Spin { until: None };

    #[test]
    fn r76_a_free_lock_is_taken_at_once() {
        let mut l = QSpinlock::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Granted);
        assert_eq!(rel(&mut l, 1, Mode::Write), vec![]);
        assert_eq!(acq(&mut l, 2, Mode::Write), Granted);
        assert_eq!(l.owner(), Some(TaskId(2)));
    }

    #[test]
    fn r77_the_first_waiter_sets_pending_and_polls_the_locked_byte() {
        let mut l = QSpinlock::new();
        acq(&mut l, 1, Mode::Write);
        assert_eq!(acq(&mut l, 2, Mode::Write), SPIN);
        assert_eq!(l.word_pollers(), [Some(TaskId(2)), None]);
        assert_eq!(
            rel(&mut l, 1, Mode::Write),
            vec![Wake::SpinGranted(TaskId(2))]
        );
        assert_eq!(l.counters(), vec![("pending", 1), ("queued", 0)]);
    }

    #[test]
    fn r78_later_waiters_queue_the_head_polls_the_word_and_the_pending_waiter_goes_first() {
        let mut l = QSpinlock::new();
        acq(&mut l, 1, Mode::Write);
        assert_eq!(acq(&mut l, 2, Mode::Write), SPIN); // pending
        assert_eq!(acq(&mut l, 3, Mode::Write), SPIN); // queue head
        assert_eq!(acq(&mut l, 4, Mode::Write), SPIN); // on its own node
        assert_eq!(l.word_pollers(), [Some(TaskId(2)), Some(TaskId(3))]);
        assert_eq!(
            rel(&mut l, 1, Mode::Write),
            vec![Wake::SpinGranted(TaskId(2))]
        );
        // No pending waiter now: the head polls on; a new arrival queues
        // behind (the tail is set), it does not set pending.
        assert_eq!(acq(&mut l, 5, Mode::Write), SPIN);
        assert_eq!(l.word_pollers(), [None, Some(TaskId(3))]);
        assert_eq!(
            rel(&mut l, 2, Mode::Write),
            vec![Wake::SpinGranted(TaskId(3))]
        );
        // 4 is the head now.
        assert_eq!(l.word_pollers(), [None, Some(TaskId(4))]);
        assert_eq!(
            rel(&mut l, 3, Mode::Write),
            vec![Wake::SpinGranted(TaskId(4))]
        );
        assert_eq!(
            rel(&mut l, 4, Mode::Write),
            vec![Wake::SpinGranted(TaskId(5))]
        );
        assert_eq!(rel(&mut l, 5, Mode::Write), vec![]);
        assert_eq!(l.counters(), vec![("pending", 1), ("queued", 3)]);
    }

    #[test]
    fn r75_spinners_ignore_need_resched_and_an_owner_off_its_cpu() {
        let mut l = QSpinlock::new();
        acq(&mut l, 1, Mode::Write);
        acq(&mut l, 2, Mode::Write);
        let mut w = Vec::new();
        let ctx = crate::locks::testing::CTX;
        assert!(!l.resched(&ctx, Some(TaskId(2)), &mut w));
        assert!(!l.resched(&ctx, None, &mut w));
        l.owner_off_cpu(&ctx, TaskId(1), &mut w);
        assert!(w.is_empty());
        assert!(l.has_spinners());
    }

    #[test]
    fn r79_ticket_order_and_every_waiter_rereads() {
        let mut l = TicketSpinlock::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Granted);
        for t in 2..=4 {
            assert_eq!(acq(&mut l, t, Mode::Write), SPIN);
        }
        let mut r = Vec::new();
        l.rereaders(&mut r);
        assert_eq!(r, vec![TaskId(2), TaskId(3), TaskId(4)]);
        assert!(l.rereads(Mode::Write));
        assert_eq!(l.word_pollers(), [None, None]);
        for t in 1..=3 {
            assert_eq!(
                rel(&mut l, t, Mode::Write),
                vec![Wake::SpinGranted(TaskId(t + 1))]
            );
        }
        assert_eq!(rel(&mut l, 4, Mode::Write), vec![]);
        assert_eq!(l.counters(), vec![("max_waiters", 3)]);
    }
}
