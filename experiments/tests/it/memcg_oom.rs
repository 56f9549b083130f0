//! memcg reclaim and OOM inside the world (R45-R49): a charge under a lock
//! holds the lock through reclaim; an OOM victim blocked on a lock delays
//! the OOM's resolution until it can exit, or until the reaper frees it.

use crate::common::run_text;
use output::Metric;
use sim::Dur;

const MS: Dur = Dur(1_000_000);

#[test]
fn convoy_recipe_with_real_reclaim_under_kernfs_rwsem() {
    // A lookup charges an inode to a full memcg while holding kernfs_rwsem
    // for read (R49, R51); one direct-reclaim attempt of 50 ms frees a batch.
    let r = run_text(crate::common::RECLAIM_CHAIN, 1);
    // One reclaim attempt of 50 ms with the read lock held; the writer
    // waits for it, the walkers park behind the writer.
    assert_eq!(
        r.series(Metric::Hold, "kernfs_rwsem/read/lookup")
            .unwrap()
            .hist
            .max(),
        50 * MS
    );
    assert_eq!(
        r.series(Metric::Wait, "kernfs_rwsem/write/mkdir")
            .unwrap()
            .hist
            .max(),
        49 * MS
    );
    let w = &r
        .series(Metric::Wait, "kernfs_rwsem/read/walkers")
        .unwrap()
        .hist;
    assert_eq!(
        (w.count(), w.min(), w.max()),
        (4, 48 * MS + Dur(20_000), 48 * MS + Dur(20_000))
    );
    assert_eq!(r.counter("memcg/full/reclaims"), Some(1));
    assert_eq!(r.counter("memcg/full/reclaim_ns"), Some((50 * MS).ns()));
    assert_eq!(r.counter("kernfs_rwsem/reader_batches"), Some(1));
}

