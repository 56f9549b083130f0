//! Lowering a typed scenario to the flat programs the world runs, with the
//! static checks that catch mistakes before the run starts.
//!
//! Checks, each reported at the step that breaks it:
//! - every lock, operation and distribution a step names exists, and the
//!   step fits the lock's kind (`down_read` needs an rwsem, `mutex_lock` a
//!   mutex);
//! - locks: a task never takes a lock it already holds, never releases one
//!   it does not hold or in the wrong mode, and ends holding nothing; every
//!   block (`repeat`, `loop`, `with_prob`) leaves the set of held locks and
//!   open spans as it found it, so one linear pass decides what is held at
//!   every step;
//! - `call` is not recursive;
//! - every `loop` advances simulated time on each pass (a `cpu` or `sleep`
//!   that is not always zero, outside `with_prob`), so no program can spin
//!   forever at one instant.

use super::doc::{DistDef, Doc, LockDef};
use super::error::ScenarioError;
use super::source::Source;
use super::steps::{parse_program, Count, DistRef, KeyExpr, LockOp, Node, Step, StepKind, WorkRef};
use crate::program::{
    mode_label, Compiled, DistId, GroupProg, Instr, LockId, LockSpec, MemcgSpec, Origin,
    ReclaimFrees, StatId, StatSpec, WakePlacement, WorkKey, WorkSpec, WorkqueueSpec,
};
use indexmap::IndexMap;
use models::{LockKind, Mode};
use output::Metric;
use sim::dist::{Dist, Empirical};
use sim::time::parse_duration;
use sim::Dur;
use toml::Spanned;

/// Most locks a scenario may have, family instances included.
const MAX_LOCKS: usize = 1 << 22;

use super::source::MAX_DATA_FILE;

/// Marks, in the static checks, a family lock taken with the `self` key.
const SELF_LOCK: LockId = 1 << 31;

/// One of a few named settings (`options[0]` when absent), or an error
/// that lists them.
fn choice<T: Copy>(
    src: &Source,
    field: &str,
    what: &str,
    v: Option<&Spanned<String>>,
    options: &[(&str, T)],
) -> Result<T, ScenarioError> {
    let Some(v) = v else { return Ok(options[0].1) };
    match options.iter().find(|(n, _)| n == v.get_ref()) {
        Some((_, t)) => Ok(*t),
        None => {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            Err(ScenarioError::new(
                src.locate(Some(v.span())),
                field,
                format!(
                    "unknown {what} `{}`; expected {}",
                    v.get_ref(),
                    names.join(", ")
                ),
            ))
        }
    }
}

fn dur_field(src: &Source, field: &str, v: &Spanned<String>) -> Result<Dur, ScenarioError> {
    parse_duration(v.get_ref())
        .map_err(|e| ScenarioError::new(src.locate(Some(v.span())), field, e.to_string()))
}

fn unit_ns(src: &Source, field: &str, v: Option<&Spanned<String>>) -> Result<f64, ScenarioError> {
    let Some(v) = v else { return Ok(1.0) };
    Ok(match v.get_ref().as_str() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                field,
                format!("unknown unit `{other}`; expected ns, us, ms or s"),
            ))
        }
    })
}

/// Reads a data file of at most [`MAX_DATA_FILE`] bytes (`/dev/zero` or a
/// mistaken multi-gigabyte file is an error, not an endless read).
fn read_data_file(path: &std::path::Path) -> std::io::Result<String> {
    super::source::read_text(path, MAX_DATA_FILE)
}

/// Builds a named distribution from its table.
fn build_dist(src: &Source, name: &str, def: &Spanned<DistDef>) -> Result<Dist, ScenarioError> {
    let d = def.get_ref();
    let at = |span| src.locate(Some(span));
    let field = |f: &str| format!("dists.{name}.{f}");
    let need = |v: &Option<Spanned<String>>, f: &str| -> Result<Dur, ScenarioError> {
        match v {
            Some(v) => dur_field(src, &field(f), v),
            None => Err(ScenarioError::new(
                at(def.span()),
                field(f),
                format!("`{}` needs `{f}`", d.dist.get_ref()),
            )),
        }
    };
    let needf = |v: &Option<Spanned<f64>>, f: &str| -> Result<f64, ScenarioError> {
        v.as_ref().map(|v| *v.get_ref()).ok_or_else(|| {
            ScenarioError::new(
                at(def.span()),
                field(f),
                format!("`{}` needs `{f}`", d.dist.get_ref()),
            )
        })
    };
    // An out-of-range parameter is told at its own value (which may be a
    // `--set` argument), other errors at the table.
    let bad = |e: sim::dist::DistError| {
        use sim::dist::DistError as E;
        let s = |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.span());
        let f = |v: &Option<Spanned<f64>>| v.as_ref().map(|v| v.span());
        let (own, span) = match &e {
            E::NonPositiveMean => ("mean", s(&d.mean)),
            E::LoAboveHi { .. } => ("hi", s(&d.hi)),
            E::ZeroMedian => ("median", s(&d.median)),
            E::BadSigma(_) => ("sigma", f(&d.sigma)),
            E::ZeroScale => ("scale", s(&d.scale)),
            E::BadShape(_) => ("shape", f(&d.shape)),
            E::CapBelowScale { .. } => ("cap", s(&d.cap)),
            _ => ("", None),
        };
        match span {
            Some(span) => ScenarioError::new(at(span), field(own), e.to_string()),
            None => ScenarioError::new(at(def.span()), format!("dists.{name}"), e.to_string()),
        }
    };
    let kind = d.dist.get_ref().as_str();
    match kind {
        "const" => Dist::exact(need(&d.value, "value")?, "value").map_err(bad),
        "exp" => Dist::exp(need(&d.mean, "mean")?).map_err(bad),
        "uniform" => Dist::uniform(need(&d.lo, "lo")?, need(&d.hi, "hi")?).map_err(bad),
        "lognormal" => Dist::lognormal(need(&d.median, "median")?, needf(&d.sigma, "sigma")?).map_err(bad),
        "pareto" => {
            let cap = match &d.cap {
                Some(c) => Some(dur_field(src, &field("cap"), c)?),
                None => None,
            };
            Dist::pareto(need(&d.scale, "scale")?, needf(&d.shape, "shape")?, cap).map_err(bad)
        }
        "mixture" => {
            let Some(parts) = &d.parts else {
                return Err(ScenarioError::new(at(def.span()), field("parts"), "`mixture` needs `parts = [{ weight = 0.9, dist = \"exp(20us)\" }, ...]`"));
            };
            let mut out = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                let part = sim::dist::parse_inline(p.get_ref().dist.get_ref()).map_err(|e| {
                    ScenarioError::new(at(p.get_ref().dist.span()), field(&format!("parts[{i}].dist")), e.to_string())
                })?;
                out.push((p.get_ref().weight, part));
            }
            Dist::mixture(out).map_err(bad)
        }
        "empirical" => {
            let Some(file) = &d.file else {
                return Err(ScenarioError::new(at(def.span()), field("file"), "`empirical` needs `file` (a bpftrace hist() dump or a CSV/TSV of samples)"));
            };
            let path = match &src.dir {
                Some(dir) => dir.join(file.get_ref()),
                None => std::path::PathBuf::from(file.get_ref()),
            };
            let text = read_data_file(&path).map_err(|e| {
                ScenarioError::new(at(file.span()), field("file"), format!("cannot read {}: {e}", path.display()))
            })?;
            let unit = unit_ns(src, &field("unit"), d.unit.as_ref())?;
            let format = d.format.as_ref().map(|f| f.get_ref().as_str()).unwrap_or("samples");
            let fname = path.display().to_string();
            let emp = match format {
                "bpftrace-hist" => Empirical::from_bpftrace_hist(&text, d.map.as_deref(), unit),
                "samples" => Empirical::from_samples_text(&text, d.column.as_deref(), unit),
                other => {
                    return Err(ScenarioError::new(
                        at(d.format.as_ref().map(|f| f.span()).unwrap_or(def.span())),
                        field("format"),
                        format!("unknown format `{other}`; expected `bpftrace-hist` or `samples`"),
                    ))
                }
            }
            .map_err(|e| ScenarioError::new(fname, field("file"), e.to_string()))?;
            Ok(Dist::Empirical(emp))
        }
        other => Err(ScenarioError::new(
            at(d.dist.span()),
            field("dist"),
            format!("unknown distribution `{other}`; expected const, uniform, exp, lognormal, pareto, mixture or empirical"),
        )),
    }
}

