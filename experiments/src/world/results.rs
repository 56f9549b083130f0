//! A finished run's statistics, as the [`VariantResult`] the output
//! files are written from.

use super::*;

impl<'c> World<'c> {
    /// The results of this replication.
    pub fn result(self) -> VariantResult {
        let c = self.c;
        let horizon = self.horizon;
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
        let series = c
            .stats
            .iter()
            .zip(self.stats)
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
        // Lock counters per lock class, as /proc/lock_stat shows them: the
        // instances of a family (`pidlist_mutex[3]`) add up under its name.
        let mut by_class: Vec<(String, u64)> = Vec::new();
        let mut add = |class: &str, name: &str, value: u64| {
            let subject = format!("{class}/{name}");
            match by_class.iter_mut().rev().find(|(s, _)| *s == subject) {
                Some((_, v)) => *v += value,
                None => by_class.push((subject, value)),
            }
        };
        for (i, l) in c.locks.iter_enumerated() {
            let class = l.name.split('[').next().unwrap_or(&l.name);
            let modes: &[(Mode, &str)] = match l.kind {
                LockKind::Rwsem => &[(Mode::Read, "read_"), (Mode::Write, "write_")],
                LockKind::Mutex => &[(Mode::Write, "")],
            };
            for &(m, prefix) in modes {
                let acquisitions = self.acquisitions[i][mode_index(m)];
                let contentions = self.contentions[i][mode_index(m)];
                add(class, &format!("{prefix}acquisitions"), acquisitions);
                add(class, &format!("{prefix}contentions"), contentions);
            }
            if l.line.is_some() {
                add(class, "line_transfers", self.line_transfers[i]);
                add(class, "line_wait_ns", self.line_wait[i].ns());
            }
            for (name, v) in self.locks[i].counters() {
                add(class, name, v);
            }
        }
        let mut counters: Vec<Counter> = by_class
            .into_iter()
            .map(|(subject, value)| Counter { subject, value })
            .collect();
        for (name, &v) in c.counters.iter().zip(&self.user_counts) {
            counters.push(Counter {
                subject: name.clone(),
                value: v,
            });
        }
        for (q, wq) in self.wqs.iter_enumerated() {
            for (k, v) in wq.counters() {
                counters.push(Counter {
                    subject: format!("wq/{}/{k}", c.workqueues[q].name),
                    value: v,
                });
            }
        }
        if let Some(p) = &self.pools {
            for (k, v) in [
                ("kicks", p.kicks),
                ("keep_working", p.keep_working),
                ("idle_wakeups", p.idle_wakeups),
            ] {
                counters.push(Counter {
                    subject: format!("worker_pools/{k}"),
                    value: v,
                });
            }
        }
        for (m, g) in self.memcgs.iter_enumerated() {
            let name = &c.memcgs[m].name;
            for (k, v) in g.counters() {
                counters.push(Counter {
                    subject: format!("memcg/{name}/{k}"),
                    value: v,
                });
            }
            let s = self.mem_stats[m];
            for (k, v) in [
                ("reclaim_ns", s.reclaim.ns()),
                ("throttle_ns", s.throttle.ns()),
                ("oom_exits", s.oom_exits),
                ("oom_reaps", s.oom_reaps),
            ] {
                counters.push(Counter {
                    subject: format!("memcg/{name}/{k}"),
                    value: v,
                });
            }
            counters.push(Counter {
                subject: format!("memcg/{name}/usage_pages_at_end"),
                value: g.usage(),
            });
        }
        if !self.cpu.is_unlimited() {
            for (name, v) in self.cpu.counters() {
                counters.push(Counter {
                    subject: format!("cpu/{name}"),
                    value: v,
                });
            }
            if self.c.preempt_full || self.c.wake_placement.preempts() {
                counters.push(Counter {
                    subject: "cpu/preemptions".into(),
                    value: self.preemptions,
                });
            }
            if self.slice.is_some() || self.c.wake_placement.preempts() {
                counters.push(Counter {
                    subject: "cpu/resched_yields".into(),
                    value: self.slice_yields,
                });
            }
            if self.c.switch_cost > Dur::ZERO {
                counters.push(Counter {
                    subject: "cpu/context_switches".into(),
                    value: self.switches,
                });
            }
            counters.push(Counter {
                subject: "cpu/spin_resched_stops".into(),
                value: self.spin_resched_stops,
            });
        }
        let mut r = VariantResult {
            variant: c.variant.clone(),
            series,
            counters,
            horizon,
            events: self.events,
            replications: 1,
            open_waits,
        };
        r.normalize();
        r
    }
}
