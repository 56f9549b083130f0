//! The world: tasks running compiled programs against locks and CPUs.
//!
//! One run is single-threaded (ARCHITECTURE.md, invariants). The world owns the
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
//!
//! This module holds the world's state, its construction and the event
//! loop; each concern the world drives has a submodule of `impl World`
//! methods: `interp` (programs), `cpu`, `locks`, `workqueues`,
//! `memcg`, `observe` (trace and blame) and `results`. What a run records
//! for its observers has modules of its own: [`trace`] (`--trace`) and
//! [`recorder`] (`--blame`).

use crate::program::{
    Compiled, CounterId, DistId, GroupId, GroupProg, Instr, KeyCounterId, StatId,
};
use crate::program::{Pc, WakePlacement, WorkTypeId};
use models::locks::AnyLock;
use models::sched::CpuPool;
use models::sched::NICE_0_WEIGHT;
use models::workqueue::{FlushId, IdleKworkers, PoolState, WorkerPools};
use models::{Acquire, LockCtx, LockKind, LockPolicy, Mode, TaskView, Wake};
use models::{CpuId, LockId, MemcgId, TaskId, WorkId, WqId};
use output::{Counter, Series, VariantResult};
use sim::rng::{stream, Stream};
use sim::stats::{HdrCounts, Windows};
use sim::{Dur, SimTime, SlotQueue};
use std::fmt;
use typed_index_collections::{ti_vec, TiSlice, TiVec};

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

/// `OOM_REAPER_DELAY` = 2 HZ jiffies (R47), in seconds.
const OOM_REAPER_DELAY_HZ: u64 = 2;

/// No task (an idle CPU in `World::running_on`, no current task).
const NONE: TaskId = TaskId(u32::MAX);

/// Who wrote a lock word's cache line last: a CPU or, with unlimited
/// CPUs, a task (each task its own CPU).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum LineOwner {
    Nobody,
    Cpu(CpuId),
    Task(TaskId),
}

/// A hold slot's content: 0 for none, else the lock and its mode.
fn held_code(lock: LockId, mode: Mode) -> u32 {
    ((lock.0 + 1) << 1) | u32::from(mode == Mode::Write)
}

