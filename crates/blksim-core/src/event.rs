//! The event queue: a min-heap keyed by `(time, seq)`.
//!
//! `seq` is a counter incremented at every push (and every [`EventQueue::reserve_seq`]), so
//! events at the same virtual time pop in the order they were pushed. This is the only
//! tie-break rule in the simulator, and it is what makes a run reproducible.
//!
//! Beside the events, the queue holds timers: at most one pending event per timer slot, which
//! setting again moves and cancelling removes, as the kernel's `mod_delayed_work` moves a
//! delayed work's timer. They take their `seq` from the same counter (reserved when the
//! timer was asked for), so timers and events interleave by the one rule.

use crate::headvec::HeadVec;
use crate::Ns;

/// `(time, seq)` in one integer: ordering by it is ordering by time, then by push order.
type Key = u128;

#[inline]
fn key(time: Ns, seq: u64) -> Key {
    ((time as u128) << 64) | seq as u128
}

/// A deterministic event queue. `E` should be small plain data (ids, not boxes).
///
/// A 4-ary min-heap on one `u128` key: half the depth of a binary heap and one integer
/// comparison per step, which matters because every simulated event passes through it
/// (about 10 % of a run's time with `std::collections::BinaryHeap`). Key and event sit side
/// by side and sifting moves a hole instead of swapping (one copy per level, not three, in
/// one array), profiled on `blksim bench --workload=emmc`.
pub struct EventQueue<E> {
    heap: Vec<(Key, E)>,
    /// Events pushed in key order, oldest first: a push whose key passes every key here is
    /// appended instead of sifted into the heap, and the front is compared with the heap's
    /// top at each pop. A device with a fixed latency (null_blk's `completion_nsec`) pushes
    /// every event so, and a pop is then a move of the start index, not a sift down (the
    /// null path runs 6 % fewer instructions; the eMMC and CPU-model paths, whose events
    /// mostly land in the heap, the same within 1 %).
    lane: HeadVec<(Key, E)>,
    seq: u64,
    now: Ns,
    /// The key of the last event or timer popped.
    last: Key,
    timers: Timers<E>,
}

/// No position: the slot's timer is not set.
const UNSET: u32 = u32::MAX;

/// Pending timers as a binary min-heap that knows where each slot's timer is, so that one can
/// be moved or removed (a plain heap can only leave a moved timer behind, to be popped and
/// ignored: on the eMMC path two of eight events per I/O were such stale kblockd runs). The
/// heap orders slot numbers; each slot's key and event stay in place.
struct Timers<E> {
    heap: Vec<u32>,
    /// Per slot: its key, its event, and its index in `heap` ([`UNSET`] when not set).
    keys: Vec<Key>,
    evs: Vec<Option<E>>,
    pos: Vec<u32>,
}

impl<E: Copy> Timers<E> {
    fn first_key(&self) -> Option<Key> {
        self.heap.first().map(|&s| self.keys[s as usize])
    }

    fn sift_up(&mut self, mut i: usize) {
        let slot = self.heap[i];
        let k = self.keys[slot as usize];
        while i > 0 {
            let p = (i - 1) / 2;
            let ps = self.heap[p];
            if self.keys[ps as usize] <= k {
                break;
            }
            self.heap[i] = ps;
            self.pos[ps as usize] = i as u32;
            i = p;
        }
        self.heap[i] = slot;
        self.pos[slot as usize] = i as u32;
    }

    fn sift_down(&mut self, mut i: usize) {
        let slot = self.heap[i];
        let k = self.keys[slot as usize];
        let n = self.heap.len();
        loop {
            let c = 2 * i + 1;
            if c >= n {
                break;
            }
            let key = |j: usize| self.keys[self.heap[j] as usize];
            let m = if c + 1 < n && key(c + 1) < key(c) {
                c + 1
            } else {
                c
            };
            if key(m) >= k {
                break;
            }
            let ms = self.heap[m];
            self.heap[i] = ms;
            self.pos[ms as usize] = i as u32;
            i = m;
        }
        self.heap[i] = slot;
        self.pos[slot as usize] = i as u32;
    }

    fn set(&mut self, slot: u32, k: Key, ev: E) {
        let si = slot as usize;
        if self.pos.len() <= si {
            self.pos.resize(si + 1, UNSET);
            self.keys.resize(si + 1, 0);
            self.evs.resize(si + 1, None);
        }
        let old = self.keys[si];
        self.keys[si] = k;
        self.evs[si] = Some(ev);
        match self.pos[si] {
            UNSET => {
                self.heap.push(slot);
                self.sift_up(self.heap.len() - 1);
            }
            i if k < old => self.sift_up(i as usize),
            i => self.sift_down(i as usize),
        }
    }

