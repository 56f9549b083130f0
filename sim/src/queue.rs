//! The event queue.
//!
//! Contract (ARCHITECTURE.md, invariants): events pop in order of (time, insertion
//! sequence). Two events at the same instant pop in the order they were
//! pushed, whatever their payloads. Cancelled events never pop.
//!
//! A binary heap of (time, sequence, payload) entries, compared as one
//! 128-bit key (time in the high half), which compiles to branch-free code. Cancellation is lazy:
//! the sequence number goes into a small ordered set and the entry is dropped
//! when it reaches the top. Runs with no cancellations pay one `is_empty`
//! check per pop.

use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap};

/// Identifies one scheduled event, for [`EventQueue::cancel`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(u64);

struct Entry<E> {
    at: SimTime,
    seq: u64,
    payload: E,
}

impl<E> Entry<E> {
    #[inline]
    fn key(&self) -> u128 {
        (u128::from(self.at.0) << 64) | u128::from(self.seq)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that the max-heap pops the earliest (time, seq) first.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

/// A queue of future events with payload `E`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    cancelled: BTreeSet<u64>,
    now: SimTime,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
            cancelled: BTreeSet::new(),
            now: SimTime::ZERO,
        }
    }

    /// The time of the last popped event (zero before the first pop).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `payload` at `at`. Scheduling in the past is a logic error
    /// of the caller; the event is clamped to `now` so time never runs back.
    #[inline]
    pub fn push(&mut self, at: SimTime, payload: E) -> EventId {
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, payload });
        EventId(seq)
    }

    /// Cancels a scheduled event. Cancelling one that already popped or was
    /// already cancelled is a no-op.
    pub fn cancel(&mut self, id: EventId) {
        if id.0 < self.next_seq && self.heap.iter().any(|e| e.seq == id.0) {
            self.cancelled.insert(id.0);
        }
    }

    /// Pops the earliest live event, advancing `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        while let Some(e) = self.heap.pop() {
            if !self.cancelled.is_empty() && self.cancelled.remove(&e.seq) {
                continue;
            }
            self.now = e.at;
            return Some((e.at, e.payload));
        }
        None
    }

    /// The time of the earliest live event, without popping it.
    pub fn peek_time(&mut self) -> Option<SimTime> {
        while let Some(e) = self.heap.peek() {
            if !self.cancelled.is_empty() && self.cancelled.contains(&e.seq) {
                let seq = e.seq;
                self.heap.pop();
                self.cancelled.remove(&seq);
                continue;
            }
            return Some(e.at);
        }
        None
    }

    /// Number of live scheduled events.
    pub fn len(&self) -> usize {
        self.heap.len() - self.cancelled.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total events ever pushed.
    pub fn pushed(&self) -> u64 {
        self.next_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        q.push(SimTime(10), 'c');
        q.push(SimTime(5), 'a');
        q.push(SimTime(10), 'd');
        q.push(SimTime(5), 'b');
        q.push(SimTime(10), 'e');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'c', 'd', 'e']);
    }

    #[test]
    fn insertion_order_holds_for_many_ties() {
        let mut q = EventQueue::new();
        for i in 0..1000u32 {
            q.push(SimTime(u64::from(i % 3)), i);
        }
        let mut last = (SimTime(0), 0u32);
        let mut n = 0;
        while let Some((t, i)) = q.pop() {
            if t == last.0 && n > 0 {
                assert!(i > last.1, "tie broken out of insertion order");
            }
            assert!(t >= last.0);
            last = (t, i);
            n += 1;
        }
        assert_eq!(n, 1000);
    }

    #[test]
    fn cancelled_events_never_pop() {
        let mut q = EventQueue::new();
        let a = q.push(SimTime(1), 'a');
        q.push(SimTime(2), 'b');
        let c = q.push(SimTime(3), 'c');
        q.cancel(a);
        q.cancel(c);
        q.cancel(c);
        assert_eq!(q.len(), 1);
        assert_eq!(q.peek_time(), Some(SimTime(2)));
        assert_eq!(q.pop(), Some((SimTime(2), 'b')));
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn cancelling_a_popped_event_is_a_no_op() {
        let mut q = EventQueue::new();
        let a = q.push(SimTime(1), 'a');
        assert_eq!(q.pop(), Some((SimTime(1), 'a')));
        q.cancel(a);
        q.push(SimTime(2), 'b');
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop(), Some((SimTime(2), 'b')));
    }

    #[test]
    fn time_never_runs_backwards() {
        let mut q = EventQueue::new();
        q.push(SimTime(100), 1);
        q.pop();
        q.push(SimTime(50), 2);
        assert_eq!(q.pop(), Some((SimTime(100), 2)));
    }
}
