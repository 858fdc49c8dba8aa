//! Pieces every elevator shares: jiffies, the generic merge helpers of `block/elevator.c`
//! (request hash by end sector, the `last_merge` one-hit cache, `elv_merge`,
//! `elv_attempt_insert_merge`), and small per-request side tables.

use blksim_block::limits::QueueLimits;
use blksim_block::merge::requests_mergeable;
use blksim_block::request::{flags, Op, Request, RqId, RqPool};
use blksim_block::{elevator::BioInfo, ElvMerge};
use blksim_core::hash::FxHashMap;
use blksim_core::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC};

/// Kernel tick rate modelled for jiffies-based deadlines. 250 is the common distribution
/// default (`CONFIG_HZ_250`): one jiffy = 4 ms. Everything jiffies-based (mq-deadline expiries,
/// kyber's timer, bfq's budget timeout and weight-raising periods) uses it.
pub const HZ: u64 = 250;
/// Length of one jiffy in ns.
pub const TICK_NS: Ns = NSEC_PER_SEC / HZ;

/// `jiffies` at virtual time `now` (the simulation starts at jiffy 0; the kernel starts at
/// `INITIAL_JIFFIES`, which only matters for wrap-around bugs — all comparisons below are
/// wrap-safe like `time_after`).
#[inline]
pub fn jiffies(now: Ns) -> u64 {
    now / TICK_NS
}

/// `msecs_to_jiffies` (rounds up, as the kernel does for HZ <= 1000).
#[inline]
pub fn msecs_to_jiffies(ms: u64) -> u64 {
    (ms * HZ).div_ceil(1000)
}

/// `jiffies_to_msecs`.
#[inline]
pub fn jiffies_to_msecs(j: u64) -> u64 {
    j * 1000 / HZ
}

/// `nsecs_to_jiffies` (rounds down, as `nsecs_to_jiffies64` does).
#[inline]
pub fn nsecs_to_jiffies(ns: u64) -> u64 {
    ns / TICK_NS
}

/// Time of the start of jiffy `j` in ns (when a jiffies timer set to expire at `j` fires).
#[inline]
pub fn jiffy_time(j: u64) -> Ns {
    j.saturating_mul(TICK_NS)
}

/// `time_after(a, b)`: a is after b (wrap-safe).
#[inline]
pub fn time_after(a: u64, b: u64) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

/// `time_after_eq(a, b)`.
#[inline]
pub fn time_after_eq(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) >= 0
}

/// `time_before(a, b)`.
#[inline]
pub fn time_before(a: u64, b: u64) -> bool {
    time_after(b, a)
}

pub const MSEC: Ns = NSEC_PER_MSEC;

/// `rq_mergeable()`: the request may take part in any merge.
pub fn rq_mergeable(rq: &Request) -> bool {
    matches!(rq.op, Op::Read | Op::Write | Op::Discard)
        && rq.flags & (flags::REQ_NOMERGE | flags::REQ_PREFLUSH | flags::REQ_FUA) == 0
}

/// `bio_mergeable()`.
pub fn bio_mergeable(bio: &BioInfo) -> bool {
    bio.flags & (flags::REQ_NOMERGE | flags::REQ_PREFLUSH | flags::REQ_FUA) == 0
}

/// `blk_rq_merge_ok()` as far as the fields we have allow: both mergeable, same op (hence
/// same direction), same I/O priority (`rq->ioprio == bio_prio(bio)`).
pub fn elv_bio_merge_ok(rq: &Request, bio: &BioInfo) -> bool {
    rq_mergeable(rq) && bio_mergeable(bio) && rq.op == bio.op && rq.ioprio == bio.ioprio
}

/// `blk_try_merge()`: adjacency only (sizes are checked by the core).
pub fn blk_try_merge(rq: &Request, bio: &BioInfo) -> ElvMerge {
    if rq.end_sector() == bio.sector {
        ElvMerge::BackMerge
    } else if rq.sector.wrapping_sub(bio.nr_sectors as u64) == bio.sector {
        ElvMerge::FrontMerge
    } else {
        ElvMerge::NoMerge
    }
}

/// The elevator-wide merge state of `struct elevator_queue` + `q->last_merge`:
/// the request hash keyed by end sector (`elv_rqhash_*`) and the one-hit cache.
///
/// As in the kernel, each end sector has a list with new entries at the head
/// (`hash_add` on an `hlist`), so among requests with the same end sector the most recently
/// (re)hashed one is found first. The buckets are a hash map from end sector to the list's
/// head; the links live in a table indexed by RqId.
#[derive(Default)]
pub struct MergeHash {
    head: FxHashMap<u64, RqId>,
    /// Per RqId: `(end sector, prev, next)` while hashed.
    link: Vec<Option<(u64, RqId, RqId)>>,
    pub last_merge: Option<RqId>,
    /// Queue limits for request–request merges (`ll_merge_requests_fn`).
    pub lim: QueueLimits,
}

