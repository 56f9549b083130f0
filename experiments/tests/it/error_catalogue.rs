//! Keeps docs/errors.md honest in one direction: each distinctive message
//! fragment the catalogue quotes must still be in the catalogue and in the
//! code that prints it. A reworded message fails here, which is the cue to
//! update the catalogue with it.

use std::path::{Path, PathBuf};

/// Fragments quoted in docs/errors.md, each a literal piece of a message
/// in the crates' source (no `{}` placeholders, no line continuations).
const FRAGMENTS: &[&str] = &[
    "a work runs in a kworker, which belongs to no process of the scenario",
    "of the scenario (counting from 0, in the order the task groups name them), so `",
    // How errors are shown; command line.
    "convoy: error: ",
    "cannot read scenario file: ",
    "not a regular file (",
    "at least one replication is needed",
    "is not a dotted key like `tasks.readers.count`",
    // Scenario file.
    "missing table `[scenario]` (with at least `name` and `duration`)",
    "no task groups: add at least one `[tasks.NAME]` with `count` and `program`",
    "is the base scenario's own name; give the overlay another name",
    "has no unit; expected one of ns, us, ms, s, min, h",
    "is negative; durations are zero or more",
    "not part of a bpftrace histogram",
    "expected `map` to name one",
    "not a number of zero or more",
    "`call`s and blocks nest more than ",
    "a TOML integer is from -2^63 to 2^63 - 1",
    "a duration or a size is a string with its unit",
    "is not a whole number of seconds; the kernel's sysctl holds seconds",
    "expected a count of 0 or more, or -1 for no limit",
    "with the linux policy; the OOM reaper trylocks a victim's mmap_lock",
    "expected a whole number from ",
    " (did you mean `",
    "to trace; there are: ",
    "has a control character; names are printed in messages",
    "it would deadlock on itself",
    "is not held at this point",
    "never advances simulated time",
    "without an open `repeat`, `loop`, `with_prob`, `if_work_busy` or `if_pressure`",
    "expected `if_work_busy WORKQUEUE ITEM`",
    "pressure is not modelled (only `some`: docs/kernel-rules.md R104)",
    "names, and it is held here (taken at ",
    "a hashed lock is one of a family whose `instances` is a power of two",
    "names the pass of a `repeat`, and this step is in none",
    "the repeat around it makes ",
    "expected a percent from 0 to 100 with at most two decimals",
    "is queued with `queue_rcu_work` and also grabbed with",
    "no calibration targets; experiments with targets: ",
    "the block's body must release what it takes",
    "is not a family of locks (no `instances`); drop the `[...]`",
    "is not a family of lines (no `instances`); drop the `[...]`",
    "a line's own costs need both `transfer` and `local`",
    "must be non-empty and within 0..1048576",
    "expected pages, KiB, MiB or GiB",
    "expected `at_end` or `during`, not ",
    "a charge may end with its GFP flags: ",
    "`reclaim_kept` (chargers outside the scenario) must stay 1",
    "is also a task group; give the work type another name",
    "is out of range; nice levels run from -20 to 19",
    "has no nice level",
    "needs a fair order that weighs tasks",
    "a context-switch cost needs a number of CPUs",
    "(1: the CPUs the costs were measured on, 0.5: half as fast)",
    "an empty list runs nothing; name at least the base",
    "is listed twice; each variant runs once",
    "given twice; each variant runs once",
    "cannot name output files; use letters, digits,",
    "inlined (operations that call others more than once, nested deep)",
    "tasks that wake each other, with no `cpu` or `sleep` step between",
    // Spinlocks, percpu rwsems, sequence counters.
    "preemption is disabled until it is released, and a task must not sleep then",
    "its writers are serialised by `",
    "only a seqcount names the lock that serialises its writers",
    "cannot serialise a seqcount's writers: name a spinlock, mutex or rwsem",
    "a family's writers hold the instance of the same index",
    "only a percpu_rw_semaphore waits for a grace period",
    "a grace period is more than zero",
    "closes a read block; the open one is",
    "a read block's body may not leave another block open",
    "a read block ends with `",
    // The machine.
    "unknown machine profile `",
    "(`convoy machines` lists them)",
    "is a virtual machine's value; profile `",
    "is more than a machine cost can be; expected at most 1s",
    "a base slice must be longer than 0",
    "expected a fraction of a vCPU's time",
    "leaves no time between ticks at HZ ",
    "the machine's tick of ",
    "; expected interrupts a second on one CPU,",
    "each take all of a CPU's time; expected less",
    "has one run queue per CPU: set `scenario.runqueue = ",
    // Run time.
    "ran more steps than the limit at t=",
    "nothing left to run and tasks wait forever",
    "tasks wait for each other in a cycle of workqueue",
    "shorten the duration or raise the limit",
    // Outputs.
    "cannot create output directory",
    "install fonts-dejavu-core",
    "write failed on purpose",
    // Sweeps and merge; validate.
    "expected at least one `[[figure]]` (metric, subject, stat)",
    "refusing to merge",
    "not a finite number of zero or more",
    "points missing (shards not merged or not finished)",
    "targets met, ",
    // A cost's cited range.
    "lies outside its cited range",
    "a range needs its `source`",
    "a range is for a `const` cost",
    // Bands.
    "nothing to vary; name a machine with --machine",
    ": nothing to vary: ",
    "set by [machine] or a --set",
    "one profile's values (--machine NAME runs every variant on one)",
    "expected a number of samples from 1 to ",
];

/// The workspace's crates, at its top level.
const CRATES: [&str; 4] = ["sim", "models", "output", "experiments"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("workspace root")
}

/// Every `.rs` file under the crates' `src` directories, concatenated.
fn sources(root: &Path) -> String {
    fn walk(dir: &Path, out: &mut String) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push_str(&std::fs::read_to_string(&p).expect("source file"));
                out.push('\n');
            }
        }
    }
    let mut out = String::new();
    for krate in CRATES {
        walk(&root.join(krate).join("src"), &mut out);
    }
    out
}

/// Whitespace runs as one space: the catalogue wraps its lines.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn quoted_fragments_exist_in_the_catalogue_and_the_code() {
    let root = workspace();
    let doc =
        squash(&std::fs::read_to_string(root.join("docs/errors.md")).expect("docs/errors.md"));
    let code = sources(&root);
    let missing: Vec<String> = FRAGMENTS
        .iter()
        .flat_map(|f| {
            let mut m = Vec::new();
            if !doc.contains(&squash(f)) {
                m.push(format!("not in docs/errors.md: {f:?}"));
            }
            if !code.contains(f) {
                m.push(format!("not in any crate's src: {f:?}"));
            }
            m
        })
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_catalogue_is_linked_from_the_readme() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).expect("README.md");
    assert!(readme.contains("docs/errors.md"));
}
