//! EEVDF's order for runnable tasks (kernel/sched/fair.c, Linux 6.12+), for
//! the run queue of [`crate::cpu::CpuPool`] with `wake_placement = "eevdf"`.
//!
//! All tasks have the same weight (nice 0), so virtual time is CPU time:
//! - a running task's `vruntime` grows by the time it runs (`update_curr`);
//!   when it passes the task's `deadline`, the deadline moves to
//!   `vruntime + slice` (`update_deadline`);
//! - `V` is the average `vruntime` of the runnable tasks, running ones
//!   included (`avg_vruntime`);
//! - a task that blocks keeps its lag `V - vruntime`, clamped to
//!   `max(2 * slice, TICK_NSEC)` either way (`update_entity_lag`); a
//!   negative lag decays while it sleeps, by as much as `V` moves on,
//!   and is gone once `V` has passed it (6.12's DELAY_DEQUEUE, which keeps
//!   the task queued until then, and DELAY_ZERO); if it wakes before, it
//!   comes back with what is left, its deadline as far ahead as it was
//!   (ENQUEUE_DELAYED);
//! - a task that becomes runnable is placed at `vruntime = V - lag`, the
//!   lag scaled by `(n + 1) / n` for the `n` tasks already runnable, with
//!   `deadline = vruntime + slice`, half a slice the first time
//!   (`place_entity`, PLACE_LAG, PLACE_DEADLINE_INITIAL);
//! - the next task is the eligible one (`vruntime <= V`) with the earliest
//!   deadline, else the one with the least `vruntime` (`pick_eevdf`).
//!
//! So a task that ran less than its share while runnable (a kworker, a
//! lock waiter that slept) comes back ahead of CPU-bound tasks; a task
//! that hogged the CPU just before it blocked (a reader parked for a
//! moment behind a writer) comes back behind them; one that slept long
//! comes back even.
//!
//! Each run queue has its own `V`. With the pool's shared queue there is
//! one (per-CPU kworkers wait for their own CPU but are ordered with the
//! same `V`); with per-CPU queues there is one per CPU, and a task that
//! moves to another CPU's queue (pulled by an idle CPU, or balanced) takes
//! its lag with it: it leaves with `V - vruntime` of the old queue and is
//! placed at the new one's `V` less that lag, as `migrate_task_rq_fair`
//! and `place_entity` do.
//!
//! Kernels 6.6 to 6.11 had no DELAY_DEQUEUE: a task that blocks leaves
//! the queue at once and keeps its lag, negative too, however long it
//! sleeps ([`Eevdf::without_delay_dequeue`], `wake_placement =
//! "eevdf-6.6"`).
//!
//! What is not here: weights other than nice 0; a delayed task is not
//! counted in `V` while it sleeps (the kernel keeps it on the queue,
//! ineligible). The pick scans the queue
//! (the kernel keeps an augmented rbtree): a handover costs O(tasks
//! waiting), which 10,000 runnable hogs on 2 CPUs still run at 0.08 s per
//! simulated 2 s.

use crate::fair::{PerTask, State};
use crate::lock::TaskId;
use sim::SimTime;

#[derive(Clone, Copy, Debug, Default)]
struct Entity {
    vruntime: i64,
    deadline: i64,
    vlag: i64,
    /// When it last started running (ns).
    started: i64,
    placed_before: bool,
    /// Blocked with negative lag (DELAY_DEQUEUE): `V` just after it left,
    /// from which its lag decays as `V` moves on.
    delayed_from: Option<i64>,
    /// Its deadline less its vruntime when it blocked, kept if it comes
    /// back still behind (ENQUEUE_DELAYED).
    delayed_slice: i64,
    state: State,
    /// The run queue it is placed on (or was last).
    rq: u32,
}

/// One run queue's sums, from which its `V` follows.
#[derive(Clone, Debug, Default)]
struct Rq {
    /// Sum of `vruntime` over waiting tasks, and their number.
    sum_wait: i128,
    n_wait: i64,
    /// Sum of `vruntime - started` over running tasks, and their number:
    /// their sum of `vruntime` at `now` is this plus `n_run * now`.
    sum_run: i128,
    n_run: i64,
    /// `V` when last computed over a non-empty set (an idle queue keeps it).
    last_v: i64,
}

