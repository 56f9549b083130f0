//! The registry of what ships in the binary: the built-in experiments
//! (scenario files, each with the figures it exists to show), sweeps and
//! fleet reports, by name. The libraries that scenarios `include` belong
//! to the language ([`crate::scenario::library`]).

use crate::scenario::{ScenarioError, Source};
use output::Metric;
use std::path::Path;

pub struct Builtin {
    pub name: &'static str,
    pub summary: &'static str,
    pub text: &'static str,
    /// The figures the experiment exists to show: its lines in the default
    /// job's one-screen overview.
    pub headline: &'static [(Metric, &'static str)],
    /// Counters `convoy compare` shows (with `--counter` for others).
    pub counters: &'static [&'static str],
    /// A shorter simulated duration for the default job's overview, for
    /// experiments whose full run takes minutes (`convoy compare` runs it
    /// in full).
    pub overview: Option<&'static str>,
    /// A subject whose mean per variant `report.html` draws as bars (case
    /// 1's rmdir cost per kernel state).
    pub bars: Option<(Metric, &'static str)>,
}

pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "bench-convoy",
        summary: "the performance benchmark of docs/bench-convoy.md: 64 readers, 4 writers, FIFO rwsem",
        text: include_str!("../scenarios/bench-convoy.toml"),
        headline: &[(Metric::Wait, "lock/read/readers")],
        counters: &["lock/read_acquisitions", "lock/write_acquisitions"],
        overview: None,
        bars: None,
    },
    Builtin {
        name: "rmdir-cost",
        summary: "docs/cases.md case 1: empty cgroup-v2 leaf rmdir before/after the kernfs notify patch and fixes",
        text: include_str!("../scenarios/rmdir-cost.toml"),
        headline: &[(Metric::Span, "rmdir/bench")],
        counters: &[
            "attr_write_locks/bench",
            "ilookup/bench",
            "supers_read_locks/bench",
            "rcu_read_sections/bench",
        ],
        overview: None,
        bars: Some((Metric::Span, "rmdir/bench")),
    },
    Builtin {
        name: "rmdir-churn",
        summary: "docs/cases.md case 1's question: cgroup churn and cgroup-file readers, base/notify/inode-requested",
        text: include_str!("../scenarios/rmdir-churn.toml"),
        headline: &[(Metric::Span, "rmdir/churner"), (Metric::Span, "stat/reader")],
        counters: &["kernfs_rwsem/write_acquisitions", "kernfs_rwsem/write_contentions"],
        overview: None,
        bars: None,
    },
    Builtin {
        name: "pidlist-flush-run-a",
        summary: "docs/cases.md case 2 run-a: v1 pidlist destroy flush, 8 CPUs, R=100, C=1000, 300 s",
        text: include_str!("../scenarios/pidlist-flush-run-a.toml"),
        headline: &[(Metric::Span, "cgroup1_pidlist_destroy_all/css_free")],
        counters: PIDLIST_FLUSH_COUNTERS,
        // The first 10 s are a warm-up (the 1000 churners start at once
        // and take time to spread over the CPUs): two windows after it.
        overview: Some("30s"),
        bars: None,
    },
    Builtin {
        name: "pidlist-flush-run-b",
        summary: "docs/cases.md case 2 run-b: the same churn on 64 CPUs, 50 cgroups of 1000 tasks",
        text: include_str!("../scenarios/pidlist-flush-run-b.toml"),
        headline: &[(Metric::Span, "cgroup1_pidlist_destroy_all/css_free")],
        counters: PIDLIST_FLUSH_COUNTERS,
        overview: Some("10s"),
        bars: None,
    },
    Builtin {
        name: "revalidate-lock",
        summary: "docs/cases.md case 4: kernfs_rwsem in dentry revalidation, before/after lockless revalidation",
        text: include_str!("../scenarios/revalidate-lock.toml"),
        headline: &[
            (Metric::Counter, "kernfs_rwsem/read_acquisitions"),
            (Metric::Span, "stat/walkers"),
        ],
        counters: &[
            "kernfs_rwsem/read_acquisitions",
            "kernfs_rwsem/read_contentions",
            "sysfs_kernfs_rwsem/read_acquisitions",
            "sysfs_kernfs_rwsem/read_contentions",
            "walks/walkers",
        ],
        overview: None,
        bars: None,
    },
    Builtin {
        name: "inode-alloc-reclaim",
        summary: "docs/cases.md case 3: inode allocation under kernfs_rwsem in a full memcg, 316 CPUs",
        text: include_str!("../scenarios/inode-alloc-reclaim.toml"),
        headline: &[(Metric::Span, "readdir/lister")],
        counters: &["memcg/caller/reclaims", "memcg/caller/oom_kills"],
        overview: None,
        bars: None,
    },
    Builtin {
        name: "lock-policies",
        summary: "a cgroup-creation storm of writers, fast and slow readers and one RT writer under each rwsem policy",
        text: include_str!("../scenarios/lock-policies.toml"),
        // One subject: with seven variants a second would push the
        // overview past one screen; `compare` shows the writers.
        headline: &[(Metric::Wait, "kernfs_rwsem/read/walkers")],
        counters: &["kernfs_rwsem/read_contentions", "kernfs_rwsem/spin_successes"],
        overview: None,
        bars: None,
    },
    Builtin {
        name: "writer-parks-readers",
        summary: "one slow reader + one queued writer park a stream of readers (8 CPUs)",
        text: include_str!("../scenarios/writer-parks-readers.toml"),
        headline: &[(Metric::Wait, "kernfs_rwsem/read/walkers")],
        counters: &["kernfs_rwsem/read_contentions"],
        overview: None,
        bars: None,
    },
];

