//! When a `timer_list` timer fires: jiffies and the timer wheel's
//! granularity (R62: kernel/time/timer.c, `calc_wheel_index`,
//! `calc_index`).
//!
//! A timer armed at `jiffies + delta` (R35's delayed work, R47's OOM
//! reaper timer, R48's `schedule_timeout_killable`) goes into a
//! bucket of the wheel level that `delta` selects. Level `n` has buckets
//! of `8^n` jiffies, so a timer fires at the end of its bucket, never
//! early and up to one granule late: `calc_index` rounds `expires` up to
//! the next multiple of the level's granule, strictly above it. At level
//! 0 (delta below 63 jiffies) that is `expires + 1`; a 1 s timer at
//! HZ=1000 (1000 jiffies, level 2) fires 1001 to 1064 jiffies after it
//! was armed, on a multiple of 64 jiffies, together with every other timer
//! of its bucket.
//!
//! Assumed: the timer base's `clk` is the current jiffy when the timer is
//! armed (`forward_timer_base` brings an idle base's clock forward). The
//! kernel's may be one ahead (`__run_timers` leaves it at `jiffies + 1`);
//! since `calc_index` rounds the absolute expiry, that changes a timer's
//! bucket only when its delta is exactly a level's start (63, 504, 4032
//! ... jiffies), none of the delays the scenarios use. The timer softirq
//! runs at the tick that reaches the bucket, with no delay of its own.
//! `jiffies` is 0 at time 0 (the phase of the kernel's `INITIAL_JIFFIES`
//! against the run's start is arbitrary anyway).
//!
//! Not modelled: the order in which the timers of one bucket fire. The
//! kernel fires a CPU's bucket newest-armed first (`enqueue_timer` adds
//! at the list head, `expire_timers` takes from it); here they fire in
//! the order their events were set (the world's queue, FIFO at one
//! instant).

use sim::{Dur, SimTime};

/// `LVL_CLK_SHIFT`: each level's granule is 8 times the one below.
const LVL_CLK_SHIFT: u32 = 3;
/// `LVL_SIZE`: buckets per level.
const LVL_SIZE: u64 = 64;

/// `LVL_START(n)`: the smallest delta that level `n` takes.
const fn lvl_start(n: u32) -> u64 {
    (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT)
}

/// `LVL_DEPTH`: 9 levels above HZ 100, else 8.
fn lvl_depth(hz: u32) -> u32 {
    if hz > 100 {
        9
    } else {
        8
    }
}

// The three conversions below are on the path of every
// `mod_delayed_work` (a pidlist read re-arms its timer): 64-bit
// arithmetic while the product fits (times below 2^64 / HZ ns, 213 days
// at HZ 1000), 128-bit past that.

/// The shortest time between two ticks at `hz`: the tick period, rounded
/// down where HZ does not divide a second (HZ 300), since [`tick_of`]
/// places the ticks at whole nanoseconds.
#[inline]
pub fn shortest_tick_period(hz: u32) -> Dur {
    Dur(1_000_000_000 / u64::from(hz.max(1)))
}

/// `jiffies` at `now`: whole ticks since the start of the run.
#[inline]
pub fn jiffies_at(now: SimTime, hz: u32) -> u64 {
    let hz = u64::from(hz.max(1));
    match now.0.checked_mul(hz) {
        Some(p) => p / 1_000_000_000,
        None => (u128::from(now.0) * u128::from(hz) / 1_000_000_000) as u64,
    }
}

/// The first instant at which `jiffies` is `j` (the tick that makes it so).
#[inline]
pub fn tick_of(j: u64, hz: u32) -> SimTime {
    let hz = u64::from(hz.max(1));
    match j.checked_mul(1_000_000_000) {
        Some(p) => SimTime(p.div_ceil(hz)),
        None => {
            let ns = (u128::from(j) * 1_000_000_000).div_ceil(u128::from(hz));
            SimTime(u64::try_from(ns).unwrap_or(u64::MAX))
        }
    }
}

/// The first tick at or after `at` (a tick is where `jiffies` changes):
/// when the scheduler tick notices a slice that ran out at `at`.
#[inline]
pub fn tick_at_or_after(at: SimTime, hz: u32) -> SimTime {
    match at.0.checked_sub(1) {
        None => SimTime::ZERO,
        Some(before) => tick_of(jiffies_at(SimTime(before), hz) + 1, hz),
    }
}

