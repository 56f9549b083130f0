//! The world: tasks running compiled programs against locks and CPUs.
//!
//! One run is single-threaded (DESIGN invariant 6). The world owns the
//! event queue, the task table, one [`LockPolicy`] per lock, the CPU pool
//! and the statistics. Three event kinds drive it:
//! - `Run(t)`: task `t` is on a CPU and executes steps until it blocks,
//!   sleeps, spins, burns CPU time or exits;
//! - `Wake(t)`: `t`'s sleep is over; it becomes runnable;
//! - `SpinEnd(t)`: `t`'s spin deadline on a lock passed.
//!
//! A task that spins on a lock keeps its CPU. The world tells a lock when
//! one of its holders leaves its CPU (spinners on it stop), and when a task
//! finds no free CPU while others spin (need_resched): with per-CPU run
//! queues the spinner on the CPU it waits for yields, others spin on; with
//! one shared queue, one spinner yields.
//!
//! Ordering contract: a lock's wakeups become `Run` events in the order the
//! lock issued them, at the instant of the release, after the releasing
//! task has gone on. Zero-time steps (lock operations, spans, block heads)
//! run inline without events.
//!
//! A lock wait is measured from the request until the waiter runs again
//! holding the lock, as `lock_stat` and `perf lock contention` see it; with
//! unlimited CPUs that is the instant of the grant.

use crate::idle_kworkers::IdleKworkers;
use crate::scenario::compile::{Compiled, GroupProg, Instr, StatId, WakePlacement};
use crate::worker_pools::{PoolState, WorkerPools};
use models::cpu::{Cpu, CpuPool};
use models::policy::AnyLock;
use models::{Acquire, LockCtx, LockKind, LockPolicy, Mode, TaskId, TaskView, Wake};
use output::{Counter, Series, VariantResult};
use sim::rng::{stream, Stream};
use sim::stats::{HdrCounts, Windows};
use sim::{SimTime, SlotQueue};
use std::fmt;

/// A task's pending event (each task has at most one: it is sleeping,
/// burning CPU, or about to run).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Ev {
    /// The task is on a CPU and continues its program.
    Run,
    /// The task's sleep is over; it becomes runnable.
    Wake,
    /// The task's spin deadline on the lock it asked for passed.
    SpinEnd,
    /// The task's wake-to-run latency is over; it may take a CPU.
    Ready,
    /// (A memcg's slot) the OOM reaper's delay after a kill is over (R47).
    Reap,
    /// (A work item's slot) its delayed-work timer fired (R35).
    Timer,
    /// (A memcg's second slot) background release tick.
    Release,
}

/// Period of a memcg's background release.
const RELEASE_TICK: sim::Dur = sim::Dur(10_000_000);

/// `OOM_REAPER_DELAY` = 2 HZ (R47).
const OOM_REAPER_DELAY: sim::Dur = sim::Dur(2_000_000_000);

/// A hold slot's content: 0 for none, else the lock and its mode.
/// No task (an idle CPU in `World::running_on`).
const NONE: TaskId = TaskId::MAX;

fn held_code(lock: u32, mode: Mode) -> u32 {
    ((lock + 1) << 1) | u32::from(mode == Mode::Write)
}

fn held_decode(code: u32) -> Option<(u32, Mode)> {
    (code != 0).then(|| {
        (
            (code >> 1) - 1,
            if code & 1 == 1 {
                Mode::Write
            } else {
                Mode::Read
            },
        )
    })
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Running,
    /// On its CPU, spinning for a lock.
    Spinning,
    /// A kworker with no work item.
    Idle,
    Runnable,
    Sleeping,
    Blocked,
    Exited,
}

/// What a task must finish when it next runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Resume {
    Nothing,
    /// It was granted a lock while asleep: record the wait and the hold start.
    Acquired {
        lock: u32,
        mode: Mode,
        wait: StatId,
        slot: u8,
    },
    /// It was woken to try again (`Wake::Retry`).
    Retry {
        lock: u32,
        mode: Mode,
        wait: StatId,
        slot: u8,
    },
}

struct Task {
    group: u32,
    index: u32,
    pc: u32,
    cpu: Cpu,
    state: State,
    resume: Resume,
    /// When the current lock request was made.
    since: SimTime,
    rng: Stream,
    /// Real-time scheduling class.
    rt: bool,
    /// Draws of scheduling delays (wake latency), apart from the program's
    /// draws so that common random numbers hold; only with a latency.
    /// Boxed, as `mem_rng`: a stream is ~300 bytes, and most runs have
    /// neither, so the hot fields of the task stay on fewer cache lines.
    sched: Option<Box<Stream>>,
    /// The current `cpu` burst: when it began and ends (preemption picks
    /// the task that has run longest; a preempted burst resumes with the
    /// rest).
    burst_start: SimTime,
    burst_end: SimTime,
    in_burst: bool,
    /// Burst time left after a preemption (0: none).
    remaining: u64,
    /// When the task last got a CPU (its time slice started).
    on_cpu_since: SimTime,
    /// The CPU a per-CPU kworker is bound to for its current item.
    bound: Option<Cpu>,
    /// When the task began to wait for a CPU (until it gets one), and when
    /// a kworker began its item (for traces).
    queued_at: Option<SimTime>,
    /// The CPU a per-CPU kworker last ran an item on.
    home: Option<Cpu>,
    work_start: SimTime,
    /// Asleep in a lock's wait queue (counted in the trace's queue length).
    in_lock_queue: bool,
    /// Why it is about to leave its CPU asleep, when a lock wait does not
    /// say (reclaim, throttle, flush, work): for `--blame`.
    off: crate::blame::Doing,
    /// A memcg charge in progress across reclaim attempts (R45).
    charging: Option<(u32, models::memcg::Charge)>,
    /// Draws of memcg reclaim (time, success), apart from the program's.
    mem_rng: Option<Box<Stream>>,
    /// Pages over memory.high not yet paid for (R48).
    over_high: u64,
    /// Killed by the OOM killer of this memcg; exits at its next step.
    killed: Option<u32>,
    /// What `self` means in a work key: the task's index in its group, or
    /// a kworker's current item's instance.
    self_key: u32,
    /// A kworker's workqueue, and the item it runs.
    worker_of: Option<u32>,
    /// A kworker not yet created: its first item waits for its creation.
    cold: bool,
    /// Uses of `[seq]` work keys so far.
    seq: u32,
    work: Option<models::workqueue::WorkId>,
    /// The workqueue `work` was queued on (a pool kworker runs items of
    /// every per-CPU workqueue, R37).
    item_wq: u32,
    /// Where a kworker of a per-CPU pool is in R37's accounting.
    pool: PoolState,
    /// The atomic on the current lock step's cache line is done (the step
    /// waited for the line and now takes effect).
    atomic_done: bool,
    /// This task's hold starts are `World::holds[hold_base..]` (one per
    /// lock its program can hold at once), likewise spans and repeats.
    hold_base: u32,
    span_base: u32,
    rep_base: u32,
}

/// Whether workqueue `wq`'s items run on the per-CPU worker pools (R37):
/// a per-CPU workqueue, with a limited number of CPUs.
fn runs_on_pools(c: &Compiled, wq: &crate::scenario::compile::WorkqueueSpec) -> bool {
    c.cpus.is_some() && matches!(wq.kind, models::workqueue::WqKind::PerCpu { .. })
}

impl Task {
    /// A task of `group` (or a kworker, whose group changes per item) with
    /// its streams keyed by `name` and `index`, and its slot bases.
    fn new(
        c: &Compiled,
        (seed, rep): (u64, u64),
        name: &str,
        group: u32,
        index: u32,
        (hold_base, span_base, rep_base): (usize, usize, usize),
    ) -> Task {
        let own = |kind: &str| stream(seed, rep, &format!("{kind}/{name}"), u64::from(index));
        Task {
            group,
            index,
            pc: 0,
            cpu: Cpu::ANY,
            state: State::Runnable,
            resume: Resume::Nothing,
            since: SimTime::ZERO,
            rng: own("task"),
            rt: c.groups.get(group as usize).is_some_and(|g| g.rt),
            sched: c.wake_latency.as_ref().map(|_| Box::new(own("sched"))),
            burst_start: SimTime::ZERO,
            burst_end: SimTime::ZERO,
            in_burst: false,
            remaining: 0,
            on_cpu_since: SimTime::ZERO,
            bound: None,
            queued_at: None,
            home: None,
            work_start: SimTime::ZERO,
            in_lock_queue: false,
            off: crate::blame::Doing::Sleep,
            atomic_done: false,
            charging: None,
            mem_rng: (!c.memcgs.is_empty()).then(|| Box::new(own("memcg"))),
            over_high: 0,
            killed: None,
            self_key: index,
            worker_of: None,
            item_wq: 0,
            pool: PoolState::No,
            cold: false,
            seq: 0,
            work: None,
            hold_base: hold_base as u32,
            span_base: span_base as u32,
            rep_base: rep_base as u32,
        }
    }
}

struct Stat {
    hist: HdrCounts,
    windows: Windows,
}

/// Limits that stop a runaway run with a message instead of a hang or an
/// allocation the machine cannot make. Tasks, kworkers and work items are
/// bounded by the event queue's slots (checked when compiling).
#[derive(Copy, Clone, Debug)]
pub struct Limits {
    pub max_events: u64,
    /// Steps one task may execute at one instant before it is called a
    /// livelock.
    pub max_steps_per_instant: u64,
    /// Longest simulated duration of one run.
    pub max_sim_time: SimTime,
    /// Largest memory a run's world may be estimated to need, in bytes.
    pub max_memory: u64,
    /// Most tasks, kworkers and work items together: each can have one
    /// queued event, so this also bounds the event queue. At most (and by
    /// default) the engine's 524,288 slots.
    pub max_tasks: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_events: 20_000_000_000,
            max_steps_per_instant: 10_000_000,
            max_sim_time: SimTime(366 * 24 * 3600 * 1_000_000_000),
            max_memory: 8 << 30,
            max_tasks: sim::SlotQueue::<(), 20>::MAX_SLOTS as u64,
        }
    }
}

/// Bytes a run of `c` needs, roughly, before it records anything: the task
/// table, locks, work items and one histogram per reported series.
pub fn estimated_memory(c: &Compiled) -> u64 {
    let per_task = |g: &crate::scenario::compile::GroupProg| {
        std::mem::size_of::<Task>() as u64
            + 12 * u64::from(g.hold_slots)
            + 8 * (u64::from(g.span_slots) + u64::from(g.repeat_slots))
            + 8 * c.memcgs.len() as u64
    };
    let largest = c.groups.iter().map(per_task).max().unwrap_or(0);
    let tasks: u64 = c
        .groups
        .iter()
        .map(|g| u64::from(g.count) * per_task(g))
        .sum();
    let (kworkers, items) = (c.kworkers(), c.work_items());
    let locks = c.locks.len() as u64;
    let series = c.stats.len() as u64;
    tasks
        + kworkers * largest
        + items * 64
        + locks * (std::mem::size_of::<models::policy::AnyLock>() as u64 + 64)
        + series * 64 * 1024
}

