//! Workqueues in the world (R32-R36, R40/R41): work items run their
//! programs on kworkers; `flush_workqueue` waits for the backlog queued
//! before it.

use crate::common::run_text;
use output::Metric;
use sim::Dur;

const MS: Dur = Dur(1_000_000);
const US: Dur = Dur(1_000);

#[test]
fn r36_r40_flush_latency_is_the_backlog_ahead_of_it_times_the_work_latency() {
    // cgroup_pidlist_destroy_wq's shape (R41): per-CPU, max_active 1. One
    // CPU; a producer queues K = 20 items of 500 us each, then a flusher
    // flushes: it waits for all 20, one after another (max_active 1), so
    // its flush takes 20 x 500 us = 10 ms.
    let text = r#"
[scenario]
name = "flush"
duration = "1s"
cpus = 1
[workqueues.destroy_wq]
kind = "percpu"
max_active = 1
[works.destroy]
instances = 20
program = ["cpu 500us"]
[tasks.producer]
count = 20
program = ["queue_work destroy_wq destroy[self]"]
[tasks.flusher]
count = 1
program = ["span_begin flush", "flush_workqueue destroy_wq", "span_end flush"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    assert_eq!(
        r.series(Metric::Span, "flush/flusher").unwrap().hist.max(),
        10 * MS
    );
    assert_eq!(r.counter("wq/destroy_wq/executed"), Some(20));
    // An unbound queue with max_active 4 on 4 CPUs runs 4 items at once:
    // the same backlog drains in 5 x 500 us.
    let wide = text.replace("cpus = 1", "cpus = 4").replace(
        "kind = \"percpu\"\nmax_active = 1",
        "kind = \"unbound\"\nmax_active = 4",
    );
    let r = run_text(&wide, 1);
    assert_eq!(
        r.series(Metric::Span, "flush/flusher").unwrap().hist.max(),
        2500 * US
    );
}

/// One unbound workqueue with max_active 1 and one work item of 2 ms of
/// CPU, and one task `t` whose `program` follows.
const ONE_WORK: &str = r#"
[scenario]
name = "one-work"
duration = "5s"
[workqueues.wq]
kind = "unbound"
max_active = 1
[works.w]
program = ["cpu 2ms"]
[machine]
profile = 'ideal'
[tasks.t]
count = 1"#;

#[test]
fn r36_flush_does_not_wait_for_an_armed_timer_and_r35_mod_delayed_work_moves_it() {
    // An item armed 1 s ahead is not waited for (R36); mod_delayed_work
    // with delay 0 queues it now (R35), and a flush after that waits for it.
    let text = ONE_WORK.to_owned()
        + r#"
program = [
  "queue_delayed_work wq w 1s",
  "span_begin early", "flush_workqueue wq", "span_end early",
  "mod_delayed_work wq w 0",
  "span_begin late", "flush_workqueue wq", "span_end late",
]
"#;
    let r = run_text(&text, 1);
    assert_eq!(
        r.series(Metric::Span, "early/t").unwrap().hist.max(),
        Dur::ZERO
    );
    assert_eq!(r.series(Metric::Span, "late/t").unwrap().hist.max(), 2 * MS);
    assert_eq!(
        r.counter("wq/wq/executed"),
        Some(1),
        "the timer was taken over, not fired again"
    );
}

#[test]
fn work_items_take_locks_like_tasks_and_show_under_their_own_name() {
    // The pidlist destroy work takes its cgroup's pidlist_mutex (R41),
    // held by a reader building a large pidlist (R42): the work waits, and
    // so does a flusher behind it.
    let text = r#"
[scenario]
name = "pidlist"
duration = "1s"
cpus = 2
[locks.pidlist_mutex]
kind = "mutex"
[workqueues.pidlist_wq]
max_active = 1
[works.pidlist_destroy]
program = ["mutex_lock pidlist_mutex", "cpu 10us", "mutex_unlock pidlist_mutex"]
[tasks.reader]
count = 1
program = ["mutex_lock pidlist_mutex", "cpu 30ms", "mutex_unlock pidlist_mutex"]
[tasks.rmdir]
count = 1
program = ["sleep 1ms", "queue_work pidlist_wq pidlist_destroy",
           "span_begin destroy_all", "flush_workqueue pidlist_wq", "span_end destroy_all"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    assert_eq!(
        r.series(Metric::Wait, "pidlist_mutex/lock/pidlist_destroy")
            .unwrap()
            .hist
            .max(),
        29 * MS
    );
    assert_eq!(
        r.series(Metric::Span, "destroy_all/rmdir")
            .unwrap()
            .hist
            .max(),
        29 * MS + 10 * US
    );
}

#[test]
fn r38_a_kworker_created_on_first_use_delays_its_first_item() {
    let text = r#"
[scenario]
name = "create"
duration = "1s"
[workqueues.wq]
kind = "unbound"
max_active = 1
workers = 1
warm_workers = 0
create_latency = "100us"
[works.w]
program = ["cpu 1ms"]
[tasks.t]
count = 1
program = [
  "span_begin first", "queue_work wq w", "flush_workqueue wq", "span_end first",
  "span_begin second", "queue_work wq w", "flush_workqueue wq", "span_end second",
]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    assert_eq!(
        r.series(Metric::Span, "first/t").unwrap().hist.max(),
        MS + 100 * US
    );
    assert_eq!(r.series(Metric::Span, "second/t").unwrap().hist.max(), MS);
}

#[test]
fn r40_if_work_busy_sees_an_armed_queued_or_running_item_and_not_a_finished_one() {
    // cgroup1_pidlist_destroy_all() re-queues the destroy work of each
    // pidlist the cgroup still has; a pidlist exists while its destroy work
    // is armed, queued or running (R40-R42). An item armed 1 s ahead is
    // busy. At HZ 250 its timer is 250 jiffies out, level 1 of the timer
    // wheel (8-jiffy buckets), so it fires at jiffy 256, 1.024 s (R35).
    // At 1.025 s it runs (2 ms of CPU): busy; at 1.035 s it has finished:
    // not busy, so the body is skipped and a flush after it has nothing to
    // wait for.
    let text = ONE_WORK.to_owned()
        + r#"
program = [
  "queue_delayed_work wq w 1s",
  "if_work_busy wq w", "  count armed", "end",
  "sleep 1025ms",
  "if_work_busy wq w", "  count running", "end",
  "sleep 10ms",
  "if_work_busy wq w", "  count finished", "  mod_delayed_work wq w 0", "end",
  "span_begin destroy_all", "flush_workqueue wq", "span_end destroy_all",
]
"#;
    let r = run_text(&text, 1);
    assert_eq!(r.counter("armed/t"), Some(1));
    assert_eq!(r.counter("running/t"), Some(1));
    assert_eq!(r.counter("finished/t").unwrap_or(0), 0);
    assert_eq!(r.counter("wq/wq/executed"), Some(1), "not queued again");
    assert_eq!(
        r.series(Metric::Span, "destroy_all/t").unwrap().hist.max(),
        Dur::ZERO
    );
    // The same program with the work still armed at the last test (a
    // timer 10 s out): the body re-queues it now and the flush waits for
    // its 2 ms.
    let armed = text.replace("queue_delayed_work wq w 1s", "queue_delayed_work wq w 10s");
    let r = run_text(&armed, 1);
    assert_eq!(r.counter("finished/t"), Some(1));
    assert_eq!(
        r.series(Metric::Span, "destroy_all/t").unwrap().hist.max(),
        2 * MS
    );
}

#[test]
fn r35_mod_delayed_work_to_a_later_time_fires_once_at_the_last_expiry() {
    // The world leaves a timer re-armed later where it was and moves it
    // when that earlier event comes due; re-armed earlier, it moves at
    // once. Either way the item runs exactly at its last expiry, once.
    // HZ 1000: a timer less than 63 jiffies out fires one jiffy after
    // jiffies + delay (the wheel's level 0 rounds strictly up); one 1 s
    // out goes to level 2, 64-jiffy buckets (R35, kernel/time/timer.c).
    let text = ONE_WORK.replace("duration = \"5s\"", "duration = \"5s\"\nhz = 1000")
        + r#"
program = [
  "mod_delayed_work wq w 40ms",           # 0: expires jiffy 40, fires 41 ms
  "sleep 20ms",
  "mod_delayed_work wq w 40ms",           # 20 ms: fires 61 ms
  "sleep 40ms",                           # 60 ms: the 41 ms event has passed
  "if_work_busy wq w", "  count armed_60", "end",
  "sleep 2500us",                         # 62.5 ms: fired at 61, runs 61..63
  "if_work_busy wq w", "  count busy_62_5", "end",   # (exact timers: 60..62, done)
  "sleep 1500us",                         # 64 ms: done
  "if_work_busy wq w", "  count busy_64", "end",
  "mod_delayed_work wq w 1s",             # 64 ms: jiffy 1064, level 2: would fire at 1088 ms
  "mod_delayed_work wq w 10ms",           # earlier: fires 75 ms, in place of that
  "sleep 12500us",                        # 76.5 ms: runs 75..77
  "if_work_busy wq w", "  count busy_76_5", "end",   # (exact timers: 74..76, done)
  "sleep 1500us",                         # 78 ms: done, nothing left armed
  "if_work_busy wq w", "  count busy_78", "end",
]
"#;
    let r = run_text(&text, 1);
    assert_eq!(r.counter("armed_60/t"), Some(1));
    assert_eq!(r.counter("busy_62_5/t"), Some(1));
    assert_eq!(r.counter("busy_64/t").unwrap_or(0), 0);
    assert_eq!(r.counter("busy_76_5/t"), Some(1));
    assert_eq!(r.counter("busy_78/t").unwrap_or(0), 0);
    // Nothing runs at 1088 ms, which the 5 s run goes past: re-armed
    // earlier, the timer no longer expires there.
    assert_eq!(r.counter("wq/wq/executed"), Some(2));
}

#[test]
fn r33_r35_an_item_waiting_for_its_kworker_is_still_pending() {
    // One CPU, busy with the queueing task: the kworker cannot take w[0]
    // off the worklist yet, so w[0] is still PENDING there. A second
    // queue_work is a no-op (R33); mod_delayed_work(0) grabs it off the
    // worklist and queues it again (R35). Either way it runs once. w[1],
    // inactive behind it (max_active 1), is cancelled and never runs.
    let text = r#"
[scenario]
name = "pending-on-worklist"
duration = "100ms"
cpus = 1
hz = 1000
[workqueues.wq]
kind = "percpu"
max_active = 1
[works.w]
instances = 2
program = ["cpu 2ms", "count ran"]
[tasks.a]
count = 1
program = ["cpu 10us", "queue_work wq w[0]", "queue_work wq w[0]", "mod_delayed_work wq w[0] 0ms", "queue_work wq w[1]", "cancel_delayed_work_sync wq w[1]", "sleep 50ms"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    assert_eq!(r.counter("ran/w"), Some(1));
    assert_eq!(r.counter("wq/wq/queue_noops"), Some(1));
    assert_eq!(r.counter("wq/wq/grabbed"), Some(2));
    assert_eq!(r.counter("wq/wq/executed"), Some(1));
}

/// The error a scenario text's run ends with (it must end with one).
fn run_error(text: &str) -> experiments::world::RunError {
    use experiments::world::{Limits, World};
    let c = crate::common::compile_text(text);
    World::new(&c, 1, 0, Limits::default())
        .run(&mut |_| {})
        .expect_err("the run must stop with an error")
}

/// Three workqueue deadlocks while a task `busy` goes on around them (so
/// the run reaches its end): `WORKS` and `TASKS` replaced.
const AROUND: &str = r#"
[scenario]
name = "cycle"
duration = "100ms"
[locks.m]
kind = "mutex"
[workqueues.q1]
kind = "unbound"
[workqueues.q2]
kind = "unbound"
WORKS
TASKS
[tasks.busy]
count = 1
program = ["loop", "sleep 1ms", "cpu 10us", "end"]

[machine]
profile = 'ideal'
"#;

#[test]
fn r36_a_flush_that_waits_on_itself_through_work_items_is_a_named_deadlock() {
    use experiments::world::RunError;
    let cases = [
        // A work item that flushes its own workqueue waits for itself.
        (
            "[works.w]\nprogram = [\"cpu 10us\", \"flush_workqueue q1\"]",
            "[tasks.t]\ncount = 1\nprogram = [\"queue_work q1 w\"]",
            vec![
                "kworker/q1/",
                "(running w[0]) blocked on a flush of q1 (workqueue) since t=",
                "at t.toml:12, which waits for work item w[0] run by itself",
            ],
        ),
        // A flusher holds the mutex its work item needs.
        (
            "[works.w]\nprogram = [\"mutex_lock m\", \"cpu 10us\", \"mutex_unlock m\"]",
            "[tasks.t]\ncount = 1\nprogram = [\"mutex_lock m\", \"queue_work q1 w\", \"cpu 100us\", \
             \"flush_workqueue q1\", \"mutex_unlock m\"]",
            vec![
                "t[0] blocked on a flush of q1 (workqueue) since t=",
                "which waits for work item w[0] run by kworker/q1/",
                "(running w[0]) blocked on m (lock) since",
                "held by t[0]",
            ],
        ),
        // Two work items flush each other's workqueue.
        (
            "[works.a]\nprogram = [\"queue_work q2 b\", \"cpu 10us\", \"flush_workqueue q2\"]\n\
             [works.b]\nprogram = [\"cpu 5us\", \"flush_workqueue q1\"]",
            "[tasks.t]\ncount = 1\nprogram = [\"queue_work q1 a\"]",
            vec![
                "(running a[0]) blocked on a flush of q2 (workqueue)",
                "which waits for work item b[0] run by kworker/q2/",
                "(running b[0]) blocked on a flush of q1 (workqueue)",
                "which waits for work item a[0] run by kworker/q1/",
            ],
        ),
    ];
    for (works, tasks, needles) in cases {
        let text = AROUND.replace("WORKS", works).replace("TASKS", tasks);
        let e = run_error(&text);
        assert!(matches!(e, RunError::WaitCycle { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("tasks wait for each other in a cycle of workqueue flushes, work items and locks, forever"),
            "{msg}"
        );
        for n in needles {
            assert!(msg.contains(n), "{n}\n{msg}");
        }
    }
    // Flushed without the lock held, the same items run to the end.
    let fine = AROUND
        .replace("WORKS", "[works.w]\nprogram = [\"mutex_lock m\", \"cpu 10us\", \"mutex_unlock m\"]")
        .replace(
            "TASKS",
            "[tasks.t]\ncount = 1\nprogram = [\"mutex_lock m\", \"queue_work q1 w\", \"cpu 100us\", \
             \"mutex_unlock m\", \"flush_workqueue q1\"]",
        );
    crate::common::run_text(&fine, 1);
}

#[test]
fn r110_a_later_flusher_returns_only_when_the_first_flusher_runs_its_cascade() {
    // Flusher f1 waits for item a (1 ms), f2 for a and b (200 us); b is
    // done long before a. The end of a wakes f1 alone (R110); f1 runs one
    // wake latency later and its cascade wakes f2, which runs one wake
    // latency after that. Both spans begin at the start, so f2's is one
    // wake latency longer than f1's; were f2 woken with f1 it would be
    // as long.
    let text = r#"
[scenario]
name = "cascade"
duration = "1s"
cpus = 4
wake_latency = "500us"
[workqueues.wq]
kind = "unbound"
max_active = 2
[works.a]
program = ["cpu 1ms"]
[works.b]
program = ["cpu 200us"]
[tasks.f1]
count = 1
program = ["span_begin f1", "queue_work wq a", "flush_workqueue wq", "span_end f1"]
[tasks.f2]
count = 1
program = ["span_begin f2", "sleep 100us", "queue_work wq b", "flush_workqueue wq", "span_end f2"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    let f1 = r.series(Metric::Span, "f1/f1").unwrap().hist.max();
    let f2 = r.series(Metric::Span, "f2/f2").unwrap().hist.max();
    assert_eq!(f2, f1 + 500 * US, "f1 {f1:?} f2 {f2:?}");
    assert_eq!(r.counter("wq/wq/flushes_waited"), Some(2));
}

/// R118's micro-scenario: four CPUs whose lines cost 50 ns from any
/// other CPU and 1 ns locally, a per-CPU workqueue (a pwq on each CPU),
/// and the flushers of the test's `tasks`.
fn r118_text(tasks: &str) -> String {
    format!(
        r#"
[scenario]
name = "flush-prep"
duration = "1s"
cpus = 4
[workqueues.wq]
kind = "percpu"
max_active = 1
[works.a]
program = ["cpu 1ms"]
[machine]
profile = 'ideal'
line_local = "1ns"
line_smt = "50ns"
line_socket = "50ns"
line_remote = "50ns"
{tasks}
"#
    )
}

#[test]
fn r118_a_flush_pays_one_pass_over_every_pwq_before_it_waits_and_one_per_colour_its_cascade_arms() {
    // One pass: two lines from each of the 3 other CPUs' pools, two local.
    let pass = Dur(2 * (3 * 50 + 1));
    // Nothing in flight: the flush costs its pass and returns.
    let alone = r118_text(
        "[tasks.f]\ncount = 1\nprogram = [\"span_begin f\", \"flush_workqueue wq\", \"span_end f\", \"sleep 2s\"]",
    );
    let r = run_text(&alone, 1);
    assert_eq!(r.series(Metric::Span, "f/f").unwrap().hist.max(), pass);
    assert_eq!(r.counter("wq/wq/flush_prep_passes"), Some(1));
    // f1 queues item a on its CPU and flushes: its pass, then a's 1 ms
    // on a kworker of that CPU once f1 sleeps. f2 flushes at 100 us,
    // while f1 waits: it takes the next colour (a pass) and waits behind
    // f1. a's end wakes f1 alone (R110), on an idle CPU, whose polling
    // idle state costs the waker one line (R63): 50 ns. f1's cascade
    // arms f2's colour, finds its work done and returns it at once (f2
    // is woken the same way, and f1 pays that line as its waker, R122),
    // then pays that pass before it returns.
    let two = r118_text(
        r#"[tasks.f1]
count = 1
program = ["span_begin f1", "queue_work wq a", "flush_workqueue wq", "span_end f1", "sleep 2s"]
[tasks.f2]
count = 1
program = ["sleep 100us", "span_begin f2", "flush_workqueue wq", "span_end f2", "sleep 2s"]"#,
    );
    let r = run_text(&two, 1);
    let f1 = r.series(Metric::Span, "f1/f1").unwrap().hist.max();
    let f2 = r.series(Metric::Span, "f2/f2").unwrap().hist.max();
    let wake = Dur(50);
    assert_eq!(f1, pass + MS + wake + wake + pass, "f1 {f1:?}");
    assert_eq!(f2, pass + MS + wake + wake - 100 * US, "f2 {f2:?}");
    assert_eq!(r.counter("wq/wq/flush_prep_passes"), Some(3));
    // On the ideal machine lines cost nothing, and neither does a pass.
    let free = alone
        .replace("line_local = \"1ns\"", "")
        .replace("\"50ns\"", "\"0ns\"");
    let r = run_text(&free, 1);
    assert_eq!(r.series(Metric::Span, "f/f").unwrap().hist.max(), Dur::ZERO);
}

/// One CPU under PREEMPT_NONE with 3 ms EEVDF slices at a 1 ms tick: `t`
/// queues one 4 ms item on a per-CPU workqueue and flushes it while a hog
/// wants the CPU.
const COND_RESCHED_ITEM: &str = r#"
[scenario]
name = "item-cond-resched"
duration = "100ms"
cpus = 1
hz = 1000
timeslice = "3ms"
preemption = "none"
runqueue = "percpu"
wake_placement = "eevdf"
[workqueues.wq]
kind = "percpu"
max_active = 1
[works.w]
program = ["cpu 4ms"]
[tasks.t]
count = 1
program = ["queue_work wq w[0]", "span_begin flush", "flush_workqueue wq", "span_end flush", "sleep 1s"]
[tasks.hog]
count = 1
program = ["loop", "  cpu 100us", "end"]

[machine]
profile = 'ideal'
"#;

#[test]
fn r123_a_kworker_whose_cpu_is_wanted_yields_after_its_item_before_the_item_counts_done() {
    // `t` queues and sleeps in the flush at 0; the hog, queued first, runs
    // its slice to the 3 ms tick. The kworker then runs its 4 ms item to 7 ms
    // without a preemption point (PREEMPT_NONE, kernel code); its slice ran
    // out at the 6 ms tick, so process_one_work's cond_resched() gives the
    // CPU back to the hog for a slice (7 to 10 ms) before
    // pwq_dec_nr_in_flight: the flush returns at 10 ms, not at 7. Without a
    // task that wants the CPU the item ends at 4 ms and counts at once.
    let r = run_text(COND_RESCHED_ITEM, 1);
    let flush = r.series(Metric::Span, "flush/t").unwrap().hist.max();
    assert_eq!(flush, 10 * MS);
    assert_eq!(r.counter("wq/wq/executed"), Some(1));
    let alone = COND_RESCHED_ITEM.replace(
        "count = 1\nprogram = [\"loop\"",
        "count = 0\nprogram = [\"loop\"",
    );
    let r = run_text(&alone, 1);
    assert_eq!(
        r.series(Metric::Span, "flush/t").unwrap().hist.max(),
        4 * MS
    );
}
