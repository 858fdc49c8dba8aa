//! Liveness of tag waits and hardware-queue restarts: every submitted bio completes, whatever
//! the depths. Each case is a small scripted run on a fake driver and a FIFO elevator shared
//! by the hardware queues (as mq-deadline and bfq are), checking the kernel mechanism that
//! keeps it from hanging.

use blksim_block::driver::{CallCtx, DriverOut};
use blksim_block::queue::{sbq_calc_wake_batch, BlkOut, Submit};
use blksim_block::request::{IoPrioClass, NO_BIO};
use blksim_block::{Bio, BlkStatus, Driver, Op, QueueLimits, RequestQueue, RqId, RqPool};
use blksim_core::{EventQueue, Ns};

const US: Ns = 1_000;

/// A driver with `nr_hw` queues of `depth` tags (or `depth` over all of them, `shared`);
/// reads take `read_lat`, the rest `write_lat`.
struct FakeDrv {
    nr_hw: u16,
    depth: u32,
    shared: bool,
    read_lat: Ns,
    write_lat: Ns,
}

impl Driver for FakeDrv {
    fn name(&self) -> &str {
        "fake"
    }
    fn nr_hw_queues(&self) -> u16 {
        self.nr_hw
    }
    fn queue_depth(&self) -> u32 {
        self.depth
    }
    fn shared_tags(&self) -> bool {
        self.shared
    }
    fn capacity_sectors(&self) -> u64 {
        1 << 20
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
        let lat = if pool.get(rq).op == Op::Read {
            self.read_lat
        } else {
            self.write_lat
        };
        out.events.push((now + lat, rq as u64));
        BlkStatus::Ok
    }
    fn on_event(&mut self, payload: u64, _pool: &RqPool, _now: Ns, out: &mut DriverOut) {
        out.completions.push((payload as RqId, BlkStatus::Ok));
    }
}

/// One FIFO for the whole queue (an elevator that ignores hardware queues, like mq-deadline
/// and bfq); async writes may take at most `async_depth` scheduler tags (`dd_limit_depth`).
struct Fifo {
    q: std::collections::VecDeque<RqId>,
    async_depth: Option<u32>,
}

