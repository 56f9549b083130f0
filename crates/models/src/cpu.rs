//! CPUs and the run queue: a woken task still has to get a CPU.
//!
//! A pool of N identical CPUs and one FIFO run queue, or no limit at all
//! (`cpus = "unlimited"`), in which case every runnable task runs at once.
//! A task occupies a CPU from the moment it runs until it blocks, sleeps or
//! exits; `cpu D` steps keep it there for D. The pool only hands out CPUs
//! and keeps the queue; wake-to-run latency and preemption (which task
//! loses its CPU to a wakee) are decided by the world, which calls
//! [`CpuPool::requeue`] for a preempted task.
//!
//! A per-CPU kworker is bound to its CPU: it waits for that CPU only,
//! taking turns with the shared queue by the time each began to wait.
//!
//! With `wake_first`, the run queue has two parts: woken tasks wait ahead
//! of tasks that were preempted or used up their time slice. That is what
//! CFS's sleeper placement does to a task that slept: it is eligible at
//! once, before the CPU-bound tasks, whatever it ran before (EEVDF, below,
//! weighs that).
//!
//! With EEVDF order ([`CpuPool::set_eevdf`]), one run queue holds woken and
//! preempted tasks alike, and a freed CPU goes to the task EEVDF picks
//! among it and the CPU's bound kworkers ([`crate::eevdf`]): by lag and
//! virtual deadline, not by arrival. The world then reports when tasks
//! become runnable, start and stop running ([`CpuPool::wake`],
//! [`CpuPool::started`], [`CpuPool::stopped`]).
//!
//! RT tasks ([`CpuPool::set_rt`]) wait in a queue of their own, served
//! before every other, FIFO (SCHED_FIFO at one priority): the core
//! scheduler picks the RT class before the fair class. EEVDF never sees
//! them.
//!
//! Free CPUs are handed out lowest id first, so runs are reproducible and
//! CPU ids mean the same thing in every variant.

use crate::eevdf::Eevdf;
use crate::lock::TaskId;
use sim::{Dur, SimTime};
use std::collections::VecDeque;

/// A CPU id. With unlimited CPUs every task runs on [`Cpu::ANY`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cpu(pub u32);

impl Cpu {
    pub const ANY: Cpu = Cpu(u32::MAX);
}

#[derive(Debug)]
pub struct CpuPool {
    limit: Option<u32>,
    /// Free CPUs, a bit per CPU (lowest id first).
    free: Vec<u64>,
    /// Tasks bound to one CPU (per-CPU kworkers) waiting for it; served
    /// first when it frees up, as a per-CPU run queue would pick a
    /// freshly woken kworker.
    bound: Vec<VecDeque<(TaskId, SimTime, u64)>>,
    bound_len: usize,
    /// Enqueues so far: the order in which waiting tasks began to wait.
    seq: u64,
    runq: VecDeque<(TaskId, SimTime, u64)>,
    /// Woken tasks, served before `runq` (only with `wake_first`).
    woken: VecDeque<(TaskId, SimTime, u64)>,
    wake_first: bool,
    /// EEVDF's order instead of arrival order (see the module doc).
    eevdf: Option<Eevdf>,
    /// Which tasks are RT, and the RT tasks waiting for a CPU.
    rt: Vec<bool>,
    rt_q: VecDeque<(TaskId, SimTime, u64)>,
    runq_waits: u64,
    runq_wait_ns: u128,
    runq_max: usize,
}

impl CpuPool {
    pub fn unlimited() -> Self {
        CpuPool {
            limit: None,
            free: Vec::new(),
            bound: Vec::new(),
            bound_len: 0,
            seq: 0,
            runq: VecDeque::new(),
            woken: VecDeque::new(),
            wake_first: false,
            eevdf: None,
            rt: Vec::new(),
            rt_q: VecDeque::new(),
            runq_waits: 0,
            runq_wait_ns: 0,
            runq_max: 0,
        }
    }

