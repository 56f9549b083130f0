//! Dense ids: [`dense_id!`] declares a `u32` newtype that indexes a table,
//! so that an id of one kind cannot index a table of another. The crates
//! above name their ids with it (`models::ids`, the compiled program's);
//! a table indexed by one is a `TiVec<Id, T>` (typed-index-collections).

/// Declares `pub struct $name(pub u32)`, a dense index from 0, with
/// `new`, `index` (the `usize` a plain slice or an offset needs) and the
/// `usize` conversions `TiVec` indexes by.
#[macro_export]
macro_rules! dense_id {
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

#[cfg(test)]
mod tests {
    crate::dense_id! {
        /// A test id.
        Thing
    }

    #[test]
    fn an_id_is_its_index() {
        assert_eq!(Thing::new(7).index(), 7);
        assert_eq!(Thing::from(7usize), Thing(7));
        assert_eq!(usize::from(Thing(3)), 3);
        assert!(Thing(2) < Thing(10), "ids order as their indices");
    }
}