/// The EEVDF state of every task, and of every run queue.
#[derive(Clone, Debug)]
pub struct Eevdf {
    slice: i64,
    lag_limit: i64,
    /// 6.12's DELAY_DEQUEUE: a negative lag decays while the task sleeps.
    delay_dequeue: bool,
    se: PerTask<Entity>,
    rqs: Vec<Rq>,
}

/// `a / b` rounded down (b > 0), in i64 when `a` fits: the 128-bit
/// division is the slow path (sums of vruntime over many tasks late in a
/// long run), and the result is the same either way.
#[inline]
fn div_floor(a: i128, b: i128) -> i64 {
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(a), Ok(b)) => a.div_euclid(b),
        _ => a.div_euclid(b) as i64,
    }
}

impl Eevdf {
    /// `slice`: the base slice (`sysctl_sched_base_slice` as scaled by the
    /// CPU count); `tick`: 1/HZ. Both in ns.
    /// `queues`: how many run queues (at least one).
    pub fn new(slice: u64, tick: u64, queues: usize) -> Eevdf {
        let slice = slice.clamp(1, i64::MAX as u64 / 4) as i64;
        Eevdf {
            slice,
            lag_limit: (2 * slice).max(tick.min(i64::MAX as u64 / 4) as i64),
            delay_dequeue: true,
            se: PerTask::default(),
            rqs: vec![Rq::default(); queues.max(1)],
        }
    }

    /// EEVDF as in kernels 6.6 to 6.11, before DELAY_DEQUEUE: a task
    /// that blocks keeps its lag as it was, negative or not, until it
    /// wakes (`dequeue_entity` then only `update_entity_lag`).
    pub fn without_delay_dequeue(mut self) -> Eevdf {
        self.delay_dequeue = false;
        self
    }

    fn se(&mut self, t: TaskId) -> &mut Entity {
        self.se.get_mut(t)
    }

    fn get(&self, t: TaskId) -> Entity {
        self.se.get(t)
    }

    /// The sum of `vruntime` at `now` over queue `rq`'s runnable tasks
    /// (placed but not yet waiting or running ones are not counted), and
    /// their number.
    fn runnable_sum(&self, rq: usize, now: SimTime) -> (i128, i64) {
        let q = &self.rqs[rq];
        let sum = q.sum_wait + q.sum_run + i128::from(q.n_run) * i128::from(now.0 as i64);
        (sum, q.n_wait + q.n_run)
    }

    /// Queue `rq`'s `V` at `now`: the average `vruntime` of its runnable
    /// tasks.
    fn avg_vruntime(&mut self, rq: usize, now: SimTime) -> i64 {
        let (sum, n) = self.runnable_sum(rq, now);
        if n > 0 {
            self.rqs[rq].last_v = div_floor(sum, i128::from(n));
        }
        self.rqs[rq].last_v
    }

    /// `t` becomes runnable at `now` on queue `rq` (`place_entity`). A
    /// task already runnable is left as it is.
    pub fn wake(&mut self, now: SimTime, t: TaskId, rq: usize) {
        if self.get(t).state != State::Off {
            return;
        }
        let v = self.avg_vruntime(rq, now);
        let q = &self.rqs[rq];
        let n = q.n_wait + q.n_run;
        let slice = self.slice;
        // The queue it blocked on: a negative lag decays there.
        let old_rq = self.get(t).rq as usize;
        let v_old = if old_rq == rq {
            v
        } else {
            self.avg_vruntime(old_rq, now)
        };
        let lag_limit = self.lag_limit;
        let e = self.se(t);
        e.rq = rq as u32;
        let mut lag = e.vlag;
        let mut vslice = if e.placed_before { slice } else { slice / 2 };
        if let Some(v0) = e.delayed_from.take() {
            // DELAY_DEQUEUE: the lag decayed by how far V of the queue it
            // left moved on; back at or past zero it is zero (DELAY_ZERO),
            // else the task comes back with the rest, its deadline as far
            // ahead of its vruntime as it was (ENQUEUE_DELAYED). V can
            // also fall (a task placed with positive lag joins): the lag
            // then grows, but no further than the clamp, as the kernel's
            // update_entity_lag computes it when the task is requeued.
            lag = (lag + (v_old - v0)).clamp(-lag_limit, 0);
            if lag < 0 {
                vslice = e.delayed_slice;
            }
        }
        if n > 0 {
            // Truncated toward zero, as the kernel's div_s64.
            let scaled = i128::from(lag) * i128::from(n + 1);
            lag = match i64::try_from(scaled) {
                Ok(a) => a / n,
                _ => (scaled / i128::from(n)) as i64,
            };
        }
        e.vruntime = v - lag;
        e.deadline = e.vruntime + vslice;
        e.placed_before = true;
        e.state = State::Placed;
    }

