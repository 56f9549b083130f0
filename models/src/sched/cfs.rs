//! CFS's order for runnable tasks (kernel/sched/fair.c before Linux 6.6,
//! when EEVDF replaced it), for the run queue of [`crate::sched::cpu::CpuPool`]
//! with `wake_placement = "cfs"`: the what-if of a kernel of that age.
//!
//! All tasks have the same weight (nice 0), so virtual time is CPU time:
//! - a running task's `vruntime` grows by the time it runs (`update_curr`);
//! - each run queue keeps `min_vruntime`, which only moves forward: to the
//!   least `vruntime` of its running and waiting tasks
//!   (`update_min_vruntime`);
//! - the next task is the one with the least `vruntime` (the leftmost of
//!   the rbtree, `pick_next_entity`);
//! - a task that wakes is placed at `max(vruntime, min_vruntime -
//!   sched_latency / 2)` (`place_entity` with GENTLE_FAIR_SLEEPERS): one
//!   that slept long comes back up to half a latency ahead of everyone, one
//!   that slept briefly keeps its own `vruntime`. A task's first placement
//!   is at `min_vruntime`;
//! - a task that moves to another CPU's queue keeps its `vruntime` relative
//!   to `min_vruntime` (`migrate_task_rq_fair`, `enqueue_entity`);
//! - a woken task preempts the running one when it is more than the wakeup
//!   granularity behind it (`check_preempt_wakeup`, `wakeup_preempt_entity`).
//!
//! The latency and the granularity follow the kernel's defaults in
//! proportion to the base slice (`sysctl_sched_min_granularity`, scaled by
//! the CPU count as all three are): `sched_latency = 8 x slice` (6 ms
//! against 0.75 ms), `wakeup_granularity = 4/3 x slice` (1 ms).
//!
//! What is not here: weights other than nice 0; the slice that shrinks
//! with many runnable tasks (`sched_slice`; the pool's fixed time slice
//! ends a turn instead); START_DEBIT; the next and last buddies; the
//! 60-second sleeper reset.

use crate::ids::TaskId;
use crate::sched::entity::{PerTask, State};
use sim::{Dur, SimTime};
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, Default)]
struct Entity {
    vruntime: i64,
    /// When it last started running (ns).
    started: i64,
    placed_before: bool,
    state: State,
    /// The run queue it is placed on (or was last).
    rq: u32,
}

#[derive(Clone, Debug, Default)]
struct Rq {
    min_vruntime: i64,
    /// Waiting tasks by (vruntime, task): the leftmost is the first.
    waiting: BTreeSet<(i64, TaskId)>,
    running: Vec<TaskId>,
}

/// The CFS state of every task, and of every run queue.
#[derive(Clone, Debug)]
pub struct Cfs {
    /// `sched_latency / 2`: a sleeper's most credit.
    sleeper_credit: i64,
    wakeup_gran: i64,
    se: PerTask<Entity>,
    rqs: Vec<Rq>,
}

impl Cfs {
    /// `slice`: the base slice (`sysctl_sched_min_granularity` as scaled by
    /// the CPU count); `queues`: how many run queues (at least one).
    /// Bytes of each task's entity.
    pub const BYTES_PER_TASK: usize = std::mem::size_of::<Entity>();

    /// Starts loading `t`'s entity into the cache.
    #[inline(always)]
    pub fn prefetch(&self, t: TaskId) {
        self.se.prefetch(t);
    }

    pub fn new(slice: Dur, queues: usize) -> Cfs {
        let slice = slice.0.clamp(3, i64::MAX as u64 / 16) as i64;
        Cfs {
            sleeper_credit: 8 * slice / 2,
            wakeup_gran: 4 * slice / 3,
            se: PerTask::default(),
            rqs: vec![Rq::default(); queues.max(1)],
        }
    }

    fn se(&mut self, t: TaskId) -> &mut Entity {
        self.se.get_mut(t)
    }

    fn get(&self, t: TaskId) -> Entity {
        self.se.get(t)
    }

