//! The compiled program: what the scenario language (`scenario`) produces
//! and the world (`world`) runs.
//!
//! A [`Compiled`] is one variant ready to run: the run's settings, its
//! locks, distributions, statistics, memcgs, workqueues and work types,
//! and per task group and work type a [`GroupProg`], a flat list of
//! [`Instr`] whose blocks are jumps by index, with each instruction's
//! [`Origin`] for run-time errors. Names are resolved to ids, every
//! static check has passed and `scenario.cpu_speed` is already applied to
//! the `cpu` steps' distributions.
//!
//! Architecture invariant: this module names nothing else of the crate,
//! so that the language and the runtime meet only here.

use models::{LockKind, Mode};
use output::Metric;
use sim::dist::Dist;
use sim::Dur;
use typed_index_collections::{TiSlice, TiVec};

pub use models::{LockId, MemcgId, WorkId, WqId};

// The ids of the program's own tables are dense `u32` indices, as
// `models::ids` has them for what the models keep state for (those the
// program shares: `LockId`, `WqId`, `MemcgId`, `WorkId`). A table indexed
// by one is a `TiVec<Id, T>`.
use sim::dense_id as id;

id! {
    /// A distribution of the scenario (named, inline in a step, or a
    /// `cpu` step's scaled copy): an index into [`Compiled::dists`].
    DistId
}

id! {
    /// A statistic the run records (a lock's wait or hold per mode and
    /// group, a span): an index into [`Compiled::stats`].
    StatId
}

id! {
    /// A program: a task group's, or a work type's (run by kworkers).
    /// Task groups come first ([`Compiled::task_groups`]).
    GroupId
}

id! {
    /// A work type (`[works.NAME]`): its program and a range of work
    /// items. Not a [`WorkId`], which names one item (one instance of a
    /// work type) to the workqueue.
    WorkTypeId
}

id! {
    /// A counter of `count` steps and lock call sites: an index into
    /// [`Compiled::counters`].
    CounterId
}

id! {
    /// The counter of one `key next` step (a cgroup id allocator).
    KeyCounterId
}

id! {
    /// A data cache line of the scenario (an instance of a `[lines.NAME]`
    /// family is one line): an index into [`Compiled::lines`].
    LineId
}

id! {
    /// An instruction's index in its program: where a task is (its
    /// program counter) and where a block's jump goes.
    Pc
}

impl Pc {
    /// A program's first instruction.
    pub const START: Pc = Pc(0);
}

/// The instruction `n` after this one.
impl std::ops::Add<u32> for Pc {
    type Output = Pc;
    #[inline(always)]
    fn add(self, n: u32) -> Pc {
        Pc(self.0 + n)
    }
}

impl std::ops::AddAssign<u32> for Pc {
    #[inline(always)]
    fn add_assign(&mut self, n: u32) {
        self.0 += n;
    }
}

