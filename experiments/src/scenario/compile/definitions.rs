//! Pass 2, the definitions: the tables a program's steps refer to, each
//! checked and built on its own: locks (families expanded to one lock per
//! instance), distributions, the programs to compile (task groups, then
//! one per work type, with the work types' item ids), and after the
//! programs a group's scheduling class and weight, the workqueues and the
//! memcgs.

use super::dur_field;
use super::settings::Settings;
use crate::program::ReclaimFrees;
use crate::program::{DistId, GroupId, LineId, LineSpec, LockId, LockSpec, MemcgId, MemcgSpec};
use crate::program::{WakePlacement, WorkId, WorkSpec, WorkTypeId, WorkqueueSpec, WqId};
use crate::scenario::doc::{DistDef, Doc, LineDef, LockDef, MemcgDef};
use crate::scenario::error::ScenarioError;
use crate::scenario::source::{Source, MAX_DATA_FILE};
use crate::scenario::steps::parse_pages;
use indexmap::IndexMap;
use models::LockKind;
use sim::dist::{Dist, Empirical};
use sim::Dur;
use toml::Spanned;
use typed_index_collections::TiVec;

/// Most locks a scenario may have, family instances included.
const MAX_LOCKS: usize = 1 << 22;

/// The scenario's locks, a family's instances one lock each.
pub(super) struct Locks {
    pub specs: TiVec<LockId, LockSpec>,
    /// By name: the first id and the number of instances (1 unless a
    /// family).
    pub ids: IndexMap<String, (LockId, u32)>,
}

