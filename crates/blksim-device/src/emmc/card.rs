//! The eMMC card timing model.
//!
//! A [`Card`] knows nothing about block requests: it receives commands ({op, sector, count,
//! reliable}) at virtual times and answers when the data phase can start, when it ends and when
//! the card releases busy. Two levels of API:
//!
//! * [`Card::access`] + [`Card::transfer`]: the card-internal preparation of a data command
//!   (NAND sensing for reads, room in the cache for writes) and then the data phase at a time the
//!   host chooses (≥ ready; later if the bus is taken). The CQE path uses these to let the card
//!   prepare one task while another transfers.
//! * [`Card::submit`]: the whole non-queued sequence (CMD23 + CMD18/CMD25, or CMD17/CMD24, or
//!   CMD18/CMD25 + CMD12 without CMD23; CMD6 for flush; CMD35/36/38 for discard).
//!
//! Inside, one NAND "engine" timeline is shared by foreground work (reads, write-through
//! programs, flush) and the write-back of the volatile cache. Write-back drains a FIFO of dirty
//! chunks whenever the engine is not doing foreground work; a foreground operation arriving while
//! write-back runs waits for the program in progress (at most t_PROG; program suspend is not
//! modelled). Reads of data still dirty in the cache are served from NAND timing like any other
//! read (a simplification: fio's benchmarks rarely read what they just wrote).

use super::bus::{BusTiming, R1_BITS};
use super::content::{Content, Extents};
use super::ftl::{Ftl, Nand};
use blksim_core::hash::FxHashMap;
use blksim_core::Ns;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardOp {
    Read,
    Write,
    /// CMD6 SWITCH FLUSH_CACHE.
    Flush,
    /// CMD35/CMD36/CMD38 (trim/discard).
    Discard,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CardCmd {
    pub op: CardOp,
    pub sector: u64,
    pub nr_sectors: u32,
    /// Reliable write (CMD23 bit 31; Linux sets it for REQ_FUA): bypasses the cache.
    pub reliable: bool,
    /// The host's tag for the command (the blk-mq driver tag): names the data the driver
    /// staged for a write when the card keeps content ([`Card::stage_data`]).
    pub tag: u32,
}

impl CardCmd {
    pub fn bytes(&self) -> u64 {
        self.nr_sectors as u64 * 512
    }
}

/// How the host frames a data command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// CMD23 SET_BLOCK_COUNT before CMD18/CMD25 for multi-block; CMD17/CMD24 for one block.
    Cmd23,
    /// Open-ended CMD18/CMD25 stopped by CMD12 (R1b for writes).
    OpenEnded,
}

/// Result of the card-internal preparation of a data command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// The data phase may start from here.
    pub ready: Ns,
    /// Reads: the last NAND round is sensed by this time.
    pub nand_end: Ns,
    /// Reads: blocks of the last NAND page (they cross the bus after `nand_end`).
    pub tail_blocks: u64,
    /// Writes: firmware time added to the busy after the last block (L2P map segment
    /// loads, `card.map_miss_ns`); 0 for reads (their misses delay `ready`).
    pub busy_extra: Ns,
}

/// Times of one command sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CardTiming {
    pub cmd_start: Ns,
    /// End of the command phase (CMD23 + CMD18/25 and responses).
    pub cmd_end: Ns,
    pub data_start: Ns,
    /// Last block (and for writes its CRC status) on the bus; CMD12 included if used.
    pub data_end: Ns,
    /// DAT0 busy released (card back in TRAN state). Equals `data_end` for reads.
    pub busy_end: Ns,
}

/// A card as seen by the host.
pub trait Card {
    fn name(&self) -> &str;
    fn bus(&self) -> &BusTiming;
    fn access(&mut self, at: Ns, cmd: &CardCmd) -> Access;
    /// Data phase from `data_start` (≥ `acc.ready`): returns (data_end, busy_end).
    fn transfer(&mut self, data_start: Ns, cmd: &CardCmd, acc: &Access) -> (Ns, Ns);
    /// A non-data command with busy (flush, discard) received at `at`: busy end.
    fn busy_command(&mut self, at: Ns, cmd: &CardCmd) -> Ns;
    /// Counters for the driver's statistics.
    fn stats(&self) -> Vec<(String, u64)>;
    /// User-area capacity in bytes (EXT_CSD SEC_COUNT × 512), for `set_capacity`.
    fn capacity_bytes(&self) -> u64;
    /// Volatile cache size in bytes (EXT_CSD CACHE_SIZE; 0 = no cache). The MMC driver turns
    /// the cache on and declares a write cache when it is non-zero (`mmc_blk_alloc_req` →
    /// `blk_queue_write_cache(q, cache_size > 0, ...)`).
    fn cache_bytes(&self) -> u64;

