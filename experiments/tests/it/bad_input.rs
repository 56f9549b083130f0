//! Bad input: every class of mistake gets an error that names the file,
//! line and field, exits with status 2, never panics, and writes nothing.

use std::path::Path;
use std::process::Command;

const GOOD: &str = r#"
[scenario]
name = "t"
duration = "1s"

[locks.l]
kind = "rwsem"

[tasks.a]
count = 2
program = [
  "loop",
  "  sleep 1ms",
  "  down_read l",
  "  cpu 10us",
  "  up_read l",
  "end",
]

[machine]
profile = 'ideal'
"#;

struct Outcome {
    code: Option<i32>,
    stderr: String,
    out_dir_exists: bool,
}

fn convoy_run(text: &str, extra: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_convoy"))
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).replace(&*file.to_string_lossy(), "s.toml");
    Outcome {
        code: o.status.code(),
        stderr,
        out_dir_exists: Path::new(&out).exists(),
    }
}

/// Replaces the first occurrence of `from` in the good scenario.
fn broken(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "test bug: {from}");
    GOOD.replacen(from, to, 1)
}

fn assert_error(o: &Outcome, needles: &[&str]) {
    assert_eq!(o.code, Some(2), "exit status; stderr: {}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "panic: {}", o.stderr);
    assert!(o.stderr.starts_with("convoy: error: "), "{}", o.stderr);
    for n in needles {
        assert!(o.stderr.contains(n), "missing `{n}` in: {}", o.stderr);
    }
    assert!(
        !o.out_dir_exists,
        "an output directory was written for a failed run"
    );
}

#[test]
fn the_good_scenario_runs() {
    let o = convoy_run(GOOD, &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.out_dir_exists);
}

#[test]
fn unknown_lock_names_line_field_and_declared_locks() {
    let o = convoy_run(&broken("  down_read l", "  down_read kernfs"), &[]);
    assert_error(
        &o,
        &[
            "s.toml:14",
            "tasks.a.program[2]",
            "no lock `kernfs`",
            "declared: l",
        ],
    );
}

#[test]
fn bad_duration_in_a_step() {
    let o = convoy_run(&broken("  cpu 10us", "  cpu 10 parsecs"), &[]);
    assert_error(&o, &["s.toml:15", "tasks.a.program[3]", "unknown unit"]);
}

#[test]
fn bad_scenario_duration() {
    let o = convoy_run(
        &broken(r#"duration = "1s""#, r#"duration = "1 fortnight""#),
        &[],
    );
    assert_error(&o, &["s.toml:4", "scenario.duration", "unknown unit"]);
}

#[test]
fn stray_end() {
    let o = convoy_run(
        &broken(r#"  "  up_read l","#, r#"  "  up_read l", "end","#),
        &[],
    );
    assert_error(&o, &["tasks.a.program", "`end` without an open"]);
}

#[test]
fn missing_end() {
    let o = convoy_run(&broken(r#"  "end","#, ""), &[]);
    assert_error(
        &o,
        &[
            "s.toml:12",
            "tasks.a.program[0]",
            "`loop` has no matching `end`",
        ],
    );
}

#[test]
fn call_rcu_with_a_grace_period() {
    // A callback's grace period is the RCU model's: `call_rcu` takes none.
    let wq = "[workqueues.wq]\n[works.w]\nprogram = [\"cpu 1us\"]\n[tasks.a]";
    let text =
        broken("[tasks.a]", wq).replacen(r#"  "loop","#, r#"  "call_rcu wq w 10ms", "loop","#, 1);
    let o = convoy_run(&text, &[]);
    assert_error(
        &o,
        &["tasks.a.program[0]", "expected `call_rcu WORKQUEUE ITEM`"],
    );
}

#[test]
fn an_rcu_work_that_is_also_grabbed() {
    // queue_rcu_work's item cannot be cancelled or re-armed in the kernel.
    let wq = "[workqueues.wq]\n[works.w]\nprogram = [\"cpu 1us\"]\n[tasks.a]";
    let text = broken("[tasks.a]", wq).replacen(
        r#"  "loop","#,
        r#"  "queue_rcu_work wq w 1ms", "cancel_delayed_work_sync wq w", "loop","#,
        1,
    );
    let o = convoy_run(&text, &[]);
    assert_error(
        &o,
        &[
            "tasks.a.program[1]",
            "is queued with `queue_rcu_work` and also grabbed",
        ],
    );
    // The same work type grabbed only: fine.
    let text = broken("[tasks.a]", wq).replacen(
        r#"  "loop","#,
        r#"  "queue_delayed_work wq w 1ms", "cancel_delayed_work_sync wq w", "loop","#,
        1,
    );
    let o = convoy_run(&text, &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

#[test]
fn if_work_busy_without_an_item_or_an_end() {
    let wq = "[workqueues.wq]\n[works.w]\nprogram = [\"cpu 1us\"]\n[tasks.a]";
    let text = broken("[tasks.a]", wq).replacen(
        r#"  "loop","#,
        r#"  "if_work_busy wq", "end", "loop","#,
        1,
    );
    let o = convoy_run(&text, &[]);
    assert_error(
        &o,
        &[
            "tasks.a.program[0]",
            "expected `if_work_busy WORKQUEUE ITEM`",
        ],
    );
    let text =
        broken("[tasks.a]", wq).replacen(r#"  "loop","#, r#"  "if_work_busy wq w", "loop","#, 1);
    let o = convoy_run(&text, &[]);
    assert_error(
        &o,
        &["tasks.a.program[0]", "`if_work_busy` has no matching `end`"],
    );
}

#[test]
fn unlocking_a_lock_not_held() {
    let o = convoy_run(&broken("  down_read l", "  cpu 1us"), &[]);
    assert_error(&o, &["s.toml:16", "tasks.a.program[4]", "`l` is not held"]);
}

#[test]
fn releasing_in_the_wrong_mode() {
    let o = convoy_run(&broken("  up_read l", "  up_write l"), &[]);
    assert_error(&o, &["s.toml:16", "held for read"]);
}

#[test]
fn a_loop_that_never_advances_time() {
    let text = broken("  sleep 1ms", "  sleep 0").replacen("  cpu 10us", "  cpu 0ns", 1);
    let o = convoy_run(&text, &[]);
    assert_error(&o, &["s.toml:12", "never advances simulated time"]);
}

#[test]
fn a_loop_whose_only_delay_is_optional_never_advances_time() {
    let text = broken(
        r#""  sleep 1ms","#,
        r#""  with_prob 0.5", "    sleep 1ms", "  end","#,
    )
    .replacen("  cpu 10us", "  cpu 0ns", 1);
    let o = convoy_run(&text, &[]);
    assert_error(&o, &["never advances simulated time"]);
}

#[test]
fn ending_the_program_with_a_lock_held() {
    let text = broken(r#"  "loop","#, "")
        .replacen(r#"  "  up_read l","#, "", 1)
        .replacen(r#"  "end","#, "", 1);
    let o = convoy_run(&text, &[]);
    assert_error(&o, &["ends its program still holding `l`"]);
}

/// Found by a mutation of the compiler's inputs: the check indexed the
/// locks with the id it tracks a `[self]` hold under and panicked.
#[test]
fn ending_the_program_holding_a_family_lock_taken_with_self() {
    let text = GOOD.to_string()
        + "[locks.fam]\nkind = \"mutex\"\ninstances = 2\n\
           [tasks.b]\ncount = 1\nprogram = [\"mutex_lock fam[self]\", \"cpu 1us\"]\n";
    let o = convoy_run(&text, &[]);
    assert_error(
        &o,
        &[
            "tasks.b.program[0]",
            "`b` ends its program still holding `fam[0]` (taken here)",
        ],
    );
}

#[test]
fn taking_a_held_lock_again() {
    let o = convoy_run(&broken("  cpu 10us", "  down_read l"), &[]);
    assert_error(&o, &["s.toml:15", "already holds `l`"]);
}

#[test]
fn mutex_step_on_an_rwsem() {
    let o = convoy_run(&broken("  down_read l", "  mutex_lock l"), &[]);
    assert_error(&o, &["s.toml:14", "`l` is an rwsem"]);
}

#[test]
fn unknown_step_keyword() {
    let o = convoy_run(&broken("  cpu 10us", "  spin 10us"), &[]);
    assert_error(&o, &["s.toml:15", "unknown step `spin`"]);
}

#[test]
fn unknown_field_is_not_ignored() {
    let o = convoy_run(&broken("count = 2", "count = 2\ncuont = 3"), &[]);
    assert_error(&o, &["s.toml:11", "tasks.a.cuont", "unknown field `cuont`"]);
}

#[test]
fn wrong_type_names_the_field() {
    let o = convoy_run(&broken("count = 2", r#"count = "two""#), &[]);
    assert_error(
        &o,
        &[
            "s.toml:10",
            "tasks.a.count",
            "expected a whole number from 0 to 4294967295",
        ],
    );
}

#[test]
fn toml_syntax_error_has_a_line() {
    let o = convoy_run(&broken("[locks.l]", "[locks.l"), &[]);
    assert_error(&o, &["s.toml:6", "not valid TOML"]);
}

#[test]
fn unknown_lock_kind_and_policy() {
    let o = convoy_run(&broken(r#"kind = "rwsem""#, r#"kind = "rwlock""#), &[]);
    assert_error(
        &o,
        &[
            "s.toml:7",
            "locks.l.kind",
            "unknown lock kind `rwlock`; expected one of: rwsem, mutex, spinlock, percpu_rw_semaphore, seqcount, seqlock",
        ],
    );
    let o = convoy_run(
        &broken(r#"kind = "rwsem""#, "kind = \"rwsem\"\npolicy = \"lifo\""),
        &[],
    );
    assert_error(&o, &["s.toml:8", "locks.l.policy", "unknown policy `lifo`"]);
}

#[test]
fn set_of_a_missing_table_or_with_a_bad_value() {
    let o = convoy_run(GOOD, &["--set", "tasks.b.count=3"]);
    assert_error(&o, &["--set tasks.b.count=3", "no table `tasks.b`"]);
    let o = convoy_run(GOOD, &["--set", "tasks.a.count=many"]);
    assert_error(&o, &["--set tasks.a.count=many", "is an integer"]);
    let o = convoy_run(GOOD, &["--set", "scenario.duration=5 lightyears"]);
    assert_error(
        &o,
        &["--set scenario.duration=5 lightyears", "scenario.duration"],
    );
    let o = convoy_run(GOOD, &["--set", "novalue"]);
    assert_error(&o, &["--set novalue", "expected key=value"]);
}

#[test]
fn unknown_variant() {
    let o = convoy_run(GOOD, &["--variant", "after"]);
    assert_error(&o, &["no variant `after`", "base"]);
}

#[test]
fn missing_file_lists_builtins() {
    let o = Command::new(env!("CARGO_BIN_EXE_convoy"))
        .args(["run", "/nonexistent/x.toml"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        e.contains("/nonexistent/x.toml") && e.contains("bench-convoy"),
        "{e}"
    );
}

#[test]
fn recursive_call() {
    let text = format!("{GOOD}\n[ops.f]\nsteps = [\"call g\"]\n[ops.g]\nsteps = [\"call f\"]\n")
        .replacen("  cpu 10us", "  call f", 1);
    let o = convoy_run(&text, &[]);
    assert_error(&o, &["recursive call: f -> g -> f"]);
}

/// Two tasks take two mutexes in opposite orders, with a 1 ms sleep
/// between: an ABBA deadlock that only the run can find.
const ABBA: &str = r#"
[scenario]
name = "abba"
duration = "1s"
[locks.a]
kind = "mutex"
[locks.b]
kind = "mutex"
[tasks.one]
count = 1
program = ["mutex_lock a", "sleep 1ms", "mutex_lock b", "mutex_unlock b", "mutex_unlock a"]
[tasks.two]
count = 1
program = ["mutex_lock b", "sleep 1ms", "mutex_lock a", "mutex_unlock a", "mutex_unlock b"]

[machine]
profile = 'ideal'
"#;

#[test]
fn deadlock_at_run_time_names_the_tasks_and_locks() {
    let o = convoy_run(ABBA, &[]);
    assert_error(
        &o,
        &[
            "deadlock at t=1ms",
            "one[0] blocked on b (lock)",
            "two[0] blocked on a (lock)",
        ],
    );
}

#[test]
fn a_run_whose_out_is_a_file_fails_before_it_runs() {
    // The file in the way is found before the run: the error is the
    // file's, not ABBA's deadlock, which only the run would find.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.toml"), ABBA).unwrap();
    std::fs::write(dir.path().join("out"), "not a directory").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_convoy"))
        .args(["run", "s.toml", "--out", "out"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot create output directory out: a file of that name is in the way"),
        "{err}"
    );
    assert!(!err.contains("deadlock"), "{err}");
}

#[test]
fn r27_abba_deadlock_of_two_spinning_owners_is_reported() {
    // The same ABBA with the two on their CPUs: each mutex's owner stays
    // on its CPU, spinning for the other mutex, so each waiter spins on
    // an owner that never leaves (R27: spin while the owner is on a CPU).
    // Nothing else is left to happen: a deadlock, not a finished run.
    let text = ABBA
        .replace("duration = \"1s\"\n", "duration = \"1s\"\ncpus = 2\n")
        .replace("sleep 1ms", "cpu 1ms");
    for cpus in ["cpus = 2\n", ""] {
        let o = convoy_run(&text.replace("cpus = 2\n", cpus), &[]);
        assert_error(
            &o,
            &[
                "deadlock at t=1ms",
                "one[0] spinning on its CPU for b (lock)",
                "two[0] spinning on its CPU for a (lock)",
            ],
        );
    }
    // Without spinning they sleep on the wait lists: blocked, as before.
    let o = convoy_run(
        &text.replace(
            "kind = \"mutex\"",
            "kind = \"mutex\"\nspin_on_owner = false",
        ),
        &[],
    );
    assert_error(
        &o,
        &["one[0] blocked on b (lock)", "two[0] blocked on a (lock)"],
    );
}

#[test]
fn r36_a_work_item_that_flushes_its_own_workqueue_deadlocks_since_its_flush() {
    // The flush waits for every item queued before it, itself among them
    // (R36): it never ends. The error says when the flush began (700 us:
    // queued at 200 us, 500 us of CPU), not when the kworker last woke.
    let text = r#"
[scenario]
name = "self-flush"
duration = "10ms"
cpus = 2
[workqueues.q]
kind = "percpu"
[works.wk]
program = ["cpu 500us", "flush_workqueue q", "cpu 10us"]
[tasks.r]
count = 1
program = ["sleep 200us", "queue_work q wk[0]", "sleep 1ms"]

[machine]
profile = 'ideal'
"#;
    let o = convoy_run(text, &[]);
    assert_error(
        &o,
        &[
            "deadlock at t=1.2ms",
            "(running wk[0]) blocked on a flush of q (workqueue) since t=700us",
        ],
    );
}

#[test]
fn an_abba_cycle_that_the_rest_of_the_run_goes_on_around_is_a_deadlock() {
    // ABBA with a third task that never stops: there is always something
    // left to happen, but the two wait for each other forever. The run's
    // end finds the cycle, asleep (R29: the waiter loop sleeps) or spinning
    // on owners that stay on their CPUs (R27).
    let text = r#"
[scenario]
name = "abba-bg"
duration = "10ms"
cpus = 3
[locks.a]
kind = "mutex"
SPIN
[locks.b]
kind = "mutex"
SPIN
[tasks.x]
count = 1
program = ["mutex_lock a", "STEP", "mutex_lock b", "mutex_unlock b", "mutex_unlock a"]
[tasks.y]
count = 1
program = ["mutex_lock b", "STEP", "mutex_lock a", "mutex_unlock a", "mutex_unlock b"]
[tasks.bg]
count = 1
program = ["loop", "sleep 1ms", "cpu 1us", "end"]

[machine]
profile = 'ideal'
"#;
    let asleep = text
        .replace("SPIN", "spin_on_owner = false")
        .replace("STEP", "sleep 100us");
    assert_error(
        &convoy_run(&asleep, &[]),
        &[
            "deadlock at t=100us: tasks wait for each other's locks in a cycle, forever",
            "x[0] blocked on b (lock) since t=100us at s.toml:",
            ", held by y[0]\n  y[0] blocked on a (lock) since t=100us",
            ", held by x[0]",
        ],
    );
    let spinning = text.replace("SPIN", "").replace("STEP", "cpu 50us");
    assert_error(
        &convoy_run(&spinning, &[]),
        &[
            "deadlock at t=50us: tasks wait for each other's locks in a cycle",
            "x[0] spinning on its CPU for b (lock) since t=50us",
            "y[0] spinning on its CPU for a (lock) since t=50us",
        ],
    );
    // Taken in one order, the same three tasks run to the end.
    let ordered = asleep.replace(
        "\"mutex_lock b\", \"sleep 100us\", \"mutex_lock a\", \"mutex_unlock a\", \"mutex_unlock b\"",
        "\"mutex_lock a\", \"sleep 100us\", \"mutex_lock b\", \"mutex_unlock b\", \"mutex_unlock a\"",
    );
    assert_ne!(ordered, asleep);
    let o = convoy_run(&ordered, &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

#[test]
fn a_distribution_parameter_set_out_of_range_is_told_at_its_value() {
    // In the file: the line of `mean`; from the command line: the `--set`.
    let text = format!("{GOOD}\n[dists.d]\ndist = \"exp\"\nmean = \"0s\"\n");
    let line = text.lines().position(|l| l.starts_with("mean =")).unwrap() + 1;
    assert_error(
        &convoy_run(&text, &[]),
        &[&format!(
            "s.toml:{line}: field `dists.d.mean`: exp mean must be more than 0"
        )],
    );
    let text = text.replace("mean = \"0s\"", "mean = \"1ms\"");
    assert_error(
        &convoy_run(&text, &["--set", "dists.d.mean=0s"]),
        &["--set dists.d.mean=0s: field `dists.d.mean`: exp mean must be more than 0"],
    );
}

#[test]
fn a_cost_range_is_two_ordered_durations_around_its_value_with_a_source() {
    let with = |table: &str| format!("{GOOD}\n[dists.d]\ndist = \"const\"\n{table}\n");
    let good = with("value = \"20us\"\nrange = [\"10us\", \"40us\"]\nsource = \"test\"");
    let o = convoy_run(&good, &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // A --set may go past the sources: a what-if.
    let o = convoy_run(&good, &["--set", "dists.d.value=90us"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let line =
        |text: &str, start: &str| text.lines().position(|l| l.starts_with(start)).unwrap() + 1;
    let outside = good.replace("value = \"20us\"", "value = \"50us\"");
    assert_error(
        &convoy_run(&outside, &[]),
        &[&format!(
            "s.toml:{}: field `dists.d.value`: 50us lies outside its cited range 10us .. 40us",
            line(&outside, "value =")
        )],
    );
    let reversed = good.replace("[\"10us\", \"40us\"]", "[\"40us\", \"10us\"]");
    assert_error(
        &convoy_run(&reversed, &[]),
        &["field `dists.d.range`: the range's high end 10us is below its low end 40us"],
    );
    let unsourced = good.replace("source = \"test\"", "");
    assert_error(
        &convoy_run(&unsourced, &[]),
        &[&format!(
            "s.toml:{}: field `dists.d.source`: a range needs its `source`",
            line(&unsourced, "range =")
        )],
    );
    let one_end = good.replace("[\"10us\", \"40us\"]", "[\"10us\"]");
    assert_error(
        &convoy_run(&one_end, &[]),
        &["field `dists.d.range`: expected two durations"],
    );
    let not_const = format!(
        "{GOOD}\n[dists.d]\ndist = \"exp\"\nmean = \"20us\"\nrange = [\"10us\", \"40us\"]\nsource = \"t\"\n"
    );
    assert_error(
        &convoy_run(&not_const, &[]),
        &["field `dists.d.range`: a range is for a `const` cost; this one is `exp`"],
    );
    let stray = with("value = \"20us\"\nsource = \"test\"");
    assert_error(
        &convoy_run(&stray, &[]),
        &["field `dists.d.source`: `source` cites a `range`"],
    );
}

#[test]
fn errors_suggest_what_a_typo_or_a_bare_number_meant() {
    // The first-look errors of a new user (issue 39): a duration with no
    // unit, a negative count, misspelt fields, tables, steps and names.
    let o = convoy_run(&broken(r#"duration = "1s""#, "duration = 30"), &[]);
    assert_error(&o, &["scenario.duration", "with its unit, e.g. \"30s\""]);
    let o = convoy_run(&broken("count = 2", "count = -8"), &[]);
    assert_error(
        &o,
        &[
            "tasks.a.count",
            "integer `-8`, expected a whole number from 0 to 4294967295",
        ],
    );
    let o = convoy_run(&broken("count = 2", "cuont = 2"), &[]);
    assert_error(&o, &["unknown field `cuont`", "(did you mean `count`?)"]);
    let o = convoy_run(&broken("[locks.l]", "[lockss.l]"), &[]);
    assert_error(&o, &["unknown field `lockss`", "(did you mean `locks`?)"]);
    let o = convoy_run(&GOOD.replacen("down_read l", "down_raed l", 1), &[]);
    assert_error(
        &o,
        &["unknown step `down_raed`", "(did you mean `down_read`?)"],
    );
    let o = convoy_run(&GOOD.replacen("down_read l", "down_read ll", 1), &[]);
    assert_error(&o, &["no lock `ll`", "(did you mean `l`?)"]);
    let o = convoy_run(GOOD, &["--set", "scenario.durration=1s"]);
    assert_error(
        &o,
        &["unknown field `durration`", "(did you mean `duration`?)"],
    );
    // A built-in's name, misspelt.
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::convoy_status(&["run", "pidlist-flush-run-aa"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("(did you mean `pidlist-flush-run-a`?)"),
        "{err}"
    );
}
