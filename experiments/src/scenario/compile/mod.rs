//! Compiling one resolved variant to the program the world runs
//! ([`Compiled`]), with the static checks that catch mistakes before the
//! run starts. Each error is reported at the field or step that breaks it.
//!
//! The passes, in order (one module each):
//! 1. `machine` and `settings`: the `[machine]` table (a profile and its
//!    overrides), then the `[scenario]` table over the machine's
//!    defaults;
//! 2. `definitions`: locks (a family is one lock per instance), data
//!    lines (likewise), distributions, and the programs to compile: the
//!    task groups', then
//!    one per work type;
//!
//! then per program, after its steps are parsed ([`parse_program`]):
//! 3. `expand`: the operations it calls, parsed once per scenario; its
//!    `call`s inlined (none recursive, the expansion bounded) and the
//!    largest key its `key` steps set;
//! 4. `names`: every lock, line, distribution, parameter, memcg,
//!    workqueue and work a step names exists, and the step fits it (`down_read` needs an
//!    rwsem, `mutex_lock` a mutex, `[self]` stays within a family);
//! 5. `checks`: a task never takes a lock it already holds, never
//!    releases one it does not hold or in the wrong mode, and ends holding
//!    nothing and with no span open; every block (`repeat`, `loop`,
//!    `with_prob`, `if_work_busy`) leaves the locks held and the spans
//!    open as it found them, in the same slots, so one linear pass decides
//!    what is held at every step; every `loop` advances simulated time on
//!    each pass; no work type is both an rcu_work and grabbed;
//! 6. `layout`: the slots each task keeps (held locks, open spans,
//!    `repeat` counters), at most 255 of each;
//! 7. `lower`: the flat instruction list, with statistics, counters and
//!    key counters numbered as the steps come;
//!
//! then the program's scheduling class and weight (`definitions`); and
//! after all programs, the workqueues and memcgs (`definitions`) and the
//! event-queue slots the run needs (`layout`).

mod checks;
mod definitions;
mod expand;
mod layout;
mod lower;
mod machine;
mod names;
mod settings;

use super::doc::Doc;
use super::error::ScenarioError;
use super::source::Source;
use super::steps::{self, parse_program, Count, KeyExpr};
use crate::program::{Compiled, DistId, GroupId, GroupProg, Origin, WorkTypeId};
use indexmap::IndexMap;
use sim::time::parse_duration;
use sim::Dur;
use toml::Spanned;
use typed_index_collections::{ti_vec, TiVec};

pub use machine::{unknown_profile, DEFAULT_PROFILE, IDEAL};

/// Compiles one resolved variant.
pub fn compile(src: &Source, doc: &Doc, variant: &str) -> Result<Compiled, ScenarioError> {
    let settings = settings::settings(src, doc)?;
    let locks = definitions::locks(src, doc)?;
    let lines = definitions::lines(src, doc)?;
    let dists = definitions::dists(src, doc)?;
    let (programs, works) = definitions::programs(src, doc)?;
    let mut shared = Shared {
        ops: expand::Ops::new(),
        dists,
        cpu_scaled: IndexMap::new(),
        work_uses: ti_vec![[None, None]; doc.works.len()],
        tables: lower::Tables::default(),
    };
    let groups = (programs.iter())
        .map(|pr| program(src, doc, &settings, (&locks, &lines), pr, &mut shared))
        .collect::<Result<TiVec<GroupId, _>, _>>()?;
    let workqueues = definitions::workqueues(src, doc, settings.cpus)?;
    let memcgs = definitions::memcgs(src, doc, &locks)?;
    let (stats, counters, key_counters) = shared.tables.finish();
    let c = Compiled {
        experiment: doc.scenario.name.get_ref().clone(),
        variant: variant.to_string(),
        duration: settings.duration,
        cpus: settings.cpus,
        window: settings.window,
        seed: doc.scenario.seed,
        hz: settings.hz,
        wake_latency: settings.wake_latency,
        preempt_full: settings.preempt_full,
        timeslice: settings.timeslice,
        switch_cost: settings.switch_cost,
        machine: settings.machine,
        wake_placement: settings.wake_placement,
        percpu_runqueues: settings.percpu_runqueues,
        hung_task: settings.hung_task,
        voluntary: settings.voluntary,
        atomic_holds: (locks.specs.iter()).any(|l| l.kind.disables_preemption(models::Mode::Write)),
        locks: locks.specs,
        lines: lines.specs,
        dists: shared.dists.dists,
        stats,
        groups,
        memcgs,
        workqueues,
        works,
        counters,
        task_groups: doc.tasks.len() as u32,
        key_counters,
    };
    layout::event_slots(src, &c)?;
    Ok(c)
}

/// What the programs of a scenario share as they are compiled in turn.
struct Shared {
    /// The operations parsed so far.
    ops: expand::Ops,
    /// The scenario's distributions: the named ones, then the steps'
    /// inline ones and scaled copies.
    dists: definitions::Dists,
    /// The copy made of each distribution for `cpu` steps
    /// (`scenario.cpu_speed`).
    cpu_scaled: IndexMap<DistId, DistId>,
    /// Per work type, its first grab and its first `queue_rcu_work`.
    work_uses: TiVec<WorkTypeId, [Option<Origin>; 2]>,
    /// The statistics and counters numbered so far.
    tables: lower::Tables,
}