/// Checks a compiled scenario against the limits before anything is
/// allocated for it.
pub fn check_limits(c: &Compiled, limits: &Limits) -> Result<(), RunError> {
    if c.duration.0 > limits.max_sim_time.0 {
        return Err(RunError::TooLarge {
            what: "simulated duration".into(),
            value: format!("{}", SimTime(c.duration.0)),
            limit: format!("{} (--max-sim-time)", limits.max_sim_time),
        });
    }
    let tasks = c.tasks() + c.kworkers() + c.work_items();
    if tasks > limits.max_tasks {
        return Err(RunError::TooLarge {
            what: "tasks, kworkers and work items".into(),
            value: tasks.to_string(),
            limit: format!("{} (--max-tasks)", limits.max_tasks),
        });
    }
    let mem = estimated_memory(c);
    if mem > limits.max_memory {
        return Err(RunError::TooLarge {
            what: "estimated memory".into(),
            value: format!("{} MiB", mem >> 20),
            limit: format!("{} MiB (--max-memory)", limits.max_memory >> 20),
        });
    }
    Ok(())
}

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    Livelock {
        task: String,
        location: String,
        at: SimTime,
        /// The locks the task holds (`name (mode)`), which every task
        /// waiting for them waits for with it.
        holding: Vec<String>,
    },
    Deadlock {
        at: SimTime,
        waiters: Vec<String>,
    },
    EventLimit {
        limit: u64,
        at: SimTime,
    },
    /// The scenario asks for more than a limit allows; nothing ran.
    TooLarge {
        what: String,
        value: String,
        limit: String,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Livelock {
                task,
                location,
                at,
                holding,
            } => write!(
                f,
                "livelock: task {task} ran more steps than the limit at t={at} without advancing \
                 simulated time (last step at {location}), holding {}",
                if holding.is_empty() {
                    "no lock".to_string()
                } else {
                    holding.join(", ")
                }
            ),
            RunError::Deadlock { at, waiters } => write!(
                f,
                "deadlock at t={at}: nothing left to run and tasks wait forever:\n  {}",
                waiters.join("\n  ")
            ),
            RunError::EventLimit { limit, at } => write!(
                f,
                "stopped after {limit} events at simulated t={at}: the event limit \
                 (--max-events); shorten the duration or raise the limit"
            ),
            RunError::TooLarge { what, value, limit } => write!(
                f,
                "not run: its {what} is {value}, over the limit of {limit}; \
                 make the scenario smaller or raise the limit"
            ),
        }
    }
}

impl std::error::Error for RunError {}

pub struct World<'c> {
    c: &'c Compiled,
    holds: Vec<SimTime>,
    /// The lock id + 1 held in each hold slot (0: none), same index as `holds`.
    held: Vec<u32>,
    /// Values of the scenario's `count` counters.
    user_counts: Vec<u64>,
    /// Uses of each `key next` step so far (a cgroup id allocator each).
    key_next: Vec<u32>,
    wqs: Vec<models::workqueue::Workqueue>,
    idle_workers: Vec<IdleKworkers>,
    /// The per-CPU worker pools that run per-CPU workqueues' items, with
    /// limited CPUs (R37).
    pools: Option<WorkerPools>,
    /// Items a workqueue started while all its kworkers were busy (not
    /// for per-CPU workqueues when pools run them: their worklists are).
    start_backlog: Vec<std::collections::VecDeque<(models::workqueue::WorkId, Cpu)>>,
    /// The workqueue of each item's armed timer.
    timer_wq: Vec<u32>,
    /// Tasks waiting in `flush_workqueue`, by (workqueue, flush).
    flushers: std::collections::BTreeMap<(u32, u64), Vec<TaskId>>,
    /// Tasks waiting in `cancel_delayed_work_sync` for a running item.
    work_waiters: std::collections::BTreeMap<(u32, u32), Vec<TaskId>>,
    wq_actions: Vec<models::workqueue::Action>,
    memcgs: Vec<models::memcg::Memcg>,
    /// Background release owed but not yet applied (fractional pages).
    released: Vec<f64>,
    /// Pages each task has charged to each memcg: `task * memcgs + m`.
    task_pages: Vec<u64>,
    /// Per memcg: reclaim time, throttle time, OOM exits, OOM reaps.
    mem_stats: Vec<[u64; 4]>,
    /// Each lock word's cache line: the CPU that wrote it last and when
    /// the atomic in progress on it completes.
    lines: Vec<(u32, SimTime)>,
    /// Each lock's cache-line costs (transfer, local), if modelled: a
    /// compact copy of the compiled locks' `line`, read at every atomic.
    line_costs: Vec<Option<(sim::Dur, sim::Dur)>>,
    line_transfers: Vec<u64>,
    line_wait_ns: Vec<u64>,
    /// Tasks spinning on some lock right now.
    spinning: u32,
    /// Whether a task on a CPU can ever be asked to reschedule: time
    /// slices, `preempt` placement, RT tasks or per-CPU queues (EEVDF's
    /// wakeup preemption). Without, `resched_due` costs one test.
    may_resched: bool,
    /// 1/HZ in ns.
    tick_ns: u64,
    /// The task whose step is being executed (the waker of any wakeup).
    current: TaskId,
    /// `--trace`: what this run looks like, slice by slice.
    trace: Option<Box<crate::trace::Trace>>,
    /// `--blame`: the waits to explain (first run), and what tasks did
    /// around them (second run).
    picker: Option<Box<crate::blame::Picker>>,
    recorder: Option<Box<crate::blame::Recorder>>,
    preemptions: u64,
    /// The event count at which to report progress or stop at the limit.
    next_check: u64,
    /// Tasks that yielded their CPU at a preemption point.
    slice_yields: u64,
    spans: Vec<SimTime>,
    reps: Vec<u64>,
    queue: SlotQueue<Ev>,
    now: SimTime,
    tasks: Vec<Task>,
    locks: Vec<AnyLock>,
    acquisitions: Vec<[u64; 2]>,
    contentions: Vec<[u64; 2]>,
    cpu: CpuPool,
    /// The task on each CPU (`NONE` for an idle one), with limited CPUs:
    /// where preemption looks for a victim.
    running_on: Vec<TaskId>,
    stats: Vec<Stat>,
    wakes: Vec<Wake>,
    horizon: SimTime,
    events: u64,
    limits: Limits,
    draw_log: Option<Vec<(TaskId, u64)>>,
}

/// A woken task's pending acquisition: granted, or to be retried.
fn pending(r: Resume, lock: u32, granted: bool) -> Resume {
    match r {
        Resume::Retry {
            lock: l,
            mode,
            wait,
            slot,
        }
        | Resume::Acquired {
            lock: l,
            mode,
            wait,
            slot,
        } => {
            debug_assert_eq!(l, lock, "woken by the lock it waits for");
            if granted {
                Resume::Acquired {
                    lock: l,
                    mode,
                    wait,
                    slot,
                }
            } else {
                Resume::Retry {
                    lock: l,
                    mode,
                    wait,
                    slot,
                }
            }
        }
        Resume::Nothing => unreachable!("a woken task has a pending acquisition"),
    }
}

/// The task table as lock policies see it.
struct TasksView<'a> {
    tasks: &'a [Task],
    cpu: &'a CpuPool,
}

impl TaskView for TasksView<'_> {
    fn is_rt(&self, t: TaskId) -> bool {
        self.tasks[t as usize].rt
    }
    fn on_cpu(&self, t: TaskId) -> bool {
        matches!(
            self.tasks[t as usize].state,
            State::Running | State::Spinning
        )
    }
    /// A task waits for `t`'s CPU: with per-CPU run queues one queued
    /// there (or an RT task anywhere); with one shared queue, any.
    fn need_resched(&self, t: TaskId) -> bool {
        self.cpu.waiting_for(self.tasks[t as usize].cpu) > 0
    }
}

/// Calls a lock policy with a [`LockCtx`] over the world's tasks: `$l` is
/// the lock, `$ctx` the context, `$wakes` the wake buffer. A macro, not a
/// method, so that the borrows of the tasks, the lock and the buffer stay
/// disjoint.
macro_rules! with_lock {
    ($w:ident, $lock:expr, |$l:ident, $ctx:ident, $wakes:ident| $body:expr) => {{
        let view = TasksView {
            tasks: &$w.tasks,
            cpu: &$w.cpu,
        };
        let $ctx = &LockCtx {
            now: $w.now,
            hz: $w.c.hz,
            tasks: &view,
        };
        let $l = &mut $w.locks[$lock as usize];
        let $wakes = &mut $w.wakes;
        $body
    }};
}

/// Where the event queue's trees start (besides slot 0): a task group of
/// 64 or more tasks gets a tree of its own, smaller groups share one with
/// their neighbours, the kworkers have one, and the timers (after the
/// tasks) another. Tasks are set at almost every event, timers are many but
/// rare, and a busy group (readers) then replays a short path in a small
/// tree that its many idle neighbours (churners parked on a mutex) do not
/// lengthen. The trees change no event's order.
fn queue_bounds(tasks: &[Task]) -> Vec<usize> {
    const MIN_TREE: usize = 64;
    // A small world's tree fits the cache whole: one tree and a pick
    // among fewer roots serve it better.
    if tasks.len() < 4 * MIN_TREE {
        return vec![tasks.len()];
    }
    let same =
        |a: &Task, b: &Task| a.group == b.group && a.worker_of.is_some() == b.worker_of.is_some();
    let mut bounds = Vec::new();
    let mut i = 0;
    while i < tasks.len() {
        let mut j = i + 1;
        while j < tasks.len() && same(&tasks[i], &tasks[j]) {
            j += 1;
        }
        if j - i >= MIN_TREE && bounds.len() < 250 {
            bounds.push(i);
            bounds.push(j);
        }
        i = j;
    }
    bounds.push(tasks.len());
    bounds.dedup();
    bounds
}

fn mode_index(m: Mode) -> usize {
    match m {
        Mode::Read => 0,
        Mode::Write => 1,
    }
}

impl<'c> World<'c> {
    /// Builds the world of one replication. Each task's stream is keyed by
    /// (seed, replication, `task/GROUP`, index).
    pub fn new(c: &'c Compiled, seed: u64, replication: u64, limits: Limits) -> Self {
        let mut tasks = Vec::new();
        let (mut holds, mut spans, mut reps) = (0usize, 0usize, 0usize);
        for (g, group) in c.groups.iter().enumerate() {
            for i in 0..group.count {
                tasks.push(Task::new(
                    c,
                    (seed, replication),
                    &group.name,
                    g as u32,
                    i,
                    (holds, spans, reps),
                ));
                holds += group.hold_slots as usize;
                spans += group.span_slots as usize;
                reps += group.repeat_slots as usize;
            }
        }
        // kworkers: tasks of no group until they run an item, with slots
        // for the largest work program.
        let work_groups = &c.groups[c.task_groups as usize..];
        let wslots =
            |f: fn(&GroupProg) -> u8| work_groups.iter().map(f).max().unwrap_or(0) as usize;
        let (wh, ws, wr) = (
            wslots(|g| g.hold_slots),
            wslots(|g| g.span_slots),
            wslots(|g| g.repeat_slots),
        );
        let mut idle_workers = Vec::new();
        // R37: the kworkers of every pooled workqueue form the per-CPU
        // pools; the others keep to their workqueue.
        let pooled = |wq| runs_on_pools(c, wq);
        let first_kworker = tasks.len() as TaskId;
        let nkworkers = c.workqueues.iter().map(|w| w.workers).sum::<u32>();
        let mut pool_idle = IdleKworkers::empty(first_kworker, nkworkers);
        for (q, wq) in c.workqueues.iter().enumerate() {
            let first = tasks.len() as TaskId;
            if pooled(wq) {
                for w in first..first + wq.workers {
                    pool_idle.push(w, None);
                }
                idle_workers.push(IdleKworkers::empty(first, wq.workers));
            } else {
                idle_workers.push(IdleKworkers::new(first, wq.workers));
            }
            for i in 0..wq.workers {
                let mut w = Task::new(
                    c,
                    (seed, replication),
                    &format!("kworker/{}", wq.name),
                    c.task_groups.min(c.groups.len().saturating_sub(1) as u32),
                    i,
                    (holds, spans, reps),
                );
                w.state = State::Idle;
                w.rt = false;
                w.self_key = 0;
                w.worker_of = Some(q as u32);
                w.cold = i >= wq.warm_workers;
                tasks.push(w);
                holds += wh;
                spans += ws;
                reps += wr;
            }
        }
        let ntasks = tasks.len();
        let nitems = c.works.iter().map(|w| w.instances as usize).sum::<usize>();
        let bounds = queue_bounds(&tasks);
        let mut cpu = match c.cpus {
            Some(n) => CpuPool::with_cpus(n),
            None => CpuPool::unlimited(),
        };
        cpu.set_wake_first(c.wake_placement.woken_first());
        if c.percpu_runqueues {
            cpu.set_percpu();
        }
        let tick_ns = 1_000_000_000 / u64::from(c.hz.max(1));
        match c.wake_placement {
            WakePlacement::Eevdf | WakePlacement::Eevdf66 => cpu.set_eevdf(
                c.timeslice.unwrap_or(tick_ns),
                tick_ns,
                c.wake_placement == WakePlacement::Eevdf,
            ),
            WakePlacement::Cfs => cpu.set_cfs(c.timeslice.unwrap_or(tick_ns)),
            _ => {}
        }
        for (i, task) in tasks.iter().enumerate() {
            if task.rt {
                cpu.set_rt(i as TaskId);
            }
        }
        let running_on = vec![NONE; c.cpus.unwrap_or(0) as usize];
        let pools = c
            .workqueues
            .iter()
            .any(pooled)
            .then(|| WorkerPools::new(c.cpus.unwrap_or(0) as usize, pool_idle));
        World {
            c,
            holds: vec![SimTime::ZERO; holds],
            held: vec![0; holds],
            memcgs: c
                .memcgs
                .iter()
                .map(|m| {
                    let mut g = models::memcg::Memcg::new(models::memcg::MemcgConfig {
                        max: m.max,
                        high: m.high,
                        cpus: c.cpus.unwrap_or(1),
                    });
                    g.charge_initial(m.initial);
                    g
                })
                .collect(),
            task_pages: vec![0; ntasks * c.memcgs.len()],
            mem_stats: vec![[0; 4]; c.memcgs.len()],
            lines: vec![(u32::MAX, SimTime::ZERO); c.locks.len()],
            line_costs: c.locks.iter().map(|l| l.line).collect(),
            line_transfers: vec![0; c.locks.len()],
            line_wait_ns: vec![0; c.locks.len()],
            spinning: 0,
            tick_ns,
            may_resched: c.timeslice.is_some()
                || c.wake_placement.preempts()
                || c.percpu_runqueues
                || tasks.iter().any(|t| t.rt),
            current: NONE,
            trace: None,
            picker: None,
            recorder: None,
            preemptions: 0,
            next_check: limits.max_events.min(1 << 20),
            slice_yields: 0,
            spans: vec![SimTime::ZERO; spans],
            reps: vec![0; reps],
            queue: SlotQueue::with_bounds(
                ntasks + c.memcgs.len() + nitems + c.memcgs.len(),
                &bounds,
                Ev::Run,
            ),
            released: vec![0.0; c.memcgs.len()],
            user_counts: vec![0; c.counters.len()],
            key_next: vec![0; c.key_counters as usize],
            wqs: c
                .workqueues
                .iter()
                .map(|w| models::workqueue::Workqueue::new(w.name.clone(), w.kind, w.max_active))
                .collect(),
            idle_workers,
            pools,
            start_backlog: vec![std::collections::VecDeque::new(); c.workqueues.len()],
            timer_wq: vec![0; nitems],
            flushers: std::collections::BTreeMap::new(),
            work_waiters: std::collections::BTreeMap::new(),
            wq_actions: Vec::new(),
            now: SimTime::ZERO,
            tasks,
            locks: c
                .locks
                .iter()
                .map(|l| {
                    AnyLock::with_options(l.kind, &l.policy, l.options)
                        .expect("the compiler accepts only known policies")
                })
                .collect(),
            acquisitions: vec![[0; 2]; c.locks.len()],
            contentions: vec![[0; 2]; c.locks.len()],
            cpu,
            running_on,
            stats: c
                .stats
                .iter()
                .map(|_| Stat {
                    hist: HdrCounts::new(),
                    windows: Windows::new(c.window),
                })
                .collect(),
            wakes: Vec::new(),
            horizon: SimTime(c.duration.0),
            events: 0,
            limits,
            draw_log: None,
        }
    }

