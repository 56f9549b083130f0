//! Every built-in experiment's summary at a small fixed seed and a short
//! duration: any change to a model, a library cost or a scenario shows up
//! here as a reviewed diff (`cargo insta review`), never silently.

use crate::common::run_builtin_seeded;
use experiments::builtin::BUILTINS;
use output::files::summary_csv;
use output::Metric;

#[test]
fn every_builtin_has_a_snapshot() {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for b in BUILTINS {
            // Short enough for the test suite, long enough that every
            // operation of the experiment has run (case 3's daemons poll
            // every 0.1-5 s, and its events are few; run-a's 1 s pidlist
            // destroy timers fire from 1.001 s on, R35, R41).
            let duration = match b.name {
                "inode-alloc-reclaim" => "6s",
                "pidlist-flush-run-a" => "1200ms",
                _ => "50ms",
            };
            let r = run_builtin_seeded(b.name, duration, Some(7));
            // What the overview and `compare` name must exist.
            let v = &r.variants[0];
            for &(metric, subject) in b.headline {
                let found = match metric {
                    Metric::Counter => v.counter(subject).is_some(),
                    _ => v.series(metric, subject).is_some(),
                };
                assert!(found, "{}: headline {subject}", b.name);
            }
            for c in b.counters {
                assert!(v.counter(c).is_some(), "{}: counter {c}", b.name);
            }
            insta::assert_snapshot!(b.name, String::from_utf8(summary_csv(&r)).unwrap());
        }
    });
}
