//! mq-deadline, following `block/mq-deadline.c` (post-6.10: three priority levels, no zone
//! locking, `latest_pos[]`, `dd_queued()` accounting), read in torvalds/linux at
//! `d8782fe46d09`. Generic merge code follows `block/elevator.c` (`elv_merge`,
//! `elv_attempt_insert_merge`, `elv_merged_request`, `elv_merge_requests`).
//!
//! Data structures map one to one:
//! * `dd_per_prio.sort_list[dir]` (rb-tree by `blk_rq_pos`) → a [`SectorList`]; equal
//!   sectors keep insertion order, as `elv_rb_add` sends
//!   duplicates right.
//! * `fifo_list[dir]` (a `list_head` through `rq->queuelist`) → a doubly linked list whose
//!   links sit in the side table by RqId (`Fifo`): a request leaving in sector order is
//!   unlinked from the middle in O(1), as in the kernel.
//! * `dispatch` (at-head inserts) → `VecDeque`.
//! * `rq->fifo_time` and `rq->elv.priv[0]` (the per-prio pointer) → a side table by RqId.
//!
//! Deadlines are jiffies (HZ = [`crate::HZ`]); `now` is converted with [`jiffies`] at each
//! hook, so expiry has the kernel's 4 ms granularity.

use crate::common::*;
use crate::sorted::SectorList;
use blksim_block::elevator::{parse_tunable, tunables_of, BioInfo, ElvParams, Tunable};
use blksim_block::limits::QueueLimits;
use blksim_block::request::{IoPrioClass, Op, RqId, RqPool};
use blksim_block::{Elevator, ElvMerge};
use blksim_core::{Ns, ParamDef};
use std::collections::VecDeque;

pub const DD_READ: usize = 0;
pub const DD_WRITE: usize = 1;
pub const DD_RT_PRIO: usize = 0;
pub const DD_BE_PRIO: usize = 1;
pub const DD_IDLE_PRIO: usize = 2;
const DD_PRIO_COUNT: usize = 3;

/// `read_expire = HZ / 2`.
pub const READ_EXPIRE: u64 = HZ / 2;
/// `write_expire = 5 * HZ`.
pub const WRITE_EXPIRE: u64 = 5 * HZ;
/// `prio_aging_expire = 10 * HZ`.
pub const PRIO_AGING_EXPIRE: u64 = 10 * HZ;
pub const WRITES_STARVED: i64 = 2;
pub const FIFO_BATCH: i64 = 16;

/// `ioprio_class_to_prio[]`.
fn prio_of(c: IoPrioClass) -> usize {
    match c {
        IoPrioClass::Rt => DD_RT_PRIO,
        IoPrioClass::Be => DD_BE_PRIO,
        IoPrioClass::Idle => DD_IDLE_PRIO,
    }
}

#[derive(Default)]
struct PerPrio {
    dispatch: VecDeque<RqId>,
    sort_list: [SectorList; 2],
    fifo_list: [Fifo; 2],
    latest_pos: [u64; 2],
    // `struct io_stats_per_prio`
    inserted: u32,
    merged: u32,
    dispatched: u32,
    completed: u32,
}

/// Per-request scheduler state (`rq->fifo_time`, `rq->elv.priv[0]`, list/rb membership).
#[derive(Clone, Copy, Default)]
struct RqMeta {
    /// `elv.priv[0] != NULL`: counted in `inserted`, so `finish` counts `completed`.
    counted: bool,
    prio: u8,
    /// `rq->fifo_time` in jiffies.
    fifo_time: u64,
    /// The sector it went into the sort tree with, if on it.
    sort_sector: Option<u64>,
    /// `(prev, next)` on its fifo, if on one (`!list_empty(&rq->queuelist)`); [`NIL`] ends.
    fifo_link: Option<(RqId, RqId)>,
    in_dispatch: bool,
}

/// No request (the end of a fifo).
const NIL: RqId = RqId::MAX;

/// A `fifo_list`: its first and last request ([`NIL`] when empty); the links are the
/// requests' [`RqMeta::fifo_link`].
#[derive(Clone, Copy)]
struct Fifo {
    head: RqId,
    tail: RqId,
}

