//! `convoy merge DIR... --out DIR`: the shards of one sweep joined.
//!
//! Shards hold whole points, each with figures computed from its own exact
//! pooled histograms; merging copies point files, it never combines
//! percentiles. It refuses directories of another sweep file, program
//! version or seed, and two different files for one point.

use super::store;
use anyhow::{bail, Context};
use output::files::write_atomic;
use output::sweep_table::SweepHeader;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct MergeReport {
    pub header: SweepHeader,
    pub points: usize,
    pub missing: usize,
}

pub fn merge(dirs: &[PathBuf], out: &Path) -> anyhow::Result<MergeReport> {
    let Some(first) = dirs.first() else {
        bail!("merge: name at least one sweep directory");
    };
    let header_of = |d: &Path| {
        store::read_header(d)?.with_context(|| {
            format!(
                "{}: no {}; not a sweep directory",
                d.display(),
                store::HEADER
            )
        })
    };
    let h = header_of(first)?;
    for d in dirs {
        if let Some(why) = store::header_mismatch(&h, &header_of(d)?) {
            bail!(
                "{}: holds results {why} (as in {}); refusing to merge",
                d.display(),
                first.display()
            );
        }
    }
    // What the output directory already holds counts as one more input.
    let mut inputs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    if let Some(found) = store::read_header(out)? {
        if let Some(why) = store::header_mismatch(&h, &found) {
            bail!(
                "{}: holds results {why}; use another --out directory",
                out.display()
            );
        }
        inputs.push(out);
    }
    let mut all: BTreeMap<usize, store::Stored> = BTreeMap::new();
    for d in inputs {
        for (i, s) in store::read_points(d, &h)? {
            match all.get(&i) {
                Some(prev) if prev.bytes != s.bytes => bail!(
                    "{} and {}: point {i} twice with different results; refusing to merge",
                    prev.path.display(),
                    s.path.display()
                ),
                Some(_) => {}
                None => {
                    all.insert(i, s);
                }
            }
        }
    }
    store::init(out, &h)?;
    let pdir = out.join(store::POINTS_DIR);
    for s in all.values() {
        let name = s
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        write_atomic(&pdir, name, &s.bytes)?;
    }
    let merged = store::read_points(out, &h)?;
    let missing = store::finish(out, &h, &merged)?.missing;
    Ok(MergeReport {
        points: merged.len(),
        missing,
        header: h,
    })
}
