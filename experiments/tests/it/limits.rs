//! Limits that stop a runaway or oversized scenario with a message, and
//! outputs that survive an interrupted run.

use crate::common::{convoy, convoy_status};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const SMALL: &str = r#"
[scenario]
name = "small"
duration = "1s"
[locks.m]
kind = "mutex"
[tasks.a]
count = 2
program = ["loop", "  mutex_lock m", "  cpu 1us", "  mutex_unlock m", "  sleep 10us", "end"]

[machine]
profile = 'ideal'
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

/// Runs `convoy ARGS`, which must fail with status 2 and say `needle`;
/// nothing may be written to `out`.
fn refused(dir: &Path, args: &[&str], needle: &str) {
    let o = convoy_status(args, dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!dir.join("out").exists(), "{args:?} wrote output");
}

#[test]
fn a_duration_over_the_simulated_time_limit_is_refused_before_running() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "s.toml", SMALL);
    let args = [
        "run",
        &f,
        "--duration",
        "10s",
        "--max-sim-time",
        "5s",
        "--out",
        "out",
    ];
    refused(
        d.path(),
        &args,
        "simulated duration is 10s, over the limit of 5s",
    );
    // The default limit is a year of simulated time (in 1000 windows).
    let long = [
        "run",
        &f,
        "--duration",
        "40000000s",
        "--set",
        "scenario.window=40000s",
        "--out",
        "out",
    ];
    refused(d.path(), &long, "--max-sim-time");
}

/// The parts of the estimate `--max-memory 1` prints, in MiB: program,
/// compiled scenario, worlds at once (the results, in KiB here, after).
fn memory_parts(dir: &Path, extra: &[&str]) -> [f64; 3] {
    let mut args = vec!["run", "fam.toml", "--max-memory", "1", "--out", "out"];
    args.extend_from_slice(extra);
    let o = convoy_status(&args, dir);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("KiB the results)"), "{err}");
    let parts: Vec<f64> = ["the program", "the compiled scenario", "the worlds"]
        .iter()
        .map(|what| {
            let at = err.find(what).unwrap_or_else(|| panic!("{what}: {err}"));
            let number = err[..at].trim_end().trim_end_matches(" MiB");
            let number = &number[number.rfind([' ', '(']).unwrap() + 1..];
            number.parse().unwrap_or_else(|_| panic!("{what}: {err}"))
        })
        .collect();
    parts.try_into().unwrap()
}

#[test]
fn the_memory_estimate_counts_the_whole_run_before_any_world() {
    // A family of 200,000 mutexes (each a compiled lock with its name),
    // 100,000 tasks, two variants: the compiled scenarios count once per
    // variant, the worlds as many as run at once, the program always.
    let d = tempfile::tempdir().unwrap();
    let text = SMALL
        .replace(
            "[locks.m]\nkind = \"mutex\"",
            "[locks.m]\nkind = \"mutex\"\ninstances = 200000",
        )
        .replace("count = 2", "count = 100000")
        .replace("mutex_lock m\"", "mutex_lock m[0]\"")
        .replace("mutex_unlock m\"", "mutex_unlock m[0]\"")
        + "[variants.b]\n[variants.b.tasks.a]\ncount = 99999\n";
    write(d.path(), "fam.toml", &text);
    let one = memory_parts(d.path(), &["--jobs", "1"]);
    let two = memory_parts(d.path(), &["--jobs", "2"]);
    assert_eq!(one[0], 10.0, "{one:?}");
    assert!(
        one[1] >= 2.0 * 20.0,
        "two compiled families of 200,000 locks: {one:?}"
    );
    assert!(
        two[2] >= 2.0 * one[2] - 0.2 && one[2] >= 20.0,
        "{one:?} {two:?}"
    );
    assert_eq!((one[0], one[1]), (two[0], two[1]));
    assert!(!d.path().join("out").exists());
}

#[test]
fn a_world_over_the_memory_limit_is_refused_before_it_is_allocated() {
    let d = tempfile::tempdir().unwrap();
    let big = SMALL.replace("count = 2", "count = 500000");
    let f = write(d.path(), "big.toml", &big);
    let args = ["run", &f, "--max-memory", "16MiB", "--out", "out"];
    refused(d.path(), &args, "estimated memory is");
    refused(
        d.path(),
        &["run", &f, "--max-memory", "lots", "--out", "out"],
        "--max-memory lots",
    );
}

#[test]
fn counts_beyond_what_a_run_can_hold_are_errors_not_allocations() {
    let d = tempfile::tempdir().unwrap();
    // 4e9 work items: more than the event queue's slots.
    let items = format!(
        "{SMALL}\n[workqueues.w]\nkind = \"percpu\"\n[works.x]\ninstances = 4000000000\nprogram = [\"cpu 1us\"]\n"
    );
    let f = write(d.path(), "items.toml", &items);
    refused(
        d.path(),
        &["run", &f, "--out", "out"],
        "4000000000 work items",
    );
    // Eight families of a million locks each.
    let mut families = SMALL.to_string();
    for i in 0..8 {
        families.push_str(&format!(
            "\n[locks.f{i}]\nkind = \"mutex\"\ninstances = 1048576\n"
        ));
    }
    let f = write(d.path(), "locks.toml", &families);
    refused(d.path(), &["run", &f, "--out", "out"], "locks in all");
}

