//! What rare-event splitting (`sweep::split`) asks of a world stopped part
//! way ([`World::run_until`]): its random streams re-keyed, so that
//! copies of one snapshot go each their own way, and its level on the
//! observed statistic, the longest wait (or hold, or span) so far.
//! Nothing here runs in a normal run: the level reads what the run keeps
//! anyway (each statistic's maximum, each task's lock request instant).

use super::tasks::Drawn;
use super::*;

impl<'c> World<'c> {
    /// Re-keys every random stream of the world by `key`
    /// (`sim::rng::rekey`): each task's program stream, its scheduling
    /// and memcg streams, the CPUs' interrupts and a guest's steal. Two
    /// copies of a snapshot re-keyed alike go on identically; re-keyed
    /// differently, they draw different numbers from here on. Events
    /// already set (a sleep's end, drawn before the snapshot) stay.
    pub fn rekey(&mut self, key: u64) {
        for s in self.tasks.rngs.iter_mut() {
            *s = sim::rng::rekey(s, key);
        }
        for task in self.tasks.table.iter_mut() {
            for s in [&mut task.sched, &mut task.mem_rng].into_iter().flatten() {
                **s = sim::rng::rekey(s, key);
            }
        }
        if let Some(w) = self.cpus.wake.as_mut() {
            if let Some(steal) = w.steal.as_mut() {
                steal.rekey(key);
            }
            if let Some(i) = w.interrupts.as_mut() {
                i.rekey(key);
            }
        }
    }

    /// [`World::rekey`], then the end of every sleep going on at `at`
    /// whose length was drawn (a `sleep` step's distribution, a reclaim
    /// attempt) drawn again from its distribution given that it has
    /// lasted until `at` (`sim::Dist::sample_beyond`), with the new
    /// streams. The drawn end is no part of the state a run has reached
    /// (nothing has seen it yet), so this is a draw from the same law;
    /// without it, copies of a snapshot taken in the middle of a long
    /// reclaim attempt all end it at the same instant and stand or fall
    /// together. A constant, a throttle, and a reclaim attempt that
    /// returns its pages at its midpoint keep their end.
    pub fn rekey_at(&mut self, key: u64, at: SimTime) {
        self.rekey(key);
        let sleeping: Vec<(TaskId, Drawn, SimTime)> = (self.tasks.iter())
            .filter(|(_, k)| k.state == State::Sleeping)
            .filter_map(|(t, k)| k.drawn_sleep.map(|(d, since)| (t, d, since)))
            .collect();
        for (t, drawn, since) in sleeping {
            let elapsed = at.max(since).since(since);
            let d = match drawn {
                Drawn::Dist(id) => self.c.dists[id].sample_beyond(elapsed, &mut self.tasks.rngs[t]),
                Drawn::Exp(mean) => {
                    sim::dist::Dist::Exp { mean }.sample_beyond(elapsed, &mut self.tasks.rngs[t])
                }
                Drawn::Reclaim(m) => {
                    let rng = self.tasks[t].mem_rng.as_mut().expect("memcg stream");
                    self.c.memcgs[m].reclaim.sample_beyond(elapsed, rng)
                }
            };
            if let Some(d) = d {
                self.clock.queue.set(t.index(), since + d, Ev::Wake);
            }
        }
    }

    /// The statistics of `metric` and `subject` (none if the scenario
    /// has no such subject).
    pub fn stats_of(&self, metric: output::Metric, subject: &str) -> Vec<StatId> {
        (self.c.stats.iter_enumerated())
            .filter(|(_, s)| s.metric == metric && s.subject == subject)
            .map(|(id, _)| id)
            .collect()
    }

    /// The level of the run at instant `at` (no event between the last
    /// one run and `at`): the largest sample of `stats` so far and, for
    /// lock waits (`open`), the waits of `stats` still going on at `at`,
    /// as long as they have lasted. That is a fleet report's worst wait
    /// of a run cut at `at` (a wait still going on counts).
    pub fn level(&self, stats: &[StatId], open: bool, at: SimTime) -> Dur {
        let recorded = (stats.iter())
            .map(|&s| self.stats.max_so_far(s))
            .max()
            .unwrap_or(Dur::ZERO);
        if !open {
            return recorded;
        }
        self.open_waits_of(stats)
            .map(|since| at.since(since))
            .fold(recorded, Dur::max)
    }

    /// The earliest instant at which a lock wait of `stats` going on now
    /// reaches `level`, if it goes on that long; `None` when no such
    /// wait is going on.
    pub fn next_crossing(&self, stats: &[StatId], level: Dur) -> Option<SimTime> {
        self.open_waits_of(stats).map(|since| since + level).min()
    }

    /// When each lock wait of `stats` going on now began.
    fn open_waits_of<'a>(&'a self, stats: &'a [StatId]) -> impl Iterator<Item = SimTime> + 'a {
        (self.tasks.table.iter()).filter_map(|task| {
            let (_, _, wait) = task.resume.lock_wait()?;
            stats.contains(&wait).then_some(task.since)
        })
    }

    /// The instant of the last event run (zero before the first).
    pub fn now(&self) -> SimTime {
        self.clock.now
    }

    /// The run's end: events at or after it are not run.
    pub fn horizon(&self) -> SimTime {
        self.clock.horizon
    }
}
