//! The run directory's files (docs/contract.md, a contract other
//! tools read: names and columns must not change).
//!
//! Every file is written to a temp file in the same directory and renamed
//! into place, so a reader (or an interrupted run) sees either the previous
//! complete file or the new complete file, never half of one. A directory
//! of results is written all or nothing ([`Staged`]): into a hidden
//! directory beside it, moved into place only when every file is written.

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
    #[serde(rename = "wake_send_ns", serialize_with = "as_ns")]
    pub wake_send: Dur,
    pub idle_states: Vec<IdleStateRecord>,
    #[serde(rename = "line_local_ns", serialize_with = "as_ns")]
    pub line_local: Dur,
    #[serde(rename = "line_smt_ns", serialize_with = "as_ns")]
    pub line_smt: Dur,
    #[serde(rename = "line_socket_ns", serialize_with = "as_ns")]
    pub line_socket: Dur,
    #[serde(rename = "line_remote_ns", serialize_with = "as_ns")]
    pub line_remote: Dur,
    /// Interrupts (R125): the tick's handler, the others a second on each
    /// CPU and the mean time of one.
    #[serde(rename = "tick_cost_ns", serialize_with = "as_ns")]
    pub tick_cost: Dur,
    pub irq_rate: f64,
    #[serde(rename = "irq_cost_ns", serialize_with = "as_ns")]
    pub irq_cost: Dur,
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
/// The environment variable that makes the write of one file fail, by
/// its name (`summary.csv`, a plot's `wait-l-read-a-log2.png`), as a full
/// disk would: how the tests check that a failed write leaves nothing
/// where no small file system can be mounted.
pub const FAIL_WRITE_ENV: &str = "CONVOY_FAIL_WRITE";

/// The injected failure of [`FAIL_WRITE_ENV`] for a file named `name`.
fn injected_failure(name: &str) -> Option<std::io::Error> {
    let wanted = std::env::var_os(FAIL_WRITE_ENV)?;
    (wanted == name).then(|| {
        std::io::Error::other(format!("write failed on purpose ({FAIL_WRITE_ENV}={name})"))
    })
}

/// An I/O error without the path of the temporary file that the
/// `tempfile` crate adds to its text (` at path "..."`): the error names
/// the file being written, not its hidden temporary.
fn without_temp_path(e: std::io::Error) -> std::io::Error {
    if e.get_ref().is_some() {
        if let Some((msg, _)) = e.to_string().split_once(" at path ") {
            return std::io::Error::new(e.kind(), msg.to_string());
        }
    }
    e
}

pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(dir, name, |w| w.write_all(bytes))
}

/// As [`write_atomic`], the bytes written by `fill` as they come (through
/// a buffer), for a file too large to hold in memory first.
pub fn write_atomic_with<F>(dir: &Path, name: &str, fill: F) -> Result<(), WriteError>
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
{
    let path = dir.join(name);
    let io = |error| WriteError::Io {
        path: path.clone(),
        error: without_temp_path(error),
    };
    if let Some(e) = injected_failure(name) {
        return Err(io(e));
    }
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
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        fill(&mut w).map_err(io)?;
        w.flush().map_err(io)?;
    }
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
/// A directory written all or nothing: its files are written into a
/// hidden directory beside it (`.NAME.XXXXXX.tmp`), and [`Staged::commit`]
/// moves them into place only when all of them are: by renaming the
/// whole directory when `dir` does not exist yet, else file by file (a
/// rerun into the same directory; each rename is atomic and needs no
/// space). Dropped without a commit (a write failed: a full disk, a
/// permission, a plot that could not be drawn), it removes what it wrote
/// and the directories above `dir` that it made, so a failed command
/// leaves nothing behind.
#[derive(Debug)]
pub struct Staged {
    dir: PathBuf,
    tmp: Option<tempfile::TempDir>,
    /// Directories above `dir` that did not exist, made to hold the
    /// staging directory: outermost first.
    made: Vec<PathBuf>,
}

