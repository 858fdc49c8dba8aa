//! Driver tests with a hand-written event loop and a minimal block layer: a FIFO dispatch list,
//! driver tags, restart on completion, resumption of blocked contexts and `run_queues`.

use crate::*;
use blksim_block::driver::{BlkStatus, CallCtx, Driver, DriverOut};
use blksim_block::request::{flags, Op, Request, RqId, RqPool};
use blksim_core::{EventQueue, Ns, Rng};
use blksim_device::emmc::ParamMap;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

#[derive(Clone, Copy, Debug)]
enum Ev {
    Drv(u64),
    Unblock(u32),
    Run,
    /// Open-loop arrival of `to_submit`'s next request.
    Arrive,
}

/// What a test request is.
#[derive(Clone, Copy, Debug)]
struct Spec {
    op: Op,
    sector: u64,
    nr: u32,
    fua: bool,
    /// Fixed tag (crafted sequences); None = lowest free tag (or random with `rng_tags`).
    tag: Option<u32>,
}

struct H {
    drv: MmcDriver,
    pool: RqPool,
    q: EventQueue<Ev>,
    /// Requests with a tag, waiting for `queue_rq` (`hctx->dispatch` + software queue).
    dispatch: VecDeque<RqId>,
    /// Requests waiting for a tag.
    no_tag: VecDeque<Spec>,
    free_tags: BTreeSet<u32>,
    /// Unique id of the live request behind each RqId (ids are recycled by the slab).
    uid: BTreeMap<RqId, u64>,
    next_uid: u64,
    done_count: BTreeMap<u64, u32>,
    done_order: Vec<u64>,
    blocked: BTreeSet<u32>,
    next_ctx: u32,
    outstanding_async: u32,
    max_async: u32,
    limit: u32,
    rng_tags: Option<Rng>,
    /// Closed-loop generator: on every completion submit `gen()` (if any left).
    to_submit: VecDeque<Spec>,
    closed_loop: bool,
    latency: BTreeMap<u64, (Ns, Ns)>,
}

impl H {
    fn new(params: &ParamMap) -> H {
        let drv = build_mmc(params).unwrap();
        let depth = drv.queue_depth();
        let limit = drv.async_limit();
        H {
            drv,
            pool: RqPool::new(),
            q: EventQueue::new(),
            dispatch: VecDeque::new(),
            no_tag: VecDeque::new(),
            free_tags: (0..depth).collect(),
            uid: BTreeMap::new(),
            next_uid: 0,
            done_count: BTreeMap::new(),
            done_order: Vec::new(),
            blocked: BTreeSet::new(),
            next_ctx: 0,
            outstanding_async: 0,
            max_async: 0,
            limit,
            rng_tags: None,
            to_submit: VecDeque::new(),
            closed_loop: false,
            latency: BTreeMap::new(),
        }
    }

    fn submit(&mut self, s: Spec, now: Ns) {
        let tag = match s.tag {
            Some(t) => {
                assert!(self.free_tags.remove(&t), "crafted tag {t} is busy");
                Some(t)
            }
            None => match self.rng_tags.as_mut() {
                Some(r) if !self.free_tags.is_empty() => {
                    let i = r.below(self.free_tags.len() as u64) as usize;
                    let t = *self.free_tags.iter().nth(i).unwrap();
                    self.free_tags.remove(&t);
                    Some(t)
                }
                _ => self.free_tags.pop_first(),
            },
        };
        let Some(tag) = tag else {
            self.no_tag.push_back(s);
            return;
        };
        let rq = self.pool.alloc_rq(Request {
            op: s.op,
            flags: if s.fua { flags::REQ_FUA } else { 0 },
            sector: s.sector,
            nr_sectors: s.nr,
            nr_segments: s.nr.div_ceil(8).max(1) as u16,
            tag: tag as i32,
            alloc_time: now,
            ..Default::default()
        });
        self.uid.insert(rq, self.next_uid);
        self.latency.insert(self.next_uid, (now, 0));
        self.next_uid += 1;
        self.dispatch.push_back(rq);
        self.q.push(now, Ev::Run);
    }

