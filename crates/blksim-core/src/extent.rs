//! Per-sector values as extents: what version of the data each sector holds. The block
//! layer's integrity oracle and the device models that keep content (for power cuts) both
//! use it.

mod dense;

use dense::{Dense, GRANULE_SHIFT};

/// Extents per leaf before it splits (64: 32 and 256 measured slower on `blksim bench`
/// --workload=write and server). Leaves are small sorted arrays, so a write is two searches
/// (galloping from an interpolated guess, see [`partition_from`]) and one short memmove
/// instead of the several pointer-chasing descents of a `BTreeMap` (whose nodes hold 11
/// keys); profiled on 4 KiB random writes, where every write adds an extent to maps of up to
/// 2^18 extents.
const LEAF_MAX: usize = 64;

/// Extents before the map considers its dense form (a granule array), and the most granules
/// that form may span per extent when it is entered or grown; with the room growth leaves,
/// and sets that zero or merge runs, it keeps at most twice that (about 128 bytes per extent,
/// where the sparse form takes about 30) or falls back. The 1 GiB device of the `server`
/// bench turns dense at 2^15 extents.
const DENSE_MIN_EXTENTS: usize = 1024;
const DENSE_SPAN_PER_EXTENT: u64 = 8;

/// The most granules a set may grow the dense form to, holding `runs` runs.
fn dense_max_span(runs: usize) -> u64 {
    DENSE_SPAN_PER_EXTENT * (runs + 1).max(DENSE_MIN_EXTENTS) as u64
}

/// Non-overlapping extents `(start, end, version)` in sector order; absent sectors are version
/// 0. Touching extents never share a version (they are coalesced), and version 0 is never
/// stored, so the map is the same for the same per-sector contents however it was written.
///
/// Two forms hold it, the same to every caller: sorted leaves of extents, and, while every
/// boundary set so far is on a 4 KiB granule and the granules written are dense enough, one
/// value per granule (`extent/dense.rs`), where a 4 KiB random write is one store instead of
/// a search and a memmove.
#[derive(Clone, Debug, Default)]
pub struct ExtentMap {
    form: Form,
    /// A boundary off a granule was set: the map stays sparse.
    unaligned: bool,
    /// The sparse form turns dense only from this many extents: twice as many as when the
    /// dense form last fell back, so that conversions cost O(1) per set over time.
    dense_check_at: usize,
}

#[derive(Clone, Debug)]
enum Form {
    Sparse(Sparse),
    Dense(Dense),
}

impl Default for Form {
    fn default() -> Self {
        Form::Sparse(Sparse::default())
    }
}

impl ExtentMap {
    /// Set `[s, e)` to `v`.
    pub fn set(&mut self, s: u64, e: u64, v: u64) {
        if s >= e {
            return;
        }
        if (s | e) & ((1 << GRANULE_SHIFT) - 1) != 0 && !self.unaligned {
            self.unaligned = true;
            if let Form::Dense(d) = &self.form {
                self.form = Form::Sparse(Sparse::from_sorted(d.iter()));
            }
        }
        if let Form::Dense(d) = &mut self.form {
            // A set that zeroes or merges runs leaves fewer of them in the same span: the form
            // falls back past twice the span a set may grow to (growth leaves room up to
            // that), which keeps it within 16 granules per extent after every set.
            if d.set(
                s >> GRANULE_SHIFT,
                e >> GRANULE_SHIFT,
                v,
                dense_max_span(d.runs()),
            ) && d.span() <= 2 * dense_max_span(d.runs())
            {
                return;
            }
            // Too sparse for the granule array now: back to extents.
            let sp = Sparse::from_sorted(d.iter());
            self.dense_check_at = 2 * sp.len;
            self.form = Form::Sparse(sp);
        }
        let Form::Sparse(sp) = &mut self.form else {
            unreachable!("the dense form returned above");
        };
        sp.set(s, e, v);
        if sp.len == 0 {
            self.dense_check_at = 0;
        }
        // The span test is two loads; the conversion, O(extents), is paid again only after
        // the map has doubled since it last fell back (or emptied).
        if !self.unaligned && sp.len >= self.dense_check_at.max(DENSE_MIN_EXTENTS) {
            let (lo, hi) = sp.span();
            let (lo, hi) = (lo >> GRANULE_SHIFT, hi >> GRANULE_SHIFT);
            if hi - lo <= DENSE_SPAN_PER_EXTENT * sp.len as u64 {
                self.form = Form::Dense(Dense::from_extents(sp.iter(), lo, hi, sp.len));
            }
        }
    }

