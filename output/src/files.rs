//! The run directory's files (docs/contract.md, a contract other
//! tools read: names and columns must not change).
//!
//! Every file is written to a temp file in the same directory and renamed
//! into place, so a reader (or an interrupted run) sees either the previous
//! complete file or the new complete file, never half of one.

use crate::results::{ExperimentResult, Metric, Stat, VariantResult};
use serde::{Serialize, Serializer};
use sim::Dur;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const SUMMARY_CSV: &str = "summary.csv";
pub const HIST_CSV: &str = "hist.csv";
pub const WINDOWS_CSV: &str = "windows.csv";
pub const MANIFEST_JSON: &str = "manifest.json";
/// Each replication's own summary, written when a run has more than one.
pub const REPLICATIONS_CSV: &str = "replications.csv";

pub const SUMMARY_COLUMNS: [&str; 11] = [
    "experiment",
    "variant",
    "metric",
    "subject",
    "count",
    "mean_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
];
/// `summary.csv`'s columns with the replication (0, 1, ...: the index
/// that derives its random streams from the seed) after the variant.
pub const REPLICATIONS_COLUMNS: [&str; 12] = [
    "experiment",
    "variant",
    "replication",
    "metric",
    "subject",
    "count",
    "mean_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
];
pub const HIST_COLUMNS: [&str; 7] = [
    "experiment",
    "variant",
    "metric",
    "subject",
    "lo_ns",
    "hi_ns",
    "count",
];
pub const WINDOWS_COLUMNS: [&str; 8] = [
    "experiment",
    "variant",
    "metric",
    "subject",
    "window_start_ns",
    "count",
    "mean_ns",
    "max_ns",
];

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot create output directory {path}: {error}")]
    CreateDir {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot write {path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Name and version of one crate the results depend on.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CrateVersion {
    pub name: String,
    pub version: String,
}

/// `manifest.json`: what produced the results, enough to reproduce them.
/// Holds no wall-clock time, host name or path, so two runs of the same
/// scenario and seed write the same bytes.
#[derive(Clone, Debug, Serialize)]
pub struct Manifest {
    pub program: String,
    pub version: String,
    pub git_commit: Option<String>,
    pub experiment: String,
    pub source: String,
    pub seed: u64,
    pub replications: u64,
    pub variants: Vec<String>,
    /// Simulated time of one replication, written as `duration_ns`.
    #[serde(rename = "duration_ns", serialize_with = "as_ns")]
    pub duration: Dur,
    /// The machine the first variant ran on.
    pub machine: MachineRecord,
    /// The scenario as run: after variants and `--set`, one entry per variant.
    pub resolved_scenarios: Vec<ResolvedScenario>,
    pub rng_stack: Vec<CrateVersion>,
}

/// A duration as the integer nanoseconds the files hold.
fn as_ns<S: Serializer>(d: &Dur, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.ns())
}

#[derive(Clone, Debug, Serialize)]
pub struct ResolvedScenario {
    pub variant: String,
    /// BLAKE3 of `toml`, hex.
    pub hash: String,
    pub toml: String,
    /// The variant's machine, when it is not the manifest's `machine`
    /// (a variant that overlays `[machine]`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineRecord>,
}

/// A resolved machine as the manifest records it: the profile's name and
/// every value the run used, durations in integer nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachineRecord {
    pub profile: String,
    /// The run's CPUs; `None` (null) for unlimited CPUs.
    pub cpus: Option<u32>,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    pub hz: u32,
    /// `none`, `voluntary` or `full`.
    pub preemption: String,
    #[serde(rename = "base_slice_ns", serialize_with = "as_ns")]
    pub base_slice: Dur,
    #[serde(rename = "switch_cost_ns", serialize_with = "as_ns")]
    pub switch_cost: Dur,
    #[serde(rename = "ipi_ns", serialize_with = "as_ns")]
    pub ipi: Dur,
    pub idle_states: Vec<IdleStateRecord>,
    #[serde(rename = "line_local_ns", serialize_with = "as_ns")]
    pub line_local: Dur,
    #[serde(rename = "line_smt_ns", serialize_with = "as_ns")]
    pub line_smt: Dur,
    #[serde(rename = "line_socket_ns", serialize_with = "as_ns")]
    pub line_socket: Dur,
    #[serde(rename = "line_remote_ns", serialize_with = "as_ns")]
    pub line_remote: Dur,
    /// What a hypervisor adds; `None` (null) on bare metal.
    pub guest: Option<GuestRecord>,
}

/// One cpuidle state of a [`MachineRecord`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IdleStateRecord {
    pub name: String,
    #[serde(rename = "exit_latency_ns", serialize_with = "as_ns")]
    pub exit_latency: Dur,
    #[serde(rename = "target_residency_ns", serialize_with = "as_ns")]
    pub target_residency: Dur,
    pub polling: bool,
}

