//! Pass 4, name resolution: every name a step uses, to the id it stands
//! for. Checks that each lock, distribution, parameter, memcg, workqueue
//! and work exists; that a lock step fits the lock (`down_read` an rwsem,
//! `mutex_lock` a mutex, `downgrade_write` a policy that has it), that a
//! family is named with a key (`fam[0]`, `fam[self]`) and a single lock
//! without one, and that `[self]` stays within a family's or a work type's
//! instances.
//!
//! A step's inline distribution (`cpu exp(20us)`) is added to the
//! scenario's, as each `cpu` step's scaled copy is (for
//! `scenario.cpu_speed`, made once per distribution), in step order.

use super::definitions::{Dists, Lines, Locks};
use super::expand::Expanded;
use super::{key_range, param, undefined};
use crate::program::{
    DistId, GfpWord, Instance, LineId, LockId, MemcgId, Origin, WorkKey, WorkTypeId, WqId,
};
use crate::scenario::doc::Doc;
use crate::scenario::error::ScenarioError;
use crate::scenario::steps::{Count, DistRef, KeyExpr, LockOp, Node, Step, StepKind, WorkRef};
use indexmap::IndexMap;
use models::{LockKind, Mode};
use sim::dist::Dist;

/// The lock the static checks track for a lock step: a lock, or a
/// family's `[self]` instance, which they count as one lock of its own
/// (whichever instance it is at run time), named by the family's first.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Tracked {
    Lock(LockId),
    SelfOf(LockId),
    /// `NAME[hash self]`: one lock per task, the same at each step, but
    /// not the one `NAME[self]` names.
    HashOf(LockId),
    /// `NAME[repeat]`: one lock per pass of a repeat; a block releases
    /// what it takes, so a pass takes and releases its own.
    PassOf(LockId),
}

impl Tracked {
    /// The lock whose name stands for it in messages.
    pub fn named(self) -> LockId {
        match self {
            Tracked::Lock(l) | Tracked::SelfOf(l) | Tracked::HashOf(l) | Tracked::PassOf(l) => l,
        }
    }
}

/// A step with its names resolved, and where it is written.
pub(super) struct Resolved<'a> {
    pub origin: &'a Origin,
    pub kind: Kind<'a>,
}

/// What a resolved step does. Blocks and `call`s hold their bodies.
pub(super) enum Kind<'a> {
    /// `cpu` (`sleep` false) or `sleep`: `dist` is the one the
    /// instruction draws from (a `cpu` step's scaled copy); `zero`: the
    /// step never advances time.
    Delay {
        dist: DistId,
        sleep: bool,
        zero: bool,
    },
    Lock(LockStep<'a>),
    /// `slot`: set by the checks.
    SpanBegin {
        name: &'a str,
        slot: usize,
    },
    SpanEnd {
        name: &'a str,
        slot: usize,
    },
    Call {
        op: &'a str,
        body: Vec<Resolved<'a>>,
    },
    MightResched,
    CondResched,
    /// `key`: values `lo..lo + span` (span 0: fixed), `next` for `key next`.
    Key {
        lo: u32,
        span: u32,
        next: bool,
    },
    Charge {
        memcg: MemcgId,
        pages: u64,
        gfp: GfpWord,
    },
    Uncharge {
        memcg: MemcgId,
        pages: u64,
    },
    QueueWork {
        work: WorkStep<'a>,
        delay: Option<DistId>,
        rcu: bool,
    },
    /// `queue_rcu_work` (`rcu_work`) or `call_rcu` after a modelled
    /// grace period.
    RcuQueue {
        work: WorkStep<'a>,
        rcu_work: bool,
    },
    SynchronizeRcu,
    ModDelayedWork {
        work: WorkStep<'a>,
        delay: DistId,
    },
    CancelWorkSync {
        work: WorkStep<'a>,
    },
    FlushWorkqueue {
        wq: WqId,
    },
    Count {
        name: &'a str,
    },
    /// `atomic` (`write`) or `read` of a data line: with `dynamic`, `line`
    /// is the family's first and the task's key picks the instance.
    Line {
        line: LineId,
        write: bool,
        dynamic: bool,
    },
    Repeat {
        count: u64,
        body: Vec<Resolved<'a>>,
    },
    Loop {
        body: Vec<Resolved<'a>>,
    },
    WithProb {
        p: f64,
        body: Vec<Resolved<'a>>,
    },
    IfWorkBusy {
        work: WorkStep<'a>,
        body: Vec<Resolved<'a>>,
    },
    IfPressure {
        memcg: MemcgId,
        window: models::psi::Window,
        centi: u64,
        body: Vec<Resolved<'a>>,
    },
    Kill {
        group: crate::program::GroupId,
    },
    /// `read_seqcount_begin S` ... `read_seqcount_retry S` (or
    /// `read_seqbegin` ... `read_seqretry`): `lock` is the head's read
    /// acquisition, `tail` where the retry step is written (R87).
    ReadBlock {
        lock: LockStep<'a>,
        body: Vec<Resolved<'a>>,
        tail: &'a Origin,
    },
}