    /// Records every random duration drawn, as (task, value): for tests of
    /// common random numbers.
    pub fn log_draws(&mut self) {
        self.draw_log = Some(Vec::new());
    }

    pub fn draws(&self) -> &[(TaskId, u64)] {
        self.draw_log.as_deref().unwrap_or(&[])
    }

    fn task_name(&self, t: TaskId) -> String {
        let task = &self.tasks[t as usize];
        format!(
            "{}[{}]",
            self.c.groups[task.group as usize].name, task.index
        )
    }

    #[inline]
    fn schedule(&mut self, t: TaskId, at: SimTime, ev: Ev) {
        debug_assert!(
            !self.queue.is_set(t as usize),
            "a task has one pending event"
        );
        self.queue.set(t as usize, at, ev);
    }

    #[inline]
    fn record(&mut self, stat: StatId, ns: u64) {
        let s = &mut self.stats[stat as usize];
        s.hist.record(ns);
        s.windows.record(self.now, ns);
    }

    /// `t` becomes runnable now: it runs at once (as an event at this
    /// instant) if a CPU is free, else it waits in the run queue.
    #[inline]
    fn make_runnable(&mut self, t: TaskId) {
        if let Some(cpu) = self.take_cpu(t) {
            self.give_cpu(t, cpu);
            self.schedule(t, self.now, Ev::Run);
        }
    }

    /// `t` is runnable: a free CPU, or a preempted task's CPU under
    /// PREEMPT_FULL, or the run queue (where need_resched may make a
    /// spinner yield its CPU).
    #[inline]
    fn take_cpu(&mut self, t: TaskId) -> Option<Cpu> {
        self.tasks[t as usize].state = State::Runnable;
        if self.cpu.is_unlimited() {
            return Some(Cpu::ANY);
        }
        self.take_limited_cpu(t)
    }

    /// [`World::take_cpu`] with a limited number of CPUs.
    #[inline(never)]
    fn take_limited_cpu(&mut self, t: TaskId) -> Option<Cpu> {
        match self.tasks[t as usize].bound {
            Some(cpu) => self.cpu.wake_on(self.now, t, cpu),
            None => self.cpu.wake(self.now, t),
        }
        if let Some(cpu) = self.tasks[t as usize].bound {
            let got = self.cpu.make_runnable_on(self.now, t, cpu);
            if got.is_none() {
                // A bound kworker waits for its own CPU: traced as
                // runnable like any other task.
                self.tasks[t as usize].queued_at = Some(self.now);
                self.blame_switch(t, crate::blame::Doing::Runnable);
                if self.spinning > 0 {
                    self.resched_cpu(cpu);
                }
            }
            return got;
        }
        if let Some(cpu) = self.cpu.try_take_for(t) {
            return Some(cpu);
        }
        if self.c.preempt_full || self.c.wake_placement.preempts() {
            if let Some(cpu) = self.preempt_for(t) {
                return Some(cpu);
            }
        }
        self.cpu.enqueue_woken(self.now, t);
        self.tasks[t as usize].queued_at = Some(self.now);
        self.blame_switch(t, crate::blame::Doing::Runnable);
        if self.spinning > 0 {
            match self.cpu.queued_on(t) {
                Some(cpu) => self.resched_cpu(cpu),
                None => self.resched(),
            }
        }
        None
    }

    /// Wakeup preemption: the task in a `cpu` burst that has run longest
    /// (never an RT task for a normal wakee) loses its CPU to `t` and
    /// requeues with the rest of its burst. Under PREEMPT_FULL any burst
    /// will do; with `wake_placement = "preempt"` only a task's burst that
    /// holds no lock: PREEMPT_NONE/VOLUNTARY reschedule at a preemption
    /// point, such as the return to user space that a lock-free burst of a
    /// task stands for, and kernfs/cgroup sections have none. A kworker's
    /// burst is kernel code with no return to user space, so it is never a
    /// victim there. Returns the CPU, if a victim was found.
    fn preempt_for(&mut self, t: TaskId) -> Option<Cpu> {
        let wakee_rt = self.tasks[t as usize].rt;
        let now = self.now;
        let victim = self
            .running_on
            .iter()
            .filter(|&&v| v != NONE)
            .map(|&v| (v, &self.tasks[v as usize]))
            .filter(|(_, v)| v.state == State::Running && v.in_burst && v.burst_end > now)
            .filter(|(_, v)| wakee_rt || !v.rt)
            .filter(|(i, _)| self.c.preempt_full || self.at_user_boundary(*i))
            .min_by_key(|(i, v)| (v.rt, v.burst_start, *i))
            .map(|(i, _)| i)?;
        let v = &mut self.tasks[victim as usize];
        v.remaining = v.burst_end.0 - now.0;
        v.in_burst = false;
        v.state = State::Runnable;
        let cpu = v.cpu;
        self.running_on[cpu.0 as usize] = NONE;
        self.queue.clear(victim as usize);
        self.preemptions += 1;
        self.blame_switch(victim, crate::blame::Doing::Runnable);
        if self.spinning > 0 {
            self.holder_off_cpu(victim);
        }
        self.cpu.stopped(now, victim, true);
        self.requeue(victim);
        Some(cpu)
    }

    /// `t` was woken (sleep over, lock granted or retry): after the wake
    /// latency, it becomes runnable. Returns true if it has a CPU now and
    /// the caller (`inline`) may run it at once.
    #[inline(always)]
    fn wakeup(&mut self, t: TaskId, inline: bool) -> bool {
        // A task bound to the CPU its waker runs on is queued there by the
        // waker itself (no IPI, no idle exit): the latency is drawn, to
        // keep the stream in step, but not applied.
        if let Some(l) = self.c.wake_latency.as_ref() {
            let waker_cpu = (self.current != NONE).then(|| self.tasks[self.current as usize].cpu);
            let local = waker_cpu.is_some() && self.tasks[t as usize].bound == waker_cpu;
            let s = self.tasks[t as usize]
                .sched
                .as_mut()
                .expect("a wake latency gives every task its stream");
            let d = l.sample(s);
            if d > 0 && !local {
                self.tasks[t as usize].state = State::Runnable;
                self.blame_switch(t, crate::blame::Doing::Waking);
                self.schedule(t, self.now + sim::Dur(d), Ev::Ready);
                return false;
            }
        }
        if inline {
            match self.take_cpu(t) {
                Some(cpu) => {
                    self.give_cpu(t, cpu);
                    true
                }
                None => false,
            }
        } else {
            self.make_runnable(t);
            false
        }
    }

    /// A task waits for any CPU (one shared run queue, or an RT task)
    /// while others spin: need_resched makes one spinner give up (R8/R9
    /// stop on need_resched), freeing its CPU.
    fn resched(&mut self) {
        for lock in 0..self.locks.len() as u32 {
            if self.locks[lock as usize].has_spinners() {
                let stopped = with_lock!(self, lock, |l, ctx, wakes| l.resched(ctx, None, wakes));
                self.apply_wakes(lock);
                if stopped {
                    return;
                }
            }
        }
    }

    /// A task now waits for `cpu` (per-CPU run queues, or a bound kworker):
    /// need_resched there makes the task spinning on it, if any, give up
    /// (R8/R9, R28). Spinners on other CPUs go on.
    fn resched_cpu(&mut self, cpu: Cpu) {
        let Some(&v) = self.running_on.get(cpu.0 as usize) else {
            return;
        };
        if v == NONE || self.tasks[v as usize].state != State::Spinning {
            return;
        }
        let Resume::Acquired { lock, .. } = self.tasks[v as usize].resume else {
            unreachable!("a spinner has a pending acquisition")
        };
        with_lock!(self, lock, |l, ctx, wakes| l.resched(ctx, Some(v), wakes));
        self.apply_wakes(lock);
    }

    /// The indices of `t`'s hold slots in `holds` and `held`.
    fn hold_slots(&self, t: TaskId) -> std::ops::Range<usize> {
        let task = &self.tasks[t as usize];
        let base = task.hold_base as usize;
        base..base + self.c.groups[task.group as usize].hold_slots as usize
    }

    /// The index of the work type that item `id` belongs to.
    fn work_type(&self, id: models::workqueue::WorkId) -> usize {
        self.c
            .works
            .iter()
            .position(|s| s.offset <= id.0 && id.0 < s.offset + s.instances)
            .expect("item ids come from work types")
    }

