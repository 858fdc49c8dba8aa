//! Per-sector values as extents: what version of the data each sector holds. The block
//! layer's integrity oracle and the device models that keep content (for power cuts) both
//! use it.

use std::collections::BTreeMap;

/// Non-overlapping extents `start -> (end, version)`; absent sectors are version 0.
#[derive(Clone, Debug, Default)]
pub struct ExtentMap {
    m: BTreeMap<u64, (u64, u64)>,
}

impl ExtentMap {
    /// Set `[s, e)` to `v`.
    pub fn set(&mut self, s: u64, e: u64, v: u64) {
        if s >= e {
            return;
        }
        // The common case (a write to sectors no extent covers yet, as random writes over a
        // large device mostly are) in three lookups instead of six: nothing overlaps `[s, e)`
        // exactly when the last extent starting before `e` ends at or before `s`.
        let prev = self.m.range(..e).next_back().map(|(&ps, &pe)| (ps, pe));
        if prev.is_none_or(|(_, (pe, _))| pe <= s) {
            if v == 0 {
                return;
            }
            let ne = match self.m.get(&e) {
                Some(&(fe, fv)) if fv == v => {
                    self.m.remove(&e);
                    fe
                }
                _ => e,
            };
            match prev {
                Some((ps, (pe, pv))) if pe == s && pv == v => {
                    self.m.insert(ps, (ne, v));
                }
                _ => {
                    self.m.insert(s, (ne, v));
                }
            }
            return;
        }
        // Split an extent straddling `s`.
        if let Some((&ps, &(pe, pv))) = self.m.range(..s).next_back() {
            if pe > s {
                self.m.insert(ps, (s, pv));
                self.m.insert(s, (pe, pv));
            }
        }
        // Split an extent straddling `e`.
        if let Some((&ps, &(pe, pv))) = self.m.range(..e).next_back() {
            if pe > e {
                self.m.insert(ps, (e, pv));
                self.m.insert(e, (pe, pv));
            }
        }
        // Drop the extents inside [s, e) one by one (no temporary list per write).
        while let Some(k) = self.m.range(s..e).next().map(|(&k, _)| k) {
            self.m.remove(&k);
        }
        if v == 0 {
            return;
        }
        let (mut ns, mut ne) = (s, e);
        if let Some((&ps, &(pe, pv))) = self.m.range(..s).next_back() {
            if pe == s && pv == v {
                self.m.remove(&ps);
                ns = ps;
            }
        }
        if let Some(&(fe, fv)) = self.m.get(&e) {
            if fv == v {
                self.m.remove(&e);
                ne = fe;
            }
        }
        self.m.insert(ns, (ne, v));
    }

    /// The versions over `[s, e)` as consecutive pieces `(start, end, version)` covering it.
    pub fn get(&self, s: u64, e: u64) -> Vec<(u64, u64, u64)> {
        let mut out = Vec::new();
        self.get_into(s, e, &mut out);
        out
    }

    /// [`Self::get`] into a caller's buffer (cleared first), so the per-read check allocates
    /// nothing in steady state.
    pub fn get_into(&self, s: u64, e: u64, out: &mut Vec<(u64, u64, u64)>) {
        out.clear();
        let mut pos = s;
        let first = self
            .m
            .range(..=s)
            .next_back()
            .filter(|(_, &(pe, _))| pe > s)
            .map(|(&k, _)| k)
            .unwrap_or(s);
        for (&ps, &(pe, pv)) in self.m.range(first..e) {
            let a = ps.max(s);
            if a > pos {
                out.push((pos, a, 0));
            }
            let b = pe.min(e);
            out.push((a, b, pv));
            pos = b;
        }
        if pos < e {
            out.push((pos, e, 0));
        }
    }

    pub fn extents(&self) -> usize {
        self.m.len()
    }

    pub fn is_empty(&self) -> bool {
        self.m.is_empty()
    }

    /// Every extent `(start, end, value)`, in sector order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.m.iter().map(|(&s, &(e, v))| (s, e, v))
    }

    /// Drop everything.
    pub fn clear(&mut self) {
        self.m.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extent_map_splits_coalesces_and_reads_zero_holes() {
        let mut m = ExtentMap::default();
        m.set(10, 20, 1);
        m.set(20, 30, 1);
        assert_eq!(m.extents(), 1);
        m.set(15, 25, 2);
        assert_eq!(
            m.get(0, 40),
            vec![
                (0, 10, 0),
                (10, 15, 1),
                (15, 25, 2),
                (25, 30, 1),
                (30, 40, 0)
            ]
        );
        m.set(12, 28, 0);
        assert_eq!(m.get(10, 30), vec![(10, 12, 1), (12, 28, 0), (28, 30, 1)]);
        m.set(0, 100, 7);
        assert_eq!(m.extents(), 1);
        assert_eq!(m.get(50, 60), vec![(50, 60, 7)]);
    }

    /// A sector-by-sector array is the reference: random sets (fresh ranges, overlaps,
    /// neighbours with the same value, zeroes) leave the map reading exactly what the array
    /// holds, and the extents always maximal (no two touching extents share a value).
    #[test]
    fn random_sets_match_a_sector_array() {
        const N: u64 = 512;
        let mut m = ExtentMap::default();
        let mut a = vec![0u64; N as usize];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let s = next() % N;
            let e = (s + 1 + next() % 24).min(N);
            let v = next() % 4;
            m.set(s, e, v);
            for i in s..e {
                a[i as usize] = v;
            }
            let got = m.get(0, N);
            for (ps, pe, pv) in got {
                for i in ps..pe {
                    assert_eq!(a[i as usize], pv, "sector {i}");
                }
            }
            let ex: Vec<_> = m.iter().collect();
            for w in ex.windows(2) {
                assert!(w[0].1 <= w[1].0, "overlap {w:?}");
                assert!(
                    !(w[0].1 == w[1].0 && w[0].2 == w[1].2),
                    "not coalesced {w:?}"
                );
            }
            assert!(ex.iter().all(|&(_, _, v)| v != 0));
        }
    }
}