/// A lock step, resolved.
pub(super) struct LockStep<'a> {
    pub op: LockOp,
    /// The lock's name as written, without its key (`fam` of `fam[self]`).
    pub name: &'a str,
    /// What the checks track: the lock, or for `[self]` the family's
    /// instance as one lock of its own.
    pub lock: Tracked,
    /// The id the instruction carries: with `dynamic`, the family's first
    /// lock, the task's key picking the instance at run time.
    pub instr_lock: LockId,
    pub dynamic: crate::program::Instance,
    pub kind: LockKind,
    /// The mode it takes or releases (a downgrade: write).
    pub mode: Mode,
    /// The hold's slot: set by the checks.
    pub slot: usize,
}

/// A work item a step names.
pub(super) struct WorkStep<'a> {
    pub wq: WqId,
    pub work: WorkTypeId,
    pub key: WorkKey,
    /// The work type's name, for messages.
    pub name: &'a str,
}

/// What names resolve against, for one program.
pub(super) struct Scope<'a> {
    pub doc: &'a Doc,
    pub locks: &'a Locks,
    pub lines: &'a Lines,
    /// How many values `self` takes in this program.
    pub self_count: u32,
    /// The program's process (`NAME[process]`), none for a work type.
    pub process: Option<u32>,
    /// What a `cpu` step's time is multiplied by (1 / `scenario.cpu_speed`).
    pub cpu_scale: f64,
    /// The machine's possible CPUs (`nr_cpu_ids`): what a `cpu D per_cpu`
    /// step multiplies D by.
    pub possible_cpus: u32,
}

/// Resolves an expanded program, each `call` to the operation's steps.
/// `dists` gains the steps' inline distributions and the scaled copies for
/// `cpu` steps (`cpu_scaled`: the copy made of each distribution so far).
pub(super) fn resolve<'a>(
    scope: &Scope,
    program: &Expanded<'a>,
    dists: &mut Dists,
    cpu_scaled: &mut IndexMap<DistId, DistId>,
) -> Result<Vec<Resolved<'a>>, ScenarioError> {
    Resolver {
        scope,
        program,
        dists,
        cpu_scaled,
        repeats: Vec::new(),
    }
    .nodes(program.nodes)
}

struct Resolver<'s, 'a, 'd> {
    scope: &'s Scope<'s>,
    program: &'s Expanded<'a>,
    dists: &'d mut Dists,
    cpu_scaled: &'d mut IndexMap<DistId, DistId>,
    /// The passes of each `repeat` around the step being resolved,
    /// outermost first (what `NAME[repeat]` counts).
    repeats: Vec<u64>,
}

