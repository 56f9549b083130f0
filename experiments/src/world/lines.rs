//! The world and its cache lines: lock words and the scenario's data
//! lines (`[lines]`) under the coherence model (`models::coherence`,
//! R70-R74), and the spinners that poll lock words.
//!
//! A lock word has a line when the machine's lines cost something (all
//! but the ideal machine: every lock but a `none` policy's, at the
//! machine's costs by distance) or when
//! the lock sets its own flat costs (`line_transfer`, `line_local`). With
//! neither, no lock has a line and a lock step only reads the length of
//! an empty table.
//!
//! The lines are touched by (R74):
//! - a lock step's atomic (an acquisition's fast path, a release): a
//!   read-modify-write by the task's CPU, which holds its CPU until done;
//! - a spinner granted the lock: its cmpxchg, a read-modify-write, so the
//!   handoff costs one transfer from the releasing CPU;
//! - the spinners that poll the word (R73): each keeps a copy, re-read
//!   after every write. The re-reads are put in place lazily, at the next
//!   read-modify-write on the word: a poller that has no copy then read
//!   the line as soon as the last write was done (or as soon as it began
//!   to poll, if later), if that was before the write now asked for can
//!   begin; the write then invalidates its copy;
//! - the spinners that re-read the word after every write (R80: a ticket
//!   lock's waiters, readers spinning for an even sequence count): at
//!   each read-modify-write on the word, each of them re-reads it, one
//!   after another in the order of their CPUs, from when the write is
//!   done; one of them granted the lock goes on when its re-read is done;
//! - a lock step that only loads the word (a sequence count's reader, a
//!   percpu rwsem's slow-path reader) or touches no shared line (its
//!   fast-path reader), as its policy says (`LockPolicy::word_access`);
//! - `atomic` and `read` steps on data lines.
//!
//! With unlimited CPUs each task is a CPU of its own, with no topology:
//! every other task is at the `socket` distance.

use super::*;
use crate::program::LineId;
use models::coherence::{Access, Fabric, Line, LineStats};

/// A lock whose word has no line.
const NO_LINE: u32 = u32::MAX;

/// No poller in a poller slot.
const NO_POLLER: (TaskId, SimTime) = (NONE, SimTime::ZERO);

/// The cache lines of a run.
#[derive(Clone)]
pub(super) struct Lines {
    /// Per lock, the fabric its word's line uses (an index into
    /// `fabrics`; [`NO_LINE`]: none). Empty when no lock word has a line.
    lock_fabric: TiVec<LockId, u32>,
    lock_lines: TiVec<LockId, Line>,
    /// Per lock, the tasks that poll its word and since when (R73).
    pollers: TiVec<LockId, [(TaskId, SimTime); 2]>,
    /// The data lines and the fabric of each.
    data: TiVec<LineId, Line>,
    data_fabric: TiVec<LineId, u32>,
    /// The machine's fabric first, then each distinct set of flat costs.
    fabrics: Vec<Fabric>,
    /// Per task, when its latest re-read of the word it spins on is done
    /// (R80); empty unless a lock's spinners re-read.
    seen: TiVec<TaskId, SimTime>,
    /// Some lock's policy decides what its steps do to its word
    /// (`LockPolicy::word_access`), or some lock's spinners re-read it:
    /// otherwise every step's access is an atomic and nothing more.
    special: bool,
    /// The re-readers of one write, and on which CPUs (reused buffers).
    rereader_tasks: Vec<TaskId>,
    rereaders: Vec<(CpuId, TaskId)>,
}