    /// `t`'s lag on its queue at `now`, counting it in `V` whether or not
    /// it is (the kernel computes it before the dequeue), clamped.
    fn leaving_lag(&mut self, now: SimTime, t: TaskId) -> i64 {
        let e = self.get(t);
        let rq = e.rq as usize;
        let (mut sum, mut n) = self.runnable_sum(rq, now);
        if e.state != State::Waiting {
            sum += i128::from(e.vruntime);
            n += 1;
        }
        let v = div_floor(sum, i128::from(n));
        (v - e.vruntime).clamp(-self.lag_limit, self.lag_limit)
    }

    /// `t`, placed or waiting on another queue, moves to queue `rq` at
    /// `now`: it leaves with its lag and is placed again on `rq`, where it
    /// is placed (not waiting).
    fn migrate(&mut self, now: SimTime, t: TaskId, rq: usize) {
        let lag = self.leaving_lag(now, t);
        let e = self.get(t);
        if e.state == State::Waiting {
            let q = &mut self.rqs[e.rq as usize];
            q.sum_wait -= i128::from(e.vruntime);
            q.n_wait -= 1;
        }
        let e = self.se(t);
        e.vlag = lag;
        e.delayed_from = None;
        e.state = State::Off;
        self.wake(now, t, rq);
    }

    /// `t`, runnable, waits on queue `rq` from `now`.
    pub fn wait(&mut self, now: SimTime, t: TaskId, rq: usize) {
        let e = self.get(t);
        debug_assert!(matches!(e.state, State::Placed), "{:?}", e.state);
        if e.rq as usize != rq {
            self.migrate(now, t, rq);
        }
        let e = self.se(t);
        e.state = State::Waiting;
        let vr = e.vruntime;
        let q = &mut self.rqs[rq];
        q.sum_wait += i128::from(vr);
        q.n_wait += 1;
    }

    /// `t` starts running at `now` on queue `rq`'s CPU.
    pub fn start(&mut self, now: SimTime, t: TaskId, rq: usize) {
        if self.get(t).rq as usize != rq {
            self.migrate(now, t, rq);
        }
        let e = self.se(t);
        let was = e.state;
        e.state = State::Running;
        e.started = now.0 as i64;
        let (vr, started) = (e.vruntime, e.started);
        let q = &mut self.rqs[rq];
        if was == State::Waiting {
            q.sum_wait -= i128::from(vr);
            q.n_wait -= 1;
        }
        debug_assert!(matches!(was, State::Waiting | State::Placed), "{was:?}");
        q.sum_run += i128::from(vr) - i128::from(started);
        q.n_run += 1;
    }

    /// `t` stops running at `now`. If `runnable` it stays runnable (it
    /// was preempted or used up its slice; [`Self::wait`] follows), else
    /// it blocks and keeps its lag.
    pub fn stop(&mut self, now: SimTime, t: TaskId, runnable: bool) {
        let slice = self.slice;
        let e = self.se(t);
        if e.state != State::Running {
            return;
        }
        let old = i128::from(e.vruntime) - i128::from(e.started);
        e.vruntime += now.0 as i64 - e.started;
        if e.vruntime >= e.deadline {
            e.deadline = e.vruntime + slice;
        }
        e.state = State::Placed;
        let rq = e.rq as usize;
        let q = &mut self.rqs[rq];
        q.sum_run -= old;
        q.n_run -= 1;
        if !runnable {
            // The lag against V with this task still counted, as the
            // kernel computes it before the dequeue.
            let lag = self.leaving_lag(now, t);
            let v_after = self.avg_vruntime(rq, now);
            let delay_dequeue = self.delay_dequeue;
            let e = self.se(t);
            e.vlag = lag;
            e.state = State::Off;
            if e.vlag < 0 && delay_dequeue {
                e.delayed_from = Some(v_after);
                e.delayed_slice = e.deadline - e.vruntime;
            }
        }
    }