impl<'a> Resolver<'_, 'a, '_> {
    fn nodes(&mut self, nodes: &'a [Node]) -> Result<Vec<Resolved<'a>>, ScenarioError> {
        let mut out = Vec::with_capacity(nodes.len());
        for n in nodes {
            out.push(match n {
                Node::Leaf(s) => match &s.kind {
                    StepKind::Call(op) => Resolved {
                        origin: &s.origin,
                        kind: Kind::Call {
                            op,
                            body: self.nodes(self.program.called(op))?,
                        },
                    },
                    _ => self.leaf(s)?,
                },
                Node::Block { head, body, tail } => self.block(head, body, tail.as_ref())?,
            });
        }
        Ok(out)
    }

    fn leaf(&mut self, s: &'a Step) -> Result<Resolved<'a>, ScenarioError> {
        let o = &s.origin;
        let doc = self.scope.doc;
        let kind = match &s.kind {
            StepKind::Cpu(d) | StepKind::Sleep(d) => {
                let mut dist = self.dist(o, d)?;
                let zero = self.dists.dists[dist].is_always_zero();
                let sleep = matches!(s.kind, StepKind::Sleep(_));
                if !sleep && self.scope.cpu_scale != 1.0 {
                    dist = self.cpu_scaled_dist(dist);
                }
                Kind::Delay { dist, sleep, zero }
            }
            StepKind::CpuPerCpu(d) => {
                let dist = self.dist(o, d)?;
                let zero = self.dists.dists[dist].is_always_zero();
                let f = self.scope.cpu_scale * f64::from(self.scope.possible_cpus);
                let scaled = self.dists.dists[dist].scaled(f);
                let dist = self.add_dist(scaled);
                Kind::Delay {
                    dist,
                    sleep: false,
                    zero,
                }
            }
            StepKind::SynchronizeRcu => Kind::SynchronizeRcu,
            StepKind::RcuQueue { wq, item, rcu_work } => Kind::RcuQueue {
                work: self.work_ref(o, wq, item)?,
                rcu_work: *rcu_work,
            },
            StepKind::Lock(op, name) => Kind::Lock(self.lock_step(o, *op, name)?),
            StepKind::SpanBegin(name) => Kind::SpanBegin { name, slot: 0 },
            StepKind::SpanEnd(name) => Kind::SpanEnd { name, slot: 0 },
            StepKind::MightResched => Kind::MightResched,
            StepKind::CondResched => Kind::CondResched,
            StepKind::Key(k) => {
                let (lo, hi) = key_range(doc, o, k)?;
                let span = if matches!(k, KeyExpr::Fixed(_)) {
                    0
                } else {
                    hi - lo
                };
                Kind::Key {
                    lo,
                    span,
                    next: matches!(k, KeyExpr::Next(..)),
                }
            }
            StepKind::Charge(g, pages, _) | StepKind::Uncharge(g, pages) => {
                let Some(memcg) = doc.memcg.get_index_of(g.as_str()) else {
                    return Err(undefined(
                        o,
                        "memcg",
                        g,
                        "memcg",
                        "defined",
                        doc.memcg.keys(),
                    ));
                };
                let (memcg, pages) = (MemcgId::from(memcg), *pages);
                if let StepKind::Charge(_, _, gfp) = s.kind {
                    Kind::Charge { memcg, pages, gfp }
                } else {
                    Kind::Uncharge { memcg, pages }
                }
            }
            StepKind::QueueWork {
                wq,
                item,
                delay,
                rcu,
            } => {
                let work = self.work_ref(o, wq, item)?;
                let delay = delay.as_ref().map(|d| self.dist(o, d)).transpose()?;
                Kind::QueueWork {
                    work,
                    delay,
                    rcu: *rcu,
                }
            }
            StepKind::ModDelayedWork { wq, item, delay } => {
                let work = self.work_ref(o, wq, item)?;
                let delay = self.dist(o, delay)?;
                Kind::ModDelayedWork { work, delay }
            }
            StepKind::CancelDelayedWorkSync { wq, item } => Kind::CancelWorkSync {
                work: self.work_ref(o, wq, item)?,
            },
            StepKind::Count(name) => Kind::Count { name },
            StepKind::Kill(g) => match doc.tasks.get_index_of(g.as_str()) {
                Some(i) => Kind::Kill {
                    group: crate::program::GroupId::from(i),
                },
                None => {
                    return Err(undefined(
                        o,
                        "task group",
                        g,
                        "tasks",
                        "defined",
                        doc.tasks.keys(),
                    ))
                }
            },
            StepKind::Line { write, name } => self.line_step(o, *write, name)?,
            StepKind::FlushWorkqueue(wq) => Kind::FlushWorkqueue {
                wq: self.wq_index(o, wq)?,
            },
            StepKind::Call(_)
            | StepKind::Repeat(_)
            | StepKind::RepeatParam(_)
            | StepKind::Loop
            | StepKind::WithProb(_)
            | StepKind::IfWorkBusy { .. }
            | StepKind::IfPressure { .. }
            | StepKind::SeqRetry(_)
            | StepKind::End => {
                unreachable!("blocks are nested by parse_program; calls are handled above")
            }
        };
        Ok(Resolved { origin: o, kind })
    }

    fn block(
        &mut self,
        head: &'a Step,
        body: &'a [Node],
        tail: Option<&'a Step>,
    ) -> Result<Resolved<'a>, ScenarioError> {
        let o = &head.origin;
        let kind = match &head.kind {
            StepKind::Lock(op, name) => Kind::ReadBlock {
                lock: self.lock_step(o, *op, name)?,
                body: self.nodes(body)?,
                tail: &tail.expect("a read block has its closing step").origin,
            },
            StepKind::Repeat(_) | StepKind::RepeatParam(_) => {
                let count = match &head.kind {
                    StepKind::Repeat(n) => *n,
                    StepKind::RepeatParam(name) => param(self.scope.doc, o, name)?,
                    _ => unreachable!("a repeat"),
                };
                self.repeats.push(count);
                let body = self.nodes(body);
                self.repeats.pop();
                Kind::Repeat { count, body: body? }
            }
            StepKind::Loop => Kind::Loop {
                body: self.nodes(body)?,
            },
            StepKind::WithProb(p) => Kind::WithProb {
                p: *p,
                body: self.nodes(body)?,
            },
            StepKind::IfWorkBusy { wq, item } => Kind::IfWorkBusy {
                work: self.work_ref(o, wq, item)?,
                body: self.nodes(body)?,
            },
            StepKind::IfPressure {
                memcg,
                window,
                centi,
            } => {
                let doc = self.scope.doc;
                let Some(m) = doc.memcg.get_index_of(memcg.as_str()) else {
                    return Err(undefined(
                        o,
                        "memcg",
                        memcg,
                        "memcg",
                        "defined",
                        doc.memcg.keys(),
                    ));
                };
                let centi = match centi {
                    Count::Literal(c) => *c,
                    Count::Param(p) => match param(doc, o, p)? {
                        v @ 0..=100 => v * 100,
                        v => {
                            return Err(o.error(format!(
                                "`${p}` is {v}: `if_pressure` takes a percent from 0 to 100"
                            )))
                        }
                    },
                };
                Kind::IfPressure {
                    memcg: MemcgId::from(m),
                    window: *window,
                    centi,
                    body: self.nodes(body)?,
                }
            }
            _ => unreachable!("only blocks have bodies"),
        };
        Ok(Resolved { origin: o, kind })
    }

    fn dist(&mut self, o: &Origin, r: &DistRef) -> Result<DistId, ScenarioError> {
        let named = &self.dists.named;
        match r {
            DistRef::Named(n) => named
                .get(n)
                .copied()
                .ok_or_else(|| undefined(o, "distribution", n, "dists", "defined", named.keys())),
            DistRef::Inline(d) => Ok(self.add_dist(d.clone())),
        }
    }

    fn add_dist(&mut self, d: Dist) -> DistId {
        self.dists.dists.push_and_get_key(d)
    }

    /// The copy of distribution `d` scaled for `cpu` steps (made once).
    fn cpu_scaled_dist(&mut self, d: DistId) -> DistId {
        if let Some(&s) = self.cpu_scaled.get(&d) {
            return s;
        }
        let scaled = self.dists.dists[d].scaled(self.scope.cpu_scale);
        let s = self.add_dist(scaled);
        self.cpu_scaled.insert(d, s);
        s
    }

    fn wq_index(&self, o: &Origin, name: &str) -> Result<WqId, ScenarioError> {
        let doc = self.scope.doc;
        doc.workqueues
            .get_index_of(name)
            .map(WqId::from)
            .ok_or_else(|| {
                undefined(
                    o,
                    "workqueue",
                    name,
                    "workqueues",
                    "defined",
                    doc.workqueues.keys(),
                )
            })
    }

    fn work_ref(
        &self,
        o: &Origin,
        wq: &str,
        item: &'a WorkRef,
    ) -> Result<WorkStep<'a>, ScenarioError> {
        let doc = self.scope.doc;
        let wq = self.wq_index(o, wq)?;
        let Some((work, _, def)) = doc.works.get_full(item.name.as_str()) else {
            return Err(undefined(
                o,
                "work",
                &item.name,
                "works",
                "defined",
                doc.works.keys(),
            ));
        };
        let instances = def.get_ref().instances.as_ref().map_or(1, |n| *n.get_ref());
        let needed = match item.key {
            WorkKey::Index(i) => i + 1,
            WorkKey::SelfIndex => self.scope.self_count,
            WorkKey::Seq => 1,
        };
        if needed > instances {
            return Err(o.error(format!(
                "`{}` has {instances} instance(s) (`instances` in [works.{}]); this step needs {needed}",
                item.name, item.name
            )));
        }
        Ok(WorkStep {
            wq,
            work: WorkTypeId::from(work),
            key: item.key,
            name: &item.name,
        })
    }

