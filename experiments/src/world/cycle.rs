//! Tasks that wait for each other's locks in a cycle (ABBA, or longer):
//! a deadlock that the rest of the run goes on around. When every task
//! is stuck the run ends by itself, with nothing left to happen; when
//! others still run, the run's end finds the cycle in the wait-for
//! graph, as lockdep would report the lock order that made it. Either
//! way the run is an error: its tasks in the cycle wait forever.

use super::*;
use std::collections::HashMap;

impl World<'_> {
    /// At the end of the run: `Ok`, or the cycle of lock waits found.
    /// Out of the event loop's way: it runs once.
    #[cold]
    #[inline(never)]
    pub(super) fn no_lock_cycle(&self) -> Result<(), RunError> {
        match self.lock_cycle() {
            None => Ok(()),
            Some(cycle) => Err(RunError::LockCycle {
                at: (cycle.iter())
                    .map(|&t| self.tasks[t].since)
                    .max()
                    .unwrap_or(self.clock.now),
                tasks: cycle
                    .iter()
                    .zip(cycle.iter().cycle().skip(1))
                    .map(|(&t, &next)| {
                        format!(
                            "{}, held by {}",
                            self.stuck_line(t),
                            self.tasks.name(self.c, next)
                        )
                    })
                    .collect(),
            }),
        }
    }

    /// A cycle of tasks, each waiting (asleep or spinning) for a lock the
    /// next one holds, if there is one: a depth-first search of the
    /// wait-for graph from every waiting task.
    fn lock_cycle(&self) -> Option<Vec<TaskId>> {
        let waits_for = |t: TaskId| self.waiting_for_lock(t).map(|(l, _)| l);
        let mut owners: HashMap<LockId, Vec<TaskId>> = HashMap::new();
        for t in self.tasks.keys() {
            for (lock, _, _) in self.tasks.held_locks(self.c, t) {
                owners.entry(lock).or_default().push(t);
            }
        }
        // 0: not seen; 1: on the current path; 2: no cycle through it.
        let mut seen: TiVec<TaskId, u8> = ti_vec![0; self.tasks.len()];
        for start in self.tasks.keys() {
            if seen[start] != 0 || waits_for(start).is_none() {
                continue;
            }
            // The path, each task with the index of its next owner to try.
            let mut path: Vec<(TaskId, usize)> = vec![(start, 0)];
            seen[start] = 1;
            while let Some(&(t, next)) = path.last() {
                let owner = waits_for(t)
                    .and_then(|l| owners.get(&l))
                    .and_then(|o| o.get(next))
                    .copied();
                let Some(h) = owner else {
                    seen[t] = 2;
                    path.pop();
                    continue;
                };
                if let Some(last) = path.last_mut() {
                    last.1 += 1;
                }
                match seen[h] {
                    0 => {
                        seen[h] = 1;
                        path.push((h, 0));
                    }
                    1 => {
                        let from = path.iter().position(|&(x, _)| x == h)?;
                        return Some(path[from..].iter().map(|&(x, _)| x).collect());
                    }
                    _ => {}
                }
            }
        }
        None
    }
}
