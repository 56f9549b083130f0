//! What a run records for `convoy run --blame` (the explanation, which
//! re-runs the world, is `crate::blame`'s): the waits that ended
//! ([`Picker`], the first run), and per task what it did between
//! scheduling changes and who woke it from each wait queue ([`Recorder`]),
//! only for the tasks and times a [`Focus`] asks for.

use crate::program::{StatId, WorkTypeId};
use models::{LockId, MemcgId, Mode, TaskId, WqId};
use sim::{Dur, SimTime};
use typed_index_collections::{ti_vec, TiVec};

/// What a task is doing between two scheduling changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doing {
    /// Before the task first runs.
    Start,
    /// On a CPU (running its program, a `cpu` step, or spinning).
    OnCpu,
    /// Runnable, waiting for a CPU.
    Runnable,
    /// Woken, within its scheduling (wake-up) latency.
    Waking,
    /// Spinning on its CPU for a lock (optimistic spinning, R8-R11).
    Spin { lock: LockId, mode: Mode },
    /// A kworker being created by the pool manager (R38).
    Creating,
    /// A `sleep` step.
    Sleep,
    /// A direct reclaim attempt in memcg `memcg` (R45), asleep.
    Reclaim { memcg: MemcgId },
    /// Throttled over memory.high in memcg `memcg` (R48).
    Throttle { memcg: MemcgId },
    /// Asleep in `lock`'s wait queue.
    Lock { lock: LockId, mode: Mode },
    /// In `flush_workqueue` of workqueue `wq` (R36).
    Flush { wq: WqId },
    /// Waiting for a running item of `wq` (`cancel_*_sync`).
    WorkWait { wq: WqId },
    /// In `synchronize_rcu`, waiting for a grace period (R93).
    GracePeriod,
    /// A kworker with no item.
    Idle,
    /// The task has exited (done, or killed).
    Exited,
    /// Not recorded (outside what the recorder kept).
    Unknown,
    /// Not explained further: the chain reached its most links
    /// (`blame::MAX_LINKS`).
    Cut,
}

impl Doing {
    /// Asleep until another task wakes it: the waker is to blame.
    pub fn waits_for_waker(self) -> bool {
        matches!(
            self,
            Doing::Lock { .. } | Doing::Flush { .. } | Doing::WorkWait { .. }
        )
    }
}

/// A lock wait: `task` waited for the wait statistic `stat` from `start`
/// until it had the lock at `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    pub task: TaskId,
    pub stat: StatId,
    pub lock: LockId,
    pub mode: Mode,
    pub start: SimTime,
    pub end: SimTime,
}

impl Wait {
    /// How long it lasted.
    pub fn dur(&self) -> Dur {
        self.end - self.start
    }

    /// Worst first; ties by start, then task, so the choice is stable.
    fn rank_key(&self) -> (std::cmp::Reverse<Dur>, SimTime, TaskId) {
        (std::cmp::Reverse(self.dur()), self.start, self.task)
    }
}

/// Which waits to explain.
#[derive(Clone, Debug)]
pub struct Wanted {
    /// The worst this many.
    pub top: usize,
    /// And every wait at least this long.
    pub threshold: Option<Dur>,
    /// Only waits of these statistics (all if `None`).
    pub stats: Option<Vec<StatId>>,
}

/// Most waits over the threshold that are explained (the first ones).
pub const MAX_ABOVE: usize = 10_000;

/// The first run: keeps the worst waits and those over the threshold.
#[derive(Clone)]
pub struct Picker {
    wanted: Wanted,
    /// The `top` worst so far, worst first.
    top: Vec<Wait>,
    above: Vec<Wait>,
    /// Waits over the threshold, including those not kept.
    pub above_count: u64,
}

impl Picker {
    pub fn new(wanted: Wanted) -> Picker {
        Picker {
            wanted,
            top: Vec::new(),
            above: Vec::new(),
            above_count: 0,
        }
    }

    pub fn wait(&mut self, w: Wait) {
        if let Some(s) = &self.wanted.stats {
            if !s.contains(&w.stat) {
                return;
            }
        }
        if self.wanted.threshold.is_some_and(|th| w.dur() >= th) {
            self.above_count += 1;
            if self.above.len() < MAX_ABOVE {
                self.above.push(w);
            }
        }
        if self.wanted.top == 0 {
            return;
        }
        let key = w.rank_key();
        if self.top.len() == self.wanted.top && key >= self.top[self.top.len() - 1].rank_key() {
            return;
        }
        let at = self.top.partition_point(|x| x.rank_key() < key);
        self.top.insert(at, w);
        self.top.truncate(self.wanted.top);
    }

