//! What EEVDF and CFS keep per task, in the shape both use: where a task
//! stands in its fair order ([`State`]) and a table of per-task entities
//! ([`PerTask`], the kernel's `sched_entity` of each task), by task id.

use crate::ids::TaskId;

/// Where a task stands in a fair order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum State {
    /// Not runnable (blocked, asleep, or never run).
    #[default]
    Off,
    /// Runnable: placed, and either about to run or waiting in a queue.
    Placed,
    Waiting,
    Running,
}

/// A fair order's state of each task, by task id, grown on first use: a
/// task not seen yet has the default state.
#[derive(Clone, Debug, Default)]
pub(crate) struct PerTask<E>(Vec<E>);

impl<E: Copy + Default> PerTask<E> {
    pub(crate) fn get(&self, t: TaskId) -> E {
        self.0.get(t.index()).copied().unwrap_or_default()
    }

    /// Starts loading `t`'s entry into the cache (see [`sim::prefetch`]).
    #[inline(always)]
    pub(crate) fn prefetch(&self, t: TaskId) {
        if let Some(e) = self.0.get(t.index()) {
            sim::prefetch::lines(e);
        }
    }

    pub(crate) fn get_mut(&mut self, t: TaskId) -> &mut E {
        let i = t.index();
        if i >= self.0.len() {
            self.0.resize(i + 1, E::default());
        }
        &mut self.0[i]
    }
}