/// Whether the first step of a program is a `key` step, so that `self`
/// never names the task's index in its group.
fn keys_first(nodes: &[steps::Node]) -> bool {
    matches!(nodes.first(), Some(steps::Node::Leaf(s)) if matches!(s.kind, steps::StepKind::Key(_)))
}

/// Compiles the program `pr` (passes 3 to 7), with its class and weight.
fn program(
    src: &Source,
    doc: &Doc,
    settings: &settings::Settings,
    (locks, lines): (&definitions::Locks, &definitions::Lines),
    pr: &definitions::Prog,
    shared: &mut Shared,
) -> Result<GroupProg, ScenarioError> {
    let mut budget = Budget::new(pr.name);
    let mut nodes = parse_program(src, &format!("{}.program", pr.field), pr.items)?;
    // The exit steps follow the program: a task that ends its program
    // runs them, and a killed one jumps to them (`exit_pc`).
    let exit_at = nodes.len();
    nodes.extend(parse_program(src, &format!("{}.exit", pr.field), pr.exit)?);
    let key_bound = expand::operations(src, doc, &nodes, &mut shared.ops)?;
    let expanded = expand::inline(&nodes, &shared.ops, &mut budget)?;
    let scope = names::Scope {
        doc,
        locks,
        lines,
        // `self` takes a group's count, or a work type's instances, or
        // more if a `key` step sets it higher; only the key's values when
        // the program's first step sets it (the index is never seen).
        self_count: if keys_first(&nodes) {
            key_bound
        } else {
            pr.self_count.max(key_bound)
        },
        process: pr.process,
        cpu_scale: settings.cpu_scale,
        possible_cpus: settings
            .cpus
            .unwrap_or_else(|| settings.machine.topology.cpus()),
    };
    let mut resolved =
        names::resolve(&scope, &expanded, &mut shared.dists, &mut shared.cpu_scaled)?;
    let slots = checks::check(
        pr.name,
        &mut resolved,
        &locks.specs,
        &mut budget,
        &mut shared.work_uses,
    )?;
    let end = Origin {
        location: src.locate(Some(pr.span.clone())),
        field: format!("{}.program", pr.field),
    };
    let frame = layout::frame(&end, slots, &resolved)?;
    debug_assert_eq!(
        resolved.len(),
        nodes.len(),
        "one resolved node per parsed one"
    );
    let (code, origins, exit_pc) = lower::lower(
        pr.name,
        (&resolved, exit_at),
        end,
        &shared.dists.dists,
        &mut shared.tables,
    );
    let (rt, weight) = definitions::class(src, pr, settings)?;
    Ok(GroupProg {
        rt,
        weight,
        name: pr.name.to_string(),
        count: pr.count,
        code,
        origins,
        exit_pc,
        hold_slots: frame.hold_slots,
        span_slots: frame.span_slots,
        repeat_slots: frame.repeat_slots,
    })
}

/// Most steps a program may expand to (its `call`s inlined), counting
/// each pass of the compiler over it.
const MAX_EXPANDED_STEPS: u64 = 4_000_000;

/// The steps visited so far by the passes over one program that walk it
/// with its `call`s inlined (the expansion and the checks): calls that
/// each call another twice expand exponentially, and are refused past
/// [`MAX_EXPANDED_STEPS`].
struct Budget<'a> {
    group: &'a str,
    visited: u64,
}

impl<'a> Budget<'a> {
    fn new(group: &'a str) -> Self {
        Budget { group, visited: 0 }
    }

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
}

fn dur_field(src: &Source, field: &str, v: &Spanned<String>) -> Result<Dur, ScenarioError> {
    parse_duration(v.get_ref())
        .map_err(|e| ScenarioError::new(src.locate(Some(v.span())), field, e.to_string()))
}

/// The value of `[params] name`, for the step at `o`.
fn param(doc: &Doc, o: &Origin, name: &str) -> Result<u64, ScenarioError> {
    doc.params
        .get(name)
        .map(|v| *v.get_ref())
        .ok_or_else(|| undefined(o, "parameter", name, "params", "defined", doc.params.keys()))
}

/// A whole number of a step: a literal or a parameter.
fn count(doc: &Doc, o: &Origin, c: &Count) -> Result<u64, ScenarioError> {
    match c {
        Count::Literal(n) => Ok(*n),
        Count::Param(p) => param(doc, o, p),
    }
}

/// A `key` step's values `lo..hi`; an empty or huge range is an error.
fn key_range(doc: &Doc, o: &Origin, k: &KeyExpr) -> Result<(u32, u32), ScenarioError> {
    let (lo, hi) = match k {
        KeyExpr::Fixed(n) => {
            let n = count(doc, o, n)?;
            (n, n.saturating_add(1))
        }
        KeyExpr::Random(lo, hi) | KeyExpr::Next(lo, hi) => (count(doc, o, lo)?, count(doc, o, hi)?),
    };
    if lo >= hi || hi > 1 << 20 {
        return Err(o.error(format!(
            "`key`: the range {lo}..{hi} must be non-empty and within 0..1048576"
        )));
    }
    Ok((lo as u32, hi as u32))
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
    let hint = super::hint::suggestion(name, known.iter().map(AsRef::as_ref));
    o.error(format!(
        "no {kind} `{name}` in [{table}]; {verb}: {list}{hint}"
    ))
}
