//! The Linux `mutex` (policy `linux`), from docs/kernel-rules.md R25-R31
//! (kernel/locking/mutex.c, osq_lock.c, !PREEMPT_RT).
//!
//! - Fast paths (R26): lock is a cmpxchg 0 -> owner, failing on any flag;
//!   the slowpath's trylock succeeds whenever no task owns the mutex, even
//!   with sleepers queued: new arrivals barge.
//! - Optimistic spinning (R27, R28): while the owner runs, writers spin in
//!   OSQ order (only the head spins on the owner) and take the mutex the
//!   moment it is released, ahead of the sleepers; they stop when the owner
//!   leaves its CPU or a CPU is wanted, and enqueue.
//! - Sleepers are strictly FIFO (R27 step 4). An unlock wakes the head
//!   (R30); the woken head that finds the mutex taken sets HANDOFF at once
//!   (R29) and spins on the owner directly (no OSQ); the next unlock then
//!   hands the mutex to it (PICKUP), and nobody can barge in between (R31).
//!
//! Within one instant a release is seen first by the spinners polling the
//! owner word, then by the woken head.

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake};
use std::collections::VecDeque;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Waiter {
    task: TaskId,
    /// Woken and not yet run: not woken twice.
    woken: bool,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    barges: u64,
    spins: u64,
    spin_successes: u64,
    handoffs: u64,
    wakeups: u64,
}

#[derive(Clone, Debug)]
pub struct LinuxMutex {
    /// CONFIG_MUTEX_SPIN_ON_OWNER.
    spin_on_owner: bool,
    owner: Option<TaskId>,
    /// MUTEX_FLAG_HANDOFF, set by the woken head that failed (R29).
    handoff: bool,
    queue: VecDeque<Waiter>,
    /// OSQ spinners (R28); the head spins on the owner.
    osq: VecDeque<TaskId>,
    /// The woken head spinning on the owner after setting HANDOFF (R29).
    head_spinner: Option<TaskId>,
    n: Counters,
}

impl Default for LinuxMutex {
    fn default() -> Self {
        Self::new(true)
    }
}

impl LinuxMutex {
    pub fn new(spin_on_owner: bool) -> Self {
        LinuxMutex {
            spin_on_owner,
            owner: None,
            handoff: false,
            queue: VecDeque::new(),
            osq: VecDeque::new(),
            head_spinner: None,
            n: Counters::default(),
        }
    }

    pub fn owner(&self) -> Option<TaskId> {
        self.owner
    }

    fn owner_runs(&self, ctx: &LockCtx) -> bool {
        self.owner.is_some_and(|o| ctx.tasks.on_cpu(o))
    }

    /// `__mutex_trylock` (R26): succeeds whenever no task owns the mutex.
    fn mutex_trylock(&mut self, t: TaskId) -> bool {
        if self.owner.is_some() {
            return false;
        }
        if !self.queue.is_empty() {
            self.n.barges += 1;
        }
        self.owner = Some(t);
        true
    }

    /// `mutex_can_spin_on_owner` (R27 step 2) for `t`.
    fn can_spin(&self, ctx: &LockCtx, t: TaskId) -> bool {
        self.spin_on_owner && !ctx.tasks.need_resched(t) && self.owner_runs(ctx)
    }

    /// Enqueues `t` at the FIFO tail (R27 step 4), after one more trylock
    /// under wait_lock (step 3). Returns whether it got the mutex.
    fn enqueue(&mut self, t: TaskId) -> bool {
        if self.mutex_trylock(t) {
            return true;
        }
        self.queue.push_back(Waiter {
            task: t,
            woken: false,
        });
        false
    }

    /// Lets spinners react: the OSQ head takes a free mutex, or gives up
    /// when its owner is off CPU or a CPU is wanted (then the next head
    /// looks); the handoff-spinning head gives up likewise.
    #[inline(always)]
    fn update_spinners(&mut self, ctx: &LockCtx, wakes: &mut Vec<Wake>) {
        // Most lock operations find no spinner: decided here, inline.
        if self.head_spinner.is_some() || !self.osq.is_empty() {
            self.update_spinners_slow(ctx, wakes);
        }
    }

