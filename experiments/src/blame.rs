//! `convoy run --blame`: why the worst lock waits lasted, as chains of
//! waits down to a root cause.
//!
//! While blaming, the world logs what each task did from one scheduling
//! change to the next (as `sched_switch` would show it) and which task woke
//! it from each sleep in a wait queue (`sched_waking`). A wait is then
//! explained the way an off-CPU critical path is: while the waiter slept in
//! a wait queue it waited for the task that woke it, so that stretch is
//! explained by what the waker did over the same stretch, recursively.
//! Everything else (on a CPU, runnable, in reclaim, asleep, idle) is a root
//! cause. The root causes tile the wait, so their durations add up to it.
//!
//! Blaming reruns the same seed (the engine is deterministic): the first
//! run picks the waits ([`Picker`](crate::world::recorder::Picker)); each
//! further run records only the stretches of the tasks the chains have
//! reached so far ([`Recorder`], [`Focus`]) and follows them one waker
//! further ([`blame_run`]), so memory stays bounded on long runs. What the
//! world records lives with the world (`world::recorder`); this module
//! reads it.

use crate::program::WorkTypeId;
use crate::world::recorder::{Doing, Focus, Names, Recorder};
use models::{LockId, Mode, TaskId};
use sim::{Dur, SimTime};

pub use crate::world::recorder::{Wait, Wanted};

/// One link of a chain: a task doing something over `[start, end)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// 0 for the waiter; 1 for what its waker did, and so on.
    pub depth: u32,
    pub task: String,
    /// What it did, e.g. `waited for kernfs_rwsem (write)`.
    pub state: String,
    /// Why it matters: who woke it, the locks it held, the works it ran.
    pub detail: String,
    pub start: SimTime,
    pub end: SimTime,
    /// Stretches merged into this link (e.g. work items run).
    pub items: u32,
    /// A root cause: not explained further.
    pub root: bool,
}

impl Link {
    /// How long the stretch lasted.
    pub fn dur(&self) -> Dur {
        self.end - self.start
    }
}

/// A wait and the links that explain it.
#[derive(Clone, Debug)]
pub struct Chain {
    pub wait: Wait,
    pub waiter: String,
    pub subject: String,
    pub links: Vec<Link>,
}

/// Deepest chain followed (then the rest is a root cause). Waiters ahead
/// in the same lock's queue for the same mode do not count: a convoy is
/// one level.
const MAX_DEPTH: u32 = 32;

/// Most recursion steps of one explanation (a convoy of this many waiters
/// ahead is cut there).
const MAX_STEPS: u32 = 100_000;

/// Most links of one chain (each holds a few strings): past it, the rest
/// of each stretch is one `Cut` link, so the chain still adds up.
pub const MAX_LINKS: usize = 100_000;

/// What an explanation needs as it goes.
struct Ctx<'a> {
    rec: &'a Recorder,
    names: &'a dyn Names,
    /// Stretches of tasks not recorded yet: the next run records them.
    missing: Vec<(TaskId, SimTime, SimTime)>,
    /// Lock waits followed: the next run keeps every waiter's.
    convoys: Vec<(LockId, SimTime, SimTime)>,
    steps: u32,
}

/// The chain of each wait from what `rec` recorded, and the stretches a
/// further run must record to complete them (empty when the chains are
/// complete).
pub fn explain(rec: &Recorder, waits: &[Wait], names: &dyn Names) -> Explained {
    let mut cx = Ctx {
        rec,
        names,
        missing: Vec::new(),
        convoys: Vec::new(),
        steps: 0,
    };
    let chains = waits
        .iter()
        .map(|w| {
            let mut links = Vec::new();
            cx.steps = 0;
            explain_task(w.task, (w.start, w.end), 0, None, &mut cx, &mut links);
            Chain {
                wait: *w,
                waiter: names.task(w.task),
                subject: names.stat(w.stat),
                links,
            }
        })
        .collect();
    Explained {
        chains,
        missing: cx.missing,
        convoys: cx.convoys,
        truncated: rec.truncated,
    }
}