    /// Remove the timer at heap index `i`: its key and event.
    fn remove_at(&mut self, i: usize) -> (Key, E) {
        let slot = self.heap[i] as usize;
        self.pos[slot] = UNSET;
        let last = self.heap.pop().expect("non-empty");
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[last as usize] = i as u32;
            self.sift_up(i);
            let j = self.pos[last as usize] as usize;
            self.sift_down(j);
        }
        (
            self.keys[slot],
            self.evs[slot].take().expect("a set timer has an event"),
        )
    }
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: Vec::with_capacity(1024),
            lane: HeadVec::default(),
            // Sequence 0 is never given out: [`Self::FIRST_AT_ITS_TIME`].
            seq: 1,
            now: 0,
            last: 0,
            timers: Timers {
                heap: Vec::new(),
                keys: Vec::new(),
                evs: Vec::new(),
                pos: Vec::new(),
            },
        }
    }

    /// Current virtual time: the time of the last event popped.
    pub fn now(&self) -> Ns {
        self.now
    }

    /// Schedule `ev` at absolute time `at`. Scheduling in the past is a bug in the caller.
    #[inline]
    pub fn push(&mut self, at: Ns, ev: E) {
        assert!(
            at >= self.now,
            "event scheduled in the past: {at} < {}",
            self.now
        );
        let k = key(at, self.seq);
        self.seq += 1;
        if self.lane.last().is_none_or(|&(b, _)| b < k) {
            self.lane.push((k, ev));
            return;
        }
        // Sift up: move parents down into the hole until the key fits.
        let mut i = self.heap.len();
        self.heap.push((k, ev));
        while i > 0 {
            let p = (i - 1) / 4;
            if self.heap[p].0 <= k {
                break;
            }
            self.heap[i] = self.heap[p];
            i = p;
        }
        self.heap[i] = (k, ev);
    }

    /// A place in the push order for a timer to be set later with [`Self::set_timer`]: it
    /// then sorts among events at its time as an event pushed now would.
    pub fn reserve_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq - 1
    }

    /// Timer `slot`'s pending setting: its `(time, seq)` and event (`None` once it popped or
    /// was cancelled).
    pub fn timer(&self, slot: u32) -> Option<((Ns, u64), E)> {
        let s = slot as usize;
        match self.timers.pos.get(s) {
            Some(&i) if i != UNSET => {
                let k = self.timers.keys[s];
                Some((((k >> 64) as Ns, k as u64), self.timers.evs[s]?))
            }
            _ => None,
        }
    }

    /// Set timer `slot` to pop `ev` at `(at, seq)` (a [`Self::reserve_seq`] value), moving it
    /// if it was set. The key must not be before the last one popped.
    /// A sequence number below every one [`Self::reserve_seq`] and [`Self::push`] give: a
    /// timer set with it pops before every other event of its instant.
    pub const FIRST_AT_ITS_TIME: u64 = 0;

    pub fn set_timer(&mut self, slot: u32, at: Ns, seq: u64, ev: E) {
        let k = key(at, seq);
        assert!(k > self.last || self.last == 0, "timer set in the past");
        self.timers.set(slot, k, ev);
    }

    /// Cancel timer `slot` if it is set.
    pub fn cancel_timer(&mut self, slot: u32) {
        if let Some(&i) = self.timers.pos.get(slot as usize) {
            if i != UNSET {
                self.timers.remove_at(i as usize);
            }
        }
    }

    /// Pop the earliest event or timer and advance the clock to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        // The earliest of the three fronts; keys are unique, so the order is the one a
        // single heap of every event and timer would give.
        let hk = self.heap.first().map(|&(k, _)| k);
        if let Some(&(lk, ev)) = self.lane.first() {
            if hk.is_none_or(|h| lk < h) && self.timers.first_key().is_none_or(|t| lk < t) {
                self.lane.drop_front(1);
                return Some(self.popped(lk, ev));
            }
        }
        if let Some(tk) = self.timers.first_key() {
            if hk.is_none_or(|k| tk < k) {
                let (k, ev) = self.timers.remove_at(0);
                return Some(self.popped(k, ev));
            }
        }
        let last = self.heap.pop()?;
        let n = self.heap.len();
        let top = if n == 0 {
            last
        } else {
            let top = self.heap[0];
            // Sift the last element down from the root: move the smallest child up into
            // the hole until the element fits.
            let k = last.0;
            let mut i = 0;
            loop {
                let c = 4 * i + 1;
                if c >= n {
                    break;
                }
                let end = (c + 4).min(n);
                let mut m = c;
                let mut mk = self.heap[c].0;
                for j in c + 1..end {
                    let jk = self.heap[j].0;
                    if jk < mk {
                        m = j;
                        mk = jk;
                    }
                }
                if mk >= k {
                    break;
                }
                self.heap[i] = self.heap[m];
                i = m;
            }
            self.heap[i] = last;
            top
        };
        Some(self.popped(top.0, top.1))
    }

    #[inline]
    fn popped(&mut self, k: Key, ev: E) -> (Ns, E) {
        let time = (k >> 64) as Ns;
        debug_assert!(time >= self.now);
        self.now = time;
        self.last = k;
        (time, ev)
    }

    pub fn peek_time(&self) -> Option<Ns> {
        let e = self.heap.first().map(|&(k, _)| k);
        let l = self.lane.first().map(|&(k, _)| k);
        let t = self.timers.first_key();
        e.into_iter()
            .chain(l)
            .chain(t)
            .min()
            .map(|k| (k >> 64) as Ns)
    }

    /// Events and timers pending.
    pub fn len(&self) -> usize {
        self.heap.len() + self.lane.len() + self.timers.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// The heap pops exactly the order of a full sort by (time, push order), through
    /// interleaved pushes and pops, as the simulation does.
    #[test]
    fn pops_in_time_then_push_order_under_interleaving() {
        let mut q = EventQueue::new();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut seq = 0;
        for _ in 0..20_000 {
            if next() % 3 != 0 || model.is_empty() {
                let at = q.now() + next() % 50;
                q.push(at, seq);
                model.push((at, seq));
                seq += 1;
            } else {
                model.sort();
                let want = model.remove(0);
                assert_eq!(q.pop(), Some(want));
            }
        }
        model.sort();
        for want in model {
            assert_eq!(q.pop(), Some(want));
        }
        assert!(q.is_empty());
    }

    /// A fixed-latency stream (in push order, so in the lane) mixed with earlier events (in
    /// the heap) and timers pops in (time, push order), as one sorted list would give.
    #[test]
    fn a_fixed_latency_stream_mixed_with_earlier_events_pops_in_order() {
        let mut q = EventQueue::new();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let mut rng = crate::rng::Rng::from_seed(0x853c_49e6_748f_ea9b);
        let mut next = || rng.next_u64();
        let (mut seq, mut laned, mut heaped) = (0, 0, 0);
        for _ in 0..50_000 {
            match next() % 8 {
                0..=3 => {
                    // A completion a fixed latency after now: never before the lane's last.
                    let at = q.now() + 100;
                    let before = q.lane.len();
                    q.push(at, seq);
                    laned += usize::from(q.lane.len() > before);
                    model.push((at, seq));
                    seq += 1;
                }
                4 => {
                    let at = q.now() + next() % 100;
                    let before = q.heap.len();
                    q.push(at, seq);
                    heaped += usize::from(q.heap.len() > before);
                    model.push((at, seq));
                    seq += 1;
                }
                _ if !model.is_empty() => {
                    model.sort();
                    let want = model.remove(0);
                    assert_eq!(q.pop(), Some(want));
                    assert_eq!(q.len(), model.len());
                    assert_eq!(q.peek_time(), model.iter().map(|m| m.0).min());
                }
                _ => {}
            }
        }
        model.sort();
        for want in model {
            assert_eq!(q.pop(), Some(want));
        }
        assert!(q.is_empty());
        assert!(
            laned > 10_000 && heaped > 1_000,
            "lane {laned}, heap {heaped}"
        );
    }

    /// Timers pop as the events they stand for would: a plain queue that pushes every timer
    /// setting as an event and drops, when popped, the ones since moved or cancelled gives
    /// the same sequence, through random sets, moves, cancels, pushes and pops.
    #[test]
    fn timers_pop_as_their_latest_setting_would() {
        let mut q: EventQueue<(u64, u64)> = EventQueue::new();
        let mut r: EventQueue<(u64, u64)> = EventQueue::new();
        // The reference's live setting per slot: the payload its event carries.
        let mut live: Vec<Option<u64>> = vec![None; 5];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut id = 1000;
        let mut popped = 0;
        for _ in 0..40_000 {
            match next() % 6 {
                0 | 1 => {
                    let at = q.now() + next() % 40;
                    id += 1;
                    q.push(at, (u64::MAX, id));
                    r.push(at, (u64::MAX, id));
                }
                2 | 3 => {
                    let slot = next() % 5;
                    let at = q.now() + next() % 40;
                    id += 1;
                    let seq = q.reserve_seq();
                    q.set_timer(slot as u32, at, seq, (slot, id));
                    r.push(at, (slot, id));
                    live[slot as usize] = Some(id);
                }
                4 => {
                    let slot = next() % 5;
                    q.cancel_timer(slot as u32);
                    live[slot as usize] = None;
                }
                _ => {
                    // The reference pops past the stale settings.
                    let want = loop {
                        match r.pop() {
                            Some((_, (s, i))) if s != u64::MAX && live[s as usize] != Some(i) => {
                                continue
                            }
                            other => break other,
                        }
                    };
                    if let Some((_, (s, _))) = want {
                        if s != u64::MAX {
                            live[s as usize] = None;
                        }
                    }
                    assert_eq!(q.pop(), want);
                    popped += 1;
                }
            }
        }
        assert!(popped > 5000);
    }
}
