//! EEVDF's order for runnable tasks (kernel/sched/fair.c, Linux 6.12+), for
//! the run queue of [`crate::sched::cpu::CpuPool`] with `wake_placement = "eevdf"`.
//!
//! Each task has a load weight, from its nice level ([`nice_to_weight`]);
//! virtual time is CPU time scaled by `1024 / weight` (`calc_delta_fair`),
//! so at nice 0 it is CPU time:
//! - a running task's `vruntime` grows by the time it runs, scaled
//!   (`update_curr`); when it passes the task's `deadline`, the deadline
//!   moves to `vruntime + slice`, the slice scaled (`update_deadline`);
//! - `V` is the weighted average `vruntime` of the runnable tasks, running
//!   ones included (`avg_vruntime`);
//! - a task that blocks keeps its lag `V - vruntime`, clamped to
//!   `max(2 * slice, TICK_NSEC)` scaled, either way (`update_entity_lag`);
//! - one that blocks with a negative lag (not eligible) stays queued,
//!   counted in `V`, until `V` reaches its `vruntime` (6.12's
//!   DELAY_DEQUEUE, `dequeue_entity`): then it leaves with no lag
//!   (DELAY_ZERO, `finish_delayed_dequeue_entity`). If it wakes before,
//!   it is requeued as it was, `vruntime` and deadline unchanged
//!   (`requeue_delayed_entity`). The kernel dequeues it when `pick_eevdf`
//!   picks it, once eligible; the model does when it finds it eligible,
//!   at the next look at that queue's `V`;
//! - a task that becomes runnable is placed at `vruntime = V - lag`, the
//!   lag scaled by `(W + w) / W` for its weight `w` and the weight `W` of
//!   the tasks already runnable, with
//!   `deadline = vruntime + slice`, half a slice the first time
//!   (`place_entity`, PLACE_LAG, PLACE_DEADLINE_INITIAL);
//! - the next task is the eligible one (`vruntime <= V`) with the earliest
//!   deadline, else the one with the least `vruntime` (`pick_eevdf`);
//! - a wakeup reschedules the running task once it is not eligible and
//!   the wakee is the pick, or once its vruntime has reached its deadline
//!   (the enqueue's `update_curr`, R124); an eligible one inside its
//!   request keeps the CPU (RUN_TO_PARITY).
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
//! A blocked task can be forgotten ([`Eevdf::forget`]): a kworker that
//! moves to another CPU stands for that CPU's kworker from then on, so it
//! leaves its old queue and carries no lag.
//!
//! A delayed task that is woken onto another queue (the pool chose
//! another CPU; the kernel wakes it where it is queued) leaves its queue
//! with its lag and is placed on the new one with it, as a migration.
//!
//! What is not here: group scheduling (a cgroup's tasks as one entity of
//! the cgroup's weight, CONFIG_FAIR_GROUP_SCHED). The pick scans the queue
//! (the kernel keeps an augmented rbtree): a handover costs O(tasks
//! waiting), which 10,000 runnable hogs on 2 CPUs still run at 0.08 s per
//! simulated 2 s.

use crate::ids::TaskId;
use crate::sched::entity::{PerTask, State};
use sim::{Dur, SimTime};

/// `sched_prio_to_weight` (kernel/sched/core.c): the load weight of nice
/// levels -20 to 19; each level is about 10% of CPU time against the next.
const PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// The weight of nice 0 (`NICE_0_LOAD` without the fixed-point shift).
pub const NICE_0_WEIGHT: u32 = 1024;