/// The end of a hash list.
const NIL: RqId = RqId::MAX;

impl MergeHash {
    pub fn new(lim: QueueLimits) -> Self {
        MergeHash {
            head: FxHashMap::default(),
            link: Vec::with_capacity(256),
            last_merge: None,
            lim,
        }
    }

    fn slot(&mut self, rq: RqId) -> &mut Option<(u64, RqId, RqId)> {
        let i = rq as usize;
        if self.link.len() <= i {
            self.link.resize(i + 1, None);
        }
        &mut self.link[i]
    }

    /// `elv_rqhash_add` (only for `rq_mergeable` requests, as the callers do).
    pub fn add(&mut self, pool: &RqPool, rq: RqId) {
        let r = pool.get(rq);
        if !rq_mergeable(r) {
            return;
        }
        // The callers hash a request once (`elv_rqhash_add` on an unhashed request).
        debug_assert!(self.link.get(rq as usize).is_none_or(|l| l.is_none()));
        let end = r.end_sector();
        let next = self.head.insert(end, rq).unwrap_or(NIL);
        if next != NIL {
            if let Some(l) = self.slot(next) {
                l.1 = rq;
            }
        }
        *self.slot(rq) = Some((end, NIL, next));
    }

    /// `elv_rqhash_del`.
    pub fn del(&mut self, rq: RqId) {
        let Some((end, prev, next)) = self.slot(rq).take() else {
            return;
        };
        if next != NIL {
            if let Some(l) = self.slot(next) {
                l.1 = prev;
            }
        }
        if prev != NIL {
            if let Some(l) = self.slot(prev) {
                l.2 = next;
            }
        } else if next != NIL {
            self.head.insert(end, next);
        } else {
            self.head.remove(&end);
        }
    }

    /// `elv_rqhash_reposition`.
    pub fn reposition(&mut self, pool: &RqPool, rq: RqId) {
        if self.slot(rq).is_some() {
            self.del(rq);
            self.add(pool, rq);
        }
    }

    /// `elv_rqhash_find`: newest hashed request ending at `offset`.
    pub fn find(&self, offset: u64) -> Option<RqId> {
        self.head.get(&offset).copied()
    }

    /// Drop every trace of `rq` (`deadline_remove_request` / `bfq_remove_request` tail):
    /// hash entry and last_merge.
    pub fn forget(&mut self, rq: RqId) {
        self.del(rq);
        if self.last_merge == Some(rq) {
            self.last_merge = None;
        }
    }

    /// First two steps of `elv_merge()`: the one-hit cache, then the back-merge hash.
    /// `ok` is the scheduler's `allow_merge` (bfq restricts merges to the bio's queue).
    pub fn elv_merge_generic(
        &self,
        pool: &RqPool,
        bio: &BioInfo,
        ok: impl Fn(RqId) -> bool,
    ) -> Option<(RqId, ElvMerge)> {
        if self.lim.nomerges >= 2 || !bio_mergeable(bio) {
            return None;
        }
        if let Some(lm) = self.last_merge {
            let r = pool.get(lm);
            if elv_bio_merge_ok(r, bio) && ok(lm) {
                let k = blk_try_merge(r, bio);
                if k != ElvMerge::NoMerge {
                    return Some((lm, k));
                }
            }
        }
        if self.lim.nomerges >= 1 {
            return None;
        }
        if let Some(rq) = self.find(bio.sector) {
            if elv_bio_merge_ok(pool.get(rq), bio) && ok(rq) {
                return Some((rq, ElvMerge::BackMerge));
            }
        }
        None
    }

    /// `elv_attempt_insert_merge()` candidate search: the request `rq` (not yet queued) can be
    /// appended to a queued request (cache first, then the hash). Returns the target.
    ///
    /// **Departure**: the kernel loops (the grown request may merge again into another one
    /// ending where it starts); the trait hook frees only `rq`, so one step is modelled.
    pub fn insert_merge_target(&self, pool: &RqPool, rq: RqId) -> Option<RqId> {
        if self.lim.nomerges >= 2 {
            return None;
        }
        let r = pool.get(rq);
        if let Some(lm) = self.last_merge {
            if lm != rq && requests_mergeable(pool.get(lm), r, &self.lim) {
                return Some(lm);
            }
        }
        if self.lim.nomerges >= 1 {
            return None;
        }
        let t = self.find(r.sector)?;
        if t != rq && requests_mergeable(pool.get(t), r, &self.lim) {
            Some(t)
        } else {
            None
        }
    }
}

pub use blksim_block::pdu::RqTable;

/// Parse helpers for sysfs-like stores.
pub fn parse_i64(name: &str, v: &str) -> Result<i64, String> {
    v.trim()
        .parse::<i64>()
        .map_err(|_| format!("{name}: expected an integer, got '{v}'"))
}

pub fn parse_u64(name: &str, v: &str) -> Result<u64, String> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| format!("{name}: expected a non-negative integer, got '{v}'"))
}
