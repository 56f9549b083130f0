//! `percpu_rw_semaphore` in the world (docs/kernel-rules.md R81-R85):
//! readers' fast and slow paths, the writer's grace period, its wait for
//! readers to drain and its wakeups, `percpu_up_write`'s order of grants,
//! and the grace period's length.

use crate::common::{compile_error, run_text};
use models::machine::{profiles, Machine};
use output::{Metric, VariantResult};
use sim::Dur;

const US: u64 = 1_000;

fn wait(r: &VariantResult, subject: &str) -> Dur {
    (r.series(Metric::Wait, subject))
        .unwrap_or_else(|| panic!("no {subject}"))
        .hist
        .max()
}

fn counter(r: &VariantResult, subject: &str) -> u64 {
    r.counter(subject)
        .unwrap_or_else(|| panic!("no counter {subject}"))
}

/// Readers and writers of `l` (grace period 1 ms) at fixed instants:
///   0      r1 reads (fast path), holds 3 ms;
///   1 ms   w asks: rcu_sync_enter from idle, a grace period to 2 ms;
///   1.2 ms w2 asks: waits for that grace period;
///   1.5 ms r2 reads (slow path, no block yet), holds 1 ms;
///   2 ms   w gets block, waits for r1 and r2; w2 queues;
///   2.2 ms r3 finds block: wakes w, queues behind w2;
///   2.5 ms r2 leaves: wakes w; 3 ms r1 leaves: w has the lock, 1 ms;
///   4 ms   w's up_write: w2 gets block (no readers: the lock), r3
///          stays queued behind it; 5 ms w2's up_write grants r3;
///   5.5 ms r4 reads (slow: the exit's grace period runs to 6 ms);
///   5.8 ms w3 asks: no grace period to wait for; released at 6.3 ms;
///   7.5 ms r5 reads: idle again (7.3 ms), the fast path.
const TIMELINE: &str = r#"
[scenario]
name = "percpu"
duration = "20ms"
[machine]
profile = "ideal"
[locks.l]
kind = "percpu_rw_semaphore"
grace_period = "1ms"
[tasks.r1]
count = 1
program = ["percpu_down_read l", "sleep 3ms", "percpu_up_read l"]
[tasks.w]
count = 1
program = ["sleep 1ms", "percpu_down_write l", "sleep 1ms", "percpu_up_write l"]
[tasks.w2]
count = 1
program = ["sleep 1200us", "percpu_down_write l", "sleep 1ms", "percpu_up_write l"]
[tasks.r2]
count = 1
program = ["sleep 1500us", "percpu_down_read l", "sleep 1ms", "percpu_up_read l"]
[tasks.r3]
count = 1
program = ["sleep 2200us", "percpu_down_read l", "sleep 100us", "percpu_up_read l"]
[tasks.r4]
count = 1
program = ["sleep 5500us", "percpu_down_read l", "sleep 100us", "percpu_up_read l"]
[tasks.w3]
count = 1
program = ["sleep 5800us", "percpu_down_write l", "sleep 500us", "percpu_up_write l"]
[tasks.r5]
count = 1
program = ["sleep 7500us", "percpu_down_read l", "percpu_up_read l"]
"#;

#[test]
fn r81_readers_hold_at_once_unless_a_writer_has_block() {
    let r = run_text(TIMELINE, 1);
    for g in ["r1", "r2", "r4", "r5"] {
        assert_eq!(wait(&r, &format!("l/read/{g}")), Dur::ZERO, "{g}");
    }
    // r1 and r5 on the per-CPU fast path; r2, r3, r4 on the slow one.
    assert_eq!(counter(&r, "l/fast_reads"), 2);
    assert_eq!(counter(&r, "l/slow_reads"), 3);
    assert_eq!(counter(&r, "l/read_contentions"), 1);
}

#[test]
fn r82_the_first_writer_waits_a_grace_period_and_a_writer_after_the_last_one_none() {
    let r = run_text(TIMELINE, 1);
    // w: its grace period (1 to 2 ms), then r1 (to 3 ms).
    assert_eq!(wait(&r, "l/write/w"), Dur(2_000 * US));
    // w3 comes within the grace period after w2's exit: no wait.
    assert_eq!(wait(&r, "l/write/w3"), Dur::ZERO);
    assert_eq!(counter(&r, "l/grace_periods"), 1);
    assert_eq!(counter(&r, "l/write_contentions"), 2);
}

#[test]
fn r83_a_writer_with_block_waits_for_the_readers_woken_by_each_slow_exit() {
    let r = run_text(TIMELINE, 1);
    // w is woken by r3's failed read (2.2 ms), r2's exit (2.5 ms) and
    // r1's (3 ms), when it has the lock.
    assert_eq!(counter(&r, "l/drain_wakeups"), 3);
    assert_eq!(wait(&r, "l/write/w"), Dur(2_000 * US));
}

#[test]
fn r84_up_write_grants_the_queue_in_order_readers_up_to_the_first_writer() {
    let r = run_text(TIMELINE, 1);
    // w2 (asked 1.2 ms) is queued before r3 (2.2 ms): w's up_write at 4
    // ms gives it block and stops there; r3 waits for w2's up_write.
    assert_eq!(wait(&r, "l/write/w2"), Dur(2_800 * US));
    assert_eq!(wait(&r, "l/read/r3"), Dur(2_800 * US));
}

