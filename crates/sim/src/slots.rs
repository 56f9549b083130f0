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

const EMPTY: u128 = u128::MAX;

/// Pending events of `n` slots, at most one each.
#[derive(Clone, Debug)]
pub struct SlotQueue<K: Copy> {
    /// Payload of each pending slot.
    kinds: Vec<K>,
    /// Node n's subtree winner: key (time << 64 | seq, or EMPTY) and slot.
    /// Node 1 is the root; node cap + i is slot i's leaf.
    best_key: Vec<u128>,
    best_slot: Vec<u32>,
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
        let cap = n.max(1).next_power_of_two();
        let mut q = SlotQueue {
            kinds: vec![fill; cap],
            best_key: vec![EMPTY; 2 * cap],
            best_slot: vec![0; 2 * cap],
            cap,
            next_seq: 0,
            now: SimTime::ZERO,
            len: 0,
            stale: None,
        };
        for i in 0..cap {
            q.best_slot[cap + i] = i as u32;
        }
        for node in (1..cap).rev() {
            q.best_slot[node] = q.best_slot[2 * node];
        }
        q
    }

    pub fn slots(&self) -> usize {
        self.cap
    }

    #[inline]
    fn key(&self, slot: usize) -> u128 {
        self.best_key[self.cap + slot]
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

    #[inline]
    fn replay(&mut self, slot: usize) {
        let mut node = self.cap + slot;
        let key = self.best_key[node];
        let (mut hi, mut lo) = ((key >> 64) as u64, key as u64);
        let mut win = slot as u32;
        while node > 1 {
            let sib = node ^ 1;
            let (sk, ss) = (self.best_key[sib], self.best_slot[sib]);
            let (shi, slo) = ((sk >> 64) as u64, sk as u64);
            // The comparison is a coin flip for random event times: a
            // conditional move on each 64-bit half beats a mispredicted
            // branch per level.
            let lt = (shi < hi) | ((shi == hi) & (slo < lo));
            hi = std::hint::select_unpredictable(lt, shi, hi);
            lo = std::hint::select_unpredictable(lt, slo, lo);
            win = std::hint::select_unpredictable(lt, ss, win);
            node >>= 1;
            self.best_key[node] = (u128::from(hi) << 64) | u128::from(lo);
            self.best_slot[node] = win;
        }
    }

    /// Schedules slot `slot`'s event at `at` (clamped to `now`), replacing
    /// any event it had.
    #[inline]
    pub fn set(&mut self, slot: usize, at: SimTime, kind: K) {
        self.settle(slot);
        let at = at.max(self.now);
        if self.key(slot) == EMPTY {
            self.len += 1;
        }
        self.best_key[self.cap + slot] = (u128::from(at.0) << 64) | u128::from(self.next_seq);
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
        if self.key(slot) != EMPTY {
            self.best_key[self.cap + slot] = EMPTY;
            self.len -= 1;
            self.replay(slot);
        }
    }

    /// Whether slot `slot` has a pending event.
    pub fn is_set(&self, slot: usize) -> bool {
        self.key(slot) != EMPTY
    }

    /// The earliest event (time, slot, payload), removed from the queue;
    /// `now` advances to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, usize, K)> {
        self.settle(usize::MAX);
        let key = self.best_key[1];
        if key == EMPTY {
            return None;
        }
        let slot = self.best_slot[1] as usize;
        let at = SimTime((key >> 64) as u64);
        self.now = at;
        self.best_key[self.cap + slot] = EMPTY;
        self.len -= 1;
        self.stale = Some(slot);
        Some((at, slot, self.kinds[slot]))
    }

    /// The time of the earliest event, without removing it.
    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.settle(usize::MAX);
        let key = self.best_key[1];
        (key != EMPTY).then(|| SimTime((key >> 64) as u64))
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