fn build_lock(src: &Source, name: &str, def: &Spanned<LockDef>) -> Result<LockSpec, ScenarioError> {
    let d = def.get_ref();
    let kind = match d.kind.get_ref().as_str() {
        "rwsem" => LockKind::Rwsem,
        "mutex" => LockKind::Mutex,
        other => {
            return Err(ScenarioError::new(
                src.locate(Some(d.kind.span())),
                format!("locks.{name}.kind"),
                format!("unknown lock kind `{other}`; expected `rwsem` or `mutex`"),
            ))
        }
    };
    let known = models::locks::policies_of(kind);
    let policy = match &d.policy {
        None => models::locks::default_policy(kind).to_string(),
        Some(p) if known.contains(&p.get_ref().as_str()) => p.get_ref().clone(),
        Some(p) => {
            return Err(ScenarioError::new(
                src.locate(Some(p.span())),
                format!("locks.{name}.policy"),
                format!(
                    "unknown policy `{}` for a {}; expected one of: {}",
                    p.get_ref(),
                    d.kind.get_ref(),
                    known.join(", ")
                ),
            ))
        }
    };
    let options = models::locks::LockOptions {
        spin_on_owner: d.spin_on_owner.unwrap_or(true),
    };
    let line = match (&d.line_transfer, &d.line_local) {
        (None, None) => None,
        (t, l) => {
            let get = |v: &Option<Spanned<String>>, f: &str| match v {
                Some(v) => dur_field(src, &format!("locks.{name}.{f}"), v),
                None => Ok(Dur::ZERO),
            };
            Some((get(t, "line_transfer")?, get(l, "line_local")?))
        }
    };
    let no_word = policy == "none";
    Ok(LockSpec {
        name: name.to_string(),
        kind,
        policy,
        options,
        // The `none` policy removes the lock, and its cache line with it.
        line: line.filter(|_| !no_word),
    })
}

/// Where a node is written (a block: its head).
fn node_origin(n: &Node) -> &Origin {
    match n {
        Node::Leaf(s) => &s.origin,
        Node::Block { head, .. } => &head.origin,
    }
}

/// What the compiler tracks for one task group.
struct Ctx<'a> {
    src: &'a Source,
    doc: &'a Doc,
    group: &'a str,
    /// A lock's first id and its number of instances (1 unless a family).
    lock_ids: &'a IndexMap<String, (LockId, u32)>,
    locks: &'a [LockSpec],
    named_dists: &'a IndexMap<String, DistId>,
    dists: &'a mut Vec<Dist>,
    /// What a `cpu` step's time is multiplied by (1 / `scenario.cpu_speed`),
    /// and the scaled copy made of each distribution a `cpu` step uses.
    cpu_scale: f64,
    cpu_scaled: &'a mut IndexMap<DistId, DistId>,
    stats: &'a mut IndexMap<(Metric, String), StatId>,
    ops: &'a mut IndexMap<String, Vec<Node>>,
    counters: &'a mut IndexMap<String, u32>,
    code: Vec<Instr>,
    origins: Vec<Origin>,
    held: Vec<Option<(LockId, Mode, Origin)>>,
    spans: Vec<Option<(String, Origin)>>,
    calls: Vec<String>,
    depth: u8,
    max_depth: u8,
    /// How many values `self` takes in this program (a group's count, or a
    /// work type's instances, or more if a `key` step sets it higher).
    self_count: u32,
    /// `key next` steps so far, over all programs (one counter each).
    key_counters: &'a mut u32,
    /// Per work type (its index in `[works]`), over all programs: the
    /// first step that grabs it (`mod_delayed_work`, a cancel) and the
    /// first `queue_rcu_work` of it, indexed by `rcu`. The kernel has no
    /// grab of an rcu_work (`queue_rcu_work`: it cannot be cancelled), so
    /// a scenario may not do both.
    work_uses: &'a mut [[Option<Origin>; 2]],
    /// Steps visited so far by the checks and the lowering of this
    /// program, each `call` expanded: calls that each call another twice
    /// expand exponentially, and are refused past [`MAX_EXPANDED_STEPS`].
    visited: u64,
}

/// Most steps a program may expand to (its `call`s inlined), counting
/// each pass of the compiler over it.
const MAX_EXPANDED_STEPS: u64 = 4_000_000;