    /// Of `candidates` (task, tie-break order), the one EEVDF runs next:
    /// the eligible one with the earliest deadline, else the one with the
    /// least `vruntime`, by queue `rq`'s `V` (the candidates wait there).
    /// Returns its position in the iteration.
    pub fn pick(
        &mut self,
        now: SimTime,
        rq: usize,
        candidates: impl Iterator<Item = (TaskId, u64)>,
    ) -> Option<usize> {
        let v = self.avg_vruntime(rq, now);
        let mut best: Option<(bool, i64, u64, usize)> = None;
        for (i, (t, seq)) in candidates.enumerate() {
            let e = self.get(t);
            let eligible = e.vruntime <= v;
            // Eligible first, then by deadline; ineligible by vruntime.
            let key = if eligible { e.deadline } else { e.vruntime };
            let better = match best {
                None => true,
                Some((be, bk, bs, _)) => {
                    (eligible && !be) || (eligible == be && (key, seq) < (bk, bs))
                }
            };
            if better {
                best = Some((eligible, key, seq, i));
            }
        }
        best.map(|b| b.3)
    }

    /// Whether `curr`, running on queue `rq`, is no longer eligible at
    /// `now` (its vruntime past `V`): only then can a wakeup preempt it.
    /// An eligible one keeps its CPU: RUN_TO_PARITY while its slice lasts,
    /// and the tick that ends the slice reschedules it after.
    pub fn ineligible(&mut self, now: SimTime, curr: TaskId, rq: usize) -> bool {
        let c = self.get(curr);
        if c.state != State::Running || c.rq as usize != rq {
            return false;
        }
        let vr = c.vruntime + (now.0 as i64 - c.started);
        vr > self.avg_vruntime(rq, now)
    }

    /// Whether waiting task `t` is eligible on queue `rq` at `now`.
    pub fn eligible(&mut self, now: SimTime, t: TaskId, rq: usize) -> bool {
        self.get(t).vruntime <= self.avg_vruntime(rq, now)
    }

    /// `t`'s lag at `now` (`V - vruntime`; the saved lag if it is not
    /// runnable).
    #[cfg(test)]
    fn lag(&mut self, now: SimTime, t: TaskId) -> i64 {
        let e = self.get(t);
        match e.state {
            State::Off => e.vlag,
            State::Running => {
                self.avg_vruntime(e.rq as usize, now) - (e.vruntime + now.0 as i64 - e.started)
            }
            _ => self.avg_vruntime(e.rq as usize, now) - e.vruntime,
        }
    }

