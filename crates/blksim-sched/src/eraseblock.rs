//! `eraseblock`: an MMC-aware scheduler, the one sketched in measurements §4 (a 2009 eMMC with
//! 512 KiB erase blocks). Not in the kernel.
//!
//! The card charges about 250 ms for *any* write into an erase block it has to merge (512 B to
//! 512 KiB, any offset), about 270 ms for writing a whole erase block, and 25–30 ms for reading
//! one. Two writes into one erase block with a gap therefore cost ~510 ms separately but ~300 ms
//! if the scheduler reads the gap and writes the whole block once. This elevator does that:
//!
//! * **Reads** (and flushes, discards, FUA writes, requeues) get mq-deadline, composed: an inner
//!   [`MqDeadline`] owns them, with its expiry, batching and merges.
//! * **Writes** are first *held* by position. On each dispatch the held writes are planned:
//!   for a write, every window of 1..=`1 + neighbour_blocks` aligned erase blocks containing it
//!   is costed with the tunable cost model (pieces × `write_cost_ms` separately, against the gap
//!   reads plus blocks × `block_write_ms` combined); the window with the largest saving becomes a
//!   *group*: its held writes are its members, the holes between them are read by requests the
//!   elevator allocates itself, and when the reads are back one write covering the window is
//!   built from the first member: the members' bios (user data, their versions) plus gap bios
//!   carrying the versions the reads returned. A held write that no window makes cheaper waits
//!   up to `write_wait_ms` for neighbours (only while other I/O is in flight, so a lone
//!   synchronous writer never waits, and never when it continues the previous write), then
//!   goes to mq-deadline.
//!
//! **Correctness (newest data wins).** While a group is active (reading its gaps, or its
//! combined write in flight) its window is locked:
//! * a new write that falls wholly inside the window before the combined write is built is
//!   folded in as a member (its bios come after the gap data, so it overrides it);
//! * any other write overlapping the window (a later or partial one, or one mq-deadline or the
//!   ready list hands out) is held back until the combined write completes, so it lands after;
//! * a group never forms over a window with a write in flight at the driver (its data could
//!   land between the gap read and the combined write).
//!
//! Reads of a locked window need no care: gap sectors are rewritten with the data they hold,
//! and member sectors belong to writes still in flight from their submitters' view.
//!
//! The block-layer hooks used: internal requests are allocated in the [`RqPool`] with bio tokens
//! in [`INTERNAL_TOKEN`]'s namespace and no scheduler tag; gap data comes from
//! [`Elevator::completed_request_data`]; absorbed members' shells go back through
//! [`Elevator::take_released`].

use crate::mq_deadline::MqDeadline;
use blksim_block::elevator::{parse_tunable, tunables_of, BioInfo, ElvParams, Tunable};
use blksim_block::integrity::{Integrity, INTERNAL_TOKEN};
use blksim_block::limits::QueueLimits;
use blksim_block::pdu::RqMap;
use blksim_block::request::{flags, rqf, Bio, IoPrio, Op, Request, RqId, RqPool, NO_BIO};
use blksim_block::{Elevator, ElvMerge};
use blksim_core::{Ns, ParamDef, NSEC_PER_MSEC};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Erase block assumed when the device reports none (measurements §4).
pub const DEFAULT_ERASE_BLOCK_BYTES: u64 = 512 * 1024;
/// §4: "Writes to randomly chosen erase blocks: about 250 ms each"; two cost ~510 ms.
pub const WRITE_COST_MS: u64 = 255;
/// §4: "writing the whole erase block ~270 ms".
pub const BLOCK_WRITE_MS: u64 = 270;
/// Gap reads: a fixed cost per command plus a rate. §4: a random erase block (512 KiB) reads in
/// 25–30 ms, 11 MiB/s at 16 KiB rising to 24 MiB/s at 2 MiB; 1 ms + 20 MiB/s gives 1.8 ms at
/// 16 KiB and 26 ms at 512 KiB.
pub const READ_BASE_US: u64 = 1000;
pub const READ_KIB_S: u64 = 20 * 1024;
/// How long a lone write may wait for neighbours: short against the 250 ms it costs.
pub const WRITE_WAIT_MS: u64 = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GroupState {
    /// Gap reads in flight.
    Reading,
    /// Gap data complete: build the combined write at the next dispatch.
    Ready,
    /// Combined write dispatched.
    Writing,
}

#[derive(Debug)]
struct Group {
    start: u64,
    end: u64,
    /// Absorbed user writes, in arrival order.
    members: Vec<RqId>,
    pending_reads: u32,
    /// What the gap reads returned: (start, end, version).
    gap: Vec<(u64, u64, u64)>,
    state: GroupState,
}

/// A planned window.
#[derive(Debug, PartialEq)]
struct Window {
    start: u64,
    end: u64,
    members: Vec<RqId>,
    holes: Vec<(u64, u64)>,
}

