//! The lock interface: what every lock policy implements.
//!
//! A policy owns the state of one lock instance (holders, wait queue,
//! flags, spinners) and answers: may this task have the lock now
//! ([`LockPolicy::acquire`]), whom does a release wake
//! ([`LockPolicy::release`]), and may a woken task that was *not* granted
//! the lock have it now that it runs ([`LockPolicy::retry`]).
//!
//! An acquisition either succeeds, sleeps in the wait queue, or **spins**:
//! the task keeps its CPU and waits, optionally until a deadline (an rwsem
//! writer's 10-25 us budget on a reader-owned lock, R10). The world then
//! tells the policy when the deadline passes ([`LockPolicy::spin_timeout`]),
//! when a holder leaves its CPU ([`LockPolicy::owner_off_cpu`]: spinning on
//! a sleeping owner is pointless, R8/R9) and when a CPU is wanted
//! ([`LockPolicy::resched`]: need_resched ends a spin). need_resched is
//! per CPU, as the kernel's TIF_NEED_RESCHED is a flag of the task on a
//! CPU: a task waiting for CPU 3 does not end a spin on CPU 5.
//!
//! Wakeups come in these kinds, because the kernel has all of them:
//! - [`Wake::Granted`]: the lock was handed to a sleeping task before it
//!   runs (a FIFO handoff; Linux rwsem readers woken in a batch, R18);
//! - [`Wake::Retry`]: a sleeping task is only woken and must try again when
//!   it gets a CPU (a Linux rwsem writer, R16), and may lose;
//! - [`Wake::SpinGranted`]: a spinning task got the lock (it is on its CPU);
//! - [`Wake::SpinSlept`]: a spinning task gave up and now sleeps in the wait
//!   queue (it leaves its CPU);
//! - [`Wake::SpinUntil`]: a spinning task goes on with a new deadline.
//!
//! Wakes are appended to a caller-owned buffer in the order the lock issues
//! them; the world turns them into events in that order, so policies never
//! allocate on the hot path and the order of wakeups is part of the model.

use crate::ids::TaskId;
use sim::SimTime;

/// Read (shared) or write (exclusive). A mutex is always `Write`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    Read,
    Write,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
        }
    }
}

/// Who holds an rwsem under the simple policies: a reader count and a
/// writer flag (their count word).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Holders {
    pub readers: u32,
    pub writer: bool,
}

impl Holders {
    pub fn is_free(&self) -> bool {
        self.readers == 0 && !self.writer
    }

    /// `mode` takes the lock (the caller checked it may).
    pub fn take(&mut self, mode: Mode) {
        match mode {
            Mode::Read => self.readers += 1,
            Mode::Write => {
                debug_assert!(self.is_free(), "a writer needs the lock free");
                self.writer = true;
            }
        }
    }

    /// A hold in `mode` ends.
    pub fn release(&mut self, mode: Mode) {
        match mode {
            Mode::Read => {
                debug_assert!(self.readers > 0, "up_read of a lock with no readers");
                self.readers = self.readers.saturating_sub(1);
            }
            Mode::Write => {
                debug_assert!(self.writer, "up_write of a lock with no writer");
                self.writer = false;
            }
        }
    }
}

/// The kind of lock a scenario declares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LockKind {
    Rwsem,
    Mutex,
    /// `spinlock_t`: waiters spin on their CPU, holders run with
    /// preemption disabled (R75-R80).
    Spinlock,
    /// `struct percpu_rw_semaphore` (R81-R85).
    PercpuRwsem,
    /// `seqcount_t`: readers retry, writers never wait (R86, R87).
    Seqcount,
    /// `seqlock_t`: a seqcount whose writers take its spinlock (R86-R88).
    Seqlock,
}

impl LockKind {
    /// The kind's name as scenario files spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Rwsem => "rwsem",
            LockKind::Mutex => "mutex",
            LockKind::Spinlock => "spinlock",
            LockKind::PercpuRwsem => "percpu_rw_semaphore",
            LockKind::Seqcount => "seqcount",
            LockKind::Seqlock => "seqlock",
        }
    }

    /// Every kind, in the order documentation lists them.
    pub const ALL: [LockKind; 6] = [
        LockKind::Rwsem,
        LockKind::Mutex,
        LockKind::Spinlock,
        LockKind::PercpuRwsem,
        LockKind::Seqcount,
        LockKind::Seqlock,
    ];

    /// The kind named `name` in a scenario file.
    pub fn by_name(name: &str) -> Option<LockKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Whether a hold in `mode` runs with preemption disabled: a
    /// spinlock's (R75, `spin_lock` disables it) and a sequence
    /// counter's write section (R86: the writer must not be preempted).
    /// Such a holder never sleeps and is never preempted.
    pub fn disables_preemption(self, mode: Mode) -> bool {
        match self {
            LockKind::Spinlock => true,
            LockKind::Seqcount | LockKind::Seqlock => mode == Mode::Write,
            LockKind::Rwsem | LockKind::Mutex | LockKind::PercpuRwsem => false,
        }
    }

    /// Whether an acquisition may sleep (`might_sleep()` in the kernel's
    /// function): a voluntary preemption point, and a bug with preemption
    /// disabled.
    pub fn acquire_may_sleep(self) -> bool {
        matches!(
            self,
            LockKind::Rwsem | LockKind::Mutex | LockKind::PercpuRwsem
        )
    }
}