/// A full memcg whose reclaim never frees anything: a charger goes through
/// 16 reclaim attempts (1 ms each), then the OOM killer kills `victim`,
/// which holds 1000 pages. `victim` first waits on a mutex that `holder`
/// keeps for `HOLD`.
fn oom_scenario(hold: &str) -> String {
    format!(
        r#"
[scenario]
name = "oom"
duration = "10s"
[memcg.box]
max = "1000 pages"
reclaim = "1ms"
reclaim_success = 0.0
oom_victims = ["victim"]
[locks.m]
kind = "mutex"
[tasks.victim]
count = 1
program = ["charge box 1000 pages", "sleep 1ms", "mutex_lock m", "mutex_unlock m", "sleep 100s"]
[tasks.holder]
count = 1
program = ["mutex_lock m", "sleep {hold}", "mutex_unlock m"]
[tasks.charger]
count = 1
program = ["sleep 5ms", "span_begin alloc", "charge box 1 page", "span_end alloc"]

[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn an_oom_victim_blocked_on_a_lock_delays_the_oom_resolution() {
    // The charger starts at 5 ms: 16 failed reclaims (16 ms), then the OOM
    // kills the victim at 21 ms. Blocked on the mutex (D state), the victim
    // cannot exit until the holder releases at 300 ms; until then every
    // OOM pass of the charger finds the victim pending and kills nobody.
    let r = run_text(&oom_scenario("300ms"), 1);
    let alloc = r.series(Metric::Span, "alloc/charger").unwrap().hist.max();
    assert!((295 * MS..300 * MS).contains(&alloc), "alloc took {alloc}");
    assert_eq!(r.counter("memcg/box/oom_kills"), Some(1));
    assert_eq!(r.counter("memcg/box/oom_exits"), Some(1));
    assert_eq!(r.counter("memcg/box/oom_reaps"), Some(0));
    assert!(
        r.counter("memcg/box/oom_aborts").unwrap() > 10,
        "chargers looped without a new kill"
    );
    // The victim got the mutex at 300 ms and exited with it, releasing it.
    assert_eq!(r.counter("m/acquisitions"), Some(2));
}

#[test]
fn the_oom_reaper_frees_a_blocked_victim_after_two_seconds() {
    // The holder keeps the mutex 5 s: the reaper frees the victim's memory
    // when its timer fires, and the charge completes then. The timer is
    // armed at the kill, 21 ms (jiffy 5 at HZ 250), for OOM_REAPER_DELAY =
    // 500 jiffies: level 1 of the timer wheel, 8-jiffy buckets, so it
    // fires at jiffy 512, 2.048 s, not at 2.021 s.
    let r = run_text(&oom_scenario("5s"), 1);
    let alloc = r.series(Metric::Span, "alloc/charger").unwrap().hist.max();
    assert!(
        (2_041 * MS..2_046 * MS).contains(&alloc),
        "alloc took {alloc}"
    );
    assert_eq!(r.counter("memcg/box/oom_reaps"), Some(1));
    assert_eq!(r.counter("memcg/box/oom_kills"), Some(1));
}

#[test]
fn an_unblocked_victim_exits_at_once() {
    // No holder: the victim sleeps (killable), so it exits at the kill.
    let text =
        oom_scenario("300ms").replace("[tasks.holder]\ncount = 1", "[tasks.holder]\ncount = 0");
    let r = run_text(&text, 1);
    let alloc = r.series(Metric::Span, "alloc/charger").unwrap().hist.max();
    // 18 failed reclaims (18 ms: the first, the drain's `goto retry`, 16
    // retries), the kill; the charge loop retries at once (goto retry),
    // before the victim has run, so one more reclaim attempt (1 ms) passes
    // before the freed memory is there.
    assert_eq!(alloc, 19 * MS);
    assert_eq!(r.counter("memcg/box/oom_exits"), Some(1));
}

#[test]
fn r48_memory_high_throttles_inside_the_charge_with_the_kernel_penalty() {
    // 10% over high with 128 pages of debt (> one batch): the charge itself
    // sleeps the penalty (R48), locks held; at HZ 250 a jiffy is 4 ms.
    let text = r#"
[scenario]
name = "high"
duration = "10s"
[memcg.box]
max = "1000000 pages"
high = "100000 pages"
initial = "110000 pages"
[tasks.t]
count = 1
program = ["span_begin alloc", "charge box 128 pages", "span_end alloc"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    let jiffies = models::memcg::high_penalty_jiffies(110_128, 100_000, 128, 250);
    assert!(jiffies > 250 && jiffies < 500, "{jiffies}");
    // schedule_timeout_killable's timer: 63..503 jiffies out is level 1
    // of the timer wheel, so it fires at the next multiple of 8 jiffies
    // strictly above jiffies + penalty.
    let fires = (jiffies / 8 + 1) * 8;
    assert_eq!(models::timer::bucket_expiry(jiffies, 0, 250), fires);
    assert_eq!(
        r.series(Metric::Span, "alloc/t").unwrap().hist.max(),
        fires * 4 * MS
    );
    assert_eq!(r.counter("memcg/box/high_throttles"), Some(1));
    assert_eq!(
        r.counter("memcg/box/throttle_ns"),
        Some((fires * 4 * MS).ns())
    );
}

#[test]
fn background_release_ends_a_reclaim_loop_that_makes_no_progress() {
    // Reclaim never frees (reclaim_success 0), but 3200 pages/s leave in
    // the background (32 every 10 ms): the charge goes through at the first
    // attempt that ends after the first release, at 10 ms.
    let text = r#"
[scenario]
name = "release"
duration = "1s"
[memcg.box]
max = "1000 pages"
initial = "1000 pages"
reclaim = "5ms"
reclaim_success = 0.0
release_rate = 3200.0
[tasks.t]
count = 1
program = ["span_begin alloc", "charge box 1 page", "span_end alloc"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    assert_eq!(
        r.series(Metric::Span, "alloc/t").unwrap().hist.max(),
        10 * MS
    );
    assert_eq!(r.counter("memcg/box/reclaims"), Some(2));
}

#[test]
fn the_oom_killer_never_picks_a_kworker() {
    // A work item charges 900 pages of a 1000-page memcg and keeps them;
    // `user` charges 50. The charger's 100 pages fail every reclaim, and
    // the OOM killer (R46) must pick among the memcg's tasks: kernel
    // threads are unkillable (oom_unkillable_task), so it kills `user`
    // though the kworker holds more.
    let text = r#"
[scenario]
name = "oom-kworker"
duration = "1s"
[memcg.box]
max = "1000 pages"
reclaim = "1ms"
reclaim_success = 0.0
[workqueues.wq]
kind = "percpu"
[works.w]
program = ["charge box 900 pages", "sleep 200ms", "span_begin kw", "sleep 1ms", "span_end kw"]
[tasks.q]
count = 1
program = ["queue_work wq w[0]", "sleep 100s"]
[tasks.user]
count = 1
program = ["sleep 1ms", "charge box 50 pages", "span_begin alive", "sleep 100s", "span_end alive"]
[tasks.charger]
count = 1
program = ["sleep 5ms", "span_begin alloc", "charge box 100 pages", "span_end alloc", "sleep 100s"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    assert_eq!(r.counter("memcg/box/oom_exits"), Some(1));
    let kw = r.series(Metric::Span, "kw/w").map(|s| s.hist.count());
    assert_eq!(kw, Some(1), "the kworker lived on");
    let alloc = &r.series(Metric::Span, "alloc/charger").unwrap().hist;
    assert_eq!(
        alloc.count(),
        1,
        "the charge went through once user was gone"
    );
}

/// A full memcg whose every reclaim attempt (1 ms) frees a batch; with
/// chance `kept` the batch is still there when the charger retries, else
/// the container's other chargers took it first.
fn taken_scenario(kept: &str) -> String {
    format!(
        r#"
[scenario]
name = "taken"
duration = "1s"
[memcg.box]
max = "1000 pages"
initial = "1000 pages"
reclaim = "1ms"
reclaim_success = 1.0
reclaim_kept = {kept}
[tasks.charger]
count = 1
program = ["span_begin alloc", "charge box 1 page", "span_end alloc", "sleep 10s"]

[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r45_freed_pages_taken_by_other_chargers_loop_the_charge_for_free() {
    // Kept: the first attempt's batch charges the page.
    let r = run_text(&taken_scenario("1.0"), 1);
    assert_eq!(
        r.series(Metric::Span, "alloc/charger").unwrap().hist.max(),
        MS
    );
    assert_eq!(r.counter("memcg/box/reclaims"), Some(1));
    assert_eq!(r.counter("memcg/box/free_retries"), Some(0));
    // Always taken: reclaim makes progress every time, so no retry is
    // spent and the OOM killer is never asked; the charge loops, one
    // attempt a millisecond, to the end of the run (R45).
    let r = run_text(&taken_scenario("0.0"), 1);
    assert!(r
        .series(Metric::Span, "alloc/charger")
        .is_none_or(|s| s.hist.count() == 0));
    let reclaims = r.counter("memcg/box/reclaims").unwrap();
    assert!((999..=1000).contains(&reclaims), "{reclaims} attempts");
    // All but the first and the drain's second are free retries.
    assert_eq!(r.counter("memcg/box/free_retries"), Some(reclaims - 2));
    assert_eq!(r.counter("memcg/box/oom_kills"), Some(0));
    // Kept half the time: the charge ends at the first kept batch, within
    // a few attempts, never through the OOM killer.
    let r = run_text(&taken_scenario("0.5"), 1);
    let alloc = r.series(Metric::Span, "alloc/charger").unwrap().hist.max();
    assert!((MS..=20 * MS).contains(&alloc), "alloc took {alloc}");
    assert_eq!(r.counter("memcg/box/oom_kills"), Some(0));
}

#[test]
fn reclaim_kept_outside_zero_to_one_names_its_file_line_and_field() {
    let e = crate::common::compile_error(&taken_scenario("1.5"));
    assert!(
        e.contains("t.toml:10:")
            && e.contains("memcg.box.reclaim_kept")
            && e.contains("expected a probability between 0 and 1"),
        "{e}"
    );
}

/// A full memcg whose reclaim attempts (10 ms) each free 32 pages, when
/// (`frees`) they leave its usage; `charger` needs 1 page from t = 0 and
/// `taker` 32 pages at 6 ms.
fn midpoint_scenario(frees: &str) -> String {
    format!(
        r#"
[scenario]
name = "midpoint"
duration = "1s"
[memcg.box]
max = "1000 pages"
initial = "1000 pages"
reclaim = "10ms"
reclaim_success = 1.0
reclaim_pages = 32
reclaim_frees = "{frees}"
[tasks.charger]
count = 1
program = ["span_begin alloc", "charge box 1 page", "span_end alloc", "sleep 10s"]
[tasks.taker]
count = 1
program = ["sleep 6ms", "span_begin take", "charge box 32 pages", "span_end take", "sleep 10s"]

[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r45_pages_freed_during_an_attempt_go_to_the_first_charger() {
    // At the end: the charger's batch is there at its retry (10 ms); the
    // taker, finding the memcg full at 6 ms, reclaims for itself until 16 ms.
    let r = run_text(&midpoint_scenario("at_end"), 1);
    let span = |name: &str| r.series(Metric::Span, name).unwrap().hist.max();
    assert_eq!(
        (span("alloc/charger"), span("take/taker")),
        (10 * MS, 10 * MS)
    );
    assert_eq!(r.counter("memcg/box/reclaims"), Some(2));
    assert_eq!(r.counter("memcg/box/free_retries"), Some(0));
    // During: the batch comes back at 5 ms and the taker charges it at 6 ms
    // without reclaim. The charger's retry at 10 ms finds no margin: its
    // first failure drains the stocks and reclaims again (R45), and that
    // second attempt's batch (back at 15 ms) it charges at 20 ms.
    let r = run_text(&midpoint_scenario("during"), 1);
    let span = |name: &str| r.series(Metric::Span, name).unwrap().hist.max();
    assert_eq!(
        (span("alloc/charger"), span("take/taker")),
        (20 * MS, Dur::ZERO)
    );
    assert_eq!(r.counter("memcg/box/reclaims"), Some(2));
    assert_eq!(r.counter("memcg/box/free_retries"), Some(0));
}

#[test]
fn reclaim_frees_names_its_values_and_refuses_reclaim_kept_below_one() {
    let e = crate::common::compile_error(&midpoint_scenario("later"));
    assert!(
        e.contains("t.toml:11:")
            && e.contains("memcg.box.reclaim_frees")
            && e.contains("expected `at_end` or `during`, not `later`"),
        "{e}"
    );
    let text = midpoint_scenario("during").replace(
        "reclaim_pages = 32",
        "reclaim_pages = 32\nreclaim_kept = 0.5",
    );
    let e = crate::common::compile_error(&text);
    assert!(
        e.contains("t.toml:11:")
            && e.contains("memcg.box.reclaim_kept")
            && e.contains("must stay 1"),
        "{e}"
    );
}

#[test]
fn r45_a_charge_that_cannot_block_takes_freed_pages_without_reclaim() {
    // The taker's allocation cannot block (GFP_NOWAIT): at 6 ms it takes
    // the charger's batch, back since 5 ms, at once. Charging the same at
    // 2 ms, before the batch is back, it fails at once (-ENOMEM), and the
    // charger's retry at 10 ms finds its pages.
    let text = midpoint_scenario("during").replace("32 pages\"", "32 pages nowait\"");
    let r = run_text(&text, 1);
    let span =
        |r: &output::VariantResult, name: &str| r.series(Metric::Span, name).unwrap().hist.max();
    assert_eq!(
        (span(&r, "alloc/charger"), span(&r, "take/taker")),
        (20 * MS, Dur::ZERO)
    );
    assert_eq!(r.counter("memcg/box/nomem"), Some(0));
    let r = run_text(&text.replace("sleep 6ms", "sleep 2ms"), 1);
    assert_eq!(
        (span(&r, "alloc/charger"), span(&r, "take/taker")),
        (10 * MS, Dur::ZERO)
    );
    assert_eq!(r.counter("memcg/box/nomem"), Some(1));
    assert_eq!(r.counter("memcg/box/reclaims"), Some(1));
}

#[test]
fn a_charge_s_last_word_names_its_gfp_flags() {
    let text = midpoint_scenario("at_end").replace("32 pages\"", "32 pages sometimes\"");
    let e = crate::common::compile_error(&text);
    assert!(
        e.contains("t.toml:17:")
            && e.contains("`charge box 32 pages sometimes`: unknown unit `pages sometimes`")
            && e.contains("a charge may end with its GFP flags: kernel, nowait, atomic"),
        "{e}"
    );
    for word in [
        "kernel",
        "nowait",
        "atomic",
        "nofail",
        "noretry",
        "retry_mayfail",
    ] {
        let text = midpoint_scenario("at_end").replace("32 pages\"", &format!("32 pages {word}\""));
        run_text(&text, 1);
    }
}

#[test]
fn page_amounts_past_4_pib_are_refused_so_usage_cannot_wrap() {
    // The largest u64 of pages as a limit and a charge: usage would wrap
    // past 2^64 and charges would succeed again.
    let text = r#"
[scenario]
name = "huge"
duration = "1s"
[memcg.box]
max = "MAX"
[tasks.t]
count = 1
program = ["charge box CHARGE", "sleep 1ms"]

[machine]
profile = 'ideal'
"#;
    for (max, charge, field) in [
        ("18446744073709551615 pages", "1 page", "memcg.box.max"),
        (
            "1000 pages",
            "18446744073709551615 pages",
            "tasks.t.program",
        ),
    ] {
        let e = crate::common::compile_error(&text.replace("MAX", max).replace("CHARGE", charge));
        assert!(
            e.contains("is too large; at most 1099511627776 pages (4 PiB)") && e.contains(field),
            "{e}"
        );
    }
}

#[test]
fn r46_a_victim_killed_holding_a_mutex_counts_that_hold() {
    // `v` charges a full memcg whose reclaim never frees, holding `m`:
    // 18 failed 1 ms attempts (R45: the first, the drain's, 16 retries),
    // then the OOM kill (R46). It exits, releasing `m` as the syscall
    // unwinds; that hold is the stall's cause and is counted like any.
    let text = r#"
[scenario]
name = "killed-holder"
duration = "1s"
cpus = 4
[locks.m]
kind = "mutex"
[memcg.g]
max = "64 pages"
initial = "64 pages"
reclaim = "1ms"
reclaim_success = 0.0
oom_victims = ["v"]
[tasks.v]
count = 1
program = ["mutex_lock m", "charge g 1 page", "cpu 10us", "mutex_unlock m", "sleep 2s"]
[tasks.o]
count = 1
program = ["sleep 100us", "mutex_lock m", "cpu 10us", "mutex_unlock m", "sleep 2s"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    let hold = &r.series(Metric::Hold, "m/lock/v").unwrap().hist;
    assert_eq!((hold.count(), hold.max()), (1, 18 * MS));
    let wait = r.series(Metric::Wait, "m/lock/o").unwrap().hist.max();
    assert_eq!(wait, 18 * MS - Dur(100_000));
    assert_eq!(r.counter("memcg/g/reclaims"), Some(18));
    assert_eq!(r.counter("memcg/g/oom_kills"), Some(1));
}

/// Two victims of a full memcg (1000 pages, reclaim that frees nothing,
/// 1 ms per attempt): `victim[0]` and `victim[1]` charge 500 pages each
/// (the OOM killer takes `victim[0]` first), then do `BLOCKED_ON` and
/// sleep; `mm` is a family standing for each one's mmap_lock. On `mm[0]` a `holder` reads from 0 for
/// `MM_HOLD` and a `writer` queues for write at 0.5 ms; `mholder` keeps
/// mutex `m` 10 s. A `charger` asks for one page at 5 ms.
fn reaper_scenario(mm_hold: &str, blocked_on: &str) -> String {
    format!(
        r#"
[scenario]
name = "reaper"
duration = "20s"
[memcg.box]
max = "1000 pages"
reclaim = "1ms"
reclaim_success = 0.0
oom_victims = ["victim"]
mmap_lock = "mm"
[locks.mm]
kind = "rwsem"
instances = 2
[locks.m]
kind = "mutex"
[tasks.victim]
count = 2
program = ["charge box 500 pages", "sleep 1ms", "{blocked_on}", "sleep 100s"]
[tasks.holder]
count = 1
program = ["down_read mm[0]", "sleep {mm_hold}", "up_read mm[0]"]
[tasks.writer]
count = 1
program = ["sleep 500us", "down_write mm[0]", "sleep 1ms", "up_write mm[0]"]
[tasks.mholder]
count = 1
program = ["mutex_lock m", "sleep 10s", "mutex_unlock m"]
[tasks.charger]
count = 1
program = ["sleep 5ms", "span_begin alloc", "charge box 1 page", "span_end alloc"]

[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r102_r103_the_reaper_gives_up_on_a_victim_whose_mmap_lock_it_cannot_take() {
    // The charger fails 18 reclaims (5-23 ms) and the OOM killer kills
    // victim[0], which waits for mm[0] behind the queued writer (D
    // state): it cannot exit. The reaper's timer, armed at jiffy 5 for 2
    // HZ, fires at jiffy 512 (2.048 s, R102). Its trylock of mm[0] fails
    // (a writer is queued, R3), and again every 26 jiffies (HZ/10 on the
    // wheel, +1): ten attempts from jiffy 512 to 746, a last sleep, and
    // at jiffy 772 (3.088 s) it gives up (R103): MMF_OOM_SKIP, the 500
    // pages still charged. Meanwhile the charger's OOM calls (every 17
    // ms from 23 ms) found the victim pending; the first after 3.088 s,
    // at 3.100 s, kills victim[1] (asleep: it exits at once), whose
    // pages let the charge through after one more 1 ms attempt.
    let r = run_text(
        &reaper_scenario("10s", "down_read mm[self]\", \"up_read mm[self]"),
        1,
    );
    let alloc = r.series(Metric::Span, "alloc/charger").unwrap().hist.max();
    assert_eq!(alloc, Dur(3_096_000_000));
    assert_eq!(r.counter("memcg/box/oom_reap_attempts"), Some(10));
    assert_eq!(r.counter("memcg/box/oom_reap_failures"), Some(10));
    assert_eq!(r.counter("memcg/box/oom_reaper_gave_up"), Some(1));
    assert_eq!(r.counter("memcg/box/oom_reaps"), Some(0));
    assert_eq!(r.counter("memcg/box/oom_kills"), Some(2));
    // victim[1] exited at the kill; victim[0] when mm[0] came to it, after
    // the holder (10 s) and the writer (1 ms).
    assert_eq!(r.counter("memcg/box/oom_exits"), Some(2));
    let w = r.series(Metric::Wait, "mm/read/victim").unwrap().hist.max();
    assert_eq!(w, Dur(10_000_000_000));
}

#[test]
fn r103_a_retry_that_finds_the_mmap_lock_free_reaps_the_blocked_victim() {
    // victim[0] waits on mutex m (10 s) and cannot exit. The reaper's
    // first trylock of mm[0] at 2.048 s fails (the writer is queued); the
    // holder lets go at 2.1 s, the writer has it until 2.101 s; the second
    // attempt, at jiffy 538 (2.152 s), takes and drops it and frees
    // victim[0]'s 500 pages. The charger's reclaim attempt that ends at
    // the same instant finds the margin (the reaper's timer was set
    // first, so it ran first).
    let r = run_text(
        &reaper_scenario("2.1s", "mutex_lock m\", \"mutex_unlock m"),
        1,
    );
    let alloc = r.series(Metric::Span, "alloc/charger").unwrap().hist.max();
    assert_eq!(alloc, Dur(2_147_000_000));
    assert_eq!(r.counter("memcg/box/oom_reap_attempts"), Some(2));
    assert_eq!(r.counter("memcg/box/oom_reap_failures"), Some(1));
    assert_eq!(r.counter("memcg/box/oom_reaper_gave_up"), Some(0));
    assert_eq!(r.counter("memcg/box/oom_reaps"), Some(1));
    assert_eq!(r.counter("memcg/box/oom_kills"), Some(1));
}

#[test]
fn r103_mmap_lock_must_be_a_linux_rwsem() {
    let text =
        reaper_scenario("1s", "sleep 1ms").replace("mmap_lock = \"mm\"", "mmap_lock = \"m\"");
    let e = crate::common::compile_error(&text);
    assert!(
        e.contains("memcg.box.mmap_lock") && e.contains("is not a lock of kind rwsem"),
        "{e}"
    );
}

/// `box` is full: `big` holds 600 pages, each of two `small` 100; they
/// sleep. `charger` cannot reclaim anything and calls the OOM killer.
fn oom_group_scenario(group: bool) -> String {
    format!(
        r#"
[scenario]
name = "oom-group"
duration = "1s"
[memcg.box]
max = "800 pages"
reclaim = "1ms"
reclaim_success = 0.0
oom_victims = ["big", "small"]
oom_group = {group}
[tasks.big]
count = 1
program = ["charge box 600 pages", "sleep 100s"]
[tasks.small]
count = 2
program = ["charge box 100 pages", "sleep 100s"]
[tasks.charger]
count = 1
program = ["sleep 5ms", "span_begin alloc", "charge box 64 pages", "span_end alloc"]
[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r106_memory_oom_group_kills_every_task_of_the_memcg_with_the_victim() {
    // Without oom.group the killer takes the largest, `big` (R46), whose
    // 600 pages are enough.
    let one = run_text(&oom_group_scenario(false), 1);
    assert_eq!(one.counter("memcg/box/oom_kills"), Some(1));
    assert_eq!(one.counter("memcg/box/oom_exits"), Some(1));
    assert_eq!(one.counter("memcg/box/oom_group_kills"), None);
    // With it, the two small ones go too, in the same kill.
    let all = run_text(&oom_group_scenario(true), 1);
    assert_eq!(all.counter("memcg/box/oom_kills"), Some(1));
    assert_eq!(all.counter("memcg/box/oom_group_kills"), Some(2));
    assert_eq!(all.counter("memcg/box/oom_exits"), Some(3));
    // Only the charger's 64 pages are left charged.
    assert_eq!(all.counter("memcg/box/usage_pages_at_end"), Some(64));
    assert_eq!(one.counter("memcg/box/usage_pages_at_end"), Some(264));
    // The charge waits the same: the kill frees enough either way.
    let a = |r: &output::results::VariantResult| {
        r.series(Metric::Span, "alloc/charger").unwrap().hist.max()
    };
    assert_eq!(a(&one), a(&all));
}
