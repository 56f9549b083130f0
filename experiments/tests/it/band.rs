//! `convoy band`: the same band whatever the threads, a band that holds
//! its point, values held rather than varied (a constant, one the scenario
//! or a `--set` fixes, one the `[scenario]` table overrides, a cost the
//! machine does not have), and errors for what cannot be banded.

use crate::common::{convoy, convoy_status};
use experiments::runner;
use experiments::scenario::{ScenarioFile, Source};
use experiments::sweep::band::{choose, plan, Method};
use models::machine::{profiles, Cited};
use sim::Dur;
use std::fs;
use std::path::Path;

/// Four tasks taking a mutex and sleeping on two CPUs of the one-socket
/// server: wakeups onto idle CPUs, switches and slices all happen.
const SCENARIO: &str = r#"[scenario]
name = "band-t"
duration = "200ms"
cpus = 2
seed = 3

[machine]
profile = "server-1s"

[locks.m]
kind = "mutex"

[tasks.w]
count = 4
program = ["loop", "  mutex_lock m", "  cpu 20us", "  mutex_unlock m", "  sleep 50us", "end"]
"#;

fn write_scenario(dir: &Path, text: &str) -> String {
    let path = dir.join("s.toml");
    fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// band.csv's rows as fields, the header left out.
fn rows(dir: &Path) -> Vec<Vec<String>> {
    let text = fs::read_to_string(dir.join("band.csv")).unwrap();
    (text.lines().skip(1))
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// Every file under `dir`, relative, sorted, with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn band_is_the_same_with_one_thread_or_two_and_holds_its_point() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), SCENARIO);
    let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
    let out = convoy(
        &["band", &s, "--jobs", "1", "--out", one.to_str().unwrap()],
        tmp.path(),
    );
    convoy(
        &["band", &s, "--jobs", "2", "--out", two.to_str().unwrap()],
        tmp.path(),
    );
    let (a, b) = (tree(&one), tree(&two));
    let names: Vec<&str> = a.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"band.csv") && names.contains(&"band.json"));
    assert!(names.contains(&"runs/point/summary.csv"), "{names:?}");
    assert!(names.contains(&"runs/hz-low/manifest.json"), "{names:?}");
    assert_eq!(a, b, "--jobs 1 and --jobs 2 write the same files");

    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("band-t on server-1s"), "{table}");
    assert!(table.lines().all(|l| l.chars().count() <= 100), "{table}");

    let rows = rows(&one);
    assert_eq!(
        rows.len(),
        5,
        "count, mean, p99, p999 and max of the span-less scenario's wait"
    );
    for r in &rows {
        let n = |i: usize| r[i].parse::<u64>().unwrap();
        let (point, low, high) = (n(4), n(5), n(6));
        assert!(low <= point && point <= high, "{r:?}");
        if !r[7].is_empty() {
            // The most sensitive input's two ends lie in the band.
            for v in [n(8), n(9)] {
                assert!(low <= v && v <= high, "{r:?}");
            }
        }
    }
    assert!(
        rows.iter().any(|r| r[5] != r[6]),
        "some input moves some statistic: {rows:?}"
    );

    // The point is the scenario's own run: same seed, same results.
    let run = tmp.path().join("run");
    convoy(&["run", &s, "--out", run.to_str().unwrap()], tmp.path());
    assert_eq!(
        fs::read(run.join("summary.csv")).unwrap(),
        fs::read(one.join("runs/point/summary.csv")).unwrap()
    );
}

