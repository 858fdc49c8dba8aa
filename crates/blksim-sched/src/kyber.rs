//! Kyber, following `block/kyber-iosched.c` (recent version with four domains and latency
//! histograms), read in torvalds/linux at `2eda6d2f14bf`.
//!
//! * Domains by op (`kyber_sched_domain`): READ, WRITE, DISCARD, OTHER.
//! * Device-wide token pools per domain (`domain_tokens[]`, sbitmap_queue of size
//!   `kyber_depth[]`), resized by the timer. Modelled as a counter `in_use < depth`.
//!   **Departure**: after a shrink, tokens above the new depth held by in-flight requests
//!   are counted against the new depth here; in the sbitmap they are bits beyond the depth.
//! * Per-CPU software queues (`kyber_ctx_queue.rq_list[domain]`, one per CPU of the request)
//!   and the hctx-level `rqs[domain]` lists; requests stay in the per-CPU queues (mergeable)
//!   until a token for their domain is obtained (`kyber_dispatch_cur_domain`).
//! * Latency histograms (`KYBER_LATENCY_BUCKETS` = 8, total and I/O latency) and the
//!   timer (`kyber_timer_fn`), armed with `timer_reduce(jiffies + HZ/10)` at each completion.
//!
//! **Departure**: one `kyber_hctx_data` is modelled (the trait's dispatch hook does not say
//! which hardware queue runs); with several hardware queues they share it.
//! **Departure**: a token freed while the hctx waits wakes it on every free (the sbitmap
//! wakes waiters in batches of `wake_batch`); the core reruns the queue on completion when
//! [`Elevator::wants_run_on_completion`] is true.

use crate::common::*;
use blksim_block::elevator::{parse_tunable, tunables_of, BioInfo, ElvParams, Tunable};
use blksim_block::request::{Op, RqId, RqPool};
use blksim_block::{Elevator, ElvMerge};
use blksim_core::{Ns, ParamDef, NSEC_PER_MSEC, NSEC_PER_SEC};
use std::collections::VecDeque;

pub const KYBER_READ: usize = 0;
pub const KYBER_WRITE: usize = 1;
pub const KYBER_DISCARD: usize = 2;
pub const KYBER_OTHER: usize = 3;
pub const KYBER_NUM_DOMAINS: usize = 4;
/// `KYBER_ASYNC_PERCENT`.
pub const KYBER_ASYNC_PERCENT: u32 = 75;
/// `kyber_depth[]`: maximum (and initial) tokens per domain.
pub const KYBER_DEPTH: [u32; 4] = [256, 128, 64, 16];
/// `kyber_batch_size[]`.
pub const KYBER_BATCH_SIZE: [u32; 4] = [16, 8, 1, 1];
/// `kyber_latency_targets[]` (READ, WRITE, DISCARD).
pub const KYBER_LATENCY_TARGETS: [u64; 3] =
    [2 * NSEC_PER_MSEC, 10 * NSEC_PER_MSEC, 5 * NSEC_PER_SEC];
pub const KYBER_LATENCY_SHIFT: u32 = 2;
pub const KYBER_GOOD_BUCKETS: usize = 1 << KYBER_LATENCY_SHIFT;
pub const KYBER_LATENCY_BUCKETS: usize = 2 << KYBER_LATENCY_SHIFT;
pub const KYBER_TOTAL_LATENCY: usize = 0;
pub const KYBER_IO_LATENCY: usize = 1;

/// `kyber_sched_domain`.
pub fn kyber_sched_domain(op: Op) -> usize {
    match op {
        Op::Read => KYBER_READ,
        Op::Write => KYBER_WRITE,
        Op::Discard => KYBER_DISCARD,
        Op::Flush => KYBER_OTHER,
    }
}

/// kyber's sysfs tunables (`kyber_sched_attrs[]`). The kernel's store takes any u64
/// (`kstrtoull`); blksim bounds the targets at one hour.
pub static KYBER_TUNABLES: &[ParamDef] = &[
    ParamDef::new(
        "read_lat_nsec",
        "ns",
        "2000000",
        1,
        3600 * NSEC_PER_SEC,
        "read latency target",
        "block/kyber-iosched.c kyber_latency_targets[KYBER_READ]",
    ),
    ParamDef::new(
        "write_lat_nsec",
        "ns",
        "10000000",
        1,
        3600 * NSEC_PER_SEC,
        "write latency target",
        "block/kyber-iosched.c kyber_latency_targets[KYBER_WRITE]",
    ),
];

