//! The registry of lock policies: which policies each lock kind has, and
//! [`AnyLock`], one lock instance under any of them.
//!
//! Every policy implements [`LockPolicy`]; `AnyLock` is an enum over them
//! rather than a `Box<dyn LockPolicy>` so that the world's calls are static
//! and inlined (the lock calls are on the hottest path of every run). A new
//! policy is a new module, a variant here and a line in [`POLICIES`].

use crate::ids::TaskId;
use crate::locks::mutex_fifo::FifoMutex;
use crate::locks::mutex_linux::LinuxMutex;
use crate::locks::none::NoLock;
use crate::locks::percpu_rwsem::PercpuRwsem;
use crate::locks::policy::WordAccess;
use crate::locks::policy::{Acquire, LockCtx, LockKind, LockPolicy, Mode, Wake};
use crate::locks::rwsem_fifo::FifoRwsem;
use crate::locks::rwsem_linux::{LinuxRwsem, LinuxRwsemConfig};
use crate::locks::rwsem_phase_fair::PhaseFairRwsem;
use crate::locks::rwsem_reader_pref::ReaderPrefRwsem;
use crate::locks::rwsem_rt::RtRwsem;
use crate::locks::rwsem_writer_pref::WriterPrefRwsem;
use crate::locks::seqcount::Seqcount;
use crate::locks::seqlock::Seqlock;
use crate::locks::spinlock::{QSpinlock, TicketSpinlock};
use sim::{Dur, SimTime};

/// (kind, policy name) pairs that exist, in the order documentation lists
/// them.
pub const POLICIES: &[(LockKind, &str)] = &[
    (LockKind::Rwsem, "linux"),
    (LockKind::Mutex, "linux"),
    (LockKind::Rwsem, "fifo"),
    (LockKind::Mutex, "fifo"),
    (LockKind::Rwsem, "reader-pref"),
    (LockKind::Rwsem, "writer-pref"),
    (LockKind::Rwsem, "phase-fair"),
    (LockKind::Rwsem, "rt"),
    (LockKind::Rwsem, "none"),
    (LockKind::Mutex, "none"),
    (LockKind::Spinlock, "linux"),
    (LockKind::Spinlock, "ticket"),
    (LockKind::Spinlock, "none"),
    (LockKind::PercpuRwsem, "linux"),
    (LockKind::PercpuRwsem, "none"),
    (LockKind::Seqcount, "linux"),
    (LockKind::Seqlock, "linux"),
];

/// The policy a lock of `kind` gets when the scenario names none.
pub fn default_policy(_kind: LockKind) -> &'static str {
    "linux"
}

/// Whether a policy implements `downgrade_write` (R21).
pub fn supports_downgrade(kind: LockKind, policy: &str) -> bool {
    kind == LockKind::Rwsem && matches!(policy, "linux" | "fifo" | "none")
}

/// The policy names a lock kind accepts.
pub fn policies_of(kind: LockKind) -> Vec<&'static str> {
    POLICIES
        .iter()
        .filter(|(k, _)| *k == kind)
        .map(|(_, p)| *p)
        .collect()
}

/// Kernel build options and machine values that change a lock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LockOptions {
    /// CONFIG_RWSEM_SPIN_ON_OWNER / CONFIG_MUTEX_SPIN_ON_OWNER (default y on
    /// SMP, !PREEMPT_RT): writers spin on a running owner (R8-R11, R27).
    pub spin_on_owner: bool,
    /// A percpu_rw_semaphore's `rcu_sync` grace period when the lock
    /// gives one (R85, a what-if); none: the world's RCU model's
    /// (R90-R93), as the kernel's.
    pub grace_period: Option<Dur>,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            spin_on_owner: true,
            grace_period: None,
        }
    }
}

/// One lock instance under one policy.
#[derive(Clone, Debug)]
pub enum AnyLock {
    LinuxRwsem(LinuxRwsem),
    LinuxMutex(LinuxMutex),
    FifoRwsem(FifoRwsem),
    FifoMutex(FifoMutex),
    ReaderPref(ReaderPrefRwsem),
    WriterPref(WriterPrefRwsem),
    PhaseFair(PhaseFairRwsem),
    Rt(RtRwsem),
    /// `none`, for every kind that has it.
    None(NoLock),
    QSpinlock(QSpinlock),
    Ticket(TicketSpinlock),
    PercpuRwsem(PercpuRwsem),
    Seqcount(Seqcount),
    Seqlock(Seqlock),
}

impl AnyLock {
    /// A fresh lock, or `None` if the kind has no such policy.
    pub fn new(kind: LockKind, policy: &str) -> Option<AnyLock> {
        Self::with_options(kind, policy, LockOptions::default())
    }