/// The load weight of nice level `nice` (-20 to 19; clamped).
pub fn nice_to_weight(nice: i32) -> u32 {
    PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// `delta` ns of CPU time in the virtual time of a task of weight `w`
/// (`calc_delta_fair`): the same at nice 0.
#[inline]
fn scaled(delta: i64, w: i64) -> i64 {
    if w == NICE_0_WEIGHT as i64 {
        delta
    } else {
        (i128::from(delta) * i128::from(NICE_0_WEIGHT) / i128::from(w)) as i64
    }
}

#[derive(Clone, Copy, Debug)]
struct Entity {
    vruntime: i64,
    deadline: i64,
    vlag: i64,
    /// When it last started running (ns).
    started: i64,
    placed_before: bool,
    /// Blocked with negative lag and still queued, counted in its
    /// queue's `V` (DELAY_DEQUEUE): its state is `Off`.
    delayed: bool,
    state: State,
    /// The run queue it is placed on (or was last).
    rq: u32,
    /// Load weight (nice 0: 1024).
    weight: i64,
}

impl Default for Entity {
    fn default() -> Entity {
        Entity {
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            started: 0,
            placed_before: false,
            delayed: false,
            state: State::Off,
            rq: 0,
            weight: NICE_0_WEIGHT as i64,
        }
    }
}

/// One run queue's sums, from which its `V` follows.
#[derive(Clone, Debug)]
struct Rq {
    /// Sum of `weight * vruntime` over waiting tasks, and of their weights.
    sum_wait: i128,
    w_wait: i64,
    /// Sum of `weight * vruntime - 1024 * started` over running tasks,
    /// their number and the sum of their weights: their sum of `weight *
    /// vruntime` at `now` is this plus `1024 * n_run * now`.
    sum_run: i128,
    n_run: i64,
    w_run: i64,
    /// `V` when last computed over a non-empty set (an idle queue keeps it).
    last_v: i64,
    /// Blocked tasks still queued (DELAY_DEQUEUE), counted in `sum_wait`
    /// and `w_wait` (a few at a time: a plain list), and the least
    /// `vruntime` among them (`i64::MAX` if none): none leaves while `V`
    /// is below it.
    delayed: Vec<TaskId>,
    delayed_min: i64,
}

impl Default for Rq {
    fn default() -> Rq {
        Rq {
            sum_wait: 0,
            w_wait: 0,
            sum_run: 0,
            n_run: 0,
            w_run: 0,
            last_v: 0,
            delayed: Vec::new(),
            delayed_min: i64::MAX,
        }
    }
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
    /// Scratch list of the delayed tasks that leave at once, kept so that
    /// a wakeup or pick allocates nothing.
    leaving: Vec<TaskId>,
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
    /// Bytes of each task's entity.
    pub const BYTES_PER_TASK: usize = std::mem::size_of::<Entity>();

    /// Starts loading `t`'s entity and run queue `rq` into the cache.
    #[inline(always)]
    pub fn prefetch(&self, t: TaskId, rq: usize) {
        self.se.prefetch(t);
        if let Some(q) = self.rqs.get(rq) {
            sim::prefetch::lines(q);
        }
    }

    /// `slice`: the base slice (`sysctl_sched_base_slice` as scaled by the
    /// CPU count); `tick`: 1/HZ.
    /// `queues`: how many run queues (at least one).
    pub fn new(slice: Dur, tick: Dur, queues: usize) -> Eevdf {
        let slice = slice.0.clamp(1, i64::MAX as u64 / 4) as i64;
        Eevdf {
            slice,
            lag_limit: (2 * slice).max(tick.0.min(i64::MAX as u64 / 4) as i64),
            delay_dequeue: true,
            se: PerTask::default(),
            rqs: vec![Rq::default(); queues.max(1)],
            leaving: Vec::new(),
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

    /// The sum of `weight * vruntime` at `now` over queue `rq`'s runnable
    /// tasks (placed but not yet waiting or running ones are not counted),
    /// and their total weight.
    fn runnable_sum(&self, rq: usize, now: SimTime) -> (i128, i64) {
        let q = &self.rqs[rq];
        let sum = q.sum_wait
            + q.sum_run
            + i128::from(q.n_run) * i128::from(NICE_0_WEIGHT) * i128::from(now.0 as i64);
        (sum, q.w_wait + q.w_run)
    }

    /// The weight of `t`'s load, from its nice level (nice 0 unless set).
    /// Set it before `t` first wakes.
    pub fn set_weight(&mut self, t: TaskId, weight: u32) {
        self.se(t).weight = i64::from(weight.max(1));
    }

    /// `t`'s lag limit: `max(2 * slice, TICK_NSEC)` in its virtual time.
    fn lag_limit(&self, w: i64) -> i64 {
        scaled(self.lag_limit, w)
    }

    /// Queue `rq`'s `V` at `now`: the average `vruntime` of its runnable
    /// tasks and its delayed ones. A delayed task that `V` has reached
    /// leaves first, with no lag (DELAY_ZERO).
    fn avg_vruntime(&mut self, rq: usize, now: SimTime) -> i64 {
        loop {
            let (sum, n) = self.runnable_sum(rq, now);
            if n > 0 {
                self.rqs[rq].last_v = div_floor(sum, i128::from(n));
            }
            let v = self.rqs[rq].last_v;
            if !self.dequeue_eligible_delayed(rq, v) {
                return v;
            }
        }
    }

    /// Dequeues queue `rq`'s delayed tasks that are eligible at `V = v`,
    /// with their lag zeroed. Returns whether any left (`V` then moved).
    fn dequeue_eligible_delayed(&mut self, rq: usize, v: i64) -> bool {
        if self.rqs[rq].delayed_min > v {
            return false;
        }
        let mut eligible = std::mem::take(&mut self.leaving);
        eligible.clear();
        eligible.extend(
            (self.rqs[rq].delayed.iter())
                .copied()
                .filter(|&t| self.get(t).vruntime <= v),
        );
        for &t in &eligible {
            self.leave_delayed(t);
            self.se(t).vlag = 0;
        }
        let any = !eligible.is_empty();
        self.leaving = eligible;
        any
    }

    /// Delayed task `t` leaves its queue's sums and delayed list.
    fn leave_delayed(&mut self, t: TaskId) {
        let e = self.se(t);
        e.delayed = false;
        let (vr, rq, w) = (e.vruntime, e.rq as usize, e.weight);
        let q = &mut self.rqs[rq];
        q.sum_wait -= i128::from(w) * i128::from(vr);
        q.w_wait -= w;
        if let Some(i) = q.delayed.iter().position(|&d| d == t) {
            q.delayed.swap_remove(i);
        }
        let se = &self.se;
        self.rqs[rq].delayed_min = (self.rqs[rq].delayed.iter())
            .map(|&d| se.get(d).vruntime)
            .min()
            .unwrap_or(i64::MAX);
    }

    /// `t` becomes runnable at `now` on queue `rq` (`place_entity`). A
    /// task already runnable is left as it is.
    pub fn wake(&mut self, now: SimTime, t: TaskId, rq: usize) {
        let e = self.get(t);
        if e.state != State::Off {
            return;
        }
        if e.delayed {
            // Still queued where it blocked, unless V has reached it
            // since (then it left with no lag).
            let old_rq = e.rq as usize;
            let v_old = self.avg_vruntime(old_rq, now);
            let e = self.get(t);
            if e.delayed {
                self.leave_delayed(t);
                if old_rq == rq {
                    // requeue_delayed_entity: vruntime and deadline as
                    // they were.
                    self.se(t).state = State::Placed;
                    return;
                }
                // Woken onto another queue: it takes its lag along, its
                // deadline as far ahead of its vruntime as it was.
                let limit = self.lag_limit(e.weight);
                self.se(t).vlag = (v_old - e.vruntime).clamp(-limit, limit);
                self.place(now, t, rq, e.deadline - e.vruntime);
                return;
            }
        }
        let vslice = scaled(self.slice, e.weight);
        let vslice = if e.placed_before { vslice } else { vslice / 2 };
        self.place(now, t, rq, vslice);
    }

    /// Places `t` on queue `rq` at `vruntime = V - lag`, the lag scaled by
    /// `(W + w) / W` for `t`'s weight `w` and the weight `W` counted in `V`,
    /// with its deadline `vslice` ahead (`place_entity`).
    fn place(&mut self, now: SimTime, t: TaskId, rq: usize, vslice: i64) {
        let v = self.avg_vruntime(rq, now);
        let q = &self.rqs[rq];
        let load = q.w_wait + q.w_run;
        let e = self.se(t);
        e.rq = rq as u32;
        let mut lag = e.vlag;
        if load > 0 {
            // Truncated toward zero, as the kernel's div_s64.
            let scaled = i128::from(lag) * i128::from(load + e.weight);
            lag = match i64::try_from(scaled) {
                Ok(a) => a / load,
                _ => (scaled / i128::from(load)) as i64,
            };
        }
        e.vruntime = v - lag;
        e.deadline = e.vruntime + vslice;
        e.placed_before = true;
        e.state = State::Placed;
    }

    /// `t`, blocked, now stands for another task with no lag: it leaves
    /// its queue if it is delayed there.
    pub fn forget(&mut self, t: TaskId) {
        if self.get(t).state != State::Off {
            return;
        }
        if self.get(t).delayed {
            self.leave_delayed(t);
        }
        self.se(t).vlag = 0;
    }

    /// `t`'s lag on its queue at `now`, counting it in `V` whether or not
    /// it is (the kernel computes it before the dequeue), clamped.
    fn leaving_lag(&mut self, now: SimTime, t: TaskId) -> i64 {
        let e = self.get(t);
        let rq = e.rq as usize;
        let (mut sum, mut n) = self.runnable_sum(rq, now);
        if e.state != State::Waiting {
            sum += i128::from(e.weight) * i128::from(e.vruntime);
            n += e.weight;
        }
        let v = div_floor(sum, i128::from(n));
        let limit = self.lag_limit(e.weight);
        (v - e.vruntime).clamp(-limit, limit)
    }

    /// `t`, placed or waiting on another queue, moves to queue `rq` at
    /// `now`: it leaves with its lag and is placed again on `rq`, where it
    /// is placed (not waiting).
    fn migrate(&mut self, now: SimTime, t: TaskId, rq: usize) {
        let lag = self.leaving_lag(now, t);
        let e = self.get(t);
        if e.state == State::Waiting {
            let q = &mut self.rqs[e.rq as usize];
            q.sum_wait -= i128::from(e.weight) * i128::from(e.vruntime);
            q.w_wait -= e.weight;
        }
        let e = self.se(t);
        e.vlag = lag;
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
        let (vr, w) = (e.vruntime, e.weight);
        let q = &mut self.rqs[rq];
        q.sum_wait += i128::from(w) * i128::from(vr);
        q.w_wait += w;
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
        let (vr, started, w) = (e.vruntime, e.started, e.weight);
        let q = &mut self.rqs[rq];
        if was == State::Waiting {
            q.sum_wait -= i128::from(w) * i128::from(vr);
            q.w_wait -= w;
        }
        debug_assert!(matches!(was, State::Waiting | State::Placed), "{was:?}");
        q.sum_run +=
            i128::from(w) * i128::from(vr) - i128::from(NICE_0_WEIGHT) * i128::from(started);
        q.n_run += 1;
        q.w_run += w;
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
        let w = e.weight;
        let old = i128::from(w) * i128::from(e.vruntime)
            - i128::from(NICE_0_WEIGHT) * i128::from(e.started);
        e.vruntime += scaled(now.0 as i64 - e.started, w);
        if e.vruntime >= e.deadline {
            e.deadline = e.vruntime + scaled(slice, w);
        }
        e.state = State::Placed;
        let rq = e.rq as usize;
        let q = &mut self.rqs[rq];
        q.sum_run -= old;
        q.n_run -= 1;
        q.w_run -= w;
        if !runnable {
            // The lag against V with this task still counted, as the
            // kernel computes it before the dequeue.
            let lag = self.leaving_lag(now, t);
            let delay = lag < 0 && self.delay_dequeue;
            let e = self.se(t);
            e.vlag = lag;
            e.state = State::Off;
            if delay {
                // Not eligible: it stays queued (DELAY_DEQUEUE).
                e.delayed = true;
                let vr = e.vruntime;
                let q = &mut self.rqs[rq];
                q.sum_wait += i128::from(w) * i128::from(vr);
                q.w_wait += w;
                q.delayed.push(t);
                q.delayed_min = q.delayed_min.min(vr);
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

    /// `t`'s vruntime at `now` if it is running on queue `rq`
    /// (`update_curr`'s view of the current task).
    fn running_vruntime(&self, now: SimTime, t: TaskId, rq: usize) -> Option<i64> {
        let c = self.get(t);
        (c.state == State::Running && c.rq as usize == rq)
            .then(|| c.vruntime + scaled(now.0 as i64 - c.started, c.weight))
    }

    /// Whether `curr`, running on queue `rq`, is no longer eligible at
    /// `now` (its vruntime past `V`): then a wakeup whose task is the pick
    /// preempts it. An eligible one keeps its CPU while its request lasts
    /// (RUN_TO_PARITY; [`Self::request_used`] ends it).
    pub fn ineligible(&mut self, now: SimTime, curr: TaskId, rq: usize) -> bool {
        match self.running_vruntime(now, curr, rq) {
            Some(vr) => vr > self.avg_vruntime(rq, now),
            None => false,
        }
    }

    /// Whether `curr`, running on queue `rq`, has used up its request at
    /// `now`: its vruntime has reached its deadline. The kernel notices it
    /// at any `update_curr` on that queue, a wakeup's enqueue included,
    /// and `update_deadline` then asks for a reschedule (R124).
    pub fn request_used(&self, now: SimTime, curr: TaskId, rq: usize) -> bool {
        self.running_vruntime(now, curr, rq)
            .is_some_and(|vr| vr >= self.get(curr).deadline)
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
            State::Off if e.delayed => {
                // Its place in its queue: the stored lag is computed
                // (and clamped) only when it leaves.
                let v = self.avg_vruntime(e.rq as usize, now);
                match self.get(t).delayed {
                    true => v - e.vruntime,
                    false => 0,
                }
            }
            State::Off => e.vlag,
            State::Running => {
                self.avg_vruntime(e.rq as usize, now)
                    - (e.vruntime + scaled(now.0 as i64 - e.started, e.weight))
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
    fn picked(e: &mut Eevdf, now: SimTime, tasks: &[u32]) -> Option<u32> {
        let waiting = (tasks.iter().enumerate()).map(|(i, &t)| (TaskId(t), i as u64));
        e.pick(now, 0, waiting).map(|i| tasks[i])
    }

    fn a_hogs_then_blocks() -> Eevdf {
        a_hogs_then_blocks_in(Eevdf::new(Dur(3 * MS), Dur(4 * MS), 1))
    }

    fn a_hogs_then_blocks_in(mut e: Eevdf) -> Eevdf {
        e.wake(at(0), TaskId(0), 0);
        e.start(at(0), TaskId(0), 0);
        e.wake(at(0), TaskId(1), 0);
        e.wait(at(0), TaskId(1), 0);
        e.stop(at(3), TaskId(0), false);
        assert_eq!(e.lag(at(3), TaskId(0)), -(3 * MS as i64) / 2);
        e
    }

    #[test]
    fn nice_levels_take_the_kernels_load_weights() {
        assert_eq!(
            [-20, -1, 0, 1, 5, 19].map(nice_to_weight),
            [88761, 1277, 1024, 820, 335, 15]
        );
        assert_eq!((nice_to_weight(-40), nice_to_weight(40)), (88761, 15));
        // Virtual time: the same at nice 0, 1024/335 as fast at nice 5.
        assert_eq!(scaled(3_000_000, 1024), 3_000_000);
        assert_eq!(scaled(335, 335), 1024);
    }

    #[test]
    fn a_task_that_hogged_the_cpu_blocks_with_negative_lag_and_comes_back_behind() {
        let mut e = a_hogs_then_blocks();
        // B runs; a fresh task C (lag 0) wakes, then A, at once: V has
        // not moved, so A's lag is whole: placed at vruntime 2.25 ms (the
        // lag scaled by 3/2), it is 1.5 ms behind V once counted in it.
        e.start(at(3), TaskId(1), 0);
        e.wake(at(3), TaskId(2), 0);
        e.wait(at(3), TaskId(2), 0);
        e.wake(at(3), TaskId(0), 0);
        e.wait(at(3), TaskId(0), 0);
        assert_eq!(e.lag(at(3), TaskId(0)), -(3 * MS as i64) / 2);
        // At 4 ms B has run 1 ms of its first half slice and yields. V is
        // 1.08 ms: B and C are eligible with deadline 1.5 ms (B queued
        // first), A is not: B, C, then A.
        e.stop(at(4), TaskId(1), true);
        e.wait(at(4), TaskId(1), 0);
        assert_eq!(picked(&mut e, at(4), &[0, 1, 2]), Some(1));
        assert_eq!(picked(&mut e, at(4), &[0, 2]), Some(2));
    }

    #[test]
    fn a_negative_lag_decays_while_the_task_sleeps_as_v_moves_on() {
        // A blocked with lag -1.5 ms stays queued (DELAY_DEQUEUE), counted
        // in V: V = (B's 0 + A's 3 ms) / 2 = 1.5 ms. After B ran 0.5 ms,
        // V is 1.75 ms: woken then, A is requeued as it was (vruntime
        // 3 ms, deadline 6 ms), 1.25 ms behind V.
        let mut e = a_hogs_then_blocks();
        e.start(at(3), TaskId(1), 0);
        let half = SimTime(3 * MS + MS / 2);
        assert_eq!(e.lag(half, TaskId(0)), -(MS as i64) - (MS as i64) / 4);
        e.wake(half, TaskId(0), 0);
        e.wait(half, TaskId(0), 0);
        assert_eq!(e.lag(half, TaskId(0)), -(MS as i64) - (MS as i64) / 4);
        assert_eq!(e.deadline(TaskId(0)), 6 * MS as i64);
        // V reaches A's 3 ms when B has run 3 ms: A leaves the queue with
        // no lag (DELAY_ZERO). Woken at 10 ms it is placed at V (B's
        // 7 ms) with a full slice.
        let mut e = a_hogs_then_blocks();
        e.start(at(3), TaskId(1), 0);
        assert_eq!(e.lag(SimTime(6 * MS - 1), TaskId(0)), -1);
        assert_eq!(e.lag(at(6), TaskId(0)), 0);
        e.wake(at(10), TaskId(0), 0);
        e.wait(at(10), TaskId(0), 0);
        assert_eq!(e.lag(at(10), TaskId(0)), 0);
        assert_eq!(e.deadline(TaskId(0)), 10 * MS as i64);
    }

    #[test]
    fn without_delay_dequeue_a_negative_lag_is_kept_however_long_the_task_sleeps() {
        // As in the test above, A is woken after B ran 7 ms; in 6.6-6.11
        // A still has all of its -1.5 ms lag: placed at V + 1.5 ms x 2/1
        // (the lag scaled by (n + 1) / n with B alone runnable), and once
        // counted in V it is 1.5 ms behind it, ineligible, so B runs on.
        let mut e =
            a_hogs_then_blocks_in(Eevdf::new(Dur(3 * MS), Dur(4 * MS), 1).without_delay_dequeue());
        e.start(at(3), TaskId(1), 0);
        e.wake(at(10), TaskId(0), 0);
        e.wait(at(10), TaskId(0), 0);
        assert_eq!(e.lag(at(10), TaskId(0)), -(3 * MS as i64) / 2);
        // Its deadline is a full slice past its vruntime: 7 + 3 + 3 ms.
        assert_eq!(e.deadline(TaskId(0)), 13 * MS as i64);
        e.stop(at(10), TaskId(1), true);
        e.wait(at(10), TaskId(1), 0);
        assert_eq!(picked(&mut e, at(10), &[0, 1]), Some(1));
    }

    #[test]
    fn a_delayed_task_is_counted_in_v_and_requeued_as_it_was() {
        // Slice 1 ms, tick 1 ms: lags are clamped to 2 ms. A blocks on
        // queue 0 with lag -1.5 ms and stays queued; B waits at 0, so
        // V = 1.5 ms.
        let mut e = a_hogs_then_blocks_in(Eevdf::new(Dur(MS), Dur(MS), 2));
        // On queue 1, C waits while D runs 4 ms: C's lag is +2 ms. Idle
        // CPU 0 pulls C at 7 ms: placed with its lag scaled by 3/2 (A and
        // B counted), at -1.5 ms, V falls to 0.5 ms.
        e.wake(at(3), TaskId(3), 1);
        e.start(at(3), TaskId(3), 1);
        e.wake(at(3), TaskId(2), 1);
        e.wait(at(3), TaskId(2), 1);
        e.start(at(7), TaskId(2), 0);
        assert_eq!(e.lag(at(7), TaskId(2)), 2 * MS as i64);
        // A, still delayed, is 2.5 ms behind V. Woken on queue 0 it is
        // requeued where it is: vruntime and deadline (3 + 1 ms) as they
        // were, its lag past the 2 ms clamp, which applies to a lag that
        // is stored, not to a task that stays queued.
        assert_eq!(e.lag(at(7), TaskId(0)), -(5 * MS as i64) / 2);
        e.wake(at(7), TaskId(0), 0);
        e.wait(at(7), TaskId(0), 0);
        assert_eq!(e.lag(at(7), TaskId(0)), -(5 * MS as i64) / 2);
        assert_eq!(e.deadline(TaskId(0)), 4 * MS as i64);
    }

    #[test]
    fn a_forgotten_task_leaves_its_queue_and_comes_back_with_no_lag() {
        // A blocks delayed (lag -1.5 ms, V = 1.5 ms with B at 0). Forgotten
        // (a kworker that will stand for another CPU's), it leaves queue
        // 0, whose V is B's alone again, and is placed even on queue 1.
        let mut e = a_hogs_then_blocks_in(Eevdf::new(Dur(3 * MS), Dur(4 * MS), 2));
        e.forget(TaskId(0));
        assert_eq!(e.lag(at(3), TaskId(1)), 0);
        e.wake(at(3), TaskId(2), 1);
        e.wait(at(3), TaskId(2), 1);
        e.wake(at(3), TaskId(0), 1);
        e.wait(at(3), TaskId(0), 1);
        assert_eq!(e.lag(at(3), TaskId(0)), 0);
        assert_eq!(
            e.deadline(TaskId(0)),
            e.get(TaskId(0)).vruntime + 3 * MS as i64
        );
    }

    #[test]
    fn lag_is_clamped_to_two_slices_or_a_tick() {
        // 10 tasks wait on queue 0 while task 0 runs 100 ms, then blocks.
        let hog = |mut e: Eevdf| {
            e.wake(at(0), TaskId(0), 0);
            e.start(at(0), TaskId(0), 0);
            for t in (1..=10).map(TaskId) {
                e.wake(at(0), t, 0);
                e.wait(at(0), t, 0);
            }
            e.stop(at(100), TaskId(0), false);
            e
        };
        // 6.6: the lag it keeps is clamped to max(2 x 1 ms, 4 ms tick).
        let mut e = hog(Eevdf::new(Dur(MS), Dur(4 * MS), 2).without_delay_dequeue());
        assert_eq!(e.lag(at(100), TaskId(0)), -4 * MS as i64);
        // 6.12: it stays queued 90.9 ms behind V (100 ms / 11); woken
        // onto queue 1, where task 11 waits, it takes the clamped lag
        // along.
        let mut e = hog(Eevdf::new(Dur(MS), Dur(4 * MS), 2));
        let v = (100 * MS as i64) / 11;
        assert_eq!(e.lag(at(100), TaskId(0)), v - 100 * MS as i64);
        e.wake(at(100), TaskId(11), 1);
        e.wait(at(100), TaskId(11), 1);
        e.wake(at(100), TaskId(0), 1);
        e.wait(at(100), TaskId(0), 1);
        assert_eq!(e.lag(at(100), TaskId(0)), -4 * MS as i64);
    }

    #[test]
    fn an_ineligible_task_is_passed_over_despite_an_earlier_deadline() {
        let mut e = Eevdf::new(Dur(4 * MS), Dur(4 * MS), 1);
        // B has run before (no lag): its next placement gets a full slice.
        e.wake(at(0), TaskId(1), 0);
        e.start(at(0), TaskId(1), 0);
        e.stop(at(0), TaskId(1), false);
        // A, new, runs 1 ms: vruntime 1 ms, deadline 2 ms (half a slice).
        // B waits at vruntime 0 with deadline 4 ms.
        e.wake(at(0), TaskId(0), 0);
        e.start(at(0), TaskId(0), 0);
        e.wake(at(0), TaskId(1), 0);
        e.wait(at(0), TaskId(1), 0);
        e.stop(at(1), TaskId(0), true);
        e.wait(at(1), TaskId(0), 0);
        assert_eq!(
            (e.deadline(TaskId(0)), e.deadline(TaskId(1))),
            (2 * MS as i64, 4 * MS as i64)
        );
        // V = 0.5 ms: A is not eligible, B is.
        let c = [(TaskId(0), 0), (TaskId(1), 1)];
        assert_eq!(e.pick(at(1), 0, c.into_iter()), Some(1));
    }

    #[test]
    fn a_used_up_slice_moves_the_deadline() {
        let mut e = Eevdf::new(Dur(2 * MS), Dur(MS), 1);
        e.wake(at(0), TaskId(0), 0);
        assert_eq!(
            e.deadline(TaskId(0)),
            MS as i64,
            "first placement: half a slice"
        );
        e.start(at(0), TaskId(0), 0);
        e.stop(at(5), TaskId(0), true);
        assert_eq!(
            e.deadline(TaskId(0)),
            7 * MS as i64,
            "vruntime 5 ms + slice"
        );
    }

    #[test]
    fn a_task_that_moves_to_another_queue_takes_its_lag_along() {
        // On queue 0, A runs 3 ms while B waits: A's lag is -1.5 ms. On
        // queue 1, C waits at vruntime 0 while D runs from 0 to 10 ms.
        let mut e = Eevdf::new(Dur(3 * MS), Dur(4 * MS), 2);
        e.wake(at(0), TaskId(0), 0);
        e.start(at(0), TaskId(0), 0);
        e.wake(at(0), TaskId(1), 0);
        e.wait(at(0), TaskId(1), 0);
        e.wake(at(0), TaskId(3), 1);
        e.start(at(0), TaskId(3), 1);
        e.wake(at(0), TaskId(2), 1);
        e.wait(at(0), TaskId(2), 1);
        e.stop(at(3), TaskId(0), true);
        e.wait(at(3), TaskId(0), 0);
        assert_eq!(e.lag(at(3), TaskId(0)), -(3 * MS as i64) / 2);
        // At 10 ms A, pulled, starts on queue 1 (V 5 ms): placed at V less
        // its lag scaled by 3/2, it is 1.5 ms behind once counted.
        e.start(at(10), TaskId(0), 1);
        assert_eq!(e.lag(at(10), TaskId(0)), -(3 * MS as i64) / 2);
        // Queue 0 is B's alone again.
        assert_eq!(e.lag(at(10), TaskId(1)), 0);
    }
}
