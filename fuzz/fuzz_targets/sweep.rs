//! Sweep and report files (parsed, and the first point's scenario
//! resolved and compiled), and the records of a sweep directory
//! (`sweep.json`, `points/*.json`) as merge and resume read them. The
//! first byte picks which.
#![no_main]

use experiments::scenario::Source;
use libfuzzer_sys::fuzz_target;
use output::sweep_table::{PointRecord, SweepHeader};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    if pick % 2 == 0 {
        let Ok(text) = std::str::from_utf8(rest) else {
            return;
        };
        if let Ok(spec) = experiments::sweep::parse(&Source::new("s.toml", text)) {
            if spec.points.len() <= 64 {
                let _ = experiments::sweep::run::header(&spec);
            }
        }
    } else {
        let header = serde_json::from_slice::<SweepHeader>(rest);
        let point = serde_json::from_slice::<PointRecord>(rest);
        if let (Ok(h), Ok(p)) = (&header, &point) {
            let as_header = SweepHeader {
                hash: p.hash.clone(),
                version: p.version.clone(),
                seed: p.seed,
                ..h.clone()
            };
            let _ = experiments::sweep::store::header_mismatch(h, &as_header);
        }
        if let Ok(h) = header {
            let _ = output::sweep_table::points_csv(&h, &[]);
            let _ = experiments::sweep::store::header_mismatch(&h, &h);
        }
    }
});