    /// An `atomic` or `read` step of the line `full` (`NAME`, `NAME[i]`,
    /// `NAME[self]`).
    fn line_step(&self, o: &Origin, write: bool, full: &'a str) -> Result<Kind<'a>, ScenarioError> {
        let lines = self.scope.lines;
        let (name, key) = family_ref(o, full)?;
        let Some(&(base, instances, family)) = lines.ids.get(name) else {
            return Err(undefined(
                o,
                "line",
                name,
                "lines",
                "declared",
                lines.ids.keys(),
            ));
        };
        let self_count = self.scope.self_count;
        let (line, dynamic) = match (family, key) {
            (false, None) => (base, false),
            (false, Some(_)) => {
                return Err(o.error(format!(
                    "`{name}` is not a family of lines (no `instances`); drop the `[...]`"
                )))
            }
            (true, None) => {
                return Err(o.error(format!(
                    "`{name}` is a family of {instances} lines: name one, `{name}[0]` or `{name}[self]`"
                )))
            }
            (true, Some(WorkKey::Index(i))) if i < instances => (LineId(base.0 + i), false),
            (true, Some(WorkKey::Index(_))) => {
                return Err(o.error(format!(
                    "`{full}`: `{name}` has {instances} instances, 0 to {}",
                    instances - 1
                )))
            }
            (true, Some(WorkKey::SelfIndex)) if self_count <= instances => (base, true),
            (true, Some(WorkKey::SelfIndex)) => {
                return Err(o.error(format!(
                    "`{full}`: `self` takes {self_count} values here but `{name}` has {instances} instances"
                )))
            }
            (true, Some(WorkKey::Seq)) => {
                return Err(o.error(format!(
                    "`{full}`: a line is named by a number or `self`, not `seq`"
                )))
            }
        };
        Ok(Kind::Line {
            line,
            write,
            dynamic,
        })
    }

    fn lock_step(
        &self,
        o: &Origin,
        op: LockOp,
        full: &'a str,
    ) -> Result<LockStep<'a>, ScenarioError> {
        let (doc, locks) = (self.scope.doc, self.scope.locks);
        if let Some(name) = full.strip_suffix("[hash self]") {
            return self.hashed_lock_step(o, op, full, name);
        }
        if let Some(name) = full.strip_suffix("[repeat]") {
            return self.pass_lock_step(o, op, full, name);
        }
        if let Some(name) = full.strip_suffix("[process]") {
            return self.process_lock_step(o, op, full, name);
        }
        let (name, key) = family_ref(o, full)?;
        let Some(&(base, instances)) = locks.ids.get(name) else {
            return Err(undefined(
                o,
                "lock",
                name,
                "locks",
                "declared",
                locks.ids.keys(),
            ));
        };
        let is_family = doc
            .locks
            .get(name)
            .is_some_and(|d| d.get_ref().instances.is_some());
        let self_count = self.scope.self_count;
        // The lock id the static checks track (a `self` key is one lock of
        // its own), and the id and run-time flag the instruction carries.
        let (lock, instr_lock, dynamic) = match (is_family, key) {
            (false, None) => (Tracked::Lock(base), base, Instance::Fixed),
            (false, Some(_)) => {
                return Err(o.error(format!("`{name}` is not a family of locks (no `instances`); drop the `[...]`")))
            }
            (true, None) => {
                return Err(o.error(format!("`{name}` is a family of {instances} locks: name one, `{name}[0]` or `{name}[self]`")))
            }
            (true, Some(WorkKey::Index(i))) if i < instances => {
                let lock = LockId(base.0 + i);
                (Tracked::Lock(lock), lock, Instance::Fixed)
            }
            (true, Some(WorkKey::Index(_))) => {
                return Err(o.error(format!("`{full}`: `{name}` has {instances} instances, 0 to {}", instances - 1)))
            }
            (true, Some(WorkKey::SelfIndex)) if self_count <= instances => {
                (Tracked::SelfOf(base), base, Instance::SelfKey)
            }
            (true, Some(WorkKey::Seq)) => {
                return Err(o.error(format!("`{full}`: a lock is named by a number or `self`, not `seq`")))
            }
            (true, Some(WorkKey::SelfIndex)) => {
                return Err(o.error(format!(
                    "`{full}`: `self` takes {self_count} values here but `{name}` has {instances} instances"
                )))
            }
        };
        self.lock_step_of(o, op, name, (lock, instr_lock, dynamic))
    }

