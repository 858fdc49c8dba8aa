//! The dense form of an [`ExtentMap`](super::ExtentMap): one value per 4 KiB granule over the
//! span of granules written, and the number of maximal runs of equal non-zero values (the
//! sparse form's extent count) kept as granules change.
//!
//! Random 4 KiB writes over a small device (the `server` bench: 16 jobs over a 1 GiB
//! null_blk) make nearly every granule its own extent; the sparse form then pays a gallop and
//! a memmove in a leaf out of cache per write, where a granule array pays one store. The map
//! chooses this form only while every boundary it was given is granule-aligned and the span
//! stays within a few granules per extent, so its memory follows the written footprint as the
//! sparse form's does.

/// Sectors per granule, as a shift: 8 sectors, 4 KiB.
pub(super) const GRANULE_SHIFT: u32 = 3;

#[derive(Clone, Debug)]
pub(super) struct Dense {
    /// The first granule `vals` holds; granules outside `base .. base + vals.len()` are 0.
    base: u64,
    vals: Vec<u64>,
    /// Maximal runs of equal non-zero values.
    runs: usize,
    /// Granules copied to grow the span downwards (the test of its amortisation).
    #[cfg(test)]
    pub(super) copied: u64,
}

impl Dense {
    /// A run starts at index `i`: a non-zero value unlike the one before.
    #[inline]
    fn starts(&self, i: usize) -> bool {
        let v = self.vals[i];
        v != 0 && (i == 0 || self.vals[i - 1] != v)
    }

    /// Fetch the cache lines of granule `g` and of its neighbours, if the span holds it: a
    /// one-granule [`Self::set`] reads the granule before and after too (whether a run starts
    /// there), which are on the next or previous line for one granule in four.
    #[inline]
    pub(super) fn prefetch(&self, g: u64) {
        let Some(i) = g.checked_sub(self.base).map(|i| i as usize) else {
            return;
        };
        if i < self.vals.len() {
            // Granules i - 1 and i + 1 (within the span) cover i's line too.
            crate::prefetch::prefetch(&self.vals[i.saturating_sub(1)]);
            crate::prefetch::prefetch(&self.vals[(i + 1).min(self.vals.len() - 1)]);
        }
    }

    pub(super) fn runs(&self) -> usize {
        self.runs
    }

    /// Granules held.
    pub(super) fn span(&self) -> u64 {
        self.vals.len() as u64
    }

    fn end(&self) -> u64 {
        self.base + self.vals.len() as u64
    }

    /// The form of the sorted, coalesced, granule-aligned extents `ext` (`runs` of them, from
    /// granule `lo` to `hi`).
    pub(super) fn from_extents(
        ext: impl Iterator<Item = (u64, u64, u64)>,
        lo: u64,
        hi: u64,
        runs: usize,
    ) -> Dense {
        let mut vals = vec![0; (hi - lo) as usize];
        for (s, e, v) in ext {
            vals[((s >> GRANULE_SHIFT) - lo) as usize..((e >> GRANULE_SHIFT) - lo) as usize]
                .fill(v);
        }
        Dense {
            base: lo,
            vals,
            runs,
            #[cfg(test)]
            copied: 0,
        }
    }

    /// Make `[gs, ge)` part of the span, which may not pass `max_span` granules: false (and
    /// nothing changed) if it would. Upwards the array grows in place (`Vec::resize`
    /// amortises it); downwards it is copied, with room below for as much again as it held
    /// (within twice `max_span`), so that writes walking downwards (a replayed trace written
    /// backwards) copy it O(log n) times.
    fn cover(&mut self, gs: u64, ge: u64, max_span: u64) -> bool {
        let (lo, hi) = (self.base, self.end());
        if gs >= lo && ge <= hi {
            return true;
        }
        let (nlo, nhi) = (gs.min(lo), ge.max(hi));
        if nhi - nlo > max_span {
            return false;
        }
        if nlo < lo {
            let nlo = nlo - (hi - lo).min(2 * max_span - (nhi - nlo)).min(nlo);
            let mut v = vec![0; (nhi - nlo) as usize];
            v[(lo - nlo) as usize..(hi - nlo) as usize].copy_from_slice(&self.vals);
            #[cfg(test)]
            {
                self.copied += self.vals.len() as u64;
            }
            self.vals = v;
            self.base = nlo;
        } else {
            self.vals.resize((nhi - lo) as usize, 0);
        }
        true
    }

    /// Set granules `[gs, ge)` to `v`, with the span at most `max_span` granules: false (and
    /// nothing changed) if it would pass it.
    pub(super) fn set(&mut self, gs: u64, ge: u64, v: u64, max_span: u64) -> bool {
        let (gs, ge) = if v == 0 {
            // Granules outside the span are 0 already.
            let (gs, ge) = (gs.max(self.base), ge.min(self.end()));
            if gs >= ge {
                return true;
            }
            (gs, ge)
        } else {
            if !self.cover(gs, ge, max_span) {
                return false;
            }
            (gs, ge)
        };
        let (a, b) = ((gs - self.base) as usize, (ge - self.base) as usize);
        // The runs that start in `a ..= b` are the only ones a change of `a .. b` can make
        // or unmake (granule `b` starts one or not by what precedes it).
        let last = b.min(self.vals.len() - 1);
        let before = (a..=last).filter(|&i| self.starts(i)).count();
        self.vals[a..b].fill(v);
        let after = (a..=last).filter(|&i| self.starts(i)).count();
        self.runs = self.runs + after - before;
        true
    }

    /// The values over sectors `[s, e)` as consecutive maximal pieces, into `out` (cleared).
    pub(super) fn get_into(&self, s: u64, e: u64, out: &mut Vec<(u64, u64, u64)>) {
        out.clear();
        if s >= e {
            return;
        }
        let mut pos = s;
        let g0 = (s >> GRANULE_SHIFT).max(self.base);
        let g1 = e.div_ceil(1 << GRANULE_SHIFT).min(self.end());
        let mut g = g0;
        while g < g1 {
            let v = self.vals[(g - self.base) as usize];
            let mut h = g + 1;
            while h < g1 && self.vals[(h - self.base) as usize] == v {
                h += 1;
            }
            // The span ends at a set's end granule at most, so `h << GRANULE_SHIFT` (a
            // sector, at most `u64::MAX & !7`) does not overflow.
            let a = (g << GRANULE_SHIFT).max(s);
            let b = (h << GRANULE_SHIFT).min(e);
            if a > pos {
                push(out, pos, a, 0);
            }
            push(out, a, b, v);
            pos = b;
            g = h;
        }
        if pos < e {
            push(out, pos, e, 0);
        }
    }

    /// The runs of non-zero values as extents, in sector order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let mut i = 0;
        std::iter::from_fn(move || {
            while i < self.vals.len() && self.vals[i] == 0 {
                i += 1;
            }
            if i == self.vals.len() {
                return None;
            }
            let v = self.vals[i];
            let start = i;
            while i < self.vals.len() && self.vals[i] == v {
                i += 1;
            }
            let g = |j: usize| (self.base + j as u64) << GRANULE_SHIFT;
            Some((g(start), g(i), v))
        })
    }
}

/// Append `[a, b)` at `v`, extending the last piece if it ends at `a` with the same value.
fn push(out: &mut Vec<(u64, u64, u64)>, a: u64, b: u64, v: u64) {
    match out.last_mut() {
        Some(last) if last.1 == a && last.2 == v => last.1 = b,
        _ => out.push((a, b, v)),
    }
}
