//! `struct percpu_rw_semaphore` (kind `percpu_rw_semaphore`, policy
//! `linux`): kernel/locking/percpu-rwsem.c, include/linux/percpu-rwsem.h
//! and the `rcu_sync` it uses, kernel/rcu/sync.c (docs/kernel-rules.md
//! R81-R85).
//!
//! - Readers (R81): while `rcu_sync` is idle (no writer for a grace
//!   period) a reader only counts itself on its CPU: no shared line, no
//!   wait. Otherwise it takes the slow path: it holds the lock unless a
//!   writer has set `block`; then it wakes the draining writer, queues
//!   FIFO and sleeps.
//! - `rcu_sync` (R82): the first writer waits a grace period before
//!   readers are known to take the slow path; writers that come during
//!   it wait for it too; writers that come after it (or within a grace
//!   period after the last writer left) wait for none. The last writer's
//!   exit goes back to idle one grace period later, by an RCU callback.
//! - Writers (R83): then `block` by an xchg, or FIFO in the queue; then
//!   wait until no reader holds the lock, woken by every slow-path
//!   `percpu_up_read` to check again.
//! - `percpu_up_write` (R84) clears `block` and wakes the queue from its
//!   head: every reader up to the first writer is granted, and that
//!   writer gets `block` (and then waits for those readers).
//!
//! The grace period is either a length given to the lock (R85), with the
//! callbacks of R82, which wake nobody, brought up to date when the lock
//! is next used; or ([`PercpuRwsem::on_rcu`]) the world's RCU model's
//! (R90-R93): the first writer waits in its `synchronize_rcu`
//! ([`Acquire::GracePeriod`]) and the exit's callback is a `call_rcu`
//! the world runs ([`LockPolicy::take_rcu_callback`]).

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake, WordAccess};
use sim::{Dur, SimTime};
use std::collections::VecDeque;

/// `rcu_sync`'s `gp_state` (kernel/rcu/sync.c), in its order: a writer
/// waits in `rcu_sync_enter` only while the state is below `Passed`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GpState {
    Idle,
    Enter,
    Passed,
    Exit,
    Replay,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    /// Acquisitions by the readers' per-CPU fast path and by the slow
    /// path.
    fast_reads: u64,
    slow_reads: u64,
    /// Grace periods writers waited for in `rcu_sync_enter`.
    grace_periods: u64,
    /// Wakeups of a writer waiting for readers to drain.
    drain_wakeups: u64,
}

#[derive(Clone, Debug)]
pub struct PercpuRwsem {
    /// A grace period's length (R85).
    gp: Dur,
    gp_state: GpState,
    /// Writers between `rcu_sync_enter` and `rcu_sync_exit`.
    gp_count: u32,
    /// In `Enter`, when the first writer's `synchronize_rcu` ends; in
    /// `Exit` and `Replay`, when the pending callback runs.
    gp_end: SimTime,
    /// The writer in `synchronize_rcu` (state `Enter`).
    gp_owner: Option<TaskId>,
    /// Writers waiting in `rcu_sync_enter` for it (`gp_wait`).
    gp_wait: Vec<TaskId>,
    /// Grace periods and callbacks are the world's RCU model's.
    on_rcu: bool,
    /// On the RCU model: a `call_rcu` of `rcu_sync_func` to hand over.
    callback_wanted: bool,
    /// Readers holding the lock (the per-CPU counts, summed).
    readers: u32,
    /// `sem->block`: a writer holds or waits for the readers to drain.
    block: bool,
    /// `sem->waiters`: FIFO, readers and writers.
    waiters: VecDeque<(TaskId, Mode)>,
    /// The writer that has `block` and waits for the readers to drain
    /// (`sem->writer`, an rcuwait), and whether it was woken and has not
    /// run since.
    drainer: Option<(TaskId, bool)>,
    /// The writer holding the lock.
    writer: Option<TaskId>,
    n: Counters,
}

impl PercpuRwsem {
    /// A lock whose `rcu_sync` waits `grace_period` for a grace period.
    pub fn new(grace_period: Dur) -> Self {
        PercpuRwsem {
            gp: grace_period,
            gp_state: GpState::Idle,
            gp_count: 0,
            gp_end: SimTime::ZERO,
            gp_owner: None,
            gp_wait: Vec::new(),
            on_rcu: false,
            callback_wanted: false,
            readers: 0,
            block: false,
            waiters: VecDeque::new(),
            drainer: None,
            writer: None,
            n: Counters::default(),
        }
    }

