//! The tasks: the task table (program tasks, then kworkers), each task's
//! program stream, and the slot tables where a task keeps the locks it
//! holds, the spans it has open and the repeats it is in.

use super::*;

/// Every task and what its program keeps: the [`World`]'s task state.
/// The per-task tables are apart from [`Task`] because they are as long
/// as the program needs (a run of [`SlotBase`] entries each), and the
/// program's stream because it is large and read only at a draw, while
/// the task's own fields are read at every event.
#[derive(Clone)]
pub(super) struct Tasks {
    /// The program tasks, group by group, then the kworkers, workqueue
    /// by workqueue.
    pub(super) table: TiVec<TaskId, Task>,
    /// Each task's program stream (draws of its delays, keys, branches),
    /// beside the table: a stream is 320 bytes, and in the task it spread
    /// the fields that every event reads over more cache lines.
    pub(super) rngs: TiVec<TaskId, Stream>,
    /// When each hold slot's hold began.
    pub(super) holds: Vec<SimTime>,
    /// The lock and mode in each hold slot ([`held_code`]; 0 for none),
    /// same index as `holds`.
    pub(super) held: Vec<u32>,
    /// When each span slot's span began.
    pub(super) spans: Vec<SimTime>,
    /// Each repeat slot's iterations left.
    pub(super) reps: Vec<u64>,
}

impl std::ops::Index<TaskId> for Tasks {
    type Output = Task;
    #[inline(always)]
    fn index(&self, t: TaskId) -> &Task {
        &self.table[t]
    }
}

impl std::ops::IndexMut<TaskId> for Tasks {
    #[inline(always)]
    fn index_mut(&mut self, t: TaskId) -> &mut Task {
        &mut self.table[t]
    }
}

impl Tasks {
    /// The tasks of one replication: each group's tasks, then each
    /// workqueue's kworkers. Each task's streams are keyed by (seed,
    /// replication, `task/GROUP`, index), a kworker's by
    /// `task/kworker/WQ`.
    pub(super) fn new(c: &Compiled, (seed, replication): (u64, u64)) -> Tasks {
        let mut tasks: TiVec<TaskId, Task> = TiVec::new();
        let mut rngs = TiVec::new();
        let mut slots = SlotBases::ZERO;
        for (g, group) in c.groups.iter_enumerated() {
            for i in 0..group.count {
                tasks.push(Task::new(
                    c,
                    (seed, replication),
                    &group.name,
                    g,
                    i,
                    slots,
                    &mut rngs,
                ));
                slots = slots.after((group.hold_slots, group.span_slots, group.repeat_slots));
            }
        }
        // kworkers: tasks of no group until they run an item, with slots
        // for the largest work program.
        let wslots = |f: fn(&GroupProg) -> u8| c.work_programs().iter().map(f).max().unwrap_or(0);
        // A kworker names the first work program until its first item
        // (the last task group's, when there is none).
        let kworker_group = (c.groups.last_key())
            .expect("a scenario has a task group")
            .min(GroupId(c.task_groups));
        let kworker_slots = (
            wslots(|g| g.hold_slots),
            wslots(|g| g.span_slots),
            wslots(|g| g.repeat_slots),
        );
        for (q, wq) in c.workqueues.iter_enumerated() {
            for i in 0..wq.workers {
                let mut w = Task::new(
                    c,
                    (seed, replication),
                    &format!("kworker/{}", wq.name),
                    kworker_group,
                    i,
                    slots,
                    &mut rngs,
                );
                w.state = State::Idle;
                w.rt = false;
                w.self_key = 0;
                w.worker_of = Some(q);
                w.cold = i >= wq.warm_workers;
                tasks.push(w);
                slots = slots.after(kworker_slots);
            }
        }
        Tasks {
            table: tasks,
            rngs,
            holds: vec![SimTime::ZERO; slots.hold.index()],
            held: vec![0; slots.hold.index()],
            spans: vec![SimTime::ZERO; slots.span.index()],
            reps: vec![0; slots.rep.index()],
        }
    }

    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = TaskId> {
        self.table.keys()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (TaskId, &Task)> {
        self.table.iter_enumerated()
    }

    /// The first kworker (the number of program tasks).
    pub(super) fn first_kworker(&self) -> TaskId {
        (self.table.iter())
            .position(|t| t.worker_of.is_some())
            .map_or(self.table.next_key(), TaskId::from)
    }

    /// `group[i]`, as errors name a task.
    pub(super) fn name(&self, c: &Compiled, t: TaskId) -> String {
        let task = &self.table[t];
        format!("{}[{}]", c.groups[task.group].name, task.index)
    }

    /// The entries of `t`'s hold slots in `holds` and `held`: as many as
    /// its current program has.
    pub(super) fn hold_slots(&self, c: &Compiled, t: TaskId) -> std::ops::Range<usize> {
        let task = &self.table[t];
        task.slots.hold.range(c.groups[task.group].hold_slots)
    }

    /// Whether `t` holds any lock now.
    pub(super) fn holds_lock(&self, c: &Compiled, t: TaskId) -> bool {
        self.held[self.hold_slots(c, t)].iter().any(|&h| h != 0)
    }

    /// The locks `t` holds now, each with its mode and since when.
    pub(super) fn held_locks(
        &self,
        c: &Compiled,
        t: TaskId,
    ) -> impl Iterator<Item = (LockId, Mode, SimTime)> + '_ {
        (self.hold_slots(c, t)).filter_map(|i| {
            held_decode(self.held[i]).map(|(lock, mode)| (lock, mode, self.holds[i]))
        })
    }

