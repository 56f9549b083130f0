//! Hostile input: mutated scenario files and measurement dumps.
//!
//! A seeded mutation fuzzer: it starts from every built-in scenario and
//! library and the shipped examples, and from the bpftrace `hist()` and samples formats, applies a
//! few random edits (delete, duplicate or swap lines, extreme numbers,
//! truncation, stray bytes, renamed identifiers) and feeds the result
//! through everything a user's file goes through: reading, variants,
//! compiling, and a short run with tight limits. Any outcome is fine but a
//! panic; an error must name the file. The regular test runs a few hundred
//! cases; `FUZZ_CASES=N cargo test --release --test it fuzz_inputs -- --ignored`
//! runs as many as asked and prints the figures. Inputs that once crashed
//! are kept in `tests/fuzz/crashers/` and replayed by every run.

use experiments::builtin::BUILTINS;
use experiments::scenario::library::LIBRARIES;
use experiments::scenario::{compile, ScenarioFile, Source};
use experiments::world::{check_limits, Limits, World};
use sim::dist::Empirical;
use sim::rng::{below, stream, Stream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

const BPFTRACE_HIST: &str = "@usecs:
[0]                   16 |@@@@                                                |
[1]                    2 |                                                    |
[2, 4)                80 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                      |
[4, 8)               131 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[8, 16)              121 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@    |
[1K, 2K)               2 |                                                    |
[8K, 16K)              1 |                                                    |
";

const SAMPLES: &str = "run\tremove_mean_ns\tmkdir_mean_ns
1\t6497\t21200
2\t6508\t21180
3\t\"6504\"\t21230
";

/// The shipped examples of the lock kinds and steps no built-in uses.
const EXAMPLES: &[&str] = &[
    include_str!("../../scenarios/examples/oom-daemon.toml"),
    include_str!("../../scenarios/examples/spinlock-scaling.toml"),
    include_str!("../../scenarios/examples/percpu-rwsem.toml"),
    include_str!("../../scenarios/examples/seqlock.toml"),
];

/// Seed texts: every built-in scenario and library, and the examples.
fn scenario_seeds() -> Vec<String> {
    BUILTINS
        .iter()
        .map(|b| b.text.to_string())
        .chain(LIBRARIES.iter().map(|(_, t)| t.to_string()))
        .chain(EXAMPLES.iter().map(|t| t.to_string()))
        .collect()
}

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "18446744073709551615",
    "4294967296",
    "nan",
    "\"\"",
    "\"0ns\"",
    "\"99999999999999999999s\"",
    "\"exp(0ns)\"",
    "\"lognormal(1s, 1000)\"",
    "[]",
    "{}",
];