#[test]
fn values_the_scenario_fixes_or_that_change_nothing_are_held() {
    let tmp = tempfile::tempdir().unwrap();
    let text = SCENARIO.replace("seed = 3", "seed = 3\nhz = 1000");
    let s = write_scenario(tmp.path(), &text);
    let p = plan(
        &s,
        None,
        (vec!["machine.switch_cost=2us".into()], Vec::new()),
        None,
        1,
        Method::OneAtATime,
    )
    .unwrap();
    let varied: Vec<&str> = p.varied.iter().map(|i| i.field.as_str()).collect();
    let held = |f: &str| {
        (p.held.iter().find(|h| h.field == f))
            .unwrap_or_else(|| panic!("{f} is not held: {varied:?}"))
            .why
            .clone()
    };
    assert!(held("switch_cost").starts_with("set by [machine] or a --set"));
    // The value shown is the one the run uses, the profile's beside it.
    let sc = p.held.iter().find(|h| h.field == "switch_cost").unwrap();
    assert_eq!(sc.value, "2us");
    assert!(sc.why.contains("in place of the profile's"), "{}", sc.why);
    assert!(held("hz").starts_with("no effect"), "scenario.hz wins");
    assert!(held("line_remote").contains("one socket"));
    assert_eq!(
        varied,
        [
            "preemption",
            "base_slice",
            "ipi",
            "wake_send",
            "line_local",
            "line_smt",
            "line_socket",
            "tick_cost",
            "irq_rate",
            "irq_cost"
        ]
    );
    // Neither end of a held value runs; an end equal to the cited value is
    // the point itself.
    let runs: Vec<&str> = p.runs.iter().map(|r| r.name.as_str()).collect();
    assert!(!runs
        .iter()
        .any(|r| r.starts_with("switch_cost") || r.starts_with("hz")));
    assert!(runs.contains(&"base_slice-high") && !runs.contains(&"base_slice-low"));
    assert!(
        p.spec.points.iter().all(|pt| pt.seed == 3),
        "one seed for all"
    );
}

#[test]
fn a_value_whose_low_is_its_high_is_not_varied() {
    let file = ScenarioFile::new(Source::new("t.toml", SCENARIO)).unwrap();
    let prepared = runner::prepare(&file, &[]).unwrap();
    let mut profile = profiles::by_name("server-1s").unwrap().clone();
    profile.ipi = Cited::exact(Dur(1_000), "a constant, for the test");
    let (varied, held) = choose(&profile, &prepared, false, |_| Ok(true)).unwrap();
    assert!(varied.iter().all(|i| i.field != "ipi"));
    let ipi = held.iter().find(|h| h.field == "ipi").unwrap();
    assert!(ipi.why.starts_with("exact"), "{}", ipi.why);
    assert!(varied.iter().any(|i| i.field == "switch_cost"));
}

#[test]
fn a_guest_band_varies_the_steal_fraction_and_the_episode_length_only_beside_it() {
    let text = SCENARIO.replace("\"server-1s\"", "\"kvm-guest\"");
    let file = ScenarioFile::new(Source::new("t.toml", &text)).unwrap();
    let prepared = runner::prepare(&file, &[]).unwrap();
    let profile = profiles::by_name("kvm-guest").unwrap();
    let fields = |joint| {
        let (varied, held) = choose(profile, &prepared, joint, |_| Ok(true)).unwrap();
        let varied: Vec<String> = varied.into_iter().map(|i| i.field).collect();
        (varied, held)
    };
    // One at a time: the fraction moves from its cited 0 to 12%; the
    // episode length alone, at no steal, changes nothing.
    let (varied, held) = fields(false);
    assert!(varied.iter().any(|f| f == "steal_fraction"), "{varied:?}");
    let episode = held.iter().find(|h| h.field == "steal_episode").unwrap();
    assert!(episode.why.contains("nothing is stolen"), "{}", episode.why);
    // Sampled together, both move.
    let (varied, _) = fields(true);
    assert!(["steal_fraction", "steal_episode"]
        .iter()
        .all(|f| varied.iter().any(|v| v == f)));
    let tmp = tempfile::tempdir().unwrap();
    let p = plan(
        &write_scenario(tmp.path(), &text),
        None,
        (vec![], Vec::new()),
        None,
        1,
        Method::OneAtATime,
    )
    .unwrap();
    let high = p
        .runs
        .iter()
        .position(|r| r.name == "steal_fraction-high")
        .unwrap();
    assert!(
        p.spec.points[high]
            .sets
            .iter()
            .any(|s| s == "machine.steal_fraction=0.12"),
        "{:?}",
        p.spec.points[high].sets
    );
}

