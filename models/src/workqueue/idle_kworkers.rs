//! Idle kworkers, in the order the world takes them (R37). A pool's idle
//! list is LIFO in the kernel (`worker_enter_idle` adds at the head,
//! `first_idle_worker` takes the head): for a CPU, the kworker that went
//! idle last among those that last ran there; for an unbound item, the
//! one that went idle last. A CPU none of whose kworkers is idle borrows
//! the longest idle of all, with no scheduling history (the world forgets
//! it): it stands for the kworker the kernel would create (R38).
//!
//! A scan of one idle list for a matching home CPU touched one task per
//! idle kworker: at 64 CPUs that was a tenth of a churn-heavy run. Here
//! each kworker, when it goes idle, is listed twice, in the list of all
//! and in its home CPU's list, under a stamp; taking it from one list
//! leaves a stale entry in the other, skipped when met and swept out when
//! stale entries outnumber live ones.

use crate::ids::{CpuId, TaskId};
use std::collections::VecDeque;
use typed_index_collections::TiVec;

/// An idle list: (kworker, stamp) in the order they went idle.
type List = VecDeque<(TaskId, u64)>;

#[derive(Clone, Debug)]
pub struct IdleKworkers {
    /// The kworkers it may list are `first .. first + stamp.len()`.
    first: TaskId,
    /// Each kworker's stamp while idle, 0 while busy.
    stamp: Vec<u64>,
    next_stamp: u64,
    live: usize,
    /// Every idle kworker, longest idle first.
    all: List,
    /// Idle kworkers by the CPU they last ran on, longest idle first.
    by_home: TiVec<CpuId, List>,
    /// Entries of `all` and `by_home` together.
    entries: usize,
}

impl IdleKworkers {
    /// `n` kworkers, `first ..  first + n`, all idle and never run, in
    /// that order.
    pub fn new(first: TaskId, n: u32) -> Self {
        let mut pool = Self::empty(first, n);
        for i in 0..n {
            pool.push(TaskId(first.0 + i), None);
        }
        pool
    }

    /// Room for kworkers `first .. first + n`, none of them idle yet.
    pub fn empty(first: TaskId, n: u32) -> Self {
        IdleKworkers {
            first,
            stamp: vec![0; n as usize],
            next_stamp: 1,
            live: 0,
            all: VecDeque::new(),
            by_home: TiVec::new(),
            entries: 0,
        }
    }

    /// Kworker `w`, which last ran on `home`, goes idle.
    pub fn push(&mut self, w: TaskId, home: Option<CpuId>) {
        let s = self.next_stamp;
        self.next_stamp += 1;
        self.stamp[w.index() - self.first.index()] = s;
        self.live += 1;
        self.all.push_back((w, s));
        self.entries += 1;
        if let Some(c) = home.filter(|&c| c != CpuId::ANY) {
            if self.by_home.len() <= c.index() {
                self.by_home.resize_with(c.index() + 1, VecDeque::new);
            }
            self.by_home[c].push_back((w, s));
            self.entries += 1;
        }
    }

    /// The kworker to run an item on `cpu` ([`CpuId::ANY`]: unbound), taken
    /// off the idle lists; `None` if none is idle.
    pub fn take(&mut self, cpu: CpuId) -> Option<TaskId> {
        let (stamp, first, entries) = (&self.stamp, self.first, &mut self.entries);
        let w = if cpu == CpuId::ANY {
            Self::live(&mut self.all, stamp, first, entries, VecDeque::pop_back)
        } else {
            self.by_home
                .get_mut(cpu)
                .and_then(|list| Self::live(list, stamp, first, entries, VecDeque::pop_back))
                .or_else(|| Self::live(&mut self.all, stamp, first, entries, VecDeque::pop_front))
        }?;
        Some(self.took(w))
    }

    fn took(&mut self, w: TaskId) -> TaskId {
        self.stamp[w.index() - self.first.index()] = 0;
        self.live -= 1;
        if self.entries > 2 * self.live + 64 {
            self.sweep();
        }
        w
    }