/// Fails as [`Staged::new`] would when a file that is not a directory
/// has `dir`'s name: a command checks it before its runs, so that the
/// error comes before the work rather than after it.
pub fn in_the_way(dir: &Path) -> Result<(), WriteError> {
    if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(WriteError::CreateDir {
            path: dir.to_path_buf(),
            error: std::io::Error::other("a file of that name is in the way"),
        });
    }
    Ok(())
}

impl Staged {
    /// Makes the staging directory for `dir` (and the directories above
    /// it that are missing).
    pub fn new(dir: &Path) -> Result<Staged, WriteError> {
        let fail = |error| WriteError::CreateDir {
            path: dir.to_path_buf(),
            error,
        };
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = (dir.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| fail(std::io::Error::other("not a directory name")))?;
        let mut missing: Vec<PathBuf> = (parent.ancestors())
            .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
            .map(Path::to_path_buf)
            .collect();
        missing.reverse();
        let mut staged = Staged {
            dir: dir.to_path_buf(),
            tmp: None,
            made: Vec::new(),
        };
        for d in missing {
            match std::fs::create_dir(&d) {
                Ok(()) => staged.made.push(d),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(fail(e)),
            }
        }
        in_the_way(dir)?;
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            // As `mkdir` makes a directory: the umask decides.
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o777));
        }
        staged.tmp = Some(builder.tempdir_in(&parent).map_err(fail)?);
        Ok(staged)
    }

    /// Where the files go until the commit.
    pub fn path(&self) -> &Path {
        self.tmp.as_ref().map_or(&self.dir, |t| t.path())
    }

    /// The directory the files end up in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `p` (a path in the staging directory) as it will be after the
    /// commit: what an error names.
    pub fn shown(&self, p: &Path) -> PathBuf {
        match p.strip_prefix(self.path()) {
            Ok(rest) if !rest.as_os_str().is_empty() => self.dir.join(rest),
            Ok(_) => self.dir.clone(),
            Err(_) => p.to_path_buf(),
        }
    }

    /// A write error in the staging directory, told with the file's final
    /// path.
    pub fn shown_error(&self, e: WriteError) -> WriteError {
        match e {
            WriteError::Io { path, error } => WriteError::Io {
                path: self.shown(&path),
                error,
            },
            WriteError::CreateDir { path, error } => WriteError::CreateDir {
                path: self.shown(&path),
                error,
            },
        }
    }

    /// Moves every file written into place. Into an existing directory,
    /// `stale` names files of an earlier run that this one did not write
    /// and that go (`replications.csv` after a run of one replication).
    pub fn commit(mut self, stale: &[&str]) -> Result<(), WriteError> {
        let Some(tmp) = self.tmp.take() else {
            return Ok(());
        };
        let io = |path: &Path, error| WriteError::Io {
            path: path.to_path_buf(),
            error,
        };
        if std::fs::symlink_metadata(&self.dir).is_err() {
            let from = tmp.path().to_path_buf();
            std::fs::rename(&from, &self.dir).map_err(|error| WriteError::CreateDir {
                path: self.dir.clone(),
                error,
            })?;
            // Renamed: nothing of it is left to remove.
            let _ = tmp.keep();
            self.made.clear();
            return Ok(());
        }
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(tmp.path())
            .and_then(|rd| rd.map(|e| e.map(|e| e.file_name())).collect())
            .map_err(|e| io(&self.dir, e))?;
        names.sort();
        for n in &names {
            let to = self.dir.join(n);
            std::fs::rename(tmp.path().join(n), &to).map_err(|e| io(&to, e))?;
        }
        for s in stale {
            if !names.iter().any(|n| n == s) {
                let path = self.dir.join(s);
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&path, e)),
                    _ => {}
                }
            }
        }
        self.made.clear();
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // The staging directory first (its TempDir removes it), then the
        // directories made above it, innermost first, if still empty.
        self.tmp.take();
        for d in self.made.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

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
                    hist: hist.into(),
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
