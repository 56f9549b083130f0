//! Step strings: `"down_read kernfs_rwsem"`, `"cpu exp(20us)"`, `"repeat 40"`.
//!
//! One step per string; the first word is the keyword, the rest its
//! argument. Leading spaces are cosmetic (programs indent block bodies).
//! Blocks (`repeat N`, `loop`, `with_prob P`) run to their `end`.

use super::error::ScenarioError;
use super::source::Source;
use crate::program::{GfpWord, Origin, WorkKey};
use sim::dist::{parse_inline, Dist};
use toml::Spanned;

/// A work item in a step: `NAME`, `NAME[3]` or `NAME[self]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkRef {
    pub name: String,
    pub key: WorkKey,
}

fn work_ref(o: &Origin, kw: &str, text: &str) -> Result<WorkRef, ScenarioError> {
    let (name, key) = match text.split_once('[') {
        None => (text, WorkKey::Index(0)),
        Some((n, rest)) => {
            let k = rest
                .strip_suffix(']')
                .ok_or_else(|| o.error(format!("`{kw}`: `{text}` lacks its `]`")))?;
            let key = if k == "self" {
                WorkKey::SelfIndex
            } else if k == "seq" {
                WorkKey::Seq
            } else {
                WorkKey::Index(k.parse().map_err(|_| {
                    o.error(format!(
                        "`{kw}`: key `{k}` of `{text}` is not `self`, `seq` or a number"
                    ))
                })?)
            };
            (n, key)
        }
    };
    Ok(WorkRef {
        name: name_arg(o, kw, name, "a work item name")?,
        key,
    })
}

/// A whole number in a step: literal or a `[params]` name (`$name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Count {
    Literal(u64),
    Param(String),
}

/// What a `key` step sets the task's key to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyExpr {
    /// `key N`.
    Fixed(Count),
    /// `key random LO HI`: uniform in `LO..HI` from the task's stream
    /// (a reader picks a random cgroup).
    Random(Count, Count),
    /// `key next LO HI`: the next of `LO..HI`, cycling, counted over every
    /// task that runs this step (mkdir makes a cgroup no one else has).
    Next(Count, Count),
}

fn count_arg(o: &Origin, kw: &str, text: &str) -> Result<Count, ScenarioError> {
    match text.strip_prefix('$') {
        Some(p) => Ok(Count::Param(name_arg(
            o,
            kw,
            p,
            "a parameter name after `$`",
        )?)),
        None => text
            .replace('_', "")
            .parse::<u64>()
            .map(Count::Literal)
            .map_err(|_| {
                o.error(format!(
                    "`{kw}`: `{text}` is not a whole number or a `$param`"
                ))
            }),
    }
}

fn key_expr(o: &Origin, arg: &str) -> Result<KeyExpr, ScenarioError> {
    let words: Vec<&str> = arg.split_whitespace().collect();
    let usage = || {
        o.error(format!(
            "`key {arg}`: expected `key N`, `key random LO HI` or `key next LO HI`"
        ))
    };
    match words.as_slice() {
        [n] => Ok(KeyExpr::Fixed(count_arg(o, "key", n)?)),
        ["random", lo, hi] => Ok(KeyExpr::Random(
            count_arg(o, "key", lo)?,
            count_arg(o, "key", hi)?,
        )),
        ["next", lo, hi] => Ok(KeyExpr::Next(
            count_arg(o, "key", lo)?,
            count_arg(o, "key", hi)?,
        )),
        _ => Err(usage()),
    }
}

/// A duration argument: a named distribution or an inline one.
#[derive(Clone, Debug, PartialEq)]
pub enum DistRef {
    Named(String),
    Inline(Dist),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LockOp {
    DownRead,
    UpRead,
    DownWrite,
    UpWrite,
    MutexLock,
    MutexUnlock,
    /// `downgrade_write`: a write hold becomes a read hold (R21).
    Downgrade,
    SpinLock,
    SpinUnlock,
    PercpuDownRead,
    PercpuUpRead,
    PercpuDownWrite,
    PercpuUpWrite,
    WriteSeqcountBegin,
    WriteSeqcountEnd,
    WriteSeqlock,
    WriteSequnlock,
    /// `read_seqcount_begin` / `read_seqbegin`: heads of a read block
    /// that `read_seqcount_retry` / `read_seqretry` closes (R87).
    ReadSeqcountBegin,
    ReadSeqbegin,
}

impl LockOp {
    /// Every op, in the order of the enum.
    const ALL: [LockOp; 19] = {
        use LockOp::*;
        [
            DownRead,
            UpRead,
            DownWrite,
            UpWrite,
            MutexLock,
            MutexUnlock,
            Downgrade,
            SpinLock,
            SpinUnlock,
            PercpuDownRead,
            PercpuUpRead,
            PercpuDownWrite,
            PercpuUpWrite,
            WriteSeqcountBegin,
            WriteSeqcountEnd,
            WriteSeqlock,
            WriteSequnlock,
            ReadSeqcountBegin,
            ReadSeqbegin,
        ]
    };

