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
//! Free CPUs are handed out lowest id first, so runs are reproducible and
//! CPU ids mean the same thing in every variant.

use crate::lock::TaskId;
use sim::{Dur, SimTime};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A CPU id. With unlimited CPUs every task runs on [`Cpu::ANY`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cpu(pub u32);

impl Cpu {
    pub const ANY: Cpu = Cpu(u32::MAX);
}

#[derive(Debug)]
pub struct CpuPool {
    limit: Option<u32>,
    free: BinaryHeap<Reverse<u32>>,
    runq: VecDeque<(TaskId, SimTime)>,
    runq_waits: u64,
    runq_wait_ns: u128,
    runq_max: usize,
}

impl CpuPool {
    pub fn unlimited() -> Self {
        CpuPool {
            limit: None,
            free: BinaryHeap::new(),
            runq: VecDeque::new(),
            runq_waits: 0,
            runq_wait_ns: 0,
            runq_max: 0,
        }
    }

    pub fn with_cpus(n: u32) -> Self {
        let mut p = Self::unlimited();
        p.limit = Some(n.max(1));
        p.free = (0..n.max(1)).map(Reverse).collect();
        p
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
            self.requeue(now, task);
        }
        cpu
    }

    /// A free CPU (lowest id first), if any; unlimited pools always have one.
    #[inline]
    pub fn try_take(&mut self) -> Option<Cpu> {
        if self.limit.is_none() {
            return Some(Cpu::ANY);
        }
        self.free.pop().map(|Reverse(c)| Cpu(c))
    }

    /// The task on `cpu` stops running at `now`. Returns the task that runs
    /// on it next (FIFO) and how long that task waited, if any.
    #[inline]
    pub fn release(&mut self, now: SimTime, cpu: Cpu) -> Option<(TaskId, Dur)> {
        self.limit?;
        match self.runq.pop_front() {
            Some((task, since)) => {
                let waited = now.since(since);
                self.runq_waits += 1;
                self.runq_wait_ns += u128::from(waited.0);
                Some((task, waited))
            }
            None => {
                self.free.push(Reverse(cpu.0));
                None
            }
        }
    }

    /// `task` waits at the tail of the run queue (no free CPU, or it was
    /// preempted and its CPU went to the preempting task).
    pub fn requeue(&mut self, now: SimTime, task: TaskId) {
        self.runq.push_back((task, now));
        self.runq_max = self.runq_max.max(self.runq.len());
    }

    pub fn runnable_waiting(&self) -> usize {
        self.runq.len()
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
}