    /// A fresh lock with build options; `None` if the kind has no such policy.
    pub fn with_options(kind: LockKind, policy: &str, o: LockOptions) -> Option<AnyLock> {
        match (kind, policy) {
            (LockKind::Rwsem, "linux") => {
                Some(AnyLock::LinuxRwsem(LinuxRwsem::new(LinuxRwsemConfig {
                    spin_on_owner: o.spin_on_owner,
                })))
            }
            (LockKind::Mutex, "linux") => {
                Some(AnyLock::LinuxMutex(LinuxMutex::new(o.spin_on_owner)))
            }
            (LockKind::Rwsem, "fifo") => Some(AnyLock::FifoRwsem(FifoRwsem::new())),
            (LockKind::Mutex, "fifo") => Some(AnyLock::FifoMutex(FifoMutex::new())),
            (LockKind::Rwsem, "reader-pref") => Some(AnyLock::ReaderPref(ReaderPrefRwsem::new())),
            (LockKind::Rwsem, "writer-pref") => Some(AnyLock::WriterPref(WriterPrefRwsem::new())),
            (LockKind::Rwsem, "phase-fair") => Some(AnyLock::PhaseFair(PhaseFairRwsem::new())),
            (LockKind::Rwsem, "rt") => Some(AnyLock::Rt(RtRwsem::new())),
            (LockKind::Rwsem | LockKind::Mutex, "none") => Some(AnyLock::None(NoLock::new())),
            (LockKind::Spinlock, "linux") => Some(AnyLock::QSpinlock(QSpinlock::new())),
            (LockKind::Spinlock, "ticket") => Some(AnyLock::Ticket(TicketSpinlock::new())),
            (LockKind::Spinlock | LockKind::PercpuRwsem, "none") => {
                Some(AnyLock::None(NoLock::new()))
            }
            (LockKind::PercpuRwsem, "linux") => Some(AnyLock::PercpuRwsem(match o.grace_period {
                Some(g) => PercpuRwsem::new(g),
                None => PercpuRwsem::on_rcu(),
            })),
            (LockKind::Seqcount, "linux") => Some(AnyLock::Seqcount(Seqcount::new())),
            (LockKind::Seqlock, "linux") => Some(AnyLock::Seqlock(Seqlock::new())),
            _ => None,
        }
    }
}

macro_rules! each {
    ($self:ident, $l:ident => $e:expr) => {
        match $self {
            AnyLock::LinuxRwsem($l) => $e,
            AnyLock::LinuxMutex($l) => $e,
            AnyLock::FifoRwsem($l) => $e,
            AnyLock::FifoMutex($l) => $e,
            AnyLock::ReaderPref($l) => $e,
            AnyLock::WriterPref($l) => $e,
            AnyLock::PhaseFair($l) => $e,
            AnyLock::Rt($l) => $e,
            AnyLock::None($l) => $e,
            AnyLock::QSpinlock($l) => $e,
            AnyLock::Ticket($l) => $e,
            AnyLock::PercpuRwsem($l) => $e,
            AnyLock::Seqcount($l) => $e,
            AnyLock::Seqlock($l) => $e,
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
    fn resched(&mut self, ctx: &LockCtx, spinner: Option<TaskId>, wakes: &mut Vec<Wake>) -> bool {
        each!(self, l => l.resched(ctx, spinner, wakes))
    }
    #[inline]
    fn has_spinners(&self) -> bool {
        each!(self, l => l.has_spinners())
    }
    fn take_rcu_callback(&mut self) -> bool {
        each!(self, l => l.take_rcu_callback())
    }
    fn rcu_callback(&mut self, ctx: &LockCtx, wakes: &mut Vec<Wake>) {
        each!(self, l => l.rcu_callback(ctx, wakes))
    }
    fn word_pollers(&self) -> [Option<TaskId>; 2] {
        each!(self, l => l.word_pollers())
    }
    fn rereaders(&self, out: &mut Vec<TaskId>) {
        each!(self, l => l.rereaders(out))
    }
    fn rereads(&self, mode: Mode) -> bool {
        each!(self, l => l.rereads(mode))
    }
    #[inline]
    fn word_access(&self, now: SimTime, mode: Mode, acquire: bool) -> WordAccess {
        each!(self, l => l.word_access(now, mode, acquire))
    }
    fn read_retry(&mut self, ctx: &LockCtx, task: TaskId) -> bool {
        each!(self, l => l.read_retry(ctx, task))
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
    fn read_trylock_ok(&self) -> bool {
        each!(self, l => l.read_trylock_ok())
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
        assert_eq!(policies_of(LockKind::Mutex), vec!["linux", "fifo", "none"]);
        assert_eq!(
            policies_of(LockKind::Spinlock),
            vec!["linux", "ticket", "none"]
        );
        for k in LockKind::ALL {
            assert_eq!(LockKind::by_name(k.as_str()), Some(k));
            assert!(AnyLock::new(k, default_policy(k)).is_some());
        }
    }
}