    /// Lock `name`'s first id, its number of instances, and whether it is
    /// a family (`instances` set), for a keyed step.
    fn lock_family(&self, o: &Origin, name: &str) -> Result<(LockId, u32, bool), ScenarioError> {
        let (doc, locks) = (self.scope.doc, self.scope.locks);
        let Some(&(base, instances)) = locks.ids.get(name) else {
            return Err(undefined(
                o,
                "lock",
                name,
                "locks",
                "defined",
                locks.ids.keys(),
            ));
        };
        let is_family = (doc.locks.get(name)).is_some_and(|d| d.get_ref().instances.is_some());
        Ok((base, instances, is_family))
    }

    /// `NAME[hash self]`: the task's key hashed into a family of `2^bits`
    /// locks (`hash_64`, as the kernel's hashed lock tables pick one).
    fn hashed_lock_step(
        &self,
        o: &Origin,
        op: LockOp,
        full: &'a str,
        name: &'a str,
    ) -> Result<LockStep<'a>, ScenarioError> {
        let (base, instances, is_family) = self.lock_family(o, name)?;
        if !is_family || !instances.is_power_of_two() {
            return Err(o.error(format!(
                "`{full}`: a hashed lock is one of a family whose `instances` is a power of two (the kernel's hash tables are); `{name}` has {}",
                instances_said(is_family, instances, "no `instances`")
            )));
        }
        let bits = instances.trailing_zeros() as u8;
        self.lock_step_of(
            o,
            op,
            name,
            (Tracked::HashOf(base), base, Instance::Hashed { bits }),
        )
    }

    /// `NAME[process]`: the lock of the family for the task's process
    /// (`[tasks.X] process`), known when the program is compiled.
    fn process_lock_step(
        &self,
        o: &Origin,
        op: LockOp,
        full: &'a str,
        name: &'a str,
    ) -> Result<LockStep<'a>, ScenarioError> {
        let (base, instances, is_family) = self.lock_family(o, name)?;
        let Some(process) = self.scope.process else {
            return Err(o.error(format!(
                "`{full}`: a work runs in a kworker, which belongs to no process of the scenario"
            )));
        };
        if !is_family || process >= instances {
            return Err(o.error(format!(
                "`{full}`: this is process {process} of the scenario (counting from 0, in the order the task groups name them), so `{name}` needs at least {} `instances`; it has {}",
                process + 1,
                instances_said(is_family, instances, "none")
            )));
        }
        let lock = LockId(base.0 + process);
        self.lock_step_of(o, op, name, (Tracked::Lock(lock), lock, Instance::Fixed))
    }

    /// `NAME[repeat]`: the lock of the family for the pass the innermost
    /// repeat around the step is in (a loop over nodes, each with its
    /// lock).
    fn pass_lock_step(
        &self,
        o: &Origin,
        op: LockOp,
        full: &'a str,
        name: &'a str,
    ) -> Result<LockStep<'a>, ScenarioError> {
        let (base, instances, is_family) = self.lock_family(o, name)?;
        let Some(&count) = self.repeats.last() else {
            return Err(o.error(format!(
                "`{full}`: `[repeat]` names the pass of a `repeat`, and this step is in none"
            )));
        };
        if !is_family || count > u64::from(instances) {
            return Err(o.error(format!(
                "`{full}`: the repeat around it makes {count} passes, so `{name}` needs at least {count} `instances`; it has {}",
                instances_said(is_family, instances, "none")
            )));
        }
        let depth =
            u8::try_from(self.repeats.len() - 1).map_err(|_| o.error("repeats nest too deep"))?;
        let pass = Instance::Pass {
            depth,
            count: count as u32,
        };
        self.lock_step_of(o, op, name, (Tracked::PassOf(base), base, pass))
    }

    /// The lock step `op` on `name`, once its instance is known: its mode,
    /// checked against the lock's kind.
    fn lock_step_of(
        &self,
        o: &Origin,
        op: LockOp,
        name: &'a str,
        (lock, instr_lock, dynamic): (Tracked, LockId, Instance),
    ) -> Result<LockStep<'a>, ScenarioError> {
        let locks = self.scope.locks;
        let base = instr_lock;
        let kind = locks.specs[base].kind;
        let mode = match op {
            LockOp::Downgrade => {
                if kind != LockKind::Rwsem {
                    return Err(o.error(format!(
                        "`downgrade_write {name}`: `{name}` is {}",
                        a_kind(kind)
                    )));
                }
                let policy = &locks.specs[base].policy;
                if !models::locks::supports_downgrade(kind, policy) {
                    return Err(o.error(format!(
                        "`downgrade_write {name}`: policy `{policy}` has no downgrade; use linux, fifo or none"
                    )));
                }
                Mode::Write
            }
            _ => {
                let (mode, want) = op_mode_kind(op);
                if kind != want {
                    return Err(o.error(format!(
                        "`{} {name}`: `{name}` is {}; use {}",
                        op.keyword(),
                        a_kind(kind),
                        kind_steps(kind)
                    )));
                }
                mode
            }
        };
        Ok(LockStep {
            op,
            name,
            lock,
            instr_lock,
            dynamic,
            kind,
            mode,
            slot: 0,
        })
    }
}

