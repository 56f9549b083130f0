//! CPUs and the order in which runnable tasks get them.
//!
//! - [`cpu`]: [`CpuPool`], N CPUs (or unlimited) with one shared run queue
//!   or one per CPU, bound kworkers' queues and an RT queue;
//! - [`fair`]: [`fair::FairOrder`], the fair class's order of a run queue,
//!   EEVDF or CFS behind one interface;
//! - [`eevdf`]: EEVDF's order (Linux 6.6 on), with load weights;
//! - [`cfs`]: CFS's order (before 6.6);
//! - `entity`: what EEVDF and CFS both keep per task.
//!
//! Dependencies point one way: `cpu` -> `fair` -> `eevdf`, `cfs` ->
//! `entity` -> `crate::ids`.

pub mod cfs;
pub mod cpu;
pub mod eevdf;
mod entity;
pub mod fair;

pub use cpu::CpuPool;
pub use eevdf::{nice_to_weight, NICE_0_WEIGHT};