    /// A lock whose `rcu_sync` waits for the world's RCU model.
    pub fn on_rcu() -> Self {
        PercpuRwsem {
            on_rcu: true,
            ..PercpuRwsem::new(Dur::ZERO)
        }
    }

    /// R82: the RCU callbacks that ran by `now` (`rcu_sync_func` from
    /// `Exit` or `Replay`), which wake nobody; on the RCU model the world
    /// runs them ([`LockPolicy::rcu_callback`]).
    fn callbacks_until(&mut self, now: SimTime) {
        if self.on_rcu {
            return;
        }
        loop {
            match self.gp_state {
                GpState::Exit if now >= self.gp_end => {
                    self.gp_state = if self.gp_count > 0 {
                        GpState::Passed
                    } else {
                        GpState::Idle
                    };
                }
                GpState::Replay if now >= self.gp_end => {
                    // The callback is queued again: one more grace period.
                    self.gp_state = GpState::Exit;
                    self.gp_end += self.gp;
                }
                _ => return,
            }
        }
    }

    /// `rcu_sync_is_idle` at `now`: readers take the fast path.
    fn idle_at(&self, now: SimTime) -> bool {
        if self.on_rcu {
            return self.gp_state == GpState::Idle;
        }
        match self.gp_state {
            GpState::Idle => true,
            // The callback that makes it idle has run by `now`.
            GpState::Exit => now >= self.gp_end && self.gp_count == 0,
            GpState::Replay => now >= self.gp_end + self.gp && self.gp_count == 0,
            GpState::Enter | GpState::Passed => false,
        }
    }

    /// `rcuwait_wake_up(&sem->writer)`: the draining writer, if asleep,
    /// is woken to check the readers again.
    fn wake_drainer(&mut self, wakes: &mut Vec<Wake>) {
        if let Some((w, woken)) = &mut self.drainer {
            if !*woken {
                *woken = true;
                self.n.drain_wakeups += 1;
                wakes.push(Wake::Retry(*w));
            }
        }
    }

    /// R83: `__percpu_down_write_trylock`, then the wait for readers: the
    /// writer has the lock if it gets `block` and no reader holds it.
    fn write_block(&mut self, t: TaskId) -> Acquire {
        if self.block {
            self.waiters.push_back((t, Mode::Write));
            return Acquire::Queued;
        }
        self.block = true;
        self.drain(t)
    }

    /// `rcuwait_wait_event(readers_active_check)` for `t`, which has
    /// `block`.
    fn drain(&mut self, t: TaskId) -> Acquire {
        if self.readers == 0 {
            self.drainer = None;
            self.writer = Some(t);
            Acquire::Granted
        } else {
            self.drainer = Some((t, false));
            Acquire::Queued
        }
    }

    /// `rcu_sync_enter` for writer `t` at `now` (R82), then R83.
    fn enter(&mut self, now: SimTime, t: TaskId) -> Acquire {
        self.gp_count += 1;
        match self.gp_state {
            GpState::Idle => {
                self.gp_state = GpState::Enter;
                self.gp_owner = Some(t);
                self.gp_end = now + self.gp;
                self.n.grace_periods += 1;
                if self.on_rcu {
                    Acquire::GracePeriod
                } else {
                    Acquire::Sleep { until: self.gp_end }
                }
            }
            GpState::Enter => {
                self.gp_wait.push(t);
                Acquire::Queued
            }
            GpState::Passed | GpState::Exit | GpState::Replay => self.write_block(t),
        }
    }
}

