//! A sweep directory on disk:
//!
//! ```text
//! DIR/sweep.json              which sweep (output::sweep_table::SweepHeader)
//! DIR/points/00042-1a2b3c4d.json   one finished point (PointRecord)
//! DIR/points.csv              the table of every point present
//! DIR/*.png, *.svg            plots of points.csv
//! DIR/report.html             all of it as one page
//! ```
//!
//! Every file is written whole to a temp file and renamed, so a killed
//! sweep leaves only complete point files (and perhaps a stray hidden
//! temp file, which readers skip). A point file carries the sweep's hash,
//! program version and seed, so one from another sweep is never mixed in.

use anyhow::{bail, Context};
use output::files::write_atomic;
use output::sweep_table::{points_csv, PointRecord, SweepHeader};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const HEADER: &str = "sweep.json";
pub const POINTS_DIR: &str = "points";
pub const POINTS_CSV: &str = "points.csv";

/// A point file as found on disk.
pub struct Stored {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub record: PointRecord,
}

/// The file name of a point: its index and a short hash of its identity.
pub fn point_file_name(index: usize, key: &str) -> String {
    let h = blake3::hash(key.as_bytes()).to_hex();
    format!("{index:05}-{}.json", &h[..8])
}

fn json_bytes<T: serde::Serialize>(v: &T) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).expect("sweep records serialize");
    b.push(b'\n');
    b
}

pub fn point_bytes(r: &PointRecord) -> Vec<u8> {
    json_bytes(r)
}

/// A file of a sweep directory: a regular file (a FIFO put there would
/// block the read), of a size a header or a point has.
fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::scenario::source::read_bytes(path, crate::scenario::source::MAX_TEXT_FILE)
}

/// Reads `DIR/sweep.json`, if there is one.
pub fn read_header(dir: &Path) -> anyhow::Result<Option<SweepHeader>> {
    let path = dir.join(HEADER);
    match read_file(&path) {
        Ok(b) => serde_json::from_slice(&b)
            .with_context(|| format!("{}: not a sweep header", path.display()))
            .map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The first difference that makes `found` another sweep's results than
/// `want`'s, in words. The scenario's path is not compared: one file
/// named `x.toml`, `./x.toml` or by its absolute path is one scenario,
/// and the hash covers what it holds (every variant as resolved).
pub fn header_mismatch(want: &SweepHeader, found: &SweepHeader) -> Option<String> {
    let want = &SweepHeader {
        scenario: found.scenario.clone(),
        ..want.clone()
    };
    if want.version != found.version {
        Some(format!(
            "made by convoy {}, not {}",
            found.version, want.version
        ))
    } else if want.seed != found.seed {
        Some(format!("made with seed {}, not {}", found.seed, want.seed))
    } else if want != found {
        Some(format!(
            "from another sweep file or scenario (sweep `{}`, hash {}, not `{}`, {})",
            found.sweep,
            &found.hash[..found.hash.len().min(12)],
            want.sweep,
            &want.hash[..want.hash.len().min(12)]
        ))
    } else {
        None
    }
}

/// Creates `dir` and `dir/points`, checks that `dir` holds nothing of
/// another sweep, and writes the header (a header already there is kept,
/// with the scenario's path as it was first spelt).
pub fn init(dir: &Path, h: &SweepHeader) -> anyhow::Result<()> {
    let points = dir.join(POINTS_DIR);
    std::fs::create_dir_all(&points)
        .with_context(|| format!("cannot create {}", points.display()))?;
    if let Some(found) = read_header(dir)? {
        if let Some(why) = header_mismatch(h, &found) {
            bail!(
                "{}: holds results {why}; use another --out directory",
                dir.display()
            );
        }
        return Ok(());
    }
    write_atomic(dir, HEADER, &json_bytes(h))?;
    Ok(())
}

/// Every point file in `dir/points`, by index, each checked against `h`.
pub fn read_points(dir: &Path, h: &SweepHeader) -> anyhow::Result<BTreeMap<usize, Stored>> {
    let pdir = dir.join(POINTS_DIR);
    let mut names: Vec<PathBuf> = match std::fs::read_dir(&pdir) {
        Ok(rd) => rd
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .with_context(|| format!("cannot list {}", pdir.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", pdir.display())),
    };
    names.retain(|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        !n.starts_with('.') && n.ends_with(".json")
    });
    names.sort();
    let mut out = BTreeMap::new();
    for path in names {
        let bytes = read_file(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let record: PointRecord = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: not a sweep point file", path.display()))?;
        let as_header = SweepHeader {
            hash: record.hash.clone(),
            version: record.version.clone(),
            seed: record.seed,
            ..h.clone()
        };
        if let Some(why) = header_mismatch(h, &as_header) {
            bail!("{}: a point {why}", path.display());
        }
        if record.index >= h.points {
            bail!(
                "{}: point {} of a sweep of {} points",
                path.display(),
                record.index,
                h.points
            );
        }
        if let Some(prev) = out.insert(
            record.index,
            Stored {
                path: path.clone(),
                bytes,
                record,
            },
        ) {
            bail!(
                "{} and {}: two files for one point",
                prev.path.display(),
                path.display()
            );
        }
    }
    Ok(out)
}

/// What [`finish`] wrote: how many points of the sweep are missing, the
/// plot files, and what a report says when there are none.
pub struct Finished {
    pub missing: usize,
    pub plots: Vec<PathBuf>,
    pub plot_note: String,
}

/// Writes `points.csv`, the plots and `report.html` from every point
/// present. Without a font the plots are left out with a warning; a plot
/// that cannot be drawn or written is an error, as `points.csv` would be.
pub fn finish(
    dir: &Path,
    h: &SweepHeader,
    points: &BTreeMap<usize, Stored>,
) -> anyhow::Result<Finished> {
    let records: Vec<PointRecord> = points.values().map(|s| s.record.clone()).collect();
    let csv = points_csv(h, &records);
    write_atomic(dir, POINTS_CSV, &csv)?;
    let (plots, plot_note) = match output::sweep_plots::write_sweep_plots(dir, h, &records) {
        Ok(files) if files.is_empty() => (
            files,
            "No plot: a sweep is plotted when it is a grid of one or two parameters \
             (points.csv has every number)."
                .to_string(),
        ),
        Ok(files) => (
            files,
            "The files beside this page (each also as .svg).".to_string(),
        ),
        Err(e @ output::plots::PlotError::NoFont) => {
            eprintln!("convoy: warning: no sweep plots: {e}");
            (Vec::new(), format!("No plot: {e}."))
        }
        Err(e) => return Err(e.into()),
    };
    let mut page = output::report::Page::new(&format!("convoy sweep: {}", h.sweep));
    page.para(&format!(
        "{}: {} point(s) x {} replication(s), variant(s) {}; seed {}.",
        h.scenario,
        h.points,
        h.reps,
        h.variants.join(", "),
        h.seed
    ));
    output::report::sweep_sections(&mut page, h, points.len(), &csv, &plots, &plot_note);
    page.write(dir)?;
    Ok(Finished {
        missing: h.points - points.len(),
        plots,
        plot_note,
    })
}