    /// `t` holds `lock` in `mode` from `now`, in its hold slot `slot`.
    #[inline(always)]
    pub(super) fn hold(&mut self, t: TaskId, slot: u8, lock: LockId, mode: Mode, now: SimTime) {
        let i = self.table[t].slots.hold.at(slot);
        self.holds[i] = now;
        self.held[i] = held_code(lock, mode);
    }

    /// When `t`'s hold in its hold slot `slot` began.
    #[inline(always)]
    pub(super) fn hold_start(&self, t: TaskId, slot: u8) -> SimTime {
        self.holds[self.table[t].slots.hold.at(slot)]
    }

    /// `t` lets go of its hold slot `slot`: when that hold began.
    #[inline(always)]
    pub(super) fn unhold(&mut self, t: TaskId, slot: u8) -> SimTime {
        let i = self.table[t].slots.hold.at(slot);
        self.held[i] = 0;
        self.holds[i]
    }

    /// `t` opens its span slot `slot` at `now`.
    #[inline(always)]
    pub(super) fn span_begin(&mut self, t: TaskId, slot: u8, now: SimTime) {
        let i = self.table[t].slots.span.at(slot);
        self.spans[i] = now;
    }

    /// When `t`'s span in slot `slot` began.
    #[inline(always)]
    pub(super) fn span_start(&self, t: TaskId, slot: u8) -> SimTime {
        self.spans[self.table[t].slots.span.at(slot)]
    }

    /// `t` enters a repeat of `count` iterations at nesting `depth`.
    #[inline(always)]
    pub(super) fn repeat_begin(&mut self, t: TaskId, depth: u8, count: u64) {
        let i = self.table[t].slots.rep.at(depth);
        self.reps[i] = count;
    }

    /// Which pass (from 0) `t`'s repeat of `count` passes at `depth` is
    /// in.
    #[inline(always)]
    pub(super) fn repeat_pass(&self, t: TaskId, depth: u8, count: u32) -> u32 {
        let left = self.reps[self.table[t].slots.rep.at(depth)];
        (u64::from(count).saturating_sub(left)) as u32
    }

    /// `t` ends an iteration of its repeat at `depth`: whether another
    /// one follows.
    #[inline(always)]
    pub(super) fn repeat_again(&mut self, t: TaskId, depth: u8) -> bool {
        let left = &mut self.reps[self.table[t].slots.rep.at(depth)];
        *left -= 1;
        *left > 0
    }
}

/// Where the length of a sleep going on was drawn from.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) enum Drawn {
    /// A `sleep` step's distribution.
    Dist(crate::program::DistId),
    /// A `sleep` step's exponential (specialised in the code).
    Exp(f64),
    /// A reclaim attempt of this memcg (`[memcg] reclaim`).
    Reclaim(MemcgId),
}