impl Lines {
    pub(super) fn new(c: &Compiled) -> Lines {
        let m = &c.machine;
        // With unlimited CPUs each task is a CPU: no topology.
        let topology = c.cpus.map(|_| m.topology);
        let mut fabrics = vec![Fabric::new(topology, m.lines)];
        let mut fabric_of = |flat: Option<(Dur, Dur)>| match flat {
            None => 0,
            Some((transfer, local)) => {
                let f = Fabric::flat(transfer, local);
                match fabrics.iter().skip(1).position(|g| *g == f) {
                    Some(i) => i as u32 + 1,
                    None => {
                        fabrics.push(f);
                        fabrics.len() as u32 - 1
                    }
                }
            }
        };
        // Every lock word has a line on a machine whose lines cost
        // something (all but the ideal one).
        let l = m.lines;
        let machine_lines = [l.local, l.smt, l.socket, l.remote] != [Dur::ZERO; 4];
        let any_lock = machine_lines || c.locks.iter().any(|l| l.line.is_some());
        let lock_fabric: TiVec<LockId, u32> = if any_lock {
            (c.locks.iter())
                .map(|l| match l.line {
                    Some(flat) => fabric_of(Some(flat)),
                    // The `none` policy removes the lock and its word.
                    None if machine_lines && l.policy != "none" => 0,
                    None => NO_LINE,
                })
                .collect()
        } else {
            TiVec::new()
        };
        let data_fabric: TiVec<LineId, u32> = c.lines.iter().map(|l| fabric_of(l.flat)).collect();
        let n = lock_fabric.len();
        let rereads = (c.locks.iter()).any(|l| {
            matches!(l.kind, LockKind::Seqcount | LockKind::Seqlock)
                || (l.kind == LockKind::Spinlock && l.policy == "ticket")
        });
        let tasks = (c.tasks() + c.kworkers()) as usize;
        let policy_access = (c.locks.iter()).any(|l| {
            matches!(
                l.kind,
                LockKind::PercpuRwsem | LockKind::Seqcount | LockKind::Seqlock
            )
        });
        Lines {
            special: policy_access || rereads,
            seen: ti_vec![SimTime::ZERO; if n > 0 && rereads { tasks } else { 0 }],
            rereader_tasks: Vec::new(),
            rereaders: Vec::new(),
            lock_lines: (0..n).map(|_| Line::default()).collect(),
            pollers: ti_vec![[NO_POLLER; 2]; n],
            lock_fabric,
            data: (0..data_fabric.len()).map(|_| Line::default()).collect(),
            data_fabric,
            fabrics,
        }
    }

    /// `lock`'s word has a line.
    #[inline(always)]
    pub(super) fn lock_has_line(&self, lock: LockId) -> bool {
        self.lock_fabric.get(lock).is_some_and(|&f| f != NO_LINE)
    }

    /// What `lock`'s word's line added up to, if it has one.
    pub(super) fn lock_stats(&self, lock: LockId) -> Option<LineStats> {
        self.lock_has_line(lock)
            .then(|| self.lock_lines[lock].stats)
    }

    /// Sets `lock`'s pollers to `now_polling`: those that were already
    /// polling keep the time they began.
    fn set_pollers(&mut self, lock: LockId, now_polling: [Option<TaskId>; 2], now: SimTime) {
        let old = self.pollers[lock];
        let mut new = [NO_POLLER; 2];
        for (slot, p) in new.iter_mut().zip(now_polling) {
            if let Some(p) = p {
                let since = old.iter().find(|o| o.0 == p).map_or(now, |o| o.1);
                *slot = (p, since);
            }
        }
        self.pollers[lock] = new;
    }

    /// The data lines' counters per class, as `NAME/transfers`,
    /// `NAME/wait_ns`, `NAME/invalidations` (a family's instances add up
    /// under its name).
    pub(super) fn counters(&self, c: &Compiled, out: &mut Vec<Counter>) {
        let mut by_class: Vec<(&str, LineStats)> = Vec::new();
        for (spec, line) in c.lines.iter().zip(&self.data) {
            let class = spec.name.split('[').next().unwrap_or(&spec.name);
            let s = line.stats;
            match by_class.iter_mut().rev().find(|(n, _)| *n == class) {
                Some((_, t)) => {
                    t.transfers += s.transfers;
                    t.wait += s.wait;
                    t.invalidations += s.invalidations;
                }
                None => by_class.push((class, s)),
            }
        }
        for (class, s) in by_class {
            for (name, value) in [
                ("transfers", s.transfers),
                ("wait_ns", s.wait.ns()),
                ("invalidations", s.invalidations),
            ] {
                out.push(Counter {
                    subject: format!("{class}/{name}"),
                    value,
                });
            }
        }
    }
}

impl<'c> World<'c> {
    /// The CPU `t` accesses lines from: its CPU, or with unlimited CPUs a
    /// CPU of its own.
    #[inline]
    fn line_cpu(&self, t: TaskId) -> CpuId {
        match self.tasks[t].cpu {
            CpuId::ANY => CpuId(t.0),
            cpu => cpu,
        }
    }

