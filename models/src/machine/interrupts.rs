//! Interrupts (R125): a CPU running a task is taken from it for a few
//! microseconds at a time, by the scheduler tick and by other interrupts,
//! and the task's `cpu` step ends that much later. A lock holder that is
//! interrupted holds the lock longer; two tasks whose loops cost the same
//! do not stay in step.
//!
//! The tick comes at every multiple of the tick period on every CPU at
//! once: `tick_setup_sched_timer()` (kernel/time/tick-sched.c) starts each
//! CPU's tick timer at the same jiffy boundary and offsets it only when
//! booted with `skew_tick=1`. Its handler takes the profile's `tick` each
//! time. The other interrupts (device interrupts, IPIs, the softirqs run
//! on their exit; in a guest the host's own interrupts and exits) arrive
//! at random, a Poisson process per CPU of exponential lengths
//! ([`Episodes::interrupts`]).

use super::episodes::Episodes;
use super::Interrupts;
use crate::timer;
use crate::CpuId;
use sim::rng::Stream;
use sim::{Dur, SimTime};

/// The tick's cost: `cost` from each tick on, the ticks where the rest
/// of the model has them ([`crate::timer::tick_of`], which keeps HZ 300's
/// third of a nanosecond a period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickCost {
    hz: u32,
    cost: u64,
    /// The tick the last [`TickCost::stretch`] began after, its start and
    /// the next tick's: queries come at the simulation's clock, which only
    /// moves on, so a step inside one period needs no division.
    j: u64,
    at: u64,
    next: u64,
}

impl TickCost {
    /// The tick at `hz` taking `cost` each time. `None` when it costs
    /// nothing; a cost of a whole period or more is cut to leave 1 ns of
    /// each period to the task (the compiler refuses such a profile).
    pub fn new(hz: u32, cost: Dur) -> Option<TickCost> {
        let shortest = timer::shortest_tick_period(hz).0;
        (cost > Dur::ZERO).then(|| TickCost {
            hz,
            cost: cost.0.min(shortest - 1),
            j: 0,
            at: 0,
            next: timer::tick_of(1, hz).0,
        })
    }

    /// Tick time in `[0, t)`.
    fn lost_before(&self, t: SimTime) -> u64 {
        let j = timer::jiffies_at(t, self.hz);
        j * self.cost + (t.0 - timer::tick_of(j, self.hz).0).min(self.cost)
    }

    /// `work` of CPU time from `start` ends at the instant returned,
    /// later than `start + work` by the ticks it overlaps (a step that
    /// starts inside a tick's handler begins when the handler ends).
    pub fn stretch(&mut self, start: SimTime, work: Dur) -> SimTime {
        if work == Dur::ZERO {
            return start;
        }
        if start.0 < self.at || start.0 >= self.next {
            self.j = timer::jiffies_at(start, self.hz);
            self.at = timer::tick_of(self.j, self.hz).0;
            self.next = timer::tick_of(self.j + 1, self.hz).0;
        }
        let (mut j, mut next) = (self.j, self.next);
        let (mut t, mut left) = (start.0.max(self.at + self.cost), work.0);
        // Period by period: a step longer than one is rare.
        while left > next - t {
            left -= next - t;
            t = next + self.cost;
            j += 1;
            next = timer::tick_of(j + 1, self.hz).0;
        }
        SimTime(t + left)
    }

    /// Tick time within `[from, to)`.
    pub fn within(&self, from: SimTime, to: SimTime) -> Dur {
        Dur(self.lost_before(to).saturating_sub(self.lost_before(from)))
    }
}

/// A machine's interrupts: the tick and the others, on each CPU.
#[derive(Clone, Debug)]
pub struct Interruptions {
    tick: Option<TickCost>,
    others: Option<Episodes>,
}

impl Interruptions {
    /// The interrupts `i` of a machine at `hz`, the random ones drawn
    /// from `streams` (one per CPU, CPU 0 first). `None` when they cost
    /// nothing.
    pub fn new(hz: u32, i: &Interrupts<Dur>, streams: Vec<Stream>) -> Option<Interruptions> {
        let tick = TickCost::new(hz, i.tick);
        let others = Episodes::interrupts(i.irq_rate, i.irq, streams);
        (tick.is_some() || others.is_some()).then_some(Interruptions { tick, others })
    }

    /// `work` of CPU time on `cpu` from `start` ends at the instant
    /// returned: the ticks it overlaps added, then the other interrupts
    /// over the longer span. Queries on one CPU come in order of `start`.
    pub fn stretch(&mut self, cpu: CpuId, start: SimTime, work: Dur) -> SimTime {
        let end = match self.tick.as_mut() {
            Some(t) => t.stretch(start, work),
            None => start + work,
        };
        match self.others.as_mut() {
            Some(o) => o.stretch(cpu, start, end.since(start)),
            None => end,
        }
    }

    /// The interrupt time on `cpu` within `[from, to)` (the other
    /// interrupts as far as a [`Interruptions::stretch`] since `from` drew
    /// them).
    pub fn within(&self, cpu: CpuId, from: SimTime, to: SimTime) -> Dur {
        let tick = self.tick.map_or(Dur::ZERO, |t| t.within(from, to));
        let others = (self.others.as_ref()).map_or(Dur::ZERO, |o| o.stolen_within(cpu, from, to));
        tick + others
    }