    /// [`Self::update_spinners`] when there is a spinner.
    #[inline(never)]
    fn update_spinners_slow(&mut self, ctx: &LockCtx, wakes: &mut Vec<Wake>) {
        if let Some(t) = self.head_spinner {
            if self.owner.is_none() || !self.owner_runs(ctx) || ctx.tasks.need_resched(t) {
                self.head_spinner = None;
                if self.owner.is_none() && self.queue.front().is_some_and(|w| w.task == t) {
                    self.queue.pop_front();
                    self.owner = Some(t);
                    wakes.push(Wake::SpinGranted(t));
                } else {
                    wakes.push(Wake::SpinSlept(t));
                }
            }
        }
        while let Some(&t) = self.osq.front() {
            if self.owner.is_none() {
                self.osq.pop_front();
                self.owner = Some(t);
                self.n.spin_successes += 1;
                if !self.queue.is_empty() {
                    self.n.barges += 1;
                }
                wakes.push(Wake::SpinGranted(t));
            } else if !self.owner_runs(ctx) || ctx.tasks.need_resched(t) {
                self.osq.pop_front();
                if self.enqueue(t) {
                    wakes.push(Wake::SpinGranted(t));
                } else {
                    wakes.push(Wake::SpinSlept(t));
                }
            } else {
                return;
            }
        }
    }
}

impl LockPolicy for LinuxMutex {
    fn policy(&self) -> &'static str {
        "linux"
    }

    fn acquire(&mut self, ctx: &LockCtx, t: TaskId, _mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        // R26 fast path, then the slowpath's trylock (R27 step 1).
        if self.mutex_trylock(t) {
            return Acquire::Granted;
        }
        // R27 step 2: optimistic spinning while the owner runs.
        if self.can_spin(ctx, t) {
            self.n.spins += 1;
            self.osq.push_back(t);
            return Acquire::Spin { until: None };
        }
        let r = if self.enqueue(t) {
            Acquire::Granted
        } else {
            Acquire::Queued
        };
        self.update_spinners(ctx, wakes);
        r
    }

    fn release(&mut self, ctx: &LockCtx, t: TaskId, _mode: Mode, wakes: &mut Vec<Wake>) {
        debug_assert_eq!(self.owner, Some(t), "mutex_unlock by a non-owner");
        if self.handoff {
            // R30: __mutex_handoff: the head owns it (PICKUP) before it runs.
            self.handoff = false;
            let head = self
                .queue
                .pop_front()
                .expect("HANDOFF is set by a queued head");
            self.owner = Some(head.task);
            self.n.wakeups += 1;
            if self.head_spinner == Some(head.task) {
                self.head_spinner = None;
                wakes.push(Wake::SpinGranted(head.task));
            } else {
                wakes.push(Wake::Granted(head.task));
            }
            self.update_spinners(ctx, wakes);
            return;
        }
        self.owner = None;
        // Spinners see the release first and barge (R27, R31) ...
        self.update_spinners(ctx, wakes);
        // ... then the waker wakes the head (R30), unless it already runs.
        if let Some(head) = self.queue.front_mut() {
            if !head.woken && self.head_spinner != Some(head.task) {
                head.woken = true;
                self.n.wakeups += 1;
                wakes.push(Wake::Retry(head.task));
            }
        }
    }

    fn retry(&mut self, ctx: &LockCtx, t: TaskId, _mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        // R29: __mutex_trylock_or_handoff(first).
        let is_head = self.queue.front().is_some_and(|w| w.task == t);
        debug_assert!(is_head, "only the head is woken");
        if let Some(w) = self.queue.front_mut() {
            w.woken = false;
        }
        if self.owner.is_none() {
            self.queue.pop_front();
            self.owner = Some(t);
            self.update_spinners(ctx, wakes);
            return Acquire::Granted;
        }
        if !self.handoff {
            self.handoff = true;
            self.n.handoffs += 1;
        }
        // The head spins on the owner directly, without the OSQ.
        if self.spin_on_owner && self.owner_runs(ctx) && !ctx.tasks.need_resched(t) {
            self.head_spinner = Some(t);
            Acquire::Spin { until: None }
        } else {
            Acquire::Queued
        }
    }

    fn owner_off_cpu(&mut self, ctx: &LockCtx, _holder: TaskId, wakes: &mut Vec<Wake>) {
        self.update_spinners(ctx, wakes);
    }

    fn resched(&mut self, ctx: &LockCtx, spinner: Option<TaskId>, wakes: &mut Vec<Wake>) -> bool {
        // R28: a queued OSQ node unqueues on need_resched: the one on the
        // wanted CPU, or the last one.
        let node = match spinner {
            Some(t) => self.osq.iter().position(|&s| s == t),
            None => self.osq.len().checked_sub(1),
        };
        if let Some(t) = node.and_then(|i| self.osq.remove(i)) {
            if self.enqueue(t) {
                wakes.push(Wake::SpinGranted(t));
            } else {
                wakes.push(Wake::SpinSlept(t));
            }
            self.update_spinners(ctx, wakes);
            return true;
        }
        // The woken head spinning on the owner (R29) stops likewise.
        if let Some(t) = self
            .head_spinner
            .filter(|&h| spinner.is_none_or(|s| s == h))
        {
            self.head_spinner = None;
            wakes.push(Wake::SpinSlept(t));
            return true;
        }
        false
    }

    fn has_spinners(&self) -> bool {
        !self.osq.is_empty() || self.head_spinner.is_some()
    }

    /// R73: the OSQ head and the head waiter spinning after HANDOFF
    /// (R29) read `lock->owner` (`mutex_spin_on_owner`).
    fn word_pollers(&self) -> [Option<TaskId>; 2] {
        [self.osq.front().copied(), self.head_spinner]
    }

    fn remove_waiter(&mut self, ctx: &LockCtx, t: TaskId, wakes: &mut Vec<Wake>) -> bool {
        let Some(i) = self.queue.iter().position(|w| w.task == t) else {
            return false;
        };
        self.queue.remove(i);
        if self.head_spinner == Some(t) {
            self.head_spinner = None;
        }
        if self.queue.is_empty() {
            self.handoff = false;
        }
        self.update_spinners(ctx, wakes);
        true
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let n = &self.n;
        vec![
            ("barges", n.barges),
            ("spins", n.spins),
            ("spin_successes", n.spin_successes),
            ("handoffs", n.handoffs),
            ("wakeups", n.wakeups),
        ]
    }
}

