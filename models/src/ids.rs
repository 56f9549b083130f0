//! Typed ids of the things the models and the world keep state for.
//!
//! Each is a `u32` index, dense from 0, in a newtype of its own so that a
//! task id cannot index a lock table nor a CPU id stand for a task. A
//! vector indexed by an id is a `TiVec<Id, T>` (typed-index-collections),
//! indexed by the id itself; [`TaskId::index`] and its siblings give the
//! `usize` where a plain slice or an offset computation needs one.

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            pub const fn new(i: u32) -> Self {
                $name(i)
            }

            /// The id as an index into a slice.
            #[inline(always)]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        /// The id of index `i` (ids are dense from 0; a table's length
        /// never passes `u32::MAX`).
        impl From<usize> for $name {
            #[inline(always)]
            fn from(i: usize) -> Self {
                debug_assert!(u32::try_from(i).is_ok(), "{} {i} out of range", stringify!($name));
                $name(i as u32)
            }
        }

        impl From<$name> for usize {
            #[inline(always)]
            fn from(id: $name) -> usize {
                id.index()
            }
        }
    };
}

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
    fn an_id_is_its_index() {
        assert_eq!(TaskId::new(7).index(), 7);
        assert_eq!(TaskId::from(7usize), TaskId(7));
        assert_eq!(usize::from(CpuId(3)), 3);
        assert!(TaskId(2) < TaskId(10), "ids order as their indices");
        assert_eq!(CpuId::ANY.0, u32::MAX);
    }
}
