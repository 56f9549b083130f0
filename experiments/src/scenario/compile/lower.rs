//! Pass 7, lowering: a checked program to the flat instruction list the
//! world runs ([`Instr`]), blocks to jumps by index. Statistics (a lock's
//! wait and hold per mode, a span), counters (`count` steps, a lock's
//! acquisitions per call site) and `key next` counters are numbered as the
//! steps come, over all programs.
//!
//! A `cpu` or `sleep` of a constant or an exponential gets an instruction
//! of its own (no second dispatch on the distribution), and a `loop` whose
//! body starts with one is rotated: its back edge is a copy of that delay
//! that continues at the body's second step.

use super::names::{Kind, LockStep, Resolved};
use crate::program::{
    mode_label, CounterId, DistId, Instr, KeyCounterId, Origin, Pc, StatId, StatSpec,
};
use crate::scenario::steps::LockOp;
use indexmap::IndexMap;
use output::Metric;
use sim::dist::Dist;
use typed_index_collections::{TiSlice, TiVec};

/// What the programs' steps number, over all programs.
#[derive(Default)]
pub(super) struct Tables {
    stats: IndexMap<(Metric, String), StatId>,
    counters: IndexMap<String, CounterId>,
    /// `key next` steps so far (one counter each).
    key_counters: u32,
}

impl Tables {
    fn stat(&mut self, metric: Metric, subject: String) -> StatId {
        let n = StatId::from(self.stats.len());
        *self.stats.entry((metric, subject)).or_insert(n)
    }

    fn counter(&mut self, subject: String) -> CounterId {
        let n = CounterId::from(self.counters.len());
        *self.counters.entry(subject).or_insert(n)
    }

    fn key_counter(&mut self) -> KeyCounterId {
        self.key_counters += 1;
        KeyCounterId(self.key_counters - 1)
    }

    /// The statistics and counters by id, and the number of `key next`
    /// counters.
    pub(super) fn finish(self) -> (TiVec<StatId, StatSpec>, TiVec<CounterId, String>, u32) {
        let stats = (self.stats.into_iter())
            .map(|((metric, subject), _)| StatSpec { metric, subject })
            .collect();
        (
            stats,
            self.counters.into_keys().collect(),
            self.key_counters,
        )
    }
}

/// Lowers the program of `group` (checked: its slots set), ending with
/// `Exit` at `end`; the nodes from `exit_at` on are its exit steps.
/// `dists` are the scenario's distributions. Returns the instructions,
/// where each came from, and where the exit steps begin (the `Exit` when
/// there are none).
pub(super) fn lower(
    group: &str,
    (nodes, exit_at): (&[Resolved], usize),
    end: Origin,
    dists: &TiSlice<DistId, Dist>,
    tables: &mut Tables,
) -> (TiVec<Pc, Instr>, TiVec<Pc, Origin>, Pc) {
    let mut l = Lowering {
        group,
        dists,
        tables,
        code: TiVec::new(),
        origins: TiVec::new(),
        calls: Vec::new(),
        depth: 0,
    };
    let (main, exit) = nodes.split_at(exit_at.min(nodes.len()));
    l.nodes(main);
    let exit_pc = l.code.next_key();
    l.nodes(exit);
    l.push(Instr::Exit, &end);
    (l.code, l.origins, exit_pc)
}

struct Lowering<'l> {
    group: &'l str,
    dists: &'l TiSlice<DistId, Dist>,
    tables: &'l mut Tables,
    code: TiVec<Pc, Instr>,
    origins: TiVec<Pc, Origin>,
    /// The operations the current step is in, innermost last.
    calls: Vec<&'l str>,
    /// `repeat` blocks around the current step.
    depth: u8,
}

impl<'l> Lowering<'l> {
    fn push(&mut self, i: Instr, o: &Origin) -> Pc {
        self.origins.push(o.clone());
        self.code.push_and_get_key(i)
    }

