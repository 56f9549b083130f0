//! A phase-fair reader-writer lock (policy `phase-fair`, after Brandenburg
//! and Anderson's phase-fair RW lock), a what-if policy with no kernel
//! counterpart: reader phases and writer phases alternate. A reader is
//! granted at once only if no writer holds the lock and no writer is
//! waiting; otherwise it waits for the next reader phase. A writer is
//! granted at once only if the lock is free and no other writer waits;
//! otherwise it waits, FIFO among writers, and while it waits for the
//! current readers to drain it parks every new reader. When a writer
//! releases, every waiting reader is granted together (a reader phase), in
//! arrival order, even if more writers wait; only if no reader waits is the
//! next writer granted. When the last reader of a phase releases, the first
//! waiting writer is granted. So a reader waits for at most one writer's
//! critical section and a writer for at most one reader phase per writer
//! ahead of it. Grants are handoffs at the instant of the release
//! (`Wake::Granted`, in grant order); there is no spinning, no `Wake::Retry`,
//! no handoff flag. It answers "what if kernfs_rwsem (or any rwsem of a
//! scenario) were phase-fair?": readers that arrive behind a queued writer
//! still convoy, but only for one writer, not for the whole writer queue.

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake};
use crate::locks::split_queues::SplitQueues;

#[derive(Clone, Debug, Default)]
pub struct PhaseFairRwsem {
    q: SplitQueues,
}

impl PhaseFairRwsem {
    pub fn new() -> Self {
        Self::default()
    }
}

impl LockPolicy for PhaseFairRwsem {
    fn policy(&self) -> &'static str {
        "phase-fair"
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

    fn release(&mut self, _ctx: &LockCtx, _task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        self.q.holders.release(mode);
        match mode {
            // The last reader of a phase hands over to the first writer.
            // (Readers only wait while a writer holds or waits, so with no
            // writer waiting the reader queue is empty here.)
            Mode::Read => {
                if self.q.holders.readers == 0 && !self.q.grant_writer(wakes) {
                    self.q.grant_readers(wakes);
                }
            }
            // A writer's release opens a reader phase if any reader waits,
            // however many writers wait.
            Mode::Write => {
                if !self.q.grant_readers(wakes) {
                    self.q.grant_writer(wakes);
                }
            }
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
    fn phase_fair_writer_release_admits_all_waiting_readers_even_with_writers_queued() {
        let mut l = PhaseFairRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        for (t, m) in [
            (2, Mode::Read),
            (3, Mode::Write),
            (4, Mode::Read),
            (5, Mode::Write),
        ] {
            assert_eq!(acq(&mut l, t, m), Acquire::Queued);
        }
        // Reader phase: every waiting reader, including those that arrived
        // behind writer 3.
        assert_eq!(
            rel(&mut l, 1, Mode::Write),
            vec![Wake::Granted(TaskId(2)), Wake::Granted(TaskId(4))]
        );
        // A reader arriving during the phase while a writer waits waits for
        // the next reader phase.
        assert_eq!(acq(&mut l, 6, Mode::Read), Acquire::Queued);
        assert_eq!(rel(&mut l, 2, Mode::Read), vec![]);
        // Last reader of the phase: the first waiting writer.
        assert_eq!(rel(&mut l, 4, Mode::Read), vec![Wake::Granted(TaskId(3))]);
        // Writer 3 leaves: reader 6 goes before writer 5.
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![Wake::Granted(TaskId(6))]);
        assert_eq!(rel(&mut l, 6, Mode::Read), vec![Wake::Granted(TaskId(5))]);
        assert_eq!(rel(&mut l, 5, Mode::Write), vec![]);
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn phase_fair_arriving_writer_waits_for_readers_and_blocks_new_ones() {
        let mut l = PhaseFairRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Read), Acquire::Granted);
        assert_eq!(acq(&mut l, 3, Mode::Write), Acquire::Queued);
        assert_eq!(acq(&mut l, 4, Mode::Read), Acquire::Queued);
        assert_eq!(rel(&mut l, 1, Mode::Read), vec![]);
        assert_eq!(rel(&mut l, 2, Mode::Read), vec![Wake::Granted(TaskId(3))]);
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![Wake::Granted(TaskId(4))]);
        assert_eq!(rel(&mut l, 4, Mode::Read), vec![]);
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn phase_fair_writers_are_fifo_when_no_reader_waits() {
        let mut l = PhaseFairRwsem::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Write), Acquire::Queued);
        assert_eq!(acq(&mut l, 3, Mode::Write), Acquire::Queued);
        assert_eq!(rel(&mut l, 1, Mode::Write), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(rel(&mut l, 2, Mode::Write), vec![Wake::Granted(TaskId(3))]);
        // Empty queues: the release wakes nobody and the lock is free.
        assert_eq!(rel(&mut l, 3, Mode::Write), vec![]);
        assert_eq!(acq(&mut l, 4, Mode::Read), Acquire::Granted);
        assert_eq!(rel(&mut l, 4, Mode::Read), vec![]);
        assert_eq!(acq(&mut l, 5, Mode::Write), Acquire::Granted);
        assert_eq!(l.queued(), 0);
    }
}
