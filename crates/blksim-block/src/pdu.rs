//! Per-request data of a driver or elevator, indexed by request id: what the kernel keeps in
//! the request's PDU (`blk_mq_rq_to_pdu`, sized by `tag_set.cmd_size`) or in `rq->elv.priv`.
//!
//! Request ids are slab indices ([`crate::request::RqPool`]), small and reused, so a vector
//! indexed by id replaces a map keyed by id: no tree walk per lookup on the completion path
//! (the MMC driver's `BTreeMap<RqId, _>` was about 3 % of `blksim bench --workload=emmc`).
//! Iteration is in id order, the order the map gave.
//!
//! Two shapes: [`RqMap`] for state some requests have, which may be iterated (a driver's
//! commands in flight); [`RqTable`] for state every request has, a default until set (an
//! elevator's `rq->elv.priv`).

use crate::request::RqId;

/// A growable side table indexed by RqId: every request has a value, the default until set.
#[derive(Default)]
pub struct RqTable<T: Clone + Default> {
    v: Vec<T>,
}

impl<T: Clone + Default> RqTable<T> {
    pub fn with_capacity(n: usize) -> Self {
        RqTable {
            v: vec![T::default(); n],
        }
    }
    #[inline]
    pub fn get(&self, rq: RqId) -> T {
        self.v.get(rq as usize).cloned().unwrap_or_default()
    }
    #[inline]
    pub fn at(&mut self, rq: RqId) -> &mut T {
        let i = rq as usize;
        if self.v.len() <= i {
            self.v.resize(i + 1, T::default());
        }
        &mut self.v[i]
    }
}

/// State some requests have, by request id, iterated in id order.
#[derive(Clone, Debug)]
pub struct RqMap<T> {
    slots: Vec<Option<T>>,
    len: usize,
}

impl<T> Default for RqMap<T> {
    fn default() -> Self {
        RqMap {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<T> RqMap<T> {
    /// Set `rq`'s data, returning what it held.
    pub fn insert(&mut self, rq: RqId, v: T) -> Option<T> {
        let i = rq as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        let old = self.slots[i].replace(v);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub fn remove(&mut self, rq: &RqId) -> Option<T> {
        let old = self.slots.get_mut(*rq as usize)?.take();
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    pub fn get(&self, rq: &RqId) -> Option<&T> {
        self.slots.get(*rq as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, rq: &RqId) -> Option<&mut T> {
        self.slots.get_mut(*rq as usize)?.as_mut()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries in request-id order.
    pub fn iter(&self) -> impl Iterator<Item = (RqId, &T)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (i as RqId, v)))
    }
}

impl<T> std::ops::Index<&RqId> for RqMap<T> {
    type Output = T;
    fn index(&self, rq: &RqId) -> &T {
        self.get(rq).expect("no data for this request")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn agrees_with_btreemap() {
        let mut a = RqMap::default();
        let mut b = BTreeMap::new();
        let mut x: u64 = 88172645463325252;
        for op in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let rq = (x % 300) as RqId;
            if x.is_multiple_of(3) {
                assert_eq!(a.remove(&rq), b.remove(&rq));
            } else {
                assert_eq!(a.insert(rq, op), b.insert(rq, op));
            }
            assert_eq!(a.get(&rq), b.get(&rq));
            assert_eq!(a.len(), b.len());
            if op % 500 == 0 {
                let ia: Vec<_> = a.iter().map(|(r, &v)| (r, v)).collect();
                let ib: Vec<_> = b.iter().map(|(&r, &v)| (r, v)).collect();
                assert_eq!(ia, ib);
            }
        }
    }
}
