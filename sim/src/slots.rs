//! [`SlotQueue`]: an event queue for entities that each have at most one
//! pending event (a task is either sleeping, burning CPU, or about to run:
//! never two of these at once).
//!
//! Ordering contract, the same as [`crate::EventQueue`]'s: the earliest
//! (time, sequence) first, where the sequence number is taken when the slot
//! is set, so same-time events run in the order they were scheduled.
//!
//! It is a winner tree (a tournament) over the slots: each node holds the
//! key and slot that win its subtree. Setting or clearing a slot replays one
//! leaf-to-root path, carrying the candidate up in registers and reading
//! only siblings, so the minimum is always at the root. The slots may be
//! split in several trees over consecutive ranges
//! ([`SlotQueue::with_bounds`]) that share the key space: a busy range (a
//! group of tasks) then replays a short path in a small, cache-hot tree,
//! and many rarely set slots (work item timers, idle tasks) do not
//! lengthen it; `pop` takes the smallest of the roots.
//!
//! Keys are one `u64` so that each level of the walk is one compare and two
//! conditional moves: `(time - base) << SUB_BITS | sub`, where `sub` is a
//! counter taken at each `set`. Three things keep that exact:
//! - when `sub` runs out, pending events are renumbered `0..n` in their
//!   exact (time, sequence) order, and counting goes on from `n`;
//! - `base` moves up to `now` once the time field would overflow and that
//!   brings the event within half the span, and every pending key is
//!   rebuilt;
//! - an event further ahead than the time field can hold (about 4.9 hours
//!   of simulated time) waits in a side heap with its exact (time,
//!   sequence), and `pop` takes whichever of the two is earlier.
//!
//! An event set for the current instant when none is pending at it is
//! the next to pop, so it waits in a FIFO beside the trees, with those set
//! the same way after it: a lock grant or a CPU handoff pops without a
//! walk.
//!
//! A randomized test checks that it pops in exactly the order of
//! [`crate::EventQueue`], with a tiny `SUB_BITS` so that renumbering, rebasing
//! and far events all happen.

use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A subtree's winner: the smallest key and its slot.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Node {
    key: u64,
    slot: u32,
}

const EMPTY: u64 = u64::MAX;

/// No slot: [`SlotQueue`]'s `stale` when no popped path waits for a
/// replay (a queue has at most [`SlotQueue::MAX_SLOTS`] slots).
const NO_SLOT: usize = usize::MAX;

/// The levels of a leaf's path [`SlotQueue::prefetch_path`] loads: the
/// rest of a path of 32,768 leaves (fifteen levels) is in the top ten
/// levels' 16 KiB, which every path shares.
const PREFETCH_LEVELS: usize = 6;

/// A slot's pending event: payload, exact time and sequence, and where
/// it waits.
#[derive(Copy, Clone, Debug)]
struct Entry<K> {
    time: u64,
    seq: u64,
    kind: K,
    place: Place,
}

/// Where a slot's pending event is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Place {
    None,
    Tree,
    Far,
    /// In `now_fifo`: set for the current instant.
    Now,
}

/// One winner tree over a range of slots.
#[derive(Clone, Debug)]
struct Tree {
    /// Leaves. Not rounded up to a power of two: with leaves at nodes
    /// `cap..2 * cap` and node `i`'s children at `2i` and `2i + 1`, every
    /// path still ends at the root, and most paths are a level shorter
    /// than in a tree padded to the next power of two.
    cap: usize,
    /// The tree's first slot.
    first: usize,
    /// Node 1 is the root; node cap + i is slot first + i's leaf (EMPTY
    /// if none).
    nodes: Vec<Node>,
}

impl Tree {
    fn new(first: usize, n: usize) -> Tree {
        let cap = n.max(2);
        let mut nodes = vec![
            Node {
                key: EMPTY,
                slot: first as u32
            };
            2 * cap
        ];
        for i in 0..cap {
            nodes[cap + i].slot = (first + i) as u32;
        }
        for node in (1..cap).rev() {
            nodes[node] = nodes[2 * node];
        }
        Tree { cap, first, nodes }
    }

    fn root(&self) -> Node {
        self.nodes[1]
    }

