//! `convoy sweep` and `convoy merge` as users run them: the same
//! `points.csv` bytes with any thread count, any sharding, and after a
//! kill and restart; merge refuses what does not belong together.

use crate::common::{convoy, convoy_env, convoy_status, TINY_SCENARIO as SCENARIO};
use std::path::{Path, PathBuf};

fn sweep_text(readers: &str, think_steps: usize, extra: &str) -> String {
    format!(
        r#"
[sweep]
name = "tiny-map"
scenario = "tiny.toml"
seed = 7
reps = 2
{extra}
[[param]]
key = "tasks.readers.count"
name = "readers"
values = {readers}

[[param]]
key = "dists.think.mean"
name = "think_us"
format = "{{}}us"
range = {{ from = 100, to = 2000, steps = {think_steps}, scale = "log" }}

[[figure]]
metric = "wait"
subject = "l/read/readers"
stat = "p99"

[[figure]]
metric = "wait"
subject = "l/write/writer"
stat = "max"

[[figure]]
metric = "counter"
subject = "l/read_acquisitions"
"#
    )
}

/// A temp dir holding `tiny.toml` and `sweep.toml`.
fn setup(sweep: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("tiny.toml"), SCENARIO).unwrap();
    std::fs::write(d.path().join("sweep.toml"), sweep).unwrap();
    d
}

fn csv(dir: &Path, out: &str) -> Vec<u8> {
    std::fs::read(dir.join(out).join("points.csv")).unwrap()
}

fn point_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("points"))
        .map(|rd| rd.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.retain(|p| !p.file_name().unwrap().to_str().unwrap().starts_with('.'));
    v.sort();
    v
}

#[test]
fn jobs_1_and_jobs_2_give_byte_identical_points_csv() {
    let d = setup(&sweep_text("[1, 3]", 3, ""));
    convoy(
        &["sweep", "sweep.toml", "--jobs", "1", "--out", "a"],
        d.path(),
    );
    convoy(
        &["sweep", "sweep.toml", "--jobs", "2", "--out", "b"],
        d.path(),
    );
    let a = csv(d.path(), "a");
    assert_eq!(a, csv(d.path(), "b"));
    let text = String::from_utf8(a).unwrap();
    // 6 points x 2 variants, a header, every figure filled.
    assert_eq!(text.lines().count(), 13, "{text}");
    assert!(text.starts_with(
        "point,seed,readers,think_us,variant,wait_l_read_readers_p99_ns,wait_l_read_readers_p99_ns_min,"
    ));
    assert!(!text.contains(",,"), "{text}");
}

