//! [`SlotQueue`]: an event queue for entities that each have at most one
//! pending event (a task is either sleeping, burning CPU, or about to run:
//! never two of these at once).
//!
//! Same ordering contract as [`crate::EventQueue`]: the earliest (time,
//! sequence) first, where the sequence number is taken when the slot is
//! set, so same-time events run in the order they were scheduled.
//!
//! It is a winner tree (a tournament) over the slots: each node holds the
//! key and slot that win its subtree. Setting or clearing a slot replays one
//! leaf-to-root path, carrying the candidate up in registers and reading
//! only siblings (which no earlier step of the walk wrote), so the walk is
//! not one long chain of dependent loads; the minimum is always at the root. A discrete-event loop that pops an
//! entity's event and then gives the same entity its next one pays for one
//! path per event instead of a heap's pop and push.

use crate::time::SimTime;

/// A subtree's winner: the earliest (time, seq) and its slot.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Node {
    time: u64,
    seq: u64,
    slot: u32,
}

const EMPTY_TIME: u64 = u64::MAX;
const EMPTY_SEQ: u64 = u64::MAX;

impl Node {
    fn is_empty(&self) -> bool {
        self.time == EMPTY_TIME && self.seq == EMPTY_SEQ
    }

}

/// Pending events of `n` slots, at most one each.
#[derive(Clone, Debug)]
pub struct SlotQueue<K: Copy> {
    /// Payload of each pending slot.
    kinds: Vec<K>,
    /// Node 1 is the root; node cap + i is slot i's leaf; empty leaves hold
    /// (EMPTY_TIME, EMPTY_SEQ).
    nodes: Vec<Node>,
    cap: usize,
    next_seq: u64,
    now: SimTime,
    len: usize,
    /// A slot popped but not yet replayed: the usual next operation sets
    /// the same slot again, and then one replay serves both.
    stale: Option<usize>,
}

impl<K: Copy> SlotQueue<K> {
    /// A queue of `n` slots, all empty; `fill` is a placeholder payload.
    pub fn new(n: usize, fill: K) -> Self {
        let cap = n.max(2).next_power_of_two();
        let empty = |slot| Node { time: EMPTY_TIME, seq: EMPTY_SEQ, slot };
        let mut nodes = vec![empty(0); 2 * cap];
        for i in 0..cap {
            nodes[cap + i] = empty(i as u32);
        }
        for node in (1..cap).rev() {
            nodes[node] = nodes[2 * node];
        }
        SlotQueue {
            kinds: vec![fill; cap],
            nodes,
            cap,
            next_seq: 0,
            now: SimTime::ZERO,
            len: 0,
            stale: None,
        }
    }

