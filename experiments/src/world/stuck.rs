//! What a lock wait still going on at the end of a run waits for: the
//! tasks that hold it up, followed from holder to holder, as the kernel's
//! hung-task report or `sysrq-w` would list blocked tasks and the locks
//! they hold. `--blame` explains waits that ended, by the wakeups that
//! ended them; a stall that outlasts the run has no such wakeup yet, so
//! this reads the world's state at its end instead.

use super::*;

/// The longest lock wait still going on at the end of a run, and what
/// holds it up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// Its wait's subject, as in summary.csv (`lock/mode/group`).
    pub subject: String,
    /// How long it had waited when the run ended.
    pub so_far: Dur,
    /// When the run ended.
    pub at: SimTime,
    /// One line per task reached: depth (0 = the waiter, e.g.
    /// `oomd[0]`), task, what it was doing.
    pub lines: Vec<StuckLine>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StuckLine {
    pub depth: usize,
    pub task: String,
    pub doing: String,
}

/// How deep the report follows holders (a chain of locks and flushes
/// longer than this is cut, and says so).
const MAX_DEPTH: usize = 12;
/// Holders listed under one task (the readers of a busy rwsem can be
/// hundreds); the rest are counted.
const MAX_SHOWN: usize = 6;

/// A point in simulated time as the blame chains print it.
pub fn secs(t: SimTime) -> String {
    format!("{:.6} s", t.0 as f64 / 1e9)
}

impl Stuck {
    /// The report as indented text, two spaces per level.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(&"  ".repeat(l.depth + 1));
            if !l.task.is_empty() {
                s.push_str(&l.task);
                s.push(' ');
            }
            s.push_str(&l.doing);
            s.push('\n');
        }
        s
    }
}