#[test]
#[cfg(unix)]
fn an_endless_data_file_is_an_error_not_an_endless_read() {
    let d = tempfile::tempdir().unwrap();
    let text = format!(
        "{SMALL}\n[dists.d]\ndist = \"empirical\"\nfile = \"/dev/zero\"\nformat = \"samples\"\n"
    );
    let f = write(d.path(), "zero.toml", &text);
    refused(
        d.path(),
        &["run", &f, "--out", "out"],
        "cannot read /dev/zero: not a regular file (a character device)",
    );
    // A regular file over the cap is refused by its size, before a byte
    // is read (sparse: it takes no disk).
    let big = std::fs::File::create(d.path().join("big.csv")).unwrap();
    big.set_len((256 << 20) + 1).unwrap();
    let f = write(d.path(), "big.toml", &text.replace("/dev/zero", "big.csv"));
    refused(
        d.path(),
        &["run", &f, "--out", "out"],
        "big.csv: larger than 256 MiB",
    );
}

#[test]
#[cfg(unix)]
fn a_run_killed_midway_leaves_the_previous_complete_result() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "s.toml", SMALL);
    convoy(&["run", &f, "--out", "out", "--histograms", "0"], d.path());
    let files = ["summary.csv", "hist.csv", "windows.csv", "manifest.json"];
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|n| std::fs::read(d.path().join("out").join(n)).unwrap())
        .collect();
    // A long run into the same directory, killed (SIGKILL) while it runs.
    let mut child = Command::new(env!("CARGO_BIN_EXE_convoy"))
        .args(["run", &f, "--duration", "100000s", "--out", "out"])
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    for (n, old) in files.iter().zip(&before) {
        let now = std::fs::read(d.path().join("out").join(n)).unwrap();
        assert!(&now == old, "{n} changed");
    }
    // No temporary file is left beside them under a result's name.
    for e in std::fs::read_dir(d.path().join("out")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(!name.ends_with(".tmp") || name.starts_with('.'), "{name}");
    }
}

#[test]
fn too_many_tasks_for_max_tasks_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "s.toml", SMALL);
    let args = ["run", &f, "--max-tasks", "1", "--out", "out"];
    refused(
        d.path(),
        &args,
        "tasks, kworkers and work items is 2, over the limit of 1",
    );
}

#[test]
fn a_zero_time_livelock_names_the_task_its_step_and_the_locks_it_holds() {
    // A repeat with no delay in its body passes the static check (only
    // loops must advance time) and spins at one instant holding m; the
    // run stops at the step limit and says who, where and what it holds,
    // as a hung-task report would.
    use experiments::scenario::{compile, ScenarioFile, Source};
    use experiments::world::{Limits, RunError, World};
    let text = r#"
[scenario]
name = "spin"
duration = "1s"
[locks.m]
kind = "mutex"
[tasks.poller]
count = 1
program = ["mutex_lock m", "repeat 1000000000", "  count polls", "end", "mutex_unlock m"]

[machine]
profile = 'ideal'
"#;
    let file = ScenarioFile::new(Source::new("spin.toml", text)).unwrap();
    let l = file.load(&file.base).unwrap();
    let c = compile(&file.source, &l.doc, &file.base).unwrap();
    let limits = Limits {
        max_steps_per_instant: 10_000,
        ..Limits::default()
    };
    let e = World::new(&c, 1, 0, limits).run(&mut |_| {}).unwrap_err();
    assert!(matches!(e, RunError::Livelock { .. }), "{e:?}");
    let msg = e.to_string();
    for needle in [
        "livelock: task poller[0]",
        "spin.toml:9",
        "holding m (lock)",
        "t=0ns",
    ] {
        assert!(msg.contains(needle), "{needle}: {msg}");
    }
}

#[test]
fn a_work_item_that_queues_itself_at_one_instant_is_a_livelock_not_a_hang() {
    // Each kworker's own steps stay few; it is the events, handed from
    // kworker to kworker at t=0, that never end.
    use experiments::scenario::{compile, ScenarioFile, Source};
    use experiments::world::{Limits, RunError, World};
    let text = r#"
[scenario]
name = "requeue"
duration = "100ms"
cpus = 2
[workqueues.w]
kind = "unbound"
[works.x]
program = ["queue_work w x[0]"]
[tasks.a]
count = 1
program = ["queue_work w x[0]", "sleep 50ms"]

[machine]
profile = 'ideal'
"#;
    let file = ScenarioFile::new(Source::new("requeue.toml", text)).unwrap();
    let l = file.load(&file.base).unwrap();
    let c = compile(&file.source, &l.doc, &file.base).unwrap();
    let limits = Limits {
        max_steps_per_instant: 10_000,
        ..Limits::default()
    };
    let e = World::new(&c, 1, 0, limits).run(&mut |_| {}).unwrap_err();
    assert!(matches!(e, RunError::InstantLivelock { .. }), "{e:?}");
    let msg = e.to_string();
    for needle in [
        "livelock: more than 10000 events at t=0ns",
        "requeue.toml:9",
        "a work item that queues itself",
    ] {
        assert!(msg.contains(needle), "{needle}: {msg}");
    }
}

