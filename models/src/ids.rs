//! Ids of the things the models keep state for.

/// Index of a task in the world.
pub type TaskId = u32;

/// A CPU id. With unlimited CPUs every task runs on [`Cpu::ANY`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cpu(pub u32);

impl Cpu {
    pub const ANY: Cpu = Cpu(u32::MAX);
}

/// A work item, named by the world.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkId(pub u32);
