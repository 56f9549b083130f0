//! CPUs and the run queue: a woken task still has to get a CPU.
//!
//! A pool of N identical CPUs and one FIFO run queue, or no limit at all
//! (`cpus = "unlimited"`), in which case every runnable task runs at once.
//! A task occupies a CPU from the moment it runs until it blocks, sleeps or
//! exits; `cpu D` steps keep it there for D. The pool only hands out CPUs
//! and keeps the queue; wake-to-run latency and preemption (which task
//! loses its CPU to a wakee) are decided by the world, which calls
//! [`CpuPool::requeue`] for a preempted task.
//!
//! A per-CPU kworker is bound to its CPU: it waits for that CPU only,
//! taking turns with the shared queue by the time each began to wait.
//!
//! With `wake_first`, the run queue has two parts: woken tasks wait ahead
//! of tasks that were preempted or used up their time slice. That is what
//! CFS's sleeper placement does to a task that slept: it is eligible at
//! once, before the CPU-bound tasks, whatever it ran before (EEVDF, below,
//! weighs that).
//!
//! With EEVDF order ([`CpuPool::set_eevdf`]), one run queue holds woken and
//! preempted tasks alike, and a freed CPU goes to the task EEVDF picks
//! among it and the CPU's bound kworkers ([`crate::sched::eevdf`]): by lag and
//! virtual deadline, not by arrival. CFS's order ([`CpuPool::set_cfs`],
//! [`crate::sched::cfs`]) works the same way, by virtual runtime. The world then
//! reports when tasks become runnable, start and stop running
//! ([`CpuPool::wake`], [`CpuPool::started`], [`CpuPool::stopped`]).
//!
//! RT tasks ([`CpuPool::set_rt`]) wait in a queue of their own, served
//! before every other, FIFO (SCHED_FIFO at one priority): the core
//! scheduler picks the RT class before the fair class. EEVDF and CFS
//! never see them.
//!
//! With per-CPU run queues ([`CpuPool::set_percpu`], `runqueue =
//! "percpu"`), each CPU has its own queue, as Linux's do, instead of one
//! that every CPU serves:
//! - a task that becomes runnable takes its previous CPU if that is idle,
//!   else the lowest idle one (select_idle_sibling), else it waits on its
//!   previous CPU (`prev_cpu`). With [`CpuPool::set_sis_util`] (the
//!   kernel's scheduler, R121) a wakeup by a task may start at the
//!   waker's CPU instead (wake_affine, R127; the task then waits there if
//!   nothing is idle), and the search looks at the previous CPU, the
//!   task's recently used CPU, then only at the next `nr_idle_scan` CPUs
//!   of the start's LLC,
//!   fewer the busier the LLC, none from 85.5%; a task left waiting while
//!   a CPU idles is pulled at that CPU's idle balance
//!   ([`CpuPool::idle_balance`]). A task placed for the first time goes to CPU k mod N,
//!   k counting first placements, as fork balancing spreads new tasks;
//! - a CPU that frees up runs the next task of its own queue; if it has
//!   none, it pulls the longest-waiting task of the CPU with the most
//!   waiting tasks (newidle balancing) and only then goes idle;
//! - a task that used up its slice (or was preempted) requeues on its CPU,
//!   unless that queue has at least two more waiting tasks than the
//!   shortest one: then it moves there (the periodic balancing that the
//!   scheduler tick triggers, done at the tick that ends the slice).
//!
//! So a woken task waits for its own CPU's current task to block or use up
//! its slice, not for the first of all CPUs to do so. In EEVDF order, each
//! CPU's queue has its own `V`, and a wakeup can cut that short: if the
//! task running there is no longer eligible and EEVDF would pick the woken
//! one (in CFS order: if it is more than the wakeup granularity ahead of
//! the woken one), the running task is asked to reschedule
//! ([`CpuPool::resched_set`]; the world acts on it at its next preemption
//! point).
//!
//! Free CPUs are handed out lowest id first, so runs are reproducible and
//! CPU ids mean the same thing in every variant.

use crate::ids::{CpuId, TaskId};
use crate::sched::cfs::Cfs;
use crate::sched::eevdf::Eevdf;
use crate::sched::fair::FairOrder;
use sim::{Dur, SimTime};
use std::collections::VecDeque;
use typed_index_collections::{ti_vec, TiVec};

/// A queue entry: the task, when it began to wait, and its enqueue number.
type Entry = (TaskId, SimTime, u64);

/// A task's home CPU before its first placement.
const NOT_PLACED: CpuId = CpuId(u32::MAX);

/// No task (an idle CPU in [`PerCpu::running`]).
const NO_TASK: TaskId = TaskId(u32::MAX);

/// Where `cpu` is in a mask of CPUs, a bit per CPU: its word, and its bit
/// in that word.
#[inline]
fn mask_bit(cpu: CpuId) -> (usize, u64) {
    (cpu.index() / 64, 1 << (cpu.0 % 64))
}

/// The CPUs whose bits are set in `mask`, lowest id first; a word with no
/// bit set costs one test.
fn cpus_in(mask: &[u64]) -> impl Iterator<Item = CpuId> + '_ {
    mask.iter().enumerate().flat_map(|(w, &word)| {
        std::iter::successors((word != 0).then_some(word), |&b| {
            let rest = b & (b - 1);
            (rest != 0).then_some(rest)
        })
        .map(move |b| CpuId(w as u32 * 64 + b.trailing_zeros()))
    })
}

/// Per-CPU run queues (see the module doc).
#[derive(Clone, Debug, Default)]
struct PerCpu {
    /// Each task's CPU: where it last ran or waits ([`NOT_PLACED`]: never
    /// placed).
    home: TiVec<TaskId, CpuId>,
    /// First placements so far (fork balancing: CPU k mod N).
    placed: u32,
    /// Per CPU: woken tasks (ahead, with `wake_first`) and the rest.
    woken: TiVec<CpuId, VecDeque<Entry>>,
    runq: TiVec<CpuId, VecDeque<Entry>>,
    /// Tasks in all of `woken` and `runq`.
    len: usize,
    /// Tasks an idle CPU pulled from another CPU's queue.
    pulls: u64,
    /// Tasks moved to a shorter queue at the end of a slice.
    moves: u64,
    /// Per CPU: the task running there ([`NO_TASK`]: none), and whether
    /// a wakeup asked it to reschedule (wakeup preemption).
    running: TiVec<CpuId, TaskId>,
    resched: TiVec<CpuId, bool>,
    wakeup_preemptions: u64,
}

impl PerCpu {
    fn waiting_on(&self, cpu: CpuId) -> usize {
        self.woken[cpu].len() + self.runq[cpu].len()
    }
}

/// SIS_UTIL (R121): how many CPUs of its LLC a wakeup's idle search
/// (`select_idle_cpu`) may look at, from the LLC's utilization. The
/// kernel recomputes it at each periodic load balance of the LLC domain
/// from the CPUs' PELT utilization (`update_idle_cpu_scan`); here each
/// LLC's busy share of CPU time since the last update is folded in at
/// the first wakeup of each tick, decayed with PELT's 32 ms half-life.
#[derive(Clone, Debug)]
struct SisUtil {
    /// Each LLC's CPUs, lowest id first (the order `for_each_cpu_wrap`
    /// scans), and each CPU's LLC and place in it.
    llc_cpus: Vec<Vec<CpuId>>,
    llc_of: TiVec<CpuId, (u32, u32)>,
    /// Each LLC's utilization (0..1) and scan depth (`nr_idle_scan`).
    util: Vec<f64>,
    nr_scan: Vec<u32>,
    tick: Dur,
    last: SimTime,
    /// Each LLC's busy CPUs now, and its busy CPU-time since the last
    /// sample, counted up to `upto`: the utilization is a time average.
    busy: Vec<u32>,
    busy_ns: Vec<u128>,
    upto: Vec<SimTime>,
    /// Idle balancing: when each idle CPU may next pull a waiting task,
    /// and each LLC's interval (its `balance_interval`).
    next_balance: TiVec<CpuId, SimTime>,
    interval: Vec<Dur>,
    /// Each task's `recent_used_cpu`: its previous CPU at its last
    /// wakeup, looked at after the previous CPU.
    recent: TiVec<TaskId, CpuId>,
    /// Each CPU's busy share (R127's `cpu_load`), a PELT average kept
    /// lazily: its value, the time of that value, and whether the CPU
    /// has been busy since.
    cpu_load: TiVec<CpuId, (f64, SimTime, bool)>,
    /// Each task's wakee flips and runnable share (R127).
    wakee: TiVec<TaskId, Wakee>,
}

/// What `select_task_rq_fair` keeps of a task for wake_affine (R127):
/// `record_wakee`'s flips, halved once a second, and the task's runnable
/// share (its `task_h_load`), a PELT average kept lazily.
#[derive(Clone, Copy, Debug)]
struct Wakee {
    flips: u32,
    last_wakee: TaskId,
    decay_at: SimTime,
    load: f64,
    load_at: SimTime,
    runnable: bool,
}

impl Default for Wakee {
    fn default() -> Self {
        Wakee {
            flips: 0,
            last_wakee: NO_TASK,
            decay_at: SimTime::ZERO,
            load: 0.0,
            load_at: SimTime::ZERO,
            runnable: false,
        }
    }
}

/// A PELT average `avg` at `at`, brought to `now`: it decays with the
/// 32 ms half-life and gains what `on` (busy, runnable) added meanwhile.
#[inline]
fn pelt_at(avg: f64, at: SimTime, now: SimTime, on: bool) -> f64 {
    let decay = (-(now.since(at).0 as f64) / PELT_HALF_LIFE_NS).exp2();
    avg * decay + if on { 1.0 - decay } else { 0.0 }
}

/// `record_wakee`'s decay period: the flips halve once a second (HZ
/// jiffies, kernel/sched/fair.c).
const WAKEE_DECAY: Dur = Dur(1_000_000_000);

