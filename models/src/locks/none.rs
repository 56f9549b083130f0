//! No lock at all (policy `none`, for both `kind = "rwsem"` and
//! `kind = "mutex"`), a what-if policy with no kernel counterpart: every
//! acquisition, in either mode, is granted at once, however many tasks hold
//! the lock and in whatever modes, and a release wakes nobody; nobody ever
//! queues, spins or is retried. The world still counts acquisitions and
//! holds as for any lock; the policy only keeps the number of current
//! holders per mode, to catch a release without a hold in debug builds. It
//! answers "what if this lock were removed?": the critical sections still
//! cost their CPU time but never wait, which gives the lower bound that any
//! real policy's convoy is measured against.

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake};

#[derive(Clone, Debug, Default)]
pub struct NoLock {
    /// Current read holds (debug bookkeeping only).
    readers: u32,
    /// Current write holds (debug bookkeeping only).
    writers: u32,
}

impl NoLock {
    pub fn new() -> Self {
        Self::default()
    }

    fn holds(&mut self, mode: Mode) -> &mut u32 {
        match mode {
            Mode::Read => &mut self.readers,
            Mode::Write => &mut self.writers,
        }
    }
}

impl LockPolicy for NoLock {
    fn policy(&self) -> &'static str {
        "none"
    }

    fn acquire(
        &mut self,
        _ctx: &LockCtx,
        _task: TaskId,
        mode: Mode,
        _wakes: &mut Vec<Wake>,
    ) -> Acquire {
        let h = self.holds(mode);
        *h = h.saturating_add(1);
        Acquire::Granted
    }

    fn release(&mut self, _ctx: &LockCtx, _task: TaskId, mode: Mode, _wakes: &mut Vec<Wake>) {
        let h = self.holds(mode);
        debug_assert!(*h > 0, "release ({}) of a lock not held so", mode.as_str());
        *h = h.saturating_sub(1);
    }

    fn downgrade(&mut self, _ctx: &LockCtx, _task: TaskId, _wakes: &mut Vec<Wake>) {
        debug_assert!(self.writers > 0, "downgrade_write without a write hold");
        self.writers = self.writers.saturating_sub(1);
        self.readers += 1;
    }

    fn queued(&self) -> usize {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::testing::{acq, rel};

    #[test]
    fn none_grants_everything() {
        let mut l = NoLock::new();
        for (t, m) in [
            (1, Mode::Write),
            (2, Mode::Read),
            (3, Mode::Write),
            (4, Mode::Read),
        ] {
            assert_eq!(acq(&mut l, t, m), Acquire::Granted);
        }
        assert_eq!(l.queued(), 0);
        assert_eq!(l.policy(), "none");
    }

    #[test]
    fn none_releases_wake_nobody() {
        let mut l = NoLock::new();
        assert_eq!(acq(&mut l, 1, Mode::Write), Acquire::Granted);
        assert_eq!(acq(&mut l, 2, Mode::Write), Acquire::Granted);
        assert_eq!(acq(&mut l, 3, Mode::Read), Acquire::Granted);
        assert_eq!(rel(&mut l, 1, Mode::Write), vec![]);
        assert_eq!(rel(&mut l, 3, Mode::Read), vec![]);
        // The last holder leaving wakes nobody either.
        assert_eq!(rel(&mut l, 2, Mode::Write), vec![]);
        assert_eq!(l.queued(), 0);
    }

    #[test]
    fn none_serves_as_a_mutex_with_overlapping_owners() {
        // A mutex only ever asks for `Write`; overlapping owners are fine.
        let mut l = NoLock::new();
        for t in 1..=3 {
            assert_eq!(acq(&mut l, t, Mode::Write), Acquire::Granted);
        }
        for t in 1..=3 {
            assert_eq!(rel(&mut l, t, Mode::Write), vec![]);
        }
        assert_eq!(acq(&mut l, 4, Mode::Write), Acquire::Granted);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "not held")]
    fn none_release_without_a_hold_is_caught_in_debug_builds() {
        let mut l = NoLock::new();
        assert_eq!(acq(&mut l, 1, Mode::Read), Acquire::Granted);
        rel(&mut l, 1, Mode::Write);
    }
}