#[cfg(test)]
mod tests {
    //! Scripted micro-scenarios, one rule each (docs/kernel-rules.md R25-R31).
    use super::*;
    use crate::locks::policy::TaskView;
    use sim::SimTime;
    use std::cell::RefCell;
    use std::collections::BTreeSet;
    use Acquire::{Granted, Queued};

    #[derive(Default)]
    struct View {
        off_cpu: RefCell<BTreeSet<TaskId>>,
        /// Tasks whose CPU is wanted (need_resched there).
        wanted: BTreeSet<TaskId>,
    }
    impl TaskView for View {
        fn is_rt(&self, _: TaskId) -> bool {
            false
        }
        fn on_cpu(&self, t: TaskId) -> bool {
            !self.off_cpu.borrow().contains(&t)
        }
        fn need_resched(&self, t: TaskId) -> bool {
            self.wanted.contains(&t)
        }
    }

    struct H {
        m: LinuxMutex,
        view: View,
    }

    impl H {
        fn new(spin: bool) -> H {
            H {
                m: LinuxMutex::new(spin),
                view: View::default(),
            }
        }
        fn off(&self, t: u32, off: bool) {
            let t = TaskId(t);
            if off {
                self.view.off_cpu.borrow_mut().insert(t);
            } else {
                self.view.off_cpu.borrow_mut().remove(&t);
            }
        }
        fn lock(&mut self, t: u32) -> (Acquire, Vec<Wake>) {
            let t = TaskId(t);
            let ctx = LockCtx {
                now: SimTime(0),
                hz: 250,
                tasks: &self.view,
            };
            let mut w = Vec::new();
            let a = self.m.acquire(&ctx, t, Mode::Write, &mut w);
            (a, w)
        }
        fn unlock(&mut self, t: u32) -> Vec<Wake> {
            let t = TaskId(t);
            let ctx = LockCtx {
                now: SimTime(0),
                hz: 250,
                tasks: &self.view,
            };
            let mut w = Vec::new();
            self.m.release(&ctx, t, Mode::Write, &mut w);
            w
        }
        fn retry(&mut self, t: u32) -> (Acquire, Vec<Wake>) {
            let t = TaskId(t);
            let ctx = LockCtx {
                now: SimTime(0),
                hz: 250,
                tasks: &self.view,
            };
            let mut w = Vec::new();
            let a = self.m.retry(&ctx, t, Mode::Write, &mut w);
            (a, w)
        }
        fn counter(&self, name: &str) -> u64 {
            self.m
                .counters()
                .into_iter()
                .find(|c| c.0 == name)
                .unwrap()
                .1
        }
    }

