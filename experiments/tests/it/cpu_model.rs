//! The CPU model: wake-to-run latency, preemption, RT class.

use experiments::scenario::{compile, ScenarioFile, Source};
use experiments::world::{Limits, World};
use output::{Metric, VariantResult};
use sim::{Dur, SimTime};

fn run_text(text: &str) -> VariantResult {
    crate::common::run_text(text, 1)
}

fn span(r: &VariantResult, s: &str) -> Dur {
    let h = &r.series(Metric::Span, s).unwrap().hist;
    assert_eq!(h.count(), 1, "{s}");
    h.max()
}

const MS: Dur = Dur(1_000_000);
const US: Dur = Dur(1_000);

#[test]
fn wake_latency_delays_every_wakeup_and_counts_in_lock_waits() {
    let text = r#"
[scenario]
name = "lat"
duration = "1s"
wake_latency = "5us"
[locks.m]
kind = "mutex"
[tasks.holder]
count = 1
program = ["mutex_lock m", "span_begin nap", "sleep 1ms", "span_end nap", "mutex_unlock m"]
[tasks.waiter]
count = 1
program = ["sleep 100us", "mutex_lock m", "mutex_unlock m"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text);
    // The sleeper runs 5 us after its timer.
    assert_eq!(span(&r, "nap/holder"), MS + 5 * US);
    // The waiter asked at 105 us (its own sleep had the latency too), was
    // woken at 1.005 ms and ran 5 us later.
    assert_eq!(
        r.series(Metric::Wait, "m/lock/waiter").unwrap().hist.max(),
        MS + 10 * US - 105 * US
    );
}

const PREEMPT: &str = r#"
[scenario]
name = "preempt"
duration = "1s"
cpus = 1
preemption = "none"
[tasks.wakee]
count = 1
program = ["span_begin wakee", "sleep 1ms", "cpu 1ms", "span_end wakee"]
[tasks.hog]
count = 1
program = ["span_begin hog", "cpu 10ms", "span_end hog"]

[machine]
profile = 'ideal'
"#;
// wakee runs first at 0 and sleeps; hog then takes the only CPU for 10 ms;
// wakee wakes at 1 ms.

#[test]
fn without_preemption_a_wakee_waits_for_the_running_burst() {
    let r = run_text(PREEMPT);
    assert_eq!(span(&r, "hog/hog"), 10 * MS);
    assert_eq!(span(&r, "wakee/wakee"), 11 * MS);
    assert_eq!(r.counter("cpu/preemptions"), None);
}

#[test]
fn full_preemption_lets_the_wakee_run_and_the_victim_finishes_its_burst_later() {
    let r = run_text(&PREEMPT.replace("\"none\"", "\"full\""));
    assert_eq!(span(&r, "wakee/wakee"), 2 * MS);
    assert_eq!(span(&r, "hog/hog"), 11 * MS);
    assert_eq!(r.counter("cpu/preemptions"), Some(1));
}

#[test]
fn a_normal_wakee_never_preempts_an_rt_task_but_an_rt_wakee_preempts_a_normal_one() {
    // The RT hog runs first (the RT class before the fair one) and naps
    // 100 us, so that wakee starts and sleeps; the hog's burst is then
    // 0.1-10.1 ms, and wakee, woken at 1 ms, waits for its end.
    let rt_hog = PREEMPT
        .replace("\"none\"", "\"full\"")
        .replace(
            "[tasks.hog]\ncount = 1",
            "[tasks.hog]\ncount = 1\nclass = \"rt\"",
        )
        .replace(
            "[\"span_begin hog\"",
            "[\"sleep 100us\", \"span_begin hog\"",
        );
    let r = run_text(&rt_hog);
    assert_eq!(span(&r, "wakee/wakee"), 11 * MS + 100 * US);
    let rt_wakee = PREEMPT.replace("\"none\"", "\"voluntary\"").replace(
        "[tasks.wakee]\ncount = 1",
        "[tasks.wakee]\ncount = 1\nclass = \"rt\"",
    );
    // Under voluntary preemption nothing is preempted, RT or not.
    assert_eq!(span(&run_text(&rt_wakee), "wakee/wakee"), 11 * MS);
    let rt_wakee_full = rt_wakee.replace("\"voluntary\"", "\"full\"");
    assert_eq!(span(&run_text(&rt_wakee_full), "wakee/wakee"), 2 * MS);
}