    /// Whether the card keeps content (data versions) for power cuts.
    fn tracks_content(&self) -> bool {
        false
    }
    /// The data (per-sector versions) of accepted write `tag`, taken when it crosses the bus.
    fn stage_data(&mut self, _tag: u32, _data: Extents) {}
    /// Write `tag` ended without its data reaching the card.
    fn unstage_data(&mut self, _tag: u32) {}
    /// Power lost at `at`: the volatile cache is lost, programs in progress are torn. Returns
    /// the content now on NAND of every sector that lost or tore data (empty without content).
    fn power_cut(&mut self, _at: Ns) -> Extents {
        Vec::new()
    }

    /// A full non-queued command sequence starting on the bus at `now`.
    fn submit(&mut self, now: Ns, cmd: &CardCmd, proto: Proto) -> CardTiming {
        let r1 = self.bus().cmd_ns(R1_BITS);
        match cmd.op {
            CardOp::Read | CardOp::Write => {
                let multi = cmd.nr_sectors > 1;
                let ncmds = if multi && proto == Proto::Cmd23 { 2 } else { 1 };
                let cmd_end = now + ncmds * r1;
                let acc = self.access(cmd_end, cmd);
                let data_start = acc.ready.max(cmd_end);
                let (mut data_end, mut busy_end) = self.transfer(data_start, cmd, &acc);
                if multi && proto == Proto::OpenEnded {
                    data_end += r1; // CMD12 STOP_TRANSMISSION
                    busy_end = busy_end.max(data_end);
                }
                CardTiming {
                    cmd_start: now,
                    cmd_end,
                    data_start,
                    data_end,
                    busy_end,
                }
            }
            CardOp::Flush | CardOp::Discard => {
                let ncmds = if cmd.op == CardOp::Flush { 1 } else { 3 };
                let cmd_end = now + ncmds * r1;
                let busy_end = self.busy_command(cmd_end, cmd);
                CardTiming {
                    cmd_start: now,
                    cmd_end,
                    data_start: cmd_end,
                    data_end: cmd_end,
                    busy_end,
                }
            }
        }
    }
}

/// A dirty chunk waiting for write-back: `rem` of its `total` program time is left. `data`
/// holds its versions when the card keeps content.
#[derive(Clone, Debug)]
struct Chunk {
    bytes: u64,
    rem: Ns,
    total: Ns,
    data: Extents,
}

/// The NAND engine timeline with the write-back FIFO.
#[derive(Debug, Default)]
struct Engine {
    /// Time up to which the engine's work has been accounted (foreground ops push it ahead).
    t: Ns,
    fifo: VecDeque<Chunk>,
    /// What the card holds (power cuts only).
    content: Option<Content>,
}

