//! A reader-preferring reader-writer lock (policy `reader-pref`), a what-if
//! policy with no kernel counterpart: a reader is granted at once whenever no
//! writer holds the lock, even while writers are queued, so readers that keep
//! overlapping starve writers; a writer is granted at once only if the lock
//! is free (no readers, no writer), and otherwise queues FIFO behind earlier
//! writers; readers queue (FIFO) only while a writer holds; when a release
//! leaves the lock free, every queued reader is granted in arrival order if
//! any are queued, otherwise the first queued writer is. Grants are handoffs
//! at the instant of the release (`Wake::Granted`, in grant order); there is
//! no spinning, no `Wake::Retry`, no handoff flag. It answers "what if
//! kernfs_rwsem (or any rwsem of a scenario) were reader-preferring?": new
//! readers are never parked behind a queued writer, which removes the reader
//! convoy of the `fifo` and Linux locks at the price of writer starvation.

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake};
use crate::locks::split_queues::SplitQueues;

#[derive(Clone, Debug, Default)]
pub struct ReaderPrefRwsem {
    q: SplitQueues,
}

impl ReaderPrefRwsem {
    pub fn new() -> Self {
        Self::default()
    }
}

impl LockPolicy for ReaderPrefRwsem {
    fn policy(&self) -> &'static str {
        "reader-pref"
    }

    fn acquire(
        &mut self,
        _ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        _wakes: &mut Vec<Wake>,
    ) -> Acquire {
        // A free lock has nobody queued: every release that frees it
        // grants the waiters, so a writer that finds it free jumps no queue.
        let admits = match mode {
            Mode::Read => !self.q.holders.writer,
            Mode::Write => self.q.holders.is_free(),
        };
        if admits {
            self.q.grant(mode)
        } else {
            self.q.enqueue(task, mode)
        }
    }

    /// A release that frees the lock grants every waiting reader, or else
    /// the first waiting writer.
    fn release(&mut self, _ctx: &LockCtx, _task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        self.q.holders.release(mode);
        if self.q.holders.is_free() && !self.q.grant_readers(wakes) {
            self.q.grant_writer(wakes);
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
    fn reader_pref_readers_pass_queued_writers() {
        let mut l = ReaderPrefRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Write), Acquire::Queued);
        // A queued writer parks nobody: new readers join the holders.
        assert_eq!(acq(&mut l, 3, Mode::Read), Acquire::Granted);
        assert_eq!(rel(&mut l, 1, Mode::Read), vec![]);
        assert_eq!(acq(&mut l, 4, Mode::Read), Acquire::Granted);
        assert_eq!(rel(&mut l, 3, Mode::Read), vec![]);
        assert_eq!(l.queued(), 1);
        // The writer gets the lock only when the readers happen to drain.
        assert_eq!(rel(&mut l, 4, Mode::Read), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(l.queued(), 0);
        assert_eq!(rel(&mut l, 2, Mode::Write), vec![]);
    }

    #[test]
    fn reader_pref_writer_release_grants_all_queued_readers_before_writers() {
        let mut l = ReaderPrefRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        for (t, m) in [
            (2, Mode::Write),
            (3, Mode::Read),
            (4, Mode::Write),
            (5, Mode::Read),
        ] {
            assert_eq!(acq(&mut l, t, m), Acquire::Queued);
        }
        // Every queued reader, in arrival order, even those behind writers.
        assert_eq!(
            rel(&mut l, 1, Mode::Write),
            vec![Wake::Granted(TaskId(3)), Wake::Granted(TaskId(5))]
        );
        assert_eq!(acq(&mut l, 6, Mode::Read), Acquire::Granted);
        assert_eq!(rel(&mut l, 3, Mode::Read), vec![]);
        assert_eq!(rel(&mut l, 5, Mode::Read), vec![]);
        // Then the writers, one at a time, in arrival order.
        assert_eq!(rel(&mut l, 6, Mode::Read), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(rel(&mut l, 2, Mode::Write), vec![Wake::Granted(TaskId(4))]);
        assert_eq!(rel(&mut l, 4, Mode::Write), vec![]);
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn reader_pref_writer_needs_a_free_lock_and_empty_queue_wakes_nobody() {
        let mut l = ReaderPrefRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Write), Acquire::Queued);
        assert_eq!(acq(&mut l, 3, Mode::Read), Acquire::Queued);
        // The queued reader goes before the earlier queued writer.
        assert_eq!(rel(&mut l, 1, Mode::Write), vec![Wake::Granted(TaskId(3))]);
        assert_eq!(rel(&mut l, 3, Mode::Read), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(rel(&mut l, 2, Mode::Write), vec![]);
        // Free with nobody queued: granted at once, in either mode.
        assert_eq!(acq(&mut l, 4, Mode::Write), Acquire::Granted);
        assert_eq!(rel(&mut l, 4, Mode::Write), vec![]);
        assert_eq!(acq(&mut l, 5, Mode::Read), Acquire::Granted);
        assert_eq!(rel(&mut l, 5, Mode::Read), vec![]);
        assert_eq!(l.queued(), 0);
    }
}
