//! The hung-task detector in the world (R100-R101): which waits it
//! reports, at which checks, and the warnings a run counts.

use crate::common::{compile_error, compile_text};
use experiments::world::{HungReport, Limits, World};
use models::TaskId;
use sim::SimTime;

/// `waiter` sleeps 1 s, then waits on mutex `m`, which `holder` keeps for
/// `HOLD`; `sleeper` sleeps 400 s (killable); `EXTRA` goes in the
/// `[scenario]` table.
fn scenario(hold: &str, extra: &str) -> String {
    format!(
        r#"
[scenario]
name = "hung"
duration = "400s"
{extra}
[locks.m]
kind = "mutex"
[tasks.holder]
count = 1
program = ["mutex_lock m", "sleep {hold}", "mutex_unlock m"]
[tasks.waiter]
count = 1
program = ["sleep 1s", "mutex_lock m", "mutex_unlock m"]
[tasks.sleeper]
count = 1
program = ["sleep 400s"]

[machine]
profile = 'ideal'
"#
    )
}

/// Runs `text` to its end: the first reports and the counters.
fn run(text: &str) -> (Vec<HungReport>, Option<u64>, Option<u64>) {
    let c = compile_text(text);
    let mut w = World::new(&c, 1, 0, Limits::default());
    w.run(&mut |_| {}).unwrap();
    let reports = w.hung_task_reports();
    let r = w.result();
    (
        reports,
        r.counter("hung_task/reports"),
        r.counter("hung_task/warnings"),
    )
}

#[test]
fn r100_r101_a_mutex_wait_is_reported_at_the_second_check_that_sees_it() {
    // Default sysctls: a timeout of 120 s, checks every 120 s. At HZ 250
    // the checks' timer is rounded up by the wheel (2.048 s granules):
    // 120.832 s, 241.664 s, 362.496 s. The waiter blocks at 1 s; the
    // first check records it, the second, 120.832 s later, reports it
    // "blocked for more than 120 seconds"; the mutex comes at 300 s, so
    // the third check does not. The holder and the sleeper sleep
    // killably: never reported.
    let (reports, n, printed) = run(&scenario("299s", ""));
    assert_eq!(
        reports,
        vec![HungReport {
            at: SimTime(241_664_000_000),
            task: TaskId(1),
            secs: 120,
        }]
    );
    assert_eq!((n, printed), (Some(1), Some(1)));
}

#[test]
fn r101_a_wait_longer_than_the_timeout_between_checks_is_not_reported() {
    // The mutex comes at 241 s: the wait lasted 240 s, twice the
    // timeout, but only one check (120.832 s) saw it before it ended.
    let (reports, n, _) = run(&scenario("240s", ""));
    assert_eq!((reports, n), (vec![], None));
    // Checks every 10 s (2,560 jiffies: 10.24 s, 20.48 s, ...): the first
    // check at 10.24 s sees it, and every check at least 120 s (30,000
    // jiffies) later reports it: 133.12 s, 143.36 s, ..., 235.52 s, 11
    // reports, of which 10 are printed (hung_task_warnings). The first
    // prints 122 seconds (30,720 jiffies).
    let (reports, n, printed) = run(&scenario("240s", "hung_task_check_interval = \"10s\""));
    assert_eq!((n, printed), (Some(11), Some(10)));
    assert_eq!(reports[0].at, SimTime(133_120_000_000));
    assert_eq!(reports[0].secs, 122);
    assert_eq!(reports[9].at, SimTime(225_280_000_000));
    assert_eq!(reports.iter().map(|r| r.task).max(), Some(TaskId(1)));
}

#[test]
fn r101_every_report_counts_and_warnings_run_out() {
    // Twelve waiters behind one holder for 399 s, timeout 10 s, checks
    // every 10 s (10.24 s, ...): each waiter is reported at every check
    // from 20.48 s to 389.12 s (37 checks): 444 reports, 10 printed; with
    // -1 every report is printed.
    let text = scenario("399s", "hung_task_timeout = \"10s\"")
        .replace("[tasks.waiter]\ncount = 1", "[tasks.waiter]\ncount = 12");
    let (reports, n, printed) = run(&text);
    assert_eq!((n, printed), (Some(12 * 37), Some(10)));
    // The kernel's order: by check, then by task.
    assert_eq!(reports[0].at, SimTime(20_480_000_000));
    assert_eq!(
        reports.iter().map(|r| r.task.0).collect::<Vec<_>>(),
        (1..=10).collect::<Vec<_>>()
    );
    let (_, _, printed) = run(&text.replace(
        "hung_task_timeout = \"10s\"",
        "hung_task_timeout = \"10s\"\nhung_task_warnings = -1",
    ));
    assert_eq!(printed, Some(12 * 37));
    // A timeout of 0 turns khungtaskd off.
    let (reports, n, _) = run(&text.replace("\"10s\"", "\"0s\""));
    assert_eq!((reports, n), (vec![], None));
}

#[test]
fn r101_rwsem_and_flush_waits_are_uninterruptible_too() {
    // A reader queued behind a writer that keeps `l` 250 s, and a task
    // in flush_workqueue behind an item that sleeps 250 s: both in
    // D state from 1 s, both reported at 241.664 s with the defaults.
    let text = r#"
[scenario]
name = "hung-rwsem"
duration = "300s"
[locks.l]
kind = "rwsem"
[workqueues.wq]
max_active = 1
[works.slow]
program = ["sleep 250s"]
[tasks.writer]
count = 1
program = ["down_write l", "sleep 250s", "up_write l"]
[tasks.reader]
count = 1
program = ["sleep 1s", "down_read l", "up_read l"]
[tasks.flusher]
count = 1
program = ["queue_work wq slow", "sleep 1s", "flush_workqueue wq"]

[machine]
profile = 'ideal'
"#;
    let (reports, n, _) = run(text);
    let at: Vec<(u64, u32)> = reports.iter().map(|r| (r.at.0, r.task.0)).collect();
    assert_eq!(at, vec![(241_664_000_000, 1), (241_664_000_000, 2)]);
    assert_eq!(n, Some(2));
}

#[test]
fn hung_task_settings_are_checked() {
    let e = compile_error(&scenario("1s", "hung_task_timeout = \"1.5s\""));
    assert!(
        e.contains("scenario.hung_task_timeout") && e.contains("not a whole number of seconds"),
        "{e}"
    );
    let e = compile_error(&scenario("1s", "hung_task_warnings = -2"));
    assert!(
        e.contains("scenario.hung_task_warnings") && e.contains("out of range"),
        "{e}"
    );
}
