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
/// build, `/usr/bin/time -f %M`, before R125). A machine that is not
/// `ideal` adds each CPU's random interrupts (R125,
/// [`models::machine::episodes::Episodes::BYTES_PER_CPU`]).
const PER_CPU: u64 = 256;

/// Bytes every task costs beside its entry and its slots: its random
/// stream, its event-queue slot, what the CPU pool and its fair order keep
/// of it, its reclaim state and when it last read each line.
const PER_TASK_TABLES: usize = std::mem::size_of::<sim::Stream>()
    + sim::SlotQueue::<Ev>::BYTES_PER_SLOT
    + models::sched::CpuPool::BYTES_PER_TASK
    + std::mem::size_of::<memcg::MidReclaim>()
    + std::mem::size_of::<SimTime>();

/// Bytes a series' counts take while a run records them: two bytes per
/// HDR bucket up to the longest sample (`HdrCounts`), 4 KB for samples
/// under 2 us, 2 KB more per doubling past that: about 20 KB for
/// sub-millisecond waits, 44 KB up to a second, none for a series that
/// records nothing. Most series of the built-ins are the short or empty
/// ones; this is their median (2.6 to 21 KiB a series on average over
/// the built-ins), not a bound
/// (docs/findings/2026-12-04-histogram-blocks-and-the-memory-estimate.md).
const HDR_COUNTS_PER_SERIES: u64 = 10 << 10;

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
    let per_cpu = if c.machine.is_ideal() {
        PER_CPU
    } else {
        PER_CPU + models::machine::episodes::Episodes::BYTES_PER_CPU as u64
    };
    tasks
        + u64::from(c.cpus.unwrap_or(0)) * per_cpu
        + kworkers * largest
        + items * 64
        + locks * (std::mem::size_of::<models::locks::AnyLock>() as u64 + 64)
        + lines
        + series * HDR_COUNTS_PER_SERIES
        + series
            .saturating_mul(c.duration.0.div_ceil(c.window.0.max(1)))
            .saturating_mul(std::mem::size_of::<sim::stats::WindowBin>() as u64)
}

/// A heap block's bookkeeping and rounding (glibc's malloc: 8 bytes of
/// header, 16-byte alignment): what each string of a scenario costs
/// beside its bytes.
const MALLOC_BLOCK: u64 = 16;

/// Bytes a compiled scenario holds while its runs go on: each lock
/// instance with its name and policy (a family of 16,384 is a few MiB),
/// the counters' names, the programs, the works and the series.
fn compiled_memory(c: &Compiled) -> u64 {
    let text = |len: usize| len as u64 + MALLOC_BLOCK;
    let locks: u64 = (c.locks.iter())
        .map(|l| std::mem::size_of_val(l) as u64 + text(l.name.len()) + text(l.policy.len()))
        .sum();
    let counters: u64 = (c.counters.iter())
        .map(|n| std::mem::size_of_val(n) as u64 + text(n.len()))
        .sum();
    let programs: u64 = (c.groups.iter())
        .map(|g| {
            (g.code.len() * std::mem::size_of::<crate::program::Instr>()
                + g.origins.len() * std::mem::size_of::<crate::program::Origin>())
                as u64
                + text(g.name.len())
        })
        .sum();
    let works = c.works.len() as u64 * 64;
    let stats =
        c.stats.len() as u64 * (std::mem::size_of::<crate::program::StatSpec>() as u64 + 32);
    std::mem::size_of::<Compiled>() as u64 + locks + counters + programs + works + stats
}

/// Bytes of the program itself at the peak of a run, whatever the
/// scenario: its code and data as loaded (`convoy list` peaks at 5.4 MB
/// resident), a plot being drawn (a 1000 x 600 RGB bitmap of 1.8 MB and
/// the PNG encoder's buffers), the font read for the plots (0.76 MB) and
/// the allocator's spare. Measured as the peak resident set less the
/// scenario's parts over the built-ins
/// (docs/findings/2026-12-04-memory-of-a-run.md).
pub const PROGRAM_MEMORY: u64 = 10 << 20;

