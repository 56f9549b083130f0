//! The typed scenario document, as serde reads it from the resolved tree.
//!
//! Fields that later checks must point at are `Spanned`, so their errors
//! name the line. Unknown fields are errors (a typo must not be ignored).

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Doc {
    pub scenario: Header,
    #[serde(default)]
    pub dists: IndexMap<String, Spanned<DistDef>>,
    #[serde(default)]
    pub locks: IndexMap<String, Spanned<LockDef>>,
    /// Data cache lines (refcounts, counters, list heads) that `atomic`
    /// and `read` steps touch.
    #[serde(default)]
    pub lines: IndexMap<String, Spanned<LineDef>>,
    #[serde(default)]
    pub ops: IndexMap<String, Spanned<OpDef>>,
    #[serde(default)]
    pub tasks: IndexMap<String, Spanned<TaskDef>>,
    #[serde(default)]
    pub memcg: IndexMap<String, Spanned<MemcgDef>>,
    #[serde(default)]
    pub workqueues: IndexMap<String, Spanned<WorkqueueDef>>,
    /// Whole-number parameters, used as `repeat $name` (e.g. the kernfs
    /// nodes of a cgroup, R58); `--set params.name=N` changes them.
    #[serde(default)]
    pub params: IndexMap<String, Spanned<u64>>,
    #[serde(default)]
    pub works: IndexMap<String, Spanned<WorkDef>>,
    /// The machine under the kernel: a built-in profile and overrides of
    /// its values (absent: the default profile as it is).
    #[serde(default)]
    pub machine: Option<Spanned<MachineDef>>,
}

/// The `[machine]` table: a profile (`models::machine::profiles`) and an
/// override for each of its values. Durations are strings with units.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineDef {
    #[serde(default)]
    pub profile: Option<Spanned<String>>,
    #[serde(default)]
    pub sockets: Option<Spanned<u32>>,
    #[serde(default)]
    pub cores_per_socket: Option<Spanned<u32>>,
    #[serde(default)]
    pub threads_per_core: Option<Spanned<u32>>,
    #[serde(default)]
    pub hz: Option<Spanned<u32>>,
    #[serde(default)]
    pub preemption: Option<Spanned<String>>,
    /// The EEVDF base slice before the kernel scales it by the CPU count.
    #[serde(default)]
    pub base_slice: Option<Spanned<String>>,
    #[serde(default)]
    pub switch_cost: Option<Spanned<String>>,
    #[serde(default)]
    pub ipi: Option<Spanned<String>>,
    #[serde(default)]
    pub wake_send: Option<Spanned<String>>,
    #[serde(default)]
    pub line_local: Option<Spanned<String>>,
    #[serde(default)]
    pub line_smt: Option<Spanned<String>>,
    #[serde(default)]
    pub line_socket: Option<Spanned<String>>,
    #[serde(default)]
    pub line_remote: Option<Spanned<String>>,
    /// Interrupts (R125): the tick's handler, the other interrupts a
    /// second on each CPU and the mean time of one.
    #[serde(default)]
    pub tick_cost: Option<Spanned<String>>,
    #[serde(default)]
    pub irq_rate: Option<Spanned<f64>>,
    #[serde(default)]
    pub irq_cost: Option<Spanned<String>>,
    /// Guests only: what the hypervisor adds.
    #[serde(default)]
    pub guest_ipi: Option<Spanned<String>>,
    #[serde(default)]
    pub host_halt_poll: Option<Spanned<String>>,
    #[serde(default)]
    pub host_wake: Option<Spanned<String>>,
    #[serde(default)]
    pub steal_fraction: Option<Spanned<f64>>,
    #[serde(default)]
    pub steal_episode: Option<Spanned<String>>,
}

