//! Requests by start sector, over a sorted array: the scheduler lists the kernel keeps as
//! rb-trees by `blk_rq_pos` (mq-deadline's `sort_list`). Equal sectors keep insertion order,
//! as `elv_rb_add` sends duplicates right, and a lookup by sector finds the leftmost.
//!
//! An elevator holds at most `nr_requests` (≤ 2048, `MAX_SCHED_RQ`) requests: a few dozen on
//! an eMMC, about 500 under the 16 jobs of `blksim bench --workload=server`. A binary search
//! over contiguous keys and a short move beat a B-tree's node walks and rebalancing there:
//! mq-deadline's two `BTreeMap`s per direction were about 8 % of `--workload=emmc` (a chunked
//! array, which moves less at 500 entries, measured no faster on `server`). An entry is a
//! sector and a request id, 16 bytes: no sequence number is stored to order equal sectors,
//! their place in the array does it, which halves the bytes a move shifts against a
//! `(sector, sequence)` key. Keys inserted in increasing order and removed mostly at the
//! front (a sequential stream) cost no move: a [`HeadVec`] drops its front by moving its
//! start. mq-deadline's FIFO lists, whose entries leave from anywhere when requests go in
//! sector order, are linked lists by request id instead, as the kernel's `list_head`s are.

use blksim_block::request::RqId;
use blksim_core::headvec::HeadVec;

#[derive(Clone, Debug, Default)]
pub struct SectorList {
    items: HeadVec<(u64, RqId)>,
    /// Where the last [`Self::at_or_after`] found its entry: mq-deadline removes the request
    /// it just looked up (`deadline_next_request`, then `deadline_remove_request`), so the
    /// removal checks there before it searches.
    found: std::cell::Cell<usize>,
}

impl SectorList {
    /// Index of the first entry whose sector is `>= s`.
    #[inline]
    fn lower_bound(&self, s: u64) -> usize {
        match self.items.last() {
            Some(&(last, _)) if last < s => self.items.len(),
            _ => self.items.live().partition_point(|&(x, _)| x < s),
        }
    }

    /// Index of `rq`, inserted at sector `s`.
    fn index_of(&self, s: u64, rq: RqId) -> Option<usize> {
        let live = self.items.live();
        let f = self.found.get();
        if live.get(f) == Some(&(s, rq)) {
            return Some(f);
        }
        let i = self.lower_bound(s);
        live[i..]
            .iter()
            .take_while(|&&(x, _)| x == s)
            .position(|&(_, r)| r == rq)
            .map(|k| i + k)
    }

    /// `elv_rb_add`: after every entry at or before sector `s`.
    pub fn insert(&mut self, s: u64, rq: RqId) {
        match self.items.last() {
            Some(&(last, _)) if last > s => {
                let i = self.items.live().partition_point(|&(x, _)| x <= s);
                self.items.insert(i, (s, rq));
            }
            // A sequential stream inserts at the end: no search, no move.
            _ => self.items.push((s, rq)),
        }
    }

    /// `elv_rb_del`: remove `rq`, inserted at sector `s`. Returns whether it was there.
    pub fn remove(&mut self, s: u64, rq: RqId) -> bool {
        match self.index_of(s, rq) {
            Some(i) => {
                self.items.remove(i);
                true
            }
            None => false,
        }
    }

    /// The leftmost entry whose sector is `>= s` (`deadline_from_pos`, `elv_rb_find` when its
    /// sector is `s`).
    pub fn at_or_after(&self, s: u64) -> Option<(u64, RqId)> {
        let i = self.lower_bound(s);
        self.found.set(i);
        self.items.live().get(i).copied()
    }

    /// The entry after `rq` (inserted at sector `s`), `rb_next`.
    pub fn next(&self, s: u64, rq: RqId) -> Option<(u64, RqId)> {
        let i = self.index_of(s, rq)?;
        self.items.live().get(i + 1).copied()
    }

    /// The entry before `rq` (inserted at sector `s`), `rb_prev`.
    pub fn prev(&self, s: u64, rq: RqId) -> Option<(u64, RqId)> {
        let i = self.index_of(s, rq)?;
        i.checked_sub(1).map(|j| self.items.live()[j])
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

    /// Against a `BTreeMap` keyed by `(sector, insertion number)`, the rb-tree's order:
    /// inserts at the end and in the middle, with many equal sectors, removals present and
    /// absent (from the front, the middle and among equals), and every query.
    #[test]
    fn agrees_with_a_map_keyed_by_sector_and_insertion() {
        let mut rng = blksim_core::Rng::from_seed(0x5ec7);
        for range in [4u64, 64, 5000] {
            let mut a = SectorList::default();
            let mut b: BTreeMap<(u64, u64), RqId> = BTreeMap::new();
            // Where each live request was inserted (its sector and insertion number).
            let mut at: BTreeMap<RqId, (u64, u64)> = BTreeMap::new();
            let (mut seq, mut tail, mut next_id) = (0u64, 0u64, 0 as RqId);
            for _ in 0..20_000 {
                match rng.below(5) {
                    0 | 1 => {
                        let s = if rng.below(3) == 0 {
                            tail += rng.below(3);
                            tail % range
                        } else {
                            rng.below(range)
                        };
                        seq += 1;
                        a.insert(s, next_id);
                        b.insert((s, seq), next_id);
                        at.insert(next_id, (s, seq));
                        next_id += 1;
                    }
                    2 | 3 if !at.is_empty() => {
                        // A live request: the front one half of the time, else any.
                        let rq = if rng.below(2) == 0 {
                            *b.values().next().unwrap()
                        } else {
                            *at.keys().nth(rng.below(at.len() as u64) as usize).unwrap()
                        };
                        let (s, q) = at.remove(&rq).unwrap();
                        assert!(a.remove(s, rq));
                        b.remove(&(s, q));
                        assert!(!a.remove(s, rq), "removed twice");
                    }
                    _ => {}
                }
                let q = rng.below(range + 2);
                assert_eq!(
                    a.at_or_after(q),
                    b.range((q, 0)..).next().map(|(&(s, _), &r)| (s, r))
                );
                if let Some((&rq, &(s, k))) = at.iter().nth(rng.below(at.len() as u64 + 1) as usize)
                {
                    let after = b
                        .range((
                            std::ops::Bound::Excluded((s, k)),
                            std::ops::Bound::Unbounded,
                        ))
                        .next()
                        .map(|(&(s, _), &r)| (s, r));
                    let before = b.range(..(s, k)).next_back().map(|(&(s, _), &r)| (s, r));
                    assert_eq!(a.next(s, rq), after);
                    assert_eq!(a.prev(s, rq), before);
                }
                assert_eq!(a.len(), b.len());
                assert_eq!(a.is_empty(), b.is_empty());
            }
        }
    }
}