/// A delay in jiffies, rounded up as `msecs_to_jiffies` and
/// `usecs_to_jiffies` round: a timer never waits less than asked.
#[inline]
pub fn delay_jiffies(d: Dur, hz: u32) -> u64 {
    let hz = u64::from(hz.max(1));
    match d.0.checked_mul(hz) {
        Some(p) => p.div_ceil(1_000_000_000),
        None => {
            let j = (u128::from(d.0) * u128::from(hz)).div_ceil(1_000_000_000);
            u64::try_from(j).unwrap_or(u64::MAX)
        }
    }
}

/// `calc_wheel_index`'s bucket expiry: the jiffy at which a timer that
/// expires at `expires`, armed when the base's clock read `clk`, fires.
pub fn bucket_expiry(expires: u64, clk: u64, hz: u32) -> u64 {
    let depth = lvl_depth(hz);
    // WHEEL_TIMEOUT_CUTOFF and WHEEL_TIMEOUT_MAX: longer timeouts are cut
    // to what the last level holds.
    let cutoff = lvl_start(depth);
    let delta = expires.saturating_sub(clk);
    let (expires, lvl) = match (1..depth).find(|&n| delta < lvl_start(n)) {
        Some(n) => (expires, n - 1),
        None if delta >= cutoff => {
            let max = cutoff - (1 << ((depth - 1) * LVL_CLK_SHIFT));
            (clk + max, depth - 1)
        }
        None => (expires, depth - 1),
    };
    // calc_index: round up with the level's granularity, strictly above.
    let shift = lvl * LVL_CLK_SHIFT;
    ((expires >> shift) + 1) << shift
}

/// When a timer armed at `now` for `delay` fires: `expires = jiffies +
/// delay` in whole jiffies, then the end of its wheel bucket.
pub fn fires_at(now: SimTime, delay: Dur, hz: u32) -> SimTime {
    fires_after_jiffies(now, delay_jiffies(delay, hz), hz)
}