#[test]
fn r85_the_grace_period_defaults_to_the_machines_first_fqs_scan_and_a_tick() {
    let text = r#"
[scenario]
name = "gp"
duration = "100ms"
[machine]
profile = "ideal"
[locks.l]
kind = "percpu_rw_semaphore"
[tasks.w]
count = 1
program = ["percpu_down_write l", "percpu_up_write l"]
"#;
    // The RCU model's grace period on an idle machine (the default):
    // the forcing scan's jiffies_till_first_fqs and the tick after it.
    // HZ 250: (1 + 0 + 1) jiffies.
    let r = run_text(text, 1);
    assert_eq!(wait(&r, "l/write/w"), Dur(8_000 * US));
    // HZ 1000: RCU_JIFFIES_TILL_FORCE_QS is 3 there, and one jiffy more.
    let r = run_text(
        &text.replace("duration = \"100ms\"", "duration = \"100ms\"\nhz = 1000"),
        1,
    );
    assert_eq!(wait(&r, "l/write/w"), Dur(4_000 * US));
    // Its own value, when given.
    let r = run_text(
        &text.replace(
            "kind = \"percpu_rw_semaphore\"",
            "kind = \"percpu_rw_semaphore\"\ngrace_period = \"20ms\"",
        ),
        1,
    );
    assert_eq!(wait(&r, "l/write/w"), Dur(20_000 * US));
    let msg = compile_error(&text.replace(
        "kind = \"percpu_rw_semaphore\"",
        "kind = \"mutex\"\ngrace_period = \"20ms\"",
    ));
    assert!(
        msg.contains("locks.l.grace_period") && msg.contains("only a percpu_rw_semaphore"),
        "{msg}"
    );
}

#[test]
fn r81_fast_path_readers_touch_no_shared_line_on_a_real_machine() {
    // Two readers on two cores of a real machine: an rwsem's every
    // down_read and up_read moves its word between them; a percpu rwsem's
    // readers, with no writer, count on their own CPU.
    let text = |kind: &str, down: &str, up: &str| {
        format!(
            r#"
[scenario]
name = "pcpu-lines"
duration = "100us"
cpus = 2
[machine]
profile = "ideal"
[locks.l]
kind = "{kind}"
[tasks.r]
count = 2
program = ["loop", "{down} l", "cpu 100ns", "{up} l", "cpu 400ns", "end"]
"#
        )
    };
    let run = |t: String| {
        let mut c = crate::common::compile_text(&t);
        c.machine = Machine::from_profile(profiles::by_name("server-1s").unwrap(), Some(2));
        let mut w = experiments::world::World::new(&c, 1, 0, Default::default());
        w.run(&mut |_| {}).unwrap();
        w.result()
    };
    let r = run(text("rwsem", "down_read", "up_read"));
    assert!(counter(&r, "l/line_transfers") > 100);
    let r = run(text(
        "percpu_rw_semaphore",
        "percpu_down_read",
        "percpu_up_read",
    ));
    assert_eq!(counter(&r, "l/line_transfers"), 0);
    assert!(counter(&r, "l/fast_reads") > 300);
}

/// `l` with `grace_period = "rcu"` on two CPUs at HZ 1000, CPU 0 kept
/// busy by `hog`: the writer `w` asks at 0 and its `rcu_sync_enter` waits
/// in `synchronize_rcu` for the RCU model's grace period (R82 on R93),
/// which the busy CPU ends at its second tick and the idle one at the
/// forcing scan: 4 ms, as a `synchronize_rcu` step there
/// (rcu_grace_periods::r90_r93_...). `w` holds 1 ms; its exit's
/// `rcu_sync_func` is a `call_rcu` (R92): readers take the slow path
/// until it runs, the fast path after.
#[test]
fn r82_on_the_rcu_model_a_writer_waits_for_its_grace_period_and_readers_for_the_callback() {
    let r = run_text(
        r#"
[scenario]
name = "percpu-rcu"
duration = "50ms"
cpus = 2
hz = 1000
[machine]
profile = "ideal"
[locks.l]
kind = "percpu_rw_semaphore"
grace_period = "rcu"
[tasks.hog]
count = 1
program = ["cpu 30ms"]
[tasks.w]
count = 1
program = ["percpu_down_write l", "sleep 1ms", "percpu_up_write l"]
[tasks.early]
count = 1
program = ["sleep 6ms", "percpu_down_read l", "percpu_up_read l"]
[tasks.late]
count = 1
program = ["sleep 40ms", "percpu_down_read l", "percpu_up_read l"]
"#,
        1,
    );
    assert_eq!(wait(&r, "l/write/w"), Dur(4_000 * US));
    assert_eq!(counter(&r, "l/grace_periods"), 1);
    // Released at 5 ms: the callback's grace period is well over by 40 ms
    // and not by 6 ms.
    assert_eq!(counter(&r, "l/slow_reads"), 1);
    assert_eq!(counter(&r, "l/fast_reads"), 1);
    assert_eq!(counter(&r, "rcu/grace_periods"), 2);
    assert_eq!(counter(&r, "rcu/callbacks"), 1);
}

#[test]
fn a_grace_period_on_the_rcu_model_is_a_percpu_rw_semaphore_s_only() {
    let e = compile_error(
        r#"
[scenario]
name = "g"
duration = "1ms"
[locks.m]
kind = "mutex"
grace_period = "rcu"
[tasks.t]
count = 1
program = ["mutex_lock m", "mutex_unlock m"]
"#,
    );
    assert!(
        e.contains("only a percpu_rw_semaphore waits for a grace period"),
        "{e}"
    );
}