impl Default for Fifo {
    fn default() -> Self {
        Fifo {
            head: NIL,
            tail: NIL,
        }
    }
}

impl Fifo {
    fn first(&self) -> Option<RqId> {
        (self.head != NIL).then_some(self.head)
    }

    fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

/// mq-deadline's sysfs tunables (`deadline_attrs[]`). Bounds are what the stores accept
/// (`kstrtoint`, non-negative; blksim refuses negative `writes_starved`, which the kernel would
/// take); the stores then clamp as `STORE_INT`/`STORE_JIFFIES` do.
pub static DD_TUNABLES: &[ParamDef] = &[
    ParamDef::new(
        "read_expire",
        "ms",
        "500",
        0,
        i32::MAX as u64,
        "read deadline (HZ/2)",
        "block/mq-deadline.c read_expire, STORE_JIFFIES",
    ),
    ParamDef::new(
        "write_expire",
        "ms",
        "5000",
        0,
        i32::MAX as u64,
        "write deadline (5*HZ)",
        "block/mq-deadline.c write_expire",
    ),
    ParamDef::new(
        "writes_starved",
        "batches",
        "2",
        0,
        i32::MAX as u64,
        "read batches before a write batch is forced",
        "block/mq-deadline.c writes_starved",
    ),
    ParamDef::new(
        "front_merges",
        "count",
        "1",
        0,
        i32::MAX as u64,
        "0/1; look up front merges in the sort tree (stored clamped to 0..1)",
        "block/mq-deadline.c front_merges",
    ),
    ParamDef::new(
        "async_depth",
        "requests",
        "auto",
        0,
        i32::MAX as u64,
        "scheduler tags for async requests and writes; auto = nr_requests (stored clamped to 1..)",
        "block/mq-deadline.c async_depth, dd_depth_updated",
    ),
    ParamDef::new(
        "fifo_batch",
        "requests",
        "16",
        0,
        i32::MAX as u64,
        "requests per batch",
        "block/mq-deadline.c fifo_batch",
    ),
    ParamDef::new(
        "prio_aging_expire",
        "ms",
        "10000",
        0,
        i32::MAX as u64,
        "lower-priority requests older than this are served (10*HZ)",
        "block/mq-deadline.c prio_aging_expire",
    ),
];

pub struct MqDeadline {
    per_prio: [PerPrio; DD_PRIO_COUNT],
    last_dir: usize,
    batching: u32,
    starved: u32,
    // tunables (kernel units: jiffies / counts)
    fifo_expire: [u64; 2],
    fifo_batch: i64,
    writes_starved: i64,
    front_merges: i64,
    async_depth: u32,
    prio_aging_expire: u64,
    meta: RqTable<RqMeta>,
    merge: MergeHash,
    stat_dispatched: u64,
    stat_insert_merges: u64,
}

impl MqDeadline {
    /// `dd_init_sched` + `dd_init_hctx` → `dd_depth_updated`.
    pub fn new(p: &ElvParams) -> Self {
        Self::with_limits(p, QueueLimits::default())
    }

    /// As [`MqDeadline::new`] with the queue limits used for request–request merges.
    pub fn with_limits(p: &ElvParams, lim: QueueLimits) -> Self {
        MqDeadline {
            per_prio: Default::default(),
            last_dir: DD_WRITE,
            batching: 0,
            starved: 0,
            fifo_expire: [READ_EXPIRE, WRITE_EXPIRE],
            fifo_batch: FIFO_BATCH,
            writes_starved: WRITES_STARVED,
            front_merges: 1,
            async_depth: p.nr_requests.max(1),
            prio_aging_expire: PRIO_AGING_EXPIRE,
            meta: RqTable::with_capacity(p.nr_requests as usize + 1),
            merge: MergeHash::new(lim),
            stat_dispatched: 0,
            stat_insert_merges: 0,
        }
    }

    /// Queue limits for insert merges and `nomerges`.
    pub fn set_queue_limits(&mut self, lim: &QueueLimits) {
        self.merge.lim = lim.clone();
    }