impl LockPolicy for PercpuRwsem {
    fn policy(&self) -> &'static str {
        "linux"
    }

    fn acquire(&mut self, ctx: &LockCtx, t: TaskId, mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        self.callbacks_until(ctx.now);
        match mode {
            Mode::Write => self.enter(ctx.now, t),
            Mode::Read => {
                if self.gp_state == GpState::Idle {
                    // R81 fast path: this CPU's count.
                    self.n.fast_reads += 1;
                    self.readers += 1;
                    return Acquire::Granted;
                }
                self.n.slow_reads += 1;
                if !self.block {
                    self.readers += 1;
                    return Acquire::Granted;
                }
                // The count taken back, the writer woken, then the wait
                // queue (its trylock under the queue's lock fails too).
                self.wake_drainer(wakes);
                self.waiters.push_back((t, Mode::Read));
                Acquire::Queued
            }
        }
    }

    fn release(&mut self, ctx: &LockCtx, t: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        self.callbacks_until(ctx.now);
        match mode {
            Mode::Read => {
                debug_assert!(self.readers > 0, "percpu_up_read without a reader");
                self.readers = self.readers.saturating_sub(1);
                if self.gp_state != GpState::Idle {
                    // R81: the slow path wakes the writer to check.
                    self.wake_drainer(wakes);
                }
            }
            Mode::Write => {
                debug_assert_eq!(self.writer, Some(t), "percpu_up_write by a non-owner");
                self.writer = None;
                self.block = false;
                // R84: wake from the head, readers until one writer.
                while let Some(&(w, m)) = self.waiters.front() {
                    self.waiters.pop_front();
                    match m {
                        Mode::Read => {
                            self.readers += 1;
                            wakes.push(Wake::Granted(w));
                        }
                        Mode::Write => {
                            self.block = true;
                            self.drainer = Some((w, true));
                            wakes.push(Wake::Retry(w));
                            break;
                        }
                    }
                }
                // R82: rcu_sync_exit.
                self.gp_count -= 1;
                if self.gp_count == 0 {
                    match self.gp_state {
                        GpState::Passed => {
                            self.gp_state = GpState::Exit;
                            self.gp_end = ctx.now + self.gp;
                            self.callback_wanted = self.on_rcu;
                        }
                        GpState::Exit => self.gp_state = GpState::Replay,
                        _ => {}
                    }
                }
            }
        }
    }

    fn retry(&mut self, ctx: &LockCtx, t: TaskId, mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        debug_assert_eq!(mode, Mode::Write, "only writers are woken to retry");
        self.callbacks_until(ctx.now);
        if self.gp_owner == Some(t) {
            // R82: synchronize_rcu returned; rcu_sync_func wakes the
            // writers that waited for it.
            debug_assert!(
                self.on_rcu || ctx.now >= self.gp_end,
                "woken before its grace period ended"
            );
            self.gp_owner = None;
            self.gp_state = GpState::Passed;
            for w in self.gp_wait.drain(..) {
                wakes.push(Wake::Retry(w));
            }
            return self.write_block(t);
        }
        if let Some((d, _)) = self.drainer {
            if d == t {
                return self.drain(t);
            }
        }
        // Woken in `gp_wait`: the grace period has passed.
        debug_assert!(self.gp_state >= GpState::Passed);
        self.write_block(t)
    }

    /// R81: a reader's fast path touches only its CPU's count; the slow
    /// path reads `block` (and a slow `percpu_up_read` the writer's
    /// rcuwait beside it). Writers change `block`.
    fn word_access(&self, now: SimTime, mode: Mode, _acquire: bool) -> WordAccess {
        match mode {
            Mode::Write => WordAccess::Rmw,
            Mode::Read if self.idle_at(now) => WordAccess::None,
            Mode::Read => WordAccess::Read,
        }
    }

    fn queued(&self) -> usize {
        self.waiters.len() + self.gp_wait.len() + usize::from(self.drainer.is_some())
    }

    fn take_rcu_callback(&mut self) -> bool {
        std::mem::take(&mut self.callback_wanted)
    }

    /// R82 `rcu_sync_func` on the RCU model, in its order: a writer came
    /// meanwhile, `Passed`; else from `Replay` (another exit), `Exit` and
    /// the callback once more; else idle.
    fn rcu_callback(&mut self, _ctx: &LockCtx, _wakes: &mut Vec<Wake>) {
        debug_assert!(matches!(self.gp_state, GpState::Exit | GpState::Replay));
        if self.gp_count > 0 {
            self.gp_state = GpState::Passed;
        } else if self.gp_state == GpState::Replay {
            self.gp_state = GpState::Exit;
            self.callback_wanted = true;
        } else {
            self.gp_state = GpState::Idle;
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let n = &self.n;
        vec![
            ("fast_reads", n.fast_reads),
            ("slow_reads", n.slow_reads),
            ("grace_periods", n.grace_periods),
            ("drain_wakeups", n.drain_wakeups),
        ]
    }
}

#[cfg(test)]
mod tests {
    //! Scripted micro-scenarios, one rule each (docs/kernel-rules.md
    //! R81-R84), at given instants; the world's timing is in
    //! experiments/tests/it/percpu_rwsem.rs.
    use super::*;
    use crate::locks::policy::AllOnCpu;
    use Acquire::{Granted, Queued};
    use Mode::{Read, Write};