    fn process(&mut self, out: &mut DriverOut, now: Ns) {
        for (t, p) in out.events.drain(..) {
            self.q.push(t, Ev::Drv(p));
        }
        for (ctx, t) in out.unblock.drain(..) {
            assert!(t >= now);
            self.q.push(t, Ev::Unblock(ctx));
        }
        for (_, t) in out.run_queues.drain(..) {
            self.q.push(t, Ev::Run);
        }
        for (rq, st) in out.completions.drain(..) {
            assert_eq!(st, BlkStatus::Ok);
            let r = self.pool.free_rq_shell(rq);
            let u = self
                .uid
                .remove(&rq)
                .expect("completion of an unknown request");
            *self.done_count.entry(u).or_default() += 1;
            self.done_order.push(u);
            self.latency.get_mut(&u).unwrap().1 = now;
            if matches!(r.op, Op::Read | Op::Write) {
                self.outstanding_async -= 1;
            }
            self.free_tags.insert(r.tag as u32);
            // Restart: re-run the queue on every completion.
            self.q.push(now, Ev::Run);
            if let Some(s) = self.no_tag.pop_front() {
                self.submit(s, now);
            }
            if self.closed_loop {
                if let Some(s) = self.to_submit.pop_front() {
                    self.submit(s, now);
                }
            }
        }
        out.notes.clear();
        self.drv.check_invariants();
    }

    /// A dispatch run in context `ctx` (a fresh one or a resumed one).
    fn run(&mut self, ctx: u32, now: Ns) {
        loop {
            let Some(&rq) = self.dispatch.front() else {
                return;
            };
            let mut out = DriverOut {
                tracing: true,
                ..Default::default()
            };
            let last = self.dispatch.len() == 1;
            let st = self.drv.queue_rq(
                &self.pool,
                rq,
                0,
                last,
                CallCtx { id: ctx, cpu: 0 },
                now,
                &mut out,
            );
            match st {
                BlkStatus::Ok | BlkStatus::Blocked => {
                    self.dispatch.pop_front();
                    if matches!(self.pool.get(rq).op, Op::Read | Op::Write) {
                        self.outstanding_async += 1;
                        self.max_async = self.max_async.max(self.outstanding_async);
                        assert!(
                            self.outstanding_async <= self.limit,
                            "{} ASYNC accepted and not completed > {}",
                            self.outstanding_async,
                            self.limit
                        );
                    }
                }
                BlkStatus::Resource | BlkStatus::DevResource => {
                    self.process(&mut out, now);
                    return;
                }
                BlkStatus::IoErr => panic!("io error"),
            }
            self.process(&mut out, now);
            if st == BlkStatus::Blocked {
                self.blocked.insert(ctx);
                return;
            }
        }
    }

    fn step(&mut self) -> bool {
        let Some((now, e)) = self.q.pop() else {
            return false;
        };
        self.handle(now, e);
        true
    }

    fn handle(&mut self, now: Ns, e: Ev) {
        match e {
            Ev::Drv(p) => {
                let mut out = DriverOut {
                    tracing: true,
                    ..Default::default()
                };
                self.drv.on_event(p, &self.pool, now, &mut out);
                self.process(&mut out, now);
            }
            Ev::Unblock(ctx) => {
                assert!(
                    self.blocked.remove(&ctx),
                    "unblock of a context that is not blocked"
                );
                self.run(ctx, now);
            }
            Ev::Arrive => {
                if let Some(s) = self.to_submit.pop_front() {
                    self.submit(s, now);
                }
            }
            Ev::Run => {
                if !self.blocked.is_empty() && self.dispatch.is_empty() {
                    return;
                }
                let ctx = 1000 + self.next_ctx;
                self.next_ctx += 1;
                self.run(ctx, now);
            }
        }
    }

    fn run_to_end(&mut self, max_events: u64) {
        let mut n = 0;
        while self.step() {
            n += 1;
            assert!(n < max_events, "no progress");
        }
    }

