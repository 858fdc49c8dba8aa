//! NAND timing and the two flash translation layers.
//!
//! Both FTLs answer one question: how long does the NAND array stay busy to make this write
//! persistent (including the garbage collection or merge it triggers)? They keep only the state
//! that decides that cost, in ordered containers, so results are deterministic.
//!
//! * [`PageFtl`]: page-mapped (mapping unit `card.map_unit_kib`), writes appended to an open
//!   block, greedy garbage collection (fewest valid units, lowest index on ties) whenever the free
//!   block count falls below `card.gc_low_blocks`. Over-provisioning `card.op_pct`. An optional
//!   prefill marks part of the logical space as written so GC runs in steady state. The GC is
//!   "background" in the sense that its cost goes into the card's write-back engine (see
//!   `card.rs`), so the host sees it only through a full cache or a flush; without a cache it is
//!   paid by the write that triggered it.
//! * [`AuFtl`]: allocation-unit (log-block) mapping as on older cards (measurements §2, §4): the
//!   card keeps `card.au_open` units open, each written at ascending offsets from a write
//!   pointer. A gap forward is filled by copying old data; a write to a unit that is not open
//!   evicts the least recently used open unit, whose unwritten rest is copied from the old block
//!   (read-modify-write merge) and whose old block is erased. So every random write costs about
//!   one whole-unit copy whatever its size, which is the ~100–250 ms of those measurements.

use blksim_core::Ns;
use std::collections::VecDeque;

/// NAND array geometry and timing.
#[derive(Clone, Debug)]
pub struct Nand {
    pub page_bytes: u64,
    /// planes × dies operating in parallel.
    pub parallel: u64,
    pub pages_per_block: u64,
    pub t_r: Ns,
    pub t_prog: Ns,
    pub t_bers: Ns,
    /// Channel rate in MB/s (= bytes per µs).
    pub channel_mbps: u64,
}

impl Nand {
    /// Bytes moved over the NAND channel.
    pub fn chan_ns(&self, bytes: u64) -> Ns {
        (bytes * 1000).div_ceil(self.channel_mbps.max(1))
    }
    /// Bytes sensed by one parallel read round.
    pub fn round_bytes(&self) -> u64 {
        self.page_bytes * self.parallel
    }
    /// One pipelined read round: sense all planes/dies, stream the round out over the channel.
    pub fn read_round_ns(&self) -> Ns {
        self.t_r.max(self.chan_ns(self.round_bytes()))
    }
    fn pages(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.page_bytes)
    }
    /// Programming `bytes`. `amortized`: data aggregated in the cache fills whole pages and all
    /// planes/dies, so the cost is proportional; otherwise whole rounds (a 4 KiB write-through
    /// costs one full t_PROG).
    pub fn prog_ns(&self, bytes: u64, amortized: bool) -> Ns {
        if bytes == 0 {
            return 0;
        }
        let arr = if amortized {
            (bytes as u128 * self.t_prog as u128).div_ceil(self.round_bytes() as u128) as Ns
        } else {
            self.pages(bytes).div_ceil(self.parallel) * self.t_prog
        };
        arr.max(self.chan_ns(bytes))
    }
    /// Internal copy (sense + program, no channel round trip to the host) of `bytes`.
    pub fn copy_ns(&self, bytes: u64) -> Ns {
        if bytes == 0 {
            return 0;
        }
        self.pages(bytes).div_ceil(self.parallel) * (self.t_r + self.t_prog)
    }
    pub fn erase_ns(&self, blocks: u64) -> Ns {
        blocks.div_ceil(self.parallel) * self.t_bers
    }
    pub fn block_bytes(&self) -> u64 {
        self.page_bytes * self.pages_per_block
    }
}

/// Facts the FTLs count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FtlStats {
    pub gc_blocks: u64,
    pub gc_copied_units: u64,
    pub gc_ns: u64,
    pub rmw_units: u64,
    pub au_merges: u64,
    pub au_merge_ns: u64,
    pub au_gap_fill_bytes: u64,
    pub au_clean_closes: u64,
}

