//! The event queue: a binary min-heap keyed by `(time, seq)`.
//!
//! `seq` is a counter incremented at every push, so events at the same virtual time pop in the
//! order they were pushed. This is the only tie-break rule in the simulator, and it is what
//! makes a run reproducible.

use crate::Ns;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: Ns,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
        o.time.cmp(&self.time).then_with(|| o.seq.cmp(&self.seq))
    }
}

/// A deterministic event queue. `E` should be small plain data (ids, not boxes).
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Ns,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
            now: 0,
        }
    }

    /// Current virtual time: the time of the last event popped.
    pub fn now(&self) -> Ns {
        self.now
    }

    /// Schedule `ev` at absolute time `at`. Scheduling in the past is a bug in the caller.
    pub fn push(&mut self, at: Ns, ev: E) {
        assert!(
            at >= self.now,
            "event scheduled in the past: {at} < {}",
            self.now
        );
        self.heap.push(Entry {
            time: at,
            seq: self.seq,
            ev,
        });
        self.seq += 1;
    }

    /// Pop the earliest event and advance the clock to its time.
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        let e = self.heap.pop()?;
        debug_assert!(e.time >= self.now);
        self.now = e.time;
        Some((e.time, e.ev))
    }

    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.peek().map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Number of events ever scheduled (for statistics).
    pub fn scheduled(&self) -> u64 {
        self.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_is_fifo_and_time_orders() {
        let mut q = EventQueue::new();
        q.push(10, 'a');
        q.push(5, 'b');
        q.push(10, 'c');
        q.push(5, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), 10);
    }

    #[test]
    #[should_panic]
    fn past_events_are_rejected() {
        let mut q = EventQueue::new();
        q.push(10, 1);
        q.pop();
        q.push(9, 2);
    }
}
