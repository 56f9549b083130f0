//! Memory pressure stall information of one cgroup (R104): the time in
//! which some of its tasks were stalled on memory, and the running
//! averages `memory.pressure` shows (`some avg10=18.11 ...`), in the
//! kernel's fixed-point arithmetic (kernel/sched/psi.c `update_averages`,
//! `calc_avgs`; include/linux/sched/loadavg.h `calc_load`, `LOAD_INT`,
//! `LOAD_FRAC`).
//!
//! Model: the averages take one sample per `psi_period` (PSI_FREQ =
//! 2 HZ + 1 jiffies), at each period's end, as the periodic
//! `psi_avgs_work` does when it runs on time; the kernel may take a
//! sample later (a busy system, or a read of the file after the period
//! ended). The kernel weights each CPU's stall time by the time the
//! cgroup's tasks were non-idle on it; here the cgroup counts as one CPU,
//! which gives the kernel's figure when its stalled tasks are its only
//! non-idle ones, and an upper bound otherwise. Only `some` is kept.

/// Bits of the fraction in the kernel's fixed point (`FSHIFT`).
const FSHIFT: u32 = 11;
/// 1.0 in that fixed point (`FIXED_1`).
const FIXED_1: u64 = 1 << FSHIFT;
/// `EXP_10s`, `EXP_60s`, `EXP_300s`: 1/exp(2 s / 10, 60, 300 s) in
/// `FIXED_1` units, one per averaging window.
const EXP: [u64; 3] = [1677, 1981, 2034];

/// One of the three running averages of `memory.pressure`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    Avg10,
    Avg60,
    Avg300,
}

impl Window {
    /// The field's name in `memory.pressure`.
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Avg10 => "avg10",
            Window::Avg60 => "avg60",
            Window::Avg300 => "avg300",
        }
    }

    /// The window a field name names.
    pub fn parse(s: &str) -> Option<Window> {
        match s {
            "avg10" => Some(Window::Avg10),
            "avg60" => Some(Window::Avg60),
            "avg300" => Some(Window::Avg300),
            _ => None,
        }
    }
}

/// `psi_period` in nanoseconds at `hz`: PSI_FREQ = 2 HZ + 1 jiffies
/// (2.004 s at HZ 250).
pub fn period_ns(hz: u32) -> u64 {
    (2 * u64::from(hz) + 1) * (1_000_000_000 / u64::from(hz.max(1)))
}

/// The `some` stall state of one cgroup's memory pressure, and its
/// averages.
#[derive(Clone, Debug)]
pub struct Pressure {
    period_ns: u64,
    /// Tasks stalled on memory now (`psi_memstall_enter` without its
    /// leave).
    stalled: u32,
    /// Where the period being filled began.
    period_start: u64,
    /// Stall time of that period accounted up to `mark`.
    acc: u64,
    mark: u64,
    /// The averages as the kernel keeps them: percent times `FIXED_1`.
    avg: [u64; 3],
    /// All stall time so far, up to `mark` (the file's `total=`).
    total_ns: u64,
}

/// `calc_load`: one step of an exponentially decaying average.
fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut new = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        new += FIXED_1 - 1;
    }
    new / FIXED_1
}

impl Pressure {
    /// A cgroup created at time 0, with periods of `period_ns`.
    pub fn new(period_ns: u64) -> Pressure {
        Pressure {
            period_ns: period_ns.max(1),
            stalled: 0,
            period_start: 0,
            acc: 0,
            mark: 0,
            avg: [0; 3],
            total_ns: 0,
        }
    }

    /// Accounts time up to `now`: the stall so far, and a sample into
    /// the averages at the end of every period that ended.
    fn roll(&mut self, now: u64) {
        loop {
            let end = self.period_start + self.period_ns;
            if end > now {
                break;
            }
            self.stall_until(end);
            // `calc_avgs`: the period's stall as a whole percent, then
            // in fixed point.
            let pct = self.acc.min(self.period_ns) * 100 / self.period_ns * FIXED_1;
            for (a, e) in self.avg.iter_mut().zip(EXP) {
                *a = calc_load(*a, e, pct);
            }
            self.period_start = end;
            self.acc = 0;
        }
        self.stall_until(now);
    }

    fn stall_until(&mut self, t: u64) {
        if t > self.mark {
            if self.stalled > 0 {
                self.acc += t - self.mark;
                self.total_ns += t - self.mark;
            }
            self.mark = t;
        }
    }

    /// A task enters a memory stall at `now` (`psi_memstall_enter`).
    pub fn enter(&mut self, now: u64) {
        self.roll(now);
        self.stalled += 1;
    }

    /// A task leaves its memory stall at `now` (`psi_memstall_leave`).
    pub fn leave(&mut self, now: u64) {
        self.roll(now);
        self.stalled = self.stalled.saturating_sub(1);
    }

    /// The `some` average of `w` at `now`, in hundredths of a percent,
    /// as the file prints it: `LOAD_INT` and two digits of `LOAD_FRAC`
    /// (18.11 is 1811).
    pub fn some_centi(&mut self, now: u64, w: Window) -> u64 {
        self.roll(now);
        let a = self.avg[w as usize];
        (a >> FSHIFT) * 100 + (((a & (FIXED_1 - 1)) * 100) >> FSHIFT)
    }

    /// All stall time up to `now`, in nanoseconds.
    pub fn total_ns(&mut self, now: u64) -> u64 {
        self.roll(now);
        self.total_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 2_004_000_000; // HZ 250

    #[test]
    fn r104_the_period_is_two_seconds_and_a_tick() {
        assert_eq!(period_ns(250), P);
        assert_eq!(period_ns(1000), 2_001_000_000);
    }

    #[test]
    fn r104_one_full_period_of_stall_reads_18_11_in_avg10() {
        // calc_load(0, 1677, 100 x 2048) = (204800 x 371 + 2047) / 2048
        // = 37100, printed 18.11; avg60: 204800 x 67 / 2048 -> 6700 = 3.27;
        // avg300: 204800 x 14 / 2048 -> 1400 = 0.68.
        let mut p = Pressure::new(P);
        p.enter(0);
        assert_eq!(
            p.some_centi(P - 1, Window::Avg10),
            0,
            "no sample before the period ends"
        );
        assert_eq!(p.some_centi(P, Window::Avg10), 1811);
        assert_eq!(p.some_centi(P, Window::Avg60), 327);
        assert_eq!(p.some_centi(P, Window::Avg300), 68);
        assert_eq!(p.total_ns(P), P);
    }

    #[test]
    fn r104_a_stall_of_half_a_period_samples_50_percent_and_decays_after() {
        let mut p = Pressure::new(P);
        p.enter(P / 4);
        p.leave(P / 4 + P / 2);
        // 50% in fixed point: 102400; calc_load(0, 1677, 102400) =
        // (102400 x 371 + 2047) / 2048 = 18550 -> 9.05.
        assert_eq!(p.some_centi(P, Window::Avg10), 905);
        // A period with no stall: 18550 x 1677 / 2048 = 15189 -> 7.41.
        assert_eq!(p.some_centi(2 * P, Window::Avg10), 741);
        assert_eq!(p.total_ns(3 * P), P / 2);
    }

    #[test]
    fn r104_two_stalled_tasks_count_once() {
        let mut p = Pressure::new(P);
        p.enter(0);
        p.enter(P / 2);
        p.leave(P / 2 + 10);
        assert_eq!(p.some_centi(P, Window::Avg10), 1811);
        p.leave(P);
        assert_eq!(p.total_ns(2 * P), P);
    }
}
