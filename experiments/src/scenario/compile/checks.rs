//! Pass 5, static checks, on a resolved program, each reported at the
//! step that breaks it:
//! - a task never takes a lock it already holds, never releases or
//!   downgrades one it does not hold or in the wrong mode, and ends its
//!   program holding nothing and with no span open (nor begins a span that
//!   is open, nor ends one that is not);
//! - every block (`repeat`, `loop`, `with_prob`, `if_work_busy`) leaves
//!   the locks held and the spans open as it found them, each in the same
//!   slot, so one linear pass decides what is held at every step;
//! - every `loop` advances simulated time on each pass (a `cpu` or `sleep`
//!   that is not always zero, or an `atomic` or `read` of a line, outside
//!   `with_prob`), so no program can spin forever at one instant;
//! - no work type is both queued with `queue_rcu_work` and grabbed
//!   (`mod_delayed_work`, a cancel), in any of the programs: the kernel's
//!   rcu_work cannot be cancelled or re-armed;
//! - no step that may sleep (`sleep`, a sleeping lock's acquisition, a
//!   blocking `charge`, `might_resched`, a flush or a cancel that waits)
//!   runs while a hold with preemption disabled is held: a spinlock, a
//!   sequence counter's write section (R75, R86);
//! - a seqcount whose `lock` is named is written only with that lock
//!   held for write (R86);
//! - a read block (`read_seqcount_begin` ... `read_seqcount_retry`)
//!   holds its read section over its body, which must release what it
//!   takes, as any block's.
//!
//! Tracking what is held lays out the slots: each hold and span takes the
//! first free slot of its kind, and the pass writes it into its step.

use super::names::{Kind, LockStep, Resolved, Tracked};
use super::Budget;
use crate::program::{GfpWord, LockId, LockSpec, Origin, WorkTypeId};
use crate::scenario::error::ScenarioError;
use crate::scenario::steps::LockOp;
use models::Mode;
use typed_index_collections::{TiSlice, TiVec};

/// How many hold and span slots a program's tasks use.
pub(super) struct Slots {
    pub holds: usize,
    pub spans: usize,
}

/// Checks the program of `group`, resolved, and sets the slot of each of
/// its lock and span steps. `work_uses` holds, per work type (its index in
/// `[works]`) over all programs, the first step that grabs it and the
/// first `queue_rcu_work` of it, indexed by `rcu`.
pub(super) fn check<'a>(
    group: &str,
    nodes: &mut [Resolved<'a>],
    locks: &TiSlice<LockId, LockSpec>,
    budget: &mut Budget,
    work_uses: &mut TiVec<WorkTypeId, [Option<Origin>; 2]>,
) -> Result<Slots, ScenarioError> {
    let mut c = Checker {
        locks,
        budget,
        work_uses,
        held: Vec::new(),
        spans: Vec::new(),
    };
    c.nodes(nodes)?;
    if let Some((l, _, at)) = c.held.iter().flatten().next() {
        return Err(at.error(format!(
            "`{group}` ends its program still holding `{}` (taken here)",
            locks[l.named()].name
        )));
    }
    if let Some((n, at)) = c.spans.iter().flatten().next() {
        return Err(at.error(format!(
            "`{group}` ends its program with span `{n}` still open"
        )));
    }
    Ok(Slots {
        holds: c.held.len(),
        spans: c.spans.len(),
    })
}

struct Checker<'a, 'c, 'b> {
    locks: &'c TiSlice<LockId, LockSpec>,
    budget: &'c mut Budget<'b>,
    work_uses: &'c mut TiVec<WorkTypeId, [Option<Origin>; 2]>,
    /// Per hold slot: the lock (as the names pass tracks it), its mode,
    /// and where it was taken.
    held: Vec<Option<(Tracked, Mode, &'a Origin)>>,
    /// Per span slot: the open span and where it began.
    spans: Vec<Option<(&'a str, &'a Origin)>>,
}