impl blksim_block::Elevator for Fifo {
    fn cpu_footprint(&self) -> blksim_block::CpuFootprint {
        blksim_block::CpuFootprint {
            cost_pct: 100,
            cold_lines: [0; 4],
            lock_per_insert: false,
            locked_finish: false,
        }
    }
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn insert_requests(&mut self, _pool: &mut RqPool, rqs: &[RqId], _at_head: bool, _now: Ns) {
        self.q.extend(rqs.iter().copied());
    }
    fn dispatch_request(&mut self, _pool: &mut RqPool, _now: Ns) -> Option<RqId> {
        self.q.pop_front()
    }
    fn has_work(&self) -> bool {
        !self.q.is_empty()
    }
    fn limit_depth(&self, op: Op, sync: bool) -> Option<u32> {
        if sync && !op.is_write() {
            None
        } else {
            self.async_depth
        }
    }
    fn min_shallow_depth(&self) -> Option<u32> {
        self.async_depth
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Submit(usize),
    Drv(u64),
    HwRun(u16, Ns),
}

/// A bio the script submits: (time, task, cpu, op, sector).
type Plan = [(Ns, u32, u16, Op, u64)];

/// Run `plan`; returns each bio's completion time (panics if one never completes).
fn run(drv: &mut FakeDrv, async_depth: Option<u32>, plan: &Plan) -> Vec<Ns> {
    let mut tag_rng = blksim_core::Rng::from_seed(1);
    let elv = Box::new(Fifo {
        q: Default::default(),
        async_depth,
    });
    let nr_cpus = drv.nr_hw as usize;
    let mut cpus = blksim_block::cpu::CpuModel::default();
    let mut q = RequestQueue::with_tag_set(
        QueueLimits::default(),
        Some(elv),
        drv.nr_hw,
        drv.depth,
        drv.shared_tags(),
        nr_cpus,
        &mut tag_rng,
    );
    let mut peak = 0;
    let mut out = BlkOut::default();
    let mut evq: EventQueue<Ev> = EventQueue::new();
    for (i, p) in plan.iter().enumerate() {
        evq.push(p.0, Ev::Submit(i));
    }
    let mut done = vec![Ns::MAX; plan.len()];
    let mut events = 0;
    while let Some((now, ev)) = evq.pop() {
        events += 1;
        assert!(events < 100_000, "no end in sight at {now} ns");
        match ev {
            Ev::Submit(i) => {
                let (_, task, cpu, op, sector) = plan[i];
                let bio = Bio {
                    token: i as u64,
                    op,
                    // Writes without REQ_SYNC: async, throttled by `async_depth`.
                    flags: 0,
                    sector,
                    nr_sectors: 8,
                    nr_segments: 1,
                    task,
                    cpu,
                    ioprio: IoPrioClass::Be,
                    version: i as u64 + 1,
                    queue_time: now,
                    next: NO_BIO,
                };
                let _ = q.submit_bio(&mut cpus, bio, drv, now, &mut out);
            }
            Ev::Drv(p) => {
                drv.on_event(p, &q.pool, now, &mut out.drv);
                q.drain_driver_completions(&mut cpus, drv, now, &mut out);
            }
            Ev::HwRun(h, at) => q.run_work(&mut cpus, h, at, 0, drv, now, &mut out),
        }
        loop {
            let mut progress = false;
            for (at, p) in out.drv.events.drain(..) {
                evq.push(at.max(now), Ev::Drv(p));
                progress = true;
            }
            if !out.drv.completions.is_empty() {
                q.drain_driver_completions(&mut cpus, drv, now, &mut out);
                progress = true;
            }
            for (h, d) in out.hw_runs.drain(..) {
                evq.push(now + d, Ev::HwRun(h, now + d));
                progress = true;
            }
            // A woken submitter retries its allocation at once (it may sleep again).
            let woken: Vec<u32> = out.task_unblocked.drain(..).collect();
            for task in woken {
                let mut t = now;
                let _: Submit = q.resume_tag_waiter(&mut cpus, task, drv, &mut t, &mut out);
                progress = true;
            }
            peak = peak.max(q.in_flight());
            for (tok, st) in out.bio_done.drain(..) {
                assert_eq!(st, BlkStatus::Ok);
                assert_eq!(done[tok as usize], Ns::MAX, "bio {tok} completed twice");
                done[tok as usize] = now;
                progress = true;
            }
            if !progress {
                break;
            }
        }
    }
    for (i, d) in done.iter().enumerate() {
        assert_ne!(*d, Ns::MAX, "bio {i} ({:?}) never completed", plan[i]);
    }
    assert!(q.quiescent(), "live {:?}", q.pool.live());
    let tags = drv.depth * if drv.shared { 1 } else { drv.nr_hw as u32 };
    assert!(peak <= tags, "{peak} requests at the driver, {tags} tags");
    done
}

/// `sbq_calc_wake_batch`: the batch follows the smallest shallow depth, so that the tags a
/// shallow allocation may hold can always wake a waiter.
#[test]
fn wake_batch_follows_the_min_shallow_depth() {
    assert_eq!(sbq_calc_wake_batch(256, None), 8);
    assert_eq!(sbq_calc_wake_batch(32, None), 4);
    assert_eq!(sbq_calc_wake_batch(2, None), 1);
    assert_eq!(sbq_calc_wake_batch(256, Some(256)), 8);
    assert_eq!(sbq_calc_wake_batch(256, Some(40)), 5);
    assert_eq!(sbq_calc_wake_batch(256, Some(1)), 1);
    assert_eq!(sbq_calc_wake_batch(16, Some(1000)), 2);
}

/// mq-deadline with `async_depth=1`: one async write holds the only tag async writes may
/// take, the others sleep. Each completion is one free; with the full-depth wake batch (8
/// frees per wake-up) the sleepers were never woken.
#[test]
fn async_writers_throttled_to_one_tag_are_woken() {
    let mut drv = FakeDrv {
        nr_hw: 1,
        depth: 64,
        shared: false,
        read_lat: 10 * US,
        write_lat: 100 * US,
    };
    let plan: Vec<_> = (0..4).map(|t| (0, t, 0, Op::Write, 8 * t as u64)).collect();
    let done = run(&mut drv, Some(1), &plan);
    // One at a time: each write waits for the one before it.
    let mut d = done.clone();
    d.sort();
    for w in d.windows(2) {
        assert!(w[1] >= w[0] + 100 * US, "{done:?}");
    }
}

/// Two hardware queues of one driver tag each under a shared elevator: hctx 0's run pulls a
/// request of hctx 1 while hctx 1's only tag is busy. The request must wait on hctx 1's
/// dispatch list with hctx 1 marked for restart, so that the completion freeing hctx 1's
/// tag runs it; parked on hctx 0 (whose request completes first and which then idles), it
/// was never dispatched.
#[test]
fn a_request_of_another_hctx_restarts_with_its_own_hctx() {
    let mut drv = FakeDrv {
        nr_hw: 2,
        depth: 1,
        shared: false,
        read_lat: 10 * US,
        write_lat: 100 * US,
    };
    let plan = [
        // B1 takes hctx 1's tag until 100 us.
        (0, 1, 1, Op::Write, 0),
        // A1 (hctx 0) is queued before B2 (hctx 1): hctx 0's run pulls both.
        (US, 0, 0, Op::Read, 64),
        (US, 1, 1, Op::Write, 128),
    ];
    let done = run(&mut drv, None, &plan);
    assert_eq!(done[0], 100 * US);
    assert_eq!(done[1], 11 * US);
    assert_eq!(done[2], 200 * US);
}

/// Two hardware queues sharing one driver tag (`BLK_MQ_F_TAG_HCTX_SHARED`): hctx 0's run
/// finds the tag held by hctx 1's write. Marking hctx 0 for a restart would hang (nothing
/// of hctx 0 is in flight to complete), so it waits on the tags' wait queue
/// (`blk_mq_mark_tag_wait`) and the free on hctx 1 runs it (`blk_mq_dispatch_wake`).
#[test]
fn a_shared_tag_freed_on_another_hctx_runs_the_waiting_one() {
    let mut drv = FakeDrv {
        nr_hw: 2,
        depth: 1,
        shared: true,
        read_lat: 10 * US,
        write_lat: 100 * US,
    };
    let plan = [(0, 1, 1, Op::Write, 0), (US, 0, 0, Op::Read, 64)];
    let done = run(&mut drv, None, &plan);
    assert_eq!(done, [100 * US, 110 * US]);
}

/// Four hardware queues sharing 4 tags, 24 requests from 4 CPUs at once: never more than
/// 4 at the driver (checked by `run`), so they finish in 6 rounds of the 100 us write.
#[test]
fn shared_tags_bound_the_whole_queue() {
    let mut drv = FakeDrv {
        nr_hw: 4,
        depth: 4,
        shared: true,
        read_lat: 100 * US,
        write_lat: 100 * US,
    };
    let plan: Vec<_> = (0..24u64)
        .map(|i| (0, i as u32, (i % 4) as u16, Op::Read, 64 * i))
        .collect();
    let done = run(&mut drv, None, &plan);
    assert_eq!(done.iter().max(), Some(&(600 * US)), "{done:?}");
    drv.shared = false;
    let done = run(&mut drv, None, &plan);
    assert_eq!(done.iter().max(), Some(&(200 * US)), "{done:?}");
}