    /// Hint that sector `s` will be set or read soon: the dense form asks the CPU to fetch
    /// its granule's cache line now. A write's completion sets the map a device latency after
    /// its submission; with the `server` bench's 1 GiB device (2 MiB of granules, twice this
    /// machine's L2 per core), that set was one cache miss per write. The sparse form does
    /// nothing: finding its leaf costs what the miss saves (measured on `blksim bench
    /// --workload=write`).
    #[inline]
    pub fn prefetch(&self, s: u64) {
        if let Form::Dense(d) = &self.form {
            d.prefetch(s >> GRANULE_SHIFT);
        }
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
        match &self.form {
            Form::Sparse(sp) => sp.get_into(s, e, out),
            Form::Dense(d) => d.get_into(s, e, out),
        }
    }

    pub fn extents(&self) -> usize {
        match &self.form {
            Form::Sparse(sp) => sp.len,
            Form::Dense(d) => d.runs(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.extents() == 0
    }

    /// Every extent `(start, end, value)`, in sector order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let (sparse, dense) = match &self.form {
            Form::Sparse(sp) => (Some(sp.iter()), None),
            Form::Dense(d) => (None, Some(d.iter())),
        };
        sparse
            .into_iter()
            .flatten()
            .chain(dense.into_iter().flatten())
    }

    /// Drop everything.
    pub fn clear(&mut self) {
        *self = ExtentMap::default();
    }

    #[cfg(test)]
    fn is_dense(&self) -> bool {
        matches!(self.form, Form::Dense(_))
    }
}

/// The sparse form: runs of consecutive extents.
#[derive(Clone, Debug, Default)]
struct Sparse {
    /// Runs of consecutive extents, each in order and none empty, in no particular order:
    /// `order` orders them. A split inserts 12 bytes into `order` and `firsts`, where moving
    /// the leaves themselves moved 32 (a third of `set`'s memmoves with 2^18 extents).
    slab: Vec<Vec<(u64, u64, u64)>>,
    /// Slab entries not in use (empty, keeping their capacity for the next split).
    free: Vec<u32>,
    /// The leaves in sector order, as slab indices.
    order: Vec<u32>,
    /// The start of each leaf's first extent, in `order`'s order.
    firsts: Vec<u64>,
    len: usize,
}

/// A position in the map: leaf, index in that leaf (`== len` only past the last leaf's last
/// extent).
type Pos = (usize, usize);

impl Sparse {
    fn nr_leaves(&self) -> usize {
        self.order.len()
    }

    fn leaf(&self, l: usize) -> &Vec<(u64, u64, u64)> {
        &self.slab[self.order[l] as usize]
    }

    fn leaf_mut(&mut self, l: usize) -> &mut Vec<(u64, u64, u64)> {
        &mut self.slab[self.order[l] as usize]
    }