    fn assert_all_done_once(&self) {
        assert_eq!(self.done_count.len() as u64, self.next_uid, "lost requests");
        assert!(self.done_count.values().all(|&c| c == 1), "completed twice");
        assert!(self.dispatch.is_empty() && self.no_tag.is_empty() && self.blocked.is_empty());
        assert!(self.uid.is_empty());
        assert_eq!(self.pool.live(), (0, 0));
    }
}

fn params(queue: &str) -> ParamMap {
    ParamMap::new()
        .with("host.queue", queue)
        .with("card.capacity_mib", "256")
}

fn sd(queue: &str, mode: &str) -> ParamMap {
    params(queue)
        .with("card.kind", "sd")
        .with("host.bus_mode", mode)
        .with("host.bus_width", "4")
}

/// An SD card takes an SD bus mode and the legacy or hsq path; an eMMC takes an eMMC mode.
#[test]
fn sd_cards_take_sd_modes_and_no_cqe() {
    let err = |p: ParamMap| build_mmc(&p).err().unwrap_or_default();
    assert!(build_mmc(&sd("hsq", "sdr104")).is_ok());
    assert!(err(sd("cqe", "sdr104")).contains("command queue engine"));
    assert!(err(sd("hsq", "hs200")).contains("needs an SD bus mode"));
    assert!(err(params("hsq")
        .with("host.bus_mode", "sdr104")
        .with("host.bus_width", "4"))
    .contains("set card.kind=sd"));
    assert!(err(sd("hsq", "sdr104").with("host.bus_width", "8")).contains("not allowed"));
}

fn rd(sector: u64) -> Spec {
    Spec {
        op: Op::Read,
        sector,
        nr: 8,
        fua: false,
        tag: None,
    }
}
fn wr(sector: u64) -> Spec {
    Spec {
        op: Op::Write,
        sector,
        nr: 8,
        fua: false,
        tag: None,
    }
}

/// Admission limits hold at every instant and every request completes once, for each path,
/// with 64 requests queued at once (the block layer keeps retrying after RESOURCE).
#[test]
fn admission_limits_hold_for_every_path() {
    for (queue, extra, expect_max) in [
        ("legacy", None, 2),
        ("hsq", None, 3),
        ("hsq", Some(("host.hsq_depth", "4")), 5),
        ("cqe", None, 31),
    ] {
        let mut p = params(queue);
        if let Some((k, v)) = extra {
            p.set(k, v);
        }
        let mut h = H::new(&p);
        for i in 0..200u64 {
            let s = if i % 3 == 0 { wr(i * 64) } else { rd(i * 64) };
            h.submit(s, 0);
        }
        h.run_to_end(1_000_000);
        h.assert_all_done_once();
        assert_eq!(h.max_async, expect_max, "{queue} {extra:?}");
        let st = h.drv.stats();
        let get = |k: &str| st.entries.iter().find(|(n, _)| n == k).unwrap().1;
        assert_eq!(get("mmc_max_in_flight_async"), expect_max as u64);
        assert_eq!(get("mmc_completed"), 200);
        if queue == "legacy" {
            assert!(get("mmc_blocked_dispatch") > 0 && get("mmc_legacy_wakeups") > 0);
            assert!(get("mmc_cmd13_polls") > 0, "legacy writes poll CMD13");
        }
    }
}

/// Dynamic depth: with 4 KiB writes queued, hsq admits up to HSQ_PERFORMANCE_DEPTH + 1 = 6;
/// with reads only it stays at 3.
#[test]
fn hsq_dynamic_depth_raises_to_performance_depth_for_4k_writes() {
    for (write, expect) in [(true, 6), (false, 3)] {
        let mut h = H::new(&params("hsq").with("host.hsq_dynamic_depth", "true"));
        for i in 0..300u64 {
            h.submit(if write { wr(i * 1024) } else { rd(i * 1024) }, 0);
        }
        h.run_to_end(1_000_000);
        h.assert_all_done_once();
        assert_eq!(h.max_async, expect, "write={write}");
    }
}