    pub fn keyword(self) -> &'static str {
        match self {
            LockOp::DownRead => "down_read",
            LockOp::UpRead => "up_read",
            LockOp::DownWrite => "down_write",
            LockOp::UpWrite => "up_write",
            LockOp::MutexLock => "mutex_lock",
            LockOp::MutexUnlock => "mutex_unlock",
            LockOp::Downgrade => "downgrade_write",
            LockOp::SpinLock => "spin_lock",
            LockOp::SpinUnlock => "spin_unlock",
            LockOp::PercpuDownRead => "percpu_down_read",
            LockOp::PercpuUpRead => "percpu_up_read",
            LockOp::PercpuDownWrite => "percpu_down_write",
            LockOp::PercpuUpWrite => "percpu_up_write",
            LockOp::WriteSeqcountBegin => "write_seqcount_begin",
            LockOp::WriteSeqcountEnd => "write_seqcount_end",
            LockOp::WriteSeqlock => "write_seqlock",
            LockOp::WriteSequnlock => "write_sequnlock",
            LockOp::ReadSeqcountBegin => "read_seqcount_begin",
            LockOp::ReadSeqbegin => "read_seqbegin",
        }
    }
    pub fn is_acquire(self) -> bool {
        matches!(
            self,
            LockOp::DownRead
                | LockOp::DownWrite
                | LockOp::MutexLock
                | LockOp::SpinLock
                | LockOp::PercpuDownRead
                | LockOp::PercpuDownWrite
                | LockOp::WriteSeqcountBegin
                | LockOp::WriteSeqlock
                | LockOp::ReadSeqcountBegin
                | LockOp::ReadSeqbegin
        )
    }

