//! The hung-task detector, khungtaskd (docs/kernel-rules.md R100-R101,
//! kernel/hung_task.c), as the checks it makes and what each finds.
//!
//! khungtaskd sleeps for its check interval on a timer (R62's wheel
//! rounds the sleep up), wakes, and looks at every task (R100). A task
//! in an uninterruptible sleep that is neither killable nor idle is
//! remembered with the check's jiffies the first time a check sees its
//! context-switch count changed; a later check that sees the count
//! unchanged and the timeout passed since that check reports it (R101),
//! again at every check after, as long as the sleep lasts. The first
//! `hung_task_warnings` reports of the boot are printed.
//!
//! The world knows when each task entered and left such a sleep: a
//! sleep is one context-switch count (a task that sleeps again has been
//! switched in and out in between), so [`Khungtaskd::reports`] answers
//! for one sleep at a time, lazily, without an event per check.

use crate::timer::{fires_after_jiffies, jiffies_at};
use sim::SimTime;

/// `CONFIG_DEFAULT_HUNG_TASK_TIMEOUT`: 120 s in the kernel's Kconfig
/// default and in the distribution configs.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// `sysctl_hung_task_warnings`' boot value.
pub const DEFAULT_WARNINGS: i64 = 10;

/// The detector's sysctls.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HungTaskConfig {
    /// `hung_task_timeout_secs`; 0 turns the checks off.
    pub timeout_secs: u64,
    /// `hung_task_check_interval_secs`; 0 means the timeout.
    pub interval_secs: u64,
    /// `hung_task_warnings`: reports printed; -1 for no limit.
    pub warnings: i64,
}

impl Default for HungTaskConfig {
    fn default() -> Self {
        HungTaskConfig {
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            interval_secs: 0,
            warnings: DEFAULT_WARNINGS,
        }
    }
}

impl HungTaskConfig {
    /// Whether khungtaskd checks at all (a timeout of 0 sleeps forever).
    pub fn on(&self) -> bool {
        self.timeout_secs > 0
    }

    /// The sleep between two checks, in seconds (R100): the interval, or
    /// the timeout when it is 0, and never more than the timeout.
    pub fn check_interval_secs(&self) -> u64 {
        let i = if self.interval_secs == 0 {
            self.timeout_secs
        } else {
            self.interval_secs
        };
        i.min(self.timeout_secs)
    }

    /// The reports printed of `reports` made (R101): each report spends
    /// one warning while any is left; -1 never runs out.
    pub fn warnings_printed(&self, reports: u64) -> u64 {
        match u64::try_from(self.warnings) {
            Ok(n) => reports.min(n),
            Err(_) => reports,
        }
    }
}

/// khungtaskd of one run: its configuration and the instants of its
/// checks so far.
#[derive(Clone, Debug)]
pub struct Khungtaskd {
    cfg: HungTaskConfig,
    hz: u32,
    /// The checks' instants, in order, as far as asked.
    checks: Vec<SimTime>,
}

impl Khungtaskd {
    pub fn new(cfg: HungTaskConfig, hz: u32) -> Self {
        Khungtaskd {
            cfg,
            hz,
            checks: Vec::new(),
        }
    }

    pub fn config(&self) -> &HungTaskConfig {
        &self.cfg
    }

    /// `watchdog` (R100): khungtaskd starts at time 0 (jiffies 0) and
    /// after each check sleeps `schedule_timeout_interruptible` for the
    /// interval from that check, a timer on the wheel; the checks until
    /// `until` are known after this.
    fn extend_to(&mut self, until: SimTime) {
        let delay = self.cfg.check_interval_secs() * u64::from(self.hz);
        loop {
            let last = self.checks.last().copied().unwrap_or(SimTime::ZERO);
            if last >= until && !self.checks.is_empty() {
                return;
            }
            self.checks.push(fires_after_jiffies(last, delay, self.hz));
        }
    }

    /// What the checks make of a task asleep uninterruptibly from `from`
    /// until `to` (woken then, or the run ended), one context-switch count
    /// all along (R101): a check at `from` sees it asleep, one at `to`
    /// does not. The first check in the sleep records its jiffies; every
    /// later check at least the timeout after it reports. `None` if no
    /// check saw the sleep.
    pub fn reports(&mut self, from: SimTime, to: SimTime) -> Option<Seen<'_>> {
        if !self.cfg.on() || to <= from {
            return None;
        }
        self.extend_to(to);
        let first = self.checks.partition_point(|&c| c < from);
        let end = self.checks.partition_point(|&c| c < to);
        if first >= end {
            return None;
        }
        let seen = jiffies_at(self.checks[first], self.hz);
        let timeout = self.cfg.timeout_secs * u64::from(self.hz);
        let hung = first
            + 1
            + self.checks[first + 1..end]
                .partition_point(|&c| jiffies_at(c, self.hz) < seen + timeout);
        Some(Seen {
            first: self.checks[first],
            reports: &self.checks[hung..end],
        })
    }

    /// The seconds a report at `at` prints for a sleep first seen at
    /// `first` (R101): whole seconds of jiffies since that check.
    pub fn blocked_secs(&self, first: SimTime, at: SimTime) -> u64 {
        (jiffies_at(at, self.hz) - jiffies_at(first, self.hz)) / u64::from(self.hz.max(1))
    }
}