pub struct Kyber {
    // kyber_queue_data
    depth: [u32; 4],
    in_use: [u32; 4],
    async_depth: u32,
    latency_buckets: [[[u32; KYBER_LATENCY_BUCKETS]; 2]; 3],
    latency_timeout: [u64; 3],
    domain_p99: [i32; 3],
    latency_targets: [u64; 3],
    /// Pending expiry of `kqd->timer`, in jiffies.
    timer_expires: Option<u64>,
    // kyber_hctx_data
    rqs: [VecDeque<RqId>; 4],
    cur_domain: usize,
    batching: u32,
    kcqs: Vec<[VecDeque<RqId>; 4]>,
    /// Requests waiting in kcqs per domain (`sbitmap_any_bit_set(&kcq_map[d])`).
    kcq_pending: [u32; 4],
    /// `domain_wait[d]` is on the token wait queue.
    waiting: [bool; 4],
    /// A token was freed while waiting: the hctx was woken (`kyber_domain_wake`).
    woken: bool,
    /// Token held per request (`rq->elv.priv[0]`, -1 = none).
    token: RqTable<i8>,
    stat_throttled: u64,
    stat_timer: u64,
}

impl Kyber {
    /// `kyber_queue_data_alloc` + `kyber_init_hctx` → `kyber_depth_updated`.
    pub fn new(p: &ElvParams) -> Self {
        let ncpu = 8;
        Kyber {
            depth: KYBER_DEPTH,
            in_use: [0; 4],
            async_depth: (p.nr_requests * KYBER_ASYNC_PERCENT / 100).max(1),
            latency_buckets: [[[0; KYBER_LATENCY_BUCKETS]; 2]; 3],
            latency_timeout: [0; 3],
            domain_p99: [-1; 3],
            latency_targets: KYBER_LATENCY_TARGETS,
            timer_expires: None,
            rqs: Default::default(),
            cur_domain: 0,
            batching: 0,
            kcqs: (0..ncpu).map(|_| Default::default()).collect(),
            kcq_pending: [0; 4],
            waiting: [false; 4],
            woken: false,
            token: RqTable::with_capacity(p.nr_requests as usize + 1),
            stat_throttled: 0,
            stat_timer: 0,
        }
    }

    /// Current token depth of a domain (`domain_tokens[d].sb.depth`).
    pub fn domain_depth(&self, d: usize) -> u32 {
        self.depth[d]
    }

    fn kcq(&mut self, cpu: u16) -> &mut [VecDeque<RqId>; 4] {
        let c = cpu as usize;
        if self.kcqs.len() <= c {
            self.kcqs.resize_with(c + 1, Default::default);
        }
        &mut self.kcqs[c]
    }

    /// `add_latency_sample`.
    fn add_latency_sample(&mut self, d: usize, ty: usize, latency: u64) {
        let target = self.latency_targets[d];
        let bucket = if latency > 0 {
            let divisor = (target >> KYBER_LATENCY_SHIFT).max(1);
            (((latency - 1) / divisor) as usize).min(KYBER_LATENCY_BUCKETS - 1)
        } else {
            0
        };
        self.latency_buckets[d][ty][bucket] += 1;
    }

    /// `calculate_percentile`: bucket of the given percentile, or -1 if there are not
    /// enough samples (fewer than 500 and the 1 s window since the first sample is open).
    fn calculate_percentile(&mut self, d: usize, ty: usize, percentile: u32, now_j: u64) -> i32 {
        let buckets = &mut self.latency_buckets[d][ty];
        let samples: u32 = buckets.iter().sum();
        if samples == 0 {
            return -1;
        }
        if self.latency_timeout[d] == 0 {
            self.latency_timeout[d] = now_j.wrapping_add(HZ).max(1);
        }
        // time_is_after_jiffies(timeout) == time_before(jiffies, timeout)
        if samples < 500 && time_before(now_j, self.latency_timeout[d]) {
            return -1;
        }
        self.latency_timeout[d] = 0;
        let mut pct = (samples as u64 * percentile as u64).div_ceil(100) as u32;
        let mut bucket = 0;
        while bucket < KYBER_LATENCY_BUCKETS - 1 {
            if buckets[bucket] >= pct {
                break;
            }
            pct -= buckets[bucket];
            bucket += 1;
        }
        *buckets = [0; KYBER_LATENCY_BUCKETS];
        bucket as i32
    }

    /// `kyber_resize_domain`.
    fn kyber_resize_domain(&mut self, d: usize, depth: u32) {
        self.depth[d] = depth.clamp(1, KYBER_DEPTH[d]);
    }

