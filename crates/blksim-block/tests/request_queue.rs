//! `RequestQueue` on its own, against closed forms: merges under a plug, tag exhaustion and
//! the wake-up of sleeping submitters, and the `BLK_STS_RESOURCE` re-run after
//! `BLK_MQ_RESOURCE_DELAY` (3 ms), with a fake driver of fixed service time and no elevator.

use blksim_block::stage::Stage;
use blksim_block::testing::{Bench, FakeDrv};
use blksim_block::{Bio, Op, QueueLimits, RequestQueue};
use blksim_core::Ns;

const US: Ns = 1_000;

/// One hardware queue of `depth` tags; every request takes `lat`. The first `busy` calls of
/// `queue_rq` answer `BLK_STS_RESOURCE`; the first `requeue` commands come back once.
fn fake(depth: u32, lat: Ns, busy: u32, requeue: u32) -> FakeDrv {
    let mut d = FakeDrv::fixed(1, depth, lat);
    d.busy = busy;
    d.requeue = requeue;
    d
}

/// The size of each request the driver saw, in sectors.
fn sizes(drv: &FakeDrv) -> Vec<u32> {
    drv.seen.iter().map(|s| s.3).collect()
}

/// A 4 KiB write at `sector`, token and task `i`.
fn bio(i: u64, sector: u64, now: Ns) -> Bio {
    let mut b = Bench::bio(i, Op::Write, 0, sector, 8, now);
    b.task = i as u32;
    b
}

/// A queue without an elevator on `drv`'s tags, for `n` bios.
fn bench(drv: &FakeDrv, n: usize) -> Bench {
    let mut rng = blksim_core::Rng::from_seed(1);
    Bench::new(
        RequestQueue::new(QueueLimits::default(), None, 1, drv.depth, 1, &mut rng),
        n,
    )
}

/// 32 contiguous 4 KiB bios under one plug (`BLK_MAX_REQUEST_COUNT`, 128 KiB): the plug
/// merges them into one request, 31 merges, which the driver sees as 256 sectors.
#[test]
fn contiguous_bios_under_a_plug_become_one_request() {
    let mut drv = fake(32, 10 * US, 0, 0);
    let mut r = bench(&drv, 32);
    r.q.start_plug(0);
    for i in 0..32u64 {
        let mut b = bio(i, i * 8, 0);
        b.task = 0;
        let _ = r.q.submit_bio(&mut r.cpus, b, &mut drv, 0, &mut r.out);
    }
    let mut t = 0;
    r.q.finish_plug(&mut r.cpus, 0, &mut drv, &mut t, &mut r.out);
    r.settle(&mut drv, 0);
    r.finish(&mut drv);
    let (q, done) = (&r.q, &r.done);
    assert_eq!(sizes(&drv), vec![256]);
    assert_eq!(q.stats.plug_merges, 31);
    assert!(done.iter().all(|&d| d == 10 * US));
}

/// Without a plug every bio is issued on its own (`blk_mq_try_issue_directly`).
#[test]
fn unplugged_bios_are_issued_one_by_one() {
    let mut drv = fake(32, 10 * US, 0, 0);
    let mut r = bench(&drv, 8);
    for i in 0..8u64 {
        let _ = r.submit(&mut drv, bio(i, i * 8, 0), 0);
    }
    r.finish(&mut drv);
    let q = &r.q;
    assert_eq!(sizes(&drv), vec![8; 8]);
    assert_eq!(q.stats.plug_merges, 0);
}

/// 3 x depth bios at once on `depth` tags: the submitters beyond the tags sleep in
/// `blk_mq_get_tag` and are woken as tags come back, so bio i completes at
/// (i / depth + 1) x latency, and `tag_waits` counts the sleepers.
#[test]
fn tag_exhaustion_serves_in_waves_of_the_depth() {
    let depth = 4;
    let mut drv = fake(depth, 10 * US, 0, 0);
    let n = 3 * depth as usize;
    let mut r = bench(&drv, n);
    for i in 0..n as u64 {
        let _ = r.submit(&mut drv, bio(i, i * 64, 0), 0);
    }
    r.finish(&mut drv);
    let (q, done) = (&r.q, &r.done);
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
        let mut drv = fake(8, 10 * US, busy, 0);
        let mut r = bench(&drv, 1);
        let _ = r.submit(&mut drv, bio(0, 0, 0), 0);
        r.finish(&mut drv);
        let (q, done) = (&r.q, &r.done);
        assert_eq!(*done, vec![want], "busy {busy}");
        assert_eq!(q.stats.queue_rq_resource, busy as u64);
    }
}

