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

/// One churner of case 2's library (v1 mkdir, `tasks` read, rmdir) alone
/// on `cpus` CPUs of the ideal machine, for 50 ms; its 1 ms slice lets
/// the kworkers bound to its CPU run.
fn v1_churner(cpus: u32) -> output::VariantResult {
    let text = format!(
        r#"
[scenario]
name = "v1-churn"
duration = "50ms"
cpus = {cpus}
hz = 1000
timeslice = "1ms"
include = ["kernfs", "cgroup", "pidlist-flush"]
[params]
seed_cgroups = 1
[dists.pidlist_build_cpu]
dist = "const"
value = "1us"
[dists.destroy_all_cpu]
dist = "const"
value = "5us"
[tasks.reader]
count = 0
[tasks.churner]
count = 1

[machine]
profile = 'ideal'
"#
    );
    run_text(&text, 1)
}

#[test]
fn r96_r97_v1_mkdir_allocates_its_per_cpu_state_under_cgroup_mutex() {
    // cgroup_create's four pcpu_alloc take pcpu_alloc_mutex, nested in
    // cgroup_mutex and the parent's i_rwsem (R97); the zeroing and init
    // loops cost per possible CPU: 7 lines zeroed at 4 ns and 3 init
    // lines at 1 ns, 31 ns a CPU, so the mkdir's cgroup_mutex hold on 8
    // CPUs is 6 x 31 ns longer than on 2 (R96).
    let (two, eight) = (v1_churner(2), v1_churner(8));
    let hold = |r: &output::VariantResult| {
        r.series(Metric::Hold, "cgroup_mutex/lock/churner")
            .unwrap()
            .hist
            .max()
    };
    let mkdirs = two
        .counter("cgroup_mutex/acquisitions/site/v1_mkdir")
        .unwrap();
    assert_eq!(
        two.counter("pcpu_alloc_mutex/acquisitions"),
        Some(4 * mkdirs)
    );
    assert_eq!(
        two.series(Metric::Hold, "pcpu_alloc_mutex/lock/churner")
            .unwrap()
            .hist
            .max(),
        Dur(500)
    );
    // mkdir's hold is the longer of the churner's two (mkdir, rmdir).
    assert_eq!(hold(&eight) - hold(&two), Dur(6 * 31));
}

#[test]
fn r95_r98_r99_a_v1_cgroup_without_controllers_is_released_after_a_grace_period() {
    // No kill_css: nothing runs on cgroup_offline_wq. rmdir's
    // percpu_ref_kill is a call_rcu whose callback queues css_release;
    // css_release_work_fn flushes the rstat under cgroup_mutex (5 us +
    // 70 ns a CPU) and queues css_free after another grace period.
    let (two, eight) = (v1_churner(2), v1_churner(8));
    assert_eq!(two.counter("wq/cgroup_offline_wq/executed"), Some(0));
    let released = two.counter("wq/cgroup_release_wq/executed").unwrap();
    assert!(released > 0);
    assert!(two.counter("wq/cgroup_free_wq/executed").unwrap() > 0);
    assert!(two.counter("rcu/callbacks").unwrap() >= released);
    let hold = |r: &output::VariantResult| {
        r.series(Metric::Hold, "cgroup_mutex/lock/css_release")
            .unwrap()
            .hist
            .max()
    };
    assert_eq!(hold(&two), Dur(5_000 + 2 * 70));
    assert_eq!(hold(&eight), Dur(5_000 + 8 * 70));
}

/// The library's rmdir holds cgroup_mutex while it takes kernfs_rwsem for
/// write (R44, R56): a reader that keeps kernfs_rwsem (here one asleep
/// in reclaim with it, for `HOLD`) stops PID 1's rmdir, and with it
/// everything that needs cgroup_mutex or the directory PID 1 holds.
const RMDIR_BEHIND_READER: &str = r#"
[scenario]
name = "rmdir-holds-cgroup-mutex"
duration = "300s"
include = ["kernfs"]

[tasks.reader]
count = 1
program = ["down_read kernfs_rwsem", "sleep HOLD", "up_read kernfs_rwsem"]

[tasks.pid1]
count = 1
program = ["sleep 1ms", "call cgroup_rmdir"]

[tasks.runtime]
count = 2
program = ["sleep 2ms", "call cgroup_mkdir"]

[machine]
profile = 'ideal'
"#;