    /// The work type that item `id` belongs to.
    fn work_spec(&self, id: models::workqueue::WorkId) -> &'c crate::scenario::compile::WorkSpec {
        &self.c.works[self.work_type(id)]
    }

    /// `t` leaves its CPU holding locks: locks with spinners are told, since
    /// spinning on an owner that is off CPU is refused (R8/R9, R27).
    fn holder_off_cpu(&mut self, t: TaskId) {
        for i in self.hold_slots(t) {
            let Some((lock, _)) = held_decode(self.held[i]) else {
                continue;
            };
            if self.locks[lock as usize].has_spinners() {
                with_lock!(self, lock, |l, ctx, wakes| l.owner_off_cpu(ctx, t, wakes));
                self.apply_wakes(lock);
            }
        }
    }

    /// `t` runs on `cpu` from now; its time slice starts.
    #[inline]
    fn give_cpu(&mut self, t: TaskId, cpu: Cpu) {
        let task = &mut self.tasks[t as usize];
        task.cpu = cpu;
        task.on_cpu_since = self.now;
        if let Some(r) = self.running_on.get_mut(cpu.0 as usize) {
            *r = t;
            self.cpu.started(self.now, t, cpu);
        }
        if self.recorder.is_some() {
            self.blame_on_cpu(t);
        }
        if let Some(tr) = self.trace.as_mut() {
            // Runnable since it was queued, if it waited for this CPU.
            let task = &mut self.tasks[t as usize];
            if let Some(since) = task.queued_at.take() {
                if since < self.now {
                    let on = (cpu != Cpu::ANY).then_some(cpu.0);
                    tr.slice_on_cpu(t, "runnable".into(), since, self.now, on);
                }
            }
        }
    }

    /// Whether a step boundary of `t` stands for a return to user space:
    /// a task (not a kworker) that holds no lock.
    fn at_user_boundary(&self, t: TaskId) -> bool {
        self.tasks[t as usize].worker_of.is_none() && !self.holds_lock(t)
    }

    /// Whether `t` holds any lock now.
    fn holds_lock(&self, t: TaskId) -> bool {
        self.held[self.hold_slots(t)].iter().any(|&h| h != 0)
    }

    /// Whether a reschedule is due for `t`, on a CPU: others wait for a
    /// CPU (its CPU's, with per-CPU queues) and `t` has used up its time
    /// slice (seen at a tick), or an RT task waits, or a woken task asked
    /// for the CPU (`preempt` placement; EEVDF wakeup preemption with
    /// per-CPU queues). The cheap tests go first: this runs at every
    /// event of a task.
    #[inline(always)]
    fn resched_due(&self, t: TaskId) -> bool {
        self.may_resched && self.resched_due_slow(t)
    }

    /// [`World::resched_due`] when a reschedule can happen at all.
    #[inline(never)]
    fn resched_due_slow(&self, t: TaskId) -> bool {
        // The RT class runs first: a waiting RT task reschedules a fair
        // task at once, and an RT task (SCHED_FIFO) has no slice.
        let task = &self.tasks[t as usize];
        if task.rt {
            return false;
        }
        // The scheduler tick notices a used-up slice: the slice ends at the
        // first tick (every 1/HZ) at or after it runs out (the divisions
        // only once it has run out).
        let over = |slice: u64| {
            let end = task.on_cpu_since.0 + slice;
            if self.now.0 < end {
                return false;
            }
            self.now.0 >= end.div_ceil(self.tick_ns) * self.tick_ns
        };
        let asked = self.cpu.rt_waiting() > 0
            || self.cpu.resched_set(task.cpu)
            || (self.c.wake_placement.preempts() && self.cpu.woken_waiting() > 0)
            || self.c.timeslice.is_some_and(over);
        asked && self.cpu.waiting_for(task.cpu) > 0
    }

    /// `t` gives up its CPU to the run queue's tail and resumes at `pc`.
    fn yield_cpu(&mut self, t: TaskId, pc: u32) {
        self.slice_yields += 1;
        let task = &mut self.tasks[t as usize];
        task.pc = pc;
        task.state = State::Runnable;
        // Back in the queue before its CPU is handed on: the pick sees it
        // (EEVDF may choose it again), and a CPU nobody else wants is not
        // left free while it waits.
        self.cpu.stopped(self.now, t, true);
        self.requeue(t);
        self.leave_cpu(t);
    }

    /// `t`, preempted, waits at the tail: of its CPU's queue if bound.
    fn requeue(&mut self, t: TaskId) {
        self.tasks[t as usize].queued_at = Some(self.now);
        match self.tasks[t as usize].bound {
            Some(cpu) => self.cpu.requeue_on(self.now, t, cpu),
            None => self.cpu.requeue(self.now, t),
        }
    }

    /// `t` leaves its CPU; the next runnable task (if any) gets it.
    #[inline]
    fn leave_cpu(&mut self, t: TaskId) {
        if self.recorder.is_some() {
            self.blame_off_cpu(t);
        }
        if self.spinning > 0 {
            self.holder_off_cpu(t);
        }
        if !self.cpu.is_unlimited() {
            let runnable = self.tasks[t as usize].state == State::Runnable;
            self.cpu.stopped(self.now, t, runnable);
            self.release_cpu(t);
        }
        // A pool kworker that sleeps inside its item (not one preempted)
        // leaves nr_running, once its CPU is free for whom it may wake.
        let task = &self.tasks[t as usize];
        if task.pool == PoolState::Running && matches!(task.state, State::Blocked | State::Sleeping)
        {
            self.pool_worker_sleeps(t);
        }
    }

    /// `t`'s CPU goes to the next task waiting for it, if any.
    #[inline(never)]
    fn release_cpu(&mut self, t: TaskId) {
        let cpu = self.tasks[t as usize].cpu;
        self.running_on[cpu.0 as usize] = NONE;
        if let Some((next, _waited)) = self.cpu.release(self.now, cpu) {
            self.give_cpu(next, cpu);
            self.schedule(next, self.now, Ev::Run);
        }
    }

    #[inline]
    fn apply_wakes(&mut self, lock: u32) {
        if !self.wakes.is_empty() {
            self.apply_wakes_slow(lock);
        }
    }

    fn apply_wakes_slow(&mut self, lock: u32) {
        let mut wakes = std::mem::take(&mut self.wakes);
        for w in &wakes {
            match *w {
                Wake::Granted(t) | Wake::Retry(t) => {
                    let granted = matches!(w, Wake::Granted(_));
                    // No waking task when a timer's wakeup makes a spinner
                    // give up (need_resched): then no flow and no waker.
                    if self.current != NONE {
                        if let Some(tr) = self.trace.as_mut() {
                            tr.flow(self.current, t, self.now, &self.c.locks[lock as usize].name);
                        }
                        if let Some(r) = self.recorder.as_mut() {
                            r.woken_by(t, self.current);
                        }
                    }
                    let task = &mut self.tasks[t as usize];
                    debug_assert_eq!(task.state, State::Blocked, "only sleepers are woken");
                    task.resume = pending(task.resume, lock, granted);
                    self.wakeup(t, false);
                }
                Wake::SpinGranted(t) => {
                    let task = &mut self.tasks[t as usize];
                    debug_assert_eq!(task.state, State::Spinning);
                    task.resume = pending(task.resume, lock, true);
                    task.state = State::Running;
                    self.spinning -= 1;
                    self.blame_switch(t, crate::blame::Doing::OnCpu);
                    // Replaces a pending spin deadline, if any.
                    self.queue.set(t as usize, self.now, Ev::Run);
                }
                Wake::SpinUntil(t, at) => {
                    debug_assert_eq!(self.tasks[t as usize].state, State::Spinning);
                    if at == SimTime::MAX {
                        self.queue.clear(t as usize);
                    } else {
                        self.queue.set(t as usize, at, Ev::SpinEnd);
                    }
                }
                Wake::SpinSlept(t) => {
                    if self.trace.is_some() {
                        self.trace_queue(t, lock, true);
                    }
                    let task = &mut self.tasks[t as usize];
                    debug_assert_eq!(task.state, State::Spinning);
                    task.state = State::Blocked;
                    self.spinning -= 1;
                    self.queue.clear(t as usize);
                    self.leave_cpu(t);
                }
            }
        }
        wakes.clear();
        if self.wakes.is_empty() {
            self.wakes = wakes;
        }
    }

    /// `t` spins on `lock` (on its CPU) until a wake or `until`.
    fn start_spin(&mut self, t: TaskId, until: Option<SimTime>) {
        if self.recorder.is_some() {
            if let Resume::Acquired { lock, mode, .. } = self.tasks[t as usize].resume {
                self.blame_switch(t, crate::blame::Doing::Spin { lock, mode });
            }
        }
        self.tasks[t as usize].state = State::Spinning;
        self.spinning += 1;
        match until {
            Some(at) => self.queue.set(t as usize, at, Ev::SpinEnd),
            None => self.queue.clear(t as usize),
        }
    }

    /// A spinner's deadline passed: ask its lock again.
    fn spin_end(&mut self, t: TaskId) -> Result<(), RunError> {
        self.current = t;
        let Resume::Acquired { lock, mode, .. } = self.tasks[t as usize].resume else {
            unreachable!("a spinner has a pending acquisition")
        };
        self.spinning -= 1;
        self.tasks[t as usize].state = State::Running;
        self.blame_switch(t, crate::blame::Doing::OnCpu);
        let r = with_lock!(self, lock, |l, ctx, wakes| l
            .spin_timeout(ctx, t, mode, wakes));
        self.apply_wakes(lock);
        match r {
            Acquire::Granted => self.run_task(t),
            Acquire::Queued => {
                self.tasks[t as usize].state = State::Blocked;
                self.leave_cpu(t);
                Ok(())
            }
            Acquire::Spin { until } => {
                self.start_spin(t, until);
                Ok(())
            }
        }
    }

    /// The cache-line model (KERNEL-SEMANTICS.md "Cache-line contention"):
    /// `t` does an atomic on `lock`'s word. It waits for the line to be free,
    /// then pays a transfer if another CPU wrote it last (a local cost
    /// otherwise); atomics on one line complete one at a time. Returns how
    /// long `t` spends on it; 0 for locks without the model or after the
    /// atomic is done (then the step takes effect).
    #[inline(always)]
    fn line_atomic(&mut self, t: TaskId, lock: u32) -> u64 {
        match self.line_costs[lock as usize] {
            None => 0,
            Some((transfer, local)) => self.line_atomic_slow(t, lock, transfer, local),
        }
    }

    fn line_atomic_slow(
        &mut self,
        t: TaskId,
        lock: u32,
        transfer: sim::Dur,
        local: sim::Dur,
    ) -> u64 {
        let task = &mut self.tasks[t as usize];
        if std::mem::take(&mut task.atomic_done) {
            return 0;
        }
        // With unlimited CPUs each task is its own CPU.
        let cpu = if task.cpu == Cpu::ANY { t } else { task.cpu.0 };
        let (owner, free_at) = self.lines[lock as usize];
        let start = free_at.max(self.now);
        let cost = if owner == cpu { local } else { transfer };
        if owner != cpu {
            self.line_transfers[lock as usize] += 1;
        }
        let done = start + cost;
        self.lines[lock as usize] = (cpu, done);
        let d = done.since(self.now).0;
        self.line_wait_ns[lock as usize] += start.since(self.now).0;
        if d > 0 {
            let task = &mut self.tasks[t as usize];
            task.atomic_done = true;
            task.in_burst = true;
            task.burst_start = self.now;
            task.burst_end = done;
            self.schedule(t, done, Ev::Run);
        }
        d
    }

    /// Runs the charge step at `pc` for `t` (R45-R48). Returns true if the
    /// task now sleeps (a reclaim attempt or a memory.high throttle) and
    /// false once the charge is done (charged, or failed with -ENOMEM).
    fn charge(&mut self, t: TaskId, pc: u32, m: u32, pages: u64) -> bool {
        use models::memcg::{Charge, ChargeStep, Gfp, OomOutcome};
        let (ti, mi) = (t as usize, m as usize);
        let spec = &self.c.memcgs[mi];
        let cpu = self.tasks[ti].cpu;
        let cpu = if cpu == Cpu::ANY { 0 } else { cpu.0 };
        let (mut ch, mut step) = match self.tasks[ti].charging.take() {
            None => {
                let mut ch = Charge::new(pages, cpu, Gfp::default());
                let st = self.memcgs[mi].try_charge_memcg(&mut ch);
                (ch, st)
            }
            Some((_, mut ch)) => {
                // Back from a reclaim attempt: did it free a batch?
                let rng = self.tasks[ti].mem_rng.as_mut().expect("memcg stream");
                let ok = sim::rng::unit(rng) < spec.reclaim_success;
                let freed = if ok { spec.reclaim_pages } else { 0 };
                let st = self.memcgs[mi].after_reclaim(&mut ch, freed);
                (ch, st)
            }
        };
        loop {
            match step {
                ChargeStep::Charged { .. } => {
                    self.task_pages[ti * self.memcgs.len() + mi] += pages;
                    // memory.high, handled in the charge above a batch (R48).
                    let usage_over = spec.high.is_some_and(|h| self.memcgs[mi].usage() > h);
                    if !usage_over {
                        self.tasks[ti].over_high = 0;
                        return false;
                    }
                    self.tasks[ti].over_high += pages.max(models::memcg::MEMCG_CHARGE_BATCH);
                    let debt = self.tasks[ti].over_high;
                    let (_, jiffies) = self.memcgs[mi].over_high(debt, self.c.hz);
                    if jiffies == 0 {
                        return false;
                    }
                    self.tasks[ti].over_high = 0;
                    self.tasks[ti].off = crate::blame::Doing::Throttle { memcg: m };
                    let d = jiffies * 1_000_000_000 / u64::from(self.c.hz);
                    self.mem_stats[mi][1] += d;
                    return self.delay(t, d, true, pc + 1);
                }
                ChargeStep::Reclaim => {
                    let rng = self.tasks[ti].mem_rng.as_mut().expect("memcg stream");
                    let d = spec.reclaim.sample(rng);
                    self.mem_stats[mi][0] += d;
                    if d == 0 {
                        let ok = sim::rng::unit(rng) < spec.reclaim_success;
                        let freed = if ok { spec.reclaim_pages } else { 0 };
                        step = self.memcgs[mi].after_reclaim(&mut ch, freed);
                        continue;
                    }
                    self.tasks[ti].charging = Some((m, ch));
                    self.tasks[ti].off = crate::blame::Doing::Reclaim { memcg: m };
                    // Direct reclaim sleeps (I/O, swap) with the task's locks held.
                    return self.delay(t, d, true, pc);
                }
                ChargeStep::Oom => {
                    // Under oom_lock (instantaneous here: the OOM scan takes no
                    // modelled time, so the lock is never contended).
                    let cands = self.oom_candidates(mi);
                    step = match self.memcgs[mi].mem_cgroup_oom(&mut ch, 0, &cands) {
                        OomOutcome::Retry => self.memcgs[mi].try_charge_memcg(&mut ch),
                        OomOutcome::Kill(v) => {
                            self.kill(v, m);
                            if v == t {
                                // The charger killed itself: it exits now.
                                self.tasks[ti].pc = pc;
                                self.exit_killed(t);
                                return true;
                            }
                            self.memcgs[mi].try_charge_memcg(&mut ch)
                        }
                        OomOutcome::NoMem => self.memcgs[mi].oom_failed(&ch),
                    };
                }
                ChargeStep::NoMem => return false,
            }
        }
    }

    /// The item id of work type `work` and key `key` for task `t`.
    fn work_id(
        &mut self,
        t: TaskId,
        work: u32,
        key: crate::scenario::steps::WorkKey,
    ) -> models::workqueue::WorkId {
        use crate::scenario::steps::WorkKey;
        let spec = &self.c.works[work as usize];
        let task = &mut self.tasks[t as usize];
        let k = match key {
            WorkKey::Index(i) => i,
            WorkKey::SelfIndex => task.self_key,
            WorkKey::Seq => {
                let stride = self.c.groups[task.group as usize].count.max(1);
                let k = (u64::from(task.seq) * u64::from(stride) + u64::from(task.index))
                    % u64::from(spec.instances);
                task.seq = task.seq.wrapping_add(1);
                k as u32
            }
        };
        models::workqueue::WorkId(spec.offset + k.min(spec.instances - 1))
    }

    /// The CPU a per-CPU workqueue uses for `t`'s queue_work: its own
    /// (R33); CPU 0 when CPUs are unlimited.
    fn wq_cpu(&self, t: TaskId, wq: u32) -> Cpu {
        match self.c.workqueues[wq as usize].kind {
            models::workqueue::WqKind::PerCpu { cpus } => {
                let c = self.tasks[t as usize].cpu;
                Cpu(if c == Cpu::ANY { 0 } else { c.0 % cpus.max(1) })
            }
            _ => Cpu::ANY,
        }
    }

    /// `t` sleeps until a flush or a work item it waits for completes.
    fn block_waiting(&mut self, t: TaskId, pc: u32, why: crate::blame::Doing) {
        let task = &mut self.tasks[t as usize];
        task.pc = pc;
        task.off = why;
        task.state = State::Blocked;
        self.leave_cpu(t);
    }

    /// An idle kworker of workqueue `q` (not run by the pools) for an item
    /// on `cpu`, in [`IdleKworkers::take`]'s order.
    fn idle_worker(&mut self, q: u32, cpu: Cpu) -> Option<TaskId> {
        self.idle_workers[q as usize].take(cpu)
    }

    /// Items of workqueue `q` run on the per-CPU pools (R37).
    fn pooled(&self, q: u32) -> bool {
        runs_on_pools(self.c, &self.c.workqueues[q as usize])
    }

    /// `kick_pool` (R37): wakes an idle kworker for `cpu`'s pool, bound to
    /// that CPU; it takes an item when it runs.
    fn kick_pool(&mut self, cpu: Cpu) {
        let Some(w) = self.pools.as_mut().and_then(|p| p.kick(cpu)) else {
            return;
        };
        self.tasks[w as usize].pool = PoolState::Kicked;
        self.bind_worker(w, cpu);
        self.wake_worker(w);
    }

    /// A kworker of a pool gets its CPU (R37, `worker_thread` and
    /// `wq_worker_running`). Returns false if it went back to sleep.
    #[inline(never)]
    fn pool_worker_runs(&mut self, w: TaskId) -> bool {
        let cpu = self.tasks[w as usize]
            .bound
            .expect("pool kworkers are bound");
        let pools = self.pools.as_mut().expect("pooled");
        match self.tasks[w as usize].pool {
            PoolState::Kicked => match pools.kicked_runs(w, cpu) {
                Some((q, id)) => {
                    self.tasks[w as usize].pool = PoolState::Running;
                    self.begin_item(w, q, id);
                }
                None => {
                    self.pool_worker_idles(w);
                    return false;
                }
            },
            PoolState::Sleeping => {
                pools.running(cpu);
                self.tasks[w as usize].pool = PoolState::Running;
            }
            PoolState::Running | PoolState::No => {}
        }
        true
    }

    /// Pool kworker `w` has no item and sleeps on the idle list.
    fn pool_worker_idles(&mut self, w: TaskId) {
        let task = &mut self.tasks[w as usize];
        task.pool = PoolState::No;
        task.state = State::Idle;
        self.leave_cpu(w);
        let task = &mut self.tasks[w as usize];
        task.bound = None;
        let home = task.home;
        let pools = self.pools.as_mut().expect("pooled");
        pools.idle.push(w, home);
        if let Some(cpu) = pools.next_starved() {
            self.kick_pool(cpu);
        }
    }

    /// `wq_worker_sleeping` (R37): pool kworker `w` sleeps inside its
    /// item; the pool may wake another for its worklist.
    #[inline(never)]
    fn pool_worker_sleeps(&mut self, w: TaskId) {
        let cpu = self.tasks[w as usize]
            .bound
            .expect("pool kworkers are bound");
        self.tasks[w as usize].pool = PoolState::Sleeping;
        if self.pools.as_mut().expect("pooled").sleeping(cpu) {
            self.kick_pool(cpu);
        }
    }

    /// Carries out what a workqueue said: start items on kworkers, arm
    /// timers, release flushers.
    fn apply_wq_actions(&mut self, q: u32, mut out: Vec<models::workqueue::Action>) {
        use models::workqueue::Action;
        for a in out.drain(..) {
            match a {
                Action::Start(id, cpu) if self.pooled(q) => {
                    let pools = self.pools.as_mut().expect("pooled");
                    if pools.insert_work(cpu, q, id) {
                        self.kick_pool(cpu);
                    }
                }
                Action::Start(id, cpu) => match self.idle_worker(q, cpu) {
                    Some(w) => self.start_work(w, q, id, cpu),
                    None => self.start_backlog[q as usize].push_back((id, cpu)),
                },
                Action::ArmTimer(id, at) => {
                    self.timer_wq[id.0 as usize] = q;
                    let slot = self.tasks.len() + self.memcgs.len() + id.0 as usize;
                    // Re-arming later (mod_delayed_work on every read of a
                    // pidlist) leaves the earlier event in place: it fires,
                    // finds the timer re-armed and moves it then, once,
                    // instead of once per re-arm.
                    if self.queue.time_of(slot).is_none_or(|t| t > at) {
                        self.queue.set(slot, at, Ev::Timer);
                    }
                }
                Action::FlushDone(f) => {
                    for t in self.flushers.remove(&(q, f.0)).unwrap_or_default() {
                        if let (Some(r), true) = (self.recorder.as_mut(), self.current != NONE) {
                            r.woken_by(t, self.current);
                        }
                        self.wakeup(t, false);
                    }
                }
            }
        }
        if self.wq_actions.is_empty() {
            self.wq_actions = out;
        }
    }

    /// kworker `w` runs item `id`: the item's program from the top, on
    /// `cpu` for a per-CPU workqueue.
    fn start_work(&mut self, w: TaskId, q: u32, id: models::workqueue::WorkId, cpu: Cpu) {
        debug_assert_eq!(self.tasks[w as usize].worker_of, Some(q));
        self.begin_item(w, q, id);
        self.bind_worker(w, cpu);
        self.wake_worker(w);
    }

    /// Kworker `w` takes item `id` of workqueue `q` (`process_one_work`
    /// begins): its program runs from the start.
    fn begin_item(&mut self, w: TaskId, q: u32, id: models::workqueue::WorkId) {
        let spec = self.work_spec(id);
        let task = &mut self.tasks[w as usize];
        task.group = spec.group;
        task.pc = 0;
        task.self_key = id.0 - spec.offset;
        task.work = Some(id);
        task.item_wq = q;
        task.work_start = self.now;
    }

    /// Kworker `w` will run on `cpu` ([`Cpu::ANY`]: unbound).
    fn bind_worker(&mut self, w: TaskId, cpu: Cpu) {
        let task = &mut self.tasks[w as usize];
        task.bound = (cpu != Cpu::ANY && !self.cpu.is_unlimited()).then_some(cpu);
        if task.bound.is_some() && task.home != task.bound {
            // Each CPU has its own pool of kworkers (R37): one that moves
            // to another CPU stands for that CPU's kworker, which has its
            // own scheduling history, not this one's.
            let moved = task.home.is_some();
            task.home = task.bound;
            if moved {
                self.cpu.forget_fair(w);
            }
        }
    }

    /// Idle kworker `w` is woken (after its creation, if it is the first
    /// time it is needed).
    fn wake_worker(&mut self, w: TaskId) {
        let task = &mut self.tasks[w as usize];
        task.state = State::Blocked;
        let q = task.worker_of.expect("a kworker");
        if std::mem::take(&mut task.cold) {
            // The manager creates this kworker first (R38).
            let lat = &self.c.workqueues[q as usize].create_latency;
            let d = lat.sample(&mut self.tasks[w as usize].rng);
            if d > 0 {
                self.tasks[w as usize].state = State::Runnable;
                self.blame_switch(w, crate::blame::Doing::Creating);
                self.schedule(w, self.now + sim::Dur(d), Ev::Ready);
                return;
            }
        }
        self.wakeup(w, false);
    }

    /// kworker `w` returned from item `id` (`process_one_work` ends).
    fn work_done(&mut self, w: TaskId, q: u32, id: models::workqueue::WorkId) {
        if self.trace.is_some() {
            let spec = self.work_spec(id);
            let name = format!("work {}[{}]", spec.name, id.0 - spec.offset);
            let start = self.tasks[w as usize].work_start;
            if let Some(tr) = self.trace.as_mut() {
                tr.slice(w, "work", name, start, self.now);
            }
        }
        let mut out = std::mem::take(&mut self.wq_actions);
        self.wqs[q as usize].work_done(self.now, id, &mut out);
        for t in self.work_waiters.remove(&(q, id.0)).unwrap_or_default() {
            if let Some(r) = self.recorder.as_mut() {
                r.woken_by(t, w);
            }
            self.wakeup(t, false);
        }
        // The kworker wakes the flushers it completes before it sleeps, so
        // a flusher bound to this CPU is first in line for it.
        out.retain(|a| match *a {
            models::workqueue::Action::FlushDone(f) => {
                for t in self.flushers.remove(&(q, f.0)).unwrap_or_default() {
                    if let Some(r) = self.recorder.as_mut() {
                        r.woken_by(t, w);
                    }
                    self.wakeup(t, false);
                }
                false
            }
            _ => true,
        });
        if self.tasks[w as usize].pool == PoolState::Running {
            // R37: items this one activated join the worklist first; then
            // keep_working, or idle.
            self.apply_wq_actions(q, out);
            let cpu = self.tasks[w as usize]
                .bound
                .expect("pool kworkers are bound");
            match self.pools.as_mut().expect("pooled").finished(cpu) {
                Some((q2, id2)) => {
                    self.begin_item(w, q2, id2);
                    self.schedule(w, self.now, Ev::Run);
                }
                None => self.pool_worker_idles(w),
            }
            return;
        }
        self.tasks[w as usize].state = State::Idle;
        self.leave_cpu(w);
        self.tasks[w as usize].bound = None;
        match self.start_backlog[q as usize].pop_front() {
            Some((next, cpu)) => self.start_work(w, q, next, cpu),
            None => self.idle_workers[q as usize].push(w, self.tasks[w as usize].home),
        }
        self.apply_wq_actions(q, out);
    }

    /// Tasks the OOM killer of memcg `m` may kill, preferred first: the
    /// configured groups in order (else every task that charged it), the
    /// task with the most pages first (R46: the largest). Never a kworker:
    /// kernel threads are unkillable (`oom_unkillable_task`).
    fn oom_candidates(&self, m: usize) -> Vec<TaskId> {
        let spec = &self.c.memcgs[m];
        let nm = self.memcgs.len();
        let mut v: Vec<(usize, std::cmp::Reverse<u64>, TaskId)> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, k)| k.state != State::Exited && k.killed.is_none())
            .filter(|(_, k)| k.worker_of.is_none())
            .filter_map(|(i, k)| {
                let pages = self.task_pages[i * nm + m];
                let pref = if spec.oom_victims.is_empty() {
                    (pages > 0).then_some(0)
                } else {
                    spec.oom_victims.iter().position(|&g| g == k.group)
                };
                pref.map(|p| (p, std::cmp::Reverse(pages), i as TaskId))
            })
            .collect();
        v.sort();
        v.into_iter().map(|x| x.2).collect()
    }

    /// The OOM killer of memcg `m` kills `v`: it exits at its next step; a
    /// sleep is cut short (killable), a lock wait is not (D state, R47).
    /// The reaper frees its memory after OOM_REAPER_DELAY if it has not
    /// exited by then.
    fn kill(&mut self, v: TaskId, m: u32) {
        let task = &mut self.tasks[v as usize];
        task.killed = Some(m);
        if task.state == State::Sleeping {
            self.queue.set(v as usize, self.now, Ev::Wake);
        }
        let slot = self.tasks.len() + m as usize;
        self.queue.set(slot, self.now + OOM_REAPER_DELAY, Ev::Reap);
    }

    /// A wait or hold slice of `lock` on `t`'s track, from `start` to now.
    fn trace_lock(&mut self, t: TaskId, cat: &'static str, lock: u32, mode: Mode, start: SimTime) {
        let l = &self.c.locks[lock as usize];
        let name = format!(
            "{cat} {} ({})",
            l.name,
            crate::scenario::compile::mode_label(l.kind, mode)
        );
        if let Some(tr) = self.trace.as_mut() {
            tr.slice(t, cat, name, start, self.now);
        }
    }

    /// `t` goes to sleep in `lock`'s wait queue (`asleep`), or has the
    /// lock after waiting: the trace's queue-length counter follows.
    fn trace_queue(&mut self, t: TaskId, lock: u32, asleep: bool) {
        let task = &mut self.tasks[t as usize];
        if task.in_lock_queue == asleep {
            return;
        }
        task.in_lock_queue = asleep;
        if let Some(tr) = self.trace.as_mut() {
            let delta = if asleep { 1 } else { -1 };
            tr.queue(
                lock as usize,
                &self.c.locks[lock as usize].name,
                delta,
                self.now,
            );
        }
    }

    /// A task's name in traces and blame chains: `group[i]`, or
    /// `kworker/<workqueue>/<i>`.
    fn track_name(&self, t: TaskId) -> String {
        let task = &self.tasks[t as usize];
        match task.worker_of {
            Some(q) => format!(
                "kworker/{}/{}",
                self.c.workqueues[q as usize].name, task.index
            ),
            None => self.task_name(t),
        }
    }

    /// Records this run as a trace of `[from, to)` (`--trace`).
    pub fn enable_trace(&mut self, from: SimTime, to: SimTime) {
        let mut tr = crate::trace::Trace::new(from, to, self.c.locks.len());
        for t in 0..self.tasks.len() as TaskId {
            tr.thread(t, &self.track_name(t));
        }
        self.trace = Some(Box::new(tr));
    }

    /// Keeps at most `n` trace events (a trace beside a blame).
    pub fn limit_trace(&mut self, n: usize) {
        if let Some(tr) = self.trace.as_mut() {
            tr.limit_events(n);
        }
    }

    /// The trace recorded so far, if tracing.
    pub fn take_trace(&mut self) -> Option<crate::trace::Trace> {
        self.trace.take().map(|b| *b)
    }

    /// A wait of `t` for `lock` since `since` ended now: traced, and
    /// offered to `--blame`'s picker.
    #[inline(never)]
    fn observe_wait(&mut self, t: TaskId, lock: u32, mode: Mode, stat: StatId, since: SimTime) {
        if self.trace.is_some() {
            self.trace_lock(t, "wait", lock, mode, since);
            self.trace_queue(t, lock, false);
        }
        if let Some(p) = self.picker.as_mut() {
            p.wait(crate::blame::Wait {
                task: t,
                stat,
                lock,
                mode,
                start: since,
                end: self.now,
            });
        }
    }

    /// `--blame`, first run: pick the waits to explain.
    pub fn enable_blame_picking(&mut self, wanted: crate::blame::Wanted) {
        self.picker = Some(Box::new(crate::blame::Picker::new(wanted)));
    }

    /// The picker of the first run.
    pub fn take_picker(&mut self) -> Option<crate::blame::Picker> {
        self.picker.take().map(|b| *b)
    }

    /// `--blame`, later runs: record what the tasks of `focus` did then,
    /// and every wait for and hold of the locks of `convoys`.
    pub fn enable_blame_recording(&mut self, focus: (crate::blame::Focus, crate::blame::Focus)) {
        let idle: Vec<bool> = self.tasks.iter().map(|k| k.state == State::Idle).collect();
        let r = crate::blame::Recorder::new(focus, |t| idle[t], self.tasks.len());
        self.recorder = Some(Box::new(r));
    }

    /// After a recording run: the chains of `waits`, the stretches still
    /// to record, and whether the recorder was cut short.
    pub fn blame_chains(
        &mut self,
        waits: &[crate::blame::Wait],
    ) -> Option<crate::blame::Explained> {
        let mut r = self.recorder.take()?;
        // Holds still open at the end of the run end there.
        for t in 0..self.tasks.len() as TaskId {
            for i in self.hold_slots(t) {
                if let Some((lock, mode)) = held_decode(self.held[i]) {
                    r.hold(t, lock, mode, self.holds[i], self.now);
                }
            }
        }
        r.finish(self.now.max(self.horizon));
        Some(r.explain(waits, &*self))
    }

    /// `t` does `doing` from now on, for `--blame`.
    #[inline]
    fn blame_switch(&mut self, t: TaskId, doing: crate::blame::Doing) {
        if let Some(r) = self.recorder.as_mut() {
            r.switch(t, self.now, doing, 0);
        }
    }

    /// `t` got a CPU: it runs (a kworker, its item's work type).
    fn blame_on_cpu(&mut self, t: TaskId) {
        let work = match self.tasks[t as usize].work {
            Some(id) if self.tasks[t as usize].worker_of.is_some() => self.work_type(id) as u32 + 1,
            _ => 0,
        };
        if let Some(r) = self.recorder.as_mut() {
            r.switch(t, self.now, crate::blame::Doing::OnCpu, work);
        }
    }

    /// `t` leaves its CPU: asleep in a wait queue, in reclaim, preempted,
    /// idle or gone, as its state and `off` say.
    fn blame_off_cpu(&mut self, t: TaskId) {
        use crate::blame::Doing;
        let task = &mut self.tasks[t as usize];
        let off = std::mem::replace(&mut task.off, Doing::Sleep);
        let doing = match task.state {
            State::Blocked => match task.resume {
                Resume::Acquired { lock, mode, .. } | Resume::Retry { lock, mode, .. } => {
                    Doing::Lock { lock, mode }
                }
                Resume::Nothing => off,
            },
            State::Sleeping => off,
            State::Runnable => Doing::Runnable,
            State::Idle => Doing::Idle,
            State::Exited => Doing::Exited,
            State::Running | State::Spinning => Doing::OnCpu,
        };
        self.blame_switch(t, doing);
    }

    /// The locks `t` holds, as `name (mode)`, for reports.
    fn held_names(&self, t: TaskId) -> Vec<String> {
        self.held[self.hold_slots(t)]
            .iter()
            .filter_map(|&h| held_decode(h))
            .map(|(lock, mode)| {
                let l = &self.c.locks[lock as usize];
                format!(
                    "{} ({})",
                    l.name,
                    crate::scenario::compile::mode_label(l.kind, mode)
                )
            })
            .collect()
    }

    /// A killed task exits: it releases its locks (as the syscall unwinds),
    /// frees the pages it charged, and is gone.
    fn exit_killed(&mut self, t: TaskId) {
        let ti = t as usize;
        for i in self.hold_slots(t) {
            if let Some((lock, mode)) = held_decode(self.held[i]) {
                self.held[i] = 0;
                if let Some(r) = self.recorder.as_mut() {
                    r.hold(t, lock, mode, self.holds[i], self.now);
                }
                with_lock!(self, lock, |l, ctx, wakes| l.release(ctx, t, mode, wakes));
                self.apply_wakes(lock);
            }
        }
        let nm = self.memcgs.len();
        for m in 0..nm {
            let pages = std::mem::take(&mut self.task_pages[ti * nm + m]);
            self.memcgs[m].victim_gone(t, pages);
        }
        if let Some(m) = self.tasks[ti].killed {
            self.mem_stats[m as usize][2] += 1;
            if self.memcgs[m as usize].pending_victim().is_none() {
                self.queue.clear(self.tasks.len() + m as usize);
            }
        }
        self.tasks[ti].charging = None;
        self.tasks[ti].state = State::Exited;
        self.leave_cpu(t);
    }

    /// Background release of memcg `m`: `release_rate` pages per second,
    /// applied every tick; the next tick is scheduled in `slot`.
    fn release_tick(&mut self, m: usize, slot: usize) {
        let owed = self.released[m] + self.c.memcgs[m].release_rate * RELEASE_TICK.as_secs_f64();
        let pages = owed.floor();
        self.released[m] = owed - pages;
        self.memcgs[m].uncharge(pages as u64);
        self.queue.set(slot, self.now + RELEASE_TICK, Ev::Release);
    }

    /// The OOM reaper of memcg `m` (R47): the victim has not exited; its
    /// memory is freed anyway and a later OOM may choose another victim.
    fn oom_reap(&mut self, m: usize) {
        let Some(v) = self.memcgs[m].pending_victim() else {
            return;
        };
        let i = v as usize * self.memcgs.len() + m;
        let pages = std::mem::take(&mut self.task_pages[i]);
        self.memcgs[m].victim_gone(v, pages);
        self.mem_stats[m][3] += 1;
    }

    /// Finishes an acquisition for `t`: wait, hold start, counters.
    #[inline(always)]
    fn acquired(&mut self, t: TaskId, lock: u32, mode: Mode, wait: StatId, slot: u8) {
        let since = self.tasks[t as usize].since;
        let waited = self.now.since(since).0;
        self.record(wait, waited);
        if waited > 0 && (self.trace.is_some() || self.picker.is_some()) {
            self.observe_wait(t, lock, mode, wait, since);
        }
        let base = self.tasks[t as usize].hold_base as usize;
        self.holds[base + slot as usize] = self.now;
        self.held[base + slot as usize] = held_code(lock, mode);
        self.acquisitions[lock as usize][mode_index(mode)] += 1;
    }

    /// Task `t` (at a delay step) advances time by `d`, on its CPU or off it
    /// asleep, and will go on at `next`. Returns false for a zero delay (the
    /// task goes on at once).
    #[inline(always)]
    fn delay(&mut self, t: TaskId, d: u64, sleep: bool, next: u32) -> bool {
        let task = &mut self.tasks[t as usize];
        task.pc = next;
        if let Some(log) = &mut self.draw_log {
            log.push((t, d));
        }
        if d == 0 {
            return false;
        }
        let at = self.now + sim::Dur(d);
        if let Some(tr) = self.trace.as_mut() {
            let name = match (sleep, task.off) {
                (true, crate::blame::Doing::Reclaim { .. }) => "memcg reclaim",
                (true, crate::blame::Doing::Throttle { .. }) => "memory.high throttle",
                (true, _) => "sleep",
                (false, _) => "cpu",
            };
            let on = (!sleep && task.cpu != Cpu::ANY).then_some(task.cpu.0);
            tr.slice_on_cpu(t, name.into(), self.now, at, on);
        }
        if sleep {
            task.state = State::Sleeping;
            self.schedule(t, at, Ev::Wake);
            self.leave_cpu(t);
            // Said once, for this sleep (blame and the trace read it).
            self.tasks[t as usize].off = crate::blame::Doing::Sleep;
        } else {
            task.in_burst = true;
            task.burst_start = self.now;
            task.burst_end = at;
            self.schedule(t, at, Ev::Run);
        }
        true
    }

    /// Runs task `t` (which is on a CPU) until it blocks, sleeps, burns CPU
    /// time or exits.
    #[inline(always)]
    fn run_task(&mut self, t: TaskId) -> Result<(), RunError> {
        let ti = t as usize;
        self.current = t;
        let task = &mut self.tasks[ti];
        task.state = State::Running;
        task.in_burst = false;
        if task.pool != PoolState::No && !self.pool_worker_runs(t) {
            return Ok(());
        }
        let task = &mut self.tasks[ti];
        if task.remaining > 0 {
            // Back on a CPU after a preemption: finish the burst.
            let d = std::mem::take(&mut task.remaining);
            task.in_burst = true;
            task.burst_start = self.now;
            task.burst_end = self.now + sim::Dur(d);
            self.schedule(t, self.now + sim::Dur(d), Ev::Run);
            return Ok(());
        }
        match self.tasks[ti].resume {
            Resume::Nothing => {}
            Resume::Acquired {
                lock,
                mode,
                wait,
                slot,
            } => {
                self.tasks[ti].resume = Resume::Nothing;
                self.acquired(t, lock, mode, wait, slot);
            }
            Resume::Retry {
                lock,
                mode,
                wait,
                slot,
            } => {
                let r = with_lock!(self, lock, |l, ctx, wakes| l.retry(ctx, t, mode, wakes));
                self.apply_wakes(lock);
                match r {
                    Acquire::Granted => {
                        self.tasks[ti].resume = Resume::Nothing;
                        self.acquired(t, lock, mode, wait, slot);
                    }
                    Acquire::Queued => {
                        self.tasks[ti].resume = Resume::Acquired {
                            lock,
                            mode,
                            wait,
                            slot,
                        };
                        self.tasks[ti].state = State::Blocked;
                        self.leave_cpu(t);
                        return Ok(());
                    }
                    Acquire::Spin { until } => {
                        self.tasks[ti].resume = Resume::Acquired {
                            lock,
                            mode,
                            wait,
                            slot,
                        };
                        self.start_spin(t, until);
                        return Ok(());
                    }
                }
            }
        }
        // A kill lands while the victim is not executing (only one task runs
        // at a time), so it is seen here, when the victim next runs, after
        // it took any lock it was granted (it exits releasing that too).
        if self.tasks[ti].killed.is_some() {
            self.exit_killed(t);
            return Ok(());
        }
        // A task's step boundary holding no lock is a preemption point (the
        // return to user space); a kworker's is not (a work item is kernel
        // code throughout); under PREEMPT_FULL every boundary is.
        // The boundary test before the slow part of resched_due: it is
        // cheaper, and most steps of a task that holds a lock end there.
        if self.may_resched
            && (self.c.preempt_full || self.at_user_boundary(t))
            && self.resched_due_slow(t)
        {
            let pc = self.tasks[ti].pc;
            self.yield_cpu(t, pc);
            return Ok(());
        }
        let c: &'c Compiled = self.c;
        let code = &c.groups[self.tasks[ti].group as usize].code;
        let mut pc = self.tasks[ti].pc;
        // Steps taken at this instant, counted on back edges only (a program
        // can only run forever at one instant through a loop or a repeat).
        let mut steps: u64 = 0;
        loop {
            if steps > self.limits.max_steps_per_instant {
                let g = &self.c.groups[self.tasks[ti].group as usize];
                return Err(RunError::Livelock {
                    task: self.task_name(t),
                    location: g
                        .origins
                        .get(pc as usize)
                        .map(|o| o.location.clone())
                        .unwrap_or_default(),
                    at: self.now,
                    holding: self.held_names(t),
                });
            }
            match code[pc as usize] {
                Instr::QueueWork {
                    wq,
                    work,
                    key,
                    delay,
                } => {
                    pc += 1;
                    let id = self.work_id(t, work, key);
                    let cpu = self.wq_cpu(t, wq);
                    let mut out = std::mem::take(&mut self.wq_actions);
                    let now = self.now;
                    match delay {
                        None => {
                            self.wqs[wq as usize].queue_work(now, id, cpu, &mut out);
                        }
                        Some(d) => {
                            let d = sim::Dur(c.dists[d as usize].sample(&mut self.tasks[ti].rng));
                            self.wqs[wq as usize].queue_delayed_work(now, id, cpu, d, &mut out);
                        }
                    }
                    self.apply_wq_actions(wq, out);
                }
                Instr::ModDelayedWork {
                    wq,
                    work,
                    key,
                    delay,
                } => {
                    pc += 1;
                    let id = self.work_id(t, work, key);
                    let cpu = self.wq_cpu(t, wq);
                    let d = sim::Dur(c.dists[delay as usize].sample(&mut self.tasks[ti].rng));
                    let mut out = std::mem::take(&mut self.wq_actions);
                    self.wqs[wq as usize].mod_delayed_work(self.now, id, cpu, d, &mut out);
                    self.apply_wq_actions(wq, out);
                }
                Instr::CancelWorkSync { wq, work, key } => {
                    pc += 1;
                    let id = self.work_id(t, work, key);
                    let mut out = std::mem::take(&mut self.wq_actions);
                    self.wqs[wq as usize].cancel_delayed_work(self.now, id, &mut out);
                    self.apply_wq_actions(wq, out);
                    if self.wqs[wq as usize].work_running(id) {
                        self.work_waiters.entry((wq, id.0)).or_default().push(t);
                        self.block_waiting(t, pc, crate::blame::Doing::WorkWait { wq });
                        return Ok(());
                    }
                }
                Instr::Count { counter } => {
                    pc += 1;
                    self.user_counts[counter as usize] += 1;
                }
                Instr::MightResched => {
                    pc += 1;
                    if self.c.voluntary && self.resched_due(t) {
                        self.yield_cpu(t, pc);
                        return Ok(());
                    }
                }
                Instr::SetKey { lo, span, next } => {
                    pc += 1;
                    let k = match next {
                        _ if span == 0 => 0,
                        Some(n) => {
                            let c = &mut self.key_next[n as usize];
                            *c = c.wrapping_add(1);
                            (*c - 1) % span
                        }
                        None => sim::rng::below(&mut self.tasks[ti].rng, span),
                    };
                    self.tasks[ti].self_key = lo + k;
                }
                Instr::FlushWorkqueue { wq } => {
                    pc += 1;
                    match self.wqs[wq as usize].flush_workqueue(self.now) {
                        models::workqueue::FlushOutcome::Done => {}
                        models::workqueue::FlushOutcome::Wait(f) => {
                            self.flushers.entry((wq, f.0)).or_default().push(t);
                            self.block_waiting(t, pc, crate::blame::Doing::Flush { wq });
                            return Ok(());
                        }
                    }
                }
                Instr::Charge { memcg, pages } => {
                    if self.charge(t, pc, memcg, pages) {
                        return Ok(());
                    }
                    pc += 1;
                }
                Instr::Uncharge { memcg, pages } => {
                    pc += 1;
                    let i = ti * self.memcgs.len() + memcg as usize;
                    let n = pages.min(self.task_pages[i]);
                    self.task_pages[i] -= n;
                    self.memcgs[memcg as usize].uncharge(n);
                }
                Instr::Delay { dist, sleep, next } => {
                    let d = c.dists[dist as usize].sample(&mut self.tasks[ti].rng);
                    if self.delay(t, d, sleep, next) {
                        return Ok(());
                    }
                    steps += u64::from(next <= pc);
                    pc = next;
                }
                Instr::DelayExp { mean, sleep, next } => {
                    let d = sim::dist::sample_exp(mean, &mut self.tasks[ti].rng);
                    if self.delay(t, d, sleep, next) {
                        return Ok(());
                    }
                    steps += u64::from(next <= pc);
                    pc = next;
                }
                Instr::DelayConst { ns, sleep, next } => {
                    if self.delay(t, ns, sleep, next) {
                        return Ok(());
                    }
                    steps += u64::from(next <= pc);
                    pc = next;
                }
                Instr::Acquire {
                    lock,
                    mode,
                    wait,
                    slot,
                    dynamic,
                    site,
                } => {
                    // might_sleep() in down_*/mutex_lock: a voluntary
                    // preemption point, even holding other locks.
                    if self.c.voluntary && !self.tasks[ti].atomic_done && self.resched_due(t) {
                        self.yield_cpu(t, pc);
                        return Ok(());
                    }
                    if let Some(site) = site {
                        if !self.tasks[ti].atomic_done {
                            self.user_counts[site as usize] += 1;
                        }
                    }
                    let lock = if dynamic {
                        lock + self.tasks[ti].self_key
                    } else {
                        lock
                    };
                    if !self.tasks[ti].atomic_done {
                        self.tasks[ti].since = self.now;
                    }
                    if self.line_atomic(t, lock) > 0 {
                        self.tasks[ti].pc = pc;
                        return Ok(());
                    }
                    pc += 1;
                    let r = with_lock!(self, lock, |l, ctx, wakes| l.acquire(ctx, t, mode, wakes));
                    self.apply_wakes(lock);
                    match r {
                        Acquire::Granted => self.acquired(t, lock, mode, wait, slot),
                        Acquire::Spin { until } => {
                            self.contentions[lock as usize][mode_index(mode)] += 1;
                            let task = &mut self.tasks[ti];
                            task.pc = pc;
                            task.resume = Resume::Acquired {
                                lock,
                                mode,
                                wait,
                                slot,
                            };
                            self.start_spin(t, until);
                            return Ok(());
                        }
                        Acquire::Queued => {
                            self.contentions[lock as usize][mode_index(mode)] += 1;
                            if self.trace.is_some() {
                                self.trace_queue(t, lock, true);
                            }
                            let task = &mut self.tasks[ti];
                            task.pc = pc;
                            task.state = State::Blocked;
                            task.resume = Resume::Acquired {
                                lock,
                                mode,
                                wait,
                                slot,
                            };
                            self.leave_cpu(t);
                            return Ok(());
                        }
                    }
                }
                Instr::Release {
                    lock,
                    mode,
                    hold,
                    slot,
                    dynamic,
                } => {
                    let lock = if dynamic {
                        lock + self.tasks[ti].self_key
                    } else {
                        lock
                    };
                    if self.line_atomic(t, lock) > 0 {
                        self.tasks[ti].pc = pc;
                        return Ok(());
                    }
                    pc += 1;
                    let base = self.tasks[ti].hold_base as usize;
                    let start = self.holds[base + slot as usize];
                    let held = self.now.since(start).0;
                    self.held[base + slot as usize] = 0;
                    self.record(hold, held);
                    if self.trace.is_some() {
                        self.trace_lock(t, "hold", lock, mode, start);
                    }
                    if let Some(r) = self.recorder.as_mut() {
                        r.hold(t, lock, mode, start, self.now);
                    }
                    with_lock!(self, lock, |l, ctx, wakes| l.release(ctx, t, mode, wakes));
                    self.apply_wakes(lock);
                }
                Instr::Downgrade {
                    lock,
                    slot,
                    hold,
                    dynamic,
                } => {
                    let lock = if dynamic {
                        lock + self.tasks[ti].self_key
                    } else {
                        lock
                    };
                    pc += 1;
                    let base = self.tasks[ti].hold_base as usize;
                    let held = self.now.since(self.holds[base + slot as usize]).0;
                    self.record(hold, held);
                    self.holds[base + slot as usize] = self.now;
                    self.held[base + slot as usize] = held_code(lock, Mode::Read);
                    with_lock!(self, lock, |l, ctx, wakes| l.downgrade(ctx, t, wakes));
                    self.apply_wakes(lock);
                }
                Instr::SpanBegin { slot } => {
                    let base = self.tasks[ti].span_base as usize;
                    self.spans[base + slot as usize] = self.now;
                    pc += 1;
                }
                Instr::SpanEnd { stat, slot } => {
                    pc += 1;
                    let base = self.tasks[ti].span_base as usize;
                    let start = self.spans[base + slot as usize];
                    let d = self.now.since(start).0;
                    self.record(stat, d);
                    if let Some(tr) = self.trace.as_mut() {
                        let name = self.c.stats[stat as usize].subject.clone();
                        tr.slice(t, "span", name, start, self.now);
                    }
                }
                Instr::RepeatBegin { count, end, depth } => {
                    if count == 0 {
                        pc = end;
                    } else {
                        let base = self.tasks[ti].rep_base as usize;
                        self.reps[base + depth as usize] = count;
                        pc += 1;
                    }
                }
                Instr::RepeatEnd { begin, depth } => {
                    let base = self.tasks[ti].rep_base as usize;
                    let left = &mut self.reps[base + depth as usize];
                    *left -= 1;
                    pc = if *left > 0 { begin + 1 } else { pc + 1 };
                    steps += 1;
                }
                Instr::WithProb { p, end } => {
                    let u = sim::rng::unit(&mut self.tasks[ti].rng);
                    pc = if u < p { pc + 1 } else { end };
                }
                Instr::IfWorkBusy { wq, work, key, end } => {
                    let id = self.work_id(t, work, key);
                    pc = if self.wqs[wq as usize].work_busy(id) {
                        pc + 1
                    } else {
                        end
                    };
                }
                Instr::Jump { to } => {
                    pc = to;
                    steps += 1;
                }
                Instr::Exit => {
                    let task = &mut self.tasks[ti];
                    task.pc = pc;
                    if let (Some(_), Some(id)) = (task.worker_of, task.work.take()) {
                        let q = task.item_wq;
                        self.work_done(t, q, id);
                        return Ok(());
                    }
                    task.state = State::Exited;
                    self.leave_cpu(t);
                    return Ok(());
                }
            }
        }
    }

    /// Runs until the horizon (events at times `< duration`), calling
    /// `progress` now and then with the simulated time reached.
    pub fn run(&mut self, progress: &mut dyn FnMut(SimTime)) -> Result<(), RunError> {
        for t in 0..self.tasks.len() as TaskId {
            if self.tasks[t as usize].state != State::Idle {
                self.make_runnable(t);
            }
        }
        let release_base = self.tasks.len() + self.memcgs.len() + self.timer_wq.len();
        for (m, spec) in self.c.memcgs.iter().enumerate() {
            if spec.release_rate > 0.0 {
                self.queue
                    .set(release_base + m, SimTime::ZERO + RELEASE_TICK, Ev::Release);
            }
        }
        while let Some((at, t, ev)) = self.queue.pop() {
            if t >= self.tasks.len() {
                if at >= self.horizon {
                    self.now = self.horizon;
                    return Ok(());
                }
                self.now = at;
                // A timer, the reaper or a release tick: no task acts.
                self.current = NONE;
                let k = t - self.tasks.len();
                let nitems = self.timer_wq.len();
                if k < self.memcgs.len() {
                    self.oom_reap(k);
                } else if k >= self.memcgs.len() + nitems {
                    self.release_tick(k - self.memcgs.len() - nitems, t);
                } else {
                    let item = (k - self.memcgs.len()) as u32;
                    let q = self.timer_wq[item as usize];
                    let mut out = std::mem::take(&mut self.wq_actions);
                    let work = models::workqueue::WorkId(item);
                    if !self.wqs[q as usize].delayed_timer_fired(at, work, &mut out) {
                        // A lazily re-armed timer (see ArmTimer): on to
                        // its current expiry. A killed one is dropped.
                        if let Some(e) = self.wqs[q as usize].timer_expires(work) {
                            self.queue.set(t, e, Ev::Timer);
                        }
                    }
                    self.apply_wq_actions(q, out);
                }
                continue;
            }
            let t = t as TaskId;
            if at >= self.horizon {
                self.now = self.horizon;
                return Ok(());
            }
            self.now = at;
            self.events += 1;
            if self.events >= self.next_check {
                // Every 2^20 events, and exactly at the event limit.
                if self.events >= self.limits.max_events {
                    return Err(RunError::EventLimit {
                        limit: self.limits.max_events,
                        at,
                    });
                }
                progress(at);
                self.next_check = ((self.events | 0xF_FFFF) + 1).min(self.limits.max_events);
            }
            match ev {
                Ev::Run => self.run_task(t)?,
                Ev::SpinEnd => self.spin_end(t)?,
                Ev::Wake => {
                    // A timer wakes the sleeper, not a task.
                    self.current = NONE;
                    // The sleeper runs at once if a CPU is free: no second event.
                    if self.wakeup(t, true) {
                        self.run_task(t)?;
                    }
                }
                Ev::Reap | Ev::Timer | Ev::Release => {
                    unreachable!("reaper, timer and release events live in their own slots")
                }
                Ev::Ready => {
                    if let Some(cpu) = self.take_cpu(t) {
                        self.give_cpu(t, cpu);
                        self.run_task(t)?;
                    }
                }
            }
        }
        // Nothing left to happen before the horizon.
        let waiters: Vec<String> = (0..self.tasks.len() as TaskId)
            .filter(|&t| self.tasks[t as usize].state == State::Blocked)
            .take(20)
            .map(|t| {
                let task = &self.tasks[t as usize];
                let g = &self.c.groups[task.group as usize];
                let at = g.origins.get(task.pc.saturating_sub(1) as usize);
                let what = match task.resume {
                    Resume::Acquired { lock, mode, .. } | Resume::Retry { lock, mode, .. } => {
                        let l = &self.c.locks[lock as usize];
                        format!(
                            "{} ({})",
                            l.name,
                            crate::scenario::compile::mode_label(l.kind, mode)
                        )
                    }
                    Resume::Nothing => "a flush or a work item (workqueue)".into(),
                };
                format!(
                    "{} blocked on {what} since t={} at {}",
                    self.task_name(t),
                    task.since,
                    at.map(|o| o.location.as_str()).unwrap_or("?")
                )
            })
            .collect();
        if !waiters.is_empty() {
            return Err(RunError::Deadlock {
                at: self.now,
                waiters,
            });
        }
        self.now = self.horizon;
        Ok(())
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    /// The results of this replication.
    pub fn result(self) -> VariantResult {
        let c = self.c;
        let horizon = self.horizon;
        let series = c
            .stats
            .iter()
            .zip(self.stats)
            .map(|(spec, mut st)| {
                st.windows.extend_to(horizon);
                Series {
                    metric: spec.metric,
                    subject: spec.subject.clone(),
                    hist: st.hist.into_hist(),
                    windows: st.windows,
                }
            })
            .collect();
        // Lock counters per lock class, as /proc/lock_stat shows them: the
        // instances of a family (`pidlist_mutex[3]`) add up under its name.
        let mut by_class: Vec<(String, u64)> = Vec::new();
        let mut add = |class: &str, name: &str, value: u64| {
            let subject = format!("{class}/{name}");
            match by_class.iter_mut().rev().find(|(s, _)| *s == subject) {
                Some((_, v)) => *v += value,
                None => by_class.push((subject, value)),
            }
        };
        for (i, l) in c.locks.iter().enumerate() {
            let class = l.name.split('[').next().unwrap_or(&l.name);
            let modes: &[(Mode, &str)] = match l.kind {
                LockKind::Rwsem => &[(Mode::Read, "read_"), (Mode::Write, "write_")],
                LockKind::Mutex => &[(Mode::Write, "")],
            };
            for &(m, prefix) in modes {
                let acquisitions = self.acquisitions[i][mode_index(m)];
                let contentions = self.contentions[i][mode_index(m)];
                add(class, &format!("{prefix}acquisitions"), acquisitions);
                add(class, &format!("{prefix}contentions"), contentions);
            }
            if l.line.is_some() {
                add(class, "line_transfers", self.line_transfers[i]);
                add(class, "line_wait_ns", self.line_wait_ns[i]);
            }
            for (name, v) in self.locks[i].counters() {
                add(class, name, v);
            }
        }
        let mut counters: Vec<Counter> = by_class
            .into_iter()
            .map(|(subject, value)| Counter { subject, value })
            .collect();
        for (name, &v) in c.counters.iter().zip(&self.user_counts) {
            counters.push(Counter {
                subject: name.clone(),
                value: v,
            });
        }
        for (q, wq) in self.wqs.iter().enumerate() {
            for (k, v) in wq.counters() {
                counters.push(Counter {
                    subject: format!("wq/{}/{k}", c.workqueues[q].name),
                    value: v,
                });
            }
        }
        if let Some(p) = &self.pools {
            for (k, v) in [
                ("kicks", p.kicks),
                ("keep_working", p.keep_working),
                ("idle_wakeups", p.idle_wakeups),
            ] {
                counters.push(Counter {
                    subject: format!("worker_pools/{k}"),
                    value: v,
                });
            }
        }
        for (m, g) in self.memcgs.iter().enumerate() {
            let name = &c.memcgs[m].name;
            for (k, v) in g.counters() {
                counters.push(Counter {
                    subject: format!("memcg/{name}/{k}"),
                    value: v,
                });
            }
            let [reclaim, throttle, exits, reaps] = self.mem_stats[m];
            for (k, v) in [
                ("reclaim_ns", reclaim),
                ("throttle_ns", throttle),
                ("oom_exits", exits),
                ("oom_reaps", reaps),
            ] {
                counters.push(Counter {
                    subject: format!("memcg/{name}/{k}"),
                    value: v,
                });
            }
            counters.push(Counter {
                subject: format!("memcg/{name}/usage_pages_at_end"),
                value: g.usage(),
            });
        }
        if !self.cpu.is_unlimited() {
            for (name, v) in self.cpu.counters() {
                counters.push(Counter {
                    subject: format!("cpu/{name}"),
                    value: v,
                });
            }
            if self.c.preempt_full || self.c.wake_placement.preempts() {
                counters.push(Counter {
                    subject: "cpu/preemptions".into(),
                    value: self.preemptions,
                });
            }
            if self.c.timeslice.is_some() || self.c.wake_placement.preempts() {
                counters.push(Counter {
                    subject: "cpu/resched_yields".into(),
                    value: self.slice_yields,
                });
            }
        }
        let mut r = VariantResult {
            variant: c.variant.clone(),
            series,
            counters,
            horizon,
            events: self.events,
            replications: 1,
        };
        r.normalize();
        r
    }
}

impl crate::blame::Names for World<'_> {
    fn task(&self, t: u32) -> String {
        self.track_name(t)
    }

    fn lock(&self, lock: u32, mode: Mode) -> String {
        let l = &self.c.locks[lock as usize];
        format!(
            "{} ({})",
            l.name,
            crate::scenario::compile::mode_label(l.kind, mode)
        )
    }

    fn memcg(&self, m: u32) -> String {
        format!("memcg {}", self.c.memcgs[m as usize].name)
    }

    fn workqueue(&self, q: u32) -> String {
        self.c.workqueues[q as usize].name.clone()
    }

    fn work(&self, w: u32) -> String {
        self.c.works[w as usize].name.clone()
    }

    fn stat(&self, s: u32) -> String {
        let st = &self.c.stats[s as usize];
        format!("{} {}", st.metric.as_str(), st.subject)
    }
}