    /// A slab entry for a new leaf, empty.
    fn alloc_leaf(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.slab.push(Vec::new());
            (self.slab.len() - 1) as u32
        })
    }

    /// Drop the leaves at positions `from .. to`.
    fn drop_leaves(&mut self, from: usize, to: usize) {
        for idx in self.order.drain(from..to) {
            self.slab[idx as usize].clear();
            self.free.push(idx);
        }
        self.firsts.drain(from..to);
    }

    /// Where in leaf `l` a sector `x` should sit if the leaf's extents were spread evenly
    /// between its first start and the next leaf's: random writes make them nearly so. `None`
    /// for the last leaf, whose end is not known without touching it.
    fn guess(&self, l: usize, x: u64) -> Option<usize> {
        let hi = *self.firsts.get(l + 1)?;
        Some(spread(x, self.firsts[l], hi, self.leaf(l).len()))
    }

    /// The first extent whose end is `>= s` (`touch`) or `> s` (not `touch`).
    /// Also returns the leaf searched, a lower bound for [`Self::first_starting_after`]'s.
    fn first_ending_after(&self, s: u64, touch: bool) -> (Pos, usize) {
        if self.order.is_empty() {
            return ((0, 0), 0);
        }
        // Extents in leaves before the last one starting strictly before `s` end at or before
        // that leaf's first start, so before `s`. Leaves are spread over the sectors written,
        // so the search starts where `s` falls between the first and last leaves' starts.
        let n = self.firsts.len();
        let g = spread(s, self.firsts[0], self.firsts[n - 1], n);
        let l = partition_from(&self.firsts, g, |&f| f < s).saturating_sub(1);
        let leaf = self.leaf(l);
        let pred = |&(_, pe, _): &(u64, u64, u64)| if touch { pe < s } else { pe <= s };
        let i = match self.guess(l, s) {
            Some(g) => partition_from(leaf, g, pred),
            None => leaf.partition_point(pred),
        };
        if i == leaf.len() && l + 1 < self.nr_leaves() {
            ((l + 1, 0), l)
        } else {
            ((l, i), l)
        }
    }

    /// The first extent whose start is `> e` (`touch`) or `>= e` (not `touch`), as an end
    /// position; its leaf is `from` or a later one, and in leaf `from` it is at `hint` or
    /// after.
    fn first_starting_after(&self, e: u64, touch: bool, from: usize, hint: usize) -> Pos {
        if self.order.is_empty() {
            return (0, 0);
        }
        let past = |f: u64| if touch { f > e } else { f >= e };
        // Most writes are short: the leaf is the one `from` names, no second search.
        let l = if self.firsts.get(from + 1).is_none_or(|&f| past(f)) {
            from
        } else {
            from + 1
                + self.firsts[from + 1..]
                    .partition_point(|&f| !past(f))
                    .saturating_sub(1)
        };
        let leaf = self.leaf(l);
        let pred = |&(ps, _, _): &(u64, u64, u64)| if touch { ps <= e } else { ps < e };
        let i = if l == from {
            // A short write ends a few extents after it starts.
            partition_from(leaf, hint, pred)
        } else {
            match self.guess(l, e) {
                Some(g) => partition_from(leaf, g, pred),
                None => leaf.partition_point(pred),
            }
        };
        // One spelling per position (the end of a leaf is the start of the next), so that
        // positions compare in map order.
        if i == leaf.len() && l + 1 < self.nr_leaves() {
            (l + 1, 0)
        } else {
            (l, i)
        }
    }

    /// Set `[s, e)` to `v` (not empty).
    fn set(&mut self, s: u64, e: u64, v: u64) {
        if self.order.is_empty() {
            if v != 0 {
                let idx = self.alloc_leaf();
                self.slab[idx as usize].push((s, e, v));
                self.order.push(idx);
                self.firsts.push(s);
                self.len = 1;
            }
            return;
        }
        // The extents overlapping or touching `[s, e]`: positions `a .. b`.
        let (a, from) = self.first_ending_after(s, true);
        let hint = if a.0 == from {
            a.1
        } else {
            self.leaf(from).len()
        };
        let b = self.first_starting_after(e, true, from, hint);
        let first = (a < b).then(|| self.leaf(a.0)[a.1]);
        let last = (a < b).then(|| {
            if b.1 > 0 {
                self.leaf(b.0)[b.1 - 1]
            } else {
                *self.leaf(b.0 - 1).last().expect("leaves are never empty")
            }
        });
        // What replaces them: the part of the first before `s`, the new extent, the part of
        // the last after `e`; neighbours with `v` merge into the new extent.
        let mut repl: [(u64, u64, u64); 3] = [(0, 0, 0); 3];
        let mut n = 0;
        let (mut ns, mut ne) = (s, e);
        if let Some((fs, _, fv)) = first {
            if fs < s {
                if fv == v {
                    ns = fs;
                } else {
                    repl[n] = (fs, s, fv);
                    n += 1;
                }
            }
        }
        let mut right = None;
        if let Some((_, le, lv)) = last {
            if le > e {
                if lv == v {
                    ne = le;
                } else {
                    right = Some((e, le, lv));
                }
            }
        }
        if v != 0 {
            repl[n] = (ns, ne, v);
            n += 1;
        }
        if let Some(r) = right {
            repl[n] = r;
            n += 1;
        }
        self.replace(a, b, &repl[..n]);
    }

    /// Replace the extents at positions `a .. b` with `repl`, keeping leaves between 1 and
    /// `LEAF_MAX` extents.
    fn replace(&mut self, a: Pos, b: Pos, repl: &[(u64, u64, u64)]) {
        let removed;
        let l = if a.0 == b.0 {
            removed = b.1 - a.1;
            let leaf = self.leaf_mut(a.0);
            match (removed, repl) {
                // A write to sectors nothing covered (random writes over a large device).
                (0, &[x]) => leaf.insert(a.1, x),
                (r, _) if r == repl.len() => leaf[a.1..b.1].copy_from_slice(repl),
                _ => {
                    leaf.splice(a.1..b.1, repl.iter().copied());
                }
            }
            a.0
        } else {
            // Across leaves (a write spanning many extents): cut the first leaf at `a`, drop
            // the leaves in between, keep the last leaf's tail after `b`.
            // A last leaf entered at its start is kept whole.
            let (upto, tail) = if b.1 == 0 {
                (b.0, Vec::new())
            } else {
                (b.0 + 1, self.leaf(b.0)[b.1..].to_vec())
            };
            let mut n = self.leaf(a.0).len() - a.1;
            for l in a.0 + 1..b.0 {
                n += self.leaf(l).len();
            }
            n += b.1;
            removed = n;
            let leaf = self.leaf_mut(a.0);
            leaf.truncate(a.1);
            leaf.extend_from_slice(repl);
            leaf.extend_from_slice(&tail);
            self.drop_leaves(a.0 + 1, upto);
            a.0
        };
        self.len = self.len + repl.len() - removed;
        let len = self.leaf(l).len();
        if len == 0 {
            self.drop_leaves(l, l + 1);
        } else if len > LEAF_MAX {
            let idx = self.alloc_leaf();
            let (cur, new) = (self.order[l] as usize, idx as usize);
            let mut upper = std::mem::take(&mut self.slab[new]);
            upper.extend_from_slice(&self.slab[cur][len / 2..]);
            self.slab[cur].truncate(len / 2);
            self.firsts[l] = self.slab[cur][0].0;
            self.firsts.insert(l + 1, upper[0].0);
            self.slab[new] = upper;
            self.order.insert(l + 1, idx);
        } else {
            self.firsts[l] = self.leaf(l)[0].0;
        }
    }

    /// The pieces over `[s, e)`, as [`ExtentMap::get_into`].
    fn get_into(&self, s: u64, e: u64, out: &mut Vec<(u64, u64, u64)>) {
        out.clear();
        let mut pos = s;
        if s < e && !self.order.is_empty() {
            let ((l0, i0), _) = self.first_ending_after(s, false);
            'leaves: for l in l0..self.nr_leaves() {
                let leaf = self.leaf(l);
                let from = if l == l0 { i0 } else { 0 };
                for &(ps, pe, pv) in &leaf[from..] {
                    if ps >= e {
                        break 'leaves;
                    }
                    let a = ps.max(s);
                    if a > pos {
                        out.push((pos, a, 0));
                    }
                    let b = pe.min(e);
                    out.push((a, b, pv));
                    pos = b;
                }
            }
        }
        if pos < e {
            out.push((pos, e, 0));
        }
    }

    fn iter(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.order
            .iter()
            .flat_map(|&idx| self.slab[idx as usize].iter().copied())
    }

    /// The first extent's start and the last one's end (the map is not empty).
    fn span(&self) -> (u64, u64) {
        let last = self.leaf(self.nr_leaves() - 1);
        (self.firsts[0], last[last.len() - 1].1)
    }

    /// The form of sorted, coalesced extents, in half-full leaves.
    fn from_sorted(ext: impl Iterator<Item = (u64, u64, u64)>) -> Sparse {
        let mut m = Sparse::default();
        let mut leaf = Vec::with_capacity(LEAF_MAX + 1);
        for x in ext {
            leaf.push(x);
            m.len += 1;
            if leaf.len() == LEAF_MAX / 2 {
                m.push_leaf(std::mem::replace(
                    &mut leaf,
                    Vec::with_capacity(LEAF_MAX + 1),
                ));
            }
        }
        if !leaf.is_empty() {
            m.push_leaf(leaf);
        }
        m
    }

    fn push_leaf(&mut self, leaf: Vec<(u64, u64, u64)>) {
        self.firsts.push(leaf[0].0);
        self.order.push(self.slab.len() as u32);
        self.slab.push(leaf);
    }
}

