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
pub(super) struct Stats {
    series: TiVec<StatId, Stat>,
    /// Values of the scenario's `count` counters.
    pub(super) counts: TiVec<CounterId, u64>,
    /// Uses of each `key next` step so far (a cgroup id allocator each).
    key_next: TiVec<KeyCounterId, u32>,
}

struct Stat {
    hist: HdrCounts,
    windows: Windows,
}

impl Stats {
    pub(super) fn new(c: &Compiled) -> Stats {
        Stats {
            series: (c.stats.iter())
                .map(|_| Stat {
                    hist: HdrCounts::new(),
                    windows: Windows::new(c.window),
                })
                .collect(),
            counts: ti_vec![0; c.counters.len()],
            key_next: ti_vec![0; c.key_counters as usize],
        }
    }

    /// Records `d` in statistic `stat` at `now`.
    #[inline]
    pub(super) fn record(&mut self, stat: StatId, now: SimTime, d: Dur) {
        let s = &mut self.series[stat];
        s.hist.record(d);
        s.windows.record(now, d);
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
    /// The results of this replication.
    pub fn result(self) -> VariantResult {
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
                Series {
                    metric: spec.metric,
                    subject: spec.subject.clone(),
                    hist: st.hist.into_hist(),
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
        self.memcg.counters(c, &mut counters);
        self.cpus.counters(c, &mut counters);
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