    /// `t`'s vruntime at `now` (a running task's grows as it runs).
    fn vruntime_at(&self, t: TaskId, now: SimTime) -> i64 {
        let e = self.get(t);
        match e.state {
            State::Running => e.vruntime + (now.0 as i64 - e.started),
            _ => e.vruntime,
        }
    }

    /// Queue `rq`'s `min_vruntime` at `now`, moved forward to the least
    /// vruntime of its tasks (`update_min_vruntime`).
    fn min_vruntime(&mut self, rq: usize, now: SimTime) -> i64 {
        let q = &self.rqs[rq];
        let leftmost = q.waiting.first().map(|&(v, _)| v);
        let running = q.running.iter().map(|&t| self.vruntime_at(t, now)).min();
        let least = match (leftmost, running) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let q = &mut self.rqs[rq];
        if let Some(v) = least {
            q.min_vruntime = q.min_vruntime.max(v);
        }
        q.min_vruntime
    }

    /// `t` becomes runnable at `now` on queue `rq` (`place_entity`). A
    /// task already runnable is left as it is.
    pub fn wake(&mut self, now: SimTime, t: TaskId, rq: usize) {
        let e = self.get(t);
        if e.state != State::Off {
            return;
        }
        let base = self.min_vruntime(rq, now);
        let old_rq = e.rq as usize;
        let own = if !e.placed_before {
            base
        } else if old_rq != rq {
            // Relative to the old queue's min_vruntime, onto the new one's.
            e.vruntime - self.min_vruntime(old_rq, now) + base
        } else {
            e.vruntime
        };
        let credit = self.sleeper_credit;
        let e = self.se(t);
        e.vruntime = own.max(base - credit);
        e.rq = rq as u32;
        e.placed_before = true;
        e.state = State::Placed;
    }

    /// `t`, blocked, now stands for another task that has slept long: on
    /// its next wake it gets the full sleeper credit on whatever queue.
    pub fn forget(&mut self, t: TaskId) {
        let e = self.se(t);
        if e.state == State::Off && e.placed_before {
            // Far behind any queue's min_vruntime: `wake` then places it
            // at min_vruntime less the whole credit.
            e.vruntime = i64::MIN / 4;
        }
    }

    /// `t`, runnable, moves to queue `rq` at `now`, keeping its vruntime
    /// relative to `min_vruntime`; it is placed there (not waiting).
    fn migrate(&mut self, now: SimTime, t: TaskId, rq: usize) {
        let e = self.get(t);
        let old = e.rq as usize;
        if e.state == State::Waiting {
            self.rqs[old].waiting.remove(&(e.vruntime, t));
        }
        let rel = e.vruntime - self.min_vruntime(old, now);
        let base = self.min_vruntime(rq, now);
        let e = self.se(t);
        e.vruntime = rel + base;
        e.rq = rq as u32;
        e.state = State::Placed;
    }

    /// `t`, runnable, waits on queue `rq` from `now`.
    pub fn wait(&mut self, now: SimTime, t: TaskId, rq: usize) {
        if self.get(t).rq as usize != rq {
            self.migrate(now, t, rq);
        }
        let e = self.se(t);
        debug_assert!(matches!(e.state, State::Placed), "{:?}", e.state);
        e.state = State::Waiting;
        let v = e.vruntime;
        self.rqs[rq].waiting.insert((v, t));
    }

    /// `t` starts running at `now` on queue `rq`'s CPU.
    pub fn start(&mut self, now: SimTime, t: TaskId, rq: usize) {
        if self.get(t).rq as usize != rq {
            self.migrate(now, t, rq);
        }
        let e = self.se(t);
        let (was, v) = (e.state, e.vruntime);
        debug_assert!(matches!(was, State::Waiting | State::Placed), "{was:?}");
        e.state = State::Running;
        e.started = now.0 as i64;
        let q = &mut self.rqs[rq];
        if was == State::Waiting {
            q.waiting.remove(&(v, t));
        }
        q.running.push(t);
    }