impl World<'_> {
    /// The longest lock wait still going on now (of the wait statistics
    /// `only`, if given), and the tasks holding it up. Meant for the end
    /// of a run.
    pub fn stuck(&self, only: Option<&[StatId]>) -> Option<Stuck> {
        let worst = self
            .open_lock_waits()
            .filter(|&(_, wait, _)| only.is_none_or(|ids| ids.contains(&wait)))
            .map(|(t, wait, so_far)| (so_far, std::cmp::Reverse(t), wait))
            .max();
        let (so_far, std::cmp::Reverse(t), wait) = worst?;
        let mut lines = Vec::new();
        let mut seen = ti_vec![false; self.tasks.len()];
        self.stuck_lines(t, 0, &mut seen, &mut lines);
        Some(Stuck {
            subject: self.c.stats[wait].subject.clone(),
            so_far,
            at: self.clock.now,
            lines,
        })
    }

    /// Task `t`'s line and, below it, those of the tasks it waits for.
    fn stuck_lines(
        &self,
        t: TaskId,
        depth: usize,
        seen: &mut TiSlice<TaskId, bool>,
        lines: &mut Vec<StuckLine>,
    ) {
        let task = self.track_name(t);
        if seen[t] {
            lines.push(StuckLine {
                depth,
                task,
                doing: "(listed above)".into(),
            });
            return;
        }
        seen[t] = true;
        let (doing, next) = self.stuck_doing(t);
        lines.push(StuckLine { depth, task, doing });
        if next.is_empty() {
            return;
        }
        if depth + 1 > MAX_DEPTH {
            lines.push(StuckLine {
                depth: depth + 1,
                task: String::new(),
                doing: format!("(not followed further: more than {MAX_DEPTH} levels)"),
            });
            return;
        }
        for &n in next.iter().take(MAX_SHOWN) {
            self.stuck_lines(n, depth + 1, seen, lines);
        }
        if next.len() > MAX_SHOWN {
            lines.push(StuckLine {
                depth: depth + 1,
                task: String::new(),
                doing: format!("... and {} more", next.len() - MAX_SHOWN),
            });
        }
    }

    /// What `t` is doing now, in words, and the tasks it waits for.
    fn stuck_doing(&self, t: TaskId) -> (String, Vec<TaskId>) {
        let task = &self.tasks[t];
        let until = || match self.clock.queue.time_of(t.index()) {
            Some(at) => format!(" until {}", secs(at)),
            None => String::new(),
        };
        let lock_wait = task.resume.lock_wait().map(|(lock, mode, _)| (lock, mode));
        let (mut doing, next) = match (task.state, lock_wait) {
            (State::Blocked | State::Spinning, Some((lock, mode))) => {
                let verb = if task.state == State::Spinning {
                    "spins on"
                } else {
                    "waits for"
                };
                let mut s = format!(
                    "{verb} {} since {}",
                    Names::lock(self, lock, mode),
                    secs(task.since)
                );
                let waiters = self.lock_waiters(lock);
                let me = (task.since, t);
                let after = waiters
                    .iter()
                    .filter(|&&(w, since, _)| (since, w) > me)
                    .count();
                if after > 0 {
                    s.push_str(&format!(" ({after} more have asked for it since)"));
                }
                let holders = self.lock_holders(lock, t);
                // R3, R4: a waiting writer makes new readers queue, even
                // behind reader holders; with a writer holding the lock,
                // the holder is what a reader waits for.
                let write_held = holders.iter().any(|&(_, m)| m == Mode::Write);
                let writer_ahead = (mode == Mode::Read && !write_held)
                    .then(|| {
                        (waiters.iter())
                            .filter(|&&(w, since, m)| {
                                w != t && m == Mode::Write && since <= task.since
                            })
                            .min_by_key(|&&(w, since, _)| (since, w))
                    })
                    .flatten();
                let next = match writer_ahead {
                    Some(&(w, _, _)) => {
                        s.push_str(&format!(
                            ", behind the queued writer {}",
                            self.track_name(w)
                        ));
                        vec![w]
                    }
                    None => {
                        if holders.is_empty() {
                            s.push_str(" (no holder: being handed over)");
                        }
                        holders.into_iter().map(|(h, _)| h).collect()
                    }
                };
                (s, next)
            }
            (State::Blocked, None) => match task.off {
                Doing::Flush { wq } => {
                    let s = format!(
                        "in flush_workqueue({}): {} item(s) in flight",
                        self.c.workqueues[wq].name,
                        self.wq.queues[wq].in_flight()
                    );
                    (s, self.running_items(wq))
                }
                Doing::WorkWait { wq } => {
                    let s = format!(
                        "waits for a running item of {} (cancel_*_sync)",
                        self.c.workqueues[wq].name
                    );
                    (s, self.running_items(wq))
                }
                Doing::GracePeriod => (
                    "in synchronize_rcu, waiting for a grace period".into(),
                    Vec::new(),
                ),
                _ => ("blocked".into(), Vec::new()),
            },
            (State::Runnable, Some((lock, mode))) => {
                let (wait, next) = self.cpu_wait(t);
                let how = if matches!(task.resume, Resume::Retry { .. }) {
                    "woken to try again for"
                } else {
                    "was given"
                };
                let lock = Names::lock(self, lock, mode);
                (format!("{how} {lock}, runnable: {wait}"), next)
            }
            (State::Runnable, None) => {
                let (wait, next) = self.cpu_wait(t);
                (format!("runnable: {wait}"), next)
            }
            (State::Running | State::Spinning, _) => {
                let s = if task.in_burst {
                    format!("on a CPU, in a cpu step until {}", secs(task.burst_end))
                } else {
                    "on a CPU".into()
                };
                (s, Vec::new())
            }
            (State::Sleeping, _) => {
                let s = match task.off {
                    Doing::Reclaim { memcg } => {
                        let retries = match &task.charging {
                            Some((_, ch)) => format!(
                                ", {} of {} retries left (R45)",
                                ch.retries_left(),
                                models::memcg::MAX_RECLAIM_RETRIES
                            ),
                            None => String::new(),
                        };
                        format!(
                            "in memcg reclaim (memcg {}), this attempt{}{retries}",
                            self.c.memcgs[memcg].name,
                            until()
                        )
                    }
                    Doing::Throttle { memcg } => format!(
                        "throttled over memory.high (memcg {}){}",
                        self.c.memcgs[memcg].name,
                        until()
                    ),
                    _ => format!("in a sleep step{}", until()),
                };
                (s, Vec::new())
            }
            (State::Idle, _) => ("an idle kworker".into(), Vec::new()),
            (State::Exited, _) => ("exited".into(), Vec::new()),
        };
        let held = self.held_names(t);
        if !held.is_empty() {
            doing.push_str("; holding ");
            doing.push_str(&held.join(", "));
        }
        (doing, next)
    }

    /// Runnable `t`'s wait for a CPU: which CPU's queue (per-CPU queues,
    /// or a bound kworker's CPU), who runs there and how many wait, else
    /// how many wait for any CPU. With a CPU of its own to wait for, the
    /// task running there is what it waits behind.
    fn cpu_wait(&self, t: TaskId) -> (String, Vec<TaskId>) {
        let task = &self.tasks[t];
        let since = task
            .queued_at
            .map_or(String::new(), |q| format!(" since {}", secs(q)));
        match task.bound.or_else(|| self.cpus.pool.queued_on(t)) {
            Some(cpu) if cpu.index() < self.cpus.running_on.len() => {
                let r = self.cpus.running_on[cpu];
                let (who, next) = if r == NONE {
                    ("idle".to_string(), Vec::new())
                } else {
                    (format!("{} runs there", self.track_name(r)), vec![r])
                };
                let s = format!(
                    "waiting for CPU {}{since} ({who}; tasks waiting for it: {})",
                    cpu.0,
                    self.cpus.pool.waiting_for(cpu)
                );
                (s, next)
            }
            _ => (
                format!(
                    "waiting for a CPU{since} (runnable tasks waiting: {})",
                    self.cpus.pool.runnable_waiting()
                ),
                Vec::new(),
            ),
        }
    }

    /// The lock `t` waits for now (asleep in its queue or spinning), and
    /// in which mode.
    pub(super) fn waiting_for_lock(&self, t: TaskId) -> Option<(LockId, Mode)> {
        let k = &self.tasks[t];
        if !matches!(k.state, State::Blocked | State::Spinning) {
            return None;
        }
        k.resume.lock_wait().map(|(l, m, _)| (l, m))
    }

    /// The tasks waiting for `lock`: each with when it asked and in which
    /// mode.
    fn lock_waiters(&self, lock: LockId) -> Vec<(TaskId, SimTime, Mode)> {
        (self.tasks.keys())
            .filter_map(|w| match self.waiting_for_lock(w) {
                Some((l, m)) if l == lock => Some((w, self.tasks[w].since, m)),
                _ => None,
            })
            .collect()
    }

    /// The tasks holding `lock`, other than `but`, each with its mode.
    fn lock_holders(&self, lock: LockId, but: TaskId) -> Vec<(TaskId, Mode)> {
        (self.tasks.keys())
            .filter(|&h| h != but)
            .filter_map(|h| {
                (self.tasks.held_locks(self.c, h))
                    .find(|&(l, _, _)| l == lock)
                    .map(|(_, m, _)| (h, m))
            })
            .collect()
    }

    /// The kworkers running an item of workqueue `wq` now.
    fn running_items(&self, wq: WqId) -> Vec<TaskId> {
        (self.tasks.iter())
            .filter(|(_, task)| {
                task.worker_of.is_some()
                    && task.work.is_some()
                    && task.item_wq == wq
                    && !matches!(task.state, State::Idle | State::Exited)
            })
            .map(|(k, _)| k)
            .collect()
    }
}