    #[test]
    fn r26_fast_path_and_trylock_barges_past_sleepers() {
        let mut h = H::new(false);
        assert_eq!(h.lock(1), (Granted, vec![]));
        assert_eq!(h.lock(2), (Queued, vec![]));
        // Unlock releases the mutex and wakes the head (R30) ...
        assert_eq!(h.unlock(1), vec![Wake::Retry(TaskId(2))]);
        // ... and a new arrival takes it before the head runs (R26: the
        // trylock succeeds whenever no task owns it).
        assert_eq!(h.lock(3), (Granted, vec![]));
        assert_eq!(h.counter("barges"), 1);
    }

    #[test]
    fn r27_r28_spinners_wait_while_the_owner_runs_and_take_it_at_release() {
        let mut h = H::new(true);
        assert_eq!(h.lock(1).0, Granted);
        assert_eq!(h.lock(2), (Acquire::Spin { until: None }, vec![]));
        assert_eq!(h.lock(3), (Acquire::Spin { until: None }, vec![]));
        // The OSQ head takes it at release; the next spinner goes on spinning.
        assert_eq!(h.unlock(1), vec![Wake::SpinGranted(TaskId(2))]);
        assert_eq!(h.unlock(2), vec![Wake::SpinGranted(TaskId(3))]);
        assert_eq!(h.counter("spin_successes"), 2);
    }

    #[test]
    fn r73_only_the_osq_head_polls_the_owner_word() {
        let mut h = H::new(true);
        assert_eq!(h.m.word_pollers(), [None, None]);
        h.lock(1);
        h.lock(2);
        h.lock(3);
        // 3 spins on its own OSQ node, not on the lock word.
        assert_eq!(h.m.word_pollers(), [Some(TaskId(2)), None]);
        h.unlock(1);
        assert_eq!(h.m.word_pollers(), [Some(TaskId(3)), None]);
        h.unlock(2);
        assert_eq!(h.m.word_pollers(), [None, None]);
    }

    #[test]
    fn r27_r28_need_resched_is_per_cpu_only_the_spinner_whose_cpu_is_wanted_stops() {
        let mut h = H::new(true);
        assert_eq!(h.lock(1).0, Granted);
        // 2's CPU is wanted: it may not spin (R27 step 2) and sleeps.
        h.view.wanted.insert(TaskId(2));
        assert_eq!(h.lock(2), (Queued, vec![]));
        assert_eq!(h.lock(3).0, Acquire::Spin { until: None });
        assert_eq!(h.lock(4).0, Acquire::Spin { until: None });
        // 4's CPU becomes wanted: its OSQ node unqueues (R28) and 4 sleeps;
        // 3 spins on. No spinner runs on 9's CPU.
        h.view.wanted.insert(TaskId(4));
        let ctx = LockCtx {
            now: SimTime(0),
            hz: 250,
            tasks: &h.view,
        };
        let mut w = Vec::new();
        assert!(!h.m.resched(&ctx, Some(TaskId(9)), &mut w));
        assert!(h.m.resched(&ctx, Some(TaskId(4)), &mut w));
        assert_eq!(w, vec![Wake::SpinSlept(TaskId(4))]);
        // 3 takes it at release; the first sleeper, 2, is woken.
        assert_eq!(
            h.unlock(1),
            vec![Wake::SpinGranted(TaskId(3)), Wake::Retry(TaskId(2))]
        );
    }

