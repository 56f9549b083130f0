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
//! What is not here: one `V` serves all CPUs (the pool has one shared run
//! queue; per-CPU kworkers wait for their own CPU but are ordered with the
//! same `V`), so tasks do not migrate or balance; weights other than nice
//! 0; a delayed task is not counted in `V` while it sleeps (the kernel
//! keeps it on the queue, ineligible); kernels 6.6-6.11, which kept a
//! negative lag however long the task slept. The pick scans the queue
//! (the kernel keeps an augmented rbtree): a handover costs O(tasks
//! waiting), which 10,000 runnable hogs on 2 CPUs still run at 0.08 s per
//! simulated 2 s.

use crate::lock::TaskId;
use sim::SimTime;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Not runnable (blocked, asleep, or never run).
    #[default]
    Off,
    /// Runnable: placed, and either about to run or waiting in a queue.
    Placed,
    Waiting,
    Running,
}

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
}

/// The EEVDF state of every task.
#[derive(Clone, Debug)]
pub struct Eevdf {
    slice: i64,
    lag_limit: i64,
    se: Vec<Entity>,
    /// Sum of `vruntime` over waiting tasks, and their number.
    sum_wait: i128,
    n_wait: i64,
    /// Sum of `vruntime - started` over running tasks, and their number:
    /// their sum of `vruntime` at `now` is this plus `n_run * now`.
    sum_run: i128,
    n_run: i64,
    /// `V` when last computed over a non-empty set (an idle pool keeps it).
    last_v: i64,
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
    pub fn new(slice: u64, tick: u64) -> Eevdf {
        let slice = slice.clamp(1, i64::MAX as u64 / 4) as i64;
        Eevdf {
            slice,
            lag_limit: (2 * slice).max(tick.min(i64::MAX as u64 / 4) as i64),
            se: Vec::new(),
            sum_wait: 0,
            n_wait: 0,
            sum_run: 0,
            n_run: 0,
            last_v: 0,
        }
    }

    fn se(&mut self, t: TaskId) -> &mut Entity {
        let i = t as usize;
        if i >= self.se.len() {
            self.se.resize(i + 1, Entity::default());
        }
        &mut self.se[i]
    }

    fn get(&self, t: TaskId) -> Entity {
        self.se.get(t as usize).copied().unwrap_or_default()
    }

    /// The sum of `vruntime` at `now` over runnable tasks (placed but not
    /// yet waiting or running ones are not counted), and their number.
    fn runnable_sum(&self, now: SimTime) -> (i128, i64) {
        let sum = self.sum_wait + self.sum_run + i128::from(self.n_run) * i128::from(now.0 as i64);
        (sum, self.n_wait + self.n_run)
    }

    /// `V` at `now`: the average `vruntime` of runnable tasks.
    fn avg_vruntime(&mut self, now: SimTime) -> i64 {
        let (sum, n) = self.runnable_sum(now);
        if n > 0 {
            self.last_v = div_floor(sum, i128::from(n));
        }
        self.last_v
    }