    pub fn slots(&self) -> usize {
        self.cap
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

    /// Replays the path of a popped slot unless `slot` is about to replay it.
    #[inline]
    fn settle(&mut self, slot: usize) {
        if let Some(s) = self.stale.take() {
            if s != slot {
                self.replay(s);
            }
        }
    }

    /// Recomputes the winners on the path from `slot`'s leaf to the root.
    ///
    /// The hot loop of every simulation, so it is written for the machine:
    /// each field is selected with a conditional move (the compare is a coin flip for random event times,
    /// and a mispredicted branch per level costs more), and the indices are
    /// not bounds-checked: `node` starts at a leaf, `cap + slot < 2 * cap`,
    /// and only moves to its sibling (`node ^ 1`, same level) or its parent
    /// (`node >> 1`), all below `nodes.len() == 2 * cap`.
    #[inline]
    fn replay(&mut self, slot: usize) {
        assert!(slot < self.cap, "slot {slot} out of range");
        debug_assert_eq!(self.nodes.len(), 2 * self.cap);
        let nodes = self.nodes.as_mut_ptr();
        let mut node = self.cap + slot;
        // SAFETY: see above: every index is below 2 * cap == nodes.len(),
        // and no other reference into `nodes` lives during the loop.
        unsafe {
            let mut best = *nodes.add(node);
            while node > 1 {
                let sib = *nodes.add(node ^ 1);
                // Spelled out rather than as a u128 compare, which LLVM
                // turns back into a branch.
                let lt = (sib.time < best.time) | ((sib.time == best.time) & (sib.seq < best.seq));
                best.time = std::hint::select_unpredictable(lt, sib.time, best.time);
                best.seq = std::hint::select_unpredictable(lt, sib.seq, best.seq);
                best.slot = std::hint::select_unpredictable(lt, sib.slot, best.slot);
                node >>= 1;
                *nodes.add(node) = best;
            }
        }
    }

    /// Schedules slot `slot`'s event at `at` (clamped to `now`), replacing
    /// any event it had.
    #[inline]
    pub fn set(&mut self, slot: usize, at: SimTime, kind: K) {
        self.settle(slot);
        let at = at.max(self.now);
        let leaf = &mut self.nodes[self.cap + slot];
        if leaf.is_empty() {
            self.len += 1;
        }
        leaf.time = at.0;
        leaf.seq = self.next_seq;
        self.next_seq += 1;
        self.kinds[slot] = kind;
        self.replay(slot);
    }

    /// Cancels slot `slot`'s event, if any.
    #[inline]
    pub fn clear(&mut self, slot: usize) {
        if self.stale == Some(slot) {
            self.stale = None;
            self.replay(slot);
            return;
        }
        let leaf = &mut self.nodes[self.cap + slot];
        if !leaf.is_empty() {
            leaf.time = EMPTY_TIME;
            leaf.seq = EMPTY_SEQ;
            self.len -= 1;
            self.replay(slot);
        }
    }

    /// Whether slot `slot` has a pending event.
    pub fn is_set(&self, slot: usize) -> bool {
        !self.nodes[self.cap + slot].is_empty()
    }

    /// The earliest event (time, slot, payload), removed from the queue;
    /// `now` advances to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, usize, K)> {
        self.settle(usize::MAX);
        let root = self.nodes[1];
        if root.is_empty() {
            return None;
        }
        let slot = root.slot as usize;
        let at = SimTime(root.time);
        self.now = at;
        let leaf = &mut self.nodes[self.cap + slot];
        leaf.time = EMPTY_TIME;
        leaf.seq = EMPTY_SEQ;
        self.len -= 1;
        self.stale = Some(slot);
        Some((at, slot, self.kinds[slot]))
    }

    /// The time of the earliest event, without removing it.
    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.settle(usize::MAX);
        let root = self.nodes[1];
        (!root.is_empty()).then_some(SimTime(root.time))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventQueue;
    use rand::{Rng, SeedableRng};

    #[test]
    fn same_time_events_pop_in_scheduling_order() {
        let mut q = SlotQueue::new(5, ' ');
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
    fn set_replaces_and_clear_cancels() {
        let mut q = SlotQueue::new(3, 0u8);
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

    /// A random workload of "pop one, give it (or others) new events, maybe
    /// cancel some" pops in exactly the order of the general EventQueue.
    #[test]
    fn pops_in_exactly_the_order_of_the_event_queue() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
        for n in [1usize, 2, 3, 7, 64, 100] {
            let mut a = SlotQueue::new(n, 0u32);
            let mut b: EventQueue<usize> = EventQueue::new();
            let mut ids = vec![None; n];
            for s in 0..n {
                let at = SimTime(rng.random_range(0..50));
                a.set(s, at, 0);
                ids[s] = Some(b.push(at, s));
            }
            for _ in 0..20_000 {
                let x = a.pop();
                let y = b.pop();
                assert_eq!(x.map(|(t, s, _)| (t, s)), y, "n={n}");
                let Some((now, s, _)) = x else { break };
                ids[s] = None;
                // Reschedule this slot (or not), sometimes at the same instant.
                if rng.random_bool(0.9) {
                    let at = now + crate::Dur(rng.random_range(0..4) * rng.random_range(0..30));
                    a.set(s, at, 0);
                    ids[s] = Some(b.push(at, s));
                }
                // Sometimes wake another idle slot now, or cancel a pending one.
                let o = rng.random_range(0..n);
                if ids[o].is_none() && rng.random_bool(0.5) {
                    a.set(o, now, 0);
                    ids[o] = Some(b.push(now, o));
                } else if let Some(id) = ids[o] {
                    if rng.random_bool(0.05) {
                        a.clear(o);
                        b.cancel(id);
                        ids[o] = None;
                    }
                }
            }
        }
    }
}
