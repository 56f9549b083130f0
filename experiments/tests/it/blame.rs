//! `convoy run --blame`: a constructed chain (a reader in reclaim with
//! kernfs_rwsem held -> the writer queued behind it -> readers parked
//! behind the writer, R49/R51 with the rwsem's writer-queued rule) is
//! reported link by link, with durations that add up to each wait.

use crate::common::convoy;
use experiments::blame::{blame_run, Chain, Wanted};
use experiments::world::Limits;
use sim::SimTime;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// The lookup in reclaim, the queued writer, the parked walkers.
use crate::common::RECLAIM_CHAIN as CHAIN;

fn chains(top: usize) -> Vec<Chain> {
    let c = crate::common::compile_text(CHAIN);
    let wanted = Wanted {
        top,
        threshold: None,
        stats: None,
    };
    blame_run(&c, (1, 0), Limits::default(), wanted, false)
        .unwrap()
        .chains
}

/// `(depth, task, state, detail, start, end, root)` of each link.
fn links(c: &Chain) -> Vec<(u32, &str, &str, &str, u64, u64, bool)> {
    c.links
        .iter()
        .map(|l| {
            let (a, b) = (l.start.0, l.end.0);
            (l.depth, &*l.task, &*l.state, &*l.detail, a, b, l.root)
        })
        .collect()
}

#[test]
fn r49_reader_in_reclaim_queued_writer_parked_readers_chain() {
    let ch = chains(5);
    // The worst: the writer's 49 ms, then the walkers' 48.02 ms each
    // (ties by start, then task).
    let waiters: Vec<&str> = ch.iter().map(|c| c.waiter.as_str()).collect();
    assert_eq!(
        waiters,
        [
            "mkdir[0]",
            "walkers[0]",
            "walkers[1]",
            "walkers[2]",
            "walkers[3]"
        ]
    );
    assert_eq!(ch[0].wait.dur().ns(), 49 * MS);
    assert_eq!(ch[0].subject, "wait kernfs_rwsem/write/mkdir");
    // The writer first spins on the reader-owned lock for its budget
    // (R10: (20 + 1) / 2 us), then sleeps until the reader's up_read.
    let spun = MS + 10 * US + 500;
    assert_eq!(
        links(&ch[0]),
        [
            (
                0,
                "mkdir[0]",
                "spinning on kernfs_rwsem (write)",
                "",
                MS,
                spun,
                true
            ),
            (
                0,
                "mkdir[0]",
                "waited for kernfs_rwsem (write)",
                "woken by lookup[0]",
                spun,
                50 * MS,
                false
            ),
            (
                1,
                "lookup[0]",
                "in memcg reclaim (memcg full)",
                "holding kernfs_rwsem (read)",
                spun,
                50 * MS,
                true
            ),
        ]
    );
    // A parked reader: behind the writer, which was behind the reader in
    // reclaim, then held the lock on its CPU for 20 us.
    let w = &ch[1];
    assert_eq!(w.wait.dur().ns(), 48 * MS + 20 * US);
    assert_eq!(w.subject, "wait kernfs_rwsem/read/walkers");
    assert_eq!(
        links(w),
        [
            (
                0,
                "walkers[0]",
                "waited for kernfs_rwsem (read)",
                "woken by mkdir[0]",
                2 * MS,
                50 * MS + 20 * US,
                false
            ),
            (
                1,
                "mkdir[0]",
                "waited for kernfs_rwsem (write)",
                "woken by lookup[0]",
                2 * MS,
                50 * MS,
                false
            ),
            (
                2,
                "lookup[0]",
                "in memcg reclaim (memcg full)",
                "holding kernfs_rwsem (read)",
                2 * MS,
                50 * MS,
                true
            ),
            (
                1,
                "mkdir[0]",
                "on a CPU",
                "holding kernfs_rwsem (write)",
                50 * MS,
                50 * MS + 20 * US,
                true
            ),
        ]
    );
    for c in &ch {
        let roots: u64 = c
            .links
            .iter()
            .filter(|l| l.root)
            .map(|l| l.dur().ns())
            .sum();
        assert_eq!(roots, c.wait.dur().ns(), "{}: root causes add up", c.waiter);
        // Each explained link is the sum of the links under it.
        for (i, l) in c.links.iter().enumerate().filter(|(_, l)| !l.root) {
            let under: u64 = c.links[i + 1..]
                .iter()
                .take_while(|m| m.depth > l.depth)
                .filter(|m| m.root)
                .map(|m| m.dur().ns())
                .sum();
            assert_eq!(under, l.dur().ns(), "{}: link {i}", c.waiter);
        }
        assert!(c.wait.start < c.wait.end && c.wait.end <= SimTime(SimTime::ZERO.0 + 1_000 * MS));
    }
}