/// PELT's half-life: a utilization's weight halves every 32 ms
/// (kernel/sched/pelt.c, `LOAD_AVG_PERIOD` 32 periods of 1024 us).
const PELT_HALF_LIFE_NS: f64 = 32.0 * 1_024_000.0;

/// The LLC domain's imbalance_pct (kernel/sched/topology.c `sd_init`,
/// 117 for a domain that shares the LLC): the scan stops at 100/117 = 85%
/// utilization.
const LLC_IMBALANCE_PCT: u64 = 117;

impl SisUtil {
    /// `nr_idle_scan` for an LLC of `llc_weight` CPUs at utilization
    /// `util`, in the kernel's integer arithmetic (fair.c
    /// `update_idle_cpu_scan`, SCHED_CAPACITY_SCALE 1024).
    fn nr_idle_scan(util: f64, llc_weight: u32) -> u32 {
        let x = (util.clamp(0.0, 1.0) * 1024.0) as u64; // sum_util / llc_weight
        let pct = LLC_IMBALANCE_PCT;
        let tmp = (x * x * pct * pct / (10_000 * 1024)).min(1024);
        ((1024 - tmp) * u64::from(llc_weight) / 1024) as u32
    }

    /// `cpu` became busy (or free) at `now`.
    fn note(&mut self, cpu: CpuId, now: SimTime, busy: bool) {
        let (avg, at, on) = self.cpu_load[cpu];
        self.cpu_load[cpu] = (pelt_at(avg, at, now, on), now, busy);
        let l = self.llc_of[cpu].0 as usize;
        self.busy_ns[l] += u128::from(self.busy[l]) * u128::from(now.since(self.upto[l]).0);
        self.upto[l] = now;
        if busy {
            self.busy[l] += 1;
        } else {
            self.busy[l] -= 1;
        }
    }

    /// Folds each LLC's busy share since the last update into its
    /// utilization at `now`, at most once a tick.
    fn sample(&mut self, now: SimTime) {
        if now < self.last + self.tick {
            return;
        }
        let span = now.since(self.last).0;
        let decay = 0.5f64.powf(span as f64 / PELT_HALF_LIFE_NS);
        self.last = now;
        for (l, cpus) in self.llc_cpus.iter().enumerate() {
            let ns =
                self.busy_ns[l] + u128::from(self.busy[l]) * u128::from(now.since(self.upto[l]).0);
            self.busy_ns[l] = 0;
            self.upto[l] = now;
            let share = ns as f64 / (cpus.len() as f64 * span as f64);
            self.util[l] = self.util[l] * decay + share * (1.0 - decay);
            self.nr_scan[l] = Self::nr_idle_scan(self.util[l], cpus.len() as u32);
        }
    }

    /// The free CPU `select_idle_sibling` finds for `task`, previously on
    /// `prev`, from `target` (`prev`, or its waker's CPU: R127), both
    /// busy: `prev` if idle and in `target`'s LLC, else its recently used
    /// CPU if idle and in that LLC, else the next `nr_idle_scan` CPUs of
    /// that LLC after `target`, wrapping.
    fn scan(&self, task: TaskId, prev: CpuId, target: CpuId, free: &[u64]) -> Option<CpuId> {
        let is_free = |c: CpuId| {
            let (w, bit) = mask_bit(c);
            free[w] & bit != 0
        };
        let llc = self.llc_of[target].0;
        if prev != target && self.llc_of[prev].0 == llc && is_free(prev) {
            return Some(prev);
        }
        if let Some(&r) = self.recent.get(task) {
            if r != NOT_PLACED && r != prev && r != target && self.llc_of[r].0 == llc && is_free(r)
            {
                return Some(r);
            }
        }
        let (l, pos) = self.llc_of[target];
        let cpus = &self.llc_cpus[l as usize];
        let n = cpus.len();
        let depth = (self.nr_scan[l as usize] as usize).min(n - 1);
        (1..=depth)
            .map(|k| cpus[(pos as usize + k) % n])
            .find(|&c| is_free(c))
    }

    /// Idle `cpu` balanced (or went idle, which balances first) at
    /// `now`: its next balance is an interval later.
    fn balanced(&mut self, cpu: CpuId, now: SimTime) {
        let (l, _) = self.llc_of[cpu];
        self.next_balance[cpu] = now + self.interval[l as usize];
    }

    /// `task`, previously on `prev`, was placed at a wakeup: `prev` is its
    /// recently used CPU from now.
    fn placed(&mut self, task: TaskId, prev: CpuId) {
        if task.index() >= self.recent.len() {
            self.recent.resize(task.index() + 1, NOT_PLACED);
        }
        self.recent[task] = prev;
    }

    fn wakee_mut(&mut self, task: TaskId) -> &mut Wakee {
        if task.index() >= self.wakee.len() {
            self.wakee.resize(task.index() + 1, Wakee::default());
        }
        &mut self.wakee[task]
    }

    /// `task` becomes runnable (or blocks) at `now`: its runnable share
    /// turns on (off).
    fn runnable(&mut self, task: TaskId, now: SimTime, on: bool) {
        let w = self.wakee_mut(task);
        if w.runnable != on {
            w.load = pelt_at(w.load, w.load_at, now, w.runnable);
            w.load_at = now;
            w.runnable = on;
        }
    }

    /// R127, `select_task_rq_fair` for `task` (previously on `prev`,
    /// idle if `prev_idle`) woken by `waker` running on `this`: where
    /// the idle search starts. The waker records the wakee
    /// (`record_wakee`); unless the pair flips among many partners
    /// (`wake_wide`), `wake_affine` picks `this` over a busy `prev` when
    /// `this` carries less load, with the wakee's own load counted on
    /// `this` and taken off `prev`, and `prev` favoured by half the
    /// domain's imbalance_pct (`wake_affine_weight`, WA_BIAS). The waker
    /// runs on `this`, so `wake_affine_idle` only keeps an idle `prev`;
    /// no wakeup here is a sync one. A CPU's load is its busy share plus
    /// a whole CPU for each task waiting on it (`waiting`).
    fn wake_target(
        &mut self,
        now: SimTime,
        task: TaskId,
        prev: CpuId,
        prev_idle: bool,
        (waker, this): (TaskId, CpuId),
        waiting: impl Fn(CpuId) -> usize,
    ) -> CpuId {
        let w = self.wakee_mut(waker);
        if now > w.decay_at + WAKEE_DECAY {
            w.flips >>= 1;
            w.decay_at = now;
        }
        if w.last_wakee != task {
            w.last_wakee = task;
            w.flips += 1;
        }
        let master = w.flips;
        let slave = self.wakee_mut(task).flips;
        let (master, slave) = (master.max(slave), master.min(slave));
        let factor = self.llc_cpus[self.llc_of[this].0 as usize].len() as u32;
        let wide = slave >= factor && master >= slave.saturating_mul(factor);
        if this == prev || wide || prev_idle {
            return prev;
        }
        let load = |s: &Self, c: CpuId| {
            let (avg, at, on) = s.cpu_load[c];
            pelt_at(avg, at, now, on) + waiting(c) as f64
        };
        let t = self.wakee_mut(task);
        let task_load = pelt_at(t.load, t.load_at, now, t.runnable);
        let this_eff = (load(self, this) + task_load) * 100.0;
        let bias = 100 + (LLC_IMBALANCE_PCT - 100) / 2;
        let prev_eff = (load(self, prev) - task_load) * bias as f64;
        if this_eff < prev_eff {
            this
        } else {
            prev
        }
    }
}

/// The next task for a CPU from a queue's woken and other tasks and the
/// CPU's bound ones: they take turns by the time they began to wait, woken
/// tasks first with `wake_first`. Says whether it came from `bound`.
fn take_turns(
    runq: &mut VecDeque<Entry>,
    woken: &mut VecDeque<Entry>,
    bound: &mut VecDeque<Entry>,
    wake_first: bool,
) -> (Option<Entry>, bool) {
    let shared_is_runq = woken.is_empty();
    let shared = if shared_is_runq { runq } else { woken };
    let take_bound = match (bound.front(), shared.front()) {
        (Some(b), Some(s)) => b.2 < s.2 || (wake_first && shared_is_runq),
        (Some(_), None) => true,
        _ => false,
    };
    if take_bound {
        (bound.pop_front(), true)
    } else {
        (shared.pop_front(), false)
    }
}

/// The fair order's pick (on queue `rq`) among `runq` and a CPU's `bound`
/// tasks, taken out of its queue. Says whether it came from `bound`.
fn pick_fair(
    e: &mut FairOrder,
    now: SimTime,
    rq: usize,
    runq: &mut VecDeque<Entry>,
    bound: &mut VecDeque<Entry>,
) -> (Option<Entry>, bool) {
    let candidates = runq.iter().chain(bound.iter());
    match e.pick(now, rq, candidates.map(|&(t, _, seq)| (t, seq))) {
        Some(i) if i < runq.len() => (runq.remove(i), false),
        Some(i) => (bound.remove(i - runq.len()), true),
        None => (None, false),
    }
}

#[derive(Clone, Debug)]
pub struct CpuPool {
    limit: Option<u32>,
    /// Free CPUs, a bit per CPU (lowest id first).
    free: Vec<u64>,
    /// Tasks bound to one CPU (per-CPU kworkers) waiting for it; served
    /// first when it frees up, as a per-CPU run queue would pick a
    /// freshly woken kworker.
    bound: TiVec<CpuId, VecDeque<Entry>>,
    bound_len: usize,
    /// Enqueues so far: the order in which waiting tasks began to wait.
    seq: u64,
    runq: VecDeque<Entry>,
    /// Woken tasks, served before `runq` (only with `wake_first`).
    woken: VecDeque<Entry>,
    wake_first: bool,
    /// EEVDF's or CFS's order instead of arrival order (see the module
    /// doc).
    fair: Option<FairOrder>,
    /// Which tasks are RT, and the RT tasks waiting for a CPU.
    rt: TiVec<TaskId, bool>,
    rt_q: VecDeque<Entry>,
    /// Per-CPU run queues instead of `runq` and `woken` (see the module doc).
    percpu: Option<PerCpu>,
    /// The kernel's limit on a wakeup's idle search (R121); `None`: every
    /// free CPU is found.
    sis: Option<Box<SisUtil>>,
    /// The last wakeup's idle search start when wake_affine moved it to
    /// the waker's CPU (R127): the task and that CPU, until the task is
    /// placed; and how many wakeups it moved.
    affine: Option<(TaskId, CpuId)>,
    affine_targets: u64,
    runq_waits: u64,
    runq_wait_ns: u128,
    runq_max: usize,
}