    /// `kyber_timer_fn`.
    fn kyber_timer_fn(&mut self, now_j: u64) {
        self.stat_timer += 1;
        let mut bad = false;
        for d in 0..KYBER_OTHER {
            let p90 = self.calculate_percentile(d, KYBER_IO_LATENCY, 90, now_j);
            if p90 >= KYBER_GOOD_BUCKETS as i32 {
                bad = true;
            }
        }
        for d in 0..KYBER_OTHER {
            let mut p99 = self.calculate_percentile(d, KYBER_TOTAL_LATENCY, 99, now_j);
            if bad {
                if p99 < 0 {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = -1;
            } else if p99 >= 0 {
                self.domain_p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            if bad || p99 >= KYBER_GOOD_BUCKETS as i32 {
                let orig = self.depth[d];
                let depth = (orig * (p99 as u32 + 1)) >> KYBER_LATENCY_SHIFT;
                self.kyber_resize_domain(d, depth);
            }
        }
    }

    /// `kyber_get_domain_token` (+ registering on the wait queue on failure).
    fn kyber_get_domain_token(&mut self) -> Option<u8> {
        let d = self.cur_domain;
        let got = if self.in_use[d] < self.depth[d] {
            self.in_use[d] += 1;
            true
        } else {
            false
        };
        if !got {
            // Register on the token wait queue; the retry in the kernel cannot succeed here
            // (tokens are only freed by completions, which are not concurrent).
            self.waiting[d] = true;
            self.stat_throttled += 1;
            return None;
        }
        self.waiting[d] = false;
        Some(d as u8)
    }

    /// `kyber_flush_busy_kcqs`: splice every CPU's list of the domain, in CPU order.
    fn kyber_flush_busy_kcqs(&mut self, d: usize) {
        for c in 0..self.kcqs.len() {
            while let Some(rq) = self.kcqs[c][d].pop_front() {
                self.rqs[d].push_back(rq);
            }
        }
        self.kcq_pending[d] = 0;
    }

    /// `kyber_dispatch_cur_domain`.
    fn kyber_dispatch_cur_domain(&mut self) -> Option<RqId> {
        let d = self.cur_domain;
        if !self.rqs[d].is_empty() {
            let tok = self.kyber_get_domain_token()?;
            self.batching += 1;
            let rq = self.rqs[d].pop_front().unwrap();
            *self.token.at(rq) = tok as i8;
            return Some(rq);
        } else if self.kcq_pending[d] > 0 {
            let tok = self.kyber_get_domain_token()?;
            self.kyber_flush_busy_kcqs(d);
            self.batching += 1;
            let rq = self.rqs[d].pop_front().unwrap();
            *self.token.at(rq) = tok as i8;
            return Some(rq);
        }
        None
    }

    /// `rq_clear_domain_token`.
    fn rq_clear_domain_token(&mut self, rq: RqId) {
        let t = self.token.get(rq);
        if t >= 0 {
            let d = t as usize;
            self.in_use[d] = self.in_use[d].saturating_sub(1);
            if self.waiting[d] {
                // kyber_domain_wake: off the wait queue, run the hw queue.
                self.waiting[d] = false;
                self.woken = true;
            }
        }
        *self.token.at(rq) = -1;
    }
}

impl Elevator for Kyber {
    fn name(&self) -> &'static str {
        "kyber"
    }

    /// 60 % of mq-deadline's hook costs (blksim model: kyber's hooks move requests between
    /// lists and take domain tokens, with no sorting or expiry bookkeeping). The model charges
    /// one elevator lock for the list insert and dispatch, with mq-deadline's cold-line counts:
    /// in the kernel inserts take the per-CPU `kcq->lock` (`kyber_insert_requests`) and
    /// dispatch `khd->lock` (`kyber_dispatch_request`), which the model does not separate yet.
    /// `kyber_finish_request` releases a token lock-free.
    fn cpu_footprint(&self) -> blksim_block::CpuFootprint {
        blksim_block::CpuFootprint {
            cost_pct: 60,
            cold_lines: [2, 3, 3, 0],
            lock_per_insert: false,
            locked_finish: false,
        }
    }

    /// `kyber_insert_requests`: tail (or head) of the request's CPU queue for its domain.
    fn insert_requests(&mut self, pool: &mut RqPool, rqs: &[RqId], at_head: bool, _now: Ns) {
        for &rq in rqs {
            let (d, cpu) = {
                let r = pool.get(rq);
                (kyber_sched_domain(r.op), r.cpu)
            };
            *self.token.at(rq) = -1;
            let q = &mut self.kcq(cpu)[d];
            if at_head {
                q.push_front(rq);
            } else {
                q.push_back(rq);
            }
            self.kcq_pending[d] += 1;
        }
    }

    /// `kyber_dispatch_request`.
    fn dispatch_request(&mut self, _pool: &mut RqPool, _now: Ns) -> Option<RqId> {
        self.woken = false;
        if self.batching < KYBER_BATCH_SIZE[self.cur_domain] {
            if let Some(rq) = self.kyber_dispatch_cur_domain() {
                return Some(rq);
            }
        }
        self.batching = 0;
        for _ in 0..KYBER_NUM_DOMAINS {
            self.cur_domain = if self.cur_domain == KYBER_NUM_DOMAINS - 1 {
                0
            } else {
                self.cur_domain + 1
            };
            if let Some(rq) = self.kyber_dispatch_cur_domain() {
                return Some(rq);
            }
        }
        None
    }

    /// `kyber_has_work`.
    fn has_work(&self) -> bool {
        (0..KYBER_NUM_DOMAINS).any(|d| !self.rqs[d].is_empty() || self.kcq_pending[d] > 0)
    }

    /// `kyber_bio_merge` → `blk_bio_list_merge`: the bio's CPU queue for its domain, newest
    /// first, at most 8 requests; the first compatible adjacent one wins.
    fn find_merge(&mut self, pool: &RqPool, bio: &BioInfo) -> Option<(RqId, ElvMerge)> {
        let d = kyber_sched_domain(bio.op);
        let c = bio.cpu as usize;
        let list = self.kcqs.get(c).map(|k| &k[d])?;
        for &rq in list.iter().rev().take(8) {
            let r = pool.get(rq);
            if !elv_bio_merge_ok(r, bio) {
                continue;
            }
            let k = blk_try_merge(r, bio);
            if k != ElvMerge::NoMerge {
                return Some((rq, k));
            }
        }
        None
    }

    /// `kyber_completed_request`: two latency samples, then `timer_reduce(jiffies + HZ/10)`.
    fn completed_request(&mut self, pool: &RqPool, rq: RqId, now: Ns) {
        let r = pool.get(rq);
        let d = kyber_sched_domain(r.op);
        if d == KYBER_OTHER {
            return;
        }
        self.add_latency_sample(d, KYBER_TOTAL_LATENCY, now.saturating_sub(r.alloc_time));
        self.add_latency_sample(d, KYBER_IO_LATENCY, now.saturating_sub(r.issue_time));
        let exp = jiffies(now) + HZ / 10;
        match self.timer_expires {
            Some(t) if !time_after(t, exp) => {}
            _ => self.timer_expires = Some(exp),
        }
    }

    /// `kyber_finish_request` (also `requeue_request`): give the token back.
    fn finish_request(&mut self, _pool: &RqPool, rq: RqId, _now: Ns) {
        self.rq_clear_domain_token(rq);
    }

    /// `kyber_limit_depth`: async allocations get `async_depth` (75 % of nr_requests).
    fn limit_depth(&self, _op: Op, sync: bool) -> Option<u32> {
        if sync {
            None
        } else {
            Some(self.async_depth)
        }
    }

    /// `kyber_depth_updated`.
    fn depth_updated(&mut self, nr_requests: u32) {
        self.async_depth = (nr_requests * KYBER_ASYNC_PERCENT / 100).max(1);
    }

    /// `kyber_depth_updated` → `blk_mq_set_min_shallow_depth(q, kqd->async_depth)`.
    fn min_shallow_depth(&self) -> Option<u32> {
        Some(self.async_depth)
    }

    fn next_timer(&self) -> Option<Ns> {
        self.timer_expires.map(jiffy_time)
    }

    /// The timer wheel fired `kqd->timer`. Kyber's timer does not run the queue.
    fn timer(&mut self, _pool: &mut RqPool, now: Ns) -> bool {
        let now_j = jiffies(now);
        if let Some(t) = self.timer_expires {
            if time_after_eq(now_j, t) {
                self.timer_expires = None;
                self.kyber_timer_fn(now_j);
            }
        }
        false
    }

    /// A freed token of a domain the hctx waits for woke it (`kyber_domain_wake` → run the
    /// hardware queue): the completion runs the queue. A completion in another domain frees
    /// no token the hctx waits for and wakes nothing.
    fn wants_run_on_completion(&self) -> bool {
        self.woken
    }

    fn tunables(&self) -> Vec<Tunable> {
        tunables_of(KYBER_TUNABLES, |name| match name {
            "read_lat_nsec" => self.latency_targets[KYBER_READ].to_string(),
            _ => self.latency_targets[KYBER_WRITE].to_string(),
        })
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        let v = parse_tunable(KYBER_TUNABLES, "kyber", name, value)?;
        match name {
            "read_lat_nsec" => self.latency_targets[KYBER_READ] = v,
            _ => self.latency_targets[KYBER_WRITE] = v,
        }
        Ok(())
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("read_depth", self.depth[KYBER_READ] as u64),
            ("write_depth", self.depth[KYBER_WRITE] as u64),
            ("discard_depth", self.depth[KYBER_DISCARD] as u64),
            ("other_depth", self.depth[KYBER_OTHER] as u64),
            ("throttled", self.stat_throttled),
            ("timer_runs", self.stat_timer),
        ]
    }
}