/// One sleep as the checks saw it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Seen<'a> {
    /// The first check that saw it (`last_switch_time`).
    pub first: SimTime,
    /// The checks that reported it, in order.
    pub reports: &'a [SimTime],
}

#[cfg(test)]
mod tests {
    //! Scripted sleeps against the checks' times (R100, R101).
    use super::*;
    use sim::Dur;

    const S: u64 = 1_000_000_000;

    fn t(secs: f64) -> SimTime {
        SimTime((secs * S as f64) as u64)
    }

    #[test]
    fn r100_checks_every_interval_rounded_up_by_the_timer_wheel() {
        // 120 s at HZ 250 is 30,000 jiffies: wheel level 3, granule 512
        // jiffies (2.048 s). From jiffies 0 the timer fires at 30,208
        // (the next multiple of 512 strictly above 30,000): 120.832 s.
        let mut k = Khungtaskd::new(HungTaskConfig::default(), 250);
        k.extend_to(t(300.0));
        assert_eq!(k.checks[0], SimTime(120_832_000_000));
        // From jiffies 30,208: 60,208 rounds up to 60,416, 241.664 s.
        assert_eq!(k.checks[1], SimTime(241_664_000_000));
        // An interval of 10 s (2,500 jiffies, level 2, granule 64):
        // 2,560 jiffies, 10.24 s, then 5,120.
        let mut k = Khungtaskd::new(
            HungTaskConfig {
                interval_secs: 10,
                ..HungTaskConfig::default()
            },
            250,
        );
        k.extend_to(t(25.0));
        assert_eq!(&k.checks[..2], &[t(10.24), t(20.48)]);
        // An interval above the timeout is cut to the timeout.
        let c = HungTaskConfig {
            timeout_secs: 30,
            interval_secs: 60,
            warnings: 10,
        };
        assert_eq!(c.check_interval_secs(), 30);
        // A timeout of 0: no checks, no reports.
        let mut k = Khungtaskd::new(
            HungTaskConfig {
                timeout_secs: 0,
                ..HungTaskConfig::default()
            },
            250,
        );
        assert_eq!(k.reports(SimTime::ZERO, t(10_000.0)), None);
    }

    #[test]
    fn r101_a_sleep_is_reported_a_timeout_after_the_first_check_that_saw_it() {
        // Checks every 10 s (10.24, 20.48, ...), timeout 30 s (7,500
        // jiffies).
        let cfg = HungTaskConfig {
            timeout_secs: 30,
            interval_secs: 10,
            warnings: 10,
        };
        let mut k = Khungtaskd::new(cfg, 250);
        // Asleep from 1 s: the check at 10.24 s records it; 30 s later is
        // 40.24 s, so the check at 40.96 s is the first to report, then
        // 51.2 s, 61.44 s; the one at 71.68 s finds it woken (at 70 s).
        let seen = k.reports(t(1.0), t(70.0)).unwrap();
        assert_eq!(seen.first, t(10.24));
        assert_eq!(seen.reports, &[t(40.96), t(51.2), t(61.44)]);
        // Each prints the seconds since 10.24 s: 30, 40, 51.
        let secs: Vec<u64> = [t(40.96), t(51.2), t(61.44)]
            .iter()
            .map(|&at| k.blocked_secs(t(10.24), at))
            .collect();
        assert_eq!(secs, [30, 40, 51]);
        // A 35 s sleep that began just after a check: the first check to
        // see it is at 20.48 s, and it ends at 45.25 s, before 51.2 s:
        // never reported, though it lasted more than the timeout.
        let seen = k.reports(t(10.25), t(45.25)).unwrap();
        assert_eq!((seen.first, seen.reports), (t(20.48), &[] as &[SimTime]));
        // The same 35 s beginning just before a check (10.2 s) is seen at
        // 10.24 s and reported at 40.96 s.
        assert_eq!(k.reports(t(10.2), t(45.2)).unwrap().reports, &[t(40.96)]);
        // A check at the instant the sleep begins sees it; one at the
        // instant it ends does not.
        assert!(k.reports(t(10.24), t(40.96)).unwrap().reports.is_empty());
        assert_eq!(
            k.reports(t(10.24), t(40.96) + Dur(1)).unwrap().reports,
            &[t(40.96)]
        );
        // A sleep between two checks is never seen.
        assert_eq!(k.reports(t(11.0), t(20.0)), None);
    }

    #[test]
    fn r101_warnings_are_spent_per_report_and_minus_one_never_runs_out() {
        let c = HungTaskConfig::default();
        assert_eq!(c.warnings_printed(3), 3);
        assert_eq!(c.warnings_printed(25), 10);
        let c = HungTaskConfig { warnings: -1, ..c };
        assert_eq!(c.warnings_printed(25), 25);
        let c = HungTaskConfig { warnings: 0, ..c };
        assert_eq!(c.warnings_printed(25), 0);
    }
}
