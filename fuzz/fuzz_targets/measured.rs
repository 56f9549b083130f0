//! Measurement text: `perf lock contention` and `/proc/lock_stat` (what a
//! fleet report reads), a bpftrace `hist()` dump and a CSV/TSV column of
//! samples (an empirical distribution's data). The first byte picks the
//! reader; numbers that come out must be finite.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sim::dist::Empirical;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match pick % 4 {
        0 | 1 => {
            let format = if pick % 4 == 0 { "perf-lock" } else { "lock_stat" };
            if let Ok(lines) = output::measured::read(format, text) {
                for l in lines {
                    for v in [l.wait_total_ns, l.wait_max_ns, l.wait_avg_ns] {
                        assert!(v.is_finite() && v >= 0.0, "{format}: {v}");
                    }
                    for v in [l.wait_min_ns, l.hold_max_ns, l.hold_avg_ns].into_iter().flatten() {
                        assert!(v.is_finite() && v >= 0.0, "{format}: {v}");
                    }
                }
            }
        }
        2 => {
            let _ = Empirical::from_bpftrace_hist(text, None, 1000.0);
            let _ = Empirical::from_bpftrace_hist(text, Some("usecs"), 1.0);
        }
        _ => {
            let _ = Empirical::from_samples_text(text, None, 1000.0);
            let _ = Empirical::from_samples_text(text, Some("lat_us"), 1.0);
        }
    }
});