/// The `eraseblock` scheduler's tunables (its own, on top of mq-deadline's).
pub static EB_TUNABLES: &[ParamDef] = &[
    ParamDef::new("erase_block_kb", "KiB", "auto", 1, 1 << 20, "erase block (eMMC allocation unit) writes are grouped in; auto = the profile's card.au_kib, else 512", "blksim scheduler; measurements s4 (512 KiB erase blocks)"),
    ParamDef::new("max_gap_kb", "KiB", "auto", 0, 1 << 20, "largest hole between grouped writes worth reading; auto = erase_block_kb", "blksim scheduler"),
    ParamDef::new("neighbour_blocks", "count", "1", 0, 64, "erase blocks next to a write's own that one combined write may also cover", "blksim scheduler"),
    ParamDef::new("write_wait_ms", "ms", "10", 0, 3_600_000, "how long a write no group wants may wait for neighbours while other I/O is in flight", "blksim scheduler"),
    ParamDef::new("write_cost_ms", "ms", "255", 0, 3_600_000, "cost model: one write into an erase block, any size", "measurements s4: 250-255 ms"),
    ParamDef::new("block_write_ms", "ms", "270", 0, 3_600_000, "cost model: writing one whole erase block", "measurements s4: 270 ms"),
    ParamDef::new("read_base_us", "us", "1000", 0, 3_600_000_000, "cost model: fixed cost of one gap read", "blksim scheduler"),
    ParamDef::new("read_kib_s", "KiB/s", "20480", 1, 1 << 30, "cost model: gap read throughput (20 MiB/s)", "measurements s4"),
    ParamDef::new("debug_break_newer_writes", "count", "0", 0, 1, "test only: let gap data overwrite newer writes (the integrity oracle must catch it)", "blksim tests"),
];

pub struct EraseBlock {
    dd: MqDeadline,
    max_sectors: u64,
    max_segments: u16,
    capacity: u64,
    // Tunables (sectors / ns).
    eb_sectors: u64,
    max_gap_sectors: u64,
    neighbour_blocks: u64,
    write_wait_ns: Ns,
    /// mq-deadline's `write_expire`: a held write older than this goes ahead of reads.
    write_expire_ns: Ns,
    write_cost_ns: Ns,
    block_write_ns: Ns,
    read_base_ns: Ns,
    read_kib_s: u64,
    /// Test hook (`debug_break_newer_writes=1`): drop the newest-data rule (no folding, no
    /// locking), so the property test can show it catches the resulting lost writes.
    break_newer_writes: bool,
    // Held writes.
    held: BTreeMap<(u64, u64), RqId>,
    /// Held writes in arrival order, with when each was held (the scans of `refresh` read
    /// both on every dispatch and completion).
    held_fifo: BTreeMap<u64, (RqId, Ns)>,
    /// A held write's arrival number (its key in `held` and `held_fifo`).
    held_meta: RqMap<u64>,
    /// Held writes by when they were held (nearly `held_fifo`'s order: each was held at its
    /// context's clock, which the CPU model keeps per CPU), for the oldest and for the first
    /// whose `write_wait_ms` has not run out.
    held_by_time: BTreeSet<(Ns, u64)>,
    /// The held writes' lengths (sectors → how many): the longest is the reach of
    /// [`Self::touch`] back from a change.
    held_lens: BTreeMap<u64, u32>,
    /// Held writes (arrival numbers) that a plan must look at again. Every other held write
    /// is known to seed no group: it is locked out by an active group, a write held before
    /// it starts in the same erase block (only the oldest seeds there), or no window around
    /// it was worth combining. That holds until the held writes, the writes in flight or
    /// the groups change within its windows' reach, which puts it back here
    /// ([`Self::touch`]); so a plan costs what changed since the last one, not what is
    /// held (with 128 hardware queues' worth of writes held on `null_blk-server`, the full
    /// scan on every insert, dispatch and completion cost about 150 µs per write).
    unknown: BTreeSet<u64>,
    seq: u64,
    /// Requests to hand out before anything else: gap reads, combined writes, unblocked writes.
    ready: VecDeque<RqId>,
    /// Active groups by window start (windows never overlap).
    groups: BTreeMap<u64, Group>,
    max_window: u64,
    /// Internal requests (gap reads, combined writes) → their group.
    internal: BTreeMap<RqId, u64>,
    /// Data writes dispatched and not completed: (start, rq) → end.
    inflight: BTreeMap<(u64, RqId), u64>,
    inflight_max_len: u64,
    dispatched: BTreeSet<RqId>,
    /// User writes held back by a locked window.
    blocked: Vec<RqId>,
    released: Vec<RqId>,
    last_write_end: u64,
    plan_ready: bool,
    next_timer_at: Option<Ns>,
    // Statistics.
    st_groups: u64,
    st_gap_reads: u64,
    st_gap_sectors: u64,
    st_combined: u64,
    st_absorbed: u64,
    st_folded: u64,
    st_blocked: u64,
    st_released: u64,
}

fn is_data_write(r: &Request) -> bool {
    matches!(r.op, Op::Write | Op::Discard)
}

/// Writes the scheduler may fold into a combined write: plain ones. A write the flush
/// machinery sequences (RQF_FLUSH_SEQ; its REQ_FUA may already be stripped for a device
/// without FUA) must reach the device as itself, as REQ_NOMERGE_FLAGS keep it unmerged.
fn groupable(r: &Request) -> bool {
    r.op == Op::Write
        && r.flags & (flags::REQ_FUA | flags::REQ_PREFLUSH) == 0
        && r.rq_flags & rqf::FLUSH_SEQ == 0
        && r.nr_sectors > 0
        && r.bio_head != NO_BIO
}