    /// The waits to explain: the worst first, then those over the
    /// threshold in time order, each once.
    pub fn picked(&self) -> Vec<Wait> {
        let mut out = self.top.clone();
        out.extend(self.above.iter().filter(|w| !self.top.contains(w)));
        out
    }
}

/// One recorded stretch of a task's time.
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    pub start: SimTime,
    pub end: SimTime,
    pub doing: Doing,
    /// Who woke it at `end`, for a sleep in a wait queue.
    pub waker: Option<TaskId>,
    /// A kworker's work type while on a CPU.
    pub work: Option<WorkTypeId>,
}

/// A lock held by a task over `[start, end)`.
#[derive(Clone, Copy, Debug)]
pub struct Hold {
    pub start: SimTime,
    pub end: SimTime,
    pub lock: LockId,
    pub mode: Mode,
}

/// Most stretches one blame run keeps (then it says it was cut short).
pub const MAX_SEGS: usize = 5_000_000;

/// Per task (or per lock: `K`), the intervals to record: sorted,
/// disjoint.
#[derive(Clone)]
pub struct Focus<K>(TiVec<K, Vec<(SimTime, SimTime)>>);

impl<K> Default for Focus<K> {
    fn default() -> Self {
        Focus(TiVec::new())
    }
}

impl<K: Copy + From<usize>> Focus<K>
where
    usize: From<K>,
{
    /// Adds `[a, b)` of `t`; returns whether it was not covered yet.
    pub fn add(&mut self, t: K, a: SimTime, b: SimTime) -> bool {
        if self.covers(t, a, b) {
            return false;
        }
        if self.0.get(t).is_none() {
            self.0.resize(usize::from(t) + 1, Vec::new());
        }
        let v = &mut self.0[t];
        v.push((a, b));
        v.sort();
        let mut merged: Vec<(SimTime, SimTime)> = Vec::with_capacity(v.len());
        for &(x, y) in v.iter() {
            match merged.last_mut() {
                Some(last) if x <= last.1 => last.1 = last.1.max(y),
                _ => merged.push((x, y)),
            }
        }
        *v = merged;
        true
    }

    /// Whether `[a, b)` of `t` is recorded.
    pub fn covers(&self, t: K, a: SimTime, b: SimTime) -> bool {
        let Some(v) = self.0.get(t) else {
            return false;
        };
        let i = v.partition_point(|f| f.1 < b);
        i < v.len() && v[i].0 <= a
    }

    fn overlaps(&self, t: K, a: SimTime, b: SimTime) -> bool {
        let Some(v) = self.0.get(t) else {
            return false;
        };
        let i = v.partition_point(|f| f.1 <= a);
        i < v.len() && v[i].0 < b
    }
}

/// The later runs: what the tasks of interest did over the intervals of
/// interest ([`Focus`]).
#[derive(Clone)]
pub struct Recorder {
    focus: Focus<TaskId>,
    /// Per lock, intervals in which every task's waits for it and holds
    /// of it are kept: a queue's waiters ahead are found in one run.
    convoys: Focus<LockId>,
    /// Per task: what it does since when, who woke it, its work type.
    open: TiVec<TaskId, (SimTime, Doing, Option<TaskId>, Option<WorkTypeId>)>,
    segs: TiVec<TaskId, Vec<Seg>>,
    holds: TiVec<TaskId, Vec<Hold>>,
    kept: usize,
    pub truncated: bool,
}

impl Recorder {
    /// A recorder of `tasks` tasks for `focus`; `idle` says which tasks
    /// start idle (kworkers).
    pub fn new(
        (focus, convoys): (Focus<TaskId>, Focus<LockId>),
        idle: impl Fn(TaskId) -> bool,
        tasks: usize,
    ) -> Recorder {
        Recorder {
            focus,
            convoys,
            open: (0..tasks)
                .map(TaskId::from)
                .map(|t| {
                    let d = if idle(t) { Doing::Idle } else { Doing::Start };
                    (SimTime::ZERO, d, None, None)
                })
                .collect(),
            segs: ti_vec![Vec::new(); tasks],
            holds: ti_vec![Vec::new(); tasks],
            kept: 0,
            truncated: false,
        }
    }

