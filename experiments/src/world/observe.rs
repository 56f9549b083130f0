//! What watches a run without changing it: the trace (Chrome JSON) and
//! the blame picker and recorder.

use super::*;

/// Who watches the run: the trace (`--trace`), the blame picker (the
/// first `--blame` run) and recorder (the later ones), and the log of
/// random draws (tests of common random numbers). Each is absent unless
/// asked for, and none changes what happens: the hot paths test them for
/// `None` and go on.
#[derive(Default, Clone)]
pub(super) struct Observers {
    /// `--trace`: what this run looks like, slice by slice.
    pub(super) trace: Option<Box<Trace>>,
    /// `--blame`: the waits to explain (first run), and what tasks did
    /// around them (second run).
    pub(super) picker: Option<Box<Picker>>,
    pub(super) recorder: Option<Box<Recorder>>,
    /// Every random duration drawn, as (task, value).
    pub(super) draws: Option<Vec<(TaskId, Dur)>>,
}

impl<'c> World<'c> {
    /// A wait or hold slice of `lock` on `t`'s track, from `start` to now.
    pub(super) fn trace_lock(
        &mut self,
        t: TaskId,
        cat: &'static str,
        lock: LockId,
        mode: Mode,
        start: SimTime,
    ) {
        let l = &self.c.locks[lock];
        let name = format!(
            "{cat} {} ({})",
            l.name,
            crate::program::mode_label(l.kind, mode)
        );
        if let Some(tr) = self.obs.trace.as_mut().filter(|tr| tr.keeps_lock(lock)) {
            tr.slice(t, cat, name, start, self.clock.now);
        }
    }

    /// `t` goes to sleep in `lock`'s wait queue (`asleep`), or has the
    /// lock after waiting: the trace's queue-length counter follows.
    /// Only when tracing: out of line.
    #[inline(never)]
    pub(super) fn trace_queue(&mut self, t: TaskId, lock: LockId, asleep: bool) {
        let task = &mut self.tasks[t];
        if task.in_lock_queue == asleep {
            return;
        }
        task.in_lock_queue = asleep;
        if let Some(tr) = self.obs.trace.as_mut().filter(|tr| tr.keeps_lock(lock)) {
            let delta = if asleep { 1 } else { -1 };
            tr.queue(lock, &self.c.locks[lock].name, delta, self.clock.now);
        }
    }

    /// A task's name in traces and blame chains: `group[i]`, or
    /// `kworker/<workqueue>/<i>`.
    pub(super) fn track_name(&self, t: TaskId) -> String {
        let task = &self.tasks[t];
        match task.worker_of {
            Some(q) => format!("kworker/{}/{}", self.c.workqueues[q].name, task.index),
            None => self.tasks.name(self.c, t),
        }
    }

    /// Records this run as a trace of `[from, to)` (`--trace`).
    pub fn enable_trace(&mut self, from: SimTime, to: SimTime) {
        let mut tr = Trace::new(from, to, self.c.locks.len());
        for t in self.tasks.keys() {
            tr.thread(t, &self.track_name(t));
        }
        self.obs.trace = Some(Box::new(tr));
    }

