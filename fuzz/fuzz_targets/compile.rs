//! Scenario text through the parser, the resolver and the compiler of
//! every variant, and the limits check that guards allocation; nothing
//! runs. The `scenario` target runs what compiles, which makes it some
//! hundred times slower per input; this one is the fast path for a long
//! campaign on the language itself.
#![no_main]

use experiments::scenario::{compile, ScenarioFile, Source};
use experiments::world::{check_limits, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = ScenarioFile::new(Source::new("f.toml", text)) else {
        return;
    };
    let limits = Limits {
        max_memory: 64 << 20,
        max_tasks: 4_096,
        ..Limits::default()
    };
    for v in &file.variants {
        let Ok(l) = file.load(v) else {
            continue;
        };
        if let Ok(c) = compile(&file.source, &l.doc, v) {
            let _ = check_limits(&c, &limits);
        }
    }
});