/// The mode a lock step takes or releases, and the kind of lock it is for.
fn op_mode_kind(op: LockOp) -> (Mode, LockKind) {
    use LockOp::*;
    match op {
        Downgrade | DownWrite | UpWrite => (Mode::Write, LockKind::Rwsem),
        DownRead | UpRead => (Mode::Read, LockKind::Rwsem),
        MutexLock | MutexUnlock => (Mode::Write, LockKind::Mutex),
        SpinLock | SpinUnlock => (Mode::Write, LockKind::Spinlock),
        PercpuDownRead | PercpuUpRead => (Mode::Read, LockKind::PercpuRwsem),
        PercpuDownWrite | PercpuUpWrite => (Mode::Write, LockKind::PercpuRwsem),
        WriteSeqcountBegin | WriteSeqcountEnd => (Mode::Write, LockKind::Seqcount),
        ReadSeqcountBegin => (Mode::Read, LockKind::Seqcount),
        WriteSeqlock | WriteSequnlock => (Mode::Write, LockKind::Seqlock),
        ReadSeqbegin => (Mode::Read, LockKind::Seqlock),
    }
}

/// A lock kind with its article, for messages: "an rwsem", "a mutex".
fn a_kind(kind: LockKind) -> String {
    match kind {
        LockKind::Rwsem => "an rwsem".into(),
        k => format!("a {}", k.as_str()),
    }
}

