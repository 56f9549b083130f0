//! `models`: kernel mechanisms as state machines driven by the engine.
//!
//! - [`ids`]: typed ids of tasks, CPUs, locks, workqueues, work items and
//!   memcgs.
//! - [`timer`]: when a kernel timer fires: jiffies and the timer wheel's
//!   bucket granularity (R35's delayed-work timers, R47, R48).
//! - [`locks`]: the lock interface ([`LockPolicy`]: a lock is a pluggable
//!   *policy*, FIFO, Linux rwsem, ...; the world that runs tasks only sees
//!   acquisitions, releases and the wakeups they cause), the Linux rwsem
//!   and mutex, the what-if policies, and the registry with
//!   [`locks::AnyLock`], the static dispatch over them.
//! - [`sched`]: a pool of N CPUs (or unlimited) with its run queues, in
//!   arrival order or EEVDF's or CFS's.
//! - [`workqueue`]: Linux workqueues (R32-R36): per-CPU or unbound pwqs
//!   with max_active, delayed work, mod_delayed_work, flush_workqueue; and
//!   the per-CPU worker pools and idle kworkers that run their items (R37).
//! - [`machine`]: the machine under the kernel: topology, cache-line,
//!   IPI, idle-exit, context-switch and hypervisor costs, HZ, preemption
//!   model and base slice, as named profiles whose every value is cited.
//! - [`coherence`]: a cache line as the machine serves it: an owner,
//!   sharers, and operations that queue for the line (R70-R72).
//! - [`memcg`]: a memory cgroup's charge path (R45-R48) as a state
//!   machine: stock, batch, reclaim retries, OOM without a second kill.
//! - [`oom_reaper`]: the OOM reaper's delay, trylock retries and give-up
//!   (R102-R103).
//! - [`psi`]: a cgroup's memory pressure (`memory.pressure`): stall time
//!   and the kernel's fixed-point running averages (R104).
//! - [`hung_task`]: khungtaskd's periodic checks and the uninterruptible
//!   sleeps they report (R100-R101).
//! - [`rcu`]: Tree RCU's normal grace periods, ended by the CPUs' ticks
//!   and the kthread's forcing scans, and the callbacks and
//!   `synchronize_rcu` waiters that wait for them (R90-R94).
//!
//! Dependencies inside the crate point one way: `ids`, `timer` and
//! `machine` are leaves (`machine` uses `ids`); `coherence` uses `ids`
//! and `machine`; `locks` and `workqueue` use `ids` and `timer`, `sched`
//! and `memcg` only `ids`; `rcu` and `hung_task` use `timer` (`rcu` also `ids`); `oom_reaper`
//! and `psi` use nothing; none of these uses another. Each directory's
//! `mod.rs` gives the order of its own modules.
//!
//! Models know nothing about scenario files or output formats. Each model
//! names the kernel rules it implements (R-numbers of docs/kernel-rules.md)
//! or says that it is a what-if policy with no kernel counterpart.

pub mod coherence;
pub mod hung_task;
pub mod ids;
pub mod locks;
pub mod machine;
pub mod memcg;
pub mod oom_reaper;
pub mod psi;
pub mod rcu;
pub mod sched;
pub mod timer;
pub mod workqueue;

pub use ids::{CpuId, LockId, MemcgId, TaskId, WorkId, WqId};
pub use locks::{Acquire, LockCtx, LockKind, LockPolicy, Mode, TaskView, Wake, WordAccess};