    fn leaf(&mut self, slot: usize) -> &mut Node {
        &mut self.nodes[self.cap + slot - self.first]
    }

    fn rebuild(&mut self) {
        for node in (1..self.cap).rev() {
            let (l, r) = (self.nodes[2 * node], self.nodes[2 * node + 1]);
            self.nodes[node] = if r.key < l.key { r } else { l };
        }
    }
}

/// Replays the path from leaf node `node` to the root of a tree's
/// `nodes` (see [`SlotQueue::replay`]).
///
/// The hot loop of every simulation: one compare and two conditional
/// moves per level (the compare is a coin flip for random event times,
/// and a mispredicted branch per level costs more), and no bounds
/// checks: `node` starts at a leaf (`cap <= node < 2 * cap`, checked) and
/// only moves to its sibling (`node ^ 1`, same level) or its parent
/// (`node >> 1`), all below `nodes.len() == 2 * cap`. The walk keeps the
/// node's byte offset, not its index: a node is 16 bytes, so the sibling
/// is `off ^ 16` and the parent `(off >> 1) & !15`, and no level scales
/// an index (two instructions a level fewer).
///
/// Returns the new root when the walk reached it (else the root is as it
/// was).
#[inline(always)]
fn walk(nodes: &mut [Node], node: usize, full: bool) -> Option<Node> {
    const SIZE: usize = std::mem::size_of::<Node>();
    const _: () = assert!(SIZE.is_power_of_two());
    assert!(node < nodes.len() && node >= nodes.len() / 2);
    let base = nodes.as_mut_ptr().cast::<u8>();
    let at = |off: usize| base.wrapping_add(off).cast::<Node>();
    let mut off = node * SIZE;
    // SAFETY: see above: every offset is that of a node below
    // nodes.len() (so the pointer is in bounds and aligned), and no other
    // reference into `nodes` lives during the loop.
    unsafe {
        let mut best = *at(off);
        while off > SIZE {
            let sib = *at(off ^ SIZE);
            let lt = sib.key < best.key;
            best.key = std::hint::select_unpredictable(lt, sib.key, best.key);
            best.slot = std::hint::select_unpredictable(lt, sib.slot, best.slot);
            off = (off >> 1) & !(SIZE - 1);
            let old = at(off);
            if !full && *old == best {
                return None;
            }
            *old = best;
        }
        Some(best)
    }
}

/// Pending events of `n` slots, at most one each. `SUB_BITS` is the width
/// of the same-time counter (20 in production; tests shrink it).
#[derive(Clone, Debug)]
pub struct SlotQueue<K: Copy, const SUB_BITS: u32 = 20> {
    /// Each slot's pending event: one entry, so that setting or popping a
    /// slot touches one cache line and checks one bound.
    entries: Vec<Entry<K>>,
    /// Trees over consecutive slot ranges: the first, over `0..head_end`,
    /// kept inline (the hot path of a one-tree queue reads no other
    /// pointer), then the rest, and each later slot's index in `rest`.
    head: Tree,
    head_end: usize,
    rest: Vec<Tree>,
    tree_of: Vec<u8>,
    /// Each tree's root (the head's first, then `rest`'s), side by side,
    /// so that `pop` compares them without reaching into every tree.
    roots: Vec<Node>,
    /// Events too far ahead for the tree: (time, seq, slot), exact; stale
    /// entries (slot cleared or set again) are skipped.
    far: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// Events set for the current instant while no other event is pending
    /// at it: (slot, seq) in the order they were set, stale entries
    /// skipped. They are next in the exact order, so they skip the tree:
    /// a lock grant or a CPU handoff costs no walk (see [`SlotQueue::set`]).
    now_fifo: VecDeque<(u32, u64)>,
    /// Slots in all.
    n: usize,
    base: u64,
    sub: u64,
    next_seq: u64,
    now: SimTime,
    len: usize,
    /// Renumberings so far (each sorts every pending event).
    renumbers: u64,
    /// A slot popped from the tree but not yet replayed ([`NO_SLOT`] if
    /// none): the usual next operation sets the same slot again, and then
    /// one replay serves both. Its leaf still holds the popped key until
    /// then: the set writes its new key there, and any other replay of its
    /// path empties the leaf first. A plain index, not an `Option`: it is
    /// read and reset at every pop and set.
    stale: usize,
    /// Whether a new winner's entry is prefetched ([`Self::set_prefetch`]).
    prefetch: bool,
}

