//! `models`: kernel mechanisms as state machines driven by the engine.
//!
//! - [`lock`]: the lock interface. A lock is a pluggable *policy* (FIFO,
//!   Linux rwsem, ...) behind [`lock::LockPolicy`]; the world that runs
//!   tasks only sees acquisitions, releases and the wakeups they cause.
//! - [`rwsem_fifo`]: the classic FIFO writer-queued reader-writer lock of
//!   the benchmark (`docs/bench-convoy.md`).
//! - [`mutex_fifo`]: a FIFO mutex with direct handoff.
//! - [`policy`]: the registry of policies and [`policy::AnyLock`], the
//!   static dispatch over them.
//! - [`memcg`]: a memory cgroup's charge path (R45-R48) as a state
//!   machine: stock, batch, reclaim retries, OOM without a second kill.
//! - [`cpu`]: a pool of N CPUs with a FIFO run queue, or unlimited CPUs.
//! - [`eevdf`]: EEVDF's order of runnable tasks (lag, virtual deadline),
//!   for the pool's run queue.
//! - [`workqueue`]: a Linux workqueue (R32-R36): per-CPU or unbound pwqs
//!   with max_active, delayed work, mod_delayed_work, flush_workqueue.
//! - [`timer`]: when a kernel timer fires: jiffies and the timer wheel's
//!   bucket granularity (R35's delayed-work timers).
//!
//! Models know nothing about scenario files or output formats. Each model
//! names the kernel rules it implements (R-numbers of docs/kernel-rules.md)
//! or says that it is a what-if policy with no kernel counterpart.

pub mod cfs;
pub mod cpu;
pub mod eevdf;
pub mod fair;
pub mod lock;
pub mod lock_none;
pub mod memcg;
pub mod mutex_fifo;
pub mod mutex_linux;
pub mod policy;
pub mod rwsem_fifo;
pub mod rwsem_linux;
pub mod rwsem_phase_fair;
pub mod rwsem_reader_pref;
pub mod rwsem_rt;
pub mod rwsem_writer_pref;
mod split_queues;
#[cfg(test)]
mod testing;
pub mod timer;
pub mod workqueue;

pub use lock::{Acquire, LockCtx, LockKind, LockPolicy, Mode, TaskId, TaskView, Wake};