/// One instruction of a compiled program.
///
/// `repr(u8)`: the variant is a plain byte, so the interpreter's dispatch
/// jumps on it directly instead of first decoding it from a niche in
/// another variant's fields (four instructions at every step). Its size
/// stays 32 bytes (checked below), which the memory estimate counts.
#[derive(Clone, Debug, PartialEq)]
#[repr(u8)]
pub enum Instr {
    /// Advance time: on the CPU (`cpu`) or off it (`sleep`).
    /// `next` is the instruction after it (a loop's rotated back edge
    /// continues at the loop's second step).
    Delay {
        dist: DistId,
        sleep: bool,
        next: Pc,
    },
    /// `Delay` of a constant: draws nothing.
    DelayConst {
        dur: Dur,
        sleep: bool,
        next: Pc,
    },
    /// `Delay` of an exponential with mean `mean` ns (the commonest case,
    /// specialised to skip a second dispatch on the distribution); the
    /// mean is the float parameter [`sim::dist::sample_exp`] draws with,
    /// as [`Dist::Exp`] keeps it.
    DelayExp {
        mean: f64,
        sleep: bool,
        next: Pc,
    },
    /// `dynamic`: which lock of a family `lock` (its first) the step
    /// takes at run time ([`Instance`]).
    // The byte-sized fields last: with the tag first (`repr(u8)`), this
    // order keeps the largest variant, and so `Instr`, at 32 bytes.
    Acquire {
        lock: LockId,
        wait: StatId,
        dynamic: Instance,
        /// The call-site counter (`L/<mode>_acquisitions/site/OP`, OP the
        /// innermost operation), if the step is inside an operation.
        site: Option<CounterId>,
        mode: Mode,
        slot: u8,
    },
    Release {
        lock: LockId,
        mode: Mode,
        hold: StatId,
        slot: u8,
        dynamic: Instance,
    },
    /// `read_seqcount_retry` / `read_seqretry`: the read section in
    /// `slot` ends (recorded under `hold`); if a writer overlapped it, the
    /// task goes back to `begin`, the block's `Acquire` (R87).
    SeqRetry {
        lock: LockId,
        hold: StatId,
        slot: u8,
        dynamic: Instance,
        begin: Pc,
    },
    /// `downgrade_write`: the write hold in `slot` ends (recorded under
    /// `hold`) and a read hold starts in the same slot.
    Downgrade {
        lock: LockId,
        slot: u8,
        hold: StatId,
        dynamic: Instance,
    },
    SpanBegin {
        slot: u8,
    },
    SpanEnd {
        stat: StatId,
        slot: u8,
    },
    /// Start `count` passes; skip to `end` if zero.
    RepeatBegin {
        count: u64,
        end: Pc,
        depth: u8,
    },
    /// Count a pass down; go back to `begin + 1` while passes remain.
    RepeatEnd {
        begin: Pc,
        depth: u8,
    },
    /// With probability `p` run the body; otherwise jump to `end`.
    WithProb {
        p: f64,
        end: Pc,
    },
    /// `if_work_busy`: run the body if the item is pending or executing;
    /// otherwise jump to `end`.
    IfWorkBusy {
        wq: WqId,
        work: WorkTypeId,
        key: WorkKey,
        end: Pc,
    },
    /// `if_pressure`: run the body if memcg `memcg`'s `some` average of
    /// `window` is at least `centi` hundredths of a percent (R104);
    /// otherwise jump to `end`.
    IfPressure {
        memcg: MemcgId,
        window: models::psi::Window,
        centi: u64,
        end: Pc,
    },
    /// `kill`: SIGKILL every live task of `group` (R105).
    Kill {
        group: GroupId,
    },
    Jump {
        to: Pc,
    },
    /// `charge`: `pages` to memcg `memcg` (R45-R48).
    Charge {
        memcg: MemcgId,
        pages: u64,
        gfp: GfpWord,
    },
    Uncharge {
        memcg: MemcgId,
        pages: u64,
    },
    /// `queue_work` / `queue_delayed_work` of work type `work`, item `key`;
    /// `queue_rcu_work` with `rcu` (the delay is a grace period).
    QueueWork {
        wq: WqId,
        work: WorkTypeId,
        key: WorkKey,
        delay: Option<DistId>,
        rcu: bool,
    },
    /// `queue_rcu_work W ITEM` (`rcu_work`: pending from now) or
    /// `call_rcu W ITEM` (a callback that queues the item): after a
    /// grace period of the RCU model (R92, R94).
    RcuQueue {
        wq: WqId,
        work: WorkTypeId,
        key: WorkKey,
        rcu_work: bool,
    },
    /// `synchronize_rcu`: sleep until a full grace period has passed (R93).
    SynchronizeRcu,
    ModDelayedWork {
        wq: WqId,
        work: WorkTypeId,
        key: WorkKey,
        delay: DistId,
    },
    CancelWorkSync {
        wq: WqId,
        work: WorkTypeId,
        key: WorkKey,
    },
    FlushWorkqueue {
        wq: WqId,
    },
    /// `atomic` (`write`: a read-modify-write) or `read` of data line
    /// `line`; with `dynamic`, `line` is a family's first and the task's
    /// key picks the instance.
    Line {
        line: LineId,
        write: bool,
        dynamic: bool,
    },
    /// `count`: add one to counter `counter`.
    Count {
        counter: CounterId,
    },
    /// `might_resched`: under PREEMPT_VOLUNTARY or FULL, the task yields
    /// here if a reschedule is due, even holding locks.
    MightResched,
    /// `cond_resched`: under any preemption model the task yields here
    /// if a reschedule is due, even holding sleeping locks (R123).
    CondResched,
    /// `key`: the task's key (`[self]`) becomes `lo + k`, k fixed (span 0),
    /// uniform in `0..span`, or, with `next`, the next value of
    /// `key_counters[counter]` modulo `span`.
    SetKey {
        lo: u32,
        span: u32,
        next: Option<KeyCounterId>,
    },
    Exit,
}

const _: () = assert!(std::mem::size_of::<Instr>() == 32);