/// A crafted tag sequence: tag 60 is queued behind the request on the host while low tags keep
/// arriving. With the old scan, `next_tag + 1` or the lowest occupied slot always wins and tag 60
/// waits until the low tags stop; FIFO serves it second.
#[test]
fn scan_starves_a_high_tag_fifo_does_not() {
    let run = |policy: &str| -> (usize, u64) {
        let mut h = H::new(&params("hsq").with("host.hsq_next_tag", policy));
        // Host holds tag 1; tag 60 then tag 2 are queued (3 in flight = depth 2 + 1).
        h.submit(
            Spec {
                tag: Some(1),
                ..rd(0)
            },
            0,
        );
        h.submit(
            Spec {
                tag: Some(60),
                ..rd(60 * 1024)
            },
            0,
        );
        h.submit(
            Spec {
                tag: Some(2),
                ..rd(2048)
            },
            0,
        );
        // Afterwards every completion brings a new low-tag request (tags 1..3 cycle as they free).
        h.closed_loop = true;
        for i in 0..500u64 {
            h.to_submit.push_back(rd(4096 + i * 64));
        }
        h.run_to_end(10_000_000);
        h.assert_all_done_once();
        // uid 1 is the tag-60 request.
        let pos = h.done_order.iter().position(|&u| u == 1).unwrap();
        let (a, d) = h.latency[&1];
        (pos, d - a)
    };
    let (scan_pos, scan_lat) = run("scan");
    let (fifo_pos, fifo_lat) = run("fifo");
    assert!(fifo_pos <= 2, "fifo served tag 60 at position {fifo_pos}");
    assert!(scan_pos >= 400, "scan served tag 60 at position {scan_pos}");
    assert!(
        scan_lat > 50 * fifo_lat,
        "scan {scan_lat} ns vs fifo {fifo_lat} ns"
    );
}

/// Random stress for every path and policy: random ops (reads, writes, FUA writes, flushes,
/// discards), sizes, random tags, closed-loop arrivals. No request may be lost or completed
/// twice; the driver's invariants are checked after every call.
#[test]
fn stress_no_request_lost_or_completed_twice() {
    let configs: Vec<ParamMap> = vec![
        params("legacy"),
        params("legacy")
            .with("host.hw_busy_detect", "false")
            .with("host.cmd23", "false"),
        params("hsq"),
        params("hsq").with("host.hsq_next_tag", "scan"),
        params("hsq").with("host.hsq_dynamic_depth", "true"),
        params("cqe"),
        params("cqe")
            .with("card.cq_policy", "fifo")
            .with("host.cqe_dcmd", "false"),
        params("legacy")
            .with("card.ftl", "au")
            .with("card.cache_kib", "0")
            .with("host.bus_mode", "hs")
            .with("host.bus_width", "4"),
        params("cqe")
            .with("card.prefill_pct", "100")
            .with("card.op_pct", "1")
            .with("card.pages_per_block", "16")
            .with("card.cache_kib", "256"),
        // SD cards, on the two host paths the kernel has for them.
        sd("legacy", "sdr104").with("card.ftl", "au"),
        sd("hsq", "ddr50").with("host.cmd23", "false"),
        sd("hsq", "sd_hs").with("host.bus_width", "1"),
    ];
    let mut cover: BTreeMap<String, u64> = BTreeMap::new();
    for (ci, p) in configs.iter().enumerate() {
        for seed in 0..3u64 {
            let mut rng = Rng::from_seed(seed * 100 + ci as u64);
            let mut h = H::new(p);
            h.rng_tags = Some(Rng::from_seed(seed + 7));
            h.closed_loop = true;
            let sectors = 256 * 2048;
            for _ in 0..600 {
                let k = rng.below(100);
                let nr = [1u32, 8, 8, 8, 16, 64, 256][rng.below(7) as usize];
                let sector = rng.below(sectors - 256) & !7;
                let s = match k {
                    0..=44 => rd(sector),
                    45..=89 => wr(sector),
                    90..=93 => Spec {
                        fua: true,
                        ..wr(sector)
                    },
                    94..=97 => Spec {
                        op: Op::Flush,
                        sector: 0,
                        nr: 0,
                        fua: false,
                        tag: None,
                    },
                    _ => Spec {
                        op: Op::Discard,
                        sector,
                        nr: 2048,
                        fua: false,
                        tag: None,
                    },
                };
                let s = if matches!(s.op, Op::Read | Op::Write) {
                    Spec { nr, ..s }
                } else {
                    s
                };
                h.to_submit.push_back(s);
            }
            match seed {
                // Closed loop, 16 submitters.
                0 => {
                    for _ in 0..16 {
                        let s = h.to_submit.pop_front().unwrap();
                        h.submit(s, 0);
                    }
                }
                // Open loop: arrivals at random gaps, so requests land between a completion
                // IRQ and `complete_work`, while a dispatcher sleeps, while SYNC waits...
                _ => {
                    h.closed_loop = false;
                    let mut t = 0;
                    for _ in 0..600 {
                        t += rng.below(if seed == 1 { 60_000 } else { 3_000_000 });
                        h.q.push(t, Ev::Arrive);
                    }
                }
            }
            h.run_to_end(10_000_000);
            h.assert_all_done_once();
            assert_eq!(h.next_uid, 600);
            assert!(h.max_async <= h.limit);
            let st = h.drv.stats();
            for (k, v) in st.entries {
                *cover.entry(k).or_insert(0) += v;
            }
        }
    }
    // Every driver path was exercised.
    for k in [
        "mmc_legacy_complete_work",
        "mmc_legacy_took_done",
        "mmc_legacy_lock_waits",
        "mmc_legacy_wakeups",
        "mmc_resource_busy",
        "mmc_resource_hsq_depth",
        "mmc_resource_dcmd",
        "mmc_accepted_sync",
        "mmc_accepted_dcmd",
        "mmc_cqe_reordered",
        "mmc_hsq_depth_raises",
        "card_flushes",
        "card_discards",
        "card_write_through",
        "ftl_au_merges",
        "ftl_gc_blocks",
    ] {
        assert!(
            cover.get(k).copied().unwrap_or(0) > 0,
            "stress never exercised {k}: {cover:?}"
        );
    }
}