    /// Traces only the tasks whose track name is one of `names` or
    /// begins with one followed by `[` or `/` (a task group: `walkers`,
    /// `walkers[3]`; a workqueue's kworkers: `kworker/wq`). Call it after
    /// [`World::enable_trace`]. An error names a `names` entry that no
    /// task has, with the groups and workqueues there are.
    pub fn trace_only(&mut self, names: &[String]) -> Result<(), String> {
        let tracks: Vec<String> = self.tasks.keys().map(|t| self.track_name(t)).collect();
        let matches = |track: &str, name: &str| {
            track == name
                || track
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('[') || rest.starts_with('/'))
        };
        for n in names {
            if !tracks.iter().any(|t| matches(t, n)) {
                let mut known: Vec<String> =
                    (self.c.groups.iter().take(self.c.task_groups as usize))
                        .map(|g| g.name.clone())
                        .chain(
                            self.c
                                .workqueues
                                .iter()
                                .map(|q| format!("kworker/{}", q.name)),
                        )
                        .collect();
                known.dedup();
                let hint = crate::scenario::hint::suggestion(n, known.iter().map(String::as_str));
                return Err(format!(
                    "no task group or workqueue `{n}` to trace; there are: {}{hint}",
                    known.join(", ")
                ));
            }
        }
        let keep = tracks
            .iter()
            .map(|t| names.iter().any(|n| matches(t, n)))
            .collect();
        if let Some(tr) = self.obs.trace.as_mut() {
            tr.only_tasks(keep);
        }
        Ok(())
    }

    /// Traces the waits, holds, wake arrows and queue counters only of the
    /// locks named in `names` ([`lock_filter`]). Call it after
    /// [`World::enable_trace`].
    pub fn trace_only_locks(&mut self, names: &[String]) -> Result<(), String> {
        let keep = lock_filter(self.c, names)?;
        if let Some(tr) = self.obs.trace.as_mut() {
            tr.only_locks(keep);
        }
        Ok(())
    }

    /// Traces the slices only of the spans named in `names`
    /// ([`check_span_names`]). Call it after [`World::enable_trace`].
    pub fn trace_only_spans(&mut self, names: &[String]) -> Result<(), String> {
        check_span_names(self.c, names)?;
        if let Some(tr) = self.obs.trace.as_mut() {
            tr.only_spans(names.to_vec());
        }
        Ok(())
    }

    /// Keeps at most `n` trace events (a trace beside a blame).
    pub fn limit_trace(&mut self, n: usize) {
        if let Some(tr) = self.obs.trace.as_mut() {
            tr.limit_events(n);
        }
    }

    /// The trace recorded so far, if tracing.
    pub fn take_trace(&mut self) -> Option<Trace> {
        self.obs.trace.take().map(|b| *b)
    }

    /// A wait of `t` for `lock` since `since` ended now: traced, and
    /// offered to `--blame`'s picker.
    #[inline(never)]
    pub(super) fn observe_wait(
        &mut self,
        t: TaskId,
        lock: LockId,
        mode: Mode,
        stat: StatId,
        since: SimTime,
    ) {
        if self.obs.trace.is_some() {
            self.trace_lock(t, "wait", lock, mode, since);
            self.trace_queue(t, lock, false);
        }
        if let Some(p) = self.obs.picker.as_mut() {
            p.wait(Wait {
                task: t,
                stat,
                lock,
                mode,
                start: since,
                end: self.clock.now,
            });
        }
    }

    /// `--blame`, first run: pick the waits to explain.
    pub fn enable_blame_picking(&mut self, wanted: Wanted) {
        self.obs.picker = Some(Box::new(Picker::new(wanted)));
    }

    /// The picker of the first run.
    pub fn take_picker(&mut self) -> Option<Picker> {
        self.obs.picker.take().map(|b| *b)
    }

    /// `--blame`, later runs: record what the tasks of `focus` did then,
    /// and every wait for and hold of the locks of `convoys`.
    pub fn enable_blame_recording(&mut self, focus: (Focus<TaskId>, Focus<LockId>)) {
        let idle: TiVec<TaskId, bool> = self
            .tasks
            .table
            .iter()
            .map(|k| k.state == State::Idle)
            .collect();
        let r = Recorder::new(focus, |t| idle[t], self.tasks.len());
        self.obs.recorder = Some(Box::new(r));
    }

    /// After a recording run: what it recorded, with the holds still
    /// open and every stretch closed at the end of the run.
    pub fn finish_recording(&mut self) -> Option<Recorder> {
        let mut r = self.obs.recorder.take()?;
        // Holds still open at the end of the run end there.
        for t in self.tasks.keys() {
            for (lock, mode, since) in self.tasks.held_locks(self.c, t) {
                r.hold(t, lock, mode, since, self.clock.now);
            }
        }
        r.finish(self.clock.now.max(self.clock.horizon));
        Some(*r)
    }

    /// `t` does `doing` from now on, for `--blame`.
    #[inline]
    pub(super) fn blame_switch(&mut self, t: TaskId, doing: Doing) {
        if let Some(r) = self.obs.recorder.as_mut() {
            r.switch(t, self.clock.now, doing, None);
        }
    }

    /// `t` got a CPU: it runs (a kworker, its item's work type).
    pub(super) fn blame_on_cpu(&mut self, t: TaskId) {
        let work = match self.tasks[t].work {
            Some(id) if self.tasks[t].worker_of.is_some() => Some(self.work_type(id)),
            _ => None,
        };
        if let Some(r) = self.obs.recorder.as_mut() {
            r.switch(t, self.clock.now, Doing::OnCpu, work);
        }
    }

    /// `t` leaves its CPU: asleep in a wait queue, in reclaim, preempted,
    /// idle or gone, as its state and `off` say.
    pub(super) fn blame_off_cpu(&mut self, t: TaskId) {
        let task = &mut self.tasks[t];
        let off = std::mem::replace(&mut task.off, Doing::Sleep);
        let doing = match task.state {
            State::Blocked => match task.resume.lock_wait() {
                Some((lock, mode, _)) => Doing::Lock { lock, mode },
                None => off,
            },
            State::Sleeping => off,
            State::Runnable => Doing::Runnable,
            State::Idle => Doing::Idle,
            State::Exited => Doing::Exited,
            State::Running | State::Spinning => Doing::OnCpu,
        };
        self.blame_switch(t, doing);
    }

    /// The locks `t` holds, as `name (mode)`, for reports.
    pub(super) fn held_names(&self, t: TaskId) -> Vec<String> {
        (self.tasks.held_locks(self.c, t))
            .map(|(lock, mode, _)| self.lock(lock, mode))
            .collect()
    }
}

