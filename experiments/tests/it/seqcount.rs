//! Sequence counters and seqlocks in the world (docs/kernel-rules.md
//! R86-R88): read blocks that retry when a writer overlapped them, a
//! reader that begins on an odd count spinning for an even one, writers
//! serialised by their lock, and the static checks of the language.

use crate::common::{compile_error, run_text};
use output::{Metric, VariantResult};
use sim::Dur;

const US: u64 = 1_000;

fn max(r: &VariantResult, metric: Metric, subject: &str) -> Dur {
    (r.series(metric, subject))
        .unwrap_or_else(|| panic!("no {subject}"))
        .hist
        .max()
}

fn count(r: &VariantResult, metric: Metric, subject: &str) -> u64 {
    (r.series(metric, subject))
        .unwrap_or_else(|| panic!("no {subject}"))
        .hist
        .count()
}

fn counter(r: &VariantResult, subject: &str) -> u64 {
    r.counter(subject)
        .unwrap_or_else(|| panic!("no counter {subject}"))
}

/// A seqcount `s` serialised by mutex `m`: reader r1 reads for 10 us from
/// 0, r2 for 10 us from 6 us; writer w writes from 5 to 7 us.
const SEQCOUNT: &str = r#"
[scenario]
name = "seq"
duration = "1ms"
[machine]
profile = "ideal"
[locks.m]
kind = "mutex"
[locks.s]
kind = "seqcount"
lock = "m"
[tasks.r1]
count = 1
program = ["span_begin read", "read_seqcount_begin s", "cpu 10us", "read_seqcount_retry s", "span_end read"]
[tasks.r2]
count = 1
program = ["cpu 6us", "span_begin read", "read_seqcount_begin s", "cpu 10us", "read_seqcount_retry s", "span_end read"]
[tasks.w]
count = 1
program = ["cpu 5us", "mutex_lock m", "write_seqcount_begin s", "cpu 2us", "write_seqcount_end s", "mutex_unlock m"]
"#;

#[test]
fn r87_a_reader_overlapped_by_a_writer_reads_again() {
    let r = run_text(SEQCOUNT, 1);
    // r1's first section (0-10 us) saw the write begin at 5 us: it reads
    // again, 10-20 us.
    assert_eq!(max(&r, Metric::Span, "read/r1"), Dur(20 * US));
    assert_eq!(count(&r, Metric::Hold, "s/read/r1"), 2);
    assert_eq!(max(&r, Metric::Hold, "s/read/r1"), Dur(10 * US));
    assert_eq!(counter(&r, "s/read_retries"), 1);
    assert_eq!(counter(&r, "s/read_acquisitions"), 3);
    // A writer never waits for readers (R86).
    assert_eq!(max(&r, Metric::Wait, "s/write/w"), Dur::ZERO);
    assert_eq!(max(&r, Metric::Hold, "s/write/w"), Dur(2 * US));
}

#[test]
fn r87_a_reader_that_begins_on_an_odd_count_spins_until_it_is_even() {
    let r = run_text(SEQCOUNT, 1);
    // r2 begins at 6 us inside the write: it spins on its CPU to 7 us,
    // then reads 7-17 us once (the count did not change after 7 us).
    assert_eq!(max(&r, Metric::Wait, "s/read/r2"), Dur(US));
    assert_eq!(max(&r, Metric::Span, "read/r2"), Dur(11 * US));
    assert_eq!(count(&r, Metric::Hold, "s/read/r2"), 1);
    assert_eq!(counter(&r, "s/read_contentions"), 1);
}