/// hsq starts the next request from the completion path: back-to-back requests are separated
/// on the bus by IRQ + request setup only, while legacy adds a wake-up (context switch) and, for
/// writes, a CMD13; so with the same card hsq finishes a queue of 4 KiB writes sooner.
#[test]
fn hsq_saves_the_wakeup_between_requests() {
    let finish = |queue: &str| {
        let mut h = H::new(&params(queue).with("card.cache_kib", "8192"));
        for i in 0..200u64 {
            h.submit(wr(i * 997 % 4096 * 8), 0);
        }
        h.run_to_end(1_000_000);
        h.assert_all_done_once();
        h.q.now()
    };
    let legacy = finish("legacy");
    let hsq = finish("hsq");
    // Per request the legacy path pays at least wakeup (25 us) + one CMD13 round trip more.
    assert!(legacy > hsq + 200 * 25_000, "legacy {legacy} hsq {hsq}");
}

/// The allocation-unit card behind the driver: random 4 KiB writes cost ~a unit rewrite each
/// while sequential writes do not (measurements §2 and §4 shape).
#[test]
fn au_card_random_writes_pay_the_unit_rewrite() {
    let p = params("legacy")
        .with("card.ftl", "au")
        .with("card.cache_kib", "0")
        .with("card.au_kib", "4096")
        .with("card.au_open", "2")
        // The pattern's own cost: no unit left open by earlier use to merge first.
        .with("card.state", "fresh");
    let run = |random: bool| {
        let mut h = H::new(&p);
        h.closed_loop = true;
        for i in 0..40u64 {
            let sector = if random {
                (i * 7919 % 60) * 8192 + 8 * (i % 5)
            } else {
                i * 8
            };
            h.to_submit.push_back(wr(sector));
        }
        let s = h.to_submit.pop_front().unwrap();
        h.submit(s, 0);
        h.run_to_end(1_000_000);
        h.assert_all_done_once();
        h.q.now() / 40
    };
    let seq = run(false);
    let rnd = run(true);
    assert!(
        rnd > 50 * seq,
        "random {rnd} ns/write vs sequential {seq} ns/write"
    );
}

