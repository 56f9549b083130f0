//! The Linux lock policies inside the world: the convoy recipe of
//! docs/kernel-rules.md ("Modeling implications"), spinning on the CPU
//! model, and the mutex against queueing theory.

use crate::common::{machine_repairman_wq, run_text};
use output::Metric;
use sim::Dur;

const MS: Dur = Dur(1_000_000);
const US: Dur = Dur(1_000);

#[test]
fn convoy_recipe_reader_in_reclaim_writer_queued_new_readers_parked_one_batched_wakeup() {
    // 1. A walker holds kernfs_rwsem for read and sleeps 100 ms (reclaim).
    // 2. A mkdir writer arrives at 1 ms, spins 10.5 us on the reader-owned
    //    lock (R10), sets NONSPINNABLE and queues.
    // 3. Walkers arriving from 2 ms miss the fast path and queue (R3, R4a).
    // 4. At 100 ms the reader releases: the writer is woken, runs, takes the
    //    lock for 20 us; its up_write grants all parked walkers in one batch.
    let text = r#"
[scenario]
name = "recipe"
duration = "1s"
cpus = 8
[locks.kernfs_rwsem]
kind = "rwsem"
[tasks.reclaimer]
count = 1
program = ["down_read kernfs_rwsem", "sleep 100ms", "up_read kernfs_rwsem"]
[tasks.mkdir]
count = 1
program = ["sleep 1ms", "down_write kernfs_rwsem", "cpu 20us", "up_write kernfs_rwsem"]
[tasks.walkers]
count = 5
program = ["sleep 2ms", "down_read kernfs_rwsem", "cpu 1us", "up_read kernfs_rwsem"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    let w = &r
        .series(Metric::Wait, "kernfs_rwsem/write/mkdir")
        .unwrap()
        .hist;
    assert_eq!(
        w.max(),
        99 * MS,
        "the writer waits for the reclaiming reader"
    );
    let p = &r
        .series(Metric::Wait, "kernfs_rwsem/read/walkers")
        .unwrap()
        .hist;
    assert_eq!(p.count(), 5);
    assert_eq!(
        (p.min(), p.max()),
        (98 * MS + 20 * US, 98 * MS + 20 * US),
        "parked until the writer is done"
    );
    let c = |n: &str| r.counter(&format!("kernfs_rwsem/{n}")).unwrap();
    assert_eq!(c("spins"), 1);
    assert_eq!(c("nonspinnable_sets"), 1);
    assert_eq!(c("reader_batches"), 1);
    assert_eq!(c("reader_batch_max"), 5);
    assert_eq!(c("read_contentions"), 5);
    assert_eq!(c("write_contentions"), 1);
}

#[test]
fn spinner_keeps_its_cpu_until_need_resched_makes_it_yield() {
    // Two CPUs. w1 holds the lock and computes 5 ms; w2 arrives at 1 ms and
    // spins on the running owner (R9), occupying the second CPU. At 2 ms a
    // worker needs a CPU: need_resched stops the spin (R8/R28), w2 sleeps in
    // the wait list and the worker runs at once. At 5 ms up_write wakes w2.
    let text = r#"
[scenario]
name = "resched"
duration = "1s"
cpus = 2
[locks.l]
kind = "rwsem"
[tasks.w1]
count = 1
program = ["down_write l", "cpu 5ms", "up_write l"]
[tasks.w2]
count = 1
program = ["sleep 1ms", "down_write l", "cpu 1ms", "up_write l"]
[tasks.worker]
count = 1
program = ["span_begin work", "sleep 2ms", "cpu 1ms", "span_end work"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    // The span runs from 0: 2 ms asleep, then 1 ms of CPU with no wait.
    assert_eq!(
        r.series(Metric::Span, "work/worker").unwrap().hist.max(),
        3 * MS,
        "the worker did not wait for the spinner"
    );
    assert_eq!(
        r.series(Metric::Wait, "l/write/w2").unwrap().hist.max(),
        4 * MS
    );
    assert_eq!(r.counter("l/spins"), Some(1));
    assert_eq!(r.counter("l/spin_successes"), Some(0));
    assert_eq!(r.counter("cpu/spin_resched_stops"), Some(1));
    // Without the worker, w2 spins through and takes the lock at release.
    let r = run_text(
        &text.replace("[tasks.worker]\ncount = 1", "[tasks.worker]\ncount = 0"),
        1,
    );
    assert_eq!(r.counter("l/spin_successes"), Some(1));
    assert_eq!(
        r.series(Metric::Wait, "l/write/w2").unwrap().hist.max(),
        4 * MS
    );
}

#[test]
fn linux_mutex_writer_only_load_matches_finite_source_mm1_within_2_percent() {
    // Spinning off and no wake latency: a woken head runs at once and takes
    // the mutex before anyone can barge (arrivals at the same instant have
    // probability zero), so the mutex is a FIFO single server.
    let text = r#"
[scenario]
name = "mm1"
duration = "400s"
[locks.m]
kind = "mutex"
policy = "linux"
spin_on_owner = false
[tasks.w]
count = 4
program = ["loop", "sleep exp(2ms)", "mutex_lock m", "cpu exp(100us)", "mutex_unlock m", "end"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 3);
    let h = &r.series(Metric::Wait, "m/lock/w").unwrap().hist;
    let exact_us = machine_repairman_wq(4, 1.0 / 2000.0, 1.0 / 100.0);
    let sim_us = h.mean_f64() / 1e3;
    let err = (sim_us - exact_us).abs() / exact_us;
    assert!(h.count() > 700_000);
    assert!(
        err < 0.02,
        "{sim_us:.3} us vs exact {exact_us:.3} us ({:.2}%)",
        err * 100.0
    );
    assert_eq!(r.counter("m/barges"), Some(0));
}

/// Per-CPU run queues, two CPUs: w1 holds `l` computing 5 ms on CPU 0 and
/// w2 spins on it on CPU 1. With `same_cpu`, w2 first sleeps 1 ms and a
/// worker, placed on CPU 1, wakes at 2 ms to find both CPUs busy; else w2
/// spins from the start and the worker, placed on CPU 0, waits for it.
fn percpu_spin_text(kind: &str, same_cpu: bool) -> String {
    let (lock, unlock) = match kind {
        "mutex" => ("mutex_lock l", "mutex_unlock l"),
        _ => ("down_write l", "up_write l"),
    };
    let (w2_sleep, worker_sleep) = if same_cpu {
        ("\"sleep 1ms\", ", "\"sleep 2ms\", ")
    } else {
        ("", "")
    };
    format!(
        r#"
[scenario]
name = "percpu-resched"
duration = "1s"
cpus = 2
runqueue = "percpu"
wake_placement = "fifo"
[locks.l]
kind = "{kind}"
[tasks.w1]
count = 1
program = ["{lock}", "cpu 5ms", "{unlock}"]
[tasks.w2]
count = 1
program = [{w2_sleep}"{lock}", "cpu 1ms", "{unlock}"]
[tasks.worker]
count = 1
program = ["span_begin work", {worker_sleep}"cpu 1ms", "span_end work"]

[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r8_r28_need_resched_is_per_cpu_a_task_waiting_for_another_cpu_leaves_the_spinner_be() {
    for kind in ["rwsem", "mutex"] {
        let wait_w2 = |r: &output::VariantResult| {
            let name = if kind == "mutex" {
                "l/lock/w2"
            } else {
                "l/write/w2"
            };
            r.series(Metric::Wait, name).unwrap().hist.max()
        };
        // The worker waits for CPU 1, where w2 spins: need_resched there
        // stops the spin, w2 sleeps and the worker runs at once (span 3 ms:
        // 2 asleep, 1 on CPU). w2 is woken at 5 ms.
        let r = run_text(&percpu_spin_text(kind, true), 1);
        let span = r.series(Metric::Span, "work/worker").unwrap().hist.max();
        assert_eq!(span, 3 * MS, "{kind}: the worker did not take w2's CPU");
        assert_eq!(r.counter("l/spins"), Some(1), "{kind}");
        assert_eq!(r.counter("l/spin_successes"), Some(0), "{kind}");
        assert_eq!(r.counter("cpu/spin_resched_stops"), Some(1), "{kind}");
        assert_eq!(wait_w2(&r), 4 * MS, "{kind}");
        // The worker waits for CPU 0, where w1 computes: w2's CPU is not
        // wanted, so w2 spins on until w1 releases at 5 ms and takes the
        // lock then; the worker waits for CPU 0 until w1 is done. A global
        // need_resched would stop w2's spin at once, and the worker would
        // run on w2's CPU without waiting.
        let r = run_text(&percpu_spin_text(kind, false), 1);
        assert_eq!(
            r.counter("cpu/runqueue_wait_ns"),
            Some((5 * MS).ns()),
            "{kind}: the worker should wait 5 ms for CPU 0, and nobody else"
        );
        assert_eq!(r.counter("l/spins"), Some(1), "{kind}");
        assert_eq!(r.counter("l/spin_successes"), Some(1), "{kind}");
        assert_eq!(r.counter("cpu/spin_resched_stops"), Some(0), "{kind}");
        assert_eq!(wait_w2(&r), 5 * MS, "{kind}");
    }
}

#[test]
fn r120_r8_r28_need_resched_is_the_schedulers_flag_a_queued_task_waits_for_the_spinners_slice_tick()
{
    // As above, with a 3 ms time slice at HZ 250: need_resched is
    // TIF_NEED_RESCHED, set by the tick that finds the running task's
    // slice used up (or by a wakeup the fair order lets preempt, or an RT
    // task), not by a task merely queued behind it. w2 got CPU 1 at 1 ms
    // and spins on w1; the worker queues on CPU 1 at 2 ms. w2's slice runs
    // out at 4 ms, a tick at HZ 250: need_resched stops the spin there, w2
    // sleeps, and the worker runs from 4 to 5 ms (span 5 ms: 2 asleep, 2
    // waiting, 1 on CPU). At 5 ms w1 releases and w2 is woken: it waited
    // 4 ms. A queued task setting need_resched would give a 3 ms span.
    for kind in ["rwsem", "mutex"] {
        let text = percpu_spin_text(kind, true).replace(
            "wake_placement = \"fifo\"",
            "wake_placement = \"fifo\"\ntimeslice = \"3ms\"\nhz = 250",
        );
        let r = run_text(&text, 1);
        let span = r.series(Metric::Span, "work/worker").unwrap().hist.max();
        assert_eq!(span, 5 * MS, "{kind}: the worker waits for w2's slice tick");
        assert_eq!(r.counter("cpu/spin_resched_stops"), Some(1), "{kind}");
        assert_eq!(r.counter("l/spins"), Some(1), "{kind}");
        assert_eq!(r.counter("l/spin_successes"), Some(0), "{kind}");
        let name = if kind == "mutex" {
            "l/lock/w2"
        } else {
            "l/write/w2"
        };
        let w2 = r.series(Metric::Wait, name).unwrap().hist.max();
        assert_eq!(w2, 4 * MS, "{kind}");
        // With a 1 ms slice, w2's slice ends at 2 ms, and the tick that
        // sees it is at 4 ms: the same.
        let r = run_text(
            &text.replace("timeslice = \"3ms\"", "timeslice = \"1ms\""),
            1,
        );
        let span = r.series(Metric::Span, "work/worker").unwrap().hist.max();
        assert_eq!(span, 5 * MS, "{kind}: the slice's end is seen at a tick");
        // With a slice that ends after w1's release (6 ms, the tick
        // at 8 ms), w2 spins through and takes the lock at 5 ms, and the
        // worker waits until CPU 0, free when w1 ends at 5 ms, pulls it
        // (span 2 + 3 + 1 = 6 ms).
        let r = run_text(
            &text.replace("timeslice = \"3ms\"", "timeslice = \"6ms\""),
            1,
        );
        assert_eq!(r.counter("cpu/spin_resched_stops"), Some(0), "{kind}");
        assert_eq!(r.counter("l/spin_successes"), Some(1), "{kind}");
        let span = r.series(Metric::Span, "work/worker").unwrap().hist.max();
        assert_eq!(
            span,
            6 * MS,
            "{kind}: w2 keeps its CPU through its lock's hold"
        );
    }
}