/// The steps a lock kind takes, for messages.
fn kind_steps(kind: LockKind) -> &'static str {
    match kind {
        LockKind::Rwsem => "down_read/up_read/down_write/up_write",
        LockKind::Mutex => "mutex_lock/mutex_unlock",
        LockKind::Spinlock => "spin_lock/spin_unlock",
        LockKind::PercpuRwsem => {
            "percpu_down_read/percpu_up_read/percpu_down_write/percpu_up_write"
        }
        LockKind::Seqcount => {
            "write_seqcount_begin/write_seqcount_end, read_seqcount_begin ... read_seqcount_retry"
        }
        LockKind::Seqlock => "write_seqlock/write_sequnlock, read_seqbegin ... read_seqretry",
    }
}

/// A lock or line as a step names it: `name`, or `family[KEY]` with KEY
/// a number or `self`.
/// A keyed step's family size as its errors say it: the count, or
/// `none` when the lock is not a family.
fn instances_said(is_family: bool, instances: u32, none: &str) -> String {
    if is_family {
        instances.to_string()
    } else {
        none.to_string()
    }
}

fn family_ref<'a>(o: &Origin, full: &'a str) -> Result<(&'a str, Option<WorkKey>), ScenarioError> {
    match full.split_once('[') {
        None => Ok((full, None)),
        Some((n, rest)) => {
            let k = rest
                .strip_suffix(']')
                .ok_or_else(|| o.error(format!("`{full}` lacks its `]`")))?;
            let key = if k == "self" {
                WorkKey::SelfIndex
            } else {
                WorkKey::Index(k.parse().map_err(|_| {
                    o.error(format!(
                        "key `{k}` of `{full}` is none of a number, `self`, `hash self`, `repeat` and `process`"
                    ))
                })?)
            };
            Ok((n, Some(key)))
        }
    }
}