/// A guest's costs in a [`MachineRecord`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GuestRecord {
    #[serde(rename = "ipi_ns", serialize_with = "as_ns")]
    pub ipi: Dur,
    #[serde(rename = "host_halt_poll_ns", serialize_with = "as_ns")]
    pub host_halt_poll: Dur,
    #[serde(rename = "host_wake_ns", serialize_with = "as_ns")]
    pub host_wake: Dur,
    pub steal_fraction: f64,
    #[serde(rename = "steal_episode_ns", serialize_with = "as_ns")]
    pub steal_episode: Dur,
}

/// Writes `bytes` to `dir/name` atomically (temp file + rename).
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), WriteError> {
    let path = dir.join(name);
    let io = |error| WriteError::Io {
        path: path.clone(),
        error,
    };
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // Results are for reading by other tools and people: rw-r--r-- (less
    // the umask), not the temp file's private rw-------.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(io)?;
    tmp.write_all(bytes).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(&path).map_err(|e| io(e.error))?;
    Ok(())
}

pub(crate) fn csv_bytes<F>(header: &[&str], fill: F) -> Vec<u8>
where
    F: FnOnce(&mut csv::Writer<&mut Vec<u8>>) -> csv::Result<()>,
{
    let mut buf = Vec::new();
    {
        let mut w = csv::WriterBuilder::new().from_writer(&mut buf);
        // Writing to memory cannot fail.
        w.write_record(header).expect("in-memory csv");
        fill(&mut w).expect("in-memory csv");
        w.flush().expect("in-memory csv");
    }
    buf
}

/// The rows of one variant's summary, each led by `lead` (experiment,
/// variant and, for `replications.csv`, the replication).
fn summary_rows(
    w: &mut csv::Writer<&mut Vec<u8>>,
    lead: &[&str],
    v: &VariantResult,
) -> csv::Result<()> {
    for s in &v.series {
        let stats = Stat::ALL.map(|st| st.of(&s.hist).raw().to_string());
        w.write_record(
            lead.iter()
                .copied()
                .chain([s.metric.as_str(), s.subject.as_str()])
                .chain(stats.iter().map(String::as_str)),
        )?;
    }
    for c in &v.counters {
        let value = c.value.to_string();
        w.write_record(
            lead.iter()
                .copied()
                .chain([Metric::Counter.as_str(), c.subject.as_str(), &value])
                .chain([""; 6]),
        )?;
    }
    Ok(())
}

/// The bytes of `summary.csv`: one row per (variant, metric, subject).
pub fn summary_csv(r: &ExperimentResult) -> Vec<u8> {
    csv_bytes(&SUMMARY_COLUMNS, |w| {
        for v in &r.variants {
            summary_rows(w, &[r.experiment.as_str(), v.variant.as_str()], v)?;
        }
        Ok(())
    })
}

/// The bytes of `replications.csv`: `summary.csv` for each replication on
/// its own (`per_rep[variant][replication]`), for the spread of any figure.
pub fn replications_csv(experiment: &str, per_rep: &[Vec<VariantResult>]) -> Vec<u8> {
    csv_bytes(&REPLICATIONS_COLUMNS, |w| {
        for reps in per_rep {
            for (i, v) in reps.iter().enumerate() {
                let rep = i.to_string();
                summary_rows(w, &[experiment, v.variant.as_str(), &rep], v)?;
            }
        }
        Ok(())
    })
}

/// Writes `replications.csv` into `dir` when some variant ran more than
/// one replication; otherwise removes one a previous run left there, so
/// that the directory describes one run.
pub fn write_replications(
    dir: &Path,
    experiment: &str,
    per_rep: &[Vec<VariantResult>],
) -> Result<(), WriteError> {
    if per_rep.iter().any(|r| r.len() > 1) {
        return write_atomic(
            dir,
            REPLICATIONS_CSV,
            &replications_csv(experiment, per_rep),
        );
    }
    let path = dir.join(REPLICATIONS_CSV);
    match std::fs::remove_file(&path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(WriteError::Io { path, error })
        }
        _ => Ok(()),
    }
}

/// The bytes of `hist.csv`: the non-empty log2 buckets of every series.
pub fn hist_csv(r: &ExperimentResult) -> Vec<u8> {
    csv_bytes(&HIST_COLUMNS, |w| {
        for v in &r.variants {
            for s in &v.series {
                for b in s.hist.log2_buckets() {
                    w.write_record([
                        r.experiment.as_str(),
                        v.variant.as_str(),
                        s.metric.as_str(),
                        s.subject.as_str(),
                        &b.lo.ns().to_string(),
                        &b.hi.ns().to_string(),
                        &b.count.to_string(),
                    ])?;
                }
            }
        }
        Ok(())
    })
}

