//! The state the two-queue what-if rwsem policies share (`reader-pref`,
//! `writer-pref`, `phase-fair`, `rt`): who holds the lock, and one queue of
//! waiting readers and one of waiting writers. The policies differ only in
//! when a request may pass and whom a release hands the lock to; grants
//! are handoffs at the instant of the release (`Wake::Granted`).

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, Holders, Mode, Wake};
use std::collections::VecDeque;

/// A queue entry: a task, with whatever orders it in its queue.
pub(crate) trait Waiting {
    fn task(&self) -> TaskId;
}

impl Waiting for TaskId {
    fn task(&self) -> TaskId {
        *self
    }
}

#[derive(Clone, Debug)]
pub(crate) struct SplitQueues<W = TaskId> {
    pub holders: Holders,
    /// Waiting readers, in the order they are to be granted.
    pub readers: VecDeque<W>,
    /// Waiting writers, in the order they are to be granted.
    pub writers: VecDeque<W>,
}

impl<W> Default for SplitQueues<W> {
    fn default() -> Self {
        SplitQueues {
            holders: Holders::default(),
            readers: VecDeque::new(),
            writers: VecDeque::new(),
        }
    }
}

impl<W: Waiting> SplitQueues<W> {
    /// Writer-fair admission: a request passes only if it is compatible
    /// with the holders and no writer waits, so a waiting writer parks
    /// every new reader.
    pub fn writer_fair_admits(&self, mode: Mode) -> bool {
        self.writers.is_empty()
            && match mode {
                Mode::Read => !self.holders.writer,
                Mode::Write => self.holders.is_free(),
            }
    }

    /// `mode` takes the lock now.
    pub fn grant(&mut self, mode: Mode) -> Acquire {
        self.holders.take(mode);
        Acquire::Granted
    }

    /// Grants every waiting reader, in queue order; false if none waits.
    pub fn grant_readers(&mut self, wakes: &mut Vec<Wake>) -> bool {
        let any = !self.readers.is_empty();
        for w in self.readers.drain(..) {
            self.holders.readers += 1;
            wakes.push(Wake::Granted(w.task()));
        }
        any
    }

    /// Grants the first waiting writer; false if none waits.
    pub fn grant_writer(&mut self, wakes: &mut Vec<Wake>) -> bool {
        match self.writers.pop_front() {
            Some(w) => {
                self.holders.take(Mode::Write);
                wakes.push(Wake::Granted(w.task()));
                true
            }
            None => false,
        }
    }

    pub fn queued(&self) -> usize {
        self.readers.len() + self.writers.len()
    }
}

impl SplitQueues<TaskId> {
    /// `task` waits at the tail of its mode's queue.
    pub fn enqueue(&mut self, task: TaskId, mode: Mode) -> Acquire {
        match mode {
            Mode::Read => self.readers.push_back(task),
            Mode::Write => self.writers.push_back(task),
        }
        Acquire::Queued
    }
}
