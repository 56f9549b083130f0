//! Scenario text: resolved, every variant compiled, and the first run a
//! few thousand events long. Any outcome but a panic (or a hang, or a
//! crash) is fine: bad input must be an error.
#![no_main]

use experiments::scenario::{compile, ScenarioFile, Source};
use experiments::world::{check_limits, Limits, World};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = ScenarioFile::new(Source::new("f.toml", text)) else {
        return;
    };
    // Small limits: the fuzzer looks for panics, not for long runs.
    let limits = Limits {
        max_events: 5_000,
        max_steps_per_instant: 5_000,
        max_memory: 64 << 20,
        max_tasks: 4_096,
        ..Limits::default()
    };
    for v in file.variants.iter().take(4) {
        let Ok(l) = file.load(v) else {
            continue;
        };
        let Ok(c) = compile(&file.source, &l.doc, v) else {
            continue;
        };
        if check_limits(&c, &limits).is_err() {
            continue;
        }
        let mut w = World::new(&c, 1, 0, limits);
        if w.run(&mut |_| {}).is_ok() {
            let _ = w.result();
        }
    }
});