const PIDLIST_FLUSH_COUNTERS: &[&str] = &[
    "wq/cgroup_pidlist_destroy_wq/executed",
    "wq/cgroup_pidlist_destroy_wq/flushes_waited",
    "cpu/runqueue_wait_ns",
];

/// Sweeps compiled into the binary: `convoy sweep NAME`.
pub const SWEEPS: &[(&str, &str)] = &[
    (
        "inode-alloc-reclaim-map",
        include_str!("../sweeps/inode-alloc-reclaim-map.toml"),
    ),
    (
        "inode-alloc-reclaim-lhs",
        include_str!("../sweeps/inode-alloc-reclaim-lhs.toml"),
    ),
    (
        "rmdir-churn-rate",
        include_str!("../sweeps/rmdir-churn-rate.toml"),
    ),
    (
        "pidlist-flush-reader-pace",
        include_str!("../sweeps/pidlist-flush-reader-pace.toml"),
    ),
    (
        "pidlist-flush-run-queue",
        include_str!("../sweeps/pidlist-flush-run-queue.toml"),
    ),
    (
        "pidlist-flush-run-b-wakeup",
        include_str!("../sweeps/pidlist-flush-run-b-wakeup.toml"),
    ),
];

/// Fleet reports compiled into the binary (docs/cases.md case 3's
/// observations): `convoy check NAME`.
pub const REPORTS: &[(&str, &str)] = &[
    (
        "lookup-holds-625ms",
        include_str!("../reports/lookup-holds-625ms.toml"),
    ),
    (
        "readdir-waits-72s",
        include_str!("../reports/readdir-waits-72s.toml"),
    ),
    (
        "readdir-waits-72s-nonblocking",
        include_str!("../reports/readdir-waits-72s-nonblocking.toml"),
    ),
    (
        "lookup-waits-15min",
        include_str!("../reports/lookup-waits-15min.toml"),
    ),
    (
        "lookup-waits-15min-thrash",
        include_str!("../reports/lookup-waits-15min-thrash.toml"),
    ),
];

pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// A built-in experiment by name, or a scenario file by path.
pub fn source(arg: &str, sets: &[String]) -> Result<Source, ScenarioError> {
    let mut src = if let Some(b) = find(arg) {
        Source::new(format!("builtin:{}", b.name), b.text)
    } else {
        let path = Path::new(arg);
        let text = crate::scenario::source::read_text(path, crate::scenario::source::MAX_TEXT_FILE)
            .map_err(|e| {
                let names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
                let hint = crate::scenario::hint::suggestion(arg, names.iter().copied());
                ScenarioError::new(
                    arg,
                    "",
                    format!(
                        "cannot read scenario file: {e}; built-in experiments are: {}{hint}",
                        names.join(", ")
                    ),
                )
            })?;
        let mut s = Source::new(arg, text);
        s.dir = path.parent().map(|p| p.to_path_buf());
        s
    };
    src.sets = sets.to_vec();
    Ok(src)
}
