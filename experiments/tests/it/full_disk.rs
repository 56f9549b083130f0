//! Outputs are all or nothing: a command whose files cannot all be
//! written (a full disk, a permission, a plot that cannot be written)
//! exits 2 naming the file, and leaves no directory behind, not even a
//! part of one; a rerun into an existing directory leaves it as it was.
//!
//! A full disk is a small tmpfs that the test mounts when it runs as root
//! and may mount; elsewhere (and always, besides) the writer's
//! fault-injection hook (`CONVOY_FAIL_WRITE=NAME`) fails one file's write.

use crate::common::{convoy_env, convoy_status};
use std::path::{Path, PathBuf};

/// A tmpfs mounted for a test; unmounted when dropped.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if let Ok(c) = cstring(&self.0) {
            // SAFETY: a valid NUL-terminated path.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

fn cstring(p: &Path) -> Result<std::ffi::CString, std::ffi::NulError> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
}

/// A tmpfs of `size` (`256k`) at `at`, if this process may mount one
/// (root, and a sandbox that lets it).
fn small_tmpfs(at: &Path, size: &str) -> Option<Tmpfs> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    std::fs::create_dir_all(at).unwrap();
    let target = cstring(at).ok()?;
    let (src, fstype) = (c"tmpfs", c"tmpfs");
    let data = std::ffi::CString::new(format!("size={size},mode=755")).ok()?;
    // SAFETY: valid NUL-terminated strings; `data` is tmpfs's option text.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            data.as_ptr().cast(),
        )
    };
    (r == 0).then(|| Tmpfs(at.to_path_buf()))
}

/// The entries of `dir`, sorted (hidden ones too).
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// A scenario with no lock: its run writes the CSV files and the
/// manifest, and no plot (a few KB in all).
const QUIET: &str = r#"
[scenario]
name = "quiet"
duration = "1s"
[tasks.a]
count = 1
program = ["loop", "sleep 100ms", "cpu 1us", "count hits", "end"]

[machine]
profile = 'ideal'
"#;

/// A run into `fs/a/b` whose files do not all fit (or one of which fails
/// on purpose): exit 2, the file named, nothing left under `fs`; then a
/// rerun into a complete earlier result leaves it as it was.
fn check_all_or_nothing(root: &Path, env: &[(&str, &str)], says: &str) {
    let fs = root.join("fs");
    let args = ["run", "bench-convoy", "--duration", "2s", "--out", "fs/a/b"];
    let o = convoy_env(&args, root, env);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("convoy: error: cannot write fs/a/b/"), "{err}");
    assert!(err.contains(says), "{says}: {err}");
    assert!(
        !err.contains(".tmp"),
        "the error names a staging file: {err}"
    );
    assert_eq!(entries(&fs), Vec::<String>::new(), "left behind");
    // A complete earlier result, then a rerun into it that fails.
    convoy_status(&["run", "quiet.toml", "--out", "fs/a/b"], root);
    let before: Vec<(String, Vec<u8>)> = (entries(&fs.join("a/b")).into_iter())
        .map(|n| (n.clone(), std::fs::read(fs.join("a/b").join(&n)).unwrap()))
        .collect();
    assert!(before.iter().any(|(n, _)| n == "summary.csv"), "{before:?}");
    let o = convoy_env(&args, root, env);
    assert_eq!(o.status.code(), Some(2));
    let after: Vec<(String, Vec<u8>)> = (entries(&fs.join("a/b")).into_iter())
        .map(|n| (n.clone(), std::fs::read(fs.join("a/b").join(&n)).unwrap()))
        .collect();
    assert!(before == after, "the earlier result changed");
    assert_eq!(entries(&fs.join("a")), vec!["b".to_string()]);
}

#[test]
fn a_run_that_cannot_write_all_its_files_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::write(root.join("quiet.toml"), QUIET).unwrap();
    // The CSV files fit in 256 KiB, the first plot does not.
    if let Some(_fs) = small_tmpfs(&root.join("fs"), "256k") {
        check_all_or_nothing(root, &[], "No space left on device");
        // Unmounted here: the hook's check below gets a plain directory.
    }
    std::fs::create_dir_all(root.join("fs")).unwrap();
    for e in entries(&root.join("fs")) {
        std::fs::remove_dir_all(root.join("fs").join(e)).unwrap();
    }
    // A plot that cannot be written is an error too, after the CSV files
    // and the first plot were.
    let hook = [(
        output::files::FAIL_WRITE_ENV,
        "wait-lock-read-readers-log2.png",
    )];
    check_all_or_nothing(root, &hook, "write failed on purpose");
}

#[test]
fn a_sweep_that_cannot_write_its_table_or_plots_fails() {
    // A sweep's directory keeps its finished points (a rerun resumes);
    // its table and plots are each written whole, and a failure exits 2.
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::write(root.join("quiet.toml"), QUIET).unwrap();
    std::fs::write(
        root.join("s.toml"),
        "[sweep]\nname = \"s\"\nscenario = \"quiet.toml\"\n[[param]]\nkey = \"tasks.a.count\"\n\
         values = [1, 2]\n[[figure]]\nmetric = \"counter\"\nsubject = \"hits/a\"\n",
    )
    .unwrap();
    for name in ["points.csv", "sweep-counter_hits_a.png"] {
        let o = convoy_env(
            &["sweep", "s.toml", "--out", name, "--jobs", "1"],
            root,
            &[(output::files::FAIL_WRITE_ENV, name)],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(&format!(
                "cannot write {name}/{name}: write failed on purpose"
            )),
            "{err}"
        );
    }
}