    /// Pops entries off one end of `list` (`pop`) until a live one.
    fn live(
        list: &mut List,
        stamp: &[u64],
        first: TaskId,
        entries: &mut usize,
        pop: fn(&mut List) -> Option<(TaskId, u64)>,
    ) -> Option<TaskId> {
        while let Some((w, s)) = pop(list) {
            *entries -= 1;
            if stamp[w.index() - first.index()] == s {
                return Some(w);
            }
        }
        None
    }

    /// Drops every stale entry (amortised: runs once stale entries
    /// outnumber live ones).
    fn sweep(&mut self) {
        let (stamp, first) = (&self.stamp, self.first);
        let live = |&(w, s): &(TaskId, u64)| stamp[w.index() - first.index()] == s;
        self.all.retain(live);
        for list in &mut self.by_home {
            list.retain(live);
        }
        self.entries = self.all.len() + self.by_home.iter().map(VecDeque::len).sum::<usize>();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order as a scan of one list (in the order they went idle): the
    /// last whose home is `cpu`, else the first; for no CPU, the last.
    fn reference(idle: &mut VecDeque<(TaskId, Option<CpuId>)>, cpu: CpuId) -> Option<TaskId> {
        if cpu == CpuId::ANY {
            return idle.pop_back().map(|(w, _)| w);
        }
        if let Some(i) = idle.iter().rposition(|&(_, h)| h == Some(cpu)) {
            return idle.remove(i).map(|(w, _)| w);
        }
        idle.pop_front().map(|(w, _)| w)
    }

    #[test]
    fn r37_takes_the_last_idle_kworker_of_the_cpu_else_the_longest_idle() {
        let mut p = IdleKworkers::new(TaskId(10), 4);
        assert_eq!(
            p.take(CpuId(1)),
            Some(TaskId(10)),
            "none ran yet: longest idle"
        );
        assert_eq!(
            p.take(CpuId::ANY),
            Some(TaskId(13)),
            "unbound: the last idle"
        );
        p.push(TaskId(13), Some(CpuId(0)));
        p.push(TaskId(10), Some(CpuId(0)));
        assert_eq!(
            p.take(CpuId(0)),
            Some(TaskId(10)),
            "its CPU's last idle kworker"
        );
        assert_eq!(
            p.take(CpuId(3)),
            Some(TaskId(11)),
            "none of CPU 3: longest idle"
        );
        assert_eq!(p.take(CpuId::ANY), Some(TaskId(13)), "the stale 10 skipped");
        assert_eq!(
            p.take(CpuId(0)),
            Some(TaskId(12)),
            "CPU 0's entries are stale"
        );
        assert_eq!(p.live, 0);
        assert_eq!(p.take(CpuId(1)), None);
    }

    #[test]
    fn takes_in_exactly_the_order_of_a_scan_of_one_idle_list() {
        use rand::Rng;
        let mut rng = sim::rng::stream(7, 0, "test/idle_kworkers", 0);
        let n = 24u32;
        let mut p = IdleKworkers::new(TaskId(100), n);
        let mut r: VecDeque<(TaskId, Option<CpuId>)> =
            (100..100 + n).map(|w| (TaskId(w), None)).collect();
        let mut busy: Vec<TaskId> = Vec::new();
        for _ in 0..20_000 {
            if !busy.is_empty() && (r.is_empty() || rng.random_bool(0.5)) {
                let w = busy.swap_remove(rng.random_range(0..busy.len()));
                let home = Some(CpuId(rng.random_range(0..6)));
                p.push(w, home);
                r.push_back((w, home));
            } else {
                let cpu = if rng.random_bool(0.2) {
                    CpuId::ANY
                } else {
                    CpuId(rng.random_range(0..8))
                };
                let got = p.take(cpu);
                assert_eq!(got, reference(&mut r, cpu));
                busy.extend(got);
            }
            assert!(p.entries <= 2 * p.live + 64 + 2, "stale entries are swept");
        }
    }
}