/// Builds `[locks]`.
pub(super) fn locks(src: &Source, doc: &Doc) -> Result<Locks, ScenarioError> {
    let mut locks = TiVec::new();
    let mut lock_ids = IndexMap::new();
    for (name, def) in &doc.locks {
        let spec = build_lock(src, name, def)?;
        match def.get_ref().instances {
            None => {
                lock_ids.insert(name.clone(), (locks.next_key(), 1));
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
                lock_ids.insert(name.clone(), (locks.next_key(), n));
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
    serialisations(src, doc, &mut locks, &lock_ids)?;
    Ok(Locks {
        specs: locks,
        ids: lock_ids,
    })
}

/// A seqcount's `lock` (R86): the lock its writers hold, a single lock
/// for a single seqcount, a family of as many instances for a family
/// (instance i's writers hold instance i).
fn serialisations(
    src: &Source,
    doc: &Doc,
    locks: &mut TiVec<LockId, LockSpec>,
    ids: &IndexMap<String, (LockId, u32)>,
) -> Result<(), ScenarioError> {
    for (name, def) in &doc.locks {
        let Some(by) = &def.get_ref().lock else {
            continue;
        };
        let field = format!("locks.{name}.lock");
        let at = src.locate(Some(by.span()));
        let (base, n) = ids[name.as_str()];
        if locks[base].kind != LockKind::Seqcount {
            return Err(ScenarioError::new(
                at,
                field,
                format!(
                    "only a seqcount names the lock that serialises its writers; `{name}` is a {}",
                    locks[base].kind.as_str()
                ),
            ));
        }
        let other = by.get_ref();
        let Some(&(obase, on)) = ids.get(other.as_str()) else {
            let known: Vec<&str> = ids.keys().map(String::as_str).collect();
            return Err(ScenarioError::new(
                at,
                field,
                format!(
                    "no lock `{other}` in [locks]; defined: {}",
                    known.join(", ")
                ),
            ));
        };
        let family = |l: &str| doc.locks[l].get_ref().instances.is_some();
        if obase == base
            || !matches!(
                locks[obase].kind,
                LockKind::Rwsem | LockKind::Mutex | LockKind::Spinlock
            )
        {
            return Err(ScenarioError::new(
                at,
                field,
                format!("`{other}` cannot serialise a seqcount's writers: name a spinlock, mutex or rwsem"),
            ));
        }
        if family(name) != family(other) || n != on {
            return Err(ScenarioError::new(
                at,
                field,
                format!(
                    "`{name}` has {n} instance(s) and `{other}` {on}: a family's writers hold the instance of the same index, a single seqcount's a single lock"
                ),
            ));
        }
        for i in 0..n {
            locks[LockId(base.0 + i)].serialised_by = Some(LockId(obase.0 + i));
        }
    }
    Ok(())
}

/// Most data lines a scenario may have, family instances included.
const MAX_LINES: usize = 1 << 22;

/// The scenario's data cache lines, a family's instances one line each.
pub(super) struct Lines {
    pub specs: TiVec<LineId, LineSpec>,
    /// By name: the first id and the number of instances (1 unless a
    /// family), and whether it is a family.
    pub ids: IndexMap<String, (LineId, u32, bool)>,
}

/// Builds `[lines]`.
pub(super) fn lines(src: &Source, doc: &Doc) -> Result<Lines, ScenarioError> {
    let mut specs: TiVec<LineId, LineSpec> = TiVec::new();
    let mut ids = IndexMap::new();
    for (name, def) in &doc.lines {
        let flat = line_costs(src, name, def.get_ref())?;
        match &def.get_ref().instances {
            None => {
                ids.insert(name.clone(), (specs.next_key(), 1, false));
                specs.push(LineSpec {
                    name: name.clone(),
                    flat,
                });
            }
            Some(n) => {
                let n = *n.get_ref();
                if n == 0 || n > 1 << 20 {
                    let span = def.get_ref().instances.as_ref().map(Spanned::span);
                    return Err(ScenarioError::new(
                        src.locate(span),
                        format!("lines.{name}.instances"),
                        "expected 1 to 1048576 instances",
                    ));
                }
                ids.insert(name.clone(), (specs.next_key(), n, true));
                for i in 0..n {
                    specs.push(LineSpec {
                        name: format!("{name}[{i}]"),
                        flat,
                    });
                }
            }
        }
    }
    if specs.len() > MAX_LINES {
        return Err(ScenarioError::new(
            src.name.clone(),
            "lines",
            format!(
                "{} lines in all (each instance of a family counts); at most {MAX_LINES}",
                specs.len()
            ),
        ));
    }
    Ok(Lines { specs, ids })
}

/// A line's own flat costs (`transfer`, `local`), both or neither.
fn line_costs(src: &Source, name: &str, d: &LineDef) -> Result<Option<(Dur, Dur)>, ScenarioError> {
    let get = |v: &Spanned<String>, f: &str| dur_field(src, &format!("lines.{name}.{f}"), v);
    match (&d.transfer, &d.local) {
        (None, None) => Ok(None),
        (Some(t), Some(l)) => Ok(Some((get(t, "transfer")?, get(l, "local")?))),
        (Some(v), None) | (None, Some(v)) => {
            let (has, lacks) = if d.transfer.is_some() {
                ("transfer", "local")
            } else {
                ("local", "transfer")
            };
            Err(ScenarioError::new(
                src.locate(Some(v.span())),
                format!("lines.{name}.{has}"),
                format!(
                    "a line's own costs need both `transfer` and `local`; `{lacks}` is missing"
                ),
            ))
        }
    }
}

/// The scenario's distributions: the named ones first (inline ones and
/// scaled copies are added as the programs are compiled).
pub(super) struct Dists {
    pub dists: TiVec<DistId, Dist>,
    pub named: IndexMap<String, DistId>,
}

/// Builds `[dists]`.
pub(super) fn dists(src: &Source, doc: &Doc) -> Result<Dists, ScenarioError> {
    let mut dists = TiVec::new();
    let mut named_dists = IndexMap::new();
    for (name, def) in &doc.dists {
        let id = dists.push_and_get_key(build_dist(src, name, def)?);
        named_dists.insert(name.clone(), id);
    }
    Ok(Dists {
        dists,
        named: named_dists,
    })
}

/// A program to compile: a task group's, or a work type's (run by
/// kworkers).
pub(super) struct Prog<'d> {
    /// `tasks.NAME` or `works.NAME`.
    pub field: String,
    pub name: &'d str,
    pub items: &'d [Spanned<String>],
    /// A task group's `exit` steps (none for a work type).
    pub exit: &'d [Spanned<String>],
    /// Tasks (0 for a work type).
    pub count: u32,
    /// How many values `self` takes: a group's count, a work type's
    /// instances.
    pub self_count: u32,
    /// The index of the group's process among the scenario's (in the
    /// order groups first name them); none for a work type (a kworker).
    pub process: Option<u32>,
    pub span: std::ops::Range<usize>,
    pub class: Option<&'d Spanned<String>>,
    pub nice: Option<&'d Spanned<i64>>,
}

/// The programs to compile, by their ids, and the work types.
type Programs<'d> = (TiVec<GroupId, Prog<'d>>, TiVec<WorkTypeId, WorkSpec>);

/// The task groups' programs, then one per work type, and the work types
/// with their item ids.
pub(super) fn programs<'d>(src: &Source, doc: &'d Doc) -> Result<Programs<'d>, ScenarioError> {
    if doc.tasks.is_empty() {
        return Err(ScenarioError::new(
            src.name.clone(),
            "tasks",
            "no task groups: add at least one `[tasks.NAME]` with `count` and `program`",
        ));
    }
    let mut processes: Vec<&str> = Vec::new();
    let mut progs: TiVec<GroupId, Prog> = doc
        .tasks
        .iter()
        .map(|(n, d)| Prog {
            field: format!("tasks.{n}"),
            name: n,
            items: &d.get_ref().program,
            exit: &d.get_ref().exit,
            count: *d.get_ref().count.get_ref(),
            self_count: *d.get_ref().count.get_ref(),
            process: Some(process_index(
                &mut processes,
                d.get_ref()
                    .process
                    .as_ref()
                    .map_or(n.as_str(), |p| p.get_ref()),
            )),
            span: d.span(),
            class: d.get_ref().class.as_ref(),
            nice: d.get_ref().nice.as_ref(),
        })
        .collect();
    let mut works = TiVec::new();
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
            group: progs.next_key(),
            instances,
            first_item: WorkId(offset),
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
            exit: &[],
            count: 0,
            self_count: instances,
            process: None,
            span: d.span(),
            class: None,
            nice: None,
        });
    }
    Ok((progs, works))
}

