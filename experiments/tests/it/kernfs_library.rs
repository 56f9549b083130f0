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
    // Uncontended (no walkers), the library's costs: 27 + 1 node
    // additions of 366 ns, 5.65 us fixed and 283 ns per CPU (R112, R114;
    // 4 CPUs); 27 removals of 0.25 us.
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
        Dur(28 * 366 + 5_750 + 4 * 283)
    );
    assert_eq!(
        alone
            .series(Metric::Span, "rmdir/churner")
            .unwrap()
            .hist
            .min(),
        Dur(27 * 250 + 2 * 100)
    );
    // With walkers, rmdir's 27 write acquisitions meet readers.
    assert!(rmdir.mean() > Dur(27 * 250));
    // mkdir takes kernfs_rwsem for write 28 times, walkers read it.
    assert!(r.counter("kernfs_rwsem/write_acquisitions").unwrap() >= 28 * mkdir.count());
    assert!(r.series(Metric::Span, "stat/walker").unwrap().hist.count() > 1_000);
    // The destruction chain ran: offline, release, free (R39, R115);
    // a v2 cgroup has no pidlists to destroy (R40).
    assert!(r.counter("wq/cgroup_free_wq/executed").unwrap() > 0);
    assert!(r.counter("wq/cgroup_bpf_destroy_wq/executed").unwrap() > 0);
    assert!(r
        .series(Metric::Span, "cgroup1_pidlist_destroy_all/css_free")
        .is_none());
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
        10 * US + Dur(2 * 100)
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
    // Four for each mkdir; the horizon may cut the last one between two.
    let allocs = two.counter("pcpu_alloc_mutex/acquisitions").unwrap();
    assert!(
        (4 * mkdirs - 3..=4 * mkdirs).contains(&allocs),
        "{allocs} for {mkdirs} mkdirs"
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
    // The first css_set_lock walk (R117, 100 ns) comes before the wait,
    // which it shortens; the second, after the removals, adds its 100 ns.
    assert_eq!(rmdir, Dur(250_000_000_000 - 1_000_000 + 27 * 250 + 100));
    let kw = r
        .series(Metric::Wait, "kernfs_rwsem/write/pid1")
        .unwrap()
        .hist
        .max();
    assert_eq!(kw, Dur(250_000_000_000 - 1_000_000 - 100));
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

/// One v2 mkdir then one rmdir by `admin`, alone on `cpus` CPUs of the
/// ideal machine at HZ 1000, and nothing after: the destruction's works
/// run on the admin's CPU, each grace period ends at a forcing scan.
fn v2_one(cpus: u32) -> String {
    format!(
        r#"
[scenario]
name = "v2-one"
duration = "40ms"
cpus = {cpus}
hz = 1000
include = ["kernfs"]
[tasks.admin]
count = 1
program = ["call cgroup_mkdir", "call cgroup_rmdir"]

[machine]
profile = 'ideal'
"#
    )
}

#[test]
fn r112_r113_r114_r117_v2_mkdir_allocates_the_cgroup_and_cpu_css_per_cpu_state_under_cgroup_mutex()
{
    let (two, eight) = (run_text(&v2_one(2), 1), run_text(&v2_one(8), 1));
    // Per call site, one mkdir: five pcpu_alloc (self refcnt, rstat,
    // psi, bpf refcnt; cpu's css refcnt: R112-R114), the directory and
    // 26 files + kernfs_activate as kernfs W (R43, R58), task_group_lock
    // and uclamp_mutex once each (R114), cgroup_mutex and the parent's
    // i_rwsem once.
    for (site, n) in [
        ("pcpu_alloc_mutex/acquisitions/site/pcpu_alloc", 5),
        ("kernfs_rwsem/write_acquisitions/site/cgroup_mkdir", 28),
        ("task_group_lock/acquisitions/site/sched_online_group", 1),
        ("uclamp_mutex/acquisitions/site/css_create_cpu", 1),
        ("cgroup_mutex/acquisitions/site/cgroup_mkdir", 1),
        ("i_rwsem/write_acquisitions/site/cgroup_mkdir", 1),
    ] {
        assert_eq!(two.counter(site), Some(n), "{site}");
    }
    // The mkdir alone: 5.75 us fixed (cgroup_create 1 us, five areas of
    // 500 ns, bpf 1 us, css_create 1 us, uclamp 100 ns, task_groups
    // 50 ns, css_set_lock's ancestor walk 100 ns: R117), 28 W of 366 ns, and per possible CPU 8 lines cleared (4 ns),
    // one initialised (1 ns), sched_group_alloc (150 ns) and
    // online_fair_sched_group (100 ns): 283 ns.
    let mkdir =
        |r: &output::VariantResult| r.series(Metric::Span, "mkdir/admin").unwrap().hist.max();
    assert_eq!(mkdir(&two), Dur(5_750 + 28 * 366 + 2 * 283));
    assert_eq!(mkdir(&eight) - mkdir(&two), Dur(6 * 283));
    // All of it under cgroup_mutex, nested in the parent's i_rwsem.
    let held = |r: &output::VariantResult| {
        r.series(Metric::Hold, "cgroup_mutex/lock/admin")
            .unwrap()
            .hist
            .max()
    };
    assert_eq!(held(&eight), mkdir(&eight));
}

#[test]
fn r113_r115_r117_v2_rmdir_kills_and_its_works_run_in_the_kernels_order_after_grace_periods() {
    // The rmdir: css_set_lock (the csets marked dead), 27 removals
    // under cgroup_mutex, css_set_lock again (the ancestors' counts,
    // R117), then two call_rcu (cpu's kill, bpf's): nothing waits for the
    // works.
    let text = v2_one(2);
    let r = run_text(&text, 1);
    assert_eq!(
        r.series(Metric::Span, "rmdir/admin").unwrap().hist.max(),
        Dur(27 * 250 + 2 * 100)
    );
    // css_set_lock: once in mkdir, twice in rmdir, once in the self
    // css's release work (R117).
    assert_eq!(
        r.counter("css_set_lock/acquisitions/site/css_set_walk"),
        Some(4)
    );
    // Every stage ran once: css_killed_work_fn, cpu's and the self css's
    // css_release_work_fn and css_free_rwork_fn, cgroup_bpf_release.
    for (wq, n) in [
        ("cgroup_offline_wq", 1),
        ("cgroup_release_wq", 2),
        ("cgroup_free_wq", 2),
        ("cgroup_bpf_destroy_wq", 1),
    ] {
        assert_eq!(r.counter(&format!("wq/{wq}/executed")), Some(n), "{wq}");
    }
    // Four callbacks: the two kills and the two rcu_works (R94, R95).
    assert_eq!(r.counter("rcu/callbacks"), Some(4));
    // What each stage holds cgroup_mutex for: offline 5 us; cpu's release
    // 5 us + task_group_lock's 50 ns; bpf's release 1 us; the self css's
    // release 5 us + the rstat flush, 70 ns a CPU (R99), + its
    // css_set_lock walk (R117).
    for (work, hold) in [
        ("css_offline", 5_000),
        ("css_release_cpu", 5_050),
        ("cgroup_bpf_release", 1_000),
        ("css_release", 5_000 + 2 * 70 + 100),
    ] {
        assert_eq!(
            r.series(Metric::Hold, &format!("cgroup_mutex/lock/{work}"))
                .unwrap()
                .hist
                .max(),
            Dur(hold),
            "{work}"
        );
    }
    // The order: step the run 100 us at a time and note when each
    // workqueue's count reaches each value.
    let c = crate::common::compile_text(&text);
    let mut w = experiments::world::World::new(&c, 1, 0, experiments::world::Limits::default());
    let mut when: Vec<(String, u64, u64)> = Vec::new();
    let mut t = 0;
    while t < 40_000_000 {
        t += 100_000;
        w.run_until(sim::SimTime(t), &mut |_| {}).unwrap();
        let now = w.clone().result();
        for wq in [
            "cgroup_offline_wq",
            "cgroup_release_wq",
            "cgroup_free_wq",
            "cgroup_bpf_destroy_wq",
        ] {
            let n = now.counter(&format!("wq/{wq}/executed")).unwrap_or(0);
            if n > 0 && !when.iter().any(|(q, k, _)| q == wq && *k == n) {
                when.push((wq.to_string(), n, t));
            }
        }
    }
    let at = |wq: &str, n: u64| {
        when.iter()
            .find(|(q, k, _)| q == wq && *k == n)
            .unwrap_or_else(|| panic!("{wq} {n}: {when:?}"))
            .2
    };
    // One grace period after the rmdir: cpu's offline, and cpu's release
    // right after it (it queued it); bpf's release one grace period later
    // (the model's grace period starts at the call_rcu that needs it, so
    // bpf's callback, queued just after, waits for the next one: R90,
    // R92); another grace period after cpu's release: cpu's free, then
    // the self css's release (the cgroup's last reference); a third: the
    // self css's free.
    let ms = 1_000_000;
    assert!(at("cgroup_offline_wq", 1) >= ms, "{when:?}");
    assert_eq!(at("cgroup_release_wq", 1), at("cgroup_offline_wq", 1));
    assert!(
        at("cgroup_bpf_destroy_wq", 1) >= at("cgroup_offline_wq", 1) + ms,
        "{when:?}"
    );
    assert!(
        at("cgroup_bpf_destroy_wq", 1) <= at("cgroup_free_wq", 1),
        "{when:?}"
    );
    assert!(
        at("cgroup_free_wq", 1) >= at("cgroup_release_wq", 1) + ms,
        "{when:?}"
    );
    assert_eq!(at("cgroup_release_wq", 2), at("cgroup_free_wq", 1));
    assert!(
        at("cgroup_free_wq", 2) >= at("cgroup_release_wq", 2) + ms,
        "{when:?}"
    );
    assert_eq!(
        when.iter().map(|w| w.2).max(),
        Some(at("cgroup_free_wq", 2)),
        "{when:?}"
    );
}

#[test]
fn r116_readdir_opens_walks_lists_twice_and_closes_without_the_open_file_mutex() {
    // `writer` holds kernfs_rwsem W from 0 to 20 us; `lister` lists at
    // 1 us: opendir takes its descriptor (50 ns) and its first
    // permission check (100 ns), then waits for kernfs_rwsem at the walk's
    // first revalidate until 20 us (R116, R59).
    let text = r#"
[scenario]
name = "readdir"
duration = "1ms"
include = ["kernfs"]
[tasks.writer]
count = 1
program = ["down_write kernfs_rwsem", "cpu 20us", "up_write kernfs_rwsem"]
[tasks.lister]
count = 1
program = ["sleep 1us", "call readdir"]
[machine]
profile = 'ideal'
"#;
    let r = run_text(text, 1);
    assert_eq!(
        r.series(Metric::Wait, "kernfs_rwsem/read/lister")
            .unwrap()
            .hist
            .max(),
        Dur(20_000 - 1_000 - 50 - 100)
    );
    // Per call site: the descriptor at open and close (R108); the walk's
    // 3 revalidates, the listing and the end pass under kernfs_rwsem R;
    // 3 + 1 permission checks; two getdents64 under the directory's
    // i_rwsem shared; no open-file mutex (a directory has no open).
    for (site, n) in [
        ("file_lock/acquisitions/site/fd_alloc", 1),
        ("file_lock/acquisitions/site/fd_close", 1),
        (
            "kernfs_rwsem/read_acquisitions/site/kernfs_dop_revalidate",
            3,
        ),
        ("kernfs_rwsem/read_acquisitions/site/kernfs_fop_readdir", 1),
        (
            "kernfs_rwsem/read_acquisitions/site/kernfs_fop_readdir_end",
            1,
        ),
        (
            "kernfs_iattr_rwsem/read_acquisitions/site/kernfs_iop_permission",
            4,
        ),
        ("i_rwsem/read_acquisitions/site/readdir", 2),
    ] {
        assert_eq!(r.counter(site), Some(n), "{site}");
    }
    assert_eq!(
        r.counter("kernfs_open_file_mutex/acquisitions")
            .unwrap_or(0),
        0
    );
    // The whole call: 50 + 3 x (100 + 200) + 100 + 30 x 150 + 150 + 30 ns
    // after the wait.
    assert_eq!(
        r.series(Metric::Span, "readdir/lister").unwrap().hist.max(),
        Dur(19_000 - 150 + 50 + 900 + 100 + 4_500 + 150 + 30)
    );
}