#[test]
fn preempt_placement_takes_the_cpu_of_a_lock_free_task_burst_only() {
    // `wake_placement = "preempt"` under PREEMPT_VOLUNTARY: a lock-free
    // burst of a task stands for code that reaches a preemption point (the
    // return to user space) at once. The hog sleeps first so that the
    // wakee is asleep when the hog's burst starts (at 100 us); the wakee
    // wakes at 1 ms and takes the CPU at once.
    let preempt = r#"
[scenario]
name = "preempt"
duration = "1s"
cpus = 1
preemption = "voluntary"
wake_placement = "preempt"
[tasks.wakee]
count = 1
program = ["span_begin wakee", "sleep 1ms", "cpu 1ms", "span_end wakee"]
[tasks.hog]
count = 1
program = ["sleep 100us", "span_begin hog", "cpu 10ms", "span_end hog"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(preempt);
    assert_eq!(span(&r, "wakee/wakee"), 2 * MS);
    assert_eq!(span(&r, "hog/hog"), 11 * MS);
    assert_eq!(r.counter("cpu/preemptions"), Some(1));
    // A burst holding a lock is a kernel section with no preemption point:
    // the wakee waits for the hog's 10 ms (to 10.1 ms), then runs 1 ms.
    let locked = preempt
        .replace("[tasks.hog]", "[locks.m]\nkind = \"mutex\"\n[tasks.hog]")
        .replace(
            "\"cpu 10ms\"",
            "\"mutex_lock m\", \"cpu 10ms\", \"mutex_unlock m\"",
        );
    let r = run_text(&locked);
    assert_eq!(span(&r, "wakee/wakee"), 10_100 * US + MS);
    assert_eq!(r.counter("cpu/preemptions"), Some(0));
    // Nor is a kworker's burst: a work item is kernel code throughout.
    let kworker = preempt.replace(
        "[tasks.hog]\ncount = 1\nprogram = [\"sleep 100us\", \"span_begin hog\", \"cpu 10ms\", \"span_end hog\"]",
        "[workqueues.wq]\n[works.w]\nprogram = [\"span_begin hog\", \"cpu 10ms\", \"span_end hog\"]\n\
         [tasks.hog]\ncount = 1\nprogram = [\"sleep 100us\", \"queue_work wq w\"]",
    );
    assert_ne!(kworker, preempt, "test bug: the hog was not replaced");
    let r = run_text(&kworker);
    assert_eq!(span(&r, "hog/w"), 10 * MS);
    assert_eq!(r.counter("cpu/preemptions"), Some(0));
}

#[test]
fn wake_latency_draws_do_not_shift_program_draws() {
    // Same seed with and without a random latency: the program's own draws
    // (its sleeps) are the same numbers, so the number of loop passes in a
    // fixed horizon differs only by the latency added per pass.
    let base = r#"
[scenario]
name = "crn"
duration = "1s"
[tasks.t]
count = 1
program = ["loop", "sleep exp(1ms)", "end"]

[machine]
profile = 'ideal'
"#;
    let with = base.replace(
        "duration = \"1s\"",
        "duration = \"1s\"\nwake_latency = \"exp(2us)\"",
    );
    let file = |t: &str| ScenarioFile::new(Source::new("t.toml", t)).unwrap();
    let draws = |t: &str| {
        let f = file(t);
        let l = f.load(&f.base).unwrap();
        let c = compile(&f.source, &l.doc, &f.base).unwrap();
        let mut w = World::new(&c, 1, 0, Limits::default());
        w.log_draws();
        w.run(&mut |_| {}).unwrap();
        w.draws().iter().map(|d| d.1).collect::<Vec<_>>()
    };
    let (a, b) = (draws(base), draws(&with));
    let n = a.len().min(b.len());
    assert!(n > 900);
    assert_eq!(a[..n], b[..n]);
}

#[test]
fn bad_cpu_settings_are_errors() {
    for (from, to, needle) in [
        (
            "preemption = \"none\"",
            "preemption = \"lazy\"",
            "unknown preemption model `lazy`",
        ),
        ("cpus = 1", "cpus = 1\nhz = 200", "HZ 200"),
        (
            "cpus = 1",
            "cpus = 1\nwake_latency = \"fast\"",
            "scenario.wake_latency",
        ),
        (
            "cpus = 1",
            "cpus = 2\nrunqueue = \"percpu\"\nwake_placement = \"preempt\"",
            "needs the shared run queue",
        ),
        (
            "cpus = 1",
            "cpus = 2\nrunqueue = \"global\"",
            "unknown run queue `global`",
        ),
    ] {
        let msg = crate::common::compile_error(&PREEMPT.replace(from, to));
        assert!(msg.contains(needle) && msg.contains("t.toml:"), "{msg}");
    }
}

/// Acquisitions per reader in 10 ms: one reader per CPU, never sleeping,
/// taking the rwsem for read around 100 ns of work, 400 ns between.
fn per_reader_acquisitions(cpus: u32, policy: &str) -> u64 {
    let text = format!(
        r#"
[scenario]
name = "line"
duration = "10ms"
cpus = {cpus}
[locks.l]
kind = "rwsem"
policy = "{policy}"
line_transfer = "100ns"
line_local = "5ns"
[tasks.r]
count = {cpus}
program = ["loop", "down_read l", "cpu 100ns", "up_read l", "cpu 400ns", "end"]

[machine]
profile = 'ideal'
"#
    );
    let r = run_text(&text);
    r.counter("l/read_acquisitions").unwrap() / u64::from(cpus)
}

#[test]
fn cache_line_contention_makes_an_uncontended_rwsem_slower_with_more_cpus() {
    // Nobody ever waits for the lock itself (readers share it), yet every
    // down_read and up_read is an atomic on one cache line: with more CPUs
    // the line moves on almost every atomic and the atomics queue for it.
    let linux: Vec<u64> = [1, 2, 4, 8, 16]
        .iter()
        .map(|&n| per_reader_acquisitions(n, "linux"))
        .collect();
    for w in linux.windows(2) {
        assert!(
            w[1] < w[0],
            "per-reader throughput must fall as CPUs are added: {linux:?}"
        );
    }
    // One CPU: two local atomics per 500 ns pass, ~19.6k passes in 10 ms.
    assert!((19_000..20_000).contains(&linux[0]), "{linux:?}");
    // 16 CPUs: the line serves at most one 100 ns transfer at a time, two
    // per pass: about 50k passes in all, ~3.1k per reader.
    assert!(linux[4] < 4_000, "{linux:?}");
    // With the lock removed there is no lock word: throughput is flat.
    let none: Vec<u64> = [1, 2, 4, 8, 16]
        .iter()
        .map(|&n| per_reader_acquisitions(n, "none"))
        .collect();
    assert!(none.iter().all(|&x| x == none[0]), "{none:?}");
    assert_eq!(none[0], 20_000);
}

const SLICED: &str = r#"
[scenario]
name = "sliced"
duration = "100ms"
cpus = 1
hz = 1000
timeslice = "3ms"
[tasks.a]
count = 1
program = ["loop", "  span_begin pass", "  cpu 100us", "  span_end pass", "end"]
[tasks.b]
count = 1
program = ["loop", "  span_begin pass", "  cpu 100us", "  span_end pass", "end"]

[machine]
profile = 'ideal'
"#;

fn passes(r: &VariantResult, group: &str) -> u64 {
    r.series(Metric::Span, &format!("pass/{group}"))
        .map_or(0, |s| s.hist.count())
}

#[test]
fn a_time_slice_shares_one_cpu_between_two_hogs() {
    // Without a slice the first hog keeps the CPU: b never runs.
    // (The pass that ends at the 100 ms horizon is not counted.)
    let r = run_text(&SLICED.replace("timeslice = \"3ms\"\n", ""));
    assert_eq!((passes(&r, "a"), passes(&r, "b")), (999, 0));
    // With 3 ms slices (ending at a 1 ms tick) they alternate, 3 ms each:
    // a runs 0-3, 6-9, ..., 96-99 ms (17 turns), b the 16 in between and
    // 9 passes from 99 ms. A turn ends at the boundary after its 30th
    // burst, before that pass's span ends, so a's last one is cut off.
    let r = run_text(SLICED);
    assert_eq!(
        (passes(&r, "a"), passes(&r, "b")),
        (17 * 30 - 1, 16 * 30 + 9)
    );
    assert_eq!(r.counter("cpu/resched_yields"), Some(33));
}

#[test]
fn a_slice_ends_at_the_first_tick_after_it_runs_out() {
    // HZ 250: the 3 ms slice is noticed at the 4 ms tick, so each hog
    // runs 4 ms at a time: 25 turns in 100 ms.
    let r = run_text(&SLICED.replace("hz = 1000", "hz = 250"));
    assert_eq!(r.counter("cpu/resched_yields"), Some(24));
}

/// One CPU under PREEMPT_NONE, 3 ms slices at a 1 ms tick: `a` holds m
/// across 10 ms of work cut by `STEP` points; `b`, a hog, waits for the
/// CPU.
const POINTS: &str = r#"
[scenario]
name = "resched-points"
duration = "40ms"
cpus = 1
hz = 1000
timeslice = "3ms"
preemption = "none"
[locks.m]
kind = "mutex"
[tasks.a]
count = 1
program = ["mutex_lock m", "repeat 10", "  STEP", "  cpu 1ms", "end", "mutex_unlock m"]
[tasks.b]
count = 1
program = ["loop", "  cpu 100us", "end"]

[machine]
profile = 'ideal'
"#;

/// The longest time `a` of [`POINTS`] held m.
fn points_hold(text: &str) -> Dur {
    run_text(text)
        .series(Metric::Hold, "m/lock/a")
        .unwrap()
        .hist
        .max()
}

#[test]
fn under_voluntary_preemption_a_lock_holder_yields_at_might_sleep() {
    // Under none, `a` keeps the CPU (and m) across its might_resched points
    // until it unlocks; under voluntary it yields at the first one after
    // its slice, holding m, so its hold stretches by b's turn.
    let text = POINTS.replace("STEP", "might_resched");
    assert_eq!(points_hold(&text), 10 * MS);
    // Slices of 3 ms: a yields at 3 ms (holding m), b runs 3 ms, and so on.
    let voluntary = text.replace("\"none\"", "\"voluntary\"");
    assert_eq!(points_hold(&voluntary), 19 * MS);
}

/// One CPU, 3 ms slices at a 1 ms tick. `b` runs first and sleeps at once,
/// until 2.2 ms; `c` then runs 2 ms while the hog `a` waits, and sleeps
/// 0.1 ms; `a` runs from 2 ms. Each span runs from time 0 to the end of
/// the task's 100 us of work.
const LAG: &str = r#"
[scenario]
name = "lag"
duration = "40ms"
cpus = 1
hz = 1000
timeslice = "3ms"
wake_placement = "WAKE"
[tasks.b]
count = 1
program = ["span_begin done", "sleep 2.2ms", "cpu 100us", "span_end done"]
[tasks.c]
count = 1
program = ["span_begin done", "cpu 2ms", "sleep 100us", "cpu 100us", "span_end done"]
[tasks.a]
count = 1
program = ["loop", "  cpu 500us", "end"]

[machine]
profile = 'ideal'
"#;

#[test]
fn eevdf_a_task_that_hogged_the_cpu_before_it_slept_waits_behind_one_that_did_not() {
    // Both wait for a's slice (from 2 ms, noticed at the 5 ms tick).
    // first: by wake time, c (2.1 ms) then b (2.2 ms).
    let r = run_text(&LAG.replace("WAKE", "first"));
    assert_eq!(
        (span(&r, "done/c"), span(&r, "done/b")),
        (5100 * US, 5200 * US)
    );
    // eevdf (all in ms): c ran 2 while a waited (V 1, lag -1) and slept
    // 0.1, while V (a alone) moved 0.1: it comes back with lag -0.9,
    // vruntime 1.9, deadline 4.9. b slept with lag 0 and comes back at
    // V = 1.05, deadline 4.05. At 5 (a at 3) V = 1.98: both eligible, b's
    // deadline first.
    let r = run_text(&LAG.replace("WAKE", "eevdf"));
    assert_eq!(
        (span(&r, "done/b"), span(&r, "done/c")),
        (5100 * US, 5200 * US)
    );
}

#[test]
fn a_kworker_woken_by_a_task_on_its_own_cpu_has_no_wake_latency() {
    // t queues w on its own CPU (per-CPU workqueue, R33) and flushes: the
    // kworker, bound to that CPU, is queued there by t itself (no IPI),
    // so it runs as soon as t sleeps in the flush; t, woken by the kworker
    // (t is not bound), pays the 5 us: 10 + 5.
    let text = r#"
[scenario]
name = "local"
duration = "10ms"
cpus = 2
wake_latency = "5us"
[workqueues.wq]
kind = "percpu"
[works.w]
program = ["cpu 10us"]
[tasks.t]
count = 1
program = ["span_begin f", "QUEUE", "flush_workqueue wq", "span_end f"]

[machine]
profile = 'ideal'
"#;
    let local = run_text(&text.replace("QUEUE", "queue_work wq w"));
    assert_eq!(span(&local, "f/t"), 15 * US);
    // Queued by its timer instead, no task wakes the kworker. 1 us rounds
    // up to one jiffy (4 ms at HZ 250), and the timer wheel fires it one
    // jiffy after jiffies + 1, at jiffy 2: 8 ms (R35). The kworker runs
    // 5 us later, 8.005-8.015 ms; t, back from its sleep at 8.006 ms,
    // flushes and is woken at 8.015 ms, running at 8.02 ms.
    let timer = text.replace("QUEUE", "queue_delayed_work wq w 1us\", \"sleep 8001us");
    assert_eq!(span(&run_text(&timer), "f/t"), 8020 * US);
}

#[test]
fn an_rt_task_is_queued_before_fair_ones_takes_the_cpu_at_a_preemption_point_and_has_no_slice() {
    // One CPU. rt and nt sleep first; the fair hog then runs 100 us steps.
    // nt wakes at 1.02 ms, rt at 1.05 ms: rt goes first, at the hog's
    // next return to user space (1.1 ms), and runs its 10 ms without
    // yielding to the waiting fair tasks at its 3 ms slice; nt follows.
    let text = r#"
[scenario]
name = "rt"
duration = "40ms"
cpus = 1
hz = 1000
timeslice = "3ms"
preemption = "voluntary"
wake_placement = "first"
[tasks.rt]
count = 1
class = "rt"
program = ["span_begin done", "sleep 1.05ms", "repeat 10", "  cpu 1ms", "end", "span_end done"]
[tasks.nt]
count = 1
program = ["span_begin done", "sleep 1.02ms", "cpu 1ms", "span_end done"]
[tasks.hog]
count = 1
program = ["loop", "  cpu 100us", "end"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text);
    assert_eq!(span(&r, "done/rt"), 11_100 * US);
    assert_eq!(span(&r, "done/nt"), 12_100 * US);
    // The same under eevdf: RT is not its business.
    let r = run_text(&text.replace("\"first\"", "\"eevdf\""));
    assert_eq!(span(&r, "done/rt"), 11_100 * US);
}

#[test]
fn a_task_that_yields_with_nobody_to_run_on_its_cpu_keeps_it() {
    // u queues w on its CPU (1) and burns 5 ms there, so w's kworker waits
    // for CPU 1. t, on CPU 0, sees a task waiting when its 1 ms slice is
    // up and yields at its next step; nothing else can run on CPU 0, so
    // the pick gives it straight back: its 3 ms of work take 3 ms. (It
    // used to leave CPU 0 free and wait in the queue until CPU 1 freed up
    // after u and w, at 5.01 ms: 7.01 ms.)
    let text = r#"
[scenario]
name = "yield"
duration = "20ms"
cpus = 2
hz = 1000
timeslice = "1ms"
[workqueues.wq]
kind = "percpu"
[works.w]
program = ["cpu 10us"]
[tasks.t]
count = 1
program = ["span_begin s", "repeat 30", "  cpu 100us", "end", "span_end s"]
[tasks.u]
count = 1
program = ["queue_work wq w", "cpu 5ms"]

[machine]
profile = 'ideal'
"#;
    assert_eq!(span(&run_text(text), "s/t"), 3 * MS);
}

#[test]
fn cfs_order_a_long_sleeper_preempts_a_hog_that_eevdf_lets_finish_its_slice() {
    // One CPU, 3 ms slices at HZ=1000 (CFS: sleeper credit 12 ms, wakeup
    // granularity 4 ms). Hogs h1 and h2 take turns by slice: h1 0-3 ms,
    // h2 3-6, h1 6-9, h2 from 9. s sleeps from 0 to 10.5 ms; then h2 has
    // run 4.5 ms in all.
    let text = r#"
[scenario]
name = "cfs"
duration = "30ms"
cpus = 1
hz = 1000
timeslice = "3ms"
runqueue = "percpu"
wake_placement = "ORDER"
[tasks.s]
count = 1
program = ["span_begin q", "sleep 10500us", "cpu 10us", "span_end q", "sleep 1s"]
[tasks.h1]
count = 1
program = ["loop", "  cpu 100us", "end"]
[tasks.h2]
count = 1
program = ["loop", "  cpu 100us", "end"]

[machine]
profile = 'ideal'
"#;
    // CFS: s comes back at its own vruntime 0, 4.5 ms behind h2, past the
    // granularity: h2 yields at its next step boundary (10.5 ms) and s runs.
    let r = run_text(&text.replace("ORDER", "cfs"));
    assert_eq!(span(&r, "q/s"), 10_510 * US);
    // EEVDF: h2 (vruntime 4.5 ms) is still eligible against V (5.25 ms):
    // it keeps the CPU to the end of its slice at 12 ms, and s, placed at
    // V with the earliest deadline, runs next.
    let r = run_text(&text.replace("ORDER", "eevdf"));
    assert_eq!(span(&r, "q/s"), 12_010 * US);
}

#[test]
fn eevdf_6_6_a_hog_that_slept_long_still_comes_back_behind_where_6_12_forgot_its_lag() {
    // One CPU, 3 ms slices at HZ=1000. a runs 2.9 ms while b waits, then
    // sleeps 20.05 ms: it leaves with lag -1.45 ms (V with it counted is
    // 1.45 ms). b runs alone from 2.9 ms; a wakes at 22.95 ms, when b is
    // at vruntime 20.05 ms, and b, long past its slice, yields at its
    // next step boundary (23.0 ms).
    let text = r#"
[scenario]
name = "lag"
duration = "40ms"
cpus = 1
hz = 1000
timeslice = "3ms"
runqueue = "percpu"
wake_placement = "ORDER"
[tasks.a]
count = 1
program = ["repeat 29", "  cpu 100us", "end", "span_begin q", "sleep 20050us", "cpu 10us",
           "span_end q", "sleep 1s"]
[tasks.b]
count = 1
program = ["loop", "  cpu 100us", "end"]

[machine]
profile = 'ideal'
"#;
    // 6.12 (DELAY_DEQUEUE): a stayed queued, counted in V, until V
    // reached its vruntime, and left with no lag; woken, it is placed at
    // V, eligible (b is 0.05 ms past it) and runs at 23.0 ms.
    let r = run_text(&text.replace("ORDER", "eevdf"));
    assert_eq!(span(&r, "q/a"), 20_110 * US);
    // 6.6-6.11: a keeps -1.45 ms, placed at V + 2.9 ms (the lag scaled by
    // 2/1), not eligible at 23.0 ms (V is 21.5 ms); b runs another slice,
    // to 26.0 ms, when V (23.0 ms) has passed a's 22.95 ms and b's 23.1
    // ms has not.
    let r = run_text(&text.replace("ORDER", "eevdf-6.6"));
    assert_eq!(span(&r, "q/a"), 23_110 * US);
}

#[test]
fn percpu_runqueues_a_freed_cpu_runs_its_own_waiter_before_one_that_waited_longer() {
    // z and w run first (CPUs 0 and 1), start their spans and sleep; x
    // and y, placed on CPUs 0 and 1, take over. z wakes at 50 us and w at
    // 100 us: both CPUs are busy, so they wait, z for CPU 0 and w for CPU
    // 1 (where each last ran). y sleeps at 1.5 ms.
    let text = r#"
[scenario]
name = "percpu"
duration = "20ms"
cpus = 2
runqueue = "RQ"
[tasks.z]
count = 1
program = ["span_begin q", "sleep 50us", "cpu 10us", "span_end q", "sleep 1s"]
[tasks.w]
count = 1
program = ["span_begin q", "sleep 100us", "cpu 10us", "span_end q", "sleep 1s"]
[tasks.x]
count = 1
program = ["cpu 5ms"]
[tasks.y]
count = 1
program = ["cpu 1500us", "sleep 1s"]

[machine]
profile = 'ideal'
"#;
    // Shared queue: CPU 1 takes z, which waited longer, then w.
    let r = run_text(&text.replace("RQ", "shared"));
    assert_eq!((span(&r, "q/z"), span(&r, "q/w")), (1510 * US, 1520 * US));
    // Per-CPU queues: CPU 1 runs its own w, then, with nothing of its own
    // left, pulls z from CPU 0.
    let r = run_text(&text.replace("RQ", "percpu"));
    assert_eq!((span(&r, "q/w"), span(&r, "q/z")), (1510 * US, 1520 * US));
}

/// When the only sample of span `s` ended: the start of its window (the
/// scenario's windows are 10 us wide).
fn ended_at(r: &VariantResult, s: &str) -> SimTime {
    let series = r.series(Metric::Span, s).unwrap();
    assert_eq!(series.hist.count(), 1, "{s}");
    let (at, _) = series.windows.iter().find(|(_, b)| b.count > 0).unwrap();
    at
}

/// One CPU with per-CPU queues and EEVDF, HZ=1000, 3 ms slices. Hogs
/// h[0], h[1] and h[2] run slices in turn (0-3, 3-6, 6-9 ms; h[0] again
/// from 9 ms), one `cpu 300us` step after another. s, first at 0, arms
/// the timer of work item `a` 9 jiffies out and sleeps; the timer wheel
/// fires it a jiffy later, at 10 ms (R35), in the middle of h[0]'s step
/// 9.9-10.2 ms. Then h[0] has run 3.9 ms by its last step boundary, h[1]
/// and h[2] 3 ms each: V is 3.3 ms. The timer queues `a` on CPU 0 and
/// its pool wakes a kworker, bound to that CPU, placed at V with half a
/// slice: deadline 4.8 ms, the earliest of the eligible.
const KWORKER_ON_A_BUSY_CPU: &str = r#"
[scenario]
name = "kworker"
duration = "20ms"
window = "10us"
cpus = 1
hz = 1000
timeslice = "3ms"
runqueue = "percpu"
wake_placement = "eevdf"
[workqueues.wq1]
kind = "percpu"
[workqueues.wq2]
kind = "percpu"
[works.a]
program = ["span_begin a", "ITEM", "span_end a"]
[works.b]
program = ["span_begin b", "cpu 10us", "span_end b"]
[tasks.s]
count = 1
program = ["queue_delayed_work wq1 a 9ms", "sleep 1s"]
[tasks.h]
count = 3
program = ["loop", "  cpu 300us", "end"]

[machine]
profile = 'ideal'
"#;

#[test]
fn eevdf_a_woken_kworker_that_is_the_pick_preempts_an_ineligible_task_at_its_next_step() {
    // h[0] (vruntime 3.9 ms against V 3.3) is no longer eligible, and the
    // kworker is EEVDF's pick with itself counted (check_preempt_wakeup_fair
    // runs after the enqueue): h[0] gets need_resched and yields at its next
    // step boundary, 10.2 ms, not at its slice's end (12 ms). The item
    // ends at 10.21 ms.
    let r = run_text(&KWORKER_ON_A_BUSY_CPU.replace("ITEM", "cpu 10us"));
    assert_eq!(ended_at(&r, "a/a"), SimTime::ZERO + 10_210 * US);
}

#[test]
fn r37_a_kworker_woken_as_its_pool_mate_sleeps_is_in_the_pick_that_follows() {
    // Item a (on wq1) queues b on wq2, the same CPU's pool, and flushes
    // wq2. Its kworker, running a from 10.2 ms, sleeps in the flush:
    // wq_worker_sleeping (from schedule(), before the pick) drops the
    // pool's nr_running to 0 and kick_pool wakes an idle kworker for b,
    // so the pick has it among the hogs: fresh, with the earliest
    // deadline, it runs b at once, 10.2 to 10.21 ms.
    let r = run_text(
        &KWORKER_ON_A_BUSY_CPU.replace("ITEM", "queue_work wq2 b\", \"flush_workqueue wq2"),
    );
    assert_eq!(ended_at(&r, "b/b"), SimTime::ZERO + 10_210 * US);
}

/// Two hogs on one CPU under EEVDF, b at nice 5 (weight 335 against
/// a's 1024, `sched_prio_to_weight`).
const NICE: &str = r#"
[scenario]
name = "nice"
duration = "DURATION"
cpus = 1
hz = 1000
timeslice = "3ms"
runqueue = "percpu"
wake_placement = "eevdf"
[tasks.a]
count = 1
program = ["loop", "  span_begin pass", "  cpu 100us", "  span_end pass", "end"]
[tasks.b]
count = 1
nice = 5
program = ["loop", "  span_begin pass", "  cpu 100us", "  span_end pass", "end"]

[machine]
profile = 'ideal'
"#;

#[test]
fn eevdf_a_niced_task_runs_its_slice_then_waits_until_its_faster_virtual_time_is_eligible() {
    // Virtual time runs 1024/335 times as fast for b (calc_delta_fair).
    // Both start at V = 0 with half a slice: deadlines 1.5 ms (a) and
    // 4.59 ms (b); a runs 0-3 ms. At 3 ms V = 1024*3/1359 = 2.26 ms: a
    // (3) is not eligible, b (0) is; b runs 3-6 ms, to vruntime 9.17 ms.
    // V is then 4.52 ms and stays below b's 9.17 until a has run to 12
    // ms of vruntime: a runs 6-15 ms (three slices; the 9 and 12 ms ticks
    // give it the CPU back), then b 15-18 ms. A pass that a switch cuts
    // ends when its task runs again; the one ending at 18 ms is past the
    // horizon: a 30 + 90 - 1 passes, b 30 + 30 - 1.
    let r = run_text(&NICE.replace("DURATION", "18ms"));
    assert_eq!((passes(&r, "a"), passes(&r, "b")), (119, 59));
    // At nice 0 they take turns, 3 ms each.
    let r = run_text(&NICE.replace("DURATION", "18ms").replace("nice = 5\n", ""));
    assert_eq!((passes(&r, "a"), passes(&r, "b")), (89, 89));
}

#[test]
fn eevdf_niced_hogs_share_a_cpu_in_proportion_to_their_weights() {
    // 3 s of 100 us passes: 30,000 in all, 1024:335 would be 22,605 and
    // 7,395. Lag keeps the share to within one slice's worth (30 passes).
    let r = run_text(&NICE.replace("DURATION", "3s"));
    let (a, b) = (passes(&r, "a"), passes(&r, "b"));
    assert!(
        a.abs_diff(22_605) <= 30 && b.abs_diff(7_395) <= 30,
        "{a} {b}"
    );
}

#[test]
fn a_nice_level_out_of_range_or_without_a_weighing_order_is_an_error() {
    for (from, to, field, needle) in [
        (
            "nice = 5",
            "nice = 25",
            "tasks.b.nice",
            "nice 25 is out of range",
        ),
        (
            "nice = 5",
            "nice = 5\nclass = \"rt\"",
            "tasks.b.nice",
            "an `rt` task has no nice level",
        ),
        (
            "wake_placement = \"eevdf\"",
            "wake_placement = \"cfs\"",
            "tasks.b.nice",
            "nice 5 needs a fair order that weighs tasks",
        ),
        (
            "cpus = 1",
            "cpus = \"unlimited\"",
            "tasks.b.nice",
            "nice 5 needs a fair order",
        ),
    ] {
        let msg = crate::common::compile_error(&NICE.replace("DURATION", "1ms").replace(from, to));
        assert!(
            msg.contains(needle)
                && msg.contains(&format!("field `{field}`"))
                && msg.contains("t.toml:"),
            "{msg}"
        );
    }
}

/// One CPU, no slices: a burns 10 us, sleeps 5 us, burns 10 us; b burns
/// 10 us. Both are runnable at 0, a first.
const SWITCHES: &str = r#"
[scenario]
name = "switch"
duration = "1s"
cpus = 1
switch_cost = "2us"
[tasks.a]
count = 1
program = ["span_begin a", "cpu 10us", "sleep 5us", "cpu 10us", "span_end a"]
[tasks.b]
count = 1
program = ["span_begin b", "cpu 10us", "span_end b"]

[machine]
profile = 'ideal'
"#;

#[test]
fn a_task_switched_in_after_another_spends_the_switch_cost_on_its_cpu_first() {
    // a: switched in 0-2 (its span starts when it first runs, at 2),
    // burns 2-12 and sleeps; b: switched in 12-14, burns 14-24; a, awake
    // since 17, gets the CPU at 24, is switched in 24-26 and burns 26-36.
    let r = run_text(SWITCHES);
    assert_eq!(span(&r, "a/a"), 34 * US);
    assert_eq!(span(&r, "b/b"), 10 * US);
    assert_eq!(r.counter("cpu/context_switches"), Some(3));
    // Without the cost: 0-10, 10-20, 20-30.
    let r = run_text(&SWITCHES.replace("switch_cost = \"2us\"\n", ""));
    assert_eq!((span(&r, "a/a"), span(&r, "b/b")), (30 * US, 10 * US));
    assert_eq!(r.counter("cpu/context_switches"), None);
}

#[test]
fn a_task_back_on_the_cpu_it_ran_on_last_is_not_switched_in_again() {
    // Alone: switched in once, 0-2; after its sleep the CPU is still its
    // own (an idle spell is not another task): 10 + 5 + 10 us from 2.
    let alone = SWITCHES.replace("[tasks.b]\ncount = 1", "[tasks.b]\ncount = 0");
    let r = run_text(&alone);
    assert_eq!(span(&r, "a/a"), 25 * US);
    assert_eq!(r.counter("cpu/context_switches"), Some(1));
}

#[test]
fn a_flush_that_sleeps_costs_two_switches_the_kworker_in_and_the_flusher_back() {
    // s (switched in 0-2; its span starts at 2) queues item w on CPU 0's
    // pool and flushes: the kicked kworker is switched in 2-4 and runs w
    // 4-14; s, woken at 14, is switched in again 14-16: the flush takes
    // 14 us, 10 without the cost (R36, R37).
    let text = r#"
[scenario]
name = "flush"
duration = "1s"
cpus = 1
switch_cost = "2us"
[workqueues.wq]
kind = "percpu"
[works.w]
program = ["cpu 10us"]
[tasks.s]
count = 1
program = ["span_begin f", "queue_work wq w", "flush_workqueue wq", "span_end f"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text);
    assert_eq!(span(&r, "f/s"), 14 * US);
    assert_eq!(r.counter("cpu/context_switches"), Some(3));
    let r = run_text(&text.replace("switch_cost = \"2us\"\n", ""));
    assert_eq!(span(&r, "f/s"), 10 * US);
}

#[test]
fn a_switch_cost_without_cpus_or_not_a_duration_is_an_error() {
    for (to, needle) in [
        (
            "cpus = \"unlimited\"",
            "a context-switch cost needs a number of CPUs",
        ),
        ("cpus = 1\nswitch_cost = \"fast\"", "fast"),
    ] {
        let text = SWITCHES.replace("cpus = 1", to).replacen(
            "switch_cost = \"2us\"\n",
            "",
            usize::from(to.contains("fast")),
        );
        let msg = crate::common::compile_error(&text);
        assert!(
            msg.contains(needle)
                && msg.contains("field `scenario.switch_cost`")
                && msg.contains("t.toml:"),
            "{msg}"
        );
    }
}

#[test]
fn cpu_speed_divides_every_cpu_step_and_the_switch_cost_but_not_a_sleep() {
    // At speed 2 (switch 1 us, bursts 5 us, the sleep still 5 us): a is
    // switched in 0-1, burns 1-6, sleeps 6-11; b is switched in 6-7 and
    // burns 7-12; a, awake since 11, is switched in 12-13 and burns 13-18.
    let fast = SWITCHES.replace("switch_cost", "cpu_speed = 2\nswitch_cost");
    let r = run_text(&fast);
    assert_eq!((span(&r, "a/a"), span(&r, "b/b")), (17 * US, 5 * US));
    // At speed 0.5 (switch 4 us, bursts 20 us): a in 0-4, burns 4-24,
    // sleeps 24-29; b in 24-28, burns 28-48; a in 48-52, burns 52-72.
    let slow = SWITCHES.replace("switch_cost", "cpu_speed = 0.5\nswitch_cost");
    let r = run_text(&slow);
    assert_eq!((span(&r, "a/a"), span(&r, "b/b")), (68 * US, 20 * US));
    // Speed 1 is the scenario as written.
    let same = SWITCHES.replace("switch_cost", "cpu_speed = 1.0\nswitch_cost");
    assert_eq!(run_text(&same), run_text(SWITCHES));
}

#[test]
fn cpu_speed_scales_a_named_distribution_only_where_a_cpu_step_uses_it() {
    // `$d` is both a burn and a sleep: at speed 4 the burn is 2 us, the
    // sleep stays 8 us.
    let text = r#"
[scenario]
name = "speed"
duration = "1s"
cpu_speed = 4
[dists.d]
dist = "const"
value = "8us"
[tasks.a]
count = 1
program = ["span_begin c", "cpu $d", "span_end c", "span_begin s", "sleep $d", "span_end s"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text);
    assert_eq!((span(&r, "c/a"), span(&r, "s/a")), (2 * US, 8 * US));
}

#[test]
fn a_cpu_speed_out_of_range_or_not_a_number_is_an_error_naming_the_field() {
    for (to, needle) in [
        ("cpu_speed = 0", "0 is out of range"),
        ("cpu_speed = -1.5", "-1.5 is out of range"),
        ("cpu_speed = 1000", "expected a speed from 0.01 to 100"),
        ("cpu_speed = \"fast\"", "fast"),
    ] {
        let msg = crate::common::compile_error(
            &SWITCHES.replace("switch_cost", &format!("{to}\nswitch_cost")),
        );
        assert!(
            msg.contains(needle) && msg.contains("scenario.cpu_speed") && msg.contains("t.toml:"),
            "{to}: {msg}"
        );
    }
}

#[test]
fn set_cpus_to_unlimited_over_a_count_in_the_file() {
    let run = |set: &str| {
        let mut src = Source::new("t.toml", PREEMPT);
        src.sets.push(set.to_string());
        let f = ScenarioFile::new(src)?;
        let l = f.load(&f.base)?;
        let c = compile(&f.source, &l.doc, &f.base)?;
        let mut w = World::new(&c, 1, 0, Limits::default());
        w.run(&mut |_| {}).unwrap();
        Ok::<_, experiments::scenario::ScenarioError>(w.result())
    };
    // With a CPU each, the wakee runs its 1 ms at once when it wakes.
    for set in ["scenario.cpus=unlimited", "scenario.cpus=\"unlimited\""] {
        let r = run(set).unwrap();
        assert_eq!(span(&r, "wakee/wakee"), 2 * MS, "{set}");
    }
    let e = run("scenario.cpus=lots").unwrap_err().to_string();
    assert!(
        e.contains("`scenario.cpus` is an integer; `lots` is not"),
        "{e}"
    );
    let e = run("tasks.hog.count=unlimited").unwrap_err().to_string();
    assert!(e.contains("tasks.hog.count"), "{e}");
}

#[test]
fn eevdf_and_cfs_end_a_hogs_slice_at_the_tick_without_a_timeslice_setting() {
    // Two CPU hogs on one CPU. EEVDF's base slice and CFS's granularity
    // always exist: with no `timeslice` the slice is one tick, and the
    // tick ends it, so the hogs take turns (nice 0 against nice 5 split
    // the CPU 1024:335 under EEVDF). Only the orders that are not a
    // kernel's (`fifo`, `first`) have no slice unless one is set.
    let text = |placement: &str, nice: &str| {
        format!(
            r#"
[scenario]
name = "hogs"
duration = "1s"
cpus = 1
hz = 1000
wake_placement = "{placement}"
[tasks.a]
count = 1
program = ["loop", "cpu 100us", "count it", "end"]
[tasks.b]
count = 1
nice = {nice}
program = ["loop", "cpu 100us", "count it", "end"]

[machine]
profile = 'ideal'
"#
        )
    };
    let counts = |r: &VariantResult| (r.counter("it/a").unwrap(), r.counter("it/b").unwrap());
    for placement in ["eevdf", "eevdf-6.6"] {
        let (a, b) = counts(&run_text(&text(placement, "5")));
        let share = a as f64 / (a + b) as f64;
        assert!(
            (share - 1024.0 / 1359.0).abs() < 0.02,
            "{placement}: {a} against {b}"
        );
    }
    let (a, b) = counts(&run_text(&text("cfs", "0").replace("nice = 0\n", "")));
    assert!(a.abs_diff(b) <= 10, "cfs: {a} against {b}");
    let cfs = run_text(&text("cfs", "0").replace("nice = 0\n", ""));
    assert!(cfs.counter("cpu/resched_yields").unwrap() > 0);
    // `fifo` without a slice: the first hog keeps the CPU.
    let (a, b) = counts(&run_text(&text("fifo", "0").replace("nice = 0\n", "")));
    assert_eq!((a, b), (9_999, 0));
}

#[test]
fn r121_a_woken_task_misses_an_idle_cpu_on_a_busy_llc_until_its_balance_is_due() {
    // Two CPUs, one LLC, HZ 250, the ideal machine (no wake costs). The
    // RT hog holds CPU 0 until it ends at 300 ms; the RT b sleeps 10 ms
    // and then holds CPU 1 for 1 s (its own CPU 0 busy, the search still
    // finds CPU 1: the LLC was half busy). x runs on CPU 1, sleeps 1 ms
    // and comes back to CPU 1 (so CPU 1 is also its recently used CPU),
    // then sleeps until 302.02 ms. Then the LLC has been busy nearly all
    // the time (utilization 0.995: SIS_UTIL scans no CPU), x's CPU and
    // recently used CPU are CPU 1, busy with an RT task that a fair wakee
    // does not preempt: x waits on CPU 1 though CPU 0 idles. CPU 0's
    // balance is due 2 ms (one 4 ms jiffy) after it went idle, at 304 ms,
    // a tick: it pulls x, whose 1 ms ends at 305 ms. With one shared
    // queue (every idle CPU found, as before R121) x takes CPU 0 at once
    // and ends at 303.02 ms.
    let text = r#"
[scenario]
name = "sis"
duration = "400ms"
cpus = 2
hz = 250
runqueue = "percpu"
wake_placement = "eevdf"
[tasks.a_x]
count = 1
program = ["span_begin done", "cpu 10us", "sleep 1ms", "cpu 10us", "sleep 301ms", "cpu 1ms", "span_end done"]
[tasks.b_rt]
count = 1
class = "rt"
program = ["sleep 10ms", "cpu 1s"]
[tasks.c_hog]
count = 1
class = "rt"
program = ["cpu 300ms"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text);
    assert_eq!(span(&r, "done/a_x"), 305_000 * US);
    assert_eq!(r.counter("cpu/idle_balance_pulls"), Some(1));
    let shared = run_text(&text.replace("\"percpu\"", "\"shared\""));
    assert_eq!(span(&shared, "done/a_x"), 303_020 * US);
}

#[test]
fn r123_cond_resched_is_a_preemption_point_under_none_even_holding_a_lock() {
    // As the might_resched test, with cond_resched: the kernel's explicit
    // preemption point (shrink_dcache_parent's, in rmdir under the
    // parent's i_rwsem) schedules under PREEMPT_NONE too, holding m.
    assert_eq!(
        points_hold(&POINTS.replace("STEP", "cond_resched")),
        19 * MS
    );
}

/// One CPU, EEVDF on per-CPU queues, PREEMPT_NONE, 3 ms slices at HZ
/// 100 (a tick every 10 ms). s runs first and sleeps at once with no
/// lag; h then runs alone, `cpu 100us` steps from 0, placed with half a
/// slice (deadline 1.5 ms). s wakes at WAKE and runs a 10 us span.
const REQUEST_USED: &str = r#"
[scenario]
name = "request"
duration = "30ms"
window = "10us"
cpus = 1
hz = 100
timeslice = "3ms"
preemption = "none"
runqueue = "percpu"
wake_placement = "eevdf"
[tasks.s]
count = 1
program = ["sleep WAKE", "span_begin w", "cpu 10us", "span_end w", "sleep 1s"]
[tasks.h]
count = 1
program = ["loop", "  cpu 100us", "end"]

[machine]
profile = 'ideal'
"#;

#[test]
fn r124_a_wakeup_reschedules_a_task_whose_request_is_used_up_an_eligible_one_inside_it_keeps_the_cpu(
) {
    // At 4.05 ms h (vruntime 4.05 ms) is as eligible as s, placed at V
    // with no lag, but it has run past its deadline (1.5 ms): the
    // enqueue's update_curr moves the deadline and asks for a reschedule.
    // h yields at its next step boundary, 4.1 ms, where s (deadline 7.05
    // ms, eligible) is the pick over h (vruntime 4.1 ms, past V 4.075):
    // the span runs 4.1 to 4.11 ms.
    let r = run_text(&REQUEST_USED.replace("WAKE", "4050us"));
    assert_eq!(ended_at(&r, "w/s"), SimTime::ZERO + 4_110 * US);
    // At 1.05 ms h is eligible and inside its request (RUN_TO_PARITY):
    // s waits. Nothing looks at h's request again until the tick at 10
    // ms, which finds the slice used up.
    let r = run_text(&REQUEST_USED.replace("WAKE", "1050us"));
    assert_eq!(ended_at(&r, "w/s"), SimTime::ZERO + 10_010 * US);
}
