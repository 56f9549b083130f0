//! The `[machine]` table, `--machine` and `convoy machines`: a profile
//! and its overrides resolve into the compiled machine, `[scenario]`
//! fields win over it, a real profile gives the kernel's scheduler
//! defaults, the ideal one today's, and bad input names file, line and
//! field.

use crate::common::{compile_error, compile_text, convoy, convoy_status};
use experiments::program::WakePlacement;
use experiments::scenario::{compile, ScenarioFile, Source};
use models::machine::{Distance, Preemption};
use sim::Dur;

/// A scenario of one task group with `header` added to `[scenario]` and
/// `tail` after it (a `[machine]` table).
fn scenario(header: &str, tail: &str) -> String {
    format!(
        r#"[scenario]
name = "m"
duration = "10ms"
{header}

[locks.l]
kind = "mutex"

[tasks.a]
count = 2
program = ["loop", "  mutex_lock l", "  cpu 10us", "  mutex_unlock l", "  sleep 50us", "end"]
{tail}"#
    )
}

/// The base variant of `text` compiled with `--set`s and `--machine`.
fn compile_with(
    text: &str,
    sets: &[&str],
    machine: Option<&str>,
) -> Result<experiments::program::Compiled, String> {
    let mut src = Source::new("t.toml", text);
    src.sets = sets.iter().map(|s| s.to_string()).collect();
    src.machine = machine.map(str::to_string);
    let file = ScenarioFile::new(src).map_err(|e| e.to_string())?;
    let loaded = file.load(&file.base).map_err(|e| e.to_string())?;
    compile(&file.source, &loaded.doc, &file.base).map_err(|e| e.to_string())
}

#[test]
fn no_machine_table_is_the_default_profile_a_machine_that_exists() {
    let c = compile_text(&scenario("cpus = 4", ""));
    assert_eq!(
        c.machine.profile,
        experiments::scenario::compile::DEFAULT_PROFILE
    );
    assert_eq!(c.machine.profile, "server-1s");
    assert!(!c.machine.is_ideal());
    assert_eq!(c.cpus, Some(4));
    assert_eq!(c.hz, 250);
    assert!(c.voluntary && !c.preempt_full, "PREEMPT_VOLUNTARY");
    assert!(c.percpu_runqueues);
    assert_eq!(c.wake_placement, WakePlacement::Eevdf);
    // 0.70 ms x (1 + ilog2(4)).
    assert_eq!(c.timeslice, Some(Dur(2_100_000)));
    assert!(c.switch_cost > Dur::ZERO);
    // No CPU count: the profile's.
    assert_eq!(compile_text(&scenario("", "")).cpus, Some(32));
}

#[test]
fn the_ideal_machine_keeps_the_defaults_of_the_models_logic() {
    let c = compile_text(&scenario("cpus = 4", "[machine]\nprofile = \"ideal\"\n"));
    assert_eq!(c.machine.profile, "ideal");
    assert!(c.machine.is_ideal());
    assert_eq!(c.cpus, Some(4));
    assert_eq!(c.hz, 250);
    assert!(!c.preempt_full && !c.voluntary);
    assert!(!c.percpu_runqueues);
    assert_eq!(c.wake_placement, WakePlacement::Fifo);
    assert_eq!(c.timeslice, None);
    assert_eq!(c.switch_cost, Dur::ZERO);
    // Unlimited CPUs stay the default there.
    assert_eq!(
        compile_text(&scenario("", "[machine]\nprofile = \"ideal\"\n")).cpus,
        None
    );
}

#[test]
fn a_real_profile_gives_per_cpu_eevdf_queues_its_slice_hz_and_switch_cost() {
    let c = compile_text(&scenario(
        "cpus = 8",
        "[machine]\nprofile = \"server-2s\"\n",
    ));
    assert_eq!(c.machine.profile, "server-2s");
    assert_eq!(c.cpus, Some(8));
    assert!(c.percpu_runqueues);
    assert_eq!(c.wake_placement, WakePlacement::Eevdf);
    // 0.70 ms x (1 + ilog2(8)).
    assert_eq!(c.timeslice, Some(Dur(2_800_000)));
    assert_eq!(c.machine.base_slice, Dur(2_800_000));
    assert_eq!(c.hz, 250);
    assert!(c.voluntary && !c.preempt_full, "PREEMPT_VOLUNTARY");
    assert_eq!(c.switch_cost, Dur(2_400));
    // 8 CPUs cut from 2 x 32 x 2: one socket of 4 cores x 2 threads.
    assert_eq!(c.machine.topology.cpus(), 8);
    assert_eq!(c.machine.topology.threads_per_core, 2);
}