    /// Whether to keep a stretch `[start, end)` of `t`, which waits for
    /// or holds `lock` if any.
    fn wanted(&mut self, t: TaskId, start: SimTime, end: SimTime, lock: Option<LockId>) -> bool {
        if end <= start {
            return false;
        }
        let convoy = lock.is_some_and(|l| self.convoys.overlaps(l, start, end));
        if !convoy && !self.focus.overlaps(t, start, end) {
            return false;
        }
        if self.kept >= MAX_SEGS {
            self.truncated = true;
            return false;
        }
        self.kept += 1;
        true
    }

    /// Task `t` does `doing` from `now` on (a kworker, running an item
    /// of `work` while on a CPU).
    pub fn switch(&mut self, t: TaskId, now: SimTime, doing: Doing, work: Option<WorkTypeId>) {
        let (_, was, _, was_work) = self.open[t];
        if was == doing && work == was_work {
            return;
        }
        self.close(t, now);
        self.open[t] = (now, doing, None, work);
    }

    /// Ends `t`'s open stretch at `now`, kept if wanted.
    fn close(&mut self, t: TaskId, now: SimTime) {
        let (since, was, waker, work) = self.open[t];
        let lock = match was {
            Doing::Lock { lock, .. } => Some(lock),
            _ => None,
        };
        if self.wanted(t, since, now, lock) {
            self.segs[t].push(Seg {
                start: since,
                end: now,
                doing: was,
                waker,
                work,
            });
        }
    }

    /// `waker` wakes `t` from its wait queue now.
    pub fn woken_by(&mut self, t: TaskId, waker: TaskId) {
        self.open[t].2 = Some(waker);
    }

    /// Task `t` held `lock` over `[start, end)`.
    pub fn hold(&mut self, t: TaskId, lock: LockId, mode: Mode, start: SimTime, end: SimTime) {
        if self.wanted(t, start, end, Some(lock)) {
            self.holds[t].push(Hold {
                start,
                end,
                lock,
                mode,
            });
        }
    }

    /// Closes every open stretch at `now` (the end of the run).
    pub fn finish(&mut self, now: SimTime) {
        for t in (0..self.open.len()).map(TaskId::from) {
            self.close(t, now);
            self.open[t] = (now, Doing::Unknown, None, None);
        }
    }

    /// The intervals recorded per task.
    pub fn focus(&self) -> &Focus<TaskId> {
        &self.focus
    }

    /// `t`'s recorded stretches, in time order.
    pub fn segs(&self, t: TaskId) -> &[Seg] {
        &self.segs[t]
    }

    /// `t`'s recorded holds, in release order.
    pub fn holds(&self, t: TaskId) -> &[Hold] {
        &self.holds[t]
    }
}

/// Names for the report: the world knows them.
pub trait Names {
    fn task(&self, t: TaskId) -> String;
    /// `kernfs_rwsem (read)`.
    fn lock(&self, lock: LockId, mode: Mode) -> String;
    fn memcg(&self, m: MemcgId) -> String;
    fn workqueue(&self, q: WqId) -> String;
    fn work(&self, w: WorkTypeId) -> String;
    fn stat(&self, s: StatId) -> String;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(task: u32, start: u64, end: u64) -> Wait {
        Wait {
            task: TaskId(task),
            stat: StatId(0),
            lock: LockId(0),
            mode: Mode::Read,
            start: SimTime(start),
            end: SimTime(end),
        }
    }

    #[test]
    fn picker_keeps_the_worst_and_those_over_the_threshold() {
        let mut p = Picker::new(Wanted {
            top: 2,
            threshold: Some(Dur(50)),
            stats: None,
        });
        for (i, d) in (0..).zip([10, 90, 60, 30, 90, 70]) {
            p.wait(wait(i, u64::from(i) * 100, u64::from(i) * 100 + d));
        }
        let picked: Vec<u32> = p.picked().iter().map(|w| w.task.0).collect();
        // The two 90s (earlier first), then 60 and 70 in time order.
        assert_eq!(picked, vec![1, 4, 2, 5]);
        assert_eq!(p.above_count, 4);
    }
}