    /// `t` becomes runnable at `now` (`place_entity`). A task already
    /// runnable is left as it is.
    pub fn wake(&mut self, now: SimTime, t: TaskId) {
        if self.get(t).state != State::Off {
            return;
        }
        let v = self.avg_vruntime(now);
        let n = self.n_wait + self.n_run;
        let slice = self.slice;
        let e = self.se(t);
        let mut lag = e.vlag;
        let mut vslice = if e.placed_before { slice } else { slice / 2 };
        if let Some(v0) = e.delayed_from.take() {
            // DELAY_DEQUEUE: the lag decayed by how far V moved on; back
            // at or past zero it is zero (DELAY_ZERO), else the task comes
            // back with the rest, its deadline as far ahead of its
            // vruntime as it was (ENQUEUE_DELAYED).
            lag = (lag + (v - v0)).min(0);
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

    /// `t`, runnable, waits in a queue.
    pub fn wait(&mut self, t: TaskId) {
        let e = self.se(t);
        debug_assert!(matches!(e.state, State::Placed), "{:?}", e.state);
        e.state = State::Waiting;
        let vr = e.vruntime;
        self.sum_wait += i128::from(vr);
        self.n_wait += 1;
    }

    /// `t` starts running at `now`.
    pub fn start(&mut self, now: SimTime, t: TaskId) {
        let e = self.se(t);
        let was = e.state;
        e.state = State::Running;
        e.started = now.0 as i64;
        let (vr, started) = (e.vruntime, e.started);
        if was == State::Waiting {
            self.sum_wait -= i128::from(vr);
            self.n_wait -= 1;
        }
        debug_assert!(matches!(was, State::Waiting | State::Placed), "{was:?}");
        self.sum_run += i128::from(vr) - i128::from(started);
        self.n_run += 1;
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
        self.sum_run -= old;
        self.n_run -= 1;
        if !runnable {
            // The lag against V with this task still counted, as the
            // kernel computes it before the dequeue.
            let vr = self.get(t).vruntime;
            let (sum, n) = self.runnable_sum(now);
            let v = div_floor(sum + i128::from(vr), i128::from(n + 1));
            let limit = self.lag_limit;
            let v_after = self.avg_vruntime(now);
            let e = self.se(t);
            e.vlag = (v - vr).clamp(-limit, limit);
            e.state = State::Off;
            if e.vlag < 0 {
                e.delayed_from = Some(v_after);
                e.delayed_slice = e.deadline - e.vruntime;
            }
        }
    }

    /// Of `candidates` (task, tie-break order), the one EEVDF runs next:
    /// the eligible one with the earliest deadline, else the one with the
    /// least `vruntime`. Returns its position in the iteration.
    pub fn pick(
        &mut self,
        now: SimTime,
        candidates: impl Iterator<Item = (TaskId, u64)>,
    ) -> Option<usize> {
        let v = self.avg_vruntime(now);
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

    /// `t`'s lag at `now` (`V - vruntime`; the saved lag if it is not
    /// runnable).
    #[cfg(test)]
    fn lag(&mut self, now: SimTime, t: TaskId) -> i64 {
        let e = self.get(t);
        match e.state {
            State::Off => e.vlag,
            State::Running => self.avg_vruntime(now) - (e.vruntime + now.0 as i64 - e.started),
            _ => self.avg_vruntime(now) - e.vruntime,
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
    fn a_hogs_then_blocks() -> Eevdf {
        let mut e = Eevdf::new(3 * MS, 4 * MS);
        e.wake(at(0), 0);
        e.start(at(0), 0);
        e.wake(at(0), 1);
        e.wait(1);
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
        e.start(at(3), 1);
        e.wake(at(3), 2);
        e.wait(2);
        e.wake(at(3), 0);
        e.wait(0);
        assert_eq!(e.lag(at(3), 0), -(3 * MS as i64) / 2);
        // At 4 ms B has run 1 ms of its first half slice and yields. V is
        // 1.08 ms: B and C are eligible with deadline 1.5 ms (B queued
        // first), A is not: B, C, then A.
        e.stop(at(4), 1, true);
        e.wait(1);
        let all = [(0, 0), (1, 1), (2, 2)];
        assert_eq!(e.pick(at(4), all.into_iter()).map(|i| all[i].0), Some(1));
        let rest = [(0, 0), (2, 2)];
        assert_eq!(e.pick(at(4), rest.into_iter()).map(|i| rest[i].0), Some(2));
    }

    #[test]
    fn a_negative_lag_decays_while_the_task_sleeps_as_v_moves_on() {
        // Woken after B ran 0.5 ms, A has 1 ms of its lag left ...
        let mut e = a_hogs_then_blocks();
        e.start(at(3), 1);
        let half = SimTime(3 * MS + MS / 2);
        e.wake(half, 0);
        e.wait(0);
        assert_eq!(e.lag(half, 0), -(MS as i64));
        // ... woken after B ran 7 ms, none (DELAY_ZERO): A comes back
        // even, at V, with a full slice.
        let mut e = a_hogs_then_blocks();
        e.start(at(3), 1);
        e.wake(at(10), 0);
        e.wait(0);
        assert_eq!(e.lag(at(10), 0), 0);
        assert_eq!(e.deadline(0), 10 * MS as i64);
    }

    #[test]
    fn lag_is_clamped_to_two_slices_or_a_tick() {
        let mut e = Eevdf::new(MS, 4 * MS);
        // 10 tasks wait while task 0 runs 100 ms, then blocks.
        e.wake(at(0), 0);
        e.start(at(0), 0);
        for t in 1..=10 {
            e.wake(at(0), t);
            e.wait(t);
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
        let mut e = Eevdf::new(4 * MS, 4 * MS);
        // B has run before (no lag): its next placement gets a full slice.
        e.wake(at(0), 1);
        e.start(at(0), 1);
        e.stop(at(0), 1, false);
        // A, new, runs 1 ms: vruntime 1 ms, deadline 2 ms (half a slice).
        // B waits at vruntime 0 with deadline 4 ms.
        e.wake(at(0), 0);
        e.start(at(0), 0);
        e.wake(at(0), 1);
        e.wait(1);
        e.stop(at(1), 0, true);
        e.wait(0);
        assert_eq!(
            (e.deadline(0), e.deadline(1)),
            (2 * MS as i64, 4 * MS as i64)
        );
        // V = 0.5 ms: A is not eligible, B is.
        let c = [(0, 0), (1, 1)];
        assert_eq!(e.pick(at(1), c.into_iter()), Some(1));
    }

    #[test]
    fn a_used_up_slice_moves_the_deadline() {
        let mut e = Eevdf::new(2 * MS, MS);
        e.wake(at(0), 0);
        assert_eq!(e.deadline(0), MS as i64, "first placement: half a slice");
        e.start(at(0), 0);
        e.stop(at(5), 0, true);
        assert_eq!(e.deadline(0), 7 * MS as i64, "vruntime 5 ms + slice");
    }
}