/// [`fires_at`] for a delay given in jiffies (`schedule_timeout(j)`, a
/// timer set to `jiffies + j`).
pub fn fires_after_jiffies(now: SimTime, delay: u64, hz: u32) -> SimTime {
    let clk = jiffies_at(now, hz);
    tick_of(bucket_expiry(clk.saturating_add(delay), clk, hz), hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn levels_start_where_timer_c_says() {
        // 63, 504, 4032, ... jiffies (LVL_START(1..)).
        assert_eq!(lvl_start(1), 63);
        assert_eq!(lvl_start(2), 504);
        assert_eq!(lvl_start(3), 4032);
        assert_eq!(lvl_depth(1000), 9);
        assert_eq!(lvl_depth(100), 8);
    }

    #[test]
    fn r62_level_0_fires_one_jiffy_after_expires() {
        // delta 10 < 63: granule 1, rounded strictly up.
        assert_eq!(bucket_expiry(110, 100, 1000), 111);
        assert_eq!(bucket_expiry(162, 100, 1000), 163);
    }

    #[test]
    fn r62_r35_one_second_at_hz1000_lands_on_a_64_jiffy_boundary() {
        // delta 1000 is level 2 (504..4031): granule 64.
        assert_eq!(bucket_expiry(1000, 0, 1000), 1024);
        assert_eq!(bucket_expiry(1023, 23, 1000), 1024);
        assert_eq!(bucket_expiry(1024, 24, 1000), 1088);
        // Timers armed 0..23 ms apart fire together.
        for armed in 0..24 {
            let at = fires_at(SimTime(armed * MS + 300_000), Dur(1_000 * MS), 1000);
            assert_eq!(at, SimTime(1024 * MS), "armed at {armed} ms");
        }
        // Never early, at most one granule late.
        for armed_us in (0..200_000).step_by(997) {
            let now = SimTime(armed_us * 1000);
            let at = fires_at(now, Dur(1_000 * MS), 1000);
            assert!(at.0 > now.0 + 1_000 * MS);
            assert!(at.0 <= now.0 + 1_064 * MS);
        }
    }

    #[test]
    fn r62_r47_oom_reaper_delay_and_r48_throttle_sleeps_end_on_a_wheel_bucket() {
        // OOM_REAPER_DELAY = 2 HZ = 2000 jiffies at HZ 1000, level 2:
        // armed at 5.3 ms (jiffy 5), expires 2005, fires at 2048.
        assert_eq!(
            fires_after_jiffies(SimTime(5_300_000), 2000, 1000),
            SimTime(2048 * MS)
        );
        // A 6-jiffy throttle (level 0) armed at 5.3 ms: expires 11, fires 12.
        assert_eq!(
            fires_after_jiffies(SimTime(5_300_000), 6, 1000),
            SimTime(12 * MS)
        );
    }

    #[test]
    fn r62_level_1_granule_is_8_jiffies() {
        // delta 100 (63..503): granule 8.
        assert_eq!(bucket_expiry(100, 0, 1000), 104);
        assert_eq!(bucket_expiry(104, 4, 1000), 112);
    }

    #[test]
    fn jiffies_at_other_hz() {
        // HZ=250: a jiffy is 4 ms; 1 s is 250 jiffies, level 1 (granule 8).
        assert_eq!(delay_jiffies(Dur(1_000 * MS), 250), 250);
        assert_eq!(
            fires_at(SimTime(0), Dur(1_000 * MS), 250),
            SimTime(256 * 4 * MS)
        );
        // HZ=300: ticks at ceil(j * 10^9 / 300) ns.
        assert_eq!(tick_of(1, 300), SimTime(3_333_334));
        assert_eq!(jiffies_at(SimTime(3_333_334), 300), 1);
        assert_eq!(jiffies_at(SimTime(3_333_333), 300), 0);
        // Part of a jiffy rounds up.
        assert_eq!(delay_jiffies(Dur(1), 1000), 1);
        assert_eq!(delay_jiffies(Dur(0), 1000), 0);
    }

    #[test]
    fn conversions_agree_past_the_64_bit_products() {
        // Past 2^64 / HZ ns the 128-bit path takes over, with the same
        // results on both sides of the edge.
        for hz in [100, 250, 300, 1000] {
            let edge = u64::MAX / u64::from(hz);
            for ns in [edge - 1, edge, edge + 1, u64::MAX] {
                let wide = (u128::from(ns) * u128::from(hz) / 1_000_000_000) as u64;
                assert_eq!(jiffies_at(SimTime(ns), hz), wide, "{ns} at {hz}");
                let up = (u128::from(ns) * u128::from(hz)).div_ceil(1_000_000_000) as u64;
                assert_eq!(delay_jiffies(Dur(ns), hz), up, "{ns} at {hz}");
            }
        }
        let j = u64::MAX / 1_000_000_000;
        for j in [j - 1, j, j + 1] {
            let wide = (u128::from(j) * 1_000_000_000).div_ceil(300);
            assert_eq!(u128::from(tick_of(j, 300).0), wide);
        }
    }

    #[test]
    fn the_tick_at_or_after_an_instant() {
        assert_eq!(tick_at_or_after(SimTime(0), 1000), SimTime(0));
        assert_eq!(tick_at_or_after(SimTime(1), 1000), SimTime(MS));
        assert_eq!(tick_at_or_after(SimTime(MS), 1000), SimTime(MS));
        assert_eq!(tick_at_or_after(SimTime(MS + 1), 1000), SimTime(2 * MS));
        // HZ 300: ticks at ceil(j * 10^9 / 300) ns, no drift.
        assert_eq!(
            tick_at_or_after(SimTime(3_333_334), 300),
            SimTime(3_333_334)
        );
        assert_eq!(
            tick_at_or_after(SimTime(3_333_335), 300),
            SimTime(6_666_667)
        );
        assert_eq!(
            tick_at_or_after(SimTime(299_999_999_999), 300),
            SimTime(300_000_000_000)
        );
    }

    #[test]
    fn levels_change_at_their_starts() {
        // clk 10: delta 62 is level 0, 63 level 1; 503 level 1, 504 level 2.
        assert_eq!(bucket_expiry(72, 10, 1000), 73);
        assert_eq!(bucket_expiry(73, 10, 1000), 80);
        assert_eq!(bucket_expiry(513, 10, 1000), 520);
        assert_eq!(bucket_expiry(514, 10, 1000), 576);
        // HZ 100 has 8 levels, so level 7 (granule 8^7) is the last one.
        assert_eq!(lvl_start(8), 63 << 21);
        assert_eq!(bucket_expiry(63 << 21, 0, 100), 63 << 21);
    }

    #[test]
    fn very_long_timeouts_are_cut_to_the_wheel() {
        // WHEEL_TIMEOUT_CUTOFF = 63 << 24 at HZ 1000 (9 levels): a longer
        // timeout becomes WHEEL_TIMEOUT_MAX = 62 << 24, whose bucket at
        // level 8 ends at 63 << 24.
        assert_eq!(bucket_expiry(63 << 24, 0, 1000), 63 << 24);
        assert_eq!(bucket_expiry(u64::MAX / 2, 0, 1000), 63 << 24);
        assert_eq!(bucket_expiry((63 << 24) - 1, 0, 1000), 63 << 24);
        // From clk 5: expires 5 + (62 << 24), in the bucket ending at 63 << 24.
        assert_eq!(bucket_expiry(1 << 40, 5, 1000), 63 << 24);
    }
}
