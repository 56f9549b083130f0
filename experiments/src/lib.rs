//! `experiments`: the scenario language, the world that runs it, the
//! built-in experiments and the `convoy` command line.
//!
//! - [`scenario`]: TOML scenario files to compiled programs, with errors
//!   that name file, line and field;
//! - [`world`]: one replication of one variant, single-threaded;
//! - [`runner`]: variants x replications, in parallel, merged in a fixed
//!   order, plus the manifest;
//! - [`builtin`]: the experiments shipped in `scenarios/`;
//! - [`sweep`]: parameter sweeps, shards, resume and merge;
//! - [`bench`](mod@bench): the `bench-convoy` benchmark (docs/bench-convoy.md);
//! - [`validate`]: the model against the calibration targets of docs/cases.md;
//! - [`cli`]: flags to a validated plan to a run.

pub mod bench;
pub mod blame;
pub mod builtin;
pub mod cli;
pub mod program;
pub mod runner;
pub mod scenario;
pub mod sweep;
pub mod validate;
pub mod world;
