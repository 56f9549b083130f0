//! `sim`: the discrete-event engine under `convoy`.
//!
//! Layers, bottom up:
//! - [`id`]: [`dense_id!`], the typed `u32` indices the crates above name
//!   their tables' ids with.
//! - [`time`]: simulated time as integer nanoseconds ([`SimTime`], [`Dur`])
//!   and the unit-suffixed duration syntax of scenario files (`850ns`, `1.3us`).
//! - [`queue`]: the event queue, ordered by (time, insertion sequence).
//! - [`rng`]: ChaCha random streams, one per entity, keyed by
//!   (run seed, replication, stable entity name, instance index).
//! - [`dist`]: duration distributions, including empirical ones read from a
//!   bpftrace `hist()` dump or a column of samples.
//! - [`stats`]: HDR latency histograms with their log2 view, and per-window
//!   aggregates.
//!
//! Architecture invariant: this crate does no I/O and knows nothing about
//! kernels. Text parsers here take `&str`; reading files is the caller's job.

pub mod dist;
pub mod id;
pub mod prefetch;
pub mod queue;
pub mod rng;
pub mod slots;
pub mod stats;
pub mod time;

pub use queue::{EventId, EventQueue};
pub use rng::{stream, Stream, StreamKey};
pub use slots::SlotQueue;
pub use time::{Dur, SimTime};