/// Which lock of a family a lock step takes, found at run time from the
/// step's lock (the family's first for the two keyed forms).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Instance {
    /// The step's lock itself (not a family, or `NAME[i]`).
    Fixed,
    /// `NAME[self]`: the task's key picks it.
    SelfKey,
    /// `NAME[hash self]`: the task's key hashed into the family's `2^bits`
    /// locks as the kernel's `hash_64` does (a hashed lock table, such as
    /// kernfs's open-file mutexes).
    Hashed { bits: u8 },
    /// `NAME[repeat]`: the pass of the innermost `repeat` around the step
    /// (0 to `count - 1`), the repeat at nesting `depth`.
    Pass { depth: u8, count: u32 },
}

/// `hash_64(val, bits)` of include/linux/hash.h on 64-bit kernels: the
/// top `bits` bits of `val x GOLDEN_RATIO_64`.
pub fn hash_64(val: u64, bits: u8) -> u64 {
    const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
    if bits == 0 {
        return 0;
    }
    val.wrapping_mul(GOLDEN_RATIO_64) >> (64 - u32::from(bits))
}

/// Which item of a work type (or lock of a family) a step names.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WorkKey {
    Index(u32),
    /// The queueing task's index within its group.
    SelfIndex,
    /// A fresh item at each use (each removed cgroup has its own works):
    /// the task's uses are numbered, interleaved with its group's other
    /// tasks, modulo the work type's instances.
    Seq,
}

/// The GFP flags of a `charge` step's allocation, named by its last word
/// (R45, R47). One byte in the instruction.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum GfpWord {
    /// `kernel`: GFP_KERNEL, the default.
    #[default]
    Kernel,
    /// `nowait`: GFP_NOWAIT, no reclaim; with no margin it fails at once.
    Nowait,
    /// `atomic`: GFP_ATOMIC, no reclaim; with no margin it is forced above
    /// the limit (__GFP_HIGH).
    Atomic,
    /// `nofail`: __GFP_NOFAIL.
    Nofail,
    /// `noretry`: __GFP_NORETRY.
    Noretry,
    /// `retry_mayfail`: __GFP_RETRY_MAYFAIL.
    RetryMayfail,
}

impl GfpWord {
    /// The charge path's flags.
    pub fn flags(self) -> models::memcg::Gfp {
        use models::memcg::Gfp;
        let g = Gfp::default();
        match self {
            GfpWord::Kernel => g,
            GfpWord::Nowait => Gfp { nowait: true, ..g },
            GfpWord::Atomic => Gfp {
                nowait: true,
                high: true,
                ..g
            },
            GfpWord::Nofail => Gfp { nofail: true, ..g },
            GfpWord::Noretry => Gfp { noretry: true, ..g },
            GfpWord::RetryMayfail => Gfp {
                retry_mayfail: true,
                ..g
            },
        }
    }
}

/// Where a step came from, for errors at compile and at run time
/// (the language's `Origin::error` makes a `ScenarioError` of it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// `file:line` or `--set ...`.
    pub location: String,
    /// `ops.kernfs_lookup.steps[2]`.
    pub field: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LockSpec {
    pub name: String,
    pub kind: LockKind,
    pub policy: String,
    pub options: models::locks::LockOptions,
    /// Cache-line costs of an atomic on the lock word: (transfer, local).
    pub line: Option<(Dur, Dur)>,
    /// A seqcount's write serialisation lock (R86), the instance of the
    /// same index for a family.
    pub serialised_by: Option<LockId>,
}