/// Who killed a task: the OOM killer of a memcg (R46, R102), or a
/// `kill` step, a userspace daemon's SIGKILL (R105). Both make it exit at
/// its next step; only the OOM killer's victim is the memcg's pending
/// victim, which the OOM reaper reaps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Killed {
    Oom(MemcgId),
    Signal,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
/// Where a task is in its life and relative to its CPU.
pub(super) enum State {
    Running,
    /// On its CPU, spinning for a lock.
    Spinning,
    /// A kworker with no work item.
    Idle,
    Runnable,
    Sleeping,
    Blocked,
    Exited,
}

/// What a task must finish when it next runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Resume {
    Nothing,
    /// It was granted a lock while asleep: record the wait and the hold start.
    Acquired {
        lock: LockId,
        mode: Mode,
        wait: StatId,
        slot: u8,
    },
    /// It was woken to try again (`Wake::Retry`).
    Retry {
        lock: LockId,
        mode: Mode,
        wait: StatId,
        slot: u8,
    },
}

impl Resume {
    /// The lock, mode and wait statistic of the lock request it finishes,
    /// if any: the task asked for that lock and has not yet run holding it.
    pub(super) fn lock_wait(self) -> Option<(LockId, Mode, StatId)> {
        match self {
            Resume::Acquired {
                lock, mode, wait, ..
            }
            | Resume::Retry {
                lock, mode, wait, ..
            } => Some((lock, mode, wait)),
            Resume::Nothing => None,
        }
    }
}

/// A woken task's pending acquisition: granted, or to be retried.
pub(super) fn pending(r: Resume, lock: LockId, granted: bool) -> Resume {
    match r {
        Resume::Retry {
            lock: l,
            mode,
            wait,
            slot,
        }
        | Resume::Acquired {
            lock: l,
            mode,
            wait,
            slot,
        } => {
            debug_assert_eq!(l, lock, "woken by the lock it waits for");
            if granted {
                Resume::Acquired {
                    lock: l,
                    mode,
                    wait,
                    slot,
                }
            } else {
                Resume::Retry {
                    lock: l,
                    mode,
                    wait,
                    slot,
                }
            }
        }
        Resume::Nothing => unreachable!("a woken task has a pending acquisition"),
    }
}

