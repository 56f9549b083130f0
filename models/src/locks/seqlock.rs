//! `seqlock_t` (kind `seqlock`, policy `linux`): a sequence count and the
//! spinlock that serialises its writers (include/linux/seqlock.h,
//! docs/kernel-rules.md R88): `write_seqlock` is `spin_lock` (the
//! qspinlock of R76-R78) then the count's write begin (R86);
//! `write_sequnlock` the count's write end then `spin_unlock`. Readers
//! (`read_seqbegin`, `read_seqretry`) are a seqcount's (R87).

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake, WordAccess};
use crate::locks::seqcount::Sequence;
use crate::locks::spinlock::QSpinlock;
use sim::SimTime;

#[derive(Clone, Debug, Default)]
pub struct Seqlock {
    lock: QSpinlock,
    s: Sequence,
}

impl Seqlock {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn count(&self) -> u32 {
        self.s.count()
    }
}

impl LockPolicy for Seqlock {
    fn policy(&self) -> &'static str {
        "linux"
    }

    fn acquire(&mut self, ctx: &LockCtx, t: TaskId, mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        match mode {
            Mode::Read => self.s.read_begin(t),
            Mode::Write => {
                let a = self.lock.acquire(ctx, t, mode, wakes);
                if a == Acquire::Granted {
                    self.s.write_begin();
                }
                a
            }
        }
    }

    fn release(&mut self, ctx: &LockCtx, t: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        match mode {
            Mode::Read => self.s.read_leave(t),
            Mode::Write => {
                // The count first: readers spinning for an even count
                // begin their sections, then the next writer's begin
                // makes it odd again.
                self.s.write_end(wakes);
                let before = wakes.len();
                self.lock.release(ctx, t, mode, wakes);
                if wakes.len() > before {
                    self.s.write_begin();
                }
            }
        }
    }

    fn read_retry(&mut self, _ctx: &LockCtx, t: TaskId) -> bool {
        self.s.read_retry(t)
    }

    fn has_spinners(&self) -> bool {
        self.lock.has_spinners() || !self.s.spinners().is_empty()
    }

    /// Writers: the spinlock's pollers (R78).
    fn word_pollers(&self) -> [Option<TaskId>; 2] {
        self.lock.word_pollers()
    }

    /// Readers waiting for an even count (R87, R80).
    fn rereaders(&self, out: &mut Vec<TaskId>) {
        out.extend_from_slice(self.s.spinners());
    }

    fn rereads(&self, mode: Mode) -> bool {
        mode == Mode::Read
    }

    fn word_access(&self, _now: SimTime, mode: Mode, _acquire: bool) -> WordAccess {
        match mode {
            Mode::Read => WordAccess::Read,
            Mode::Write => WordAccess::Rmw,
        }
    }

    fn queued(&self) -> usize {
        0
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut c = vec![("read_retries", self.s.retries())];
        c.extend(self.lock.counters());
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::testing::{acq, rel, CTX};
    use Acquire::{Granted, Spin};
    use Mode::{Read, Write};

    #[test]
    fn r88_writers_take_the_spinlock_in_turn_and_readers_see_each_write() {
        let mut l = Seqlock::new();
        assert_eq!(acq(&mut l, 1, Write), Granted);
        assert_eq!(l.count(), 1);
        // A second writer spins on the spinlock (pending, R77); the count
        // stays odd; a reader spins for an even count.
        assert_eq!(acq(&mut l, 2, Write), Spin { until: None });
        assert_eq!(acq(&mut l, 3, Read), Spin { until: None });
        assert_eq!(l.word_pollers(), [Some(TaskId(2)), None]);
        // 1's write_sequnlock: the count is even, the reader begins; the
        // spinlock goes to 2, whose write begins.
        assert_eq!(
            rel(&mut l, 1, Write),
            vec![Wake::SpinGranted(TaskId(3)), Wake::SpinGranted(TaskId(2))]
        );
        assert_eq!(l.count(), 3);
        rel(&mut l, 2, Write);
        // The reader's section overlapped 2's write: it reads again.
        assert!(l.read_retry(&CTX, TaskId(3)));
        assert_eq!(acq(&mut l, 3, Read), Granted);
        assert!(!l.read_retry(&CTX, TaskId(3)));
    }
}
