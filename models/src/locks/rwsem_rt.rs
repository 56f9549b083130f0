//! A simplified model of the PREEMPT_RT rw_semaphore (policy `rt`,
//! `kernel/locking/rwbase_rt.c`, built on an rtmutex), made writer-preferring
//! and priority-ordered: a reader is granted at once only if no writer holds
//! the lock and no writer is queued, so a pending writer parks every new
//! reader (RT or not); a writer is granted at once only if the lock is free
//! and no writer is queued; waiters are ordered by priority, tasks for which
//! [`TaskView::is_rt`](super::policy::TaskView::is_rt) holds (asked once, when they queue) before the others,
//! FIFO within a class (a sequence number per enqueue keeps the order
//! stable); when a release leaves the lock free, the highest-priority queued
//! writer is granted if any writer is queued, otherwise every queued reader
//! is granted, in priority order. Grants are handoffs at the instant of the
//! release (`Wake::Granted`, in grant order); there is no spinning, no
//! `Wake::Retry` and no handoff flag. It answers "what if kernfs_rwsem ran on
//! a PREEMPT_RT kernel?" only roughly, because it departs from the kernel in
//! four stated ways: priority inheritance (boosting the rtmutex owner to its
//! top waiter's priority) is not modelled, since it needs the CPU model; the
//! kernel is *not* writer fair (a reader that finds a writer still waiting
//! for readers to drain is let in, down_read step 3 of rwbase_rt.c), whereas
//! here a queued writer parks new readers; the kernel serves rtmutex waiters,
//! readers and writers alike, in one priority order and the first writer to
//! arrive owns the rtmutex at once, whereas here writers always go before
//! readers and a later RT writer overtakes an earlier non-RT one; and the
//! kernel wakes its top waiter, which takes the rtmutex when it runs (and may
//! lose it to a steal), whereas here the grant is made at the release.

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake};
use crate::locks::split_queues::{SplitQueues, Waiting};

/// A queued task and its place in the priority order.
#[derive(Debug, Clone, Copy)]
struct Waiter {
    task: TaskId,
    rt: bool,
    seq: u64,
}

impl Waiter {
    /// Smaller goes first: RT before non-RT, then arrival order.
    fn key(&self) -> (bool, u64) {
        (!self.rt, self.seq)
    }
}

impl Waiting for Waiter {
    fn task(&self) -> TaskId {
        self.task
    }
}

#[derive(Clone, Debug, Default)]
pub struct RtRwsem {
    /// Both queues sorted by [`Waiter::key`].
    q: SplitQueues<Waiter>,
    /// Sequence number of the next enqueue.
    next_seq: u64,
}

impl RtRwsem {
    pub fn new() -> Self {
        Self::default()
    }

    fn enqueue(&mut self, ctx: &LockCtx, task: TaskId, mode: Mode) -> Acquire {
        let w = Waiter {
            task,
            rt: ctx.tasks.is_rt(task),
            seq: self.next_seq,
        };
        self.next_seq += 1;
        let queue = match mode {
            Mode::Read => &mut self.q.readers,
            Mode::Write => &mut self.q.writers,
        };
        let at = queue.partition_point(|q| q.key() < w.key());
        queue.insert(at, w);
        Acquire::Queued
    }
}