    /// `t`'s virtual deadline.
    #[cfg(test)]
    fn deadline(&self, t: TaskId) -> i64 {
        self.get(t).deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    fn at(ms: u64) -> SimTime {
        SimTime(ms * MS)
    }

    /// A runs 3 ms while B waits, both placed at 0, then blocks: V with A
    /// counted is 1.5 ms, so A's lag is -1.5 ms; V without A is B's 0.
    /// The task queue 0 runs next among `tasks`, waiting in that order.
    fn picked(e: &mut Eevdf, now: SimTime, tasks: &[TaskId]) -> Option<TaskId> {
        let waiting = tasks.iter().enumerate().map(|(i, &t)| (t, i as u64));
        e.pick(now, 0, waiting).map(|i| tasks[i])
    }

    fn a_hogs_then_blocks() -> Eevdf {
        a_hogs_then_blocks_in(Eevdf::new(3 * MS, 4 * MS, 1))
    }

    fn a_hogs_then_blocks_in(mut e: Eevdf) -> Eevdf {
        e.wake(at(0), 0, 0);
        e.start(at(0), 0, 0);
        e.wake(at(0), 1, 0);
        e.wait(at(0), 1, 0);
        e.stop(at(3), 0, false);
        assert_eq!(e.lag(at(3), 0), -(3 * MS as i64) / 2);
        e
    }

    #[test]
    fn a_task_that_hogged_the_cpu_blocks_with_negative_lag_and_comes_back_behind() {
        let mut e = a_hogs_then_blocks();
        // B runs; a fresh task C (lag 0) wakes, then A, at once: V has
        // not moved, so A's lag is whole: placed at vruntime 2.25 ms (the
        // lag scaled by 3/2), it is 1.5 ms behind V once counted in it.
        e.start(at(3), 1, 0);
        e.wake(at(3), 2, 0);
        e.wait(at(3), 2, 0);
        e.wake(at(3), 0, 0);
        e.wait(at(3), 0, 0);
        assert_eq!(e.lag(at(3), 0), -(3 * MS as i64) / 2);
        // At 4 ms B has run 1 ms of its first half slice and yields. V is
        // 1.08 ms: B and C are eligible with deadline 1.5 ms (B queued
        // first), A is not: B, C, then A.
        e.stop(at(4), 1, true);
        e.wait(at(4), 1, 0);
        assert_eq!(picked(&mut e, at(4), &[0, 1, 2]), Some(1));
        assert_eq!(picked(&mut e, at(4), &[0, 2]), Some(2));
    }

    #[test]
    fn a_negative_lag_decays_while_the_task_sleeps_as_v_moves_on() {
        // Woken after B ran 0.5 ms, A has 1 ms of its lag left ...
        let mut e = a_hogs_then_blocks();
        e.start(at(3), 1, 0);
        let half = SimTime(3 * MS + MS / 2);
        e.wake(half, 0, 0);
        e.wait(half, 0, 0);
        assert_eq!(e.lag(half, 0), -(MS as i64));
        // ... woken after B ran 7 ms, none (DELAY_ZERO): A comes back
        // even, at V, with a full slice.
        let mut e = a_hogs_then_blocks();
        e.start(at(3), 1, 0);
        e.wake(at(10), 0, 0);
        e.wait(at(10), 0, 0);
        assert_eq!(e.lag(at(10), 0), 0);
        assert_eq!(e.deadline(0), 10 * MS as i64);
    }

    #[test]
    fn without_delay_dequeue_a_negative_lag_is_kept_however_long_the_task_sleeps() {
        // As in the test above, A is woken after B ran 7 ms; in 6.6-6.11
        // A still has all of its -1.5 ms lag: placed at V + 1.5 ms x 2/1
        // (the lag scaled by (n + 1) / n with B alone runnable), and once
        // counted in V it is 1.5 ms behind it, ineligible, so B runs on.
        let mut e = a_hogs_then_blocks_in(Eevdf::new(3 * MS, 4 * MS, 1).without_delay_dequeue());
        e.start(at(3), 1, 0);
        e.wake(at(10), 0, 0);
        e.wait(at(10), 0, 0);
        assert_eq!(e.lag(at(10), 0), -(3 * MS as i64) / 2);
        // Its deadline is a full slice past its vruntime: 7 + 3 + 3 ms.
        assert_eq!(e.deadline(0), 13 * MS as i64);
        e.stop(at(10), 1, true);
        e.wait(at(10), 1, 0);
        assert_eq!(picked(&mut e, at(10), &[0, 1]), Some(1));
    }

    #[test]
    fn a_sleeping_negative_lag_grows_when_v_falls_but_only_to_the_clamp() {
        // A blocks on queue 0 with lag -1.5 ms (V then 0), and B blocks
        // with none: queue 0 is empty.
        let mut e = a_hogs_then_blocks_in(Eevdf::new(3 * MS, 4 * MS, 2));
        e.start(at(3), 1, 0);
        e.stop(at(3), 1, false);
        // On queue 1, D waits while E runs 12 ms: D's lag reaches the
        // clamp, 6 ms (two slices). Idle CPU 0 pulls D, placed 6 ms below
        // its queue's V: V falls from 0 to -6 ms.
        e.wake(at(3), 3, 1);
        e.start(at(3), 3, 1);
        e.wake(at(3), 2, 1);
        e.wait(at(3), 2, 1);
        e.start(at(15), 2, 0);
        assert_eq!(e.lag(at(15), 2), 0);
        // A wakes on queue 0: its lag grew by the 6 ms V fell, -7.5 ms,
        // and is clamped to -6 ms; placed with it (scaled by 2/1 for D),
        // A is 6 ms behind V once counted in it.
        e.wake(at(15), 0, 0);
        e.wait(at(15), 0, 0);
        assert_eq!(e.lag(at(15), 0), -6 * MS as i64);
    }

    #[test]
    fn lag_is_clamped_to_two_slices_or_a_tick() {
        let mut e = Eevdf::new(MS, 4 * MS, 1);
        // 10 tasks wait while task 0 runs 100 ms, then blocks.
        e.wake(at(0), 0, 0);
        e.start(at(0), 0, 0);
        for t in 1..=10 {
            e.wake(at(0), t, 0);
            e.wait(at(0), t, 0);
        }
        e.stop(at(100), 0, false);
        assert_eq!(
            e.lag(at(100), 0),
            -4 * MS as i64,
            "max(2 x 1 ms, 4 ms tick)"
        );
    }

    #[test]
    fn an_ineligible_task_is_passed_over_despite_an_earlier_deadline() {
        let mut e = Eevdf::new(4 * MS, 4 * MS, 1);
        // B has run before (no lag): its next placement gets a full slice.
        e.wake(at(0), 1, 0);
        e.start(at(0), 1, 0);
        e.stop(at(0), 1, false);
        // A, new, runs 1 ms: vruntime 1 ms, deadline 2 ms (half a slice).
        // B waits at vruntime 0 with deadline 4 ms.
        e.wake(at(0), 0, 0);
        e.start(at(0), 0, 0);
        e.wake(at(0), 1, 0);
        e.wait(at(0), 1, 0);
        e.stop(at(1), 0, true);
        e.wait(at(1), 0, 0);
        assert_eq!(
            (e.deadline(0), e.deadline(1)),
            (2 * MS as i64, 4 * MS as i64)
        );
        // V = 0.5 ms: A is not eligible, B is.
        let c = [(0, 0), (1, 1)];
        assert_eq!(e.pick(at(1), 0, c.into_iter()), Some(1));
    }

    #[test]
    fn a_used_up_slice_moves_the_deadline() {
        let mut e = Eevdf::new(2 * MS, MS, 1);
        e.wake(at(0), 0, 0);
        assert_eq!(e.deadline(0), MS as i64, "first placement: half a slice");
        e.start(at(0), 0, 0);
        e.stop(at(5), 0, true);
        assert_eq!(e.deadline(0), 7 * MS as i64, "vruntime 5 ms + slice");
    }

    #[test]
    fn a_task_that_moves_to_another_queue_takes_its_lag_along() {
        // On queue 0, A runs 3 ms while B waits: A's lag is -1.5 ms. On
        // queue 1, C waits at vruntime 0 while D runs from 0 to 10 ms.
        let mut e = Eevdf::new(3 * MS, 4 * MS, 2);
        e.wake(at(0), 0, 0);
        e.start(at(0), 0, 0);
        e.wake(at(0), 1, 0);
        e.wait(at(0), 1, 0);
        e.wake(at(0), 3, 1);
        e.start(at(0), 3, 1);
        e.wake(at(0), 2, 1);
        e.wait(at(0), 2, 1);
        e.stop(at(3), 0, true);
        e.wait(at(3), 0, 0);
        assert_eq!(e.lag(at(3), 0), -(3 * MS as i64) / 2);
        // At 10 ms A, pulled, starts on queue 1 (V 5 ms): placed at V less
        // its lag scaled by 3/2, it is 1.5 ms behind once counted.
        e.start(at(10), 0, 1);
        assert_eq!(e.lag(at(10), 0), -(3 * MS as i64) / 2);
        // Queue 0 is B's alone again.
        assert_eq!(e.lag(at(10), 1), 0);
    }
}