impl Names for World<'_> {
    fn task(&self, t: TaskId) -> String {
        self.track_name(t)
    }

    fn lock(&self, lock: LockId, mode: Mode) -> String {
        let l = &self.c.locks[lock];
        format!("{} ({})", l.name, crate::program::mode_label(l.kind, mode))
    }

    fn memcg(&self, m: MemcgId) -> String {
        format!("memcg {}", self.c.memcgs[m].name)
    }

    fn workqueue(&self, q: WqId) -> String {
        self.c.workqueues[q].name.clone()
    }

    fn work(&self, w: WorkTypeId) -> String {
        self.c.works[w].name.clone()
    }

    fn stat(&self, s: StatId) -> String {
        let st = &self.c.stats[s];
        format!("{} {}", st.metric.as_str(), st.subject)
    }
}

/// Which locks of `c` a trace keeps for `names` (a family by its name:
/// `i_rwsem` keeps every `i_rwsem[i]`): an error names an entry that is
/// no lock, with the locks there are.
fn lock_filter(c: &Compiled, names: &[String]) -> Result<TiVec<LockId, bool>, String> {
    let matches = |lock: &str, name: &str| {
        lock == name
            || lock
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('['))
    };
    for n in names {
        if !c.locks.iter().any(|l| matches(&l.name, n)) {
            let mut known: Vec<&str> = (c.locks.iter())
                .map(|l| l.name.split_once('[').map_or(l.name.as_str(), |(f, _)| f))
                .collect();
            known.dedup();
            let hint = crate::scenario::hint::suggestion(n, known.iter().copied());
            return Err(format!(
                "no lock `{n}` to trace; there are: {}{hint}",
                known.join(", ")
            ));
        }
    }
    Ok((c.locks.iter())
        .map(|l| names.iter().any(|n| matches(&l.name, n)))
        .collect())
}

/// An error names an entry of `names` that is no span of `c` (a span's
/// name is its subject's part before the `/group`), with the spans there
/// are.
fn check_span_names(c: &Compiled, names: &[String]) -> Result<(), String> {
    let mut known: Vec<&str> = (c.stats.iter())
        .filter(|s| s.metric == output::Metric::Span)
        .map(|s| {
            s.subject
                .split_once('/')
                .map_or(s.subject.as_str(), |(n, _)| n)
        })
        .collect();
    known.sort_unstable();
    known.dedup();
    match names.iter().find(|n| !known.contains(&n.as_str())) {
        None => Ok(()),
        Some(n) => {
            let hint = crate::scenario::hint::suggestion(n, known.iter().copied());
            let there = if known.is_empty() {
                "the scenario has no span".to_string()
            } else {
                format!("there are: {}", known.join(", "))
            };
            Err(format!("no span `{n}` to trace; {there}{hint}"))
        }
    }
}
