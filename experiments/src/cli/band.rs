//! `convoy band`: the flags checked and the scenario read into a band's
//! plan (the values it varies and holds, its runs), then the runs, the
//! band's files and its table.

use super::flags::BandArgs;
use crate::sweep::band::{self, BandPlan, Method, MAX_LHS};
use anyhow::bail;
use std::path::PathBuf;

/// A validated band: the scenario read, the values to vary found.
pub(super) struct Plan {
    band: BandPlan,
    out: PathBuf,
    jobs: usize,
    progress: crate::progress::ProgressMode,
}

/// Checks the flags, reads the scenario and lays out the runs.
pub(super) fn plan(a: BandArgs) -> anyhow::Result<Plan> {
    // As `run` does: the manifests' scenario is the run's.
    let (sets, flags) = super::run::flag_sets(&a.sets, a.duration.as_deref(), a.seed)?;
    let method = match a.lhs {
        None => Method::OneAtATime,
        Some(n) if (1..=MAX_LHS).contains(&n) => Method::Sample(n),
        Some(n) => bail!("--lhs {n}: expected a number of samples from 1 to {MAX_LHS}"),
    };
    let b = band::plan(
        &a.experiment,
        a.machine,
        (sets, flags),
        a.seed,
        a.reps,
        method,
    )?;
    let out = a.out.unwrap_or_else(|| b.default_out());
    Ok(Plan {
        band: b,
        out,
        jobs: a.jobs,
        progress: a.progress,
    })
}

/// Runs the band and prints its table.
pub(super) fn execute(p: Plan) -> anyhow::Result<()> {
    let b = band::run_band(&p.band, p.jobs, &p.out, p.progress)?;
    print!("{}", output::band::band_table(&b.manifest, &b.rows));
    println!(
        "\nband: {} runs ({} run now), {:.2}s wall; {}/band.csv, band.json, runs/",
        b.manifest.runs.len(),
        b.ran,
        b.wall.as_secs_f64(),
        p.out.display()
    );
    Ok(())
}