impl LockPolicy for RtRwsem {
    fn policy(&self) -> &'static str {
        "rt"
    }

    fn acquire(
        &mut self,
        ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        _wakes: &mut Vec<Wake>,
    ) -> Acquire {
        if self.q.writer_fair_admits(mode) {
            self.q.grant(mode)
        } else {
            self.enqueue(ctx, task, mode)
        }
    }

    /// A release that frees the lock grants the highest-priority queued
    /// writer, or else every queued reader in priority order.
    fn release(&mut self, _ctx: &LockCtx, _task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        self.q.holders.release(mode);
        if self.q.holders.is_free() && !self.q.grant_writer(wakes) {
            self.q.grant_readers(wakes);
        }
    }

    fn queued(&self) -> usize {
        self.q.queued()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::policy::TaskView;
    use sim::SimTime;

    /// Tasks 100 and above are RT; everybody is on a CPU.
    struct RtFrom100;

    impl TaskView for RtFrom100 {
        fn is_rt(&self, t: TaskId) -> bool {
            t >= TaskId(100)
        }
        fn on_cpu(&self, _: TaskId) -> bool {
            true
        }
        fn need_resched(&self, _: TaskId) -> bool {
            false
        }
    }

    const T: LockCtx = LockCtx {
        now: SimTime(0),
        hz: 250,
        tasks: &RtFrom100,
    };

    fn acq(l: &mut RtRwsem, t: u32, m: Mode) -> Acquire {
        let t = TaskId(t);
        let mut w = Vec::new();
        let a = l.acquire(&T, t, m, &mut w);
        assert!(w.is_empty());
        a
    }
    fn rel(l: &mut RtRwsem, t: u32, m: Mode) -> Vec<Wake> {
        let t = TaskId(t);
        let mut w = Vec::new();
        l.release(&T, t, m, &mut w);
        w
    }

    #[test]
    fn rt_waiters_are_served_by_priority_then_fifo() {
        let mut l = RtRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        for t in [2, 101, 3, 102] {
            assert_eq!(acq(&mut l, t, Mode::Write), Acquire::Queued);
        }
        assert_eq!(
            rel(&mut l, 1, Mode::Write),
            vec![Wake::Granted(TaskId(101))]
        );
        assert_eq!(
            rel(&mut l, 101, Mode::Write),
            vec![Wake::Granted(TaskId(102))]
        );
        assert_eq!(
            rel(&mut l, 102, Mode::Write),
            vec![Wake::Granted(TaskId(2))]
        );
        assert_eq!(rel(&mut l, 2, Mode::Write), vec![Wake::Granted(TaskId(3))]);
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![]);
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn rt_reader_batch_is_granted_in_priority_order() {
        let mut l = RtRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        for t in [2, 3, 101, 4, 102] {
            assert_eq!(acq(&mut l, t, Mode::Read), Acquire::Queued);
        }
        assert_eq!(
            rel(&mut l, 1, Mode::Write),
            vec![
                Wake::Granted(TaskId(101)),
                Wake::Granted(TaskId(102)),
                Wake::Granted(TaskId(2)),
                Wake::Granted(TaskId(3)),
                Wake::Granted(TaskId(4)),
            ]
        );
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn rt_queued_writer_parks_new_readers_even_rt_ones() {
        let mut l = RtRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Write), Acquire::Queued);
        assert_eq!(acq(&mut l, 3, Mode::Read), Acquire::Queued);
        assert_eq!(acq(&mut l, 101, Mode::Read), Acquire::Queued);
        // The last reader leaving hands the lock to the pending writer.
        assert_eq!(rel(&mut l, 1, Mode::Read), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(
            rel(&mut l, 2, Mode::Write),
            vec![Wake::Granted(TaskId(101)), Wake::Granted(TaskId(3))]
        );
        assert_eq!(rel(&mut l, 3, Mode::Read), vec![]);
        assert_eq!(rel(&mut l, 101, Mode::Read), vec![]);
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn rt_writers_go_before_higher_priority_readers() {
        let mut l = RtRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        assert_eq!(acq(&mut l, 101, Mode::Read), Acquire::Queued);
        assert_eq!(acq(&mut l, 2, Mode::Write), Acquire::Queued);
        assert_eq!(rel(&mut l, 1, Mode::Write), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(
            rel(&mut l, 2, Mode::Write),
            vec![Wake::Granted(TaskId(101))]
        );
        // Empty queue: the last release wakes nobody.
        assert_eq!(rel(&mut l, 101, Mode::Read), vec![]);
        assert_eq!(acq(&mut l, 3, Mode::Write), Acquire::Granted);
        assert_eq!(l.queued(), 0);
    }
}