#[test]
fn a_real_profile_without_cpus_has_its_own_cpus() {
    let c = compile_text(&scenario("", "[machine]\nprofile = \"server-1s\"\n"));
    assert_eq!(c.cpus, Some(32));
    let c = compile_text(&scenario(
        "",
        "[machine]\nprofile = \"server-2s\"\nsockets = 1\n",
    ));
    assert_eq!(c.cpus, Some(64), "the overridden topology's CPUs");
    // A small guest: the slice scales with its 2 vCPUs.
    let c = compile_text(&scenario(
        "cpus = 2",
        "[machine]\nprofile = \"kvm-guest\"\n",
    ));
    assert_eq!(c.timeslice, Some(Dur(1_400_000)));
}

#[test]
fn overrides_replace_the_profiles_values() {
    let c = compile_text(&scenario(
        "cpus = 16",
        r#"[machine]
profile = "kvm-guest"
sockets = 2
cores_per_socket = 4
threads_per_core = 2
hz = 1000
preemption = "full"
base_slice = "750us"
switch_cost = "3us"
ipi = "2us"
line_local = "2ns"
line_smt = "9ns"
line_socket = "60ns"
line_remote = "140ns"
tick_cost = "5us"
irq_rate = 1000
irq_cost = "20us"
guest_ipi = "1.6us"
host_halt_poll = "50us"
host_wake = "8us"
steal_fraction = 0.05
steal_episode = "2ms"
"#,
    ));
    let m = &c.machine;
    assert_eq!(
        (
            m.topology.sockets,
            m.topology.cores_per_socket,
            m.topology.threads_per_core
        ),
        (2, 4, 2)
    );
    assert_eq!(
        m.topology.distance(models::CpuId(0), models::CpuId(4)),
        Distance::Remote
    );
    assert_eq!((m.hz, c.hz), (1000, 1000));
    assert_eq!(m.preemption, Preemption::Full);
    assert!(c.preempt_full);
    assert_eq!(m.base_slice, Dur(3_000_000), "0.75 ms x 4");
    assert_eq!(c.switch_cost, Dur(3_000));
    assert_eq!(m.ipi, Dur(2_000));
    assert_eq!(
        (m.lines.local, m.lines.smt, m.lines.socket, m.lines.remote),
        (Dur(2), Dur(9), Dur(60), Dur(140))
    );
    let i = &m.interrupts;
    assert_eq!(
        (i.tick, i.irq_rate, i.irq),
        (Dur(5_000), 1000.0, Dur(20_000))
    );
    let g = m.guest.as_ref().unwrap();
    assert_eq!(g.ipi, Dur(1_600));
    assert_eq!(g.host_halt_poll, Dur(50_000));
    assert_eq!(g.host_wake, Dur(8_000));
    assert_eq!(g.steal_fraction, 0.05);
    assert_eq!(g.steal_episode, Dur(2_000_000));
}

#[test]
fn scenario_fields_win_over_the_machine() {
    let c = compile_text(&scenario(
        r#"cpus = 8
hz = 1000
preemption = "none"
timeslice = "3ms"
runqueue = "shared"
wake_placement = "first"
switch_cost = "1us""#,
        "[machine]\nprofile = \"server-2s\"\nhz = 300\n",
    ));
    assert_eq!(c.hz, 1000);
    assert!(!c.voluntary && !c.preempt_full);
    assert_eq!(c.timeslice, Some(Dur(3_000_000)));
    assert!(!c.percpu_runqueues);
    assert_eq!(c.wake_placement, WakePlacement::First);
    assert_eq!(c.switch_cost, Dur(1_000));
    // The machine says what the run used.
    assert_eq!(c.machine.hz, 1000);
    assert_eq!(c.machine.preemption, Preemption::None);
    assert_eq!(c.machine.base_slice, Dur(3_000_000));
    assert_eq!(c.machine.switch_cost, Dur(1_000));
    // cpu_speed scales the machine's switch cost as it scales the scenario's.
    let c = compile_text(&scenario(
        "cpus = 8\ncpu_speed = 2.0",
        "[machine]\nprofile = \"server-2s\"\n",
    ));
    assert_eq!(c.switch_cost, Dur(1_200));
}

