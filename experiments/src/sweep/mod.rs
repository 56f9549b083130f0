//! Parameter sweeps (docs/sweeps.md): one scenario run at many points of
//! a parameter space, in parallel, resumable, shardable over a cluster.
//!
//! - [`spec`]: the sweep file, expanded into points (grid or
//!   Latin-hypercube sample), each with a seed derived from the master
//!   seed and the point's canonical `--set` text;
//! - [`store`]: the sweep directory (header, one file per point,
//!   `points.csv`, plots), written atomically;
//! - [`run`]: running a sweep or a shard, skipping finished points;
//! - [`merge`](mod@merge): joining shards;
//! - [`check`]: a fleet report (a sweep with an observation and an
//!   exposure) judged against the runs;
//! - [`split`]: a report's rare worst value, its chance per run
//!   estimated by multilevel splitting (`check --splitting`);
//! - [`split_check`]: splitting held against runs one by one (`convoy
//!   validate --experiment splitting`);
//! - [`band`]: a scenario's statistics over the cited ranges of its
//!   machine's values (`convoy band`), a sweep of its own making.

pub mod band;
pub mod check;
pub mod merge;
pub mod run;
pub mod spec;
pub mod split;
pub mod split_check;
pub mod store;

pub use merge::merge;
pub use run::{run_sweep, SweepOptions, SweepReport};
pub use spec::{parse, sweep_source, SweepSpec};
