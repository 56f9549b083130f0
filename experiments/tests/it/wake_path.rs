//! The machine's wake path and steal (R63-R68): scripted scenarios run on
//! a built-in profile, with the exact times at which each woken task runs
//! and the counters that say why.
//!
//! Until scenarios name their machine, a test compiles the scenario and
//! sets `Compiled::machine` itself. The mutexes' words have cache lines
//! of no cost (`line_transfer = "0ns"`): these tests time the wake path
//! alone; tests/it/coherence.rs times the lines.

use experiments::blame::{blame_run, Wanted};
use experiments::program::Compiled;
use experiments::world::{Limits, World};
use models::machine::episodes::Episodes;
use models::machine::{profiles, Machine};
use models::CpuId;
use output::{Metric, VariantResult};
use serde_json::Value;
use sim::{Dur, SimTime};

const US: Dur = Dur(1_000);
const MS: Dur = Dur(1_000_000);

/// `text` compiled, on profile `profile` sized to the scenario's CPUs.
fn on(text: &str, profile: &str) -> Compiled {
    let mut c = crate::common::compile_text(text);
    c.machine = Machine::from_profile(profiles::by_name(profile).unwrap(), c.cpus);
    c
}

/// `text` on `profile` without interrupts (R125): for figures of the wake
/// path or of steal alone.
fn on_quiet(text: &str, profile: &str) -> Compiled {
    let mut c = on(text, profile);
    c.machine.interrupts.tick = Dur::ZERO;
    c.machine.interrupts.irq_rate = 0.0;
    c
}

fn run(c: &Compiled) -> VariantResult {
    run_seeded(c, 1)
}

fn run_seeded(c: &Compiled, seed: u64) -> VariantResult {
    let mut w = World::new(c, seed, 0, Limits::default());
    w.run(&mut |_| {}).unwrap();
    w.result()
}

/// The run's trace, parsed.
fn trace(c: &Compiled) -> Value {
    let mut w = World::new(c, 1, 0, Limits::default());
    w.enable_trace(SimTime::ZERO, SimTime::ZERO + c.duration);
    w.run(&mut |_| {}).unwrap();
    serde_json::from_slice(&w.take_trace().unwrap().into_json("t")).unwrap()
}