    pub fn with_cpus(n: u32) -> Self {
        let mut p = Self::unlimited();
        let n = n.max(1);
        p.limit = Some(n);
        p.free = vec![0; n.div_ceil(64) as usize];
        for c in 0..n {
            p.free[(c / 64) as usize] |= 1 << (c % 64);
        }
        p.bound = vec![VecDeque::new(); n as usize];
        p
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Woken tasks wait ahead of preempted ones (see the module doc).
    pub fn set_wake_first(&mut self, on: bool) {
        self.wake_first = on;
    }

    /// Orders the run queue as EEVDF does, with base slice `slice` and a
    /// scheduler tick of `tick` (ns); only with a limited number of CPUs.
    pub fn set_eevdf(&mut self, slice: u64, tick: u64) {
        if self.limit.is_some() {
            self.wake_first = false;
            self.eevdf = Some(Eevdf::new(slice, tick));
        }
    }

    /// `task` is an RT task: served before all others (see the module doc).
    pub fn set_rt(&mut self, task: TaskId) {
        let i = task as usize;
        if i >= self.rt.len() {
            self.rt.resize(i + 1, false);
        }
        self.rt[i] = true;
    }

    #[inline]
    fn is_rt(&self, task: TaskId) -> bool {
        self.rt.get(task as usize).copied().unwrap_or(false)
    }

    /// RT tasks waiting for a CPU: a task of the fair class that runs has
    /// need_resched set.
    pub fn rt_waiting(&self) -> usize {
        self.rt_q.len()
    }

    pub fn is_eevdf(&self) -> bool {
        self.eevdf.is_some()
    }

    /// The EEVDF state, if the queue is in EEVDF order and `task` is of the
    /// fair class (EEVDF never sees RT tasks).
    #[inline]
    fn fair(&mut self, task: TaskId) -> Option<&mut Eevdf> {
        if self.eevdf.is_none() || self.is_rt(task) {
            return None;
        }
        self.eevdf.as_mut()
    }

    /// `task` becomes runnable now (woken, or started): EEVDF places it.
    /// A no-op without EEVDF order.
    #[inline]
    pub fn wake(&mut self, now: SimTime, task: TaskId) {
        if let Some(e) = self.fair(task) {
            e.wake(now, task);
        }
    }

    /// `task` starts running now.
    #[inline]
    pub fn started(&mut self, now: SimTime, task: TaskId) {
        if let Some(e) = self.fair(task) {
            e.start(now, task);
        }
    }

    /// `task` stops running now: still runnable (preempted, out of slice;
    /// it is requeued next) or not (it blocks, keeping its lag).
    #[inline]
    pub fn stopped(&mut self, now: SimTime, task: TaskId, runnable: bool) {
        if let Some(e) = self.fair(task) {
            e.stop(now, task, runnable);
        }
    }

    pub fn is_unlimited(&self) -> bool {
        self.limit.is_none()
    }

    pub fn cpus(&self) -> Option<u32> {
        self.limit
    }

    /// `task` becomes runnable at `now`. Returns the CPU it runs on at once,
    /// or `None` if it waits in the run queue.
    #[inline]
    pub fn make_runnable(&mut self, now: SimTime, task: TaskId) -> Option<Cpu> {
        let cpu = self.try_take();
        if cpu.is_none() {
            self.enqueue_woken(now, task);
        }
        cpu
    }

    /// A free CPU (lowest id first), if any; unlimited pools always have one.
    #[inline]
    pub fn try_take(&mut self) -> Option<Cpu> {
        if self.limit.is_none() {
            return Some(Cpu::ANY);
        }
        let (w, bits) = self.free.iter_mut().enumerate().find(|(_, b)| **b != 0)?;
        let c = bits.trailing_zeros();
        *bits &= *bits - 1;
        Some(Cpu(w as u32 * 64 + c))
    }

    fn set_free(&mut self, cpu: Cpu) {
        self.free[(cpu.0 / 64) as usize] |= 1 << (cpu.0 % 64);
    }

    /// `task`, bound to `cpu`, becomes runnable: it takes `cpu` if it is
    /// free, else waits for it ahead of the shared queue.
    pub fn make_runnable_on(&mut self, now: SimTime, task: TaskId, cpu: Cpu) -> Option<Cpu> {
        if self.limit.is_none() {
            return Some(Cpu::ANY);
        }
        let (w, bit) = ((cpu.0 / 64) as usize, 1u64 << (cpu.0 % 64));
        if self.free[w] & bit != 0 {
            self.free[w] &= !bit;
            return Some(cpu);
        }
        self.requeue_on(now, task, cpu);
        None
    }

    /// `task`, bound to `cpu`, waits for it (woken, or preempted on it).
    pub fn requeue_on(&mut self, now: SimTime, task: TaskId, cpu: Cpu) {
        if let Some(e) = self.fair(task) {
            e.wait(task);
        }
        let seq = self.next_seq();
        self.bound[cpu.0 as usize].push_back((task, now, seq));
        self.bound_len += 1;
        self.runq_max = self.runq_max.max(self.runnable_waiting());
    }

    /// The task on `cpu` stops running at `now`. Returns the task that runs
    /// on it next (FIFO) and how long that task waited, if any.
    #[inline]
    pub fn release(&mut self, now: SimTime, cpu: Cpu) -> Option<(TaskId, Dur)> {
        self.limit?;
        if let Some(next) = self.rt_q.pop_front() {
            return self.hand_over(now, cpu, Some(next));
        }
        if self.eevdf.is_some() {
            return self.release_eevdf(now, cpu);
        }
        // The bound task and the shared queue's head take turns by the time
        // they began to wait; woken tasks before preempted ones.
        let shared_is_runq = self.woken.is_empty();
        let shared = if shared_is_runq {
            &mut self.runq
        } else {
            &mut self.woken
        };
        let bound = &mut self.bound[cpu.0 as usize];
        let take_bound = match (bound.front(), shared.front()) {
            (Some(b), Some(s)) => b.2 < s.2 || (self.wake_first && shared_is_runq),
            (Some(_), None) => true,
            _ => false,
        };
        let next = if take_bound {
            self.bound_len -= 1;
            bound.pop_front()
        } else {
            shared.pop_front()
        };
        self.hand_over(now, cpu, next)
    }

    /// [`Self::release`] in EEVDF order: the pick among the run queue and
    /// `cpu`'s bound tasks.
    fn release_eevdf(&mut self, now: SimTime, cpu: Cpu) -> Option<(TaskId, Dur)> {
        let bound = &mut self.bound[cpu.0 as usize];
        let e = self.eevdf.as_mut().expect("EEVDF order");
        let candidates = self.runq.iter().chain(bound.iter());
        let next = match e.pick(now, candidates.map(|&(t, _, seq)| (t, seq))) {
            Some(i) if i < self.runq.len() => self.runq.remove(i),
            Some(i) => {
                self.bound_len -= 1;
                bound.remove(i - self.runq.len())
            }
            None => None,
        };
        self.hand_over(now, cpu, next)
    }

    /// `cpu` goes to `next`, the queue entry picked (counting its wait),
    /// or becomes free.
    fn hand_over(
        &mut self,
        now: SimTime,
        cpu: Cpu,
        next: Option<(TaskId, SimTime, u64)>,
    ) -> Option<(TaskId, Dur)> {
        match next {
            Some((task, since, _)) => {
                let waited = now.since(since);
                self.runq_waits += 1;
                self.runq_wait_ns += u128::from(waited.0);
                Some((task, waited))
            }
            None => {
                self.set_free(cpu);
                None
            }
        }
    }

    /// `task` waits at the tail of the run queue (no free CPU, or it was
    /// preempted and its CPU went to the preempting task).
    pub fn requeue(&mut self, now: SimTime, task: TaskId) {
        if self.is_rt(task) {
            let seq = self.next_seq();
            self.rt_q.push_back((task, now, seq));
            self.runq_max = self.runq_max.max(self.runnable_waiting());
            return;
        }
        if let Some(e) = self.fair(task) {
            e.wait(task);
        }
        let seq = self.next_seq();
        self.runq.push_back((task, now, seq));
        self.runq_max = self.runq_max.max(self.runnable_waiting());
    }

    /// `task` was woken and finds no free CPU: the run queue's tail, or
    /// with `wake_first` the tail of the woken tasks.
    pub fn enqueue_woken(&mut self, now: SimTime, task: TaskId) {
        if self.wake_first && !self.is_rt(task) {
            let seq = self.next_seq();
            self.woken.push_back((task, now, seq));
            self.runq_max = self.runq_max.max(self.runnable_waiting());
        } else {
            self.requeue(now, task);
        }
    }

    /// Woken tasks waiting for a CPU (with `wake_first`; else 0): they
    /// have set need_resched on some CPU.
    pub fn woken_waiting(&self) -> usize {
        self.woken.len()
    }

    pub fn runnable_waiting(&self) -> usize {
        self.runq.len() + self.woken.len() + self.bound_len + self.rt_q.len()
    }

    /// Counters, name and value, in a fixed order.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("runqueue_waits", self.runq_waits),
            (
                "runqueue_wait_ns",
                self.runq_wait_ns.min(u128::from(u64::MAX)) as u64,
            ),
            ("runqueue_max_len", self.runq_max as u64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_runs_everyone_at_once() {
        let mut p = CpuPool::unlimited();
        for t in 0..1000 {
            assert_eq!(p.make_runnable(SimTime(0), t), Some(Cpu::ANY));
        }
        assert_eq!(p.release(SimTime(5), Cpu::ANY), None);
    }

    #[test]
    fn lowest_free_cpu_first_then_fifo_run_queue() {
        let mut p = CpuPool::with_cpus(2);
        assert_eq!(p.make_runnable(SimTime(0), 10), Some(Cpu(0)));
        assert_eq!(p.make_runnable(SimTime(0), 11), Some(Cpu(1)));
        assert_eq!(p.make_runnable(SimTime(1), 12), None);
        assert_eq!(p.make_runnable(SimTime(2), 13), None);
        assert_eq!(p.release(SimTime(10), Cpu(1)), Some((12, Dur(9))));
        assert_eq!(p.release(SimTime(11), Cpu(0)), Some((13, Dur(9))));
        assert_eq!(p.release(SimTime(12), Cpu(1)), None);
        assert_eq!(p.make_runnable(SimTime(13), 14), Some(Cpu(1)));
        assert_eq!(p.release(SimTime(14), Cpu(0)), None);
        assert_eq!(p.make_runnable(SimTime(15), 15), Some(Cpu(0)));
    }

    #[test]
    fn wake_first_serves_woken_tasks_before_preempted_ones() {
        let mut p = CpuPool::with_cpus(1);
        p.set_wake_first(true);
        assert_eq!(p.make_runnable(SimTime(0), 1), Some(Cpu(0)));
        p.requeue(SimTime(1), 2); // used up its slice
        assert_eq!(p.make_runnable(SimTime(2), 3), None); // woken
        assert_eq!(p.make_runnable(SimTime(3), 4), None); // woken
        assert_eq!(p.runnable_waiting(), 3);
        assert_eq!(p.release(SimTime(10), Cpu(0)), Some((3, Dur(8))));
        assert_eq!(p.release(SimTime(11), Cpu(0)), Some((4, Dur(8))));
        assert_eq!(p.release(SimTime(12), Cpu(0)), Some((2, Dur(11))));
        assert_eq!(p.release(SimTime(13), Cpu(0)), None);
    }

    #[test]
    fn a_bound_task_waits_for_its_cpu_and_is_served_first() {
        let mut p = CpuPool::with_cpus(2);
        assert_eq!(p.make_runnable(SimTime(0), 1), Some(Cpu(0)));
        assert_eq!(p.make_runnable_on(SimTime(0), 2, Cpu(1)), Some(Cpu(1)));
        assert_eq!(p.make_runnable(SimTime(1), 3), None);
        assert_eq!(p.make_runnable_on(SimTime(2), 4, Cpu(1)), None);
        // CPU 0 frees up: the shared queue's task, not the bound one.
        assert_eq!(p.release(SimTime(5), Cpu(0)), Some((3, Dur(4))));
        // CPU 1 frees up: its bound task, the only one left.
        assert_eq!(p.release(SimTime(6), Cpu(1)), Some((4, Dur(4))));
        assert_eq!(p.runnable_waiting(), 0);
        assert_eq!(p.release(SimTime(7), Cpu(1)), None);
        assert_eq!(p.make_runnable_on(SimTime(8), 5, Cpu(1)), Some(Cpu(1)));
        assert_eq!(p.try_take(), None);
    }

    #[test]
    fn a_bound_task_and_the_shared_queue_take_turns_by_waiting_time() {
        let mut p = CpuPool::with_cpus(1);
        p.set_wake_first(true);
        assert_eq!(p.make_runnable(SimTime(0), 1), Some(Cpu(0)));
        p.requeue(SimTime(1), 2); // preempted
        assert_eq!(p.make_runnable(SimTime(2), 3), None); // woken
        assert_eq!(p.make_runnable_on(SimTime(3), 4, Cpu(0)), None); // bound, woken later
        assert_eq!(p.make_runnable(SimTime(4), 5), None); // woken after it
        assert_eq!(p.release(SimTime(10), Cpu(0)), Some((3, Dur(8))));
        assert_eq!(p.release(SimTime(11), Cpu(0)), Some((4, Dur(8))));
        assert_eq!(p.release(SimTime(12), Cpu(0)), Some((5, Dur(8))));
        // The preempted task comes last.
        assert_eq!(p.release(SimTime(13), Cpu(0)), Some((2, Dur(12))));
    }

    #[test]
    fn without_wake_first_woken_and_preempted_share_one_fifo() {
        let mut p = CpuPool::with_cpus(1);
        assert_eq!(p.make_runnable(SimTime(0), 1), Some(Cpu(0)));
        p.requeue(SimTime(1), 2);
        assert_eq!(p.make_runnable(SimTime(2), 3), None);
        assert_eq!(p.release(SimTime(10), Cpu(0)), Some((2, Dur(9))));
        assert_eq!(p.release(SimTime(11), Cpu(0)), Some((3, Dur(9))));
    }

    #[test]
    fn eevdf_a_fresh_bound_kworker_goes_before_hogs_whose_slices_are_spent() {
        const MS: u64 = 1_000_000;
        let at = |ms: u64| SimTime(ms * MS);
        let mut p = CpuPool::with_cpus(1);
        p.set_eevdf(3 * MS, MS);
        // Hogs 1 and 2 take turns of 3 ms.
        p.wake(at(0), 1);
        assert_eq!(p.try_take(), Some(Cpu(0)));
        p.started(at(0), 1);
        p.wake(at(0), 2);
        p.enqueue_woken(at(0), 2);
        p.stopped(at(3), 1, true);
        p.requeue(at(3), 1);
        assert_eq!(p.release(at(3), Cpu(0)), Some((2, Dur(3 * MS))));
        p.started(at(3), 2);
        // At 6 ms, 2 yields and kworker 9, bound to CPU 0, wakes: placed
        // at V = 3 ms with a half slice, its deadline (4.5 ms) is before
        // the hogs' (6 ms), so it goes first though 1 has waited longer.
        p.stopped(at(6), 2, true);
        p.requeue(at(6), 2);
        p.wake(at(6), 9);
        assert_eq!(p.make_runnable_on(at(6), 9, Cpu(0)), None);
        assert_eq!(p.release(at(6), Cpu(0)), Some((9, Dur(0))));
        p.started(at(6), 9);
        p.stopped(SimTime(6 * MS + 100_000), 9, false);
        // Then the hogs in the order their deadlines tie: 1 queued first.
        assert_eq!(
            p.release(SimTime(6 * MS + 100_000), Cpu(0)).map(|x| x.0),
            Some(1)
        );
        // In arrival order the hog that has waited longest (here 2, since
        // 3 ms) runs before the kworker.
        let mut fifo = CpuPool::with_cpus(1);
        assert_eq!(fifo.make_runnable(at(0), 1), Some(Cpu(0)));
        fifo.requeue(at(3), 2);
        fifo.requeue(at(6), 1);
        assert_eq!(fifo.make_runnable_on(at(6), 9, Cpu(0)), None);
        assert_eq!(fifo.release(at(6), Cpu(0)).map(|x| x.0), Some(2));
    }
}
