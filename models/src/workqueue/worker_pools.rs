//! The per-CPU worker pools of bound workqueues (R37), as state the world
//! drives: each CPU has one pool that serves every per-CPU workqueue, a
//! worklist of the items activated on that CPU, and `nr_running`, the
//! pool's kworkers that are executing an item and not asleep.
//!
//! The kernel's concurrency management, rule by rule
//! (kernel/workqueue.c):
//! - queueing an item wakes an idle kworker only when no kworker of the
//!   pool is running (`need_more_worker`: worklist non-empty and
//!   `nr_running == 0`; `kick_pool` wakes the first idle one, once);
//! - a woken kworker takes items only when it runs, and only if that is
//!   still true (`worker_thread`: otherwise back to sleep);
//! - a kworker that finishes an item goes on with the next one, without
//!   sleeping, while the worklist is non-empty and it is the only one
//!   running (`keep_working`: `nr_running <= 1`);
//! - a kworker that sleeps inside an item (a lock, a flush) leaves
//!   `nr_running` (`wq_worker_sleeping`), which may kick another; it
//!   counts again when it runs (`wq_worker_running`). A preempted kworker
//!   still counts.
//!
//! Not modelled: CPU_INTENSIVE (items of 10 ms or more without sleeping
//! leave `nr_running`), highpri pools, and worker creation beyond the
//! kworkers a scenario gives its workqueues (R38).

use crate::ids::{CpuId, TaskId, WorkId, WqId};
use crate::workqueue::idle_kworkers::IdleKworkers;
use std::collections::VecDeque;
use typed_index_collections::{ti_vec, TiVec};

/// Where a pool kworker is in R37's accounting.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum PoolState {
    /// Not a pool kworker with work: a task, an idle kworker, or a
    /// kworker of an unbound workqueue.
    #[default]
    No,
    /// Woken by `kick_pool`, has not run yet, holds no item.
    Kicked,
    /// Executing an item, counted in `nr_running`.
    Running,
    /// Executing an item, asleep inside it: not counted.
    Sleeping,
}

#[derive(Clone, Debug)]
pub struct WorkerPools {
    /// Per CPU: activated items no kworker has taken yet, FIFO, with the
    /// workqueue each was queued on.
    worklist: TiVec<CpuId, VecDeque<(WqId, WorkId)>>,
    nr_running: TiVec<CpuId, u32>,
    /// Per CPU: the idle kworker a kick woke that has not run yet (a
    /// second kick wakes the same one: a no-op).
    kicked: TiVec<CpuId, Option<TaskId>>,
    /// The idle kworkers of every per-CPU workqueue.
    pub idle: IdleKworkers,
    /// Pools a kick found no idle kworker for, oldest first: the next
    /// kworker to go idle is theirs (the kernel would create one, R38).
    starved: VecDeque<CpuId>,
    pub kicks: u64,
    pub keep_working: u64,
    pub idle_wakeups: u64,
}

impl WorkerPools {
    /// Pools for `cpus` CPUs; `idle` lists the kworkers they may wake.
    pub fn new(cpus: usize, idle: IdleKworkers) -> Self {
        WorkerPools {
            worklist: ti_vec![VecDeque::new(); cpus],
            nr_running: ti_vec![0; cpus],
            kicked: ti_vec![None; cpus],
            idle,
            starved: VecDeque::new(),
            kicks: 0,
            keep_working: 0,
            idle_wakeups: 0,
        }
    }

    /// `insert_work`: item `id` of workqueue `q` is activated on `cpu`.
    /// Returns whether the pool must be kicked.
    pub fn insert_work(&mut self, cpu: CpuId, q: WqId, id: WorkId) -> bool {
        self.worklist[cpu].push_back((q, id));
        self.need_more_worker(cpu)
    }

    /// Item `id` of workqueue `q` leaves `cpu`'s worklist before a
    /// kworker took it (a grab: `try_to_grab_pending`).
    pub fn remove_work(&mut self, cpu: CpuId, q: WqId, id: WorkId) {
        let l = &mut self.worklist[cpu];
        if let Some(i) = l.iter().position(|&x| x == (q, id)) {
            l.remove(i);
        }
    }

    pub fn need_more_worker(&self, cpu: CpuId) -> bool {
        !self.worklist[cpu].is_empty() && self.nr_running[cpu] == 0
    }

    /// `kick_pool`: the idle kworker to wake for `cpu`, if one must be
    /// woken (none is woken already) and one is idle.
    pub fn kick(&mut self, cpu: CpuId) -> Option<TaskId> {
        if self.kicked[cpu].is_some() {
            return None;
        }
        let Some(w) = self.idle.take(cpu) else {
            if !self.starved.contains(&cpu) {
                self.starved.push_back(cpu);
            }
            return None;
        };
        self.kicked[cpu] = Some(w);
        self.kicks += 1;
        Some(w)
    }

    /// A kworker went idle: the oldest starved pool that still needs one.
    pub fn next_starved(&mut self) -> Option<CpuId> {
        while let Some(cpu) = self.starved.pop_front() {
            if self.need_more_worker(cpu) && self.kicked[cpu].is_none() {
                return Some(cpu);
            }
        }
        None
    }