#[test]
fn input_that_would_fill_memory_is_refused_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // A file that never ends, as a scenario and as a library.
    refused(dir, &["run", "/dev/zero"], "not a regular file");
    let inc = write(
        dir,
        "inc.toml",
        &SMALL.replace(
            "duration = \"1s\"",
            "duration = \"1s\"\ninclude = [\"/dev/zero\"]",
        ),
    );
    refused(dir, &["run", &inc], "not a regular file");
    // A regular file over 16 MiB, refused by its size.
    let big = std::fs::File::create(dir.join("big.toml")).unwrap();
    big.set_len((16 << 20) + 1).unwrap();
    refused(dir, &["run", "big.toml"], "larger than 16 MiB");
    // Operations that each call the next twice: 2^41 steps inlined.
    let mut text = String::from(
        "[scenario]\nname = \"e\"\nduration = \"1s\"\n[tasks.a]\ncount = 1\nprogram = [\"call o0\", \"sleep 1ms\"]\n\n[machine]\nprofile = 'ideal'\n",
    );
    for n in 0..41 {
        text += &format!(
            "[ops.o{n}]\nsteps = [\"call o{}\", \"call o{}\"]\n",
            n + 1,
            n + 1
        );
    }
    text += "[ops.o41]\nsteps = [\"count x\"]\n";
    let exp = write(dir, "exp.toml", &text);
    refused(dir, &["run", &exp], "expands to more than 4000000 steps");
    // A bin per 1 ms window for 1000 s is 48 MB a series: over 100 MiB.
    let win = write(
        dir,
        "win.toml",
        &(SMALL.replace("duration = \"1s\"", "duration = \"1000s\"\nwindow = \"1ms\"")
            + "[tasks.b]\ncount = 1\nprogram = [\"loop\", \"  mutex_lock m\", \"  cpu 1us\", \"  mutex_unlock m\", \"  sleep 10us\", \"end\"]\n"),
    );
    refused(
        dir,
        &["run", &win, "--max-memory", "100MiB"],
        "estimated memory",
    );
    // Replications past the most one command runs.
    refused(
        dir,
        &["run", "writer-parks-readers", "--reps", "4294967296"],
        "not in 0..=100000",
    );
}

#[test]
fn names_that_are_not_file_names_or_repeat_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let up = write(
        dir,
        "up.toml",
        &SMALL.replace("name = \"small\"", "name = \"../../x\""),
    );
    refused(
        dir,
        &["run", &up],
        "field `scenario.name`: `../../x` cannot name output files",
    );
    refused(
        dir,
        &["run", "writer-parks-readers", "--set", "scenario.name=a/b"],
        "--set scenario.name=a/b: field `scenario.name`: `a/b` cannot name output files",
    );
    let v = SMALL.replace("name = \"small\"", "name = \"small\"\nvariants = VS")
        + "[variants.\"a/../../b\"]\n";
    let slash = write(dir, "slash.toml", &v.replace("VS", "[\"base\"]"));
    refused(dir, &["run", &slash], "field `variants.a/../../b`");
    let none = write(
        dir,
        "none.toml",
        &SMALL.replace("name = \"small\"", "name = \"small\"\nvariants = []"),
    );
    refused(dir, &["run", &none], "an empty list runs nothing");
    let twice = write(
        dir,
        "twice.toml",
        &SMALL.replace(
            "name = \"small\"",
            "name = \"small\"\nvariants = [\"base\", \"base\"]",
        ),
    );
    refused(dir, &["run", &twice], "`base` is listed twice");
    refused(
        dir,
        &[
            "run",
            "writer-parks-readers",
            "--variant",
            "base",
            "--variant",
            "base",
        ],
        "given twice",
    );
    // A trace that cannot be written stops the run before its results.
    refused(
        dir,
        &[
            "run",
            "writer-parks-readers",
            "--duration",
            "10ms",
            "--trace",
            ".",
        ],
        "not a file name",
    );
    // A run that fails leaves no directory for its trace behind.
    refused(
        dir,
        &[
            "run",
            "writer-parks-readers",
            "--duration",
            "10ms",
            "--max-events",
            "10",
            "--trace",
            "traces/t.json",
        ],
        "the event limit",
    );
    assert!(!dir.join("traces").exists());
}

#[test]
fn a_million_cpus_count_in_the_memory_estimate() {
    // About 210 bytes a CPU: a million CPUs are 200 MiB before any task,
    // which the estimate used to leave out.
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "cpus.toml",
        &SMALL.replace("duration = \"1s\"", "duration = \"1s\"\ncpus = 1000000"),
    );
    refused(
        d.path(),
        &["run", &f, "--max-memory", "100MiB", "--out", "out"],
        "estimated memory is 2",
    );
}