impl CpuPool {
    pub fn unlimited() -> Self {
        CpuPool {
            limit: None,
            free: Vec::new(),
            bound: TiVec::new(),
            bound_len: 0,
            seq: 0,
            runq: VecDeque::new(),
            woken: VecDeque::new(),
            wake_first: false,
            fair: None,
            rt: TiVec::new(),
            rt_q: VecDeque::new(),
            percpu: None,
            sis: None,
            affine: None,
            affine_targets: 0,
            runq_waits: 0,
            runq_wait_ns: 0,
            runq_max: 0,
        }
    }

    pub fn with_cpus(n: u32) -> Self {
        let mut p = Self::unlimited();
        let n = n.max(1);
        p.limit = Some(n);
        p.free = vec![0; n.div_ceil(64) as usize];
        for c in 0..n {
            p.free[(c / 64) as usize] |= 1 << (c % 64);
        }
        p.bound = ti_vec![VecDeque::new(); n as usize];
        p
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Woken tasks wait ahead of preempted ones (see the module doc).
    pub fn set_wake_first(&mut self, on: bool) {
        self.wake_first = on;
    }

    /// `t`, blocked, stands for another task from now on (a kworker that
    /// moved to another CPU's pool): its fair-order history is dropped.
    pub fn forget_fair(&mut self, t: TaskId) {
        if let Some(f) = self.fair.as_mut() {
            f.forget(t);
        }
    }

    /// Orders the run queue as EEVDF does, with base slice `slice` and a
    /// scheduler tick of `tick`; only with a limited number of CPUs.
    /// Without `delay_dequeue` (kernels 6.6 to 6.11) a blocked task keeps
    /// a negative lag however long it sleeps.
    pub fn set_eevdf(&mut self, slice: Dur, tick: Dur, delay_dequeue: bool) {
        self.set_fair(|queues| {
            let e = Eevdf::new(slice, tick, queues);
            FairOrder::Eevdf(if delay_dequeue {
                e
            } else {
                e.without_delay_dequeue()
            })
        });
    }

    /// Orders the run queue as CFS does (kernels before 6.6), with base
    /// slice `slice`; only with a limited number of CPUs.
    pub fn set_cfs(&mut self, slice: Dur) {
        self.set_fair(|queues| FairOrder::Cfs(Cfs::new(slice, queues)));
    }

    /// A fair order over the pool's run queues (one, or one per CPU).
    fn set_fair(&mut self, order: impl FnOnce(usize) -> FairOrder) {
        if let Some(n) = self.limit {
            self.wake_first = false;
            let queues = if self.percpu.is_some() { n as usize } else { 1 };
            self.fair = Some(order(queues));
        }
    }

    /// One run queue per CPU (see the module doc); only with a limited
    /// number of CPUs. Call it before [`Self::set_eevdf`] or
    /// [`Self::set_cfs`].
    pub fn set_percpu(&mut self) {
        if let Some(n) = self.limit {
            assert!(self.fair.is_none(), "set_percpu goes before the fair order");
            self.percpu = Some(PerCpu {
                woken: ti_vec![VecDeque::new(); n as usize],
                runq: ti_vec![VecDeque::new(); n as usize],
                running: ti_vec![NO_TASK; n as usize],
                resched: ti_vec![false; n as usize],
                ..PerCpu::default()
            });
        }
    }

    /// Limits a wakeup's idle search as SIS_UTIL does (R121): `llc_of`
    /// gives each CPU's LLC; the scan depth follows each LLC's
    /// utilization, sampled once a `tick`. Needs per-CPU queues.
    pub fn set_sis_util(&mut self, tick: Dur, llc_of: impl Fn(CpuId) -> u32) {
        let Some(n) = self.limit.filter(|_| self.percpu.is_some()) else {
            return;
        };
        let mut llc_cpus: Vec<Vec<CpuId>> = Vec::new();
        let mut place = ti_vec![(0, 0); n as usize];
        for c in (0..n).map(CpuId) {
            let l = llc_of(c) as usize;
            if llc_cpus.len() <= l {
                llc_cpus.resize(l + 1, Vec::new());
            }
            place[c] = (l as u32, llc_cpus[l].len() as u32);
            llc_cpus[l].push(c);
        }
        let sizes: Vec<u32> = llc_cpus.iter().map(|c| c.len() as u32).collect();
        // sd_init: an LLC domain balances every sd_weight ms at first
        // (`balance_interval` = `min_interval`), in whole jiffies
        // (msecs_to_jiffies rounds up), at least one.
        let interval = (sizes.iter())
            .map(|&w| {
                let ms = Dur(u64::from(w) * 1_000_000);
                Dur(ms.0.div_ceil(tick.0).max(1) * tick.0)
            })
            .collect();
        let llcs = llc_cpus.len();
        self.sis = Some(Box::new(SisUtil {
            busy: vec![0; llcs],
            busy_ns: vec![0; llcs],
            upto: vec![SimTime::ZERO; llcs],
            util: vec![0.0; llcs],
            nr_scan: sizes,
            llc_cpus,
            llc_of: place,
            tick,
            last: SimTime::ZERO,
            next_balance: ti_vec![SimTime::ZERO; n as usize],
            interval,
            recent: TiVec::new(),
            cpu_load: ti_vec![(0.0, SimTime::ZERO, false); n as usize],
            wakee: TiVec::new(),
        }));
    }

    /// `task`'s CPU in per-CPU mode, placing it (CPU k mod N) the first time.
    #[inline]
    fn home(&mut self, task: TaskId) -> CpuId {
        let p = self.percpu.as_mut().expect("per-CPU queues");
        match p.home.get(task) {
            Some(&h) if h != NOT_PLACED => h,
            _ => self.place_first(task),
        }
    }

    /// A task's first placement (fork balancing: CPU k mod N).
    #[cold]
    fn place_first(&mut self, task: TaskId) -> CpuId {
        let n = self.limit.expect("per-CPU queues need a CPU limit");
        let p = self.percpu.as_mut().expect("per-CPU queues");
        if task.index() >= p.home.len() {
            p.home.resize(task.index() + 1, NOT_PLACED);
        }
        let cpu = CpuId(p.placed % n);
        p.home[task] = cpu;
        p.placed += 1;
        cpu
    }

    /// The fair order's run queue of `cpu`: its own with per-CPU queues,
    /// else the one shared queue.
    #[inline]
    fn rq_of(&self, cpu: CpuId) -> usize {
        if self.percpu.is_some() && cpu != CpuId::ANY {
            cpu.index()
        } else {
            0
        }
    }

    /// With per-CPU queues, the CPU `task` goes to if it becomes runnable
    /// now: its own if free, else the lowest free one; `None` if all are
    /// busy (it then waits on its own).
    fn free_cpu_for(&mut self, task: TaskId) -> Option<CpuId> {
        let home = self.home(task);
        let target = self.wake_target_of(task).unwrap_or(home);
        let (w, bit) = mask_bit(target);
        if self.free[w] & bit != 0 {
            return Some(target);
        }
        if let Some(s) = self.sis.as_deref() {
            return s.scan(task, home, target, &self.free);
        }
        let (w, b) = self.free.iter().enumerate().find(|(_, b)| **b != 0)?;
        Some(CpuId(w as u32 * 64 + b.trailing_zeros()))
    }

    /// The waker's CPU where wake_affine starts `task`'s placement, if
    /// it did at this wakeup (R127).
    #[inline]
    fn wake_target_of(&self, task: TaskId) -> Option<CpuId> {
        self.affine.filter(|a| a.0 == task).map(|a| a.1)
    }

    /// The CPU whose queue `task` joins if it becomes runnable now: with
    /// per-CPU queues, as [`Self::try_take_for`] then
    /// [`Self::enqueue_woken`] would choose.
    fn target_rq(&mut self, task: TaskId) -> usize {
        if self.percpu.is_none() {
            return 0;
        }
        self.free_cpu_for(task)
            .unwrap_or_else(|| self.home(task))
            .index()
    }

    /// `task` runs on `cpu`: with per-CPU queues, it is its CPU from now
    /// (also when it got there by preempting another task).
    #[inline]
    pub fn set_home(&mut self, task: TaskId, cpu: CpuId) {
        if self.percpu.is_some() && cpu != CpuId::ANY {
            self.home(task);
            if let Some(h) = self.percpu.as_mut().and_then(|p| p.home.get_mut(task)) {
                *h = cpu;
            }
        }
    }

    /// `task`'s load weight in the fair order (nice 0: 1024), before it
    /// first wakes. Returns false if the pool's order has no weights (only
    /// EEVDF has).
    pub fn set_weight(&mut self, task: TaskId, weight: u32) -> bool {
        self.fair
            .as_mut()
            .is_some_and(|f| f.set_weight(task, weight))
    }

    /// `task` is an RT task: served before all others (see the module doc).
    pub fn set_rt(&mut self, task: TaskId) {
        if task.index() >= self.rt.len() {
            self.rt.resize(task.index() + 1, false);
        }
        self.rt[task] = true;
    }

    #[inline]
    fn is_rt(&self, task: TaskId) -> bool {
        self.rt.get(task).copied().unwrap_or(false)
    }

    /// RT tasks waiting for a CPU: a task of the fair class that runs has
    /// need_resched set.
    pub fn rt_waiting(&self) -> usize {
        self.rt_q.len()
    }

    /// The fair order's state, if the queue has one and `task` is of the
    /// fair class (EEVDF and CFS never see RT tasks).
    #[inline]
    fn fair(&mut self, task: TaskId) -> Option<&mut FairOrder> {
        if self.fair.is_none() || self.is_rt(task) {
            return None;
        }
        self.fair.as_mut()
    }

    /// `task` becomes runnable now (woken, or started): the fair order
    /// places it. A no-op without one.
    #[inline]
    pub fn wake(&mut self, now: SimTime, task: TaskId, waker: Option<(TaskId, CpuId)>) {
        self.affine = None;
        if let Some(s) = self.sis.as_deref_mut() {
            s.sample(now);
        }
        if self.fair(task).is_none() {
            return;
        }
        if let Some(s) = self.sis.as_deref_mut() {
            // R127's task load: runnable from now (`stopped` ends it).
            s.runnable(task, now, true);
            self.wake_affine(now, task, waker);
        }
        let rq = self.target_rq(task);
        if let Some(e) = self.fair.as_mut() {
            e.wake(now, task, rq);
        }
    }

    /// R127: `task` becomes runnable, woken by `waker` (the task and its
    /// CPU; `None` for a timer): wake_affine may start its placement at
    /// the waker's CPU instead of its previous one.
    fn wake_affine(&mut self, now: SimTime, task: TaskId, waker: Option<(TaskId, CpuId)>) {
        let prev = self.home(task);
        let s = self.sis.as_deref_mut().expect("checked");
        let Some(waker) = waker.filter(|w| w.0 != task && w.1 != CpuId::ANY) else {
            return;
        };
        let (w, bit) = mask_bit(prev);
        let prev_idle = self.free[w] & bit != 0;
        let p = self.percpu.as_ref().expect("SIS_UTIL needs per-CPU queues");
        let target = s.wake_target(now, task, prev, prev_idle, waker, |c| p.waiting_on(c));
        if target != prev {
            self.affine = Some((task, target));
            self.affine_targets += 1;
        }
    }

    /// `task`, bound to `cpu`, becomes runnable now: the fair order places
    /// it on that CPU's queue. A no-op without one.
    #[inline]
    pub fn wake_on(&mut self, now: SimTime, task: TaskId, cpu: CpuId) {
        let rq = self.rq_of(cpu);
        if let Some(e) = self.fair(task) {
            e.wake(now, task, rq);
        }
    }

    /// `task` starts running now on `cpu`.
    #[inline]
    pub fn started(&mut self, now: SimTime, task: TaskId, cpu: CpuId) {
        self.set_home(task, cpu);
        if let Some(p) = self.percpu.as_mut() {
            if cpu != CpuId::ANY {
                p.running[cpu] = task;
                p.resched[cpu] = false;
            }
        }
        let rq = self.rq_of(cpu);
        if let Some(e) = self.fair(task) {
            e.start(now, task, rq);
        }
    }

    /// `task` stops running now: still runnable (preempted, out of slice;
    /// it is requeued next) or not (it blocks, keeping its lag).
    #[inline]
    pub fn stopped(&mut self, now: SimTime, task: TaskId, runnable: bool) {
        if !runnable {
            if let Some(s) = self.sis.as_deref_mut() {
                s.runnable(task, now, false);
            }
        }
        if self.percpu.is_some() {
            let c = self.home(task);
            let p = self.percpu.as_mut().expect("per-CPU queues");
            if p.running[c] == task {
                p.running[c] = NO_TASK;
                p.resched[c] = false;
            }
        }
        if let Some(e) = self.fair(task) {
            e.stop(now, task, runnable);
        }
    }

    /// Starts loading what the pool keeps of `task` into the cache, at the
    /// start of its event (see [`sim::prefetch`]).
    #[inline(always)]
    pub fn prefetch(&self, task: TaskId) {
        // The task's CPU: its run queue is the one its event updates.
        let home = (self.percpu.as_ref())
            .and_then(|p| p.home.get(task))
            .filter(|&&h| h != NOT_PLACED);
        if let Some(f) = self.fair.as_ref() {
            f.prefetch(task, home.map_or(0, |h| h.index()));
        }
    }

    /// Bytes the pool keeps per task at most: its CPU with per-CPU
    /// queues, whether it is RT, and its entity in a fair order.
    pub const BYTES_PER_TASK: usize =
        std::mem::size_of::<CpuId>() + std::mem::size_of::<bool>() + FairOrder::BYTES_PER_TASK;

    pub fn is_unlimited(&self) -> bool {
        self.limit.is_none()
    }

    pub fn cpus(&self) -> Option<u32> {
        self.limit
    }

    /// `task` becomes runnable at `now`. Returns the CPU it runs on at once,
    /// or `None` if it waits in the run queue.
    #[inline]
    pub fn make_runnable(&mut self, now: SimTime, task: TaskId) -> Option<CpuId> {
        let cpu = self.try_take_for(now, task);
        if cpu.is_none() {
            self.enqueue_woken(now, task);
        }
        cpu
    }

    /// A free CPU (lowest id first), if any; unlimited pools always have one.
    #[inline]
    pub fn try_take(&mut self) -> Option<CpuId> {
        if self.limit.is_none() {
            return Some(CpuId::ANY);
        }
        let (w, bits) = self.free.iter_mut().enumerate().find(|(_, b)| **b != 0)?;
        let c = bits.trailing_zeros();
        *bits &= *bits - 1;
        Some(CpuId(w as u32 * 64 + c))
    }

    /// A free CPU for `task`: in per-CPU mode its own CPU if free, else the
    /// lowest free one; otherwise as [`Self::try_take`].
    #[inline]
    pub fn try_take_for(&mut self, now: SimTime, task: TaskId) -> Option<CpuId> {
        if self.percpu.is_none() {
            return self.try_take();
        }
        let found = self.free_cpu_for(task);
        if self.sis.is_some() {
            let prev = self.home(task);
            self.sis.as_deref_mut().expect("checked").placed(task, prev);
        }
        // With no free CPU the task waits on the search's start (R127).
        let target = self.wake_target_of(task);
        self.affine = None;
        if let (Some(target), None) = (target, found) {
            self.set_home(task, target);
        }
        let c = found?;
        self.take_free(now, c);
        self.set_home(task, c);
        Some(c)
    }

    fn set_free(&mut self, now: SimTime, cpu: CpuId) {
        let (w, bit) = mask_bit(cpu);
        self.free[w] |= bit;
        if let Some(s) = self.sis.as_deref_mut() {
            s.note(cpu, now, false);
        }
    }

    /// Free CPU `cpu` is taken at `now`.
    fn take_free(&mut self, now: SimTime, cpu: CpuId) {
        let (w, bit) = mask_bit(cpu);
        self.free[w] &= !bit;
        if let Some(s) = self.sis.as_deref_mut() {
            s.note(cpu, now, true);
        }
    }

    /// `task`, bound to `cpu`, becomes runnable: it takes `cpu` if it is
    /// free, else waits for it ahead of the shared queue.
    pub fn make_runnable_on(&mut self, now: SimTime, task: TaskId, cpu: CpuId) -> Option<CpuId> {
        if self.limit.is_none() {
            return Some(CpuId::ANY);
        }
        let (w, bit) = mask_bit(cpu);
        if self.free[w] & bit != 0 {
            self.take_free(now, cpu);
            return Some(cpu);
        }
        self.requeue_on(now, task, cpu);
        None
    }

    /// `task`, bound to `cpu`, waits for it (woken, or preempted on it).
    /// It is queued before the wakeup preemption check, which looks for it
    /// among the CPU's waiting tasks (`check_preempt_wakeup_fair` runs
    /// after `enqueue_task`).
    pub fn requeue_on(&mut self, now: SimTime, task: TaskId, cpu: CpuId) {
        let rq = self.rq_of(cpu);
        let seq = self.next_seq();
        self.bound[cpu].push_back((task, now, seq));
        self.bound_len += 1;
        if let Some(e) = self.fair(task) {
            e.wait(now, task, rq);
            if self.percpu.is_some() {
                self.check_wakeup_preempt(now, task, cpu);
            }
        }
        self.runq_max = self.runq_max.max(self.runnable_waiting());
    }

    /// The task on `cpu` stops running at `now`. Returns the task that runs
    /// on it next (FIFO) and how long that task waited, if any.
    #[inline]
    pub fn release(&mut self, now: SimTime, cpu: CpuId) -> Option<(TaskId, Dur)> {
        self.limit?;
        if let Some(next) = self.rt_q.pop_front() {
            return self.hand_over(now, cpu, Some(next));
        }
        if self.percpu.is_some() {
            return self.release_percpu(now, cpu);
        }
        let (next, from_bound) = match self.fair.as_mut() {
            Some(e) => pick_fair(e, now, 0, &mut self.runq, &mut self.bound[cpu]),
            None => take_turns(
                &mut self.runq,
                &mut self.woken,
                &mut self.bound[cpu],
                self.wake_first,
            ),
        };
        self.bound_len -= usize::from(from_bound);
        self.hand_over(now, cpu, next)
    }

    /// [`Self::release`] with per-CPU queues: `cpu`'s bound and own tasks
    /// (in the fair order, or by the time they began to wait, woken ones
    /// first with `wake_first`), else a task pulled from the CPU with the
    /// most waiting.
    fn release_percpu(&mut self, now: SimTime, cpu: CpuId) -> Option<(TaskId, Dur)> {
        let p = self.percpu.as_mut().expect("per-CPU queues");
        let (runq, woken, bound) = (&mut p.runq[cpu], &mut p.woken[cpu], &mut self.bound[cpu]);
        let (next, from_bound) = match self.fair.as_mut() {
            Some(e) => pick_fair(e, now, cpu.index(), runq, bound),
            None => take_turns(runq, woken, bound, self.wake_first),
        };
        if from_bound {
            self.bound_len -= 1;
        } else if next.is_some() {
            p.len -= 1;
        }
        let next = next.or_else(|| self.pull(cpu));
        self.hand_over(now, cpu, next)
    }

    /// Newidle balancing for idle CPU `c`: the longest waiter (woken ones
    /// first) of the CPU with the most waiting tasks (lowest id on a tie),
    /// if any. It runs on `c` from now (the caller hands it over; starting
    /// there moves its fair-order state).
    fn pull(&mut self, c: CpuId) -> Option<Entry> {
        let p = self.percpu.as_mut().expect("per-CPU queues");
        if p.len == 0 {
            return None;
        }
        let busiest = (p.runq.keys())
            .filter(|&j| j != c && p.waiting_on(j) > 0)
            .max_by_key(|&j| (p.waiting_on(j), std::cmp::Reverse(j)))?;
        let next = if p.woken[busiest].is_empty() {
            p.runq[busiest].pop_front()
        } else {
            p.woken[busiest].pop_front()
        };
        p.len -= 1;
        p.pulls += 1;
        next
    }

    /// `cpu` goes to `next`, the queue entry picked (counting its wait),
    /// or becomes free.
    fn hand_over(
        &mut self,
        now: SimTime,
        cpu: CpuId,
        next: Option<Entry>,
    ) -> Option<(TaskId, Dur)> {
        match next {
            Some((task, since, _)) => {
                let waited = now.since(since);
                self.runq_waits += 1;
                self.runq_wait_ns += u128::from(waited.0);
                Some((task, waited))
            }
            None => {
                self.set_free(now, cpu);
                if let Some(s) = self.sis.as_deref_mut() {
                    s.balanced(cpu, now);
                }
                None
            }
        }
    }

    /// When an idle CPU may next pull a waiting task (R121's idle
    /// balance), if a task waits in a CPU's queue while a CPU is idle:
    /// the earliest due of the idle CPUs. `None` without SIS_UTIL.
    pub fn idle_balance_due(&self) -> Option<SimTime> {
        let s = self.sis.as_deref()?;
        if self.percpu.as_ref()?.len == 0 {
            return None;
        }
        cpus_in(&self.free).map(|c| s.next_balance[c]).min()
    }

    /// Idle balance at `now`: each idle CPU (lowest id first) whose
    /// balance is due pulls the longest waiter of the CPU with the most
    /// waiting, as newidle balance does; one that finds none is due again
    /// an interval later. Returns the tasks pulled, their CPUs and how
    /// long they waited (the caller hands the CPUs over).
    pub fn idle_balance(&mut self, now: SimTime) -> Vec<(TaskId, CpuId, Dur)> {
        let mut out = Vec::new();
        let Some(s) = self.sis.as_deref() else {
            return out;
        };
        let due: Vec<CpuId> = cpus_in(&self.free)
            .filter(|&c| s.next_balance[c] <= now)
            .collect();
        for c in due {
            match self.pull(c) {
                Some(entry) => {
                    self.take_free(now, c);
                    if let Some((t, waited)) = self.hand_over(now, c, Some(entry)) {
                        out.push((t, c, waited));
                    }
                }
                None => self.sis.as_deref_mut().expect("checked").balanced(c, now),
            }
        }
        out
    }

    /// `task` waits at the tail of the run queue (no free CPU, or it was
    /// preempted and its CPU went to the preempting task).
    pub fn requeue(&mut self, now: SimTime, task: TaskId) {
        if self.is_rt(task) {
            let seq = self.next_seq();
            self.rt_q.push_back((task, now, seq));
            self.runq_max = self.runq_max.max(self.runnable_waiting());
            return;
        }
        let seq = self.next_seq();
        if self.percpu.is_some() {
            let mut c = self.home(task);
            let p = self.percpu.as_mut().expect("per-CPU queues");
            // Periodic balancing at the slice's last tick: to the shortest
            // queue (lowest id) if this one is longer by two or more.
            let shortest = (p.runq.keys())
                .min_by_key(|&j| (p.waiting_on(j), j))
                .expect("at least one CPU");
            if p.waiting_on(c) >= p.waiting_on(shortest) + 2 {
                c = shortest;
                p.home[task] = c;
                p.moves += 1;
            }
            p.runq[c].push_back((task, now, seq));
            p.len += 1;
            if let Some(e) = self.fair(task) {
                e.wait(now, task, c.index());
            }
        } else {
            if let Some(e) = self.fair(task) {
                e.wait(now, task, 0);
            }
            self.runq.push_back((task, now, seq));
        }
        self.runq_max = self.runq_max.max(self.runnable_waiting());
    }

    /// `task` was woken and finds no free CPU: the run queue's tail, or
    /// with `wake_first` the tail of the woken tasks.
    pub fn enqueue_woken(&mut self, now: SimTime, task: TaskId) {
        if self.percpu.is_some() && !self.is_rt(task) {
            let c = self.home(task);
            let seq = self.next_seq();
            let p = self.percpu.as_mut().expect("per-CPU queues");
            if self.wake_first {
                p.woken[c].push_back((task, now, seq));
            } else {
                p.runq[c].push_back((task, now, seq));
            }
            p.len += 1;
            if let Some(e) = self.fair(task) {
                e.wait(now, task, c.index());
                self.check_wakeup_preempt(now, task, c);
            }
            self.runq_max = self.runq_max.max(self.runnable_waiting());
        } else if self.wake_first && !self.is_rt(task) {
            let seq = self.next_seq();
            self.woken.push_back((task, now, seq));
            self.runq_max = self.runq_max.max(self.runnable_waiting());
        } else {
            self.requeue(now, task);
        }
    }

    /// Woken tasks waiting for a CPU (with `wake_first`; else 0): they
    /// have set need_resched on some CPU.
    pub fn woken_waiting(&self) -> usize {
        self.woken.len()
    }

    pub fn runnable_waiting(&self) -> usize {
        let local = self.percpu.as_ref().map_or(0, |p| p.len);
        self.runq.len() + self.woken.len() + self.bound_len + self.rt_q.len() + local
    }

    /// Wakeup preemption on CPU `c` (per-CPU queues): `task` has just been
    /// queued there. If the fair order says it preempts the fair task
    /// running there ([`FairOrder::wakeup_preempts`]: EEVDF's
    /// `check_preempt_wakeup_fair`, CFS's `check_preempt_wakeup`), that
    /// task reschedules at its next preemption point.
    fn check_wakeup_preempt(&mut self, now: SimTime, task: TaskId, c: CpuId) {
        let p = self.percpu.as_ref().expect("per-CPU queues");
        let curr = p.running[c];
        if curr == NO_TASK || p.resched[c] || self.is_rt(curr) {
            return;
        }
        let e = self.fair.as_mut().expect("a fair order");
        let (runq, bound) = (&p.runq[c], &self.bound[c]);
        let cands = runq.iter().chain(bound.iter()).map(|&(t, _, seq)| (t, seq));
        if e.wakeup_preempts(now, curr, task, c.index(), cands) {
            let p = self.percpu.as_mut().expect("per-CPU queues");
            p.resched[c] = true;
            p.wakeup_preemptions += 1;
        }
    }

    /// Wakeups so far that asked a CPU's running task to reschedule
    /// (per-CPU queues; else 0): the kernel's `resched_curr` on that CPU,
    /// an IPI when it is another CPU than the waker's (R122).
    #[inline]
    pub fn wakeup_preemptions(&self) -> u64 {
        self.percpu.as_ref().map_or(0, |p| p.wakeup_preemptions)
    }

    /// Whether a wakeup asked `cpu`'s task to reschedule (wakeup
    /// preemption with per-CPU queues).
    #[inline]
    pub fn resched_set(&self, cpu: CpuId) -> bool {
        match &self.percpu {
            Some(p) if cpu != CpuId::ANY => p.resched[cpu],
            _ => false,
        }
    }

    /// With per-CPU queues, the CPU whose queue the waiting fair task
    /// `task` is in (its home); `None` with one shared queue, or for an RT
    /// task (RT tasks wait for any CPU).
    pub fn queued_on(&self, task: TaskId) -> Option<CpuId> {
        if self.is_rt(task) {
            return None;
        }
        let h = *self.percpu.as_ref()?.home.get(task)?;
        (h != NOT_PLACED).then_some(h)
    }

    /// Tasks waiting that `cpu`'s scheduler would run next: with per-CPU
    /// queues its own, bound and RT ones; else every waiting task.
    #[inline]
    pub fn waiting_for(&self, cpu: CpuId) -> usize {
        match &self.percpu {
            Some(p) if cpu != CpuId::ANY => {
                p.waiting_on(cpu) + self.bound[cpu].len() + self.rt_q.len()
            }
            _ => self.runnable_waiting(),
        }
    }

    /// Counters, name and value, in a fixed order.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut c = vec![
            ("runqueue_waits", self.runq_waits),
            (
                "runqueue_wait_ns",
                self.runq_wait_ns.min(u128::from(u64::MAX)) as u64,
            ),
            ("runqueue_max_len", self.runq_max as u64),
        ];
        if let Some(p) = &self.percpu {
            c.push(("runqueue_pulls", p.pulls));
            c.push(("runqueue_balance_moves", p.moves));
            if self.fair.is_some() {
                c.push(("wakeup_preemptions", p.wakeup_preemptions));
            }
        }
        if self.sis.is_some() {
            c.push(("wake_affine_targets", self.affine_targets));
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_runs_everyone_at_once() {
        let mut p = CpuPool::unlimited();
        for t in (0..1000).map(TaskId) {
            assert_eq!(p.make_runnable(SimTime(0), t), Some(CpuId::ANY));
        }
        assert_eq!(p.release(SimTime(5), CpuId::ANY), None);
    }

    #[test]
    fn lowest_free_cpu_first_then_fifo_run_queue() {
        let mut p = CpuPool::with_cpus(2);
        assert_eq!(p.make_runnable(SimTime(0), TaskId(10)), Some(CpuId(0)));
        assert_eq!(p.make_runnable(SimTime(0), TaskId(11)), Some(CpuId(1)));
        assert_eq!(p.make_runnable(SimTime(1), TaskId(12)), None);
        assert_eq!(p.make_runnable(SimTime(2), TaskId(13)), None);
        assert_eq!(p.release(SimTime(10), CpuId(1)), Some((TaskId(12), Dur(9))));
        assert_eq!(p.release(SimTime(11), CpuId(0)), Some((TaskId(13), Dur(9))));
        assert_eq!(p.release(SimTime(12), CpuId(1)), None);
        assert_eq!(p.make_runnable(SimTime(13), TaskId(14)), Some(CpuId(1)));
        assert_eq!(p.release(SimTime(14), CpuId(0)), None);
        assert_eq!(p.make_runnable(SimTime(15), TaskId(15)), Some(CpuId(0)));
    }

    #[test]
    fn wake_first_serves_woken_tasks_before_preempted_ones() {
        let mut p = CpuPool::with_cpus(1);
        p.set_wake_first(true);
        assert_eq!(p.make_runnable(SimTime(0), TaskId(1)), Some(CpuId(0)));
        p.requeue(SimTime(1), TaskId(2)); // used up its slice
        assert_eq!(p.make_runnable(SimTime(2), TaskId(3)), None); // woken
        assert_eq!(p.make_runnable(SimTime(3), TaskId(4)), None); // woken
        assert_eq!(p.runnable_waiting(), 3);
        assert_eq!(p.release(SimTime(10), CpuId(0)), Some((TaskId(3), Dur(8))));
        assert_eq!(p.release(SimTime(11), CpuId(0)), Some((TaskId(4), Dur(8))));
        assert_eq!(p.release(SimTime(12), CpuId(0)), Some((TaskId(2), Dur(11))));
        assert_eq!(p.release(SimTime(13), CpuId(0)), None);
    }

    #[test]
    fn a_bound_task_waits_for_its_cpu_and_is_served_first() {
        let mut p = CpuPool::with_cpus(2);
        assert_eq!(p.make_runnable(SimTime(0), TaskId(1)), Some(CpuId(0)));
        assert_eq!(
            p.make_runnable_on(SimTime(0), TaskId(2), CpuId(1)),
            Some(CpuId(1))
        );
        assert_eq!(p.make_runnable(SimTime(1), TaskId(3)), None);
        assert_eq!(p.make_runnable_on(SimTime(2), TaskId(4), CpuId(1)), None);
        // CPU 0 frees up: the shared queue's task, not the bound one.
        assert_eq!(p.release(SimTime(5), CpuId(0)), Some((TaskId(3), Dur(4))));
        // CPU 1 frees up: its bound task, the only one left.
        assert_eq!(p.release(SimTime(6), CpuId(1)), Some((TaskId(4), Dur(4))));
        assert_eq!(p.runnable_waiting(), 0);
        assert_eq!(p.release(SimTime(7), CpuId(1)), None);
        assert_eq!(
            p.make_runnable_on(SimTime(8), TaskId(5), CpuId(1)),
            Some(CpuId(1))
        );
        assert_eq!(p.try_take(), None);
    }

    #[test]
    fn a_bound_task_and_the_shared_queue_take_turns_by_waiting_time() {
        let mut p = CpuPool::with_cpus(1);
        p.set_wake_first(true);
        assert_eq!(p.make_runnable(SimTime(0), TaskId(1)), Some(CpuId(0)));
        p.requeue(SimTime(1), TaskId(2)); // preempted
        assert_eq!(p.make_runnable(SimTime(2), TaskId(3)), None); // woken
        assert_eq!(p.make_runnable_on(SimTime(3), TaskId(4), CpuId(0)), None); // bound, woken later
        assert_eq!(p.make_runnable(SimTime(4), TaskId(5)), None); // woken after it
        assert_eq!(p.release(SimTime(10), CpuId(0)), Some((TaskId(3), Dur(8))));
        assert_eq!(p.release(SimTime(11), CpuId(0)), Some((TaskId(4), Dur(8))));
        assert_eq!(p.release(SimTime(12), CpuId(0)), Some((TaskId(5), Dur(8))));
        // The preempted task comes last.
        assert_eq!(p.release(SimTime(13), CpuId(0)), Some((TaskId(2), Dur(12))));
    }

    #[test]
    fn without_wake_first_woken_and_preempted_share_one_fifo() {
        let mut p = CpuPool::with_cpus(1);
        assert_eq!(p.make_runnable(SimTime(0), TaskId(1)), Some(CpuId(0)));
        p.requeue(SimTime(1), TaskId(2));
        assert_eq!(p.make_runnable(SimTime(2), TaskId(3)), None);
        assert_eq!(p.release(SimTime(10), CpuId(0)), Some((TaskId(2), Dur(9))));
        assert_eq!(p.release(SimTime(11), CpuId(0)), Some((TaskId(3), Dur(9))));
    }

    #[test]
    fn eevdf_a_fresh_bound_kworker_goes_before_hogs_whose_slices_are_spent() {
        const MS: u64 = 1_000_000;
        let at = |ms: u64| SimTime(ms * MS);
        let mut p = CpuPool::with_cpus(1);
        p.set_eevdf(Dur(3 * MS), Dur(MS), true);
        // Hogs 1 and 2 take turns of 3 ms.
        p.wake(at(0), TaskId(1), None);
        assert_eq!(p.try_take(), Some(CpuId(0)));
        p.started(at(0), TaskId(1), CpuId(0));
        p.wake(at(0), TaskId(2), None);
        p.enqueue_woken(at(0), TaskId(2));
        p.stopped(at(3), TaskId(1), true);
        p.requeue(at(3), TaskId(1));
        assert_eq!(p.release(at(3), CpuId(0)), Some((TaskId(2), Dur(3 * MS))));
        p.started(at(3), TaskId(2), CpuId(0));
        // At 6 ms, 2 yields and kworker 9, bound to CPU 0, wakes: placed
        // at V = 3 ms with a half slice, its deadline (4.5 ms) is before
        // the hogs' (6 ms), so it goes first though 1 has waited longer.
        p.stopped(at(6), TaskId(2), true);
        p.requeue(at(6), TaskId(2));
        p.wake_on(at(6), TaskId(9), CpuId(0));
        assert_eq!(p.make_runnable_on(at(6), TaskId(9), CpuId(0)), None);
        assert_eq!(p.release(at(6), CpuId(0)), Some((TaskId(9), Dur(0))));
        p.started(at(6), TaskId(9), CpuId(0));
        p.stopped(SimTime(6 * MS + 100_000), TaskId(9), false);
        // Then the hogs in the order their deadlines tie: 1 queued first.
        assert_eq!(
            p.release(SimTime(6 * MS + 100_000), CpuId(0)).map(|x| x.0),
            Some(TaskId(1))
        );
        // In arrival order the hog that has waited longest (here 2, since
        // 3 ms) runs before the kworker.
        let mut fifo = CpuPool::with_cpus(1);
        assert_eq!(fifo.make_runnable(at(0), TaskId(1)), Some(CpuId(0)));
        fifo.requeue(at(3), TaskId(2));
        fifo.requeue(at(6), TaskId(1));
        assert_eq!(fifo.make_runnable_on(at(6), TaskId(9), CpuId(0)), None);
        assert_eq!(fifo.release(at(6), CpuId(0)).map(|x| x.0), Some(TaskId(2)));
    }

    #[test]
    fn cpus_in_lists_the_set_bits_lowest_first() {
        let got: Vec<u32> = cpus_in(&[0b1010, 0, 1 << 63]).map(|c| c.0).collect();
        assert_eq!(got, vec![1, 3, 191]);
        assert_eq!(cpus_in(&[0, 0]).count(), 0);
    }

    /// R121: `update_idle_cpu_scan`'s integer arithmetic: the whole LLC
    /// at no load, 42 of 64 CPUs at half load, none from 100/117 = 85.5%.
    #[test]
    fn r121_sis_util_scan_depth_falls_with_the_llcs_utilization() {
        assert_eq!(SisUtil::nr_idle_scan(0.0, 64), 64);
        assert_eq!(SisUtil::nr_idle_scan(0.5, 64), 42);
        assert_eq!(SisUtil::nr_idle_scan(0.8, 64), 8);
        assert_eq!(SisUtil::nr_idle_scan(0.85, 64), 0);
        assert_eq!(SisUtil::nr_idle_scan(1.0, 64), 0);
        assert_eq!(SisUtil::nr_idle_scan(0.5, 8), 5);
    }

    /// R121: a woken task whose previous CPU is busy looks at the next
    /// `nr_idle_scan` CPUs of its LLC after it, wrapping, and waits on its
    /// previous CPU if none of those is idle, though another CPU is. The
    /// utilization is the busy share, sampled at the first wakeup of a
    /// tick and decayed with PELT's 32 ms half-life.
    #[test]
    fn r121_a_woken_task_finds_an_idle_cpu_only_within_the_scan_depth() {
        const MS: u64 = 1_000_000;
        let mut p = CpuPool::with_cpus(4);
        p.set_percpu();
        p.set_sis_util(Dur(4 * MS), |_| 0);
        // Tasks 0..3 are first placed on CPUs 0..3; 0, 1 and 2 keep
        // theirs, 3 leaves CPU 3 idle.
        for t in 0..4 {
            assert_eq!(p.make_runnable(SimTime(0), TaskId(t)), Some(CpuId(t)));
        }
        p.set_free(SimTime(0), CpuId(3));
        // At no load so far (utilization 0: scan all 4), task 1 is woken
        // while CPU 1 is busy: the search finds CPU 3 two CPUs on.
        p.wake(SimTime(0), TaskId(1), None);
        assert_eq!(p.free_cpu_for(TaskId(1)), Some(CpuId(3)));
        // 3 of 4 CPUs busy for 200 ms: utilization 0.75 x (1 - 2^-6.1),
        // 0.739, and a depth of floor(4 x (1 - 0.739^2 x 1.3689)) = 1.
        p.wake(SimTime(200 * MS), TaskId(1), None);
        let s = p.sis.as_deref().expect("SIS_UTIL set");
        assert!((s.util[0] - 0.739).abs() < 0.001, "{}", s.util[0]);
        assert_eq!(s.nr_scan[0], 1);
        // Task 1 (previous CPU 1) looks at CPU 2 only: it waits for CPU 1
        // though CPU 3 is idle; task 2 (CPU 2) looks at CPU 3 and takes it.
        assert_eq!(p.free_cpu_for(TaskId(1)), None);
        assert_eq!(p.try_take_for(SimTime(200 * MS), TaskId(2)), Some(CpuId(3)));
        // Within the same tick the depth is not sampled again.
        p.wake(SimTime(203 * MS), TaskId(1), None);
        assert_eq!(p.sis.as_deref().unwrap().last, SimTime(200 * MS));
    }

    /// A pool of `n` CPUs in one LLC with the kernel's scheduler (per-CPU
    /// queues, EEVDF, SIS_UTIL), tasks 0..n running on CPUs 0..n since 0,
    /// and the idle search cut to nothing (the LLC at 100%), as of `now`.
    fn busy_kernel_pool(n: u32, now: SimTime) -> CpuPool {
        let tick = Dur(4_000_000);
        let mut p = CpuPool::with_cpus(n);
        p.set_percpu();
        p.set_sis_util(tick, |_| 0);
        p.set_eevdf(Dur(3_000_000), tick, true);
        for t in 0..n {
            p.wake(SimTime(0), TaskId(t), None);
            assert_eq!(p.make_runnable(SimTime(0), TaskId(t)), Some(CpuId(t)));
            p.started(SimTime(0), TaskId(t), CpuId(t));
        }
        let s = p.sis.as_deref_mut().unwrap();
        s.util[0] = 1.0;
        s.nr_scan[0] = 0;
        s.last = now;
        p
    }

    /// `task`, last on `cpu`, wakes at `now` (woken by `waker`) and finds
    /// no free CPU: the CPU it waits on.
    fn woken_waits_on(
        p: &mut CpuPool,
        now: SimTime,
        task: TaskId,
        cpu: CpuId,
        waker: Option<(TaskId, CpuId)>,
    ) -> Option<CpuId> {
        p.set_home(task, cpu);
        p.wake(now, task, waker);
        assert_eq!(p.make_runnable(now, task), None);
        p.queued_on(task)
    }

    /// R127: with every CPU busy and no idle CPU in reach, a woken task
    /// waits on its waker's CPU when that carries less load than its own
    /// previous CPU (wake_affine_weight: the waker's CPU with the wakee's
    /// load added, against the previous one with it taken off and a bias
    /// of 108/100), and on its previous CPU otherwise; a timer's wakeup
    /// (no waker) leaves it on its previous CPU.
    #[test]
    fn r127_a_woken_task_waits_on_its_wakers_cpu_when_that_is_less_loaded() {
        let now = SimTime(100_000_000);
        let mut p = busy_kernel_pool(4, now);
        // Two tasks wait on CPU 2.
        for t in [10, 11] {
            assert_eq!(
                woken_waits_on(&mut p, now, TaskId(t), CpuId(2), None),
                Some(CpuId(2))
            );
        }
        // Task 20 last ran on CPU 2 (1 + 2 waiting); task 1 on CPU 1
        // (1, nobody waiting) wakes it: it waits on CPU 1.
        let on = woken_waits_on(
            &mut p,
            now,
            TaskId(20),
            CpuId(2),
            Some((TaskId(1), CpuId(1))),
        );
        assert_eq!(on, Some(CpuId(1)));
        assert!(p.counters().contains(&("wake_affine_targets", 1)));
        // Task 21 last ran on CPU 1 (now one waiting there) and is woken
        // from CPU 2 (two waiting): it stays with CPU 1.
        let on = woken_waits_on(
            &mut p,
            now,
            TaskId(21),
            CpuId(1),
            Some((TaskId(2), CpuId(2))),
        );
        assert_eq!(on, Some(CpuId(1)));
        // Task 22, last on CPU 2, woken by a timer: CPU 2.
        assert_eq!(
            woken_waits_on(&mut p, now, TaskId(22), CpuId(2), None),
            Some(CpuId(2))
        );
        assert!(p.counters().contains(&("wake_affine_targets", 1)));
    }

    /// R127: an idle previous CPU keeps the wakee (wake_affine_idle), and
    /// from the waker's CPU the idle search also looks at the previous
    /// CPU when it shares the waker's LLC (select_idle_sibling).
    #[test]
    fn r127_an_idle_previous_cpu_keeps_the_wakee() {
        let now = SimTime(100_000_000);
        let mut p = busy_kernel_pool(4, now);
        p.stopped(now, TaskId(3), false);
        assert_eq!(p.release(now, CpuId(3)), None);
        p.set_home(TaskId(20), CpuId(3));
        p.wake(now, TaskId(20), Some((TaskId(1), CpuId(1))));
        assert_eq!(p.try_take_for(now, TaskId(20)), Some(CpuId(3)));
        assert!(p.counters().contains(&("wake_affine_targets", 0)));
    }

    /// R127 (`wake_wide`): a waker that flips among at least
    /// `factor` (the LLC's size) times as many wakees as a wakee that
    /// flips among at least `factor` itself wakes it where it was; each
    /// wakeup of another wakee than the last adds a flip, and the
    /// waker's flips halve once a second, at its next wakeup.
    #[test]
    fn r127_a_waker_that_flips_among_many_wakees_wakes_wide() {
        let now = SimTime(100_000_000);
        let p = busy_kernel_pool(4, now);
        let mut s = p.sis.clone().unwrap();
        let (prev, this) = (CpuId(2), CpuId(1));
        // CPU 2 carries two waiting tasks more than CPU 1: affine.
        let waiting = |c: CpuId| if c == prev { 2 } else { 0 };
        s.wakee_mut(TaskId(7)).flips = 3;
        s.wakee_mut(TaskId(0)).flips = 19;
        // The waker's flips become 20, the wakee's 3 < 4: not wide.
        let t = s.wake_target(now, TaskId(7), prev, false, (TaskId(0), this), waiting);
        assert_eq!((t, s.wakee[TaskId(0)].flips), (this, 20));
        // The same wakee again adds no flip; with the wakee at 5 flips,
        // 20 >= 4 x 5: wide, the previous CPU.
        s.wakee_mut(TaskId(7)).flips = 5;
        let t = s.wake_target(now, TaskId(7), prev, false, (TaskId(0), this), waiting);
        assert_eq!((t, s.wakee[TaskId(0)].flips), (prev, 20));
        // More than a second after its last decay (at 0), the waker's
        // flips halve: 10 < 4 x 5, not wide.
        let later = SimTime(1_200_000_000);
        let t = s.wake_target(later, TaskId(7), prev, false, (TaskId(0), this), waiting);
        assert_eq!((t, s.wakee[TaskId(0)].flips), (this, 10));
        assert_eq!(s.wakee[TaskId(0)].decay_at, later);
    }

    /// R121: a task left waiting on a busy CPU while another idles is
    /// pulled by the idle one once that CPU's balance is due: an LLC's
    /// weight in ms after it went idle (2 CPUs: 2 ms, one 4 ms jiffy at
    /// HZ 250), and again an interval later if it found nothing.
    #[test]
    fn r121_an_idle_cpu_pulls_a_waiting_task_when_its_balance_is_due() {
        const MS: u64 = 1_000_000;
        let tick = Dur(4 * MS);
        let mut p = CpuPool::with_cpus(2);
        p.set_percpu();
        p.set_sis_util(tick, |_| 0);
        assert_eq!(p.make_runnable(SimTime(0), TaskId(0)), Some(CpuId(0)));
        assert_eq!(p.make_runnable(SimTime(0), TaskId(1)), Some(CpuId(1)));
        // Nothing waits: no balance is due.
        assert_eq!(p.idle_balance_due(), None);
        // CPU 1 goes idle at 10 ms: due at 14 ms.
        assert_eq!(p.release(SimTime(10 * MS), CpuId(1)), None);
        // Both CPUs busy for the utilization's sake (a whole LLC at 100%
        // for 300 ms: no scan).
        {
            let s = p.sis.as_deref_mut().unwrap();
            s.util[0] = 1.0;
            s.nr_scan[0] = 0;
            s.last = SimTime(10 * MS);
        }
        // Task 2, whose CPU is 0 (placed k mod 2 = 0), wakes at 11 ms:
        // CPU 0 is busy and the search looks at no other CPU, so it waits
        // on CPU 0 though CPU 1 idles.
        p.wake(SimTime(11 * MS), TaskId(2), None);
        assert_eq!(p.make_runnable(SimTime(11 * MS), TaskId(2)), None);
        assert_eq!(p.waiting_for(CpuId(0)), 1);
        assert_eq!(p.idle_balance_due(), Some(SimTime(14 * MS)));
        // Not before it is due.
        assert!(p.idle_balance(SimTime(13 * MS)).is_empty());
        // At 14 ms CPU 1 pulls it, after 3 ms of waiting.
        assert_eq!(
            p.idle_balance(SimTime(14 * MS)),
            vec![(TaskId(2), CpuId(1), Dur(3 * MS))]
        );
        assert_eq!(p.idle_balance_due(), None);
        // CPU 1 idles again at 20 ms: due at 24 ms; a balance then that
        // finds nothing to pull makes it due an interval later, 28 ms.
        p.started(SimTime(14 * MS), TaskId(2), CpuId(1));
        assert_eq!(p.release(SimTime(20 * MS), CpuId(1)), None);
        assert_eq!(
            p.sis.as_deref().unwrap().next_balance[CpuId(1)],
            SimTime(24 * MS)
        );
        assert!(p.idle_balance(SimTime(24 * MS)).is_empty());
        assert_eq!(
            p.sis.as_deref().unwrap().next_balance[CpuId(1)],
            SimTime(28 * MS)
        );
    }

    #[test]
    fn percpu_a_cpu_runs_its_own_queue_first_then_pulls_from_the_busiest() {
        let mut p = CpuPool::with_cpus(2);
        p.set_percpu();
        p.set_wake_first(true);
        // First placements go to CPU k mod 2: 10 and 11 run, 12 waits
        // for CPU 0, 13 for CPU 1.
        assert_eq!(p.make_runnable(SimTime(0), TaskId(10)), Some(CpuId(0)));
        assert_eq!(p.make_runnable(SimTime(0), TaskId(11)), Some(CpuId(1)));
        assert_eq!(p.make_runnable(SimTime(1), TaskId(12)), None);
        assert_eq!(p.make_runnable(SimTime(2), TaskId(13)), None);
        assert_eq!(p.waiting_for(CpuId(0)), 1);
        assert_eq!(p.waiting_for(CpuId(1)), 1);
        // CPU 1 frees: its own task, though 12 has waited longer.
        assert_eq!(p.release(SimTime(5), CpuId(1)), Some((TaskId(13), Dur(3))));
        // Again: nothing of its own, so it pulls 12 from CPU 0.
        assert_eq!(p.release(SimTime(6), CpuId(1)), Some((TaskId(12), Dur(5))));
        assert_eq!(p.release(SimTime(7), CpuId(0)), None);
        // 13 last ran on CPU 1, which 12 holds: the idle CPU 0 it is.
        assert_eq!(p.make_runnable(SimTime(8), TaskId(13)), Some(CpuId(0)));
        let c: Vec<_> = p
            .counters()
            .into_iter()
            .filter(|c| c.0 == "runqueue_pulls")
            .collect();
        assert_eq!(c, vec![("runqueue_pulls", 1)]);
    }

    #[test]
    fn percpu_a_task_at_the_end_of_its_slice_moves_to_a_queue_two_shorter() {
        let mut p = CpuPool::with_cpus(2);
        p.set_percpu();
        assert_eq!(p.make_runnable(SimTime(0), TaskId(1)), Some(CpuId(0)));
        assert_eq!(p.make_runnable(SimTime(0), TaskId(2)), Some(CpuId(1)));
        // First placements alternate: 3 and 5 wait for CPU 0, 4 for CPU 1.
        for t in [3, 4, 5].map(TaskId) {
            assert_eq!(p.make_runnable(SimTime(0), t), None);
        }
        // One shorter: 1 stays on CPU 0, behind 3 and 5.
        p.requeue(SimTime(1), TaskId(1));
        assert_eq!(p.waiting_for(CpuId(0)), 3);
        assert_eq!(p.release(SimTime(2), CpuId(1)), Some((TaskId(4), Dur(2))));
        // 3 runs on CPU 0; its slice ends with 5 and 1 waiting there and
        // none on CPU 1: it moves to CPU 1.
        assert_eq!(p.release(SimTime(3), CpuId(0)), Some((TaskId(3), Dur(3))));
        p.requeue(SimTime(4), TaskId(3));
        assert_eq!((p.waiting_for(CpuId(0)), p.waiting_for(CpuId(1))), (2, 1));
        assert_eq!(p.release(SimTime(5), CpuId(1)), Some((TaskId(3), Dur(1))));
    }

    #[test]
    fn percpu_eevdf_orders_each_cpu_by_its_own_v() {
        const MS: u64 = 1_000_000;
        let at = |ms: u64| SimTime(ms * MS);
        let mut p = CpuPool::with_cpus(2);
        p.set_percpu();
        p.set_eevdf(Dur(3 * MS), Dur(MS), true);
        // Hogs 1 (CPU 0) and 2 (CPU 1) run; 3 and 4 first placed on CPU 0
        // and CPU 1.
        for (t, cpu) in [
            (1, Some(CpuId(0))),
            (2, Some(CpuId(1))),
            (3, None),
            (4, None),
        ] {
            let t = TaskId(t);
            p.wake(at(0), t, None);
            let got = p.make_runnable(at(0), t);
            assert_eq!(got, cpu);
            if let Some(c) = got {
                p.started(at(0), t, c);
            }
        }
        // Hog 1 uses up its slice on CPU 0 and requeues there: 3 runs.
        p.stopped(at(3), TaskId(1), true);
        p.requeue(at(3), TaskId(1));
        assert_eq!(p.release(at(3), CpuId(0)).map(|x| x.0), Some(TaskId(3)));
        p.started(at(3), TaskId(3), CpuId(0));
        // Kworker 9, bound to CPU 1, wakes at 3 ms: it is placed at CPU
        // 1's V, the mean of hog 2 (3 ms) and 4 (0): 1.5 ms, deadline 3
        // ms. (CPU 0's V is 2.25 ms.) Hog 2 blocks; V = 0.75 ms: 4, placed
        // at 0 with deadline 1.5 ms, is eligible and 9 is not.
        p.wake_on(at(3), TaskId(9), CpuId(1));
        assert_eq!(p.make_runnable_on(at(3), TaskId(9), CpuId(1)), None);
        p.stopped(at(3), TaskId(2), false);
        assert_eq!(p.release(at(3), CpuId(1)).map(|x| x.0), Some(TaskId(4)));
    }

    #[test]
    fn percpu_eevdf_a_wakee_preempts_only_a_task_that_is_no_longer_eligible() {
        const MS: u64 = 1_000_000;
        let at = |us: u64| SimTime(us * 1000);
        // B runs 3 ms while A waits; then A runs (B requeued: vruntime 3,
        // deadline 6 ms). C, new, wakes at `wake_us`.
        let run = |wake_us: u64| {
            let mut p = CpuPool::with_cpus(1);
            p.set_percpu();
            p.set_eevdf(Dur(3 * MS), Dur(MS), true);
            p.wake(at(0), TaskId(2), None);
            assert_eq!(p.make_runnable(at(0), TaskId(2)), Some(CpuId(0)));
            p.started(at(0), TaskId(2), CpuId(0));
            p.wake(at(0), TaskId(1), None);
            assert_eq!(p.make_runnable(at(0), TaskId(1)), None);
            assert!(!p.resched_set(CpuId(0)), "B is eligible at 0");
            p.stopped(at(3000), TaskId(2), true);
            p.requeue(at(3000), TaskId(2));
            assert_eq!(p.release(at(3000), CpuId(0)).map(|x| x.0), Some(TaskId(1)));
            p.started(at(3000), TaskId(1), CpuId(0));
            p.wake(at(wake_us), TaskId(3), None);
            assert_eq!(p.make_runnable(at(wake_us), TaskId(3)), None);
            p
        };
        // At 4 ms A (vruntime 1) is behind V (2): eligible, it keeps its CPU.
        assert!(!run(4000).resched_set(CpuId(0)));
        // At 6.5 ms A (3.5) is past V (3.25): C, placed at V with half a
        // slice (deadline 4.75 ms), is the pick over B (6 ms): A must go.
        let mut p = run(6500);
        assert!(p.resched_set(CpuId(0)));
        p.stopped(at(6600), TaskId(1), true);
        assert!(!p.resched_set(CpuId(0)));
        p.requeue(at(6600), TaskId(1));
        assert_eq!(p.release(at(6600), CpuId(0)).map(|x| x.0), Some(TaskId(3)));
        let c: Vec<_> = p
            .counters()
            .into_iter()
            .filter(|c| c.0 == "wakeup_preemptions")
            .collect();
        assert_eq!(c, vec![("wakeup_preemptions", 1)]);
    }

    #[test]
    fn percpu_cfs_a_sleeper_preempts_only_a_task_beyond_the_wakeup_granularity() {
        const MS: u64 = 1_000_000;
        let at = |ms: u64| SimTime(ms * MS);
        // Slice 3 ms: sleeper credit 12 ms, wakeup granularity 4 ms. C (3)
        // runs 1 ms and sleeps; A (1) runs 30 ms, then B (2) from 31 ms;
        // C wakes at `wake_ms`.
        let run = |wake_ms: u64| {
            let mut p = CpuPool::with_cpus(1);
            p.set_percpu();
            p.set_cfs(Dur(3 * MS));
            p.wake(at(0), TaskId(3), None);
            assert_eq!(p.make_runnable(at(0), TaskId(3)), Some(CpuId(0)));
            p.started(at(0), TaskId(3), CpuId(0));
            for t in [1, 2].map(TaskId) {
                p.wake(at(0), t, None);
                assert_eq!(p.make_runnable(at(0), t), None);
            }
            p.stopped(at(1), TaskId(3), false);
            assert_eq!(p.release(at(1), CpuId(0)).map(|x| x.0), Some(TaskId(1)));
            p.started(at(1), TaskId(1), CpuId(0));
            p.stopped(at(31), TaskId(1), true);
            p.requeue(at(31), TaskId(1));
            assert_eq!(p.release(at(31), CpuId(0)).map(|x| x.0), Some(TaskId(2)));
            p.started(at(31), TaskId(2), CpuId(0));
            p.wake(at(wake_ms), TaskId(3), None);
            assert_eq!(p.make_runnable(at(wake_ms), TaskId(3)), None);
            p
        };
        // At 33 ms B has run 2 ms (min_vruntime 2 ms): C comes back at its
        // own 1 ms, 1 ms behind B: no preemption.
        assert!(!run(33).resched_set(CpuId(0)));
        // At 45 ms B is at 14 ms: C comes back at 14 - 12 = 2 ms, 12 ms
        // behind B, past the granularity: B must go, and C runs next.
        let mut p = run(45);
        assert!(p.resched_set(CpuId(0)));
        p.stopped(at(45), TaskId(2), true);
        p.requeue(at(45), TaskId(2));
        assert_eq!(p.release(at(45), CpuId(0)).map(|x| x.0), Some(TaskId(3)));
    }
}