/// A data cache line (`[lines.NAME]`): a refcount, a counter, a list
/// head that `atomic` and `read` steps touch.
#[derive(Clone, Debug, PartialEq)]
pub struct LineSpec {
    /// `NAME`, or `NAME[i]` for an instance of a family.
    pub name: String,
    /// Flat costs (transfer, local) instead of the machine's.
    pub flat: Option<(Dur, Dur)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StatSpec {
    pub metric: Metric,
    pub subject: String,
}

#[derive(Clone, Debug)]
pub struct GroupProg {
    pub name: String,
    pub count: u32,
    pub code: TiVec<Pc, Instr>,
    /// Where each instruction came from.
    pub origins: TiVec<Pc, Origin>,
    /// Where a killed task goes: its group's `exit` steps, or the final
    /// `Exit` when it has none.
    pub exit_pc: Pc,
    pub hold_slots: u8,
    pub span_slots: u8,
    pub repeat_slots: u8,
    /// Real-time scheduling class.
    pub rt: bool,
    /// Load weight in the fair class (nice 0: 1024).
    pub weight: u32,
}

/// A workqueue of the scenario.
#[derive(Clone, Debug)]
pub struct WorkqueueSpec {
    pub name: String,
    pub kind: models::workqueue::WqKind,
    pub max_active: u32,
    pub workers: u32,
    /// kworkers that exist at the start; the rest are created on first use.
    pub warm_workers: u32,
    /// Time to create a kworker (R38).
    pub create_latency: Dist,
}

/// A work item type: its program (a group of `groups` with no tasks of
/// its own) and its items' ids `first_item..first_item + instances`.
#[derive(Clone, Debug)]
pub struct WorkSpec {
    pub name: String,
    pub group: GroupId,
    pub instances: u32,
    pub first_item: WorkId,
}

impl WorkSpec {
    /// The id of instance `k` (below `instances`).
    pub fn item(&self, k: u32) -> WorkId {
        debug_assert!(k < self.instances);
        WorkId(self.first_item.0 + k)
    }

    /// Which instance of this work type item `id` is, if it is one.
    pub fn instance(&self, id: WorkId) -> Option<u32> {
        (id.0.checked_sub(self.first_item.0)).filter(|&k| k < self.instances)
    }
}

/// A memory cgroup of the scenario.
#[derive(Clone, Debug)]
pub struct MemcgSpec {
    pub name: String,
    pub max: u64,
    pub high: Option<u64>,
    pub initial: u64,
    /// Time of one direct-reclaim attempt.
    pub reclaim: Dist,
    /// Chance an attempt frees `reclaim_pages`.
    pub reclaim_success: f64,
    /// Chance that those pages are still there when the reclaimer retries,
    /// not charged first by other tasks of the memcg (outside the
    /// scenario: a container's workload on other CPUs). When they are
    /// gone, reclaim made progress without margin, and a small charge
    /// loops for free (R45).
    pub reclaim_kept: f64,
    pub reclaim_pages: u64,
    /// When an attempt's freed pages leave `usage`.
    pub reclaim_frees: ReclaimFrees,
    /// Background release, pages per second.
    pub release_rate: f64,
    /// Task groups the OOM killer may kill, preferred first.
    pub oom_victims: Vec<GroupId>,
    /// The rwsem (or family: one instance per task index) that stands for
    /// the victims' mmap_lock, which the OOM reaper must trylock (R103);
    /// `None`: the reaper always gets it.
    pub mmap_lock: Option<(LockId, u32)>,
    /// `memory.oom.group`: an OOM kill kills every task the OOM killer
    /// may kill here, not one (R106).
    pub oom_group: bool,
}

/// When a reclaim attempt's freed pages leave the memcg's usage
/// (`memcg.NAME.reclaim_frees`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimFrees {
    /// At the attempt's end, just before the reclaimer retries: only
    /// `reclaim_kept` stands for other chargers.
    AtEnd,
    /// At the attempt's midpoint: pages come back while reclaim runs
    /// (R45: shrinking frees and uncharges them one by one), so the
    /// scenario's other tasks of the memcg can charge them before the
    /// reclaimer retries. The midpoint is assumed: one batch a time, with
    /// as long before the retry as after the start.
    During,
}

/// Where a woken task waits for a CPU (`scenario.wake_placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakePlacement {
    /// At the run queue's tail (the default).
    Fifo,
    /// Ahead of the tasks that were preempted or used up their slice.
    First,
    /// As `First`, and it preempts a task's lock-free `cpu` step.
    Preempt,
    /// In EEVDF's order (6.12 and later), the time slice as its base
    /// slice.
    Eevdf,
    /// In EEVDF's order as kernels 6.6 to 6.11 had it: no DELAY_DEQUEUE,
    /// so a blocked task keeps a negative lag however long it sleeps.
    Eevdf66,
    /// In CFS's order (kernels before 6.6), the time slice as its minimum
    /// granularity.
    Cfs,
}

impl WakePlacement {
    /// Woken tasks wait ahead of preempted ones.
    pub fn woken_first(self) -> bool {
        matches!(self, WakePlacement::First | WakePlacement::Preempt)
    }

    /// A woken task preempts a lock-free task in a `cpu` step.
    pub fn preempts(self) -> bool {
        self == WakePlacement::Preempt
    }
}

