//! Lock families (`i_rwsem[dir]`, `pidlist_mutex[cgroup]`) and `[params]`.

use crate::common::run_text;
use experiments::scenario::{compile, ScenarioFile, Source};
use output::Metric;
use sim::Dur;

const MS: Dur = Dur(1_000_000);

const FAMILY: &str = r#"
[scenario]
name = "family"
duration = "1s"
[params]
nodes = 3                 # repetitions of the per-node step
[locks.i_rwsem]
kind = "rwsem"
instances = 4
[tasks.own]
count = 4
program = ["down_write i_rwsem[self]", "repeat $nodes", "  cpu 1ms", "end", "up_write i_rwsem[self]"]
[tasks.shared]
count = 2
program = ["sleep 10ms", "down_write i_rwsem[0]", "cpu 1ms", "up_write i_rwsem[0]"]

[machine]
profile = 'ideal'
"#;

/// The compile error of a scenario text named `name`.
fn compile_error(name: &str, text: &str) -> String {
    let file = ScenarioFile::new(Source::new(name, text)).unwrap();
    let l = file.load(&file.base).unwrap();
    compile(&file.source, &l.doc, &file.base)
        .unwrap_err()
        .to_string()
}

#[test]
fn each_task_takes_its_own_instance_and_shared_instances_contend() {
    let r = run_text(FAMILY, 1);
    // Four tasks, four directories: nobody waits; the subject is the family's.
    let own = &r.series(Metric::Wait, "i_rwsem/write/own").unwrap().hist;
    assert_eq!((own.count(), own.max()), (4, Dur::ZERO));
    assert_eq!(
        r.series(Metric::Hold, "i_rwsem/write/own")
            .unwrap()
            .hist
            .max(),
        3 * MS
    );
    // Two tasks on the same instance: one waits for the other.
    assert_eq!(
        r.series(Metric::Wait, "i_rwsem/write/shared")
            .unwrap()
            .hist
            .max(),
        MS
    );
    // Counters are per lock class, as in /proc/lock_stat: 4 own + 2 shared
    // acquisitions, one contention, and no per-instance subjects.
    assert_eq!(r.counter("i_rwsem/write_acquisitions"), Some(6));
    assert_eq!(r.counter("i_rwsem/write_contentions"), Some(1));
    assert!(
        r.counters.iter().all(|c| !c.subject.contains('[')),
        "{:?}",
        r.counters
    );
}

#[test]
fn params_set_repeat_counts_and_can_be_overridden() {
    let mut src = Source::new("f.toml", FAMILY);
    src.sets = vec!["params.nodes=5".into()];
    let file = ScenarioFile::new(src).unwrap();
    let l = file.load(&file.base).unwrap();
    let c = compile(&file.source, &l.doc, &file.base).unwrap();
    let mut w = experiments::world::World::new(&c, 1, 0, Default::default());
    w.run(&mut |_| {}).unwrap();
    assert_eq!(
        w.result()
            .series(Metric::Hold, "i_rwsem/write/own")
            .unwrap()
            .hist
            .max(),
        5 * MS
    );
}

#[test]
fn family_misuse_is_an_error() {
    for (from, to, needle) in [
        (
            "down_write i_rwsem[0]",
            "down_write i_rwsem",
            "is a family of 4 locks",
        ),
        (
            "down_write i_rwsem[0]",
            "down_write i_rwsem[7]",
            "has 4 instances",
        ),
        (
            "[tasks.own]\ncount = 4",
            "[tasks.own]\ncount = 5",
            "`self` takes 5 values",
        ),
        ("repeat $nodes", "repeat $edges", "no parameter `edges`"),
    ] {
        let e = compile_error("f.toml", &FAMILY.replacen(from, to, 1));
        assert!(e.contains(needle), "{e}");
    }
}

const KEYED: &str = r#"
[scenario]
name = "keyed"
duration = "1s"
[locks.m]
kind = "mutex"
instances = 4
[tasks.a]
count = 2
program = ["KEY", "mutex_lock m[self]", "cpu 1ms", "mutex_unlock m[self]"]