    /// `dd_queued()`: inserted − completed.
    fn dd_queued(&self, prio: usize) -> u32 {
        let s = &self.per_prio[prio];
        s.inserted.wrapping_sub(s.completed)
    }

    /// `deadline_from_pos`: first request with `blk_rq_pos >= pos`.
    fn deadline_from_pos(&self, prio: usize, dir: usize, pos: u64) -> Option<RqId> {
        self.per_prio[prio].sort_list[dir]
            .at_or_after(pos)
            .map(|(_, r)| r)
    }

    fn deadline_next_request(&self, prio: usize, dir: usize) -> Option<RqId> {
        self.deadline_from_pos(prio, dir, self.per_prio[prio].latest_pos[dir])
    }

    fn deadline_fifo_request(&self, prio: usize, dir: usize) -> Option<RqId> {
        self.per_prio[prio].fifo_list[dir].first()
    }

    /// `deadline_check_fifo`: the fifo head of `dir` has expired
    /// (`time_is_before_eq_jiffies(fifo_time)`).
    fn deadline_check_fifo(&self, prio: usize, dir: usize, now_j: u64) -> bool {
        let rq = self
            .deadline_fifo_request(prio, dir)
            .expect("non-empty fifo");
        time_after_eq(now_j, self.meta.get(rq).fifo_time)
    }

    /// `started_after`: the request was inserted after `latest_start`.
    fn started_after(&self, pool: &RqPool, rq: RqId, latest_start: u64) -> bool {
        let dir = pool.get(rq).op.dir();
        let start = self
            .meta
            .get(rq)
            .fifo_time
            .wrapping_sub(self.fifo_expire[dir]);
        time_after(start, latest_start)
    }

    fn add_rq_rb(&mut self, pool: &RqPool, rq: RqId) {
        let r = pool.get(rq);
        let (prio, dir) = (self.meta.get(rq).prio as usize, r.op.dir());
        self.per_prio[prio].sort_list[dir].insert(r.sector, rq);
        self.meta.at(rq).sort_sector = Some(r.sector);
    }

    fn del_rq_rb(&mut self, pool: &RqPool, rq: RqId) {
        let m = self.meta.get(rq);
        if let Some(sector) = m.sort_sector {
            let dir = pool.get(rq).op.dir();
            self.per_prio[m.prio as usize].sort_list[dir].remove(sector, rq);
            self.meta.at(rq).sort_sector = None;
        }
    }

    /// `deadline_remove_request`: off the fifo, the rb-tree, the hash and `last_merge`.
    fn deadline_remove_request(&mut self, pool: &RqPool, rq: RqId) {
        let m = self.meta.get(rq);
        let dir = pool.get(rq).op.dir();
        if m.fifo_link.is_some() {
            self.fifo_unlink(m.prio as usize, dir, rq);
        }
        self.del_rq_rb(pool, rq);
        self.merge.forget(rq);
    }

    /// `__dd_dispatch_request`: the exact decision order of the kernel, with its side
    /// effects (`starved++` is evaluated even when the call ends up returning NULL).
    fn __dd_dispatch_request(
        &mut self,
        pool: &RqPool,
        prio: usize,
        latest_start: u64,
        now_j: u64,
    ) -> Option<RqId> {
        let data_dir;
        let rq;
        if let Some(&head) = self.per_prio[prio].dispatch.front() {
            if self.started_after(pool, head, latest_start) {
                return None;
            }
            self.per_prio[prio].dispatch.pop_front();
            self.meta.at(head).in_dispatch = false;
            return Some(self.done(pool, head, pool.get(head).op.dir()));
        }
        // Batches are reads XOR writes: continue the current batch in `last_dir`.
        let cand = self.deadline_next_request(prio, self.last_dir);
        if let Some(c) = cand.filter(|_| (self.batching as i64) < self.fifo_batch) {
            rq = c;
            data_dir = pool.get(c).op.dir();
        } else {
            // Not batching: choose the direction.
            let reads = !self.per_prio[prio].fifo_list[DD_READ].is_empty();
            let writes = !self.per_prio[prio].fifo_list[DD_WRITE].is_empty();
            let dir = if reads {
                let starve_now = if writes {
                    // `dd->starved++ >= dd->writes_starved`: unsigned vs int compares as
                    // unsigned in C, so a negative writes_starved never forces writes.
                    let s = self.starved;
                    self.starved = self.starved.wrapping_add(1);
                    s >= self.writes_starved as i32 as u32
                } else {
                    false
                };
                if starve_now {
                    self.starved = 0;
                    DD_WRITE
                } else {
                    DD_READ
                }
            } else if writes {
                self.starved = 0;
                DD_WRITE
            } else {
                return None;
            };
            // dispatch_find_request: restart from the fifo head if it expired or nothing
            // is at/after the last position, else continue the ascending sweep.
            let next_rq = self.deadline_next_request(prio, dir);
            let chosen = if self.deadline_check_fifo(prio, dir, now_j) || next_rq.is_none() {
                self.deadline_fifo_request(prio, dir)
            } else {
                next_rq
            };
            let c = chosen?;
            self.last_dir = dir;
            self.batching = 0;
            rq = c;
            data_dir = dir;
        }
        // dispatch_request:
        if self.started_after(pool, rq, latest_start) {
            return None;
        }
        self.batching += 1;
        self.deadline_remove_request(pool, rq);
        Some(self.done(pool, rq, data_dir))
    }

