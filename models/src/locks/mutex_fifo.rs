//! A FIFO mutex with direct handoff (policy `fifo` of `kind = "mutex"`).
//!
//! Granted at once only when free with nobody queued; a release hands the
//! mutex to the head waiter at the same instant. No spinning, no barging.
//! The Linux mutex (R25-R31: optimistic spinning, HANDOFF, PICKUP) is a
//! separate policy.

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, LockCtx, LockPolicy, Mode, Wake};
use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct FifoMutex {
    owner: Option<TaskId>,
    queue: VecDeque<TaskId>,
}

impl FifoMutex {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn owner(&self) -> Option<TaskId> {
        self.owner
    }
}

impl LockPolicy for FifoMutex {
    fn policy(&self) -> &'static str {
        "fifo"
    }

    fn acquire(
        &mut self,
        _ctx: &LockCtx,
        task: TaskId,
        _mode: Mode,
        _w: &mut Vec<Wake>,
    ) -> Acquire {
        if self.owner.is_none() && self.queue.is_empty() {
            self.owner = Some(task);
            Acquire::Granted
        } else {
            self.queue.push_back(task);
            Acquire::Queued
        }
    }

    fn release(&mut self, _ctx: &LockCtx, task: TaskId, _mode: Mode, wakes: &mut Vec<Wake>) {
        debug_assert_eq!(self.owner, Some(task), "mutex_unlock by a non-owner");
        self.owner = self.queue.pop_front();
        if let Some(next) = self.owner {
            wakes.push(Wake::Granted(next));
        }
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::policy::AllOnCpu;
    use sim::SimTime;

    #[test]
    fn fifo_handoff_in_arrival_order() {
        let mut m = FifoMutex::new();
        let mut w = Vec::new();
        let t = &LockCtx {
            now: SimTime(0),
            hz: 250,
            tasks: &AllOnCpu,
        };
        assert_eq!(
            m.acquire(t, TaskId(1), Mode::Write, &mut w),
            Acquire::Granted
        );
        assert_eq!(
            m.acquire(t, TaskId(2), Mode::Write, &mut w),
            Acquire::Queued
        );
        assert_eq!(
            m.acquire(t, TaskId(3), Mode::Write, &mut w),
            Acquire::Queued
        );
        m.release(t, TaskId(1), Mode::Write, &mut w);
        assert_eq!(w, vec![Wake::Granted(TaskId(2))]);
        assert_eq!(m.owner(), Some(TaskId(2)));
        w.clear();
        m.release(t, TaskId(2), Mode::Write, &mut w);
        assert_eq!(w, vec![Wake::Granted(TaskId(3))]);
        w.clear();
        m.release(t, TaskId(3), Mode::Write, &mut w);
        assert!(w.is_empty());
        assert_eq!(m.owner(), None);
    }
}