    /// After a call to `lock`'s policy that may have changed its
    /// spinners: who polls its word now (R73).
    #[inline(always)]
    pub(super) fn lock_pollers_changed(&mut self, lock: LockId) {
        if self.lines.lock_has_line(lock) {
            self.lock_pollers_changed_slow(lock);
        }
    }

    #[inline(never)]
    fn lock_pollers_changed_slow(&mut self, lock: LockId) {
        let now_polling = self.locks.policies[lock].word_pollers();
        if now_polling != [None, None] || self.lines.pollers[lock] != [NO_POLLER; 2] {
            self.lines.set_pollers(lock, now_polling, self.clock.now);
        }
    }

    /// A read-modify-write by `cpu` on `lock`'s word now (R70, R72), after
    /// the re-reads of its pollers that came before it (R73).
    fn word_rmw(&mut self, lock: LockId, cpu: CpuId) -> Access {
        let now = self.clock.now;
        let f = self.lines.fabrics[self.lines.lock_fabric[lock] as usize];
        for (p, since) in self.lines.pollers[lock] {
            if p == NONE {
                continue;
            }
            let pc = self.line_cpu(p);
            let line = &mut self.lines.lock_lines[lock];
            if pc == cpu || line.holds(pc) {
                continue;
            }
            let at = since.max(line.rmw_until());
            if at < now.max(line.busy_until()) {
                line.read(&f, pc, at);
            }
        }
        let a = self.lines.lock_lines[lock].rmw(&f, cpu, now);
        if self.lines.seen.is_empty() {
            return a;
        }
        self.rereads_after(lock, a.done, &f);
        a
    }

    /// R80: the spinners of `lock` that re-read its word after every
    /// write re-read it after the one done at `done`, one after another
    /// in the order of their CPUs (the hardware's order among read misses
    /// at one instant is not specified; CPU order puts the next ticket
    /// holder anywhere in the round, half-way on average, as the model of
    /// Boyd-Wickizer et al. has it).
    #[inline(never)]
    fn rereads_after(&mut self, lock: LockId, done: SimTime, f: &Fabric) {
        let mut buf = std::mem::take(&mut self.lines.rereaders);
        let mut tasks = std::mem::take(&mut self.lines.rereader_tasks);
        self.locks.policies[lock].rereaders(&mut tasks);
        buf.extend(tasks.iter().map(|&p| (self.line_cpu(p), p)));
        tasks.clear();
        self.lines.rereader_tasks = tasks;
        buf.sort_unstable();
        for &(pc, p) in &buf {
            let r = self.lines.lock_lines[lock].reread(f, pc, done);
            self.lines.seen[p] = r.done;
        }
        buf.clear();
        self.lines.rereaders = buf;
    }

    /// Whether a lock's spinners may re-read its word (R80): some lock's
    /// do, and the words have lines.
    #[inline(always)]
    pub(super) fn any_rereaders(&self) -> bool {
        !self.lines.seen.is_empty()
    }

    /// A spinner `t` that re-reads its lock's word was granted the lock
    /// (R80): it goes on once the re-read that saw it is done.
    #[inline(never)]
    pub(super) fn spinner_reread(&mut self, t: TaskId) -> SimTime {
        let now = self.clock.now;
        match self.lines.seen.get(t) {
            Some(&seen) if seen > now => self.line_stall(t, seen),
            _ => now,
        }
    }

    /// `t` stalls on its CPU until `done`, a line access: as a burst, so
    /// that a preemption keeps the rest, and stretched by the interrupts
    /// and steal it overlaps as a `cpu` step is (R125, R67: the CPU runs
    /// something else, the access completes when it comes back). Returns
    /// when `t` goes on.
    fn line_stall(&mut self, t: TaskId, done: SimTime) -> SimTime {
        let now = self.clock.now;
        let end = if self.cpus.wake.is_some() {
            self.interrupted_burst_end(t, done.since(now))
        } else {
            done
        };
        let task = &mut self.tasks[t];
        task.in_burst = true;
        task.burst_start = now;
        task.burst_end = end;
        end
    }