#[test]
fn a_latin_hypercube_band_runs_its_samples_beside_the_point() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), SCENARIO);
    let out = tmp.path().join("lhs");
    convoy(
        &[
            "band",
            &s,
            "--lhs",
            "3",
            "--reps",
            "2",
            "--jobs",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    let mut runs: Vec<String> = fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    assert_eq!(runs, ["point", "sample-1", "sample-2", "sample-3"]);
    for r in rows(&out) {
        let n = |i: usize| r[i].parse::<u64>().unwrap();
        assert!(n(5) <= n(4) && n(4) <= n(6), "{r:?}");
    }
    let json = fs::read_to_string(out.join("band.json")).unwrap();
    assert!(json.contains("\"method\": \"latin-hypercube\""));
    assert!(json.contains("\"replications\": 2"));
}

/// `SCENARIO` with its CPU time a cost that cites a range.
fn with_cost_range(machine: &str) -> String {
    SCENARIO
        .replace("\"server-1s\"", machine)
        .replace("cpu 20us", "cpu $hold")
        + "\n[dists.hold]\ndist = \"const\"\nvalue = \"20us\"\nrange = [\"10us\", \"40us\"]\n\
           source = \"the test's\"\n"
}

#[test]
fn a_cost_that_cites_a_range_is_varied_after_the_machine_and_held_when_set() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), &with_cost_range("\"server-1s\""));
    let p = plan(&s, None, (vec![], Vec::new()), None, 1, Method::OneAtATime).unwrap();
    let hold = p.varied.last().unwrap();
    assert_eq!(
        (hold.field.as_str(), hold.key.as_str(), hold.source.as_str()),
        ("dists.hold", "dists.hold.value", "the test's")
    );
    assert_eq!(
        (hold.cited.low.as_str(), hold.cited.high.as_str()),
        ("10us", "40us")
    );
    let high = p
        .runs
        .iter()
        .position(|r| r.name == "dists.hold-high")
        .unwrap();
    assert!(
        p.spec.points[high]
            .sets
            .contains(&"dists.hold.value=40us".to_string()),
        "{:?}",
        p.spec.points[high].sets
    );
    assert!(p.runs.iter().any(|r| r.name == "dists.hold-low"));

    let p = plan(
        &s,
        None,
        (vec!["dists.hold.value=30us".into()], Vec::new()),
        None,
        1,
        Method::OneAtATime,
    )
    .unwrap();
    assert!(p.varied.iter().all(|i| i.field != "dists.hold"));
    let held = p.held.iter().find(|h| h.field == "dists.hold").unwrap();
    assert_eq!(held.value, "30us");
    assert!(held.why.starts_with("set by a --set"), "{}", held.why);
}

#[test]
fn on_the_ideal_machine_a_band_varies_the_costs_that_cite_a_range() {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_scenario(tmp.path(), &with_cost_range("\"ideal\""));
    let out = tmp.path().join("b");
    let o = convoy(&["band", &s, "--out", out.to_str().unwrap()], tmp.path());
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.contains("dists.hold  20us: 10us .. 40us"), "{table}");
    let json = fs::read_to_string(out.join("band.json")).unwrap();
    assert!(json.contains("\"source\": \"the test's\""), "{json}");
    let runs: Vec<String> = fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(runs.len(), 3, "the point and the cost's two ends: {runs:?}");
    // Four tasks holding the mutex longer wait longer: the cost moves the
    // mean wait, and it is the most sensitive input.
    let mean = rows(&out).into_iter().find(|r| r[3] == "mean").unwrap();
    let n = |i: usize| mean[i].parse::<u64>().unwrap();
    assert!(n(5) < n(4) && n(4) < n(6), "{mean:?}");
    assert_eq!(mean[7], "dists.hold");
}

#[test]
fn what_cannot_be_banded_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let o = convoy_status(&["band", "no-such-experiment"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot read scenario file"), "{err}");
    assert!(err.contains("built-in experiments are"), "{err}");

    // bench-convoy names the ideal machine.
    let o = convoy_status(&["band", "bench-convoy"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("nothing to vary"), "{err}");
    assert!(err.contains("--machine"), "{err}");

    let s = write_scenario(tmp.path(), SCENARIO);
    let o = convoy_status(&["band", &s, "--lhs", "0"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--lhs 0"));
    assert!(!tmp.path().join("out").exists(), "nothing written");
}