#[test]
fn r86_a_seqcount_writer_holds_its_lock_and_may_not_sleep() {
    let msg = compile_error(&SEQCOUNT.replace(
        "\"mutex_lock m\", \"write_seqcount_begin s\", \"cpu 2us\", \"write_seqcount_end s\", \"mutex_unlock m\"",
        "\"write_seqcount_begin s\", \"cpu 2us\", \"write_seqcount_end s\"",
    ));
    assert!(
        msg.contains("its writers are serialised by `m`") && msg.contains("t.toml:"),
        "{msg}"
    );
    let msg = compile_error(&SEQCOUNT.replace(
        "\"cpu 2us\", \"write_seqcount_end",
        "\"sleep 2us\", \"write_seqcount_end",
    ));
    assert!(
        msg.contains("`sleep` may sleep, but `s` (seqcount) is held here"),
        "{msg}"
    );
    // A reader may sleep: its section is only retried.
    run_text(
        &SEQCOUNT.replace(
            "\"cpu 10us\", \"read_seqcount_retry s\", \"span_end read\"]\n[tasks.r2]",
            "\"sleep 10us\", \"read_seqcount_retry s\", \"span_end read\"]\n[tasks.r2]",
        ),
        1,
    );
    let msg = compile_error(&SEQCOUNT.replace("lock = \"m\"", "lock = \"nope\""));
    assert!(
        msg.contains("locks.s.lock") && msg.contains("no lock `nope`"),
        "{msg}"
    );
}

#[test]
fn r87_read_blocks_are_closed_by_their_own_retry() {
    let base = r#"
[scenario]
name = "blocks"
duration = "1ms"
[machine]
profile = "ideal"
[locks.s]
kind = "seqcount"
[locks.q]
kind = "seqlock"
[tasks.t]
count = 1
program = [PROGRAM]
"#;
    for (program, needle) in [
        (
            "\"read_seqcount_begin s\", \"cpu 1us\"",
            "`read_seqcount_begin s` has no matching `read_seqcount_retry s`",
        ),
        (
            "\"read_seqcount_begin s\", \"end\"",
            "`end` cannot close `read_seqcount_begin s`",
        ),
        (
            "\"read_seqcount_begin s\", \"read_seqretry s\"",
            "closes a read block; the open one is `s`'s",
        ),
        (
            "\"read_seqcount_retry s\"",
            "without an open `read_seqcount_begin s`",
        ),
        (
            "\"read_seqbegin s\", \"read_seqretry s\"",
            "`s` is a seqcount; use write_seqcount_begin",
        ),
        (
            "\"spin_lock q\", \"spin_unlock q\"",
            "`q` is a seqlock; use write_seqlock/write_sequnlock",
        ),
        (
            "\"read_seqcount_begin s\", \"repeat 2\", \"read_seqcount_retry s\", \"end\"",
            "a read block's body may not leave another block open",
        ),
    ] {
        let msg = compile_error(&base.replace("PROGRAM", program));
        assert!(
            msg.contains(needle) && msg.contains("t.toml:"),
            "{program}: {msg}"
        );
    }
}

#[test]
fn r88_seqlock_writers_take_turns_on_its_spinlock_and_a_reader_retries_behind_them() {
    // w1 writes 0-5 us; w2 asks at 1 us and spins on the spinlock to 5
    // us, writes 5-10 us. r begins at 2 us on an odd count: it spins to
    // 5 us (w1's end), reads 5-8 us, but w2 began at 5 us: it reads
    // again, spins to 10 us and reads 10-13 us.
    let text = r#"
[scenario]
name = "seqlock"
duration = "1ms"
[machine]
profile = "ideal"
[locks.q]
kind = "seqlock"
[tasks.w1]
count = 1
program = ["write_seqlock q", "cpu 5us", "write_sequnlock q"]
[tasks.w2]
count = 1
program = ["cpu 1us", "write_seqlock q", "cpu 5us", "write_sequnlock q"]
[tasks.r]
count = 1
program = ["cpu 2us", "span_begin read", "read_seqbegin q", "cpu 3us", "read_seqretry q", "span_end read"]
"#;
    let r = run_text(text, 1);
    assert_eq!(max(&r, Metric::Wait, "q/write/w2"), Dur(4 * US));
    assert_eq!(max(&r, Metric::Span, "read/r"), Dur(11 * US));
    assert_eq!(max(&r, Metric::Wait, "q/read/r"), Dur(3 * US));
    assert_eq!(count(&r, Metric::Wait, "q/read/r"), 2);
    assert_eq!(counter(&r, "q/read_retries"), 1);
    assert_eq!(counter(&r, "q/pending"), 1);
}