impl Ctx<'_> {
    /// Counts one step visited at `o`; an error past the expansion limit.
    fn visit(&mut self, o: &Origin) -> Result<(), ScenarioError> {
        self.visited += 1;
        if self.visited > MAX_EXPANDED_STEPS {
            return Err(o.error(format!(
                "`{}`'s program expands to more than {MAX_EXPANDED_STEPS} steps with its `call`s \
                 inlined (operations that call others more than once, nested deep); \
                 use `repeat N` for repeated work",
                self.group
            )));
        }
        Ok(())
    }

    /// Notes that step `o` queues work type `work` as an rcu_work (`rcu`)
    /// or grabs it; an error once one type has both.
    fn work_use(
        &mut self,
        work: u32,
        o: &Origin,
        rcu: bool,
        name: &str,
    ) -> Result<(), ScenarioError> {
        let firsts = &mut self.work_uses[work as usize];
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

    fn stat(&mut self, metric: Metric, subject: String) -> StatId {
        let n = self.stats.len() as StatId;
        *self.stats.entry((metric, subject)).or_insert(n)
    }

    fn dist(&mut self, o: &Origin, r: &DistRef) -> Result<DistId, ScenarioError> {
        match r {
            DistRef::Named(n) => self.named_dists.get(n).copied().ok_or_else(|| {
                undefined(
                    o,
                    "distribution",
                    n,
                    "dists",
                    "defined",
                    self.named_dists.keys(),
                )
            }),
            DistRef::Inline(d) => {
                self.dists.push(d.clone());
                Ok((self.dists.len() - 1) as DistId)
            }
        }
    }

    /// The copy of distribution `d` scaled for `cpu` steps (made once).
    fn cpu_scaled_dist(&mut self, d: DistId) -> DistId {
        if let Some(&s) = self.cpu_scaled.get(&d) {
            return s;
        }
        let s = self.dists.len() as DistId;
        self.dists
            .push(self.dists[d as usize].scaled(self.cpu_scale));
        self.cpu_scaled.insert(d, s);
        s
    }

    fn push(&mut self, i: Instr, o: &Origin) -> u32 {
        self.code.push(i);
        self.origins.push(o.clone());
        (self.code.len() - 1) as u32
    }

    fn op_nodes(&mut self, o: &Origin, name: &str) -> Result<Vec<Node>, ScenarioError> {
        if let Some(n) = self.ops.get(name) {
            return Ok(n.clone());
        }
        let Some(def) = self.doc.ops.get(name) else {
            return Err(undefined(
                o,
                "operation",
                name,
                "ops",
                "defined",
                self.doc.ops.keys(),
            ));
        };
        let nodes = parse_program(self.src, &format!("ops.{name}.steps"), &def.get_ref().steps)?;
        self.ops.insert(name.to_string(), nodes.clone());
        Ok(nodes)
    }

    fn leaf(&mut self, s: &Step) -> Result<(), ScenarioError> {
        let o = &s.origin;
        match &s.kind {
            StepKind::Cpu(d) | StepKind::Sleep(d) => {
                let mut dist = self.dist(o, d)?;
                let sleep = matches!(s.kind, StepKind::Sleep(_));
                if !sleep && self.cpu_scale != 1.0 {
                    dist = self.cpu_scaled_dist(dist);
                }
                let next = self.code.len() as u32 + 1;
                let instr = match self.dists[dist as usize] {
                    Dist::Const(ns) => Instr::DelayConst { ns, sleep, next },
                    Dist::Exp { mean } => Instr::DelayExp { mean, sleep, next },
                    _ => Instr::Delay { dist, sleep, next },
                };
                self.push(instr, o);
            }
            StepKind::Lock(op, name) => self.lock_step(o, *op, name)?,
            StepKind::SpanBegin(name) => {
                if let Some((_, at)) = self.spans.iter().flatten().find(|(n, _)| n == name) {
                    return Err(o.error(format!(
                        "span `{name}` is already open (begun at {})",
                        at.location
                    )));
                }
                let slot = first_free(&mut self.spans);
                self.spans[slot] = Some((name.clone(), o.clone()));
                self.push(Instr::SpanBegin { slot: slot as u8 }, o);
            }
            StepKind::SpanEnd(name) => {
                let Some(slot) = self
                    .spans
                    .iter()
                    .position(|x| matches!(x, Some((n, _)) if n == name))
                else {
                    return Err(o.error(format!(
                        "`span_end {name}` without an open `span_begin {name}`"
                    )));
                };
                self.spans[slot] = None;
                let stat = self.stat(Metric::Span, format!("{name}/{}", self.group));
                self.push(
                    Instr::SpanEnd {
                        stat,
                        slot: slot as u8,
                    },
                    o,
                );
            }
            StepKind::Call(op) => {
                if self.calls.iter().any(|c| c == op) {
                    let chain = format!("{} -> {op}", self.calls.join(" -> "));
                    return Err(o.error(format!("recursive call: {chain}")));
                }
                let nodes = self.op_nodes(o, op)?;
                self.calls.push(op.clone());
                self.nodes(&nodes)?;
                self.calls.pop();
            }
            StepKind::MightResched => {
                self.push(Instr::MightResched, o);
            }
            StepKind::Key(k) => {
                let (lo, hi) = self.key_range(o, k)?;
                let next = matches!(k, KeyExpr::Next(..)).then(|| {
                    *self.key_counters += 1;
                    *self.key_counters - 1
                });
                let span = if matches!(k, KeyExpr::Fixed(_)) {
                    0
                } else {
                    hi - lo
                };
                self.push(Instr::SetKey { lo, span, next }, o);
            }
            StepKind::Charge(g, pages, _) | StepKind::Uncharge(g, pages) => {
                let Some(memcg) = self.doc.memcg.get_index_of(g.as_str()) else {
                    return Err(undefined(
                        o,
                        "memcg",
                        g,
                        "memcg",
                        "defined",
                        self.doc.memcg.keys(),
                    ));
                };
                let (memcg, pages) = (memcg as u32, *pages);
                let instr = if let StepKind::Charge(_, _, gfp) = s.kind {
                    Instr::Charge { memcg, pages, gfp }
                } else {
                    Instr::Uncharge { memcg, pages }
                };
                self.push(instr, o);
            }
            StepKind::QueueWork {
                wq,
                item,
                delay,
                rcu,
            } => {
                let (wq, work, key) = self.work_ref(o, wq, item)?;
                let delay = delay.as_ref().map(|d| self.dist(o, d)).transpose()?;
                if *rcu {
                    self.work_use(work, o, true, &item.name)?;
                }
                self.push(
                    Instr::QueueWork {
                        wq,
                        work,
                        key,
                        delay,
                        rcu: *rcu,
                    },
                    o,
                );
            }
            StepKind::ModDelayedWork { wq, item, delay } => {
                let (wq, work, key) = self.work_ref(o, wq, item)?;
                self.work_use(work, o, false, &item.name)?;
                let delay = self.dist(o, delay)?;
                self.push(
                    Instr::ModDelayedWork {
                        wq,
                        work,
                        key,
                        delay,
                    },
                    o,
                );
            }
            StepKind::CancelDelayedWorkSync { wq, item } => {
                let (wq, work, key) = self.work_ref(o, wq, item)?;
                self.work_use(work, o, false, &item.name)?;
                self.push(Instr::CancelWorkSync { wq, work, key }, o);
            }
            StepKind::Count(name) => {
                let subject = format!("{name}/{}", self.group);
                let n = self.counters.len() as u32;
                let counter = *self.counters.entry(subject).or_insert(n);
                self.push(Instr::Count { counter }, o);
            }
            StepKind::FlushWorkqueue(wq) => {
                let wq = self.wq_index(o, wq)?;
                self.push(Instr::FlushWorkqueue { wq }, o);
            }
            StepKind::Repeat(_)
            | StepKind::RepeatParam(_)
            | StepKind::Loop
            | StepKind::WithProb(_)
            | StepKind::IfWorkBusy { .. }
            | StepKind::End => {
                unreachable!("blocks are nested by parse_program")
            }
        }
        Ok(())
    }

    fn count(&self, o: &Origin, c: &Count) -> Result<u64, ScenarioError> {
        match c {
            Count::Literal(n) => Ok(*n),
            Count::Param(p) => self.param(o, p),
        }
    }

    /// A `key` step's values `lo..hi`; an empty or huge range is an error.
    fn key_range(&self, o: &Origin, k: &KeyExpr) -> Result<(u32, u32), ScenarioError> {
        let (lo, hi) = match k {
            KeyExpr::Fixed(n) => {
                let n = self.count(o, n)?;
                (n, n.saturating_add(1))
            }
            KeyExpr::Random(lo, hi) | KeyExpr::Next(lo, hi) => {
                (self.count(o, lo)?, self.count(o, hi)?)
            }
        };
        if lo >= hi || hi > 1 << 20 {
            return Err(o.error(format!(
                "`key`: the range {lo}..{hi} must be non-empty and within 0..1048576"
            )));
        }
        Ok((lo as u32, hi as u32))
    }

    /// The largest key (plus one) any `key` step of `nodes` can set,
    /// through the operations they call: `[self]` checks use it.
    fn key_bound(&mut self, nodes: &[Node]) -> Result<u32, ScenarioError> {
        let mut bound = 0;
        for n in nodes {
            self.visit(node_origin(n))?;
            bound = bound.max(match n {
                Node::Leaf(s) => match &s.kind {
                    StepKind::Key(k) => self.key_range(&s.origin, k)?.1,
                    StepKind::Call(op) if !self.calls.iter().any(|c| c == op) => {
                        let nodes = self.op_nodes(&s.origin, op)?;
                        self.calls.push(op.clone());
                        let b = self.key_bound(&nodes);
                        self.calls.pop();
                        b?
                    }
                    _ => 0,
                },
                Node::Block { body, .. } => self.key_bound(body)?,
            });
        }
        Ok(bound)
    }

    fn param(&self, o: &Origin, name: &str) -> Result<u64, ScenarioError> {
        self.doc
            .params
            .get(name)
            .map(|v| *v.get_ref())
            .ok_or_else(|| {
                undefined(
                    o,
                    "parameter",
                    name,
                    "params",
                    "defined",
                    self.doc.params.keys(),
                )
            })
    }

    fn wq_index(&self, o: &Origin, name: &str) -> Result<u32, ScenarioError> {
        self.doc
            .workqueues
            .get_index_of(name)
            .map(|i| i as u32)
            .ok_or_else(|| {
                undefined(
                    o,
                    "workqueue",
                    name,
                    "workqueues",
                    "defined",
                    self.doc.workqueues.keys(),
                )
            })
    }

    fn work_ref(
        &self,
        o: &Origin,
        wq: &str,
        item: &WorkRef,
    ) -> Result<(u32, u32, WorkKey), ScenarioError> {
        let wq = self.wq_index(o, wq)?;
        let Some((work, _, def)) = self.doc.works.get_full(item.name.as_str()) else {
            return Err(undefined(
                o,
                "work",
                &item.name,
                "works",
                "defined",
                self.doc.works.keys(),
            ));
        };
        let instances = def.get_ref().instances.as_ref().map_or(1, |n| *n.get_ref());
        let needed = match item.key {
            WorkKey::Index(i) => i + 1,
            WorkKey::SelfIndex => self.self_count,
            WorkKey::Seq => 1,
        };
        if needed > instances {
            return Err(o.error(format!(
                "`{}` has {instances} instance(s) (`instances` in [works.{}]); this step needs {needed}",
                item.name, item.name
            )));
        }
        Ok((wq, work as u32, item.key))
    }

    fn lock_step(&mut self, o: &Origin, op: LockOp, full: &str) -> Result<(), ScenarioError> {
        // `name` or `family[KEY]`.
        let (name, key) = match full.split_once('[') {
            None => (full, None),
            Some((n, rest)) => {
                let k = rest
                    .strip_suffix(']')
                    .ok_or_else(|| o.error(format!("`{full}` lacks its `]`")))?;
                let key = if k == "self" {
                    WorkKey::SelfIndex
                } else {
                    WorkKey::Index(k.parse().map_err(|_| {
                        o.error(format!(
                            "key `{k}` of `{full}` is neither `self` nor a number"
                        ))
                    })?)
                };
                (n, Some(key))
            }
        };
        let Some(&(base, instances)) = self.lock_ids.get(name) else {
            return Err(undefined(
                o,
                "lock",
                name,
                "locks",
                "declared",
                self.lock_ids.keys(),
            ));
        };
        let is_family = self
            .doc
            .locks
            .get(name)
            .is_some_and(|d| d.get_ref().instances.is_some());
        // The lock id the static checks track (a `self` key is one lock of
        // its own), and the id and run-time flag the instruction carries.
        let (lock, instr_lock, dynamic) = match (is_family, key) {
            (false, None) => (base, base, false),
            (false, Some(_)) => {
                return Err(o.error(format!("`{name}` is not a family of locks (no `instances`); drop the `[...]`")))
            }
            (true, None) => {
                return Err(o.error(format!("`{name}` is a family of {instances} locks: name one, `{name}[0]` or `{name}[self]`")))
            }
            (true, Some(WorkKey::Index(i))) if i < instances => (base + i, base + i, false),
            (true, Some(WorkKey::Index(_))) => {
                return Err(o.error(format!("`{full}`: `{name}` has {instances} instances, 0 to {}", instances - 1)))
            }
            (true, Some(WorkKey::SelfIndex)) if self.self_count <= instances => (base | SELF_LOCK, base, true),
            (true, Some(WorkKey::Seq)) => {
                return Err(o.error(format!("`{full}`: a lock is named by a number or `self`, not `seq`")))
            }
            (true, Some(WorkKey::SelfIndex)) => {
                return Err(o.error(format!(
                    "`{full}`: `self` takes {} values here but `{name}` has {instances} instances",
                    self.self_count
                )))
            }
        };
        let kind = self.locks[base as usize].kind;
        if op == LockOp::Downgrade {
            if kind != LockKind::Rwsem {
                return Err(o.error(format!("`downgrade_write {name}`: `{name}` is a mutex")));
            }
            let policy = &self.locks[base as usize].policy;
            if !models::locks::supports_downgrade(kind, policy) {
                return Err(o.error(format!(
                    "`downgrade_write {name}`: policy `{policy}` has no downgrade; use linux, fifo or none"
                )));
            }
            let Some(slot) = self
                .held
                .iter()
                .position(|h| matches!(h, Some((l, _, _)) if *l == lock))
            else {
                return Err(o.error(format!(
                    "`downgrade_write {name}`: `{name}` is not held at this point"
                )));
            };
            let (_, held_mode, at) = self.held[slot].clone().expect("position found it");
            if held_mode != Mode::Write {
                return Err(o.error(format!(
                    "`downgrade_write {name}`: `{name}` is held for read (taken at {})",
                    at.location
                )));
            }
            self.held[slot] = Some((lock, Mode::Read, o.clone()));
            let hold = self.stat(Metric::Hold, format!("{name}/write/{}", self.group));
            self.stat(Metric::Hold, format!("{name}/read/{}", self.group));
            self.push(
                Instr::Downgrade {
                    lock: instr_lock,
                    slot: slot as u8,
                    hold,
                    dynamic,
                },
                o,
            );
            return Ok(());
        }
        let (mode, want) = match op {
            LockOp::Downgrade => unreachable!("handled above"),
            LockOp::DownRead | LockOp::UpRead => (Mode::Read, LockKind::Rwsem),
            LockOp::DownWrite | LockOp::UpWrite => (Mode::Write, LockKind::Rwsem),
            LockOp::MutexLock | LockOp::MutexUnlock => (Mode::Write, LockKind::Mutex),
        };
        if kind != want {
            let (is, use_) = match kind {
                LockKind::Rwsem => ("an rwsem", "down_read/up_read/down_write/up_write"),
                LockKind::Mutex => ("a mutex", "mutex_lock/mutex_unlock"),
            };
            return Err(o.error(format!(
                "`{} {name}`: `{name}` is {is}; use {use_}",
                op.keyword()
            )));
        }
        let label = mode_label(kind, mode);
        if op.is_acquire() {
            if let Some((_, _, at)) = self.held.iter().flatten().find(|(l, _, _)| *l == lock) {
                return Err(o.error(format!(
                    "`{} {name}`: the task already holds `{name}` (taken at {}); it would deadlock on itself",
                    op.keyword(),
                    at.location
                )));
            }
            let slot = first_free(&mut self.held);
            self.held[slot] = Some((lock, mode, o.clone()));
            let site = self.calls.last().map(|op| {
                let prefix = if kind == LockKind::Mutex {
                    String::new()
                } else {
                    format!("{label}_")
                };
                let subject = format!("{name}/{prefix}acquisitions/site/{op}");
                let n = self.counters.len() as u32;
                *self.counters.entry(subject).or_insert(n)
            });
            let wait = self.stat(Metric::Wait, format!("{name}/{label}/{}", self.group));
            self.stat(Metric::Hold, format!("{name}/{label}/{}", self.group));
            self.push(
                Instr::Acquire {
                    lock: instr_lock,
                    mode,
                    wait,
                    slot: slot as u8,
                    dynamic,
                    site,
                },
                o,
            );
        } else {
            let Some(slot) = self
                .held
                .iter()
                .position(|h| matches!(h, Some((l, _, _)) if *l == lock))
            else {
                return Err(o.error(format!(
                    "`{} {name}`: `{name}` is not held at this point",
                    op.keyword()
                )));
            };
            let (_, held_mode, at) = self.held[slot].clone().expect("position found it");
            if held_mode != mode {
                return Err(o.error(format!(
                    "`{} {name}`: `{name}` is held for {} (taken at {})",
                    op.keyword(),
                    held_mode.as_str(),
                    at.location
                )));
            }
            self.held[slot] = None;
            let hold = self.stat(Metric::Hold, format!("{name}/{label}/{}", self.group));
            self.push(
                Instr::Release {
                    lock: instr_lock,
                    mode,
                    hold,
                    slot: slot as u8,
                    dynamic,
                },
                o,
            );
        }
        Ok(())
    }

    fn nodes(&mut self, nodes: &[Node]) -> Result<(), ScenarioError> {
        for n in nodes {
            self.visit(node_origin(n))?;
            match n {
                Node::Leaf(s) => self.leaf(s)?,
                Node::Block { head, body } => self.block(head, body)?,
            }
        }
        Ok(())
    }

    fn block(&mut self, head: &Step, body: &[Node]) -> Result<(), ScenarioError> {
        let o = &head.origin;
        let held_before: Vec<Option<LockId>> =
            self.held.iter().map(|h| h.as_ref().map(|x| x.0)).collect();
        let spans_before: Vec<Option<String>> = self
            .spans
            .iter()
            .map(|h| h.as_ref().map(|x| x.0.clone()))
            .collect();
        let param_count = match &head.kind {
            StepKind::RepeatParam(name) => Some(self.param(o, name)?),
            _ => None,
        };
        match head.kind {
            StepKind::Repeat(_) | StepKind::RepeatParam(_) => {
                let count = match head.kind {
                    StepKind::Repeat(n) => n,
                    _ => param_count.expect("resolved above"),
                };
                let depth = self.depth;
                self.depth += 1;
                self.max_depth = self.max_depth.max(self.depth);
                let begin = self.push(
                    Instr::RepeatBegin {
                        count,
                        end: 0,
                        depth,
                    },
                    o,
                );
                self.nodes(body)?;
                self.push(Instr::RepeatEnd { begin, depth }, o);
                let end = self.code.len() as u32;
                self.code[begin as usize] = Instr::RepeatBegin { count, end, depth };
                self.depth -= 1;
            }
            StepKind::Loop => {
                if !self.advances_time(body)? {
                    return Err(o.error(
                        "this `loop` never advances simulated time: give its body a `cpu` or `sleep` step \
                         (outside `with_prob`) that is not always zero",
                    ));
                }
                let begin = self.code.len() as u32;
                self.nodes(body)?;
                // Loop rotation: when the body starts with a delay (the usual
                // `sleep` between iterations), the back edge is a copy of that
                // delay continuing at the second step, which saves the
                // interpreter one dispatch per pass. Same draws, same order.
                let back = match self.code[begin as usize].clone() {
                    Instr::Delay { dist, sleep, .. } => Instr::Delay {
                        dist,
                        sleep,
                        next: begin + 1,
                    },
                    Instr::DelayConst { ns, sleep, .. } => Instr::DelayConst {
                        ns,
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
                let origin = self.origins[begin as usize].clone();
                self.push(back, &origin);
            }
            StepKind::WithProb(p) => {
                let at = self.push(Instr::WithProb { p, end: 0 }, o);
                self.nodes(body)?;
                let end = self.code.len() as u32;
                self.code[at as usize] = Instr::WithProb { p, end };
            }
            StepKind::IfWorkBusy { ref wq, ref item } => {
                let (wq, work, key) = self.work_ref(o, wq, item)?;
                let at = self.push(
                    Instr::IfWorkBusy {
                        wq,
                        work,
                        key,
                        end: 0,
                    },
                    o,
                );
                self.nodes(body)?;
                let end = self.code.len() as u32;
                self.code[at as usize] = Instr::IfWorkBusy { wq, work, key, end };
            }
            _ => unreachable!("only blocks have bodies"),
        }
        let held_after: Vec<Option<LockId>> =
            self.held.iter().map(|h| h.as_ref().map(|x| x.0)).collect();
        let spans_after: Vec<Option<String>> = self
            .spans
            .iter()
            .map(|h| h.as_ref().map(|x| x.0.clone()))
            .collect();
        if trim(&held_before) != trim(&held_after) {
            let names = |v: &[Option<LockId>]| -> String {
                let n: Vec<&str> = v
                    .iter()
                    .flatten()
                    .map(|l| self.locks[(*l & !SELF_LOCK) as usize].name.as_str())
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
    fn advances_time(&mut self, body: &[Node]) -> Result<bool, ScenarioError> {
        for n in body {
            self.visit(node_origin(n))?;
            let yes = match n {
                Node::Leaf(s) => match &s.kind {
                    StepKind::Cpu(d) | StepKind::Sleep(d) => {
                        let id = self.dist(&s.origin, d)?;
                        let zero = self.dists[id as usize].is_always_zero();
                        if matches!(d, DistRef::Inline(_)) {
                            self.dists.pop();
                        }
                        !zero
                    }
                    StepKind::Call(op) => {
                        if self.calls.iter().any(|c| c == op) {
                            false
                        } else {
                            let nodes = self.op_nodes(&s.origin, op)?;
                            self.calls.push(op.clone());
                            let r = self.advances_time(&nodes);
                            self.calls.pop();
                            r?
                        }
                    }
                    _ => false,
                },
                Node::Block { head, body } => match head.kind {
                    StepKind::Repeat(n) if n > 0 => self.advances_time(body)?,
                    StepKind::RepeatParam(ref p) if self.param(&head.origin, p)? > 0 => {
                        self.advances_time(body)?
                    }
                    StepKind::WithProb(p) if p >= 1.0 => self.advances_time(body)?,
                    // An inner loop never returns: the outer pass never completes.
                    StepKind::Loop => true,
                    _ => false,
                },
            };
            if yes {
                return Ok(true);
            }
        }
        Ok(false)
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

/// The range of `scenario.cpu_speed`: a hundredth to a hundred times the
/// speed the costs were measured at.
const MIN_CPU_SPEED: f64 = 0.01;
const MAX_CPU_SPEED: f64 = 100.0;

/// Compiles one resolved variant.
pub fn compile(src: &Source, doc: &Doc, variant: &str) -> Result<Compiled, ScenarioError> {
    let h = &doc.scenario;
    // Also here: `--set scenario.name=...` comes after the file's check;
    // its value's span names that argument.
    if let Some(p) = super::resolve::file_name_problem(h.name.get_ref()) {
        return Err(ScenarioError::new(
            src.locate(Some(h.name.span())),
            "scenario.name",
            p,
        ));
    }
    let duration = dur_field(src, "scenario.duration", &h.duration)?;
    if duration == Dur::ZERO {
        return Err(ScenarioError::new(
            src.locate(Some(h.duration.span())),
            "scenario.duration",
            "must be more than zero",
        ));
    }
    let window = match &h.window {
        Some(w) => {
            let d = dur_field(src, "scenario.window", w)?;
            if d == Dur::ZERO {
                return Err(ScenarioError::new(
                    src.locate(Some(w.span())),
                    "scenario.window",
                    "must be more than zero",
                ));
            }
            d
        }
        None => sim::stats::DEFAULT_WINDOW,
    };
    // Every series keeps a bin per window: a tiny window on a long run is
    // an error, not an allocation without bound.
    let windows = duration.0.div_ceil(window.0);
    if windows > sim::stats::MAX_WINDOWS {
        let (span, field) = match &h.window {
            Some(w) => (w.span(), "scenario.window"),
            None => (h.duration.span(), "scenario.duration"),
        };
        return Err(ScenarioError::new(
            src.locate(Some(span)),
            field,
            format!(
                "a run of {duration} in windows of {window} has {windows} windows; \
                 expected at most {} (set a wider `scenario.window`)",
                sim::stats::MAX_WINDOWS
            ),
        ));
    }
    let cpus = match &h.cpus {
        None => None,
        Some(v) => match v.get_ref() {
            toml::Value::String(s) if s == "unlimited" => None,
            toml::Value::Integer(n) if (1..=1_000_000).contains(n) => Some(*n as u32),
            other => {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    "scenario.cpus",
                    format!(
                        "expected a number of CPUs (1 or more) or \"unlimited\", found `{other}`"
                    ),
                ))
            }
        },
    };
    let hz = match &h.hz {
        None => 250,
        Some(v) if [100, 250, 300, 1000].contains(v.get_ref()) => *v.get_ref(),
        Some(v) => {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                "scenario.hz",
                format!(
                    "HZ {} is not a kernel choice; expected 100, 250, 300 or 1000",
                    v.get_ref()
                ),
            ))
        }
    };
    let wake_latency = match &h.wake_latency {
        None => None,
        Some(v) => {
            let d = sim::dist::parse_inline(v.get_ref()).map_err(|e| {
                ScenarioError::new(
                    src.locate(Some(v.span())),
                    "scenario.wake_latency",
                    e.to_string(),
                )
            })?;
            (!d.is_always_zero()).then_some(d)
        }
    };
    let (preempt_full, voluntary) = choice(
        src,
        "scenario.preemption",
        "preemption model",
        h.preemption.as_ref(),
        &[
            ("none", (false, false)),
            ("voluntary", (false, true)),
            ("full", (true, true)),
        ],
    )?;
    let timeslice = match &h.timeslice {
        None => None,
        Some(v) => match dur_field(src, "scenario.timeslice", v)? {
            Dur(0) => {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    "scenario.timeslice",
                    "a time slice must be longer than 0",
                ))
            }
            Dur(ns) => Some(ns),
        },
    };
    let cpu_speed = match &h.cpu_speed {
        None => 1.0,
        Some(v) if (MIN_CPU_SPEED..=MAX_CPU_SPEED).contains(v.get_ref()) => *v.get_ref(),
        Some(v) => {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                "scenario.cpu_speed",
                format!(
                    "{} is out of range; expected a speed from {MIN_CPU_SPEED} to {MAX_CPU_SPEED} \
                     (1: the CPUs the costs were measured on, 0.5: half as fast)",
                    v.get_ref()
                ),
            ))
        }
    };
    // Every `cpu` step's distribution is scaled by this at compile time.
    let cpu_scale = 1.0 / cpu_speed;
    let switch_cost = match &h.switch_cost {
        None => 0,
        Some(v) => {
            let Dur(ns) = dur_field(src, "scenario.switch_cost", v)?;
            if ns > 0 && cpus.is_none() {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    "scenario.switch_cost",
                    "a context-switch cost needs a number of CPUs (`scenario.cpus`); \
                     with unlimited CPUs no task is switched out",
                ));
            }
            if ns == 0 {
                0
            } else {
                sim::dist::to_ns(ns as f64 * cpu_scale).max(1)
            }
        }
    };
    let wake_placement = choice(
        src,
        "scenario.wake_placement",
        "wake placement",
        h.wake_placement.as_ref(),
        &[
            ("fifo", WakePlacement::Fifo),
            ("first", WakePlacement::First),
            ("preempt", WakePlacement::Preempt),
            ("eevdf", WakePlacement::Eevdf),
            ("eevdf-6.6", WakePlacement::Eevdf66),
            ("cfs", WakePlacement::Cfs),
        ],
    )?;
    let percpu_runqueues = choice(
        src,
        "scenario.runqueue",
        "run queue",
        h.runqueue.as_ref(),
        &[("shared", false), ("percpu", true)],
    )?;
    if percpu_runqueues {
        // `preempt` picks its victim among all CPUs for a task woken into
        // the shared queue: it is not written per CPU.
        if let Some(v) = h
            .wake_placement
            .as_ref()
            .filter(|_| wake_placement == WakePlacement::Preempt)
        {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                "scenario.wake_placement",
                format!(
                    "wake placement `{}` needs the shared run queue; with runqueue = \"percpu\" use fifo, first, eevdf, eevdf-6.6 or cfs",
                    v.get_ref()
                ),
            ));
        }
    }
    let mut locks = Vec::new();
    let mut lock_ids = IndexMap::new();
    for (name, def) in &doc.locks {
        let spec = build_lock(src, name, def)?;
        match def.get_ref().instances {
            None => {
                lock_ids.insert(name.clone(), (locks.len() as LockId, 1));
                locks.push(spec);
            }
            Some(n) => {
                // A family: one lock per instance, `name[0]` ... `name[n-1]`.
                if n == 0 || n > 1 << 20 {
                    return Err(ScenarioError::new(
                        src.locate(Some(def.span())),
                        format!("locks.{name}.instances"),
                        "expected 1 to 1048576 instances",
                    ));
                }
                lock_ids.insert(name.clone(), (locks.len() as LockId, n));
                for i in 0..n {
                    locks.push(LockSpec {
                        name: format!("{name}[{i}]"),
                        ..spec.clone()
                    });
                }
            }
        }
    }
    // Each instance of a family is a lock of its own: bound their total so
    // that many large families cannot ask for more memory than a machine has.
    if locks.len() > MAX_LOCKS {
        return Err(ScenarioError::new(
            src.name.clone(),
            "locks",
            format!(
                "{} locks in all (each instance of a family counts); at most {MAX_LOCKS}",
                locks.len()
            ),
        ));
    }
    let mut dists = Vec::new();
    let mut named_dists = IndexMap::new();
    for (name, def) in &doc.dists {
        named_dists.insert(name.clone(), dists.len() as DistId);
        dists.push(build_dist(src, name, def)?);
    }
    if doc.tasks.is_empty() {
        return Err(ScenarioError::new(
            src.name.clone(),
            "tasks",
            "no task groups: add at least one `[tasks.NAME]` with `count` and `program`",
        ));
    }
    let mut stats = IndexMap::new();
    let mut ops = IndexMap::new();
    let mut user_counters: IndexMap<String, u32> = IndexMap::new();
    let mut key_counters = 0u32;
    let mut cpu_scaled = IndexMap::new();
    let mut groups = Vec::new();
    // Task groups, then one program per work type (run by kworkers).
    struct Prog<'d> {
        field: String,
        name: &'d str,
        items: &'d [Spanned<String>],
        count: u32,
        self_count: u32,
        span: std::ops::Range<usize>,
        class: Option<&'d Spanned<String>>,
        nice: Option<&'d Spanned<i64>>,
    }
    let mut progs: Vec<Prog> = doc
        .tasks
        .iter()
        .map(|(n, d)| Prog {
            field: format!("tasks.{n}"),
            name: n,
            items: &d.get_ref().program,
            count: *d.get_ref().count.get_ref(),
            self_count: *d.get_ref().count.get_ref(),
            span: d.span(),
            class: d.get_ref().class.as_ref(),
            nice: d.get_ref().nice.as_ref(),
        })
        .collect();
    let mut works = Vec::new();
    let mut offset = 0u32;
    for (n, d) in &doc.works {
        if doc.tasks.contains_key(n) {
            return Err(ScenarioError::new(
                src.locate(Some(d.span())),
                format!("works.{n}"),
                format!("`{n}` is also a task group; give the work type another name"),
            ));
        }
        let instances = d.get_ref().instances.as_ref().map_or(1, |i| *i.get_ref());
        works.push(WorkSpec {
            name: n.clone(),
            group: progs.len() as u32,
            instances,
            offset,
        });
        offset = offset.checked_add(instances).ok_or_else(|| {
            ScenarioError::new(
                src.locate(Some(d.span())),
                format!("works.{n}.instances"),
                "too many instances",
            )
        })?;
        progs.push(Prog {
            field: format!("works.{n}"),
            name: n,
            items: &d.get_ref().program,
            count: 0,
            self_count: instances,
            span: d.span(),
            class: None,
            nice: None,
        });
    }
    let mut work_uses = vec![[None, None]; doc.works.len()];
    for pr in &progs {
        let gname = pr.name;
        let nodes = parse_program(src, &format!("{}.program", pr.field), pr.items)?;
        let mut ctx = Ctx {
            src,
            doc,
            group: gname,
            lock_ids: &lock_ids,
            locks: &locks,
            named_dists: &named_dists,
            dists: &mut dists,
            cpu_scale,
            cpu_scaled: &mut cpu_scaled,
            stats: &mut stats,
            ops: &mut ops,
            counters: &mut user_counters,
            code: Vec::new(),
            origins: Vec::new(),
            held: Vec::new(),
            spans: Vec::new(),
            calls: Vec::new(),
            depth: 0,
            max_depth: 0,
            self_count: pr.self_count,
            key_counters: &mut key_counters,
            work_uses: &mut work_uses,
            visited: 0,
        };
        ctx.self_count = ctx.self_count.max(ctx.key_bound(&nodes)?);
        ctx.nodes(&nodes)?;
        if let Some((l, _, at)) = ctx.held.iter().flatten().next() {
            return Err(at.error(format!(
                "`{gname}` ends its program still holding `{}` (taken here)",
                locks[(*l & !SELF_LOCK) as usize].name
            )));
        }
        if let Some((n, at)) = ctx.spans.iter().flatten().next() {
            return Err(at.error(format!(
                "`{gname}` ends its program with span `{n}` still open"
            )));
        }
        let end_origin = Origin {
            location: src.locate(Some(pr.span.clone())),
            field: format!("{}.program", pr.field),
        };
        ctx.push(Instr::Exit, &end_origin);
        let (hold_slots, span_slots) = (ctx.held.len(), ctx.spans.len());
        if hold_slots > 255 || span_slots > 255 || ctx.max_depth == u8::MAX {
            return Err(end_origin.error("more than 255 nested locks, spans or repeats"));
        }
        let rt = match pr.class {
            None => false,
            Some(c) => match c.get_ref().as_str() {
                "normal" => false,
                "rt" => true,
                other => {
                    return Err(ScenarioError::new(
                        src.locate(Some(c.span())),
                        format!("{}.class", pr.field),
                        format!("unknown class `{other}`; expected `normal` or `rt`"),
                    ))
                }
            },
        };
        let weight = match pr.nice {
            None => models::sched::NICE_0_WEIGHT,
            Some(n) => {
                let nice = *n.get_ref();
                let err = |msg: String| {
                    ScenarioError::new(
                        src.locate(Some(n.span())),
                        format!("{}.nice", pr.field),
                        msg,
                    )
                };
                if !(-20..=19).contains(&nice) {
                    return Err(err(format!(
                        "nice {nice} is out of range; nice levels run from -20 to 19"
                    )));
                }
                if rt && nice != 0 {
                    return Err(err("an `rt` task has no nice level (the RT class does not weigh tasks); leave `nice` out".into()));
                }
                let weighs = cpus.is_some()
                    && matches!(
                        wake_placement,
                        WakePlacement::Eevdf | WakePlacement::Eevdf66
                    );
                if nice != 0 && !weighs {
                    return Err(err(format!(
                        "nice {nice} needs a fair order that weighs tasks: a limited `scenario.cpus` and `scenario.wake_placement = \"eevdf\"` or `\"eevdf-6.6\"`"
                    )));
                }
                models::sched::nice_to_weight(nice as i32)
            }
        };
        groups.push(GroupProg {
            rt,
            weight,
            name: gname.to_string(),
            count: pr.count,
            code: ctx.code,
            origins: ctx.origins,
            hold_slots: hold_slots as u8,
            span_slots: span_slots as u8,
            repeat_slots: ctx.max_depth,
        });
    }
    let task_groups = doc.tasks.len() as u32;
    let mut workqueues = Vec::new();
    for (name, def) in &doc.workqueues {
        use models::workqueue::{wq_clamp_max_active, WqKind};
        let d = def.get_ref();
        let kind = match d.kind.as_ref().map(|k| (k.get_ref().as_str(), k.span())) {
            None | Some(("percpu", _)) => WqKind::PerCpu {
                cpus: cpus.unwrap_or(1),
            },
            Some(("unbound", _)) => WqKind::Unbound,
            Some(("ordered", _)) => WqKind::Ordered,
            Some((other, span)) => {
                return Err(ScenarioError::new(
                    src.locate(Some(span)),
                    format!("workqueues.{name}.kind"),
                    format!("unknown kind `{other}`; expected percpu, unbound or ordered"),
                ))
            }
        };
        let max_active = match kind {
            WqKind::Ordered => 1,
            _ => wq_clamp_max_active(d.max_active.unwrap_or(0)),
        };
        let limit = match kind {
            WqKind::PerCpu { cpus } => max_active.saturating_mul(cpus),
            _ => max_active,
        };
        let workers = match &d.workers {
            Some(w) if *w.get_ref() == 0 => {
                return Err(ScenarioError::new(
                    src.locate(Some(w.span())),
                    format!("workqueues.{name}.workers"),
                    "at least one kworker is needed",
                ))
            }
            Some(w) => *w.get_ref(),
            None => limit.min(64),
        };
        let create_latency = match &d.create_latency {
            Some(v) => sim::dist::parse_inline(v.get_ref()).map_err(|e| {
                ScenarioError::new(
                    src.locate(Some(v.span())),
                    format!("workqueues.{name}.create_latency"),
                    e.to_string(),
                )
            })?,
            None => Dist::constant(Dur::ZERO),
        };
        workqueues.push(WorkqueueSpec {
            name: name.clone(),
            kind,
            max_active,
            workers,
            warm_workers: d.warm_workers.unwrap_or(workers).min(workers),
            create_latency,
        });
    }
    let mut memcgs = Vec::new();
    for (name, def) in &doc.memcg {
        memcgs.push(build_memcg(src, doc, name, def)?);
    }
    let stats = stats
        .into_iter()
        .map(|((metric, subject), _)| StatSpec { metric, subject })
        .collect();
    let c = Compiled {
        experiment: h.name.get_ref().clone(),
        variant: variant.to_string(),
        duration,
        cpus,
        window,
        seed: h.seed,
        hz,
        wake_latency,
        preempt_full,
        timeslice,
        switch_cost,
        wake_placement,
        percpu_runqueues,
        voluntary,
        locks,
        dists,
        stats,
        groups,
        memcgs,
        workqueues,
        works,
        counters: user_counters.into_keys().collect(),
        task_groups,
        key_counters,
    };
    // Every task, kworker, work item (its timer) and memcg (its reaper and
    // its release tick) takes one slot of the event queue.
    let (total, kworkers, items) = (c.tasks(), c.kworkers(), c.work_items());
    let max = sim::SlotQueue::<(), 20>::MAX_SLOTS as u64;
    if total > max {
        return Err(ScenarioError::new(
            src.name.clone(),
            "tasks",
            format!("{total} tasks in all; a run holds at most {max}"),
        ));
    }
    if total + kworkers + items + 2 * c.memcgs.len() as u64 > max {
        return Err(ScenarioError::new(
            src.name.clone(),
            "works",
            format!(
                "{total} tasks, {kworkers} kworkers and {items} work items in all; \
                 a run holds at most {max} of them"
            ),
        ));
    }
    Ok(c)
}

