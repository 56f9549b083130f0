//! The registry of lock policies: which policies each lock kind has, and
//! [`AnyLock`], one lock instance under any of them.
//!
//! Every policy implements [`LockPolicy`]; `AnyLock` is an enum over them
//! rather than a `Box<dyn LockPolicy>` so that the world's calls are static
//! and inlined (the lock calls are on the hottest path of every run). A new
//! policy is a new module, a variant here and a line in [`POLICIES`].

use crate::lock::{Acquire, LockCtx, LockKind, LockPolicy, Mode, TaskId, Wake};
use crate::mutex_fifo::FifoMutex;
use crate::rwsem_fifo::FifoRwsem;

/// (kind, policy name) pairs that exist, in the order documentation lists
/// them.
pub const POLICIES: &[(LockKind, &str)] = &[(LockKind::Rwsem, "fifo"), (LockKind::Mutex, "fifo")];

/// The policy a lock of `kind` gets when the scenario names none.
pub fn default_policy(_kind: LockKind) -> &'static str {
    "fifo"
}

/// The policy names a lock kind accepts.
pub fn policies_of(kind: LockKind) -> Vec<&'static str> {
    POLICIES
        .iter()
        .filter(|(k, _)| *k == kind)
        .map(|(_, p)| *p)
        .collect()
}

/// One lock instance under one policy.
#[derive(Debug)]
pub enum AnyLock {
    FifoRwsem(FifoRwsem),
    FifoMutex(FifoMutex),
}

impl AnyLock {
    /// A fresh lock, or `None` if the kind has no such policy.
    pub fn new(kind: LockKind, policy: &str) -> Option<AnyLock> {
        match (kind, policy) {
            (LockKind::Rwsem, "fifo") => Some(AnyLock::FifoRwsem(FifoRwsem::new())),
            (LockKind::Mutex, "fifo") => Some(AnyLock::FifoMutex(FifoMutex::new())),
            _ => None,
        }
    }
}

macro_rules! each {
    ($self:ident, $l:ident => $e:expr) => {
        match $self {
            AnyLock::FifoRwsem($l) => $e,
            AnyLock::FifoMutex($l) => $e,
        }
    };
}

impl LockPolicy for AnyLock {
    fn policy(&self) -> &'static str {
        each!(self, l => l.policy())
    }
    #[inline]
    fn acquire(
        &mut self,
        ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        wakes: &mut Vec<Wake>,
    ) -> Acquire {
        each!(self, l => l.acquire(ctx, task, mode, wakes))
    }
    #[inline]
    fn release(&mut self, ctx: &LockCtx, task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) {
        each!(self, l => l.release(ctx, task, mode, wakes))
    }
    fn retry(&mut self, ctx: &LockCtx, task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        each!(self, l => l.retry(ctx, task, mode, wakes))
    }
    fn spin_timeout(
        &mut self,
        ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        wakes: &mut Vec<Wake>,
    ) -> Acquire {
        each!(self, l => l.spin_timeout(ctx, task, mode, wakes))
    }
    fn owner_off_cpu(&mut self, ctx: &LockCtx, holder: TaskId, wakes: &mut Vec<Wake>) {
        each!(self, l => l.owner_off_cpu(ctx, holder, wakes))
    }
    fn resched(&mut self, ctx: &LockCtx, wakes: &mut Vec<Wake>) -> bool {
        each!(self, l => l.resched(ctx, wakes))
    }
    #[inline]
    fn has_spinners(&self) -> bool {
        each!(self, l => l.has_spinners())
    }
    fn downgrade(&mut self, ctx: &LockCtx, task: TaskId, wakes: &mut Vec<Wake>) {
        each!(self, l => l.downgrade(ctx, task, wakes))
    }
    fn remove_waiter(&mut self, ctx: &LockCtx, task: TaskId, wakes: &mut Vec<Wake>) -> bool {
        each!(self, l => l.remove_waiter(ctx, task, wakes))
    }
    fn queued(&self) -> usize {
        each!(self, l => l.queued())
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        each!(self, l => l.counters())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_policy_can_be_built_and_reports_its_name() {
        for &(kind, name) in POLICIES {
            let l = AnyLock::new(kind, name).expect("listed policies build");
            assert_eq!(l.policy(), name);
        }
        assert!(AnyLock::new(LockKind::Rwsem, "lifo").is_none());
        assert_eq!(policies_of(LockKind::Mutex), vec!["fifo"]);
    }
}