impl Engine {
    fn advance(&mut self, to: Ns) {
        // Write-back runs only past the engine's own clock; a write-through program that
        // ended by `to` is on NAND even when the engine is held past `to` (a program,
        // background operations), so a write arriving now does not supersede its data as if
        // it were still waiting.
        let mut avail = to.saturating_sub(self.t);
        while avail > 0 {
            let Some(c) = self.fifo.front_mut() else {
                break;
            };
            let d = c.rem.min(avail);
            c.rem -= d;
            avail -= d;
            if c.rem == 0 {
                let c = self.fifo.pop_front().unwrap();
                if let Some(ct) = self.content.as_mut() {
                    ct.to_media(&c.data);
                }
            }
        }
        self.t = self.t.max(to);
        if let Some(ct) = self.content.as_mut() {
            ct.advance(to);
        }
    }
    /// `n` intervals of `iv` from `start` (the engine standing at `start`), each a background
    /// operation of `iv - per` followed by `per` of write-back: the same state as advancing
    /// to each interval's start in turn (a chunk written back in interval `q` reaches the
    /// media after the programs that ended by that interval's start), in O(chunks).
    fn write_back_intervals(&mut self, start: Ns, iv: Ns, per: Ns, n: u64) {
        let total = n * per;
        let mut done = 0;
        while done < total {
            let Some(c) = self.fifo.front_mut() else {
                break;
            };
            let d = c.rem.min(total - done);
            c.rem -= d;
            done += d;
            if c.rem == 0 {
                let c = self.fifo.pop_front().unwrap();
                if let Some(ct) = self.content.as_mut() {
                    ct.advance(start + (done - 1) / per * iv);
                    ct.to_media(&c.data);
                }
            }
        }
        self.t = start + n * iv;
        if let Some(ct) = self.content.as_mut() {
            ct.advance(self.t);
        }
    }
    fn chunk_dirty(c: &Chunk) -> u64 {
        if c.total == 0 {
            return 0;
        }
        (c.bytes as u128 * c.rem as u128).div_ceil(c.total as u128) as u64
    }
    fn dirty(&self) -> u64 {
        self.fifo.iter().map(Self::chunk_dirty).sum()
    }
    fn backlog(&self) -> Ns {
        self.fifo.iter().map(|c| c.rem).sum()
    }
    /// Write-back time (from `self.t`) until `need` dirty bytes are gone.
    fn time_until_freed(&self, need: u64) -> Ns {
        let mut freed = 0u64;
        let mut acc = 0;
        for c in &self.fifo {
            let d = Self::chunk_dirty(c);
            if freed + d >= need {
                let want = need - freed;
                // Dirty bytes of this chunk fall linearly with its remaining time.
                let t = (want as u128 * c.total as u128).div_ceil(c.bytes.max(1) as u128) as Ns;
                return acc + t.min(c.rem);
            }
            freed += d;
            acc += c.rem;
        }
        acc
    }
    /// A foreground operation of `dur` wanting the engine at `at`; it waits for whatever
    /// foreground work holds the engine and for the program in progress (≤ `preempt`).
    fn occupy(&mut self, at: Ns, dur: Ns, preempt: Ns) -> (Ns, Ns) {
        self.advance(at);
        let mut start = at.max(self.t);
        if !self.fifo.is_empty() {
            let w = self.backlog().min(preempt);
            self.advance(start + w);
            start += w;
        }
        self.t = start + dur;
        (start, start + dur)
    }
    fn push(&mut self, at: Ns, bytes: u64, cost: Ns, data: Extents) {
        self.advance(at);
        if cost > 0 {
            self.fifo.push_back(Chunk {
                bytes,
                rem: cost,
                total: cost,
                data,
            });
        } else if let Some(ct) = self.content.as_mut() {
            ct.to_media(&data);
        }
    }
    fn drain_all(&mut self, at: Ns) -> Ns {
        self.advance(at);
        let end = at.max(self.t) + self.backlog();
        for c in std::mem::take(&mut self.fifo) {
            if let Some(ct) = self.content.as_mut() {
                ct.to_media(&c.data);
            }
        }
        self.t = end;
        end
    }
    /// The waiting write-back chunks' data, for superseding and trimming.
    fn waiting_data(&mut self) -> Vec<&mut Extents> {
        self.fifo.iter_mut().map(|c| &mut c.data).collect()
    }
}

/// The L2P map segments resident in controller SRAM, in least-recently-used order: a hash
/// map from segment to a node of a doubly linked list kept in a vector (oldest at the head),
/// so a lookup, a refresh and an eviction are each O(1) (two B-trees before: 4 % of the eMMC
/// bench's time).
#[derive(Debug)]
struct MapLru {
    slot: FxHashMap<u64, u32>,
    /// `(segment, prev, next)`; `NIL` ends the list.
    nodes: Vec<(u64, u32, u32)>,
    head: u32,
    tail: u32,
}

const NIL: u32 = u32::MAX;

