//! The fair class's order of a run queue: EEVDF (Linux 6.6 on,
//! [`crate::sched::eevdf`]) or CFS (before, [`crate::sched::cfs`]). [`crate::sched::cpu::CpuPool`]
//! places, queues, picks and preempts through this one interface.

use crate::ids::TaskId;
use crate::sched::cfs::Cfs;
use crate::sched::eevdf::Eevdf;
use sim::SimTime;

#[derive(Clone, Debug)]
pub enum FairOrder {
    Eevdf(Eevdf),
    Cfs(Cfs),
}

impl FairOrder {
    /// Bytes either order keeps per task (its entity), the larger of the two.
    pub const BYTES_PER_TASK: usize = if Eevdf::BYTES_PER_TASK > Cfs::BYTES_PER_TASK {
        Eevdf::BYTES_PER_TASK
    } else {
        Cfs::BYTES_PER_TASK
    };

    /// Starts loading `t`'s entity and run queue `rq` into the cache.
    #[inline(always)]
    pub fn prefetch(&self, t: TaskId, rq: usize) {
        match self {
            FairOrder::Eevdf(e) => e.prefetch(t, rq),
            FairOrder::Cfs(c) => c.prefetch(t),
        }
    }

    /// `t` becomes runnable at `now` on queue `rq`.
    pub fn wake(&mut self, now: SimTime, t: TaskId, rq: usize) {
        match self {
            FairOrder::Eevdf(e) => e.wake(now, t, rq),
            FairOrder::Cfs(c) => c.wake(now, t, rq),
        }
    }

    /// `t`, runnable, waits on queue `rq` from `now`.
    pub fn wait(&mut self, now: SimTime, t: TaskId, rq: usize) {
        match self {
            FairOrder::Eevdf(e) => e.wait(now, t, rq),
            FairOrder::Cfs(c) => c.wait(now, t, rq),
        }
    }

    /// `t` starts running at `now` on queue `rq`'s CPU.
    pub fn start(&mut self, now: SimTime, t: TaskId, rq: usize) {
        match self {
            FairOrder::Eevdf(e) => e.start(now, t, rq),
            FairOrder::Cfs(c) => c.start(now, t, rq),
        }
    }

    /// `t` stops running at `now`, still runnable or not.
    pub fn stop(&mut self, now: SimTime, t: TaskId, runnable: bool) {
        match self {
            FairOrder::Eevdf(e) => e.stop(now, t, runnable),
            FairOrder::Cfs(c) => c.stop(now, t, runnable),
        }
    }

    /// `t`'s load weight (nice 0: 1024), before it first wakes. Only
    /// EEVDF weighs tasks; returns false for CFS, which here has none.
    pub fn set_weight(&mut self, t: TaskId, weight: u32) -> bool {
        match self {
            FairOrder::Eevdf(e) => {
                e.set_weight(t, weight);
                true
            }
            FairOrder::Cfs(_) => false,
        }
    }

    /// `t`, blocked, now stands for another task with no history.
    pub fn forget(&mut self, t: TaskId) {
        match self {
            FairOrder::Eevdf(e) => e.forget(t),
            FairOrder::Cfs(c) => c.forget(t),
        }
    }

    /// The position of the task to run next among `candidates`.
    pub fn pick(
        &mut self,
        now: SimTime,
        rq: usize,
        candidates: impl Iterator<Item = (TaskId, u64)>,
    ) -> Option<usize> {
        match self {
            FairOrder::Eevdf(e) => e.pick(now, rq, candidates),
            FairOrder::Cfs(c) => c.pick(now, rq, candidates),
        }
    }

    /// Whether `task`, just queued on `rq`, makes `curr` running there
    /// reschedule (wakeup preemption). `waiting` are the queue's tasks,
    /// `task` among them. EEVDF: the enqueue's `update_curr` finds
    /// `curr`'s request used up (`update_deadline` asks for a reschedule,
    /// whoever is picked after, R124), or `curr` is no longer eligible and
    /// `task` is the pick (`check_preempt_wakeup_fair`; an eligible `curr`
    /// inside its request is protected, RUN_TO_PARITY). CFS: `curr` is
    /// more than the wakeup granularity ahead of `task`.
    pub fn wakeup_preempts(
        &mut self,
        now: SimTime,
        curr: TaskId,
        task: TaskId,
        rq: usize,
        waiting: impl Iterator<Item = (TaskId, u64)> + Clone,
    ) -> bool {
        match self {
            FairOrder::Eevdf(e) => {
                if e.request_used(now, curr, rq) {
                    return true;
                }
                if !e.ineligible(now, curr, rq) || !e.eligible(now, task, rq) {
                    return false;
                }
                e.pick(now, rq, waiting.clone())
                    .and_then(|i| waiting.clone().nth(i))
                    .is_some_and(|(t, _)| t == task)
            }
            FairOrder::Cfs(c) => c.wakeup_preempts(now, curr, task, rq),
        }
    }
}
