//! A run's statistics: what it records as it goes ([`Stats`]), and, when
//! it is finished, the [`VariantResult`] the output files are written
//! from, with every subsystem's counters.

use super::*;

/// What the programs record and count: per wait, hold and span
/// statistic a histogram and its windows; the scenario's `count`
/// counters; and the `key next` allocators (cgroup ids, as the kernel's
/// `ida` hands them out), the other counters the compiler numbers for
/// the programs. Unlike the rest these steer the run: they choose the
/// keys that name lock and work instances.
#[derive(Clone)]
pub(super) struct Stats {
    series: TiVec<StatId, Stat>,
    /// Values of the scenario's `count` counters.
    pub(super) counts: TiVec<CounterId, u64>,
    /// Uses of each `key next` step so far (a cgroup id allocator each).
    key_next: TiVec<KeyCounterId, u32>,
}

#[derive(Clone)]
struct Stat {
    hist: HdrCounts,
    windows: Windows,
    /// Each window's log2 histogram, when asked for
    /// ([`World::keep_window_log2`]).
    log2: Option<WindowLog2>,
}

impl Stat {
    /// [`Stats::record`] for a sample in another window than the last:
    /// closes the last one's log2 histogram, if kept.
    #[cold]
    #[inline(never)]
    fn record_in_another_window(&mut self, now: SimTime, d: Dur) {
        if let Some(l) = &mut self.log2 {
            l.close(self.windows.current(), &self.hist);
        }
        self.windows.record(now, d);
    }
}

impl Stats {
    pub(super) fn new(c: &Compiled) -> Stats {
        Stats {
            series: (c.stats.iter())
                .map(|_| Stat {
                    hist: HdrCounts::new(),
                    windows: Windows::new(c.window),
                    log2: None,
                })
                .collect(),
            counts: ti_vec![0; c.counters.len()],
            key_next: ti_vec![0; c.key_counters as usize],
        }
    }

    /// Records `d` in statistic `stat` at `now`. Always inlined: every
    /// acquisition records its wait and every release its hold, and as a
    /// call it cost about ten instructions of its fifty.
    #[inline(always)]
    pub(super) fn record(&mut self, stat: StatId, now: SimTime, d: Dur) {
        let s = &mut self.series[stat];
        if !s.windows.record_in_current(now, d) {
            s.record_in_another_window(now, d);
        }
        s.hist.record(d);
    }

    /// The largest sample of statistic `stat` so far.
    pub(super) fn max_so_far(&self, stat: StatId) -> Dur {
        self.series[stat].hist.max_so_far()
    }

    /// The next key of the `key next` allocator `n`, among `span` keys:
    /// 0, 1, ... wrapping around.
    #[inline]
    pub(super) fn next_key(&mut self, n: KeyCounterId, span: u32) -> u32 {
        let c = &mut self.key_next[n];
        *c = c.wrapping_add(1);
        (*c - 1) % span
    }
}

impl<'c> World<'c> {
    /// Keeps each statistic's log2 histogram per window, of `value /
    /// unit` (`convoy validate` compares case 2's with the measured
    /// ones). Costs a pass over a histogram's buckets each time its
    /// samples move to the next window, nothing per sample.
    pub fn keep_window_log2(&mut self, unit: Dur) {
        for s in self.stats.series.iter_mut() {
            s.log2 = Some(WindowLog2::new(unit));
        }
    }

    /// Counts, exactly, each statistic's samples longer than each of
    /// `thresholds` (the headline's counts above 1 ms, 10 ms, ...).
    pub fn count_above(&mut self, thresholds: &[Dur]) {
        for s in self.stats.series.iter_mut() {
            s.hist.count_above(thresholds);
        }
    }

    /// The results of this replication.
    pub fn result(mut self) -> VariantResult {
        let c = self.c;
        let horizon = self.clock.horizon;
        // Lock waits the horizon cut off (a task asked for a lock and has
        // not run holding it yet).
        let mut open_waits: Vec<(String, Dur)> = Vec::new();
        for (_, wait, so_far) in self.open_lock_waits() {
            let subject = &c.stats[wait].subject;
            match open_waits.iter_mut().find(|(s, _)| s == subject) {
                Some((_, worst)) => *worst = (*worst).max(so_far),
                None => open_waits.push((subject.clone(), so_far)),
            }
        }
        open_waits.sort();
        let series = (c.stats.iter())
            .zip(self.stats.series)
            .map(|(spec, mut st)| {
                st.windows.extend_to(horizon);
                if let Some(mut l) = st.log2 {
                    l.close(st.windows.current(), &st.hist);
                    l.finish(&mut st.windows);
                }
                Series {
                    metric: spec.metric,
                    subject: spec.subject.clone(),
                    hist: std::sync::Arc::new(st.hist.into_hist()),
                    windows: st.windows,
                }
            })
            .collect();
        let mut counters: Vec<Counter> = (self.locks.counters(c, &self.lines).into_iter())
            .map(|(subject, value)| Counter { subject, value })
            .collect();
        for (name, &v) in c.counters.iter().zip(&self.stats.counts) {
            counters.push(Counter {
                subject: name.clone(),
                value: v,
            });
        }
        self.lines.counters(c, &mut counters);
        self.wq.counters(c, &mut counters);
        self.memcg.counters(c, horizon, &mut counters);
        self.cpus.counters(c, &mut counters);
        if let Some(r) = &self.rcu {
            r.counters(&mut counters);
        }
        self.hung.finish(horizon);
        self.hung.counters(&mut counters);
        let mut r = VariantResult {
            variant: c.variant.clone(),
            series,
            counters,
            horizon,
            events: self.clock.events,
            replications: 1,
            open_waits,
        };
        r.normalize();
        r
    }
}
