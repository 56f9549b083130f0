//! The classic FIFO writer-queued reader-writer lock (policy `fifo`).
//!
//! This is exactly the lock of `docs/bench-convoy.md`, not the Linux rwsem:
//! - a request is granted at once only if it is compatible with the holders
//!   **and** nobody is queued, so once a writer waits, new readers queue
//!   behind it;
//! - when a release leaves the lock free, the head of the queue is granted:
//!   one writer, or the maximal run of consecutive readers at the head;
//! - grants take effect at the instant of the release.
//!
//! It shares the Linux rwsem's headline behaviour (a queued writer parks new
//! readers) without stealing, spinning, handoff timeouts or batch grants of
//! readers behind writers, so it is the baseline against which the `linux`
//! policy's extra rules are measured.

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, Holders, LockCtx, LockPolicy, Mode, Wake};
use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct FifoRwsem {
    holders: Holders,
    queue: VecDeque<(TaskId, Mode)>,
}

impl FifoRwsem {
    pub fn new() -> Self {
        Self::default()
    }

    fn is_free(&self) -> bool {
        self.holders.is_free()
    }

    fn grant_head(&mut self, wakes: &mut Vec<Wake>) {
        match self.queue.front() {
            Some(&(task, Mode::Write)) => {
                self.queue.pop_front();
                self.holders.writer = true;
                wakes.push(Wake::Granted(task));
            }
            Some(&(_, Mode::Read)) => {
                while let Some(&(task, Mode::Read)) = self.queue.front() {
                    self.queue.pop_front();
                    self.holders.readers += 1;
                    wakes.push(Wake::Granted(task));
                }
            }
            None => {}
        }
    }
}

impl LockPolicy for FifoRwsem {
    fn policy(&self) -> &'static str {
        "fifo"
    }

    fn acquire(
        &mut self,
        _ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        _wakes: &mut Vec<Wake>,
    ) -> Acquire {
        if self.queue.is_empty() {
            match mode {
                Mode::Read if !self.holders.writer => {
                    self.holders.readers += 1;
                    return Acquire::Granted;
                }
                Mode::Write if self.is_free() => {
                    self.holders.writer = true;
                    return Acquire::Granted;
                }
                _ => {}
            }
        }
        self.queue.push_back((task, mode));
        Acquire::Queued
    }

    fn release(&mut self, _ctx: &LockCtx, _task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        self.holders.release(mode);
        if self.is_free() {
            self.grant_head(wakes);
        }
    }

    /// The writer becomes a reader; readers at the head of the queue join
    /// it (a writer at the head keeps waiting).
    fn downgrade(&mut self, _ctx: &LockCtx, _task: TaskId, wakes: &mut Vec<Wake>) {
        debug_assert!(self.holders.writer, "downgrade_write without a writer");
        self.holders.writer = false;
        self.holders.readers += 1;
        while let Some(&(task, Mode::Read)) = self.queue.front() {
            self.queue.pop_front();
            self.holders.readers += 1;
            wakes.push(Wake::Granted(task));
        }
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::testing::{acq, rel};

    #[test]
    fn readers_share_until_a_writer_queues() {
        let mut l = FifoRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 3, Mode::Write), Acquire::Queued);
        // A queued writer parks every new reader.
        assert_eq!(acq(&mut l, 4, Mode::Read), Acquire::Queued);
        assert_eq!(rel(&mut l, 1, Mode::Read), vec![]);
        assert_eq!(rel(&mut l, 2, Mode::Read), vec![Wake::Granted(TaskId(3))]);
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![Wake::Granted(TaskId(4))]);
    }

    #[test]
    fn head_reader_run_stops_at_first_writer() {
        let mut l = FifoRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        for (t, m) in [
            (2, Mode::Read),
            (3, Mode::Read),
            (4, Mode::Write),
            (5, Mode::Read),
        ] {
            assert_eq!(acq(&mut l, t, m), Acquire::Queued);
        }
        assert_eq!(
            rel(&mut l, 1, Mode::Write),
            vec![Wake::Granted(TaskId(2)), Wake::Granted(TaskId(3))]
        );
        assert_eq!(rel(&mut l, 2, Mode::Read), vec![]);
        assert_eq!(rel(&mut l, 3, Mode::Read), vec![Wake::Granted(TaskId(4))]);
        assert_eq!(rel(&mut l, 4, Mode::Write), vec![Wake::Granted(TaskId(5))]);
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn writer_needs_lock_free_and_queue_empty() {
        let mut l = FifoRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Write), Acquire::Queued);
        assert_eq!(acq(&mut l, 3, Mode::Write), Acquire::Queued);
        assert_eq!(rel(&mut l, 1, Mode::Read), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(rel(&mut l, 2, Mode::Write), vec![Wake::Granted(TaskId(3))]);
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![]);
        assert_eq!(acq(&mut l, 4, Mode::Write), Acquire::Granted);
    }
}
