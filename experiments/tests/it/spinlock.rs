//! Spinlocks in the world (docs/kernel-rules.md R75-R80): waiters that
//! keep their CPU, holders that are not preempted and may not sleep, the
//! qspinlock's order of grants, what a handoff costs on the lock word's
//! line under the qspinlock and a ticket lock, and the ticket lock's
//! collapse as CPUs are added (the shipped example,
//! experiments/scenarios/examples/spinlock-scaling.toml).
//!
//! Tasks take the lowest free CPU in task order at the start; a task
//! that must keep its CPU burns it (`cpu`) instead of sleeping.

use crate::common::{compile_error, run_text};
use experiments::scenario::{compile, ScenarioFile};
use experiments::world::{Limits, World};
use output::{Metric, VariantResult};
use sim::Dur;

const US: u64 = 1_000;

fn max(r: &VariantResult, metric: Metric, subject: &str) -> Dur {
    (r.series(metric, subject))
        .unwrap_or_else(|| panic!("no {subject}"))
        .hist
        .max()
}

fn counter(r: &VariantResult, subject: &str) -> u64 {
    r.counter(subject)
        .unwrap_or_else(|| panic!("no counter {subject}"))
}

/// `w` sleeps 2 us and then wants a CPU while `h` holds lock `l` (kind
/// `kind`) for 10 us on one CPU and `s` waits for it on the other.
fn spinner_and_wakee(kind: &str, lock: &str, unlock: &str) -> String {
    format!(
        r#"
[scenario]
name = "r75"
duration = "1ms"
cpus = 2
[machine]
profile = "ideal"
[locks.l]
kind = "{kind}"
[tasks.w]
count = 1
program = ["span_begin w", "sleep 2us", "cpu 1us", "span_end w"]
[tasks.h]
count = 1
program = ["{lock} l", "cpu 10us", "{unlock} l"]
[tasks.s]
count = 1
program = ["cpu 1us", "span_begin s", "{lock} l", "{unlock} l", "span_end s"]
"#
    )
}

#[test]
fn r75_a_spinlock_waiter_keeps_its_cpu_when_another_task_wants_it() {
    // w (CPU 0) sleeps at 0; h (CPU 1) takes the lock; s (CPU 0) asks at
    // 1 us. At 2 us w wants a CPU. A mutex spinner stops (need_resched,
    // R27): s sleeps and w runs at once. A spinlock waiter spins on with
    // preemption disabled: w waits until h leaves its CPU at 10 us.
    let r = run_text(&spinner_and_wakee("mutex", "mutex_lock", "mutex_unlock"), 1);
    assert_eq!(max(&r, Metric::Span, "w/w"), Dur(3 * US));
    assert_eq!(counter(&r, "cpu/spin_resched_stops"), 1);
    let r = run_text(
        &spinner_and_wakee("spinlock", "spin_lock", "spin_unlock"),
        1,
    );
    assert_eq!(max(&r, Metric::Span, "w/w"), Dur(11 * US));
    assert_eq!(max(&r, Metric::Span, "s/s"), Dur(9 * US));
    assert_eq!(counter(&r, "cpu/spin_resched_stops"), 0);
    assert_eq!(counter(&r, "l/contentions"), 1);
}

/// One CPU: `h` runs 10 us in `l` (kind `kind`) and 10 us after it; the
/// RT task `w` wakes at 2 us, under PREEMPT_FULL.
fn holder_and_rt_wakee(kind: &str, lock: &str, unlock: &str) -> String {
    format!(
        r#"
[scenario]
name = "r75full"
duration = "1ms"
cpus = 1
preemption = "full"
[machine]
profile = "ideal"
[locks.l]
kind = "{kind}"
[tasks.w]
count = 1
class = "rt"
program = ["span_begin w", "sleep 2us", "cpu 1us", "span_end w"]
[tasks.h]
count = 1
program = ["span_begin h", "{lock} l", "cpu 10us", "{unlock} l", "cpu 10us", "span_end h"]
"#
    )
}