/// Union of sorted intervals.
fn runs(mut iv: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    iv.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(iv.len());
    for (a, b) in iv {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// `[s, e)` minus sorted, disjoint `cov`.
fn subtract(s: u64, e: u64, cov: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut pos = s;
    for &(a, b) in cov {
        if b <= pos || a >= e {
            continue;
        }
        if a > pos {
            out.push((pos, a));
        }
        pos = pos.max(b);
    }
    if pos < e {
        out.push((pos, e));
    }
    out
}

impl EraseBlock {
    pub fn new(p: &ElvParams) -> Self {
        Self::with_limits(p, QueueLimits::default())
    }

    pub fn with_limits(p: &ElvParams, lim: QueueLimits) -> Self {
        let eb = p
            .erase_block_bytes
            .filter(|&b| b >= 512)
            .unwrap_or(DEFAULT_ERASE_BLOCK_BYTES)
            / 512;
        let mut e = EraseBlock {
            max_sectors: lim.max_sectors().max(1) as u64,
            max_segments: lim.max_segments.max(1),
            dd: MqDeadline::with_limits(p, lim),
            capacity: u64::MAX,
            eb_sectors: eb,
            max_gap_sectors: eb,
            neighbour_blocks: 1,
            write_wait_ns: WRITE_WAIT_MS * NSEC_PER_MSEC,
            write_expire_ns: crate::mq_deadline::WRITE_EXPIRE * crate::TICK_NS,
            write_cost_ns: WRITE_COST_MS * NSEC_PER_MSEC,
            block_write_ns: BLOCK_WRITE_MS * NSEC_PER_MSEC,
            read_base_ns: READ_BASE_US * 1000,
            read_kib_s: READ_KIB_S,
            break_newer_writes: false,
            held: BTreeMap::new(),
            held_fifo: BTreeMap::new(),
            held_meta: RqMap::default(),
            held_by_time: BTreeSet::new(),
            held_lens: BTreeMap::new(),
            unknown: BTreeSet::new(),
            seq: 0,
            ready: VecDeque::new(),
            groups: BTreeMap::new(),
            max_window: 0,
            internal: BTreeMap::new(),
            inflight: BTreeMap::new(),
            inflight_max_len: 0,
            dispatched: BTreeSet::new(),
            blocked: Vec::new(),
            released: Vec::new(),
            last_write_end: u64::MAX,
            plan_ready: false,
            next_timer_at: None,
            st_groups: 0,
            st_gap_reads: 0,
            st_gap_sectors: 0,
            st_combined: 0,
            st_absorbed: 0,
            st_folded: 0,
            st_blocked: 0,
            st_released: 0,
        };
        e.update_window();
        e
    }

    fn update_window(&mut self) {
        self.max_window = self.eb_sectors * (1 + self.neighbour_blocks);
    }

    /// Cost of reading `sectors` in one command (the gap reads).
    fn read_cost(&self, sectors: u64) -> Ns {
        let bytes = sectors * 512;
        self.read_base_ns
            + (bytes as u128 * 1_000_000_000 / (self.read_kib_s.max(1) as u128 * 1024)) as Ns
    }

    /// The active group whose window overlaps `[s, e)`, if any.
    fn active_overlap(&self, s: u64, e: u64) -> Option<u64> {
        let lo = s.saturating_sub(self.max_window);
        self.groups
            .range(lo..e)
            .find(|(_, g)| g.start < e && g.end > s)
            .map(|(&k, _)| k)
    }

    fn inflight_overlap(&self, s: u64, e: u64) -> bool {
        let lo = s.saturating_sub(self.inflight_max_len);
        self.inflight
            .range((lo, 0)..(e, 0))
            .any(|(&(a, _), &b)| a < e && b > s)
    }

    fn must_block(&self, pool: &RqPool, rq: RqId) -> bool {
        let r = pool.get(rq);
        !self.break_newer_writes
            && is_data_write(r)
            && self.active_overlap(r.sector, r.end_sector()).is_some()
    }

    fn hold(&mut self, pool: &RqPool, rq: RqId, now: Ns) {
        self.seq += 1;
        let r = pool.get(rq);
        let (s, e) = (r.sector, r.end_sector());
        self.held.insert((s, self.seq), rq);
        self.held_fifo.insert(self.seq, (rq, now));
        self.held_by_time.insert((now, self.seq));
        self.held_meta.insert(rq, self.seq);
        *self.held_lens.entry(e - s).or_insert(0) += 1;
        self.touch(s, e);
    }

    fn unhold(&mut self, pool: &RqPool, rq: RqId) {
        let seq = self.held_meta.remove(&rq).expect("held write");
        let r = pool.get(rq);
        self.held.remove(&(r.sector, seq));
        let (_, since) = self.held_fifo.remove(&seq).expect("held write");
        // A held request keeps its sectors (merges go to mq-deadline's own requests).
        let len = r.end_sector() - r.sector;
        debug_assert!(self.held_lens.contains_key(&len), "held write's length");
        if let Some(c) = self.held_lens.get_mut(&len) {
            *c -= 1;
            if *c == 0 {
                self.held_lens.remove(&len);
            }
        }
        self.held_by_time.remove(&(since, seq));
        self.unknown.remove(&seq);
        self.touch(r.sector, r.end_sector());
    }

    /// Something changed over `[s, e)` (a write held or no longer held, a write dispatched
    /// or completed, a group formed or done): the held writes whose windows, or whose own
    /// sectors and erase block, reach into it go back to [`Self::unknown`]. A write starting
    /// in block `k0` and ending in `k1` has windows from block `k1 + 1 - n` to
    /// `k0 + n - 1` (`n = 1 + neighbour_blocks`), so it is reached from a change in blocks
    /// `c0..=c1` only if it starts within `n - 1` blocks of them. Whether a write is locked
    /// out, or the oldest of its first block, changes with a change over its own sectors:
    /// the writes of the first block of any held write overlapping `[s, e)` (which starts
    /// less than the longest held write before `s`) go back too.
    fn touch(&mut self, s: u64, e: u64) {
        let eb = self.eb_sectors;
        let n = 1 + self.neighbour_blocks;
        let longest = self.held_lens.last_key_value().map_or(0, |(&l, _)| l);
        let lo = (s.saturating_sub(longest) / eb).saturating_sub(n - 1) * eb;
        let hi = ((e.max(s + 1) - 1) / eb)
            .saturating_add(n)
            .saturating_mul(eb);
        for (&(_, seq), _) in self.held.range((lo, 0)..(hi, 0)) {
            self.unknown.insert(seq);
        }
    }

    /// Every held write goes back to [`Self::unknown`] (a tunable or the capacity changed).
    fn touch_all(&mut self) {
        self.unknown = self.held_fifo.keys().copied().collect();
    }

    /// Whether held write `rq` is not locked out by an active group.
    fn is_eligible(&self, pool: &RqPool, rq: RqId) -> bool {
        let r = pool.get(rq);
        self.break_newer_writes
            || self.groups.is_empty()
            || self.active_overlap(r.sector, r.end_sector()).is_none()
    }

    /// A lone write waits for neighbours only while other I/O is in flight (more writes are
    /// likely to come as it completes) and when it does not continue the last write (a
    /// sequential stream fills its erase block by itself).
    #[cfg(debug_assertions)]
    fn worth_waiting(&self, sector: u64) -> bool {
        self.writes_wait() && sector != self.last_write_end
    }

    /// [`Self::worth_waiting`]'s part common to every write.
    fn writes_wait(&self) -> bool {
        self.write_wait_ns > 0 && !self.dispatched.is_empty()
    }

    /// The best window containing `[s, e)` whose combined write the cost model prefers.
    /// `earlier` holds the erase-block spans of the seeds the same plan tried before (first
    /// block → the smallest last block of a seed starting there), for which no window was
    /// worth it: a window's worth does not depend on the seed, so a window that contains one
    /// of them was found wanting already and is skipped.
    fn best_window(
        &self,
        pool: &RqPool,
        s: u64,
        e: u64,
        earlier: &BTreeMap<u64, u64>,
    ) -> Option<Window> {
        let eb = self.eb_sectors;
        let (b0, b1) = (s / eb, (e - 1) / eb);
        let maxn = 1 + self.neighbour_blocks;
        if b1 - b0 + 1 > maxn {
            return None;
        }
        // Every window lies in `[lo, hi)`: its held writes (start, end, segments), in start
        // order, read once for the up to (1 + neighbour_blocks)^2 windows.
        let (lo, hi) = ((b1 + 1).saturating_sub(maxn) * eb, (b0 + maxn) * eb);
        let cand: Vec<(u64, u64, u64)> = self
            .held
            .range((lo, 0)..(hi, 0))
            .map(|(_, &rq)| {
                let r = pool.get(rq);
                (r.sector, r.end_sector(), r.nr_segments as u64)
            })
            .collect();
        // Per first block: the smallest last block from which a window starting there
        // contains an earlier seed (one starting at or after it, within a window's reach: a
        // minimum over the seeds from the right).
        let fmin = (b1 + 1).saturating_sub(maxn);
        let mut seen = vec![u64::MAX; (b0 - fmin + 1) as usize];
        let mut from_right = u64::MAX;
        for (&k0, &k1) in earlier.range(fmin..b0 + maxn).rev() {
            from_right = from_right.min(k1);
            let i = (k0.min(b0) - fmin) as usize;
            seen[i] = seen[i].min(from_right);
        }
        for i in (0..seen.len().saturating_sub(1)).rev() {
            seen[i] = seen[i].min(seen[i + 1]);
        }
        let mut best: Option<(Ns, u64, u64)> = None;
        for n in (b1 - b0 + 1)..=maxn {
            for first in (b1 + 1).saturating_sub(n)..=b0 {
                let ws = first * eb;
                let we = ((first + n) * eb).min(self.capacity);
                if we < e || first + n > seen[(first - fmin) as usize] {
                    continue;
                }
                if let Some(saving) = self.window_saving(&cand, ws, we) {
                    if best.is_none_or(|b| saving > b.0) {
                        best = Some((saving, ws, we));
                    }
                }
            }
        }
        let (_, ws, we) = best?;
        Some(self.window(pool, ws, we))
    }

    /// Window `[ws, we)`: the held writes inside it, and the holes they leave.
    fn window(&self, pool: &RqPool, ws: u64, we: u64) -> Window {
        let members: Vec<RqId> = self
            .held
            .range((ws, 0)..(we, 0))
            .map(|(_, &rq)| rq)
            .filter(|&rq| pool.get(rq).end_sector() <= we)
            .collect();
        let cov = runs(
            members
                .iter()
                .map(|&m| (pool.get(m).sector, pool.get(m).end_sector()))
                .collect(),
        );
        Window {
            start: ws,
            end: we,
            members,
            holes: subtract(ws, we, &cov),
        }
    }

    /// What combining window `[ws, we)` saves over writing its held writes separately, if it
    /// can be combined and saves anything. `cand` holds the held writes (start, end,
    /// segments) of a span around it, in start order; the window's members are those that
    /// lie inside it.
    fn window_saving(&self, cand: &[(u64, u64, u64)], ws: u64, we: u64) -> Option<Ns> {
        let eb = self.eb_sectors;
        if we - ws > self.max_sectors
            || self.inflight_overlap(ws, we)
            || self.active_overlap(ws, we).is_some()
        {
            return None;
        }
        let i0 = cand.partition_point(|c| c.0 < ws);
        let i1 = cand.partition_point(|c| c.0 < we);
        // Runs of the members' union (`runs`) and the holes between them (`subtract`), in
        // one pass over the members by start.
        let (mut segs, mut pieces, mut holes_cost, mut gap_ok) = (0u64, 0u64, 0 as Ns, true);
        let mut hole = |h: u64, segs: &mut u64| {
            gap_ok &= h <= self.max_gap_sectors;
            *segs += h.div_ceil(8);
            holes_cost += self.read_cost(h);
        };
        let mut pos = ws;
        let mut run: Option<(u64, u64)> = None;
        for &(a, b, sg) in &cand[i0..i1] {
            if b > we {
                continue;
            }
            segs += sg;
            match run {
                Some((ra, rb)) if a <= rb => run = Some((ra, rb.max(b))),
                _ => {
                    if let Some((ra, rb)) = run {
                        pieces += (rb - 1) / eb - ra / eb + 1;
                        pos = rb;
                    }
                    if a > pos {
                        hole(a - pos, &mut segs);
                    }
                    run = Some((a, b));
                }
            }
        }
        if let Some((ra, rb)) = run {
            pieces += (rb - 1) / eb - ra / eb + 1;
            pos = rb;
        }
        if we > pos {
            hole(we - pos, &mut segs);
        }
        if !gap_ok || segs > self.max_segments as u64 {
            return None;
        }
        // Separately, every (run, erase block) pair is one ~250 ms write (§4).
        let separate = pieces * self.write_cost_ns;
        let blocks = (we - 1) / eb - ws / eb + 1;
        let combined: Ns = holes_cost + blocks * self.block_write_ns;
        (combined < separate).then(|| separate - combined)
    }

    /// Held writes not locked out by an active group, oldest first.
    #[cfg(test)]
    fn eligible<'a>(&'a self, pool: &'a RqPool) -> impl Iterator<Item = RqId> + 'a {
        self.eligible_since(pool).map(|(rq, _)| rq)
    }

    /// [`Self::eligible`] with when each was held.
    fn eligible_since<'a>(&'a self, pool: &'a RqPool) -> impl Iterator<Item = (RqId, Ns)> + 'a {
        self.held_fifo
            .values()
            .copied()
            .filter(move |&(rq, _)| self.is_eligible(pool, rq))
    }

    /// Whether any window fits in one request: the smallest is one erase block (or the
    /// partial block at the end of the device), and a combined write is one request of at
    /// most `max_sectors` (`best_window`).
    fn windows_fit(&self) -> bool {
        let tail = self.capacity % self.eb_sectors;
        self.eb_sectors <= self.max_sectors || (tail > 0 && tail <= self.max_sectors)
    }

    /// A group the cost model wants, seeded by the oldest held write that has one: the
    /// oldest held write in each erase block, among those no active group locks out, is a
    /// seed, and the first whose best window saves anything gives the group. Only the held
    /// writes in [`Self::unknown`] are looked at; each found to seed nothing leaves it.
    fn plan_form(&mut self, pool: &RqPool) -> Option<Window> {
        let w = self.plan_form_known(pool);
        #[cfg(debug_assertions)]
        debug_assert_eq!(
            w,
            self.plan_form_scan(pool),
            "eraseblock: the plan from what changed differs from a full scan"
        );
        w
    }

    fn plan_form_known(&mut self, pool: &RqPool) -> Option<Window> {
        let mut gone = Vec::new();
        let w = self.plan_over(pool, self.unknown.iter().copied(), |seq| gone.push(seq));
        for seq in gone {
            self.unknown.remove(&seq);
        }
        w
    }

    /// [`Self::plan_form`] over every held write (debug builds check the two agree).
    #[cfg(any(debug_assertions, test))]
    fn plan_form_scan(&self, pool: &RqPool) -> Option<Window> {
        self.plan_over(pool, self.held_fifo.keys().copied(), |_| {})
    }

    /// The first of the held writes `seqs` (arrival numbers, oldest first) that seeds a group,
    /// with its best window; `seeds_nothing` hears each one looked at that does not (locked
    /// out, not the oldest eligible write of its erase block, or no window worth it).
    fn plan_over(
        &self,
        pool: &RqPool,
        seqs: impl Iterator<Item = u64>,
        mut seeds_nothing: impl FnMut(u64),
    ) -> Option<Window> {
        if !self.windows_fit() {
            // No group can form: skip trying every held write's block.
            return None;
        }
        let eb = self.eb_sectors;
        let mut earlier: BTreeMap<u64, u64> = BTreeMap::new();
        // Per erase block looked at: its oldest eligible held write, the only seed there
        // (found once per plan: a block's writes come back to `unknown` together).
        let mut seed_of: BTreeMap<u64, Option<u64>> = BTreeMap::new();
        for seq in seqs {
            let (rq, _) = self.held_fifo[&seq];
            let r = pool.get(rq);
            let (s, e) = (r.sector, r.end_sector());
            let k0 = s / eb;
            let seed = *seed_of.entry(k0).or_insert_with(|| {
                self.held
                    .range((k0 * eb, 0)..((k0 + 1) * eb, 0))
                    .filter(|&(_, &o)| self.is_eligible(pool, o))
                    .map(|(&(_, q), _)| q)
                    .min()
            });
            if seed != Some(seq) {
                seeds_nothing(seq);
                continue;
            }
            if let Some(w) = self.best_window(pool, s, e, &earlier) {
                return Some(w);
            }
            seeds_nothing(seq);
            let k1 = (e - 1) / eb;
            let k = earlier.entry(k0).or_insert(k1);
            *k = (*k).min(k1);
        }
        None
    }

    /// The held write to give up on grouping and pass to mq-deadline: the oldest that waited
    /// `write_wait_ms` or has nothing to wait for; with `starved`, only one older than
    /// mq-deadline's `write_expire` (so reads cannot starve held writes for ever).
    ///
    /// Only two writes can be that one: the first, in arrival order, of those that waited
    /// long enough, and the first that continues the last write (`worth_waiting`, found by
    /// its sector).
    fn plan_release(&self, pool: &RqPool, now: Ns, starved: bool) -> Option<RqId> {
        let got = if starved {
            self.first_waited(pool, now, self.write_expire_ns)
                .map(|(_, rq)| rq)
        } else if !self.writes_wait() {
            // Nothing is worth waiting for: the oldest goes.
            self.eligible_since(pool).next().map(|(rq, _)| rq)
        } else {
            let waited = self.first_waited(pool, now, self.write_wait_ns);
            let continues = self
                .held
                .range((self.last_write_end, 0)..=(self.last_write_end, u64::MAX))
                .map(|(&(_, seq), &rq)| (seq, rq))
                .find(|&(_, rq)| self.is_eligible(pool, rq));
            waited.into_iter().chain(continues).min().map(|(_, rq)| rq)
        };
        #[cfg(debug_assertions)]
        debug_assert_eq!(got, self.plan_release_scan(pool, now, starved));
        got
    }

    /// The first held write, in arrival order, that no group locks out and that was held at
    /// least `limit` ns before `now`, with its arrival number. A write is held at its
    /// context's clock, which the CPU model keeps per CPU, so arrival order is time order
    /// only nearly: the oldest eligible write by time says whether there is one at all, and
    /// the walk in arrival order then stops at the first (in practice the first it meets).
    fn first_waited(&self, pool: &RqPool, now: Ns, limit: Ns) -> Option<(u64, RqId)> {
        let t = now.checked_sub(limit)?;
        let (oldest, _) = self
            .held_by_time
            .iter()
            .copied()
            .find(|&(_, seq)| self.is_eligible(pool, self.held_fifo[&seq].0))?;
        if oldest > t {
            return None;
        }
        self.held_fifo
            .iter()
            .find(|(_, &(rq, since))| since <= t && self.is_eligible(pool, rq))
            .map(|(&seq, &(rq, _))| (seq, rq))
    }

    /// [`Self::plan_release`] by scanning every held write.
    #[cfg(debug_assertions)]
    fn plan_release_scan(&self, pool: &RqPool, now: Ns, starved: bool) -> Option<RqId> {
        self.eligible_since(pool)
            .find(|&(rq, since)| {
                if starved {
                    return now >= since + self.write_expire_ns;
                }
                now >= since + self.write_wait_ns || !self.worth_waiting(pool.get(rq).sector)
            })
            .map(|(rq, _)| rq)
    }

    /// Whether a dispatch now would form a group or release a held write.
    fn plan(&mut self, pool: &RqPool, now: Ns) -> bool {
        self.plan_form(pool).is_some() || self.plan_release(pool, now, false).is_some()
    }

    /// Start a group: members leave the held set, gap reads go to the ready list.
    fn form(&mut self, pool: &mut RqPool, w: Window, now: Ns) {
        let mut members = w.members;
        members.sort_by_key(|m| self.held_meta[m]);
        for &m in &members {
            self.unhold(pool, m);
        }
        let (hctx, cpu, task) = {
            let r = pool.get(members[0]);
            (r.hctx, r.cpu, r.task)
        };
        for &(a, b) in &w.holes {
            let bio = Bio {
                token: INTERNAL_TOKEN | w.start,
                op: Op::Read,
                flags: flags::REQ_SYNC,
                sector: a,
                nr_sectors: (b - a) as u32,
                nr_segments: (b - a).div_ceil(8).min(self.max_segments as u64) as u16,
                task,
                cpu,
                ioprio: IoPrio::default(),
                version: 0,
                queue_time: now,
                next: NO_BIO,
            };
            let id = pool.alloc_bio(bio);
            let rq = pool.alloc_rq_from_bio(id, hctx, now);
            self.internal.insert(rq, w.start);
            self.ready.push_back(rq);
            self.st_gap_reads += 1;
            self.st_gap_sectors += b - a;
        }
        self.st_groups += 1;
        self.groups.insert(
            w.start,
            Group {
                start: w.start,
                end: w.end,
                members,
                pending_reads: w.holes.len() as u32,
                gap: Vec::new(),
                state: if w.holes.is_empty() {
                    GroupState::Ready
                } else {
                    GroupState::Reading
                },
            },
        );
        self.touch(w.start, w.end);
    }

    /// Build the combined write of a group whose gap data is complete: the first member
    /// becomes the request; gap bios (versions the reads returned, minus sectors any member
    /// covers, so newer user data always wins) and the other members' bios join it.
    fn build(&mut self, pool: &mut RqPool, key: u64, now: Ns) {
        let g = self.groups.get_mut(&key).unwrap();
        let cov = runs(
            g.members
                .iter()
                .map(|&m| (pool.get(m).sector, pool.get(m).end_sector()))
                .collect(),
        );
        let c = g.members[0];
        let (cpu, task) = (pool.get(c).cpu, pool.get(c).task);
        let mut segs: u64 = 0;
        for &(a, b, v) in &g.gap {
            for (x, y) in subtract(a, b, &cov) {
                let n = (y - x).div_ceil(8);
                segs += n;
                let bio = Bio {
                    token: INTERNAL_TOKEN | key,
                    op: Op::Write,
                    flags: 0,
                    sector: x,
                    nr_sectors: (y - x) as u32,
                    nr_segments: n.min(u16::MAX as u64) as u16,
                    task,
                    cpu,
                    ioprio: IoPrio::default(),
                    version: v,
                    queue_time: now,
                    next: NO_BIO,
                };
                let id = pool.alloc_bio(bio);
                pool.back_merge_bio(c, id);
            }
        }
        segs += pool.get(c).nr_segments as u64;
        for i in 1..g.members.len() {
            let m = g.members[i];
            segs += pool.get(m).nr_segments as u64;
            pool.merge_requests(c, m);
            self.released.push(m);
        }
        let r = pool.get_mut(c);
        r.sector = g.start;
        r.nr_sectors = (g.end - g.start) as u32;
        r.nr_segments = segs.min(self.max_segments as u64) as u16;
        self.st_absorbed += g.members.len() as u64;
        self.st_combined += 1;
        g.state = GroupState::Writing;
        self.internal.insert(c, key);
        self.ready.push_back(c);
    }

    fn on_dispatch(&mut self, pool: &RqPool, rq: RqId) {
        let r = pool.get(rq);
        self.dispatched.insert(rq);
        if is_data_write(r) {
            self.inflight.insert((r.sector, rq), r.end_sector());
            self.inflight_max_len = self.inflight_max_len.max(r.nr_sectors as u64);
            self.last_write_end = r.end_sector();
            self.touch(r.sector, r.end_sector());
        }
    }

    /// Recompute what `has_work` and `next_timer` answer.
    fn refresh(&mut self, pool: &RqPool, now: Ns) {
        self.plan_ready = self.plan(pool, now);
        // The first eligible write, in time order, whose wait runs out after `now`.
        self.next_timer_at = self
            .held_by_time
            .range(((now + 1).saturating_sub(self.write_wait_ns), 0)..)
            .map(|&(since, seq)| (since, self.held_fifo[&seq].0))
            .find(|&(_, rq)| self.is_eligible(pool, rq))
            .map(|(since, _)| since + self.write_wait_ns);
        #[cfg(debug_assertions)]
        debug_assert_eq!(
            self.next_timer_at,
            self.eligible_since(pool)
                .map(|(_, since)| since + self.write_wait_ns)
                .filter(|&t| t > now)
                .min()
        );
    }
}

impl Elevator for EraseBlock {
    fn name(&self) -> &'static str {
        "eraseblock"
    }

    /// One queue for the device, as mq-deadline's (`QUEUE_FLAG_SQ_SCHED`).
    fn sq_sched(&self) -> bool {
        true
    }

    /// mq-deadline's footprint: reads and ungroupable writes go through the mq-deadline it
    /// wraps, under one lock per list and per dispatch; the grouping of writes by erase block
    /// is a lookup in the same lists (blksim model, no measurement of its own).
    fn cpu_footprint(&self) -> blksim_block::CpuFootprint {
        blksim_block::CpuFootprint {
            cost_pct: 100,
            cold_lines: [2, 3, 3, 0],
            lock_per_insert: false,
            locked_finish: false,
        }
    }

    fn insert_requests(&mut self, pool: &mut RqPool, rqs: &[RqId], at_head: bool, now: Ns) {
        for &rq in rqs {
            let r = pool.get(rq);
            if at_head || !groupable(r) {
                self.dd.insert_requests(pool, &[rq], at_head, now);
                continue;
            }
            let (s, e) = (r.sector, r.end_sector());
            if !self.break_newer_writes {
                if let Some(k) = self.active_overlap(s, e) {
                    let g = self.groups.get_mut(&k).unwrap();
                    if g.state != GroupState::Writing && s >= g.start && e <= g.end {
                        // Newer than the gap data being read: it joins the combined write
                        // and overrides the gap there.
                        g.members.push(rq);
                        self.st_folded += 1;
                        continue;
                    }
                    // Overlaps a locked window it cannot join: held until the window unlocks.
                    self.st_blocked += 1;
                }
            }
            self.hold(pool, rq, now);
        }
        self.refresh(pool, now);
    }

    fn dispatch_request(&mut self, pool: &mut RqPool, now: Ns) -> Option<RqId> {
        let out = loop {
            if let Some(rq) = self.ready.pop_front() {
                if !self.internal.contains_key(&rq) && self.must_block(pool, rq) {
                    self.blocked.push(rq);
                    self.st_blocked += 1;
                    continue;
                }
                break Some(rq);
            }
            if let Some(key) = self
                .groups
                .iter()
                .find(|(_, g)| g.state == GroupState::Ready)
                .map(|(&k, _)| k)
            {
                self.build(pool, key, now);
                continue;
            }
            if let Some(w) = self.plan_form(pool) {
                self.form(pool, w, now);
                continue;
            }
            // mq-deadline first (reads, writes already released); a held write is released
            // one at a time, only when mq-deadline has nothing (or it has starved), so the
            // others keep their chance to be grouped.
            let release = match self.plan_release(pool, now, true) {
                Some(rq) => Some(rq),
                None if !self.dd.has_work() => self.plan_release(pool, now, false),
                None => None,
            };
            if let Some(rq) = release {
                self.unhold(pool, rq);
                self.st_released += 1;
                self.dd.insert_requests(pool, &[rq], false, now);
            }
            match self.dd.dispatch_request(pool, now) {
                Some(rq) if self.must_block(pool, rq) => {
                    self.blocked.push(rq);
                    self.st_blocked += 1;
                }
                other => break other,
            }
        };
        if let Some(rq) = out {
            self.on_dispatch(pool, rq);
        }
        self.refresh(pool, now);
        out
    }

    fn has_work(&self) -> bool {
        !self.ready.is_empty()
            || self.plan_ready
            || self.groups.values().any(|g| g.state == GroupState::Ready)
            || self.dd.has_work()
    }

    fn find_merge(&mut self, pool: &RqPool, bio: &BioInfo) -> Option<(RqId, ElvMerge)> {
        self.dd.find_merge(pool, bio)
    }
    fn request_merged(&mut self, pool: &mut RqPool, rq: RqId, kind: ElvMerge) {
        self.dd.request_merged(pool, rq, kind)
    }
    fn next_request(&self, pool: &RqPool, rq: RqId) -> Option<RqId> {
        self.dd.next_request(pool, rq)
    }
    fn former_request(&self, pool: &RqPool, rq: RqId) -> Option<RqId> {
        self.dd.former_request(pool, rq)
    }
    fn requests_merged(&mut self, pool: &mut RqPool, rq: RqId, next: RqId) {
        self.dd.requests_merged(pool, rq, next)
    }
    fn try_insert_merge(&mut self, pool: &mut RqPool, rq: RqId) -> Option<RqId> {
        self.dd.try_insert_merge(pool, rq)
    }

    fn completed_request_data(&mut self, pool: &RqPool, rq: RqId, data: &Integrity, _now: Ns) {
        let Some(&key) = self.internal.get(&rq) else {
            return;
        };
        let r = pool.get(rq);
        if r.op != Op::Read {
            return;
        }
        self.internal.remove(&rq);
        let g = self.groups.get_mut(&key).expect("gap read of a live group");
        g.gap.extend(data.device_versions(r.sector, r.end_sector()));
        g.pending_reads -= 1;
        if g.pending_reads == 0 {
            g.state = GroupState::Ready;
        }
    }

    fn completed_request(&mut self, pool: &RqPool, rq: RqId, now: Ns) {
        let r = pool.get(rq);
        self.dispatched.remove(&rq);
        if self.inflight.remove(&(r.sector, rq)).is_some() {
            self.touch(r.sector, r.end_sector());
        }
        if let Some(key) = self.internal.remove(&rq) {
            // The combined write is done: the window unlocks; held-back writes go next, in
            // the order they were held back.
            if let Some(g) = self.groups.remove(&key) {
                self.touch(g.start, g.end);
            }
            let blocked = std::mem::take(&mut self.blocked);
            let mut still = Vec::new();
            let mut freed = Vec::new();
            for b in blocked {
                if self.must_block(pool, b) {
                    still.push(b);
                } else {
                    freed.push(b);
                }
            }
            for b in freed.into_iter().rev() {
                self.ready.push_front(b);
            }
            self.blocked = still;
        }
        self.refresh(pool, now);
    }

    fn finish_request(&mut self, pool: &RqPool, rq: RqId, now: Ns) {
        self.dd.finish_request(pool, rq, now)
    }

    fn take_released(&mut self, out: &mut Vec<RqId>) {
        out.append(&mut self.released);
    }

    fn set_capacity(&mut self, sectors: u64) {
        if sectors > 0 {
            self.capacity = sectors;
            self.touch_all();
        }
    }

    fn limit_depth(&self, op: Op, sync: bool) -> Option<u32> {
        self.dd.limit_depth(op, sync)
    }

    fn depth_updated(&mut self, nr_requests: u32) {
        self.dd.depth_updated(nr_requests)
    }

    fn min_shallow_depth(&self) -> Option<u32> {
        self.dd.min_shallow_depth()
    }

    fn next_timer(&self) -> Option<Ns> {
        self.next_timer_at
    }

    fn timer(&mut self, pool: &mut RqPool, now: Ns) -> bool {
        self.refresh(pool, now);
        self.has_work()
    }

    fn wants_run_on_completion(&self) -> bool {
        true
    }

    fn tunables(&self) -> Vec<Tunable> {
        let mut v = tunables_of(EB_TUNABLES, |name| match name {
            "erase_block_kb" => (self.eb_sectors / 2).to_string(),
            "max_gap_kb" => (self.max_gap_sectors / 2).to_string(),
            "neighbour_blocks" => self.neighbour_blocks.to_string(),
            "write_wait_ms" => (self.write_wait_ns / NSEC_PER_MSEC).to_string(),
            "write_cost_ms" => (self.write_cost_ns / NSEC_PER_MSEC).to_string(),
            "block_write_ms" => (self.block_write_ns / NSEC_PER_MSEC).to_string(),
            "read_base_us" => (self.read_base_ns / 1000).to_string(),
            "read_kib_s" => self.read_kib_s.to_string(),
            _ => (self.break_newer_writes as u32).to_string(),
        });
        v.extend(self.dd.tunables());
        v
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        if !EB_TUNABLES.iter().any(|d| d.key == name) {
            return self
                .dd
                .set_tunable(name, value)
                .map_err(|e| e.replace("'mq-deadline'", "'eraseblock'"));
        }
        let v = parse_tunable(EB_TUNABLES, "eraseblock", name, value)?;
        match name {
            "erase_block_kb" => {
                let gap_was_block = self.max_gap_sectors == self.eb_sectors;
                self.eb_sectors = v * 2;
                if gap_was_block {
                    self.max_gap_sectors = self.eb_sectors;
                }
            }
            "max_gap_kb" => self.max_gap_sectors = v * 2,
            "neighbour_blocks" => self.neighbour_blocks = v,
            "write_wait_ms" => self.write_wait_ns = v * NSEC_PER_MSEC,
            "write_cost_ms" => self.write_cost_ns = v * NSEC_PER_MSEC,
            "block_write_ms" => self.block_write_ns = v * NSEC_PER_MSEC,
            "read_base_us" => self.read_base_ns = v * 1000,
            "read_kib_s" => self.read_kib_s = v,
            _ => self.break_newer_writes = v != 0,
        }
        self.update_window();
        self.touch_all();
        Ok(())
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("eb_groups", self.st_groups),
            ("eb_gap_reads", self.st_gap_reads),
            ("eb_gap_read_sectors", self.st_gap_sectors),
            ("eb_combined_writes", self.st_combined),
            ("eb_absorbed_writes", self.st_absorbed),
            ("eb_folded_writes", self.st_folded),
            ("eb_blocked_writes", self.st_blocked),
            ("eb_released_writes", self.st_released),
        ];
        v.extend(self.dd.stats());
        v
    }
}

#[cfg(test)]
#[path = "tests_eraseblock.rs"]
mod tests;
