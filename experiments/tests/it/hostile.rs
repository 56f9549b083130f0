//! Input a hostile (or careless) user gives: nesting deep enough to
//! overflow a stack, files that are not files, other files' text, escape
//! sequences in names, integers past TOML's, and a flag's error blamed on
//! an argument never typed. Each gets an error that names the file, line
//! and field (or the flag), exits 2, never hangs and never panics.

use crate::common::convoy_status;
use experiments::scenario::{compile, ScenarioFile, Source};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A scenario whose one task calls an operation that calls the next,
/// `depth` operations deep.
fn call_chain(depth: usize) -> String {
    let mut s = String::from(
        "[scenario]\nname = \"deep\"\nduration = \"1ms\"\n\n[machine]\nprofile = 'ideal'\n\n\
         [ops.o0]\nsteps = [\"cpu 1us\", \"count hits\"]\n",
    );
    for i in 1..depth {
        s += &format!("[ops.o{i}]\nsteps = [\"call o{}\"]\n", i - 1);
    }
    s += &format!(
        "[tasks.a]\ncount = 1\nprogram = [\"call o{}\", \"sleep 10us\"]\n",
        depth - 1
    );
    s
}

/// Compiles `text` on a thread with a sweep worker's stack (2 MiB, the
/// default of a spawned thread): the error, if any.
fn compile_on_small_stack(text: String) -> Option<String> {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let file = ScenarioFile::new(Source::new("deep.toml", text)).unwrap();
            let l = file.load(&file.base).unwrap();
            compile(&file.source, &l.doc, &file.base)
                .err()
                .map(|e| e.to_string())
        })
        .unwrap()
        .join()
        .expect("the compiler's thread must not overflow its stack")
}

#[test]
fn a_call_chain_past_the_nesting_limit_is_an_error_at_its_step_not_a_stack_overflow() {
    // 256 levels compile on a worker's stack; one more is an error at the
    // step that goes past, and so is a chain of 6,000 (which overflowed
    // the main thread's stack before the limit, 1,500 a worker's).
    assert_eq!(compile_on_small_stack(call_chain(256)), None);
    let err = compile_on_small_stack(call_chain(257)).expect("over the limit");
    assert!(
        err.contains("field `ops.o1.steps[0]`: `call`s and blocks nest more than 256 deep"),
        "{err}"
    );
    let err = compile_on_small_stack(call_chain(6000)).expect("over the limit");
    assert!(err.contains("nest more than 256 deep"), "{err}");
    // On the command line's main thread: the file, the line and the field.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("deep.toml"), call_chain(6000)).unwrap();
    let o = convoy_status(&["run", "deep.toml", "--out", "out"], d.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let line = call_chain(6000)
        .lines()
        .position(|l| l == "[ops.o5744]")
        .unwrap()
        + 2;
    assert!(
        err.contains(&format!(
            "deep.toml:{line}: field `ops.o5744.steps[0]`: `call`s and blocks nest more than 256 deep"
        )),
        "{err}"
    );
    assert!(!d.path().join("out").exists());
}

#[test]
fn a_chain_at_the_nesting_limit_runs_in_a_sweeps_worker_threads() {
    // The sweep compiles its first point on the main thread, then every
    // point again on its workers (2 MiB stacks).
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("deep.toml"), call_chain(256)).unwrap();
    std::fs::write(
        d.path().join("s.toml"),
        "[sweep]\nname = \"s\"\nscenario = \"deep.toml\"\n[[param]]\nkey = \"tasks.a.count\"\n\
         values = [1, 2, 3, 4]\n[[figure]]\nmetric = \"counter\"\nsubject = \"hits/a\"\n",
    )
    .unwrap();
    let o = convoy_status(&["sweep", "s.toml", "--out", "sw", "--jobs", "2"], d.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn blocks_nested_past_the_limit_are_an_error_at_the_block() {
    let mut program: Vec<String> = vec!["\"with_prob 1\"".into(); 300];
    program.push("\"cpu 1us\"".into());
    program.extend(vec!["\"end\"".to_string(); 300]);
    let text = format!(
        "[scenario]\nname = \"b\"\nduration = \"1ms\"\n[tasks.a]\ncount = 1\nprogram = [{}]\n",
        program.join(", ")
    );
    let err = compile_on_small_stack(text).expect("over the limit");
    assert!(
        err.contains(
            "deep.toml:6: field `tasks.a.program[256]`: `call`s and blocks nest more than 256 deep"
        ),
        "{err}"
    );
}

/// Runs `convoy ARGS` in `dir`, which must end (not block) within a
/// minute: its status and stderr.
fn run_bounded(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_convoy"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return (status.code(), err);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("convoy {args:?} blocked");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
#[cfg(unix)]
fn a_fifo_given_as_any_input_is_refused_at_once() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    mkfifo(&dir.join("pipe.toml"));
    let (code, err) = run_bounded(&["run", "pipe.toml", "--out", "out"], dir);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("pipe.toml: cannot read scenario file: not a regular file (a FIFO)"),
        "{err}"
    );
    // As a sweep file, and as an empirical distribution's data.
    let (code, err) = run_bounded(&["sweep", "pipe.toml", "--out", "out"], dir);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not a regular file (a FIFO)"), "{err}");
    std::fs::write(
        dir.join("s.toml"),
        "[scenario]\nname = \"s\"\nduration = \"1ms\"\n[dists.d]\ndist = \"empirical\"\n\
         file = \"pipe.toml\"\n[tasks.a]\ncount = 1\nprogram = [\"cpu $d\"]\n",
    )
    .unwrap();
    let (code, err) = run_bounded(&["run", "s.toml", "--out", "out"], dir);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "s.toml:6: field `dists.d.file`: cannot read pipe.toml: not a regular file (a FIFO)"
        ),
        "{err}"
    );
    assert!(!dir.join("out").exists());
}