    /// The step that closes a read block this op heads, if it heads one.
    pub fn retry_keyword(self) -> Option<&'static str> {
        match self {
            LockOp::ReadSeqcountBegin => Some("read_seqcount_retry"),
            LockOp::ReadSeqbegin => Some("read_seqretry"),
            _ => None,
        }
    }

    /// The op a lock-step keyword names.
    fn by_keyword(kw: &str) -> Option<LockOp> {
        LockOp::ALL.into_iter().find(|op| op.keyword() == kw)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum StepKind {
    Cpu(DistRef),
    /// `cpu D per_cpu`: D for each possible CPU of the machine (a
    /// `for_each_possible_cpu` loop), one draw times the count.
    CpuPerCpu(DistRef),
    Sleep(DistRef),
    Lock(LockOp, String),
    SpanBegin(String),
    SpanEnd(String),
    Call(String),
    /// `charge G N [GFP]`: charge N pages (or `4KiB`, `2MiB`) to memcg G,
    /// as an allocation with those GFP flags (default GFP_KERNEL).
    Charge(String, u64, GfpWord),
    /// `uncharge G N`.
    Uncharge(String, u64),
    /// `queue_work W ITEM[KEY] [delay D]` (R33, R35), or
    /// `queue_rcu_work W ITEM[KEY] GP` (`rcu`: D is a grace period, not a
    /// timer).
    QueueWork {
        wq: String,
        item: WorkRef,
        delay: Option<DistRef>,
        rcu: bool,
    },
    /// `queue_rcu_work W ITEM[KEY]` (`rcu_work`: pending from now) or
    /// `call_rcu W ITEM[KEY]` (a callback that queues the item), after a
    /// grace period of the RCU model (R92, R94).
    RcuQueue {
        wq: String,
        item: WorkRef,
        rcu_work: bool,
    },
    /// `synchronize_rcu`: wait for a full grace period (R93).
    SynchronizeRcu,
    /// `mod_delayed_work W ITEM[KEY] D` (R35).
    ModDelayedWork {
        wq: String,
        item: WorkRef,
        delay: DistRef,
    },
    /// `cancel_delayed_work_sync W ITEM[KEY]`: cancel a pending instance and
    /// wait for a running one.
    CancelDelayedWorkSync {
        wq: String,
        item: WorkRef,
    },
    /// `flush_workqueue W` (R36).
    FlushWorkqueue(String),
    /// `count NAME`: add one to the counter `NAME/group` (events a trace
    /// would count, e.g. `ilookup` calls).
    Count(String),
    /// `atomic LINE` (`write`: a read-modify-write, atomic_inc, a refcount
    /// get or put) or `read LINE` (a plain load) of a data cache line,
    /// `NAME`, `NAME[3]` or `NAME[self]`.
    Line {
        write: bool,
        name: String,
    },
    /// `might_resched`: a voluntary preemption point (an allocation's
    /// might_sleep), where a task may be preempted holding locks.
    MightResched,
    /// `cond_resched`: an explicit preemption point of kernel code (a
    /// loop's `cond_resched()`), one under every preemption model.
    CondResched,
    /// `key ...`: set the task's key, the value of `[self]` in its later
    /// steps (which cgroup it works on).
    Key(KeyExpr),
    Repeat(u64),
    /// `repeat $name`: as many times as `[params] name`.
    RepeatParam(String),
    Loop,
    WithProb(f64),
    /// `if_work_busy W ITEM[KEY]`: run the body only if the item is
    /// pending (timer armed or queued) or executing, as the kernel's
    /// `work_busy()` says; e.g. "this cgroup still has a pidlist", whose
    /// destroy work is armed for as long as it exists (R40-R42).
    IfWorkBusy {
        wq: String,
        item: WorkRef,
    },
    /// `if_pressure G some WINDOW P`: run the body only if memcg G's
    /// `memory.pressure` shows `some WINDOW` at or above P percent now
    /// (R104); a userspace OOM daemon's decision.
    IfPressure {
        memcg: String,
        window: models::psi::Window,
        /// P in hundredths of a percent, as the file prints it
        /// (`Literal`), or `$name`: a whole percent from `[params]`.
        centi: Count,
    },
    /// `kill GROUP`: SIGKILL every live task of the group (a userspace
    /// OOM daemon killing a cgroup, R105).
    Kill(String),
    /// `read_seqcount_retry S` / `read_seqretry S`: closes the read block
    /// of S, whose body runs again while a writer overlapped it (R87).
    SeqRetry(String),
    End,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub kind: StepKind,
    pub origin: Origin,
}

/// A step, or a block with its body; a read block (`read_seqcount_begin
/// S` ... `read_seqcount_retry S`) keeps its closing step as `tail`.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Leaf(Step),
    Block {
        head: Step,
        body: Vec<Node>,
        tail: Option<Step>,
    },
}

const KEYWORDS: &str = "cpu, sleep, down_read, up_read, down_write, up_write, downgrade_write, \
mutex_lock, mutex_unlock, spin_lock, spin_unlock, percpu_down_read, percpu_up_read, percpu_down_write, \
percpu_up_write, write_seqcount_begin, write_seqcount_end, read_seqcount_begin, read_seqcount_retry, \
write_seqlock, write_sequnlock, read_seqbegin, read_seqretry, charge, uncharge, queue_work, queue_delayed_work, queue_rcu_work, call_rcu, \
mod_delayed_work, cancel_delayed_work_sync, flush_workqueue, synchronize_rcu, count, atomic, read, key, might_resched, cond_resched, span_begin, span_end, \
kill, call, repeat, loop, with_prob, if_work_busy, if_pressure, end";

/// Bytes per page (4 KiB pages, as on x86-64).
pub const PAGE_SIZE: u64 = 4096;

/// The GFP flags a `charge` step's last word names, if it names one.
fn gfp_word(word: &str) -> Option<GfpWord> {
    Some(match word {
        "kernel" => GfpWord::Kernel,
        "nowait" => GfpWord::Nowait,
        "atomic" => GfpWord::Atomic,
        "nofail" => GfpWord::Nofail,
        "noretry" => GfpWord::Noretry,
        "retry_mayfail" => GfpWord::RetryMayfail,
        _ => return None,
    })
}

