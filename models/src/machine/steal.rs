//! Steal (R67): the host runs something else on a guest's vCPU, and a
//! task on that vCPU makes no progress meanwhile.
//!
//! Each vCPU has a steal process of its own: runs of mean `episode x (1 -
//! f) / f` and steal episodes of mean `episode`, both exponential, so that
//! the long-run fraction stolen is `f`. The episodes are drawn from the
//! vCPU's own stream, in order, only as far as a query needs them; they
//! are the same whatever asks and when, so runs stay deterministic and
//! variants see the same host. Only the time of `cpu` steps is stretched:
//! a vCPU that is idle or whose task sleeps loses nothing that matters.

use crate::CpuId;
use sim::rng::Stream;
use sim::{Dur, SimTime};
use std::collections::VecDeque;

/// The steal processes of a guest's vCPUs.
#[derive(Clone, Debug)]
pub struct Steal {
    /// Mean run between two episodes, and mean episode, in ns.
    run_mean: f64,
    episode_mean: f64,
    cpus: Vec<CpuSteal>,
}

#[derive(Clone, Debug)]
struct CpuSteal {
    rng: Stream,
    /// Episodes drawn and not yet over at the last query, as (start, end),
    /// in order.
    episodes: VecDeque<(SimTime, SimTime)>,
    /// The end of the last episode drawn (the next run starts there).
    drawn_to: SimTime,
}

impl CpuSteal {
    /// Episode `i` of those kept, drawn if need be.
    fn episode(&mut self, i: usize, run_mean: f64, episode_mean: f64) -> (SimTime, SimTime) {
        while self.episodes.len() <= i {
            let start = self.drawn_to + sim::dist::sample_exp(run_mean, &mut self.rng);
            let end = start + sim::dist::sample_exp(episode_mean, &mut self.rng);
            self.episodes.push_back((start, end));
            self.drawn_to = end;
        }
        self.episodes[i]
    }
}

impl Steal {
    /// Steal of long-run fraction `fraction` in episodes of mean `episode`
    /// on each vCPU, one stream each (`streams`, CPU 0 first). `None` when
    /// there is none to model (`fraction` zero, or not below 1: a vCPU
    /// that never runs).
    pub fn new(fraction: f64, episode: Dur, streams: Vec<Stream>) -> Option<Steal> {
        if !(fraction > 0.0 && fraction < 1.0) || episode == Dur::ZERO {
            return None;
        }
        let episode_mean = episode.0 as f64;
        Some(Steal {
            run_mean: episode_mean * (1.0 - fraction) / fraction,
            episode_mean,
            cpus: (streams.into_iter())
                .map(|rng| CpuSteal {
                    rng,
                    episodes: VecDeque::new(),
                    drawn_to: SimTime::ZERO,
                })
                .collect(),
        })
    }

    /// Each vCPU's stream from here on re-keyed by `key`
    /// (`sim::rng::rekey`): a copy of a run in rare-event splitting draws
    /// its own host from now on; the episodes drawn already stay.
    pub fn rekey(&mut self, key: u64) {
        for c in &mut self.cpus {
            c.rng = sim::rng::rekey(&c.rng, key);
        }
    }

    /// R67: `work` of CPU time on `cpu` from `start` ends at the instant
    /// returned: later than `start + work` by the steal episodes it
    /// overlaps. Queries on one CPU come in order of `start`.
    pub fn stretch(&mut self, cpu: CpuId, start: SimTime, work: Dur) -> SimTime {
        let (run_mean, episode_mean) = (self.run_mean, self.episode_mean);
        let c = &mut self.cpus[cpu.index()];
        while c.episodes.front().is_some_and(|&(_, end)| end <= start) {
            c.episodes.pop_front();
        }
        let (mut at, mut left) = (start, work);
        for i in 0.. {
            let (a, b) = c.episode(i, run_mean, episode_mean);
            if a >= at + left {
                break;
            }
            if a > at {
                left = left - (a - at);
            }
            at = at.max(b);
        }
        at + left
    }

    /// The time stolen on `cpu` within `[from, to)`, from the episodes a
    /// [`Steal::stretch`] since `from` drew (a burst cut short at `from`
    /// by a preemption: what its rest would have lost).
    pub fn stolen_within(&self, cpu: CpuId, from: SimTime, to: SimTime) -> Dur {
        (self.cpus[cpu.index()].episodes.iter())
            .take_while(|&&(a, _)| a < to)
            .map(|&(a, b)| b.min(to).since(a.max(from)))
            .fold(Dur::ZERO, |s, d| s + d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steal(f: f64, episode: Dur, cpus: u64) -> Steal {
        let streams = (0..cpus)
            .map(|i| sim::rng::stream(1, 0, "steal", i))
            .collect();
        Steal::new(f, episode, streams).unwrap()
    }

    #[test]
    fn r67_a_burst_is_stretched_by_exactly_the_episodes_it_overlaps() {
        let mut s = steal(0.1, Dur(1_000_000), 1);
        // Script the episodes: 10-20 and 30-35 (ns).
        let c = &mut s.cpus[0];
        c.episodes = VecDeque::from([(SimTime(10), SimTime(20)), (SimTime(30), SimTime(35))]);
        c.drawn_to = SimTime(35);
        let far = |s: &mut Steal| {
            // Keep later episodes out of the way.
            let c = &mut s.cpus[0];
            c.episodes.push_back((SimTime(1 << 40), SimTime(1 << 40)));
            c.drawn_to = SimTime(1 << 40);
        };
        far(&mut s);
        // 5 ns from 0: done before the first episode.
        assert_eq!(s.stretch(CpuId(0), SimTime(0), Dur(5)), SimTime(5));
        // 15 ns from 5: 5 before the episode, 10 stolen, 10 after: 30,
        // where the next episode starts and no work is left.
        assert_eq!(s.stretch(CpuId(0), SimTime(5), Dur(15)), SimTime(30));
        // 16 from 5: one more ns, after the second episode: 36.
        assert_eq!(s.stretch(CpuId(0), SimTime(5), Dur(16)), SimTime(36));
        // Starting inside an episode: the work begins at its end.
        assert_eq!(s.stretch(CpuId(0), SimTime(12), Dur(3)), SimTime(23));
        assert_eq!(
            s.stolen_within(CpuId(0), SimTime(12), SimTime(33)),
            Dur(8 + 3)
        );
        // Past both: the queue drops them.
        assert_eq!(s.stretch(CpuId(0), SimTime(40), Dur(2)), SimTime(42));
        assert_eq!(s.cpus[0].episodes.len(), 1);
    }

    #[test]
    fn r67_the_long_run_fraction_is_the_one_asked_for_and_cpus_differ() {
        let mut s = steal(0.1, Dur(4_000_000), 2);
        // One 1000 s burst per CPU: it loses f/(1-f) of its work.
        let work = Dur(1_000_000_000_000);
        let end = s.stretch(CpuId(0), SimTime::ZERO, work);
        let lost = (end.0 - work.0) as f64 / work.0 as f64;
        assert!((lost - 0.1 / 0.9).abs() < 0.01, "{lost}");
        let other = s.stretch(CpuId(1), SimTime::ZERO, work);
        assert_ne!(end, other, "each vCPU has its own host");
        // Zero or whole steal: nothing to model.
        assert!(Steal::new(0.0, Dur(1), vec![]).is_none());
        assert!(Steal::new(1.0, Dur(1), vec![]).is_none());
    }
}