#[test]
fn unlimited_cpus_on_a_real_profile_keep_one_queue_and_no_switches() {
    let c = compile_text(&scenario(
        "cpus = \"unlimited\"",
        "[machine]\nprofile = \"server-2s\"\n",
    ));
    assert_eq!(c.cpus, None);
    assert!(!c.percpu_runqueues);
    assert_eq!(c.wake_placement, WakePlacement::Fifo);
    assert_eq!(c.timeslice, None);
    assert_eq!(c.switch_cost, Dur::ZERO);
    assert!(c.voluntary, "HZ and preemption still come from the machine");
}

#[test]
fn preempt_placement_on_a_real_profile_says_the_queues_are_the_machines() {
    let e = compile_error(&scenario(
        "cpus = 4\nwake_placement = \"preempt\"",
        "[machine]\nprofile = \"server-1s\"\n",
    ));
    assert!(
        e.starts_with("t.toml:5: field `scenario.wake_placement`"),
        "{e}"
    );
    assert!(
        e.contains("machine `server-1s` has one run queue per CPU"),
        "{e}"
    );
    let c = compile_text(&scenario(
        "cpus = 4\nwake_placement = \"preempt\"\nrunqueue = \"shared\"",
        "[machine]\nprofile = \"server-1s\"\n",
    ));
    assert_eq!(c.wake_placement, WakePlacement::Preempt);
}

#[test]
fn bad_machine_tables_name_file_line_and_field() {
    let at = |tail: &str| compile_error(&scenario("cpus = 4", tail));
    // The table starts on line 12.
    let e = at("[machine]\nprofile = \"server-2\"\n");
    assert_eq!(
        e,
        "t.toml:13: field `machine.profile`: unknown machine profile `server-2`; expected one of \
         ideal, server-2s, server-1s, kvm-guest (did you mean `server-2s`?) (`convoy machines` \
         lists them)"
    );
    let e = at("[machine]\nprofile = \"laptop\"\n");
    assert!(!e.contains("did you mean"), "{e}");
    let e = at("[machine]\nprofile = \"server-2s\"\nline_sockets = \"50ns\"\n");
    assert!(
        e.starts_with("t.toml:14: field `machine.line_sockets`: unknown field `line_sockets`"),
        "{e}"
    );
    assert!(e.contains("line_socket"), "the fields are listed: {e}");
    let e = at("[machine]\nprofile = \"server-2s\"\nsteal_fraction = 0.1\n");
    assert_eq!(
        e,
        "t.toml:14: field `machine.steal_fraction`: `steal_fraction` is a virtual machine's \
         value; profile `server-2s` is bare metal (guest profiles: kvm-guest)"
    );
    let e = at("[machine]\nprofile = \"server-1s\"\nhost_wake = \"5us\"\n");
    assert!(
        e.starts_with("t.toml:14: field `machine.host_wake`: "),
        "{e}"
    );
    let e = at("[machine]\nprofile = \"server-1s\"\nline_smt = \"8\"\n");
    assert!(
        e.starts_with("t.toml:14: field `machine.line_smt`: "),
        "{e}"
    );
    assert!(e.contains("has no unit"), "{e}");
    let e = at("[machine]\nline_remote = \"2s\"\n");
    assert!(
        e.starts_with("t.toml:13: field `machine.line_remote`: "),
        "{e}"
    );
    assert!(e.contains("expected at most 1s"), "{e}");
    let e = at("[machine]\nwake_send = \"-1us\"\n");
    assert!(
        e.starts_with("t.toml:13: field `machine.wake_send`: "),
        "{e}"
    );
    let e = at("[machine]\nprofile = \"kvm-guest\"\nsteal_fraction = 1.0\n");
    assert!(
        e.starts_with("t.toml:14: field `machine.steal_fraction`: 1 is out of range"),
        "{e}"
    );
    let e = at("[machine]\nhz = 200\n");
    assert!(
        e.starts_with("t.toml:13: field `machine.hz`: HZ 200 is not a kernel choice"),
        "{e}"
    );
    let e = at("[machine]\nthreads_per_core = 0\n");
    assert!(
        e.starts_with("t.toml:13: field `machine.threads_per_core`: 0 is out of range"),
        "{e}"
    );
    let e = at("[machine]\npreemption = \"lazy\"\n");
    assert!(
        e.starts_with("t.toml:13: field `machine.preemption`: unknown preemption model"),
        "{e}"
    );
    let e = at("[machine]\nbase_slice = \"0ns\"\n");
    assert!(
        e.starts_with("t.toml:13: field `machine.base_slice`: "),
        "{e}"
    );
    // Interrupts (R125): a tick that fills its period, a rate out of
    // range, interrupts that fill the CPU.
    let e = at("[machine]\nhz = 250\ntick_cost = \"5ms\"\n");
    assert_eq!(
        e,
        "t.toml:14: field `machine.tick_cost`: a tick of 5ms leaves no time between ticks \
         at HZ 250 (a period of 4ms)"
    );
    let e = at("[machine]\nirq_rate = -1\n");
    assert_eq!(
        e,
        "t.toml:13: field `machine.irq_rate`: -1 is out of range; expected interrupts a \
         second on one CPU, from 0 to 1000000"
    );
    let e = at("[machine]\nirq_rate = 200000\nirq_cost = \"10us\"\n");
    assert_eq!(
        e,
        "t.toml:13: field `machine.irq_rate`: 200000 interrupts a second of 10us each take \
         all of a CPU's time; expected less"
    );
    // The check is at the run's HZ: a 5 ms tick fits HZ 100's 10 ms.
    compile_text(&scenario(
        "cpus = 4\nhz = 100",
        "[machine]\nhz = 250\ntick_cost = \"5ms\"\n",
    ));
    let e = compile_error(&scenario(
        "cpus = 4\nhz = 1000",
        "[machine]\ntick_cost = \"2ms\"\n",
    ));
    assert!(
        e.contains(
            "field `scenario.hz`: at HZ 1000 the machine's tick of 2ms leaves no time between \
             ticks (a period of 1ms)"
        ),
        "{e}"
    );
    let e = at("[machine]\nirq_cost = \"1s\"\n");
    assert!(
        e.starts_with("t.toml:13: field `machine.irq_cost`: 35 interrupts a second of 1s"),
        "{e}"
    );
}

