//! A userspace OOM daemon inside the world: memory pressure as
//! `memory.pressure` shows it (R104), and `kill` of a task group (R105);
//! and the loop they make with a lock: a daemon that reads pressure
//! through the lock that reclaim holds kills only when the lock frees.

use crate::common::{compile_error, run_text};
use output::Metric;
use sim::Dur;

const MS: Dur = Dur(1_000_000);

/// `box` is full; `staller` sits in one direct-reclaim attempt of 3 s
/// from time 0. Two checkers look at `some avg10` at `at`, one with the
/// threshold `hit`, one with `miss`.
fn pressure_scenario(at: &str, hit: &str, miss: &str) -> String {
    format!(
        r#"
[scenario]
name = "psi"
duration = "2500ms"
hz = 250
[memcg.box]
max = "1000 pages"
initial = "1000 pages"
reclaim = "3s"
reclaim_success = 1.0
[tasks.staller]
count = 1
program = ["charge box 1 page"]
[tasks.hit]
count = 1
program = ["sleep {at}", "if_pressure box some avg10 {hit}", "  count seen", "end"]
[tasks.miss]
count = 1
program = ["sleep {at}", "if_pressure box some avg10 {miss}", "  count seen", "end"]
[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r104_a_full_period_of_stall_shows_18_11_percent_in_avg10() {
    // psi_period at HZ 250 is 2 HZ + 1 jiffies = 2.004 s; after one
    // period stalled throughout, avg10 = calc_load(0, 1677, 100 x 2048)
    // = 37100, printed 18.11.
    let r = run_text(&pressure_scenario("2004ms", "18.11", "18.12"), 1);
    assert_eq!(r.counter("seen/hit"), Some(1));
    assert_eq!(r.counter("seen/miss"), Some(0));
    // The whole run was a stall: memory.pressure's total, in us.
    assert_eq!(r.counter("memcg/box/pressure_some_us"), Some(2_500_000));
}

#[test]
fn r104_the_limit_may_be_a_whole_percent_from_params() {
    let text = pressure_scenario("2004ms", "$low", "$high").replace(
        "[tasks.staller]",
        "[params]\nlow = 18\nhigh = 19\n[tasks.staller]",
    );
    let r = run_text(&text, 1);
    assert_eq!(
        (r.counter("seen/hit"), r.counter("seen/miss")),
        (Some(1), Some(0))
    );
    let e = compile_error(&text.replace("high = 19", "high = 101"));
    assert!(
        e.contains("`$high` is 101: `if_pressure` takes a percent from 0 to 100"),
        "{e}"
    );
}

#[test]
fn r104_no_sample_is_taken_before_the_period_ends() {
    let r = run_text(&pressure_scenario("2003ms", "0.01", "0.01"), 1);
    assert_eq!(r.counter("seen/hit"), Some(0));
}

/// `workload` holds mutex `w` and takes kernfs_rwsem for read to charge
/// a full `box`: one reclaim attempt of 5 s, which frees a batch. A
/// writer queues on kernfs_rwsem at 0.5 s. The daemon polls every second:
/// it reads `memory.pressure` (`read_steps`), and kills `workload` once
/// `some avg10` reaches 10%. `observer` wants `w` from 0.1 s.
fn daemon_scenario(read_steps: &str) -> String {
    format!(
        r#"
[scenario]
name = "oomd-loop"
duration = "10s"
hz = 250
[memcg.box]
max = "1000 pages"
initial = "1000 pages"
reclaim = "5s"
reclaim_success = 1.0
[locks.kernfs_rwsem]
kind = "rwsem"
[locks.w]
kind = "mutex"
[tasks.workload]
count = 1
program = ["mutex_lock w", "down_read kernfs_rwsem", "charge box 1 page", "up_read kernfs_rwsem",
           "sleep 100s", "mutex_unlock w"]
[tasks.writer]
count = 1
program = ["sleep 500ms", "down_write kernfs_rwsem", "cpu 1ms", "up_write kernfs_rwsem"]
[tasks.oomd]
count = 1
program = ["loop", "  sleep 1s", {read_steps}
           "  if_pressure box some avg10 10", "    kill workload", "  end", "end"]
[tasks.observer]
count = 1
program = ["sleep 100ms", "mutex_lock w", "mutex_unlock w"]
[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r105_a_daemon_that_reads_pressure_through_the_held_lock_kills_only_when_it_frees() {
    // Reading without the lock (10 us a poll): at 1 s and 2 s no period
    // has ended; at 3.00003 s avg10 is 18.11 (>= 10), and the kill cuts
    // the workload's reclaim short (a killable sleep): it exits then,
    // releasing w.
    let free = run_text(&daemon_scenario(r#""  cpu 10us","#), 1);
    let w = &free.series(Metric::Wait, "w/lock/observer").unwrap().hist;
    assert_eq!(w.max(), 3000 * MS + Dur(30_000) - 100 * MS);
    assert_eq!(free.counter("kill/workload"), Some(1));
    // Through kernfs_rwsem: the daemon's read at 1 s parks behind the
    // writer, which waits for the reclaim (5 s) to end; the writer holds
    // 1 ms; the daemon reads at 5.001 s, sees avg10 = 32.94 (two periods
    // stalled) and kills the workload, now asleep holding w.
    let held = run_text(
        &daemon_scenario(r#""  down_read kernfs_rwsem", "  cpu 10us", "  up_read kernfs_rwsem","#),
        1,
    );
    let d = &held
        .series(Metric::Wait, "kernfs_rwsem/read/oomd")
        .unwrap()
        .hist;
    assert_eq!(d.max(), 4001 * MS);
    let w = &held.series(Metric::Wait, "w/lock/observer").unwrap().hist;
    assert_eq!(w.max(), 5001 * MS + Dur(10_000) - 100 * MS);
    assert_eq!(held.counter("kill/workload"), Some(1));
    // The stall ended with the reclaim at 5 s, not with the kill.
    assert_eq!(held.counter("memcg/box/pressure_some_us"), Some(5_000_000));
}

#[test]
fn r105_a_kill_cuts_sleeps_short_but_not_lock_waits_and_frees_the_pages() {
    // `a` charges 100 pages and sleeps holding m; `b` waits for m; the
    // killer kills both at 10 ms. `a` exits at once (killable sleep),
    // releasing m; `b`, in an uninterruptible lock wait, gets m, then
    // exits at its next step releasing it; `c` gets m at 10 ms.
    let text = r#"
[scenario]
name = "kill"
duration = "1s"
[memcg.box]
max = "1000 pages"
[locks.m]
kind = "mutex"
[tasks.victims]
count = 2
program = ["charge box 100 pages", "mutex_lock m", "sleep 100s", "mutex_unlock m"]
[tasks.killer]
count = 1
program = ["sleep 10ms", "kill victims", "kill victims"]
[tasks.c]
count = 1
program = ["sleep 1ms", "mutex_lock m", "mutex_unlock m"]
[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    let c = &r.series(Metric::Wait, "m/lock/c").unwrap().hist;
    assert_eq!(c.max(), 9 * MS);
    // Each task is killed once: the second kill finds no live task.
    assert_eq!(r.counter("kill/victims"), Some(2));
    assert_eq!(r.counter("memcg/box/usage_pages_at_end"), Some(0));
    // The kill is not an OOM kill.
    assert_eq!(r.counter("memcg/box/oom_kills"), Some(0));
}

#[test]
fn if_pressure_and_kill_name_what_is_wrong() {
    let base = |step: &str| {
        format!(
            r#"
[scenario]
name = "e"
duration = "1s"
[memcg.box]
max = "1000 pages"
[tasks.d]
count = 1
program = ["sleep 1ms", {step}]
"#
        )
    };
    for (step, want) in [
        (
            r#""if_pressure box full avg10 60", "end""#,
            "`full` pressure is not modelled",
        ),
        (r#""if_pressure box some avg5 60", "end""#, "`avg5`"),
        (
            r#""if_pressure box some avg10 100.5", "end""#,
            "expected a percent from 0 to 100 with at most two decimals",
        ),
        (
            r#""if_pressure box some avg10 1.234", "end""#,
            "at most two decimals",
        ),
        (
            r#""if_pressure bx some avg10 60", "end""#,
            "did you mean `box`",
        ),
        (
            r#""if_pressure box some avg10 60""#,
            "`if_pressure` has no matching `end`",
        ),
        (r#""kill dd""#, "did you mean `d`"),
    ] {
        let e = compile_error(&base(step));
        assert!(e.contains(want), "{step}: {e}");
        assert!(e.contains("tasks.d.program"), "{step}: {e}");
    }
}

#[test]
fn r105_a_killed_task_frees_its_memory_then_runs_its_exit_steps() {
    // `victim` charges 100 pages and sleeps holding `a`; its exit steps
    // take `m` (as do_exit's cgroup_exit takes the cgroup locks), which
    // `holder` keeps until 50 ms. Killed at 10 ms, it releases `a` and
    // its pages at once, then waits for `m` in its exit path until 50 ms,
    // holds it 1 ms and is gone. A task whose program ends runs its exit
    // steps too.
    let text = r#"
[scenario]
name = "exit-path"
duration = "1s"
[memcg.box]
max = "1000 pages"
[locks.a]
kind = "mutex"
[locks.m]
kind = "mutex"
[tasks.victim]
count = 1
program = ["charge box 100 pages", "mutex_lock a", "sleep 100s", "mutex_unlock a"]
exit = ["mutex_lock m", "cpu 1ms", "mutex_unlock m", "count exit_path"]
[tasks.holder]
count = 1
program = ["mutex_lock m", "sleep 50ms", "mutex_unlock m"]
[tasks.killer]
count = 1
program = ["sleep 10ms", "kill victim", "sleep 20ms", "kill victim"]
[tasks.a_waiter]
count = 1
program = ["sleep 5ms", "mutex_lock a", "mutex_unlock a"]
[tasks.plain]
count = 1
program = ["cpu 1ms"]
exit = ["count exit_path"]
[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    assert_eq!(
        r.series(Metric::Wait, "a/lock/a_waiter")
            .unwrap()
            .hist
            .max(),
        5 * MS
    );
    assert_eq!(
        r.series(Metric::Wait, "m/lock/victim").unwrap().hist.max(),
        40 * MS
    );
    assert_eq!(
        r.series(Metric::Hold, "m/lock/victim").unwrap().hist.max(),
        MS
    );
    assert_eq!(
        r.counter("exit_path/victim"),
        Some(1),
        "the second kill does not restart it"
    );
    assert_eq!(r.counter("exit_path/plain"), Some(1));
    assert_eq!(r.counter("kill/victim"), Some(1));
    assert_eq!(r.counter("memcg/box/usage_pages_at_end"), Some(0));
}

/// inode-alloc-reclaim's what-if `params.oomd_kills` (R104, R105): in a
/// thrash (reclaim nearly always progresses, the pages often taken
/// first), oomd kills the container once, at a poll that gets through
/// with `some avg10` at its limit, after waiting seconds in a stall it
/// could not cut short; the container stalls no more. With the what-if
/// off (the lab case) nobody kills, and stalls go on all run long.
#[test]
fn oomd_in_case_3_kills_the_thrashing_container_once_a_poll_gets_through() {
    let run = |kills: &str| {
        let out = crate::common::run_for_validate(
            "inode-alloc-reclaim",
            &[
                "scenario.duration=300s",
                "memcg.caller.reclaim=lognormal(200ms, 1.2)",
                "memcg.caller.reclaim_success=0.999",
                "memcg.caller.reclaim_kept=0.05",
                &format!("params.oomd_kills={kills}"),
            ],
            1,
        );
        out.result.variants.into_iter().next().unwrap()
    };
    let (off, on) = (run("0"), run("1"));
    let worst = |v: &output::VariantResult| {
        v.series(Metric::Wait, "kernfs_rwsem/read/oomd")
            .unwrap()
            .hist
            .max()
    };
    assert_eq!(off.counter("kill/allocator"), Some(0));
    assert_eq!(on.counter("kill/allocator"), Some(1));
    assert_eq!(on.counter("kill/workload"), Some(0), "no workload task");
    // Seconds behind the writer behind the allocator's reclaim before it
    // could read the pressure; 41.95 s at worst when nobody kills.
    assert_eq!(worst(&on), Dur(7_276_784_276));
    assert_eq!(worst(&off), Dur(41_952_589_109));
    // After the kill the allocator reclaims no more: 49 attempts
    // against 673 in the run without it.
    assert_eq!(on.counter("memcg/caller/reclaims"), Some(49));
    assert_eq!(off.counter("memcg/caller/reclaims"), Some(673));
}