/// 4 KiB random I/O with 20 closed-loop submitters on each path (formerly an ignored
/// calibration printout): hsq must beat legacy (it saves the wake-up per request, and for
/// writes the CMD13 round trip), and CQE must not fall behind hsq.
#[test]
fn path_rates_are_ordered() {
    let mut rate = BTreeMap::new();
    for queue in ["legacy", "hsq", "cqe"] {
        for write in [false, true] {
            let mut h = H::new(&params(queue).with("card.capacity_mib", "1024"));
            h.closed_loop = true;
            let mut rng = Rng::from_seed(1);
            for _ in 0..2_000 {
                let s = rng.below(1 << 18) * 8;
                h.to_submit.push_back(if write { wr(s) } else { rd(s) });
            }
            for _ in 0..20 {
                let s = h.to_submit.pop_front().unwrap();
                h.submit(s, 0);
            }
            h.run_to_end(10_000_000);
            h.assert_all_done_once();
            let iops = h.next_uid as f64 / (h.q.now() as f64 / 1e9);
            rate.insert((queue, write), iops);
        }
    }
    for write in [false, true] {
        let (l, hs, c) = (
            rate[&("legacy", write)],
            rate[&("hsq", write)],
            rate[&("cqe", write)],
        );
        assert!(
            hs > l * 1.05,
            "write={write}: hsq {hs:.0} vs legacy {l:.0} IOPS"
        );
        assert!(
            c >= hs * 0.95,
            "write={write}: cqe {c:.0} vs hsq {hs:.0} IOPS"
        );
    }
    // Writes gain more from hsq than reads (no CMD13 + wake-up per write).
    let gr = rate[&("hsq", false)] / rate[&("legacy", false)];
    let gw = rate[&("hsq", true)] / rate[&("legacy", true)];
    assert!(gw > gr, "write gain {gw:.2} <= read gain {gr:.2}");
}

/// `post_req` unmapping of reads (`host.dma_unmap_per_seg_ns`): exposed in full for a lone
/// read, hidden behind the next transfer inside a burst (only the last request's shows), and
/// free for writes (DMA_TO_DEVICE unmaps do no cache work).
#[test]
fn dma_unmap_is_hidden_inside_a_burst_and_exposed_at_its_end() {
    let big = |op: Op, sector: u64| Spec {
        op,
        sector,
        nr: 512, // 256 KiB = 64 segments
        fua: false,
        tag: None,
    };
    let finish = |unmap: &str, reqs: &[Spec]| {
        let p = params("legacy")
            .with("card.cache_kib", "8192")
            .with("host.dma_unmap_per_seg_ns", unmap);
        let mut h = H::new(&p);
        for s in reqs {
            h.submit(*s, 0);
        }
        h.run_to_end(1_000_000);
        h.assert_all_done_once();
        h.q.now()
    };
    let per_seg = 5_000u64;
    let u = 64 * per_seg;
    let one = [big(Op::Read, 0)];
    assert_eq!(finish("5000", &one) - finish("0", &one), u);
    let burst: Vec<Spec> = (0..4).map(|i| big(Op::Read, i * 512)).collect();
    let d = finish("5000", &burst) - finish("0", &burst);
    assert!(
        d >= u && d < 2 * u,
        "burst of 4: {d} ns more, one unmap is {u}"
    );
    let w = [big(Op::Write, 0)];
    assert_eq!(finish("5000", &w), finish("0", &w));
}