#[test]
fn set_machine_fields_works_without_a_table_and_over_one() {
    let text = scenario("cpus = 4", "");
    let c = compile_with(
        &text,
        &[
            "machine.profile=server-2s",
            "machine.line_socket=60ns",
            "machine.hz=1000",
        ],
        None,
    )
    .unwrap();
    assert_eq!(c.machine.profile, "server-2s");
    assert_eq!(c.machine.lines.socket, Dur(60));
    assert_eq!(c.hz, 1000);
    let c = compile_with(&text, &["machine.line_socket=60ns"], None).unwrap();
    assert_eq!(c.machine.profile, "server-1s");
    assert_eq!(c.machine.lines.socket, Dur(60));
    let guest = scenario("cpus = 4", "[machine]\nprofile = \"kvm-guest\"\n");
    let c = compile_with(&guest, &["machine.steal_fraction=0"], None).unwrap();
    assert_eq!(c.machine.guest.unwrap().steal_fraction, 0.0);
    let e = compile_with(&text, &["machine.steal_fraction=0.1"], None).unwrap_err();
    assert!(
        e.starts_with("--set machine.steal_fraction=0.1: field `machine.steal_fraction`: "),
        "{e}"
    );
    let e = compile_with(&text, &["machine.sockets=x"], None).unwrap_err();
    assert!(e.contains("machine.sockets"), "{e}");
}

