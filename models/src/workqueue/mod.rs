//! Workqueues and the kworkers that run their items.
//!
//! - [`queue`]: one workqueue (R32-R36): pwqs with `max_active`, delayed
//!   work, `mod_delayed_work`, `flush_workqueue`, as a state machine that
//!   answers with [`Action`]s;
//! - [`worker_pools`]: the per-CPU worker pools that run per-CPU
//!   workqueues' items (R37): worklist, `nr_running`, kick, keep_working;
//! - [`idle_kworkers`]: idle kworkers, by all and by home CPU, in the
//!   order the pools and workqueues take them (R37);
//! - [`flush_prep`]: what a flush's passes over the pwqs cost its caller
//!   on the CPU, by the machine's size and line costs (R118).
//!
//! Dependencies point one way: `worker_pools` -> `idle_kworkers` ->
//! `crate::ids`; `queue` -> `crate::ids`, `crate::timer`; `flush_prep` ->
//! `queue`, `crate::machine`.

pub mod flush_prep;
pub mod idle_kworkers;
pub mod queue;
pub mod worker_pools;

pub use idle_kworkers::IdleKworkers;
pub use queue::{
    wq_clamp_max_active, Action, FlushId, FlushOutcome, PwqStats, Workqueue, WqKind,
    CGROUP_PIDLIST_DESTROY_DELAY, WQ_DFL_ACTIVE, WQ_MAX_ACTIVE,
};
pub use worker_pools::{PoolState, WorkerPools};
