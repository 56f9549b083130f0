//! Locks: the interface every lock policy implements, the policies, and
//! the registry that builds one by name.
//!
//! - [`policy`]: the [`LockPolicy`] trait and what a policy is given
//!   ([`LockCtx`], [`TaskView`]) and answers ([`Acquire`], [`Wake`]);
//! - [`rwsem_linux`], [`mutex_linux`]: the Linux rw_semaphore (R1-R24)
//!   and mutex (R25-R31);
//! - [`rwsem_fifo`], [`mutex_fifo`]: FIFO locks with direct handoff (the
//!   rwsem of docs/bench-convoy.md);
//! - [`rwsem_reader_pref`], [`rwsem_writer_pref`], [`rwsem_phase_fair`],
//!   [`rwsem_rt`], [`none`]: what-if policies (docs/lock-policies.md); the
//!   four two-queue ones keep their state in `split_queues`;
//! - [`spinlock`]: `spinlock_t`, the qspinlock and a ticket lock
//!   (R75-R79); [`percpu_rwsem`]: `percpu_rw_semaphore` and its
//!   `rcu_sync` (R81-R85); [`seqcount`], [`seqlock`]: sequence counters
//!   and the seqlock (R86-R88);
//! - [`registry`]: which policies each lock kind has, and [`AnyLock`],
//!   the static dispatch over them.
//!
//! Dependencies point one way: `registry` -> the policies ->
//! `split_queues` -> `policy` -> `crate::ids`, `crate::timer`; `seqlock`
//! uses `seqcount` and `spinlock`.

pub mod mutex_fifo;
pub mod mutex_linux;
pub mod none;
pub mod percpu_rwsem;
pub mod policy;
pub mod registry;
pub mod rwsem_fifo;
pub mod rwsem_linux;
pub mod rwsem_phase_fair;
pub mod rwsem_reader_pref;
pub mod rwsem_rt;
pub mod rwsem_writer_pref;
pub mod seqcount;
pub mod seqlock;
pub mod spinlock;
mod split_queues;
#[cfg(test)]
mod testing;

pub use policy::{Acquire, LockCtx, LockKind, LockPolicy, Mode, TaskView, Wake, WordAccess};
pub use registry::{
    default_policy, policies_of, supports_downgrade, AnyLock, LockOptions, POLICIES,
};
