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

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake};
use crate::locks::split_queues::SplitQueues;

#[derive(Clone, Debug, Default)]
pub struct WriterPrefRwsem {
    q: SplitQueues,
}

impl WriterPrefRwsem {
    pub fn new() -> Self {
        Self::default()
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
        if self.q.writer_fair_admits(mode) {
            self.q.grant(mode)
        } else {
            self.q.enqueue(task, mode)
        }
    }

    /// A release that frees the lock grants the first waiting writer, or
    /// else every waiting reader.
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
    use crate::locks::testing::{acq, rel};

    #[test]
    fn writer_pref_queued_writer_parks_new_readers() {
        let mut l = WriterPrefRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 3, Mode::Write), Acquire::Queued);
        // Readers hold, but a writer waits: new readers park behind it.
        assert_eq!(acq(&mut l, 4, Mode::Read), Acquire::Queued);
        assert_eq!(rel(&mut l, 1, Mode::Read), vec![]);
        assert_eq!(rel(&mut l, 2, Mode::Read), vec![Wake::Granted(TaskId(3))]);
        assert_eq!(acq(&mut l, 5, Mode::Read), Acquire::Queued);
        assert_eq!(
            rel(&mut l, 3, Mode::Write),
            vec![Wake::Granted(TaskId(4)), Wake::Granted(TaskId(5))]
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
        assert_eq!(rel(&mut l, 1, Mode::Write), vec![Wake::Granted(TaskId(3))]);
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![Wake::Granted(TaskId(5))]);
        // ...then every queued reader at once, in arrival order.
        assert_eq!(
            rel(&mut l, 5, Mode::Write),
            vec![Wake::Granted(TaskId(2)), Wake::Granted(TaskId(4))]
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
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![Wake::Granted(TaskId(4))]);
        assert_eq!(rel(&mut l, 4, Mode::Write), vec![]);
        assert_eq!(acq(&mut l, 5, Mode::Read), Acquire::Granted);
        assert_eq!(l.queued(), 0);
    }
}