/// A workqueue (`[workqueues.NAME]`, R32-R34).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkqueueDef {
    /// `percpu` (default), `unbound` or `ordered`.
    #[serde(default)]
    pub kind: Option<Spanned<String>>,
    /// max_active per pool_workqueue (0: WQ_DFL_ACTIVE = 256).
    #[serde(default)]
    pub max_active: Option<u32>,
    /// kworkers that can run its items at once (default: its concurrency
    /// limit, at most 64). Worker creation (R38) is not modelled.
    #[serde(default)]
    pub workers: Option<Spanned<u32>>,
    /// kworkers that exist at the start (default: all); the others are
    /// created on first use, which takes `create_latency` (R38).
    #[serde(default)]
    pub warm_workers: Option<u32>,
    /// Time to create a kworker (`kthread_create_on_node`), a duration or
    /// distribution (default 0).
    #[serde(default)]
    pub create_latency: Option<Spanned<String>>,
}

/// A work item type (`[works.NAME]`): the program its work function runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkDef {
    pub program: Vec<Spanned<String>>,
    /// Distinct items of this type, addressed as `NAME[0]`..`NAME[n-1]`
    /// or `NAME[self]` (default 1).
    #[serde(default)]
    pub instances: Option<Spanned<u32>>,
}

/// A memory cgroup (`[memcg.NAME]`), charged by `charge NAME N` steps.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemcgDef {
    /// memory.max: `256MiB`, `1GiB`, `65536 pages`.
    pub max: Spanned<String>,
    /// memory.high (optional).
    #[serde(default)]
    pub high: Option<Spanned<String>>,
    /// Usage at the start (default 0): a full memcg starts at max.
    #[serde(default)]
    pub initial: Option<Spanned<String>>,
    /// Time of one direct-reclaim attempt (a distribution; default 1ms).
    #[serde(default)]
    pub reclaim: Option<Spanned<String>>,
    /// Chance that an attempt frees a batch (default 1.0).
    #[serde(default)]
    pub reclaim_success: Option<Spanned<f64>>,
    /// Chance that the batch a successful attempt freed is still there
    /// when the reclaimer retries, not charged by other tasks of the memcg
    /// first (default 1.0).
    #[serde(default)]
    pub reclaim_kept: Option<Spanned<f64>>,
    /// Pages a successful attempt frees (default 32, SWAP_CLUSTER_MAX).
    #[serde(default)]
    pub reclaim_pages: Option<Spanned<u64>>,
    /// When an attempt's freed pages leave the memcg's usage: `at_end`
    /// (default, just before the retry) or `during` (at the attempt's
    /// midpoint, so the memcg's other tasks can charge them first).
    #[serde(default)]
    pub reclaim_frees: Option<Spanned<String>>,
    /// Memory freed in the background (pages per second, e.g. file cache
    /// written back and dropped), applied every 10 ms. Default 0.
    #[serde(default)]
    pub release_rate: Option<Spanned<f64>>,
    /// Task groups the OOM killer may kill, in order of preference
    /// (the largest first is the kernel's choice; name them so).
    #[serde(default)]
    pub oom_victims: Vec<Spanned<String>>,
    /// The lock (a Linux rwsem, or a family of them: a victim's is the
    /// instance of its task index) standing for a victim's mmap_lock: the
    /// OOM reaper's trylock of it may fail (R103). Default: none, the
    /// reaper always reaps.
    #[serde(default)]
    pub mmap_lock: Option<Spanned<String>>,
    /// `memory.oom.group`: an OOM kill in this memcg kills all its tasks
    /// (R106). Default false.
    #[serde(default)]
    pub oom_group: Option<Spanned<bool>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
    /// Simulated time of one run: `60s`.
    pub duration: Spanned<String>,
    /// A number of CPUs, or `"unlimited"`. Default: the machine's CPUs on a
    /// real profile, unlimited on the ideal one.
    #[serde(default)]
    pub cpus: Option<Spanned<toml::Value>>,
    /// Default seed (the CLI's `--seed` overrides it).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Length of the per-window aggregates: `10s` by default.
    #[serde(default)]
    pub window: Option<Spanned<String>>,
    /// Name of the un-overlaid scenario as a variant: `base` by default.
    #[serde(default)]
    pub base: Option<String>,
    /// Variants to run, in order; by default the base and then every
    /// `[variants.NAME]` in file order.
    #[serde(default)]
    pub variants: Option<Vec<String>>,
    /// Libraries of definitions this scenario builds on: a built-in name
    /// (`kernfs`) or a path relative to the scenario; its own tables
    /// override theirs.
    #[serde(default)]
    pub include: Vec<String>,
    /// CONFIG_HZ: 100, 250, 300 or 1000 (default: the machine's, 250 on
    /// every built-in profile). Sets jiffies, hence the rwsem handoff
    /// timeout (R14).
    #[serde(default)]
    pub hz: Option<Spanned<u32>>,
    /// Wake-to-run latency: from a wakeup (sleep over, lock granted or
    /// retry) until the task may take a CPU; a duration or distribution,
    /// e.g. `exp(5us)`. Zero by default.
    #[serde(default)]
    pub wake_latency: Option<Spanned<String>>,
    /// Kernel preemption model: `none`, `voluntary` or `full` (default:
    /// the machine's; `none` on the ideal one).
    /// Under `full` a woken task that finds no free CPU preempts a task in a
    /// `cpu` step (an RT task is never preempted by a normal one).
    #[serde(default)]
    pub preemption: Option<Spanned<String>>,
    /// Time slice: a task that has run this long while others wait for a
    /// CPU yields at its next preemption point (default: the machine's
    /// scaled base slice on a real profile; none on the ideal one, where a
    /// task keeps its CPU until it blocks).
    #[serde(default)]
    pub timeslice: Option<Spanned<String>>,
    /// Where a woken task waits for a CPU: `fifo` (the run queue's tail;
    /// the ideal machine's default), `first` (ahead of tasks that used up
    /// their slice), `preempt` (also preempting a lock-free task in a
    /// `cpu` step), or an order: `eevdf` (a real profile's default),
    /// `eevdf-6.6`, `cfs`.
    #[serde(default)]
    pub wake_placement: Option<Spanned<String>>,
    /// `shared` (one run queue that every CPU serves; the ideal machine's
    /// default) or `percpu` (one per CPU, as Linux has, a real profile's
    /// default; see `models::sched::cpu`).
    #[serde(default)]
    pub runqueue: Option<Spanned<String>>,
    /// CPU time a task spends being switched in when it gets a CPU that
    /// another task ran on last (`context_switch`), e.g. `3us`. Default:
    /// the machine's (zero on the ideal one); needs a number of CPUs.
    #[serde(default)]
    pub switch_cost: Option<Spanned<String>>,
    /// How fast the CPUs run against those the scenario's costs were
    /// measured on: every `cpu` step and the switch cost take 1/speed of
    /// their time (1 by default; 0.5 is a machine, or a VM's vCPU, at half
    /// the speed).
    #[serde(default)]
    pub cpu_speed: Option<Spanned<f64>>,
    /// `kernel.hung_task_timeout_secs` (R100-R101): a whole number of
    /// seconds, `"0s"` turns khungtaskd off (default `"120s"`).
    #[serde(default)]
    pub hung_task_timeout: Option<Spanned<String>>,
    /// `kernel.hung_task_check_interval_secs`: whole seconds between
    /// checks, `"0s"` (the default) for the timeout.
    #[serde(default)]
    pub hung_task_check_interval: Option<Spanned<String>>,
    /// `kernel.hung_task_warnings`: reports printed, -1 for no limit
    /// (default 10).
    #[serde(default)]
    pub hung_task_warnings: Option<Spanned<i64>>,
}