#[test]
fn blame_on_a_single_cpu_shows_the_wait_for_the_cpu() {
    // With one CPU the woken walkers queue for it: the tail of their wait
    // is runnable time, and the chain still adds up.
    let c = crate::common::compile_text(&CHAIN.replace("cpus = 8", "cpus = 1"));
    let wanted = Wanted {
        top: 6,
        threshold: None,
        stats: None,
    };
    let b = blame_run(&c, (1, 0), Limits::default(), wanted, false).unwrap();
    for ch in &b.chains {
        let roots: u64 = ch
            .links
            .iter()
            .filter(|l| l.root)
            .map(|l| l.dur().ns())
            .sum();
        assert_eq!(roots, ch.wait.dur().ns(), "{}", ch.waiter);
    }
    // The last walker to get the CPU waited for the three before it.
    let last = b.chains.iter().find(|c| c.waiter == "walkers[3]").unwrap();
    let runnable: Vec<_> = last
        .links
        .iter()
        .filter(|l| l.depth == 0 && l.state == "runnable, waiting for a CPU")
        .collect();
    assert_eq!(runnable.len(), 1, "{:#?}", last.links);
    assert!(runnable[0].dur().ns() >= 3 * US, "{:#?}", last.links);
}

#[test]
fn convoy_run_blame_prints_chains_and_writes_blame_csv() {
    let dir = tempfile::tempdir().unwrap();
    let scen = dir.path().join("chain.toml");
    std::fs::write(&scen, CHAIN).unwrap();
    let out = dir.path().join("out");
    let o = convoy(
        &[
            "run",
            scen.to_str().unwrap(),
            "--blame",
            "--blame-subject",
            "kernfs_rwsem/read/walkers",
            "--blame-top",
            "2",
            "--blame-threshold",
            "1ms",
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("#1 walkers[0] waited 48.020 ms (wait kernfs_rwsem/read/walkers)"),
        "{text}"
    );
    assert!(text.contains("lookup[0] in memcg reclaim (memcg full) [holding kernfs_rwsem (read)]"));
    assert!(
        text.contains("the 2 worst waits; 4 over 1.000 ms, in blame.csv with 2 more explained"),
        "{text}"
    );
    // blame.csv: every wait's root rows add up to it.
    let mut rd = csv::Reader::from_path(out.join("blame.csv")).unwrap();
    let h = rd.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let mut sums: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
    for r in rd.records() {
        let r = r.unwrap();
        let e = sums.entry(r[col("wait")].parse().unwrap()).or_default();
        e.0 = r[col("wait_ns")].parse().unwrap();
        if &r[col("root")] == "1" {
            e.1 += r[col("duration_ns")].parse::<u64>().unwrap();
        }
    }
    assert_eq!(sums.len(), 4, "the 2 worst and 2 more over the threshold");
    for (w, (wait, roots)) in sums {
        assert_eq!(wait, roots, "wait {w}");
    }
    // The worst wait's trace is valid JSON with slices in it.
    let tr: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("blame-trace.json")).unwrap()).unwrap();
    let evs = tr["traceEvents"].as_array().unwrap();
    assert!(evs.len() > 5);
    // The reader's reclaim shows as such on its track.
    assert!(
        evs.iter()
            .any(|e| e["name"] == "memcg reclaim" && e["ph"] == "X"),
        "{evs:?}"
    );
    // A subject that is not a wait is a clear error.
    let o = crate::common::convoy_status(
        &[
            "run",
            scen.to_str().unwrap(),
            "--blame",
            "--blame-subject",
            "nope",
        ],
        dir.path(),
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--blame-subject nope: no lock wait of that name; waits: "),
        "{err}"
    );
}

/// The report of the longest wait still going on at the end of a run
/// (`Blamed::stuck`), as `(depth, task, doing)` lines.
fn stuck(text: &str, subject: Option<&str>) -> (String, u64, Vec<(usize, String, String)>) {
    let c = crate::common::compile_text(text);
    let stats = subject.map(|s| {
        c.stats
            .iter_enumerated()
            .filter(|(_, st)| st.metric == output::Metric::Wait && st.subject == s)
            .map(|(i, _)| i)
            .collect()
    });
    let wanted = Wanted {
        top: 5,
        threshold: None,
        stats,
    };
    let st = blame_run(&c, (1, 0), Limits::default(), wanted, false)
        .unwrap()
        .stuck
        .expect("a wait still going on");
    let lines = st
        .lines
        .into_iter()
        .map(|l| (l.depth, l.task, l.doing))
        .collect();
    (st.subject, st.so_far.ns(), lines)
}

fn line(depth: usize, task: &str, doing: &str) -> (usize, String, String) {
    (depth, task.into(), doing.into())
}