    /// Kicked kworker `w` runs on `cpu` (`worker_thread`): the item it
    /// takes, counted running, or `None` if it must go back to sleep.
    pub fn kicked_runs(&mut self, w: TaskId, cpu: CpuId) -> Option<(WqId, WorkId)> {
        if self.kicked[cpu] == Some(w) {
            self.kicked[cpu] = None;
        }
        if !self.need_more_worker(cpu) {
            self.idle_wakeups += 1;
            return None;
        }
        self.nr_running[cpu] += 1;
        self.worklist[cpu].pop_front()
    }

    /// A running kworker finished its item on `cpu`: the next item it
    /// goes on with (`keep_working`), or `None`: it leaves `nr_running`
    /// and goes idle.
    pub fn finished(&mut self, cpu: CpuId) -> Option<(WqId, WorkId)> {
        if !self.worklist[cpu].is_empty() && self.nr_running[cpu] <= 1 {
            self.keep_working += 1;
            return self.worklist[cpu].pop_front();
        }
        self.nr_running[cpu] -= 1;
        None
    }

    /// `wq_worker_sleeping`: a running kworker sleeps inside its item.
    /// Returns whether the pool must be kicked.
    pub fn sleeping(&mut self, cpu: CpuId) -> bool {
        self.nr_running[cpu] -= 1;
        self.need_more_worker(cpu)
    }

    /// `wq_worker_running`: a kworker that slept inside its item runs again.
    pub fn running(&mut self, cpu: CpuId) {
        self.nr_running[cpu] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pools(workers: u32) -> WorkerPools {
        WorkerPools::new(2, IdleKworkers::new(TaskId(10), workers))
    }

    /// Pools of 3 kworkers where kworker 10 runs item 1 on `cpu`.
    fn one_running(cpu: CpuId) -> WorkerPools {
        let mut p = pools(3);
        p.insert_work(cpu, WqId(0), WorkId(1));
        assert_eq!(p.kick(cpu), Some(TaskId(10)));
        assert_eq!(p.kicked_runs(TaskId(10), cpu), Some((WqId(0), WorkId(1))));
        p
    }

    #[test]
    fn r37_an_item_kicks_one_idle_kworker_only_while_none_runs() {
        let mut p = pools(3);
        let c = CpuId(0);
        assert!(p.insert_work(c, WqId(0), WorkId(1)), "nothing runs: kick");
        assert_eq!(p.kick(c), Some(TaskId(10)));
        assert!(p.insert_work(c, WqId(1), WorkId(2)));
        assert_eq!(p.kick(c), None, "the kicked kworker has not run yet");
        assert_eq!(p.kicked_runs(TaskId(10), c), Some((WqId(0), WorkId(1))));
        assert!(!p.insert_work(c, WqId(0), WorkId(3)), "one runs: no kick");
        assert!(
            p.insert_work(CpuId(1), WqId(0), WorkId(4)),
            "another CPU's pool"
        );
        assert_eq!(p.kick(CpuId(1)), Some(TaskId(11)));
    }

    #[test]
    fn r37_a_finishing_kworker_keeps_working_while_it_is_the_only_one_running() {
        let c = CpuId(0);
        let mut p = one_running(c);
        p.insert_work(c, WqId(1), WorkId(2));
        assert_eq!(p.finished(c), Some((WqId(1), WorkId(2))), "keep_working");
        assert_eq!(p.finished(c), None, "worklist empty: idle");
        assert!(!p.need_more_worker(c));
    }

    #[test]
    fn r37_a_sleeping_kworker_leaves_nr_running_and_kicks_another() {
        let c = CpuId(0);
        let mut p = one_running(c);
        assert!(!p.insert_work(c, WqId(1), WorkId(2)));
        assert!(p.sleeping(c), "flush_workqueue sleeps: the pool is kicked");
        assert_eq!(p.kick(c), Some(TaskId(11)));
        p.running(c);
        assert_eq!(
            p.kicked_runs(TaskId(11), c),
            None,
            "the sleeper ran again first: nr_running is 1, back to sleep"
        );
        assert_eq!(p.idle_wakeups, 1);
        assert_eq!(
            p.finished(c),
            Some((WqId(1), WorkId(2))),
            "the first takes it"
        );
    }

    #[test]
    fn a_pool_with_no_idle_kworker_gets_the_next_one_to_go_idle() {
        let mut p = pools(1);
        p.insert_work(CpuId(0), WqId(0), WorkId(1));
        assert_eq!(p.kick(CpuId(0)), Some(TaskId(10)));
        p.kicked_runs(TaskId(10), CpuId(0));
        assert!(p.insert_work(CpuId(1), WqId(0), WorkId(2)));
        assert_eq!(p.kick(CpuId(1)), None, "no kworker idle");
        assert_eq!(p.finished(CpuId(0)), None);
        p.idle.push(TaskId(10), Some(CpuId(0)));
        assert_eq!(p.next_starved(), Some(CpuId(1)));
        assert_eq!(p.kick(CpuId(1)), Some(TaskId(10)));
        assert_eq!(p.next_starved(), None);
    }
}
