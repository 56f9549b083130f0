//! `output`: turns results into files and terminal text.
//!
//! - [`results`]: the result types every writer reads (and nothing else).
//! - [`files`]: `summary.csv`, `hist.csv`, `windows.csv` and
//!   `manifest.json`, with the exact names and columns of docs/contract.md, each
//!   written to a temp file and renamed into place.
//! - [`sweep_table`]: a sweep's header, point records and `points.csv`.
//! - [`band`]: a band's rows, `band.csv`, `band.json` and its table.
//! - [`check_plot`]: a check's plot: the share of runs at or above each
//!   value of the observed figure, the observation and the splitting
//!   estimate on it.
//! - [`terminal`]: the summary table and bpftrace-style log2 histograms.
//! - [`report`]: `report.html`, a run's, sweep's or check's page, self-contained.
//! - [`formats`]: results as bpftrace maps, `perf lock contention` and
//!   `/proc/lock_stat`, to set beside measurements.
//!
//! Architecture invariant: this crate knows result types only; it never
//! runs a simulation or reads a scenario.

pub mod band;
pub mod check_plot;
pub mod files;
pub mod formats;
pub mod measured;
pub mod plots;
pub mod report;
pub mod results;
pub mod sweep_plots;
pub mod sweep_table;
pub mod terminal;

pub use results::{Counter, ExperimentResult, Metric, Series, Stat, StatValue, VariantResult};
