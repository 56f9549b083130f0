//! `convoy run --trace`: Chrome trace event JSON of one run.

use crate::common::{convoy, convoy_status};
use serde_json::Value;

const HANDOFF: &str = r#"
[scenario]
name = "handoff"
duration = "10ms"
cpus = 2
[locks.m]
kind = "mutex"
[tasks.holder]
count = 1
program = ["mutex_lock m", "span_begin nap", "sleep 1ms", "span_end nap", "mutex_unlock m", "sleep 100ms"]
[tasks.waiter]
count = 1
program = ["sleep 100us", "mutex_lock m", "cpu 50us", "mutex_unlock m", "sleep 100ms"]

[machine]
profile = 'ideal'
"#;

fn trace_of(args: &[&str]) -> (Value, Vec<u8>) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("h.toml"), HANDOFF).unwrap();
    let mut all = vec!["run", "h.toml", "--out", "out", "--trace", "t/h.json"];
    all.extend_from_slice(args);
    convoy(&all, d.path());
    let bytes = std::fs::read(d.path().join("t/h.json")).unwrap();
    (serde_json::from_slice(&bytes).unwrap(), bytes)
}

/// The trace of a whole run of scenario `text`.
fn trace_of_scenario(text: &str) -> Value {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("s.toml"), text).unwrap();
    convoy(
        &["run", "s.toml", "--out", "out", "--trace", "t.json"],
        d.path(),
    );
    serde_json::from_slice(&std::fs::read(d.path().join("t.json")).unwrap()).unwrap()
}

fn events(v: &Value) -> &Vec<Value> {
    v["traceEvents"].as_array().unwrap()
}

/// The slices named `name` on the track of task `task` (e.g. `q[0]`).
fn slices_of<'a>(v: &'a Value, task: &str, name: &str) -> Vec<&'a Value> {
    let tid = &events(v)
        .iter()
        .find(|e| e["ph"] == "M" && e["args"]["name"] == task)
        .unwrap_or_else(|| panic!("no track {task}"))["tid"];
    events(v)
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == name && e["tid"] == *tid)
        .collect()
}

/// The lock queue counter's samples: (time in us, waiters).
fn queue_counts(v: &Value) -> Vec<(f64, u64)> {
    events(v)
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["args"]["waiters"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The CPU a slice says it ran or waited on (`args.cpu`).
fn cpu_of(e: &Value) -> u64 {
    e["args"]["cpu"].as_u64().expect("args.cpu")
}

fn slice<'a>(v: &'a Value, name: &str) -> &'a Value {
    events(v)
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == name)
        .unwrap_or_else(|| panic!("no slice {name}"))
}

#[test]
fn a_handoff_shows_the_hold_the_wait_the_wakeup_and_the_queue() {
    let (v, bytes) = trace_of(&[]);
    // Every event has the fields the format requires; slices a duration.
    for e in events(&v) {
        for k in ["name", "ph", "ts", "pid", "tid"] {
            assert!(!e[k].is_null(), "{k} missing in {e}");
        }
        if e["ph"] == "X" {
            assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
        }
    }
    // Tracks are named after the tasks.
    let names: Vec<&str> = events(&v)
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["holder[0]", "waiter[0]"]);
    // The holder holds m for 1 ms; the waiter waits 0.1 -> 1 ms, then runs.
    let hold = slice(&v, "hold m (lock)");
    assert_eq!(
        (hold["ts"].as_f64(), hold["dur"].as_f64()),
        (Some(0.0), Some(1000.0))
    );
    assert_eq!(hold["tid"], 0);
    let wait = slice(&v, "wait m (lock)");
    assert_eq!(
        (wait["ts"].as_f64(), wait["dur"].as_f64()),
        (Some(100.0), Some(900.0))
    );
    assert_eq!(wait["tid"], 1);
    assert_eq!(slice(&v, "nap/holder")["dur"].as_f64(), Some(1000.0));
    assert_eq!(slice(&v, "cpu")["dur"].as_f64(), Some(50.0));
    // Two CPUs for two tasks: nobody ever waits for one.
    assert!(
        !events(&v).iter().any(|e| e["name"] == "runnable"),
        "{:?}",
        events(&v)
    );
    // One arrow from the unlocking holder to the waiter, at 1 ms.
    let flows: Vec<&Value> = events(&v).iter().filter(|e| e["cat"] == "wake").collect();
    assert_eq!(flows.len(), 2);
    assert_eq!(
        (&flows[0]["ph"], &flows[0]["tid"]),
        (&Value::from("s"), &Value::from(0))
    );
    assert_eq!(
        (&flows[1]["ph"], &flows[1]["tid"]),
        (&Value::from("f"), &Value::from(1))
    );
    assert_eq!(flows[0]["id"], flows[1]["id"]);
    assert_eq!(flows[1]["ts"].as_f64(), Some(1000.0));
    // m's queue: the waiter sleeps in it from 0.1 ms until it has m.
    let queue = queue_counts(&v);
    assert_eq!(queue, [(100.0, 1), (1000.0, 0)]);
    // The same run gives the same bytes.
    assert_eq!(trace_of(&[]).1, bytes);
}