[machine]
profile = 'ideal'
"#;

/// Contentions of the two tasks of `KEYED` with its `key` step set to `key`.
fn keyed_contentions(key: &str) -> u64 {
    run_text(&KEYED.replace("KEY", key), 1)
        .counter("m/contentions")
        .unwrap()
}

#[test]
fn a_key_step_sets_the_instance_self_names() {
    // By default `self` is the task's index: two tasks, two mutexes.
    assert_eq!(keyed_contentions("cpu 0ns"), 0);
    // `key 3` puts both on m[3]: one waits.
    assert_eq!(keyed_contentions("key 3"), 1);
    // `key next 1 3` hands out 1 then 2: each task its own cgroup.
    assert_eq!(keyed_contentions("key next 1 3"), 0);
    // `key next 2 3` has one value: both on m[2].
    assert_eq!(keyed_contentions("key next 2 3"), 1);
    // `key random 1 2` can only draw 1.
    assert_eq!(keyed_contentions("key random 1 2"), 1);
}

#[test]
fn key_random_spreads_tasks_over_its_range() {
    // Four tasks, 100 rounds each, every round on a random one of the four
    // mutexes. With their own mutex (`self`) they never collide; with a
    // random one they collide, about 1 - (3/4)^3 = 58% of the time, but
    // the draws differ between tasks, so not always.
    let text = KEYED
        .replace("count = 2", "count = 4")
        .replace("\"KEY\", \"mutex_lock m[self]\", \"cpu 1ms\", \"mutex_unlock m[self]\"",
            "\"repeat 100\", \"  KEY\", \"  mutex_lock m[self]\", \"  cpu 1ms\", \"  mutex_unlock m[self]\", \"  sleep 1ms\", \"end\"");
    assert!(text.contains("repeat 100"), "{text}");
    let contentions = |key: &str, seed| {
        run_text(&text.replace("KEY", key), seed)
            .counter("m/contentions")
            .unwrap()
    };
    assert_eq!(contentions("cpu 0ns", 1), 0);
    let a = contentions("key random 0 4", 1);
    assert!((100..300).contains(&a), "{a}");
    let seeds: Vec<u64> = (1..6).map(|s| contentions("key random 0 4", s)).collect();
    assert!(
        seeds.iter().any(|&x| x != a),
        "the draws come from the seed: {seeds:?}"
    );
    assert_eq!(a, contentions("key random 0 4", 1), "same seed, same draws");
}

#[test]
fn key_misuse_is_an_error() {
    for (key, needle) in [
        (
            "key next 0 5",
            "`self` takes 5 values here but `m` has 4 instances",
        ),
        ("key 3 1", "expected `key N`"),
        ("key next 3 3", "must be non-empty"),
        ("key random 0 $cgroups", "no parameter `cgroups`"),
        ("key sometimes", "not a whole number"),
    ] {
        let e = compile_error("k.toml", &KEYED.replace("KEY", key));
        assert!(e.contains(needle), "{key}: {e}");
        assert!(e.contains("k.toml:"), "{e}");
    }
}

#[test]
fn a_program_that_sets_its_key_first_needs_only_the_keys_instances() {
    // Eight tasks over a family of 4: `self` never names a task's index
    // when the first step is `key`, so the family needs only the 4
    // instances the key takes.
    let eight = KEYED.replace("count = 2", "count = 8");
    let first = eight.replace("KEY", "key random 0 4");
    let r = run_text(&first, 1);
    assert_eq!(r.counter("m/acquisitions"), Some(8), "{:?}", r.counters);
    // Anywhere but first, `self` is the index until the key step runs: the
    // family must have an instance for each task.
    let later = eight.replace("\"KEY\", ", "\"cpu 1us\", \"key random 0 4\", ");
    assert!(later.contains("\"cpu 1us\", \"key random"), "{later}");
    let e = compile_error("k.toml", &later);
    assert!(
        e.contains("`self` takes 8 values here but `m` has 4 instances"),
        "{e}"
    );
    // A first key step that takes more values than the family has is
    // still an error.
    let e = compile_error("k.toml", &eight.replace("KEY", "key random 0 5"));
    assert!(
        e.contains("`self` takes 5 values here but `m` has 4 instances"),
        "{e}"
    );
}