/// A command the driver gives back spent its failed attempt at the driver, not in the block
/// layer: the stage spans (what the report's queue depths integrate) say so, and together
/// they cover the request's whole life once.
#[test]
fn a_requeued_attempt_is_driver_time() {
    let mut drv = fake(4, 10 * US, 0, 1);
    let mut r = bench(&drv, 1);
    r.out.spans.on = true;
    let _ = r.submit(&mut drv, bio(0, 0, 0), 0);
    // The spans stay in `out`: nothing takes them on the bench.
    r.finish(&mut drv);
    let spans = &r.out.spans.stages;
    assert_eq!(r.done[0], 20 * US, "two attempts of 10 us");
    let total = |st: Stage| -> Ns { spans.iter().filter(|s| s.0 == st).map(|s| s.2 - s.1).sum() };
    assert_eq!(total(Stage::Driver), 20 * US, "{spans:?}");
    assert_eq!(total(Stage::BlockLayer), 0, "{spans:?}");
}

/// `blk_mq_run_hw_queues(q, true)` on CPU 2 (an elevator's timer, bfq's
/// `bfq_schedule_dispatch`) with requests waiting in the elevator: a single-queue elevator
/// (`QUEUE_FLAG_SQ_SCHED`) gets a run of CPU 2's hctx only (`blk_mq_get_sq_hctx`), an
/// mq-aware one a run of every hctx, since each has work (`blk_mq_hctx_has_pending`).
#[test]
fn run_hw_queues_runs_only_the_callers_hctx_for_a_single_queue_elevator() {
    use blksim_block::testing::Fifo;
    for (elv, want) in [
        (Fifo::default(), vec![2]),
        (Fifo::mq_aware(), vec![0, 1, 2, 3]),
    ] {
        // 4 hardware queues of one tag each, 4 CPUs.
        let mut drv = FakeDrv::fixed(4, 1, 10 * US);
        let mut rng = blksim_core::Rng::from_seed(1);
        let q = RequestQueue::new(
            QueueLimits::default(),
            Some(Box::new(elv)),
            4,
            1,
            4,
            &mut rng,
        );
        let mut r = Bench::new(q, 4);
        // Four reads from CPU 0 wait in the elevator (the hctx 0 run they asked for has not
        // been carried out).
        for i in 0..4u64 {
            let mut b = Bench::bio(i, Op::Read, 0, i * 64, 8, 0);
            b.task = i as u32;
            let _ = r.submit(&mut drv, b, 0);
        }
        assert!(drv.seen.is_empty());
        r.out.hw_runs.clear();
        let mut t = 1;
        r.q.run_hw_queues_async(2, &mut t, &mut r.out);
        let runs: Vec<u16> = r.out.hw_runs.iter().map(|&(h, _)| h).collect();
        assert_eq!(runs, want);
    }
}

/// An elevator whose timer the test moves, and which counts the times it was fired.
struct MovingTimer {
    at: Option<Ns>,
    fired: std::rc::Rc<std::cell::Cell<u32>>,
}

impl blksim_block::Elevator for MovingTimer {
    fn name(&self) -> &'static str {
        "moving-timer"
    }
    fn cpu_footprint(&self) -> blksim_block::CpuFootprint {
        blksim_block::CpuFootprint {
            cost_pct: 100,
            cold_lines: [0; 4],
            lock_per_insert: false,
            locked_finish: false,
        }
    }
    fn insert_requests(&mut self, _: &mut blksim_block::RqPool, _: &[u32], _: bool, _: Ns) {}
    fn dispatch_request(&mut self, _: &mut blksim_block::RqPool, _: Ns) -> Option<u32> {
        None
    }
    fn has_work(&self) -> bool {
        false
    }
    fn next_timer(&self) -> Option<Ns> {
        self.at
    }
    fn timer(&mut self, _: &mut blksim_block::RqPool, now: Ns) -> bool {
        self.fired.set(self.fired.get() + 1);
        assert!(self.at.is_some_and(|t| t <= now), "fired before its time");
        self.at = None;
        false
    }
}

/// A timer event for an expiry the elevator has since moved later (bfq re-arms its idle
/// timer) or cancelled does not fire the elevator's timer; one at or past the expiry does.
#[test]
fn a_moved_or_cancelled_elevator_timer_does_not_fire() {
    let fired = std::rc::Rc::new(std::cell::Cell::new(0));
    let elv = MovingTimer {
        at: Some(500 * US),
        fired: fired.clone(),
    };
    let mut rng = blksim_core::Rng::from_seed(1);
    let mut q = RequestQueue::new(
        QueueLimits::default(),
        Some(Box::new(elv)),
        1,
        8,
        1,
        &mut rng,
    );
    let mut out = blksim_block::queue::BlkOut::default();
    // The event of an earlier setting, at 100 us.
    q.elevator_timer(100 * US, 0, &mut out);
    assert_eq!(fired.get(), 0);
    q.elevator_timer(500 * US, 0, &mut out);
    assert_eq!(fired.get(), 1);
    // Cancelled (fired already): a late event does nothing.
    q.elevator_timer(600 * US, 0, &mut out);
    assert_eq!(fired.get(), 1);
}
