//! Plots of a sweep (stub).
use crate::plots::PlotError;
use crate::sweep_table::{PointRecord, SweepHeader};
use std::path::{Path, PathBuf};

pub fn write_sweep_plots(
    _dir: &Path,
    _h: &SweepHeader,
    _p: &[PointRecord],
) -> Result<Vec<PathBuf>, PlotError> {
    Ok(vec![])
}