    /// The access of a lock step of `t` in `mode` (an acquisition, or a
    /// release or a read section's retry) on `lock`'s word (R74): as its
    /// policy says, a read-modify-write, a load or nothing; `t` holds its
    /// CPU until it is done. Returns how long `t` spends on it; zero for
    /// a lock whose word has no line, or when the access is done and the
    /// step takes effect.
    #[inline(always)]
    pub(super) fn line_atomic(
        &mut self,
        t: TaskId,
        lock: LockId,
        mode: Mode,
        acquire: bool,
    ) -> Dur {
        if !self.lines.lock_has_line(lock) {
            Dur::ZERO
        } else if self.lines.special {
            self.line_access_slow(t, lock, mode, acquire)
        } else {
            self.line_atomic_slow(t, lock)
        }
    }

    /// [`World::line_atomic`] when every lock step is an atomic and no
    /// spinner re-reads (rwsems, mutexes, the qspinlock).
    #[inline(never)]
    fn line_atomic_slow(&mut self, t: TaskId, lock: LockId) -> Dur {
        if std::mem::take(&mut self.tasks[t].atomic_done) {
            return Dur::ZERO;
        }
        let a = self.word_rmw(lock, self.line_cpu(t));
        self.line_access_done(t, a)
    }

    /// [`World::line_atomic`] when a policy decides the access or
    /// spinners re-read (R80, R81, R87).
    #[inline(never)]
    fn line_access_slow(&mut self, t: TaskId, lock: LockId, mode: Mode, acquire: bool) -> Dur {
        if std::mem::take(&mut self.tasks[t].atomic_done) {
            return Dur::ZERO;
        }
        let now = self.clock.now;
        let cpu = self.line_cpu(t);
        let a = match self.locks.policies[lock].word_access(now, mode, acquire) {
            WordAccess::None => return Dur::ZERO,
            WordAccess::Rmw => self.word_rmw(lock, cpu),
            WordAccess::Read => {
                let f = self.lines.fabrics[self.lines.lock_fabric[lock] as usize];
                self.lines.lock_lines[lock].read(&f, cpu, now)
            }
        };
        // A spinner from this step on has the word since then (R80).
        if !self.lines.seen.is_empty() {
            self.lines.seen[t] = a.done;
        }
        self.line_access_done(t, a)
    }

    /// `t` stalls until access `a`, asked now, is done; returns how long.
    #[inline(always)]
    fn line_access_done(&mut self, t: TaskId, a: Access) -> Dur {
        let now = self.clock.now;
        let d = a.done.since(now);
        if d > Dur::ZERO {
            self.tasks[t].atomic_done = true;
            let end = self.line_stall(t, a.done);
            self.clock.schedule(t, end, Ev::Run);
        }
        d
    }

    /// A spinner `t` was granted `lock` (R73): its cmpxchg on the word, a
    /// read-modify-write that takes the line from the releasing CPU.
    /// Returns when `t` goes on, holding the lock.
    #[inline(never)]
    pub(super) fn spinner_cmpxchg(&mut self, t: TaskId, lock: LockId) -> SimTime {
        if !self.lines.lock_has_line(lock) {
            return self.clock.now;
        }
        let a = self.word_rmw(lock, self.line_cpu(t));
        if a.done > self.clock.now {
            self.line_stall(t, a.done)
        } else {
            a.done
        }
    }

    /// An `atomic` (`write`) or `read` step of `t` on data line `line`
    /// (R70, R71): `t` holds its CPU until the access is done. Returns
    /// false when it takes no time (the step is done at once).
    #[inline(never)]
    pub(super) fn data_line(&mut self, t: TaskId, line: LineId, write: bool) -> bool {
        let now = self.clock.now;
        let cpu = self.line_cpu(t);
        let f = self.lines.fabrics[self.lines.data_fabric[line] as usize];
        let l = &mut self.lines.data[line];
        let a = if write {
            l.rmw(&f, cpu, now)
        } else {
            l.read(&f, cpu, now)
        };
        if a.done == now {
            return false;
        }
        if let Some(tr) = self.obs.trace.as_mut() {
            let what = if write { "atomic" } else { "read" };
            let on = (self.tasks[t].cpu != CpuId::ANY).then_some(cpu);
            let name = format!("{what} {}", self.c.lines[line].name);
            tr.slice_on_cpu(t, name, now, a.done, on);
        }
        let end = self.line_stall(t, a.done);
        self.clock.schedule(t, end, Ev::Run);
        true
    }
}
