//! `RequestQueue` on its own, against closed forms: merges under a plug, tag exhaustion and
//! the wake-up of sleeping submitters, and the `BLK_STS_RESOURCE` re-run after
//! `BLK_MQ_RESOURCE_DELAY` (3 ms), with a fake driver of fixed service time and no elevator.

use blksim_block::driver::{CallCtx, DriverOut};
use blksim_block::queue::{BlkOut, Submit};
use blksim_block::request::{IoPrioClass, NO_BIO};
use blksim_block::stage::Stage;
use blksim_block::{Bio, BlkStatus, Driver, Op, QueueLimits, RequestQueue, RqId, RqPool};
use blksim_core::{EventQueue, Ns};

const US: Ns = 1_000;

/// One hardware queue of `depth` tags; every request takes `lat`. The first `busy` calls of
/// `queue_rq` answer `BLK_STS_RESOURCE`. Records the size of each request it sees.
struct FakeDrv {
    depth: u32,
    lat: Ns,
    busy: u32,
    seen: Vec<u32>,
    /// The first `requeue` commands that reach the device come back for another try
    /// (`blk_mq_requeue_request`, as the MMC driver's recovery does).
    requeue: u32,
}

impl Driver for FakeDrv {
    fn name(&self) -> &str {
        "fake"
    }
    fn nr_hw_queues(&self) -> u16 {
        1
    }
    fn queue_depth(&self) -> u32 {
        self.depth
    }
    fn capacity_sectors(&self) -> u64 {
        1 << 24
    }
    fn queue_rq(
        &mut self,
        pool: &RqPool,
        rq: RqId,
        _hctx: u16,
        _last: bool,
        _ctx: CallCtx,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus {
        if self.busy > 0 {
            self.busy -= 1;
            return BlkStatus::Resource;
        }
        self.seen.push(pool.get(rq).nr_sectors);
        out.events.push((now + self.lat, rq as u64));
        BlkStatus::Ok
    }
    fn on_event(&mut self, payload: u64, _pool: &RqPool, _now: Ns, out: &mut DriverOut) {
        if self.requeue > 0 {
            self.requeue -= 1;
            out.requeues.push(payload as RqId);
            return;
        }
        out.completions.push((payload as RqId, BlkStatus::Ok));
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Drv(u64),
    HwRun(u16, Ns),
}

fn bio(i: u64, sector: u64, now: Ns) -> Bio {
    Bio {
        token: i,
        op: Op::Write,
        flags: 0,
        sector,
        nr_sectors: 8,
        nr_segments: 1,
        task: i as u32,
        cpu: 0,
        ioprio: IoPrioClass::Be,
        version: i + 1,
        queue_time: now,
        next: NO_BIO,
    }
}

struct Run {
    q: RequestQueue,
    /// The CPU/lock model the queue borrows (off: the ideal platform).
    cpus: blksim_block::cpu::CpuModel,
    evq: EventQueue<Ev>,
    out: BlkOut,
    done: Vec<Ns>,
}

impl Run {
    fn new(drv: &FakeDrv, n: usize) -> Self {
        let mut rng = blksim_core::Rng::from_seed(1);
        Run {
            q: RequestQueue::new(QueueLimits::default(), None, 1, drv.depth, 1, &mut rng),
            cpus: Default::default(),
            evq: EventQueue::new(),
            out: BlkOut::default(),
            done: vec![Ns::MAX; n],
        }
    }

    /// Move what the queue left in `out` onto the event queue; record completions; retry
    /// woken submitters.
    fn settle(&mut self, drv: &mut FakeDrv, now: Ns) {
        loop {
            let mut progress = false;
            for (at, p) in self.out.drv.events.drain(..) {
                self.evq.push(at.max(now), Ev::Drv(p));
                progress = true;
            }
            if !self.out.drv.completions.is_empty() {
                self.q
                    .drain_driver_completions(&mut self.cpus, drv, now, &mut self.out);
                progress = true;
            }
            if !self.out.drv.requeues.is_empty() {
                self.q.drain_driver_requeues(now, &mut self.out);
                progress = true;
            }
            for (h, d) in self.out.hw_runs.drain(..) {
                self.evq.push(now + d, Ev::HwRun(h, now + d));
                progress = true;
            }
            let woken: Vec<u32> = self.out.task_unblocked.drain(..).collect();
            for task in woken {
                let mut t = now;
                let _: Submit =
                    self.q
                        .resume_tag_waiter(&mut self.cpus, task, drv, &mut t, &mut self.out);
                progress = true;
            }
            for (tok, st) in self.out.bio_done.drain(..) {
                assert_eq!(st, BlkStatus::Ok);
                assert_eq!(
                    self.done[tok as usize],
                    Ns::MAX,
                    "bio {tok} completed twice"
                );
                self.done[tok as usize] = now;
                progress = true;
            }
            if !progress {
                break;
            }
        }
    }

    fn finish(mut self, drv: &mut FakeDrv) -> (RequestQueue, Vec<Ns>) {
        while let Some((now, ev)) = self.evq.pop() {
            match ev {
                Ev::Drv(p) => {
                    drv.on_event(p, &self.q.pool, now, &mut self.out.drv);
                    self.q
                        .drain_driver_completions(&mut self.cpus, drv, now, &mut self.out);
                }
                Ev::HwRun(h, at) => {
                    self.q
                        .run_work(&mut self.cpus, h, at, 0, drv, now, &mut self.out)
                }
            }
            self.settle(drv, now);
        }
        assert!(self.done.iter().all(|&d| d != Ns::MAX), "{:?}", self.done);
        assert!(self.q.quiescent());
        (self.q, self.done)
    }
}

/// 32 contiguous 4 KiB bios under one plug (`BLK_MAX_REQUEST_COUNT`, 128 KiB): the plug
/// merges them into one request, 31 merges, which the driver sees as 256 sectors.
#[test]
fn contiguous_bios_under_a_plug_become_one_request() {
    let mut drv = FakeDrv {
        depth: 32,
        lat: 10 * US,
        busy: 0,
        seen: Vec::new(),
        requeue: 0,
    };
    let mut r = Run::new(&drv, 32);
    r.q.start_plug(0);
    for i in 0..32u64 {
        let mut b = bio(i, i * 8, 0);
        b.task = 0;
        let _ = r.q.submit_bio(&mut r.cpus, b, &mut drv, 0, &mut r.out);
    }
    let mut t = 0;
    r.q.finish_plug(&mut r.cpus, 0, &mut drv, &mut t, &mut r.out);
    r.settle(&mut drv, 0);
    let (q, done) = r.finish(&mut drv);
    assert_eq!(drv.seen, vec![256]);
    assert_eq!(q.stats.plug_merges, 31);
    assert!(done.iter().all(|&d| d == 10 * US));
}

/// Without a plug every bio is issued on its own (`blk_mq_try_issue_directly`).
#[test]
fn unplugged_bios_are_issued_one_by_one() {
    let mut drv = FakeDrv {
        depth: 32,
        lat: 10 * US,
        busy: 0,
        seen: Vec::new(),
        requeue: 0,
    };
    let mut r = Run::new(&drv, 8);
    for i in 0..8u64 {
        let _ =
            r.q.submit_bio(&mut r.cpus, bio(i, i * 8, 0), &mut drv, 0, &mut r.out);
        r.settle(&mut drv, 0);
    }
    let (q, _) = r.finish(&mut drv);
    assert_eq!(drv.seen, vec![8; 8]);
    assert_eq!(q.stats.plug_merges, 0);
}

/// 3 x depth bios at once on `depth` tags: the submitters beyond the tags sleep in
/// `blk_mq_get_tag` and are woken as tags come back, so bio i completes at
/// (i / depth + 1) x latency, and `tag_waits` counts the sleepers.
#[test]
fn tag_exhaustion_serves_in_waves_of_the_depth() {
    let depth = 4;
    let mut drv = FakeDrv {
        depth,
        lat: 10 * US,
        busy: 0,
        seen: Vec::new(),
        requeue: 0,
    };
    let n = 3 * depth as usize;
    let mut r = Run::new(&drv, n);
    for i in 0..n as u64 {
        let _ =
            r.q.submit_bio(&mut r.cpus, bio(i, i * 64, 0), &mut drv, 0, &mut r.out);
        r.settle(&mut drv, 0);
    }
    let (q, done) = r.finish(&mut drv);
    for (i, &d) in done.iter().enumerate() {
        assert_eq!(d, (i as Ns / depth as Ns + 1) * 10 * US, "bio {i}");
    }
    assert_eq!(q.stats.tag_waits, (n - depth as usize) as u64);
}

/// `queue_rq` answering `BLK_STS_RESOURCE` with nothing else in flight. The direct issue's
/// failure puts the request on `hctx->dispatch` and runs the queue at once
/// (`blk_mq_try_issue_directly`); that run marks `SCHED_RESTART` and fails again, and as no
/// completion will restart the queue, `blk_mq_dispatch_rq_list` re-runs it after
/// `BLK_MQ_RESOURCE_DELAY` (3 ms). The request then completes one latency later.
#[test]
fn resource_busy_reruns_after_three_milliseconds() {
    for (busy, want) in [(1, 10 * US), (2, 3_000 * US + 10 * US)] {
        let mut drv = FakeDrv {
            depth: 8,
            lat: 10 * US,
            busy,
            seen: Vec::new(),
            requeue: 0,
        };
        let mut r = Run::new(&drv, 1);
        let _ =
            r.q.submit_bio(&mut r.cpus, bio(0, 0, 0), &mut drv, 0, &mut r.out);
        r.settle(&mut drv, 0);
        let (q, done) = r.finish(&mut drv);
        assert_eq!(done, vec![want], "busy {busy}");
        assert_eq!(q.stats.queue_rq_resource, busy as u64);
    }
}

/// A command the driver gives back spent its failed attempt at the driver, not in the block
/// layer: the stage spans (what the report's queue depths integrate) say so, and together
/// they cover the request's whole life once.
#[test]
fn a_requeued_attempt_is_driver_time() {
    let mut drv = FakeDrv {
        depth: 4,
        lat: 10 * US,
        busy: 0,
        seen: Vec::new(),
        requeue: 1,
    };
    let mut r = Run::new(&drv, 1);
    r.out.spans.on = true;
    let _ =
        r.q.submit_bio(&mut r.cpus, bio(0, 0, 0), &mut drv, 0, &mut r.out);
    r.settle(&mut drv, 0);
    // `finish` drains the events; the spans stay in `out` (nothing takes them here).
    let mut spans = Vec::new();
    while let Some((now, ev)) = r.evq.pop() {
        match ev {
            Ev::Drv(p) => {
                drv.on_event(p, &r.q.pool, now, &mut r.out.drv);
                r.q.drain_driver_completions(&mut r.cpus, &mut drv, now, &mut r.out);
            }
            Ev::HwRun(h, at) => {
                r.q.run_work(&mut r.cpus, h, at, 0, &mut drv, now, &mut r.out)
            }
        }
        r.settle(&mut drv, now);
        spans.append(&mut r.out.spans.stages);
    }
    assert_eq!(r.done[0], 20 * US, "two attempts of 10 us");
    let total = |st: Stage| -> Ns { spans.iter().filter(|s| s.0 == st).map(|s| s.2 - s.1).sum() };
    assert_eq!(total(Stage::Driver), 20 * US, "{spans:?}");
    assert_eq!(total(Stage::BlockLayer), 0, "{spans:?}");
}