/// Appends the links explaining what `t` did over `[a, b)`; `convoy`
/// is the lock and mode the caller waited for.
fn explain_task(
    t: TaskId,
    (a, b): (SimTime, SimTime),
    depth: u32,
    convoy: Option<(LockId, Mode)>,
    cx: &mut Ctx,
    out: &mut Vec<Link>,
) {
    let rec = cx.rec;
    if !rec.focus().covers(t, a, b) {
        cx.missing.push((t, a, b));
    }
    cx.steps += 1;
    let segs = rec.segs(t);
    let first = segs.partition_point(|s| s.end <= a);
    let mut at = a;
    for s in &segs[first..] {
        if s.start >= b {
            break;
        }
        if out.len() >= MAX_LINKS {
            break;
        }
        let (from, to) = (s.start.max(a), s.end.min(b));
        if from > at {
            leaf(t, Doing::Unknown, None, (at, from), depth, cx, out);
        }
        at = to;
        let follow = cx.steps < MAX_STEPS && depth < MAX_DEPTH;
        match (s.waker, s.doing) {
            (Some(w), doing) if doing.waits_for_waker() && follow && w != t => {
                let lock = match doing {
                    Doing::Lock { lock, mode } => Some((lock, mode)),
                    _ => None,
                };
                if let Some((l, _)) = lock {
                    cx.convoys.push((l, from, to));
                }
                if lock.is_some() && lock == convoy {
                    // Ahead in the same queue for the same mode: its
                    // wait is part of ours (a convoy is one level).
                    explain_task(w, (from, to), depth, convoy, cx, out);
                    continue;
                }
                out.push(Link {
                    depth,
                    task: cx.names.task(t),
                    state: state_label(doing, cx.names),
                    detail: format!("woken by {}", cx.names.task(w)),
                    start: from,
                    end: to,
                    items: 1,
                    root: false,
                });
                explain_task(w, (from, to), depth + 1, lock, cx, out);
            }
            (Some(w), doing) if doing.waits_for_waker() && w != t => {
                let at = out.len();
                leaf(t, doing, None, (from, to), depth, cx, out);
                if out.len() > at {
                    out[at].detail = format!("woken by {}; not followed further", cx.names.task(w));
                }
            }
            _ => leaf(t, s.doing, s.work, (from, to), depth, cx, out),
        }
    }
    if at < b {
        let rest = if out.len() >= MAX_LINKS {
            Doing::Cut
        } else {
            Doing::Unknown
        };
        leaf(t, rest, None, (at, b), depth, cx, out);
    }
}

/// A root cause: `t` doing `doing` over `span`; merged into the
/// previous link when that is the same task doing the same thing.
#[allow(clippy::too_many_arguments)]
fn leaf(
    t: TaskId,
    doing: Doing,
    work: Option<WorkTypeId>,
    (start, end): (SimTime, SimTime),
    depth: u32,
    cx: &Ctx,
    out: &mut Vec<Link>,
) {
    let names = cx.names;
    let task = names.task(t);
    let mut state = state_label(doing, names);
    if let Some(w) = work {
        state = format!("{state}, running work {}", names.work(w));
    }
    // Holds are kept in release order: from the first released after
    // `start`, until a few (nesting) have started after `end`.
    let hs = cx.rec.holds(t);
    let mut held: Vec<String> = Vec::new();
    let mut later = 0;
    for h in &hs[hs.partition_point(|h| h.end <= start)..] {
        if h.start >= end {
            later += 1;
            if later > 16 {
                break;
            }
            continue;
        }
        let n = names.lock(h.lock, h.mode);
        if !held.contains(&n) {
            held.push(n);
        }
    }
    let detail = if held.is_empty() {
        String::new()
    } else {
        format!("holding {}", held.join(", "))
    };
    if let Some(last) = out.last_mut() {
        if last.root
            && last.depth == depth
            && last.task == task
            && last.state == state
            && last.end == start
        {
            last.end = end;
            last.items += 1;
            if last.detail.is_empty() {
                last.detail = detail;
            } else if !detail.is_empty() && !last.detail.contains(&detail) {
                last.detail = format!("{}; {detail}", last.detail);
            }
            return;
        }
    }
    out.push(Link {
        depth,
        task,
        state,
        detail,
        start,
        end,
        items: 1,
        root: true,
    });
}

fn state_label(d: Doing, names: &dyn Names) -> String {
    match d {
        Doing::Start => "not started yet".into(),
        Doing::OnCpu => "on a CPU".into(),
        Doing::Runnable => "runnable, waiting for a CPU".into(),
        Doing::Waking => "being woken (scheduling latency)".into(),
        Doing::Spin { lock, mode } => format!("spinning on {}", names.lock(lock, mode)),
        Doing::Creating => "kworker being created".into(),
        Doing::Sleep => "asleep (sleep step)".into(),
        Doing::Reclaim { memcg } => format!("in memcg reclaim ({})", names.memcg(memcg)),
        Doing::Throttle { memcg } => {
            format!("throttled over memory.high ({})", names.memcg(memcg))
        }
        Doing::Lock { lock, mode } => format!("waited for {}", names.lock(lock, mode)),
        Doing::Flush { wq } => format!("in flush_workqueue({})", names.workqueue(wq)),
        Doing::WorkWait { wq } => format!("waited for a running work of {}", names.workqueue(wq)),
        Doing::GracePeriod => "in synchronize_rcu (an RCU grace period)".into(),
        Doing::Idle => "idle kworker".into(),
        Doing::Exited => "exited".into(),
        Doing::Unknown => "not recorded".into(),
        Doing::Cut => "not followed further (link limit)".into(),
    }
}

