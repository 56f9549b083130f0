//! Typed ids of the things the models and the world keep state for.
//!
//! Each is a `u32` index, dense from 0, in a newtype of its own so that a
//! task id cannot index a lock table nor a CPU id stand for a task. A
//! vector indexed by an id is a `TiVec<Id, T>` (typed-index-collections),
//! indexed by the id itself; [`TaskId::index`] and its siblings give the
//! `usize` where a plain slice or an offset computation needs one.

use sim::dense_id as id;

id! {
    /// A task of the world: a scenario's task, or a kworker.
    TaskId
}

id! {
    /// A CPU. With unlimited CPUs every task runs on [`CpuId::ANY`].
    CpuId
}

impl CpuId {
    /// No CPU in particular: every CPU of an unlimited pool, an unbound
    /// workqueue's pwq and its items.
    pub const ANY: CpuId = CpuId(u32::MAX);
}

id! {
    /// A lock instance (one of a lock family's instances).
    LockId
}

id! {
    /// A workqueue.
    WqId
}

id! {
    /// A work item (one instance of a work type).
    WorkId
}

id! {
    /// A memory cgroup.
    MemcgId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_any_is_no_cpu_index() {
        assert_eq!(CpuId::ANY.0, u32::MAX);
        assert_eq!(TaskId::from(7usize).index(), 7);
    }
}