/// The index of process `name` in `processes`, added at the end if new.
fn process_index<'d>(processes: &mut Vec<&'d str>, name: &'d str) -> u32 {
    let i = processes
        .iter()
        .position(|p| *p == name)
        .unwrap_or_else(|| {
            processes.push(name);
            processes.len() - 1
        });
    i as u32
}

/// A program's scheduling class (`rt`) and its load weight in the fair
/// class (from `nice`).
pub(super) fn class(
    src: &Source,
    pr: &Prog,
    settings: &Settings,
) -> Result<(bool, u32), ScenarioError> {
    let (cpus, wake_placement) = (settings.cpus, settings.wake_placement);
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
    Ok((rt, weight))
}

/// Builds `[workqueues]`; a per-CPU workqueue has a pool per CPU.
pub(super) fn workqueues(
    src: &Source,
    doc: &Doc,
    cpus: Option<u32>,
) -> Result<TiVec<WqId, WorkqueueSpec>, ScenarioError> {
    let mut workqueues = TiVec::new();
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
    Ok(workqueues)
}

/// Builds `[memcg]`.
pub(super) fn memcgs(
    src: &Source,
    doc: &Doc,
    locks: &Locks,
) -> Result<TiVec<MemcgId, MemcgSpec>, ScenarioError> {
    let mut memcgs = TiVec::new();
    for (name, def) in &doc.memcg {
        memcgs.push(build_memcg(src, doc, locks, name, def)?);
    }
    Ok(memcgs)
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
    crate::scenario::source::read_text(path, MAX_DATA_FILE)
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
    cost_range(src, name, def)?;
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

/// A `const` cost's cited range (`range = ["LOW", "HIGH"]` with its
/// `source`): checked here, varied by `convoy band`. The file's value lies
/// in it; a `--set` value may lie outside (a what-if past the sources).
fn cost_range(src: &Source, name: &str, def: &Spanned<DistDef>) -> Result<(), ScenarioError> {
    let d = def.get_ref();
    let field = |f: &str| format!("dists.{name}.{f}");
    let Some(range) = &d.range else {
        if let Some(s) = &d.source {
            return Err(ScenarioError::new(
                src.locate(Some(s.span())),
                field("source"),
                "`source` cites a `range`; give `range = [\"LOW\", \"HIGH\"]` beside it or drop it",
            ));
        }
        return Ok(());
    };
    let at = src.locate(Some(range.span()));
    if d.dist.get_ref() != "const" {
        return Err(ScenarioError::new(
            at,
            field("range"),
            format!("a range is for a `const` cost; this one is `{}`, whose own parameters say its spread", d.dist.get_ref()),
        ));
    }
    let [lo, hi] = range.get_ref().as_slice() else {
        return Err(ScenarioError::new(
            at,
            field("range"),
            "expected two durations, `[\"LOW\", \"HIGH\"]`",
        ));
    };
    let (low, high) = (
        dur_field(src, &field("range"), lo)?,
        dur_field(src, &field("range"), hi)?,
    );
    if low > high {
        return Err(ScenarioError::new(
            src.locate(Some(hi.span())),
            field("range"),
            format!("the range's high end {high} is below its low end {low}"),
        ));
    }
    if d.source
        .as_ref()
        .is_none_or(|s| s.get_ref().trim().is_empty())
    {
        return Err(ScenarioError::new(
            at,
            field("source"),
            "a range needs its `source`: where its ends come from",
        ));
    }
    if let Some(v) = &d.value {
        let value = dur_field(src, &field("value"), v)?;
        if !(low..=high).contains(&value) && !src.from_command_line(&v.span()) {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                field("value"),
                format!("{value} lies outside its cited range {low} .. {high}"),
            ));
        }
    }
    Ok(())
}

