//! Tasks that wait for each other in a cycle: for each other's locks
//! (ABBA, or longer), or through a workqueue, a flush or a
//! `cancel_delayed_work_sync` waiting for a work item whose kworker waits
//! in turn (a work item that flushes its own workqueue, a flusher holding
//! a lock its work needs). When every task is stuck the run ends by
//! itself, with nothing left to happen; when others still run, the run's
//! end finds the cycle in the wait-for graph, as lockdep would report the
//! lock order (or the flush) that made it. Either way the run is an
//! error: its tasks in the cycle wait forever.

use super::*;
use std::collections::HashMap;

/// How a task in a cycle waits for the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// For a lock the next one holds.
    Lock,
    /// For a work item the next one (a kworker) is executing.
    Item(WorkId),
}

impl World<'_> {
    /// At the end of the run: `Ok`, or the wait cycle found. Out of the
    /// event loop's way: it runs once.
    #[cold]
    #[inline(never)]
    pub(super) fn no_wait_cycle(&self) -> Result<(), RunError> {
        let Some(cycle) = self.wait_cycle() else {
            return Ok(());
        };
        let at = (cycle.iter())
            .map(|&(t, _)| self.tasks[t].since)
            .max()
            .unwrap_or(self.clock.now);
        let tasks = (cycle.iter().zip(cycle.iter().cycle().skip(1)))
            .map(|(&(t, via), &(next, _))| {
                let next_name = if next == t {
                    "itself".to_string()
                } else {
                    self.stuck_name(next)
                };
                match via {
                    Via::Lock => format!("{}, held by {next_name}", self.stuck_line(t)),
                    Via::Item(id) => format!(
                        "{}, which waits for work item {} run by {next_name}",
                        self.stuck_line(t),
                        self.item_name(id)
                    ),
                }
            })
            .collect();
        if cycle.iter().all(|&(_, via)| via == Via::Lock) {
            Err(RunError::LockCycle { at, tasks })
        } else {
            Err(RunError::WaitCycle { at, tasks })
        }
    }

    /// A cycle of tasks, each waiting (asleep or spinning) for a lock the
    /// next one holds or for a work item the next one runs, if there is
    /// one: a depth-first search of the wait-for graph from every waiting
    /// task. Each task with how it waits for the next.
    fn wait_cycle(&self) -> Option<Vec<(TaskId, Via)>> {
        let mut owners: HashMap<LockId, Vec<TaskId>> = HashMap::new();
        for t in self.tasks.keys() {
            for (lock, _, _) in self.tasks.held_locks(self.c, t) {
                owners.entry(lock).or_default().push(t);
            }
        }
        // The items each waiting task waits for, and who runs them.
        let items = self.item_waits();
        // The `k`-th task that `t` waits for, and how.
        let edge = |t: TaskId, k: usize| -> Option<(TaskId, Via)> {
            if let Some((l, _)) = self.waiting_for_lock(t) {
                return owners.get(&l)?.get(k).map(|&h| (h, Via::Lock));
            }
            (items.get(&t)?.get(k)).map(|&(w, id)| (w, Via::Item(id)))
        };
        // 0: not seen; 1: on the current path; 2: no cycle through it.
        let mut seen: TiVec<TaskId, u8> = ti_vec![0; self.tasks.len()];
        for start in self.tasks.keys() {
            if seen[start] != 0 || edge(start, 0).is_none() {
                continue;
            }
            // The path: each task, how it waits for the next on the path,
            // and the index of its next edge to try.
            let mut path: Vec<(TaskId, Via, usize)> = vec![(start, Via::Lock, 0)];
            seen[start] = 1;
            while let Some(&(t, _, next)) = path.last() {
                let Some((h, via)) = edge(t, next) else {
                    seen[t] = 2;
                    path.pop();
                    continue;
                };
                if let Some(last) = path.last_mut() {
                    last.1 = via;
                    last.2 += 1;
                }
                match seen[h] {
                    0 => {
                        seen[h] = 1;
                        path.push((h, Via::Lock, 0));
                    }
                    1 => {
                        let from = path.iter().position(|&(x, _, _)| x == h)?;
                        return Some(path[from..].iter().map(|&(x, v, _)| (x, v)).collect());
                    }
                    _ => {}
                }
            }
        }
        None
    }
}