/// A named distribution (`[dists.NAME]`), in table form.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistDef {
    /// `const`, `uniform`, `exp`, `lognormal`, `pareto`, `mixture`, `empirical`.
    pub dist: Spanned<String>,
    pub value: Option<Spanned<String>>,
    pub mean: Option<Spanned<String>>,
    pub lo: Option<Spanned<String>>,
    pub hi: Option<Spanned<String>>,
    pub median: Option<Spanned<String>>,
    pub sigma: Option<Spanned<f64>>,
    pub scale: Option<Spanned<String>>,
    pub shape: Option<Spanned<f64>>,
    pub cap: Option<Spanned<String>>,
    /// Mixture components: `{ weight = 0.9, dist = "exp(20us)" }`.
    pub parts: Option<Vec<Spanned<MixPart>>>,
    /// Empirical: a bpftrace `hist()` dump or a CSV/TSV of samples, relative
    /// to the scenario file.
    pub file: Option<Spanned<String>>,
    /// `bpftrace-hist` or `samples`.
    pub format: Option<Spanned<String>>,
    /// bpftrace map name when the dump holds several.
    pub map: Option<String>,
    /// Column of a samples file (default: the first).
    pub column: Option<String>,
    /// Unit of the numbers in the file: `ns`, `us`, `ms`, `s`.
    pub unit: Option<Spanned<String>>,
    /// A `const` cost's uncertainty: `["LOW", "HIGH"]`, the values its
    /// sources allow, which `convoy band` varies it between.
    pub range: Option<Spanned<Vec<Spanned<String>>>>,
    /// Where the range's ends come from (needed with `range`).
    pub source: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixPart {
    pub weight: f64,
    /// Inline distribution text, e.g. `lognormal(20ms, 1.5)`.
    pub dist: Spanned<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockDef {
    /// `rwsem`, `mutex`, `spinlock`, `percpu_rw_semaphore`, `seqcount`
    /// or `seqlock`.
    pub kind: Spanned<String>,
    /// Lock policy; `linux` by default.
    #[serde(default)]
    pub policy: Option<Spanned<String>>,
    /// A family of locks, one per instance (`i_rwsem[dir]`,
    /// `pidlist_mutex[cgroup]`), named `NAME[0]`.. or `NAME[self]` in steps.
    #[serde(default)]
    pub instances: Option<u32>,
    /// CONFIG_*_SPIN_ON_OWNER (default true): writers spin on a running
    /// owner.
    #[serde(default)]
    pub spin_on_owner: Option<bool>,
    /// Cache-line model of the lock word: an atomic costs `line_transfer`
    /// when another CPU wrote the line last, `line_local` otherwise, and
    /// atomics on the line run one at a time. Off when absent.
    #[serde(default)]
    pub line_transfer: Option<Spanned<String>>,
    #[serde(default)]
    pub line_local: Option<Spanned<String>>,
    /// A percpu_rw_semaphore's RCU grace period (R85); the machine's by
    /// default.
    #[serde(default)]
    pub grace_period: Option<Spanned<String>>,
    /// A seqcount's write serialisation lock (`seqcount_LOCKNAME_t`,
    /// R86): its writers must hold it.
    #[serde(default)]
    pub lock: Option<Spanned<String>>,
}

/// A data cache line (`[lines.NAME]`), or a family of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineDef {
    /// A family of lines, one per instance (a refcount per cgroup), named
    /// `NAME[0]`.. or `NAME[self]` in steps.
    #[serde(default)]
    pub instances: Option<Spanned<u32>>,
    /// Flat costs instead of the machine's: an access costs `transfer`
    /// when another CPU has the line, `local` when its CPU does. Both or
    /// neither.
    #[serde(default)]
    pub transfer: Option<Spanned<String>>,
    #[serde(default)]
    pub local: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpDef {
    pub steps: Vec<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDef {
    pub count: Spanned<u32>,
    pub program: Vec<Spanned<String>>,
    /// Scheduling class: `normal` (default) or `rt` (SCHED_FIFO/RR; an RT
    /// rwsem writer sets handoff at once, R14).
    #[serde(default)]
    pub class: Option<Spanned<String>>,
    /// Nice level of a `normal` task, -20 to 19 (default 0): its load
    /// weight in EEVDF's order (`sched_prio_to_weight`).
    #[serde(default)]
    pub nice: Option<Spanned<i64>>,
    /// Steps run when a task of the group exits: at its program's end,
    /// or killed, after its locks are released and its memory freed
    /// (`do_exit` after `exit_mm`: `cgroup_exit`, the notifications).
    #[serde(default)]
    pub exit: Vec<Spanned<String>>,
    /// The process the group's tasks are threads of (default: a process
    /// of its own): tasks of one process share what the kernel keeps per
    /// process, named by `NAME[process]` (the fd table's `file_lock`).
    #[serde(default)]
    pub process: Option<Spanned<String>>,
}