#[test]
fn r3_r4_r45_stuck_at_the_end_reader_behind_queued_writer_behind_reclaiming_reader() {
    // The chain of RECLAIM_CHAIN cut at 30 ms, inside the lookup's 50 ms
    // reclaim attempt: no wait has ended, so the chains explain nothing,
    // and the report reads the world at the end instead.
    let text = CHAIN.replace("duration = \"1s\"", "duration = \"30ms\"");
    let (subject, so_far, lines) = stuck(&text, None);
    assert_eq!(subject, "kernfs_rwsem/write/mkdir");
    assert_eq!(so_far, 29 * MS);
    let reclaim = "in memcg reclaim (memcg full), this attempt until 0.050000 s, \
                   16 of 16 retries left (R45); holding kernfs_rwsem (read)";
    assert_eq!(
        lines,
        [
            line(
                0,
                "mkdir[0]",
                "waits for kernfs_rwsem (write) since 0.001000 s \
                 (4 more have asked for it since)"
            ),
            line(1, "lookup[0]", reclaim),
        ]
    );
    // A walker waits behind the queued writer (R3, R4), not behind the
    // reader that holds the lock.
    let (subject, so_far, lines) = stuck(&text, Some("kernfs_rwsem/read/walkers"));
    assert_eq!(subject, "kernfs_rwsem/read/walkers");
    assert_eq!(so_far, 28 * MS);
    assert_eq!(
        lines,
        [
            line(
                0,
                "walkers[0]",
                "waits for kernfs_rwsem (read) since 0.002000 s \
                 (3 more have asked for it since), behind the queued writer mkdir[0]"
            ),
            line(
                1,
                "mkdir[0]",
                "waits for kernfs_rwsem (write) since 0.001000 s \
                 (4 more have asked for it since)"
            ),
            line(2, "lookup[0]", reclaim),
        ]
    );
}

#[test]
fn r36_stuck_at_the_end_follows_a_flush_to_the_kworker_and_the_lock_it_waits_for() {
    // cgroup1_pidlist_destroy_all's shape (R36, R40): a task flushes a
    // workqueue holding a lock; the item it waits for waits for a mutex
    // whose holder sleeps; a third task waits for the first's lock.
    let text = r#"
[scenario]
name = "flush-stuck"
duration = "20ms"
cpus = 2
[locks.big]
kind = "mutex"
[locks.m]
kind = "mutex"
[workqueues.wq]
kind = "unbound"
max_active = 1
[works.w]
program = ["mutex_lock m", "cpu 1us", "mutex_unlock m"]
[tasks.holder]
count = 1
program = ["mutex_lock m", "sleep 1s", "mutex_unlock m"]
[tasks.freer]
count = 1
program = ["mutex_lock big", "sleep 5ms", "queue_work wq w", "flush_workqueue wq",
           "mutex_unlock big", "sleep 1s"]
[tasks.waiter]
count = 1
program = ["sleep 1ms", "mutex_lock big", "mutex_unlock big", "sleep 1s"]

[machine]
profile = 'ideal'
"#;
    let (subject, so_far, lines) = stuck(text, None);
    assert_eq!(subject, "big/lock/waiter");
    assert_eq!(so_far, 19 * MS);
    assert_eq!(
        lines,
        [
            line(0, "waiter[0]", "waits for big (lock) since 0.001000 s"),
            line(
                1,
                "freer[0]",
                "in flush_workqueue(wq): 1 item(s) in flight; holding big (lock)"
            ),
            line(2, "kworker/wq/0", "waits for m (lock) since 0.005000 s"),
            line(
                3,
                "holder[0]",
                "in a sleep step until 1.000000 s; holding m (lock)"
            ),
        ]
    );
}

#[test]
fn stuck_at_the_end_says_which_cpu_a_runnable_holder_waits_for() {
    // The holder's sleep ends at 1 ms, but two tasks burn both CPUs for
    // 1 s (PREEMPT_NONE, no time slice): it holds the mutex runnable,
    // waiting for a CPU, and the waiter waits with it.
    let text = r#"
[scenario]
name = "cpu-stuck"
duration = "20ms"
cpus = 2
[locks.m]
kind = "mutex"
[tasks.holder]
count = 1
program = ["mutex_lock m", "sleep 1ms", "mutex_unlock m", "sleep 1s"]
[tasks.waiter]
count = 1
program = ["mutex_lock m", "mutex_unlock m", "sleep 1s"]
[tasks.hog]
count = 2
program = ["cpu 1s"]

[machine]
profile = 'ideal'
"#;
    let waiter = line(0, "waiter[0]", "waits for m (lock) since 0.000000 s");
    let (_, so_far, lines) = stuck(text, None);
    assert_eq!(so_far, 20 * MS);
    assert_eq!(
        lines,
        [
            waiter.clone(),
            line(
                1,
                "holder[0]",
                "runnable: waiting for a CPU since 0.001000 s (runnable tasks waiting: 1); \
                 holding m (lock)"
            ),
        ]
    );
    // With per-CPU run queues it waits for its own CPU, behind the task
    // that runs there.
    let percpu = text.replace(
        "cpus = 2",
        "cpus = 2\nrunqueue = \"percpu\"\nwake_placement = \"eevdf\"",
    );
    let (_, _, lines) = stuck(&percpu, None);
    assert_eq!(
        lines,
        [
            waiter,
            line(
                1,
                "holder[0]",
                "runnable: waiting for CPU 0 since 0.001000 s (hog[0] runs there; \
                 tasks waiting for it: 1); holding m (lock)"
            ),
            line(2, "hog[0]", "on a CPU, in a cpu step until 1.000000 s"),
        ]
    );
}
