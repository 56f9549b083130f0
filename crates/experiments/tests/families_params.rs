//! Lock families (`i_rwsem[dir]`, `pidlist_mutex[cgroup]`) and `[params]`.

mod common;

use common::run_text;
use experiments::scenario::{compile, ScenarioFile, Source};
use output::Metric;

const MS: u64 = 1_000_000;

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
"#;

#[test]
fn each_task_takes_its_own_instance_and_shared_instances_contend() {
    let r = run_text(FAMILY, 1);
    // Four tasks, four directories: nobody waits; the subject is the family's.
    let own = &r.series(Metric::Wait, "i_rwsem/write/own").unwrap().hist;
    assert_eq!((own.count(), own.max()), (4, 0));
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
        let text = FAMILY.replacen(from, to, 1);
        let file = ScenarioFile::new(Source::new("f.toml", text)).unwrap();
        let l = file.load(&file.base).unwrap();
        let e = compile(&file.source, &l.doc, &file.base)
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{e}");
    }
}