/// Eight tasks (keys 0..7) take `open_mutex[hash self]` and hold it 10 ms.
fn hashed(instances: u32, step: &str) -> String {
    format!(
        r#"
[scenario]
name = "hashed"
duration = "1s"
[locks.open_mutex]
kind = "mutex"
instances = {instances}
[tasks.t]
count = 8
program = ["mutex_lock {step}", "sleep 10ms", "mutex_unlock {step}"]
[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn a_hashed_family_puts_keys_that_hash_alike_on_one_lock() {
    // hash_64(k, 2) = (k x 0x61C8864680B583EB) >> 62 for k = 0..7:
    // 0, 1, 3, 0, 2, 3, 1, 2: four buckets of two, so four tasks wait
    // 10 ms behind the other of their bucket, four not at all.
    assert_eq!(
        (0..8)
            .map(|k| experiments::program::hash_64(k, 2))
            .collect::<Vec<_>>(),
        [0, 1, 3, 0, 2, 3, 1, 2]
    );
    let r = run_text(&hashed(4, "open_mutex[hash self]"), 1);
    let w = &r.series(Metric::Wait, "open_mutex/lock/t").unwrap().hist;
    assert_eq!((w.count(), w.max()), (8, 10 * MS));
    assert_eq!(r.counter("open_mutex/contentions"), Some(4));
    // By key instead, each task has its own lock.
    let own = run_text(&hashed(8, "open_mutex[self]"), 1);
    assert_eq!(
        own.series(Metric::Wait, "open_mutex/lock/t")
            .unwrap()
            .hist
            .max(),
        Dur(0)
    );
}

#[test]
fn a_hashed_family_needs_a_power_of_two_of_instances() {
    let e = compile_error("h.toml", &hashed(6, "open_mutex[hash self]"));
    assert!(e.contains("whose `instances` is a power of two"), "{e}");
    assert!(e.contains("`open_mutex` has 6"), "{e}");
}

#[test]
fn a_key_step_while_a_keyed_lock_is_held_is_refused_before_the_run() {
    // The release would name another lock than the one taken: a panic in
    // the lock before this check.
    for (lock, form) in [("m[self]", "m[self]"), ("m[hash self]", "m[hash self]")] {
        let text = format!(
            r#"
[scenario]
name = "k"
duration = "10ms"
[locks.m]
kind = "mutex"
instances = 4
[tasks.t]
count = 1
program = ["mutex_lock {lock}", "key 1", "mutex_unlock {lock}"]
"#
        );
        let e = compile_error("k.toml", &text);
        assert!(
            e.contains(&format!(
                "`key` changes which lock `{form}` names, and it is held here"
            )),
            "{e}"
        );
        assert!(e.contains("tasks.t.program[1]"), "{e}");
    }
}

/// `holder` keeps `node[1]` for 10 ms; `walker` passes over the nodes
/// from 1 ms, each pass taking its node's lock (`node[repeat]`).
fn passes(walk: &str) -> String {
    format!(
        r#"
[scenario]
name = "passes"
duration = "1s"
[locks.node]
kind = "mutex"
instances = 3
[tasks.holder]
count = 1
program = ["mutex_lock node[1]", "sleep 10ms", "mutex_unlock node[1]"]
[tasks.walker]
count = 1
program = ["sleep 1ms", {walk}]
[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn a_lock_named_by_the_repeat_s_pass_takes_one_instance_per_pass() {
    // Pass 0 takes node[0] at once; pass 1 waits for node[1] until 10 ms
    // (asked at 1.001 ms); pass 2 takes node[2] at once.
    let r = run_text(
        &passes(
            r#""repeat 3", "  mutex_lock node[repeat]", "  cpu 1us", "  mutex_unlock node[repeat]", "end""#,
        ),
        1,
    );
    let w = &r.series(Metric::Wait, "node/lock/walker").unwrap().hist;
    assert_eq!((w.count(), w.max()), (3, 9 * MS - Dur(1_000)));
    assert_eq!(r.counter("node/contentions"), Some(1));
    // The innermost repeat counts: an outer repeat of 2 around an inner
    // one of 3 walks the nodes twice.
    let r = run_text(
        &passes(
            r#""repeat 2", "  repeat 3", "    mutex_lock node[repeat]", "    cpu 1us", "    mutex_unlock node[repeat]", "  end", "end""#,
        ),
        1,
    );
    assert_eq!(
        r.series(Metric::Wait, "node/lock/walker")
            .unwrap()
            .hist
            .count(),
        6
    );
    assert_eq!(r.counter("node/contentions"), Some(1));
}

#[test]
fn a_pass_lock_needs_a_repeat_and_enough_instances() {
    for (walk, want) in [
        (
            r#""mutex_lock node[repeat]", "mutex_unlock node[repeat]""#,
            "`[repeat]` names the pass of a `repeat`, and this step is in none",
        ),
        (
            r#""repeat 4", "  mutex_lock node[repeat]", "  mutex_unlock node[repeat]", "end""#,
            "the repeat around it makes 4 passes, so `node` needs at least 4 `instances`; it has 3",
        ),
        (
            r#""repeat 3", "  mutex_lock node[repeat]", "end", "mutex_unlock node[repeat]""#,
            "this step is in none",
        ),
        (
            r#""repeat 3", "  mutex_lock node[repeat]", "end""#,
            "must release what it takes",
        ),
    ] {
        let e = compile_error("p.toml", &passes(walk));
        assert!(e.contains(want), "{walk}: {e}");
    }
}

/// Three groups: `a` and `b` threads of one process, `c` a process of its
/// own (the default). Each task takes `fd[process]` at `start` and holds it
/// 10 ms.
fn processes(instances: u32) -> String {
    format!(
        r#"
[scenario]
name = "processes"
duration = "1s"
[locks.fd]
kind = "spinlock"
instances = {instances}
[tasks.a]
count = 1
process = "app"
program = ["spin_lock fd[process]", "cpu 10ms", "spin_unlock fd[process]"]
[tasks.b]
count = 1
process = "app"
program = ["sleep 1ms", "spin_lock fd[process]", "cpu 10ms", "spin_unlock fd[process]"]
[tasks.c]
count = 1
program = ["sleep 1ms", "spin_lock fd[process]", "cpu 10ms", "spin_unlock fd[process]"]
[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn a_lock_named_by_the_process_is_shared_by_its_threads_only() {
    // b, a thread of a's process, spins 9 ms for the lock a holds; c, a
    // process of its own, takes its own at once.
    let r = run_text(&processes(2), 1);
    let wait = |g: &str| {
        r.series(Metric::Wait, &format!("fd/lock/{g}"))
            .unwrap()
            .hist
            .max()
    };
    assert_eq!(wait("b"), 9 * MS);
    assert_eq!(wait("c"), Dur(0));
    assert_eq!(r.counter("fd/contentions"), Some(1));
}

#[test]
fn a_process_lock_needs_a_family_with_an_instance_per_process_and_a_task() {
    // Two processes (app, then c): one instance is too few.
    let e = crate::common::compile_error(&processes(1));
    assert!(
        e.contains("this is process 1 of the scenario")
            && e.contains("needs at least 2 `instances`; it has 1"),
        "{e}"
    );
    // A work runs in a kworker: no process.
    let work = r#"
[scenario]
name = "w"
duration = "10ms"
[locks.fd]
kind = "mutex"
instances = 2
[workqueues.wq]
[works.job]
program = ["mutex_lock fd[process]", "mutex_unlock fd[process]"]
[tasks.t]
count = 1
program = ["queue_work wq job"]
"#;
    let e = crate::common::compile_error(work);
    assert!(
        e.contains("a work runs in a kworker, which belongs to no process"),
        "{e}"
    );
}
