//! The world and the hung-task detector (R100-R101): which sleeps it
//! looks at, and its reports counted for the results.
//!
//! A task blocked in the world (a lock's wait queue or timed lock sleep,
//! a flush, a wait for a work item, `synchronize_rcu`) sleeps
//! uninterruptibly in the kernel: `down_read`, `down_write`,
//! `mutex_lock`, `percpu_down_write`, `wait_for_completion`. A `sleep`
//! step, a reclaim attempt and a memory.high throttle are killable here
//! (an OOM kill cuts them short), so khungtaskd skips them, as it skips
//! TASK_KILLABLE; an idle kworker sleeps in TASK_IDLE, skipped too.

use super::*;
use models::hung_task::Khungtaskd;

/// What khungtaskd found in one run.
#[derive(Clone)]
pub(super) struct HungTasks {
    /// Off when `hung_task_timeout` is 0: nothing is kept.
    pub(super) on: bool,
    khungtaskd: Khungtaskd,
    /// When each task's uninterruptible sleep began (`SimTime::MAX`:
    /// not in one).
    asleep: TiVec<TaskId, SimTime>,
    /// Reports made (`hung_task_detect_count`).
    reports: u64,
    /// The first reports in the kernel's order (check, then task): the
    /// check's instant, the task and the seconds it prints.
    first: Vec<HungReport>,
}

/// One report: `INFO: task ... blocked for more than N seconds`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct HungReport {
    /// The check that made it.
    pub at: SimTime,
    pub task: TaskId,
    /// The seconds printed: since the first check that saw the sleep.
    pub secs: u64,
}

/// The reports kept for the terminal and for tests.
const KEEP_REPORTS: usize = 10;

impl HungTasks {
    pub(super) fn new(c: &Compiled, ntasks: usize) -> HungTasks {
        let on = c.hung_task.on();
        HungTasks {
            on,
            khungtaskd: Khungtaskd::new(c.hung_task, c.hz),
            asleep: if on {
                ti_vec![SimTime::MAX; ntasks]
            } else {
                TiVec::new()
            },
            reports: 0,
            first: Vec::new(),
        }
    }

    /// `t` begins an uninterruptible sleep at `now`.
    #[inline]
    pub(super) fn asleep(&mut self, t: TaskId, now: SimTime) {
        self.asleep[t] = now;
    }

    /// `t` is woken at `now` (or the run ends): the checks during its
    /// sleep, if it was in one, are counted.
    #[inline]
    pub(super) fn woken(&mut self, t: TaskId, now: SimTime) {
        if self.asleep[t] != SimTime::MAX {
            self.count_checks(t, now);
        }
    }

    /// The checks during `t`'s sleep, which ends at `now`.
    #[inline(never)]
    fn count_checks(&mut self, t: TaskId, now: SimTime) {
        let from = std::mem::replace(&mut self.asleep[t], SimTime::MAX);
        let Some(seen) = self.khungtaskd.reports(from, now) else {
            return;
        };
        if seen.reports.is_empty() {
            return;
        }
        self.reports += seen.reports.len() as u64;
        let (first, reports) = (seen.first, seen.reports.to_vec());
        for at in reports.into_iter().take(KEEP_REPORTS) {
            let secs = self.khungtaskd.blocked_secs(first, at);
            self.first.push(HungReport { at, task: t, secs });
        }
        self.first.sort();
        self.first.truncate(KEEP_REPORTS);
    }

    /// Every sleep still going on at `end` is over for the detector.
    pub(super) fn finish(&mut self, end: SimTime) {
        if !self.on {
            return;
        }
        for t in self.asleep.keys().collect::<Vec<_>>() {
            self.woken(t, end);
        }
    }

    /// The first reports, in the kernel's order.
    pub(super) fn first(&self) -> &[HungReport] {
        &self.first
    }

    /// The counters for the results, when anything was reported: the
    /// reports and the warnings printed of them.
    pub(super) fn counters(&self, out: &mut Vec<Counter>) {
        if self.reports == 0 {
            return;
        }
        let printed = self.khungtaskd.config().warnings_printed(self.reports);
        out.push(Counter {
            subject: "hung_task/reports".into(),
            value: self.reports,
        });
        out.push(Counter {
            subject: "hung_task/warnings".into(),
            value: printed,
        });
    }
}