    #[test]
    fn r27_spinners_stop_when_the_owner_leaves_its_cpu() {
        let mut h = H::new(true);
        assert_eq!(h.lock(1).0, Granted);
        assert_eq!(h.lock(2).0, Acquire::Spin { until: None });
        h.off(1, true);
        let ctx = LockCtx {
            now: SimTime(0),
            hz: 250,
            tasks: &h.view,
        };
        let mut w = Vec::new();
        h.m.owner_off_cpu(&ctx, TaskId(1), &mut w);
        assert_eq!(w, vec![Wake::SpinSlept(TaskId(2))]);
        // An owner off CPU: a new arrival does not spin at all.
        assert_eq!(h.lock(3), (Queued, vec![]));
        assert_eq!(h.m.queued(), 2);
    }

    #[test]
    fn r29_r30_r31_woken_head_that_fails_sets_handoff_and_gets_the_next_unlock() {
        let mut h = H::new(false);
        assert_eq!(h.lock(1).0, Granted);
        assert_eq!(h.lock(2).0, Queued);
        assert_eq!(h.lock(3).0, Queued);
        assert_eq!(h.unlock(1), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.lock(4).0, Granted); // barges before the head runs
                                          // The head runs, fails, and sets HANDOFF at once (R29).
        assert_eq!(h.retry(2), (Queued, vec![]));
        assert_eq!(h.counter("handoffs"), 1);
        // From now on nobody barges: the unlock hands off directly (R30).
        assert_eq!(h.unlock(4), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(h.m.owner(), Some(TaskId(2)));
        assert_eq!(h.lock(5), (Queued, vec![]));
        // Sleepers stay FIFO (R31): 3 then 5.
        assert_eq!(h.unlock(2), vec![Wake::Retry(TaskId(3))]);
        assert_eq!(h.retry(3), (Granted, vec![]));
        assert_eq!(h.unlock(3), vec![Wake::Retry(TaskId(5))]);
    }

    #[test]
    fn r29_head_with_handoff_spins_on_a_running_owner_and_is_handed_the_mutex() {
        let mut h = H::new(true);
        assert_eq!(h.lock(1).0, Granted);
        h.off(1, true);
        assert_eq!(h.lock(2), (Queued, vec![]));
        h.off(1, false);
        assert_eq!(h.unlock(1), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.lock(3).0, Granted);
        // The head fails, sets HANDOFF, and spins on the running owner 3.
        assert_eq!(h.retry(2), (Acquire::Spin { until: None }, vec![]));
        // A new arrival cannot take it and, the owner running, spins in the OSQ.
        assert_eq!(h.lock(4), (Acquire::Spin { until: None }, vec![]));
        // The unlock hands it to the spinning head (PICKUP), not to the OSQ.
        assert_eq!(h.unlock(3), vec![Wake::SpinGranted(TaskId(2))]);
        assert_eq!(h.unlock(2), vec![Wake::SpinGranted(TaskId(4))]);
    }

    #[test]
    fn r25_owner_word_flags_waiters_handoff_and_pickup() {
        // WAITERS: a sleeper is queued; HANDOFF: set by the head that failed;
        // PICKUP: the unlock made the head the owner before it ran.
        let mut h = H::new(false);
        assert_eq!(h.lock(1).0, Granted);
        assert_eq!(h.lock(2).0, Queued);
        assert_eq!(h.m.queued(), 1);
        assert_eq!(h.unlock(1), vec![Wake::Retry(TaskId(2))]);
        assert_eq!(h.lock(3).0, Granted);
        assert_eq!(h.retry(2).0, Queued);
        assert!(h.m.handoff);
        assert_eq!(h.unlock(3), vec![Wake::Granted(TaskId(2))]);
        assert_eq!(
            (h.m.owner(), h.m.handoff, h.m.queued()),
            (Some(TaskId(2)), false, 0)
        );
    }
}
