//! A strictly writer-preferring reader-writer lock (policy `writer-pref`), a
//! what-if policy with no kernel counterpart: a reader is granted at once
//! only if no writer holds the lock and no writer is queued, so one queued
//! writer parks every new reader (no stealing); a writer is granted at once
//! only if the lock is free and no other writer is queued, and otherwise
//! queues FIFO behind earlier writers; when a release leaves the lock free,
//! the first queued writer is granted if there is one, otherwise every queued
//! reader is granted in arrival order. Readers therefore starve while writers
//! keep arriving. Grants are handoffs at the instant of the release
//! (`Wake::Granted`, in grant order); there is no spinning, no `Wake::Retry`,
//! no handoff flag. It answers "what if kernfs_rwsem (or any rwsem of a
//! scenario) favoured writers outright?": unlike `fifo`, which serves
//! writers and reader runs in arrival order, writers here overtake readers
//! that queued before them, which bounds writer latency and maximises the
//! reader convoy behind them.

use crate::lock::{Acquire, Holders, LockCtx, LockPolicy, Mode, TaskId, Wake};
use std::collections::VecDeque;

#[derive(Debug, Default)]
pub struct WriterPrefRwsem {
    holders: Holders,
    /// Readers waiting for no writer to hold or be queued, in arrival order.
    read_queue: VecDeque<TaskId>,
    /// Writers waiting for the lock to be free, in arrival order.
    write_queue: VecDeque<TaskId>,
}

impl WriterPrefRwsem {
    pub fn new() -> Self {
        Self::default()
    }

    fn is_free(&self) -> bool {
        self.holders.is_free()
    }

    /// The lock is free: hand it to the first queued writer, or else to every
    /// queued reader.
    fn grant_waiters(&mut self, wakes: &mut Vec<Wake>) {
        if let Some(task) = self.write_queue.pop_front() {
            self.holders.writer = true;
            wakes.push(Wake::Granted(task));
        } else {
            for task in self.read_queue.drain(..) {
                self.holders.readers += 1;
                wakes.push(Wake::Granted(task));
            }
        }
    }
}

impl LockPolicy for WriterPrefRwsem {
    fn policy(&self) -> &'static str {
        "writer-pref"
    }

    fn acquire(
        &mut self,
        _ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        _wakes: &mut Vec<Wake>,
    ) -> Acquire {
        let writer_queued = !self.write_queue.is_empty();
        match mode {
            Mode::Read if !self.holders.writer && !writer_queued => {
                self.holders.readers += 1;
                Acquire::Granted
            }
            Mode::Read => {
                self.read_queue.push_back(task);
                Acquire::Queued
            }
            Mode::Write if self.is_free() && !writer_queued => {
                self.holders.writer = true;
                Acquire::Granted
            }
            Mode::Write => {
                self.write_queue.push_back(task);
                Acquire::Queued
            }
        }
    }

    fn release(&mut self, _ctx: &LockCtx, _task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        self.holders.release(mode);
        if self.is_free() {
            self.grant_waiters(wakes);
        }
    }

    fn queued(&self) -> usize {
        self.read_queue.len() + self.write_queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{acq, rel};

    #[test]
    fn writer_pref_queued_writer_parks_new_readers() {
        let mut l = WriterPrefRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 3, Mode::Write), Acquire::Queued);
        // Readers hold, but a writer waits: new readers park behind it.
        assert_eq!(acq(&mut l, 4, Mode::Read), Acquire::Queued);
        assert_eq!(rel(&mut l, 1, Mode::Read), vec![]);
        assert_eq!(rel(&mut l, 2, Mode::Read), vec![Wake::Granted(3)]);
        assert_eq!(acq(&mut l, 5, Mode::Read), Acquire::Queued);
        assert_eq!(
            rel(&mut l, 3, Mode::Write),
            vec![Wake::Granted(4), Wake::Granted(5)]
        );
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn writer_pref_writers_overtake_earlier_queued_readers() {
        let mut l = WriterPrefRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        for (t, m) in [
            (2, Mode::Read),
            (3, Mode::Write),
            (4, Mode::Read),
            (5, Mode::Write),
        ] {
            assert_eq!(acq(&mut l, t, m), Acquire::Queued);
        }
        // Writers first, one at a time, in arrival order...
        assert_eq!(rel(&mut l, 1, Mode::Write), vec![Wake::Granted(3)]);
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![Wake::Granted(5)]);
        // ...then every queued reader at once, in arrival order.
        assert_eq!(
            rel(&mut l, 5, Mode::Write),
            vec![Wake::Granted(2), Wake::Granted(4)]
        );
        assert_eq!(rel(&mut l, 2, Mode::Read), vec![]);
        assert_eq!(rel(&mut l, 4, Mode::Read), vec![]);
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn writer_pref_last_reader_leaving_with_empty_queue_wakes_nobody() {
        let mut l = WriterPrefRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Read), Acquire::Granted);
        assert_eq!(rel(&mut l, 1, Mode::Read), vec![]);
        assert_eq!(rel(&mut l, 2, Mode::Read), vec![]);
        // Free with nobody queued: a writer is granted at once, and a writer
        // queued behind it is granted on its release.
        assert_eq!(acq(&mut l, 3, Mode::Write), Acquire::Granted);
        assert_eq!(acq(&mut l, 4, Mode::Write), Acquire::Queued);
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![Wake::Granted(4)]);
        assert_eq!(rel(&mut l, 4, Mode::Write), vec![]);
        assert_eq!(acq(&mut l, 5, Mode::Read), Acquire::Granted);
        assert_eq!(l.queued(), 0);
    }
}