/// Where `x` falls among `n` entries spread evenly over `[lo, hi]`: the start of a search.
fn spread(x: u64, lo: u64, hi: u64, n: usize) -> usize {
    let off = u128::from(x.clamp(lo, hi) - lo);
    (off * n as u128 / u128::from((hi - lo).max(1))) as usize
}

/// `slice.partition_point(pred)`, found by galloping out from `guess` instead of halving the
/// whole slice: the same answer, but a search that starts near it touches one or two cache
/// lines of a leaf instead of one per halving. On 4 KiB random writes the leaves are out of
/// cache and the halving's dependent misses were most of `set` (`perf annotate`).
fn partition_from<T>(slice: &[T], guess: usize, pred: impl Fn(&T) -> bool) -> usize {
    let n = slice.len();
    let g = guess.min(n);
    let (lo, hi) = if g < n && pred(&slice[g]) {
        // The answer is after `g`.
        let (mut lo, mut step) = (g + 1, 1);
        loop {
            let probe = g + step;
            if probe >= n {
                break (lo, n);
            }
            if !pred(&slice[probe]) {
                break (lo, probe);
            }
            lo = probe + 1;
            step *= 2;
        }
    } else {
        // The answer is `g` or before.
        let (mut hi, mut step) = (g, 1);
        loop {
            if step > g {
                break (0, hi);
            }
            let probe = g - step;
            if pred(&slice[probe]) {
                break (probe + 1, hi);
            }
            hi = probe;
            step *= 2;
        }
    };
    lo + slice[lo..hi].partition_point(pred)
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

    #[test]
    fn partition_from_agrees_with_partition_point_from_any_guess() {
        for n in 0..40usize {
            let v: Vec<usize> = (0..n).collect();
            for p in 0..=n {
                for g in 0..=n + 2 {
                    assert_eq!(
                        partition_from(&v, g, |&x| x < p),
                        p,
                        "n {n} p {p} guess {g}"
                    );
                }
            }
        }
    }

    /// A sector-by-sector array is the reference: random sets (fresh ranges, overlaps,
    /// neighbours with the same value, zeroes) leave the map reading exactly what the array
    /// holds, and the extents always maximal (no two touching extents share a value).
    #[test]
    fn random_sets_match_a_sector_array() {
        random_sets(512, 24, 20_000);
        // Thousands of extents: many leaves, splits, writes across leaves.
        random_sets(1 << 14, 6, 8_000);
        random_sets(1 << 14, 3000, 400);
    }

    /// Granule-aligned sets over 4096 granules turn the map dense (asserted); a set far past
    /// them makes it too sparse and turns it back, a zero set over a huge range empties it,
    /// and an unaligned set ends the dense form for good. Through all of it
    /// the map reads what a granule array holds, with maximal extents.
    #[test]
    fn the_dense_form_reads_as_the_sparse_one() {
        const N: u64 = 4096;
        let mut m = ExtentMap::default();
        let mut a = vec![0u64; 16 * N as usize];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut dense_seen, mut sparse_again) = (false, false);
        let mut dense_checks = 0;
        for op in 0..40_000u32 {
            let (gs, ge, v) = match op % 10_000 {
                // Far past the others: 15 N granules of span for a few thousand extents.
                5_000 => {
                    let g = 15 * N + next() % N;
                    (g, g + 1, 1 + next() % 3)
                }
                // A discard of everything (and more).
                9_999 => (0, 16 * N, 0),
                _ => {
                    let g = next() % N;
                    (g, (g + 1 + next() % 4).min(N), next() % 4)
                }
            };
            m.set(gs * 8, ge * 8, v);
            a[gs as usize..ge as usize].fill(v);
            dense_seen |= m.is_dense();
            sparse_again |= dense_seen && !m.is_dense();
            if op % 61 == 0 {
                dense_checks += m.is_dense() as u32;
                check_against(&m, &a, 8, &mut next);
            }
        }
        assert!(dense_checks > 60, "{dense_checks} checks of the dense form");
        assert!(dense_seen && sparse_again);
        // A sector-granular write: sparse from now on, and still right.
        m.set(3, 5, 2);
        assert!(!m.is_dense());
        let mut sectors: Vec<u64> = a.iter().flat_map(|&v| [v; 8]).collect();
        sectors[3..5].fill(2);
        check_against(&m, &sectors, 1, &mut next);
    }

    /// An empty or reversed read gives no piece in either form; a dense map near the top of
    /// the sector space reads its last granule right; a zero set that leaves a dense map with
    /// far fewer runs than its span allows turns it sparse (its memory stays bounded).
    #[test]
    fn the_dense_form_at_its_edges() {
        let mut m = ExtentMap::default();
        for g in (0..40_000u64).step_by(2) {
            m.set(g * 8, g * 8 + 8, 1);
        }
        assert!(m.is_dense());
        assert_eq!(m.get(3, 3), vec![]);
        assert_eq!(m.get(5, 2), vec![]);
        // Thin it, one granule at a time, down to 10 runs over 40 000 granules: more than 16
        // granules per run (of the 1024 the form always allows).
        for g in (20..39_980u64).step_by(2) {
            m.set(g * 8, g * 8 + 8, 0);
        }
        assert!(!m.is_dense());
        assert_eq!(m.extents(), 20);
        assert_eq!(m.iter().last(), Some((39_998 * 8, 39_999 * 8, 1)));

        let top = (u64::MAX >> 3) - 4096;
        let mut m = ExtentMap::default();
        for g in (top..top + 2048).step_by(2) {
            m.set(g * 8, g * 8 + 8, 2);
        }
        assert!(m.is_dense());
        // Grow the span to the last granule a set can end at (2^64 - 8: the one after it
        // would end at 2^64).
        let last = !7u64 - 8;
        m.set(last, last + 8, 3);
        assert!(m.is_dense());
        let got = m.get(last - 8, u64::MAX);
        assert_eq!(
            got,
            vec![
                (last - 8, last, 0),
                (last, last + 8, 3),
                (last + 8, u64::MAX, 0)
            ]
        );
        assert_eq!(m.iter().last(), Some((last, last + 8, 3)));
    }

    /// Writes that walk downwards, one new run every 8 granules (the most the dense form
    /// allows), grow the span at its low end: the granules copied to grow it stay within a
    /// few times the final span, as at the high end (it copied the whole span at nearly
    /// every write).
    #[test]
    fn the_dense_form_grows_downwards_in_amortised_steps() {
        let mut m = ExtentMap::default();
        let top = 1u64 << 30;
        for i in 0..20_000u64 {
            let g = top - 8 * i;
            m.set(g * 8, g * 8 + 8, i + 1);
        }
        let Form::Dense(d) = &m.form else {
            panic!("sparse");
        };
        assert!(
            d.copied <= 4 * d.span(),
            "{} granules copied for a span of {}",
            d.copied,
            d.span()
        );
        assert_eq!(m.extents(), 20_000);
    }

    /// A prefetch hint anywhere, inside the dense span or past either end of it, in either
    /// form, changes nothing.
    #[test]
    fn a_prefetch_anywhere_changes_nothing() {
        let mut m = ExtentMap::default();
        m.prefetch(0);
        let base = 1u64 << 20;
        for i in 0..2048u64 {
            m.set(base + 16 * i, base + 16 * i + 8, i + 1);
        }
        assert!(m.is_dense());
        let before: Vec<_> = m.iter().collect();
        for s in [
            0,
            base - 8,
            base,
            base + 16 * 2047,
            base + 16 * 2048,
            u64::MAX,
        ] {
            m.prefetch(s);
        }
        assert_eq!(m.iter().collect::<Vec<_>>(), before);
    }

    /// The dense form's span ends in zeroed granules: a read from before it to past it still
    /// gives one zero piece on each side, as the sparse form does.
    #[test]
    fn the_dense_form_reads_maximal_pieces_past_its_span() {
        let mut m = ExtentMap::default();
        for g in 100..1300u64 {
            m.set(g * 8, g * 8 + 8, 1 + g % 2);
        }
        assert!(m.is_dense());
        m.set(100 * 8, 102 * 8, 0);
        m.set(1298 * 8, 1300 * 8, 0);
        assert!(m.is_dense());
        let got = m.get(3, 20_000);
        assert_eq!(got.first(), Some(&(3, 102 * 8, 0)));
        assert_eq!(got.last(), Some(&(1298 * 8, 20_000, 0)));
        assert_eq!(got.len(), 2 + 1196);
        assert_eq!(m.extents(), 1196);
    }

    /// `m` reads as `a`, an array of one value per `unit` sectors: a read from a random
    /// point to the end, one of a few sectors, and the extents, maximal.
    fn check_against(m: &ExtentMap, a: &[u64], unit: u64, next: &mut impl FnMut() -> u64) {
        let end = a.len() as u64 * unit;
        let at = |i: u64| a[(i / unit) as usize];
        for (q0, q1) in [(next() % end, end), {
            let s = next() % end;
            (s, (s + 1 + next() % 13).min(end))
        }] {
            let got = m.get(q0, q1);
            assert_eq!(got.first().map(|g| g.0), Some(q0));
            assert_eq!(got.last().map(|g| g.1), Some(q1));
            for w in got.windows(2) {
                assert_eq!(w[0].1, w[1].0, "pieces are consecutive");
                assert_ne!(w[0].2, w[1].2, "pieces are maximal");
            }
            for (ps, pe, pv) in got {
                for i in [ps, (ps + pe) / 2, pe - 1] {
                    assert_eq!(at(i), pv, "sector {i}");
                }
            }
        }
        let ex: Vec<_> = m.iter().collect();
        let mut want = Vec::new();
        for (i, &v) in a.iter().enumerate() {
            let (s, e) = (i as u64 * unit, (i as u64 + 1) * unit);
            match want.last_mut() {
                Some((_, le, lv)) if *le == s && *lv == v => *le = e,
                _ if v != 0 => want.push((s, e, v)),
                _ => {}
            }
        }
        assert_eq!(ex, want);
        assert_eq!(m.extents(), want.len());
    }

    fn random_sets(n: u64, max_len: u64, ops: usize) {
        let big = n;
        let mut m = ExtentMap::default();
        let mut a = vec![0u64; big as usize];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for op in 0..ops {
            let s = next() % big;
            let e = (s + 1 + next() % max_len).min(big);
            let v = next() % 4;
            m.set(s, e, v);
            for i in s..e {
                a[i as usize] = v;
            }
            if big > 512 && op % 97 != 0 {
                continue;
            }
            let q0 = next() % big;
            let got = m.get(q0, big);
            assert_eq!(got.first().map(|g| g.0), Some(q0));
            for w in got.windows(2) {
                assert_eq!(w[0].1, w[1].0, "pieces are consecutive");
            }
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
            assert_eq!(ex.len(), m.extents());
        }
    }
}