fn held_decode(code: u32) -> Option<(LockId, Mode)> {
    (code != 0).then(|| {
        (
            LockId((code >> 1) - 1),
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
        lock: LockId,
        mode: Mode,
        wait: StatId,
        slot: u8,
    },
    /// It was woken to try again (`Wake::Retry`).
    Retry {
        lock: LockId,
        mode: Mode,
        wait: StatId,
        slot: u8,
    },
}

impl Resume {
    /// The lock, mode and wait statistic of the lock request it finishes,
    /// if any: the task asked for that lock and has not yet run holding it.
    fn lock_wait(self) -> Option<(LockId, Mode, StatId)> {
        match self {
            Resume::Acquired {
                lock, mode, wait, ..
            }
            | Resume::Retry {
                lock, mode, wait, ..
            } => Some((lock, mode, wait)),
            Resume::Nothing => None,
        }
    }
}

struct Task {
    group: GroupId,
    index: u32,
    pc: Pc,
    cpu: CpuId,
    state: State,
    resume: Resume,
    /// When the current lock request, flush or wait for a work item was
    /// made.
    since: SimTime,
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
    /// Burst time left after a preemption (zero: none).
    remaining: Dur,
    /// When the task last got a CPU (its time slice started).
    on_cpu_since: SimTime,
    /// The CPU a per-CPU kworker is bound to for its current item.
    bound: Option<CpuId>,
    /// When the task began to wait for a CPU (until it gets one), and when
    /// a kworker began its item (for traces).
    queued_at: Option<SimTime>,
    /// The CPU a per-CPU kworker last ran an item on.
    home: Option<CpuId>,
    work_start: SimTime,
    /// Asleep in a lock's wait queue (counted in the trace's queue length).
    in_lock_queue: bool,
    /// Why it is about to leave its CPU asleep, when a lock wait does not
    /// say (reclaim, throttle, flush, work): for `--blame`.
    off: Doing,
    /// A memcg charge in progress across reclaim attempts (R45).
    charging: Option<(MemcgId, models::memcg::Charge)>,
    /// Draws of memcg reclaim (time, success), apart from the program's.
    mem_rng: Option<Box<Stream>>,
    /// Pages over memory.high not yet paid for (R48).
    over_high: u64,
    /// Killed by the OOM killer of this memcg; exits at its next step.
    killed: Option<MemcgId>,
    /// What `self` means in a work key: the task's index in its group, or
    /// a kworker's current item's instance.
    self_key: u32,
    /// A kworker's workqueue, and the item it runs.
    worker_of: Option<WqId>,
    /// A kworker not yet created: its first item waits for its creation.
    cold: bool,
    /// Uses of `[seq]` work keys so far.
    seq: u32,
    work: Option<WorkId>,
    /// The workqueue `work` was queued on (a pool kworker runs items of
    /// every per-CPU workqueue, R37).
    item_wq: WqId,
    /// Where a kworker of a per-CPU pool is in R37's accounting.
    pool: PoolState,
    /// The atomic on the current lock step's cache line is done (the step
    /// waited for the line and now takes effect).
    atomic_done: bool,
    /// Where this task's hold, span and repeat slots are in the world's
    /// slot tables.
    slots: SlotBases,
}

/// Where a task's slots begin in one of the world's per-task slot tables
/// (`holds` and `held`, `spans`, `reps`): slot `s` of its program is
/// entry `base + s`. Each task has a run of each table of its own, one
/// entry per lock its program can hold at once, per span open at once
/// and per repeat nested (the compiler's counts, at most 255 each; a
/// kworker's are the largest of the work programs').
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct SlotBase(u32);

impl SlotBase {
    /// The table entry of the task's slot `slot`.
    #[inline(always)]
    fn at(self, slot: u8) -> usize {
        self.index() + usize::from(slot)
    }

    /// The table entries of the task's first `n` slots.
    #[inline]
    fn range(self, n: u8) -> std::ops::Range<usize> {
        self.index()..self.at(n)
    }

    /// The task's first entry (the only cast of slot arithmetic: a u32
    /// keeps the task small, and every table index fits one).
    #[inline(always)]
    fn index(self) -> usize {
        self.0 as usize
    }

    /// Where the next task's slots begin, after this task's `n`.
    fn after(self, n: u8) -> SlotBase {
        SlotBase(
            (self.0.checked_add(u32::from(n))).expect("slot tables are bounded by the task limit"),
        )
    }
}

/// A task's slot bases in the three tables.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct SlotBases {
    hold: SlotBase,
    span: SlotBase,
    rep: SlotBase,
}

impl SlotBases {
    const ZERO: SlotBases = SlotBases {
        hold: SlotBase(0),
        span: SlotBase(0),
        rep: SlotBase(0),
    };

    /// The next task's bases, after a task with `hold`, `span` and `rep`
    /// slots.
    fn after(self, (hold, span, rep): (u8, u8, u8)) -> SlotBases {
        SlotBases {
            hold: self.hold.after(hold),
            span: self.span.after(span),
            rep: self.rep.after(rep),
        }
    }
}

/// Whether workqueue `wq`'s items run on the per-CPU worker pools (R37):
/// a per-CPU workqueue, with a limited number of CPUs.
fn runs_on_pools(c: &Compiled, wq: &crate::program::WorkqueueSpec) -> bool {
    c.cpus.is_some() && matches!(wq.kind, models::workqueue::WqKind::PerCpu { .. })
}

impl Task {
    /// A task of `group` (or a kworker, whose group changes per item) with
    /// its streams keyed by `name` and `index`, and its slot bases. Its
    /// program's stream goes to `rngs`, beside the tasks: a stream is 320
    /// bytes, and in the task it spread the fields that every event reads
    /// over more cache lines.
    fn new(
        c: &Compiled,
        (seed, rep): (u64, u64),
        name: &str,
        group: GroupId,
        index: u32,
        slots: SlotBases,
        rngs: &mut TiVec<TaskId, Stream>,
    ) -> Task {
        let own = |kind: &str| stream(seed, rep, &format!("{kind}/{name}"), u64::from(index));
        rngs.push(own("task"));
        Task {
            group,
            index,
            pc: Pc::START,
            cpu: CpuId::ANY,
            state: State::Runnable,
            resume: Resume::Nothing,
            since: SimTime::ZERO,
            rt: c.groups.get(group).is_some_and(|g| g.rt),
            sched: c.wake_latency.as_ref().map(|_| Box::new(own("sched"))),
            burst_start: SimTime::ZERO,
            burst_end: SimTime::ZERO,
            in_burst: false,
            remaining: Dur::ZERO,
            on_cpu_since: SimTime::ZERO,
            bound: None,
            queued_at: None,
            home: None,
            work_start: SimTime::ZERO,
            in_lock_queue: false,
            off: Doing::Sleep,
            atomic_done: false,
            charging: None,
            mem_rng: (!c.memcgs.is_empty()).then(|| Box::new(own("memcg"))),
            over_high: 0,
            killed: None,
            self_key: index,
            worker_of: None,
            item_wq: WqId(0),
            pool: PoolState::No,
            cold: false,
            seq: 0,
            work: None,
            slots,
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
    pub max_sim_time: Dur,
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
            max_sim_time: Dur::from_secs(366 * 24 * 3600),
            max_memory: 8 << 30,
            max_tasks: sim::SlotQueue::<(), 20>::MAX_SLOTS as u64,
        }
    }
}

/// Bytes a run of `c` needs, roughly: the task table, locks, work items,
/// one histogram per reported series and, when the run reaches its end,
/// a bin per window of each series (1 ms windows over a long run are
/// most of it).
pub fn estimated_memory(c: &Compiled) -> u64 {
    let per_task = |g: &crate::program::GroupProg| {
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
        + locks * (std::mem::size_of::<models::locks::AnyLock>() as u64 + 64)
        + series * 64 * 1024
        + series
            .saturating_mul(c.duration.0.div_ceil(c.window.0.max(1)))
            .saturating_mul(std::mem::size_of::<sim::stats::WindowBin>() as u64)
}

/// A byte count as the limit messages print it: MiB, or KiB below one.
fn mib(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{} KiB", bytes.div_ceil(1 << 10))
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

/// Checks a compiled scenario against the limits before anything is
/// allocated for it.
pub fn check_limits(c: &Compiled, limits: &Limits) -> Result<(), RunError> {
    if c.duration > limits.max_sim_time {
        return Err(RunError::TooLarge {
            what: "simulated duration".into(),
            value: c.duration.to_string(),
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
            value: mib(mem),
            limit: format!("{} (--max-memory)", mib(limits.max_memory)),
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
    /// Tasks that wait for each other's locks in a cycle while the rest
    /// of the run goes on: `tasks` lists the cycle, each waiting for a
    /// lock the next one holds; `at` is when the last of them began to.
    LockCycle {
        at: SimTime,
        tasks: Vec<String>,
    },
    /// Events without end at one instant, spread over tasks (each task's
    /// own steps stay under the limit): a work item that queues itself,
    /// tasks that hand a lock back and forth.
    InstantLivelock {
        events: u64,
        at: SimTime,
        /// The task of the last event, and where its program was.
        task: String,
        location: String,
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
            RunError::LockCycle { at, tasks } => write!(
                f,
                "deadlock at t={at}: tasks wait for each other's locks in a cycle, forever \
                 (the rest of the run went on around them):\n  {}",
                tasks.join("\n  ")
            ),
            RunError::EventLimit { limit, at } => write!(
                f,
                "stopped after {limit} events at simulated t={at}: the event limit \
                 (--max-events); shorten the duration or raise the limit"
            ),
            RunError::InstantLivelock {
                events,
                at,
                task,
                location,
            } => write!(
                f,
                "livelock: more than {events} events at t={at} without advancing simulated time \
                 (the last one task {task}'s, at {location}): a work item that queues itself, or \
                 tasks that wake each other, with no `cpu` or `sleep` step between"
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
    user_counts: TiVec<CounterId, u64>,
    /// Uses of each `key next` step so far (a cgroup id allocator each).
    key_next: TiVec<KeyCounterId, u32>,
    wqs: TiVec<WqId, models::workqueue::Workqueue>,
    idle_workers: TiVec<WqId, IdleKworkers>,
    /// The per-CPU worker pools that run per-CPU workqueues' items, with
    /// limited CPUs (R37).
    pools: Option<WorkerPools>,
    /// Items a workqueue started while all its kworkers were busy (not
    /// for per-CPU workqueues when pools run them: their worklists are).
    start_backlog: TiVec<WqId, std::collections::VecDeque<(WorkId, CpuId)>>,
    /// The workqueue of each item's armed timer.
    timer_wq: TiVec<WorkId, WqId>,
    /// Tasks waiting in `flush_workqueue`, by (workqueue, flush).
    flushers: std::collections::BTreeMap<(WqId, FlushId), Vec<TaskId>>,
    /// Tasks waiting in `cancel_delayed_work_sync` for a running item.
    work_waiters: std::collections::BTreeMap<(WqId, WorkId), Vec<TaskId>>,
    wq_actions: Vec<models::workqueue::Action>,
    memcgs: TiVec<MemcgId, models::memcg::Memcg>,
    /// Background release owed but not yet applied (fractional pages).
    released: TiVec<MemcgId, f64>,
    /// Pages each task has charged to each memcg, at
    /// [`World::page_slot`]: `task * memcgs + m`.
    task_pages: Vec<u64>,
    /// Per memcg: time in reclaim and throttled, OOM exits and reaps.
    mem_stats: TiVec<MemcgId, MemStats>,
    /// Per task, where its reclaim attempt is when a memcg returns pages
    /// at an attempt's midpoint (`reclaim_frees = "during"`); empty if
    /// none does.
    mid_reclaim: TiVec<TaskId, MidReclaim>,
    /// Each lock word's cache line: who wrote it last and when the atomic
    /// in progress on it completes.
    lines: TiVec<LockId, (LineOwner, SimTime)>,
    /// Each lock's cache-line costs (transfer, local), if modelled: a
    /// compact copy of the compiled locks' `line`, read at every atomic.
    /// Empty when no lock has the model: then every atomic reads only the
    /// length, not an entry of an array as long as the lock instances.
    line_costs: TiVec<LockId, Option<(Dur, Dur)>>,
    /// Per lock, atomics on its word that moved the line from another
    /// CPU, and the time atomics waited for the line to be free.
    line_transfers: TiVec<LockId, u64>,
    line_wait: TiVec<LockId, Dur>,
    /// Tasks spinning on some lock right now.
    spinning: u32,
    /// Whether a task on a CPU can ever be asked to reschedule: time
    /// slices, `preempt` placement, RT tasks or per-CPU queues (EEVDF's
    /// wakeup preemption). Without, `resched_due` costs one test.
    may_resched: bool,
    /// How long a fair task runs while others wait before the tick ends
    /// its slice: `scenario.timeslice`, or one tick under the orders that
    /// always have a slice (EEVDF's base slice, CFS's granularity).
    slice: Option<Dur>,
    /// The task whose step is being executed (the waker of any wakeup).
    current: TaskId,
    /// `--trace`: what this run looks like, slice by slice.
    trace: Option<Box<Trace>>,
    /// `--blame`: the waits to explain (first run), and what tasks did
    /// around them (second run).
    picker: Option<Box<Picker>>,
    recorder: Option<Box<Recorder>>,
    preemptions: u64,
    /// Context switches that cost CPU time (`scenario.switch_cost`).
    switches: u64,
    /// The event count at which to report progress or stop at the limit.
    next_check: u64,
    /// The instant of the last event-limit check, and the event count
    /// when that instant was first seen there: events that go on at one
    /// instant past `max_steps_per_instant` are a livelock.
    check_at: SimTime,
    check_from: u64,
    /// Tasks that yielded their CPU at a preemption point.
    slice_yields: u64,
    /// Spins ended by need_resched: a task came to wait for the spinner's
    /// CPU.
    spin_resched_stops: u64,
    spans: Vec<SimTime>,
    reps: Vec<u64>,
    queue: SlotQueue<Ev>,
    now: SimTime,
    tasks: TiVec<TaskId, Task>,
    /// Each task's program stream (draws of its delays, keys, branches).
    rngs: TiVec<TaskId, Stream>,
    locks: TiVec<LockId, AnyLock>,
    acquisitions: TiVec<LockId, [u64; 2]>,
    contentions: TiVec<LockId, [u64; 2]>,
    cpu: CpuPool,
    /// The task on each CPU (`NONE` for an idle one), with limited CPUs:
    /// where preemption looks for a victim.
    running_on: TiVec<CpuId, TaskId>,
    /// The task that ran last on each CPU (`NONE` before the first): a
    /// task given a CPU that another task ran on last is switched in
    /// (`scenario.switch_cost`).
    last_on: TiVec<CpuId, TaskId>,
    stats: TiVec<StatId, Stat>,
    wakes: Vec<Wake>,
    horizon: SimTime,
    events: u64,
    limits: Limits,
    draw_log: Option<Vec<(TaskId, Dur)>>,
}

/// A woken task's pending acquisition: granted, or to be retried.
fn pending(r: Resume, lock: LockId, granted: bool) -> Resume {
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
    tasks: &'a TiSlice<TaskId, Task>,
    cpu: &'a CpuPool,
}

impl TaskView for TasksView<'_> {
    fn is_rt(&self, t: TaskId) -> bool {
        self.tasks[t].rt
    }
    fn on_cpu(&self, t: TaskId) -> bool {
        matches!(self.tasks[t].state, State::Running | State::Spinning)
    }
    /// A task waits for `t`'s CPU: with per-CPU run queues one queued
    /// there (or an RT task anywhere); with one shared queue, any.
    fn need_resched(&self, t: TaskId) -> bool {
        self.cpu.waiting_for(self.tasks[t].cpu) > 0
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
        let $l = &mut $w.locks[$lock];
        let $wakes = &mut $w.wakes;
        $body
    }};
}

mod cpu;
mod interp;
mod locks;
mod memcg;
use memcg::{MemStats, MidReclaim};
mod cycle;
mod observe;
pub mod recorder;
use recorder::{Doing, Focus, Names, Picker, Recorder, Wait, Wanted};
mod results;
mod stuck;
pub use stuck::{secs as stuck_secs, Stuck, StuckLine};
pub mod trace;
use trace::Trace;
mod workqueues;

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
        let mut tasks: TiVec<TaskId, Task> = TiVec::new();
        let mut rngs = TiVec::new();
        let mut slots = SlotBases::ZERO;
        for (g, group) in c.groups.iter_enumerated() {
            for i in 0..group.count {
                tasks.push(Task::new(
                    c,
                    (seed, replication),
                    &group.name,
                    g,
                    i,
                    slots,
                    &mut rngs,
                ));
                slots = slots.after((group.hold_slots, group.span_slots, group.repeat_slots));
            }
        }
        // kworkers: tasks of no group until they run an item, with slots
        // for the largest work program.
        let wslots = |f: fn(&GroupProg) -> u8| c.work_programs().iter().map(f).max().unwrap_or(0);
        // A kworker names the first work program until its first item
        // (the last task group's, when there is none).
        let kworker_group = (c.groups.last_key())
            .expect("a scenario has a task group")
            .min(GroupId(c.task_groups));
        let kworker_slots = (
            wslots(|g| g.hold_slots),
            wslots(|g| g.span_slots),
            wslots(|g| g.repeat_slots),
        );
        let mut idle_workers = TiVec::new();
        // R37: the kworkers of every pooled workqueue form the per-CPU
        // pools; the others keep to their workqueue.
        let pooled = |wq| runs_on_pools(c, wq);
        let first_kworker = tasks.next_key();
        let nkworkers = c.workqueues.iter().map(|w| w.workers).sum::<u32>();
        let mut pool_idle = IdleKworkers::empty(first_kworker, nkworkers);
        for (q, wq) in c.workqueues.iter_enumerated() {
            let first = tasks.next_key();
            if pooled(wq) {
                for i in 0..wq.workers {
                    pool_idle.push(TaskId(first.0 + i), None);
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
                    kworker_group,
                    i,
                    slots,
                    &mut rngs,
                );
                w.state = State::Idle;
                w.rt = false;
                w.self_key = 0;
                w.worker_of = Some(q);
                w.cold = i >= wq.warm_workers;
                tasks.push(w);
                slots = slots.after(kworker_slots);
            }
        }
        let ntasks = tasks.len();
        let nitems = c.works.iter().map(|w| w.instances as usize).sum::<usize>();
        let bounds = queue_bounds(&tasks.raw);
        let mut cpu = match c.cpus {
            Some(n) => CpuPool::with_cpus(n),
            None => CpuPool::unlimited(),
        };
        cpu.set_wake_first(c.wake_placement.woken_first());
        if c.percpu_runqueues {
            cpu.set_percpu();
        }
        let tick = Dur(1_000_000_000 / u64::from(c.hz.max(1)));
        let timeslice = c.timeslice;
        let slice = match c.wake_placement {
            WakePlacement::Eevdf | WakePlacement::Eevdf66 | WakePlacement::Cfs => {
                Some(timeslice.unwrap_or(tick))
            }
            _ => timeslice,
        };
        match c.wake_placement {
            WakePlacement::Eevdf | WakePlacement::Eevdf66 => cpu.set_eevdf(
                timeslice.unwrap_or(tick),
                tick,
                c.wake_placement == WakePlacement::Eevdf,
            ),
            WakePlacement::Cfs => cpu.set_cfs(timeslice.unwrap_or(tick)),
            _ => {}
        }
        for (i, task) in tasks.iter_enumerated() {
            if task.rt {
                cpu.set_rt(i);
            }
            // A program task has its group's nice level; kworkers are
            // nice 0 (their group index only names a work program).
            let weight = match task.worker_of {
                None => c.groups[task.group].weight,
                Some(_) => NICE_0_WEIGHT,
            };
            if weight != NICE_0_WEIGHT {
                // The compiler accepts a nice level only for an order
                // that weighs tasks.
                let weighed = cpu.set_weight(i, weight);
                debug_assert!(weighed);
            }
        }
        let running_on = ti_vec![NONE; c.cpus.unwrap_or(0) as usize];
        let pools = c
            .workqueues
            .iter()
            .any(pooled)
            .then(|| WorkerPools::new(c.cpus.unwrap_or(0) as usize, pool_idle));
        World {
            c,
            holds: vec![SimTime::ZERO; slots.hold.index()],
            held: vec![0; slots.hold.index()],
            memcgs: (c.memcgs.iter())
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
            mid_reclaim: if (c.memcgs.iter())
                .any(|m| m.reclaim_frees == crate::program::ReclaimFrees::During)
            {
                ti_vec![MidReclaim::None; ntasks]
            } else {
                TiVec::new()
            },
            mem_stats: ti_vec![MemStats::default(); c.memcgs.len()],
            lines: ti_vec![(LineOwner::Nobody, SimTime::ZERO); c.locks.len()],
            line_costs: if c.locks.iter().any(|l| l.line.is_some()) {
                c.locks.iter().map(|l| l.line).collect()
            } else {
                TiVec::new()
            },
            line_transfers: ti_vec![0; c.locks.len()],
            line_wait: ti_vec![Dur::ZERO; c.locks.len()],
            spinning: 0,
            slice,
            may_resched: slice.is_some()
                || c.wake_placement.preempts()
                || c.percpu_runqueues
                || tasks.iter().any(|t| t.rt),
            current: NONE,
            trace: None,
            picker: None,
            recorder: None,
            preemptions: 0,
            switches: 0,
            next_check: limits.max_events.min(1 << 20),
            check_at: SimTime::MAX,
            check_from: 0,
            slice_yields: 0,
            spin_resched_stops: 0,
            spans: vec![SimTime::ZERO; slots.span.index()],
            reps: vec![0; slots.rep.index()],
            queue: SlotQueue::with_bounds(
                ntasks + c.memcgs.len() + nitems + c.memcgs.len(),
                &bounds,
                Ev::Run,
            ),
            released: ti_vec![0.0; c.memcgs.len()],
            user_counts: ti_vec![0; c.counters.len()],
            key_next: ti_vec![0; c.key_counters as usize],
            wqs: (c.workqueues.iter())
                .map(|w| {
                    models::workqueue::Workqueue::new(w.name.clone(), w.kind, w.max_active)
                        .with_timer_wheel(c.hz)
                })
                .collect(),
            idle_workers,
            pools,
            start_backlog: ti_vec![std::collections::VecDeque::new(); c.workqueues.len()],
            timer_wq: ti_vec![WqId(0); nitems],
            flushers: std::collections::BTreeMap::new(),
            work_waiters: std::collections::BTreeMap::new(),
            wq_actions: Vec::new(),
            now: SimTime::ZERO,
            tasks,
            rngs,
            locks: (c.locks.iter())
                .map(|l| {
                    AnyLock::with_options(l.kind, &l.policy, l.options)
                        .expect("the compiler accepts only known policies")
                })
                .collect(),
            acquisitions: ti_vec![[0; 2]; c.locks.len()],
            contentions: ti_vec![[0; 2]; c.locks.len()],
            cpu,
            last_on: running_on.clone(),
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
            horizon: SimTime::ZERO + c.duration,
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

    pub fn draws(&self) -> &[(TaskId, Dur)] {
        self.draw_log.as_deref().unwrap_or(&[])
    }

    fn task_name(&self, t: TaskId) -> String {
        let task = &self.tasks[t];
        format!("{}[{}]", self.c.groups[task.group].name, task.index)
    }

    #[inline]
    fn schedule(&mut self, t: TaskId, at: SimTime, ev: Ev) {
        debug_assert!(
            !self.queue.is_set(t.index()),
            "a task has one pending event"
        );
        self.queue.set(t.index(), at, ev);
    }

    /// The event-queue slot of memcg `m`'s OOM reaper: after the tasks'.
    fn reap_slot(&self, m: MemcgId) -> usize {
        self.tasks.len() + m.index()
    }

    /// The event-queue slot of item `w`'s delayed-work timer: after the
    /// reapers'.
    fn timer_slot(&self, w: WorkId) -> usize {
        self.tasks.len() + self.memcgs.len() + w.index()
    }

    /// The event-queue slot of memcg `m`'s background release: after the
    /// timers'.
    fn release_slot(&self, m: MemcgId) -> usize {
        self.tasks.len() + self.memcgs.len() + self.timer_wq.len() + m.index()
    }

    /// Where task `t`'s pages charged to memcg `m` are in `task_pages`.
    fn page_slot(&self, t: TaskId, m: MemcgId) -> usize {
        t.index() * self.memcgs.len() + m.index()
    }

    #[inline]
    fn record(&mut self, stat: StatId, d: Dur) {
        let s = &mut self.stats[stat];
        s.hist.record(d);
        s.windows.record(self.now, d);
    }

    /// Runs until the horizon (events at times `< duration`), calling
    /// `progress` now and then with the simulated time reached.
    pub fn run(&mut self, progress: &mut dyn FnMut(SimTime)) -> Result<(), RunError> {
        for t in (0..self.tasks.len()).map(TaskId::from) {
            if self.tasks[t].state != State::Idle {
                self.make_runnable(t);
            }
        }
        for (m, spec) in self.c.memcgs.iter_enumerated() {
            if spec.release_rate > 0.0 {
                let slot = self.release_slot(m);
                self.queue
                    .set(slot, SimTime::ZERO + RELEASE_TICK, Ev::Release);
            }
        }
        while let Some((at, slot, ev)) = self.queue.pop() {
            if slot >= self.tasks.len() {
                if at >= self.horizon {
                    self.stop_at_horizon(slot, at, ev);
                    return self.no_lock_cycle();
                }
                self.now = at;
                // A timer, the reaper or a release tick: no task acts.
                self.current = NONE;
                let k = slot - self.tasks.len();
                let nitems = self.timer_wq.len();
                if k < self.memcgs.len() {
                    self.oom_reap(MemcgId::from(k));
                } else if k >= self.memcgs.len() + nitems {
                    self.release_tick(MemcgId::from(k - self.memcgs.len() - nitems), slot);
                } else {
                    let work = WorkId::from(k - self.memcgs.len());
                    let q = self.timer_wq[work];
                    let mut out = std::mem::take(&mut self.wq_actions);
                    if !self.wqs[q].delayed_timer_fired(at, work, &mut out) {
                        // A lazily re-armed timer (see ArmTimer): on to
                        // its current expiry. A killed one is dropped.
                        if let Some(e) = self.wqs[q].timer_expires(work) {
                            self.queue.set(slot, e, Ev::Timer);
                        }
                    }
                    self.apply_wq_actions(q, out);
                }
                continue;
            }
            let t = TaskId::from(slot);
            if at >= self.horizon {
                self.stop_at_horizon(slot, at, ev);
                return self.no_lock_cycle();
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
                if at != self.check_at {
                    self.check_at = at;
                    self.check_from = self.events;
                } else if self.events - self.check_from > self.limits.max_steps_per_instant {
                    return Err(self.instant_livelock(t, at));
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
                    if !self.mid_reclaim.is_empty() && self.reclaim_midpoint(t) {
                        continue;
                    }
                    // What this sleep was for (reclaim, throttle) was said
                    // for it alone: blame, the trace and `stuck` read it.
                    self.tasks[t].off = Doing::Sleep;
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
        // Nothing left to happen before the horizon. A task blocked on a
        // lock or a flush waits forever, and so does a spinner: a spinner
        // with no deadline spins while its lock's owner stays on its CPU
        // (R9, R27), and with no event left nothing moves that owner (two
        // tasks that spin each on the other's lock: ABBA on CPUs).
        let waiters: Vec<String> = (self.tasks.iter_enumerated())
            .filter(|(_, task)| matches!(task.state, State::Blocked | State::Spinning))
            .map(|(t, _)| t)
            .take(20)
            .map(|t| self.stuck_line(t))
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

    /// The lock waits going on now: each waiting task, its wait
    /// statistic and how long it has waited (it asked for the lock and has
    /// not run holding it yet).
    fn open_lock_waits(&self) -> impl Iterator<Item = (TaskId, StatId, Dur)> + '_ {
        (self.tasks.iter_enumerated()).filter_map(|(t, task)| {
            let (_, _, wait) = task.resume.lock_wait()?;
            Some((t, wait, self.now.since(task.since)))
        })
    }

    /// The run reached its horizon with the event `(at, slot, ev)`
    /// popped: it goes back, so that the world at the end still says when
    /// each pending sleep would have ended (`World::stuck`).
    /// A task that waits forever, for the deadlock errors: `one[0]
    /// blocked on b (lock) since t=1ms at s.toml:10`.
    fn stuck_line(&self, t: TaskId) -> String {
        let task = &self.tasks[t];
        let g = &self.c.groups[task.group];
        let at = g.origins.get(Pc(task.pc.0.saturating_sub(1)));
        let what = match task.resume {
            Resume::Acquired { lock, mode, .. } | Resume::Retry { lock, mode, .. } => {
                let l = &self.c.locks[lock];
                format!("{} ({})", l.name, crate::program::mode_label(l.kind, mode))
            }
            Resume::Nothing => "a flush or a work item (workqueue)".into(),
        };
        let how = if task.state == State::Spinning {
            "spinning on its CPU for"
        } else {
            "blocked on"
        };
        format!(
            "{} {how} {what} since t={} at {}",
            self.task_name(t),
            task.since,
            at.map(|o| o.location.as_str()).unwrap_or("?")
        )
    }

    fn stop_at_horizon(&mut self, slot: usize, at: SimTime, ev: Ev) {
        self.queue.set(slot, at, ev);
        self.now = self.horizon;
    }

    pub fn events(&self) -> u64 {
        self.events
    }
}