/// Bytes kept per reported series in a run's results: its histogram
/// holds 2 to 4 bytes per HDR bucket that any sample fell in
/// (`sim::stats::LatencyHist`), from none to thousands of buckets for
/// waits that spread over nanoseconds to milliseconds (the built-ins: 0.1
/// to 18 KiB a series on average, median 3.7 KiB;
/// docs/findings/2026-12-04-histogram-blocks-and-the-memory-estimate.md);
/// the median, not a bound.
const RESULT_PER_SERIES: u64 = 4 << 10;

/// Bytes each world that runs beside the first costs the allocator: its
/// thread gets a malloc arena of its own (glibc), which keeps memory the
/// thread freed instead of lending it to the others. lock-policies at
/// `--jobs 2` peaked 0.8 MiB lower with one arena (`MALLOC_ARENA_MAX=1`),
/// pidlist-flush-run-b 0.5 MiB lower; the smaller is counted.
const THREAD_ARENA_SPARE: u64 = 512 << 10;

/// What a run of some variants, `reps` times each with `threads` runs at
/// once, is estimated to need at its peak, in parts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RunMemory {
    /// [`PROGRAM_MEMORY`].
    pub program: u64,
    /// Every variant's compiled scenario, held for the whole run.
    pub scenarios: u64,
    /// The largest worlds that run at once, and the arena of each thread
    /// past the first ([`THREAD_ARENA_SPARE`]).
    pub worlds: u64,
    /// Every variant's pooled series, plus each replication's own when
    /// there are several.
    pub results: u64,
}

impl RunMemory {
    pub fn total(&self) -> u64 {
        self.program + self.scenarios + self.worlds + self.results
    }
}

/// The estimate of a run's whole process: the program, the compiled
/// variants, `threads` worlds at once (the largest ones) and the results.
pub fn estimated_run_memory(variants: &[&Compiled], reps: u64, threads: usize) -> RunMemory {
    let mut worlds: Vec<u64> = variants.iter().map(|c| estimated_memory(c)).collect();
    worlds.sort_unstable_by(|a, b| b.cmp(a));
    let at_once = threads.min(worlds.len() * reps as usize).max(1);
    // With fewer variants than threads, a variant's replications run at
    // once: its world counts as often as it runs in parallel.
    let worlds: u64 = (0..at_once)
        .map(|k| worlds.get(k % worlds.len().max(1)).copied().unwrap_or(0))
        .sum::<u64>()
        + (at_once as u64 - 1) * THREAD_ARENA_SPARE;
    let copies = if reps > 1 { reps + 1 } else { 1 };
    let results = (variants.iter())
        .map(|c| c.stats.len() as u64 * RESULT_PER_SERIES * copies)
        .sum();
    RunMemory {
        program: PROGRAM_MEMORY,
        scenarios: variants.iter().map(|c| compiled_memory(c)).sum(),
        worlds,
        results,
    }
}

/// Checks a run's estimate against `--max-memory`, before any world is
/// made: the message gives the parts.
pub fn check_run_memory(m: &RunMemory, limits: &Limits) -> Result<(), RunError> {
    if m.total() > limits.max_memory {
        return Err(RunError::TooLarge {
            what: "estimated memory".into(),
            value: format!(
                "{} ({} the program, {} the compiled scenario, {} the worlds that run at \
                 once, {} the results)",
                mib(m.total()),
                mib(m.program),
                mib(m.scenarios),
                mib(m.worlds),
                mib(m.results)
            ),
            limit: format!("{} (--max-memory)", mib(limits.max_memory)),
        });
    }
    Ok(())
}

/// A byte count as the limit messages print it: KiB below one MiB, MiB
/// to a tenth below 100 MiB, whole MiB above.
fn mib(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{} KiB", bytes.div_ceil(1 << 10))
    } else if bytes < 100 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
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