/// The answer to an acquisition request (or a retry, or a spin timeout).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// The task owns the lock now and goes on.
    Granted,
    /// The task sleeps until a [`Wake`] names it.
    Queued,
    /// The task keeps its CPU and spins, until a wake names it or, if
    /// `until` is set, until then ([`LockPolicy::spin_timeout`]).
    Spin { until: Option<SimTime> },
    /// The task sleeps until `until` (an RCU grace period, R82), then is
    /// woken by that timer to try again ([`LockPolicy::retry`]).
    Sleep { until: SimTime },
    /// The task sleeps in `synchronize_rcu` until the world's RCU model
    /// ends the next grace period (R82 on R93), then tries again
    /// ([`LockPolicy::retry`]).
    GracePeriod,
}

/// What a lock step does to the lock's word (its cache line, R74): the
/// world charges the access before the policy decides.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WordAccess {
    /// Nothing shared: a per-CPU counter (R81's fast path).
    None,
    /// A plain load (R71): a sequence count, a percpu rwsem's `block`.
    Read,
    /// A read-modify-write (R70): every other lock's fast path and
    /// release.
    Rmw,
}

/// A wakeup issued by a lock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    /// A sleeping task owns the lock; it goes on when it runs.
    Granted(TaskId),
    /// A sleeping task was woken without the lock; when it runs it calls
    /// [`LockPolicy::retry`].
    Retry(TaskId),
    /// A spinning task owns the lock and goes on at once.
    SpinGranted(TaskId),
    /// A spinning task stopped spinning and sleeps in the wait queue.
    SpinSlept(TaskId),
    /// A spinning task goes on spinning, now with this deadline (it became
    /// the head of the spinners, or a new reader phase reset its budget);
    /// `SimTime::MAX` means no deadline.
    SpinUntil(TaskId, SimTime),
}

/// What a policy may ask about tasks.
pub trait TaskView {
    /// The task runs in a real-time class (R13/R14: an RT writer sets
    /// handoff at once).
    fn is_rt(&self, t: TaskId) -> bool;
    /// The task is on a CPU (running or spinning), not asleep or waiting for
    /// a CPU (R8: spinning on an owner that is off CPU is refused).
    fn on_cpu(&self, t: TaskId) -> bool;
    /// Task `t`'s CPU is wanted: a task waits for it (need_resched on that
    /// CPU; `t` spins or is about to, and stops or does not start, R8/R9,
    /// R27/R28). With one shared run queue every waiting task wants every
    /// CPU.
    fn need_resched(&self, t: TaskId) -> bool;
}

/// A view for tests and for worlds without tasks of interest: nobody is RT,
/// everybody is on a CPU, no CPU is wanted.
pub struct AllOnCpu;

impl TaskView for AllOnCpu {
    fn is_rt(&self, _: TaskId) -> bool {
        false
    }
    fn on_cpu(&self, _: TaskId) -> bool {
        true
    }
    fn need_resched(&self, _: TaskId) -> bool {
        false
    }
}

/// The world as a policy sees it when it decides.
pub struct LockCtx<'a> {
    pub now: SimTime,
    /// Kernel tick rate (CONFIG_HZ) for jiffies (R14).
    pub hz: u32,
    pub tasks: &'a dyn TaskView,
}

impl LockCtx<'_> {
    /// `jiffies` at `now`: whole ticks since the start of the run.
    #[inline]
    pub fn jiffies(&self) -> u64 {
        crate::timer::jiffies_at(self.now, self.hz)
    }
}

/// One lock instance under one policy.
pub trait LockPolicy: Send {
    /// The policy's name as scenario files spell it (`fifo`, `linux`, ...).
    fn policy(&self) -> &'static str;

    /// `task` asks for the lock in `mode`. Grants and wakeups this causes
    /// for other tasks are appended to `wakes`.
    fn acquire(
        &mut self,
        ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        wakes: &mut Vec<Wake>,
    ) -> Acquire;

    /// `task` releases a hold in `mode`; tasks that now get the lock (or are
    /// woken to retry, or stop spinning) are appended to `wakes`, in order.
    fn release(&mut self, ctx: &LockCtx, task: TaskId, mode: Mode, wakes: &mut Vec<Wake>);