#[test]
fn r75_a_spinlock_holder_is_preempted_only_at_its_spin_unlock() {
    // Under a mutex the RT wakee preempts h at 2 us; under a spinlock
    // preemption is disabled until spin_unlock (10 us), whose
    // preempt_enable is the preemption point.
    let r = run_text(
        &holder_and_rt_wakee("mutex", "mutex_lock", "mutex_unlock"),
        1,
    );
    assert_eq!(max(&r, Metric::Span, "w/w"), Dur(3 * US));
    assert_eq!(max(&r, Metric::Span, "h/h"), Dur(21 * US));
    let r = run_text(
        &holder_and_rt_wakee("spinlock", "spin_lock", "spin_unlock"),
        1,
    );
    assert_eq!(max(&r, Metric::Span, "w/w"), Dur(11 * US));
    assert_eq!(max(&r, Metric::Hold, "l/lock/h"), Dur(10 * US));
    assert_eq!(max(&r, Metric::Span, "h/h"), Dur(21 * US));
}

/// Under PREEMPT_FULL an RT task wakes while the spinner `s`, granted
/// `l`, waits for its cmpxchg to bring the word's line over (R73): `s`
/// is inside `spin_lock`, preemption off (R75), so the wakee takes the
/// CPU of `h`, which runs lock-free code. Before the fix `s` was taken
/// off its CPU owning `l`: its wait grew by the wakee's 5 us, and in
/// rmdir-churn under `machine.preemption=full` two readers spun on both
/// CPUs for a file_lock whose owner could never run again.
#[test]
fn r75_a_spinner_granted_the_lock_is_not_preempted_in_its_cmpxchg() {
    let r = run_text(
        r#"
[scenario]
name = "granted"
duration = "1ms"
cpus = 3
preemption = "full"
[machine]
profile = "ideal"
line_local = "1ns"
line_socket = "100ns"
[locks.l]
kind = "spinlock"
[locks.m]
kind = "spinlock"
[tasks.x]
count = 1
program = ["spin_lock m", "cpu 100us", "spin_unlock m"]
[tasks.s]
count = 1
program = ["cpu 1us", "spin_lock l", "cpu 1us", "spin_unlock l"]
[tasks.h]
count = 1
program = ["span_begin h", "spin_lock l", "cpu 10us", "spin_unlock l", "cpu 50us", "span_end h"]
[tasks.w]
count = 1
class = "rt"
program = ["span_begin w", "sleep 10250ns", "cpu 5us", "span_end w"]
"#,
        1,
    );
    // x holds m on CPU 0 throughout; h takes l at 0.1 us on CPU 2 and
    // drops it at 10.1; s, spinning on CPU 1 since 1 us, is granted it
    // and its cmpxchg takes the line from CPU 2 until 10.3 us. w wakes at
    // 10.25 us: s is inside spin_lock, so w preempts h at once.
    assert_eq!(max(&r, Metric::Wait, "l/lock/s"), Dur(9_300));
    assert_eq!(max(&r, Metric::Hold, "l/lock/s"), Dur(1_001));
    assert_eq!(max(&r, Metric::Span, "w/w"), Dur(15_250));
    // h waits from 10.25 us for CPU 1, free when s is done at 11.301.
    assert_eq!(max(&r, Metric::Span, "h/h"), Dur(61_251));
}

#[test]
fn r75_a_spinlock_holder_may_not_sleep() {
    let base = r#"
[scenario]
name = "bad"
duration = "1ms"
[machine]
profile = "ideal"
[locks.l]
kind = "spinlock"
[locks.m]
kind = "mutex"
[memcg.g]
max = "1MiB"
[tasks.t]
count = 1
program = ["spin_lock l", "STEP", "spin_unlock l"]
"#;
    for (step, kw) in [
        ("sleep 1us", "sleep"),
        ("mutex_lock m\", \"mutex_unlock m", "mutex_lock"),
        ("might_resched", "might_resched"),
        ("cond_resched", "cond_resched"),
        ("charge g 1 page", "charge"),
    ] {
        let msg = compile_error(&base.replace("STEP", step));
        assert!(
            msg.contains(&format!("`{kw}` may sleep"))
                && msg.contains("`l` (spinlock) is held here")
                && msg.contains("t.toml:"),
            "{step}: {msg}"
        );
    }
    // What cannot sleep is allowed: an atomic allocation, a CPU burst.
    for step in ["charge g 1 page atomic", "cpu 1us"] {
        run_text(&base.replace("STEP", step), 1);
    }
}