    /// `list_add_tail(&rq->queuelist, &per_prio->fifo_list[dir])`.
    fn fifo_push_back(&mut self, prio: usize, dir: usize, rq: RqId) {
        let tail = self.per_prio[prio].fifo_list[dir].tail;
        self.fifo_insert_after(prio, dir, tail, rq);
    }

    /// Link `rq` behind `after` (at the head when `after` is [`NIL`]).
    fn fifo_insert_after(&mut self, prio: usize, dir: usize, after: RqId, rq: RqId) {
        debug_assert!(self.meta.get(rq).fifo_link.is_none());
        let next = match after {
            NIL => std::mem::replace(&mut self.per_prio[prio].fifo_list[dir].head, rq),
            _ => std::mem::replace(&mut self.links(after).1, rq),
        };
        match next {
            NIL => self.per_prio[prio].fifo_list[dir].tail = rq,
            _ => self.links(next).0 = rq,
        }
        self.meta.at(rq).fifo_link = Some((after, next));
    }

    /// `list_del_init(&rq->queuelist)`.
    fn fifo_unlink(&mut self, prio: usize, dir: usize, rq: RqId) {
        let (prev, next) = self.meta.at(rq).fifo_link.take().expect("on the fifo");
        match prev {
            NIL => self.per_prio[prio].fifo_list[dir].head = next,
            _ => self.links(prev).1 = next,
        }
        match next {
            NIL => self.per_prio[prio].fifo_list[dir].tail = prev,
            _ => self.links(next).0 = prev,
        }
    }

    /// The `(prev, next)` links of `rq`, which is on a fifo.
    fn links(&mut self, rq: RqId) -> &mut (RqId, RqId) {
        self.meta.at(rq).fifo_link.as_mut().expect("on the fifo")
    }

    /// The `done:` tail: `latest_pos`, `dispatched++`.
    fn done(&mut self, pool: &RqPool, rq: RqId, dir: usize) -> RqId {
        let prio = prio_of(pool.get(rq).ioprio.class());
        self.per_prio[prio].latest_pos[dir] = pool.get(rq).sector;
        self.per_prio[prio].dispatched += 1;
        self.stat_dispatched += 1;
        rq
    }

    /// `dd_dispatch_prio_aged_requests`.
    fn dd_dispatch_prio_aged_requests(&mut self, pool: &RqPool, now_j: u64) -> Option<RqId> {
        let prio_cnt = (0..DD_PRIO_COUNT)
            .filter(|&p| self.dd_queued(p) > 0)
            .count();
        if prio_cnt < 2 {
            return None;
        }
        let latest = now_j.wrapping_sub(self.prio_aging_expire);
        for prio in DD_BE_PRIO..DD_PRIO_COUNT {
            if let Some(rq) = self.__dd_dispatch_request(pool, prio, latest, now_j) {
                return Some(rq);
            }
        }
        None
    }