    /// Lowers the lock step `l` at `o`; returns its instruction's index.
    fn lock(&mut self, l: &LockStep, o: &Origin) -> Pc {
        let group = self.group;
        let (name, slot) = (l.name, l.slot as u8);
        let (lock, dynamic) = (l.instr_lock, l.dynamic);
        let label = mode_label(l.kind, l.mode);
        if l.op == LockOp::Downgrade {
            let hold = self
                .tables
                .stat(Metric::Hold, format!("{name}/write/{group}"));
            self.tables
                .stat(Metric::Hold, format!("{name}/read/{group}"));
            self.push(
                Instr::Downgrade {
                    lock,
                    slot,
                    hold,
                    dynamic,
                },
                o,
            )
        } else if l.op.is_acquire() {
            let site = self.calls.last().map(|op| {
                let prefix = if label == "lock" {
                    String::new()
                } else {
                    format!("{label}_")
                };
                self.tables
                    .counter(format!("{name}/{prefix}acquisitions/site/{op}"))
            });
            let wait = self
                .tables
                .stat(Metric::Wait, format!("{name}/{label}/{group}"));
            self.tables
                .stat(Metric::Hold, format!("{name}/{label}/{group}"));
            self.push(
                Instr::Acquire {
                    lock,
                    mode: l.mode,
                    wait,
                    slot,
                    dynamic,
                    site,
                },
                o,
            )
        } else {
            let hold = self
                .tables
                .stat(Metric::Hold, format!("{name}/{label}/{group}"));
            self.push(
                Instr::Release {
                    lock,
                    mode: l.mode,
                    hold,
                    slot,
                    dynamic,
                },
                o,
            )
        }
    }