fn pick<'a>(rng: &mut Stream, xs: &'a [&'a str]) -> &'a str {
    xs[below(rng, xs.len() as u32) as usize]
}

/// One random edit of `text`.
fn mutate_once(text: &str, rng: &mut Stream) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    if lines.is_empty() {
        return "x".into();
    }
    let n = lines.len() as u32;
    let i = below(rng, n) as usize;
    match below(rng, 9) {
        0 => {
            lines.remove(i);
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        2 => lines.swap(i, below(rng, n) as usize),
        3 => {
            // A value becomes an extreme one.
            if let Some(eq) = lines[i].find('=') {
                lines[i] = format!("{}= {}", &lines[i][..eq], pick(rng, EXTREMES));
            }
        }
        4 => {
            // Every number on the line becomes an extreme one.
            let e = pick(rng, &["0", "999999999999", "4096", "1"]);
            lines[i] = lines[i]
                .split(|c: char| c.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(e);
        }
        5 => {
            let cut = below(rng, text.len().max(1) as u32) as usize;
            let cut = (0..=cut)
                .rev()
                .find(|&c| text.is_char_boundary(c))
                .unwrap_or(0);
            return text[..cut].to_string();
        }
        6 => {
            let junk = pick(
                rng,
                &["\"", "[", "]", "=", "\u{0}", "é", "\\", "$", "end", "loop"],
            );
            let at = below(rng, lines[i].len() as u32 + 1) as usize;
            let at = (0..=at)
                .rev()
                .find(|&c| lines[i].is_char_boundary(c))
                .unwrap_or(0);
            lines[i].insert_str(at, junk);
        }
        7 => {
            // A name no longer matches: `kernfs_rwsem` -> `kernfs_rwsemx`.
            if let Some(w) = lines[i]
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .find(|w| w.len() > 3)
                .map(String::from)
            {
                lines[i] = lines[i].replacen(&w, &format!("{w}x"), 1);
            }
        }
        _ => {
            // A step string becomes another step.
            let step = pick(
                rng,
                &[
                    "\"end\"",
                    "\"loop\"",
                    "\"repeat 4294967295\"",
                    "\"key next 0 1048577\"",
                    "\"key random 5 5\"",
                    "\"mutex_unlock cgroup_mutex\"",
                    "\"might_resched\"",
                    "\"flush_workqueue nowhere\"",
                    "\"call stat\"",
                    "\"with_prob 2\"",
                ],
            );
            if let Some(q) = lines[i].find('"') {
                lines[i].insert_str(q, &format!("{step}, "));
            }
        }
    }
    lines.join("\n")
}

fn mutate(text: &str, rng: &mut Stream) -> String {
    let edits = 1 + below(rng, 3);
    (0..edits).fold(text.to_string(), |t, _| mutate_once(&t, rng))
}

/// What happened to one input.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Ran,
    Error,
}

/// Reads, compiles and briefly runs every variant of a scenario text.
fn exercise_scenario(text: &str) -> Outcome {
    let file = match ScenarioFile::new(Source::new("fuzz.toml", text)) {
        Ok(f) => f,
        Err(e) => return named(e.to_string()),
    };
    for v in &file.variants {
        let loaded = match file.load(v) {
            Ok(l) => l,
            Err(e) => return named(e.to_string()),
        };
        let c = match compile(&file.source, &loaded.doc, v) {
            Ok(c) => c,
            Err(e) => return named(e.to_string()),
        };
        let limits = Limits {
            max_events: 20_000,
            max_steps_per_instant: 20_000,
            max_memory: 1 << 30,
            ..Limits::default()
        };
        if check_limits(&c, &limits).is_err() {
            return Outcome::Error;
        }
        let mut w = World::new(&c, 1, 0, limits);
        if w.run(&mut |_| {}).is_err() {
            return Outcome::Error;
        }
        let _ = w.result();
    }
    Outcome::Ran
}

fn named(e: String) -> Outcome {
    assert!(
        e.contains("fuzz.toml") || e.contains("builtin:") || e.contains(".tsv"),
        "an error that names no file: {e}"
    );
    Outcome::Error
}

fn exercise_dumps(text: &str) {
    for map in [None, Some("@usecs"), Some("@nope")] {
        let _ = Empirical::from_bpftrace_hist(text, map, 1e3);
    }
    for col in [None, Some("remove_mean_ns"), Some("nope")] {
        let _ = Empirical::from_samples_text(text, col, 1.0);
    }
}

/// Runs `cases` mutants, panicking with the input on the first crash.
/// Returns (ran, errors).
fn fuzz(seed: u64, cases: u64) -> (u64, u64) {
    let seeds = scenario_seeds();
    let mut rng = stream(seed, 0, "fuzz", 0);
    let (mut ran, mut errors) = (0, 0);
    for i in 0..cases {
        let dump = i % 8 == 7;
        let base = if dump {
            if i % 16 == 7 {
                BPFTRACE_HIST
            } else {
                SAMPLES
            }
        } else {
            &seeds[below(&mut rng, seeds.len() as u32) as usize]
        };
        let text = mutate(base, &mut rng);
        let r = catch_unwind(AssertUnwindSafe(|| {
            if dump {
                exercise_dumps(&text);
                Outcome::Ran
            } else {
                exercise_scenario(&text)
            }
        }));
        match r {
            Ok(Outcome::Ran) => ran += 1,
            Ok(Outcome::Error) => errors += 1,
            Err(_) => {
                let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target-fuzz-crash.toml");
                let _ = std::fs::write(&dir, &text);
                panic!(
                    "case {i} (seed {seed}) panicked; input saved to {}",
                    dir.display()
                );
            }
        }
    }
    (ran, errors)
}

#[test]
fn mutated_scenarios_and_dumps_give_a_run_or_a_named_error() {
    let (ran, errors) = fuzz(1, 300);
    // The mutants exercise both outcomes, not just the parser's first line.
    assert!(ran > 20 && errors > 50, "ran {ran}, errors {errors}");
}

#[test]
fn every_kept_crasher_now_gives_a_run_or_a_named_error() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/crashers");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| exercise_scenario(&text)));
        assert!(r.is_ok(), "{} panics again", path.display());
        n += 1;
    }
    assert!(n > 0, "no crashers kept in {}", dir.display());
}

#[test]
#[ignore = "long: FUZZ_CASES=N cargo test --release --test it fuzz_inputs -- --ignored"]
fn fuzz_long() {
    let cases = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let t = std::time::Instant::now();
    let (ran, errors) = fuzz(seed, cases);
    println!(
        "fuzz: {cases} cases (seed {seed}) in {:.1}s: {ran} ran, {errors} named errors, 0 crashes",
        t.elapsed().as_secs_f64()
    );
}
