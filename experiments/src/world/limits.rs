//! What stops a run: the limits a scenario is checked against before it
//! runs and as it runs, and the errors that end a run early.

use super::*;

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

/// Bytes a run keeps per CPU (run queues, the CPU's slots, its wake
/// path and idle state), rounded up: a run of one task on a million CPUs
/// peaked at 206 MiB more than on one CPU, on 2,097,152 CPUs of a
/// `server-2s` topology at 428 MiB more (about 210 bytes a CPU; release
/// build, `/usr/bin/time -f %M`).
const PER_CPU: u64 = 256;

/// Bytes every task costs beside its entry and its slots: its random
/// stream, its event-queue slot, what the CPU pool and its fair order keep
/// of it, its reclaim state and when it last read each line.
const PER_TASK_TABLES: usize = std::mem::size_of::<sim::Stream>()
    + sim::SlotQueue::<Ev>::BYTES_PER_SLOT
    + models::sched::CpuPool::BYTES_PER_TASK
    + std::mem::size_of::<memcg::MidReclaim>()
    + std::mem::size_of::<SimTime>();

/// Bytes a run of `c` needs, roughly: the task table, locks, work items,
/// the CPUs, one histogram per reported series and, when the run reaches
/// its end, a bin per window of each series (1 ms windows over a long
/// run are most of it).
pub fn estimated_memory(c: &Compiled) -> u64 {
    let per_task = |g: &crate::program::GroupProg| {
        (std::mem::size_of::<Task>() + PER_TASK_TABLES) as u64
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
    // A cache line and its pollers per lock word that has one, and per
    // data line (its sharer bitset grows with the CPUs that read it).
    let line = std::mem::size_of::<models::coherence::Line>() as u64 + 32;
    let l = c.machine.lines;
    let machine_lines = [l.local, l.smt, l.socket, l.remote] != [Dur::ZERO; 4];
    let word_lines = if machine_lines || c.locks.iter().any(|l| l.line.is_some()) {
        locks
    } else {
        0
    };
    let lines = (word_lines + c.lines.len() as u64) * line;
    tasks
        + u64::from(c.cpus.unwrap_or(0)) * PER_CPU
        + kworkers * largest
        + items * 64
        + locks * (std::mem::size_of::<models::locks::AnyLock>() as u64 + 64)
        + lines
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
    /// Tasks that wait for each other in a cycle that goes through a
    /// workqueue (a flush or a `cancel_delayed_work_sync` waiting for a
    /// work item whose kworker waits for the next, and locks), while the
    /// rest of the run goes on: as [`RunError::LockCycle`].
    WaitCycle {
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
            RunError::WaitCycle { at, tasks } => write!(
                f,
                "deadlock at t={at}: tasks wait for each other in a cycle of workqueue \
                 flushes, work items and locks, forever (the rest of the run went on around \
                 them):\n  {}",
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