#[test]
fn r44_r101_rmdir_waits_for_kernfs_rwsem_holding_cgroup_mutex_and_mkdir_queues_behind() {
    // PID 1 takes i_rwsem[0] and cgroup_mutex at 1 ms, then queues for
    // kernfs_rwsem W behind the reader, until 250 s. runtime[0] waits for
    // i_rwsem[0] (PID 1's directory), runtime[1] for cgroup_mutex: both
    // from 2 ms, both until PID 1's 27 removals (0.25 us each) are done.
    let c = crate::common::compile_text(&RMDIR_BEHIND_READER.replace("HOLD", "250s"));
    let mut w = experiments::world::World::new(&c, 1, 0, experiments::world::Limits::default());
    w.run(&mut |_| {}).unwrap();
    let reports = w.hung_task_reports();
    let r = w.result();
    let rmdir = r.series(Metric::Span, "rmdir/pid1").unwrap().hist.max();
    assert_eq!(rmdir, Dur(250_000_000_000 - 1_000_000 + 27 * 250));
    let kw = r
        .series(Metric::Wait, "kernfs_rwsem/write/pid1")
        .unwrap()
        .hist
        .max();
    assert_eq!(kw, Dur(250_000_000_000 - 1_000_000));
    let cm = r
        .series(Metric::Wait, "cgroup_mutex/lock/runtime")
        .unwrap()
        .hist
        .max();
    assert!(cm >= Dur(250_000_000_000 - 2_000_000), "{cm}");
    // khungtaskd (R101, defaults): the first check (120.832 s) sees the
    // three D-state waiters, the second (241.664 s) reports each once;
    // the reader's sleep is killable, never reported. Tasks: reader 0,
    // pid1 1, runtime 2 and 3.
    let who: Vec<(u64, u32, u64)> = reports.iter().map(|h| (h.at.0, h.task.0, h.secs)).collect();
    assert_eq!(
        who,
        vec![
            (241_664_000_000, 1, 120),
            (241_664_000_000, 2, 120),
            (241_664_000_000, 3, 120)
        ]
    );
    assert_eq!(r.counter("hung_task/warnings"), Some(3));
}

/// `reader` (a thread of `app`) and `other` (a process of its own) read a
/// cgroup file at 1 us while `holder`, another thread of `app`, holds
/// `lock` from 0 to 20 us (on CPUs enough for all, no line costs).
fn open_locks(lock: &str) -> String {
    format!(
        r#"
[scenario]
name = "open-locks"
duration = "1ms"
include = ["kernfs"]
[tasks.holder]
count = 1
process = "app"
program = ["{lock_op} {lock}", "cpu 20us", "{unlock_op} {lock}"]
[tasks.reader]
count = 1
process = "app"
program = ["sleep 1us", "call read_file"]
[tasks.other]
count = 1
program = ["sleep 1us", "call read_file"]
[machine]
profile = 'ideal'
"#,
        lock_op = if lock.starts_with("file_lock") {
            "spin_lock"
        } else {
            "mutex_lock"
        },
        unlock_op = if lock.starts_with("file_lock") {
            "spin_unlock"
        } else {
            "mutex_unlock"
        },
    )
}

#[test]
fn r108_r109_a_read_takes_its_process_fd_lock_and_the_nodes_open_mutex_once_and_twice() {
    let span = |r: &output::VariantResult, g: &str| {
        r.series(Metric::Span, &format!("read/{g}"))
            .unwrap()
            .hist
            .max()
    };
    // R108: the fd table's lock is its process's: the reader, a thread of
    // the holder's process, waits from 1 us to 20 us at its open's
    // alloc_fd, the read's first step; the other process does not.
    let r = run_text(&open_locks("file_lock[process]"), 1);
    assert_eq!(span(&r, "reader"), span(&r, "other") + 19 * US);
    assert_eq!(
        r.series(Metric::Wait, "file_lock/lock/reader")
            .unwrap()
            .hist
            .max(),
        19 * US
    );
    // Each read: alloc_fd and close_fd (R108); the open-file mutex once at
    // open and twice at a cgroup file's close (R109).
    for (site, n) in [
        ("file_lock/acquisitions/site/fd_alloc", 2),
        ("file_lock/acquisitions/site/fd_close", 2),
        (
            "kernfs_open_file_mutex/acquisitions/site/kernfs_fop_open",
            2,
        ),
        (
            "kernfs_open_file_mutex/acquisitions/site/kernfs_fop_release",
            4,
        ),
    ] {
        assert_eq!(r.counter(site), Some(n), "{site}");
    }
    // R109: the open-file mutex of the node (both keys are 0 here: one
    // node): the reader waits for it after its walk, so less than 19 us,
    // and so does the other process's reader: the node is shared.
    let m = run_text(&open_locks("kernfs_open_file_mutex[hash self]"), 1);
    let waited = |g: &str| {
        m.series(Metric::Wait, &format!("kernfs_open_file_mutex/lock/{g}"))
            .unwrap()
            .hist
            .max()
    };
    assert!(waited("reader") > Dur::ZERO && waited("reader") < 19 * US);
    assert!(waited("other") > Dur::ZERO);
}