/// The (start, duration, cpu) in ns of the slices named `name` on task
/// `task`'s track.
fn slices(v: &Value, task: &str, name: &str) -> Vec<(u64, u64, u64)> {
    let ev = v["traceEvents"].as_array().unwrap();
    let tid = &ev
        .iter()
        .find(|e| e["ph"] == "M" && e["args"]["name"] == task)
        .unwrap()["tid"];
    let ns = |x: &Value| (x.as_f64().unwrap() * 1e3).round() as u64;
    ev.iter()
        .filter(|e| e["ph"] == "X" && e["name"] == name && e["tid"] == *tid)
        .map(|e| {
            (
                ns(&e["ts"]),
                ns(&e["dur"]),
                e["args"]["cpu"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn span(r: &VariantResult, s: &str) -> Dur {
    let h = &r.series(Metric::Span, s).unwrap().hist;
    assert_eq!(h.count(), 1, "{s}");
    h.max()
}

fn wait(r: &VariantResult, s: &str) -> Dur {
    r.series(Metric::Wait, s).unwrap().hist.max()
}

/// The holder takes the mutex and sleeps 1 ms on CPU 0; the waiter, on
/// CPU 1, sleeps 100 us, then blocks on the mutex (its owner is off CPU:
/// no spinning) and is woken by the holder's unlock. Per-CPU run queues:
/// a woken task goes back to its CPU when that is idle.
const HANDOFF: &str = r#"
[scenario]
name = "handoff"
duration = "10ms"
cpus = 2
runqueue = "percpu"
[locks.m]
kind = "mutex"
line_transfer = "0ns"
line_local = "0ns"
[tasks.holder]
count = 1
program = ["span_begin nap", "mutex_lock m", "sleep 1ms", "mutex_unlock m", "span_end nap", "sleep 100ms"]
[tasks.waiter]
count = 1
program = ["sleep 100us", "span_begin got", "mutex_lock m", "span_end got", "mutex_unlock m", "sleep 100ms"]

[machine]
profile = 'ideal'
"#;

#[test]
fn the_ideal_machine_wakes_at_once() {
    let r = run(&on(HANDOFF, "ideal"));
    assert_eq!(span(&r, "nap/holder"), MS);
    assert_eq!(wait(&r, "m/lock/waiter"), MS - 100 * US);
    assert_eq!(r.counter("cpu/ipis"), None, "no wake-path counters");
}

#[test]
fn r63_r64_r65_bare_metal_timer_and_remote_wakeups_pay_the_idle_exit() {
    // server-2s cut to 2 CPUs: one core, CPUs 0 and 1 SMT siblings (a line
    // moves between them in 8 ns). Ice Lake's states all poll (MWAIT):
    // no IPI anywhere.
    let c = on(HANDOFF, "server-2s");
    let r = run(&c);
    // 100 us: the waiter's timer on its idle CPU 1, idle 100 us: C1E
    // (residency 4 us, not C6's 600), exit 4 us (R64, R65). It blocks at
    // 104 us.
    // 1 ms: the holder's timer on CPU 0, idle 1 ms: C6, exit 170 us; it
    // runs at 1.17 ms and unlocks. Its wakeup of the waiter on the
    // polling sibling costs it that line, 8 ns, before its next step
    // (R122).
    assert_eq!(span(&r, "nap/holder"), MS + 170 * US + Dur(8));
    assert_eq!(r.counter("cpu/waker_ns"), Some(8));
    // The unlock wakes the waiter onto CPU 1, idle since 104 us: C6. The
    // flag write crosses to the sibling (8 ns, no IPI: R63), then the
    // exit: it runs holding the lock at 1.17 + 0.17 ms + 8 ns.
    let got = 1_340 * US + Dur(8);
    assert_eq!(span(&r, "got/waiter"), got - 104 * US);
    assert_eq!(wait(&r, "m/lock/waiter"), got - 104 * US);
    assert_eq!(r.counter("cpu/ipis"), Some(0));
    assert_eq!(r.counter("cpu/idle_exits_POLL"), Some(0));
    assert_eq!(r.counter("cpu/idle_exits_C1"), Some(0));
    assert_eq!(r.counter("cpu/idle_exits_C1E"), Some(1));
    assert_eq!(r.counter("cpu/idle_exits_C6"), Some(2));
    assert_eq!(r.counter("cpu/idle_exit_ns"), Some((4 + 170 + 170) * 1_000));
    assert_eq!(r.counter("cpu/host_wakes"), None, "bare metal");
    // The trace shows each latency as a `waking` slice on its CPU, in
    // order.
    let v = trace(&c);
    assert_eq!(
        slices(&v, "waiter[0]", "waking"),
        [(100_000, 4_000, 1), (1_170_000, 170_008, 1)]
    );
    assert_eq!(slices(&v, "holder[0]", "waking"), [(1_000_000, 170_000, 0)]);
}

#[test]
fn r63_an_idle_state_that_does_not_poll_needs_the_ipi() {
    // As if C6 were entered by HLT or an I/O port read (acpi_idle on a
    // server whose firmware lists it so): the waker must send an IPI.
    let mut c = on(HANDOFF, "server-2s");
    c.machine.idle_states[3].polling = false;
    let r = run(&c);
    let ipi = c.machine.ipi;
    assert_eq!(
        wait(&r, "m/lock/waiter"),
        1_340 * US + ipi - 104 * US,
        "the IPI instead of the line transfer"
    );
    // The holder's own timer needs none; the IPI it sends at its unlock
    // costs it `wake_send` before its next step (R122).
    assert_eq!(span(&r, "nap/holder"), MS + 170 * US + c.machine.wake_send);
    assert_eq!(c.machine.wake_send, Dur(550));
    assert_eq!(r.counter("cpu/ipis"), Some(1));
    assert_eq!(r.counter("cpu/waker_ns"), Some(550));
}

#[test]
fn r66_r119_a_guest_polls_in_the_host_then_pays_the_host_wakeup() {
    let c = on(HANDOFF, "kvm-guest");
    let g = c.machine.guest.clone().unwrap();
    let r = run(&c);
    // A fresh vCPU has no poll window (R119). 100 us: the waiter's vCPU
    // halted 100 us, and its own timer wakes it through the host: host
    // wakeup + C1E's 4 us; the window grows to 10 us. The waiter blocks
    // on m at 109 us.
    let waiter_blocks = 100 * US + g.host_wake + 4 * US;
    // 1 ms: the holder's vCPU halted 1 ms, none of it polled: the host
    // idled it in C6: host wakeup + 170 us.
    let holder_runs = MS + g.host_wake + 170 * US;
    // The unlock's IPI is a VM exit (HLT does not poll), which the holder
    // pays on its vCPU before its next step (R122): 1.45 us.
    assert_eq!(span(&r, "nap/holder"), holder_runs + c.machine.wake_send);
    assert_eq!(c.machine.wake_send, Dur(1_450));
    assert_eq!(r.counter("cpu/waker_ns"), Some(1_450));
    // The waiter's vCPU halted since 109 us, 10 us of it polled, the rest
    // in C6 on the host.
    let got = holder_runs + g.ipi + g.host_wake + 170 * US;
    assert_eq!(wait(&r, "m/lock/waiter"), got - waiter_blocks);
    assert_eq!(r.counter("cpu/ipis"), Some(1));
    assert_eq!(r.counter("cpu/halt_poll_hits"), Some(0));
    assert_eq!(r.counter("cpu/host_wakes"), Some(3));
    assert_eq!(r.counter("cpu/idle_exits_C6"), Some(2));
    assert_eq!(r.counter("cpu/idle_exits_C1E"), Some(1));
    assert_eq!(r.counter("cpu/steal_ns"), Some(0), "no steal by default");
}

#[test]
fn r119_a_vcpus_poll_window_grows_until_its_halts_fit_then_every_wakeup_is_a_poll_hit() {
    // One task on a guest's vCPU: 1 us of work, then a 50 us sleep, over
    // and over; its own timer wakes it. Halts of 50 us the host did not
    // poll through grow the window 0 -> 10 -> 20 -> 40 -> 80 us: the
    // first four wakeups go through the host (its wakeup and C1E's 4 us:
    // a 60 us round); from the fifth the 80 us window covers the halt
    // and the task runs again as its timer fires (a 51 us round).
    let text = r#"
[scenario]
name = "halt-poll"
duration = "2ms"
cpus = 1
[tasks.t]
count = 1
program = ["loop", "  span_begin round", "  cpu 1us", "  sleep 50us", "  span_end round", "end"]

[machine]
profile = 'ideal'
"#;
    let c = on_quiet(text, "kvm-guest");
    let g = c.machine.guest.clone().unwrap();
    assert_eq!(g.host_wake + 4 * US, 9 * US);
    let r = run(&c);
    let hist = &r.series(Metric::Span, "round/t").unwrap().hist;
    assert_eq!((hist.min(), hist.max()), (51 * US, 60 * US));
    // Two values only (each in its HDR bucket), the slow one four times.
    let rounds = hist.recorded();
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert_eq!(rounds[1].1, 4, "{rounds:?}");
    assert_eq!(r.counter("cpu/host_wakes"), Some(4));
    assert_eq!(r.counter("cpu/halt_poll_hits"), Some(rounds[0].1));
}

/// R122's scenarios: two CPUs and a mutex. The holder (first placed on
/// CPU 0) runs `holder_pre`, takes the mutex, sleeps 500 us holding it
/// and unlocks; the hog (CPU 1) sleeps `hog_sleep`, then computes 10 ms;
/// the waiter (CPU 1) runs `waiter_pre` and blocks on the mutex.
fn holder_hog_waiter(name: &str, holder_pre: &str, hog_sleep: &str, waiter_pre: &str) -> String {
    format!(
        r#"
[scenario]
name = "{name}"
duration = "20ms"
cpus = 2
runqueue = "percpu"
wake_placement = "eevdf"
timeslice = "3ms"
preemption = "none"
[locks.m]
kind = "mutex"
line_transfer = "0ns"
line_local = "0ns"
[tasks.holder]
count = 1
program = [{holder_pre}"mutex_lock m", "sleep 500us", "span_begin unlock", "mutex_unlock m", "span_end unlock", "sleep 100ms"]
[tasks.hog]
count = 1
program = ["sleep {hog_sleep}", "cpu 10ms", "sleep 100ms"]
[tasks.idler]
count = 1
program = ["sleep 100ms"]
[tasks.waiter]
count = 1
program = [{waiter_pre}"span_begin got", "mutex_lock m", "span_end got", "mutex_unlock m", "sleep 100ms"]

[machine]
profile = 'ideal'
"#
    )
}

/// The busy target: the waiter blocks at once, the hog wakes at 100 us
/// onto CPU 1 and computes; at the unlock both CPUs are busy.
fn busy_target() -> String {
    holder_hog_waiter("busy-target", "", "100us", "")
}

/// The loaded waker: the holder's CPU has run 5 ms, the waiter's 5.2 ms
/// before it blocked and the hog's 0.2 ms since: wake_affine (R127)
/// keeps the waiter with its own CPU, which the hog now runs.
fn loaded_waker() -> String {
    holder_hog_waiter(
        "loaded-waker",
        r#""cpu 5ms", "#,
        "5300us",
        r#""cpu 5200us", "#,
    )
}

#[test]
fn r122_r127_the_waker_pays_for_a_wakeup_on_another_cpu_an_ipi_or_a_line() {
    // Guest (its wake path; the switch cost is the scenario's, none): the
    // holder's vCPU 0 halted 500 us, none of it polled (a fresh window):
    // it runs and unlocks at 500 + 5 + 4 us (host wakeup, C1E).
    let unlock_at = 500_000 + 5_000 + 4_000;
    // The hog's CPU carries more load than the holder's: wake_affine
    // (R127) queues the waiter on the holder's own CPU. No other CPU's
    // queue is written and no IPI sent: the holder pays nothing, and the
    // waiter runs there when the holder sleeps.
    let c = on(&busy_target(), "kvm-guest");
    let r = run(&c);
    assert_eq!(span(&r, "unlock/holder"), Dur::ZERO);
    assert_eq!(r.counter("cpu/waker_ns"), Some(0));
    assert_eq!(r.counter("cpu/wake_affine_targets"), Some(1));
    let got = r.series(Metric::Span, "got/waiter").unwrap().hist.max();
    assert_eq!(got, Dur(unlock_at));
    // The waiter's own CPU carries less: it is queued there, behind the
    // hog. PREEMPT_NONE: EEVDF does not preempt the hog for it (the
    // hog's slice runs on), so no IPI: the holder writes CPU 1's run
    // queue, one line within the socket (51 ns), before its next step,
    // the span's end.
    let c = on(&loaded_waker(), "kvm-guest");
    let line = c.machine.lines.socket;
    assert_eq!(line, Dur(51));
    let r = run(&c);
    assert_eq!(r.counter("cpu/wake_affine_targets"), Some(0));
    assert_eq!(span(&r, "unlock/holder"), line);
    assert_eq!(r.counter("cpu/waker_ns"), Some(51));
    assert_eq!(r.counter("cpu/wakeup_preemptions"), Some(0));
    // PREEMPT_FULL: the waiter preempts the hog's burst on CPU 1, which
    // takes an IPI to that vCPU: a VM exit the holder pays (wake_send).
    let full = on(
        &busy_target().replace("preemption = \"none\"", "preemption = \"full\""),
        "kvm-guest",
    );
    let r = run(&full);
    assert_eq!(span(&r, "unlock/holder"), full.machine.wake_send);
    assert_eq!(r.counter("cpu/waker_ns"), Some(1_450));
    assert_eq!(r.counter("cpu/preemptions"), Some(1));
    // The ideal machine charges nothing.
    let r = run(&on(&busy_target(), "ideal"));
    assert_eq!(span(&r, "unlock/holder"), Dur::ZERO);
}

#[test]
fn r68_a_cpu_with_a_wakeup_on_its_way_is_not_idle() {
    // a sleeps on CPU 0, which the hog then takes; b sleeps on CPU 1. At
    // 1 ms a's timer finds CPU 0 busy and wakes a onto CPU 1 (idle 1 ms,
    // C6): a reserves it and runs at 1.170008 ms. b's timer at 1.01 ms
    // finds CPU 1 taken although nothing runs there yet: b waits in the
    // queue, and gets CPU 1 when a exits (no idle exit: the CPU is awake).
    let text = r#"
[scenario]
name = "reserve"
duration = "20ms"
cpus = 2
[tasks.a]
count = 1
program = ["span_begin a", "sleep 1ms", "cpu 100us", "span_end a"]
[tasks.b]
count = 1
program = ["span_begin b", "sleep 1010us", "cpu 100us", "span_end b"]
[tasks.hog]
count = 1
program = ["cpu 10ms"]

[machine]
profile = 'ideal'
"#;
    let c = on(text, "server-2s");
    let r = run(&c);
    let a_runs = MS + 170 * US + Dur(8);
    assert_eq!(span(&r, "a/a"), a_runs + 100 * US);
    assert_eq!(span(&r, "b/b"), a_runs + 200 * US);
    assert_eq!(r.counter("cpu/idle_exits_C6"), Some(1));
    let v = trace(&c);
    assert_eq!(slices(&v, "a[0]", "waking"), [(1_000_000, 170_008, 1)]);
    assert_eq!(
        slices(&v, "b[0]", "runnable"),
        [(1_010_000, a_runs.0 + 100_000 - 1_010_000, 1)]
    );
}

#[test]
fn the_scenario_wake_latency_comes_first_then_the_machine_from_the_waker_cpu() {
    // wake_latency 5 us on top (drawn as before, R-free): the waiter's
    // timer at 100 us, 5 us of scenario latency, then its own CPU's exit
    // (idle 105 us: C1E, 4 us), placed from the CPU its timer fired on
    // even though the hog's burst event ran in between.
    let text = r#"
[scenario]
name = "on-top"
duration = "10ms"
cpus = 3
wake_latency = "5us"
[tasks.waiter]
count = 1
program = ["sleep 100us", "span_begin w", "cpu 1us", "span_end w"]
[tasks.hog]
count = 1
program = ["cpu 102us", "cpu 1ms"]

[machine]
profile = 'ideal'
"#;
    let c = on(text, "server-2s");
    let v = trace(&c);
    assert_eq!(slices(&v, "waiter[0]", "waking"), [(105_000, 4_000, 0)]);
    let r = run(&c);
    assert_eq!(r.counter("cpu/ipis"), Some(0));
    assert_eq!(r.counter("cpu/idle_exits_C1E"), Some(1));
}

#[test]
fn blame_shows_the_machine_wake_latency_and_names_the_waker() {
    let c = on(HANDOFF, "server-2s");
    let wanted = Wanted {
        top: 1,
        threshold: None,
        stats: None,
    };
    let ch = blame_run(&c, (1, 0), Limits::default(), wanted, false)
        .unwrap()
        .chains;
    let worst = &ch[0];
    assert_eq!(worst.waiter, "waiter[0]");
    let rows: Vec<(&str, &str, u64, u64)> = worst
        .links
        .iter()
        .filter(|l| l.depth == 0)
        .map(|l| (&*l.task, &*l.state, l.start.0, l.end.0))
        .collect();
    // Asleep on the mutex until the holder's unlock at 1.17 ms, then
    // being woken for 170.008 us.
    assert!(
        rows.contains(&(
            "waiter[0]",
            "being woken (scheduling latency)",
            1_170_000,
            1_340_008
        )),
        "{rows:?}"
    );
    let asleep = worst
        .links
        .iter()
        .find(|l| l.depth == 0 && l.end.0 == 1_170_000)
        .expect("the wait in the mutex's queue");
    assert!(asleep.detail.contains("holder[0]"), "{asleep:?}");
}

/// `work` of CPU time from `start` on CPU `cpu` of a guest with steal
/// `s`: where it ends (the same draws as the world's).
fn stretched(s: &mut Episodes, cpu: u32, start: SimTime, work: Dur) -> SimTime {
    s.stretch(CpuId(cpu), start, work)
}

/// The world's steal processes for a run with `seed`, replication 0.
fn steal_of(c: &Compiled, seed: u64) -> Episodes {
    let g = c.machine.guest.as_ref().unwrap();
    let streams = (0..u64::from(c.cpus.unwrap()))
        .map(|i| sim::rng::stream(seed, 0, "steal/cpu", i))
        .collect();
    Episodes::steal(g.steal_fraction, g.steal_episode, streams).unwrap()
}

#[test]
fn r67_steal_stretches_cpu_steps_and_the_locks_held_across_them() {
    let text = r#"
[scenario]
name = "steal"
duration = "10s"
cpus = 1
[locks.m]
kind = "mutex"
line_transfer = "0ns"
line_local = "0ns"
[tasks.t]
count = 1
program = ["mutex_lock m", "span_begin s", "cpu 50ms", "cpu 50ms", "span_end s", "mutex_unlock m", "sleep 100s"]

[machine]
profile = 'ideal'
"#;
    let mut c = on_quiet(text, "kvm-guest");
    let g = c.machine.guest.as_mut().unwrap();
    g.steal_fraction = 0.2;
    g.steal_episode = MS;
    let mut s = steal_of(&c, 1);
    let first = stretched(&mut s, 0, SimTime::ZERO, 50 * MS);
    let second = stretched(&mut s, 0, first, 50 * MS);
    let r = run(&c);
    let end = second.since(SimTime::ZERO);
    assert!(end > 100 * MS + 5 * MS, "a fifth stolen: {end}");
    assert_eq!(span(&r, "s/t"), end);
    assert_eq!(
        r.series(Metric::Hold, "m/lock/t").unwrap().hist.max(),
        end,
        "lock-holder preemption: the hold spans the steal"
    );
    assert_eq!(r.counter("cpu/steal_ns"), Some((end - 100 * MS).0));
}

#[test]
fn r125_a_lock_holder_interrupted_by_the_tick_holds_the_lock_longer() {
    // One CPU at HZ 250 whose tick takes 100 us, no other interrupt. The
    // task starts at 0, where a tick is: its 3.8 ms step ends at 3.9 ms.
    // Its 150 us step under the mutex meets the tick at 4 ms: it ends at
    // 4.15 ms, and the mutex is held 250 us.
    let text = r#"
[scenario]
name = "tick"
duration = "1s"
cpus = 1
[locks.m]
kind = "mutex"
line_transfer = "0ns"
line_local = "0ns"
[tasks.t]
count = 1
program = ["cpu 3800us", "mutex_lock m", "span_begin s", "cpu 150us", "span_end s", "mutex_unlock m", "sleep 100s"]
"#;
    let mut c = on(text, "server-1s");
    c.hz = 250;
    c.machine.hz = 250;
    c.machine.interrupts.tick = 100 * US;
    c.machine.interrupts.irq_rate = 0.0;
    let r = run(&c);
    assert_eq!(
        span(&r, "s/t"),
        250 * US,
        "150 us of work and the tick's 100"
    );
    assert_eq!(
        r.series(Metric::Hold, "m/lock/t").unwrap().hist.max(),
        250 * US
    );
    assert_eq!(
        r.counter("cpu/irq_ns"),
        Some((200 * US).0),
        "the ticks at 0 and 4 ms"
    );
    // The sleep that follows loses nothing: an idle CPU delays no task.
    c.machine.interrupts.tick = Dur::ZERO;
    let r = run(&c);
    assert_eq!(span(&r, "s/t"), 150 * US, "no tick cost, no stretch");
    assert_eq!(r.counter("cpu/irq_ns"), Some(0));
}

#[test]
fn r67_stolen_time_counts_against_the_slice() {
    // One vCPU, a 1 ms slice at HZ 1000. b starts and sleeps 10 us; a
    // runs 500 us steps from 0 and b, woken, waits for the CPU. Without
    // steal a yields after its second step (at 1 ms). With steal (no
    // PARAVIRT_TIME_ACCOUNTING), a step that the host stretched past 1 ms
    // ends the slice after one step. The seed is the first where the
    // first step is stretched so.
    let text = r#"
[scenario]
name = "slice"
duration = "1s"
cpus = 1
hz = 1000
timeslice = "1ms"
[tasks.b]
count = 1
program = ["span_begin b", "sleep 10us", "cpu 100us", "span_end b", "sleep 10s"]
[tasks.a]
count = 1
program = ["span_begin a", "cpu 500us", "cpu 500us", "cpu 500us", "span_end a", "sleep 10s"]

[machine]
profile = 'ideal'
"#;
    let ideal = run(&on(text, "ideal"));
    assert_eq!(span(&ideal, "b/b"), 1_100 * US);
    assert_eq!(span(&ideal, "a/a"), 1_600 * US);
    let mut c = on_quiet(text, "kvm-guest");
    let g = c.machine.guest.as_mut().unwrap();
    g.steal_fraction = 0.5;
    g.steal_episode = MS;
    let (seed, mut s, e1) = (1..100)
        .find_map(|seed| {
            let mut s = steal_of(&c, seed);
            let e1 = stretched(&mut s, 0, SimTime::ZERO, 500 * US);
            (e1 >= SimTime::ZERO + MS).then_some((seed, steal_of(&c, seed), e1))
        })
        .expect("a seed whose first step loses half a slice");
    assert_eq!(stretched(&mut s, 0, SimTime::ZERO, 500 * US), e1);
    // b runs from the end of a's first step, then a's two other steps.
    let b_end = stretched(&mut s, 0, e1, 100 * US);
    let e2 = stretched(&mut s, 0, b_end, 500 * US);
    let e3 = stretched(&mut s, 0, e2, 500 * US);
    let r = run_seeded(&c, seed);
    assert_eq!(span(&r, "b/b"), b_end.since(SimTime::ZERO));
    assert_eq!(span(&r, "a/a"), e3.since(SimTime::ZERO));
}

#[test]
fn r67_a_preempted_burst_keeps_its_own_steal_and_the_wakee_gets_the_rest() {
    // One vCPU under PREEMPT_FULL. w runs first and sleeps 1 ms; v then
    // burns 10 ms of CPU. w's timer preempts v (a busy vCPU: no wake
    // latency); v's rest is the work it has not done, whatever the host
    // stole before 1 ms; the episodes after 1 ms fall on w's burst and
    // then on v's rest.
    let text = r#"
[scenario]
name = "preempt"
duration = "1s"
cpus = 1
preemption = "full"
[tasks.w]
count = 1
program = ["span_begin w", "sleep 1ms", "cpu 100us", "span_end w", "sleep 10s"]
[tasks.v]
count = 1
program = ["span_begin v", "cpu 10ms", "span_end v", "sleep 10s"]

[machine]
profile = 'ideal'
"#;
    let mut c = on_quiet(text, "kvm-guest");
    let g = c.machine.guest.as_mut().unwrap();
    g.steal_fraction = 0.3;
    g.steal_episode = MS;
    let mut s = steal_of(&c, 1);
    let at = SimTime::ZERO + MS;
    let v_end = stretched(&mut s, 0, SimTime::ZERO, 10 * MS);
    let done = at.since(SimTime::ZERO) - s.stolen_within(CpuId(0), SimTime::ZERO, at);
    let w_end = stretched(&mut s, 0, at, 100 * US);
    let v_end2 = stretched(&mut s, 0, w_end, 10 * MS - done);
    let r = run(&c);
    assert_eq!(r.counter("cpu/preemptions"), Some(1));
    assert_eq!(span(&r, "w/w"), w_end.since(SimTime::ZERO));
    assert_eq!(span(&r, "v/v"), v_end2.since(SimTime::ZERO));
    let stolen = v_end2.since(SimTime::ZERO) - 10 * MS - 100 * US;
    assert!(stolen > Dur::ZERO && v_end > SimTime::ZERO + 10 * MS);
    assert_eq!(r.counter("cpu/steal_ns"), Some(stolen.0));
}

#[test]
fn r64_a_delayed_work_timer_wakes_its_kworker_on_its_own_idle_cpu() {
    // t, on CPU 0, queues w on a per-CPU workqueue with a 1 us delay and
    // sleeps 8.001 ms. The timer fires at jiffy 2 (8 ms, R35) on CPU 0,
    // idle since t slept: it queues w there and wakes the kworker bound
    // to CPU 0, locally (R64): only C6's 170 us exit. t's own timer at
    // 8.001 ms finds CPU 0 reserved (R68) and goes to CPU 1 (idle 8 ms:
    // C6, and the flag line from its sibling, 8 ns). It flushes at
    // 8.171008 ms and sleeps until the kworker, done at 8.18 ms, wakes it
    // onto CPU 1 again (idle 8.992 us: C1E, 4 us + 8 ns).
    let text = r#"
[scenario]
name = "timer"
duration = "20ms"
cpus = 2
[workqueues.wq]
kind = "percpu"
[works.w]
program = ["cpu 10us"]
[tasks.t]
count = 1
program = ["span_begin f", "queue_delayed_work wq w 1us", "sleep 8001us", "flush_workqueue wq", "span_end f", "sleep 1s"]

[machine]
profile = 'ideal'
"#;
    let c = on(text, "server-2s");
    let r = run(&c);
    assert_eq!(span(&r, "f/t"), 8_184 * US + Dur(8));
    assert_eq!(r.counter("cpu/idle_exits_C6"), Some(2));
    assert_eq!(r.counter("cpu/idle_exits_C1E"), Some(1));
    let v = trace(&c);
    assert_eq!(
        slices(&v, "kworker/wq/0", "waking"),
        [(8_000_000, 170_000, 0)]
    );
    assert_eq!(
        slices(&v, "t[0]", "waking"),
        [(8_001_000, 170_008, 1), (8_180_000, 4_008, 1)]
    );
}