/// One task: a program task or a kworker.
#[derive(Clone)]
pub(super) struct Task {
    pub(super) group: GroupId,
    pub(super) index: u32,
    pub(super) pc: Pc,
    pub(super) cpu: CpuId,
    pub(super) state: State,
    pub(super) resume: Resume,
    /// When the current lock request, flush or wait for a work item was
    /// made.
    pub(super) since: SimTime,
    /// Real-time scheduling class.
    pub(super) rt: bool,
    /// Draws of scheduling delays (wake latency), apart from the program's
    /// draws so that common random numbers hold; only with a latency.
    /// Boxed, as `mem_rng`: a stream is ~300 bytes, and most runs have
    /// neither, so the hot fields of the task stay on fewer cache lines.
    pub(super) sched: Option<Box<Stream>>,
    /// The current `cpu` burst: when it began and ends (preemption picks
    /// the task that has run longest; a preempted burst resumes with the
    /// rest).
    pub(super) burst_start: SimTime,
    pub(super) burst_end: SimTime,
    pub(super) in_burst: bool,
    /// Burst time left after a preemption (zero: none).
    pub(super) remaining: Dur,
    /// CPU time it owes for waking tasks on other CPUs (R122), paid
    /// before its next step.
    pub(super) wake_debt: Dur,
    /// When the task last got a CPU (its time slice started).
    pub(super) on_cpu_since: SimTime,
    /// A spinner's deadline from its lock (`SimTime::MAX`: none): its
    /// event slot may hold an earlier need_resched check instead.
    pub(super) spin_until: SimTime,
    /// The CPU a per-CPU kworker is bound to for its current item.
    pub(super) bound: Option<CpuId>,
    /// When the task began to wait for a CPU (until it gets one), and when
    /// a kworker began its item (for traces).
    pub(super) queued_at: Option<SimTime>,
    /// The CPU a per-CPU kworker last ran an item on.
    pub(super) home: Option<CpuId>,
    pub(super) work_start: SimTime,
    /// Asleep in a lock's wait queue (counted in the trace's queue length).
    pub(super) in_lock_queue: bool,
    /// Why it is about to leave its CPU asleep, when a lock wait does not
    /// say (reclaim, throttle, flush, work): for `--blame`.
    pub(super) off: Doing,
    /// A `flush_workqueue` that waited, until the flusher runs again and
    /// cascades (R110): the workqueue and the flush.
    pub(super) flushing: Option<(WqId, models::workqueue::FlushId)>,
    /// At a `flush_workqueue` step, its pass over the pwqs is paid (R118):
    /// the flush itself comes next.
    pub(super) flush_prepped: bool,
    /// A memcg charge in progress across reclaim attempts (R45).
    pub(super) charging: Option<(MemcgId, models::memcg::Charge)>,
    /// Draws of memcg reclaim (time, success), apart from the program's.
    pub(super) mem_rng: Option<Box<Stream>>,
    /// Pages over memory.high not yet paid for (R48).
    pub(super) over_high: u64,
    /// Killed (by the OOM killer of a memcg, or by a `kill` step); exits
    /// at its next step.
    pub(super) killed: Option<Killed>,
    /// In a memory stall of this memcg (a reclaim attempt or a
    /// memory.high throttle): counted in its pressure (R104).
    pub(super) memstall: Option<MemcgId>,
    /// The sleep going on, when its length was drawn from a distribution:
    /// which, and when it began. A copy of the world for rare-event
    /// splitting draws its end again (`World::rekey_at`).
    pub(super) drawn_sleep: Option<(Drawn, SimTime)>,
    /// Killed and running its group's `exit` steps (it died already: its
    /// locks released, its memory freed).
    pub(super) exiting: bool,
    /// What `self` means in a work key: the task's index in its group, or
    /// a kworker's current item's instance.
    pub(super) self_key: u32,
    /// A kworker's workqueue, and the item it runs.
    pub(super) worker_of: Option<WqId>,
    /// A kworker not yet created: its first item waits for its creation.
    pub(super) cold: bool,
    /// Uses of `[seq]` work keys so far.
    pub(super) seq: u32,
    pub(super) work: Option<WorkId>,
    /// The workqueue `work` was queued on (a pool kworker runs items of
    /// every per-CPU workqueue, R37).
    pub(super) item_wq: WqId,
    /// Where a kworker of a per-CPU pool is in R37's accounting.
    pub(super) pool: PoolState,
    /// The atomic on the current lock step's cache line is done (the step
    /// waited for the line and now takes effect).
    pub(super) atomic_done: bool,
    /// Woken onto an idle CPU (`cpu`, reserved for it), it waits out the
    /// machine's wake latency there (R63-R68); its `Ready` gives it that
    /// CPU.
    pub(super) arriving: bool,
    /// The CPU its waker ran on (or whose timer woke it), kept while a
    /// wake latency of the scenario or a kworker's creation delays its
    /// placement; `None`: not known.
    pub(super) waker_cpu: Option<CpuId>,
    /// Where this task's hold, span and repeat slots are in
    /// [`Tasks`]' slot tables.
    pub(super) slots: SlotBases,
}

impl Task {
    /// Whether the task is inside a lock step: stalled on the lock word's
    /// line, or granted a lock (or woken to retry one) and not yet run.
    /// That is kernel code, never a return to user space
    /// (`World::lock_step_of` says which acquisition).
    #[inline]
    pub(super) fn in_lock_step(&self) -> bool {
        self.atomic_done || !matches!(self.resume, Resume::Nothing)
    }