/// The bytes of `windows.csv`: every window of every series, empty ones
/// included, so a gap in activity shows as a zero row.
pub fn windows_csv(r: &ExperimentResult) -> Vec<u8> {
    csv_bytes(&WINDOWS_COLUMNS, |w| {
        for v in &r.variants {
            for s in &v.series {
                for (start, b) in s.windows.iter() {
                    w.write_record([
                        r.experiment.as_str(),
                        v.variant.as_str(),
                        s.metric.as_str(),
                        s.subject.as_str(),
                        &start.ns().to_string(),
                        &b.count.to_string(),
                        &b.mean().ns().to_string(),
                        &b.max.ns().to_string(),
                    ])?;
                }
            }
        }
        Ok(())
    })
}

pub fn manifest_json(m: &Manifest) -> Vec<u8> {
    let mut s = serde_json::to_vec_pretty(m).expect("manifest serializes");
    s.push(b'\n');
    s
}

/// Writes the four files of a run directory, creating `dir` if needed.
pub fn write_run_dir(dir: &Path, r: &ExperimentResult, m: &Manifest) -> Result<(), WriteError> {
    std::fs::create_dir_all(dir).map_err(|error| WriteError::CreateDir {
        path: dir.to_path_buf(),
        error,
    })?;
    write_atomic(dir, SUMMARY_CSV, &summary_csv(r))?;
    write_atomic(dir, HIST_CSV, &hist_csv(r))?;
    write_atomic(dir, WINDOWS_CSV, &windows_csv(r))?;
    write_atomic(dir, MANIFEST_JSON, &manifest_json(m))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Counter, Series};
    use sim::stats::{LatencyHist, Windows};
    use sim::SimTime;

    fn sample() -> ExperimentResult {
        let mut hist = LatencyHist::new();
        let mut windows = Windows::new(Dur::from_secs(10));
        for (t, v) in [(1, 0), (2, 1500), (12_000_000_000, 3000)] {
            hist.record(Dur(v));
            windows.record(SimTime(t), Dur(v));
        }
        ExperimentResult {
            experiment: "x".into(),
            variants: vec![VariantResult {
                variant: "base".into(),
                series: vec![Series {
                    metric: Metric::Wait,
                    subject: "L/read/g".into(),
                    hist,
                    windows,
                }],
                counters: vec![Counter {
                    subject: "L/read_acquisitions".into(),
                    value: 3,
                }],
                horizon: SimTime(20_000_000_000),
                events: 9,
                replications: 1,
                open_waits: Vec::new(),
            }],
        }
    }

    #[test]
    fn summary_has_design_columns_and_counter_rows_fill_count_only() {
        let text = String::from_utf8(summary_csv(&sample())).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "experiment,variant,metric,subject,count,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns"
        );
        assert_eq!(
            lines[1],
            "x,base,wait,L/read/g,3,1500,1500,3000,3000,3000,3000"
        );
        assert_eq!(lines[2], "x,base,counter,L/read_acquisitions,3,,,,,,");
    }

    #[test]
    fn hist_and_windows_rows() {
        let r = sample();
        let h = String::from_utf8(hist_csv(&r)).unwrap();
        assert_eq!(
            h.lines().collect::<Vec<_>>(),
            vec![
                "experiment,variant,metric,subject,lo_ns,hi_ns,count",
                "x,base,wait,L/read/g,0,1,1",
                "x,base,wait,L/read/g,1024,2048,1",
                "x,base,wait,L/read/g,2048,4096,1",
            ]
        );
        let w = String::from_utf8(windows_csv(&r)).unwrap();
        assert_eq!(
            w.lines().collect::<Vec<_>>(),
            vec![
                "experiment,variant,metric,subject,window_start_ns,count,mean_ns,max_ns",
                "x,base,wait,L/read/g,0,2,750,1500",
                "x,base,wait,L/read/g,10000000000,1,3000,3000",
            ]
        );
    }

    #[test]
    fn replications_rows_carry_the_replication_and_a_single_run_leaves_no_file() {
        let v = sample().variants.remove(0);
        let mut v2 = v.clone();
        v2.counters[0].value = 5;
        let per_rep = vec![vec![v.clone(), v2]];
        let text = String::from_utf8(replications_csv("x", &per_rep)).unwrap();
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            vec![
                "experiment,variant,replication,metric,subject,count,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns",
                "x,base,0,wait,L/read/g,3,1500,1500,3000,3000,3000,3000",
                "x,base,0,counter,L/read_acquisitions,3,,,,,,",
                "x,base,1,wait,L/read/g,3,1500,1500,3000,3000,3000,3000",
                "x,base,1,counter,L/read_acquisitions,5,,,,,,",
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        write_replications(dir.path(), "x", &per_rep).unwrap();
        assert!(dir.path().join(REPLICATIONS_CSV).exists());
        // A later run of one replication into the same directory removes it.
        write_replications(dir.path(), "x", &[vec![v]]).unwrap();
        assert!(!dir.path().join(REPLICATIONS_CSV).exists());
    }

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(dir.path(), "a.csv", b"old").unwrap();
        write_atomic(dir.path(), "a.csv", b"new contents").unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("a.csv")).unwrap(),
            b"new contents"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }
}