/// A memory amount in pages: `1 page`, `64 pages`, `4KiB`, `256MiB`,
/// `1GiB`, or a bare number of pages. Byte amounts round up to pages.
pub fn parse_pages(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '_')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: u64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{t}` is not an amount like `1 page`, `4KiB` or `256MiB`"))?;
    let bytes = |mult: u64| {
        num.checked_mul(mult)
            .map(|b| b.div_ceil(PAGE_SIZE))
            .ok_or_else(|| format!("`{t}` is too large"))
    };
    let pages = match unit.trim() {
        "" | "page" | "pages" => Ok(num),
        "B" => bytes(1),
        "KiB" | "K" => bytes(1 << 10),
        "MiB" | "M" => bytes(1 << 20),
        "GiB" | "G" => bytes(1 << 30),
        other => Err(format!(
            "unknown unit `{other}`; expected pages, KiB, MiB or GiB"
        )),
    }?;
    if pages > MAX_PAGES {
        return Err(format!(
            "`{t}` is too large; at most {MAX_PAGES} pages (4 PiB)"
        ));
    }
    Ok(pages)
}

/// Most pages one amount may be (4 PiB of 4 KiB pages): sums of amounts
/// stay far from the top of a u64.
pub const MAX_PAGES: u64 = 1 << 40;

/// `if_pressure G some WINDOW P`: P a percent from 0 to 100 with at most
/// two decimals (`60`, `12.5`, `60%`), as `memory.pressure` prints it, or
/// `$name`, a whole percent from `[params]` (for sweeps).
fn if_pressure(o: &Origin, arg: &str) -> Result<StepKind, ScenarioError> {
    let usage = "expected `if_pressure MEMCG some avg10|avg60|avg300 PERCENT`, e.g. `if_pressure box some avg10 60`";
    let words: Vec<&str> = arg.split_whitespace().collect();
    let [g, kind, window, pct] = words[..] else {
        return Err(o.error(format!("`if_pressure {arg}`: {usage}")));
    };
    if kind == "full" {
        return Err(o.error(format!(
            "`if_pressure {arg}`: `full` pressure is not modelled (only `some`: docs/kernel-rules.md R104); {usage}"
        )));
    }
    if kind != "some" {
        return Err(o.error(format!("`if_pressure {arg}`: `{kind}`: {usage}")));
    }
    let Some(window) = models::psi::Window::parse(window) else {
        return Err(o.error(format!("`if_pressure {arg}`: `{window}`: {usage}")));
    };
    if let Some(p) = pct.strip_prefix('$') {
        return Ok(StepKind::IfPressure {
            memcg: name_arg(o, "if_pressure", g, "a memcg name")?,
            window,
            centi: Count::Param(name_arg(o, "if_pressure", p, "a parameter name after `$`")?),
        });
    }
    let centi = centi_of(pct.strip_suffix('%').unwrap_or(pct)).filter(|&c| c <= 10_000);
    let Some(centi) = centi else {
        return Err(o.error(format!(
            "`if_pressure {arg}`: `{pct}`: expected a percent from 0 to 100 with at most two decimals"
        )));
    };
    Ok(StepKind::IfPressure {
        memcg: name_arg(o, "if_pressure", g, "a memcg name")?,
        window,
        centi: Count::Literal(centi),
    })
}

/// A lock step's lock: a name as [`name_arg`] takes it, or a hashed
/// family's `NAME[hash self]` (the task's key hashed into its locks).
fn lock_arg(o: &Origin, kw: &str, arg: &str, what: &str) -> Result<String, ScenarioError> {
    let words: Vec<&str> = arg.split_whitespace().collect();
    if let [head, "self]"] = words[..] {
        if let Some(name) = head.strip_suffix("[hash") {
            return Ok(format!("{}[hash self]", name_arg(o, kw, name, what)?));
        }
    }
    name_arg(o, kw, arg, what)
}

/// `12.5` as 1250: a decimal with at most two places, in hundredths.
fn centi_of(s: &str) -> Option<u64> {
    let (i, f) = s.split_once('.').unwrap_or((s, "0"));
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    if !digits(i) || !digits(f) || f.len() > 2 {
        return None;
    }
    let f: u64 = f.parse().ok()?;
    let f = if s.split_once('.').is_some_and(|(_, f)| f.len() == 1) {
        f * 10
    } else {
        f
    };
    i.parse::<u64>().ok()?.checked_mul(100)?.checked_add(f)
}

fn name_arg(o: &Origin, kw: &str, arg: &str, what: &str) -> Result<String, ScenarioError> {
    let valid = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '[' | ']'));
    if valid {
        Ok(arg.to_string())
    } else if arg.is_empty() {
        Err(o.error(format!("`{kw}` needs {what}")))
    } else {
        Err(o.error(format!(
            "`{kw} {arg}`: expected {what} (letters, digits, `_-./`)"
        )))
    }
}

fn dist_arg(o: &Origin, kw: &str, arg: &str) -> Result<DistRef, ScenarioError> {
    if let Some(name) = arg.strip_prefix('$') {
        return Ok(DistRef::Named(name_arg(
            o,
            kw,
            name,
            "a distribution name after `$`",
        )?));
    }
    if arg.is_empty() {
        return Err(o.error(format!(
            "`{kw}` needs a duration, e.g. `{kw} 1.3us`, `{kw} exp(20us)` or `{kw} $name`"
        )));
    }
    parse_inline(arg)
        .map(DistRef::Inline)
        .map_err(|e| o.error(format!("`{kw} {arg}`: {e}")))
}

/// Parses one step string.
pub fn parse_step(text: &str, origin: Origin) -> Result<Step, ScenarioError> {
    let t = text.trim();
    let (kw, arg) = match t.split_once(char::is_whitespace) {
        Some((k, a)) => (k, a.trim()),
        None => (t, ""),
    };
    let o = &origin;
    let no_arg = |k: StepKind| {
        if arg.is_empty() {
            Ok(k)
        } else {
            Err(o.error(format!("`{kw}` takes no argument, found `{arg}`")))
        }
    };
    let kind = match kw {
        "" => return Err(o.error("empty step")),
        "cpu" => match arg.strip_suffix("per_cpu") {
            Some(d) if d.ends_with(char::is_whitespace) => {
                StepKind::CpuPerCpu(dist_arg(o, kw, d.trim())?)
            }
            _ => StepKind::Cpu(dist_arg(o, kw, arg)?),
        },
        "synchronize_rcu" => no_arg(StepKind::SynchronizeRcu)?,
        "sleep" => StepKind::Sleep(dist_arg(o, kw, arg)?),
        "down_read" => StepKind::Lock(LockOp::DownRead, lock_arg(o, kw, arg, "a lock name")?),
        "up_read" => StepKind::Lock(LockOp::UpRead, lock_arg(o, kw, arg, "a lock name")?),
        "down_write" => StepKind::Lock(LockOp::DownWrite, lock_arg(o, kw, arg, "a lock name")?),
        "up_write" => StepKind::Lock(LockOp::UpWrite, lock_arg(o, kw, arg, "a lock name")?),
        "mutex_lock" => StepKind::Lock(LockOp::MutexLock, lock_arg(o, kw, arg, "a mutex name")?),
        "downgrade_write" => {
            StepKind::Lock(LockOp::Downgrade, lock_arg(o, kw, arg, "a lock name")?)
        }
        "mutex_unlock" => {
            StepKind::Lock(LockOp::MutexUnlock, lock_arg(o, kw, arg, "a mutex name")?)
        }
        "read_seqcount_retry" | "read_seqretry" => {
            StepKind::SeqRetry(lock_arg(o, kw, arg, "a lock name")?)
        }
        _ if LockOp::by_keyword(kw).is_some() => StepKind::Lock(
            LockOp::by_keyword(kw).expect("matched"),
            lock_arg(o, kw, arg, "a lock name")?,
        ),
        "span_begin" => StepKind::SpanBegin(name_arg(o, kw, arg, "a span name")?),
        "span_end" => StepKind::SpanEnd(name_arg(o, kw, arg, "a span name")?),
        "call" => StepKind::Call(name_arg(o, kw, arg, "an operation name")?),
        "queue_work"
        | "queue_delayed_work"
        | "queue_rcu_work"
        | "call_rcu"
        | "mod_delayed_work"
        | "cancel_delayed_work_sync" => {
            let words: Vec<&str> = arg.splitn(3, char::is_whitespace).map(str::trim).collect();
            let usage = || {
                o.error(format!(
                    "`{kw} {arg}`: expected `{kw} WORKQUEUE ITEM{}`",
                    match kw {
                        "queue_work" => " [delay D]",
                        "mod_delayed_work" | "queue_delayed_work" => " DELAY",
                        "queue_rcu_work" => " [GRACE_PERIOD]",
                        _ => "",
                    }
                ))
            };
            if words.len() < 2 {
                return Err(usage());
            }
            let wq = name_arg(o, kw, words[0], "a workqueue name")?;
            let item = work_ref(o, kw, words[1])?;
            match kw {
                "queue_work" => {
                    let delay = match words.get(2) {
                        None => None,
                        Some(rest) => match rest.strip_prefix("delay") {
                            Some(d) => Some(dist_arg(o, kw, d.trim())?),
                            None => return Err(usage()),
                        },
                    };
                    StepKind::QueueWork {
                        wq,
                        item,
                        delay,
                        rcu: false,
                    }
                }
                "queue_rcu_work" | "call_rcu" if words.len() == 2 => StepKind::RcuQueue {
                    wq,
                    item,
                    rcu_work: kw == "queue_rcu_work",
                },
                "call_rcu" => return Err(usage()),
                "queue_delayed_work" | "queue_rcu_work" => match words.get(2) {
                    Some(d) => StepKind::QueueWork {
                        wq,
                        item,
                        delay: Some(dist_arg(o, kw, d)?),
                        rcu: kw == "queue_rcu_work",
                    },
                    None => return Err(usage()),
                },
                "mod_delayed_work" => match words.get(2) {
                    Some(d) => StepKind::ModDelayedWork {
                        wq,
                        item,
                        delay: dist_arg(o, kw, d)?,
                    },
                    None => return Err(usage()),
                },
                _ => {
                    if words.len() > 2 {
                        return Err(usage());
                    }
                    StepKind::CancelDelayedWorkSync { wq, item }
                }
            }
        }
        "flush_workqueue" => StepKind::FlushWorkqueue(name_arg(o, kw, arg, "a workqueue name")?),
        "count" => StepKind::Count(name_arg(o, kw, arg, "a counter name")?),
        "atomic" | "read" => StepKind::Line {
            write: kw == "atomic",
            name: name_arg(o, kw, arg, "a line name (`[lines]`)")?,
        },
        "key" => StepKind::Key(key_expr(o, arg)?),
        "might_resched" => no_arg(StepKind::MightResched)?,
        "cond_resched" => no_arg(StepKind::CondResched)?,
        "charge" | "uncharge" => {
            let (g, amount) = arg.split_once(char::is_whitespace).unwrap_or((arg, ""));
            let g = name_arg(
                o,
                kw,
                g,
                "a memcg name and an amount, e.g. `charge full 1 page`",
            )?;
            // A charge's last word may name its allocation's GFP flags.
            let (amount, gfp) = match amount.trim().rsplit_once(char::is_whitespace) {
                Some((a, word)) if kw == "charge" && gfp_word(word).is_some() => {
                    (a, gfp_word(word))
                }
                _ => (amount, None),
            };
            let pages = parse_pages(amount.trim()).map_err(|e| {
                let gfp = if kw == "charge" {
                    "; a charge may end with its GFP flags: \
                     kernel, nowait, atomic, nofail, noretry or retry_mayfail"
                } else {
                    ""
                };
                o.error(format!("`{kw} {arg}`: {e}{gfp}"))
            })?;
            if kw == "charge" {
                StepKind::Charge(g, pages, gfp.unwrap_or_default())
            } else {
                StepKind::Uncharge(g, pages)
            }
        }
        "repeat" if arg.starts_with('$') => {
            StepKind::RepeatParam(name_arg(o, kw, &arg[1..], "a parameter name after `$`")?)
        }
        "repeat" => match arg.replace('_', "").parse::<u64>() {
            Ok(n) => StepKind::Repeat(n),
            Err(_) => {
                return Err(o.error(format!(
                    "`repeat {arg}`: expected a whole number of repetitions"
                )))
            }
        },
        "with_prob" => match arg.parse::<f64>() {
            Ok(p) if (0.0..=1.0).contains(&p) => StepKind::WithProb(p),
            _ => {
                return Err(o.error(format!(
                    "`with_prob {arg}`: expected a probability between 0 and 1"
                )))
            }
        },
        "if_work_busy" => {
            let words: Vec<&str> = arg.split_whitespace().collect();
            if words.len() != 2 {
                return Err(o.error(format!(
                    "`if_work_busy {arg}`: expected `if_work_busy WORKQUEUE ITEM`"
                )));
            }
            StepKind::IfWorkBusy {
                wq: name_arg(o, kw, words[0], "a workqueue name")?,
                item: work_ref(o, kw, words[1])?,
            }
        }
        "if_pressure" => if_pressure(o, arg)?,
        "kill" => StepKind::Kill(name_arg(o, kw, arg, "a task group")?),
        "loop" => no_arg(StepKind::Loop)?,
        "end" => no_arg(StepKind::End)?,
        _ => {
            let hint = super::hint::suggestion(kw, KEYWORDS.split(", "));
            return Err(o.error(format!(
                "unknown step `{kw}`; expected one of: {KEYWORDS}{hint}"
            )));
        }
    };
    Ok(Step { kind, origin })
}

/// The keyword of a step's text (its first word).
fn text_keyword(text: &str) -> &str {
    text.split_whitespace().next().unwrap_or("")
}

/// Most levels that `call`s and blocks (`repeat`, `loop`, `with_prob`,
/// `if_work_busy`) may nest, counted together along any path of a program
/// with its calls followed. The compiler's passes follow the nesting on
/// the thread's stack; this bounds their depth well inside the smallest
/// stack they run on (2 MiB, a sweep's worker thread). Real programs nest
/// a handful of levels.
pub const MAX_NESTING: usize = 256;

/// The error for a program that nests deeper than [`MAX_NESTING`].
pub fn too_deep(o: &Origin) -> ScenarioError {
    o.error(format!(
        "`call`s and blocks nest more than {MAX_NESTING} deep here; flatten the operations \
         (a `call` of a `call` of ...) or use `repeat N` for repeated work"
    ))
}

/// Parses a list of step strings (`field` is e.g. `tasks.oomd.program`) and
/// nests blocks. An `end` without a block, or a block without an `end`, is
/// an error at that step.
pub fn parse_program(
    src: &Source,
    field: &str,
    items: &[Spanned<String>],
) -> Result<Vec<Node>, ScenarioError> {
    // Stack of open blocks: (head, body so far).
    let mut stack: Vec<(Step, Vec<Node>)> = Vec::new();
    let mut top: Vec<Node> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let origin = Origin {
            location: src.locate(Some(item.span())),
            field: format!("{field}[{i}]"),
        };
        let step = parse_step(item.get_ref(), origin)?;
        match step.kind {
            StepKind::Repeat(_)
            | StepKind::RepeatParam(_)
            | StepKind::Loop
            | StepKind::WithProb(_)
            | StepKind::IfWorkBusy { .. }
            | StepKind::IfPressure { .. } => {
                if stack.len() >= MAX_NESTING {
                    return Err(too_deep(&step.origin));
                }
                stack.push((step, Vec::new()));
            }
            StepKind::Lock(op, _) if op.retry_keyword().is_some() => {
                if stack.len() >= MAX_NESTING {
                    return Err(too_deep(&step.origin));
                }
                stack.push((step, Vec::new()));
            }
            StepKind::SeqRetry(ref name) => {
                let head_op = |h: &Step| match &h.kind {
                    StepKind::Lock(op, n) => op.retry_keyword().map(|kw| (kw, n.clone())),
                    _ => None,
                };
                let this = text_keyword(items[i].get_ref());
                match stack.last().and_then(|(h, _)| head_op(h)) {
                    Some((want, n)) if want == this && n == *name => {}
                    Some((want, n)) => {
                        return Err(step.origin.error(format!(
                            "`{this} {name}` closes a read block; the open one is `{n}`'s, closed by `{want} {n}`"
                        )))
                    }
                    None => {
                        return Err(step.origin.error(format!(
                            "`{this} {name}` without an open `read_seqcount_begin {name}` or `read_seqbegin {name}` (a read block's body may not leave another block open)"
                        )));
                    }
                }
                let (head, b) = stack.pop().expect("checked above");
                let node = Node::Block {
                    head,
                    body: b,
                    tail: Some(step),
                };
                match stack.last_mut() {
                    Some((_, outer)) => outer.push(node),
                    None => top.push(node),
                }
            }
            StepKind::End if stack.last().is_some_and(|(h, _)| {
                matches!(h.kind, StepKind::Lock(op, _) if op.retry_keyword().is_some())
            }) => {
                let (head, _) = stack.last().expect("checked");
                let StepKind::Lock(op, n) = &head.kind else {
                    unreachable!("checked")
                };
                return Err(step.origin.error(format!(
                    "`end` cannot close `{} {n}`: a read block ends with `{} {n}`",
                    op.keyword(),
                    op.retry_keyword().expect("checked")
                )));
            }
            StepKind::End => match stack.pop() {
                Some((head, b)) => {
                    let node = Node::Block {
                        head,
                        body: b,
                        tail: None,
                    };
                    match stack.last_mut() {
                        Some((_, outer)) => outer.push(node),
                        None => top.push(node),
                    }
                }
                None => {
                    return Err(step.origin.error(
                        "`end` without an open `repeat`, `loop`, `with_prob`, `if_work_busy` or `if_pressure`",
                    ))
                }
            },
            _ => match stack.last_mut() {
                Some((_, b)) => b.push(Node::Leaf(step)),
                None => top.push(Node::Leaf(step)),
            },
        }
    }
    if let Some((head, _)) = stack.pop() {
        if let StepKind::Lock(op, n) = &head.kind {
            let close = op.retry_keyword().expect("only read blocks are lock steps");
            return Err(head.origin.error(format!(
                "`{} {n}` has no matching `{close} {n}`",
                op.keyword()
            )));
        }
        let kw = match head.kind {
            StepKind::Repeat(_) | StepKind::RepeatParam(_) => "repeat",
            StepKind::Loop => "loop",
            StepKind::IfWorkBusy { .. } => "if_work_busy",
            StepKind::IfPressure { .. } => "if_pressure",
            _ => "with_prob",
        };
        return Err(head.origin.error(format!("`{kw}` has no matching `end`")));
    }
    Ok(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o() -> Origin {
        Origin {
            location: "f:1".into(),
            field: "x[0]".into(),
        }
    }

    #[test]
    fn parses_every_keyword() {
        assert_eq!(
            parse_step("  down_read kernfs_rwsem", o()).unwrap().kind,
            StepKind::Lock(LockOp::DownRead, "kernfs_rwsem".into())
        );
        assert_eq!(
            parse_step("cpu 1.3us", o()).unwrap().kind,
            StepKind::Cpu(DistRef::Inline(Dist::constant(sim::Dur(1300))))
        );
        assert_eq!(
            parse_step("sleep $think", o()).unwrap().kind,
            StepKind::Sleep(DistRef::Named("think".into()))
        );
        assert_eq!(
            parse_step("repeat 40", o()).unwrap().kind,
            StepKind::Repeat(40)
        );
        assert_eq!(
            parse_step("with_prob 0.25", o()).unwrap().kind,
            StepKind::WithProb(0.25)
        );
        assert_eq!(
            parse_step("atomic refs[self]", o()).unwrap().kind,
            StepKind::Line {
                write: true,
                name: "refs[self]".into()
            }
        );
        assert_eq!(
            parse_step("read head", o()).unwrap().kind,
            StepKind::Line {
                write: false,
                name: "head".into()
            }
        );
        assert_eq!(parse_step("loop", o()).unwrap().kind, StepKind::Loop);
        assert_eq!(parse_step("end", o()).unwrap().kind, StepKind::End);
    }

    #[test]
    fn bad_steps_say_what_was_expected() {
        let e = parse_step("frobnicate x", o()).unwrap_err();
        assert!(e.message.contains("unknown step `frobnicate`"), "{e}");
        let e = parse_step("cpu 12 parsecs", o()).unwrap_err();
        assert!(e.message.contains("cpu 12 parsecs"), "{e}");
        let e = parse_step("with_prob 1.5", o()).unwrap_err();
        assert!(e.message.contains("between 0 and 1"), "{e}");
        let e = parse_step("down_read", o()).unwrap_err();
        assert!(e.message.contains("needs a lock name"), "{e}");
        let e = parse_step("loop forever", o()).unwrap_err();
        assert!(e.message.contains("takes no argument"), "{e}");
    }
}