#[test]
fn dash_machine_replaces_the_table_and_sets_still_apply() {
    let text = scenario(
        "cpus = 4",
        "[machine]\nprofile = \"kvm-guest\"\nsteal_fraction = 0.05\nline_socket = \"60ns\"\n",
    );
    // The guest's overrides go with its table: no error for a guest field
    // on bare metal, and the new profile's own values.
    let c = compile_with(&text, &[], Some("server-1s")).unwrap();
    assert_eq!(c.machine.profile, "server-1s");
    assert_eq!(c.machine.lines.socket, Dur(48));
    assert!(c.machine.guest.is_none());
    let c = compile_with(&text, &["machine.line_socket=70ns"], Some("server-1s")).unwrap();
    assert_eq!(c.machine.lines.socket, Dur(70));
    // Also over a variant's overlay of the table.
    let text = format!(
        "{}\n[variants.big.machine]\nprofile = \"server-2s\"\n",
        scenario("cpus = 4", "")
    );
    let mut src = Source::new("t.toml", text);
    src.machine = Some("kvm-guest".into());
    let file = ScenarioFile::new(src).unwrap();
    let loaded = file.load("big").unwrap();
    let c = compile(&file.source, &loaded.doc, "big").unwrap();
    assert_eq!(c.machine.profile, "kvm-guest");
    let e = compile_with(&scenario("", ""), &[], Some("kvm")).unwrap_err();
    assert!(
        e.starts_with("--machine kvm: field `machine.profile`: unknown machine profile `kvm`"),
        "{e}"
    );
}

#[test]
fn every_profile_runs_a_builtin_and_the_manifest_records_it() {
    let d = tempfile::tempdir().unwrap();
    for p in models::machine::profiles::PROFILES {
        let out = format!("o-{}", p.name);
        convoy(
            &[
                "run",
                "writer-parks-readers",
                "--duration",
                "50ms",
                "--machine",
                p.name,
                "--out",
                &out,
            ],
            d.path(),
        );
        let text = std::fs::read_to_string(d.path().join(&out).join("manifest.json")).unwrap();
        let m: serde_json::Value = serde_json::from_str(&text).unwrap();
        let machine = &m["machine"];
        assert_eq!(machine["profile"], p.name);
        assert_eq!(machine["cpus"], 8, "the scenario's CPUs");
        assert_eq!(machine["base_slice_ns"], 2_800_000);
        assert!(machine["line_socket_ns"].is_u64());
        assert_eq!(machine["tick_cost_ns"], p.interrupts.tick.value.0);
        assert_eq!(machine["irq_rate"], p.interrupts.irq_rate.value);
        assert_eq!(machine["irq_cost_ns"], p.interrupts.irq.value.0);
        assert_eq!(machine["guest"].is_null(), p.guest.is_none());
        let resolved = m["resolved_scenarios"][0]["toml"].as_str().unwrap();
        assert!(
            resolved.contains(&format!("[machine]\nprofile = \"{}\"", p.name)),
            "{resolved}"
        );
        assert!(m["resolved_scenarios"][0].get("machine").is_none());
    }
}

#[test]
fn the_manifest_names_a_variants_own_machine() {
    let d = tempfile::tempdir().unwrap();
    let text = format!(
        "{}\n[variants.guest.machine]\nprofile = \"kvm-guest\"\n",
        scenario("cpus = 2", "[machine]\nprofile = \"server-1s\"\n")
    );
    std::fs::write(d.path().join("m.toml"), text).unwrap();
    convoy(&["run", "m.toml", "--out", "o"], d.path());
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("o/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(m["machine"]["profile"], "server-1s");
    assert_eq!(m["machine"]["preemption"], "voluntary");
    assert_eq!(m["machine"]["switch_cost_ns"], 2_400);
    assert!(m["resolved_scenarios"][0].get("machine").is_none());
    assert_eq!(
        m["resolved_scenarios"][1]["machine"]["profile"],
        "kvm-guest"
    );
    assert_eq!(
        m["resolved_scenarios"][1]["machine"]["guest"]["host_halt_poll_ns"],
        200_000
    );
}

#[test]
fn an_unknown_machine_on_the_command_line_exits_2_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let o = convoy_status(
        &[
            "run",
            "writer-parks-readers",
            "--machine",
            "server-3s",
            "--out",
            "o",
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "--machine server-3s: field `machine.profile`: unknown machine profile `server-3s`"
        ),
        "{err}"
    );
    assert!(err.contains("did you mean `server-2s`"), "{err}");
    assert!(!d.path().join("o").exists());
    let o = convoy_status(&["machines", "server-3s"], d.path());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("did you mean `server-2s`"), "{err}");
}