    /// The random interrupts' streams re-keyed by `key` from here on
    /// ([`Episodes::rekey`]); the tick has no randomness.
    pub fn rekey(&mut self, key: u64) {
        if let Some(o) = self.others.as_mut() {
            o.rekey(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HZ 250 (a 4 ms period), 8 us ticks.
    fn tick() -> TickCost {
        TickCost::new(250, Dur(8_000)).unwrap()
    }

    #[test]
    fn r125_a_step_is_stretched_by_exactly_the_ticks_it_overlaps() {
        let mut t = tick();
        let ms = |n: u64| SimTime(n * 1_000_000);
        // 1 ms from 1 ms: no tick inside.
        assert_eq!(t.stretch(ms(1), Dur(1_000_000)), ms(2));
        // 3 ms from 1 ms: ends at 4 ms, as the tick starts: no cost.
        assert_eq!(t.stretch(ms(1), Dur(3_000_000)), ms(4));
        // One more ns: the tick at 4 ms comes first.
        assert_eq!(t.stretch(ms(1), Dur(3_000_001)), SimTime(4_008_001));
        // From inside the tick's handler: the step begins when it ends.
        assert_eq!(t.stretch(SimTime(4_003_000), Dur(10)), SimTime(4_008_010));
        // From time 0 (a tick): 10 ms of work pays three ticks, 0, 4, 8.
        assert_eq!(
            t.stretch(SimTime::ZERO, Dur(10_000_000)),
            SimTime(10_024_000)
        );
        assert_eq!(t.within(SimTime::ZERO, SimTime(10_024_000)), Dur(24_000));
        assert_eq!(
            t.within(SimTime(4_003_000), SimTime(8_001_000)),
            Dur(5_000 + 1_000)
        );
        // Zero work takes no time, even at a tick.
        assert_eq!(t.stretch(ms(4), Dur::ZERO), ms(4));
        assert!(TickCost::new(250, Dur::ZERO).is_none());
    }

    /// Tick by tick, the obvious way, at the model's tick instants.
    fn walked(hz: u32, c: u64, start: u64, work: u64) -> u64 {
        let (mut at, mut left) = (start, work);
        loop {
            let j = timer::jiffies_at(SimTime(at), hz);
            at = at.max(timer::tick_of(j, hz).0 + c);
            let room = timer::tick_of(j + 1, hz).0 - at;
            if left <= room {
                return at + left;
            }
            left -= room;
            at = timer::tick_of(j + 1, hz).0;
        }
    }

    #[test]
    fn r125_the_shortcut_inside_a_period_agrees_with_walking_the_ticks() {
        let mut t = tick();
        let (p, c) = (4_000_000, 8_000);
        let mut t300 = TickCost::new(300, Dur(c)).unwrap();
        // A fixed pseudo-random walk: starts mostly moving on, now and
        // then going back; steps from 0 to three periods.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut now = 0u64;
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now = if i % 97 == 0 {
                now / 2
            } else {
                now + x % 300_000
            };
            let work = if i % 5 == 0 {
                x % (3 * p)
            } else {
                (x >> 20) % 20_000
            };
            for (hz, t) in [(250, &mut t), (300, &mut t300)] {
                let got = t.stretch(SimTime(now), Dur(work));
                let want = if work == 0 {
                    now
                } else {
                    walked(hz, c, now, work)
                };
                assert_eq!(got, SimTime(want), "HZ {hz}: from {now}, {work} ns");
            }
        }
        // At HZ 300 the handler starts at the model's tick, 1000 s on,
        // where a whole-nanosecond period would be 333 ns early.
        let tick = timer::tick_of(300_000, 300);
        assert_eq!(t300.within(tick, tick + Dur(c)), Dur(c));
    }

    #[test]
    fn r125_a_long_step_loses_the_ticks_share_of_its_time() {
        let mut t = tick();
        let work = Dur(1_000_000_000);
        let end = t.stretch(SimTime(123_456), work);
        let lost = (end.0 - 123_456 - work.0) as f64 / work.0 as f64;
        // 8 us of every 4 ms is 0.2% of the CPU: a task loses 0.2/99.8.
        assert!((lost - 0.002 / 0.998).abs() < 1e-5, "{lost}");
    }

    #[test]
    fn r125_other_interrupts_arrive_at_their_rate_and_take_their_mean() {
        let streams = (0..2).map(|i| sim::rng::stream(1, 0, "irq", i)).collect();
        let i = Interrupts {
            tick: Dur::ZERO,
            irq_rate: 500.0,
            irq: Dur(10_000),
        };
        let mut x = Interruptions::new(250, &i, streams).unwrap();
        // 100 s of work: 500 a second of 10 us is 0.5% of wall time.
        let work = Dur(100_000_000_000);
        let end = x.stretch(CpuId(0), SimTime::ZERO, work);
        let lost = (end.0 - work.0) as f64 / end.0 as f64;
        assert!((lost - 0.005).abs() < 0.0005, "{lost}");
        assert_ne!(
            end,
            x.stretch(CpuId(1), SimTime::ZERO, work),
            "each CPU draws its own"
        );
        // Tick and others together: the tick first, then the others over
        // the longer span.
        let both = Interrupts {
            tick: Dur(8_000),
            ..i
        };
        let streams = (0..1).map(|i| sim::rng::stream(1, 0, "irq", i)).collect();
        let mut y = Interruptions::new(250, &both, streams).unwrap();
        let end = y.stretch(CpuId(0), SimTime::ZERO, work);
        let lost = (end.0 - work.0) as f64 / end.0 as f64;
        assert!((lost - 0.007).abs() < 0.0006, "{lost}");
        let none = Interrupts {
            tick: Dur::ZERO,
            irq_rate: 0.0,
            irq: Dur(10_000),
        };
        assert!(Interruptions::new(250, &none, vec![]).is_none());
    }
}
