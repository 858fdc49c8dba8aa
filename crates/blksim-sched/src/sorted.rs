//! A small ordered map over a sorted array, for the scheduler lists the kernel keeps as
//! rb-trees (mq-deadline's `sort_list`).
//!
//! An elevator holds at most `nr_requests` (≤ 2048, `MAX_SCHED_RQ`) requests: a few dozen on
//! an eMMC, about 500 under the 16 jobs of `blksim bench --workload=server`. A binary search
//! over contiguous keys and a short move beat a B-tree's node walks and rebalancing there:
//! mq-deadline's two `BTreeMap`s per direction were about 8 % of `--workload=emmc` (a chunked
//! array, which moves less at 500 entries, measured no faster on `server`). Keys inserted in
//! increasing order and removed mostly at the front (a sequential stream) cost no move: a
//! [`HeadVec`] drops its front by moving its start. mq-deadline's FIFO lists, whose entries
//! leave from anywhere when requests go in sector order, are linked lists by request id
//! instead, as the kernel's `list_head`s are.

use blksim_core::headvec::HeadVec;

/// Unique keys in increasing order, each with a value; the operations `BTreeMap` gave the
/// schedulers, with the same answers.
#[derive(Clone, Debug)]
pub struct SortedList<K, V> {
    items: HeadVec<(K, V)>,
}

impl<K, V> Default for SortedList<K, V> {
    fn default() -> Self {
        SortedList {
            items: HeadVec::default(),
        }
    }
}

impl<K: Ord + Copy, V: Copy> SortedList<K, V> {
    /// Index of the first key `>= k`.
    #[inline]
    fn lower_bound(&self, k: &K) -> usize {
        // Most inserts are at the end (FIFO lists, and sort lists fed in order).
        match self.items.last() {
            Some((last, _)) if last < k => self.items.len(),
            _ => self.items.live().partition_point(|(x, _)| x < k),
        }
    }

    /// Insert `k → v`, replacing the value if `k` is present.
    pub fn insert(&mut self, k: K, v: V) {
        let i = self.lower_bound(&k);
        match self.items.live_mut().get_mut(i) {
            Some(e) if e.0 == k => e.1 = v,
            _ => self.items.insert(i, (k, v)),
        }
    }

    /// Remove `k`, returning its value.
    pub fn remove(&mut self, k: &K) -> Option<V> {
        let i = self.lower_bound(k);
        let v = match self.items.live().get(i) {
            Some(e) if e.0 == *k => e.1,
            _ => return None,
        };
        self.items.remove(i);
        Some(v)
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Option<(K, V)> {
        self.items.first().copied()
    }

    /// The first entry whose key is `>= k` (`range(k..).next()`).
    pub fn at_or_after(&self, k: &K) -> Option<(K, V)> {
        self.items.live().get(self.lower_bound(k)).copied()
    }

    /// The first entry whose key is `> k`.
    pub fn after(&self, k: &K) -> Option<(K, V)> {
        let live = self.items.live();
        live.get(live.partition_point(|(x, _)| x <= k)).copied()
    }

    /// The last entry whose key is `< k` (`range(..k).next_back()`).
    pub fn before(&self, k: &K) -> Option<(K, V)> {
        let i = self.lower_bound(k);
        (i > 0).then(|| self.items.live()[i - 1])
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Random inserts (fresh and repeated keys, at the end and in the middle), removals
    /// (present and absent) and every query agree with `BTreeMap`.
    #[test]
    fn agrees_with_btreemap() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for range in [4u64, 64, 5000] {
            let mut a: SortedList<u64, u64> = SortedList::default();
            let mut b: BTreeMap<u64, u64> = BTreeMap::new();
            let mut tail = 0;
            for op in 0..20_000u64 {
                let k = match next() % 3 {
                    0 => {
                        tail += 1 + next() % 3;
                        tail % range
                    }
                    _ => next() % range,
                };
                match next() % 4 {
                    0 | 1 => {
                        a.insert(k, op);
                        b.insert(k, op);
                    }
                    2 => assert_eq!(a.remove(&k), b.remove(&k)),
                    _ => {
                        let fb = b.iter().next().map(|(&k, &v)| (k, v));
                        assert_eq!(a.first(), fb);
                    }
                }
                let q = next() % (range + 2);
                let kv = |e: Option<(&u64, &u64)>| e.map(|(&k, &v)| (k, v));
                assert_eq!(a.at_or_after(&q), kv(b.range(q..).next()));
                assert_eq!(
                    a.after(&q),
                    kv(
                        b.range((std::ops::Bound::Excluded(q), std::ops::Bound::Unbounded))
                            .next()
                    )
                );
                assert_eq!(a.before(&q), kv(b.range(..q).next_back()));
                assert_eq!(a.len(), b.len());
                assert_eq!(a.is_empty(), b.is_empty());
            }
        }
        // A FIFO list: keys in order, removed mostly from the front (the start index moves
        // and the removed prefix is dropped now and then) and sometimes from the middle.
        let mut a: SortedList<u64, u64> = SortedList::default();
        let mut b: BTreeMap<u64, u64> = BTreeMap::new();
        for k in 0..50_000u64 {
            a.insert(k, k);
            b.insert(k, k);
            if next() % 8 < 7 {
                let f = *b.keys().next().unwrap();
                let k = if next() % 10 == 0 { (f + k) / 2 } else { f };
                assert_eq!(a.remove(&k), b.remove(&k));
            }
            let q = next() % (k + 2);
            assert_eq!(
                a.at_or_after(&q),
                b.range(q..).next().map(|(&k, &v)| (k, v))
            );
            assert_eq!(
                a.before(&q),
                b.range(..q).next_back().map(|(&k, &v)| (k, v))
            );
            assert_eq!(a.first(), b.iter().next().map(|(&k, &v)| (k, v)));
            assert_eq!(a.len(), b.len());
        }
    }
}