/// `h` holds `l` 10 us from 0; the tasks of `arrivals` ask for it at the
/// given microseconds, each holding it 10 us.
fn arrivals_text(policy: &str, extra: &str, arrivals: &[(&str, u64)]) -> String {
    let mut t = format!(
        r#"
[scenario]
name = "order"
duration = "1ms"
cpus = {}
[machine]
profile = "ideal"
[locks.l]
kind = "spinlock"
policy = "{policy}"
{extra}
[tasks.h]
count = 1
program = ["spin_lock l", "cpu 10us", "spin_unlock l"]
"#,
        arrivals.len() + 1
    );
    for (name, at) in arrivals {
        t.push_str(&format!(
            "[tasks.{name}]\ncount = 1\nprogram = [\"cpu {at}us\", \"spin_lock l\", \"cpu 10us\", \"spin_unlock l\"]\n"
        ));
    }
    t
}

#[test]
fn r76_r77_r78_the_qspinlock_grants_in_arrival_order_pending_first_then_the_queue() {
    // a (1 us) sets pending; b (2 us) heads the MCS queue, c (3 us)
    // queues behind it; d comes at 15 us, while a holds it: behind c,
    // though the word's pending bit is clear then (the tail is set).
    let arrivals = [("a", 1), ("b", 2), ("c", 3), ("d", 15)];
    let r = run_text(&arrivals_text("linux", "", &arrivals), 1);
    let want = [("h", 0), ("a", 10), ("b", 20), ("c", 30), ("d", 40)];
    for (name, granted) in want {
        let asked = arrivals.iter().find(|a| a.0 == name).map_or(0, |a| a.1);
        assert_eq!(
            max(&r, Metric::Wait, &format!("l/lock/{name}")),
            Dur((granted - asked) * US),
            "{name}"
        );
        assert_eq!(
            max(&r, Metric::Hold, &format!("l/lock/{name}")),
            Dur(10 * US)
        );
    }
    assert_eq!(counter(&r, "l/pending"), 1);
    assert_eq!(counter(&r, "l/queued"), 3);
    assert_eq!(counter(&r, "l/contentions"), 4);
    assert_eq!(counter(&r, "l/acquisitions"), 5);
}

/// The gaps between one holder's release and the next holder's going on,
/// in grant order: six waiters ask at 1..6 us on CPUs 6 down to 1 (so
/// ticket order is the reverse of CPU order), the word's line at a flat
/// 50 ns a transfer.
fn handoff_gaps(policy: &str) -> Vec<u64> {
    let arrivals: Vec<(String, u64)> = (1..=6).map(|k| (format!("w{k}"), 7 - k)).collect();
    let named: Vec<(&str, u64)> = arrivals.iter().map(|(n, a)| (n.as_str(), *a)).collect();
    let flat = "line_transfer = \"50ns\"\nline_local = \"1ns\"";
    let r = run_text(&arrivals_text(policy, flat, &named), 1);
    let wait = |n: &str| max(&r, Metric::Wait, &format!("l/lock/{n}")).0;
    let hold = |n: &str| max(&r, Metric::Hold, &format!("l/lock/{n}")).0;
    // h goes on at its fast path's fetch of the line (50 ns).
    let mut end = wait("h") + hold("h");
    let mut gaps = Vec::new();
    for k in (1..=6).rev() {
        let n = format!("w{k}");
        let go = (7 - k) * US + wait(&n);
        gaps.push(go - end);
        end = go + hold(&n);
    }
    gaps
}

#[test]
fn r79_r80_a_ticket_handoff_waits_for_the_waiters_rereads_a_qspinlock_one_for_one_transfer() {
    // Ticket lock: at each release every waiter re-reads the word, one
    // transfer after another in CPU order; the next ticket is on the
    // highest CPU of those waiting, so it is served last: 6, 5, ... 1
    // transfers after the release is done.
    assert_eq!(handoff_gaps("ticket"), vec![300, 250, 200, 150, 100, 50]);
    // qspinlock: the pending waiter, then the queue head, takes the line
    // with one cmpxchg (R73); the others spin on their own node.
    assert_eq!(handoff_gaps("linux"), vec![50; 6]);
}