#[test]
fn machine_flag_is_taken_by_bench_validate_and_check() {
    let d = tempfile::tempdir().unwrap();
    let o = convoy(
        &[
            "bench",
            "--duration",
            "20ms",
            "--readers",
            "4",
            "--machine",
            "kvm-guest",
        ],
        d.path(),
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("acquisitions_per_sec="));
    let o = convoy_status(
        &[
            "validate",
            "--experiment",
            "rmdir-cost",
            "--duration",
            "20ms",
            "--machine",
            "server-1s",
        ],
        d.path(),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("with --machine server-1s: not the shipped calibration"),
        "not the shipped calibration: {out}"
    );
    let o = convoy_status(
        &[
            "check",
            "lookup-holds-625ms",
            "--machine",
            "laptop",
            "--out",
            "c",
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--machine laptop"));
}

#[test]
fn a_sweep_varies_a_machine_value() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("m.toml"), scenario("cpus = 2", "")).unwrap();
    std::fs::write(
        d.path().join("s.toml"),
        r#"[sweep]
name = "lines"
scenario = "m.toml"
seed = 1

[[param]]
key = "machine.line_socket"
name = "line_socket_ns"
format = "{}ns"
range = { from = 44, to = 56, steps = 3 }

[[figure]]
metric = "wait"
subject = "l/lock/a"
stat = "max"
"#,
    )
    .unwrap();
    let spec = experiments::sweep::parse(
        &experiments::sweep::sweep_source(d.path().join("s.toml").to_str().unwrap()).unwrap(),
    )
    .unwrap();
    let mut lines = Vec::new();
    for p in &spec.points {
        let file = experiments::sweep::run::scenario_file(&spec, p).unwrap();
        let prepared = experiments::runner::prepare(&file, &[]).unwrap();
        lines.push(prepared[0].0.machine.lines.socket.ns());
    }
    assert_eq!(lines, [44, 50, 56]);
    convoy(
        &[
            "sweep",
            "s.toml",
            "--out",
            "o",
            "--machine",
            "server-2s",
            "--jobs",
            "1",
        ],
        d.path(),
    );
    let points = std::fs::read_to_string(d.path().join("o/points.csv")).unwrap();
    assert_eq!(points.lines().count(), 4, "{points}");
    // The sweep's identity holds the machine: another one is refused.
    let o = convoy_status(&["sweep", "s.toml", "--out", "o", "--jobs", "1"], d.path());
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn convoy_machines_lists_the_profiles_and_shows_each() {
    let d = tempfile::tempdir().unwrap();
    let o = convoy(&["machines"], d.path());
    insta::assert_snapshot!("machines", String::from_utf8(o.stdout).unwrap());
    for p in models::machine::profiles::PROFILES {
        let o = convoy(&["machines", p.name], d.path());
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(
            text.lines().all(|l| l.chars().count() <= 80),
            "{} has a line over 80 columns:\n{text}",
            p.name
        );
        insta::assert_snapshot!(format!("machines-{}", p.name), text);
    }
}

/// Every built-in runs on every machine profile (`--machine NAME`), each
/// for a short while: a profile's topology sized to the scenario's CPUs,
/// its wake path and its lines on every model a built-in uses.
#[test]
fn every_builtin_runs_on_every_profile() {
    use experiments::builtin::{self, BUILTINS};
    use experiments::runner::{self, RunOptions};
    use experiments::scenario::ScenarioFile;
    for b in BUILTINS {
        for p in models::machine::profiles::PROFILES {
            let mut src = builtin::source(b.name, &["scenario.duration=5ms".into()]).unwrap();
            src.machine = Some(p.name.into());
            let file = ScenarioFile::new(src).unwrap();
            let opts = RunOptions {
                jobs: 1,
                ..RunOptions::default()
            };
            let out = runner::run(&file, &opts)
                .unwrap_or_else(|e| panic!("{} on {}: {e}", b.name, p.name));
            let m = &out.manifest;
            assert_eq!(m.machine.profile, p.name, "{}", b.name);
            for r in &m.resolved_scenarios {
                let on = r
                    .machine
                    .as_ref()
                    .map_or(&m.machine.profile, |v| &v.profile);
                assert_eq!(on, p.name, "{} variant {}", b.name, r.variant);
            }
            assert!(
                out.result.variants.iter().all(|v| v.events > 0),
                "{} on {} recorded nothing",
                b.name,
                p.name
            );
        }
    }
}