/// Legacy path with slow per-segment DMA map/unmap (as on the Ux500) and reads of many
/// segments, at random arrival gaps: the dispatcher is often still unmapping the previous
/// request (`mmc_blk_mq_post_req`) when its own request's IRQ comes, so `complete_work` takes
/// that request, and the next `queue_rq` arrives while `complete_work` holds `complete_lock`
/// but before the new request's prep is done. The request `complete_work` completes still
/// counts in `mq->in_flight`, so that dispatcher must stay inside `queue_rq` until the lock is
/// free: at most 2 ASYNC requests are ever accepted and not completed.
#[test]
fn legacy_dispatch_waits_for_complete_work_before_returning() {
    let p = params("legacy")
        .with("host.dma_map_per_seg_ns", "29000")
        .with("host.dma_unmap_per_seg_ns", "29000");
    let mut complete_work = 0;
    for seed in 0..20u64 {
        let mut rng = Rng::from_seed(seed);
        let mut h = H::new(&p);
        let mut t = 0;
        for _ in 0..300 {
            let nr = [8u32, 96, 256, 768][rng.below(4) as usize];
            let sector = rng.below(1 << 18) * 8;
            h.to_submit.push_back(Spec {
                op: if rng.below(4) == 0 {
                    Op::Write
                } else {
                    Op::Read
                },
                nr,
                ..rd(sector)
            });
            t += rng.below(4_000_000);
            h.q.push(t, Ev::Arrive);
        }
        h.run_to_end(10_000_000);
        h.assert_all_done_once();
        assert!(h.max_async <= 2, "seed {seed}: {} ASYNC", h.max_async);
        let st = h.drv.stats();
        let get = |k: &str| st.entries.iter().find(|(n, _)| n == k).unwrap().1;
        complete_work += get("mmc_legacy_complete_work");
    }
    assert!(complete_work > 0);
}

/// Legacy path with a wake-up latency longer than a transfer (`host.wakeup_ns` 1.25 ms): a
/// `complete_work` queued for an earlier request (which the dispatcher then completed itself)
/// runs between the next request's IRQ and the sleeping dispatcher's wake-up, and completes
/// `mq->complete_req` first. The woken dispatcher then finds no previous request
/// (`mmc_blk_mq_complete_prev_req` with `complete_req` NULL) and just starts its own.
#[test]
fn legacy_wake_after_complete_work_took_the_request() {
    let p = params("legacy")
        .with("host.wakeup_ns", "1249999")
        .with("host.dma_unmap_per_seg_ns", "29000");
    for seed in 0..20u64 {
        let mut rng = Rng::from_seed(seed);
        let mut h = H::new(&p);
        h.closed_loop = true;
        for _ in 0..400 {
            let nr = [8u32, 8, 12, 256][rng.below(4) as usize];
            h.to_submit.push_back(Spec {
                nr,
                ..rd(rng.below(1 << 18) * 8)
            });
        }
        for _ in 0..2 {
            let s = h.to_submit.pop_front().unwrap();
            h.submit(s, 0);
        }
        h.run_to_end(10_000_000);
        h.assert_all_done_once();
        assert_eq!(h.next_uid, 400);
    }
}

/// A dispatching context runs on its own CPU clock, which may be past the time
/// `complete_work` ends its request while that completion is not delivered yet. The request
/// still counts in `mq->in_flight` until then, so the dispatcher waits for it inside
/// `queue_rq` whatever its clock says: at most 2 ASYNC requests are ever accepted.
#[test]
fn legacy_dispatch_on_a_cpu_clock_ahead_waits_for_complete_work() {
    let p = params("legacy").with("host.dma_unmap_per_seg_ns", "100000");
    let mut h = H::new(&p);
    let big = |sector| Spec {
        nr: 512,
        ..rd(sector)
    };
    // The dispatcher is still unmapping the first read when the second one's IRQ comes:
    // complete_work takes the second read (and unmaps it for 6.4 ms).
    h.submit(big(0), 0);
    h.submit(big(4096), 0);
    let get = |h: &H, k: &str| {
        let st = h.drv.stats();
        st.entries.iter().find(|(n, _)| n == k).unwrap().1
    };
    let (done_at, held) = loop {
        let (t, ev) = h.q.pop().expect("complete_work never ran");
        // `EV_DONE` (kind 5) after complete_work took the second read.
        if matches!(ev, Ev::Drv(pl) if (pl >> 32) & 0xff == 5)
            && get(&h, "mmc_legacy_complete_work") > 0
        {
            break (t, ev);
        }
        h.handle(t, ev);
    };
    assert!(h.blocked.is_empty());
    // Two more reads dispatched by a context whose clock is 1 ms past that completion.
    let ahead = done_at + 1_000_000;
    h.submit(rd(8192), ahead);
    h.submit(rd(12288), ahead);
    h.run(2000, ahead);
    h.handle(done_at, held);
    h.run_to_end(1_000_000);
    h.assert_all_done_once();
    assert!(h.max_async <= 2);
}