pub enum Ftl {
    Page(PageFtl),
    Au(AuFtl),
}

impl Ftl {
    /// NAND busy time to persist a write of `[sector, sector + nr)`.
    pub fn program(&mut self, nand: &Nand, sector: u64, nr: u32, amortized: bool) -> Ns {
        match self {
            Ftl::Page(f) => f.write(nand, sector, nr, amortized),
            Ftl::Au(f) => f.write(nand, sector, nr, amortized),
        }
    }
    pub fn trim(&mut self, sector: u64, nr: u64) {
        if let Ftl::Page(f) = self {
            f.trim(sector, nr)
        }
    }
    pub fn stats(&self) -> &FtlStats {
        match self {
            Ftl::Page(f) => &f.stats,
            Ftl::Au(f) => &f.stats,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Page-mapped FTL
// ---------------------------------------------------------------------------------------------

const CHUNK_SHIFT: u32 = 12;
const CHUNK: usize = 1 << CHUNK_SHIFT;
/// Forward-map sentinels: "lives at its prefill location" and "not mapped".
const IMPLICIT: u32 = u32::MAX;
const UNMAPPED: u32 = u32::MAX - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlkState {
    Free,
    Open,
    Closed,
}

#[derive(Clone, Debug)]
struct Blk {
    state: BlkState,
    valid: u32,
    written: u32,
    /// Written from the prefill: slot i holds unit (block × units_per_block + i).
    prefilled: bool,
    /// Logical unit per written slot (empty for prefilled blocks).
    owner: Vec<u32>,
}

pub struct PageFtl {
    unit_bytes: u64,
    upb: u32,
    logical_units: u64,
    prefill_units: u64,
    gc_low: usize,
    fwd: Vec<Option<Box<[u32]>>>,
    blocks: Vec<Blk>,
    free: VecDeque<u32>,
    active: Option<u32>,
    pub stats: FtlStats,
}

impl PageFtl {
    pub fn new(
        nand: &Nand,
        capacity_bytes: u64,
        unit_bytes: u64,
        op_pct: u64,
        gc_low: u32,
        prefill_pct: u64,
    ) -> Result<Self, String> {
        if unit_bytes == 0
            || !nand.block_bytes().is_multiple_of(unit_bytes)
            || !unit_bytes.is_multiple_of(512)
        {
            return Err("card.map_unit_kib must divide the NAND block size".into());
        }
        let upb = (nand.block_bytes() / unit_bytes) as u32;
        let logical_units = capacity_bytes / unit_bytes;
        let gc_low = gc_low.max(2) as usize;
        let need = logical_units.div_ceil(upb as u64) + gc_low as u64 + 2;
        let nblocks = (logical_units * (100 + op_pct) / 100)
            .div_ceil(upb as u64)
            .max(need);
        if nblocks * upb as u64 >= UNMAPPED as u64 {
            return Err("card.capacity_mib too large for the page FTL's 32-bit map".into());
        }
        let prefill_units = logical_units * prefill_pct.min(100) / 100;
        let pre_blocks = prefill_units.div_ceil(upb as u64);
        let mut blocks = Vec::with_capacity(nblocks as usize);
        let mut free = VecDeque::new();
        for b in 0..nblocks {
            if b < pre_blocks {
                let valid = (prefill_units - b * upb as u64).min(upb as u64) as u32;
                blocks.push(Blk {
                    state: BlkState::Closed,
                    valid,
                    written: upb,
                    prefilled: true,
                    owner: Vec::new(),
                });
            } else {
                blocks.push(Blk {
                    state: BlkState::Free,
                    valid: 0,
                    written: 0,
                    prefilled: false,
                    owner: Vec::new(),
                });
                free.push_back(b as u32);
            }
        }
        let nchunks = (logical_units as usize).div_ceil(CHUNK);
        Ok(PageFtl {
            unit_bytes,
            upb,
            logical_units,
            prefill_units,
            gc_low,
            fwd: (0..nchunks).map(|_| None).collect(),
            blocks,
            free,
            active: None,
            stats: FtlStats::default(),
        })
    }

    pub fn free_blocks(&self) -> usize {
        self.free.len()
    }

    fn lookup(&self, lpn: u64) -> Option<u32> {
        let e = match &self.fwd[(lpn >> CHUNK_SHIFT) as usize] {
            Some(c) => c[(lpn as usize) & (CHUNK - 1)],
            None => IMPLICIT,
        };
        match e {
            IMPLICIT if lpn < self.prefill_units => Some(lpn as u32),
            IMPLICIT | UNMAPPED => None,
            s => Some(s),
        }
    }

    fn set(&mut self, lpn: u64, v: u32) {
        let ci = (lpn >> CHUNK_SHIFT) as usize;
        if self.fwd[ci].is_none() {
            let base = (ci as u64) << CHUNK_SHIFT;
            let pre = self.prefill_units;
            let c: Box<[u32]> = (0..CHUNK as u64)
                .map(|i| if base + i < pre { IMPLICIT } else { UNMAPPED })
                .collect();
            self.fwd[ci] = Some(c);
        }
        self.fwd[ci].as_mut().unwrap()[(lpn as usize) & (CHUNK - 1)] = v;
    }

    fn invalidate(&mut self, lpn: u64) {
        if let Some(slot) = self.lookup(lpn) {
            let b = (slot / self.upb) as usize;
            self.blocks[b].valid -= 1;
        }
    }

    /// Whether the next slot needs a fresh block (no open block, or the open one is full).
    fn needs_block(&self) -> bool {
        self.active
            .is_none_or(|a| self.blocks[a as usize].written >= self.upb)
    }

    /// Next free slot in the open block, opening a fresh block if needed.
    fn alloc_slot(&mut self) -> u32 {
        if let Some(a) = self.active {
            if self.blocks[a as usize].written < self.upb {
                let blk = &mut self.blocks[a as usize];
                let s = a * self.upb + blk.written;
                blk.written += 1;
                return s;
            }
            self.blocks[a as usize].state = BlkState::Closed;
        }
        let b = self.free.pop_front().expect("page FTL out of free blocks");
        let upb = self.upb as usize;
        let blk = &mut self.blocks[b as usize];
        blk.state = BlkState::Open;
        blk.written = 1;
        blk.valid = 0;
        blk.prefilled = false;
        blk.owner.clear();
        blk.owner.reserve(upb);
        self.active = Some(b);
        b * self.upb
    }

    fn place(&mut self, lpn: u64) {
        self.invalidate(lpn);
        let s = self.alloc_slot();
        let b = (s / self.upb) as usize;
        let blk = &mut self.blocks[b];
        blk.valid += 1;
        blk.owner.push(lpn as u32);
        debug_assert_eq!(blk.owner.len() as u32, blk.written);
        self.set(lpn, s);
    }

    /// Collect one victim. Returns the NAND time, or None if nothing can be reclaimed.
    fn gc_one(&mut self, nand: &Nand) -> Option<Ns> {
        let victim = (0..self.blocks.len())
            .filter(|&b| self.blocks[b].state == BlkState::Closed)
            .min_by_key(|&b| (self.blocks[b].valid, b))?;
        if self.blocks[victim].valid >= self.upb {
            return None;
        }
        let base = victim as u32 * self.upb;
        let mut moved = 0u64;
        for i in 0..self.blocks[victim].written {
            let lpn = if self.blocks[victim].prefilled {
                (base + i) as u64
            } else {
                self.blocks[victim].owner[i as usize] as u64
            };
            if lpn < self.logical_units && self.lookup(lpn) == Some(base + i) {
                self.place(lpn);
                moved += 1;
            }
        }
        let blk = &mut self.blocks[victim];
        debug_assert_eq!(blk.valid, 0);
        blk.state = BlkState::Free;
        blk.written = 0;
        blk.prefilled = false;
        blk.owner = Vec::new();
        self.free.push_back(victim as u32);
        let ns = nand.copy_ns(moved * self.unit_bytes) + nand.erase_ns(1);
        self.stats.gc_blocks += 1;
        self.stats.gc_copied_units += moved;
        self.stats.gc_ns += ns;
        Some(ns)
    }

    fn write(&mut self, nand: &Nand, sector: u64, nr: u32, amortized: bool) -> Ns {
        let ub = self.unit_bytes;
        let start = sector * 512;
        let end = (start + nr as u64 * 512).min(self.logical_units * ub);
        if end <= start {
            return 0;
        }
        let first = start / ub;
        let last = (end - 1) / ub;
        let mut ns = 0;
        // Partial head/tail units that hold data are read, merged and rewritten.
        for (u, partial) in [
            (first, !start.is_multiple_of(ub)),
            (last, !end.is_multiple_of(ub)),
        ] {
            if partial && self.lookup(u).is_some() {
                ns += nand.t_r;
                self.stats.rmw_units += 1;
            }
            if first == last {
                break;
            }
        }
        for u in first..=last {
            // Foreground GC: a write larger than the free pool left above `gc_low` (blocks
            // of a few pages, a small `gc_low`) cannot wait for the GC after it. When the
            // next unit needs a fresh block and only the one block the GC needs for its own
            // relocations is left, reclaim first, as a real FTL does.
            while self.needs_block() && self.free.len() <= 1 {
                match self.gc_one(nand) {
                    Some(g) => ns += g,
                    None => break,
                }
            }
            self.place(u);
        }
        ns += nand.prog_ns((last - first + 1) * ub, amortized);
        while self.free.len() < self.gc_low {
            match self.gc_one(nand) {
                Some(g) => ns += g,
                None => break,
            }
        }
        ns
    }

    fn trim(&mut self, sector: u64, nr: u64) {
        let ub = self.unit_bytes;
        let start = (sector * 512).div_ceil(ub);
        let end = ((sector + nr) * 512 / ub).min(self.logical_units);
        for u in start..end {
            if self.lookup(u).is_some() {
                self.invalidate(u);
                self.set(u, UNMAPPED);
            }
        }
    }

    /// Sum of valid counts equals mapped units (test helper).
    pub fn check(&self) {
        let valid: u64 = self.blocks.iter().map(|b| b.valid as u64).sum();
        let mapped = (0..self.logical_units)
            .filter(|&u| self.lookup(u).is_some())
            .count() as u64;
        assert_eq!(valid, mapped);
    }
}

// ---------------------------------------------------------------------------------------------
// Allocation-unit (log-block) FTL
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenAu {
    pub au: u64,
    /// Bytes written from the start of the unit (the write pointer).
    pub wp: u64,
    stamp: u64,
}

pub struct AuFtl {
    pub au_bytes: u64,
    pub max_open: usize,
    pub random_in_open: bool,
    pub merge_fw: Ns,
    /// `card.au_gap_merge`: a forward gap merges the unit instead of copying the gap.
    pub gap_merge: bool,
    pub open: Vec<OpenAu>,
    clock: u64,
    pub stats: FtlStats,
}

impl AuFtl {
    pub fn new(au_bytes: u64, max_open: u32, random_in_open: bool, merge_fw: Ns) -> Self {
        AuFtl {
            au_bytes,
            max_open: max_open.max(1) as usize,
            random_in_open,
            merge_fw,
            gap_merge: false,
            open: Vec::new(),
            clock: 0,
            stats: FtlStats::default(),
        }
    }

    pub fn with_gap_merge(mut self, on: bool) -> Self {
        self.gap_merge = on;
        self
    }

    /// Cost of closing a unit written up to `wp`: copy the rest from the old block (a merge),
    /// then erase the old block. A completely written unit only erases its old block.
    pub fn close_ns(&self, nand: &Nand, wp: u64) -> Ns {
        let erase = nand.erase_ns(self.au_bytes.div_ceil(nand.block_bytes()));
        if wp >= self.au_bytes {
            erase
        } else {
            nand.copy_ns(self.au_bytes - wp) + erase + self.merge_fw
        }
    }

    fn close(&mut self, nand: &Nand, idx: usize) -> Ns {
        let o = self.open.remove(idx);
        let ns = self.close_ns(nand, o.wp);
        if o.wp >= self.au_bytes {
            self.stats.au_clean_closes += 1;
        } else {
            self.stats.au_merges += 1;
            self.stats.au_merge_ns += ns;
        }
        ns
    }

    fn write(&mut self, nand: &Nand, sector: u64, nr: u32, amortized: bool) -> Ns {
        let mut ns = 0;
        let mut pos = sector * 512;
        let end = pos + nr as u64 * 512;
        while pos < end {
            let au = pos / self.au_bytes;
            let off = pos % self.au_bytes;
            let len = (self.au_bytes - off).min(end - pos);
            self.clock += 1;
            let stamp = self.clock;
            let idx = match self.open.iter().position(|o| o.au == au) {
                Some(i)
                    if off == self.open[i].wp
                        || self.random_in_open
                        || (off > self.open[i].wp && !self.gap_merge) =>
                {
                    i
                }
                Some(i) => {
                    // Writing below the write pointer of a strictly sequential unit (or, with
                    // `gap_merge`, beyond it): merge it and start the unit again.
                    ns += self.close(nand, i);
                    self.open.push(OpenAu { au, wp: 0, stamp });
                    self.open.len() - 1
                }
                None => {
                    if self.open.len() >= self.max_open {
                        let lru = (0..self.open.len())
                            .min_by_key(|&i| self.open[i].stamp)
                            .unwrap();
                        ns += self.close(nand, lru);
                    }
                    self.open.push(OpenAu { au, wp: 0, stamp });
                    self.open.len() - 1
                }
            };
            let o = &mut self.open[idx];
            o.stamp = stamp;
            if off > o.wp {
                // Fill the gap from the old block so the unit stays in order.
                let gap = off - o.wp;
                ns += nand.copy_ns(gap);
                self.stats.au_gap_fill_bytes += gap;
            }
            ns += nand.prog_ns(len, amortized);
            o.wp = o.wp.max(off + len);
            if o.wp >= self.au_bytes {
                ns += self.close(nand, idx);
            }
            pos += len;
        }
        ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nand() -> Nand {
        Nand {
            page_bytes: 4096,
            parallel: 2,
            pages_per_block: 128,
            t_r: 50_000,
            t_prog: 300_000,
            t_bers: 2_000_000,
            channel_mbps: 40,
        }
    }

    /// An allocation-unit card charges the whole-unit rewrite exactly when a write leaves the
    /// open units (here: 2 open units of 1 MiB), and never for writes inside them.
    #[test]
    fn au_charges_the_rewrite_exactly_when_leaving_open_units() {
        let n = nand();
        let au = 1 << 20;
        let mut f = AuFtl::new(au, 2, false, 1_000_000);
        let s = |au_idx: u64, off_kib: u64| (au_idx * au + off_kib * 1024) / 512;
        let prog4k = n.prog_ns(4096, false);
        // Open unit 0 at its start: program only.
        assert_eq!(f.write(&n, s(0, 0), 8, false), prog4k);
        // Ascending inside unit 0 with a 4 KiB gap: gap fill + program, no merge.
        assert_eq!(f.write(&n, s(0, 8), 8, false), n.copy_ns(4096) + prog4k);
        // Open unit 5 (second open unit): program only.
        assert_eq!(f.write(&n, s(5, 0), 8, false), prog4k);
        assert_eq!(f.stats.au_merges, 0);
        // Unit 9 is not open and both slots are taken: the LRU unit (0, wp = 12 KiB) is merged.
        let merge0 = n.copy_ns(au - 12 * 1024) + n.erase_ns(au / n.block_bytes()) + 1_000_000;
        assert_eq!(f.close_ns(&n, 12 * 1024), merge0);
        assert_eq!(f.write(&n, s(9, 0), 8, false), merge0 + prog4k);
        assert_eq!(f.stats.au_merges, 1);
        // Going back below the write pointer of open unit 9: that unit is merged and restarted,
        // with a gap fill up to the new offset.
        let merge9 = n.copy_ns(au - 4096) + n.erase_ns(au / n.block_bytes()) + 1_000_000;
        assert_eq!(f.write(&n, s(9, 0), 8, false), merge9 + prog4k);
        assert_eq!(f.stats.au_merges, 2);
        // Writing the rest of unit 9 sequentially completes it: a clean close (erase only).
        let rest = (au - 4096) / 512;
        let cost = f.write(&n, s(9, 4), rest as u32, false);
        assert_eq!(
            cost,
            n.prog_ns(au - 4096, false) + n.erase_ns(au / n.block_bytes())
        );
        assert_eq!(f.stats.au_merges, 2);
        assert_eq!(f.stats.au_clean_closes, 1);
        // A random small write costs about a whole-unit copy, whatever its size.
        let mut g = AuFtl::new(au, 2, false, 0);
        g.write(&n, s(1, 0), 8, false);
        g.write(&n, s(2, 0), 8, false);
        let small = g.write(&n, s(3, 512), 1, false);
        let big = g.write(&n, s(4, 512), 256, false);
        assert!(small > n.copy_ns(au - 4096) && big > n.copy_ns(au - 4096));
        assert!(big - small < big / 4, "small {small} big {big}");
    }

    #[test]
    fn page_ftl_gc_keeps_counts_and_costs_when_full() {
        let n = nand();
        // 64 MiB logical, 7 % OP, 4 KiB units, prefilled to 100 %.
        let mut f = PageFtl::new(&n, 64 << 20, 4096, 7, 4, 100).unwrap();
        f.check();
        let mut rng = blksim_core::Rng::from_seed(7);
        let mut gc_cost = 0;
        for _ in 0..20_000 {
            let u = rng.below(16384);
            let c = f.write(&n, u * 8, 8, true);
            if c > n.prog_ns(4096, true) {
                gc_cost += 1;
            }
        }
        f.check();
        assert!(f.stats.gc_blocks > 0 && gc_cost > 0);
        assert!(f.free_blocks() >= 4);
        // Trim frees mapped units and the counts still agree.
        f.trim(0, 8 * 1000);
        f.check();
    }

    /// Erase blocks of one 16 KiB page (`card.pages_per_block=1`): a 128 KiB write that is not
    /// unit-aligned spans 33 units, 9 blocks, more than the `gc_low` of 8 the pool is kept at.
    /// The GC runs inside the write (before the last free block is taken), so the write
    /// completes and the counts stay right, on a full card of any size.
    #[test]
    fn page_ftl_write_larger_than_the_free_pool_collects_as_it_goes() {
        let n = Nand {
            pages_per_block: 1,
            page_bytes: 16384,
            ..nand()
        };
        for (mib, prefill) in [(1u64, 0u64), (1, 100), (16, 100)] {
            let mut f = PageFtl::new(&n, mib << 20, 4096, 7, 8, prefill).unwrap();
            let units = (mib << 20) / 4096;
            let mut rng = blksim_core::Rng::from_seed(mib + prefill);
            for _ in 0..2_000 {
                // 128 KiB at a 1 KiB-aligned offset: 32 or 33 units.
                let sector = rng.below(units * 8 - 256) & !1;
                f.write(&n, sector, 256, true);
                assert!(f.free_blocks() >= 1);
            }
            f.check();
            assert!(f.stats.gc_blocks > 0, "{mib} MiB prefill {prefill}");
        }
    }
}