    /// `t` stops running at `now`: still runnable ([`Self::wait`] follows)
    /// or blocked, keeping its vruntime.
    pub fn stop(&mut self, now: SimTime, t: TaskId, runnable: bool) {
        let e = self.get(t);
        if e.state != State::Running {
            return;
        }
        let rq = e.rq as usize;
        self.min_vruntime(rq, now);
        let e = self.se(t);
        e.vruntime += now.0 as i64 - e.started;
        e.state = if runnable { State::Placed } else { State::Off };
        let q = &mut self.rqs[rq];
        if let Some(i) = q.running.iter().position(|&r| r == t) {
            q.running.swap_remove(i);
        }
    }

    /// Of `candidates` (task, tie-break order), the one CFS runs next: the
    /// least vruntime. Returns its position in the iteration.
    pub fn pick(
        &mut self,
        now: SimTime,
        rq: usize,
        candidates: impl Iterator<Item = (TaskId, u64)>,
    ) -> Option<usize> {
        self.min_vruntime(rq, now);
        candidates
            .enumerate()
            .min_by_key(|&(_, (t, seq))| (self.get(t).vruntime, seq))
            .map(|(i, _)| i)
    }

    /// Whether `task`, just queued on `rq`, preempts `curr` running there:
    /// `curr` is more than the wakeup granularity ahead of it.
    pub fn wakeup_preempts(&self, now: SimTime, curr: TaskId, task: TaskId, rq: usize) -> bool {
        let c = self.get(curr);
        if c.state != State::Running || c.rq as usize != rq {
            return false;
        }
        self.vruntime_at(curr, now) - self.get(task).vruntime > self.wakeup_gran
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn at(ms: u64) -> SimTime {
        SimTime(ms * MS)
    }

    /// Runs `t` on queue 0 from `from` to `to` (ms), still runnable after.
    fn run(c: &mut Cfs, t: u32, from: u64, to: u64) {
        run_on(c, t, 0, from, to);
    }

    /// [`run`] on queue `rq`.
    fn run_on(c: &mut Cfs, t: u32, rq: usize, from: u64, to: u64) {
        let t = TaskId(t);
        c.start(at(from), t, rq);
        c.stop(at(to), t, true);
        c.wait(at(to), t, rq);
    }

    #[test]
    fn cfs_runs_the_least_vruntime_first() {
        let mut c = Cfs::new(Dur(3 * MS), 1);
        for t in (0..3).map(TaskId) {
            c.wake(at(0), t, 0);
            c.wait(at(0), t, 0);
        }
        // 0 runs 5 ms, 1 runs 2 ms: 2 (never ran) goes first, then 1.
        run(&mut c, 0, 0, 5);
        run(&mut c, 1, 5, 7);
        let order = |c: &mut Cfs| {
            c.pick(
                at(7),
                0,
                [(TaskId(0), 0), (TaskId(1), 1), (TaskId(2), 2)].into_iter(),
            )
        };
        assert_eq!(order(&mut c), Some(2));
        run(&mut c, 2, 7, 10);
        assert_eq!(
            c.pick(
                at(10),
                0,
                [(TaskId(0), 0), (TaskId(1), 1), (TaskId(2), 2)].into_iter()
            ),
            Some(1)
        );
    }

    #[test]
    fn cfs_a_long_sleeper_comes_back_half_a_latency_ahead_a_short_one_keeps_its_place() {
        // Slice 3 ms: latency 24 ms, a sleeper's credit 12 ms.
        let mut c = Cfs::new(Dur(3 * MS), 1);
        for t in (0..3).map(TaskId) {
            c.wake(at(0), t, 0);
            c.wait(at(0), t, 0);
        }
        // 2 runs 1 ms and sleeps; 0 and 1 then share the CPU for 100 ms.
        c.start(at(0), TaskId(2), 0);
        c.stop(at(1), TaskId(2), false);
        let mut now = 1;
        while now < 101 {
            run(&mut c, 0, now, now + 5);
            run(&mut c, 1, now + 5, now + 10);
            now += 10;
        }
        // min_vruntime is 50 ms (0 and 1 ran 50 ms each): 2, which stopped
        // at 1 ms, comes back at 50 - 12 = 38 ms, not at 1 ms.
        c.wake(at(now), TaskId(2), 0);
        c.wait(at(now), TaskId(2), 0);
        assert_eq!(c.get(TaskId(2)).vruntime, 38 * MS as i64);
        assert_eq!(
            c.pick(
                at(now),
                0,
                [(TaskId(0), 0), (TaskId(1), 1), (TaskId(2), 2)].into_iter()
            ),
            Some(2)
        );
        // 0 sleeps briefly after running: it keeps its own vruntime (55
        // ms), later than min_vruntime less the credit.
        c.start(at(now), TaskId(0), 0);
        c.stop(at(now + 5), TaskId(0), false);
        c.wake(at(now + 6), TaskId(0), 0);
        assert_eq!(c.get(TaskId(0)).vruntime, 55 * MS as i64);
    }

    #[test]
    fn cfs_a_wakee_preempts_only_beyond_the_wakeup_granularity() {
        // Slice 3 ms: granularity 4 ms.
        let mut c = Cfs::new(Dur(3 * MS), 1);
        for t in (0..2).map(TaskId) {
            c.wake(at(0), t, 0);
            c.wait(at(0), t, 0);
        }
        c.start(at(0), TaskId(0), 0);
        // 1 is not running: no effect.
        c.stop(at(0), TaskId(1), false);
        // 1 is at vruntime 0; 0 has run 4 ms: exactly the granularity.
        assert!(!c.wakeup_preempts(at(4), TaskId(0), TaskId(1), 0));
        assert!(c.wakeup_preempts(SimTime(4 * MS + 1), TaskId(0), TaskId(1), 0));
        // Not running on that queue: never.
        assert!(!c.wakeup_preempts(at(9), TaskId(1), TaskId(0), 0));
    }

    #[test]
    fn cfs_a_forgotten_task_wakes_as_a_long_sleeper_on_any_queue() {
        // 0 ran 20 ms on queue 0 and blocked; forgotten (a kworker moving
        // to another CPU's pool), it wakes on queue 1, whose task has run
        // 10 ms, at that min_vruntime less the whole credit (12 ms at
        // slice 3 ms): -2 ms, as a task that slept long. Not forgotten, it
        // would come back 10 ms past queue 1's min_vruntime.
        let mut c = Cfs::new(Dur(3 * MS), 2);
        c.wake(at(0), TaskId(0), 0);
        c.start(at(0), TaskId(0), 0);
        c.stop(at(20), TaskId(0), false);
        c.wake(at(0), TaskId(1), 1);
        c.wait(at(0), TaskId(1), 1);
        run_on(&mut c, 1, 1, 0, 10);
        c.forget(TaskId(0));
        c.wake(at(20), TaskId(0), 1);
        assert_eq!(c.get(TaskId(0)).vruntime, -2 * MS as i64);
    }

    #[test]
    fn cfs_a_task_that_moves_queue_keeps_its_vruntime_relative_to_min_vruntime() {
        let mut c = Cfs::new(Dur(3 * MS), 2);
        // Queue 0's tasks have run 10 ms each; queue 1 is fresh.
        for t in (0..2).map(TaskId) {
            c.wake(at(0), t, 0);
            c.wait(at(0), t, 0);
        }
        run(&mut c, 0, 0, 10);
        run(&mut c, 1, 10, 20);
        run(&mut c, 0, 20, 22);
        // 0 is 2 ms past queue 0's min_vruntime (10 ms): on queue 1, whose
        // min_vruntime is 0, it waits at 2 ms.
        c.start(at(22), TaskId(0), 1);
        assert_eq!(c.get(TaskId(0)).vruntime, 2 * MS as i64);
    }
}
