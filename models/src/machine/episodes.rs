//! Random episodes in which a CPU does no work for the task on it: a
//! host's steal of a guest's vCPU (R67) and the CPU's own interrupts
//! other than the tick (R125).
//!
//! Each CPU has a process of its own: runs and episodes alternate, both
//! exponential. For steal, runs of mean `episode x (1 - f) / f` make the
//! long-run fraction stolen `f`; for interrupts, runs of mean `1 / rate`
//! make them arrive at `rate` a second (Poisson). The episodes are drawn
//! from the CPU's own stream, in order, only as far as a query needs them;
//! they are the same whatever asks and when, so runs stay deterministic
//! and variants see the same machine. Only the time of `cpu` steps is
//! stretched: a CPU that is idle or whose task sleeps loses nothing that
//! matters.

use crate::CpuId;
use sim::rng::Stream;
use sim::{Dur, SimTime};
use std::collections::VecDeque;

/// The episode processes of a machine's CPUs.
#[derive(Clone, Debug)]
pub struct Episodes {
    /// Mean run between two episodes, and mean episode, in ns.
    run_mean: f64,
    episode_mean: f64,
    cpus: Vec<CpuEpisodes>,
}

#[derive(Clone, Debug)]
struct CpuEpisodes {
    rng: Stream,
    /// Episodes drawn and not yet over at the last query, as (start, end),
    /// in order.
    episodes: VecDeque<(SimTime, SimTime)>,
    /// The end of the last episode drawn (the next run starts there).
    drawn_to: SimTime,
}

impl CpuEpisodes {
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

impl Episodes {
    /// Bytes one CPU's process keeps: its stream and position, and the
    /// first allocation of its queue of episodes (four; a CPU seldom has
    /// more drawn and not over).
    pub const BYTES_PER_CPU: usize =
        std::mem::size_of::<CpuEpisodes>() + 4 * std::mem::size_of::<(SimTime, SimTime)>();

    /// Steal (R67) of long-run fraction `fraction` in episodes of mean
    /// `episode` on each vCPU, one stream each (`streams`, CPU 0 first).
    /// `None` when there is none to model (`fraction` zero, or not below 1:
    /// a vCPU that never runs).
    pub fn steal(fraction: f64, episode: Dur, streams: Vec<Stream>) -> Option<Episodes> {
        if !(fraction > 0.0 && fraction < 1.0) || episode == Dur::ZERO {
            return None;
        }
        let episode_mean = episode.0 as f64;
        Some(Episodes::with_means(
            episode_mean * (1.0 - fraction) / fraction,
            episode_mean,
            streams,
        ))
    }

    /// Interrupts (R125) arriving at `rate` a second on each CPU, each
    /// taking `mean` on average. `None` when there are none (a zero rate
    /// or length).
    pub fn interrupts(rate: f64, mean: Dur, streams: Vec<Stream>) -> Option<Episodes> {
        if !(rate > 0.0 && rate.is_finite()) || mean == Dur::ZERO {
            return None;
        }
        Some(Episodes::with_means(1e9 / rate, mean.0 as f64, streams))
    }

    fn with_means(run_mean: f64, episode_mean: f64, streams: Vec<Stream>) -> Episodes {
        Episodes {
            run_mean,
            episode_mean,
            cpus: (streams.into_iter())
                .map(|rng| CpuEpisodes {
                    rng,
                    episodes: VecDeque::new(),
                    drawn_to: SimTime::ZERO,
                })
                .collect(),
        }
    }

    /// Each vCPU's stream from here on re-keyed by `key`
    /// (`sim::rng::rekey`): a copy of a run in rare-event splitting draws
    /// its own machine from now on; the episodes drawn already stay.
    pub fn rekey(&mut self, key: u64) {
        for c in &mut self.cpus {
            c.rng = sim::rng::rekey(&c.rng, key);
        }
    }

    /// R67, R125: `work` of CPU time on `cpu` from `start` ends at the
    /// instant returned: later than `start + work` by the episodes it
    /// overlaps. Queries on one CPU come in order of `start`.
    pub fn stretch(&mut self, cpu: CpuId, start: SimTime, work: Dur) -> SimTime {
        let (run_mean, episode_mean) = (self.run_mean, self.episode_mean);
        let c = &mut self.cpus[cpu.index()];
        // Most steps end before the next episode: no loop.
        if let Some(&(a, b)) = c.episodes.front() {
            if b > start && a >= start + work {
                return start + work;
            }
        }
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

    /// The time lost on `cpu` within `[from, to)`, from the episodes a
    /// [`Episodes::stretch`] since `from` drew (a burst cut short at `from`
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

    fn steal(f: f64, episode: Dur, cpus: u64) -> Episodes {
        let streams = (0..cpus)
            .map(|i| sim::rng::stream(1, 0, "steal", i))
            .collect();
        Episodes::steal(f, episode, streams).unwrap()
    }

    #[test]
    fn r67_a_burst_is_stretched_by_exactly_the_episodes_it_overlaps() {
        let mut s = steal(0.1, Dur(1_000_000), 1);
        // Script the episodes: 10-20 and 30-35 (ns).
        let c = &mut s.cpus[0];
        c.episodes = VecDeque::from([(SimTime(10), SimTime(20)), (SimTime(30), SimTime(35))]);
        c.drawn_to = SimTime(35);
        let far = |s: &mut Episodes| {
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
        assert!(Episodes::steal(0.0, Dur(1), vec![]).is_none());
        assert!(Episodes::steal(1.0, Dur(1), vec![]).is_none());
    }
}