    const GP: Dur = Dur(8_000_000);

    struct H {
        l: PercpuRwsem,
        now: SimTime,
    }

    impl H {
        fn new() -> H {
            H {
                l: PercpuRwsem::new(GP),
                now: SimTime::ZERO,
            }
        }
        fn at(&mut self, ns: u64) -> &mut Self {
            self.now = SimTime(ns);
            self
        }
        fn ctx(&self) -> LockCtx<'static> {
            LockCtx {
                now: self.now,
                hz: 250,
                tasks: &AllOnCpu,
            }
        }
        fn acq(&mut self, t: u32, m: Mode) -> (Acquire, Vec<Wake>) {
            let mut w = Vec::new();
            let a = self.l.acquire(&self.ctx(), TaskId(t), m, &mut w);
            (a, w)
        }
        fn rel(&mut self, t: u32, m: Mode) -> Vec<Wake> {
            let mut w = Vec::new();
            self.l.release(&self.ctx(), TaskId(t), m, &mut w);
            w
        }
        fn retry(&mut self, t: u32) -> (Acquire, Vec<Wake>) {
            let mut w = Vec::new();
            let a = self.l.retry(&self.ctx(), TaskId(t), Write, &mut w);
            (a, w)
        }
        fn counter(&self, name: &str) -> u64 {
            self.l
                .counters()
                .into_iter()
                .find(|c| c.0 == name)
                .unwrap()
                .1
        }
    }

    #[test]
    fn r81_readers_take_the_per_cpu_fast_path_while_no_writer_came() {
        let mut h = H::new();
        assert_eq!(h.acq(1, Read), (Granted, vec![]));
        assert_eq!(h.acq(2, Read), (Granted, vec![]));
        assert_eq!(h.l.word_access(h.now, Read, true), WordAccess::None);
        assert_eq!(h.rel(1, Read), vec![]);
        assert_eq!(h.counter("fast_reads"), 2);
    }

    #[test]
    fn r82_the_first_writer_waits_a_grace_period_readers_go_on_meanwhile() {
        let mut h = H::new();
        // Writer 1 at 0: rcu_sync_enter from idle sleeps a grace period.
        assert_eq!(
            h.acq(1, Write).0,
            Acquire::Sleep {
                until: SimTime(GP.0)
            }
        );
        // Writer 2 at 1 ms waits for it (gp_wait).
        assert_eq!(h.at(1_000_000).acq(2, Write), (Queued, vec![]));
        // A reader at 2 ms: slow path, no block yet: it holds the lock.
        assert_eq!(h.at(2_000_000).acq(3, Read), (Granted, vec![]));
        assert_eq!(h.l.word_access(h.now, Read, true), WordAccess::Read);
        // At 8 ms writer 1 runs: Passed, writer 2 woken; 1 gets block and
        // waits for reader 3 to drain.
        assert_eq!(h.at(GP.0).retry(1), (Queued, vec![Wake::Retry(TaskId(2))]));
        assert_eq!(h.counter("grace_periods"), 1);
    }

    #[test]
    fn r83_a_writer_waits_for_readers_and_each_slow_up_read_wakes_it() {
        let mut h = H::new();
        h.acq(3, Read);
        h.acq(4, Read);
        h.acq(1, Write);
        assert_eq!(h.at(GP.0).retry(1), (Queued, vec![]));
        // A reader arriving now finds block: it wakes the writer and queues.
        assert_eq!(h.acq(5, Read), (Queued, vec![Wake::Retry(TaskId(1))]));
        // Writer 1 runs: readers 3 and 4 still in.
        assert_eq!(h.retry(1), (Queued, vec![]));
        // Reader 3 leaves: the writer is woken, still one reader.
        assert_eq!(h.rel(3, Read), vec![Wake::Retry(TaskId(1))]);
        // Reader 4 leaves before the writer ran: no second wakeup.
        assert_eq!(h.rel(4, Read), vec![]);
        assert_eq!(h.retry(1), (Granted, vec![]));
        assert_eq!(h.counter("drain_wakeups"), 2);
    }

    #[test]
    fn r84_up_write_grants_readers_up_to_the_first_writer_which_gets_block() {
        let mut h = H::new();
        h.acq(1, Write);
        assert_eq!(h.at(GP.0).retry(1), (Granted, vec![]));
        assert_eq!(h.acq(2, Read), (Queued, vec![]));
        assert_eq!(h.acq(3, Read), (Queued, vec![]));
        // A second writer passes rcu_sync_enter at once (Passed) and queues.
        assert_eq!(h.acq(4, Write), (Queued, vec![]));
        assert_eq!(h.acq(5, Read), (Queued, vec![]));
        assert_eq!(
            h.rel(1, Write),
            vec![
                Wake::Granted(TaskId(2)),
                Wake::Granted(TaskId(3)),
                Wake::Retry(TaskId(4))
            ]
        );
        // Writer 4 has block: it waits for readers 2 and 3; reader 5 stays.
        assert_eq!(h.retry(4), (Queued, vec![]));
        assert_eq!(h.rel(2, Read), vec![Wake::Retry(TaskId(4))]);
        assert_eq!(h.retry(4), (Queued, vec![]));
        assert_eq!(h.rel(3, Read), vec![Wake::Retry(TaskId(4))]);
        assert_eq!(h.retry(4), (Granted, vec![]));
        assert_eq!(h.rel(4, Write), vec![Wake::Granted(TaskId(5))]);
    }

    #[test]
    fn r82_on_the_rcu_model_the_writer_waits_in_synchronize_rcu_and_the_exit_is_a_callback() {
        let mut h = H::new();
        h.l = PercpuRwsem::on_rcu();
        assert_eq!(h.acq(1, Write).0, Acquire::GracePeriod);
        assert!(!h.l.take_rcu_callback());
        // The world's grace period ends at 5 ms: the writer retries.
        assert_eq!(h.at(5_000_000).retry(1), (Granted, vec![]));
        // Its release asks for rcu_sync_func's callback, once.
        h.at(6_000_000).rel(1, Write);
        assert!(h.l.take_rcu_callback());
        assert!(!h.l.take_rcu_callback());
        // Readers take the slow path until the callback runs, whenever.
        h.at(60_000_000);
        assert_eq!(h.l.word_access(h.now, Read, true), WordAccess::Read);
        // A second writer and its exit before the callback: Replay, so
        // the callback runs once more before the lock is idle.
        assert_eq!(h.acq(2, Write), (Granted, vec![]));
        h.rel(2, Write);
        assert!(!h.l.take_rcu_callback(), "one callback in flight");
        let ctx = h.ctx();
        h.l.rcu_callback(&ctx, &mut Vec::new());
        assert!(h.l.take_rcu_callback(), "requeued from Replay");
        assert_eq!(h.l.word_access(h.now, Read, true), WordAccess::Read);
        h.l.rcu_callback(&ctx, &mut Vec::new());
        assert_eq!(h.l.word_access(h.now, Read, true), WordAccess::None);
        assert_eq!(h.counter("grace_periods"), 1);
    }

    #[test]
    fn r82_after_the_last_writer_readers_go_fast_again_one_grace_period_later() {
        let mut h = H::new();
        h.acq(1, Write);
        h.at(GP.0).retry(1);
        // Released at 10 ms: Exit, the callback at 18 ms.
        h.at(10_000_000).rel(1, Write);
        h.at(11_000_000);
        assert_eq!(h.l.word_access(h.now, Read, true), WordAccess::Read);
        assert_eq!(h.acq(2, Read), (Granted, vec![]));
        assert_eq!(h.counter("slow_reads"), 1);
        // A writer within that grace period does not wait for one.
        assert_eq!(h.at(12_000_000).acq(3, Write), (Queued, vec![]));
        assert_eq!(h.rel(2, Read), vec![Wake::Retry(TaskId(3))]);
        assert_eq!(h.retry(3), (Granted, vec![]));
        // It leaves before the callback: Replay, so idle only at 26 ms.
        h.at(13_000_000).rel(3, Write);
        assert_eq!(h.at(25_999_999).acq(4, Read), (Granted, vec![]));
        assert_eq!(h.counter("slow_reads"), 2);
        h.rel(4, Read);
        h.at(26_000_000);
        assert_eq!(h.l.word_access(h.now, Read, true), WordAccess::None);
        assert_eq!(h.acq(5, Read), (Granted, vec![]));
        assert_eq!(h.counter("fast_reads"), 1);
        // From idle, the next writer waits a whole grace period again.
        h.rel(5, Read);
        assert_eq!(
            h.at(30_000_000).acq(6, Write).0,
            Acquire::Sleep {
                until: SimTime(38_000_000)
            }
        );
    }
}