/// A duration for people: `72.100 s`, `3.400 ms`, `812.000 us`, `45 ns`.
pub fn human(d: Dur) -> String {
    let (ns, f) = (d.ns(), d.as_nanos_f64());
    if ns >= 1_000_000_000 {
        format!("{:.3} s", f / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", f / 1e6)
    } else if ns >= 1_000 {
        format!("{:.3} us", f / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// Links printed per chain; a longer chain (a convoy) is cut and
/// summarised by root cause.
const PRINTED_LINKS: usize = 24;

/// `churner[17]` -> `churner[*]`, so a convoy's root causes group.
fn group_of(task: &str) -> String {
    match task.rfind('[') {
        Some(i) if task.ends_with(']') => format!("{}[*]", &task[..i]),
        _ => match task.rfind('/') {
            Some(i) if task.starts_with("kworker/") => format!("{}/*", &task[..i]),
            _ => task.to_string(),
        },
    }
}

/// The chains as indented text: each link with its duration, children
/// under the link they explain. A long chain shows its first links and
/// its root causes summed by task group and state.
pub fn render(chains: &[Chain]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for (i, c) in chains.iter().enumerate() {
        let _ = writeln!(
            s,
            "#{} {} waited {} ({}), {:.6} s .. {:.6} s",
            i + 1,
            c.waiter,
            human(c.wait.dur()),
            c.subject,
            c.wait.start.0 as f64 / 1e9,
            c.wait.end.0 as f64 / 1e9,
        );
        let shown = if c.links.len() > PRINTED_LINKS {
            PRINTED_LINKS - 8
        } else {
            c.links.len()
        };
        for l in &c.links[..shown] {
            let pad = "  ".repeat(l.depth as usize + 1);
            let items = if l.items > 1 {
                format!(" x{}", l.items)
            } else {
                String::new()
            };
            let detail = if l.detail.is_empty() {
                String::new()
            } else {
                format!(" [{}]", l.detail)
            };
            let _ = writeln!(
                s,
                "{pad}{:<11} {} {}{items}{detail}",
                human(l.dur()),
                l.task,
                l.state
            );
        }
        if shown < c.links.len() {
            let _ = writeln!(
                s,
                "  ... {} more links in blame.csv; root causes summed:",
                c.links.len() - shown
            );
            let mut sums: Vec<(String, Dur, u32)> = Vec::new();
            for l in c.links.iter().filter(|l| l.root) {
                let key = format!("{} {}", group_of(&l.task), l.state);
                match sums.iter_mut().find(|x| x.0 == key) {
                    Some(x) => {
                        x.1 += l.dur();
                        x.2 += l.items;
                    }
                    None => sums.push((key, l.dur(), l.items)),
                }
            }
            sums.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            for &(ref key, d, n) in sums.iter().take(6) {
                let share = 100.0 * d.as_nanos_f64() / c.wait.dur().max(Dur(1)).as_nanos_f64();
                let _ = writeln!(s, "    {:<11} {share:>5.1}%  {key} x{n}", human(d));
            }
            if sums.len() > 6 {
                let rest = sums[6..].iter().fold(Dur::ZERO, |sum, x| sum + x.1);
                let _ = writeln!(
                    s,
                    "    {:<11} in {} other kinds",
                    human(rest),
                    sums.len() - 6
                );
            }
        }
    }
    s
}

/// `blame.csv`: one row per link; the root rows of a wait sum to its
/// `wait_ns`.
pub fn csv(chains: &[Chain]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "wait",
        "waiter",
        "subject",
        "wait_start_ns",
        "wait_ns",
        "depth",
        "task",
        "state",
        "detail",
        "start_ns",
        "duration_ns",
        "items",
        "root",
    ];
    w.write_record(header).expect("write to memory");
    for (i, c) in chains.iter().enumerate() {
        for l in &c.links {
            w.write_record([
                (i + 1).to_string(),
                c.waiter.clone(),
                c.subject.clone(),
                c.wait.start.0.to_string(),
                c.wait.dur().ns().to_string(),
                l.depth.to_string(),
                l.task.clone(),
                l.state.clone(),
                l.detail.clone(),
                l.start.0.to_string(),
                l.dur().ns().to_string(),
                l.items.to_string(),
                u8::from(l.root).to_string(),
            ])
            .expect("write to memory");
        }
    }
    w.into_inner().expect("flush to memory")
}

/// What `--blame` found in one run.
pub struct Blamed {
    /// The chains: the worst waits first, then those over the threshold.
    pub chains: Vec<Chain>,
    /// How many of the chains are the worst (the rest are over the
    /// threshold).
    pub top: usize,
    /// Waits over the threshold, including any not explained.
    pub above_count: u64,
    /// The recorder hit [`MAX_SEGS`](crate::world::recorder::MAX_SEGS): later links may read "not recorded".
    pub truncated: bool,
    /// A trace of the worst wait with a tenth of its length either side.
    pub trace: Option<crate::world::trace::Trace>,
    /// Recording runs it took.
    pub runs: usize,
    /// The longest wait (of the wanted subjects) still going on when the
    /// run ended, and what held it up then: the chains explain only
    /// waits that ended.
    pub stuck: Option<crate::world::Stuck>,
}

/// A recording run's chains (see [`explain`]).
pub struct Explained {
    pub chains: Vec<Chain>,
    /// Tasks' stretches the chains reached but the run did not keep.
    pub missing: Vec<(TaskId, SimTime, SimTime)>,
    /// Locks whose waits the chains followed, and when.
    pub convoys: Vec<(LockId, SimTime, SimTime)>,
    pub truncated: bool,
}

/// Most events of the worst wait's trace: what a trace viewer opens
/// without strain (a longer wait's trace says it was cut short).
pub const TRACE_EVENTS: usize = 250_000;

/// Most recording runs: each follows the chains one waker further.
pub const MAX_RUNS: usize = 8;

/// Blames the waits `wanted` picks in replication `rep` of `c` with `seed`:
/// one run picks them; each further run records what the tasks the
/// chains lead to did, until the chains are complete (at most
/// [`MAX_RUNS`]). Only those tasks' stretches are kept, so memory stays
/// small on long runs.
pub fn blame_run(
    c: &crate::program::Compiled,
    (seed, rep): (u64, u64),
    limits: crate::world::Limits,
    wanted: Wanted,
    trace_worst: bool,
) -> Result<Blamed, crate::world::RunError> {
    use crate::world::World;
    let top = wanted.top;
    let wanted_stats = wanted.stats.clone();
    let mut w = World::new(c, seed, rep, limits);
    w.enable_blame_picking(wanted);
    w.run(&mut |_| {})?;
    let stuck = w.stuck(wanted_stats.as_deref());
    let picker = w.take_picker().expect("picking was enabled");
    let waits = picker.picked();
    let (mut focus, mut convoys) = (Focus::default(), Focus::default());
    for x in &waits {
        focus.add(x.task, x.start, x.end);
        convoys.add(x.lock, x.start, x.end);
    }
    let mut runs = 0;
    loop {
        runs += 1;
        let mut w = World::new(c, seed, rep, limits);
        w.enable_blame_recording((focus.clone(), convoys.clone()));
        let worst = waits.first().copied();
        let last = runs == MAX_RUNS;
        w.run(&mut |_| {})?;
        let rec = w.finish_recording().expect("recording was enabled");
        let e = explain(&rec, &waits, &w);
        let mut grew = false;
        for &(t, a, b) in &e.missing {
            grew |= focus.add(t, a, b);
        }
        for &(l, a, b) in &e.convoys {
            grew |= convoys.add(l, a, b);
        }
        if grew && !last && !e.truncated {
            continue;
        }
        let trace = match (worst, trace_worst) {
            (Some(x), true) => {
                let margin = (x.dur() / 10).max(Dur::from_us(1));
                let mut w = World::new(c, seed, rep, limits);
                w.enable_trace(
                    SimTime(x.start.ns().saturating_sub(margin.ns())),
                    x.end + margin,
                );
                w.limit_trace(TRACE_EVENTS);
                w.run(&mut |_| {})?;
                w.take_trace()
            }
            _ => None,
        };
        return Ok(Blamed {
            top: top.min(e.chains.len()),
            chains: e.chains,
            above_count: picker.above_count,
            truncated: e.truncated,
            runs,
            trace,
            stuck,
        });
    }
}