fn build_lock(src: &Source, name: &str, def: &Spanned<LockDef>) -> Result<LockSpec, ScenarioError> {
    let d = def.get_ref();
    let Some(kind) = LockKind::by_name(d.kind.get_ref()) else {
        let kinds: Vec<&str> = LockKind::ALL.iter().map(|k| k.as_str()).collect();
        return Err(ScenarioError::new(
            src.locate(Some(d.kind.span())),
            format!("locks.{name}.kind"),
            format!(
                "unknown lock kind `{}`; expected one of: {}",
                d.kind.get_ref(),
                kinds.join(", ")
            ),
        ));
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
    let grace_period = match &d.grace_period {
        Some(v) if kind != LockKind::PercpuRwsem => {
            return Err(ScenarioError::new(
                src.locate(Some(v.span())),
                format!("locks.{name}.grace_period"),
                format!(
                    "only a percpu_rw_semaphore waits for a grace period; `{name}` is a {}",
                    kind.as_str()
                ),
            ))
        }
        // R85: the world's RCU model, unless the lock gives a length.
        None => None,
        Some(v) if v.get_ref() == "rcu" => None,
        Some(v) => {
            let g = dur_field(src, &format!("locks.{name}.grace_period"), v)?;
            if g == Dur::ZERO {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    format!("locks.{name}.grace_period"),
                    "a grace period is more than zero",
                ));
            }
            Some(g)
        }
    };
    let options = models::locks::LockOptions {
        spin_on_owner: d.spin_on_owner.unwrap_or(true),
        grace_period,
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
        serialised_by: None,
    })
}

fn build_memcg(
    src: &Source,
    doc: &Doc,
    locks: &Locks,
    name: &str,
    def: &Spanned<MemcgDef>,
) -> Result<MemcgSpec, ScenarioError> {
    let d = def.get_ref();
    let field = |f: &str| format!("memcg.{name}.{f}");
    let pages = |v: &Spanned<String>, f: &str| {
        parse_pages(v.get_ref())
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
            Some(i) => oom_victims.push(GroupId::from(i)),
            None => {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    field("oom_victims"),
                    format!("no task group `{}`", v.get_ref()),
                ))
            }
        }
    }
    let mmap_lock = match &d.mmap_lock {
        None => None,
        Some(v) => {
            let found = locks.ids.get(v.get_ref().as_str()).copied();
            let linux_rwsem = found.is_some_and(|(id, _)| {
                let s = &locks.specs[id];
                s.kind == LockKind::Rwsem && s.policy == "linux"
            });
            if !linux_rwsem {
                return Err(ScenarioError::new(
                    src.locate(Some(v.span())),
                    field("mmap_lock"),
                    format!(
                        "`{}` is not a lock of kind rwsem with the linux policy; the OOM reaper trylocks a victim's mmap_lock, an rw semaphore",
                        v.get_ref()
                    ),
                ));
            }
            found
        }
    };
    Ok(MemcgSpec {
        mmap_lock,
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
        oom_group: d.oom_group.as_ref().is_some_and(|g| *g.get_ref()),
    })
}