impl<'a> Checker<'a, '_, '_> {
    fn nodes(&mut self, nodes: &mut [Resolved<'a>]) -> Result<(), ScenarioError> {
        for n in nodes {
            self.budget.visit(n.origin)?;
            self.node(n)?;
        }
        Ok(())
    }

    fn node(&mut self, n: &mut Resolved<'a>) -> Result<(), ScenarioError> {
        let o = n.origin;
        match &mut n.kind {
            Kind::Lock(l) => {
                if l.op.is_acquire() && l.kind.acquire_may_sleep() {
                    self.no_sleep(o, l.op.keyword())?;
                }
                self.serialised(o, l)?;
                self.lock_step(o, l)?
            }
            Kind::ReadBlock { lock, body, .. } => {
                self.lock_step(o, lock)?;
                self.block(o, body)?;
                self.held[lock.slot] = None;
            }
            Kind::SpanBegin { name, slot } => {
                if let Some((_, at)) = self.spans.iter().flatten().find(|(n, _)| n == name) {
                    return Err(o.error(format!(
                        "span `{name}` is already open (begun at {})",
                        at.location
                    )));
                }
                *slot = first_free(&mut self.spans);
                self.spans[*slot] = Some((name, o));
            }
            Kind::SpanEnd { name, slot } => {
                let Some(at) = self
                    .spans
                    .iter()
                    .position(|x| matches!(x, Some((n, _)) if n == name))
                else {
                    return Err(o.error(format!(
                        "`span_end {name}` without an open `span_begin {name}`"
                    )));
                };
                self.spans[at] = None;
                *slot = at;
            }
            Kind::QueueWork { work, rcu, .. } => {
                if *rcu {
                    self.work_use(work.work, o, true, work.name)?;
                }
            }
            Kind::RcuQueue {
                work,
                rcu_work: true,
            } => {
                self.work_use(work.work, o, true, work.name)?;
            }
            Kind::ModDelayedWork { work, .. } => {
                self.work_use(work.work, o, false, work.name)?;
            }
            Kind::CancelWorkSync { work } => {
                self.no_sleep(o, "cancel_delayed_work_sync")?;
                self.work_use(work.work, o, false, work.name)?;
            }
            Kind::Call { body, .. } => self.nodes(body)?,
            Kind::Repeat { body, .. }
            | Kind::WithProb { body, .. }
            | Kind::IfWorkBusy { body, .. }
            | Kind::IfPressure { body, .. } => self.block(o, body)?,
            Kind::Loop { body } => {
                if !self.advances_time(body)? {
                    return Err(o.error(
                        "this `loop` never advances simulated time: give its body a `cpu` or `sleep` step \
                         (outside `with_prob`) that is not always zero",
                    ));
                }
                self.block(o, body)?
            }
            Kind::Delay { sleep: true, .. } => self.no_sleep(o, "sleep")?,
            Kind::MightResched => self.no_sleep(o, "might_resched")?,
            Kind::CondResched => self.no_sleep(o, "cond_resched")?,
            Kind::Charge { gfp, .. } if !matches!(gfp, GfpWord::Nowait | GfpWord::Atomic) => {
                self.no_sleep(o, "charge")?
            }
            Kind::FlushWorkqueue { .. } => self.no_sleep(o, "flush_workqueue")?,
            Kind::SynchronizeRcu => self.no_sleep(o, "synchronize_rcu")?,
            Kind::Key { .. } => self.no_keyed_hold(o)?,
            Kind::Delay { .. }
            | Kind::Charge { .. }
            | Kind::Uncharge { .. }
            | Kind::RcuQueue { .. }
            | Kind::Count { .. }
            | Kind::Kill { .. }
            | Kind::Line { .. } => {}
        }
        Ok(())
    }

    /// A `key` step at `o` changes which lock `NAME[self]` and
    /// `NAME[hash self]` name: an error while one is held, whose release
    /// would then name another lock.
    fn no_keyed_hold(&self, o: &Origin) -> Result<(), ScenarioError> {
        let keyed = (self.held.iter().flatten())
            .find(|(l, _, _)| matches!(l, Tracked::SelfOf(_) | Tracked::HashOf(_)));
        match keyed {
            Some((l, _, at)) => {
                let name = &self.locks[l.named()].name;
                let name = name.split('[').next().unwrap_or(name);
                let form = if matches!(l, Tracked::HashOf(_)) {
                    "hash self"
                } else {
                    "self"
                };
                Err(o.error(format!(
                    "`key` changes which lock `{name}[{form}]` names, and it is held here (taken at {}): \
                     release it before the `key` step",
                    at.location
                )))
            }
            None => Ok(()),
        }
    }

    /// The step `kw` at `o` may sleep: an error if a hold with preemption
    /// disabled is held (R75, R86).
    fn no_sleep(&self, o: &Origin, kw: &str) -> Result<(), ScenarioError> {
        let atomic = (self.held.iter().flatten())
            .find(|(l, m, _)| self.locks[l.named()].kind.disables_preemption(*m));
        match atomic {
            Some((l, _, at)) => {
                let spec = &self.locks[l.named()];
                Err(o.error(format!(
                    "`{kw}` may sleep, but `{}` ({}) is held here (taken at {}): \
                     preemption is disabled until it is released, and a task must not sleep then (R75, R86)",
                    spec.name.split('[').next().unwrap_or(&spec.name),
                    spec.kind.as_str(),
                    at.location
                )))
            }
            None => Ok(()),
        }
    }

    /// A seqcount's write section at `o` begins with its serialising lock
    /// held for write (R86).
    fn serialised(&self, o: &Origin, l: &LockStep) -> Result<(), ScenarioError> {
        if l.op != LockOp::WriteSeqcountBegin {
            return Ok(());
        }
        let Some(by) = self.locks[l.lock.named()].serialised_by else {
            return Ok(());
        };
        let need = match l.lock {
            Tracked::Lock(_) => Tracked::Lock(by),
            Tracked::SelfOf(_) => Tracked::SelfOf(by),
            Tracked::HashOf(_) => Tracked::HashOf(by),
            Tracked::PassOf(_) => Tracked::PassOf(by),
        };
        let held = (self.held.iter().flatten()).any(|(x, m, _)| *x == need && *m == Mode::Write);
        if held {
            return Ok(());
        }
        let by_name = &self.locks[by].name;
        let by_name = match l.lock {
            Tracked::SelfOf(_) => format!("{}[self]", by_name.split('[').next().unwrap_or(by_name)),
            Tracked::HashOf(_) => format!(
                "{}[hash self]",
                by_name.split('[').next().unwrap_or(by_name)
            ),
            Tracked::PassOf(_) => {
                format!("{}[repeat]", by_name.split('[').next().unwrap_or(by_name))
            }
            Tracked::Lock(_) => by_name.clone(),
        };
        Err(o.error(format!(
            "`write_seqcount_begin {}`: its writers are serialised by `{by_name}` (`lock` of the seqcount), \
             which is not held for write here (R86)",
            l.name
        )))
    }

    fn lock_step(&mut self, o: &'a Origin, l: &mut LockStep) -> Result<(), ScenarioError> {
        let (name, lock) = (l.name, l.lock);
        let kw = l.op.keyword();
        let position = |held: &[Option<(Tracked, Mode, &Origin)>]| {
            held.iter()
                .position(|h| matches!(h, Some((x, _, _)) if *x == lock))
        };
        if l.op == LockOp::Downgrade {
            let Some(slot) = position(&self.held) else {
                return Err(o.error(format!(
                    "`downgrade_write {name}`: `{name}` is not held at this point"
                )));
            };
            let (_, held_mode, at) = self.held[slot].expect("position found it");
            if held_mode != Mode::Write {
                return Err(o.error(format!(
                    "`downgrade_write {name}`: `{name}` is held for read (taken at {})",
                    at.location
                )));
            }
            self.held[slot] = Some((lock, Mode::Read, o));
            l.slot = slot;
        } else if l.op.is_acquire() {
            if let Some((_, _, at)) = self.held.iter().flatten().find(|(x, _, _)| *x == lock) {
                return Err(o.error(format!(
                    "`{kw} {name}`: the task already holds `{name}` (taken at {}); it would deadlock on itself",
                    at.location
                )));
            }
            let slot = first_free(&mut self.held);
            self.held[slot] = Some((lock, l.mode, o));
            l.slot = slot;
        } else {
            let Some(slot) = position(&self.held) else {
                return Err(o.error(format!("`{kw} {name}`: `{name}` is not held at this point")));
            };
            let (_, held_mode, at) = self.held[slot].expect("position found it");
            if held_mode != l.mode {
                return Err(o.error(format!(
                    "`{kw} {name}`: `{name}` is held for {} (taken at {})",
                    held_mode.as_str(),
                    at.location
                )));
            }
            self.held[slot] = None;
            l.slot = slot;
        }
        Ok(())
    }

    /// A block's body at `o`: it must leave the holds and spans as it
    /// found them.
    fn block(&mut self, o: &Origin, body: &mut [Resolved<'a>]) -> Result<(), ScenarioError> {
        let held_before: Vec<Option<Tracked>> =
            self.held.iter().map(|h| h.as_ref().map(|x| x.0)).collect();
        let spans_before: Vec<Option<&str>> =
            self.spans.iter().map(|h| h.as_ref().map(|x| x.0)).collect();
        self.nodes(body)?;
        let held_after: Vec<Option<Tracked>> =
            self.held.iter().map(|h| h.as_ref().map(|x| x.0)).collect();
        let spans_after: Vec<Option<&str>> =
            self.spans.iter().map(|h| h.as_ref().map(|x| x.0)).collect();
        if trim(&held_before) != trim(&held_after) {
            let names = |v: &[Option<Tracked>]| -> String {
                let n: Vec<&str> = v
                    .iter()
                    .flatten()
                    .map(|l| self.locks[l.named()].name.as_str())
                    .collect();
                if n.is_empty() {
                    "nothing".into()
                } else {
                    n.join(", ")
                }
            };
            return Err(o.error(format!(
                "the block's body must release what it takes: it starts holding {} and ends holding {}",
                names(&held_before),
                names(&held_after)
            )));
        }
        if trim(&spans_before) != trim(&spans_after) {
            return Err(o.error("the block's body must end every span it begins, and only those"));
        }
        Ok(())
    }

    /// Whether one pass of `body` surely advances simulated time.
    fn advances_time(&mut self, body: &[Resolved]) -> Result<bool, ScenarioError> {
        for n in body {
            self.budget.visit(n.origin)?;
            let yes = match &n.kind {
                Kind::Delay { zero, .. } => !zero,
                // A memory access takes time on every machine but the
                // ideal one, where a loop of lines without costs of their
                // own stops at the run's livelock limit.
                Kind::Line { .. } => true,
                Kind::Call { body, .. } | Kind::ReadBlock { body, .. } => {
                    self.advances_time(body)?
                }
                Kind::Repeat { count, body } if *count > 0 => self.advances_time(body)?,
                Kind::WithProb { p, body } if *p >= 1.0 => self.advances_time(body)?,
                // An inner loop never returns: the outer pass never completes.
                Kind::Loop { .. } => true,
                _ => false,
            };
            if yes {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Notes that step `o` queues work type `work` as an rcu_work (`rcu`)
    /// or grabs it; an error once one type has both.
    fn work_use(
        &mut self,
        work: WorkTypeId,
        o: &Origin,
        rcu: bool,
        name: &str,
    ) -> Result<(), ScenarioError> {
        let firsts = &mut self.work_uses[work];
        firsts[usize::from(rcu)].get_or_insert_with(|| o.clone());
        match &firsts[usize::from(!rcu)] {
            Some(at) => Err(o.error(format!(
                "work `{name}` is queued with `queue_rcu_work` and also grabbed with `mod_delayed_work` \
                 or a cancel (at {}); an rcu_work cannot be cancelled or re-armed: use a separate \
                 work type",
                at.location
            ))),
            None => Ok(()),
        }
    }
}

fn first_free<T>(v: &mut Vec<Option<T>>) -> usize {
    match v.iter().position(|x| x.is_none()) {
        Some(i) => i,
        None => {
            v.push(None);
            v.len() - 1
        }
    }
}

fn trim<T: PartialEq + Clone>(v: &[Option<T>]) -> Vec<Option<T>> {
    let mut v = v.to_vec();
    while matches!(v.last(), Some(None)) {
        v.pop();
    }
    v
}