#[test]
fn one_shard_equals_seven_shards_merged() {
    let d = setup(&sweep_text("[1, 2, 4]", 4, ""));
    convoy(
        &["sweep", "sweep.toml", "--jobs", "2", "--out", "whole"],
        d.path(),
    );
    let mut dirs = Vec::new();
    for i in 0..7 {
        let out = format!("shard{i}");
        if i == 3 {
            // The index from the environment, as a Slurm job array sets it.
            let args = ["sweep", "sweep.toml", "--shard-count", "7", "--out", &out];
            let o = convoy_env(&args, d.path(), &[("SLURM_ARRAY_TASK_ID", "3")]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        } else {
            let idx = i.to_string();
            convoy(
                &[
                    "sweep",
                    "sweep.toml",
                    "--shard-index",
                    &idx,
                    "--shard-count",
                    "7",
                    "--out",
                    &out,
                ],
                d.path(),
            );
        }
        dirs.push(out);
    }
    // 12 points over 7 shards: shard 3 holds points 3 and 10.
    assert_eq!(point_files(&d.path().join("shard3")).len(), 2);
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(String::as_str));
    args.extend(["--out", "merged"]);
    convoy(&args, d.path());
    assert_eq!(csv(d.path(), "whole"), csv(d.path(), "merged"));
    // A partial merge says what is missing and still writes the table.
    let o = convoy(&["merge", "shard0", "shard1", "--out", "part"], d.path());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("8 of 12 points missing"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn merge_refuses_another_sweep_seed_or_conflicting_duplicates() {
    let d = setup(&sweep_text("[1, 2]", 2, ""));
    std::fs::write(
        d.path().join("seed2.toml"),
        sweep_text("[1, 2]", 2, "").replace("seed = 7", "seed = 8"),
    )
    .unwrap();
    std::fs::write(d.path().join("other.toml"), sweep_text("[1, 3]", 2, "")).unwrap();
    let shard = |file: &str, i: &str, out: &str| {
        convoy(
            &[
                "sweep",
                file,
                "--shard-index",
                i,
                "--shard-count",
                "2",
                "--out",
                out,
            ],
            d.path(),
        )
    };
    shard("sweep.toml", "0", "a0");
    shard("seed2.toml", "1", "b1");
    shard("other.toml", "1", "c1");
    let refuse = |dirs: &[&str], want: &str| {
        let mut args = vec!["merge"];
        args.extend(dirs);
        args.extend(["--out", "m"]);
        let o = convoy_status(&args, d.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "expected `{want}` in: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            !d.path().join("m").exists(),
            "a refused merge writes nothing"
        );
    };
    refuse(&["a0", "b1"], "b1: holds results made with seed 8, not 7");
    refuse(
        &["a0", "c1"],
        "c1: holds results from another sweep file or scenario",
    );
    // A point file that differs from another shard's copy of that point.
    shard("sweep.toml", "0", "a0copy");
    let f = point_files(&d.path().join("a0copy"))[0].clone();
    let text = std::fs::read_to_string(&f).unwrap();
    let changed = text.replacen("\"pooled\": [\n        ", "\"pooled\": [\n        1", 1);
    assert_ne!(text, changed);
    std::fs::write(&f, changed).unwrap();
    refuse(&["a0", "a0copy"], "twice with different results");
    // Byte-identical duplicates are fine.
    shard("sweep.toml", "0", "a0again");
    convoy(&["merge", "a0", "a0again", "--out", "ok"], d.path());
    // Running a different sweep into a directory refuses too.
    let o = convoy_status(&["sweep", "seed2.toml", "--out", "a0"], d.path());
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bad_sweep_file_names_file_line_and_field_and_exits_2() {
    let cases = [
        (
            sweep_text("[1, 2]", 2, "").replace("scale = \"log\"", "scale = \"cubic\""),
            "sweep.toml:17: field `param[1].range.scale`: `cubic`",
        ),
        (
            sweep_text("[1, 2]", 2, "").replace("stat = \"p99\"", "stat = \"p98\""),
            "sweep.toml:22: field `figure[0].stat`",
        ),
        (
            sweep_text("[1, 2]", 2, "").replace("reps = 2", "reps = \"two\""),
            "sweep.toml:6: field `sweep.reps`",
        ),
        (
            sweep_text("[1, 2]", 2, "").replace("tasks.readers.count", "tasks.nobody.count"),
            "sweep.toml:9: field `param[0].key`: tasks.nobody.count=1: no table `tasks.nobody`",
        ),
        (
            sweep_text("[1, 2]", 2, "").replace("l/read/readers", "l/read/nobody"),
            "no wait subject `l/read/nobody`",
        ),
        // A value the scenario refuses, in the last point: found before
        // the first point runs.
        (
            sweep_text("[1, 2, -1]", 2, ""),
            "sweep.toml:9: field `param[0].key`: tasks.readers.count=-1",
        ),
        (
            sweep_text("[1, 2]", 2, "").replace("reps = 2", "reps = 4294967296"),
            "sweep.toml:6: field `sweep.reps`: 4294967296 replications per point is too many",
        ),
        (
            sweep_text("[1, 2]", 4_000_000, ""),
            "field `param[1].range.steps`: 4000000 values is too many",
        ),
    ];
    for (text, want) in cases {
        let d = setup(&text);
        let o = convoy_status(&["sweep", "sweep.toml", "--out", "o"], d.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "expected `{want}` in: {err}");
        assert!(!err.contains("panicked"), "{err}");
        // A figure's subject is known once a point has run; the rest
        // are found before any point runs.
        if !want.contains("no wait subject") {
            assert!(
                point_files(&d.path().join("o")).is_empty(),
                "{want}: ran a point"
            );
        }
    }
}

/// Kill -9 in the middle of a sweep, then the same command again: the
/// restart skips exactly the points whose files the killed run left (none
/// is computed twice; only those in flight at the kill are run again) and
/// the result is byte for byte that of an uninterrupted run.
#[test]
fn kill_9_and_restart_gives_the_uninterrupted_result() {
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, Instant};
    let d = setup(
        &sweep_text("[1, 2, 3, 4, 5, 6, 7, 8]", 5, "duration = \"10s\"")
            .replace("reps = 2", "reps = 1"),
    );
    let args = ["sweep", "sweep.toml", "--jobs", "2", "--out"];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_convoy"))
        .args(args)
        .arg("killed")
        .current_dir(d.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // A fixed pseudo-random moment: once 3 points are done, 0-150 ms more.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    let extra = Duration::from_millis(x % 150);
    let killed = d.path().join("killed");
    let start = Instant::now();
    while point_files(&killed).len() < 3 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended too early"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no points written"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(extra);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let left: Vec<(PathBuf, u64)> = point_files(&killed)
        .into_iter()
        .map(|p| {
            let ino = std::fs::metadata(&p).unwrap().ino();
            (p, ino)
        })
        .collect();
    let total = 40;
    assert!(
        left.len() >= 3 && left.len() < total,
        "{} points left",
        left.len()
    );
    assert!(!killed.join("points.csv").exists());

    let o = convoy(&[&args[..], &["killed"]].concat(), d.path());
    let err = String::from_utf8_lossy(&o.stderr);
    let want = format!(
        "skipped {} finished points, running {}",
        left.len(),
        total - left.len()
    );
    assert!(err.contains(&want), "expected `{want}` in: {err}");
    // The files the killed run finished are the same files, not rewritten.
    for (p, ino) in &left {
        assert_eq!(std::fs::metadata(p).unwrap().ino(), *ino, "{}", p.display());
    }
    convoy(&[&args[..], &["clean"]].concat(), d.path());
    assert_eq!(csv(d.path(), "killed"), csv(d.path(), "clean"));
    let names = |dir: &str| -> Vec<(String, Vec<u8>)> {
        point_files(&d.path().join(dir))
            .into_iter()
            .map(|p| {
                let n = p.file_name().unwrap().to_string_lossy().into_owned();
                (n, std::fs::read(&p).unwrap())
            })
            .collect()
    };
    assert_eq!(names("killed"), names("clean"));
}

/// Every built-in sweep reads, resolves at its first point, and has the
/// subjects its figures name (its first point run briefly).
#[test]
fn builtin_sweeps_resolve_and_name_existing_subjects() {
    use experiments::builtin::SWEEPS;
    use experiments::sweep::{parse, run, sweep_source};
    for (name, _) in SWEEPS {
        let mut spec = parse(&sweep_source(name).unwrap()).unwrap();
        spec.sets.push("scenario.duration=100ms".into());
        spec.reps = 1;
        let h = run::header(&spec).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let p =
            run::run_point(&spec, &h, &spec.points[0]).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(p.variants.len(), h.variants.len());
    }
}

#[test]
fn a_sweep_file_named_another_way_resumes_and_merges_as_the_same_sweep() {
    // `sweep.toml`, `./sweep.toml` and the absolute path name one file,
    // and so one scenario (`tiny.toml` relative to it): a shard run with
    // one spelling resumes and merges with shards run with the others.
    let d = setup(&sweep_text("[1, 3]", 1, ""));
    let abs = d.path().join("sweep.toml");
    let abs = abs.to_str().unwrap();
    let shard = |file: &str, i: &str, out: &str| {
        let args = [
            "sweep",
            file,
            "--shard-count",
            "3",
            "--shard-index",
            i,
            "--out",
            out,
        ];
        convoy(&args, d.path());
    };
    shard("sweep.toml", "0", "s0");
    shard("./sweep.toml", "1", "./s1");
    shard(abs, "2", "s2");
    let header = std::fs::read(d.path().join("s0/sweep.json")).unwrap();
    // Resumed under other spellings: nothing to run, the header kept.
    for file in ["./sweep.toml", abs] {
        let o = convoy(
            &[
                "sweep",
                file,
                "--out",
                "s0",
                "--shard-count",
                "3",
                "--shard-index",
                "0",
            ],
            d.path(),
        );
        assert!(String::from_utf8_lossy(&o.stdout).contains("ran 0 point(s)"));
    }
    assert_eq!(
        std::fs::read(d.path().join("s0/sweep.json")).unwrap(),
        header
    );
    convoy(
        &[
            "merge",
            "s0",
            "./s1",
            &d.path().join("s2").to_string_lossy(),
            "--out",
            "m",
        ],
        d.path(),
    );
    convoy(
        &["sweep", "sweep.toml", "--out", "whole", "--jobs", "1"],
        d.path(),
    );
    assert_eq!(csv(d.path(), "m"), csv(d.path(), "whole"));
}