fn build_memcg(
    src: &Source,
    doc: &Doc,
    name: &str,
    def: &Spanned<super::doc::MemcgDef>,
) -> Result<MemcgSpec, ScenarioError> {
    let d = def.get_ref();
    let field = |f: &str| format!("memcg.{name}.{f}");
    let pages = |v: &Spanned<String>, f: &str| {
        super::steps::parse_pages(v.get_ref())
            .map_err(|e| ScenarioError::new(src.locate(Some(v.span())), field(f), e))
    };
    let max = pages(&d.max, "max")?;
    let high = d.high.as_ref().map(|h| pages(h, "high")).transpose()?;
    let initial = d
        .initial
        .as_ref()
        .map(|h| pages(h, "initial"))
        .transpose()?
        .unwrap_or(0);
    let reclaim = match &d.reclaim {
        Some(r) => sim::dist::parse_inline(r.get_ref()).map_err(|e| {
            ScenarioError::new(src.locate(Some(r.span())), field("reclaim"), e.to_string())
        })?,
        None => Dist::constant(Dur::from_ms(1)),
    };
    let probability = |p: &Option<Spanned<f64>>, f: &str, default: f64| match p {
        Some(p) if (0.0..=1.0).contains(p.get_ref()) => Ok(*p.get_ref()),
        Some(p) => Err(ScenarioError::new(
            src.locate(Some(p.span())),
            field(f),
            "expected a probability between 0 and 1",
        )),
        None => Ok(default),
    };
    let reclaim_success = probability(&d.reclaim_success, "reclaim_success", 1.0)?;
    let reclaim_kept = probability(&d.reclaim_kept, "reclaim_kept", 1.0)?;
    let reclaim_frees = match &d.reclaim_frees {
        None => ReclaimFrees::AtEnd,
        Some(v) => match v.get_ref().as_str() {
            "at_end" => ReclaimFrees::AtEnd,
            "during" => ReclaimFrees::During,
            other => {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    field("reclaim_frees"),
                    format!("expected `at_end` or `during`, not `{other}`"),
                ))
            }
        },
    };
    if let (ReclaimFrees::During, Some(k)) = (reclaim_frees, &d.reclaim_kept) {
        if *k.get_ref() < 1.0 {
            return Err(ScenarioError::new(
                src.locate(Some(k.span())),
                field("reclaim_kept"),
                "with `reclaim_frees = \"during\"` the memcg's own tasks take the freed pages: \
                 `reclaim_kept` (chargers outside the scenario) must stay 1",
            ));
        }
    }
    let mut oom_victims = Vec::new();
    for v in &d.oom_victims {
        match doc.tasks.get_index_of(v.get_ref().as_str()) {
            Some(i) => oom_victims.push(i as u32),
            None => {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    field("oom_victims"),
                    format!("no task group `{}`", v.get_ref()),
                ))
            }
        }
    }
    Ok(MemcgSpec {
        name: name.to_string(),
        max,
        high,
        initial,
        reclaim,
        reclaim_success,
        reclaim_kept,
        reclaim_pages: d.reclaim_pages.as_ref().map_or(32, |p| *p.get_ref()),
        reclaim_frees,
        release_rate: match &d.release_rate {
            Some(r) if *r.get_ref() >= 0.0 && r.get_ref().is_finite() => *r.get_ref(),
            Some(r) => {
                return Err(ScenarioError::new(
                    src.locate(Some(r.span())),
                    field("release_rate"),
                    "expected pages per second, 0 or more",
                ))
            }
            None => 0.0,
        },
        oom_victims,
    })
}

/// The error for a name its table does not define:
/// "no KIND `NAME` in [TABLE]; defined: a, b" (or "none").
fn undefined<K: AsRef<str>>(
    o: &Origin,
    kind: &str,
    name: &str,
    table: &str,
    verb: &str,
    known: impl Iterator<Item = K>,
) -> ScenarioError {
    let known: Vec<K> = known.collect();
    let list = if known.is_empty() {
        "none".to_string()
    } else {
        known
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(", ")
    };
    o.error(format!("no {kind} `{name}` in [{table}]; {verb}: {list}"))
}