    /// Account a request that left the scheduler without completing through
    /// `finish_request` (merged away): the kernel frees it with `blk_mq_free_request`, whose
    /// `dd_finish_request` counts it completed.
    fn account_freed(&mut self, rq: RqId) {
        let m = self.meta.at(rq);
        if m.counted {
            m.counted = false;
            let p = m.prio as usize;
            self.per_prio[p].completed = self.per_prio[p].completed.wrapping_add(1);
        }
    }
}

impl Elevator for MqDeadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }

    /// `dd_init_sched` sets `QUEUE_FLAG_SQ_SCHED`.
    fn sq_sched(&self) -> bool {
        true
    }

    /// The reference elevator of the platform costs (100 %). One `dd->lock` for merge, insert
    /// (once per list, `dd_insert_requests`) and dispatch; `dd_finish_request` is lock-free.
    /// Cold lines written per hook: merge 2 (`per_prio[BE]` sort_list root, hash bucket:
    /// `dd_bio_merge` / `dd_request_merge`), insert 3 (sort/fifo heads, stats.inserted, hash
    /// bucket: `dd_insert_request`), dispatch 3 (per_prio lists and latest_pos, stats,
    /// batching/starved: `dd_dispatch_request`).
    fn cpu_footprint(&self) -> blksim_block::CpuFootprint {
        blksim_block::CpuFootprint {
            cost_pct: 100,
            cold_lines: [2, 3, 3, 0],
            lock_per_insert: false,
            locked_finish: false,
        }
    }

    /// `dd_insert_requests` → `dd_insert_request` (insert merges are attempted by the core
    /// through [`Elevator::try_insert_merge`] first).
    fn insert_requests(&mut self, pool: &mut RqPool, rqs: &[RqId], at_head: bool, now: Ns) {
        let now_j = jiffies(now);
        for &rq in rqs {
            let (prio, dir) = {
                let r = pool.get(rq);
                (prio_of(r.ioprio.class()), r.op.dir())
            };
            let m = self.meta.at(rq);
            if !m.counted {
                m.counted = true;
                self.per_prio[prio].inserted = self.per_prio[prio].inserted.wrapping_add(1);
            }
            let m = self.meta.at(rq);
            // Every way out of the scheduler unlinks a request (`deadline_remove_request`);
            // a request still linked here would corrupt its old list's neighbours.
            debug_assert!(m.fifo_link.is_none() && m.sort_sector.is_none());
            m.prio = prio as u8;
            if at_head {
                m.in_dispatch = true;
                m.fifo_time = now_j;
                self.per_prio[prio].dispatch.push_front(rq);
            } else {
                m.in_dispatch = false;
                self.add_rq_rb(pool, rq);
                if rq_mergeable(pool.get(rq)) {
                    self.merge.add(pool, rq);
                    if self.merge.last_merge.is_none() {
                        self.merge.last_merge = Some(rq);
                    }
                }
                self.meta.at(rq).fifo_time = now_j.wrapping_add(self.fifo_expire[dir]);
                self.fifo_push_back(prio, dir, rq);
            }
        }
    }

    /// `dd_dispatch_request`.
    fn dispatch_request(&mut self, pool: &mut RqPool, now: Ns) -> Option<RqId> {
        let now_j = jiffies(now);
        if let Some(rq) = self.dd_dispatch_prio_aged_requests(pool, now_j) {
            return Some(rq);
        }
        for prio in 0..DD_PRIO_COUNT {
            let rq = self.__dd_dispatch_request(pool, prio, now_j, now_j);
            if rq.is_some() || self.dd_queued(prio) > 0 {
                return rq;
            }
        }
        None
    }

    /// `dd_has_work`.
    fn has_work(&self) -> bool {
        self.per_prio.iter().any(|p| {
            !p.dispatch.is_empty() || !p.fifo_list[0].is_empty() || !p.fifo_list[1].is_empty()
        })
    }

    /// `dd_bio_merge` → `blk_mq_sched_try_merge` → `elv_merge`: one-hit cache, back merge by
    /// the end-sector hash, then `dd_request_merge` (front merge through the sort tree).
    fn find_merge(&mut self, pool: &RqPool, bio: &BioInfo) -> Option<(RqId, ElvMerge)> {
        if let Some(m) = self.merge.elv_merge_generic(pool, bio, |_| true) {
            return Some(m);
        }
        if self.merge.lim.nomerges >= 1 || !bio_mergeable(bio) || self.front_merges == 0 {
            return None;
        }
        // dd_request_merge: `elv_rb_find(&per_prio->sort_list[bio_data_dir(bio)], end)`.
        // **Departure**: the kernel looks only in the bio's priority level; BioInfo has no
        // ioprio, so the levels are searched BE (the default class) first, then RT, IDLE.
        // **Departure**: among requests that start at `end`, `elv_rb_find` returns the first
        // its descent of the rb-tree meets, which depends on the tree's shape; here it is
        // the leftmost, the one inserted first.
        let end = bio.sector + bio.nr_sectors as u64;
        let dir = bio.op.dir();
        for prio in [DD_BE_PRIO, DD_RT_PRIO, DD_IDLE_PRIO] {
            if let Some((_, rq)) = self.per_prio[prio].sort_list[dir]
                .at_or_after(end)
                .filter(|&(s, _)| s == end)
            {
                if elv_bio_merge_ok(pool.get(rq), bio) {
                    return Some((rq, ElvMerge::FrontMerge));
                }
            }
        }
        None
    }

    /// `dd_request_merged` + `elv_merged_request`.
    fn request_merged(&mut self, pool: &mut RqPool, rq: RqId, kind: ElvMerge) {
        if kind == ElvMerge::FrontMerge && self.meta.get(rq).sort_sector.is_some() {
            self.del_rq_rb(pool, rq);
            self.add_rq_rb(pool, rq);
        }
        if kind == ElvMerge::BackMerge {
            self.merge.reposition(pool, rq);
        }
        self.merge.last_merge = Some(rq);
    }

    /// `elv_rb_latter_request`.
    fn next_request(&self, pool: &RqPool, rq: RqId) -> Option<RqId> {
        let m = self.meta.get(rq);
        let s = m.sort_sector?;
        let dir = pool.get(rq).op.dir();
        self.per_prio[m.prio as usize].sort_list[dir]
            .next(s, rq)
            .map(|(_, r)| r)
    }

    /// `elv_rb_former_request`.
    fn former_request(&self, pool: &RqPool, rq: RqId) -> Option<RqId> {
        let m = self.meta.get(rq);
        let s = m.sort_sector?;
        let dir = pool.get(rq).op.dir();
        self.per_prio[m.prio as usize].sort_list[dir]
            .prev(s, rq)
            .map(|(_, r)| r)
    }

    /// `dd_merged_requests` + `elv_merge_requests`: `rq` inherits `next`'s fifo position and
    /// deadline if that is earlier; `next` leaves every structure.
    fn requests_merged(&mut self, pool: &mut RqPool, rq: RqId, next: RqId) {
        let nm = self.meta.get(next);
        let prio = prio_of(pool.get(next).ioprio.class());
        self.per_prio[prio].merged += 1;
        let rm = self.meta.get(rq);
        if rm.fifo_link.is_some()
            && nm.fifo_link.is_some()
            && time_before(nm.fifo_time, rm.fifo_time)
        {
            // list_move(&req->queuelist, &next->queuelist): req goes behind next, which
            // leaves below, so req takes next's place. Merged requests have the same
            // priority (`attempt_merge` checks ioprio), so it stays on its own list.
            debug_assert_eq!(rm.prio, nm.prio);
            let (p, dir) = (rm.prio as usize, pool.get(rq).op.dir());
            self.fifo_unlink(p, dir, rq);
            self.fifo_insert_after(p, dir, next, rq);
            self.meta.at(rq).fifo_time = nm.fifo_time;
        }
        self.deadline_remove_request(pool, next);
        self.merge.reposition(pool, rq);
        self.merge.last_merge = Some(rq);
        self.account_freed(next);
    }

    /// `blk_mq_sched_try_insert_merge` → `elv_attempt_insert_merge` (back merge of the new
    /// request into a queued one), then `dd_merged_requests` + `elv_merge_requests`.
    fn try_insert_merge(&mut self, pool: &mut RqPool, rq: RqId) -> Option<RqId> {
        let target = self.merge.insert_merge_target(pool, rq)?;
        let prio = prio_of(pool.get(rq).ioprio.class());
        // dd_insert_request counted it (inserted++) before trying; the free counts it
        // completed: net zero, so only `merged` moves.
        self.per_prio[prio].merged += 1;
        pool.merge_requests(target, rq);
        self.merge.reposition(pool, target);
        self.merge.last_merge = Some(target);
        self.stat_insert_merges += 1;
        *self.meta.at(rq) = RqMeta::default();
        Some(target)
    }

    /// `dd_finish_request`: `completed++` for requests that went through insert.
    fn finish_request(&mut self, _pool: &RqPool, rq: RqId, _now: Ns) {
        self.account_freed(rq);
        *self.meta.at(rq) = RqMeta::default();
    }

    /// `dd_limit_depth`: synchronous reads are not throttled; everything else gets
    /// `async_depth`.
    fn limit_depth(&self, op: Op, sync: bool) -> Option<u32> {
        if sync && !op.is_write() {
            None
        } else {
            Some(self.async_depth)
        }
    }

    /// `dd_depth_updated`: `async_depth = nr_requests`.
    fn depth_updated(&mut self, nr_requests: u32) {
        self.async_depth = nr_requests.max(1);
    }

    /// `dd_depth_updated` → `blk_mq_set_min_shallow_depth(q, q->async_depth)`, also on every
    /// store of `async_depth` (the kernel moved it to `q->async_depth` for this: with a fixed
    /// minimum of 1 the wake batch was always 1). With `async_depth` below the wake batch a
    /// writer waiting for a tag would otherwise wait for frees that cannot come.
    fn min_shallow_depth(&self) -> Option<u32> {
        Some(self.async_depth)
    }

    fn tunables(&self) -> Vec<Tunable> {
        tunables_of(DD_TUNABLES, |name| match name {
            "read_expire" => jiffies_to_msecs(self.fifo_expire[DD_READ]).to_string(),
            "write_expire" => jiffies_to_msecs(self.fifo_expire[DD_WRITE]).to_string(),
            "writes_starved" => self.writes_starved.to_string(),
            "front_merges" => self.front_merges.to_string(),
            "async_depth" => self.async_depth.to_string(),
            "fifo_batch" => self.fifo_batch.to_string(),
            _ => jiffies_to_msecs(self.prio_aging_expire).to_string(),
        })
    }

    /// The `STORE_*` macros: clamp to the kernel's bounds, ms → jiffies with
    /// `msecs_to_jiffies`.
    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        let v = parse_tunable(DD_TUNABLES, "mq-deadline", name, value)? as i64;
        let int = |v: i64, lo: i64, hi: i64| v.clamp(lo, hi);
        match name {
            "read_expire" => {
                self.fifo_expire[DD_READ] = msecs_to_jiffies(int(v, 0, i32::MAX as i64) as u64)
            }
            "write_expire" => {
                self.fifo_expire[DD_WRITE] = msecs_to_jiffies(int(v, 0, i32::MAX as i64) as u64)
            }
            "prio_aging_expire" => {
                self.prio_aging_expire = msecs_to_jiffies(int(v, 0, i32::MAX as i64) as u64)
            }
            "writes_starved" => self.writes_starved = int(v, i32::MIN as i64, i32::MAX as i64),
            "front_merges" => self.front_merges = int(v, 0, 1),
            "async_depth" => self.async_depth = int(v, 1, i32::MAX as i64) as u32,
            _ => self.fifo_batch = int(v, 0, i32::MAX as i64),
        }
        Ok(())
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("dispatched", self.stat_dispatched),
            ("insert_merges", self.stat_insert_merges),
        ];
        let names = [
            ("queued_rt", "merged_rt"),
            ("queued_be", "merged_be"),
            ("queued_idle", "merged_idle"),
        ];
        for (p, (q, m)) in names.iter().enumerate() {
            v.push((q, self.dd_queued(p) as u64));
            v.push((m, self.per_prio[p].merged as u64));
        }
        v
    }
}
