//! `seqcount_t` (kind `seqcount`, policy `linux`): a sequence counter
//! (include/linux/seqlock.h, docs/kernel-rules.md R86, R87).
//!
//! - A writer (`write_seqcount_begin` ... `write_seqcount_end`) makes the
//!   count odd, then even again. It never waits: writers are serialised
//!   by a lock of their own, which the scenario names (`lock = ...`) and
//!   the compiler checks is held (R86).
//! - A reader's `read_seqcount_begin` spins on its CPU while the count is
//!   odd, and notes the even count it saw; its `read_seqcount_retry`
//!   says whether the count changed since, and the reader then reads
//!   again (R87).
//!
//! [`Sequence`] is the counter and its readers, shared with `seqlock`.

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake, WordAccess};
use sim::SimTime;

/// A sequence count, the readers in a read section with the count they
/// began with, and the readers spinning for an even count.
#[derive(Clone, Debug, Default)]
pub struct Sequence {
    seq: u32,
    /// Readers in a read section, with the even count they saw.
    readers: Vec<(TaskId, u32)>,
    /// Readers spinning in `read_seqcount_begin`, in the order they
    /// came.
    spinning: Vec<TaskId>,
    /// Read sections begun, and retried.
    retries: u64,
}

impl Sequence {
    /// The count now.
    pub fn count(&self) -> u32 {
        self.seq
    }

    /// R86: `do_raw_write_seqcount_begin`: the count becomes odd.
    pub fn write_begin(&mut self) {
        self.seq = self.seq.wrapping_add(1);
    }

    /// R86: `do_raw_write_seqcount_end`: the count becomes even again,
    /// and the readers spinning for that begin their sections (R87).
    pub fn write_end(&mut self, wakes: &mut Vec<Wake>) {
        self.seq = self.seq.wrapping_add(1);
        if self.seq & 1 == 0 {
            for t in self.spinning.drain(..) {
                self.readers.push((t, self.seq));
                wakes.push(Wake::SpinGranted(t));
            }
        }
    }

    /// R87: `read_seqcount_begin` by `t`.
    pub fn read_begin(&mut self, t: TaskId) -> Acquire {
        if self.seq & 1 == 1 {
            self.spinning.push(t);
            return Acquire::Spin { until: None };
        }
        self.readers.push((t, self.seq));
        Acquire::Granted
    }

    /// `t`'s read section ends; the count it began with.
    fn read_end(&mut self, t: TaskId) -> u32 {
        let i = (self.readers.iter())
            .position(|r| r.0 == t)
            .expect("a read section ends that began");
        self.readers.swap_remove(i).1
    }

    /// R87: `read_seqcount_retry` by `t`: whether a writer began since
    /// its section began.
    pub fn read_retry(&mut self, t: TaskId) -> bool {
        let again = self.read_end(t) != self.seq;
        self.retries += u64::from(again);
        again
    }

    /// A read section left without a retry check (a killed task).
    pub fn read_leave(&mut self, t: TaskId) {
        self.read_end(t);
    }

    /// Readers spinning for an even count.
    pub fn spinners(&self) -> &[TaskId] {
        &self.spinning
    }

    pub fn retries(&self) -> u64 {
        self.retries
    }
}

#[derive(Clone, Debug, Default)]
pub struct Seqcount {
    s: Sequence,
    writes: u64,
}

impl Seqcount {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn count(&self) -> u32 {
        self.s.count()
    }
}

impl LockPolicy for Seqcount {
    fn policy(&self) -> &'static str {
        "linux"
    }

    fn acquire(&mut self, _ctx: &LockCtx, t: TaskId, mode: Mode, _w: &mut Vec<Wake>) -> Acquire {
        match mode {
            Mode::Read => self.s.read_begin(t),
            Mode::Write => {
                self.writes += 1;
                self.s.write_begin();
                Acquire::Granted
            }
        }
    }

    fn release(&mut self, _ctx: &LockCtx, t: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        match mode {
            Mode::Read => self.s.read_leave(t),
            Mode::Write => self.s.write_end(wakes),
        }
    }

    fn read_retry(&mut self, _ctx: &LockCtx, t: TaskId) -> bool {
        self.s.read_retry(t)
    }

    fn has_spinners(&self) -> bool {
        !self.s.spinners().is_empty()
    }

    /// R87, R80: readers waiting for an even count re-read it after
    /// every write.
    fn rereaders(&self, out: &mut Vec<TaskId>) {
        out.extend_from_slice(self.s.spinners());
    }

    fn rereads(&self, mode: Mode) -> bool {
        mode == Mode::Read
    }

    /// A reader loads the count; a writer increments it.
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
        vec![("read_retries", self.s.retries())]
    }
}

#[cfg(test)]
mod tests {
    //! Scripted micro-scenarios (docs/kernel-rules.md R86, R87); the
    //! world's timing is in experiments/tests/it/seqcount.rs.
    use super::*;
    use crate::locks::testing::{acq, rel, CTX};
    use Acquire::{Granted, Spin};
    use Mode::{Read, Write};

    #[test]
    fn r86_a_writer_never_waits_and_makes_the_count_odd_then_even() {
        let mut s = Seqcount::new();
        assert_eq!(acq(&mut s, 1, Write), Granted);
        assert_eq!(s.count(), 1);
        assert_eq!(rel(&mut s, 1, Write), vec![]);
        assert_eq!(s.count(), 2);
    }

    #[test]
    fn r87_a_reader_retries_when_a_writer_overlapped_it() {
        let mut s = Seqcount::new();
        assert_eq!(acq(&mut s, 1, Read), Granted);
        assert_eq!(acq(&mut s, 2, Read), Granted);
        // 1's section ends before any write: no retry.
        assert!(!s.read_retry(&CTX, TaskId(1)));
        acq(&mut s, 3, Write);
        rel(&mut s, 3, Write);
        // 2's section overlapped the write, though it has ended.
        assert!(s.read_retry(&CTX, TaskId(2)));
        assert_eq!(s.counters(), vec![("read_retries", 1)]);
    }

    #[test]
    fn r87_a_reader_that_begins_on_an_odd_count_spins_until_the_write_ends() {
        let mut s = Seqcount::new();
        acq(&mut s, 1, Write);
        assert_eq!(acq(&mut s, 2, Read), Spin { until: None });
        assert_eq!(acq(&mut s, 3, Read), Spin { until: None });
        let mut r = Vec::new();
        s.rereaders(&mut r);
        assert_eq!(r, vec![TaskId(2), TaskId(3)]);
        assert_eq!(
            rel(&mut s, 1, Write),
            vec![Wake::SpinGranted(TaskId(2)), Wake::SpinGranted(TaskId(3))]
        );
        // They began on the even count the write left: no retry.
        assert!(!s.read_retry(&CTX, TaskId(2)));
        assert!(!s.read_retry(&CTX, TaskId(3)));
    }
}