/// A file that is not the user's to show: its lines must not appear in
/// any message.
const SECRET: &str = "alice:s3cr3t-h4sh:1000:1000:/home/alice:/bin/sh\n\
                      bob:0th3r-h4sh:1001:1001:/home/bob:/bin/sh\n";

#[test]
fn errors_never_quote_a_file_that_is_not_a_scenario() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("secret"), SECRET).unwrap();
    let scenario = |format: &str, column: &str| {
        format!(
            "[scenario]\nname = \"s\"\nduration = \"1ms\"\n[dists.d]\ndist = \"empirical\"\n\
             file = \"secret\"\nformat = \"{format}\"\n{column}[tasks.a]\ncount = 1\n\
             program = [\"cpu $d\"]\n"
        )
    };
    for (text, says) in [
        (
            scenario("samples", ""),
            "line 2: column 1: not a number of zero or more",
        ),
        (
            scenario("samples", "column = \"x\"\n"),
            "no column named `x`; the header has: (column 1)",
        ),
        (
            scenario("bpftrace-hist", ""),
            "line 1: not part of a bpftrace histogram",
        ),
    ] {
        std::fs::write(dir.join("s.toml"), text).unwrap();
        let o = convoy_status(&["run", "s.toml", "--out", "out"], dir);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{says}: {err}");
        for secret in ["alice", "s3cr3t", "0th3r", "/home"] {
            assert!(!err.contains(secret), "{secret}: {err}");
        }
    }
    // The file given as a scenario: not TOML, told by line only.
    let o = convoy_status(&["run", "secret", "--out", "out"], dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("secret:1: not valid TOML"), "{err}");
    assert!(!err.contains("alice") && !err.contains("s3cr3t"), "{err}");
}

#[test]
fn control_characters_in_names_are_refused_and_never_printed_raw() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let text = "[scenario]\nname = \"e\"\nduration = \"1ms\"\n\
                [tasks.\"a\\u001b[2Jred\"]\ncount = 1\nprogram = [\"cpu 1us\"]\n";
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let o = convoy_status(&["run", "s.toml", "--out", "out"], dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        !o.stderr.contains(&0x1b),
        "a raw escape reached stderr: {err}"
    );
    assert!(
        err.contains(
            "s.toml:4: field `tasks.a\\u{1b}[2Jred`: the name `a\\u{1b}[2Jred` has a control character"
        ),
        "{err}"
    );
    // A step's text, a sweep's figure name, and a path typed with one.
    let text = "[scenario]\nname = \"e\"\nduration = \"1ms\"\n[tasks.a]\ncount = 1\n\
                program = [\"cpu 1us\\u0007\"]\n";
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let o = convoy_status(&["run", "s.toml", "--out", "out"], dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("field `tasks.a.program[0]`: `cpu 1us\\u{7}` has a control character"),
        "{err}"
    );
    let o = convoy_status(&["run", "no\u{1b}[31mfile", "--out", "out"], dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no\\u{1b}[31mfile: cannot read"), "{err}");
    assert!(
        !o.stderr.contains(&0x1b),
        "a raw escape reached stderr: {err}"
    );
    assert!(!dir.join("out").exists());
}

#[test]
fn an_integer_past_tomls_range_names_its_field_and_a_flags_error_names_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let text = "[scenario]\nname = \"e\"\nduration = \"1ms\"\nseed = 9223372036854775808\n\
                [tasks.a]\ncount = 1\nprogram = [\"cpu 1us\"]\n";
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let refused = |args: &[&str], needle: &str, not: &str| {
        let o = convoy_status(args, dir);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(not.is_empty() || !err.contains(not), "{args:?}: {err}");
    };
    refused(
        &["run", "s.toml", "--out", "out"],
        "s.toml:4: field `scenario.seed`: 9223372036854775808 is out of range",
        "",
    );
    std::fs::write(
        dir.join("s.toml"),
        text.replace("seed = 9223372036854775808\n", ""),
    )
    .unwrap();
    refused(
        &[
            "run",
            "s.toml",
            "--seed",
            "9223372036854775808",
            "--out",
            "out",
        ],
        "--seed 9223372036854775808: field `scenario.seed`: 9223372036854775808 is out of range",
        "--set",
    );
    refused(
        &["run", "s.toml", "--duration", "0s", "--out", "out"],
        "--duration 0s: field `scenario.duration`: must be more than zero",
        "--set",
    );
    refused(
        &["run", "s.toml", "--duration", "1000000h", "--out", "out"],
        "--duration 1000000h: field `scenario.duration`: a run of",
        "--set",
    );
    // A --set the user typed is still told as one.
    refused(
        &[
            "run",
            "s.toml",
            "--set",
            "scenario.duration=0s",
            "--out",
            "out",
        ],
        "--set scenario.duration=0s: field `scenario.duration`",
        "",
    );
    refused(
        &["bench", "--policy", "lifo"],
        "--policy lifo: field `locks.lock.policy`: unknown policy `lifo`",
        "--set",
    );
    refused(
        &["validate", "--experiment", "rmdir-cost", "--duration", "0s"],
        "--duration 0s: field `scenario.duration`: must be more than zero",
        "--set",
    );
    assert!(!dir.join("out").exists());
}