/// Acquisitions of the shipped example with `n` CPUs, per variant (base:
/// qspinlock; ticket).
fn example_ops(n: u32) -> (u64, u64) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/examples/spinlock-scaling.toml"
    );
    let src = experiments::builtin::source(path, &[format!("tasks.cpu.count={n}")]).unwrap();
    let file = ScenarioFile::new(src).unwrap();
    let ops = |variant: &str| {
        let loaded = file.load(variant).unwrap();
        let c = compile(&file.source, &loaded.doc, variant).unwrap();
        let mut w = World::new(&c, 1, 0, Limits::default());
        w.run(&mut |_| {}).unwrap();
        counter(&w.result(), "ops/cpu")
    };
    (ops("base"), ops("ticket"))
}

#[test]
fn r80_ticket_throughput_collapses_as_cpus_are_added_and_the_queue_locks_stays_flat() {
    // Boyd-Wickizer et al. 2012 (docs/machine-sources.md §5.3): below
    // saturation both locks scale with the CPUs; past it an MCS-style
    // lock's throughput stays flat, a ticket lock's falls, the more the
    // more CPUs wait (its handoff grows with the waiters), a few CPUs
    // past the knee already to a fraction. Shape only: ratios between
    // CPU counts, none of the absolute rates.
    let counts = [2, 4, 8, 12, 16, 24, 32];
    let ops: Vec<(u64, u64)> = counts.iter().map(|&n| example_ops(n)).collect();
    let at = |n: u32| ops[counts.iter().position(|&c| c == n).unwrap()];
    // Unsaturated: both nearly double with the CPUs (the queue lock, near its knee at 8, a little less).
    for (a, b) in [(2, 4), (4, 8)] {
        for (x, y) in [(at(a).0, at(b).0), (at(a).1, at(b).1)] {
            let ratio = y as f64 / x as f64;
            assert!((1.8..2.1).contains(&ratio), "{a}->{b} CPUs: {x} -> {y}");
        }
    }
    // The queue lock is flat from saturation on (within 2%).
    let top = at(8).0 as f64;
    for &(mcs, _) in &ops[2..] {
        assert!((mcs as f64 / top - 1.0).abs() < 0.02, "{ops:?}");
    }
    // The ticket lock falls at every step past saturation ...
    for w in ops[2..].windows(2) {
        assert!(w[1].1 < w[0].1, "ticket does not fall: {ops:?}");
    }
    // ... to under half of the queue lock's within 4 CPUs of the knee, a
    // fifth of it at 32 CPUs.
    assert!((at(12).1 as f64) < 0.5 * at(12).0 as f64, "{ops:?}");
    assert!((at(32).1 as f64) < 0.2 * at(32).0 as f64, "{ops:?}");
    // Its handoff cost grows about linearly with the waiters: from 16 to
    // 32 CPUs its throughput halves (within 25%).
    let r = at(32).1 as f64 / at(16).1 as f64;
    assert!(
        (0.375..0.625).contains(&r),
        "16 -> 32 CPUs: {r:.3} ({ops:?})"
    );
}

/// 16 tasks on 2 CPUs of a machine with cache-line costs, each taking a
/// spinlock for 50 ns every 10 us of CPU, their time slices running out
/// all along: a waiter that stalled on the lock word's line comes back
/// inside `spin_lock` (preemption off, R75), not at a return to user
/// space, so it never loses its CPU while it waits. Before the fix it
/// did, at the end of its slice, and waited up to 28 ms for a 50 ns hold.
#[test]
fn r75_a_waiter_back_from_a_line_stall_keeps_its_cpu_when_its_slice_is_over() {
    let r = run_text(
        r#"
[scenario]
name = "slices"
duration = "1s"
cpus = 2
preemption = "none"
[machine]
profile = "kvm-guest"
tick_cost = "0ns"   # no interrupts (R125): one landing in a hold would
irq_rate = 0        # lengthen it by microseconds, which is not this test's
[locks.l]
kind = "spinlock"
[tasks.t]
count = 16
program = ["loop", "  spin_lock l", "  cpu 50ns", "  spin_unlock l", "  cpu 10us", "end"]
"#,
        1,
    );
    // One other CPU: at most the holder's 50 ns and the line's handoffs.
    assert!(
        max(&r, Metric::Wait, "l/lock/t") < Dur(US),
        "{:?}",
        max(&r, Metric::Wait, "l/lock/t")
    );
    assert!(
        counter(&r, "cpu/resched_yields") > 100,
        "slices do end: {}",
        counter(&r, "cpu/resched_yields")
    );
}
