//! The cluster files (experiments/cluster/) on the real thing: a Slurm job
//! array on a single-node Slurm and an Indexed Job's pod command, each
//! merged and compared byte for byte with the one-machine sweep. Ignored:
//! it installs and starts Slurm and munge as root (a minute on a fresh
//! machine).

use std::process::Command;

#[test]
#[ignore = "installs and starts Slurm and munge as root: cargo test -p experiments --test it -- --ignored cluster"]
fn slurm_and_indexed_job_shards_merge_to_the_one_machine_sweep() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/cluster/test-cluster.sh");
    let o = Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_convoy"))
        .output()
        .expect("bash runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        out.contains("slurm: merged points.csv is byte-identical"),
        "{out}"
    );
    assert!(
        out.contains("k8s: merged points.csv is byte-identical"),
        "{out}"
    );
}