#[test]
fn time_waiting_for_a_cpu_is_a_runnable_slice() {
    // One CPU, and the holder burns 200 us after its unlock: the waiter,
    // woken by that unlock at 1 ms, waits for the CPU until 1.2 ms. (At 0
    // it queues behind the holder's first steps, which take no time.)
    let one = HANDOFF.replace("cpus = 2", "cpus = 1").replace(
        "\"sleep 100ms\"]\n[tasks.waiter]",
        "\"cpu 200us\", \"sleep 100ms\"]\n[tasks.waiter]",
    );
    let v = trace_of_scenario(&one);
    let runnable: Vec<(f64, f64, u64)> = events(&v)
        .iter()
        .filter(|e| e["name"] == "runnable")
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap(),
                e["tid"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(runnable, [(1000.0, 200.0, 1)]);
}

#[test]
fn a_trace_window_keeps_what_ends_inside_it() {
    let (v, _) = trace_of(&["--trace-window", "500us..2ms"]);
    assert!(events(&v).iter().any(|e| e["name"] == "hold m (lock)"));
    let (v, _) = trace_of(&["--trace-window", "..900us"]);
    assert!(!events(&v).iter().any(|e| e["name"] == "hold m (lock)"));
    assert!(events(&v).iter().any(|e| e["name"] == "sleep"));
}

#[test]
fn a_bad_trace_window_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("h.toml"), HANDOFF).unwrap();
    for (w, needle) in [
        ("5ms", "expected A..B"),
        ("2ms..1ms", "empty"),
        ("1x..", "--trace-window"),
    ] {
        let o = convoy_status(
            &["run", "h.toml", "--trace", "t.json", "--trace-window", w],
            d.path(),
        );
        assert_eq!(o.status.code(), Some(2), "{w}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(needle), "{w}");
        assert!(!d.path().join("t.json").exists());
    }
}