impl Default for MapLru {
    fn default() -> Self {
        MapLru {
            slot: FxHashMap::default(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }
}

impl MapLru {
    fn unlink(&mut self, i: u32) {
        let (_, p, n) = self.nodes[i as usize];
        match p {
            NIL => self.head = n,
            p => self.nodes[p as usize].2 = n,
        }
        match n {
            NIL => self.tail = p,
            n => self.nodes[n as usize].1 = p,
        }
    }

    fn push_back(&mut self, i: u32) {
        self.nodes[i as usize].1 = self.tail;
        self.nodes[i as usize].2 = NIL;
        match self.tail {
            NIL => self.head = i,
            t => self.nodes[t as usize].2 = i,
        }
        self.tail = i;
    }

    /// A command touches `seg`: true if it was resident; otherwise it is loaded, evicting
    /// the least recently used segment when `cap` are held.
    fn touch(&mut self, seg: u64, cap: usize) -> bool {
        if let Some(&i) = self.slot.get(&seg) {
            if self.tail != i {
                self.unlink(i);
                self.push_back(i);
            }
            return true;
        }
        let i = if self.slot.len() >= cap && self.head != NIL {
            // Reuse the oldest segment's node.
            let i = self.head;
            self.unlink(i);
            self.slot.remove(&self.nodes[i as usize].0);
            self.nodes[i as usize].0 = seg;
            i
        } else {
            self.nodes.push((seg, NIL, NIL));
            (self.nodes.len() - 1) as u32
        };
        self.slot.insert(seg, i);
        self.push_back(i);
        false
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.slot.len()
    }

    fn clear(&mut self) {
        self.slot.clear();
        self.nodes.clear();
        self.head = NIL;
        self.tail = NIL;
    }
}

/// Counters of the card model.
#[derive(Clone, Debug, Default)]
pub struct CardStats {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub discards: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub cache_stalls: u64,
    pub cache_stall_ns: u64,
    pub write_through: u64,
    pub flush_ns: u64,
    pub read_buffer_hits: u64,
    pub bkops: u64,
    pub map_misses: u64,
    pub power_cuts: u64,
}

/// Card-side parameters other than NAND geometry.
#[derive(Clone, Debug)]
pub struct CardConfig {
    pub name: String,
    pub capacity_bytes: u64,
    pub read_fw: Ns,
    pub write_fw: Ns,
    pub cache_bytes: u64,
    pub flush_fw: Ns,
    pub trim_ns: Ns,
    pub trim_ns_per_mib: Ns,
    /// `card.read_buffer_kib` in bytes (0 = off).
    pub read_buffer_bytes: u64,
    /// `card.read_buffer_ns`: serving a read buffer hit.
    pub read_buffer_ns: Ns,
    /// `card.t_r_step_ns`.
    pub t_r_step: Ns,
    /// `card.bkops_interval_ns`, `card.bkops_ns` (0 = off).
    pub bkops_interval: Ns,
    pub bkops: Ns,
    /// `card.map_seg_kib` in bytes: logical span one L2P map segment covers.
    pub map_seg_bytes: u64,
    /// `card.map_cache_segs`: map segments held in controller SRAM (0 = whole map resident).
    pub map_cache_segs: u32,
    /// `card.map_miss_ns`: loading one map segment from NAND.
    pub map_miss: Ns,
    /// `card.debug_flush_skips_cache` (tests only): CMD6 FLUSH_CACHE returns without writing
    /// the cache back, so data a completed flush covered can be lost at a power cut.
    pub debug_flush_skips_cache: bool,
}

pub struct EmmcCard {
    cfg: CardConfig,
    bus: BusTiming,
    pub nand: Nand,
    pub ftl: Ftl,
    eng: Engine,
    /// Controller read buffer: NAND page ranges `[first, last]` most recently sensed, newest
    /// last, at most `read_buffer_bytes` of pages.
    rbuf: VecDeque<(u64, u64)>,
    /// Pages the ranges in `rbuf` add up to.
    rbuf_pages: u64,
    /// Next background operation start (0 = none scheduled yet).
    next_bkops: Ns,
    /// L2P map segments resident in controller SRAM.
    map_lru: MapLru,
    pub stats: CardStats,
}

impl EmmcCard {
    pub fn new(cfg: CardConfig, bus: BusTiming, nand: Nand, ftl: Ftl) -> Self {
        EmmcCard {
            cfg,
            bus,
            nand,
            ftl,
            eng: Engine::default(),
            rbuf: VecDeque::new(),
            rbuf_pages: 0,
            next_bkops: 0,
            map_lru: MapLru::default(),
            stats: CardStats::default(),
        }
    }

    pub fn config(&self) -> &CardConfig {
        &self.cfg
    }

    /// Keep content (data versions) from now on, for power cuts.
    pub fn keep_content(&mut self) {
        self.eng.content = Some(Content::new(self.nand.page_bytes));
    }

    /// Dirty bytes in the cache at the engine's current time (tests, statistics).
    pub fn dirty_bytes(&self) -> u64 {
        self.eng.dirty()
    }

    fn cached(&self, cmd: &CardCmd) -> bool {
        self.cfg.cache_bytes > 0 && !cmd.reliable && cmd.bytes() <= self.cfg.cache_bytes
    }

    /// First and last NAND page index a command touches.
    fn page_range(&self, cmd: &CardCmd) -> (u64, u64) {
        let pb = self.nand.page_bytes;
        let first = cmd.sector * 512 / pb;
        let last = ((cmd.sector + cmd.nr_sectors.max(1) as u64) * 512 - 1) / pb;
        (first, last)
    }

    /// Whether every page of a read is still in the controller read buffer.
    fn rbuf_hit(&self, cmd: &CardCmd) -> bool {
        if self.cfg.read_buffer_bytes == 0 {
            return false;
        }
        let (f, l) = self.page_range(cmd);
        self.rbuf.iter().any(|&(a, b)| a <= f && l <= b)
    }

    fn rbuf_insert(&mut self, cmd: &CardCmd) {
        if self.cfg.read_buffer_bytes == 0 {
            return;
        }
        let r = self.page_range(cmd);
        self.rbuf.push_back(r);
        self.rbuf_pages += r.1 - r.0 + 1;
        let cap = (self.cfg.read_buffer_bytes / self.nand.page_bytes).max(1);
        while self.rbuf_pages > cap && self.rbuf.len() > 1 {
            let (a, b) = self.rbuf.pop_front().unwrap();
            self.rbuf_pages -= b - a + 1;
        }
    }

    /// A write makes buffered pages it overlaps stale.
    fn rbuf_invalidate(&mut self, cmd: &CardCmd) {
        if self.rbuf.is_empty() {
            return;
        }
        let (f, l) = self.page_range(cmd);
        self.rbuf.retain(|&(a, b)| b < f || l < a);
        self.rbuf_pages = self.rbuf.iter().map(|(a, b)| b - a + 1).sum();
    }

    /// Firmware time to translate a command's logical range: every L2P map segment it touches
    /// that is not resident in controller SRAM is loaded from NAND (`card.map_miss_ns` each),
    /// evicting the least recently used one (demand-paged map, as DFTL; the reason UFS added
    /// Host Performance Booster). Sequential streams stay inside one resident segment; random
    /// I/O over a span larger than `map_cache_segs × map_seg_kib` misses almost every time.
    fn map_lookup(&mut self, cmd: &CardCmd) -> Ns {
        let cap = self.cfg.map_cache_segs as usize;
        if cap == 0 || self.cfg.map_seg_bytes == 0 {
            return 0;
        }
        let first = cmd.sector * 512 / self.cfg.map_seg_bytes;
        let last = ((cmd.sector + cmd.nr_sectors.max(1) as u64) * 512 - 1) / self.cfg.map_seg_bytes;
        let mut ns = 0;
        for seg in first..=last {
            if !self.map_lru.touch(seg, cap) {
                ns += self.cfg.map_miss;
                self.stats.map_misses += 1;
            }
        }
        ns
    }

    /// Card-initiated background operations (auto-BKOPS, read reclaim): every
    /// `bkops_interval` the NAND engine is held for `bkops`, so a foreground command arriving
    /// during one waits for it (the rare multi-ms completion latencies of measurements §5).
    fn run_bkops(&mut self, at: Ns) {
        if self.cfg.bkops_interval == 0 || self.cfg.bkops == 0 {
            return;
        }
        if self.next_bkops == 0 {
            self.next_bkops = self.cfg.bkops_interval;
        }
        self.stats.bkops += bkops_until(
            &mut self.eng,
            &mut self.next_bkops,
            self.cfg.bkops_interval,
            self.cfg.bkops,
            at,
        );
    }

    fn nand_pages(&self, cmd: &CardCmd) -> u64 {
        let pb = self.nand.page_bytes;
        let first = cmd.sector * 512 / pb;
        let last = ((cmd.sector + cmd.nr_sectors.max(1) as u64) * 512 - 1) / pb;
        last - first + 1
    }
}

/// Background operations due from `*next` up to `at`, every `iv`, each holding the engine
/// for `bk` (< `iv`): the engine state afterwards is what running them one at a time gives,
/// computed in time independent of their number. Returns how many ran.
fn bkops_until(eng: &mut Engine, next: &mut Ns, iv: Ns, bk: Ns, at: Ns) -> u64 {
    let mut count = 0;
    while *next <= at {
        let start = *next;
        eng.advance(start);
        if eng.fifo.is_empty() && eng.t <= start {
            // Idle since: every operation up to `at` runs alone and ends before the next
            // one starts (`bkops_ns < bkops_interval_ns`), so only the last one leaves a
            // trace on the engine. Skip to it in constant time, whatever the idle span.
            let n = (at - start) / iv + 1;
            let last = start + (n - 1) * iv;
            eng.t = last + bk;
            count += n;
            *next = last + iv;
            break;
        }
        if eng.t <= start {
            // Busy with write-back: each interval is one operation, then `iv - bkops` of
            // write-back. Jump over the intervals that cannot empty the backlog, in
            // constant time, whatever their number.
            let per = iv - bk;
            let starts = (at - start) / iv + 1;
            let full = (eng.backlog() / per).min(starts - 1);
            if full > 1 {
                eng.write_back_intervals(start, iv, per, full);
                count += full;
                *next = start + full * iv;
                continue;
            }
        }
        if eng.t > start {
            // The engine is ahead (a long foreground operation): operations queue behind
            // it, each `bkops` long, while their starts move `iv` on, closing the gap by
            // `iv - bkops` each. Jump over those that still find it ahead.
            let per = iv - bk;
            let starts = (at - start) / iv + 1;
            let k = ((eng.t - start) / per).min(starts);
            if k > 1 {
                eng.t += k * bk;
                count += k;
                *next = start + k * iv;
                continue;
            }
        }
        let s = start.max(eng.t);
        eng.t = s + bk;
        count += 1;
        *next += iv;
    }
    count
}

impl Card for EmmcCard {
    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn bus(&self) -> &BusTiming {
        &self.bus
    }

    fn capacity_bytes(&self) -> u64 {
        self.cfg.capacity_bytes
    }

    fn cache_bytes(&self) -> u64 {
        self.cfg.cache_bytes
    }

    fn access(&mut self, at: Ns, cmd: &CardCmd) -> Access {
        match cmd.op {
            CardOp::Read => {
                self.run_bkops(at + self.cfg.read_fw);
                if self.rbuf_hit(cmd) {
                    // Served from the controller's buffer: no sensing, no channel transfer.
                    self.stats.read_buffer_hits += 1;
                    let ready = at + self.cfg.read_buffer_ns;
                    return Access {
                        ready,
                        nand_end: ready,
                        tail_blocks: 0,
                        busy_extra: 0,
                    };
                }
                self.rbuf_insert(cmd);
                let map = self.map_lookup(cmd);
                // TLC page types sense at different speeds (LSB < CSB < MSB).
                let saved_tr = self.nand.t_r;
                self.nand.t_r += self.cfg.t_r_step * (self.page_range(cmd).0 % 3);
                let acc = self.read_access(at + map, cmd);
                self.nand.t_r = saved_tr;
                acc
            }
            CardOp::Write if self.cached(cmd) => {
                self.rbuf_invalidate(cmd);
                self.run_bkops(at);
                let map = self.map_lookup(cmd);
                Access {
                    busy_extra: map,
                    ..self.write_access(at, cmd)
                }
            }
            _ => {
                let mut map = 0;
                if cmd.op == CardOp::Write {
                    self.rbuf_invalidate(cmd);
                    self.run_bkops(at);
                    map = self.map_lookup(cmd);
                }
                Access {
                    ready: at,
                    nand_end: at,
                    tail_blocks: 0,
                    busy_extra: map,
                }
            }
        }
    }

    fn transfer(&mut self, data_start: Ns, cmd: &CardCmd, acc: &Access) -> (Ns, Ns) {
        self.transfer_impl(data_start, cmd, acc)
    }

    fn busy_command(&mut self, at: Ns, cmd: &CardCmd) -> Ns {
        self.run_bkops(at);
        self.busy_command_impl(at, cmd)
    }

    fn stats(&self) -> Vec<(String, u64)> {
        self.stats_impl()
    }

    fn tracks_content(&self) -> bool {
        self.eng.content.is_some()
    }

    fn stage_data(&mut self, tag: u32, data: Extents) {
        if let Some(ct) = self.eng.content.as_mut() {
            ct.stage(tag, data);
        }
    }

    fn unstage_data(&mut self, tag: u32) {
        if let Some(ct) = self.eng.content.as_mut() {
            ct.unstage(tag);
        }
    }

    /// The cache is lost, the chunk being written back and the foreground programs in
    /// progress are torn at the page; the controller's volatile state (read buffer, cached map
    /// segments) is gone, and the engine restarts idle at `at`.
    fn power_cut(&mut self, at: Ns) -> Extents {
        self.eng.advance(at);
        let Some(mut ct) = self.eng.content.take() else {
            return Vec::new();
        };
        let fifo = std::mem::take(&mut self.eng.fifo);
        let front = fifo
            .front()
            .filter(|c| c.rem < c.total)
            .map(|c| (&c.data, (c.total - c.rem) as u128, c.total as u128));
        let skip = front.is_some() as usize;
        let lost: Vec<&Extents> = fifo.iter().skip(skip).map(|c| &c.data).collect();
        let changed = ct.power_cut(at, front, &lost);
        self.eng.content = Some(ct);
        self.eng.t = at;
        self.rbuf.clear();
        self.rbuf_pages = 0;
        self.map_lru.clear();
        self.stats.power_cuts += 1;
        changed
    }
}

impl EmmcCard {
    fn read_access(&mut self, at: Ns, cmd: &CardCmd) -> Access {
        {
            {
                // Firmware decodes the command, then the NAND senses in rounds of
                // planes × dies pages, pipelined with streaming the data out.
                // Each round senses (t_R) and streams only the bytes actually read over the
                // channel; full rounds pipeline at max(t_R, channel time of a round).
                // Rounds cover whole pages: an unaligned read spans one page more than its
                // size suggests, so the bytes of the first and last rounds come from the
                // command's byte range, not from its length.
                let pages = self.nand_pages(cmd);
                let rounds = pages.div_ceil(self.nand.parallel);
                let pb = self.nand.page_bytes;
                let (start, end) = (cmd.sector * 512, cmd.sector * 512 + cmd.bytes());
                let first_page = start / pb;
                let last_round_start = (first_page + (rounds - 1) * self.nand.parallel) * pb;
                let last_bytes = end - start.max(last_round_start);
                let dur = (rounds - 1) * self.nand.read_round_ns()
                    + self.nand.t_r.max(self.nand.chan_ns(last_bytes.max(1)));
                let (s, e) = self
                    .eng
                    .occupy(at + self.cfg.read_fw, dur, self.nand.t_prog);
                let first = end.min((first_page + self.nand.parallel) * pb) - start;
                let ready = s + self.nand.t_r + self.nand.chan_ns(first);
                // Data leaves the controller page by page: once the last page is over the
                // channel (`nand_end`), only that page still has to cross the bus.
                let blocks = cmd.nr_sectors as u64;
                let per_page = (self.nand.page_bytes / 512).max(1);
                let last = match blocks % per_page {
                    0 => per_page.min(blocks),
                    r => r,
                };
                Access {
                    ready,
                    nand_end: e.max(ready),
                    tail_blocks: last,
                    busy_extra: 0,
                }
            }
        }
    }

    fn write_access(&mut self, at: Ns, cmd: &CardCmd) -> Access {
        {
            {
                self.eng.advance(at);
                let dirty = self.eng.dirty();
                let need = (dirty + cmd.bytes()).saturating_sub(self.cfg.cache_bytes);
                let ready = if need > 0 {
                    let r = at.max(self.eng.t) + self.eng.time_until_freed(need);
                    self.stats.cache_stalls += 1;
                    self.stats.cache_stall_ns += r - at;
                    r
                } else {
                    at
                };
                Access {
                    ready,
                    nand_end: ready,
                    tail_blocks: 0,
                    busy_extra: 0,
                }
            }
        }
    }

    fn transfer_impl(&mut self, data_start: Ns, cmd: &CardCmd, acc: &Access) -> (Ns, Ns) {
        let blocks = cmd.nr_sectors as u64;
        match cmd.op {
            CardOp::Read => {
                self.stats.reads += 1;
                self.stats.bytes_read += cmd.bytes();
                let end = (data_start + self.bus.read_xfer_ns(blocks))
                    .max(acc.nand_end + self.bus.read_xfer_ns(acc.tail_blocks));
                (end, end)
            }
            CardOp::Write => {
                self.stats.writes += 1;
                self.stats.bytes_written += cmd.bytes();
                let data_end = data_start + self.bus.write_xfer_ns(blocks);
                // The data, when the card keeps content: it supersedes older data waiting for
                // the same sectors. What finished programming before it arrives is on NAND by
                // then and is not superseded: bring the engine (programs, write-back) up to
                // the data's arrival first.
                self.eng.advance(data_start);
                let data = match self.eng.content.take() {
                    Some(mut ct) => {
                        let d = ct.take(cmd.tag, &mut self.eng.waiting_data());
                        self.eng.content = Some(ct);
                        d
                    }
                    None => Vec::new(),
                };
                if self.cached(cmd) {
                    let cost = self
                        .ftl
                        .program(&self.nand, cmd.sector, cmd.nr_sectors, true);
                    self.eng.push(data_end, cmd.bytes(), cost, data);
                    (data_end, data_end + self.cfg.write_fw + acc.busy_extra)
                } else {
                    // Write-through (no cache, reliable write, or larger than the cache):
                    // programming starts with the first data and the card stays busy until
                    // the last program (and any merge/GC it triggered) is done.
                    self.stats.write_through += 1;
                    let cost = self
                        .ftl
                        .program(&self.nand, cmd.sector, cmd.nr_sectors, false);
                    let (s, e) = self.eng.occupy(data_start, cost, self.nand.t_prog);
                    if let Some(ct) = self.eng.content.as_mut() {
                        ct.program(s, e, data);
                    }
                    (
                        data_end,
                        data_end.max(e) + self.cfg.write_fw + acc.busy_extra,
                    )
                }
            }
            CardOp::Flush | CardOp::Discard => (data_start, self.busy_command(data_start, cmd)),
        }
    }

    fn busy_command_impl(&mut self, at: Ns, cmd: &CardCmd) -> Ns {
        match cmd.op {
            CardOp::Flush => {
                self.stats.flushes += 1;
                if self.cfg.debug_flush_skips_cache {
                    return at + self.cfg.flush_fw;
                }
                let end = self.eng.drain_all(at) + self.cfg.flush_fw;
                self.stats.flush_ns += end - at;
                end
            }
            CardOp::Discard => {
                self.stats.discards += 1;
                self.ftl.trim(cmd.sector, cmd.nr_sectors as u64);
                if let Some(mut ct) = self.eng.content.take() {
                    let (s, e) = (cmd.sector, cmd.sector + cmd.nr_sectors as u64);
                    ct.trim(s, e, &mut self.eng.waiting_data());
                    self.eng.content = Some(ct);
                }
                let dur = self.cfg.trim_ns + cmd.bytes() * self.cfg.trim_ns_per_mib / (1 << 20);
                self.eng.occupy(at, dur, self.nand.t_prog).1
            }
            _ => panic!("busy_command for a data command"),
        }
    }

    fn stats_impl(&self) -> Vec<(String, u64)> {
        let s = &self.stats;
        let f = self.ftl.stats();
        [
            ("card_reads", s.reads),
            ("card_writes", s.writes),
            ("card_flushes", s.flushes),
            ("card_discards", s.discards),
            ("card_bytes_read", s.bytes_read),
            ("card_bytes_written", s.bytes_written),
            ("card_cache_stalls", s.cache_stalls),
            ("card_cache_stall_ns", s.cache_stall_ns),
            ("card_write_through", s.write_through),
            ("card_flush_ns", s.flush_ns),
            ("card_read_buffer_hits", s.read_buffer_hits),
            ("card_bkops", s.bkops),
            ("card_map_misses", s.map_misses),
            ("card_power_cuts", s.power_cuts),
            ("ftl_gc_blocks", f.gc_blocks),
            ("ftl_gc_copied_units", f.gc_copied_units),
            ("ftl_gc_ns", f.gc_ns),
            ("ftl_rmw_units", f.rmw_units),
            ("ftl_au_merges", f.au_merges),
            ("ftl_au_merge_ns", f.au_merge_ns),
            ("ftl_au_gap_fill_bytes", f.au_gap_fill_bytes),
            ("ftl_au_clean_closes", f.au_clean_closes),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{bkops_until, Chunk, Engine, MapLru};
    use blksim_core::{Ns, RngStreams};

    /// Background operations one at a time, as the model defines them.
    fn bkops_stepwise(eng: &mut Engine, next: &mut Ns, iv: Ns, bk: Ns, at: Ns) -> u64 {
        let mut count = 0;
        while *next <= at {
            let start = *next;
            eng.advance(start);
            eng.t = start.max(eng.t) + bk;
            count += 1;
            *next += iv;
        }
        count
    }

    /// The constant-time catch-up of background operations (idle, busy with write-back,
    /// behind a long foreground operation) leaves the engine exactly as running them one at
    /// a time does.
    #[test]
    fn bkops_catch_up_equals_running_them_one_by_one() {
        let mut r = RngStreams::new(7).stream("bkops");
        for _ in 0..2000 {
            let iv = r.range_inclusive(2, 5000);
            let bk = r.range_inclusive(1, iv - 1);
            let mut a = Engine {
                t: r.below(50_000),
                ..Default::default()
            };
            for _ in 0..r.below(6) {
                let rem = r.range_inclusive(1, 200_000);
                a.fifo.push_back(Chunk {
                    bytes: 4096,
                    rem,
                    total: rem,
                    data: Vec::new(),
                });
            }
            let mut b = Engine {
                t: a.t,
                fifo: a.fifo.clone(),
                content: None,
            };
            let (mut na, mut nb) = (iv, iv);
            let mut at = 0;
            for _ in 0..4 {
                at += r.below(300_000);
                let ca = bkops_until(&mut a, &mut na, iv, bk, at);
                let cb = bkops_stepwise(&mut b, &mut nb, iv, bk, at);
                assert_eq!((ca, na, a.t), (cb, nb, b.t), "iv {iv} bk {bk} at {at}");
                let rems = |e: &Engine| e.fifo.iter().map(|c| c.rem).collect::<Vec<_>>();
                assert_eq!(rems(&a), rems(&b));
            }
        }
    }

    /// The map cache evicts the least recently used segment, a hit refreshes a segment, and
    /// with many segments resident a lookup stays a lookup (it used to scan them all).
    #[test]
    fn map_lru_evicts_the_least_recently_used() {
        let mut m = MapLru::default();
        let cap = 2;
        assert!(!m.touch(1, cap));
        assert!(!m.touch(2, cap));
        assert!(m.touch(1, cap));
        // 2 is now the least recently used: loading 3 evicts it.
        assert!(!m.touch(3, cap));
        assert!(m.touch(1, cap) && m.touch(3, cap));
        assert!(!m.touch(2, cap));
        assert!(!m.touch(1, cap));
        let mut big = MapLru::default();
        let cap = 1 << 20;
        for s in 0..200_000u64 {
            assert!(!big.touch(s * 7919 % 1_000_003, cap));
        }
        for s in 0..200_000u64 {
            assert!(big.touch(s * 7919 % 1_000_003, cap));
        }
        assert_eq!(big.len(), 200_000);
        assert_eq!(big.nodes.len(), 200_000);
        // Against a plain list kept in use order, over random touches with evictions.
        let mut m = MapLru::default();
        let mut list: Vec<u64> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let seg = x % 40;
            let want = if let Some(p) = list.iter().position(|&s| s == seg) {
                list.remove(p);
                true
            } else {
                if list.len() >= 16 {
                    list.remove(0);
                }
                false
            };
            list.push(seg);
            assert_eq!(m.touch(seg, 16), want);
            assert_eq!(m.len(), list.len());
        }
    }
}