    /// A task woken with [`Wake::Retry`] runs again and tries once more.
    /// Policies that never issue `Retry` keep the default.
    fn retry(&mut self, ctx: &LockCtx, task: TaskId, mode: Mode, wakes: &mut Vec<Wake>) -> Acquire {
        let _ = (ctx, task, mode, wakes);
        Acquire::Queued
    }

    /// A spinning task's deadline passed. Policies that never spin with a
    /// deadline keep the default.
    fn spin_timeout(
        &mut self,
        ctx: &LockCtx,
        task: TaskId,
        mode: Mode,
        wakes: &mut Vec<Wake>,
    ) -> Acquire {
        let _ = (ctx, task, mode, wakes);
        Acquire::Queued
    }

    /// `holder`, which holds this lock, left its CPU (sleeps or waits for
    /// another lock). Spinners that spin on it stop.
    fn owner_off_cpu(&mut self, ctx: &LockCtx, holder: TaskId, wakes: &mut Vec<Wake>) {
        let _ = (ctx, holder, wakes);
    }

    /// A CPU is wanted: the task spinning on it, `Some(t)`, stops if it
    /// spins on this lock; with `None` (one shared run queue: any CPU will
    /// do) the last spinner stops. A stopped spinner sleeps in the wait
    /// queue, or takes the lock if the slowpath finds it free. Returns
    /// whether one stopped.
    fn resched(&mut self, ctx: &LockCtx, spinner: Option<TaskId>, wakes: &mut Vec<Wake>) -> bool {
        let _ = (ctx, spinner, wakes);
        false
    }

    /// Whether any task spins on this lock.
    fn has_spinners(&self) -> bool {
        false
    }

    /// Whether the lock asked, since it was last asked, for an RCU
    /// callback after the next grace period of the world's RCU model
    /// (`call_rcu`, R82 on R92); the world then calls
    /// [`LockPolicy::rcu_callback`] when it runs.
    fn take_rcu_callback(&mut self) -> bool {
        false
    }

    /// The RCU callback the lock asked for has run (R82's `rcu_sync_func`).
    fn rcu_callback(&mut self, ctx: &LockCtx, wakes: &mut Vec<Wake>) {
        let _ = (ctx, wakes);
    }

    /// The spinners that poll the lock word now, at most two: the OSQ
    /// head (R9, R28) and a first waiter that spins on the owner (R15,
    /// R29). The other OSQ spinners poll their own per-CPU node (R73).
    /// Each poller keeps a copy of the word's cache line.
    fn word_pollers(&self) -> [Option<TaskId>; 2] {
        [None, None]
    }

    /// The spinners that re-read the word after every write to it, each
    /// in turn (R80): a ticket lock's waiters, readers waiting for an
    /// even sequence count. Appended to `out`, in no particular order.
    fn rereaders(&self, out: &mut Vec<TaskId>) {
        let _ = out;
    }

    /// Whether a spinner in `mode` that is granted the lock goes on once
    /// its re-read of the word is done (R80: it saw its ticket, or an
    /// even count), instead of after a cmpxchg of its own (R73).
    fn rereads(&self, mode: Mode) -> bool {
        let _ = mode;
        false
    }

    /// What a lock step in `mode` (an acquisition, or a release when
    /// `acquire` is false) does to the lock word at `now`.
    fn word_access(&self, now: SimTime, mode: Mode, acquire: bool) -> WordAccess {
        let _ = (now, mode, acquire);
        WordAccess::Rmw
    }

    /// `read_seqcount_retry`: `task`'s read section ends; whether a
    /// writer overlapped it and it must read again (seqcount and seqlock
    /// only, R87).
    fn read_retry(&mut self, ctx: &LockCtx, task: TaskId) -> bool {
        let _ = (ctx, task);
        unreachable!("read_seqcount_retry on a lock without sequence")
    }

    /// `downgrade_write`: the writer `task` becomes a reader (rwsem only).
    fn downgrade(&mut self, ctx: &LockCtx, task: TaskId, wakes: &mut Vec<Wake>) {
        let _ = (ctx, task, wakes);
        unreachable!("downgrade_write on a lock policy without it")
    }

    /// A queued (sleeping) waiter leaves without the lock (a fatal signal,
    /// R23). Returns whether it was queued.
    fn remove_waiter(&mut self, ctx: &LockCtx, task: TaskId, wakes: &mut Vec<Wake>) -> bool {
        let _ = (ctx, task, wakes);
        false
    }

    /// Number of tasks currently queued (sleeping).
    fn queued(&self) -> usize;

    /// Whether a read trylock (`down_read_trylock`) would succeed now,
    /// for a caller that takes the lock and lets it go at once (the OOM
    /// reaper's `mmap_read_trylock`, R103): nothing changes. Only the
    /// Linux rwsem answers (the compiler allows no other); the rest say
    /// no.
    fn read_trylock_ok(&self) -> bool {
        false
    }

    /// Policy-specific counters (handoffs, steals, ...), name and value, in a
    /// fixed order.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