/// A scenario variant ready to run.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub experiment: String,
    pub variant: String,
    pub duration: Dur,
    pub cpus: Option<u32>,
    pub window: Dur,
    pub seed: Option<u64>,
    /// CONFIG_HZ.
    pub hz: u32,
    /// Wake-to-run latency (`None`: zero).
    pub wake_latency: Option<Dist>,
    /// PREEMPT_FULL: wakees preempt tasks in `cpu` steps.
    pub preempt_full: bool,
    /// Time slice (`scenario.timeslice`), if tasks yield CPUs.
    pub timeslice: Option<Dur>,
    /// Where a woken task waits for a CPU (`scenario.wake_placement`).
    pub wake_placement: WakePlacement,
    /// One run queue per CPU (`scenario.runqueue = "percpu"`).
    pub percpu_runqueues: bool,
    /// CPU time a task spends switched in on a CPU that another task ran
    /// on last (`scenario.switch_cost`; zero: none).
    pub switch_cost: Dur,
    /// PREEMPT_VOLUNTARY or FULL: `might_resched` steps are preemption
    /// points.
    pub voluntary: bool,
    /// The hung-task detector's sysctls (`scenario.hung_task_*`).
    pub hung_task: models::hung_task::HungTaskConfig,
    /// The machine under the kernel (`[machine]`): its topology and the
    /// physical costs of the wake path and of cache lines.
    pub machine: models::machine::Machine,
    pub locks: TiVec<LockId, LockSpec>,
    /// Some lock's hold disables preemption (a spinlock, a sequence
    /// count's write section): the world then looks at held locks before
    /// it preempts a task or lets it yield.
    pub atomic_holds: bool,
    /// The data cache lines (`[lines]`), a family's instances one each.
    pub lines: TiVec<LineId, LineSpec>,
    pub dists: TiVec<DistId, Dist>,
    pub stats: TiVec<StatId, StatSpec>,
    pub groups: TiVec<GroupId, GroupProg>,
    pub memcgs: TiVec<MemcgId, MemcgSpec>,
    pub workqueues: TiVec<WqId, WorkqueueSpec>,
    pub works: TiVec<WorkTypeId, WorkSpec>,
    /// Counters of `count` steps and lock call sites.
    pub counters: TiVec<CounterId, String>,
    /// Programs `0..task_groups` are task groups; the rest run work items
    /// ([`Compiled::work_programs`]).
    pub task_groups: u32,
    /// `key next` steps in all programs (`Instr::SetKey::next` indexes).
    pub key_counters: u32,
}

impl Compiled {
    /// Whether a program uses the RCU model (`synchronize_rcu`,
    /// `call_rcu`, `queue_rcu_work` without a grace period): the world
    /// then runs it.
    pub fn uses_rcu(&self) -> bool {
        self.rcu_sync_on_rcu()
            || self.groups.iter().any(|g| {
                g.code
                    .iter()
                    .any(|i| matches!(i, Instr::RcuQueue { .. } | Instr::SynchronizeRcu))
            })
    }
    /// A percpu_rw_semaphore's `rcu_sync` waits for the RCU model (its
    /// `grace_period = "rcu"`).
    pub fn rcu_sync_on_rcu(&self) -> bool {
        (self.locks.iter())
            .any(|l| l.kind == LockKind::PercpuRwsem && l.options.grace_period.is_none())
    }
    /// Tasks of the task groups (work programs have none of their own).
    pub fn tasks(&self) -> u64 {
        self.groups.iter().map(|g| u64::from(g.count)).sum()
    }
    /// kworkers of all workqueues.
    pub fn kworkers(&self) -> u64 {
        self.workqueues.iter().map(|w| u64::from(w.workers)).sum()
    }
    /// Work items of all work types (each has a timer slot).
    pub fn work_items(&self) -> u64 {
        self.works.iter().map(|w| u64::from(w.instances)).sum()
    }
    /// The work types' programs, after the task groups'.
    pub fn work_programs(&self) -> &TiSlice<GroupId, GroupProg> {
        &self.groups[GroupId(self.task_groups)..]
    }
}

/// The label of a mode in subjects: `read`/`write` for the kinds with
/// two modes, `lock` for a mutex and a spinlock.
pub fn mode_label(kind: LockKind, mode: Mode) -> &'static str {
    match kind {
        LockKind::Mutex | LockKind::Spinlock => "lock",
        LockKind::Rwsem | LockKind::PercpuRwsem | LockKind::Seqcount | LockKind::Seqlock => {
            mode.as_str()
        }
    }
}