#[test]
fn results_print_as_lock_stat_perf_lock_and_bpftrace() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("h.toml"), HANDOFF).unwrap();
    for (f, needle) in [
        ("lock_stat", "&m:"),
        ("perf-lock", "mutex   m"),
        ("bpftrace", "@wait[m/lock/waiter, base] (ns):"),
    ] {
        let o = convoy(&["run", "h.toml", "--out", "out", "--format", f], d.path());
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains(needle), "{f}: {stdout}");
        let file = std::fs::read_to_string(d.path().join(format!("out/{f}-base.txt"))).unwrap();
        assert!(file.contains(needle), "{f}: {file}");
    }
    // The waiter's one contended wait of 900 us, as lock_stat shows it.
    let ls = std::fs::read_to_string(d.path().join("out/lock_stat-base.txt")).unwrap();
    let m: Vec<&str> = ls
        .lines()
        .find(|l| l.contains("&m:"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        &m[1..8],
        ["0", "1", "900.00", "900.00", "900.00", "900.00", "0"]
    );
    let o = convoy_status(&["run", "h.toml", "--format", "dtrace"], d.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bpftrace, perf-lock, lock_stat"));
}

#[test]
fn a_kworker_waiting_for_its_cpu_is_a_runnable_slice() {
    // One CPU: q queues the item at 0 and burns 200 us; the kworker,
    // bound to that CPU, waits for it until q sleeps.
    let text = r#"
[scenario]
name = "kw"
duration = "10ms"
cpus = 1
[workqueues.wq]
kind = "percpu"
max_active = 1
[works.w]
instances = 1
program = ["cpu 10us"]
[tasks.q]
count = 1
program = ["queue_work wq w[0]", "cpu 200us", "sleep 100ms"]

[machine]
profile = 'ideal'
"#;
    let v = trace_of_scenario(text);
    // Each slice names the CPU: the kworker waited for CPU 0, which q ran on.
    let on = |task: &str, name: &str| -> Vec<(f64, f64, u64)> {
        slices_of(&v, task, name)
            .iter()
            .map(|e| {
                (
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                    cpu_of(e),
                )
            })
            .collect()
    };
    assert_eq!(on("kworker/wq/0", "runnable"), [(0.0, 200.0, 0)]);
    assert_eq!(on("kworker/wq/0", "cpu"), [(200.0, 10.0, 0)]);
    assert_eq!(on("q[0]", "cpu"), [(0.0, 200.0, 0)]);
}

#[test]
fn r37_a_per_cpu_item_runs_on_the_kworker_of_its_cpu() {
    // Two CPUs. a queues w[0] on its CPU at 0 and every 1.1 ms; b queues
    // w[1] on its CPU at 10 us and every 2.03 ms. b's kworker is done
    // first, so it is the longest idle when a queues again: a pool of
    // kworkers shared across CPUs would send it to a's CPU. A per-CPU
    // pool's kworkers stay on their CPU (R37): each kworker's slices are
    // all on one CPU, and each CPU's items run on one kworker.
    let text = r#"
[scenario]
name = "kw-home"
duration = "12ms"
cpus = 2
runqueue = "percpu"
[workqueues.wq]
kind = "percpu"
max_active = 1
[works.w]
instances = 2
program = ["cpu 10us"]
[tasks.a]
count = 1
program = ["loop", "  queue_work wq w[0]", "  cpu 100us", "  sleep 1ms", "end"]
[tasks.b]
count = 1
program = ["sleep 10us", "loop", "  queue_work wq w[1]", "  cpu 20us", "  sleep 2ms", "end"]

[machine]
profile = 'ideal'
"#;
    let v = trace_of_scenario(text);
    let cpus_of = |kworker: &str| -> std::collections::BTreeSet<u64> {
        slices_of(&v, kworker, "cpu")
            .into_iter()
            .map(cpu_of)
            .collect()
    };
    let (k0, k1) = (cpus_of("kworker/wq/0"), cpus_of("kworker/wq/1"));
    assert_eq!((k0.len(), k1.len()), (1, 1), "{k0:?} {k1:?}");
    assert_ne!(k0, k1);
    // Both items ran many times (about 11 and 6).
    let runs = |kworker: &str| slices_of(&v, kworker, "cpu").len();
    assert!(runs("kworker/wq/0") >= 5 && runs("kworker/wq/1") >= 5);
}

/// `(ts, dur)` of the slices named `name` on `task`'s track, in us.
fn spans(v: &Value, task: &str, name: &str) -> Vec<(f64, f64)> {
    slices_of(v, task, name)
        .iter()
        .map(|e| (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()))
        .collect()
}

/// Two per-CPU workqueues, one CPU's pool (R37); `x_program` is the
/// program of a's item x, y (on b) burns 50 us. q queues x then y on
/// CPU 0 at 0 and sleeps.
fn two_workqueues_one_pool(x_program: &str) -> Value {
    trace_of_scenario(&format!(
        r#"
[scenario]
name = "pool"
duration = "10ms"
cpus = 2
runqueue = "percpu"
[workqueues.a]
kind = "percpu"
max_active = 1
[workqueues.b]
kind = "percpu"
max_active = 1
[works.x]
program = {x_program}
[works.y]
program = ["cpu 50us"]
[tasks.q]
count = 1
program = ["queue_work a x[0]", "queue_work b y[0]", "sleep 100ms"]

[machine]
profile = 'ideal'
"#
    ))
}

#[test]
fn r37_a_running_kworker_keeps_working_on_its_pools_next_item() {
    // x queued first kicks one kworker; y, queued before that one runs,
    // kicks no other (the kicked one has not run). It takes x, then y
    // without sleeping (keep_working): the kworker of workqueue a runs
    // b's item, as a CPU's pool serves every per-CPU workqueue.
    let v = two_workqueues_one_pool(r#"["cpu 100us"]"#);
    assert_eq!(spans(&v, "kworker/a/0", "work x[0]"), [(0.0, 100.0)]);
    assert_eq!(spans(&v, "kworker/a/0", "work y[0]"), [(100.0, 50.0)]);
    for other in ["kworker/a/1", "kworker/b/0", "kworker/b/1"] {
        assert!(spans(&v, other, "work y[0]").is_empty(), "{other} ran y");
    }
}

#[test]
fn r37_a_kworker_that_sleeps_in_its_item_lets_the_pool_wake_another() {
    // x sleeps 1 ms at once: its kworker leaves nr_running, the pool
    // wakes the next idle kworker, which runs y at 0 on the CPU x left.
    let v = two_workqueues_one_pool(r#"["sleep 1ms", "cpu 10us"]"#);
    assert_eq!(spans(&v, "kworker/a/0", "work x[0]"), [(0.0, 1010.0)]);
    assert_eq!(spans(&v, "kworker/a/1", "work y[0]"), [(0.0, 50.0)]);
    assert_eq!(
        slices_of(&v, "kworker/a/1", "cpu")
            .into_iter()
            .map(cpu_of)
            .collect::<Vec<_>>(),
        [0],
        "bound to the pool's CPU"
    );
}

#[test]
fn r37_a_preempted_kworker_still_counts_as_running() {
    // One CPU, PREEMPT_VOLUNTARY, a 100 us slice seen at 1 ms ticks. The
    // kworker running x (30 x 100 us, a lock at each step: a preemption
    // point) yields at 1 ms to q, woken at 50 us, which queues y on the
    // same CPU and sleeps. The pool wakes no other kworker (a preempted one
    // is still in nr_running), so y waits for x and runs on x's kworker
    // after it (keep_working).
    let v = trace_of_scenario(
        r#"
[scenario]
name = "pool-preempt"
duration = "10ms"
cpus = 1
hz = 1000
preemption = "voluntary"
timeslice = "100us"
[locks.m]
kind = "mutex"
[workqueues.a]
kind = "percpu"
max_active = 1
[workqueues.b]
kind = "percpu"
max_active = 1
[works.x]
program = ["repeat 30", "  cpu 100us", "  mutex_lock m", "  mutex_unlock m", "end"]
[works.y]
program = ["cpu 50us"]
[tasks.q]
count = 1
program = ["queue_work a x[0]", "sleep 50us", "queue_work b y[0]", "sleep 100ms"]

[machine]
profile = 'ideal'
"#,
    );
    // q got the CPU at 1 ms, when the kworker yielded at a tick.
    assert_eq!(
        spans(&v, "q[0]", "sleep"),
        [(0.0, 50.0), (1000.0, 100000.0)]
    );
    assert_eq!(spans(&v, "kworker/a/0", "work x[0]"), [(0.0, 3000.0)]);
    assert_eq!(spans(&v, "kworker/a/0", "work y[0]"), [(3000.0, 50.0)]);
    // The other kworker (one per workqueue on one CPU) was never woken.
    assert!(spans(&v, "kworker/b/0", "runnable").is_empty());
}

#[test]
fn a_writer_that_queues_after_spinning_counts_in_the_queue() {
    // The writer spins on the reader-owned lock (R8: spinnable), gives up
    // after its spin (R9) and sleeps in the wait queue until the reader
    // releases at 2 ms: the queue counter shows it from when it queued.
    let v = trace_of_scenario(
        r#"
[scenario]
name = "spin-queue"
duration = "20ms"
cpus = 4
[locks.l]
kind = "rwsem"
[tasks.r]
count = 1
program = ["down_read l", "cpu 2ms", "up_read l", "sleep 100ms"]
[tasks.w]
count = 1
program = ["sleep 100us", "down_write l", "cpu 10us", "up_write l", "sleep 100ms"]

[machine]
profile = 'ideal'
"#,
    );
    let queue = queue_counts(&v);
    assert_eq!(queue.len(), 2, "{queue:?}");
    assert!(queue[0].0 > 100.0 && queue[0].0 < 2000.0, "{queue:?}");
    assert_eq!((queue[0].1, queue[1]), (1, (2000.0, 0)));
}

#[test]
fn r21_a_downgraded_hold_shows_its_write_part_then_its_read_part() {
    let v = trace_of_scenario(
        r#"
[scenario]
name = "downgrade"
duration = "10ms"
cpus = 2
[locks.l]
kind = "rwsem"
[tasks.w]
count = 1
program = ["down_write l", "sleep 1ms", "downgrade_write l", "sleep 1ms", "up_read l", "sleep 100ms"]

[machine]
profile = 'ideal'
"#,
    );
    let part = |name: &str| {
        let s = slices_of(&v, "w[0]", name);
        assert_eq!(s.len(), 1, "{name}");
        (s[0]["ts"].as_f64().unwrap(), s[0]["dur"].as_f64().unwrap())
    };
    assert_eq!(part("hold l (write)"), (0.0, 1000.0));
    assert_eq!(part("hold l (read)"), (1000.0, 1000.0));
}

/// The names of the tracks (threads) a trace holds.
fn track_names(v: &Value) -> Vec<String> {
    events(v)
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn trace_tasks_keeps_the_named_groups_and_the_wakeups_between_them() {
    // The whole trace has both tasks and the waiter's wakeup by the holder.
    let (all, _) = trace_of(&[]);
    assert_eq!(track_names(&all), ["holder[0]", "waiter[0]"]);
    assert!(events(&all).iter().any(|e| e["cat"] == "wake"));
    // Only the waiter: its track and slices, no arrow from a track that is
    // not there.
    let (only, _) = trace_of(&["--trace-tasks", "waiter"]);
    assert_eq!(track_names(&only), ["waiter[0]"]);
    // Every track event is the waiter's (the lock's queue counter is the
    // process's, kept).
    let waiter = &events(&only).iter().find(|e| e["ph"] == "M").unwrap()["tid"];
    let on_tracks: Vec<&Value> = (events(&only).iter()).filter(|e| e["ph"] != "C").collect();
    assert!(
        on_tracks.iter().all(|e| e["tid"] == *waiter),
        "{on_tracks:?}"
    );
    assert!(!events(&only).iter().any(|e| e["cat"] == "wake"));
    assert!(!events(&only)
        .iter()
        .any(|e| e["name"] == "hold m (lock)" && e["tid"] != *waiter));
    assert!(
        events(&only).iter().any(|e| e["name"] == "hold m (lock)"),
        "the waiter's hold"
    );
    // A name no task has is an error with the groups there are.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("h.toml"), HANDOFF).unwrap();
    let o = convoy_status(
        &[
            "run",
            "h.toml",
            "--out",
            "o",
            "--trace",
            "t.json",
            "--trace-tasks",
            "waiters",
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no task group or workqueue `waiters` to trace"),
        "{err}"
    );
    assert!(err.contains("(did you mean `waiter`?)"), "{err}");
    assert!(!d.path().join("o").exists() && !d.path().join("t.json").exists());
}

#[test]
fn a_trace_named_gz_is_gzip_of_the_same_json() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("h.toml"), HANDOFF).unwrap();
    let out = convoy(
        &[
            "run",
            "h.toml",
            "--out",
            "o",
            "--trace",
            "t.json.gz",
            "--seed",
            "1",
        ],
        d.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("trace: t.json.gz (base, replication 0): "),
        "{stdout}"
    );
    assert!(stdout.contains(" events, "), "{stdout}");
    let gz = std::fs::read(d.path().join("t.json.gz")).unwrap();
    assert_eq!(gz[..2], [0x1f, 0x8b], "gzip magic");
    let mut json = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut json).unwrap();
    convoy(
        &[
            "run", "h.toml", "--out", "o2", "--trace", "t.json", "--seed", "1",
        ],
        d.path(),
    );
    assert_eq!(json, std::fs::read(d.path().join("t.json")).unwrap());
}

/// Two locks and two spans, each contended once (the holder sleeps, so
/// its waiter sleeps too and is woken).
const TWO_LOCKS: &str = r#"
[scenario]
name = "two-locks"
duration = "10ms"
cpus = 4
[locks.m]
kind = "mutex"
[locks.n]
kind = "mutex"
[tasks.a]
count = 2
program = ["span_begin on_m", "mutex_lock m", "sleep 100us", "mutex_unlock m", "span_end on_m", "sleep 100ms"]
[tasks.b]
count = 2
program = ["span_begin on_n", "mutex_lock n", "sleep 100us", "mutex_unlock n", "span_end on_n", "sleep 100ms"]

[machine]
profile = 'ideal'
"#;

fn two_locks_trace(args: &[&str]) -> (Value, std::process::Output, tempfile::TempDir) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("s.toml"), TWO_LOCKS).unwrap();
    let mut all = vec!["run", "s.toml", "--out", "o", "--trace", "t.json"];
    all.extend_from_slice(args);
    let o = convoy_status(&all, d.path());
    let v = std::fs::read(d.path().join("t.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or(Value::Null);
    (v, o, d)
}

/// The names of the events of category `cat`.
fn names_of(v: &Value, cat: &str) -> Vec<String> {
    let mut n: Vec<String> = (events(v).iter())
        .filter(|e| e["cat"] == cat)
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n.dedup();
    n
}

#[test]
fn trace_locks_and_spans_keep_only_the_named_ones() {
    let (all, o, _d) = two_locks_trace(&[]);
    assert!(o.status.success());
    assert_eq!(names_of(&all, "wait"), ["wait m (lock)", "wait n (lock)"]);
    assert_eq!(names_of(&all, "span"), ["on_m/a", "on_n/b"]);
    assert_eq!(names_of(&all, "wake"), ["wake (m)", "wake (n)"]);

    let (only, o, _d) = two_locks_trace(&["--trace-locks", "n", "--trace-spans", "on_m"]);
    assert!(o.status.success());
    // Lock n's waits, holds, arrows and queue counter; none of m's.
    assert_eq!(names_of(&only, "wait"), ["wait n (lock)"]);
    assert_eq!(names_of(&only, "hold"), ["hold n (lock)"]);
    assert_eq!(names_of(&only, "wake"), ["wake (n)"]);
    assert!(
        (events(&only).iter()).all(|e| e["ph"] != "C" || e["name"] == "queue n"),
        "queue counters of n only"
    );
    // The spans named, whoever's lock they are about; every task's track.
    assert_eq!(names_of(&only, "span"), ["on_m/a"]);
    assert_eq!(track_names(&only).len(), 4);
}

#[test]
fn a_trace_filter_naming_no_lock_or_span_fails_before_the_run() {
    for (flag, name, want) in [
        (
            "--trace-locks",
            "mm",
            "no lock `mm` to trace; there are: m, n (did you mean `m`?)",
        ),
        (
            "--trace-spans",
            "on_x",
            "no span `on_x` to trace; there are: on_m, on_n (did you mean `on_m`?)",
        ),
    ] {
        let (_, o, d) = two_locks_trace(&[flag, name]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{err}");
        assert!(!d.path().join("o").exists() && !d.path().join("t.json").exists());
    }
}

#[test]
fn trace_max_events_cuts_the_trace_short_and_says_so() {
    let (all, o, _d) = two_locks_trace(&[]);
    assert!(o.status.success());
    assert_eq!(all["otherData"]["truncated"], false);
    let (cut, o, _d) = two_locks_trace(&["--trace-max-events", "10"]);
    assert!(o.status.success());
    assert_eq!(cut["otherData"]["truncated"], true);
    // The tracks' names are kept beside the 10 events.
    let not_meta = (events(&cut).iter()).filter(|e| e["ph"] != "M").count();
    assert!(
        not_meta <= 10 && not_meta < events(&all).len(),
        "{not_meta}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("or raise --trace-max-events"), "{err}");
    // The window's end is the run's (10 ms), not the open end of no
    // --trace-window; and the size of the whole window is told: as many
    // events as the uncut trace has.
    assert!(
        err.contains("before the window's end at 0.010000 s"),
        "{err}"
    );
    let held: usize = (err.split("the whole window holds ").nth(1))
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no window size in {err}"));
    assert_eq!(held, events(&all).len(), "{err}");
    // Before the traced run: the most it may take.
    assert!(
        err.contains("runs again for the trace: at most 10 events, about 1 kB of JSON"),
        "{err}"
    );
}
