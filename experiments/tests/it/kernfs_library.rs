//! The kernfs/cgroup operation library (`include = ["kernfs"]`).

use crate::common::run_text;
use experiments::scenario::{compile, ScenarioFile, Source};
use output::Metric;
use sim::Dur;

const US: Dur = Dur(1_000);

const CHURN: &str = r#"
[scenario]
name = "churn"
duration = "200ms"
cpus = 4
include = ["kernfs"]

[tasks.churner]
count = 2
program = ["loop", "  call cgroup_mkdir", "  call cgroup_rmdir", "  sleep 1ms", "end"]

[tasks.walker]
count = 4
program = ["loop", "  call stat", "  call readdir", "  sleep 200us", "end"]

[machine]
profile = 'ideal'
"#;

#[test]
fn a_scenario_built_on_the_library_runs_every_operation() {
    let r = run_text(CHURN, 1);
    let mkdir = &r.series(Metric::Span, "mkdir/churner").unwrap().hist;
    let rmdir = &r.series(Metric::Span, "rmdir/churner").unwrap().hist;
    assert!(mkdir.count() > 50 && rmdir.count() > 50);
    // Uncontended (no walkers), the library's docs/cases.md-derived costs: 27 +
    // 1 node additions of 0.78 us and 1 us fixed; 27 removals of 0.25 us.
    // One churner: two run in lockstep on the global cgroup_mutex.
    let alone = CHURN
        .replace("[tasks.walker]\ncount = 4", "[tasks.walker]\ncount = 0")
        .replace("[tasks.churner]\ncount = 2", "[tasks.churner]\ncount = 1");
    let alone = run_text(&alone, 1);
    assert_eq!(
        alone
            .series(Metric::Span, "mkdir/churner")
            .unwrap()
            .hist
            .min(),
        Dur(28 * 780 + 1_000)
    );
    assert_eq!(
        alone
            .series(Metric::Span, "rmdir/churner")
            .unwrap()
            .hist
            .min(),
        Dur(27 * 250)
    );
    // With walkers, rmdir's 27 write acquisitions meet readers.
    assert!(rmdir.mean() > Dur(27 * 250));
    // mkdir takes kernfs_rwsem for write 28 times, walkers read it.
    assert!(r.counter("kernfs_rwsem/write_acquisitions").unwrap() >= 28 * mkdir.count());
    assert!(r.series(Metric::Span, "stat/walker").unwrap().hist.count() > 1_000);
    // The destruction chain ran: offline, release, free (R39).
    assert!(r.counter("wq/cgroup_free_wq/executed").unwrap() > 0);
    assert!(r
        .series(Metric::Span, "cgroup1_pidlist_destroy_all/css_free")
        .is_some());
}

#[test]
fn an_experiment_overrides_a_library_cost_and_a_parameter() {
    let text = format!(
        "{CHURN}\n[dists.kernfs_remove_node_cpu]\ndist = \"const\"\nvalue = \"1us\"\n[params]\nkernfs_nodes = 10\n"
    );
    let text = text
        .replace("[tasks.walker]\ncount = 4", "[tasks.walker]\ncount = 0")
        .replace("[tasks.churner]\ncount = 2", "[tasks.churner]\ncount = 1");
    let r = run_text(&text, 1);
    assert_eq!(
        r.series(Metric::Span, "rmdir/churner").unwrap().hist.min(),
        10 * US
    );
}

#[test]
fn lookup_allocates_under_kernfs_rwsem_from_the_callers_memcg() {
    // The experiment points [memcg.caller] at a full memcg: the lookup's
    // inode charge reclaims with kernfs_rwsem held for read (R49, R51).
    let text = r#"
[scenario]
name = "lookup"
duration = "1s"
include = ["kernfs"]
[memcg.caller]
max = "256MiB"
initial = "256MiB"
reclaim = "20ms"
[tasks.lookup]
count = 1
program = ["call lookup_slow"]

[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    assert_eq!(
        r.series(Metric::Hold, "kernfs_rwsem/read/lookup")
            .unwrap()
            .hist
            .max(),
        20_000 * US + Dur(1_300)
    );
}

#[test]
fn an_error_inside_the_library_names_the_library_and_line() {
    let text = CHURN.replace("call stat", "call statx");
    let file = ScenarioFile::new(Source::new("c.toml", text)).unwrap();
    let l = file.load(&file.base).unwrap();
    let e = compile(&file.source, &l.doc, &file.base)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no operation `statx`"), "{e}");
    // A typo in a library reference made by the scenario points at the
    // library file itself when the library is where the step is.
    let text = format!("{CHURN}\n[ops.stat]\nsteps = [\"call path_walk\", \"down_read nope\"]\n");
    let file = ScenarioFile::new(Source::new("c.toml", text)).unwrap();
    let l = file.load(&file.base).unwrap();
    let e = compile(&file.source, &l.doc, &file.base)
        .unwrap_err()
        .to_string();
    assert!(e.contains("c.toml:") && e.contains("no lock `nope`"), "{e}");
    // A bad include is an error with the scenario's line.
    let file = ScenarioFile::new(Source::new(
        "c.toml",
        CHURN.replace("\"kernfs\"", "\"nosuchlib\""),
    ));
    let e = file.err().unwrap().to_string();
    assert!(e.contains("c.toml:6") && e.contains("nosuchlib"), "{e}");
}