    /// A task of `group` (or a kworker, whose group changes per item) with
    /// its streams keyed by `name` and `index`, and its slot bases. Its
    /// program's stream goes to `rngs`, beside the tasks: a stream is 320
    /// bytes, and in the task it spread the fields that every event reads
    /// over more cache lines.
    fn new(
        c: &Compiled,
        (seed, rep): (u64, u64),
        name: &str,
        group: GroupId,
        index: u32,
        slots: SlotBases,
        rngs: &mut TiVec<TaskId, Stream>,
    ) -> Task {
        let own = |kind: &str| stream(seed, rep, &format!("{kind}/{name}"), u64::from(index));
        rngs.push(own("task"));
        Task {
            group,
            index,
            pc: Pc::START,
            cpu: CpuId::ANY,
            state: State::Runnable,
            resume: Resume::Nothing,
            since: SimTime::ZERO,
            rt: c.groups.get(group).is_some_and(|g| g.rt),
            sched: c.wake_latency.as_ref().map(|_| Box::new(own("sched"))),
            burst_start: SimTime::ZERO,
            burst_end: SimTime::ZERO,
            in_burst: false,
            remaining: Dur::ZERO,
            wake_debt: Dur::ZERO,
            on_cpu_since: SimTime::ZERO,
            spin_until: SimTime::MAX,
            bound: None,
            queued_at: None,
            home: None,
            work_start: SimTime::ZERO,
            in_lock_queue: false,
            off: Doing::Sleep,
            atomic_done: false,
            arriving: false,
            waker_cpu: None,
            flushing: None,
            flush_prepped: false,
            charging: None,
            mem_rng: (!c.memcgs.is_empty()).then(|| Box::new(own("memcg"))),
            over_high: 0,
            killed: None,
            memstall: None,
            drawn_sleep: None,
            exiting: false,
            self_key: index,
            worker_of: None,
            item_wq: WqId(0),
            pool: PoolState::No,
            cold: false,
            seq: 0,
            work: None,
            slots,
        }
    }
}

/// Where a task's slots begin in one of [`Tasks`]' slot tables
/// (`holds` and `held`, `spans`, `reps`): slot `s` of its program is
/// entry `base + s`. Each task has a run of each table of its own, one
/// entry per lock its program can hold at once, per span open at once
/// and per repeat nested (the compiler's counts, at most 255 each; a
/// kworker's are the largest of the work programs').
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct SlotBase(u32);

impl SlotBase {
    /// The table entry of the task's slot `slot`.
    #[inline(always)]
    pub(super) fn at(self, slot: u8) -> usize {
        self.index() + usize::from(slot)
    }

    /// The table entries of the task's first `n` slots.
    #[inline]
    pub(super) fn range(self, n: u8) -> std::ops::Range<usize> {
        self.index()..self.at(n)
    }

    /// The task's first entry (the only cast of slot arithmetic: a u32
    /// keeps the task small, and every table index fits one).
    #[inline(always)]
    pub(super) fn index(self) -> usize {
        self.0 as usize
    }

    /// Where the next task's slots begin, after this task's `n`.
    pub(super) fn after(self, n: u8) -> SlotBase {
        SlotBase(
            (self.0.checked_add(u32::from(n))).expect("slot tables are bounded by the task limit"),
        )
    }
}

/// A task's slot bases in the three tables.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct SlotBases {
    pub(super) hold: SlotBase,
    pub(super) span: SlotBase,
    pub(super) rep: SlotBase,
}

impl SlotBases {
    const ZERO: SlotBases = SlotBases {
        hold: SlotBase(0),
        span: SlotBase(0),
        rep: SlotBase(0),
    };

    /// The next task's bases, after a task with `hold`, `span` and `rep`
    /// slots.
    pub(super) fn after(self, (hold, span, rep): (u8, u8, u8)) -> SlotBases {
        SlotBases {
            hold: self.hold.after(hold),
            span: self.span.after(span),
            rep: self.rep.after(rep),
        }
    }
}

/// A hold slot's content: 0 for none, else the lock and its mode.
pub(super) fn held_code(lock: LockId, mode: Mode) -> u32 {
    ((lock.0 + 1) << 1) | u32::from(mode == Mode::Write)
}

/// The lock and mode [`held_code`] stored, if any.
pub(super) fn held_decode(code: u32) -> Option<(LockId, Mode)> {
    (code != 0).then(|| {
        (
            LockId((code >> 1) - 1),
            if code & 1 == 1 {
                Mode::Write
            } else {
                Mode::Read
            },
        )
    })
}