    fn nodes(&mut self, nodes: &'l [Resolved<'l>]) {
        for n in nodes {
            self.node(n);
        }
    }

    fn node(&mut self, n: &'l Resolved<'l>) {
        let o = n.origin;
        let group = self.group;
        match &n.kind {
            &Kind::Delay { dist, sleep, .. } => {
                let next = self.code.next_key() + 1;
                let instr = match self.dists[dist] {
                    Dist::Const(d) => Instr::DelayConst {
                        dur: d,
                        sleep,
                        next,
                    },
                    Dist::Exp { mean } => Instr::DelayExp { mean, sleep, next },
                    _ => Instr::Delay { dist, sleep, next },
                };
                self.push(instr, o);
            }
            Kind::Lock(l) => {
                self.lock(l, o);
            }
            Kind::ReadBlock { lock, body, tail } => {
                let begin = self.lock(lock, o);
                self.nodes(body);
                let hold = (self.tables).stat(Metric::Hold, format!("{}/read/{group}", lock.name));
                self.push(
                    Instr::SeqRetry {
                        lock: lock.instr_lock,
                        hold,
                        slot: lock.slot as u8,
                        dynamic: lock.dynamic,
                        begin,
                    },
                    tail,
                );
            }
            Kind::SpanBegin { slot, .. } => {
                self.push(Instr::SpanBegin { slot: *slot as u8 }, o);
            }
            Kind::SpanEnd { name, slot } => {
                let stat = self.tables.stat(Metric::Span, format!("{name}/{group}"));
                self.push(
                    Instr::SpanEnd {
                        stat,
                        slot: *slot as u8,
                    },
                    o,
                );
            }
            Kind::Call { op, body } => {
                self.calls.push(op);
                self.nodes(body);
                self.calls.pop();
            }
            Kind::MightResched => {
                self.push(Instr::MightResched, o);
            }
            Kind::CondResched => {
                self.push(Instr::CondResched, o);
            }
            &Kind::Key { lo, span, next } => {
                let next = next.then(|| self.tables.key_counter());
                self.push(Instr::SetKey { lo, span, next }, o);
            }
            &Kind::Charge { memcg, pages, gfp } => {
                self.push(Instr::Charge { memcg, pages, gfp }, o);
            }
            &Kind::Uncharge { memcg, pages } => {
                self.push(Instr::Uncharge { memcg, pages }, o);
            }
            &Kind::Kill { group } => {
                self.push(Instr::Kill { group }, o);
            }
            &Kind::IfPressure {
                memcg,
                window,
                centi,
                ref body,
            } => {
                let at = self.push(
                    Instr::IfPressure {
                        memcg,
                        window,
                        centi,
                        end: Pc::START,
                    },
                    o,
                );
                self.nodes(body);
                let end = self.code.next_key();
                self.code[at] = Instr::IfPressure {
                    memcg,
                    window,
                    centi,
                    end,
                };
            }
            Kind::QueueWork { work, delay, rcu } => {
                self.push(
                    Instr::QueueWork {
                        wq: work.wq,
                        work: work.work,
                        key: work.key,
                        delay: *delay,
                        rcu: *rcu,
                    },
                    o,
                );
            }
            Kind::ModDelayedWork { work, delay } => {
                self.push(
                    Instr::ModDelayedWork {
                        wq: work.wq,
                        work: work.work,
                        key: work.key,
                        delay: *delay,
                    },
                    o,
                );
            }
            Kind::CancelWorkSync { work } => {
                let (wq, key) = (work.wq, work.key);
                self.push(
                    Instr::CancelWorkSync {
                        wq,
                        work: work.work,
                        key,
                    },
                    o,
                );
            }
            &Kind::FlushWorkqueue { wq } => {
                self.push(Instr::FlushWorkqueue { wq }, o);
            }
            Kind::RcuQueue { work, rcu_work } => {
                self.push(
                    Instr::RcuQueue {
                        wq: work.wq,
                        work: work.work,
                        key: work.key,
                        rcu_work: *rcu_work,
                    },
                    o,
                );
            }
            Kind::SynchronizeRcu => {
                self.push(Instr::SynchronizeRcu, o);
            }
            &Kind::Line {
                line,
                write,
                dynamic,
            } => {
                self.push(
                    Instr::Line {
                        line,
                        write,
                        dynamic,
                    },
                    o,
                );
            }
            Kind::Count { name } => {
                let counter = self.tables.counter(format!("{name}/{group}"));
                self.push(Instr::Count { counter }, o);
            }
            &Kind::Repeat { count, ref body } => {
                let depth = self.depth;
                self.depth += 1;
                let begin = self.push(
                    Instr::RepeatBegin {
                        count,
                        end: Pc::START,
                        depth,
                    },
                    o,
                );
                self.nodes(body);
                self.push(Instr::RepeatEnd { begin, depth }, o);
                let end = self.code.next_key();
                self.code[begin] = Instr::RepeatBegin { count, end, depth };
                self.depth -= 1;
            }
            Kind::Loop { body } => {
                let begin = self.code.next_key();
                self.nodes(body);
                // Loop rotation: when the body starts with a delay (the usual
                // `sleep` between iterations), the back edge is a copy of that
                // delay continuing at the second step, which saves the
                // interpreter one dispatch per pass. Same draws, same order.
                let back = match self.code[begin].clone() {
                    Instr::Delay { dist, sleep, .. } => Instr::Delay {
                        dist,
                        sleep,
                        next: begin + 1,
                    },
                    Instr::DelayConst { dur, sleep, .. } => Instr::DelayConst {
                        dur,
                        sleep,
                        next: begin + 1,
                    },
                    Instr::DelayExp { mean, sleep, .. } => Instr::DelayExp {
                        mean,
                        sleep,
                        next: begin + 1,
                    },
                    _ => Instr::Jump { to: begin },
                };
                let origin = self.origins[begin].clone();
                self.push(back, &origin);
            }
            &Kind::WithProb { p, ref body } => {
                let at = self.push(Instr::WithProb { p, end: Pc::START }, o);
                self.nodes(body);
                let end = self.code.next_key();
                self.code[at] = Instr::WithProb { p, end };
            }
            Kind::IfWorkBusy { work, body } => {
                let (wq, w, key) = (work.wq, work.work, work.key);
                let at = self.push(
                    Instr::IfWorkBusy {
                        wq,
                        work: w,
                        key,
                        end: Pc::START,
                    },
                    o,
                );
                self.nodes(body);
                let end = self.code.next_key();
                self.code[at] = Instr::IfWorkBusy {
                    wq,
                    work: w,
                    key,
                    end,
                };
            }
        }
    }
}
