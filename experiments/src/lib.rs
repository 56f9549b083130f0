//! `experiments`: the scenario language, the program it compiles to, the
//! world that runs it, the analyses, built-in experiments, sweeps and the
//! `convoy` command line.
//!
//! The modules in layers, lowest first: a module uses only modules listed
//! before it, so every dependency points down the list.
//! `tests/it/architecture.rs` holds the code to this order, and to no
//! module cycle at any level.
//!
//! 1. The compiled program, where the language and the runtime meet:
//!    - [`program`]: `Compiled`, per task group and work type a flat
//!      `Instr` list, and the specs of locks, statistics, memcgs,
//!      workqueues and works; it names nothing else of the crate.
//! 2. The scenario language:
//!    - [`scenario`]: TOML scenario files (and the libraries they include)
//!      to compiled programs, in passes, with errors that name file, line
//!      and field.
//! 3. The runtime:
//!    - [`world`]: one replication of one variant, single-threaded, and
//!      what it records for its observers (`--trace`, `--blame`);
//!    - [`progress`]: progress on stderr, a bar on a terminal and lines
//!      otherwise;
//!    - [`runner`]: variants x replications, in parallel, merged in a
//!      fixed order, plus the manifest.
//! 4. Analyses that run the world again:
//!    - [`blame`]: why the worst lock waits lasted (`--blame`).
//! 5. The built-in experiments:
//!    - [`builtin`]: the registry of what ships: scenarios (with their
//!      headline figures), sweeps and fleet reports;
//!    - [`validate`]: the model against the calibration targets of
//!      docs/cases.md;
//!    - [`bench`](mod@bench): the `bench-convoy` benchmark
//!      (docs/bench-convoy.md).
//! 6. Sweeps and fleet checks:
//!    - [`sweep`]: parameter sweeps, shards, resume and merge, and fleet
//!      reports judged against their runs.
//! 7. The command line:
//!    - [`cli`]: flags to a validated plan to a run, one module per
//!      command.

pub mod bench;
pub mod blame;
pub mod builtin;
pub mod cli;
pub mod program;
pub mod progress;
pub mod runner;
pub mod scenario;
pub mod sweep;
pub mod validate;
pub mod world;