impl<K: Copy, const SUB_BITS: u32> SlotQueue<K, SUB_BITS> {
    const SUB_LIMIT: u64 = 1 << SUB_BITS;
    /// Largest `time - base` the key can hold.
    const SPAN: u64 = (u64::MAX >> SUB_BITS) - 1;

    /// Most slots a queue may have: half the counter's range, so that a
    /// renumbering leaves room for at least as many sets again.
    pub const MAX_SLOTS: usize = 1 << (SUB_BITS - 1);

    /// Bytes each slot costs: its entry, its leaf and an internal node of
    /// its tree, and its tree's number.
    pub const BYTES_PER_SLOT: usize =
        std::mem::size_of::<Entry<K>>() + 2 * std::mem::size_of::<Node>() + 1;

    /// A queue of `n` slots, all empty; `fill` is a placeholder payload.
    /// Panics if `n > MAX_SLOTS` (callers check and report it).
    pub fn new(n: usize, fill: K) -> Self {
        Self::with_bounds(n, &[], fill)
    }

    /// A queue of `n` slots in trees over the ranges that `bounds` (each
    /// the first slot of a range, ascending; at most 255) cut `0..n` in.
    /// The order of events is the same as with one tree.
    pub fn with_bounds(n: usize, bounds: &[usize], fill: K) -> Self {
        assert!(
            n <= Self::MAX_SLOTS,
            "{n} slots: more than {}",
            Self::MAX_SLOTS
        );
        let mut starts = vec![0];
        for &b in bounds {
            if b > *starts.last().expect("not empty") && b < n {
                starts.push(b);
            }
        }
        assert!(starts.len() <= 255, "at most 255 trees");
        let mut trees = Vec::new();
        let mut tree_of = vec![0u8; n];
        for (i, &first) in starts.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(n);
            trees.push(Tree::new(first, end - first));
            tree_of[first..end].fill(i.saturating_sub(1) as u8);
        }
        let head_end = starts.get(1).copied().unwrap_or(n);
        let mut trees = trees.into_iter();
        let head = trees.next().expect("at least one tree");
        let rest: Vec<Tree> = trees.collect();
        let roots = std::iter::once(head.root())
            .chain(rest.iter().map(Tree::root))
            .collect();
        SlotQueue {
            entries: vec![
                Entry {
                    time: 0,
                    seq: 0,
                    kind: fill,
                    place: Place::None
                };
                n
            ],
            head,
            head_end,
            rest,
            tree_of,
            roots,
            far: BinaryHeap::new(),
            now_fifo: VecDeque::new(),
            n,
            base: 0,
            sub: 0,
            next_seq: 0,
            now: SimTime::ZERO,
            len: 0,
            renumbers: 0,
            stale: NO_SLOT,
            prefetch: false,
        }
    }

    pub fn slots(&self) -> usize {
        self.n
    }

    /// Slot `slot`'s leaf.
    #[inline]
    fn leaf(&mut self, slot: usize) -> &mut Node {
        if slot < self.head_end {
            let t = &mut self.head;
            &mut t.nodes[t.cap + slot]
        } else {
            self.rest[self.tree_of[slot] as usize].leaf(slot)
        }
    }

    /// The earliest of the trees' winners.
    #[inline]
    fn root(&self) -> Node {
        if self.rest.is_empty() {
            return self.head.root();
        }
        let mut best = self.roots[0];
        for &r in &self.roots[1..] {
            if r.key < best.key {
                best = r;
            }
        }
        best
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Total events ever scheduled.
    pub fn pushed(&self) -> u64 {
        self.next_seq
    }

    /// Renumberings (and rebases) so far: each costs a sort of every
    /// pending event.
    pub fn renumbers(&self) -> u64 {
        self.renumbers
    }

    /// Replays the path of a popped slot unless `slot` is about to replay
    /// it ([`NO_SLOT`]: none is). Returns whether `slot` was that popped
    /// slot (its leaf must then get a key or be emptied, and its path be
    /// replayed to the root).
    #[inline]
    fn settle(&mut self, slot: usize) -> bool {
        let s = std::mem::replace(&mut self.stale, NO_SLOT);
        if s == NO_SLOT {
            return false;
        }
        if s == slot {
            return true;
        }
        self.vacate(s, true);
        false
    }

    /// Empties slot `slot`'s leaf and replays its path (see
    /// [`SlotQueue::replay`] for `full`).
    #[inline(always)]
    fn vacate(&mut self, slot: usize, full: bool) {
        self.leaf(slot).key = EMPTY;
        self.replay(slot, full);
    }

    /// Recomputes the winners on the path from `slot`'s leaf to the root.
    /// Unless `full`, it stops at the first node whose winner does not
    /// change: the nodes above depend only on it and their other children,
    /// which did not change either. That holds when the rest of the tree is
    /// consistent, i.e. for every replay but that of a popped slot's path
    /// (`full`), whose nodes all still name the popped event. A new event
    /// that is not among the earliest thus stops after a few levels.
    #[inline]
    fn replay(&mut self, slot: usize, full: bool) {
        assert!(slot < self.n, "slot {slot} out of range");
        let (k, root) = if slot < self.head_end {
            let t = &mut self.head;
            (0, walk(&mut t.nodes, t.cap + slot, full))
        } else {
            let k = self.tree_of[slot] as usize;
            let t = &mut self.rest[k];
            (k + 1, walk(&mut t.nodes, t.cap + slot - t.first, full))
        };
        if let Some(r) = root {
            self.roots[k] = r;
            self.prefetch_entry(r);
        }
    }

    /// Prefetch the entry of each new winner of a tree: worth it only
    /// when the entries outgrow the cache (many slots), pure overhead
    /// otherwise.
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch = on;
    }

    /// Starts loading the entry of a tree's new winner: likely the next to
    /// pop, which reads it first thing (on a large machine, a cache miss
    /// that nothing else would overlap; see [`crate::prefetch`]).
    #[inline(always)]
    fn prefetch_entry(&self, winner: Node) {
        if !self.prefetch {
            return;
        }
        if let Some(e) = self.entries.get(winner.slot as usize) {
            crate::prefetch::lines(e);
        }
    }

    /// Rebuilds every internal node from the leaves.
    fn rebuild(&mut self) {
        let s = std::mem::replace(&mut self.stale, NO_SLOT);
        if s != NO_SLOT {
            self.leaf(s).key = EMPTY;
        }
        self.head.rebuild();
        self.roots[0] = self.head.root();
        for (k, t) in self.rest.iter_mut().enumerate() {
            t.rebuild();
            self.roots[k + 1] = t.root();
        }
    }

    /// Gives tree events new `sub` numbers 0..n in exact (time, seq) order.
    fn renumber(&mut self) {
        self.renumbers += 1;
        let mut pending: Vec<usize> = (0..self.n)
            .filter(|&s| self.entries[s].place == Place::Tree)
            .collect();
        pending.sort_by_key(|&s| (self.entries[s].time, self.entries[s].seq));
        for (rank, &s) in pending.iter().enumerate() {
            let key = ((self.entries[s].time - self.base) << SUB_BITS) | rank as u64;
            self.leaf(s).key = key;
        }
        self.sub = pending.len() as u64;
        self.rebuild();
    }

    /// Moves `base` up to `now`, rebuilding keys.
    fn rebase(&mut self) {
        self.base = self.now.0;
        self.renumber();
    }

    /// Schedules slot `slot`'s event at `at` (clamped to `now`), replacing
    /// any event it had.
    ///
    /// An event for the current instant when no event is pending at it
    /// (none in the trees or the side heap) is the next to pop, after any
    /// set the same way before it: it waits in `now_fifo` instead of a
    /// tree. Once one waits there, every event set for this instant does,
    /// so the order stays exactly (time, sequence).
    #[inline]
    pub fn set(&mut self, slot: usize, at: SimTime, kind: K) {
        let mut full = self.settle(slot);
        let at = at.max(self.now).0;
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut to_fifo = false;
        if at == self.now.0 {
            if self.entries[slot].place == Place::Tree {
                self.take_from_tree(slot);
            } else if full {
                // The popped slot's path still names the popped event.
                self.vacate(slot, true);
            }
            full = false;
            to_fifo = !self.now_fifo.is_empty() || self.nothing_pending_now();
        }
        let e = &mut self.entries[slot];
        if e.place == Place::None {
            self.len += 1;
        }
        e.kind = kind;
        e.time = at;
        e.seq = seq;
        if to_fifo {
            e.place = Place::Now;
            self.now_fifo.push_back((slot as u32, seq));
            return;
        }
        if at - self.base > Self::SPAN || self.sub == Self::SUB_LIMIT {
            self.set_rare(slot, at, full);
            return;
        }
        e.place = Place::Tree;
        self.insert(slot, at, full);
    }

    /// Whether no event in the trees or the side heap is due at `now`
    /// (a stale side-heap entry may say there is: then the event just
    /// takes the tree).
    #[inline]
    fn nothing_pending_now(&self) -> bool {
        let root = self.root();
        (root.key == EMPTY || (root.key >> SUB_BITS) + self.base > self.now.0)
            && self
                .far
                .peek()
                .is_none_or(|Reverse((t, _, _))| *t > self.now.0)
    }

    /// Takes slot `slot`'s pending event out of its tree (it counts as
    /// no event: the caller sets one or counts it gone).
    fn take_from_tree(&mut self, slot: usize) {
        self.entries[slot].place = Place::None;
        self.len -= 1;
        self.vacate(slot, false);
    }

    /// The rest of [`SlotQueue::set`] when the event does not fit the key
    /// as it is: rebase, the side heap, or a renumbering first.
    #[cold]
    fn set_rare(&mut self, slot: usize, at: u64, full: bool) {
        if full {
            // A popped slot's leaf still holds the popped key: a rebuild
            // must not see it.
            self.leaf(slot).key = EMPTY;
        }
        // Rebase only when that brings the event into the tree with room
        // to spare: an event too far ahead even from `now` goes to the side
        // heap without one (else 100,000 tasks each sleeping 1000000 s
        // would sort every pending event per sleep, quadratic), and
        // rebasing at most every SPAN / 2 of simulated time bounds the
        // sorts for events just inside the span.
        if at - self.base > Self::SPAN && at - self.now.0 <= Self::SPAN / 2 {
            self.rebase();
        }
        if at - self.base > Self::SPAN {
            // Too far ahead even from now: wait in the side heap. Replay
            // the leaf's path even if the slot was not in the tree: a slot
            // just popped left its path for this set to replay.
            self.vacate(slot, full);
            self.entries[slot].place = Place::Far;
            self.far
                .push(Reverse((at, self.entries[slot].seq, slot as u32)));
            return;
        }
        if self.sub == Self::SUB_LIMIT {
            // Renumber with this slot out of the way, then add it.
            self.entries[slot].place = Place::None;
            self.leaf(slot).key = EMPTY;
            self.renumber();
        }
        self.entries[slot].place = Place::Tree;
        self.insert(slot, at, full);
    }

    /// Gives slot `slot` (in the tree, at `at`) the next key, and replays
    /// its path: the tree is looked up once for both. Always inlined: in
    /// [`SlotQueue::set`], its one hot caller, it saves a call and the
    /// reloads of the queue's fields after it.
    #[inline(always)]
    fn insert(&mut self, slot: usize, at: u64, full: bool) {
        let key = ((at - self.base) << SUB_BITS) | self.sub;
        self.sub += 1;
        let (k, t, i) = if slot < self.head_end {
            (0, &mut self.head, slot)
        } else {
            let k = self.tree_of[slot] as usize;
            let t = &mut self.rest[k];
            let i = slot - t.first;
            (k + 1, t, i)
        };
        let node = t.cap + i;
        t.nodes[node].key = key;
        if let Some(r) = walk(&mut t.nodes, node, full) {
            self.roots[k] = r;
            self.prefetch_entry(r);
        }
    }

    /// Starts loading what setting slot `slot` will read: its entry and
    /// the lowest levels of its leaf's path (the upper levels are shared
    /// by every path and stay cached). For an entity whose event is about
    /// to run and likely set its slot again (see [`crate::prefetch`]).
    #[inline(always)]
    pub fn prefetch_path(&self, slot: usize) {
        if slot >= self.n {
            return;
        }
        crate::prefetch::lines(&self.entries[slot]);
        let (t, i) = if slot < self.head_end {
            (&self.head, slot)
        } else {
            let t = &self.rest[self.tree_of[slot] as usize];
            (t, slot - t.first)
        };
        // A line holds 4 nodes: the levels below the 4th from the top of
        // a tree of a few hundred leaves are the ones that miss.
        let mut node = t.cap + i;
        for _ in 0..PREFETCH_LEVELS {
            if node < 16 {
                break;
            }
            crate::prefetch::lines(&t.nodes[node]);
            node >>= 1;
        }
    }

    /// Cancels slot `slot`'s event, if any.
    #[inline]
    pub fn clear(&mut self, slot: usize) {
        match self.entries[slot].place {
            Place::None => {
                // Popped and not yet replayed, or never set.
                if self.stale == slot {
                    self.stale = NO_SLOT;
                    self.vacate(slot, true);
                }
            }
            Place::Tree => {
                self.settle(NO_SLOT);
                self.take_from_tree(slot);
            }
            Place::Far | Place::Now => {
                // The heap's or FIFO's entry goes stale and is skipped when
                // it surfaces.
                self.entries[slot].place = Place::None;
                self.len -= 1;
            }
        }
    }

    /// Whether slot `slot` has a pending event.
    pub fn is_set(&self, slot: usize) -> bool {
        self.entries[slot].place != Place::None
    }

    /// The time of slot `slot`'s pending event, if it has one.
    pub fn time_of(&self, slot: usize) -> Option<SimTime> {
        (self.entries[slot].place != Place::None).then(|| SimTime(self.entries[slot].time))
    }

    /// The slot of the first live event in `now_fifo`, dropping the stale
    /// entries before it.
    fn fifo_front(&mut self) -> Option<usize> {
        while let Some(&(s, q)) = self.now_fifo.front() {
            let e = &self.entries[s as usize];
            if e.place == Place::Now && e.seq == q {
                return Some(s as usize);
            }
            self.now_fifo.pop_front();
        }
        None
    }

    /// The earliest live far event, dropping stale heap entries.
    fn far_top(&mut self) -> Option<(u64, u64, usize)> {
        while let Some(&Reverse((t, q, s))) = self.far.peek() {
            let s = s as usize;
            if self.entries[s].place == Place::Far && self.entries[s].seq == q {
                return Some((t, q, s));
            }
            self.far.pop();
        }
        None
    }

    /// The earliest event (time, slot, payload), removed from the queue;
    /// `now` advances to its time. Always inlined: the world's loop pops
    /// every event, and once `World::run_until` (splitting) was a second
    /// caller in the binary the compiler stopped inlining it there, 3.7%
    /// more instructions on `convoy bench`.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(SimTime, usize, K)> {
        self.settle(NO_SLOT);
        if let Some(s) = self.fifo_front() {
            self.now_fifo.pop_front();
            let e = &mut self.entries[s];
            e.place = Place::None;
            self.len -= 1;
            return Some((self.now, s, e.kind));
        }
        let root = self.root();
        let from_tree = root.key != EMPTY;
        if !self.far.is_empty() {
            if let Some((t, q, s)) = self.far_top() {
                let r = root.slot as usize;
                if !from_tree || (t, q) < (self.entries[r].time, self.entries[r].seq) {
                    self.far.pop();
                    self.entries[s].place = Place::None;
                    self.len -= 1;
                    self.now = SimTime(t);
                    return Some((self.now, s, self.entries[s].kind));
                }
            }
        }
        if !from_tree {
            return None;
        }
        let slot = root.slot as usize;
        // The leaf keeps the popped key until the path's replay (see
        // `stale`): the usual next set writes its new key there.
        let e = &mut self.entries[slot];
        e.place = Place::None;
        self.now = SimTime(e.time);
        self.len -= 1;
        self.stale = slot;
        Some((self.now, slot, e.kind))
    }

    /// The time of the earliest event, without removing it.
    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.settle(NO_SLOT);
        if self.fifo_front().is_some() {
            return Some(self.now);
        }
        let root = self.root();
        let tree = (root.key != EMPTY).then(|| self.entries[root.slot as usize].time);
        let far = self.far_top().map(|(t, _, _)| t);
        match (tree, far) {
            (Some(a), Some(b)) => Some(SimTime(a.min(b))),
            (a, b) => a.or(b).map(SimTime),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventQueue;
    use rand::{Rng, SeedableRng};

    #[test]
    fn same_time_events_pop_in_scheduling_order() {
        let mut q: SlotQueue<char> = SlotQueue::new(5, ' ');
        q.set(3, SimTime(10), 'c');
        q.set(4, SimTime(5), 'a');
        q.set(0, SimTime(10), 'd');
        q.set(1, SimTime(5), 'b');
        q.set(2, SimTime(10), 'e');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, _, k)| k)).collect();
        assert_eq!(order, vec!['a', 'b', 'c', 'd', 'e']);
        assert!(q.is_empty());
    }

    #[test]
    fn events_for_the_current_instant_keep_the_scheduling_order() {
        let mut q: SlotQueue<char> = SlotQueue::new(6, ' ');
        q.set(0, SimTime(10), 'a');
        q.set(1, SimTime(10), 'b');
        assert_eq!(q.pop(), Some((SimTime(10), 0, 'a')));
        // 'b' is pending at this instant: 'c' goes after it (in the tree).
        q.set(2, SimTime(10), 'c');
        q.set(3, SimTime(11), 'x');
        assert_eq!(q.pop(), Some((SimTime(10), 1, 'b')));
        assert_eq!(q.pop(), Some((SimTime(10), 2, 'c')));
        // Nothing is pending at 10 any more: these skip the tree, in order;
        // one set again goes to the back, one cleared is gone.
        q.set(4, SimTime(10), 'd');
        q.set(5, SimTime(3), 'e'); // clamped to now
        q.set(0, SimTime(10), 'f');
        q.set(4, SimTime(10), 'g');
        q.clear(0);
        assert_eq!(q.len(), 3);
        assert_eq!(q.time_of(5), Some(SimTime(10)));
        assert_eq!(q.peek_time(), Some(SimTime(10)));
        assert_eq!(q.pop(), Some((SimTime(10), 5, 'e')));
        // Moved from the current instant to a later one.
        q.set(4, SimTime(12), 'h');
        assert_eq!(q.pop(), Some((SimTime(11), 3, 'x')));
        assert_eq!(q.pop(), Some((SimTime(12), 4, 'h')));
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn set_replaces_and_clear_cancels() {
        let mut q: SlotQueue<u8> = SlotQueue::new(3, 0u8);
        q.set(0, SimTime(10), 1);
        q.set(1, SimTime(20), 2);
        q.set(0, SimTime(30), 3);
        q.clear(1);
        q.clear(2);
        assert_eq!(q.len(), 1);
        assert_eq!(q.peek_time(), Some(SimTime(30)));
        assert_eq!(q.pop(), Some((SimTime(30), 0, 3)));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn events_hours_apart_and_far_ahead_keep_their_order() {
        let mut q: SlotQueue<u8> = SlotQueue::new(4, 0);
        let h = 3_600_000_000_000u64;
        q.set(0, SimTime(100 * h), 0); // far beyond the key's time span
        q.set(1, SimTime(3 * h), 1);
        q.set(2, SimTime(100 * h), 2); // same far time, scheduled later
        q.set(3, SimTime(1), 3);
        let order: Vec<(u64, usize)> =
            std::iter::from_fn(|| q.pop().map(|(t, s, _)| (t.0, s))).collect();
        assert_eq!(order, vec![(1, 3), (3 * h, 1), (100 * h, 0), (100 * h, 2)]);
    }

    /// Pops in exactly the order of the general EventQueue under a random
    /// workload of pops, reschedules (some at the same instant, some far
    /// ahead), wakeups of idle slots and cancellations; `B` is the counter
    /// width, small enough that renumbering happens all the time.
    fn matches_event_queue<const B: u32>(far_ns: u64, n: usize, seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        // One tree, two split at a seeded point (also 0 and n), or up to
        // five.
        let split = match seed % 5 {
            0 => vec![n],
            1 => vec![0],
            2 => {
                let mut b: Vec<usize> = (0..4).map(|_| rng.random_range(0..=n)).collect();
                b.sort();
                b
            }
            _ => vec![rng.random_range(0..=n)],
        };
        let mut a: SlotQueue<u32, B> = SlotQueue::with_bounds(n, &split, 0);
        let mut b: EventQueue<usize> = EventQueue::new();
        let mut ids = vec![None; n];
        for (s, id) in ids.iter_mut().enumerate() {
            let at = SimTime(rng.random_range(0..50));
            a.set(s, at, 0);
            *id = Some(b.push(at, s));
        }
        for _ in 0..20_000 {
            let x = a.pop();
            let y = b.pop();
            assert_eq!(x.map(|(t, s, _)| (t, s)), y, "n={n} B={B} split={split:?}");
            let Some((now, s, _)) = x else { break };
            ids[s] = None;
            if rng.random_bool(0.9) {
                let d = match rng.random_range(0..10) {
                    0 => 0,
                    1 => far_ns + rng.random_range(0..3),
                    _ => rng.random_range(0..4) * rng.random_range(0..30),
                };
                a.set(s, now + crate::Dur(d), 0);
                ids[s] = Some(b.push(now + crate::Dur(d), s));
            }
            let o = rng.random_range(0..n);
            if ids[o].is_none() && rng.random_bool(0.5) {
                a.set(o, now, 0);
                ids[o] = Some(b.push(now, o));
            } else if let Some(id) = ids[o] {
                if rng.random_bool(0.05) {
                    a.clear(o);
                    b.cancel(id);
                    ids[o] = None;
                } else if rng.random_bool(0.05) {
                    // Set again while pending: now or later.
                    let at = now + crate::Dur(rng.random_range(0..2) * rng.random_range(0..30));
                    a.set(o, at, 0);
                    b.cancel(id);
                    ids[o] = Some(b.push(at, o));
                }
            }
            assert_eq!(a.len(), b.len());
        }
    }

    #[test]
    fn pops_in_exactly_the_order_of_the_event_queue() {
        for (i, n) in [1usize, 2, 3, 7, 13, 64, 68, 100].into_iter().enumerate() {
            matches_event_queue::<20>(1_000, n, 42 + i as u64);
        }
    }

    #[test]
    fn renumbering_rebasing_and_far_events_keep_the_exact_order() {
        // 4-bit counter: renumbers every few sets; time span 2^60 - 2 ns,
        // so no far events: exercise renumbering alone.
        for (i, n) in [1usize, 3, 7, 8].into_iter().enumerate() {
            matches_event_queue::<4>(1_000, n, 7 + i as u64);
        }
        // 61-bit counter: time span of 6 ns, so most events rebase or go to
        // the side heap.
        for (i, n) in [1usize, 2, 5, 33].into_iter().enumerate() {
            matches_event_queue::<61>(50, n, 99 + i as u64);
        }
    }

    #[test]
    fn far_events_do_not_rebase_or_renumber() {
        // Each set far beyond the span used to rebase (a sort of every
        // pending event) and still go to the side heap.
        let n = 10_000;
        let mut q: SlotQueue<u32> = SlotQueue::new(n, 0);
        let far = 1_000_000 * 1_000_000_000u64;
        for s in 0..n {
            q.set(s, SimTime(1), 0);
        }
        for s in 0..n {
            let (t, slot, _) = q.pop().unwrap();
            assert_eq!((t, slot), (SimTime(1), s));
            q.set(slot, t + crate::Dur(far + s as u64), 0);
        }
        assert_eq!(q.renumbers(), 0);
        for s in 0..n {
            assert_eq!(
                q.pop().map(|(t, s, _)| (t.0, s)),
                Some((1 + far + s as u64, s))
            );
        }
        assert!(q.is_empty());
    }

    #[test]
    fn time_of_is_the_pending_events_time() {
        let mut q: SlotQueue<u8> = SlotQueue::new(4, 0);
        assert_eq!(q.time_of(2), None);
        q.set(2, SimTime(50), 1);
        q.set(1, SimTime(20), 1);
        assert_eq!(q.time_of(2), Some(SimTime(50)));
        assert_eq!(q.pop(), Some((SimTime(20), 1, 1)));
        assert_eq!(q.time_of(1), None);
        q.clear(2);
        assert_eq!(q.time_of(2), None);
    }
}
