//! RCU in the world (R90-R94): `synchronize_rcu`, `queue_rcu_work` and
//! `call_rcu` wait for grace periods that the machine's CPUs end, busy
//! CPUs at their second tick and idle ones at the kthread's forcing
//! scan; `cpu D per_cpu` costs D per possible CPU (R96-R99's loops).

use crate::common::{compile_error, run_text};
use output::Metric;
use sim::Dur;

const US: Dur = Dur(1_000);
const MS: Dur = Dur(1_000_000);

/// Two CPUs at `hz`: `hog` keeps CPU 0 busy; the task `t` runs `steps`.
fn two_cpus(hz: u32, hog: bool, steps: &str) -> String {
    let hog = if hog {
        "[tasks.hog]\ncount = 1\nprogram = [\"cpu 100ms\"]\n"
    } else {
        ""
    };
    format!(
        r#"
[scenario]
name = "rcu"
duration = "50ms"
cpus = 2
hz = {hz}
[workqueues.wq]
max_active = 1
[works.w]
program = ["cpu 10us"]
{hog}[tasks.t]
count = 1
program = [{steps}]

[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r90_r93_synchronize_rcu_with_an_idle_cpu_ends_at_the_first_forcing_scan() {
    // HZ 1000: t blocks in synchronize_rcu at 0 and its CPU goes idle;
    // the hog's CPU notices at 1 ms and reports at 2 ms, the idle CPU is
    // reported by the forcing scan: jiffies_till_first_fqs = 3, a timer
    // expiring at jiffy 3 that fires at jiffy 4 (R62). t wakes at 4 ms on
    // its idle CPU.
    let r = run_text(
        &two_cpus(
            1000,
            true,
            r#""span_begin gp", "synchronize_rcu", "span_end gp""#,
        ),
        1,
    );
    assert_eq!(r.series(Metric::Span, "gp/t").unwrap().hist.max(), 4 * MS);
    assert_eq!(r.counter("rcu/grace_periods"), Some(1));
    assert_eq!(r.counter("rcu/gp_ns_max"), Some(4_000_000));
    assert_eq!(r.counter("rcu/fqs_reports"), Some(1));
    // HZ 250: jiffies_till_first_fqs = 1, fires at jiffy 2 = 8 ms.
    let r = run_text(
        &two_cpus(
            250,
            true,
            r#""span_begin gp", "synchronize_rcu", "span_end gp""#,
        ),
        1,
    );
    assert_eq!(r.series(Metric::Span, "gp/t").unwrap().hist.max(), 8 * MS);
}

/// Three busy CPUs at HZ 1000: `hog` on CPU 0, `probe` on CPU 1 running
/// `probe` (its `cpu` steps keep its CPU busy), `t` on CPU 2 running `t`
/// then sleeping: its idle CPU keeps its tick while it has callbacks.
fn three_cpus(t: &str, probe: &str) -> String {
    format!(
        r#"
[scenario]
name = "rcu"
duration = "50ms"
cpus = 3
hz = 1000
[workqueues.wq]
max_active = 1
[works.w]
instances = 2
program = ["cpu 10us"]
[tasks.hog]
count = 1
program = ["cpu 100ms"]
[tasks.probe]
count = 1
program = [{probe}, "cpu 100ms"]
[tasks.t]
count = 1
program = [{t}, "sleep 100ms"]

[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r91_busy_cpus_end_a_grace_period_at_their_second_tick() {
    // Three tasks on two CPUs: when t blocks at 0, the waiting hog takes
    // its CPU, so both CPUs are busy at every tick: they notice at 1 ms
    // and report at 2 ms; no forcing scan reports anyone.
    let text = two_cpus(1000, false, r#""synchronize_rcu""#).replace(
        "[machine]",
        "[tasks.hog]\ncount = 2\nprogram = [\"cpu 100ms\"]\n\n[machine]",
    );
    let r = run_text(&text, 1);
    assert_eq!(r.counter("rcu/gp_ns_max"), Some(2_000_000));
    assert_eq!(r.counter("rcu/fqs_reports"), Some(0));
    assert_eq!(r.counter("rcu/synchronize_waits"), Some(1));
}

#[test]
fn r92_r94_an_rcu_work_is_pending_through_its_grace_period_and_runs_at_the_next_tick() {
    // t queues the rcu_work at 0 on CPU 2 and sleeps: CPU 2 is idle but
    // keeps its tick for the callback (rcu_needs_cpu), so every CPU
    // notices at 1 ms and reports at 2 ms; the callback runs at CPU 2's
    // tick at 3 ms and queues the item, whose kworker runs 3 to 3.01 ms.
    // A flush right after queueing does not wait for it (R36).
    let t = r#""queue_rcu_work wq w[0]", "span_begin f", "flush_workqueue wq", "span_end f""#;
    let probe = r#""cpu 2999us", "if_work_busy wq w[0]", "  count pending", "end",
        "cpu 2us", "if_work_busy wq w[0]", "  count running", "end",
        "cpu 1ms", "if_work_busy wq w[0]", "  count late", "end""#;
    let r = run_text(&three_cpus(t, probe), 1);
    assert_eq!(r.series(Metric::Span, "f/t").unwrap().hist.max(), Dur::ZERO);
    assert_eq!(r.counter("pending/probe"), Some(1));
    assert_eq!(r.counter("running/probe"), Some(1));
    assert_eq!(r.counter("late/probe"), Some(0));
    assert_eq!(r.counter("wq/wq/executed"), Some(1));
    assert_eq!(r.counter("rcu/callbacks"), Some(1));
    assert_eq!(r.counter("rcu/gp_ns_max"), Some(2_000_000));
    assert_eq!(r.counter("rcu/fqs_reports"), Some(0));
}

#[test]
fn r92_a_call_rcu_callback_queues_its_item_only_when_it_runs() {
    // The same with call_rcu: the item is not pending during the grace
    // period (percpu_ref's release queues css_release from the callback),
    // and is queued at 3 ms.
    let probe = r#""cpu 2999us", "if_work_busy wq w[0]", "  count pending", "end",
        "cpu 2us", "if_work_busy wq w[0]", "  count running", "end""#;
    let r = run_text(&three_cpus(r#""call_rcu wq w[0]""#, probe), 1);
    assert_eq!(r.counter("pending/probe"), Some(0));
    assert_eq!(r.counter("running/probe"), Some(1));
    assert_eq!(r.counter("wq/wq/executed"), Some(1));
}

#[test]
fn r92_callbacks_queued_during_a_grace_period_wait_for_the_next() {
    // A second callback at 1.5 ms, while grace period 1 (0 to 2 ms) runs,
    // needs grace period 2 (2 to 4 ms) and runs at 5 ms: its item is
    // pending at 4.5 ms and running at 5.001 ms.
    let t = r#""call_rcu wq w[0]", "sleep 1500us", "queue_rcu_work wq w[1]""#;
    let probe = r#""cpu 4500us", "if_work_busy wq w[1]", "  count pending", "end",
        "cpu 501us", "if_work_busy wq w[1]", "  count running", "end""#;
    let r = run_text(&three_cpus(t, probe), 1);
    assert_eq!(r.counter("pending/probe"), Some(1));
    assert_eq!(r.counter("running/probe"), Some(1));
    assert_eq!(r.counter("rcu/grace_periods"), Some(2));
    assert_eq!(r.counter("rcu/gp_ns_total"), Some(4_000_000));
}

#[test]
fn r96_per_cpu_costs_scale_with_the_possible_cpus() {
    // `cpu 50ns per_cpu` is a for_each_possible_cpu loop: 2 CPUs, 100 ns;
    // the same scenario on 64 CPUs, 3.2 us.
    let steps = r#""span_begin s", "cpu 50ns per_cpu", "span_end s""#;
    let r = run_text(&two_cpus(1000, false, steps), 1);
    assert_eq!(r.series(Metric::Span, "s/t").unwrap().hist.max(), Dur(100));
    let r = run_text(
        &two_cpus(1000, false, steps).replace("cpus = 2", "cpus = 64"),
        1,
    );
    assert_eq!(
        r.series(Metric::Span, "s/t").unwrap().hist.max(),
        3200 * Dur(1)
    );
    let _ = US;
}

#[test]
fn rcu_steps_are_checked() {
    let e = compile_error(&two_cpus(1000, false, r#""synchronize_rcu now""#));
    assert!(e.contains("`synchronize_rcu` takes no argument"), "{e}");
    let e = compile_error(&two_cpus(1000, false, r#""call_rcu wq w[0] 1ms""#));
    assert!(e.contains("expected `call_rcu WORKQUEUE ITEM`"), "{e}");
    // An rcu_work cannot be grabbed (as with a fixed grace period).
    let e = compile_error(&two_cpus(
        1000,
        false,
        r#""queue_rcu_work wq w[0]", "mod_delayed_work wq w[0] 0""#,
    ));
    assert!(e.contains("queued with `queue_rcu_work`"), "{e}");
}
